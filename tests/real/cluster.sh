#!/usr/bin/env bash
# The real control plane itself, as `make cluster` gives it to a person
# and as tests/helpers/k8s.sh starts it: the versions it reports, the
# fake nodes Ready, a Deployment of 3 Available, authentication by token,
# client certificate and service account (which RBAC then restricts), and
# a clean stop. Then the ways a start fails: a port in use, a component
# that never becomes ready, a crashed etcd, a missing build, a tool
# module that does not build: one line naming the component and the
# cause, its last log lines, and nothing left running.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
real_need "the real control plane's own checks"
EMU=${BUILD:-build}/kube-emu

# --- what the shared cluster is ------------------------------------------------
expect_match '^v1\.36\.' "$K8S_VERSION" "kube-apiserver reports v1.36 (/version)"
expect_match '^Client Version: v1\.36\.' "$(kc version --client 2>&1 | head -n 1)" \
	"kubectl reports v1.36"
expect_match '^etcd Version: 3\.6\.' "$("$K8S_BIN/etcd" --version | head -n 1)" \
	"etcd 3.6 (supported by kube 1.36)"
expect_eq "$(kc get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}')" \
	"kwok-node-0=True kwok-node-1=True " "kubectl get nodes: the two fake nodes are Ready"
fresh_ns syncd-cluster
kc -n syncd-cluster create deployment three --image=nginx:1.27 --replicas=3 >/dev/null
if kc -n syncd-cluster rollout status deployment/three --timeout=60s >/dev/null 2>&1; then
	ok "a Deployment of 3 becomes Available (scheduler, controllers, kwok)"
else
	not_ok "a Deployment of 3 becomes Available (scheduler, controllers, kwok)"
	kc -n syncd-cluster get deploy,rs,pods -o wide 2>&1 | sed 's/^/    /'
fi
expect_eq "$(kc -n syncd-cluster get deployment three -o jsonpath='{.status.availableReplicas}')" 3 \
	"all 3 replicas available"
# Who is who: a token, a client certificate, a service account.
expect_eq "$(timeout 60 "$K8S_BIN/kubectl" --kubeconfig "$K8S_CERT_KUBECONFIG" auth whoami -o jsonpath='{.status.userInfo.username}')" \
	kubernetes-admin "a client certificate authenticates (CN=kubernetes-admin)"
expect_eq "$(timeout 60 "$K8S_BIN/kubectl" --kubeconfig "$K8S_SYNCD_KUBECONFIG" auth whoami -o jsonpath='{.status.userInfo.username}')" \
	syncd "a token authenticates (user syncd)"
expect_eq "$(timeout 60 "$K8S_BIN/kubectl" --kubeconfig "$K8S_SA_KUBECONFIG" auth whoami -o jsonpath='{.status.userInfo.username}')" \
	system:serviceaccount:default:restricted "a service account token authenticates"
expect_match 'forbidden' "$(timeout 60 "$K8S_BIN/kubectl" --kubeconfig "$K8S_SA_KUBECONFIG" get secrets 2>&1)" \
	"RBAC: the restricted service account may not list secrets"
k8s_api GET /api/v1/namespaces
expect_eq "$code" 200 "the admin token reads the API"
code=$(curl -sS --max-time 10 --cacert "$K8S_CA" -o /dev/null -w '%{http_code}' \
	-H "Authorization: Bearer wrong" "$K8S_URL/api/v1/namespaces")
expect_eq "$code" 401 "a wrong token: 401"
kc delete namespace syncd-cluster --wait=false >/dev/null

# --- make cluster: up, usable, and gone when stopped ---------------------------
# (Ctrl-C and SIGTERM share one handler; a background job of a script
# cannot be sent SIGINT, so the test sends SIGTERM.)
mkdir -p "$tmp/mc"
TMPDIR=$tmp/mc K8S_KUBECONFIG_OUT=$tmp/mc.kubeconfig setsid tests/k8s/cluster.sh \
	>"$tmp/mc.out" 2>"$tmp/mc.err" &
mc=$!
pids+=("$mc")
if wait_for 90 grep -q ' is up at https://127.0.0.1:' "$tmp/mc.out"; then
	ok "make cluster: the cluster comes up and says where"
else
	not_ok "make cluster: the cluster comes up and says where"
	tail -n 20 "$tmp/mc.err" | sed 's/^/    /'
fi
expect_match 'started in [0-9]+\.[0-9]{3} s' "$(cat "$tmp/mc.out")" \
	"make cluster: it prints how long the start took"
expect_eq "$(timeout 60 "$K8S_BIN/kubectl" --kubeconfig "$tmp/mc.kubeconfig" get nodes --no-headers 2>&1 | awk '{print $1, $2}')" \
	$'kwok-node-0 Ready\nkwok-node-1 Ready' \
	"make cluster: kubectl get nodes shows the fake nodes Ready"
mc_dir=$(sed -n 's|^Logs: \(.*\)/\*\.log.*|\1|p' "$tmp/mc.out")
kill -TERM "$mc" 2>/dev/null
wait_for 30 sh -c "! kill -0 $mc 2>/dev/null"
expect_eq "$(kill -0 "$mc" 2>/dev/null && echo running) $(pgrep -f "$tmp/mc/" | wc -l) $([ -n "$mc_dir" ] && [ -e "$mc_dir" ] && echo left)" \
	" 0 " "make cluster: stopping it stops every component and removes its folder"
expect_eq "$([ -e "$tmp/mc.kubeconfig" ] && echo left)" "" \
	"make cluster: its kubeconfig is removed too"

# --- failures: one line, the last log lines, nothing left running --------------
# start_fails NAME ENV...: k8s_start --bare in a subshell with ENV, its
# temporary folder under $tmp/NAME; sets $rc and $errout.
start_fails() {
	local name=$1
	shift
	mkdir -p "$tmp/$name"
	(
		export TMPDIR=$tmp/$name "$@"
		K8S_BIN=${FAKE_BIN:-$K8S_BIN}
		k8s_start --bare
	) >"$tmp/$name.out" 2>"$tmp/$name.err"
	rc=$?
	errout=$(cat "$tmp/$name.err")
}
left_running() { pgrep -f "$tmp/$1/" | wc -l; }
left_files() { find "$tmp/$1" -mindepth 1 | wc -l; }

# A port in use: something listens on the port the API server must take.
busy=$(k8s_pick_port)
"$EMU" --listen "127.0.0.1:$busy" >/dev/null 2>&1 &
pids+=("$!")
wait_for 10 bash -c "(exec 3<>/dev/tcp/127.0.0.1/$busy) 2>/dev/null"
start_fails busy K8S_API_PORT="$busy"
expect_eq "$rc $(printf '%s\n' "$errout" | head -n 1)" \
	"1 k8s: kube-apiserver: port $busy on 127.0.0.1 is already in use" \
	"a port in use: one line naming the component and the port"
expect_eq "$(left_running busy) $(left_files busy)" "0 0" \
	"a port in use: nothing left running, nothing left behind"

# A component that never becomes ready (an API server that only logs).
fake=$tmp/fakebin
mkdir -p "$fake"
for b in "$K8S_BIN"/*; do ln -s "$b" "$fake/"; done
rm "$fake/kube-apiserver"
printf '#!/bin/sh\necho "I1201 serving on nothing"\necho "E1201 waiting for a storage that never answers"\nexec sleep 6007\n' \
	>"$fake/kube-apiserver"
chmod +x "$fake/kube-apiserver"
FAKE_BIN=$fake start_fails notready K8S_DEADLINE=3
expect_eq "$rc $(printf '%s\n' "$errout" | head -n 1)" \
	"1 k8s: kube-apiserver: not ready (/readyz) within 3 s" \
	"a component that is not ready in time: one line naming it and the deadline"
expect_match 'waiting for a storage that never answers' "$errout" \
	"... followed by the component's last log lines"
expect_eq "$(left_running notready) $(pgrep -f "sleep 6007" | wc -l) $(left_files notready)" \
	"0 0 0" "a component that is not ready: it is stopped, nothing left behind"

# A crashed etcd.
rm "$fake/etcd"
printf '#!/bin/sh\necho "{\\"level\\":\\"fatal\\",\\"msg\\":\\"failed to open the data directory: disk full\\"}"\nexit 1\n' \
	>"$fake/etcd"
chmod +x "$fake/etcd"
FAKE_BIN=$fake start_fails etcd
expect_match '^k8s: etcd: exited before serving on 127\.0\.0\.1:[0-9]+$' \
	"$(printf '%s\n' "$errout" | head -n 1)" "a crashed etcd: one line saying so"
expect_match 'disk full' "$errout" "a crashed etcd: its last log lines"
expect_eq "$rc $(left_running etcd) $(left_files etcd)" "1 0 0" \
	"a crashed etcd: exit 1, nothing left running or behind"

# Nothing built.
mkdir -p "$tmp/nobin"
FAKE_BIN=$tmp/nobin start_fails nobin
expect_eq "$rc $errout" "1 k8s: the control plane is not built in $tmp/nobin (run make k8s)" \
	"no build: one line saying to run make k8s"

# A tool module that does not build: the module and Go's own error.
mkdir -p "$tmp/tools/broken"
printf 'module syncd.test/k8s/broken\n\ngo 1.26.0\n\ntool syncd.test/k8s/broken\n' \
	>"$tmp/tools/broken/go.mod"
printf 'package main\n\nfunc main() { undefinedThing() }\n' >"$tmp/tools/broken/main.go"
if command -v go >/dev/null 2>&1; then
	tests/k8s/build.sh --tool "$tmp/tools/broken" "$tmp/tools/out" >"$tmp/build.out" 2>"$tmp/build.err"
	rc=$?
	expect_eq "$rc $(head -n 1 "$tmp/build.err")" \
		"1 k8s: building broken from module syncd.test/k8s/broken ($tmp/tools/broken) failed:" \
		"a failed tool build names the module"
	expect_match 'undefined: undefinedThing' "$(cat "$tmp/build.err")" \
		"a failed tool build shows Go's error"
else
	ok "go not installed: the failed-build check skipped"
fi
finish
