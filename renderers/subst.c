/*
 * Post-build variable substitution, as Flux's Kustomization
 * `postBuild.substitute` does it, but on parsed objects.
 *
 * Flux runs envsubst over each object's YAML text, so a value can add
 * fields, lists or documents ("x\n  privileged: true"), and `replicas:
 * ${N}` becomes a number. Here only string values are rewritten, after
 * parsing, so a variable can never change the shape of an object and a
 * string stays a string. Keys are never touched.
 *
 * The forms (names are [_a-zA-Z][_a-zA-Z0-9]*):
 *
 *   ${VAR}            the value of VAR
 *   ${VAR:=default}   the default when VAR is unset or empty
 *   ${VAR:-default}   the same (envsubst treats both alike: no assignment)
 *   $${VAR}           a literal ${VAR}
 *
 * A '$' not followed by '{' is kept as is ($VAR, $$, a trailing $). A
 * default is literal text up to the first '}' and cannot hold "${". Any
 * other "${...}" (a bad name, shell operators such as ${#x} or ${x/a/b},
 * no closing brace) is an error in both modes, as it is in Flux: such a
 * string should escape its '$' or the object should opt out with the
 * annotation `syncd.io/substitute: disabled`.
 *
 * An undefined variable without default is an error in strict mode and ""
 * otherwise. A variable defined as "" is defined (no error), but its
 * default applies.
 *
 * Substituting metadata.name, namespace, kind or apiVersion changes an
 * object's identity, so the set is rebuilt afterwards and duplicates that
 * appear are reported like the renderers report them.
 */
#include "renderers/render.h"

#include <string.h>

#include "util/banned.h" /* last */

/* Largest string a substitution may produce. */
#define MAX_RESULT ((size_t)1 << 20)


struct subst {
	const struct render_vars *vars;
	bool strict;
	struct err *err;
	int error;
	const char *origin; /* of the current object */
	struct buf who;	    /* "Deployment.apps default/web" */
	struct buf path;    /* ".spec.containers[0].image" */
	struct buf result;
};

static void subst_fail(struct subst *s, int code)
{
	if (!s->error)
		s->error = code;
}

/* Report a problem at the current object and field. */
static void __attribute__((format(printf, 2, 3)))
problem(struct subst *s, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	subst_fail(s, err_set(s->err, ERR_INVALID, "%s%s%s: %s: %s",
			      s->origin ? s->origin : "", s->origin ? ": " : "",
			      buf_cstr(&s->who), buf_cstr(&s->path),
			      buf_cstr(&msg)));
	buf_release(&msg);
}

static bool name_start(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

bool render_var_name(const char *s, size_t n)
{
	if (!n || !name_start(s[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!name_char(s[i]))
			return false;
	return true;
}

/* The value of name[0..len), or NULL. The last definition wins. */
static const char *lookup(const struct render_vars *vars, const char *name,
			  size_t len)
{
	if (!vars)
		return NULL;
	for (size_t i = vars->len; i-- > 0;)
		if (!strncmp(vars->names[i], name, len) && !vars->names[i][len])
			return vars->values[i] ? vars->values[i] : "";
	return NULL;
}

/*
 * Substitute in `in`; the result goes to s->result (capped). Returns true
 * when the string changed and had no problem.
 */
static bool subst_string(struct subst *s, const char *in)
{
	const char *p = in;
	bool changed = false, bad = false;

	buf_reset(&s->result);
	while (*p) {
		const char *dollar = strchr(p, '$'), *name, *end, *dflt = NULL;
		const char *value;
		size_t nlen, dlen = 0;

		if (!dollar) {
			if (buf_adds(&s->result, p) < 0)
				goto too_big;
			break;
		}
		if (buf_add(&s->result, p, (size_t)(dollar - p)) < 0)
			goto too_big;
		p = dollar;
		if (p[1] == '$' && p[2] == '{') {
			/* $${...}: drop one '$', copy the rest literally. */
			end = strchr(p + 2, '}');
			end = end ? end + 1 : p + strlen(p);
			if (buf_add(&s->result, p + 1, (size_t)(end - p - 1)) <
			    0)
				goto too_big;
			p = end;
			changed = true;
			continue;
		}
		if (p[1] != '{') {
			if (buf_addch(&s->result, '$') < 0)
				goto too_big;
			p++;
			continue;
		}
		name = p + 2;
		for (end = name; name_char(*end); end++)
			;
		nlen = (size_t)(end - name);
		if (nlen && name_start(*name) && end[0] == ':' &&
		    (end[1] == '=' || end[1] == '-')) {
			dflt = end + 2;
			end = strchr(dflt, '}');
			if (end) {
				dlen = (size_t)(end - dflt);
				if (memmem(dflt, dlen, "${", 2))
					end = NULL;
			}
		}
		if (!nlen || !name_start(*name) || !end || *end != '}') {
			const char *close = strchr(p, '}');
			int shown =
				close ? (int)(close - p + 1) : (int)strlen(p);

			if (shown > 64)
				shown = 64;
			problem(s,
				"bad substitution \"%.*s\" (write $${ for a "
				"literal ${)",
				shown, p);
			bad = true;
			break;
		}
		value = lookup(s->vars, name, nlen);
		if (dflt && (!value || !*value)) {
			if (buf_add(&s->result, dflt, dlen) < 0)
				goto too_big;
		} else if (value) {
			if (buf_adds(&s->result, value) < 0)
				goto too_big;
		} else if (s->strict) {
			problem(s, "variable %.*s is not defined", (int)nlen,
				name);
			bad = true;
		}
		p = end + 1;
		changed = true;
	}
	return changed && !bad;
too_big:
	problem(s, "substituted value is over the %zu-byte limit", MAX_RESULT);
	return false;
}

static void walk(struct subst *s, json_t *v);

static void walk_member(struct subst *s, json_t *parent, json_t *child,
			const char *key, size_t index)
{
	size_t mark = s->path.len;

	if (key)
		buf_addf(&s->path, ".%s", key);
	else
		buf_addf(&s->path, "[%zu]", index);
	if (json_is_string(child)) {
		if (subst_string(s, json_string_value(child))) {
			json_t *str =
				json_stringn(s->result.ptr ? s->result.ptr : "",
					     s->result.len);

			if (!str)
				problem(s, "result is not valid UTF-8");
			else if (key)
				json_object_set_new(parent, key, str);
			else
				json_array_set_new(parent, index, str);
		}
	} else {
		walk(s, child);
	}
	buf_truncate(&s->path, mark);
}

static void walk(struct subst *s, json_t *v)
{
	const char *key;
	json_t *child;
	void *iter;

	if (json_is_object(v)) {
		/* Setting a member during json_object_foreach is allowed. */
		for (iter = json_object_iter(v); iter;
		     iter = json_object_iter_next(v, iter)) {
			key = json_object_iter_key(iter);
			child = json_object_iter_value(iter);
			walk_member(s, v, child, key, 0);
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			walk_member(s, v, json_array_get(v, i), NULL, i);
	}
}

static bool opted_out(const json_t *obj)
{
	const json_t *ann = json_object_get(json_object_get(obj, "metadata"),
					    "annotations");
	const char *v =
		json_string_value(json_object_get(ann, RENDER_ANN_SUBSTITUTE));

	return v && !strcmp(v, "disabled");
}

/* True when the object's fields no longer give its recorded identity. */
static bool identity_changed(const struct diff_object *obj)
{
	struct diff_key k;
	bool changed;

	if (diff_key_from_object(&k, obj->json, NULL) < 0)
		return true;
	changed = !diff_key_equal(&k, &obj->key);
	diff_key_release(&k);
	return changed;
}

static int check_vars(const struct render_vars *vars, struct err *err)
{
	int error = 0;

	for (size_t i = 0; vars && i < vars->len; i++) {
		const char *n = vars->names[i];

		if (!render_var_name(n, strlen(n))) {
			int e = err_set(err, ERR_INVALID,
					"substitution variable \"%s\": a name "
					"is letters, digits and '_', not "
					"starting with a digit",
					n);

			if (!error)
				error = e;
		}
	}
	return error;
}

int render_substitute(struct diff_objset *set, const struct render_vars *vars,
		      bool strict, struct err *err)
{
	struct diff_objset fresh = DIFF_OBJSET_INIT;
	struct subst s = {vars, strict,	  err,	    0,
			  NULL, BUF_INIT, BUF_INIT, BUF_INIT};
	bool renamed = false;
	int error;

	if ((error = check_vars(vars, err)) < 0)
		return error;
	buf_init(&s.result, MAX_RESULT);
	for (size_t i = 0; i < set->len; i++) {
		struct diff_object *obj = set->items[i];

		if (opted_out(obj->json))
			continue;
		s.origin = obj->origin;
		buf_reset(&s.who);
		diff_key_format(&obj->key, &s.who);
		buf_reset(&s.path);
		walk(&s, obj->json);
		if (!renamed && identity_changed(obj))
			renamed = true;
	}
	if (s.error || !renamed)
		goto out;

	/*
	 * Some identity changed: rebuild the set so its index matches, and
	 * report objects that now collide or lost a required field.
	 */
	for (size_t i = 0; i < set->len; i++) {
		struct diff_object *obj;
		int e;

		if ((e = diff_object_new(&obj, set->items[i]->json,
					 set->items[i]->origin, err)) < 0) {
			subst_fail(&s, e);
			continue;
		}
		if ((e = diff_objset_add(&fresh, obj, err)) < 0) {
			diff_object_free(obj);
			subst_fail(&s, e);
		}
	}
	if (!s.error) {
		diff_objset_release(set);
		*set = fresh;
		fresh = (struct diff_objset)DIFF_OBJSET_INIT;
	}
out:
	diff_objset_release(&fresh);
	buf_release(&s.who);
	buf_release(&s.path);
	buf_release(&s.result);
	return s.error;
}
