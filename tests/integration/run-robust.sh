#!/usr/bin/env bash
# Robustness of `syncd run` against kube-emu (TLS, token) and real Git
# sources made here:
#  1. faults: count-limited 503s and dropped connections on the LISTs and
#     PATCHes of the apps' resources; an edited object is still healed and
#     both apps end converged;
#  2. a Git server (lighttpd + git http-backend over HTTPS) going down and
#     back: the last good revision is still enforced (an edit is healed, a
#     warning names the source error), an app from a file:// repository is
#     not held up, a commit pushed after the restart is applied;
#  3. a restart (SIGTERM, exit 0, start again) writes nothing;
#  4. two apps from one repository: a commit outside both paths renders
#     and writes nothing, a commit inside one path renders and writes that
#     app only;
#  5. an app that cannot render (invalid YAML) next to a good one: the good
#     one stays healed, the broken one logs the file and backs off.
# Part 2 runs last: it is skipped (with the reason) when lighttpd cannot
# start here.
# Loopback only; every wait is bounded; everything started is stopped on
# exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"
. "$(dirname "${BASH_SOURCE[0]}")/git/servers.sh"

cleanup() {
	gitsrv_stop_all
	emu_cleanup
}
trap cleanup EXIT

need_tools "run robustness checks" curl jq git

# Under ASan: leaks inside libgit2 1.5.1 itself are not ours to fix.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top/tests/integration/git/lsan.supp"
case ${SYNCD_WRAP:-} in
valgrind*) SYNCD_WRAP="$SYNCD_WRAP --suppressions=$top/tests/integration/git/valgrind.supp" ;;
esac
# Nothing from the user's own Git setup.
export HOME="$tmp/home" XDG_CACHE_HOME="$tmp/xdg-cache"
export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
unset GIT_SSL_CAINFO GIT_SSL_CAPATH
export GIT_AUTHOR_NAME=Tester GIT_AUTHOR_EMAIL=tester@example.com
export GIT_COMMITTER_NAME=Tester GIT_COMMITTER_EMAIL=tester@example.com
mkdir -p "$HOME"

emu_start_tls


# --- repositories --------------------------------------------------------
repos="$tmp/repos"
mkdir -p "$repos"
# new_repo NAME: a bare repository $repos/NAME.git and its work tree
# $tmp/clones/NAME (branch main).
new_repo() {
	git init -q --bare "$repos/$1.git"
	git -C "$repos/$1.git" symbolic-ref HEAD refs/heads/main
	git init -q -b main "$tmp/clones/$1"
}
cm() { # NAME VALUE: a ConfigMap
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: "%s"\n' "$1" "$2"
}
deploy() { # NAME IMAGE: a Deployment
	cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
spec:
  replicas: 1
  selector:
    matchLabels: {app: $1}
  template:
    metadata:
      labels: {app: $1}
    spec:
      containers:
        - name: main
          image: $2
EOF
}
# put REPO PATH: stdin into the work tree's PATH.
put() {
	mkdir -p "$(dirname "$tmp/clones/$1/$2")"
	cat >"$tmp/clones/$1/$2"
}
# commit REPO MESSAGE: commit everything, push main, print the commit.
commit() {
	git -C "$tmp/clones/$1" add -A &&
		git -C "$tmp/clones/$1" commit -q -m "$2" &&
		git -C "$tmp/clones/$1" push -q "$repos/$1.git" main &&
		git -C "$tmp/clones/$1" rev-parse HEAD
}

# --- the cluster side ----------------------------------------------------
namespace() { # NAME: create it
	api POST /api/v1/namespaces application/json \
		"{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$1\"}}"
}
cm_value() { # NS NAME: data.value of the ConfigMap, or "absent"
	api GET "/api/v1/namespaces/$1/configmaps/$2"
	if [ "$code" = 200 ]; then
		printf '%s' "$body" | jq -r .data.value
	else
		echo "absent ($code)"
	fi
}
cm_is() { [ "$(cm_value "$1" "$2")" = "$3" ]; }
image_of() { # NS NAME: the first container's image of the Deployment
	api GET "/apis/apps/v1/namespaces/$1/deployments/$2"
	if [ "$code" = 200 ]; then
		printf '%s' "$body" | jq -r '.spec.template.spec.containers[0].image'
	else
		echo "absent ($code)"
	fi
}
image_is() { [ "$(image_of "$1" "$2")" = "$3" ]; }
# edit_cm NS NAME VALUE: a merge PATCH as `kubectl edit` sends it.
edit_cm() {
	api PATCH "/api/v1/namespaces/$1/configmaps/$2?fieldManager=kubectl-edit" \
		application/merge-patch+json "{\"data\":{\"value\":\"$3\"}}"
}
# writes: every write request in /emu/stats since the last reset.
writes() {
	api GET /emu/stats
	printf '%s' "$body" | jq '[.requests[] | select(.verb == "create" or
		.verb == "update" or .verb == "patch" or .verb == "delete" or
		.verb == "deletecollection") | .count] | add // 0'
}
writes_detail() {
	api GET /emu/stats
	printf '%s' "$body" | jq -c '[.requests[] | select(.verb == "create" or
		.verb == "update" or .verb == "patch" or .verb == "delete" or
		.verb == "deletecollection")]'
}

# --- the controller ------------------------------------------------------
listen_port=$(gitsrv_free_port)
# config FILE CACHE: the global part of a configuration; the apps follow
# on stdin (already indented as list items). Resyncs list the server
# (relist as short as the resync), so that they meet the LIST faults.
config() {
	{
		cat <<-EOF
			resync: 2s
			relist: 2s
			workers: 2
			kubeconfig: $tmp/kc
			cacheDir: $2
			listen: 127.0.0.1:$listen_port
			log:
			  format: logfmt
			  level: info
			apps:
		EOF
		cat
	} >"$1"
}
# start_syncd CONFIG LOG: `syncd run` in the background; $syncd_pid.
start_syncd() {
	local wrap=()
	[ -n "${SYNCD_WRAP:-}" ] && read -r -a wrap <<<"$SYNCD_WRAP"
	"${wrap[@]+"${wrap[@]}"}" "$SYNCD" run -c "$1" >"$2.out" 2>"$2" &
	syncd_pid=$!
	pids+=("$syncd_pid")
}
# stop_syncd NAME: SIGTERM, at most 60 s for the exit; checks exit 0.
stop_syncd() {
	local rc
	if ! term_wait "$syncd_pid" 60; then
		kill -KILL "$syncd_pid" 2>/dev/null
		wait "$syncd_pid" 2>/dev/null
	fi
	expect_eq "$rc" 0 "$1: SIGTERM, the controller exits 0"
}
alive() { kill -0 "$syncd_pid" 2>/dev/null; }
# nlines LOG PATTERN [FROM]: lines of LOG (from line FROM on) matching
# the extended regex PATTERN.
nlines() {
	tail -n +"${3:-1}" "$1" | grep -cE -- "$2"
}
has_line() { [ "$(nlines "$@")" -ge 1 ]; }
at_least() { # N LOG PATTERN [FROM]
	local n=$1
	shift
	[ "$(nlines "$@")" -ge "$n" ]
}
loglen() { wc -l <"$1" | tr -d ' '; }
show_log() { # LOG: the last lines, for a failure
	tail -n 15 "$1" | cut -c 1-400 | sed 's/^/    log: /'
}

# === 1. faults on the API server =========================================
new_repo one
cm f-a-settings blue | put one apps/fa/cm.yaml
deploy f-a-web nginx:1.0 | put one apps/fa/deploy.yaml
cm f-b-settings green | put one apps/fb/cm.yaml
commit one "fault apps" >/dev/null
namespace s1
config "$tmp/s1.yaml" "$tmp/cache1" <<EOF
  - name: f-a
    source:
      repo: file://$repos/one.git
      revision: main
      path: apps/fa
      interval: 1s
    namespace: s1
  - name: f-b
    source:
      repo: file://$repos/one.git
      revision: main
      path: apps/fb
      interval: 1s
    namespace: s1
EOF
log1="$tmp/s1.log"
start_syncd "$tmp/s1.yaml" "$log1"
converged1() {
	cm_is s1 f-a-settings blue && image_is s1 f-a-web nginx:1.0 &&
		cm_is s1 f-b-settings green
}
if wait_for 60 converged1; then
	ok "faults: both apps converge first"
else
	not_ok "faults: both apps converge first"
	show_log "$log1"
fi

# The faults go in first, then the edits, as PUTs (kubectl edit's other
# way to write), which no fault matches: every PATCH and LIST counted by
# the faults is syncd's. The PATCH faults can only be met by the healing
# writes (nothing else drifted).
faults='verb=list,resource=configmaps,code=503,count=3'
faults+=';verb=patch,resource=configmaps,dryRun=false,code=503,count=3'
faults+=';verb=list,resource=deployments.apps,drop,count=2'
faults+=';verb=patch,resource=deployments.apps,dryRun=false,drop,count=2'
api POST /emu/faults text/plain "$faults"
case $code in
2??) ok "faults: 503s and dropped connections injected" ;;
*) not_ok "faults: 503s and dropped connections injected: HTTP $code $body" ;;
esac
put_edit() { # PATH JQ-FILTER
	api GET "$1"
	printf '%s' "$body" | jq "$2" >"$tmp/edit.json"
	api PUT "$1?fieldManager=kubectl-edit" application/json "$(cat "$tmp/edit.json")"
}
put_edit /api/v1/namespaces/s1/configmaps/f-b-settings '.data.value = "edited"'
expect_eq "$code" 200 "faults: ConfigMap of app f-b edited"
put_edit /apis/apps/v1/namespaces/s1/deployments/f-a-web \
	'.spec.template.spec.containers[0].image = "nginx:edited"'
expect_eq "$code" 200 "faults: Deployment of app f-a edited"
all_fired() {
	api GET /emu/faults
	[ "$(printf '%s' "$body" | jq '[.faults[].remaining] | add // -1')" = 0 ]
}
if wait_for 90 all_fired; then
	ok "faults: every injected fault was hit by syncd"
else
	not_ok "faults: every injected fault was hit by syncd"
	api GET /emu/faults
	printf '    %s\n' "$(printf '%s' "$body" | head -c 1000)"
fi
api GET /emu/faults
expect_eq "$(printf '%s' "$body" | jq -r '[.faults[].fired] | @sh')" \
	"3 3 2 2" "faults: each rule fired as often as its count"
expect_eq "$(count list configmaps 503) $(count patch configmaps 503)" "3 3" \
	"faults: syncd got the 503s on LIST and PATCH (in /emu/stats)"
if wait_for 90 converged1; then
	ok "faults: the edits are healed, both apps converged"
else
	not_ok "faults: the edits are healed, both apps converged:" \
		"$(cm_value s1 f-a-settings) $(image_of s1 f-a-web)" \
		"$(cm_value s1 f-b-settings)"
	show_log "$log1"
fi
both_done_after() { # LOG FROM APP APP
	has_line "$1" "msg=\"pass done\" app=$3 " "$2" &&
		has_line "$1" "msg=\"pass done\" app=$4 " "$2"
}
# Passes that started after the faults were used up succeed.
api DELETE /emu/faults
from1=$(loglen "$log1")
if wait_for 30 both_done_after "$log1" "$from1" f-a f-b; then
	ok "faults: both apps pass again after the faults"
else
	not_ok "faults: both apps pass again after the faults"
	show_log "$log1"
fi
if alive; then
	ok "faults: the controller is still running"
else
	not_ok "faults: the controller is still running"
fi

# === 3. a restart writes nothing =========================================
stop_syncd "restart"
reset_stats
# What a syncd killed between a write and its rename would leave: half a
# state file and half a render, named for a process that is gone.
(exit 0) &
dead=$!
wait "$dead"
planted=()
for d in "$tmp"/cache1/*/state "$tmp"/cache1/*/renders; do
	[ -d "$d" ] || continue
	f="$d/$(ls "$d" | grep -v '\.tmp\.' | head -n 1).tmp.$dead.Xy12Zq"
	printf 'half' >"$f"
	planted+=("$f")
done
# The renders by inode: one written again (a new file renamed over it)
# shows as another inode.
renders_ino() { ls -i "$tmp"/cache1/*/renders/*.json 2>/dev/null | sort; }
renders_before=$(renders_ino)
start_syncd "$tmp/s1.yaml" "$log1.2"
if wait_for 60 both_done_after "$log1.2" 1 f-a f-b; then
	ok "restart: the first passes of both apps are done"
else
	not_ok "restart: the first passes of both apps are done"
	show_log "$log1.2"
fi
expect_eq "$(writes)" 0 "restart: no PATCH/POST/PUT/DELETE after a restart"
[ "$(writes)" = 0 ] || printf '    %s\n' "$(writes_detail)"
if has_line "$log1.2" 'msg="object written"'; then
	not_ok "restart: no object written is logged"
	grep 'msg="object written"' "$log1.2" | head -n 5 | sed 's/^/    /'
else
	ok "restart: no object written is logged"
fi
expect_eq "$(cm_value s1 f-a-settings) $(image_of s1 f-a-web) $(cm_value s1 f-b-settings)" \
	"blue nginx:1.0 green" "restart: the objects are unchanged"
# The renders of the first run are on disk: nothing is rendered again.
expect_eq "$(grep -c 'msg=rendered' "$log1.2") $(grep -c 'msg="render read from the cache"' "$log1.2")" \
	"0 2" "restart: both apps read their render back instead of rendering"
if [ -n "$renders_before" ] && [ "$(renders_ino)" = "$renders_before" ]; then
	ok "restart: the renders read back are not written again"
else
	not_ok "restart: the renders read back are not written again"
	printf '    before: %s\n    after: %s\n' "$renders_before" "$(renders_ino)"
fi
left=0
for f in "${planted[@]}"; do
	[ -e "$f" ] && left=$((left + 1))
done
expect_eq "${#planted[@]} $left" "2 0" \
	"restart: the half-written state file and render a killed syncd left are removed"
stop_syncd "restart (second run)"

# === 4. two apps from one repository =====================================
new_repo mono
printf 'two apps\n' | put mono README
cm m-a-settings one | put mono apps/a/cm.yaml
cm m-b-settings one | put mono apps/b/cm.yaml
commit mono "two apps" >/dev/null
namespace s4
config "$tmp/s4.yaml" "$tmp/cache4" <<EOF
  - name: m-a
    source:
      repo: file://$repos/mono.git
      revision: main
      path: apps/a
      interval: 1s
    namespace: s4
  - name: m-b
    source:
      repo: file://$repos/mono.git
      revision: main
      path: apps/b
      interval: 1s
    namespace: s4
EOF
log4="$tmp/s4.log"
start_syncd "$tmp/s4.yaml" "$log4"
converged4() { cm_is s4 m-a-settings one && cm_is s4 m-b-settings one; }
if wait_for 60 converged4 && wait_for 30 both_done_after "$log4" 1 m-a m-b; then
	ok "monorepo: both apps converge"
else
	not_ok "monorepo: both apps converge"
	show_log "$log4"
fi
# A pass in flight may still be writing: wait for one more of each.
from4=$(loglen "$log4")
wait_for 30 both_done_after "$log4" "$from4" m-a m-b || true

reset_stats
from4=$(loglen "$log4")
printf 'two apps, documented\n' | put mono README
c_readme=$(commit mono "README only")
at_rev() { # LOG FROM APP COMMIT: a pass of APP at COMMIT is done
	has_line "$1" "msg=\"pass done\" app=$3 revision=$4" "$2"
}
if wait_for 30 at_rev "$log4" "$from4" m-a "$c_readme" &&
	wait_for 30 at_rev "$log4" "$from4" m-b "$c_readme"; then
	ok "monorepo: both apps reach the README-only commit"
else
	not_ok "monorepo: both apps reach the README-only commit"
	show_log "$log4"
fi
expect_eq "$(nlines "$log4" 'msg=rendered ' "$from4")" 0 \
	"monorepo: a commit outside both paths renders neither app"
expect_eq "$(writes)" 0 "monorepo: a commit outside both paths writes nothing"
[ "$(writes)" = 0 ] || printf '    %s\n' "$(writes_detail)"

reset_stats
from4=$(loglen "$log4")
cm m-a-settings two | put mono apps/a/cm.yaml
c_a=$(commit mono "app a two")
if wait_for 30 cm_is s4 m-a-settings two; then
	ok "monorepo: a commit inside apps/a is applied"
else
	not_ok "monorepo: a commit inside apps/a is applied: $(cm_value s4 m-a-settings)"
	show_log "$log4"
fi
wait_for 30 at_rev "$log4" "$from4" m-a "$c_a" || true
if wait_for 30 at_rev "$log4" "$from4" m-b "$c_a"; then
	ok "monorepo: app m-b reaches the new commit"
else
	not_ok "monorepo: app m-b reaches the new commit"
	show_log "$log4"
fi
expect_eq "$(nlines "$log4" 'msg=rendered app=m-a ' "$from4") $(nlines "$log4" 'msg=rendered app=m-b ' "$from4")" \
	"1 0" "monorepo: a commit inside apps/a renders app m-a only (once)"
expect_eq "$(nlines "$log4" 'msg="object written" app=m-b ' "$from4")" 0 \
	"monorepo: a commit inside apps/a writes nothing for app m-b"
if has_line "$log4" 'msg="object written" app=m-a .*object="?ConfigMap s4/m-a-settings' "$from4"; then
	ok "monorepo: app m-a's ConfigMap write is logged"
else
	not_ok "monorepo: app m-a's ConfigMap write is logged"
	show_log "$log4"
fi
patches=$(count patch configmaps)
# Two PATCHes: the dry run that confirms the change, then the apply.
expect_eq "$patches $(cm_value s4 m-b-settings)" "2 one" \
	"monorepo: one ConfigMap confirmed and applied (app m-a's), app m-b's ConfigMap untouched"
stop_syncd "monorepo"

# === 5. a broken app next to a good one ==================================
new_repo broken
cm k-good-settings fine | put broken apps/good/cm.yaml
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k-bad\ndata: [unclosed\n' |
	put broken apps/bad/bad.yaml
commit broken "a good and a broken app" >/dev/null
namespace s5
config "$tmp/s5.yaml" "$tmp/cache5" <<EOF
  - name: k-good
    source:
      repo: file://$repos/broken.git
      revision: main
      path: apps/good
      interval: 1s
    namespace: s5
  - name: k-bad
    source:
      repo: file://$repos/broken.git
      revision: main
      path: apps/bad
      interval: 1s
    namespace: s5
EOF
log5="$tmp/s5.log"
start_syncd "$tmp/s5.yaml" "$log5"
if wait_for 60 cm_is s5 k-good-settings fine; then
	ok "broken app: the good app converges"
else
	not_ok "broken app: the good app converges"
	show_log "$log5"
fi
if wait_for 30 has_line "$log5" 'msg="pass failed" app=k-bad '; then
	ok "broken app: its pass fails"
else
	not_ok "broken app: its pass fails"
	show_log "$log5"
fi
line=$(grep -m 1 'msg="pass failed" app=k-bad ' "$log5")
expect_match 'level=error msg="pass failed" app=k-bad .*error=.*bad\.yaml:[0-9]+' "$line" \
	"broken app: the error line names the file and the line"
# Over the next eight passes of the good app (interval 1 s, resync 2 s),
# a broken app retried without backoff would fail about as often; with
# the 5 s backoff doubling it fails at most twice more.
from5=$(grep -n -m 1 'msg="pass failed" app=k-bad ' "$log5" | cut -d: -f1)
fails_before=$(nlines "$log5" 'msg="pass failed" app=k-bad ')
edit_cm s5 k-good-settings edited
expect_eq "$code" 200 "broken app: the good app's ConfigMap edited (merge PATCH, kubectl-edit)"
if wait_for 30 cm_is s5 k-good-settings fine; then
	ok "broken app: the good app's edit is healed"
else
	not_ok "broken app: the good app's edit is healed: $(cm_value s5 k-good-settings)"
	show_log "$log5"
fi
if wait_for 60 at_least 8 "$log5" 'msg="pass done" app=k-good ' "$from5"; then
	ok "broken app: the good app keeps passing"
else
	not_ok "broken app: the good app keeps passing"
	show_log "$log5"
fi
fails=$(nlines "$log5" 'msg="pass failed" app=k-bad ' "$from5")
good=$(nlines "$log5" 'msg="pass done" app=k-good ' "$from5")
if [ "$fails" -ge 1 ] && [ "$fails" -le 3 ]; then
	ok "broken app: backs off ($fails failed passes while the good app passed $good times)"
else
	not_ok "broken app: backs off ($fails failed passes while the good app passed $good times, first $fails_before)"
fi
expect_eq "$(grep 'app=k-bad ' "$log5" | grep -vc 'bad\.yaml')" 0 \
	"broken app: every line about it names the file"
expect_eq "$(cm_value s5 k-bad)" "absent (404)" "broken app: nothing of it is applied"
stop_syncd "broken app"

# === 2. the Git server down and back =====================================
printf 's3cret-pass-8c1f\n' >"$tmp/password"
canary_input "$tmp/password"
if ! gitsrv_tls_ca "$tmp/tls" || ! gitsrv_http_start "$repos" alice s3cret-pass-8c1f; then
	ok "git server down: skipped: $gitsrv_why"
	finish
fi
new_repo web
cm g-web-settings one | put web apps/web/cm.yaml
c_web1=$(commit web "web one")
new_repo local
cm g-local-settings one | put local apps/local/cm.yaml
commit local "local one" >/dev/null
namespace s2
config "$tmp/s2.yaml" "$tmp/cache2" <<EOF
  - name: g-http
    source:
      repo: https://127.0.0.1:$http_port/git/web.git
      revision: main
      path: apps/web
      interval: 1s
      username: alice
      passwordFile: $tmp/password
      caFile: $tmp/tls/ca.pem
    namespace: s2
  - name: g-file
    source:
      repo: file://$repos/local.git
      revision: main
      path: apps/local
      interval: 1s
    namespace: s2
EOF
log2="$tmp/s2.log"
start_syncd "$tmp/s2.yaml" "$log2"
converged2() { cm_is s2 g-web-settings one && cm_is s2 g-local-settings one; }
if wait_for 60 converged2; then
	ok "git server down: both apps converge first (HTTPS and file://)"
else
	not_ok "git server down: both apps converge first (HTTPS and file://)"
	show_log "$log2"
fi

gitsrv_kill "$http_pid"
if (exec 3<>"/dev/tcp/127.0.0.1/$http_port") 2>/dev/null; then
	not_ok "git server down: the server is stopped"
else
	ok "git server down: the server is stopped"
fi
from2=$(loglen "$log2")
warn_re='level=warn msg="source failed, enforcing the last good revision"'
warn_re+=" app=g-http revision=$c_web1 .*error=.*127\\.0\\.0\\.1:$http_port"
warned() { has_line "$log2" "$warn_re" "$from2"; }
if wait_for 30 warned; then
	ok "git server down: a warning names the last good revision and the source error"
else
	not_ok "git server down: a warning names the last good revision and the source error"
	show_log "$log2"
fi
edit_cm s2 g-web-settings edited
expect_eq "$code" 200 "git server down: the HTTPS app's ConfigMap edited (merge PATCH, kubectl-edit)"
if wait_for 60 cm_is s2 g-web-settings one; then
	ok "git server down: the edit is healed from the last good revision"
else
	not_ok "git server down: the edit is healed from the last good revision: $(cm_value s2 g-web-settings)"
	show_log "$log2"
fi
cm g-local-settings two | put local apps/local/cm.yaml
commit local "local two" >/dev/null
if wait_for 30 cm_is s2 g-local-settings two; then
	ok "git server down: the file:// app still applies a new commit"
else
	not_ok "git server down: the file:// app still applies a new commit: $(cm_value s2 g-local-settings)"
	show_log "$log2"
fi
if grep 'app=g-http ' "$log2" | grep -q 's3cret-pass-8c1f'; then
	not_ok "git server down: no password in the log"
else
	ok "git server down: no password in the log"
fi

# The same server again (same configuration, same port), then a commit.
lighttpd -D -f "$tmp/http/lighttpd.conf" >>"$tmp/http/out.log" 2>&1 &
http_pid=$!
gitsrv_pids+=("$http_pid")
if gitsrv_wait_port "$http_port" "$http_pid"; then
	ok "git server back: lighttpd restarted on the same port"
else
	not_ok "git server back: lighttpd restarted on the same port"
fi
cm g-web-settings three | put web apps/web/cm.yaml
c_web=$(commit web "web three")
# The app is in retry backoff (5 s doubling): the next retry fetches.
if wait_for 90 cm_is s2 g-web-settings three; then
	ok "git server back: a pushed commit is applied"
else
	not_ok "git server back: a pushed commit is applied: $(cm_value s2 g-web-settings)"
	show_log "$log2"
fi
expect_match "msg=rendered app=g-http revision=$c_web" "$(cat "$log2")" \
	"git server back: the new commit is rendered"
stop_syncd "git server down and back"
finish
