#!/usr/bin/env bash
# Sync options on the real kube-apiserver 1.36, with its controllers
# running (docs/annotations.md):
#  1. createNamespace: an Argo CD-style install manifest (ServiceAccount,
#     ConfigMap, Role, RoleBinding, Deployment, Service; no namespace
#     anywhere) synced into a namespace that does not exist fails each
#     object with the server's 404 and what to do about it, exit 1,
#     nothing created; with --create-namespace the Namespace is the first
#     object written, labelled as a member of the app, and everything
#     converges (the Deployment becomes Available); a second sync writes
#     nothing; without the flag the Namespace is an orphan that --prune
#     keeps (a protected kind);
#  2. the annotations: syncd.io/prune: disabled survives its removal from
#     Git under --prune (diff still reports it Orphan); syncd.io/apply:
#     create-only is created, then never updated, neither back from a
#     kubectl patch nor forward from Git (diff exit 0, the fields counted
#     as ignored), and created again when deleted; syncd.io/compare:
#     ignore drift is not reported nor written by a sync of its own, and
#     is taken back by a sync that writes another drifted object; an
#     unknown key or a bad value is exit 2 naming the file, the object and
#     both problems, with nothing written (audit log);
#  3. immutable fields: a Job whose template changed is refused with the
#     server's message (shortened) and a hint, exit 1, same uid;
#     --on-immutable replace deletes and creates it (new uid, new
#     template) and diff is then clean; a PersistentVolumeClaim with
#     syncd.io/replace: "true" is refused as a kind that holds data, and
#     replaced only with --replace-allow-kind PersistentVolumeClaim;
#  4. allowEmpty: a revision that renders no objects prunes nothing under
#     --prune (exit 1, the objects stay), and prunes them with
#     --allow-empty;
#  5. syncd run, fed by a real Git server: an app with createNamespace,
#     namespaceMetadata and deletionPolicy: delete converges (the
#     Namespace carries the labels and annotations); removed from the
#     config with a SIGHUP, its objects are deleted except the
#     Namespace (protected) and an object annotated syncd.io/prune:
#     disabled, and it is logged with the counts; an app that also lists
#     pruneAllowKinds: [Namespace] loses everything, in order: its
#     objects, its Namespace, then its inventory (audit log); an app
#     removed in the same reload with deletionPolicy orphan (the
#     default) keeps every object (same uids, no DELETE).
# Namespaces opt-*; every wait is bounded; the script removes its
# namespaces and stops what it started.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../integration/git/servers.sh"
real_need "sync options on the real control plane"

NS_ARGO=opt-argo
NS=opt-sync
NS_DEL=opt-run-del
NS_KEEP=opt-run-keep
NS_GONE=opt-run-gone
ALL_NS=("$NS_ARGO" "$NS" "$NS_DEL" "$NS_KEEP" "$NS_GONE")
cleanup() {
	gitsrv_stop_all
	if [ -n "${K8S_DIR:-}" ]; then
		kc delete namespace "${ALL_NS[@]}" --wait=false \
			--ignore-not-found >/dev/null 2>&1
	fi
	real_cleanup
}
trap cleanup EXIT

ns_gone "${ALL_NS[@]}"
fresh_ns "$NS"

get() { # NS KIND/NAME JSONPATH
	kc -n "$1" get "$2" -o jsonpath="$3" 2>&1
}
uid_of() { get "$1" "$2" '{.metadata.uid}'; }
absent() { # NS KIND/NAME: the API server answers NotFound
	kc -n "$1" get "$2" -o name 2>&1 | grep -q '(NotFound)'
}
applyset_id() { # NS NAME: the ApplySet id label of the parent Secret
	get "$1" "secret/$2" '{.metadata.labels.applyset\.kubernetes\.io/id}'
}
part_of() { # [NS] KIND/NAME: its applyset part-of label
	if [ $# = 2 ]; then
		get "$1" "$2" '{.metadata.labels.applyset\.kubernetes\.io/part-of}'
	else
		kc get "$1" -o jsonpath='{.metadata.labels.applyset\.kubernetes\.io/part-of}' 2>&1
	fi
}
# The summary line of a sync ("N applied, ..."; a "failures:" list may
# follow it).
summary() { grep -E "^[0-9]+ applied, " "$tmp/.out"; }
cm() { # NAME VALUE [ANNOTATION]
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n' "$1"
	if [ -n "${3:-}" ]; then
		printf '  annotations:\n    %s\n' "$3"
	fi
	printf 'data:\n  value: "%s"\n' "$2"
}
# argocd DIR: an install manifest in the way Argo CD's is written: no
# Namespace object, no namespace in any object.
argocd() {
	mkdir -p "$1"
	cat >"$1/install.yaml" <<'EOF'
apiVersion: v1
kind: ServiceAccount
metadata:
  name: argocd-server
  labels: {app.kubernetes.io/part-of: argocd}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  labels: {app.kubernetes.io/part-of: argocd}
data:
  url: https://argocd.example.com
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: argocd-server
rules:
  - apiGroups: [""]
    resources: [secrets, configmaps]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: argocd-server
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: argocd-server
subjects:
  - kind: ServiceAccount
    name: argocd-server
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: argocd-server
  labels: {app.kubernetes.io/part-of: argocd}
spec:
  replicas: 1
  selector:
    matchLabels: {app.kubernetes.io/name: argocd-server}
  template:
    metadata:
      labels: {app.kubernetes.io/name: argocd-server}
    spec:
      serviceAccountName: argocd-server
      containers:
        - name: argocd-server
          image: quay.io/argoproj/argocd:v2.13.0
          ports:
            - containerPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: argocd-server
spec:
  selector: {app.kubernetes.io/name: argocd-server}
  ports:
    - name: http
      port: 80
      targetPort: 8080
EOF
}
# The members of the install manifest, as kubectl names them.
argocd_members() { # NS
	kc -n "$1" get serviceaccounts,configmaps,roles,rolebindings,deployments,services \
		-l applyset.kubernetes.io/part-of -o json 2>&1 |
		jq -r '.items[] | "\(.kind)/\(.metadata.name)"' | sort | tr '\n' ' '
}
ARGOCD_MEMBERS="ConfigMap/argocd-cm Deployment/argocd-server Role/argocd-server RoleBinding/argocd-server Service/argocd-server ServiceAccount/argocd-server "

# === 1. createNamespace ===================================================
argocd "$tmp/argocd"
A=(--app argocd -n "$NS_ARGO")
S sync "${A[@]}" "$tmp/argocd"
nsmsg="namespaces \"$NS_ARGO\" not found (404 NotFound) (declare the Namespace, or set createNamespace: true or --create-namespace)"
expect_eq "$rc $(summary)" "1 0 applied, 0 unchanged, 0 pruned, 0 orphans kept, 7 failed" \
	"argocd into a missing namespace: exit 1, the inventory and the 6 objects failed"
failed_lines() { # the lines a sync into the missing namespace prints
	local o kind res name
	for o in Secret:secrets:argocd ServiceAccount:serviceaccounts \
		ConfigMap:configmaps:argocd-cm \
		Role.rbac.authorization.k8s.io:roles.rbac.authorization.k8s.io \
		RoleBinding.rbac.authorization.k8s.io:rolebindings.rbac.authorization.k8s.io \
		Deployment.apps:deployments.apps Service:services; do
		IFS=: read -r kind res name <<<"$o"
		name=${name:-argocd-server}
		echo "$kind $NS_ARGO/$name: failed: apply $res \"$name\" in namespace \"$NS_ARGO\": $nsmsg"
	done
}
expect_eq "$(grep ': failed: ' "$tmp/.out")" "$(failed_lines)" \
	"each object's line names it, the server's 404 and what to do (inventory first)"
expect_eq "$(kc get namespace "$NS_ARGO" -o name 2>&1)" \
	"Error from server (NotFound): namespaces \"$NS_ARGO\" not found" \
	"without --create-namespace the namespace is not created"

S diff "${A[@]}" --create-namespace -o json "$tmp/argocd"
printf '%s' "$out" >"$tmp/argo-diff.json"
expect_eq "$rc $(jq -r '.objects[] | select(.kind == "Namespace") | "\(.name) \(.state) \(.origin // "")"' "$tmp/argo-diff.json")" \
	"1 $NS_ARGO Missing createNamespace" \
	"diff --create-namespace: the Namespace is a Missing object of the app"

S sync "${A[@]}" --create-namespace "$tmp/argocd"
expect_eq "$rc $(summary)" "0 8 applied, 0 unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"sync --create-namespace: exit 0, the Namespace, the inventory and the 6 objects applied"
expect_eq "$(head -n 2 "$tmp/.out" | tr '\n' ',')" \
	"Namespace $NS_ARGO: created,Secret $NS_ARGO/argocd: created," \
	"the Namespace is written first, then the inventory in it"
expect_eq "$(argocd_members "$NS_ARGO")" "$ARGOCD_MEMBERS" \
	"the 6 objects are in the API server, each labelled a member of the app"
id=$(applyset_id "$NS_ARGO" argocd)
expect_eq "$(part_of "namespace/$NS_ARGO")" "$id" \
	"the Namespace carries the app's part-of label ($id)"
if wait_for 60 kc -n "$NS_ARGO" wait --for=condition=Available --timeout=1s \
	deployment/argocd-server; then
	ok "the Deployment becomes Available (its ServiceAccount exists, the Pod runs)"
else
	not_ok "the Deployment becomes Available"
	kc -n "$NS_ARGO" get deploy,rs,pods 2>&1 | sed 's/^/    /'
fi
S diff "${A[@]}" --create-namespace "$tmp/argocd"
expect_rc 0 "diff --create-namespace after the sync: exit 0 (every object InSync)"
k8s_audit_mark
S sync "${A[@]}" --create-namespace "$tmp/argocd"
expect_eq "$rc $(summary) $(syncd_writes)" \
	"0 0 applied, 8 unchanged, 0 pruned, 0 orphans kept, 0 failed 0" \
	"a second sync --create-namespace writes nothing (audit log)"
ns_uid=$(kc get namespace "$NS_ARGO" -o jsonpath='{.metadata.uid}')
S sync "${A[@]}" --prune "$tmp/argocd"
expect_eq "$rc $(grep -c ': pruned$' "$tmp/.out")" "0 0" \
	"sync --prune without --create-namespace: exit 0, nothing pruned"
expect_match "^Namespace $NS_ARGO: orphan, kept \\(protected kind; see --prune-allow-kind\\)\$" \
	"$out" "the Namespace is an orphan kept as a protected kind"
expect_eq "$(kc get namespace "$NS_ARGO" -o jsonpath='{.metadata.uid} {.status.phase}')" \
	"$ns_uid Active" "the Namespace is still there, the same one"

# === 2. annotations ========================================================
app=$tmp/ann
mkdir -p "$app"
cm keep one 'syncd.io/prune: disabled' >"$app/keep.yaml"
cm plain one >"$app/plain.yaml"
cm seed one 'syncd.io/apply: create-only' >"$app/seed.yaml"
cm tuned one 'syncd.io/compare: ignore' >"$app/tuned.yaml"
cm other one >"$app/other.yaml"
N=(--app ann -n "$NS")
value() { get "$NS" "configmap/$1" '{.data.value}'; }
values() { # NAME...: "name=value" of each
	local n
	for n in "$@"; do
		printf '%s=%s ' "$n" "$(value "$n")"
	done
}
S sync "${N[@]}" "$app"
expect_eq "$rc $(summary)" "0 6 applied, 0 unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"annotated objects: the first sync creates all five and the inventory"
keep_uid=$(uid_of "$NS" configmap/keep)

# create-only and compare: ignore, edited in the cluster
kc -n "$NS" patch configmap seed --type merge -p '{"data":{"value":"edited"}}' >/dev/null
kc -n "$NS" patch configmap tuned --type merge -p '{"data":{"value":"edited"}}' >/dev/null
S diff "${N[@]}" -o json "$app"
printf '%s' "$out" >"$tmp/ann.json"
expect_eq "$rc $(jq -r '.objects[] | select(.name == "seed" or .name == "tuned") |
	"\(.name) \(.state) \(.ignoredFields) \(.fields | length)"' "$tmp/ann.json" | tr '\n' ',')" \
	"0 seed InSync 1 0,tuned InSync 1 0," \
	"diff after kubectl patches of create-only and compare: ignore objects: exit 0, both InSync, the field counted ignored"
expect_eq "$(jq -r '.summary | "\(.drifted) \(.fields) \(.ignoredFields)"' "$tmp/ann.json")" \
	"0 0 2" "the summary: nothing drifted, no field differs, 2 ignored"
k8s_audit_mark
S sync "${N[@]}" "$app"
expect_eq "$rc $(summary) $(syncd_writes)" \
	"0 0 applied, 6 unchanged, 0 pruned, 0 orphans kept, 0 failed 0" \
	"a sync with only those edits writes nothing (audit log)"
expect_eq "$(values seed tuned)" "seed=edited tuned=edited " \
	"both edits stay in the API server"

# A sync that writes another drifted object sends compare: ignore too.
kc -n "$NS" patch configmap other --type merge -p '{"data":{"value":"edited"}}' >/dev/null
S sync "${N[@]}" "$app"
expect_eq "$rc $(grep -c ': configured' "$tmp/.out")" "0 2" \
	"a sync healing another object (other): exit 0, two objects written"
expect_match "^ConfigMap $NS/tuned: configured" "$out" \
	"the compare: ignore object goes with it"
expect_eq "$(values other tuned seed)" "other=one tuned=one seed=edited " \
	"the other's and the compare: ignore edits are taken back; create-only's stays"

# create-only: a change in Git is not applied either; deleted, it is
# created again as Git says.
cm seed two 'syncd.io/apply: create-only' >"$app/seed.yaml"
S diff "${N[@]}" "$app"
expect_rc 0 "create-only changed in Git: diff exit 0"
S sync "${N[@]}" "$app"
expect_eq "$rc $(summary) $(value seed)" \
	"0 0 applied, 6 unchanged, 0 pruned, 0 orphans kept, 0 failed edited" \
	"create-only changed in Git: the sync leaves it as it is"
seed_uid=$(uid_of "$NS" configmap/seed)
kc -n "$NS" delete configmap seed >/dev/null
S sync "${N[@]}" "$app"
expect_match "^ConfigMap $NS/seed: created\$" "$out" "create-only deleted: the sync creates it"
expect_eq "$(value seed) $([ "$(uid_of "$NS" configmap/seed)" != "$seed_uid" ] && echo new)" \
	"two new" "... a new object, with the value Git has now"

# prune: disabled survives its removal from Git, with --prune.
rm "$app/keep.yaml" "$app/plain.yaml"
S sync "${N[@]}" --prune "$app"
expect_eq "$rc $(summary)" "0 0 applied, 4 unchanged, 1 pruned, 1 orphans kept, 0 failed" \
	"both removed from Git, sync --prune: one pruned, one kept"
expect_match "^ConfigMap $NS/keep: orphan, kept \\(syncd.io/prune: disabled\\)\$" "$out" \
	"the kept orphan's line names the annotation"
expect_match "^ConfigMap $NS/plain: pruned\$" "$out" "the plain one is pruned"
expect_eq "$(uid_of "$NS" configmap/keep) $(absent "$NS" configmap/plain && echo gone)" \
	"$keep_uid gone" "in the API server: keep is the same object, plain is gone"
S diff "${N[@]}" -o json "$app"
expect_eq "$rc $(printf '%s' "$out" | jq -r '.objects[] | select(.state != "InSync") | "\(.kind)/\(.name) \(.state)"')" \
	"1 ConfigMap/keep Orphan" "diff still reports it as an Orphan (exit 1)"

# A bad value and an unknown key: exit 2 before anything is written.
bad=$tmp/bad
mkdir -p "$bad"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  annotations:\n    syncd.io/apply: sometimes\n    syncd.io/colour: blue\n' >"$bad/bad.yaml"
cm good one >"$bad/good.yaml"
badmsg='error: bad.yaml:1: ConfigMap bad: annotation syncd.io/apply: "sometimes" is not one of create-only; annotation syncd.io/colour: unknown (syncd knows syncd.io/wave, syncd.io/prune, syncd.io/apply, syncd.io/compare, syncd.io/replace and syncd.io/substitute)'
k8s_audit_mark
S sync --app bad -n "$NS" "$bad"
expect_eq "$rc $errout" "2 $badmsg" \
	"bad annotations: sync exit 2, one line naming the file, the object and both problems"
expect_eq "$(syncd_writes) $(absent "$NS" configmap/good && echo gone) $(absent "$NS" secret/bad && echo gone)" \
	"0 gone gone" "nothing written: no request (audit log), neither the good object nor the inventory"
S diff --app bad -n "$NS" "$bad"
expect_eq "$rc $errout" "2 $badmsg" "bad annotations: diff exit 2 with the same line"

# === 3. immutable fields ===================================================
job() { # IMAGE
	cat <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: $1
          command: [sh, -c, "echo migrated"]
EOF
}
jobdir=$tmp/job
mkdir -p "$jobdir"
job busybox:1.36 >"$jobdir/job.yaml"
J=(--app migrate -n "$NS")
job_image() { get "$NS" job/migrate '{.spec.template.spec.containers[0].image}'; }
S sync "${J[@]}" "$jobdir"
expect_eq "$rc $(summary)" "0 2 applied, 0 unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"the Job is created"
job_uid=$(uid_of "$NS" job/migrate)
job busybox:1.37 >"$jobdir/job.yaml"
S sync "${J[@]}" "$jobdir"
immut="Job.batch \"migrate\" is invalid: spec.template: Invalid value: ...: field is immutable (422 Invalid)"
expect_eq "$rc $(head -n 1 "$tmp/.out")" \
	"1 Job.batch $NS/migrate: failed: $immut (not replaced: syncd.io/replace: \"true\" or onImmutable: replace deletes and creates it)" \
	"a changed template: exit 1, the server's immutable message shortened, and how to replace"
expect_eq "$(uid_of "$NS" job/migrate) $(job_image)" "$job_uid busybox:1.36" \
	"by default the Job is left as it is (same uid, old template)"
S sync "${J[@]}" --on-immutable replace "$jobdir"
expect_eq "$rc $(head -n 1 "$tmp/.out") / $(summary)" \
	"0 Job.batch $NS/migrate: replaced (immutable field) / 1 applied, 1 unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"--on-immutable replace: exit 0, the Job is replaced"
new_uid=$(uid_of "$NS" job/migrate)
expect_eq "$([ -n "$new_uid" ] && [ "$new_uid" != "$job_uid" ] && echo new) $(job_image)" \
	"new busybox:1.37" "the Job in the API server is a new object (new uid) with the new template"
S diff "${J[@]}" "$jobdir"
expect_rc 0 "diff after the replace: exit 0"

# A PVC says syncd.io/replace: "true", but it holds data.
pvc() { # ACCESS-MODE
	cat <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  annotations:
    syncd.io/replace: "true"
spec:
  accessModes: [$1]
  resources:
    requests:
      storage: 1Gi
EOF
}
pvcdir=$tmp/pvc
mkdir -p "$pvcdir"
pvc ReadWriteOnce >"$pvcdir/pvc.yaml"
P=(--app data -n "$NS")
S sync "${P[@]}" "$pvcdir"
expect_rc 0 "the PVC is created"
pvc_uid=$(uid_of "$NS" pvc/data)
pvc ReadWriteMany >"$pvcdir/pvc.yaml"
S sync "${P[@]}" "$pvcdir"
expect_rc 1 "the PVC's access modes changed: exit 1"
expect_match "^PersistentVolumeClaim $NS/data: failed: PersistentVolumeClaim \"data\" is invalid: spec: Forbidden: spec is immutable after creation.* \\(422 Invalid\\) \\(not replaced: the kind holds data; see replaceAllowKinds\\)\$" \
	"$out" "refused as immutable, not replaced: the kind holds data"
expect_eq "$(uid_of "$NS" pvc/data) $(get "$NS" pvc/data '{.spec.accessModes[0]}')" \
	"$pvc_uid ReadWriteOnce" "the PVC is left as it is (same uid)"
S sync "${P[@]}" --on-immutable replace "$pvcdir"
expect_eq "$rc $(uid_of "$NS" pvc/data)" "1 $pvc_uid" \
	"--on-immutable replace alone does not replace a PVC either"
S sync "${P[@]}" --replace-allow-kind PersistentVolumeClaim "$pvcdir"
expect_eq "$rc $(head -n 1 "$tmp/.out")" \
	"0 PersistentVolumeClaim $NS/data: replaced (immutable field)" \
	"--replace-allow-kind PersistentVolumeClaim: the annotated PVC is replaced"
new_uid=$(uid_of "$NS" pvc/data)
expect_eq "$([ -n "$new_uid" ] && [ "$new_uid" != "$pvc_uid" ] && echo new) $(get "$NS" pvc/data '{.spec.accessModes[0]}')" \
	"new ReadWriteMany" "the PVC in the API server is a new object with the new access mode"
S diff "${P[@]}" "$pvcdir"
expect_rc 0 "diff after the replace: exit 0"

# === 4. allowEmpty =========================================================
empty=$tmp/empty
mkdir -p "$empty"
cm e1 one >"$empty/e1.yaml"
cm e2 one >"$empty/e2.yaml"
E=(--app empty -n "$NS")
S sync "${E[@]}" "$empty"
expect_rc 0 "allowEmpty: two objects synced"
rm "$empty"/*.yaml
S sync "${E[@]}" --prune "$empty"
expect_eq "$rc $(head -n 1 "$tmp/.out")" \
	"1 prune: the revision declares no objects: nothing pruned of the 2 objects (allowEmpty: true or --allow-empty prunes them)" \
	"a render of no objects with --prune: exit 1, nothing pruned, and why"
expect_eq "$(values e1 e2)" "e1=one e2=one " "both objects are still there"
S sync "${E[@]}" --prune --allow-empty "$empty"
expect_eq "$rc $(grep -c ': pruned$' "$tmp/.out")" "0 2" \
	"--prune --allow-empty: exit 0, both pruned"
expect_eq "$(absent "$NS" configmap/e1 && echo gone) $(absent "$NS" configmap/e2 && echo gone)" \
	"gone gone" "both are gone from the API server"

# === 5. syncd run: createNamespace, namespaceMetadata, deletionPolicy ======
gitsrv_env
if ! gitsrv_repo_start deploy; then
	ok "no Git server here: the syncd run checks skipped: $gitsrv_why"
	finish
fi
argocd "$work/apps/argocd"
cm keep one 'syncd.io/prune: disabled' >"$work/apps/argocd/keep.yaml"
mkdir -p "$work/apps/plain"
cm settings blue >"$work/apps/plain/cm.yaml"
mkdir -p "$work/apps/gone"
cm settings green >"$work/apps/gone/cm.yaml"
cat >"$work/apps/plain/service.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
    - port: 80
EOF
if gitsrv_push "three apps" >/dev/null; then
	ok "the three apps are pushed to the Git server"
else
	not_ok "the three apps are pushed to the Git server"
	finish
fi
source_of() { # PATH
	cat <<EOF
    source:
      repo: $repo_url
      revision: main
      path: $1
      interval: 1s
      username: alice
      passwordFile: $tmp/password
      caFile: $tmp/tls/ca.pem
EOF
}
# config FILE [APPS]: APPS is "all" or "none".
config() {
	cat >"$1" <<EOF
resync: 2s
workers: 2
kubeconfig: $K8S_SYNCD_KUBECONFIG
cacheDir: $tmp/cache
listen: 127.0.0.1:0
EOF
	if [ "${2:-all}" = none ]; then
		echo 'apps: []' >>"$1"
		return
	fi
	cat >>"$1" <<EOF
apps:
  - name: argocd
$(source_of apps/argocd)
    namespace: $NS_DEL
    createNamespace: true
    namespaceMetadata:
      labels:
        team: payments
        tier: "1"
      annotations:
        owner: payments@example.com
    deletionPolicy: delete
  - name: plain
$(source_of apps/plain)
    namespace: $NS_KEEP
    createNamespace: true
  - name: gone
$(source_of apps/gone)
    namespace: $NS_GONE
    createNamespace: true
    deletionPolicy: delete
    pruneAllowKinds: [Namespace]
EOF
}
config "$tmp/run.yaml"
log=$tmp/run.log
"$SYNCD" run -c "$tmp/run.yaml" >"$log.out" 2>"$log" &
syncd_pid=$!
pids+=("$syncd_pid")
show_log() { tail -n 15 "$log" | cut -c 1-400 | sed 's/^/    log: /'; }
# The install manifest and the ConfigMap keep (syncd.io/prune: disabled).
RUN_MEMBERS="ConfigMap/argocd-cm ConfigMap/keep ${ARGOCD_MEMBERS#ConfigMap/argocd-cm }"
converged() {
	[ "$(argocd_members "$NS_DEL")" = "$RUN_MEMBERS" ] &&
		[ "$(get "$NS_KEEP" configmap/settings '{.data.value}')" = blue ] &&
		[ "$(get "$NS_KEEP" service/web '{.spec.ports[0].port}')" = 80 ] &&
		[ "$(get "$NS_GONE" configmap/settings '{.data.value}')" = green ]
}
if wait_for 60 converged; then
	ok "syncd run: the three apps converge into namespaces it creates"
else
	not_ok "syncd run: the three apps converge into namespaces it creates"
	show_log
fi
ns_meta() { # NS
	kc get namespace "$1" -o json 2>&1 | jq -r '
		"\(.metadata.labels.team) \(.metadata.labels.tier) \(.metadata.annotations.owner)"'
}
expect_eq "$(ns_meta "$NS_DEL")" "payments 1 payments@example.com" \
	"the Namespace carries namespaceMetadata's labels and annotations"
expect_eq "$(part_of "namespace/$NS_DEL")|$(part_of "namespace/$NS_KEEP")" \
	"$(applyset_id "$NS_DEL" argocd)|$(applyset_id "$NS_KEEP" plain)" \
	"each Namespace is a member of its app (the part-of label of its inventory)"
if wait_for 60 kc -n "$NS_DEL" wait --for=condition=Available --timeout=1s \
	deployment/argocd-server; then
	ok "the Argo CD-style Deployment becomes Available"
else
	not_ok "the Argo CD-style Deployment becomes Available"
fi
run_syncd status --addr "http://127.0.0.1:$(sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$log" | tail -n 1)" --no-color
expect_eq "$rc $(printf '%s\n' "$out" | awk '$1 == "argocd" || $1 == "plain" || $1 == "gone" {print $1, $2}' | sort | tr '\n' ',')" \
	"0 argocd InSync,gone InSync,plain InSync," "syncd status: the three apps InSync"
keep_uids() {
	printf '%s ' "$(uid_of "$NS_KEEP" configmap/settings)" \
		"$(uid_of "$NS_KEEP" service/web)" "$(uid_of "$NS_KEEP" secret/plain)" \
		"$(kc get namespace "$NS_KEEP" -o jsonpath='{.metadata.uid}')"
}
plain_before=$(keep_uids)
del_keep_uid=$(uid_of "$NS_DEL" configmap/keep)
del_ns_uid=$(kc get namespace "$NS_DEL" -o jsonpath='{.metadata.uid}')

# The three apps leave the config.
config "$tmp/run.yaml" none
from=$(($(wc -l <"$log") + 1))
k8s_audit_mark
kill -HUP "$syncd_pid"
removed_re='msg="app removed, its objects deleted" app=argocd .*counts="pruned=6 kept=2 failed=0"'
removed() { tail -n "+$from" "$log" | grep -qE "$removed_re"; }
if wait_for 60 removed; then
	ok "SIGHUP without the apps: argocd's removal is logged (pruned=6 kept=2 failed=0)"
else
	not_ok "SIGHUP without the apps: argocd's removal is logged"
	show_log
fi
expect_match 'msg="config reloaded" .*apps="added=0 removed=3 changed=0 unchanged=0"' \
	"$(tail -n "+$from" "$log")" "the reload removes the three apps"
del_gone() {
	[ "$(argocd_members "$NS_DEL")" = "ConfigMap/keep " ] &&
		absent "$NS_DEL" deployment/argocd-server
}
if wait_for 30 del_gone; then
	ok "deletionPolicy: delete: the app's 6 objects are gone from the API server"
else
	not_ok "deletionPolicy: delete: the app's objects are gone: $(argocd_members "$NS_DEL")"
fi
expect_eq "$(uid_of "$NS_DEL" configmap/keep)" "$del_keep_uid" \
	"... but not the one annotated syncd.io/prune: disabled"
expect_eq "$(kc get namespace "$NS_DEL" -o jsonpath='{.metadata.uid} {.status.phase}')" \
	"$del_ns_uid Active" "... nor the Namespace (a protected kind)"
expect_eq "$(applyset_id "$NS_DEL" argocd | grep -c '^applyset-')" 1 \
	"the inventory stays while objects of it are kept"
expect_eq "$(tail -n "+$from" "$log" | grep -c 'msg="app removed.* app=plain')" 0 \
	"deletionPolicy: orphan (the default): nothing deleted for app plain, nothing logged"
sleep 2
expect_eq "$(keep_uids)|$(get "$NS_KEEP" configmap/settings '{.data.value}')" \
	"$plain_before|blue" "app plain's objects, inventory and Namespace stay (same uids)"
# pruneAllowKinds: [Namespace]: nothing is kept, the Namespace goes
# after what is in it, then the inventory.
expect_match 'msg="app removed, its objects deleted" app=gone .*counts="pruned=2 kept=0 failed=0"' \
	"$(tail -n "+$from" "$log")" "app gone (pruneAllowKinds: [Namespace]): pruned=2 kept=0 failed=0"
deletes() { # NS: syncd's DELETE requests in NS or of it, in order
	k8s_audit_barrier
	tail -n "+$k8s_audit_from" "$K8S_AUDIT" | jq -r --arg ns "$1" '
		select(.user.username == "syncd" and .verb == "delete" and
			.stage == "ResponseComplete" and
			(.objectRef.namespace == $ns or .objectRef.name == $ns)) |
		"\(.objectRef.resource)/\(.objectRef.name)"' | tr '\n' ' '
}
expect_eq "$(deletes "$NS_GONE")" "configmaps/settings namespaces/$NS_GONE secrets/gone " \
	"its deletes: the ConfigMap, then the Namespace, then the inventory (audit log)"
expect_eq "$(deletes "$NS_KEEP")" "" "no delete in app plain's namespace (audit log)"
if wait_for 90 absent "" "namespace/$NS_GONE"; then
	ok "app gone's Namespace is deleted"
else
	not_ok "app gone's Namespace is deleted: $(kc get namespace "$NS_GONE" -o jsonpath='{.status.phase}' 2>&1)"
fi
term_wait "$syncd_pid" 40
expect_eq "$rc" 0 "SIGTERM: syncd run exits 0"
finish
