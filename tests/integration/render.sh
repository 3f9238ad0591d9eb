#!/usr/bin/env bash
# syncd render: data-driven cases, the real-world fixtures, generated bad
# input (huge files, symlinks, NUL bytes, invalid UTF-8) and the CLI.
. "$(dirname "$0")/lib.sh"

# --- data-driven cases (tests/cases/render/*/) ---
for case in tests/cases/render/*/; do
	case=${case%/}
	name=$(basename "$case")
	path="$case/input"
	[ -f "$case/path" ] && path="$case/$(cat "$case/path")"
	args=()
	[ -f "$case/args" ] && mapfile -t args <"$case/args"
	for fmt in json yaml; do
		[ -f "$case/expected.$fmt" ] || continue
		run_syncd render "$path" -o "$fmt" "${args[@]+"${args[@]}"}"
		if [ "$rc" -eq 0 ] && [ -z "$errout" ] && cmp -s "$tmp/.out" "$case/expected.$fmt"; then
			ok "render case $name ($fmt)"
		else
			not_ok "render case $name ($fmt): exit $rc"
			diff "$case/expected.$fmt" "$tmp/.out" | head -n 20 | sed 's/^/    /'
			[ -n "$errout" ] && printf '    stderr: %s\n' "$errout"
		fi
	done
	if [ -f "$case/expected.err" ]; then
		run_syncd render "$path" "${args[@]+"${args[@]}"}"
		if [ "$rc" -eq 2 ] && [ -z "$out" ] && cmp -s "$tmp/.err" "$case/expected.err"; then
			ok "render case $name (error)"
		else
			not_ok "render case $name (error): exit $rc"
			diff "$case/expected.err" "$tmp/.err" | head -n 20 | sed 's/^/    /'
		fi
	fi
done

# --- real-world fixtures ---
kp="$FIXTURES/kube-prometheus/manifests"
if have_fixtures; then
	files=$(find "$kp" -name '*.yaml' | wc -l)
	expect_eq "$files" 95 "kube-prometheus has 95 manifest files"
	run_syncd render "$kp" -o json
	expect_rc 0 "kube-prometheus renders"
	count=$(grep -c '^            "kind": ' "$tmp/.out")
	expect_eq "$count" 131 "kube-prometheus renders 131 objects"
	kinds=$(grep '^            "kind": ' "$tmp/.out" | sed 's/.*"kind": "\(.*\)",*/\1/' |
		sort | uniq -c | sort -k1,1nr -k2 | awk '{print $1, $2}' | tr '\n' ',')
	expect_eq "$kinds" "36 ConfigMap,13 ServiceMonitor,10 CustomResourceDefinition,8 ClusterRole,8 NetworkPolicy,8 PrometheusRule,8 Service,8 ServiceAccount,7 ClusterRoleBinding,5 Deployment,5 RoleBinding,4 Role,3 PodDisruptionBudget,3 Secret,1 APIService,1 Alertmanager,1 DaemonSet,1 Namespace,1 Prometheus," \
		"kube-prometheus kind counts match SOURCES.md"
	run_syncd render "$kp/setup/0alertmanagerConfigCustomResourceDefinition.yaml" -o json
	expect_rc 0 "the CRD with a bare = renders"
	expect_match '^ *"=",?$' "$out" "the bare = is the string \"=\""
	# YAML and JSON output describe the same objects.
	run_syncd render "$kp" -o yaml
	expect_rc 0 "kube-prometheus renders as yaml"
	cp "$tmp/.out" "$tmp/kp.yaml"
	run_syncd render "$tmp/kp.yaml" -o json
	run_syncd render "$kp" -o json
	cp "$tmp/.out" "$tmp/kp.json"
	run_syncd render "$tmp/kp.yaml" -o json
	if cmp -s "$tmp/.out" "$tmp/kp.json"; then
		ok "kube-prometheus: yaml output renders back to the same objects"
	else
		not_ok "kube-prometheus: yaml output renders back to the same objects"
	fi
else
	skip_fixtures "the kube-prometheus render checks"
fi
if have_fixtures; then
	run_syncd render "$FIXTURES/podinfo-kustomize" --renderer directory
	expect_rc 2 "podinfo as a plain directory: kustomization.yaml is no object"
	expect_eq "$errout" "error: kustomization.yaml:1: Kustomization: missing metadata" \
		"the kustomization file is named"
	run_syncd render "$FIXTURES/podinfo-kustomize" --renderer directory --exclude kustomization.yaml -o json
	expect_rc 0 "podinfo renders without its kustomization.yaml"
	expect_eq "$(grep '^            "kind": ' "$tmp/.out" | tr -d ' ,' | tr '\n' ' ')" \
		'"kind":"Deployment" "kind":"HorizontalPodAutoscaler" "kind":"Service" ' \
		"podinfo: Deployment, HPA and Service in path order"
else
	skip_fixtures "the podinfo directory checks"
fi

# --- generated bad input ---
mkdir -p "$tmp/huge"
{
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: huge}\ndata:\n  blob: "'
	head -c $((50 * 1024 * 1024)) /dev/zero | tr '\0' 'a'
	printf '"\n'
} >"$tmp/huge/huge.yaml"
run_syncd render "$tmp/huge"
expect_rc 2 "a 50 MB file is refused"
expect_eq "$errout" "error: huge.yaml: file is $(stat -c %s "$tmp/huge/huge.yaml") bytes, over the 16777216-byte limit" \
	"the 50 MB file error names the file and the limit"

mkdir -p "$tmp/outside" "$tmp/linkroot/sub" "$tmp/linkroot/.shared"
printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\n' >"$tmp/outside/secret.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inside}\n' >"$tmp/linkroot/sub/ok.yaml"
ln -s "$tmp/outside/secret.yaml" "$tmp/linkroot/escape.yaml"
ln -s ../sub "$tmp/linkroot/sub/loop"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: linked}\n' >"$tmp/linkroot/.shared/linked.yaml"
ln -s .shared/linked.yaml "$tmp/linkroot/inside-link.yaml"
run_syncd render "$tmp/linkroot"
expect_rc 2 "a symlink escaping the root is refused"
expect_match "^error: escape.yaml: symlink points outside the root \(to .*/outside/secret.yaml\); refusing to follow it$" \
	"$errout" "the escaping symlink is named"
if printf '%s' "$out" | grep -q stolen; then not_ok "nothing outside the root is printed"; else ok "nothing outside the root is printed"; fi
rm "$tmp/linkroot/escape.yaml"
run_syncd render "$tmp/linkroot" -o json
expect_rc 0 "links inside the root are followed, a loop is walked once"
expect_eq "$(grep '"name": ' "$tmp/.out" | tr -d ' ,' | tr '\n' ' ')" \
	'"name":"linked" "name":"inside" ' "a link inside the root is followed; a loop is walked once"

mkdir -p "$tmp/nul"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: n\0ul\n' >"$tmp/nul/nul.yaml"
run_syncd render "$tmp/nul"
expect_rc 2 "a NUL byte is refused"
expect_match '^error: nul.yaml:4:10: ' "$errout" "the NUL byte error has file:line:column"

mkdir -p "$tmp/utf8"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caf\xe9\n' >"$tmp/utf8/latin1.yaml"
run_syncd render "$tmp/utf8"
expect_rc 2 "invalid UTF-8 is refused"
expect_match '^error: latin1.yaml:4:[0-9]+: .*UTF-8' "$errout" "the invalid UTF-8 error has file:line:column"

# --- the command line ---
run_syncd --help
expect_rc 0 "syncd --help"
expect_match 'render' "$out" "syncd --help lists render"
run_syncd render --help
expect_rc 0 "syncd render --help"
expect_match '^usage: syncd render PATH' "$out" "render --help shows usage"
run_syncd version
expect_rc 0 "syncd version"
expect_eq "$out" "syncd $(cat VERSION)" "syncd version prints the version"
run_syncd frobnicate
expect_rc 2 "an unknown command exits 2"
expect_eq "$errout" 'error: unknown command "frobnicate" (see '"'syncd --help'"')' "an unknown command is named"
run_syncd render
expect_rc 2 "render without PATH exits 2"
run_syncd render examples/guestbook -o xml
expect_rc 2 "an unknown output format exits 2"
expect_match 'unknown output format "xml"' "$errout" "the bad format is named"
run_syncd render examples/guestbook --include 'redis/*'
expect_rc 0 "--include selects files"
expect_eq "$(printf '%s\n' "$out" | grep -c '^kind: ')" 2 "--include redis/* gives the two redis objects"
run_syncd render examples/guestbook --exclude '*.yaml'
expect_rc 0 "--exclude everything renders nothing"
expect_eq "$out" "" "nothing rendered, nothing printed"
run_syncd render examples/guestbook --no-recurse -o json
expect_eq "$(grep -c '^            "kind": ' "$tmp/.out")" 1 "--no-recurse renders only the top directory"

finish
