#!/usr/bin/env bash
# make fuzz: run each built libFuzzer target (build-fuzz/fuzz/NAME) for
# SECONDS from its seed corpus (tests/fuzz/corpus/NAME, copied: new inputs
# never go into the tree). A crash or sanitizer report fails, showing the
# start of the report; the whole log stays in build-fuzz/fuzz/NAME.log.
#
#   tests/fuzz/run.sh SECONDS NAME...
set -uo pipefail
seconds=$1
shift
for t in "$@"; do
	corpus=$(mktemp -d)
	cp -r "tests/fuzz/corpus/$t/." "$corpus/" 2>/dev/null
	echo "== $t: $seconds s from $(ls "$corpus" | wc -l) seeds"
	"build-fuzz/fuzz/$t" -max_total_time="$seconds" -timeout=10 \
		-max_len=65536 -print_final_stats=0 "$corpus" \
		>"build-fuzz/fuzz/$t.log" 2>&1
	rc=$?
	rm -rf "$corpus"
	tail -n 1 "build-fuzz/fuzz/$t.log"
	if [ "$rc" -ne 0 ]; then
		echo "fuzz: $t failed (exit $rc); its log: build-fuzz/fuzz/$t.log"
		grep -m 20 -A 20 'ERROR\|SUMMARY' "build-fuzz/fuzz/$t.log"
		exit 1
	fi
done
