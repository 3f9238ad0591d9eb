#!/usr/bin/env bash
# syncd with a Git repository as the source (`--repo`), against real
# servers on 127.0.0.1 started and stopped here: file:// and local paths;
# smart HTTP (git http-backend behind lighttpd, basic auth, TLS with a
# throwaway CA); SSH (sshd on a high port, throwaway host and user keys,
# ssh-agent); force-push, branch deletion, tag move, an unreachable
# server, a commit outside --path, and signed and unsigned commits under
# each signature policy. A part is skipped (with the reason) only when its
# server cannot start here. Every wait is bounded; everything is stopped
# on exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/git/servers.sh"

cleanup() {
	gitsrv_stop_all
	local h
	for h in "$tmp/gnupg" "$tmp/gnupg2"; do
		[ -d "$h" ] && GNUPGHOME="$h" gpgconf --kill all >/dev/null 2>&1
	done
	tmp_remove
}
trap cleanup EXIT

SYNCD=$(cd "$(dirname "$SYNCD")" && pwd)/$(basename "$SYNCD")
# Under ASan or valgrind: leaks inside libgit2 1.5.1 itself are not ours
# to fix (tests/integration/git/*.supp say which).
lsan_base=${LSAN_OPTIONS:+$LSAN_OPTIONS:}
export LSAN_OPTIONS="${lsan_base}suppressions=$top/tests/integration/git/lsan.supp"
wrap_base=${SYNCD_WRAP:-}
case $wrap_base in
valgrind*) export SYNCD_WRAP="$wrap_base --suppressions=$top/tests/integration/git/valgrind.supp" ;;
esac
# Nothing from the user's own setup: no ~/.gitconfig, no
# ~/.ssh/known_hosts, no agent, no cache.
export HOME="$tmp/home" XDG_CACHE_HOME="$tmp/xdg-cache"
export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
unset GIT_SSL_CAINFO GIT_SSL_CAPATH
export GIT_AUTHOR_NAME=Tester GIT_AUTHOR_EMAIL=tester@example.com
export GIT_COMMITTER_NAME=Tester GIT_COMMITTER_EMAIL=tester@example.com
unset SSH_AUTH_SOCK SSH_AGENT_PID GIT_SSH GIT_SSH_COMMAND
mkdir -p "$HOME"

expect_contains() { # NEEDLE HAYSTACK NAME: a fixed-string match
	case $2 in
	*"$1"*) ok "$3" ;;
	*)
		not_ok "$3: no \"$1\""
		printf '    got: %s\n' "$(printf '%s' "$2" | head -c 2000)"
		;;
	esac
}
cache="$tmp/cache"
repos="$tmp/repos"
bare="$repos/app.git"
work="$tmp/work"

# --- the repository: two apps in one tree (a monorepo) ---
cm() { # NAME VALUE: a ConfigMap
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: "%s"\n' "$1" "$2"
}
g() { git -C "$work" "$@"; }
commit() { # PATH VALUE MESSAGE [git commit args]: change one file, commit
	local path=$1 value=$2 msg=$3
	shift 3
	mkdir -p "$work/$(dirname "$path")"
	cm "$(basename "$(dirname "$path")")" "$value" >"$work/$path"
	g add -A && g commit -q -m "$msg" "$@" && g rev-parse HEAD
}
push() { g push -q "$bare" "$@"; }

mkdir -p "$repos" "$work"
git init -q --bare "$bare"
git -C "$bare" symbolic-ref HEAD refs/heads/main
git init -q -b main "$work"
printf 'a monorepo\n' >"$work/README"
c1=$(commit apps/web/cm.yaml one "web one")
commit apps/other/cm.yaml x "other x" >/dev/null
c2=$(g rev-parse HEAD)
push main

# render_repo URL ARGS...: render with the shared cache, JSON output.
render_repo() {
	local url=$1
	shift
	run_syncd render --repo "$url" --cache-dir "$cache" -o json "$@"
}
value_of() { # the ConfigMap value in $out
	printf '%s' "$out" | sed -n 's/^ *"value": "\(.*\)"$/\1/p' | head -n 1
}
# The commit id of the last --verbose run.
logged() { printf '%s' "$errout" | sed -n "s/.* $1=\([^ ]*\).*/\1/p" | tail -n 1; }

# === (a) file:// and local paths, revisions, the CLI ===
render_repo "file://$bare" --path apps/web
expect_rc 0 "file:// renders the remote's HEAD"
expect_eq "$(value_of)" one "file:// reads apps/web at HEAD"
expect_match '"name": "web"' "$out" "file:// renders only --path"
render_repo "$bare" --path apps/web --verbose
expect_rc 0 "a local bare repository path renders"
expect_eq "$(logged commit)" "$c2" "the resolved commit is the branch tip"
render_repo "$work" --path apps/web
expect_rc 0 "a local working repository path renders"

g tag light "$c1"
g tag -a -m "annotated" annotated "$c1"
push --tags
for rev in main light annotated "$c1" "${c1:0:10}" refs/heads/main; do
	render_repo "file://$bare" --path apps/web --revision "$rev" --verbose
	want=$c1
	[ "$rev" = main ] || [ "$rev" = refs/heads/main ] && want=$c2
	if [ "$rc" -eq 0 ] && [ "$(logged commit)" = "$want" ]; then
		ok "--revision $rev resolves to its commit"
	else
		not_ok "--revision $rev: exit $rc, commit $(logged commit), want $want"
		printf '    stderr: %s\n' "$errout" | head -n 5
	fi
done

render_repo "file://$bare" --path apps/web --revision no-such-branch
expect_rc 2 "an unknown revision fails"
expect_contains "file://$bare" "$errout" "unknown revision: the error names the URL"
expect_contains "no-such-branch" "$errout" "unknown revision: the error names it"
render_repo "file://$bare" --path apps/nothing
expect_rc 2 "a --path that is not in the commit fails"
expect_match "apps/nothing" "$errout" "the error names the missing path"
render_repo "file://$tmp/no-such-repo.git"
expect_rc 2 "a repository that does not exist fails"
expect_match "no-such-repo" "$errout" "the error names the repository"

run_syncd render "$work/apps/web" --repo "file://$bare"
expect_rc 2 "PATH and --repo together are refused"
run_syncd render "$work/apps/web" --revision main
expect_rc 2 "--revision without --repo is refused"
expect_match "needs --repo" "$errout" "the error says --repo is needed"
run_syncd render --repo "file://$bare" --fetch-timeout 10parsecs
expect_rc 2 "a bad --fetch-timeout is refused"
run_syncd render --repo "file://$bare" --verify-signatures nonsense
expect_rc 2 "a bad --verify-signatures is refused"
for d in 0s 2h 5x -1 ""; do
	run_syncd render --repo "file://$bare" --fetch-timeout "$d"
	expect_rc 2 "--fetch-timeout \"$d\" is refused"
done
render_repo "file://$bare" --path apps/web --fetch-timeout 500ms
expect_rc 0 "--fetch-timeout 500ms is taken"
render_repo "file://$bare" --path apps/web --fetch-timeout 30
expect_rc 0 "--fetch-timeout 30 (seconds) is taken"
# A token as the URL's user name never shows in a message.
dead=$(gitsrv_free_port)
render_repo "https://ghp_SeCrEtToKeN@127.0.0.1:$dead/x.git" --fetch-timeout 5s
expect_rc 2 "an unreachable server with a token in the URL fails"
case $errout in
*SeCrEtToKeN*) not_ok "a token as the URL's user is not repeated" ;;
*127.0.0.1:$dead*) ok "a token as the URL's user is not repeated" ;;
*) not_ok "the error names the URL: $errout" ;;
esac
run_syncd render --repo "https://alice:hunter2@127.0.0.1:1/x.git"
expect_rc 2 "a password inside the URL is refused"
case $errout in
*hunter2*) not_ok "the password inside the URL is not repeated" ;;
*) ok "the password inside the URL is not repeated" ;;
esac

# The resolved commit is part of the drift report (`syncd diff -o json`),
# against live files and against a cluster (kube-emu).
mkdir -p "$tmp/live"
cm web one >"$tmp/live/web.yaml"
run_syncd diff --repo "file://$bare" --path apps/web --cache-dir "$cache" \
	--live "$tmp/live" -o json
expect_rc 0 "syncd diff --repo --live: no drift against the same objects"
expect_contains "\"revision\": \"$c2\"" "$out" \
	"syncd diff --repo --live -o json reports the resolved commit"
EMU=${BUILD:-build}/kube-emu
: >"$tmp/emu.out"
"$EMU" --listen 127.0.0.1:0 --kubeconfig-out "$tmp/kubeconfig" \
	>"$tmp/emu.out" 2>"$tmp/emu.err" &
emu_pid=$!
gitsrv_pids+=("$emu_pid")
for _ in $(seq 50); do
	[ -s "$tmp/kubeconfig" ] && grep -q '^listening on' "$tmp/emu.out" && break
	sleep 0.1
done
if [ -s "$tmp/kubeconfig" ]; then
	run_syncd diff --repo "file://$bare" --path apps/web --cache-dir "$cache" \
		--kubeconfig "$tmp/kubeconfig" -o json
	expect_rc 1 "syncd diff --repo against a cluster: the ConfigMap is missing"
	expect_contains "\"revision\": \"$c2\"" "$out" \
		"syncd diff --repo -o json (cluster) reports the resolved commit"
	run_syncd sync --repo "file://$bare" --path apps/web --cache-dir "$cache" \
		--kubeconfig "$tmp/kubeconfig"
	expect_rc 0 "syncd sync --repo applies the app"
	emu_url=$(sed -n 's/^listening on //p' "$tmp/emu.out")
	live=$(curl -fsS --max-time 5 "$emu_url/api/v1/namespaces/default/configmaps/web" 2>&1)
	expect_match '"value": ?"one"' "$live" "syncd sync --repo: the ConfigMap from the repository is in the cluster"
	run_syncd diff --repo "file://$bare" --path apps/web --cache-dir "$cache" \
		--kubeconfig "$tmp/kubeconfig"
	expect_rc 0 "syncd diff --repo after sync: no drift"
else
	not_ok "kube-emu did not start: $(head -c 500 "$tmp/emu.err")"
fi
gitsrv_kill "$emu_pid"

# === (d) history changes over file:// ===
# A commit outside --path: the tree at apps/web is the one read last, so
# no new render is needed (changed=false), and the output is the same.
render_repo "file://$bare" --path apps/web --verbose
before=$out
c3=$(commit apps/other/cm.yaml y "other y")
push main
render_repo "file://$bare" --path apps/web --verbose
expect_rc 0 "after a commit outside --path: renders"
expect_eq "$(logged commit)" "$c3" "the new commit is resolved"
expect_eq "$(logged changed)" false "a commit outside --path: changed=false (no render needed)"
expect_eq "$out" "$before" "a commit outside --path: the same objects"
c4=$(commit apps/web/cm.yaml two "web two")
push main
render_repo "file://$bare" --path apps/web --verbose
expect_eq "$(logged changed)" true "a commit inside --path: changed=true"
expect_eq "$(value_of)" two "a commit inside --path: the new objects"
render_repo "file://$bare" --path apps/web --verbose
expect_eq "$(logged changed)" false "nothing moved: changed=false"
expect_eq "$(logged fetched)" false "nothing moved: no fetch"

# The render cache: a commit that does not touch --path costs no render,
# also in a new process; other render options render again. A stand-in
# kustomize counts its runs.
fake_kust=$tmp/fake-kustomize
printf '#!/bin/sh\necho run >>"%s"\nfor a in "$@"; do [ -d "$a" ] && cat "$a/cm.yaml"; done\nexit 0\n' \
	"$tmp/kust.runs" >"$fake_kust"
chmod +x "$fake_kust"
kust_runs() {
	if [ -f "$tmp/kust.runs" ]; then wc -l <"$tmp/kust.runs" | tr -d ' '; else echo 0; fi
}
mkdir -p "$work/apps/kust"
printf 'resources:\n- cm.yaml\n' >"$work/apps/kust/kustomization.yaml"
commit apps/kust/cm.yaml one "kust one" >/dev/null
push main
render_kust() {
	render_repo "file://$bare" --path apps/kust --renderer kustomize \
		--kustomize-bin "$fake_kust" --verbose "$@"
}
render_kust
expect_rc 0 "kustomize from Git renders"
expect_eq "$(kust_runs) $(value_of)" "1 one" "the first render runs the tool"
render_kust
expect_eq "$(kust_runs) $(value_of)" "1 one" "the same tree again: the render is reused (no tool run)"
expect_contains "render reused" "$errout" "--verbose says the render was reused"
commit apps/other/cm.yaml z "other z" >/dev/null
push main
render_kust
expect_eq "$(kust_runs) $(value_of)" "1 one" "a commit outside --path: no render"
commit apps/kust/cm.yaml two "kust two" >/dev/null
push main
render_kust
expect_eq "$(kust_runs) $(value_of)" "2 two" "a commit inside --path: rendered again"
render_kust --var X=1
expect_eq "$(kust_runs)" 3 "other render options: rendered again"
if ls "$cache"/*/renders/*.json >/dev/null 2>&1; then
	ok "renders are cached in the cache dir"
else
	not_ok "renders are cached in the cache dir"
fi

# Force-push: main rewritten to a commit that does not contain c4.
g reset -q --hard "$c3"
c5=$(commit apps/web/cm.yaml three "web three (rewritten)")
push --force main
render_repo "file://$bare" --path apps/web --verbose
expect_rc 0 "after a force-push: renders"
expect_eq "$(logged commit)" "$c5" "after a force-push: the rewritten commit"
expect_eq "$(value_of)" three "after a force-push: the rewritten content"

# Tag move: v1 first at c1, then moved (force-pushed) to c5.
g tag v1 "$c1"
push v1
render_repo "file://$bare" --path apps/web --revision v1 --verbose
expect_eq "$(logged commit)" "$c1" "tag v1 resolves to its first commit"
g tag -f v1 "$c5" >/dev/null
push --force v1
render_repo "file://$bare" --path apps/web --revision v1 --verbose
expect_rc 0 "after a tag move: renders"
expect_eq "$(logged commit)" "$c5" "after a tag move: the tag's new commit"
expect_eq "$(value_of)" three "after a tag move: the new content"

# Branch deletion: the branch renders, then is deleted on the server.
g branch feature "$c1"
push feature
render_repo "file://$bare" --path apps/web --revision feature --verbose
expect_rc 0 "branch feature renders"
feature_tree=$(logged tree)
g push -q "$bare" :feature
render_repo "file://$bare" --path apps/web --revision feature
expect_rc 2 "a deleted branch fails"
expect_match "feature" "$errout" "the error names the deleted branch"
if [ -n "$feature_tree" ] && ls -d "$cache"/*/trees/"$feature_tree" >/dev/null 2>&1; then
	ok "the last good checkout of the deleted branch stays in the cache"
else
	not_ok "the last good checkout of the deleted branch stays in the cache"
fi

# === (b) smart HTTP: lighttpd + git http-backend, basic auth, TLS ===
printf 's3cret-pass-8c1f\n' >"$tmp/password"
canary_input "$tmp/password"
printf 'wrong\n' >"$tmp/wrong-password"
http_ok=
if gitsrv_tls_ca "$tmp/tls" && gitsrv_http_start "$repos" alice s3cret-pass-8c1f; then
	http_ok=1
else
	ok "smart HTTP skipped: $gitsrv_why"
fi
if [ -n "$http_ok" ]; then
	url="https://127.0.0.1:$http_port/git/app.git"
	render_repo "$url" --path apps/web --username alice \
		--password-file "$tmp/password" --ca-file "$tmp/tls/ca.pem" --verbose
	expect_rc 0 "HTTPS with basic auth (password file) renders"
	expect_eq "$(logged commit)" "$c5" "HTTPS: the branch tip"
	expect_eq "$(value_of)" three "HTTPS: the content"

	# The user name may come from a file too (usernameFile in syncd.yaml).
	printf 'alice\n' >"$tmp/username"
	render_repo "$url" --path apps/web --username-file "$tmp/username" \
		--password-file "$tmp/password" --ca-file "$tmp/tls/ca.pem"
	expect_rc 0 "HTTPS with the user name from a file renders"
	expect_eq "$(value_of)" three "HTTPS: the user from a file, the content"
	render_repo "$url" --path apps/web --username alice \
		--username-file "$tmp/username" \
		--password-file "$tmp/password" --ca-file "$tmp/tls/ca.pem"
	expect_rc 2 "HTTPS: --username with --username-file is refused"
	expect_contains "either a username or a username file" "$errout" \
		"HTTPS: the conflict is named"

	# Nothing moved: the refs are listed (one GET of the advertisement,
	# credentials sent at once, no 401 round trip), nothing is fetched
	# (no POST to git-upload-pack).
	read -r total0 posts0 < <(gitsrv_http_requests)
	render_repo "$url" --path apps/web --username alice \
		--password-file "$tmp/password" --ca-file "$tmp/tls/ca.pem" --verbose
	expect_rc 0 "HTTPS: a second poll renders"
	read -r total1 posts1 < <(gitsrv_http_requests)
	expect_eq "$((posts1 - posts0))" 0 "HTTPS: nothing moved, no fetch request"
	expect_eq "$((total1 - total0))" 1 \
		"HTTPS: nothing moved, one request: the ref advertisement"
	expect_eq "$(logged fetched)" false "HTTPS: nothing moved, fetched=false"

	# A pinned full commit id that is in the cache: no request at all.
	render_repo "$url" --path apps/web --revision "$c5" --username alice \
		--password-file "$tmp/password" --ca-file "$tmp/tls/ca.pem"
	expect_rc 0 "HTTPS: a pinned commit renders"
	read -r total2 _ < <(gitsrv_http_requests)
	expect_eq "$((total2 - total1))" 0 \
		"HTTPS: a pinned commit in the cache needs no request"

	# A new commit: listed and fetched (one POST).
	c6=$(commit apps/web/cm.yaml four "web four")
	push main
	render_repo "$url" --path apps/web --username alice \
		--password-file "$tmp/password" --ca-file "$tmp/tls/ca.pem" --verbose
	read -r _ posts3 < <(gitsrv_http_requests)
	expect_eq "$(logged commit)" "$c6" "HTTPS: a new commit is fetched"
	expect_eq "$((posts3 - posts1))" 1 "HTTPS: a new commit costs one fetch request"
	expect_eq "$(value_of)" four "HTTPS: the new content"

	export SYNCD_TEST_PW=s3cret-pass-8c1f
	render_repo "$url" --path apps/web --username alice \
		--password-env SYNCD_TEST_PW --ca-file "$tmp/tls/ca.pem"
	expect_rc 0 "HTTPS with the password in an environment variable"
	render_repo "$url" --path apps/web --username alice \
		--token-file "$tmp/password" --ca-file "$tmp/tls/ca.pem"
	expect_rc 0 "HTTPS with a token file"
	render_repo "$url" --path apps/web --username alice \
		--token-env SYNCD_NO_SUCH_VARIABLE --ca-file "$tmp/tls/ca.pem" \
		--cache-dir "$tmp/cache-unset"
	expect_rc 2 "HTTPS with --token-env naming an unset variable fails"
	expect_contains SYNCD_NO_SUCH_VARIABLE "$errout" "the error names the variable"
	unset SYNCD_TEST_PW

	render_repo "$url" --path apps/web --username alice \
		--password-file "$tmp/wrong-password" --ca-file "$tmp/tls/ca.pem"
	expect_rc 2 "HTTPS with a wrong password fails"
	expect_match "127\\.0\\.0\\.1:$http_port/git/app\\.git" "$errout" \
		"wrong password: the error names the URL"
	expect_match "[Aa]uth|401|credential" "$errout" \
		"wrong password: the error says authentication failed"
	case $errout in
	*wrong*|*s3cret-pass-8c1f*) not_ok "wrong password: no secret in the error" ;;
	*) ok "wrong password: no secret in the error" ;;
	esac
	render_repo "$url" --path apps/web --ca-file "$tmp/tls/ca.pem" \
		--cache-dir "$tmp/cache-nocreds"
	expect_rc 2 "HTTPS without credentials fails"

	render_repo "$url" --path apps/web --username alice \
		--password-file "$tmp/password" --ca-file "$tmp/tls/other-ca.pem"
	expect_rc 2 "HTTPS with the wrong CA fails"
	expect_match "[Cc]ertificate|TLS|SSL|[Tt]rust" "$errout" \
		"wrong CA: the error is a TLS error"
	expect_match "127\\.0\\.0\\.1:$http_port" "$errout" "wrong CA: the error names the URL"
	render_repo "$url" --path apps/web --username alice \
		--password-file "$tmp/password" --cache-dir "$tmp/cache-sysca"
	expect_rc 2 "HTTPS with the system CAs refuses the test CA"

	render_repo "https://alice@127.0.0.1:$http_port/git/app.git" \
		--path apps/web --password-file "$tmp/password" \
		--ca-file "$tmp/tls/ca.pem" --verbose
	expect_rc 0 "HTTPS with the user in the URL and a password file"
	case $errout in
	*alice@*) not_ok "the user information of the URL is not logged" ;;
	*) ok "the user information of the URL is not logged" ;;
	esac

	# Unreachable: the same URL on a port nobody listens on.
	dead=$(gitsrv_free_port)
	render_repo "https://127.0.0.1:$dead/git/app.git" --path apps/web \
		--username alice --password-file "$tmp/password" \
		--ca-file "$tmp/tls/ca.pem" --fetch-timeout 10s
	expect_rc 2 "an unreachable HTTPS server fails"
	expect_match "127\\.0\\.0\\.1:$dead" "$errout" "unreachable: the error names the URL"
fi

# Unreachable over SSH too (no server needed).
dead=$(gitsrv_free_port)
render_repo "ssh://git@127.0.0.1:$dead/srv/app.git" --path apps/web \
	--insecure-skip-host-key-check --fetch-timeout 10s
expect_rc 2 "an unreachable SSH server fails"
expect_match "127\\.0\\.0\\.1:$dead" "$errout" "unreachable SSH: the error names the URL"

# === (c) SSH: sshd with throwaway keys ===
# (libgit2 has no frame pointers: the slow unwinder finds its callers)
asan_base=${ASAN_OPTIONS:-}
export ASAN_OPTIONS="${asan_base:+$asan_base:}fast_unwind_on_malloc=0"
export LSAN_OPTIONS="${lsan_base}suppressions=$top/tests/integration/git/lsan-ssh.supp"
case $wrap_base in
valgrind*) SYNCD_WRAP="$SYNCD_WRAP --suppressions=$top/tests/integration/git/valgrind-ssh.supp" ;;
esac
ssh_ok=
if gitsrv_ssh_start; then
	ssh_ok=1
else
	ok "SSH skipped: $gitsrv_why"
fi
if [ -n "$ssh_ok" ]; then
	s="$tmp/ssh"
	url="ssh://$ssh_user@127.0.0.1:$ssh_port$bare"
	fp=$(ssh-keygen -lf "$s/host_key.pub" | awk '{print $2}')
	render_repo "$url" --path apps/web --ssh-key "$s/id_user" \
		--known-hosts "$s/known_hosts" --verbose
	expect_rc 0 "SSH with a key file renders"
	expect_eq "$(logged commit)" "$(git -C "$bare" rev-parse main)" "SSH: the branch tip"

	printf 'test passphrase\n' >"$s/passphrase"
	render_repo "$url" --path apps/web --ssh-key "$s/id_enc" \
		--ssh-passphrase-file "$s/passphrase" \
		--known-hosts "$s/known_hosts" --cache-dir "$tmp/cache-enc"
	expect_rc 0 "SSH with an encrypted key and its passphrase file"

	ssh-keygen -q -t ed25519 -N '' -C stranger -f "$s/id_stranger"
	render_repo "$url" --path apps/web --ssh-key "$s/id_stranger" \
		--known-hosts "$s/known_hosts" --cache-dir "$tmp/cache-stranger"
	expect_rc 2 "SSH with a key the server does not know fails"
	expect_match "127\\.0\\.0\\.1:$ssh_port" "$errout" "unknown user key: the error names the URL"

	render_repo "$url" --path apps/web --ssh-key "$s/id_user" \
		--known-hosts "$s/known_hosts.empty" --cache-dir "$tmp/cache-unknown"
	expect_rc 2 "SSH: an unknown host key is refused"
	expect_contains "$fp" "$errout" "unknown host key: the error holds its fingerprint"
	render_repo "$url" --path apps/web --ssh-key "$s/id_user" \
		--cache-dir "$tmp/cache-unknown"
	expect_rc 2 "SSH: no known_hosts file (default ~/.ssh/known_hosts) refuses"
	render_repo "$url" --path apps/web --ssh-key "$s/id_user" \
		--known-hosts "$s/known_hosts.empty" --insecure-skip-host-key-check \
		--cache-dir "$tmp/cache-unknown"
	expect_rc 0 "SSH: --insecure-skip-host-key-check accepts it"

	# Agent: no key file; the agent holds a key the server accepts.
	if eval "$(ssh-agent -s -a "$tmp/agent.sock")" >/dev/null &&
		ssh-add -q "$s/id_agent" 2>/dev/null; then
		render_repo "$url" --path apps/web --known-hosts "$s/known_hosts" \
			--cache-dir "$tmp/cache-agent"
		expect_rc 0 "SSH through ssh-agent renders"
		kill "$SSH_AGENT_PID" 2>/dev/null
		unset SSH_AUTH_SOCK SSH_AGENT_PID
	else
		not_ok "ssh-agent could not be started"
	fi

	# The same address now answers with another host key.
	if gitsrv_ssh_restart_new_host_key; then
		newfp=$(ssh-keygen -lf "$s/other_host_key.pub" | awk '{print $2}')
		render_repo "$url" --path apps/web --ssh-key "$s/id_user" \
			--known-hosts "$s/known_hosts"
		expect_rc 2 "SSH: a changed host key is refused"
		expect_contains "$newfp" "$errout" "changed host key: the error holds the new fingerprint"
		gitsrv_ssh_restart_old_host_key ||
			not_ok "sshd restart: $gitsrv_why"
	else
		not_ok "sshd restart with a new host key: $gitsrv_why"
	fi
fi

export LSAN_OPTIONS="${lsan_base}suppressions=$top/tests/integration/git/lsan.supp"
export ASAN_OPTIONS="$asan_base"
case $wrap_base in
valgrind*) export SYNCD_WRAP="$wrap_base --suppressions=$top/tests/integration/git/valgrind.supp" ;;
esac

# === (d) signatures: signed and unsigned commits under each policy ===
sig="$tmp/sig"
mkdir -p "$sig"
ssh-keygen -q -t ed25519 -N '' -C signer -f "$sig/signer"
ssh-keygen -q -t ed25519 -N '' -C other -f "$sig/other"
printf 'tester@example.com namespaces="git" %s\n' \
	"$(cut -d' ' -f1,2 "$sig/signer.pub")" >"$sig/allowed_signers"
g checkout -q -b signed-ssh "$c5"
cs=$(g -c gpg.format=ssh -c "user.signingkey=$sig/signer" commit -q \
	--allow-empty -S -m "ssh signed" && g rev-parse HEAD)
g checkout -q -b signed-other "$c5"
co=$(g -c gpg.format=ssh -c "user.signingkey=$sig/other" commit -q \
	--allow-empty -S -m "signed by a stranger" && g rev-parse HEAD)
g checkout -q -b unsigned "$c5"
cu=$(g commit -q --allow-empty -m "unsigned" && g rev-parse HEAD)
g checkout -q main
push signed-ssh signed-other unsigned

# GPG: a throwaway key in a throwaway home, its public keyring exported.
gpg_ok=
export GNUPGHOME="$tmp/gnupg"
mkdir -p "$GNUPGHOME"
chmod 700 "$GNUPGHOME"
if command -v gpg >/dev/null && command -v gpgv >/dev/null &&
	timeout 60 gpg --batch --quiet --passphrase '' --quick-gen-key \
		'Tester <tester@example.com>' ed25519 sign never >/dev/null 2>&1; then
	keyid=$(gpg --batch --with-colons --list-keys tester@example.com 2>/dev/null |
		awk -F: '/^fpr:/ {print $10; exit}')
	gpg --batch --export "$keyid" >"$sig/keyring.gpg"
	g checkout -q -b signed-gpg "$c5"
	cg=$(g -c gpg.program=gpg -c "user.signingkey=$keyid" commit -q \
		--allow-empty -S -m "gpg signed" 2>/dev/null && g rev-parse HEAD)
	g checkout -q main
	[ -n "$cg" ] && push signed-gpg && gpg_ok=1
	# A keyring with another key only: the same signature is untrusted.
	GNUPGHOME="$tmp/gnupg2"
	mkdir -p "$GNUPGHOME" && chmod 700 "$GNUPGHOME"
	timeout 60 gpg --batch --quiet --passphrase '' --quick-gen-key \
		'Other <other@example.com>' ed25519 sign never >/dev/null 2>&1 &&
		gpg --batch --export other@example.com >"$sig/other-keyring.gpg" 2>/dev/null
	GNUPGHOME="$tmp/gnupg"
fi
# syncd's checks must not lean on a GnuPG home: give it an empty one.
export GNUPGHOME="$tmp/gnupg-empty"
mkdir -p "$GNUPGHOME" && chmod 700 "$GNUPGHOME"
[ -n "$gpg_ok" ] || not_ok "a GPG-signed commit could not be made (gpg missing?)"

ssh_policy="allowed_signers=$sig/allowed_signers"
gpg_policy="gpg-keyring=$sig/keyring.gpg"
# check POLICY... -- BRANCH COMMIT WANT_RC NAME
check_sig() {
	local args=()
	while [ "$1" != -- ]; do
		args+=(--verify-signatures "$1")
		shift
	done
	shift
	render_repo "file://$bare" --path apps/web --revision "$1" "${args[@]}"
	expect_rc "$3" "$4"
	if [ "$3" -ne 0 ]; then
		expect_match "${2:0:7}" "$errout" "$4: the error names the commit"
	fi
}
check_sig "$ssh_policy" -- signed-ssh "$cs" 0 "allowed_signers: an SSH-signed commit renders"
check_sig "$ssh_policy" -- unsigned "$cu" 2 "allowed_signers: an unsigned commit is refused"
check_sig "$ssh_policy" -- signed-other "$co" 2 "allowed_signers: a commit signed by an unknown key is refused"
if [ -n "$gpg_ok" ]; then
	check_sig "$ssh_policy" -- signed-gpg "$cg" 2 "allowed_signers: a GPG-signed commit is refused"
	check_sig "$gpg_policy" -- signed-gpg "$cg" 0 "gpg-keyring: a GPG-signed commit renders"
	check_sig "$gpg_policy" -- unsigned "$cu" 2 "gpg-keyring: an unsigned commit is refused"
	check_sig "$gpg_policy" -- signed-ssh "$cs" 2 "gpg-keyring: an SSH-signed commit is refused"
	if [ -s "$sig/other-keyring.gpg" ]; then
		check_sig "gpg-keyring=$sig/other-keyring.gpg" -- signed-gpg "$cg" 2 \
			"gpg-keyring: a commit signed by a key not in the keyring is refused"
	fi
	check_sig "$ssh_policy" "$gpg_policy" -- signed-gpg "$cg" 0 "both policies: a GPG-signed commit renders"
	check_sig "$ssh_policy" "$gpg_policy" -- signed-ssh "$cs" 0 "both policies: an SSH-signed commit renders"
	check_sig "$ssh_policy" "$gpg_policy" -- unsigned "$cu" 2 "both policies: an unsigned commit is refused"
fi
render_repo "file://$bare" --path apps/web --revision unsigned
expect_rc 0 "no policy: an unsigned commit renders"

finish
