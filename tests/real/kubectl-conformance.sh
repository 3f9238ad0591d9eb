#!/usr/bin/env bash
# The steps of tests/cases/kubectl against a bare real control plane
# (etcd and kube-apiserver 1.36 only, no controllers, like kube-emu;
# always one of this script's own, even when tests/run.sh shares a full
# cluster through K8S_ENV) with the real kubectl 1.36 of `make k8s`:
# each step's normalised output (tests/cases/kubectl/steps.sh, as
# tests/integration/kubectl-conformance.sh normalises kube-emu's) must
# equal the step's expected file.
#
#   bash tests/real/kubectl-conformance.sh            # compare
#   UPDATE=1 bash tests/real/kubectl-conformance.sh   # rewrite the expected
#                                                     # files from the server
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. tests/cases/kubectl/steps.sh

cases=tests/cases/kubectl

if ! k8s_available; then
	ok "the real control plane is not built (make k8s): kubectl conformance skipped"
	finish
fi
unset K8S_ENV
if ! k8s_start --bare; then
	not_ok "a bare real kube-apiserver starts"
	finish
fi
KSTEP_KUBECTL=$K8S_BIN/kubectl
# kubectl's discovery cache lives beside the kubeconfig.
cp "$K8S_KUBECONFIG" "$tmp/kubeconfig"
canary_input "$tmp/kubeconfig" # holds the admin token

for dir in "$cases"/*/; do
	step=$(basename "$dir")
	if [ "$step" = 50-watch ]; then
		kstep_watch "$tmp/kubeconfig" "$tmp/step.out"
	else
		kstep_run "$tmp/kubeconfig" "$cases" "$step" "$tmp/step.out"
	fi
	if [ -n "${UPDATE:-}" ]; then
		cp "$tmp/step.out" "$dir/expected"
		ok "$step: expected output written from kube-apiserver $K8S_VERSION"
		continue
	fi
	expect_eq "$(cat "$tmp/step.out")" "$(cat "$dir/expected" 2>/dev/null)" \
		"kubectl $(kstep_title "$cases" "$step") ($step) against kube-apiserver $K8S_VERSION"
done
finish
