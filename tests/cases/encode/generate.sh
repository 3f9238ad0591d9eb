#!/usr/bin/env bash
# Regenerate the expected outputs of every case from its input.json, with
# kubectl as the oracle (see README.md). Needs kubectl, no cluster.
#
#   tests/cases/encode/generate.sh [case...]      (default: every case)
set -eu
cd "$(dirname "$0")"

kubectl_print() { # input format
	# A merge patch with {} changes nothing; --local keeps it client-side.
	kubectl patch --local -f "$1" --type merge -p '{}' -o "$2"
}

cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
	for d in */; do
		cases+=("${d%/}")
	done
fi

echo "kubectl $(kubectl version --client 2>/dev/null | head -n 1)"
for c in "${cases[@]}"; do
	for fmt in yaml json; do
		kubectl_print "$c/input.json" "$fmt" > "$c/expected.$fmt.tmp"
		# kubectl's map order is random where go-yaml's key order is not
		# transitive; such a case would have no single expected output.
		for _ in 1 2 3; do
			if ! kubectl_print "$c/input.json" "$fmt" |
				cmp -s - "$c/expected.$fmt.tmp"; then
				echo "$c: kubectl -o $fmt is not deterministic" >&2
				rm -f "$c/expected.$fmt.tmp"
				exit 1
			fi
		done
		mv "$c/expected.$fmt.tmp" "$c/expected.$fmt"
	done
	echo "$c"
done
