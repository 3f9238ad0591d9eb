#!/bin/sh
# An exec plugin for the tests: prints one ConfigMap per *.env file of
# the app directory (KEY=VALUE lines become data), named after the file,
# plus one that records what syncd told the plugin. `fail` as the first
# argument makes it fail the way a real tool does.
set -eu
if [ "${1:-}" = fail ]; then
	echo "plugin: cannot render: values for $SYNCD_APP_NAME are missing" >&2
	echo "plugin: second line of the explanation" >&2
	exit 4
fi
if [ "${1:-}" = garbage ]; then
	echo "this is: not: yaml: ["
	exit 0
fi
if [ "${1:-}" = nokind ]; then
	echo '{"apiVersion": "v1", "metadata": {"name": "x"}}'
	exit 0
fi
if [ "${1:-}" = slow ]; then
	sleep 30
fi
cat <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: plugin-env
data:
  app: "$SYNCD_APP_NAME"
  namespace: "$SYNCD_APP_NAMESPACE"
  revision: "$SYNCD_REVISION"
  path: "$SYNCD_PATH"
  cwd: "$(basename "$PWD")"
  region: "${REGION:-unset}"
  secret: "${SECRET_TOKEN:-not inherited}"
  vars: "$(env | cut -d= -f1 | grep -v '^PWD$' | grep -v '^SHLVL$' | grep -v '^_$' | sort | tr '\n' ' ')"
  args: "$*"
YAML
for f in *.env; do
	[ -f "$f" ] || continue
	echo '---'
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n' "${f%.env}"
	while IFS='=' read -r k v; do
		printf '  %s: "%s"\n' "$k" "$v"
	done <"$f"
done
