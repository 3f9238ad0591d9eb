#!/usr/bin/env bash
# Benchmark: syncd against Flux (source-controller + kustomize-controller
# v1.9.6, built from their Go modules by bench/flux/build.sh) keeping the
# same workload converged on the same real control plane (etcd and
# kube-apiserver 1.36 of `make k8s`), one after the other in the same run.
#
# The workload: APPS apps (default 100) of PER objects each (default 100:
# ConfigMaps, Deployments and Services in turn), one folder per app in
# one Git repository served over smart HTTP (lighttpd + git
# http-backend) on loopback. syncd's apps live in namespaces s-NNN, Flux's
# in f-NNN, so neither sees the other's objects. Both poll Git and
# reconcile at the same INTERVAL (default 60 s): syncd's poll interval and
# resync, Flux's GitRepository and Kustomization intervals. syncd runs
# with its watch on (its default), Flux as it ships.
#
# Each controller runs as a service account of its own, so the API
# server's audit log attributes every request. Measured per controller:
#   - first convergence: every object created, from the controller's
#     start (syncd) or from the creation of its custom resources (Flux);
#   - a commit touching 10 apps: commit -> every changed object applied;
#   - a hand edit of one object (kubectl patch): edit -> healed;
#   - steady state: STEADY seconds (default 600) with nothing changing:
#     requests per interval and per hour (extrapolated), CPU seconds;
#   - over the whole phase: CPU seconds (utime + stime of its processes)
#     and peak RSS (VmHWM; for Flux, its two controllers together).
# Goals (issue 22) are printed as met/MISSED with the figures as measured,
# and the ratios. A missed goal exits 0; an error exits non-zero.
#
#   bench/peer-flux.sh             APPS=10 PER=30 STEADY=120 bench/peer-flux.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SYNCD="$BUILD/syncd"
FLUX=${FLUX:-$BUILD/flux}
APPS=${APPS:-100}
PER=${PER:-100}
INTERVAL=${INTERVAL:-60}
STEADY=${STEADY:-600}
TOUCH=$((APPS < 10 ? APPS : 10))
ADDR=127.0.0.1

die() {
	echo "bench/peer-flux.sh: $*" >&2
	exit 1
}
# The hand edit goes to o-003, the second ConfigMap, which the commit
# (it changes o-000) leaves alone: an app needs at least 4 objects.
[ "$APPS" -ge 1 ] && [ "$PER" -ge 4 ] ||
	die "APPS must be at least 1 and PER at least 4 (APPS=$APPS PER=$PER)"
[ -x "$SYNCD" ] || make -s BUILD="$BUILD" "$SYNCD"
for tool in curl jq git lighttpd; do
	command -v "$tool" >/dev/null || die "$tool is required"
done
if [ ! -x "$FLUX/bin/source-controller" ] ||
	[ ! -x "$FLUX/bin/kustomize-controller" ]; then
	echo "Flux is not built: building it (bench/flux/build.sh)"
	bash bench/flux/build.sh "$FLUX" || die "building Flux failed"
fi
. tests/helpers/k8s.sh
. tests/helpers/githttp.sh
k8s_available || die "the real control plane is not built (make k8s)"

out=bench/out/peer-flux
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncd-bench-flux.XXXXXX")
pids=()
git_pid=
cleanup() {
	set +e
	local p
	for p in "${pids[@]+"${pids[@]}"}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ -n "$git_pid" ] && kill -KILL -- "-$git_pid" 2>/dev/null
	k8s_stop
	rm -rf "$tmp"
}
trap cleanup EXIT

# A Service for every third object: more cluster IPs than a /24.
export K8S_SERVICE_CIDR=10.0.0.0/16
k8s_start --bare || die "the control plane did not start"
echo "kube-apiserver $K8S_VERSION (etcd + kube-apiserver) at $K8S_URL;" \
	"$APPS apps x $PER objects, interval ${INTERVAL}s, steady state ${STEADY}s"

# --- the Git server ----------------------------------------------------------
export HOME=$tmp/home GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
export GIT_AUTHOR_NAME=Bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=Bench GIT_COMMITTER_EMAIL=bench@example.com
mkdir -p "$HOME" "$tmp/repos" "$tmp/http/www"
git init -q --bare "$tmp/repos/apps.git"
git -C "$tmp/repos/apps.git" symbolic-ref HEAD refs/heads/main
git_port=$(k8s_pick_port)
githttp_conf "$tmp/http" "$ADDR" "$git_port" "$tmp/repos"
setsid lighttpd -D -f "$tmp/http/lighttpd.conf" >"$tmp/http/out.log" 2>&1 &
git_pid=$!
for _ in $(seq 100); do
	(exec 3<>"/dev/tcp/$ADDR/$git_port") 2>/dev/null && break
	sleep 0.1
done
REPO_URL=http://$ADDR:$git_port/git/apps.git

# The manifests of one app: PER objects, ConfigMaps, Deployments and
# Services in turn, about 1 KB each in YAML. The 600-character fill is
# pseudo-random hex, different in each object (as in bench/controller.sh:
# data that deflates no better than hex does), the same for both sides.
manifests() { # DIR NAMESPACE VALUE
	awk -v per="$PER" -v ns="$2" -v value="$3" 'BEGIN {
		srand(1)
		pool = ""
		while (length(pool) < 8192)
			pool = pool sprintf("%08x", int(rand() * 4294967296))
		for (i = 0; i < per; i++) {
			fill = substr(pool, 1 + int(rand() * (8192 - 600)), 600)
			if (i) print "---"
			name = sprintf("o-%03d", i)
			if (i % 3 == 0) {
				print "apiVersion: v1\nkind: ConfigMap"
				print "metadata:\n  name: " name "\n  namespace: " ns
				print "  labels: {bench.syncd.io/peer: \"yes\"}"
				print "data:\n  key: " value "\n  fill: " fill
			} else if (i % 3 == 1) {
				print "apiVersion: apps/v1\nkind: Deployment"
				print "metadata:\n  name: " name "\n  namespace: " ns
				print "  labels: {bench.syncd.io/peer: \"yes\"}"
				print "spec:\n  replicas: 1"
				print "  selector: {matchLabels: {app: " name "}}"
				print "  template:"
				print "    metadata: {labels: {app: " name "}}"
				print "    spec:\n      containers:\n      - name: app"
				print "        image: registry.k8s.io/pause:3.10"
				print "        ports: [{containerPort: 8080}]"
				print "        env: [{name: FILL, value: " fill "}]"
			} else {
				print "apiVersion: v1\nkind: Service"
				print "metadata:\n  name: " name "\n  namespace: " ns
				print "  labels: {bench.syncd.io/peer: \"yes\"}"
				print "spec:\n  selector: {app: " name "}"
				print "  ports: [{port: 80, targetPort: 8080}]"
			}
		}
	}' >"$1/objects.yaml"
}
app_ns() { printf '%s-%03d' "$1" "$2"; } # PREFIX N
work=$tmp/work
git init -q -b main "$work"
for side in s f; do
	for i in $(seq "$APPS"); do
		ns=$(app_ns "$side" "$i")
		mkdir -p "$work/$side/$ns"
		manifests "$work/$side/$ns" "$ns" v1
	done
done
git -C "$work" add -A
git -C "$work" commit -q -m "the apps"
git -C "$work" push -q "$tmp/repos/apps.git" main

# --- measuring ---------------------------------------------------------------
who=      # the controller measured, for messages
users=    # its audit log users: the prefix of their names
procs=()  # its processes
cpu_ticks() { # the processes' utime + stime, in clock ticks
	local p t=0 f
	for p in "${procs[@]}"; do
		f=$(cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null) || continue
		t=$((t + ${f% *} + ${f#* }))
	done
	echo "$t"
}
peak_rss() { # KiB: the processes' VmHWM added up
	local p t=0 v
	for p in "${procs[@]}"; do
		v=$(awk '/^VmHWM/ { print $2 }' "/proc/$p/status" 2>/dev/null) || v=0
		t=$((t + ${v:-0}))
	done
	echo "$t"
}
alive() {
	local p
	for p in "${procs[@]}"; do
		kill -0 "$p" 2>/dev/null || die "$who exited: see $out/$side-*.log"
	done
}
# The controller's requests: users whose name starts with $users (Flux
# is two service accounts).
mine() { # since the mark, one verb per line
	tail -n "+$k8s_audit_from" "$K8S_AUDIT" |
		jq -r --arg u "$users" 'select(.user.username | startswith($u)) | .verb'
}
requests() {
	k8s_audit_barrier
	mine | wc -l
}
verbs() { # requests per verb, "get=N list=N ..."
	mine | sort | uniq -c |
		awk '{ printf "%s%s=%s", (NR > 1 ? " " : ""), $2, $1 }'
}
ms_since() { echo $(($(date +%s%3N) - $1)); }
total=$((APPS * PER))
count_objects() { # objects of the side's namespaces that exist
	kc get configmaps,deployments,services -A -l bench.syncd.io/peer=yes \
		-o jsonpath='{range .items[*]}{.metadata.namespace}{"\n"}{end}' |
		grep -c "^$side-" || true
}
wait_until() { # SECONDS PERIOD COMMAND...: 1 when it timed out
	local end=$(($(date +%s) + $1)) period=$2
	shift 2
	while ! "$@"; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		alive
		sleep "$period"
	done
}
all_created() { [ "$(count_objects)" -ge "$total" ]; }
cm_value() { # NS NAME
	kc -n "$1" get configmap "$2" -o jsonpath='{.data.key}' 2>/dev/null
}
commit_applied() {
	local i
	for i in $(seq "$TOUCH"); do
		[ "$(cm_value "$(app_ns "$side" "$i")" o-000)" = v2 ] || return 1
	done
}
edit_healed() { [ "$(cm_value "$(app_ns "$side" "$APPS")" o-003)" = v1 ]; }

# One phase: the same steps for either controller. start_$side starts it
# (and, for Flux, creates its custom resources) and sets procs.
declare -A R
phase() { # SIDE
	local t0 c0 n
	side=$1
	for i in $(seq "$APPS"); do
		kc create namespace "$(app_ns "$side" "$i")" >/dev/null
	done
	k8s_audit_mark
	t0=$(date +%s%3N)
	"start_$side"
	# Listing every object is the admin's load on the server: every 2 s.
	wait_until 3600 2 all_created ||
		die "$who: $(count_objects) of $total objects after an hour"
	R[$side.converge_ms]=$(ms_since "$t0")
	R[$side.converge_req]=$(requests)
	R[$side.converge_verbs]=$(verbs)
	# Let the first reconciles settle before the events are measured.
	sleep "$INTERVAL"

	# A commit touching TOUCH apps: one ConfigMap value each.
	for i in $(seq "$TOUCH"); do
		ns=$(app_ns "$side" "$i")
		manifests "$work/$side/$ns" "$ns" v1
		sed -i '0,/key: v1/s//key: v2/' "$work/$side/$ns/objects.yaml"
	done
	git -C "$work" commit -q -am "$side: $TOUCH apps change"
	k8s_audit_mark
	t0=$(date +%s%3N)
	git -C "$work" push -q "$tmp/repos/apps.git" main
	wait_until $((INTERVAL * 5)) 0.2 commit_applied ||
		die "$who: the commit was not applied in $((INTERVAL * 5)) s"
	R[$side.commit_ms]=$(ms_since "$t0")
	sleep 2
	R[$side.commit_req]=$(requests)

	# A hand edit of one object the commit did not touch.
	ns=$(app_ns "$side" "$APPS")
	k8s_audit_mark
	t0=$(date +%s%3N)
	kc -n "$ns" patch configmap o-003 --field-manager kubectl-edit --type merge \
		-p '{"data":{"key":"edited"}}' >/dev/null
	wait_until $((INTERVAL * 5)) 0.2 edit_healed ||
		die "$who: the edit was not healed in $((INTERVAL * 5)) s"
	R[$side.heal_ms]=$(ms_since "$t0")
	sleep 2
	R[$side.heal_req]=$(requests)

	# Steady state.
	k8s_audit_mark
	c0=$(cpu_ticks)
	sleep "$STEADY"
	alive
	R[$side.steady_req]=$(requests)
	R[$side.steady_verbs]=$(verbs)
	R[$side.steady_cpu]=$(awk -v t=$(($(cpu_ticks) - c0)) \
		-v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }')
	R[$side.cpu]=$(awk -v t="$(cpu_ticks)" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.2f", t / hz }')
	R[$side.rss]=$(peak_rss)
	n=$(count_objects)
	[ "$n" -ge "$total" ] || die "$who: $n of $total objects at the end"
	for p in "${procs[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null || true
	done
	procs=()
}

# A service account with cluster-admin and a kubeconfig for it.
account() { # NAMESPACE NAME KUBECONFIG
	local token
	kc get namespace "$1" >/dev/null 2>&1 || kc create namespace "$1" >/dev/null
	kc -n "$1" create serviceaccount "$2" >/dev/null
	kc create clusterrolebinding "bench-$1-$2" --clusterrole cluster-admin \
		--serviceaccount "$1:$2" >/dev/null
	token=$(kc -n "$1" create token "$2" --duration 24h)
	k8s_kubeconfig "$3" "system:serviceaccount:$1:$2" token "$token"
}

# --- syncd ---------------------------------------------------------------------
start_s() {
	local port
	port=$(k8s_pick_port)
	{
		echo "resync: ${INTERVAL}s"
		echo "kubeconfig: $tmp/syncd.kubeconfig"
		echo "cacheDir: $tmp/syncd-cache"
		echo "listen: \"$ADDR:$port\""
		echo "apps:"
		for i in $(seq "$APPS"); do
			ns=$(app_ns s "$i")
			echo "  - name: $ns"
			echo "    source:"
			echo "      repo: $REPO_URL"
			echo "      revision: main"
			echo "      path: s/$ns"
			echo "      interval: ${INTERVAL}s"
			echo "    namespace: $ns"
			echo "    prune: true"
		done
	} >"$tmp/syncd.yaml"
	"$SYNCD" run -c "$tmp/syncd.yaml" >"$out/s-syncd.log" 2>&1 &
	procs=($!)
	pids+=($!)
}
account syncd-system syncd "$tmp/syncd.kubeconfig"
who=syncd
users=system:serviceaccount:syncd-system:syncd
phase s

# --- Flux ----------------------------------------------------------------------
kc apply --server-side -f "$FLUX/crds" >/dev/null
kc wait --for condition=established --timeout 60s crd --all >/dev/null
account flux-system source-controller "$tmp/source.kubeconfig"
account flux-system kustomize-controller "$tmp/kustomize.kubeconfig"
start_f() {
	local storage metrics health
	storage=$(k8s_pick_port)
	mkdir -p "$tmp/flux-storage"
	metrics=$(k8s_pick_port)
	health=$(k8s_pick_port)
	KUBECONFIG=$tmp/source.kubeconfig RUNTIME_NAMESPACE=flux-system \
		"$FLUX/bin/source-controller" --enable-leader-election=false \
		--storage-path "$tmp/flux-storage" \
		--storage-addr "$ADDR:$storage" --storage-adv-addr "$ADDR:$storage" \
		--metrics-addr "$ADDR:$metrics" --health-addr "$ADDR:$health" \
		--events-addr "" --log-level info >"$out/f-source.log" 2>&1 &
	procs=($!)
	pids+=($!)
	metrics=$(k8s_pick_port)
	health=$(k8s_pick_port)
	KUBECONFIG=$tmp/kustomize.kubeconfig RUNTIME_NAMESPACE=flux-system \
		"$FLUX/bin/kustomize-controller" --enable-leader-election=false \
		--metrics-addr "$ADDR:$metrics" --health-addr "$ADDR:$health" \
		--events-addr "" --log-level info >"$out/f-kustomize.log" 2>&1 &
	procs+=($!)
	pids+=($!)
	{
		cat <<EOF
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: apps, namespace: flux-system}
spec:
  url: $REPO_URL
  ref: {branch: main}
  interval: ${INTERVAL}s
EOF
		for i in $(seq "$APPS"); do
			cat <<EOF
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: $(app_ns f "$i"), namespace: flux-system}
spec:
  interval: ${INTERVAL}s
  path: ./f/$(app_ns f "$i")
  prune: true
  sourceRef: {kind: GitRepository, name: apps}
EOF
		done
	} >"$tmp/flux.yaml"
	kc apply --server-side -f "$tmp/flux.yaml" >/dev/null
}
who=Flux
users=system:serviceaccount:flux-system:
phase f

# --- the report ----------------------------------------------------------------
per_interval() { # SIDE: steady-state requests per interval
	awk -v r="${R[$1.steady_req]}" -v s="$STEADY" -v i="$INTERVAL" \
		'BEGIN { printf "%.1f", r * i / s }'
}
per_hour() {
	awk -v r="${R[$1.steady_req]}" -v s="$STEADY" \
		'BEGIN { printf "%.0f", r * 3600 / s }'
}
secs() { awk -v m="$1" 'BEGIN { printf "%.2f", m / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo
printf '%-34s %14s %14s %8s\n' "" syncd Flux "syncd/Flux"
row() { # LABEL SYNCD FLUX
	printf '%-34s %14s %14s %8s\n' "$1" "$2" "$3" "$(ratio "$2" "$3")"
}
row "first convergence, s" "$(secs "${R[s.converge_ms]}")" "$(secs "${R[f.converge_ms]}")"
row "  requests" "${R[s.converge_req]}" "${R[f.converge_req]}"
row "commit ($TOUCH apps) -> applied, s" "$(secs "${R[s.commit_ms]}")" "$(secs "${R[f.commit_ms]}")"
row "  requests" "${R[s.commit_req]}" "${R[f.commit_req]}"
row "hand edit -> healed, s" "$(secs "${R[s.heal_ms]}")" "$(secs "${R[f.heal_ms]}")"
row "  requests" "${R[s.heal_req]}" "${R[f.heal_req]}"
row "steady requests per interval" "$(per_interval s)" "$(per_interval f)"
row "steady requests per hour" "$(per_hour s)" "$(per_hour f)"
row "steady CPU s (${STEADY}s)" "${R[s.steady_cpu]}" "${R[f.steady_cpu]}"
row "CPU s, whole phase" "${R[s.cpu]}" "${R[f.cpu]}"
row "peak RSS KiB" "${R[s.rss]}" "${R[f.rss]}"
echo "  steady requests by verb: syncd ${R[s.steady_verbs]:-none}; Flux ${R[f.steady_verbs]:-none}"
echo "  first convergence by verb: syncd ${R[s.converge_verbs]}; Flux ${R[f.converge_verbs]}"
echo "  control plane peak RSS (MB): $(k8s_peak_rss)"
echo

goal() { # TEXT MET(0/1)
	if [ "$2" = 1 ]; then echo "goal: $1: met"; else echo "goal: $1: MISSED"; fi
}
le() { awk -v a="$1" -v b="$2" 'BEGIN { print (a <= b) ? 1 : 0 }'; }
goal "steady requests <= 1/10 of Flux's ($(per_interval s) vs $(per_interval f) per interval)" \
	"$(le "${R[s.steady_req]}" "$(awk -v f="${R[f.steady_req]}" 'BEGIN { print f / 10 }')")"
goal "peak RSS <= 1/5 of Flux's two controllers (${R[s.rss]} vs ${R[f.rss]} KiB)" \
	"$(le "${R[s.rss]}" "$(awk -v f="${R[f.rss]}" 'BEGIN { print f / 5 }')")"
goal "CPU <= 1/5 of Flux's (${R[s.cpu]} vs ${R[f.cpu]} s)" \
	"$(le "${R[s.cpu]}" "$(awk -v f="${R[f.cpu]}" 'BEGIN { print f / 5 }')")"
goal "commit -> applied no slower than Flux ($(secs "${R[s.commit_ms]}") vs $(secs "${R[f.commit_ms]}") s)" \
	"$(le "${R[s.commit_ms]}" "${R[f.commit_ms]}")"
goal "edit -> healed <= 1 s ($(secs "${R[s.heal_ms]}") s; Flux $(secs "${R[f.heal_ms]}") s)" \
	"$(le "${R[s.heal_ms]}" 1000)"
