/*
 * One reconcile pass: server-side apply in dependency order, waiting for
 * CRDs, then prune of labelled orphans; the result as entries.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/internal.h"
#include "util/base64.h"
#include "util/clock.h"
#include "util/sha256.h"
#include "util/strvec.h"

#include "util/banned.h" /* last */

void app_sync_result_release(struct app_sync_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->nentries; i++) {
		free(res->entries[i].object);
		free(res->entries[i].result);
	}
	free(res->entries);
	res->entries = NULL;
	res->nentries = res->aentries = 0;
	err_release(&res->failures);
	free(res->waiting);
	res->waiting = NULL;
}

/* The order of a reconcile pass. */
enum phase {
	PHASE_PARENT_NS, /* the Namespace the parent lives in */
	PHASE_PARENT,
	PHASE_CRD,
	PHASE_NAMESPACE,
	PHASE_CLUSTER,
	PHASE_NAMESPACED,
	PHASE_COUNT,
};

struct sync {
	struct app *app;
	const struct diff_report *report;
	const struct diff_objset *desired;
	const struct app_sync_options *opts;
	struct app_sync_result *res;
	struct buf name;
	bool *done; /* per report object: applied (or failed) already */
	bool *gone; /* per live object: pruned */
	/*
	 * Per report object: the health of what its apply stored, taken
	 * then (stored_known), for the wave's health; the object itself is
	 * not kept (10,000 applied objects would be held to the end).
	 */
	struct health *stored_health;
	bool *stored_known;
	bool *prune_seen;	 /* per report object: prune looked at it */
	bool crd_applied;
	/* Some object other than compare: ignore ones is written. */
	bool writes;
	/* A write was refused as no longer allowed (ERR_CANCELED): the
	 * pass stops there; the first such message. */
	bool canceled;
	struct err cancel;
};

/* Keep the health of obj, report object i's stored object, for its wave. */
static void keep_health(struct sync *s, size_t i, const json_t *obj)
{
	health_release(&s->stored_health[i]);
	health_of(&s->stored_health[i], obj, s->opts->health_rules);
	s->stored_known[i] = true;
}

static enum phase phase_of(struct sync *s, const struct diff_key *k)
{
	const struct app_type *t;

	if (app_is_parent(s->app, k))
		return PHASE_PARENT;
	if (app_is_kind(k, "", "Namespace"))
		return strcmp(k->name, s->app->namespace) ? PHASE_NAMESPACE
							  : PHASE_PARENT_NS;
	if (app_is_crd(k))
		return PHASE_CRD;
	t = app_find_type(s->app, k->group, k->kind);
	return t && !app_type_namespaced(t, s->desired) ? PHASE_CLUSTER
							: PHASE_NAMESPACED;
}

/*
 * One entry of the result: `object` (NULL: the app) and what happened.
 * Out of memory loses the entry, never the counts.
 */
static void add_entry(struct app_sync_result *res, const char *object,
		      const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add_entry(struct app_sync_result *res, const char *object,
		      const char *fmt, ...)
{
	struct app_sync_entry *e;
	va_list ap;
	char *result;
	int n;

	if (res->nentries == res->aentries) {
		size_t alloc = res->aentries ? 2 * res->aentries : 16;

		e = realloc(res->entries, alloc * sizeof(*e));
		if (!e)
			return;
		res->entries = e;
		res->aentries = alloc;
	}
	va_start(ap, fmt);
	n = vasprintf(&result, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	e = &res->entries[res->nentries];
	e->result = result;
	e->object = NULL;
	if (object && !(e->object = strdup(object))) {
		free(result);
		return;
	}
	res->nentries++;
}

static void log_line(struct sync *s, const struct diff_key *k, const char *what)
{
	buf_reset(&s->name);
	diff_key_format(k, &s->name);
	add_entry(s->res, buf_cstr(&s->name), "%s%s", what,
		  s->opts->dry_run ? " (dry run)" : "");
}

static void fail(struct sync *s, const struct diff_key *k, const char *msg)
{
	buf_reset(&s->name);
	diff_key_format(k, &s->name);
	add_entry(s->res, buf_cstr(&s->name), "failed: %s", msg);
	err_set(&s->res->failures, ERR_GENERIC, "%s: %s", buf_cstr(&s->name),
		msg);
	s->res->failed++;
	if (s->opts->failed)
		s->opts->failed(k, msg, s->opts->applied_ctx);
}

static bool data_kind(const struct diff_key *k, const char *const *allow);

/* A refusal of the server for a field that cannot change in place. */
static bool immutable_refusal(int rc, const char *msg)
{
	return rc == ERR_INVALID && msg &&
	       (strstr(msg, "immutable") || strstr(msg, "may not change") ||
		strstr(msg, "Forbidden: updates to"));
}

/*
 * Whether an object refused as immutable may be replaced; when not, a
 * hint for the message in *why.
 */
static bool may_replace(struct sync *s, const struct diff_key *k,
			const char **why)
{
	const struct diff_object *d = diff_objset_get(s->desired, k);
	struct app_object_options oo = {.replace = -1};

	if (d)
		app_object_options(d->json, &oo, NULL);
	if (oo.replace == 0 || (oo.replace < 0 && !s->opts->replace)) {
		*why = " (not replaced: syncd.io/replace: \"true\" or "
		       "onImmutable: replace deletes and creates it)";
		return false;
	}
	if (data_kind(k, s->opts->replace_allow)) {
		*why = " (not replaced: the kind holds data; see "
		       "replaceAllowKinds)";
		return false;
	}
	return true;
}

/*
 * Delete the live object (its uid, foreground: its dependents go first)
 * and wait until it is gone, then apply `r` again: it is created.
 */
static int replace_one(struct sync *s, const struct diff_object_report *r,
		       const struct kube_resource *kr, json_t **stored,
		       struct err *e)
{
	const struct diff_object *live = diff_objset_get(&s->app->live, &r->key);
	struct kube_apply_options ao = {s->app->field_manager, r->force, false};
	struct kube_delete_options dopt = {0};
	uint64_t deadline = clk_mono_ms() + (s->opts->replace_wait_ms
						     ? s->opts->replace_wait_ms
						     : 60000);
	unsigned delay = 50;
	int rc;

	err_reset(e);
	dopt.propagation = "Foreground";
	dopt.uid = live ? diff_object_uid(live) : NULL;
	rc = kube_delete(s->app->client, kr, r->key.ns, r->key.name, &dopt, e);
	if (rc < 0 && rc != ERR_NOTFOUND)
		return rc;
	for (;;) {
		json_t *got = NULL;
		const char *uid;

		err_reset(e);
		rc = kube_get(s->app->client, kr, r->key.ns, r->key.name, &got,
			      e);
		uid = json_string_value(json_object_get(
			json_object_get(got, "metadata"), "uid"));
		if (rc == ERR_NOTFOUND ||
		    (rc == 0 && dopt.uid && uid && strcmp(uid, dopt.uid))) {
			json_decref(got);
			break;
		}
		json_decref(got);
		if (rc < 0 && rc != ERR_NOTFOUND)
			return rc;
		if (clk_mono_ms() >= deadline) {
			err_reset(e);
			return err_set(e, ERR_TIMEOUT,
				       "deleted to be replaced, but still "
				       "there after %u s (finalizers?)",
				       (s->opts->replace_wait_ms
						? s->opts->replace_wait_ms
						: 60000) /
					       1000);
		}
		clk_sleep_ms(delay);
		delay = delay < 500 ? delay * 2 : 1000;
	}
	err_reset(e);
	return kube_apply(s->app->client, kr, r->apply, &ao, stored, e);
}

static int apply_one(struct sync *s, const struct diff_object_report *r)
{
	struct kube_apply_options ao = {s->app->field_manager, r->force,
					s->opts->dry_run};
	const struct app_type *t =
		app_find_type(s->app, r->key.group, r->key.kind);
	const struct kube_resource *kr = app_resource_of(s->app, &r->key);
	struct err e = ERR_INIT;
	struct buf msg = BUF_INIT;
	json_t *stored = NULL;
	bool replaced = false;
	int rc;

	if (s->canceled)
		return 0;
	/* compare: ignore objects go only with other writes. */
	if (!r->apply || (r->state == DIFF_IN_SYNC && !s->writes)) {
		s->res->unchanged++;
		return 0;
	}
	if (!kr) {
		if (s->opts->dry_run && t &&
		    app_desired_crd(s->desired, t->group, t->kind)) {
			log_line(s, &r->key,
				 "created (not checked: its CRD is not "
				 "served yet)");
			s->res->applied++;
			return 0;
		}
		buf_reset(&s->name);
		if (t)
			app_group_kind(&s->name, t->group, t->kind);
		err_set(&e, ERR_NOTFOUND, "no resource for %s on the server",
			buf_cstr(&s->name));
		fail(s, &r->key, err_first(&e));
		err_release(&e);
		return 0;
	}
	rc = kube_apply(s->app->client, kr, r->apply, &ao,
			s->opts->dry_run ? NULL : &stored, &e);
	if (rc < 0 && immutable_refusal(rc, err_first(&e))) {
		const char *hint = "";

		if (!may_replace(s, &r->key, &hint)) {
			buf_addf(&msg, "%s%s", err_first(&e), hint);
			fail(s, &r->key, buf_cstr(&msg));
			goto out;
		}
		if (s->opts->dry_run)
			rc = 0;
		else
			rc = replace_one(s, r, kr, &stored, &e);
		if (rc >= 0)
			replaced = true;
	}
	if (rc == ERR_NOTFOUND && r->key.ns && err_count(&e) &&
	    strstr(err_first(&e), "namespaces \"")) {
		buf_addf(&msg,
			 "%s (declare the Namespace, or set createNamespace: "
			 "true or --create-namespace)",
			 err_first(&e));
		fail(s, &r->key, buf_cstr(&msg));
		goto out;
	}
	if (rc >= 0 && stored && s->opts->applied)
		s->opts->applied(&r->key, stored, s->opts->applied_ctx);
	/* Its health, for the wave's (apply_one's caller frees it). */
	if (rc >= 0 && stored)
		keep_health(s, (size_t)(r - s->report->objects), stored);
	json_decref(stored);
	if (rc == ERR_CANCELED) {
		s->canceled = true;
		err_set(&s->cancel, rc, "%s", err_first(&e));
	} else if (rc < 0) {
		fail(s, &r->key,
		     err_count(&e) ? err_first(&e) : "apply failed");
	} else {
		log_line(s, &r->key,
			 replaced		  ? "replaced (immutable field)"
			 : r->state == DIFF_MISSING ? "created"
			 : r->force		  ? "configured (forced)"
						  : "configured");
		s->res->applied++;
		if (app_is_crd(&r->key))
			s->crd_applied = true;
	}
out:
	buf_release(&msg);
	err_release(&e);
	return 0;
}


static bool crd_established(const json_t *crd)
{
	const json_t *status = json_object_get(crd, "status");
	const json_t *conds = json_object_get(status, "conditions"), *c;
	size_t i;

	json_array_foreach(conds, i, c)
	{
		const char *type, *value;

		type = json_string_value(json_object_get(c, "type"));
		value = json_string_value(json_object_get(c, "status"));
		if (type && value && !strcmp(type, "Established") &&
		    !strcmp(value, "True"))
			return true;
	}
	return false;
}

/*
 * After the CRDs: wait (bounded) until each desired CRD is Established and
 * every type it serves is in discovery. Types still not served then fail
 * their objects in apply_one().
 */
static void wait_crds(struct sync *s)
{
	const struct kube_resource *crds = NULL;
	uint64_t deadline =
		clk_mono_ms() +
		(s->opts->crd_wait_ms ? s->opts->crd_wait_ms : 60000);
	unsigned delay = 50;

	if (kube_discovery_find(s->app->disc, "apiextensions.k8s.io", "v1",
				"CustomResourceDefinition", &crds, NULL) < 0)
		return;
	for (;;) {
		bool pending = false, refresh = false;

		for (size_t i = 0; i < s->desired->len; i++) {
			const struct diff_object *o = s->desired->items[i];
			const json_t *spec = json_object_get(o->json, "spec");
			const char *g = json_string_value(
				json_object_get(spec, "group"));
			const char *k = json_string_value(json_object_get(
				json_object_get(spec, "names"), "kind"));
			struct app_type *t;
			json_t *live = NULL;

			if (!app_is_crd(&o->key) || !g || !k ||
			    !(t = app_find_type(s->app, g, k)) || t->res)
				continue;
			if (kube_get(s->app->client, crds, NULL, o->key.name,
				     &live, NULL) < 0 ||
			    !crd_established(live)) {
				json_decref(live);
				pending = true;
				continue;
			}
			json_decref(live);
			if (app_resolve_type(s->app, t, NULL) < 0 || !t->res) {
				pending = true;
				refresh = true;
			}
		}
		if (!pending || clk_mono_ms() >= deadline)
			return;
		clk_sleep_ms(delay);
		delay = delay < 800 ? delay * 2 : 1000;
		if (refresh)
			kube_discovery_invalidate(s->app->disc);
	}
}

/*
 * Kinds that hold data (Namespace, PersistentVolumeClaim,
 * CustomResourceDefinition): never deleted unless `allow` lists them.
 */
static bool data_kind(const struct diff_key *k, const char *const *allow)
{
	struct buf gk = BUF_INIT;
	bool prot = app_is_kind(k, "", "Namespace") ||
		    app_is_kind(k, "", "PersistentVolumeClaim") ||
		    app_is_crd(k);

	if (prot && allow) {
		app_group_kind(&gk, k->group, k->kind);
		for (const char *const *p = allow; *p; p++)
			if (!strcmp(*p, buf_cstr(&gk)))
				prot = false;
	}
	buf_release(&gk);
	return prot;
}

static bool protected_kind(const struct sync *s, const struct diff_key *k)
{
	return data_kind(k, s->opts->prune_allow);
}

/* Delete order: namespaced first, CRDs last (their CRs go with them). */
static int prune_rank(struct sync *s, const struct diff_key *k)
{
	switch (phase_of(s, k)) {
	case PHASE_NAMESPACED:
		return 0;
	case PHASE_CLUSTER:
		return 1;
	case PHASE_CRD:
		return 3;
	default:
		return 2;
	}
}

static void prune_wave(struct sync *s, long wave);

/* Why a labelled orphan stays, or NULL: it goes. */
static const char *kept_why(const struct sync *s, const struct diff_key *k,
			    const json_t *live)
{
	struct app_object_options oo;

	if (app_object_options(live, &oo, NULL) == 0 && oo.prune_disabled)
		return "orphan, kept (" APP_ANN_PRUNE ": disabled)";
	if (!s->opts->prune)
		return "orphan, kept (sync --prune deletes it)";
	if (protected_kind(s, k))
		return "orphan, kept (protected kind; see --prune-allow-kind)";
	return NULL;
}

/* The pass declares no object of its own (the parent and the
 * createNamespace Namespace aside). */
static bool renders_nothing(const struct sync *s)
{
	for (size_t i = 0; i < s->desired->len; i++) {
		const struct diff_key *k = &s->desired->items[i]->key;

		if (app_is_parent(s->app, k) ||
		    (s->app->create_namespace &&
		     app_is_kind(k, "", "Namespace") &&
		     !strcmp(k->name, s->app->namespace)))
			continue;
		return false;
	}
	return true;
}

static void prune(struct sync *s)
{
	struct diff_objset *live = &s->app->live;
	size_t n = 0;
	const char *why;

	/* Count first: over the budget nothing at all is deleted. */
	for (size_t i = 0; i < s->report->len; i++) {
		const struct diff_object_report *r = &s->report->objects[i];
		const struct diff_object *o;

		if (r->state != DIFF_ORPHAN ||
		    !(o = diff_objset_get(live, &r->key)))
			continue;
		if (strcmp(app_label_of(o->json, APP_LABEL_PART_OF),
			   s->app->id))
			continue; /* never: only labelled objects are ours */
		if ((why = kept_why(s, &r->key, o->json))) {
			log_line(s, &r->key, why);
			s->res->kept++;
			continue;
		}
		n++;
	}
	if (!n)
		return;
	if (!s->opts->allow_empty && renders_nothing(s)) {
		buf_reset(&s->name);
		buf_addf(&s->name,
			 "prune: the revision declares no objects: nothing "
			 "pruned of the %zu objects (allowEmpty: true or "
			 "--allow-empty prunes them)",
			 n);
		add_entry(s->res, NULL, "%s", buf_cstr(&s->name));
		err_set(&s->res->failures, ERR_INVALID, "%s",
			buf_cstr(&s->name));
		s->res->failed++;
		s->res->kept += n;
		return;
	}
	if (n > s->opts->prune_budget) {
		buf_reset(&s->name);
		buf_addf(&s->name,
			 "prune: %zu objects to delete, over the budget of "
			 "%zu: nothing pruned (raise --prune-budget)",
			 n, s->opts->prune_budget);
		add_entry(s->res, NULL, "%s", buf_cstr(&s->name));
		err_set(&s->res->failures, ERR_LIMIT, "%s", buf_cstr(&s->name));
		s->res->failed++;
		s->res->kept += n;
		return;
	}
	/* Later waves go first, and within a wave objects before kinds. */
	for (bool any = true; any;) {
		long wave = 0, w;

		any = false;
		for (size_t i = 0; i < s->report->len; i++) {
			const struct diff_object_report *r =
				&s->report->objects[i];
			const struct diff_object *o;

			if (r->state == DIFF_ORPHAN && !s->prune_seen[i] &&
			    (o = diff_objset_get(live, &r->key))) {
				app_wave_of(o->json, &w);
				if (!any || w > wave)
					wave = w;
				any = true;
			}
		}
		if (any)
			prune_wave(s, wave);
	}
}

/* Delete the orphans of one wave (their live annotation), by rank. */
static void prune_wave(struct sync *s, long wave)
{
	struct diff_objset *live = &s->app->live;

	for (int rank = 0; rank < 4; rank++) {
		for (size_t i = 0; i < s->report->len; i++) {
			const struct diff_object_report *r =
				&s->report->objects[i];
			struct kube_delete_options dopt = {0};
			const struct kube_resource *res = NULL;
			const struct diff_object *o;
			struct err e = ERR_INIT;
			char *v;
			long w;
			int rc;

			if (s->canceled)
				return;
			if (r->state != DIFF_ORPHAN || s->prune_seen[i] ||
			    !(o = diff_objset_get(live, &r->key)))
				continue;
			app_wave_of(o->json, &w);
			if (w != wave || prune_rank(s, &r->key) != rank)
				continue;
			/* Seen once per prune, whatever becomes of it. */
			s->prune_seen[i] = true;
			if (strcmp(app_label_of(o->json, APP_LABEL_PART_OF),
				   s->app->id) ||
			    kept_why(s, &r->key, o->json))
				continue;
			if (s->opts->dry_run) {
				log_line(s, &r->key, "pruned");
				s->res->pruned++;
				continue;
			}
			v = app_version_of(o->json);
			rc = kube_discovery_find(s->app->disc, r->key.group, v,
						 r->key.kind, &res, &e);
			free(v);
			/* Only the object we saw: a new one of that name stays.
			 */
			dopt.propagation = "Background";
			dopt.uid = json_string_value(json_object_get(
				json_object_get(o->json, "metadata"), "uid"));
			if (rc == 0)
				rc = kube_delete(s->app->client, res, r->key.ns,
						 r->key.name, &dopt, &e);
			if (rc == ERR_CANCELED) {
				s->canceled = true;
				err_set(&s->cancel, rc, "%s", err_first(&e));
			} else if (rc < 0 && rc != ERR_NOTFOUND) {
				fail(s, &r->key, err_first(&e));
			} else {
				log_line(s, &r->key, "pruned");
				s->res->pruned++;
				if (s->opts->pruned)
					s->opts->pruned(o->json,
							s->opts->applied_ctx);
				for (size_t j = 0; j < live->len; j++)
					if (live->items[j] == o)
						s->gone[j] = true;
			}
			err_release(&e);
		}
	}
}

/* After a prune the parent records fewer kinds: apply it again. */
static void update_parent(struct sync *s)
{
	const struct diff_object *was = NULL;
	struct kube_apply_options ao = {s->app->field_manager, false, false};
	struct err e = ERR_INIT;
	json_t *now = NULL;

	for (size_t i = 0; i < s->desired->len; i++)
		if (app_is_parent(s->app, &s->desired->items[i]->key))
			was = s->desired->items[i];
	if (!was || !s->app->secrets ||
	    app_build_parent(s->app, s->desired, &s->app->live, s->gone, &now,
			     &e) < 0)
		goto out;
	if (json_equal(now, was->json))
		goto out;
	if (kube_apply(s->app->client, s->app->secrets, now, &ao, NULL, &e) < 0)
		fail(s, &was->key, err_first(&e));
	else
		log_line(s, &was->key, "configured (inventory after prune)");
out:
	json_decref(now);
	err_release(&e);
}

int app_wave_of(const json_t *obj, long *wave)
{
	const char *v = json_string_value(json_object_get(
		json_object_get(json_object_get(obj, "metadata"),
				"annotations"),
		APP_ANN_WAVE));
	char *end;
	long w;

	*wave = 0;
	if (!v)
		return 0;
	errno = 0;
	w = strtol(v, &end, 10);
	if (!*v || *end || errno || *v == '+' || w < -APP_WAVE_MAX ||
	    w > APP_WAVE_MAX)
		return ERR_INVALID;
	*wave = w;
	return 0;
}

/* Waves are for the objects after CRDs and Namespaces. */
static bool in_waves(struct sync *s, const struct diff_object_report *r)
{
	enum phase p = phase_of(s, &r->key);

	return r->state != DIFF_ORPHAN &&
	       (p == PHASE_CLUSTER || p == PHASE_NAMESPACED);
}

static long wave_at(struct sync *s, size_t i)
{
	const struct diff_object *d =
		diff_objset_get(s->desired, &s->report->objects[i].key);
	long w = 0;

	if (d)
		app_wave_of(d->json, &w);
	return w;
}

/* The smallest wave above `after` among the objects, or false. */
static bool next_wave(struct sync *s, bool first, long after, long *out)
{
	bool found = false;

	for (size_t i = 0; i < s->report->len; i++) {
		long w;

		if (!in_waves(s, &s->report->objects[i]))
			continue;
		w = wave_at(s, i);
		if ((first || w > after) && (!found || w < *out)) {
			*out = w;
			found = true;
		}
	}
	return found;
}

/*
 * The first object of wave `w` that is not healthy now (its apply's
 * answer, else the live object read before the pass, else a GET when
 * `fresh`), with its health in *h; -1 when all are healthy.
 */
static long unhealthy_in_wave(struct sync *s, long w, bool fresh,
			      struct health *h)
{
	for (size_t i = 0; i < s->report->len; i++) {
		const struct diff_object_report *r = &s->report->objects[i];
		const struct kube_resource *kr;
		json_t *got = NULL;

		if (!in_waves(s, r) || wave_at(s, i) != w)
			continue;
		if (fresh && (kr = app_resource_of(s->app, &r->key)) &&
		    kube_get(s->app->client, kr, r->key.ns, r->key.name, &got,
			     NULL) == 0) {
			keep_health(s, i, got);
			json_decref(got);
		}
		if (s->stored_known[i])
			health_copy(h, &s->stored_health[i]);
		else
			app_live_health(s->app, &r->key, s->opts->health_rules,
					h);
		if (h->state != HEALTH_HEALTHY)
			return (long)i;
		health_release(h);
	}
	return -1;
}

/*
 * Whether wave `w` is healthy, waiting for it up to opts->wave_wait_ms
 * (0: not at all). When it is not, the pass stops before the next wave:
 * res->waiting says why.
 */
static bool wave_healthy(struct sync *s, long w, long next)
{
	uint64_t start = clk_mono_ms();
	long pause = 500, i;
	struct health h = HEALTH_INIT;

	for (bool fresh = false;; fresh = true) {
		i = unhealthy_in_wave(s, w, fresh, &h);
		if (i < 0)
			return true;
		if (h.state == HEALTH_DEGRADED ||
		    clk_mono_ms() - start >= s->opts->wave_wait_ms)
			break;
		health_release(&h);
		clk_sleep_ms(pause);
		pause = pause * 2 > 5000 ? 5000 : pause * 2;
	}
	buf_reset(&s->name);
	diff_key_format(&s->report->objects[i].key, &s->name);
	free(s->res->waiting);
	if (asprintf(&s->res->waiting,
		     "waiting for wave %ld before wave %ld: %s is %s: %s", w,
		     next, buf_cstr(&s->name), health_state_name(h.state),
		     h.reason ? h.reason : "") < 0)
		s->res->waiting = NULL;
	if (s->res->waiting)
		add_entry(s->res, NULL, "%s", s->res->waiting);
	health_release(&h);
	return false;
}

/* The objects after CRDs and Namespaces, wave by wave. False: stopped. */
static bool apply_waves(struct sync *s)
{
	long w = 0, next;
	bool more = next_wave(s, true, 0, &w);

	while (more && !s->canceled) {
		for (int phase = PHASE_CLUSTER; phase <= PHASE_NAMESPACED;
		     phase++)
			for (size_t i = 0; i < s->report->len; i++) {
				const struct diff_object_report *r =
					&s->report->objects[i];

				if (!in_waves(s, r) || s->done[i] ||
				    (int)phase_of(s, &r->key) != phase ||
				    wave_at(s, i) != w)
					continue;
				s->done[i] = true;
				apply_one(s, r);
			}
		more = next_wave(s, false, w, &next);
		if (s->canceled)
			return false;
		if (more && !s->opts->dry_run && !wave_healthy(s, w, next))
			return false;
		w = next;
	}
	return true;
}

void app_sync_options_from_spec(struct app_sync_options *so,
				const struct app_spec *s)
{
	memset(so, 0, sizeof(*so));
	so->prune = s->prune;
	so->prune_allow = (const char *const *)s->prune_allow_kinds.v;
	so->prune_budget = s->prune_budget;
	so->allow_empty = s->allow_empty;
	so->replace = s->on_immutable_replace;
	so->replace_allow = (const char *const *)s->replace_allow_kinds.v;
}

int app_sync(struct app *app, const struct diff_report *report,
	     const struct diff_objset *desired,
	     const struct app_sync_options *opts, struct app_sync_result *res,
	     struct err *err)
{
	struct sync s = {.app = app,
			 .report = report,
			 .desired = desired,
			 .opts = opts,
			 .res = res,
			 .name = BUF_INIT,
			 .cancel = ERR_INIT};
	int error = 0;

	s.done = calloc(report->len + 1, sizeof(*s.done));
	s.gone = calloc(app->live.len + 1, sizeof(*s.gone));
	s.stored_health = calloc(report->len + 1, sizeof(*s.stored_health));
	s.stored_known = calloc(report->len + 1, sizeof(*s.stored_known));
	s.prune_seen = calloc(report->len + 1, sizeof(*s.prune_seen));
	if (!s.done || !s.gone || !s.stored_health || !s.stored_known ||
	    !s.prune_seen) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < report->len; i++)
		if (report->objects[i].apply &&
		    report->objects[i].state != DIFF_IN_SYNC)
			s.writes = true;
	/* The parent, CRDs and Namespaces first, whatever their wave. */
	for (int phase = 0; phase < PHASE_CLUSTER; phase++) {
		for (size_t i = 0; i < report->len; i++) {
			const struct diff_object_report *r =
				&report->objects[i];

			if (r->state == DIFF_ORPHAN || s.done[i] ||
			    (int)phase_of(&s, &r->key) != phase)
				continue;
			s.done[i] = true;
			apply_one(&s, r);
		}
	}
	if (s.crd_applied && !s.canceled)
		wait_crds(&s);
	/* A wave that is not healthy yet stops the pass: no prune. */
	if (!apply_waves(&s))
		goto out;
	prune(&s);
	if (res->pruned && !opts->dry_run && !s.canceled)
		update_parent(&s);
out:
	/* Stopped, not failed: what was not written is left for later. */
	if (s.canceled && !error)
		error = err_set(err, ERR_CANCELED, "sync stopped: %s",
				err_first(&s.cancel));
	err_release(&s.cancel);
	for (size_t i = 0; s.stored_health && i < report->len; i++)
		health_release(&s.stored_health[i]);
	free(s.stored_health);
	free(s.stored_known);
	free(s.prune_seen);
	free(s.done);
	free(s.gone);
	buf_release(&s.name);
	return error;
}

int app_delete(struct app *app, const struct app_sync_options *opts,
	       struct app_sync_result *res, struct err *err)
{
	struct diff_options dopts = DIFF_OPTIONS_INIT;
	struct diff_objset none = DIFF_OBJSET_INIT;
	struct diff_schemas *reg = NULL;
	struct diff_report *report = NULL;
	struct app_sync_options so = *opts;
	struct kube_delete_options del = {0};
	int error;

	dopts.field_manager = app->field_manager;
	dopts.policy = DIFF_POLICY_REPORT;
	so.prune = true;
	so.allow_empty = true;
	so.prune_budget = (size_t)-1;
	error = app_compare(app, &none, &dopts, &reg, &report, NULL, err);
	if (error == ERR_NOTFOUND && report)
		err_reset(err);
	else if (error < 0)
		goto out;
	if ((error = app_sync(app, report, &none, &so, res, err)) < 0)
		goto out;
	/* The inventory goes last, and only when nothing of it is left. */
	if (!res->failed && !res->kept && app->secrets) {
		const struct diff_object *parent =
			none.len ? diff_objset_get(&app->live,
						   &none.items[0]->key)
				 : NULL;

		del.uid = parent ? json_string_value(json_object_get(
					   json_object_get(parent->json,
							   "metadata"),
					   "uid"))
				 : NULL;
		error = kube_delete(app->client, app->secrets, app->namespace,
				    app->name, &del, err);
		if (error == ERR_NOTFOUND)
			error = 0;
	}
out:
	diff_report_free(report);
	diff_schemas_free(reg);
	diff_objset_release(&none);
	return error;
}
