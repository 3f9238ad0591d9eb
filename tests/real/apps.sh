#!/usr/bin/env bash
# Apps declared as App objects (apps.syncd.io/v1alpha1) on the real
# kube-apiserver 1.36 with its controllers and kwok nodes, fed by a real
# Git server (lighttpd + git http-backend over HTTPS with basic auth, on
# loopback) whose credentials and CA come from a Secret (source.secretRef):
#  1. the CRD of examples/deploy/app-crd.yaml is established; an App made
#     with kubectl converges (its objects in the API server), `kubectl wait
#     --for=condition=Ready` returns, and `kubectl get apps.syncd.io` shows
#     READY True, HEALTH Healthy, the revision pushed and 0 drifted; an app
#     of syncd.yaml runs beside it;
#  2. a hand edit of an App's object: a watch on the App sees Synced False
#     then True again, and the edit is healed;
#  3. nothing changed, nothing written: over resyncs no PATCH of apps (the
#     status included) by syncd;
#  4. an App with selfHeal off keeps its drift: Synced False with the
#     drifted field, its manager and firstSeen, and driftSince; a restart
#     of syncd keeps firstSeen and driftSince and writes no status at all;
#  5. who may deploy what: an App of one namespace declaring an object of
#     another is Stalled (NamespaceNotAllowed, the object named) and
#     nothing is applied; an App with serviceAccountName whose role allows
#     only ConfigMaps (and its inventory Secret) is refused by the server
#     for its Deployment, and reported Stalled with the server's message;
#  6. bad input: an App with a key naming syncd's own files is rejected by
#     the CRD schema (kubectl prints the server's message); an App whose
#     name syncd.yaml already uses is Stalled (NameClash);
#  7. deleting an App stops it: its objects stay, an edit is no longer
#     healed.
# Loopback only; every wait is bounded; the script removes its namespaces
# and the CRD, and stops what it started.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../integration/git/servers.sh"
real_need "App objects on the real control plane"

NS_A=real-apps-a
NS_B=real-apps-b
cleanup() {
	gitsrv_stop_all
	if [ -n "${K8S_DIR:-}" ]; then
		kc delete namespace "$NS_A" "$NS_B" --wait=false \
			--ignore-not-found >/dev/null 2>&1
		# Gone before the next script (app-crd.sh applies it again).
		kc delete crd apps.syncd.io --ignore-not-found --timeout=60s \
			>/dev/null 2>&1
	fi
	real_cleanup
}
trap cleanup EXIT

gitsrv_env

# --- the Git server --------------------------------------------------------
if ! gitsrv_repo_start deploy; then
	ok "no Git server here: App checks skipped: $gitsrv_why"
	finish
fi
REPO_URL=$repo_url
cm() { # NAME VALUE [NAMESPACE]
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n' "$1"
	[ -n "${3:-}" ] && printf '  namespace: %s\n' "$3"
	printf 'data:\n  value: "%s"\n' "$2"
}
deploy() { # NAME
	cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
spec:
  replicas: 1
  selector:
    matchLabels: {app: $1}
  template:
    metadata:
      labels: {app: $1}
    spec:
      containers:
        - name: main
          image: nginx:1.27
EOF
}
mkdir -p "$work/apps/web" "$work/apps/manual" "$work/apps/bad" \
	"$work/apps/limited" "$work/apps/file"
cm settings one >"$work/apps/web/cm.yaml"
deploy web >"$work/apps/web/deploy.yaml"
cm manual one >"$work/apps/manual/cm.yaml"
cm intruder one "$NS_B" >"$work/apps/bad/cm.yaml"
cm limited one >"$work/apps/limited/cm.yaml"
deploy limited >"$work/apps/limited/deploy.yaml"
cm filed one >"$work/apps/file/cm.yaml"
if c1=$(gitsrv_push "apps"); then
	ok "the apps are pushed to the Git server over HTTPS"
else
	not_ok "the apps are pushed to the Git server over HTTPS"
	finish
fi

# --- the cluster side ------------------------------------------------------
fresh_ns "$NS_A" "$NS_B"
if kc apply -f "$top/examples/deploy/app-crd.yaml" >/dev/null &&
	kc wait --for=condition=Established crd/apps.syncd.io --timeout=30s >/dev/null; then
	ok "the App CRD of examples/deploy is established"
else
	not_ok "the App CRD of examples/deploy is established"
	finish
fi
kc -n "$NS_A" create secret generic git-creds --from-literal=username=alice \
	--from-literal=password=s3cret-pass-8c1f --from-file=ca.crt="$tmp/tls/ca.pem" >/dev/null
# The service account of the limited App: ConfigMaps and its inventory
# Secret only.
kc -n "$NS_A" create serviceaccount deployer >/dev/null
kc -n "$NS_A" create role configmaps-only --verb=get,list,watch,create,patch,update,delete \
	--resource=configmaps,secrets >/dev/null
kc -n "$NS_A" create rolebinding deployer --role=configmaps-only \
	--serviceaccount="$NS_A:deployer" >/dev/null

get() { kc -n "$1" get "$2" -o jsonpath="$3" 2>&1; }
is() { [ "$(get "$1" "$2" "$3")" = "$4" ]; }
cond() { # NAME TYPE: the condition's status
	get "$NS_A" "app/$1" "{.status.conditions[?(@.type==\"$2\")].status}"
}
cond_is() { [ "$(cond "$1" "$2")" = "$3" ]; }
reason() { get "$NS_A" "app/$1" "{.status.conditions[?(@.type==\"$2\")].reason}"; }
message() { get "$NS_A" "app/$1" "{.status.conditions[?(@.type==\"$2\")].message}"; }
app() { # NAME PATH [EXTRA-YAML]
	cat <<EOF
apiVersion: syncd.io/v1alpha1
kind: App
metadata:
  name: $1
spec:
  source:
    repo: $REPO_URL
    revision: main
    path: $2
    interval: 2s
    secretRef:
      name: git-creds
${3:-}
EOF
}

# --- the controller --------------------------------------------------------
cat >"$tmp/syncd.yaml" <<EOF
resync: 3s
workers: 2
kubeconfig: $K8S_SYNCD_KUBECONFIG
cacheDir: $tmp/cache
listen: 127.0.0.1:0
appObjects:
  namespaces: [$NS_A]
apps:
  - name: filed
    source:
      repo: $REPO_URL
      revision: main
      path: apps/file
      interval: 2s
      username: alice
      passwordFile: $tmp/password
      caFile: $tmp/tls/ca.pem
    namespace: $NS_A
EOF
log=$tmp/run.log
start_syncd() {
	"$SYNCD" run -c "$tmp/syncd.yaml" >>"$log.out" 2>>"$log" &
	syncd_pid=$!
	pids+=("$syncd_pid")
}
show_log() { tail -n 20 "$log" | cut -c 1-400 | sed 's/^/    log: /'; }
start_syncd

# === 1. an App converges ====================================================
app web apps/web | kc -n "$NS_A" apply -f - >/dev/null
converged() {
	is "$NS_A" configmap/settings '{.data.value}' one &&
		is "$NS_A" deployment/web '{.spec.template.spec.containers[0].image}' nginx:1.27 &&
		is "$NS_A" configmap/filed '{.data.value}' one
}
if wait_for 60 converged; then
	ok "an App made with kubectl converges (credentials and CA from its secretRef), beside an app of syncd.yaml"
else
	not_ok "an App made with kubectl converges"
	show_log
fi
if out=$(kc -n "$NS_A" wait --for=condition=Ready app/web --timeout=90s 2>&1); then
	ok "kubectl wait --for=condition=Ready app/web returns"
else
	not_ok "kubectl wait --for=condition=Ready app/web returns: $out"
	kc -n "$NS_A" get app web -o yaml | sed 's/^/    /' | head -60
	show_log
fi
table=$(kc -n "$NS_A" get apps.syncd.io web 2>&1)
expect_match '^NAME +READY +HEALTH +REVISION +DRIFTED +AGE' "$table" \
	"kubectl get apps.syncd.io has the columns READY HEALTH REVISION DRIFTED AGE"
expect_match "^web +True +Healthy +$c1 +0 " "$table" \
	"the App is Ready, Healthy, at the pushed revision, with 0 drifted"
expect_eq "$(get "$NS_A" app/web '{.status.observedGeneration}')" \
	"$(get "$NS_A" app/web '{.metadata.generation}')" \
	"status.observedGeneration is the App's generation"
expect_eq "$(get "$NS_A" app/web '{.status.lastAttemptedRevision} {.status.summary.drifted} {.status.healthCounts.Healthy}')" \
	"$c1 0 2" "status has lastAttemptedRevision, the object counts and the health counts"
expect_eq "$(get "$NS_A" app/web '{.status.summary.inSync}')" \
	"$(get "$NS_A" app/web '{.status.summary.objects}')" "every object is counted in sync"

# === 2. a hand edit: Synced False, then True =================================
watch_out=$tmp/watch.txt
timeout 30 "$K8S_BIN/kubectl" --kubeconfig "$K8S_KUBECONFIG" -n "$NS_A" get app web -w \
	-o jsonpath='{.status.conditions[?(@.type=="Synced")].status}{"\n"}' >"$watch_out" 2>&1 &
watch_pid=$!
sleep 1
kc -n "$NS_A" patch configmap settings --type=merge -p '{"data":{"value":"edited"}}' >/dev/null
healed() { is "$NS_A" configmap/settings '{.data.value}' one; }
saw_back() { tr -d ' ' <"$watch_out" | grep -A50 '^False$' | grep -q '^True$'; }
if wait_for 20 healed && wait_for 20 saw_back; then
	ok "a hand edit is healed, and a watch on the App sees Synced False, then True"
else
	not_ok "a hand edit shows Synced False then True: $(tr '\n' ' ' <"$watch_out")"
	show_log
fi
kill "$watch_pid" 2>/dev/null
wait "$watch_pid" 2>/dev/null

# === 3. nothing changed, nothing written ====================================
n=$(k8s_audit_count syncd patch apps)
if [ "$n" -ge 2 ]; then
	ok "the App's status is written by server-side apply ($n PATCHes so far)"
else
	not_ok "the App's status is written by server-side apply: $n PATCHes"
fi
sleep 4 # the re-read after the heal
k8s_audit_mark
sleep 10 # three resyncs at least
expect_eq "$(k8s_audit_count syncd patch apps) $(k8s_audit_count syncd update apps)" "0 0" \
	"over resyncs that change nothing, syncd writes no App status"
expect_eq "$(syncd_writes)" 0 "and no object either"

# === 4. drift kept (selfHeal off), and a restart ============================
app manual apps/manual | kc -n "$NS_A" apply -f - >/dev/null
wait_for 60 cond_is manual Ready True ||
	not_ok "the App manual becomes Ready: $(message manual Ready)"
# A change of spec is a new generation: the app starts over with it.
app manual apps/manual "  selfHeal: false" | kc -n "$NS_A" apply -f - >/dev/null
gen2() {
	[ "$(get "$NS_A" app/manual '{.metadata.generation}')" = 2 ] &&
		[ "$(get "$NS_A" app/manual '{.status.observedGeneration}')" = 2 ]
}
if wait_for 30 gen2; then
	ok "a changed App spec is observed: observedGeneration follows the generation"
else
	not_ok "a changed App spec is observed: $(get "$NS_A" app/manual '{.metadata.generation} {.status.observedGeneration}')"
fi
kc -n "$NS_A" patch configmap manual --type=merge -p '{"data":{"value":"by-hand"}}' \
	--field-manager=kubectl-edit >/dev/null
if wait_for 30 cond_is manual Synced False; then
	ok "selfHeal off: a hand edit is Synced False ($(reason manual Synced)), not healed"
else
	not_ok "selfHeal off: a hand edit is Synced False: $(message manual Synced)"
fi
expect_eq "$(get "$NS_A" configmap/manual '{.data.value}')" by-hand "the edit stays"
fields=$(get "$NS_A" app/manual '{range .status.driftedFields[*]}{.object}|{.path}|{.manager}{"\n"}{end}')
expect_match "^ConfigMap $NS_A/manual\|\.data\.value\|kubectl-edit$" "$fields" \
	"status.driftedFields names the object, the field and the manager that changed it"
first=$(get "$NS_A" app/manual '{.status.driftedFields[0].firstSeen}')
since=$(get "$NS_A" app/manual '{.status.driftSince}')
expect_match '^20[0-9-]+T[0-9:]+Z$' "$since" "driftSince is set"
expect_match '^20[0-9-]+T[0-9:]+Z$' "$first" "firstSeen is set"
sleep 3
k8s_audit_mark
kill -TERM "$syncd_pid"
wait "$syncd_pid" 2>/dev/null
sleep 2 # the times are to the second: a reset would show
start_syncd
restarted() { [ "$(grep -c 'msg="pass done" app=manual' "$log")" -ge 3 ]; }
wait_for 30 restarted || not_ok "syncd runs the App again after a restart"
sleep 6 # more resyncs
expect_eq "$(get "$NS_A" app/manual '{.status.driftedFields[0].firstSeen} {.status.driftSince}')" \
	"$first $since" "after a restart, firstSeen and driftSince are those from before (read back from status)"
expect_eq "$(k8s_audit_count syncd patch apps) $(k8s_audit_count syncd update apps)" "0 0" \
	"a restart writes no App status when nothing changed"

# === 5. who may deploy what =================================================
app intruder apps/bad | kc -n "$NS_A" apply -f - >/dev/null
if wait_for 30 cond_is intruder Stalled True; then
	ok "an App declaring an object of another namespace is Stalled"
else
	not_ok "an App declaring an object of another namespace is Stalled"
	show_log
fi
expect_eq "$(reason intruder Stalled)" NamespaceNotAllowed "with reason NamespaceNotAllowed"
expect_match "ConfigMap $NS_B/intruder: an App of namespace $NS_A may not manage objects of namespace $NS_B" \
	"$(message intruder Stalled)" "its message names the object and the namespaces"
expect_eq "$(kc -n "$NS_B" get configmap intruder -o name --ignore-not-found)|$(kc -n "$NS_A" get secret intruder -o name --ignore-not-found)" \
	"|" "nothing of that App is applied (not the object, not its inventory)"

app limited apps/limited "  serviceAccountName: deployer" | kc -n "$NS_A" apply -f - >/dev/null
if wait_for 30 cond_is limited Stalled True; then
	ok "an App whose service account may not touch Deployments is Stalled"
else
	not_ok "an App whose service account may not touch Deployments is Stalled: $(message limited Ready)"
	show_log
fi
expect_match "deployments.apps.*forbidden.*system:serviceaccount:$NS_A:deployer" \
	"$(message limited Stalled)" "with the server's refusal, naming the service account"
expect_eq "$(kc -n "$NS_A" get deployment limited -o name --ignore-not-found)" "" \
	"its Deployment is not in the cluster"

# === 6. bad input ============================================================
bad=$(app badkeys apps/web | sed 's/^    secretRef:/    passwordFile: \/etc\/shadow\n    secretRef:/' |
	kc -n "$NS_A" apply -f - 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && printf '%s' "$bad" | grep -q 'passwordFile'; then
	ok "an App with a key naming syncd's own files is rejected by the CRD schema: $(printf '%s' "$bad" | head -c 200)"
else
	not_ok "an App with source.passwordFile is rejected by the server: rc=$rc $bad"
fi
app filed apps/web | kc -n "$NS_A" apply -f - >/dev/null
if wait_for 30 cond_is filed Stalled True; then
	ok "an App named like an app of syncd.yaml is Stalled"
else
	not_ok "an App named like an app of syncd.yaml is Stalled"
fi
expect_eq "$(reason filed Stalled)" NameClash "with reason NameClash"
expect_match "taken by syncd's configuration file" "$(message filed Stalled)" \
	"its message says who has the name"

# === 7. deleting an App stops it ============================================
kc -n "$NS_A" delete app web --wait=true >/dev/null
stopped() { grep -q 'msg="App objects: apps switched".*removed=1' "$log"; }
wait_for 20 stopped || not_ok "syncd drops the deleted App"
kc -n "$NS_A" patch configmap settings --type=merge -p '{"data":{"value":"after"}}' >/dev/null
sleep 6 # two resyncs
expect_eq "$(get "$NS_A" configmap/settings '{.data.value}')|$(get "$NS_A" deployment/web '{.metadata.name}')" \
	"after|web" "a deleted App's objects stay, and are no longer healed"

if grep -q "s3cret-pass-8c1f" "$log" "$log.out"; then
	not_ok "the Git password from the Secret appears in syncd's logs"
else
	ok "the Git password from the Secret appears nowhere in syncd's logs"
fi
finish
