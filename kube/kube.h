/*
 * The Kubernetes client: connection config (kubeconfig, in-cluster),
 * the HTTP layer (libcurl; kube/http.c is the only file that
 * includes it), discovery and the API operations syncd needs.
 *
 * Conventions: functions return 0 or a negative ERR_* code and fill an
 * optional `struct err` with one line naming the object and the cause
 * ("deployments.apps \"web\" not found (404 NotFound)"). Objects are
 * jansson values; who owns what is said at each function.
 *
 * Thread safety: a kube_client may be used by several threads at once
 * (each call takes a pooled connection); a kube_config is read-only once
 * loaded except for its credential cache, which has its own lock.
 */

#ifndef KUBE_KUBE_H
#define KUBE_KUBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/err.h"
#include "util/json.h"

/* ---------------------------------------------------------------------
 * Connection config (kube/config.c)
 * ------------------------------------------------------------------- */

/* An exec credential plugin (client.authentication.k8s.io/v1). */
struct kube_exec {
	char *command;
	char **args; /* NULL-terminated */
	char **env;  /* "NAME=VALUE", NULL-terminated */
	char *api_version;
	bool provide_cluster_info;
	char *install_hint;
};

struct kube_credential_cache; /* opaque; token file and exec results */

struct kube_config {
	char *source;  /* "kubeconfig /path[:/path2]" or "in-cluster" */
	char *context; /* context name; NULL in-cluster */
	char *server;  /* "https://host:port" without a trailing '/' */
	/* TLS */
	char *ca_file;	 /* path to a PEM bundle, or NULL */
	struct buf ca_pem; /* PEM bytes (certificate-authority-data decoded) */
	bool insecure;	 /* insecure-skip-tls-verify */
	char *tls_server_name;
	char *proxy_url;
	/* client certificate: files, or PEM bytes (…-data decoded) */
	char *cert_file;
	char *key_file;
	struct buf cert_pem;
	struct buf key_pem;
	/* bearer token, token file (re-read when it changes), basic auth */
	char *token;
	char *token_file;
	char *username;
	char *password;
	struct kube_exec *exec; /* NULL: none */
	char *namespace;	/* default namespace; never NULL ("default") */
	struct kube_credential_cache *creds;
};

struct kube_config_options {
	const char *kubeconfig; /* --kubeconfig; NULL: $KUBECONFIG, ~/.kube/config */
	const char *context;	/* --context; NULL: current-context */
	/*
	 * Try the in-cluster config first (the controller's default); a
	 * one-shot command uses it only when no kubeconfig file exists.
	 */
	bool prefer_in_cluster;
};

/*
 * Load the config: --kubeconfig, else $KUBECONFIG (colon-separated, merged
 * as kubectl merges: the first file that sets a map key wins), else
 * ~/.kube/config; in-cluster from the service-account mount
 * (/var/run/secrets/kubernetes.io/serviceaccount, or $SYNCD_SA_ROOT for
 * tests) and KUBERNETES_SERVICE_HOST/PORT. Relative file paths in a
 * kubeconfig are relative to that file. `cfg` is caller storage; release
 * with kube_config_release() (also after a failure).
 */
int kube_config_load(struct kube_config *cfg,
		     const struct kube_config_options *opts, struct err *err);
void kube_config_release(struct kube_config *cfg);

/* What to authenticate a request with, as of now. */
struct kube_credentials {
	struct buf token;    /* bearer token; empty: none */
	struct buf cert_pem; /* client certificate from an exec plugin; empty: none */
	struct buf key_pem;
};

#define KUBE_CREDENTIALS_INIT {BUF_INIT, BUF_INIT, BUF_INIT}
void kube_credentials_release(struct kube_credentials *cr);

/*
 * The credentials to send now, into *out (caller storage, reset first):
 * the static token, the token file's content (re-read when its mtime or
 * size changed), or the exec plugin's ExecCredential status (the plugin
 * runs through util/proc.h when nothing is cached or the cached result
 * passed its expirationTimestamp; it may return a token or a client
 * certificate and key). Client certificates from the config itself are
 * not included (they are in cfg). Thread-safe. Never logs a secret.
 */
int kube_config_credentials(struct kube_config *cfg,
			    struct kube_credentials *out, struct err *err);

/*
 * Forget a cached exec/file credential (after a 401), so that the next
 * kube_config_credentials() fetches a fresh one.
 */
void kube_config_invalidate(struct kube_config *cfg);

/* ---------------------------------------------------------------------
 * HTTP client (kube/http.c)
 * ------------------------------------------------------------------- */

struct kube_client;

struct kube_client_options {
	double qps;		 /* token bucket rate; 0: default 50 */
	unsigned burst;		 /* bucket size; 0: default 100 */
	long connect_timeout_ms; /* 0: default 10 s */
	long timeout_ms;	 /* per request, not watches; 0: default 60 s */
	unsigned max_retries;	 /* 0: default 5; see kube_request() */
	size_t max_response;	 /* bytes; 0: default 256 MiB */
	const char *user_agent;	 /* NULL: "syncd/<version>" */
	/*
	 * Act as this user (an Impersonate-User header on every request,
	 * e.g. "system:serviceaccount:NS:NAME": the API server then adds
	 * the service account's groups and authorizes as it). The client's
	 * own credentials need the `impersonate` verb on it. NULL: none.
	 * A name with control characters is ERR_INVALID.
	 */
	const char *impersonate_user;
	/*
	 * Called once per HTTP attempt (as client-go's
	 * rest_client_requests_total counts: a retried request calls it
	 * for every try), from the requesting thread, with the verb as
	 * Kubernetes metrics name it (get, list, watch, create, update,
	 * patch, delete, deletecollection, derived from the method, the
	 * path and ?watch=) and the HTTP status, 0 when no response came
	 * (a transport error). A watch calls it when its stream ends. NULL:
	 * none.
	 */
	void (*on_response)(const char *verb, int code, void *ctx);
	void *on_response_ctx;
	/*
	 * Writes only while may_write(may_write_ctx) is true (the
	 * controller: while this replica leads). It is asked before every
	 * attempt of a write (POST, PUT, PATCH, DELETE); a write it refuses
	 * is not sent and fails with ERR_CANCELED. NULL: always true.
	 */
	bool (*may_write)(void *ctx);
	void *may_write_ctx;
	/*
	 * Bytes sent and not acknowledged by the server for this long abort
	 * their connection (TCP_USER_TIMEOUT), so no request is delivered
	 * later than that after it was sent: with may_write, what bounds a
	 * write begun just before leadership ended to land before the
	 * Lease can be taken over. 0: the kernel's default (minutes).
	 */
	unsigned unacked_timeout_ms;
};

/*
 * A client for `cfg` (borrowed: it must outlive the client). Caller owns
 * *out; free with kube_client_free().
 */
int kube_client_new(struct kube_client **out, struct kube_config *cfg,
		    const struct kube_client_options *opts, struct err *err);
void kube_client_free(struct kube_client *c);

/* A response. `status` is the parsed Status of a failure, else NULL. */
struct kube_response {
	long code;	  /* HTTP status; 0 when no response came */
	struct buf body;  /* raw body */
	json_t *json;	  /* the body parsed (2xx only), or NULL */
	json_t *status;	  /* a failure's Status object, or NULL */
	unsigned retries; /* how many times the request was retried */
};

#define KUBE_RESPONSE_INIT {0, BUF_INIT, NULL, NULL, 0}
void kube_response_release(struct kube_response *resp);

/*
 * One request: `path` is "/api/v1/..." with its query string (already
 * escaped), `body` may be NULL. Rate limited; retried with capped
 * exponential backoff and jitter (base 200 ms, cap 10 s; Retry-After
 * honoured, at most 30 s) on connection errors and 429/500/502/503/504,
 * never on other codes (a connection lost after a POST was sent is not
 * retried either: the server may have created the object). A 401
 * invalidates cached credentials and is retried once. Returns 0 for
 * 2xx; otherwise a negative ERR_* (404 -> ERR_NOTFOUND, 409 ->
 * ERR_EXISTS, 410 -> ERR_LIMIT... see kube_err_code(); a body over
 * max_response: ERR_LIMIT) and a message "<Status message> (<code>
 * <reason>)" in err; resp (caller storage, KUBE_RESPONSE_INIT, may be
 * NULL) holds what came back: resp->json only for a JSON body.
 */
int kube_request(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const char *body, size_t body_len,
		 struct kube_response *resp, struct err *err);

/*
 * kube_request() with an Accept header of the caller's choosing instead
 * of "application/json" (NULL: that default), e.g. the aggregated
 * discovery media type; the answer is parsed into resp->json whenever
 * its Content-Type names JSON. A value with control characters is
 * ERR_INVALID.
 */
int kube_request_accept(struct kube_client *c, const char *method,
			const char *path, const char *accept,
			const char *content_type, const char *body,
			size_t body_len, struct kube_response *resp,
			struct err *err);

/*
 * kube_request() of a GET whose answer is a list: each of its items is
 * offered to `take` before it is read (fastjson_load_items()), and those
 * taken are left out of resp->json's "items".
 */
int kube_request_list(struct kube_client *c, const char *path,
		      fastjson_take_fn *take, void *take_ctx,
		      struct kube_response *resp, struct err *err);

/* The ERR_* code for an HTTP status (0 for 2xx). */
int kube_err_code(long http_code);

/*
 * A streaming GET (watch): calls `line` for every complete line of the
 * body (a JSON event), without the newline; `line` returning non-zero
 * stops the stream. Not retried (the caller resumes from its last
 * resourceVersion). No total timeout; `idle_timeout_ms` ends a stream
 * that stays silent that long (0: none). `stop` (may be NULL) is looked
 * at about once a second, also while the stream is silent: once it is
 * true the stream is closed. Returns 0 when the server ended the stream
 * or `stop` closed it, the callback's value when it stopped it, else
 * ERR_*.
 */
int kube_stream(struct kube_client *c, const char *path,
		long idle_timeout_ms, const volatile bool *stop,
		int (*line)(const char *data, size_t len, void *ctx),
		void *ctx, struct err *err);

/* Requests sent, for tests and metrics (thread-safe counter). */
uint64_t kube_client_requests(const struct kube_client *c);

/*
 * New connections opened so far (TCP + TLS handshakes; requests minus
 * this is how many reused a kept-alive connection). Thread-safe.
 */
uint64_t kube_client_connections(const struct kube_client *c);

/* Requests that waited for the rate limiter's token bucket. Thread-safe. */
uint64_t kube_client_throttled(const struct kube_client *c);

/* ---------------------------------------------------------------------
 * Discovery and mapping (kube/discovery.c)
 * ------------------------------------------------------------------- */

struct kube_resource {
	char *group; /* "" for core */
	char *version;
	char *name; /* plural */
	char *kind;
	bool namespaced;
	char **verbs; /* NULL-terminated */
};

struct kube_discovery;

/* Caller owns *out; free with kube_discovery_free(). Lazy: no request yet. */
int kube_discovery_new(struct kube_discovery **out, struct kube_client *c,
		       struct err *err);
void kube_discovery_free(struct kube_discovery *d);

/*
 * The resource serving group/kind (preferred version first; `version`
 * non-NULL asks for that version). Discovery is read lazily and cached:
 * /api/v1 for the core group, /apis once (not needed when `version` is
 * given), /apis/G/V only for the groups asked about; an unknown kind
 * refreshes its group once (a CRD applied a moment ago). Thread-safe.
 * The returned resource is owned by `d` and valid until
 * kube_discovery_free(). ERR_NOTFOUND with "no resource for Kind.group
 * (version) on the server".
 */
int kube_discovery_find(struct kube_discovery *d, const char *group,
			const char *version, const char *kind,
			const struct kube_resource **out, struct err *err);

/* Drop the cache (the next find reads discovery again). */
void kube_discovery_invalidate(struct kube_discovery *d);

/* ---------------------------------------------------------------------
 * Operations (kube/api.c)
 * ------------------------------------------------------------------- */

/*
 * URL path of a resource: "/apis/apps/v1/namespaces/NS/deployments[/NAME]
 * [/SUB]" (ns ignored for cluster-scoped resources; NULL name: the
 * collection; NULL ns for a namespaced collection: across namespaces).
 * Path segments are percent-escaped.
 */
void kube_path(struct buf *out, const struct kube_resource *r, const char *ns,
	       const char *name, const char *sub);

/* GET one object. Caller owns *out. ERR_NOTFOUND when absent. */
int kube_get(struct kube_client *c, const struct kube_resource *r,
	     const char *ns, const char *name, json_t **out, struct err *err);

struct kube_list_options {
	const char *label_selector; /* NULL: all */
	const char *field_selector;
	unsigned page_size; /* limit per request; 0: 500 */
	/*
	 * kube_list_each(): each item's text is offered to `take` first
	 * (kube_request_list()); one taken goes to no page. Its kind and
	 * apiVersion are the list's, which the text may leave out. NULL:
	 * none.
	 */
	fastjson_take_fn *take;
	void *take_ctx;
};

/*
 * LIST every page (limit/continue; an expired continue token restarts
 * the list once). *items gets a new array of the objects (each with
 * kind and apiVersion filled in), *rv the list's resourceVersion (caller
 * frees; may pass NULL).
 */
int kube_list(struct kube_client *c, const struct kube_resource *r,
	      const char *ns, const struct kube_list_options *opts,
	      json_t **items, char **rv, struct err *err);

/*
 * The same LIST without collecting it: each page's items (kind and
 * apiVersion filled in) go to `fn`, borrowed for the call, so at most one
 * page is held. `again` is true on the first page of a list started over
 * (its continue token expired): what earlier pages gave is to be
 * forgotten. A non-zero return from fn stops the list and is returned
 * (its message, if any, is the caller's to set).
 */
int kube_list_each(struct kube_client *c, const struct kube_resource *r,
		   const char *ns, const struct kube_list_options *opts,
		   int (*fn)(json_t *items, bool again, void *ctx), void *ctx,
		   struct err *err);

struct kube_apply_options {
	const char *field_manager; /* required */
	bool force;
	bool dry_run;
};

/*
 * Server-side apply of `obj` (PATCH application/apply-patch+yaml with the
 * object as JSON). *out gets the object the server returned (caller
 * owns; may pass NULL). A 409 conflict is ERR_EXISTS with the server's
 * message ("Apply failed with 1 conflict: ...").
 */
int kube_apply(struct kube_client *c, const struct kube_resource *r,
	       const json_t *obj, const struct kube_apply_options *opts,
	       json_t **out, struct err *err);

/*
 * POST `obj` to its collection (metadata.namespace required for a
 * namespaced resource). *out gets the created object (caller owns; may
 * pass NULL). ERR_EXISTS (409 AlreadyExists) when an object of that name
 * exists.
 */
int kube_create(struct kube_client *c, const struct kube_resource *r,
		const json_t *obj, json_t **out, struct err *err);

/*
 * PUT `obj` (a whole object, as read and then changed) over the object of
 * its name. Its metadata.resourceVersion, when set, is the precondition
 * of optimistic concurrency: a write made since then makes the update
 * fail with ERR_EXISTS (409 Conflict, "the object has been modified").
 * *out gets the stored object with its new resourceVersion (caller owns;
 * may pass NULL). ERR_NOTFOUND when the object is gone.
 */
int kube_update(struct kube_client *c, const struct kube_resource *r,
		const json_t *obj, json_t **out, struct err *err);

struct kube_delete_options {
	const char *propagation; /* "Background" (default), "Foreground", "Orphan" */
	const char *uid;	 /* precondition, or NULL */
	const char *resource_version; /* precondition, or NULL */
	bool dry_run;
};

/* DELETE one object. ERR_NOTFOUND when already gone. */
int kube_delete(struct kube_client *c, const struct kube_resource *r,
		const char *ns, const char *name,
		const struct kube_delete_options *opts, struct err *err);

/* A watch event as the callback sees it. */
struct kube_watch_event {
	const char *type; /* ADDED, MODIFIED, DELETED, BOOKMARK */
	json_t *object;	  /* borrowed for the call */
};

struct kube_watch_options {
	const char *label_selector;
	const char *resource_version; /* start after it; NULL: list first */
	bool bookmarks;		      /* allowWatchBookmarks (opts NULL: on) */
	unsigned timeout_s;	      /* server-side timeoutSeconds; 0: 300 */
	/*
	 * Re-list page by page, so a large list is never held whole: fn
	 * sees "RELIST_BEGIN" (object NULL), "RELIST_PAGE" for each page
	 * (object: that page's items) and "RELIST_END" (object NULL) once
	 * the list is complete, instead of one "RELIST". A list that fails
	 * midway has no END; the next attempt starts with BEGIN again.
	 */
	bool paged_relist;
};

/*
 * Watch until `fn` returns non-zero or *stop becomes true: streams the
 * events, remembers the last resourceVersion (bookmarks included) and
 * reopens the watch from it when the server ends it; on 410 Expired it
 * re-lists (`fn` then sees a "RELIST" event whose object is the new items
 * array) and watches from the list's resourceVersion. Without a starting
 * resourceVersion the first event is such a RELIST. *stop is looked at
 * between events and about once a second while the stream is silent. A
 * quiet stream stays open until the server ends it (timeout_s), unless
 * nothing at all came for 90 s: the real API server sends a watch that
 * allows bookmarks one every minute, so such a stream is taken for dead
 * and reopened.
 * Failed streams are retried with capped backoff (200 ms to 10 s); a
 * refusal (400, 403, 404) is not. Returns fn's non-zero value, 0 when
 * stopped, or ERR_* when the server cannot be reached after 10 attempts.
 */
int kube_watch(struct kube_client *c, const struct kube_resource *r,
	       const char *ns, const struct kube_watch_options *opts,
	       int (*fn)(const struct kube_watch_event *ev, void *ctx),
	       void *ctx, const volatile bool *stop, struct err *err);

/* A Kubernetes Event (events.k8s.io/v1) about an object. */
struct kube_event {
	const json_t *regarding; /* the object (kind, apiVersion, metadata) */
	const char *type;	 /* "Normal" or "Warning" */
	const char *reason;	 /* "SyncFailed", "DriftCorrected", ... */
	const char *action;	 /* "Sync", "Prune", ... */
	const char *note;	 /* human text (capped at 1 KiB) */
	const char *controller;	 /* reportingController, e.g. "syncd.io/syncd" */
	const char *instance;	 /* reportingInstance (pod name) */
};

/* Create an Event in the object's namespace (or "default"). */
int kube_event_create(struct kube_client *c, const struct kube_event *ev,
		      struct err *err);

/*
 * The watch cache (kube_watchcache_*, kube/watchcache.c): a shared,
 * informer-style cache of live objects. Each (resource, namespace, label
 * selector) watched gets one thread that lists and then watches through
 * kube_watch() (resume from the last resourceVersion, re-list after 410
 * Expired) and keeps the objects in memory, keyed by "namespace/name". The
 * controller reads snapshots from it instead of listing the cluster on
 * every pass.
 *
 * Memory: objects are stored as compact JSON text without `status` (it
 * is not part of what syncd compares and is often the largest, busiest
 * part of an object) unless the options say keep_status (the controller
 * does: health is read from status), indexed by their part-of label;
 * snapshots parse them back. `metadata.managedFields` is kept because the
 * diff needs it.
 *
 * Changes: the `changed` callback of the options is called for every
 * ADDED, MODIFIED or DELETED object carrying the inventory label
 * applyset.kubernetes.io/part-of, with the label's value (for a change
 * that moves an object from one value to another: once for each) and the
 * resourceVersion of the event's object (so a writer can recognise the
 * echo of its own write). A change that is only a write of the status
 * subresource (status, resourceVersion and the "status" managedFields
 * entries differ, nothing else: what the real controllers do to a
 * Deployment or an HPA many times a minute) is stored but not reported,
 * unless the cache keeps status: then a change of the status is reported
 * too (a write that leaves everything as it was is not).
 * A re-list compares the new list with the cache and reports what
 * differs the same way, without a resourceVersion. The callback runs on
 * a watch thread with no cache lock held, so it may call
 * kube_watchcache_list(); it must be quick (e.g. enqueue the app with a
 * debounce) and must not call kube_watchcache_stop/free.
 *
 * Thread safety: every function may be called from any thread, except
 * kube_watchcache_stop() and kube_watchcache_free(), which belong to the owner;
 * kube_watchcache_free() is the last call.
 */

#define KUBE_WATCHCACHE_PART_OF_LABEL "applyset.kubernetes.io/part-of"

struct kube_watchcache;

struct kube_watchcache_options {
	/* Called for changes of labelled objects; NULL: none. */
	void (*changed)(const char *app_label_value,
			const char *resource_version, void *ctx);
	void *ctx;
	/* Server-side timeoutSeconds of each watch request; 0: 300. */
	unsigned watch_timeout_s;
	/* Store status and report its changes (see above); default off. */
	bool keep_status;
};

/*
 * A cache using `client` (borrowed: it must outlive the cache). `opts`
 * may be NULL. Caller owns *out; free with kube_watchcache_free().
 */
int kube_watchcache_new(struct kube_watchcache **out,
			struct kube_client *client,
			const struct kube_watchcache_options *opts,
			struct err *err);

/*
 * Start caching `resource` in `ns` (NULL: every namespace; ignored for a
 * cluster-scoped resource) restricted to `label_selector` (NULL or "":
 * all). The resource is copied. Starting the same (resource, namespace,
 * selector) again does nothing and returns 0. The thread retries on its
 * own after failures (each restart lists again) until the cache stops.
 * ERR_INVALID once the cache is stopping.
 */
int kube_watchcache_watch(struct kube_watchcache *wc,
		     const struct kube_resource *resource, const char *ns,
		     const char *label_selector, struct err *err);

/*
 * Whether the first list of that watch has completed (false for one
 * never started).
 */
bool kube_watchcache_synced(struct kube_watchcache *wc,
		       const struct kube_resource *resource, const char *ns,
		       const char *label_selector);

/*
 * Whether every watch started so far has completed its first list,
 * leaving out the refused ones (kube_watchcache_refused(): they never will,
 * and their owner watches narrower instead).
 */
bool kube_watchcache_all_synced(struct kube_watchcache *wc);

/*
 * A snapshot of that watch's objects: *items gets a new array of new
 * objects (the cache keeps compact text and parses it for each
 * snapshot). ERR_NOTFOUND when it was never started, ERR_TIMEOUT ("not
 * synced yet") before its first list completed.
 */
int kube_watchcache_list(struct kube_watchcache *wc,
			 const struct kube_resource *resource, const char *ns,
			 const char *label_selector, json_t **items,
			 struct err *err);

/*
 * kube_watchcache_list() of only the objects whose part-of label is
 * `part_of_value` (NULL: any) and, when `only_ns` is set, in that
 * namespace (for a watch of every namespace). Finding them does not
 * look at the other objects.
 */
int kube_watchcache_list_part_of(struct kube_watchcache *wc,
			    const struct kube_resource *resource,
			    const char *ns, const char *label_selector,
			    const char *part_of_value, const char *only_ns,
			    json_t **items, struct err *err);

/*
 * Whether that watch's first list was refused (401/403, e.g. every
 * namespace asked of a namespaced role): its thread has stopped and the
 * watch will never sync.
 */
bool kube_watchcache_refused(struct kube_watchcache *wc,
			const struct kube_resource *resource, const char *ns,
			const char *label_selector);

/*
 * Stop every watch thread and wait for them (a quiet stream notices the
 * stop within about a second). Idempotent; the snapshots stay
 * readable.
 */
void kube_watchcache_stop(struct kube_watchcache *wc);

/* Stop, then free everything. Accepts NULL. */
void kube_watchcache_free(struct kube_watchcache *wc);

/*
 * Leader election (kube_leader_*, kube/leader.c): leader election among
 * `syncd run` replicas over a coordination.k8s.io/v1 Lease, with the
 * semantics of client-go's leaderelection package, so that syncd and Go
 * controllers read each other's Leases the same way.
 *
 * The Lease's spec is the record: holderIdentity, leaseDurationSeconds,
 * acquireTime, renewTime (MicroTime) and leaseTransitions. Every write is
 * a whole-object update carrying the resourceVersion last read, so when
 * two candidates race, the server takes one write and answers 409 to the
 * other: that candidate lost this round and tries again later.
 *
 * Time: a candidate never compares the server's timestamps with its own
 * clock (clocks of two nodes may disagree). It notes on its own monotonic
 * clock when it last saw the record change, and takes the Lease only when
 * the record has stayed the same for the record's leaseDurationSeconds
 * since then, or when holderIdentity is "" (a released Lease).
 *
 * The elector thread:
 * - as a candidate, reads (and when due, takes or creates) the Lease every
 *   retry period, plus a random jitter of up to 1.2 retry periods so that
 *   standbys do not move in step;
 * - as the leader, renews every retry period; when no renewal succeeded
 *   for the renew deadline it stops leading (stopped_leading) and becomes
 *   a candidate again. It stops leading before that deadline even if a
 *   request is still hanging: kube_leader_is_leader() turns false once the
 *   deadline since the start of the last successful renewal has passed,
 *   which is before any other replica may take the Lease (renew deadline
 *   < lease duration).
 * Failed requests (network, 5xx, 409) are reported through `failed` and
 * retried at the next period; nothing is logged and nothing exits.
 *
 * Timing must satisfy lease > renew > 1.2 * retry (as client-go checks).
 * The Lease stores whole seconds: leaseDurationSeconds is the lease
 * duration rounded up (at least 1). Each request the elector makes may
 * itself retry inside kube_request(), so give it a client whose timeouts
 * and retries fit well within the renew deadline.
 *
 * Thread safety: kube_leader_is_leader() and kube_leader_identity() may be
 * called from any thread; kube_leader_start(), kube_leader_stop() and
 * kube_leader_free() belong to the owner, and must not be called from a
 * callback.
 */

#define KUBE_LEADER_OPTIONS_VERSION 1

#define KUBE_LEADER_LEASE_MS_DEFAULT 15000L
#define KUBE_LEADER_RENEW_MS_DEFAULT 10000L
#define KUBE_LEADER_RETRY_MS_DEFAULT 2000L

struct kube_leader;

struct kube_leader_options {
	unsigned version;      /* KUBE_LEADER_OPTIONS_VERSION */
	const char *namespace; /* of the Lease; required */
	const char *name;      /* of the Lease; required */
	/* This replica's name in holderIdentity; NULL: "HOSTNAME_RANDHEX". */
	const char *identity;
	long lease_ms; /* how long a Lease stays valid; 0: 15 s */
	long renew_ms; /* the leader gives up after this; 0: 10 s */
	long retry_ms; /* between attempts; 0: 2 s */
	/*
	 * Callbacks, called from the elector thread (stopped_leading also
	 * from the deadline watchdog, when a renewal hangs past the renew
	 * deadline), one at a time, never with a lock held; each may be
	 * NULL. started_leading and stopped_leading come
	 * in pairs: stopped_leading follows every started_leading (when the
	 * renew deadline passed, or in kube_leader_stop() while leading, then
	 * before the Lease is released, so that the work stops first).
	 * They should return quickly.
	 */
	void (*started_leading)(void *ctx);
	void (*stopped_leading)(void *ctx);
	/* The holder seen in the Lease changed ("" when released). */
	void (*new_leader)(const char *identity, void *ctx);
	/* One attempt failed: one line naming the Lease and the cause. */
	void (*failed)(const struct err *err, void *ctx);
	void *ctx;
};

#define KUBE_LEADER_OPTIONS_INIT {.version = KUBE_LEADER_OPTIONS_VERSION}

/*
 * An elector for the Lease opts->namespace/opts->name using `client`
 * (borrowed: it must outlive the elector). The options are copied.
 * ERR_INVALID for missing names or durations that break lease > renew >
 * 1.2 * retry. No request yet. Caller owns *out; free with kube_leader_free().
 */
int kube_leader_new(struct kube_leader **out, struct kube_client *client,
	       const struct kube_leader_options *opts, struct err *err);

/* Start the elector thread. ERR_INVALID when started before. */
int kube_leader_start(struct kube_leader *l, struct err *err);

/*
 * Whether this replica leads now: it won or renewed the Lease less than
 * the renew deadline ago (by the monotonic clock) and has not stopped.
 */
bool kube_leader_is_leader(struct kube_leader *l);

/* holderIdentity this elector writes; owned by `l`. */
const char *kube_leader_identity(const struct kube_leader *l);

/*
 * Stop the elector thread (waiting for a request in flight to end). When
 * it was leading, stopped_leading is called and then, if `release`, the
 * Lease is released (holderIdentity "", leaseDurationSeconds 1) so that
 * a standby takes over at its next attempt instead of after the lease
 * duration. Returns 0, or the release's error (the Lease then expires on
 * its own). Stopping a stopped or never started elector returns 0.
 */
int kube_leader_stop(struct kube_leader *l, bool release, struct err *err);

/* Stop without release if still running, and free. Accepts NULL. */
void kube_leader_free(struct kube_leader *l);

/*
 * Events (kube_events_*, kube/events.c): Kubernetes Events
 * (events.k8s.io/v1) about the objects syncd manages, rate limited the way
 * client-go's event recorder limits them:
 *
 * - the same event (object, reason, note) again within `dedup_ms` (10
 *   minutes) is dropped: a fight or a failing object does not repeat
 *   itself on every pass;
 * - each object has a token bucket of `burst` (25) events refilled by one
 *   every `refill_ms` (5 minutes), like client-go's spam filter;
 * - all objects together may not exceed `global_burst` (100) refilled at
 *   `global_per_s` (10) per second.
 *
 * Events are sent at once by the calling thread; one that fails is
 * dropped (an Event is best effort: the log has everything too).
 *
 * Thread safety: every function may be called from any thread.
 */

/* Objects whose limits are remembered; the oldest are forgotten. */
#define KUBE_EVENTS_MAX_OBJECTS 4096

struct kube_events_options {
	struct kube_client *client; /* borrowed; NULL: count, send nothing */
	const char *instance;	    /* reportingInstance; NULL: "syncd" */
	unsigned burst;		    /* 0: 25 */
	uint64_t refill_ms;	    /* 0: 5 minutes */
	uint64_t dedup_ms;	    /* 0: 10 minutes */
	unsigned global_burst;	    /* 0: 100 */
	unsigned global_per_s;	    /* 0: 10 */
	/* Monotonic milliseconds; NULL: CLOCK_MONOTONIC. */
	uint64_t (*now_ms)(void *ctx);
	void *clock_ctx;
};

struct kube_events;

/* *out gets the recorder (free with kube_events_free()); ERR_NOMEM. */
int kube_events_new(struct kube_events **out,
		    const struct kube_events_options *opts, struct err *err);
void kube_events_free(struct kube_events *ev);

/*
 * An event about `regarding` (an object with kind, apiVersion and
 * metadata name/namespace, uid when known). `type` "Normal" or
 * "Warning". Returns 1 when sent (or would have been, without a client),
 * 0 when a limit dropped it, <0 when sending failed.
 */
int kube_events_emit(struct kube_events *ev, const json_t *regarding,
		     const char *type, const char *reason, const char *action,
		     const char *note);

/* Events sent and dropped so far. */
void kube_events_counts(struct kube_events *ev, uint64_t *sent,
			uint64_t *dropped);

#endif
