#!/usr/bin/env bash
# kube-emu checked against the real kube-apiserver 1.36, step for step:
# the same request sequences go to a bare real control plane (etcd and
# kube-apiserver only, no controllers, like kube-emu; always one of this
# script's own, even when tests/run.sh shares a full cluster through
# K8S_ENV) and to a fresh `kube-emu --tls --token`, and the answers are
# compared after normalisation (tests/cases/differential/normalise.jq:
# uids, resourceVersions, times, generated names, cluster IPs masked;
# managedFields as sets; watch streams with runs of bookmarks collapsed).
#
# Compared, each as one step:
#   - every step of tests/cases/kubectl, the real kubectl 1.36 against
#     both (normalised as the conformance scripts do)
#   - every request of tests/cases/differential/*/steps (format in
#     tests/cases/differential/README.md): status code, Warning headers
#     and the body
#
# A difference listed in tests/cases/differential/known-differences (the
# step and the jq paths that differ, with the reason; the same list is
# in kube-emu/README.md) is masked and counted as known; any other
# difference fails, and so does a listed one that no longer differs. Ends
# with one line:
#   differential: N steps compared, M equal, K known differences
#
#   bash tests/real/differential.sh            # every scenario
#   ONLY=03-ssa bash tests/real/differential.sh  # scenarios matching a glob
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. tests/cases/kubectl/steps.sh

cases=tests/cases/differential
EMU=${BUILD:-build}/kube-emu
UA="differential/v1.0 (linux/amd64)"
ONLY=${ONLY:-*}

if ! k8s_available; then
	ok "the real control plane is not built (make k8s): differential check skipped"
	finish
fi
for t in curl jq openssl; do
	if ! command -v "$t" >/dev/null 2>&1; then
		ok "$t not installed: differential check skipped"
		finish
	fi
done
if [ ! -x "$EMU" ]; then
	not_ok "$EMU not built"
	finish
fi

# --- the two servers ---------------------------------------------------
unset K8S_ENV
if ! k8s_start --bare; then
	not_ok "a bare real kube-apiserver starts"
	finish
fi
"$EMU" --listen 127.0.0.1:0 --tls --token differential \
	--kubeconfig-out "$tmp/emu.kubeconfig" >"$tmp/emu.out" 2>"$tmp/emu.err" &
emu_pid=$!
pids+=("$emu_pid")
emu_url=
for _ in $(seq 300); do
	emu_url=$(sed -n 's/^listening on //p' "$tmp/emu.out")
	[ -n "$emu_url" ] && [ -s "$tmp/emu.kubeconfig" ] &&
		curl -fsSk --max-time 2 "$emu_url/readyz" >/dev/null 2>&1 && break
	emu_url=
	sleep 0.1
done
if [ -z "$emu_url" ]; then
	not_ok "kube-emu --tls --token starts: $(head -c 500 "$tmp/emu.err")"
	finish
fi
sed -n 's/^ *certificate-authority-data: //p' "$tmp/emu.kubeconfig" |
	base64 -d >"$tmp/emu.ca"

# Per target: URL, CA, token, kubeconfig.
declare -A URL CA TOKEN KCFG
URL[real]=$K8S_URL CA[real]=$K8S_CA TOKEN[real]=$K8S_TOKEN KCFG[real]=$K8S_KUBECONFIG
URL[emu]=$emu_url CA[emu]=$tmp/emu.ca TOKEN[emu]=differential KCFG[emu]=$tmp/emu.kubeconfig
targets=(real emu)

KSTEP_KUBECTL=$K8S_BIN/kubectl
# kubectl's discovery caches live beside the kubeconfigs.
cp "$K8S_KUBECONFIG" "$tmp/real.kubeconfig"
canary_input "$tmp/real.kubeconfig" # holds the admin token
KCFG[real]=$tmp/real.kubeconfig

# --- the known differences ---------------------------------------------
# "SCENARIO | STEP TITLE | JQ-PATH[, JQ-PATH...] | REASON" per line.
declare -A KNOWN KNOWN_USED
while IFS= read -r line || [ -n "$line" ]; do
	case $line in '#'* | '') continue ;; esac
	IFS='|' read -r k_scn k_step k_paths _ <<<"$line"
	k_scn=$(echo "$k_scn" | xargs) k_step=$(echo "$k_step" | sed -E 's/^ +| +$//g')
	k_paths=$(echo "$k_paths" | sed -E 's/^ +| +$//g')
	KNOWN["$k_scn|$k_step"]=$k_paths
done <"$cases/known-differences"

steps=0 equal=0 known=0

# compare SCENARIO STEP REAL-FILE EMU-FILE: both hold normalised records
# (JSON); equal, a known difference or a failure.
compare() {
	local scn=$1 step=$2 a=$3 b=$4 key="$1|$2" paths filter
	steps=$((steps + 1))
	paths=${KNOWN[$key]-}
	if [ -z "$paths" ]; then
		if jq -e -n --slurpfile a "$a" --slurpfile b "$b" '$a == $b' >/dev/null; then
			equal=$((equal + 1))
		else
			not_ok "$scn: $step: kube-emu differs from kube-apiserver"
			show_diff "$a" "$b"
		fi
		return
	fi
	KNOWN_USED[$key]=1
	filter="del($paths)"
	if jq -e -n --slurpfile a "$a" --slurpfile b "$b" '$a == $b' >/dev/null; then
		not_ok "$scn: $step: listed in known-differences but equal now (drop the entry)"
	elif jq -e -n --slurpfile a "$a" --slurpfile b "$b" \
		"(\$a[0] | $filter) == (\$b[0] | $filter)" >/dev/null; then
		known=$((known + 1))
	else
		not_ok "$scn: $step: kube-emu differs beyond its known differences ($paths)"
		jq "$filter" "$a" >"$a.k"
		jq "$filter" "$b" >"$b.k"
		show_diff "$a.k" "$b.k"
	fi
}

show_diff() {
	diff -u --label kube-apiserver --label kube-emu <(jq -S . "$1") <(jq -S . "$2") |
		head -n 60 | sed 's/^/    /'
}

# --- the kubectl steps -------------------------------------------------
# Text outputs, as records {"code": exit, "body": [lines]}.
kubectl_record() {
	jq -R -s '{code: (split("\n") | map(select(startswith("exit "))) | last
		| ltrimstr("exit ") | tonumber),
		body: (split("\n") | map(select(startswith("exit ") | not)))}' "$1"
}
run_kubectl_steps() {
	local dir step t
	case kubectl in $ONLY) ;; *) return ;; esac
	for dir in tests/cases/kubectl/*/; do
		step=$(basename "$dir")
		for t in "${targets[@]}"; do
			if [ "$step" = 50-watch ]; then
				kstep_watch "${KCFG[$t]}" "$tmp/k.$t"
			else
				kstep_run "${KCFG[$t]}" tests/cases/kubectl "$step" "$tmp/k.$t"
			fi
			kubectl_record "$tmp/k.$t" >"$tmp/k.$t.json"
		done
		compare kubectl "$step" "$tmp/k.real.json" "$tmp/k.emu.json"
	done
}

# --- the request steps -------------------------------------------------
# Per target: the variables steps captured (TARGET|NAME).
declare -A VARS

# subst TARGET TEXT: ${NAME} replaced by the target's captured values,
# ${NS} by the scenario's namespace.
subst() {
	local t=$1 s=$2 k name
	s=${s//'${NS}'/$NS}
	for k in "${!VARS[@]}"; do
		[ "${k%%|*}" = "$t" ] || continue
		name=${k#*|}
		s=${s//"\${$name}"/${VARS[$k]}}
	done
	printf '%s' "$s"
}

# send TARGET METHOD PATH BODY OUT: one request; the raw record
# {"code","warnings","body"[,"watch"]} in OUT. Headers in $hdrs (lines
# "Name: value"). A WATCH is a GET streamed until the server ends it
# (its timeoutSeconds), 30 s at most; the body is its array of events.
send() {
	local t=$1 method=$2 path=$3 body=$4 out=$5 h watch=false
	local args=(-sS --max-time 30 --cacert "${CA[$t]}" -o "$out.body"
		-D "$out.hdr" -w '%{http_code}' -A "$UA")
	grep -q '^Authorization: ' <<<"$hdrs" ||
		args+=(-H "Authorization: Bearer ${TOKEN[$t]}")
	if [ "$method" = WATCH ]; then
		method=GET watch=true
		args+=(-N)
	fi
	args+=(-X "$method")
	while IFS= read -r h; do
		[ -n "$h" ] && args+=(-H "$(subst "$t" "$h")")
	done <<<"$hdrs"
	if [ -n "$body" ]; then
		subst "$t" "$body" >"$out.req"
		args+=(--data-binary "@$out.req")
	fi
	code=$(curl "${args[@]}" "${URL[$t]}$(subst "$t" "$path")" 2>"$out.err")
	[ -n "$code" ] || code=0
	sed -n 's/^[Ww]arning: [0-9]* [^ ]* "\(.*\)"\r\{0,1\}$/\1/p' "$out.hdr" |
		jq -R . | jq -s . >"$out.warn"
	if [ "$watch" = true ]; then
		jq -c . "$out.body" 2>/dev/null | jq -s . >"$out.json" ||
			jq -R -s 'split("\n")' "$out.body" >"$out.json"
	elif ! jq -e . "$out.body" >"$out.json" 2>/dev/null; then
		jq -R -s . "$out.body" >"$out.json"
	fi
	jq -n --argjson code "$code" --slurpfile w "$out.warn" \
		--slurpfile b "$out.json" --argjson watch "$watch" \
		'{code: $code, warnings: $w[0], body: $b[0]}
		 + (if $watch then {watch: true} else {} end)' >"$out"
}

# run_step SCENARIO: the step in $title/$method/$path/$hdrs/$body.
run_step() {
	local scn=$1 t cap name expr wait cmp deadline
	while [ "${body%$'\n'}" != "$body" ]; do body=${body%$'\n'}; done
	cap=$(sed -n 's/^Capture: //p' <<<"$hdrs")
	wait=$(sed -n 's/^Wait: //p' <<<"$hdrs")
	cmp=$(sed -n 's/^Compare: //p' <<<"$hdrs")
	local send_hdrs
	send_hdrs=$(grep -v -e '^Capture: ' -e '^Wait: ' -e '^Compare: ' -e '^Async: ' <<<"$hdrs")
	for t in "${targets[@]}"; do
		hdrs=$send_hdrs
		deadline=$((SECONDS + 20))
		while :; do
			send "$t" "$method" "$path" "$body" "$tmp/s.$t"
			[ -z "$wait" ] && break
			jq -e "$wait" "$tmp/s.$t" >/dev/null 2>&1 && break
			if [ "$SECONDS" -ge "$deadline" ]; then
				not_ok "$scn: $title: $t: still not ($wait) after 20 s"
				break
			fi
			sleep 0.2
		done
		while IFS= read -r name; do
			[ -n "$name" ] || continue
			expr=${name#* }
			name=${name%% *}
			VARS["$t|$name"]=$(jq -r "$expr" "$tmp/s.$t")
		done <<<"$cap"
		jq -c --slurpfile rvs "$tmp/rvs.$t" -f "$cases/normalise.jq" \
			"$tmp/s.$t" >"$tmp/n.$t.pair"
		jq '.[0]' "$tmp/n.$t.pair" >"$tmp/n.$t"
		jq -c '.[1]' "$tmp/n.$t.pair" >"$tmp/rvs.$t"
		if [ -n "$cmp" ]; then
			jq "$cmp" "$tmp/n.$t" >"$tmp/n.$t.c" && mv "$tmp/n.$t.c" "$tmp/n.$t"
		fi
	done
	compare "$scn" "$title" "$tmp/n.real" "$tmp/n.emu"
}

# run_scenario DIR: its namespace (d-NAME) on both servers, then every
# step of DIR/steps in order.
run_scenario() {
	local dir=$1 scn line state= t
	scn=$(basename "$dir")
	NS=d-$scn
	for t in "${targets[@]}"; do
		echo '{}' >"$tmp/rvs.$t"
		hdrs="Content-Type: application/json"
		send "$t" POST /api/v1/namespaces \
			"{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$NS\"}}" \
			"$tmp/ns.$t"
	done
	title=
	while IFS= read -r line || [ -n "$line" ]; do
		if [[ $line == '### '* ]]; then
			[ -n "$title" ] && run_step "$scn"
			title=${line#'### '} method= path= hdrs= body= state=request
			continue
		fi
		case $state in
		'') ;; # the file's header comment
		request)
			[ -z "$line" ] && continue
			method=${line%% *} path=${line#* } state=headers
			;;
		headers)
			if [ -z "$line" ]; then
				state=body
			else
				hdrs+="$line"$'\n'
			fi
			;;
		body) body+="$line"$'\n' ;;
		esac
	done <"$dir/steps"
	[ -n "$title" ] && run_step "$scn"
}

run_kubectl_steps
for dir in "$cases"/*/; do
	case $(basename "$dir") in $ONLY) run_scenario "$dir" ;; esac
done

for key in "${!KNOWN[@]}"; do
	case ${key%%|*} in $ONLY) ;; *) continue ;; esac
	[ -n "${KNOWN_USED[$key]-}" ] ||
		not_ok "known-differences names a step that was not compared: $key"
done
# kube-emu ends on SIGTERM; a sanitizer build reports what it found.
kill -TERM "$emu_pid" 2>/dev/null
wait "$emu_pid" 2>/dev/null
if grep -q -e 'ERROR: AddressSanitizer' -e 'ERROR: LeakSanitizer' -e 'runtime error:' "$tmp/emu.err"; then
	not_ok "kube-emu ends without a sanitizer report"
	grep -A 12 -e 'ERROR: ' -e 'runtime error:' "$tmp/emu.err" | head -n 60 | sed 's/^/    /'
fi
echo "differential: $steps steps compared, $equal equal, $known known differences"
if [ $((equal + known)) -eq "$steps" ] && [ "$status" = 0 ]; then
	ok "kube-emu answers as kube-apiserver $K8S_VERSION on every step but the known differences"
else
	not_ok "kube-emu answers as kube-apiserver $K8S_VERSION on every step but the known differences"
fi
finish
