#!/usr/bin/env bash
# The test driver behind `make test`, `make check` and `make valgrind`.
#
#   tests/run.sh [unit|integration]...   (default: both)
#
# Runs every Criterion binary in $BUILD/tests/ and every script in
# tests/integration/*.sh, and ends with one line "N passed, N failed".
# Environment: BUILD (build dir, default build), VALGRIND=1 (run the unit
# tests and syncd under valgrind memcheck).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
export SYNCD="$BUILD/syncd"
# Under AddressSanitizer: leaks inside Criterion's own runner are not ours
# (tests/lsan.supp); scripts may add their own file later.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=(unit integration)

passed=0
failed=0
failures=()

# Under valgrind: Criterion re-runs the test binary for every test, so
# children are traced (but not the programs the tests start, nor system
# tools), and since Criterion ignores its workers' exit codes, every
# process's log is scanned for errors instead.
valgrind_opts=(--leak-check=full --show-leak-kinds=definite,indirect
	--errors-for-leak-kinds=definite,indirect --error-exitcode=99)
if [ "${VALGRIND:-0}" = 1 ]; then
	# syncd under memcheck in the integration scripts too; quiet, so
	# that only an error reaches the stderr the scripts compare.
	export SYNCD_WRAP="valgrind -q ${valgrind_opts[*]}"
fi

unit_under_valgrind() {
	local bin=$1 logs rc bad checked
	logs=$(mktemp -d "${TMPDIR:-/tmp}/syncd-vg.XXXXXX")
	valgrind "${valgrind_opts[@]}" --trace-children=yes \
		--trace-children-skip='/usr/*,/bin/*,/sbin/*,/tmp/syncd-proc-*,./*' \
		--log-file="$logs/vg.%p.log" "$bin" -j1
	rc=$?
	bad=$(grep -l 'ERROR SUMMARY: [1-9]' "$logs"/vg.*.log 2>/dev/null)
	checked=$(grep -l 'ERROR SUMMARY:' "$logs"/vg.*.log 2>/dev/null | wc -l)
	if [ -n "$bad" ]; then
		cat $bad
		rc=1
	fi
	if [ "$checked" -le 1 ]; then
		echo "valgrind checked no test process (is the build under /usr or /tmp?)"
		rc=1
	fi
	rm -rf "$logs"
	return $rc
}

run_unit() {
	local bin out rc line
	for bin in "$BUILD"/tests/unit-*; do
		[ -x "$bin" ] || continue
		echo "== $(basename "$bin")"
		if [ "${VALGRIND:-0}" = 1 ]; then
			out=$(unit_under_valgrind "$bin" 2>&1)
		else
			out=$("$bin" 2>&1)
		fi
		rc=$?
		line=$(printf '%s\n' "$out" | grep 'Synthesis:' | tail -n 1)
		printf '%s\n' "$out" | grep -v -e 'Synthesis' | sed 's/^/   /' | grep -v '^ *$' | tail -n 40
		echo "   $line"
		local tested passing
		tested=$(printf '%s' "$line" | sed -n 's/.*Tested: \([0-9]*\).*/\1/p')
		passing=$(printf '%s' "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
		tested=${tested:-0}
		passing=${passing:-0}
		passed=$((passed + passing))
		if [ "$rc" -ne 0 ] || [ "$tested" -ne "$passing" ] || [ -z "$line" ]; then
			failed=$((failed + (tested > passing ? tested - passing : 1)))
			failures+=("$(basename "$bin") (exit $rc)")
		fi
	done
}

run_integration() {
	local script out rc ok notok
	for script in tests/integration/*.sh; do
		[ "$(basename "$script")" = lib.sh ] && continue
		echo "== $script"
		out=$(timeout 600 bash "$script" 2>&1)
		rc=$?
		printf '%s\n' "$out" | sed 's/^/   /'
		ok=$(printf '%s\n' "$out" | grep -c '^ok ')
		notok=$(printf '%s\n' "$out" | grep -c '^not ok ')
		passed=$((passed + ok))
		failed=$((failed + notok))
		if [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
			failed=$((failed + 1))
		fi
		if [ "$rc" -ne 0 ] || [ "$notok" -ne 0 ]; then
			failures+=("$script (exit $rc)")
		fi
	done
}

for phase in "${phases[@]}"; do
	case $phase in
	unit) run_unit ;;
	integration) run_integration ;;
	*) echo "unknown phase: $phase" >&2; exit 2 ;;
	esac
done

echo
for f in "${failures[@]+"${failures[@]}"}"; do
	echo "FAILED: $f"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
