# The real Kubernetes control plane on loopback, for syncd's real tier of
# tests and for `make cluster`. Source it (bash), then:
#
#   k8s_available          0 when the binaries of `make k8s` are built
#                          (K8S_BIN, default build/k8s/bin of the tree)
#   k8s_start [--bare]     etcd and kube-apiserver on free loopback ports
#                          in a fresh temporary folder: TLS with a
#                          throwaway CA, token and client-certificate
#                          authentication, Node,RBAC authorization,
#                          service-account issuer and keys, the default
#                          admission plugins (plus NodeRestriction), an
#                          audit log; then (not with --bare)
#                          kube-controller-manager, kube-scheduler and
#                          kwok with two fake Ready nodes. Waits for
#                          /readyz, and (not bare) for the nodes and the
#                          default service account. Returns non-zero with
#                          one line naming the component and the cause,
#                          followed by its last log lines, having stopped
#                          whatever it started.
#   k8s_stop               stops every process k8s_start started (TERM,
#                          then KILL after 5 s) and removes the folder
#   k8s_kill NAME [SIGNAL] sends SIGNAL (default KILL) to a component
#                          (etcd, kube-apiserver, kube-controller-manager,
#                          kube-scheduler, kwok) and its process group,
#                          and waits (10 s) until it has exited
#   k8s_restart NAME       starts a component that k8s_kill stopped (or
#                          that exited) again with the same arguments:
#                          the same ports, data folder and certificates,
#                          its log appended; waits until it serves again
#                          (etcd: /health, kube-apiserver: /readyz)
#   k8s_peak_rss           the peak RSS of each component so far, in MB
#   k8s_env FILE           writes the K8S_* variables to FILE, so another
#                          script can use this cluster (k8s_use)
#   k8s_use                when K8S_ENV names such a file, loads it;
#                          otherwise starts a cluster of its own with
#                          k8s_start (stopped by k8s_stop)
#   kc ARGS...             the real kubectl 1.36 as cluster admin
#   k8s_api METHOD PATH [CONTENT-TYPE BODY]
#                          the API as cluster admin (client certificate);
#                          sets $code and $body
#   k8s_audit_count USER VERB RESOURCE [CODE]
#                          requests of USER in the audit log (RESOURCE
#                          "*" for any; VERB as the audit log names it:
#                          get list watch create update patch delete);
#                          dry runs (dryRun=All) are not counted, and
#                          only they are with K8S_AUDIT_DRY=yes
#   k8s_audit_mark         remembers the audit log's length; later counts
#                          only look at what came after
#
# What it sets: K8S_DIR (the folder), K8S_URL (https://127.0.0.1:PORT),
# K8S_KUBECONFIG (admin, token "$K8S_TOKEN", user "admin" in
# system:masters), K8S_CERT_KUBECONFIG (admin by client certificate),
# K8S_SYNCD_KUBECONFIG (token "$K8S_SYNCD_TOKEN", user "syncd" in
# system:masters: what tests run syncd with, so that the audit log tells
# syncd's requests apart), K8S_SA_KUBECONFIG (service account default/restricted: a token and no
# role), K8S_CA (the CA certificate), K8S_AUDIT (the audit log),
# K8S_VERSION (what /version says).
#
# Ports: every component gets a port nobody listens on yet, picked at
# random below the kernel's ephemeral range (a port taken meanwhile makes
# k8s_start try other ones, twice); K8S_ETCD_PORT and K8S_API_PORT force
# them (a port in use is then an error naming the component). K8S_DEADLINE (s)
# replaces every component's own deadline (20-60 s). K8S_SERVICE_CIDR
# replaces the Services' cluster IP range (10.0.0.0/24: 253 addresses).
# K8S_ADDRESS binds kube-apiserver to another address of this machine
# than 127.0.0.1 (its certificate names it too): the host end of a
# tests/helpers/netns.sh bridge, so that syncd in a namespace reaches it.

# Always the one build of `make k8s` (the sanitizer build uses it too).
K8S_BIN=${K8S_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/k8s/bin}
k8s_pids=()
k8s_names=()
k8s_argvs=()
K8S_OWNED=0

k8s_available() {
	local b
	for b in etcd kube-apiserver kube-controller-manager kube-scheduler \
		kubectl kwok; do
		[ -x "$K8S_BIN/$b" ] || return 1
	done
}

# k8s_port_free PORT: nothing accepts connections on 127.0.0.1:PORT.
k8s_port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Ports are picked below the kernel's ephemeral range, so that an
# outgoing connection's port is never taken for a listener.
k8s_port_base() {
	local low
	low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	if [ "${low:-0}" -gt 22000 ]; then
		echo $((low - 12000)) 12000
	else
		echo 40000 20000
	fi
}

k8s_pick_port() {
	local p base span
	read -r base span < <(k8s_port_base)
	for _ in $(seq 50); do
		p=$((base + RANDOM % span))
		if k8s_port_free "$p" && ! [[ " ${k8s_ports[*]-} " == *" $p "* ]]; then
			k8s_ports+=("$p")
			echo "$p"
			return 0
		fi
	done
	return 1
}

# k8s_fail COMPONENT MESSAGE: one line, the component's last log lines,
# everything stopped.
k8s_fail() {
	local name=$1 log
	log="$K8S_DIR/$name.log"
	# A port taken between the check and the bind: k8s_start picks
	# others (when it chose them itself).
	if [ "${k8s_retry:-0}" = 1 ] && [ -s "$log" ] &&
		grep -q 'address already in use' "$log"; then
		echo "k8s: $name: its port was taken meanwhile; trying other ports" >&2
		k8s_clash=1
		k8s_stop
		return 1
	fi
	echo "k8s: $name: $2" >&2
	if [ -s "$log" ]; then
		echo "k8s: last lines of $name's log:" >&2
		tail -n 15 "$log" | sed 's/^/    /' >&2
	fi
	k8s_stop
	return 1
}

# k8s_spawn NAME BINARY ARGS...: starts a component, its output in
# $K8S_DIR/NAME.log, in a process group of its own (so a signal reaches
# whatever it started).
k8s_spawn() {
	local name=$1
	shift
	setsid "$@" >"$K8S_DIR/$name.log" 2>&1 </dev/null &
	k8s_pids+=("$!")
	k8s_names+=("$name")
	# The command line, quoted, so that k8s_restart runs it again.
	k8s_argvs+=("$(printf '%q ' "$@")")
}

# k8s_index NAME: the component's index in k8s_names.
k8s_index() {
	local i
	for i in "${!k8s_names[@]}"; do
		if [ "${k8s_names[$i]}" = "$1" ]; then
			echo "$i"
			return 0
		fi
	done
	echo "k8s: no component named $1" >&2
	return 1
}

k8s_kill() {
	local i p n=100
	i=$(k8s_index "$1") || return 1
	p=${k8s_pids[$i]}
	kill "-${2:-KILL}" -- "-$p" 2>/dev/null || kill "-${2:-KILL}" "$p" 2>/dev/null
	while kill -0 "$p" 2>/dev/null && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	if kill -0 "$p" 2>/dev/null; then
		echo "k8s: $1 did not exit within 10 s of SIG${2:-KILL}" >&2
		return 1
	fi
	wait "$p" 2>/dev/null
	return 0
}

k8s_restart() {
	local name=$1 i url
	i=$(k8s_index "$name") || return 1
	if kill -0 "${k8s_pids[$i]}" 2>/dev/null; then
		echo "k8s: $name is still running (k8s_kill it first)" >&2
		return 1
	fi
	eval "setsid ${k8s_argvs[$i]} >>\"\$K8S_DIR/\$name.log\" 2>&1 </dev/null &"
	k8s_pids[$i]=$!
	case $name in
	etcd)
		url=$(printf '%s\n' "${k8s_argvs[$i]}" |
			sed -n 's/.*--listen-client-urls \([^ ]*\).*/\1/p')
		k8s_wait etcd 20 "serving again" \
			curl -fsS --max-time 1 "$url/health"
		;;
	kube-apiserver)
		k8s_wait kube-apiserver 60 "ready again (/readyz)" \
			curl -fsS --max-time 2 --cacert "$K8S_CA" \
			-H "Authorization: Bearer $K8S_TOKEN" "$K8S_URL/readyz"
		;;
	esac
}

# k8s_alive NAME: the component's process has not exited.
k8s_alive() {
	local i
	for i in "${!k8s_names[@]}"; do
		if [ "${k8s_names[$i]}" = "$1" ]; then
			kill -0 "${k8s_pids[$i]}" 2>/dev/null
			return
		fi
	done
	return 1
}

# k8s_wait NAME SECONDS WHAT COMMAND...: until COMMAND succeeds; fails
# (naming WHAT) when the component exits or the deadline passes.
k8s_wait() {
	local name=$1 secs=${K8S_DEADLINE:-$2} what=$3 n
	shift 3
	n=$((secs * 10))
	while [ "$n" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		if ! k8s_alive "$name"; then
			k8s_fail "$name" "exited before $what"
			return 1
		fi
		sleep 0.1
		n=$((n - 1))
	done
	k8s_fail "$name" "not $what within ${secs} s"
}

# k8s_peak_rss: "NAME=MB ..." peak resident memory of each component so
# far (VmHWM), and the sum; read before k8s_stop.
k8s_peak_rss() {
	local i kb total=0 line=
	for i in "${!k8s_pids[@]}"; do
		kb=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/${k8s_pids[$i]}/status" 2>/dev/null)
		[ -n "$kb" ] || continue
		total=$((total + kb))
		line+="${k8s_names[$i]}=$((kb / 1024)) "
	done
	echo "${line}total=$((total / 1024)) MB"
}

k8s_stop() {
	local i p n
	for i in "${!k8s_pids[@]}"; do
		kill -TERM -- "-${k8s_pids[$i]}" 2>/dev/null ||
			kill -TERM "${k8s_pids[$i]}" 2>/dev/null
	done
	for i in "${!k8s_pids[@]}"; do
		p=${k8s_pids[$i]}
		n=50
		while kill -0 "$p" 2>/dev/null && [ "$n" -gt 0 ]; do
			sleep 0.1
			n=$((n - 1))
		done
		# Either may fail (the group is gone; killed: 137): under
		# `set -e`, as in an EXIT trap, that must not be the exit.
		kill -KILL -- "-$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	k8s_pids=()
	k8s_names=()
	k8s_argvs=()
	if [ "$K8S_OWNED" = 1 ] && [ -n "${K8S_DIR:-}" ]; then
		rm -rf "$K8S_DIR"
		K8S_DIR=
	fi
	K8S_OWNED=0
}

# k8s_certs: a throwaway CA, the API server's serving certificate, one
# client certificate per component, the service-account signing key.
k8s_certs() {
	local d=$K8S_DIR/pki
	mkdir -m 0700 "$d" || return 1
	(
		cd "$d" || exit 1
		set -e
		key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1.key" 2>/dev/null; }
		key ca
		openssl req -x509 -new -key ca.key -days 2 -subj /CN=syncd-test-ca \
			-out ca.crt 2>/dev/null
		# sign NAME SUBJECT [SAN]
		sign() {
			key "$1"
			openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
			if [ -n "${3:-}" ]; then
				printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" >"$1.ext"
			else
				printf 'extendedKeyUsage=clientAuth\n' >"$1.ext"
			fi
			openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key \
				-CAcreateserial -days 2 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
			rm -f "$1.csr" "$1.ext"
		}
		sign apiserver /CN=kube-apiserver \
			"${K8S_ADDRESS:+IP:$K8S_ADDRESS,}IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
		sign admin "/O=system:masters/CN=kubernetes-admin"
		sign controller-manager /CN=system:kube-controller-manager
		sign scheduler /CN=system:kube-scheduler
		sign kwok "/O=system:masters/CN=kwok"
		key sa
		openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
	) || return 1
	K8S_CA=$d/ca.crt
}

# k8s_kubeconfig FILE USER (token TOKEN | cert NAME): a kubeconfig for
# $K8S_URL with the CA embedded.
k8s_kubeconfig() {
	local file=$1 user=$2 how=$3 what=$4 cred
	if [ "$how" = token ]; then
		cred="    token: $what"
	else
		cred="    client-certificate: $K8S_DIR/pki/$what.crt
    client-key: $K8S_DIR/pki/$what.key"
	fi
	cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: syncd-test
  cluster:
    server: $K8S_URL
    certificate-authority-data: $(base64 -w0 <"$K8S_CA")
users:
- name: $user
  user:
$cred
contexts:
- name: $user@syncd-test
  context:
    cluster: syncd-test
    user: $user
    namespace: default
current-context: $user@syncd-test
EOF
	chmod 0600 "$file"
}

# k8s_kwok_stages: kwok's own "fast" stages (nodes become Ready and keep
# their lease; scheduled pods become Running and Ready), from its module.
k8s_kwok_stages() {
	local src=$K8S_BIN/../kwok-stages.yaml
	if [ ! -s "$src" ]; then
		echo "k8s: $src is missing (run make k8s)" >&2
		return 1
	fi
	cp "$src" "$K8S_DIR/kwok.yaml"
}

# k8s_plant_secrets: the tokens and private keys are secrets syncd must
# never repeat (tests/helpers/canary.sh, when the caller sourced it).
k8s_plant_secrets() {
	local k
	declare -F canary_plant >/dev/null || return 0
	canary_input "$K8S_DIR/pki"
	canary_plant "the admin's API token" "$K8S_TOKEN"
	canary_plant "syncd's API token" "$K8S_SYNCD_TOKEN"
	for k in admin sa; do
		canary_plant "the $k private key" "$(sed -n 2p "$K8S_DIR/pki/$k.key")"
	done
}

k8s_start() {
	local attempt start_ms
	start_ms=$(date +%s%3N)
	for attempt in 1 2 3; do
		k8s_clash=0
		k8s_retry=0
		[ -z "${K8S_ETCD_PORT:-}${K8S_API_PORT:-}" ] && [ "$attempt" -lt 3 ] &&
			k8s_retry=1
		if k8s_start_once "$@"; then
			K8S_START_MS=$(($(date +%s%3N) - start_ms))
			return 0
		fi
		[ "$k8s_clash" = 1 ] || return 1
	done
	return 1
}

k8s_start_once() {
	local bare=0 etcd_port peer_port api_port kcm_port sched_port kwok_port
	local i
	[ "${1:-}" = --bare ] && bare=1
	if ! k8s_available; then
		echo "k8s: the control plane is not built in $K8S_BIN (run make k8s)" >&2
		return 1
	fi
	for i in openssl curl; do
		if ! command -v "$i" >/dev/null; then
			echo "k8s: $i is not installed" >&2
			return 1
		fi
	done
	K8S_DIR=$(mktemp -d "${TMPDIR:-/tmp}/syncd-k8s.XXXXXX") || return 1
	K8S_OWNED=1
	k8s_ports=()
	etcd_port=${K8S_ETCD_PORT:-$(k8s_pick_port)}
	peer_port=$(k8s_pick_port)
	api_port=${K8S_API_PORT:-$(k8s_pick_port)}
	kcm_port=$(k8s_pick_port)
	sched_port=$(k8s_pick_port)
	kwok_port=$(k8s_pick_port)
	K8S_URL=https://${K8S_ADDRESS:-127.0.0.1}:$api_port
	for i in "etcd:$etcd_port" "etcd:$peer_port" "kube-apiserver:$api_port"; do
		if ! k8s_port_free "${i#*:}"; then
			k8s_fail "${i%%:*}" "port ${i#*:} on 127.0.0.1 is already in use"
			return 1
		fi
	done
	if ! k8s_certs; then
		k8s_fail openssl "could not make the throwaway CA and certificates"
		return 1
	fi
	K8S_TOKEN=$(head -c 24 /dev/urandom | base64 | tr -d '/+=' | head -c 32)
	K8S_SYNCD_TOKEN=$(head -c 24 /dev/urandom | base64 | tr -d '/+=' | head -c 32)
	{
		printf '%s,admin,admin,system:masters\n' "$K8S_TOKEN"
		printf '%s,syncd,syncd,system:masters\n' "$K8S_SYNCD_TOKEN"
	} >"$K8S_DIR/pki/tokens.csv"
	chmod 0600 "$K8S_DIR/pki/tokens.csv"
	k8s_plant_secrets
	cat >"$K8S_DIR/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
# Events and App objects (their status) with their bodies: the secrets
# canary searches them at the end (never Secrets: those hold the values).
- level: Request
  omitManagedFields: true
  verbs: ["create", "update", "patch"]
  resources:
  - group: ""
    resources: ["events"]
  - group: "events.k8s.io"
    resources: ["events"]
  - group: "syncd.io"
    resources: ["apps", "apps/status"]
- level: Metadata
EOF

	# etcd: one member, no fsync (a test's data need not survive a
	# power cut).
	k8s_spawn etcd "$K8S_BIN/etcd" --name k8s --data-dir "$K8S_DIR/etcd" \
		--listen-client-urls "http://127.0.0.1:$etcd_port" \
		--advertise-client-urls "http://127.0.0.1:$etcd_port" \
		--listen-peer-urls "http://127.0.0.1:$peer_port" \
		--initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
		--initial-cluster "k8s=http://127.0.0.1:$peer_port" \
		--listen-metrics-urls "" \
		--unsafe-no-fsync --log-level warn
	k8s_wait etcd 20 "serving on 127.0.0.1:$etcd_port" \
		curl -fsS --max-time 1 "http://127.0.0.1:$etcd_port/health" || return 1

	k8s_spawn kube-apiserver "$K8S_BIN/kube-apiserver" \
		--etcd-servers "http://127.0.0.1:$etcd_port" \
		--bind-address "${K8S_ADDRESS:-127.0.0.1}" \
		--advertise-address "${K8S_ADDRESS:-127.0.0.1}" \
		--secure-port "$api_port" \
		--tls-cert-file "$K8S_DIR/pki/apiserver.crt" \
		--tls-private-key-file "$K8S_DIR/pki/apiserver.key" \
		--client-ca-file "$K8S_CA" \
		--token-auth-file "$K8S_DIR/pki/tokens.csv" \
		--authorization-mode Node,RBAC \
		--enable-admission-plugins NodeRestriction \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$K8S_DIR/pki/sa.pub" \
		--service-account-signing-key-file "$K8S_DIR/pki/sa.key" \
		--service-cluster-ip-range "${K8S_SERVICE_CIDR:-10.0.0.0/24}" \
		--endpoint-reconciler-type none \
		--allow-privileged \
		--audit-policy-file "$K8S_DIR/audit-policy.yaml" \
		--audit-log-path "$K8S_DIR/audit.log" \
		--audit-log-maxsize 0 \
		--profiling=false --v 0
	K8S_AUDIT=$K8S_DIR/audit.log
	k8s_wait kube-apiserver 60 "ready (/readyz)" \
		curl -fsS --max-time 2 --cacert "$K8S_CA" \
		-H "Authorization: Bearer $K8S_TOKEN" "$K8S_URL/readyz" || return 1

	K8S_KUBECONFIG=$K8S_DIR/admin.kubeconfig
	K8S_CERT_KUBECONFIG=$K8S_DIR/admin-cert.kubeconfig
	k8s_kubeconfig "$K8S_KUBECONFIG" admin token "$K8S_TOKEN"
	k8s_kubeconfig "$K8S_CERT_KUBECONFIG" kubernetes-admin cert admin
	K8S_SYNCD_KUBECONFIG=$K8S_DIR/syncd.kubeconfig
	k8s_kubeconfig "$K8S_SYNCD_KUBECONFIG" syncd token "$K8S_SYNCD_TOKEN"
	k8s_kubeconfig "$K8S_DIR/controller-manager.kubeconfig" \
		system:kube-controller-manager cert controller-manager
	k8s_kubeconfig "$K8S_DIR/scheduler.kubeconfig" system:kube-scheduler cert scheduler
	k8s_kubeconfig "$K8S_DIR/kwok.kubeconfig" kwok cert kwok
	K8S_VERSION=$(curl -fsS --max-time 2 --cacert "$K8S_CA" \
		-H "Authorization: Bearer $K8S_TOKEN" "$K8S_URL/version" |
		sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p')

	if [ "$bare" = 0 ]; then
		k8s_start_controllers "$kcm_port" "$sched_port" "$kwok_port" || return 1
	fi
	k8s_restricted_sa "$bare" || return 1
	k8s_retry=0
	return 0
}

k8s_start_controllers() {
	local kcm_port=$1 sched_port=$2 kwok_port=$3 kc=$K8S_DIR n
	k8s_spawn kube-controller-manager "$K8S_BIN/kube-controller-manager" \
		--kubeconfig "$kc/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$kc/controller-manager.kubeconfig" \
		--authorization-kubeconfig "$kc/controller-manager.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "$kcm_port" \
		--leader-elect=false \
		--use-service-account-credentials \
		--service-account-private-key-file "$K8S_DIR/pki/sa.key" \
		--root-ca-file "$K8S_CA" \
		--cluster-signing-cert-file "$K8S_CA" \
		--cluster-signing-key-file "$K8S_DIR/pki/ca.key" \
		--controllers '*' --v 0
	k8s_spawn kube-scheduler "$K8S_BIN/kube-scheduler" \
		--kubeconfig "$kc/scheduler.kubeconfig" \
		--authentication-kubeconfig "$kc/scheduler.kubeconfig" \
		--authorization-kubeconfig "$kc/scheduler.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "$sched_port" \
		--leader-elect=false --v 0
	k8s_kwok_stages || { k8s_fail kwok "no stages"; return 1; }
	k8s_spawn kwok "$K8S_BIN/kwok" --kubeconfig "$kc/kwok.kubeconfig" \
		--config "$K8S_DIR/kwok.yaml" \
		--manage-all-nodes=false \
		--manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
		--server-address "127.0.0.1:$kwok_port" \
		--cidr 10.244.0.0/16 --node-ip 10.1.0.1 \
		--node-lease-duration-seconds 40
	for n in 0 1; do
		cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$n
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: kwok-node-$n
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
---
EOF
	done >"$K8S_DIR/nodes.yaml"
	if ! kc create -f "$K8S_DIR/nodes.yaml" >"$K8S_DIR/nodes.log" 2>&1; then
		k8s_fail kube-apiserver "could not create the fake nodes: $(tail -n 1 "$K8S_DIR/nodes.log")"
		return 1
	fi
	k8s_wait kwok 30 "marking both fake nodes Ready" k8s_nodes_ready || return 1
	k8s_wait kube-controller-manager 30 "creating the default service account" \
		kc -n default get serviceaccount default || return 1
	k8s_alive kube-scheduler || { k8s_fail kube-scheduler "exited"; return 1; }
}

k8s_nodes_ready() {
	[ "$(kc get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null |
		grep -c '^True$')" -eq 2 ]
}

# k8s_restricted_sa BARE: the service account default/restricted, with
# no role of its own, and a kubeconfig carrying a token for it (made by
# the TokenRequest API, valid for a day).
k8s_restricted_sa() {
	local token
	K8S_SA_KUBECONFIG=$K8S_DIR/restricted.kubeconfig
	if [ "$1" = 1 ]; then
		# No controller-manager: the namespace's default account is
		# never made, and tokens still work.
		kc -n default get serviceaccount default >/dev/null 2>&1 ||
			kc -n default create serviceaccount default >/dev/null 2>&1
	fi
	if ! kc -n default create serviceaccount restricted >"$K8S_DIR/sa.log" 2>&1; then
		k8s_fail kube-apiserver "could not create the service account default/restricted: $(tail -n 1 "$K8S_DIR/sa.log")"
		return 1
	fi
	if ! token=$(kc -n default create token restricted --duration 24h 2>"$K8S_DIR/sa.log"); then
		k8s_fail kube-apiserver "could not request a token for default/restricted: $(tail -n 1 "$K8S_DIR/sa.log")"
		return 1
	fi
	k8s_kubeconfig "$K8S_SA_KUBECONFIG" system:serviceaccount:default:restricted token "$token"
	if declare -F canary_plant >/dev/null; then
		canary_plant "a service account token" "$token"
	fi
}

k8s_env() {
	{
		local v
		for v in K8S_DIR K8S_URL K8S_KUBECONFIG K8S_CERT_KUBECONFIG \
			K8S_SYNCD_KUBECONFIG K8S_SYNCD_TOKEN \
			K8S_SA_KUBECONFIG K8S_CA K8S_AUDIT K8S_TOKEN K8S_VERSION K8S_BIN; do
			printf '%s=%q\n' "$v" "${!v}"
		done
	} >"$1"
	# It holds the tokens: an input, never searched for them.
	if declare -F canary_input >/dev/null; then
		canary_input "$1"
	fi
}

k8s_use() {
	if [ -n "${K8S_ENV:-}" ] && [ -s "$K8S_ENV" ]; then
		# shellcheck disable=SC1090
		. "$K8S_ENV"
		K8S_OWNED=0
		return 0
	fi
	k8s_start
}

kc() {
	timeout 120 "$K8S_BIN/kubectl" --kubeconfig "$K8S_KUBECONFIG" \
		--cache-dir "$K8S_DIR/kubectl-cache" "$@"
}

k8s_api() {
	local args=(-sS --max-time 30 --cacert "$K8S_CA" -o "$K8S_DIR/.body.$$"
		-w '%{http_code}' -X "$1" -H "Authorization: Bearer $K8S_TOKEN")
	[ $# -ge 4 ] && args+=(-H "Content-Type: $3" --data-binary "$4")
	code=$(curl "${args[@]}" "$K8S_URL$2")
	body=$(cat "$K8S_DIR/.body.$$")
	rm -f "$K8S_DIR/.body.$$"
}

k8s_audit_mark() {
	k8s_audit_from=$(($(wc -l <"$K8S_AUDIT") + 1))
}

# k8s_audit_barrier: the audit log holds every request answered before
# this call (a marker request is made and waited for: the server writes
# each request's event once it has answered it).
k8s_audit_barrier() {
	local marker=audit-barrier-$RANDOM$RANDOM n=50
	curl -sS --max-time 5 --cacert "$K8S_CA" -o /dev/null \
		-H "Authorization: Bearer $K8S_TOKEN" \
		"$K8S_URL/api/v1/namespaces/default/configmaps/$marker" || true
	while [ "$n" -gt 0 ] && ! grep -q "$marker" "$K8S_AUDIT"; do
		sleep 0.1
		n=$((n - 1))
	done
	sleep 0.1
}

k8s_audit_count() {
	k8s_audit_barrier
	tail -n "+${k8s_audit_from:-1}" "$K8S_AUDIT" |
		jq -c --arg u "$1" --arg v "$2" --arg r "$3" --arg c "${4:-}" \
			--arg dry "${K8S_AUDIT_DRY:-no}" \
			'select(.user.username == $u and .verb == $v and
			($r == "*" or .objectRef.resource == $r) and
			($c == "" or (.responseStatus.code | tostring) == $c) and
			((.requestURI | test("[?&]dryRun=All")) == ($dry == "yes")))' |
		wc -l
}
