#!/usr/bin/env bash
# syncd sync and syncd diff against the real kube-apiserver 1.36, with its
# controllers running: the examples, kube-prometheus (131 objects,
# CRD-first) and podinfo (the real kustomize) converge; after a sync,
# syncd diff finds every object InSync, with no dry run and with the
# local model alone (--verify off) too, and a second sync writes nothing
# (the audit log shows no write by user "syncd"; resourceVersions are
# unchanged); a `kubectl edit` and a `kubectl scale`, a label, an
# annotation, a value inside an atomic list and a removed list item are
# each reported on exactly the mutated field with the manager the real
# server records, and healed; a real HPA's replicas
# are foreign and left alone; prune deletes exactly what left the app; a
# 422 from real validation fails that object only.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
real_need "syncd sync/diff on the real control plane"

KUSTOMIZE=$K8S_BIN/kustomize

# states FILE: "Kind name State" per object of a -o json report.
states() {
	jq -r '.objects[] | "\(.kind) \(.name) \(.state)"' "$1" | sort
}
# not_in_sync FILE: the objects that are not InSync, with their fields.
not_in_sync() {
	jq -r '.objects[] | select(.state != "InSync") |
		"\(.kind) \(.namespace)/\(.name) \(.state): \([.fields[].path] | join(" "))"' "$1"
}

ns_gone guestbook monitoring podinfo syncd team-a
# Inventories an earlier run on this cluster may have left.
kc -n default delete secret guestbook kube-prometheus --ignore-not-found >/dev/null

# --- guestbook: created, in sync, a second sync writes nothing --------
G=(--app guestbook)
S sync "${G[@]}" examples/guestbook
nobj=$("$SYNCD" render -o json examples/guestbook | jq '.items | length')
expect_eq "$rc $(tail -n 1 "$tmp/.out")" \
	"0 $((nobj + 1)) applied, 0 unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"guestbook: the first sync applies every object and the inventory"
S diff "${G[@]}" --verify off -o json examples/guestbook
printf '%s' "$out" >"$tmp/gb.json"
expect_eq "$rc $(not_in_sync "$tmp/gb.json")" "0 " \
	"guestbook: syncd diff --verify off after the sync: every object InSync"
# The Deployments really run: kwok's nodes make their Pods Ready.
if wait_for 60 kc -n guestbook wait --for=condition=Available --timeout=1s \
	deployment/frontend deployment/redis; then
	ok "guestbook: both Deployments become Available on the fake nodes"
else
	not_ok "guestbook: both Deployments become Available on the fake nodes"
	kc -n guestbook get deploy,pods -o wide 2>&1 | sed 's/^/    /'
fi
before=$(rvs guestbook deployments services)
k8s_audit_mark
S sync "${G[@]}" examples/guestbook
expect_eq "$rc $(tail -n 1 "$tmp/.out")" \
	"0 0 applied, $((nobj + 1)) unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"guestbook: the second sync finds everything unchanged"
expect_eq "$(syncd_writes)" 0 "guestbook: the second sync sends no write (audit log)"
expect_eq "$(rvs guestbook deployments services)" "$before" \
	"guestbook: resourceVersions unchanged (once the rollout is done)"

# --- examples/deploy: syncd's own manifests (kustomize) ------------------
# Both variants, with the real kustomize: in sync after one sync, nothing
# written by the next. (The in-cluster run itself is tests/real/incluster.sh.)
kc create namespace team-a >/dev/null
for ex in deploy:syncd deploy/namespaced:team-a; do
	ns=${ex#*:}
	ex=${ex%:*}
	E=(--app "syncd-example-${ex//\//-}" -n "$ns" --kustomize-bin "$K8S_BIN/kustomize")
	S sync "${E[@]}" "examples/$ex"
	expect_rc 0 "examples/$ex: sync exit 0"
	S diff "${E[@]}" --verify off -o json "examples/$ex"
	printf '%s' "$out" >"$tmp/ex.json"
	expect_eq "$rc $(not_in_sync "$tmp/ex.json")" "0 " \
		"examples/$ex: every object InSync after the sync (--verify off)"
	k8s_audit_mark
	S sync "${E[@]}" "examples/$ex"
	expect_eq "$rc $(syncd_writes)" "0 0" "examples/$ex: a second sync writes nothing"
	"$SYNCD" render --kustomize-bin "$K8S_BIN/kustomize" -o json "examples/$ex" |
		kc delete -f - --wait=false >/dev/null 2>&1
done
kc delete namespace team-a --wait=false >/dev/null 2>&1

# --- kube-prometheus: 131 objects, CRDs first ----------------------------
app=$tmp/kube-prometheus
if [ ! -d "$FIXTURES/kube-prometheus" ]; then
	ok "$FIXTURES is absent: the kube-prometheus and podinfo checks skipped"
	finish
fi
cp -R "$FIXTURES/kube-prometheus/manifests" "$app"
chmod -R u+w "$app"
K=(--app kube-prometheus)
nobj=$("$SYNCD" render -o json "$app" | jq '.items | length')
S sync "${K[@]}" "$app"
expect_eq "$rc $(tail -n 1 "$tmp/.out")" \
	"0 $((nobj + 1)) applied, 0 unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"kube-prometheus: the first sync applies all $nobj objects and the inventory"
last_crd=$(grep -n '^CustomResourceDefinition' "$tmp/.out" | tail -n 1 | cut -d: -f1)
first_cr=$(grep -n '\.monitoring\.coreos\.com ' "$tmp/.out" | head -n 1 | cut -d: -f1)
expect_eq "$([ "${last_crd:-99999}" -lt "${first_cr:-0}" ] && echo ordered)" \
	ordered "kube-prometheus: every CRD is applied before any custom resource"
expect_eq "$(kc -n monitoring get servicemonitors -o name | wc -l)" \
	"$(grep -l '^kind: ServiceMonitor' "$app"/*.yaml | wc -l)" \
	"kube-prometheus: every ServiceMonitor is stored"
k8s_audit_mark
S diff "${K[@]}" -o json "$app"
printf '%s' "$out" >"$tmp/kp.json"
expect_eq "$rc $(jq '[.objects[] | select(.state == "InSync")] | length' "$tmp/kp.json")" \
	"0 $((nobj + 1))" \
	"kube-prometheus: syncd diff after the sync: all $nobj objects and the inventory InSync"
not_in_sync "$tmp/kp.json" | head -n 10 | sed 's/^/    /'
expect_eq "$(syncd_dry_runs)" 0 \
	"kube-prometheus: nothing doubted, so no dry run (zero requests per object)"
# The local model alone, without asking the server anything.
S diff "${K[@]}" --verify off -o json "$app"
printf '%s' "$out" >"$tmp/kp-off.json"
expect_eq "$rc $(not_in_sync "$tmp/kp-off.json" | wc -l)" "0 0" \
	"kube-prometheus: --verify off (the local model alone): every object InSync"
not_in_sync "$tmp/kp-off.json" | head -n 10 | sed 's/^/    /'

kinds=(configmaps secrets services serviceaccounts roles rolebindings
	networkpolicies poddisruptionbudgets servicemonitors prometheusrules
	prometheuses alertmanagers)
before=$(rvs monitoring "${kinds[@]}")
before_crds=$(kc get crd -o json | jq -r '.items[] | select(.spec.group == "monitoring.coreos.com") | "\(.metadata.name)=\(.metadata.resourceVersion)"')
k8s_audit_mark
S sync "${K[@]}" "$app"
expect_eq "$rc $(tail -n 1 "$tmp/.out")" \
	"0 0 applied, $((nobj + 1)) unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"kube-prometheus: the second sync finds every object unchanged"
expect_eq "$(syncd_writes)" 0 \
	"kube-prometheus: the second sync sends no write (audit log)"
expect_eq "$(rvs monitoring "${kinds[@]}")" "$before" \
	"kube-prometheus: resourceVersions unchanged (${#kinds[@]} kinds)"
expect_eq "$(kc get crd -o json | jq -r '.items[] | select(.spec.group == "monitoring.coreos.com") | "\(.metadata.name)=\(.metadata.resourceVersion)"')" \
	"$before_crds" "kube-prometheus: the CRDs' resourceVersions unchanged"
# Workloads have status writers (their controllers): their spec, and
# syncd's own managedFields entry, stay as they were.
gens() {
	kc -n monitoring get deployments,daemonsets --show-managed-fields -o json | jq -r '.items[] |
		"\(.kind)/\(.metadata.name) \(.metadata.generation) \(.metadata.managedFields[] | select(.manager == "syncd") | .time)"' | sort
}
gen_before=$(gens)
S sync "${K[@]}" "$app"
expect_eq "$(gens)" "$gen_before" \
	"kube-prometheus: a third sync leaves the workloads' generation and syncd's entry alone"

# --- drift: kubectl edit and kubectl scale, as the real kubectl does them -
D=deployment/grafana
want_image=$(kc -n monitoring get "$D" -o jsonpath='{.spec.template.spec.containers[0].image}')
KUBE_EDITOR="sed -i s#image:\ grafana/grafana:.*#image:\ grafana/grafana:edited#" \
	EDITOR=false kc -n monitoring edit "$D" >/dev/null 2>&1
expect_eq "$(kc -n monitoring get "$D" -o jsonpath='{.spec.template.spec.containers[0].image}')" \
	grafana/grafana:edited "kubectl edit changes grafana's image"
kc -n monitoring scale "$D" --replicas=3 >/dev/null
S diff "${K[@]}" -o json "$app"
expect_rc 1 "kube-prometheus: diff after the edit and the scale: exit 1"
printf '%s' "$out" >"$tmp/drift.json"
obj=$(jq -c '.objects[] | select(.kind == "Deployment" and .name == "grafana")' "$tmp/drift.json")
expect_eq "$(printf '%s' "$obj" | jq -r '.state, (.fields[] |
	select(.path == ".spec.template.spec.containers[name=\"grafana\"].image") |
	"\(.live) \(.managers[0].manager) \(.managers[0].kind) \(.managers[0].operation)")')" \
	$'Drifted\ngrafana/grafana:edited kubectl-edit person Update' \
	"the edited image: Drifted, changed by kubectl-edit (a person)"
scale_mgr=$(kc -n monitoring get "$D" --show-managed-fields -o json | jq -r '
	.metadata.managedFields[] | select(.subresource == "scale") | .manager')
expect_eq "$(printf '%s' "$obj" | jq -r '.fields[] | select(.path == ".spec.replicas") |
	"\(.live) \(.managers[0].manager) \(.managers[0].kind) \(.managers[0].subresource // "")"')" \
	"3 $scale_mgr person scale" \
	"kubectl scale: .spec.replicas drifted, owned by $scale_mgr on /scale (a person)"
expect_eq "$(jq '[.objects[] | select(.state != "InSync")] | length' "$tmp/drift.json")" 1 \
	"only grafana drifted"
S sync "${K[@]}" "$app"
expect_match '^Deployment\.apps monitoring/grafana: configured' "$out" \
	"sync heals grafana"
expect_eq "$(kc -n monitoring get "$D" -o jsonpath='{.spec.template.spec.containers[0].image} {.spec.replicas}')" \
	"$want_image $(jq -r '.spec.replicas // 1' <("$SYNCD" render -o json "$app/grafana-deployment.yaml" | jq '.items[0]'))" \
	"the image and the replicas are taken back"
S diff "${K[@]}" "$app"
expect_rc 0 "after healing: syncd diff exit 0"

# --- more mutations, each reported on exactly the mutated fields ----------
# One at a time on kube-state-metrics, then healed: the Drifted object, its
# differing fields and the manager the real server records for each.
KSM=deployment/kube-state-metrics
mutation() { # DESC WANT: after the change was made
	S diff "${K[@]}" -o json "$app"
	printf '%s' "$out" >"$tmp/m.json"
	expect_eq "$rc $(jq -r '[.objects[] | select(.state != "InSync") |
		"\(.kind)/\(.name)", (.fields[] | "\(.path) \(.change) \(.managers[0].manager // "-")")] | join("; ")' "$tmp/m.json")" \
		"1 Deployment/kube-state-metrics; $2" "$1: reported on exactly that field"
	S sync "${K[@]}" "$app"
	S diff "${K[@]}" "$app"
	expect_rc 0 "$1: healed by a sync"
}
kc -n monitoring label "$KSM" app.kubernetes.io/version=edited --overwrite >/dev/null
mutation "kubectl label of a declared label" \
	'.metadata.labels.app.kubernetes.io/version changed kubectl-label'
kc -n monitoring patch "$KSM" --type=json -p '[{"op":"replace","path":"/spec/template/metadata/annotations/kubectl.kubernetes.io~1default-container","value":"kube-rbac-proxy-main"}]' >/dev/null
mutation "kubectl patch of a declared annotation" \
	'.spec.template.metadata.annotations.kubectl.kubernetes.io/default-container changed kubectl-patch'
kc -n monitoring patch "$KSM" --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/args/1","value":"--port=9999"}]' >/dev/null
mutation "a value changed inside an atomic list (args)" \
	'.spec.template.spec.containers[name="kube-state-metrics"].args changed kubectl-patch'
kc -n monitoring patch "$KSM" --type=json -p '[{"op":"remove","path":"/spec/template/spec/containers/1/ports/0"}]' >/dev/null
# (its only port: the server keeps no empty list, so .ports is gone)
mutation "a list item removed (a container's only port)" \
	'.spec.template.spec.containers[name="kube-rbac-proxy-main"].ports absent -'

# --- a real HPA owns replicas: foreign, left alone -------------------------
# podinfo, rendered by the real kustomize, with replicas declared (the
# fixture leaves them to the HPA): the HPA controller raises them to its
# minReplicas through /scale.
pod=$tmp/podinfo
mkdir -p "$pod/base"
cp "$FIXTURES"/podinfo-kustomize/*.yaml "$pod/base/"
chmod -R u+w "$pod"
cat >"$pod/kustomization.yaml" <<'EOF'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: podinfo
resources:
  - namespace.yaml
  - base
patches:
  - target: {kind: Deployment, name: podinfo}
    patch: |
      - op: add
        path: /spec/replicas
        value: 1
EOF
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: podinfo\n' >"$pod/namespace.yaml"
P=(--app podinfo --kustomize-bin "$KUSTOMIZE")
"$KUSTOMIZE" build "$pod" >"$tmp/kustomize.yaml"
run_syncd render "${P[@]:2}" -o yaml "$pod"
expect_eq "$rc $(printf '%s\n' "$out" | grep -c '^kind: ')" \
	"0 $(grep -c '^kind: ' "$tmp/kustomize.yaml")" \
	"podinfo: syncd renders what the real kustomize builds"
S sync "${P[@]}" "$pod"
expect_rc 0 "podinfo: sync exit 0"
podinfo_replicas() {
	[ "$(kc -n podinfo get deployment podinfo -o jsonpath='{.spec.replicas}')" = "$1" ]
}
if wait_for 60 podinfo_replicas 2; then
	ok "podinfo: the real HPA scales the Deployment to its minReplicas (2)"
else
	not_ok "podinfo: the real HPA scales the Deployment to its minReplicas (2)"
	kc -n podinfo describe hpa podinfo 2>&1 | tail -n 15 | sed 's/^/    /'
fi
S diff "${P[@]}" -o json "$pod"
expect_eq "$rc $(printf '%s' "$out" | jq -r '.objects[] | select(.kind == "Deployment") |
	"\(.state) \(.fields[] | "\(.path) \(.owner) \(.managers[0].manager) \(.managers[0].subresource)")"')" \
	"0 Foreign .spec.replicas foreign kube-controller-manager scale" \
	"podinfo: replicas are Foreign, owned by kube-controller-manager on /scale; diff exit 0"
k8s_audit_mark
S sync "${P[@]}" "$pod"
expect_eq "$rc $(syncd_writes) $(kc -n podinfo get deployment podinfo -o jsonpath='{.spec.replicas}')" \
	"0 0 2" "podinfo: sync leaves the HPA's replicas alone and writes nothing"

# --- prune -------------------------------------------------------------------
before=$(rvs monitoring configmaps secrets serviceaccounts services networkpolicies | grep -v '^services/grafana=')
rm "$app/grafana-service.yaml"
S sync "${K[@]}" "$app"
expect_match 'Service monitoring/grafana: orphan, kept' "$out" \
	"without --prune the orphan is kept and named"
S sync --prune "${K[@]}" "$app"
expect_eq "$rc $(grep -c ': pruned$' "$tmp/.out")" "0 1" "sync --prune: one object pruned"
expect_eq "$(kc -n monitoring get service grafana -o name 2>&1)" \
	'Error from server (NotFound): services "grafana" not found' \
	"the removed Service is deleted"
expect_eq "$(rvs monitoring configmaps secrets serviceaccounts services networkpolicies | grep -v '^secrets/kube-prometheus=')" \
	"$(printf '%s\n' "$before" | grep -v '^secrets/kube-prometheus=')" \
	"prune touches no other object"
# The APIService of kube-prometheus has no backend here: while it is
# there the namespace controller cannot delete namespaces (discovery of
# metrics.k8s.io fails). Pruned as an orphan of a kind no longer desired.
rm "$app/prometheusAdapter-apiService.yaml"
S sync --prune "${K[@]}" "$app"
expect_match 'APIService\.apiregistration\.k8s\.io v1beta1\.metrics\.k8s\.io: pruned' \
	"$out" "an orphan of a kind the app no longer has is pruned"

# --- a 422 from the real validation fails that object only ------------------
sed -i 's|^\(  *\)image: grafana/grafana:.*|\1image: grafana/grafana:v0.0.2|' \
	"$app/grafana-deployment.yaml"
cat >"$app/zz-invalid.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: Not_A_Valid_Name
  namespace: monitoring
EOF
S sync "${K[@]}" "$app"
expect_rc 1 "an invalid object: exit 1"
expect_match '^  ConfigMap monitoring/Not_A_Valid_Name: .*(Invalid|422)' "$out" \
	"the failure names the object and the server's reason"
expect_eq "$(kc -n monitoring get "$D" -o jsonpath='{.spec.template.spec.containers[0].image}')" \
	grafana/grafana:v0.0.2 "the other objects are applied"
rm "$app/zz-invalid.yaml"

# --- clean up what is cluster-wide (the cluster is shared) ----------------
"$SYNCD" render -o json "$app" | kc delete -f - --wait=false >/dev/null 2>&1
"$SYNCD" render -o json examples/guestbook | kc delete -f - --wait=false >/dev/null 2>&1
kc delete namespace podinfo --wait=false >/dev/null 2>&1
kc -n default delete secret guestbook kube-prometheus --ignore-not-found >/dev/null
finish
