#!/usr/bin/env bash
# kube-emu's fault injection and counters over HTTP with curl: faults
# from --faults and from POST /emu/faults, 503 with Retry-After a given
# number of times then success, a dropped connection, 410 Expired on a
# list with a resourceVersion, 422 for a named object, and /emu/stats
# after a known sequence of requests. Loopback only; every wait is
# bounded; the emulator is killed on exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

EMU=${BUILD:-build}/kube-emu
pids=()
cleanup() {
	local p
	for p in "${pids[@]+"${pids[@]}"}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	tmp_remove
}
trap cleanup EXIT

# start_emu NAME ARGS...: start kube-emu, wait (5 s at most) until it
# answers /readyz; sets $url and $pid. Returns 1 when it did not come up.
start_emu() {
	local name=$1 i
	shift
	"$EMU" --listen 127.0.0.1:0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	pid=$!
	pids+=("$pid")
	url=
	for i in $(seq 50); do
		url=$(sed -n 's/^listening on //p' "$tmp/$name.out")
		if [ -n "$url" ] &&
			curl -fsS --max-time 2 "$url/readyz" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

if ! command -v curl >/dev/null 2>&1; then
	ok "curl not installed: kube-emu fault checks skipped"
	finish
fi
if [ ! -x "$EMU" ]; then
	not_ok "$EMU not built"
	finish
fi

CMS=api/v1/namespaces/default/configmaps
AUTH="Authorization: Bearer T"

# req METHOD PATH [BODY [CONTENT-TYPE]]: sets $code (HTTP status, 000 on
# a transfer error), $body, $hdrs and $crc (curl's exit code).
req() {
	local args=(-sS --max-time 5 -X "$1" -H "$AUTH" -D "$tmp/hdrs"
		-o "$tmp/body" -w '%{http_code}')
	[ $# -ge 3 ] && args+=(-H "Content-Type: ${4:-application/json}"
		--data-binary "$3")
	: >"$tmp/hdrs"
	: >"$tmp/body"
	code=$(curl "${args[@]}" "$url/$2" 2>"$tmp/curl.err")
	crc=$?
	body=$(cat "$tmp/body")
	hdrs=$(tr -d '\r' <"$tmp/hdrs")
}

cm() {
	printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"}}' "$1"
}

if ! start_emu f --token T \
	--faults 'verb=list,resource=configmaps,code=503,count=2,retryAfter=3'; then
	not_ok "kube-emu --faults starts and answers /readyz"
	cat "$tmp/f.err"
	finish
fi
ok "kube-emu --faults starts"

# 503 with Retry-After twice, then the list
req GET "$CMS"
expect_eq "$code" 503 "1st list: 503"
expect_match '^Retry-After: 3$' "$hdrs" "1st list: Retry-After: 3"
expect_eq "$(jq -r .reason <<<"$body")" ServiceUnavailable \
	"503 Status reason ServiceUnavailable"
req GET "$CMS"
expect_eq "$code" 503 "2nd list: 503"
req GET "$CMS"
expect_eq "$code" 200 "3rd list: 200"
expect_eq "$(jq -r .kind <<<"$body")" ConfigMapList "3rd list: a ConfigMapList"
if printf '%s' "$hdrs" | grep -q '^Retry-After'; then
	not_ok "success carries no Retry-After"
else
	ok "success carries no Retry-After"
fi

# faults through the control endpoint
req GET emu/faults
expect_eq "$(jq -r '.faults[0].remaining' <<<"$body")" 0 \
	"GET /emu/faults: the 503 fault is spent"
req POST emu/faults 'verb=create,code=422,name=bad-*' text/plain
expect_eq "$code" 201 "POST /emu/faults (spec text)"
req POST emu/faults '{"verb":"get","name":"cut","drop":true}'
expect_eq "$code" 201 "POST /emu/faults (JSON)"
req POST emu/faults '{"verb":"list","expire":true}'
expect_eq "$code" 201 "POST /emu/faults (expire)"
req POST emu/faults 'verb=list,cod=1' text/plain
expect_eq "$code" 400 "POST /emu/faults: a bad spec is a 400"
expect_match 'unknown fault key' "$(jq -r .message <<<"$body")" \
	"the 400 says what is wrong"
req GET emu/faults
expect_eq "$(jq '.faults | length' <<<"$body")" 4 "four faults configured"
code=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$url/emu/faults")
expect_eq "$code" 401 "/emu/faults needs the token"

# 422 for a named object; others are created
req POST "$CMS" "$(cm bad-one)"
expect_eq "$code" 422 "create bad-one: 422"
expect_eq "$(jq -r .reason <<<"$body")" Invalid "422 reason Invalid"
expect_eq "$(jq -r .message <<<"$body")" \
	'ConfigMap "bad-one" is invalid: metadata.name: Invalid value: "bad-one": injected fault' \
	"422 message as kube words it"
req POST "$CMS" "$(cm good)"
expect_eq "$code" 201 "create good: 201"
req POST "$CMS" "$(cm cut)"
expect_eq "$code" 201 "create cut: 201"

# the connection is cut mid-body
req GET "$CMS/cut"
if [ "$crc" -ne 0 ]; then
	ok "GET cut: curl reports a transfer error (exit $crc)"
else
	not_ok "GET cut: curl reports a transfer error (code $code)"
fi
req GET "$CMS/good"
expect_eq "$code" 200 "GET good: 200"

# 410 Expired on a list that resumes
req GET "$CMS?resourceVersion=1"
expect_eq "$code" 410 "list with resourceVersion: 410"
expect_eq "$(jq -r .reason <<<"$body")" Expired "410 reason Expired"
req GET "$CMS?limit=1&continue=abc"
expect_eq "$code" 410 "list with continue: 410"
expect_match '^The provided continue parameter is too old' \
	"$(jq -r .message <<<"$body")" "410 continue message"
req GET "$CMS"
expect_eq "$code" 200 "list without resourceVersion: 200"

# counters after a known sequence
req DELETE emu/faults
expect_eq "$(jq '.faults | length' <<<"$body")" 0 "DELETE /emu/faults clears"
req DELETE emu/stats
expect_eq "$(jq .total <<<"$body")" 0 "DELETE /emu/stats resets"
req GET "$CMS"
req GET "$CMS"
req GET "$CMS/good"
req GET "$CMS/nope"
req POST "$CMS" "$(cm third)"
req DELETE "$CMS/third"
req GET api/v1
req GET emu/stats
stat() {
	jq --arg v "$1" --arg r "$2" --argjson c "$3" \
		'[.requests[] | select(.verb == $v and (.resource // "") == $r and .code == $c) | .count] | add // 0' \
		<<<"$body"
}
expect_eq "$(stat list configmaps 200)" 2 "stats: 2 lists of configmaps, 200"
expect_eq "$(stat get configmaps 200)" 1 "stats: 1 get of configmaps, 200"
expect_eq "$(stat get configmaps 404)" 1 "stats: 1 get of configmaps, 404"
expect_eq "$(stat create configmaps 201)" 1 "stats: 1 create, 201"
expect_eq "$(stat delete configmaps 200)" 1 "stats: 1 delete, 200"
expect_eq "$(stat get '' 200)" 1 "stats: 1 discovery request"
expect_eq "$(jq .total <<<"$body")" 7 "stats: total 7 (not /emu, not /readyz)"

# a watch ended early by watchEndAfter
req POST emu/faults 'verb=watch,watchEndAfter=300ms' text/plain
out=$(curl -sS --max-time 10 -H "$AUTH" "$url/$CMS?watch=1" 2>&1)
wrc=$?
# curl's own limit would be exit 28: 0 means the server ended it
expect_eq "$wrc" 0 "a watch with watchEndAfter ends cleanly"
expect_match '"type":"ADDED"' "$out" "the watch sent its events first"

kill -TERM "$pid"
for i in $(seq 50); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
wait "$pid" 2>/dev/null
expect_eq "$?" 0 "kube-emu exits 0 on SIGTERM"
pids=()
finish
