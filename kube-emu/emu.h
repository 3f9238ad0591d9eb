/*
 * kube-emu: an emulator of the Kubernetes API server for tests.
 *
 * Internal header shared by the emulator's files. The request handler
 * (emu_handle) knows nothing of HTTP libraries: main.c turns each
 * libmicrohttpd request into a struct emu_request, so the whole API
 * surface can be driven from Criterion tests without a socket.
 *
 * Objects are jansson values; the store owns one reference to each. All
 * store functions take the store's mutex themselves.
 */
#ifndef KUBE_EMU_EMU_H
#define KUBE_EMU_EMU_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "util/buf.h"

/* Largest request body accepted, as kube-apiserver (3 MiB). */
#define EMU_MAX_BODY (3u << 20)

/* Version reported by /version. */
#define EMU_KUBE_MAJOR	     "1"
#define EMU_KUBE_MINOR	     "36"
#define EMU_KUBE_GIT_VERSION "v1.36.3"
/* The oldest minor it is compatible with (--min-compatibility-version). */
#define EMU_KUBE_MIN_COMPAT_MINOR "35"

/* ---- resource table (resources.c) ---- */

enum emu_res_flags {
	EMU_RES_NAMESPACED = 1 << 0,
	EMU_RES_STATUS = 1 << 1,     /* has a /status subresource */
	EMU_RES_SCALE = 1 << 2,	     /* has a /scale subresource */
	EMU_RES_GENERATION = 1 << 3, /* the server keeps metadata.generation */
	EMU_RES_CAT_ALL = 1 << 4,    /* in the category "all" */
};

/* Which names kube-apiserver accepts for a resource. */
enum emu_name_rule {
	EMU_NAME_SUBDOMAIN, /* RFC 1123 subdomain (most kinds) */
	EMU_NAME_LABEL,	    /* RFC 1123 label (namespaces) */
	EMU_NAME_DNS1035,   /* RFC 1035 label (services) */
	EMU_NAME_PATH,	    /* any path segment (RBAC kinds) */
};

struct emu_resource {
	const char *group; /* "" for the core group */
	const char *version;
	const char *name; /* plural, as in URLs */
	const char *singular;
	const char *kind;
	const char *short_names; /* comma separated; NULL: none */
	unsigned flags;
	enum emu_name_rule name_rule;
};

/* The built-in resources, ended by an entry whose name is NULL. */
extern const struct emu_resource emu_resources[];

/* The resource `name` of group/version; NULL when unknown. */
const struct emu_resource *
emu_resource_find(const char *group, const char *version, const char *name);

/* "deployments.apps" or "configmaps": the name kube uses in messages. */
void emu_resource_qualified(const struct emu_resource *res, struct buf *out);

/* "apps/v1" or "v1". */
void emu_resource_api_version(const struct emu_resource *res, struct buf *out);

/*
 * Discovery documents. Each returns a new reference (caller owns it) or
 * NULL when the group/version is unknown. `host` ("127.0.0.1:6443") is
 * what /api reports as the server address.
 */
json_t *emu_discovery_version(void);
json_t *emu_discovery_api(const char *host);
json_t *emu_discovery_groups(void);
json_t *emu_discovery_resources(const char *group, const char *version);

/*
 * Aggregated discovery (apidiscovery.k8s.io, kube 1.26+): which version
 * of it an Accept header asks for before anything else this server can
 * answer ("v2", "v2beta1"), or NULL for the plain documents.
 */
const char *emu_discovery_aggregated_wanted(const char *accept);

/*
 * The APIGroupDiscoveryList of /api (`core`) or /apis, built-in and
 * custom resources, as apidiscovery.k8s.io/`version`. New reference.
 */
json_t *emu_discovery_aggregated(bool core, const char *version);
json_t *emu_openapi_v3_index(void);
json_t *emu_openapi_v3_doc(const char *group, const char *version);
json_t *emu_openapi_v2(void);

/*
 * CustomResourceDefinitions (crd.c). The resources CRDs serve live in a
 * process-wide registry under its own lock; emu_resource_find() and the
 * discovery documents consult it. Its pointers stay valid for the life
 * of the process (a deleted CRD's entries are only marked gone).
 */

/* A served custom resource, or NULL. */
const struct emu_resource *emu_crd_find(const char *group, const char *version,
					const char *name);

/* Is `res` from the registry rather than the built-in table? */
bool emu_resource_is_custom(const struct emu_resource *res);

/*
 * Call fn for every served custom resource with the registry locked for
 * reading: its categories (array of strings) and its version's
 * openAPIV3Schema (NULL: none), both borrowed. fn must not register.
 */
void emu_crd_foreach(void (*fn)(const struct emu_resource *res,
				const json_t *categories, const json_t *schema,
				void *arg),
		     void *arg);

/* spec.names.listKind of a custom resource; NULL for built-ins. */
const char *emu_crd_list_kind(const struct emu_resource *res);

/*
 * Default (singular, listKind, conversion) and validate a CRD about to
 * be written (in place). Returns NULL, or a new 422 Invalid Status.
 */
json_t *emu_crd_prepare(const struct emu_resource *res, json_t *crd);

/*
 * Set a CRD's status as kube's naming and establishing controllers do:
 * acceptedNames, NamesAccepted/Established conditions (False with the
 * conflict when another CRD of the group holds a name), storedVersions
 * (kept from `old`, the stored CRD or NULL).
 */
void emu_crd_set_status(json_t *crd, const json_t *old);

/*
 * Serve the versions of a stored CRD whose names are accepted (and stop
 * serving versions it no longer serves), and register its schemas with
 * emu_managed_register_crd(). 0, or -1 with the reason appended to msg.
 */
int emu_crd_register(const json_t *crd, struct buf *msg);

/* Stop serving every resource of `crd` (deleted) and drop its schemas. */
void emu_crd_unregister(const json_t *crd);

/*
 * Prune and default a custom resource `obj` (in place) by its version's
 * structural schema: undeclared fields go, their paths appended to
 * `unknown` (an array of strings; may be NULL); absent fields with a
 * default get it. Built-in resources are left alone.
 */
void emu_crd_prune(const struct emu_resource *res, json_t *obj,
		   json_t *unknown);

/* Is `res` one of the resources (any version) of `crd`? */
bool emu_crd_serves(const json_t *crd, const struct emu_resource *res);

/* The scale subresource of a custom resource: its CRD's JSON paths. */
struct emu_crd_scale {
	const char *spec_replicas;   /* ".spec.replicas"; NULL: no scale */
	const char *status_replicas; /* ".status.replicas" */
	const char *label_selector;  /* ".status.selector", or NULL */
};

/*
 * The openAPIV3Schema of custom resource `res` (a new reference, or NULL
 * without one) and, when `scale` is not NULL, its scale paths (NULL
 * without a scale subresource). For other resources: NULL, no scale.
 */
json_t *emu_crd_schema(const struct emu_resource *res,
		       struct emu_crd_scale *scale);

/* ---- custom resource validation (crvalid.c) ---- */

/*
 * Append to `causes` ({"reason", "field", "message"} each) what the
 * validation of custom resource `obj` against its CRD finds: the schema,
 * the scale paths, the list types; `old` is the stored object on update
 * (what it did not change is not checked again), NULL on create; with
 * `status` only what a /status write checks.
 */
void emu_crd_validate(const struct emu_resource *res, const json_t *obj,
		      const json_t *old, bool status, json_t *causes);

/* The value at a CRD JSON path (".spec.replicas") of obj, or NULL. */
const json_t *emu_crd_path_get(const json_t *obj, const char *path);

/*
 * Set the value at a CRD JSON path, making the objects on the way; the
 * reference to `value` is stolen. 0, or -1 (a non-object on the way).
 */
int emu_crd_path_set(json_t *obj, const char *path, json_t *value);

/* ---- names and values (validate.c) ---- */

/* Go's %q of a string (strconv.Quote, printable UTF-8 kept). */
void emu_go_quote(struct buf *out, const char *s);

/* Go's %v of a float64 (the shortest digits, %e from 1e6 and below 1e-4). */
void emu_go_float(struct buf *out, double d);

/*
 * Go's %v of a decoded JSON value (fmt of interface{}): maps with sorted
 * keys as map[k:v ...], slices as [a b], nil as <nil>.
 */
void emu_go_value(struct buf *out, const json_t *v);

/* A value as a field.Error prints it: strings quoted, objects as JSON. */
void emu_field_value(struct buf *out, const json_t *v);

/*
 * Check `name` against `rule`. 0 when valid; otherwise -1 and the text
 * kube-apiserver gives after `Invalid value: "NAME": ` in *why (a static
 * string).
 */
int emu_name_check(const char *name, enum emu_name_rule rule, const char **why);

/* ---- label selectors (selector.c) ---- */

enum emu_sel_op {
	EMU_SEL_EQ,
	EMU_SEL_NE,
	EMU_SEL_IN,
	EMU_SEL_NOTIN,
	EMU_SEL_EXISTS,
	EMU_SEL_NOT_EXISTS,
	EMU_SEL_GT,
	EMU_SEL_LT,
};

struct emu_sel_req {
	char *key;
	enum emu_sel_op op;
	char **values;
	size_t nvalues;
};

struct emu_selector {
	struct emu_sel_req *reqs;
	size_t len;
};

#define EMU_SELECTOR_INIT \
	{                 \
		NULL, 0   \
	}

/*
 * Parse a label selector ("app=web,tier in (a,b),!legacy"). An empty or
 * NULL string selects everything. On error returns -1 with a message in
 * `msg` (appended); *sel is then empty.
 */
int emu_selector_parse(struct emu_selector *sel, const char *s,
		       struct buf *msg);

/* Does an object's metadata.labels (may be NULL) match? */
bool emu_selector_matches(const struct emu_selector *sel, const json_t *labels);

void emu_selector_release(struct emu_selector *sel);

/*
 * Field selectors on metadata.name and metadata.namespace ("=", "==",
 * "!="), as kube-apiserver supports them for every resource. The struct
 * owns copies of the values; release with emu_field_selector_release().
 */
struct emu_field_selector {
	char *name; /* NULL: any */
	bool name_negated;
	char *ns;
	bool ns_negated;
};

#define EMU_FIELD_SELECTOR_INIT          \
	{                                \
		NULL, false, NULL, false \
	}

int emu_field_selector_parse(struct emu_field_selector *fs, const char *s,
			     struct buf *msg);
void emu_field_selector_release(struct emu_field_selector *fs);

/* ---- store (store.c) ---- */

struct emu_entry {
	const struct emu_resource *res;
	char *ns; /* "" for cluster-scoped */
	char *name;
	json_t *obj; /* owned */
};

/* Events a watch can replay from (?resourceVersion=R). */
#define EMU_WATCH_HISTORY 1000
/*
 * BOOKMARK events with ?allowWatchBookmarks=true, as the watch cache
 * sends them: about every minute and 2 s before the watch times out.
 */
#define EMU_BOOKMARK_MS 60000
#define EMU_BOOKMARK_BEFORE_END_MS 2000
/* Most bytes queued for one watch; a slower reader loses its stream. */
#define EMU_WATCH_QUEUE_MAX (16u << 20)

/* One write as watches see it; obj carries kind and apiVersion. */
struct emu_event {
	uint64_t rv;
	const struct emu_resource *res;
	char *ns;
	char *name;
	const char *type; /* "ADDED", "MODIFIED" or "DELETED" */
	json_t *obj;	  /* owned */
	json_t *prev;	  /* MODIFIED: the object before (owned); else NULL */
};

struct emu_watch;
struct emu_actors;
struct emu_slot;

struct emu_store {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* signalled on every event and on shutdown */
	struct emu_entry *items;
	size_t len;
	size_t alloc;
	uint64_t rv; /* last resourceVersion handed out */
	/* Ring of the last EMU_WATCH_HISTORY events, oldest at hist_first. */
	struct emu_event *hist;
	size_t hist_first;
	size_t hist_len;
	uint64_t hist_floor; /* rv of the newest event dropped from the ring */
	struct emu_watch *watches; /* open watches, linked by ->next */
	bool closing;		   /* emu_store_shutdown() was called */
	uint32_t next_cluster_ip;  /* Service clusterIP allocator (defaults.c) */
	struct emu_actors *actors; /* admission/rollout stand-ins, or NULL */
	/*
	 * Hash index of items by resource, namespace and name (store.c):
	 * open addressing, nslots a power of two (0: empty).
	 */
	struct emu_slot *slots;
	size_t nslots;
};

/* Fill caller storage with the initial namespaces. 0 or -1 (no memory). */
int emu_store_init(struct emu_store *st);
void emu_store_release(struct emu_store *st);

/*
 * The verbs. Each returns the HTTP status code and sets *out to a new
 * reference the caller owns: the object (or list) on success, else a
 * failure Status. `ns` is "" for cluster-scoped resources; `obj` is
 * borrowed (the store keeps a copy). With `dry_run` nothing is stored
 * and no resourceVersion is used up.
 */
int emu_store_get(struct emu_store *st, const struct emu_resource *res,
		  const char *ns, const char *name, json_t **out);

/* What a LIST selects; NULL members select everything. */
struct emu_list_options {
	const char *ns; /* NULL: every namespace */
	const struct emu_selector *labels;
	const struct emu_field_selector *fields;
	size_t limit;	  /* 0: no limit */
	const char *cont; /* continue token from a previous page, or NULL */
};

int emu_store_list(struct emu_store *st, const struct emu_resource *res,
		   const struct emu_list_options *opts, json_t **out);
/*
 * `manager` names the writer in managedFields (NULL: managedFields are
 * left alone).
 */
int emu_store_create(struct emu_store *st, const struct emu_resource *res,
		     const char *ns, const json_t *obj, const char *manager,
		     bool dry_run, json_t **out);

/*
 * PUT. `sub` is NULL for the main resource, "status" (only the body's
 * status is taken) or "scale" (a whole object, as for the main resource,
 * recorded in managedFields as a /scale write).
 */
int emu_store_update(struct emu_store *st, const struct emu_resource *res,
		     const char *ns, const char *name, const char *sub,
		     const char *manager, const json_t *obj, bool dry_run,
		     json_t **out);
int emu_store_delete(struct emu_store *st, const struct emu_resource *res,
		     const char *ns, const char *name, bool dry_run,
		     json_t **out);

/*
 * DELETE with a propagationPolicy (NULL, "Background", "Foreground",
 * "Orphan"). An object with finalizers (its own or those the deletion
 * adds) is marked with a deletionTimestamp and answered; it goes when an
 * update leaves it without finalizers, or at once when they are all a
 * controller's of a full cluster (garbage collector, namespace
 * controller, CRD cleanup). Otherwise it goes at once and the answer is
 * a Success Status (the deleted object for namespaces, pods, services,
 * service accounts).
 */
int emu_store_delete_opts(struct emu_store *st, const struct emu_resource *res,
			  const char *ns, const char *name,
			  const char *propagation, bool dry_run, json_t **out);

/*
 * Persistence (--data): every stored object and the resourceVersion
 * counter as one JSON document {"resourceVersion":"N","objects":[{
 * "resource":"G/V/PLURAL","object":{...}}]} (new reference), and back.
 * emu_store_restore() wants a store fresh from emu_store_init(): it
 * replaces its objects (CRDs first, so their resources exist) and
 * returns 0, or -1 with the reason appended to `msg` (store unchanged).
 */
json_t *emu_store_dump(struct emu_store *st);
int emu_store_restore(struct emu_store *st, const json_t *dump,
		      struct buf *msg);

/*
 * Append the compact JSON text of `v` to `out`, as json_dumps(v,
 * JSON_COMPACT | JSON_ENCODE_ANY) writes it (members in insertion
 * order), in a fraction of the time for large lists: runs of plain
 * characters are copied whole. 0, or -1 when out of memory.
 */
int emu_json_write(const json_t *v, struct buf *out);

/* What a watch selects and how its stream behaves. */
struct emu_watch_options {
	const char *ns;	    /* NULL: every namespace */
	const char *labels; /* label selector text, or NULL */
	const char *fields; /* field selector text, or NULL */
	const char *rv;	    /* resourceVersion; NULL or "0": send ADDED first */
	bool bookmarks;
	bool table;	    /* events carry Tables (Accept: as=Table) */
	unsigned timeout_s; /* 0: none */
};

/*
 * Open a watch on `res`. Returns 0 and a new watch in *out (caller owns
 * it; close with emu_watch_free()), or 400 with a Status in *status when
 * a selector does not parse. A resourceVersion older than the history
 * gives a watch whose stream is one ERROR event (Status 410 Expired).
 */
int emu_watch_open(struct emu_store *st, const struct emu_resource *res,
		   const struct emu_watch_options *opts, struct emu_watch **out,
		   json_t **status);

/*
 * Wait up to wait_ms for the next events of `w` and append them to `out`,
 * one JSON line each. 1: something was appended; 0: nothing yet; -1: the
 * stream has ended (timeout, expired, overflow or shutdown).
 */
int emu_watch_next(struct emu_watch *w, struct buf *out, int wait_ms);

/* Unregister and free a watch; accepts NULL. */
void emu_watch_free(struct emu_watch *w);

/*
 * For store.c, with the lock held: record a write of `obj` (its
 * metadata.resourceVersion is the event's; `prev` the object it replaced,
 * for MODIFIED) in the history and in the queue of every watch it
 * matches, and wake the readers. A watch whose selectors the object
 * enters sees ADDED, one it leaves sees DELETED (of the previous
 * state), as the watch cache filters. The history keeps references to
 * obj's and prev's members: they must never change afterwards (pass
 * stored objects, or copies of them).
 */
void emu_store_record(struct emu_store *st, const char *type,
		      const struct emu_resource *res, const char *ns,
		      const char *name, const json_t *obj, const json_t *prev);

/* Free the history and the watches' registrations. Lock not held. */
void emu_store_watch_release(struct emu_store *st);

/* End every open watch promptly (server shutdown). */
void emu_store_shutdown(struct emu_store *st);

/* The stored object (borrowed) or NULL. Lock held. */
const json_t *emu_store_peek(const struct emu_store *st,
			     const struct emu_resource *res, const char *ns,
			     const char *name);

/* Append 5 characters of kube's random name alphabet (generateName). */
void emu_random_suffix(struct buf *out);

/* Not-found Status for `name` of `res` ("configmaps \"x\" not found"). */
json_t *emu_status_not_found(const struct emu_resource *res, const char *name);

/* ---- protobuf bodies (protobuf.c) ---- */

/*
 * Decode an "application/vnd.kubernetes.protobuf" body of the kinds
 * kubectl's typed create commands send (ConfigMap, Secret, Namespace,
 * ServiceAccount). Returns a new object, or NULL with a message appended
 * to `msg`.
 */
json_t *emu_protobuf_decode(const char *data, size_t len, struct buf *msg);

/* ---- JSON syntax (gojson.c) ---- */

/*
 * Is data[0..len) one JSON value? 0, or -1 with encoding/json's error
 * appended to `why` ("unexpected end of JSON input", "invalid character
 * 'x' looking for beginning of value").
 */
int emu_go_json_check(const char *data, size_t len, struct buf *why);

/*
 * The same, and the paths of keys an object repeats ("data.a",
 * "spec.containers[0].name") appended to `dups` (an array of strings).
 */
int emu_go_json_scan(const char *data, size_t len, struct buf *why,
		     json_t *dups);

/* ---- managedFields (managed.c) ---- */

/*
 * Record an Update by `manager` (through subresource `sub`, NULL for the
 * main resource) that turns `old` (NULL on create) into `obj`, in obj's
 * metadata.managedFields. A body's own managedFields, when it has them,
 * replace the stored ones first. -1 when the object's fields cannot be
 * computed (obj is then left as it was).
 */
int emu_managed_update(json_t *obj, const json_t *old,
		       const struct emu_resource *res, const char *manager,
		       const char *sub, const char *api_version);

struct diff_ssa_result;
struct err;

/*
 * Server-side apply of `applied` by `manager` onto `live` (NULL: the
 * object is created), with the kind's schema from the registry the Update
 * bookkeeping uses: diff_ssa_apply() stamped with the current time. The
 * caller strips what the server owns (status, uid, resourceVersion, ...)
 * from `applied` first. *out is caller storage; release it with
 * diff_ssa_result_release(). ERR_INVALID (message in err) when applied
 * cannot be typed, ERR_NOMEM.
 */
int emu_managed_apply(struct diff_ssa_result *out, const json_t *live,
		      const json_t *applied, const struct emu_resource *res,
		      const char *manager, bool force, struct err *err);

/*
 * The schema (list types, merge keys, quantities) of `res`, valid until
 * emu_schema_release(), which must follow every acquire (even one that
 * returned NULL: out of memory). Do not register CRDs in between.
 */
struct diff_schema;
const struct diff_schema *emu_schema_acquire(const struct emu_resource *res);
void emu_schema_release(void);

/*
 * Register the list and map types of a CustomResourceDefinition's
 * schemas for managedFields and apply (replacing an earlier one of the
 * same group/kind); 0, or -1 with the reason appended to `msg`.
 */
int emu_managed_register_crd(const json_t *crd, struct buf *msg);
void emu_managed_unregister_crd(const char *group, const char *kind);

/*
 * The manager of a write: ?fieldManager=, else the User-Agent up to its
 * first '/' ("kubectl/v1.36.3 (linux/amd64)" -> "kubectl").
 */
void emu_manager_name(const char *field_manager, const char *user_agent,
		      struct buf *out);

/* ---- patches (patch.c) ---- */

/*
 * Apply an RFC 6902 JSON patch (`ops`, an array of operations) to `doc`
 * in place. Returns 0, or the HTTP code kube-apiserver answers (with its
 * message appended to `msg`) when the patch is malformed or an operation
 * fails; `doc` is then unspecified (the caller works on a copy).
 */
int emu_json_patch(json_t *doc, const json_t *ops, struct buf *msg);

/*
 * A strategic merge patch of `patch` onto `orig` (borrowed) for a
 * built-in resource, with the patch strategies and merge keys of
 * Kubernetes' Go types (directives $patch, $retainKeys,
 * $deleteFromPrimitiveList, $setElementOrder). Returns a new object, or
 * NULL with *code (400, 415 or 422) and kube's message in `msg`.
 */
json_t *emu_strategic_merge_patch(const json_t *orig, const json_t *patch,
				  const struct emu_resource *res, int *code,
				  struct buf *msg);

/* ---- defaulting and validation (defaults.c, validate.c) ---- */

/*
 * Set the defaults kube-apiserver 1.36 sets for `res` on `obj` (in
 * place): what the object alone decides (diff_stored_defaults(), the
 * model syncd compares with), and a DaemonSet's template generation as
 * the field manager sees it. `old` is the stored object on update, NULL
 * on create. Cluster IPs and the rest that needs the store are
 * emu_defaults_prepare()'s.
 * Returns NULL, or a new 400 BadRequest Status when a value cannot be
 * decoded (a quantity that does not parse), as kube's decoder answers.
 */
json_t *emu_defaults_apply(const struct emu_resource *res, json_t *obj,
			   const json_t *old);

/*
 * What the registries set after the field manager has recorded a write
 * (so that nobody owns it), on `obj` in place, `old` the stored object
 * or NULL: Service cluster IPs, IP families and node ports (kept from
 * `old` or allocated), a Job's generated selector and labels, a
 * DaemonSet's template generation annotation, and for a new Pod the
 * built-in admission plugins (ServiceAccount, DefaultTolerationSeconds,
 * Priority) and its first status. Lock held. Returns NULL, or a new
 * Status refusing the write (403: the Pod's service account is missing).
 */
json_t *emu_defaults_prepare(struct emu_store *st,
			     const struct emu_resource *res, json_t *obj,
			     const json_t *old);

/*
 * Validate the values of `obj` as kube-apiserver does for the fields
 * tests touch (metadata labels and annotations, ConfigMap and Secret
 * data, workload selectors and replicas, containers, ports; a custom
 * resource's kind and its CRD's schema). `old` is the stored object on
 * update, `sub` the subresource written (NULL, "status", "scale").
 * Returns NULL, or a new 422 Invalid Status listing every cause.
 */
json_t *emu_validate_object(const struct emu_resource *res, const json_t *obj,
			    const json_t *old, const char *sub);

/* ---- other actors (actors.c) ---- */

struct emu_request;
struct emu_response;

/*
 * The mutating-webhook and rollout stand-ins of one server. The rollout
 * thread writes /status through the store's public functions.
 */
struct emu_actors *emu_actors_new(struct emu_store *st);
void emu_actors_free(struct emu_actors *a); /* accepts NULL */

/*
 * Configure from a command-line flag: what is "webhook" or "rollout",
 * spec its text (syntax in kube-emu/README.md). 0, or -1 with the
 * reason appended to `msg`.
 */
int emu_actors_configure(struct emu_actors *a, const char *what,
			 const char *spec, struct buf *msg);

/*
 * Mutating admission, called by the store with its lock held after
 * defaulting and managedFields (so what it adds is owned by nobody):
 * may change `obj`. `op` is "CREATE" or "UPDATE". Returns NULL, or a
 * new Status refusing the write. a may be NULL (no actors).
 */
json_t *emu_actors_admit(struct emu_actors *a, const struct emu_resource *res,
			 const char *op, json_t *obj);

/*
 * A write was stored (lock held; obj borrowed): the rollout stand-in
 * schedules the object's status. a may be NULL.
 */
void emu_actors_notify(struct emu_actors *a, const struct emu_resource *res,
		       const json_t *obj);

/*
 * /emu/webhooks and /emu/rollouts (seg[0] is "emu"): 0 when handled
 * (reply in resp), -1 when the path is not the actors'.
 */
int emu_actors_control(struct emu_actors *a, const struct emu_request *req,
		       char **seg, size_t n, struct emu_response *resp);

/* ---- faults and counters (faults.c) ---- */

/* Injected faults and request counters of one server. */
struct emu_faults *emu_faults_new(void);
void emu_faults_free(struct emu_faults *f); /* accepts NULL */

/*
 * Add the faults of a --faults SPEC (syntax in kube-emu/README.md).
 * 0, or -1 with the reason appended to `msg`.
 */
int emu_faults_add_spec(struct emu_faults *f, const char *spec,
			struct buf *msg);

/* Drop every fault (counters stay). */
void emu_faults_clear(struct emu_faults *f);

/* What the matching faults do to one request. */
struct emu_fault_hit {
	unsigned latency_ms;	/* wait before answering */
	int code;		/* answer this failure Status; 0: none */
	unsigned retry_after;	/* seconds, with code */
	char message[256];	/* the fault's message=, or "" */
	bool drop;		/* cut the connection mid-body */
	unsigned watch_end_ms;	/* end a watch after this long; 0: never */
	bool expire;		/* 410 Expired (list or watch) */
};

/*
 * The request of `verb` ("get", "list", "watch", "create", "update",
 * "patch", "delete", "deletecollection") on `res` in `ns` ("" or NULL
 * when cluster-scoped or across namespaces) named `name` (NULL for a
 * collection): fill *hit from the faults that fire, using up their counts.
 * `flags`: EMU_FAULT_HAS_RV, a list or watch carries a resourceVersion or
 * continue token (what `expire` needs); EMU_FAULT_DRY_RUN, a dry run.
 * f may be NULL.
 */
#define EMU_FAULT_HAS_RV  1u
#define EMU_FAULT_DRY_RUN 2u
void emu_faults_match(struct emu_faults *f, const char *verb,
		      const struct emu_resource *res, const char *ns,
		      const char *name, unsigned flags,
		      struct emu_fault_hit *hit);

/*
 * The Status kube-apiserver answers with `code` for a request on `res`
 * named `name` (may be NULL): TooManyRequests, InternalError,
 * ServiceUnavailable, ... `message` replaces the default wording when
 * not NULL. New reference.
 */
json_t *emu_fault_status(int code, const struct emu_resource *res,
			 const char *name, const char *message,
			 unsigned retry_after);

/*
 * Count one answered API request (`res` NULL for discovery and other
 * non-resource paths; `sub` NULL or "status"/"scale"). f may be NULL.
 */
void emu_faults_count(struct emu_faults *f, const char *verb,
		      const struct emu_resource *res, const char *sub,
		      int code);

/*
 * /emu/faults and /emu/stats (seg[0] is "emu"): 0 when handled (reply
 * in resp), -1 when the path is not theirs.
 */
int emu_faults_control(struct emu_faults *f, const struct emu_request *req,
		       char **seg, size_t n, struct emu_response *resp);

/* Faults on watches (watch.c): end the stream `ms` from now, cleanly. */
void emu_watch_end_after(struct emu_watch *w, unsigned ms);

/*
 * Replace what the watch would send by one ERROR event, Status 410
 * Expired for resourceVersion `rv`, and end it.
 */
void emu_watch_expire(struct emu_watch *w, const char *rv);

/* ---- server-side printing (table.c) ---- */

/* Does an Accept header ask for a meta.k8s.io Table (kubectl get)? */
bool emu_table_wanted(const char *accept);

/*
 * The Table of `objs` (an array of full objects of `res`, borrowed) with
 * the columns kube-apiserver prints for the resource; `list_meta` (may
 * be NULL) becomes its metadata; without `headers` the column
 * definitions are left empty (watch events after the first). New
 * reference.
 */
json_t *emu_table_new(const struct emu_resource *res, const json_t *objs,
		      const json_t *list_meta, bool headers);

/* ---- Status objects (status.c) ---- */

/*
 * A failure Status as kube-apiserver writes it. `reason` may be NULL
 * (then omitted); `name`, `group`, `kind` fill details when not NULL.
 * Returns a new reference.
 */
json_t *emu_status_new(int code, const char *reason, const char *message,
		       const char *name, const char *group, const char *kind);

/* ---- request handling (handler.c) ---- */

struct emu_param {
	const char *key;
	const char *value;
};

struct emu_request {
	const char *method;
	const char *path; /* without the query string */
	const struct emu_param *query;
	size_t nquery;
	const char *content_type; /* NULL when absent */
	const char *user_agent;
	const char *authorization;
	const char *body;
	size_t body_len;
	bool body_too_large; /* the body went over EMU_MAX_BODY */
	const char *accept;  /* Accept header; NULL when absent */
};

struct emu_response {
	int code;
	const char *content_type; /* static string */
	struct buf body;
	/* Non-NULL: stream this watch after the headers (body unused). */
	struct emu_watch *watch;
	/*
	 * Fault injection: send the headers and about half of the body,
	 * then cut the connection (main.c).
	 */
	bool drop;
	/* Seconds for a Retry-After header; 0: none. */
	unsigned retry_after;
	/*
	 * Warning headers (`299 - "text"`), one text per line: unknown
	 * fields dropped, deprecated kinds.
	 */
	struct buf warnings;
};

#define EMU_RESPONSE_INIT                                  \
	{                                                  \
		0, NULL, BUF_INIT, NULL, false, 0, BUF_INIT \
	}

/* Release what *resp holds but its watch. */
void emu_response_release(struct emu_response *resp);

/* Add a warning to *resp. */
void emu_response_warn(struct emu_response *resp, const char *text);

struct emu_faults;

struct emu_server {
	struct emu_store store;
	const char *token;	   /* NULL: no authentication */
	const char *host;	   /* "127.0.0.1:PORT", for /api */
	struct emu_faults *faults; /* faults.h; NULL: none */
	/* Serve /api and /apis as plain JSON only (a pre-1.26 server). */
	bool no_aggregated_discovery;
};

/*
 * Set *resp to `body` (consumed) as JSON with `code`; out of memory
 * becomes a 500 Status. And the same for a failure Status.
 */
void emu_reply_json(struct emu_response *resp, int code, json_t *body);
void emu_reply_status(struct emu_response *resp, int code, const char *reason,
		      const char *message);

/*
 * Answer one request into *resp (caller storage, initialised with
 * EMU_RESPONSE_INIT; release resp->body). Never fails: every problem
 * becomes a Status body.
 */
void emu_handle(struct emu_server *srv, const struct emu_request *req,
		struct emu_response *resp);

#endif
