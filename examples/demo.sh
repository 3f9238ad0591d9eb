#!/usr/bin/env bash
# make demo: syncd keeping examples/guestbook converged on a local API
# server (kube-emu, TLS and a token), narrated step by step:
#
#   1. a Git repository is made from examples/guestbook and `syncd run`
#      converges it;
#   2. an HPA (kube-controller-manager) scales the Deployment: shown as a
#      foreign field, not reverted;
#   3. someone edits the image by hand: shown as drift, then healed;
#   4. a commit changes the app: applied after the poll;
#
# with `syncd status` along the way. Everything runs on 127.0.0.1 in a
# temporary directory removed at the end. Exits 0 only if every step was
# observed. Usage: examples/demo.sh [BUILD-DIR] (default: build).
set -u

BUILD=${1:-${BUILD:-build}}
SYNCD=$BUILD/syncd
EMU=$BUILD/kube-emu
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncd-demo.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]+"${pids[@]}"}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

if [ -t 1 ]; then
	B=$'\e[1m' G=$'\e[32m' R=$'\e[31m' N=$'\e[0m'
else
	B= G= R= N=
fi
step() { printf '\n%s==> %s%s\n' "$B" "$*" "$N"; }
seen() { printf '%s    ✓ %s%s\n' "$G" "$*" "$N"; }
fail() {
	printf '%s    ✗ %s%s\n' "$R" "$*" "$N"
	if [ -s "$tmp/syncd.log" ]; then
		echo "    last lines of the syncd log:"
		tail -n 15 "$tmp/syncd.log" | sed 's/^/      /'
	fi
	exit 1
}
say() { printf '    %s\n' "$*"; }
wait_for() { # SECONDS COMMAND...
	local n=$(($1 * 10))
	shift
	for _ in $(seq "$n"); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
for tool in curl jq git openssl; do
	command -v "$tool" >/dev/null 2>&1 || fail "$tool is needed (make deps)"
done
[ -x "$SYNCD" ] && [ -x "$EMU" ] || fail "build first: make $SYNCD $EMU"

# --- a cluster ---------------------------------------------------------
step "Starting a local API server (kube-emu: TLS, bearer token) on 127.0.0.1"
token=$(openssl rand -hex 16)
"$EMU" --listen 127.0.0.1:0 --tls --token "$token" \
	--kubeconfig-out "$tmp/kubeconfig" >"$tmp/emu.out" 2>"$tmp/emu.err" &
pids+=("$!")
emu_up() {
	url=$(sed -n 's/^listening on //p' "$tmp/emu.out")
	[ -n "$url" ] && [ -s "$tmp/kubeconfig" ] &&
		curl -fsSk --max-time 2 "$url/readyz" >/dev/null 2>&1
}
wait_for 30 emu_up || fail "kube-emu did not start: $(head -c 500 "$tmp/emu.err")"
sed -n 's/^ *certificate-authority-data: //p' "$tmp/kubeconfig" | base64 -d >"$tmp/ca.pem"
seen "API server at $url (kubeconfig: a temporary file)"
api() { # METHOD PATH [CONTENT-TYPE BODY]
	local args=(-sS --max-time 10 --cacert "$tmp/ca.pem" -o "$tmp/.body"
		-w '%{http_code}' -X "$1" -H "Authorization: Bearer $token")
	[ $# -ge 4 ] && args+=(-H "Content-Type: $3" --data-binary "$4")
	code=$(curl "${args[@]}" "$url$2")
	body=$(cat "$tmp/.body")
}
D=/apis/apps/v1/namespaces/guestbook/deployments/frontend
deploy_field() { api GET "$D" && printf '%s' "$body" | jq -r "$1"; }

# --- a Git repository -------------------------------------------------
step "Making a Git repository from examples/guestbook"
cp -r "$TOP/examples/guestbook" "$tmp/repo"
git() { command git -C "$tmp/repo" -c user.name=demo -c user.email=demo@example.com -c commit.gpgsign=false "$@"; }
git init -q -b main && git add -A && git commit -qm "guestbook" ||
	fail "git could not make the repository"
seen "file://$tmp/repo at $(git rev-parse --short HEAD)"

# --- syncd run --------------------------------------------------------------
step "Starting syncd run (watch on, poll every 2s, resync every 30s)"
printf '%s\n' "$(openssl rand -hex 16)" >"$tmp/api-token"
cat >"$tmp/syncd.yaml" <<EOF
resync: 30s
listen: 127.0.0.1:0
kubeconfig: $tmp/kubeconfig
cacheDir: $tmp/cache
api:
  tokenFile: $tmp/api-token
apps:
  - name: guestbook
    source:
      repo: file://$tmp/repo
      revision: main
      interval: 2s
    namespace: guestbook
EOF
say "\$ syncd run -c syncd.yaml"
"$SYNCD" run -c "$tmp/syncd.yaml" >/dev/null 2>"$tmp/syncd.log" &
run_pid=$!
pids+=("$run_pid")
port_known() { grep -q 'msg="serving HTTP".* port=[1-9]' "$tmp/syncd.log"; }
wait_for 20 port_known || fail "syncd run did not start"
port=$(sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$tmp/syncd.log" | head -1)
ep="http://127.0.0.1:$port"
seen "syncd serves /api/v1/apps, /metrics, /healthz on $ep"
# api.tokenFile is set: the apps' documents need the token too.
app_doc() {
	curl -sS --max-time 5 -H "Authorization: Bearer $(cat "$tmp/api-token")" \
		"$ep/api/v1/apps/guestbook"
}
status() {
	say "\$ syncd status${*:+ $*}"
	"$SYNCD" status --addr "$ep" --token-file "$tmp/api-token" "$@" | sed 's/^/      /'
}

# --- 1. converged -------------------------------------------------------------
step "1. syncd converges the app"
converged() {
	[ "$(app_doc | jq -r .state)" = InSync ] &&
		[ "$(deploy_field .spec.replicas)" = 2 ]
}
wait_for 30 converged || fail "the app did not converge"
n=$(app_doc | jq -r .summary.objects)
seen "InSync: $n objects applied with server-side apply (field manager syncd)"
status

# --- 2. an HPA scales the Deployment -------------------------------------------
step "2. An HPA scales the Deployment to 5 (kube-controller-manager, /scale)"
api PATCH "$D/scale?fieldManager=kube-controller-manager" \
	application/merge-patch+json '{"spec":{"replicas":5}}'
[ "$code" = 200 ] || fail "the /scale patch failed: $code $body"
curl -sS --max-time 5 -o /dev/null -X POST \
	-H "Authorization: Bearer $(cat "$tmp/api-token")" \
	"$ep/api/v1/apps/guestbook/sync"
foreign() { [ "$(app_doc | jq -r .summary.foreignFields)" -ge 1 ]; }
wait_for 15 foreign || fail "the replicas were not reported as foreign"
sleep 1
[ "$(deploy_field .spec.replicas)" = 5 ] || fail "syncd reverted the HPA's replicas"
seen "replicas stay 5: owned by kube-controller-manager, reported as a foreign field, not reverted"
status guestbook

# --- 3. a manual edit -------------------------------------------------------------
step "3. Someone changes the image by hand (kubectl edit)"
say "image: registry.k8s.io/guestbook/frontend:v5 -> frontend:debug"
api PATCH "$D?fieldManager=kubectl-edit" application/strategic-merge-patch+json \
	'{"spec":{"template":{"spec":{"containers":[{"name":"php-redis","image":"registry.k8s.io/guestbook/frontend:debug"}]}}}}'
[ "$code" = 200 ] || fail "the edit failed: $code $body"
healed() { [ "$(deploy_field '.spec.template.spec.containers[0].image')" = registry.k8s.io/guestbook/frontend:v5 ]; }
wait_for 15 healed || fail "the manual edit was not healed"
corrected() {
	api GET /apis/events.k8s.io/v1/namespaces/guestbook/events
	note=$(printf '%s' "$body" | jq -r '[.items[] | select(.reason == "DriftCorrected" and .regarding.name == "frontend")] | last | .note // empty')
	[ -n "$note" ]
}
wait_for 10 corrected || fail "no DriftCorrected Event about the Deployment"
seen "drift seen through the watch and healed: the image is registry.k8s.io/guestbook/frontend:v5 again"
seen "Event DriftCorrected on Deployment guestbook/frontend: $note"
grep 'msg="object written".*Deployment.apps guestbook/frontend' "$tmp/syncd.log" |
	tail -1 | sed 's/^/      log: /'

# --- 4. a commit ---------------------------------------------------------------------
step "4. A commit changes the app (frontend:v5 -> frontend:v6)"
sed -i 's|guestbook/frontend:v5|guestbook/frontend:v6|' "$tmp/repo/frontend/deployment.yaml"
git commit -qam "frontend v6" || fail "the commit failed"
rev=$(git rev-parse HEAD)
say "commit $(git rev-parse --short HEAD)"
applied() {
	[ "$(deploy_field '.spec.template.spec.containers[0].image')" = registry.k8s.io/guestbook/frontend:v6 ] &&
		[ "$(app_doc | jq -r .revision)" = "$rev" ]
}
wait_for 20 applied || fail "the commit was not applied"
[ "$(deploy_field .spec.replicas)" = 5 ] || fail "the commit reverted the HPA's replicas"
seen "applied after the poll; the HPA's replicas are still 5"
status

# --- done -------------------------------------------------------------------------------
step "Stopping syncd (SIGTERM) and the API server"
kill -TERM "$run_pid"
rc=124
for _ in $(seq 300); do
	if ! kill -0 "$run_pid" 2>/dev/null; then
		wait "$run_pid"
		rc=$?
		break
	fi
	sleep 0.1
done
[ "$rc" = 0 ] || fail "syncd exited $rc"
seen "syncd stopped cleanly (exit 0); every step was observed"
exit 0
