/*
 * Apps declared by App objects (apps.syncd.io/v1alpha1, docs/app-crd.md).
 *
 * One watch thread per namespace of appObjects.namespaces (one for every
 * namespace when none is named) keeps the App objects in `items`; every
 * change wakes the applier thread, which waits a moment for more, parses
 * every App with config_app_from_object() (the walk of syncd.yaml's apps)
 * and switches the running set to the file's apps plus the valid Apps'
 * (ctl_switch(): apps configured exactly as before keep their state). An
 * App that cannot run (its spec is invalid, or its name is taken) gets a
 * Stalled status instead.
 *
 * Status: after each pass of an App's app, ctl_objects_status() builds
 * the App's status from what the pass recorded and writes it (server-side
 * apply on the status subresource) only when it differs from the status
 * the cluster has: a resync that changed nothing writes nothing, and
 * neither does a restart (first-seen times, drift start and history are
 * read back from the status, status.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include "controller/controller.h"
#include "controller/internal.h"
#include "kube/kube.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"

#include "util/banned.h" /* last */

#define APP_GROUP "syncd.io"
#define APP_VERSION "v1alpha1"
#define APP_KIND "App"
/* Changes within this are one switch of the running set. */
#define SETTLE_MS 300u
/* How often a missing CRD or a failing watch is tried again. */
#define RETRY_MS 15000u
/* The status lists the first so many differing fields. */
#define STATUS_FIELDS_MAX 50u
/*
 * The longest message of a condition or of the health (the CRD allows
 * 32768 bytes), and of a field's path (4096).
 */
#define STATUS_MESSAGE_MAX 8192u
#define STATUS_PATH_MAX 4096u

struct ctl_objects {
	struct controller *c;
	pthread_mutex_t lock; /* items, dirty, stop, res */
	pthread_cond_t cond;
	volatile bool stop;
	bool dirty;
	json_t *items; /* "NS/NAME" -> App object */
	const struct kube_resource *res; /* owned by the discovery */
	pthread_t *watchers;
	size_t nwatchers;
	pthread_t applier;
	bool applier_started;
	/* The running Apps' specs (guarded by c->switch_lock). */
	struct app_spec **specs;
	size_t nspecs;
};

struct watcher {
	struct ctl_objects *o;
	const char *ns; /* NULL: every namespace */
};

/* Wait up to `ms` or until stopped; true when stopped. */
static bool sleep_or_stop(struct ctl_objects *o, unsigned ms)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&o->lock);
	while (!o->stop &&
	       pthread_cond_timedwait(&o->cond, &o->lock, &ts) == 0)
		;
	stop = o->stop;
	pthread_mutex_unlock(&o->lock);
	return stop;
}

static void item_key(const json_t *obj, struct buf *out)
{
	const json_t *meta = json_object_get(obj, "metadata");

	buf_reset(out);
	buf_addf(out, "%s/%s",
		 json_string_value(json_object_get(meta, "namespace")) ?: "",
		 json_string_value(json_object_get(meta, "name")) ?: "");
}

/* Watch events into `items` (lock held by nobody; takes it). */
static int on_event(const struct kube_watch_event *ev, void *ctx)
{
	struct watcher *w = ctx;
	struct ctl_objects *o = w->o;
	struct buf key = BUF_INIT, prefix = BUF_INIT;
	const char *k;
	json_t *v, *item;
	void *tmp;
	size_t i;

	if (!strcmp(ev->type, "BOOKMARK"))
		return 0;
	pthread_mutex_lock(&o->lock);
	if (!strcmp(ev->type, "RELIST")) {
		if (w->ns)
			buf_addf(&prefix, "%s/", w->ns);
		json_object_foreach_safe(o->items, tmp, k, v)
		{
			if (!strncmp(k, buf_cstr(&prefix), prefix.len))
				json_object_del(o->items, k);
		}
		json_array_foreach(ev->object, i, item)
		{
			item_key(item, &key);
			json_object_set(o->items, buf_cstr(&key), item);
		}
	} else if (ev->object) {
		item_key(ev->object, &key);
		if (!strcmp(ev->type, "DELETED"))
			json_object_del(o->items, buf_cstr(&key));
		else
			json_object_set(o->items, buf_cstr(&key), ev->object);
	}
	o->dirty = true;
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
	buf_release(&key);
	buf_release(&prefix);
	return 0;
}

/* The App resource, once the CRD is served (NULL until then). */
static const struct kube_resource *app_resource(struct ctl_objects *o)
{
	const struct kube_resource *res;
	struct err err = ERR_INIT;

	pthread_mutex_lock(&o->lock);
	res = o->res;
	pthread_mutex_unlock(&o->lock);
	if (res)
		return res;
	if (kube_discovery_find(o->c->conn.disc, APP_GROUP, APP_VERSION,
				APP_KIND, &res, &err) < 0)
		res = NULL;
	err_release(&err);
	pthread_mutex_lock(&o->lock);
	if (res)
		o->res = res;
	pthread_mutex_unlock(&o->lock);
	return res;
}

static void *watch_main(void *arg)
{
	struct watcher *w = arg;
	struct ctl_objects *o = w->o;
	bool said = false;

	while (!o->stop) {
		struct kube_watch_options wo = {0};
		const struct kube_resource *res = app_resource(o);
		struct err err = ERR_INIT;
		int error;

		if (!res) {
			if (!said)
				log_warn("App objects: apps.syncd.io is not "
					 "served (the CRD of "
					 "examples/deploy/app-crd.yaml is not "
					 "installed); looking again every 15 s",
					 NULL);
			said = true;
			kube_discovery_invalidate(o->c->conn.disc);
			if (sleep_or_stop(o, RETRY_MS))
				break;
			continue;
		}
		if (said)
			log_info("App objects: apps.syncd.io is served", NULL);
		said = false;
		wo.bookmarks = true;
		error = kube_watch(o->c->conn.client, res, w->ns, &wo, on_event,
				   w, &o->stop, &err);
		if (error < 0 && !o->stop)
			log_warn("App objects: watch failed", "namespace",
				 w->ns ? w->ns : "(all)", "error",
				 err_first(&err), NULL);
		err_release(&err);
		if (!o->stop && sleep_or_stop(o, RETRY_MS))
			break;
	}
	free(w);
	return NULL;
}

/* --- status --------------------------------------------------------- */

/*
 * One condition, kept with its lastTransitionTime when the cluster's copy
 * has the same status.
 */
static void add_condition(json_t *list, const json_t *live, const char *type,
			  const char *status, const char *reason,
			  const char *message, long long generation)
{
	const json_t *c, *was = NULL;
	char now[32];
	size_t i;
	json_t *cond;

	json_array_foreach(json_object_get(live, "conditions"), i, c)
	{
		const char *t = json_string_value(json_object_get(c, "type"));

		if (t && !strcmp(t, type))
			was = c;
	}
	if (!message)
		message = "";
	clk_rfc3339_format(time(NULL), now);
	cond = json_pack("{s:s, s:s, s:s, s:s#, s:I}", "type", type, "status",
			 status, "reason", reason, "message", message,
			 utf8_cut(message, strlen(message), STATUS_MESSAGE_MAX),
			 "observedGeneration", (json_int_t)generation);
	if (!cond)
		return;
	if (was && json_is_string(json_object_get(was, "lastTransitionTime")) &&
	    !strcmp(json_string_value(json_object_get(was, "status")) ?: "",
		    status))
		json_object_set(cond, "lastTransitionTime",
				json_object_get(was, "lastTransitionTime"));
	else
		json_object_set_new(cond, "lastTransitionTime",
				    json_string(now));
	json_array_append_new(list, cond);
}

/* The manager that changed a field: the first that is not syncd. */
static const char *field_manager(const json_t *f)
{
	const json_t *m, *first = NULL;
	size_t i;

	json_array_foreach(json_object_get(f, "managers"), i, m)
	{
		const char *kind = json_string_value(json_object_get(m, "kind"));

		if (!first)
			first = m;
		if (kind && strcmp(kind, "self"))
			return json_string_value(json_object_get(m, "manager"));
	}
	return first ? json_string_value(json_object_get(first, "manager"))
		     : NULL;
}

/* driftedFields and fights of the last report (status lock held). */
static void add_fields(json_t *status, const json_t *report)
{
	json_t *fields = json_array(), *fights = json_array();
	const json_t *o, *f;
	struct buf name = BUF_INIT;
	size_t i, j;

	json_array_foreach(json_object_get(report, "objects"), i, o)
	{
		ctl_report_object_name(o, &name);
		json_array_foreach(json_object_get(o, "fields"), j, f)
		{
			const char *owner =
				json_string_value(json_object_get(f, "owner"));
			const json_t *fight = json_object_get(f, "fight");
			const char *mgr = field_manager(f);
			json_t *e;

			if (json_string_length(json_object_get(f, "path")) >
			    STATUS_PATH_MAX)
				continue; /* beyond what the CRD stores */
			if (json_array_size(fields) < STATUS_FIELDS_MAX) {
				e = json_pack("{s:s, s:O, s:s, s:O}", "object",
					      buf_cstr(&name), "path",
					      json_object_get(f, "path"),
					      "owner", owner ? owner : "self",
					      "firstSeen",
					      json_object_get(f, "firstSeen"));
				if (e && mgr)
					json_object_set_new(e, "manager",
							    json_string(mgr));
				if (e)
					json_array_append_new(fields, e);
			}
			if (fight && json_array_size(fights) <
					     STATUS_FIELDS_MAX) {
				e = json_pack("{s:s, s:O, s:O, s:O, s:O}",
					      "object", buf_cstr(&name), "path",
					      json_object_get(f, "path"),
					      "managers",
					      json_object_get(fight, "managers"),
					      "changes",
					      json_object_get(fight, "changes"),
					      "since",
					      json_object_get(fight, "since"));
				if (e)
					json_array_append_new(fights, e);
			}
		}
	}
	buf_release(&name);
	if (json_array_size(fields))
		json_object_set(status, "driftedFields", fields);
	if (json_array_size(fights))
		json_object_set(status, "fights", fights);
	json_decref(fields);
	json_decref(fights);
}

/*
 * The App's status from what the last pass recorded (status lock held),
 * `live` the status the cluster has (for the conditions' times).
 */
static json_t *status_of(struct ctl_app *a, const json_t *live,
			 const struct diff_summary *healing)
{
	const struct ctl_status *st = &a->st;
	const struct diff_summary *s = healing ? healing : &st->sum;
	long long gen = a->spec->object_generation;
	const char *health = st->health_known ? health_state_name(st->health)
					      : "Unknown";
	const char *hmsg =
		json_string_value(json_object_get(st->health_doc, "message"));
	const char *synced, *sreason, *hstatus, *rstatus, *rreason;
	char short_rev[SOURCE_REVISION_MAX];
	const char *stall_reason = st->fail_reason ? st->fail_reason
						   : "SyncFailed";
	struct buf smsg = BUF_INIT, rmsg = BUF_INIT;
	json_t *status, *conds = json_array();
	char t[32];

	if (healing) {
		synced = "False";
		sreason = "Drifted";
		buf_addf(&smsg,
			 "%zu drifted, %zu missing, %zu orphan of %zu objects: "
			 "healing",
			 s->drifted, s->missing, s->orphan, s->objects);
	} else if (!strcmp(st->state, "InSync")) {
		synced = "True";
		sreason = "InSync";
		buf_addf(&smsg, "%zu objects in sync", s->objects);
	} else if (!strcmp(st->state, "Failed") ||
		   !strcmp(st->state, "Unknown")) {
		synced = "Unknown";
		sreason = st->state;
		buf_adds(&smsg, st->error ? st->error : "no pass yet");
	} else {
		synced = "False";
		sreason = st->state;
		buf_addf(&smsg,
			 "%zu drifted, %zu missing, %zu orphan, %zu fighting "
			 "of %zu objects",
			 s->drifted, s->missing, s->orphan, s->fighting,
			 s->objects);
	}
	hstatus = !st->health_known ? "Unknown"
		  : st->health == HEALTH_HEALTHY ? "True"
						 : "False";
	if (st->error && !healing) {
		rstatus = "False";
		rreason = stall_reason;
		buf_adds(&rmsg, st->error);
	} else if (!strcmp(st->state, "Unknown") && st->health_known &&
		   !healing) {
		/* No pass ran: what it waits for says more. */
		rstatus = "False";
		rreason = health;
		buf_adds(&rmsg, hmsg ? hmsg : health);
	} else if (strcmp(synced, "True")) {
		rstatus = "False";
		rreason = sreason;
		buf_adds(&rmsg, buf_cstr(&smsg));
	} else if (strcmp(hstatus, "True")) {
		rstatus = "False";
		rreason = health;
		buf_adds(&rmsg, hmsg ? hmsg : health);
	} else {
		rstatus = "True";
		rreason = "Succeeded";
		source_revision_short(short_rev, sizeof(short_rev),
				      st->revision, 12);
		buf_addf(&rmsg, "in sync and healthy at revision %s",
			 short_rev);
	}
	add_condition(conds, live, "Ready", rstatus, rreason, buf_cstr(&rmsg),
		      gen);
	if (healing)
		add_condition(conds, live, "Reconciling", "True", "Healing",
			      buf_cstr(&smsg), gen);
	else
		add_condition(
			conds, live, "Reconciling",
			st->health_known && st->health == HEALTH_PROGRESSING
				? "True"
				: "False",
			st->health_known && st->health == HEALTH_PROGRESSING
				? "Progressing"
				: "Succeeded",
			st->health_known && st->health == HEALTH_PROGRESSING
				? hmsg
				: "",
			gen);
	add_condition(conds, live, "Stalled",
		      st->error && !healing ? "True" : "False",
		      st->error && !healing ? stall_reason : "Succeeded",
		      st->error && !healing ? st->error : "", gen);
	add_condition(conds, live, "Synced", synced, sreason, buf_cstr(&smsg),
		      gen);
	add_condition(conds, live, "Healthy", hstatus, health, hmsg ? hmsg : "",
		      gen);
	status = json_pack(
		"{s:I, s:o, s:{s:s, s:s#}, s:{s:I, s:I, s:I, s:I, s:I, s:I, "
		"s:I, s:I, s:I, s:I, s:I}, s:O, s:O}",
		"observedGeneration", (json_int_t)gen, "conditions", conds,
		"health", "status", health, "message", hmsg ? hmsg : "",
		hmsg ? utf8_cut(hmsg, strlen(hmsg), STATUS_MESSAGE_MAX) : 0,
		"summary", "objects", (json_int_t)s->objects, "inSync",
		(json_int_t)s->in_sync, "drifted", (json_int_t)s->drifted,
		"missing", (json_int_t)s->missing, "orphan",
		(json_int_t)s->orphan, "foreign", (json_int_t)s->foreign,
		"fighting", (json_int_t)s->fighting, "fields",
		(json_int_t)s->fields, "foreignFields",
		(json_int_t)s->foreign_fields, "fightingFields",
		(json_int_t)s->fighting_fields, "ignoredFields",
		(json_int_t)s->ignored_fields, "healthCounts",
		st->health_counts, "history", st->history);
	if (status && st->applied[0])
		json_object_set_new(status, "lastAppliedRevision",
				    json_string(st->applied));
	if (status && st->attempted[0])
		json_object_set_new(status, "lastAttemptedRevision",
				    json_string(st->attempted));
	if (status && st->drift_since) {
		clk_rfc3339_format(st->drift_since, t);
		json_object_set_new(status, "driftSince", json_string(t));
	}
	if (status && st->report_z) {
		json_t *report = ctl_status_report(st);

		add_fields(status, report);
		json_decref(report);
	}
	buf_release(&smsg);
	buf_release(&rmsg);
	return status;
}

json_t *ctl_status_doc(struct ctl_app *a)
{
	return status_of(a, NULL, NULL);
}

/* Server-side apply of `status` on the App's status subresource. */
static int write_status(struct ctl_objects *o, const char *ns,
			const char *name, json_t *status, struct err *err)
{
	struct controller *c = o->c;
	const struct kube_resource *res = app_resource(o);
	struct buf path = BUF_INIT, key = BUF_INIT;
	json_t *body, *item;
	char *text = NULL;
	int error;

	if (!res)
		return err_set(err, ERR_NOTFOUND, "apps.syncd.io not served");
	body = json_pack("{s:s, s:s, s:{s:s, s:s}, s:O}", "apiVersion",
			 APP_GROUP "/" APP_VERSION, "kind", APP_KIND,
			 "metadata", "name", name, "namespace", ns, "status",
			 status);
	if (!body || !(text = json_dumps(body, JSON_COMPACT))) {
		json_decref(body);
		return err_set(err, ERR_NOMEM, "out of memory");
	}
	kube_path(&path, res, ns, name, "status");
	buf_addf(&path, "?fieldManager=%s&force=true", c->cfg->field_manager);
	error = kube_request(c->conn.client, "PATCH", buf_cstr(&path),
			     "application/apply-patch+yaml", text,
			     strlen(text), NULL, err);
	if (!error) {
		/* Until the watch brings it: what the cluster now has. */
		buf_addf(&key, "%s/%s", ns, name);
		pthread_mutex_lock(&o->lock);
		item = json_object_get(o->items, buf_cstr(&key));
		if (item && (item = json_copy(item))) {
			json_object_set(item, "status", status);
			json_object_set_new(o->items, buf_cstr(&key), item);
		}
		pthread_mutex_unlock(&o->lock);
	}
	free(text);
	json_decref(body);
	buf_release(&path);
	buf_release(&key);
	return error;
}

json_t *ctl_objects_live_status(struct controller *c, const char *ns,
				const char *name)
{
	struct ctl_objects *o = c->objects;
	struct buf key = BUF_INIT;
	json_t *st = NULL;

	if (!o)
		return NULL;
	buf_addf(&key, "%s/%s", ns, name);
	pthread_mutex_lock(&o->lock);
	st = json_deep_copy(json_object_get(
		json_object_get(o->items, buf_cstr(&key)), "status"));
	pthread_mutex_unlock(&o->lock);
	buf_release(&key);
	return st;
}

/* Write `status` unless the cluster has it already. */
static void put_status(struct ctl_objects *o, const char *ns,
		       const char *name, json_t *status, const json_t *live)
{
	struct err err = ERR_INIT;

	if (!status || (live && json_equal(status, (json_t *)live)) ||
	    !o->c->leading)
		return;
	if (write_status(o, ns, name, status, &err) < 0)
		log_warn("App status not written", "app", name, "namespace",
			 ns, "error", err_first(&err), NULL);
	err_release(&err);
}

void ctl_objects_status(struct controller *c, struct ctl_app *a,
			const struct diff_summary *healing)
{
	const char *ns = a->spec->object_ns, *name = a->spec->name;
	json_t *live, *status;

	if (!c->objects || !ns)
		return;
	live = ctl_objects_live_status(c, ns, name);
	pthread_mutex_lock(&a->st_lock);
	status = status_of(a, live, healing);
	pthread_mutex_unlock(&a->st_lock);
	put_status(c->objects, ns, name, status, live);
	json_decref(status);
	json_decref(live);
}

/* An App that cannot run: Stalled with `reason` and `message`. */
static void stalled(struct ctl_objects *o, const json_t *obj,
		    const char *reason, const char *message)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));
	long long gen = json_integer_value(json_object_get(meta, "generation"));
	const json_t *live = json_object_get(obj, "status");
	json_t *conds = json_array(), *status;

	if (!ns || !name || !conds) {
		json_decref(conds);
		return;
	}
	add_condition(conds, live, "Ready", "False", reason, message, gen);
	add_condition(conds, live, "Reconciling", "False", reason, "", gen);
	add_condition(conds, live, "Stalled", "True", reason, message, gen);
	add_condition(conds, live, "Synced", "Unknown", reason, "", gen);
	add_condition(conds, live, "Healthy", "Unknown", reason, "", gen);
	status = json_pack("{s:I, s:o}", "observedGeneration",
			   (json_int_t)gen, "conditions", conds);
	put_status(o, ns, name, status, live);
	json_decref(status);
}

/* --- the running set ------------------------------------------------ */

/* Apps by creation (the older keeps a contested name), then by key. */
static int by_age(const void *x, const void *y)
{
	const json_t *a = *(const json_t *const *)x;
	const json_t *b = *(const json_t *const *)y;
	const json_t *ma = json_object_get(a, "metadata");
	const json_t *mb = json_object_get(b, "metadata");
	const char *ta =
		json_string_value(json_object_get(ma, "creationTimestamp"));
	const char *tb =
		json_string_value(json_object_get(mb, "creationTimestamp"));
	int d = strcmp(ta ? ta : "", tb ? tb : "");
	struct buf ka = BUF_INIT, kb = BUF_INIT;

	if (d)
		return d;
	item_key(a, &ka);
	item_key(b, &kb);
	d = strcmp(buf_cstr(&ka), buf_cstr(&kb));
	buf_release(&ka);
	buf_release(&kb);
	return d;
}

static void free_specs(struct app_spec **specs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		app_spec_release(specs[i]);
		free(specs[i]);
	}
	free(specs);
}

static bool same_specs(struct app_spec **a, size_t na, struct app_spec **b,
		       size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i]->name, b[i]->name) ||
		    !config_same_app(a[i], b[i]))
			return false;
	return true;
}

/*
 * Parse every App of `snapshot` and make the valid ones run (switch_lock
 * held).
 */
static void rebuild(struct ctl_objects *o, json_t *snapshot)
{
	struct controller *c = o->c;
	const struct config *cfg = c->cfg;
	size_t n = json_object_size(snapshot), nspecs = 0, i = 0, k;
	const json_t **objs = calloc(n + 1, sizeof(*objs));
	struct app_spec **specs = calloc(n + 1, sizeof(*specs));
	const struct app_spec **all = NULL;
	struct controller_reload_result res;
	json_t *taken = json_object(), *v;
	struct buf why = BUF_INIT;
	struct err err = ERR_INIT;
	const char *key;

	if (!objs || !specs || !taken)
		goto out;
	json_object_foreach(snapshot, key, v)
		objs[i++] = v;
	qsort(objs, n, sizeof(*objs), by_age);
	for (k = 0; k < cfg->napps; k++)
		json_object_set_new(taken, cfg->apps[k].name,
				    json_string("syncd's configuration file"));
	for (i = 0; i < n; i++) {
		struct app_spec *spec = calloc(1, sizeof(*spec));
		const char *was;

		err_reset(&err);
		if (!spec)
			break;
		if (config_app_from_object(spec, objs[i], &err) < 0) {
			/* Every problem, one line each, as "a; b". */
			buf_reset(&why);
			buf_adds(&why, err_msg(&err));
			while (why.len && why.ptr[why.len - 1] == '\n')
				buf_truncate(&why, why.len - 1);
			for (size_t e = 0; e < why.len; e++)
				if (why.ptr[e] == '\n')
					why.ptr[e] = ';';
			stalled(o, objs[i], "InvalidSpec", buf_cstr(&why));
			free(spec);
			continue;
		}
		if ((was = json_string_value(
			     json_object_get(taken, spec->name)))) {
			buf_reset(&why);
			buf_addf(&why,
				 "the app name %s is taken by %s: app names "
				 "are unique across namespaces",
				 spec->name, was);
			stalled(o, objs[i], "NameClash", buf_cstr(&why));
			app_spec_release(spec);
			free(spec);
			continue;
		}
		buf_reset(&why);
		buf_addf(&why, "App %s/%s", spec->object_ns, spec->name);
		json_object_set_new(taken, spec->name,
				    json_string(buf_cstr(&why)));
		specs[nspecs++] = spec;
	}
	if (same_specs(specs, nspecs, o->specs, o->nspecs))
		goto out;
	if (!(all = calloc(cfg->napps + nspecs + 1, sizeof(*all))))
		goto out;
	for (k = 0; k < cfg->napps; k++)
		all[k] = &cfg->apps[k];
	for (i = 0; i < nspecs; i++)
		all[k + i] = specs[i];
	err_reset(&err);
	if (ctl_switch(c, cfg, all, k + nspecs, &res, &err) < 0) {
		log_error("App objects: the apps could not switch", "error",
			  err_first(&err), NULL);
		goto out;
	}
	{
		char counts[96];

		snprintf(counts, sizeof(counts),
			 "added=%u removed=%u changed=%u unchanged=%u",
			 res.added, res.removed, res.changed, res.unchanged);
		log_info("App objects: apps switched", "counts", counts, NULL);
	}
	free_specs(o->specs, o->nspecs);
	o->specs = specs;
	o->nspecs = nspecs;
	specs = NULL;
out:
	if (specs)
		free_specs(specs, nspecs);
	free(all);
	free(objs);
	json_decref(taken);
	buf_release(&why);
	err_release(&err);
}

static void *applier_main(void *arg)
{
	struct ctl_objects *o = arg;

	for (;;) {
		json_t *snapshot;

		pthread_mutex_lock(&o->lock);
		while (!o->dirty && !o->stop)
			pthread_cond_wait(&o->cond, &o->lock);
		pthread_mutex_unlock(&o->lock);
		if (o->stop || sleep_or_stop(o, SETTLE_MS))
			break;
		pthread_mutex_lock(&o->lock);
		o->dirty = false;
		snapshot = json_copy(o->items);
		pthread_mutex_unlock(&o->lock);
		if (!snapshot)
			continue;
		pthread_mutex_lock(&o->c->switch_lock);
		rebuild(o, snapshot);
		pthread_mutex_unlock(&o->c->switch_lock);
		json_decref(snapshot);
	}
	return NULL;
}

int ctl_objects_start(struct controller *c, struct err *err)
{
	const struct strvec *nss = &c->cfg->objects.namespaces;
	size_t nw = nss->len ? nss->len : 1;
	struct ctl_objects *o;

	if (!c->cfg->objects.enabled || c->objects)
		return 0;
	if (!(o = calloc(1, sizeof(*o))) || !(o->items = json_object()) ||
	    !(o->watchers = calloc(nw, sizeof(*o->watchers)))) {
		if (o)
			json_decref(o->items);
		free(o);
		return err_set(err, ERR_NOMEM, "out of memory");
	}
	o->c = c;
	pthread_mutex_init(&o->lock, NULL);
	pthread_cond_init(&o->cond, NULL);
	c->objects = o;
	if (pthread_create(&o->applier, NULL, applier_main, o) != 0)
		return err_set(err, ERR_GENERIC,
			       "App objects: cannot start a thread");
	o->applier_started = true;
	for (size_t i = 0; i < nw; i++) {
		struct watcher *w = calloc(1, sizeof(*w));

		if (!w)
			return err_set(err, ERR_NOMEM, "out of memory");
		w->o = o;
		w->ns = nss->len ? nss->v[i] : NULL;
		if (pthread_create(&o->watchers[i], NULL, watch_main, w) != 0) {
			free(w);
			return err_set(err, ERR_GENERIC,
				       "App objects: cannot start a thread");
		}
		o->nwatchers++;
	}
	log_info("App objects: watching", "namespaces",
		 nss->len ? "(appObjects.namespaces)" : "(all)", NULL);
	return 0;
}

void ctl_objects_stop(struct controller *c)
{
	struct ctl_objects *o = c->objects;

	if (!o)
		return;
	pthread_mutex_lock(&o->lock);
	o->stop = true;
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
	for (size_t i = 0; i < o->nwatchers; i++)
		pthread_join(o->watchers[i], NULL);
	o->nwatchers = 0;
	if (o->applier_started)
		pthread_join(o->applier, NULL);
	o->applier_started = false;
}

void ctl_objects_free(struct controller *c)
{
	struct ctl_objects *o = c->objects;

	if (!o)
		return;
	ctl_objects_stop(c);
	free_specs(o->specs, o->nspecs);
	free(o->watchers);
	json_decref(o->items);
	pthread_cond_destroy(&o->cond);
	pthread_mutex_destroy(&o->lock);
	free(o);
	c->objects = NULL;
}

size_t ctl_objects_specs(struct controller *c,
			 const struct app_spec *const **specs)
{
	struct ctl_objects *o = c->objects;

	*specs = o ? (const struct app_spec *const *)o->specs : NULL;
	return o ? o->nspecs : 0;
}

/* --- credentials ------------------------------------------------------ */

void ctl_objects_credentials_release(struct ctl_app *a)
{
	for (size_t i = 0; i < CTL_CRED_MAX; i++) {
		if (a->cred_fd[i] > 0)
			close(a->cred_fd[i]);
		a->cred_fd[i] = -1;
		a->cred_path[i][0] = '\0';
	}
	if (a->cred_user)
		explicit_bzero(a->cred_user, strlen(a->cred_user));
	free(a->cred_user);
	a->cred_user = NULL;
}

int ctl_secret_get(struct controller *c, const char *ns, const char *name,
		   const char *what, json_t **out, struct err *err)
{
	const struct kube_resource *res = NULL;
	int error;

	*out = NULL;
	if ((error = kube_discovery_find(c->conn.disc, "", "v1", "Secret",
					 &res, err)) < 0)
		return error;
	if ((error = kube_get(c->conn.client, res, ns, name, out, err)) < 0) {
		err_reset(err);
		return err_set(err, error, "%s: Secret %s/%s: %s", what, ns,
			       name,
			       error == ERR_NOTFOUND ? "not found"
						     : "cannot be read");
	}
	return 0;
}

int ctl_memfd(const char *name, const struct buf *value, int *fd,
	      char path[CTL_MEMFD_PATH], struct err *err)
{
	*fd = memfd_create(name, MFD_CLOEXEC);
	if (*fd < 0)
		return err_set(err, ERR_IO, "memfd_create: %s",
			       err_errno_str(errno));
	if (write(*fd, value->ptr, value->len) != (ssize_t)value->len) {
		close(*fd);
		*fd = -1;
		return err_set(err, ERR_IO, "memfd: %s", err_errno_str(errno));
	}
	snprintf(path, CTL_MEMFD_PATH, "/proc/self/fd/%d", *fd);
	return 0;
}

/* One decoded value in a memfd; its /proc/self/fd path into a. */
static int cred_memfd(struct ctl_app *a, size_t i, const char *key,
		      const struct buf *value, const char **field,
		      struct err *err)
{
	int error = ctl_memfd(key, value, &a->cred_fd[i], a->cred_path[i],
			      err);

	if (error == 0)
		*field = a->cred_path[i];
	return error;
}

int ctl_objects_credentials(struct controller *c, struct ctl_app *a,
			    struct source_options *o, struct err *err)
{
	static const char *const keys[CTL_CRED_MAX] = {
		"password", "bearerToken", "identity", "known_hosts", "ca.crt",
	};
	const char **fields[CTL_CRED_MAX] = {
		&o->auth.password_file, &o->auth.token_file,
		&o->auth.ssh_key_file,	&o->auth.known_hosts_file,
		&o->auth.ca_file,
	};
	const struct app_spec *sp = a->spec;
	struct buf value = BUF_INIT;
	json_t *secret = NULL, *data;
	const char *v;
	int error;

	ctl_objects_credentials_release(a);
	if (!sp->secret_ref || !sp->object_ns)
		return 0;
	if ((error = ctl_secret_get(c, sp->object_ns, sp->secret_ref,
				    "source.secretRef", &secret, err)) < 0)
		return error;
	data = json_object_get(secret, "data");
	for (size_t i = 0; i < CTL_CRED_MAX + 1 && !error; i++) {
		const char *key = i < CTL_CRED_MAX ? keys[i] : "username";

		if (!(v = json_string_value(json_object_get(data, key))))
			continue;
		/* SSH keys mean nothing to a chart repository or registry. */
		if (o->type != SOURCE_GIT && (fields[i] == &o->auth.ssh_key_file ||
					      fields[i] ==
						      &o->auth.known_hosts_file))
			continue;
		buf_reset(&value);
		if (base64_decode(&value, v, strlen(v), 0) < 0) {
			error = err_set(err, ERR_INVALID,
					"source.secretRef: Secret %s/%s: %s "
					"is not base64",
					sp->object_ns, sp->secret_ref, key);
			break;
		}
		if (i < CTL_CRED_MAX) {
			error = cred_memfd(a, i, key, &value, fields[i], err);
			continue;
		}
		/* The user name, as the file option would give it. */
		while (value.len && (value.ptr[value.len - 1] == '\n' ||
				     value.ptr[value.len - 1] == '\r'))
			buf_truncate(&value, value.len - 1);
		if (!(a->cred_user = strdup(buf_cstr(&value))))
			error = err_set(err, ERR_NOMEM, "out of memory");
		o->auth.username = a->cred_user;
	}
	if (value.ptr)
		explicit_bzero(value.ptr, value.len);
	buf_release(&value);
	json_decref(secret);
	if (error < 0)
		ctl_objects_credentials_release(a);
	return error;
}
