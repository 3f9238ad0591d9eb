#!/usr/bin/env bash
# Connection configs end to end: `syncd diff PATH` (cluster mode) against
# `kube-emu --tls --token --client-cert-kubeconfig` with every way of
# reaching it: CA data and CA file, a client certificate, a token file,
# an exec plugin (token and client certificate), two files merged through
# $KUBECONFIG, a --context switch and the in-cluster service account;
# then the failures a user meets: a wrong CA, a wrong token, a failing
# plugin, a context that is not there. The app is one ConfigMap, absent
# from the server: a diff that got through exits 1 and reports it
# Missing in the namespace the config chose. No secret may show up in
# any output. Loopback only; every wait is bounded.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

EMU=${BUILD:-build}/kube-emu
TOKEN=k1-secret-token-5f0c2a
WRONG=k1-wrong-token-9d81b7
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	tmp_remove
}
trap cleanup EXIT

for tool in curl jq openssl; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		ok "$tool not installed: kubeconfig checks skipped"
		finish
	fi
done

# Nothing of the caller's own config may take part.
unset KUBECONFIG KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT SYNCD_SA_ROOT
export HOME=$tmp/home
mkdir -p "$HOME" "$tmp/app" "$tmp/emutmp"

cat >"$tmp/app/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: k1-cm
data:
  greeting: hello
EOF

# kube-emu with TLS, a token and a client certificate (openssl runs
# first: 30 s at most).
TMPDIR=$tmp/emutmp "$EMU" --listen 127.0.0.1:0 --tls --token "$TOKEN" \
	--kubeconfig-out "$tmp/kc-token" \
	--client-cert-kubeconfig "$tmp/kc-cert" \
	>"$tmp/emu.out" 2>"$tmp/emu.err" &
pid=$!
url=
for i in $(seq 300); do
	url=$(sed -n 's/^listening on //p' "$tmp/emu.out")
	[ -n "$url" ] &&
		curl -fsSk --max-time 2 "$url/readyz" >/dev/null 2>&1 && break
	url=
	sleep 0.1
done
if [ -z "$url" ]; then
	not_ok "kube-emu --tls --client-cert-kubeconfig starts"
	head -c 2000 "$tmp/emu.err"
	finish
fi
ok "kube-emu --tls --client-cert-kubeconfig starts"
port=${url##*:}

# The material the kubeconfigs below are made of.
field() { sed -n "s/^ *$1: //p" "$2" | head -n 1; }
ca64=$(field certificate-authority-data "$tmp/kc-token")
printf '%s' "$ca64" | base64 -d >"$tmp/ca.crt"
field client-certificate-data "$tmp/kc-cert" | base64 -d >"$tmp/client.crt"
field client-key-data "$tmp/kc-cert" | base64 -d >"$tmp/client.key"

expect_match '^-----BEGIN CERTIFICATE-----' "$(head -n 1 "$tmp/client.crt")" \
	"--client-cert-kubeconfig: client-certificate-data is a PEM certificate"
expect_eq "$(grep -c 'token' "$tmp/kc-cert")" 0 \
	"--client-cert-kubeconfig: no token in the client-certificate kubeconfig"
expect_match 'CN ?= ?admin' \
	"$(openssl x509 -in "$tmp/client.crt" -noout -subject 2>&1)" \
	"--client-cert-kubeconfig: the certificate is CN=admin"

# The emulator itself: a certificate of its CA authenticates, none or a
# foreign one does not.
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }
expect_eq "$(code --cacert "$tmp/ca.crt" --cert "$tmp/client.crt" \
	--key "$tmp/client.key" "$url/api/v1/namespaces")" 200 \
	"kube-emu accepts its client certificate"
expect_eq "$(code --cacert "$tmp/ca.crt" -H "Authorization: Bearer $TOKEN" \
	"$url/api/v1/namespaces")" 200 "kube-emu still accepts the token"
expect_eq "$(code --cacert "$tmp/ca.crt" "$url/api/v1/namespaces")" 401 \
	"kube-emu refuses a request with neither"
openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	-nodes -keyout "$tmp/other.key" -out "$tmp/other-ca.crt" \
	-subj /CN=other-ca -days 2 >/dev/null 2>&1
expect_eq "$(code --cacert "$tmp/ca.crt" --cert "$tmp/other-ca.crt" \
	--key "$tmp/other.key" "$url/api/v1/namespaces")" 401 \
	"kube-emu refuses a certificate from another CA"

: >"$tmp/all-output"
# diff_ok NAME NS [ENV=V...] -- ARGS...: `syncd diff` got through and
# reported the ConfigMap Missing in namespace NS (exit 1).
diff_ok() {
	local name=$1 want=$2 got
	shift 2
	run_syncd diff "$tmp/app" -o json "$@"
	cat "$tmp/.out" "$tmp/.err" >>"$tmp/all-output"
	got=$(printf '%s' "$out" | jq -r '.objects[] |
		select(.kind == "ConfigMap") |
		"\(.state) \(.namespace)/\(.name)"' 2>/dev/null)
	expect_eq "$rc $got" "1 Missing $want/k1-cm" "$name"
	[ "$rc" -eq 1 ] || printf '    stderr: %s\n' "$(head -c 2000 "$tmp/.err")"
}

# diff_fails NAME REGEX ARGS...: exit 2 with a stderr line matching
# REGEX.
diff_fails() {
	local name=$1 re=$2
	shift 2
	run_syncd diff "$tmp/app" "$@"
	cat "$tmp/.out" "$tmp/.err" >>"$tmp/all-output"
	if [ "$rc" -eq 2 ] && printf '%s\n' "$errout" | grep -Eq -- "$re"; then
		ok "$name"
	else
		not_ok "$name: exit $rc, want 2 and /$re/"
		printf '    stderr: %s\n' "$(head -c 2000 "$tmp/.err")"
	fi
}

# kc FILE CLUSTER-LINES USER-LINES [NS]: a one-context kubeconfig.
kc() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
current-context: main
clusters:
- name: emu
  cluster:
    server: $url
$2
users:
- name: me
  user:
$3
contexts:
- name: main
  context:
    cluster: emu
    user: me
    namespace: ${4:-default}
EOF
}

# --- CA data and a token (kube-emu's own kubeconfig)
diff_ok "certificate-authority-data + token" default \
	--kubeconfig "$tmp/kc-token"

# --- CA file, relative to the kubeconfig; namespace from the context
mkdir -p "$tmp/cafile"
cp "$tmp/ca.crt" "$tmp/cafile/emu-ca.crt"
kc "$tmp/cafile/config" "    certificate-authority: emu-ca.crt" \
	"    token: $TOKEN" ca-ns
diff_ok "certificate-authority file (relative path) + context namespace" \
	ca-ns --kubeconfig "$tmp/cafile/config"

# --- client certificate (data, and files)
diff_ok "client-certificate-data + client-key-data" default \
	--kubeconfig "$tmp/kc-cert"
mkdir -p "$tmp/certfile"
cp "$tmp/client.crt" "$tmp/client.key" "$tmp/certfile/"
kc "$tmp/certfile/config" "    certificate-authority-data: $ca64" \
	"    client-certificate: client.crt
    client-key: client.key"
diff_ok "client-certificate + client-key files" default \
	--kubeconfig "$tmp/certfile/config"

# --- token file
mkdir -p "$tmp/tokfile"
printf '%s\n' "$TOKEN" >"$tmp/tokfile/token"
kc "$tmp/tokfile/config" "    certificate-authority-data: $ca64" \
	"    tokenFile: token"
diff_ok "tokenFile" default --kubeconfig "$tmp/tokfile/config"

# --- exec plugins: a token (cached: one run per syncd), a certificate
mkdir -p "$tmp/exec"
cat >"$tmp/exec/plugin.sh" <<EOF
#!/bin/sh
echo run >>"$tmp/exec/runs"
case "\$KUBERNETES_EXEC_INFO" in
*'"interactive":false'*) ;;
*) echo "no KUBERNETES_EXEC_INFO" >&2; exit 1 ;;
esac
cat "$tmp/exec/\$1.json"
EOF
chmod 755 "$tmp/exec/plugin.sh"
jq -n --arg t "$TOKEN" '{kind: "ExecCredential",
	apiVersion: "client.authentication.k8s.io/v1",
	status: {token: $t, expirationTimestamp: "2999-01-01T00:00:00Z"}}' \
	>"$tmp/exec/token.json"
jq -n --rawfile c "$tmp/client.crt" --rawfile k "$tmp/client.key" \
	'{kind: "ExecCredential",
	apiVersion: "client.authentication.k8s.io/v1",
	status: {clientCertificateData: $c, clientKeyData: $k}}' \
	>"$tmp/exec/cert.json"
exec_user() {
	printf '    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./plugin.sh
      args: [%s]
      interactiveMode: Never
      provideClusterInfo: true
      installHint: the plugin is in the test directory\n' "$1"
}
kc "$tmp/exec/token.yaml" "    certificate-authority-data: $ca64" \
	"$(exec_user token)"
kc "$tmp/exec/cert.yaml" "    certificate-authority-data: $ca64" \
	"$(exec_user cert)"
kc "$tmp/exec/fail.yaml" "    certificate-authority-data: $ca64" \
	"$(exec_user missing)"
diff_ok "exec plugin (token)" default --kubeconfig "$tmp/exec/token.yaml"
expect_eq "$(wc -l <"$tmp/exec/runs" | tr -d ' ')" 1 \
	"exec plugin ran once for all of the diff's requests"
diff_ok "exec plugin (client certificate)" default \
	--kubeconfig "$tmp/exec/cert.yaml"
diff_fails "exec plugin failing: exit 2 with its stderr" \
	'^error: .*exec plugin .*plugin\.sh.*exit status 1.*missing\.json' \
	--kubeconfig "$tmp/exec/fail.yaml"

# --- two files merged through $KUBECONFIG: the first file's context and
# current-context win; cluster and user come from the second.
cat >"$tmp/merge-a.yaml" <<EOF
apiVersion: v1
kind: Config
current-context: merged
contexts:
- name: merged
  context: {cluster: emu, user: me, namespace: merged-ns}
EOF
cat >"$tmp/merge-b.yaml" <<EOF
apiVersion: v1
kind: Config
current-context: other
clusters:
- name: emu
  cluster:
    server: $url
    certificate-authority-data: $ca64
users:
- name: me
  user:
    token: $TOKEN
contexts:
- name: merged
  context: {cluster: emu, user: me, namespace: not-this-one}
- name: other
  context: {cluster: emu, user: me, namespace: other-ns}
EOF
KUBECONFIG=$tmp/merge-a.yaml:$tmp/merge-b.yaml diff_ok \
	"KUBECONFIG with two files merged" merged-ns
KUBECONFIG=$tmp/merge-b.yaml:$tmp/merge-a.yaml diff_ok \
	"KUBECONFIG in the other order: the other current-context" other-ns

# --- --context switch: current-context has a wrong token
cat >"$tmp/contexts.yaml" <<EOF
apiVersion: v1
kind: Config
current-context: stale
clusters:
- name: emu
  cluster:
    server: $url
    certificate-authority-data: $ca64
users:
- name: good
  user: {token: $TOKEN}
- name: stale
  user: {token: $WRONG}
contexts:
- name: stale
  context: {cluster: emu, user: stale}
- name: fresh
  context: {cluster: emu, user: good, namespace: fresh-ns}
EOF
diff_ok "--context switches to another context" fresh-ns \
	--kubeconfig "$tmp/contexts.yaml" --context fresh
diff_fails "--context not in the kubeconfig: exit 2, named" \
	"^error: .*context \"nope\" not found" \
	--kubeconfig "$tmp/contexts.yaml" --context nope

# --- wrong token (the current context of that file): 401, exit 2
diff_fails "wrong token: exit 2 with a 401 Unauthorized error" \
	'^error: .*(401|Unauthorized)' --kubeconfig "$tmp/contexts.yaml"

# --- wrong CA: the TLS verification fails, exit 2
kc "$tmp/wrong-ca.yaml" \
	"    certificate-authority: $tmp/other-ca.crt" "    token: $TOKEN"
diff_fails "wrong CA: exit 2 with a certificate error" \
	'^error: .*([Cc]ertificate|SSL|TLS)' --kubeconfig "$tmp/wrong-ca.yaml"

# --- in-cluster: the service-account mount and the service env; no
# kubeconfig exists (HOME is empty, KUBECONFIG unset).
mkdir -p "$tmp/sa"
printf '%s' "$TOKEN" >"$tmp/sa/token"
cp "$tmp/ca.crt" "$tmp/sa/ca.crt"
printf 'sa-ns\n' >"$tmp/sa/namespace"
SYNCD_SA_ROOT=$tmp/sa KUBERNETES_SERVICE_HOST=127.0.0.1 \
	KUBERNETES_SERVICE_PORT=$port diff_ok \
	"in-cluster: service-account token, ca.crt and namespace" sa-ns
printf '%s' "$WRONG" >"$tmp/sa/token"
SYNCD_SA_ROOT=$tmp/sa KUBERNETES_SERVICE_HOST=127.0.0.1 \
	KUBERNETES_SERVICE_PORT=$port diff_fails \
	"in-cluster with a stale token: exit 2 with 401" '^error: .*(401|Unauthorized)'
diff_fails "no kubeconfig and not in a cluster: exit 2, said so" \
	'^error: .*no kubeconfig found'

# No token, key or plugin output in anything syncd printed.
leaks=$(grep -c -e "$TOKEN" -e "$WRONG" -e 'PRIVATE KEY' "$tmp/all-output")
expect_eq "$leaks" 0 "no secret in any syncd output"

# The same kubeconfigs work for the reference client.
if command -v kubectl >/dev/null 2>&1; then
	for f in kc-cert cafile/config tokfile/config exec/token.yaml \
		exec/cert.yaml; do
		if timeout 60 kubectl --kubeconfig "$tmp/$f" get ns default \
			>/dev/null 2>"$tmp/kubectl.err"; then
			ok "kubectl accepts $f"
		else
			not_ok "kubectl accepts $f"
			head -c 1000 "$tmp/kubectl.err"
		fi
	done
else
	ok "kubectl not installed: cross-checks skipped"
fi

finish
