#!/usr/bin/env bash
# Health on the real control plane (kube-controller-manager and kwok's
# fake nodes write the status): a Deployment of 3 goes Progressing ->
# Healthy and `syncd sync --wait` returns 0; a Deployment whose Pods can
# never be scheduled, with a short progressDeadlineSeconds, becomes
# Degraded with the controller's reason and --wait returns 1 naming it;
# `kubectl rollout pause` makes it Suspended; a Job past its
# activeDeadlineSeconds is Degraded with the Job controller's reason; a
# custom resource with no
# status yet is Progressing (never Healthy), with Ready=False Degraded,
# with Ready=True Healthy; waves: a wave-1 object is created only once the
# wave-0 Deployment is available. kube-emu's versions:
# tests/integration/health.sh and waves.sh.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
real_need "health on the real control plane"

ns_gone syncd-health
app=$tmp/health
mkdir -p "$app"
cat >"$app/objects.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: syncd-health}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: syncd-health}
spec:
  replicas: 3
  # kwok makes Pods Ready within milliseconds: available only 3 s after
  # that, so the first look of --wait always finds it Progressing.
  minReadySeconds: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
EOF
H=(--app syncd-health)
S sync --wait --timeout 120s "${H[@]}" "$app"
expect_rc 0 "a Deployment of 3: sync --wait exit 0"
expect_match 'waiting: Progressing: Deployment\.apps syncd-health/web: ' "$out" \
	"... Progressing first"
expect_match 'health: Healthy after [0-9.]+s: every object is healthy' "$out" \
	"... then Healthy"
expect_eq "$(kc -n syncd-health get deployment web -o jsonpath='{.status.availableReplicas}')" 3 \
	"the real controllers made 3 replicas available"

# Pods no node can take (kwok's nodes have no such label) and a 2 s
# deadline: the deployment controller says ProgressDeadlineExceeded.
cat >>"$app/objects.yaml" <<'EOF'
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck, namespace: syncd-health}
spec:
  replicas: 1
  progressDeadlineSeconds: 2
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      nodeSelector: {syncd.test/never: "true"}
      containers: [{name: app, image: "nginx:1.27"}]
EOF
S sync --wait --timeout 120s "${H[@]}" "$app"
expect_rc 1 "a Deployment that never becomes ready: sync --wait exit 1"
expect_match 'health: Degraded after [0-9.]+s: Deployment\.apps syncd-health/stuck: ProgressDeadlineExceeded: ReplicaSet "stuck-[a-z0-9]+" has timed out progressing' \
	"$out" "... Degraded, with the controller's reason"

kc -n syncd-health rollout pause deployment/web >/dev/null
S diff "${H[@]}" -o json "$app"
expect_eq "$(printf '%s' "$out" | jq -r '.objects[] | select(.name == "web" and .kind == "Deployment") | "\(.health.status) \(.health.message)"')" \
	"Suspended the rollout is paused (spec.paused)" "kubectl rollout pause: Suspended"
kc -n syncd-health rollout resume deployment/web >/dev/null

# A custom resource: no status yet, then Ready=False, then Ready=True.
cat >"$app/crd.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.health.syncd.test}
spec:
  group: health.syncd.test
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: health.syncd.test/v1
kind: Widget
metadata: {name: w, namespace: syncd-health}
spec: {size: 1}
EOF
sed -i '/^kind: Deployment/,$d' "$app/objects.yaml"
sed -i '$d' "$app/objects.yaml"
S sync --prune "${H[@]}" "$app"
expect_rc 0 "the CRD and its custom resource are applied"
widget() { # the Widget's health from syncd diff
	S diff "${H[@]}" -o json "$app"
	printf '%s' "$out" | jq -r '.objects[] | select(.kind == "Widget") | "\(.health.status): \(.health.message)"'
}
expect_eq "$(widget)" "Progressing: no status yet" \
	"a custom resource with no status yet: Progressing, not Healthy"
status() { # READY REASON
	kc -n syncd-health patch widget w --subresource=status --type=merge -p \
		"{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"$1\",\"reason\":\"$2\",\"message\":\"the widget says so\"}]}}" >/dev/null
}
status False BrokenThing
expect_eq "$(widget)" "Degraded: BrokenThing: the widget says so" \
	"Ready=False: Degraded, with the condition's reason"
status True Done
expect_eq "$(widget)" "Healthy: Done: the widget says so" "Ready=True: Healthy"

"$SYNCD" render -o json "$app" | kc delete -f - --wait=false >/dev/null 2>&1
# --- waves: wave 1 waits for wave 0 to be healthy -----------------------
ns_gone syncd-waves
waves=$tmp/waves
mkdir -p "$waves"
cat >"$waves/objects.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: syncd-waves}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: syncd-waves, annotations: {syncd.io/wave: "0"}}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "postgres:16"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: after-db, namespace: syncd-waves, annotations: {syncd.io/wave: "1"}}
data: {ready: "yes"}
EOF
S sync --timeout 120s --app syncd-waves "$waves"
expect_rc 0 "a two-wave app on the real control plane: sync exit 0"
ready=$(kc -n syncd-waves get deployment db -o json | jq -r '.status.conditions[] | select(.type == "Available" and .status == "True") | .lastTransitionTime')
created=$(kc -n syncd-waves get configmap after-db -o jsonpath='{.metadata.creationTimestamp}')
expect_eq "$([ -n "$ready" ] && [[ ! "$created" < "$ready" ]] && echo after)" after \
	"the wave-1 ConfigMap was created ($created) once the wave-0 Deployment was available ($ready)"
"$SYNCD" render -o json "$waves" | kc delete -f - --wait=false >/dev/null 2>&1
# --- a Job that fails: Degraded with the Job controller's reason ----------
ns_gone syncd-job
job=$tmp/job
mkdir -p "$job"
cat >"$job/objects.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: syncd-job}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: syncd-job}
spec:
  activeDeadlineSeconds: 2
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {syncd.test/never: "true"}
      containers: [{name: migrate, image: "busybox:1.36"}]
EOF
S sync --wait --timeout 120s --app syncd-job "$job"
expect_rc 1 "a Job past its deadline: sync --wait exit 1"
expect_match 'health: Degraded after [0-9.]+s: Job\.batch syncd-job/migrate: DeadlineExceeded: ' \
	"$out" "... Degraded, with the Job controller's reason"
"$SYNCD" render -o json "$job" | kc delete -f - --wait=false >/dev/null 2>&1
finish
