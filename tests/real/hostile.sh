#!/usr/bin/env bash
# syncd run on the real kube-apiserver keeps an app on its last good
# revision when a hostile commit arrives (a directory of 20,001 files, over
# the checkout limit; then a manifest that is a Git LFS pointer): the
# app's sourceError/error names the cause, lastAppliedRevision stays, the
# ConfigMap of the good revision is still in the API server with the same
# resourceVersion; a good commit again converges. A file:// repository
# made here; loopback only; the namespace is removed on exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../integration/git/servers.sh"
real_need "hostile commits on the real control plane"
command -v python3 >/dev/null 2>&1 || {
	ok "python3 not installed: hostile commits skipped"
	finish
}

NS=real-hostile
cleanup() {
	if [ -n "${K8S_DIR:-}" ]; then
		kc delete namespace "$NS" --wait=false --ignore-not-found \
			>/dev/null 2>&1
	fi
	real_cleanup
}
trap cleanup EXIT
gitsrv_env
fresh_ns "$NS"

repo="$tmp/repo"
git init -q -b main "$repo"
cm() { # VALUE: the app's ConfigMap
	mkdir -p "$repo/app"
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: h-cm\ndata:\n  value: "%s"\n' \
		"$1" >"$repo/app/cm.yaml"
}
commit() { # MESSAGE: commit everything, print the commit
	git -C "$repo" add -A && git -C "$repo" commit -q -m "$1" &&
		git -C "$repo" rev-parse HEAD
}

cm good
good=$(commit good)
port=$(gitsrv_free_port)
cat >"$tmp/run.yaml" <<EOF
resync: 1s
workers: 1
kubeconfig: $K8S_SYNCD_KUBECONFIG
cacheDir: $tmp/cache
listen: 127.0.0.1:$port
log:
  format: logfmt
  level: info
apps:
  - name: hostile
    source:
      repo: file://$repo
      revision: main
      path: app
      interval: 1s
    namespace: $NS
EOF
"$SYNCD" run -c "$tmp/run.yaml" >"$tmp/run.out" 2>"$tmp/run.log" &
syncd_pid=$!
pids+=("$syncd_pid")
doc() { curl -sS --max-time 5 "http://127.0.0.1:$port/api/v1/apps/hostile" 2>/dev/null; }
applied() { [ "$(doc | jq -r .status.lastAppliedRevision)" = "$1" ]; }
value() { kc -n "$NS" get configmap h-cm -o jsonpath='{.data.value}' 2>&1; }
rv() { kc -n "$NS" get configmap h-cm -o jsonpath='{.metadata.resourceVersion}' 2>&1; }
if wait_for 90 applied "$good" && [ "$(value)" = good ]; then
	ok "the good commit is applied"
else
	not_ok "the good commit is applied: $(value)"
	tail -n 5 "$tmp/run.log"
fi
rv0=$(rv)

# hostile NAME REGEX: the app fails with REGEX and stays on $good.
hostile() {
	local c=$1 re=$2
	failing() {
		doc | jq -r '(.error // "") + " " + (.sourceError // "")' |
			grep -qE -- "$re"
	}
	if wait_for 90 failing; then
		ok "$c: the app's error names the cause"
	else
		not_ok "$c: the app's error names the cause: $(doc | jq -c '[.error, .sourceError]')"
	fi
	expect_eq "$(doc | jq -r .status.lastAppliedRevision)" "$good" \
		"$c: lastAppliedRevision is still the good commit"
	expect_eq "$(value) $(rv)" "good $rv0" \
		"$c: the good revision's ConfigMap is unchanged in the API server"
}

mkdir -p "$repo/app/many"
python3 - "$repo/app/many" <<'EOF'
import os, sys
for i in range(20001):
    open(os.path.join(sys.argv[1], 'f%05d.txt' % i), 'w').close()
EOF
commit "20,001 files" >/dev/null
hostile "20,001 files" "many: more than 20000 files and directories in tree"

rm -rf "$repo/app/many"
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n' \
	>"$repo/app/lfs.yaml"
commit "an LFS pointer" >/dev/null
hostile "LFS pointer" "lfs\.yaml: a Git LFS pointer, not the file"

rm -f "$repo/app/lfs.yaml"
cm again
again=$(commit again)
if wait_for 90 applied "$again" && [ "$(value)" = again ]; then
	ok "a good commit again converges"
else
	not_ok "a good commit again converges: $(doc | jq -c '[.revision, .error, .sourceError]')"
fi
if term_wait "$syncd_pid" 30; then
	expect_eq "$rc" 0 "SIGTERM: syncd exits 0"
else
	not_ok "syncd did not exit on SIGTERM"
fi
# Checked once syncd has stopped: a poll may be writing a checkout.
expect_eq "$(find "$tmp/cache" -path '*/trees/.tmp-*' | wc -l)" 0 \
	"no half-written checkout left"
finish
