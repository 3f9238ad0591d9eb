/*
 * JSON patch (RFC 6902) and strategic merge patch, as kube-apiserver 1.36
 * applies them.
 *
 * The JSON patch follows gopkg.in/evanphx/json-patch.v4, the library the
 * API server uses, quirks included: a `replace` of a missing object key
 * adds it, negative array indexes count from the end, a `copy` from a
 * missing key copies null, and the text before a path's first '/' is
 * ignored. Errors are the API server's: a body that does not decode as a
 * list of operations is 400 with the decoder's message, more than 10000
 * operations 413, and an operation that does not apply 422 with a fixed
 * message (the library's own text never reaches the client).
 *
 * The strategic merge patch follows k8s.io/apimachinery's strategicpatch
 * package (mergeMap and mergeSlice) with the patchStrategy/patchMergeKey
 * tags of the Go API types in smp_fields[] below. Where the API server
 * would decode the merged map into a Go struct, and so drop nulls and
 * unknown "$" keys of values copied from the patch, those are dropped
 * here too. Error codes are the API server's: 400 for malformed
 * directives, 422 for lists of lists, 500 (no reason) for what
 * strategicpatch reports as a plain error (an unknown $patch, an item
 * without its merge key), 415 for resources that are not built in.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"
#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

/* ---- Go's formatting of decoded JSON, for error messages ---- */

/* The Go type a JSON value decodes to (reflect.TypeOf) under %s. */
static const char *go_type(const json_t *v)
{
	if (!v)
		return "%!s(<nil>)";
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "map[string]interface {}";
	case JSON_ARRAY:
		return "[]interface {}";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
		return "int64";
	case JSON_REAL:
		return "float64";
	case JSON_TRUE:
	case JSON_FALSE:
		return "bool";
	case JSON_NULL:
	default:
		return "%!s(<nil>)";
	}
}

/* A value under %s: strings as they are, other scalars as Go marks them. */
static void go_fmt_s(struct buf *out, const json_t *v)
{
	if (json_is_string(v)) {
		emu_go_value(out, v);
	} else if (!v || json_is_null(v)) {
		buf_adds(out, "%!s(<nil>)");
	} else if (json_is_object(v) || json_is_array(v)) {
		emu_go_value(out, v);
	} else {
		buf_addf(out, "%%!s(%s=", go_type(v));
		emu_go_value(out, v);
		buf_addch(out, ')');
	}
}

/*
 * Go's == on two decoded values (NULL and JSON null are both nil). Maps
 * and slices never compare equal (Go would panic).
 */
static bool go_eq(const json_t *a, const json_t *b)
{
	bool an = !a || json_is_null(a), bn = !b || json_is_null(b);

	if (an || bn)
		return an && bn;
	if (json_typeof(a) != json_typeof(b))
		return false;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b),
			       json_string_length(a));
	case JSON_INTEGER:
		return json_integer_value(a) == json_integer_value(b);
	case JSON_REAL:
		return json_real_value(a) == json_real_value(b);
	case JSON_TRUE:
	case JSON_FALSE:
		return true;
	default:
		return false;
	}
}

/* ---- JSON patch ---- */

/* At most this many operations in one JSON patch (kube's limit). */
#define JSON_PATCH_MAX_OPS 10000

static const char unprocessable[] =
	"the server rejected our request due to an error in our request";

/*
 * The strict decode the API server runs first (into a Go list of structs
 * with string op/path/from): the first type error, in document order.
 */
static int json_patch_decode_check(const json_t *ops, struct buf *msg)
{
	const char *k;
	json_t *op, *v;
	size_t i;

	if (!json_is_array(ops)) {
		buf_addf(msg,
			 "error decoding patch: json: cannot unmarshal %s "
			 "into Go value of type []handlers.jsonPatchOp",
			 diff_go_json_kind(ops));
		return 400;
	}
	json_array_foreach(ops, i, op)
	{
		if (json_is_null(op))
			continue;
		if (!json_is_object(op)) {
			buf_addf(msg,
				 "error decoding patch: json: cannot unmarshal "
				 "%s into Go value of type "
				 "handlers.jsonPatchOp",
				 diff_go_json_kind(op));
			return 400;
		}
		json_object_foreach(op, k, v)
		{
			if (strcmp(k, "op") && strcmp(k, "path") &&
			    strcmp(k, "from"))
				continue;
			if (json_is_string(v) || json_is_null(v))
				continue;
			buf_addf(msg,
				 "error decoding patch: json: cannot unmarshal "
				 "%s into Go struct field jsonPatchOp.%s of "
				 "type string",
				 diff_go_json_kind(v), k);
			return 400;
		}
	}
	return 0;
}

/* strconv.Atoi: an optional sign and decimal digits, in range. */
static int go_atoi(const char *s, long long *out)
{
	const char *p = s;
	long long v = 0;
	bool neg = false;

	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (!*p)
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (v > (LLONG_MAX - (*p - '0')) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	*out = neg ? -v : v;
	return 0;
}

/* One JSON pointer token, "~1" read as '/' and "~0" as '~' (one pass). */
static char *pointer_token(const char *s, size_t len)
{
	char *t = malloc(len + 1), *o = t;
	size_t i;

	if (!t)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] == '~' && i + 1 < len &&
		    (s[i + 1] == '0' || s[i + 1] == '1')) {
			*o++ = s[i + 1] == '1' ? '/' : '~';
			i++;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return t;
}

/* Resolve an array index for get/set/remove; -1 when out of range. */
static int array_index(const json_t *a, const char *key, size_t *idx)
{
	long long i, n = (long long)json_array_size(a);

	if (go_atoi(key, &i) < 0)
		return -1;
	if (i < 0) {
		if (i < -n)
			return -1;
		i += n;
	}
	if (i >= n)
		return -1;
	*idx = (size_t)i;
	return 0;
}

/*
 * The value under `key` of a container: 0 with *val (NULL when missing
 * or null, as the library's nil node), -1 on a bad array index.
 */
static int container_get(json_t *con, const char *key, json_t **val)
{
	size_t idx;

	*val = NULL;
	if (json_is_object(con)) {
		*val = json_object_get(con, key);
	} else {
		if (array_index(con, key, &idx) < 0)
			return -1;
		*val = json_array_get(con, idx);
	}
	if (json_is_null(*val))
		*val = NULL;
	return 0;
}

/* Add (steals val); arrays insert, "-" appends. */
static int container_add(json_t *con, const char *key, json_t *val)
{
	long long i, n;

	if (!val)
		val = json_null();
	if (json_is_object(con))
		return json_object_set_new(con, key, val) ? -1 : 0;
	if (!strcmp(key, "-"))
		return json_array_append_new(con, val) ? -1 : 0;
	n = (long long)json_array_size(con) + 1;
	if (go_atoi(key, &i) < 0 || i >= n || i < -n) {
		json_decref(val);
		return -1;
	}
	if (i < 0)
		i += n;
	return json_array_insert_new(con, (size_t)i, val) ? -1 : 0;
}

/* Replace an element known to exist (steals val). */
static int container_set(json_t *con, const char *key, json_t *val)
{
	size_t idx;

	if (!val)
		val = json_null();
	if (json_is_object(con))
		return json_object_set_new(con, key, val) ? -1 : 0;
	if (array_index(con, key, &idx) < 0) {
		json_decref(val);
		return -1;
	}
	return json_array_set_new(con, idx, val) ? -1 : 0;
}

static int container_remove(json_t *con, const char *key)
{
	size_t idx;

	if (json_is_object(con))
		return json_object_del(con, key);
	if (array_index(con, key, &idx) < 0)
		return -1;
	return json_array_remove(con, idx);
}

/*
 * The container holding `path` and the last token (caller frees *key).
 * The text before the first '/' is ignored, as the library does.
 */
static int find_object(json_t *doc, const char *path, json_t **con, char **key)
{
	const char *p = strchr(path, '/'), *next;
	json_t *cur = doc, *child;
	char *tok;
	int ok;

	if (!p)
		return -1;
	p++;
	while ((next = strchr(p, '/'))) {
		if (!(tok = pointer_token(p, (size_t)(next - p))))
			return -1;
		ok = container_get(cur, tok, &child);
		free(tok);
		if (ok < 0 || !child ||
		    (!json_is_object(child) && !json_is_array(child)))
			return -1;
		cur = child;
		p = next + 1;
	}
	if (!(*key = pointer_token(p, strlen(p))))
		return -1;
	*con = cur;
	return 0;
}

/* A string member of an operation, NULL when missing, null or not one. */
static const char *op_str(const json_t *op, const char *name)
{
	return json_string_value(json_object_get(op, name));
}

/* The operation's value as the library stores it: a copy, null if none. */
static json_t *op_value(const json_t *op)
{
	json_t *v = json_object_get(op, "value");

	return v ? json_deep_copy(v) : json_null();
}

static int op_test(json_t *doc, const json_t *op, const char *path)
{
	json_t *want = json_object_get(op, "value"), *con, *val;
	char *key = NULL;
	int ret = -1;

	if (!*path)
		return json_is_object(want) && json_equal(doc, want) ? 0 : -1;
	if (find_object(doc, path, &con, &key) < 0 ||
	    container_get(con, key, &val) < 0)
		goto out;
	if (!val)
		ret = json_is_null(want) ? 0 : -1;
	else
		ret = want && json_equal(val, want) ? 0 : -1;
out:
	free(key);
	return ret;
}

/* One operation; 0 or -1 (does not apply). */
static int json_patch_op(json_t *doc, const json_t *op)
{
	const char *kind = op_str(op, "op"), *path = op_str(op, "path");
	const char *from = op_str(op, "from");
	json_t *con, *val = NULL, *v;
	char *key = NULL;
	int ret = -1;

	if (!kind)
		return -1;
	if (!strcmp(kind, "test"))
		return path ? op_test(doc, op, path) : -1;
	if (!strcmp(kind, "add")) {
		if (!path || find_object(doc, path, &con, &key) < 0)
			goto out;
		ret = container_add(con, key, op_value(op));
	} else if (!strcmp(kind, "remove")) {
		if (!path || find_object(doc, path, &con, &key) < 0)
			goto out;
		ret = container_remove(con, key);
	} else if (!strcmp(kind, "replace")) {
		if (!path)
			goto out;
		if (!*path) {
			/*
			 * The whole document; an array would not decode
			 * into the object afterwards, so it fails here.
			 */
			v = json_object_get(op, "value");
			if (!json_is_object(v))
				goto out;
			v = json_deep_copy(v);
			json_object_clear(doc);
			ret = json_object_update(doc, v);
			json_decref(v);
			goto out;
		}
		if (find_object(doc, path, &con, &key) < 0 ||
		    container_get(con, key, &val) < 0)
			goto out;
		ret = container_set(con, key, op_value(op));
	} else if (!strcmp(kind, "move")) {
		if (!from || find_object(doc, from, &con, &key) < 0 ||
		    container_get(con, key, &val) < 0)
			goto out;
		val = json_incref(val ? val : json_null());
		if (container_remove(con, key) < 0 || !path)
			goto out;
		free(key);
		key = NULL;
		if (find_object(doc, path, &con, &key) < 0)
			goto out;
		ret = container_add(con, key, val);
		val = NULL;
	} else if (!strcmp(kind, "copy")) {
		if (!from || find_object(doc, from, &con, &key) < 0 ||
		    container_get(con, key, &val) < 0)
			goto out;
		val = val ? json_deep_copy(val) : json_null();
		free(key);
		key = NULL;
		if (!path || find_object(doc, path, &con, &key) < 0)
			goto out;
		ret = container_add(con, key, val);
		val = NULL;
	}
out:
	if (!strcmp(kind, "move") || !strcmp(kind, "copy"))
		json_decref(val);
	free(key);
	return ret;
}

int emu_json_patch(json_t *doc, const json_t *ops, struct buf *msg)
{
	json_t *op;
	size_t i;
	int code;

	/* A JSON null decodes as an empty list of operations. */
	if (json_is_null(ops))
		return 0;
	if ((code = json_patch_decode_check(ops, msg)))
		return code;
	if (json_array_size(ops) > JSON_PATCH_MAX_OPS) {
		buf_addf(msg,
			 "Request entity too large: The allowed maximum "
			 "operations in a JSON patch is %d, got %zu",
			 JSON_PATCH_MAX_OPS, json_array_size(ops));
		return 413;
	}
	json_array_foreach(ops, i, op)
	{
		if (json_patch_op(doc, op) < 0) {
			buf_adds(msg, unprocessable);
			return 422;
		}
	}
	return 0;
}

/* ---- strategic merge patch: the patch tags of the Go types ---- */

/* The Go types whose fields carry patch tags, and the way to them. */
enum smp_type {
	T_ANY, /* nothing below has a patch strategy */
	T_OBJECT,
	T_META,
	T_POD,
	T_PODSPEC,
	T_CONTAINER,
	T_PODSTATUS,
	T_TEMPLATE,
	T_WORKLOAD,
	T_WORKLOAD_SPEC,
	T_JOB,
	T_JOB_SPEC,
	T_CRONJOB,
	T_CRONJOB_SPEC,
	T_JOB_TEMPLATE,
	T_SERVICE,
	T_SERVICE_SPEC,
	T_SERVICEACCOUNT,
	T_WITH_CONDITIONS, /* kinds whose only tagged field is status */
	T_CONDITIONS_STATUS,
};

enum smp_strategy {
	SMP_MERGE = 1 << 0,
	SMP_RETAIN_KEYS = 1 << 1, /* only shapes client-side diffs */
};

struct smp_field {
	enum smp_type owner;
	const char *name;
	enum smp_type type; /* of the value, or of a list's items */
	unsigned strategy;
	const char *merge_key; /* NULL: a list of primitives */
};

/*
 * patchStrategy/patchMergeKey tags of k8s.io/api 1.36 on the paths the
 * emulator's built-in kinds have. These are not always the server-side
 * apply keys (container ports merge by containerPort alone). Lists not
 * listed here are replaced by a patch (tolerations, args, command, ...).
 */
static const struct smp_field smp_fields[] = {
	{T_META, "finalizers", T_ANY, SMP_MERGE, NULL},
	{T_META, "ownerReferences", T_ANY, SMP_MERGE, "uid"},

	{T_OBJECT, "metadata", T_META, 0, NULL},

	{T_POD, "metadata", T_META, 0, NULL},
	{T_POD, "spec", T_PODSPEC, 0, NULL},
	{T_POD, "status", T_PODSTATUS, 0, NULL},

	{T_PODSPEC, "volumes", T_ANY, SMP_MERGE | SMP_RETAIN_KEYS, "name"},
	{T_PODSPEC, "initContainers", T_CONTAINER, SMP_MERGE, "name"},
	{T_PODSPEC, "containers", T_CONTAINER, SMP_MERGE, "name"},
	{T_PODSPEC, "ephemeralContainers", T_CONTAINER, SMP_MERGE, "name"},
	{T_PODSPEC, "imagePullSecrets", T_ANY, SMP_MERGE, "name"},
	{T_PODSPEC, "hostAliases", T_ANY, SMP_MERGE, "ip"},
	{T_PODSPEC, "topologySpreadConstraints", T_ANY, SMP_MERGE,
	 "topologyKey"},
	{T_PODSPEC, "schedulingGates", T_ANY, SMP_MERGE, "name"},
	{T_PODSPEC, "resourceClaims", T_ANY, SMP_MERGE | SMP_RETAIN_KEYS,
	 "name"},

	{T_CONTAINER, "ports", T_ANY, SMP_MERGE, "containerPort"},
	{T_CONTAINER, "env", T_ANY, SMP_MERGE, "name"},
	{T_CONTAINER, "volumeMounts", T_ANY, SMP_MERGE, "mountPath"},
	{T_CONTAINER, "volumeDevices", T_ANY, SMP_MERGE, "devicePath"},

	{T_PODSTATUS, "conditions", T_ANY, SMP_MERGE, "type"},
	{T_PODSTATUS, "podIPs", T_ANY, SMP_MERGE, "ip"},
	{T_PODSTATUS, "hostIPs", T_ANY, SMP_MERGE, "ip"},
	{T_PODSTATUS, "resourceClaimStatuses", T_ANY,
	 SMP_MERGE | SMP_RETAIN_KEYS, "name"},

	{T_TEMPLATE, "metadata", T_META, 0, NULL},
	{T_TEMPLATE, "spec", T_PODSPEC, 0, NULL},

	/* Deployment, StatefulSet, DaemonSet, ReplicaSet. */
	{T_WORKLOAD, "metadata", T_META, 0, NULL},
	{T_WORKLOAD, "spec", T_WORKLOAD_SPEC, 0, NULL},
	{T_WORKLOAD, "status", T_CONDITIONS_STATUS, 0, NULL},
	{T_WORKLOAD_SPEC, "template", T_TEMPLATE, 0, NULL},
	{T_WORKLOAD_SPEC, "strategy", T_ANY, SMP_RETAIN_KEYS, NULL},

	{T_JOB, "metadata", T_META, 0, NULL},
	{T_JOB, "spec", T_JOB_SPEC, 0, NULL},
	{T_JOB, "status", T_CONDITIONS_STATUS, 0, NULL},
	{T_JOB_SPEC, "template", T_TEMPLATE, 0, NULL},

	{T_CRONJOB, "metadata", T_META, 0, NULL},
	{T_CRONJOB, "spec", T_CRONJOB_SPEC, 0, NULL},
	{T_CRONJOB_SPEC, "jobTemplate", T_JOB_TEMPLATE, 0, NULL},
	{T_JOB_TEMPLATE, "metadata", T_META, 0, NULL},
	{T_JOB_TEMPLATE, "spec", T_JOB_SPEC, 0, NULL},

	{T_SERVICE, "metadata", T_META, 0, NULL},
	{T_SERVICE, "spec", T_SERVICE_SPEC, 0, NULL},
	{T_SERVICE, "status", T_CONDITIONS_STATUS, 0, NULL},
	{T_SERVICE_SPEC, "ports", T_ANY, SMP_MERGE, "port"},

	{T_SERVICEACCOUNT, "metadata", T_META, 0, NULL},
	{T_SERVICEACCOUNT, "secrets", T_ANY, SMP_MERGE, "name"},

	/* Namespace, PodDisruptionBudget, HPA (v2), APIService. */
	{T_WITH_CONDITIONS, "metadata", T_META, 0, NULL},
	{T_WITH_CONDITIONS, "status", T_CONDITIONS_STATUS, 0, NULL},
	{T_CONDITIONS_STATUS, "conditions", T_ANY, SMP_MERGE, "type"},
};

static const struct {
	const char *kind;
	enum smp_type type;
} smp_kinds[] = {
	{"Pod", T_POD},
	{"Deployment", T_WORKLOAD},
	{"StatefulSet", T_WORKLOAD},
	{"DaemonSet", T_WORKLOAD},
	{"ReplicaSet", T_WORKLOAD},
	{"Job", T_JOB},
	{"CronJob", T_CRONJOB},
	{"Service", T_SERVICE},
	{"ServiceAccount", T_SERVICEACCOUNT},
	{"Namespace", T_WITH_CONDITIONS},
	{"PodDisruptionBudget", T_WITH_CONDITIONS},
	{"HorizontalPodAutoscaler", T_WITH_CONDITIONS},
	{"APIService", T_WITH_CONDITIONS},
};

static const struct smp_field *smp_lookup(enum smp_type owner, const char *name)
{
	size_t i;

	if (owner == T_ANY)
		return NULL;
	for (i = 0; i < sizeof(smp_fields) / sizeof(smp_fields[0]); i++)
		if (smp_fields[i].owner == owner &&
		    !strcmp(smp_fields[i].name, name))
			return &smp_fields[i];
	return NULL;
}

/* ---- strategic merge patch: the merge ---- */

#define DIRECTIVE	      "$patch"
#define RETAIN_KEYS	      "$retainKeys"
#define DELETE_FROM_PRIMITIVE "$deleteFromPrimitiveList"
#define SET_ELEMENT_ORDER     "$setElementOrder"

struct smp {
	int code;
	struct buf *msg;
};

static void smp_fail(struct smp *s, int code, const char *text)
{
	if (s->code)
		return;
	s->code = code;
	buf_adds(s->msg, text);
}

/* mergepatch.ErrBadArgType: "expected a X, but received a Y" (500). */
static void fail_arg_type(struct smp *s, const char *expected,
			  const json_t *actual)
{
	if (s->code)
		return;
	s->code = 500;
	buf_addf(s->msg, "expected a %s, but received a %s", expected,
		 go_type(json_is_null(actual) ? NULL : actual));
}

/* mergepatch.ErrNoMergeKey (500). */
static void fail_no_merge_key(struct smp *s, const json_t *m, const char *key)
{
	if (s->code)
		return;
	s->code = 500;
	buf_adds(s->msg, "map: ");
	emu_go_value(s->msg, m);
	buf_addf(s->msg, " does not contain declared merge key: %s", key);
}

/* mergepatch.ErrBadPatchType (500). */
static void fail_patch_type(struct smp *s, const json_t *directive,
			    const json_t *m)
{
	if (s->code)
		return;
	s->code = 500;
	buf_adds(s->msg, "unknown patch type: ");
	go_fmt_s(s->msg, directive);
	buf_adds(s->msg, " in map: ");
	emu_go_value(s->msg, m);
}

/*
 * What decoding the merged map into the Go type leaves of a value taken
 * whole from the patch: no null members and no "$" keys (directives in
 * a value that had nothing to merge with). Changes v in place.
 */
static void smp_sanitize(json_t *v)
{
	const char *k;
	json_t *item;
	void *tmp;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach_safe(v, tmp, k, item)
		{
			if (json_is_null(item) || k[0] == '$')
				json_object_del(v, k);
			else
				smp_sanitize(item);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item) smp_sanitize(item);
	}
}

/* A sanitized copy of a patch value (new reference). */
static json_t *patch_value(const json_t *v)
{
	json_t *c = json_deep_copy(v);

	smp_sanitize(c);
	return c;
}

/*
 * "$prefix/key" -> "key"; NULL (and the 400 strategicpatch gives) when
 * the prefix is not exactly `prefix` or there is no '/'.
 */
static const char *extract_key(struct smp *s, const char *k, const char *prefix,
			       const char *err)
{
	size_t n = strlen(prefix);

	if (strncmp(k, prefix, n) || k[n] != '/') {
		smp_fail(s, 400, err);
		return NULL;
	}
	return k + n + 1;
}

/* The merge key value of a map item, or the item itself (primitives). */
static const json_t *order_value(const json_t *item, const char *key,
				 bool is_map)
{
	if (!is_map)
		return item;
	return json_is_object(item) ? json_object_get(item, key) : NULL;
}

/* strategicpatch's index(): position of item in list, or -1. */
static long list_index(const json_t *list, const json_t *item, const char *key,
		       bool is_map)
{
	const json_t *want = order_value(item, key, is_map);
	json_t *v;
	size_t i;

	json_array_foreach(
		list, i,
		v) if (go_eq(want, order_value(v, key, is_map))) return (long)i;
	return -1;
}

/*
 * The common element kind of two lists (JSON_TRUE stands for bool). 500
 * when they differ, 422 for lists of lists, 500 when both are empty.
 */
static int slice_kind(struct smp *s, const json_t *a, const json_t *b,
		      json_type *kind)
{
	const json_t *lists[2] = {a, b};
	bool have = false;
	json_type t;
	json_t *v;
	size_t i;
	int l;

	for (l = 0; l < 2; l++) {
		json_array_foreach(lists[l], i, v)
		{
			t = json_typeof(v) == JSON_FALSE ? JSON_TRUE
							 : json_typeof(v);
			if (!have) {
				if (t == JSON_ARRAY) {
					smp_fail(s, 422, unprocessable);
					return -1;
				}
				*kind = t;
				have = true;
			} else if (t != *kind) {
				if (s->code)
					return -1;
				s->code = 500;
				buf_adds(s->msg, "list element types are not "
						 "identical: [");
				emu_go_value(s->msg, a);
				buf_addch(s->msg, ' ');
				emu_go_value(s->msg, b);
				buf_addch(s->msg, ']');
				return -1;
			}
		}
	}
	if (!have) {
		smp_fail(s, 500, "no elements in any of the given slices");
		return -1;
	}
	return 0;
}

/* Every item of `list` is a map holding `key`; else 500. */
static int check_merge_keys(struct smp *s, const json_t *list, const char *key)
{
	json_t *v;
	size_t i;

	json_array_foreach(list, i, v)
	{
		if (!json_is_object(v)) {
			fail_arg_type(s, "map[string]interface {}", v);
			return -1;
		}
		if (!json_object_get(v, key)) {
			fail_no_merge_key(s, v, key);
			return -1;
		}
	}
	return 0;
}

static bool is_delete_item(const json_t *v)
{
	const char *d = json_string_value(json_object_get(v, DIRECTIVE));

	return d && !strcmp(d, "delete");
}

/*
 * normalizeSliceOrder: sort `list` (changed in place) by the positions
 * of its items in `order`, the way sort.SliceStable's insertion sort
 * does with strategicpatch's "less" (true when either item is not in
 * `order`); $patch: delete items go last.
 */
static int normalize_slice_order(struct smp *s, json_t *list,
				 const json_t *order, const char *key,
				 bool is_map)
{
	json_t *dels = NULL, *a, *b, *v;
	long ia, ib;
	size_t i, j;
	int ret = -1;

	if (is_map) {
		if (check_merge_keys(s, list, key) < 0 ||
		    check_merge_keys(s, order, key) < 0)
			return -1;
		dels = json_array();
		for (i = 0; i < json_array_size(list);) {
			v = json_array_get(list, i);
			if (is_delete_item(v)) {
				json_array_append(dels, v);
				json_array_remove(list, i);
			} else {
				i++;
			}
		}
	}
	for (i = 1; i < json_array_size(list); i++) {
		for (j = i; j > 0; j--) {
			a = json_array_get(list, j);
			b = json_array_get(list, j - 1);
			ia = list_index(order, a, key, is_map);
			ib = list_index(order, b, key, is_map);
			if (ia >= 0 && ib >= 0 && ia >= ib)
				break;
			json_incref(a);
			json_array_set(list, j, b);
			json_array_set_new(list, j - 1, a);
		}
	}
	if (dels)
		json_array_extend(list, dels);
	ret = 0;
	json_decref(dels);
	return ret;
}

/*
 * mergeSortedSlice: interleave `left` (server-only items) into `right`
 * (patch items); a left item comes first only when both are in
 * server_order and it is earlier there. New reference.
 */
static json_t *merge_sorted(const json_t *left, const json_t *right,
			    const json_t *server_order, const char *key,
			    bool is_map)
{
	size_t i = 0, j = 0, nl = json_array_size(left);
	size_t nr = json_array_size(right);
	json_t *out = json_array(), *l, *r;
	long li, ri;

	while (i < nl || j < nr) {
		if (i >= nl) {
			json_array_append(out, json_array_get(right, j++));
			continue;
		}
		if (j >= nr) {
			json_array_append(out, json_array_get(left, i++));
			continue;
		}
		l = json_array_get(left, i);
		r = json_array_get(right, j);
		li = list_index(server_order, l, key, is_map);
		ri = list_index(server_order, r, key, is_map);
		if (li >= 0 && ri >= 0 && li < ri) {
			json_array_append(out, l);
			i++;
		} else {
			json_array_append(out, r);
			j++;
		}
	}
	return out;
}

/* normalizeElementOrder; consumes neither list. New reference or NULL. */
static json_t *normalize_element_order(struct smp *s, json_t *patch_items,
				       json_t *server_only,
				       const json_t *patch_order,
				       const json_t *server_order,
				       const char *key, bool is_map)
{
	if (normalize_slice_order(s, patch_items, patch_order, key, is_map) <
		    0 ||
	    normalize_slice_order(s, server_only, server_order, key, is_map) <
		    0)
		return NULL;
	return merge_sorted(server_only, patch_items, server_order, key,
			    is_map);
}

/* The first map in `list` whose `key` equals `val`; 500 on a non-map. */
static int find_map(struct smp *s, const json_t *list, const char *key,
		    const json_t *val, size_t *idx, json_t **found)
{
	json_t *v, *mv;
	size_t i;

	*found = NULL;
	json_array_foreach(list, i, v)
	{
		if (!json_is_object(v)) {
			if (!s->code) {
				s->code = 500;
				buf_addf(s->msg,
					 "value for key %zu is not a map", i);
			}
			return -1;
		}
		mv = json_object_get(v, key);
		if (mv && go_eq(mv, val)) {
			*idx = i;
			*found = v;
			return 0;
		}
	}
	return 0;
}

/*
 * Split `merged` into the items present in `by` (*in) and the others
 * (*out), both new arrays.
 */
static int partition(struct smp *s, const json_t *merged, const json_t *by,
		     const char *key, json_t **in, json_t **out)
{
	json_t *v, *found, *mv;
	size_t i, idx;

	*in = json_array();
	*out = json_array();
	json_array_foreach(merged, i, v)
	{
		if (!key) {
			found = list_index(by, v, NULL, false) >= 0 ? v : NULL;
		} else {
			if (!json_is_object(v)) {
				fail_arg_type(s, "map[string]interface {}", v);
				return -1;
			}
			if (!(mv = json_object_get(v, key))) {
				fail_no_merge_key(s, v, key);
				return -1;
			}
			if (find_map(s, by, key, mv, &idx, &found) < 0)
				return -1;
		}
		json_array_append(found ? *in : *out, v);
	}
	return 0;
}

static json_t *merge_map(json_t *orig, json_t *patch, enum smp_type type,
			 struct smp *s);

/* Scalars of `cur` not in `del` (deleteFromSlice). New reference. */
static json_t *delete_from_slice(const json_t *cur, const json_t *del)
{
	json_t *out = json_array(), *v;
	size_t i;

	json_array_foreach(cur, i, v) if (list_index(del, v, NULL, false) < 0)
		json_array_append(out, v);
	return out;
}

/*
 * mergeSliceWithSpecialElements: apply the $patch items of a merging
 * list of maps. *orig and *patch are replaced by new references.
 */
static int merge_special_items(struct smp *s, json_t **orig, json_t **patch,
			       const char *key)
{
	json_t *rest = json_array(), *v, *d, *mv, *found;
	bool replace = false;
	size_t i, idx;
	const char *ds;

	json_array_foreach(*patch, i, v)
	{
		if (!(d = json_object_get(v, DIRECTIVE))) {
			json_array_append(rest, v);
			continue;
		}
		ds = json_string_value(d);
		if (ds && !strcmp(ds, "delete")) {
			if (!(mv = json_object_get(v, key))) {
				fail_no_merge_key(s, v, key);
				goto fail;
			}
			for (;;) {
				if (find_map(s, *orig, key, mv, &idx, &found) <
				    0)
					goto fail;
				if (!found)
					break;
				json_array_remove(*orig, idx);
			}
		} else if (ds && !strcmp(ds, "replace")) {
			replace = true;
		} else if (ds && !strcmp(ds, "merge")) {
			smp_fail(s, 500,
				 "merging lists cannot yet be specified in "
				 "the patch");
			goto fail;
		} else {
			fail_patch_type(s, d, v);
			goto fail;
		}
	}
	if (replace) {
		smp_sanitize(rest);
		json_decref(*orig);
		json_decref(*patch);
		*orig = rest;
		*patch = json_array();
		return 0;
	}
	json_decref(*patch);
	*patch = rest;
	return 0;
fail:
	json_decref(rest);
	return -1;
}

/*
 * mergeSlice of a list with the merge strategy. `orig` and `patch` are
 * borrowed (and may be changed). New reference or NULL.
 */
static json_t *merge_slice(json_t *orig_in, json_t *patch_in,
			   const struct smp_field *f, bool delete_list,
			   struct smp *s)
{
	json_t *orig = NULL, *patch = NULL, *merged = NULL, *in = NULL;
	json_t *out_items = NULL, *ret = NULL, *v, *mv, *found, *m;
	const char *key = f->merge_key;
	json_type kind;
	size_t i, idx;

	if (!json_array_size(orig_in) && !json_array_size(patch_in))
		return json_incref(orig_in);
	if (slice_kind(s, orig_in, patch_in, &kind) < 0)
		return NULL;
	orig = json_copy(orig_in);
	patch = json_incref(patch_in);
	if (kind != JSON_OBJECT) {
		if (delete_list) {
			ret = delete_from_slice(orig, patch);
			goto out;
		}
		merged = json_array();
		json_array_foreach(
			orig, i, v) if (list_index(merged, v, NULL, false) < 0)
			json_array_append(merged, v);
		json_array_foreach(
			patch, i, v) if (list_index(merged, v, NULL, false) < 0)
			json_array_append(merged, v);
		key = NULL;
	} else {
		if (!key) {
			smp_fail(s, 500,
				 "cannot merge lists without merge key");
			goto out;
		}
		if (merge_special_items(s, &orig, &patch, key) < 0)
			goto out;
		merged = json_copy(orig);
		json_array_foreach(patch, i, v)
		{
			if (!(mv = json_object_get(v, key))) {
				fail_no_merge_key(s, v, key);
				goto out;
			}
			if (find_map(s, merged, key, mv, &idx, &found) < 0)
				goto out;
			if (found) {
				if (!(m = merge_map(found, v, f->type, s)))
					goto out;
				json_array_set_new(merged, idx, m);
			} else {
				json_array_append_new(merged, patch_value(v));
			}
		}
	}
	if (partition(s, merged, patch, key, &in, &out_items) < 0)
		goto out;
	ret = normalize_element_order(s, in, out_items, patch, orig, key,
				      kind == JSON_OBJECT);
out:
	json_decref(orig);
	json_decref(patch);
	json_decref(merged);
	json_decref(in);
	json_decref(out_items);
	return ret;
}

/* mergeSliceHandler: merge or replace by the field's strategy. */
static json_t *merge_slice_handler(json_t *orig, json_t *patch,
				   const struct smp_field *f, bool delete_list,
				   struct smp *s)
{
	if (f && (f->strategy & SMP_MERGE))
		return merge_slice(orig, patch, f, delete_list, s);
	return patch_value(patch);
}

/* applyRetainKeysDirective. */
static int apply_retain_keys(struct smp *s, json_t *orig, json_t *patch)
{
	const char *bad = "invalid patch format of retainKeys";
	json_t *keys = json_object_get(patch, RETAIN_KEYS), *v, *k;
	const char *name;
	void *tmp;
	bool found;
	size_t i;
	int ret = -1;

	if (!keys)
		return 0;
	json_incref(keys);
	json_object_del(patch, RETAIN_KEYS);
	if (!json_is_array(keys)) {
		smp_fail(s, 400, bad);
		goto out;
	}
	json_object_foreach(patch, name, v)
	{
		if (json_is_null(v) ||
		    !strncmp(name, DELETE_FROM_PRIMITIVE,
			     strlen(DELETE_FROM_PRIMITIVE)) ||
		    !strncmp(name, SET_ELEMENT_ORDER,
			     strlen(SET_ELEMENT_ORDER)))
			continue;
		found = false;
		json_array_foreach(keys, i, k) if (json_is_string(k) &&
						   !strcmp(json_string_value(k),
							   name)) found = true;
		if (!found) {
			smp_fail(s, 400, bad);
			goto out;
		}
	}
	json_object_foreach_safe(orig, tmp, name, v)
	{
		found = false;
		json_array_foreach(keys, i, k) if (json_is_string(k) &&
						   !strcmp(json_string_value(k),
							   name)) found = true;
		if (!found)
			json_object_del(orig, name);
	}
	ret = 0;
out:
	json_decref(keys);
	return ret;
}

/* validatePatchWithSetOrderList. */
static int check_set_order(struct smp *s, const json_t *plist,
			   const json_t *order, const char *key)
{
	size_t pi = 0, oi = 0, n;
	json_t *items = NULL, *p, *o, *pv, *ov;
	bool eq;
	int ret = -1;

	if (!json_array_size(order) || !json_array_size(plist))
		return 0;
	items = json_array();
	json_array_foreach(plist, pi, p)
	{
		if (key && !json_is_object(p)) {
			fail_arg_type(s, "map[string]interface {}", p);
			goto out;
		}
		if (!key || !is_delete_item(p))
			json_array_append(items, p);
	}
	n = json_array_size(items);
	pi = 0;
	while (pi < n && oi < json_array_size(order)) {
		p = json_array_get(items, pi);
		o = json_array_get(order, oi);
		if (json_is_object(p) && json_object_get(p, DIRECTIVE)) {
			pi++;
			continue;
		}
		if (!key) {
			eq = go_eq(p, o);
		} else {
			if (!json_is_object(o)) {
				fail_arg_type(s, "map[string]interface {}", o);
				goto out;
			}
			if (!(pv = json_object_get(p, key))) {
				fail_no_merge_key(s, p, key);
				goto out;
			}
			if (!(ov = json_object_get(o, key))) {
				fail_no_merge_key(s, o, key);
				goto out;
			}
			eq = go_eq(pv, ov);
		}
		if (eq)
			pi++;
		oi++;
	}
	if (pi < n && oi >= json_array_size(order)) {
		s->code = 500;
		buf_adds(s->msg, "The order in patch list:\n");
		emu_go_value(s->msg, plist);
		buf_adds(s->msg,
			 "\n doesn't match " SET_ELEMENT_ORDER " list:\n");
		emu_go_value(s->msg, order);
		buf_addch(s->msg, '\n');
		goto out;
	}
	ret = 0;
out:
	json_decref(items);
	return ret;
}

/* The list of `name` in a map, or NULL; 500 when it is not a list. */
static int get_list(struct smp *s, json_t *m, const char *name, json_t **out)
{
	*out = json_object_get(m, name);
	if (*out && !json_is_array(*out)) {
		fail_arg_type(s, "[]interface {}", *out);
		return -1;
	}
	return 0;
}

/*
 * mergePatchIntoOriginal: each $setElementOrder/NAME with the list NAME
 * of the patch, merged and then put in the order the directive gives.
 */
static int apply_set_element_order(struct smp *s, json_t *orig, json_t *patch,
				   enum smp_type type)
{
	const char *bad = "invalid patch format of setElementOrder list";
	size_t n = json_object_size(patch), nk = 0, i;
	char **keys = calloc(n ? n : 1, sizeof(*keys));
	json_t *order = NULL, *ol, *pl, *merged = NULL, *in = NULL;
	json_t *out_items = NULL, *both, *empty = json_array(), *v;
	const struct smp_field *f;
	const char *name, *k, *mk;
	json_type kind;
	int ret = -1;

	if (!keys || !empty)
		goto out;
	json_object_foreach(patch, k,
			    v) if (!strncmp(k, SET_ELEMENT_ORDER,
					    strlen(SET_ELEMENT_ORDER)))
		keys[nk++] = strdup(k);
	for (i = 0; i < nk; i++) {
		json_decref(order);
		json_decref(merged);
		json_decref(in);
		json_decref(out_items);
		merged = in = out_items = NULL;
		if (!keys[i])
			goto out;
		order = json_incref(json_object_get(patch, keys[i]));
		json_object_del(patch, keys[i]);
		if (!json_is_array(order)) {
			fail_arg_type(s, "[]interface {}", order);
			goto out;
		}
		if (!(name = extract_key(s, keys[i], SET_ELEMENT_ORDER, bad)))
			goto out;
		if (get_list(s, orig, name, &ol) < 0 ||
		    get_list(s, patch, name, &pl) < 0)
			goto out;
		f = smp_lookup(type, name);
		mk = f ? f->merge_key : NULL;
		if (check_set_order(s, pl ? pl : empty, order, mk) < 0)
			goto out;
		if (ol && pl)
			merged = merge_slice_handler(ol, pl, f, false, s);
		else if (ol)
			merged = json_incref(ol);
		else if (pl)
			merged = patch_value(pl);
		else
			continue;
		if (!merged ||
		    partition(s, merged, order, mk, &in, &out_items) < 0 ||
		    slice_kind(s, ol ? ol : empty, pl ? pl : empty, &kind) < 0)
			goto out;
		/* Maps without a merge key fail the check, as in Go. */
		if (kind == JSON_OBJECT && !mk)
			mk = "";
		both = normalize_element_order(s, in, out_items, order,
					       ol ? ol : empty, mk,
					       kind == JSON_OBJECT);
		if (!both)
			goto out;
		json_object_set_new(orig, name, both);
		json_object_del(patch, name);
	}
	ret = 0;
out:
	for (i = 0; i < nk; i++)
		free(keys[i]);
	free(keys);
	json_decref(order);
	json_decref(merged);
	json_decref(in);
	json_decref(out_items);
	json_decref(empty);
	return ret;
}

static bool same_go_type(const json_t *a, const json_t *b)
{
	json_type ta = json_typeof(a), tb = json_typeof(b);

	if (ta == JSON_FALSE)
		ta = JSON_TRUE;
	if (tb == JSON_FALSE)
		tb = JSON_TRUE;
	return ta == tb;
}

/*
 * mergeMap: merge `patch` into `orig` (both private copies, changed in
 * place) by the patch tags of `type`. New reference or NULL (s set).
 */
static json_t *merge_map(json_t *orig, json_t *patch, enum smp_type type,
			 struct smp *s)
{
	const char *bad = "invalid patch format of primitive list";
	size_t n = json_object_size(patch), nk = 0, i;
	const struct smp_field *f;
	json_t *d, *pv, *ov, *m;
	const char *k, *name, *ds;
	char **keys = NULL;
	bool del;

	if ((d = json_object_get(patch, DIRECTIVE))) {
		ds = json_string_value(d);
		if (ds && !strcmp(ds, "replace")) {
			json_object_del(patch, DIRECTIVE);
			smp_sanitize(patch);
			return json_incref(patch);
		}
		if (ds && !strcmp(ds, "delete"))
			return json_object();
		fail_patch_type(s, d, patch);
		return NULL;
	}
	if (apply_retain_keys(s, orig, patch) < 0 ||
	    apply_set_element_order(s, orig, patch, type) < 0)
		return NULL;

	n = json_object_size(patch);
	if (!(keys = calloc(n ? n : 1, sizeof(*keys))))
		return NULL;
	json_object_foreach(patch, k, pv) keys[nk++] = strdup(k);
	for (i = 0; i < nk; i++) {
		if (!keys[i])
			goto fail;
		name = keys[i];
		pv = json_object_get(patch, name);
		del = false;
		if (!strncmp(name, DELETE_FROM_PRIMITIVE,
			     strlen(DELETE_FROM_PRIMITIVE))) {
			if (!(name = extract_key(s, name, DELETE_FROM_PRIMITIVE,
						 bad)))
				goto fail;
			if (!*name)
				name = keys[i];
			del = true;
		} else if (name[0] == '$') {
			/* Not a directive here: the Go type drops it. */
			continue;
		}
		if (json_is_null(pv)) {
			json_object_del(orig, name);
			continue;
		}
		ov = json_object_get(orig, name);
		if (!ov || !same_go_type(ov, pv)) {
			if (!del)
				json_object_set_new(orig, name,
						    patch_value(pv));
			continue;
		}
		f = smp_lookup(type, name);
		if (json_is_object(ov))
			m = merge_map(ov, pv, f ? f->type : T_ANY, s);
		else if (json_is_array(ov))
			m = merge_slice_handler(ov, pv, f, del, s);
		else
			m = json_incref(pv);
		if (!m)
			goto fail;
		json_object_set_new(orig, name, m);
	}
	for (i = 0; i < nk; i++)
		free(keys[i]);
	free(keys);
	return json_incref(orig);
fail:
	for (i = 0; i < nk; i++)
		free(keys[i]);
	free(keys);
	return NULL;
}

static bool is_built_in(const struct emu_resource *res)
{
	const struct emu_resource *r;

	for (r = emu_resources; res && r->name; r++)
		if (r == res)
			return true;
	return false;
}

json_t *emu_strategic_merge_patch(const json_t *orig, const json_t *patch,
				  const struct emu_resource *res, int *code,
				  struct buf *msg)
{
	struct smp s = {0, msg};
	enum smp_type type = T_OBJECT;
	json_t *o = NULL, *p = NULL, *out = NULL;
	size_t i;

	if (!is_built_in(res)) {
		*code = 415;
		buf_adds(msg, "the body of the request was in an unknown "
			      "format - accepted media types include: "
			      "application/json-patch+json, "
			      "application/merge-patch+json, "
			      "application/apply-patch+yaml");
		return NULL;
	}
	if (json_is_null(patch))
		return json_deep_copy(orig);
	if (!json_is_object(patch)) {
		*code = 400;
		buf_addf(msg,
			 "json: cannot unmarshal %s into Go value of type "
			 "map[string]interface {}",
			 diff_go_json_kind(patch));
		return NULL;
	}
	for (i = 0; i < sizeof(smp_kinds) / sizeof(smp_kinds[0]); i++)
		if (!strcmp(smp_kinds[i].kind, res->kind))
			type = smp_kinds[i].type;
	o = json_is_object(orig) ? json_deep_copy(orig) : json_object();
	p = json_deep_copy(patch);
	if (!o || !p) {
		smp_fail(&s, 500, "out of memory");
		goto out;
	}
	out = merge_map(o, p, type, &s);
	if (!out && !s.code)
		smp_fail(&s, 500, "out of memory");
out:
	json_decref(o);
	json_decref(p);
	if (!out)
		*code = s.code;
	return out;
}
