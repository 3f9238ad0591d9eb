/*
 * controller: `syncd run`, the level-triggered loop that keeps every app
 * of a configuration converged.
 *
 * One queue (syncd/queue.h) with `workers` threads; each app has a poll
 * timer (source.interval) and a resync timer (resync). A pass of one app:
 *
 *   poll its Git source (kept open between passes; a failed poll keeps
 *   enforcing the last good commit) -> render (only when the app's tree
 *   changed; otherwise the objects of the last render are reused) -> read
 *   live and compare (syncd/app.c) -> with selfHeal, apply what drifted
 *   (foreignFields decides about fields other controllers own; prune
 *   only with prune), else only report.
 *
 * Every pass logs one line, and every object written one more (fields
 * level, app, revision, object, msg). A failing app backs off (the queue
 * does it) and never blocks the others.
 */
#ifndef SYNCD_CONTROLLER_H
#define SYNCD_CONTROLLER_H

#include <stdbool.h>

#include <jansson.h>

#include "syncd/config.h"
#include "syncd/metrics.h"
#include "util/buf.h"
#include "util/err.h"

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
