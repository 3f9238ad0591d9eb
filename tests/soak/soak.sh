#!/usr/bin/env bash
# Fault soak on the real control plane: `syncd run` keeps 20 apps (two
# ConfigMaps each, a Deployment or a Service in some) converged from a Git
# server over HTTP while an actor edits managed objects (drift to heal)
# and commits changes now and then, and a fault loop cycles through:
#
#   apiserver-restart  kill -9 kube-apiserver, start it again
#   etcd-restart       kill -9 etcd, start it again
#   syncd-kill         commit, SIGKILL syncd once its pass has rendered the
#                      new revision (twice, then once at a random moment
#                      of the poll after a commit), start it again on the
#                      same cache
#   git-kill           commit, kill -9 the Git server (lighttpd and its
#                      git http-backend) when syncd's fetch arrives, start
#                      it again
#   disk-full          fill the cache's tmpfs, commit: syncd fails cleanly
#                      and keeps the last good revision; the filler goes
#   net-cut            cut syncd's network namespace off the bridge for
#                      SOAK_CUT_SECONDS (default 15, 70 for runs of 600 s
#                      and more: past the 60 s request timeout), heal
#
# After each fault, every app must be InSync at the repository's HEAD and
# the objects in the API server equal to Git within 90 s (the time is
# reported, never asserted). Over the whole run, from the audit log (user
# syncd; dry runs are not writes):
#   - writes to in-sync objects: the objects of apps a00-a09 are never
#     edited by the actor nor changed by a commit; after the first
#     convergence syncd must not create, update, patch or delete them,
#     across every fault and restart;
#   - deletions of declared objects: Git never removes an object, so no
#     delete of any app's object by syncd, ever;
#   - half-written files: after every SIGKILL and at the end, each
#     checkout under trees/ equals its tree in repo.git, each render cache
#     entry parses, each state file is whole, and temporaries left by a
#     killed syncd are gone once the next one has started and converged.
# One line per fault (`ok - fault NAME: injected N, converge max T s,
# writes to in-sync objects 0, deletions of declared objects 0,
# half-written files 0`) and syncd's peak RSS (VmHWM, the largest of its
# runs; at most 200 MB).
#
#   bash tests/soak/soak.sh [SECONDS]    (default $SOAK_SECONDS, else 120)
#
# The script starts a control plane of its own (K8S_ENV is ignored: it
# kills the API server) bound to its own bridge (tests/helpers/netns.sh);
# without root or namespaces syncd runs on loopback and net-cut is skipped
# with one line saying why; without tmpfs mounts disk-full likewise. Every
# fault is injected at least once, then the loop goes on until SECONDS
# have passed. Loopback and the private bridge only.
SOAK=${1:-${SOAK_SECONDS:-120}}
case $SOAK in
'' | *[!0-9]*)
	echo "tests/soak/soak.sh: SECONDS must be a whole number of seconds, not '$SOAK'" >&2
	exit 2
	;;
esac
unset K8S_ENV
. "$(dirname "${BASH_SOURCE[0]}")/../real/lib.sh"
. "$top/tests/helpers/netns.sh"
. "$top/tests/helpers/githttp.sh"

NS=soak
APPS=20
CONVERGE_BOUND=90
RSS_BOUND_MB=200
CUT=${SOAK_CUT_SECONDS:-$([ "$SOAK" -ge 600 ] && echo 70 || echo 15)}
FAULTS=(apiserver-restart etcd-restart syncd-kill git-kill disk-full net-cut)

syncd_pid=
git_pid=
actor_pid=
mounted=
checked=0
soak_cleanup() {
	[ -n "$actor_pid" ] && kill "$actor_pid" 2>/dev/null && wait "$actor_pid" 2>/dev/null
	[ -n "$syncd_pid" ] && kill -KILL "$syncd_pid" 2>/dev/null && wait "$syncd_pid" 2>/dev/null
	[ -n "$git_pid" ] && kill -KILL -- "-$git_pid" 2>/dev/null && wait "$git_pid" 2>/dev/null
	netns_cleanup
	[ -n "$mounted" ] && umount "$mounted" 2>/dev/null
	real_cleanup
}
trap soak_cleanup EXIT

for t in curl jq openssl lighttpd git; do
	if ! command -v "$t" >/dev/null 2>&1; then
		ok "$t not installed: fault soak skipped"
		finish
	fi
done
if ! k8s_available; then
	ok "the real control plane is not built (make k8s): fault soak skipped"
	finish
fi
if [ ! -x "$SYNCD" ]; then
	not_ok "$SYNCD not built"
	finish
fi

# --- the network: syncd in a namespace, servers on the bridge -------------
skip=()
in_ns=()
if why=$(netns_available 2>&1) && netns_add syncd; then
	ADDR=$NETNS_HOST_IP
	SYNCD_ADDR=$NETNS_IP:8080
	# ip netns exec execs syncd itself: $! is syncd's pid.
	in_ns=(ip netns exec "$(netns_id syncd)")
else
	ADDR=127.0.0.1
	SYNCD_ADDR=127.0.0.1:$(k8s_pick_port)
	skip+=(net-cut)
	ok "fault net-cut skipped: ${why:-no namespace could be made}"
fi

# --- the cache on a small tmpfs -------------------------------------------
cache=$tmp/cache
mkdir -p "$cache"
if mount -t tmpfs -o size=48m,mode=0700 soak-cache "$cache" 2>"$tmp/mount.err"; then
	mounted=$cache
else
	skip+=(disk-full)
	ok "fault disk-full skipped: no tmpfs here ($(head -n 1 "$tmp/mount.err"))"
fi

# --- the control plane -----------------------------------------------------
if ! K8S_ADDRESS=$ADDR k8s_start; then
	not_ok "the real control plane starts on $ADDR"
	finish
fi
kc create namespace "$NS" >/dev/null

# --- the Git server: lighttpd + git http-backend, plain HTTP --------------
export HOME=$tmp/home GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
export GIT_AUTHOR_NAME=Soak GIT_AUTHOR_EMAIL=soak@example.com
export GIT_COMMITTER_NAME=Soak GIT_COMMITTER_EMAIL=soak@example.com
mkdir -p "$HOME" "$tmp/repos" "$tmp/http/www"
git init -q --bare "$tmp/repos/soak.git"
git -C "$tmp/repos/soak.git" symbolic-ref HEAD refs/heads/main
work=$tmp/work
git init -q -b main "$work"
git_port=$(k8s_pick_port)
githttp_conf "$tmp/http" "$ADDR" "$git_port" "$tmp/repos"
git_start() {
	local i
	setsid lighttpd -D -f "$tmp/http/lighttpd.conf" >>"$tmp/http/out.log" 2>&1 &
	git_pid=$!
	for i in $(seq 100); do
		(exec 3<>"/dev/tcp/$ADDR/$git_port") 2>/dev/null && return 0
		kill -0 "$git_pid" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
git_stop() {
	{
		kill -KILL -- "-$git_pid"
		wait "$git_pid"
	} 2>/dev/null
	git_pid=
}
if ! git_start; then
	not_ok "the Git server starts on $ADDR:$git_port: $(tail -n 3 "$tmp/http/error.log" "$tmp/http/out.log" 2>/dev/null | tr '\n' ' ')"
	finish
fi

# --- the apps --------------------------------------------------------------
app() { printf 'a%02d' "$1"; }
cm() { # FILE NAME VALUE
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: "%s"\n' "$2" "$3" >"$1"
}
for i in $(seq 0 $((APPS - 1))); do
	a=$(app "$i")
	mkdir -p "$work/apps/$a"
	cm "$work/apps/$a/one.yaml" "$a-one" v0
	cm "$work/apps/$a/two.yaml" "$a-two" v0
	case $((i % 4)) in
	0) cat >"$work/apps/$a/web.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $a-web
spec:
  replicas: 1
  selector:
    matchLabels: {app: $a-web}
  template:
    metadata:
      labels: {app: $a-web}
    spec:
      containers:
        - name: main
          image: nginx:1.27
EOF
		;;
	1) cat >"$work/apps/$a/svc.yaml" <<EOF
apiVersion: v1
kind: Service
metadata:
  name: $a-svc
spec:
  selector: {app: $a}
  ports:
    - port: 80
      targetPort: 8080
EOF
		;;
	esac
done
mkdir -p "$work/blobs"
# commit MESSAGE: commits the work tree and pushes it (to the bare
# repository directly: the server may be down); serialised between the
# actor and the fault loop.
commit() {
	(
		flock 9
		git -C "$work" add -A &&
			git -C "$work" commit -q -m "$1" &&
			git -C "$work" push -q "$tmp/repos/soak.git" main 2>/dev/null
	) 9>"$tmp/commit.lock"
}
# change_app: a new value for an active app's second ConfigMap, committed.
change_app() {
	local a
	a=$(app $((10 + RANDOM % 10)))
	(
		flock 9
		cm "$work/apps/$a/two.yaml" "$a-two" "c$RANDOM$RANDOM"
	) 9>"$tmp/commit.lock"
	commit "$1 $a"
}
commit "the apps" || { not_ok "the apps are committed"; finish; }
head_commit() { git -C "$tmp/repos/soak.git" rev-parse main; }

# --- syncd -----------------------------------------------------------------
{
	cat <<EOF
resync: 10s
workers: 4
# The actor changes the same fields back again and again: heal it every
# time instead of holding them as a fight.
fightDetection:
  changes: 0
kubeconfig: $K8S_SYNCD_KUBECONFIG
cacheDir: $cache
listen: $SYNCD_ADDR
apps:
EOF
	for i in $(seq 0 $((APPS - 1))); do
		a=$(app "$i")
		cat <<EOF
  - name: $a
    source:
      repo: http://$ADDR:$git_port/git/soak.git
      revision: main
      path: apps/$a
      interval: 2s
    namespace: $NS
    prune: true
EOF
	done
} >"$tmp/syncd.yaml"
log=$tmp/syncd.log
rss_max=0
rss_runs=0
syncd_start() {
	"${in_ns[@]+"${in_ns[@]}"}" "$SYNCD" run -c "$tmp/syncd.yaml" >>"$log" 2>&1 &
	syncd_pid=$!
}
# syncd_rss: remembers the peak RSS of the running syncd (read before it
# is killed).
syncd_rss() {
	local kb
	kb=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$syncd_pid/status" 2>/dev/null)
	[ -n "$kb" ] && [ "$kb" -gt "$rss_max" ] && rss_max=$kb
}
syncd_kill() {
	syncd_rss
	{
		kill -KILL "$syncd_pid"
		wait "$syncd_pid"
	} 2>/dev/null
	syncd_pid=
	rss_runs=$((rss_runs + 1))
}
show_log() { tail -n 15 "$log" | cut -c 1-300 | sed 's/^/    log: /'; }

# --- convergence -------------------------------------------------------------
# The objects as Git says: "kind/name=value" (ConfigMaps: data.value,
# Deployments: the image, Services: the port).
expected() {
	local f
	for f in "$work"/apps/*/*.yaml; do
		case $f in
		*/web.yaml) echo "deployment/$(basename "$(dirname "$f")")-web=$(sed -n 's/^ *image: //p' "$f")" ;;
		*/svc.yaml) echo "service/$(basename "$(dirname "$f")")-svc=$(sed -n 's/^ *- port: //p' "$f")" ;;
		*) echo "configmap/$(sed -n 's/^  name: //p' "$f")=$(sed -n 's/^  value: "\(.*\)"/\1/p' "$f")" ;;
		esac
	done | sort
}
live() {
	kc -n "$NS" get configmap,deployment,service -o json --request-timeout=10s |
		jq -r '.items[] | select(.metadata.name | test("^a[0-9][0-9]-")) |
			if .kind == "ConfigMap" then "configmap/\(.metadata.name)=\(.data.value)"
			elif .kind == "Deployment" then "deployment/\(.metadata.name)=\(.spec.template.spec.containers[0].image)"
			else "service/\(.metadata.name)=\(.spec.ports[0].port)" end' | sort
}
status_ok() { # HEAD
	curl -sS --max-time 5 "http://$SYNCD_ADDR/api/v1/apps" 2>/dev/null |
		jq -e --arg h "$1" --argjson n "$APPS" \
			'[.apps[] | select(.state == "InSync" and .revision == $h)] | length == $n' >/dev/null
}
# converged: every app InSync at HEAD and the objects equal to Git.
converged() {
	local h
	h=$(head_commit)
	status_ok "$h" && [ "$(live)" = "$(expected)" ]
}
# converge_wait: until converged (CONVERGE_BOUND s); sets $took (s).
converge_wait() {
	local t0 n=$((CONVERGE_BOUND * 2))
	t0=$(date +%s%3N)
	while [ "$n" -gt 0 ]; do
		if converged; then
			took=$(( ($(date +%s%3N) - t0 + 500) / 1000 ))
			return 0
		fi
		sleep 0.5
		n=$((n - 1))
	done
	took=$CONVERGE_BOUND
	return 1
}
show_unconverged() {
	echo "    HEAD $(head_commit)"
	curl -sS --max-time 5 "http://$SYNCD_ADDR/api/v1/apps" 2>&1 |
		jq -r '.apps[]? | select(.state != "InSync") | "    app \(.name): \(.state) \(.revision) \(.error // "") \(.sourceError // "")"' 2>&1 | head -n 10
	diff <(expected) <(live) | head -n 10 | sed 's/^/    /'
	show_log
}

# --- the actor -----------------------------------------------------------
# Edits objects of the active apps (a10-a19) and commits to them; never
# touches a00-a09. Pauses (acknowledging with actor.paused) while the
# fault loop waits for convergence.
actor() {
	local n=0 i a
	while :; do
		if [ -e "$tmp/actor.pause" ]; then
			touch "$tmp/actor.paused"
			sleep 0.2
			continue
		fi
		n=$((n + 1))
		i=$((10 + RANDOM % 10))
		a=$(app "$i")
		case $((n % 3)) in
		0)
			if [ $((i % 4)) = 0 ]; then
				kc -n "$NS" --request-timeout=5s set image \
					"deployment/$a-web" main=nginx:drift-$n
			else
				kc -n "$NS" --request-timeout=5s patch configmap \
					"$a-two" --type merge -p "{\"data\":{\"value\":\"drift-$n\"}}"
			fi
			;;
		*)
			kc -n "$NS" --request-timeout=5s patch configmap "$a-one" \
				--type merge -p "{\"data\":{\"value\":\"drift-$n\"}}"
			;;
		esac
		[ $((n % 8)) = 0 ] && change_app "actor"
		sleep 1
	done >>"$tmp/actor.log" 2>&1
}
actor_pause() {
	local n=300
	rm -f "$tmp/actor.paused"
	touch "$tmp/actor.pause"
	while [ ! -e "$tmp/actor.paused" ] && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
}
actor_resume() { rm -f "$tmp/actor.pause" "$tmp/actor.paused"; }

# --- the cache ---------------------------------------------------------------
# cache_check: broken files now (sets $broken, lists them in
# $tmp/broken), and the temporaries present (in $tmp/leftovers).
cache_check() {
	local d repo t sums want
	broken=0
	: >"$tmp/broken"
	: >"$tmp/leftovers"
	for d in "$cache"/*/; do
		repo=$d/repo.git
		[ -d "$repo" ] || continue
		find "$d" \( -name '*.tmp.*' -o -name '.tmp-*' -o -name 'tmp_*' \
			-o -name 'pack_git2_*' -o -name '*.lock' \) -print \
			2>/dev/null >>"$tmp/leftovers"
		for t in "$d"trees/*; do
			[ -d "$t" ] || continue
			case ${t##*/} in .tmp-*) continue ;; esac
			want=$(git --git-dir="$repo" ls-tree -r "${t##*/}" 2>/dev/null |
				awk '{ print $3, $4 }' | sort)
			sums=$(cd "$t" && find . -type f | sed 's|^\./||' | sort >"$tmp/files" &&
				paste -d ' ' <(git hash-object --stdin-paths <"$tmp/files") "$tmp/files" | sort)
			checked=$((checked + 1))
			if [ -z "$want" ] || [ "$want" != "$sums" ]; then
				echo "checkout $t differs from its tree" >>"$tmp/broken"
			fi
		done
		for t in "$d"renders/*.json; do
			[ -e "$t" ] || continue
			jq -e '(.version | type == "number") and (.objects | type == "array")' \
				"$t" >/dev/null 2>&1 || echo "render cache $t does not parse" >>"$tmp/broken"
		done
		for t in "$d"state/*; do
			[ -f "$t" ] || continue
			case ${t##*/} in *.tmp.*) continue ;; esac
			[ "$(grep -cE '^(rendered|current|previous)=' "$t")" = 3 ] ||
				echo "state file $t is not whole" >>"$tmp/broken"
		done
	done
	broken=$(wc -l <"$tmp/broken")
}
# survivors: how many temporaries listed before a start are still there.
survivors() {
	local f n=0
	while read -r f; do
		[ -e "$f" ] && { echo "temporary $f survived a start" >>"$tmp/broken.all"; n=$((n + 1)); }
	done <"$1"
	echo "$n"
}

# --- the audit log -----------------------------------------------------------
audit_line() { k8s_audit_barrier; wc -l <"$K8S_AUDIT"; }
# audit_count FROM TO WHAT: syncd's writes (not dry runs) to objects of
# the stable apps (WHAT=stable) or deletions of any app's object
# (WHAT=delete), in lines FROM..TO of the audit log.
audit_count() {
	sed -n "$1,$2p" "$K8S_AUDIT" |
		jq -c --arg what "$3" --arg ns "$NS" '
			select(.user.username == "syncd" and
				(.requestURI | test("[?&]dryRun=All") | not) and
				.objectRef.namespace == $ns and
				((.objectRef.resource // "") | test("^(configmaps|deployments|services)$")) and
				((.objectRef.name // "") | test("^a[0-9][0-9]-")) and
				if $what == "stable" then
					(.verb | test("^(create|update|patch|delete|deletecollection)$")) and
					(.objectRef.name | test("^a0[0-9]-"))
				else
					(.verb | test("^(delete|deletecollection)$"))
				end)' 2>/dev/null | tee -a "$tmp/audit-$3.json" | wc -l
}

# === start =====================================================================
syncd_start
t0=$(date +%s)
if converge_wait; then
	ok "syncd converges 20 apps from the Git server into the API server (${took} s)"
else
	not_ok "syncd converges 20 apps within ${CONVERGE_BOUND} s"
	show_unconverged
	finish
fi
first_line=$(audit_line)
actor &
actor_pid=$!

declare -A injected tmax writes deletes halves windows
for f in "${FAULTS[@]}"; do
	injected[$f]=0 tmax[$f]=0 halves[$f]=0 windows[$f]=
done
: >"$tmp/broken.all"
fail_fault=

# inject_NAME: one fault, healed when it returns (1: could not inject).
inject_apiserver-restart() {
	# (braces: bash's "Killed" notice of the job is not output)
	{ k8s_kill kube-apiserver KILL; } 2>/dev/null || return 1
	sleep 3
	k8s_restart kube-apiserver
}
inject_etcd-restart() {
	{ k8s_kill etcd KILL; } 2>/dev/null || return 1
	sleep 3
	k8s_restart etcd
}
inject_syncd-kill() {
	local k lines h pending
	for k in 1 2 3; do
		lines=$(wc -l <"$log")
		change_app "syncd-kill"
		h=$(head_commit)
		# Killed right after its pass rendered the new revision: the
		# render cache and the checkout are being written, objects
		# applied. The third time at a random moment of the poll that
		# follows the commit instead (ref listing, fetch, checkout).
		if [ "$k" = 3 ]; then
			sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
			sleep "$((RANDOM % 2))"
			pending=random
		else
			pending=rendered
		fi
		for _ in $(seq 200); do
			[ "$pending" = random ] && break
			if tail -n "+$((lines + 1))" "$log" | grep -q "rendered.*revision=$h"; then
				kills_mid=$((kills_mid + 1))
				break
			fi
			sleep 0.05
		done
		syncd_kill
		kills=$((kills + 1))
		cache_check
		temps=$((temps + $(wc -l <"$tmp/leftovers")))
		halves[syncd-kill]=$((${halves[syncd-kill]} + broken))
		cat "$tmp/broken" >>"$tmp/broken.all"
		cat "$tmp/leftovers" >>"$tmp/pending"
		syncd_start
		sleep 1
	done
}
inject_git-kill() {
	local before
	before=$(grep -c 'rqst: POST' "$tmp/http/error.log")
	head -c 1048576 /dev/urandom >"$work/blobs/blob"
	change_app "git-kill"
	for _ in $(seq 400); do
		[ "$(grep -c 'rqst: POST' "$tmp/http/error.log")" -gt "$before" ] && break
		sleep 0.025
	done
	git_stop
	sleep 5
	git_start
}
inject_disk-full() {
	local name rev now bad=
	# Each app's revision before: afterwards it must be the same one or
	# a later one, never another (the last good revision is kept).
	curl -sS --max-time 5 "http://$SYNCD_ADDR/api/v1/apps" |
		jq -r '.apps[] | "\(.name) \(.revision)"' >"$tmp/before" 2>/dev/null
	dd if=/dev/zero of="$cache/filler" bs=1M 2>/dev/null
	change_app "disk-full"
	# syncd notices (a source error for some app: a fetch or a checkout
	# that found no room), keeps running and serving.
	for _ in $(seq 60); do
		curl -sS --max-time 5 "http://$SYNCD_ADDR/api/v1/apps" 2>/dev/null |
			jq -e '[.apps[] | select(.sourceError != null)] | length > 0' >/dev/null &&
			{ full_errors=$((full_errors + 1)); break; }
		sleep 0.25
	done
	if ! kill -0 "$syncd_pid" 2>/dev/null; then
		fail_fault="syncd exited with the cache full"
	elif ! curl -sS --max-time 5 "http://$SYNCD_ADDR/api/v1/apps" >"$tmp/apps.json"; then
		fail_fault="syncd does not answer with the cache full"
	else
		while read -r name rev; do
			now=$(jq -r --arg n "$name" '.apps[] | select(.name == $n) | .revision' "$tmp/apps.json")
			git -C "$tmp/repos/soak.git" merge-base --is-ancestor "$rev" "$now" 2>/dev/null ||
				bad+="$name: $rev -> $now; "
		done <"$tmp/before"
		[ -n "$bad" ] && fail_fault="an app left its last good revision for an older or unknown one with the cache full: $bad"
	fi
	rm -f "$cache/filler"
}
inject_net-cut() {
	netns_cut syncd || return 1
	sleep "$CUT"
	netns_heal syncd
}

kills=0
kills_mid=0
full_errors=0
temps=0
round=0
while :; do
	for f in "${FAULTS[@]}"; do
		[[ " ${skip[*]-} " == *" $f "* ]] && continue
		if [ "$round" -gt 0 ] && [ $(($(date +%s) - t0)) -ge "$SOAK" ]; then
			break 2
		fi
		actor_resume
		sleep 2
		from=$(wc -l <"$K8S_AUDIT")
		: >"$tmp/pending"
		fail_fault=
		if ! "inject_$f"; then
			not_ok "fault $f could not be injected"
			show_log
			finish
		fi
		injected[$f]=$((${injected[$f]} + 1))
		actor_pause
		if ! kill -0 "$syncd_pid" 2>/dev/null; then
			not_ok "fault $f: syncd exited"
			show_log
			syncd_start
		fi
		if ! converge_wait; then
			not_ok "fault $f: converged within ${CONVERGE_BOUND} s"
			show_unconverged
		fi
		[ "$took" -gt "${tmax[$f]}" ] && tmax[$f]=$took
		[ -n "$fail_fault" ] && not_ok "fault $f: $fail_fault"
		# Temporaries of a killed syncd must be gone now that another
		# one started and converged; what is there is whole.
		halves[$f]=$((${halves[$f]} + $(survivors "$tmp/pending")))
		cache_check
		halves[$f]=$((${halves[$f]} + broken))
		cat "$tmp/broken" >>"$tmp/broken.all"
		windows[$f]+="$from:$(audit_line) "
	done
	round=$((round + 1))
done
actor_resume
kill "$actor_pid" 2>/dev/null
wait "$actor_pid" 2>/dev/null
actor_pid=
# The last edits healed, then the end state.
if converge_wait; then
	ok "everything converges at the end (${took} s)"
else
	not_ok "everything converges at the end"
	show_unconverged
fi
last_line=$(audit_line)
syncd_kill
cache_check
end_broken=$broken
cat "$tmp/broken" >>"$tmp/broken.all"

for f in "${FAULTS[@]}"; do
	[[ " ${skip[*]-} " == *" $f "* ]] && continue
	w=0
	d=0
	for win in ${windows[$f]}; do
		w=$((w + $(audit_count "${win%:*}" "${win#*:}" stable)))
		d=$((d + $(audit_count "${win%:*}" "${win#*:}" delete)))
	done
	line="fault $f: injected ${injected[$f]}, converge max ${tmax[$f]} s, writes to in-sync objects $w, deletions of declared objects $d, half-written files ${halves[$f]}"
	if [ "${injected[$f]}" -gt 0 ] && [ "$w" = 0 ] && [ "$d" = 0 ] && [ "${halves[$f]}" = 0 ]; then
		ok "$line"
	else
		not_ok "$line"
	fi
done
# The filter sees syncd's writes: its creates of the stable objects
# before the first convergence.
created=$(audit_count 1 "$first_line" stable)
if [ "$created" -gt 0 ] && [ "$checked" -gt 0 ]; then
	ok "the checks see what they count: $created writes of syncd to the untouched apps' objects before the first convergence, $checked checkouts compared with their trees"
else
	not_ok "the checks see what they count: $created writes of syncd to the untouched apps' objects before the first convergence, $checked checkouts compared with their trees"
fi
: >"$tmp/audit-stable.json"
: >"$tmp/audit-delete.json"
w=$(audit_count "$first_line" "$last_line" stable)
d=$(audit_count 1 "$last_line" delete)
line="whole run ($(($(date +%s) - t0)) s, $round rounds): writes to in-sync objects $w, deletions of declared objects $d, half-written files at the end $end_broken"
if [ "$w" = 0 ] && [ "$d" = 0 ] && [ "$end_broken" = 0 ]; then
	ok "$line"
else
	not_ok "$line"
	head -n 5 "$tmp/audit-stable.json" "$tmp/audit-delete.json" | cut -c 1-400 | sed 's/^/    /'
fi
echo "# syncd killed $kills times ($kills_mid right after its pass rendered a new revision, one in three at a random moment after a commit); $temps temporaries found after the kills, none left once the next one converged unless counted above; the full disk made a source fail $full_errors of ${injected[disk-full]} times"
if [ -s "$tmp/broken.all" ]; then
	sort -u "$tmp/broken.all" | head -n 10 | sed 's/^/    /'
fi
rss_mb=$(( (rss_max + 1023) / 1024 ))
if [ "$rss_max" -gt 0 ] && [ "$rss_mb" -le "$RSS_BOUND_MB" ]; then
	ok "syncd peak RSS ${rss_mb} MB (VmHWM, the largest of $rss_runs runs; bound ${RSS_BOUND_MB} MB)"
else
	not_ok "syncd peak RSS ${rss_mb} MB (VmHWM, the largest of $rss_runs runs; bound ${RSS_BOUND_MB} MB)"
fi
finish
