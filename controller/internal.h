/*
 * The controller's internals, shared by controller.c (passes, watches,
 * reloads) and status.c (what the HTTP endpoint, metrics and
 * events show of them). Not for other files.
 */
#ifndef CONTROLLER_INTERNAL_H
#define CONTROLLER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <jansson.h>

#include "diff/diff.h"
#include "app/app.h"
#include "controller/controller.h"
#include "kube/kube.h"
#include "controller/fights.h"
#include "source/source.h"
#include "controller/queue.h"

/* resourceVersions of our own writes remembered to ignore their echo. */
#define ECHO_MAX 1024

/*
 * What the last pass of an app showed, for /api/v1/apps and metrics.
 * Guarded by the app's st_lock: passes write it, HTTP threads read it.
 */
struct ctl_status {
	bool ran;	     /* a pass ended */
	const char *state;   /* "Unknown", "InSync", "Drifted", ... */
	char revision[SOURCE_REVISION_MAX];
	time_t last_sync;    /* end of the last pass */
	bool last_ok;
	char *error;	     /* the last pass's error, or NULL */
	char *source_error;  /* the source's, while the last good is kept */
	time_t drift_since;  /* 0: in sync */
	struct diff_summary sum;
	/* The app's health after the last pass that read its objects. */
	bool health_known;
	enum health_state health;
	json_t *health_doc;  /* app_health_json() with its objects */
	/*
	 * The last drift report (with firstSeen) and its text diff, kept
	 * deflated (util/zpack.h): read only by the status API, and large
	 * after a pass that found many objects missing (docs/decisions.md
	 * 58). NULL: none.
	 */
	unsigned char *report_z;
	size_t report_zlen;
	unsigned char *diff_z;
	size_t diff_zlen;
	json_t *first_seen;  /* "<object>\t<path>" -> RFC 3339 */
	/* Only the pass uses this: the foreign fields last reported by an
	 * Event, per object ("<object>" -> note). */
	json_t *foreign_notes;
	/* The last passes that wrote, failed or moved to a new revision,
	 * newest first ({"revision", "time", "result", "message",
	 * "applied", "pruned"}, at most HISTORY_MAX). */
	json_t *history;
	/* The last Events about the app's objects, newest first
	 * ({"time", "type", "reason", "object", "note"}, EVENTS_MAX). */
	json_t *events;
	char applied[SOURCE_REVISION_MAX]; /* last pass that succeeded */
	char attempted[SOURCE_REVISION_MAX]; /* last commit polled */
	json_t *health_counts; /* health status -> desired objects */
	const char *fail_reason; /* ctl_app's, as of the last pass */
	/* An App's first-seen times read back from its status (object
	 * "\t" path -> time), used by the first pass after a start. */
	json_t *seed_first_seen;
	bool seeded;
};

#define HISTORY_MAX 10
#define EVENTS_MAX 20

/* Credentials an App's secretRef may hold (objects.c). */
#define CTL_CRED_MAX 5

/* One app's state between passes; only its own pass touches it. */
/* "/proc/self/fd/N" */
#define CTL_MEMFD_PATH 32

struct ctl_cluster;

struct ctl_app {
	const struct app_spec *spec; /* the config's */
	struct source *gs;
	bool polled;			       /* a poll succeeded once */
	char commit[SOURCE_REVISION_MAX]; /* last good revision */
	char tree[SOURCE_TREE_MAX];	/* last good tree */
	char rendered[SOURCE_TREE_MAX]; /* tree of `objects` */
	char seen[SOURCE_REVISION_MAX];	 /* last commit polled */
	/* The cluster's version for helm (asked once, when a chart is
	 * first rendered); kube_version_asked: even when that failed. */
	char kube_version[72];
	bool kube_version_asked;
	unsigned source_failures; /* consecutive failed polls or renders */
	uint64_t source_retry_ms; /* no poll before then (while stale) */
	char *source_error;	  /* why the source last failed */
	uint64_t polled_ms;	  /* when the source was last polled */
	atomic_bool force_poll; /* poll in the next pass (set by webhooks) */
	struct diff_objset objects; /* the last render, never modified,
				       when it could not be kept on disk */
	char *render_file;	    /* the last render on disk, or NULL */
	/*
	 * The render had objects encrypted with SOPS: `objects` holds it
	 * decrypted (plaintext in memory only) and is what passes use;
	 * render_file, if any, holds the ciphertext for a restart.
	 */
	bool decrypted;
	bool failed;		  /* the last pass failed */
	struct controller *ctl;
	char *id;		/* the ApplySet id: the part-of label value */
	struct fights *fights;	/* NULL: fight detection off */
	uint64_t listed_ms;	/* when a pass last listed the server */
	bool relist;		/* this pass lists the server */
	/*
	 * Objects this app wrote that the watch cache may not have caught
	 * up with: "<key>" -> resourceVersion written. Cleared by a relist.
	 */
	json_t *written;
	json_t *verify_memo; /* app_verify()'s verdicts; NULL: none yet */
	/*
	 * The verdicts of objects found in sync, reused while the render,
	 * the config and the object stay the same (app_memo in app.h).
	 */
	struct app_memo *memo;
	pthread_mutex_t st_lock;
	struct ctl_status st;
	const struct diff_report *cur_report; /* during a pass, for events */
	const struct app *cur_app;	      /* during a pass, for events */
	/*
	 * During a pass's writes: what others changed in each object it
	 * healed, "<object>" (diff_key_format) -> ctl_drift_note(), for its
	 * "object written" line. Owned by the pass.
	 */
	json_t *drift_notes;
	/*
	 * An App with serviceAccountName: a client acting as that service
	 * account, and its discovery; NULL: the controller's (c->conn).
	 */
	struct kube_client *client;
	struct kube_discovery *disc;
	/*
	 * Why the pass failed, for an App's Stalled condition
	 * ("NamespaceNotAllowed", "SourceFailed", "SyncFailed"); set by
	 * the pass, read by ctl_objects_status() on the same thread.
	 */
	const char *fail_reason;
	/* The cluster it deploys to; NULL: the controller's own (c->conn). */
	struct ctl_cluster *cluster;
	/*
	 * An App's secretRef: each credential in a memfd the source reads
	 * as /proc/self/fd/N (never on disk); -1: none.
	 */
	int cred_fd[CTL_CRED_MAX];
	char cred_path[CTL_CRED_MAX][CTL_MEMFD_PATH];
	char *cred_user;
};

struct controller {
	const struct config *cfg;
	unsigned long cfg_gen; /* counts the configs switched to */
	struct app_conn conn;
	struct ctl_app **apps;
	size_t napps;
	struct queue *q;
	struct kube_watchcache *wc; /* NULL: watch off */
	/*
	 * Guards `apps`, `q` (swapped by a reload while watch threads look
	 * up apps) and the echo ring. Never held while calling a pass.
	 */
	pthread_mutex_t lock;
	char echo[ECHO_MAX][24];
	size_t echo_next;
	struct metrics *metrics; /* borrowed; NULL: none */
	struct kube_events *events;	 /* NULL: events off */
	struct kube_leader *leader;	 /* NULL: no leader election */
	struct kube_client *leader_client; /* the elector's */
	atomic_bool leading;	 /* this replica writes */
	bool started;		 /* controller_start() ran */
	atomic_bool api_ok;	 /* the API server answered */
	struct ctl_objects *objects; /* App objects; NULL: off */
	/* One switch of the running set at a time (reloads, App changes). */
	pthread_mutex_t switch_lock;
	/* The other clusters of the configuration (clusters:), in order. */
	struct ctl_cluster *clusters;
	size_t nclusters;
};

/*
 * GET a Secret of syncd's own cluster as syncd; an error says
 * "WHAT: Secret NS/NAME: not found" (or "cannot be read"). objects.c.
 */
int ctl_secret_get(struct controller *c, const char *ns, const char *name,
		   const char *what, json_t **out, struct err *err);

/*
 * A value in a memfd (never on disk): *fd, and the path that reads it
 * ("/proc/self/fd/N"). objects.c.
 */
int ctl_memfd(const char *name, const struct buf *value, int *fd,
	      char path[CTL_MEMFD_PATH], struct err *err);

/*
 * clusters.c: the clusters apps deploy to besides the controller's own.
 * Each has one client, discovery cache and watch cache, shared by its
 * apps, opened by the first pass that needs it (a cluster that is down
 * fails only its apps' passes, which the queue retries with backoff);
 * its kubeconfig comes from a file or from a Secret of the home cluster
 * (read into a memfd, never on disk).
 */
struct ctl_cluster {
	const struct config_cluster *cfg;
	struct controller *ctl;
	pthread_mutex_t lock; /* opening */
	bool open;
	struct app_conn conn;
	struct kube_watchcache *wc; /* NULL: watch off, or not open */
	/* The last answer: 1 the API server answered, 0 it did not, -1
	 * nothing asked yet. */
	atomic_int up;
};

int ctl_clusters_new(struct controller *c, struct err *err);

/*
 * With leader election: the client options that stop a replica's writes
 * once it no longer leads (each attempt asks c->leading), and bound how
 * late a write sent just before can still land (leaseDuration - renew
 * deadline): no write of it reaches the server after its Lease could be
 * taken over. Without: nothing.
 */
void ctl_write_guard(struct controller *c, struct kube_client_options *ko);
/* The watch caches' callback: a managed object of app `id` changed. */
void ctl_on_change(const char *id, const char *rv, void *ctx);
/* The cluster `name` names; NULL for the home cluster (or NULL name). */
struct ctl_cluster *ctl_cluster_find(struct controller *c, const char *name);
/* Open it (once; later calls return at once). */
int ctl_cluster_open(struct ctl_cluster *cl, struct err *err);
/* The name to show for an app's cluster. */
const char *ctl_cluster_name(const struct ctl_cluster *cl);
void ctl_clusters_stop(struct controller *c);
void ctl_clusters_free(struct controller *c);

/*
 * controller.c: make `specs` the running set (apps configured exactly
 * as before keep their state; see controller_reload()), `cfg` the
 * configuration. Holds switch_lock.
 */
int ctl_switch(struct controller *c, const struct config *cfg,
	       const struct app_spec *const *specs, size_t n,
	       struct controller_reload_result *res, struct err *err);

/*
 * objects.c: apps declared by App objects (docs/app-crd.md).
 * ctl_objects_start() watches them (appObjects in the configuration),
 * parses each with config_app_from_object() and switches the running set
 * to the file's apps plus theirs; invalid ones get a Stalled status.
 * ctl_objects_specs() are the running App apps (borrowed; call with
 * switch_lock held). ctl_objects_status() writes an App's status after a
 * pass when it changed; with `healing` (the summary of the drift a pass
 * is about to heal) before its writes: Synced False, Reconciling True.
 */
int ctl_objects_start(struct controller *c, struct err *err);
void ctl_objects_stop(struct controller *c);
void ctl_objects_free(struct controller *c);
/*
 * The Git credentials of an App's source.secretRef into o->auth (a Secret
 * of its namespace, read as syncd: username, password, bearerToken,
 * identity, known_hosts, ca.crt), kept in memory only. ERR_NOTFOUND
 * naming the Secret when it is missing.
 */
int ctl_objects_credentials(struct controller *c, struct ctl_app *a,
			    struct source_options *o, struct err *err);
void ctl_objects_credentials_release(struct ctl_app *a);
size_t ctl_objects_specs(struct controller *c,
			 const struct app_spec *const **specs);
void ctl_objects_status(struct controller *c, struct ctl_app *a,
			const struct diff_summary *healing);
/*
 * The status an App of `a` would have (conditions, counts, fields,
 * history; docs/app-crd.md), for every app: the HTTP API shows it for
 * the apps of the file too. Status lock held. New reference.
 */
json_t *ctl_status_doc(struct ctl_app *a);
/* The App's status as the cluster has it (new reference), or NULL. */
json_t *ctl_objects_live_status(struct controller *c, const char *ns,
				const char *name);



/* controller.c: run the apps that depend on `name` (its health changed). */
void ctl_wake_dependents(struct controller *c, const char *name);

/* status.c */
int ctl_status_init(struct ctl_app *a);
void ctl_status_release(struct ctl_app *a);
void ctl_metrics_declare(struct metrics *m);
/*
 * The last drift report kept in st, as JSON (new reference; null when
 * there is none). Status lock held.
 */
json_t *ctl_status_report(const struct ctl_status *st);
/*
 * An App's first pass after a start: what its status says (since when
 * fields and the app differ, history) is read back, once.
 */
void ctl_status_seed(struct controller *c, struct ctl_app *a);
/* "Deployment.apps ns/web" of an object of a report's JSON form. */
void ctl_report_object_name(const json_t *o, struct buf *out);
/* A pass that did not run: it waits for a dependency (`why`). */
void ctl_status_waiting(struct ctl_app *a, const char *why);
/*
 * The end of a pass: `report` (NULL when the pass failed before one),
 * whether it acted on drift, its error (NULL: success) and duration.
 */
void ctl_status_pass(struct controller *c, struct ctl_app *a,
		     const struct diff_report *report,
		     const struct app_health *health,
		     const struct app_sync_result *res, bool healed,
		     const char *error, const char *source_error,
		     double seconds);
/* An app left the controller: drop its series. */
void ctl_metrics_forget(struct controller *c, const char *app);
/*
 * The differing fields of `r` that another manager changed, as "path
 * (manager), ..." (at most three, then ", ...") appended to `out`: the
 * foreign ones (owned by other controllers) or the others. Fields held
 * in a fight and fields whose only owner is syncd itself (a new revision
 * changed them, or syncd no longer declares them) are left out, so an
 * empty note means nobody else changed the object.
 */
void ctl_drift_note(const struct diff_object_report *r, bool foreign,
		    struct buf *out);
/*
 * Events about objects of the pass in flight (a->cur_report). An object
 * applied over fields other managers changed gets a DriftCorrected
 * Event naming them (and its note in a->drift_notes, when set); one
 * whose only differences were syncd's own gets none.
 */
void ctl_event_applied(struct ctl_app *a, const struct diff_key *key,
		       const json_t *stored);
void ctl_event_failed(struct ctl_app *a, const struct diff_key *key,
		      const char *why);
void ctl_event_pruned(struct ctl_app *a, const json_t *live);
void ctl_event_fight(struct ctl_app *a, const struct diff_key *key,
		     const char *path, const char *other);
void ctl_event_foreign(struct ctl_app *a, const struct diff_report *report);
void ctl_count_source(struct controller *c, enum source_type type,
		      const char *op, bool ok);

#endif
