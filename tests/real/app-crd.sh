#!/usr/bin/env bash
# The App resource (examples/deploy/app-crd.yaml, docs/app-crd.md) and
# the RBAC rules for it, on the real kube-apiserver 1.36 with the real
# kubectl 1.36:
#  1. the CRD is applied and becomes Established;
#  2. the example App (examples/apps/web-app.yaml) is created; `kubectl
#     get apps.syncd.io` prints the columns READY HEALTH REVISION DRIFTED
#     AGE;
#  3. invalid Apps are refused, each with the server's message naming the
#     field: keys naming syncd's own files, variables or programs
#     (kubectl's strict field validation: "unknown field"), a missing
#     source.repo, bad enum values, bad durations, an options block for
#     another renderer, pruneBudget out of bounds, dependsOn names that are
#     not DNS labels or name the app itself, an upper-case
#     serviceAccountName, an ignore rule without pointers or managers, an
#     App name that is not a DNS label, decryption naming a key file or a
#     sops program, another provider than sops, or no secretRef; without strict validation an
#     unknown key is dropped, never stored;
#  4. the status subresource: a Ready=True condition written as the
#     service account of examples/deploy's ClusterRole makes `kubectl wait
#     --for=condition=Ready` succeed and READY show True; status is not
#     written through the main resource, nor spec through /status;
#  5. RBAC: the ClusterRole and the namespaced Role grant get/list/watch
#     on Apps, get/update/patch on apps/status, get on Secrets and
#     impersonate on serviceaccounts, and nothing more on Apps; a token of
#     the account really impersonates a service account of the App's
#     namespace (the server answers as that account) and not a user;
#  6. `kubectl apply --dry-run=server` accepts the example App, and the
#     kustomizations of examples/deploy (with the CRD) and
#     examples/deploy/namespaced.
# Only the API server is needed: alone, the script starts a bare one
# (etcd and kube-apiserver); under tests/run.sh it uses the tier's
# cluster. It removes the CRD (waiting until it is gone) and the
# cluster-wide RBAC objects it made, and its namespace.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! k8s_available; then
	ok "the real control plane is not built (make k8s): the App CRD checks skipped"
	finish
fi
if ! command -v jq >/dev/null 2>&1; then
	ok "jq not installed: the App CRD checks skipped"
	finish
fi

CRD=examples/deploy/app-crd.yaml
EXAMPLE=examples/apps/web-app.yaml
NS=real-app-crd
TEST_ROLE=syncd-app-crd-test
cleanup() {
	if [ -n "${K8S_DIR:-}" ]; then
		kc delete clusterrolebinding "$TEST_ROLE" --ignore-not-found >/dev/null 2>&1
		kc delete clusterrole "$TEST_ROLE" --ignore-not-found >/dev/null 2>&1
		kc delete namespace "$NS" --wait=false --ignore-not-found >/dev/null 2>&1
		# Other scripts apply examples/deploy (the CRD with it) on
		# a shared cluster: leave no terminating CRD behind.
		kc delete crd apps.syncd.io --ignore-not-found --timeout=60s >/dev/null 2>&1
	fi
	real_cleanup
}
trap cleanup EXIT

if [ -n "${K8S_ENV:-}" ]; then
	k8s_use || {
		not_ok "the tier's control plane is there"
		finish
	}
elif ! k8s_start --bare; then
	not_ok "a bare real kube-apiserver starts"
	finish
fi

crd_gone() { ! kc get crd apps.syncd.io >/dev/null 2>&1; }
crd_terminating() {
	[ -n "$(kc get crd apps.syncd.io -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null)" ]
}
# An earlier run's or script's CRD may still be going away.
if crd_terminating && ! wait_for 60 crd_gone; then
	not_ok "the CRD apps.syncd.io of an earlier run is still terminating after 60 s"
	finish
fi
fresh_ns "$NS"

# === 1. the CRD ===========================================================
if kc apply -f "$CRD" >"$tmp/crd.out" 2>"$tmp/crd.err" && ! [ -s "$tmp/crd.err" ]; then
	ok "kubectl apply -f $CRD: accepted, no warning"
else
	not_ok "kubectl apply -f $CRD: $(cat "$tmp/crd.out" "$tmp/crd.err")"
	finish
fi
if kc wait --for=condition=Established crd/apps.syncd.io --timeout=30s >/dev/null 2>"$tmp/wait.err"; then
	ok "the CRD apps.syncd.io is Established"
else
	not_ok "the CRD apps.syncd.io is Established: $(cat "$tmp/wait.err")"
	finish
fi
expect_eq "$(kc get crd apps.syncd.io -o json | jq -r '.status.acceptedNames |
	"\(.kind) \(.listKind) \(.plural) \(.singular) \(.shortNames | join(",")) \(.categories | join(","))"')" \
	"App AppList apps app sapp syncd" \
	"the names accepted: App, AppList, apps, app, short name sapp, category syncd"
expect_eq "$(kc api-resources --api-group=syncd.io --no-headers 2>&1 | tr -s ' ')" \
	"apps sapp syncd.io/v1alpha1 true App" \
	"discovery: apps, sapp, syncd.io/v1alpha1, namespaced, kind App"

# === 2. a valid App =======================================================
if kc apply -n "$NS" -f "$EXAMPLE" >"$tmp/ex.out" 2>"$tmp/ex.err"; then
	ok "the example App ($EXAMPLE) is created"
else
	not_ok "the example App is created: $(cat "$tmp/ex.err")"
fi
expect_eq "$(kc get apps.syncd.io -n "$NS" 2>&1 | awk 'NR == 1 {$1 = $1; print}')" \
	"NAME READY HEALTH REVISION DRIFTED AGE" \
	"kubectl get apps.syncd.io: the columns NAME READY HEALTH REVISION DRIFTED AGE"
expect_eq "$(kc get syncd -n "$NS" -o name 2>&1) $(kc get sapp web -n "$NS" -o name 2>&1)" \
	"app.syncd.io/web app.syncd.io/web" "kubectl get syncd (the category) and sapp (the short name) find it"
expect_eq "$(kc get app web -n "$NS" -o json | jq -c '[.spec.source.secretRef.name, .spec.serviceAccountName, .spec.render.vars.replicas, .metadata.generation]')" \
	'["web-git","web-deployer","3",1]' "the App is stored as written (secretRef, serviceAccountName, vars)"

# === 3. invalid Apps ======================================================
# refused TITLE SPEC WANT...: an App (named bad-N) with SPEC (YAML under
# spec:, indented two spaces) is refused by kubectl apply (exit not 0),
# its stderr holds every WANT, and no App of that name exists.
n=0
refused() {
	local title=$1 spec=$2 name miss= w
	shift 2
	n=$((n + 1))
	name=${NAME:-bad-$n}
	printf 'apiVersion: syncd.io/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n%s\n' \
		"$name" "$spec" >"$tmp/bad.yaml"
	kc apply -n "$NS" -f "$tmp/bad.yaml" >"$tmp/bad.out" 2>"$tmp/bad.err"
	rc=$?
	for w in "$@"; do
		grep -qF -- "$w" "$tmp/bad.err" || miss="$miss [$w]"
	done
	if [ "$rc" -ne 0 ] && [ -z "$miss" ] &&
		! kc get app "$name" -n "$NS" >/dev/null 2>&1; then
		ok "refused: $title"
	else
		not_ok "refused: $title (exit $rc; missing:$miss)"
		sed 's/^/    stderr: /' "$tmp/bad.err" | head -n 8
	fi
}

local_keys=(usernameFile passwordFile passwordEnv tokenFile tokenEnv caFile
	sshKeyFile sshPassphraseFile knownHostsFile verifySignatures)
src='  source:
    repo: https://git.example.com/platform/deploy.git'
wants=()
for k in "${local_keys[@]}"; do
	src="$src
    $k: x"
	wants+=("unknown field \"spec.source.$k\"")
done
refused "spec.source.passwordFile (strict field validation)" "  source:
    repo: https://git.example.com/platform/deploy.git
    passwordFile: /etc/shadow" \
	'strict decoding error: unknown field "spec.source.passwordFile"'
refused "every key of a source naming syncd's own files or variables, each named" \
	"$src" "${wants[@]}"
refused "render.varsFiles, render.kustomize, render.plugin and render.helm.bin, each named" "  source: {repo: x}
  render:
    varsFiles: [/etc/passwd]
    kustomize: {bin: /bin/sh}
    plugin: {command: /bin/sh}
    helm: {bin: /bin/sh}" \
	'unknown field "spec.render.varsFiles"' 'unknown field "spec.render.kustomize"' \
	'unknown field "spec.render.plugin"' 'unknown field "spec.render.helm.bin"'
refused "spec.name (the name is metadata.name)" "  name: web
  source: {repo: x}" 'unknown field "spec.name"'
refused "a missing source.repo" "  source:
    path: apps/web" 'spec.source.repo: Required value'
refused "a missing source" "  prune: true" 'spec.source: Required value'
refused "foreignFields: ignore" "  source: {repo: x}
  foreignFields: ignore" \
	'spec.foreignFields: Unsupported value: "ignore": supported values: "respect", "override", "report"'
refused "render.type: exec (no exec renderer in an App)" "  source: {repo: x}
  render: {type: exec}" 'spec.render.type: Unsupported value: "exec"'
refused "verify: false (only the strings dryRun and off)" "  source: {repo: x}
  verify: false" 'spec.verify: Invalid value: "boolean": spec.verify in body must be of type string'
refused "source.interval: 5 minutes (not a duration)" "  source: {repo: x, interval: 5 minutes}" \
	'spec.source.interval: Invalid value: "5 minutes": spec.source.interval in body should match'
refused "source.interval: 500ms (under 1s)" "  source: {repo: x, interval: 500ms}" \
	'spec.source.interval: Invalid value: "500ms": must be at least 1s and at most a year (8784h)'
refused "source.interval: 9000h (over a year)" "  source: {repo: x, interval: 9000h}" \
	'spec.source.interval: Invalid value: "9000h": must be at least 1s'
refused "render.timeout: 0" "  source: {repo: x}
  render: {timeout: \"0\"}" \
	'spec.render.timeout: Invalid value: "0": spec.render.timeout in body should match'
refused "render.helm with render.type kustomize" "  source: {repo: x}
  render:
    type: kustomize
    helm: {release: web}" \
	'spec.render.helm: Forbidden: only used with type helm (or auto)'
refused "render.directory with render.type jsonnet" "  source: {repo: x}
  render:
    type: jsonnet
    directory: {recurse: false}" \
	'spec.render.directory: Forbidden: only used with type directory (or auto)'
refused "render.helm.release of 54 characters" "  source: {repo: x}
  render:
    helm: {release: $(printf 'r%.0s' $(seq 54))}" \
	'spec.render.helm.release: Too long: may not be more than 53'
refused "pruneBudget: -1" "  source: {repo: x}
  pruneBudget: -1" \
	'spec.pruneBudget: Invalid value: -1: spec.pruneBudget in body should be greater than or equal to 0'
refused "pruneBudget: 1000001" "  source: {repo: x}
  pruneBudget: 1000001" \
	'spec.pruneBudget: Invalid value: 1000001: spec.pruneBudget in body should be less than or equal to 1000000'
refused "dependsOn: [db, Web_DB] (not a DNS label)" "  source: {repo: x}
  dependsOn: [db, Web_DB]" \
	'spec.dependsOn[1]: Invalid value: "Web_DB": spec.dependsOn[1] in body should match'
NAME=web2 refused "dependsOn naming the app itself" "  source: {repo: x}
  dependsOn: [db, web2]" 'spec.dependsOn: Invalid value: an app cannot depend on itself'
refused "serviceAccountName: Deployer (upper case)" "  source: {repo: x}
  serviceAccountName: Deployer" \
	'spec.serviceAccountName: Invalid value: "Deployer": spec.serviceAccountName in body should match'
refused "namespace: team_a (not a DNS label)" "  source: {repo: x}
  namespace: team_a" 'spec.namespace: Invalid value: "team_a": spec.namespace in body should match'
refused "an ignore rule without jsonPointers or managers" "  source: {repo: x}
  ignore: [{kind: ConfigMap}]" 'spec.ignore[0]: Invalid value: needs jsonPointers or managers'
refused "an ignore pointer not starting with /" "  source: {repo: x}
  ignore: [{jsonPointers: [spec/replicas]}]" \
	'spec.ignore[0].jsonPointers[0]: Invalid value: "spec/replicas"'
refused "a variable with an empty name" "  source: {repo: x}
  render: {vars: {\"\": x}}" 'spec.render.vars: Invalid value: empty name'
NAME=web.prod refused "metadata.name web.prod (apps are named by DNS labels)" "  source: {repo: x}" \
	'metadata.name: Invalid value: "web.prod": metadata.name in body should match'
refused "decryption.ageKeyFile and decryption.sopsBin (syncd's own files and programs)" "  source: {repo: x}
  decryption:
    provider: sops
    secretRef: {name: sops-age}
    ageKeyFile: /etc/keys.txt
    sopsBin: /bin/sh" \
	'unknown field "spec.decryption.ageKeyFile"' 'unknown field "spec.decryption.sopsBin"'
refused "decryption.provider: vault (sops only)" "  source: {repo: x}
  decryption: {provider: vault, secretRef: {name: sops-age}}" \
	'spec.decryption.provider: Unsupported value: "vault"'
refused "decryption without secretRef" "  source: {repo: x}
  decryption: {provider: sops}" 'spec.decryption.secretRef: Required value'
NAME=no-spec refused "an App without spec" "" 'spec: Required value'

# Without strict validation (--validate=false, older clients) the server
# drops what the schema does not know: such a key is never stored.
printf 'apiVersion: syncd.io/v1alpha1\nkind: App\nmetadata:\n  name: pruned\nspec:\n  source:\n    repo: x\n    passwordFile: /etc/shadow\n    tokenEnv: HOME\n' >"$tmp/pruned.yaml"
kc create --validate=false -n "$NS" -f "$tmp/pruned.yaml" >/dev/null 2>"$tmp/pruned.err"
expect_eq "$(kc get app pruned -n "$NS" -o json 2>&1 | jq -c '.spec')" '{"source":{"repo":"x"}}' \
	"--validate=false: passwordFile and tokenEnv are dropped by the server, never stored"
kc delete app pruned -n "$NS" >/dev/null 2>&1

# === 5 (first part). RBAC: examples/deploy's ClusterRole ==================
# A copy under another name (other scripts use ClusterRole syncd), bound
# cluster-wide to ServiceAccount NS/syncd.
SA=system:serviceaccount:$NS:syncd
kc -n "$NS" create serviceaccount syncd >/dev/null
kc -n "$NS" create serviceaccount web-deployer >/dev/null
kc create --dry-run=client -o json -f examples/deploy/clusterrole.yaml |
	jq --arg n "$TEST_ROLE" '.metadata.name = $n' | kc apply -f - >/dev/null 2>"$tmp/rbac.err" ||
	not_ok "the ClusterRole is applied: $(cat "$tmp/rbac.err")"
kc create clusterrolebinding "$TEST_ROLE" --clusterrole "$TEST_ROLE" \
	--serviceaccount "$NS:syncd" >/dev/null
# can AS NS-ARGS VERB RESOURCE...: kubectl auth can-i as AS
can() {
	local as=$1
	shift
	kc auth can-i --as "$as" "$@" 2>/dev/null
}
answers() { # AS: yes/no for each question, in order
	local as=$1
	printf '%s ' \
		"$(can "$as" get apps.syncd.io -n "$NS")" \
		"$(can "$as" list apps.syncd.io -A)" \
		"$(can "$as" watch apps.syncd.io -A)" \
		"$(can "$as" get apps.syncd.io --subresource=status -n "$NS")" \
		"$(can "$as" update apps.syncd.io --subresource=status -n "$NS")" \
		"$(can "$as" patch apps.syncd.io --subresource=status -n "$NS")" \
		"$(can "$as" get secrets/web-git -n "$NS")" \
		"$(can "$as" impersonate serviceaccounts/web-deployer -n "$NS")" \
		"$(can "$as" create apps.syncd.io -n "$NS")" \
		"$(can "$as" update apps.syncd.io -n "$NS")" \
		"$(can "$as" patch apps.syncd.io -n "$NS")" \
		"$(can "$as" delete apps.syncd.io -n "$NS")" \
		"$(can "$as" impersonate users)" \
		"$(can "$as" impersonate groups)"
}
# Fourteen questions: App get/list/watch, status get/update/patch, the
# Secret, impersonating the service account; then App create, update,
# patch, delete, impersonating users and groups.
expect_eq "$(answers "$SA")" "yes yes yes yes yes yes yes yes no no no no no no " \
	"ClusterRole: get/list/watch on Apps in every namespace, get/update/patch on their status, get on Secrets, impersonate serviceaccounts; no write of an App, no impersonation of users or groups"

# A token of the account: what syncd holds in a pod.
token=$(kc -n "$NS" create token syncd --duration 10m 2>"$tmp/token.err")
k8s_kubeconfig "$tmp/sa.kubeconfig" "$SA" token "$token"
ksa() {
	timeout 60 "$K8S_BIN/kubectl" --kubeconfig "$tmp/sa.kubeconfig" \
		--cache-dir "$tmp/sa-cache" "$@"
}
expect_eq "$(ksa get apps.syncd.io -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}' 2>&1 |
	grep -cx "$NS/web")" 1 \
	"as syncd's service account: kubectl get apps.syncd.io -A lists the App"
ksa -n "$NS" --as "system:serviceaccount:$NS:web-deployer" get configmaps >/dev/null 2>"$tmp/imp.err"
expect_eq "$(cat "$tmp/imp.err")" \
	"Error from server (Forbidden): configmaps is forbidden: User \"system:serviceaccount:$NS:web-deployer\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"$NS\"" \
	"impersonating serviceAccountName: the server answers as $NS/web-deployer (which has no role)"
ksa -n "$NS" --as someone get configmaps >/dev/null 2>"$tmp/imp.err"
expect_match "users \"someone\" is forbidden: User \"$SA\" cannot impersonate resource \"users\"" \
	"$(cat "$tmp/imp.err")" "impersonating a user is refused"

# === 4. the status subresource =============================================
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
rev=3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39
st_patch=$(jq -nc --arg t "$now" --arg rev "$rev" '{status: {
	observedGeneration: 1,
	conditions: [
		{type: "Ready", status: "True", reason: "Synced", observedGeneration: 1,
		 message: "applied revision \($rev[0:12])", lastTransitionTime: $t},
		{type: "Reconciling", status: "False", reason: "Idle", message: "",
		 lastTransitionTime: $t},
		{type: "Stalled", status: "False", reason: "Progressing", message: "",
		 lastTransitionTime: $t},
		{type: "Synced", status: "True", reason: "InSync", message: "",
		 lastTransitionTime: $t},
		{type: "Healthy", status: "True", reason: "Healthy", message: "",
		 lastTransitionTime: $t}],
	lastAppliedRevision: $rev, lastAttemptedRevision: $rev,
	health: {status: "Healthy", message: ""},
	summary: {objects: 3, inSync: 3, drifted: 0, missing: 0, orphan: 0,
		foreign: 0, fighting: 0, fields: 0, foreignFields: 0,
		fightingFields: 0, ignoredFields: 0},
	healthCounts: {Healthy: 3},
	driftedFields: [],
	fights: [],
	history: [{revision: $rev, time: $t, result: "success",
		message: "applied 3, pruned 0", applied: 3, pruned: 0}]}}')
# The first write of a status by syncd's account (RBAC above).
if ksa -n "$NS" patch app web --subresource=status --type=merge -p "$st_patch" \
	>/dev/null 2>"$tmp/status.err"; then
	ok "as syncd's service account: kubectl patch --subresource=status writes the status"
else
	not_ok "as syncd's service account: status written: $(cat "$tmp/status.err")"
fi
expect_match 'condition met' "$(kc wait --for=condition=Ready app/web -n "$NS" --timeout=10s 2>&1)" \
	"kubectl wait --for=condition=Ready app/web succeeds"
expect_eq "$(kc get apps.syncd.io -n "$NS" web --no-headers 2>&1 | awk '{print $1, $2, $3, $4, $5}')" \
	"web True Healthy $rev 0" "the row: READY True, HEALTH Healthy, REVISION, DRIFTED 0"
expect_eq "$(kc get app web -n "$NS" -o jsonpath='{.metadata.generation}')" 1 \
	"a status write does not change metadata.generation"
ksa -n "$NS" patch app web --type=merge -p '{"spec":{"prune":false}}' >/dev/null 2>"$tmp/spec.err"
expect_match "apps.syncd.io \"web\" is forbidden: User \"$SA\" cannot patch resource \"apps\" in API group \"syncd.io\"" \
	"$(cat "$tmp/spec.err")" "syncd's service account cannot change an App's spec"
# Through the main resource status is ignored, through /status the spec.
kc -n "$NS" patch app web --type=merge -p '{"status":{"health":{"status":"Degraded"}}}' >/dev/null 2>&1
kc -n "$NS" patch app web --subresource=status --type=merge -p '{"spec":{"prune":false}}' >/dev/null 2>&1
expect_eq "$(kc get app web -n "$NS" -o jsonpath='{.status.health.status} {.spec.prune} {.metadata.generation}')" \
	"Healthy true 1" "status is not written through the App, nor spec through /status"
# The status schema: a value out of it is refused, naming the field.
kc -n "$NS" patch app web --subresource=status --type=merge \
	-p '{"status":{"conditions":[{"type":"Ready","status":"Yes","reason":"Synced","message":"","lastTransitionTime":"'"$now"'"}]}}' \
	>/dev/null 2>"$tmp/st.err"
expect_match 'status.conditions\[0\].status: Unsupported value: "Yes": supported values: "True", "False", "Unknown"' \
	"$(cat "$tmp/st.err")" "status: a condition status other than True, False, Unknown is refused"
kc -n "$NS" patch app web --subresource=status --type=merge \
	-p "$(jq -nc '{status: {history: [range(11) | {revision: "r"}]}}')" >/dev/null 2>"$tmp/st.err"
expect_match 'status.history: Too many: 11: must have at most 10 items' \
	"$(cat "$tmp/st.err")" "status: more than 10 history entries are refused"

# === 5 (second part). RBAC: the namespaced Role ============================
# examples/deploy/namespaced/role.yaml and rolebinding.yaml moved from
# team-a into NS, the account named team-syncd.
TEAM=system:serviceaccount:$NS:team-syncd
kc -n "$NS" create serviceaccount team-syncd >/dev/null
for f in role rolebinding; do
	kc create --dry-run=client -o json -f "examples/deploy/namespaced/$f.yaml"
done | jq -c --arg ns "$NS" '.metadata.namespace = $ns |
	if .subjects then .subjects[0].namespace = $ns | .subjects[0].name = "team-syncd" else . end' |
	kc apply -f - >/dev/null 2>"$tmp/rbac.err" ||
	not_ok "the namespaced Role and RoleBinding are applied: $(cat "$tmp/rbac.err")"
team() { # the questions of answers() in NS only
	printf '%s ' \
		"$(can "$TEAM" get apps.syncd.io -n "$NS")" \
		"$(can "$TEAM" list apps.syncd.io -n "$NS")" \
		"$(can "$TEAM" watch apps.syncd.io -n "$NS")" \
		"$(can "$TEAM" get apps.syncd.io --subresource=status -n "$NS")" \
		"$(can "$TEAM" update apps.syncd.io --subresource=status -n "$NS")" \
		"$(can "$TEAM" patch apps.syncd.io --subresource=status -n "$NS")" \
		"$(can "$TEAM" get secrets/web-git -n "$NS")" \
		"$(can "$TEAM" impersonate serviceaccounts/web-deployer -n "$NS")" \
		"$(can "$TEAM" list apps.syncd.io -n default)" \
		"$(can "$TEAM" impersonate serviceaccounts/default -n default)" \
		"$(can "$TEAM" update apps.syncd.io -n "$NS")"
}
expect_eq "$(team)" "yes yes yes yes yes yes yes yes no no no " \
	"namespaced Role: the same in its namespace; no App and no impersonation elsewhere, no write of an App"

# === 6. server-side dry runs ===============================================
for ex in "$EXAMPLE" examples/apps/podinfo-chart.yaml; do
	if kc apply --dry-run=server -n "$NS" -f "$ex" >"$tmp/dry.out" 2>&1; then
		ok "kubectl apply --dry-run=server -f $ex"
	else
		not_ok "kubectl apply --dry-run=server -f $ex: $(cat "$tmp/dry.out")"
	fi
done
# The kustomizations as a whole. Their namespaces (syncd, team-a) are
# not there (and belong to other scripts): a dry run cannot create a
# Namespace and then objects in it, so an overlay moves them into NS.
dry_k() { # DIR
	local d=$tmp/overlay
	rm -rf "$d"
	mkdir -p "$d"
	kc kustomize "$1" >"$d/all.yaml" 2>"$tmp/kustomize.err" || return 1
	printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %s\nresources: [all.yaml]\n' \
		"$NS" >"$d/kustomization.yaml"
	kc apply --dry-run=server -k "$d" >"$tmp/dry.out" 2>"$tmp/dry.err"
}
if dry_k examples/deploy; then
	ok "kubectl apply --dry-run=server -k examples/deploy (the CRD established, in $NS)"
else
	not_ok "kubectl apply --dry-run=server -k examples/deploy: $(cat "$tmp/kustomize.err" "$tmp/dry.out" "$tmp/dry.err" | head -c 1500)"
fi
expect_eq "$(grep -c 'customresourcedefinition.apiextensions.k8s.io/apps.syncd.io unchanged (server dry run)' "$tmp/dry.out")" 1 \
	"kubectl apply -k examples/deploy includes the CRD, as applied"
if dry_k examples/deploy/namespaced; then
	ok "kubectl apply --dry-run=server -k examples/deploy/namespaced (in $NS)"
else
	not_ok "kubectl apply --dry-run=server -k examples/deploy/namespaced: $(cat "$tmp/kustomize.err" "$tmp/dry.out" "$tmp/dry.err" | head -c 1500)"
fi

# === the end: the CRD removed, with its Apps ================================
if kc delete crd apps.syncd.io --timeout=60s >/dev/null 2>"$tmp/del.err" && crd_gone; then
	ok "the CRD is deleted, with its Apps"
else
	not_ok "the CRD is deleted: $(cat "$tmp/del.err")"
fi
finish
