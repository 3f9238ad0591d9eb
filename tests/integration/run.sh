#!/usr/bin/env bash
# syncd run against kube-emu (TLS, token) with a file:// repository made
# here holding two apps: --once converges both; the controller applies a
# pushed commit after the poll interval, restores an image changed with
# kubectl edit by the next resync (watch off), leaves an HPA's replicas alone with no
# PATCH over several resyncs, settles an unchanged object from the verdict
# kept of its version and still heals it once edited, and exits 0 on
# SIGTERM; a bad config exits
# 2 naming FILE:LINE. Loopback only; every wait is bounded; the emulator
# and the controller are killed on exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"

need_tools "run checks" curl jq git

# --- a bad config: exit 2, every problem as FILE:LINE, nothing starts --
cat >"$tmp/bad.yaml" <<'EOF'
resync: 1s
workers: two
apps:
  - name: a
    source:
      repo: file:///nonexistent
    colour: blue
EOF
run_syncd run -c "$tmp/bad.yaml"
expect_rc 2 "bad config: exit 2"
expect_match "bad\.yaml:2:" "$errout" "bad config: the wrong type is named with its line"
expect_match "bad\.yaml:7:" "$errout" "bad config: the unknown key is named with its line"
run_syncd run --check -c "$tmp/bad.yaml"
expect_rc 2 "run --check of the bad config: exit 2"
expect_match "bad\.yaml:2:" "$errout" "run --check names the problems with their lines"

# --- kube-emu ------------------------------------------------------------
emu_start_tls


# --- the repository: two apps ------------------------------------------
repo="$tmp/repo"
mkdir -p "$repo/apps/a" "$repo/apps/b"
deploy() {
	cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: $1
EOF
}
deploy nginx:1.0 >"$repo/apps/a/deploy.yaml"
cat >"$repo/apps/b/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  colour: blue
EOF
gitq() {
	git -C "$repo" -c user.name=t -c user.email=t@example.com \
		-c commit.gpgsign=false "$@" >/dev/null 2>&1
}
gitq init -b main && gitq add -A && gitq commit -m one
if [ -z "$(git -C "$repo" rev-parse HEAD 2>/dev/null)" ]; then
	not_ok "test repository created"
	finish
fi

cat >"$tmp/syncd.yaml" <<EOF
resync: 1s
workers: 2
watch: false
listen: 127.0.0.1:0
kubeconfig: $tmp/kc
cacheDir: $tmp/cache
log:
  format: logfmt
  level: info
apps:
  - name: a
    source:
      repo: file://$repo
      revision: main
      path: apps/a
      interval: 1s
    namespace: default
  - name: b
    source:
      repo: file://$repo
      revision: main
      path: apps/b
      interval: 1s
    namespace: default
EOF
D=/apis/apps/v1/namespaces/default/deployments/web
image() {
	api GET "$D"
	printf '%s' "$body" | jq -r '.spec.template.spec.containers[0].image'
}

run_syncd run --check -c "$tmp/syncd.yaml"
expect_eq "$rc $(cat "$tmp/.out")" "0 $tmp/syncd.yaml: valid, 2 apps" \
	"run --check of a good config: exit 0 and a summary"

# --- --once ------------------------------------------------------------
run_syncd run -c "$tmp/syncd.yaml" --once
expect_rc 0 "run --once: both apps converge, exit 0"
expect_eq "$(image)" "nginx:1.0" "run --once: app a's Deployment applied"
api GET /api/v1/namespaces/default/configmaps/settings
expect_eq "$(printf '%s' "$body" | jq -r .data.colour)" blue \
	"run --once: app b's ConfigMap applied"
expect_match 'level=info .*app=a .*revision=[0-9a-f]{40}' "$errout" \
	"run --once: a log line per pass names the app and the revision"

# A broken app fails alone: the other one still converges.
api DELETE /api/v1/namespaces/default/configmaps/settings
awk -v bad="file://$tmp/missing" '
	/^  - name: a/ { ina = 1 } /^  - name: b/ { ina = 0 }
	ina && /repo:/ { sub(/repo: .*/, "repo: " bad) } { print }' \
	"$tmp/syncd.yaml" >"$tmp/broken.yaml"
run_syncd run -c "$tmp/broken.yaml" --once
expect_rc 1 "run --once with a broken app: exit 1"
api GET /api/v1/namespaces/default/configmaps/settings
expect_eq "$code $(printf '%s' "$body" | jq -r .data.colour)" "200 blue" \
	"run --once: the broken app does not block the other"
expect_match 'level=error msg="pass failed" app=a ' "$errout" \
	"run --once: the failed pass is logged"

# --- the controller -----------------------------------------------------
"$SYNCD" run -c "$tmp/syncd.yaml" >"$tmp/run.out" 2>"$tmp/run.err" &
run_pid=$!
pids+=("$run_pid")
passes() { grep -c 'msg="pass done" app=a ' "$tmp/run.err"; }
passes_at_least() { [ "$(passes)" -ge "$1" ]; }
wait_for 20 passes_at_least 1 || true

deploy nginx:1.1 >"$repo/apps/a/deploy.yaml"
gitq commit -am two
image_is() { [ "$(image)" = "$1" ]; }
if wait_for 30 image_is nginx:1.1; then
	ok "a pushed commit is applied after the poll interval"
else
	not_ok "a pushed commit is applied after the poll interval: $(image)"
fi

api GET "$D"
printf '%s' "$body" |
	jq '.spec.template.spec.containers[0].image = "nginx:edited"' >"$tmp/edit.json"
api PUT "$D?fieldManager=kubectl-edit" application/json "$(cat "$tmp/edit.json")"
expect_eq "$code" 200 "kubectl edit-style update of the image"
if wait_for 30 image_is nginx:1.1; then
	ok "the manual edit is restored by the next resync (watch off)"
else
	not_ok "the manual edit is restored by the next resync (watch off): $(image)"
fi

api PATCH "$D/scale?fieldManager=kube-controller-manager" \
	application/merge-patch+json '{"spec":{"replicas":3}}'
expect_eq "$code" 200 "HPA-style /scale patch by kube-controller-manager"
# Let the pass that may have been running finish, then count.
before=$(($(passes) + 1))
wait_for 20 passes_at_least "$before" || true
api DELETE /emu/stats
before=$(passes)
if wait_for 40 passes_at_least $((before + 10)); then
	ok "ten resyncs of app a ran"
else
	not_ok "ten resyncs of app a ran: $(passes) passes, from $before"
fi
expect_eq "$(count patch '*') $(count update '*') $(count create '*')" \
	"0 0 0" "the HPA's replicas: no write by syncd over ten resyncs"
api GET "$D"
expect_eq "$(printf '%s' "$body" | jq -r '"\(.spec.replicas) \(.spec.template.spec.containers[0].image)"')" \
	"3 nginx:1.1" "the HPA's replicas stay, the image stays healed"
expect_match 'msg="object written" app=a revision=[0-9a-f]{40} object="?Deployment\.apps default/web' \
	"$(cat "$tmp/run.err")" "every object written is logged with app, revision, object"

# Verdicts kept from pass to pass: app b's ConfigMap, in sync and listed
# again in the same version, is settled from its verdict, not compared
# again; app a's Deployment, with a field another manager owns (warned
# of), is compared in every pass.
last_pass() { # APP [FROM]: its last "pass done" line after line FROM
	tail -n "+${2:-1}" "$tmp/run.err" | grep "msg=\"pass done\" app=$1 " |
		tail -n 1
}
expect_match ' reused=1( |$)' "$(last_pass b)" \
	"memo: app b's unchanged ConfigMap is settled from its verdict (reused=1)"
expect_match ' reused=0( |$)' "$(last_pass a)" \
	"memo: app a's Deployment with a foreign field is compared in every pass"
# An edit gives the ConfigMap a new resourceVersion: it is compared, and
# healed; then its new version is settled from a verdict again.
C=/api/v1/namespaces/default/configmaps/settings
colour_is() {
	api GET "$C"
	[ "$(printf '%s' "$body" | jq -r .data.colour)" = "$1" ]
}
mark=$(($(wc -l <"$tmp/run.err") + 1))
api PATCH "$C?fieldManager=kubectl-edit" application/merge-patch+json \
	'{"data":{"colour":"red"}}'
expect_eq "$code" 200 "memo: a kubectl-edit style patch of app b's ConfigMap"
if wait_for 30 colour_is blue; then
	ok "memo: the edit of an object with a kept verdict is healed"
else
	not_ok "memo: the edit of an object with a kept verdict is healed"
fi
reused_again() { last_pass b "$mark" | grep -Eq ' reused=1( |$)'; }
if wait_for 20 reused_again; then
	ok "memo: after the heal, the ConfigMap's new version is settled from a verdict"
else
	not_ok "memo: after the heal, the ConfigMap's new version is settled from a verdict: $(last_pass b "$mark")"
fi
expect_match 'msg="object written" app=b .*ConfigMap default/settings' \
	"$(tail -n "+$mark" "$tmp/run.err")" "memo: the healing write is app b's, logged"

term_wait "$run_pid"
expect_rc 0 "SIGTERM: the controller exits 0"
if grep -q 'token\|BEGIN' "$tmp/run.err"; then
	not_ok "no secret in the log"
else
	ok "no secret in the log"
fi
finish
