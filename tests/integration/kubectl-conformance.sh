#!/usr/bin/env bash
# The real kubectl against kube-emu --tls --token: the steps in
# tests/cases/kubectl/ run in name order against one emulator (state
# carries over), and each step's output must equal its expected file:
# what a bare kube-apiserver 1.36 (no controller-manager: no status
# writes, no kube-root-ca.crt) and kubectl 1.36 print, as
# tests/real/kubectl-conformance.sh checks (UPDATE=1 there rewrites the
# files from the real server). Step format and normalisation:
# tests/cases/kubectl/steps.sh.
#
# kubectl is $KUBECTL when set, else the one of `make k8s`
# (build/k8s/bin/kubectl, 1.36) when it is there, else the one on the
# PATH; for an older minor what only kubectl words differently is
# normalised away (below).
# Skips (passing, with a message) when there is no kubectl at all.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. tests/cases/kubectl/steps.sh

cases=tests/cases/kubectl
EMU=${BUILD:-build}/kube-emu
if [ -n "${KUBECTL:-}" ]; then
	KSTEP_KUBECTL=$KUBECTL
elif [ -x build/k8s/bin/kubectl ]; then
	KSTEP_KUBECTL=build/k8s/bin/kubectl
elif command -v kubectl >/dev/null 2>&1; then
	KSTEP_KUBECTL=$(command -v kubectl)
else
	ok "kubectl not installed: kubectl conformance skipped"
	finish
fi
kminor=$("$KSTEP_KUBECTL" version --client -o json 2>/dev/null |
	sed -n 's/.*"minor": *"\([0-9]*\).*/\1/p' | head -n 1)

emu_pid=
cleanup() {
	[ -n "$emu_pid" ] && kill "$emu_pid" 2>/dev/null && wait "$emu_pid" 2>/dev/null
	tmp_remove
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

# kubectl before 1.35 says `"web" deleted` of a namespaced object where
# 1.36 says `"web" deleted from conf namespace`.
older_kubectl() {
	if [ "${kminor:-0}" -lt 35 ] 2>/dev/null; then
		sed -E 's/^(.* deleted) from [a-z0-9-]+ namespace$/\1/'
	else
		cat
	fi
}

for dir in "$cases"/*/; do
	step=$(basename "$dir")
	if [ "$step" = 50-watch ]; then
		kstep_watch "$tmp/kubeconfig" "$tmp/step.out"
	else
		kstep_run "$tmp/kubeconfig" "$cases" "$step" "$tmp/step.out"
	fi
	expect_eq "$(cat "$tmp/step.out")" "$(older_kubectl <"$dir/expected")" \
		"kubectl $(kstep_title "$cases" "$step") ($step)"
done
finish
