/*
 * Decoding, encoding, zero values and schemas of the built-in kinds from
 * the generated table of their Go types (gotypes.h, gotypes_gen.c): what
 * encoding/json (as sigs.k8s.io/json) does with a body on its way into
 * kube-apiserver's Go structs and out of them again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff/gotypes.h"
#include "diff/internal.h"

#include "util/banned.h" /* last */

/* Deepest nesting walked; deeper values are kept as they are. */
#define MAX_DEPTH 64

bool diff_gotype_kind_at(size_t i, const char **group, const char **version,
			 const char **kind, int *root)
{
	const struct diff_gotype_kind *k = diff_gotype_kinds;

	for (; k->kind && i; k++, i--)
		;
	if (!k->kind)
		return false;
	*group = k->group;
	*version = k->version;
	*kind = k->kind;
	*root = k->type;
	return true;
}

int diff_gotype_root(const char *group, const char *version, const char *kind)
{
	const struct diff_gotype_kind *k;

	for (k = diff_gotype_kinds; k->kind; k++)
		if (!strcmp(k->group, group) && !strcmp(k->version, version) &&
		    !strcmp(k->kind, kind))
			return k->type;
	return -1;
}

const struct diff_gotype_field *diff_gotype_field(int type, const char *name)
{
	const struct diff_gotype *t;
	size_t lo = 0, hi, mid;
	int c;

	if (type < 0 || (size_t)type >= diff_ngotypes)
		return NULL;
	t = &diff_gotypes[type];
	hi = t->nfields;
	while (lo < hi) {
		mid = (lo + hi) / 2;
		c = strcmp(name, t->fields[mid].name);
		if (!c)
			return &t->fields[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static bool is_managed_fields(int type, const struct diff_gotype_field *f);

/* ---- decoding ---- */

struct dec {
	json_t *unknown;
	struct buf *msg;
	struct buf path;  /* JSON path with indexes: unknown fields */
	struct buf typed; /* the same as SMD writes it: [name="web"] */
	struct buf field; /* JSON path without indexes: type errors */
	int error;
};

/*
 * "json: cannot unmarshal string into Go struct field
 * DeploymentSpec.spec.replicas of type int32": the struct holding the
 * field (its Go name without the package), the path of JSON names
 * without indexes, the Go type decoded into. Only the first error counts,
 * as encoding/json reports the earliest.
 */
static void type_error(struct dec *d, const json_t *v, int holder, int type)
{
	const char *owner = diff_gotypes[holder].gotype, *dot = strrchr(owner, '.');
	char num[64];

	if (d->error)
		return;
	d->error = -1;
	buf_adds(d->msg, "json: cannot unmarshal ");
	if (json_is_real(v) && diff_gotypes[type].kind == DIFF_GT_INT) {
		snprintf(num, sizeof(num), "%.17g", json_real_value(v));
		buf_addf(d->msg, "number %s", num);
	} else {
		buf_adds(d->msg, diff_go_json_kind(v));
	}
	buf_addf(d->msg, " into Go struct field %s.%s of type %s",
		 dot ? dot + 1 : owner, buf_cstr(&d->field),
		 diff_gotypes[type].gotype);
}

static void decode_value(struct dec *d, json_t *v, int holder,
			 const struct diff_gotype_field *f, int type, unsigned depth);

static void decode_struct(struct dec *d, json_t *obj, int type, unsigned depth)
{
	size_t plen = d->path.len, flen = d->field.len, tlen = d->typed.len;
	const struct diff_gotype_field *f;
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(obj, tmp, k, v)
	{
		buf_addf(&d->path, "%s%s", plen ? "." : "", k);
		buf_addf(&d->field, "%s%s", flen ? "." : "", k);
		buf_addf(&d->typed, ".%s", k);
		f = diff_gotype_field(type, k);
		if (!f) {
			if (d->unknown)
				json_array_append_new(
					d->unknown,
					json_pack("{s:s, s:s}", "path",
						  buf_cstr(&d->path), "typed",
						  buf_cstr(&d->typed)));
			json_object_del(obj, k);
		} else if (json_is_null(v)) {
			/* nil, or the zero value: the field goes */
			json_object_del(obj, k);
		} else if (!is_managed_fields(type, f)) {
			decode_value(d, v, type, f, f->type, depth + 1);
		}
		buf_truncate(&d->path, plen);
		buf_truncate(&d->field, flen);
		buf_truncate(&d->typed, tlen);
	}
}

/*
 * An item's place in SMD's path syntax: [name="web"] by the keys of a
 * map-list, [="v"] in a set, [3] otherwise.
 */
static void typed_item(struct buf *out, const json_t *item,
		       const struct diff_gotype_field *f, size_t i)
{
	struct buf text = BUF_INIT;
	struct diff_pe pe;
	struct diff_path p = {&pe, 1};
	const char *const *k;
	json_t *key = NULL;

	if (f && f->rel == DIFF_GT_REL_MAP && json_is_object(item)) {
		key = json_object();
		for (k = f->keys; k && *k; k++)
			if (json_object_get(item, *k))
				json_object_set(key, *k,
						json_object_get(item, *k));
		pe.type = DIFF_PE_KEY;
		diff_json_dump(key, 0, &text);
	} else if (f && f->rel == DIFF_GT_REL_SET && !json_is_object(item) &&
		   !json_is_array(item)) {
		pe.type = DIFF_PE_VALUE;
		diff_json_dump(item, 0, &text);
	}
	if (text.len) {
		pe.text = buf_cstr(&text);
		diff_path_format(&p, out);
	} else {
		buf_addf(out, "[%zu]", i);
	}
	json_decref(key);
	buf_release(&text);
}

static void decode_value(struct dec *d, json_t *v, int holder,
			 const struct diff_gotype_field *f, int type, unsigned depth)
{
	const struct diff_gotype *t = &diff_gotypes[type];
	size_t plen = d->path.len, tlen = d->typed.len, i;
	const char *k;
	json_t *e;
	bool ok = true;

	if (depth > MAX_DEPTH || json_is_null(v))
		return;
	switch (t->kind) {
	case DIFF_GT_STRUCT:
		if (!(ok = json_is_object(v)))
			break;
		decode_struct(d, v, type, depth);
		return;
	case DIFF_GT_SLICE:
		if (!(ok = json_is_array(v)))
			break;
		json_array_foreach(v, i, e)
		{
			buf_addf(&d->path, "[%zu]", i);
			typed_item(&d->typed, e, f, i);
			decode_value(d, e, holder, NULL, t->elem, depth + 1);
			buf_truncate(&d->path, plen);
			buf_truncate(&d->typed, tlen);
		}
		return;
	case DIFF_GT_MAP:
		if (!(ok = json_is_object(v)))
			break;
		json_object_foreach(v, k, e)
		{
			buf_addf(&d->path, "[%s]", k);
			buf_addf(&d->typed, ".%s", k);
			decode_value(d, e, holder, NULL, t->elem, depth + 1);
			buf_truncate(&d->path, plen);
			buf_truncate(&d->typed, tlen);
		}
		return;
	case DIFF_GT_STRING:
	case DIFF_GT_BYTES:
	case DIFF_GT_TIME:
	case DIFF_GT_MICRO_TIME:
	case DIFF_GT_DURATION:
		ok = json_is_string(v);
		break;
	case DIFF_GT_BOOL:
		ok = json_is_boolean(v);
		break;
	case DIFF_GT_INT:
		ok = json_is_integer(v);
		break;
	case DIFF_GT_FLOAT:
		ok = json_is_number(v);
		break;
	case DIFF_GT_INT_OR_STRING:
		ok = json_is_integer(v) || json_is_string(v);
		break;
	case DIFF_GT_QUANTITY:
		/* Its own parser (defaults.c) words what it refuses. */
	case DIFF_GT_RAW:
		break;
	}
	if (!ok)
		type_error(d, v, holder, type);
}

int diff_gotype_decode(json_t *obj, int root, json_t *unknown, struct buf *msg)
{
	struct dec d = {unknown, msg, BUF_INIT, BUF_INIT, BUF_INIT, 0};

	if (root >= 0 && (size_t)root < diff_ngotypes && json_is_object(obj))
		decode_struct(&d, obj, root, 0);
	buf_release(&d.path);
	buf_release(&d.typed);
	buf_release(&d.field);
	return d.error;
}

/* ---- encoding ---- */

static void encode_value(json_t *v, int type, unsigned depth);

/*
 * An object's managedFields are the server's own bookkeeping, written
 * and shared between stored objects by the store: never walked here.
 */
static bool is_managed_fields(int type, const struct diff_gotype_field *f)
{
	return !strcmp(f->name, "managedFields") &&
	       !strcmp(diff_gotypes[type].name,
		       "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
}

/* The zero value of a field that Go writes when it is absent (NULL: it
 * writes nothing). */
static json_t *zero_field(const struct diff_gotype_field *f, unsigned depth)
{
	const struct diff_gotype *t = &diff_gotypes[f->type];
	json_t *z;

	if (f->flags & DIFF_GT_F_POINTER)
		return f->flags & DIFF_GT_F_OMITEMPTY ? NULL : json_null();
	switch (t->kind) {
	case DIFF_GT_STRUCT:
		if (f->flags & DIFF_GT_F_OMITZERO)
			return NULL;
		z = json_object();
		encode_value(z, f->type, depth + 1);
		return z;
	case DIFF_GT_QUANTITY:
		return f->flags & DIFF_GT_F_OMITZERO ? NULL : json_string("0");
	case DIFF_GT_INT_OR_STRING:
		return f->flags & DIFF_GT_F_OMITZERO ? NULL : json_integer(0);
	case DIFF_GT_DURATION:
		return f->flags & DIFF_GT_F_OMITZERO ? NULL : json_string("0s");
	case DIFF_GT_TIME:
	case DIFF_GT_MICRO_TIME:
	case DIFF_GT_RAW:
		return f->flags & DIFF_GT_F_OMITZERO ? NULL : json_null();
	default:
		break;
	}
	if (f->flags & (DIFF_GT_F_OMITEMPTY | DIFF_GT_F_OMITZERO))
		return NULL;
	switch (t->kind) {
	case DIFF_GT_STRING:
		return json_string("");
	case DIFF_GT_BOOL:
		return json_false();
	case DIFF_GT_INT:
		return json_integer(0);
	case DIFF_GT_FLOAT:
		return json_real(0);
	default:
		return json_null(); /* nil slice, map or []byte */
	}
}

/* Does encoding/json's omitempty leave out this (present) value? */
static bool omitted(const struct diff_gotype_field *f, const json_t *v)
{
	const struct diff_gotype *t = &diff_gotypes[f->type];

	if (json_is_null(v))
		return (f->flags & (DIFF_GT_F_OMITEMPTY | DIFF_GT_F_OMITZERO)) != 0;
	if (!(f->flags & DIFF_GT_F_OMITEMPTY) || (f->flags & DIFF_GT_F_POINTER))
		return false;
	switch (t->kind) {
	case DIFF_GT_STRING:
	case DIFF_GT_BYTES:
		return json_is_string(v) && !json_string_length(v);
	case DIFF_GT_BOOL:
		return json_is_false(v);
	case DIFF_GT_INT:
		return json_is_integer(v) && !json_integer_value(v);
	case DIFF_GT_FLOAT:
		return json_is_number(v) && json_number_value(v) == 0;
	case DIFF_GT_SLICE:
		return json_is_array(v) && !json_array_size(v);
	case DIFF_GT_MAP:
		return json_is_object(v) && !json_object_size(v);
	default:
		return false; /* structs are never empty to omitempty */
	}
}

static int order_cmp(const void *a, const void *b)
{
	const struct diff_gotype_field *const *x = a, *const *y = b;

	return (*x)->order - (*y)->order;
}

/*
 * Encode a struct in place: its members in Go's order, omitted and zero
 * ones as encoding/json writes them. The member values stay the same
 * objects (encoded in place themselves), so pointers into obj stay good.
 */
static void encode_struct(json_t *obj, int type, unsigned depth)
{
	const struct diff_gotype *t = &diff_gotypes[type];
	const struct diff_gotype_field *inline_f[64], **fields = inline_f;
	json_t *inline_v[64], **vals = inline_v, *extra, *v;
	const char *k;
	size_t i;

	if (t->nfields > sizeof(inline_f) / sizeof(*inline_f) &&
	    (!(fields = malloc(t->nfields * sizeof(*fields))) ||
	     !(vals = malloc(t->nfields * sizeof(*vals))))) {
		free(fields == inline_f ? NULL : fields);
		return;
	}
	for (i = 0; i < t->nfields; i++)
		fields[i] = &t->fields[i];
	qsort(fields, t->nfields, sizeof(*fields), order_cmp);
	for (i = 0; i < t->nfields; i++) {
		v = json_object_get(obj, fields[i]->name);
		if (!v || (json_is_null(v) &&
			   !is_managed_fields(type, fields[i]))) {
			/* null and absent decode alike: the zero value */
			vals[i] = zero_field(fields[i], depth);
			continue;
		}
		if (is_managed_fields(type, fields[i])) {
			/* [] resets them: the field manager sees it first */
			vals[i] = json_incref(v);
			continue;
		}
		if (omitted(fields[i], v)) {
			vals[i] = NULL;
			continue;
		}
		encode_value(v, fields[i]->type, depth + 1);
		vals[i] = json_incref(v);
	}
	/* What the table does not know stays, after the known members. */
	extra = json_object();
	json_object_foreach(obj, k, v)
	{
		if (!diff_gotype_field(type, k))
			json_object_set(extra, k, v);
	}
	json_object_clear(obj);
	for (i = 0; i < t->nfields; i++)
		if (vals[i])
			json_object_set_new(obj, fields[i]->name, vals[i]);
	json_object_update(obj, extra);
	json_decref(extra);
	if (fields != inline_f)
		free(fields);
	if (vals != inline_v)
		free(vals);
}

static void encode_value(json_t *v, int type, unsigned depth)
{
	const struct diff_gotype *t = &diff_gotypes[type];
	const char *k;
	json_t *e;
	size_t i;

	if (!v || depth > MAX_DEPTH)
		return;
	switch (t->kind) {
	case DIFF_GT_STRUCT:
		if (json_is_object(v))
			encode_struct(v, type, depth);
		return;
	case DIFF_GT_SLICE:
		json_array_foreach(v, i, e)
		{
			encode_value(e, t->elem, depth + 1);
		}
		return;
	case DIFF_GT_MAP:
		json_object_foreach(v, k, e)
		{
			encode_value(e, t->elem, depth + 1);
		}
		return;
	default:
		return;
	}
}

void diff_gotype_encode(json_t *obj, int root)
{
	if (root >= 0 && (size_t)root < diff_ngotypes && json_is_object(obj))
		encode_struct(obj, root, 0);
}

json_t *diff_gotype_zero(int root)
{
	json_t *obj = json_object();

	diff_gotype_encode(obj, root);
	return obj;
}

/* ---- schemas ---- */

static json_t *schema_of(int type, enum diff_gotype_rel rel, const char *const *keys,
			 int *stack, unsigned depth);

static json_t *schema_struct(int type, enum diff_gotype_rel rel, int *stack,
			     unsigned depth)
{
	const struct diff_gotype *t = &diff_gotypes[type];
	json_t *props = json_object(), *s, *p;
	const struct diff_gotype_field *f;
	size_t i;

	for (i = 0; i < t->nfields; i++) {
		f = &t->fields[i];
		p = schema_of(f->type, f->rel, f->keys, stack, depth + 1);
		json_object_set_new(props, f->name, p);
	}
	s = json_pack("{s:s, s:o}", "type", "object", "properties", props);
	if (rel == DIFF_GT_REL_ATOMIC || t->rel == DIFF_GT_REL_ATOMIC)
		json_object_set_new(s, "x-kubernetes-map-type",
				    json_string("atomic"));
	return s;
}

/* The defaults of a map-list's key fields, on the items' properties. */
static void key_defaults(json_t *items, int elem, const char *const *keys)
{
	const struct diff_gotype_field *f;
	json_t *def, *prop;

	for (; keys && *keys; keys++) {
		f = diff_gotype_field(elem, *keys);
		prop = json_object_get(json_object_get(items, "properties"),
				       *keys);
		if (!f || !f->def || !prop)
			continue;
		def = json_loads(f->def, JSON_DECODE_ANY, NULL);
		if (def)
			json_object_set_new(prop, "default", def);
	}
}

static json_t *schema_of(int type, enum diff_gotype_rel rel, const char *const *keys,
			 int *stack, unsigned depth)
{
	const struct diff_gotype *t = &diff_gotypes[type];
	const char *const *key;
	json_t *s, *items, *k;
	unsigned i;

	switch (t->kind) {
	case DIFF_GT_STRUCT:
		for (i = 0; i < depth; i++)
			if (stack[i] == type)
				return json_pack("{s:s, s:b}", "type", "object",
						 "x-kubernetes-preserve-unknown-"
						 "fields",
						 1);
		if (depth >= MAX_DEPTH)
			return json_object();
		stack[depth] = type;
		return schema_struct(type, rel, stack, depth);
	case DIFF_GT_SLICE:
		items = schema_of(t->elem, DIFF_GT_REL_DEFAULT, NULL, stack, depth);
		s = json_pack("{s:s, s:o}", "type", "array", "items", items);
		switch (rel) {
		case DIFF_GT_REL_SET:
			json_object_set_new(s, "x-kubernetes-list-type",
					    json_string("set"));
			break;
		case DIFF_GT_REL_MAP:
			json_object_set_new(s, "x-kubernetes-list-type",
					    json_string("map"));
			k = json_array();
			for (key = keys; key && *key; key++)
				json_array_append_new(k, json_string(*key));
			json_object_set_new(s, "x-kubernetes-list-map-keys", k);
			key_defaults(items, t->elem, keys);
			break;
		default:
			json_object_set_new(s, "x-kubernetes-list-type",
					    json_string("atomic"));
			break;
		}
		return s;
	case DIFF_GT_MAP:
		s = json_pack("{s:s, s:o}", "type", "object",
			      "additionalProperties",
			      schema_of(t->elem, DIFF_GT_REL_DEFAULT, NULL, stack,
					depth));
		if (rel == DIFF_GT_REL_ATOMIC)
			json_object_set_new(s, "x-kubernetes-map-type",
					    json_string("atomic"));
		return s;
	case DIFF_GT_STRING:
	case DIFF_GT_BYTES:
	case DIFF_GT_TIME:
	case DIFF_GT_MICRO_TIME:
	case DIFF_GT_DURATION:
		return json_pack("{s:s}", "type", "string");
	case DIFF_GT_BOOL:
		return json_pack("{s:s}", "type", "boolean");
	case DIFF_GT_INT:
		return json_pack("{s:s}", "type", "integer");
	case DIFF_GT_FLOAT:
		return json_pack("{s:s}", "type", "number");
	case DIFF_GT_QUANTITY:
	case DIFF_GT_INT_OR_STRING:
		return json_pack("{s:b}", "x-kubernetes-int-or-string", 1);
	case DIFF_GT_RAW:
		break;
	}
	return json_object();
}

json_t *diff_gotype_schema(int root)
{
	int stack[MAX_DEPTH + 1];

	if (root < 0 || (size_t)root >= diff_ngotypes)
		return NULL;
	return schema_of(root, DIFF_GT_REL_DEFAULT, NULL, stack, 0);
}

const char *diff_go_json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "bool";
	default:
		return "null";
	}
}
