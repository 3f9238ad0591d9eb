#!/usr/bin/env bash
# The in-cluster packaging (examples/deploy/, Dockerfile) against kube-emu
# (TLS, token):
#  (a) `syncd sync` of examples/deploy and of examples/deploy/namespaced
#      creates every object, and a second sync writes nothing (with
#      kubectl: the kustomize render of both is the same set of objects);
#  (b) with kubectl: `kubectl apply --dry-run=server -f` accepts every file;
#  (c) the in-cluster path: a service-account mount (token, the emulator's
#      CA, namespace team-a) and KUBERNETES_SERVICE_HOST/PORT, no
#      kubeconfig anywhere: `syncd run --once` converges an app whose
#      objects name no namespace into team-a, using only what the
#      namespaced Role grants;
#  (d) the ConfigMap's syncd.yaml is a valid configuration, and with its
#      repository (and cache, listen address) pointed at local ones it
#      converges examples/guestbook in-cluster, using only what the
#      ClusterRole grants;
#  (e) the Deployment carries the settings docs/deploy.md promises, and the
#      Dockerfile's runtime packages cover every library syncd links and
#      every program it runs.
# Loopback only; every wait is bounded; the emulator is killed on exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"

for tool in curl jq git python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		ok "$tool not installed: deploy checks skipped"
		finish
	fi
done
if [ ! -x "$EMU" ] || [ ! -x "$SYNCD" ]; then
	not_ok "$EMU or $SYNCD not built"
	finish
fi

DEPLOY=examples/deploy
NS_DEPLOY=examples/deploy/namespaced
# The directory renderer reads the manifests without kustomize (which
# needs kubectl or kustomize); the kustomization is not an object.
dir_args=(--renderer directory --exclude kustomization.yaml)

# render_json DIR: the objects of DIR as one JSON List on stdout.
render_json() {
	"$SYNCD" render "$1" "${dir_args[@]}" --no-recurse -o json
}

# api_path: the API path of the object on stdin (every kind used here
# has a plural of lower-case kind + "s").
api_path_jq='
	(.apiVersion | if test("/") then "/apis/" + . else "/api/" + . end)
	+ (if .metadata.namespace then
		"/namespaces/" + .metadata.namespace else "" end)
	+ "/" + (.kind | ascii_downcase) + "s/" + .metadata.name'

# all_present NAME FILE: every object of the List FILE exists.
all_present() {
	local missing=() p
	while read -r p; do
		api GET "$p"
		[ "$code" = 200 ] || missing+=("$p ($code)")
	done < <(jq -r ".items[] | $api_path_jq" "$2")
	if [ ${#missing[@]} -eq 0 ] && [ "$(jq '.items | length' "$2")" -gt 0 ]; then
		ok "$1: every object is in the API server"
	else
		not_ok "$1: missing ${missing[*]:-(no objects rendered)}"
	fi
}

# writes: API writes in /emu/stats since the last reset.
writes() {
	echo $(($(count patch "*") + $(count create "*") + $(count update "*") +
		$(count delete "*")))
}

# rbac_covers NAME RULES_FILE [system:discovery]: every API request in
# /emu/stats is allowed by the rules (a JSON array of PolicyRules) in
# RULES_FILE: resource requests by verb, group and resource; a PATCH that
# created (201) also needs create, as the API server authorizes it;
# discovery requests by a nonResourceURLs rule, or (a Role cannot hold
# one) with a third argument by the system:discovery ClusterRole every
# authenticated user is bound to. Prints what is not allowed.
rbac_covers() {
	local denied discovery=false
	[ "${3:-}" = system:discovery ] && discovery=true
	api GET /emu/stats
	denied=$(printf '%s' "$body" | jq -r --slurpfile rules "$2" \
		--argjson discovery "$discovery" '
		def allows($verb; $group; $res):
			any($rules[0][]; (.apiGroups // []) as $g |
				(.resources // []) as $r | (.verbs // []) as $v |
				(($g | index($group)) or ($g | index("*"))) and
				(($r | index($res)) or ($r | index("*"))) and
				(($v | index($verb)) or ($v | index("*"))) and
				((.resourceNames // []) | length) == 0);
		def nonres: $discovery or any($rules[0][];
			(.nonResourceURLs // []) | length > 0);
		.requests[] |
		if (.resource // "") == "" then
			if nonres then empty else "discovery (\(.verb))" end
		else
			(.resource | split(".")) as $p |
			($p[0] + (if .subresource then "/" + .subresource
				else "" end)) as $res |
			($p[1:] | join(".")) as $group |
			([.verb] + (if .verb == "patch" and .code == 201
				then ["create"] else [] end))[] as $verb |
			if allows($verb; $group; $res) then empty
			else "\($verb) \(.resource)" end
		end' | sort -u)
	if [ "$(printf '%s' "$body" | jq '.total')" -gt 0 ] && [ -z "$denied" ]; then
		ok "$1"
	else
		not_ok "$1: not granted: $(echo $denied)"
	fi
}

emu_start_tls
port=${url##*:}

# ====================================================================
# (a) syncd sync of the manifests
# ====================================================================
render_json "$DEPLOY" >"$tmp/deploy.json" 2>"$tmp/.err" ||
	not_ok "examples/deploy renders: $(head -c 500 "$tmp/.err")"
render_json "$NS_DEPLOY" >"$tmp/ns-deploy.json" 2>"$tmp/.err" ||
	not_ok "examples/deploy/namespaced renders: $(head -c 500 "$tmp/.err")"

reset_stats
run_syncd sync --kubeconfig "$tmp/kc" "${dir_args[@]}" --no-recurse \
	--app syncd "$DEPLOY"
expect_rc 0 "sync examples/deploy: exit 0"
# Every object and the app's ApplySet parent Secret.
expect_match "^$(($(jq '.items | length' "$tmp/deploy.json") + 1)) applied, 0 unchanged, .* 0 failed" \
	"$(tail -n 1 <<<"$out")" "sync examples/deploy: every object applied"
all_present "sync examples/deploy" "$tmp/deploy.json"
reset_stats
run_syncd sync --kubeconfig "$tmp/kc" "${dir_args[@]}" --no-recurse \
	--app syncd "$DEPLOY"
expect_rc 0 "sync examples/deploy again: exit 0"
expect_eq "$(writes)" 0 "sync examples/deploy again: nothing written"

# The team's namespace is the administrators' (not in the variant).
api POST /api/v1/namespaces application/json \
	'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}'
expect_eq "$code" 201 "namespace team-a created"
run_syncd sync --kubeconfig "$tmp/kc" "${dir_args[@]}" --app syncd \
	-n team-a "$NS_DEPLOY"
expect_rc 0 "sync examples/deploy/namespaced: exit 0"
all_present "sync examples/deploy/namespaced" "$tmp/ns-deploy.json"
expect_eq "$(jq '[.items[] | select(.metadata.namespace != "team-a")] |
	length' "$tmp/ns-deploy.json")" 0 \
	"examples/deploy/namespaced: every object is in team-a"
reset_stats
run_syncd sync --kubeconfig "$tmp/kc" "${dir_args[@]}" --app syncd \
	-n team-a "$NS_DEPLOY"
expect_rc 0 "sync examples/deploy/namespaced again: exit 0"
expect_eq "$(writes)" 0 "sync examples/deploy/namespaced again: nothing written"

# With kubectl, the kustomizations (what `kubectl apply -k` applies) are
# the same objects: syncd's kustomize render of them changes nothing.
if command -v kubectl >/dev/null 2>&1; then
	for d in "$DEPLOY" "$NS_DEPLOY"; do
		ns=()
		[ "$d" = "$NS_DEPLOY" ] && ns=(-n team-a)
		reset_stats
		run_syncd sync --kubeconfig "$tmp/kc" --app syncd \
			"${ns[@]+"${ns[@]}"}" "$d"
		expect_rc 0 "sync $d (kustomize): exit 0"
		expect_eq "$(writes)" 0 \
			"sync $d (kustomize): the kustomization lists every file"
	done
else
	ok "kubectl not installed: kustomize render skipped"
fi

# ====================================================================
# (b) kubectl apply --dry-run=server accepts every file
# ====================================================================
if command -v kubectl >/dev/null 2>&1; then
	for f in "$DEPLOY"/*.yaml "$NS_DEPLOY"/*.yaml; do
		case $f in */kustomization.yaml) continue ;; esac
		if timeout 60 kubectl --kubeconfig "$tmp/kc" apply \
			--dry-run=server -f "$f" >"$tmp/.out" 2>"$tmp/.err"; then
			ok "kubectl apply --dry-run=server -f $f"
		else
			not_ok "kubectl apply --dry-run=server -f $f: $(head -c 500 "$tmp/.err")"
		fi
	done
else
	ok "kubectl not installed: kubectl dry-run checks skipped"
fi

# ====================================================================
# (c) in cluster: the service-account mount, no kubeconfig
# ====================================================================
repo="$tmp/repo"
mkdir -p "$repo/apps/team"
cat >"$repo/apps/team/app.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: team-settings
data:
  colour: blue
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: team-web
spec:
  replicas: 1
  selector:
    matchLabels: {app: team-web}
  template:
    metadata:
      labels: {app: team-web}
    spec:
      containers:
        - name: web
          image: nginx:1.27
EOF
mkdir -p "$repo/examples"
cp -R examples/guestbook "$repo/examples/guestbook"
git_q() { git -C "$repo" -c user.name=t -c user.email=t@example.com \
	-c init.defaultBranch=main "$@" >/dev/null 2>&1; }
git_q init && git_q add -A && git_q commit -m apps ||
	not_ok "test repository created"

sa="$tmp/sa"
mkdir -p "$sa" "$tmp/home"
printf 'T' >"$sa/token"
cp "$tmp/ca.pem" "$sa/ca.crt"
printf 'team-a\n' >"$sa/namespace"

cat >"$tmp/team.yaml" <<EOF
cacheDir: $tmp/cache-team
watch: false
apps:
  - name: team
    source:
      repo: file://$repo
      revision: main
      path: apps/team
EOF

# in_cluster NAMESPACE ARGS...: syncd in a pod's environment: the mount,
# the service variables, no $KUBECONFIG and an empty home.
in_cluster() {
	printf '%s\n' "$1" >"$sa/namespace"
	shift
	local saved_home=$HOME saved_kc=${KUBECONFIG-}
	export SYNCD_SA_ROOT="$sa" KUBERNETES_SERVICE_HOST=127.0.0.1 \
		KUBERNETES_SERVICE_PORT="$port" HOME="$tmp/home"
	unset KUBECONFIG
	run_syncd "$@"
	unset SYNCD_SA_ROOT KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
	HOME=$saved_home
	[ -n "$saved_kc" ] && export KUBECONFIG="$saved_kc"
}

render_json "$NS_DEPLOY" |
	jq '[.items[] | select(.kind == "Role") | .rules[]]' >"$tmp/role-rules.json"
reset_stats
in_cluster team-a run --once -c "$tmp/team.yaml"
expect_rc 0 "in-cluster run --once: exit 0"
api GET /api/v1/namespaces/team-a/configmaps/team-settings
expect_eq "$code" 200 "in-cluster: the ConfigMap went to the mount's namespace"
api GET /apis/apps/v1/namespaces/team-a/deployments/team-web
expect_eq "$code" 200 "in-cluster: the Deployment went to the mount's namespace"
expect_eq "$(count "*" "*" 401)" 0 "in-cluster: the mounted token was sent"
rbac_covers "in-cluster: every request is granted by the namespaced Role" \
	"$tmp/role-rules.json" system:discovery

# ====================================================================
# (d) the ConfigMap's syncd.yaml
# ====================================================================
mkdir -p "$tmp/cm"
jq -r '.items[] | select(.kind == "ConfigMap") | .data["syncd.yaml"]' \
	"$tmp/deploy.json" >"$tmp/cm/syncd.yaml"
run_syncd run --check -c "$tmp/cm/syncd.yaml"
if [ "$rc" -eq 0 ] && grep -q 'syncd.yaml: valid, 1 app$' "$tmp/.out"; then
	ok "the ConfigMap's syncd.yaml is a valid configuration (syncd run --check)"
else
	not_ok "the ConfigMap's syncd.yaml is a valid configuration (exit $rc)"
	printf '    stderr: %s\n' "$(head -c 2000 "$tmp/.err")"
fi

# The same file with the placeholder repository replaced by a local copy
# (and the pod's paths by temporary ones) converges the guestbook as the
# pod would: in-cluster, with the mount's namespace syncd.
listen_port=$(python3 -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -e "s#repo: https://git.example.com/platform/deploy.git#repo: file://$repo#" \
	-e "s#cacheDir: /var/cache/syncd#cacheDir: $tmp/cache-cm#" \
	-e "s#listen: \":8080\"#listen: \"127.0.0.1:$listen_port\"#" \
	"$tmp/cm/syncd.yaml" >"$tmp/cm/local.yaml"
expect_eq "$(grep -c "file://$repo\|$tmp/cache-cm\|127.0.0.1:$listen_port" \
	"$tmp/cm/local.yaml")" 3 "the ConfigMap's repo, cacheDir and listen replaced"
render_json "$DEPLOY" |
	jq '[.items[] | select(.kind == "ClusterRole") | .rules[]]' \
		>"$tmp/clusterrole-rules.json"
"$SYNCD" render examples/guestbook -o json >"$tmp/guestbook.json"
reset_stats
in_cluster syncd run --once -c "$tmp/cm/local.yaml"
expect_rc 0 "the ConfigMap's app in-cluster: run --once exit 0"
all_present "the ConfigMap's app (examples/guestbook)" "$tmp/guestbook.json"
rbac_covers "the ConfigMap's app: every request is granted by the ClusterRole" \
	"$tmp/clusterrole-rules.json"
api GET /api/v1/namespaces/guestbook/secrets/guestbook
expect_eq "$code" 200 "the ConfigMap's app: its ApplySet parent is in guestbook"

# ====================================================================
# (e) the Deployment and the image
# ====================================================================
for f in "$tmp/deploy.json" "$tmp/ns-deploy.json"; do
	name=$(basename "$f" .json)
	d=$(jq '.items[] | select(.kind == "Deployment")' "$f")
	pod=$(jq '.spec.template.spec' <<<"$d")
	c=$(jq '.containers[0]' <<<"$pod")
	expect_eq "$(jq -c '[.securityContext.runAsNonRoot,
		.securityContext.runAsUser, .securityContext.seccompProfile.type,
		.terminationGracePeriodSeconds]' <<<"$pod")" \
		'[true,65532,"RuntimeDefault",35]' "$name: pod security context and grace"
	expect_eq "$(jq -c '[.securityContext.runAsNonRoot,
		.securityContext.allowPrivilegeEscalation,
		.securityContext.readOnlyRootFilesystem,
		.securityContext.capabilities.drop, .args,
		.livenessProbe.httpGet.path, .readinessProbe.httpGet.path,
		(.ports[] | select(.name == "http") | .containerPort)]' <<<"$c")" \
		'[true,false,true,["ALL"],["run","-c","/etc/syncd/syncd.yaml"],"/healthz","/readyz",8080]' \
		"$name: container security context, args and probes"
	# The writable paths are emptyDirs, the config is the ConfigMap.
	expect_eq "$(jq -r --argjson c "$c" '. as $p | $c.volumeMounts[] |
		.name as $n | "\(.mountPath) \(($p.volumes[] |
		select(.name == $n)) | if .emptyDir then "emptyDir"
		else "configMap:" + .configMap.name end)"' <<<"$pod")" \
		"/etc/syncd configMap:syncd-config
/var/cache/syncd emptyDir
/tmp emptyDir" "$name: config, cache and /tmp volumes"
	expect_eq "$(jq -r '[.items[] | select(.kind == "ConfigMap") |
		.metadata.name + " " + (.data | keys | join(","))] | .[]' "$f")" \
		"syncd-config syncd.yaml" "$name: the ConfigMap holds syncd.yaml"
	expect_eq "$(jq -r '.items[] | select(.kind == "Service") |
		[.metadata.annotations["prometheus.io/scrape"],
		.metadata.annotations["prometheus.io/port"],
		(.spec.ports[0].port | tostring)] | join(" ")' "$f")" \
		"true 8080 8080" "$name: the Service exposes 8080 for scraping"
	expect_eq "$(jq -r '.spec.template.spec.serviceAccountName' <<<"$d")" \
		"$(jq -r '.items[] | select(.kind == "ServiceAccount") |
		.metadata.name' "$f")" "$name: the pod runs as the ServiceAccount bound"
done
expect_eq "$(jq -c '.items[] | select(.kind == "Deployment") |
	.spec.template' "$tmp/ns-deploy.json")" \
	"$(jq -c '.items[] | select(.kind == "Deployment") | .spec.template' \
	"$tmp/deploy.json")" "the namespaced Deployment's pod is the cluster-wide one's"

# The Dockerfile: the user, the binary's path, the build packages.
expect_match '^USER 65532(:65532)?$' "$(grep '^USER' Dockerfile)" \
	"Dockerfile: runs as uid 65532"
expect_match '^ENTRYPOINT \["/usr/local/bin/syncd"\]$' \
	"$(grep '^ENTRYPOINT' Dockerfile)" "Dockerfile: ENTRYPOINT"
expect_match '/usr/local/bin/syncd$' "$(grep '^COPY --from=build' Dockerfile)" \
	"Dockerfile: the binary is copied where ENTRYPOINT runs it"
# packages STAGE: the packages an apt-get install of stage 1 or 2 names
# (one per line, indented, each followed by a backslash).
packages() {
	awk -v stage="$1" '/^FROM /{n++} n == stage && /^        [a-z0-9][a-z0-9.+-]* \\$/ {print $1}' Dockerfile
}
build_pkgs=$(packages 1)
runtime_pkgs=$(packages 2)
absent=
# The -dev packages of the Makefile's build (PKGS and DEB_PACKAGES, with
# their continuation lines; make fuzz's own packages are not the build's).
build_vars=$(awk '/^(PKGS|DEB_PACKAGES) :=/ {on=1} on {print} on && !/\\$/ {on=0}' Makefile)
for p in $(grep -o '[a-z0-9][a-z0-9.+-]*-dev\b' <<<"$build_vars" | sort -u) \
	build-essential pkg-config; do
	grep -qx "$p" <<<"$build_pkgs" || absent="$absent $p"
done
expect_eq "${absent# }" "" "Dockerfile: the build stage has the Makefile's -dev packages"

if ! command -v apt-cache >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1 ||
	! command -v objdump >/dev/null 2>&1; then
	ok "apt-cache, dpkg or objdump missing: image package checks skipped"
	finish
fi
unknown=
for p in $build_pkgs $runtime_pkgs; do
	apt-cache show --no-all-versions "$p" >/dev/null 2>&1 ||
		unknown="$unknown $p"
done
expect_eq "${unknown# }" "" "Dockerfile: every package name exists in Debian"

# owner FILE: the package that installed FILE (usrmerge: /lib is /usr/lib).
owner() {
	local f p
	for f in "$1" "$(readlink -f "$1")" "/usr$1" "${1#/usr}"; do
		p=$(dpkg -S "$f" 2>/dev/null | head -n 1 | cut -d: -f1)
		[ -n "$p" ] && { echo "$p"; return; }
	done
}
# depends_closure PKG...: the packages apt installs with PKG... (Depends
# and Pre-Depends, recursively).
depends_closure() {
	apt-cache depends --recurse --no-recommends --no-suggests \
		--no-conflicts --no-breaks --no-replaces --no-enhances \
		"$@" 2>/dev/null | grep -v '^ ' | sed 's/:.*//'
}
# What every Debian image has (debian:12-slim is a minbase: the Essential
# and Priority: required packages and their dependencies, e.g. libc6).
# shellcheck disable=SC2046 # one package name per word
base_pkgs=$(depends_closure $(dpkg-query -W \
	-f '${Package} ${Essential} ${Priority}\n' |
	awk '$2 == "yes" || $3 == "required" {print $1}'))
in_base() { grep -qx "$1" <<<"$base_pkgs"; }
# A sanitizer build (make check) also links the sanitizers' run-time
# libraries; the image is a release build.
sanitizer() { case $1 in lib*san[0-9]*) return 0 ;; esac; return 1; }
uncovered=
for lib in $(objdump -p "$SYNCD" | awk '$1 == "NEEDED" {print $2}'); do
	path=$(ldd "$SYNCD" | awk -v l="$lib" '$1 == l {print $3}')
	pkg=$(owner "$path")
	if [ -z "$pkg" ]; then
		uncovered="$uncovered $lib(no-package)"
	elif sanitizer "$pkg"; then
		continue
	elif ! grep -qx "$pkg" <<<"$runtime_pkgs" && ! in_base "$pkg"; then
		uncovered="$uncovered $lib($pkg)"
	fi
done
expect_eq "${uncovered# }" "" \
	"Dockerfile: every NEEDED library of syncd is in a runtime package"
# Every library loaded at run time (NEEDED of NEEDED...) comes with the
# runtime packages' dependencies.
# shellcheck disable=SC2086 # one package name per word
closure=$(depends_closure $runtime_pkgs)
uncovered=
for path in $(ldd "$SYNCD" | awk '$3 ~ /^\// {print $3}'); do
	pkg=$(owner "$path")
	[ -n "$pkg" ] || { uncovered="$uncovered $path(no-package)"; continue; }
	grep -qx "$pkg" <<<"$closure" || in_base "$pkg" || sanitizer "$pkg" ||
		uncovered="$uncovered $path($pkg)"
done
expect_eq "${uncovered# }" "" \
	"Dockerfile: every library loaded at run time comes with the runtime packages"
# The programs syncd runs for Git sources: ssh-keygen (known_hosts,
# SSH signatures) and gpgv (GPG signatures).
for tool in ssh-keygen:openssh-client gpgv:gpgv; do
	prog=${tool%%:*} pkg=${tool#*:}
	if ! grep -qx "$pkg" <<<"$runtime_pkgs"; then
		not_ok "Dockerfile: $prog ($pkg) is in the runtime stage"
	elif dpkg -L "$pkg" >/dev/null 2>&1; then
		expect_match "/bin/$prog\$" "$(dpkg -L "$pkg")" \
			"Dockerfile: $pkg provides $prog"
	else
		ok "Dockerfile: $prog ($pkg) is in the runtime stage ($pkg not installed here)"
	fi
done
finish
