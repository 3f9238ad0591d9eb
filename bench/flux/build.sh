#!/usr/bin/env bash
# Builds the peer of bench/peer-flux.sh, Flux's source-controller and
# kustomize-controller, from their pinned Go modules (one wrapper module
# each in this folder, its go.mod naming the controller as a tool) into
# OUT_DIR, and copies the CustomResourceDefinitions the modules ship
# (config/crd/bases) into OUT_DIR/crds. Benchmark peer only: nothing of
# syncd is written in Go, and neither `make test` nor CI builds these.
#
#   bench/flux/build.sh [OUT_DIR]        (default build/flux)
#
# What the wrappers pin, and why (the controllers' own go.mod files
# cannot be used as they are from the module proxy):
#   - v1.9.6 of both: the newest whose go.mod asks for Go 1.26 (1.10
#     wants 1.27);
#   - their replace directives, which a dependency's go.mod does not
#     carry (go-digest's BLAKE3 branch, kustomize v5.8.1, yaml.v3 v3.0.1);
#     their ./api replacement is the published api module instead, as its
#     directory is not part of the module's zip;
#   - source-controller: github.com/fluxcd/pkg/artifact v0.18.0, as the
#     proxy does not serve v0.18.3.
# Go's caches are Go's own: a second build only relinks (about a minute),
# the first takes about 10 minutes per controller on 2 cores.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../build/flux}
mkdir -p "$out/bin" "$out/crds"
out=$(cd "$out" && pwd)

if ! command -v go >/dev/null 2>&1; then
	echo "flux: go is not installed (the Flux peer needs Go 1.26)" >&2
	exit 2
fi

for c in source-controller kustomize-controller; do
	log=$(mktemp)
	printf '  GO     %s (github.com/fluxcd/%s)\n' "$c" "$c"
	if ! (cd "$here/$c" && CGO_ENABLED=0 go build -trimpath -buildvcs=false \
		-ldflags "-s -w" -o "$out/bin/$c" "github.com/fluxcd/$c") >"$log" 2>&1; then
		echo "flux: building $c failed:" >&2
		sed 's/^/  /' "$log" >&2
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
	dir=$(cd "$here/$c" && go list -m -f '{{.Dir}}' "github.com/fluxcd/$c")
	cp "$dir"/config/crd/bases/*.yaml "$out/crds/"
	chmod u+w "$out"/crds/*.yaml
done
