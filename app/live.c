/*
 * An app's live objects: the parent, one LIST per (type, namespace),
 * the GETs the LISTs missed, the CRD schemas, dry runs, and the
 * comparison the commands start with.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/internal.h"
#include "util/base64.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/sha256.h"
#include "util/strvec.h"

#include "util/banned.h" /* last */

/*
 * A listed object carries the app's part-of label because syncd applied
 * it -- or because a controller copied the label from one of the app's
 * objects: the EndpointSlices and Endpoints of a Service get the
 * Service's labels. Only the first kind is the app's (an orphan, which
 * prune would delete). An object whose label is owned in managedFields
 * by Update managers alone was labelled by a copy; an object without
 * managedFields, or whose label nobody owns, is the app's as before.
 */
static bool label_copied(const json_t *obj)
{
	const json_t *mf = json_object_get(json_object_get(obj, "metadata"),
					   "managedFields"),
		     *e;
	bool copied = false;
	size_t i;

	json_array_foreach(mf, i, e)
	{
		const json_t *f = json_object_get(e, "fieldsV1");

		f = json_object_get(json_object_get(f, "f:metadata"),
				    "f:labels");
		if (!json_object_get(f, "f:" APP_LABEL_PART_OF))
			continue;
		if (diff_json_str_is(e, "operation", "Apply"))
			return false;
		copied = true;
	}
	return copied;
}

/* What live objects are settled with as they are read (app_compare()). */
struct settle {
	const struct diff_objset *desired;
	struct diff_schemas *reg;
	const struct diff_options *opts;
};

void app_live_health(const struct app *app, const struct diff_key *key,
		     const struct health_rules *rules, struct health *out)
{
	const struct diff_object *o;
	size_t i;

	if (!diff_objset_index(&app->live, key, &i)) {
		health_of(out, NULL, rules);
		return;
	}
	o = app->live.items[i];
	if (!o->settled) {
		health_of(out, o->json, rules);
		return;
	}
	health_copy(out, &app->settled_health[i]);
}

static void forget_live(struct app *app, size_t len)
{
	for (size_t i = len; i < app->live.len; i++)
		if (app->live.items[i]->settled)
			health_release(&app->settled_health[i]);
	diff_objset_truncate(&app->live, len);
}

void app_forget_live(struct app *app)
{
	forget_live(app, 0);
	diff_objset_release(&app->live);
	free(app->settled_health);
	app->settled_health = NULL;
	app->settled_alloc = 0;
}

/*
 * Whether verdicts of objects of group/kind are kept (app_memo): those of
 * the built-in kinds, but CRDs, which stay whole.
 */
static bool memo_kind(const struct app *app, const struct settle *st,
		      const char *group, const char *kind)
{
	return app->memo && st && !app->keep_live &&
	       diff_schemas_typed(st->reg, group, kind) &&
	       !app_is_crd(&(const struct diff_key){.group = group,
						   .kind = kind});
}

static uint64_t memo_key(const struct diff_key *k)
{
	return app_memo_key(k->group, k->kind, k->ns, strlen(k->ns), k->name,
			    strlen(k->name));
}

/* The version of a live object (its uid and resourceVersion); false: none. */
static bool memo_version(const json_t *item, uint64_t *out)
{
	const json_t *meta = json_object_get(item, "metadata");
	const json_t *uid = json_object_get(meta, "uid");
	const json_t *rv = json_object_get(meta, "resourceVersion");

	if (!json_is_string(uid) || !json_is_string(rv))
		return false;
	*out = app_memo_version(json_string_value(uid), json_string_length(uid),
				json_string_value(rv), json_string_length(rv));
	return true;
}

/* Add live object o (taken over), settled with health *h (taken over). */
static int add_live(struct app *app, struct diff_object *o, struct health *h,
		    struct err *err)
{
	size_t at = app->live.len;

	if (o->settled && at >= app->settled_alloc) {
		size_t n = app->settled_alloc ? app->settled_alloc * 2 : 64;
		struct health *grown;

		while (n <= at)
			n *= 2;
		grown = realloc(app->settled_health, n * sizeof(*grown));
		if (!grown)
			goto nomem;
		app->settled_health = grown;
		app->settled_alloc = n;
	}
	if (diff_objset_add(&app->live, o, err) < 0)
		goto nomem;
	if (o->settled)
		app->settled_health[at] = *h;
	else
		health_release(h);
	*h = (struct health)HEALTH_INIT;
	return 0;
nomem:
	health_release(h);
	diff_object_free(o);
	return err_set(err, ERR_NOMEM, "out of memory");
}

/*
 * Settle live object *o (whole) from the memo's verdict of its version:
 * 1 when there is one (*o replaced by its settled stub, *h its health),
 * 0 when not, ERR_NOMEM.
 */
static int settle_from_memo(struct app *app, struct diff_object **o,
			    uint64_t key, uint64_t version, struct health *h)
{
	struct diff_object *stub;
	size_t ignored;
	int r;

	if ((r = app_memo_get(app->memo, key, version, &ignored, h)) != 1)
		return r;
	if (diff_object_new_settled(&stub, (*o)->key.group, (*o)->key.kind,
				    (*o)->key.ns, (*o)->key.name,
				    diff_object_uid(*o), ignored) < 0) {
		health_release(h);
		return ERR_NOMEM;
	}
	diff_object_free(*o);
	*o = stub;
	app->reused++;
	return 1;
}

/*
 * Add a live object just read: settled first (`st`), when it is one of
 * the desired objects and in sync with it, with its health taken now --
 * or with the verdict kept of its version (app->memo), and kept there
 * when it settles by comparing.
 */
static int ingest(struct app *app, json_t *item, const struct settle *st,
		  struct err *err)
{
	struct health h = HEALTH_INIT;
	struct diff_object *o = NULL;
	const struct diff_object *d;
	uint64_t key = 0, version = 0;
	bool memo;
	int error;

	if ((error = diff_object_new(&o, item, NULL, err)) < 0)
		return error;
	if (diff_objset_get(&app->live, &o->key)) {
		diff_object_free(o); /* listed twice (two namespaces' views) */
		return 0;
	}
	/* CRDs stay whole: their schemas are read from them. */
	if (st && !app->keep_live && !app_is_crd(&o->key) &&
	    (d = diff_objset_get(st->desired, &o->key))) {
		memo = memo_kind(app, st, o->key.group, o->key.kind) &&
		       diff_object_uid(o) && memo_version(item, &version);
		if (memo) {
			key = memo_key(&o->key);
			error = settle_from_memo(app, &o, key, version, &h);
			if (error < 0)
				goto nomem;
			if (error)
				return add_live(app, o, &h, err);
		}
		health_of(&h, item, app->health_rules);
		if (!h.reason ||
		    (error = diff_object_settle(o, d, st->reg, st->opts,
						err)) < 0)
			goto nomem;
		if (error == 1 && memo &&
		    app_memo_put(app->memo, key, version, o->settled_ignored,
				 &h) < 0)
			goto nomem;
	}
	return add_live(app, o, &h, err);
nomem:
	health_release(&h);
	diff_object_free(o);
	return err_set(err, ERR_NOMEM, "out of memory");
}

int app_add_live(struct app *app, json_t *obj, struct err *err)
{
	return ingest(app, obj, NULL, err);
}

/* One LIST of a (type, namespace), read page by page. */
struct listing {
	struct app *app;
	const struct settle *st;
	const struct kube_resource *res;
	size_t mark; /* app->live's length when the list began */
	struct err *err;
	/* The page's objects settled from the memo as it was read. */
	struct diff_object **taken;
	struct health *taken_health;
	size_t ntaken, taken_alloc;
};

static int grow_taken(struct listing *l)
{
	size_t n = l->taken_alloc ? l->taken_alloc * 2 : 64;
	struct diff_object **o = realloc(l->taken, n * sizeof(*o));
	struct health *h;

	if (!o)
		return ERR_NOMEM;
	l->taken = o;
	if (!(h = realloc(l->taken_health, n * sizeof(*h))))
		return ERR_NOMEM;
	l->taken_health = h;
	l->taken_alloc = n;
	return 0;
}

/*
 * kube_list_options.take: a listed object in a version the memo holds a
 * verdict of is settled from its text alone (its metadata's name,
 * namespace, uid and resourceVersion), never read into a tree; it joins
 * app->live with the rest of its page (ingest_page()). Anything unusual
 * (not desired, listed already, escapes in those strings) is read whole.
 */
static bool take_settled(const char *text, size_t len, void *ctx)
{
	static const char *const top[] = {"metadata"};
	static const char *const fields[] = {"name", "namespace", "uid",
					     "resourceVersion"};
	struct listing *l = ctx;
	const struct kube_resource *res = l->res;
	struct fastjson_span meta, v[4];
	const char *s[4] = {NULL, "", NULL, NULL};
	size_t n[4] = {0, 0, 0, 0}, ignored;
	char name[254], ns[64], uid[64];
	struct health h = HEALTH_INIT;
	struct diff_object *o = NULL;

	if (fastjson_members(text, len, top, 1, &meta) != 1 ||
	    fastjson_members(meta.text, meta.len, fields, 4, v) < 0)
		return false;
	for (size_t i = 0; i < 4; i++)
		if (v[i].text && !fastjson_plain_string(&v[i], &s[i], &n[i]))
			return false;
	if (!s[0] || !s[2] || !s[3] || n[0] >= sizeof(name) ||
	    n[1] >= sizeof(ns) || n[2] >= sizeof(uid) ||
	    (l->ntaken == l->taken_alloc && grow_taken(l) < 0))
		return false;
	memcpy(name, s[0], n[0]);
	name[n[0]] = '\0';
	memcpy(ns, s[1], n[1]);
	ns[n[1]] = '\0';
	memcpy(uid, s[2], n[2]);
	uid[n[2]] = '\0';
	if (app_memo_get(l->app->memo,
			 app_memo_key(res->group, res->kind, ns, n[1], name,
				      n[0]),
			 app_memo_version(uid, n[2], s[3], n[3]), &ignored,
			 &h) != 1)
		return false;
	if (diff_object_new_settled(&o, res->group, res->kind, ns, name, uid,
				    ignored) < 0 ||
	    !diff_objset_get(l->st->desired, &o->key) ||
	    diff_objset_get(&l->app->live, &o->key)) {
		diff_object_free(o);
		health_release(&h);
		return false;
	}
	l->taken[l->ntaken] = o;
	l->taken_health[l->ntaken++] = h;
	return true;
}

/* Taken objects from `from` on, which did not join app->live: dropped. */
static void drop_taken(struct listing *l, size_t from)
{
	for (size_t i = from; i < l->ntaken; i++) {
		diff_object_free(l->taken[i]);
		health_release(&l->taken_health[i]);
	}
	l->ntaken = 0;
}

static int ingest_page(json_t *items, bool again, void *ctx)
{
	struct listing *l = ctx;
	json_t *item;
	size_t i;
	int error;

	if (again) /* started over: what its earlier pages gave goes */
		forget_live(l->app, l->mark);
	for (i = 0; i < l->ntaken; i++) {
		/* add_live() takes both over, on failure too. */
		error = add_live(l->app, l->taken[i], &l->taken_health[i],
				 l->err);
		l->taken[i] = NULL;
		if (error < 0) {
			drop_taken(l, i + 1);
			return error;
		}
		l->app->reused++;
	}
	l->ntaken = 0;
	json_array_foreach(items, i, item)
	{
		if (label_copied(item))
			continue; /* a desired one: GET below */
		if ((error = ingest(l->app, item, l->st, l->err)) < 0)
			return error;
	}
	return 0;
}

/* The labelled objects of one type in one namespace (NULL: cluster). */
static int list_type(struct app *app, const struct app_type *t, const char *ns,
		     const struct kube_list_options *lo,
		     const struct settle *st, struct err *err)
{
	struct listing l = {.app = app, .st = st, .res = t->res,
			    .mark = app->live.len, .err = err};
	struct kube_list_options o = *lo;
	json_t *items = NULL;
	int error;

	error = app->list_hook
			? app->list_hook(app, t->res, ns, &items, app->list_ctx)
			: ERR_NOTFOUND;
	if (error == ERR_NOTFOUND) {
		app->requests++;
		if (memo_kind(app, st, t->res->group, t->res->kind)) {
			o.take = take_settled;
			o.take_ctx = &l;
		}
		error = kube_list_each(app->client, t->res, ns, &o, ingest_page,
				       &l, err);
		drop_taken(&l, 0); /* a page that failed */
		free(l.taken);
		free(l.taken_health);
		return error;
	}
	if (error == 0)
		error = ingest_page(items, false, &l);
	json_decref(items);
	return error;
}

/*
 * Desired objects the labelled LISTs did not return are looked for one by
 * one (a GET each) -- unless at least UNLISTED_LIST of them share a type
 * and namespace, as in an app never applied: then one unfiltered LIST of
 * that type and namespace finds them, read page by page, the objects
 * that are not desired dropped with their page. It stops after as many
 * pages as there are objects to find (a namespace of many objects of
 * that type), and the ones still not found are then each asked for, so it
 * never costs more than twice the GETs' requests.
 */
#define UNLISTED_LIST 10

struct unlisted {
	struct app *app;
	const struct settle *st;
	const struct diff_objset *desired;
	size_t mark;	/* app->live's length when the list began */
	size_t pages;	/* pages read so far */
	size_t max_pages;
	struct err *err;
};

static int unlisted_page(json_t *items, bool again, void *ctx)
{
	struct unlisted *u = ctx;
	struct diff_key key;
	json_t *item;
	size_t i;
	bool wanted;
	int error;

	if (again) /* started over: what its earlier pages gave goes */
		forget_live(u->app, u->mark);
	if (u->pages++)
		u->app->requests++; /* the first was counted when asked */
	json_array_foreach(items, i, item)
	{
		if ((error = diff_key_from_object(&key, item, u->err)) < 0)
			return error;
		wanted = diff_objset_get(u->desired, &key) &&
			 !diff_objset_get(&u->app->live, &key);
		diff_key_release(&key);
		if (wanted && (error = ingest(u->app, item, u->st, u->err)) < 0)
			return error;
	}
	/* Enough pages: the rest is asked for by GET (a positive stop). */
	return u->pages >= u->max_pages ? 1 : 0;
}

/* A desired object still to be looked for, with its type. */
struct pending {
	const struct app_type *t;
	const struct diff_object *o;
};

static int pending_cmp(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return strcmp(x->o->key.ns, y->o->key.ns);
}

static int get_one(struct app *app, const struct pending *p,
		   const struct settle *st, struct err *err)
{
	struct err e = ERR_INIT;
	json_t *obj = NULL;
	int r;

	app->requests++;
	r = kube_get(app->client, p->t->res, p->o->key.ns, p->o->key.name, &obj,
		     &e);
	if (r == ERR_NOTFOUND) {
		err_release(&e); /* absent: Missing, not a problem */
		return 0;
	}
	if (r < 0) {
		err_move(err, &e);
		err_release(&e);
		return r;
	}
	r = ingest(app, obj, st, err);
	json_decref(obj);
	return r;
}

static int find_unlisted(struct app *app, const struct diff_objset *desired,
			 const struct settle *st, struct err *err)
{
	struct kube_list_options lo = {0};
	struct pending *p = calloc(desired->len + 1, sizeof(*p));
	size_t n = 0, i, j;
	int error = 0;

	if (!p)
		return err_set(err, ERR_NOMEM, "out of memory");
	for (i = 0; i < desired->len; i++) {
		const struct diff_object *o = desired->items[i];
		const struct app_type *t =
			app_find_type(app, o->key.group, o->key.kind);

		if (t && t->res && !diff_objset_get(&app->live, &o->key) &&
		    !strchr(o->key.name, '*'))
			p[n++] = (struct pending){t, o};
	}
	qsort(p, n, sizeof(*p), pending_cmp);
	for (i = 0; i < n; i = j) {
		struct unlisted u = {app, st, desired, app->live.len, 0, 0, err};

		for (j = i + 1; j < n && !pending_cmp(&p[i], &p[j]); j++)
			;
		/* (A namespaced object without a namespace is not listed.) */
		if (j - i >= UNLISTED_LIST &&
		    (!p[i].t->res->namespaced || *p[i].o->key.ns)) {
			u.max_pages = j - i;
			app->requests++;
			error = kube_list_each(
				app->client, p[i].t->res,
				p[i].t->res->namespaced ? p[i].o->key.ns : NULL,
				&lo, unlisted_page, &u, err);
			if (error < 0)
				goto out;
			if (error == 0)
				continue; /* listed whole: the rest is Missing */
			error = 0; /* stopped: the rest by GET */
		}
		for (size_t k = i; k < j; k++)
			if (!diff_objset_get(&app->live, &p[k].o->key) &&
			    (error = get_one(app, &p[k], st, err)) < 0)
				goto out;
	}
out:
	free(p);
	return error;
}

/*
 * app_read_live(), settling each object as it comes when `st` is given:
 * the CRDs are listed first, then the schemas registered, then the rest.
 */
static int read_live(struct app *app, struct diff_objset *desired,
		     const struct settle *st, struct err *err)
{
	struct strvec gks = STRVEC_INIT, nss = STRVEC_INIT;
	struct kube_list_options lo = {0};
	struct buf sel = BUF_INIT, name = BUF_INIT;
	struct diff_object *po = NULL;
	struct err e = ERR_INIT;
	json_t *parent = NULL;
	int error = 0, first = 0;

	/* What an earlier read found goes: this one reads everything anew. */
	app_forget_live(app);
	if ((error = app_read_parent(app, &gks, &nss, err)) < 0)
		goto out;
	/* The types: desired ones first (their version), then the parent's. */
	for (size_t i = 0; i < desired->len; i++) {
		const struct diff_object *o = desired->items[i];
		char *v = app_version_of(o->json);

		error = app_add_type(app, o->key.group, o->key.kind, v, true);
		free(v);
		if (error < 0)
			goto nomem;
	}
	for (size_t i = 0; i < gks.len; i++) {
		char *dot = strchr(gks.v[i], '.');

		if (dot)
			*dot = '\0';
		if (app_add_type(app, dot ? dot + 1 : "", gks.v[i], NULL,
				 false) < 0)
			goto nomem;
	}
	for (size_t i = 0; i < app->ntypes; i++) {
		struct app_type *t = &app->types[i];

		if ((error = app_resolve_type(app, t, err)) < 0)
			goto out;
		if (t->res || !t->desired ||
		    app_desired_crd(desired, t->group, t->kind))
			continue;
		/* Not served and no CRD of ours will serve it. */
		t->failed = true;
		buf_reset(&name);
		app_group_kind(&name, t->group, t->kind);
		if (!first)
			first = ERR_NOTFOUND;
		err_set(err, ERR_NOTFOUND,
			"no resource for %s (%s) on the server, and the app "
			"has no CustomResourceDefinition for it",
			buf_cstr(&name),
			t->version ? t->version : "any version");
	}

	/* Namespaces: the desired objects', the parent's, its records'. */
	if (app_strset_add(&nss, app->namespace) < 0)
		goto nomem;
	for (size_t i = 0; i < desired->len; i++)
		if (*desired->items[i]->key.ns &&
		    app_strset_add(&nss, desired->items[i]->key.ns) < 0)
			goto nomem;

	buf_addf(&sel, "%s=%s", APP_LABEL_PART_OF, app->id);
	lo.label_selector = buf_cstr(&sel);
	/* Round 0 lists the CRDs, round 1 the rest. */
	for (int round = 0; round < 2; round++) {
		if (round == 1 && st &&
		    (error = app_add_schemas(app, st->reg, desired, err)) < 0)
			goto out;
		for (size_t i = 0; i < app->ntypes; i++) {
			const struct app_type *t = &app->types[i];
			size_t n = t->res && t->res->namespaced ? nss.len : 1;
			bool crds = !strcmp(t->group, "apiextensions.k8s.io") &&
				    !strcmp(t->kind, "CustomResourceDefinition");

			if (crds != (round == 0))
				continue;
			for (size_t j = 0; t->res && j < n; j++) {
				const char *ns =
					t->res->namespaced ? nss.v[j] : NULL;

				if ((error = list_type(app, t, ns, &lo, st,
						       err)) < 0)
					goto out;
			}
		}
	}

	if ((error = find_unlisted(app, desired, st, err)) < 0)
		goto out;

	if ((error = app_build_parent(app, desired, &app->live, NULL, &parent,
				      err)) < 0)
		goto out;
	if ((error = diff_object_new(&po, parent, "app inventory", err)) < 0)
		goto out;
	/* Read again (sync --wait): the desired parent is there already. */
	if (!diff_objset_get(desired, &po->key)) {
		if ((error = diff_objset_add(desired, po, err)) < 0)
			goto out;
		po = NULL;
	}
	error = first;
	goto out;
nomem:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	diff_object_free(po);
	json_decref(parent);
	err_release(&e);
	strvec_release(&gks);
	strvec_release(&nss);
	buf_release(&sel);
	buf_release(&name);
	return error;
}

int app_read_live(struct app *app, struct diff_objset *desired, struct err *err)
{
	return read_live(app, desired, NULL, err);
}

static bool builtin_group(const char *g)
{
	static const char *const groups[] = {
		"",
		"apps",
		"batch",
		"autoscaling",
		"policy",
		"rbac.authorization.k8s.io",
		"networking.k8s.io",
		"apiextensions.k8s.io",
		"apiregistration.k8s.io",
		"coordination.k8s.io",
		"events.k8s.io",
		"storage.k8s.io",
		"admissionregistration.k8s.io",
		"certificates.k8s.io",
		"scheduling.k8s.io",
		"node.k8s.io",
		"discovery.k8s.io",
		"flowcontrol.apiserver.k8s.io",
		"authentication.k8s.io",
		"authorization.k8s.io",
		"resource.k8s.io",
		"internal.apiserver.k8s.io",
		"storagemigration.k8s.io",
		NULL,
	};

	for (const char *const *p = groups; *p; p++)
		if (!strcmp(*p, g))
			return true;
	return false;
}

static int add_crds_of(struct diff_schemas *reg, const struct diff_objset *set,
		       struct err *err)
{
	int error = 0;

	for (size_t i = 0; i < set->len; i++)
		if (app_is_crd(&set->items[i]->key) &&
		    diff_schemas_add_crd(reg, set->items[i]->json, err) < 0)
			error = ERR_INVALID;
	return error;
}

/* Is there a CRD for group/kind in `set`? */
static bool has_crd(const struct diff_objset *set, const char *group,
		    const char *kind)
{
	return app_desired_crd(set, group, kind) != NULL;
}

int app_add_schemas(struct app *app, struct diff_schemas *reg,
		    const struct diff_objset *desired, struct err *err)
{
	const struct kube_resource *crds = NULL;
	struct buf name = BUF_INIT;
	int error = 0;

	/* Live first: the desired CRD is what the next apply makes. */
	if (add_crds_of(reg, &app->live, err) < 0 ||
	    add_crds_of(reg, desired, err) < 0)
		error = ERR_INVALID;
	for (size_t i = 0; i < app->ntypes; i++) {
		const struct app_type *t = &app->types[i];
		json_t *crd = NULL;
		int r;

		if (!t->res || builtin_group(t->group) ||
		    has_crd(desired, t->group, t->kind) ||
		    has_crd(&app->live, t->group, t->kind))
			continue;
		if (!crds &&
		    (r = kube_discovery_find(app->disc, "apiextensions.k8s.io",
					     "v1", "CustomResourceDefinition",
					     &crds, err)) < 0)
			return r;
		buf_reset(&name);
		buf_addf(&name, "%s.%s", t->res->name, t->group);
		app->requests++;
		r = kube_get(app->client, crds, NULL, buf_cstr(&name), &crd,
			     NULL);
		if (r == ERR_NOTFOUND)
			continue; /* an aggregated API: no CRD, default types */
		if (r < 0) {
			error = err_set(err, r, "cannot read the CRD %s",
					buf_cstr(&name));
			continue;
		}
		if (diff_schemas_add_crd(reg, crd, err) < 0)
			error = ERR_INVALID;
		json_decref(crd);
	}
	buf_release(&name);
	return error;
}

int app_dry_run(struct app *app, const struct diff_report *report,
		const struct diff_objset *desired, struct diff_objset *out,
		struct err *err)
{
	struct kube_apply_options ao = {app->field_manager, false, true};
	struct buf name = BUF_INIT;
	int error = 0;

	for (size_t i = 0; i < report->len; i++) {
		const struct diff_object_report *r = &report->objects[i];
		const struct diff_object *d;
		const struct kube_resource *kr;
		const json_t *body;
		struct diff_object *o = NULL;
		struct err e = ERR_INIT;
		json_t *res = NULL;
		int rc;

		if (r->state == DIFF_ORPHAN ||
		    !(d = diff_objset_get(desired, &r->key)))
			continue;
		kr = app_resource_of(app, &r->key);
		body = r->apply ? r->apply : d->json;
		ao.force = r->apply && r->force;
		rc = -1;
		if (kr) {
			rc = kube_apply(app->client, kr, body, &ao, &res, &e);
			if (rc < 0 && rc != ERR_EXISTS) {
				buf_reset(&name);
				diff_key_format(&r->key, &name);
				err_set(err, rc, "%s: dry-run apply: %s",
					buf_cstr(&name), err_first(&e));
				if (!error)
					error = rc;
			}
		}
		/*
		 * Not served yet (a CRD of the app comes first), or a conflict
		 * the policy leaves alone: the local comparison stands.
		 */
		rc = diff_object_new(&o, rc < 0 ? d->json : res, d->origin,
				     err);
		if (o)
			o->sensitive = d->sensitive;
		json_decref(res);
		err_release(&e);
		if (rc < 0 || (rc = diff_objset_add(out, o, err)) < 0) {
			diff_object_free(o);
			error = rc;
			break;
		}
	}
	buf_release(&name);
	return error;
}

/*
 * createNamespace: the app's namespace as one of its objects, unless
 * declared (then the declaration wins).
 */
static int add_namespace(struct app *app, struct diff_objset *desired,
			 struct err *err)
{
	const json_t *labels = json_object_get(app->namespace_metadata,
					       "labels");
	const json_t *ann = json_object_get(app->namespace_metadata,
					    "annotations");
	struct diff_object *o = NULL;
	json_t *ns, *meta;
	int error;

	for (size_t i = 0; i < desired->len; i++)
		if (app_is_kind(&desired->items[i]->key, "", "Namespace") &&
		    !strcmp(desired->items[i]->key.name, app->namespace))
			return 0;
	ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
		       "Namespace", "metadata", "name", app->namespace);
	meta = json_object_get(ns, "metadata");
	if (!ns ||
	    (json_object_size(labels) &&
	     json_object_set_new(meta, "labels", json_deep_copy(labels))) ||
	    (json_object_size(ann) &&
	     json_object_set_new(meta, "annotations", json_deep_copy(ann)))) {
		json_decref(ns);
		return err_set(err, ERR_NOMEM, "out of memory");
	}
	error = diff_object_new(&o, ns, "createNamespace", err);
	json_decref(ns);
	if (error < 0 || (error = diff_objset_add(desired, o, err)) < 0)
		diff_object_free(o);
	return error;
}

int app_compare(struct app *app, struct diff_objset *desired,
		const struct diff_options *dopts, struct diff_schemas **reg,
		struct diff_report **report, const char *revision,
		struct err *err)
{
	int error, missing = 0;

	*reg = NULL;
	*report = NULL;
	if ((error = app_annotations_check(desired, err)) < 0 ||
	    (error = diff_objset_default_namespace(desired, app->namespace,
						   desired, err)) < 0 ||
	    (app->create_namespace &&
	     (error = add_namespace(app, desired, err)) < 0) ||
	    (error = app_label(app, desired, err)) < 0)
		return error;
	if (!(*reg = diff_schemas_new()))
		return err_set(err, ERR_NOMEM, "out of memory");
	error = read_live(app, desired,
			  &(struct settle){desired, *reg, dopts}, err);
	if (error == ERR_NOTFOUND)
		missing = error;
	else if (error < 0)
		return error;
	if ((error = diff_compare(report, desired, &app->live, *reg, dopts,
				  revision, err)) < 0)
		return error;
	app_report_options(*report, desired);
	return missing;
}
