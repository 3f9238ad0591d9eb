#!/usr/bin/env bash
# Run each built libFuzzer target (build-fuzz/fuzz/NAME) for SECONDS from
# its seed corpus (tests/fuzz/corpus/NAME, copied: new inputs never go into
# the tree), with TMPDIR a scratch directory removed afterwards. Used by
# `make fuzz` (FUZZ_SECONDS) and the fuzz phase of tests/run.sh
# (FUZZ_TEST_SECONDS). FUZZ_SEED, when set, is libFuzzer's -seed: the
# fuzz phase of `make test` fixes it, so that the same tree mutates the
# same inputs in the same order and a run of the suite is repeatable;
# `make fuzz` leaves it unset and explores from a new seed each time.
#
#   tests/fuzz/run.sh SECONDS NAME...
#
# Per target: "== NAME: SECONDS s from N seeds", libFuzzer's last line,
# then "ok - NAME: N runs, corpus M, crashes: 0" (N from libFuzzer's
# final stats, M the corpus size at the end), or "not ok - NAME: ..." with
# the start of the report. A crashing input is kept as
# build-fuzz/fuzz/NAME-crash-<sha1> (or -timeout-, -leak-, -oom-), the
# whole log in build-fuzz/fuzz/NAME.log. Exits 1 when a target failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=$1
shift
out=build-fuzz/fuzz
status=0
for t in "$@"; do
	if [ ! -x "$out/$t" ]; then
		echo "not ok - $t: not built ($out/$t is missing; make fuzz-build)"
		status=1
		continue
	fi
	work=$(mktemp -d "${TMPDIR:-/tmp}/syncd-fuzz.XXXXXX")
	mkdir "$work/corpus" "$work/tmp"
	cp -r "tests/fuzz/corpus/$t/." "$work/corpus/" 2>/dev/null
	echo "== $t: $seconds s from $(ls "$work/corpus" | wc -l) seeds${FUZZ_SEED:+, seed $FUZZ_SEED}"
	TMPDIR=$work/tmp "$out/$t" -max_total_time="$seconds" -timeout=10 \
		-max_len=65536 -print_final_stats=1 ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
		-artifact_prefix="$out/$t-" "$work/corpus" >"$out/$t.log" 2>&1
	rc=$?
	corpus=$(ls "$work/corpus" | wc -l)
	rm -rf "$work"
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log" |
		tail -n 1)
	grep '^Done [0-9]* runs' "$out/$t.log" | tail -n 1
	if [ "$rc" -ne 0 ] || [ -z "$runs" ]; then
		echo "not ok - $t: failed (exit $rc) after ${runs:-?} runs; its log: $out/$t.log"
		grep -a -m 1 -A 14 'ERROR\|runtime error\|^fuzz: ' "$out/$t.log"
		grep -a 'SUMMARY\|Test unit written' "$out/$t.log"
		status=1
	else
		echo "ok - $t: $runs runs, corpus $corpus, crashes: 0"
	fi
done
exit $status
