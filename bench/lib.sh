# Shell helpers shared by the benchmarks. Source after setting $out (the
# folder for each command's output) and defining stats NAME (save
# /emu/stats as $out/stats-NAME.json).
#
#   now                    seconds since the epoch, with nanoseconds
#   elapsed T0 T1          T1 - T0 in seconds, three decimals
#   timed NAME EXPECTED-EXITS -- CMD...
#                          run CMD with /emu/stats reset, its stdout and
#                          stderr in $out/NAME.{out,err}; sets $wall,
#                          $rss (peak KiB) and $reqs (API requests);
#                          exits the benchmark when CMD's exit status is
#                          not one of EXPECTED-EXITS (space-separated)

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

timed() {
	local name=$1 ok=" $2 " t0 t1 rc=0
	shift 3
	reset_stats
	t0=$(now)
	/usr/bin/time -f %M -o "$out/$name.rss" "$@" \
		>"$out/$name.out" 2>"$out/$name.err" || rc=$?
	t1=$(now)
	stats "$name"
	wall=$(elapsed "$t0" "$t1")
	rss=$(tail -n 1 "$out/$name.rss")
	reqs=$(jq .total "$out/stats-$name.json")
	if [[ $ok != *" $rc "* ]]; then
		echo "$name: exit $rc (expected$ok)" >&2
		head -c 3000 "$out/$name.err" >&2
		exit 1
	fi
}
