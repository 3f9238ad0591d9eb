/*
 * watchcache: a shared, informer-style cache of live objects. Each
 * (resource, namespace, label selector) watched gets one thread that
 * lists and then watches through kube_watch() (resume from the last
 * resourceVersion, re-list after 410 Expired) and keeps the objects in
 * memory, keyed by "namespace/name". The controller reads snapshots from
 * it instead of listing the cluster on every pass.
 *
 * Memory: objects are stored as compact JSON text without `status` (it
 * is not part of what syncd compares and is often the largest, busiest
 * part of an object), indexed by their part-of label; snapshots parse
 * them back. `metadata.managedFields` is kept because the diff needs it.
 *
 * Changes: the `changed` callback of the options is called for every
 * ADDED, MODIFIED or DELETED object carrying the inventory label
 * applyset.kubernetes.io/part-of, with the label's value (for a change
 * that moves an object from one value to another: once for each) and the
 * resourceVersion of the event's object (so a writer can recognise the
 * echo of its own write). A change that is only a write of the status
 * subresource (status, resourceVersion and the "status" managedFields
 * entries differ, nothing else: what the real controllers do to a
 * Deployment or an HPA many times a minute) is stored but not reported.
 * A re-list compares the new list with the cache and reports what
 * differs the same way, without a resourceVersion. The callback runs on
 * a watch thread with no cache lock held, so it may call
 * watchcache_list(); it must be quick (e.g. enqueue the app with a
 * debounce) and must not call watchcache_stop/free.
 *
 * Thread safety: every function may be called from any thread, except
 * watchcache_stop() and watchcache_free(), which belong to the owner;
 * watchcache_free() is the last call.
 */
#ifndef SYNCD_WATCHCACHE_H
#define SYNCD_WATCHCACHE_H

#include <stdbool.h>
#include <jansson.h>

#include "syncd/kube.h"
#include "util/err.h"

#define WATCHCACHE_PART_OF_LABEL "applyset.kubernetes.io/part-of"

struct watchcache;

struct watchcache_options {
	/* Called for changes of labelled objects; NULL: none. */
	void (*changed)(const char *app_label_value,
			const char *resource_version, void *ctx);
	void *ctx;
	/* Server-side timeoutSeconds of each watch request; 0: 300. */
	unsigned watch_timeout_s;
};

/*
 * A cache using `client` (borrowed: it must outlive the cache). `opts`
 * may be NULL. Caller owns *out; free with watchcache_free().
 */
int watchcache_new(struct watchcache **out, struct kube_client *client,
		   const struct watchcache_options *opts, struct err *err);

/*
 * Start caching `resource` in `ns` (NULL: every namespace; ignored for a
 * cluster-scoped resource) restricted to `label_selector` (NULL or "":
 * all). The resource is copied. Starting the same (resource, namespace,
 * selector) again does nothing and returns 0. The thread retries on its
 * own after failures (each restart lists again) until the cache stops.
 * ERR_INVALID once the cache is stopping.
 */
int watchcache_watch(struct watchcache *wc,
		     const struct kube_resource *resource, const char *ns,
		     const char *label_selector, struct err *err);

/*
 * Whether the first list of that watch has completed (false for one
 * never started).
 */
bool watchcache_synced(struct watchcache *wc,
		       const struct kube_resource *resource, const char *ns,
		       const char *label_selector);

/*
 * Whether every watch started so far has completed its first list,
 * leaving out the refused ones (watchcache_refused(): they never will,
 * and their owner watches narrower instead).
 */
bool watchcache_all_synced(struct watchcache *wc);

/*
 * A snapshot of that watch's objects: *items gets a new array of new
 * objects (the cache keeps compact text and parses it for each
 * snapshot). ERR_NOTFOUND when it was never started, ERR_TIMEOUT ("not
 * synced yet") before its first list completed.
 */
int watchcache_list(struct watchcache *wc, const struct kube_resource *resource,
		    const char *ns, const char *label_selector, json_t **items,
		    struct err *err);

/*
 * watchcache_list() of only the objects whose part-of label is
 * `part_of_value` (NULL: any) and, when `only_ns` is set, in that
 * namespace (for a watch of every namespace). Finding them does not
 * look at the other objects.
 */
int watchcache_list_part_of(struct watchcache *wc,
			    const struct kube_resource *resource,
			    const char *ns, const char *label_selector,
			    const char *part_of_value, const char *only_ns,
			    json_t **items, struct err *err);

/*
 * Whether that watch's first list was refused (401/403, e.g. every
 * namespace asked of a namespaced role): its thread has stopped and the
 * watch will never sync.
 */
bool watchcache_refused(struct watchcache *wc,
			const struct kube_resource *resource, const char *ns,
			const char *label_selector);

/*
 * Stop every watch thread and wait for them (a quiet stream notices the
 * stop within about a second). Idempotent; the snapshots stay
 * readable.
 */
void watchcache_stop(struct watchcache *wc);

/* Stop, then free everything. Accepts NULL. */
void watchcache_free(struct watchcache *wc);

#endif
