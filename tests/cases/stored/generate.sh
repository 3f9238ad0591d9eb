#!/usr/bin/env bash
# What kube-apiserver 1.36 stores for each object of declared.yaml,
# asked of the real server: starts a bare control plane of `make k8s`
# (etcd and kube-apiserver, no controllers, so nothing changes an object
# after its create), creates every object in file order, reads each back
# and writes one case per object to OUTDIR (default: this folder):
#
#   <kind>-<name>.json  {"kind", "apiVersion", "declared": the object as
#                        written, "stored": as read back, less the
#                        metadata every write sets (uid, resourceVersion,
#                        creationTimestamp, generation, managedFields),
#                        "outside": JSON pointers to what the object alone
#                        does not decide (cluster IPs, node ports, a Job's
#                        generated selector, a Pod's admission; what a
#                        registry's strategy or an admission plugin sets
#                        and nobody owns: a Namespace's finalizer and
#                        phase, a volume's protection finalizer and
#                        phase, a CRD's status), deepest first}
#
# diff_stored_defaults() must reproduce every case (tests/unit/diff/
# stored.c), and kube-emu must store the same (tests/kube-emu/stored.c);
# tests/real/stored.sh runs this again and fails when the server no
# longer stores what the cases say.
#
#   bash tests/cases/stored/generate.sh [OUTDIR]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/../../.."
out=${1:-$here}
. tests/helpers/k8s.sh

k8s_available || { echo "generate.sh: the real control plane is not built (make k8s)" >&2; exit 1; }
unset K8S_ENV
work=$(mktemp -d "${TMPDIR:-/tmp}/syncd-stored.XXXXXX")
# (k8s_stop's last wait reports the KILL it may need: not a failure here)
trap 'set +e; k8s_stop; rm -rf "$work"' EXIT
k8s_start --bare >/dev/null

kc create namespace stored >/dev/null
kc -n stored create serviceaccount default >/dev/null
# The objects as kubectl sends them (the file, as JSON), then as stored.
kc create --dry-run=client -f "$here/declared.yaml" -o json |
	jq -c 'if .kind == "List" then .items[] else . end' >"$work/declared.jsonl"
kc create -f "$here/declared.yaml" >/dev/null
kc wait --for=condition=Established --timeout=60s \
	crd/widgets.example.com >/dev/null

mkdir -p "$out"
rm -f "$out"/*.json
n=0
while IFS= read -r d; do
	kind=$(jq -r .kind <<<"$d")
	name=$(jq -r .metadata.name <<<"$d")
	ns=$(jq -r '.metadata.namespace // empty' <<<"$d")
	s=$(kc get ${ns:+-n "$ns"} "$(jq -r '.kind + (.apiVersion | split("/") | if length == 2 then "." + .[1] + "." + .[0] else "" end)' <<<"$d")/$name" -o json)
	file="$out/$(tr '[:upper:]' '[:lower:]' <<<"$kind")-$name.json"
	jq -n --argjson d "$d" --argjson s "$s" '
	  def ptr: map(tostring | gsub("~"; "~0") | gsub("/"; "~1")) | "/" + join("/");
	  ($s | del(.metadata.uid, .metadata.resourceVersion,
	            .metadata.creationTimestamp, .metadata.generation,
	            .metadata.managedFields)) as $stored
	  | ($d.kind) as $k
	  | (if $k == "Service" then
	       [["spec","clusterIP"], ["spec","clusterIPs"], ["spec","ipFamilies"],
	        ["spec","ipFamilyPolicy"], ["spec","healthCheckNodePort"]]
	       + [$stored.spec.ports // [] | to_entries[]
	          | select(.value.nodePort) | ["spec","ports",.key,"nodePort"]]
	     elif $k == "Pod" then
	       [["spec","serviceAccountName"], ["spec","serviceAccount"],
	        ["spec","tolerations"], ["spec","priority"],
	        ["spec","preemptionPolicy"], ["status"]]
	       + [$stored.spec.containers | to_entries[] | .key as $i
	          | if ($d.spec.containers[$i].volumeMounts // null) == null
	            then ["spec","containers",$i,"volumeMounts"]
	            else (.value.volumeMounts | to_entries[]
	                  | select(.value.mountPath == "/var/run/secrets/kubernetes.io/serviceaccount")
	                  | ["spec","containers",$i,"volumeMounts",.key]) end]
	       + [$stored.spec.volumes // [] | to_entries[]
	          | select(.value.name | startswith("kube-api-access-"))
	          | ["spec","volumes",.key]]
	     elif $k == "Job" then
	       [["metadata","labels"], ["spec","selector"],
	        ["spec","template","metadata","labels"]]
	     elif $k == "DaemonSet" then
	       [if $d.metadata.annotations then
	          ["metadata","annotations","deprecated.daemonset.template.generation"]
	        else ["metadata","annotations"] end]
	     elif $k == "Namespace" then [["spec"], ["status"]]
	     elif $k == "PersistentVolume" or $k == "PersistentVolumeClaim" then
	       [["metadata","finalizers"], ["status"]]
	     elif $k == "CustomResourceDefinition" then [["status"]]
	     else [] end) as $out
	  | {apiVersion: $d.apiVersion, kind: $k, declared: $d, stored: $stored,
	     outside: [$out | sort | reverse[] | ptr]}' >"$file"
	n=$((n + 1))
done <"$work/declared.jsonl"
echo "generate.sh: $n cases written to $out (kube-apiserver $K8S_VERSION)"
