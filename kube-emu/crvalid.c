/*
 * Validation of custom resources, as the apiextensions-apiserver's
 * strategy validates them after the metadata: the version's
 * openAPIV3Schema (kube-openapi's validator, for the keywords below), the
 * scale subresource's paths, and the x-kubernetes-list-type invariants
 * (no duplicate item of a set, no duplicate key of a map list).
 *
 * Schema keywords checked: type (with x-kubernetes-int-or-string),
 * enum, minimum/maximum (exclusive too), minLength/maxLength,
 * minItems/maxItems, required, properties, additionalProperties, items.
 * Not checked: pattern, format, multipleOf, min/maxProperties, allOf /
 * anyOf / oneOf / not, x-kubernetes-validations (CEL).
 *
 * Each failure is a cause {"reason", "field", "message"} as kube's
 * field.Error gives it (kubeOpenAPIResultToFieldErrors for the schema).
 * kube walks an object's properties in Go map order, so the order of
 * the causes of sibling fields is its free choice; here it is the
 * schema's. On update, a value equal to the stored one is not checked
 * again (validation ratcheting).
 */
#include <stdlib.h>
#include <string.h>

#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

/*
 * Where causes go. kube-openapi names a field from the root it validates
 * (a /status write validates the status: "replicas"); the cause's field
 * has `prefix` before that name ("status.replicas").
 */
struct vctx {
	json_t *causes;
	const char *prefix; /* NULL: none */
};

static void add(struct vctx *cx, const char *reason, const char *name,
		const char *message)
{
	struct buf field = BUF_INIT;

	if (cx->prefix && *name)
		buf_addf(&field, "%s.%s", cx->prefix, name);
	else
		buf_adds(&field, cx->prefix && !*name ? cx->prefix : name);
	json_array_append_new(cx->causes,
			      json_pack("{s:s, s:s, s:s}", "reason", reason,
					"message", message, "field",
					buf_cstr(&field)));
	buf_release(&field);
}

/* The JSON Schema type name of a value, as kube-openapi infers it. */
static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
		return "integer";
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	default:
		return "null";
	}
}

static bool type_ok(const json_t *schema, const json_t *v)
{
	const char *want = json_string_value(json_object_get(schema, "type"));
	const char *got = type_name(v);

	if (json_is_true(json_object_get(schema, "x-kubernetes-int-or-string")))
		return json_is_integer(v) || json_is_string(v) ||
		       (json_is_real(v) &&
			json_real_value(v) == (double)(json_int_t)json_real_value(v));
	if (!want || !*want || !strcmp(want, got))
		return true;
	/* a number schema takes integers, an integer one integral floats */
	if (!strcmp(want, "number") && json_is_integer(v))
		return true;
	return !strcmp(want, "integer") && json_is_real(v) &&
	       json_real_value(v) == (double)(json_int_t)json_real_value(v);
}

/* Runes of a UTF-8 string (what kube-openapi's length checks count). */
static size_t runes(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

static bool in_enum(const json_t *e, const json_t *v)
{
	const json_t *x;
	size_t i;

	json_array_foreach(e, i, x)
	{
		if (json_equal(x, v))
			return true;
	}
	return false;
}

/* "\"red\", \"blue\"": each allowed value as a string, quoted. */
static void enum_list(const json_t *e, struct buf *out)
{
	const json_t *x;
	char *text;
	size_t i;

	json_array_foreach(e, i, x)
	{
		if (i)
			buf_adds(out, ", ");
		if (json_is_string(x)) {
			emu_go_quote(out, json_string_value(x));
			continue;
		}
		text = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);
		emu_go_quote(out, text ? text : "");
		free(text);
	}
}

/* A bound as kube-openapi prints it: int64 for integers, else %v. */
static void bound(struct buf *out, const json_t *v, const json_t *limit)
{
	double d = json_number_value(limit);

	if (json_is_integer(v))
		buf_addf(out, "%" JSON_INTEGER_FORMAT, (json_int_t)d);
	else
		emu_go_float(out, d);
}

static void check_number(const json_t *schema, const json_t *v,
			 const char *path, struct vctx *cx)
{
	static const struct {
		const char *key, *excl, *cmp, *cmp_excl;
		int sign;
	} limits[] = {
		{"maximum", "exclusiveMaximum", "less than or equal to",
		 "less than", 1},
		{"minimum", "exclusiveMinimum", "greater than or equal to",
		 "greater than", -1},
	};
	struct buf msg = BUF_INIT;
	const json_t *lim;
	double d = json_number_value(v), l;
	bool excl, bad;
	size_t i;

	for (i = 0; i < 2; i++) {
		lim = json_object_get(schema, limits[i].key);
		if (!json_is_number(lim))
			continue;
		l = json_number_value(lim);
		excl = json_is_true(json_object_get(schema, limits[i].excl));
		if (limits[i].sign > 0)
			bad = excl ? d >= l : d > l;
		else
			bad = excl ? d <= l : d < l;
		if (!bad)
			continue;
		buf_reset(&msg);
		buf_adds(&msg, "Invalid value: ");
		emu_field_value(&msg, v);
		buf_addf(&msg, ": %s in body should be %s ", path,
			 excl ? limits[i].cmp_excl : limits[i].cmp);
		bound(&msg, v, lim);
		add(cx, "FieldValueInvalid", path, msg.ptr);
	}
	buf_release(&msg);
}

static void check_string(const json_t *schema, const char *s, const char *path,
			 struct vctx *cx)
{
	const json_t *max = json_object_get(schema, "maxLength");
	const json_t *min = json_object_get(schema, "minLength");
	struct buf msg = BUF_INIT;
	json_int_t n = (json_int_t)runes(s);

	/* the string validator stops at its first failure */
	if (json_is_integer(max) && n > json_integer_value(max)) {
		buf_addf(&msg, "Too long: may not be more than %" JSON_INTEGER_FORMAT
			       " %s",
			 json_integer_value(max),
			 json_integer_value(max) == 1 ? "byte" : "bytes");
		add(cx, "FieldValueTooLong", path, msg.ptr);
	} else if (json_is_integer(min) && n < json_integer_value(min)) {
		buf_adds(&msg, "Invalid value: ");
		emu_go_quote(&msg, s);
		buf_addf(&msg,
			 ": %s in body should be at least %" JSON_INTEGER_FORMAT
			 " chars long",
			 path, json_integer_value(min));
		add(cx, "FieldValueInvalid", path, msg.ptr);
	}
	buf_release(&msg);
}

static void validate_node(const json_t *schema, const json_t *v,
			  const json_t *old, struct buf *path, struct vctx *cx,
			  unsigned depth);

static void check_array(const json_t *schema, const json_t *v,
			const json_t *old, struct buf *path, struct vctx *cx,
			unsigned depth)
{
	const json_t *items = json_object_get(schema, "items");
	const json_t *max = json_object_get(schema, "maxItems");
	const json_t *min = json_object_get(schema, "minItems");
	struct buf msg = BUF_INIT;
	size_t plen = path->len, i, n = json_array_size(v);
	const json_t *e;

	if (json_is_object(items))
		json_array_foreach(v, i, e)
		{
			buf_addf(path, "[%zu]", i);
			validate_node(items, e, json_array_get(old, i), path,
				      cx, depth + 1);
			buf_truncate(path, plen);
		}
	if (json_is_integer(min) && (json_int_t)n < json_integer_value(min)) {
		buf_addf(&msg,
			 "Invalid value: %zu: %s in body should have at least "
			 "%" JSON_INTEGER_FORMAT " items",
			 n, buf_cstr(path), json_integer_value(min));
		add(cx, "FieldValueInvalid", buf_cstr(path), msg.ptr);
	}
	if (json_is_integer(max) && (json_int_t)n > json_integer_value(max)) {
		buf_reset(&msg);
		buf_addf(&msg,
			 "Too many: %zu: must have at most %" JSON_INTEGER_FORMAT
			 " %s",
			 n, json_integer_value(max),
			 json_integer_value(max) == 1 ? "item" : "items");
		add(cx, "FieldValueTooMany", buf_cstr(path), msg.ptr);
	}
	buf_release(&msg);
}

static void check_object(const json_t *schema, const json_t *v,
			 const json_t *old, struct buf *path, struct vctx *cx,
			 unsigned depth)
{
	const json_t *props = json_object_get(schema, "properties");
	const json_t *ap = json_object_get(schema, "additionalProperties");
	const json_t *req = json_object_get(schema, "required"), *ps, *x;
	size_t plen = path->len, i;
	const char *k;

	json_object_foreach((json_t *)props, k, ps)
	{
		if (!(x = json_object_get(v, k)))
			continue;
		buf_addf(path, "%s%s", plen ? "." : "", k);
		validate_node(ps, x, json_object_get(old, k), path, cx,
			      depth + 1);
		buf_truncate(path, plen);
	}
	json_array_foreach(req, i, x)
	{
		k = json_string_value(x);
		if (!k || json_object_get(v, k))
			continue;
		buf_addf(path, "%s%s", plen ? "." : "", k);
		add(cx, "FieldValueRequired", buf_cstr(path),
		    "Required value");
		buf_truncate(path, plen);
	}
	if (!json_is_object(ap))
		return;
	json_object_foreach((json_t *)v, k, x)
	{
		if (json_object_get(props, k))
			continue;
		buf_addf(path, "%s%s", plen ? "." : "", k);
		validate_node(ap, x, json_object_get(old, k), path, cx,
			      depth + 1);
		buf_truncate(path, plen);
	}
}

/* One value against its schema, kube-openapi's validators in order. */
static void validate_node(const json_t *schema, const json_t *v,
			  const json_t *old, struct buf *path, struct vctx *cx,
			  unsigned depth)
{
	const json_t *e = json_object_get(schema, "enum");
	const char *p = buf_cstr(path);
	struct buf msg = BUF_INIT;
	bool typed;

	if (depth > 64 || !json_is_object(schema) || json_is_null(v))
		return;
	/* ratcheting: what the update did not change is not checked again */
	if (old && json_equal(v, old))
		return;
	typed = type_ok(schema, v);
	if (!typed) {
		buf_adds(&msg, "Invalid value: ");
		emu_go_quote(&msg, type_name(v));
		buf_addf(&msg, ": %s in body must be of type %s: ", p,
			 json_string_value(json_object_get(schema, "type")));
		emu_go_quote(&msg, type_name(v));
		add(cx, "FieldValueTypeInvalid", p, msg.ptr);
	}
	if (typed && json_is_string(v))
		check_string(schema, json_string_value(v), p, cx);
	if (typed && json_is_number(v))
		check_number(schema, v, p, cx);
	if (typed && json_is_array(v))
		check_array(schema, v, old, path, cx, depth);
	if (json_is_array(e) && !in_enum(e, v)) {
		buf_reset(&msg);
		buf_adds(&msg, "Unsupported value: ");
		emu_field_value(&msg, v);
		buf_adds(&msg, ": supported values: ");
		enum_list(e, &msg);
		add(cx, "FieldValueNotSupported", buf_cstr(path), msg.ptr);
	}
	if (typed && json_is_object(v))
		check_object(schema, v, old, path, cx, depth);
	buf_release(&msg);
}

const json_t *emu_crd_path_get(const json_t *obj, const char *path)
{
	const char *p = path, *dot;
	char key[256];
	size_t n;

	if (*p == '.')
		p++;
	while (obj && *p) {
		dot = strchr(p, '.');
		n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = 0;
		obj = json_object_get(obj, key);
		p += n + (dot ? 1 : 0);
	}
	return obj;
}

int emu_crd_path_set(json_t *obj, const char *path, json_t *value)
{
	const char *p = path, *dot;
	char key[256];
	json_t *next;
	size_t n;

	if (*p == '.')
		p++;
	for (;;) {
		dot = strchr(p, '.');
		n = dot ? (size_t)(dot - p) : strlen(p);
		if (!n || n >= sizeof(key) || !json_is_object(obj))
			break;
		memcpy(key, p, n);
		key[n] = 0;
		if (!dot)
			return json_object_set_new(obj, key, value);
		next = json_object_get(obj, key);
		if (!json_is_object(next)) {
			next = json_object();
			if (json_object_set_new(obj, key, next) < 0)
				break;
		}
		obj = next;
		p = dot + 1;
	}
	json_decref(value);
	return -1;
}

/* Go's %T of a decoded JSON value. */
static const char *go_type(const json_t *v)
{
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
	default:
		return "<nil>";
	}
}

/*
 * A scale path's value: an int64 (or, with `string`, a string) where
 * kube reads one with unstructured.NestedInt64/NestedString.
 */
static void check_scale_path(const json_t *obj, const char *path, bool string,
			     bool replicas, json_t *causes)
{
	struct vctx cx = {causes, NULL};
	const json_t *v = emu_crd_path_get(obj, path);
	struct buf msg = BUF_INIT;
	json_int_t n;

	if (!v)
		goto out;
	if (string ? !json_is_string(v) : !json_is_integer(v)) {
		buf_addf(&msg, "Invalid value: %s: %s accessor error: ",
			 string ? "\"\"" : "0", path);
		emu_go_value(&msg, v);
		buf_addf(&msg, " is of the type %s, expected %s", go_type(v),
			 string ? "string" : "int64");
		add(&cx, "FieldValueInvalid", path, msg.ptr);
		goto out;
	}
	if (!replicas)
		goto out;
	n = json_integer_value(v);
	if (n < 0)
		buf_addf(&msg,
			 "Invalid value: %" JSON_INTEGER_FORMAT
			 ": should be a non-negative integer",
			 n);
	else if (n > 2147483647)
		buf_addf(&msg,
			 "Invalid value: %" JSON_INTEGER_FORMAT
			 ": should be less than or equal to 2147483647",
			 n);
	if (msg.len)
		add(&cx, "FieldValueInvalid", path, msg.ptr);
out:
	buf_release(&msg);
}

/* Do items a and b of a set (nkeys 0) or a map list have one value? */
static bool same_item(const json_t *a, const json_t *b,
		      const json_t *const *keys, size_t nkeys)
{
	const json_t *x, *y;
	size_t k;

	if (!nkeys)
		return json_equal(a, b);
	for (k = 0; k < nkeys; k++) {
		x = json_object_get(a, json_string_value(keys[k]));
		y = json_object_get(b, json_string_value(keys[k]));
		if ((x || y) && !(x && y && json_equal(x, y)))
			return false;
	}
	return true;
}

/* How many items before index i have its value (its keys)? */
static size_t seen_before(const json_t *list, size_t i,
			  const json_t *const *keys, size_t nkeys)
{
	size_t j, n = 0;

	for (j = 0; j < i; j++)
		if (same_item(json_array_get(list, j), json_array_get(list, i),
			      keys, nkeys))
			n++;
	return n;
}

static void list_types(const json_t *schema, const json_t *v, struct buf *path,
		       json_t *causes, unsigned depth);

/* The first repeat of each duplicate of a set or map list. */
static void list_duplicates(const json_t *schema, const json_t *v,
			    struct buf *path, json_t *causes)
{
	struct vctx cx = {causes, NULL};
	const char *type =
		json_string_value(json_object_get(schema, "x-kubernetes-list-type"));
	const json_t *mk = json_object_get(schema, "x-kubernetes-list-map-keys");
	const json_t *keys[8], *x, *e;
	size_t nkeys = 0, i, j, plen = path->len;
	struct buf msg = BUF_INIT;
	json_t *key;
	char *text;

	if (!type || (strcmp(type, "set") && strcmp(type, "map")))
		return;
	if (!strcmp(type, "map")) {
		json_array_foreach(mk, i, x)
		{
			if (nkeys < 8 && json_is_string(x))
				keys[nkeys++] = x;
		}
		if (!nkeys)
			return;
	}
	json_array_foreach(v, i, e)
	{
		/* the second of each value is named, once */
		if (seen_before(v, i, keys, nkeys) != 1)
			continue;
		buf_addf(path, "[%zu]", i);
		buf_reset(&msg);
		buf_adds(&msg, "Duplicate value: ");
		if (nkeys) {
			key = json_object();
			for (j = 0; j < nkeys; j++) {
				const char *kn = json_string_value(keys[j]);

				if (json_object_get(e, kn))
					json_object_set(key, kn,
							json_object_get(e, kn));
			}
			text = json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS);
			buf_adds(&msg, text ? text : "{}");
			free(text);
			json_decref(key);
		} else {
			emu_field_value(&msg, e);
		}
		add(&cx, "FieldValueDuplicate", buf_cstr(path), msg.ptr);
		buf_truncate(path, plen);
	}
	buf_release(&msg);
}

static void list_types(const json_t *schema, const json_t *v, struct buf *path,
		       json_t *causes, unsigned depth)
{
	const json_t *props = json_object_get(schema, "properties");
	const json_t *ap = json_object_get(schema, "additionalProperties");
	const json_t *items = json_object_get(schema, "items"), *ps, *x;
	size_t plen = path->len, i;
	const char *k;

	if (depth > 64 || !json_is_object(schema))
		return;
	if (json_is_array(v)) {
		list_duplicates(schema, v, path, causes);
		json_array_foreach(v, i, x)
		{
			buf_addf(path, "[%zu]", i);
			list_types(items, x, path, causes, depth + 1);
			buf_truncate(path, plen);
		}
		return;
	}
	if (!json_is_object(v))
		return;
	json_object_foreach((json_t *)v, k, x)
	{
		ps = json_object_get(props, k);
		if (!ps && json_is_object(ap))
			ps = ap;
		if (!ps)
			continue;
		if (ps == ap)
			buf_addf(path, "[%s]", k);
		else
			buf_addf(path, "%s%s", plen ? "." : "", k);
		list_types(ps, x, path, causes, depth + 1);
		buf_truncate(path, plen);
	}
}

void emu_crd_validate(const struct emu_resource *res, const json_t *obj,
		      const json_t *old, bool status, json_t *causes)
{
	struct emu_crd_scale scale;
	struct buf path = BUF_INIT;
	json_t *schema = emu_crd_schema(res, &scale), *top, *old_causes;
	struct vctx cx = {causes, NULL};

	if (!schema)
		goto scale;
	if (status) {
		/* ValidateStatusUpdate: the status against its schema */
		top = json_object_get(json_object_get(schema, "properties"),
				      "status");
		cx.prefix = "status";
		if (json_object_get(obj, "status"))
			validate_node(top, json_object_get(obj, "status"),
				      json_object_get(old, "status"), &path,
				      &cx, 0);
	} else {
		validate_node(schema, obj, old, &path, &cx, 0);
	}
scale:
	if (scale.spec_replicas && !status)
		check_scale_path(obj, scale.spec_replicas, false, true, causes);
	if (scale.status_replicas)
		check_scale_path(obj, scale.status_replicas, false, true,
				 causes);
	if (scale.label_selector)
		check_scale_path(obj, scale.label_selector, true, false,
				 causes);
	if (!schema || status)
		goto out;
	/* list types: ratcheted, only when the stored object kept them */
	old_causes = json_array();
	buf_reset(&path);
	if (old && old_causes)
		list_types(schema, old, &path, old_causes, 0);
	if (!json_array_size(old_causes))
		list_types(schema, obj, &path, causes, 0);
	json_decref(old_causes);
out:
	json_decref(schema);
	buf_release(&path);
}
