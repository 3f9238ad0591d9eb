#!/usr/bin/env bash
# Benchmark: `syncd render` against `kubectl kustomize` on the same tree.
#
# Generates 10,000 objects (Deployments, Services, ConfigMaps) in 500 files
# plus a kustomization.yaml listing them, then renders the tree with both
# tools in the same run and prints wall time, peak RSS and the ratio.
# Goal (issue): 10,000 objects in under 0.5 s on one core, and at least
# 50x faster than the kustomize peer. Figures are printed as measured.
#
# Then, for 1k, 5k and 10k objects (trees of 20 objects a file with a
# kustomization.yaml), the kustomize renderer (`syncd render --renderer
# kustomize`, which runs the tool) against the tool run directly, and the
# directory renderer on the same files. Goal (issue 7): syncd's overhead
# around the tool under 5%. Figures are printed as measured, never tuned.
#
#   bench/render.sh [RUNS]      (default 5 runs of syncd, the best is
#                               reported; the peer runs once: kubectl
#                               kustomize takes minutes on this tree.
#                               KRUNS (default 3 at 1k, 1 above) runs of
#                               the kustomize pairs, interleaved, best of
#                               each reported; KSIZES="1000 5000" picks
#                               the sizes)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SYNCD="$BUILD/syncd"
RUNS=${1:-5}
[ -x "$SYNCD" ] || make -s "$SYNCD"

out=bench/out/render
rm -rf "$out"
mkdir -p "$out/tree"

# FILES files x 20 objects: per file 7 Deployments, 7 Services, 6
# ConfigMaps, in directory DIR.
gen() {
	local f i n dir=${1:-$out/tree} files=${2:-500}
	mkdir -p "$dir"
	for f in $(seq -w 1 "$files"); do
		{
			for i in $(seq 1 20); do
				n="app-$f-$i"
				[ "$i" -gt 1 ] && echo '---'
				case $((i % 3)) in
				0) cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $n
  namespace: bench
  labels: {app.kubernetes.io/name: $n, app.kubernetes.io/part-of: bench}
spec:
  replicas: 2
  selector:
    matchLabels: {app.kubernetes.io/name: $n}
  template:
    metadata:
      labels: {app.kubernetes.io/name: $n}
    spec:
      containers:
      - name: web
        image: ghcr.io/example/$n:1.0.$i
        args: ["--port=8080", "--log-level=info"]
        ports:
        - {containerPort: 8080, name: http}
        env:
        - {name: MODE, value: production}
        - {name: ENABLED, value: "yes"}
        resources:
          requests: {cpu: 100m, memory: 64Mi}
          limits: {cpu: "1", memory: 256Mi}
        readinessProbe:
          httpGet: {path: /healthz, port: http}
YAML
				;;
				1) cat <<YAML
apiVersion: v1
kind: Service
metadata:
  name: $n
  namespace: bench
  labels: {app.kubernetes.io/name: $n}
spec:
  selector: {app.kubernetes.io/name: $n}
  ports:
  - {name: http, port: 80, targetPort: http, protocol: TCP}
YAML
				;;
				2) cat <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: $n
  namespace: bench
data:
  config.yaml: |
    server:
      port: 8080
      timeout: 30s
    features: [a, b, c]
  LOG_LEVEL: info
  REPLICA_HINT: "3"
YAML
				;;
				esac
			done
		} >"$dir/objects-$f.yaml"
	done
	{
		echo "apiVersion: kustomize.config.k8s.io/v1beta1"
		echo "kind: Kustomization"
		echo "resources:"
		for f in $(seq -w 1 "$files"); do echo "- objects-$f.yaml"; done
	} >"$dir/kustomization.yaml"
}
gen

# Best wall time (s) and peak RSS (KiB) over RUNS runs of a command.
measure() {
	local runs=$1 best_t="" best_m="" t m i
	shift
	for i in $(seq 1 "$runs"); do
		/usr/bin/time -f '%e %M' -o "$out/time" "$@" >"$out/stdout" 2>"$out/stderr" || {
			echo "command failed: $*" >&2
			cat "$out/stderr" >&2
			return 1
		}
		read -r t m <"$out/time"
		if [ -z "$best_t" ] || awk "BEGIN{exit !($t < $best_t)}"; then best_t=$t; fi
		if [ -z "$best_m" ] || [ "$m" -gt "$best_m" ]; then best_m=$m; fi
	done
	echo "$best_t $best_m"
}

objects=$(grep -c '^kind: ' "$out/tree"/objects-*.yaml | awk -F: '{s+=$2} END{print s}')
echo "tree: $objects objects in 500 files ($(du -sh "$out/tree" | cut -f1))"

# One core for syncd, as the goal says.
read -r s_t s_m < <(measure "$RUNS" taskset -c 0 "$SYNCD" render "$out/tree" --renderer directory --exclude kustomization.yaml)
s_objects=$(taskset -c 0 "$SYNCD" render "$out/tree" --renderer directory --exclude kustomization.yaml | grep -c '^kind: ')
printf '%-28s %8s s  %8s MiB  (%s objects)\n' "syncd render" "$s_t" "$((s_m / 1024))" "$s_objects"

peer=()
if command -v kustomize >/dev/null; then
	peer=(kustomize build "$out/tree")
elif command -v kubectl >/dev/null; then
	peer=(kubectl kustomize "$out/tree")
fi
if [ ${#peer[@]} -gt 0 ]; then
	read -r p_t p_m < <(measure 1 "${peer[@]}")
	p_objects=$(grep -c '^kind: ' "$out/stdout")
	printf '%-28s %8s s  %8s MiB  (%s objects)\n' "${peer[*]:0:2}" "$p_t" "$((p_m / 1024))" "$p_objects"
	awk -v s="$s_t" -v p="$p_t" 'BEGIN {
		if (s > 0) printf "ratio: syncd is %.1fx faster than the peer (goal: >= 50x)\n", p / s;
		else print "ratio: syncd too fast to time at 10 ms resolution" }'
else
	echo "peer: neither kustomize nor kubectl is installed; no ratio"
fi
awk -v s="$s_t" 'BEGIN { printf "goal: 10,000 objects in < 0.5 s on one core: %s\n", (s < 0.5 ? "met" : "missed") }'

# --- the kustomize renderer: syncd around the tool vs the tool alone ---
echo
if [ ${#peer[@]} -eq 0 ]; then
	echo "kustomize renderer: neither kustomize nor kubectl is installed; skipped"
	exit 0
fi
printf '%-8s %-34s %10s %10s %9s\n' objects renderer "wall s" "MiB" objects
for n in ${KSIZES:-1000 5000 10000}; do
	dir="$out/tree-$n"
	rm -rf "$dir"
	gen "$dir" $((n / 20))
	runs=${KRUNS:-$([ "$n" -le 1000 ] && echo 3 || echo 1)}
	# The tool alone and syncd running it, interleaved run by run so that
	# load from elsewhere on the machine hits both alike; best of each.
	t_t="" k_t=""
	for r in $(seq 1 "$runs"); do
		read -r t m < <(measure 1 "${peer[@]:0:2}" "$dir")
		t_objects=$(grep -c '^kind: ' "$out/stdout")
		if [ -z "$t_t" ] || awk "BEGIN{exit !($t < $t_t)}"; then t_t=$t t_m=$m; fi
		read -r t m < <(measure 1 "$SYNCD" render "$dir" --renderer kustomize --render-timeout 60m)
		k_objects=$(grep -c '^kind: ' "$out/stdout")
		if [ -z "$k_t" ] || awk "BEGIN{exit !($t < $k_t)}"; then k_t=$t k_m=$m; fi
	done
	read -r d_t d_m < <(measure "$RUNS" "$SYNCD" render "$dir" --renderer directory --exclude kustomization.yaml)
	d_objects=$(grep -c '^kind: ' "$out/stdout")
	printf '%-8s %-34s %10s %10s %9s\n' "$n" "${peer[*]:0:2} (direct)" "$t_t" "$((t_m / 1024))" "$t_objects"
	printf '%-8s %-34s %10s %10s %9s\n' "$n" "syncd --renderer kustomize" "$k_t" "$((k_m / 1024))" "$k_objects"
	printf '%-8s %-34s %10s %10s %9s\n' "$n" "syncd --renderer directory" "$d_t" "$((d_m / 1024))" "$d_objects"
	awk -v k="$k_t" -v t="$t_t" -v n="$n" -v ko="$k_objects" -v to="$t_objects" 'BEGIN {
		o = t > 0 ? (k - t) / t * 100 : 0
		printf "%-8s overhead of syncd around the tool: %+.1f%% (goal < 5%%): %s%s\n", n, o,
			(o < 5 ? "met" : "MISSED"), (ko == to ? "" : " (object counts differ!)") }'
done
