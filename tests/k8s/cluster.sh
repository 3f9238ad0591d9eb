#!/usr/bin/env bash
# `make cluster`: the real control plane of tests/helpers/k8s.sh for a
# person, on loopback, until Ctrl-C (or SIGTERM); then every process is
# stopped and its folder removed.
#
#   tests/k8s/cluster.sh [--bare]
#
# The admin kubeconfig is copied to $K8S_KUBECONFIG_OUT (default
# build/k8s/kubeconfig).
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/helpers/k8s.sh

trap 'echo; echo "stopping the cluster"; k8s_stop; exit 0' INT TERM
trap 'k8s_stop; rm -f "${out:-}"' EXIT
k8s_start "$@" || exit 1
out=${K8S_KUBECONFIG_OUT:-build/k8s/kubeconfig}
cp "$K8S_KUBECONFIG" "$out"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
cat <<EOF2
Kubernetes $K8S_VERSION is up at $K8S_URL (started in $((K8S_START_MS / 1000)).$(printf '%03d' $((K8S_START_MS % 1000))) s).

  export KUBECONFIG=$out     # cluster admin
  export PATH=$PWD/$K8S_BIN:\$PATH                 # kubectl $K8S_VERSION
  kubectl get nodes

Other kubeconfigs: $K8S_CERT_KUBECONFIG (admin by client certificate),
$K8S_SA_KUBECONFIG (service account default/restricted).
Logs: $K8S_DIR/*.log; audit log: $K8S_AUDIT. Ctrl-C stops everything.
EOF2
while :; do
	sleep 1 &
	wait $!
	for c in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
		if [ "$*" != --bare ] || [ "$c" = etcd ] || [ "$c" = kube-apiserver ]; then
			if ! k8s_alive "$c"; then
				echo "k8s: $c exited; last lines of its log:" >&2
				tail -n 15 "$K8S_DIR/$c.log" | sed 's/^/    /' >&2
				exit 1
			fi
		fi
	done
done
