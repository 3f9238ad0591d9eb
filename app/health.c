/*
 * An app's health: each desired object's (health_of() on its live
 * object; Missing when there is none), and the app's, the worst of them,
 * with the objects that decide it named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/internal.h"

#include "util/banned.h" /* last */

/* The message names this many deciding objects, then "and N more". */
#define NAMED_MAX 3

void app_health_release(struct app_health *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++) {
		free(h->objects[i].name);
		health_release(&h->objects[i].health);
	}
	free(h->objects);
	free(h->message);
	memset(h, 0, sizeof(*h));
	h->state = HEALTH_HEALTHY;
}

/* "Deployment.apps ns/web: REASON" of the deciding objects. */
static int app_message(struct app_health *h)
{
	struct buf b = BUF_INIT;
	size_t named = 0, more = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct app_health_object *o = &h->objects[i];

		if (o->health.state != h->state)
			continue;
		if (named == NAMED_MAX) {
			more++;
			continue;
		}
		if (named++)
			buf_adds(&b, "; ");
		buf_addf(&b, "%s: %s", o->name,
			 o->health.reason ? o->health.reason : "");
	}
	if (more)
		buf_addf(&b, "; and %zu more", more);
	if (!named)
		buf_addf(&b, "%zu objects", h->n);
	free(h->message);
	h->message = buf_detach(&b, NULL);
	return h->message ? 0 : ERR_NOMEM;
}

int app_health_of(const struct app *app, const struct diff_report *report,
		  struct app_health *out,
		  struct err *err)
{
	struct buf name = BUF_INIT;
	int error = 0;

	memset(out, 0, sizeof(*out));
	out->state = HEALTH_HEALTHY;
	out->objects = calloc(report->len + 1, sizeof(*out->objects));
	if (!out->objects)
		goto nomem;
	for (size_t i = 0; i < report->len; i++) {
		const struct diff_object_report *r = &report->objects[i];
		struct app_health_object *o = &out->objects[out->n];

		/* Orphans are no longer the app's; the parent is no workload. */
		if (r->state == DIFF_ORPHAN || app_is_parent(app, &r->key))
			continue;
		buf_reset(&name);
		if (diff_key_format(&r->key, &name) < 0 ||
		    !(o->name = strdup(buf_cstr(&name))))
			goto nomem;
		o->index = i;
		app_live_health(app, &r->key, app->health_rules, &o->health);
		out->n++;
		if (!o->health.reason)
			goto nomem;
		if (health_worse(o->health.state, out->state))
			out->state = o->health.state;
	}
	if (app_message(out) < 0)
		goto nomem;
	goto out;
nomem:
	error = err_set(err, ERR_NOMEM, "out of memory");
	app_health_release(out);
out:
	buf_release(&name);
	return error;
}

json_t *app_health_json(const struct app_health *h, bool objects)
{
	json_t *o = json_pack("{s:s, s:s}", "status",
			      health_state_name(h->state), "message",
			      h->message ? h->message : ""),
	       *list = objects ? json_array() : NULL;

	for (size_t i = 0; o && list && i < h->n; i++) {
		const struct app_health_object *x = &h->objects[i];

		if (x->health.state == HEALTH_HEALTHY)
			continue;
		json_array_append_new(
			list, json_pack("{s:s, s:s, s:s}", "object", x->name,
					"status",
					health_state_name(x->health.state),
					"message",
					x->health.reason ? x->health.reason
							 : ""));
	}
	if (o && list)
		json_object_set_new(o, "objects", list);
	else
		json_decref(list);
	return o;
}

static void set_health(json_t *o, const struct app_health_object *x)
{
	json_object_set_new(o, "health",
			    json_pack("{s:s, s:s}", "status",
				      health_state_name(x->health.state),
				      "message",
				      x->health.reason ? x->health.reason : ""));
}

void app_health_annotate_object(json_t *obj, size_t index,
				const struct app_health *h, size_t *cursor)
{
	/* h's objects are in report order, some left out. */
	while (*cursor < h->n && h->objects[*cursor].index < index)
		(*cursor)++;
	if (*cursor < h->n && h->objects[*cursor].index == index)
		set_health(obj, &h->objects[*cursor]);
}
