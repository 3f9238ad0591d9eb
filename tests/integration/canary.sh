#!/usr/bin/env bash
# The secrets canary's own check (tests/helpers/canary.sh): a planted
# secret is found as written and as base64 (at any 3-byte boundary of an
# encoding, as in a Secret's data or a Basic header), in files and in
# outputs, and registered inputs are not searched. Runs on a registry of
# its own, so its deliberate leaks never reach the suite's.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

selftest() {
	local d=$tmp/self out
	mkdir -p "$d/files" "$d/inputs"
	SYNCD_CANARY_DIR=$d/registry
	canary_plant "a test token" "tok-$RANDOM-canary-selftest"
	canary_plant "too short to plant" short
	local v=$(cut -f2 "$SYNCD_CANARY_DIR/planted")
	echo "level=info msg=login token=$v" >"$d/files/plain.log"
	printf 'Authorization: Basic %s\n' "$(printf 'abc%s' "$v" | base64 -w0)" \
		>"$d/files/header.txt"
	printf '{"data":{"token":"%s"}}\n' "$(printf '%s' "$v" | base64 -w0)" \
		>"$d/files/secret.json"
	echo "nothing here" >"$d/files/clean.txt"
	printf '%s\n' "$v" >"$d/inputs/token"
	canary_input "$d/inputs"
	out=$(canary_scan self "$d/files" "$d/inputs")
	expect_eq "$?" 1 "a scan with planted secrets in it fails"
	expect_eq "$(printf '%s\n' "$out" | sed 's|.* in '"$d"'/||' | sort | tr '\n' ' ')" \
		"files/header.txt files/plain.log files/secret.json " \
		"each file holding the secret (plain, base64 in a header, base64 data) is named, inputs and clean files are not"
	expect_match '^not ok - secrets canary \(self\): a test token in ' "$out" \
		"a hit says which secret, never its value"
	case "$out" in
	*"$v"*) not_ok "the value itself is never printed" ;;
	*) ok "the value itself is never printed" ;;
	esac
	expect_eq "$(wc -l <"$SYNCD_CANARY_DIR/planted")" 1 \
		"values under 8 bytes are not planted (too common to search for)"
	canary_check self "a clean output" >/dev/null
	expect_eq "$?" 0 "a clean output passes"
	canary_check self "xx $v yy" >/dev/null
	expect_eq "$?" 1 "an output with the secret fails"
	expect_eq "$(awk '{ n += $1; h += $2 } END { print n, h }' "$SYNCD_CANARY_DIR/scanned")" \
		"6 2" "the registry counts what was searched (4 files, 2 outputs) and the 2 searches that hit"
	rm -rf "$d"
}
(selftest)
[ $? -eq 0 ] || status=1
finish
