#!/usr/bin/env bash
# Leader election under a network partition, judged by the real API
# server's audit log. Two `syncd run` replicas, each in a network namespace
# of its own (tests/helpers/netns.sh), share a Lease on a control plane of
# this script's own whose kube-apiserver listens on the namespaces' bridge
# (the audit log tells the replicas apart by sourceIPs). One leads and
# heals an edit; then it is cut off the API server in the middle of a pass
# (its first write of 30 reached the server; writes are slowed to 10 a
# second) while an actor keeps editing. Asserted from the server's own timestamps: the standby's first
# Lease write comes no earlier than the old leader's last renewal plus
# leaseDurationSeconds; no write of one replica falls inside the other's
# writing interval ("overlapping writers: 0"); the old leader's writes all
# end before its lease ran out, and its log says it gave up leadership
# before then; after the partition heals it writes nothing more and says
# it is a standby; the new leader heals the drift made during the
# partition. Needs root (namespaces, veth, a bridge): skipped with one line
# otherwise. Its own cluster (K8S_ENV is ignored: the shared one listens on
# 127.0.0.1, which a namespace cannot reach).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../helpers/netns.sh"
unset K8S_ENV
# LEADER_KEEP=DIR keeps the replicas' logs and the audit log there.
keep() {
	[ -n "${LEADER_KEEP:-}" ] || return 0
	mkdir -p "$LEADER_KEEP" && cp "$tmp"/r*.err "${K8S_AUDIT:-/dev/null}" "$LEADER_KEEP"/ 2>/dev/null
}
trap 'keep; real_cleanup; netns_cleanup' EXIT

if ! why=$(netns_available 2>&1); then
	ok "leader election under a partition skipped: $why"
	finish
fi
if ! k8s_available; then
	ok "the real control plane is not built (make k8s): leader election under a partition skipped"
	finish
fi
for t in curl jq openssl git; do
	if ! command -v "$t" >/dev/null 2>&1; then
		ok "$t not installed: leader election under a partition skipped"
		finish
	fi
done
if [ ! -x "$SYNCD" ]; then
	not_ok "$SYNCD not built"
	finish
fi
if ! netns_setup; then
	not_ok "the namespaces' bridge is made"
	finish
fi
# No controllers are needed: the app is ConfigMaps.
if ! K8S_ADDRESS=$NETNS_HOST_IP k8s_start --bare; then
	not_ok "the real control plane starts on $NETNS_HOST_IP"
	finish
fi

NS=ldr
LEASE_S=6
kc create namespace "$NS" >/dev/null

repo="$tmp/repo"
mkdir -p "$repo/app"
for n in a b c; do
	cat >"$repo/app/$n.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: $n
data:
  k: git
EOF
done
# Bulk: enough objects that a pass healing them all is still writing
# when the partition starts.
for n in $(seq 30); do
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bulk-%s\ndata:\n  k: git\n---\n' "$n"
done >"$repo/app/bulk.yaml"
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=t -c user.email=t@example.com \
	-c commit.gpgsign=false commit -qm one

# start N: replica N (identity replica-N) in namespace rN, its HTTP port
# 8080 on the namespace's own loopback.
declare -A pid ip
start() {
	local r=r$1
	netns_add "$r" || return 1
	ip[$1]=$NETNS_IP
	cat >"$tmp/syncd-$1.yaml" <<EOF
resync: 1h
# Slow writes (10 a second): a pass healing the bulk objects takes about
# 3 s, so the partition starts in the middle of one.
qps: 10
burst: 1
listen: 127.0.0.1:8080
kubeconfig: $K8S_SYNCD_KUBECONFIG
cacheDir: $tmp/cache-$1
log:
  format: json
fightDetection:
  changes: 0
leaderElection:
  namespace: $NS
  leaseName: syncd-part
  leaseDuration: ${LEASE_S}s
  renewDeadline: 4s
  retryPeriod: 1s
apps:
  - name: web
    source:
      repo: file://$repo
      revision: main
      interval: 1h
    namespace: $NS
EOF
	: >"$tmp/r$1.err"
	POD_NAME=replica-$1 netns_exec "$r" "$SYNCD" run -c "$tmp/syncd-$1.yaml" \
		>/dev/null 2>>"$tmp/r$1.err" &
	pid[$1]=$!
	pids+=("$!")
}
# api N PATH: GET on replica N's HTTP port, from inside its namespace.
api() { netns_exec "r$1" curl -sS --max-time 3 "http://127.0.0.1:8080$2"; }
leads() { [ "$(api "$1" /api/v1/apps | jq -r .leader)" = true ]; }
standby() { [ "$(api "$1" /api/v1/apps | jq -r .leader)" = false ]; }
holder() {
	kc -n "$NS" get lease syncd-part -o jsonpath='{.spec.holderIdentity}' 2>/dev/null
}
holder_is() { [ "$(holder)" = "$1" ]; }
value() { kc -n "$NS" get configmap "$1" -o jsonpath='{.data.k}' 2>/dev/null; }
value_is() { [ "$(value "$1")" = "$2" ]; }
edit() {
	kc -n "$NS" patch configmap "$1" --type merge \
		-p "{\"data\":{\"k\":\"$2\"}}" >/dev/null
}
# drifted: "name=value" of every app object whose value is not Git's
# (a ConfigMap missing counts too).
drifted() {
	kc -n "$NS" get configmaps -o json |
		jq -r '[.items[] | select(.metadata.name | test("^(a|b|c|bulk-[0-9]+)$")) |
			{(.metadata.name): .data.k}] | add // {} |
			. as $m | (["a", "b", "c"] + [range(1; 31) | "bulk-\(.)"]) |
			map(select($m[.] != "git") | "\(.)=\($m[.] // "missing")") | join(" ")'
}
healed() { [ -z "$(drifted)" ]; }
# now: the machine's clock as the audit log writes it.
now() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }
# logged N MSG: the time of replica N's first log line with that message.
logged() {
	jq -Rr --arg m "$2" 'fromjson? | select(.msg == $m) | .time' "$tmp/r$1.err" | head -n 1
}

start 1 || { not_ok "namespace r1 is made"; finish; }
start 2 || { not_ok "namespace r2 is made"; finish; }
leader=
find_leader() {
	local h
	h=$(holder)
	case $h in
	replica-1 | replica-2) leads "${h#replica-}" && leader=${h#replica-} ;;
	*) return 1 ;;
	esac
}
if wait_for 30 find_leader; then
	ok "one replica leads: replica-$leader (the Lease and its API agree)"
else
	not_ok "a replica leads: holder '$(holder)'; $(tail -n 3 "$tmp/r1.err") $(tail -n 3 "$tmp/r2.err")"
	finish
fi
other=$((3 - leader))
old_ip=${ip[$leader]}
new_ip=${ip[$other]}
if wait_for 20 standby "$other"; then
	ok "replica-$other is a standby (its API says so)"
else
	not_ok "replica-$other is a standby: $(api "$other" /api/v1/apps | head -c 300)"
fi
expect_match '^syncd_leader 1$' "$(api "$leader" /metrics)" "the leader's syncd_leader is 1"
if wait_for 30 healed; then
	ok "the leader converges the app"
else
	not_ok "the leader converges the app: $(drifted)"
fi

# The leader writes: an edit is healed.
edit a edited-before
if wait_for 15 value_is a git; then
	ok "the leader heals an edit"
else
	not_ok "the leader heals an edit: '$(value a)'"
fi

# The partition starts while the leader is healing: the actor edits
# every bulk object at once, and the cut comes as the leader's first
# write of that pass reaches the server (the audit log says so), so the
# rest of its pass is in flight.
bulk_at=$(now)
kc -n "$NS" patch -f "$repo/app/bulk.yaml" --type merge \
	-p '{"data":{"k":"edited-bulk"}}' >/dev/null &
actor=$!
first_heal() {
	jq -e -c --arg ip "$old_ip" --arg t "$bulk_at" \
		'select(.sourceIPs[0] == $ip and .verb == "patch" and
		(.objectRef.name // "" | startswith("bulk-")) and
		(.requestURI | test("[?&]dryRun=All") | not) and
		.requestReceivedTimestamp > $t)' "$K8S_AUDIT" 2>/dev/null | grep -q .
}
wait_for 20 first_heal || true
netns_cut "r$leader"
cut_at=$(now)
wait "$actor"
edit a edited-in-partition-1
edit b edited-in-partition-1
took_over() { holder_is "replica-$other" && leads "$other"; }
k=1
for _ in $(seq 60); do
	took_over && break
	k=$((k + 1))
	edit a "edited-in-partition-$k"
	sleep 0.5
done
if took_over; then
	ok "replica-$other takes the Lease while replica-$leader is cut off"
else
	not_ok "replica-$other takes over: holder '$(holder)'; $(tail -n 3 "$tmp/r$other.err")"
fi
# Drift the new leader must heal (it may have healed the earlier edits).
edit c edited-after-takeover
if wait_for 20 healed; then
	ok "the new leader heals the drift made during the partition"
else
	not_ok "the new leader heals the drift: $(drifted)"
fi
gave_up() { [ -n "$(logged "$leader" "no longer leading: this replica stops writing")" ]; }
if wait_for 20 gave_up; then
	ok "the cut-off leader's log says it gave up leadership"
else
	not_ok "the cut-off leader gives up leadership: $(tail -n 5 "$tmp/r$leader.err")"
fi

# Heal: the old leader must write nothing more and become a standby.
healed_at=$(now)
netns_heal "r$leader"
if wait_for 30 standby "$leader"; then
	ok "after the partition heals replica-$leader is a standby (its API says so)"
else
	not_ok "replica-$leader is a standby after the heal: $(api "$leader" /api/v1/apps | head -c 300)"
fi
expect_match '^syncd_leader 0$' "$(api "$leader" /metrics)" "the old leader's syncd_leader is 0"
# Its elector reads the Lease again, and stale requests of the partition
# (retransmitted by the kernel) have had time to land.
read_again() {
	k8s_audit_barrier
	jq -e -c --arg ip "$old_ip" --arg t "$healed_at" \
		'select(.sourceIPs[0] == $ip and .objectRef.resource == "leases" and
		.verb == "get" and .requestReceivedTimestamp > $t)' "$K8S_AUDIT" |
		grep -q .
}
if wait_for 30 read_again; then
	ok "after the heal the old leader reads the Lease again"
else
	not_ok "the old leader reads the Lease after the heal"
fi
sleep 3
edit b edited-after-heal
if wait_for 15 value_is b git; then
	ok "the new leader still heals after the heal"
else
	not_ok "the new leader heals after the heal: '$(value b)'"
fi
k8s_audit_barrier

# --- the audit log's verdict ----------------------------------------------
# Every request of user syncd, as [ip, verb, resource, code, received,
# completed] with the timestamps in seconds.
jq -c 'def secs: (.[0:19] + "Z" | fromdateiso8601) + ("0." + .[20:26] | tonumber);
	select(.user.username == "syncd" and .stage == "ResponseComplete") |
	select((.requestURI | test("[?&]dryRun=All")) | not) |
	[.sourceIPs[0], .verb, .objectRef.resource // "", .responseStatus.code,
	 (.requestReceivedTimestamp | secs), (.stageTimestamp | secs),
	 .requestReceivedTimestamp]' "$K8S_AUDIT" >"$tmp/syncd.audit"
a() { jq -s -r --arg old "$old_ip" --arg new "$new_ip" --argjson lease "$LEASE_S" \
	--arg healed "$healed_at" "$1" "$tmp/syncd.audit"; }
defs='def ok: .[3] >= 200 and .[3] < 300;
	def lw: .[2] == "leases" and (.[1] == "update" or .[1] == "create") and ok;
	def w: .[2] != "leases" and
		(.[1] | IN("create", "update", "patch", "delete", "deletecollection")) and ok;'

old_renew=$(a "$defs"' [.[] | select(.[0] == $old and lw)] as $o |
	[.[] | select(.[0] == $new and lw)] as $n |
	[$o[] | select(.[4] < ($n | map(.[4]) | min))] | map(.[5]) | max // "none"')
new_acquire=$(a "$defs"' [.[] | select(.[0] == $new and lw)] | map(.[4]) | min // "none"')
if [ "$old_renew" = none ] || [ "$new_acquire" = none ]; then
	not_ok "the audit log holds both replicas' Lease writes: old $old_renew, new $new_acquire"
else
	verdict=$(jq -rn --argjson o "$old_renew" --argjson n "$new_acquire" --argjson l "$LEASE_S" \
		'if $n >= $o + $l then "yes \(($n - $o) * 1000 | floor) ms" else "no \(($n - $o) * 1000 | floor) ms" end')
	if [ "${verdict%% *}" = yes ]; then
		ok "the standby's first Lease write comes after the old leader's last renewal + ${LEASE_S} s (${verdict#* } after it, server timestamps)"
	else
		not_ok "the standby took the Lease only ${verdict#* } after the old leader's last renewal (lease ${LEASE_S} s)"
	fi
fi

nold=$(a "$defs"' [.[] | select(.[0] == $old and w)] | length')
nnew=$(a "$defs"' [.[] | select(.[0] == $new and w)] | length')
# A write of one replica inside the other's interval [first write
# received, last write completed] overlaps.
overlap=$(a "$defs"' [.[] | select(w)] as $w |
	def span(ip): [$w[] | select(.[0] == ip)] | [(map(.[4]) | min), (map(.[5]) | max)];
	span($old) as $so | span($new) as $sn |
	[$w[] | select((.[0] == $old and $sn[0] != null and .[5] >= $sn[0] and .[4] <= $sn[1]) or
		(.[0] == $new and $so[0] != null and .[5] >= $so[0] and .[4] <= $so[1]))] | length')
if [ "$nold" -gt 0 ] && [ "$nnew" -gt 0 ] && [ "$overlap" = 0 ]; then
	ok "overlapping writers: 0 (old leader $nold writes, then new leader $nnew writes, audit log)"
else
	not_ok "overlapping writers: $overlap (old leader $nold writes, new leader $nnew writes)"
	a "$defs"' .[] | select(w) | "    \(.[0]) \(.[1]) \(.[2]) \(.[3]) \(.[6])"' | head -n 40
fi
# The standby wrote nothing before it held the Lease.
early=$(a "$defs"' ([.[] | select(.[0] == $new and lw)] | map(.[4]) | min) as $t |
	[.[] | select(.[0] == $new and w and .[4] < $t)] | length')
expect_eq "$early" 0 "the standby wrote nothing before it held the Lease"
# The old leader's writes all completed before its lease ran out.
late=$(a "$defs"' [.[] | select(.[0] == $old and w and .[5] >= ('"$old_renew"' + $lease))] | length' 2>/dev/null)
expect_eq "${late:-?}" 0 "every write of the old leader completed before its last renewal + ${LEASE_S} s"
after_heal=$(a "$defs"' [.[] | select(.[0] == $old and (w or lw) and .[6] > $healed)] | length')
expect_eq "$after_heal" 0 "after the heal the old leader wrote nothing (no stale write landed late)"
# Its own clock (same machine): it gave up before its lease ran out.
gave=$(logged "$leader" "no longer leading: this replica stops writing")
if [ -n "$gave" ] && [ "$old_renew" != none ]; then
	in_time=$(jq -rn --arg g "$gave" --argjson o "$old_renew" --argjson l "$LEASE_S" \
		'(($g[0:19] + "Z" | fromdateiso8601) + ("0." + $g[20:23] | tonumber)) as $t |
		"\(if $t < $o + $l then "yes" else "no" end) \(($t - $o) * 1000 | floor) ms after its last renewal"')
	if [ "${in_time%% *}" = yes ]; then
		ok "the old leader gave up leadership before its last renewal + ${LEASE_S} s (its log: ${in_time#* })"
	else
		not_ok "the old leader gave up leadership too late: ${in_time#* } (lease ${LEASE_S} s)"
	fi
fi
finish
