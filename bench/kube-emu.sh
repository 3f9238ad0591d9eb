#!/usr/bin/env bash
# Benchmark: kube-emu, the API server emulator, as a real process on
# loopback (plain HTTP, no token), driven by $BUILD/bench/emu (bench/emu.c):
# 10,000 ConfigMap creates over one keep-alive connection, LIST of them
# (with `kubectl get -o json` as the peer when kubectl is installed),
# small GET and merge-PATCH throughput on two connections, and the
# emulator's RSS per object. Goals (issue 4) are printed with the figures
# as measured; a missed goal exits 0, an error (non-2xx answer, emulator
# not coming up, kubectl failing) exits non-zero.
#
#   bench/kube-emu.sh [SECONDS]     (default 5 s per throughput verb)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
EMU="$BUILD/kube-emu"
CLIENT="$BUILD/bench/emu"
SECONDS_PER_VERB=${1:-5}
[ -x "$EMU" ] || make -s BUILD="$BUILD" "$EMU"
[ -x "$CLIENT" ] || make -s BUILD="$BUILD" "$CLIENT"

out=bench/out/kube-emu
rm -rf "$out"
mkdir -p "$out"

pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT

"$EMU" --listen 127.0.0.1:0 --kubeconfig-out "$out/kubeconfig" \
	>"$out/emu.out" 2>"$out/emu.err" &
pid=$!

# Wait (5 s at most) for the address and /readyz.
url=
for _ in $(seq 50); do
	url=$(sed -n 's/^listening on //p' "$out/emu.out")
	if [ -n "$url" ] &&
		curl -fsS --max-time 2 "$url/readyz" >/dev/null 2>&1; then
		break
	fi
	url=
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "kube-emu did not come up:" >&2
	head -c 2000 "$out/emu.err" >&2
	exit 1
fi
echo "kube-emu $url (pid $pid)"

peer=()
if command -v kubectl >/dev/null; then
	peer=(--kubeconfig "$out/kubeconfig" --peer-out "$out/kubectl.json")
else
	echo "peer: kubectl is not installed; no LIST ratio"
fi

"$CLIENT" "$url" --pid "$pid" --seconds "$SECONDS_PER_VERB" \
	"${peer[@]+"${peer[@]}"}"

# The emulator must have survived the run: a crash is an error.
if ! kill -0 "$pid" 2>/dev/null; then
	echo "kube-emu exited during the benchmark:" >&2
	head -c 2000 "$out/emu.err" >&2
	exit 1
fi
