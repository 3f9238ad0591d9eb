/*
 * controller: `syncd run`, the level-triggered loop that keeps every app
 * of a configuration converged.
 *
 * One queue (controller/queue.h) with `workers` threads; each app has a poll
 * timer (source.interval) and a resync timer (resync). A pass of one app:
 *
 *   poll its Git source (kept open between passes; a failed poll keeps
 *   enforcing the last good commit) -> render (only when the app's tree
 *   changed; otherwise the objects of the last render are reused) -> read
 *   live and compare (app/live.c) -> with selfHeal, apply what drifted
 *   (foreignFields decides about fields other controllers own; prune
 *   only with prune), else only report.
 *
 * Every pass logs one line, and every object written one more (fields
 * level, app, revision, object, msg). A failing app backs off (the queue
 * does it) and never blocks the others.
 */

#ifndef CONTROLLER_CONTROLLER_H
#define CONTROLLER_CONTROLLER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/app.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/log.h"

/*
 * The controller's configuration file (`syncd run -c syncd.yaml`); every
 * key is described in docs/config.md.
 *
 * config_load() reads and checks the whole file before returning
 * anything: an invalid file yields no config at all, so the controller
 * never starts (or reloads) with half of one.
 */

/* Largest configuration file read (bytes). */
#define CONFIG_MAX_FILE_SIZE (4u << 20)

/* Most apps one file may list. */
#define CONFIG_MAX_APPS 10000u

/* The name of the cluster syncd itself runs against. */
#define CONFIG_HOME_CLUSTER "default"

/* One entry of `clusters:`: a kubeconfig file or a Secret holding one. */
struct config_cluster {
	char *name;
	char *kubeconfig; /* a file; NULL: secret_name */
	char *context;	  /* NULL: the kubeconfig's current context */
	/* kubeconfigSecret: a Secret of the home cluster, key (default
	 * "value") holding the kubeconfig. */
	char *secret_ns, *secret_name, *secret_key;
};

struct config {
	char *path;	     /* the file as given */
	uint64_t resync_ms;  /* default 3m */
	uint64_t relist_ms;  /* with watches: LIST the server this often; 1h */
	unsigned workers;    /* default 2 */
	char *field_manager; /* default "syncd" */
	char *kubeconfig;    /* NULL: in-cluster, then default */
	char *context;
	char *cache_dir;	    /* NULL: the default cache */
	double qps;		    /* default 50 */
	unsigned burst;		    /* default 100 */
	bool watch;		    /* default true */
	enum log_format log_format; /* default logfmt */
	enum log_level log_level;   /* default info */
	char *listen;		    /* default ":8080" */
	/*
	 * fightDetection: a field changed back `changes` times (default 3;
	 * 0: never) within `window` (default 10m) after syncd wrote it is
	 * held, not written, until the fight ends.
	 */
	unsigned fight_changes;
	uint64_t fight_window_ms;
	char *api_token_file;	  /* api.tokenFile: POST .../sync */
	char *github_secret_file; /* webhook.githubSecretFile */
	char *gitlab_token_file;  /* webhook.gitlabTokenFile */
	bool events;		  /* Kubernetes Events; default true */
	struct {
		bool enabled;	 /* default false */
		char *namespace; /* NULL: the pod's namespace, else default */
		char *name;	 /* NULL: "syncd" */
		uint64_t lease_ms, renew_ms, retry_ms; /* 15s, 10s, 2s */
	} leader;
	struct health_rules *health; /* health: per-kind rules; NULL: none */
	/*
	 * appObjects: apps declared by App objects (docs/app-crd.md).
	 * An App manages objects of its own namespace only, unless its
	 * namespace is in cluster_wide (any namespace, cluster-scoped
	 * objects too) or `targets` names more ("NS=OTHER" pairs).
	 */
	struct {
		bool enabled;		 /* default false */
		struct strvec namespaces; /* read Apps there; empty: all */
		struct strvec cluster_wide;
		struct strvec targets;
	} objects;
	/*
	 * clusters: the clusters apps may target by name (`cluster:` of an
	 * app); the one syncd runs against (kubeconfig, context above) is
	 * CONFIG_HOME_CLUSTER and is not listed.
	 */
	struct config_cluster *clusters;
	size_t nclusters;
	struct app_spec *apps; /* the apps, in file order */
	size_t napps;
	json_t *raw_globals; /* the top level less `apps`, or NULL */
};

/*
 * Whether a reload from `a` to `b` can keep the running controller: the
 * settings outside `apps` are the same (and the file is the same, so
 * relative paths mean the same files).
 */
bool config_same_globals(const struct config *a, const struct config *b);

/* Whether two apps are configured exactly alike. */
bool config_same_app(const struct app_spec *a, const struct app_spec *b);

/*
 * Read and check `path`. Relative file references in the file (kubeconfig,
 * cacheDir, source credentials, varsFiles) are taken relative to the
 * directory of `path`. Every problem is reported as one line
 * "FILE:LINE: key.path: cause" in `err`; on any problem returns a
 * negative code and leaves *out NULL.
 */
int config_load(struct config **out, const char *path, struct err *err);

void config_free(struct config *cfg);

/*
 * The app an App object (apps.syncd.io/v1alpha1) declares, into *out
 * (caller storage; released with app_spec_release(), also after a
 * failure): its spec walked as an app of the file is, named by
 * metadata.name, its objects' default namespace its own. Keys naming
 * syncd's own files, variables or programs are refused. Every problem
 * is one line "App NS/NAME: spec.key: cause" in `err`; ERR_INVALID then.
 */
int config_app_from_object(struct app_spec *out, const json_t *obj,
			   struct err *err);

/*
 * Whether an App of namespace `app_ns` may manage objects of namespace
 * `ns` (NULL: a cluster-scoped object) under `cfg`'s appObjects.
 */
bool config_object_may_manage(const struct config *cfg, const char *app_ns,
			      const char *ns);


/*
 * metrics: a small Prometheus registry (text exposition format 0.0.4, as
 * `promtool check metrics` accepts it).
 *
 * Families are declared once (name, type, help, and for histograms the
 * bucket bounds); series are addressed by their label pairs, given as a
 * NULL-terminated array {"app", "web", "result", "success", NULL}. Label
 * values are escaped on output (backslash, double quote, newline). Series
 * are rendered sorted by family name, then by labels, so output is
 * stable.
 *
 * A collector callback runs at the start of every metrics_render(), with
 * no registry lock held, so values that change with time (how long an app
 * has been out of sync) are set when scraped.
 *
 * Thread safety: every function may be called from any thread.
 */

enum metrics_type {
	METRICS_COUNTER,
	METRICS_GAUGE,
	METRICS_HISTOGRAM,
};

struct metrics;

/* NULL when out of memory. */
struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/*
 * Declare a family. `buckets` (ascending upper bounds, +Inf implied) only
 * for histograms. Declaring a name twice is ERR_EXISTS; a name or label
 * that is not [a-zA-Z_:][a-zA-Z0-9_:]* is ERR_INVALID.
 */
int metrics_declare(struct metrics *m, const char *name,
		    enum metrics_type type, const char *help,
		    const double *buckets, size_t nbuckets);

/* Add `v` (>= 0) to a counter series (created at 0 first). */
int metrics_counter_add(struct metrics *m, const char *name,
			const char *const *labels, double v);

/* Set a gauge series. */
int metrics_gauge_set(struct metrics *m, const char *name,
		      const char *const *labels, double v);

/* Observe one value in a histogram series. */
int metrics_observe(struct metrics *m, const char *name,
		    const char *const *labels, double v);

/*
 * Remove every series of family `name` (NULL: of every family) that has
 * label `label` equal to `value` (an app that was removed).
 */
void metrics_remove(struct metrics *m, const char *name, const char *label,
		    const char *value);

/* The collector (see above); NULL: none. */
void metrics_set_collector(struct metrics *m,
			   void (*collect)(struct metrics *m, void *ctx),
			   void *ctx);

/* Append the exposition text to `out`. */
int metrics_render(struct metrics *m, struct buf *out);

/*
 * httpd: the HTTP endpoint of `syncd run` (libmicrohttpd), see
 * docs/http-api.md:
 *
 *   GET  /healthz                  200 "ok" while the process serves
 *   GET  /readyz                   200 when handlers->ready says so, else
 *                                  503 with the reason
 *   GET  /metrics                  metrics_render() (text/plain; version=0.0.4)
 *   GET  /                         the browser view (docs/ui.md): its page,
 *   GET  /ui/NAME                  script and style, embedded at build time
 *                                  (controller/ui/), under a strict
 *                                  Content-Security-Policy; no token; 404
 *                                  for a file that is not embedded
 *   GET  /api/v1/apps              handlers->apps()
 *   GET  /api/v1/apps/NAME         handlers->app(), 404 for an unknown app;
 *                                  both need the bearer token when
 *                                  api_token_file is set (401 without it,
 *                                  checked before the name), open when not
 *   POST /api/v1/apps/NAME/sync    bearer token (api_token_file) ->
 *                                  handlers->sync(), 202; 401 wrong or
 *                                  missing token, 403 when no token file is
 *                                  configured, 404 unknown app
 *   POST /hooks/git                GitHub (X-Hub-Signature-256 HMAC of the
 *                                  body with github_secret_file) or GitLab
 *                                  (X-Gitlab-Token equal to
 *                                  gitlab_token_file) push events ->
 *                                  handlers->push() with the repository's
 *                                  URLs and branch; 202 {"triggered": N};
 *                                  401 bad signature (nothing happens);
 *                                  ping events 200; other events 202 with 0
 *
 * Secrets are read from their files on each request (so they can be
 * rotated), at most 4 KiB, trailing newline stripped, compared in
 * constant time, and never logged or echoed. Request bodies over
 * max_body are refused with 413; a client that stalls is cut off after
 * timeout_s. Unknown paths are 404, wrong methods 405. Error bodies are
 * JSON {"error": "..."}.
 *
 * The handlers run on the server's threads and must be thread-safe.
 */

struct httpd_handlers {
	void *ctx;
	/* Ready to serve traffic? When not, append the reason to `why`. */
	bool (*ready)(struct buf *why, void *ctx);
	/* The app list document (new reference). */
	json_t *(*apps)(void *ctx);
	/* One app's document (new reference), NULL for an unknown app. */
	json_t *(*app)(const char *name, void *ctx);
	/* Trigger a pass: 0, or ERR_NOTFOUND for an unknown app. */
	int (*sync)(const char *name, void *ctx);
	/*
	 * A push to `branch` (without "refs/heads/") of the repository known
	 * by any of `urls` (clone, SSH and web URLs as the event gives them):
	 * poll the apps whose source matches; returns how many (>= 0).
	 */
	int (*push)(const char *const *urls, size_t nurls, const char *branch,
		    void *ctx);
};

struct httpd_options {
	const char *listen;		/* "[HOST]:PORT"; ":0" picks a port */
	struct metrics *metrics;	/* NULL: /metrics is 404 */
	const char *api_token_file;	/* NULL: POST .../sync is 403 and
					   GET /api/v1/apps... is open */
	const char *github_secret_file; /* NULL: GitHub events are 401 */
	const char *gitlab_token_file;	/* NULL: GitLab events are 401 */
	size_t max_body;		/* 0: 1 MiB */
	unsigned timeout_s;		/* 0: 10 */
};

struct httpd;

/* Start serving; ERR_IO naming the address when it cannot listen. */
int httpd_start(struct httpd **out, const struct httpd_handlers *h,
		const struct httpd_options *opts, struct err *err);

/* The port actually bound. */
unsigned httpd_port(const struct httpd *d);

/* Stop serving and free. Accepts NULL. */
void httpd_stop(struct httpd *d);

struct controller;

/*
 * Connect to the cluster `cfg` names (its kubeconfig and context, else the
 * in-cluster config, else the default kubeconfig) and prepare every app.
 * `cfg` is borrowed and must outlive the controller, and so must
 * `metrics` (NULL: none; its families are declared here when they are
 * not yet). Nothing runs yet.
 */
int controller_new(struct controller **out, const struct config *cfg,
		   struct metrics *metrics, struct err *err);

/*
 * Run every app once (in parallel on `workers` threads) and return the
 * number of apps whose pass failed (0: all converged), or <0 when the
 * queue could not start.
 */
int controller_run_once(struct controller *c, struct err *err);

/*
 * Start the loop: timers and workers run until controller_stop().
 */
int controller_start(struct controller *c, struct err *err);

/*
 * Stop: no new pass starts, passes in flight finish (at most `grace_ms`).
 * 0, or ERR_TIMEOUT when a pass was still running after the grace period.
 */
int controller_stop(struct controller *c, unsigned grace_ms);

struct controller_reload_result {
	unsigned added, removed, changed, unchanged;
};

/*
 * Switch a started controller to `cfg` (SIGHUP), which must differ from
 * the running one only in its apps (config_same_globals(); else
 * ERR_INVALID and nothing changes): added apps start, removed apps stop
 * (their objects stay in the cluster), changed apps start over, and
 * unchanged apps keep their state. Passes in flight finish first. On
 * success the controller borrows `cfg` from then on (the caller frees the
 * old one); on failure the old configuration keeps running, unless the
 * switch was made and only restarting the work queue failed (out of
 * memory): controller_config() says which configuration it borrows.
 */
int controller_reload(struct controller *c, const struct config *cfg,
		      struct controller_reload_result *res, struct err *err);

void controller_free(struct controller *c);

/* The configuration the controller runs (borrowed from the caller). */
const struct config *controller_config(const struct controller *c);

/*
 * What the HTTP endpoint serves (docs/http-api.md); every function is
 * thread-safe. The documents are new references.
 */
json_t *controller_apps_json(struct controller *c);
/* NULL for an unknown app. */
json_t *controller_app_json(struct controller *c, const char *name);
/* Run a pass of `name` now: 0, or ERR_NOTFOUND. */
int controller_sync_now(struct controller *c, const char *name);
/*
 * A push to `branch` of the repository known by any of `urls`: poll the
 * apps whose source is that repository and branch (or no branch).
 * Returns how many.
 */
int controller_push(struct controller *c, const char *const *urls,
		    size_t nurls, const char *branch);
/*
 * A repository URL reduced to host and path (into `out`, replacing it),
 * so that the clone, SSH and web URLs of one repository compare equal:
 * no scheme, credentials, port, trailing "/" or ".git"; the host
 * lower-cased ("git@GitHub.com:o/r.git" and "https://github.com/o/r"
 * are both "github.com/o/r").
 */
void controller_repo_key(const char *url, struct buf *out);

/* Set the metrics that change with time (before a scrape). */
void controller_collect(struct controller *c);
/* Ready (started, the API answered, caches synced)? Else why. */
bool controller_ready(struct controller *c, struct buf *why);

#endif
