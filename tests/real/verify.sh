#!/usr/bin/env bash
# Drift confirmed with the server (verify: dryRun), on the real
# kube-apiserver 1.36 with a real mutating admission webhook (the
# webhook tool of tests/k8s/tools, HTTPS on loopback) that injects a
# sidecar container and an annotation into every Deployment of the
# namespace, a tolerationSeconds default into its NoExecute tolerations
# (inside an atomic list), and, when asked, another image (a declared
# value changed):
#  1. after a sync, the local comparison alone (--verify off) calls the
#     webhook's work drift; confirmed with one dry run per such object,
#     the objects are InSync, with a warning naming what the server
#     stores differently from the declaration, and nothing is written;
#  2. a webhook that changes a declared value: InSync (nothing a write
#     could change), the warning names the field;
#  3. an apply the server refuses (a Secret's immutable type): Drifted,
#     with the server's message, and sync fails that object only;
#  4. syncd run: the first pass dry-runs each candidate once, and ten
#     resyncs after it send no dry run and no write (the verdicts are
#     remembered by uid, resourceVersion and desired digest); after
#     kubectl changes the object, one dry run again and the drift healed.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
real_need "drift confirmed with the server"
WEBHOOK=$K8S_BIN/webhook
if [ ! -x "$WEBHOOK" ]; then
	not_ok "$WEBHOOK not built (make k8s)"
	finish
fi

NS=syncd-verify
WH=syncd-verify.webhook.syncd.test
cleanup() {
	if [ -n "${K8S_DIR:-}" ]; then
		kc delete mutatingwebhookconfiguration "$WH" --ignore-not-found >/dev/null 2>&1
		kc delete namespace "$NS" --wait=false --ignore-not-found >/dev/null 2>&1
	fi
	real_cleanup
}
trap cleanup EXIT
ns_gone "$NS"

# --- the webhook --------------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
	-addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/wh.key" \
	-out "$tmp/wh.crt" >/dev/null 2>&1
"$WEBHOOK" --listen 127.0.0.1:0 --cert "$tmp/wh.crt" --key "$tmp/wh.key" \
	>"$tmp/wh.out" 2>"$tmp/wh.err" &
pids+=($!)
wait_for 20 grep -q '^listening on' "$tmp/wh.out"
wh_url=$(sed -n 's/^listening on //p' "$tmp/wh.out")
kc create namespace "$NS" >/dev/null
kc label namespace "$NS" webhook.syncd.test/on=yes >/dev/null
kc apply -f - >/dev/null <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: $WH
webhooks:
  - name: inject.webhook.syncd.test
    admissionReviewVersions: ["v1"]
    sideEffects: None
    timeoutSeconds: 5
    clientConfig:
      url: $wh_url/mutate
      caBundle: $(base64 -w0 <"$tmp/wh.crt")
    namespaceSelector:
      matchLabels:
        webhook.syncd.test/on: "yes"
    rules:
      - apiGroups: ["apps"]
        apiVersions: ["v1"]
        operations: ["CREATE", "UPDATE"]
        resources: ["deployments"]
YAML
# The configuration reaches the admission chain a moment later.
probe() {
	kc -n "$NS" create deployment probe --image=probe:1 --dry-run=server -o json 2>/dev/null |
		jq -e '.spec.template.spec.containers | length == 2' >/dev/null
}
if ! wait_for 30 probe; then
	not_ok "the webhook mutates Deployments in $NS: $(cat "$tmp/wh.err")"
	finish
fi

app=$tmp/app
mkdir -p "$app"
cat >"$app/web.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: $NS
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      tolerations:
        - key: node.kubernetes.io/unreachable
          operator: Exists
          effect: NoExecute
      containers:
        - name: web
          image: nginx:1.27
YAML
cat >"$app/rewritten.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: rewritten
  namespace: $NS
  annotations:
    webhook.syncd.test/image: nginx:1.27-patched
spec:
  replicas: 1
  selector: {matchLabels: {app: rewritten}}
  template:
    metadata: {labels: {app: rewritten}}
    spec:
      containers:
        - name: web
          image: nginx:1.27
YAML
creds_opaque() {
	cat >"$app/creds.yaml" <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: $NS
type: Opaque
stringData:
  user: admin
YAML
}
creds_opaque
A=(--app verify -n "$NS")

# === 1. the webhook's work is not drift ===============================
S sync "${A[@]}" "$app"
expect_eq "$rc $(tail -n 1 "$tmp/.out")" \
	"0 4 applied, 0 unchanged, 0 pruned, 0 orphans kept, 0 failed" \
	"the first sync applies the 3 objects (and the inventory)"
expect_eq "$(kc -n "$NS" get deployment web -o json | jq -c '[.spec.template.spec.containers[].name, .spec.template.spec.tolerations[0].tolerationSeconds, .metadata.annotations["webhook.syncd.test/injected"]]')" \
	'["web","proxy",300,"true"]' "the webhook injected its sidecar, default and annotation"

S diff "${A[@]}" --verify off -o json "$app"
printf '%s' "$out" >"$tmp/off.json"
expect_eq "$rc $(jq -r '[.objects[] | select(.state == "Drifted") | .name] | sort | join(" ")' "$tmp/off.json")" \
	"1 rewritten web" "the local comparison alone calls the webhook's work drift"

k8s_audit_mark
S diff "${A[@]}" -o json "$app"
printf '%s' "$out" >"$tmp/on.json"
expect_eq "$rc $(jq -r '[.objects[] | "\(.name)=\(.state)"] | sort | join(" ")' "$tmp/on.json")" \
	"0 creds=InSync rewritten=InSync verify=InSync web=InSync" \
	"confirmed with the server, every object is InSync (exit 0)"
expect_eq "$(syncd_dry_runs) $(syncd_writes)" "2 0" \
	"one dry run per object the local comparison doubted, no write"
expect_match 'stores these declared fields otherwise.*spec.template.spec.tolerations$' \
	"$(jq -r '.objects[] | select(.name == "web") | .warnings[]?' "$tmp/on.json")" \
	"the object says what the server stores differently from the declaration"

# Where the server records the webhook's work: nowhere. kube-apiserver
# 1.36 tracks managedFields before mutating admission, so the injected
# sidecar and annotation belong to no manager (not syncd's to remove).
expect_eq "$(kc -n "$NS" get deployment web --show-managed-fields -o json |
	jq -r '[.metadata.managedFields[] | tostring | select(test("proxy|webhook.syncd.test/injected"))] | length')" \
	"0" "the injected sidecar and annotation are in no managedFields entry"

# === 2. a declared value the webhook changes ==========================
expect_match 'image' \
	"$(jq -r '.objects[] | select(.name == "rewritten") | .warnings[]?' "$tmp/on.json")" \
	"the webhook's change of a declared value is named on the object"

k8s_audit_mark
S sync "${A[@]}" "$app"
expect_eq "$rc $(tail -n 1 "$tmp/.out") $(syncd_writes)" \
	"0 0 applied, 4 unchanged, 0 pruned, 0 orphans kept, 0 failed 0" \
	"sync writes nothing: nothing a write could change"

# === 3. an apply the server refuses ===================================
cat >"$app/creds.yaml" <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: $NS
type: kubernetes.io/basic-auth
stringData:
  username: admin
YAML
S diff "${A[@]}" -o json "$app"
printf '%s' "$out" >"$tmp/refused.json"
expect_eq "$rc $(jq -r '.objects[] | select(.name == "creds") | .state' "$tmp/refused.json")" \
	"1 Drifted" "a refused apply stays Drifted (exit 1)"
expect_match 'refuses the apply.*immutable' \
	"$(jq -r '.objects[] | select(.name == "creds") | .warnings[]?' "$tmp/refused.json")" \
	"with the server's message"
git -C "$app" init -q 2>/dev/null
creds_opaque

# === 4. syncd run: verdicts remembered ================================
git -C "$app" add -A && git -C "$app" -c user.name=t -c user.email=t@e commit -qm app
cat >"$tmp/run.yaml" <<YAML
kubeconfig: $K8S_SYNCD_KUBECONFIG
listen: 127.0.0.1:0
resync: 1s
watch: false
events: false
apps:
  - name: verify
    namespace: $NS
    source:
      repo: $app
      interval: 1h
YAML
k8s_audit_mark
"$SYNCD" run -c "$tmp/run.yaml" >"$tmp/run.out" 2>"$tmp/run.log" &
run_pid=$!
pids+=("$run_pid")
passes() { grep -c 'msg="pass done" app=verify' "$tmp/run.log"; }
wait_for 60 test "$(passes)" -ge 12
expect_eq "$(syncd_dry_runs) $(syncd_writes)" "2 0" \
	"twelve passes: each doubted object asked once, nothing written"
port=$(sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$tmp/run.log" | tail -n 1)
expect_eq "$(curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" |
	sed -n 's/^syncd_verify_dry_runs_total{app="verify",verdict="\([a-z]*\)"} \([0-9]*\)$/\1=\2/p' | sort | tr '\n' ' ')" \
	"drift=0 insync=2 refused=0 " \
	"/metrics: syncd_verify_dry_runs_total counts the two dry runs, both found in sync"
kc -n "$NS" patch deployment web --type=merge \
	-p '{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.26"}]}}}}' >/dev/null
healed() {
	[ "$(kc -n "$NS" get deployment web -o jsonpath='{.spec.template.spec.containers[0].image}')" = nginx:1.27 ]
}
wait_for 30 healed
expect_eq "$(kc -n "$NS" get deployment web -o jsonpath='{.spec.template.spec.containers[*].image}')" \
	"nginx:1.27 proxy:1" "a real change is confirmed and healed"
kill "$run_pid" 2>/dev/null
finish
