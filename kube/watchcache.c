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

#include "kube/kube.h"
#include "util/json.h"
#include "util/zpack.h"

#include "util/banned.h" /* last */

/* Delay before a failed watch starts over, doubling up to the cap. */
#define RESTART_BASE_MS 1000L
#define RESTART_CAP_MS	30000L

struct watch {
	struct watch *next;
	struct kube_watchcache *wc;
	struct kube_resource res; /* our copy; verbs stay NULL */
	char *ns;		  /* NULL: every namespace */
	char *selector;		  /* NULL: all */
	/*
	 * The objects, as deflated compact JSON text (pack(): a json
	 * string of bytes each), grouped by the value of their part-of
	 * label ("" without one) so that one app's objects
	 * are found without looking at the others':
	 *   by_label: label value -> "namespace/name" -> text
	 * An object is looked for under the label it carries now, where it
	 * almost always was; only when it is not there are the other
	 * buckets searched (find_key()). No map from key to label is kept:
	 * at 10,000 objects it held about 2.4 MB.
	 */
	json_t *by_label;
	json_t *seen;		  /* keys of a paged re-list so far */
	/*
	 * This re-list began with nothing stored (the first list, mostly):
	 * one list names each key once, so none is stored before it is put,
	 * and none is left to forget at its end: no `seen` is kept.
	 */
	bool fresh;
	bool synced;		  /* the first list arrived */
	bool refused;		  /* the first list was refused (401/403) */
	bool running;		  /* the thread was started, not joined */
	pthread_t thread;
};

struct kube_watchcache {
	struct kube_client *client;
	struct kube_watchcache_options opts;
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
static struct watch *find_watch(struct kube_watchcache *wc,
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
	json_decref(w->by_label);
	json_decref(w->seen);
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
		KUBE_WATCHCACHE_PART_OF_LABEL));
}

static const char *rv_of(const json_t *obj)
{
	return json_string_value(json_object_get(
		json_object_get(obj, "metadata"), "resourceVersion"));
}

/*
 * Stored objects are compact JSON text, deflated (zlib, fastest level):
 * the cache is most of a controller's memory, and Kubernetes objects --
 * keys repeated, managedFields mirroring the fields -- deflate well. A
 * stored value is a JSON string of bytes (not text): what zpack() makes.
 */
static json_t *pack(const char *text, size_t len)
{
	size_t n = 0;
	unsigned char *b = zpack(text, len, &n);
	json_t *v = b ? json_stringn_nocheck((const char *)b, n) : NULL;

	free(b);
	return v;
}

/* An object parsed back from its stored value (new reference or NULL). */
static json_t *parse(const json_t *stored)
{
	size_t len = 0;
	char *text = zunpack((const unsigned char *)json_string_value(stored),
			     json_string_length(stored), &len);
	json_t *obj = text ? fastjson_load(text, len, NULL, NULL) : NULL;

	free(text);
	return obj;
}

/*
 * The object as stored: compact text, without status (not compared by
 * syncd, often the largest and busiest part) unless the cache keeps it.
 * New reference or NULL.
 */
static json_t *store_text(json_t *obj, bool keep_status)
{
	json_t *copy = !keep_status && json_object_get(obj, "status")
			       ? json_copy(obj)
			       : json_incref(obj);
	json_t *text = NULL;
	char *dump;

	if (!copy)
		return NULL;
	if (!keep_status)
		json_object_del(copy, "status");
	if ((dump = json_dumps(copy, JSON_COMPACT | JSON_PRESERVE_ORDER))) {
		text = pack(dump, strlen(dump));
		free(dump);
	}
	json_decref(copy);
	return text;
}

/*
 * A copy of a stored or live object without what a write of its status
 * subresource changes: status, resourceVersion and the managedFields
 * entries of "status" (their times). New reference or NULL.
 */
static json_t *without_status_writes(const json_t *obj)
{
	json_t *copy = json_deep_copy(obj), *md, *mf, *kept, *e;
	size_t i;

	if (!copy)
		return NULL;
	json_object_del(copy, "status");
	md = json_object_get(copy, "metadata");
	json_object_del(md, "resourceVersion");
	mf = json_object_get(md, "managedFields");
	if (json_is_array(mf) && (kept = json_array())) {
		json_array_foreach(mf, i, e)
		{
			if (!same_str(json_string_value(json_object_get(
					      e, "subresource")),
				      "status"))
				json_array_append(kept, e);
		}
		json_object_set_new(md, "managedFields", kept);
	}
	return copy;
}

/*
 * Whether `obj` differs from `old` (parsed back from the cache) only by
 * a status write, such as the ones controllers make all the time (a
 * Deployment's replica counts, an HPA's metrics): nothing syncd compares
 * changed, so no pass is needed for it.
 */
static bool only_status_changed(const struct watch *w, const json_t *old,
				const json_t *obj)
{
	json_t *a = without_status_writes(old);
	json_t *b = without_status_writes(obj);
	bool same = a && b && json_equal(a, b);

	/* A cache that keeps status reports its changes (health reads it). */
	if (same && w->wc->opts.keep_status) {
		const json_t *sa = json_object_get(old, "status");
		const json_t *sb = json_object_get(obj, "status");

		same = sa == sb || (sa && sb && json_equal(sa, sb));
	}
	json_decref(a);
	json_decref(b);
	return same;
}

/* Add a label value to the list to report (once each; NULL: none). */
static void note_value(json_t *report, const char *v)
{
	size_t i;

	if (!v || !*v || !report)
		return;
	for (i = 0; i < json_array_size(report); i++)
		if (!strcmp(json_string_value(json_array_get(report, i)), v))
			return;
	json_array_append_new(report, json_string(v));
}

/*
 * The stored text of key, or NULL, looked for in the bucket of `label`
 * (NULL: ""), then, when `anywhere`, in every bucket. *bucket_label (may
 * be NULL) is then the label of the bucket it is in, valid while that
 * bucket is. Lock held.
 */
static json_t *find_key(struct watch *w, const char *k, const char *label,
			bool anywhere, const char **bucket_label)
{
	json_t *text;
	void *it = json_object_iter_at(w->by_label, label ? label : "");

	if (it && (text = json_object_get(json_object_iter_value(it), k)))
		goto found;
	if (!anywhere)
		return NULL;
	for (it = json_object_iter(w->by_label); it;
	     it = json_object_iter_next(w->by_label, it))
		if ((text = json_object_get(json_object_iter_value(it), k)))
			goto found;
	return NULL;
found:
	if (bucket_label)
		*bucket_label = json_object_iter_key(it);
	return text;
}

/* Forget key (found as find_key() finds it). Lock held. */
static void drop_key(struct watch *w, const char *k, const char *label,
		     bool anywhere)
{
	const char *in = NULL;
	json_t *bucket;

	if (!find_key(w, k, label, anywhere, &in))
		return;
	bucket = json_object_get(w->by_label, in);
	json_object_del(bucket, k);
	if (!json_object_size(bucket))
		json_object_del(w->by_label, in); /* `in` is gone with it */
}

/*
 * Store obj under key, dropping what was stored before (found as
 * find_key() finds it). Lock held.
 */
static int put_key(struct watch *w, const char *k, json_t *obj,
		   bool anywhere)
{
	const char *label = part_of(obj);
	json_t *text = store_text(obj, w->wc->opts.keep_status), *bucket;

	if (!label)
		label = "";
	if (!text)
		return ERR_NOMEM;
	drop_key(w, k, label, anywhere);
	if (!(bucket = json_object_get(w->by_label, label))) {
		if (json_object_set_new(w->by_label, label,
					bucket = json_object())) {
			json_decref(text);
			return ERR_NOMEM;
		}
	}
	if (json_object_set_new(bucket, k, text))
		return ERR_NOMEM;
	return 0;
}

/*
 * One page of a re-list: store what changed (old objects are parsed back
 * only to compare resourceVersions, which a re-list, rare, needs) and
 * remember the keys seen. Lock held.
 */
static int relist_page(struct watch *w, json_t *items, json_t *report)
{
	json_t *obj, *old, *parsed;
	const char *was = NULL;
	char k[768];
	size_t i;
	bool anywhere;
	int error = 0;

	if (!w->fresh && !w->seen && !(w->seen = json_object()))
		return ERR_NOMEM;
	json_array_foreach(items, i, obj)
	{
		if (!object_key(obj, k, sizeof(k)))
			continue;
		anywhere = !w->fresh;
		if (!w->fresh && json_object_set_new(w->seen, k, json_true()))
			return ERR_NOMEM;
		old = find_key(w, k, part_of(obj), anywhere, &was);
		parsed = old ? parse(old) : NULL;
		if (!parsed || !same_str(rv_of(parsed), rv_of(obj))) {
			if (!parsed || !only_status_changed(w, parsed, obj)) {
				note_value(report, old ? was : NULL);
				note_value(report, part_of(obj));
			}
			error = put_key(w, k, obj, anywhere);
		}
		json_decref(parsed);
		if (error < 0)
			return error;
	}
	return 0;
}

/* The re-list is complete: forget what it did not list. Lock held. */
static void relist_end(struct watch *w, json_t *report)
{
	const char *label, *key;
	json_t *bucket, *text;
	void *tmp, *tmp2;

	json_object_foreach_safe(w->by_label, tmp, label, bucket)
	{
		if (w->fresh)
			break; /* everything stored was listed */
		json_object_foreach_safe(bucket, tmp2, key, text)
		{
			if (w->seen && json_object_get(w->seen, key))
				continue;
			note_value(report, label);
			json_object_del(bucket, key);
		}
		if (!json_object_size(bucket))
			json_object_del(w->by_label, label);
	}
	json_decref(w->seen);
	w->seen = NULL;
	w->synced = true;
	w->refused = false;
}

/* One event into the maps. Lock held. */
static int apply_event(struct watch *w, const char *type, json_t *obj,
		       json_t *report)
{
	json_t *old, *parsed;
	const char *was = NULL;
	bool quiet, anywhere;
	char k[768];

	if (!object_key(obj, k, sizeof(k)))
		return 0;
	if (!strcmp(type, "DELETED")) {
		if (find_key(w, k, part_of(obj), true, &was))
			note_value(report, was);
		note_value(report, part_of(obj));
		drop_key(w, k, part_of(obj), true);
		return 0;
	}
	if (strcmp(type, "ADDED") && strcmp(type, "MODIFIED"))
		return 0;
	/*
	 * An object ADDED was not in the list the watch began from, or was
	 * DELETED since: it is stored nowhere, and the other buckets are not
	 * searched (one lookup per app, for every object an app creates).
	 */
	anywhere = strcmp(type, "ADDED") != 0;
	/* A status write is stored (its resourceVersion) but not reported. */
	old = find_key(w, k, part_of(obj), anywhere, &was);
	parsed = old ? parse(old) : NULL;
	quiet = parsed && only_status_changed(w, parsed, obj);
	json_decref(parsed);
	if (!quiet) {
		note_value(report, old ? was : NULL);
		note_value(report, part_of(obj));
	}
	return put_key(w, k, obj, anywhere);
}

static int on_event(const struct kube_watch_event *ev, void *ctx)
{
	struct watch *w = ctx;
	struct kube_watchcache *wc = w->wc;
	json_t *report = wc->opts.changed ? json_array() : NULL;
	size_t i;
	int error = 0;

	if (!strcmp(ev->type, "BOOKMARK"))
		goto out;
	pthread_mutex_lock(&wc->lock);
	/* Re-lists come page by page (paged_relist is always asked). */
	if (!strcmp(ev->type, "RELIST_BEGIN")) {
		json_decref(w->seen);
		w->seen = NULL;
		w->fresh = !json_object_size(w->by_label);
	} else if (!strcmp(ev->type, "RELIST_PAGE")) {
		error = relist_page(w, ev->object, report);
	} else if (!strcmp(ev->type, "RELIST_END")) {
		relist_end(w, report);
	} else {
		error = apply_event(w, ev->type, ev->object, report);
	}
	pthread_mutex_unlock(&wc->lock);
	for (i = 0; i < json_array_size(report); i++)
		wc->opts.changed(json_string_value(json_array_get(report, i)),
				 strncmp(ev->type, "RELIST", 6)
					 ? rv_of(ev->object)
					 : NULL,
				 wc->opts.ctx);
out:
	json_decref(report);
	/* A non-zero value ends kube_watch(); the thread starts over. */
	return error;
}

/* Sleep `ms` in small steps, returning early when the cache stops. */
static void nap(struct kube_watchcache *wc, long ms)
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
	struct kube_watchcache *wc = w->wc;
	struct kube_watch_options wo = {0};
	struct err err = ERR_INIT;
	long backoff = RESTART_BASE_MS;

	wo.label_selector = w->selector;
	wo.bookmarks = true;
	wo.timeout_s = wc->opts.watch_timeout_s;
	wo.paged_relist = true; /* a large list is never held whole */
	while (!wc->stop) {
		int error;

		err_reset(&err);
		error = kube_watch(wc->client, &w->res, w->ns, &wo, on_event, w,
				   &wc->stop, &err);
		if (wc->stop)
			break;
		/*
		 * Not allowed to list (401/403, e.g. a namespaced role asked
		 * for every namespace): say so and stop; the owner can watch
		 * narrower instead.
		 */
		if (error == ERR_INVALID) {
			pthread_mutex_lock(&wc->lock);
			if (!w->synced)
				w->refused = true;
			pthread_mutex_unlock(&wc->lock);
			if (w->refused)
				break;
		}
		nap(wc, backoff);
		backoff = backoff * 2 > RESTART_CAP_MS ? RESTART_CAP_MS
						       : backoff * 2;
	}
	err_release(&err);
	return NULL;
}

int kube_watchcache_new(struct kube_watchcache **out,
			struct kube_client *client,
			const struct kube_watchcache_options *opts,
			struct err *err)
{
	struct kube_watchcache *wc;

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

int kube_watchcache_watch(struct kube_watchcache *wc,
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
	w->by_label = json_object();
	if (!w->res.group || !w->res.version || !w->res.name || !w->by_label)
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

bool kube_watchcache_synced(struct kube_watchcache *wc,
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

bool kube_watchcache_all_synced(struct kube_watchcache *wc)
{
	bool synced = true;

	pthread_mutex_lock(&wc->lock);
	for (struct watch *w = wc->watches; w && synced; w = w->next)
		synced = w->synced || w->refused;
	pthread_mutex_unlock(&wc->lock);
	return synced;
}

bool kube_watchcache_refused(struct kube_watchcache *wc,
			const struct kube_resource *resource, const char *ns,
			const char *label_selector)
{
	struct watch *w;
	bool refused;

	pthread_mutex_lock(&wc->lock);
	w = find_watch(wc, resource, ns, label_selector);
	refused = w && w->refused;
	pthread_mutex_unlock(&wc->lock);
	return refused;
}

/* Collect the texts of one label bucket (all: NULL) under `only_ns`. */
static int collect(struct watch *w, const char *label, const char *only_ns,
		   json_t *texts)
{
	json_t *bucket, *text;
	const char *l, *key;
	size_t nslen = only_ns ? strlen(only_ns) : 0;

	json_object_foreach(w->by_label, l, bucket)
	{
		if (label && strcmp(l, label))
			continue;
		json_object_foreach(bucket, key, text)
		{
			/* Keys are "namespace/name". */
			if (only_ns && (strncmp(key, only_ns, nslen) ||
					key[nslen] != '/'))
				continue;
			if (json_array_append(texts, text))
				return ERR_NOMEM;
		}
	}
	return 0;
}

int kube_watchcache_list_part_of(struct kube_watchcache *wc,
			    const struct kube_resource *resource,
			    const char *ns, const char *label_selector,
			    const char *part_of_value, const char *only_ns,
			    json_t **items, struct err *err)
{
	struct watch *w;
	json_t *texts = json_array(), *arr = NULL, *text;
	size_t i;
	int error = 0;

	*items = NULL;
	if (!texts)
		return err_set(err, ERR_NOMEM, "%s: out of memory",
			       resource->name);
	pthread_mutex_lock(&wc->lock);
	w = find_watch(wc, resource, ns, label_selector);
	if (!w)
		error = err_set(err, ERR_NOTFOUND, "%s: not watched",
				resource->name);
	else if (!w->synced)
		error = err_set(err, ERR_TIMEOUT, "%s: not synced yet",
				resource->name);
	else if (collect(w, part_of_value, only_ns, texts) < 0)
		error = err_set(err, ERR_NOMEM, "%s: out of memory",
				resource->name);
	pthread_mutex_unlock(&wc->lock);
	if (error)
		goto out;
	/* Parsed without the lock: the texts are ours (referenced). */
	if (!(arr = json_array()))
		goto nomem;
	json_array_foreach(texts, i, text)
	{
		json_t *obj = parse(text);

		if (!obj || json_array_append_new(arr, obj))
			goto nomem;
	}
	*items = arr;
	arr = NULL;
	goto out;
nomem:
	error = err_set(err, ERR_NOMEM, "%s: out of memory", resource->name);
out:
	json_decref(texts);
	json_decref(arr);
	return error;
}

int kube_watchcache_list(struct kube_watchcache *wc,
			 const struct kube_resource *resource, const char *ns,
			 const char *label_selector, json_t **items,
			 struct err *err)
{
	return kube_watchcache_list_part_of(wc, resource, ns, label_selector, NULL,
				       NULL, items, err);
}

void kube_watchcache_stop(struct kube_watchcache *wc)
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

void kube_watchcache_free(struct kube_watchcache *wc)
{
	struct watch *w, *next;

	if (!wc)
		return;
	kube_watchcache_stop(wc);
	for (w = wc->watches; w; w = next) {
		next = w->next;
		watch_free(w);
	}
	pthread_mutex_destroy(&wc->lock);
	free(wc);
}
