/*
 * `syncd status`: the text and JSON forms of the documents that
 * `syncd run` serves on /api/v1/apps and /api/v1/apps/NAME (see
 * docs/http-api.md), and the small HTTP client that fetches them.
 *
 * The formatting is pure: it takes the parsed document and the time to
 * measure ages against, so tests are deterministic. Every string from
 * the document is printed with control characters and invalid UTF-8
 * replaced by '?': a server must not be able to drive the terminal.
 * Widths count code points (one column each).
 */
#ifndef SYNCD_STATUS_FMT_H
#define SYNCD_STATUS_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

/* The width every text form fits in. */
#define STATUS_WIDTH 80

struct status_fmt_options {
	time_t now;	/* ages are measured against this */
	bool color;	/* ANSI colours for states */
	unsigned width; /* 0: STATUS_WIDTH */
};

/*
 * A duration in its largest whole unit into `out` (at least 8 bytes):
 * "12s", "3m", "2h", "4d". A negative duration (clock skew) reads "0s".
 */
void status_fmt_duration(char *out, size_t size, long long seconds);

/*
 * The ANSI colour sequence for an app or object state ("\033[32m" for
 * InSync, yellow Drifted, red Failed, magenta Fighting), or NULL when
 * the state has no colour.
 */
const char *status_state_color(const char *state);

/* Columns `s` takes once sanitised (code points; bad bytes count 1). */
size_t status_text_width(const char *s);

/*
 * Append `s` sanitised and cut to at most `width` columns: when it is
 * longer, its start (or with `keep_end`, its end) is kept and "…" marks
 * the cut. Padded with spaces to `width` when `pad`.
 */
int status_fmt_cell(struct buf *out, const char *s, size_t width, bool keep_end,
		    bool pad);

/*
 * The AppList document (GET /api/v1/apps) as a table, or one app's
 * document (GET /api/v1/apps/NAME) as a header and one line per
 * differing field. Appends to `out`. ERR_PARSE when the document is
 * not of that shape (the message says which field).
 */
int status_fmt_apps(struct buf *out, const json_t *doc,
		    const struct status_fmt_options *opts, struct err *err);
int status_fmt_app(struct buf *out, const json_t *doc,
		   const struct status_fmt_options *opts, struct err *err);

/* The document pretty-printed (2 spaces, keys in received order), "\n". */
int status_fmt_json(struct buf *out, const json_t *doc, struct err *err);

/* ---------------------------------------------------------------------
 * The HTTP client (syncd/cmd_status.c)
 * ------------------------------------------------------------------- */

/* Caps and defaults of status_http_get(). */
#define STATUS_HTTP_MAX_BODY   (16u << 20)
#define STATUS_HTTP_TIMEOUT_MS 10000u

struct status_http_response {
	int code;	 /* HTTP status */
	struct buf body; /* the body, de-chunked */
};

#define STATUS_HTTP_RESPONSE_INIT \
	{                         \
		0, BUF_INIT       \
	}
void status_http_response_release(struct status_http_response *resp);

/*
 * GET `base` (an http:// URL: host, optional port, optional path
 * prefix) + `path` with HTTP/1.1 (libcurl, no proxy, no retry). The body
 * may come with a Content-Length, chunked, or until the server closes; one
 * over `max_body` bytes (0: STATUS_HTTP_MAX_BODY) is ERR_LIMIT. The
 * whole exchange gives up after `timeout_ms` (0: STATUS_HTTP_TIMEOUT_MS)
 * with ERR_TIMEOUT. Any HTTP status is a success here: the caller reads
 * resp->code. On failure `err` gets the cause alone, in lower case
 * ("connection refused", "timed out after 10 s"), for the caller to
 * prefix with the URL. `resp` is caller storage (release it also after
 * a failure).
 */
int status_http_get(const char *base, const char *path, size_t max_body,
		    unsigned timeout_ms, struct status_http_response *resp,
		    struct err *err);

#endif
