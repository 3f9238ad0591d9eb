/*
 * The Kubernetes client: connection config (kubeconfig, in-cluster),
 * the HTTP layer (libcurl; syncd/kube_http.c is the only file that
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
#ifndef SYNCD_KUBE_H
#define SYNCD_KUBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

/* ---------------------------------------------------------------------
 * Connection config (syncd/kube_config.c)
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
 * HTTP client (syncd/kube_http.c)
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
	 * Called once per HTTP attempt (as client-go's
	 * rest_client_requests_total counts: a retried request calls it
	 * for every try), from the requesting thread, with the verb as
	 * Kubernetes metrics name it (get, list, watch, create, update,
	 * patch, delete, deletecollection, derived from the method, the
	 * path and ?watch=) and the HTTP status, 0 when no response came
	 * (a transport error). A watch calls it when its stream ends. NULL:
	 * none.
	 */
	void (*on_response)(void *ctx, const char *verb, int code);
	void *on_response_ctx;
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
 * Discovery and mapping (syncd/kube_discovery.c)
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
 * Operations (syncd/kube_api.c)
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

#endif
