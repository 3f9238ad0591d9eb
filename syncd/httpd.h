/*
 * httpd: the HTTP endpoint of `syncd run` (libmicrohttpd), see
 * docs/http-api.md:
 *
 *   GET  /healthz                  200 "ok" while the process serves
 *   GET  /readyz                   200 when handlers->ready says so, else
 *                                  503 with the reason
 *   GET  /metrics                  metrics_render() (text/plain; version=0.0.4)
 *   GET  /api/v1/apps              handlers->apps()
 *   GET  /api/v1/apps/NAME         handlers->app(), 404 for an unknown app
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
#ifndef SYNCD_HTTPD_H
#define SYNCD_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "syncd/metrics.h"
#include "util/buf.h"
#include "util/err.h"

struct httpd_handlers {
	void *ctx;
	/* Ready to serve traffic? When not, append the reason to `why`. */
	bool (*ready)(void *ctx, struct buf *why);
	/* The app list document (new reference). */
	json_t *(*apps)(void *ctx);
	/* One app's document (new reference), NULL for an unknown app. */
	json_t *(*app)(void *ctx, const char *name);
	/* Trigger a pass: 0, or ERR_NOTFOUND for an unknown app. */
	int (*sync)(void *ctx, const char *name);
	/*
	 * A push to `branch` (without "refs/heads/") of the repository known
	 * by any of `urls` (clone, SSH and web URLs as the event gives them):
	 * poll the apps whose source matches; returns how many (>= 0).
	 */
	int (*push)(void *ctx, const char *const *urls, size_t nurls,
		    const char *branch);
};

struct httpd_options {
	const char *listen;		/* "[HOST]:PORT"; ":0" picks a port */
	struct metrics *metrics;	/* NULL: /metrics is 404 */
	const char *api_token_file;	/* NULL: POST .../sync is 403 */
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

#endif
