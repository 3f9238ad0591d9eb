/*
 * Per-object options (the syncd.io/ annotations, docs/annotations.md):
 * reading and checking them, and what they change in a report.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/internal.h"

#include "util/banned.h" /* last */

/* The one place that knows every syncd.io/ annotation and its values. */
static const struct known {
	const char *key;
	const char *values; /* "a|b"; NULL: a wave number */
} known[] = {
	{APP_ANN_WAVE, NULL},
	{APP_ANN_PRUNE, "disabled"},
	{APP_ANN_APPLY, "create-only"},
	{APP_ANN_COMPARE, "ignore"},
	{APP_ANN_REPLACE, "true|false"},
	{APP_ANN_SUBSTITUTE, "enabled|disabled"},
};

#define PREFIX "syncd.io/"

static bool one_of(const char *v, const char *values)
{
	size_t n = strlen(v);

	for (const char *p = values; p;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && !strncmp(p, v, n))
			return true;
		p = bar ? bar + 1 : NULL;
	}
	return false;
}

/* One more problem for `why` (may be NULL), "; " between them. */
static int problem(struct buf *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int problem(struct buf *why, const char *fmt, ...)
{
	va_list ap;

	if (why) {
		if (why->len)
			buf_adds(why, "; ");
		va_start(ap, fmt);
		buf_vaddf(why, fmt, ap);
		va_end(ap);
	}
	return ERR_INVALID;
}

int app_object_options(const json_t *obj, struct app_object_options *out,
		       struct buf *why)
{
	const json_t *ann = json_object_get(json_object_get(obj, "metadata"),
					    "annotations");
	const char *key;
	const json_t *v;
	int error = 0;

	memset(out, 0, sizeof(*out));
	out->replace = -1;
	json_object_foreach((json_t *)ann, key, v)
	{
		const struct known *k = NULL;
		const char *s = json_string_value(v);

		if (strncmp(key, PREFIX, strlen(PREFIX)))
			continue;
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (!strcmp(known[i].key, key))
				k = &known[i];
		if (!k) {
			error = problem(why,
					"annotation %s: unknown (syncd knows "
					"%s, %s, %s, %s, %s and %s)",
					key, APP_ANN_WAVE, APP_ANN_PRUNE,
					APP_ANN_APPLY, APP_ANN_COMPARE,
					APP_ANN_REPLACE, APP_ANN_SUBSTITUTE);
		} else if (!k->values) {
			if (app_wave_of(obj, &out->wave) < 0)
				error = problem(why,
						"annotation %s: \"%s\" is not a "
						"whole number from %d to %d",
						key, s ? s : "", -APP_WAVE_MAX,
						APP_WAVE_MAX);
		} else if (!s || !one_of(s, k->values)) {
			error = problem(why,
					"annotation %s: \"%s\" is not one of %s",
					key, s ? s : "(not a string)",
					k->values);
		} else if (!strcmp(key, APP_ANN_PRUNE)) {
			out->prune_disabled = true;
		} else if (!strcmp(key, APP_ANN_APPLY)) {
			out->create_only = true;
		} else if (!strcmp(key, APP_ANN_COMPARE)) {
			out->compare_ignore = true;
		} else if (!strcmp(key, APP_ANN_REPLACE)) {
			out->replace = !strcmp(s, "true");
		}
	}
	return error;
}

int app_annotations_check(const struct diff_objset *desired, struct err *err)
{
	struct buf name = BUF_INIT, why = BUF_INIT;
	struct app_object_options oo;
	int error = 0;

	for (size_t i = 0; i < desired->len; i++) {
		const struct diff_object *o = desired->items[i];

		buf_reset(&why);
		if (!app_object_options(o->json, &oo, &why))
			continue;
		buf_reset(&name);
		diff_key_format(&o->key, &name);
		error = err_set(err, ERR_INVALID, "%s%s%s: %s",
				o->origin ? o->origin : "",
				o->origin ? ": " : "", buf_cstr(&name),
				buf_cstr(&why));
	}
	buf_release(&name);
	buf_release(&why);
	return error;
}

/* The differences of r no longer count: InSync, counted as ignored. */
static void not_drift(struct diff_object_report *r, bool keep_apply)
{
	for (size_t i = 0; i < r->nfields; i++)
		diff_field_release(&r->fields[i]);
	r->nignored += r->nfields;
	free(r->fields);
	r->fields = NULL;
	r->nfields = 0;
	json_decref(r->live_view);
	json_decref(r->desired_view);
	r->live_view = r->desired_view = NULL;
	if (!keep_apply) {
		json_decref(r->apply);
		r->apply = NULL;
		r->force = false;
	}
	r->state = DIFF_IN_SYNC;
}

void app_report_options(struct diff_report *report,
			const struct diff_objset *desired)
{
	for (size_t i = 0; i < report->len; i++) {
		struct diff_object_report *r = &report->objects[i];
		const struct diff_object *d;
		struct app_object_options oo;

		if (r->state == DIFF_IN_SYNC || r->state == DIFF_MISSING ||
		    r->state == DIFF_ORPHAN ||
		    !(d = diff_objset_get(desired, &r->key)) ||
		    app_object_options(d->json, &oo, NULL) < 0)
			continue;
		if (oo.create_only)
			not_drift(r, false);
		else if (oo.compare_ignore && r->state == DIFF_DRIFTED)
			not_drift(r, true);
	}
}
