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
#ifndef SYNCD_METRICS_H
#define SYNCD_METRICS_H

#include <stddef.h>

#include "util/buf.h"
#include "util/err.h"

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

#endif
