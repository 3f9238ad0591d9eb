/*
 * An app against a cluster: its ApplySet inventory (parent Secret and
 * `applyset.kubernetes.io/part-of` labels, kubernetes-api.md "Inventory
 * labels"), reading its live objects, and one reconcile pass (ordered
 * server-side apply, then prune of labelled orphans).
 *
 * The steps, as `syncd diff` and `syncd sync` run them:
 *
 *   app_init()             name, namespace, field manager; the ApplySet id
 *   app_label()            the part-of label on every desired object
 *   app_read_live()        the parent, one LIST per (type, namespace),
 *                          one GET per desired object the LISTs missed;
 *                          adds the desired parent object to `desired`
 *   app_add_schemas()      CRD list types from desired and live CRDs
 *   diff_compare()         the report
 *   app_sync()             apply, wait for CRDs, prune, summary
 *
 * The room's files: inventory.c (init, label, parent, types), live.c
 * (reads, schemas, dry runs, app_compare()), sync.c (app_sync()),
 * conn.c (the connection), spec.c (the app spec and the render cache),
 * health.c (the app's health); internal.h is what they share.
 */
#ifndef APP_APP_H
#define APP_APP_H

#include <stdbool.h>
#include <stddef.h>

#include <stdint.h>

#include "diff/diff.h"
#include "health/health.h"
#include "renderers/render.h"
#include "source/source.h"
#include "kube/kube.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/strvec.h"

#define APP_LABEL_PART_OF   "applyset.kubernetes.io/part-of"
#define APP_LABEL_ID	    "applyset.kubernetes.io/id"
#define APP_ANN_TOOLING	    "applyset.kubernetes.io/tooling"
#define APP_ANN_GROUP_KINDS "applyset.kubernetes.io/contains-group-kinds"
#define APP_ANN_NAMESPACES  "applyset.kubernetes.io/additional-namespaces"
/* The wave of an object ("-1", "0", "2"): later waves wait for earlier. */
#define APP_ANN_WAVE	    "syncd.io/wave"
#define APP_WAVE_MAX	    1000000
/*
 * Per-object options (docs/annotations.md): never pruned; created when
 * missing, never updated; differences never reported; deleted and
 * created again when an apply hits an immutable field.
 */
#define APP_ANN_PRUNE	    "syncd.io/prune"   /* "disabled" */
#define APP_ANN_APPLY	    "syncd.io/apply"   /* "create-only" */
#define APP_ANN_COMPARE	    "syncd.io/compare" /* "ignore" */
#define APP_ANN_REPLACE	    "syncd.io/replace" /* "true" | "false" */
#define APP_ANN_SUBSTITUTE  RENDER_ANN_SUBSTITUTE

struct app_type;
struct app_spec;

/*
 * Verdicts kept from one pass to the next (the controller keeps one per
 * app): the live objects found in sync, each by its identity and version
 * (uid and resourceVersion), with the count of differences ignore rules
 * dropped and its health. While the desired objects and every rule they
 * are compared and judged by stay the same (app_memo_begin()'s basis), an
 * object listed again in the same version is settled from its verdict:
 * it is not read into a tree nor compared again, since the API server
 * gives every change of an object a new resourceVersion. Only objects of
 * the built-in kinds are kept (a custom resource's comparison follows its
 * CRD, which can change under it).
 */
struct app_memo;

struct app_memo *app_memo_new(void);
void app_memo_free(struct app_memo *m);

/*
 * A pass compared on `basis`, a text naming the desired objects and the
 * rules (the controller's: the render kept on disk, which names the
 * source tree and the spec). Verdicts of another basis are forgotten.
 * ERR_NOMEM.
 */
int app_memo_begin(struct app_memo *m, const char *basis);

/* Forget every verdict (and the basis). */
void app_memo_forget(struct app_memo *m);

/* How many verdicts are kept (NULL: 0). */
size_t app_memo_len(const struct app_memo *m);

/* The hashes the verdicts are found by (strings with their lengths). */
uint64_t app_memo_key(const char *group, const char *kind, const char *ns,
		      size_t ns_len, const char *name, size_t name_len);
uint64_t app_memo_version(const char *uid, size_t uid_len, const char *rv,
			  size_t rv_len);

/* Keep a verdict (replacing that of the same key). ERR_NOMEM. */
int app_memo_put(struct app_memo *m, uint64_t key, uint64_t version,
		 size_t ignored, const struct health *h);

/*
 * The verdict of `key` in `version`: 1 with *ignored and *h (the caller
 * releases it) filled; 0 when none is kept; ERR_NOMEM.
 */
int app_memo_get(const struct app_memo *m, uint64_t key, uint64_t version,
		 size_t *ignored, struct health *h);

struct app {
	struct kube_client *client;  /* borrowed */
	struct kube_discovery *disc; /* borrowed */
	char *name;		     /* app name (the parent's name) */
	char *namespace;	     /* default namespace, the parent's */
	char *field_manager;
	char *id; /* applyset-<hash>-v1 */
	/* Filled by app_read_live(): */
	struct diff_objset live; /* labelled objects, GETs, the parent */
	const struct kube_resource *secrets; /* the parent's resource */
	struct app_type *types; /* resource types the app touches */
	size_t ntypes;
	unsigned requests; /* LIST and GET requests sent */
	/*
	 * app_compare() reads page by page and settles each live object in
	 * sync with its desired one as it comes (diff_object_settle()), so a
	 * pass holds one page of live objects plus the compact rest. The
	 * health of a settled object is taken then, by index in live (its
	 * json is a stub); health_rules are the rules it is taken with
	 * (borrowed; NULL: the built-in ones), which app_health_of() and
	 * app_sync() use too. keep_live: settle nothing, every live object
	 * kept whole (diff --server-side compares them again).
	 */
	const struct health_rules *health_rules;
	bool keep_live;
	/*
	 * Verdicts of earlier passes on the same basis (borrowed; NULL:
	 * none): objects listed again in a version found in sync are settled
	 * from them, and each object settled by comparing is kept in it.
	 * `reused` counts the objects settled from it.
	 */
	struct app_memo *memo;
	size_t reused;
	struct health *settled_health;
	size_t settled_alloc;
	/*
	 * Where the labelled objects of one (resource, namespace) come from
	 * instead of a LIST (the controller's watch cache): 0 with *items a
	 * new array of this app's objects (read-only, they may be shared),
	 * or ERR_NOTFOUND when not cached, and the app lists the server.
	 * `ns` is NULL for a cluster-scoped resource. NULL: always list.
	 */
	int (*list_hook)(const struct app *app,
			 const struct kube_resource *res, const char *ns,
			 json_t **items, void *ctx);
	void *list_ctx;
	/*
	 * The app's namespace as an object of the app (createNamespace),
	 * with these labels and annotations ({"labels": {..},
	 * "annotations": {..}}, borrowed; NULL: none): app_compare() adds
	 * it to the desired objects unless they declare it.
	 */
	bool create_namespace;
	const json_t *namespace_metadata;
};

/*
 * Fill *app (caller storage; release with app_release(), also after a
 * failure). `name` must be a valid object name (it names the parent
 * Secret): ERR_USAGE otherwise.
 */
int app_init(struct app *app, struct kube_client *c, struct kube_discovery *d,
	     const char *name, const char *ns, const char *field_manager,
	     struct err *err);
void app_release(struct app *app);

/* What the spec says of the app itself (createNamespace); borrowed. */
void app_use_spec(struct app *app, const struct app_spec *s);

/*
 * Give every object of `desired` the part-of label (in place). An object
 * that collides with the parent (Secret <namespace>/<name>) is
 * ERR_INVALID.
 */
int app_label(struct app *app, struct diff_objset *desired, struct err *err);

/*
 * Read the parent, then one LIST per (resource type, namespace) filtered
 * by the part-of label, then a GET for each desired object the LISTs did
 * not return, into app->live; then add the desired parent (whose
 * contains-group-kinds covers the desired and the live members) to
 * `desired`. A desired object whose kind the server does not serve is
 * left Missing when a desired CRD defines it, else ERR_NOTFOUND naming it
 * (the others are still read; the error is returned at the end). A live
 * Secret of the parent's name that is not this app's parent is
 * ERR_EXISTS: syncd never takes over an object it did not make.
 */
int app_read_live(struct app *app, struct diff_objset *desired,
		  struct err *err);

/*
 * Register the list types of the CRDs among the desired and live objects,
 * and fetch the CRD of every other custom resource type the app uses.
 */
int app_add_schemas(struct app *app, struct diff_schemas *reg,
		    const struct diff_objset *desired, struct err *err);

/*
 * `syncd diff --server-side`: dry-run apply of each desired object (the
 * report's apply body when it has one, else the object itself), one
 * request per object. *out gets the objects as the server would store
 * them (objects whose type is not served yet are left out: the caller
 * keeps their local report). A failed dry run is reported in `err` and
 * the object left out; the others still run.
 */
int app_dry_run(struct app *app, const struct diff_report *report,
		const struct diff_objset *desired, struct diff_objset *out,
		struct err *err);

/*
 * ---------------------------------------------------------------------
 * Confirming drift with the server (`verify: dryRun`, app/verify.c)
 * ---------------------------------------------------------------------
 */

enum app_verify {
	APP_VERIFY_DRY_RUN, /* the default */
	APP_VERIFY_OFF,
};

/* The names of the modes, by value ("dryRun", "off"); NULL-ended. */
extern const char *const app_verify_names[];

/* The mode `name` names: 0, or ERR_USAGE naming the choices in `err`. */
int app_verify_parse(const char *name, enum app_verify *out, struct err *err);

struct app_verify_stats {
	size_t candidates; /* objects the local comparison found Drifted */
	size_t dry_runs;   /* dry-run applies sent (one request each) */
	size_t remembered; /* verdicts reused: no request */
	size_t cleared;    /* found in sync: the server stores them as live */
	size_t refused;    /* the server refuses the apply */
	/* Of the dry runs sent: those found in sync, those refused. */
	size_t sent_cleared, sent_refused;
};

/*
 * Confirm each object `report` finds Drifted, with an apply to send, by
 * one dry run of that apply (its body, with its force): when what
 * the server would store equals live, the object's report is replaced by
 * an InSync one; when the server refuses the apply (validation, an
 * immutable field, a webhook's denial, a conflict), the object stays
 * Drifted with a warning quoting the server. Objects in sync, missing or
 * orphaned cost nothing. Verdicts are kept in *memo (NULL at first; the
 * caller owns it and frees it with json_decref(); memo NULL: nothing is
 * kept, as for a one-shot command; st may be NULL) by the live object's
 * uid and resourceVersion and a digest of the desired object and the
 * apply options, so a later call asks nothing until one changes; only
 * the verdicts this call used are kept. A dry run that fails otherwise
 * (unreachable, not served) keeps the local verdict and is reported in
 * `err`; the others still run.
 */
int app_verify(struct app *app, struct diff_report *report,
	       const struct diff_objset *desired, const struct diff_schemas *reg,
	       const struct diff_options *opts, json_t **memo,
	       struct app_verify_stats *st, struct err *err);

struct app_sync_options {
	bool prune;
	bool dry_run;
	const char *const *prune_allow; /* "Kind" or "Kind.group"; NULL-ended */
	size_t prune_budget;		/* deletions per pass */
	unsigned crd_wait_ms;		/* 0: 60 s */
	/*
	 * Called for each object an apply stored (not for dry runs) with
	 * the server's answer; NULL: nobody is told.
	 */
	void (*applied)(const struct diff_key *key, const json_t *stored,
			void *ctx);
	/* An object that could not be written or pruned, and why. */
	void (*failed)(const struct diff_key *key, const char *why, void *ctx);
	/* An object pruned (not for dry runs): the live object deleted. */
	void (*pruned)(const json_t *live, void *ctx);
	void *applied_ctx; /* the context of the three callbacks */
	/*
	 * Waves (annotation syncd.io/wave): how long to wait for a wave to
	 * become healthy before the next (0: not at all; the pass stops at
	 * the first wave that is not, and res->waiting says why), and the
	 * per-kind health rules (NULL: the built-in ones).
	 */
	uint64_t wave_wait_ms;
	const struct health_rules *health_rules;
	/*
	 * A pass whose desired objects are none at all (the parent and a
	 * createNamespace Namespace aside) prunes nothing unless
	 * allow_empty: a broken render must not delete the app.
	 */
	bool allow_empty;
	/*
	 * An apply the server refuses for an immutable field: delete the
	 * object (uid precondition, foreground) and create it again, when
	 * the object says syncd.io/replace: "true", or when `replace` and it
	 * does not say "false". Never for kinds that hold data (Namespace,
	 * PersistentVolumeClaim, CustomResourceDefinition) unless listed in
	 * replace_allow ("Kind" or "Kind.group"; NULL-ended). How long to
	 * wait for the deletion: replace_wait_ms (0: 60 s).
	 */
	bool replace;
	const char *const *replace_allow;
	unsigned replace_wait_ms;
};

/*
 * The options of a pass as the spec says (prune, budget, kinds,
 * allowEmpty, onImmutable); the callbacks and waits are the caller's.
 * *so is overwritten; it points into `s`.
 */
void app_sync_options_from_spec(struct app_sync_options *so,
				const struct app_spec *s);

/* What one write of a pass did, in the order the pass did it. */
struct app_sync_entry {
	char *object; /* diff_key_format() of the object; NULL for the app
			 as a whole (a prune held back by its budget) */
	char *result; /* "created", "configured", "pruned", "failed: WHY",
			 ..., with " (dry run)" for a dry run */
};

struct app_sync_result {
	size_t applied, unchanged, pruned, failed, kept;
	struct app_sync_entry *entries; /* every object written or failed */
	size_t nentries, aentries;
	struct err failures; /* one line per failure: object and message */
	/*
	 * Not NULL when the pass stopped before a wave: "waiting for wave 0
	 * before wave 1: Deployment.apps ns/web is Progressing: ...".
	 */
	char *waiting;
};

#define APP_SYNC_RESULT_INIT                                  \
	{                                                     \
		0, 0, 0, 0, 0, NULL, 0, 0, ERR_INIT, NULL     \
	}
void app_sync_result_release(struct app_sync_result *res);

/*
 * One reconcile pass over `report` (diff_compare() of `desired` with
 * app->live): the parent first, then CRDs (waiting until Established and
 * served) and Namespaces, then wave by wave (syncd.io/wave, ascending;
 * the next wave only once this one is healthy, see wave_wait_ms) other
 * cluster-scoped objects, then namespaced objects; only objects with an
 * apply body are written. Then, unless a wave stopped the pass, with
 * opts->prune,
 * orphans are deleted (uid precondition) except protected kinds
 * (Namespace, PersistentVolumeClaim, CustomResourceDefinition unless
 * allowed), and nothing at all when more than prune_budget would go. A
 * failed object is counted in `res` and the pass goes on. Returns 0 when
 * the pass ran (check res->failed), <0 when it could not.
 */
int app_sync(struct app *app, const struct diff_report *report,
	     const struct diff_objset *desired,
	     const struct app_sync_options *opts, struct app_sync_result *res,
	     struct err *err);

/* What an object's syncd.io/ annotations ask. */
struct app_object_options {
	long wave;
	bool prune_disabled; /* syncd.io/prune: disabled */
	bool create_only;    /* syncd.io/apply: create-only */
	bool compare_ignore; /* syncd.io/compare: ignore */
	int replace;	     /* syncd.io/replace: 1, 0; -1: not said */
};

/*
 * Read them from `obj` into *out. An unknown syncd.io/ key or a value not
 * allowed is ERR_INVALID, every such problem appended to `why` (may
 * be NULL; "; " between them) as "annotation syncd.io/apply: \"x\" is not one of ...".
 */
int app_object_options(const json_t *obj, struct app_object_options *out,
		       struct buf *why);

/*
 * Every desired object's syncd.io/ annotations are known and valid: else
 * ERR_INVALID with one line per bad object ("FILE:LINE: ConfigMap ns/a:
 * annotation ..."). app_compare() checks this before anything is read.
 */
int app_annotations_check(const struct diff_objset *desired, struct err *err);

/*
 * What the annotations change in a report (app_compare() calls it): a
 * create-only object that exists is InSync with nothing to send; a
 * compare: ignore object that differs is InSync (its differing fields
 * counted as ignored) but keeps its apply body, sent only by a pass that
 * writes other drift.
 */
void app_report_options(struct diff_report *report,
			const struct diff_objset *desired);

/*
 * The wave of an object: its syncd.io/wave annotation, 0 without one.
 * ERR_INVALID (and *wave 0) when it is not a whole number within
 * +-APP_WAVE_MAX.
 */
int app_wave_of(const json_t *obj, long *wave);


/*
 * The app is removed with deletionPolicy: delete: every labelled object
 * of its inventory is deleted, in prune order, whatever the budget (but
 * not protected kinds unless opts->prune_allow lists them, nor objects
 * annotated syncd.io/prune: disabled), then the inventory Secret when
 * nothing is left. `opts` gives the callbacks and allowed kinds; res
 * says what went.
 */
int app_delete(struct app *app, const struct app_sync_options *opts,
	       struct app_sync_result *res, struct err *err);

/* A connection: config, client, discovery. */
struct app_conn {
	struct kube_config cfg;
	struct kube_client *client;
	struct kube_discovery *disc;
};

/*
 * Load the kubeconfig (`kubeconfig`, `context` may be NULL) and make a
 * client (`ko` may be NULL: defaults) and a discovery cache. Release with
 * app_conn_close(), also after a failure.
 */
int app_conn_open(struct app_conn *conn, const char *kubeconfig,
		  const char *context, const struct kube_client_options *ko,
		  struct err *err);

/*
 * app_conn_open() with every kubeconfig option (the controller prefers
 * the in-cluster config).
 */
int app_conn_open_with(struct app_conn *conn,
		       const struct kube_config_options *co,
		       const struct kube_client_options *ko, struct err *err);

void app_conn_close(struct app_conn *conn);

/*
 * The API server's version (`GET /version`, its gitVersion, e.g.
 * "v1.36.0") in out[size]. ERR_PARSE when the answer holds none or an
 * unlikely one.
 */
int app_conn_server_version(struct kube_client *client, char *out,
			    size_t size, struct err *err);

/*
 * The app name from a path: the basename of `path` (resolved, so "."
 * works), lower-cased, characters a name cannot hold as '-'. Caller
 * frees; NULL when nothing is left.
 */
char *app_name_from_path(const char *path);

/*
 * The comparison both commands start with: default namespaces
 * (app->namespace), the part-of label, app_read_live(),
 * app_add_schemas(), diff_compare(). *reg and *report are the caller's
 * (free with diff_schemas_free(), diff_report_free()), also after a
 * failure. ERR_NOTFOUND alone means some desired kinds are not served
 * (the rest of the report is there).
 */
int app_compare(struct app *app, struct diff_objset *desired,
		const struct diff_options *dopts, struct diff_schemas **reg,
		struct diff_report **report, const char *revision,
		struct err *err);

/*
 * The app's health after a comparison: each desired object's, judged on
 * its live object as app_read_live() read it (health_of(); no live object
 * is Missing), and the app's, the worst of them (Healthy when the app has
 * no objects). Orphans and the parent are left out.
 */
struct app_health_object {
	char *name;           /* "Deployment.apps ns/web" */
	size_t index;         /* its place in the report */
	struct health health;
};

struct app_health {
	enum health_state state;
	/*
	 * The objects that decide it, "NAME: REASON; ..." (three at most,
	 * then "and N more").
	 */
	char *message;
	struct app_health_object *objects; /* n, in report order */
	size_t n;
};

/*
 * Fill *out (overwritten; release with app_health_release(), also after a
 * failure), by app->health_rules. Fails only when memory runs out.
 */
int app_health_of(const struct app *app, const struct diff_report *report,
		  struct app_health *out,
		  struct err *err);

void app_health_release(struct app_health *h);

/*
 * {"status", "message"} of the app, and with `objects` the list of its
 * objects that are not Healthy ({"object", "status", "message"}). New
 * reference; NULL when out of memory.
 */
json_t *app_health_json(const struct app_health *h, bool objects);

/*
 * Add "health" ({"status", "message"}) to object `index` of the report
 * as diff_report_object_json() writes it; the objects are taken in
 * order: *cursor (0 at first) is where the last one was found in h.
 * (The app's own health is app_health_json(h, false).)
 */
void app_health_annotate_object(json_t *obj, size_t index,
				const struct app_health *h, size_t *cursor);

/*
 * The app spec: everything that says what an app is, in one type. Where
 * its files come from (a Git repository, or a local path), how they
 * become objects (renderer, options, variables) and how it is kept (prune,
 * self-heal, foreign fields, ignore rules). The config loader (one entry
 * of `apps:` in syncd.yaml) and the command-line options of render, diff
 * and sync fill the same type; docs/renderers.md has the one table of
 * render options, flags and config keys.
 *
 * The settings are the libraries' own option types (`git`, `render`); the
 * spec owns every string and list they point at. Set strings with
 * app_spec_set(), lists with app_spec_add(), never by assignment.
 */

/* The render option lists a spec owns (see bind() in spec.c). */
enum app_list {
	APP_LIST_INCLUDE,	    /* render.dir.include */
	APP_LIST_EXCLUDE,	    /* render.dir.exclude */
	APP_LIST_HELM_VALUES,	    /* render.helm.values */
	APP_LIST_HELM_SET,	    /* render.helm.set, "KEY=VALUE" */
	APP_LIST_JSONNET_EXT_STR,   /* "NAME=VALUE" */
	APP_LIST_JSONNET_EXT_CODE,  /* "NAME=CODE" */
	APP_LIST_JSONNET_TLA_STR,
	APP_LIST_JSONNET_TLA_CODE,
	APP_LIST_JSONNET_JPATH,
	APP_LIST_PLUGIN_ARGS,	    /* render.exec.args */
	APP_LIST_PLUGIN_ENV,	    /* render.exec.env, "NAME=VALUE" */
	APP_LIST_HELM_VALUES_FILES, /* render.helm.values_files */
	APP_LIST_REDIRECT_HOSTS,    /* source.redirect_hosts */
	APP_LIST_COUNT,
};

/* What becomes of an app's objects when the app is removed from syncd. */
enum app_deletion {
	APP_DELETION_ORPHAN, /* left in place (the default) */
	APP_DELETION_DELETE, /* deleted, as a prune of everything would */
};

/* The names of the policies, by value ("orphan", "delete"); NULL-ended. */
extern const char *const app_deletion_names[];

/* Substitution not chosen: strict when there are variables, else off. */
#define APP_SUBST_DEFAULT (-1)

struct app_ignore_lists {
	struct strvec json_pointers;
	struct strvec managers;
};

/*
 * Decryption of objects encrypted with SOPS in the source (docs/sops.md,
 * `decryption:` of an app). Strings set with app_spec_set().
 */
struct app_decryption {
	bool sops;		  /* provider: sops (the only one); false: off */
	const char *age_key_file; /* age identities (apps of syncd.yaml, the
				     command line); NULL: none */
	const char *secret_ref;	  /* App objects: a Secret of object_ns whose
				     data keys ending in .agekey hold them */
	const char *sops_bin;	  /* NULL: "sops" from PATH */
};

struct app_spec {
	const char *name;      /* NULL: derived from the path (one-shot
				  commands only) */
	const char *namespace; /* default namespace of the objects; NULL:
				  none */
	/* Where the files come from; git.url NULL: a local path. */
	struct source_options source;
	uint64_t interval_ms;	/* how often the source is polled; 1m */
	/* How they become objects. */
	struct render_app_options render;
	unsigned render_timeout_ms; /* one tool run; 0: the renderers'
				       default (app_spec_set_render_timeout) */
	struct strvec vars;	    /* "NAME=VALUE", a later one winning */
	struct strvec vars_files;   /* read at each render, before vars */
	int substitute;		    /* enum render_subst_mode, or
				       APP_SUBST_DEFAULT */
	/* How it is kept. */
	bool prune;			  /* default false */
	struct strvec prune_allow_kinds;  /* "Kind" or "Kind.group" */
	unsigned prune_budget;		  /* deletions per pass; default 50 */
	bool self_heal;			  /* default true */
	enum diff_policy foreign_fields;  /* default respect */
	enum app_verify verify;		  /* default dryRun */
	/* Apps that must be healthy before this one is reconciled. */
	struct strvec depends_on;
	/*
	 * The target namespace as an object of the app, with these labels
	 * and annotations ({"labels": {}, "annotations": {}}, the spec's own;
	 * NULL: none).
	 */
	bool create_namespace;
	json_t *namespace_metadata;
	bool allow_empty;		  /* a render of no objects prunes */
	bool on_immutable_replace;	  /* onImmutable: replace */
	struct strvec replace_allow_kinds; /* data kinds replace may delete */
	enum app_deletion deletion;	  /* when the app is removed */
	struct diff_ignore_rule *ignore;  /* strings owned by the spec */
	size_t nignore;
	/* Where it was declared: the line in the file, and the app as
	 * written (a reload compares it); 0 and NULL on the command line. */
	unsigned line;
	json_t *raw;
	/*
	 * Declared by an App object (apps.syncd.io, docs/app-crd.md): its
	 * namespace (NULL: declared in a file) and metadata.generation.
	 */
	const char *object_ns;
	long long object_generation;
	/* The cluster it deploys to (syncd.yaml `clusters:`); NULL: the
	 * one syncd runs against. */
	const char *cluster;
	/* Reads and writes as this service account of object_ns; NULL:
	 * syncd's own identity. */
	const char *service_account;
	/* A Secret of object_ns with the Git credentials; NULL: none. */
	const char *secret_ref;
	/* SOPS decryption of the rendered objects (app_decrypt()). */
	struct app_decryption decryption;
	/* Storage behind the pointers above; the spec's own. */
	struct strvec strings;
	struct strvec lists[APP_LIST_COUNT];
	struct app_ignore_lists *ignore_lists;
};

/* Every default; no allocation (app_spec_release() is still safe). */
void app_spec_init(struct app_spec *s);

/* Free what the spec owns; *s is app_spec_init() again. */
void app_spec_release(struct app_spec *s);

/*
 * Set a string option: `field` points into `s` (&s->source.url,
 * &s->render.helm.release, ...) and gets a copy of `value` (NULL clears
 * it) that lives as long as the spec. 0 or ERR_NOMEM.
 */
int app_spec_set(struct app_spec *s, const char **field, const char *value);

/* Append a copy of `value` to a list option. 0 or ERR_NOMEM. */
int app_spec_add(struct app_spec *s, enum app_list which, const char *value);

/* The length of a list option. */
size_t app_spec_list_len(const struct app_spec *s, enum app_list which);

/* The limit of one tool run (kustomize, helm, exec); 0: default. */
void app_spec_set_render_timeout(struct app_spec *s, unsigned ms);

/* Append a copy of an ignore rule. 0 or ERR_NOMEM. */
int app_spec_add_ignore(struct app_spec *s, const struct diff_ignore_rule *r);

/*
 * Read a variables file: KEY=VALUE lines (blank lines and # comments
 * skipped, one pair of surrounding quotes removed) or a YAML/JSON map of
 * scalars. Appends "NAME=VALUE" strings to *out. Messages name `path`.
 */
int app_read_vars(struct strvec *out, const char *path, struct err *err);

/*
 * Render the app's files at `dir` (a directory, or a file) with its
 * renderer (detected for auto), then substitute its variables (from its
 * variables files, then its vars, later ones winning) when substitution
 * is on. `revision` (commit id or NULL) and `path` (the app's path as
 * given, for messages and origins; NULL: dir) are what the renderers may
 * know. `kube_version` (the cluster's, e.g. "v1.36.0"; NULL: unknown)
 * is helm's --kube-version when the spec names none. Objects are added
 * to *out (on error *out holds what was rendered, for the caller to
 * release); *used (may be NULL) gets the renderer used.
 */
int app_spec_render(const struct app_spec *s, const char *dir,
		    const char *revision, const char *path,
		    const char *kube_version, struct diff_objset *out,
		    enum render_kind *used, struct err *err);

/* Will the spec render `dir` with helm (chosen, or detected)? */
bool app_spec_renders_helm(const struct app_spec *s, const char *dir);

/*
 * The render cache: renders kept on disk under a source's cache
 * directory `base`, in renders/<key>.json, where the key is a digest of
 * the app's tree id and of every setting that decides what the render
 * holds. The one-shot commands and the controller share it: a commit that
 * does not touch the app's directory costs no render, also across
 * restarts.
 *
 * app_render_cache_file() puts the file for (s, tree) in *out
 * (ERR_NOTFOUND without a base or a tree). A render that may change
 * without a commit (exec plugins, variables files) is never read back
 * from an earlier process: app_spec_cacheable() is false. Reading fails
 * (false, *out left empty) on any problem: a missing, partial, foreign or
 * older file. Writing is best effort (false when it could not), through a
 * temporary file renamed into place, so a reader never sees half a file.
 */
bool app_spec_cacheable(const struct app_spec *s);
int app_render_cache_file(struct buf *out, const struct app_spec *s,
			  const char *base, const char *tree);
bool app_render_cache_read(const char *file, struct diff_objset *out);
bool app_render_cache_write(const char *file, const struct diff_objset *set);
/*
 * Remove the temporaries a killed writer left beside `file` (a render
 * cache path): before reading renders back after a start. Writes sweep
 * on their own; not for every pass.
 */
void app_render_cache_sweep(const char *file);

/*
 * ---------------------------------------------------------------------
 * SOPS decryption (app/decrypt.c, docs/sops.md)
 * ---------------------------------------------------------------------
 *
 * Objects of the source encrypted with SOPS (a top-level `sops` key) are
 * decrypted after the render, before anything compares or applies them,
 * by the sops program itself. The render cache only ever holds what the
 * render gave (ciphertext): callers decrypt after it, and keep plaintext
 * in memory only.
 */

/* Some object of `set` carries a top-level `sops` key. */
bool app_decrypt_needed(const struct diff_objset *set);

/*
 * Decrypt, in place, every object of `set` with a top-level `sops` key:
 * one run of `sops decrypt` per object (s->decryption.sops_bin, with
 * the object as JSON on its stdin, a minimal environment, the render
 * timeout), its result replacing the object (without `sops`) and marked
 * sensitive (diff_object.sensitive). The age identities are `identities`
 * when not NULL (held in memory, e.g. from a Secret: sops reads them from
 * a memfd, never from disk), else s->decryption.age_key_file. Objects
 * without `sops` are untouched.
 *
 * Every object that cannot be decrypted is reported in `err`, one line
 * naming it, its origin and sops's reason, never a value ("secrets/db.yaml:1:
 * Secret default/db: sops: no age identity decrypts it"); an encrypted
 * object while s->decryption is off is ERR_INVALID asking for it. On
 * error some objects may be decrypted and others not: the caller drops
 * the whole set.
 */
int app_decrypt(struct diff_objset *set, const struct app_spec *s,
		const struct buf *identities, struct err *err);

#endif
