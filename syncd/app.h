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
 */
#ifndef SYNCD_APP_H
#define SYNCD_APP_H

#include <stdbool.h>
#include <stddef.h>

#include "diff/diff.h"
#include "syncd/kube.h"
#include "util/buf.h"
#include "util/err.h"

#define APP_LABEL_PART_OF   "applyset.kubernetes.io/part-of"
#define APP_LABEL_ID	    "applyset.kubernetes.io/id"
#define APP_ANN_TOOLING	    "applyset.kubernetes.io/tooling"
#define APP_ANN_GROUP_KINDS "applyset.kubernetes.io/contains-group-kinds"
#define APP_ANN_NAMESPACES  "applyset.kubernetes.io/additional-namespaces"

struct app_type;

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
	 * Where the labelled objects of one (resource, namespace) come from
	 * instead of a LIST (the controller's watch cache): 0 with *items a
	 * new array of this app's objects (read-only, they may be shared),
	 * or ERR_NOTFOUND when not cached, and the app lists the server.
	 * `ns` is NULL for a cluster-scoped resource. NULL: always list.
	 */
	int (*list_hook)(void *ctx, const struct app *app,
			 const struct kube_resource *res, const char *ns,
			 json_t **items);
	void *list_ctx;
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
	void (*applied)(void *ctx, const struct diff_key *key,
			const json_t *stored);
	/* An object that could not be written or pruned, and why. */
	void (*failed)(void *ctx, const struct diff_key *key, const char *why);
	/* An object pruned (not for dry runs): the live object deleted. */
	void (*pruned)(void *ctx, const json_t *live);
	void *applied_ctx; /* the context of the three callbacks */
};

struct app_sync_result {
	size_t applied, unchanged, pruned, failed, kept;
	struct buf log;	     /* one line per object written or failed */
	struct err failures; /* one line per failure: object and message */
};

#define APP_SYNC_RESULT_INIT                      \
	{                                         \
		0, 0, 0, 0, 0, BUF_INIT, ERR_INIT \
	}
void app_sync_result_release(struct app_sync_result *res);

/*
 * One reconcile pass over `report` (diff_compare() of `desired` with
 * app->live): the parent first, then CRDs (waiting until Established and
 * served), Namespaces, other cluster-scoped objects, namespaced objects;
 * only objects with an apply body are written. Then, with opts->prune,
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

/*
 * --qps and --burst into *ko: 1 when `name` was one of them, 0 when not,
 * ERR_USAGE for a bad value.
 */
int app_client_option(struct kube_client_options *ko, const char *name,
		      const char *arg, struct err *err);
void app_conn_close(struct app_conn *conn);

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

#endif
