# The kubectl steps of this folder and how their output is normalised,
# shared by tests/integration/kubectl-conformance.sh (kube-emu),
# tests/real/kubectl-conformance.sh (a bare real kube-apiserver) and
# tests/real/differential.sh (both). Source it (bash) and call:
#
#   kstep_run KUBECONFIG DIR STEP OUT
#                          run step STEP (a folder in DIR) with
#                          $KSTEP_KUBECTL (default: kubectl on the PATH)
#                          on the cluster of KUBECONFIG (its discovery
#                          cache beside OUT) and write its normalised
#                          output, then "exit N", to OUT
#   kstep_watch KUBECONFIG OUT
#                          the special step 50-watch: `kubectl get -w`
#                          sees a ConfigMap created after it started
#                          (written to OUT as the other steps, spaces
#                          squeezed)
#   kstep_normalise        the filter (stdin to stdout)
#   kstep_title DIR STEP   the step's first arguments, for a test line
#
# A step folder holds:
#   args      kubectl's arguments, one per line (no shell involved)
#   stdin     optional; fed to kubectl (for -f -)
#   expected  stdout and stderr, normalised (below), then "exit N"
#   sorted    optional marker: compare the output lines sorted
# Normalised: uids -> UID, RFC 3339 times -> TIME, resourceVersions ->
# RV, ages -> AGE, kubectl diff's temporary paths -> LIVE/MERGED. Every
# wait is bounded (60 s per kubectl run).

KSTEP_KUBECTL=${KSTEP_KUBECTL:-kubectl}
KSTEP_TMP_RE=$(printf '%s' "${TMPDIR:-/tmp}" | sed 's/[.[\*^$/]/\\&/g')

kstep_normalise() {
	sed -E \
		-e 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/UID/g' \
		-e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/TIME/g' \
		-e 's/resourceVersion: "[0-9]+"/resourceVersion: "RV"/' \
		-e 's/"resourceVersion":"[0-9]+"/"resourceVersion":"RV"/g' \
		-e 's#(/tmp|'"$KSTEP_TMP_RE"')/(LIVE|MERGED)-[0-9]+/#\2/#g' \
		-e 's#^(---|\+\+\+) (LIVE|MERGED)/([^	]*)	.*#\1 \2/\3#' \
		-e 's/( +)([0-9]+s|[0-9]+m[0-9]*s?|<invalid>)$/\1AGE/'
}

# kstep_kubectl KUBECONFIG ARGS...: kubectl, bounded to 60 s.
kstep_kubectl() {
	local cfg=$1
	shift
	timeout 60 "$KSTEP_KUBECTL" --kubeconfig "$cfg" \
		--cache-dir "$cfg.cache" "$@"
}

kstep_run() {
	local cfg=$1 dir=$2 out=$4 line rc raw
	local args=()
	raw=$out.raw
	while IFS= read -r line || [ -n "$line" ]; do
		args+=("$line")
	done <"$dir/$3/args"
	if [ -f "$dir/$3/stdin" ]; then
		kstep_kubectl "$cfg" "${args[@]}" <"$dir/$3/stdin" >"$raw" 2>&1
	else
		kstep_kubectl "$cfg" "${args[@]}" </dev/null >"$raw" 2>&1
	fi
	rc=$?
	if [ -f "$dir/$3/sorted" ]; then
		# managedFields entries of one second are ordered by manager
		# name, of different seconds by time: compare them as a set.
		{ kstep_normalise <"$raw" | LC_ALL=C sort; echo "exit $rc"; } >"$out"
	else
		{ kstep_normalise <"$raw"; echo "exit $rc"; } >"$out"
	fi
	rm -f "$raw"
}

kstep_watch() {
	local cfg=$1 out=$2 wpid i
	kstep_kubectl "$cfg" get configmaps -n conf --watch >"$out.raw" 2>&1 &
	wpid=$!
	for i in $(seq 100); do
		grep -q '^NAME' "$out.raw" && break
		sleep 0.1
	done
	kstep_kubectl "$cfg" create configmap watched -n conf \
		--from-literal=a=1 >/dev/null 2>&1
	for i in $(seq 100); do
		grep -q '^watched' "$out.raw" && break
		sleep 0.1
	done
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	{ kstep_normalise <"$out.raw" | sed -E 's/ +/ /g'; echo "exit 0"; } >"$out"
	rm -f "$out.raw"
}

kstep_title() {
	if [ -f "$1/$2/args" ]; then
		head -n 3 "$1/$2/args" | tr '\n' ' ' | sed 's/ $//'
	else
		echo "get configmaps -n conf --watch"
	fi
}
