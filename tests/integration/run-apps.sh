#!/usr/bin/env bash
# Apps declared as App objects, against kube-emu (the real control plane
# proves more: tests/real/apps.sh) and a real Git server over HTTPS with
# basic auth, whose credentials come from a Secret (source.secretRef):
#  - an App created after syncd started converges, and its status says
#    Ready, with observedGeneration, the revision and the counts;
#  - a resync that changes nothing writes no status (no PATCH of apps);
#  - an App with an invalid spec (what a schema cannot say: a local
#    repository) is Stalled with reason InvalidSpec and the field named;
#    an App declaring an object of another namespace is Stalled with
#    NamespaceNotAllowed, and nothing of it is applied;
#  - an App waiting for a dependency is Reconciling, the dependency named;
#  - the HTTP API shows an App's app with its status and the App it
#    comes from;
#  - deleting the App stops it; its objects stay.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"
. "$(dirname "${BASH_SOURCE[0]}")/git/servers.sh"

need_tools "App object checks" curl jq git openssl
cleanup() {
	gitsrv_stop_all
	emu_cleanup
}
trap cleanup EXIT
gitsrv_env

if ! gitsrv_repo_start deploy; then
	ok "no Git server here: App object checks skipped: $gitsrv_why"
	finish
fi
mkdir -p "$work/web" "$work/bad"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: "1"}\n' \
	>"$work/web/cm.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: other}\ndata: {a: "1"}\n' \
	>"$work/bad/cm.yaml"
if ! c1=$(gitsrv_push one); then
	not_ok "the app is pushed to the Git server"
	finish
fi
REPO_URL=$repo_url

emu_start_tls
# The CRD as shipped, made established by kube-emu.
crd=$("$SYNCD" render "$top/examples/deploy/app-crd.yaml" -o json | jq -c '.items[0]')
api POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions application/json "$crd"
expect_eq "$code" 201 "the App CRD of examples/deploy is created"
for ns in team-a other; do
	api POST /api/v1/namespaces application/json "{\"metadata\":{\"name\":\"$ns\"}}"
done
b64() { printf '%s' "$1" | base64 -w0; }
api POST /api/v1/namespaces/team-a/secrets application/json \
	"$(jq -nc --arg u "$(b64 alice)" --arg p "$(b64 s3cret-pass-8c1f)" --arg ca "$(base64 -w0 <"$tmp/tls/ca.pem")" \
		'{metadata: {name: "git"}, data: {username: $u, password: $p, "ca.crt": $ca}}')"
expect_eq "$code" 201 "the Git credentials are a Secret of team-a"

cat >"$tmp/syncd.yaml" <<EOF
resync: 2s
listen: 127.0.0.1:0
kubeconfig: $tmp/kc
cacheDir: $tmp/cache
appObjects: {}
EOF
"$SYNCD" run -c "$tmp/syncd.yaml" >"$tmp/run.out" 2>"$tmp/run.err" &
syncd_pid=$!
pids+=("$syncd_pid")

app_json() { # NAME PATH [REPO]
	jq -nc --arg n "$1" --arg p "$2" --arg r "${3:-$REPO_URL}" \
		'{apiVersion: "syncd.io/v1alpha1", kind: "App", metadata: {name: $n},
		  spec: {source: {repo: $r, revision: "main", path: $p, interval: "1s",
		  secretRef: {name: "git"}}}}'
}
APPS=/apis/syncd.io/v1alpha1/namespaces/team-a/apps
api POST "$APPS" application/json "$(app_json web web)"
expect_eq "$code" 201 "an App is created after syncd started"
cond() { # APP TYPE: the condition's status
	api GET "$APPS/$1"
	printf '%s' "$body" | jq -r --arg t "$2" '.status.conditions[]? | select(.type == $t) | .status'
}
cond_is() { [ "$(cond "$1" "$2")" = "$3" ]; }
if wait_for 30 cond_is web Ready True; then
	ok "the App converges and its status says Ready"
else
	not_ok "the App converges and its status says Ready: $(cond web Ready) $(tail -n 5 "$tmp/run.err")"
fi
api GET /api/v1/namespaces/team-a/configmaps/web
expect_eq "$code $(printf '%s' "$body" | jq -r .data.a)" "200 1" \
	"its ConfigMap is in its namespace (the App's namespace is the default)"
api GET "$APPS/web"
expect_eq "$(printf '%s' "$body" | jq -r '[.status.observedGeneration == .metadata.generation, .status.lastAppliedRevision, .status.summary.drifted, .status.health.status] | map(tostring) | join(" ")')" \
	"true $c1 0 Healthy" "status: observedGeneration, lastAppliedRevision, the counts and the health"

n=$(count patch apps.syncd.io)
if [ "$n" -ge 1 ]; then
	ok "the status was written ($n PATCH of apps so far)"
else
	not_ok "the status was written with PATCH: $n"
fi
sleep 2.5
reset_stats
sleep 5 # two resyncs at least
expect_eq "$(count patch apps.syncd.io) $(count update apps.syncd.io)" "0 0" \
	"resyncs that change nothing write no App status"

api POST "$APPS" application/json "$(app_json local web /srv/repo.git)"
if wait_for 20 cond_is local Stalled True; then
	api GET "$APPS/local"
	expect_eq "$(printf '%s' "$body" | jq -r '.status.conditions[] | select(.type == "Stalled") | "\(.reason): \(.message)"')" \
		'InvalidSpec: App team-a/local: spec.source.repo: "/srv/repo.git": an App reads https://, http://, ssh://, oci:// or user@host:path repositories only' \
		"an App with a local repository is Stalled, the field and the cause named"
else
	not_ok "an App with a local repository is Stalled"
fi
api POST "$APPS" application/json "$(app_json bad bad)"
if wait_for 20 cond_is bad Stalled True; then
	api GET "$APPS/bad"
	expect_match '^NamespaceNotAllowed: ConfigMap other/web: an App of namespace team-a may not manage objects of namespace other' \
		"$(printf '%s' "$body" | jq -r '.status.conditions[] | select(.type == "Stalled") | "\(.reason): \(.message)"')" \
		"an App declaring an object of another namespace is Stalled"
else
	not_ok "an App declaring an object of another namespace is Stalled"
fi
api GET /api/v1/namespaces/other/configmaps/web
expect_eq "$code" 404 "and nothing of it is applied"

# What a pass waits for is on the App: Reconciling, the dependency named.
api POST "$APPS" application/json "$(app_json waits web | jq -c '.spec.dependsOn = ["nope"]')"
if wait_for 20 cond_is waits Reconciling True; then
	api GET "$APPS/waits"
	expect_eq "$(printf '%s' "$body" | jq -r '.status.conditions[] | select(.type == "Reconciling" or .type == "Ready") | "\(.type)=\(.status) \(.reason): \(.message)"' | tr '\n' '|')" \
		"Ready=False Progressing: waiting for app nope: not configured|Reconciling=True Progressing: waiting for app nope: not configured|" \
		"an App waiting for a dependency is Reconciling, the dependency named"
else
	not_ok "an App waiting for a dependency is Reconciling: $(cond waits Reconciling)"
fi

port=$(sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$tmp/run.err" | head -1)
doc=$(curl -sS --max-time 5 "http://127.0.0.1:$port/api/v1/apps/web")
expect_eq "$(printf '%s' "$doc" | jq -r '"\(.object.namespace)/\(.object.name) \(.status.conditions[0].type)=\(.status.conditions[0].status)"')" \
	"team-a/web Ready=True" "GET /api/v1/apps/web names the App and carries its status"

api DELETE "$APPS/web"
gone() { grep -q 'msg="App objects: apps switched".*removed=1' "$tmp/run.err"; }
if wait_for 20 gone; then
	ok "deleting the App stops its app"
else
	not_ok "deleting the App stops its app"
fi
api GET /api/v1/namespaces/team-a/configmaps/web
expect_eq "$code" 200 "its objects stay"
if grep -q s3cret-pass-8c1f "$tmp/run.err" "$tmp/run.out"; then
	not_ok "the Git password from the Secret appears in syncd's logs"
else
	ok "the Git password from the Secret appears nowhere in syncd's logs"
fi
term_wait "$syncd_pid"
expect_eq "$rc" 0 "syncd run stops cleanly"
finish
