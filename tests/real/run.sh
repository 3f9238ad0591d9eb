#!/usr/bin/env bash
# syncd run on the real kube-apiserver 1.36, with its controllers running,
# fed by a real Git server (lighttpd + git http-backend over HTTPS, basic
# auth, on loopback):
#  1. two apps (namespaces real-run-a, real-run-b) converge from the Git
#     server: their objects, ApplySet labels and parents are in the API
#     server;
#  2. a pass that finds nothing to do writes nothing: over five resyncs
#     the audit log has no create/update/patch/delete of user "syncd" and
#     no WATCH reopened, and the resourceVersions of the objects without
#     a status writer stay; the real HPA of app beta (minReplicas above
#     the declared replicas) owns .spec.replicas through /scale and is
#     left alone (no write to that Deployment), as /api/v1/apps and
#     `syncd status` report; the objects in sync are settled from the
#     verdicts kept of their versions (reused= in the pass log);
#  3. healing through the watch (resync 1h after a SIGHUP that restarts
#     the controller, which writes nothing): a `kubectl edit` and a
#     `kubectl patch` of declared fields are taken back within seconds
#     without a LIST, logged with the field and the person's manager,
#     with a DriftCorrected Event; a write of only an HPA's status runs
#     a pass (health) that writes no object; the echo of syncd's writes
#     causes no further write; a
#     loop of `kubectl patch` is a fight (logged, a FieldFight Event, the
#     field no longer written until the window passed);
#  4. following a commit: a change pushed to the Git server is in the API
#     server after the poll, and is not reported as drift;
#  5. leader election on a real coordination.k8s.io/v1 Lease: two replicas
#     (each with a service account of its own, bound in the test's
#     namespaces only, so that the audit log tells them apart): exactly
#     one leads and writes, the Lease names it, its watches fall back to
#     one per namespace; SIGTERM makes it release the Lease (a watch on
#     the Lease sees it), the other takes over at once and heals an edit;
#     after a SIGKILL the Lease expires and the restarted standby leads.
# Loopback only; every wait is bounded; the script removes its namespaces
# and stops what it started.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../integration/git/servers.sh"
real_need "syncd run on the real control plane"

NS_A=real-run-a
NS_B=real-run-b
NS_LE=real-run-le
cleanup() {
	gitsrv_stop_all
	if [ -n "${K8S_DIR:-}" ]; then
		kc delete namespace "$NS_A" "$NS_B" "$NS_LE" --wait=false \
			--ignore-not-found >/dev/null 2>&1
	fi
	real_cleanup
}
trap cleanup EXIT

# Nothing from the user's own Git setup.
gitsrv_env

# --- the Git server ------------------------------------------------------
if ! gitsrv_repo_start deploy; then
	ok "no Git server here: syncd run checks skipped: $gitsrv_why"
	finish
fi
commit() { gitsrv_push "$1"; }
REPO_URL=$repo_url
cm() { # NAME VALUE
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: "%s"\n' "$1" "$2"
}
deploy() { # NAME IMAGE REPLICAS
	cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
spec:
  replicas: $3
  selector:
    matchLabels: {app: $1}
  template:
    metadata:
      labels: {app: $1}
    spec:
      containers:
        - name: main
          image: $2
EOF
}
service() { # NAME
	cat <<EOF
apiVersion: v1
kind: Service
metadata:
  name: $1
spec:
  selector: {app: $1}
  ports:
    - port: 80
      targetPort: 8080
EOF
}
mkdir -p "$work/apps/a" "$work/apps/b"
cm settings one >"$work/apps/a/cm.yaml"
deploy web nginx:1.27 1 >"$work/apps/a/deploy.yaml"
service web >"$work/apps/a/service.yaml"
cm settings blue >"$work/apps/b/cm.yaml"
deploy api nginx:1.27 1 >"$work/apps/b/deploy.yaml"
cat >"$work/apps/b/hpa.yaml" <<'EOF'
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: api
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: api
  minReplicas: 2
  maxReplicas: 4
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: 80
EOF
if c1=$(commit "two apps"); then
	ok "the two apps are pushed to the Git server over HTTPS"
else
	not_ok "the two apps are pushed to the Git server over HTTPS"
	finish
fi

# --- the cluster side ----------------------------------------------------
# A namespace of an earlier run on this cluster may still be terminating.
fresh_ns "$NS_A" "$NS_B" "$NS_LE"
get() { # NS KIND/NAME JSONPATH
	kc -n "$1" get "$2" -o jsonpath="$3" 2>&1
}
is() { # NS KIND/NAME JSONPATH VALUE
	[ "$(get "$1" "$2" "$3")" = "$4" ]
}
image_of() { get "$1" "deployment/$2" '{.spec.template.spec.containers[0].image}'; }

# --- the controller ------------------------------------------------------
# config FILE RESYNC [EXTRA [KUBECONFIG [BETA-INTERVAL]]]: both apps;
# EXTRA is added to the global part.
config() {
	cat >"$1" <<EOF
resync: $2
relist: $2
workers: 2
kubeconfig: ${4:-$K8S_SYNCD_KUBECONFIG}
cacheDir: $tmp/cache
listen: 127.0.0.1:0
${3:-}
apps:
  - name: alpha
    source:
      repo: $REPO_URL
      revision: main
      path: apps/a
      interval: 1s
      username: alice
      passwordFile: $tmp/password
      caFile: $tmp/tls/ca.pem
    namespace: $NS_A
  - name: beta
    source:
      repo: $REPO_URL
      revision: main
      path: apps/b
      interval: ${5:-1s}
      username: alice
      passwordFile: $tmp/password
      caFile: $tmp/tls/ca.pem
    namespace: $NS_B
EOF
}
# start_syncd CONFIG LOG [ENV...]: `syncd run` in the background.
start_syncd() {
	local cfg=$1 log=$2
	shift 2
	env "$@" "$SYNCD" run -c "$cfg" >"$log.out" 2>"$log" &
	syncd_pid=$!
	pids+=("$syncd_pid")
}
nlines() { # LOG PATTERN [FROM]
	tail -n +"${3:-1}" "$1" | grep -cE -- "$2"
}
loglen() { wc -l <"$1" | tr -d ' '; }
show_log() { tail -n 15 "$1" | cut -c 1-400 | sed 's/^/    log: /'; }
# passes LOG APP FROM: passes of APP done since line FROM.
passes() { nlines "$1" "msg=\"pass done\" app=$2 " "$3"; }
passes_at_least() { [ "$(passes "$2" "$3" "$4")" -ge "$1" ]; }

config "$tmp/run.yaml" 2s
log=$tmp/run.log
start_syncd "$tmp/run.yaml" "$log"

# === 1. two apps converge ================================================
converged() {
	is "$NS_A" configmap/settings '{.data.value}' one &&
		is "$NS_A" deployment/web '{.spec.template.spec.containers[0].image}' nginx:1.27 &&
		is "$NS_A" service/web '{.spec.ports[0].port}' 80 &&
		is "$NS_B" configmap/settings '{.data.value}' blue &&
		is "$NS_B" horizontalpodautoscaler/api '{.spec.minReplicas}' 2 &&
		is "$NS_B" deployment/api '{.spec.template.spec.containers[0].image}' nginx:1.27
}
if wait_for 60 converged; then
	ok "both apps converge from the Git server (objects in the API server)"
else
	not_ok "both apps converge from the Git server"
	show_log "$log"
fi
expect_match "msg=rendered app=alpha revision=$c1" "$(cat "$log")" \
	"app alpha renders the pushed commit"
applyset_id() { # NS NAME: the ApplySet id label of the parent Secret
	kc -n "$1" get secret "$2" -o jsonpath='{.metadata.labels.applyset\.kubernetes\.io/id}' 2>&1
}
expect_match '^applyset-[A-Za-z0-9_-]+-v1 applyset-[A-Za-z0-9_-]+-v1$' \
	"$(applyset_id "$NS_A" alpha) $(applyset_id "$NS_B" beta)" \
	"each app has its ApplySet parent Secret in its namespace"
members() { # NS: "kind/name" of the objects labelled as members of an ApplySet
	kc -n "$1" get configmaps,services,deployments,horizontalpodautoscalers \
		-l applyset.kubernetes.io/part-of -o json |
		jq -r '.items[] | "\(.kind)/\(.metadata.name)"' | sort | tr '\n' ' '
}
expect_eq "$(members "$NS_A")|$(members "$NS_B")" \
	"ConfigMap/settings Deployment/web Service/web |ConfigMap/settings Deployment/api HorizontalPodAutoscaler/api " \
	"every object carries its app's ApplySet label"

# === 2. a pass with nothing to do writes nothing; the HPA is respected ===
hpa_scaled() { is "$NS_B" deployment/api '{.spec.replicas}' 2; }
if wait_for 60 hpa_scaled; then
	ok "the real HPA raises app beta's Deployment to its minReplicas (2)"
else
	not_ok "the real HPA raises app beta's Deployment to its minReplicas (2)"
	kc -n "$NS_B" describe hpa api 2>&1 | tail -n 10 | sed 's/^/    /'
fi
scale_owner() {
	kc -n "$NS_B" get deployment api --show-managed-fields -o json | jq -r '
		.metadata.managedFields[] | select(.subresource == "scale") | .manager'
}
expect_eq "$(scale_owner)" kube-controller-manager \
	"the HPA controller owns .spec.replicas through /scale"
# Two passes of each app after the HPA's change (their first reaction to
# it: a ForeignFields Event), then quiet.
from=$(loglen "$log")
wait_for 30 passes_at_least 2 "$log" alpha "$from" &&
	wait_for 30 passes_at_least 2 "$log" beta "$from" || true
rv_a=$(rvs "$NS_A" configmaps services secrets)
rv_b=$(rvs "$NS_B" configmaps secrets)
k8s_audit_mark
from=$(loglen "$log")
# With relist as short as the resync, a resync lists the app's types in
# its namespace (a poll in between reads the watch cache).
resyncs() { # NS: syncd's LISTs of ConfigMaps there since the mark
	k8s_audit_barrier
	tail -n "+$k8s_audit_from" "$K8S_AUDIT" | jq -c --arg ns "$1" '
		select(.user.username == "syncd" and .verb == "list" and
			.objectRef.resource == "configmaps" and
			.objectRef.namespace == $ns)' | wc -l
}
five_resyncs() { [ "$(resyncs "$NS_A")" -ge 5 ] && [ "$(resyncs "$NS_B")" -ge 5 ]; }
if wait_for 60 five_resyncs; then
	ok "five resyncs of each app listed the server ($(passes "$log" alpha "$from") and $(passes "$log" beta "$from") passes)"
else
	not_ok "five resyncs of each app: $(resyncs "$NS_A") and $(resyncs "$NS_B") LISTs"
	show_log "$log"
fi
expect_eq "$(syncd_writes)" 0 \
	"over five resyncs: no create/update/patch/delete by syncd (audit log)"
expect_eq "$(k8s_audit_count syncd patch deployments)" 0 \
	"the HPA's replicas are not fought: no write to app beta's Deployment"
expect_eq "$(get "$NS_B" deployment/api '{.spec.replicas}')" 2 \
	"the Deployment keeps the HPA's replicas"
list_codes() { # the answers to syncd's LISTs since the mark, once each
	k8s_audit_barrier
	tail -n "+$k8s_audit_from" "$K8S_AUDIT" | jq -r '
		select(.user.username == "syncd" and .verb == "list") |
		.responseStatus.code' | sort -u | tr '\n' ' '
}
expect_eq "$(list_codes)" "200 " "the resyncs list the server, every LIST answered 200"
expect_eq "$(k8s_audit_count syncd watch '*')" 0 \
	"the watches stay open through the quiet resyncs: no WATCH request (audit log)"
expect_eq "$(rvs "$NS_A" configmaps services secrets)|$(rvs "$NS_B" configmaps secrets)" \
	"$rv_a|$rv_b" "resourceVersions of the objects without a status writer unchanged"
expect_eq "$(nlines "$log" 'msg="object written"' "$from")" 0 \
	"the resyncs log no object written"
# Verdicts kept from pass to pass: the objects in sync that a resync lists
# again in the same version are settled from them, not compared again --
# alpha's ConfigMap and Service (their resourceVersions stayed, above) and
# beta's ConfigMap at least; beta's Deployment, with the HPA's field, never.
reused_of() { # APP FROM: the reused= of APP's last pass since line FROM
	tail -n "+$2" "$log" | grep "msg=\"pass done\" app=$1 " | tail -n 1 |
		sed -n 's/.* reused=\([0-9]*\).*/\1/p'
}
r_a=$(reused_of alpha "$from")
r_b=$(reused_of beta "$from")
if [ "${r_a:-0}" -ge 2 ] && [ "${r_b:-0}" -ge 1 ] && [ "${r_b:-0}" -le 2 ]; then
	ok "resyncs settle unchanged objects from kept verdicts (alpha reused=$r_a, beta reused=$r_b)"
else
	not_ok "resyncs settle unchanged objects from kept verdicts: alpha reused=${r_a:-none}, beta reused=${r_b:-none}"
	show_log "$log"
fi
# What it says about it: the HTTP API and syncd status.
port=$(sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$log" | tail -n 1)
apps=$(curl -sS --max-time 5 "http://127.0.0.1:$port/api/v1/apps")
expect_eq "$(printf '%s' "$apps" | jq -r '.apps[] | "\(.name) \(.state) \(.revision) \(.summary.foreignFields)"' | sort | tr '\n' ',')" \
	"alpha InSync $c1 0,beta InSync $c1 1," \
	"/api/v1/apps: both apps InSync at the pushed commit, beta with one foreign field"
expect_eq "$(curl -sS --max-time 5 "http://127.0.0.1:$port/api/v1/apps/beta" | jq -r '
	.report.objects[] | .fields[] | "\(.path) \(.owner) \(.managers[0].manager) \(.managers[0].subresource)"')" \
	".spec.replicas foreign kube-controller-manager scale" \
	"/api/v1/apps/beta: .spec.replicas is foreign, kube-controller-manager on /scale"
run_syncd status --addr "http://127.0.0.1:$port" --no-color
expect_eq "$rc $(printf '%s\n' "$out" | awk '$1 == "alpha" || $1 == "beta" {print $1, $2, $6}' | tr '\n' ',')" \
	"0 alpha InSync 0,beta InSync 1," "syncd status: both apps InSync, beta's foreign field counted"

# === 3. healing through the watch ========================================
# resync 1h (and no polls of app beta): a SIGHUP with changed globals
# restarts the controller; its first pass lists, then only the watch
# tells it about changes.
config "$tmp/run.yaml" 1h "fightDetection:
  changes: 3
  window: 5s" "" 1h
from=$(loglen "$log")
k8s_audit_mark
kill -HUP "$syncd_pid"
restarted() { [ "$(nlines "$log" 'msg="config reloaded, controller restarted"' "$from")" -ge 1 ]; }
if wait_for 30 restarted && wait_for 30 passes_at_least 1 "$log" alpha "$from" &&
	wait_for 30 passes_at_least 1 "$log" beta "$from"; then
	ok "SIGHUP with resync 1h restarts the controller; both apps pass"
else
	not_ok "SIGHUP with resync 1h restarts the controller; both apps pass"
	show_log "$log"
fi
# Its Events start afresh: the HPA's field may be reported once more.
object_writes() { # syncd's writes since the mark, Events left out
	k8s_audit_barrier
	tail -n "+$k8s_audit_from" "$K8S_AUDIT" | jq -c '
		select(.user.username == "syncd" and
			(.verb | test("^(create|update|patch|delete|deletecollection)$")) and
			.objectRef.resource != "events")' | wc -l
}
expect_eq "$(object_writes)" 0 "the restarted controller writes no object (audit log)"
sleep 1

from=$(loglen "$log")
k8s_audit_mark
KUBE_EDITOR="sed -i s#image:\ nginx:1.27#image:\ nginx:edited#" EDITOR=false \
	kc -n "$NS_A" edit deployment/web >/dev/null 2>&1
t0=$(date +%s)
healed_image() { [ "$(image_of "$NS_A" web)" = nginx:1.27 ]; }
if wait_for 20 healed_image; then
	ok "a kubectl edit of app alpha's image is taken back ($(($(date +%s) - t0)) s)"
else
	not_ok "a kubectl edit of app alpha's image is taken back: $(image_of "$NS_A" web)"
	show_log "$log"
fi
expect_eq "$(k8s_audit_count admin patch deployments 200)" 1 \
	"the edit reached the API server (one PATCH by the admin)"
expect_eq "$(k8s_audit_count syncd list '*')" 0 \
	"the healing pass read the watch cache: no LIST by syncd"
expect_eq "$(k8s_audit_count syncd patch deployments)" 1 \
	"one apply heals it"
image_path='.spec.template.spec.containers\[name=\\"main\\"\]\.image'
written_re="msg=\"object written\" app=alpha .*object=\"Deployment.apps $NS_A/web\" result=\"configured \\(forced\\)\" drift=\"$image_path \\(kubectl-edit\\)\""
expect_match "$written_re" "$(tail -n +"$from" "$log")" \
	"the heal is logged with the object, the field and the person's manager (kubectl-edit)"
drift_event() { # NS NAME
	kc -n "$1" get events.events.k8s.io -o json | jq -r --arg n "$2" '.items[] |
		select(.reason == "DriftCorrected" and .regarding.name == $n) | .note'
}
expect_match 'image \(kubectl-edit\)$' "$(drift_event "$NS_A" web)" \
	"a DriftCorrected Event names the field and kubectl-edit"

# Controllers write status all the time: the watch reports a change of
# it (health reads status), and the pass it runs writes nothing.
from=$(loglen "$log")
k8s_audit_mark
kc -n "$NS_B" patch horizontalpodautoscaler api --subresource=status --type merge \
	-p '{"status":{"currentReplicas":7}}' >/dev/null 2>"$tmp/status.err" ||
	sed 's/^/    /' "$tmp/status.err"
if wait_for 10 passes_at_least 1 "$log" beta "$from"; then
	ok "a write of the HPA's status runs a pass of app beta (its health may change)"
else
	not_ok "a write of the HPA's status runs a pass of app beta"
fi
expect_eq "$(($(syncd_writes) - $(k8s_audit_count syncd create events)))" 0 \
	"... which writes no object"
kc -n "$NS_B" patch configmap settings --type merge -p '{"data":{"value":"patched"}}' >/dev/null
if wait_for 20 is "$NS_B" configmap/settings '{.data.value}' blue; then
	ok "a kubectl patch of app beta's ConfigMap is taken back"
else
	not_ok "a kubectl patch of app beta's ConfigMap is taken back: $(get "$NS_B" configmap/settings '{.data.value}')"
	show_log "$log"
fi
expect_match "msg=\"object written\" app=beta .*object=\"ConfigMap $NS_B/settings\" .*drift=\".data.value \\(kubectl-patch\\)\"" \
	"$(tail -n +"$from" "$log")" "the heal is logged with .data.value and kubectl-patch"
expect_eq "$(get "$NS_B" deployment/api '{.spec.replicas}')" 2 \
	"healing app beta leaves the HPA's replicas"
k8s_audit_mark
sleep 2
expect_eq "$(syncd_writes)" 0 "the echo of syncd's own writes causes no further write"

# A script patching a field back again and again is a fight: syncd
# stops writing that field, and writes it again once the window passed.
fighter() { # SECONDS
	local end=$((SECONDS + $1))
	while [ "$SECONDS" -lt "$end" ]; do
		kc -n "$NS_A" patch configmap settings --type merge \
			-p '{"data":{"value":"fight"}}' >/dev/null 2>&1
		sleep 0.3
	done
}
from=$(loglen "$log")
fighter 40 &
fighter_pid=$!
pids+=("$fighter_pid")
fight_re='level=warn msg="field fight: changed back every time syncd writes it; syncd stops writing it" app=alpha .*object="ConfigMap real-run-a/settings" field=.data.value managers=syncd,kubectl-patch'
fought() { [ "$(nlines "$log" "$fight_re" "$from")" -ge 1 ]; }
if wait_for 30 fought; then
	ok "a loop of kubectl patch is a fight, logged with the field and both managers"
else
	not_ok "a loop of kubectl patch is a fight"
	show_log "$log"
fi
sleep 0.5
k8s_audit_mark
sleep 2
expect_eq "$(k8s_audit_count syncd patch configmaps) $(get "$NS_A" configmap/settings '{.data.value}')" \
	"0 fight" "while the fight is held syncd does not write the field (audit log)"
expect_match 'data.value is changed back by kubectl-patch' \
	"$(kc -n "$NS_A" get events.events.k8s.io -o json | jq -r '.items[] |
		select(.reason == "FieldFight" and .type == "Warning") | .note')" \
	"a FieldFight Warning Event names the field and the other manager"
kill "$fighter_pid" 2>/dev/null
wait "$fighter_pid" 2>/dev/null
if wait_for 30 is "$NS_A" configmap/settings '{.data.value}' one; then
	ok "once the fighter stopped and the window passed, syncd writes the field again"
else
	not_ok "the fight ends: $(get "$NS_A" configmap/settings '{.data.value}')"
	show_log "$log"
fi
expect_match 'msg="field fight over: syncd writes it again" app=alpha ' \
	"$(tail -n +"$from" "$log")" "the end of the fight is logged"

# === 4. following a commit ===============================================
from=$(loglen "$log")
cm settings two >"$work/apps/a/cm.yaml"
deploy web nginx:1.28 1 >"$work/apps/a/deploy.yaml"
c2=$(commit "alpha two")
if wait_for 30 is "$NS_A" configmap/settings '{.data.value}' two &&
	wait_for 10 is "$NS_A" deployment/web '{.spec.template.spec.containers[0].image}' nginx:1.28; then
	ok "a pushed commit is in the API server after the poll"
else
	not_ok "a pushed commit is in the API server after the poll: $(get "$NS_A" configmap/settings '{.data.value}') $(image_of "$NS_A" web)"
	show_log "$log"
fi
expect_match "msg=rendered app=alpha revision=$c2" "$(cat "$log")" \
	"app alpha renders the new commit"
expect_eq "$(nlines "$log" "msg=\"object written\" app=alpha revision=$c2 .*result=configured$" "$from")" 2 \
	"the commit's two objects are written, with no drift named (a new revision is not drift)"
expect_eq "$( (drift_event "$NS_A" settings; drift_event "$NS_A" web) | grep -c "revision ${c2:0:12}")" 0 \
	"no DriftCorrected Event for the commit's change"
expect_eq "$(nlines "$log" "msg=rendered app=beta revision=$c2")" 0 \
	"app beta (not polled) renders nothing new"
term_wait "$syncd_pid" 40
expect_eq "$rc" 0 "SIGTERM: the controller exits 0"

# === 5. leader election on a real Lease ==================================
# One service account per replica, bound in the apps' and the Lease's
# namespaces only, so that the audit log tells the replicas apart.
for r in 1 2; do
	kc -n "$NS_LE" create serviceaccount "replica-$r" >/dev/null
	for ns in "$NS_A" "$NS_B" "$NS_LE"; do
		kc -n "$ns" create rolebinding "replica-$r" --clusterrole cluster-admin \
			--serviceaccount "$NS_LE:replica-$r" >/dev/null
	done
	k8s_kubeconfig "$tmp/replica-$r.kubeconfig" "replica-$r" token \
		"$(kc -n "$NS_LE" create token "replica-$r" --duration 1h)"
done
user_of() { echo "system:serviceaccount:$NS_LE:replica-$1"; }
le="leaderElection:
  namespace: $NS_LE
  leaseName: syncd-run
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms"
declare -A rpid
start_replica() { # N
	config "$tmp/replica-$1.yaml" 2s "$le" "$tmp/replica-$1.kubeconfig"
	sed -i "s#cacheDir: .*#cacheDir: $tmp/cache-$1#" "$tmp/replica-$1.yaml"
	: >"$tmp/r$1.log"
	start_syncd "$tmp/replica-$1.yaml" "$tmp/r$1.log" POD_NAME="replica-$1"
	rpid[$1]=$syncd_pid
}
leading() { grep -q 'msg="leading: this replica writes"' "$tmp/r$1.log"; }
holder() { get "$NS_LE" lease/syncd-run '{.spec.holderIdentity}'; }
holder_is() { [ "$(holder)" = "$1" ]; }
# writes_by N: writes of replica N since the mark, its Lease's left out.
writes_by() {
	k8s_audit_barrier
	tail -n "+$k8s_audit_from" "$K8S_AUDIT" | jq -c --arg u "$(user_of "$1")" '
		select(.user.username == $u and
			(.verb | test("^(create|update|patch|delete|deletecollection)$")) and
			.objectRef.resource != "leases")' | wc -l
}
k8s_audit_mark
start_replica 1
start_replica 2
one_leads() { leading 1 || leading 2; }
if wait_for 30 one_leads; then
	ok "one of two replicas leads"
else
	not_ok "one of two replicas leads"
	show_log "$tmp/r1.log"
	show_log "$tmp/r2.log"
fi
sleep 3
if leading 1; then L=1 S=2; else L=2 S=1; fi
expect_eq "$(leading "$S" && echo both || echo one)" one "exactly one replica leads"
expect_eq "$(holder)" "replica-$L" "the Lease's holderIdentity names the leader (replica-$L)"
expect_eq "$(get "$NS_LE" lease/syncd-run '{.spec.leaseDurationSeconds}')" 4 \
	"the Lease has the configured duration"
# The first leader's pass adopts what the first controller applied: the
# field manager is the same, so nothing is written for it.
KUBE_EDITOR="sed -i s#image:\ nginx:1.28#image:\ nginx:edited#" EDITOR=false \
	kc -n "$NS_A" edit deployment/web >/dev/null 2>&1
if wait_for 20 is "$NS_A" deployment/web '{.spec.template.spec.containers[0].image}' nginx:1.28; then
	ok "the leader heals an edit"
else
	not_ok "the leader heals an edit: $(image_of "$NS_A" web)"
	show_log "$tmp/r$L.log"
fi
expect_eq "$(writes_by "$S")" 0 "the standby wrote nothing (audit log)"
w=$(writes_by "$L")
if [ "$w" -ge 1 ]; then
	ok "the leader wrote the heal ($w writes, audit log)"
else
	not_ok "the leader wrote the heal (audit log: $w writes)"
fi
# Their roles are namespaced: the first LIST of a watch of every
# namespace is refused, and syncd watches each namespace instead.
refusals() { # USER: "verb resource namespace" of its refused requests
	k8s_audit_barrier
	tail -n "+$k8s_audit_from" "$K8S_AUDIT" | jq -r --arg u "$1" '
		select(.user.username == $u and .responseStatus.code == 403) |
		"\(.verb) \(.objectRef.resource) \(.objectRef.namespace // "*")"' |
		sort -u | tr '\n' ','
}
all_ns_lists="list configmaps *,list deployments *,list horizontalpodautoscalers *,list services *,"
expect_eq "$(refusals "$(user_of "$L")")|$(refusals "$(user_of "$S")")" \
	"$all_ns_lists|" \
	"the leader's only refusals are the all-namespace LISTs of its first watches; the standby sent none"
per_ns_watch() { # USER: namespaces it watches configmaps in
	k8s_audit_barrier
	tail -n "+$k8s_audit_from" "$K8S_AUDIT" | jq -r --arg u "$1" '
		select(.user.username == $u and .verb == "watch" and
			.objectRef.resource == "configmaps") | .objectRef.namespace' |
		sort -u | tr '\n' ' '
}
expect_eq "$(per_ns_watch "$(user_of "$L")")" "$NS_A $NS_B " \
	"the leader watches ConfigMaps in each app's namespace instead"
port_of() { sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$tmp/r$1.log" | tail -n 1; }
readyz() { curl -sS --max-time 5 "http://127.0.0.1:$(port_of "$1")/readyz" 2>&1; }
expect_eq "$(readyz "$L")|$(readyz "$S")" "ok|ok" \
	"both replicas are ready (/readyz), the leader with its per-namespace watches synced"

# SIGTERM: the leader releases the Lease (seen by a watch on it), the
# standby takes over at once.
kc -n "$NS_LE" get lease syncd-run --watch -o json >"$tmp/lease.watch" 2>/dev/null &
lease_watch=$!
pids+=("$lease_watch")
sleep 1
k8s_audit_mark
term_wait "${rpid[$L]}" 40
expect_eq "$rc" 0 "SIGTERM: the leader exits 0"
if wait_for 10 holder_is "replica-$S"; then
	ok "the other replica takes the released Lease"
else
	not_ok "the other replica takes the released Lease: $(holder)"
fi
sleep 1
kill "$lease_watch" 2>/dev/null
wait "$lease_watch" 2>/dev/null
holders() {
	jq -r '"\(.spec.holderIdentity // "") \(.spec.leaseDurationSeconds)"' "$tmp/lease.watch" |
		uniq | tr '\n' ','
}
expect_match "replica-$L 4,( 1,)+replica-$S 4,\$" "$(holders)" \
	"the Lease went from replica-$L to released (no holder, 1 s) to replica-$S"
if wait_for 10 leading "$S"; then
	ok "replica-$S leads"
else
	not_ok "replica-$S leads"
	show_log "$tmp/r$S.log"
fi
expect_eq "$(get "$NS_LE" lease/syncd-run '{.spec.leaseTransitions}')" 1 \
	"leaseTransitions counts the change"
kc -n "$NS_B" patch configmap settings --type merge -p '{"data":{"value":"patched"}}' >/dev/null
if wait_for 20 is "$NS_B" configmap/settings '{.data.value}' blue; then
	ok "the new leader heals an edit"
else
	not_ok "the new leader heals an edit: $(get "$NS_B" configmap/settings '{.data.value}')"
	show_log "$tmp/r$S.log"
fi
expect_eq "$(writes_by "$L") $(test "$(writes_by "$S")" -ge 1 && echo yes)" "0 yes" \
	"the new leader's writes are its own (audit log)"

# A crash: the Lease still names the dead leader until it expires, then
# the standby (replica-$L, started again) takes it.
start_replica "$L"
standby() { grep -q "msg=leader identity=replica-$S" "$tmp/r$L.log"; }
wait_for 20 standby || true
{
	kill -KILL "${rpid[$S]}"
	wait "${rpid[$S]}"
} 2>/dev/null
expect_eq "$(holder)" "replica-$S" "right after a SIGKILL the Lease still names replica-$S"
if wait_for 20 leading "$L"; then
	ok "after the lease duration replica-$L leads"
else
	not_ok "after the lease duration replica-$L leads"
	show_log "$tmp/r$L.log"
fi
expect_eq "$(holder) $(get "$NS_LE" lease/syncd-run '{.spec.leaseTransitions}')" \
	"replica-$L 2" "the Lease names replica-$L, leaseTransitions 2"
kc -n "$NS_A" patch configmap settings --type merge -p '{"data":{"value":"patched"}}' >/dev/null
if wait_for 20 is "$NS_A" configmap/settings '{.data.value}' two; then
	ok "the leader after the crash heals an edit"
else
	not_ok "the leader after the crash heals an edit: $(get "$NS_A" configmap/settings '{.data.value}')"
	show_log "$tmp/r$L.log"
fi
term_wait "${rpid[$L]}" 40
expect_eq "$rc" 0 "SIGTERM: the last leader exits 0"
if grep -q 's3cret-pass-8c1f\|Bearer' "$tmp/run.log" "$tmp/r1.log" "$tmp/r2.log"; then
	not_ok "no secret in the logs"
else
	ok "no secret in the logs"
fi
finish
