#!/usr/bin/env bash
# The real kubectl against kube-emu --tls --token: the steps in
# tests/cases/kubectl/ run in name order against one emulator (state
# carries over), and each step's output must equal what kube-apiserver
# 1.32 and kubectl 1.32 print. A step folder holds:
#   args      kubectl's arguments, one per line (no shell involved)
#   stdin     optional; fed to kubectl (for -f -)
#   expected  stdout and stderr, normalised (below), then "exit N"
#   sorted    optional marker: compare the output lines sorted
# Normalised: uids -> UID, resourceVersion/generation digits kept only
# where the step asks for them, RFC 3339 times -> TIME, ages -> AGE,
# kubectl diff's temporary paths -> LIVE/MERGED.
# The expected files are what a kube-apiserver without controllers
# answers (no controller-manager: no status writes, no kube-root-ca.crt).
# Skips (passing, with a message) when kubectl is not installed.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cases=tests/cases/kubectl
EMU=${BUILD:-build}/kube-emu
if ! command -v kubectl >/dev/null 2>&1; then
	ok "kubectl not installed: kubectl conformance skipped"
	finish
fi

emu_pid=
cleanup() {
	[ -n "$emu_pid" ] && kill "$emu_pid" 2>/dev/null && wait "$emu_pid" 2>/dev/null
	chmod -R u+w "$tmp" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

"$EMU" --listen 127.0.0.1:0 --tls --token conformance-token \
	--kubeconfig-out "$tmp/kubeconfig" >"$tmp/emu.out" 2>"$tmp/emu.err" &
emu_pid=$!
for _ in $(seq 100); do
	[ -s "$tmp/kubeconfig" ] && grep -q '^listening on https://' "$tmp/emu.out" && break
	sleep 0.1
done
if ! grep -q '^listening on https://' "$tmp/emu.out"; then
	not_ok "kube-emu --tls did not start: $(head -c 500 "$tmp/emu.err")"
	finish
fi

kube() {
	timeout 60 kubectl --kubeconfig "$tmp/kubeconfig" \
		--cache-dir "$tmp/kcache" "$@"
}

normalise() {
	sed -E \
		-e 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/UID/g' \
		-e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/TIME/g' \
		-e 's/resourceVersion: "[0-9]+"/resourceVersion: "RV"/' \
		-e 's/"resourceVersion":"[0-9]+"/"resourceVersion":"RV"/g' \
		-e 's#(/tmp|'"$TMPDIR_RE"')/(LIVE|MERGED)-[0-9]+/#\2/#g' \
		-e 's#^(---|\+\+\+) (LIVE|MERGED)/([^	]*)	.*#\1 \2/\3#' \
		-e 's/( +)([0-9]+s|[0-9]+m[0-9]*s?|<invalid>)$/\1AGE/'
}
TMPDIR_RE=$(printf '%s' "${TMPDIR:-/tmp}" | sed 's/[.[\*^$/]/\\&/g')

# The --watch check: `kubectl get -w` sees an object created after it
# started, printed as a table row.
watch_check() {
	kube get configmaps -n conf --watch >"$tmp/watch.out" 2>&1 &
	local wpid=$! i
	for i in $(seq 50); do
		grep -q '^NAME' "$tmp/watch.out" && break
		sleep 0.1
	done
	kube create configmap watched -n conf --from-literal=a=1 >/dev/null 2>&1
	for i in $(seq 50); do
		grep -q '^watched' "$tmp/watch.out" && break
		sleep 0.1
	done
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	expect_eq "$(normalise <"$tmp/watch.out" | sed -E 's/ +/ /g')" \
		"$(printf 'NAME DATA AGE\nwatched 1 AGE')" \
		"kubectl get --watch prints the new ConfigMap as a table row"
}

for dir in "$cases"/*/; do
	step=$(basename "$dir")
	if [ "$step" = "50-watch" ]; then
		watch_check
		continue
	fi
	args=()
	while IFS= read -r line || [ -n "$line" ]; do
		args+=("$line")
	done <"$dir/args"
	if [ -f "$dir/stdin" ]; then
		kube "${args[@]}" <"$dir/stdin" >"$tmp/step.out" 2>&1
	else
		kube "${args[@]}" </dev/null >"$tmp/step.out" 2>&1
	fi
	rc=$?
	if [ -f "$dir/sorted" ]; then
		# managedFields entries of one second are ordered by manager
		# name, of different seconds by time: compare them as a set.
		got=$(normalise <"$tmp/step.out" | LC_ALL=C sort; echo "exit $rc")
	else
		got=$(normalise <"$tmp/step.out"; echo "exit $rc")
	fi
	expect_eq "$got" "$(cat "$dir/expected")" "kubectl ${args[*]:0:3} ($step)"
done
finish
