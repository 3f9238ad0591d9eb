/*
 * Object name rules, with kube-apiserver's messages.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

static const char subdomain_msg[] =
	"a lowercase RFC 1123 subdomain must consist of lower case "
	"alphanumeric characters, '-' or '.', and must start and end with an "
	"alphanumeric character (e.g. 'example.com', regex used for "
	"validation is "
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
static const char label_msg[] =
	"a lowercase RFC 1123 label must consist of lower case alphanumeric "
	"characters or '-', and must start and end with an alphanumeric "
	"character (e.g. 'my-name',  or '123-abc', regex used for validation "
	"is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
static const char dns1035_msg[] =
	"a DNS-1035 label must consist of lower case alphanumeric characters "
	"or '-', start with an alphabetic character, and end with an "
	"alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used "
	"for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One RFC 1123 label in s[0..len). */
static bool label_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return false;
	for (i = 0; i < len; i++)
		if (!is_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

/* The form of an RFC 1123 subdomain, whatever its length. */
static bool subdomain_form_ok(const char *name)
{
	const char *p, *dot;

	for (p = name;; p = dot + 1) {
		dot = strchr(p, '.');
		if (!label_ok(p, dot ? (size_t)(dot - p) : strlen(p)))
			return false;
		if (!dot)
			return true;
	}
}

int emu_name_check(const char *name, enum emu_name_rule rule, const char **why)
{
	size_t len = strlen(name);
	const char *p, *dot;

	switch (rule) {
	case EMU_NAME_PATH:
		if (!strcmp(name, "."))
			*why = "may not be '.'";
		else if (!strcmp(name, ".."))
			*why = "may not be '..'";
		else if (strchr(name, '/'))
			*why = "may not contain '/'";
		else if (strchr(name, '%'))
			*why = "may not contain '%'";
		else
			return 0;
		return -1;
	case EMU_NAME_LABEL:
	case EMU_NAME_DNS1035:
		if (len > 63) {
			*why = "must be no more than 63 characters";
			return -1;
		}
		if (!label_ok(name, len) ||
		    (rule == EMU_NAME_DNS1035 &&
		     !(name[0] >= 'a' && name[0] <= 'z'))) {
			*why = rule == EMU_NAME_LABEL ? label_msg : dns1035_msg;
			return -1;
		}
		return 0;
	case EMU_NAME_SUBDOMAIN:
		if (len > 253) {
			*why = "must be no more than 253 characters";
			return -1;
		}
		for (p = name;; p = dot + 1) {
			dot = strchr(p, '.');
			if (!label_ok(p, dot ? (size_t)(dot - p) : strlen(p))) {
				*why = subdomain_msg;
				return -1;
			}
			if (!dot)
				break;
		}
		return 0;
	}
	return 0;
}

/*
 * Object validation: the checks of the validation packages of k8s.io/kubernetes
 * that tests run into, with kube-apiserver's field paths and texts.
 * Values a Go decoder would refuse (a number where a string belongs, bad
 * base64) come first and answer 400 BadRequest as kube's decoder does;
 * the rest is gathered into one 422 Invalid Status.
 */

/* Largest total of annotation keys and values (TotalAnnotationSizeLimitB). */
#define ANNOTATIONS_MAX (256 * 1024)

static const char qualified_fmt[] = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
static const char qualified_msg[] =
	"must consist of alphanumeric characters, '-', '_' or '.', and must "
	"start and end with an alphanumeric character (e.g. 'MyName',  or "
	"'my.name',  or '123-abc', regex used for validation is "
	"'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
static const char label_value_msg[] =
	"a valid label must be an empty string or consist of alphanumeric "
	"characters, '-', '_' or '.', and must start and end with an "
	"alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
	"regex used for validation is "
	"'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
static const char config_key_msg[] =
	"a valid config key must consist of alphanumeric characters, '-', '_' "
	"or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used "
	"for validation is '[-._a-zA-Z0-9]+')";
static const char port_range_msg[] = "must be between 1 and 65535, inclusive";

/* The causes found so far. */
struct verrs {
	json_t *causes;	  /* [{reason, message, field}] */
	struct buf *msgs; /* "field: body" of each, for the aggregate */
	size_t n;
};

static void add_cause(struct verrs *v, const char *reason, const char *field,
		      const char *body)
{
	json_t *c = json_pack("{s:s, s:s}", "reason", reason, "message", body);
	struct buf line = BUF_INIT, *grown;
	size_t i;

	if (*field)
		json_object_set_new(c, "field", json_string(field));
	json_array_append_new(v->causes, c);
	/* The aggregate message lists each distinct text once, as kube. */
	if (*field)
		buf_addf(&line, "%s: %s", field, body);
	else
		buf_adds(&line, body);
	for (i = 0; i < v->n; i++)
		if (!strcmp(buf_cstr(&v->msgs[i]), buf_cstr(&line)))
			break;
	if (i < v->n) {
		buf_release(&line);
		return;
	}
	grown = realloc(v->msgs, (v->n + 1) * sizeof(*v->msgs));
	if (!grown) {
		buf_release(&line);
		return;
	}
	v->msgs = grown;
	v->msgs[v->n++] = line;
}

void emu_go_quote(struct buf *out, const char *s)
{
	buf_addch(out, '"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			buf_addf(out, "\\%c", ch);
		else if (ch == '\n')
			buf_adds(out, "\\n");
		else if (ch == '\t')
			buf_adds(out, "\\t");
		else if (ch == '\r')
			buf_adds(out, "\\r");
		else if (ch < 0x20 || ch == 0x7f)
			buf_addf(out, "\\x%02x", ch);
		else
			buf_addch(out, (char)ch);
	}
	buf_addch(out, '"');
}

void emu_go_float(struct buf *out, double d)
{
	char text[64];
	int digits, exp;

	if (isnan(d) || isinf(d)) {
		buf_adds(out, isnan(d) ? "NaN" : d > 0 ? "+Inf" : "-Inf");
		return;
	}
	/* the fewest digits that read back as d */
	for (digits = 1; digits < 17; digits++) {
		snprintf(text, sizeof(text), "%.*e", digits - 1, d);
		if (strtod(text, NULL) == d)
			break;
	}
	snprintf(text, sizeof(text), "%.*e", digits - 1, d);
	exp = (int)strtol(strchr(text, 'e') + 1, NULL, 10);
	/* %v is strconv's 'g' with the shortest digits: %e below 1e-4, from 1e6 */
	if (exp < -4 || exp >= 6) {
		buf_adds(out, text);
		return;
	}
	snprintf(text, sizeof(text), "%.*f",
		 digits - 1 - exp > 0 ? digits - 1 - exp : 0, d);
	buf_adds(out, text);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void emu_go_value(struct buf *out, const json_t *v)
{
	const char **keys;
	const char *k;
	json_t *item;
	size_t i, n;

	if (!v) {
		buf_adds(out, "<nil>");
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		n = json_object_size(v);
		keys = calloc(n ? n : 1, sizeof(*keys));
		if (!keys)
			return;
		i = 0;
		json_object_foreach((json_t *)v, k, item) keys[i++] = k;
		qsort(keys, n, sizeof(*keys), cmp_key);
		buf_adds(out, "map[");
		for (i = 0; i < n; i++) {
			if (i)
				buf_addch(out, ' ');
			buf_addf(out, "%s:", keys[i]);
			emu_go_value(out, json_object_get(v, keys[i]));
		}
		buf_addch(out, ']');
		free(keys);
		break;
	case JSON_ARRAY:
		buf_addch(out, '[');
		json_array_foreach(v, i, item)
		{
			if (i)
				buf_addch(out, ' ');
			emu_go_value(out, item);
		}
		buf_addch(out, ']');
		break;
	case JSON_STRING:
		buf_add(out, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		buf_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		emu_go_float(out, json_real_value(v));
		break;
	case JSON_TRUE:
		buf_adds(out, "true");
		break;
	case JSON_FALSE:
		buf_adds(out, "false");
		break;
	case JSON_NULL:
	default:
		buf_adds(out, "<nil>");
		break;
	}
}

void emu_field_value(struct buf *out, const json_t *v)
{
	char *text;

	switch (json_typeof(v)) {
	case JSON_STRING:
		emu_go_quote(out, json_string_value(v));
		break;
	case JSON_INTEGER:
		buf_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		emu_go_float(out, json_real_value(v));
		break;
	case JSON_TRUE:
		buf_adds(out, "true");
		break;
	case JSON_FALSE:
		buf_adds(out, "false");
		break;
	case JSON_NULL:
		buf_adds(out, "null");
		break;
	default:
		text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
		buf_adds(out, text ? text : "null");
		free(text);
	}
}

static void invalid_str(struct verrs *v, const char *field, const char *value,
			const char *detail)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "Invalid value: ");
	emu_go_quote(&b, value);
	buf_addf(&b, ": %s", detail);
	add_cause(v, "FieldValueInvalid", field, buf_cstr(&b));
	buf_release(&b);
}

static void invalid_int(struct verrs *v, const char *field, json_int_t value,
			const char *detail)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "Invalid value: %" JSON_INTEGER_FORMAT ": %s", value,
		 detail);
	add_cause(v, "FieldValueInvalid", field, buf_cstr(&b));
	buf_release(&b);
}

static void required(struct verrs *v, const char *field)
{
	add_cause(v, "FieldValueRequired", field, "Required value");
}

static void duplicate(struct verrs *v, const char *field, const char *value)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "Duplicate value: ");
	emu_go_quote(&b, value);
	add_cause(v, "FieldValueDuplicate", field, buf_cstr(&b));
	buf_release(&b);
}

/* `supported` is the list already quoted ("\"TCP\", \"UDP\""). */
static void not_supported(struct verrs *v, const char *field, const char *value,
			  const char *supported)
{
	struct buf b = BUF_INIT;

	buf_adds(&b, "Unsupported value: ");
	emu_go_quote(&b, value);
	buf_addf(&b, ": supported values: %s", supported);
	add_cause(v, "FieldValueNotSupported", field, buf_cstr(&b));
	buf_release(&b);
}

/* base + fmt(arg) in `b` (reset first): "spec.template" ".labels". */
static const char *path(struct buf *b, const char *base, const char *fmt,
			const char *arg)
{
	buf_reset(b);
	buf_adds(b, base);
	buf_addf(b, fmt, arg);
	return buf_cstr(b);
}

static const char *path_i(struct buf *b, const char *base, const char *fmt,
			  size_t i)
{
	buf_reset(b);
	buf_adds(b, base);
	buf_addf(b, fmt, i);
	return buf_cstr(b);
}

static bool qname_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

static bool qname_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || !qname_char(s[0]) || !qname_char(s[len - 1]))
		return false;
	for (i = 0; i < len; i++)
		if (!qname_char(s[i]) && s[i] != '-' && s[i] != '_' &&
		    s[i] != '.')
			return false;
	return true;
}

/* IsQualifiedName: the messages for `key`, each reported at `field`. */
static void check_qualified(struct verrs *v, const char *field, const char *key,
			    const char *shown)
{
	const char *slash = strchr(key, '/'), *name = key;
	struct buf m = BUF_INIT;
	size_t nlen;

	if (slash && strchr(slash + 1, '/')) {
		buf_addf(&m,
			 "a qualified name must consist of alphanumeric "
			 "characters, '-', '_' or '.', and must start and end "
			 "with an alphanumeric character (e.g. 'MyName',  or "
			 "'my.name',  or '123-abc', regex used for validation "
			 "is '%s') with an optional DNS subdomain prefix and "
			 "'/' (e.g. 'example.com/MyName')",
			 qualified_fmt);
		invalid_str(v, field, shown, m.ptr);
		goto out;
	}
	if (slash) {
		char *prefix = strndup(key, (size_t)(slash - key));

		name = slash + 1;
		if (!prefix)
			goto out;
		if (!*prefix) {
			invalid_str(v, field, shown,
				    "prefix part must be non-empty");
		} else {
			/* Length and form are both reported, as kube. */
			if (strlen(prefix) > 253)
				invalid_str(v, field, shown,
					    "prefix part must be no more than "
					    "253 characters");
			if (!subdomain_form_ok(prefix)) {
				buf_reset(&m);
				buf_addf(&m, "prefix part %s", subdomain_msg);
				invalid_str(v, field, shown, m.ptr);
			}
		}
		free(prefix);
	}
	nlen = strlen(name);
	if (!nlen)
		invalid_str(v, field, shown, "name part must be non-empty");
	else if (nlen > 63)
		invalid_str(v, field, shown,
			    "name part must be no more than 63 characters");
	if (!qname_ok(name, nlen)) {
		buf_reset(&m);
		buf_addf(&m, "name part %s", qualified_msg);
		invalid_str(v, field, shown, m.ptr);
	}
out:
	buf_release(&m);
}

static void check_labels(struct verrs *v, const char *field,
			 const json_t *labels)
{
	const char *key, *val;
	const json_t *jv;
	size_t len;

	json_object_foreach((json_t *)labels, key, jv)
	{
		check_qualified(v, field, key, key);
		if (!json_is_string(jv))
			continue;
		val = json_string_value(jv);
		len = strlen(val);
		if (len > 63)
			invalid_str(v, field, val,
				    "must be no more than 63 characters");
		if (len && !qname_ok(val, len))
			invalid_str(v, field, val, label_value_msg);
	}
}

static void check_annotations(struct verrs *v, const char *field,
			      const json_t *ann)
{
	const char *key;
	const json_t *jv;
	size_t total = 0, i;
	char *lower;

	json_object_foreach((json_t *)ann, key, jv)
	{
		/* Case does not matter in annotation keys. */
		lower = strdup(key);
		if (!lower)
			return;
		for (i = 0; lower[i]; i++)
			if (lower[i] >= 'A' && lower[i] <= 'Z')
				lower[i] = (char)(lower[i] - 'A' + 'a');
		check_qualified(v, field, lower, key);
		free(lower);
		total += strlen(key) + json_string_length(jv);
	}
	if (total > ANNOTATIONS_MAX)
		add_cause(v, "FieldValueTooLong", field,
			  "Too long: must have at most 262144 bytes");
}

static void check_meta(struct verrs *v, const json_t *meta, const char *base)
{
	struct buf p = BUF_INIT;
	const json_t *x;

	/*
	 * A pod template's are reported at spec.template.labels (no
	 * .metadata), as ValidatePodTemplateSpec names them.
	 */
	x = json_object_get(meta, "labels");
	if (json_is_object(x))
		check_labels(v, path(&p, base, "%s", ".labels"), x);
	x = json_object_get(meta, "annotations");
	if (json_is_object(x))
		check_annotations(v, path(&p, base, "%s", ".annotations"), x);
	buf_release(&p);
}

/* IsConfigMapKey, at field data[KEY]. */
static void check_config_key(struct verrs *v, const char *bag, const char *key)
{
	struct buf p = BUF_INIT;
	size_t len = strlen(key), i;
	bool form = len > 0;

	buf_addf(&p, "%s[%s]", bag, key);
	for (i = 0; i < len; i++)
		if (!qname_char(key[i]) && key[i] != '-' && key[i] != '_' &&
		    key[i] != '.')
			form = false;
	if (len > 253)
		invalid_str(v, p.ptr, key,
			    "must be no more than 253 characters");
	if (!form)
		invalid_str(v, p.ptr, key, config_key_msg);
	if (!strcmp(key, "."))
		invalid_str(v, p.ptr, key, "must not be '.'");
	else if (!strcmp(key, ".."))
		invalid_str(v, p.ptr, key, "must not be '..'");
	else if (!strncmp(key, "..", 2))
		invalid_str(v, p.ptr, key, "must not start with '..'");
	buf_release(&p);
}

/* ---- what the decoder refuses (400) ---- */

static bool b64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '+' || c == '/';
}

static bool b64_nl(char c)
{
	return c == '\n' || c == '\r';
}

/*
 * encoding/base64's StdEncoding.Decode: -1 when `s` decodes, else the
 * input offset its CorruptInputError names.
 */
static long b64_error(const char *s, size_t len)
{
	size_t si = 0;
	int j;

	while (si < len) {
		for (j = 0; j < 4; j++) {
			char in;

			if (si == len)
				return j == 0 ? -1 : (long)(si - (size_t)j);
			in = s[si++];
			if (b64_char(in))
				continue;
			if (b64_nl(in)) {
				j--;
				continue;
			}
			if (in != '=' || j < 2)
				return (long)si - 1;
			if (j == 2) {
				while (si < len && b64_nl(s[si]))
					si++;
				if (si == len)
					return (long)len;
				if (s[si] != '=')
					return (long)si - 1;
				si++;
			}
			while (si < len && b64_nl(s[si]))
				si++;
			return si < len ? (long)si : -1;
		}
	}
	return -1;
}

static const char *json_kind_name(const json_t *x)
{
	if (json_is_boolean(x))
		return "bool";
	if (json_is_number(x))
		return "number";
	if (json_is_object(x))
		return "object";
	if (json_is_array(x))
		return "array";
	return "string";
}

/*
 * A map of strings (`bytes`: of base64 data) at obj[key]; appends the
 * decoder's error to `why` and returns false on the first bad value.
 */
static bool decode_map(const json_t *obj, const char *key, const char *gofield,
		       bool bytes, struct buf *why)
{
	const json_t *m = json_object_get(obj, key), *x;
	const char *k;
	long off;

	if (!m || json_is_null(m))
		return true;
	if (!json_is_object(m)) {
		buf_addf(why,
			 "json: cannot unmarshal %s into Go struct field "
			 "%s of type map[string]%s",
			 json_kind_name(m), gofield,
			 bytes ? "[]uint8" : "string");
		return false;
	}
	json_object_foreach((json_t *)m, k, x)
	{
		if (json_is_null(x))
			continue;
		if (!json_is_string(x)) {
			buf_addf(why,
				 "json: cannot unmarshal %s into Go struct "
				 "field %s of type %s",
				 json_kind_name(x), gofield,
				 bytes ? "[]uint8" : "string");
			return false;
		}
		if (bytes && (off = b64_error(json_string_value(x),
					      json_string_length(x))) >= 0) {
			buf_addf(why, "illegal base64 data at input byte %ld",
				 off);
			return false;
		}
	}
	return true;
}

static json_t *decode_errors(const struct emu_resource *res, const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	struct buf why = BUF_INIT, msg = BUF_INIT;
	bool core = !*res->group, ok;
	json_t *st = NULL;

	ok = decode_map(meta, "labels", "ObjectMeta.metadata.labels", false,
			&why) &&
	     decode_map(meta, "annotations", "ObjectMeta.metadata.annotations",
			false, &why);
	if (ok && core && !strcmp(res->kind, "ConfigMap"))
		ok = decode_map(obj, "data", "ConfigMap.data", false, &why) &&
		     decode_map(obj, "binaryData", "ConfigMap.binaryData", true,
				&why);
	if (ok && core && !strcmp(res->kind, "Secret"))
		ok = decode_map(obj, "data", "Secret.data", true, &why) &&
		     decode_map(obj, "stringData", "Secret.stringData", false,
				&why);
	if (!ok) {
		buf_addf(&msg,
			 "%s in version \"%s\" cannot be handled as a %s: %s",
			 res->kind, res->version, res->kind, buf_cstr(&why));
		st = emu_status_new(400, "BadRequest", buf_cstr(&msg), NULL,
				    NULL, NULL);
	}
	buf_release(&why);
	buf_release(&msg);
	return st;
}

/* ---- kinds ---- */

static void check_data_keys(struct verrs *v, const json_t *obj, const char *bag,
			    const char *other)
{
	const json_t *m = json_object_get(obj, bag), *x;
	const json_t *o = json_object_get(obj, other);
	struct buf p = BUF_INIT, d = BUF_INIT;
	const char *k;

	json_object_foreach((json_t *)m, k, x)
	{
		check_config_key(v, bag, k);
		if (json_is_object(o) && json_object_get(o, k)) {
			buf_reset(&p);
			buf_addf(&p, "%s[%s]", bag, k);
			buf_reset(&d);
			buf_addf(&d, "duplicate of key present in %s", other);
			invalid_str(v, p.ptr, k, d.ptr);
		}
	}
	buf_release(&p);
	buf_release(&d);
}

/* Does a LabelSelector select `labels`? A NULL selector selects nothing. */
static bool selector_matches(const json_t *sel, const json_t *labels)
{
	const json_t *ml, *exprs, *e, *x, *have;
	const char *k, *op;
	size_t i, j;
	bool in;

	if (!json_is_object(sel))
		return false;
	ml = json_object_get(sel, "matchLabels");
	json_object_foreach((json_t *)ml, k, x)
	{
		have = json_object_get(labels, k);
		if (!json_is_string(have) || !json_is_string(x) ||
		    strcmp(json_string_value(have), json_string_value(x)))
			return false;
	}
	exprs = json_object_get(sel, "matchExpressions");
	json_array_foreach(exprs, i, e)
	{
		k = json_string_value(json_object_get(e, "key"));
		op = json_string_value(json_object_get(e, "operator"));
		have = k ? json_object_get(labels, k) : NULL;
		if (!op)
			return false;
		in = false;
		json_array_foreach(json_object_get(e, "values"), j, x)
		{
			if (json_is_string(have) && json_is_string(x) &&
			    !strcmp(json_string_value(have),
				    json_string_value(x)))
				in = true;
		}
		if ((!strcmp(op, "In") && !in) ||
		    (!strcmp(op, "NotIn") && in) ||
		    (!strcmp(op, "Exists") && !have) ||
		    (!strcmp(op, "DoesNotExist") && have))
			return false;
	}
	return true;
}

static bool selector_empty(const json_t *sel)
{
	return !json_object_size(json_object_get(sel, "matchLabels")) &&
	       !json_array_size(json_object_get(sel, "matchExpressions"));
}

/*
 * A map[string]string as field.Error renders complex values since kube
 * 1.34: json.Marshal (keys sorted; nil is null).
 */
static void go_map(struct buf *out, const json_t *m)
{
	char *text;

	if (!json_is_object(m)) {
		buf_adds(out, "null");
		return;
	}
	text = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS);
	if (text)
		buf_adds(out, text);
	free(text);
}

static void selector_mismatch(struct verrs *v, const char *base,
			      const json_t *labels)
{
	struct buf b = BUF_INIT, p = BUF_INIT;

	buf_adds(&b, "Invalid value: ");
	go_map(&b, labels);
	buf_adds(&b, ": `selector` does not match template `labels`");
	add_cause(v, "FieldValueInvalid",
		  path(&p, base, "%s", ".metadata.labels"), buf_cstr(&b));
	buf_release(&b);
	buf_release(&p);
}

static void empty_selector(struct verrs *v, const json_t *sel, const char *what)
{
	struct buf b = BUF_INIT;
	const json_t *ml = json_object_get(sel, "matchLabels");
	const json_t *me = json_object_get(sel, "matchExpressions");

	/* json.Marshal of the LabelSelector: empty members are omitted */
	buf_adds(&b, "Invalid value: {");
	if (json_object_size(ml)) {
		buf_adds(&b, "\"matchLabels\":");
		go_map(&b, ml);
	}
	(void)me;
	buf_addf(&b, "}: empty selector is invalid for %s", what);
	add_cause(v, "FieldValueInvalid", "spec.selector", buf_cstr(&b));
	buf_release(&b);
}

static void check_nonneg(struct verrs *v, const json_t *spec, const char *key)
{
	const json_t *x = json_object_get(spec, key);
	struct buf p = BUF_INIT;

	if (json_is_integer(x) && json_integer_value(x) < 0)
		invalid_int(v, path(&p, "spec.", "%s", key),
			    json_integer_value(x),
			    "must be greater than or equal to 0");
	buf_release(&p);
}

static void check_port_name(struct verrs *v, const char *field,
			    const char *name)
{
	size_t len = strlen(name), i;
	bool charset = len > 0, letter = false;

	for (i = 0; i < len; i++) {
		char c = name[i];

		if (c >= 'a' && c <= 'z')
			letter = true;
		else if (!(c >= '0' && c <= '9') && c != '-')
			charset = false;
	}
	if (len > 15)
		invalid_str(v, field, name,
			    "must be no more than 15 characters");
	if (!charset)
		invalid_str(v, field, name,
			    "must contain only alpha-numeric characters "
			    "(a-z, 0-9), and hyphens (-)");
	if (!letter)
		invalid_str(v, field, name,
			    "must contain at least one letter (a-z)");
	if (strstr(name, "--"))
		invalid_str(v, field, name,
			    "must not contain consecutive hyphens");
	if (len && (name[0] == '-' || name[len - 1] == '-'))
		invalid_str(v, field, name,
			    "must not begin or end with a hyphen");
}

static void check_port_num(struct verrs *v, const char *field, const json_t *x)
{
	json_int_t n = json_integer_value(x);

	if (json_is_integer(x) && (n < 1 || n > 65535))
		invalid_int(v, field, n, port_range_msg);
}

/* ValidateDNS1123Label: length and form are both reported. */
static void check_dns_label(struct verrs *v, const char *field,
			    const char *name)
{
	size_t len = strlen(name);

	if (len > 63)
		invalid_str(v, field, name,
			    "must be no more than 63 characters");
	if (!label_ok(name, len))
		invalid_str(v, field, name, label_msg);
}

static void check_protocol(struct verrs *v, const char *field,
			   const json_t *port)
{
	const char *proto =
		json_string_value(json_object_get(port, "protocol"));

	if (!proto || !*proto)
		required(v, field);
	else if (strcmp(proto, "TCP") && strcmp(proto, "UDP") &&
		 strcmp(proto, "SCTP"))
		not_supported(v, field, proto, "\"SCTP\", \"TCP\", \"UDP\"");
}

static void check_containers(struct verrs *v, const json_t *spec,
			     const char *base, const char *key, bool need)
{
	const json_t *list = json_object_get(spec, key), *ct, *ports, *pt;
	struct buf p = BUF_INIT, cp = BUF_INIT;
	const char *name, *image;
	size_t i, j, k;

	if (!json_array_size(list)) {
		if (need)
			required(v, path(&p, base, ".%s", key));
		goto out;
	}
	json_array_foreach(list, i, ct)
	{
		buf_reset(&cp);
		buf_addf(&cp, "%s.%s[%zu]", base, key, i);
		name = json_string_value(json_object_get(ct, "name"));
		image = json_string_value(json_object_get(ct, "image"));
		if (!name || !*name)
			required(v, path(&p, cp.ptr, "%s", ".name"));
		else
			check_dns_label(v, path(&p, cp.ptr, "%s", ".name"),
					name);
		if (!image || !*image)
			required(v, path(&p, cp.ptr, "%s", ".image"));
		ports = json_object_get(ct, "ports");
		json_array_foreach(ports, j, pt)
		{
			const char *pn =
				json_string_value(json_object_get(pt, "name"));
			const json_t *cport =
				json_object_get(pt, "containerPort");

			if (pn && *pn) {
				size_t before = json_array_size(v->causes);
				const json_t *q;

				check_port_name(v,
						path_i(&p, cp.ptr,
						       ".ports[%zu].name", j),
						pn);
				for (k = 0;
				     k < j &&
				     before == json_array_size(v->causes);
				     k++) {
					q = json_array_get(ports, k);
					if (!json_is_string(json_object_get(
						    q, "name")) ||
					    strcmp(json_string_value(
							   json_object_get(
								   q, "name")),
						   pn))
						continue;
					duplicate(v,
						  path_i(&p, cp.ptr,
							 ".ports[%zu].name", j),
						  pn);
					break;
				}
			}
			if (!json_integer_value(cport))
				required(v, path_i(&p, cp.ptr,
						   ".ports[%zu].containerPort",
						   j));
			else
				check_port_num(
					v,
					path_i(&p, cp.ptr,
					       ".ports[%zu].containerPort", j),
					cport);
			if (json_integer_value(json_object_get(pt, "hostPort")))
				check_port_num(v,
					       path_i(&p, cp.ptr,
						      ".ports[%zu].hostPort",
						      j),
					       json_object_get(pt, "hostPort"));
			check_protocol(
				v,
				path_i(&p, cp.ptr, ".ports[%zu].protocol", j),
				pt);
		}
		/* Names are unique among the list's containers. */
		for (k = 0; k < i && name; k++) {
			const char *other = json_string_value(json_object_get(
				json_array_get(list, k), "name"));

			if (other && !strcmp(other, name)) {
				duplicate(v, path(&p, cp.ptr, "%s", ".name"),
					  name);
				break;
			}
		}
	}
out:
	buf_release(&p);
	buf_release(&cp);
}

/* ValidatePodTemplateSpec (`base` is "spec.template"). */
static void check_template(struct verrs *v, const json_t *tmpl,
			   const char *base)
{
	struct buf p = BUF_INIT;
	const json_t *spec = json_object_get(tmpl, "spec");

	check_meta(v, json_object_get(tmpl, "metadata"), base);
	path(&p, base, "%s", ".spec");
	check_containers(v, spec, p.ptr, "containers", true);
	check_containers(v, spec, p.ptr, "initContainers", false);
	buf_release(&p);
}

static const json_t *template_labels(const json_t *spec)
{
	return json_object_get(
		json_object_get(json_object_get(spec, "template"), "metadata"),
		"labels");
}

static void check_workload(struct verrs *v, const char *kind,
			   const json_t *spec)
{
	const json_t *sel = json_object_get(spec, "selector");
	const json_t *tmpl = json_object_get(spec, "template");
	const json_t *labels = template_labels(spec);
	bool ds = !strcmp(kind, "DaemonSet");
	const char *rp;
	const char *what = !strcmp(kind, "StatefulSet") ? "statefulset"
			   : ds				? "daemonset"
							: "deployment";

	if (!ds)
		check_nonneg(v, spec, "replicas");
	if (!json_is_object(sel)) {
		if (!ds)
			required(v, "spec.selector");
		selector_mismatch(v, "spec.template", labels);
	} else if (ds) {
		if (!selector_matches(sel, labels))
			selector_mismatch(v, "spec.template", labels);
		if (selector_empty(sel))
			empty_selector(v, sel, what);
	} else {
		if (selector_empty(sel))
			empty_selector(v, sel, what);
		else if (!selector_matches(sel, labels))
			selector_mismatch(v, "spec.template", labels);
	}
	check_template(v, tmpl, "spec.template");
	/* Workload pods always restart (ValidatePodTemplateSpecFor*). */
	rp = json_string_value(json_object_get(json_object_get(tmpl, "spec"),
					       "restartPolicy"));
	if (!rp || strcmp(rp, "Always"))
		not_supported(v, "spec.template.spec.restartPolicy",
			      rp ? rp : "", "\"Always\"");
}

static void check_job(struct verrs *v, const json_t *spec, const char *base)
{
	const json_t *sel = json_object_get(spec, "selector");
	const json_t *tmpl = json_object_get(spec, "template");
	struct buf p = BUF_INIT;
	const char *rp;

	if (!strcmp(base, "spec")) {
		check_nonneg(v, spec, "parallelism");
		check_nonneg(v, spec, "completions");
		check_nonneg(v, spec, "backoffLimit");
		if (!json_is_object(sel))
			required(v, "spec.selector");
		else if (!selector_matches(sel, template_labels(spec)))
			selector_mismatch(v, "spec.template",
					  template_labels(spec));
	}
	check_template(v, tmpl, path(&p, base, "%s", ".template"));
	rp = json_string_value(json_object_get(json_object_get(tmpl, "spec"),
					       "restartPolicy"));
	if (!rp || (strcmp(rp, "OnFailure") && strcmp(rp, "Never")))
		not_supported(
			v, path(&p, base, "%s", ".template.spec.restartPolicy"),
			rp ? rp : "", "\"OnFailure\", \"Never\"");
	buf_release(&p);
}

static void check_service(struct verrs *v, const json_t *spec)
{
	const char *type = json_string_value(json_object_get(spec, "type"));
	const char *ip = json_string_value(json_object_get(spec, "clusterIP"));
	const json_t *ports = json_object_get(spec, "ports"), *pt, *tp;
	bool headless = ip && !strcmp(ip, "None");
	bool extname = type && !strcmp(type, "ExternalName");
	struct buf p = BUF_INIT;
	const char *name, *en;
	size_t i, k;

	if (!json_array_size(ports) && !headless && !extname)
		required(v, "spec.ports");
	if (extname) {
		en = json_string_value(json_object_get(spec, "externalName"));
		if (!en || !*en || !strcmp(en, "."))
			required(v, "spec.externalName");
	}
	json_array_foreach(ports, i, pt)
	{
		name = json_string_value(json_object_get(pt, "name"));
		if (json_array_size(ports) > 1 && (!name || !*name)) {
			required(v, path_i(&p, "spec", ".ports[%zu].name", i));
		} else if (name && *name) {
			check_dns_label(
				v, path_i(&p, "spec", ".ports[%zu].name", i),
				name);
			for (k = 0; k < i; k++) {
				const char *o =
					json_string_value(json_object_get(
						json_array_get(ports, k),
						"name"));

				if (o && !strcmp(o, name)) {
					duplicate(v,
						  path_i(&p, "spec",
							 ".ports[%zu].name", i),
						  name);
					break;
				}
			}
		}
		if (!json_is_integer(json_object_get(pt, "port")))
			invalid_int(v,
				    path_i(&p, "spec", ".ports[%zu].port", i),
				    0, port_range_msg);
		else
			check_port_num(
				v, path_i(&p, "spec", ".ports[%zu].port", i),
				json_object_get(pt, "port"));
		check_protocol(v, path_i(&p, "spec", ".ports[%zu].protocol", i),
			       pt);
		tp = json_object_get(pt, "targetPort");
		if (json_is_integer(tp))
			check_port_num(
				v,
				path_i(&p, "spec", ".ports[%zu].targetPort", i),
				tp);
		else if (json_is_string(tp))
			check_port_name(
				v,
				path_i(&p, "spec", ".ports[%zu].targetPort", i),
				json_string_value(tp));
	}
	if (type && strcmp(type, "ClusterIP") && !extname &&
	    strcmp(type, "LoadBalancer") && strcmp(type, "NodePort"))
		not_supported(v, "spec.type", type,
			      "\"ClusterIP\", \"ExternalName\", "
			      "\"LoadBalancer\", \"NodePort\"");
	buf_release(&p);
}

/* "Invalid value: <json.Marshal of v>: <detail>" on `field`. */
static void invalid_json(struct verrs *v, const char *field, const json_t *val,
			 const char *detail)
{
	struct buf b = BUF_INIT;
	char *text = json_dumps(val, JSON_COMPACT | JSON_SORT_KEYS |
					     JSON_ENCODE_ANY);

	buf_addf(&b, "Invalid value: %s: %s", text ? text : "null", detail);
	add_cause(v, "FieldValueInvalid", field, buf_cstr(&b));
	buf_release(&b);
	free(text);
}

static bool same(const json_t *a, const json_t *b)
{
	return (!a && !b) || (a && b && json_equal(a, b));
}

/* A Secret's keys its type requires (ValidateSecret). */
static void check_secret_type(struct verrs *v, const json_t *obj)
{
	static const struct {
		const char *type;
		const char *keys[3];
	} table[] = {
		{"kubernetes.io/tls", {"tls.crt", "tls.key", NULL}},
		{"kubernetes.io/dockerconfigjson", {".dockerconfigjson", NULL}},
		{"kubernetes.io/dockercfg", {".dockercfg", NULL}},
		{"kubernetes.io/ssh-auth", {"ssh-privatekey", NULL}},
	};
	const char *type = json_string_value(json_object_get(obj, "type"));
	const json_t *data = json_object_get(obj, "data");
	struct buf p = BUF_INIT;
	size_t i, k;

	for (i = 0; type && i < sizeof(table) / sizeof(*table); i++) {
		if (strcmp(type, table[i].type))
			continue;
		for (k = 0; table[i].keys[k]; k++)
			if (!json_object_get(data, table[i].keys[k]))
				required(v, path(&p, "data", "[%s]",
						 table[i].keys[k]));
	}
	buf_release(&p);
}

/* immutable: true freezes data and binaryData (ConfigMaps, Secrets). */
static void check_immutable(struct verrs *v, const json_t *obj,
			    const json_t *old, bool binary)
{
	static const char detail[] =
		"Forbidden: field is immutable when `immutable` is set";

	if (!json_is_true(json_object_get(old, "immutable")))
		return;
	if (!json_is_true(json_object_get(obj, "immutable")))
		add_cause(v, "FieldValueForbidden", "immutable", detail);
	if (!same(json_object_get(obj, "data"), json_object_get(old, "data")))
		add_cause(v, "FieldValueForbidden", "data", detail);
	if (binary && !same(json_object_get(obj, "binaryData"),
			    json_object_get(old, "binaryData")))
		add_cause(v, "FieldValueForbidden", "binaryData", detail);
}

/*
 * What the kinds' ValidateUpdate forbids to change: workload selectors,
 * most of a StatefulSet's spec, a Job's template, a Service's cluster
 * IPs, a Secret's type.
 */
static void check_update(struct verrs *v, const struct emu_resource *res,
			 const json_t *obj, const json_t *old)
{
	static const char *const sts_mutable[] = {
		"replicas",	 "ordinals",
		"template",	 "updateStrategy",
		"revisionHistoryLimit", "persistentVolumeClaimRetentionPolicy",
		"minReadySeconds", NULL};
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *ospec = json_object_get(old, "spec");
	const char *g = res->group, *k = res->kind;
	const char *const *m;
	json_t *a, *b;

	if (!strcmp(g, "apps") && !strcmp(k, "StatefulSet")) {
		a = json_deep_copy(spec);
		b = json_deep_copy(ospec);
		for (m = sts_mutable; *m; m++) {
			json_object_del(a, *m);
			json_object_del(b, *m);
		}
		if (!same(a, b))
			add_cause(v, "FieldValueForbidden", "spec",
				  "Forbidden: updates to statefulset spec for "
				  "fields other than 'replicas', 'ordinals', "
				  "'template', 'updateStrategy', "
				  "'revisionHistoryLimit', "
				  "'persistentVolumeClaimRetentionPolicy' and "
				  "'minReadySeconds' are forbidden");
		json_decref(a);
		json_decref(b);
	} else if ((!strcmp(g, "apps") && (!strcmp(k, "Deployment") ||
					  !strcmp(k, "ReplicaSet") ||
					  !strcmp(k, "DaemonSet"))) ||
		   (!strcmp(g, "batch") && !strcmp(k, "Job"))) {
		if (!same(json_object_get(spec, "selector"),
			  json_object_get(ospec, "selector")))
			invalid_json(v, "spec.selector",
				     json_object_get(spec, "selector"),
				     "field is immutable");
		/*
		 * A Job's template: kube quotes the internal Go struct, which
		 * this rendering does not reproduce.
		 */
		if (!strcmp(k, "Job") &&
		    !same(json_object_get(spec, "template"),
			  json_object_get(ospec, "template")))
			invalid_json(v, "spec.template",
				     json_object_get(spec, "template"),
				     "field is immutable");
	} else if (!*g && !strcmp(k, "Service")) {
		a = json_array_get(json_object_get(spec, "clusterIPs"), 0);
		b = json_array_get(json_object_get(ospec, "clusterIPs"), 0);
		if (a && b && !json_equal(a, b))
			invalid_json(v, "spec.clusterIPs[0]",
				     json_object_get(spec, "clusterIPs"),
				     "may not change once set");
	} else if (!*g && !strcmp(k, "Secret")) {
		a = json_object_get(obj, "type");
		b = json_object_get(old, "type");
		if (!same(a, b))
			invalid_str(v, "type",
				    json_string_value(a) ? json_string_value(a)
							 : "",
				    "field is immutable");
		check_immutable(v, obj, old, false);
	} else if (!*g && !strcmp(k, "ConfigMap")) {
		check_immutable(v, obj, old, true);
	}
}

/*
 * How often an update reports each problem of the object's metadata:
 * rest.BeforeUpdate validates the metadata twice (ValidateObjectMeta-
 * Accessor and its Update form), then the kind's ValidateUpdate once or
 * twice more (or not at all), and kube lists every copy.
 */
static unsigned meta_passes_on_update(const struct emu_resource *res)
{
	static const struct {
		const char *group, *kind;
		unsigned passes;
	} table[] = {
		{"", "ConfigMap", 4},
		{"", "ServiceAccount", 4},
		{"", "Endpoints", 4},
		{"", "Namespace", 4},
		{"", "Pod", 4},
		{"", "Event", 2},
		{"batch", "Job", 4},
		{"rbac.authorization.k8s.io", "Role", 4},
		{"rbac.authorization.k8s.io", "RoleBinding", 4},
		{"rbac.authorization.k8s.io", "ClusterRole", 4},
		{"rbac.authorization.k8s.io", "ClusterRoleBinding", 4},
		{"networking.k8s.io", "Ingress", 4},
		{"apiregistration.k8s.io", "APIService", 4},
		{"policy", "PodDisruptionBudget", 2},
	};
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(*table); i++)
		if (!strcmp(table[i].group, res->group) &&
		    !strcmp(table[i].kind, res->kind))
			return table[i].passes;
	return 3;
}

/*
 * A custom resource's kind must be its CRD's (the decoder takes any):
 * only this is answered when it is not (ValidateTypeMeta).
 */
static json_t *custom_type_meta(const struct emu_resource *res,
				const json_t *obj)
{
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *name = json_string_value(
		json_object_get(json_object_get(obj, "metadata"), "name"));
	struct buf msg = BUF_INIT, body = BUF_INIT;
	json_t *st;

	if (!kind || !strcmp(kind, res->kind))
		return NULL;
	buf_adds(&body, "Invalid value: ");
	emu_go_quote(&body, kind);
	buf_addf(&body, ": must be %s", res->kind);
	buf_addf(&msg, "%s.%s \"%s\" is invalid: kind: %s", kind, res->group,
		 name ? name : "", body.ptr);
	st = emu_status_new(422, "Invalid", msg.ptr, name, res->group, kind);
	if (st)
		json_object_set_new(
			json_object_get(st, "details"), "causes",
			json_pack("[{s:s, s:s, s:s}]", "reason",
				  "FieldValueInvalid", "message", body.ptr,
				  "field", "kind"));
	buf_release(&msg);
	buf_release(&body);
	return st;
}

/* The causes of the CRD's checks of a custom resource. */
static void check_custom(struct verrs *v, const struct emu_resource *res,
			 const json_t *obj, const json_t *old, const char *sub)
{
	json_t *causes = json_array(), *c;
	size_t i;

	if (!causes)
		return;
	emu_crd_validate(res, obj, old, sub && !strcmp(sub, "status"), causes);
	json_array_foreach(causes, i, c)
	{
		add_cause(v, json_string_value(json_object_get(c, "reason")),
			  json_string_value(json_object_get(c, "field")),
			  json_string_value(json_object_get(c, "message")));
	}
	json_decref(causes);
}

json_t *emu_validate_object(const struct emu_resource *res, const json_t *obj,
			    const json_t *old, const char *sub)
{
	struct verrs v = {NULL, NULL, 0};
	const json_t *meta = json_object_get(obj, "metadata");
	const json_t *spec = json_object_get(obj, "spec");
	const char *kind = res->kind, *g = res->group, *name;
	struct buf msg = BUF_INIT, q = BUF_INIT;
	json_t *st;
	size_t i;

	if (emu_resource_is_custom(res) && (st = custom_type_meta(res, obj)))
		return st;
	st = decode_errors(res, obj);
	if (st)
		return st;
	v.causes = json_array();
	if (!v.causes)
		return NULL;
	check_meta(&v, meta, "metadata");
	for (i = 1; old && i < meta_passes_on_update(res); i++)
		check_meta(&v, meta, "metadata");
	if (old)
		check_update(&v, res, obj, old);
	if (emu_resource_is_custom(res)) {
		check_custom(&v, res, obj, old, sub);
	} else if (!*g && !strcmp(kind, "ConfigMap")) {
		check_data_keys(&v, obj, "data", "binaryData");
		check_data_keys(&v, obj, "binaryData", "data");
	} else if (!*g && !strcmp(kind, "Secret")) {
		check_data_keys(&v, obj, "data", "");
		check_secret_type(&v, obj);
	} else if (!*g && !strcmp(kind, "Service")) {
		check_service(&v, spec);
	} else if (!*g && !strcmp(kind, "Pod")) {
		check_containers(&v, spec, "spec", "containers", true);
		check_containers(&v, spec, "spec", "initContainers", false);
	} else if (!strcmp(g, "apps")) {
		check_workload(&v, kind, spec);
	} else if (!strcmp(g, "batch") && !strcmp(kind, "Job")) {
		check_job(&v, spec, "spec");
	} else if (!strcmp(g, "batch") && !strcmp(kind, "CronJob")) {
		check_job(&v,
			  json_object_get(json_object_get(spec, "jobTemplate"),
					  "spec"),
			  "spec.jobTemplate.spec");
	}
	if (!json_array_size(v.causes)) {
		st = NULL;
		goto out;
	}
	/* "Deployment.apps \"web\" is invalid: a" or "...: [a, b]". */
	name = json_string_value(json_object_get(meta, "name"));
	/* events.k8s.io's Event is the core group's internally */
	if (!strcmp(g, "events.k8s.io"))
		g = "";
	buf_adds(&q, kind);
	if (*g)
		buf_addf(&q, ".%s", g);
	buf_addf(&msg, "%s \"%s\" is invalid: %s", q.ptr, name ? name : "",
		 v.n > 1 ? "[" : "");
	for (i = 0; i < v.n; i++)
		buf_addf(&msg, "%s%s", i ? ", " : "", buf_cstr(&v.msgs[i]));
	if (v.n > 1)
		buf_addch(&msg, ']');
	st = emu_status_new(422, "Invalid", msg.ptr, name, g, kind);
	if (st)
		json_object_set(json_object_get(st, "details"), "causes",
				v.causes);
out:
	for (i = 0; i < v.n; i++)
		buf_release(&v.msgs[i]);
	free(v.msgs);
	json_decref(v.causes);
	buf_release(&msg);
	buf_release(&q);
	return st;
}
