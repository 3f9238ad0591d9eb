#!/usr/bin/env bash
# kube-emu's actors as a process: the mutating-webhook stand-in
# (--webhook, /emu/webhooks) and the rollout stand-in (--rollout,
# /emu/rollouts) over HTTP with curl. Loopback only; every wait is a
# bounded poll on the object, never a duration; the emulator is killed
# on exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

EMU=${BUILD:-build}/kube-emu
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	tmp_remove
}
trap cleanup EXIT

for tool in curl jq; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		ok "$tool not installed: kube-emu actor checks skipped"
		finish
	fi
done
if [ ! -x "$EMU" ]; then
	not_ok "$EMU not built"
	finish
fi

# start_emu NAME ARGS...: start kube-emu and wait (5 s at most) until it
# answers /readyz; sets $url and $pid. 1 when it did not come up.
start_emu() {
	local name=$1 i
	shift
	"$EMU" --listen 127.0.0.1:0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	pid=$!
	url=
	for i in $(seq 50); do
		# The child may not have opened its output file yet.
		url=$(sed -n 's/^listening on //p' "$tmp/$name.out" 2>/dev/null)
		if [ -n "$url" ] &&
			curl -fsS --max-time 2 "$url/readyz" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# req METHOD PATH [BODY]: sets $code and $body.
req() {
	local args=(-sS --max-time 10 -o "$tmp/body" -w '%{http_code}' -X "$1")
	[ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	code=$(curl "${args[@]}" "$url$2")
	body=$(cat "$tmp/body")
}

# wait_for PATH JQ-FILTER: poll (10 s at most) until the filter is true
# for the object; $body is the last answer. 1 on timeout.
wait_for() {
	local i
	for i in $(seq 100); do
		req GET "$1"
		if [ "$code" = 200 ] && jq -e "$2" <<<"$body" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

deploy() { # NAME [REPLICAS]
	printf '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"%s","labels":{"app":"%s"}},"spec":{"replicas":%s,"selector":{"matchLabels":{"app":"%s"}},"template":{"metadata":{"labels":{"app":"%s"}},"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}}}' \
		"$1" "$1" "${2:-2}" "$1" "$1"
}

APPS=/apis/apps/v1/namespaces

# A bad SPEC is refused at start, naming the flag.
"$EMU" --listen 127.0.0.1:0 --webhook 'colour=red' >"$tmp/bad.out" 2>"$tmp/bad.err" &
bad=$!
for i in $(seq 50); do
	kill -0 "$bad" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$bad" 2>/dev/null; then
	kill "$bad"
	wait "$bad" 2>/dev/null
	not_ok "--webhook with an unknown key is refused"
else
	wait "$bad"
	rc=$?
	[ "$rc" -ne 0 ] && ok "--webhook with an unknown key exits $rc" ||
		not_ok "--webhook with an unknown key exits non-zero"
	expect_match 'webhook: unknown key "colour"' "$(cat "$tmp/bad.err")" \
		"--webhook error names the key"
fi

if ! start_emu actors \
	--webhook 'kind=Deployment,namespace=apps,sidecar=istio-proxy:docker.io/istio/proxyv2:1.24,annotation=sidecar.istio.io/status=injected' \
	--webhook 'name=policy.example.com,kind=ConfigMap,selector=forbidden=yes,deny=forbidden configmap' \
	--rollout 'ready-after=200ms' \
	--rollout 'kind=Deployment,name=broken,fail'; then
	not_ok "kube-emu --webhook --rollout starts"
	cat "$tmp/actors.err"
	finish
fi
ok "kube-emu --webhook --rollout starts"

req POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"apps"}}'
expect_eq "$code" 201 "namespace apps created"

# --- the webhook ---
req POST "$APPS/apps/deployments" "$(deploy web)"
expect_eq "$code" 201 "deployment created through the webhook"
expect_eq "$(jq -c '[.spec.template.spec.containers[].name]' <<<"$body")" \
	'["app","istio-proxy"]' "sidecar appended"
expect_eq "$(jq -r '.spec.template.spec.containers[1] | .image + " " + .imagePullPolicy' <<<"$body")" \
	'docker.io/istio/proxyv2:1.24 IfNotPresent' "sidecar image, defaulted"
expect_eq "$(jq -r '.metadata.annotations["sidecar.istio.io/status"]' <<<"$body")" \
	injected "annotation set"
expect_eq "$(jq '[.metadata.managedFields[]? | tostring | select(test("istio"))] | length' <<<"$body")" \
	0 "what the webhook added is owned by nobody"

# Unconditional (no resourceVersion): the rollout may write the status
# between the GET and the PUT.
req GET "$APPS/apps/deployments/web"
upd=$(jq -c '.spec.replicas = 3 | del(.metadata.resourceVersion)' <<<"$body")
req PUT "$APPS/apps/deployments/web" "$upd"
expect_eq "$code" 200 "deployment updated"
expect_eq "$(jq '[.spec.template.spec.containers[] | select(.name == "istio-proxy")] | length' <<<"$body")" \
	1 "the sidecar is not injected twice"
expect_eq "$(jq '.metadata.generation' <<<"$body")" 2 "update is generation 2"

req POST "$APPS/default/deployments" "$(deploy other 1)"
expect_eq "$(jq '.spec.template.spec.containers | length' <<<"$body")" 1 \
	"another namespace is not matched"

req POST /api/v1/namespaces/default/configmaps \
	'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad","labels":{"forbidden":"yes"}}}'
expect_eq "$code" 400 "denied write answers 400"
expect_eq "$(jq -c '{kind,status,message,code,reason}' <<<"$body")" \
	'{"kind":"Status","status":"Failure","message":"admission webhook \"policy.example.com\" denied the request: forbidden configmap","code":400,"reason":null}' \
	"denial Status as kube-apiserver writes it"
req GET /api/v1/namespaces/default/configmaps/bad
expect_eq "$code" 404 "denied object not stored"
req POST /api/v1/namespaces/default/configmaps \
	'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fine"}}'
expect_eq "$code" 201 "object outside the selector admitted"

# --- the rollouts ---
if wait_for "$APPS/apps/deployments/web" '.status.observedGeneration == 2'; then
	ok "deployment status written for the latest generation"
else
	not_ok "deployment status written for the latest generation"
fi
expect_eq "$(jq -c '.status | [.replicas, .updatedReplicas, .readyReplicas, .availableReplicas]' <<<"$body")" \
	'[3,3,3,3]' "deployment replicas counted"
expect_eq "$(jq -c '[.status.conditions[] | [.type, .status, .reason]]' <<<"$body")" \
	'[["Available","True","MinimumReplicasAvailable"],["Progressing","True","NewReplicaSetAvailable"]]' \
	"deployment conditions"
expect_match '^ReplicaSet "web-[a-z0-9]+" has successfully progressed\.$' \
	"$(jq -r '.status.conditions[1].message' <<<"$body")" "Progressing message"

req POST "$APPS/apps/deployments" "$(deploy broken)"
if wait_for "$APPS/apps/deployments/broken" '.status.observedGeneration == 1'; then
	ok "failing rollout reported"
else
	not_ok "failing rollout reported"
fi
expect_eq "$(jq -c '[(.status.conditions[] | select(.type == "Progressing") | [.status, .reason]), .status.unavailableReplicas]' <<<"$body")" \
	'[["False","ProgressDeadlineExceeded"],2]' "failing rollout conditions"

req POST /apis/apps/v1/namespaces/apps/statefulsets \
	'{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db"},"spec":{"replicas":2,"serviceName":"db","selector":{"matchLabels":{"app":"db"}},"template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"db","image":"postgres:17"}]}}}}'
expect_eq "$code" 201 "statefulset created"
wait_for "$APPS/apps/statefulsets/db" '.status.observedGeneration == 1'
expect_eq "$(jq -c '.status | [.replicas, .readyReplicas, .currentReplicas, .updatedReplicas, .availableReplicas, (.currentRevision == .updateRevision)]' <<<"$body")" \
	'[2,2,2,2,2,true]' "statefulset status"

req POST /apis/apps/v1/namespaces/default/daemonsets \
	'{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent"},"spec":{"selector":{"matchLabels":{"app":"agent"}},"template":{"metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"agent","image":"agent:1"}]}}}}'
wait_for /apis/apps/v1/namespaces/default/daemonsets/agent '.status.observedGeneration == 1'
expect_eq "$(jq -c '.status | [.desiredNumberScheduled, .currentNumberScheduled, .numberReady, .updatedNumberScheduled, .numberAvailable, .numberMisscheduled]' <<<"$body")" \
	'[1,1,1,1,1,0]' "daemonset status"

req POST /apis/batch/v1/namespaces/default/jobs \
	'{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"once"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"j","image":"busybox:1.36"}]}}}}'
expect_eq "$code" 201 "job created"
wait_for /apis/batch/v1/namespaces/default/jobs/once '.status.succeeded == 1'
expect_eq "$(jq -c '[.status.conditions[] | [.type, .status, .reason]]' <<<"$body")" \
	'[["SuccessCriteriaMet","True","CompletionsReached"],["Complete","True","CompletionsReached"]]' \
	"job conditions"

# --- the endpoints ---
req GET /emu/webhooks
expect_eq "$code" 200 "GET /emu/webhooks"
expect_eq "$(jq -c '[.webhooks[].name]' <<<"$body")" \
	'["webhook-1.kube-emu.local","policy.example.com"]' "webhooks listed"
req POST /emu/webhooks '{"name":"labels.example.com","match":{"kind":"ConfigMap","operations":["CREATE"]},"labels":{"team":"a"}}'
expect_eq "$code" 201 "POST /emu/webhooks"
req POST /api/v1/namespaces/default/configmaps \
	'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"labelled"}}'
expect_eq "$(jq -r '.metadata.labels.team' <<<"$body")" a "posted webhook applies"
req POST /emu/webhooks '{"match":"nope"}'
expect_eq "$code" 400 "malformed webhook refused"
req DELETE /emu/webhooks/policy.example.com
expect_eq "$code" 200 "DELETE /emu/webhooks/NAME"
req POST /api/v1/namespaces/default/configmaps \
	'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad","labels":{"forbidden":"yes"}}}'
expect_eq "$code" 201 "deleted webhook no longer denies"
req DELETE /emu/webhooks
expect_eq "$(jq -c . <<<"$body")" '{"deleted":2}' "DELETE /emu/webhooks"
req POST "$APPS/apps/deployments" "$(deploy plain)"
expect_eq "$(jq '.spec.template.spec.containers | length' <<<"$body")" 1 \
	"no sidecar without webhooks"

req POST /emu/rollouts 'rule=slow,kind=Job,ready-after=1h'
expect_eq "$code" 201 "POST /emu/rollouts with the flag syntax"
req GET /emu/rollouts/slow
expect_eq "$(jq -c '[.name, .readyAfterMs, .fail, .match.kind]' <<<"$body")" \
	'["slow",3600000,false,["Job"]]' "GET /emu/rollouts/NAME"
req DELETE /emu/rollouts
expect_eq "$(jq -c . <<<"$body")" '{"deleted":3}' "DELETE /emu/rollouts"
# Without rules nothing writes a status: "quiet" is stored before the
# marker's rule exists, the marker's status then proves the thread ran.
req POST "$APPS/apps/deployments" "$(deploy quiet)"
quiet_rv=$(jq -r .metadata.resourceVersion <<<"$body")
req POST /emu/rollouts '{"name":"marker","match":{"name":"marker"},"readyAfter":0}'
req POST "$APPS/apps/deployments" "$(deploy marker)"
wait_for "$APPS/apps/deployments/marker" '.status.observedGeneration == 1' &&
	ok "posted rollout rule applies" || not_ok "posted rollout rule applies"
req GET "$APPS/apps/deployments/quiet"
expect_eq "$(jq -c '[.status, .metadata.resourceVersion]' <<<"$body")" \
	"[{},\"$quiet_rv\"]" "no rollout configured: no status write"
req PUT /emu/rollouts '{}'
expect_eq "$code" 405 "PUT /emu/rollouts not allowed"

# The real kubectl reads the written statuses as it reads a cluster's.
if command -v kubectl >/dev/null 2>&1; then
	req DELETE /emu/rollouts
	req POST /emu/rollouts 'ready-after=100ms'
	req POST /emu/rollouts 'kind=Deployment,name=stuck,fail'
	cat >"$tmp/kc" <<-EOF
		apiVersion: v1
		kind: Config
		clusters: [{name: emu, cluster: {server: "$url"}}]
		users: [{name: emu, user: {}}]
		contexts: [{name: emu, context: {cluster: emu, user: emu, namespace: kubectl}}]
		current-context: emu
	EOF
	kc() { timeout 60 kubectl --kubeconfig "$tmp/kc" --cache-dir "$tmp/kcache" "$@" 2>&1; }
	req POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kubectl"}}'
	for n in rolled stuck; do
		deploy "$n" >"$tmp/$n.json"
		kc apply -f "$tmp/$n.json" >/dev/null
	done
	req POST /apis/apps/v1/namespaces/kubectl/statefulsets \
		'{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db"},"spec":{"replicas":2,"serviceName":"db","selector":{"matchLabels":{"app":"db"}},"template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"db","image":"postgres:17"}]}}}}'
	req POST /apis/apps/v1/namespaces/kubectl/daemonsets \
		'{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent"},"spec":{"selector":{"matchLabels":{"app":"agent"}},"template":{"metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"agent","image":"agent:1"}]}}}}'
	req POST /apis/batch/v1/namespaces/kubectl/jobs \
		'{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"once"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"j","image":"busybox:1.36"}]}}}}'
	got=$(kc rollout status deployment/rolled --timeout=30s)
	expect_eq "$got" 'deployment "rolled" successfully rolled out' \
		"kubectl rollout status deployment"
	got=$(kc rollout status deployment/stuck --timeout=30s)
	expect_eq "$got" 'error: deployment "stuck" exceeded its progress deadline' \
		"kubectl rollout status on a failed rollout"
	got=$(kc rollout status statefulset/db --timeout=30s)
	expect_match '^(partitioned roll out complete: 2 new pods have been updated\.\.\.|statefulset rolling update complete 2 pods at revision db-[a-z0-9]+\.\.\.)$' \
		"$got" "kubectl rollout status statefulset"
	got=$(kc rollout status daemonset/agent --timeout=30s)
	expect_eq "$got" 'daemon set "agent" successfully rolled out' \
		"kubectl rollout status daemonset"
	got=$(kc wait --for=condition=complete job/once --timeout=30s)
	expect_eq "$got" 'job.batch/once condition met' "kubectl wait for a complete job"
else
	ok "kubectl not installed: kubectl checks skipped"
fi

# A pending rollout an hour away does not hold up shutdown.
req POST /emu/rollouts 'ready-after=1h'
req POST "$APPS/apps/deployments" "$(deploy later)"
kill -TERM "$pid"
for i in $(seq 50); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
wait "$pid" 2>/dev/null
rc=$?
pid=
expect_eq "$rc" 0 "SIGTERM with a pending rollout exits 0"
[ "$rc" -eq 0 ] || head -c 3000 "$tmp/actors.err"

finish
