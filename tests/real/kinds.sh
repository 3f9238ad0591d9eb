#!/usr/bin/env bash
# One object of each built-in kind syncd has a schema for
# (tests/real/kinds/objects.yaml: every workload kind with a pod
# template, with probes, env sources, projected volumes, volume claim
# templates; Services of every type; Ingress and IngressClass,
# NetworkPolicy, PDB, HPA v2, PV and PVC, RBAC, quotas, a PriorityClass,
# a StorageClass, a RuntimeClass, an EndpointSlice, a Lease, both webhook
# configurations), as people write them, and a custom resource whose CRD
# defaults fields inside atomic values (tests/real/kinds/crd-defaults.yaml),
# against the real server with its controllers running: after one sync
# syncd finds every object InSync, with the local model alone
# (--verify off) too, and a second sync writes nothing.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
real_need "common kinds on the real server"

app=tests/real/kinds
A=(--app syncd-kinds)
ns_gone syncd-kinds
nobj=$("$SYNCD" render -o json "$app" | jq '.items | length')
S sync "${A[@]}" "$app"
expect_eq "$rc $(tail -n 1 "$tmp/.out")" \
	"0 $((nobj + 1)) applied, 0 unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"the first sync applies all $nobj objects"
# Controllers act on them meanwhile (the StatefulSet's and Deployment's
# Pods, the Job's run, the HPA's status): what they change is not ours.
sleep 3
k8s_audit_mark
S diff "${A[@]}" -o json "$app"
printf '%s' "$out" >"$tmp/d.json"
expect_eq "$rc $(jq -r '[.objects[] | select(.state != "InSync") | "\(.kind)/\(.name)"] | join(" ")' "$tmp/d.json")" \
	"0 " "every object InSync after the sync"
jq -r '.objects[] | select(.state != "InSync") | .fields[] | "    \(.path): \(.change)"' "$tmp/d.json"
expect_eq "$(syncd_dry_runs)" 0 "nothing doubted, so no dry run"
# The local model alone: what the server stores, known without asking it.
S diff "${A[@]}" --verify off -o json "$app"
printf '%s' "$out" >"$tmp/off.json"
expect_eq "$rc $(jq -r '[.objects[] | select(.state != "InSync") | "\(.kind)/\(.name)"] | join(" ")' "$tmp/off.json")" \
	"0 " "--verify off (the local model alone): every object InSync"
jq -r '.objects[] | select(.state != "InSync") | .fields[] | "    \(.path): \(.change)"' "$tmp/off.json"
before=$(rvs syncd-kinds services configmaps secrets serviceaccounts roles rolebindings \
	resourcequotas limitranges networkpolicies ingresses poddisruptionbudgets \
	podtemplates leases)
k8s_audit_mark
S sync "${A[@]}" "$app"
expect_eq "$rc $(tail -n 1 "$tmp/.out")" \
	"0 0 applied, $((nobj + 1)) unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"the second sync finds every object unchanged"
expect_eq "$(syncd_writes)" 0 "the second sync sends no write (audit log)"
expect_eq "$(rvs syncd-kinds services configmaps secrets serviceaccounts roles rolebindings \
	resourcequotas limitranges networkpolicies ingresses poddisruptionbudgets \
	podtemplates leases)" \
	"$before" "resourceVersions of the status-less objects unchanged"

# The EndpointSlice controller copies each Service's labels, the app's
# part-of label among them, onto the slices it makes: they are not the
# app's (the label is owned by the controller's Update), so neither
# orphans nor pruned.
copies=$(kc -n syncd-kinds get endpointslices -o json | jq '[.items[] |
	select(.metadata.name != "manual" and
	.metadata.labels["applyset.kubernetes.io/part-of"] != null)] | length')
S sync --prune "${A[@]}" "$app"
expect_eq "$([ "$copies" -ge 4 ] && echo copies) $rc $(tail -n 1 "$tmp/.out")" \
	"copies 0 0 applied, $((nobj + 1)) unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"the controller's EndpointSlices carry the app's label ($copies) and are no orphans: sync --prune deletes nothing"

"$SYNCD" render -o json "$app" | kc delete -f - --wait=false >/dev/null 2>&1
finish
