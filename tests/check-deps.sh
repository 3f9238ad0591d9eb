#!/usr/bin/env bash
# make check-deps: the rooms' one-way doors (docs/internals/architecture.md).
#
#   tests/check-deps.sh [ROOT]       check the tree at ROOT (default: .)
#   tests/check-deps.sh --self-test  show that the check fails on planted
#                                    wrong includes (a copy in a temporary
#                                    folder; the tree is not touched)
#
# Each product folder (a room) may include its own headers, and from the
# rooms below it only their public header; a folder outside the table,
# or an include of a room not allowed, is an error naming the file, the
# line and the include. Tests and benchmarks may include anything.
set -euo pipefail

# room: "PUBLIC ALLOWED...": its public header ("*" for util, one header
# per primitive; "-" for the programs, which nobody includes), then the
# rooms it may include, lowest first.
declare -A ROOMS=(
	[util]="*"
	[diff]="diff/diff.h util"
	[health]="health/health.h util"
	[renderers]="renderers/render.h util diff"
	[kube]="kube/kube.h util diff renderers"
	[source]="source/source.h util"
	[app]="app/app.h util diff health renderers kube source"
	[controller]="controller/controller.h util diff health renderers kube source app"
	[syncd]="- util diff health renderers kube source app controller"
	[kube-emu]="- util diff health renderers"
)
declare -A ALLOWED PUBLIC
for room in "${!ROOMS[@]}"; do
	read -r "PUBLIC[$room]" "ALLOWED[$room]" <<<"${ROOMS[$room]}"
done

public_of() { [ "${PUBLIC[$1]}" = - ] && echo nothing || echo "only ${PUBLIC[$1]}"; }

check() {
	local root=$1 bad=0 room file n inc dep allowed
	for room in "${!ALLOWED[@]}"; do
		[ -d "$root/$room" ] || { echo "check-deps: room $room/ is missing"; bad=1; continue; }
		allowed=" ${ALLOWED[$room]} "
		while IFS= read -r file; do
			while IFS=: read -r n inc; do
				inc=${inc#*\"}
				inc=${inc%%\"*}
				dep=${inc%%/*}
				[ "$dep" = "$room" ] && continue
				if [ -z "${ALLOWED[$dep]+x}" ] && [ "$dep" != "$inc" ]; then
					echo "check-deps: ${file#"$root"/}:$n: includes \"$inc\": $dep/ is not a room $room/ may use"
					bad=1
				elif [ "$dep" = "$inc" ]; then
					echo "check-deps: ${file#"$root"/}:$n: includes \"$inc\": name headers from the top of the tree (room/header.h)"
					bad=1
				elif [[ $allowed != *" $dep "* ]]; then
					echo "check-deps: ${file#"$root"/}:$n: includes \"$inc\": $room/ may not use $dep/ (allowed: ${ALLOWED[$room]:-nothing})"
					bad=1
				elif [ "${PUBLIC[$dep]}" != "*" ] && [ "$inc" != "${PUBLIC[$dep]}" ]; then
					echo "check-deps: ${file#"$root"/}:$n: includes \"$inc\": $(public_of "$dep") of $dep/ is public"
					bad=1
				fi
			done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
		done < <(find "$root/$room" -maxdepth 1 -name '*.[ch]' | sort)
	done
	# Every product source folder is a room of the table.
	for dir in "$root"/*/; do
		room=$(basename "$dir")
		case $room in tests | bench | examples | docs | build* | .*) continue ;; esac
		if compgen -G "$dir*.[ch]" >/dev/null && [ -z "${ALLOWED[$room]+x}" ]; then
			echo "check-deps: $room/ holds C sources but is not in the table of rooms (tests/check-deps.sh)"
			bad=1
		fi
	done
	return $bad
}

self_test() {
	local here tmp out fails=0
	here=$(cd "$(dirname "$0")/.." && pwd)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	for room in "${!ALLOWED[@]}"; do
		mkdir -p "$tmp/$room"
		cp "$here/$room"/*.[ch] "$tmp/$room/"
	done
	if ! out=$(check "$tmp"); then
		echo "check-deps self-test: the copy of the tree fails before any plant:"
		echo "$out"
		return 1
	fi
	# plant FILE INCLUDE WANT: the check fails naming FILE, INCLUDE and WANT.
	plant() {
		local file=$1 inc=$2 want=$3
		cp "$tmp/$file" "$tmp/$file.orig"
		printf '#include "%s"\n' "$inc" >>"$tmp/$file"
		if out=$(check "$tmp"); then
			echo "not ok - check-deps self-test: $file including $inc passed"
			fails=1
		elif [[ $out != *"$file:"*"$inc"*"$want"* ]]; then
			echo "not ok - check-deps self-test: $file including $inc: no \"$want\" in: $out"
			fails=1
		else
			echo "ok - check-deps fails on $file including $inc"
		fi
		mv "$tmp/$file.orig" "$tmp/$file"
	}
	plant diff/compare.c controller/controller.h "diff/ may not use controller/"
	plant health/rules.c diff/diff.h "health/ may not use diff/"
	plant app/sync.c health/internal.h "only health/health.h of health/ is public"
	plant kube/http.c app/app.h "kube/ may not use app/"
	plant app/sync.c controller/internal.h "app/ may not use controller/"
	plant syncd/cmd_run.c controller/queue.h "only controller/controller.h of controller/ is public"
	plant kube-emu/store.c kube/kube.h "kube-emu/ may not use kube/"
	plant util/buf.c tests/helpers/emu.h "tests/ is not a room"
	mkdir -p "$tmp/stray"
	echo 'int stray;' >"$tmp/stray/stray.c"
	if out=$(check "$tmp") || [[ $out != *"stray/ holds C sources"* ]]; then
		echo "not ok - check-deps self-test: a folder outside the table passed"
		fails=1
	else
		echo "ok - check-deps fails on a source folder outside the table"
	fi
	return $fails
}

if [ "${1:-}" = --self-test ]; then
	self_test
else
	check "${1:-.}"
	echo "check-deps: every room includes only what it may"
fi
