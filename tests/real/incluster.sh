#!/usr/bin/env bash
# syncd run "in-cluster" on the real kube-apiserver 1.36 with the
# ServiceAccount and RBAC of examples/deploy:
#  1. the Namespace, ServiceAccount, ClusterRole(Binding) and
#     Role(Binding) of examples/deploy are applied; a token for
#     syncd/syncd comes from the TokenRequest API (kubectl create token);
#  2. syncd runs as a local process in a pod's environment: a fake
#     service-account mount (token, the cluster's CA, namespace "syncd";
#     $SYNCD_SA_ROOT), KUBERNETES_SERVICE_HOST/PORT pointing at the
#     loopback API server, no kubeconfig, the configuration of the
#     example ConfigMap (with leader election on) and an app from a real
#     Git server that holds one object of every kind the ClusterRole
#     names; the app converges, an edit is healed, a rotated token (the
#     kubelet's ..data link swapped) is used from then on, a commit that
#     removes objects prunes them, SIGTERM releases the Lease;
#  3. the audit log: every request of system:serviceaccount:syncd:syncd
#     was allowed (no 401 or 403; authorization.k8s.io/decision=allow),
#     and every (verb, resource) pair the roles grant was used, or is
#     named in docs/deploy.md ("Grants not every setup uses") with the
#     reason syncd needs it;
#  4. with the restricted service account of tests/helpers/k8s.sh (no
#     role): `syncd diff` exits 2 and `syncd run --once` exits 1, each
#     with one error line naming the 403.
# Loopback only; every wait is bounded; the script removes the
# namespaces and cluster-wide RBAC objects it made and stops what it
# started.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../integration/git/servers.sh"
real_need "syncd run in-cluster on the real control plane"

DEPLOY=examples/deploy
SA_NS=syncd
SA_USER=system:serviceaccount:syncd:syncd
APP_NS=real-incluster
rbac_files=(namespace serviceaccount clusterrole clusterrolebinding role rolebinding)
cleanup() {
	gitsrv_stop_all
	if [ -n "${K8S_DIR:-}" ]; then
		kc delete namespace "$APP_NS" "$SA_NS" --wait=false \
			--ignore-not-found >/dev/null 2>&1
		kc delete clusterrolebinding syncd --ignore-not-found >/dev/null 2>&1
		kc delete clusterrole syncd --ignore-not-found >/dev/null 2>&1
	fi
	real_cleanup
}
trap cleanup EXIT

gitsrv_env
unset KUBECONFIG

show_log() { tail -n 15 "$1" | cut -c 1-400 | sed 's/^/    log: /'; }
get() { kc -n "$1" get "$2" -o jsonpath="$3" 2>&1; }

# === 1. examples/deploy's RBAC on the real server =========================
# A namespace of an earlier run may still be terminating.
ns_gone "$SA_NS" "$APP_NS"
applied=1
for f in "${rbac_files[@]}"; do
	kc apply -f "$DEPLOY/$f.yaml" >"$tmp/apply.out" 2>&1 || {
		applied=0
		sed 's/^/    /' "$tmp/apply.out"
	}
done
if [ "$applied" = 1 ]; then
	ok "examples/deploy's Namespace, ServiceAccount, ClusterRole(Binding) and Role(Binding) are applied"
else
	not_ok "examples/deploy's RBAC objects are applied"
	finish
fi
if token=$(kc -n "$SA_NS" create token syncd --duration 1h 2>"$tmp/token.err") &&
	[ -n "$token" ]; then
	ok "a token for ServiceAccount syncd/syncd from the TokenRequest API"
else
	not_ok "a token for ServiceAccount syncd/syncd: $(cat "$tmp/token.err")"
	finish
fi
# The mount as the kubelet writes it: the files are links into ..data,
# a link to a timestamped folder that a rotation replaces at once.
sa=$tmp/sa
mount_version() { # N TOKEN: folder N with the token, made current
	local d="$sa/..v$1"
	mkdir -p "$d"
	printf '%s' "$2" >"$d/token"
	cp "$K8S_CA" "$d/ca.crt"
	printf '%s\n' "$SA_NS" >"$d/namespace"
	ln -sfn "..v$1" "$sa/..data_tmp"
	mv -T "$sa/..data_tmp" "$sa/..data"
}
mkdir -p "$sa"
mount_version 1 "$token"
for f in token ca.crt namespace; do
	ln -s "..data/$f" "$sa/$f"
done
# jti TOKEN: the token's ID, which the audit log names as credential-id.
jti() {
	local p
	p=$(printf '%s' "$1" | cut -d. -f2 | tr '_-' '/+')
	while [ $((${#p} % 4)) -ne 0 ]; do p="$p="; done
	printf '%s' "$p" | base64 -d 2>/dev/null | jq -r .jti
}
api_port=${K8S_URL##*:}

# The rules the roles grant, as "verb resource[.group]" and "verb URL".
for f in clusterrole role; do
	"$SYNCD" render -o json "$DEPLOY/$f.yaml"
done | jq -r '.items[].rules[] |
	if .nonResourceURLs then
		.verbs[] as $v | .nonResourceURLs[] | "\($v) \(.)"
	else
		.verbs[] as $v | .apiGroups[] as $g | .resources[] |
		"\($v) \(.)\(if $g == "" then "" else "." + $g end)"
	end' | sort -u >"$tmp/granted"

# === 2. the app, from a real Git server ====================================
if ! gitsrv_repo_start apps; then
	ok "no Git server here: in-cluster run skipped: $gitsrv_why"
	finish
fi
commit() { gitsrv_push "$1"; }
A=$work/apps/shop
mkdir -p "$A"
# One object of every kind the ClusterRole lets syncd manage.
cat >"$A/namespace.yaml" <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: $APP_NS
EOF
cat >"$A/core.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  colour: blue
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: worker
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
    - port: 80
      targetPort: 8080
EOF
cat >"$A/workloads.yaml" <<'EOF'
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
          image: nginx:1.27
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 1
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
        - name: db
          image: postgres:17
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
        - name: agent
          image: busybox:1.37
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox:1.37
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: report
              image: busybox:1.37
EOF
cat >"$A/network.yaml" <<'EOF'
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  rules:
    - host: shop.example.com
      http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: web
                port: {number: 80}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web
spec:
  podSelector:
    matchLabels: {app: web}
  policyTypes: [Ingress]
  ingress:
    - ports:
        - port: 8080
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  minReplicas: 1
  maxReplicas: 3
EOF
c1=$(commit "the shop")
kinds=(configmaps serviceaccounts services deployments statefulsets daemonsets
	jobs cronjobs ingresses networkpolicies poddisruptionbudgets
	horizontalpodautoscalers)
nkinds=${#kinds[@]}

# The example ConfigMap's syncd.yaml: its global part with the pod's
# paths made local, leader election on, and this app.
"$SYNCD" render -o json "$DEPLOY/configmap.yaml" |
	jq -r '.items[0].data["syncd.yaml"]' >"$tmp/cm.yaml"
listen_port=$(gitsrv_free_port)
sed -n '/^apps:/q;p' "$tmp/cm.yaml" |
	sed -e "s#^cacheDir: .*#cacheDir: $tmp/cache#" \
		-e "s#^listen: .*#listen: \"127.0.0.1:$listen_port\"#" >"$tmp/syncd.yaml"
expect_eq "$(grep -c "^cacheDir: $tmp/cache\$\|^listen: \"127.0.0.1:$listen_port\"\$\|^watch: true\$" "$tmp/syncd.yaml")" 3 \
	"the example ConfigMap's settings, with a local cacheDir and listen address"
cat >>"$tmp/syncd.yaml" <<EOF
leaderElection: true
apps:
  - name: shop
    source:
      repo: https://127.0.0.1:$http_port/git/apps.git
      revision: main
      path: apps/shop
      interval: 1s
      username: alice
      passwordFile: $tmp/password
      caFile: $tmp/tls/ca.pem
    namespace: $APP_NS
    prune: true
EOF

# The pod's environment: the mount, the service variables, no kubeconfig.
k8s_audit_mark
audit_from=$k8s_audit_from
log=$tmp/run.log
env SYNCD_SA_ROOT="$sa" KUBERNETES_SERVICE_HOST=127.0.0.1 \
	KUBERNETES_SERVICE_PORT="$api_port" POD_NAME=syncd-0 \
	"$SYNCD" run -c "$tmp/syncd.yaml" >"$tmp/run.out" 2>"$log" &
syncd_pid=$!
pids+=("$syncd_pid")

present() { # every kind's object of the app
	local k
	for k in "${kinds[@]}"; do
		[ "$(kc -n "$APP_NS" get "$k" -l applyset.kubernetes.io/part-of -o name 2>/dev/null | wc -l)" = 1 ] || return 1
	done
}
if wait_for 90 present; then
	ok "in-cluster: the app's $nkinds kinds converge into $APP_NS (objects in the API server)"
else
	not_ok "in-cluster: the app converges"
	for k in "${kinds[@]}"; do
		printf '    %s: %s\n' "$k" "$(kc -n "$APP_NS" get "$k" -o name 2>&1 | tr '\n' ' ')"
	done
	show_log "$log"
fi
expect_eq "$(kc get namespace "$APP_NS" -o jsonpath='{.metadata.labels.applyset\.kubernetes\.io/part-of}' | grep -c .)" 1 \
	"in-cluster: the app's Namespace is created and labelled"
expect_match '"msg":"leading: this replica writes".*"identity":"syncd-0"' "$(cat "$log")" \
	"in-cluster: leads as \$POD_NAME"
expect_eq "$(get "$SA_NS" lease/syncd '{.spec.holderIdentity}')" syncd-0 \
	"in-cluster: the Lease syncd in the pod's namespace names the pod"
expect_match '"msg":"pass done","app":"shop".*failed=0' "$(cat "$log")" \
	"in-cluster: a pass completes without failure"
# Passes run every second (the poll): once converged they write nothing,
# for none of the 12 kinds is there a difference that is not one.
passes() { grep -c '"msg":"pass done","app":"shop"' "$log"; }
n0=$(passes)
k8s_audit_mark
more_passes() { [ "$(passes)" -ge $((n0 + 3)) ]; }
wait_for 30 more_passes || true
sa_writes() {
	k8s_audit_barrier
	tail -n "+$k8s_audit_from" "$K8S_AUDIT" | jq -c --arg u "$SA_USER" '
		select(.user.username == $u and
			(.verb | test("^(create|update|patch|delete)$")) and
			.objectRef.resource != "leases")' | wc -l
}
expect_eq "$(($(passes) - n0 >= 3)) $(sa_writes)" "1 0" \
	"in-cluster: three more passes write nothing (audit log)"
expect_eq "$(curl -sS --max-time 5 "http://127.0.0.1:$listen_port/readyz")" ok \
	"in-cluster: /readyz answers ok"

kc -n "$APP_NS" patch configmap settings --type merge -p '{"data":{"colour":"red"}}' >/dev/null
if wait_for 20 eval '[ "$(get "$APP_NS" configmap/settings "{.data.colour}")" = blue ]'; then
	ok "in-cluster: a kubectl patch is healed"
else
	not_ok "in-cluster: a kubectl patch is healed: $(get "$APP_NS" configmap/settings '{.data.colour}')"
	show_log "$log"
fi

# The kubelet rotates the token: the next requests carry the new one.
token2=$(kc -n "$SA_NS" create token syncd --duration 1h)
mount_version 2 "$token2"
k8s_audit_mark
kc -n "$APP_NS" patch configmap settings --type merge -p '{"data":{"colour":"green"}}' >/dev/null
if wait_for 20 eval '[ "$(get "$APP_NS" configmap/settings "{.data.colour}")" = blue ]'; then
	ok "in-cluster: after a token rotation an edit is healed"
else
	not_ok "in-cluster: after a token rotation an edit is healed: $(get "$APP_NS" configmap/settings '{.data.colour}')"
	show_log "$log"
fi
heal_jti() {
	k8s_audit_barrier
	tail -n "+$k8s_audit_from" "$K8S_AUDIT" | jq -r --arg u "$SA_USER" '
		select(.user.username == $u and .verb == "patch" and
			.objectRef.resource == "configmaps" and
			(.requestURI | test("[?&]dryRun=All") | not)) |
		.user.extra["authentication.kubernetes.io/credential-id"][0]'
}
expect_eq "$(heal_jti)" "JTI=$(jti "$token2")" \
	"in-cluster: the healing apply authenticates with the rotated token (audit: credential-id)"

# Prune: every object but the Namespace leaves the source.
rm "$A/core.yaml" "$A/workloads.yaml" "$A/network.yaml"
c2=$(commit "the shop closes")
pruned() {
	local k
	for k in "${kinds[@]}"; do
		[ -z "$(kc -n "$APP_NS" get "$k" -l applyset.kubernetes.io/part-of -o name 2>/dev/null)" ] || return 1
	done
}
if wait_for 60 pruned; then
	ok "in-cluster: a commit removing $nkinds objects prunes them all"
else
	not_ok "in-cluster: a commit removing $nkinds objects prunes them all"
	show_log "$log"
fi
expect_eq "$(kc get namespace "$APP_NS" -o jsonpath='{.status.phase}')" Active \
	"in-cluster: the Namespace is not pruned"

kill -TERM "$syncd_pid"
n=400
while kill -0 "$syncd_pid" 2>/dev/null && [ "$n" -gt 0 ]; do
	sleep 0.1
	n=$((n - 1))
done
wait "$syncd_pid"
expect_eq "$?" 0 "in-cluster: SIGTERM, exit 0"
expect_eq "$(get "$SA_NS" lease/syncd '{.spec.holderIdentity}')" "" \
	"in-cluster: the stopping leader released the Lease"

# === 3. the audit log: allowed, and nothing granted that is not needed ====
k8s_audit_from=$audit_from
k8s_audit_barrier
tail -n "+$audit_from" "$K8S_AUDIT" |
	jq -c --arg u "$SA_USER" 'select(.user.username == $u)' >"$tmp/sa-audit"
total=$(wc -l <"$tmp/sa-audit")
refused=$(jq -r 'select(.responseStatus.code == 401 or .responseStatus.code == 403) |
	"\(.verb) \(.requestURI) \(.responseStatus.code)"' "$tmp/sa-audit")
unauth=$(tail -n "+$audit_from" "$K8S_AUDIT" | jq -c 'select(.responseStatus.code == 401)' | wc -l)
if [ "$total" -gt 0 ] && [ -z "$refused" ] && [ "$unauth" = 0 ]; then
	ok "audit: none of the $total requests of $SA_USER was refused (no 401, no 403)"
else
	not_ok "audit: requests of $SA_USER refused ($unauth 401s): $(echo $refused | head -c 1500)"
fi
expect_eq "$(jq -r '.annotations["authorization.k8s.io/decision"]' "$tmp/sa-audit" | sort | uniq -c | awk '{print $2}')" \
	allow "audit: every request's authorization decision is allow"

# The pairs used: an apply that created the object (201) was authorized
# as a create too.
jq -r 'if .objectRef then
		(.objectRef.resource + (if .objectRef.subresource then "/" + .objectRef.subresource else "" end) +
			(if (.objectRef.apiGroup // "") == "" then "" else "." + .objectRef.apiGroup end)) as $r |
		"\(.verb) \($r)",
		(if .verb == "patch" and .responseStatus.code == 201 then "create \($r)" else empty end)
	else
		"\(.verb) \(.requestURI | sub("\\?.*"; ""))"
	end' "$tmp/sa-audit" | sort -u >"$tmp/used-raw"
# A URL used is covered by a granted pattern (/apis/*).
covers() { # GRANTED-URL USED-URL
	case $1 in
	*'*') [[ $2 == "${1%\*}"* ]] ;;
	*) [ "$1" = "$2" ] ;;
	esac
}
used_granted() { # VERB THING: the granted pair that covers a used one
	local v t
	while read -r v t; do
		[ "$v" = "$1" ] || continue
		if [ "$t" = "$2" ] || { [[ $t == /* ]] && covers "$t" "$2"; }; then
			echo "$v $t"
			return 0
		fi
	done <"$tmp/granted"
	return 1
}
: >"$tmp/used"
not_granted=
while read -r v t; do
	if p=$(used_granted "$v" "$t"); then
		echo "$p" >>"$tmp/used"
	else
		not_granted="$not_granted, $v $t"
	fi
done <"$tmp/used-raw"
sort -u -o "$tmp/used" "$tmp/used"
expect_eq "${not_granted#, }" "" "audit: every (verb, resource) syncd used is granted by the roles"
# Unused grants need a row "| `verb` | `resource` | reason |" in the
# table of docs/deploy.md that names them.
documented() { # VERB THING
	sed -n '/^### Grants not every setup uses/,/^#/p' docs/deploy.md |
		grep -qF "| \`$1\` | \`$2\` |"
}
unused=$(comm -23 "$tmp/granted" "$tmp/used")
undocumented=
while read -r v t; do
	[ -n "$v" ] || continue
	documented "$v" "$t" || undocumented="$undocumented, $v $t"
done <<<"$unused"
ngranted=$(wc -l <"$tmp/granted")
nused=$(wc -l <"$tmp/used")
echo "    granted: $ngranted pairs; used: $nused; not used: $(echo $unused | tr -s ' ' | sed 's/ \([a-z]* \)/, \1/g')"
expect_eq "${undocumented#, }" "" \
	"RBAC: each of the $ngranted granted pairs is used ($nused) or named in docs/deploy.md with its reason"
for v in get list watch create patch delete; do
	for k in configmaps services deployments.apps; do
		grep -qx "$v $k" "$tmp/used" || missing_use="${missing_use:-} $v/$k"
	done
done
expect_eq "${missing_use:-}" "" "audit: get, list, watch, create, patch and delete all used"

# === 4. a service account without roles: one clear line ===================
mkdir -p "$tmp/lone"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lone\ndata:\n  a: b\n' >"$tmp/lone/cm.yaml"
run_syncd diff --kubeconfig "$K8S_SA_KUBECONFIG" --app lone -n default "$tmp/lone"
expect_eq "$rc $(grep -c . "$tmp/.err")" "2 1" \
	"restricted account: syncd diff exits 2 with one line"
expect_match '^error: .*forbidden: User "system:serviceaccount:default:restricted" cannot (get|list) .*\(403 Forbidden\)$' \
	"$errout" "restricted account: the line names the user, the verb and the 403"
git init -q -b main "$tmp/lone-repo"
cp "$tmp/lone/cm.yaml" "$tmp/lone-repo/"
git -C "$tmp/lone-repo" add -A
git -C "$tmp/lone-repo" commit -q -m lone
cat >"$tmp/lone.yaml" <<EOF
kubeconfig: $K8S_SA_KUBECONFIG
cacheDir: $tmp/cache-lone
listen: 127.0.0.1:0
apps:
  - name: lone
    source:
      repo: file://$tmp/lone-repo
    namespace: default
EOF
run_syncd run --once -c "$tmp/lone.yaml"
expect_eq "$rc $(grep -c 'level=error' "$tmp/.err")" "1 1" \
	"restricted account: syncd run --once exits 1 with one error line"
expect_match 'level=error msg="pass failed" app=lone .*forbidden: User \\"system:serviceaccount:default:restricted\\" cannot .*\(403 Forbidden\)' \
	"$errout" "restricted account: the pass failure names the user and the 403"
finish
