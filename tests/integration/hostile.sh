#!/usr/bin/env bash
# Hostile repositories and renders, each bounded and refused with one line
# that names the file or object, the cause and the limit:
#  1. `syncd render --repo` on local repositories made here (objects
#     written directly, so nothing big ever lands on disk): a file over the
#     16 MiB file limit (64 MiB of zeros; 2 GiB with HOSTILE_BIG=1), a
#     directory of 1,000,000 files, 10,000 nested directories, symbolic
#     link loops, a Git LFS pointer, 100,000 objects, a .gitmodules that
#     points at a repository that does not exist (never contacted, the
#     app renders its own files). No checkout is left half-written (no
#     .tmp-* under trees/, only the good trees);
#  2. an exec plugin that prints 1 GiB (cut at the 64 MiB cap, peak RSS
#     far below 1 GiB) and one that never exits (killed at its timeout,
#     its process group gone);
#  3. `syncd run` against kube-emu: a good commit is applied, then each
#     hostile commit in turn fails the pass with its line in the app's
#     error while the app stays on the good revision (revision,
#     lastAppliedRevision) and its objects are neither changed nor
#     deleted; a good commit again converges; no half-written checkout
#     is left once syncd has stopped.
# Loopback only; every wait is bounded; everything started is stopped.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"
. "$(dirname "${BASH_SOURCE[0]}")/git/servers.sh"

need_tools "hostile repositories" curl jq git python3

export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top/tests/integration/git/lsan.supp"
export HOME="$tmp/home" XDG_CACHE_HOME="$tmp/xdg-cache"
export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
export GIT_AUTHOR_NAME=Tester GIT_AUTHOR_EMAIL=tester@example.com
export GIT_COMMITTER_NAME=Tester GIT_COMMITTER_EMAIL=tester@example.com
mkdir -p "$HOME"
timef=$(command -v time 2>/dev/null || true)
[ -x /usr/bin/time ] && timef=/usr/bin/time

# --- repositories --------------------------------------------------------
# objs GITDIR PARENT KIND: write the objects of one hostile commit as loose
# objects (and a pack for the big file) and print the commit id. The app
# lives at app/; each commit also holds app/cm.yaml (ConfigMap h-cm with
# data.value = KIND).
objs() {
	python3 - "$@" <<'EOF'
import hashlib, os, subprocess, sys, zlib
gd, parent, kind = sys.argv[1], sys.argv[2], sys.argv[3]

def put(t, data):
    raw = b'%s %d\0' % (t.encode(), len(data)) + data
    h = hashlib.sha1(raw).hexdigest()
    d = os.path.join(gd, 'objects', h[:2])
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, h[2:])
    if not os.path.exists(p):
        with open(p, 'wb') as f:
            f.write(zlib.compress(raw, 1))
    return h

def tree(entries):  # [(mode, name, hex)]
    key = lambda e: e[1] + ('/' if e[0] == '40000' else '')
    return put('tree', b''.join(b'%s %s\0' % (m.encode(), n.encode()) +
                                bytes.fromhex(h)
                                for m, n, h in sorted(entries, key=key)))

def zeros(n):  # a blob of n zero bytes, streamed into a pack
    src = 'blob\nmark :1\ndata %d\n' % n
    marks = os.path.join(gd, 'hostile-marks')
    p = subprocess.Popen(['git', '--git-dir', gd, 'fast-import', '--quiet',
                          '--export-marks=' + marks],
                         stdin=subprocess.PIPE)
    p.stdin.write(src.encode())
    chunk = bytes(1 << 20)
    left = n
    while left:
        k = min(left, len(chunk))
        p.stdin.write(chunk[:k])
        left -= k
    p.stdin.write(b'\n')
    p.communicate()
    with open(marks) as f:
        return f.read().split()[1]

cm = put('blob', b'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: h-cm\n'
         b'data:\n  value: "%s"\n' % kind.encode())
app = [('100644', 'cm.yaml', cm)]
top = []
if kind == 'bigfile':
    n = (2 << 30) if os.environ.get('HOSTILE_BIG') == '1' else (64 << 20)
    app.append(('100644', 'big.bin', zeros(n)))
elif kind == 'million':
    b = put('blob', b'x\n')
    t = put('tree', b''.join(b'100644 f%07d.txt\0' % i + bytes.fromhex(b)
                             for i in range(1000000)))
    app.append(('40000', 'many', t))
elif kind == 'deep':
    t = tree([('100644', 'x.txt', put('blob', b'x\n'))])
    for i in range(10000):
        t = tree([('40000', 'd', t)])
    app.append(('40000', 'd', t))
elif kind == 'loop':
    app.append(('120000', 'a.yaml', put('blob', b'b.yaml')))
    app.append(('120000', 'b.yaml', put('blob', b'a.yaml')))
elif kind == 'lfs':
    app.append(('100644', 'lfs.yaml', put('blob',
        b'version https://git-lfs.github.com/spec/v1\n'
        b'oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n'
        b'size 12345\n')))
elif kind == 'objects':
    app.append(('100644', 'many.yaml', put('blob', b''.join(
        b'---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m%d\n' % i
        for i in range(100000)))))
elif kind == 'modules':
    # In-root links (to the directory itself and to its parent) and a
    # submodule whose URL is a trap: neither may loop nor be followed.
    app.append(('120000', 'self', put('blob', b'.')))
    app.append(('40000', 'sub', tree([('120000', 'up', put('blob', b'..'))])))
    app.append(('160000', 'vendor', 'ab' * 20))
    top.append(('100644', '.gitmodules', put('blob',
        b'[submodule "vendor"]\n\tpath = app/vendor\n'
        b'\turl = ' + os.environ['TRAP'].encode() + b'\n')))
top.append(('40000', 'app', tree(app)))
c = b'tree %s\n' % tree(top).encode()
if parent != '-':
    c += b'parent %s\n' % parent.encode()
c += b'author T <t@e> 0 +0000\ncommitter T <t@e> 0 +0000\n\n%s\n' % kind.encode()
print(put('commit', c))
EOF
}
# Nothing may exist here: a fetch of it would fail loudly, a read of it
# would need it to exist.
export TRAP="file://$tmp/trap/never.git"
# hostile KIND: a repository $tmp/KIND.git whose main is one commit of KIND.
hostile() {
	git init -q --bare "$tmp/$1.git" &&
		git -C "$tmp/$1.git" symbolic-ref HEAD refs/heads/main &&
		git -C "$tmp/$1.git" update-ref refs/heads/main \
			"$(objs "$tmp/$1.git" - "$1")"
}
# no_half_trees CACHE WHAT: trees/ of every cache under CACHE holds no
# .tmp-* leftovers and nothing but tree ids.
no_half_trees() {
	local bad
	bad=$(find "$1" -path '*/trees/*' -maxdepth 3 2>/dev/null |
		grep -vE '/trees/[0-9a-f]{40}$' | head -3)
	expect_eq "$bad" "" "$2: no half-written checkout under trees/"
}
# render_refused KIND REGEX: `syncd render --repo` exits 2 with one line.
render_refused() {
	local cache="$tmp/cache-$1"
	run_syncd render --repo "file://$tmp/$1.git" --path app \
		--cache-dir "$cache"
	expect_rc 2 "$1: syncd render exits 2"
	expect_eq "$(printf '%s\n' "$errout" | wc -l)" 1 "$1: one line"
	expect_match "^error: $2" "$errout" "$1: the line names the cause"
	no_half_trees "$cache" "$1"
	expect_eq "$out" "" "$1: nothing rendered"
}

# === 1. syncd render on hostile repositories =============================
hostile bigfile
if [ "${HOSTILE_BIG:-}" = 1 ]; then big=2147483648; else big=67108864; fi
if [ -n "$timef" ]; then
	"$timef" -f %M -o "$tmp/rss" "$SYNCD" render --repo "file://$tmp/bigfile.git" \
		--path app --cache-dir "$tmp/cache-bigfile" >/dev/null 2>"$tmp/big.err"
	rss=$(tail -n 1 "$tmp/rss")
	[ "$rss" -lt 200000 ] && ok "bigfile: peak RSS ${rss} KiB, far below the file ($big bytes)" ||
		not_ok "bigfile: peak RSS ${rss} KiB for a file of $big bytes"
fi
render_refused bigfile "app/big\.bin: file of $big bytes in commit [0-9a-f]{40} of file://.*/bigfile\.git, over the limit of 16777216 bytes$"
expect_eq "$(find "$tmp/cache-bigfile" -path '*/objects/*' -type f -size +10M | wc -l)" 0 \
	"bigfile: the big file was never fetched into the cache"

hostile million
render_refused million "many: more than 20000 files and directories in tree [0-9a-f]{40} of commit [0-9a-f]{40} of file://.*/million\.git$"
expect_eq "$(find "$tmp/cache-million" -name 'f*.txt' | wc -l)" 0 \
	"million: none of its files written"

hostile deep
render_refused deep "app/d/d/d.*\.\.\.: directories nested deeper than 1024 in commit [0-9a-f]{40} of file://.*/deep\.git$"

hostile loop
render_refused loop "a\.yaml: symbolic link loop \(a link that leads back to itself\) in commit [0-9a-f]{40} of file://.*/loop\.git$"

hostile lfs
render_refused lfs "lfs\.yaml: a Git LFS pointer, not the file: LFS content is not fetched \(commit the manifest itself\)$"

hostile objects
render_refused objects "app: 100001 objects rendered, over the limit of 25000 objects per app$"

hostile modules
run_syncd render --repo "file://$tmp/modules.git" --path app \
	--cache-dir "$tmp/cache-modules" -o json
expect_rc 0 "modules: syncd render exits 0"
expect_eq "$(printf '%s' "$out" | jq -r '[.items[].metadata.name] | join(",")')" \
	"h-cm" "modules: the app renders its own files once (links to . and .. do not loop)"
expect_eq "$(ls "$tmp/cache-modules/"*/trees/*/vendor 2>/dev/null | wc -l)" 0 \
	"modules: the submodule is left out of the checkout"
[ ! -e "$tmp/trap" ] && ok "modules: the submodule's URL is never contacted" ||
	not_ok "modules: something touched $tmp/trap"

# The directory renderer on a local tree of links that multiply the walk.
mkdir -p "$tmp/fan/d0"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fan\n' >"$tmp/fan/cm.yaml"
for i in $(seq 0 29); do
	mkdir -p "$tmp/fan/d$((i + 1))"
	ln -s "../d$((i + 1))" "$tmp/fan/d$i/a"
	ln -s "../d$((i + 1))" "$tmp/fan/d$i/b"
done
run_syncd render "$tmp/fan"
expect_rc 2 "fan of links: syncd render exits 2 (2^30 paths are never walked)"
expect_match "more than 100000 files and directories walked" "$errout" \
	"fan of links: the line names the walk limit"

# === 2. exec plugins that print too much or never exit ===================
mkdir -p "$tmp/plug/app"
cat >"$tmp/plug/flood" <<'EOF'
#!/bin/sh
head -c 1073741824 /dev/zero | tr '\0' 'a'
EOF
cat >"$tmp/plug/hang" <<EOF
#!/bin/sh
echo \$\$ >"$tmp/plug/pgid"
sleep 300 &
sleep 300
EOF
chmod +x "$tmp/plug/flood" "$tmp/plug/hang"
if [ -n "$timef" ]; then
	"$timef" -f %M -o "$tmp/rss" timeout 120 "$SYNCD" render "$tmp/plug/app" \
		--renderer exec --plugin-cmd "$tmp/plug/flood" >/dev/null 2>"$tmp/.err"
	rc=$(head -n 1 "$tmp/rss" | sed -n 's/.*status \([0-9]*\).*/\1/p')
	rss=$(tail -n 1 "$tmp/rss")
	errout=$(cat "$tmp/.err")
	expect_eq "${rc:-0}" 2 "flood: syncd render exits 2"
	expect_match "^error: plugin flood .*printed more than 67108864 bytes; refusing a truncated render$" \
		"$errout" "flood: cut at the 64 MiB cap, one line"
	[ "$rss" -lt 262144 ] && ok "flood: peak RSS ${rss} KiB, far below 1 GiB" ||
		not_ok "flood: peak RSS ${rss} KiB"
fi
run_syncd render "$tmp/plug/app" --renderer exec --plugin-cmd "$tmp/plug/hang" \
	--render-timeout 1s
expect_rc 2 "hang: syncd render exits 2"
expect_match "^error: plugin hang .*timed out after 1000 ms and was killed" \
	"$errout" "hang: killed at its timeout, one line"
# group_gone PGID: no process of the group is alive (a zombie that init has
# still to reap was killed already).
group_gone() {
	local p
	for p in $(pgrep -g "$1"); do
		[ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" = Z ] || return 1
	done
}
pg=$(cat "$tmp/plug/pgid" 2>/dev/null)
if [ -n "$pg" ] && wait_for 10 group_gone "$pg"; then
	ok "hang: its process group is gone"
else
	not_ok "hang: its process group is gone: $(pgrep -g "${pg:-0}" | wc -l) left"
fi

# === 3. syncd run keeps the last good revision ===========================
emu_start_tls
api POST /api/v1/namespaces application/json \
	'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"h"}}'
git init -q --bare "$tmp/run.git"
git -C "$tmp/run.git" symbolic-ref HEAD refs/heads/main
good=$(objs "$tmp/run.git" - good)
git -C "$tmp/run.git" update-ref refs/heads/main "$good"
port=$(gitsrv_free_port)
cat >"$tmp/run.yaml" <<EOF
resync: 1s
workers: 1
kubeconfig: $tmp/kc
cacheDir: $tmp/cache-run
listen: 127.0.0.1:$port
log:
  format: logfmt
  level: info
apps:
  - name: h
    source:
      repo: file://$tmp/run.git
      revision: main
      path: app
      interval: 1s
    namespace: h
    prune: true
EOF
"$SYNCD" run -c "$tmp/run.yaml" >"$tmp/run.out" 2>"$tmp/run.log" &
syncd_pid=$!
pids+=("$syncd_pid")
app_doc() { curl -sS --max-time 5 "http://127.0.0.1:$port/api/v1/apps/h" 2>/dev/null; }
cm_field() { # JQ: of the ConfigMap h/h-cm
	api GET /api/v1/namespaces/h/configmaps/h-cm
	printf '%s' "$body" | jq -r "$1"
}
applied() { [ "$(app_doc | jq -r .status.lastAppliedRevision)" = "$1" ]; }
if wait_for 60 applied "$good" && [ "$(cm_field .data.value)" = good ]; then
	ok "run: the good commit is applied"
else
	not_ok "run: the good commit is applied"
	tail -n 5 "$tmp/run.log"
fi
# Each hostile commit in turn, on top of a good one applied just before
# (so that the failures do not add up to a long backoff).
for kind in bigfile million deep loop lfs objects; do
	good=$(objs "$tmp/run.git" "$good" "good-$kind")
	git -C "$tmp/run.git" update-ref refs/heads/main "$good"
	if ! wait_for 60 applied "$good"; then
		not_ok "run: $kind: the good commit before it is applied"
		continue
	fi
	rv=$(cm_field .metadata.resourceVersion)
	c=$(objs "$tmp/run.git" "$good" "$kind")
	git -C "$tmp/run.git" update-ref refs/heads/main "$c"
	case $kind in
	bigfile) re="app/big\.bin: file of $big bytes" ;;
	million) re="many: more than 20000 files" ;;
	deep) re="directories nested deeper than 1024" ;;
	loop) re="a\.yaml: symbolic link loop" ;;
	lfs) re="lfs\.yaml: a Git LFS pointer" ;;
	objects) re="100001 objects rendered, over the limit of 25000" ;;
	esac
	failing() {
		app_doc | jq -r '(.error // "") + " " + (.sourceError // "")' |
			grep -qE -- "$re"
	}
	if wait_for 60 failing; then
		ok "run: $kind: the app's error names the cause"
	else
		not_ok "run: $kind: the app's error names the cause: $(app_doc | jq -c '[.error, .sourceError]')"
	fi
	doc=$(app_doc)
	expect_eq "$(printf '%s' "$doc" | jq -r .revision) $(printf '%s' "$doc" | jq -r .status.lastAppliedRevision)" \
		"$good $good" "run: $kind: still on the good revision (revision, lastAppliedRevision)"
	expect_eq "$(cm_field .data.value) $(cm_field .metadata.resourceVersion)" \
		"good-$kind $rv" "run: $kind: the good revision's object is unchanged"
done
kill -0 "$syncd_pid" 2>/dev/null && ok "run: syncd is still running" ||
	not_ok "run: syncd died"
api GET /api/v1/namespaces/h/configmaps
expect_eq "$(printf '%s' "$body" | jq '[.items[] | select(.metadata.name | test("^m[0-9]"))] | length')" \
	0 "run: none of the 100,000 objects was created"
again=$(objs "$tmp/run.git" "$good" again)
git -C "$tmp/run.git" update-ref refs/heads/main "$again"
if wait_for 60 applied "$again" && [ "$(cm_field .data.value)" = again ]; then
	ok "run: a good commit again converges"
else
	not_ok "run: a good commit again converges: $(app_doc | jq -c '{revision, error}')"
fi
if term_wait "$syncd_pid" 30; then
	expect_eq "$rc" 0 "run: SIGTERM, syncd exits 0"
else
	not_ok "run: syncd did not exit on SIGTERM"
fi
# Checked once syncd has stopped: a poll may be writing a checkout.
no_half_trees "$tmp/cache-run" "run: after the hostile commits"
finish
