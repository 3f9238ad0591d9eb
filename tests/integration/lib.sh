# Shared helpers for integration scripts. Source it; each check prints
# "ok - NAME" or "not ok - NAME" (the driver counts them).
#
#   run_syncd ARGS...      runs $SYNCD (under $SYNCD_WRAP when set, e.g.
#                          valgrind), bounded by a timeout; sets $out, $errout,
#                          $rc
#   expect_rc N NAME       checks $rc
#   expect_eq A B NAME     checks A == B
#   expect_match RE S NAME checks that S matches the extended regex RE
#   have_fixtures          the shared real-world fixtures are beside the
#                          checkout ($SHARED, default ../shared)
#   skip_fixtures WHAT     the one line that says WHAT was skipped without
#                          them
#   tmp_remove             searches $tmp for the secrets the script planted
#                          (tests/helpers/canary.sh: a hit is a "not ok"),
#                          then removes it; the EXIT trap's last step
#
# Every run_syncd output is searched for planted secrets too.
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$top" || exit 2
SYNCD=${SYNCD:-${BUILD:-build}/syncd}
SHARED=${SHARED:-../shared}
FIXTURES="$SHARED/fixtures/real-world"
status=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncd-test.XXXXXX")
. "$top/tests/helpers/canary.sh"

tmp_remove() {
	chmod -R u+w "$tmp" 2>/dev/null
	canary_scan "$(basename "$0")" "$tmp" || status=1
	rm -rf "$tmp" ${canary_own_dir:+"$canary_own_dir"}
}
trap tmp_remove EXIT

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; status=1; }

run_syncd() {
	local wrap=()
	[ -n "${SYNCD_WRAP:-}" ] && read -r -a wrap <<<"$SYNCD_WRAP"
	timeout 120 "${wrap[@]+"${wrap[@]}"}" "$SYNCD" "$@" >"$tmp/.out" 2>"$tmp/.err"
	rc=$?
	# valgrind's own notices ("--PID-- WARNING: unhandled syscall" for
	# pidfd_open) are not syncd's output; its errors ("==PID==") stay.
	if [ -n "${SYNCD_WRAP:-}" ]; then
		sed -i '/^--[0-9]*-- /d' "$tmp/.err"
	fi
	out=$(cat "$tmp/.out")
	errout=$(cat "$tmp/.err")
	canary_check "syncd $1" "$out$errout" || status=1
}

expect_rc() {
	if [ "$rc" -eq "$1" ]; then
		ok "$2"
	else
		not_ok "$2: exit $rc, want $1"
		printf '    stderr: %s\n' "$(head -c 2000 "$tmp/.err")"
	fi
}

expect_eq() {
	if [ "$1" = "$2" ]; then
		ok "$3"
	else
		not_ok "$3"
		diff <(printf '%s\n' "$2") <(printf '%s\n' "$1") | head -n 30 | sed 's/^/    /'
	fi
}

expect_match() {
	if printf '%s' "$2" | grep -Eq -- "$1"; then
		ok "$3"
	else
		not_ok "$3: no match for /$1/"
		printf '    got: %s\n' "$(printf '%s' "$2" | head -c 2000)"
	fi
}

have_fixtures() {
	[ -d "$FIXTURES/kube-prometheus/manifests" ] &&
		[ -d "$FIXTURES/podinfo-kustomize" ]
}
skip_fixtures() { ok "$FIXTURES is absent: $1 skipped"; }

finish() { exit "$status"; }
