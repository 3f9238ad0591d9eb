/*
 * Health rules from the configuration file: for one group and kind, the
 * conditions and status fields that decide and what their values mean
 * (docs/health.md, "Rules for other kinds"). A rule is checked whole when
 * it is added, so that judging never meets a bad one; the first problem
 * is reported with the JSON pointer of the value at fault.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "health/internal.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/strvec.h"

#include "util/banned.h" /* last */

/* Steps of a field path, and digits of one list index. */
#define PATH_MAX_STEPS 32
#define INDEX_MAX_DIGITS 6

/* The reason for a value in none of a rule's lists (Unknown). */
#define UNLISTED "%s is %s, a value its health rule does not list"

/* The value lists of a condition or field, by the state they mean. */
static const struct meaning {
	const char *key;
	enum health_state state;
} meanings[] = {
	{"healthy", HEALTH_HEALTHY},
	{"degraded", HEALTH_DEGRADED},
	{"suspended", HEALTH_SUSPENDED},
	{"progressing", HEALTH_PROGRESSING},
};

#define NMEANINGS (sizeof(meanings) / sizeof(*meanings))

/* What values mean: one list per entry of meanings[]. */
struct values {
	struct strvec lists[NMEANINGS];
	bool given[NMEANINGS];
};

/* One step of a field path: an object key, or (key NULL) a list index. */
struct step {
	char *key;
	size_t index;
};

struct field {
	char *path; /* as written: ".status.phase" */
	struct step steps[PATH_MAX_STEPS];
	size_t nsteps;
	struct values values;
};

struct rule {
	char *group;
	char *kind;
	struct strvec conditions;
	struct values values; /* of the conditions */
	struct field *fields;
	size_t nfields;
	bool observed_generation;
};

struct health_rules {
	struct rule *items;
	size_t len;
	size_t alloc;
};

/* ---- Building and freeing ---- */

static void values_release(struct values *v)
{
	for (size_t i = 0; i < NMEANINGS; i++)
		strvec_release(&v->lists[i]);
}

static void field_release(struct field *f)
{
	free(f->path);
	for (size_t i = 0; i < f->nsteps; i++)
		free(f->steps[i].key);
	values_release(&f->values);
}

static void rule_release(struct rule *r)
{
	free(r->group);
	free(r->kind);
	strvec_release(&r->conditions);
	values_release(&r->values);
	for (size_t i = 0; i < r->nfields; i++)
		field_release(&r->fields[i]);
	free(r->fields);
}

struct health_rules *health_rules_new(void)
{
	return calloc(1, sizeof(struct health_rules));
}

void health_rules_free(struct health_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->len; i++)
		rule_release(&r->items[i]);
	free(r->items);
	free(r);
}

static const struct rule *find(const struct health_rules *r,
			       const char *group, size_t group_len,
			       const char *kind)
{
	for (size_t i = 0; r && i < r->len; i++)
		if (strlen(r->items[i].group) == group_len &&
		    !memcmp(r->items[i].group, group, group_len) &&
		    !strcmp(r->items[i].kind, kind))
			return &r->items[i];
	return NULL;
}

/* ---- Parsing ---- */

/*
 * Where the parse is (the JSON pointer of the value being read) and the
 * first problem. Every parse function returns 0 or the negative code of
 * the problem it reported (with `where` left at the value at fault).
 */
struct parse {
	struct buf where;
	struct err *err;
};

static int fail(struct parse *p, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parse *p, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(p->err, code, fmt, ap);
	va_end(ap);
	return code;
}

/* Enter key (RFC 6901: '~' as ~0, '/' as ~1); returns the mark to leave. */
static size_t enter_key(struct parse *p, const char *key)
{
	size_t mark = p->where.len;

	buf_addch(&p->where, '/');
	for (; *key; key++)
		if (*key == '~' || *key == '/')
			buf_adds(&p->where, *key == '~' ? "~0" : "~1");
		else
			buf_addch(&p->where, *key);
	return mark;
}

static size_t enter_index(struct parse *p, size_t i)
{
	size_t mark = p->where.len;

	buf_addf(&p->where, "/%zu", i);
	return mark;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "a mapping";
	case JSON_ARRAY:
		return "a list";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

static int wrong_type(struct parse *p, const char *want, const json_t *v)
{
	return fail(p, ERR_INVALID, "expected %s, got %s", want, type_name(v));
}

/* obj is a mapping holding only `keys` (NULL-terminated). */
static int check_keys(struct parse *p, const json_t *obj,
		      const char *const *keys)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return wrong_type(p, "a mapping", obj);
	json_object_foreach ((json_t *)obj, key, v) {
		size_t i;

		for (i = 0; keys[i] && strcmp(keys[i], key); i++)
			;
		if (!keys[i]) {
			enter_key(p, key);
			return fail(p, ERR_INVALID, "unknown key");
		}
	}
	return 0;
}

static int dup_to(struct parse *p, char **dst, const char *s)
{
	if (!(*dst = strdup(s)))
		return fail(p, ERR_NOMEM, "out of memory");
	return 0;
}

/*
 * The string at obj[key] into *dst (a copy). Absent: "" unless
 * `required`; empty: an error unless `may_be_empty`.
 */
static int get_string(struct parse *p, const json_t *obj, const char *key,
		      bool required, bool may_be_empty, char **dst)
{
	const json_t *v = json_object_get(obj, key);
	size_t mark;
	int error;

	if (!v && required) {
		enter_key(p, key);
		return fail(p, ERR_INVALID, "required");
	}
	mark = enter_key(p, key);
	if (v && !json_is_string(v))
		return wrong_type(p, "a string", v);
	if (v && !json_string_length(v) && !may_be_empty)
		return fail(p, ERR_INVALID, "must not be empty");
	if ((error = dup_to(p, dst, v ? json_string_value(v) : "")) < 0)
		return error;
	buf_truncate(&p->where, mark);
	return 0;
}

/*
 * One value of a list as text: a string, or a boolean or integer as YAML
 * reads an unquoted True or 3 ("true", "3").
 */
static int value_text(struct parse *p, const json_t *v, char *out,
		      size_t size)
{
	if (json_is_string(v) && json_string_length(v))
		snprintf(out, size, "%s", json_string_value(v));
	else if (json_is_string(v))
		return fail(p, ERR_INVALID, "must not be empty");
	else if (json_is_boolean(v))
		snprintf(out, size, "%s", json_is_true(v) ? "true" : "false");
	else if (json_is_integer(v))
		snprintf(out, size, "%lld", (long long)json_integer_value(v));
	else
		return wrong_type(p, "a string", v);
	return 0;
}

/* obj[key], a list of values, into *dst; *given says it was there. */
static int get_values(struct parse *p, const json_t *obj, const char *key,
		      struct strvec *dst, bool *given)
{
	const json_t *list = json_object_get(obj, key);
	const json_t *v;
	size_t mark, i;
	int error;

	if (!list)
		return 0;
	*given = true;
	mark = enter_key(p, key);
	if (!json_is_array(list))
		return wrong_type(p, "a list", list);
	json_array_foreach (list, i, v) {
		size_t mi = enter_index(p, i);
		char text[1024];

		if ((error = value_text(p, v, text, sizeof(text))) < 0)
			return error;
		if (strvec_push(dst, text) < 0)
			return fail(p, ERR_NOMEM, "out of memory");
		buf_truncate(&p->where, mi);
	}
	buf_truncate(&p->where, mark);
	return 0;
}

/*
 * The value lists of a condition or field. A value in two lists is an
 * error at its second place; `healthy`, when given, must name something
 * (else nothing could ever be Healthy).
 */
static int get_meanings(struct parse *p, const json_t *obj, struct values *vals)
{
	int error;

	for (size_t m = 0; m < NMEANINGS; m++) {
		const char *key = meanings[m].key;

		if ((error = get_values(p, obj, key, &vals->lists[m],
					&vals->given[m])) < 0)
			return error;
		if (m == 0 && vals->given[m] && !vals->lists[m].len) {
			enter_key(p, key);
			return fail(p, ERR_INVALID, "must not be empty");
		}
		for (size_t i = 0; i < vals->lists[m].len; i++)
			for (size_t k = 0; k < m; k++)
				if (strvec_has(&vals->lists[k],
					       vals->lists[m].v[i])) {
					enter_key(p, key);
					enter_index(p, i);
					return fail(p, ERR_INVALID,
						    "\"%s\" is also in %s",
						    vals->lists[m].v[i],
						    meanings[k].key);
				}
	}
	return 0;
}

/*
 * Parse a field path, ".status.phase" or ".status.conditions[0].status":
 * keys after '.', list indexes in brackets. A key may hold any character
 * but '.', '[' and ']'.
 */
static int parse_path(struct parse *p, struct field *f)
{
	const char *s = f->path;
	const char *why = NULL;
	size_t at = 0;

	if (s[0] != '.')
		why = "it must start with '.'";
	while (!why && s[at]) {
		struct step *st = &f->steps[f->nsteps];
		size_t n;

		if (f->nsteps == PATH_MAX_STEPS) {
			why = "more than 32 steps";
			break;
		}
		if (s[at] == '.') {
			n = strcspn(s + at + 1, ".[]");
			if (!n) {
				why = "a key is empty";
				break;
			}
			if (!(st->key = strndup(s + at + 1, n)))
				return fail(p, ERR_NOMEM, "out of memory");
			at += n + 1;
		} else if (s[at] == '[') {
			n = strspn(s + at + 1, "0123456789");
			if (!n || n > INDEX_MAX_DIGITS ||
			    s[at + 1 + n] != ']') {
				why = "a list index is not [N]";
				break;
			}
			st->index = strtoul(s + at + 1, NULL, 10);
			at += n + 2;
		} else {
			why = "a ']' without '['";
			break;
		}
		f->nsteps++;
	}
	if (why)
		return fail(p, ERR_INVALID,
			    "\"%s\" is not a field path: %s (want e.g. "
			    ".status.phase or .status.conditions[0].status)",
			    s, why);
	return 0;
}

static int parse_field(struct parse *p, const json_t *in, struct field *f)
{
	static const char *const keys[] = {"path",     "healthy",
					   "degraded", "suspended",
					   "progressing", NULL};
	size_t mark;
	int error;

	if ((error = check_keys(p, in, keys)) < 0 ||
	    (error = get_string(p, in, "path", true, false, &f->path)) < 0)
		return error;
	mark = enter_key(p, "path");
	if ((error = parse_path(p, f)) < 0)
		return error;
	buf_truncate(&p->where, mark);
	if ((error = get_meanings(p, in, &f->values)) < 0)
		return error;
	if (!f->values.given[0]) {
		enter_key(p, "healthy");
		return fail(p, ERR_INVALID, "required");
	}
	return 0;
}

static int parse_fields(struct parse *p, const json_t *in, struct rule *r)
{
	const json_t *list = json_object_get(in, "fields");
	const json_t *v;
	size_t mark, i;
	int error;

	if (!list)
		return 0;
	mark = enter_key(p, "fields");
	if (!json_is_array(list))
		return wrong_type(p, "a list", list);
	if (!json_array_size(list))
		return fail(p, ERR_INVALID, "must not be empty");
	if (!(r->fields = calloc(json_array_size(list), sizeof(*r->fields))))
		return fail(p, ERR_NOMEM, "out of memory");
	json_array_foreach (list, i, v) {
		size_t mi = enter_index(p, i);

		r->nfields++;
		if ((error = parse_field(p, v, &r->fields[i])) < 0)
			return error;
		buf_truncate(&p->where, mi);
	}
	buf_truncate(&p->where, mark);
	return 0;
}

/* `condition`: one type, or a list of types that must all be healthy. */
static int parse_conditions(struct parse *p, const json_t *in, struct rule *r)
{
	const json_t *c = json_object_get(in, "condition");
	const json_t *v;
	size_t mark, inside, i;

	if (!c)
		return 0;
	mark = enter_key(p, "condition");
	inside = p->where.len;
	if (json_is_array(c) && !json_array_size(c))
		return fail(p, ERR_INVALID, "must not be empty");
	if (json_is_string(c)) {
		if (!json_string_length(c))
			return fail(p, ERR_INVALID, "must not be empty");
		if (strvec_push(&r->conditions, json_string_value(c)) < 0)
			return fail(p, ERR_NOMEM, "out of memory");
	} else if (!json_is_array(c)) {
		return wrong_type(p, "a string or a list", c);
	}
	json_array_foreach (c, i, v) {
		enter_index(p, i);
		if (!json_is_string(v))
			return wrong_type(p, "a string", v);
		if (!json_string_length(v))
			return fail(p, ERR_INVALID, "must not be empty");
		if (strvec_has(&r->conditions, json_string_value(v)))
			return fail(p, ERR_INVALID, "\"%s\" is listed twice",
				    json_string_value(v));
		if (strvec_push(&r->conditions, json_string_value(v)) < 0)
			return fail(p, ERR_NOMEM, "out of memory");
		buf_truncate(&p->where, inside);
	}
	buf_truncate(&p->where, mark);
	return 0;
}

/* Whether some list of vals holds s. */
static bool listed(const struct values *vals, const char *s)
{
	for (size_t m = 0; m < NMEANINGS; m++)
		if (strvec_has(&vals->lists[m], s))
			return true;
	return false;
}

/*
 * The value lists of the conditions, only with `condition`: healthy
 * defaults to ["True"], degraded to ["False"] (each unless another list
 * holds that value).
 */
static int parse_condition_values(struct parse *p, const json_t *in,
				  struct rule *r)
{
	int error;

	for (size_t m = 0; m < NMEANINGS; m++)
		if (!r->conditions.len &&
		    json_object_get(in, meanings[m].key)) {
			enter_key(p, meanings[m].key);
			return fail(p, ERR_INVALID, "only used with condition");
		}
	if ((error = get_meanings(p, in, &r->values)) < 0)
		return error;
	if (!r->values.given[0] && !listed(&r->values, "True") &&
	    strvec_push(&r->values.lists[0], "True") < 0)
		return fail(p, ERR_NOMEM, "out of memory");
	if (!r->values.given[1] && !listed(&r->values, "False") &&
	    strvec_push(&r->values.lists[1], "False") < 0)
		return fail(p, ERR_NOMEM, "out of memory");
	return 0;
}

static int parse_rule(struct parse *p, const json_t *in, struct rule *r)
{
	static const char *const keys[] = {
		"group",     "kind",        "condition", "healthy",
		"degraded",  "suspended",   "progressing", "fields",
		"observedGeneration", NULL};
	const json_t *og = json_object_get(in, "observedGeneration");
	int error;

	r->observed_generation = true;
	if ((error = check_keys(p, in, keys)) < 0 ||
	    (error = get_string(p, in, "group", false, true, &r->group)) < 0 ||
	    (error = get_string(p, in, "kind", true, false, &r->kind)) < 0 ||
	    (error = parse_conditions(p, in, r)) < 0 ||
	    (error = parse_condition_values(p, in, r)) < 0 ||
	    (error = parse_fields(p, in, r)) < 0)
		return error;
	if (og && !json_is_boolean(og)) {
		enter_key(p, "observedGeneration");
		return wrong_type(p, "a boolean", og);
	}
	r->observed_generation = !og || json_is_true(og);
	if (!r->conditions.len && !r->nfields)
		return fail(p, ERR_INVALID, "needs condition or fields");
	return 0;
}

int health_rules_add(struct health_rules *r, const json_t *in, char **where,
		     struct err *err)
{
	struct parse p = {BUF_INIT, err};
	struct rule rule = {0};
	int error;

	if (where)
		*where = NULL;
	if ((error = parse_rule(&p, in, &rule)) < 0)
		goto out;
	if (find(r, rule.group, strlen(rule.group), rule.kind)) {
		enter_key(&p, "kind");
		error = fail(&p, ERR_EXISTS,
			     "a rule for group \"%s\" kind %s exists already",
			     rule.group, rule.kind);
		goto out;
	}
	if (r->len == r->alloc) {
		size_t alloc = r->alloc ? 2 * r->alloc : 8;
		struct rule *items = realloc(r->items, alloc * sizeof(*items));

		if (!items) {
			error = fail(&p, ERR_NOMEM, "out of memory");
			goto out;
		}
		r->items = items;
		r->alloc = alloc;
	}
	r->items[r->len++] = rule;
	memset(&rule, 0, sizeof(rule));
out:
	if (error < 0 && where)
		*where = buf_detach(&p.where, NULL);
	buf_release(&p.where);
	rule_release(&rule);
	return error;
}

/* ---- Judging ---- */

static bool bool_word(const char *s)
{
	return !strcasecmp(s, "true") || !strcasecmp(s, "false");
}

/*
 * Whether a listed value names a live one; "true" and "True" are the
 * same (YAML reads an unquoted True as a boolean, conditions write
 * "True").
 */
static bool same_value(const char *listed, const char *live)
{
	return !strcmp(listed, live) ||
	       (bool_word(listed) && bool_word(live) &&
		!strcasecmp(listed, live));
}

/*
 * The state a value means: the list holding it; else Progressing, or
 * Unknown when the rule gave a `progressing` list (every expected value
 * is then listed).
 */
static enum health_state meaning_of(const struct values *vals,
				    const char *live)
{
	for (size_t m = 0; m < NMEANINGS; m++)
		for (size_t i = 0; i < vals->lists[m].len; i++)
			if (same_value(vals->lists[m].v[i], live))
				return meanings[m].state;
	return vals->given[3] ? HEALTH_UNKNOWN : HEALTH_PROGRESSING;
}

/* Keep in *worst the worse of itself and *h, the first of equals. */
static void keep_worst(struct health *worst, bool *any, struct health *h)
{
	if (!*any || health_worse(h->state, worst->state))
		health_move(worst, h);
	health_release(h);
	*any = true;
}

static void judge_condition(struct health *h, const struct rule *r,
			    const json_t *obj, const char *type)
{
	const json_t *c = health_cond(obj, type);
	const char *status = health_str(json_object_get(c, "status"));
	enum health_state s;

	if (!c) {
		health_set(h, HEALTH_PROGRESSING, "no %s condition yet", type);
		return;
	}
	if (r->observed_generation && health_cond_stale(obj, c)) {
		health_set_stale(h, NULL, obj, c);
		return;
	}
	s = meaning_of(&r->values, status);
	if (s == HEALTH_UNKNOWN)
		health_set(h, s, UNLISTED, type, status);
	else
		health_set_cond(h, s, NULL, c);
}

/* The value at a field path, or NULL. */
static const json_t *walk(const json_t *v, const struct field *f)
{
	for (size_t i = 0; v && i < f->nsteps; i++)
		v = f->steps[i].key ? json_object_get(v, f->steps[i].key)
				    : json_array_get(v, f->steps[i].index);
	return v;
}

static void judge_field(struct health *h, const struct field *f,
			const json_t *obj)
{
	const json_t *v = walk(obj, f);
	const char *message =
		health_str(health_get(obj, "status", "message", NULL));
	char text[64];
	const char *live = text;
	enum health_state s;

	if (!v || json_is_null(v)) {
		health_set(h, HEALTH_PROGRESSING, "no %s yet", f->path);
		return;
	}
	if (json_is_string(v))
		live = json_string_value(v);
	else if (json_is_boolean(v))
		live = json_is_true(v) ? "true" : "false";
	else if (json_is_integer(v))
		snprintf(text, sizeof(text), "%lld",
			 (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(text, sizeof(text), "%g", json_real_value(v));
	else {
		health_set(h, HEALTH_UNKNOWN, "%s is %s, not a value", f->path,
			   type_name(v));
		return;
	}
	s = meaning_of(&f->values, live);
	if (s == HEALTH_UNKNOWN)
		health_set(h, s, UNLISTED, f->path, live);
	else if (s != HEALTH_HEALTHY && *message)
		health_set(h, s, "%s is %s: %s", f->path, live, message);
	else
		health_set(h, s, "%s is %s", f->path, live);
}

/*
 * A configured rule: the controller's observedGeneration first (when the
 * rule asks), then every condition and field; the worst finding decides,
 * the first of equally bad ones gives the reason.
 */
static void judge_rule(struct health *out, const struct rule *r,
		       const json_t *obj)
{
	struct health worst = HEALTH_INIT, h = HEALTH_INIT;
	bool any = false;

	if (r->observed_generation &&
	    health_generation_behind(out, obj, "controller", false))
		return;
	for (size_t i = 0; i < r->conditions.len; i++) {
		judge_condition(&h, r, obj, r->conditions.v[i]);
		keep_worst(&worst, &any, &h);
	}
	for (size_t i = 0; i < r->nfields; i++) {
		judge_field(&h, &r->fields[i], obj);
		keep_worst(&worst, &any, &h);
	}
	health_move(out, &worst);
}

bool health_rules_judge(const struct health_rules *r, const char *group,
			size_t group_len, const char *kind, struct health *out,
			const json_t *obj)
{
	const struct rule *rule = find(r, group, group_len, kind);

	if (!rule)
		return false;
	judge_rule(out, rule, obj);
	return true;
}
