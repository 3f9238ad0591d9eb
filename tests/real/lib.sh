# Shared by the real tier's scripts: the helpers of tests/integration/lib.sh
# (ok, not_ok, run_syncd, expect_*) and tests/helpers/k8s.sh (kc, k8s_api,
# k8s_audit_*), on the cluster tests/run.sh started for the tier (K8S_ENV),
# or on one of the script's own when it runs alone:
#
#   bash tests/real/sync.sh
#
# Each script works in namespaces of its own (so scripts can share one
# cluster) and removes what it made cluster-wide. On exit: processes the
# script started ($pids) are killed, its own cluster (if any) stopped,
# $tmp removed. Without the binaries of `make k8s` a script passes with
# one "ok - ... skipped" line.
#
#   real_need WHAT         finish unless the control plane, $SYNCD and the
#                          tools are there
#   S ARGS...              run_syncd with the kubeconfig of user "syncd"
#   rvs NS KIND...         "kind/name=resourceVersion" of every object of
#                          those kinds in NS (kubectl's resource names)
#   syncd_writes           write requests (create, update, patch, delete)
#                          of user "syncd" since the last k8s_audit_mark
#                          (dry runs are not writes: syncd_dry_runs)
#   wait_for SECONDS COMMAND...
#                          until COMMAND succeeds, every 0.2 s
#   ns_gone NAME...        waits until no namespace of those names is left
#                          by an earlier run (90 s)
#   fresh_ns NAME...       creates the namespaces, once ns_gone
#   term_wait PID SECONDS  SIGTERM, then wait for the exit: its status in
#                          $rc (124 and a SIGKILL when it did not exit
#                          in time)
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../helpers/k8s.sh"

pids=()
real_cleanup() {
	local p
	for p in "${pids[@]+"${pids[@]}"}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ "$K8S_OWNED" = 1 ] && [ -s "${K8S_AUDIT:-}" ]; then
		canary_scan "the API server's audit log (Events, App objects)" \
			"$K8S_AUDIT" || status=1
	fi
	k8s_stop
	tmp_remove
}
trap real_cleanup EXIT

real_need() {
	local what=$1 t
	if ! k8s_available; then
		ok "the real control plane is not built (make k8s): $what skipped"
		finish
	fi
	for t in curl jq openssl; do
		if ! command -v "$t" >/dev/null 2>&1; then
			ok "$t not installed: $what skipped"
			finish
		fi
	done
	if [ ! -x "$SYNCD" ]; then
		not_ok "$SYNCD not built"
		finish
	fi
	if ! k8s_use; then
		not_ok "the real control plane starts"
		finish
	fi
}

S() {
	run_syncd "$1" --kubeconfig "$K8S_SYNCD_KUBECONFIG" "${@:2}"
}

rvs() {
	local ns=$1 kind
	shift
	for kind in "$@"; do
		kc -n "$ns" get "$kind" -o json |
			jq -r --arg k "$kind" '.items[] | "\($k)/\(.metadata.name)=\(.metadata.resourceVersion)"'
	done | sort
}

# syncd_dry_runs: dry-run applies (PATCH ?dryRun=All) of user "syncd"
# since the last k8s_audit_mark (verify: dryRun); not writes.
syncd_dry_runs() {
	K8S_AUDIT_DRY=yes k8s_audit_count syncd patch '*'
}

syncd_writes() {
	local n=0 v
	for v in create update patch delete deletecollection; do
		n=$((n + $(k8s_audit_count syncd "$v" '*')))
	done
	echo "$n"
}

wait_for() {
	local n=$(($1 * 5))
	shift
	for _ in $(seq "$n"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

# ns_gone NAME...: waits (90 s) until no namespace of those names is
# left by an earlier run (still terminating, say).
ns_gone() {
	local ns
	for ns in "$@"; do
		if ! wait_for 90 sh -c "! '$K8S_BIN/kubectl' --kubeconfig '$K8S_KUBECONFIG' get namespace '$ns'"; then
			not_ok "namespace $ns of an earlier run is still there after 90 s"
			finish
		fi
	done
}

fresh_ns() {
	local ns
	ns_gone "$@"
	for ns in "$@"; do
		kc create namespace "$ns" >/dev/null
	done
}

term_wait() {
	rc=124
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq $(($2 * 10))); do
		if ! kill -0 "$1" 2>/dev/null; then
			wait "$1"
			rc=$?
			return 0
		fi
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 1
}
