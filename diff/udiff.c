/*
 * Unified diff of two texts, in the exact format of GNU `diff -u`.
 *
 * The pipeline follows the one GNU diff uses, so that both pick the same
 * edit script where several minimal ones exist (a reviewer comparing
 * `syncd diff` with `diff -u` should see the same hunks):
 *
 *  1. split both texts into lines (a line keeps its '\n'; a last line
 *     without one therefore never equals a line with one);
 *  2. skip the common prefix and suffix, except for `context` lines of
 *     each next to the middle (GNU's "horizon");
 *  3. give every line an equivalence class (hash, then bytes on a hash
 *     match), so the search compares integers;
 *  4. set aside lines of the middle whose class does not occur in the
 *     other text's middle: they are changes in every script, and leaving
 *     them out keeps the search fast when many lines are new. (GNU also
 *     sets aside some lines that do match, which can cost it a match;
 *     this does not, so the script stays minimal.);
 *  5. Myers' O(ND) search with the linear-space divide and conquer
 *     ("middle snake") refinement, on what is left. When one search
 *     exceeds a cost cap it splits at the furthest-reaching diagonal
 *     instead, trading minimality for bounded time on huge inputs, as
 *     GNU diff does;
 *  6. slide each run of changed lines as far down as it can go (merging
 *     with neighbouring runs), then back up to line up with a change in
 *     the other text when there is one;
 *  7. group changes into hunks with `context` lines around them; changes
 *     at most 2 * context unchanged lines apart share a hunk.
 *
 * Memory is linear in the number of lines.
 */
#include "diff/diff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/fnv.h"
#include "util/banned.h" /* last */

/* One text, split into lines. */
struct text {
	const char *ptr;
	ptrdiff_t n;	 /* number of lines */
	size_t *start;	 /* n + 1 offsets: line i is [start[i], start[i+1]) */
	size_t *cls;	 /* equivalence class of each line in the middle */
	char *changed;	 /* n flags, with changed[-1] == changed[n] == 0 */
	size_t *seq;	 /* classes of the lines the search looks at */
	ptrdiff_t *real; /* seq index -> line number */
	ptrdiff_t nseq;
};

/* A change: `del` lines of A from a0 replaced by `ins` lines of B from b0. */
struct change {
	ptrdiff_t a0, del, b0, ins;
};

/* State of the Myers search. */
struct lcs {
	const size_t *xv, *yv;
	ptrdiff_t *fd, *bd; /* furthest x per diagonal, forward and back */
	ptrdiff_t cost_cap;
};

/* Where diag() splits a range, and whether each half must be minimal. */
struct split {
	ptrdiff_t xmid, ymid;
	bool lo_minimal, hi_minimal;
};

struct range {
	ptrdiff_t xoff, xlim, yoff, ylim;
	bool minimal;
};

#define FWD_NONE ((ptrdiff_t)-1)
#define BWD_NONE PTRDIFF_MAX

static const char *line_ptr(const struct text *t, ptrdiff_t i)
{
	return t->ptr + t->start[i];
}

static size_t line_len(const struct text *t, ptrdiff_t i)
{
	return t->start[i + 1] - t->start[i];
}

static bool lines_equal(const struct text *a, ptrdiff_t i, const struct text *b,
			ptrdiff_t j)
{
	size_t len = line_len(a, i);

	return len == line_len(b, j) &&
	       !memcmp(line_ptr(a, i), line_ptr(b, j), len);
}

static void text_release(struct text *t)
{
	free(t->start);
	free(t->cls);
	free(t->changed ? t->changed - 1 : NULL);
	free(t->seq);
	free(t->real);
}

static int text_split(struct text *t, const char *ptr, size_t len)
{
	size_t n = 0, off;
	const char *nl;

	memset(t, 0, sizeof(*t));
	t->ptr = ptr;
	for (off = 0; off < len; off = (size_t)(nl - ptr) + 1, n++)
		if (!(nl = memchr(ptr + off, '\n', len - off)))
			nl = ptr + len - 1; /* last line, no newline */
	if (n > (size_t)PTRDIFF_MAX / 2 - 2)
		return ERR_LIMIT;
	t->n = (ptrdiff_t)n;
	t->start = malloc((n + 1) * sizeof(*t->start));
	t->cls = calloc(n + 1, sizeof(*t->cls));
	/* changed[-1] and changed[n] stay 0: sentinels for shift_runs(). */
	if ((t->changed = calloc(n + 2, 1)))
		t->changed++;
	t->seq = malloc((n + 1) * sizeof(*t->seq));
	t->real = malloc((n + 1) * sizeof(*t->real));
	if (!t->start || !t->cls || !t->changed || !t->seq || !t->real)
		return ERR_NOMEM;
	for (off = 0, n = 0; off < len; off = (size_t)(nl - ptr) + 1, n++) {
		t->start[n] = off;
		if (!(nl = memchr(ptr + off, '\n', len - off)))
			nl = ptr + len - 1;
	}
	t->start[n] = len;
	return 0;
}

static uint64_t hash_line(const char *p, size_t len)
{
	return fnv1a(FNV1A_BASIS, p, len);
}

/*
 * Give every line in [lo, hi) of each text (the middle: the part between
 * the common prefix and suffix, plus the horizon) a class: equal lines,
 * and only those, share one. Nothing outside needs one. Queue for the
 * search the lines whose class also occurs in the other text's middle;
 * mark the others changed right away.
 */
static int classify(struct text *t[2], const ptrdiff_t lo[2],
		    const ptrdiff_t hi[2])
{
	size_t total = (size_t)(hi[0] - lo[0]) + (size_t)(hi[1] - lo[1]);
	size_t nslots = 16;
	size_t *slots = NULL, *count[2] = {NULL, NULL};
	uint64_t *hashes = NULL;
	/* For each class, one line that has it (text f, line i). */
	ptrdiff_t *rep_line = NULL;
	unsigned char *rep_text = NULL;
	size_t nclass = 0, f;
	int error = 0;

	while (nslots < 2 * total)
		nslots *= 2;
	slots = calloc(nslots, sizeof(*slots));
	hashes = malloc((total + 1) * sizeof(*hashes));
	rep_line = malloc((total + 1) * sizeof(*rep_line));
	rep_text = malloc(total + 1);
	count[0] = calloc(total + 1, sizeof(*count[0]));
	count[1] = calloc(total + 1, sizeof(*count[1]));
	if (!slots || !hashes || !rep_line || !rep_text || !count[0] ||
	    !count[1]) {
		error = ERR_NOMEM;
		goto out;
	}

	for (f = 0; f < 2; f++) {
		for (ptrdiff_t i = lo[f]; i < hi[f]; i++) {
			uint64_t h =
				hash_line(line_ptr(t[f], i), line_len(t[f], i));
			size_t s = (size_t)h & (nslots - 1), c;

			/* Slots hold class + 1; 0 is empty. */
			while ((c = slots[s])) {
				c--;
				if (hashes[c] == h &&
				    lines_equal(t[rep_text[c]], rep_line[c],
						t[f], i))
					break;
				s = (s + 1) & (nslots - 1);
			}
			if (!slots[s]) {
				c = nclass++;
				slots[s] = c + 1;
				hashes[c] = h;
				rep_text[c] = (unsigned char)f;
				rep_line[c] = i;
			}
			t[f]->cls[i] = c;
			count[f][c]++;
		}
	}

	for (f = 0; f < 2; f++) {
		const size_t *other = count[1 - f];

		t[f]->nseq = 0;
		for (ptrdiff_t i = lo[f]; i < hi[f]; i++) {
			if (!other[t[f]->cls[i]]) {
				t[f]->changed[i] = 1;
				continue;
			}
			t[f]->seq[t[f]->nseq] = t[f]->cls[i];
			t[f]->real[t[f]->nseq++] = i;
		}
	}
out:
	free(slots);
	free(hashes);
	free(rep_line);
	free(rep_text);
	free(count[0]);
	free(count[1]);
	return error;
}

/*
 * Find where a shortest edit script for xv[xoff..xlim) -> yv[yoff..ylim)
 * crosses the middle (Myers 1986, section 4b): search forward from the top
 * left and backward from the bottom right, one edit at a time, until the
 * furthest-reaching paths of the two meet on a diagonal. Both ranges are
 * non-empty and their first and last elements differ (the caller strips
 * common ends). Diagonal k holds points with x - y == k; fd[k] and bd[k]
 * are the furthest x reached on it forward and backward; FWD_NONE and
 * BWD_NONE mark a diagonal not reachable with that many edits inside the
 * box.
 *
 * Unless `minimal`, give up once the search costs more than cost_cap edits
 * each way and split at whichever of the two frontiers got furthest.
 */
static void diag(const struct lcs *c, ptrdiff_t xoff, ptrdiff_t xlim,
		 ptrdiff_t yoff, ptrdiff_t ylim, bool minimal,
		 struct split *part)
{
	const size_t *xv = c->xv, *yv = c->yv;
	ptrdiff_t *fd = c->fd, *bd = c->bd;
	const ptrdiff_t dmin = xoff - ylim, dmax = xlim - yoff;
	const ptrdiff_t fmid = xoff - yoff, bmid = xlim - ylim;
	const bool odd = (fmid - bmid) & 1;
	ptrdiff_t fmin = fmid, fmax = fmid, bmin = bmid, bmax = bmid;
	ptrdiff_t cost, d, x, y;

	fd[fmid] = xoff;
	bd[bmid] = xlim;
	for (cost = 1;; cost++) {
		/*
		 * Forward: one more edit reaches one more diagonal on each
		 * side, unless that side is at the edge of the box, where
		 * the frontier steps back to keep the parity.
		 */
		if (fmin > dmin)
			fd[--fmin - 1] = FWD_NONE;
		else
			fmin++;
		if (fmax < dmax)
			fd[++fmax + 1] = FWD_NONE;
		else
			fmax--;
		for (d = fmax; d >= fmin; d -= 2) {
			ptrdiff_t lo = fd[d - 1], hi = fd[d + 1];

			/* Delete from diagonal d-1, or insert from d+1. */
			x = FWD_NONE;
			if (lo != FWD_NONE && lo < xlim)
				x = lo + 1;
			if (hi != FWD_NONE && hi - d <= ylim && hi > x)
				x = hi;
			if (x == FWD_NONE) {
				fd[d] = FWD_NONE;
				continue;
			}
			for (y = x - d; x < xlim && y < ylim && xv[x] == yv[y];
			     x++, y++)
				;
			fd[d] = x;
			if (odd && bmin <= d && d <= bmax && bd[d] <= x) {
				part->xmid = x;
				part->ymid = y;
				part->lo_minimal = part->hi_minimal = true;
				return;
			}
		}

		/* Backward, the mirror image. */
		if (bmin > dmin)
			bd[--bmin - 1] = BWD_NONE;
		else
			bmin++;
		if (bmax < dmax)
			bd[++bmax + 1] = BWD_NONE;
		else
			bmax--;
		for (d = bmax; d >= bmin; d -= 2) {
			ptrdiff_t lo = bd[d - 1], hi = bd[d + 1];

			/* Back over an insertion or a deletion. */
			x = BWD_NONE;
			if (lo != BWD_NONE && lo - d >= yoff)
				x = lo;
			if (hi != BWD_NONE && hi - 1 >= xoff && hi - 1 < x)
				x = hi - 1;
			if (x == BWD_NONE) {
				bd[d] = BWD_NONE;
				continue;
			}
			for (y = x - d;
			     x > xoff && y > yoff && xv[x - 1] == yv[y - 1];
			     x--, y--)
				;
			bd[d] = x;
			if (!odd && fmin <= d && d <= fmax && x <= fd[d]) {
				part->xmid = x;
				part->ymid = y;
				part->lo_minimal = part->hi_minimal = true;
				return;
			}
		}

		if (minimal || cost < c->cost_cap)
			continue;

		/*
		 * Too expensive: split at the forward point with the largest
		 * x + y or the backward point with the smallest, whichever
		 * got further from its corner. The half that point was
		 * reached through is cheap, so it is searched minimally.
		 */
		ptrdiff_t fxy = -1, fx = 0, bxy = PTRDIFF_MAX, bx = 0;

		for (d = fmax; d >= fmin; d -= 2)
			if (fd[d] != FWD_NONE && 2 * fd[d] - d > fxy) {
				fxy = 2 * fd[d] - d;
				fx = fd[d];
			}
		for (d = bmax; d >= bmin; d -= 2)
			if (bd[d] != BWD_NONE && 2 * bd[d] - d < bxy) {
				bxy = 2 * bd[d] - d;
				bx = bd[d];
			}
		if ((xlim + ylim) - bxy < fxy - (xoff + yoff)) {
			part->xmid = fx;
			part->ymid = fxy - fx;
			part->lo_minimal = true;
			part->hi_minimal = false;
		} else {
			part->xmid = bx;
			part->ymid = bxy - bx;
			part->lo_minimal = false;
			part->hi_minimal = true;
		}
		return;
	}
}

/*
 * Mark the lines of a and b that are not in the common subsequence the
 * search finds. Ranges are processed from an explicit stack, so deep
 * splits cannot exhaust the C stack.
 */
static int compare(struct text *a, struct text *b)
{
	ptrdiff_t nx = a->nseq, ny = b->nseq, diags, i;
	ptrdiff_t *vec = NULL;
	struct range *stack = NULL;
	size_t depth = 0, alloc = 0;
	struct lcs c;
	int error = 0;

	if ((size_t)nx + (size_t)ny + 3 > SIZE_MAX / (2 * sizeof(*vec)))
		return ERR_NOMEM;
	vec = malloc(2 * (size_t)(nx + ny + 3) * sizeof(*vec));
	if (!vec)
		return ERR_NOMEM;
	c.xv = a->seq;
	c.yv = b->seq;
	c.fd = vec + ny + 1;
	c.bd = vec + (nx + ny + 3) + ny + 1;
	/* About the square root of the input size, at least 4096. */
	c.cost_cap = 1;
	for (diags = nx + ny + 3; diags; diags >>= 2)
		c.cost_cap <<= 1;
	if (c.cost_cap < 4096)
		c.cost_cap = 4096;

	struct range r = {0, nx, 0, ny, false};

	for (;;) {
		while (r.xoff < r.xlim && r.yoff < r.ylim &&
		       c.xv[r.xoff] == c.yv[r.yoff])
			r.xoff++, r.yoff++;
		while (r.xoff < r.xlim && r.yoff < r.ylim &&
		       c.xv[r.xlim - 1] == c.yv[r.ylim - 1])
			r.xlim--, r.ylim--;
		if (r.xoff == r.xlim || r.yoff == r.ylim) {
			for (i = r.xoff; i < r.xlim; i++)
				a->changed[a->real[i]] = 1;
			for (i = r.yoff; i < r.ylim; i++)
				b->changed[b->real[i]] = 1;
			if (!depth)
				break;
			r = stack[--depth];
			continue;
		}

		struct split part;

		diag(&c, r.xoff, r.xlim, r.yoff, r.ylim, r.minimal, &part);
		if (depth == alloc) {
			size_t n = alloc ? 2 * alloc : 64;
			struct range *p = realloc(stack, n * sizeof(*p));

			if (!p) {
				error = ERR_NOMEM;
				goto out;
			}
			stack = p;
			alloc = n;
		}
		stack[depth++] = (struct range){part.xmid, r.xlim, part.ymid,
						r.ylim, part.hi_minimal};
		r = (struct range){r.xoff, part.xmid, r.yoff, part.ymid,
				   part.lo_minimal};
	}
out:
	free(stack);
	free(vec);
	return error;
}

/*
 * Slide runs of changed lines in t so that equivalent scripts come out
 * one way: each run moves up while the line before it equals its last
 * line (joining a run above it), then down while its first line equals
 * the line after it (joining runs below), so an ambiguous run ends up as
 * low as possible; finally, when some position it passed lines up with a
 * run of changes in `o` (the other text), it moves back up to the lowest
 * such position, so a replacement reads as one change.
 *
 * Only lines in [lo, hi) move (GNU's range, see diff_unified()). j
 * tracks the line of o paired with the first unchanged line after the
 * run: unchanged lines pair up in order.
 */
static void shift_runs(struct text *t, const struct text *o, ptrdiff_t lo,
		       ptrdiff_t hi)
{
	char *changed = t->changed;
	const char *ochanged = o->changed;
	const size_t *cls = t->cls;
	ptrdiff_t n = hi, i = lo, j = lo;

	for (;;) {
		ptrdiff_t start, len, aligned;

		/* Skip unchanged lines and their partners in o. */
		while (i < n && !changed[i]) {
			while (ochanged[j])
				j++;
			j++, i++;
		}
		if (i == n)
			break;
		start = i;
		while (changed[i])
			i++;
		while (ochanged[j])
			j++;

		do {
			len = i - start;
			while (start > lo && cls[start - 1] == cls[i - 1]) {
				changed[--start] = 1;
				changed[--i] = 0;
				while (changed[start - 1])
					start--;
				/* To the partner of the line freed. */
				while (ochanged[--j])
					;
			}
			/* n means "not lined up with a change in o". */
			aligned = ochanged[j - 1] ? i : n;
			while (i < n && cls[start] == cls[i]) {
				changed[start++] = 0;
				changed[i++] = 1;
				while (changed[i])
					i++;
				while (ochanged[++j])
					aligned = i;
			}
		} while (len != i - start);

		while (aligned < i) {
			changed[--start] = 1;
			changed[--i] = 0;
			while (ochanged[--j])
				;
		}
	}
}

/* Collect the changes from the flags of both texts. */
static int collect(const struct text *a, const struct text *b,
		   struct change **out, size_t *count)
{
	struct change *v = NULL;
	size_t n = 0, alloc = 0;
	ptrdiff_t i = 0, j = 0;

	while (i < a->n || j < b->n) {
		if (!a->changed[i] && !b->changed[j]) {
			i++, j++;
			continue;
		}
		if (n == alloc) {
			size_t na = alloc ? 2 * alloc : 16;
			struct change *p = realloc(v, na * sizeof(*p));

			if (!p) {
				free(v);
				return ERR_NOMEM;
			}
			v = p;
			alloc = na;
		}
		v[n].a0 = i;
		v[n].b0 = j;
		while (a->changed[i])
			i++;
		while (b->changed[j])
			j++;
		v[n].del = i - v[n].a0;
		v[n].ins = j - v[n].b0;
		n++;
	}
	*out = v;
	*count = n;
	return 0;
}

/* GNU's range format: "l,n"; "l" when n == 1; "l-1,0" when empty. */
static int add_range(struct buf *out, ptrdiff_t first, ptrdiff_t len)
{
	if (len == 1)
		return buf_addf(out, "%td", first + 1);
	return buf_addf(out, "%td,%td", len ? first + 1 : first, len);
}

static int add_line(struct buf *out, char mark, const struct text *t,
		    ptrdiff_t i)
{
	size_t len = line_len(t, i);
	const char *p = line_ptr(t, i);
	int error;

	if ((error = buf_addch(out, mark)) < 0 ||
	    (error = buf_add(out, p, len)) < 0)
		return error;
	if (len && p[len - 1] == '\n')
		return 0;
	return buf_adds(out, "\n\\ No newline at end of file\n");
}

/* Print the hunk made of changes v[0..n). */
static int add_hunk(struct buf *out, const struct text *a, const struct text *b,
		    const struct change *v, size_t n, ptrdiff_t ctx)
{
	const struct change *last = &v[n - 1];
	ptrdiff_t a0 = v[0].a0 - ctx, b0 = v[0].b0 - ctx;
	ptrdiff_t a1 = last->a0 + last->del + ctx;
	ptrdiff_t b1 = last->b0 + last->ins + ctx;
	ptrdiff_t i, j;
	size_t k;
	int error;

	a0 = a0 < 0 ? 0 : a0;
	b0 = b0 < 0 ? 0 : b0;
	a1 = a1 > a->n ? a->n : a1;
	b1 = b1 > b->n ? b->n : b1;
	if ((error = buf_adds(out, "@@ -")) < 0 ||
	    (error = add_range(out, a0, a1 - a0)) < 0 ||
	    (error = buf_adds(out, " +")) < 0 ||
	    (error = add_range(out, b0, b1 - b0)) < 0 ||
	    (error = buf_adds(out, " @@\n")) < 0)
		return error;

	i = a0;
	j = b0;
	for (k = 0; k < n; k++) {
		for (; i < v[k].a0; i++, j++)
			if ((error = add_line(out, ' ', a, i)) < 0)
				return error;
		for (; i < v[k].a0 + v[k].del; i++)
			if ((error = add_line(out, '-', a, i)) < 0)
				return error;
		for (; j < v[k].b0 + v[k].ins; j++)
			if ((error = add_line(out, '+', b, j)) < 0)
				return error;
	}
	for (; i < a1; i++)
		if ((error = add_line(out, ' ', a, i)) < 0)
			return error;
	return 0;
}

int diff_unified(const char *a, size_t a_len, const char *b, size_t b_len,
		 const char *a_label, const char *b_label, unsigned context,
		 struct buf *out)
{
	struct text ta, tb, *t[2] = {&ta, &tb};
	struct change *changes = NULL;
	size_t nchanges = 0, k, first, start = out->len;
	ptrdiff_t lo[2], hi[2], ctx;
	int error = 0;

	if (a_len == b_len && (!a_len || !memcmp(a, b, a_len)))
		return 0;
	memset(&ta, 0, sizeof(ta));
	memset(&tb, 0, sizeof(tb));
	if ((error = text_split(&ta, a, a_len)) < 0 ||
	    (error = text_split(&tb, b, b_len)) < 0)
		goto out;

	/* The common prefix and suffix (they may not overlap). */
	lo[0] = lo[1] = 0;
	while (lo[0] < ta.n && lo[1] < tb.n &&
	       lines_equal(&ta, lo[0], &tb, lo[1]))
		lo[0]++, lo[1]++;
	hi[0] = ta.n;
	hi[1] = tb.n;
	while (hi[0] > lo[0] && hi[1] > lo[1] &&
	       lines_equal(&ta, hi[0] - 1, &tb, hi[1] - 1))
		hi[0]--, hi[1]--;

	/* Clamp so that 2 * ctx + 1 cannot overflow. */
	ctx = (size_t)context > (size_t)(ta.n + tb.n) ? ta.n + tb.n
						      : (ptrdiff_t)context;
	/*
	 * Like GNU diff, keep `context` lines of the common prefix and
	 * suffix in the part that is searched and whose classes are counted
	 * (its "horizon"): they decide which lines match nothing, how far
	 * runs slide, and so which of several minimal scripts comes out.
	 * The prefix and suffix are as long in both texts, so lo[0] == lo[1]
	 * and both hi[] are as far from the end.
	 */
	for (int f = 0; f < 2; f++) {
		lo[f] -= lo[f] < ctx ? lo[f] : ctx;
		hi[f] += t[f]->n - hi[f] < ctx ? t[f]->n - hi[f] : ctx;
	}
	if ((error = classify(t, lo, hi)) < 0 ||
	    (error = compare(&ta, &tb)) < 0)
		goto out;
	shift_runs(&ta, &tb, lo[0], hi[0]);
	shift_runs(&tb, &ta, lo[1], hi[1]);
	if ((error = collect(&ta, &tb, &changes, &nchanges)) < 0)
		goto out;
	if (!nchanges)
		goto out;

	if ((error = buf_addf(out, "--- %s\n+++ %s\n", a_label, b_label)) < 0)
		goto out;
	/* Changes at most 2 * ctx unchanged lines apart share a hunk. */
	for (first = 0, k = 1; k <= nchanges; k++) {
		const struct change *prev = &changes[k - 1];

		if (k < nchanges &&
		    changes[k].a0 - (prev->a0 + prev->del) <= 2 * ctx)
			continue;
		if ((error = add_hunk(out, &ta, &tb, changes + first, k - first,
				      ctx)) < 0)
			goto out;
		first = k;
	}
out:
	if (error < 0)
		buf_truncate(out, start);
	free(changes);
	text_release(&ta);
	text_release(&tb);
	return error;
}
