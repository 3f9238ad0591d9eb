#!/usr/bin/env bash
# One object of each common built-in kind (tests/real/kinds/objects.yaml:
# workloads with probes, env sources, projected volumes, volume claim
# templates; Services of every type; Ingress, NetworkPolicy, PDB, HPA,
# PVC, RBAC, quotas, a PriorityClass and a StorageClass), as people write
# them, and a custom resource whose CRD defaults fields inside atomic
# values (tests/real/kinds/crd-defaults.yaml), against the real server:
# after one sync syncd finds every object InSync, and a second sync
# writes nothing.
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
S diff "${A[@]}" -o json "$app"
printf '%s' "$out" >"$tmp/d.json"
expect_eq "$rc $(jq -r '[.objects[] | select(.state != "InSync") | "\(.kind)/\(.name)"] | join(" ")' "$tmp/d.json")" \
	"0 " "every object InSync after the sync"
jq -r '.objects[] | select(.state != "InSync") | .fields[] | "    \(.path): \(.change)"' "$tmp/d.json"
before=$(rvs syncd-kinds services configmaps secrets serviceaccounts roles rolebindings \
	resourcequotas limitranges networkpolicies ingresses poddisruptionbudgets)
k8s_audit_mark
S sync "${A[@]}" "$app"
expect_eq "$rc $(tail -n 1 "$tmp/.out")" \
	"0 0 applied, $((nobj + 1)) unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"the second sync finds every object unchanged"
expect_eq "$(syncd_writes)" 0 "the second sync sends no write (audit log)"
expect_eq "$(rvs syncd-kinds services configmaps secrets serviceaccounts roles rolebindings \
	resourcequotas limitranges networkpolicies ingresses poddisruptionbudgets)" \
	"$before" "resourceVersions of the status-less objects unchanged"

"$SYNCD" render -o json "$app" | kc delete -f - --wait=false >/dev/null 2>&1
finish
