/*
 * Field sets: the tries of owned paths of metadata.managedFields (fieldsV1),
 * as structured-merge-diff keeps them (see diff.h, "Field sets").
 *
 * Storage. A set is a handle plus one contiguous arena holding every node
 * and every element text. Nodes refer to their children by 32-bit offsets
 * into the arena, so the arena can move when it grows. Parse and the set
 * algebra build in a scratch arena on the stack and end with one malloc()
 * holding the handle and the arena, sized to fit: a parsed set is one
 * allocation however many paths it holds. Inserting into such a set moves
 * its arena to the heap, which then grows by doubling. The root node sits
 * at offset 0; an empty set has no arena at all. A node is 16 bytes: the
 * offset of its NUL-terminated element text, the text length, type and
 * member bit, and the offset and length of its child array.
 *
 * Order. A child array is sorted the way structured-merge-diff sorts path
 * elements (PathElement.Compare), which is the order the API server writes
 * fieldsV1 in: by type (f: < k: < v: < i:), f: names bytewise, i: indexes
 * by value, and k:/v: by typed value: numbers by value, then strings
 * (bytewise, unescaped), booleans, lists, maps (key by key), null; a k:
 * compares its sorted key fields pairwise. Ports 80 and 443 therefore come
 * as 80, 443 and i:9 before i:10, as on a real server, which is what makes
 * parse -> to_json reproduce real managedFields byte for byte. Texts that
 * are equal in that order but not byte for byte (only possible for
 * non-canonical texts) are ordered bytewise, so equality is text equality.
 *
 * Canonical text. f: is the name as is; i: the decimal index without
 * leading zeros; k: and v: compact JSON as diff_json_dump() writes it (so
 * texts built from objects by encoding them compare equal to parsed ones):
 * object keys sorted bytewise, strings escaped as Go's encoding/json does
 * (\" \\ \b \f \n \r \t, \u00XX for other controls and < > &, \u2028,
 * \u2029, \ufffd for invalid UTF-8), integers that fit an int64 as written,
 * other numbers in Go's shortest float form ("1.5", "1e+21", "1e-7").
 * Parsing canonicalizes with a small JSON reader of its own writing
 * straight into the arena (no jansson round trip per element).
 *
 * Invariant: every node is a member or has a member below it (a failed
 * insert unlinks what it added). Readers do not rely on it, though: a
 * non-member leaf would read as absent everywhere.
 *
 * No global state: sets may be used from several threads as long as one
 * set is not modified while another thread reads it.
 */
#include "diff/diff.h"

#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h" /* last */

/* Path elements per path, and nesting of the JSON inside one element. */
#define MAX_DEPTH 256

#define ARENA_FIRST 512u
#define SCRATCH	    4096 /* bytes of stack to build a set in */
#define ARENA_MAX   0x7fffffffu
#define TEXT_MAX    0x0fffffffu

/* Significant digits a number carries into strtod() when canonicalized. */
#define NUM_DIGITS_MAX 800
/* Digits compared exactly (canonical numbers have at most 19). */
#define CMP_DIGITS 40

#define META_LEN	0x0fffffffu
#define META_TYPE_SHIFT 28
#define META_MEMBER	(1u << 30)
#define META_POW2	(1u << 31) /* child array capacity is a power of two */

struct node {
	uint32_t text;	/* arena offset of the NUL-terminated text */
	uint32_t meta;	/* text length | type << 28 | META_MEMBER | META_POW2 */
	uint32_t kids;	/* arena offset of the child array */
	uint32_t nkids; /* children, sorted */
};

struct diff_fieldset {
	char *mem; /* the arena; NULL for an empty set */
	uint32_t used;
	uint32_t alloc;
	size_t members;
	bool borrowed; /* mem is not ours to free (stack, or behind us) */
	/*
	 * Insert's cursor: the offsets of the nodes of the path inserted
	 * last (cursor[i] is the node of element i), valid while nothing but
	 * diff_fieldset_insert() changes the set. Callers insert in walk
	 * order, so the next path mostly shares all but its last element.
	 */
	uint32_t *cursor;
	uint32_t ncursor, acursor;
};

static inline unsigned node_type(const struct node *n)
{
	return (n->meta >> META_TYPE_SHIFT) & 3;
}

static inline uint32_t node_len(const struct node *n)
{
	return n->meta & META_LEN;
}

static inline bool node_member(const struct node *n)
{
	return (n->meta & META_MEMBER) != 0;
}

static inline struct node *node_at(const struct diff_fieldset *s, uint32_t off)
{
	return (struct node *)(void *)(s->mem + off);
}

static inline const char *node_text(const struct diff_fieldset *s,
				    const struct node *n)
{
	return s->mem + n->text;
}

static inline struct node *node_kids(const struct diff_fieldset *s,
				     const struct node *n)
{
	return node_at(s, n->kids);
}

static inline uint32_t kid_off(const struct node *n, size_t i)
{
	return n->kids + (uint32_t)(i * sizeof(struct node));
}

/* --- arena --- */

static int arena_grow_slow(struct diff_fieldset *s, size_t extra)
{
	size_t want = (size_t)s->used + extra, alloc;
	char *p;

	if (extra > ARENA_MAX || want > ARENA_MAX)
		return ERR_LIMIT;
	alloc = s->alloc ? s->alloc : ARENA_FIRST;
	while (alloc < want)
		alloc *= 2;
	if (alloc > ARENA_MAX)
		alloc = ARENA_MAX;
	if (s->borrowed) {
		if (!(p = malloc(alloc)))
			return ERR_NOMEM;
		memcpy(p, s->mem, s->used);
		s->borrowed = false;
	} else if (!(p = realloc(s->mem, alloc))) {
		return ERR_NOMEM;
	}
	s->mem = p;
	s->alloc = (uint32_t)alloc;
	return 0;
}

static inline int arena_grow(struct diff_fieldset *s, size_t extra)
{
	if (extra <= (size_t)(s->alloc - s->used))
		return 0;
	return arena_grow_slow(s, extra);
}

static int arena_put(struct diff_fieldset *s, const void *data, size_t len)
{
	int error;

	if ((error = arena_grow(s, len)) < 0)
		return error;
	if (len)
		memcpy(s->mem + s->used, data, len);
	s->used += (uint32_t)len;
	return 0;
}

static int arena_putc(struct diff_fieldset *s, char c)
{
	return arena_put(s, &c, 1);
}

/* Room for n nodes (aligned); *off gets their offset. */
static int arena_nodes(struct diff_fieldset *s, size_t n, uint32_t *off)
{
	size_t pad = (4 - (s->used & 3)) & 3;
	int error;

	if (n > ARENA_MAX / sizeof(struct node))
		return ERR_LIMIT;
	if ((error = arena_grow(s, pad + n * sizeof(struct node))) < 0)
		return error;
	s->used += (uint32_t)pad;
	*off = s->used;
	s->used += (uint32_t)(n * sizeof(struct node));
	return 0;
}

/* Copy a text and its NUL; *off gets its offset. */
static int arena_text(struct diff_fieldset *s, const char *text, size_t len,
		      uint32_t *off)
{
	int error;

	if (len > TEXT_MAX)
		return ERR_LIMIT;
	if ((error = arena_grow(s, len + 1)) < 0)
		return error;
	memcpy(s->mem + s->used, text, len);
	s->mem[s->used + len] = '\0';
	*off = s->used;
	s->used += (uint32_t)(len + 1);
	return 0;
}

/* Give the set its arena and a blank root at offset 0. */
static int arena_root(struct diff_fieldset *s)
{
	uint32_t off;
	int error;

	if (s->used)
		return 0;
	if ((error = arena_nodes(s, 1, &off)) < 0)
		return error;
	memset(node_at(s, off), 0, sizeof(struct node));
	return 0;
}

/* Storage on the stack to build a set in; release with scratch_release(). */
static void scratch_init(struct diff_fieldset *s, char *mem, size_t size)
{
	s->mem = mem;
	s->used = 0;
	s->alloc = (uint32_t)size;
	s->members = 0;
	s->borrowed = true;
	s->cursor = NULL;
	s->ncursor = s->acursor = 0;
}

static void scratch_release(struct diff_fieldset *s)
{
	if (!s->borrowed)
		free(s->mem);
}

/*
 * The set built in `tmp` (root written at offset 0) as one allocation: the
 * handle with the arena right behind it. NULL when out of memory.
 */
static struct diff_fieldset *scratch_finish(const struct diff_fieldset *tmp)
{
	const struct node *root = node_at(tmp, 0);
	size_t size = 0;
	struct diff_fieldset *set;

	if (node_member(root) || root->nkids)
		size = tmp->used;
	if (!(set = malloc(sizeof(*set) + size)))
		return NULL;
	memset(set, 0, sizeof(*set));
	if (size) {
		set->mem = (char *)(set + 1);
		memcpy(set->mem, tmp->mem, size);
		set->used = set->alloc = (uint32_t)size;
		set->members = tmp->members;
		set->borrowed = true;
	}
	return set;
}

/* --- UTF-8 and JSON strings --- */

/* Length of the valid UTF-8 sequence at p (1-4), 0 if invalid. */
static size_t utf8_decode(const unsigned char *p, const unsigned char *end,
			  uint32_t *cp)
{
	unsigned char c = p[0];
	uint32_t v, min;
	size_t n, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

static size_t utf8_encode(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	uint32_t cp;
	size_t n;

	while (p < end) {
		if (*p < 0x80) {
			p++;
			continue;
		}
		if (!(n = utf8_decode(p, end, &cp)))
			return false;
		p += n;
	}
	return true;
}

static int hex4(const char *p, const char *end, uint32_t *out)
{
	uint32_t v = 0;
	int i;

	if (end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/*
 * The escape after a backslash (*pp points past the backslash). Lone
 * surrogates read as U+FFFD, as Go's decoder reads them. -1 if malformed.
 */
static int decode_escape(const char **pp, const char *end, uint32_t *cp)
{
	const char *p = *pp;
	uint32_t u, lo;

	if (p >= end)
		return -1;
	switch (*p++) {
	case '"':
		u = '"';
		break;
	case '\\':
		u = '\\';
		break;
	case '/':
		u = '/';
		break;
	case 'b':
		u = '\b';
		break;
	case 'f':
		u = '\f';
		break;
	case 'n':
		u = '\n';
		break;
	case 'r':
		u = '\r';
		break;
	case 't':
		u = '\t';
		break;
	case 'u':
		if (hex4(p, end, &u) < 0)
			return -1;
		p += 4;
		if (u >= 0xd800 && u < 0xdc00) {
			if (end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
			    !hex4(p + 2, end, &lo) && lo >= 0xdc00 &&
			    lo < 0xe000) {
				u = 0x10000 + ((u - 0xd800) << 10) +
				    (lo - 0xdc00);
				p += 6;
			} else {
				u = 0xfffd;
			}
		} else if (u >= 0xdc00 && u < 0xe000) {
			u = 0xfffd;
		}
		break;
	default:
		return -1;
	}
	*pp = p;
	*cp = u;
	return 0;
}

/* Reads the bytes of a JSON string (past its opening quote), unescaped. */
struct sdec {
	const char *p, *end;
	char pend[4];
	unsigned npend, ipend;
};

/* The next byte; -1 at the closing quote (consumed), -2 if malformed. */
static int sdec_next(struct sdec *d)
{
	uint32_t cp;

	if (d->ipend < d->npend)
		return (unsigned char)d->pend[d->ipend++];
	if (d->p >= d->end)
		return -2;
	if (*d->p == '"') {
		d->p++;
		return -1;
	}
	if (*d->p != '\\')
		return (unsigned char)*d->p++;
	d->p++;
	if (decode_escape(&d->p, d->end, &cp) < 0)
		return -2;
	d->npend = (unsigned)utf8_encode(cp, d->pend);
	d->ipend = 1;
	return (unsigned char)d->pend[0];
}

/* --- numbers --- */

/* A JSON number read as value = (neg ? -1 : 1) * 0.d * 10^x. */
struct num {
	char *d;    /* significant digits: no leading or trailing zeros */
	size_t cap; /* room in d */
	size_t nd;  /* 0 for zero */
	long x;
	bool neg;
	bool is_int; /* written without fraction or exponent */
	bool truncated;
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Read a number strictly by JSON's grammar; the end of it, or NULL. */
static const char *num_scan(const char *p, const char *end, struct num *n)
{
	bool seen = false, frac = false, eneg = false;
	long exp = 0;

	n->nd = 0;
	n->x = 0;
	n->neg = false;
	n->is_int = true;
	n->truncated = false;
	if (p < end && *p == '-') {
		n->neg = true;
		p++;
	}
	if (p >= end || !is_digit(*p))
		return NULL;
	if (*p == '0' && p + 1 < end && is_digit(p[1]))
		return NULL;
	for (;;) {
		for (; p < end && is_digit(*p); p++) {
			if (!seen && *p == '0') {
				if (frac)
					n->x--;
				continue;
			}
			seen = true;
			if (!frac)
				n->x++;
			if (n->nd < n->cap)
				n->d[n->nd++] = *p;
			else if (*p != '0')
				n->truncated = true;
		}
		if (frac || p >= end || *p != '.')
			break;
		frac = true;
		n->is_int = false;
		if (++p >= end || !is_digit(*p))
			return NULL;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		n->is_int = false;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		if (p >= end || !is_digit(*p))
			return NULL;
		for (; p < end && is_digit(*p); p++)
			if (exp < 1000000)
				exp = exp * 10 + (*p - '0');
	}
	while (n->nd && n->d[n->nd - 1] == '0')
		n->nd--;
	if (!n->nd)
		n->x = 0;
	else
		n->x += eneg ? -exp : exp;
	return p;
}

static int num_cmp(const struct num *a, const struct num *b)
{
	int sa = !a->nd ? 0 : a->neg ? -1 : 1;
	int sb = !b->nd ? 0 : b->neg ? -1 : 1;
	size_t n = a->nd < b->nd ? a->nd : b->nd;
	int r;

	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (!sa)
		return 0;
	if (a->x != b->x)
		r = a->x < b->x ? -1 : 1;
	else if ((r = memcmp(a->d, b->d, n)))
		r = r < 0 ? -1 : 1;
	else
		r = a->nd == b->nd ? 0 : a->nd < b->nd ? -1 : 1;
	return sa * r;
}

/* --- the typed order of k: and v: texts --- */

enum { K_NUM, K_STR, K_BOOL, K_LIST, K_MAP, K_NULL, K_BAD };

struct jcur {
	const char *p, *end;
};

static int jkind(const struct jcur *c)
{
	if (c->p >= c->end)
		return K_BAD;
	switch (*c->p) {
	case '"':
		return K_STR;
	case 't':
	case 'f':
		return K_BOOL;
	case '[':
		return K_LIST;
	case '{':
		return K_MAP;
	case 'n':
		return K_NULL;
	case '-':
		return K_NUM;
	default:
		return is_digit(*c->p) ? K_NUM : K_BAD;
	}
}

static bool jeat(struct jcur *c, char ch)
{
	if (c->p >= c->end || *c->p != ch)
		return false;
	c->p++;
	return true;
}

static bool jlit(struct jcur *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n))
		return false;
	c->p += n;
	return true;
}

static int jcmp_str(struct jcur *a, struct jcur *b, bool *bad)
{
	struct sdec da = {a->p + 1, a->end, {0}, 0, 0};
	struct sdec db = {b->p + 1, b->end, {0}, 0, 0};
	int ca, cb;

	for (;;) {
		ca = sdec_next(&da);
		cb = sdec_next(&db);
		if (ca == -2 || cb == -2) {
			*bad = true;
			return 0;
		}
		if (ca != cb)
			return ca < cb ? -1 : 1;
		if (ca == -1)
			break;
	}
	a->p = da.p;
	b->p = db.p;
	return 0;
}

static int jcmp_num(struct jcur *a, struct jcur *b, bool *bad)
{
	char da[CMP_DIGITS], db[CMP_DIGITS];
	struct num na = {.d = da, .cap = sizeof(da)};
	struct num nb = {.d = db, .cap = sizeof(db)};
	const char *ea = num_scan(a->p, a->end, &na);
	const char *eb = num_scan(b->p, b->end, &nb);

	if (!ea || !eb) {
		*bad = true;
		return 0;
	}
	a->p = ea;
	b->p = eb;
	return num_cmp(&na, &nb);
}

/*
 * structured-merge-diff's value.Compare on two JSON texts: advances both
 * cursors past the values when they are equal. Sets *bad (and returns 0)
 * on text it cannot read.
 */
static int jcmp_value(struct jcur *a, struct jcur *b, unsigned depth, bool *bad)
{
	int ka = jkind(a), kb = jkind(b), r;
	bool ta, tb, map, first;
	char close;

	if (ka == K_BAD || kb == K_BAD || depth > MAX_DEPTH) {
		*bad = true;
		return 0;
	}
	if (ka != kb)
		return ka < kb ? -1 : 1;
	switch (ka) {
	case K_NUM:
		return jcmp_num(a, b, bad);
	case K_STR:
		return jcmp_str(a, b, bad);
	case K_BOOL:
		ta = *a->p == 't';
		tb = *b->p == 't';
		if (ta != tb)
			return ta ? 1 : -1;
		if (!jlit(a, ta ? "true" : "false") ||
		    !jlit(b, tb ? "true" : "false"))
			*bad = true;
		return 0;
	case K_NULL:
		if (!jlit(a, "null") || !jlit(b, "null"))
			*bad = true;
		return 0;
	}
	map = ka == K_MAP;
	close = map ? '}' : ']';
	a->p++;
	b->p++;
	for (first = true;; first = false) {
		bool ea = a->p < a->end && *a->p == close;
		bool eb = b->p < b->end && *b->p == close;

		if (ea && eb) {
			a->p++;
			b->p++;
			return 0;
		}
		if (ea || eb)
			return ea ? -1 : 1;
		if (!first && (!jeat(a, ',') || !jeat(b, ',')))
			break;
		if (map) {
			if (jkind(a) != K_STR || jkind(b) != K_STR)
				break;
			if ((r = jcmp_str(a, b, bad)) || *bad)
				return r;
			if (!jeat(a, ':') || !jeat(b, ':'))
				break;
		}
		if ((r = jcmp_value(a, b, depth + 1, bad)) || *bad)
			return r;
	}
	*bad = true;
	return 0;
}

static int bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int r = memcmp(a, b, alen < blen ? alen : blen);

	if (r)
		return r < 0 ? -1 : 1;
	return alen == blen ? 0 : alen < blen ? -1 : 1;
}

/* The order of path elements (see the top of this file). */
static int pe_cmp(unsigned ta, const char *a, size_t alen, unsigned tb,
		  const char *b, size_t blen)
{
	struct jcur ca = {a, a + alen}, cb = {b, b + blen};
	bool bad = false;
	int r;

	if (ta != tb)
		return ta < tb ? -1 : 1;
	/* Equal texts are equal elements: skip the typed comparison. */
	if (alen == blen && !memcmp(a, b, alen))
		return 0;
	switch (ta) {
	case DIFF_PE_INDEX:
		if (alen != blen)
			return alen < blen ? -1 : 1;
		break;
	case DIFF_PE_KEY:
	case DIFF_PE_VALUE:
		r = jcmp_value(&ca, &cb, 0, &bad);
		if (r && !bad)
			return r;
		break;
	}
	return bytes_cmp(a, alen, b, blen);
}

static int node_cmp(const struct diff_fieldset *sa, const struct node *a,
		    const struct diff_fieldset *sb, const struct node *b)
{
	return pe_cmp(node_type(a), node_text(sa, a), node_len(a), node_type(b),
		      node_text(sb, b), node_len(b));
}

/* --- canonical k: and v: texts --- */

/* A member of an object being canonicalized: arena offsets. */
struct span {
	uint32_t key;	/* the key's opening quote */
	uint32_t colon; /* just past the key's closing quote */
	uint32_t end;	/* just past the value */
};

struct canon {
	struct diff_fieldset *s; /* output: appended to the arena */
	const char *p, *end;	 /* input */
	struct span *spans;	 /* a stack, one frame per open object */
	size_t nspans, aspans;
	char *tmp; /* for reordering an object's members */
	size_t atmp;
	struct span spans_inline[16];
	char digits[NUM_DIGITS_MAX];
	char numbuf[NUM_DIGITS_MAX + 64];
};

/* Scratch only: no allocation until something outgrows the inline room. */
static void canon_init(struct canon *c, struct diff_fieldset *s)
{
	c->s = s;
	c->spans = c->spans_inline;
	c->nspans = 0;
	c->aspans = sizeof(c->spans_inline) / sizeof(c->spans_inline[0]);
	c->tmp = NULL;
	c->atmp = 0;
}

static void canon_release(struct canon *c)
{
	if (c->spans != c->spans_inline)
		free(c->spans);
	free(c->tmp);
}

static void canon_ws(struct canon *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
				 *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int canon_cp(struct canon *c, uint32_t cp)
{
	static const char hex[] = "0123456789abcdef";
	char out[6];

	switch (cp) {
	case '"':
		return arena_put(c->s, "\\\"", 2);
	case '\\':
		return arena_put(c->s, "\\\\", 2);
	case '\b':
		return arena_put(c->s, "\\b", 2);
	case '\f':
		return arena_put(c->s, "\\f", 2);
	case '\n':
		return arena_put(c->s, "\\n", 2);
	case '\r':
		return arena_put(c->s, "\\r", 2);
	case '\t':
		return arena_put(c->s, "\\t", 2);
	}
	if (cp < 0x20 || cp == '<' || cp == '>' || cp == '&' || cp == 0x2028 ||
	    cp == 0x2029) {
		out[0] = '\\';
		out[1] = 'u';
		out[2] = hex[cp >> 12 & 0xf];
		out[3] = hex[cp >> 8 & 0xf];
		out[4] = hex[cp >> 4 & 0xf];
		out[5] = hex[cp & 0xf];
		return arena_put(c->s, out, 6);
	}
	return arena_put(c->s, out, utf8_encode(cp, out));
}

static bool str_safe(unsigned char ch)
{
	return ch >= 0x20 && ch < 0x80 && ch != '"' && ch != '\\' &&
	       ch != '<' && ch != '>' && ch != '&';
}

static int canon_string(struct canon *c)
{
	const char *run;
	uint32_t cp;
	size_t n;
	int error;

	c->p++;
	if ((error = arena_putc(c->s, '"')) < 0)
		return error;
	for (;;) {
		for (run = c->p;
		     c->p < c->end && str_safe((unsigned char)*c->p); c->p++)
			;
		if ((error = arena_put(c->s, run, (size_t)(c->p - run))) < 0)
			return error;
		if (c->p >= c->end)
			return ERR_PARSE;
		if (*c->p == '"') {
			c->p++;
			return arena_putc(c->s, '"');
		}
		if (*c->p == '\\') {
			c->p++;
			if (decode_escape(&c->p, c->end, &cp) < 0)
				return ERR_PARSE;
			error = canon_cp(c, cp);
		} else if ((unsigned char)*c->p < 0x20) {
			return ERR_PARSE;
		} else if ((unsigned char)*c->p < 0x80) {
			error = canon_cp(c, (unsigned char)*c->p++);
		} else if (!(n = utf8_decode((const unsigned char *)c->p,
					     (const unsigned char *)c->end,
					     &cp))) {
			c->p++;
			error = arena_put(c->s, "\\ufffd", 6);
		} else if (cp == 0x2028 || cp == 0x2029) {
			c->p += n;
			error = canon_cp(c, cp);
		} else {
			error = arena_put(c->s, c->p, n);
			c->p += n;
		}
		if (error < 0)
			return error;
	}
}

/* The digits and exponent of printf's "%.*e" text ("1.25e+02": 125, 2). */
static void sci_parse(const char *s, char *d, size_t *nd, long *ex)
{
	*nd = 0;
	for (; *s && *s != 'e'; s++)
		if (is_digit(*s) && *nd < 17)
			d[(*nd)++] = *s;
	*ex = *s ? strtol(s + 1, NULL, 10) : 0;
}

/*
 * value = 0.d * 10^x from a positive double, in the fewest digits that
 * read back as it: what Go's strconv.FormatFloat(v, _, -1, 64) prints.
 */
static void num_from_double(struct canon *c, double v, struct num *n)
{
	char s[64], d[24];
	size_t nd = 0, i;
	long ex = 0;
	double r;
	bool up;
	int p;

	for (p = 1; p <= 17; p++) {
		snprintf(s, sizeof(s), "%.*e", p - 1, v);
		sci_parse(s, d, &nd, &ex);
		r = strtod(s, NULL);
		if (r == v)
			break;
		/*
		 * The correctly rounded p digits can miss v's rounding
		 * interval where it is lopsided (at powers of two) while
		 * their neighbour on v's side is inside it.
		 */
		up = r < v;
		for (i = nd; i-- > 0;) {
			if (d[i] != (up ? '9' : '0')) {
				d[i] = (char)(d[i] + (up ? 1 : -1));
				break;
			}
			d[i] = up ? '0' : '9';
		}
		if (i == (size_t)-1 || d[0] == '0')
			continue; /* the neighbour has another length */
		snprintf(c->numbuf, sizeof(c->numbuf), "%.*se%ld", (int)nd, d,
			 ex - (long)nd + 1);
		if (strtod(c->numbuf, NULL) == v)
			break;
	}
	for (i = 0; i < nd && i < n->cap; i++)
		n->d[i] = d[i];
	n->nd = i;
	n->x = ex + 1;
	while (n->nd && n->d[n->nd - 1] == '0')
		n->nd--;
}

/*
 * Numbers: an integer that fits an int64 as written ("-0" as "0"), any
 * other number as Go writes the float64 it reads as.
 */
static int canon_number(struct canon *c)
{
	struct num n = {.d = c->digits, .cap = sizeof(c->digits)};
	const char *start = c->p, *stop = num_scan(c->p, c->end, &n);
	size_t len, digits, i;
	struct diff_fieldset *s = c->s;
	long xs;
	double v;
	int error = 0;
	char e[24];

	if (!stop)
		return ERR_PARSE;
	c->p = stop;
	len = (size_t)(stop - start);
	digits = len - n.neg;
	if (n.is_int && !n.nd)
		return arena_putc(s, '0');
	if (n.is_int && (digits < 19 ||
			 (digits == 19 && memcmp(start + n.neg,
						 n.neg ? "9223372036854775808"
						       : "9223372036854775807",
						 19) <= 0)))
		return arena_put(s, start, len);
	if (n.nd > 15 || n.truncated || n.x > 300 || n.x < -300) {
		snprintf(c->numbuf, sizeof(c->numbuf), "%.*se%ld", (int)n.nd,
			 n.d, n.x - (long)n.nd);
		v = strtod(c->numbuf, NULL);
		if (v > DBL_MAX)
			return ERR_PARSE; /* out of float64's range */
		if (v == 0)
			n.nd = 0;
		else
			num_from_double(c, v, &n);
	}
	if (n.neg && (error = arena_putc(s, '-')) < 0)
		return error;
	if (!n.nd)
		return arena_putc(s, '0');
	xs = n.x - 1; /* the scientific exponent */
	if (xs < -6 || xs >= 21) {
		error = arena_putc(s, n.d[0]);
		if (!error && n.nd > 1 && !(error = arena_putc(s, '.')))
			error = arena_put(s, n.d + 1, n.nd - 1);
		snprintf(e, sizeof(e), "e%s%ld", xs < 0 ? "-" : "+",
			 xs < 0 ? -xs : xs);
		return error ? error : arena_put(s, e, strlen(e));
	}
	if (n.x <= 0) {
		error = arena_put(s, "0.", 2);
		for (i = 0; !error && i < (size_t)-n.x; i++)
			error = arena_putc(s, '0');
		return error ? error : arena_put(s, n.d, n.nd);
	}
	if (n.nd <= (size_t)n.x) {
		error = arena_put(s, n.d, n.nd);
		for (i = n.nd; !error && i < (size_t)n.x; i++)
			error = arena_putc(s, '0');
		return error;
	}
	if (!(error = arena_put(s, n.d, (size_t)n.x)) &&
	    !(error = arena_putc(s, '.')))
		error = arena_put(s, n.d + n.x, n.nd - (size_t)n.x);
	return error;
}

static int canon_literal(struct canon *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n))
		return ERR_PARSE;
	c->p += n;
	return arena_put(c->s, lit, n);
}

static int canon_value(struct canon *c, unsigned depth);

static int canon_array(struct canon *c, unsigned depth)
{
	int error;

	if (depth >= MAX_DEPTH)
		return ERR_LIMIT;
	c->p++;
	if ((error = arena_putc(c->s, '[')) < 0)
		return error;
	canon_ws(c);
	if (c->p < c->end && *c->p == ']') {
		c->p++;
		return arena_putc(c->s, ']');
	}
	for (;;) {
		if ((error = canon_value(c, depth + 1)) < 0)
			return error;
		canon_ws(c);
		if (c->p >= c->end)
			return ERR_PARSE;
		if (*c->p == ']') {
			c->p++;
			return arena_putc(c->s, ']');
		}
		if (*c->p++ != ',')
			return ERR_PARSE;
		if ((error = arena_putc(c->s, ',')) < 0)
			return error;
	}
}

static int span_key_cmp(const struct diff_fieldset *s, const struct span *a,
			const struct span *b)
{
	struct jcur ca = {s->mem + a->key, s->mem + a->colon};
	struct jcur cb = {s->mem + b->key, s->mem + b->colon};
	bool bad = false;

	return jcmp_str(&ca, &cb, &bad);
}

typedef int (*sort_cmp)(const void *a, const void *b, void *ctx);

static void swap_bytes(char *a, char *b, size_t size)
{
	char t;

	while (size--) {
		t = *a;
		*a++ = *b;
		*b++ = t;
	}
}

/* Heapsort: in place, O(n log n) whatever the input. */
static void heap_sort(void *base, size_t n, size_t size, sort_cmp cmp,
		      void *ctx)
{
	char *v = base;
	size_t start, end, root, child;

	if (n < 2)
		return;
	for (end = n, start = n / 2; end > 1;) {
		if (start > 0) {
			start--;
		} else {
			end--;
			swap_bytes(v, v + end * size, size);
		}
		for (root = start; (child = 2 * root + 1) < end; root = child) {
			if (child + 1 < end &&
			    cmp(v + child * size, v + (child + 1) * size, ctx) <
				    0)
				child++;
			if (cmp(v + root * size, v + child * size, ctx) >= 0)
				break;
			swap_bytes(v + root * size, v + child * size, size);
		}
	}
}

static int span_sort_cmp(const void *a, const void *b, void *ctx)
{
	return span_key_cmp(ctx, a, b);
}

static int canon_object(struct canon *c, unsigned depth)
{
	size_t base = c->nspans, i, cnt;
	uint32_t body, w;
	struct span sp;
	bool sorted = true;
	int error, r;

	if (depth >= MAX_DEPTH)
		return ERR_LIMIT;
	c->p++;
	if ((error = arena_putc(c->s, '{')) < 0)
		return error;
	body = c->s->used;
	canon_ws(c);
	if (c->p < c->end && *c->p == '}') {
		c->p++;
		return arena_putc(c->s, '}');
	}
	for (;;) {
		canon_ws(c);
		if (c->p >= c->end || *c->p != '"')
			return ERR_PARSE;
		sp.key = c->s->used;
		if ((error = canon_string(c)) < 0)
			return error;
		sp.colon = c->s->used;
		canon_ws(c);
		if (c->p >= c->end || *c->p++ != ':')
			return ERR_PARSE;
		if ((error = arena_putc(c->s, ':')) < 0 ||
		    (error = canon_value(c, depth + 1)) < 0)
			return error;
		sp.end = c->s->used;
		if (c->nspans == c->aspans) {
			size_t a = c->aspans * 2;
			struct span *v;

			if (c->spans == c->spans_inline) {
				if ((v = malloc(a * sizeof(*v))))
					memcpy(v, c->spans,
					       c->nspans * sizeof(*v));
			} else {
				v = realloc(c->spans, a * sizeof(*v));
			}
			if (!v)
				return ERR_NOMEM;
			c->spans = v;
			c->aspans = a;
		}
		c->spans[c->nspans++] = sp;
		canon_ws(c);
		if (c->p >= c->end)
			return ERR_PARSE;
		if (*c->p == '}') {
			c->p++;
			break;
		}
		if (*c->p++ != ',')
			return ERR_PARSE;
		if ((error = arena_putc(c->s, ',')) < 0)
			return error;
	}
	cnt = c->nspans - base;
	for (i = 1; i < cnt; i++) {
		r = span_key_cmp(c->s, &c->spans[base + i - 1],
				 &c->spans[base + i]);
		if (r > 0)
			sorted = false;
		else if (!r)
			return ERR_PARSE; /* duplicate key */
	}
	if (!sorted) {
		size_t len = c->s->used - body;

		heap_sort(c->spans + base, cnt, sizeof(struct span),
			  span_sort_cmp, c->s);
		for (i = 1; i < cnt; i++)
			if (!span_key_cmp(c->s, &c->spans[base + i - 1],
					  &c->spans[base + i]))
				return ERR_PARSE;
		if (len > c->atmp) {
			char *t = realloc(c->tmp, len);

			if (!t)
				return ERR_NOMEM;
			c->tmp = t;
			c->atmp = len;
		}
		memcpy(c->tmp, c->s->mem + body, len);
		/* Same bytes, reordered: rewrite in place. */
		for (w = body, i = 0; i < cnt; i++) {
			struct span *m = &c->spans[base + i];
			size_t mlen = m->end - m->key;

			if (i)
				c->s->mem[w++] = ',';
			memcpy(c->s->mem + w, c->tmp + (m->key - body), mlen);
			w += (uint32_t)mlen;
		}
	}
	c->nspans = base;
	return arena_putc(c->s, '}');
}

static int canon_value(struct canon *c, unsigned depth)
{
	canon_ws(c);
	if (c->p >= c->end)
		return ERR_PARSE;
	switch (*c->p) {
	case '{':
		return canon_object(c, depth);
	case '[':
		return canon_array(c, depth);
	case '"':
		return canon_string(c);
	case 't':
		return canon_literal(c, "true");
	case 'f':
		return canon_literal(c, "false");
	case 'n':
		return canon_literal(c, "null");
	}
	if (*c->p == '-' || is_digit(*c->p))
		return canon_number(c);
	return ERR_PARSE;
}

/*
 * The end of a scalar at p that is canonical as written: a string of
 * str_safe() bytes, or an integer of at most 18 digits ("0", not "-0");
 * NULL for anything else (which may still be canonical).
 */
static const char *simple_scalar(const char *p, const char *end)
{
	const char *digits;
	bool neg = false;

	if (p < end && *p == '"') {
		for (p++; p < end && str_safe((unsigned char)*p); p++)
			;
		return p < end && *p == '"' ? p + 1 : NULL;
	}
	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (p >= end || !is_digit(*p))
		return NULL;
	if (*p == '0')
		return neg ? NULL : p + 1;
	for (digits = p; p < end && is_digit(*p); p++)
		;
	return p - digits <= 18 ? p : NULL;
}

/*
 * True when the text is canonical in the simple way most k: and v: texts
 * are: a simple scalar, or an object of simple scalars under keys that
 * are simple strings in strictly increasing order; no whitespace.
 * canon_value() would write such a text unchanged.
 */
static bool simple_canonical(const char *p, const char *end)
{
	const char *key = NULL, *v;
	size_t klen = 0;

	if (p >= end || *p != '{') {
		v = simple_scalar(p, end);
		return v && v == end;
	}
	if (++p < end && *p == '}')
		return p + 1 == end;
	for (;;) {
		if (p >= end || *p != '"' || !(v = simple_scalar(p, end)))
			return false;
		/* bytewise, a prefix first: span_key_cmp() on plain keys */
		if (key &&
		    bytes_cmp(key, klen, p + 1, (size_t)(v - p - 2)) >= 0)
			return false;
		key = p + 1;
		klen = (size_t)(v - p - 2);
		if (v >= end || *v != ':' || !(p = simple_scalar(v + 1, end)))
			return false;
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		return p < end && *p == '}' && p + 1 == end;
	}
}

/*
 * Append the canonical form of a JSON text and a NUL to the arena; *off and
 * *len get where it is. ERR_PARSE when it is not JSON, ERR_LIMIT when
 * nested too deeply; the arena is unchanged on error.
 */
static int canon_text(struct canon *c, const char *text, size_t len,
		      uint32_t *off, uint32_t *outlen)
{
	uint32_t start = c->s->used;
	int error;

	if (len <= TEXT_MAX && simple_canonical(text, text + len)) {
		if ((error = arena_text(c->s, text, len, off)) < 0)
			return error;
		*outlen = (uint32_t)len;
		return 0;
	}
	c->p = text;
	c->end = text + len;
	c->nspans = 0;
	error = canon_value(c, 0);
	if (!error) {
		canon_ws(c);
		if (c->p != c->end)
			error = ERR_PARSE;
	}
	if (!error && c->s->used - start > TEXT_MAX)
		error = ERR_LIMIT;
	if (!error)
		error = arena_putc(c->s, '\0');
	if (error < 0) {
		c->s->used = start;
		return error;
	}
	*off = start;
	*outlen = c->s->used - start - 1;
	return 0;
}

/* The canonical i: text: digits without leading zeros, at most 18. */
static int index_text(const char *text, size_t len, const char **out,
		      size_t *outlen)
{
	size_t i;

	if (!len)
		return ERR_PARSE;
	for (i = 0; i < len; i++)
		if (!is_digit(text[i]))
			return ERR_PARSE;
	while (len > 1 && *text == '0')
		text++, len--;
	if (len > 18)
		return ERR_PARSE;
	*out = text;
	*outlen = len;
	return 0;
}

/* --- child arrays --- */

static size_t child_find(const struct diff_fieldset *s, const struct node *n,
			 unsigned type, const char *text, size_t len,
			 bool *found)
{
	const struct node *kids = n->nkids ? node_kids(s, n) : NULL;
	size_t lo = 0, hi = n->nkids, mid;
	int r;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		r = pe_cmp(node_type(&kids[mid]), node_text(s, &kids[mid]),
			   node_len(&kids[mid]), type, text, len);
		if (!r) {
			*found = true;
			return mid;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static uint32_t node_cap(const struct node *n)
{
	if (!n->nkids)
		return 0;
	return (n->meta & META_POW2) ? pow2_at_least(n->nkids) : n->nkids;
}

/*
 * Insert *child (not in the arena) at position pos of the children of the
 * node at `parent`; *off gets its offset. A full array moves to a new one
 * of twice the size (the old one stays behind, unused).
 */
static int child_insert(struct diff_fieldset *s, uint32_t parent, size_t pos,
			const struct node *child, uint32_t *off)
{
	struct node *pn = node_at(s, parent), *kids, *old;
	uint32_t n = pn->nkids, newoff;
	int error;

	if (n < node_cap(pn)) {
		kids = node_kids(s, pn);
		memmove(&kids[pos + 1], &kids[pos], (n - pos) * sizeof(*kids));
		kids[pos] = *child;
	} else {
		if (n >= ARENA_MAX / sizeof(struct node))
			return ERR_LIMIT;
		if ((error = arena_nodes(s, pow2_at_least(n + 1), &newoff)) < 0)
			return error;
		pn = node_at(s, parent);
		kids = node_at(s, newoff);
		if (n) {
			old = node_kids(s, pn);
			memcpy(kids, old, pos * sizeof(*kids));
			memcpy(&kids[pos + 1], &old[pos],
			       (n - pos) * sizeof(*kids));
		}
		kids[pos] = *child;
		pn->kids = newoff;
		pn->meta |= META_POW2;
	}
	pn->nkids = n + 1;
	*off = kid_off(pn, pos);
	return 0;
}

/* Merge the subtree at src into the one at dst (same arena). */
static int node_merge(struct diff_fieldset *s, uint32_t dst, uint32_t src,
		      unsigned depth)
{
	uint32_t i, n = node_at(s, src)->nkids, c, off;
	struct node copy;
	size_t pos;
	bool found;
	int error;

	if (depth > MAX_DEPTH)
		return ERR_LIMIT;
	if (node_member(node_at(s, src)))
		node_at(s, dst)->meta |= META_MEMBER;
	for (i = 0; i < n; i++) {
		c = kid_off(node_at(s, src), i);
		copy = *node_at(s, c);
		pos = child_find(s, node_at(s, dst), node_type(&copy),
				 node_text(s, &copy), node_len(&copy), &found);
		if (found)
			error = node_merge(s, kid_off(node_at(s, dst), pos), c,
					   depth + 1);
		else
			error = child_insert(s, dst, pos, &copy, &off);
		if (error < 0)
			return error;
	}
	return 0;
}

static size_t count_members(const struct diff_fieldset *s, const struct node *n)
{
	size_t k = node_member(n), i;

	for (i = 0; i < n->nkids; i++)
		k += count_members(s, &node_kids(s, n)[i]);
	return k;
}

/* A stack of nodes being built (children before they get their array). */
struct nstack {
	struct node *v;
	size_t n, alloc;
	struct node inl[64]; /* the first 64, without allocating */
};

static void nstack_init(struct nstack *st)
{
	st->v = st->inl;
	st->n = 0;
	st->alloc = sizeof(st->inl) / sizeof(st->inl[0]);
}

static void nstack_release(struct nstack *st)
{
	if (st->v != st->inl)
		free(st->v);
}

static int nstack_push(struct nstack *st, const struct node *node)
{
	if (st->n == st->alloc) {
		size_t a = st->alloc * 2;
		struct node *v;

		if (st->v == st->inl) {
			if ((v = malloc(a * sizeof(*v))))
				memcpy(v, st->v, st->n * sizeof(*v));
		} else {
			v = realloc(st->v, a * sizeof(*v));
		}
		if (!v)
			return ERR_NOMEM;
		st->v = v;
		st->alloc = a;
	}
	st->v[st->n++] = *node;
	return 0;
}

/* Give res the nodes st->v[base..] as its children; pops them. */
static int nstack_pop_into(struct diff_fieldset *s, struct nstack *st,
			   size_t base, struct node *res)
{
	size_t cnt = st->n - base;
	uint32_t off;
	int error;

	res->nkids = 0;
	if (cnt) {
		if ((error = arena_nodes(s, cnt, &off)) < 0)
			return error;
		memcpy(node_at(s, off), &st->v[base], cnt * sizeof(*st->v));
		res->kids = off;
		res->nkids = (uint32_t)cnt;
	}
	st->n = base;
	return 0;
}

/* --- parse --- */

struct parser {
	struct diff_fieldset *set;
	struct err *err;
	struct nstack st;
	bool merged;
	struct canon canon;
	struct {
		uint32_t text;
		unsigned type;
	} path[MAX_DEPTH];
};

/* A key as shown in messages: at most 80 bytes of it. */
static const char *shown(const char *key, size_t len, char *out, size_t size)
{
	if (len > 80)
		snprintf(out, size, "%.80s...", key);
	else
		snprintf(out, size, "%.*s", (int)len, key);
	return out;
}

/* Report a problem in the node at `depth` (its path is path[0..depth)). */
static int perr(struct parser *p, unsigned depth, int code, const char *fmt,
		...) __attribute__((format(printf, 4, 5)));
static int perr(struct parser *p, unsigned depth, int code, const char *fmt,
		...)
{
	struct diff_pe *pe = NULL;
	struct buf path = BUF_INIT, msg = BUF_INIT;
	struct diff_path dp;
	va_list ap;
	unsigned i;

	if (!p->err)
		return code;
	if (depth && (pe = calloc(depth, sizeof(*pe)))) {
		for (i = 0; i < depth; i++) {
			pe[i].type = (enum diff_pe_type)p->path[i].type;
			pe[i].text = p->set->mem + p->path[i].text;
		}
		dp.pe = pe;
		dp.len = depth;
		diff_path_format(&dp, &path);
	}
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	err_set(p->err, code, "fieldsV1%s%s: %s", path.len ? " " : "",
		buf_cstr(&path), buf_cstr(&msg));
	buf_release(&path);
	buf_release(&msg);
	free(pe);
	return code;
}

static int node_sort_cmp(const void *a, const void *b, void *ctx)
{
	return node_cmp(ctx, a, ctx, b);
}

/* Merge equal neighbours of a sorted run st->v[base..] (rare). */
static int parse_dedupe(struct parser *p, size_t base, unsigned depth)
{
	struct diff_fieldset *s = p->set;
	struct node *v = p->st.v;
	size_t w = base, i;
	uint32_t off;
	int error;

	for (i = base + 1; i < p->st.n; i++) {
		if (node_cmp(s, &v[w], s, &v[i])) {
			v[++w] = v[i];
			continue;
		}
		if ((error = arena_nodes(s, 2, &off)) < 0)
			return perr(p, depth, error, "out of memory");
		*node_at(s, off) = v[w];
		*node_at(s, off + sizeof(struct node)) = v[i];
		if ((error = node_merge(s, off, off + sizeof(struct node),
					depth + 1)) < 0)
			return perr(p, depth, error, "out of memory");
		v[w] = *node_at(s, off);
		p->merged = true;
	}
	p->st.n = w + 1;
	return 0;
}

/* Keys are short: a plain loop beats a call to memchr(). */
static inline bool has_nul(const char *key, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!key[i])
			return true;
	return false;
}

static int parse_node(struct parser *p, const json_t *obj, unsigned depth,
		      struct node *res)
{
	struct diff_fieldset *s = p->set;
	size_t base = p->st.n, klen, tlen = 0;
	const char *key, *t = NULL, *what;
	char show[96];
	bool member = false, sorted = true;
	json_t *val;
	void *iter;
	int error = 0;

	for (iter = json_object_iter((json_t *)obj); iter;
	     iter = json_object_iter_next((json_t *)obj, iter)) {
		struct node child;
		uint32_t toff = 0, clen = 0;
		unsigned type;

		key = json_object_iter_key(iter);
		klen = json_object_iter_key_len(iter);
		val = json_object_iter_value(iter);
		if (klen == 1 && key[0] == '.') {
			if (!json_is_object(val) || json_object_size(val)) {
				error = perr(p, depth, ERR_PARSE,
					     ".: value is not {}");
				goto out;
			}
			member = true;
			continue;
		}
		if (!klen) {
			error = perr(p, depth, ERR_PARSE, "empty key");
			goto out;
		}
		if (has_nul(key, klen)) {
			error = perr(p, depth, ERR_PARSE,
				     "key \"%s\" holds a NUL byte",
				     shown(key, klen, show, sizeof(show)));
			goto out;
		}
		if (klen < 2 || key[1] != ':' ||
		    (key[0] != 'f' && key[0] != 'k' && key[0] != 'v' &&
		     key[0] != 'i')) {
			error = perr(p, depth, ERR_PARSE,
				     "unknown prefix \"%s\"",
				     shown(key, klen, show, sizeof(show)));
			goto out;
		}
		if (!json_is_object(val)) {
			error = perr(p, depth, ERR_PARSE,
				     "%s: value is not an object",
				     shown(key, klen, show, sizeof(show)));
			goto out;
		}
		switch (key[0]) {
		case 'f':
			type = DIFF_PE_FIELD;
			error = arena_text(s, key + 2, klen - 2, &toff);
			clen = (uint32_t)(klen - 2);
			what = "name too long";
			break;
		case 'i':
			type = DIFF_PE_INDEX;
			what = "not a non-negative integer";
			if (!(error = index_text(key + 2, klen - 2, &t, &tlen)))
				error = arena_text(s, t, tlen, &toff);
			clen = (uint32_t)tlen;
			break;
		case 'k':
			type = DIFF_PE_KEY;
			what = "not a JSON object";
			error = canon_text(&p->canon, key + 2, klen - 2, &toff,
					   &clen);
			if (!error && s->mem[toff] != '{') {
				s->used = toff;
				error = ERR_PARSE;
			}
			break;
		default:
			type = DIFF_PE_VALUE;
			what = "not valid JSON";
			error = canon_text(&p->canon, key + 2, klen - 2, &toff,
					   &clen);
			break;
		}
		if (error == ERR_LIMIT && type != DIFF_PE_FIELD)
			what = "JSON too long or nested too deeply";
		if (error < 0) {
			error = perr(p, depth, error, "%s: %s",
				     shown(key, klen, show, sizeof(show)),
				     error == ERR_NOMEM ? "out of memory"
							: what);
			goto out;
		}
		if (depth >= MAX_DEPTH) {
			error = perr(p, depth, ERR_LIMIT,
				     "nested deeper than %d levels", MAX_DEPTH);
			goto out;
		}
		child.text = toff;
		child.meta = clen | type << META_TYPE_SHIFT;
		child.kids = child.nkids = 0;
		p->path[depth].text = toff;
		p->path[depth].type = type;
		if ((error = parse_node(p, val, depth + 1, &child)) < 0)
			goto out;
		if (sorted && p->st.n > base &&
		    node_cmp(s, &p->st.v[p->st.n - 1], s, &child) >= 0)
			sorted = false;
		if ((error = nstack_push(&p->st, &child)) < 0) {
			error = perr(p, depth, error, "out of memory");
			goto out;
		}
	}
	if (!sorted) {
		heap_sort(p->st.v + base, p->st.n - base, sizeof(struct node),
			  node_sort_cmp, s);
		if ((error = parse_dedupe(p, base, depth)) < 0)
			goto out;
	}
	if ((error = nstack_pop_into(s, &p->st, base, res)) < 0) {
		error = perr(p, depth, error, "out of memory");
		goto out;
	}
	/* A leaf is a member, but {} at the top is the empty set. */
	if (member || (!res->nkids && depth)) {
		res->meta |= META_MEMBER;
		s->members++;
	}
out:
	p->st.n = base;
	return error;
}

struct diff_fieldset *diff_fieldset_new(void)
{
	return calloc(1, sizeof(struct diff_fieldset));
}

void diff_fieldset_free(struct diff_fieldset *set)
{
	if (!set)
		return;
	if (!set->borrowed)
		free(set->mem);
	free(set->cursor);
	free(set);
}

int diff_fieldset_parse(struct diff_fieldset **out, const json_t *fields_v1,
			struct err *err)
{
	_Alignas(16) char scratch[SCRATCH];
	struct diff_fieldset tmp, *set = &tmp;
	struct parser parser, *p = &parser;
	struct node root = {0};
	int error;

	*out = NULL;
	if (!json_is_object(fields_v1))
		return err_set(err, ERR_PARSE, "fieldsV1: not a JSON object");
	if (!json_object_size(fields_v1)) {
		if (!(*out = diff_fieldset_new()))
			return err_set(err, ERR_NOMEM,
				       "fieldsV1: out of memory");
		return 0;
	}
	/*
	 * The parser (some 5 KB) lives on the stack and is not zeroed as a
	 * whole: its path and buffers are scratch.
	 */
	scratch_init(set, scratch, sizeof(scratch));
	p->set = set;
	p->err = err;
	p->merged = false;
	nstack_init(&p->st);
	canon_init(&p->canon, set);
	if ((error = arena_root(set)) < 0) {
		error = perr(p, 0, error, "out of memory");
		goto out;
	}
	if ((error = parse_node(p, fields_v1, 0, &root)) < 0)
		goto out;
	if (p->merged)
		set->members = count_members(set, &root);
	*node_at(set, 0) = root;
	if (!(*out = scratch_finish(set)))
		error = perr(p, 0, ERR_NOMEM, "out of memory");
out:
	canon_release(&p->canon);
	nstack_release(&p->st);
	scratch_release(set);
	return error;
}

/* --- serialization --- */

static const char *const pe_prefix[] = {"f:", "k:", "v:", "i:"};

/* The node as fieldsV1; *out is NULL when it holds no member. */
static int emit(const struct diff_fieldset *s, const struct node *n, bool root,
		struct buf *key, json_t **out)
{
	bool member = node_member(n);
	json_t *obj = json_object(), *child;
	const struct node *kids = n->nkids ? node_kids(s, n) : NULL;
	uint32_t i;
	int error;

	*out = NULL;
	if (!obj)
		return ERR_NOMEM;
	if (member && (n->nkids || root) &&
	    json_object_set_new(obj, ".", json_object()))
		goto nomem;
	for (i = 0; i < n->nkids; i++) {
		if ((error = emit(s, &kids[i], false, key, &child)) < 0) {
			json_decref(obj);
			return error;
		}
		if (!child)
			continue;
		buf_reset(key);
		if (buf_adds(key, pe_prefix[node_type(&kids[i])]) < 0 ||
		    buf_add(key, node_text(s, &kids[i]), node_len(&kids[i])) <
			    0) {
			json_decref(child);
			goto nomem;
		}
		if (json_object_setn_new(obj, key->ptr, key->len, child))
			goto nomem;
	}
	if (!root && member && json_object_size(obj) == 1 && n->nkids)
		json_object_del(obj, "."); /* every child was empty */
	if (!root && !member && !json_object_size(obj)) {
		json_decref(obj);
		return 0;
	}
	*out = obj;
	return 0;
nomem:
	json_decref(obj);
	return ERR_NOMEM;
}

json_t *diff_fieldset_to_json(const struct diff_fieldset *set)
{
	struct buf key = BUF_INIT;
	json_t *out = NULL;

	if (!set || !set->mem)
		return json_object();
	emit(set, node_at(set, 0), true, &key, &out);
	buf_release(&key);
	return out;
}

/* --- insert and queries --- */

/*
 * Check that an element's text is canonical and copy it to the arena
 * (k: and v: are canonicalized there and compared).
 */
static int pe_store(struct diff_fieldset *s, const struct diff_pe *pe,
		    size_t len, struct node *out)
{
	struct canon c;
	const char *t;
	uint32_t off = 0, clen = (uint32_t)len;
	size_t tlen;
	int error = 0;

	switch (pe->type) {
	case DIFF_PE_FIELD:
		if (!utf8_valid(pe->text, len))
			return ERR_INVALID;
		error = arena_text(s, pe->text, len, &off);
		break;
	case DIFF_PE_INDEX:
		if (index_text(pe->text, len, &t, &tlen) < 0 || tlen != len)
			return ERR_INVALID;
		error = arena_text(s, pe->text, len, &off);
		break;
	case DIFF_PE_KEY:
	case DIFF_PE_VALUE:
		canon_init(&c, s);
		error = canon_text(&c, pe->text, len, &off, &clen);
		canon_release(&c);
		if (error == ERR_PARSE)
			return ERR_INVALID;
		if (error < 0)
			return error;
		if (clen != len || memcmp(s->mem + off, pe->text, len) ||
		    (pe->type == DIFF_PE_KEY && pe->text[0] != '{')) {
			s->used = off;
			return ERR_INVALID;
		}
		break;
	default:
		return ERR_INVALID;
	}
	if (error < 0)
		return error;
	out->text = off;
	out->meta = clen | (unsigned)pe->type << META_TYPE_SHIFT;
	out->kids = out->nkids = 0;
	return 0;
}

/* Room in the cursor for a path of n elements. */
static int cursor_reserve(struct diff_fieldset *set, size_t n)
{
	uint32_t a = set->acursor ? set->acursor : 16, *v;

	if (n <= set->acursor)
		return 0;
	while (a < n)
		a *= 2;
	if (!(v = realloc(set->cursor, a * sizeof(*v))))
		return ERR_NOMEM;
	set->cursor = v;
	set->acursor = a;
	return 0;
}

/*
 * Add one path. All or nothing: when an element turns out invalid (or
 * memory runs out) after new nodes were linked in, the first of them is
 * unlinked again, so the set is as it was (the arena keeps the bytes).
 *
 * The leading elements the path shares with the one inserted before are
 * found through the cursor, by text, without a search: equal texts are
 * equal elements. An insert moves only nodes in the child array it adds
 * to, below the shared part, so the cursor stays right; an insert that
 * fails resets it.
 */
int diff_fieldset_insert(struct diff_fieldset *set,
			 const struct diff_path *path)
{
	uint32_t cur = 0, first_parent = 0;
	size_t i, pos, len, first_pos = 0;
	bool found, created = false;
	struct node child, *n;
	int error = 0;

	if (!set || !path || (path->len && !path->pe))
		return ERR_INVALID;
	if (path->len > MAX_DEPTH)
		return ERR_LIMIT;
	if ((error = arena_root(set)) < 0 ||
	    (error = cursor_reserve(set, path->len)) < 0)
		return error;
	for (i = 0; i < path->len && i < set->ncursor; i++) {
		const struct diff_pe *pe = &path->pe[i];

		n = node_at(set, set->cursor[i]);
		if (!pe->text || node_type(n) != (unsigned)pe->type ||
		    strcmp(node_text(set, n), pe->text))
			break;
		cur = set->cursor[i];
	}
	/* The cursor is rewritten from here; it is whole again at the end. */
	set->ncursor = (uint32_t)i;
	for (; i < path->len; i++) {
		const struct diff_pe *pe = &path->pe[i];

		if ((unsigned)pe->type > DIFF_PE_INDEX || !pe->text) {
			error = ERR_INVALID;
			goto undo;
		}
		len = strlen(pe->text);
		pos = child_find(set, node_at(set, cur), pe->type, pe->text,
				 len, &found);
		if (found) {
			cur = kid_off(node_at(set, cur), pos);
			set->cursor[i] = cur;
			continue;
		}
		if ((error = pe_store(set, pe, len, &child)) < 0)
			goto undo;
		if (!created) {
			first_parent = cur;
			first_pos = pos;
		}
		if ((error = child_insert(set, cur, pos, &child, &cur)) < 0)
			goto undo;
		set->cursor[i] = cur;
		created = true;
	}
	set->ncursor = (uint32_t)path->len;
	n = node_at(set, cur);
	if (!node_member(n)) {
		n->meta |= META_MEMBER;
		set->members++;
	}
	return 0;
undo:
	set->ncursor = 0;
	if (created) {
		struct node *pn = node_at(set, first_parent);
		struct node *kids = node_kids(set, pn);

		memmove(&kids[first_pos], &kids[first_pos + 1],
			(pn->nkids - first_pos - 1) * sizeof(*kids));
		pn->nkids--;
	}
	return error;
}

/* The node at a path, or NULL. */
static const struct node *lookup(const struct diff_fieldset *set,
				 const struct diff_path *path)
{
	const struct node *n;
	size_t i, pos;
	bool found;

	if (!set || !set->mem || !path || (path->len && !path->pe))
		return NULL;
	n = node_at(set, 0);
	for (i = 0; i < path->len; i++) {
		const struct diff_pe *pe = &path->pe[i];

		if ((unsigned)pe->type > DIFF_PE_INDEX || !pe->text)
			return NULL;
		pos = child_find(set, n, pe->type, pe->text, strlen(pe->text),
				 &found);
		if (!found)
			return NULL;
		n = &node_kids(set, n)[pos];
	}
	return n;
}

bool diff_fieldset_has(const struct diff_fieldset *set,
		       const struct diff_path *path)
{
	const struct node *n = lookup(set, path);

	return n && node_member(n);
}

static bool subtree_has_member(const struct diff_fieldset *s,
			       const struct node *n)
{
	uint32_t i;

	if (node_member(n))
		return true;
	for (i = 0; i < n->nkids; i++)
		if (subtree_has_member(s, &node_kids(s, n)[i]))
			return true;
	return false;
}

bool diff_fieldset_has_prefix(const struct diff_fieldset *set,
			      const struct diff_path *prefix)
{
	const struct node *n = lookup(set, prefix);

	return n && subtree_has_member(set, n);
}

bool diff_fieldset_empty(const struct diff_fieldset *set)
{
	return !set || !set->members;
}

size_t diff_fieldset_size(const struct diff_fieldset *set)
{
	return set ? set->members : 0;
}

/* Same type and text (the usual outcome when two sets are compared). */
static inline bool same_element(const struct diff_fieldset *A,
				const struct node *a,
				const struct diff_fieldset *B,
				const struct node *b)
{
	const uint32_t mask = META_LEN | 3u << META_TYPE_SHIFT;

	return !((a->meta ^ b->meta) & mask) &&
	       !memcmp(node_text(A, a), node_text(B, b), node_len(a));
}

/*
 * Does every member under a (in A) have its counterpart under b (in B,
 * NULL: nothing there)? With `both`, the other way round too. The child
 * arrays are merged in order, as build() does, without building anything.
 */
static bool node_within(const struct diff_fieldset *A, const struct node *a,
			const struct diff_fieldset *B, const struct node *b,
			bool both)
{
	const struct node *ak = a->nkids ? node_kids(A, a) : NULL;
	const struct node *bk = b && b->nkids ? node_kids(B, b) : NULL;
	size_t na = ak ? a->nkids : 0, nb = bk ? b->nkids : 0, i = 0, j = 0;
	int c;

	if (node_member(a) && !(b && node_member(b)))
		return false;
	if (both && b && node_member(b) && !node_member(a))
		return false;
	while (i < na || j < nb) {
		if (i < na && j < nb)
			c = same_element(A, &ak[i], B, &bk[j])
				    ? 0
				    : node_cmp(A, &ak[i], B, &bk[j]);
		else
			c = i < na ? -1 : 1;
		if (c < 0) {
			if (subtree_has_member(A, &ak[i++]))
				return false;
		} else if (c > 0) {
			if (both && subtree_has_member(B, &bk[j]))
				return false;
			j++;
		} else if (!node_within(A, &ak[i++], B, &bk[j++], both)) {
			return false;
		}
	}
	return true;
}

static bool set_within(const struct diff_fieldset *a,
		       const struct diff_fieldset *b, bool both)
{
	bool ea = diff_fieldset_empty(a), eb = diff_fieldset_empty(b);

	if (ea || eb)
		return ea && (eb || !both);
	return node_within(a, node_at(a, 0), b, node_at(b, 0), both);
}

bool diff_fieldset_subset(const struct diff_fieldset *a,
			  const struct diff_fieldset *b)
{
	return diff_fieldset_size(a) <= diff_fieldset_size(b) &&
	       set_within(a, b, false);
}

bool diff_fieldset_equal(const struct diff_fieldset *a,
			 const struct diff_fieldset *b)
{
	return diff_fieldset_size(a) == diff_fieldset_size(b) &&
	       set_within(a, b, true);
}

/* --- set algebra --- */

enum setop { OP_UNION, OP_INTERSECT, OP_DIFFERENCE };

struct builder {
	struct diff_fieldset *out;
	struct nstack st;
};

/*
 * Build into *res (whose text the caller set) the op of the nodes a and b
 * (either may be NULL), children first; empty children are dropped and the
 * arena space they took is given back.
 */
static int build(struct builder *bd, enum setop op,
		 const struct diff_fieldset *A, const struct node *a,
		 const struct diff_fieldset *B, const struct node *b,
		 struct node *res, unsigned depth)
{
	const struct node *ak = a && a->nkids ? node_kids(A, a) : NULL;
	const struct node *bk = b && b->nkids ? node_kids(B, b) : NULL;
	size_t na = ak ? a->nkids : 0, nb = bk ? b->nkids : 0;
	size_t base = bd->st.n, i = 0, j = 0;
	bool ma = a && node_member(a), mb = b && node_member(b), member;
	int error = 0, c;

	if (depth > MAX_DEPTH)
		return ERR_LIMIT;
	member = op == OP_UNION	      ? ma || mb
		 : op == OP_INTERSECT ? ma && mb
				      : ma && !mb;
	while (i < na || j < nb) {
		const struct node *ca = NULL, *cb = NULL, *src;
		const struct diff_fieldset *ss;
		struct node child;
		uint32_t mark = bd->out->used;

		if (i < na && j < nb)
			c = node_cmp(A, &ak[i], B, &bk[j]);
		else
			c = i < na ? -1 : 1;
		if (c <= 0)
			ca = &ak[i++];
		if (c >= 0)
			cb = &bk[j++];
		if ((op == OP_INTERSECT && !(ca && cb)) ||
		    (op == OP_DIFFERENCE && !ca))
			continue;
		src = ca ? ca : cb;
		ss = ca ? A : B;
		if ((error = arena_text(bd->out, node_text(ss, src),
					node_len(src), &child.text)) < 0)
			goto out;
		child.meta = src->meta & (META_LEN | 3u << META_TYPE_SHIFT);
		child.kids = child.nkids = 0;
		if ((error = build(bd, op, A, ca, B, cb, &child, depth + 1)) <
		    0)
			goto out;
		if (!node_member(&child) && !child.nkids)
			bd->out->used = mark;
		else if ((error = nstack_push(&bd->st, &child)) < 0)
			goto out;
	}
	if ((error = nstack_pop_into(bd->out, &bd->st, base, res)) < 0)
		goto out;
	if (member) {
		res->meta |= META_MEMBER;
		bd->out->members++;
	}
out:
	bd->st.n = base;
	return error;
}

static struct diff_fieldset *setop(const struct diff_fieldset *a,
				   const struct diff_fieldset *b, enum setop op)
{
	_Alignas(16) char scratch[SCRATCH];
	const struct node *ra = a && a->mem ? node_at(a, 0) : NULL;
	const struct node *rb = b && b->mem ? node_at(b, 0) : NULL;
	struct diff_fieldset tmp, *set = NULL;
	struct node root = {0};
	struct builder bd;

	if (!ra && !rb)
		return diff_fieldset_new();
	scratch_init(&tmp, scratch, sizeof(scratch));
	bd.out = &tmp;
	nstack_init(&bd.st);
	if (arena_root(&tmp) == 0 &&
	    build(&bd, op, a, ra, b, rb, &root, 0) == 0) {
		*node_at(&tmp, 0) = root;
		set = scratch_finish(&tmp);
	}
	nstack_release(&bd.st);
	scratch_release(&tmp);
	return set;
}

struct diff_fieldset *diff_fieldset_union(const struct diff_fieldset *a,
					  const struct diff_fieldset *b)
{
	return setop(a, b, OP_UNION);
}

struct diff_fieldset *diff_fieldset_intersect(const struct diff_fieldset *a,
					      const struct diff_fieldset *b)
{
	return setop(a, b, OP_INTERSECT);
}

struct diff_fieldset *diff_fieldset_difference(const struct diff_fieldset *a,
					       const struct diff_fieldset *b)
{
	return setop(a, b, OP_DIFFERENCE);
}

/* --- walk --- */

struct walker {
	const struct diff_fieldset *s;
	int (*fn)(const struct diff_path *path, void *data);
	void *data;
	struct diff_pe pe[MAX_DEPTH + 1];
};

static int walk_node(struct walker *w, const struct node *n, size_t depth)
{
	struct diff_path path = {w->pe, depth};
	uint32_t i;
	int r;

	if (node_member(n) && (r = w->fn(&path, w->data)))
		return r;
	if (depth >= MAX_DEPTH + 1)
		return 0;
	for (i = 0; i < n->nkids; i++) {
		const struct node *k = &node_kids(w->s, n)[i];

		w->pe[depth].type = (enum diff_pe_type)node_type(k);
		w->pe[depth].text = node_text(w->s, k);
		if ((r = walk_node(w, k, depth + 1)))
			return r;
	}
	return 0;
}

int diff_fieldset_walk(const struct diff_fieldset *set,
		       int (*fn)(const struct diff_path *path, void *data),
		       void *data)
{
	struct walker *w;
	int r;

	if (!set || !set->mem || !set->members)
		return 0;
	if (!(w = malloc(sizeof(*w))))
		return ERR_NOMEM;
	w->s = set;
	w->fn = fn;
	w->data = data;
	r = walk_node(w, node_at(set, 0), 0);
	free(w);
	return r;
}

/* --- path printing --- */

/* The end of the JSON value at p (canonical text), or NULL. */
static const char *skip_value(const char *p, const char *end)
{
	int depth = 0;

	while (p < end) {
		switch (*p) {
		case '"':
			for (p++; p < end && *p != '"'; p++)
				if (*p == '\\')
					p++;
			if (p >= end)
				return NULL;
			p++;
			if (!depth)
				return p;
			continue;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (!depth)
				return p;
			if (!--depth)
				return p + 1;
			break;
		case ',':
		case ':':
			if (!depth)
				return p;
			break;
		}
		p++;
	}
	return depth ? NULL : p;
}

/*
 * [name="web",port=80] from {"name":"web","port":80}; 1 when the text is
 * not such an object.
 */
static int format_key(const char *text, struct buf *out)
{
	const char *p = text, *end = text + strlen(text), *v;
	struct sdec d;
	int c, error;

	if (p >= end || *p++ != '{')
		return 1;
	if ((error = buf_addch(out, '[')) < 0)
		return error;
	if (p < end && *p == '}')
		return ++p == end ? buf_addch(out, ']') : 1;
	for (;;) {
		if (p >= end || *p != '"')
			return 1;
		d.p = p + 1;
		d.end = end;
		d.npend = d.ipend = 0;
		while ((c = sdec_next(&d)) >= 0)
			if ((error = buf_addch(out, (char)c)) < 0)
				return error;
		if (c == -2)
			return 1;
		p = d.p;
		if (p >= end || *p++ != ':')
			return 1;
		if (!(v = skip_value(p, end)) || v == p)
			return 1;
		if ((error = buf_addch(out, '=')) < 0 ||
		    (error = buf_add(out, p, (size_t)(v - p))) < 0)
			return error;
		p = v;
		if (p < end && *p == ',') {
			p++;
			if ((error = buf_addch(out, ',')) < 0)
				return error;
			continue;
		}
		if (p < end && *p == '}' && p + 1 == end)
			return buf_addch(out, ']');
		return 1;
	}
}

int diff_path_format(const struct diff_path *path, struct buf *out)
{
	size_t start = out->len, i, mark;
	int error = 0;

	if (!path || (path->len && !path->pe))
		return ERR_INVALID;
	for (i = 0; i < path->len && !error; i++) {
		const struct diff_pe *pe = &path->pe[i];
		const char *t = pe->text ? pe->text : "";

		switch (pe->type) {
		case DIFF_PE_FIELD:
			if (!(error = buf_addch(out, '.')))
				error = buf_adds(out, t);
			break;
		case DIFF_PE_KEY:
			mark = out->len;
			if ((error = format_key(t, out)) == 1) {
				/* not canonical: show the text as it is */
				buf_truncate(out, mark);
				error = buf_addf(out, "[%s]", t);
			}
			break;
		case DIFF_PE_VALUE:
			error = buf_addf(out, "[=%s]", t);
			break;
		case DIFF_PE_INDEX:
			error = buf_addf(out, "[%s]", t);
			break;
		default:
			error = ERR_INVALID;
		}
	}
	if (error < 0)
		buf_truncate(out, start);
	return error < 0 ? error : 0;
}
