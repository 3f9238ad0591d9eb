#!/usr/bin/env bash
# Builds the real-Kubernetes test tools from their pinned Go modules into
# build/k8s/bin/: kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl and etcd (this folder's module), kwok, kustomize, helm, sops
# and age (one module each under tools/, so their dependency graphs never
# mix).
#
#   tests/k8s/build.sh [OUT_DIR]
#   tests/k8s/build.sh --tool MODULE_DIR OUT_DIR   one tool module only
#
# Go's module and build caches stay where Go keeps them, so a second build
# only relinks what changed (seconds). A failed build names the module and
# prints Go's own error. Test tools only: nothing of syncd is written in Go.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
only=
if [ "${1:-}" = --tool ]; then
	only=$(cd "$2" && pwd)
	shift 2
fi
out=${1:-$here/../../build/k8s/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if ! command -v go >/dev/null 2>&1; then
	echo "k8s: go is not installed (the real tier needs Go 1.26)" >&2
	exit 2
fi

# The version strings the binaries report (`kubectl version`, /version),
# as Kubernetes' own build sets them. The build date is fixed so that an
# unchanged module relinks nothing.
modver() { (cd "$1" && go list -m -f '{{.Version}}' "$2"); }
kube_version=$(modver "$here" k8s.io/kubernetes)
kube_major=$(echo "${kube_version#v}" | cut -d. -f1)
kube_minor=$(echo "${kube_version#v}" | cut -d. -f2)
kube_date=2026-01-01T00:00:00Z
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$kube_version"
	ldflags+=" -X $pkg.gitMajor=$kube_major -X $pkg.gitMinor=$kube_minor"
	ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$kube_date"
done

# build MODULE_DIR LABEL OUTPUT PACKAGE [LDFLAGS]
build() {
	local dir=$1 label=$2 binary=$3 pkg=$4 flags=${5:-"-s -w"} log
	log=$(mktemp)
	printf '  GO     %s (%s)\n' "$binary" "$label"
	if ! (cd "$dir" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$flags" \
		-o "$out/$binary" "$pkg") >"$log" 2>&1; then
		echo "k8s: building $binary from module $label failed:" >&2
		sed 's/^/  /' "$log" >&2
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
}

# build_tool DIR: tools/NAME/go.mod names the package to build in its
# `tool` line and the version flags (if any) in a `// ldflags:` comment.
# A module with a `tool ( ... )` block builds each package, named after
# the package's last element (tools/age: age and age-keygen).
build_tool() {
	local tool=$1 pkgs
	pkgs=$(sed -n '/^tool ($/,/^)$/s/^[[:space:]]\+\([^[:space:]]\+\)$/\1/p' "$tool/go.mod")
	if [ -z "$pkgs" ]; then
		build_pkg "$tool" "$(basename "$tool")" \
			"$(sed -n 's/^tool \(.*\)$/\1/p' "$tool/go.mod")"
		return
	fi
	for pkg in $pkgs; do
		build_pkg "$tool" "$(basename "$pkg")" "$pkg"
	done
}

# build_pkg DIR NAME PACKAGE: one package of a tool module.
build_pkg() {
	local tool=$1 name=$2 pkg=$3 flags label
	flags=$(sed -n 's|^// ldflags: \(.*\)$|\1|p' "$tool/go.mod")
	# "MODULE VERSION" of the package; a module of our own has no
	# version: "MODULE (DIR)".
	label=$(cd "$tool" && go list -f '{{.Module.Path}} {{.Module.Version}}' "$pkg" 2>/dev/null) ||
		label=
	label=${label% }
	case $label in
	*" "*) ;;
	*) label="${label:-$(sed -n 's/^module //p' "$tool/go.mod")} ($tool)" ;;
	esac
	build "$tool" "$label" "$name" "$pkg" "-s -w ${flags}"
}

start=$(date +%s)
if [ -n "$only" ]; then
	build_tool "$only"
	exit 0
fi
for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
	build "$here" "k8s.io/kubernetes $kube_version" "$cmd" \
		"k8s.io/kubernetes/cmd/$cmd" "$ldflags"
done
etcd_version=$(modver "$here" go.etcd.io/etcd/server/v3)
build "$here" "go.etcd.io/etcd/server/v3 $etcd_version" etcd go.etcd.io/etcd/server/v3
for tool in "$here"/tools/*/; do
	[ -f "$tool/go.mod" ] && build_tool "${tool%/}"
done
# kwok's own stages: nodes become Ready and keep a lease; scheduled pods
# become Running and Ready, and go away when deleted.
kwok_dir=$(cd "$here/tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
for f in node/fast/node-initialize.yaml \
	node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
	pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
	cat "$kwok_dir/kustomize/stage/$f"
	echo ---
done >"$out/../kwok-stages.yaml"
echo "k8s: tools built in $(($(date +%s) - start)) s into $out"
