#!/usr/bin/env bash
# Benchmark: `syncd run -c FILE`, the controller, keeping APPS apps
# converged against a kube-emu on loopback (TLS, bearer token), with
# `kubectl diff --server-side` over the same objects as the peer.
#
# One file:// Git repository made in a temporary folder holds APPS
# directories apps/app-NNN/, one app each, with OBJECTS / APPS ConfigMaps
# of about 1 KB in the app's own namespace app-NNN (the Namespaces are
# created before, they are not part of the apps). The first convergence
# (`syncd run --once`, unthrottled) is setup, not a measurement. Then, in
# the steady state, nothing drifted:
#   1. requests per resync, total and by verb, from /emu/stats reset
#      between two resync rounds, over RESYNCS rounds (resync 10s,
#      watch off, passes counted from the "pass done" log lines);
#   2. CPU seconds per resync (utime + stime of syncd, /proc/PID/stat);
#   3. peak RSS (VmHWM, /proc/PID/status), watch off and watch on;
#   4. time from a manual edit (merge PATCH of one ConfigMap's data by the
#      field manager kubectl-edit) to its correction, polled with GET
#      every 20 ms, EDITS times, watch on (the default) and watch off;
#   5. `syncd run --once` over the converged apps (with the default
#      client rate limit, then unthrottled) and, when kubectl is
#      installed, `kubectl diff --server-side -R` over the same manifests:
#      requests, wall time, peak RSS.
# Goals (issue 8) are printed as met/MISSED with the figures as measured.
# A missed goal exits 0; an error (kube-emu not coming up, syncd failing,
# a pass failing, an edit never corrected) exits non-zero.
#
#   APPS=100 OBJECTS=10000 RESYNCS=3 EDITS=5 bench/controller.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SYNCD="$BUILD/syncd"
APPS=${APPS:-100}
OBJECTS=${OBJECTS:-10000}
RESYNCS=${RESYNCS:-3}
EDITS=${EDITS:-5}
RESYNC_S=10
[ -x "$SYNCD" ] || make -s BUILD="$BUILD" "$SYNCD"
[ -x "$BUILD/kube-emu" ] || make -s BUILD="$BUILD" "$BUILD/kube-emu"
for tool in curl jq git /usr/bin/time; do
	command -v "$tool" >/dev/null || {
		echo "bench/controller.sh: $tool is required" >&2
		exit 2
	}
done
if [ "$APPS" -lt 1 ] || [ "$APPS" -gt 999 ] ||
	[ $((OBJECTS % APPS)) -ne 0 ] || [ "$OBJECTS" -lt "$APPS" ]; then
	echo "bench/controller.sh: APPS must be 1..999 and OBJECTS a" \
		"multiple of it" >&2
	exit 2
fi
PER=$((OBJECTS / APPS))

out=bench/out/controller
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncd-bench-controller.XXXXXX")

# The shared helpers: emu_start_tls, api, reset_stats; they kill every
# pid in $pids and remove $tmp on exit.
ok() { echo "$1"; }
not_ok() { echo "bench/controller.sh: failed: $1" >&2; }
finish() { exit 1; }
tmp_remove() { rm -rf "$tmp"; }
. tests/helpers/emu.sh
# Its cleanup kills processes that may have exited already: not an error.
trap 'set +e; emu_cleanup' EXIT

die() {
	echo "bench/controller.sh: $*" >&2
	exit 1
}

emu_start_tls
echo "kube-emu $url (pid $emu_pid); $APPS apps, $OBJECTS ConfigMaps" \
	"($PER per app)"

for i in $(seq "$APPS"); do
	ns=$(printf 'app-%03d' "$i")
	api POST /api/v1/namespaces application/json \
		"{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",
		  \"metadata\":{\"name\":\"$ns\"}}"
	[ "$code" = 201 ] || die "creating namespace $ns: HTTP $code"
done

# The repository: apps/app-NNN/configmaps.yaml, PER ConfigMaps of about
# 1 KB each (one 900-character value plus metadata). The value is
# pseudo-random hex, different in each object (a window of a random pool
# at a random place): data that deflates no better than hex does, less
# well than most real configuration, so that the deflated watch cache
# is not measured on data that flatters it.
repo="$tmp/repo"
mkdir -p "$repo/apps"
awk -v apps="$APPS" -v per="$PER" -v dir="$repo/apps" 'BEGIN {
	srand(1)
	pool = ""
	while (length(pool) < 8192)
		pool = pool sprintf("%08x", int(rand() * 4294967296))
	for (a = 1; a <= apps; a++) {
		ns = sprintf("app-%03d", a)
		d = dir "/" ns
		system("mkdir -p " d)
		f = d "/configmaps.yaml"
		for (i = 0; i < per; i++) {
			fill = substr(pool, 1 + int(rand() * (8192 - 900)), 900)
			if (i) print "---" > f
			print "apiVersion: v1" > f
			print "kind: ConfigMap" > f
			print "metadata:" > f
			printf "  name: cm-%03d\n", i > f
			print "  namespace: " ns > f
			print "  labels: {bench.syncd.io/app: " ns "}" > f
			print "data:" > f
			printf "  key: value-%d\n", i > f
			print "  fill: " fill > f
		}
		close(f)
	}
}'
git -C "$repo" -c user.name=bench -c user.email=bench@example.com \
	-c commit.gpgsign=false -c init.defaultBranch=main init -q
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@example.com \
	-c commit.gpgsign=false commit -q -m manifests
git -C "$repo" rev-parse -q --verify HEAD >/dev/null ||
	die "the test repository has no commit"

# config FILE WATCH QPS BURST RESYNC: one app per directory. The poll interval
# is long so that every pass measured is a resync. The metrics address
# is on loopback, on a port of its own.
metrics_port=$((20000 + RANDOM % 20000))
config() {
	{
		echo "resync: $5"
		echo "workers: 2"
		echo "kubeconfig: $tmp/kc"
		echo "cacheDir: $tmp/cache"
		echo "qps: $3"
		echo "burst: $4"
		echo "watch: $2"
		echo "listen: \"127.0.0.1:$metrics_port\""
		echo "log: {format: logfmt, level: info}"
		echo "apps:"
		for i in $(seq "$APPS"); do
			ns=$(printf 'app-%03d' "$i")
			echo "  - name: $ns"
			echo "    source:"
			echo "      repo: file://$repo"
			echo "      revision: main"
			echo "      path: apps/$ns"
			echo "      interval: 1h"
			echo "    namespace: $ns"
		done
	} >"$1"
}
# With the watch on, the resync is the default 3m: the edits measure
# the watch path, not a resync round they may fall into.
config "$tmp/setup.yaml" false 5000 5000 "${RESYNC_S}s"
config "$tmp/watch-off.yaml" false 50 100 "${RESYNC_S}s"
config "$tmp/watch-on.yaml" true 50 100 3m

stats() { # NAME: /emu/stats into $out/stats-NAME.json
	api GET /emu/stats
	[ "$code" = 200 ] || die "GET /emu/stats: HTTP $code"
	printf '%s' "$body" >"$out/stats-$1.json"
}
sum() { # NAME JQ-FILTER: sum of counts of the matching rows
	jq "[.requests[] | select($2) | .count] | add // 0" \
		"$out/stats-$1.json"
}
by_verb() { # NAME: "get=N list=N ..." (upper case, sorted)
	jq -r '[.requests[] | {verb, count}] | group_by(.verb) |
		map("\(.[0].verb | ascii_upcase)=\(map(.count) | add)") |
		join(" ")' "$out/stats-$1.json"
}

. bench/lib.sh

# --- the first convergence (setup) ---------------------------------------
timed setup 0 -- "$SYNCD" run -c "$tmp/setup.yaml" --once
created=$(sum setup '.verb == "patch" and .code == 201 and
	.resource == "configmaps"')
echo "first convergence: $created objects created in ${wall}s" \
	"(syncd run --once, qps 5000)"
[ "$created" -eq "$OBJECTS" ] ||
	die "the first convergence created $created objects, not $OBJECTS"

# --- syncd run --once over the converged apps, as a one-shot peer row ----
timed once 0 -- "$SYNCD" run -c "$tmp/watch-off.yaml" --once
o_wall=$wall o_rss=$rss o_reqs=$reqs
[ "$(sum once '.verb == "patch"')" -eq 0 ] ||
	die "syncd run --once patched objects where none drifted"
# The same unthrottled: what the client rate limit leaves out.
timed once-fast 0 -- "$SYNCD" run -c "$tmp/setup.yaml" --once
f_wall=$wall f_rss=$rss f_reqs=$reqs
[ "$(sum once-fast '.verb == "patch"')" -eq 0 ] ||
	die "syncd run --once patched objects where none drifted"

# --- the controller --------------------------------------------------------
syncd_pid=
log=
start_syncd() { # CONFIG LOG
	log=$2
	: >"$log"
	"$SYNCD" run -c "$1" >"$out/$(basename "$2" .err).out" 2>"$2" &
	syncd_pid=$!
	pids+=("$syncd_pid")
}
stop_syncd() {
	kill -TERM "$syncd_pid" 2>/dev/null || true
	for _ in $(seq 300); do
		kill -0 "$syncd_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$syncd_pid" 2>/dev/null || true
	wait "$syncd_pid" 2>/dev/null || true
}
passes() { grep -c 'msg="pass done"' "$log" || true; }
# wait_passes N SECONDS: until N passes are done; fails on a failed pass.
wait_passes() {
	local i
	for i in $(seq $(($2 * 20))); do
		if grep -q 'msg="pass failed"' "$log"; then
			grep -m 3 'msg="pass failed"' "$log" >&2
			die "a pass failed"
		fi
		kill -0 "$syncd_pid" 2>/dev/null || die "syncd exited"
		[ "$(passes)" -ge "$1" ] && return 0
		sleep 0.05
	done
	die "$(passes) passes done after ${2}s, waited for $1"
}
cpu_ticks() { # utime + stime of syncd, in clock ticks
	sed 's/^.*) //' "/proc/$syncd_pid/stat" | awk '{ print $12 + $13 }'
}
hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$syncd_pid/status"; }
HZ=$(getconf CLK_TCK)

# The log time of pass-done line N (seconds within the day).
pass_time() {
	grep 'msg="pass done"' "$log" | sed -n "${1}p" |
		sed 's/^time=[^T]*T\([0-9:.]*\)Z.*/\1/' |
		awk -F: '{ printf "%.3f", $1 * 3600 + $2 * 60 + $3 }'
}

# edits NAME SPREAD: EDITS manual edits, each timed until syncd has put the
# value back; sets e_med, e_max. Each edit is of another ConfigMap, in
# apps spread over the queue: edits of the same field again and again
# are a field fight, which syncd stops healing.
edits() {
	local n a i t0 t1 cm times=()
	for n in $(seq "$EDITS"); do
		a=$((1 + (n - 1) * APPS / EDITS))
		i=$(((n - 1 + edit_base) % PER))
		cm=$(printf '/api/v1/namespaces/app-%03d/configmaps/cm-%03d' \
			"$a" "$i")
		api PATCH "$cm?fieldManager=kubectl-edit" \
			application/merge-patch+json \
			"{\"data\":{\"key\":\"edited-$n\"}}"
		t0=$(now)
		[ "$code" = 200 ] || die "manual edit: HTTP $code"
		t1=
		# Bounded: two resync periods and a margin.
		for _ in $(seq $((RESYNC_S * 2 * 50 + 250))); do
			api GET "$cm"
			if [ "$code" = 200 ] && [ "$(printf '%s' "$body" |
				jq -r .data.key)" = "value-$i" ]; then
				t1=$(now)
				break
			fi
			sleep 0.02
		done
		[ -n "$t1" ] || die "$1: edit $n not corrected in" \
			"$((RESYNC_S * 2 + 5))s"
		times+=("$(elapsed "$t0" "$t1")")
		printf '  %s: edit %d (app-%03d/cm-%03d) corrected in %ss\n' \
			"$1" "$n" "$a" "$i" "${times[-1]}"
		# With SPREAD the next edit comes at another phase of the
		# resync period, so that the resync path is seen over the
		# whole period.
		sleep $(($2 * (n - 1) * RESYNC_S / EDITS)).$((RANDOM % 10))
	done
	e_med=$(printf '%s\n' "${times[@]}" | sort -g | awk '{ v[NR] = $1 }
		END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      printf "%.3f", m }')
	e_max=$(printf '%s\n' "${times[@]}" | sort -g | tail -n 1)
}

# Watch off: the first round, then RESYNCS rounds from a reset of the
# counters between two rounds (the timers of every app are armed at the
# same moment, so the rounds start together every RESYNC_S seconds).
start_syncd "$tmp/watch-off.yaml" "$out/run-watch-off.err"
wait_passes "$APPS" 60
p0=$(passes)
[ "$p0" -eq "$APPS" ] ||
	die "the next round began before the first was done ($p0 passes):" \
		"the measurement needs a round shorter than ${RESYNC_S}s"
reset_stats
c0=$(cpu_ticks)
wait_passes $((p0 + RESYNCS * APPS)) $((RESYNCS * RESYNC_S + 60))
c1=$(cpu_ticks)
stats resync
p1=$(passes)
[ "$p1" -eq $((p0 + RESYNCS * APPS)) ] ||
	die "$p1 passes when the counters were read, expected" \
		"$((p0 + RESYNCS * APPS))"
r_reqs=$(jq .total "$out/stats-resync.json")
r_verbs=$(by_verb resync)
r_patch=$(sum resync '.verb == "patch"')
r_obj=$(sum resync '.resource == "configmaps" and
	.verb != "list" and .verb != "watch"')
r_per=$(awk -v n="$r_reqs" -v r="$RESYNCS" 'BEGIN { printf "%.1f", n / r }')
r_app=$(awk -v n="$r_reqs" -v r="$RESYNCS" -v a="$APPS" \
	'BEGIN { printf "%.2f", n / r / a }')
r_cpu=$(awk -v c=$((c1 - c0)) -v hz="$HZ" -v r="$RESYNCS" \
	'BEGIN { printf "%.3f", c / hz / r }')
# The last round's span: first to last "pass done" of it.
r_span=$(elapsed "$(pass_time $((p1 - APPS + 1)))" "$(pass_time "$p1")")
r_verbs_per=$(printf '%s\n' $r_verbs | awk -F= -v r="$RESYNCS" \
	'{ printf "%s%s=%g", (NR > 1 ? " " : ""), $1, $2 / r }')
echo "resync (watch off): $r_reqs requests over $RESYNCS resyncs" \
	"($r_verbs), $((c1 - c0)) CPU ticks"

edit_base=0
edits "watch off" 1
off_med=$e_med off_max=$e_max
off_hwm=$(hwm)
stop_syncd

# Watch on (the default): the first round, then the passes the watch
# starts right after it, until none is done for 2 s (60 s at most);
# then the edits.
start_syncd "$tmp/watch-on.yaml" "$out/run-watch-on.err"
wait_passes "$APPS" 60
last=$(passes) quiet=0
for _ in $(seq 600); do
	sleep 0.1
	p=$(passes)
	if [ "$p" = "$last" ]; then
		quiet=$((quiet + 1))
		[ "$quiet" -ge 20 ] && break
	else
		last=$p quiet=0
	fi
done
[ "$quiet" -ge 20 ] || die "watch on: passes still running after 60 s"
on_settle=$(passes)
edit_base=$EDITS
edits "watch on" 0
on_med=$e_med on_max=$e_max
on_hwm=$(hwm)
stop_syncd

# --- the peer ---------------------------------------------------------------
k_wall= k_rss= k_reqs=
if command -v kubectl >/dev/null; then
	kc=(--kubeconfig "$tmp/kc")
	# A warm discovery cache, as a kubectl user has it.
	kubectl "${kc[@]}" --cache-dir "$tmp/kcache" api-resources \
		>/dev/null 2>&1 || true
	timed kubectl-diff 0 -- kubectl "${kc[@]}" --cache-dir "$tmp/kcache" \
		diff --server-side -R -f "$repo/apps"
	k_wall=$wall k_rss=$rss k_reqs=$reqs
	k_verbs=$(by_verb kubectl-diff)
else
	echo "peer: kubectl is not installed; no kubectl diff row"
fi

kill -0 "$emu_pid" 2>/dev/null || {
	head -c 2000 "$tmp/emu.err" >&2
	die "kube-emu exited during the benchmark"
}

echo
printf '%-38s %9s %9s %9s %12s\n' "" requests "wall s" "CPU s" \
	"peak RSS KiB"
printf '%-38s %9s %9s %9s %12s\n' "syncd resync (steady, per resync)" \
	"$r_per" "$r_span" "$r_cpu" "$off_hwm"
printf '%-38s %9s %9s %9s %12s\n' "syncd run --once (no drift)" \
	"$o_reqs" "$o_wall" - "$o_rss"
printf '%-38s %9s %9s %9s %12s\n' "syncd run --once, qps/burst 5000" \
	"$f_reqs" "$f_wall" - "$f_rss"
if [ -n "$k_wall" ]; then
	printf '%-38s %9s %9s %9s %12s\n' "kubectl diff --server-side -R" \
		"$k_reqs" "$k_wall" - "$k_rss"
fi
echo "  per resync by verb: $r_verbs_per; $r_app requests per app"
[ -n "$k_wall" ] && echo "  kubectl diff by verb: $k_verbs"
echo "  resync wall s: first to last \"pass done\" of one round;" \
	"resync ${RESYNC_S}s, 2 workers, the default client limit (qps 50," \
	"burst 100) but where qps/burst 5000 is said"
printf '%-38s %9s %9s\n' "edit to correction" "median s" "max s"
printf '%-38s %9s %9s\n' "watch on (default, resync 3m), $EDITS edits" \
	"$on_med" "$on_max"
printf '%-38s %9s %9s\n' "watch off (resync ${RESYNC_S}s), $EDITS edits" \
	"$off_med" "$off_max"
echo "  peak RSS: watch off $off_hwm KiB, watch on $on_hwm KiB; watch on:" \
	"$on_settle passes before the edits ($APPS apps)"
echo

goal() { # TEXT MET(0/1)
	if [ "$2" = 1 ]; then
		echo "goal: $1: met"
	else
		echo "goal: $1: MISSED"
	fi
}
goal "no PATCH in a no-drift resync ($r_patch over $RESYNCS resyncs)" \
	"$([ "$r_patch" -eq 0 ] && echo 1 || echo 0)"
# Per-object requests are those on one ConfigMap (GET, PATCH, ...); the
# LISTs and WATCHes of a namespace are per app and type.
text="no per-object request in a no-drift resync"
text+=" ($r_obj over $RESYNCS resyncs; $r_per per resync = $r_app per app)"
goal "$text" "$([ "$r_obj" -eq 0 ] && echo 1 || echo 0)"
rss_goal=$((25 * 1024 + OBJECTS * 3 / 2))
text="peak RSS with watch < 25 MB + 1.5 KB x $OBJECTS = $rss_goal KiB"
goal "$text ($on_hwm KiB)" \
	"$([ "$on_hwm" -lt "$rss_goal" ] && echo 1 || echo 0)"
goal "edit corrected < 1 s with watch (median $on_med s, max $on_max s)" \
	"$(awk -v m="$on_max" 'BEGIN { print (m < 1) ? 1 : 0 }')"
