/*
 * The text forms of `syncd status` (see status_fmt.h). Tables are sized
 * to their content; when a table would pass the width, its free-text
 * columns give up columns one at a time, the widest first, down to a
 * floor each, and their cells are cut with "…" (a field path keeps its
 * end: the leaf is what tells fields apart).
 */
#include "source/source.h"
#include "controller/controller.h"
#include "syncd/status_fmt.h"
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h" /* last */

#define ELLIPSIS    "\xe2\x80\xa6" /* U+2026, one column */
#define COLOR_RESET "\033[0m"
#define COL_GAP	    2
#define MAX_COLS    9
#define LABEL_WIDTH 11

void status_fmt_duration(char *out, size_t size, long long seconds)
{
	if (seconds < 0)
		seconds = 0;
	if (seconds < 60)
		snprintf(out, size, "%llds", seconds);
	else if (seconds < 3600)
		snprintf(out, size, "%lldm", seconds / 60);
	else if (seconds < 86400)
		snprintf(out, size, "%lldh", seconds / 3600);
	else
		snprintf(out, size, "%lldd", seconds / 86400);
}

const char *status_state_color(const char *state)
{
	static const struct {
		const char *state, *color;
	} colors[] = {
		{"InSync", "\033[32m"},
		{"Drifted", "\033[33m"},
		{"Failed", "\033[31m"},
		{"Fighting", "\033[35m"},
	};

	for (size_t i = 0; state && i < sizeof(colors) / sizeof(*colors); i++)
		if (!strcmp(state, colors[i].state))
			return colors[i].color;
	return NULL;
}

/*
 * The length of the valid UTF-8 sequence at `p`, 0 when it is not one;
 * *ok says whether it is printable (not C0, DEL or C1).
 */
static size_t sequence_len(const unsigned char *p, bool *ok)
{
	unsigned cp;
	size_t n, i;

	*ok = *p >= 0x20 && *p != 0x7f;
	if (*p < 0x80)
		return 1;
	if ((*p & 0xe0) == 0xc0) {
		n = 2;
		cp = *p & 0x1f;
	} else if ((*p & 0xf0) == 0xe0) {
		n = 3;
		cp = *p & 0x0f;
	} else if ((*p & 0xf8) == 0xf0) {
		n = 4;
		cp = *p & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	/* Overlong forms, surrogates, beyond Unicode. */
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
	    (n == 4 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) ||
	    cp > 0x10ffff)
		return 0;
	*ok = cp > 0x9f;
	return n;
}

/*
 * `s` with every control character and every byte that is not UTF-8
 * replaced by '?'; returns the columns.
 */
static size_t sanitize(struct buf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t cols = 0, n;
	bool ok = false;

	while (*p) {
		n = sequence_len(p, &ok);
		if (n && ok)
			buf_add(out, p, n);
		else
			buf_addch(out, '?');
		p += n ? n : 1;
		cols++;
	}
	return cols;
}

size_t status_text_width(const char *s)
{
	struct buf tmp = BUF_INIT;
	size_t cols = sanitize(&tmp, s);

	buf_release(&tmp);
	return cols;
}

static int add_spaces(struct buf *out, size_t n)
{
	int error = 0;

	while (n-- && !error)
		error = buf_addch(out, ' ');
	return error;
}

int status_fmt_cell(struct buf *out, const char *s, size_t width, bool keep_end,
		    bool pad)
{
	struct buf clean = BUF_INIT;
	size_t cols = sanitize(&clean, s), shown = cols;
	const char *c = buf_cstr(&clean), *p;
	int error = 0;

	if (cols <= width) {
		error = buf_add(out, c, clean.len);
	} else if (width) {
		/* Keep width - 1 code points, then the ellipsis. */
		size_t keep = width - 1, seen = 0;

		if (keep_end) {
			p = c + clean.len;
			while (seen < keep && p > c) {
				p--;
				if (((unsigned char)*p & 0xc0) != 0x80)
					seen++;
			}
			error = buf_adds(out, ELLIPSIS);
			if (!error)
				error = buf_add(out, p, clean.len - (p - c));
		} else {
			p = c;
			while (*p && seen < keep) {
				p++;
				while (((unsigned char)*p & 0xc0) == 0x80)
					p++;
				seen++;
			}
			error = buf_add(out, c, p - c);
			if (!error)
				error = buf_adds(out, ELLIPSIS);
		}
		shown = width;
	} else {
		shown = 0;
	}
	if (!error && pad && shown < width)
		error = add_spaces(out, width - shown);
	buf_release(&clean);
	return error;
}

/* ---------------------------------------------------------------------
 * Tables
 * ------------------------------------------------------------------- */

struct column {
	const char *title;
	size_t min;    /* the floor when shrinking; 0: never shrinks */
	size_t soft;   /* shrunk to this first, before any other; 0: none */
	bool keep_end; /* cut the start rather than the end */
	size_t width;
};

/*
 * A table; a row may instead be a heading (its first cell across the
 * whole line), under which the other rows are indented by `indent`.
 */
struct table {
	struct column cols[MAX_COLS];
	size_t ncols;
	size_t indent;	     /* of the rows that are not headings */
	int color_col;	     /* the column whose cells are coloured, or -1 */
	char **cells;	     /* rows * ncols, owned */
	const char **colors; /* one per row, borrowed; NULL: none */
	bool *headings;	     /* one per row */
	size_t rows, alloc;
};

static void table_release(struct table *t)
{
	for (size_t i = 0; i < t->rows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->colors);
	free(t->headings);
}

/* Append a row of ncols strings (copied), or a heading (one string). */
static int table_add(struct table *t, const char *const *cells,
		     const char *color, bool heading)
{
	size_t i;

	if (t->rows == t->alloc) {
		size_t alloc = t->alloc ? 2 * t->alloc : 8;
		char **c = realloc(t->cells, alloc * t->ncols * sizeof(*c));
		const char **k;
		bool *h;

		if (!c)
			return ERR_NOMEM;
		t->cells = c;
		k = realloc(t->colors, alloc * sizeof(*k));
		if (!k)
			return ERR_NOMEM;
		t->colors = k;
		h = realloc(t->headings, alloc * sizeof(*h));
		if (!h)
			return ERR_NOMEM;
		t->headings = h;
		t->alloc = alloc;
	}
	for (i = 0; i < t->ncols; i++) {
		t->cells[t->rows * t->ncols + i] =
			strdup(heading && i ? "" : cells[i]);
		if (!t->cells[t->rows * t->ncols + i]) {
			while (i--)
				free(t->cells[t->rows * t->ncols + i]);
			return ERR_NOMEM;
		}
	}
	t->headings[t->rows] = heading;
	t->colors[t->rows++] = color;
	return 0;
}

/*
 * Give the widest column that can still give a column one column less;
 * false when none can. `soft`: only down to the soft floors.
 */
static bool shrink_one(struct table *t, bool soft)
{
	struct column *widest = NULL;

	for (size_t i = 0; i < t->ncols; i++) {
		struct column *c = &t->cols[i];
		size_t floor = soft ? c->soft : c->min;

		if (floor && c->width > floor &&
		    (!widest || c->width > widest->width))
			widest = c;
	}
	if (widest)
		widest->width--;
	return widest != NULL;
}

/*
 * Size the columns to their content, then shrink them to fit `width`:
 * first the columns with a soft floor down to it, then every column
 * that may shrink, the widest first, down to its floor (past that, the
 * line overflows).
 */
static void table_fit(struct table *t, size_t width)
{
	size_t i, r, total, avail, title;

	for (i = 0; i < t->ncols; i++) {
		title = status_text_width(t->cols[i].title);
		/* The first title also covers the indent. */
		if (!i)
			title = title > t->indent ? title - t->indent : 0;
		t->cols[i].width = title;
		for (r = 0; r < t->rows; r++) {
			size_t w =
				status_text_width(t->cells[r * t->ncols + i]);

			if (!t->headings[r] && w > t->cols[i].width)
				t->cols[i].width = w;
		}
	}
	avail = t->indent + COL_GAP * (t->ncols - 1);
	avail = width > avail ? width - avail : 0;
	for (int soft = 1; soft >= 0; soft--) {
		do {
			for (total = 0, i = 0; i < t->ncols; i++)
				total += t->cols[i].width;
		} while (total > avail && shrink_one(t, soft));
	}
}

static int table_line(struct buf *out, const struct table *t,
		      const char *const *cells, const char *color)
{
	int error = 0;

	for (size_t i = 0; i < t->ncols && !error; i++) {
		bool last = i + 1 == t->ncols;
		bool colored = color && (int)i == t->color_col;

		if (i)
			error = add_spaces(out, COL_GAP);
		if (!error && colored)
			error = buf_adds(out, color);
		/* Colour ends before the padding, which stays plain. */
		if (!error)
			error = status_fmt_cell(out, cells[i], t->cols[i].width,
						t->cols[i].keep_end,
						!last && !colored);
		if (!error && colored) {
			size_t w = status_text_width(cells[i]);

			error = buf_adds(out, COLOR_RESET);
			if (!error && !last && w < t->cols[i].width)
				error = add_spaces(out, t->cols[i].width - w);
		}
	}
	return error ? error : buf_addch(out, '\n');
}

static int table_print(struct buf *out, struct table *t, size_t width)
{
	const char *titles[MAX_COLS];
	int error = 0;
	size_t i;

	table_fit(t, width);
	for (i = 0; i < t->ncols; i++)
		titles[i] = t->cols[i].title;
	/* The titles start at column 0: the first one spans the indent. */
	t->cols[0].width += t->indent;
	error = table_line(out, t, titles, NULL);
	t->cols[0].width -= t->indent;
	for (i = 0; i < t->rows && !error; i++) {
		char **cells = &t->cells[i * t->ncols];

		if (t->headings[i]) {
			error = status_fmt_cell(out, cells[0], width, false,
						false);
			if (!error)
				error = buf_addch(out, '\n');
			continue;
		}
		error = add_spaces(out, t->indent);
		if (!error)
			error = table_line(out, t, (const char *const *)cells,
					   t->colors[i]);
	}
	return error;
}

/* ---------------------------------------------------------------------
 * Documents
 * ------------------------------------------------------------------- */

static const char *str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* An age cell: "3m", or `none` when the time is missing or malformed. */
static void age(char *out, size_t size, const char *rfc3339, time_t now,
		const char *none)
{
	time_t t;

	if (!rfc3339 || clk_rfc3339_parse(rfc3339, &t) < 0)
		snprintf(out, size, "%s", none);
	else
		status_fmt_duration(out, size, (long long)(now - t));
}

/* "12s ago", "3m ago (failed)", or "never". */
static void last_sync(char *out, size_t size, const json_t *ls, time_t now,
		      bool success_too)
{
	const char *result = str(ls, "result");
	char d[32];

	if (!json_is_object(ls)) {
		snprintf(out, size, "never");
		return;
	}
	age(d, sizeof(d), str(ls, "time"), now, "?");
	if (result && !strcmp(result, "failure"))
		snprintf(out, size, "%s ago (failed)", d);
	else if (success_too && result)
		snprintf(out, size, "%s ago (%s)", d, result);
	else
		snprintf(out, size, "%s ago", d);
}

static void count(char *out, size_t size, const json_t *summary,
		  const char *key)
{
	json_t *v = json_object_get(summary, key);

	if (json_is_number(v))
		snprintf(out, size, "%lld", (long long)json_number_value(v));
	else
		snprintf(out, size, "-");
}

/* The revision shortened (a commit to 7 characters), or "-". */
static void short_revision(char *out, size_t size, const char *rev)
{
	if (!rev || !*rev) {
		snprintf(out, size, "-");
		return;
	}
	source_revision_short(out, size, rev, 7);
	/* Never half a UTF-8 sequence (a revision from a foreign status). */
	out[utf8_cut(out, strlen(out), size - 1)] = '\0';
}

static size_t width_of(const struct status_fmt_options *opts)
{
	return opts->width ? opts->width : STATUS_WIDTH;
}

int status_fmt_apps(struct buf *out, const json_t *doc,
		    const struct status_fmt_options *opts, struct err *err)
{
	struct table t = {
		.cols = {{"APP", 3, 0, false, 0},
			 {"STATE", 0, 0, false, 0},
			 {"HEALTH", 0, 0, false, 0},
			 {"REVISION", 0, 0, false, 0},
			 {"DRIFTED", 0, 0, false, 0},
			 {"FOREIGN", 0, 0, false, 0},
			 {"LAST SYNC", 0, 0, false, 0},
			 {"DRIFT", 0, 0, false, 0},
			 {"CLUSTER", 0, 0, false, 0}},
		.ncols = 8,
		.color_col = opts->color ? 1 : -1,
	};
	const json_t *apps = json_object_get(doc, "apps"), *leader, *app;
	int error = 0;
	size_t i;

	/* A cluster column once some app deploys to another cluster. */
	json_array_foreach (apps, i, app)
		if (str(app, "cluster") &&
		    strcmp(str(app, "cluster"), CONFIG_HOME_CLUSTER))
			t.ncols = 9;

	if (!json_is_object(doc) || !json_is_array(apps)) {
		error = err_set(err, ERR_PARSE,
				"the answer has no \"apps\" list");
		goto out;
	}
	leader = json_object_get(doc, "leader");
	if (json_is_true(leader))
		error = buf_adds(out,
				 "This replica is the leader: it writes.\n\n");
	else if (json_is_false(leader))
		error = buf_adds(out, "This replica is on standby: another "
				      "replica writes.\n\n");
	if (error)
		goto out;
	if (!json_array_size(apps)) {
		error = buf_adds(out, "no apps\n");
		goto out;
	}
	json_array_foreach (apps, i, app) {
		const json_t *summary = json_object_get(app, "summary");
		const char *name = str(app, "name"), *state = str(app, "state");
		char rev[64], drifted[32], foreign[32], sync[64],
			drift[32];
		const char *health =
			str(json_object_get(app, "health"), "status");
		/* Fighting fields: the State column, and `syncd status APP`. */
		const char *cells[9] = {name,	 state,	  health ? health : "-",
					rev,	 drifted, foreign,
					sync,	 drift,
					str(app, "cluster") ? str(app, "cluster")
							    : CONFIG_HOME_CLUSTER};
		json_t *f = json_object_get(summary, "fields");
		json_t *ff = json_object_get(summary, "foreignFields");
		json_t *hf = json_object_get(summary, "fightingFields");

		if (!name) {
			error = err_set(err, ERR_PARSE,
					"app %zu of the answer has no name", i);
			goto out;
		}
		if (!state)
			cells[1] = state = "Unknown";
		short_revision(rev, sizeof(rev), str(app, "revision"));
		if (json_is_number(f)) {
			long long n = (long long)json_number_value(f) -
				      (long long)json_number_value(ff) -
				      (long long)json_number_value(hf);

			snprintf(drifted, sizeof(drifted), "%lld",
				 n < 0 ? 0 : n);
		} else {
			snprintf(drifted, sizeof(drifted), "-");
		}
		count(foreign, sizeof(foreign), summary, "foreignFields");
		last_sync(sync, sizeof(sync), json_object_get(app, "lastSync"),
			  opts->now, false);
		age(drift, sizeof(drift), str(app, "driftSince"), opts->now,
		    "-");
		if ((error = table_add(&t, cells, status_state_color(state),
				       false)) < 0) {
			err_set(err, error, "out of memory");
			goto out;
		}
	}
	if ((error = table_print(out, &t, width_of(opts))) < 0)
		err_set(err, error, "out of memory");
out:
	table_release(&t);
	return error;
}

/*
 * "Label:     value", the value wrapped at spaces (or cut hard when a
 * word is longer than a line) and continued under itself.
 */
static int header_line(struct buf *out, const char *label, const char *value,
		       const char *color, size_t width)
{
	struct buf clean = BUF_INIT;
	size_t room = width > LABEL_WIDTH + 10 ? width - LABEL_WIDTH : 10;
	const char *p;
	int error;

	sanitize(&clean, value);
	p = buf_cstr(&clean);
	error = buf_addf(out, "%-*s", LABEL_WIDTH, label);
	if (!error && color)
		error = buf_adds(out, color);
	do {
		/* Find the byte length of at most `room` code points. */
		size_t cps = 0, end = 0, brk = 0;

		while (p[end] && cps < room) {
			end++;
			while (((unsigned char)p[end] & 0xc0) == 0x80)
				end++;
			cps++;
			if (p[end] == ' ')
				brk = end;
		}
		if (p[end] && brk)
			end = brk;
		if (!error && p != buf_cstr(&clean))
			error = buf_addf(out, "\n%-*s", LABEL_WIDTH, "");
		if (!error)
			error = buf_add(out, p, end);
		p += end;
		while (*p == ' ')
			p++;
	} while (*p && !error);
	if (!error && color)
		error = buf_adds(out, COLOR_RESET);
	if (!error)
		error = buf_addch(out, '\n');
	buf_release(&clean);
	return error;
}

/* "Deployment.apps default/web", as the drift report's messages say. */
static int object_name(struct buf *b, const json_t *obj)
{
	const char *group = str(obj, "group"), *ns = str(obj, "namespace");

	return buf_addf(b, "%s%s%s %s%s%s",
			str(obj, "kind") ? str(obj, "kind") : "?",
			group && *group ? "." : "", group ? group : "",
			ns && *ns ? ns : "", ns && *ns ? "/" : "",
			str(obj, "name") ? str(obj, "name") : "?");
}

/*
 * "self (kubectl-edit)", "foreign (hpa-controller)", "fighting
 * (kubectl-patch)": the owner and who else is involved (for a fight,
 * the manager syncd fights with, not syncd).
 */
static int owner_cell(struct buf *b, const json_t *field, const char *self)
{
	const char *owner = str(field, "owner");
	const json_t *list, *m;
	size_t i, shown = 0;
	bool fight = owner && !strcmp(owner, "fighting");
	int error;

	error = buf_adds(b, owner ? owner : "?");
	list = fight ? json_object_get(json_object_get(field, "fight"),
				       "managers")
		     : json_object_get(field, "managers");
	json_array_foreach (list, i, m) {
		const char *name =
			fight ? json_string_value(m) : str(m, "manager");

		if (!name || (fight && self && !strcmp(name, self)))
			continue;
		if (!error)
			error = buf_adds(b, shown++ ? ", " : " (");
		if (!error)
			error = buf_adds(b, name);
	}
	if (!error && shown)
		error = buf_addch(b, ')');
	return error;
}

/* "3 objects: 1 in sync, 1 drifted, 1 foreign": the non-zero counts. */
static int objects_line(struct buf *b, const json_t *summary)
{
	static const struct {
		const char *key, *label;
	} counts[] = {
		{"inSync", "in sync"},	{"drifted", "drifted"},
		{"missing", "missing"}, {"orphan", "orphan"},
		{"foreign", "foreign"}, {"fighting", "fighting"},
	};
	long long n = (long long)json_number_value(
		json_object_get(summary, "objects"));
	size_t shown = 0;
	int error;

	error = buf_addf(b, "%lld", n);
	for (size_t i = 0; i < sizeof(counts) / sizeof(*counts) && !error;
	     i++) {
		n = (long long)json_number_value(
			json_object_get(summary, counts[i].key));
		if (n)
			error = buf_addf(b, "%s%lld %s", shown++ ? ", " : " (",
					 n, counts[i].label);
	}
	if (!error && shown)
		error = buf_addch(b, ')');
	return error;
}

int status_fmt_app(struct buf *out, const json_t *doc,
		   const struct status_fmt_options *opts, struct err *err)
{
	struct table t = {
		.cols = {{"OBJECT / FIELD", 16, 0, true, 0},
			 {"OWNER", 10, 20, false, 0},
			 {"SINCE", 0, 0, false, 0}},
		.ncols = 3,
		.indent = 2,
		.color_col = -1,
	};
	const json_t *report = json_object_get(doc, "report"), *objs, *obj;
	const char *state = str(doc, "state"), *self;
	struct buf line = BUF_INIT, owner = BUF_INIT;
	size_t width = width_of(opts), i, j;
	char text[128], when[32];
	int error = 0;

	if (!json_is_object(doc) || !str(doc, "name")) {
		error = err_set(err, ERR_PARSE, "the answer has no app name");
		goto out;
	}
	if (!state)
		state = "Unknown";
	error = header_line(out, "App:", str(doc, "name"), NULL, width);
	if (!error)
		error = header_line(
			out, "State:", state,
			opts->color ? status_state_color(state) : NULL, width);
	if (!error && str(json_object_get(doc, "health"), "status")) {
		const json_t *h = json_object_get(doc, "health");

		buf_reset(&line);
		buf_addf(&line, "%s", str(h, "status"));
		if (str(h, "message") && *str(h, "message"))
			buf_addf(&line, ": %s", str(h, "message"));
		error = header_line(out, "Health:", buf_cstr(&line), NULL,
				    width);
		buf_reset(&line);
	}
	if (!error)
		error = header_line(out, "Revision:",
				    str(doc, "revision") ? str(doc, "revision")
							 : "-",
				    NULL, width);
	if (!error && str(doc, "cluster") &&
	    strcmp(str(doc, "cluster"), CONFIG_HOME_CLUSTER))
		error = header_line(out, "Cluster:", str(doc, "cluster"), NULL,
				    width);
	if (!error && str(doc, "repo"))
		error = header_line(out, "Repo:", str(doc, "repo"), NULL,
				    width);
	if (!error && str(doc, "path"))
		error = header_line(out, "Path:", str(doc, "path"), NULL,
				    width);
	last_sync(text, sizeof(text), json_object_get(doc, "lastSync"),
		  opts->now, true);
	if (!error)
		error = header_line(out, "Last sync:", text, NULL, width);
	if (str(doc, "driftSince")) {
		age(when, sizeof(when), str(doc, "driftSince"), opts->now, "?");
		snprintf(text, sizeof(text), "%s (since %.40s)", when,
			 str(doc, "driftSince"));
	} else {
		snprintf(text, sizeof(text), "none");
	}
	if (!error)
		error = header_line(out, "Drift:", text, NULL, width);
	if (!error && json_is_object(json_object_get(doc, "summary"))) {
		error = objects_line(&line, json_object_get(doc, "summary"));
		if (!error)
			error = header_line(out, "Objects:", buf_cstr(&line),
					    NULL, width);
	}
	if (!error && str(doc, "error"))
		error = header_line(out, "Error:", str(doc, "error"), NULL,
				    width);
	if (!error)
		error = buf_addch(out, '\n');
	if (error)
		goto nomem;

	if (!json_is_object(report)) {
		error = buf_adds(out, "no drift report yet\n");
		goto done;
	}
	self = str(report, "fieldManager");
	objs = json_object_get(report, "objects");
	json_array_foreach (objs, i, obj) {
		const json_t *fields = json_object_get(obj, "fields"), *f;
		const char *ostate = str(obj, "state");
		bool whole = ostate && (!strcmp(ostate, "Missing") ||
					!strcmp(ostate, "Orphan"));
		const char *cells[3];

		if (!json_array_size(fields) && !whole)
			continue;
		buf_reset(&line);
		if ((error = object_name(&line, obj)) < 0)
			goto nomem;
		cells[0] = buf_cstr(&line);
		if ((error = table_add(&t, cells, NULL, true)) < 0)
			goto nomem;
		/* Missing and orphan objects differ as a whole. */
		if (whole && !json_array_size(fields)) {
			cells[0] = !strcmp(ostate, "Missing")
					   ? "(missing: not in the cluster)"
					   : "(orphan: no longer desired)";
			cells[1] = "self";
			cells[2] = "-";
			if ((error = table_add(&t, cells, NULL, false)) < 0)
				goto nomem;
			continue;
		}
		json_array_foreach (fields, j, f) {
			buf_reset(&owner);
			if ((error = owner_cell(&owner, f, self)) < 0)
				goto nomem;
			age(when, sizeof(when), str(f, "firstSeen"), opts->now,
			    "-");
			cells[0] = str(f, "path") ? str(f, "path") : "?";
			cells[1] = buf_cstr(&owner);
			cells[2] = when;
			if ((error = table_add(&t, cells, NULL, false)) < 0)
				goto nomem;
		}
	}
	if (!t.rows)
		error = buf_adds(out, "no drift\n");
	else
		error = table_print(out, &t, width);
done:
	if (error < 0)
		goto nomem;
	goto out;
nomem:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	table_release(&t);
	buf_release(&line);
	buf_release(&owner);
	return error;
}

int status_fmt_json(struct buf *out, const json_t *doc, struct err *err)
{
	char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	int error = 0;

	if (!s || buf_adds(out, s) < 0 || buf_addch(out, '\n') < 0)
		error = err_set(err, ERR_NOMEM, "out of memory");
	free(s);
	return error;
}
