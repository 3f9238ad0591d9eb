#!/usr/bin/env bash
# Waves (annotation syncd.io/wave) against kube-emu and its rollout
# stand-in: `syncd sync` applies wave 1 only once wave 0 is healthy (the
# wave-1 object is created after the wave-0 Deployment became available);
# a wave that does not become healthy in --timeout stops the sync (exit
# 1, naming the object and why; the later wave is not applied); a bad
# wave value is an error naming file, line and object, and nothing is
# written; prune deletes later waves first. The same on the real control
# plane: tests/real/health.sh.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"

need_tools "wave checks" curl jq openssl
emu_start_tls

app=$tmp/waves
mkdir -p "$app"
W=(--kubeconfig "$tmp/kc" --app waves)
deployment() { # NAME WAVE
	cat <<EOF
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
  namespace: waves
  annotations: {syncd.io/wave: "$2"}
spec:
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      containers: [{name: app, image: "registry.example/$1:1"}]
EOF
}
configmap() { # NAME WAVE
	printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: waves\n  annotations: {syncd.io/wave: "%s"}\ndata: {a: "1"}\n' "$1" "$2"
}
{
	printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: waves}\n'
	deployment db 0
	configmap after 1
} >"$app/objects.yaml"

api POST /emu/rollouts application/json \
	'{"name":"slow","match":{"kind":"Deployment"},"readyAfter":"1500ms"}'
run_syncd sync --timeout 30s "${W[@]}" "$app"
expect_rc 0 "a two-wave app: sync exit 0"
expect_eq "$(grep -n -e 'Deployment.apps waves/db: created' -e 'ConfigMap waves/after: created' "$tmp/.out" | cut -d: -f2- | tr '\n' ';')" \
	"Deployment.apps waves/db: created;ConfigMap waves/after: created;" \
	"wave 0 is applied before wave 1"
api GET /apis/apps/v1/namespaces/waves/deployments/db
ready=$(printf '%s' "$body" | jq -r '.status.conditions[] | select(.type == "Available") | .lastTransitionTime')
api GET /api/v1/namespaces/waves/configmaps/after
created=$(printf '%s' "$body" | jq -r .metadata.creationTimestamp)
expect_eq "$([ -n "$ready" ] && [[ ! "$created" < "$ready" ]] && echo after)" after \
	"wave 1 was created ($created) once wave 0 was available ($ready)"

# A wave that does not become healthy in time stops the sync there.
api DELETE /emu/rollouts
api POST /emu/rollouts application/json \
	'{"name":"slower","match":{"kind":"Deployment"},"readyAfter":"60s"}'
sed -i 's/db:1/db:2/' "$app/objects.yaml"
configmap later 1 >>"$app/objects.yaml"
run_syncd sync --timeout 2s "${W[@]}" "$app"
expect_rc 1 "wave 0 not healthy within --timeout: exit 1"
expect_match 'waiting for wave 0 before wave 1: Deployment\.apps waves/db is Progressing: ' \
	"$out" "... naming the object that holds the wave back and why"
api GET /api/v1/namespaces/waves/configmaps/later
expect_eq "$code" 404 "the later wave is not applied"

# A bad wave value: an error naming the file, the line and the object.
api DELETE /emu/rollouts
configmap bad two >>"$app/objects.yaml"
configmap fresh 0 >>"$app/objects.yaml"
run_syncd sync --timeout 2s "${W[@]}" "$app"
expect_rc 2 "a wave that is not a number: exit 2"
expect_match "objects\.yaml:[0-9]+.*ConfigMap waves/bad: annotation syncd\.io/wave: \"two\" is not a whole number" \
	"$errout" "... naming the file, the line, the object and the value"
api GET /api/v1/namespaces/waves/configmaps/fresh
expect_eq "$code" 404 "nothing is written"

# Prune: later waves first.
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: waves}\n' >"$app/objects.yaml"
run_syncd sync --prune --timeout 5s "${W[@]}" "$app"
expect_rc 0 "prune of both waves: exit 0"
expect_eq "$(grep ': pruned$' "$tmp/.out" | tr '\n' ';')" \
	"ConfigMap waves/after: pruned;Deployment.apps waves/db: pruned;" \
	"prune deletes wave 1 before wave 0"
finish
