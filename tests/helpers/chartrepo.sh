# A plain HTTP(S) Helm chart repository on loopback for syncd's tests
# (tests/helpers/chartrepo.py, python3 stdlib only). Source it (bash),
# then:
#
#   chartrepo_available    0 when python3 (CHARTREPO_PYTHON) and the
#                          helm of make k8s are there
#   chartrepo_start DIR [ARGS...]
#                          serves DIR (index.yaml, the .tgz charts) on
#                          127.0.0.1, a port the kernel picks; ARGS are
#                          chartrepo.py's own (--basic USER:PASSFILE,
#                          --tls CERT KEY, --redirect-to URL, --bomb,
#                          --slow [body|headers]). Waits (10 s) until it
#                          accepts connections; returns non-zero with its
#                          error otherwise
#   chartrepo_stop         stops every server chartrepo_start started
#                          (TERM, then KILL after 5 s) and removes their
#                          state folders (DIR is left alone)
#   chartrepo_count REGEX [LOG]
#                          lines of the request log (the last server's,
#                          or LOG) matching the extended REGEX; a line is
#                          "METHOD PATH STATUS", then " auth" when the
#                          request carried an Authorization header:
#                          chartrepo_count '^GET /index.yaml 304'
#   chartrepo_mark         later counts only look at what came after
#   chartrepo_index DIR URL
#                          (re)builds DIR/index.yaml with the real helm
#                          (`helm repo index DIR --url URL`)
#
# What chartrepo_start sets (for the server it started last; save them
# before starting another): CHARTREPO_URL (http://127.0.0.1:PORT, https
# with --tls), CHARTREPO_PORT, CHARTREPO_LOG (the request log),
# CHARTREPO_PID. The python3 it runs: CHARTREPO_PYTHON (default python3);
# helm: $K8S_BIN/helm (default build/k8s/bin of the tree).

CHARTREPO_PY=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/chartrepo.py
K8S_BIN=${K8S_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/k8s/bin}
chartrepo_pids=()
chartrepo_dirs=()

chartrepo_available() {
	command -v "${CHARTREPO_PYTHON:-python3}" >/dev/null 2>&1 && [ -x "$K8S_BIN/helm" ]
}

chartrepo_start() {
	local dir=$1 state port= a scheme=http n
	shift
	if ! command -v "${CHARTREPO_PYTHON:-python3}" >/dev/null 2>&1; then
		echo "chartrepo: ${CHARTREPO_PYTHON:-python3} is not installed" >&2
		return 1
	fi
	state=$(mktemp -d "${TMPDIR:-/tmp}/syncd-chartrepo.XXXXXX") || return 1
	chartrepo_dirs+=("$state")
	for a in "$@"; do
		[ "$a" = --tls ] && scheme=https
	done
	: >"$state/requests.log"
	setsid "${CHARTREPO_PYTHON:-python3}" "$CHARTREPO_PY" "$dir" \
		--log "$state/requests.log" "$@" \
		>"$state/stdout" 2>"$state/stderr" </dev/null &
	CHARTREPO_PID=$!
	chartrepo_pids+=("$CHARTREPO_PID")
	for n in $(seq 100); do
		port=$(sed -n '1s/^port \([0-9][0-9]*\)$/\1/p' "$state/stdout" 2>/dev/null)
		[ -n "$port" ] && break
		if ! kill -0 "$CHARTREPO_PID" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	if [ -z "$port" ]; then
		echo "chartrepo: the server did not start:" >&2
		tail -n 5 "$state/stderr" | sed 's/^/    /' >&2
		return 1
	fi
	CHARTREPO_PORT=$port
	CHARTREPO_URL=$scheme://127.0.0.1:$port
	CHARTREPO_LOG=$state/requests.log
	chartrepo_from=1
	export CHARTREPO_URL CHARTREPO_PORT CHARTREPO_LOG CHARTREPO_PID
}

chartrepo_stop() {
	local p n
	for p in "${chartrepo_pids[@]+"${chartrepo_pids[@]}"}"; do
		kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null
	done
	for p in "${chartrepo_pids[@]+"${chartrepo_pids[@]}"}"; do
		n=50
		while kill -0 "$p" 2>/dev/null && [ "$n" -gt 0 ]; do
			sleep 0.1
			n=$((n - 1))
		done
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for p in "${chartrepo_dirs[@]+"${chartrepo_dirs[@]}"}"; do
		rm -rf "$p"
	done
	chartrepo_pids=()
	chartrepo_dirs=()
	CHARTREPO_PID=
}

chartrepo_mark() {
	chartrepo_from=$(($(wc -l <"$CHARTREPO_LOG") + 1))
}

chartrepo_count() {
	local log=${2:-$CHARTREPO_LOG} from=1
	[ -z "${2:-}" ] && from=${chartrepo_from:-1}
	tail -n "+$from" "$log" | grep -Ec -- "$1" || :
}

chartrepo_index() {
	local home
	home=$(mktemp -d "${TMPDIR:-/tmp}/syncd-helm.XXXXXX") || return 1
	HELM_CONFIG_HOME=$home/config HELM_CACHE_HOME=$home/cache \
		HELM_DATA_HOME=$home/data \
		timeout 60 "$K8S_BIN/helm" repo index "$1" --url "$2"
	local rc=$?
	rm -rf "$home"
	return "$rc"
}
