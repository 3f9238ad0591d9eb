#!/usr/bin/env bash
# Helm chart repositories and OCI artifacts as sources, deployed into the
# real kube-apiserver 1.36 (docs/sources.md), with real servers on
# loopback: a plain HTTP chart repository (tests/helpers/chartrepo.py,
# its index.yaml built by the real helm) and the CNCF distribution
# registry over TLS with basic auth and its own CA (the real helm and
# oras push into it).
#  1. one-shot: `syncd sync --repo URL --chart NAME --revision '^1.0'`
#     applies the newest 1.x of a chart repository, and reports the
#     revision VERSION@sha256:DIGEST;
#  2. syncd run with four apps (a chart from the chart repository, the
#     same chart from the registry, an OCI artifact of plain manifests
#     pushed with oras, and an App object naming the registry's chart
#     with its credentials and CA in a Secret) converges; the status
#     names each revision; helm renders with the cluster's version and
#     the app's valuesObject;
#  3. steady state: an unchanged chart repository costs one conditional
#     request per poll (304) and no download; an unchanged registry one
#     HEAD of the manifest and no blob (counted on the servers);
#  4. a version inside the range (1.2.0) is applied after the poll, in
#     both the chart repository and the registry; one outside it (2.0.0)
#     is ignored; the artifact pushed again under the same tag (a new
#     digest) is applied;
#  5. a digest pin that does not match refuses the chart (exit 2, both
#     digests named, nothing applied).
# Namespaces src-*; every wait is bounded; the script removes its
# namespaces and stops what it started.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../helpers/registry.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../helpers/chartrepo.sh"
real_need "chart repositories and OCI sources on the real control plane"
if ! registry_available || ! chartrepo_available; then
	ok "registry, oras, helm or python3 missing (make k8s): sources skipped"
	finish
fi

NS_ONE=src-one
NS_REPO=src-repo
NS_OCI=src-oci
NS_ART=src-art
NS_APP=src-app
ALL_NS=("$NS_ONE" "$NS_REPO" "$NS_OCI" "$NS_ART" "$NS_APP")
cleanup() {
	chartrepo_stop
	registry_stop
	if [ -n "${K8S_DIR:-}" ]; then
		kc delete namespace "${ALL_NS[@]}" --wait=false \
			--ignore-not-found >/dev/null 2>&1
		# Gone before the next script (app-crd.sh applies it again).
		kc delete crd apps.syncd.io --ignore-not-found --timeout=60s \
			>/dev/null 2>&1
	fi
	real_cleanup
}
trap cleanup EXIT
fresh_ns "${ALL_NS[@]}"
# helm template renders the charts: the helm of make k8s.
export PATH="$K8S_BIN:$PATH"

get() { # NS KIND/NAME JSONPATH
	kc -n "$1" get "$2" -o jsonpath="$3" 2>&1
}

# chart VERSION: packages mychart at VERSION into $tmp/charts.
chart() {
	local d=$tmp/src/mychart
	mkdir -p "$d/templates" "$tmp/charts"
	cat >"$d/Chart.yaml" <<EOF
apiVersion: v2
name: mychart
version: $1
EOF
	echo 'color: blue' >"$d/values.yaml"
	cat >"$d/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  version: {{ .Chart.Version | quote }}
  color: {{ .Values.color | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
EOF
	"$K8S_BIN/helm" package "$d" -d "$tmp/charts" >/dev/null
}

# === servers ================================================================
if ! registry_start "$tmp/registry"; then
	not_ok "the registry starts"
	finish
fi
chart 1.0.0
chart 1.1.0
mkdir -p "$tmp/repo"
cp "$tmp/charts"/mychart-1.*.tgz "$tmp/repo/"
if ! chartrepo_start "$tmp/repo"; then
	not_ok "the chart repository starts"
	finish
fi
chartrepo_index "$tmp/repo" "$CHARTREPO_URL"
pushed=0
for v in 1.0.0 1.1.0; do
	registry_helm_push "$tmp/charts/mychart-$v.tgz" charts >/dev/null &&
		pushed=$((pushed + 1))
done
expect_eq "$pushed" 2 "helm push: two versions of the chart into the registry"

mkdir -p "$tmp/art"
cat >"$tmp/art/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: artifact
data:
  generation: one
EOF
art1=$(cd "$tmp/art" && registry_oras_push manifests/app:stable cm.yaml:application/yaml)
case $art1 in
sha256:*) ok "oras push: an artifact of one manifest" ;;
*) not_ok "oras push: an artifact of one manifest ($art1)" ;;
esac

# === 1. one-shot sync from a chart repository ===============================
S sync --repo "$CHARTREPO_URL" --chart mychart --revision '^1.0' \
	--helm-release one -n "$NS_ONE" --cache-dir "$tmp/cache-cli"
expect_eq "$rc" 0 "syncd sync --chart: exit 0"
expect_eq "$(get "$NS_ONE" configmap/one-settings '{.data.version}')" 1.1.0 \
	"syncd sync --revision '^1.0': the newest 1.x (1.1.0) is applied"
S diff --repo "$CHARTREPO_URL" --chart mychart --revision '^1.0' \
	--helm-release one -n "$NS_ONE" --cache-dir "$tmp/cache-cli" --verbose
expect_eq "$rc" 0 "syncd diff after the sync: in sync (exit 0)"
expect_match 'commit=1\.1\.0@sha256:[0-9a-f]{64} ' "$errout" \
	"the poll's revision is VERSION@sha256:DIGEST"
expect_match 'fetched=false' "$errout" \
	"the second command downloads nothing (the chart is in the cache)"

# === 2. syncd run: four apps ===============================================
if kc apply -f examples/deploy/app-crd.yaml >/dev/null &&
	kc wait --for=condition=Established crd/apps.syncd.io --timeout=30s >/dev/null; then
	ok "the App CRD is established"
else
	not_ok "the App CRD is established"
fi
kc -n "$NS_APP" create secret generic registry \
	--from-literal=username="$REGISTRY_USER" \
	--from-file=password="$REGISTRY_PASSWORD_FILE" \
	--from-file=ca.crt="$REGISTRY_CA" >/dev/null
cat <<EOF | kc -n "$NS_APP" apply -f - >/dev/null
apiVersion: syncd.io/v1alpha1
kind: App
metadata:
  name: charted
spec:
  source:
    repo: oci://$REGISTRY_HOST/charts
    chart: mychart
    revision: "^1.0"
    interval: 1s
    secretRef: {name: registry}
  render:
    helm:
      valuesObject: {color: red}
EOF
cat >"$tmp/run.yaml" <<EOF
resync: 2s
workers: 2
kubeconfig: $K8S_SYNCD_KUBECONFIG
cacheDir: $tmp/cache
listen: 127.0.0.1:0
appObjects:
  namespaces: [$NS_APP]
apps:
  - name: repo
    namespace: $NS_REPO
    source:
      repo: $CHARTREPO_URL
      chart: mychart
      revision: "^1.0"
      interval: 1s
  - name: oci
    namespace: $NS_OCI
    source:
      repo: oci://$REGISTRY_HOST/charts
      chart: mychart
      revision: "~1"
      interval: 1s
      username: $REGISTRY_USER
      passwordFile: $REGISTRY_PASSWORD_FILE
      caFile: $REGISTRY_CA
    render:
      helm:
        valuesObject: {color: green}
  - name: art
    namespace: $NS_ART
    source:
      repo: oci://$REGISTRY_HOST/manifests/app
      revision: stable
      interval: 1s
      username: $REGISTRY_USER
      passwordFile: $REGISTRY_PASSWORD_FILE
      caFile: $REGISTRY_CA
EOF
log=$tmp/run.log
"$SYNCD" run -c "$tmp/run.yaml" >"$log.out" 2>"$log" &
syncd_pid=$!
pids+=("$syncd_pid")
show_log() { tail -n 15 "$log" | cut -c 1-400 | sed 's/^/    log: /'; }
versions() {
	echo "$(get "$NS_REPO" configmap/repo-settings '{.data.version}')" \
		"$(get "$NS_OCI" configmap/oci-settings '{.data.version}')"
}
converged() {
	[ "$(versions)" = "1.1.0 1.1.0" ] &&
		[ "$(get "$NS_ART" configmap/artifact '{.data.generation}')" = one ] &&
		[ "$(get "$NS_APP" configmap/charted-settings '{.data.color}')" = red ]
}
if wait_for 60 converged; then
	ok "syncd run: the chart repository, the registry's chart, the artifact and the App converge"
else
	not_ok "syncd run: the chart repository, the registry's chart, the artifact and the App converge ($(versions))"
	show_log
fi
case $(get "$NS_APP" app/charted '{.status.lastAppliedRevision}') in
1.1.0@sha256:*) ok "the App's status: lastAppliedRevision 1.1.0@sha256:..." ;;
*) not_ok "the App's status: lastAppliedRevision 1.1.0@sha256:... (got '$(get "$NS_APP" app/charted '{.status.lastAppliedRevision}')')" ;;
esac
expect_eq "$(get "$NS_OCI" configmap/oci-settings '{.data.color}')" green \
	"render.helm.valuesObject reaches helm template"
server_version=$(kc version -o json | jq -r .serverVersion.gitVersion)
expect_eq "$(get "$NS_REPO" configmap/repo-settings '{.data.kube}')" "$server_version" \
	"helm renders with the cluster's version (--kube-version $server_version)"
port=$(sed -n 's/.*serving HTTP.* port=\([0-9]*\).*/\1/p' "$log" | head -1)
status_rev() { # APP
	curl -sf "http://127.0.0.1:$port/api/v1/apps/$1" | jq -r '.revision // empty'
}
case $(status_rev art) in
"stable@$art1") ok "the artifact's revision in the status: stable@DIGEST" ;;
*) not_ok "the artifact's revision in the status: stable@DIGEST (got '$(status_rev art)', pushed $art1)" ;;
esac
polls() { # TYPE: successful polls of that source type in /metrics
	curl -sf "http://127.0.0.1:$port/metrics" |
		grep '^syncd_source_requests_total{' | grep "type=\"$1\"" |
		grep 'op="poll"' | grep 'result="success"' | awk '{print $2}'
}
polls_helm=$(polls helm)
polls_oci=$(polls oci)
if [ "${polls_helm:-0}" -ge 2 ] 2>/dev/null &&
	[ "${polls_oci:-0}" -ge 1 ] 2>/dev/null; then
	ok "/metrics: syncd_source_requests_total counts helm ($polls_helm) and oci ($polls_oci) polls"
else
	not_ok "/metrics: syncd_source_requests_total counts helm and oci polls (helm '$polls_helm', oci '$polls_oci')"
fi
case $(status_rev repo) in
1.1.0@sha256:*) ok "the chart's revision in the status: 1.1.0@sha256:..." ;;
*) not_ok "the chart's revision in the status: 1.1.0@sha256:... (got '$(status_rev repo)')" ;;
esac

# === 3. steady state: conditional requests, no downloads ===================
chartrepo_mark
registry_mark
sleep 5
not_modified=$(chartrepo_count '^GET /index.yaml 304')
full=$(chartrepo_count '^GET /index.yaml 200')
archives=$(chartrepo_count '^GET .*\.tgz ')
if [ "$not_modified" -ge 3 ] && [ "$full" = 0 ] && [ "$archives" = 0 ]; then
	ok "unchanged chart repository: $not_modified polls in 5 s, each one 304, no index body, no archive"
else
	not_ok "unchanged chart repository: 304s $not_modified (want >= 3), 200s $full, archives $archives (want 0)"
fi
heads=$(registry_count HEAD '^/v2/(charts/mychart|manifests/app)/manifests/')
blobs=$(registry_count GET '/blobs/')
manifests=$(registry_count GET '/manifests/')
if [ "$heads" -ge 3 ] && [ "$blobs" = 0 ] && [ "$manifests" = 0 ]; then
	ok "unchanged registry: $heads manifest HEADs in 5 s, no manifest or blob download"
else
	not_ok "unchanged registry: HEADs $heads (want >= 3), manifest GETs $manifests, blob GETs $blobs (want 0)"
fi

# === 4. new versions: inside the range, outside it, a moved tag ============
chart 1.2.0
cp "$tmp/charts/mychart-1.2.0.tgz" "$tmp/repo/"
chartrepo_index "$tmp/repo" "$CHARTREPO_URL"
registry_helm_push "$tmp/charts/mychart-1.2.0.tgz" charts >/dev/null
if wait_for 30 sh -c "[ \"\$(kubectl --kubeconfig '$K8S_KUBECONFIG' -n $NS_REPO get configmap/repo-settings -o jsonpath='{.data.version}')\" = 1.2.0 ] && [ \"\$(kubectl --kubeconfig '$K8S_KUBECONFIG' -n $NS_OCI get configmap/oci-settings -o jsonpath='{.data.version}')\" = 1.2.0 ]"; then
	ok "1.2.0 (inside ^1.0 and ~1) is applied from both after the poll"
else
	not_ok "1.2.0 (inside ^1.0 and ~1) is applied from both after the poll ($(versions))"
	show_log
fi
chart 2.0.0
cp "$tmp/charts/mychart-2.0.0.tgz" "$tmp/repo/"
chartrepo_index "$tmp/repo" "$CHARTREPO_URL"
registry_helm_push "$tmp/charts/mychart-2.0.0.tgz" charts >/dev/null
chartrepo_mark
sleep 5
expect_eq "$(versions)" "1.2.0 1.2.0" "2.0.0 (outside the ranges) is ignored by both"
expect_eq "$(chartrepo_count '^GET .*2\.0\.0\.tgz ')" 0 \
	"2.0.0's archive is never downloaded"

cat >"$tmp/art/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: artifact
data:
  generation: two
EOF
art2=$(cd "$tmp/art" && registry_oras_push manifests/app:stable cm.yaml:application/yaml)
if wait_for 30 sh -c "[ \"\$(kubectl --kubeconfig '$K8S_KUBECONFIG' -n $NS_ART get configmap/artifact -o jsonpath='{.data.generation}')\" = two ]"; then
	ok "the tag pushed again (digest ${art2:0:19}...) is applied"
else
	not_ok "the tag pushed again (digest ${art2:0:19}...) is applied"
	show_log
fi
term_wait "$syncd_pid" 20
expect_eq "$rc" 0 "SIGTERM: syncd run exits 0"

# === 5. a digest pin ========================================================
pin=sha256:$(printf '%064d' 0)
S sync --repo "$CHARTREPO_URL" --chart mychart --revision 1.0.0 \
	--digest "$pin" --helm-release pinned -n "$NS_ONE" \
	--cache-dir "$tmp/cache-cli"
expect_eq "$rc" 2 "a chart of another digest than the pin: exit 2 (could not run)"
expect_match "not the pinned $pin; refused" "$errout" \
	"the error names the pinned digest"
if kc -n "$NS_ONE" get configmap/pinned-settings -o name 2>&1 | grep -q NotFound; then
	ok "nothing is applied"
else
	not_ok "nothing is applied"
fi
finish
