# Network partitions on this machine only: network namespaces joined to a
# private bridge by veth pairs, so a test can cut one process (syncd, a
# replica) off the API server and heal it again. Needs root and iproute2;
# nothing leaves the machine (the bridge has no uplink, no forwarding, no
# NAT). Source it (bash), then:
#
#   netns_available        0 when namespaces, veth and bridges can be made
#                          here (root, ip); else prints why on stderr
#   netns_setup            a bridge of its own with a fresh /24 of
#                          10.200-249.x.0; the host end's address is
#                          $NETNS_HOST_IP (bind servers to it: a namespace
#                          cannot reach the host's 127.0.0.1)
#   netns_add NAME         a namespace joined to the bridge, its own
#                          loopback up; its address is $NETNS_IP
#   netns_exec NAME CMD... runs CMD inside NAME (any user-visible name;
#                          the kernel's name is private to this run)
#   netns_cut NAME         partitions NAME: its link to the bridge goes
#                          down, so every packet either way is dropped
#                          silently (open connections hang, new ones time
#                          out), as when a network fails
#   netns_heal NAME        joins it again
#   netns_cleanup          removes every namespace, link and the bridge
#                          (call it from the test's EXIT trap; stop what
#                          runs inside first)

netns_names=()
netns_ids=()
NETNS_BRIDGE=
NETNS_HOST_IP=
netns_prefix=
netns_next=2

netns_available() {
	if [ "$(id -u)" != 0 ]; then
		echo "network namespaces need root" >&2
		return 1
	fi
	if ! command -v ip >/dev/null; then
		echo "ip (iproute2) is not installed" >&2
		return 1
	fi
	local probe=sp$$$RANDOM
	if ! ip netns add "$probe" 2>/dev/null; then
		echo "this machine does not allow network namespaces (ip netns add failed)" >&2
		return 1
	fi
	ip netns del "$probe"
	if ! ip link add "${probe}b" type bridge 2>/dev/null; then
		echo "this machine does not allow bridges (ip link add type bridge failed)" >&2
		return 1
	fi
	ip link del "${probe}b"
}

netns_setup() {
	local try a b
	# A /24 no route of this machine covers yet.
	for try in $(seq 20); do
		a=$((200 + RANDOM % 50))
		b=$((RANDOM % 250))
		ip -4 route show | grep -q "^10\.$a\.$b\." && continue
		ip -4 addr show | grep -q "inet 10\.$a\.$b\." && continue
		netns_prefix=10.$a.$b
		break
	done
	if [ -z "$netns_prefix" ]; then
		echo "netns: found no free 10.x.y.0/24 for the bridge" >&2
		return 1
	fi
	NETNS_BRIDGE=sbr$$
	ip link add "$NETNS_BRIDGE" type bridge || return 1
	ip addr add "$netns_prefix.1/24" dev "$NETNS_BRIDGE" || return 1
	ip link set "$NETNS_BRIDGE" up || return 1
	NETNS_HOST_IP=$netns_prefix.1
}

# The kernel's names: a namespace "s<pid>n<k>", its host-side link
# "s<pid>v<k>" (pids have at most 7 digits: within a link name's 15).
netns_id() {
	local i
	for i in "${!netns_names[@]}"; do
		if [ "${netns_names[$i]}" = "$1" ]; then
			echo "${netns_ids[$i]}"
			return 0
		fi
	done
	echo "netns: no namespace named $1" >&2
	return 1
}

netns_add() {
	local name=$1 k=${#netns_names[@]} ns link
	[ -n "$NETNS_BRIDGE" ] || netns_setup || return 1
	ns=s$$n$k
	link=s$$v$k
	ip netns add "$ns" || return 1
	netns_names+=("$name")
	netns_ids+=("$ns")
	ip link add "$link" type veth peer name eth0 netns "$ns" || return 1
	ip link set "$link" master "$NETNS_BRIDGE" up || return 1
	ip -n "$ns" link set lo up || return 1
	NETNS_IP=$netns_prefix.$netns_next
	netns_next=$((netns_next + 1))
	ip -n "$ns" addr add "$NETNS_IP/24" dev eth0 || return 1
	ip -n "$ns" link set eth0 up || return 1
}

netns_exec() {
	local ns
	ns=$(netns_id "$1") || return 1
	shift
	ip netns exec "$ns" "$@"
}

netns_link() {
	local ns
	ns=$(netns_id "$1") || return 1
	echo "s$$v${ns##*n}"
}

netns_cut() {
	local link
	link=$(netns_link "$1") || return 1
	ip link set "$link" down
}

netns_heal() {
	local link
	link=$(netns_link "$1") || return 1
	ip link set "$link" up
}

netns_cleanup() {
	local ns
	for ns in "${netns_ids[@]}"; do
		# Whatever a test left running inside dies with its namespace
		# only when nothing holds it: kill it first.
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip link del "s$$v${ns##*n}" 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	netns_names=()
	netns_ids=()
	[ -n "$NETNS_BRIDGE" ] && ip link del "$NETNS_BRIDGE" 2>/dev/null
	NETNS_BRIDGE=
	NETNS_HOST_IP=
	netns_prefix=
	netns_next=2
}
