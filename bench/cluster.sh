#!/usr/bin/env bash
# Benchmark: `syncd diff` and `syncd sync` against a kube-emu on loopback,
# with `kubectl diff --server-side` on the same manifests as the peer.
#
# Writes OBJECTS objects (default 10,000) over 10 kinds (ConfigMap, Secret,
# Service, ServiceAccount, Deployment, Role, RoleBinding, NetworkPolicy,
# PodDisruptionBudget, Ingress) in 4 namespaces as manifests into a
# temporary folder, applies them with `syncd sync`, then measures in the
# same run, each from a reset /emu/stats:
#   - a no-drift `syncd diff`: requests, wall time, peak RSS;
#   - `kubectl diff --server-side -f DIR` (skipped when kubectl is absent);
#   - `syncd sync` of every object changed (one annotation): applies/s,
#     twice: with the client's default rate limit (what a user gets
#     without flags) and with --qps 5000 --burst 5000 (the client
#     unthrottled); the applies/s goal is judged on the second.
# The initial load is setup, not a measurement: it runs unthrottled.
# Goals (issue 5) are printed as met/MISSED with the figures as measured.
# A missed goal exits 0; an error (kube-emu not coming up, a command
# failing, drift where none is expected) exits non-zero.
#
#   bench/cluster.sh [OBJECTS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SYNCD="$BUILD/syncd"
EMU="$BUILD/kube-emu"
OBJECTS=${1:-10000}
KINDS=10
NAMESPACES=4
APP=bench
[ -x "$SYNCD" ] || make -s BUILD="$BUILD" "$SYNCD"
[ -x "$EMU" ] || make -s BUILD="$BUILD" "$EMU"
for tool in curl jq /usr/bin/time; do
	command -v "$tool" >/dev/null || {
		echo "bench/cluster.sh: $tool is required" >&2
		exit 2
	}
done
if [ $((OBJECTS % (KINDS * NAMESPACES))) -ne 0 ]; then
	echo "bench/cluster.sh: OBJECTS must be a multiple of $((KINDS * NAMESPACES))" >&2
	exit 2
fi
# `syncd sync` is required; say so plainly when this build lacks it.
if ! "$SYNCD" sync --help >/dev/null 2>&1; then
	echo "bench/cluster.sh: this syncd has no 'sync' command" >&2
	exit 2
fi

out=bench/out/cluster
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncd-bench-cluster.XXXXXX")
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

"$EMU" --listen 127.0.0.1:0 --kubeconfig-out "$tmp/kubeconfig" \
	>"$out/emu.out" 2>"$out/emu.err" &
pid=$!
url=
for _ in $(seq 100); do
	url=$(sed -n 's/^listening on //p' "$out/emu.out")
	if [ -n "$url" ] &&
		curl -fsS --max-time 2 "$url/readyz" >/dev/null 2>&1; then
		break
	fi
	url=
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "kube-emu did not come up:" >&2
	head -c 2000 "$out/emu.err" >&2
	exit 1
fi
echo "kube-emu $url (pid $pid); $OBJECTS objects, $KINDS kinds," \
	"$NAMESPACES namespaces"

api() { # METHOD PATH [BODY]
	curl -fsS --max-time 30 -X "$1" -H 'Content-Type: application/json' \
		${3:+--data-binary "$3"} "$url$2"
}

# The namespaces exist before the app (they are not part of it).
for j in $(seq 0 $((NAMESPACES - 1))); do
	api POST /api/v1/namespaces \
		"{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"bench-$j\"}}" \
		>/dev/null
done

# Manifests (bench_manifests in bench/lib.sh): one file per (kind,
# namespace); REV goes into an annotation, so that a second generation
# changes every object.
app="$tmp/$APP"
PER=$((OBJECTS / KINDS / NAMESPACES))
gen() { bench_manifests "$app" "$PER" "$NAMESPACES" "$1"; }

reset_stats() { api DELETE /emu/stats >/dev/null; }
stats() { api GET /emu/stats >"$out/stats-$1.json"; }
count() { # FILE JQ-FILTER: sum of counts of the matching rows
	jq "[.requests[] | select($2) | .count] | add // 0" "$1"
}

. bench/lib.sh

gen 1
kc=(--kubeconfig "$tmp/kubeconfig")
fast=(--qps 5000 --burst 5000)
timed sync-create 0 -- "$SYNCD" sync "$app" "${kc[@]}" -n bench-0 --app "$APP" \
	"${fast[@]}"
created=$(count "$out/stats-sync-create.json" '.verb == "patch" and .code == 201')
echo "initial sync: $created objects created in ${wall}s"
if [ "$created" -lt "$OBJECTS" ]; then
	echo "initial sync created $created objects, not $OBJECTS" >&2
	exit 1
fi

# The no-drift diff.
timed syncd-diff 0 -- "$SYNCD" diff "$app" "${kc[@]}" -n bench-0 --app "$APP"
d_wall=$wall d_rss=$rss d_reqs=$reqs
d_lists=$(count "$out/stats-syncd-diff.json" '.verb == "list"')

k_wall= k_rss= k_reqs=
if command -v kubectl >/dev/null; then
	# A warm discovery cache, as a kubectl user has it.
	kubectl "${kc[@]}" --cache-dir "$tmp/kcache" api-resources \
		>/dev/null 2>&1 || true
	timed kubectl-diff 0 -- kubectl "${kc[@]}" --cache-dir "$tmp/kcache" \
		diff --server-side -f "$app"
	k_wall=$wall k_rss=$rss k_reqs=$reqs
else
	echo "peer: kubectl is not installed; no kubectl diff column"
fi

# Every object changed, then one sync: first with the default client
# rate limit, then (every object changed again) unthrottled.
change() { # NAME REV [SYNC-FLAGS...]: sets applied, rate
	local name=$1 rev=$2
	shift 2
	rm -rf "$app"
	gen "$rev"
	timed "$name" 0 -- "$SYNCD" sync "$app" "${kc[@]}" -n bench-0 \
		--app "$APP" "$@"
	# The objects written, as syncd counts them: the server's PATCHes
	# also count the dry runs confirming each drift (one per object).
	applied=$(sed -n 's/^\([0-9][0-9]*\) applied, .*/\1/p' \
		"$out/$name.out" | tail -n 1)
	patches=$(count "$out/stats-$name.json" \
		'.verb == "patch" and .code == 200')
	if [ "${applied:-0}" -lt "$OBJECTS" ] || [ "$patches" -lt "$applied" ]; then
		echo "$name: sync of changed objects applied ${applied:-0} of" \
			"$OBJECTS ($patches PATCHes answered 200)" >&2
		exit 1
	fi
	rate=$(awk -v n="$applied" -v t="$wall" \
		'BEGIN { printf "%.0f", n / t }')
}
change sync-change 2
s_wall=$wall s_rss=$rss s_reqs=$reqs s_applied=$applied s_rate=$rate
s_patches=$patches
change sync-change-fast 3 "${fast[@]}"
f_wall=$wall f_rss=$rss f_reqs=$reqs f_applied=$applied f_rate=$rate

if ! kill -0 "$pid" 2>/dev/null; then
	echo "kube-emu exited during the benchmark:" >&2
	head -c 2000 "$out/emu.err" >&2
	exit 1
fi

echo
printf '%-34s %10s %10s %12s\n' "" requests "wall s" "peak RSS KiB"
printf '%-34s %10s %10s %12s\n' "syncd diff (no drift)" "$d_reqs" \
	"$d_wall" "$d_rss"
if [ -n "$k_wall" ]; then
	printf '%-34s %10s %10s %12s\n' "kubectl diff --server-side" \
		"$k_reqs" "$k_wall" "$k_rss"
fi
printf '%-34s %10s %10s %12s\n' "syncd sync ($s_applied changed)" \
	"$s_reqs" "$s_wall" "$s_rss"
printf '%-34s %10s %10s %12s\n' "syncd sync --qps/--burst 5000" \
	"$f_reqs" "$f_wall" "$f_rss"
echo "  syncd diff: $d_lists LISTs"
echo "  syncd sync: $s_patches PATCHes for $s_applied objects written" \
	"(a dry run confirming each drift, then its apply)"
echo "  syncd sync: $s_rate applies/s with the default client rate limit" \
	"(50 QPS, which bounds it); $f_rate applies/s with --qps 5000 --burst 5000"
echo

goal() { # TEXT MET(0/1)
	if [ "$2" = 1 ]; then
		echo "goal: $1: met"
	else
		echo "goal: $1: MISSED"
	fi
}
budget=$((KINDS * NAMESPACES + 2))
goal "no-drift diff requests <= types x namespaces + 2 = $budget ($d_reqs)" \
	"$([ "$d_reqs" -le "$budget" ] && echo 1 || echo 0)"
if [ -n "$k_wall" ]; then
	ratio=$(awk -v k="$k_wall" -v s="$d_wall" \
		'BEGIN { printf "%.1f", (s > 0 ? k / s : 0) }')
	goal ">= 20x faster than kubectl diff --server-side (${ratio}x)" \
		"$(awk -v r="$ratio" 'BEGIN { print (r >= 20) ? 1 : 0 }')"
else
	echo "goal: >= 20x faster than kubectl diff: not measured (no kubectl)"
fi
goal ">= 500 applies/s, --qps 5000 --burst 5000 ($f_rate)" \
	"$([ "$f_rate" -ge 500 ] && echo 1 || echo 0)"
