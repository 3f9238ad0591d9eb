#!/usr/bin/env bash
# syncd diff and syncd sync against a cluster: kube-emu with TLS and a
# token. kube-prometheus converges in one pass (CRDs before their CRs), a
# second pass writes nothing, drift by an HPA and by kubectl edit is
# reported and healed as the policy says, prune deletes exactly the
# object removed from the app (within its budget, never protected
# kinds), a 422 on one object does not stop the others, 503s are
# retried, --dry-run stores nothing, --server-side diffs what the server
# would store. Outcomes are read back with curl (objects,
# resourceVersions, /emu/stats). Loopback only; every wait is bounded;
# the emulator is killed on exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"

for tool in curl jq openssl; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		ok "$tool not installed: cluster checks skipped"
		finish
	fi
done
if [ ! -x "$EMU" ] || [ ! -x "$SYNCD" ]; then
	not_ok "$EMU or $SYNCD not built"
	finish
fi

emu_start_tls

# rvs: "kind/ns/name=resourceVersion" of every object of the app.
rvs() {
	local r
	for r in api/v1/namespaces api/v1/configmaps api/v1/services \
		api/v1/serviceaccounts api/v1/secrets apis/apps/v1/deployments \
		apis/apps/v1/daemonsets \
		apis/rbac.authorization.k8s.io/v1/clusterroles \
		apis/rbac.authorization.k8s.io/v1/rolebindings \
		apis/networking.k8s.io/v1/networkpolicies \
		apis/apiextensions.k8s.io/v1/customresourcedefinitions \
		apis/monitoring.coreos.com/v1/servicemonitors \
		apis/monitoring.coreos.com/v1/prometheusrules; do
		api GET "/$r"
		printf '%s' "$body" | jq -r '.items[] |
			"\(.metadata.namespace // "")/\(.metadata.name)=\(.metadata.resourceVersion)"' |
			sed "s|^|$r:|"
	done
}
# store_rv: the store's resourceVersion (any write raises it).
store_rv() {
	api GET /api/v1/namespaces
	printf '%s' "$body" | jq -r .metadata.resourceVersion
}

# --- a small app: created, then a second pass writes nothing ---------
G=(--kubeconfig "$tmp/kc" --app guestbook)
run_syncd sync "${G[@]}" examples/guestbook
expect_eq "$rc $(tail -n 1 "$tmp/.out")" \
	"0 $(($("$SYNCD" render -o json examples/guestbook | jq '.items | length') + 1)) applied, 0 unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"guestbook: first sync applies every object and the inventory"
store_before=$(store_rv)
reset_stats
run_syncd sync "${G[@]}" examples/guestbook
expect_eq "$rc $(count patch '*') $(store_rv)" "0 0 $store_before" \
	"guestbook: second sync sends no PATCH and writes nothing"
run_syncd diff "${G[@]}" examples/guestbook
expect_rc 0 "guestbook: syncd diff after sync: exit 0"

# --- errors --------------------------------------------------------------
run_syncd sync --kubeconfig "$tmp/nope" --app x examples/guestbook
expect_rc 2 "a missing kubeconfig: exit 2"
sed 's/token: T$/token: wrong/' "$tmp/kc" >"$tmp/kc-wrong"
run_syncd diff --kubeconfig "$tmp/kc-wrong" --app guestbook examples/guestbook
expect_eq "$rc $(printf '%s' "$errout" | grep -c '401')" "2 1" \
	"a wrong token: exit 2, one line naming the 401"
api POST /api/v1/namespaces/default/secrets application/json \
	'{"apiVersion":"v1","kind":"Secret","metadata":{"name":"taken"}}'
run_syncd sync --kubeconfig "$tmp/kc" --app taken examples/guestbook
expect_eq "$rc $(printf '%s' "$errout" | grep -c 'is not the inventory of app "taken"')" \
	"2 1" "a Secret of the app's name that is not its inventory: exit 2"

# --- an app never applied: its objects found by a LIST, not a GET each --
# 30 ConfigMaps of one namespace, 2 of them there already without the
# app's label: one unfiltered LIST of the namespace finds those 2 (and
# that the other 28 are missing) where 30 GETs were made. An app of 9
# objects there still GETs them. In a namespace of 5,500 other
# ConfigMaps (11 pages), the LIST stops after as many pages as it has
# objects to find (10) and GETs those.
cms() { # NAMESPACE PREFIX N: N ConfigMaps
	for i in $(seq -w 1 "$3"); do
		printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%s\n  namespace: %s\ndata:\n  k: v%s\n' \
			"$2" "$i" "$1" "$i"
	done
}
F=(--kubeconfig "$tmp/kc" --qps 5000 --burst 5000)
for ns in fresh crowded; do
	api POST /api/v1/namespaces application/json \
		"{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}"
done
mkdir -p "$tmp/fresh" "$tmp/few" "$tmp/crowd" "$tmp/among"
cms fresh f 30 >"$tmp/fresh/cms.yaml"
cms fresh few 9 >"$tmp/few/cms.yaml"
cms crowded c 5500 >"$tmp/crowd/cms.yaml"
cms crowded among 10 >"$tmp/among/cms.yaml"
for n in 05 17; do
	api POST /api/v1/namespaces/fresh/configmaps application/json \
		"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"f-$n\"},\"data\":{\"k\":\"other\"}}"
done
reset_stats
run_syncd diff -o json "${F[@]}" --app fresh "$tmp/fresh"
expect_rc 1 "a never-applied app: drift, exit 1"
expect_eq "$(jq -c '[.summary.missing, .summary.drifted]' "$tmp/.out")" \
	"[29,2]" "28 ConfigMaps and the inventory missing, the 2 already there drifted"
expect_eq "$(jq -r '.objects[] | select(.state == "Drifted") | .name' "$tmp/.out" | sort | tr '\n' ' ')" \
	"f-05 f-17 " "the two found by the LIST are the two already there"
expect_eq "$(count get configmaps) $(count list configmaps)" "0 3" \
	"the labelled LISTs (default, fresh) and one unfiltered, no GET of one"
reset_stats
run_syncd diff "${F[@]}" --app few "$tmp/few"
expect_eq "$rc $(count get configmaps 404) $(count list configmaps)" "1 9 2" \
	"9 objects to find: a GET each, the 2 labelled LISTs, no unfiltered one"
run_syncd sync "${F[@]}" --app crowd "$tmp/crowd"
expect_rc 0 "5,500 ConfigMaps of another app synced"
reset_stats
run_syncd diff "${F[@]}" --app among "$tmp/among"
expect_eq "$rc $(count list configmaps) $(count get configmaps 404)" \
	"1 12 10" \
	"among 5,500 others: 2 labelled LISTs, 10 pages of the unfiltered one, then 10 GETs"

stop_emu() {
	kill -TERM "$emu_pid"
	wait "$emu_pid"
	expect_eq "$?" 0 "kube-emu exits 0 on SIGTERM"
	pids=()
	finish
}
if ! have_fixtures; then
	skip_fixtures "kube-prometheus on kube-emu"
	stop_emu
fi

app=$tmp/kube-prometheus
cp -R "$FIXTURES/kube-prometheus/manifests" "$app"
chmod -R u+w "$app"
K=(--kubeconfig "$tmp/kc" --app kube-prometheus)
nobj=$("$SYNCD" render -o json "$app" | jq '.items | length')

# --- first sync: everything created, CRDs before their CRs ----------
reset_stats
run_syncd sync "${K[@]}" "$app"
expect_rc 0 "sync of kube-prometheus converges (exit 0)"
expect_match "^$((nobj + 1)) applied, 0 unchanged, 0 pruned" \
	"$(tail -n 1 "$tmp/.out")" \
	"first sync: every object plus the inventory Secret applied"
first_crd=$(grep -n '^CustomResourceDefinition' "$tmp/.out" | head -n 1 | cut -d: -f1)
last_crd=$(grep -n '^CustomResourceDefinition' "$tmp/.out" | tail -n 1 | cut -d: -f1)
first_cr=$(grep -n '\.monitoring\.coreos\.com ' "$tmp/.out" | head -n 1 | cut -d: -f1)
expect_eq "$([ "${last_crd:-99999}" -lt "${first_cr:-0}" ] && echo ordered)" \
	ordered "CRDs are applied before any custom resource"
expect_eq "$(sed -n 1p "$tmp/.out")" \
	"Secret default/kube-prometheus: created" \
	"the inventory Secret is applied first"
ns_line=$(grep -n '^Namespace monitoring: created' "$tmp/.out" | cut -d: -f1)
first_ns_obj=$(grep -n ' monitoring/' "$tmp/.out" | head -n 1 | cut -d: -f1)
expect_eq "$([ "${ns_line:-99999}" -lt "${first_ns_obj:-0}" ] &&
	[ "${first_crd:-99999}" -lt "${ns_line:-0}" ] && echo ordered)" ordered \
	"Namespace monitoring after the CRDs, before the objects in it"
api GET /apis/monitoring.coreos.com/v1/servicemonitors
expect_eq "$(printf '%s' "$body" | jq '.items | length')" \
	"$(grep -l '^kind: ServiceMonitor' "$app"/*.yaml | wc -l)" \
	"every ServiceMonitor is stored"
api GET /apis/apps/v1/namespaces/monitoring/deployments/grafana
expect_eq "$code $(printf '%s' "$body" | jq -r '.metadata.labels["applyset.kubernetes.io/part-of"]')" \
	"200 $(printf '%s' "$body" | jq -r '.metadata.labels["applyset.kubernetes.io/part-of"]' | grep '^applyset-.*-v1$')" \
	"members carry the applyset part-of label"
id=$(printf '%s' "$body" | jq -r '.metadata.labels["applyset.kubernetes.io/part-of"]')
api GET /api/v1/namespaces/default/secrets/kube-prometheus
expect_eq "$(printf '%s' "$body" | jq -r '.metadata.labels["applyset.kubernetes.io/id"]')" \
	"$id" "the inventory Secret has the applyset id label"
expect_match '^syncd/' \
	"$(printf '%s' "$body" | jq -r '.metadata.annotations["applyset.kubernetes.io/tooling"]')" \
	"the inventory Secret names its tooling"
expect_match '(^|,)Deployment\.apps,.*ServiceMonitor\.monitoring\.coreos\.com(,|$)' \
	"$(printf '%s' "$body" | jq -r '.metadata.annotations["applyset.kubernetes.io/contains-group-kinds"]')" \
	"contains-group-kinds lists the members' kinds"
expect_eq "$(printf '%s' "$body" | jq -r '.metadata.managedFields[].manager')" \
	syncd "applied as field manager syncd"
# The id is kubectl's: base64url(sha256("name.namespace.Secret.")).
want_id="applyset-$(printf 'kube-prometheus.default.Secret.' |
	openssl dgst -sha256 -binary | base64 | tr '+/' '-_' | tr -d '=')-v1"
expect_eq "$id" "$want_id" "the ApplySet id is the one kubectl computes"

# --- second sync: nothing written ------------------------------------
before=$(rvs)
store_before=$(store_rv)
reset_stats
run_syncd sync "${K[@]}" "$app"
expect_rc 0 "second sync: exit 0"
expect_eq "$(tail -n 1 "$tmp/.out")" \
	"0 applied, $((nobj + 1)) unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"second sync: every object unchanged"
expect_eq "$(count patch '*')" 0 "second sync: zero PATCH requests"
expect_eq "$(rvs)" "$before" "second sync: resourceVersions unchanged"
expect_eq "$(store_rv)" "$store_before" "second sync: nothing written at all"
run_syncd diff "${K[@]}" "$app"
expect_rc 0 "syncd diff after sync: exit 0 (no drift)"
reset_stats
run_syncd diff "${K[@]}" "$app"
api GET /emu/stats
expect_eq "$(printf '%s' "$body" | jq '[.requests[] | select(.verb == "get" and .resource != null) | .count] | add')" \
	1 "no-drift diff: the only object GET is the inventory Secret's"
api GET /api/v1/namespaces/default/secrets/kube-prometheus
ntypes=$(printf '%s' "$body" | jq -r '.metadata.annotations["applyset.kubernetes.io/contains-group-kinds"]' | tr ',' '\n' | wc -l)
nns=$(($(printf '%s' "$body" | jq -r '.metadata.annotations["applyset.kubernetes.io/additional-namespaces"]' | tr ',' '\n' | wc -l) + 1))
nlist=$(count list '*')
expect_eq "$([ "$nlist" -ge "$ntypes" ] && [ "$nlist" -le $((ntypes * nns)) ] && echo bounded)" \
	bounded "no-drift diff: at most one LIST per (resource type, namespace) ($nlist; $ntypes types, $nns namespaces)"
store_before=$(store_rv)
reset_stats
run_syncd diff --server-side "${K[@]}" "$app"
expect_rc 0 "syncd diff --server-side after sync: exit 0"
expect_eq "$(count patch '*')" "$((nobj + 1))" \
	"diff --server-side: one dry-run apply per object (and the inventory)"
expect_eq "$(store_rv)" "$store_before" "diff --server-side stores nothing"

# --- drift: an HPA scales, a person edits the image -------------------
D=/apis/apps/v1/namespaces/monitoring/deployments/grafana
api PATCH "$D/scale?fieldManager=kube-controller-manager" \
	application/merge-patch+json '{"spec":{"replicas":3}}'
expect_eq "$code" 200 "HPA-style /scale patch by kube-controller-manager"
api GET "$D"
want_image=$(printf '%s' "$body" | jq -r '.spec.template.spec.containers[0].image')
printf '%s' "$body" |
	jq '.spec.template.spec.containers[0].image = "grafana/grafana:edited"' \
		>"$tmp/edit.json"
api PUT "$D?fieldManager=kubectl-edit" application/json "$(cat "$tmp/edit.json")"
expect_eq "$code" 200 "kubectl edit-style update of the image"
run_syncd diff -o json "${K[@]}" "$app"
expect_rc 1 "diff after drift: exit 1"
obj=$(printf '%s' "$out" | jq -c '.objects[] | select(.kind == "Deployment" and .name == "grafana")')
expect_eq "$(printf '%s' "$obj" | jq -r '.fields[] | select(.path == ".spec.replicas") |
	"\(.owner) \(.managers[0].manager) \(.managers[0].kind)"')" \
	"foreign kube-controller-manager controller" \
	"replicas: Foreign, owned by kube-controller-manager"
expect_eq "$(printf '%s' "$obj" | jq -r '.state, (.fields[] |
	select(.path == ".spec.template.spec.containers[name=\"grafana\"].image") |
	"\(.live) \(.managers[0].manager) \(.managers[0].kind)")')" \
	$'Drifted\ngrafana/grafana:edited kubectl-edit person' \
	"image: Drifted, changed by kubectl-edit"
run_syncd sync "${K[@]}" "$app"
expect_rc 0 "sync after drift: exit 0"
api GET "$D"
expect_eq "$(printf '%s' "$body" | jq -r '"\(.spec.template.spec.containers[0].image) \(.spec.replicas)"')" \
	"$want_image 3" "sync restores the image and leaves the HPA's replicas"
expect_match '^Deployment\.apps monitoring/grafana: configured' "$out" \
	"sync reports the healed Deployment"
run_syncd sync "${K[@]}" "$app"
expect_eq "$rc $(grep -c '^Deployment.apps monitoring/grafana' "$tmp/.out")" \
	"0 0" "respecting the HPA: the next sync leaves grafana alone"
run_syncd sync --force-conflicts "${K[@]}" "$app"
expect_rc 0 "sync --force-conflicts: exit 0"
api GET "$D"
expect_eq "$(printf '%s' "$body" | jq -r '"\(.spec.replicas) \([.metadata.managedFields[].manager] | join(","))"')" \
	"$(jq -r '.spec.replicas // 1' <("$SYNCD" render -o json "$app/grafana-deployment.yaml" | jq '.items[0]')) syncd" \
	"--force-conflicts takes replicas back from kube-controller-manager"

# --- prune ------------------------------------------------------------
api GET /api/v1/namespaces/monitoring/services
svcs=$(printf '%s' "$body" | jq -r '[.items[].metadata.name] | sort | join(" ")')
before=$(rvs | grep -v '^api/v1/services:monitoring/grafana=' | grep -v '^api/v1/secrets:default/kube-prometheus=')
rm "$app/grafana-service.yaml"
run_syncd sync "${K[@]}" "$app"
expect_match 'Service monitoring/grafana: orphan, kept' "$out" \
	"without --prune an orphan is kept and named"
api GET /api/v1/namespaces/monitoring/services/grafana
expect_eq "$code" 200 "without --prune nothing is deleted"
run_syncd sync --prune "${K[@]}" "$app"
expect_rc 0 "sync --prune: exit 0"
expect_eq "$(grep -c ': pruned$' "$tmp/.out")" 1 "sync --prune: one object pruned"
api GET /api/v1/namespaces/monitoring/services/grafana
expect_eq "$code" 404 "the removed Service is deleted"
api GET /api/v1/namespaces/monitoring/services
expect_eq "$(printf '%s' "$body" | jq -r '[.items[].metadata.name] | sort | join(" ")')" \
	"$(printf '%s' "$svcs" | tr ' ' '\n' | grep -vx grafana | tr '\n' ' ' | sed 's/ $//')" \
	"prune deletes only that Service"
expect_eq "$(rvs | grep -v '^api/v1/secrets:default/kube-prometheus=')" \
	"$before" "prune touches no other object"

# A controller that copies labels (the EndpointSlice controller copies a
# Service's) makes objects with the app's part-of label that syncd never
# applied: the label is owned by an Update, so they are not orphans, and
# prune leaves them (the budget below counts exactly two).
api GET /api/v1/namespaces/monitoring/serviceaccounts/grafana
part_of=$(printf '%s' "$body" | jq -r '.metadata.labels["applyset.kubernetes.io/part-of"]')
api POST /api/v1/namespaces/monitoring/configmaps application/json \
	"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"copied-labels\",\"labels\":{\"applyset.kubernetes.io/part-of\":\"$part_of\"}}}"
expect_eq "$code" 201 "a ConfigMap with the app's label, written by another client"
run_syncd sync --prune "${K[@]}" "$app"
expect_eq "$rc $(grep -c 'copied-labels' "$tmp/.out")" "0 0" \
	"a copy of the app's label is no orphan: not named, not pruned"
api GET /api/v1/namespaces/monitoring/configmaps/copied-labels
expect_eq "$code" 200 "the ConfigMap with the copied label is still there"

# Over the budget: nothing pruned at all.
rm "$app/grafana-serviceAccount.yaml" "$app/grafana-networkPolicy.yaml"
run_syncd sync --prune --prune-budget 1 "${K[@]}" "$app"
expect_rc 1 "prune over the budget: exit 1"
expect_match 'prune: 2 objects to delete, over the budget of 1: nothing pruned' \
	"$out" "prune over the budget: a clear message"
api GET /api/v1/namespaces/monitoring/serviceaccounts/grafana
expect_eq "$code" 200 "prune over the budget deletes nothing"
# Protected kinds stay without --prune-allow-kind; a kind the app no
# longer has at all is found through the inventory's group-kinds.
rm "$app/setup/namespace.yaml" "$app/prometheusAdapter-apiService.yaml"
run_syncd sync --prune "${K[@]}" "$app"
expect_rc 0 "sync --prune with a protected orphan: exit 0"
expect_match 'Namespace monitoring: orphan, kept \(protected kind' "$out" \
	"a Namespace is never pruned unless allowed"
expect_match 'APIService\.apiregistration\.k8s\.io v1beta1\.metrics\.k8s\.io: pruned' \
	"$out" "an orphan of a kind no longer desired is pruned"
api GET /apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io
expect_eq "$code" 404 "the APIService is deleted"
api GET /api/v1/namespaces/default/secrets/kube-prometheus
gks=$(printf '%s' "$body" | jq -r '.metadata.annotations["applyset.kubernetes.io/contains-group-kinds"]')
expect_eq "$(printf '%s' "$gks" | tr ',' '\n' | grep -c -e '^APIService' -e '^Namespace$')" 1 \
	"the inventory drops the pruned kind and keeps the kept one"
api GET /api/v1/namespaces/monitoring/serviceaccounts/grafana
expect_eq "$code" 404 "within the budget the orphans are pruned"
api GET /api/v1/namespaces/monitoring
expect_eq "$code" 200 "the Namespace is still there"
cp "$FIXTURES/kube-prometheus/manifests/setup/namespace.yaml" "$app/setup/"

# --- a 422 on one object while the others apply ------------------------
sed -i 's|image: quay.io/prometheus/blackbox-exporter:.*|image: quay.io/prometheus/blackbox-exporter:v0.0.1|' \
	"$app/blackboxExporter-deployment.yaml"
sed -i 's|^\(  *\)image: grafana/grafana:.*|\1image: grafana/grafana:v0.0.2|' \
	"$app/grafana-deployment.yaml"
api POST /emu/faults text/plain 'verb=patch,resource=deployments.apps,name=grafana,code=422'
run_syncd sync "${K[@]}" "$app"
expect_rc 1 "a 422 on one object: exit 1"
expect_match 'failures:' "$out" "the summary lists the failures"
expect_match '^  Deployment\.apps monitoring/grafana: .*\(422 Invalid\)' "$out" \
	"the failure names the object and the API server's message"
expect_match '1 failed$' "$(grep ' failed$' "$tmp/.out")" "exactly one object failed"
api GET /apis/apps/v1/namespaces/monitoring/deployments/blackbox-exporter
expect_eq "$(printf '%s' "$body" | jq -r '.spec.template.spec.containers[] | select(.name == "blackbox-exporter") | .image')" \
	"quay.io/prometheus/blackbox-exporter:v0.0.1" "the other objects are applied"
api DELETE /emu/faults

# --- retries under 503 -------------------------------------------------
api POST /emu/faults text/plain \
	'verb=patch,resource=deployments.apps,dryRun=false,code=503,retryAfter=0,count=2;verb=list,resource=configmaps,code=503,retryAfter=0,count=1'
reset_stats
run_syncd sync "${K[@]}" "$app"
expect_rc 0 "sync under injected 503s: exit 0"
# (the dry run that confirms the drift first, untouched by the faults)
expect_eq "$(count patch deployments.apps 503) $(count patch deployments.apps 200)" \
	"2 2" "the apply was retried after two 503s"
expect_eq "$(count list configmaps 503)" 1 "the LIST was retried after a 503"
api GET "$D"
expect_eq "$(printf '%s' "$body" | jq -r '.spec.template.spec.containers[0].image')" \
	"grafana/grafana:v0.0.2" "the retried apply is stored"
api DELETE /emu/faults

# --- --dry-run stores nothing -------------------------------------------
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry-new\n  namespace: monitoring\ndata:\n  a: "1"\n' \
	>"$app/dry-new.yaml"
sed -i 's|^\(  *\)image: grafana/grafana:.*|\1image: grafana/grafana:v0.0.3|' \
	"$app/grafana-deployment.yaml"
rm "$app/grafana-config.yaml"
store_before=$(store_rv)
reset_stats
run_syncd sync --dry-run --prune "${K[@]}" "$app"
expect_rc 0 "sync --dry-run: exit 0"
expect_match 'ConfigMap monitoring/dry-new: created \(dry run\)' "$out" \
	"--dry-run reports what it would create"
expect_match 'Deployment\.apps monitoring/grafana: configured.*\(dry run\)' "$out" \
	"--dry-run reports what it would change"
expect_match 'Secret monitoring/grafana-config: pruned \(dry run\)' "$out" \
	"--dry-run reports what it would prune"
expect_eq "$(store_rv) $(count delete '*')" "$store_before 0" \
	"--dry-run stores nothing and deletes nothing"
api GET /api/v1/namespaces/monitoring/configmaps/dry-new
expect_eq "$code" 404 "--dry-run created nothing"

# --- a large app is read page by page, each page settled as it comes --
# 1,200 ConfigMaps are three pages of 500. The continue token of the
# first page expires once: the list starts over and the report is still
# whole, with no object twice and none lost.
big=$tmp/big
mkdir -p "$big"
for i in $(seq -w 1 1200); do
	printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big-%s\n  namespace: default\ndata:\n  k: v%s\n' \
		"$i" "$i"
done >"$big/cms.yaml"
B=(--kubeconfig "$tmp/kc" --app big --qps 5000 --burst 5000)
run_syncd sync "${B[@]}" "$big"
expect_rc 0 "1,200 ConfigMaps synced"
api PATCH "/api/v1/namespaces/default/configmaps/big-0600?fieldManager=kubectl-edit" \
	application/merge-patch+json '{"data":{"k":"edited"}}'
api DELETE /api/v1/namespaces/default/configmaps/big-1200
api POST /emu/faults text/plain 'verb=list,resource=configmaps,expire,count=1'
reset_stats
run_syncd diff -o json "${B[@]}" "$big"
expect_rc 1 "paged diff with an expired continue token: drift, exit 1"
expect_eq "$(jq -c '[.summary.objects, .summary.inSync, .summary.drifted, .summary.missing, .summary.orphan]' "$tmp/.out")" \
	"[1201,1199,1,1,0]" "every object reported once: 1,199 in sync (the inventory too), 1 drifted, 1 missing"
expect_eq "$(jq -r '.objects[] | select(.state != "InSync") | "\(.name) \(.state)"' "$tmp/.out" | sort | tr '\n' ' ')" \
	"big-0600 Drifted big-1200 Missing " "the edited and the deleted objects, no other"
expect_eq "$(jq '[.objects[].name] | unique | length' "$tmp/.out")" 1201 \
	"no object twice"
expect_eq "$(count list configmaps 410) $(count list configmaps 200)" "1 4" \
	"one expired token: page 1, then the list's 3 pages again"
api DELETE /emu/faults

stop_emu
