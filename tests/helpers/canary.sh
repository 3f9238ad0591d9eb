# The secrets canary: every secret a test plants (API tokens, client keys,
# Git passwords and tokens, registry passwords, webhook secrets, Secret
# data, SOPS plaintext) is registered here, and what the tests produced
# (syncd's output and logs, saved reports, metric scrapes, status objects,
# Events, cache folders) is searched for each of them, as written and as
# base64. tests/run.sh keeps one registry for the whole suite
# (SYNCD_CANARY_DIR) and ends with one line: values planted, files
# scanned, hits (there must be none). Source it (bash), then:
#
#   canary_plant NAME VALUE   registers a secret (8 bytes or more; the
#                             name says what it is, the value is never
#                             printed)
#   canary_input PATH...      files or folders that hold planted secrets
#                             as input (token files, kubeconfigs, the test
#                             tools' credential stores), existing yet or
#                             not: never scanned
#   canary_scan WHAT PATH...  searches every other file under the PATHs;
#                             prints "not ok - secrets canary: NAME in
#                             FILE" per hit and returns 1 on any
#   canary_check WHAT TEXT    the same for TEXT (a response, an output)
#
# Without SYNCD_CANARY_DIR (a script run alone) the registry is the
# script's own, in a temporary folder removed at exit by its caller.

# One registry per suite run (tests/run.sh exports it) or per script.
if [ -z "${SYNCD_CANARY_DIR:-}" ]; then
	SYNCD_CANARY_DIR=$(mktemp -d "${TMPDIR:-/tmp}/syncd-canary.XXXXXX")
	canary_own_dir=$SYNCD_CANARY_DIR
fi
export SYNCD_CANARY_DIR

canary_dir() {
	mkdir -p "$SYNCD_CANARY_DIR"
	touch "$SYNCD_CANARY_DIR/planted" "$SYNCD_CANARY_DIR/inputs" \
		"$SYNCD_CANARY_DIR/patterns" "$SYNCD_CANARY_DIR/scanned"
	echo "$SYNCD_CANARY_DIR"
}

# canary_b64 VALUE: VALUE base64-encoded from a 3-byte boundary (as in a
# Secret's data), its last partial group dropped, so that the form is
# found inside any longer encoding that starts with VALUE.
canary_b64() {
	local v=$1 n
	n=$((${#v} - ${#v} % 3))
	printf '%s' "${v:0:n}" | base64 -w0
}

canary_plant() {
	local name=$1 value=$2 d
	[ "${#value}" -ge 8 ] || return 0
	d=$(canary_dir)
	grep -qxF -- "$value" "$d/patterns" 2>/dev/null && return 0
	printf '%s\t%s\t%s\n' "$name" "$value" "$(canary_b64 "$value")" >>"$d/planted"
	{
		printf '%s\n' "$value"
		canary_b64 "$value"
		echo
	} >>"$d/patterns"
}

canary_input() {
	local d p
	d=$(canary_dir)
	for p in "$@"; do
		realpath -m "$p" >>"$d/inputs"
	done
}

# canary_name MATCH: the name of the secret MATCH is (a form of).
canary_name() {
	awk -F'\t' -v m="$1" 'index(m, $2) || ($3 != "" && index(m, $3)) { print $1; exit }' \
		"$SYNCD_CANARY_DIR/planted"
}

# canary_is_input FILE: FILE is, or is under, a registered input.
canary_is_input() {
	local f p
	f=$(realpath "$1")
	while IFS= read -r p; do
		case "$f" in
		"$p" | "$p"/*) return 0 ;;
		esac
	done <"$SYNCD_CANARY_DIR/inputs"
	return 1
}

canary_scan() {
	local what=$1 d f hit bad=0 n
	shift
	d=$(canary_dir)
	# Files searched: every file but the inputs.
	local prune=() roots=() p
	while IFS= read -r p; do
		prune+=(-path "$p" -prune -o)
	done <"$d/inputs"
	for p in "$@"; do
		[ -e "$p" ] && roots+=("$(realpath "$p")")
	done
	n=0
	[ ${#roots[@]} -gt 0 ] &&
		n=$(find "${roots[@]}" "${prune[@]}" -type f -print 2>/dev/null | wc -l)
	if [ -s "$d/patterns" ]; then
		while IFS= read -r -d '' f; do
			canary_is_input "$f" && continue
			hit=$(grep -aoF -m 1 -f "$d/patterns" -- "$f" | head -n 1)
			echo "not ok - secrets canary ($what): $(canary_name "$hit") in $f"
			bad=1
		done < <(grep -rlaFZ -f "$d/patterns" -- "$@" 2>/dev/null)
	fi
	echo "$n $bad" >>"$d/scanned"
	return "$bad"
}

canary_check() {
	local what=$1 d hit
	d=$(canary_dir)
	[ -s "$d/patterns" ] || return 0
	hit=$(printf '%s' "$2" | grep -aoF -m 1 -f "$d/patterns" | head -n 1)
	echo "1 $([ -n "$hit" ] && echo 1 || echo 0)" >>"$d/scanned"
	if [ -n "$hit" ]; then
		echo "not ok - secrets canary ($what): $(canary_name "$hit")"
		return 1
	fi
}
