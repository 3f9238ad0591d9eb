/*
 * Semantic versions and ranges as Helm (`--version`) and Flux (`semver:`)
 * read them: the rules of Masterminds semver 3.4, see internal.h.
 *
 * A range is a list of and-groups separated by "||"; a version matches
 * when every term of some group matches it. A term is an operator and a
 * version that may have wildcards ("1.2.x", "1.*", "*") or missing parts
 * ("1.2", "1"); such a term is "dirty" and its operator reads the missing
 * parts as a range rather than as zeros (">1.2" is ">=1.3.0", "<=1.2" is
 * "<1.3.0", "1.2" is "~1.2"). A pre-release version is considered only
 * by a group with a term that names a pre-release itself; then every term
 * compares it by SemVer precedence.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "source/internal.h"

#include "util/banned.h" /* last */

enum op { OP_EQ, OP_NE, OP_GT, OP_LT, OP_GE, OP_LE, OP_TILDE, OP_CARET };

struct term {
	enum op op;
	struct src_semver v; /* wildcards and missing parts as 0 */
	bool dirty;	     /* a part is a wildcard or missing */
	bool minor_dirty;    /* the minor (and so the patch) is */
	bool patch_dirty;    /* only the patch is */
	bool major_any;	     /* the major is a wildcard: "*", "x.y" */
};

struct group {
	struct term *terms;
	size_t n;
	bool has_pre; /* a term names a pre-release */
};

struct src_semver_range {
	struct group *groups;
	size_t n;
};

/* ---- versions ----------------------------------------------------- */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_ident_char(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z') || c == '-';
}

/* Digits [s, e) as a number; false on overflow or when empty. Leading
 * zeros are accepted, as Masterminds' NewVersion coerces them. */
static bool parse_uint(const char *s, const char *e, uint64_t *out)
{
	uint64_t v = 0;

	if (s == e)
		return false;
	for (; s < e; s++) {
		if (!is_digit(*s) ||
		    v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

/*
 * Dot-separated identifiers [s, e) of [0-9A-Za-z-], none empty; for a
 * pre-release a numeric identifier has no leading zero. Copied into
 * out[64]; false when invalid or longer than 63 bytes.
 */
static bool parse_idents(const char *s, const char *e, bool pre, char *out)
{
	const char *id = s;

	if (s == e || (size_t)(e - s) > 63)
		return false;
	for (const char *p = s; p <= e; p++) {
		bool numeric = true;

		if (p < e && *p != '.') {
			if (!is_ident_char(*p))
				return false;
			continue;
		}
		if (p == id)
			return false;
		for (const char *q = id; q < p; q++)
			numeric = numeric && is_digit(*q);
		if (pre && numeric && p - id > 1 && *id == '0')
			return false;
		id = p + 1;
	}
	memcpy(out, s, (size_t)(e - s));
	out[e - s] = '\0';
	return true;
}

/*
 * The pre-release and build parts after the numbers: [p, e) is empty,
 * or "-PRE", "+BUILD", "-PRE+BUILD".
 */
static bool parse_tail(struct src_semver *v, const char *p, const char *e)
{
	const char *plus = memchr(p, '+', (size_t)(e - p));

	v->pre[0] = v->build[0] = '\0';
	if (plus) {
		if (!parse_idents(plus + 1, e, false, v->build))
			return false;
		e = plus;
	}
	if (p == e)
		return true;
	return *p == '-' && parse_idents(p + 1, e, true, v->pre);
}

/* One numeric part of a version, [p, ...) up to '.', '-', '+' or e. */
static const char *part_end(const char *p, const char *e)
{
	while (p < e && *p != '.' && *p != '-' && *p != '+')
		p++;
	return p;
}

static int version_parse(struct src_semver *v, const char *s, size_t len)
{
	const char *p = s, *e = s + len, *q;
	uint64_t *parts[3] = {&v->major, &v->minor, &v->patch};

	memset(v, 0, sizeof(*v));
	if (p < e && *p == 'v')
		p++;
	for (int i = 0; i < 3; i++) {
		if (i) {
			if (p == e || *p != '.')
				break;
			p++;
		}
		q = part_end(p, e);
		if (!parse_uint(p, q, parts[i]))
			return -1;
		p = q;
	}
	return parse_tail(v, p, e) ? 0 : -1;
}

int src_semver_parse(struct src_semver *v, const char *s, struct err *err)
{
	if (version_parse(v, s, strlen(s)) < 0)
		return err_set(err, ERR_PARSE,
			       "\"%s\" is not a semantic version", s);
	return 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

/* SemVer 2.0 precedence of two pre-release strings, both non-empty. */
static int cmp_pre(const char *a, const char *b)
{
	for (;;) {
		size_t la = strcspn(a, "."), lb = strcspn(b, ".");
		bool na = true, nb = true;
		int c;

		for (size_t i = 0; i < la; i++)
			na = na && is_digit(a[i]);
		for (size_t i = 0; i < lb; i++)
			nb = nb && is_digit(b[i]);
		if (na && nb) {
			/* No leading zeros: the longer number is larger. */
			if (la != lb)
				return la < lb ? -1 : 1;
			c = memcmp(a, b, la);
		} else if (na || nb) {
			return na ? -1 : 1; /* numbers sort first */
		} else {
			c = memcmp(a, b, la < lb ? la : lb);
			if (!c && la != lb)
				c = la < lb ? -1 : 1;
		}
		if (c)
			return c < 0 ? -1 : 1;
		a += la;
		b += lb;
		if (!*a || !*b)
			return *a ? 1 : *b ? -1 : 0; /* more fields: larger */
		a++;
		b++;
	}
}

int src_semver_cmp(const struct src_semver *a, const struct src_semver *b)
{
	int c;

	if ((c = cmp_u64(a->major, b->major)) ||
	    (c = cmp_u64(a->minor, b->minor)) ||
	    (c = cmp_u64(a->patch, b->patch)))
		return c;
	if (!a->pre[0] || !b->pre[0])
		return a->pre[0] ? -1 : b->pre[0] ? 1 : 0;
	return cmp_pre(a->pre, b->pre);
}

/* ---- ranges ------------------------------------------------------- */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
	       c == '\v';
}

static bool is_x(const char *p, const char *e)
{
	return e - p == 1 && (*p == 'x' || *p == 'X' || *p == '*');
}

/*
 * The version of a term, [s, e): like a version, but each number may be
 * a wildcard ("x", "X", "*") and the minor and patch may be missing.
 */
static bool term_version(struct term *t, const char *s, const char *e)
{
	const char *p = s, *q;
	uint64_t *parts[3] = {&t->v.major, &t->v.minor, &t->v.patch};
	int known = 0; /* parts given as numbers before the first wildcard */
	bool wild = false;

	memset(&t->v, 0, sizeof(t->v));
	if (p < e && *p == 'v')
		p++;
	for (int i = 0; i < 3; i++) {
		if (i) {
			if (p == e || *p != '.')
				break;
			p++;
		}
		q = part_end(p, e);
		if (is_x(p, q)) {
			wild = true;
		} else {
			uint64_t n;

			if (!parse_uint(p, q, &n))
				return false;
			/* After a wildcard, numbers mean nothing ("1.x.3"). */
			if (!wild) {
				*parts[i] = n;
				known++;
			}
		}
		p = q;
	}
	if (!parse_tail(&t->v, p, e))
		return false;
	t->major_any = known == 0;
	t->minor_dirty = known == 1;
	t->patch_dirty = known == 2;
	t->dirty = known < 3;
	return true;
}

/* Operators, longest first. */
static const struct {
	const char *text;
	enum op op;
} ops[] = {
	{"!=", OP_NE}, {">=", OP_GE},	 {"=>", OP_GE},	  {"<=", OP_LE},
	{"=<", OP_LE}, {"~>", OP_TILDE}, {">", OP_GT},	  {"<", OP_LT},
	{"=", OP_EQ},  {"~", OP_TILDE},	 {"^", OP_CARET},
};

static const char *skip_space(const char *p, const char *e)
{
	while (p < e && is_space(*p))
		p++;
	return p;
}

/* The characters a term's version may have. */
static const char *version_end(const char *p, const char *e)
{
	while (p < e &&
	       (is_ident_char(*p) || *p == '.' || *p == '+' || *p == '*'))
		p++;
	return p;
}

/*
 * One term at *pp: an optional operator, optional spaces, a version.
 * *has_op says whether an operator was given (a hyphen range takes bare
 * versions only).
 */
static bool parse_term(struct term *t, bool *has_op, const char **pp,
		       const char *e)
{
	const char *p = *pp, *v;

	t->op = OP_EQ;
	*has_op = false;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i].text);

		if ((size_t)(e - p) >= n && !memcmp(p, ops[i].text, n)) {
			t->op = ops[i].op;
			*has_op = true;
			p += n;
			break;
		}
	}
	p = skip_space(p, e);
	v = version_end(p, e);
	if (v == p || !term_version(t, p, v))
		return false;
	*pp = v;
	return true;
}

static int add_term(struct group *g, const struct term *t)
{
	struct term *n = realloc(g->terms, (g->n + 1) * sizeof(*n));

	if (!n)
		return ERR_NOMEM;
	g->terms = n;
	g->terms[g->n++] = *t;
	if (t->v.pre[0])
		g->has_pre = true;
	return 0;
}

static int bad_term(const char *expr, const char *s, const char *e,
		    struct err *err)
{
	return err_set(err, ERR_PARSE,
		       "version range \"%s\": \"%.*s\" is not a version "
		       "constraint",
		       expr, (int)(e - s), s);
}

/* The end of the term starting at p, for messages. */
static const char *term_end(const char *p, const char *e)
{
	while (p < e && !is_space(*p) && *p != ',')
		p++;
	return p;
}

/* One and-group, [s, e): terms separated by spaces or commas. */
static int parse_group(struct group *g, const char *expr, const char *s,
		       const char *e, struct err *err)
{
	const char *p = skip_space(s, e);

	if (p == e)
		return err_set(err, ERR_PARSE,
			       "version range \"%s\": an empty alternative",
			       expr);
	while (p < e) {
		const char *start = p, *q;
		struct term t, hi;
		bool has_op, hi_op, space;

		if (!parse_term(&t, &has_op, &p, e))
			return bad_term(expr, start, term_end(start, e), err);
		/* "A - B": ">= A, <= B". */
		q = skip_space(p, e);
		if (q > p && q + 1 < e && *q == '-' && is_space(q[1])) {
			const char *hs = skip_space(q + 1, e);

			q = hs;
			if (has_op || !parse_term(&hi, &hi_op, &q, e) || hi_op)
				return bad_term(expr, start, term_end(hs, e),
						err);
			t.op = OP_GE;
			hi.op = OP_LE;
			if (add_term(g, &t) < 0 || add_term(g, &hi) < 0)
				return err_set(err, ERR_NOMEM, "out of memory");
			p = q;
		} else if (add_term(g, &t) < 0) {
			return err_set(err, ERR_NOMEM, "out of memory");
		}
		q = skip_space(p, e);
		space = q > p;
		p = q;
		if (p == e)
			break;
		if (*p == ',') {
			p = skip_space(p + 1, e);
			if (p == e || *p == ',')
				return err_set(err, ERR_PARSE,
					       "version range \"%s\": a comma "
					       "without a term after it",
					       expr);
		} else if (!space) {
			return bad_term(expr, start, term_end(start, e), err);
		}
	}
	return 0;
}

int src_semver_range_parse(struct src_semver_range **out, const char *expr,
			   struct err *err)
{
	struct src_semver_range *r;
	const char *s = expr, *bar;
	int error = 0;

	*out = NULL;
	if (!(r = calloc(1, sizeof(*r))))
		return err_set(err, ERR_NOMEM, "out of memory");
	for (;;) {
		const char *e;
		struct group *g;

		bar = strstr(s, "||");
		e = bar ? bar : s + strlen(s);
		if (!(g = realloc(r->groups, (r->n + 1) * sizeof(*g)))) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			goto out;
		}
		r->groups = g;
		g = &r->groups[r->n++];
		memset(g, 0, sizeof(*g));
		if ((error = parse_group(g, expr, s, e, err)) < 0)
			goto out;
		if (!bar)
			break;
		s = bar + 2;
	}
	*out = r;
out:
	if (error)
		src_semver_range_free(r);
	return error;
}

void src_semver_range_free(struct src_semver_range *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->groups[i].terms);
	free(r->groups);
	free(r);
}

/* "~": the same major (and minor, unless it is dirty), not below. */
static bool match_tilde(const struct term *t, const struct src_semver *v)
{
	if (src_semver_cmp(v, &t->v) < 0)
		return false;
	/* "~0.0.0" takes everything, as Masterminds reads it. */
	if (!t->v.major && !t->v.minor && !t->v.patch && !t->dirty)
		return true;
	if (v->major != t->v.major)
		return false;
	return t->minor_dirty || v->minor == t->v.minor;
}

/* "^": nothing left of the first non-zero part may change. */
static bool match_caret(const struct term *t, const struct src_semver *v)
{
	if (src_semver_cmp(v, &t->v) < 0)
		return false;
	if (t->v.major > 0 || t->minor_dirty)
		return v->major == t->v.major;
	if (v->major > 0)
		return false;
	if (t->v.minor > 0 || t->patch_dirty)
		return v->minor == t->v.minor;
	if (v->minor > 0)
		return false;
	return v->patch == t->v.patch;
}

/* "!=" with a dirty version: not inside the range it names. */
static bool match_ne_dirty(const struct term *t, const struct src_semver *v)
{
	if (v->major != t->v.major)
		return true;
	if (t->minor_dirty)
		return false;
	if (v->minor != t->v.minor)
		return true;
	/* patch_dirty: "!=1.2.x" excludes 1.2.*, and "!=1.2.x-rc" excludes
	 * only that pre-release of them. */
	if (v->pre[0] && t->v.pre[0])
		return cmp_pre(v->pre, t->v.pre) != 0;
	return v->pre[0] || t->v.pre[0];
}

static bool term_match(const struct term *t, const struct src_semver *v)
{
	int c;

	c = src_semver_cmp(v, &t->v);
	/* A wildcard major ("*", "x.y"): every version, compared with
	 * 0.0.0 by "<" and ">", none by "!=". */
	if (t->major_any)
		return t->op == OP_LT	? c < 0
		       : t->op == OP_GT ? c > 0
					: t->op != OP_NE;
	switch (t->op) {
	case OP_EQ:
		return t->dirty ? match_tilde(t, v) : c == 0;
	case OP_NE:
		return t->dirty ? match_ne_dirty(t, v) : c != 0;
	case OP_GT:
		if (!t->dirty)
			return c > 0;
		if (v->major != t->v.major)
			return v->major > t->v.major;
		return t->patch_dirty && v->minor > t->v.minor;
	case OP_LT:
		return c < 0;
	case OP_GE:
		return c >= 0;
	case OP_LE:
		if (!t->dirty)
			return c <= 0;
		if (v->major != t->v.major)
			return v->major < t->v.major;
		return t->minor_dirty || v->minor <= t->v.minor;
	case OP_TILDE:
		return match_tilde(t, v);
	case OP_CARET:
		return match_caret(t, v);
	}
	return false;
}

bool src_semver_range_match(const struct src_semver_range *r,
			    const struct src_semver *v)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct group *g = &r->groups[i];
		bool ok = !v->pre[0] || g->has_pre;

		for (size_t j = 0; ok && j < g->n; j++)
			ok = term_match(&g->terms[j], v);
		if (ok)
			return true;
	}
	return false;
}

long src_semver_newest(const struct src_semver_range *r,
		       const char *const *versions, size_t n)
{
	struct src_semver best, v;
	long found = -1;

	for (size_t i = 0; i < n; i++) {
		if (!versions[i] ||
		    version_parse(&v, versions[i], strlen(versions[i])) < 0 ||
		    !src_semver_range_match(r, &v))
			continue;
		/* Of equal versions ("1.0.0", "v1.0.0"), the first. */
		if (found < 0 || src_semver_cmp(&v, &best) > 0) {
			best = v;
			found = (long)i;
		}
	}
	return found;
}
