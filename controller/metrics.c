/*
 * metrics: the Prometheus registry of metrics.h.
 *
 * Families and their series live in plain arrays under one mutex: a
 * controller has a few dozen families and a scrape every 15 s or so, so
 * sorting at render time costs nothing worth an index. Setting a value
 * is another matter: every pass of every app sets a dozen gauges, each
 * in a family of a few series per app, so each family finds its series
 * through a hash index of their labels (one lookup, not a scan of every
 * app's series). A series keeps its labels sorted by name, so {"a", "1",
 * "b", "2"} and {"b", "2", "a", "1"} address the same series.
 */
#include "controller/controller.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fnv.h"
#include "util/banned.h" /* last */

/* Label pairs per series: far more than any metric of ours carries. */
#define MAX_LABELS 16

struct series {
	size_t nlabels;	  /* pairs */
	char **labels;	  /* name0, value0, name1, value1, ... */
	double value;	  /* counter, gauge */
	uint64_t *counts; /* histogram: per bucket (not cumulative) */
	uint64_t count;	  /* histogram: observations */
	double sum;	  /* histogram */
};

struct family {
	char *name;
	char *help;
	enum metrics_type type;
	double *buckets;
	size_t nbuckets;
	struct series **series;
	size_t nseries, alloc;
	/* Index + 1 into series by label hash (0: free); cap a power of 2. */
	size_t *index;
	size_t index_cap;
};

struct metrics {
	pthread_mutex_t lock;
	struct family **families;
	size_t nfamilies, alloc;
	void (*collect)(struct metrics *m, void *ctx);
	void *collect_ctx;
};

struct metrics *metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	return m;
}

static void series_free(struct series *s)
{
	size_t i;

	if (!s)
		return;
	/* NULL-terminated, so a half-copied series frees what it has. */
	for (i = 0; s->labels && s->labels[i]; i++)
		free(s->labels[i]);
	free(s->labels);
	free(s->counts);
	free(s);
}

static void family_free(struct family *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nseries; i++)
		series_free(f->series[i]);
	free(f->series);
	free(f->index);
	free(f->name);
	free(f->help);
	free(f->buckets);
	free(f);
}

void metrics_free(struct metrics *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nfamilies; i++)
		family_free(m->families[i]);
	free(m->families);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* for names; labels may not use ':'. */
static bool valid_name(const char *s, bool colon)
{
	const char *p;

	if (!s || !*s)
		return false;
	for (p = s; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  c == '_' || (colon && c == ':') ||
			  (p != s && c >= '0' && c <= '9');

		if (!ok)
			return false;
	}
	return true;
}

static struct family *find_family(struct metrics *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->nfamilies; i++)
		if (!strcmp(m->families[i]->name, name))
			return m->families[i];
	return NULL;
}

int metrics_declare(struct metrics *m, const char *name, enum metrics_type type,
		    const char *help, const double *buckets, size_t nbuckets)
{
	struct family *f = NULL;
	size_t i;
	int error = 0;

	if (!valid_name(name, true) ||
	    (type != METRICS_COUNTER && type != METRICS_GAUGE &&
	     type != METRICS_HISTOGRAM) ||
	    (type != METRICS_HISTOGRAM && nbuckets) || (nbuckets && !buckets))
		return ERR_INVALID;
	/* Bounds strictly ascending and finite: +Inf is implied. */
	for (i = 0; i < nbuckets; i++)
		if (!isfinite(buckets[i]) ||
		    (i && buckets[i] <= buckets[i - 1]))
			return ERR_INVALID;

	pthread_mutex_lock(&m->lock);
	if (find_family(m, name)) {
		error = ERR_EXISTS;
		goto out;
	}
	if (m->nfamilies == m->alloc) {
		size_t n = m->alloc ? 2 * m->alloc : 16;
		struct family **p = realloc(m->families, n * sizeof(*p));

		if (!p) {
			error = ERR_NOMEM;
			goto out;
		}
		m->families = p;
		m->alloc = n;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		error = ERR_NOMEM;
		goto out;
	}
	f->type = type;
	f->name = strdup(name);
	f->help = strdup(help ? help : "");
	if (nbuckets) {
		f->buckets = malloc(nbuckets * sizeof(*f->buckets));
		if (f->buckets)
			memcpy(f->buckets, buckets,
			       nbuckets * sizeof(*f->buckets));
	}
	f->nbuckets = nbuckets;
	if (!f->name || !f->help || (nbuckets && !f->buckets)) {
		error = ERR_NOMEM;
		goto out;
	}
	m->families[m->nfamilies++] = f;
	f = NULL;
out:
	pthread_mutex_unlock(&m->lock);
	family_free(f);
	return error;
}

/*
 * Check `labels` and sort them (pointers only) into `sorted` by name.
 * ERR_INVALID for a bad name, a name without a value, a duplicate, or
 * "le" on a histogram (that label is the bucket's).
 */
static int sort_labels(const char *const *labels, bool histogram,
		       const char **sorted, size_t *npairs)
{
	size_t n = 0, i, j;

	for (; labels && labels[2 * n]; n++) {
		if (n == MAX_LABELS || !labels[2 * n + 1] ||
		    !valid_name(labels[2 * n], false) ||
		    (histogram && !strcmp(labels[2 * n], "le")))
			return ERR_INVALID;
		/* Insertion sort: a handful of pairs. */
		for (j = n;
		     j > 0 && strcmp(sorted[2 * (j - 1)], labels[2 * n]) > 0;
		     j--) {
			sorted[2 * j] = sorted[2 * (j - 1)];
			sorted[2 * j + 1] = sorted[2 * (j - 1) + 1];
		}
		sorted[2 * j] = labels[2 * n];
		sorted[2 * j + 1] = labels[2 * n + 1];
	}
	for (i = 1; i < n; i++)
		if (!strcmp(sorted[2 * i], sorted[2 * (i - 1)]))
			return ERR_INVALID;
	*npairs = n;
	return 0;
}

/* FNV-1a over the 2n label strings, a NUL after each. */
static size_t labels_hash(const char *const *sorted, size_t n)
{
	uint64_t h = FNV1A_BASIS;

	for (size_t i = 0; i < 2 * n; i++)
		h = fnv1a(h, sorted[i], strlen(sorted[i]) + 1);
	return (size_t)h;
}

static bool same_labels(const struct series *s, const char *const *sorted,
			size_t n);

/* The index slot of the series with these labels, or the free one. */
static size_t *index_slot(const struct family *f, const char *const *sorted,
			  size_t n)
{
	size_t mask = f->index_cap - 1, i = labels_hash(sorted, n) & mask;

	while (f->index[i] && !same_labels(f->series[f->index[i] - 1], sorted, n))
		i = (i + 1) & mask;
	return &f->index[i];
}

/*
 * Index every series again, in a table with room for one more while at
 * most three quarters full.
 */
static int reindex(struct family *f)
{
	size_t *index, cap = 16;

	while ((f->nseries + 1) * 4 > cap * 3)
		cap *= 2;
	if (!(index = calloc(cap, sizeof(*index))))
		return ERR_NOMEM;
	free(f->index);
	f->index = index;
	f->index_cap = cap;
	for (size_t i = 0; i < f->nseries; i++)
		*index_slot(f, (const char *const *)f->series[i]->labels,
			    f->series[i]->nlabels) = i + 1;
	return 0;
}

/*
 * After the series moved (sorted, some removed): indexed again, or, out of
 * memory, no index, which the next lookup makes.
 */
static void index_again(struct family *f)
{
	if (reindex(f) < 0) {
		free(f->index);
		f->index = NULL;
		f->index_cap = 0;
	}
}

static bool same_labels(const struct series *s, const char *const *sorted,
			size_t n)
{
	size_t i;

	if (s->nlabels != n)
		return false;
	for (i = 0; i < 2 * n; i++)
		if (strcmp(s->labels[i], sorted[i]))
			return false;
	return true;
}

/*
 * The series of family `name` (of type `type`) with these labels,
 * created when new. Called with the lock held.
 */
static int get_series(struct metrics *m, const char *name,
		      enum metrics_type type, const char *const *labels,
		      struct family **fout, struct series **out)
{
	const char *sorted[2 * MAX_LABELS];
	struct family *f;
	struct series *s = NULL;
	size_t n = 0, i, *slot;
	int error;

	f = find_family(m, name);
	if (!f)
		return ERR_NOTFOUND;
	if (f->type != type)
		return ERR_INVALID;
	if ((error = sort_labels(labels, type == METRICS_HISTOGRAM, sorted,
				 &n)) < 0)
		return error;
	/* Room for one more, at most three quarters full. */
	if ((f->nseries + 1) * 4 > f->index_cap * 3 &&
	    (error = reindex(f)) < 0)
		return error;
	slot = index_slot(f, sorted, n);
	if (*slot) {
		*fout = f;
		*out = f->series[*slot - 1];
		return 0;
	}
	if (f->nseries == f->alloc) {
		size_t na = f->alloc ? 2 * f->alloc : 8;
		struct series **p = realloc(f->series, na * sizeof(*p));

		if (!p)
			return ERR_NOMEM;
		f->series = p;
		f->alloc = na;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return ERR_NOMEM;
	s->labels = calloc(2 * n + 1, sizeof(*s->labels));
	if (!s->labels)
		goto nomem;
	for (i = 0; i < 2 * n; i++) {
		s->labels[i] = strdup(sorted[i]);
		if (!s->labels[i])
			goto nomem;
	}
	s->nlabels = n;
	if (type == METRICS_HISTOGRAM) {
		s->counts = calloc(f->nbuckets + 1, sizeof(*s->counts));
		if (!s->counts)
			goto nomem;
	}
	f->series[f->nseries++] = s;
	*slot = f->nseries;
	*fout = f;
	*out = s;
	return 0;
nomem:
	series_free(s);
	return ERR_NOMEM;
}

int metrics_counter_add(struct metrics *m, const char *name,
			const char *const *labels, double v)
{
	struct family *f;
	struct series *s;
	int error;

	if (!(v >= 0) || isinf(v))
		return ERR_INVALID;
	pthread_mutex_lock(&m->lock);
	error = get_series(m, name, METRICS_COUNTER, labels, &f, &s);
	if (!error)
		s->value += v;
	pthread_mutex_unlock(&m->lock);
	return error;
}

int metrics_gauge_set(struct metrics *m, const char *name,
		      const char *const *labels, double v)
{
	struct family *f;
	struct series *s;
	int error;

	pthread_mutex_lock(&m->lock);
	error = get_series(m, name, METRICS_GAUGE, labels, &f, &s);
	if (!error)
		s->value = v;
	pthread_mutex_unlock(&m->lock);
	return error;
}

int metrics_observe(struct metrics *m, const char *name,
		    const char *const *labels, double v)
{
	struct family *f;
	struct series *s;
	size_t i;
	int error;

	if (isnan(v))
		return ERR_INVALID;
	pthread_mutex_lock(&m->lock);
	error = get_series(m, name, METRICS_HISTOGRAM, labels, &f, &s);
	if (!error) {
		/* The first bucket whose bound is >= v; else +Inf. */
		for (i = 0; i < f->nbuckets && v > f->buckets[i]; i++)
			;
		s->counts[i]++;
		s->count++;
		s->sum += v;
	}
	pthread_mutex_unlock(&m->lock);
	return error;
}

static const char *label_value(const struct series *s, const char *label)
{
	size_t i;

	for (i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[2 * i], label))
			return s->labels[2 * i + 1];
	return NULL;
}

void metrics_remove(struct metrics *m, const char *name, const char *label,
		    const char *value)
{
	size_t i, j, k;

	if (!label || !value)
		return;
	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->nfamilies; i++) {
		struct family *f = m->families[i];

		if (name && strcmp(f->name, name))
			continue;
		for (j = k = 0; j < f->nseries; j++) {
			const char *v = label_value(f->series[j], label);

			if (v && !strcmp(v, value))
				series_free(f->series[j]);
			else
				f->series[k++] = f->series[j];
		}
		if (k == f->nseries)
			continue;
		f->nseries = k;
		index_again(f);
	}
	pthread_mutex_unlock(&m->lock);
}

void metrics_set_collector(struct metrics *m,
			   void (*collect)(struct metrics *m, void *ctx),
			   void *ctx)
{
	pthread_mutex_lock(&m->lock);
	m->collect = collect;
	m->collect_ctx = ctx;
	pthread_mutex_unlock(&m->lock);
}

/*
 * A sample value: integers without exponent or decimals ("3", not
 * "3e+00"), others in the fewest digits that read back as the same
 * double, and the spellings the text format knows for the rest.
 */
static void format_value(double v, char out[40])
{
	int prec;

	if (isnan(v)) {
		snprintf(out, 40, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(out, 40, "%s", v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == 0) {
		snprintf(out, 40, "0");
		return;
	}
	if (v == floor(v) && fabs(v) < 1e15) {
		snprintf(out, 40, "%.0f", v);
		return;
	}
	for (prec = 1; prec < 17; prec++) {
		snprintf(out, 40, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			return;
	}
	snprintf(out, 40, "%.17g", v);
}

/* HELP text escapes backslash and newline; label values also '"'. */
static int add_escaped(struct buf *out, const char *s, bool quote)
{
	int error = 0;

	for (; *s && !error; s++) {
		if (*s == '\\')
			error = buf_adds(out, "\\\\");
		else if (*s == '\n')
			error = buf_adds(out, "\\n");
		else if (quote && *s == '"')
			error = buf_adds(out, "\\\"");
		else
			error = buf_addch(out, *s);
	}
	return error;
}

/* `{a="1",b="2"` plus `le` when given, closed with `}`; nothing if empty. */
static int add_labels(struct buf *out, const struct series *s, const char *le)
{
	size_t i;
	int error = 0;

	if (!s->nlabels && !le)
		return 0;
	error = buf_addch(out, '{');
	for (i = 0; i < s->nlabels && !error; i++) {
		error = buf_addf(out, "%s%s=\"", i ? "," : "",
				 s->labels[2 * i]);
		if (!error)
			error = add_escaped(out, s->labels[2 * i + 1], true);
		if (!error)
			error = buf_addch(out, '"');
	}
	if (!error && le)
		error = buf_addf(out, "%sle=\"%s\"", s->nlabels ? "," : "", le);
	if (!error)
		error = buf_addch(out, '}');
	return error;
}

static int cmp_family(const void *a, const void *b)
{
	const struct family *fa = *(const struct family *const *)a;
	const struct family *fb = *(const struct family *const *)b;

	return strcmp(fa->name, fb->name);
}

/* By label pairs in order (names, then values); fewer labels first. */
static int cmp_series(const void *a, const void *b)
{
	const struct series *sa = *(const struct series *const *)a;
	const struct series *sb = *(const struct series *const *)b;
	size_t i, n = sa->nlabels < sb->nlabels ? sa->nlabels : sb->nlabels;
	int c;

	for (i = 0; i < 2 * n; i++)
		if ((c = strcmp(sa->labels[i], sb->labels[i])))
			return c;
	return (sa->nlabels > sb->nlabels) - (sa->nlabels < sb->nlabels);
}

static int render_family(struct buf *out, struct family *f)
{
	static const char *const types[] = {
		[METRICS_COUNTER] = "counter",
		[METRICS_GAUGE] = "gauge",
		[METRICS_HISTOGRAM] = "histogram",
	};
	char v[40], le[40];
	size_t i, j;
	uint64_t cum;
	int error;

	if (!f->nseries)
		return 0;
	qsort(f->series, f->nseries, sizeof(*f->series), cmp_series);
	index_again(f);
	if ((error = buf_addf(out, "# HELP %s ", f->name)) < 0 ||
	    (error = add_escaped(out, f->help, false)) < 0 ||
	    (error = buf_addf(out, "\n# TYPE %s %s\n", f->name,
			      types[f->type])) < 0)
		return error;
	for (i = 0; i < f->nseries; i++) {
		struct series *s = f->series[i];

		if (f->type != METRICS_HISTOGRAM) {
			format_value(s->value, v);
			if ((error = buf_adds(out, f->name)) < 0 ||
			    (error = add_labels(out, s, NULL)) < 0 ||
			    (error = buf_addf(out, " %s\n", v)) < 0)
				return error;
			continue;
		}
		for (j = cum = 0; j <= f->nbuckets; j++) {
			cum += s->counts[j];
			if (j < f->nbuckets)
				format_value(f->buckets[j], le);
			else
				snprintf(le, sizeof(le), "+Inf");
			format_value((double)cum, v);
			if ((error = buf_addf(out, "%s_bucket", f->name)) < 0 ||
			    (error = add_labels(out, s, le)) < 0 ||
			    (error = buf_addf(out, " %s\n", v)) < 0)
				return error;
		}
		format_value(s->sum, v);
		if ((error = buf_addf(out, "%s_sum", f->name)) < 0 ||
		    (error = add_labels(out, s, NULL)) < 0 ||
		    (error = buf_addf(out, " %s\n", v)) < 0)
			return error;
		format_value((double)s->count, v);
		if ((error = buf_addf(out, "%s_count", f->name)) < 0 ||
		    (error = add_labels(out, s, NULL)) < 0 ||
		    (error = buf_addf(out, " %s\n", v)) < 0)
			return error;
	}
	return 0;
}

int metrics_render(struct metrics *m, struct buf *out)
{
	void (*collect)(struct metrics *, void *);
	void *ctx;
	size_t i, start = out->len;
	int error = 0;

	pthread_mutex_lock(&m->lock);
	collect = m->collect;
	ctx = m->collect_ctx;
	pthread_mutex_unlock(&m->lock);
	/* Unlocked: the collector sets values through this same API. */
	if (collect)
		collect(m, ctx);

	pthread_mutex_lock(&m->lock);
	if (m->nfamilies)
		qsort(m->families, m->nfamilies, sizeof(*m->families),
		      cmp_family);
	for (i = 0; i < m->nfamilies && !error; i++)
		error = render_family(out, m->families[i]);
	pthread_mutex_unlock(&m->lock);
	/* All or nothing: a capped buffer does not keep half a scrape. */
	if (error)
		buf_truncate(out, start);
	return error;
}
