/*
 * err: error codes and the error report that fallible functions fill.
 *
 * Fallible functions return 0 on success or a negative ERR_* code, and fill
 * an optional `struct err *` (NULL is allowed everywhere) with a message
 * that names the file or object and the cause, e.g.
 *
 *   apps/web/deploy.yaml:14:3: mapping values are not allowed here
 *
 * One struct err can collect several problems (a renderer reports every bad
 * file, not just the first): each err_set() appends one line. Libraries
 * never print; the CLI prints one line per problem with err_print().
 */
#ifndef UTIL_ERR_H
#define UTIL_ERR_H

#include <stdarg.h>
#include <stdio.h>

#include "util/buf.h"

enum err_code {
	ERR_GENERIC = -1,
	ERR_NOMEM = -2,
	ERR_LIMIT = -3,	  /* a size, count or depth cap was hit */
	ERR_IO = -4,	  /* a system call failed */
	ERR_PARSE = -5,	  /* malformed input (YAML, JSON, fieldsV1, ...) */
	ERR_INVALID = -6, /* well-formed but not acceptable */
	ERR_NOTFOUND = -7,
	ERR_EXISTS = -8, /* duplicate */
	ERR_TIMEOUT = -9,
	ERR_USAGE = -10,    /* bad command line */
	ERR_CANCELED = -11, /* not done on purpose (e.g. no longer leading) */
};

/* Problems beyond this many are counted, not kept. */
#define ERR_MAX_PROBLEMS 50

struct err {
	int code;          /* code of the first problem; 0 when none */
	unsigned count;    /* problems reported, including dropped ones */
	struct buf msg;    /* one line per kept problem, each ending in \n */
};

#define ERR_INIT {0, 0, BUF_INIT}

/*
 * Record one problem (a printf-style message without trailing newline) and
 * return `code`, so callers can write `return err_set(err, ERR_PARSE, ...)`.
 * `err` may be NULL. Newlines inside the message are replaced by spaces so
 * that one problem is always one line.
 */
int err_set(struct err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int err_vset(struct err *err, int code, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* Number of problems recorded. */
static inline unsigned err_count(const struct err *err)
{
	return err ? err->count : 0;
}

/* The first problem's text (without newline), or "" when none. */
const char *err_first(const struct err *err);

/* All problems, newline separated, or "" when none. */
const char *err_msg(const struct err *err);

/*
 * Print every problem as "<prefix>: <line>\n" (prefix may be NULL), then
 * "... and N more problems" when some were dropped.
 */
void err_print(const struct err *err, FILE *f, const char *prefix);

/* Move all problems of `src` to the end of `dst`; src becomes empty. */
void err_move(struct err *dst, struct err *src);

/* Forget all problems (keeps the allocation). */
void err_reset(struct err *err);
void err_release(struct err *err);

/* strerror() text for a saved errno, for messages. */
const char *err_errno_str(int errnum);

#endif
