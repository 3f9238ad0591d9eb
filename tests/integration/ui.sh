#!/usr/bin/env bash
# The browser view of `syncd run` (docs/ui.md) in headless Chromium,
# against kube-emu (TLS, token) and a file:// repository made here. A
# Deployment's image and one annotation are changed in the cluster with a
# person's tool (fieldManager kubectl-edit), the annotation to the HTML
# payload <img src=x onerror=alert(1)> (Git declares a harmless value);
# selfHeal is off, so the drift stays. The apps page lists the app with
# its state; the app page shows the drifted fields' paths, the manager
# and the payload as text (escaped in the serialized DOM, no element made
# from it), the app's diff (the payload as text again), history and
# Events; what the app does not have (fights) shows "none"; the page's
# files carry the Content-Security-Policy. Then with api.tokenFile: the
# API answers 401 without the token and the page shows its token form.
# The DOMs and screenshots are kept in $ARTIFACTS/ui (default
# $BUILD/tests/artifacts/ui). Without Debian's chromium (or $CHROMIUM)
# the script says so in one line and passes. Every wait and every
# browser run is bounded; everything is killed on exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"

# $CHROMIUM: the browser to run (default Debian's chromium).
CHROMIUM=${CHROMIUM:-chromium}
if ! command -v "$CHROMIUM" >/dev/null 2>&1; then
	echo "ok - SKIP: chromium not installed"
	finish
fi
need_tools "ui checks" curl jq git

art=${ARTIFACTS:-${BUILD:-build}/tests/artifacts}/ui
mkdir -p "$art"
PAYLOAD='<img src=x onerror=alert(1)>'

emu_start_tls
api POST /emu/rollouts application/json \
	'{"name":"ready","match":{"kind":"Deployment"},"readyAfter":"200ms"}'

repo="$tmp/repo"
mkdir -p "$repo/apps/web"
cat >"$repo/apps/web/deploy.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    syncd.dev/note: harmless
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
          image: nginx:1.0
EOF
gitq() {
	git -C "$repo" -c user.name=t -c user.email=t@example.com \
		-c commit.gpgsign=false "$@" >/dev/null 2>&1
}
gitq init -b main && gitq add -A && gitq commit -m one

# config FILE [EXTRA YAML]: the controller's configuration.
config() {
	cat >"$1" <<EOF
resync: 1h
listen: 127.0.0.1:0
kubeconfig: $tmp/kc
cacheDir: $tmp/cache
${2:-}
apps:
  - name: web
    source:
      repo: file://$repo
      revision: main
      path: apps/web
      interval: 1h
    namespace: default
    selfHeal: false
EOF
}

# The report-only app never writes: a one-shot sync creates its objects.
run_syncd sync --kubeconfig "$tmp/kc" -n default --app web "$repo/apps/web"
expect_rc 0 "the app's objects are created by syncd sync"

# start_run CONFIG LOG: `syncd run` in the background; sets $run_pid, $ep.
start_run() {
	"$SYNCD" run -c "$1" >/dev/null 2>"$2" &
	run_pid=$!
	pids+=("$run_pid")
	if ! wait_for 20 grep -q 'msg="serving HTTP".* port=[1-9]' "$2"; then
		not_ok "syncd run starts: $(head -c 2000 "$2")"
		finish
	fi
	ep="http://127.0.0.1:$(sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$2" | head -1)"
}

# hget PATH [CURL ARGS...]: sets $hcode, $hbody; $tmp/.hh the headers.
hget() {
	local p=$1
	shift
	hcode=$(curl -sS --max-time 10 -o "$tmp/.h" -D "$tmp/.hh" -w '%{http_code}' "$@" "$ep$p")
	hbody=$(cat "$tmp/.h")
}

# browse OUT URL [CHROMIUM ARGS...]: the DOM after the page ran (3 s of
# virtual time: the first fetch and its drawing, not the 5 s poll) into
# OUT. A fresh profile each time: no sessionStorage is carried over.
browse() {
	local out=$1 u=$2
	shift 2
	rm -rf "$tmp/chrome"
	timeout -k 5 90 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu \
		--no-first-run --disable-extensions --disable-sync \
		--user-data-dir="$tmp/chrome" --virtual-time-budget=3000 \
		"$@" "$u" >"$out" 2>>"$tmp/chrome.err"
}
dom() { browse "$1" "$2" --dump-dom; }
shot() { browse /dev/null "$2" --window-size=1280,1600 --screenshot="$1"; }

# has FILE FIXED-STRING NAME / lacks ...: a check on a dumped DOM.
has() {
	if grep -qF -- "$2" "$1"; then ok "$3"; else
		not_ok "$3: \"$2\" not in the DOM"
		printf '    DOM: %s\n' "$(head -c 3000 "$1")"
	fi
}
lacks() {
	if grep -qF -- "$2" "$1"; then
		not_ok "$3: \"$2\" is in the DOM"
		printf '    DOM: %s\n' "$(head -c 3000 "$1")"
	else ok "$3"; fi
}

# --- without a token ----------------------------------------------------------
config "$tmp/open.yaml"
start_run "$tmp/open.yaml" "$tmp/run1.err"
ok "syncd run serves on $ep"

hget /
expect_eq "$hcode $(sed -n 's/^content-security-policy: *//Ip' "$tmp/.hh" | tr -d '\r')" \
	"200 default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'" \
	"GET /: the page under the strict Content-Security-Policy"
hget /ui/app.js
expect_match '^[Cc]ontent-[Tt]ype: text/javascript' "$(tr -d '\r' <"$tmp/.hh")" "GET /ui/app.js: JavaScript"

in_sync() {
	hget /api/v1/apps/web
	[ "$(printf '%s' "$hbody" | jq -r .state)" = InSync ]
}
if wait_for 30 in_sync; then ok "web is InSync first"; else not_ok "web is InSync first: $hbody"; fi

patch=$(jq -cn --arg p "$PAYLOAD" '{metadata: {annotations: {"syncd.dev/note": $p}},
	spec: {template: {spec: {containers: [{name: "web", image: "nginx:edited"}]}}}}')
api PATCH "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=kubectl-edit" \
	application/strategic-merge-patch+json "$patch"
expect_eq "$code" 200 "kubectl edit-style patch of web's image and annotation"
drifted() {
	hget /api/v1/apps/web
	[ "$(printf '%s' "$hbody" | jq -r '[.state, (.summary.fields | tostring)] | join(" ")')" = "Drifted 2" ]
}
if wait_for 20 drifted; then
	ok "/api/v1/apps/web: Drifted, two fields"
else
	not_ok "/api/v1/apps/web: Drifted, two fields: $hbody"
fi
fields='.report.objects[] | select(.name == "web") | .fields[]'
image_path=$(printf '%s' "$hbody" | jq -r "$fields | select(.live == \"nginx:edited\") | .path")
note_path=$(printf '%s' "$hbody" | jq -r --arg p "$PAYLOAD" "$fields | select(.live == \$p) | .path")
expect_match 'image$' "$image_path" "the report has the image field"
expect_match 'note' "$note_path" "the report has the annotation holding the payload"

dom "$art/apps.html" "$ep/#/"
shot "$art/apps.png" "$ep/#/"
has "$art/apps.html" '<a href="#/apps/web">web</a>' "the apps page lists web, linked to its page"
has "$art/apps.html" '<span class="badge tone-warn">Drifted</span>' "the apps page shows web as Drifted (amber)"
expect_match '<span id="updated"[^>]*>updated [0-9]' "$(cat "$art/apps.html")" \
	"the apps page says when it was last updated"
expect_match '<div id="error"[^>]* hidden=""' "$(cat "$art/apps.html")" \
	"no error banner on the apps page"

hget /api/v1/apps/web
dom "$art/app.html" "$ep/#/apps/web"
shot "$art/app.png" "$ep/#/apps/web"
has "$art/app.html" '<title>web · syncd</title>' "the app page is titled after the app"
# Text nodes escape only &, < and > in the serialized DOM: a path's
# quotes stay as they are.
has "$art/app.html" "$image_path" "the app page shows the image field's path"
has "$art/app.html" "$note_path" "the app page shows the annotation's path"
has "$art/app.html" '<strong class="manager">kubectl-edit</strong>' \
	"the app page names the manager that changed the fields"
has "$art/app.html" '<code class="value">nginx:edited</code>' "the app page shows the live image"
has "$art/app.html" '&lt;img src=x onerror=alert(1)&gt;' \
	"the payload shows as text (escaped in the serialized DOM)"
lacks "$art/app.html" '<img' "no <img> element anywhere in the page"
if grep -qE '<[a-z][^>]* onerror=' "$art/app.html"; then
	not_ok "no element with an onerror attribute"
else
	ok "no element with an onerror attribute"
fi
# section NAME: the app page's <section id=NAME> on one line.
section() { tr -d '\n' <"$art/app.html" | grep -o "<section id=\"$1\">.*" | sed 's|</section>.*||'; }
expect_match '^<section id="diff"><h2>Diff</h2><pre class="diff">' "$(section diff)" \
	"the app page shows the app's diff as preformatted text"
expect_match '-    syncd.dev/note: &lt;img src=x onerror=alert\(1\)&gt;' "$(section diff)" \
	"the diff shows the payload as text too"
expect_match "<code title=\"$(git -C "$repo" rev-parse HEAD)\">$(git -C "$repo" rev-parse --short=7 HEAD)</code>.*tone-ok\">success<" \
	"$(section history)" "the history lists the pass at the commit, a success"
oldest=$(printf '%s' "$hbody" | jq -r '.events[-1].reason // empty')
if [ -n "$oldest" ]; then
	expect_match "<td>$oldest</td>" "$(section events)" "the events list the app's Events ($oldest)"
else
	expect_match '<p class="none muted">none</p>' "$(section events)" "no Events: the events say none"
fi
expect_eq "$(section fights)" '<section id="fights"><h2>Fights</h2><p class="none muted">none</p>' \
	"no fights: the fights say none"

dom "$art/unknown.html" "$ep/#/apps/nope"
has "$art/unknown.html" 'This controller has no app of that name.' "an unknown app's page says so"

term_wait "$run_pid"
expect_rc 0 "SIGTERM: the first controller exits 0"

# --- with api.tokenFile ---------------------------------------------------------
printf 'ui-token-1\n' >"$tmp/api-token"
config "$tmp/token.yaml" "api:
  tokenFile: $tmp/api-token"
start_run "$tmp/token.yaml" "$tmp/run2.err"
ok "syncd run with api.tokenFile serves on $ep"
hget /api/v1/apps
expect_eq "$hcode" 401 "GET /api/v1/apps without the token: 401"
hget /api/v1/apps -H "Authorization: Bearer ui-token-1"
expect_eq "$hcode" 200 "GET /api/v1/apps with the token: 200"
hget /
expect_eq "$hcode" 200 "GET / needs no token (the page holds no data)"

dom "$art/token.html" "$ep/#/"
shot "$art/token.png" "$ep/#/"
has "$art/token.html" '<form id="token-form"' "without the token the page shows its token form"
has "$art/token.html" 'type="password"' "the token is typed into a password field"
lacks "$art/token.html" 'href="#/apps/web"' "without the token no app is shown"
if grep -q 'ui-token-1' "$tmp/run2.err"; then
	not_ok "the token is not in the log"
else
	ok "the token is not in the log"
fi

term_wait "$run_pid"
expect_rc 0 "SIGTERM: the second controller exits 0"
ok "screenshots in $art: $(cd "$art" && echo *.png)"
finish
