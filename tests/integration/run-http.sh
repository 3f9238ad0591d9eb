#!/usr/bin/env bash
# The HTTP endpoint, metrics, Events and `syncd status` of `syncd run`,
# against kube-emu (TLS, token) and a file:// repository made here:
# /healthz and /readyz; /api/v1/apps and /api/v1/apps/NAME with drift
# reported (selfHeal off) and first-seen times kept across passes, and
# behind the bearer token of api.tokenFile (401 without it); the
# HPA's replicas as a foreign field; POST .../sync with and without the
# bearer token; GitHub and GitLab push webhooks (good and bad signatures:
# a push with a bad one changes nothing, a good one applies the new commit
# with the poll at an hour); oversized bodies; unknown apps; /metrics with
# every family (and `promtool check metrics` when installed); Events in
# the cluster; `syncd status` for all apps and for one (with
# --token-file, $SYNCD_TOKEN_FILE, and refused without); the apps' health
# (kube-emu's rollout stand-in makes the Deployments available) in
# /api/v1/apps, syncd_app_health, an Event and `syncd status`.
# Loopback only; every wait is bounded; everything is killed on exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"

need_tools "run-http checks" curl jq git openssl

emu_start_tls
api POST /emu/rollouts application/json \
	'{"name":"ready","match":{"kind":"Deployment"},"readyAfter":"200ms"}'

repo="$tmp/repo"
mkdir -p "$repo/apps/web" "$repo/apps/report"
deploy() { # NAME IMAGE
	cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
spec:
  replicas: 1
  selector:
    matchLabels: {app: $1}
  template:
    metadata:
      labels: {app: $1}
    spec:
      containers:
        - name: $1
          image: $2
EOF
}
deploy web nginx:1.0 >"$repo/apps/web/deploy.yaml"
deploy watched nginx:1.0 >"$repo/apps/report/deploy.yaml"
gitq() {
	git -C "$repo" -c user.name=t -c user.email=t@example.com \
		-c commit.gpgsign=false "$@" >/dev/null 2>&1
}
gitq init -b main && gitq add -A && gitq commit -m one

printf 'api-token-1\n' >"$tmp/api-token"
printf 'gh-hook-7c2e\n' >"$tmp/gh-secret"
printf 'gl-hook-91ab\n' >"$tmp/gl-token"
canary_plant "the API token" api-token-1
canary_plant "the GitHub webhook secret" gh-hook-7c2e
canary_plant "the GitLab webhook token" gl-hook-91ab
canary_input "$tmp/api-token" "$tmp/gh-secret" "$tmp/gl-token"
cat >"$tmp/syncd.yaml" <<EOF
resync: 1h
listen: 127.0.0.1:0
kubeconfig: $tmp/kc
cacheDir: $tmp/cache
api:
  tokenFile: $tmp/api-token
webhook:
  githubSecretFile: $tmp/gh-secret
  gitlabTokenFile: $tmp/gl-token
apps:
  - name: web
    source:
      repo: file://$repo
      revision: main
      path: apps/web
      interval: 1h
    namespace: default
  - name: report
    source:
      repo: file://$repo
      revision: main
      path: apps/report
      interval: 1h
    namespace: default
    selfHeal: false
EOF

# The report-only app's objects exist before the controller starts (it
# never writes): a one-shot sync makes them, under the same app name.
run_syncd sync --kubeconfig "$tmp/kc" -n default --app report "$repo/apps/report"
expect_rc 0 "the report-only app's objects are created by syncd sync"

"$SYNCD" run -c "$tmp/syncd.yaml" >"$tmp/run.out" 2>"$tmp/run.err" &
run_pid=$!
pids+=("$run_pid")
port_known() { grep -q 'msg="serving HTTP".* port=[1-9]' "$tmp/run.err"; }
if ! wait_for 20 port_known; then
	not_ok "the endpoint starts: $(head -c 2000 "$tmp/run.err")"
	finish
fi
port=$(sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$tmp/run.err" | head -1)
ep="http://127.0.0.1:$port"
ok "the endpoint listens on 127.0.0.1:$port (listen :0)"

# hget PATH [CURL ARGS...]: sets $hcode and $hbody.
hget() {
	local p=$1
	shift
	hcode=$(curl -sS --max-time 10 -o "$tmp/.h" -w '%{http_code}' "$@" "$ep$p")
	hbody=$(cat "$tmp/.h")
	# Every answer (reports, diffs, /metrics, errors) is searched for
	# the planted tokens and webhook secrets.
	canary_check "GET $p" "$hbody" || status=1
}
# aget PATH [CURL ARGS...]: hget with the API token (api.tokenFile is set,
# so the apps' documents need it).
aget() { hget "$@" -H "Authorization: Bearer api-token-1"; }

hget /healthz
expect_eq "$hcode $hbody" "200 ok" "/healthz answers ok"
ready() { hget /readyz && [ "$hcode" = 200 ]; }
if wait_for 30 ready; then ok "/readyz turns ready"; else not_ok "/readyz turns ready: $hcode $hbody"; fi
in_sync() {
	aget /api/v1/apps
	[ "$(printf '%s' "$hbody" | jq -r '[.apps[].state] | join(",")')" = "InSync,InSync" ]
}
if wait_for 30 in_sync; then
	ok "/api/v1/apps: both apps InSync"
else
	not_ok "/api/v1/apps: both apps InSync: $hbody"
fi
rev=$(git -C "$repo" rev-parse HEAD)
expect_eq "$(printf '%s' "$hbody" | jq -r '"\(.kind) \(.leader) \(.apps[0].name) \(.apps[0].revision) \(.apps[0].path) \(.apps[0].lastSync.result) \(.apps[0].driftSince)"')" \
	"AppList true web $rev apps/web success null" \
	"/api/v1/apps: name, revision, path, last sync, no drift"

# --- the apps' documents need the token (api.tokenFile is set) -------------
hget /api/v1/apps
expect_eq "$hcode $(printf '%s' "$hbody" | jq -r .error)" \
	"401 missing or wrong bearer token" "GET /api/v1/apps without the token: 401"
hget /api/v1/apps/web -H "Authorization: Bearer wrong"
expect_eq "$hcode" 401 "GET /api/v1/apps/web with a wrong token: 401"
hget /api/v1/apps/nope
expect_eq "$hcode" 401 "GET an unknown app without the token: 401 (names do not leak)"
aget /api/v1/apps/web
expect_eq "$hcode $(printf '%s' "$hbody" | jq -r .name)" "200 web" \
	"GET /api/v1/apps/web with the token: 200"
hget /
expect_eq "$hcode" 200 "GET / (the browser view, no data) needs no token"
hget /metrics
expect_eq "$hcode" 200 "GET /metrics stays open"

# --- health -------------------------------------------------------------------
healthy() {
	aget /api/v1/apps/web
	[ "$(printf '%s' "$hbody" | jq -r .health.status)" = Healthy ]
}
if wait_for 20 healthy; then
	ok "/api/v1/apps/web: Healthy once its Deployment is available"
else
	not_ok "/api/v1/apps/web: Healthy: $(printf '%s' "$hbody" | jq -c .health)"
fi
aget /api/v1/apps
expect_eq "$(printf '%s' "$hbody" | jq -r '[.apps[] | "\(.name)=\(.health.status)"] | join(" ")')" \
	"web=Healthy report=Healthy" "/api/v1/apps: each app's health"

# --- drift reported (selfHeal off), first seen kept -----------------------
api PATCH "/apis/apps/v1/namespaces/default/deployments/watched?fieldManager=kubectl-edit" \
	application/strategic-merge-patch+json \
	'{"spec":{"template":{"spec":{"containers":[{"name":"watched","image":"nginx:edited"}]}}}}'
drifted() {
	aget /api/v1/apps/report
	[ "$(printf '%s' "$hbody" | jq -r .state)" = Drifted ]
}
if wait_for 20 drifted; then
	ok "/api/v1/apps/report: the manual edit shows as Drifted"
else
	not_ok "/api/v1/apps/report shows Drifted: $hbody"
fi
field='.report.objects[] | select(.name == "watched") | .fields[0]'
expect_eq "$(printf '%s' "$hbody" | jq -r "$field | \"\(.path) \(.owner) \(.live) \(.managers[0].manager)\"")" \
	'.spec.template.spec.containers[name="watched"].image self nginx:edited kubectl-edit' \
	"the report names the field, its value and the person's tool"
first=$(printf '%s' "$hbody" | jq -r "$field | .firstSeen")
since=$(printf '%s' "$hbody" | jq -r .driftSince)
expect_match '^20[0-9-]+T[0-9:]+Z$' "$first" "the field has a firstSeen time"
expect_match '^20[0-9-]+T[0-9:]+Z$' "$since" "the app has a driftSince time"
sleep 1.2
# Another pass (requested over HTTP) keeps the first-seen time.
hget /api/v1/apps/report/sync -X POST -H "Authorization: Bearer api-token-1"
expect_eq "$hcode" 202 "POST /api/v1/apps/report/sync with the token: 202"
passes() { grep -c 'msg="pass done" app=report ' "$tmp/run.err"; }
p0=$(passes)
more_passes() { [ "$(passes)" -gt "$p0" ]; }
wait_for 10 more_passes || true
wait_for 10 more_passes || true
aget /api/v1/apps/report
expect_eq "$(printf '%s' "$hbody" | jq -r "$field | .firstSeen") $(printf '%s' "$hbody" | jq -r .driftSince)" \
	"$first $since" "a later pass keeps firstSeen and driftSince"
hget /api/v1/apps/report/sync -X POST
expect_eq "$hcode" 401 "POST .../sync without a token: 401"
hget /api/v1/apps/report/sync -X POST -H "Authorization: Bearer wrong"
expect_eq "$hcode" 401 "POST .../sync with a wrong token: 401"
hget /api/v1/apps/nope/sync -X POST -H "Authorization: Bearer api-token-1"
expect_eq "$hcode" 404 "POST .../sync of an unknown app: 404"
aget /api/v1/apps/nope
expect_eq "$hcode $(printf '%s' "$hbody" | jq -r .error)" '404 unknown app "nope"' \
	"GET an unknown app: 404 with a JSON error"

# --- a foreign field -------------------------------------------------------
api PATCH /apis/apps/v1/namespaces/default/deployments/web/scale?fieldManager=kube-controller-manager \
	application/merge-patch+json '{"spec":{"replicas":3}}'
hget /api/v1/apps/web/sync -X POST -H "Authorization: Bearer api-token-1"
foreign() {
	aget /api/v1/apps/web
	[ "$(printf '%s' "$hbody" | jq -r '.summary.foreignFields')" = 1 ]
}
if wait_for 10 foreign; then
	ok "the HPA-style replicas show as one foreign field"
else
	not_ok "the HPA-style replicas show as one foreign field: $(printf '%s' "$hbody" | jq -c .summary)"
fi

# --- webhooks ---------------------------------------------------------------
deploy web nginx:2.0 >"$repo/apps/web/deploy.yaml"
gitq commit -am two
payload=$(jq -cn --arg u "file://$repo" '{ref: "refs/heads/main", repository: {clone_url: $u, html_url: "https://example.com/x"}}')
sig() { printf '%s' "$1" | openssl dgst -sha256 -hmac "$2" | sed 's/^.*= //'; }
hget /hooks/git -X POST -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
	-H "X-Hub-Signature-256: sha256=$(sig "$payload" wrong-secret)" --data-binary "$payload"
expect_eq "$hcode" 401 "GitHub push with a bad signature: 401"
sleep 1.5
image() {
	api GET /apis/apps/v1/namespaces/default/deployments/web
	printf '%s' "$body" | jq -r '.spec.template.spec.containers[0].image'
}
expect_eq "$(image)" nginx:1.0 "a push with a bad signature changes nothing"
hget /hooks/git -X POST -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
	-H "X-Hub-Signature-256: sha256=$(sig "$payload" gh-hook-7c2e)" --data-binary "$payload"
expect_eq "$hcode $(printf '%s' "$hbody" | jq -r .triggered)" "202 2" \
	"GitHub push with a good signature: 202, both apps of the repository polled"
image_is() { [ "$(image)" = "$1" ]; }
if wait_for 20 image_is nginx:2.0; then
	ok "the pushed commit is applied at once (poll interval 1h)"
else
	not_ok "the pushed commit is applied at once: $(image)"
fi
gl=$(jq -cn --arg u "file://$repo" '{object_kind: "push", ref: "refs/heads/other", project: {git_http_url: $u}}')
hget /hooks/git -X POST -H "Content-Type: application/json" -H "X-Gitlab-Event: Push Hook" \
	-H "X-Gitlab-Token: gl-hook-91ab" --data-binary "$gl"
expect_eq "$hcode $(printf '%s' "$hbody" | jq -r .triggered)" "202 0" \
	"GitLab push to another branch: 202, nothing polled"
hget /hooks/git -X POST -H "Content-Type: application/json" -H "X-Gitlab-Event: Push Hook" \
	-H "X-Gitlab-Token: nope" --data-binary "$gl"
expect_eq "$hcode" 401 "GitLab push with a wrong token: 401"
head -c 2000000 /dev/zero | tr '\0' 'x' >"$tmp/big"
hget /hooks/git -X POST -H "Content-Type: application/json" -H "X-GitHub-Event: push" \
	--data-binary @"$tmp/big"
expect_eq "$hcode" 413 "an oversized body: 413"

# --- a failing write: a SyncFailed Event ------------------------------------
# The edit is an update (PUT, as kubectl edit sends); only syncd's apply
# (a PATCH) meets the fault.
api POST /emu/faults text/plain 'verb=patch,resource=deployments.apps,name=web,dryRun=false,code=422,count=1'
api GET /apis/apps/v1/namespaces/default/deployments/web
printf '%s' "$body" |
	jq '.spec.template.spec.containers[0].image = "nginx:edited"' >"$tmp/edit.json"
api PUT "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=kubectl-edit" \
	application/json "$(cat "$tmp/edit.json")"
expect_eq "$code" 200 "kubectl edit-style update of web's image"
sync_failed() {
	api GET /apis/events.k8s.io/v1/namespaces/default/events
	[ "$(printf '%s' "$body" | jq -r '[.items[] | select(.reason == "SyncFailed" and .regarding.name == "web")] | length')" -ge 1 ]
}
if wait_for 15 sync_failed; then
	ok "a write the server refuses leaves a SyncFailed Event on the object"
else
	not_ok "a SyncFailed Event on the object: $(printf '%s' "$body" | jq -c '[.items[].reason]')"
fi
failed_state() {
	aget /api/v1/apps/web
	[ "$(printf '%s' "$hbody" | jq -r .lastSync.result)" = failure ]
}
if wait_for 10 failed_state; then
	ok "/api/v1/apps/web: the failed pass shows (lastSync failure, error)"
else
	not_ok "the failed pass shows in the app's status: $hbody"
fi
if wait_for 30 image_is nginx:2.0; then
	ok "the retry after the failure heals the edit"
else
	not_ok "the retry after the failure heals the edit: $(image)"
fi

# --- metrics ----------------------------------------------------------------
# The heal above made a new rollout: web is Healthy again once it is done.
if wait_for 15 healthy; then
	ok "web is Healthy again after the healed edit's rollout"
else
	not_ok "web is Healthy again: $(printf '%s' "$hbody" | jq -c .health)"
fi
hget /metrics
printf '%s\n' "$hbody" >"$tmp/metrics.txt"
for fam in syncd_app_info syncd_app_objects syncd_app_drifted_fields \
	syncd_app_drift_seconds syncd_app_last_sync_timestamp_seconds \
	syncd_sync_total syncd_reconcile_duration_seconds syncd_app_health \
	syncd_git_requests_total syncd_source_requests_total \
	syncd_kube_requests_total syncd_leader; do
	if grep -q "^# TYPE $fam " "$tmp/metrics.txt"; then
		ok "/metrics has $fam"
	else
		not_ok "/metrics has $fam"
	fi
done
expect_match '^syncd_sync_total\{app="web",result="success"\} [1-9]' \
	"$hbody" "/metrics counts the passes of web"
expect_match '^syncd_app_objects\{app="report",state="Drifted"\} 1$' \
	"$hbody" "/metrics: report has one Drifted object"
expect_match '^syncd_app_drift_seconds\{app="report"\} [1-9]' \
	"$hbody" "/metrics: report has been out of sync for some seconds"
expect_match '^syncd_kube_requests_total\{cluster="default",code="200",verb="[a-z]+"\} [1-9]' \
	"$hbody" "/metrics counts API requests by verb and code"
expect_match '^syncd_leader 1$' "$hbody" "/metrics: syncd_leader 1 without leader election"
expect_eq "$(grep '^syncd_app_health{app="web",' "$tmp/metrics.txt" | sort | tr '\n' ' ')" \
	'syncd_app_health{app="web",status="Degraded"} 0 syncd_app_health{app="web",status="Healthy"} 1 syncd_app_health{app="web",status="Missing"} 0 syncd_app_health{app="web",status="Progressing"} 0 syncd_app_health{app="web",status="Suspended"} 0 syncd_app_health{app="web",status="Unknown"} 0 ' \
	"/metrics: syncd_app_health is 1 for web's health only"
if command -v promtool >/dev/null 2>&1; then
	if promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.out" 2>&1; then
		ok "promtool check metrics accepts /metrics"
	else
		not_ok "promtool check metrics: $(head -c 1000 "$tmp/promtool.out")"
	fi
else
	ok "promtool not installed: format check skipped"
fi

# --- Events -----------------------------------------------------------------
api GET /apis/events.k8s.io/v1/namespaces/default/events
expect_match '"reason": *"ForeignFields"' "$body" \
	"an Event reports the foreign field on the Deployment"
expect_eq "$(printf '%s' "$body" | jq -r '[.items[] | select(.reason == "Healthy" and .regarding.kind == "Secret" and .regarding.name == "web")] | length > 0')" \
	true "an Event on web's inventory Secret says it became Healthy"

# --- syncd status -------------------------------------------------------------
if "$SYNCD" status --addr "$ep" --token-file "$tmp/api-token" >"$tmp/st.out" 2>"$tmp/st.err"; then
	ok "syncd status exits 0"
else
	not_ok "syncd status exits 0: $(cat "$tmp/st.err")"
fi
expect_match '^report +Drifted ' "$(cat "$tmp/st.out")" "syncd status lists report as Drifted"
expect_match '^web +InSync +Healthy ' "$(cat "$tmp/st.out")" "syncd status lists web as InSync and Healthy"
if [ "$(awk '{ if (length($0) > 80) n++ } END { print n + 0 }' "$tmp/st.out")" = 0 ]; then
	ok "syncd status fits 80 columns"
else
	not_ok "syncd status fits 80 columns: $(cat "$tmp/st.out")"
fi
SYNCD_TOKEN_FILE="$tmp/api-token" "$SYNCD" status report --addr "$ep" >"$tmp/st1.out" 2>&1
expect_match 'containers\[name="watched"\]\.image' "$(cat "$tmp/st1.out")" \
	"syncd status report shows the drifted field"
"$SYNCD" status nope --addr "$ep" --token-file "$tmp/api-token" >"$tmp/st2.out" 2>&1
rc=$?
expect_rc 2 "syncd status of an unknown app: exit 2"
expect_match 'unknown app "nope"' "$(cat "$tmp/st2.out")" "syncd status names the unknown app"
"$SYNCD" status --addr "$ep" -o json --token-file "$tmp/api-token" >"$tmp/st3.out" 2>&1
expect_eq "$(jq -r '.apps | length' "$tmp/st3.out")" 2 "syncd status -o json: the document"
"$SYNCD" status --addr "$ep" >"$tmp/st4.out" 2>&1
rc=$?
expect_rc 2 "syncd status without the token: exit 2"
expect_match 'HTTP 401.*--token-file' "$(cat "$tmp/st4.out")" \
	"syncd status without the token says so and names --token-file"
if grep -q 'api-token-1' "$tmp"/st*.out; then
	not_ok "syncd status never prints the token"
else
	ok "syncd status never prints the token"
fi

term_wait "$run_pid"
expect_rc 0 "SIGTERM: the controller exits 0"
if grep -q 'api-token-1\|gh-hook-7c2e\|gl-hook-91ab\|Bearer' "$tmp/run.err"; then
	not_ok "no secret in the log"
else
	ok "no secret in the log"
fi
finish
