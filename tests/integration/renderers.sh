#!/usr/bin/env bash
# The tool renderers through `syncd render`: kustomize (real kubectl when
# installed, stand-ins for every failure), helm (a stand-in: no helm binary
# is installed on our machines), exec plugins, renderer selection and
# substitution variables from --var and --vars-file.
. "$(dirname "$0")/lib.sh"

cases=tests/cases/render-tools
# podinfo (a shared fixture) when it is there; the tool checks that only
# need some kustomization use the tree's own otherwise.
pod="$FIXTURES/podinfo-kustomize"
have_pod=true
if ! have_fixtures; then
	pod=$cases/kustomize/base
	have_pod=false
	skip_fixtures "the podinfo checks"
fi
have_kubectl=false
command -v kubectl >/dev/null 2>&1 && kubectl kustomize --help >/dev/null 2>&1 && have_kubectl=true
# Without kustomize or kubectl the kustomize cases cannot run; kubectl
# stand-ins still cover the failure paths.
have_kustomize=$have_kubectl
command -v kustomize >/dev/null 2>&1 && have_kustomize=true

# Objects of a `syncd render -o json` List in identity order, for
# comparing renders that may order objects differently.
sorted() { jq -S '.items | sort_by(.kind + "/" + (.metadata.namespace // "") + "/" + .metadata.name)' "$1"; }

# A directory holding only the programs named, for runs with a bare PATH.
mkdir -p "$tmp/empty" "$tmp/stub"

# Write a stand-in tool $tmp/stub/NAME: records its argv, then runs BODY.
stub() {
	local name=$1 body=$2
	printf '#!/bin/sh\nprintf "%%s\\n" "$@" >"%s/%s.argv"\n%s\n' "$tmp/stub" "$name" "$body" >"$tmp/stub/$name"
	chmod 755 "$tmp/stub/$name"
}

# --- selection ---
run_syncd render "$pod" --renderer kustomise
expect_rc 2 "an unknown renderer is a usage error"
expect_match 'unknown renderer "kustomise" \(want auto, directory, kustomize, helm, jsonnet or exec\)' "$errout" \
	"the usage error lists the renderers"
run_syncd render "$pod" --exclude kustomization.yaml
expect_rc 2 "directory flags with a detected kustomization are refused"
expect_eq "$errout" "error: $pod: --include, --exclude and --no-recurse apply to the directory renderer, not kustomize (detected; choose one with --renderer)" \
	"the refusal says which renderer was detected"
run_syncd render "$pod" --renderer directory --exclude kustomization.yaml -o json
expect_rc 0 "--renderer directory keeps the directory flags"
cp "$tmp/.out" "$tmp/pod-dir.json"
run_syncd render "$cases/plugin/app" --plugin-cmd "$cases/plugin/plugin.sh"
expect_rc 2 "--plugin-cmd without --renderer exec is refused"
expect_eq "$errout" "error: --plugin-cmd is used only with --renderer exec" \
	"auto never runs a plugin"
run_syncd render "$cases/plugin/app" --renderer exec
expect_rc 2 "--renderer exec without --plugin-cmd is refused"

mkdir -p "$tmp/jsonnet"
printf 'function(name="x") {apiVersion: "v1", kind: "ConfigMap", metadata: {name: name}, data: {env: std.extVar("env")}}\n' >"$tmp/jsonnet/main.jsonnet"
echo '{"version": 1}' >"$tmp/jsonnet/jsonnetfile.json"
run_syncd render "$tmp/jsonnet" --jsonnet-ext-str env=prod --jsonnet-tla-str name=web -o json
expect_rc 0 "auto: *.jsonnet without YAML renders through jsonnet"
expect_eq "$(jq -c '.items[] | [.metadata.name, .data.env]' "$tmp/.out")" '["web","prod"]' \
	"jsonnet: ext vars and top-level arguments from the command line"
rm "$tmp/jsonnet/jsonnetfile.json"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n' >"$tmp/jsonnet/plain.yaml"
run_syncd render "$tmp/jsonnet" -o json
expect_eq "$(jq -c '[.items[].metadata.name]' "$tmp/.out")" '["plain"]' \
	"auto: *.jsonnet beside YAML is a directory app"

# --- kustomize: the podinfo fixture ---
if $have_kustomize; then
	run_syncd render "$pod" -o json
	expect_rc 0 "podinfo renders through kustomize (auto)"
	cp "$tmp/.out" "$tmp/pod.json"
	if $have_pod; then
		expect_eq "$(jq -r '[.items[].kind] | sort | join(",")' "$tmp/pod.json")" \
			"Deployment,HorizontalPodAutoscaler,Service" "podinfo: HPA, Deployment and Service"
	fi
	run_syncd render "$pod" -o json --renderer kustomize
	if cmp -s "$tmp/.out" "$tmp/pod.json"; then ok "--renderer kustomize renders what auto does"; else not_ok "--renderer kustomize renders what auto does"; fi
	# kustomize without transformers returns the files' objects unchanged.
	if $have_pod; then
		expect_eq "$(sorted "$tmp/pod.json")" "$(sorted "$tmp/pod-dir.json")" \
			"podinfo: kustomize objects equal the files' objects"
	fi
	run_syncd render "$pod" -o yaml
	expect_match '^apiVersion: v1$' "$out" "podinfo renders as YAML too"
else
	echo "# kustomize and kubectl not installed: kustomize cases skipped"
fi
if $have_kubectl; then
	kubectl kustomize "$pod" >"$tmp/kubectl-pod.yaml" 2>/dev/null
	run_syncd render "$tmp/kubectl-pod.yaml" --renderer directory -o json
	cp "$tmp/.out" "$tmp/kubectl-pod.json"
	if cmp -s "$tmp/kubectl-pod.json" "$tmp/pod.json"; then
		ok "podinfo: syncd render equals kubectl kustomize (same objects, same order)"
	else
		not_ok "podinfo: syncd render equals kubectl kustomize (same objects, same order)"
		diff "$tmp/kubectl-pod.json" "$tmp/pod.json" | head -20 | sed 's/^/    /'
	fi
	run_syncd render "$pod" -o json --kustomize-bin "$(command -v kubectl)"
	if cmp -s "$tmp/.out" "$tmp/pod.json"; then ok "--kustomize-bin PATH/kubectl"; else not_ok "--kustomize-bin PATH/kubectl"; fi
fi

# --- kustomize: base and overlays ---
if $have_kustomize; then
	run_syncd render "$cases/kustomize/overlays/prod" -o json
	expect_rc 0 "the prod overlay renders"
	p="$tmp/prod.json"
	cp "$tmp/.out" "$p"
	expect_eq "$(jq -r '[.items[] | .kind + " " + .metadata.namespace + "/" + .metadata.name] | join(",")' "$p" | sed 's/config-[a-z0-9]*/config-HASH/')" \
		"ConfigMap prod/prod-web-config-HASH,Service prod/prod-web,Deployment prod/prod-web" \
		"prod: namePrefix, namespace, generated ConfigMap name with its hash"
	expect_eq "$(jq -r '[.items[] | .metadata.labels.env] | join(",")' "$p")" "prod,prod,prod" \
		"prod: commonLabels on every object"
	expect_eq "$(jq -r '.items[] | select(.kind == "Deployment") | .spec.selector.matchLabels.env + " " + .spec.template.metadata.labels.env' "$p")" \
		"prod prod" "prod: commonLabels in selectors and templates"
	expect_eq "$(jq -r '.items[] | select(.kind == "Deployment") | .spec.replicas' "$p")" 3 \
		"prod: strategic-merge patch sets replicas"
	expect_eq "$(jq -r '.items[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].image' "$p")" \
		"ghcr.io/example/web:1.1.0" "prod: JSON6902 patch sets the image"
	expect_eq "$(jq -r '(.items[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].envFrom[0].configMapRef.name) == (.items[] | select(.kind == "ConfigMap") | .metadata.name)' "$p")" \
		true "prod: the Deployment refers to the generated ConfigMap by its hashed name"
	expect_eq "$(jq -c '.items[] | select(.kind == "ConfigMap") | .data' "$p")" '{"LOG_LEVEL":"warn","PORT":"8080"}' \
		"prod: configMapGenerator merge"
	run_syncd render "$cases/kustomize/overlays/staging" -o json
	expect_rc 0 "the staging overlay renders"
	expect_eq "$(jq -r '[.items[] | .metadata.namespace + "/" + .metadata.name + " " + (.spec.replicas // "-" | tostring)] | join(",")' "$tmp/.out" | sed 's/config-[a-z0-9]*/config-HASH/')" \
		"staging/staging-web-config-HASH -,staging/staging-web -,staging/staging-web 1" \
		"staging: its own prefix and namespace, the base's replicas"
	if $have_kubectl; then
		kubectl kustomize "$cases/kustomize/overlays/prod" >"$tmp/kubectl-prod.yaml" 2>/dev/null
		run_syncd render "$tmp/kubectl-prod.yaml" --renderer directory -o json
		if cmp -s "$tmp/.out" "$p"; then ok "prod: syncd render equals kubectl kustomize"; else not_ok "prod: syncd render equals kubectl kustomize"; fi
	fi

	run_syncd render "$cases/escape/app"
	expect_rc 2 "a kustomization reaching outside its root is refused"
	expect_eq "$out" "" "nothing is printed for a refused kustomization"
	expect_match "^error: kustomize $cases/escape/app: \`(kubectl kustomize|kustomize build)\` failed \(exit status 1\): .*security; file '[^']*/escape/secret.yaml' is not in or below '[^']*/escape/app'" \
		"$errout" "the refusal names the file outside the root"
fi

# --- kustomize: failure paths (stand-ins) ---
SYNCD_WRAP="env PATH=$tmp/empty" run_syncd render "$pod"
expect_rc 2 "kustomize: no tool installed"
expect_eq "$errout" "error: kustomize $pod: neither \`kustomize\` nor \`kubectl\` found in PATH (install kubectl: Debian package \`kubectl\` from the Kubernetes or Google Cloud apt repository, or choose a binary with --kustomize-bin)" \
	"kustomize: the missing tool and its package are named"
run_syncd render "$pod" --kustomize-bin "$tmp/empty/kustomize"
expect_rc 2 "kustomize: a missing --kustomize-bin"
expect_eq "$errout" "error: kustomize $pod: \`$tmp/empty/kustomize\` not found (--kustomize-bin)" \
	"kustomize: the missing --kustomize-bin is named"

stub kustomize 'cat "$0.out"; exit 0'
cp "$pod/service.yaml" "$tmp/stub/kustomize.out"
PATH="$tmp/stub:$PATH" run_syncd render "$pod" -o json
expect_rc 0 "kustomize from PATH is preferred to kubectl"
expect_eq "$(tr '\n' ' ' <"$tmp/stub/kustomize.argv")" "build . --load-restrictor LoadRestrictionsRootOnly " \
	"kustomize build runs with the root-only load restrictor"
expect_eq "$(jq -r '.items[0].kind' "$tmp/.out")" Service "the tool's stdout becomes the objects"

stub kubectl 'echo "Error: accumulating resources: something broke" >&2; printf "\033[1m  second line\n\n" >&2; exit 1'
run_syncd render "$pod" --kustomize-bin "$tmp/stub/kubectl"
expect_rc 2 "kustomize: non-zero exit"
expect_eq "$errout" "error: kustomize $pod: \`kubectl kustomize\` failed (exit status 1): Error: accumulating resources: something broke
error: kustomize $pod: [1m  second line" "kustomize: the failure carries stderr, one line each"
expect_eq "$(tr '\n' ' ' <"$tmp/stub/kubectl.argv")" "kustomize . --load-restrictor LoadRestrictionsRootOnly " \
	"kubectl kustomize runs with the root-only load restrictor"

stub kubectl 'sleep 30'
run_syncd render "$pod" --kustomize-bin "$tmp/stub/kubectl" --render-timeout 500ms
expect_rc 2 "kustomize: timeout"
expect_eq "$errout" "error: kustomize $pod: \`kubectl kustomize\` timed out after 500 ms and was killed (--render-timeout)" \
	"kustomize: the timeout is named"

stub kubectl 'echo "key: [unclosed"'
run_syncd render "$pod" --kustomize-bin "$tmp/stub/kubectl"
expect_rc 2 "kustomize: output that is not YAML"
expect_match "^error: kustomize $pod: output is not YAML or JSON: stdout:2:1: " "$errout" \
	"kustomize: bad output is named"

stub kubectl 'printf "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nmetadata: {name: b}\n"'
run_syncd render "$pod" --kustomize-bin "$tmp/stub/kubectl"
expect_rc 2 "kustomize: an object without kind"
expect_eq "$errout" "error: kustomize $pod: output line 5: object without kind" \
	"kustomize: the object without kind is located"

run_syncd render "$pod" --render-timeout soon
expect_rc 2 "a bad --render-timeout is a usage error"

# --- exec plugins ---
plugin="$cases/plugin/plugin.sh"
SECRET_TOKEN=hunter2 run_syncd render "$cases/plugin/app" --renderer exec --plugin-cmd "$plugin" \
	--plugin-arg one --plugin-arg 'two words' --plugin-env REGION=eu-1 -o json
expect_rc 0 "an exec plugin renders"
cp "$tmp/.out" "$tmp/plugin.json"
cm() { jq -r ".items[] | select(.metadata.name == \"plugin-env\") | .data.$1" "$tmp/plugin.json"; }
expect_eq "$(cm app)" app "plugin: SYNCD_APP_NAME (the directory's name)"
expect_eq "$(cm namespace)" "" "plugin: SYNCD_APP_NAMESPACE (none given)"
expect_eq "$(cm revision)" "" "plugin: SYNCD_REVISION (a local directory has none)"
expect_eq "$(cm path)" "$cases/plugin/app" "plugin: SYNCD_PATH"
expect_eq "$(cm cwd)" app "plugin: runs in the app directory"
expect_eq "$(cm region)" eu-1 "plugin: --plugin-env reaches it"
expect_eq "$(cm secret)" "not inherited" "plugin: syncd's environment does not"
expect_eq "$(cm vars)" "HOME PATH REGION SYNCD_APP_NAME SYNCD_APP_NAMESPACE SYNCD_PATH SYNCD_REVISION " \
	"plugin: its environment is exactly PATH, HOME, SYNCD_* and the configured ones"
expect_eq "$(cm args)" "one two words" "plugin: --plugin-arg words, unsplit"
expect_eq "$(jq -c '.items[] | select(.metadata.name == "settings") | .data' "$tmp/plugin.json")" \
	'{"LOG_LEVEL":"debug","MODE":"${MODE}"}' "plugin: objects from the app's files; no substitution without variables"

run_syncd render "$cases/plugin/app" --renderer exec --plugin-cmd "$plugin" --plugin-arg fail
expect_rc 2 "plugin: non-zero exit"
expect_eq "$errout" "error: plugin plugin.sh $cases/plugin/app: \`$plugin\` failed (exit status 4): plugin: cannot render: values for app are missing
error: plugin plugin.sh $cases/plugin/app: plugin: second line of the explanation" \
	"plugin: the failure carries its stderr"
run_syncd render "$cases/plugin/app" --renderer exec --plugin-cmd "$plugin" --plugin-arg garbage
expect_rc 2 "plugin: output that is not YAML"
expect_match "^error: plugin plugin.sh $cases/plugin/app: output is not YAML or JSON: stdout:1:" "$errout" \
	"plugin: bad output is named"
run_syncd render "$cases/plugin/app" --renderer exec --plugin-cmd "$plugin" --plugin-arg nokind
expect_rc 2 "plugin: an object without kind"
expect_eq "$errout" "error: plugin plugin.sh $cases/plugin/app: output line 1: object without kind" \
	"plugin: the object without kind is named"
run_syncd render "$cases/plugin/app" --renderer exec --plugin-cmd "$plugin" --plugin-arg slow --render-timeout 1
expect_rc 2 "plugin: timeout"
expect_eq "$errout" "error: plugin plugin.sh $cases/plugin/app: \`$plugin\` timed out after 1000 ms and was killed (--render-timeout)" \
	"plugin: the timeout is named"
run_syncd render "$cases/plugin/app" --renderer exec --plugin-cmd no-such-plugin-cmd
expect_rc 2 "plugin: a missing command"
expect_eq "$errout" "error: plugin no-such-plugin-cmd $cases/plugin/app: plugin command \`no-such-plugin-cmd\` not found in PATH" \
	"plugin: the missing command is named"
run_syncd render "$cases/plugin/app" --renderer exec --plugin-cmd "$plugin" --plugin-env SYNCD_PATH=/etc
expect_rc 2 "plugin: SYNCD_* cannot be configured"

# A relative --plugin-cmd is relative to syncd's directory, never the app's.
mkdir -p "$tmp/app-with-plugin/bin"
printf '#!/bin/sh\necho "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-the-repo}"\n' >"$tmp/app-with-plugin/bin/render"
chmod 755 "$tmp/app-with-plugin/bin/render"
run_syncd render "$tmp/app-with-plugin" --renderer exec --plugin-cmd bin/render
expect_rc 2 "plugin: a relative command is not taken from the app directory"
expect_match "plugin command \`bin/render\` not found" "$errout" "plugin: the relative command is looked up beside syncd"

# --- helm (stand-in) ---
mkdir -p "$tmp/hbin"
cp "$cases/helm/bin/helm" "$tmp/hbin/helm"
chart="$cases/helm/chart"
realchart=$(cd "$chart" && pwd -P)
PATH="$tmp/hbin:$PATH" run_syncd render "$chart" --helm-release web --helm-values values.yaml \
	--helm-values values-prod.yaml --helm-set image.tag=2.0.0 --helm-set 'a.b={x,y}' \
	--helm-include-crds --helm-kube-version 1.32.0 -o json
expect_rc 0 "helm: a chart renders through helm template (auto)"
expect_eq "$(cat "$tmp/hbin/argv.log")" "template
web
.
--namespace=default
--values=$realchart/values.yaml
--values=$realchart/values-prod.yaml
--set=image.tag=2.0.0
--set=a.b={x,y}
--include-crds
--kube-version=1.32.0" "helm: the exact argv"
expect_eq "$(cat "$tmp/hbin/cwd.log")" "$realchart" "helm: runs in the chart directory"
expect_eq "$(grep -v -x -e PWD -e SHLVL -e _ -e OLDPWD "$tmp/hbin/env.log" | tr '\n' ' ')" \
	"HOME PATH $([ -n "${TMPDIR:-}" ] && echo 'TMPDIR ')" "helm: only PATH, HOME (and TMPDIR) in its environment"
expect_eq "$(jq -r '.items[0] | [.kind, .metadata.name, .metadata.namespace, (.spec.replicas | tostring), .spec.template.spec.containers[0].image, .metadata.annotations.crds, .metadata.annotations["kube-version"]] | join(" ")' "$tmp/.out")" \
	"Deployment web default 3 ghcr.io/example/web:2.0.0 yes 1.32.0" "helm: the objects helm printed"
PATH="$tmp/hbin:$PATH" run_syncd render "$chart" -o json
expect_rc 0 "helm: defaults"
expect_eq "$(tr '\n' ' ' <"$tmp/hbin/argv.log")" "template chart . --namespace=default " \
	"helm: the release defaults to the app's name"
run_syncd render "$chart" --renderer helm --helm-bin "$tmp/hbin/helm" -o json
expect_rc 0 "helm: --helm-bin"
PATH="$tmp/hbin:$PATH" run_syncd render "$chart" --helm-values ../../escape/outside-values.yaml
expect_rc 2 "helm: a values file outside the repository is refused"
expect_match "^error: helm $chart: values file ../../escape/outside-values.yaml: outside the repository \(resolves to .*/escape/outside-values.yaml\); refused$" \
	"$errout" "helm: the refusal names the file"
PATH="$tmp/hbin:$PATH" run_syncd render "$chart" --helm-values /etc/hostname
expect_rc 2 "helm: an absolute values file is refused"
PATH="$tmp/hbin:$PATH" run_syncd render "$chart" --helm-values nope.yaml
expect_rc 2 "helm: a missing values file"
expect_eq "$errout" "error: helm $chart: values file nope.yaml: No such file or directory" "helm: the missing values file is named"
run_syncd render "$chart" --helm-release Web
expect_rc 2 "helm: a bad release name is a usage error"
run_syncd render "$chart" --helm-release=--post-renderer=/bin/sh
expect_rc 2 "helm: a release name cannot become a flag"
SYNCD_WRAP="env PATH=$tmp/empty" run_syncd render "$chart"
expect_rc 2 "helm: no helm installed"
expect_eq "$errout" "error: helm $chart: \`helm\` not found in PATH (install helm 3: https://helm.sh/docs/intro/install/ (no Debian package), or choose a binary with --helm-bin)" \
	"helm: the missing tool and where to get it are named"
stub helm 'echo "Error: template: web/templates/deployment.yaml:7:20: executing \"web/templates/deployment.yaml\" at <.Values.x.y>: nil pointer evaluating interface {}.y" >&2; echo >&2; echo "Use --debug flag to render out invalid YAML" >&2; exit 1'
run_syncd render "$chart" --helm-bin "$tmp/stub/helm"
expect_rc 2 "helm: a template error"
expect_match '^error: helm .*: `helm template` failed \(exit status 1\): Error: template: web/templates/deployment.yaml:7:20: ' \
	"$errout" "helm: the template error is passed on"
expect_eq "$(printf '%s\n' "$errout" | wc -l)" 1 \
	"helm: its advice to rerun with --debug is left out (syncd runs helm)"

# --- substitution variables ---
mkdir -p "$tmp/subst"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {mode: "${MODE}", region: "${REGION:=eu-1}", count: "${COUNT}"}\n' >"$tmp/subst/cm.yaml"
printf '# comment\nMODE=staging\nexport COUNT="7"\n' >"$tmp/vars.env"
printf 'MODE: prod\nCOUNT: 8\n' >"$tmp/vars.yaml"
run_syncd render "$tmp/subst" --vars-file "$tmp/vars.env" -o json
expect_rc 0 "a KEY=VALUE vars file"
expect_eq "$(jq -c '.items[0].data' "$tmp/.out")" '{"count":"7","mode":"staging","region":"eu-1"}' \
	"vars file: values, quotes removed, defaults"
run_syncd render "$tmp/subst" --vars-file "$tmp/vars.env" --vars-file "$tmp/vars.yaml" --var MODE=dev -o json
expect_rc 0 "a YAML vars file and --var"
expect_eq "$(jq -c '.items[0].data' "$tmp/.out")" '{"count":"8","mode":"dev","region":"eu-1"}' \
	"later files win, --var wins over files"
run_syncd render "$tmp/subst" --var MODE=dev
expect_rc 2 "strict by default when variables are given"
expect_match 'COUNT' "$errout" "the undefined variable is named"
run_syncd render "$tmp/subst" --var MODE=dev --substitute lenient -o json
expect_rc 0 "--substitute lenient"
expect_eq "$(jq -r '.items[0].data.count' "$tmp/.out")" "" "lenient: an undefined variable is empty"
run_syncd render "$tmp/subst" -o json
expect_eq "$(jq -r '.items[0].data.mode' "$tmp/.out")" '${MODE}' "no variables: no substitution"
printf 'MODE=ok\nthis line is wrong\n' >"$tmp/bad.env"
run_syncd render "$tmp/subst" --vars-file "$tmp/bad.env"
expect_rc 2 "a bad vars file"
expect_eq "$errout" "error: $tmp/bad.env:2: not NAME=VALUE (a name is letters, digits and _)" \
	"a bad vars file line is named"
run_syncd render "$tmp/subst" --var 1X=y
expect_rc 2 "a bad --var name is a usage error"
SECRET=1 run_syncd render "$cases/plugin/app" --renderer exec --plugin-cmd "$plugin" --var MODE=prod -o json
expect_rc 0 "substitution after an exec plugin"
expect_eq "$(jq -r '.items[] | select(.metadata.name == "settings") | .data.MODE' "$tmp/.out")" prod \
	"substitution applies to every renderer's objects"

finish
