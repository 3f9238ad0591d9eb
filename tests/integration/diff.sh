#!/usr/bin/env bash
# syncd diff --live: exit codes, text and JSON output, Secrets never shown.
. "$(dirname "$0")/lib.sh"
cases=tests/cases/diff

run_syncd diff "$cases/deployment-defaults-insync/desired" --live "$cases/deployment-defaults-insync/live"
expect_rc 0 "no drift exits 0"
expect_eq "$out" "1 objects: 1 in sync, 0 drifted, 0 missing, 0 orphan, 0 foreign; 0 fields differ (0 foreign, 0 ignored)" \
	"an in-sync app prints only the summary"

run_syncd diff "$cases/kubectl-edit-image-is-drift/desired" --live "$cases/kubectl-edit-image-is-drift/live"
expect_rc 1 "drift exits 1"
expect_match '^Drifted Deployment.apps default/web \(00-deployment.yaml:1\)$' "$out" "the object header names state, identity and origin"
expect_match '~ \.spec\.template\.spec\.containers\[name="web"\]\.image: changed by kubectl-edit \(Update, 2026-11-01T10:05:00Z\)' \
	"$out" "the field line names the editor"
expect_match '^--- live/Deployment.apps default/web$' "$out" "a unified diff follows"
expect_match '^-      - image: nginx:1.26-debug$' "$out" "the diff shows the live value"
expect_match '^\+      - image: nginx:1.27$' "$out" "the diff shows the desired value"
if printf '%s' "$out" | grep -q managedFields; then not_ok "managedFields are stripped from the diff"; else ok "managedFields are stripped from the diff"; fi

run_syncd diff "$cases/hpa-owns-replicas-foreign/desired" --live "$cases/hpa-owns-replicas-foreign/live"
expect_rc 0 "a field only an HPA changed is no drift under respect"
expect_match 'foreign, owned by kube-controller-manager \(Update, /scale' "$out" "the foreign owner is named"
run_syncd diff "$cases/hpa-owns-replicas-foreign/desired" --live "$cases/hpa-owns-replicas-foreign/live" --policy override
expect_rc 1 "the same is drift under override"

run_syncd diff "$cases/kubectl-edit-image-is-drift/desired" --live "$cases/kubectl-edit-image-is-drift/live" -o json
expect_rc 1 "json output keeps the exit code"
expect_match '"kind": "DriftReport"' "$out" "json output is a DriftReport"
expect_match '"manager": "kubectl-edit"' "$out" "json output names the manager"

for c in secret-data-masked secret-stringdata-changed-masked; do
	for fmt in text json; do
		run_syncd diff "$cases/$c/desired" --live "$cases/$c/live" -o "$fmt"
		expect_rc 1 "$c ($fmt) is drift"
		if printf '%s' "$out" | grep -Eq 'hunter2|letmein|s3cret|aHVudGVyMg|bGV0bWVpbg|czNjcmV0'; then
			not_ok "$c ($fmt): no Secret value, plain or base64, in the output"
		else
			ok "$c ($fmt): no Secret value, plain or base64, in the output"
		fi
		expect_match '\(secret sha256:[0-9a-f]{16}\)' "$out" "$c ($fmt): values appear as fingerprints"
	done
done

run_syncd diff "$cases/missing-object/desired" --live "$cases/missing-object/desired" --color always
expect_rc 0 "an object diffed against itself is in sync"
run_syncd diff "$cases/configmap-data-changed/desired" --live "$cases/configmap-data-changed/live" --color always
expect_match $'\033\\[32m\\+  b: "2"' "$out" "--color always colours added lines"
run_syncd diff "$cases/configmap-data-changed/desired" --live "$cases/configmap-data-changed/live"
if printf '%s' "$out" | grep -q $'\033'; then not_ok "no colour when stdout is not a terminal"; else ok "no colour when stdout is not a terminal"; fi

# Who is a person and who a controller is configurable.
run_syncd diff "$cases/kubectl-edit-image-is-drift/desired" --live "$cases/kubectl-edit-image-is-drift/live" \
	--controller-manager kubectl-edit
expect_rc 0 "--controller-manager makes kubectl-edit a controller: foreign, no drift"
expect_match 'foreign, owned by kubectl-edit' "$out" "the field is reported as foreign"
run_syncd diff "$cases/hpa-owns-replicas-foreign/desired" --live "$cases/hpa-owns-replicas-foreign/live" \
	--person-manager 'kube-controller-*'
expect_rc 1 "--person-manager makes the HPA's manager a person: drift to heal"

# Ignore rules from a file.
cat >"$tmp/ignore.yaml" <<'YAML'
- group: apps
  kind: Deployment
  name: web
  jsonPointers: [/spec/replicas]
YAML
run_syncd diff "$cases/kubectl-scale-is-healed/desired" --live "$cases/kubectl-scale-is-healed/live" \
	--ignore-file "$tmp/ignore.yaml" -o json
expect_rc 0 "an ignored field is no drift"
expect_match '"ignoredFields": 1' "$out" "the ignored field is counted"
printf -- '- kind: Deployment\n  jsonPointer: /spec/replicas\n' >"$tmp/bad-ignore.yaml"
run_syncd diff "$cases/kubectl-scale-is-healed/desired" --live "$cases/kubectl-scale-is-healed/live" \
	--ignore-file "$tmp/bad-ignore.yaml"
expect_rc 2 "a bad ignore file exits 2"
expect_eq "$errout" "error: $tmp/bad-ignore.yaml:1: rule 1: unknown key \"jsonPointer\"" \
	"the bad ignore rule is named with file, line and key"
printf -- '- kind: Deployment\n  jsonPointers: [spec/replicas]\n' >"$tmp/bad-ignore.yaml"
run_syncd diff "$cases/kubectl-scale-is-healed/desired" --live "$cases/kubectl-scale-is-healed/live" \
	--ignore-file "$tmp/bad-ignore.yaml"
expect_match 'is not a JSON pointer' "$errout" "a pointer without / is refused"

# The real-world manifests against themselves: nothing drifted.
if have_fixtures; then
	kp="$FIXTURES/kube-prometheus/manifests"
	run_syncd render "$kp" -o json
	cp "$tmp/.out" "$tmp/kp-live.json"
	run_syncd diff "$kp" --live "$tmp/kp-live.json" -o json
	expect_rc 0 "kube-prometheus diffed against its own render: no drift"
	expect_match '"inSync": 131' "$out" "all 131 kube-prometheus objects are in sync"
else
	skip_fixtures "kube-prometheus against its own render"
fi

# The demo app: each of the four things that happened is told apart.
run_syncd diff examples/guestbook --live examples/guestbook-live -o json
expect_rc 1 "the demo app has drift"
states=$(printf '%s\n' "$out" | grep -E '^      "(name|state)": ' | paste - - | sed 's/ *"name": "\([^"]*\)",\t *"state": "\([^"]*\)",*/\1=\2/' | tr '\n' ' ')
expect_eq "$states" "frontend-config=Drifted frontend=Foreign frontend=InSync guestbook=InSync redis=Drifted redis=InSync " \
	"demo: removed key drifted, HPA foreign, kubectl edit drifted, sidecar and the rest in sync"
run_syncd diff examples/guestbook --live examples/guestbook-live
expect_match 'changed by kubectl-edit' "$out" "demo: the redis image names kubectl-edit"
expect_match 'foreign, owned by kube-controller-manager \(Update, /scale' "$out" "demo: the frontend replicas name the HPA's manager"
expect_match 'LEGACY_MODE: applied earlier, no longer declared' "$out" "demo: the removed key is reported"
if printf '%s' "$out" | grep -q log-shipper; then not_ok "demo: the injected sidecar is not drift"; else ok "demo: the injected sidecar is not drift"; fi

# Errors: one line each, exit 2.
# Without --live, diff reads the cluster; with no kubeconfig that fails clearly.
HOME=$tmp/nohome KUBECONFIG= run_syncd diff "$cases/missing-object/desired"
expect_rc 2 "no --live and no kubeconfig exits 2"
expect_match "^error: .*kubeconfig" "$errout" "the missing kubeconfig is named"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n' >"$tmp/bad-live.yaml"
run_syncd diff "$cases/missing-object/desired" --live "$tmp/bad-live.yaml"
expect_rc 2 "a malformed live file exits 2"
expect_match '^error: bad-live.yaml:[0-9]+:[0-9]+: ' "$errout" "the malformed live file is named with line and column"
run_syncd diff "$cases/missing-object/desired" --live "$tmp/nonexistent"
expect_rc 2 "a missing live path exits 2"
run_syncd diff "$cases/missing-object/desired" --live "$cases/missing-object/desired" --policy sometimes
expect_rc 2 "an unknown policy exits 2"
# The client flags, shared by diff and sync, refuse bad values by name.
run_syncd diff "$cases/deployment-defaults-insync/desired" --qps 0
expect_rc 2 "diff --qps 0 exits 2"
expect_match 'qps wants a positive number, not "0"' "$errout" "diff --qps 0: the cause named"
run_syncd sync "$cases/deployment-defaults-insync/desired" --burst 1.5
expect_rc 2 "sync --burst 1.5 exits 2"
expect_match 'burst wants a positive integer, not "1.5"' "$errout" "sync --burst 1.5: the cause named"
printf '[1, 2]\n' >"$tmp/list.json"
run_syncd diff "$cases/missing-object/desired" --live "$tmp/list.json"
expect_rc 2 "a live document that is not an object exits 2"
expect_eq "$errout" "error: list.json:1: document is a list, not an object" "the non-object live document is named"

finish
