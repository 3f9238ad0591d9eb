#!/usr/bin/env bash
# Leader election of `syncd run` against kube-emu (TLS, token): two
# replicas with `leaderElection` (short durations) share one Lease; only
# the leader writes (a manual edit is healed by it, the standby writes
# nothing) and both serve /api/v1/apps saying which they are; killing the
# leader with SIGKILL hands over after the lease duration; stopping it
# with SIGTERM releases the Lease so the other takes over at once.
# Loopback only; every wait is bounded; everything is killed on exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"

need_tools "run-leader checks" curl jq git

emu_start_tls


repo="$tmp/repo"
mkdir -p "$repo/app"
cat >"$repo/app/deploy.yaml" <<'EOF'
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
          image: nginx:1.0
EOF
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=t -c user.email=t@example.com \
	-c commit.gpgsign=false commit -qm one

cat >"$tmp/syncd.yaml" <<EOF
resync: 1h
listen: 127.0.0.1:0
kubeconfig: $tmp/kc
cacheDir: CACHE
leaderElection:
  namespace: default
  leaseName: syncd-test
  leaseDuration: 3s
  renewDeadline: 2s
  retryPeriod: 500ms
apps:
  - name: web
    source:
      repo: file://$repo
      revision: main
      interval: 1h
    namespace: default
EOF

# start N: replica N (identity replica-N, its own cache and log).
declare -A pid
start() {
	sed "s|CACHE|$tmp/cache-$1|" "$tmp/syncd.yaml" >"$tmp/syncd-$1.yaml"
	: >"$tmp/r$1.err"
	POD_NAME=replica-$1 "$SYNCD" run -c "$tmp/syncd-$1.yaml" \
		>/dev/null 2>>"$tmp/r$1.err" &
	pid[$1]=$!
	pids+=("$!")
}
leading() { grep -q 'msg="leading: this replica writes"' "$tmp/r$1.err"; }
holder() {
	api GET /apis/coordination.k8s.io/v1/namespaces/default/leases/syncd-test
	printf '%s' "$body" | jq -r '.spec.holderIdentity // ""'
}
holder_is() { [ "$(holder)" = "$1" ]; }
image() {
	api GET /apis/apps/v1/namespaces/default/deployments/web
	printf '%s' "$body" | jq -r '.spec.template.spec.containers[0].image'
}
image_is() { [ "$(image)" = "$1" ]; }
edit() {
	api PATCH "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=kubectl-edit" \
		application/strategic-merge-patch+json \
		'{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:edited"}]}}}}'
}
writes() { grep -c 'msg="object written"' "$tmp/r$1.err"; }
port_of() { sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$tmp/r$1.err" | tail -1; }

start 1
if wait_for 20 leading 1; then ok "replica-1 alone becomes the leader"; else not_ok "replica-1 becomes the leader: $(head -c 2000 "$tmp/r1.err")"; fi
start 2
if wait_for 20 image_is nginx:1.0; then ok "the leader converges the app"; else not_ok "the leader converges the app: $(image)"; fi
expect_eq "$(holder)" replica-1 "the Lease names replica-1"
api GET /apis/coordination.k8s.io/v1/namespaces/default/leases/syncd-test
expect_eq "$(printf '%s' "$body" | jq -r '"\(.spec.leaseDurationSeconds) \(.spec.renewTime != null) \(.spec.acquireTime != null)"')" \
	"3 true true" "the Lease has the duration, acquire and renew times"
sleep 1.5
if leading 2; then not_ok "replica-2 stays standby"; else ok "replica-2 stays standby"; fi
p2=$(port_of 2)
expect_eq "$(curl -sS --max-time 5 "http://127.0.0.1:$p2/api/v1/apps" | jq -r .leader)" false \
	"the standby says so on /api/v1/apps"
expect_match '^syncd_leader 0$' "$(curl -sS --max-time 5 "http://127.0.0.1:$p2/metrics")" \
	"the standby's syncd_leader is 0"
# A standby runs no passes: what it sends is the elector's Lease reads,
# and they count in syncd_kube_requests_total like every request.
gets() {
	curl -sS --max-time 5 "http://127.0.0.1:$p2/metrics" |
		awk '/^syncd_kube_requests_total\{.*verb="get"/ {n += $NF} END {print n + 0}'
}
g0=$(gets)
sleep 1.5
g1=$(gets)
if [ "$g1" -gt "$g0" ]; then
	ok "the standby's Lease reads are counted ($g0 -> $g1 GETs)"
else
	not_ok "the standby's Lease reads are counted: $g0 -> $g1 GETs"
fi
ready2=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p2/readyz")
expect_eq "$ready2" 200 "the standby is ready (as a standby)"

edit
if wait_for 10 image_is nginx:1.0; then ok "the leader heals a manual edit"; else not_ok "the leader heals a manual edit: $(image)"; fi
expect_eq "$(writes 2)" 0 "the standby wrote nothing"

# A crash: the standby waits for the lease to expire, then leads.
{
	kill -KILL "${pid[1]}"
	wait "${pid[1]}"
} 2>/dev/null
if holder_is replica-1; then ok "right after the crash the Lease still names replica-1"; else not_ok "right after the crash the Lease still names replica-1: $(holder)"; fi
if wait_for 15 leading 2; then ok "after the lease duration replica-2 leads"; else not_ok "replica-2 takes over after a crash: $(tail -5 "$tmp/r2.err")"; fi
expect_eq "$(holder)" replica-2 "the Lease names replica-2"
api GET /apis/coordination.k8s.io/v1/namespaces/default/leases/syncd-test
expect_eq "$(printf '%s' "$body" | jq -r '.spec.leaseTransitions')" 1 "leaseTransitions counts the change"
edit
if wait_for 10 image_is nginx:1.0; then ok "the new leader heals a manual edit"; else not_ok "the new leader heals a manual edit: $(image)"; fi

# A clean stop releases the Lease: replica-1 (back as standby) takes over.
start 1
sleep 1
term_wait "${pid[2]}" 10
expect_rc 0 "the leader stops on SIGTERM with exit 0"
released_or_taken() { [ "$(holder)" != replica-2 ]; }
if released_or_taken; then ok "SIGTERM released the Lease"; else not_ok "SIGTERM released the Lease: $(holder)"; fi
if wait_for 10 holder_is replica-1; then ok "the standby takes the released Lease"; else not_ok "the standby takes the released Lease: $(holder)"; fi
if wait_for 10 leading 1; then ok "replica-1 leads again"; else not_ok "replica-1 leads again"; fi
finish
