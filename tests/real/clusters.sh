#!/usr/bin/env bash
# One `syncd run` serving two real control planes (docs/clusters.md): the
# tier's cluster (home) and a second bare one (etcd + kube-apiserver 1.36)
# this script starts, named "west" in syncd.yaml, its kubeconfig read
# from a Secret of the home cluster (never on disk in syncd's cache).
#  1. app "near" (home) and app "far" (west, createNamespace) converge,
#     each into its own cluster; status, `syncd status` and the metrics
#     name the cluster; the west cluster's token is in no log line,
#     status document or metric;
#  2. west's kube-apiserver stops: far fails (ClusterUnreachable in the
#     log, its status names the error, syncd_cluster_up{cluster="west"}
#     0) and is retried with backoff, while near still follows a commit;
#  3. west's kube-apiserver comes back (same etcd, same flags): far
#     converges to the new commit without a restart of syncd;
#  4. bad configuration: an unknown cluster name and a cluster with both
#     or neither of kubeconfig / kubeconfigSecret are one-line errors.
# Loopback only; every wait is bounded; the script stops what it started.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../integration/git/servers.sh"
real_need "syncd run with two real control planes"

NS_NEAR=mc-near
NS_FAR=mc-far
NS_CFG=mc-config
cleanup() {
	# The kube-apiserver started again here: it may not stop on TERM
	# once its etcd is gone.
	if [ -n "${api2_pid:-}" ]; then
		kill -TERM "$api2_pid" 2>/dev/null
		wait_for 5 sh -c "! kill -0 $api2_pid 2>/dev/null" ||
			kill -KILL "$api2_pid" 2>/dev/null
		wait "$api2_pid" 2>/dev/null
	fi
	rm -f "$tmp/west.keep"
	[ -n "${west_pid:-}" ] && wait "$west_pid" 2>/dev/null
	gitsrv_stop_all
	if [ -n "${K8S_DIR:-}" ]; then
		kc delete namespace "$NS_NEAR" "$NS_CFG" --wait=false \
			--ignore-not-found >/dev/null 2>&1
	fi
	real_cleanup
}
trap cleanup EXIT
gitsrv_env
ns_gone "$NS_NEAR" "$NS_CFG"

# --- the second control plane, in a process of its own --------------------
# It runs until $tmp/west.keep goes; its K8S_* variables land in west.env.
touch "$tmp/west.keep"
(
	unset K8S_ENV K8S_DIR
	k8s_pids=() k8s_names=()
	if k8s_start --bare >"$tmp/west.start" 2>&1; then
		k8s_env "$tmp/west.env"
		while [ -e "$tmp/west.keep" ]; do sleep 0.5; done
	fi
	k8s_stop
) &
west_pid=$!
if ! wait_for 120 test -s "$tmp/west.env"; then
	not_ok "a second real control plane starts: $(tail -n 5 "$tmp/west.start")"
	finish
fi
# W_URL, W_TOKEN, W_KUBECONFIG (admin), W_SYNCD_KUBECONFIG (user syncd).
W_URL=$(sed -n 's/^K8S_URL=//p' "$tmp/west.env")
W_TOKEN=$(sed -n 's/^K8S_TOKEN=//p' "$tmp/west.env")
W_SYNCD_TOKEN=$(sed -n 's/^K8S_SYNCD_TOKEN=//p' "$tmp/west.env")
W_KUBECONFIG=$(sed -n 's/^K8S_KUBECONFIG=//p' "$tmp/west.env")
W_SYNCD_KUBECONFIG=$(sed -n 's/^K8S_SYNCD_KUBECONFIG=//p' "$tmp/west.env")
W_PORT=${W_URL##*:}
kw() { "$K8S_BIN/kubectl" --kubeconfig "$W_KUBECONFIG" "$@"; }
expect_eq "$(kw get namespace default -o jsonpath='{.metadata.name}' 2>&1)" default \
	"the second control plane answers"

# --- the Git server --------------------------------------------------------
if ! gitsrv_repo_start fleet; then
	ok "no Git server here: multi-cluster checks skipped: $gitsrv_why"
	finish
fi
cm() { # NAME VALUE
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: "%s"\n' "$1" "$2"
}
mkdir -p "$work/near" "$work/far"
cm here one >"$work/near/cm.yaml"
cm there one >"$work/far/cm.yaml"
gitsrv_push "first" >/dev/null

# west's kubeconfig (user syncd of that cluster) in a Secret of home.
kc create namespace "$NS_CFG" >/dev/null
kc -n "$NS_CFG" create secret generic west-kubeconfig \
	--from-file=value="$W_SYNCD_KUBECONFIG" >/dev/null

app() { # NAME PATH NAMESPACE [EXTRA]
	cat <<EOF
  - name: $1
    source:
      repo: $repo_url
      revision: main
      path: $2
      interval: 1s
      username: alice
      passwordFile: $tmp/password
      caFile: $tmp/tls/ca.pem
    namespace: $3
${4:-}
EOF
}
cat >"$tmp/run.yaml" <<EOF
resync: 30s
kubeconfig: $K8S_SYNCD_KUBECONFIG
cacheDir: $tmp/cache
listen: 127.0.0.1:0
clusters:
  - name: west
    kubeconfigSecret:
      namespace: $NS_CFG
      name: west-kubeconfig
apps:
$(app near near "$NS_NEAR" "    createNamespace: true")
$(app far far "$NS_FAR" "    cluster: west
    createNamespace: true
    namespaceMetadata:
      labels: {team: far}")
EOF
log=$tmp/run.log
"$SYNCD" run -c "$tmp/run.yaml" >"$tmp/run.out" 2>"$log" &
syncd_pid=$!
pids+=("$syncd_pid")
show_log() { tail -n 15 "$log" | cut -c 1-400 | sed 's/^/    log: /'; }

# === 1. both converge, each into its own cluster ============================
near_is() { [ "$(kc -n "$NS_NEAR" get configmap here -o jsonpath='{.data.value}' 2>/dev/null)" = "$1" ]; }
far_is() { [ "$(kw -n "$NS_FAR" get configmap there -o jsonpath='{.data.value}' 2>/dev/null)" = "$1" ]; }
if wait_for 60 near_is one && wait_for 60 far_is one; then
	ok "near converges in the home cluster, far in the west cluster"
else
	not_ok "near converges in the home cluster, far in the west cluster"
	show_log
fi
expect_eq "$(kc get namespace "$NS_FAR" -o name 2>/dev/null | grep -c .)|$(kw get namespace "$NS_NEAR" -o name 2>/dev/null | grep -c .)" \
	"0|0" "each app's objects are only in its own cluster"
expect_eq "$(kw get namespace "$NS_FAR" -o jsonpath='{.metadata.labels.team}')" far \
	"far's namespace, created in west, carries namespaceMetadata's label"
expect_match '^applyset-' "$(kw -n "$NS_FAR" get secret far -o jsonpath='{.metadata.labels.applyset\.kubernetes\.io/id}' 2>&1)" \
	"far's inventory Secret is in the west cluster"

port=$(sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$log" | tail -n 1)
api() { curl -sS --max-time 5 "http://127.0.0.1:$port$1"; }
expect_eq "$(api /api/v1/apps/far | jq -r '"\(.cluster) \(.state)"')|$(api /api/v1/apps/near | jq -r '"\(.cluster) \(.state)"')" \
	"west InSync|default InSync" "the status of each app names its cluster"
run_syncd status --addr "http://127.0.0.1:$port" --no-color
expect_match 'CLUSTER' "$out" "syncd status has a CLUSTER column once an app deploys elsewhere"
expect_match 'far +InSync.* west' "$out" "syncd status: far InSync on west"
run_syncd status --addr "http://127.0.0.1:$port" --no-color far
expect_match 'Cluster: +west' "$out" "syncd status far: Cluster: west"
metrics=$(api /metrics)
expect_match 'syncd_app_info\{app="far",cluster="west",' "$metrics" \
	"/metrics: syncd_app_info names far's cluster"
expect_match 'syncd_cluster_up\{cluster="west"\} 1' "$metrics" \
	"/metrics: syncd_cluster_up{cluster=\"west\"} 1"
expect_match 'syncd_kube_requests_total\{cluster="west",code="200",verb="[a-z]+"\} [1-9]' \
	"$metrics" "/metrics: requests to west counted under its name"

# === 2. west goes down: only far fails, with backoff ========================
api_pid=$(pgrep -f -- "kube-apiserver.*--secure-port $W_PORT" | head -n 1)
if [ -z "$api_pid" ]; then
	not_ok "west's kube-apiserver process is found"
	finish
fi
mapfile -d '' api_args <"/proc/$api_pid/cmdline"
api_log=$(readlink "/proc/$api_pid/fd/1")
kill -TERM "$api_pid"
wait_for 30 sh -c "! kill -0 $api_pid 2>/dev/null"
from=$(wc -l <"$log")
cm here two >"$work/near/cm.yaml"
cm there two >"$work/far/cm.yaml"
c2=$(gitsrv_push "second")
if wait_for 60 near_is two; then
	ok "with west down, near still follows the commit"
else
	not_ok "with west down, near still follows the commit"
	show_log
fi
far_failed() { tail -n +"$from" "$log" | grep -q 'msg="pass failed" app=far cluster=west'; }
if wait_for 60 far_failed; then
	ok "far's pass fails, logged with its cluster"
else
	not_ok "far's pass fails, logged with its cluster"
	show_log
fi
# Watch a while: the failures are retried with backoff (5 s, 10 s, ...),
# not at every poll of the source (1 s).
sleep 12
fails=$(tail -n +"$from" "$log" | grep -c 'msg="pass failed" app=far ')
near_passes=$(tail -n +"$from" "$log" | grep -c 'msg="pass done" app=near ')
if [ "$fails" -ge 1 ] && [ "$fails" -le 4 ]; then
	ok "far is retried with backoff while west is down ($fails failed passes)"
else
	not_ok "far is retried with backoff while west is down ($fails failed passes, near $near_passes passes)"
fi
far_doc=$(api /api/v1/apps/far)
expect_match "cluster west" "$(printf '%s' "$far_doc" | jq -r '.error // ""')" \
	"far's status carries the error, naming the cluster"
expect_eq "$(api /api/v1/apps/near | jq -r .state)" InSync "near stays InSync"
expect_match 'syncd_cluster_up\{cluster="west"\} 0' "$(api /metrics)" \
	"/metrics: syncd_cluster_up{cluster=\"west\"} 0"
expect_eq "$(curl -sS --max-time 5 "http://127.0.0.1:$port/readyz")" ok \
	"syncd stays ready: another cluster down is not its own API server down"

# === 3. west comes back: far converges without a restart ===================
setsid "${api_args[@]}" >>"$api_log" 2>&1 </dev/null &
api2_pid=$!
if wait_for 60 sh -c "curl -fsSk --max-time 2 '$W_URL/readyz' >/dev/null 2>&1"; then
	ok "west's kube-apiserver is back"
else
	not_ok "west's kube-apiserver is back"
fi
if wait_for 120 far_is two; then
	ok "far converges to the new commit once west is back"
else
	not_ok "far converges to the new commit once west is back"
	show_log
fi
expect_eq "$(kill -0 "$syncd_pid" 2>/dev/null && echo running)" running \
	"syncd ran throughout"
back() { api /metrics | grep -q 'syncd_cluster_up{cluster="west"} 1'; }
if wait_for 30 back; then
	ok "/metrics: syncd_cluster_up{cluster=\"west\"} 1 again"
else
	not_ok "/metrics: syncd_cluster_up{cluster=\"west\"} 1 again"
fi
expect_match "\"revision\": *\"$c2\"" "$(api /api/v1/apps/far)" "far's status shows the new revision"

# No credential of west anywhere syncd speaks.
leaks=0
for f in "$log" "$tmp/run.out"; do
	grep -qF -e "$W_TOKEN" -e "$W_SYNCD_TOKEN" "$f" && leaks=$((leaks + 1))
done
printf '%s%s%s' "$(api /metrics)" "$(api /api/v1/apps)" "$(api /api/v1/apps/far)" |
	grep -qF -e "$W_TOKEN" -e "$W_SYNCD_TOKEN" && leaks=$((leaks + 1))
grep -rqF -e "$W_TOKEN" -e "$W_SYNCD_TOKEN" "$tmp/cache" 2>/dev/null && leaks=$((leaks + 1))
expect_eq "$leaks" 0 "west's tokens are in no log line, status, metric or cache file"

kill -TERM "$syncd_pid"
wait "$syncd_pid" 2>/dev/null

# === 4. bad configuration ==================================================
bad() { # CLUSTERS-BLOCK APP-EXTRA
	cat >"$tmp/bad.yaml" <<EOF
kubeconfig: $K8S_SYNCD_KUBECONFIG
$1
apps:
$(app x near "$NS_NEAR" "$2")
EOF
	run_syncd run -c "$tmp/bad.yaml" --once
}
bad "" "    cluster: east"
expect_eq "$rc" 2 "an unknown cluster: exit 2"
expect_match 'bad.yaml:[0-9]+: apps\[0\]\.cluster: "east" is not among clusters:' "$errout" \
	"an unknown cluster is named with its line"
bad "clusters:
  - name: east
    kubeconfig: $W_KUBECONFIG
    kubeconfigSecret: {namespace: a, name: b}" ""
expect_match 'clusters\[0\]: wants one of kubeconfig or kubeconfigSecret' "$errout" \
	"a cluster with both a file and a Secret is refused"
bad "clusters:
  - name: default
    kubeconfig: $W_KUBECONFIG" ""
expect_match 'clusters\[0\]\.name: "default" is the cluster syncd runs against' "$errout" \
	"the home cluster's name cannot be taken"
finish
