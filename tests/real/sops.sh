#!/usr/bin/env bash
# SOPS-encrypted objects in Git (docs/sops.md) on the real kube-apiserver
# 1.36, with the real sops and age (tests/k8s/tools/sops, tools/age):
#  1. a Secret and a ConfigMap encrypted with `sops encrypt --age` (and a
#     plain ConfigMap beside them) in a local Git repository: `syncd sync
#     --decrypt-age-key-file` applies them decrypted (kubectl reads the
#     values), and `syncd diff` then finds nothing to do;
#  2. a drift edit of the decrypted Secret and ConfigMap: `syncd diff`
#     shows fingerprints, never the values (text and JSON);
#  3. a wrong age key: exit 2, one line naming the file, the object and
#     sops's reason; nothing applied (a fresh namespace stays empty, the
#     synced objects keep their resourceVersions); an encrypted object
#     without decryption asks for it;
#  4. `syncd run` with `decryption: {provider: sops, ageKeyFile}` in
#     syncd.yaml applies them decrypted and heals an edit;
#  5. with an App object (decryption.secretRef: a Secret whose *.agekey
#     data hold the identities) fed by a real Git server, when one can
#     be started here;
#  6. the plaintext canary is found nowhere: syncd's stdout and stderr,
#     its logs, `syncd diff` output, /api/v1/apps/NAME, /metrics, the
#     render cache and the Git cache hold ciphertext only.
# Skipped with one line when sops and age are not built. Loopback only;
# every wait is bounded; the script removes its namespaces and stops what
# it started.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../integration/git/servers.sh"

if [ ! -x "$K8S_BIN/sops" ] || [ ! -x "$K8S_BIN/age-keygen" ]; then
	ok "sops and age are not built (tests/k8s/build.sh --tool tests/k8s/tools/sops, tools/age): SOPS checks skipped"
	finish
fi
real_need "SOPS decryption on the real control plane"

NS=sops-cli
NS_BAD=sops-bad
NS_RUN=sops-run
NS_APP=sops-app
ALL_NS=("$NS" "$NS_BAD" "$NS_RUN" "$NS_APP")
cleanup() {
	gitsrv_stop_all
	if [ -n "${K8S_DIR:-}" ]; then
		kc delete namespace "${ALL_NS[@]}" --wait=false \
			--ignore-not-found >/dev/null 2>&1
		if [ -n "${crd_applied:-}" ]; then
			kc delete crd apps.syncd.io --ignore-not-found \
				--timeout=60s >/dev/null 2>&1
		fi
	fi
	real_cleanup
}
trap cleanup EXIT
gitsrv_env
export PATH="$K8S_BIN:$PATH"

ns_gone "${ALL_NS[@]}"
fresh_ns "$NS" "$NS_BAD" "$NS_RUN" "$NS_APP"

# A value that must never leave the API server and syncd's memory.
CANARY=canary-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p "$tmp/keys" "$tmp/plain" "$tmp/repo/app"
canary_plant "SOPS plaintext" "$CANARY"
canary_input "$tmp/plain"
age-keygen -o "$tmp/keys/age.txt" 2>/dev/null
age-keygen -o "$tmp/keys/other.txt" 2>/dev/null
recipient=$(age-keygen -y "$tmp/keys/age.txt")

# The plaintext stays outside the repository; only ciphertext is committed.
cat >"$tmp/plain/db.yaml" <<EOF
# the database credentials
apiVersion: v1
kind: Secret
metadata:
  name: db
  labels:
    app: web
type: Opaque
stringData:
  password: $CANARY-secret # rotated monthly
  port: "5432"
EOF
cat >"$tmp/plain/settings.yaml" <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  token: $CANARY-config
  replicas: "3"
EOF
encrypt() { # NAME: plain/NAME.yaml -> repo/app/NAME.enc.yaml
	(cd "$tmp/plain" && sops encrypt --age "$recipient" \
		--encrypted-regex '^(data|stringData)$' "$1.yaml") \
		>"$tmp/repo/app/$1.enc.yaml"
}
if encrypt db && encrypt settings && grep -q 'ENC\[AES256_GCM' "$tmp/repo/app/db.enc.yaml" &&
	! grep -rq "$CANARY" "$tmp/repo"; then
	ok "sops encrypt --age: the Secret and the ConfigMap are committed as ciphertext"
else
	not_ok "sops encrypt --age makes the encrypted files"
	finish
fi
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  value: one\n' \
	>"$tmp/repo/app/plain.yaml"
git -C "$tmp/repo" init -q -b main &&
	git -C "$tmp/repo" add -A &&
	git -C "$tmp/repo" commit -q -m encrypted
REPO=file://$tmp/repo

get() { kc -n "$1" get "$2" -o jsonpath="$3" 2>&1; }
secret_value() { get "$1" secret/db '{.data.password}' | base64 -d 2>/dev/null; }
absent() { kc -n "$1" get "$2" -o name 2>&1 | grep -q '(NotFound)'; }
# no_canary WHERE TEXT: the plaintext is not in TEXT.
no_canary() {
	if printf '%s' "$2" | grep -q -- "$CANARY"; then
		not_ok "the plaintext is not in $1"
		printf '%s' "$2" | grep -- "$CANARY" | head -n 3 | cut -c 1-200 | sed 's/^/    /'
	else
		ok "the plaintext is not in $1"
	fi
}
cli() { # COMMAND NS APP [ARGS...]: diff or sync of the repository
	S "$1" --repo "$REPO" --path app --cache-dir "$tmp/cache" -n "$2" \
		--app "$3" "${@:4}"
}
seen=$tmp/seen.txt # everything syncd printed, for the last check
: >"$seen"
keep() { printf '%s\n%s\n' "$out" "$errout" >>"$seen"; }

# === 1. sync applies the decrypted objects ==================================
cli sync "$NS" web --decrypt-age-key-file "$tmp/keys/age.txt"
keep
expect_rc 0 "syncd sync --decrypt-age-key-file applies the app"
expect_eq "$(secret_value "$NS")|$(get "$NS" configmap/settings '{.data.token}')|$(get "$NS" configmap/plain '{.data.value}')" \
	"$CANARY-secret|$CANARY-config|one" \
	"the Secret and the ConfigMap are in the API server decrypted, the plain ConfigMap as written"
expect_eq "$(kc -n "$NS" get secret db -o json | jq -r '[(.metadata.annotations // {} | keys | map(select(startswith("sops"))) | length), (has("sops"))] | @tsv')" \
	"$(printf '0\tfalse')" "the stored Secret carries no sops metadata"
cli diff "$NS" web --decrypt-age-key-file "$tmp/keys/age.txt"
keep
expect_rc 0 "syncd diff right after: nothing to do"

# === 2. a drift edit shows fingerprints =====================================
# Values a hand edit puts in the live objects: Secret data and a decrypted
# ConfigMap's, as secret as the plaintext.
canary_plant "a live Secret's data (a hand edit)" edited-by-hand-1
canary_plant "a decrypted ConfigMap's live data" edited-by-hand-2
canary_plant "a decrypted ConfigMap's live data" edited-by-hand-3
kc -n "$NS" patch secret db --type=merge -p '{"stringData":{"password":"edited-by-hand-1"}}' \
	--field-manager=kubectl-edit >/dev/null
kc -n "$NS" patch configmap settings --type=merge -p '{"data":{"token":"edited-by-hand-2"}}' \
	--field-manager=kubectl-edit >/dev/null
cli diff "$NS" web --decrypt-age-key-file "$tmp/keys/age.txt"
keep
expect_rc 1 "syncd diff after a hand edit of the decrypted objects: drift"
expect_match 'Drifted Secret '"$NS"'/db' "$out" "the Secret is Drifted"
expect_match 'Drifted ConfigMap '"$NS"'/settings' "$out" "the ConfigMap is Drifted"
expect_match '^[-+] +password: \(secret sha256:[0-9a-f]{16}\)$' "$out" \
	"the Secret's value shows as a fingerprint"
expect_match '\.data\.token' "$out" "the ConfigMap's field is named"
if printf '%s' "$out" | grep -q 'edited-by-hand\|ZWRpdGVkLWJ5LWhhbmQt'; then
	not_ok "the edited values do not show in the diff"
else
	ok "the edited values do not show in the diff (fingerprints only)"
fi
cli diff "$NS" web --decrypt-age-key-file "$tmp/keys/age.txt" -o json
keep
expect_eq "$(printf '%s' "$out" | jq -r '[.objects[] | select(.name == "settings") | .fields[] | .desired, .live] | map(startswith("(secret sha256:")) | all')" \
	true "-o json: the ConfigMap's desired and live values are fingerprints"
cli sync "$NS" web --decrypt-age-key-file "$tmp/keys/age.txt"
keep
expect_eq "$rc|$(secret_value "$NS")|$(get "$NS" configmap/settings '{.data.token}')" \
	"0|$CANARY-secret|$CANARY-config" "syncd sync takes the edits back"

# === 3. a wrong key: nothing applied ========================================
before=$(rvs "$NS" secrets configmaps)
cli sync "$NS" web --decrypt-age-key-file "$tmp/keys/other.txt"
keep
expect_rc 2 "syncd sync with a wrong age key fails (exit 2)"
expect_match "^error: db\.enc\.yaml:[0-9]+: Secret db: sops: cannot decrypt: no matching age identity$" \
	"$errout" "the error names the file, the object and sops's reason"
expect_eq "$(printf '%s\n' "$errout" | grep -c 'cannot decrypt')" 2 \
	"one line per object that cannot be decrypted"
expect_eq "$(rvs "$NS" secrets configmaps)" "$before" "nothing was written (same resourceVersions)"
cli sync "$NS_BAD" web --decrypt-age-key-file "$tmp/keys/other.txt"
keep
expect_rc 2 "a wrong key on a new namespace fails too"
if absent "$NS_BAD" secret/db && absent "$NS_BAD" configmap/settings &&
	absent "$NS_BAD" configmap/plain; then
	ok "nothing is applied, not even the unencrypted object"
else
	not_ok "nothing is applied: $(kc -n "$NS_BAD" get secret,configmap -o name 2>&1 | tr '\n' ' ')"
fi
cli sync "$NS_BAD" web
keep
expect_rc 2 "encrypted objects without --decrypt-age-key-file: exit 2"
expect_match "db\.enc\.yaml:[0-9]+: Secret db: encrypted with SOPS, and the app has no decryption" \
	"$errout" "the error asks for decryption"
run_syncd render "$tmp/repo/app"
expect_match 'ENC\[AES256_GCM' "$out" "syncd render prints what Git holds (ciphertext)"
keep

# === 4. syncd run with decryption in syncd.yaml =============================
cp "$tmp/keys/age.txt" "$tmp/age-keys.txt"
cat >"$tmp/syncd.yaml" <<EOF
resync: 3s
kubeconfig: $K8S_SYNCD_KUBECONFIG
cacheDir: $tmp/runcache
listen: 127.0.0.1:0
log: {level: debug}
apps:
  - name: secrets
    source:
      repo: $REPO
      path: app
      interval: 2s
    namespace: $NS_RUN
    decryption:
      provider: sops
      ageKeyFile: age-keys.txt
      sopsBin: $K8S_BIN/sops
EOF
log=$tmp/run.log
"$SYNCD" run -c "$tmp/syncd.yaml" >"$log.out" 2>"$log" &
syncd_pid=$!
pids+=("$syncd_pid")
show_log() { tail -n 20 "$log" | cut -c 1-300 | sed 's/^/    log: /'; }
converged() {
	[ "$(secret_value "$NS_RUN")" = "$CANARY-secret" ] &&
		[ "$(get "$NS_RUN" configmap/settings '{.data.token}')" = "$CANARY-config" ]
}
if wait_for 60 converged; then
	ok "syncd run: the app with decryption.ageKeyFile converges, decrypted"
else
	not_ok "syncd run: the app with decryption converges"
	show_log
fi
kc -n "$NS_RUN" patch configmap settings --type=merge -p '{"data":{"token":"edited-by-hand-3"}}' \
	--field-manager=kubectl-edit >/dev/null
if wait_for 30 converged; then
	ok "syncd run heals a hand edit of a decrypted object"
else
	not_ok "syncd run heals a hand edit of a decrypted object"
	show_log
fi
port=$(sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$log" | tail -n 1)
api() { curl -sS --max-time 5 "http://127.0.0.1:$port$1"; }
status_doc=$(api /api/v1/apps/secrets)
expect_match '"name": *"secrets"' "$status_doc" "/api/v1/apps/secrets answers"
no_canary "/api/v1/apps/secrets" "$status_doc"
no_canary "/metrics" "$(api /metrics)"
if grep -q 'AGE-SECRET-KEY\|age1\|data key' "$log"; then
	not_ok "the log quotes no key and no sops output"
	grep 'AGE-SECRET-KEY\|age1\|data key' "$log" | head -n 3 | cut -c 1-200 | sed 's/^/    /'
else
	ok "the log quotes no key and no sops output"
fi

# === 5. an App object with decryption.secretRef =============================
app_checked=
if gitsrv_repo_start deploy 2>/dev/null; then
	mkdir -p "$work/app"
	cp "$tmp/repo/app/"*.yaml "$work/app/"
	if gitsrv_push encrypted >/dev/null && kc apply -f "$top/examples/deploy/app-crd.yaml" >/dev/null &&
		crd_applied=yes &&
		kc wait --for=condition=Established crd/apps.syncd.io --timeout=30s >/dev/null; then
		kc -n "$NS_APP" create secret generic git-creds --from-literal=username=alice \
			--from-literal=password=s3cret-pass-8c1f --from-file=ca.crt="$tmp/tls/ca.pem" >/dev/null
		kc -n "$NS_APP" create secret generic sops-age \
			--from-file=team.agekey="$tmp/keys/other.txt" \
			--from-file=main.agekey="$tmp/keys/age.txt" >/dev/null
		term_wait "$syncd_pid" 20
		cat >>"$tmp/syncd.yaml" <<EOF
appObjects:
  namespaces: [$NS_APP]
EOF
		"$SYNCD" run -c "$tmp/syncd.yaml" >>"$log.out" 2>>"$log" &
		syncd_pid=$!
		pids+=("$syncd_pid")
		cat <<EOF | kc -n "$NS_APP" apply -f - >/dev/null
apiVersion: syncd.io/v1alpha1
kind: App
metadata:
  name: vault
spec:
  source:
    repo: $repo_url
    revision: main
    path: app
    interval: 2s
    secretRef: {name: git-creds}
  decryption:
    provider: sops
    secretRef: {name: sops-age}
EOF
		app_ok() {
			[ "$(secret_value "$NS_APP")" = "$CANARY-secret" ] &&
				[ "$(get "$NS_APP" configmap/settings '{.data.token}')" = "$CANARY-config" ]
		}
		if wait_for 60 app_ok; then
			ok "an App with decryption.secretRef (identities in *.agekey keys of a Secret) converges, decrypted"
		else
			not_ok "an App with decryption.secretRef converges: $(get "$NS_APP" app/vault '{.status.conditions[?(@.type=="Ready")].message}')"
			show_log
		fi
		app_status=$(kc -n "$NS_APP" get app vault -o json)
		no_canary "the App's status" "$app_status"
		app_checked=yes
	fi
fi
[ -n "$app_checked" ] || ok "no Git server here: the App object check skipped: ${gitsrv_why:-}"

# === 6. the plaintext is nowhere ============================================
term_wait "$syncd_pid" 20
no_canary "syncd's logs" "$(cat "$log" "$log.out")"
no_canary "what the one-shot commands printed" "$(cat "$seen")"
for dir in "$tmp/cache" "$tmp/runcache"; do
	if grep -rqa -- "$CANARY" "$dir"; then
		not_ok "the plaintext is not in $dir: $(grep -rla -- "$CANARY" "$dir" | head -n 3 | tr '\n' ' ')"
	else
		ok "the plaintext is not in the Git and render cache ($(basename "$dir"))"
	fi
done
renders=$(find "$tmp/cache" "$tmp/runcache" -path '*/renders/*.json' | wc -l)
if [ "$renders" -gt 0 ] && grep -rqa 'ENC\[AES256_GCM' $(find "$tmp/cache" "$tmp/runcache" -path '*/renders/*.json'); then
	ok "the render cache holds the ciphertext ($renders renders)"
else
	not_ok "the render cache holds the ciphertext ($renders renders)"
fi
finish
