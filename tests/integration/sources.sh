#!/usr/bin/env bash
# Hostile chart repositories and registries against `syncd render --repo`
# (docs/sources.md, "Limits and hostile input"), with real servers on
# loopback (tests/helpers/chartrepo.py, tests/helpers/fake_registry.py):
# each is refused with one clear line and exit 2, bounded in time and
# memory, and leaves nothing outside the cache:
#  - a chart archive with a "../" entry, and one with a symbolic link;
#  - an index.yaml alias bomb (612 bytes, 10^9 nodes), and an endless one;
#  - a chart repository that redirects to another host;
#  - a chart archive whose digest differs from index.yaml's;
#  - a registry layer that claims 1 GiB, and one whose body never ends;
#  - a registry that redirects blob downloads to another host; the same
#    with that host allowed (--redirect-host): followed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../helpers/chartrepo.sh"

if ! command -v python3 >/dev/null 2>&1; then
	ok "python3 is not installed: hostile sources skipped"
	finish
fi
fakes=()
cleanup() {
	local p
	chartrepo_stop
	for p in "${fakes[@]+"${fakes[@]}"}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	tmp_remove
}
trap cleanup EXIT

# render ARGS...: syncd render from a source, its cache in $tmp/cache,
# bounded in time (run_syncd's timeout).
render() {
	run_syncd render --cache-dir "$tmp/cache" "$@"
}
one_line() { # NAME: stderr is one line
	expect_eq "$(printf '%s\n' "$errout" | grep -c .)" 1 "$1: one line of error"
}

# tgz DIR OUT PYTHON-ADD-LINES: a chart archive made by python's tarfile
# (helm package refuses what these tests need).
tgz() {
	python3 - "$1" "$2" <<'PYEOF'
import io, sys, tarfile
out = sys.argv[2]
with tarfile.open(out, "w:gz") as t:
    def add(name, data=b"", kind=tarfile.REGTYPE, link=""):
        i = tarfile.TarInfo(name)
        i.type = kind
        i.linkname = link
        i.size = len(data) if kind == tarfile.REGTYPE else 0
        i.mode = 0o644
        t.addfile(i, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    add("evil/Chart.yaml", b"apiVersion: v2\nname: evil\nversion: 1.0.0\n")
    add("evil/templates/cm.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    if sys.argv[1] == "dotdot":
        add("../../escaped.txt", b"owned\n")
    elif sys.argv[1] == "symlink":
        add("evil/templates/passwd.yaml", kind=tarfile.SYMTYPE, link="/etc/passwd")
PYEOF
}
# index DIR NAME VERSION FILE [DIGEST]: an index.yaml of one chart
index() {
	local digest=${5:-$(sha256sum "$1/$4" | cut -d' ' -f1)}
	cat >"$1/index.yaml" <<EOF
apiVersion: v1
entries:
  $2:
    - apiVersion: v2
      name: $2
      version: $3
      digest: $digest
      urls: [$4]
generated: "2026-01-01T00:00:00Z"
EOF
}

# === chart archives ========================================================
mkdir -p "$tmp/repo"
tgz dotdot "$tmp/repo/evil-1.0.0.tgz"
index "$tmp/repo" evil 1.0.0 evil-1.0.0.tgz
if ! chartrepo_start "$tmp/repo"; then
	not_ok "the chart repository starts"
	finish
fi
render --repo "$CHARTREPO_URL" --chart evil
expect_rc 2 "a chart archive with a ../ entry: exit 2"
expect_match 'chart evil-1\.0\.0\.tgz: entry "\.\./\.\./escaped\.txt": escapes the archive.s root' \
	"$errout" "the error names the archive and the entry"
one_line "../ entry"
if [ -z "$(find "$tmp" -name escaped.txt)" ]; then
	ok "nothing was written outside the archive's folder"
else
	not_ok "nothing was written outside the archive's folder: $(find "$tmp" -name escaped.txt)"
fi
if [ -z "$(ls -A "$tmp/cache"/*/tmp 2>/dev/null)" ] && [ -z "$(ls -A "$tmp/cache"/*/trees 2>/dev/null)" ]; then
	ok "no half-unpacked tree is left in the cache"
else
	not_ok "no half-unpacked tree is left in the cache: $(ls "$tmp/cache"/*/tmp "$tmp/cache"/*/trees)"
fi

tgz symlink "$tmp/repo/evil-1.0.0.tgz"
index "$tmp/repo" evil 1.0.0 evil-1.0.0.tgz
render --repo "$CHARTREPO_URL" --chart evil
expect_rc 2 "a chart archive with a symbolic link: exit 2"
expect_match 'entry "evil/templates/passwd\.yaml": links are not allowed' "$errout" \
	"the error names the link"

tgz plain "$tmp/repo/evil-1.0.0.tgz"
index "$tmp/repo" evil 1.0.0 evil-1.0.0.tgz "$(printf '%064d' 7)"
render --repo "$CHARTREPO_URL" --chart evil
expect_rc 2 "an archive whose digest differs from index.yaml's: exit 2"
expect_match "digest sha256:[0-9a-f]{64} differs from index.yaml's sha256:0{63}7; refused" \
	"$errout" "the error names both digests"
index "$tmp/repo" evil 1.0.0 evil-1.0.0.tgz
if [ -x "$K8S_BIN/helm" ]; then
	render --repo "$CHARTREPO_URL" --chart evil --helm-bin "$K8S_BIN/helm"
	expect_rc 0 "the same archive with its right digest renders"
	expect_match '"name": "x"|name: x' "$out" "and gives its ConfigMap"
else
	ok "helm is not built (make k8s): the good archive's render skipped"
fi
chartrepo_stop

# === index.yaml =============================================================
mkdir -p "$tmp/bomb"
if chartrepo_start "$tmp/bomb" --bomb; then
	render --repo "$CHARTREPO_URL" --chart lol
	expect_rc 2 "an index.yaml alias bomb: exit 2"
	expect_match 'index\.yaml: line [0-9]+: YAML aliases are not allowed in an index' \
		"$errout" "refused at its first alias"
	one_line "alias bomb"
	render --repo "$CHARTREPO_URL/huge" --chart lol
	expect_rc 2 "an endless index.yaml: exit 2"
	expect_match 'over [0-9]+ bytes' "$errout" "stopped at the download bound"
	chartrepo_stop
else
	not_ok "the bomb server starts"
fi

# === redirects to another host =============================================
mkdir -p "$tmp/elsewhere"
if chartrepo_start "$tmp/elsewhere" --redirect-to "http://localhost:9/"; then
	render --repo "$CHARTREPO_URL" --chart any
	expect_rc 2 "a chart repository redirecting to another host: exit 2"
	expect_match 'redirected to another host \(http://localhost:9/.*\); refused' \
		"$errout" "the error says where it was sent"
	one_line "redirect"
	expect_eq "$(chartrepo_count '^GET ')" 1 "one request, the redirect not followed"
	chartrepo_stop
else
	not_ok "the redirecting server starts"
fi
# The other host allowed (--redirect-host): followed, without credentials.
if chartrepo_start "$tmp/repo"; then
	cdn_port=$CHARTREPO_PORT cdn_log=$CHARTREPO_LOG
	if chartrepo_start "$tmp/elsewhere" --redirect-to "http://localhost:$cdn_port"; then
		printf 's3cret-pass-8c1f\n' >"$tmp/repo-password"
		canary_input "$tmp/repo-password"
		render --repo "$CHARTREPO_URL" --chart evil --username syncd \
			--password-file "$tmp/repo-password" --redirect-host localhost \
			--helm-bin /nonexistent/helm
		expect_match 'nonexistent/helm' "$errout" \
			"--redirect-host localhost: index and chart fetched from the other host (then the render)"
		expect_eq "$(chartrepo_count '^GET /(index\.yaml|evil-1\.0\.0\.tgz) 200$' "$cdn_log")" 2 \
			"the other host served index.yaml and the archive, with no credentials"
		expect_eq "$(chartrepo_count ' auth$' "$cdn_log")" 0 \
			"no Authorization header reached the other host"
		expect_eq "$(chartrepo_count '^GET .* auth$')" 2 \
			"the repository's own host got them"
	else
		not_ok "the redirecting server starts"
	fi
	chartrepo_stop
else
	not_ok "the redirect's target starts"
fi

# === registries =============================================================
# fake NAME ARGS...: a fake registry; its port in $fake_port.
fake() {
	local log=$tmp/fake-$1.out
	shift
	mkdir -p "$tmp/fake-root"
	python3 tests/helpers/fake_registry.py --root "$tmp/fake-root" "$@" >"$log" 2>&1 &
	fakes+=($!)
	for _ in $(seq 50); do
		fake_port=$(head -n 1 "$log" 2>/dev/null | grep -o '[0-9]*$')
		[ -n "$fake_port" ] && return 0
		sleep 0.1
	done
	return 1
}
if fake huge --huge-layer; then
	render --repo "oci://127.0.0.1:$fake_port/team/app" --revision huge --plain-http
	expect_rc 2 "a layer that claims 1 GiB: exit 2"
	expect_match 'is 1073741824 bytes, over the [0-9]+ left of the artifact.s limit; refused' \
		"$errout" "refused before its download, with its size"
	render --repo "oci://127.0.0.1:$fake_port/team/app" --revision endless --plain-http
	expect_rc 2 "a layer whose body never ends: exit 2"
	expect_match 'over [0-9]+ bytes' "$errout" "stopped at its bound"
else
	not_ok "the fake registry starts"
fi
# An artifact of one titled file, its blob behind a redirect elsewhere.
if fake redirect --redirect-blobs "http://localhost:9"; then
	python3 - "$tmp/fake-root" <<'PYEOF'
import hashlib, json, os, sys
root = os.path.join(sys.argv[1], "team/site")
os.makedirs(root + "/manifests", exist_ok=True)
os.makedirs(root + "/blobs", exist_ok=True)
def blob(data):
    d = "sha256:" + hashlib.sha256(data).hexdigest()
    open(os.path.join(root, "blobs", d), "wb").write(data)
    return d, len(data)
cm = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: site}\n"
cd, cs = blob(b"{}")
ld, ls = blob(cm)
m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
     "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": cd, "size": cs},
     "layers": [{"mediaType": "application/yaml", "digest": ld, "size": ls,
                 "annotations": {"org.opencontainers.image.title": "cm.yaml"}}]}
open(os.path.join(root, "manifests", "v1"), "w").write(json.dumps(m))
PYEOF
	render --repo "oci://127.0.0.1:$fake_port/team/site" --revision v1 --plain-http
	expect_rc 2 "a registry redirecting a blob to another host: exit 2"
	expect_match 'redirected to another host \(http://localhost:9/.*\); refused' \
		"$errout" "the error says where it was sent"
else
	not_ok "the redirecting fake registry starts"
fi
if fake plain; then
	render --repo "oci://127.0.0.1:$fake_port/team/site" --revision v1 --plain-http
	expect_rc 0 "the same artifact from a registry that serves its blobs renders"
	expect_match 'site' "$out" "its titled file is the manifest rendered"
	# By digest, a cached artifact costs no request at all.
	pinned=sha256:$(sha256sum "$tmp/fake-root/team/site/manifests/v1" | cut -d' ' -f1)
	before=$(curl -sf "http://127.0.0.1:$fake_port/_stats" | jq 'add // 0')
	render --repo "oci://127.0.0.1:$fake_port/team/site" --revision "$pinned" --plain-http
	expect_rc 0 "by digest: renders"
	after=$(curl -sf "http://127.0.0.1:$fake_port/_stats" | jq 'add // 0')
	expect_eq "$((after - before))" 0 \
		"by digest, from the cache: no request to the registry"
	# A registry whose blobs live on another host (its "CDN": the plain
	# one, named localhost), allowed by name.
	cdn=$fake_port
	if fake cdn --redirect-blobs "http://localhost:$cdn" --basic "syncd:s3cret-pass-8c1f"; then
		printf 's3cret-pass-8c1f\n' >"$tmp/registry-password"
		canary_input "$tmp/registry-password"
		rm -rf "$tmp/cache"
		render --repo "oci://127.0.0.1:$fake_port/team/site" --revision v1 --plain-http \
			--username syncd --password-file "$tmp/registry-password" \
			--redirect-host localhost
		expect_rc 0 "--redirect-host localhost: the blob is fetched from the other host"
		expect_match 'site' "$out" "and rendered"
		stats=$(curl -sf "http://127.0.0.1:$cdn/_stats")
		expect_eq "$(jq -r '."GET blob-redirected" // 0' <<<"$stats")" 1 \
			"the other host served the blob once"
	else
		not_ok "the fake registry with a CDN starts"
	fi
fi
finish
