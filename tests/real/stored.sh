#!/usr/bin/env bash
# The cases of what kube-apiserver 1.36 stores (tests/cases/stored/, read
# by diff_stored_defaults()'s and kube-emu's tests) are still what the
# real server stores: tests/cases/stored/generate.sh runs again on a bare
# control plane of its own and every case it writes must equal the
# committed one. A difference means the server changed (or declared.yaml
# did without the cases being written again): run generate.sh and make
# the model reproduce the new cases.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! k8s_available; then
	ok "the real control plane is not built (make k8s): stored cases not checked"
	finish
fi
mkdir -p "$tmp/cases"
if ! bash tests/cases/stored/generate.sh "$tmp/cases" >"$tmp/gen.out" 2>"$tmp/gen.err"; then
	not_ok "generate.sh runs: $(tail -n 3 "$tmp/gen.err")"
	finish
fi
want=$(ls tests/cases/stored/*.json | wc -l)
got=$(ls "$tmp/cases"/*.json | wc -l)
expect_eq "$got" "$want" "generate.sh writes as many cases as are committed"
# What lies outside the model (uids, cluster IPs, node ports, times)
# differs from run to run: compared without it.
inside='delpaths([.outside[] | ltrimstr("/") | split("/")
	| map(gsub("~1"; "/") | gsub("~0"; "~") | (tonumber? // .))
	| ["stored"] + .])'
differ=
for f in tests/cases/stored/*.json; do
	g="$tmp/cases/$(basename "$f")"
	if [ ! -f "$g" ] || ! cmp -s <(jq -S "$inside" "$f") <(jq -S "$inside" "$g"); then
		differ+=" $(basename "$f")"
		diff <(jq -S "$inside" "$f") <(jq -S "$inside" "$g" 2>/dev/null) | head -n 20
	fi
done
expect_eq "${differ:-none}" "none" "every committed case is what the real server stores now"
finish
