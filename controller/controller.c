/*
 * controller: the `syncd run` loop (see controller.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diff/diff.h"
#include "app/app.h"
#include "controller/controller.h"
#include "controller/internal.h"
#include "controller/fights.h"
#include "source/source.h"
#include "controller/queue.h"
#include "kube/kube.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/base64.h"
#include "util/clock.h"
#include "util/file.h"

#include "util/banned.h" /* last */

/* Longest time a pass in --once mode may take before we give up. */
#define ONCE_TIMEOUT_MS (30u * 60u * 1000u)

/*
 * A change seen by a watch runs its app this long after it (changes
 * within it coalesce into one pass): a rollout touching many objects is
 * one pass, and a manual edit is healed well within a second.
 */
#define WATCH_DEBOUNCE_MS 50u
/*
 * After a pass that wrote, the objects' health is read by another pass
 * this much later (the health the pass saw is from before its writes).
 */
#define HEALTH_REREAD_MS 2000u

/* How long a reload waits for passes in flight. */
#define RELOAD_GRACE_MS (5u * 60u * 1000u)

/* Every labelled object is watched: one watch per type serves all apps. */
#define WATCH_SELECTOR APP_LABEL_PART_OF

static struct ctl_app *find_app(struct controller *c, const char *name)
{
	struct ctl_app *a = NULL;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->napps && !a; i++)
		if (!strcmp(c->apps[i]->spec->name, name))
			a = c->apps[i];
	pthread_mutex_unlock(&c->lock);
	return a;
}

/*
 * Whether every app `a` depends on (dependsOn) is healthy after a pass
 * that succeeded; else `why` names the first that is not.
 */
static bool deps_ready(struct controller *c, struct ctl_app *a,
		       struct buf *why)
{
	const struct strvec *deps = &a->spec->depends_on;

	for (size_t i = 0; i < deps->len; i++) {
		struct ctl_app *d = find_app(c, deps->v[i]);
		bool ok;

		if (!d) {
			buf_addf(why, "waiting for app %s: not configured",
				 deps->v[i]);
			return false;
		}
		pthread_mutex_lock(&d->st_lock);
		ok = d->st.ran && d->st.last_ok && d->st.health_known &&
		     d->st.health == HEALTH_HEALTHY;
		if (!ok)
			buf_addf(why, "waiting for app %s: %s%s%s", deps->v[i],
				 !d->st.ran ? "no pass yet"
				 : !d->st.last_ok
					 ? "its last pass failed"
					 : health_state_name(d->st.health),
				 d->st.ran && d->st.last_ok &&
						 d->st.health_doc
					 ? ": "
					 : "",
				 d->st.ran && d->st.last_ok && d->st.health_doc
					 ? json_string_value(json_object_get(
						   d->st.health_doc, "message"))
					 : "");
		pthread_mutex_unlock(&d->st_lock);
		if (!ok)
			return false;
	}
	return true;
}

void ctl_wake_dependents(struct controller *c, const char *name)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; c->q && i < c->napps; i++)
		if (strvec_has(&c->apps[i]->spec->depends_on, name))
			queue_enqueue(c->q, c->apps[i]->spec->name);
	pthread_mutex_unlock(&c->lock);
}

static void free_app(struct ctl_app *a)
{
	if (!a)
		return;
	ctl_status_release(a);
	source_free(a->gs);
	diff_objset_release(&a->objects);
	fights_free(a->fights);
	free(a->render_file);
	json_decref(a->written);
	json_decref(a->verify_memo);
	app_memo_free(a->memo);
	free(a->source_error);
	free(a->id);
	kube_discovery_free(a->disc);
	kube_client_free(a->client);
	ctl_objects_credentials_release(a);
	free(a);
}

static void on_fight(bool started, const struct diff_key *key,
		     const char *path, const char *other, unsigned changes,
		     void *ctx)
{
	struct ctl_app *a = ctx;
	struct buf obj = BUF_INIT, managers = BUF_INIT;
	char n[16];

	diff_key_format(key, &obj);
	buf_addf(&managers, "%s,%s", a->ctl->cfg->field_manager, other);
	snprintf(n, sizeof(n), "%u", changes);
	if (started) {
		log_warn("field fight: changed back every time syncd writes "
			 "it; syncd stops writing it",
			 "app", a->spec->name, "revision", a->commit, "object",
			 buf_cstr(&obj), "field", path, "managers",
			 buf_cstr(&managers), "changes", n, NULL);
		ctl_event_fight(a, key, path, other);
	} else
		log_info("field fight over: syncd writes it again", "app",
			 a->spec->name, "revision", a->commit, "object",
			 buf_cstr(&obj), "field", path, "managers",
			 buf_cstr(&managers), NULL);
	buf_release(&obj);
	buf_release(&managers);
}

static const char *app_namespace(const struct controller *c,
				 const struct app_spec *ca)
{
	/* Another cluster: not its kubeconfig's, which may not be read yet. */
	return ca->namespace ? ca->namespace
	       : ca->cluster ? "default"
			     : c->conn.cfg.namespace;
}

/* The client and discovery an app reads and writes with. */
static struct kube_client *app_client(struct controller *c,
				      const struct ctl_app *a)
{
	return a->client	? a->client
	       : a->cluster ? a->cluster->conn.client
			    : c->conn.client;
}

/*
 * The version of the app's cluster, for helm's --kube-version when the
 * app names none: asked once per app (one GET /version), NULL when
 * unknown (helm's default then).
 */
static const char *kube_version_of(struct controller *c, struct ctl_app *a)
{
	struct kube_client *client;
	struct err err = ERR_INIT;

	if (!a->kube_version_asked && (client = app_client(c, a))) {
		a->kube_version_asked = true;
		if (app_conn_server_version(client, a->kube_version,
					    sizeof(a->kube_version),
					    &err) < 0)
			log_warn("the cluster's version is unknown: helm "
				 "renders with its default",
				 "app", a->spec->name, "error",
				 err_first(&err), NULL);
		err_release(&err);
	}
	return a->kube_version[0] ? a->kube_version : NULL;
}

static struct kube_discovery *app_disc(struct controller *c,
				       const struct ctl_app *a)
{
	return a->disc	      ? a->disc
	       : a->cluster ? a->cluster->conn.disc
			    : c->conn.disc;
}

/* The watch cache of the app's cluster (NULL: watch off). */
static struct kube_watchcache *app_wc(struct controller *c,
				      const struct ctl_app *a)
{
	return a->cluster ? a->cluster->wc : c->wc;
}

static bool may_write(void *ctx)
{
	struct controller *c = ctx;

	return atomic_load(&c->leading);
}

void ctl_write_guard(struct controller *c, struct kube_client_options *ko)
{
	if (!c->cfg->leader.enabled)
		return;
	ko->may_write = may_write;
	ko->may_write_ctx = c;
	ko->unacked_timeout_ms =
		(unsigned)(c->cfg->leader.lease_ms - c->cfg->leader.renew_ms);
}

/*
 * An App with serviceAccountName reads and writes as that service
 * account of its namespace (RBAC decides), with a client of its own.
 */
static int impersonate(struct controller *c, struct ctl_app *a,
		       struct err *err)
{
	struct kube_client_options ko = {0};
	struct buf user = BUF_INIT;
	int error;

	buf_addf(&user, "system:serviceaccount:%s:%s", a->spec->object_ns,
		 a->spec->service_account);
	ko.qps = c->cfg->qps;
	ko.burst = c->cfg->burst;
	ko.impersonate_user = buf_cstr(&user);
	ctl_write_guard(c, &ko);
	if ((error = kube_client_new(&a->client, &c->conn.cfg, &ko, err)) ==
	    0)
		error = kube_discovery_new(&a->disc, a->client, err);
	buf_release(&user);
	return error;
}

/* A new app: its configuration, ApplySet id and fight detection. */
static int new_app(struct ctl_app **out, struct controller *c,
		   const struct app_spec *ca, struct err *err)
{
	struct fights_options fo = {0};
	struct ctl_app *a;
	struct app app;
	int error;

	*out = NULL;
	if (!(a = calloc(1, sizeof(*a))))
		return err_set(err, ERR_NOMEM, "out of memory");
	a->ctl = c;
	a->objects = (struct diff_objset)DIFF_OBJSET_INIT;
	for (size_t i = 0; i < CTL_CRED_MAX; i++)
		a->cred_fd[i] = -1;
	if (ctl_status_init(a) < 0) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto fail;
	}
	a->spec = ca;
	a->cluster = ctl_cluster_find(c, ca->cluster);
	if (ca->service_account && ca->object_ns &&
	    (error = impersonate(c, a, err)) < 0)
		goto fail;
	memset(&app, 0, sizeof(app));
	error = app_init(&app, app_client(c, a), app_disc(c, a), ca->name,
			 app_namespace(c, ca), c->cfg->field_manager, err);
	if (!error && !(a->id = strdup(app.id)))
		error = err_set(err, ERR_NOMEM, "out of memory");
	app_release(&app);
	if (error < 0)
		goto fail;
	fo.self = c->cfg->field_manager;
	fo.changes = c->cfg->fight_changes;
	fo.window_ms = c->cfg->fight_window_ms;
	fo.notify = on_fight;
	fo.ctx = a;
	if ((error = fights_new(&a->fights, &fo, err)) < 0)
		goto fail;
	if (!(a->written = json_object()) || !(a->memo = app_memo_new())) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto fail;
	}
	*out = a;
	return 0;
fail:
	free_app(a);
	return error;
}

static int open_source(struct controller *c, struct ctl_app *a,
		       struct err *err)
{
	struct source_options o = a->spec->source;
	int error;

	o.cache_dir = c->cfg->cache_dir;
	if ((error = ctl_objects_credentials(c, a, &o, err)) < 0)
		return error;
	return source_open(&a->gs, &o, err);
}

/* A deep copy of the last render, for one pass to label and extend. */
static int copy_objects(struct diff_objset *out, const struct diff_objset *in,
			struct err *err)
{
	for (size_t i = 0; i < in->len; i++) {
		struct diff_object *obj = NULL;
		json_t *j = json_deep_copy(in->items[i]->json);
		int error;

		if (!j)
			return err_set(err, ERR_NOMEM, "out of memory");
		error = diff_object_new(&obj, j, in->items[i]->origin, err);
		json_decref(j);
		if (error < 0)
			return error;
		obj->sensitive = in->items[i]->sensitive;
		if ((error = diff_objset_add(out, obj, err)) < 0) {
			diff_object_free(obj);
			return error;
		}
	}
	return 0;
}

/*
 * Where the render of `tree` is kept on disk: the render cache (see
 * app_render_cache_file()), in the source's cache. Renders live on disk
 * rather than in memory: a pass reads its app's objects back (a few
 * milliseconds), so memory does not grow with the number of objects
 * managed, and a restart need not render again. Renders that may change
 * without a commit (exec plugins, variable files) are kept on disk for
 * the passes of this process but never taken from a previous one.
 */
static bool render_path(const struct ctl_app *a, const char *tree,
			struct buf *out)
{
	const char *base = a->gs ? source_cache_path(a->gs) : NULL;

	return app_render_cache_file(out, a->spec, base, tree) == 0;
}

/*
 * The age identities of an App's decryption.secretRef, into *out (the
 * caller wipes it): every data key ending in .agekey (Flux's
 * convention), decoded, one after the other.
 */
static int age_identities(struct ctl_app *a, struct buf *out,
			  struct err *err)
{
	const struct app_spec *s = a->spec;
	const char *ns = s->object_ns, *name = s->decryption.secret_ref;
	struct buf one = BUF_INIT;
	json_t *secret = NULL, *v;
	const char *k;
	size_t n = 0;
	int error;

	if ((error = ctl_secret_get(a->ctl, ns, name, "decryption.secretRef",
				    &secret, err)) < 0)
		return error;
	json_object_foreach (json_object_get(secret, "data"), k, v) {
		size_t len = strlen(k);

		if (len < 7 || strcmp(k + len - 7, ".agekey"))
			continue;
		buf_reset(&one);
		if (!json_is_string(v) ||
		    base64_decode(&one, json_string_value(v),
				  json_string_length(v), 0) < 0) {
			error = err_set(err, ERR_INVALID,
					"decryption.secretRef: Secret %s/%s: "
					"%s is not base64",
					ns, name, k);
			break;
		}
		if (buf_add(out, one.ptr ? one.ptr : "", one.len) < 0 ||
		    buf_addch(out, '\n') < 0) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			break;
		}
		n++;
	}
	if (!error && !n)
		error = err_set(err, ERR_NOTFOUND,
				"decryption.secretRef: Secret %s/%s has no "
				"data key ending in .agekey",
				ns, name);
	file_secret_release(&one);
	json_decref(secret);
	return error;
}

/* Decrypt the SOPS objects of `set` in place (app_decrypt()). */
static int decrypt_render(struct ctl_app *a, struct diff_objset *set,
			  struct err *err)
{
	const struct app_spec *s = a->spec;
	struct buf ids = BUF_INIT;
	int error;

	if (!s->decryption.sops || !s->decryption.secret_ref ||
	    !s->object_ns)
		return app_decrypt(set, s, NULL, err);
	if ((error = age_identities(a, &ids, err)) == 0)
		error = app_decrypt(set, s, &ids, err);
	file_secret_release(&ids);
	return error;
}

/*
 * Keep `fresh` on disk (then released) or, failing that, in memory. A
 * render with objects encrypted with SOPS is decrypted first, once (a
 * failure keeps the last render): the disk keeps its ciphertext, for a
 * restart, and memory the plaintext the passes use (a->decrypted).
 */
/*
 * Keep a render: in its cache file (`cached`: the file it was just read
 * back from, kept as it is), or in memory when it cannot be written.
 */
static int keep_render(struct ctl_app *a, const char *tree,
		       struct diff_objset *fresh, const char *cached,
		       struct err *err)
{
	struct diff_objset plain = DIFF_OBJSET_INIT;
	struct buf file = BUF_INIT;
	bool secret = app_decrypt_needed(fresh);
	int error;

	if (secret && ((error = copy_objects(&plain, fresh, err)) < 0 ||
		       (error = decrypt_render(a, &plain, err)) < 0)) {
		diff_objset_release(&plain);
		return error;
	}

	if (a->render_file) {
		if (!cached || strcmp(cached, a->render_file))
			unlink(a->render_file);
		free(a->render_file);
		a->render_file = NULL;
	}
	diff_objset_release(&a->objects);
	if (cached ? buf_adds(&file, cached) >= 0
		   : render_path(a, tree, &file) &&
			     app_render_cache_write(buf_cstr(&file), fresh)) {
		a->render_file = buf_detach(&file, NULL);
		diff_objset_release(fresh);
	} else {
		a->objects = *fresh;
	}
	*fresh = (struct diff_objset)DIFF_OBJSET_INIT;
	buf_release(&file);
	if (secret) {
		diff_objset_release(&a->objects);
		a->objects = plain;
	}
	a->decrypted = secret;
	return 0;
}

/*
 * Poll the source, and render when the app's tree changed. A failed poll
 * or render leaves the last good objects in place; *stale says so, and
 * the pass goes on enforcing them when there are any.
 */
static int load_app(struct controller *c, struct ctl_app *a, bool *stale,
		    struct err *err)
{
	struct source_poll_result r;
	struct diff_objset fresh = DIFF_OBJSET_INIT;
	struct buf file = BUF_INIT;
	char *dir = NULL;
	const char *cached = NULL; /* the render was read back from it */
	uint64_t now = clk_mono_ms();
	bool forced;
	int error;

	*stale = false;
	/*
	 * The source is polled on its own timer (source.interval), or when
	 * asked (a push webhook, a sync request); passes run by watch events
	 * and resyncs use the commit of the last poll.
	 */
	/* Taken and cleared at once: a webhook meanwhile is not lost. */
	forced = atomic_exchange(&a->force_poll, false);
	if (a->rendered[0] && !forced && a->polled_ms &&
	    now - a->polled_ms < a->spec->interval_ms / 10 * 9)
		return 0;
	/*
	 * A source that failed is tried again after its own backoff; until
	 * then the pass enforces the last good objects (and is no failure:
	 * the app's resyncs and watch events go on healing drift).
	 */
	if (a->rendered[0] && now < a->source_retry_ms) {
		*stale = true;
		err_set(err, ERR_GENERIC, "%s (next try in %llu s)",
			a->source_error ? a->source_error : "source failed",
			(unsigned long long)(a->source_retry_ms - now + 999) /
				1000);
		return 0;
	}
	if (!a->gs && (error = open_source(c, a, err)) < 0)
		goto failed;
	memset(&r, 0, sizeof(r));
	error = source_poll(a->gs, &r, err);
	a->polled_ms = now;
	ctl_count_source(c, a->spec->source.type, "poll", error >= 0);
	if (error < 0)
		goto failed;
	if (r.fetched)
		ctl_count_source(c, a->spec->source.type, "fetch", true);
	memcpy(a->seen, r.revision, sizeof(a->seen));
	if (!strcmp(r.tree, a->rendered)) {
		/* Same tree as the last render: nothing to render. */
		memcpy(a->commit, r.revision, sizeof(a->commit));
		memcpy(a->tree, r.tree, sizeof(a->tree));
		a->polled = true;
		a->source_failures = 0;
		a->source_retry_ms = 0;
		return 0;
	}
	/* Rendered by an earlier process (a restart): read it back. */
	if (app_spec_cacheable(a->spec) && render_path(a, r.tree, &file)) {
		app_render_cache_sweep(buf_cstr(&file));
		if (app_render_cache_read(buf_cstr(&file), &fresh)) {
			log_info("render read from the cache", "app",
				 a->spec->name, "revision", r.revision, "tree",
				 r.tree, NULL);
			cached = buf_cstr(&file);
			goto rendered;
		}
	}
	if ((error = source_checkout(a->gs, &dir, err)) < 0)
		goto failed;
	if ((error = app_spec_render(
		     a->spec, dir, r.revision, a->spec->source.subpath,
		     !a->spec->render.helm.kube_version &&
				     app_spec_renders_helm(a->spec, dir)
			     ? kube_version_of(c, a)
			     : NULL,
		     &fresh, NULL, err)) < 0)
		goto failed;
	log_info("rendered", "app", a->spec->name, "revision", r.revision,
		 "tree", r.tree, NULL);
rendered:
	if ((error = keep_render(a, r.tree, &fresh, cached, err)) < 0)
		goto failed;
	memcpy(a->commit, r.revision, sizeof(a->commit));
	memcpy(a->tree, r.tree, sizeof(a->tree));
	memcpy(a->rendered, r.tree, sizeof(a->rendered));
	a->polled = true;
	if (r.changed)
		source_mark_rendered(a->gs, r.tree, NULL);
	a->source_failures = 0;
	a->source_retry_ms = 0;
	free(dir);
	buf_release(&file);
	return 0;
failed:
	diff_objset_release(&fresh);
	free(dir);
	buf_release(&file);
	/* Credentials from a Secret are read again when the source opens. */
	if (a->spec->secret_ref && a->gs) {
		source_free(a->gs);
		a->gs = NULL;
	}
	/* The same schedule as the queue's: 5 s doubling to 5 min, jittered. */
	a->source_failures++;
	a->source_retry_ms = now + queue_backoff_ms(a->source_failures,
						    QUEUE_BACKOFF_BASE_MS,
						    QUEUE_BACKOFF_MAX_MS) *
					   (80 + (uint64_t)(random() % 21)) /
					   100;
	free(a->source_error);
	a->source_error = strdup(err_first(err));
	if (!a->rendered[0])
		return error;
	/* Keep enforcing the last good revision while the source is down. */
	*stale = true;
	return 0;
}

/*
 * One log line per object written, with the fields others had changed
 * (`notes`, "<object>" -> note) for an object healed.
 */
static void log_writes(const char *app, const char *revision,
		       const struct app_sync_result *res, const json_t *notes)
{
	for (size_t i = 0; i < res->nentries; i++) {
		const struct app_sync_entry *e = &res->entries[i];
		const char *object = e->object ? e->object : "(app)";
		const char *drift = e->object ? json_string_value(
						json_object_get(notes, e->object))
					      : NULL;

		/* Without a note the list of pairs ends before "drift". */
		log_info("object written", "app", app, "revision", revision,
			 "object", object, "result", e->result,
			 drift ? "drift" : NULL, drift, NULL);
	}
}

/* "<group>/<kind>/<namespace>/<name>": the key of a->written. */
static void key_text(const struct diff_key *k, struct buf *out)
{
	buf_reset(out);
	buf_addf(out, "%s/%s/%s/%s", k->group, k->kind, k->ns, k->name);
}

/* key_text() of a live object. */
static bool object_key(const json_t *obj, struct buf *out)
{
	struct diff_key k;

	if (diff_key_from_object(&k, obj, NULL) < 0)
		return false;
	key_text(&k, out);
	diff_key_release(&k);
	return true;
}

/*
 * Whether the cache's copy is older than what this app wrote last. The
 * API server's resourceVersions are opaque, but in practice they are
 * etcd revisions, which only grow; when either one is not a number the
 * cache is trusted (at worst one apply that changes nothing).
 */
static bool older_than_written(const char *cached, const char *written)
{
	char *end1, *end2;
	unsigned long long a, b;

	if (!cached || !written)
		return false;
	a = strtoull(cached, &end1, 10);
	b = strtoull(written, &end2, 10);
	return !*end1 && !*end2 && end1 != cached && end2 != written && a < b;
}

static const char *rv_of(const json_t *obj)
{
	return json_string_value(json_object_get(
		json_object_get(obj, "metadata"), "resourceVersion"));
}

/*
 * The watch a (resource, namespace) read uses: one watch of every
 * namespace per resource type serves all apps (one connection, however
 * many namespaces); when that is refused (a role limited to some
 * namespaces), one per namespace. *scope_ns gets the namespace the
 * watch is of (NULL: every namespace).
 */
static int ensure_watch(struct kube_watchcache *wc,
			const struct kube_resource *res, const char *ns,
			const char **scope_ns)
{
	int error = kube_watchcache_watch(wc, res, NULL, WATCH_SELECTOR, NULL);

	*scope_ns = NULL;
	if (!res->namespaced || !ns)
		return error < 0 ? ERR_NOTFOUND : 0;
	if (error < 0 || kube_watchcache_refused(wc, res, NULL, WATCH_SELECTOR))
		*scope_ns = ns;
	if (*scope_ns &&
	    kube_watchcache_watch(wc, res, ns, WATCH_SELECTOR, NULL) < 0)
		return ERR_NOTFOUND;
	return 0;
}

/*
 * The app.list_hook: this app's objects of (res, ns) from the watch cache,
 * starting the watch the first time. A pass that relists (the first, and
 * one per resync) and a watch not yet synced read the server instead. An
 * object the cache still has in a version older than the one this app
 * wrote is left out, so the app reads it with a GET.
 */
static int cache_list(const struct app *app, const struct kube_resource *res,
		      const char *ns, json_t **items, void *ctx)
{
	struct ctl_app *a = ctx;
	struct kube_watchcache *wc = app_wc(a->ctl, a);
	struct buf key = BUF_INIT;
	json_t *mine, *obj;
	const char *scope;
	size_t i;

	*items = NULL;
	if (ensure_watch(wc, res, ns, &scope) < 0 || a->relist ||
	    kube_watchcache_list_part_of(wc, res, scope, WATCH_SELECTOR, app->id,
				    scope ? NULL : ns, &mine, NULL) < 0)
		return ERR_NOTFOUND;
	for (i = 0; json_object_size(a->written) && i < json_array_size(mine);) {
		const char *w;

		obj = json_array_get(mine, i);
		if (!object_key(obj, &key)) {
			i++;
			continue;
		}
		w = json_string_value(
			json_object_get(a->written, buf_cstr(&key)));
		if (older_than_written(rv_of(obj), w)) {
			json_array_remove(mine, i);
			continue;
		}
		if (w)
			json_object_del(a->written, buf_cstr(&key));
		i++;
	}
	buf_release(&key);
	*items = mine;
	return 0;
}

/* The app.applied callback: remember the write for the echo and fights. */
static void on_applied(const struct diff_key *key, const json_t *stored,
		       void *ctx)
{
	struct ctl_app *a = ctx;
	struct controller *c = a->ctl;
	const char *rv = rv_of(stored);
	struct buf k = BUF_INIT;

	if (a->fights)
		fights_written(a->fights, key);
	ctl_event_applied(a, key, stored);
	if (!rv || strlen(rv) >= sizeof(c->echo[0]))
		return;
	key_text(key, &k);
	json_object_set_new(a->written, buf_cstr(&k), json_string(rv));
	buf_release(&k);
	pthread_mutex_lock(&c->lock);
	snprintf(c->echo[c->echo_next], sizeof(c->echo[0]), "%s", rv);
	c->echo_next = (c->echo_next + 1) % ECHO_MAX;
	pthread_mutex_unlock(&c->lock);
}

static void on_failed(const struct diff_key *key, const char *why, void *ctx)
{
	ctl_event_failed(ctx, key, why);
}

static void on_pruned(const json_t *live, void *ctx)
{
	ctl_event_pruned(ctx, live);
}

/*
 * The watch cache's callback: a managed object changed. Our own writes'
 * echoes are ignored; anything else runs the app soon.
 */
void ctl_on_change(const char *id, const char *rv, void *ctx)
{
	struct controller *c = ctx;
	char name[QUEUE_NAME_MAX + 1] = "";

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; rv && *rv && i < ECHO_MAX; i++)
		if (!strcmp(c->echo[i], rv))
			goto out;
	for (size_t i = 0; i < c->napps; i++)
		if (!strcmp(c->apps[i]->id, id)) {
			snprintf(name, sizeof(name), "%s",
				 c->apps[i]->spec->name);
			break;
		}
	if (*name && c->q)
		queue_enqueue_after(c->q, name, WATCH_DEBOUNCE_MS);
out:
	pthread_mutex_unlock(&c->lock);
}

/*
 * Confirm the pass's drift with the server before it is reported or
 * written (verify: dryRun). A dry run that cannot be sent keeps the local
 * verdict, logged; only running out of memory fails the pass.
 */
static int verify(struct controller *c, struct ctl_app *a, struct app *app,
		  struct diff_report *report, const struct diff_objset *desired,
		  const struct diff_schemas *reg,
		  const struct diff_options *dopts, struct err *err)
{
	struct app_verify_stats st;
	struct err e = ERR_INIT;
	char n[24];
	int error;

	error = app_verify(app, report, desired, reg, dopts, &a->verify_memo,
			   &st, &e);
	if (err_count(&e))
		log_warn("drift not confirmed", "app", a->spec->name, "error",
			 err_first(&e), NULL);
	if (error == ERR_NOMEM) {
		err_move(err, &e);
		return error;
	}
	err_release(&e);
	if (st.candidates) {
		char d[24], cl[24], rf[24];

		snprintf(n, sizeof(n), "%zu", st.dry_runs);
		snprintf(d, sizeof(d), "%zu", st.remembered);
		snprintf(cl, sizeof(cl), "%zu", st.cleared);
		snprintf(rf, sizeof(rf), "%zu", st.refused);
		log_info("drift confirmed with the server", "app",
			 a->spec->name, "dryRuns", n, "remembered", d,
			 "inSync", cl, "refused", rf, NULL);
	}
	if (c->metrics && st.dry_runs) {
		/* Per verdict, of this pass's requests. */
		const char *labels[] = {"app", a->spec->name, "verdict", NULL,
					NULL};

		labels[3] = "insync";
		metrics_counter_add(c->metrics, "syncd_verify_dry_runs_total",
				    labels, (double)st.sent_cleared);
		labels[3] = "refused";
		metrics_counter_add(c->metrics, "syncd_verify_dry_runs_total",
				    labels, (double)st.sent_refused);
		labels[3] = "drift";
		metrics_counter_add(c->metrics, "syncd_verify_dry_runs_total",
				    labels,
				    (double)(st.dry_runs - st.sent_cleared -
					     st.sent_refused));
	}
	return 0;
}

/*
 * An App manages objects of its own namespace only, unless appObjects
 * allows more (config_object_may_manage()): checked for every object
 * before anything is written, so a refused app writes nothing at all.
 */
static int check_namespaces(struct controller *c, struct ctl_app *a,
			    const struct diff_objset *desired, struct err *err)
{
	const char *app_ns = a->spec->object_ns;
	struct buf name = BUF_INIT;
	int error = 0;

	if (!config_object_may_manage(c->cfg, app_ns,
				      app_namespace(c, a->spec)))
		return err_set(err, ERR_INVALID,
			       "spec.namespace: an App of namespace %s may "
			       "not manage objects of namespace %s "
			       "(appObjects.targets or clusterWide in "
			       "syncd's configuration allow it)",
			       app_ns, app_namespace(c, a->spec));
	for (size_t i = 0; i < desired->len; i++) {
		const struct diff_key *k = &desired->items[i]->key;
		const struct kube_resource *res = NULL;
		const char *ns = *k->ns ? k->ns : app_namespace(c, a->spec);
		struct err e = ERR_INIT;
		bool namespaced = true;

		/* A kind not served yet (a CRD of the app): as declared. */
		if (kube_discovery_find(c->conn.disc, k->group, NULL, k->kind,
					&res, &e) == 0)
			namespaced = res->namespaced;
		else
			namespaced = *k->ns != '\0';
		err_release(&e);
		if (config_object_may_manage(c->cfg, app_ns,
					     namespaced ? ns : NULL))
			continue;
		buf_reset(&name);
		diff_key_format(k, &name);
		if (namespaced)
			error = err_set(err, ERR_INVALID,
					"%s: an App of namespace %s may not "
					"manage objects of namespace %s "
					"(appObjects.targets or clusterWide "
					"in syncd's configuration allow it)",
					buf_cstr(&name), app_ns, ns);
		else
			error = err_set(err, ERR_INVALID,
					"%s: an App of namespace %s may not "
					"manage cluster-scoped objects "
					"(appObjects.clusterWide in syncd's "
					"configuration allows it)",
					buf_cstr(&name), app_ns);
		break;
	}
	buf_release(&name);
	return error;
}

/*
 * The verdicts this pass may reuse and add to (NULL: none): those made on
 * the same render kept on disk (which names the source tree and the
 * spec) under the same config, while no fight holds a field. A render
 * held in memory only (SOPS) keeps none.
 */
static struct app_memo *pass_memo(struct controller *c, struct ctl_app *a)
{
	char basis[64];
	struct buf b = BUF_INIT;
	unsigned long gen;
	bool ok;

	if (!a->render_file || a->decrypted ||
	    (a->fights && fights_count(a->fights)))
		return NULL;
	pthread_mutex_lock(&c->lock);
	gen = c->cfg_gen;
	pthread_mutex_unlock(&c->lock);
	snprintf(basis, sizeof(basis), "%lu ", gen);
	ok = buf_adds(&b, basis) >= 0 && buf_adds(&b, a->render_file) >= 0 &&
	     app_memo_begin(a->memo, buf_cstr(&b)) == 0;
	buf_release(&b);
	return ok ? a->memo : NULL;
}

static int pass(struct controller *c, struct ctl_app *a)
{
	const struct app_spec *ca = a->spec;
	struct diff_options dopts = DIFF_OPTIONS_INIT;
	struct app_sync_options so = {0};
	struct app_sync_result res = APP_SYNC_RESULT_INIT;
	struct diff_objset desired = DIFF_OBJSET_INIT;
	struct diff_schemas *reg = NULL;
	struct diff_report *report = NULL;
	struct err err = ERR_INIT;
	struct app app;
	struct app_health health = {0};
	struct buf why = BUF_INIT;
	bool have_health = false;
	char counts[160], reused[24];
	bool stale = false, act = false;
	uint64_t now = clk_mono_ms();
	int error, rc = -1;

	/* A standby replica does not run passes (see controller_start). */
	if (!c->leading)
		return 0;

	/*
	 * With watches on, passes read the watch cache, resyncs too; the
	 * first pass and one per relist period (at least the resync) list
	 * the server, as a safety net: a watch event lost for good (the
	 * cache relists by itself when its watch breaks) only delays
	 * convergence until then.
	 */
	a->relist = !app_wc(c, a) || !a->listed_ms ||
		    now - a->listed_ms >= (c->cfg->relist_ms > c->cfg->resync_ms
						   ? c->cfg->relist_ms
						   : c->cfg->resync_ms) /
						  10 * 9;
	if (a->relist)
		json_object_clear(a->written);
	memset(&app, 0, sizeof(app));
	a->fail_reason = NULL;
	ctl_status_seed(c, a);
	if (!deps_ready(c, a, &why)) {
		/* Not now: a dependency's health change runs it again. */
		log_info("waiting for a dependency", "app", ca->name,
			 "waiting", buf_cstr(&why), NULL);
		ctl_status_waiting(a, buf_cstr(&why));
		buf_release(&why);
		return 0;
	}
	if (a->cluster && (error = ctl_cluster_open(a->cluster, &err)) < 0) {
		a->fail_reason = "ClusterUnreachable";
		goto fail;
	}
	a->fail_reason = "SourceFailed";
	if ((error = load_app(c, a, &stale, &err)) < 0)
		goto fail;
	if (stale) {
		log_warn("source failed, enforcing the last good revision",
			 "app", ca->name, "revision", a->commit, "error",
			 err_first(&err), NULL);
		err_reset(&err);
	}
	dopts.field_manager = c->cfg->field_manager;
	dopts.policy = ca->foreign_fields;
	dopts.ignore = ca->ignore;
	dopts.nignore = ca->nignore;
	if (a->render_file && !a->decrypted &&
	    !app_render_cache_read(a->render_file, &desired)) {
		/* The file went away: render again in the next pass. */
		error = err_set(&err, ERR_IO,
				"the render kept in %s cannot be read; the app "
				"renders again",
				a->render_file);
		free(a->render_file);
		a->render_file = NULL;
		a->rendered[0] = '\0';
		a->force_poll = true;
		goto fail;
	}
	if (((!a->render_file || a->decrypted) &&
	     (error = copy_objects(&desired, &a->objects, &err)) < 0) ||
	    (error = app_init(&app, app_client(c, a), app_disc(c, a),
			      ca->name, app_namespace(c, ca),
			      dopts.field_manager, &err)) < 0)
		goto fail;
	app_use_spec(&app, ca);
	if (ca->object_ns && (error = check_namespaces(c, a, &desired,
						       &err)) < 0) {
		a->fail_reason = "NamespaceNotAllowed";
		goto fail; /* nothing is written */
	}
	a->fail_reason = "SyncFailed";
	/* Impersonated reads go to the server: the cache reads as syncd. */
	if (app_wc(c, a) && !a->client) {
		app.list_hook = cache_list;
		app.list_ctx = a;
	}
	if (a->fights && c->cfg->fight_changes) {
		dopts.hold = fights_hold;
		dopts.hold_ctx = a->fights;
	}
	app.health_rules = c->cfg->health;
	app.memo = pass_memo(c, a);
	error = app_compare(&app, &desired, &dopts, &reg, &report, a->commit,
			    &err);
	if (error == ERR_NOTFOUND && report)
		err_reset(&err); /* unserved kinds fail, the rest goes on */
	else if (error < 0)
		goto fail;
	if (!a->cluster)
		c->api_ok = true;
	if (a->relist)
		a->listed_ms = now;
	/*
	 * A fight started or ended: compare again, so this pass does not
	 * write a field found fighting, and writes one whose fight ended.
	 */
	if (dopts.hold && fights_observe(a->fights, report, now) > 0) {
		diff_report_free(report);
		report = NULL;
		if ((error = diff_compare(&report, &desired, &app.live, reg,
					  &dopts, a->commit, &err)) < 0)
			goto fail;
		app_report_options(report, &desired);
	}
	if (ca->verify == APP_VERIFY_DRY_RUN &&
	    (error = verify(c, a, &app, report, &desired, reg, &dopts,
			    &err)) < 0)
		goto fail;
	if ((error = app_health_of(&app, report, &health, &err)) < 0)
		goto fail;
	have_health = true;
	snprintf(reused, sizeof(reused), "%zu", app.reused);
	a->cur_report = report;
	a->cur_app = &app;
	ctl_event_foreign(a, report);
	act = ca->self_heal && dopts.policy != DIFF_POLICY_REPORT &&
	      c->leading;
	if (!act) {
		if (diff_report_has_drift(report))
			log_warn("drift reported, not healed", "app", ca->name,
				 "revision", a->commit, NULL);
		log_info("pass done", "app", ca->name, "revision", a->commit,
			 "drift", diff_report_has_drift(report) ? "true"
								: "false",
			 "reused", reused, NULL);
		rc = 0;
		goto out;
	}
	app_sync_options_from_spec(&so, ca);
	so.applied = on_applied;
	so.failed = on_failed;
	so.pruned = on_pruned;
	so.applied_ctx = a;
	so.health_rules = c->cfg->health; /* waves: never wait in a pass */
	a->drift_notes = json_object();
	if (ca->object_ns && diff_report_has_drift(report)) {
		/* The App shows the drift before it is healed. */
		struct diff_summary sum;

		diff_report_summary(report, &sum);
		ctl_objects_status(c, a, &sum);
	}
	if (app_sync(&app, report, &desired, &so, &res, &err) < 0)
		goto fail;
	log_writes(ca->name, a->commit, &res, a->drift_notes);
	if (res.waiting) {
		/* The status says what the pass waits for. */
		log_info("waiting for a wave", "app", ca->name, "revision",
			 a->commit, "waiting", res.waiting, NULL);
		app_health_release(&health);
		health.state = HEALTH_PROGRESSING;
		health.message = strdup(res.waiting);
	} else if (res.applied || res.pruned) {
		/*
		 * What the pass read is from before its writes: the status
		 * keeps the last health until the objects are read again.
		 */
		have_health = false;
		pthread_mutex_lock(&c->lock);
		if (c->q)
			queue_enqueue_after(c->q, ca->name, HEALTH_REREAD_MS);
		pthread_mutex_unlock(&c->lock);
	}
	snprintf(counts, sizeof(counts),
		 "applied=%zu unchanged=%zu pruned=%zu kept=%zu failed=%zu "
		 "fighting=%zu",
		 res.applied, res.unchanged, res.pruned, res.kept, res.failed,
		 a->fights ? fights_count(a->fights) : 0);
	if (res.failed) {
		log_error("pass failed", "app", ca->name, "revision",
			  a->commit, "counts", counts, "error",
			  err_first(&res.failures), NULL);
		err_move(&err, &res.failures);
		goto out;
	}
	log_info("pass done", "app", ca->name, "revision", a->commit,
		 "counts", counts, "reused", reused, NULL);
	rc = 0;
	goto out;
fail:
	if (err.code == ERR_CANCELED) {
		/*
		 * Leadership ended mid-pass: its writes stopped, and the
		 * status stays as it was (the next leader finishes the pass).
		 */
		log_warn("pass stopped", "app", ca->name, "revision", a->commit,
			 "reason", err_first(&err), NULL);
		goto quiet;
	}
	if (a->cluster && !atomic_load(&a->cluster->up)) {
		struct err named = ERR_INIT;

		/* Say which cluster did not answer. */
		a->fail_reason = "ClusterUnreachable";
		if (strncmp(err_first(&err), "cluster ", 8)) {
			err_set(&named, error, "cluster %s: %s",
				ctl_cluster_name(a->cluster), err_first(&err));
			err_reset(&err);
			err_move(&err, &named);
		}
		err_release(&named);
	}
	log_error("pass failed", "app", ca->name, "cluster",
		  ctl_cluster_name(a->cluster), "revision",
		  a->commit[0] ? a->commit : a->seen,
		  "error", err_first(&err), NULL);
out:
	a->cur_app = &app; /* the health Event names the inventory */
	if (!rc)
		a->fail_reason = NULL;
	ctl_status_pass(c, a, report, have_health ? &health : NULL, &res, act,
			rc ? err_first(&err) : NULL,
			stale ? a->source_error : NULL,
			(double)(clk_mono_ms() - now) / 1000.0);
quiet:
	a->cur_report = NULL;
	a->cur_app = NULL;
	json_decref(a->drift_notes);
	a->drift_notes = NULL;
	app_health_release(&health);
	app_sync_result_release(&res);
	diff_report_free(report);
	diff_schemas_free(reg);
	diff_objset_release(&desired);
	app_release(&app);
	err_release(&err);
	return rc;
}

static int reconcile(const char *name, void *ctx)
{
	struct controller *c = ctx;
	struct ctl_app *a = find_app(c, name);
	uint64_t end;
	int rc;

	if (!a)
		return -1;
	rc = pass(c, a);
	a->failed = rc != 0;
	/* A held field is written again when its window ends: be there. */
	if (a->fights && (end = fights_next_end_ms(a->fights, clk_mono_ms()))) {
		pthread_mutex_lock(&c->lock);
		if (c->q)
			queue_enqueue_after(c->q, name, end);
		pthread_mutex_unlock(&c->lock);
	}
	return rc;
}

/* The kube client's response hook: syncd_kube_requests_total. */
static void on_response(const char *verb, int code, void *ctx)
{
	struct controller *c = ctx;
	char n[16];
	const char *labels[] = {"cluster", CONFIG_HOME_CLUSTER, "verb", verb,
				"code",	   n,			NULL};

	snprintf(n, sizeof(n), "%d", code);
	metrics_counter_add(c->metrics, "syncd_kube_requests_total", labels,
			    1);
}

int controller_new(struct controller **out, const struct config *cfg,
		   struct metrics *metrics, struct err *err)
{
	struct kube_config_options co = {cfg->kubeconfig, cfg->context, true};
	struct kube_client_options ko = {0};
	struct kube_watchcache_options wo = {0};
	struct kube_events_options eo = {0};
	struct controller *c;
	int error;

	*out = NULL;
	if (!(c = calloc(1, sizeof(*c))))
		return err_set(err, ERR_NOMEM, "out of memory");
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->switch_lock, NULL);
	c->cfg = cfg;
	c->metrics = metrics;
	ctl_metrics_declare(metrics);
	if (metrics) {
		ko.on_response = on_response;
		ko.on_response_ctx = c;
	}
	/*
	 * A kubeconfig named in the file is used as is; without one the
	 * in-cluster config comes first, then the default kubeconfig.
	 */
	co.prefer_in_cluster = !cfg->kubeconfig;
	ko.qps = cfg->qps;
	ko.burst = cfg->burst;
	ctl_write_guard(c, &ko);
	if ((error = app_conn_open_with(&c->conn, &co, &ko, err)) < 0 ||
	    (error = ctl_clusters_new(c, err)) < 0)
		goto fail;
	if (cfg->napps &&
	    !(c->apps = calloc(cfg->napps, sizeof(*c->apps)))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < cfg->napps; i++) {
		if ((error = new_app(&c->apps[i], c, &cfg->apps[i], err)) < 0)
			goto fail;
		c->napps++;
	}
	wo.changed = ctl_on_change;
	wo.ctx = c;
	/* Health is read from status, and a change of it is worth a pass. */
	wo.keep_status = true;
	if (cfg->watch &&
	    (error = kube_watchcache_new(&c->wc, c->conn.client, &wo, err)) < 0)
		goto fail;
	if (cfg->events) {
		eo.client = c->conn.client;
		eo.instance = getenv("POD_NAME");
		if ((error = kube_events_new(&c->events, &eo, err)) < 0)
			goto fail;
	}
	*out = c;
	return 0;
fail:
	controller_free(c);
	return error;
}

/* A queue for the apps (timers: poll and resync; none with --once). */
static int start_queue(struct controller *c, bool timers, struct err *err)
{
	struct queue_options qo = QUEUE_OPTIONS_INIT;
	struct queue *q = NULL;
	int error;

	qo.workers = c->cfg->workers;
	qo.reconcile = reconcile;
	qo.ctx = c;
	if ((error = queue_new(&q, &qo, err)) < 0)
		return error;
	pthread_mutex_lock(&c->lock);
	c->q = q;
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < c->napps; i++) {
		const struct app_spec *ca = c->apps[i]->spec;

		error = queue_set_app(q, ca->name,
				      timers ? ca->interval_ms : 0,
				      timers ? c->cfg->resync_ms : 0);
		if (error < 0)
			return err_set(err, error, "app \"%s\": cannot queue",
				       ca->name);
	}
	return 0;
}

/* Stop the queue (passes in flight finish) and forget it. */
static int stop_queue(struct controller *c, unsigned grace_ms)
{
	struct queue *q;
	int error;

	if (!c->q)
		return 0;
	error = queue_stop(c->q, grace_ms);
	if (error < 0)
		return error; /* still running: the caller exits */
	pthread_mutex_lock(&c->lock);
	q = c->q;
	c->q = NULL;
	pthread_mutex_unlock(&c->lock);
	queue_free(q);
	return 0;
}

int controller_run_once(struct controller *c, struct err *err)
{
	int error, failed = 0;

	/* One pass of every app, without leader election. */
	c->leading = true;
	if ((error = start_queue(c, false, err)) < 0)
		return error;
	if ((error = queue_wait_idle(c->q, ONCE_TIMEOUT_MS)) < 0)
		return err_set(err, error, "apps did not finish in time");
	stop_queue(c, ONCE_TIMEOUT_MS);
	for (size_t i = 0; i < c->napps; i++)
		failed += c->apps[i]->failed;
	return failed;
}

static void set_leading(struct controller *c, bool leading)
{
	const char *none[] = {NULL};

	c->leading = leading;
	if (c->metrics)
		metrics_gauge_set(c->metrics, "syncd_leader", none,
				  leading ? 1 : 0);
}

static void started_leading(void *ctx)
{
	struct controller *c = ctx;

	log_info("leading: this replica writes", "identity",
		 kube_leader_identity(c->leader), NULL);
	set_leading(c, true);
	/* Every app at once: the previous leader may have left drift. */
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; c->q && i < c->napps; i++)
		queue_enqueue(c->q, c->apps[i]->spec->name);
	pthread_mutex_unlock(&c->lock);
}

static void stopped_leading(void *ctx)
{
	struct controller *c = ctx;

	set_leading(c, false);
	log_warn("no longer leading: this replica stops writing", "identity",
		 kube_leader_identity(c->leader), NULL);
}

static void new_leader(const char *identity, void *ctx)
{
	struct controller *c = ctx;

	c->api_ok = true;
	log_info("leader", "identity", *identity ? identity : "(none)", NULL);
}

static void leader_failed(const struct err *err, void *ctx)
{
	(void)ctx;
	log_warn("leader election", "error", err_first(err), NULL);
}

/* Leader election: passes run only while this replica holds the Lease. */
static int start_election(struct controller *c, struct err *err)
{
	struct kube_leader_options lo = KUBE_LEADER_OPTIONS_INIT;
	struct kube_client_options ko = {0};
	const char *ns = c->cfg->leader.namespace;
	int error;

	if (!ns)
		ns = c->conn.cfg.namespace && *c->conn.cfg.namespace
			     ? c->conn.cfg.namespace
			     : "default";
	lo.namespace = ns;
	lo.name = c->cfg->leader.name ? c->cfg->leader.name : "syncd";
	lo.identity = getenv("POD_NAME");
	lo.lease_ms = (long)c->cfg->leader.lease_ms;
	lo.renew_ms = (long)c->cfg->leader.renew_ms;
	lo.retry_ms = (long)c->cfg->leader.retry_ms;
	lo.started_leading = started_leading;
	lo.stopped_leading = stopped_leading;
	lo.new_leader = new_leader;
	lo.failed = leader_failed;
	lo.ctx = c;
	/*
	 * The elector's own client: each attempt must end well within the
	 * renew deadline, so one retry and short timeouts (the shared
	 * client retries for minutes).
	 */
	ko.connect_timeout_ms = (long)c->cfg->leader.retry_ms;
	ko.timeout_ms = (long)c->cfg->leader.renew_ms / 2;
	ko.max_retries = 1;
	ko.qps = 20;
	ko.burst = 20;
	/* Its Lease requests count in syncd_kube_requests_total too. */
	if (c->metrics) {
		ko.on_response = on_response;
		ko.on_response_ctx = c;
	}
	if ((error = kube_client_new(&c->leader_client, &c->conn.cfg, &ko,
				     err)) < 0 ||
	    (error = kube_leader_new(&c->leader, c->leader_client, &lo, err)) < 0)
		return error;
	log_info("leader election: waiting for the Lease", "lease", lo.name,
		 "namespace", ns, "identity", kube_leader_identity(c->leader),
		 NULL);
	return kube_leader_start(c->leader, err);
}

int controller_start(struct controller *c, struct err *err)
{
	int error;

	set_leading(c, !c->cfg->leader.enabled);
	if ((error = start_queue(c, true, err)) < 0)
		return error;
	if (c->cfg->leader.enabled &&
	    (error = start_election(c, err)) < 0)
		return error;
	pthread_mutex_lock(&c->lock);
	c->started = true;
	pthread_mutex_unlock(&c->lock);
	return ctl_objects_start(c, err);
}

/* The app of the running set named `name`, or NULL. */
/*
 * An app removed with deletionPolicy: delete takes its objects with it
 * (the leader does it, once; passes are stopped meanwhile).
 */
static void delete_removed(struct controller *c, struct ctl_app *a)
{
	const struct app_spec *ca = a->spec;
	struct app_sync_options so;
	struct app_sync_result res = APP_SYNC_RESULT_INIT;
	struct err err = ERR_INIT;
	struct app app;
	char counts[96];

	if (!c->leading)
		return;
	memset(&app, 0, sizeof(app));
	app_sync_options_from_spec(&so, ca);
	so.pruned = on_pruned;
	so.failed = on_failed;
	so.applied_ctx = a;
	if (app_init(&app, app_client(c, a), app_disc(c, a), ca->name,
		     app_namespace(c, ca), c->cfg->field_manager, &err) < 0 ||
	    app_delete(&app, &so, &res, &err) < 0) {
		log_error("app removed, deleting its objects failed", "app",
			  ca->name, "error", err_first(&err), NULL);
	} else {
		snprintf(counts, sizeof(counts), "pruned=%zu kept=%zu failed=%zu",
			 res.pruned, res.kept, res.failed);
		if (res.failed)
			log_error("app removed, some objects not deleted", "app",
				  ca->name, "counts", counts, "error",
				  err_first(&res.failures), NULL);
		else
			log_info("app removed, its objects deleted", "app",
				 ca->name, "counts", counts, NULL);
	}
	app_sync_result_release(&res);
	app_release(&app);
	err_release(&err);
}

static struct ctl_app *take_app(struct ctl_app **apps, size_t n,
				const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (apps[i] && !strcmp(apps[i]->spec->name, name)) {
			struct ctl_app *a = apps[i];

			apps[i] = NULL;
			return a;
		}
	return NULL;
}

int ctl_switch(struct controller *c, const struct config *cfg,
	       const struct app_spec *const *specs, size_t nspecs,
	       struct controller_reload_result *res, struct err *err)
{
	struct ctl_app **apps = NULL, **pool = NULL, **dead = NULL, **old;
	size_t nold, ndead = 0, n, i;
	int error = 0;

	memset(res, 0, sizeof(*res));
	/*
	 * HTTP and watch threads read the running set: the new one is built
	 * beside it, swapped in under the lock, and what leaves is freed
	 * only then.
	 */
	pthread_mutex_lock(&c->lock);
	nold = c->napps;
	pool = calloc(nold + 1, sizeof(*pool));
	dead = calloc(nold + 1, sizeof(*dead));
	if (pool && nold) /* c->apps is NULL without apps */
		memcpy(pool, c->apps, nold * sizeof(*pool));
	pthread_mutex_unlock(&c->lock);
	if (!pool || !dead ||
	    (nspecs && !(apps = calloc(nspecs, sizeof(*apps))))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto fail;
	}
	/*
	 * New apps are made before anything stops, so a failure leaves the
	 * running set untouched; apps configured exactly as before keep
	 * their state (Git clone, last render, fights).
	 */
	for (i = 0; i < nspecs; i++) {
		const struct app_spec *ca = specs[i];
		struct ctl_app *a = find_app(c, ca->name);

		if (a && config_same_app(a->spec, ca))
			continue;
		if ((error = new_app(&apps[i], c, ca, err)) < 0)
			goto fail;
	}
	if ((error = stop_queue(c, RELOAD_GRACE_MS)) < 0) {
		err_set(err, error, "passes still running after %u s",
			RELOAD_GRACE_MS / 1000);
		goto fail;
	}
	for (i = 0; i < nspecs; i++) {
		struct ctl_app *prev = take_app(pool, nold, specs[i]->name);

		if (apps[i]) {
			res->added += !prev;
			res->changed += !!prev;
			if (prev)
				dead[ndead++] = prev;
			continue;
		}
		/* Unchanged: the same settings, borrowed from the new spec. */
		pthread_mutex_lock(&c->lock);
		prev->spec = specs[i];
		pthread_mutex_unlock(&c->lock);
		apps[i] = prev;
		res->unchanged++;
	}
	for (i = 0; i < nold; i++)
		if (pool[i]) {
			res->removed++;
			dead[ndead++] = pool[i];
			if (pool[i]->spec->deletion == APP_DELETION_DELETE)
				delete_removed(c, pool[i]);
		}
	for (i = n = 0; i < nspecs; i++)
		if (apps[i])
			apps[n++] = apps[i];
	pthread_mutex_lock(&c->lock);
	old = c->apps;
	c->apps = apps;
	c->napps = n;
	c->cfg = cfg;
	c->cfg_gen++;
	/* The same clusters (a change of them is a restart), new storage. */
	for (i = 0; i < c->nclusters && i < cfg->nclusters; i++)
		c->clusters[i].cfg = &cfg->clusters[i];
	pthread_mutex_unlock(&c->lock);
	for (i = 0; i < ndead; i++) {
		ctl_metrics_forget(c, dead[i]->spec->name);
		free_app(dead[i]);
	}
	free(old);
	free(pool);
	free(dead);
	/* From here on the controller runs `cfg`, whatever happens. */
	return start_queue(c, c->started, err);
fail:
	for (i = 0; apps && i < nspecs; i++)
		free_app(apps[i]);
	free(apps);
	free(pool);
	free(dead);
	return error;
}

int controller_reload(struct controller *c, const struct config *cfg,
		      struct controller_reload_result *res, struct err *err)
{
	const struct app_spec *const *objs = NULL;
	const struct app_spec **specs;
	size_t nobjs, n = 0;
	int error;

	memset(res, 0, sizeof(*res));
	if (!config_same_globals(c->cfg, cfg))
		return err_set(err, ERR_INVALID, "settings outside apps "
			       "changed: the controller must restart");
	pthread_mutex_lock(&c->switch_lock);
	nobjs = ctl_objects_specs(c, &objs);
	if (!(specs = calloc(cfg->napps + nobjs + 1, sizeof(*specs)))) {
		pthread_mutex_unlock(&c->switch_lock);
		return err_set(err, ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < cfg->napps; i++)
		specs[n++] = &cfg->apps[i];
	/* Apps of App objects stay, unless the file now has their name. */
	for (size_t i = 0; i < nobjs; i++) {
		bool clash = false;

		for (size_t j = 0; j < cfg->napps && !clash; j++)
			clash = !strcmp(cfg->apps[j].name, objs[i]->name);
		if (!clash)
			specs[n++] = objs[i];
	}
	error = ctl_switch(c, cfg, specs, n, res, err);
	pthread_mutex_unlock(&c->switch_lock);
	free(specs);
	return error;
}

int controller_stop(struct controller *c, unsigned grace_ms)
{
	struct err err = ERR_INIT;
	int error;

	ctl_objects_stop(c); /* no switch of the running set from now on */
	error = stop_queue(c, grace_ms);

	/* The work stopped: hand the Lease over at once (ReleaseOnCancel). */
	if (c->leader && kube_leader_stop(c->leader, true, &err) < 0)
		log_warn("releasing the Lease", "error", err_first(&err),
			 NULL);
	err_release(&err);
	kube_watchcache_stop(c->wc);
	ctl_clusters_stop(c);
	return error;
}

const struct config *controller_config(const struct controller *c)
{
	return c->cfg;
}

void controller_free(struct controller *c)
{
	if (!c)
		return;
	ctl_objects_stop(c);
	queue_free(c->q);
	kube_leader_free(c->leader);
	kube_client_free(c->leader_client);
	kube_watchcache_free(c->wc);
	kube_events_free(c->events);
	for (size_t i = 0; i < c->napps; i++)
		free_app(c->apps[i]);
	free(c->apps);
	ctl_objects_free(c); /* after the apps: they borrow its specs */
	ctl_clusters_free(c);
	app_conn_close(&c->conn);
	pthread_mutex_destroy(&c->switch_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
