/*
 * What the controller shows of its apps: the status documents of the HTTP
 * endpoint (docs/http-api.md), the metrics, and the Events about objects.
 * Passes record their outcome here (ctl_status_pass()); HTTP threads read
 * it under each app's st_lock.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/controller.h"
#include "controller/internal.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/zpack.h"

#include "util/banned.h" /* last */

static void emit(struct ctl_app *a, const json_t *regarding_obj,
		 const char *type, const char *reason, const char *action,
		 const char *note);

static const double duration_buckets[] = {0.05, 0.1, 0.25, 0.5, 1,
					  2.5,	5,   10,   30,	60};

void ctl_metrics_declare(struct metrics *m)
{
	if (!m)
		return;
	metrics_declare(m, "syncd_app_info", METRICS_GAUGE,
			"The source and revision of each app (always 1).",
			NULL, 0);
	metrics_declare(m, "syncd_app_objects", METRICS_GAUGE,
			"Objects of each app by state in its last drift "
			"report.",
			NULL, 0);
	metrics_declare(m, "syncd_app_health", METRICS_GAUGE,
			"1 for each app's health (Healthy, Suspended, "
			"Progressing, Missing, Degraded, Unknown), 0 for the "
			"others: the worst health of its objects.",
			NULL, 0);
	metrics_declare(m, "syncd_app_drifted_fields", METRICS_GAUGE,
			"Differing fields of each app in its last drift "
			"report, by owner: self (syncd heals them) or foreign "
			"(another controller owns them).",
			NULL, 0);
	metrics_declare(m, "syncd_app_drift_seconds", METRICS_GAUGE,
			"How long each app has been out of sync (0 when in "
			"sync).",
			NULL, 0);
	metrics_declare(m, "syncd_app_last_sync_timestamp_seconds",
			METRICS_GAUGE,
			"When the last pass of each app ended, by result.",
			NULL, 0);
	metrics_declare(m, "syncd_sync_total", METRICS_COUNTER,
			"Passes of each app by result.", NULL, 0);
	metrics_declare(m, "syncd_reconcile_duration_seconds",
			METRICS_HISTOGRAM, "Duration of each pass.",
			duration_buckets,
			sizeof(duration_buckets) / sizeof(*duration_buckets));
	metrics_declare(m, "syncd_field_fights_total", METRICS_COUNTER,
			"Fields found fighting, by app and by the other "
			"manager.",
			NULL, 0);
	metrics_declare(m, "syncd_git_requests_total", METRICS_COUNTER,
			"Git source operations by result.", NULL, 0);
	metrics_declare(m, "syncd_source_requests_total", METRICS_COUNTER,
			"Source polls and downloads by source type (git, helm, "
			"oci) and result.",
			NULL, 0);
	metrics_declare(m, "syncd_verify_dry_runs_total", METRICS_COUNTER,
			"Dry-run applies sent to confirm local drift (verify: "
			"dryRun), by app and verdict: drift (confirmed), "
			"insync (the local comparison was wrong) or refused "
			"(the server refuses the apply).",
			NULL, 0);
	metrics_declare(m, "syncd_kube_requests_total", METRICS_COUNTER,
			"Kubernetes API requests by cluster, verb and status "
			"code (0: no response).",
			NULL, 0);
	metrics_declare(m, "syncd_cluster_up", METRICS_GAUGE,
			"1 when the last request to each cluster of clusters: "
			"got an answer, 0 when it did not.",
			NULL, 0);
	metrics_declare(m, "syncd_leader", METRICS_GAUGE,
			"1 when this replica writes (the leader, or no leader "
			"election).",
			NULL, 0);
}

int ctl_status_init(struct ctl_app *a)
{
	pthread_mutex_init(&a->st_lock, NULL);
	a->st.state = "Unknown";
	a->st.first_seen = json_object();
	a->st.foreign_notes = json_object();
	a->st.history = json_array();
	a->st.events = json_array();
	a->st.health_counts = json_object();
	return a->st.first_seen && a->st.foreign_notes && a->st.history &&
			       a->st.events && a->st.health_counts
		       ? 0
		       : ERR_NOMEM;
}

void ctl_status_release(struct ctl_app *a)
{
	free(a->st.error);
	free(a->st.source_error);
	free(a->st.report_z);
	json_decref(a->st.health_doc);
	json_decref(a->st.first_seen);
	json_decref(a->st.foreign_notes);
	json_decref(a->st.history);
	json_decref(a->st.events);
	json_decref(a->st.health_counts);
	json_decref(a->st.seed_first_seen);
	free(a->st.diff_z);
	pthread_mutex_destroy(&a->st_lock);
}

/* "<group>/<kind>/<namespace>/<name>" of a report's JSON object. */
static void json_object_key(const json_t *o, struct buf *out)
{
	buf_reset(out);
	buf_addf(out, "%s/%s/%s/%s",
		 json_string_value(json_object_get(o, "group")) ?: "",
		 json_string_value(json_object_get(o, "kind")) ?: "",
		 json_string_value(json_object_get(o, "namespace")) ?: "",
		 json_string_value(json_object_get(o, "name")) ?: "");
}

void ctl_report_object_name(const json_t *o, struct buf *out)
{
	const char *g = json_string_value(json_object_get(o, "group"));
	const char *ns = json_string_value(json_object_get(o, "namespace"));

	buf_reset(out);
	buf_addf(out, "%s%s%s %s%s%s",
		 json_string_value(json_object_get(o, "kind")) ?: "",
		 g && *g ? "." : "", g ? g : "", ns && *ns ? ns : "",
		 ns && *ns ? "/" : "",
		 json_string_value(json_object_get(o, "name")) ?: "");
}

/*
 * When an App's status said since when a field differs (read back after
 * a restart), that time (new reference); else NULL.
 */
static json_t *seeded_first_seen(struct ctl_app *a, const json_t *o,
				 const char *path)
{
	struct buf key = BUF_INIT;
	json_t *t;

	if (!a->st.seed_first_seen)
		return NULL;
	ctl_report_object_name(o, &key);
	buf_addf(&key, "\t%s", path ? path : "");
	t = json_object_get(a->st.seed_first_seen, buf_cstr(&key));
	buf_release(&key);
	return t ? json_incref(t) : NULL;
}

/*
 * Give each differing field of `rj` its firstSeen: kept from the last
 * report while the field keeps differing, else now.
 */
static void stamp_first_seen(struct ctl_app *a, json_t *rj, time_t now)
{
	json_t *seen = json_object(), *o, *f;
	struct buf key = BUF_INIT;
	size_t i, j;
	char t[32];

	if (!seen)
		return;
	clk_rfc3339_format(now, t);
	json_array_foreach(json_object_get(rj, "objects"), i, o)
	{
		json_array_foreach(json_object_get(o, "fields"), j, f)
		{
			const char *path =
				json_string_value(json_object_get(f, "path"));
			json_t *was;

			json_object_key(o, &key);
			buf_addf(&key, "\t%s", path ? path : "");
			was = json_object_get(a->st.first_seen,
					      buf_cstr(&key));
			if (!was)
				was = seeded_first_seen(a, o, path);
			if (!was)
				was = json_string(t);
			else
				json_incref(was);
			json_object_set(f, "firstSeen", was);
			json_object_set_new(seen, buf_cstr(&key), was);
		}
	}
	buf_release(&key);
	json_decref(a->st.first_seen);
	a->st.first_seen = seen;
}

/*
 * The report kept for the status API lists only the objects that are not
 * in sync (the summary counts them all): an app of thousands of objects
 * in sync would otherwise keep a large document for nothing.
 */
static json_t *out_of_sync_json(const struct diff_report *report)
{
	json_t *rj = diff_report_head_json(report),
	       *objs = json_object_get(rj, "objects");

	for (size_t i = 0; rj && i < report->len; i++)
		if (report->objects[i].state != DIFF_IN_SYNC &&
		    json_array_append_new(objs,
					  diff_report_object_json(report, i))) {
			json_decref(rj);
			return NULL;
		}
	return rj;
}

static void set_gauge(struct metrics *m, const char *name, const char *app,
		      const char *lname, const char *lvalue, double v)
{
	const char *labels[] = {"app", app, lname, lvalue, NULL};

	if (!lname)
		labels[2] = NULL;
	metrics_gauge_set(m, name, labels, v);
}

/* The gauges of one app from its status. Status lock held. */
static void app_gauges(struct controller *c, struct ctl_app *a)
{
	struct metrics *m = c->metrics;
	const struct diff_summary *s = &a->st.sum;
	const char *name = a->spec->name;
	const char *info[] = {"app",  name,	     "repo",
			      a->spec->source.url,  "path",
			      a->spec->source.subpath ? a->spec->source.subpath : "",
			      "revision", a->st.revision, "cluster",
			      ctl_cluster_name(a->cluster), NULL};

	if (!m)
		return;
	metrics_remove(m, "syncd_app_info", "app", name);
	metrics_gauge_set(m, "syncd_app_info", info, 1);
	set_gauge(m, "syncd_app_objects", name, "state", "InSync",
		  (double)s->in_sync);
	set_gauge(m, "syncd_app_objects", name, "state", "Drifted",
		  (double)s->drifted);
	set_gauge(m, "syncd_app_objects", name, "state", "Missing",
		  (double)s->missing);
	set_gauge(m, "syncd_app_objects", name, "state", "Orphan",
		  (double)s->orphan);
	set_gauge(m, "syncd_app_objects", name, "state", "Foreign",
		  (double)s->foreign);
	set_gauge(m, "syncd_app_objects", name, "state", "Fighting",
		  (double)s->fighting);
	set_gauge(m, "syncd_app_drifted_fields", name, "owner_kind", "self",
		  (double)(s->fields - s->foreign_fields));
	set_gauge(m, "syncd_app_drifted_fields", name, "owner_kind",
		  "foreign", (double)s->foreign_fields);
}

/* The health gauges of one app: 1 for its state, 0 for the others. */
static void health_gauges(struct metrics *m, const char *app,
			  enum health_state now)
{
	for (int s = HEALTH_HEALTHY; s <= HEALTH_UNKNOWN; s++)
		set_gauge(m, "syncd_app_health", app, "status",
			  health_state_name((enum health_state)s),
			  s == (int)now ? 1 : 0);
}

/*
 * An Event on the app's inventory Secret when its health changes
 * (Progressing, Healthy, Degraded, ...: the reason is the new state;
 * Warning for the bad ones). kube_events_emit() rate-limits them.
 */
static void health_event(struct ctl_app *a, const struct app_health *h)
{
	const struct app *app = a->cur_app;
	const json_t *uid = NULL;
	json_t *o;
	bool bad = h->state == HEALTH_DEGRADED || h->state == HEALTH_MISSING ||
		   h->state == HEALTH_UNKNOWN;

	if (!app)
		return;
	for (size_t i = 0; i < app->live.len && !uid; i++) {
		const struct diff_key *k = &app->live.items[i]->key;

		if (!*k->group && !strcmp(k->kind, "Secret") &&
		    !strcmp(k->ns, app->namespace) &&
		    !strcmp(k->name, app->name))
			uid = json_object_get(
				json_object_get(app->live.items[i]->json,
						"metadata"),
				"uid");
	}
	o = json_pack("{s:s, s:s, s:{s:s, s:s, s:O?}}", "apiVersion", "v1",
		      "kind", "Secret", "metadata", "name", app->name,
		      "namespace", app->namespace, "uid", uid);
	if (!o)
		return;
	emit(a, o, bad ? "Warning" : "Normal", health_state_name(h->state),
	     "Health", h->message ? h->message : "");
	json_decref(o);
}

/*
 * An App's status read back after a start (status lock held): since when
 * its fields and the app differ, and its history, so that a restart
 * neither resets them nor writes a status that only says it restarted.
 */
static void seed_from_status(struct ctl_app *a, const json_t *live)
{
	const json_t *f, *since = json_object_get(live, "driftSince");
	struct buf key = BUF_INIT;
	size_t i;
	time_t t;

	a->st.seeded = true;
	if (!live)
		return;
	json_decref(a->st.seed_first_seen);
	a->st.seed_first_seen = json_object();
	json_array_foreach(json_object_get(live, "driftedFields"), i, f)
	{
		const char *o = json_string_value(json_object_get(f, "object"));
		const char *p = json_string_value(json_object_get(f, "path"));
		json_t *seen = json_object_get(f, "firstSeen");

		if (!o || !p || !json_is_string(seen))
			continue;
		buf_reset(&key);
		buf_addf(&key, "%s\t%s", o, p);
		json_object_set(a->st.seed_first_seen, buf_cstr(&key), seen);
	}
	buf_release(&key);
	if (json_is_string(since) &&
	    clk_rfc3339_parse(json_string_value(since), &t) == 0)
		a->st.drift_since = t;
	if (json_is_array(json_object_get(live, "history"))) {
		json_decref(a->st.history);
		a->st.history =
			json_deep_copy(json_object_get(live, "history"));
		if (!a->st.history)
			a->st.history = json_array();
	}
	f = json_object_get(live, "lastAppliedRevision");
	if (json_is_string(f))
		snprintf(a->st.applied, sizeof(a->st.applied), "%s",
			 json_string_value(f));
}

void ctl_status_seed(struct controller *c, struct ctl_app *a)
{
	json_t *live;

	if (!a->spec->object_ns || a->st.seeded)
		return;
	live = ctl_objects_live_status(c, a->spec->object_ns, a->spec->name);
	pthread_mutex_lock(&a->st_lock);
	seed_from_status(a, live);
	pthread_mutex_unlock(&a->st_lock);
	json_decref(live);
}

/*
 * One more history entry (status lock held) for a pass that failed,
 * wrote, or enforced a new revision; a pass like the one before is not
 * one (a resync that changed nothing, the same failure again).
 */
static void add_history(struct ctl_app *a, const struct app_sync_result *res,
			const char *error, time_t now)
{
	const json_t *last = json_array_get(a->st.history, 0);
	size_t applied = res ? res->applied : 0, pruned = res ? res->pruned : 0;
	const char *rev = a->st.revision;
	struct buf msg = BUF_INIT;
	char t[32];
	json_t *e;

	if (error)
		buf_adds(&msg, error);
	else
		buf_addf(&msg, "applied %zu, pruned %zu", applied, pruned);
	if (!*rev)
		goto out;
	if (last && !applied && !pruned &&
	    !strcmp(json_string_value(json_object_get(last, "revision")) ?: "",
		    rev) &&
	    !strcmp(json_string_value(json_object_get(last, "result")) ?: "",
		    error ? "failure" : "success") &&
	    (!error || !strcmp(json_string_value(json_object_get(
					last, "message")) ?: "",
			       buf_cstr(&msg))))
		goto out;
	if (!last && !error && !applied && !pruned && !a->st.sum.objects)
		goto out;
	clk_rfc3339_format(now, t);
	buf_truncate(&msg, utf8_cut(msg.ptr, msg.len, 512));
	e = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "revision", rev,
		      "time", t, "result", error ? "failure" : "success",
		      "message", buf_cstr(&msg), "applied",
		      (json_int_t)applied, "pruned", (json_int_t)pruned);
	if (e && json_array_insert_new(a->st.history, 0, e) == 0)
		while (json_array_size(a->st.history) > HISTORY_MAX)
			json_array_remove(a->st.history, HISTORY_MAX);
out:
	buf_release(&msg);
}

/* rj as compact text, deflated (malloc'd, *len bytes), or NULL. */
static unsigned char *pack_json(const json_t *rj, size_t *len)
{
	char *dump = rj ? json_dumps(rj, JSON_COMPACT | JSON_PRESERVE_ORDER)
			: NULL;
	unsigned char *z = dump ? zpack(dump, strlen(dump), len) : NULL;

	free(dump);
	return z;
}

/* The largest text diff kept for the status API and the browser view. */
#define DIFF_TEXT_MAX (256u << 10)

void ctl_status_pass(struct controller *c, struct ctl_app *a,
		     const struct diff_report *report,
		     const struct app_health *health,
		     const struct app_sync_result *res, bool healed,
		     const char *error, const char *source_error,
		     double seconds)
{
	const char *name = a->spec->name;
	const char *result = error ? "failure" : "success";
	const char *labels[] = {"app", name, "result", result, NULL};
	const char *app_only[] = {"app", name, NULL};
	bool drift = report && diff_report_has_drift(report);
	json_t *rj = report ? out_of_sync_json(report) : NULL;
	time_t now = time(NULL);
	bool health_changed = false, health_was_known;
	struct buf text = BUF_INIT;
	unsigned char *diff_z = NULL;
	size_t diff_zlen = 0;

	ctl_status_seed(c, a);
	if (report && diff_report_to_text(report, false, &text) == 0 &&
	    text.len > DIFF_TEXT_MAX) {
		buf_truncate(&text, utf8_cut(text.ptr, text.len, DIFF_TEXT_MAX));
		buf_adds(&text, "\n... (cut: the diff is longer)\n");
	}
	if (text.len)
		diff_z = zpack(text.ptr, text.len, &diff_zlen);
	pthread_mutex_lock(&a->st_lock);
	health_was_known = a->st.health_known;
	a->st.ran = true;
	a->st.last_sync = now;
	a->st.last_ok = !error;
	free(a->st.error);
	a->st.error = error ? strdup(error) : NULL;
	free(a->st.source_error);
	a->st.source_error = source_error ? strdup(source_error) : NULL;
	memcpy(a->st.revision, a->commit, sizeof(a->st.revision));
	if (report) {
		diff_report_summary(report, &a->st.sum);
		stamp_first_seen(a, rj, now);
		json_decref(a->st.seed_first_seen);
		a->st.seed_first_seen = NULL;
		free(a->st.report_z);
		a->st.report_z = pack_json(rj, &a->st.report_zlen);
		free(a->st.diff_z);
		a->st.diff_z = diff_z;
		a->st.diff_zlen = diff_zlen;
		diff_z = NULL;
	}
	a->st.fail_reason = error ? a->fail_reason : NULL;
	memcpy(a->st.attempted, a->seen[0] ? a->seen : a->commit,
	       sizeof(a->st.attempted));
	if (!error)
		memcpy(a->st.applied, a->commit, sizeof(a->st.applied));
	add_history(a, res, error, now);
	/*
	 * The state after the pass: drift it healed is gone, drift it only
	 * reported (selfHeal off, policy report) stays.
	 */
	if (error)
		a->st.state = "Failed";
	else if (drift && !healed)
		a->st.state = "Drifted";
	else if (a->st.sum.fighting)
		a->st.state = "Fighting";
	else
		a->st.state = "InSync";
	if (!strcmp(a->st.state, "InSync"))
		a->st.drift_since = 0;
	else if (!a->st.drift_since && (drift || a->st.sum.fighting))
		a->st.drift_since = now;
	if (health) {
		health_changed = !a->st.health_known ||
				 a->st.health != health->state;
		a->st.health_known = true;
		a->st.health = health->state;
		json_decref(a->st.health_doc);
		a->st.health_doc = app_health_json(health, true);
		json_object_clear(a->st.health_counts);
		for (size_t i = 0; i < health->n; i++) {
			const char *k =
				health_state_name(health->objects[i].health.state);
			json_int_t n = json_integer_value(
				json_object_get(a->st.health_counts, k));

			json_object_set_new(a->st.health_counts, k,
					    json_integer(n + 1));
		}
	}
	if (c->metrics) {
		app_gauges(c, a);
		if (health)
			health_gauges(c->metrics, name, health->state);
		metrics_counter_add(c->metrics, "syncd_sync_total", labels, 1);
		metrics_observe(c->metrics,
				"syncd_reconcile_duration_seconds", app_only,
				seconds);
		metrics_gauge_set(c->metrics,
				  "syncd_app_last_sync_timestamp_seconds",
				  labels, (double)now);
	}
	pthread_mutex_unlock(&a->st_lock);
	json_decref(rj);
	free(diff_z);
	buf_release(&text);
	if (a->spec->object_ns)
		ctl_objects_status(c, a, NULL);
	if (health_changed) {
		/* A transition: the first health after a start is none. */
		if (health_was_known)
			health_event(a, health);
		ctl_wake_dependents(c, name);
	}
}

void ctl_status_waiting(struct ctl_app *a, const char *why)
{
	pthread_mutex_lock(&a->st_lock);
	json_decref(a->st.health_doc);
	a->st.health_doc = json_pack("{s:s, s:s}", "status", "Progressing",
				     "message", why);
	a->st.health_known = true;
	a->st.health = HEALTH_PROGRESSING;
	pthread_mutex_unlock(&a->st_lock);
	/* An App says it waits: Reconciling, with the dependency named. */
	if (a->spec->object_ns)
		ctl_objects_status(a->ctl, a, NULL);
}

void ctl_metrics_forget(struct controller *c, const char *app)
{
	if (c->metrics)
		metrics_remove(c->metrics, NULL, "app", app);
}

void ctl_count_source(struct controller *c, enum source_type type,
		      const char *op, bool ok)
{
	const char *labels[] = {"op",	  op,
				"result", ok ? "success" : "failure",
				"type",	  source_type_names[type],
				NULL};

	if (!c->metrics)
		return;
	metrics_counter_add(c->metrics, "syncd_source_requests_total", labels,
			    1);
	/* The Git-only counter of earlier releases, as it was. */
	if (type == SOURCE_GIT) {
		labels[4] = NULL;
		metrics_counter_add(c->metrics, "syncd_git_requests_total",
				    labels, 1);
	}
}

/* --- documents ---------------------------------------------------- */

/* The summary of one app (status lock held). */
static json_t *summary_json(const struct ctl_app *a)
{
	const struct diff_summary *s = &a->st.sum;
	char t[32];
	json_t *o, *last = json_null(), *since = json_null();

	if (a->st.ran) {
		clk_rfc3339_format(a->st.last_sync, t);
		last = json_pack("{s:s, s:s}", "time", t, "result",
				 a->st.last_ok ? "success" : "failure");
	}
	if (a->st.drift_since) {
		clk_rfc3339_format(a->st.drift_since, t);
		since = json_string(t);
	}
	o = json_pack(
		"{s:s, s:s, s:s?, s:s?, s:s, s:{s:I, s:I, s:I, s:I, s:I, s:I, "
		"s:I, s:I, s:I, s:I, s:I}, s:o, s:o, s:s?}",
		"name", a->spec->name, "repo", a->spec->source.url, "path",
		a->spec->source.subpath, "revision",
		a->st.revision[0] ? a->st.revision : NULL, "state",
		a->st.state, "summary", "objects", (json_int_t)s->objects,
		"inSync", (json_int_t)s->in_sync, "drifted",
		(json_int_t)s->drifted, "missing", (json_int_t)s->missing,
		"orphan", (json_int_t)s->orphan, "foreign",
		(json_int_t)s->foreign, "fighting", (json_int_t)s->fighting,
		"fields", (json_int_t)s->fields, "foreignFields",
		(json_int_t)s->foreign_fields, "fightingFields",
		(json_int_t)s->fighting_fields, "ignoredFields",
		(json_int_t)s->ignored_fields, "lastSync", last, "driftSince",
		since, "error", a->st.error);
	/* "s?" already wrote null for each absent value. */
	if (o)
		json_object_set_new(o, "cluster",
				    json_string(ctl_cluster_name(a->cluster)));
	if (o)
		json_object_set_new(o, "sourceError",
				    a->st.source_error
					    ? json_string(a->st.source_error)
					    : json_null());
	if (o)
		json_object_set_new(
			o, "health",
			a->st.health_doc
				? json_pack("{s:O, s:O}", "status",
					    json_object_get(a->st.health_doc,
							    "status"),
					    "message",
					    json_object_get(a->st.health_doc,
							    "message"))
				: json_pack("{s:s, s:s}", "status", "Unknown",
					    "message", "no pass has read the "
						       "app's objects yet"));
	return o;
}

json_t *controller_apps_json(struct controller *c)
{
	json_t *apps = json_array(), *doc;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; apps && i < c->napps; i++) {
		struct ctl_app *a = c->apps[i];

		pthread_mutex_lock(&a->st_lock);
		json_array_append_new(apps, summary_json(a));
		pthread_mutex_unlock(&a->st_lock);
	}
	doc = json_pack("{s:s, s:s, s:b, s:o}", "apiVersion", "syncd.dev/v1",
			"kind", "AppList", "leader", c->leading, "apps",
			apps ? apps : json_array());
	pthread_mutex_unlock(&c->lock);
	return doc;
}

json_t *ctl_status_report(const struct ctl_status *st)
{
	size_t len = 0;
	char *text = st->report_z
			     ? zunpack(st->report_z, st->report_zlen, &len)
			     : NULL;
	json_t *j = text ? fastjson_load(text, len, NULL, NULL) : NULL;

	free(text);
	return j ? j : json_null();
}

/* A kept text diff back as a JSON string; null when none. */
static json_t *unpack_string(const unsigned char *z, size_t n)
{
	size_t len = 0;
	char *text = z ? zunpack(z, n, &len) : NULL;
	json_t *j = text ? json_stringn(text, len) : NULL;

	free(text);
	return j ? j : json_null();
}

json_t *controller_app_json(struct controller *c, const char *name)
{
	json_t *doc = NULL;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->napps && !doc; i++) {
		struct ctl_app *a = c->apps[i];

		if (strcmp(a->spec->name, name))
			continue;
		pthread_mutex_lock(&a->st_lock);
		if ((doc = summary_json(a))) {
			json_object_set_new(doc, "apiVersion",
					    json_string("syncd.dev/v1"));
			json_object_set_new(doc, "kind", json_string("App"));
			json_object_set_new(doc, "leader",
					    json_boolean(c->leading));
			json_object_set_new(doc, "report",
					    ctl_status_report(&a->st));
			if (a->st.health_doc)
				json_object_set(doc, "health",
						a->st.health_doc);
			json_object_set_new(doc, "history",
					    json_deep_copy(a->st.history));
			json_object_set_new(doc, "events",
					    json_deep_copy(a->st.events));
			json_object_set_new(doc, "status", ctl_status_doc(a));
			if (a->spec->object_ns)
				json_object_set_new(
					doc, "object",
					json_pack("{s:s, s:s, s:s}", "kind",
						  "App", "namespace",
						  a->spec->object_ns, "name",
						  a->spec->name));
			json_object_set_new(doc, "diff",
					    unpack_string(a->st.diff_z,
							  a->st.diff_zlen));
		}
		pthread_mutex_unlock(&a->st_lock);
	}
	pthread_mutex_unlock(&c->lock);
	return doc;
}

int controller_sync_now(struct controller *c, const char *name)
{
	int error = ERR_NOTFOUND;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->napps; i++)
		if (!strcmp(c->apps[i]->spec->name, name)) {
			c->apps[i]->force_poll = true;
			error = c->q ? queue_enqueue(c->q, name) : 0;
		}
	pthread_mutex_unlock(&c->lock);
	return error;
}

/*
 * A repository URL reduced to host and path, so that the clone, SSH and
 * web URLs of one repository compare equal: no scheme, credentials, port
 * of ssh://, trailing "/" or ".git"; the host lower-cased.
 */
void controller_repo_key(const char *url, struct buf *out)
{
	const char *p = strstr(url, "://"), *at, *slash;
	size_t start, n;

	buf_reset(out);
	if (p) {
		p += 3;
	} else {
		p = url; /* scp-like: git@host:path */
	}
	slash = strchr(p, '/');
	at = strchr(p, '@');
	if (at && (!slash || at < slash))
		p = at + 1;
	start = out->len;
	for (; *p && *p != '/' && !(*p == ':' && !strstr(url, "://")); p++)
		buf_addch(out, (char)tolower((unsigned char)*p));
	/* Drop a port ("host:22"), keep the path. */
	if (strstr(url, "://") && out->len > start) {
		char *colon = memchr(out->ptr + start, ':', out->len - start);

		if (colon)
			buf_truncate(out, (size_t)(colon - out->ptr));
	}
	buf_addch(out, '/');
	if (*p == ':' || *p == '/')
		p++;
	buf_adds(out, p);
	n = out->len;
	while (n && out->ptr[n - 1] == '/')
		n--;
	if (n >= 4 && !strncmp(out->ptr + n - 4, ".git", 4))
		n -= 4;
	while (n && out->ptr[n - 1] == '/')
		n--;
	buf_truncate(out, n);
}

int controller_push(struct controller *c, const char *const *urls,
		    size_t nurls, const char *branch)
{
	struct buf want = BUF_INIT, have = BUF_INIT;
	int n = 0;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->napps; i++) {
		const struct source_options *s = &c->apps[i]->spec->source;
		bool match = false;

		if (s->revision && strcmp(s->revision, branch) &&
		    !(!strncmp(s->revision, "refs/heads/", 11) &&
		      !strcmp(s->revision + 11, branch)))
			continue;
		controller_repo_key(s->url, &have);
		for (size_t j = 0; j < nurls && !match; j++) {
			controller_repo_key(urls[j], &want);
			match = !strcmp(buf_cstr(&want), buf_cstr(&have));
		}
		if (!match)
			continue;
		c->apps[i]->force_poll = true;
		if (!c->q || !queue_enqueue(c->q, c->apps[i]->spec->name))
			n++;
	}
	pthread_mutex_unlock(&c->lock);
	buf_release(&want);
	buf_release(&have);
	return n;
}

bool controller_ready(struct controller *c, struct buf *why)
{
	bool ok = true;

	pthread_mutex_lock(&c->lock);
	if (!c->started) {
		buf_adds(why, "not started");
		ok = false;
	} else if (!c->api_ok) {
		buf_adds(why, "the API server has not answered yet");
		ok = false;
	} else if (c->leading && c->wc && !kube_watchcache_all_synced(c->wc)) {
		buf_adds(why, "watch caches not synced yet");
		ok = false;
	}
	pthread_mutex_unlock(&c->lock);
	return ok;
}

/* --- events ------------------------------------------------------- */

/*
 * An Event about `regarding` (an object of the app, or its inventory):
 * kept among the app's recent ones (the status API and the browser view
 * show them) and, with events on, sent (kube_events_emit() rate-limits).
 */
static void emit(struct ctl_app *a, const json_t *regarding_obj,
		 const char *type, const char *reason, const char *action,
		 const char *note)
{
	const json_t *meta = json_object_get(regarding_obj, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	struct buf obj = BUF_INIT;
	char t[32];
	json_t *e;

	buf_addf(&obj, "%s %s%s%s",
		 json_string_value(json_object_get(regarding_obj, "kind")) ?: "",
		 ns ? ns : "", ns ? "/" : "",
		 json_string_value(json_object_get(meta, "name")) ?: "");
	clk_rfc3339_format(time(NULL), t);
	e = json_pack("{s:s, s:s, s:s, s:s, s:s}", "time", t, "type", type,
		      "reason", reason, "object", buf_cstr(&obj), "note",
		      note ? note : "");
	pthread_mutex_lock(&a->st_lock);
	if (e && json_array_insert_new(a->st.events, 0, e) == 0)
		while (json_array_size(a->st.events) > EVENTS_MAX)
			json_array_remove(a->st.events, EVENTS_MAX);
	pthread_mutex_unlock(&a->st_lock);
	buf_release(&obj);
	/* Kubernetes Events go to the cluster syncd runs against: about its
	 * own objects only (the HTTP API keeps the others'). */
	if (a->ctl->events && !a->cluster)
		kube_events_emit(a->ctl->events, regarding_obj, type, reason,
				 action, note);
}

/* A reference to a report object for an Event (new reference). */
static json_t *regarding(struct ctl_app *a, const struct diff_key *key)
{
	const struct diff_object_report *r = NULL;
	const struct diff_object *live = NULL;
	json_t *o;

	for (size_t i = 0; a->cur_report && i < a->cur_report->len && !r;
	     i++)
		if (diff_key_equal(&a->cur_report->objects[i].key, key))
			r = &a->cur_report->objects[i];
	if (a->cur_app)
		live = diff_objset_get(&a->cur_app->live, key);
	o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion",
		      r && r->api_version ? r->api_version : "v1", "kind",
		      key->kind, "metadata", "name", key->name);
	if (!o)
		return NULL;
	if (*key->ns)
		json_object_set_new(json_object_get(o, "metadata"),
				    "namespace", json_string(key->ns));
	if (live && diff_object_uid(live))
		json_object_set_new(json_object_get(o, "metadata"), "uid",
				    json_string(diff_object_uid(live)));
	return o;
}

/* The first owner of `f` that is not syncd itself, or NULL. */
static const struct diff_owner *other_owner(const struct diff_field *f)
{
	for (size_t i = 0; i < f->nowners; i++)
		if (f->owners[i].actor != DIFF_ACTOR_SELF)
			return &f->owners[i];
	return NULL;
}

void ctl_drift_note(const struct diff_object_report *r, bool foreign,
		    struct buf *out)
{
	unsigned shown = 0;

	for (size_t i = 0; i < r->nfields; i++) {
		const struct diff_field *f = &r->fields[i];
		const struct diff_owner *o = other_owner(f);

		if (f->foreign != foreign || f->fight || !o)
			continue;
		if (shown == 3) {
			buf_adds(out, ", ...");
			break;
		}
		buf_addf(out, "%s%s (%s)", shown ? ", " : "", f->path,
			 o->manager);
		shown++;
	}
}

void ctl_event_applied(struct ctl_app *a, const struct diff_key *key,
		       const json_t *stored)
{
	const struct diff_object_report *r = NULL;
	struct buf note = BUF_INIT, name = BUF_INIT;
	char short_rev[SOURCE_REVISION_MAX];

	if (!a->cur_report)
		return;
	for (size_t i = 0; i < a->cur_report->len && !r; i++)
		if (diff_key_equal(&a->cur_report->objects[i].key, key))
			r = &a->cur_report->objects[i];
	if (!r || (r->state != DIFF_DRIFTED && r->state != DIFF_FOREIGN))
		return; /* created or adopted: the log says it */
	ctl_drift_note(r, r->state == DIFF_FOREIGN, &note);
	/* Only syncd's own fields differed: a new revision, not drift. */
	if (!note.len)
		goto out;
	if (a->drift_notes) {
		diff_key_format(key, &name);
		json_object_set_new(a->drift_notes, buf_cstr(&name),
				    json_string(buf_cstr(&note)));
	}
	buf_reset(&name);
	source_revision_short(short_rev, sizeof(short_rev), a->commit, 12);
	buf_addf(&name, "drift corrected at revision %s: %s", short_rev,
		 buf_cstr(&note));
	emit(a, stored, "Normal", "DriftCorrected", "Sync", buf_cstr(&name));
out:
	buf_release(&name);
	buf_release(&note);
}

void ctl_event_failed(struct ctl_app *a, const struct diff_key *key,
		      const char *why)
{
	json_t *o;

	if (!(o = regarding(a, key)))
		return;
	emit(a, o, "Warning", "SyncFailed", "Sync", why);
	json_decref(o);
}

void ctl_event_pruned(struct ctl_app *a, const json_t *live)
{
	char note[128];

	snprintf(note, sizeof(note),
		 "pruned: no longer in the source of app %s", a->spec->name);
	emit(a, live, "Normal", "Pruned", "Prune", note);
}

void ctl_event_fight(struct ctl_app *a, const struct diff_key *key,
		     const char *path, const char *other)
{
	struct buf note = BUF_INIT;
	json_t *o;

	if (a->ctl->metrics) {
		const char *labels[] = {"app", a->spec->name, "manager", other,
					NULL};

		metrics_counter_add(a->ctl->metrics,
				    "syncd_field_fights_total", labels, 1);
	}
	if (!(o = regarding(a, key)))
		return;
	buf_addf(&note,
		 "%s is changed back by %s each time %s writes it: no longer "
		 "written until the fight ends",
		 path, other, a->ctl->cfg->field_manager);
	emit(a, o, "Warning", "FieldFight", "Sync", buf_cstr(&note));
	json_decref(o);
	buf_release(&note);
}

void ctl_event_foreign(struct ctl_app *a, const struct diff_report *report)
{
	struct buf key = BUF_INIT, note = BUF_INIT;
	json_t *notes = json_object();

	if (!notes)
		return;
	for (size_t i = 0; i < report->len; i++) {
		const struct diff_object_report *r = &report->objects[i];
		const char *was;
		json_t *o;

		buf_reset(&note);
		ctl_drift_note(r, true, &note);
		if (!note.len)
			continue;
		buf_reset(&key);
		diff_key_format(&r->key, &key);
		json_object_set_new(notes, buf_cstr(&key),
				    json_string(buf_cstr(&note)));
		/* Only when the foreign fields of the object changed. */
		was = json_string_value(
			json_object_get(a->st.foreign_notes, buf_cstr(&key)));
		if (was && !strcmp(was, buf_cstr(&note)))
			continue;
		if (!(o = regarding(a, &r->key)))
			continue;
		buf_reset(&key);
		buf_addf(&key, "fields owned by other controllers left alone: %s",
			 buf_cstr(&note));
		emit(a, o, "Normal", "ForeignFields", "Sync", buf_cstr(&key));
		json_decref(o);
	}
	json_decref(a->st.foreign_notes);
	a->st.foreign_notes = notes;
	buf_release(&key);
	buf_release(&note);
}

void controller_collect(struct controller *c)
{
	time_t now = time(NULL);

	if (!c || !c->metrics)
		return;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->napps; i++) {
		struct ctl_app *a = c->apps[i];
		const char *labels[] = {"app", a->spec->name, NULL};
		double v;

		pthread_mutex_lock(&a->st_lock);
		v = a->st.drift_since && now > a->st.drift_since
			    ? (double)(now - a->st.drift_since)
			    : 0;
		pthread_mutex_unlock(&a->st_lock);
		metrics_gauge_set(c->metrics, "syncd_app_drift_seconds",
				  labels, v);
	}
	pthread_mutex_unlock(&c->lock);
}
