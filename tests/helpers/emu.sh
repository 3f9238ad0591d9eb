# Shell helpers for integration scripts that run syncd against kube-emu.
# Source it after lib.sh:
#
#   emu_start_tls          start $EMU with --tls --token T (30 s at most:
#                          openssl runs first); sets $url and $emu_pid,
#                          writes $tmp/kc (kubeconfig) and $tmp/ca.pem;
#                          reports "kube-emu --tls --token starts"; on
#                          failure prints its stderr and finishes the script
#   api METHOD PATH [CONTENT-TYPE BODY]
#                          the API with the CA and token; sets $code, $body
#   count VERB RESOURCE [CODE]
#                          requests in /emu/stats (RESOURCE "*" for any)
#   reset_stats            DELETE /emu/stats
#   need_tools WHAT TOOL...
#                          finish with "ok - TOOL not installed: WHAT
#                          skipped" when a tool is missing, "not ok" when
#                          $EMU or $SYNCD is not built
#   wait_for SECONDS COMMAND...
#                          until COMMAND succeeds, polling every 0.1 s
#   term_wait PID [SECONDS]
#                          SIGTERM, then wait for the exit (30 s by
#                          default); $rc gets its status, 124 on timeout
#
# Every process started goes into $pids and is killed on exit, with $tmp.

EMU=${BUILD:-build}/kube-emu
pids=()
emu_cleanup() {
	local p
	for p in "${pids[@]+"${pids[@]}"}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	tmp_remove
}
trap emu_cleanup EXIT

emu_start_tls() {
	local i
	: >"$tmp/emu.out"
	"$EMU" --listen 127.0.0.1:0 --tls --token T --kubeconfig-out "$tmp/kc" \
		>"$tmp/emu.out" 2>"$tmp/emu.err" &
	emu_pid=$!
	pids+=("$emu_pid")
	url=
	for i in $(seq 300); do
		url=$(sed -n 's/^listening on //p' "$tmp/emu.out")
		if [ -n "$url" ] && [ -s "$tmp/kc" ] &&
			curl -fsSk --max-time 2 "$url/readyz" >/dev/null 2>&1; then
			break
		fi
		url=
		sleep 0.1
	done
	if [ -z "$url" ]; then
		not_ok "kube-emu --tls --token starts"
		head -c 2000 "$tmp/emu.err"
		finish
	fi
	ok "kube-emu --tls --token starts"
	sed -n 's/^ *certificate-authority-data: //p' "$tmp/kc" |
		base64 -d >"$tmp/ca.pem"
}

api() {
	local args=(-sS --max-time 10 --cacert "$tmp/ca.pem" -o "$tmp/.body"
		-w '%{http_code}' -X "$1" -H "Authorization: Bearer T")
	[ $# -ge 4 ] && args+=(-H "Content-Type: $3" --data-binary "$4")
	code=$(curl "${args[@]}" "$url$2")
	body=$(cat "$tmp/.body")
}

count() {
	api GET /emu/stats
	printf '%s' "$body" | jq --arg v "$1" --arg r "$2" --arg c "${3:-}" \
		'[.requests[] | select(.verb == $v and
			($r == "*" or .resource == $r) and
			($c == "" or (.code | tostring) == $c)) | .count] | add // 0'
}

reset_stats() { api DELETE /emu/stats; }

need_tools() {
	local what=$1 tool
	shift
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			ok "$tool not installed: $what skipped"
			finish
		fi
	done
	if [ ! -x "$EMU" ] || [ ! -x "$SYNCD" ]; then
		not_ok "$EMU or $SYNCD not built"
		finish
	fi
}

wait_for() {
	local n=$(($1 * 10))
	shift
	for _ in $(seq "$n"); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

term_wait() {
	local n=$((${2:-30} * 10))
	rc=124
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq "$n"); do
		if ! kill -0 "$1" 2>/dev/null; then
			wait "$1"
			rc=$?
			return 0
		fi
		sleep 0.1
	done
	return 1
}
