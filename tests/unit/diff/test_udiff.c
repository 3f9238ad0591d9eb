/*
 * diff_unified() against GNU diff: each pair of texts is written to
 * temporary files and `diff -u --label A --label B` runs on them; the
 * outputs must match byte for byte. Every output is also applied to A
 * with a small patch implementation here, which must give B exactly.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "diff/diff.h"

/* ---- helpers ---------------------------------------------------------- */

static void write_temp(char *path, size_t size, const char *data, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, size, "%s/syncd-udiff-XXXXXX",
		 dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0, "mkstemp %s", path);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* Output of `diff <flags> --label A --label B` on the two texts. */
static char *gnu_diff_n(const char *flags, const char *a, size_t a_len,
			const char *b, size_t b_len, size_t *len)
{
	char pa[256], pb[256], cmd[700], chunk[4096];
	struct buf out = BUF_INIT;
	FILE *p;
	size_t n;
	int status;

	write_temp(pa, sizeof(pa), a, a_len);
	write_temp(pb, sizeof(pb), b, b_len);
	snprintf(cmd, sizeof(cmd), "diff %s --label A --label B %s %s", flags,
		 pa, pb);
	p = popen(cmd, "r");
	cr_assert_not_null(p, "popen %s", cmd);
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		cr_assert_eq(buf_add(&out, chunk, n), 0);
	status = pclose(p);
	unlink(pa);
	unlink(pb);
	/* 0: same, 1: different, 2: trouble. */
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) <= 1,
		  "%s failed (%d)", cmd, status);
	return buf_detach(&out, len);
}

static char *gnu_diff(const char *flags, const char *a, size_t a_len,
		      const char *b, size_t b_len)
{
	return gnu_diff_n(flags, a, a_len, b, b_len, NULL);
}

static char *mine_n(const char *a, size_t a_len, const char *b, size_t b_len,
		    unsigned context, size_t *len)
{
	struct buf out = BUF_INIT;

	cr_assert_eq(diff_unified(a, a_len, b, b_len, "A", "B", context, &out),
		     0);
	return buf_detach(&out, len);
}

static char *mine(const char *a, size_t a_len, const char *b, size_t b_len,
		  unsigned context)
{
	return mine_n(a, a_len, b, b_len, context, NULL);
}

/* One line of a text: [p, p + len), '\n' included when present. */
struct span {
	const char *p;
	size_t len;
};

static size_t split_lines(const char *s, size_t len, struct span **out)
{
	size_t n = 0, off = 0;
	struct span *v = calloc(len + 1, sizeof(*v));

	cr_assert_not_null(v);
	while (off < len) {
		const char *nl = memchr(s + off, '\n', len - off);
		size_t l = nl ? (size_t)(nl - (s + off)) + 1 : len - off;

		v[n].p = s + off;
		v[n++].len = l;
		off += l;
	}
	*out = v;
	return n;
}

static bool span_eq(struct span x, struct span y)
{
	return x.len == y.len && !memcmp(x.p, y.p, x.len);
}

/*
 * Apply a unified diff to a and check that the result is b. Also checks
 * the structure: headers, hunk ranges that match the bodies (with GNU's
 * conventions for empty and one-line ranges), hunks in order, context and
 * deleted lines that are really in a. Counts the '-' and '+' lines.
 */
static void check_patch(const char *patch, const char *a, size_t a_len,
			const char *b, size_t b_len, size_t *deleted,
			size_t *inserted)
{
	struct span *al, *pl;
	size_t na = split_lines(a, a_len, &al);
	size_t np = split_lines(patch, strlen(patch), &pl);
	struct buf res = BUF_INIT;
	size_t ai = 0, k = 0, nres = 0;
	const char *nonl = "\\ No newline at end of file\n";
	const struct span no_newline = {nonl, strlen(nonl)};

	*deleted = *inserted = 0;
	if (!np) {
		cr_assert(a_len == b_len && !memcmp(a, b, a_len),
			  "empty diff for different texts");
		goto out;
	}
	cr_assert(np >= 3, "diff too short:\n%s", patch);
	cr_assert(!strncmp(pl[0].p, "--- A\n", 6), "bad header:\n%s", patch);
	cr_assert(!strncmp(pl[1].p, "+++ B\n", 6), "bad header:\n%s", patch);
	for (k = 2; k < np;) {
		long s0, l0 = 1, s1, l1 = 1;
		size_t olds = 0, news = 0, start;
		char tail[8];
		int used = 0;
		const char *h = pl[k].p;

		cr_assert(!strncmp(h, "@@ -", 4), "not a hunk: %.*s",
			  (int)pl[k].len, h);
		if (sscanf(h, "@@ -%ld,%ld +%n", &s0, &l0, &used) < 2) {
			l0 = 1;
			cr_assert_eq(sscanf(h, "@@ -%ld +%n", &s0, &used), 1);
		}
		h += used;
		used = 0;
		if (sscanf(h, "%ld,%ld%n", &s1, &l1, &used) < 2) {
			l1 = 1;
			cr_assert_eq(sscanf(h, "%ld%n", &s1, &used), 1);
		}
		cr_assert_eq(sscanf(h + used, " %7s", tail), 1);
		cr_assert_str_eq(tail, "@@");
		/* An empty range names the line before it. */
		start = l0 ? (size_t)s0 - 1 : (size_t)s0;
		cr_assert_geq(start, ai, "hunks out of order or overlapping");
		cr_assert_leq(start + (size_t)l0, na);
		while (ai < start)
			buf_add(&res, al[ai].p, al[ai].len), ai++, nres++;
		/* The B side starts where the result is. */
		cr_assert_eq(l1 ? (size_t)s1 - 1 : (size_t)s1, nres,
			     "new start %ld, result has %zu lines", s1, nres);
		for (k++; k < np && pl[k].p[0] != '@'; k++) {
			struct span body = {pl[k].p + 1, pl[k].len - 1};
			char mark = pl[k].p[0];

			/* "\ No newline" takes the newline off this line. */
			if (k + 1 < np && pl[k + 1].p[0] == '\\') {
				cr_assert(span_eq(pl[k + 1], no_newline));
				body.len--;
			}
			if (mark == ' ' || mark == '-') {
				cr_assert_lt(ai, na);
				cr_assert(span_eq(body, al[ai]),
					  "line %zu of A is not %.*s", ai + 1,
					  (int)body.len, body.p);
				ai++;
				olds++;
			}
			if (mark == ' ' || mark == '+') {
				buf_add(&res, body.p, body.len);
				news++;
				nres++;
			}
			if (mark == '-')
				(*deleted)++;
			else if (mark == '+')
				(*inserted)++;
			else
				cr_assert_eq(mark, ' ', "bad line %.*s",
					     (int)pl[k].len, pl[k].p);
			if (k + 1 < np && pl[k + 1].p[0] == '\\')
				k++;
		}
		cr_assert_eq(olds, (size_t)l0, "old count in hunk");
		cr_assert_eq(news, (size_t)l1, "new count in hunk");
	}
	while (ai < na)
		buf_add(&res, al[ai].p, al[ai].len), ai++;
	cr_assert(res.len == b_len && !memcmp(buf_cstr(&res), b, b_len),
		  "patch does not give B:\n%s\nresult:\n%s", patch,
		  buf_cstr(&res));
out:
	buf_release(&res);
	free(al);
	free(pl);
}

/* Compare with `diff -u` byte for byte, and check the patch applies. */
static void same_as_gnu_n(const char *a, size_t a_len, const char *b,
			  size_t b_len)
{
	char *g = gnu_diff("-u", a, a_len, b, b_len);
	char *m = mine(a, a_len, b, b_len, 3);
	size_t del, ins;

	cr_assert_str_eq(m, g, "A:\n%s\nB:\n%s", a, b);
	check_patch(m, a, a_len, b, b_len, &del, &ins);
	free(g);
	free(m);
}

static void same_as_gnu(const char *a, const char *b)
{
	same_as_gnu_n(a, strlen(a), b, strlen(b));
}

/* ---- fixed cases ------------------------------------------------------ */

Test(udiff, equal_texts)
{
	struct buf out = BUF_INIT;

	buf_adds(&out, "before");
	cr_assert_eq(diff_unified("a\nb\n", 4, "a\nb\n", 4, "A", "B", 3, &out),
		     0);
	cr_assert_eq(diff_unified("", 0, "", 0, "A", "B", 3, &out), 0);
	cr_assert_eq(diff_unified(NULL, 0, NULL, 0, "A", "B", 3, &out), 0);
	cr_assert_eq(diff_unified("x", 1, "x", 1, "A", "B", 3, &out), 0);
	cr_assert_str_eq(buf_cstr(&out), "before");
	buf_release(&out);
	same_as_gnu("a\nb\nc\n", "a\nb\nc\n");
}

Test(udiff, appends_to_out)
{
	struct buf out = BUF_INIT;

	buf_adds(&out, "x\n");
	cr_assert_eq(diff_unified("a\n", 2, "b\n", 2, "old", "new", 3, &out),
		     0);
	cr_assert_str_eq(buf_cstr(&out),
			 "x\n--- old\n+++ new\n@@ -1 +1 @@\n-a\n+b\n");
	buf_release(&out);
}

Test(udiff, insertions)
{
	const char *base = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

	same_as_gnu(base, "new\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
	same_as_gnu(base, "1\n2\n3\n4\n5\nnew\n6\n7\n8\n9\n10\n");
	same_as_gnu(base, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\nnew\n");
	same_as_gnu(base, "1\n2\n3\n4\n5\nx\ny\nz\n6\n7\n8\n9\n10\n");
	/* An ambiguous insertion (into a run of equal lines) goes last. */
	same_as_gnu("a\nb\nb\nc\n", "a\nb\nb\nb\nc\n");
	same_as_gnu("a\nb\nc\na\nb\nc\n", "a\nb\nc\na\nb\nc\na\nb\nc\n");
}

Test(udiff, deletions)
{
	const char *base = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

	same_as_gnu(base, "2\n3\n4\n5\n6\n7\n8\n9\n10\n");
	same_as_gnu(base, "1\n2\n3\n4\n6\n7\n8\n9\n10\n");
	same_as_gnu(base, "1\n2\n3\n4\n5\n6\n7\n8\n9\n");
	same_as_gnu(base, "1\n2\n8\n9\n10\n");
	same_as_gnu("a\nb\nb\nb\nc\n", "a\nb\nc\n");
}

Test(udiff, replacements)
{
	const char *base = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

	same_as_gnu(base, "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n");
	same_as_gnu(base, "1\n2\n3\nfour\nfive\nsix\n7\n8\n9\n10\n");
	same_as_gnu(base, "1\n2\n3\nX\n7\n8\n9\n10\n");
	same_as_gnu(base, "one\n2\n3\n4\n5\n6\n7\n8\n9\nten\n");
	same_as_gnu("a\nb\nc\n", "x\ny\nz\n");
}

Test(udiff, hunks_far_apart_and_close)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	int i;

	for (i = 1; i <= 40; i++) {
		buf_addf(&a, "line %d\n", i);
		buf_addf(&b, "line %d%s\n", i,
			 i == 5 || i == 30 ? " changed" : "");
	}
	same_as_gnu(a.ptr, b.ptr);
	/* Two hunks with their own headers. */
	{
		char *m = mine(a.ptr, a.len, b.ptr, b.len, 3);

		cr_assert_not_null(strstr(m, "@@ -2,7 +2,7 @@"));
		cr_assert_not_null(strstr(m, "@@ -27,7 +27,7 @@"));
		free(m);
	}

	/*
	 * Changes 6 unchanged lines apart: the contexts touch, one hunk;
	 * 7 apart: two hunks.
	 */
	for (int gap = 5; gap <= 8; gap++) {
		struct buf c = BUF_INIT;
		char *m;
		int hunks = 0;

		for (i = 1; i <= 40; i++)
			buf_addf(&c, "line %d%s\n", i,
				 i == 10 || i == 10 + gap + 1 ? " changed"
							      : "");
		same_as_gnu(a.ptr, c.ptr);
		m = mine(a.ptr, a.len, c.ptr, c.len, 3);
		for (char *p = m; (p = strstr(p, "\n@@ ")); p++)
			hunks++;
		cr_assert_eq(hunks, gap <= 6 ? 1 : 2, "gap %d", gap);
		free(m);
		buf_release(&c);
	}
	buf_release(&a);
	buf_release(&b);
}

Test(udiff, empty_sides)
{
	same_as_gnu("", "a\nb\n");
	same_as_gnu("a\nb\n", "");
	same_as_gnu("", "a");
	same_as_gnu("a", "");
	same_as_gnu("", "\n");
	{
		char *m = mine("", 0, "a\nb\n", 4, 3);

		cr_assert_str_eq(m, "--- A\n+++ B\n@@ -0,0 +1,2 @@\n+a\n+b\n");
		free(m);
	}
}

Test(udiff, missing_final_newline)
{
	/* Only the newline differs. */
	same_as_gnu("a\nb", "a\nb\n");
	same_as_gnu("a\nb\n", "a\nb");
	/* Both lack it, the last line differs or not. */
	same_as_gnu("a\nb", "a\nc");
	same_as_gnu("x\na\nb\nc\nd", "y\na\nb\nc\nd");
	same_as_gnu("x\na\nb\nc\nd", "y\na\nb\nc\nd\ne\nf\ng\nh");
	/* The incomplete line as context at the end of a hunk. */
	same_as_gnu("1\n2\n3\n4\n5", "1\n2\n3\nfour\n5");
	/* A deleted incomplete line followed by insertions. */
	same_as_gnu("x\ny", "x\nz\nw\n");
	same_as_gnu("x\ny\n", "x\nz\nw");
	{
		char *m = mine("a\nb", 3, "a\nb\n", 4, 3);

		cr_assert_str_eq(m, "--- A\n+++ B\n@@ -1,2 +1,2 @@\n a\n-b\n"
				    "\\ No newline at end of file\n+b\n");
		free(m);
	}
}

Test(udiff, single_lines)
{
	same_as_gnu("a\n", "b\n");
	same_as_gnu("a", "b");
	same_as_gnu("a", "a\n");
	same_as_gnu("a\n", "a\nb\n");
	same_as_gnu("b\n", "a\nb\n");
	same_as_gnu("\n", "\n\n");
}

Test(udiff, other_context_widths)
{
	const char *a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n";
	const char *b = "1\n2\nthree\n4\n5\n6\n7\n8\n9\nten\n11\n12\n";
	static const unsigned widths[] = {0, 1, 2, 5, 100, 4000000000u};

	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		char flags[32];
		char *g, *m;

		snprintf(flags, sizeof(flags), "-U%u", widths[i]);
		g = gnu_diff(flags, a, strlen(a), b, strlen(b));
		m = mine(a, strlen(a), b, strlen(b), widths[i]);
		cr_assert_str_eq(m, g, "context %u", widths[i]);
		free(g);
		free(m);
	}
	{
		char *m = mine("a\nb\nc\n", 6, "a\nc\n", 4, 0);

		cr_assert_str_eq(m, "--- A\n+++ B\n@@ -2 +1,0 @@\n-b\n");
		free(m);
	}
}

/* Bytes diff does not care about: CR, NUL, long lines. */
Test(udiff, arbitrary_bytes)
{
	const char a[] = "one\r\ntwo\0zero\nthree\n";
	const char b[] = "one\r\ntwo\0nil\nthree\n";
	size_t del, ins, mlen, glen;
	char *m = mine_n(a, sizeof(a) - 1, b, sizeof(b) - 1, 3, &mlen);
	char *g =
		gnu_diff_n("-u -a", a, sizeof(a) - 1, b, sizeof(b) - 1, &glen);

	/* The output holds a NUL: compare lengths and bytes. */
	cr_assert_eq(mlen, glen);
	cr_assert_eq(memcmp(m, g, mlen), 0);
	cr_assert_eq(mlen, strlen("--- A\n+++ B\n@@ -1,3 +1,3 @@\n "
				  "one\r\n-two0zero\n+two0nil\n three\n"));
	free(g);
	free(m);
	same_as_gnu("x\r\ny\r\n", "x\r\nz\r\n");

	struct buf la = BUF_INIT, lb = BUF_INIT;

	for (int i = 0; i < 100000; i++)
		buf_addch(&la, (char)('a' + i % 26));
	buf_addch(&la, '\n');
	buf_add(&lb, la.ptr, la.len);
	lb.ptr[50000] = '#';
	same_as_gnu(la.ptr, lb.ptr);
	m = mine(la.ptr, la.len, lb.ptr, lb.len, 3);
	check_patch(m, la.ptr, la.len, lb.ptr, lb.len, &del, &ins);
	cr_assert_eq(del, 1);
	cr_assert_eq(ins, 1);
	free(m);
	buf_release(&la);
	buf_release(&lb);
}

Test(udiff, output_cap)
{
	struct buf out = BUF_INIT;

	buf_init(&out, 20);
	buf_adds(&out, "keep");
	cr_assert_eq(
		diff_unified("a\nb\nc\n", 6, "a\nx\nc\n", 6, "A", "B", 3, &out),
		ERR_LIMIT);
	cr_assert_str_eq(buf_cstr(&out), "keep");
	buf_release(&out);
}

/*
 * Where several minimal scripts exist, GNU diff's choice comes from its
 * pipeline (the horizon of prefix and suffix lines, lines that match
 * nothing set aside, runs slid down and lined up with the other side);
 * these pairs each needed one of those steps to come out the same.
 */
Test(udiff, gnu_choices)
{
	static const struct {
		const char *a, *b;
		unsigned context;
	} cases[] = {
		{"a\na\nb\na\na\na\n", "a\na\nb\nb\na\na\nb\na\na\nb\na\n", 3},
		{"a\na\nb\na\na\na\nb\nb\na\nb\na\na\n", "a\nb\n", 3},
		{"a\nb\nb\n", "a\na\na\nb\nb\na\nb\na\na\nb\na\n", 3},
		{"f\nf\nd\nd\nb\nf\nf\ng\ng\ne\nc\nb\n",
		 "f\nf\nd\nd\nf\ng\nd\nc\nb\n", 3},
		{"f\nf\nd\nd\nb\nf\nf\ng\ng\ne\nc\nb\n",
		 "f\nf\nd\nd\nf\ng\nd\nc\nb\n", 0},
		{"a\nb\nb\na\nb\na\na\nb\na\nb\n",
		 "b\na\nb\nb\nb\nb\na\nb\na\nb\nb\n", 3},
		{"c\na\nb\nc\n", "a\na\nc\na\n", 3},
		{"c\n", "b\nc\nb\na\nb\nc\n", 3},
		{"a\nb\na\nb\nb\nb\nb\na\na\n", "a\nb\nb\na\nb\nb\na\n", 3},
		{"a\na\na\nb\na\nb\na\nb\na\na\n", "b\na\na\na\nb\n", 3},
		{"b\na\na\nb\na\na\na\nb\nb\nb\nb\na\n",
		 "a\na\nb\na\na\nb\nb\na\na\n", 3},
		{"g\nb\nd\nb\ne\nf\ne\nb\nh\n", "b\na\ne\na\n", 3},
		{"c\nc\n", "b\nc\na\na\nc\nc\nc\nb\na\na\nb\n", 3},
		{"e\ng\ng\ne\nh\ne\nc\nh\nc\nc\n", "a\ng\na\nf\n", 3},
		{"e\ne\n", "f\nh\nh\nb\na\ne\ng\n", 3},
		{"a\nb\na\na\na\na\n", "b\nb\nb\na\n", 3},
		{"b\nh\nc\nb\n", "a\nb\nh\nh\nc\nb\n", 0},
		{"h\nf\na\na\nb\nf\nb\nf\na\n",
		 "h\nf\na\ng\nb\nf\nb\nf\na\na\n", 0},
		{"d\ne\nc\nc\na\na\nb\n", "d\ne\ng\nc\nc\na\nb\n", 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *a = cases[i].a, *b = cases[i].b;
		char flags[16], *g, *m;
		size_t del, ins;

		snprintf(flags, sizeof(flags), "-U%u", cases[i].context);
		g = gnu_diff(flags, a, strlen(a), b, strlen(b));
		m = mine(a, strlen(a), b, strlen(b), cases[i].context);
		cr_assert_str_eq(m, g, "case %zu", i);
		check_patch(m, a, strlen(a), b, strlen(b), &del, &ins);
		free(g);
		free(m);
	}
}

/* ---- larger texts ----------------------------------------------------- */

/* xorshift64*: the same sequence everywhere. */
static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static unsigned rnd(unsigned n)
{
	return (unsigned)(rng() % n);
}

/* Manifests as a renderer prints them: many repeated lines. */
static void yaml_like(struct buf *out, int lines)
{
	static const char *const tmpl[] = {
		"apiVersion: apps/v1\n",
		"kind: Deployment\n",
		"metadata:\n",
		"  name: web-%d\n",
		"  namespace: prod\n",
		"  labels:\n",
		"    app: web\n",
		"spec:\n",
		"  replicas: 3\n",
		"  template:\n",
		"    spec:\n",
		"      containers:\n",
		"      - name: web\n",
		"        image: nginx:1.%d\n",
		"        ports:\n",
		"        - containerPort: 80\n",
		"          protocol: TCP\n",
		"        resources:\n",
		"          limits:\n",
		"            cpu: 500m\n",
		"---\n",
	};
	const size_t nt = sizeof(tmpl) / sizeof(tmpl[0]);

	for (int i = 0; i < lines; i++)
		buf_addf(out, tmpl[i % nt], i / (int)nt);
}

/* Edit a copy of `in` at `n` scattered places (lines at least 40 apart). */
static void scatter_edits(const struct buf *in, struct buf *out, int n)
{
	struct span *l;
	size_t nl = split_lines(in->ptr, in->len, &l), i;
	size_t step = nl / (size_t)n;

	for (i = 0; i < nl; i++) {
		if (i % step != step / 2) {
			buf_add(out, l[i].p, l[i].len);
			continue;
		}
		switch ((i / step) % 4) {
		case 0: /* change */
			buf_addf(out, "    edited: %zu\n", i);
			break;
		case 1: /* insert two lines */
			buf_add(out, l[i].p, l[i].len);
			buf_adds(out, "    team: payments\n");
			buf_adds(out, "    tier: backend\n");
			break;
		case 2: /* delete */
			break;
		default: /* duplicate a line (ambiguous placement) */
			buf_add(out, l[i].p, l[i].len);
			buf_add(out, l[i].p, l[i].len);
			break;
		}
	}
	free(l);
}

Test(udiff, yaml_2000_lines_10_changes)
{
	struct buf a = BUF_INIT, b = BUF_INIT;

	yaml_like(&a, 2000);
	scatter_edits(&a, &b, 10);
	same_as_gnu(a.ptr, b.ptr);
	buf_release(&a);
	buf_release(&b);
}

/* Length of a longest common subsequence of lines, by dynamic programming. */
static size_t lcs_len(const char *a, size_t a_len, const char *b, size_t b_len)
{
	struct span *al, *bl;
	size_t na = split_lines(a, a_len, &al), nb = split_lines(b, b_len, &bl);
	size_t *row = calloc((na + 1) * (nb + 1), sizeof(*row)), r;

	cr_assert_not_null(row);
	for (size_t i = 1; i <= na; i++)
		for (size_t j = 1; j <= nb; j++) {
			size_t *c = &row[i * (nb + 1) + j];

			if (span_eq(al[i - 1], bl[j - 1]))
				*c = row[(i - 1) * (nb + 1) + j - 1] + 1;
			else
				*c = row[(i - 1) * (nb + 1) + j] >
						     row[i * (nb + 1) + j - 1]
					     ? row[(i - 1) * (nb + 1) + j]
					     : row[i * (nb + 1) + j - 1];
		}
	r = row[na * (nb + 1) + nb];
	free(row);
	free(al);
	free(bl);
	return r;
}

static size_t count_lines(const char *s, size_t len)
{
	struct span *l;
	size_t n = split_lines(s, len, &l);

	free(l);
	return n;
}

static void write_file(const char *dir, const char *side, int i,
		       const struct buf *text)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%03d", dir, side, i);
	f = fopen(path, "wb");
	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fwrite(buf_cstr(text), 1, text->len, f), text->len);
	cr_assert_eq(fclose(f), 0);
}

static void random_text(struct buf *out, const char *alphabet)
{
	size_t k = strlen(alphabet);
	unsigned n = rnd(13);

	for (unsigned i = 0; i < n; i++) {
		buf_addch(out, alphabet[rnd((unsigned)k)]);
		buf_addch(out, '\n');
	}
	/* Now and then drop the final newline. */
	if (out->len && !rnd(5))
		buf_truncate(out, out->len - 1);
}

/*
 * 200 random pairs of small texts over two to four distinct lines, where
 * minimal scripts are rarely unique. The output must apply, and be
 * minimal: as many '-' and '+' lines as `diff -d` (GNU's --minimal)
 * prints, and as a longest common subsequence implies. Plain `diff -u`
 * is not always minimal: its discard heuristic sometimes gives up a match
 * (see gnu_heuristic_is_not_minimal).
 */
#define NPAIRS 200

/*
 * The '-' and '+' lines per file of `diff -r -u -d dir/a dir/b` (one
 * process for all the pairs).
 */
static void gnu_counts_r(const char *dir, size_t *del, size_t *ins)
{
	char cmd[700], line[4096];
	FILE *p;
	long cur = -1;
	int status;

	snprintf(cmd, sizeof(cmd), "diff -r -u -d %s/a %s/b", dir, dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (!strncmp(line, "diff ", 5)) {
			cur = atol(strrchr(line, '/') + 1);
			cr_assert(cur >= 0 && cur < NPAIRS);
		} else if (cur < 0 || !strncmp(line, "--- ", 4) ||
			   !strncmp(line, "+++ ", 4)) {
			continue;
		} else if (line[0] == '-') {
			del[cur]++;
		} else if (line[0] == '+') {
			ins[cur]++;
		}
	}
	status = pclose(p);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) <= 1);
}

/*
 * 200 random pairs of small texts over two to four distinct lines, where
 * minimal scripts are rarely unique. The output must apply, and be
 * minimal: as many '-' and '+' lines as `diff -d` (GNU's --minimal)
 * prints, and as a longest common subsequence implies. Plain `diff -u`
 * is not always minimal: its discard heuristic sometimes gives up a match
 * (see gnu_heuristic_is_not_minimal).
 */
Test(udiff, random_pairs)
{
	static const char *const alphabets[] = {"ab", "abc", "abcd"};
	static struct buf a[NPAIRS], b[NPAIRS];
	static size_t gdel[NPAIRS], gins[NPAIRS];
	const char *tmp = getenv("TMPDIR");
	char dir[256], path[300];
	int it;

	snprintf(dir, sizeof(dir), "%s/syncd-udiff-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/b", dir);
	cr_assert_eq(mkdir(path, 0700), 0);

	rng_state = 0x9e3779b97f4a7c15ull;
	for (it = 0; it < NPAIRS; it++) {
		random_text(&a[it], alphabets[it % 3]);
		random_text(&b[it], alphabets[it % 3]);
		write_file(dir, "a", it, &a[it]);
		write_file(dir, "b", it, &b[it]);
	}
	gnu_counts_r(dir, gdel, gins);

	for (it = 0; it < NPAIRS; it++) {
		const char *ta = buf_cstr(&a[it]), *tb = buf_cstr(&b[it]);
		size_t la = a[it].len, lb = b[it].len, del, ins, lcs;
		char *m = mine(ta, la, tb, lb, 3);

		check_patch(m, ta, la, tb, lb, &del, &ins);
		cr_assert_eq(del, gdel[it], "pair %d:\n%s", it, m);
		cr_assert_eq(ins, gins[it], "pair %d:\n%s", it, m);
		lcs = lcs_len(ta, la, tb, lb);
		cr_assert_eq(del, count_lines(ta, la) - lcs);
		cr_assert_eq(ins, count_lines(tb, lb) - lcs);
		free(m);
	}

	for (it = 0; it < NPAIRS; it++) {
		snprintf(path, sizeof(path), "%s/a/%03d", dir, it);
		unlink(path);
		snprintf(path, sizeof(path), "%s/b/%03d", dir, it);
		unlink(path);
		buf_release(&a[it]);
		buf_release(&b[it]);
	}
	snprintf(path, sizeof(path), "%s/a", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/b", dir);
	rmdir(path);
	rmdir(dir);
}

/*
 * GNU diff sets aside lines with many matches when they sit among lines
 * with none, and here loses a match by it (15 changed lines); the
 * minimal script has 13, as `diff -d` agrees.
 */
Test(udiff, gnu_heuristic_is_not_minimal)
{
	const char *a = "a\na\na\na\na\na\na\nb";
	const char *b = "a\nb\nb\nb\na\nb\nb\nb\nb\na\nb\n";
	char *m = mine(a, strlen(a), b, strlen(b), 3);
	char *g = gnu_diff("-u -d", a, strlen(a), b, strlen(b));
	size_t del, ins;

	check_patch(m, a, strlen(a), b, strlen(b), &del, &ins);
	cr_assert_eq(del + ins, 13);
	cr_assert_str_eq(m, g);
	free(m);
	free(g);
}

/* Many changes over the same few lines: large D, still minimal. */
Test(udiff, dense_changes)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	char *m, *g;
	size_t del, ins, gdel, gins;

	rng_state = 42;
	for (int i = 0; i < 3000; i++) {
		buf_addf(&a, "%c\n", 'a' + rnd(4));
		buf_addf(&b, "%c\n", 'a' + rnd(4));
	}
	m = mine(a.ptr, a.len, b.ptr, b.len, 3);
	check_patch(m, a.ptr, a.len, b.ptr, b.len, &del, &ins);
	g = gnu_diff("-u -d", a.ptr, a.len, b.ptr, b.len);
	check_patch(g, a.ptr, a.len, b.ptr, b.len, &gdel, &gins);
	cr_assert_eq(del, gdel);
	cr_assert_eq(ins, gins);
	free(m);
	free(g);
	buf_release(&a);
	buf_release(&b);
}

/*
 * Edits over four distinct lines, 20,000 a side: the search exceeds its
 * cost cap and splits heuristically, as GNU diff does (the script is
 * then a little longer than minimal). It must still apply, and come out
 * as GNU's does.
 */
Test(udiff, expensive_inputs_fall_back)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	char *m, *g;
	size_t del, ins;

	rng_state = 7;
	for (int i = 0; i < 20000; i++) {
		buf_addf(&a, "%c\n", 'a' + rnd(4));
		buf_addf(&b, "%c\n", 'a' + rnd(4));
	}
	m = mine(a.ptr, a.len, b.ptr, b.len, 3);
	check_patch(m, a.ptr, a.len, b.ptr, b.len, &del, &ins);
	g = gnu_diff("-u", a.ptr, a.len, b.ptr, b.len);
	cr_assert(!strcmp(m, g), "differs from diff -u");
	free(g);
	/*
	 * A minimal script has 13930 changed lines (`diff -d` on these
	 * texts, measured once: it takes seconds); the cap cost a few.
	 */
	cr_assert_gt(del + ins, 13930);
	cr_assert_lt(del + ins, 13930 + 100);
	free(m);
	buf_release(&a);
	buf_release(&b);
}
