/*
 * watchcache: one thread per (resource, namespace, selector) running
 * kube_watch() into an in-memory map; see watchcache.h.
 *
 * Locking: one mutex guards the list of watches and every map. A watch
 * thread takes it to apply an event, gathers the label values to report
 * while holding it and calls the `changed` callback after releasing it,
 * so the callback may read the cache.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "syncd/watchcache.h"

/* Delay before a failed watch starts over, doubling up to the cap. */
#define RESTART_BASE_MS 1000L
#define RESTART_CAP_MS	30000L

struct watch {
	struct watch *next;
	struct watchcache *wc;
	struct kube_resource res; /* our copy; verbs stay NULL */
	char *ns;		  /* NULL: every namespace */
	char *selector;		  /* NULL: all */
	json_t *objects;	  /* "namespace/name" -> object */
	bool synced;		  /* the first list arrived */
	bool running;		  /* the thread was started, not joined */
	pthread_t thread;
};

struct watchcache {
	struct kube_client *client;
	struct watchcache_options opts;
	pthread_mutex_t lock;
	struct watch *watches;
	volatile bool stop;
};

static bool same_str(const char *a, const char *b)
{
	if (!a || !*a)
		return !b || !*b;
	return b && !strcmp(a, b);
}

/* Namespace as stored: none for cluster-scoped or "every namespace". */
static const char *norm_ns(const struct kube_resource *r, const char *ns)
{
	return r->namespaced && ns && *ns ? ns : NULL;
}

/* The watch for that triple, or NULL. Called with the lock held. */
static struct watch *find_watch(struct watchcache *wc,
				const struct kube_resource *r, const char *ns,
				const char *selector)
{
	struct watch *w;

	ns = norm_ns(r, ns);
	for (w = wc->watches; w; w = w->next)
		if (same_str(w->res.group, r->group) &&
		    same_str(w->res.version, r->version) &&
		    same_str(w->res.name, r->name) && same_str(w->ns, ns) &&
		    same_str(w->selector, selector))
			return w;
	return NULL;
}

static void watch_free(struct watch *w)
{
	if (!w)
		return;
	free(w->res.group);
	free(w->res.version);
	free(w->res.name);
	free(w->res.kind);
	free(w->ns);
	free(w->selector);
	json_decref(w->objects);
	free(w);
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/* "namespace/name" of an object into key (size n); false without a name. */
static bool object_key(const json_t *obj, char *key, size_t n)
{
	const json_t *md = json_object_get(obj, "metadata");
	const char *name = json_string_value(json_object_get(md, "name"));
	const char *ns = json_string_value(json_object_get(md, "namespace"));
	int len;

	if (!name)
		return false;
	len = snprintf(key, n, "%s/%s", ns ? ns : "", name);
	return len > 0 && (size_t)len < n;
}

static const char *part_of(const json_t *obj)
{
	return json_string_value(json_object_get(
		json_object_get(json_object_get(obj, "metadata"), "labels"),
		WATCHCACHE_PART_OF_LABEL));
}

static const char *rv_of(const json_t *obj)
{
	return json_string_value(json_object_get(
		json_object_get(obj, "metadata"), "resourceVersion"));
}

/*
 * The object as stored: without status. A shallow copy is enough: the
 * cache never modifies what it stores, and the event's own value is
 * released by kube_watch after the callback. New reference or NULL.
 */
static json_t *strip(json_t *obj)
{
	json_t *copy;

	if (!json_object_get(obj, "status"))
		return json_incref(obj);
	copy = json_copy(obj);
	if (copy)
		json_object_del(copy, "status");
	return copy;
}

/* Add obj's label value to the list to report (once each). */
static void note(json_t *report, const json_t *obj)
{
	const char *v = part_of(obj);
	size_t i;

	if (!v || !report)
		return;
	for (i = 0; i < json_array_size(report); i++)
		if (!strcmp(json_string_value(json_array_get(report, i)), v))
			return;
	json_array_append_new(report, json_string(v));
}

/* A re-list: replace the map, reporting what differs. Lock held. */
static int apply_relist(struct watch *w, json_t *items, json_t *report)
{
	json_t *fresh = json_object(), *obj, *old;
	const char *key;
	char k[768];
	size_t i;
	int error = 0;

	if (!fresh)
		return ERR_NOMEM;
	json_array_foreach(items, i, obj)
	{
		json_t *stored;

		if (!object_key(obj, k, sizeof(k)))
			continue;
		if (!(stored = strip(obj)) ||
		    json_object_set_new(fresh, k, stored)) {
			error = ERR_NOMEM;
			goto out;
		}
		old = json_object_get(w->objects, k);
		if (!old || !same_str(rv_of(old), rv_of(obj))) {
			note(report, old);
			note(report, obj);
		}
	}
	json_object_foreach(w->objects, key, old)
	{
		if (!json_object_get(fresh, key))
			note(report, old);
	}
	json_decref(w->objects);
	w->objects = fresh;
	fresh = NULL;
	w->synced = true;
out:
	json_decref(fresh);
	return error;
}

/* One event into the map. Lock held. */
static int apply_event(struct watch *w, const char *type, json_t *obj,
		       json_t *report)
{
	json_t *old, *stored;
	char k[768];

	if (!object_key(obj, k, sizeof(k)))
		return 0;
	old = json_object_get(w->objects, k);
	if (!strcmp(type, "DELETED")) {
		note(report, old);
		note(report, obj);
		json_object_del(w->objects, k);
		return 0;
	}
	if (strcmp(type, "ADDED") && strcmp(type, "MODIFIED"))
		return 0;
	note(report, old);
	note(report, obj);
	if (!(stored = strip(obj)) ||
	    json_object_set_new(w->objects, k, stored))
		return ERR_NOMEM;
	return 0;
}

static int on_event(const struct kube_watch_event *ev, void *ctx)
{
	struct watch *w = ctx;
	struct watchcache *wc = w->wc;
	json_t *report = wc->opts.changed ? json_array() : NULL;
	size_t i;
	int error = 0;

	if (!strcmp(ev->type, "BOOKMARK"))
		goto out;
	pthread_mutex_lock(&wc->lock);
	if (!strcmp(ev->type, "RELIST"))
		error = apply_relist(w, ev->object, report);
	else
		error = apply_event(w, ev->type, ev->object, report);
	pthread_mutex_unlock(&wc->lock);
	for (i = 0; i < json_array_size(report); i++)
		wc->opts.changed(json_string_value(json_array_get(report, i)),
				 strcmp(ev->type, "RELIST") ? rv_of(ev->object)
							    : NULL,
				 wc->opts.ctx);
out:
	json_decref(report);
	/* A non-zero value ends kube_watch(); the thread starts over. */
	return error;
}

/* Sleep `ms` in small steps, returning early when the cache stops. */
static void nap(struct watchcache *wc, long ms)
{
	struct timespec ts;

	while (ms > 0 && !wc->stop) {
		long step = ms < 100 ? ms : 100;

		ts.tv_sec = 0;
		ts.tv_nsec = step * 1000000L;
		nanosleep(&ts, NULL);
		ms -= step;
	}
}

/*
 * The thread: kube_watch() lists first, then watches, resuming and
 * re-listing by itself. It returns only when stopped, after an
 * out-of-memory in on_event, or when the server stayed unreachable or
 * refused; the cache keeps serving its last state and starts over after
 * a capped backoff (a refused resource may be a CRD still being created).
 */
static void *run(void *arg)
{
	struct watch *w = arg;
	struct watchcache *wc = w->wc;
	struct kube_watch_options wo = {0};
	struct err err = ERR_INIT;
	long backoff = RESTART_BASE_MS;

	wo.label_selector = w->selector;
	wo.bookmarks = true;
	wo.timeout_s = wc->opts.watch_timeout_s;
	while (!wc->stop) {
		err_reset(&err);
		kube_watch(wc->client, &w->res, w->ns, &wo, on_event, w,
			   &wc->stop, &err);
		if (wc->stop)
			break;
		nap(wc, backoff);
		backoff = backoff * 2 > RESTART_CAP_MS ? RESTART_CAP_MS
						       : backoff * 2;
	}
	err_release(&err);
	return NULL;
}

int watchcache_new(struct watchcache **out, struct kube_client *client,
		   const struct watchcache_options *opts, struct err *err)
{
	struct watchcache *wc;

	*out = NULL;
	if (!(wc = calloc(1, sizeof(*wc))))
		return err_set(err, ERR_NOMEM, "watch cache: out of memory");
	wc->client = client;
	if (opts)
		wc->opts = *opts;
	if (pthread_mutex_init(&wc->lock, NULL)) {
		free(wc);
		return err_set(err, ERR_NOMEM, "watch cache: no mutex");
	}
	*out = wc;
	return 0;
}

int watchcache_watch(struct watchcache *wc,
		     const struct kube_resource *resource, const char *ns,
		     const char *label_selector, struct err *err)
{
	struct watch *w = NULL;
	int error = 0;

	pthread_mutex_lock(&wc->lock);
	if (wc->stop) {
		error = err_set(err, ERR_INVALID,
				"watch %s: the watch cache is stopping",
				resource->name);
		goto out;
	}
	if (find_watch(wc, resource, ns, label_selector))
		goto out;
	if (!(w = calloc(1, sizeof(*w))))
		goto nomem;
	w->wc = wc;
	w->res.namespaced = resource->namespaced;
	w->res.group = strdup(resource->group ? resource->group : "");
	w->res.version = dup_or_null(resource->version);
	w->res.name = dup_or_null(resource->name);
	w->res.kind = dup_or_null(resource->kind);
	w->objects = json_object();
	if (!w->res.group || !w->res.version || !w->res.name || !w->objects)
		goto nomem;
	if (norm_ns(resource, ns) && !(w->ns = strdup(ns)))
		goto nomem;
	if (label_selector && *label_selector &&
	    !(w->selector = strdup(label_selector)))
		goto nomem;
	if ((errno = pthread_create(&w->thread, NULL, run, w))) {
		error = err_set(err, ERR_IO,
				"watch %s: cannot start a thread: %s",
				resource->name, err_errno_str(errno));
		goto out;
	}
	w->running = true;
	w->next = wc->watches;
	wc->watches = w;
	w = NULL;
	goto out;
nomem:
	error = err_set(err, ERR_NOMEM, "watch %s: out of memory",
			resource->name);
out:
	pthread_mutex_unlock(&wc->lock);
	watch_free(w);
	return error;
}

bool watchcache_synced(struct watchcache *wc,
		       const struct kube_resource *resource, const char *ns,
		       const char *label_selector)
{
	struct watch *w;
	bool synced;

	pthread_mutex_lock(&wc->lock);
	w = find_watch(wc, resource, ns, label_selector);
	synced = w && w->synced;
	pthread_mutex_unlock(&wc->lock);
	return synced;
}

bool watchcache_all_synced(struct watchcache *wc)
{
	bool synced = true;

	pthread_mutex_lock(&wc->lock);
	for (struct watch *w = wc->watches; w && synced; w = w->next)
		synced = w->synced;
	pthread_mutex_unlock(&wc->lock);
	return synced;
}

int watchcache_list(struct watchcache *wc, const struct kube_resource *resource,
		    const char *ns, const char *label_selector, json_t **items,
		    struct err *err)
{
	struct watch *w;
	json_t *arr = NULL, *obj;
	const char *key;
	int error = 0;

	*items = NULL;
	pthread_mutex_lock(&wc->lock);
	w = find_watch(wc, resource, ns, label_selector);
	if (!w) {
		error = err_set(err, ERR_NOTFOUND, "%s: not watched",
				resource->name);
		goto out;
	}
	if (!w->synced) {
		error = err_set(err, ERR_TIMEOUT, "%s: not synced yet",
				resource->name);
		goto out;
	}
	if (!(arr = json_array()))
		goto nomem;
	json_object_foreach(w->objects, key, obj)
	{
		if (json_array_append(arr, obj))
			goto nomem;
	}
	*items = arr;
	arr = NULL;
	goto out;
nomem:
	error = err_set(err, ERR_NOMEM, "%s: out of memory", resource->name);
out:
	pthread_mutex_unlock(&wc->lock);
	json_decref(arr);
	return error;
}

void watchcache_stop(struct watchcache *wc)
{
	struct watch *w;

	if (!wc)
		return;
	/*
	 * Once stop is set under the lock no watch is added, so the list
	 * can be walked without it while the threads (which need the lock)
	 * finish.
	 */
	pthread_mutex_lock(&wc->lock);
	wc->stop = true;
	pthread_mutex_unlock(&wc->lock);
	for (w = wc->watches; w; w = w->next) {
		if (!w->running)
			continue;
		pthread_join(w->thread, NULL);
		w->running = false;
	}
}

void watchcache_free(struct watchcache *wc)
{
	struct watch *w, *next;

	if (!wc)
		return;
	watchcache_stop(wc);
	for (w = wc->watches; w; w = next) {
		next = w->next;
		watch_free(w);
	}
	pthread_mutex_destroy(&wc->lock);
	free(wc);
}
