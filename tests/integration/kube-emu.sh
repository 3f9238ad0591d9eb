#!/usr/bin/env bash
# kube-emu, the API server emulator, as a process: health, token check,
# discovery, CRUD and error Status bodies over HTTP with curl; HTTPS
# (--tls), the data file (--data) and bad command lines; then the real
# kubectl against it (plain and over TLS with a token) when kubectl is
# installed. Loopback only; every wait is bounded; the emulators are
# killed on exit.
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

# start_emu NAME ARGS...: start kube-emu, wait (5 s at most; 30 s with
# --tls, which runs openssl first) until it answers /readyz; sets $url
# and $pid. Returns 1 when it did not come up. The readiness probe does
# not verify certificates: the TLS checks below do.
start_emu() {
	local name=$1 i n=50
	shift
	case " $* " in *" --tls "*) n=300 ;; esac
	# Created here, so that the loop never reads before the shell has.
	: >"$tmp/$name.out"
	"$EMU" --listen 127.0.0.1:0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	pid=$!
	pids+=("$pid")
	url=
	for i in $(seq "$n"); do
		url=$(sed -n 's/^listening on //p' "$tmp/$name.out")
		if [ -n "$url" ] &&
			curl -fsSk --max-time 2 "$url/readyz" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# stop_emu PID NAME CHECK: SIGTERM, wait (5 s at most), expect exit 0
# (under ASan a leak makes it non-zero; its report is then shown).
stop_emu() {
	local i rc
	kill -TERM "$1"
	for i in $(seq 50); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	wait "$1" 2>/dev/null
	rc=$?
	# Reaped: forget it, so that cleanup never signals a reused pid.
	local keep=() p
	for p in "${pids[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	pids=("${keep[@]+"${keep[@]}"}")
	expect_eq "$rc" 0 "$3"
	[ "$rc" -eq 0 ] || head -c 3000 "$tmp/$2.err"
}

if ! command -v curl >/dev/null 2>&1; then
	ok "curl not installed: kube-emu HTTP checks skipped"
	finish
fi
if [ ! -x "$EMU" ]; then
	not_ok "$EMU not built"
	finish
fi

if ! start_emu tok --token T --kubeconfig-out "$tmp/kc"; then
	not_ok "kube-emu --token starts and answers /readyz"
	cat "$tmp/tok.err"
	finish
fi
ok "kube-emu --token starts and answers /readyz"
tok_pid=$pid

# req METHOD PATH [CONTENT-TYPE BODY]: sets $code and $body.
req() {
	local args=(-sS --max-time 10 -o "$tmp/.body" -w '%{http_code}'
		-X "$1" -H "Authorization: Bearer T")
	[ $# -ge 4 ] && args+=(-H "Content-Type: $3" --data-binary "$4")
	code=$(curl "${args[@]}" "$url$2")
	body=$(cat "$tmp/.body")
}

expect_match "server: $url" "$(cat "$tmp/kc")" "kubeconfig names the server"
expect_match "token: T" "$(cat "$tmp/kc")" "kubeconfig carries the token"

code=$(curl -sS --max-time 10 -o "$tmp/.body" -w '%{http_code}' "$url/api")
expect_eq "$code $(cat "$tmp/.body")" \
	'401 {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}' \
	"no token: 401 Unauthorized Status"
code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' \
	-H "Authorization: Bearer wrong" "$url/api")
expect_eq "$code" 401 "wrong token: 401"

req GET /version
expect_match '"gitVersion":"v1\.36\.3"' "$code $body" "/version"
req GET /apis
expect_match '"name":"apps","versions":\[\{"groupVersion":"apps/v1"' "$body" \
	"/apis lists apps/v1"
req GET /apis/apps/v1
expect_match '"name":"deployments/scale","singularName":"","namespaced":true,"kind":"Scale"' \
	"$body" "/apis/apps/v1 has deployments/scale"
req GET /api/v1
expect_match '"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap"' \
	"$body" "/api/v1 has configmaps"
req GET /openapi/v3
expect_match '"apis/apps/v1":\{"serverRelativeURL":"/openapi/v3/apis/apps/v1' \
	"$body" "/openapi/v3 index"

cmp=/api/v1/namespaces/default/configmaps
req POST $cmp application/json \
	'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","labels":{"app":"web"}},"data":{"a":"1"}}'
expect_eq "$code" 201 "create: 201"
rv=$(printf '%s' "$body" | sed -n 's/.*"resourceVersion":"\([0-9]*\)".*/\1/p')
req POST $cmp application/yaml $'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n'
expect_eq "$code $(printf '%s' "$body" | grep -o '"message":"[^"]*\\"web\\"[^"]*"')" \
	'409 "message":"configmaps \"web\" already exists"' "create again: 409 AlreadyExists"
req GET "$cmp?labelSelector=app%20in%20(web,db)"
expect_match '^\{"kind":"ConfigMapList","apiVersion":"v1","metadata":\{"resourceVersion":"[0-9]+"\},"items":\[\{"metadata":\{"name":"web"' \
	"$body" "list with labelSelector"
req GET "/api/v1/configmaps?labelSelector=app!%3Dweb"
expect_match '"items":\[\]' "$body" "list across namespaces, selector excludes"
req PUT $cmp/web application/json \
	"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"web\",\"resourceVersion\":\"$rv\"},\"data\":{\"a\":\"2\"}}"
expect_eq "$code" 200 "update with current resourceVersion: 200"
req PUT $cmp/web application/json \
	"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"web\",\"resourceVersion\":\"$rv\"},\"data\":{\"a\":\"3\"}}"
expect_match '^409 .*"reason":"Conflict"' "$code $body" "stale resourceVersion: 409 Conflict"
req PATCH $cmp/web application/merge-patch+json '{"data":{"b":"x"}}'
expect_match '^200 .*"data":\{"a":"2","b":"x"\}' "$code $body" "merge patch"
req POST $cmp application/json '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}'
expect_match '^422 .*"reason":"Invalid".*"field":"metadata.name"' "$code $body" \
	"invalid name: 422 Invalid"
req POST $cmp application/json '{"apiVersion":"v1","kind":'
expect_match '^400 .*"reason":"BadRequest"' "$code $body" "malformed body: 400"
req POST $cmp text/plain 'x'
expect_match '^415 .*"reason":"UnsupportedMediaType"' "$code $body" \
	"unsupported media type: 415"
head -c 3200000 /dev/zero | tr '\0' 'a' >"$tmp/big"
code=$(curl -sS --max-time 10 -o "$tmp/.body" -w '%{http_code}' -X POST \
	-H "Authorization: Bearer T" -H "Content-Type: application/json" \
	--data-binary @"$tmp/big" "$url$cmp")
expect_match '^413 .*"message":"Request entity too large: limit is 3145728"' \
	"$code $(cat "$tmp/.body")" "body over 3 MiB: 413"
req GET /api/v1/widgets
expect_match '^404 .*"message":"the server could not find the requested resource"' \
	"$code $body" "unknown resource: 404"
req DELETE "$cmp/web?dryRun=All"
req GET $cmp/web
expect_eq "$code" 200 "dry-run delete keeps the object"
req DELETE $cmp/web
expect_match '^200 .*"status":"Success"' "$code $body" "delete: 200 Success"
req GET $cmp/web
expect_match '^404 .*"message":"configmaps \\"web\\" not found"' "$code $body" \
	"get after delete: 404 NotFound"

# Concurrent writers: 20 creates in parallel, each answered, all stored.
cpids=()
for i in $(seq 20); do
	curl -sS --max-time 10 -o /dev/null -w '%{http_code}\n' -X POST \
		-H "Authorization: Bearer T" -H "Content-Type: application/json" \
		--data-binary "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"p$i\",\"labels\":{\"batch\":\"p\"}}}" \
		"$url$cmp" >"$tmp/par.$i" &
	cpids+=($!)
done
wait "${cpids[@]}"
expect_eq "$(cat "$tmp"/par.* | sort | uniq -c | tr -s ' ')" " 20 201" \
	"20 parallel creates: all 201"
# Concurrent merge patches of one object: none lost, none a Conflict.
cpids=()
for i in $(seq 20); do
	curl -sS --max-time 10 -o /dev/null -w '%{http_code}\n' -X PATCH \
		-H "Authorization: Bearer T" \
		-H "Content-Type: application/merge-patch+json" \
		--data-binary "{\"data\":{\"k$i\":\"v\"}}" \
		"$url$cmp/p1" >"$tmp/pat.$i" &
	cpids+=($!)
done
wait "${cpids[@]}"
expect_eq "$(cat "$tmp"/pat.* | sort | uniq -c | tr -s ' ')" " 20 200" \
	"20 parallel patches: all 200"
req GET "$cmp/p1"
expect_eq "$(printf '%s' "$body" | grep -o '"k[0-9]*":"v"' | wc -l)" 20 \
	"20 parallel patches: every key kept"
req GET "$cmp?labelSelector=batch%3Dp&limit=15"
n=$(printf '%s' "$body" | grep -o '"name":"p[0-9]*"' | wc -l)
# The token is etcd3's (base64url JSON): passed on as it came.
cont=$(printf '%s' "$body" | sed -n 's/.*"continue":"\([A-Za-z0-9_=-]*\)".*/\1/p')
req GET "$cmp?labelSelector=batch%3Dp&limit=15&continue=$cont"
n2=$(printf '%s' "$body" | grep -o '"name":"p[0-9]*"' | wc -l)
expect_eq "$n $n2" "15 5" "limit/continue pages: 15 then 5"

# Watch: a stream of one JSON event per line while another client
# writes. Every curl has --max-time; timeoutSeconds ends the streams.
# types FILE: the "TYPE name" of each event line, one per line.
types() {
	sed -n 's/^{"type":"\([A-Z]*\)","object":{.*"metadata":{"name":"\([^"]*\)".*/\1 \2/p' "$1"
}
wcurl() {
	curl -sN --max-time 5 -H "Authorization: Bearer T" "$@"
}
wcurl "$url$cmp?watch=1&timeoutSeconds=2&labelSelector=w%3D1" >"$tmp/w1" &
wpid=$!
# The watch is open once its initial (empty) ADDED phase is queued; give
# curl a moment to connect, bounded.
sleep 0.5
req POST $cmp application/json \
	'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w","labels":{"w":"1"}}}'
req PATCH $cmp/w application/merge-patch+json '{"data":{"a":"1"}}'
req DELETE $cmp/w
wait "$wpid"
expect_eq "$? $(types "$tmp/w1" | tr '\n' ';')" "0 ADDED w;MODIFIED w;DELETED w;" \
	"watch: ADDED, MODIFIED, DELETED in order, ended by timeoutSeconds"
expect_match '^\{"type":"ADDED","object":\{"kind":"ConfigMap","apiVersion":"v1",' \
	"$(head -n 1 "$tmp/w1")" "watch events carry kind and apiVersion"
wrv=$(sed -n '1s/.*"resourceVersion":"\([0-9]*\)".*/\1/p' "$tmp/w1")
wcurl "$url$cmp?watch=true&resourceVersion=$wrv&timeoutSeconds=1&fieldSelector=metadata.name%3Dw" \
	>"$tmp/w2"
expect_eq "$(types "$tmp/w2" | tr '\n' ';')" "MODIFIED w;DELETED w;" \
	"watch from a resourceVersion replays the history after it"
wcurl "$url/api/v1/configmaps?watch=1&timeoutSeconds=1&labelSelector=batch%3Dp" \
	>"$tmp/w3"
expect_eq "$(grep -c '^{"type":"ADDED"' "$tmp/w3")" 20 \
	"watch across namespaces without resourceVersion: ADDED for all 20"
# Push the first writes out of the history (1000 events), then ask for rv 1.
# One curl, 1001 merge patches (a curl config with one block per request).
for i in $(seq 1001); do
	printf 'url = "%s%s/p2"\nrequest = "PATCH"\n' "$url" "$cmp"
	printf 'header = "Content-Type: application/merge-patch+json"\n'
	printf 'header = "Authorization: Bearer T"\n'
	printf 'data = "{\\"data\\":{\\"n\\":\\"%s\\"}}"\n' "$i"
	printf 'output = "/dev/null"\nnext\n'
done >"$tmp/patch.cfg"
curl -sS --max-time 60 -K "$tmp/patch.cfg" >/dev/null 2>&1
wcurl "$url$cmp?watch=1&resourceVersion=1" >"$tmp/w4"
expect_match '^\{"type":"ERROR","object":\{"kind":"Status","apiVersion":"v1","metadata":\{\},"status":"Failure","message":"too old resource version: 1 \([0-9]+\)","reason":"Expired","code":410\}\}$' \
	"$(cat "$tmp/w4")" "expired resourceVersion: one ERROR event (410 Expired), stream ends"
# Without a resourceVersion the initial events (none here) end with a
# bookmark; then one 2 s before the deadline, once the resource moved
# past the watch (another object's write).
wcurl "$url$cmp?watch=1&allowWatchBookmarks=true&timeoutSeconds=3&fieldSelector=metadata.name%3Dnone" \
	>"$tmp/w5" &
wpid=$!
sleep 0.5
req POST $cmp application/json \
	'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bm"}}'
wait "$wpid"
expect_match '^\{"type":"BOOKMARK","object":\{"kind":"ConfigMap","apiVersion":"v1","metadata":\{"resourceVersion":"[0-9]+","annotations":\{"k8s.io/initial-events-end":"true"\}\}\}\}$' \
	"$(head -n 1 "$tmp/w5")" "allowWatchBookmarks: the initial-events-end BOOKMARK first"
expect_match '^\{"type":"BOOKMARK","object":\{"kind":"ConfigMap","apiVersion":"v1","metadata":\{"resourceVersion":"[0-9]+"\}\}\}$' \
	"$(sed -n 2p "$tmp/w5")" "allowWatchBookmarks: a BOOKMARK before the deadline"
expect_eq "$(wc -l <"$tmp/w5")" 2 "allowWatchBookmarks: nothing else on a quiet selection"
expect_eq "$(grep -vc BOOKMARK "$tmp/w5")" 0 "bookmarks only, for a name that does not exist"
# A client that goes away, then SIGTERM with a watch still open: both
# end at once, the emulator exits 0 (ASan: nothing leaked).
wcurl --max-time 1 "$url$cmp?watch=1" >/dev/null
wcurl --max-time 20 "$url$cmp?watch=1" >/dev/null &
wpid=$!
sleep 0.3

stop_emu "$tok_pid" tok "SIGTERM with an open watch: clean exit 0"
for i in $(seq 50); do
	kill -0 "$wpid" 2>/dev/null || break
	sleep 0.1
done
expect_eq "$(kill -0 "$wpid" 2>/dev/null && echo open || echo ended)" ended \
	"SIGTERM ends open watches"
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null

# --tls: HTTPS with a throwaway CA, which the kubeconfig carries. The
# openssl files live in a private directory under TMPDIR, gone once the
# server is up.
mkdir -m 700 "$tmp/tlstmp"
if ! TMPDIR=$tmp/tlstmp start_emu tls --tls --token T \
	--kubeconfig-out "$tmp/kc-tls"; then
	not_ok "kube-emu --tls starts and answers /readyz"
	cat "$tmp/tls.err"
else
	ok "kube-emu --tls starts and answers /readyz"
	tls_pid=$pid
	expect_match '^https://127\.0\.0\.1:[0-9]+$' "$url" \
		"--tls: listening on https://HOST:PORT"
	expect_eq "$(ls -A "$tmp/tlstmp")" "" \
		"--tls: the certificate directory is removed"
	kc=$(cat "$tmp/kc-tls")
	expect_match "server: $url" "$kc" "TLS kubeconfig names the https server"
	expect_match 'token: T' "$kc" "TLS kubeconfig carries the token"
	sed -n 's/^ *certificate-authority-data: //p' "$tmp/kc-tls" |
		base64 -d >"$tmp/ca.pem" 2>/dev/null
	expect_match '^-----BEGIN CERTIFICATE-----' "$(cat "$tmp/ca.pem")" \
		"certificate-authority-data is the base64 of a PEM certificate"
	code=$(curl -sS --max-time 10 --cacert "$tmp/ca.pem" -o "$tmp/.body" \
		-w '%{http_code}' -H "Authorization: Bearer T" "$url/version")
	expect_match '^200 .*"gitVersion":"v1\.36\.3"' "$code $(cat "$tmp/.body")" \
		"curl --cacert (the kubeconfig's CA) verifies the server"
	code=$(curl -sS --max-time 10 --cacert "$tmp/ca.pem" -o /dev/null \
		-w '%{http_code}' -H "Authorization: Bearer T" \
		"${url/127.0.0.1/localhost}/version")
	expect_eq "$code" 200 "the certificate is valid for localhost too"
	curl -sS --max-time 10 -o /dev/null -H "Authorization: Bearer T" \
		"$url/version" 2>"$tmp/.err"
	rc=$?
	expect_eq "$rc" 60 "curl without the CA: certificate verification fails"
	code=$(curl -sS --max-time 10 --cacert "$tmp/ca.pem" -o "$tmp/.body" \
		-w '%{http_code}' "$url/api")
	expect_eq "$code $(cat "$tmp/.body")" \
		'401 {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}' \
		"TLS, no token: 401 Unauthorized Status"
	code=$(curl -sS --max-time 10 --cacert "$tmp/ca.pem" -o "$tmp/.body" \
		-w '%{http_code}' -H "Authorization: Bearer wrong" "$url/api")
	expect_match '^401 .*"reason":"Unauthorized"' "$code $(cat "$tmp/.body")" \
		"TLS, wrong token: 401 Unauthorized Status"
	code=$(curl -sS --max-time 10 --cacert "$tmp/ca.pem" -o /dev/null \
		-w '%{http_code}' -X POST -H "Authorization: Bearer T" \
		-H "Content-Type: application/json" \
		--data-binary '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t1"}}' \
		"$url$cmp")
	expect_eq "$code" 201 "TLS: create"
	curl -sN --max-time 5 --cacert "$tmp/ca.pem" -H "Authorization: Bearer T" \
		"$url$cmp?watch=1&timeoutSeconds=1" >"$tmp/wtls"
	expect_eq "$(types "$tmp/wtls" | tr '\n' ';')" "ADDED t1;" \
		"TLS: a watch streams its events and ends cleanly"
	stop_emu "$tls_pid" tls "TLS server: clean exit 0 on SIGTERM"
fi

# --data: the store outlives the process. Objects, uids and
# resourceVersions come back; a deletion stays deleted; the next write
# gets a higher resourceVersion.
data=$tmp/store.json
if ! start_emu data1 --data "$data"; then
	not_ok "kube-emu --data (no file yet) starts"
	cat "$tmp/data1.err"
else
	ok "kube-emu --data (no file yet) starts"
	d1_pid=$pid
	req POST /api/v1/namespaces application/json \
		'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"keep"}}'
	req POST /api/v1/namespaces/keep/configmaps application/json \
		'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d1","labels":{"a":"b"}},"data":{"k":"v"}}'
	req POST /api/v1/namespaces/keep/secrets application/json \
		'{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"},"stringData":{"p":"w"}}'
	req POST /api/v1/namespaces/keep/configmaps application/json \
		'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"gone"}}'
	req DELETE /api/v1/namespaces/keep/configmaps/gone
	req GET /api/v1/namespaces/keep/configmaps/d1
	d1_before=$(printf '%s' "$body" | grep -o '"uid":"[^"]*"\|"resourceVersion":"[0-9]*"' | tr '\n' ' ')
	req GET /api/v1/namespaces/keep/secrets/s1
	s1_before=$(printf '%s' "$body" | grep -o '"uid":"[^"]*"\|"resourceVersion":"[0-9]*"' | tr '\n' ' ')
	req GET /api/v1/namespaces/keep/configmaps
	list_rv=$(printf '%s' "$body" | sed -n 's/^{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"\([0-9]*\)".*/\1/p')
	# Written in the background while the server runs (bounded wait).
	for i in $(seq 50); do
		grep -q '"name":"s1"' "$data" 2>/dev/null && break
		sleep 0.1
	done
	expect_match '"name":"s1"' "$(cat "$data" 2>/dev/null)" \
		"--data: the file is written while the server runs"
	stop_emu "$d1_pid" data1 "--data: clean exit 0 on SIGTERM"
	expect_eq "$(ls "$tmp" | grep -c '^store\.json\.tmp')" 0 \
		"--data: no temporary file left behind"
	if ! start_emu data2 --data "$data"; then
		not_ok "kube-emu restarts from its data file"
		cat "$tmp/data2.err"
	else
		ok "kube-emu restarts from its data file"
		d2_pid=$pid
		req GET /api/v1/namespaces/keep/configmaps/d1
		expect_match '^200 .*"data":\{"k":"v"\}' "$code $body" \
			"restored ConfigMap keeps its data"
		expect_eq "$(printf '%s' "$body" | grep -o '"uid":"[^"]*"\|"resourceVersion":"[0-9]*"' | tr '\n' ' ')" \
			"$d1_before" "restored ConfigMap keeps its uid and resourceVersion"
		req GET /api/v1/namespaces/keep/secrets/s1
		expect_eq "$code $(printf '%s' "$body" | grep -o '"uid":"[^"]*"\|"resourceVersion":"[0-9]*"' | tr '\n' ' ')" \
			"200 $s1_before" "restored Secret keeps its uid and resourceVersion"
		req GET /api/v1/namespaces/keep/configmaps/gone
		expect_eq "$code" 404 "a deleted object stays deleted"
		req GET /api/v1/namespaces/keep
		expect_eq "$code" 200 "restored namespace"
		req POST /api/v1/namespaces/keep/configmaps application/json \
			'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d2"}}'
		new_rv=$(printf '%s' "$body" | sed -n 's/.*"resourceVersion":"\([0-9]*\)".*/\1/p')
		expect_eq "$code $([ "${new_rv:-0}" -gt "${list_rv:-0}" ] && echo higher)" \
			"201 higher" "a new write gets a higher resourceVersion than before the restart"
		# A SIGKILL loses at most the last ~100 ms: wait until the
		# background write has d2, then kill and restart.
		for i in $(seq 50); do
			grep -q '"name":"d2"' "$data" 2>/dev/null && break
			sleep 0.1
		done
		kill -KILL "$d2_pid"
		wait "$d2_pid" 2>/dev/null
		if start_emu data3 --data "$data"; then
			req GET /api/v1/namespaces/keep/configmaps/d2
			expect_eq "$code" 200 "after SIGKILL: the background write is loaded"
			stop_emu "$pid" data3 "--data after SIGKILL: clean exit 0"
		else
			not_ok "kube-emu restarts after SIGKILL"
			cat "$tmp/data3.err"
		fi
	fi
fi

# run_bad ARGS...: kube-emu with a command line or data file it must
# refuse (exit 2, bounded); sets $rc and $errout.
run_bad() {
	timeout 30 "$@" >/dev/null 2>"$tmp/.err"
	rc=$?
	errout=$(cat "$tmp/.err")
}
printf '{"resourceVersion":"7","objects":[' >"$tmp/corrupt.json"
cp "$tmp/corrupt.json" "$tmp/corrupt.orig"
run_bad "$EMU" --listen 127.0.0.1:0 --data "$tmp/corrupt.json"
expect_eq "$rc $(printf '%s\n' "$errout" | wc -l)" "2 1" \
	"corrupt data file: exit 2, one line"
expect_match "^kube-emu: --data $tmp/corrupt\.json:1:[0-9]+: " "$errout" \
	"corrupt data file: the message names the file and the place"
expect_eq "$(cmp -s "$tmp/corrupt.json" "$tmp/corrupt.orig" && echo same)" same \
	"a data file that did not load is left alone"
printf '{"resourceVersion":"7","objects":[{"resource":"v1/widgets","object":{"metadata":{"name":"x"}}}]}' \
	>"$tmp/unknown.json"
run_bad "$EMU" --listen 127.0.0.1:0 --data "$tmp/unknown.json"
expect_match "^2 kube-emu: --data $tmp/unknown\.json: .*widgets" "$rc $errout" \
	"data file with an unknown resource: exit 2, file and cause named"
run_bad "$EMU" --listen 127.0.0.1:0 --data "$tmp/nodir/store.json"
expect_eq "$rc $errout" \
	"2 kube-emu: --data $tmp/nodir/store.json: cannot write: No such file or directory" \
	"data file in a missing directory: exit 2 at start, one line"
run_bad "$EMU" --listen 127.0.0.1:0 --bogus
expect_eq "$rc $(printf '%s\n' "$errout" | grep -c '^usage: kube-emu --listen HOST:PORT')" \
	"2 1" "unknown flag: exit 2 with usage"
run_bad "$EMU" --token T
expect_match '^2 usage: kube-emu --listen HOST:PORT' "$rc $errout" \
	"no --listen: exit 2 with usage"
run_bad "$EMU" --listen localhost
expect_eq "$rc $errout" "2 kube-emu: --listen wants HOST:PORT" \
	"--listen without a port: exit 2"
for flag in faults webhook rollout; do
	run_bad "$EMU" --listen 127.0.0.1:0 "--$flag" '=?!'
	expect_match "^2 1 kube-emu: --$flag =\\?!: ." \
		"$rc $(printf '%s\n' "$errout" | wc -l) $errout" \
		"bad --$flag spec: exit 2, one line naming it"
done
run_bad env PATH=/nonexistent "$EMU" --listen 127.0.0.1:0 --tls
expect_eq "$rc $errout" "2 kube-emu: --tls: openssl: not found in PATH" \
	"--tls without openssl: exit 2, one line"

if ! command -v kubectl >/dev/null 2>&1; then
	ok "kubectl not installed: kubectl checks skipped"
	finish
fi

# kubectl never sends a bearer token over plain http (client-go sets the
# token only for TLS), so the kubectl checks use an emulator without one.
if ! start_emu open --kubeconfig-out "$tmp/kc2"; then
	not_ok "kube-emu without token starts"
	finish
fi
k() {
	timeout 30 kubectl --kubeconfig "$tmp/kc2" --cache-dir "$tmp/kcache" \
		"$@" >"$tmp/.out" 2>"$tmp/.err"
	rc=$?
	out=$(cat "$tmp/.out")
	errout=$(cat "$tmp/.err")
}
k get ns -o name
expect_eq "$rc $out" $'0 namespace/default\nnamespace/kube-public\nnamespace/kube-system' \
	"kubectl get ns"
k create configmap cm1 --from-literal=a=b
expect_eq "$rc $out" "0 configmap/cm1 created" "kubectl create configmap"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm2\ndata:\n  x: hello\n' >"$tmp/cm2.yaml"
k create -f "$tmp/cm2.yaml"
expect_eq "$rc $out" "0 configmap/cm2 created" "kubectl create -f (validated)"
k get cm cm2 -o json
expect_match '"x": "hello"' "$out" "kubectl get cm -o json"
expect_match '"uid": "[0-9a-f-]{36}"' "$out" "object has a uid"
k delete cm cm2
expect_eq "$rc $out" '0 configmap "cm2" deleted' "kubectl delete cm"
k get cm cm2
expect_eq "$rc $errout" '1 Error from server (NotFound): configmaps "cm2" not found' \
	"kubectl get deleted cm: NotFound"

# Server-side apply: create, an unchanged re-apply, a conflicting second
# manager (refused, then forced), managedFields as kubectl reads them.
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: one\n' >"$tmp/ssa.yaml"
k apply --server-side -f "$tmp/ssa.yaml"
expect_eq "$rc $out" "0 configmap/ssa serverside-applied" \
	"kubectl apply --server-side creates"
k get cm ssa -o jsonpath='{.metadata.resourceVersion}'
ssa_rv=$out
k apply --server-side -f "$tmp/ssa.yaml"
expect_eq "$rc $out" "0 configmap/ssa serverside-applied" \
	"kubectl apply --server-side again"
k get cm ssa -o jsonpath='{.metadata.resourceVersion}'
expect_eq "$out" "$ssa_rv" "unchanged re-apply keeps the resourceVersion"
sed 's/one/two/' "$tmp/ssa.yaml" >"$tmp/ssa2.yaml"
k apply --server-side --field-manager other -f "$tmp/ssa2.yaml"
expect_eq "$([ "$rc" -ne 0 ] && echo failed)" failed \
	"conflicting apply by another manager fails"
expect_match 'Apply failed with 1 conflict: conflict with "kubectl": \.data\.k' \
	"$errout" "conflict message on stderr"
k get cm ssa -o jsonpath='{.data.k}'
expect_eq "$out" one "refused apply changed nothing"
k apply --server-side --field-manager other --force-conflicts -f "$tmp/ssa2.yaml"
expect_eq "$rc $out" "0 configmap/ssa serverside-applied" \
	"--force-conflicts: applied"
k get cm ssa -o json --show-managed-fields
expect_match '"k": "two"' "$out" "forced value stored"
mf=$(printf '%s' "$out" | tr -d ' \n' | grep -o '"managedFields":\[.*\]')
expect_match '"fieldsV1":\{"f:data":\{"f:k":\{\}\}\},"manager":"other","operation":"Apply"' \
	"$mf" "managedFields: other owns data.k by Apply"
expect_eq "$(printf '%s' "$mf" | grep -c '"manager":"kubectl"')" 0 \
	"managedFields: kubectl lost its only field"
# kubectl get -w: lists, then watches from the list's resourceVersion.
timeout 5 kubectl --kubeconfig "$tmp/kc2" --cache-dir "$tmp/kcache" \
	get cm -w -o name >"$tmp/kw.out" 2>"$tmp/kw.err" &
kwpid=$!
sleep 1.5
k create configmap watched --from-literal=a=b
wait "$kwpid"
expect_match 'configmap/watched' "$(cat "$tmp/kw.out")" \
	"timeout 5 kubectl get cm -w sees a created ConfigMap"
stop_emu "$pid" open "SIGTERM after kubectl traffic: clean exit 0"

# kubectl over TLS with a token: it verifies the server with the
# kubeconfig's CA and sends the token (which it never does over http).
if ! start_emu ktls --tls --token T --kubeconfig-out "$tmp/kc3"; then
	not_ok "kube-emu --tls --token for kubectl starts"
	cat "$tmp/ktls.err"
	finish
fi
kt() {
	timeout 30 kubectl --kubeconfig "$1" --cache-dir "$tmp/kcache3" \
		"${@:2}" >"$tmp/.out" 2>"$tmp/.err"
	rc=$?
	out=$(cat "$tmp/.out")
	errout=$(cat "$tmp/.err")
}
kt "$tmp/kc3" get ns -o name
expect_eq "$rc $out" $'0 namespace/default\nnamespace/kube-public\nnamespace/kube-system' \
	"kubectl over TLS with a token: get ns"
kt "$tmp/kc3" create configmap tlscm --from-literal=a=b
expect_eq "$rc $out" "0 configmap/tlscm created" \
	"kubectl over TLS: create configmap"
kt "$tmp/kc3" get cm tlscm -o jsonpath='{.data.a}'
expect_eq "$rc $out" "0 b" "kubectl over TLS: get the configmap back"
sed 's/token: T$/token: wrong/' "$tmp/kc3" >"$tmp/kc3-wrong"
kt "$tmp/kc3-wrong" get cm tlscm
expect_eq "$rc $errout" \
	"1 error: You must be logged in to the server (Unauthorized)" \
	"kubectl over TLS with a wrong token: Unauthorized"
stop_emu "$pid" ktls "SIGTERM after kubectl over TLS: clean exit 0"
finish
