/*
 * Reading a live object's status: paths, conditions, generations, and
 * the one-line reasons made from them.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "health/internal.h"
#include "util/buf.h"

#include "util/banned.h" /* last */

/*
 * One line, at most HEALTH_REASON_MAX bytes: control characters (the
 * newlines of a multi-line condition message) become spaces, and a long
 * text is cut at a UTF-8 character boundary and marked with "...".
 */
static void one_line(struct buf *b)
{
	size_t cut;

	for (size_t i = 0; i < b->len; i++)
		if ((unsigned char)b->ptr[i] < 0x20 || b->ptr[i] == 0x7f)
			b->ptr[i] = ' ';
	if (b->len <= HEALTH_REASON_MAX)
		return;
	cut = utf8_cut(b->ptr, b->len, HEALTH_REASON_MAX - 3);
	buf_truncate(b, cut);
	buf_adds(b, "...");
}

void health_set(struct health *out, enum health_state s, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	one_line(&b);
	free(out->reason);
	out->state = s;
	out->reason = buf_detach(&b, NULL);
}

void health_move(struct health *out, struct health *from)
{
	free(out->reason);
	*out = *from;
	from->reason = NULL;
}

const json_t *health_get(const json_t *v, ...)
{
	const char *key;
	va_list ap;

	va_start(ap, v);
	while (v && (key = va_arg(ap, const char *)))
		v = json_object_get(v, key);
	va_end(ap);
	return v;
}

const char *health_str(const json_t *v)
{
	const char *s = json_string_value(v);

	return s ? s : "";
}

json_int_t health_int(const json_t *v, json_int_t def)
{
	return json_is_integer(v) ? json_integer_value(v) : def;
}

bool health_str_is(const json_t *v, const char *s)
{
	return json_is_string(v) && !strcmp(json_string_value(v), s);
}

const json_t *health_cond_in(const json_t *conds, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach (conds, i, c)
		if (health_str_is(json_object_get(c, "type"), type))
			return c;
	return NULL;
}

const json_t *health_cond(const json_t *obj, const char *type)
{
	return health_cond_in(health_get(obj, "status", "conditions", NULL),
			      type);
}

bool health_cond_is(const json_t *cond, const char *status)
{
	return health_str_is(json_object_get(cond, "status"), status);
}

bool health_cond_stale(const json_t *obj, const json_t *cond)
{
	json_int_t gen = health_int(
		health_get(obj, "metadata", "generation", NULL), 0);
	json_int_t seen =
		health_int(json_object_get(cond, "observedGeneration"), gen);

	return seen < gen;
}

void health_set_cond(struct health *out, enum health_state s,
		     const char *prefix, const json_t *cond)
{
	const char *type = health_str(json_object_get(cond, "type"));
	const char *status = health_str(json_object_get(cond, "status"));
	const char *reason = health_str(json_object_get(cond, "reason"));
	const char *message = health_str(json_object_get(cond, "message"));
	const char *sep = prefix ? ": " : "";

	prefix = prefix ? prefix : "";
	if (*reason && *message)
		health_set(out, s, "%s%s%s: %s", prefix, sep, reason, message);
	else if (*message)
		health_set(out, s, "%s%s%s is %s: %s", prefix, sep, type,
			   status, message);
	else if (*reason)
		health_set(out, s, "%s%s%s is %s (%s)", prefix, sep, type,
			   status, reason);
	else
		health_set(out, s, "%s%s%s is %s", prefix, sep, type, status);
}

void health_set_stale(struct health *out, const char *prefix,
		      const json_t *obj, const json_t *cond)
{
	json_int_t seen =
		health_int(json_object_get(cond, "observedGeneration"), 0);
	json_int_t gen = health_int(
		health_get(obj, "metadata", "generation", NULL), 0);

	health_set(out, HEALTH_PROGRESSING,
		   "%s%swaiting for the controller: %s is for generation %lld "
		   "< %lld",
		   prefix ? prefix : "", prefix ? ": " : "",
		   health_str(json_object_get(cond, "type")), (long long)seen,
		   (long long)gen);
}

bool health_generation_behind(struct health *out, const json_t *obj,
			      const char *what, bool required)
{
	json_int_t gen = health_int(
		health_get(obj, "metadata", "generation", NULL), 0);
	const json_t *seen = health_get(obj, "status", "observedGeneration",
					NULL);

	if (!json_is_integer(seen)) {
		if (!required || !gen)
			return false;
		health_set(out, HEALTH_PROGRESSING,
			   "waiting for the %s: generation %lld not observed "
			   "yet",
			   what, (long long)gen);
		return true;
	}
	if (json_integer_value(seen) >= gen)
		return false;
	health_set(out, HEALTH_PROGRESSING,
		   "waiting for the %s: observedGeneration %lld < generation "
		   "%lld",
		   what, (long long)json_integer_value(seen), (long long)gen);
	return true;
}
