# The normal form of one answer of the differential check
# (tests/real/differential.sh), so that a real kube-apiserver's and
# kube-emu's answers compare equal exactly when they agree on everything
# that is not the server's free choice:
#
#   {"code": N, "warnings": [...], "body": ANSWER}
#
# An object's resourceVersion becomes a label, "NAME#1", "NAME#2", ...,
# in the order the scenario first sees each value of that object's name
# on that server ($rvs, the labels so far, in; the record and the labels
# out as [RECORD, LABELS]),
# so that "a no-op keeps the resourceVersion" and "a write makes a new
# one" compare; the resourceVersion of a list or a bookmark (the store's,
# which other writers move on a real server) is masked as "RV".
#
# Masked (the server picks them): uids, times (RFC 3339,
# with or without fractions), generated names' suffixes (generateName, a
# Pod's kube-api-access-XXXXX volume), Service cluster IPs and node
# ports, continue tokens, and the numbers of a "too old resource version"
# message. managedFields become a set: entries sorted by manager,
# operation and subresource, each fieldsV1 trie flattened into its sorted
# leaf paths (one string per path, its elements joined by spaces). A watch
# body (an array of events) keeps its order, but a BOOKMARK without
# annotations that follows another BOOKMARK (plain, or the
# initial-events-end one) is dropped: how many of them a stream of a few
# seconds holds depends only on timing (kube-apiserver 1.36 now and then
# sends a plain one right after the initial-events-end bookmark of a
# one-second watch, at the same resourceVersion).

def uid_re: "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
def time_re: "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$";
def ip_re: "^([0-9]{1,3}\\.){3}[0-9]{1,3}$";

def mask_string:
	if test(time_re) then "TIME"
	else
		gsub(uid_re; "UID")
		| gsub("kube-api-access-[a-z0-9]{5}"; "kube-api-access-XXXXX")
		| gsub("too old resource version: [0-9]+ \\([0-9]+\\)";
			"too old resource version: RV (RV)")
		| gsub("(?<w>[Rr]esource ?[Vv]ersion[^0-9\"]{0,24})[0-9]+";
			"\(.w)RV")
		# an object quoted in a message (a strict patch error)
		| gsub("(?<w>resourceVersion\\\\\":\\\\\")[0-9]+"; "\(.w)RV")
		| gsub("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?Z";
			"TIME")
	end;

def fields_set: [paths(type == "object" and length == 0) | join(" ")] | sort;

def managed_set:
	map({manager, operation, apiVersion, subresource, fieldsType,
		time: (if .time then "TIME" else null end),
		fields: ((.fieldsV1 // {}) | fields_set)}
		| with_entries(select(.value != null)))
	| sort_by(.manager, .operation, (.subresource // ""));

def mask_meta($labels):
	if type == "object" then
		(if (.uid | type) == "string" then .uid = "UID" else . end)
		| (if (.resourceVersion | type) == "string" and .resourceVersion != ""
			then .resourceVersion = (if (.name | type) == "string"
				then $labels[.resourceVersion] // "RV" else "RV" end)
			else . end)
		| (if (.continue | type) == "string" and .continue != ""
			then .continue = "CONTINUE" else . end)
		| (if (.generateName | type) == "string" and (.name | type) == "string"
			and (.name | startswith(.generateName // ""))
			then .name = .generateName + "XXXXX" else . end)
		| (if (.managedFields | type) == "array"
			then .managedFields |= managed_set else . end)
	else . end;

def mask_service:
	if type == "object" and (.clusterIP | type) == "string" then
		(if (.clusterIP | test(ip_re)) then .clusterIP = "CLUSTER-IP" else . end)
		| (if (.clusterIPs | type) == "array"
			then .clusterIPs |= map(if test(ip_re) then "CLUSTER-IP" else . end)
			else . end)
		| (if (.ports | type) == "array"
			then .ports |= map(if .nodePort then .nodePort = "NODE-PORT" else . end)
			else . end)
		| (if .healthCheckNodePort then .healthCheckNodePort = "NODE-PORT" else . end)
	else . end;

def mask($labels):
	walk(if type == "string" then mask_string
		elif type == "object" then
			(if (.metadata | type) == "object" then .metadata |= mask_meta($labels) else . end)
			| (if .kind == "Service" or (.spec.clusterIP? // null) != null
				then .spec |= mask_service else . end)
		else . end);

# Watch events: a plain bookmark after a bookmark is none.
def collapse_bookmarks:
	reduce .[] as $e ([];
		if ($e.type == "BOOKMARK" and ($e.object.metadata.annotations == null)
			and length > 0 and .[-1].type == "BOOKMARK")
		then . else . + [$e] end);

# The [name, resourceVersion] of every object (it has a name), in
# document order.
def object_rvs:
	[.. | objects | select((.metadata | type) == "object"
		and (.metadata.name | type) == "string"
		and (.metadata.resourceVersion | type) == "string"
		and .metadata.resourceVersion != "")
		| [.metadata.name, .metadata.resourceVersion]];

# {labels: {RV: LABEL}, counts: {NAME: N}} with the new values labelled.
def label_rvs($seen):
	reduce (.body | object_rvs[]) as $p ($seen;
		if .labels[$p[1]] then .
		else .counts[$p[0]] = ((.counts[$p[0]] // 0) + 1)
			| .labels[$p[1]] = "\($p[0])#\(.counts[$p[0]])" end);

def normalise($labels):
	.body |= mask($labels)
	| (if .watch then .body |= collapse_bookmarks else . end)
	| .warnings |= map(mask_string);

(label_rvs($rvs[0] // {labels: {}, counts: {}})) as $seen
| [normalise($seen.labels), $seen]
