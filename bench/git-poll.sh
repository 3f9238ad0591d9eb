#!/usr/bin/env bash
# Benchmark: polling an unchanged Git repository, the controller's steady
# state between two pushes. $BUILD/bench/git-poll (bench/git-poll.c) polls
# one source in a loop through source/source.h; in the same run, the peers do
# the same check with the git command line: `git ls-remote` (list the refs:
# the least a poll can do over the network) and `git fetch` in a clone
# that is up to date (a no-op fetch, what a naive poller runs). Served
# over file:// and, when lighttpd is installed, smart HTTP over TLS with
# basic auth on 127.0.0.1 (requests counted by the server).
# Also times `syncd render --repo` as a whole process.
#
# Goals (issue 6), printed as met/MISSED with the figures as measured:
#   - no fetch when nothing moved
#   - under 10 ms per poll on loopback
#   - a monorepo commit outside the app's path costs no render
# A missed goal exits 0; an error (a poll failing, a server not coming up
# when it is installed) exits non-zero.
#
#   bench/git-poll.sh [POLLS]     (default 200 polls per transport)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
BUILD=${BUILD:-build}
POLLS=${1:-200}
PEER_RUNS=$(( POLLS < 50 ? POLLS : 50 ))
POLLER="$top/$BUILD/bench/git-poll"
SYNCD="$top/$BUILD/syncd"
[ -x "$POLLER" ] || make -s BUILD="$BUILD" "$BUILD/bench/git-poll"
[ -x "$SYNCD" ] || make -s BUILD="$BUILD" "$BUILD/syncd"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncd-bench-git.XXXXXX")
# servers.sh expects lib.sh's $tmp and its helpers' names; the secrets
# canary of the tests has nothing to check here.
canary_plant() { :; }
canary_input() { :; }
. tests/integration/git/servers.sh
cleanup() {
	set +e
	gitsrv_stop_all
	rm -rf "$tmp"
}
trap cleanup EXIT

export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
# The peers trust the test CA through -c http.sslCAInfo, which an
# inherited GIT_SSL_CAINFO would override.
unset GIT_SSL_CAINFO GIT_SSL_CAPATH
export GIT_AUTHOR_NAME=Bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=Bench GIT_COMMITTER_EMAIL=bench@example.com
mkdir -p "$HOME"

# A monorepo: 20 apps of 50 manifests each, plus a README at the top.
repos="$tmp/repos"
bare="$repos/mono.git"
work="$tmp/work"
mkdir -p "$repos"
git init -q --bare "$bare"
git -C "$bare" symbolic-ref HEAD refs/heads/main
git init -q -b main "$work"
for a in $(seq 20); do
	mkdir -p "$work/apps/app$a"
	for f in $(seq 50); do
		printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app%s-%s\ndata:\n  n: "%s"\n' \
			"$a" "$f" "$f" >"$work/apps/app$a/cm$f.yaml"
	done
done
echo monorepo >"$work/README"
git -C "$work" add -A
git -C "$work" commit -q -m initial
git -C "$work" push -q "$bare" main

ms_per() { # SECONDS RUNS: milliseconds per run
	awk -v s="$1" -v n="$2" 'BEGIN { printf "%.2f", s * 1000 / n }'
}
# time_runs RUNS CMD...: seconds for RUNS runs of CMD (output dropped).
time_runs() {
	local n=$1 t0 t1 i
	shift
	t0=$(date +%s.%N)
	for i in $(seq "$n"); do
		"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
	done
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }'
}
field() { sed -n "s/.*\\<$1=\\([^ ]*\\).*/\\1/p"; }

no_fetch=met
fast=met
no_render=
speed=

# bench_transport NAME URL [auth args for git-poll] -- [git -c args]
bench_transport() {
	local name=$1 url=$2 pargs=() gargs=() line mean fetches rpp cache
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do pargs+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	gargs=("$@")
	cache="$tmp/cache-$name"
	echo "== $name: $url, $POLLS polls of apps/app1 at main, nothing moves"
	line=$("$POLLER" --url "$url" --path apps/app1 --cache-dir "$cache" \
		-n "$POLLS" "${pargs[@]+"${pargs[@]}"}")
	mean=$(field mean_ms <<<"$line")
	fetches=$(field fetches <<<"$line")
	rpp=$(field requests_per_poll <<<"$line")
	printf '  syncd poll (source_git_poll)  %8s ms/poll  p50 %s  p99 %s  fetches %s  requests/poll %s\n' \
		"$mean" "$(field p50_ms <<<"$line")" "$(field p99_ms <<<"$line")" \
		"$fetches" "$rpp"
	[ "$fetches" = 0 ] || no_fetch=MISSED
	if awk -v m="$mean" 'BEGIN { exit !(m < 10) }'; then
		speed="$speed $name $mean ms met;"
	else
		speed="$speed $name $mean ms MISSED;"
		fast=MISSED
	fi

	local s
	s=$(time_runs "$PEER_RUNS" git "${gargs[@]+"${gargs[@]}"}" ls-remote "$url" refs/heads/main)
	printf '  git ls-remote                 %8s ms/run\n' "$(ms_per "$s" "$PEER_RUNS")"
	git "${gargs[@]+"${gargs[@]}"}" clone -q --bare "$url" "$tmp/peer-$name.git"
	s=$(time_runs "$PEER_RUNS" git "${gargs[@]+"${gargs[@]}"}" -C "$tmp/peer-$name.git" fetch -q origin)
	printf '  git fetch (no-op)             %8s ms/run\n' "$(ms_per "$s" "$PEER_RUNS")"
	s=$(time_runs "$PEER_RUNS" "$SYNCD" render --repo "$url" --path apps/app1 \
		--cache-dir "$cache" "${pargs[@]+"${pargs[@]}"}")
	printf '  syncd render --repo (process) %8s ms/run  (startup, poll, checkout, render of 50 files)\n' \
		"$(ms_per "$s" "$PEER_RUNS")"
}

bench_transport file "file://$bare"

# Smart HTTP, when the server can run here.
http=
if gitsrv_tls_ca "$tmp/tls" >/dev/null && gitsrv_http_start "$repos" bench b3nch; then
	http=1
	printf 'b3nch\n' >"$tmp/password"
	printf 'https://bench:b3nch@127.0.0.1:%s\n' "$http_port" >"$tmp/git-credentials"
	url="https://127.0.0.1:$http_port/git/mono.git"
	echo
	bench_transport https "$url" --ca-file "$tmp/tls/ca.pem" --username bench \
		--password-file "$tmp/password" -- -c "http.sslCAInfo=$tmp/tls/ca.pem" \
		-c "credential.helper=" -c "credential.helper=store --file=$tmp/git-credentials"
else
	echo
	echo "== https: skipped: $gitsrv_why"
fi
if [ -n "$http" ]; then
	# HTTP requests per check, counted by the server.
	count_requests() {
		local before after
		read -r before _ < <(gitsrv_http_requests)
		"$@" >/dev/null 2>&1
		read -r after _ < <(gitsrv_http_requests)
		echo $((after - before))
	}
	gitc=(git -c "http.sslCAInfo=$tmp/tls/ca.pem" -c "credential.helper="
		-c "credential.helper=store --file=$tmp/git-credentials")
	r_poll=$(count_requests "$POLLER" --url "$url" --path apps/app1 \
		--cache-dir "$tmp/cache-https" --ca-file "$tmp/tls/ca.pem" \
		--username bench --password-file "$tmp/password" --once)
	r_ls=$(count_requests "${gitc[@]}" ls-remote "$url" refs/heads/main)
	r_fetch=$(count_requests "${gitc[@]}" -C "$tmp/peer-https.git" fetch -q origin)
	echo "  HTTP requests per check: syncd poll $r_poll, git ls-remote $r_ls, git fetch (no-op) $r_fetch"
	# The server's own time: curl asking for the same ref advertisement
	# $POLLS times on one kept-alive connection (lighttpd runs git
	# http-backend as a CGI for each request). No poll over this server
	# can be faster.
	refs="$url/info/refs?service=git-upload-pack"
	curl_args=()
	for _ in $(seq "$POLLS"); do curl_args+=("$refs" -o /dev/null); done
	s=$(time_runs 1 curl -sf -u bench:b3nch --cacert "$tmp/tls/ca.pem" "${curl_args[@]}")
	printf '  the server alone (curl, kept-alive) %8s ms/request: the floor of an HTTPS poll here\n' \
		"$(ms_per "$s" "$POLLS")"
fi

# A commit outside apps/app1 (monorepo): the poll fetches it, and the
# tree at apps/app1 is the one already rendered: no render.
echo
echo "== monorepo: a commit to apps/app2, polled by a source of apps/app1"
"$POLLER" --url "file://$bare" --path apps/app1 --cache-dir "$tmp/cache-mono" --once >/dev/null
printf '  n: "changed"\n' >>"$work/apps/app2/cm1.yaml"
git -C "$work" commit -q -am "app2 only"
git -C "$work" push -q "$bare" main
line=$("$POLLER" --url "file://$bare" --path apps/app1 --cache-dir "$tmp/cache-mono" --once)
echo "  $line"
if [ "$(field changed <<<"$line")" = false ] &&
	[ "$(field commit <<<"$line")" = "$(git -C "$work" rev-parse HEAD)" ]; then
	no_render=met
else
	no_render=MISSED
fi
printf '  n: "changed"\n' >>"$work/apps/app1/cm1.yaml"
git -C "$work" commit -q -am "app1"
git -C "$work" push -q "$bare" main
line=$("$POLLER" --url "file://$bare" --path apps/app1 --cache-dir "$tmp/cache-mono" --once)
echo "  then a commit to apps/app1: $line"
[ "$(field changed <<<"$line")" = true ] || no_render=MISSED

echo
echo "== goals (issue 6)"
echo "  no fetch when nothing moved:                         $no_fetch"
echo "  under 10 ms per poll on loopback:                    $fast  (${speed# })"
echo "  a monorepo commit outside the path costs no render:  $no_render"
