#!/usr/bin/env bash
# The tool renderers with the real tools of `make k8s` (the stand-ins of
# tests/integration/renderers.sh keep checking argv and environment):
# helm v3 and kustomize v5 render through syncd exactly what they print
# when run by hand, `kubectl kustomize` (kubectl 1.36) stands in for a
# missing kustomize, their real error messages reach the user in one
# line, and a chart made by `helm create` and a kustomize overlay
# converge on the real API server: in sync after one sync, no write on the
# next.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
real_need "the renderers with the real helm and kustomize"

HELM=$K8S_BIN/helm
KUSTOMIZE=$K8S_BIN/kustomize
cases=tests/cases/render-tools
for t in "$HELM" "$KUSTOMIZE"; do
	if [ ! -x "$t" ]; then
		not_ok "$t is not built (make k8s)"
		finish
	fi
done

# objects FILE: a render's objects in identity order, as sorted JSON.
objects() {
	jq -S '.items | sort_by(.kind + "/" + (.metadata.namespace // "") + "/" + .metadata.name)' "$1"
}
# as_list FILE: what a tool printed (a YAML stream), as syncd reads files.
as_list() {
	mkdir -p "$tmp/list"
	cp "$1" "$tmp/list/out.yaml"
	"$SYNCD" render -o json "$tmp/list" >"$tmp/list.json"
	rm -rf "$tmp/list"
	objects "$tmp/list.json"
}

# --- helm: what `helm template` prints, argument for argument ------------
expect_match '^v3\.' "$("$HELM" version --short)" "the real helm is v3"
chart=$tmp/chart
cp -R "$cases/helm/chart" "$chart"
(cd "$chart" && "$HELM" template web . --namespace default \
	--values values.yaml --values values-prod.yaml --set image.tag=2.0.0 \
	--kube-version 1.36.3) >"$tmp/helm.yaml" 2>"$tmp/helm.err"
expect_eq "$?" 0 "helm template renders the test chart by hand"
run_syncd render "$chart" --helm-bin "$HELM" --helm-release web \
	--helm-values values.yaml --helm-values values-prod.yaml \
	--helm-set image.tag=2.0.0 --helm-kube-version 1.36.3 -o json
expect_rc 0 "syncd renders the chart with the real helm"
printf '%s' "$out" >"$tmp/syncd-helm.json"
expect_eq "$(objects "$tmp/syncd-helm.json")" "$(as_list "$tmp/helm.yaml")" \
	"helm: syncd's objects are what helm template prints"
expect_eq "$(jq -r '.items[0].spec.template.spec.containers[0].image' "$tmp/syncd-helm.json")" \
	"$(sed -n 's/^ *image: "\(.*\)"$/\1/p' "$tmp/helm.yaml")" \
	"helm: --helm-set reaches the real helm"
# A template error from the real helm, passed on in one line.
printf '  x: {{ .Values.missing.deeper }}\n' >>"$chart/templates/deployment.yaml"
run_syncd render "$chart" --helm-bin "$HELM"
expect_rc 2 "helm: a chart that does not render: exit 2"
expect_match '^error: helm .*: `helm template` failed \(exit status 1\): Error: template: web/templates/deployment.yaml:[0-9]+:[0-9]+: executing .*nil pointer evaluating interface \{\}\.deeper' \
	"$errout" "helm: the real helm's error names the template, line and cause"
expect_eq "$(printf '%s\n' "$errout" | wc -l)" 1 "helm: the error is one line"

# --- helm create: a chart as people start one, on the real server -------
(cd "$tmp" && "$HELM" create demo >/dev/null)
fresh_ns syncd-helm
H=(-n syncd-helm --app demo --helm-bin "$HELM")
S sync "${H[@]}" "$tmp/demo"
expect_rc 0 "helm create's chart: sync exit 0"
n=$("$SYNCD" render --helm-bin "$HELM" -o json "$tmp/demo" | jq '.items | length')
expect_match "^$((n + 1)) applied, 0 unchanged" "$(tail -n 1 "$tmp/.out")" \
	"helm create's chart: its $n objects and the inventory applied"
S diff "${H[@]}" -o json "$tmp/demo"
expect_eq "$rc $(printf '%s' "$out" | jq -r '[.objects[] | select(.state != "InSync") | "\(.kind)/\(.name)"] | join(" ")')" \
	"0 " "helm create's chart: every object InSync on the real server"
k8s_audit_mark
S sync "${H[@]}" "$tmp/demo"
expect_eq "$rc $(syncd_writes)" "0 0" "helm create's chart: a second sync writes nothing"

# --- kustomize: the overlays, the real kustomize and kubectl kustomize -----
expect_match '^v5\.' "$("$KUSTOMIZE" version)" "the real kustomize is v5"
for overlay in prod staging; do
	"$KUSTOMIZE" build "$cases/kustomize/overlays/$overlay" >"$tmp/k.yaml" 2>"$tmp/k.err"
	run_syncd render "$cases/kustomize/overlays/$overlay" --kustomize-bin "$KUSTOMIZE" -o json
	printf '%s' "$out" >"$tmp/k.json"
	expect_eq "$rc $(objects "$tmp/k.json")" "0 $(as_list "$tmp/k.yaml")" \
		"kustomize: overlay $overlay: syncd's objects are what kustomize build prints"
done
# Without kustomize on PATH, syncd runs `kubectl kustomize` (1.36 here,
# ahead of any other kubectl).
mkdir -p "$tmp/kbin"
ln -s "$K8S_BIN/kubectl" "$tmp/kbin/kubectl"
PATH="$tmp/kbin:/usr/bin:/bin" run_syncd render "$cases/kustomize/overlays/prod" -o json
printf '%s' "$out" >"$tmp/kk.json"
"$KUSTOMIZE" build "$cases/kustomize/overlays/prod" >"$tmp/k.yaml" 2>/dev/null
expect_eq "$rc $(objects "$tmp/kk.json")" "0 $(as_list "$tmp/k.yaml")" \
	"kustomize: kubectl kustomize renders what kustomize does"
# The real kustomize's error, in one line.
mkdir -p "$tmp/broken"
printf 'resources:\n  - missing.yaml\n' >"$tmp/broken/kustomization.yaml"
run_syncd render "$tmp/broken" --kustomize-bin "$KUSTOMIZE"
expect_rc 2 "kustomize: a missing resource: exit 2"
expect_match "^error: kustomize $tmp/broken: \`kustomize build\` failed \(exit status 1\): Error: .*missing\.yaml" \
	"$errout" "kustomize: the real error names the missing file"
expect_eq "$(printf '%s\n' "$errout" | wc -l)" 1 "kustomize: the error is one line"

# --- the prod overlay on the real server ------------------------------------
ov=$tmp/overlay
mkdir -p "$ov"
cp -R "$cases/kustomize/base" "$cases/kustomize/overlays" "$ov/"
printf 'namespace: syncd-kustomize\n' >>"$ov/overlays/prod/kustomization.yaml"
fresh_ns syncd-kustomize
O=(-n syncd-kustomize --app overlay --kustomize-bin "$KUSTOMIZE")
S sync "${O[@]}" "$ov/overlays/prod"
expect_rc 0 "kustomize overlay: sync exit 0"
S diff "${O[@]}" "$ov/overlays/prod"
expect_rc 0 "kustomize overlay: in sync on the real server"
k8s_audit_mark
S sync "${O[@]}" "$ov/overlays/prod"
expect_eq "$rc $(syncd_writes)" "0 0" "kustomize overlay: a second sync writes nothing"

kc delete namespace syncd-helm syncd-kustomize --wait=false >/dev/null 2>&1
finish
