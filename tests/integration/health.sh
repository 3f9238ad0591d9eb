#!/usr/bin/env bash
# Health against kube-emu with its rollout stand-in (/emu/rollouts writes
# the status kube-controller-manager would): `syncd sync --wait` returns
# 0 once every object is healthy, 1 at once when one is Degraded (naming
# it and the controller's reason: a failed rollout, a failed Job), 1 when
# the timeout passes (naming what is still progressing); `syncd diff`
# reports each object's health and the app's; bad flags are usage errors.
# The same on the real control plane: tests/real/health.sh.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"

need_tools "health checks" curl jq openssl
emu_start_tls

app=$tmp/web
mkdir -p "$app"
deployment() { # NAME
	cat <<EOF
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: health}
spec:
  replicas: 3
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      containers: [{name: app, image: "registry.example/$1:1"}]
EOF
}
{
	printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: health}\n'
	printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: health}\ndata: {a: "1"}\n'
	deployment web
} >"$app/objects.yaml"
W=(--kubeconfig "$tmp/kc" --app web)

# Healthy: the rollout stand-in makes the Deployment available after 1 s.
api POST /emu/rollouts application/json \
	'{"name":"slow","match":{"kind":"Deployment"},"readyAfter":"1s"}'
expect_eq "$code" 201 "a rollout rule: Deployments become available after 1 s"
run_syncd sync --wait --timeout 30s "${W[@]}" "$app"
expect_rc 0 "sync --wait: exit 0 once everything is healthy"
expect_match 'waiting: Progressing: Deployment\.apps health/web: waiting for the rollout' \
	"$out" "sync --wait says what it waits for"
expect_match 'health: Healthy after [0-9.]+s: every object is healthy' "$out" \
	"sync --wait ends with Healthy"
run_syncd diff "${W[@]}" -o json "$app"
expect_eq "$rc $(printf '%s' "$out" | jq -c '[.health.status, ([.objects[] | select(.kind != "Secret") | "\(.kind)=\(.health.status)"] | sort)]')" \
	'0 ["Healthy",["ConfigMap=Healthy","Deployment=Healthy","Namespace=Healthy"]]' \
	"diff -o json: each object's health and the app's"

# Degraded: the rollout fails (ProgressDeadlineExceeded), --wait stops.
api POST /emu/rollouts application/json \
	'{"name":"broken","match":{"kind":"Deployment","name":"broken"},"fail":true}'
deployment broken >>"$app/objects.yaml"
run_syncd sync --wait --timeout 60s "${W[@]}" "$app"
expect_rc 1 "sync --wait with a failing rollout: exit 1"
expect_match 'health: Degraded after [0-9.]+s: Deployment\.apps health/broken: ProgressDeadlineExceeded: ' \
	"$out" "... naming the Deployment and the controller's reason"
run_syncd diff "${W[@]}" "$app"
expect_match '^health: Degraded: Deployment\.apps health/broken: ProgressDeadlineExceeded' \
	"$out" "diff: the app is Degraded, and says by which object"

# Timed out: a rollout slower than the timeout.
api DELETE /emu/rollouts
api POST /emu/rollouts application/json \
	'{"name":"slower","match":{"kind":"Deployment"},"readyAfter":"60s"}'
sed -i 's/broken:1/broken:2/; s/web:1/web:2/' "$app/objects.yaml"
run_syncd sync --wait --timeout 2s "${W[@]}" "$app"
expect_rc 1 "sync --wait past its timeout: exit 1"
expect_match 'health: timed out after [0-9.]+s, still Progressing: Deployment\.apps health/web: .*Deployment\.apps health/broken: ' \
	"$out" "... naming what is still progressing"

# A Job that fails (the stand-in writes Failed, BackoffLimitExceeded).
job=$tmp/job
mkdir -p "$job"
printf 'apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate, namespace: health}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: "registry.example/m:1"}]\n' >"$job/job.yaml"
api POST /emu/rollouts application/json \
	'{"name":"job-fails","match":{"kind":"Job"},"fail":true}'
run_syncd sync --wait --timeout 30s --kubeconfig "$tmp/kc" --app job "$job"
expect_rc 1 "sync --wait with a failing Job: exit 1"
expect_match 'health: Degraded after [0-9.]+s: Job\.batch health/migrate: BackoffLimitExceeded' \
	"$out" "... naming the Job and its reason"

# Usage errors.
run_syncd sync --wait --timeout soon "${W[@]}" "$app"
expect_eq "$rc $errout" \
	"2 error: --timeout wants a duration such as 90s or 5m, not \"soon\" (see 'syncd sync --help')" \
	"a bad --timeout: a usage error naming it"
run_syncd sync --wait --dry-run "${W[@]}" "$app"
expect_eq "$rc $errout" \
	"2 error: --wait waits for what a sync applied: not with --dry-run (see 'syncd sync --help')" \
	"--wait with --dry-run: a usage error"
finish
