#!/usr/bin/env bash
# dependsOn between the apps of `syncd run`, against kube-emu and its
# rollout stand-in: app web depends on app db, whose Deployment becomes
# available after 3 s; web's objects are created only after that (and
# web's status says what it waits for meanwhile); a dependsOn on an
# unknown app and a cycle are configuration errors naming the line and
# the cycle, and nothing starts.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"

need_tools "dependsOn checks" curl jq git openssl
emu_start_tls
api POST /emu/rollouts application/json \
	'{"name":"slow","match":{"kind":"Deployment"},"readyAfter":"3s"}'

repo=$tmp/repo
mkdir -p "$repo/db" "$repo/web"
cat >"$repo/db/db.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: default}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "registry.example/db:1"}]
EOF
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: default}\ndata: {a: "1"}\n' \
	>"$repo/web/web.yaml"
git -C "$repo" -c user.name=t -c user.email=t@example.com -c commit.gpgsign=false \
	init -q -b main && git -C "$repo" add -A &&
	git -C "$repo" -c user.name=t -c user.email=t@example.com \
		-c commit.gpgsign=false commit -qm one

config() { # EXTRA-YAML-FOR-WEB
	cat <<EOF
resync: 1h
listen: 127.0.0.1:0
kubeconfig: $tmp/kc
cacheDir: $tmp/cache
apps:
  - name: web
    source: {repo: "file://$repo", revision: main, path: web, interval: 1h}
    namespace: default
$1
  - name: db
    source: {repo: "file://$repo", revision: main, path: db, interval: 1h}
    namespace: default
EOF
}

# Bad input first: each a FILE:LINE error, nothing started.
config '    dependsOn: [nope]' >"$tmp/bad.yaml"
run_syncd run -c "$tmp/bad.yaml" --check
expect_eq "$rc $errout" \
	"2 error: $tmp/bad.yaml:9: apps[0].dependsOn[0]: unknown app \"nope\"" \
	"dependsOn on an unknown app: an error naming the line"
config '    dependsOn: [db]' >"$tmp/cycle.yaml"
printf '    dependsOn: [web]\n' >>"$tmp/cycle.yaml"
run_syncd run -c "$tmp/cycle.yaml" --check
expect_eq "$rc $errout" \
	"2 error: $tmp/cycle.yaml:9: apps[0].dependsOn: a cycle: web -> db -> web" \
	"a cycle: an error naming it"
api GET /api/v1/namespaces/default/configmaps/web
expect_eq "$code" 404 "nothing was written"

config '    dependsOn: [db]' >"$tmp/syncd.yaml"
"$SYNCD" run -c "$tmp/syncd.yaml" >"$tmp/run.out" 2>"$tmp/run.err" &
pids+=("$!")
web_made() {
	api GET /api/v1/namespaces/default/configmaps/web
	[ "$code" = 200 ]
}
if wait_for 30 web_made; then
	ok "web's ConfigMap is created in the end"
else
	not_ok "web's ConfigMap is created: $(tail -n 5 "$tmp/run.err")"
fi
created=$(printf '%s' "$body" | jq -r .metadata.creationTimestamp)
api GET /apis/apps/v1/namespaces/default/deployments/db
ready=$(printf '%s' "$body" | jq -r '.status.conditions[]? | select(.type == "Available") | .lastTransitionTime')
expect_eq "$([ -n "$ready" ] && [[ ! "$created" < "$ready" ]] && echo after)" after \
	"web was applied ($created) once db was available ($ready)"
expect_match 'msg="waiting for a dependency" app=web waiting="waiting for app db: ' \
	"$(cat "$tmp/run.err")" "the log says what web waited for"
finish
