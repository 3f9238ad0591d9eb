#!/usr/bin/env bash
# The test driver behind `make test`, `make check` and `make valgrind`.
#
#   tests/run.sh [unit|integration|fuzz|real]...   (default: all four)
#
# Runs every Criterion binary in $BUILD/tests/, every script in
# tests/integration/*.sh, every libFuzzer target of tests/fuzz/ (built in
# build-fuzz/fuzz/ by `make fuzz-build`) for FUZZ_TEST_SECONDS (default 15)
# each, and the real tier: the scripts in tests/real/*.sh
# against one real control plane (tests/helpers/k8s.sh) started for them
# all, and ends with one line "N passed, N failed". Without the binaries of
# `make k8s` (no Go on the machine) the real tier is skipped with one line,
# and without clang the fuzz phase.
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
# The secrets canary (tests/helpers/canary.sh): one registry of the
# secrets every script plants; each script searches what it produced, and
# the driver adds the real API server's audit log (Events, App status).
export SYNCD_CANARY_DIR="$PWD/$BUILD/tests/canary"
rm -rf "$SYNCD_CANARY_DIR"
. tests/helpers/canary.sh
phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=(unit integration fuzz real)

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

# tally NAME RC OUTPUT: shows OUTPUT and counts its "ok" and "not ok"
# lines; a non-zero exit without a "not ok" is one failure more.
tally() {
	local name=$1 rc=$2 out=$3 ok notok
	printf '%s\n' "$out" | sed 's/^/   /'
	ok=$(printf '%s\n' "$out" | grep -c '^ok ')
	notok=$(printf '%s\n' "$out" | grep -c '^not ok ')
	passed=$((passed + ok))
	failed=$((failed + notok))
	if [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
		failed=$((failed + 1))
	fi
	if [ "$rc" -ne 0 ] || [ "$notok" -ne 0 ]; then
		failures+=("$name (exit $rc)")
	fi
}

# run_scripts DIR: every DIR/*.sh but lib.sh, bounded to 10 minutes each.
run_scripts() {
	local script out
	for script in "$1"/*.sh; do
		[ -e "$script" ] || continue
		[ "$(basename "$script")" = lib.sh ] && continue
		echo "== $script"
		out=$(timeout 600 bash "$script" 2>&1)
		tally "$script" $? "$out"
	done
}

# The fuzz phase: each target of tests/fuzz/ one test, "ok - fuzz_x: N
# runs, corpus M, crashes: 0" (tests/fuzz/run.sh), a crash or a target
# that is not built one failure. The seed is fixed (FUZZ_SEED, default 1):
# a suite run is repeatable, and a new find comes from `make fuzz`, which
# explores, not from a run of the tests that happened to draw it.
run_fuzz() {
	local t targets=() out
	if ! command -v clang >/dev/null 2>&1; then
		echo "fuzz phase skipped: clang is not installed (make deps)"
		return
	fi
	for t in tests/fuzz/fuzz_*.c; do
		targets+=("$(basename "$t" .c)")
	done
	echo "== tests/fuzz (${FUZZ_TEST_SECONDS:-15} s per target)"
	out=$(FUZZ_SEED=${FUZZ_SEED:-1} tests/fuzz/run.sh \
		"${FUZZ_TEST_SECONDS:-15}" "${targets[@]}" 2>&1)
	tally tests/fuzz $? "$out"
}

# The real tier: one cluster for every script (each works in namespaces
# of its own), stopped when the scripts are done or the driver is stopped.
run_real() {
	local t0 errs
	. tests/helpers/k8s.sh
	if ! k8s_available; then
		if command -v go >/dev/null 2>&1; then
			echo "FAILED: the real tier: Go is installed but the control plane is not built in $K8S_BIN (make k8s)"
			failed=$((failed + 1))
			failures+=("real tier (not built)")
		else
			echo "real tier skipped: Go is not installed (install Go 1.26, then make k8s && make test)"
		fi
		return
	fi
	echo "== the real control plane (tests/helpers/k8s.sh)"
	trap 'k8s_stop; exit 130' INT TERM
	t0=$(date +%s)
	errs=$(mktemp "${TMPDIR:-/tmp}/syncd-k8s-start.XXXXXX")
	if ! k8s_start 2>"$errs"; then
		sed 's/^/   /' "$errs"
		rm -f "$errs"
		echo "   not ok - the real control plane starts"
		failed=$((failed + 1))
		failures+=("real tier (control plane did not start)")
		return
	fi
	rm -f "$errs"
	echo "   ok - Kubernetes $K8S_VERSION up in $((K8S_START_MS / 1000)).$(((K8S_START_MS % 1000) / 100)) s"
	passed=$((passed + 1))
	export K8S_ENV=$K8S_DIR/env
	k8s_env "$K8S_ENV"
	run_scripts tests/real
	echo "== the real control plane's peak RSS: $(k8s_peak_rss)"
	canary_scan "the API server's audit log (Events, App objects)" \
		"$K8S_AUDIT" | sed 's/^/   /'
	k8s_stop
	trap - INT TERM
	echo "== the real tier took $(($(date +%s) - t0)) s"
}

for phase in "${phases[@]}"; do
	case $phase in
	unit) run_unit ;;
	integration) run_scripts tests/integration ;;
	fuzz) run_fuzz ;;
	real) run_real ;;
	*) echo "unknown phase: $phase" >&2; exit 2 ;;
	esac
done

# canary_summary: one check over every search the scripts made.
canary_summary() {
	local d=$SYNCD_CANARY_DIR planted files hits
	planted=$(wc -l <"$d/planted" 2>/dev/null || echo 0)
	files=$(awk '{ n += $1 } END { print n + 0 }' "$d/scanned" 2>/dev/null)
	hits=$(awk '{ n += $2 } END { print n + 0 }' "$d/scanned" 2>/dev/null)
	echo "== the secrets canary"
	if [ "${hits:-0}" -eq 0 ] && [ "${planted:-0}" -gt 0 ]; then
		echo "   ok - secrets canary: $planted secrets planted, ${files:-0} files and outputs searched, 0 hits"
		passed=$((passed + 1))
	elif [ "${planted:-0}" -gt 0 ]; then
		echo "   not ok - secrets canary: $hits searches found a planted secret (the lines \"not ok - secrets canary\" above say where)"
		failed=$((failed + 1))
		failures+=("secrets canary ($hits hits)")
	fi
}
case " ${phases[*]} " in
*" integration "* | *" real "*) canary_summary ;;
esac

echo
for f in "${failures[@]+"${failures[@]}"}"; do
	echo "FAILED: $f"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
