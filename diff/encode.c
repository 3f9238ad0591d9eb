/*
 * encode: the JSON and YAML encoders behind `syncd render -o json|yaml`,
 * drift reports and request bodies (see diff.h).
 *
 * Both print byte for byte what kubectl prints for the same object:
 *
 * - JSON as Go's encoding/json (json.MarshalIndent): keys sorted bytewise,
 *   HTML-safe string escapes, reals in the shortest form that reads back.
 *
 * - YAML as sigs.k8s.io/yaml, which kubectl uses: the object is first
 *   written as JSON, that text is read back by go-yaml v2 and written out by
 *   go-yaml v2's Marshal. So a number prints as whatever go-yaml v2 reads
 *   its JSON text as (the real 1e20 is "100000000000000000000" in JSON, too
 *   big for an int64, so YAML gets the float 1e+20); a string is quoted when
 *   go-yaml v2's YAML 1.1 resolver would read it plain as something else
 *   ("yes", "1.5", "2001-12-14", "1:20"); map keys are sorted the way
 *   go-yaml v2 sorts them (letters after other characters, runs of digits by
 *   value: "a_b" < "a2" < "a10" < "aB"). The rest (which scalar style the
 *   text allows, folding at 80 columns, indentation) is a port of the part
 *   of go-yaml v2's emitter, itself a port of libyaml's emitter.c, that
 *   block-style output goes through. The functions below keep the names of
 *   that emitter's functions so they can be compared with it.
 *
 * Where kubectl cannot print a value we still print it faithfully: kubectl
 * -o yaml fails on strings holding U+007F-U+009F (other than U+0085) or
 * U+FFFE/U+FFFF, and turns U+0085 into a space; we emit them escaped.
 *
 * Both encoders recurse, bounded by ENCODE_MAX_DEPTH. On error `out` is
 * left as it was.
 */
#include "diff/diff.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h" /* last */

/* Containers nested deeper than this fail with ERR_LIMIT. */
#define ENCODE_MAX_DEPTH 1000

static const char hex_lower[] = "0123456789abcdef";
static const char hex_upper[] = "0123456789ABCDEF";
static const char spaces64[] =
	"                                                                ";
static const char nl_spaces[] =
	"\n                                                                ";

/*
 * Append to `b`, recording the first failure in *error (later appends are
 * skipped). The common case, room already there, skips buf_add().
 */
static inline void out_add(struct buf *b, int *error, const void *s, size_t n)
{
	int rc;

	if (*error)
		return;
	if (b->len + n < b->alloc && (!b->cap || b->len + n <= b->cap)) {
		memcpy(b->ptr + b->len, s, n);
		b->len += n;
		b->ptr[b->len] = '\0';
		return;
	}
	if ((rc = buf_add(b, s, n)) < 0)
		*error = rc;
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/*
 * UTF-8
 */

/*
 * Decode one character as Go's utf8.DecodeRune does: an invalid or short
 * sequence (overlong, surrogate, above U+10FFFF) yields U+FFFD and size 1.
 */
size_t diff_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xBF;
	size_t need, k;
	uint32_t v;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		need = 1;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		v = c & 0x0F;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		v = c & 0x07;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		goto bad;
	}
	if (n < need + 1 || s[1] < lo || s[1] > hi)
		goto bad;
	v = (v << 6) | (s[1] & 0x3F);
	for (k = 2; k <= need; k++) {
		if (s[k] < 0x80 || s[k] > 0xBF)
			goto bad;
		v = (v << 6) | (s[k] & 0x3F);
	}
	*cp = v;
	return need + 1;
bad:
	*cp = 0xFFFD;
	return 1;
}

/*
 * Go's json.Marshal replaces every invalid byte by U+FFFD, so that is what
 * the YAML side sees too. Returns the copy made in `tmp`, NULL when out of
 * memory.
 */
static const char *utf8_sanitize(const char *s, size_t *n, struct buf *tmp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, w;
	uint32_t cp;

	buf_reset(tmp);
	while (i < *n) {
		w = diff_utf8_decode(u + i, *n - i, &cp);
		if (cp == 0xFFFD && w == 1) {
			if (buf_add(tmp, "\xEF\xBF\xBD", 3) < 0)
				return NULL;
		} else if (buf_add(tmp, s + i, w) < 0) {
			return NULL;
		}
		i += w;
	}
	*n = tmp->len;
	return buf_cstr(tmp);
}

/*
 * Object keys
 */

struct okey {
	const char *key;
	size_t len;
	json_t *val;
};

/*
 * The keys of every object on the current path, innermost last: each
 * object pushes its keys, sorts them, walks them and pops them.
 */
struct keystack {
	struct okey *v;
	size_t len;
	size_t alloc;
	struct okey *tmp; /* merge sort scratch */
	size_t tmp_alloc;
};

static void keystack_release(struct keystack *ks)
{
	free(ks->v);
	free(ks->tmp);
}

static int keystack_push(struct keystack *ks, json_t *obj, size_t *start)
{
	size_t n = json_object_size(obj), alloc;
	struct okey *p;
	void *it;

	if (ks->len + n > ks->alloc) {
		alloc = ks->alloc ? ks->alloc : 64;
		while (alloc < ks->len + n)
			alloc *= 2;
		p = realloc(ks->v, alloc * sizeof(*p));
		if (!p)
			return ERR_NOMEM;
		ks->v = p;
		ks->alloc = alloc;
	}
	*start = ks->len;
	for (it = json_object_iter(obj); it;
	     it = json_object_iter_next(obj, it)) {
		p = &ks->v[ks->len++];
		p->key = json_object_iter_key(it);
		p->len = json_object_iter_key_len(it);
		p->val = json_object_iter_value(it);
	}
	return 0;
}

typedef bool (*key_less_fn)(const struct okey *a, const struct okey *b);

/*
 * A stable merge sort (insertion sort for short runs). go-yaml's key order
 * is not transitive for some key sets ("a9" < "a10" < "a1b" < "a9"); qsort
 * must not be given such an order, a merge sort copes with anything.
 */
static int keys_sort(struct keystack *ks, struct okey *v, size_t n,
		     key_less_fn less)
{
	size_t width, lo, mid, hi, i, j, k;
	struct okey t, *tmp;

	if (n <= 16) {
		for (i = 1; i < n; i++) {
			t = v[i];
			for (j = i; j > 0 && less(&t, &v[j - 1]); j--)
				v[j] = v[j - 1];
			v[j] = t;
		}
		return 0;
	}
	if (ks->tmp_alloc < n) {
		tmp = realloc(ks->tmp, n * sizeof(*tmp));
		if (!tmp)
			return ERR_NOMEM;
		ks->tmp = tmp;
		ks->tmp_alloc = n;
	}
	for (width = 1; width < n; width *= 2) {
		for (lo = 0; lo < n; lo += 2 * width) {
			mid = lo + width < n ? lo + width : n;
			hi = lo + 2 * width < n ? lo + 2 * width : n;
			i = lo;
			j = mid;
			k = lo;
			while (i < mid && j < hi)
				ks->tmp[k++] =
					less(&v[j], &v[i]) ? v[j++] : v[i++];
			while (i < mid)
				ks->tmp[k++] = v[i++];
			while (j < hi)
				ks->tmp[k++] = v[j++];
		}
		memcpy(v, ks->tmp, n * sizeof(*v));
	}
	return 0;
}

/* Go's string comparison: bytewise, shorter prefix first. */
static bool key_less_bytes(const struct okey *a, const struct okey *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int c;

	if (n && a->key[0] != b->key[0])
		return (unsigned char)a->key[0] < (unsigned char)b->key[0];
	c = memcmp(a->key, b->key, n);

	return c < 0 || (c == 0 && a->len < b->len);
}

static bool in_ranges(uint32_t c, const uint32_t (*r)[2], size_t n)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (c < r[mid][0])
			hi = mid;
		else if (c > r[mid][1])
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

static bool go_is_letter(uint32_t c);
static bool go_is_digit(uint32_t c);

/*
 * Start of the character that ends at byte offset i (i > 0), as decoding
 * from the start would find it: a stray byte is a character of its own.
 */
static size_t utf8_prev(const unsigned char *s, size_t i)
{
	size_t j = i - 1;
	uint32_t cp;

	while (j > 0 && i - j < 4 && (s[j] & 0xC0) == 0x80)
		j--;
	return j + diff_utf8_decode(s + j, i - j, &cp) == i ? j : i - 1;
}

/* int64 arithmetic that wraps like Go's. */
static int64_t go_wrap(uint64_t u)
{
	return u <= INT64_MAX ? (int64_t)u : -(int64_t)(UINT64_MAX - u) - 1;
}

/*
 * go-yaml v2's keyList.Less for two string keys, on runes: letters sort
 * after everything else, runs of digits compare by value (then by length).
 */
static bool key_less_yaml(const struct okey *ka, const struct okey *kb)
{
	const unsigned char *a = (const unsigned char *)ka->key;
	const unsigned char *b = (const unsigned char *)kb->key;
	size_t an_ = ka->len, bn_ = kb->len, ia = 0, ib = 0, wa, wb, j, k;
	size_t runa, runb;
	uint32_t ca, cb, c;
	uint64_t an, bn;
	bool al, bl;

	while (ia < an_ && ib < bn_) {
		if (a[ia] == b[ib] && a[ia] < 0x80) {
			ia++;
			ib++;
			continue;
		}
		wa = diff_utf8_decode(a + ia, an_ - ia, &ca);
		wb = diff_utf8_decode(b + ib, bn_ - ib, &cb);
		if (ca == cb) {
			ia += wa;
			ib += wb;
			continue;
		}
		al = go_is_letter(ca);
		bl = go_is_letter(cb);
		if (al && bl)
			return ca < cb;
		if (al || bl)
			return bl;
		an = 0;
		bn = 0;
		if (ca == '0' || cb == '0') {
			/* the runes before i are the same in both keys */
			j = ia;
			while (j > 0) {
				j = utf8_prev(a, j);
				diff_utf8_decode(a + j, an_ - j, &c);
				if (!go_is_digit(c))
					break;
				if (c != '0') {
					an = 1;
					bn = 1;
					break;
				}
			}
		}
		for (k = ia, runa = 0; k < an_; k += wa, runa++) {
			wa = diff_utf8_decode(a + k, an_ - k, &c);
			if (!go_is_digit(c))
				break;
			an = an * 10 + (uint64_t)(int64_t)((int32_t)c - '0');
		}
		for (k = ib, runb = 0; k < bn_; k += wb, runb++) {
			wb = diff_utf8_decode(b + k, bn_ - k, &c);
			if (!go_is_digit(c))
				break;
			bn = bn * 10 + (uint64_t)(int64_t)((int32_t)c - '0');
		}
		if (an != bn)
			return go_wrap(an) < go_wrap(bn);
		if (runa != runb)
			return runa < runb;
		return ca < cb;
	}
	return ia >= an_ && ib < bn_;
}

/*
 * Numbers
 */

/* A decimal 0.d[0]d[1]...d[nd-1] x 10^dp, as Go's strconv keeps it. */
struct decimal {
	char d[32];
	int nd;
	int dp;
};

/* Parse "%.*e" output ("d.ddde+XX") of a positive number. */
static void decimal_from_e(struct decimal *g, const char *s)
{
	g->nd = 0;
	for (; *s && *s != 'e'; s++)
		if (is_digit(*s))
			g->d[g->nd++] = *s;
	g->dp = (int)strtol(s + 1, NULL, 10) + 1;
	while (g->nd > 1 && g->d[g->nd - 1] == '0')
		g->nd--;
}

static double decimal_value(const struct decimal *g)
{
	char s[48];

	snprintf(s, sizeof(s), "0.%.*se%d", g->nd, g->d, g->dp);
	return strtod(s, NULL);
}

/* Step the last digit up or down by one, carrying. */
static void decimal_step(struct decimal *g, int nd, bool up)
{
	int i;

	while (g->nd < nd)
		g->d[g->nd++] = '0';
	if (up) {
		for (i = nd - 1; i >= 0 && g->d[i] == '9'; i--)
			g->d[i] = '0';
		if (i >= 0) {
			g->d[i]++;
		} else {
			g->d[0] = '1';
			g->dp++;
		}
	} else {
		for (i = nd - 1; i >= 0 && g->d[i] == '0'; i--)
			g->d[i] = '9';
		g->d[i]--;
		if (g->d[0] == '0') {
			/* 1.00e6 - 1 unit is 9.99e5: the grid is finer below */
			memset(g->d, '9', (size_t)nd);
			g->dp--;
		}
	}
	while (g->nd > 1 && g->d[g->nd - 1] == '0')
		g->nd--;
}

/*
 * The shortest decimal that reads back as v (finite, > 0), and of those the
 * closest to v: what Go's strconv.FormatFloat(v, _, -1, 64) prints. The
 * correctly rounded p-digit decimal is the closest; when it misses v's
 * rounding interval (the interval is lopsided at powers of two) the
 * p-digit neighbour on v's other side may still be inside it.
 */
static void decimal_shortest(double v, struct decimal *g)
{
	char s[48];
	struct decimal alt;
	double r;
	int p;

	for (p = 1; p <= 17; p++) {
		snprintf(s, sizeof(s), "%.*e", p - 1, v);
		decimal_from_e(g, s);
		r = strtod(s, NULL);
		if (r == v)
			return;
		alt = *g;
		decimal_step(&alt, p, r < v);
		if (decimal_value(&alt) == v) {
			*g = alt;
			return;
		}
	}
}

/* strconv's %e with the shortest digits: "1.5e+06". */
static size_t fmt_e(char *out, bool neg, const struct decimal *g)
{
	size_t n = 0;
	int exp = g->dp - 1;

	if (neg)
		out[n++] = '-';
	out[n++] = g->d[0];
	if (g->nd > 1) {
		out[n++] = '.';
		memcpy(out + n, g->d + 1, (size_t)g->nd - 1);
		n += (size_t)g->nd - 1;
	}
	out[n++] = 'e';
	out[n++] = exp < 0 ? '-' : '+';
	if (exp < 0)
		exp = -exp;
	if (exp >= 100)
		out[n++] = (char)('0' + exp / 100);
	out[n++] = (char)('0' + exp / 10 % 10);
	out[n++] = (char)('0' + exp % 10);
	out[n] = '\0';
	return n;
}

/* strconv's %f with the shortest digits: "0.000015", "100". */
static size_t fmt_f(char *out, bool neg, const struct decimal *g)
{
	size_t n = 0;
	int i, prec = g->nd - g->dp > 0 ? g->nd - g->dp : 0;

	if (neg)
		out[n++] = '-';
	if (g->dp > 0) {
		for (i = 0; i < g->dp; i++)
			out[n++] = i < g->nd ? g->d[i] : '0';
	} else {
		out[n++] = '0';
	}
	if (prec > 0) {
		out[n++] = '.';
		for (i = 1; i <= prec; i++) {
			int j = g->dp + i - 1;

			out[n++] = j >= 0 && j < g->nd ? g->d[j] : '0';
		}
	}
	out[n] = '\0';
	return n;
}

/*
 * A finite real as Go's encoding/json writes a float64: %f between 1e-6
 * and 1e21, else %e with "e-07" shortened to "e-7". `out` holds 40 bytes.
 */
/* Room for any number these write. */
#define NUM_SIZE 48

static size_t fmt_json_real(char out[NUM_SIZE], double v)
{
	struct decimal g;
	double a = fabs(v);
	size_t n;

	if (v == 0) {
		snprintf(out, NUM_SIZE, "%s", signbit(v) ? "-0" : "0");
		return strlen(out);
	}
	decimal_shortest(a, &g);
	if (a < 1e-6 || a >= 1e21) {
		n = fmt_e(out, v < 0, &g);
		if (n >= 4 && out[n - 4] == 'e' && out[n - 3] == '-' &&
		    out[n - 2] == '0') {
			out[n - 2] = out[n - 1];
			out[--n] = '\0';
		}
		return n;
	}
	return fmt_f(out, v < 0, &g);
}

/* strconv.FormatFloat(v, 'g', -1, 64), with go-yaml's .inf/.nan. */
static size_t fmt_yaml_float(char out[NUM_SIZE], double v)
{
	struct decimal g;
	int exp;

	if (isnan(v)) {
		snprintf(out, NUM_SIZE, "%s", ".nan");
		return 4;
	}
	if (isinf(v)) {
		snprintf(out, NUM_SIZE, "%s", v < 0 ? "-.inf" : ".inf");
		return strlen(out);
	}
	if (v == 0) {
		snprintf(out, NUM_SIZE, "%s", signbit(v) ? "-0" : "0");
		return strlen(out);
	}
	decimal_shortest(fabs(v), &g);
	exp = g.dp - 1;
	if (exp < -4 || exp >= 6)
		return fmt_e(out, v < 0, &g);
	return fmt_f(out, v < 0, &g);
}

/*
 * A real as kubectl's YAML shows it: its JSON text as go-yaml v2 reads it
 * back, i.e. an int64 or uint64 when that text is an integer that fits,
 * else a float.
 */
static size_t fmt_yaml_real(char out[NUM_SIZE], double v)
{
	char js[NUM_SIZE];
	long long ll;
	unsigned long long ull;

	if (!isfinite(v))
		return fmt_yaml_float(out, v);
	fmt_json_real(js, v);
	if (!strpbrk(js, ".e")) {
		errno = 0;
		ll = strtoll(js, NULL, 10);
		if (!errno)
			return (size_t)snprintf(out, NUM_SIZE, "%lld", ll);
		errno = 0;
		ull = strtoull(js, NULL, 10);
		if (js[0] != '-' && !errno)
			return (size_t)snprintf(out, NUM_SIZE, "%llu", ull);
	}
	return fmt_yaml_float(out, v);
}

static size_t fmt_int(char *out, json_int_t v)
{
	char tmp[24];
	size_t n = 0, k = 0;
	unsigned long long u =
		v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do {
		tmp[k++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		out[n++] = '-';
	while (k)
		out[n++] = tmp[--k];
	out[n] = '\0';
	return n;
}

/*
 * JSON
 */

struct jenc {
	struct buf *out;
	int indent;
	int error;
	struct keystack ks;
	/* diff_json_dump_items(): the array written from item() instead. */
	const json_t *items;
	size_t nitems;
	json_t *(*item)(size_t i, void *ctx);
	void *item_ctx;
};

static void j_add(struct jenc *e, const char *s, size_t n)
{
	out_add(e->out, &e->error, s, n);
}

static void j_newline(struct jenc *e, int depth)
{
	size_t n = (size_t)e->indent * (size_t)depth, k;

	if (n < 64) {
		j_add(e, nl_spaces, n + 1);
		return;
	}
	j_add(e, "\n", 1);
	for (; n; n -= k) {
		k = n < 64 ? n : 64;
		j_add(e, spaces64, k);
	}
}

/* ASCII that Go's encoding/json writes as is (htmlSafeSet). */
static const bool json_safe[128] = {
	[' '] = 1,  ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['\''] = 1,
	['('] = 1,  [')'] = 1, ['*'] = 1, ['+'] = 1, [','] = 1, ['-'] = 1,
	['.'] = 1,  ['/'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1,
	['4'] = 1,  ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
	[':'] = 1,  [';'] = 1, ['='] = 1, ['?'] = 1, ['@'] = 1, ['A'] = 1,
	['B'] = 1,  ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1,
	['H'] = 1,  ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1,
	['N'] = 1,  ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1,
	['T'] = 1,  ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1,
	['Z'] = 1,  ['['] = 1, [']'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1,
	['a'] = 1,  ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
	['g'] = 1,  ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1,
	['m'] = 1,  ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1,
	['s'] = 1,  ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
	['y'] = 1,  ['z'] = 1, ['{'] = 1, ['|'] = 1, ['}'] = 1, ['~'] = 1,
	[0x7F] = 1,
};

/*
 * A string as Go's encoding/json writes it with HTML escaping (the
 * default): \" \\ \b \f \n \r \t, \u00XX for other controls and for < > &,
 * \u2028 \u2029, \ufffd for each invalid byte; the rest raw.
 */
static void j_string(struct jenc *e, const char *str, size_t n,
		     const char *suffix, size_t suffix_len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, start = 0, w;
	char esc[6] = {'\\', 'u', '0', '0', 0, 0};
	uint32_t cp;
	unsigned char c;
	struct buf *b = e->out;

	while (i < n && s[i] < 0x80 && json_safe[s[i]])
		i++;
	if (e->error)
		return;
	if (b->alloc - b->len < n + suffix_len + 3) {
		int rc = buf_grow(b, n + suffix_len + 2);

		if (rc < 0) {
			e->error = rc;
			return;
		}
	}
	if (i == n && (!b->cap || b->len + n + 2 + suffix_len <= b->cap)) {
		/* nothing to escape: the common case, in one copy */
		char *p = b->ptr + b->len;

		*p++ = '"';
		memcpy(p, str, n);
		p += n;
		*p++ = '"';
		memcpy(p, suffix, suffix_len);
		b->len += n + 2 + suffix_len;
		b->ptr[b->len] = '\0';
		return;
	}
	j_add(e, "\"", 1);
	while (i < n) {
		c = s[i];
		if (c < 0x80) {
			if (json_safe[c]) {
				i++;
				continue;
			}
			j_add(e, str + start, i - start);
			switch (c) {
			case '"':
				j_add(e, "\\\"", 2);
				break;
			case '\\':
				j_add(e, "\\\\", 2);
				break;
			case '\b':
				j_add(e, "\\b", 2);
				break;
			case '\f':
				j_add(e, "\\f", 2);
				break;
			case '\n':
				j_add(e, "\\n", 2);
				break;
			case '\r':
				j_add(e, "\\r", 2);
				break;
			case '\t':
				j_add(e, "\\t", 2);
				break;
			default:
				esc[4] = hex_lower[c >> 4];
				esc[5] = hex_lower[c & 0xF];
				j_add(e, esc, 6);
			}
			start = ++i;
			continue;
		}
		w = diff_utf8_decode(s + i, n - i, &cp);
		if ((cp == 0xFFFD && w == 1) || cp == 0x2028 || cp == 0x2029) {
			j_add(e, str + start, i - start);
			if (w == 1)
				j_add(e, "\\ufffd", 6);
			else
				j_add(e, cp == 0x2028 ? "\\u2028" : "\\u2029",
				      6);
			start = i + w;
		}
		i += w;
	}
	j_add(e, str + start, n - start);
	j_add(e, "\"", 1);
	j_add(e, suffix, suffix_len);
}

static int j_value(struct jenc *e, json_t *v, int depth)
{
	char num[NUM_SIZE];
	size_t i, n, start;
	int error = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
	case JSON_ARRAY:
		if (depth >= ENCODE_MAX_DEPTH)
			return ERR_LIMIT;
		break;
	case JSON_STRING:
		j_string(e, json_string_value(v), json_string_length(v), "", 0);
		return e->error;
	case JSON_INTEGER:
		j_add(e, num, fmt_int(num, json_integer_value(v)));
		return e->error;
	case JSON_REAL:
		if (!isfinite(json_real_value(v)))
			return ERR_INVALID;
		j_add(e, num, fmt_json_real(num, json_real_value(v)));
		return e->error;
	case JSON_TRUE:
		j_add(e, "true", 4);
		return e->error;
	case JSON_FALSE:
		j_add(e, "false", 5);
		return e->error;
	case JSON_NULL:
		j_add(e, "null", 4);
		return e->error;
	}

	if (json_is_array(v)) {
		bool made = e->items && v == e->items;

		n = made ? e->nitems : json_array_size(v);
		j_add(e, "[", 1);
		for (i = 0; i < n && !error; i++) {
			json_t *x = made ? e->item(i, e->item_ctx)
					 : json_array_get(v, i);

			if (!x)
				return ERR_NOMEM;
			if (i)
				j_add(e, ",", 1);
			if (e->indent)
				j_newline(e, depth + 1);
			error = j_value(e, x, depth + 1);
			if (made)
				json_decref(x);
		}
		if (n && e->indent)
			j_newline(e, depth);
		j_add(e, "]", 1);
		return error ? error : e->error;
	}

	if ((error = keystack_push(&e->ks, v, &start)) < 0)
		return error;
	n = e->ks.len - start;
	/* No key: nothing to sort, and ks.v may still be NULL. */
	if (n &&
	    (error = keys_sort(&e->ks, e->ks.v + start, n, key_less_bytes)) < 0)
		goto out;
	j_add(e, "{", 1);
	for (i = 0; i < n && !error; i++) {
		const struct okey *k = &e->ks.v[start + i];

		if (i)
			j_add(e, ",", 1);
		if (e->indent)
			j_newline(e, depth + 1);
		j_string(e, k->key, k->len, ": ", e->indent ? 2 : 1);
		error = j_value(e, k->val, depth + 1);
	}
	if (n && e->indent)
		j_newline(e, depth);
	j_add(e, "}", 1);
out:
	e->ks.len = start;
	return error ? error : e->error;
}

int diff_json_dump_items(const json_t *json, int indent, const json_t *items,
			 size_t n, json_t *(*item)(size_t i, void *ctx),
			 void *ctx, struct buf *out)
{
	struct jenc e = {out, indent, 0, {NULL, 0, 0, NULL, 0},
			 items, n, item, ctx};
	size_t len0 = out->len;
	int error;

	if (!json || indent < 0)
		return ERR_INVALID;
	error = j_value(&e, (json_t *)json, 0);
	keystack_release(&e.ks);
	if (error < 0)
		buf_truncate(out, len0);
	return error;
}

int diff_json_dump(const json_t *json, int indent, struct buf *out)
{
	return diff_json_dump_items(json, indent, NULL, 0, NULL, NULL, out);
}

/*
 * YAML: which strings go-yaml v2 prints plain (rules in yamlscalar.c)
 */

/*
 * go-yaml's isBase60Float:
 * ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
 */
static bool yaml_is_base60_float(const char *s, size_t n)
{
	size_t i = 0, groups = 0;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	if (i >= n || !is_digit(s[i]))
		return false;
	while (i < n && (is_digit(s[i]) || s[i] == '_'))
		i++;
	while (i < n && s[i] == ':') {
		i++;
		if (i + 1 < n && s[i] >= '0' && s[i] <= '5' &&
		    is_digit(s[i + 1]))
			i += 2;
		else if (i < n && is_digit(s[i]))
			i++;
		else
			return false;
		groups++;
	}
	if (!groups)
		return false;
	if (i < n && s[i] == '.')
		while (++i < n && (is_digit(s[i]) || s[i] == '_'))
			;
	return i == n;
}

/*
 * Whether go-yaml v2 would marshal this string plain: its resolver reads
 * the plain text back as a string (diff_yaml_resolve(), with the zone
 * offset range check of the Go that kubectl is built with) and it is no
 * base-60 float ("1:20"), which go-yaml v2's encoder quotes although its
 * resolver no longer reads them. 1 yes, 0 no, ERR_NOMEM.
 */
static int yaml_plain_is_str(const char *s, size_t n, struct buf *tmp)
{
	struct diff_yaml_scalar r;
	int error;

	if ((error = diff_yaml_resolve(
		     &r, s, n, DIFF_YAML_TRY_TIMESTAMP,
		     tmp)) < 0)
		return error;
	if (r.kind != DIFF_YAML_STR)
		return 0;
	return !yaml_is_base60_float(s, n);
}

/*
 * YAML: the emitter
 */

#define BEST_INDENT 2
#define BEST_WIDTH  80

enum yaml_style { Y_PLAIN, Y_SINGLE, Y_DOUBLE, Y_LITERAL };

struct yemit {
	struct buf *out;
	int error;
	int column;	 /* in characters */
	int indent;	 /* -1 before the root node */
	bool whitespace; /* the last thing written was whitespace */
	bool indention;	 /* only indentation on this line so far */
	bool mapping_context;
	bool simple_key_context;
	struct keystack ks;
	struct buf str; /* a string made valid UTF-8 */
	struct buf num; /* scratch for yaml_plain_is_str() */
};

/* What yaml_emitter_analyze_scalar found out about a scalar. */
struct yscalar {
	const unsigned char *v;
	size_t n;
	size_t chars; /* characters, i.e. columns */
	bool invalid; /* not valid UTF-8: see utf8_sanitize() */
	bool has_lf;
	bool multiline;
	bool flow_plain_allowed; /* kept as ported; only flow style reads it */
	bool block_plain_allowed;
	bool single_quoted_allowed;
	bool block_allowed;
};

static void y_add(struct yemit *e, const void *s, size_t n)
{
	out_add(e->out, &e->error, s, n);
}

static void put(struct yemit *e, char c)
{
	y_add(e, &c, 1);
	e->column++;
}

static void put_break(struct yemit *e)
{
	y_add(e, "\n", 1);
	e->column = 0;
}

static size_t width(unsigned char c)
{
	if ((c & 0x80) == 0)
		return 1;
	if ((c & 0xE0) == 0xC0)
		return 2;
	if ((c & 0xF0) == 0xE0)
		return 3;
	return 4;
}

static bool is_space(const unsigned char *s, size_t n, size_t i)
{
	return i < n && s[i] == ' ';
}

static bool is_blank(const unsigned char *s, size_t n, size_t i)
{
	return i < n && (s[i] == ' ' || s[i] == '\t');
}

static bool is_break(const unsigned char *s, size_t n, size_t i)
{
	if (i >= n)
		return false;
	return s[i] == '\r' || s[i] == '\n' ||
	       (s[i] == 0xC2 && i + 1 < n && s[i + 1] == 0x85) ||
	       (s[i] == 0xE2 && i + 2 < n && s[i + 1] == 0x80 &&
		(s[i + 2] == 0xA8 || s[i + 2] == 0xA9));
}

static bool is_blankz(const unsigned char *s, size_t n, size_t i)
{
	return is_blank(s, n, i) || is_break(s, n, i) || (i < n && !s[i]);
}

/*
 * go-yaml v2's is_bom looks at the start of the value whatever i is, so
 * in a value that starts with U+FEFF every character gets escaped.
 */
static bool is_bom(const unsigned char *s, size_t n, size_t i)
{
	(void)i;
	return n >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF;
}

/* go-yaml's is_printable: 4-byte characters (emoji) do not count. */
static bool is_printable(const unsigned char *s, size_t n, size_t i)
{
	unsigned char b = s[i], b1 = i + 1 < n ? s[i + 1] : 0;
	unsigned char b2 = i + 2 < n ? s[i + 2] : 0;

	return b == 0x0A || (b >= 0x20 && b <= 0x7E) ||
	       (b == 0xC2 && b1 >= 0xA0) || (b > 0xC2 && b < 0xED) ||
	       (b == 0xED && b1 < 0xA0) || b == 0xEE ||
	       (b == 0xEF && !(b1 == 0xBB && b2 == 0xBF) &&
		!(b1 == 0xBF && (b2 == 0xBE || b2 == 0xBF)));
}

/* ASCII that the analysis below has nothing to say about past the start. */
static const bool ascii_inert[256] = {
	['!'] = 1,  ['"'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1,
	['('] = 1,  [')'] = 1, ['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1,
	['/'] = 1,  ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1,
	['5'] = 1,  ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, [';'] = 1,
	['<'] = 1,  ['='] = 1, ['>'] = 1, ['@'] = 1, ['A'] = 1, ['B'] = 1,
	['C'] = 1,  ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
	['I'] = 1,  ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1,
	['O'] = 1,  ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1,
	['U'] = 1,  ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
	['\\'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['a'] = 1, ['b'] = 1,
	['c'] = 1,  ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
	['i'] = 1,  ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
	['o'] = 1,  ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1,
	['u'] = 1,  ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
	['|'] = 1,  ['~'] = 1,
};

static bool ascii_alnum(unsigned char c)
{
	return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static void yaml_emitter_analyze_scalar(struct yscalar *a,
					const unsigned char *v, size_t n)
{
	bool block_indicators = false, flow_indicators = false;
	bool line_breaks = false, special_characters = false;
	bool leading_space = false, leading_break = false;
	bool trailing_space = false, trailing_break = false;
	bool break_space = false, space_break = false;
	bool preceded_by_whitespace, followed_by_whitespace;
	bool previous_space = false, previous_break = false;
	size_t i, w;

	a->v = v;
	a->n = n;
	a->chars = 0;
	a->invalid = false;
	a->has_lf = false;
	if (n == 0) {
		a->multiline = false;
		a->flow_plain_allowed = false;
		a->block_plain_allowed = true;
		a->single_quoted_allowed = true;
		a->block_allowed = false;
		return;
	}
	if (n >= 3 && ((v[0] == '-' && v[1] == '-' && v[2] == '-') ||
		       (v[0] == '.' && v[1] == '.' && v[2] == '.'))) {
		block_indicators = true;
		flow_indicators = true;
	}
	preceded_by_whitespace = true;
	i = 0;
	if (ascii_alnum(v[0])) {
		/* the common "web", "IfNotPresent", "8080": no look further */
		for (i = 1; i < n && ascii_inert[v[i]]; i++)
			;
		a->chars = i;
		preceded_by_whitespace = false;
	}
	for (; i < n; i += w) {
		if (i > 0 && ascii_inert[v[i]]) {
			/* printable, not blank, no indicator after the start */
			for (w = 1; i + w < n && ascii_inert[v[i + w]]; w++)
				;
			a->chars += w;
			previous_space = false;
			previous_break = false;
			preceded_by_whitespace = false;
			continue;
		}
		a->chars++;
		w = width(v[i]);
		if (v[i] >= 0x80) {
			uint32_t cp;

			if (diff_utf8_decode(v + i, n - i, &cp) == 1) {
				/* the caller sanitizes and asks again */
				a->invalid = true;
				return;
			}
		} else if (v[i] == '\n') {
			a->has_lf = true;
		}
		followed_by_whitespace = i + w >= n || is_blank(v, n, i + w);
		if (i == 0) {
			switch (v[i]) {
			case '#':
			case ',':
			case '[':
			case ']':
			case '{':
			case '}':
			case '&':
			case '*':
			case '!':
			case '|':
			case '>':
			case '\'':
			case '"':
			case '%':
			case '@':
			case '`':
				flow_indicators = true;
				block_indicators = true;
				break;
			case '?':
			case ':':
				flow_indicators = true;
				if (followed_by_whitespace)
					block_indicators = true;
				break;
			case '-':
				if (followed_by_whitespace) {
					flow_indicators = true;
					block_indicators = true;
				}
				break;
			}
		} else {
			switch (v[i]) {
			case ',':
			case '?':
			case '[':
			case ']':
			case '{':
			case '}':
				flow_indicators = true;
				break;
			case ':':
				flow_indicators = true;
				if (followed_by_whitespace)
					block_indicators = true;
				break;
			case '#':
				if (preceded_by_whitespace) {
					flow_indicators = true;
					block_indicators = true;
				}
				break;
			}
		}
		if (!is_printable(v, n, i))
			special_characters = true;
		if (is_space(v, n, i)) {
			if (i == 0)
				leading_space = true;
			if (i + w == n)
				trailing_space = true;
			if (previous_break)
				break_space = true;
			previous_space = true;
			previous_break = false;
		} else if (is_break(v, n, i)) {
			line_breaks = true;
			if (i == 0)
				leading_break = true;
			if (i + w == n)
				trailing_break = true;
			if (previous_space)
				space_break = true;
			previous_space = false;
			previous_break = true;
		} else {
			previous_space = false;
			previous_break = false;
		}
		preceded_by_whitespace = is_blankz(v, n, i);
	}

	a->multiline = line_breaks;
	a->flow_plain_allowed = true;
	a->block_plain_allowed = true;
	a->single_quoted_allowed = true;
	a->block_allowed = true;
	if (leading_space || leading_break || trailing_space ||
	    trailing_break) {
		a->flow_plain_allowed = false;
		a->block_plain_allowed = false;
	}
	if (trailing_space)
		a->block_allowed = false;
	if (break_space) {
		a->flow_plain_allowed = false;
		a->block_plain_allowed = false;
		a->single_quoted_allowed = false;
	}
	if (space_break || special_characters) {
		a->flow_plain_allowed = false;
		a->block_plain_allowed = false;
		a->single_quoted_allowed = false;
		a->block_allowed = false;
	}
	if (line_breaks) {
		a->flow_plain_allowed = false;
		a->block_plain_allowed = false;
	}
	if (flow_indicators)
		a->flow_plain_allowed = false;
	if (block_indicators)
		a->block_plain_allowed = false;
}

/*
 * Our scalars are all implicit, untagged and without anchors, and never
 * inside a flow collection (go-yaml writes only empty ones in flow style),
 * so go-yaml's flow_level is always 0 here.
 */
static enum yaml_style yaml_emitter_select_scalar_style(const struct yemit *e,
							const struct yscalar *a,
							enum yaml_style style)
{
	if (e->simple_key_context && a->multiline)
		style = Y_DOUBLE;
	if (style == Y_PLAIN) {
		if (!a->block_plain_allowed)
			style = Y_SINGLE;
		if (a->n == 0 && e->simple_key_context)
			style = Y_SINGLE;
	}
	if (style == Y_SINGLE && !a->single_quoted_allowed)
		style = Y_DOUBLE;
	if (style == Y_LITERAL && (!a->block_allowed || e->simple_key_context))
		style = Y_DOUBLE;
	return style;
}

static void yaml_emitter_write_indent(struct yemit *e)
{
	int indent = e->indent >= 0 ? e->indent : 0, k;

	if (!e->indention || e->column > indent ||
	    (e->column == indent && !e->whitespace)) {
		if (indent < 64) {
			y_add(e, nl_spaces, (size_t)indent + 1);
			e->column = indent;
		} else {
			put_break(e);
		}
	}
	if (e->column < indent) {
		for (k = indent - e->column; k > 0; k -= 64)
			y_add(e, spaces64, (size_t)(k < 64 ? k : 64));
		e->column = indent;
	}
	e->whitespace = true;
	e->indention = true;
}

static void yaml_emitter_write_indicator(struct yemit *e, const char *ind,
					 bool need_whitespace,
					 bool is_whitespace, bool is_indention)
{
	size_t n = ind[1] ? strlen(ind) : 1;

	if (need_whitespace && !e->whitespace)
		put(e, ' ');
	y_add(e, ind, n);
	e->column += (int)n;
	e->whitespace = is_whitespace;
	e->indention = e->indention && is_indention;
}

/*
 * The writers below keep a run of characters not yet appended (from
 * `run` to i) and count their columns as they go; every other output
 * flushes the run first.
 */
static void flush_run(struct yemit *e, const unsigned char *s, size_t *run,
		      size_t i)
{
	y_add(e, s + *run, i - *run);
	*run = i;
}

/* write_break: a line break character from the value. */
static void write_break(struct yemit *e, const unsigned char *s, size_t n,
			size_t *i)
{
	size_t w;

	if (s[*i] == '\n') {
		put_break(e);
		(*i)++;
		return;
	}
	w = width(s[*i]);
	y_add(e, s + *i, w < n - *i ? w : n - *i);
	*i += w;
	e->column = 0;
}

static void yaml_emitter_write_plain_scalar(struct yemit *e,
					    const unsigned char *s, size_t n,
					    size_t chars, bool allow_breaks)
{
	bool spaces = false, breaks = false;
	size_t i = 0, run = 0;

	if (!e->whitespace)
		put(e, ' ');
	if (!allow_breaks || (size_t)e->column + n <= BEST_WIDTH + 1) {
		/*
		 * A fold needs a space past column 80; plain text has no
		 * line breaks (the analysis rules plain style out then).
		 */
		y_add(e, s, n);
		e->column += (int)chars;
		e->whitespace = false;
		e->indention = false;
		return;
	}
	while (i < n) {
		if (s[i] == ' ') {
			if (allow_breaks && !spaces && e->column > BEST_WIDTH &&
			    !is_space(s, n, i + 1)) {
				flush_run(e, s, &run, i);
				yaml_emitter_write_indent(e);
				run = ++i;
			} else {
				i++;
				e->column++;
			}
			spaces = true;
		} else if (is_break(s, n, i)) {
			flush_run(e, s, &run, i);
			if (!breaks && s[i] == '\n')
				put_break(e);
			write_break(e, s, n, &i);
			run = i;
			e->indention = true;
			breaks = true;
		} else {
			if (breaks) {
				yaml_emitter_write_indent(e);
				run = i;
			}
			i += width(s[i]);
			e->column++;
			e->indention = false;
			spaces = false;
			breaks = false;
		}
	}
	flush_run(e, s, &run, i < n ? i : n);
	e->whitespace = false;
	e->indention = false;
}

static void yaml_emitter_write_single_quoted_scalar(struct yemit *e,
						    const unsigned char *s,
						    size_t n, bool allow_breaks)
{
	bool spaces = false, breaks = false;
	size_t i = 0, run = 0;

	yaml_emitter_write_indicator(e, "'", true, false, false);
	while (i < n) {
		if (s[i] == ' ') {
			if (allow_breaks && !spaces && e->column > BEST_WIDTH &&
			    i > 0 && i < n - 1 && !is_space(s, n, i + 1)) {
				flush_run(e, s, &run, i);
				yaml_emitter_write_indent(e);
				run = ++i;
			} else {
				i++;
				e->column++;
			}
			spaces = true;
		} else if (is_break(s, n, i)) {
			flush_run(e, s, &run, i);
			if (!breaks && s[i] == '\n')
				put_break(e);
			write_break(e, s, n, &i);
			run = i;
			e->indention = true;
			breaks = true;
		} else {
			if (breaks) {
				yaml_emitter_write_indent(e);
				run = i;
			}
			if (s[i] == '\'') {
				flush_run(e, s, &run, i);
				put(e, '\'');
			}
			i += width(s[i]);
			e->column++;
			e->indention = false;
			spaces = false;
			breaks = false;
		}
	}
	flush_run(e, s, &run, i < n ? i : n);
	yaml_emitter_write_indicator(e, "'", false, false, false);
	e->whitespace = false;
	e->indention = false;
}

static void yaml_emitter_write_double_quoted_scalar(struct yemit *e,
						    const unsigned char *s,
						    size_t n, bool allow_breaks)
{
	bool spaces = false;
	size_t i = 0, run = 0, w, k;
	uint32_t v;
	char esc[10];
	int digits, j;

	yaml_emitter_write_indicator(e, "\"", true, false, false);
	while (i < n) {
		if (!is_printable(s, n, i) || is_bom(s, n, i) ||
		    is_break(s, n, i) || s[i] == '"' || s[i] == '\\') {
			flush_run(e, s, &run, i);
			w = width(s[i]);
			v = w == 1   ? s[i]
			    : w == 2 ? s[i] & 0x1Fu
			    : w == 3 ? s[i] & 0x0Fu
				     : s[i] & 0x07u;
			for (k = 1; k < w && i + k < n; k++)
				v = (v << 6) + (s[i + k] & 0x3Fu);
			i += w;
			run = i;
			esc[0] = '\\';
			k = 2;
			switch (v) {
			case 0x00:
				esc[1] = '0';
				break;
			case 0x07:
				esc[1] = 'a';
				break;
			case 0x08:
				esc[1] = 'b';
				break;
			case 0x09:
				esc[1] = 't';
				break;
			case 0x0A:
				esc[1] = 'n';
				break;
			case 0x0B:
				esc[1] = 'v';
				break;
			case 0x0C:
				esc[1] = 'f';
				break;
			case 0x0D:
				esc[1] = 'r';
				break;
			case 0x1B:
				esc[1] = 'e';
				break;
			case 0x22:
				esc[1] = '"';
				break;
			case 0x5C:
				esc[1] = '\\';
				break;
			case 0x85:
				esc[1] = 'N';
				break;
			case 0xA0:
				esc[1] = '_';
				break;
			case 0x2028:
				esc[1] = 'L';
				break;
			case 0x2029:
				esc[1] = 'P';
				break;
			default:
				if (v <= 0xFF) {
					esc[1] = 'x';
					digits = 2;
				} else if (v <= 0xFFFF) {
					esc[1] = 'u';
					digits = 4;
				} else {
					esc[1] = 'U';
					digits = 8;
				}
				for (j = (digits - 1) * 4; j >= 0; j -= 4)
					esc[k++] = hex_upper[(v >> j) & 0xF];
			}
			y_add(e, esc, k);
			e->column += (int)k;
			spaces = false;
		} else if (s[i] == ' ') {
			if (allow_breaks && !spaces && e->column > BEST_WIDTH &&
			    i > 0 && i < n - 1) {
				flush_run(e, s, &run, i);
				yaml_emitter_write_indent(e);
				if (is_space(s, n, i + 1))
					put(e, '\\');
				run = ++i;
			} else {
				i++;
				e->column++;
			}
			spaces = true;
		} else {
			i += width(s[i]);
			e->column++;
			spaces = false;
		}
	}
	flush_run(e, s, &run, i < n ? i : n);
	yaml_emitter_write_indicator(e, "\"", false, false, false);
	e->whitespace = false;
	e->indention = false;
}

static void yaml_emitter_write_block_scalar_hints(struct yemit *e,
						  const unsigned char *s,
						  size_t n)
{
	const char *chomp = NULL;
	size_t i;

	if (is_space(s, n, 0) || is_break(s, n, 0))
		yaml_emitter_write_indicator(e, "2", false, false, false);
	if (n == 0) {
		chomp = "-";
	} else {
		i = n - 1;
		while (i > 0 && (s[i] & 0xC0) == 0x80)
			i--;
		if (!is_break(s, n, i)) {
			chomp = "-";
		} else if (i == 0) {
			chomp = "+";
		} else {
			i--;
			while (i > 0 && (s[i] & 0xC0) == 0x80)
				i--;
			if (is_break(s, n, i))
				chomp = "+";
		}
	}
	if (chomp)
		yaml_emitter_write_indicator(e, chomp, false, false, false);
}

static void yaml_emitter_write_literal_scalar(struct yemit *e,
					      const unsigned char *s, size_t n)
{
	bool breaks = true;
	size_t i = 0, run = 0;

	yaml_emitter_write_indicator(e, "|", true, false, false);
	yaml_emitter_write_block_scalar_hints(e, s, n);
	put_break(e);
	e->indention = true;
	e->whitespace = true;
	while (i < n) {
		if (is_break(s, n, i)) {
			flush_run(e, s, &run, i);
			write_break(e, s, n, &i);
			run = i;
			e->indention = true;
			breaks = true;
		} else {
			if (breaks) {
				flush_run(e, s, &run, i);
				yaml_emitter_write_indent(e);
			}
			i += width(s[i]);
			e->column++;
			e->indention = false;
			breaks = false;
		}
	}
	flush_run(e, s, &run, i < n ? i : n);
}

/*
 * yaml_emitter_emit_scalar: choose the style and write the scalar that `a`
 * describes.
 */
static void y_scalar(struct yemit *e, const struct yscalar *a,
		     enum yaml_style want)
{
	enum yaml_style style;
	int indent = e->indent;
	bool allow_breaks = !e->simple_key_context;

	style = yaml_emitter_select_scalar_style(e, a, want);
	/* yaml_emitter_increase_indent(flow = true, indentless = false) */
	e->indent = e->indent < 0 ? BEST_INDENT : e->indent + BEST_INDENT;
	switch (style) {
	case Y_PLAIN:
		yaml_emitter_write_plain_scalar(e, a->v, a->n, a->chars,
						allow_breaks);
		break;
	case Y_SINGLE:
		yaml_emitter_write_single_quoted_scalar(e, a->v, a->n,
							allow_breaks);
		break;
	case Y_DOUBLE:
		yaml_emitter_write_double_quoted_scalar(e, a->v, a->n,
							allow_breaks);
		break;
	case Y_LITERAL:
		yaml_emitter_write_literal_scalar(e, a->v, a->n);
		break;
	}
	e->indent = indent;
}

/*
 * Analyze a string from the document; invalid UTF-8 is first replaced as
 * Go's json.Marshal would (into e->str). ERR_NOMEM or 0.
 */
static int y_analyze_string(struct yemit *e, struct yscalar *a, const char *s,
			    size_t n)
{
	yaml_emitter_analyze_scalar(a, (const unsigned char *)s, n);
	if (!a->invalid)
		return 0;
	s = utf8_sanitize(s, &n, &e->str);
	if (!s)
		return ERR_NOMEM;
	yaml_emitter_analyze_scalar(a, (const unsigned char *)s, n);
	return 0;
}

/*
 * A number, bool or null: short ASCII that is always plain-safe ("-5",
 * "1e+20", "-.inf") and never folds, so y_scalar() reduces to this.
 */
static void y_token(struct yemit *e, const char *s, size_t n)
{
	if (!e->whitespace)
		put(e, ' ');
	y_add(e, s, n);
	e->column += (int)n;
	e->whitespace = false;
	e->indention = false;
}

/*
 * go-yaml's encoder.stringv: the style it asks the emitter for, for the
 * string that `a` describes (valid UTF-8, see utf8_sanitize).
 */
static void y_string(struct yemit *e, const struct yscalar *a)
{
	const char *s = (const char *)a->v;
	enum yaml_style want;

	int plain;

	if (a->has_lf) {
		want = Y_LITERAL;
	} else if ((plain = yaml_plain_is_str(s, a->n, &e->num)) < 0) {
		e->error = plain;
		return;
	} else {
		want = plain ? Y_PLAIN : Y_DOUBLE;
	}
	y_scalar(e, a, want);
}

/* The contexts yaml_emitter_emit_node records that matter here. */
static void y_set_context(struct yemit *e, bool mapping, bool simple_key)
{
	e->mapping_context = mapping;
	e->simple_key_context = simple_key;
}

static int y_node(struct yemit *e, json_t *v, int depth);

/* A key with a digit (or anything non-ASCII, which may be one). */
static bool keys_need_presort(const struct okey *k)
{
	size_t i;

	for (i = 0; i < k->len; i++)
		if (is_digit(k->key[i]) || (unsigned char)k->key[i] >= 0x80)
			return true;
	return false;
}

/* yaml_emitter_emit_block_mapping_key and _value, for every key. */
static int y_mapping(struct yemit *e, json_t *v, int depth)
{
	size_t start, n, i;
	int indent = e->indent, error;

	if ((error = keystack_push(&e->ks, v, &start)) < 0)
		return error;
	n = e->ks.len - start;
	/*
	 * Only runs of digits can make go-yaml's order intransitive (see
	 * keys_sort); for such key sets sort bytewise first, so that they
	 * still print the same whatever order the keys came in.
	 */
	for (i = 0; i < n && !keys_need_presort(&e->ks.v[start + i]); i++)
		;
	if ((i < n && (error = keys_sort(&e->ks, e->ks.v + start, n,
					 key_less_bytes)) < 0) ||
	    (n && (error = keys_sort(&e->ks, e->ks.v + start, n,
				     key_less_yaml)) < 0))
		goto out;
	e->indent = e->indent < 0 ? 0 : e->indent + BEST_INDENT;
	for (i = 0; i < n && !error && !e->error; i++) {
		const struct okey *k = &e->ks.v[start + i];
		struct yscalar a;

		yaml_emitter_write_indent(e);
		if ((error = y_analyze_string(e, &a, k->key, k->len)) < 0)
			break;
		/* yaml_emitter_check_simple_key: one line, <= 128 bytes */
		if (!a.multiline && a.n <= 128) {
			y_set_context(e, true, true);
			y_string(e, &a);
			yaml_emitter_write_indicator(e, ":", false, false,
						     false);
		} else {
			yaml_emitter_write_indicator(e, "?", true, false, true);
			y_set_context(e, true, false);
			y_string(e, &a);
			yaml_emitter_write_indent(e);
			yaml_emitter_write_indicator(e, ":", true, false, true);
		}
		y_set_context(e, true, false);
		error = y_node(e, k->val, depth + 1);
	}
	e->indent = indent;
out:
	e->ks.len = start;
	return error ? error : e->error;
}

/* yaml_emitter_emit_block_sequence_item, for every item. */
static int y_sequence(struct yemit *e, json_t *v, int depth)
{
	size_t i, n = json_array_size(v);
	int indent = e->indent, error = 0;

	if (e->indent < 0)
		e->indent = 0;
	else if (!(e->mapping_context && !e->indention))
		e->indent += BEST_INDENT;
	for (i = 0; i < n && !error && !e->error; i++) {
		yaml_emitter_write_indent(e);
		yaml_emitter_write_indicator(e, "-", true, false, true);
		y_set_context(e, false, false);
		error = y_node(e, json_array_get(v, i), depth + 1);
	}
	e->indent = indent;
	return error ? error : e->error;
}

/* yaml_emitter_emit_node; the context flags are already set. */
static int y_node(struct yemit *e, json_t *v, int depth)
{
	char num[NUM_SIZE];

	switch (json_typeof(v)) {
	case JSON_OBJECT:
	case JSON_ARRAY:
		if (depth >= ENCODE_MAX_DEPTH)
			return ERR_LIMIT;
		if (json_is_object(v) ? json_object_size(v) == 0
				      : json_array_size(v) == 0) {
			/* an empty collection is written in flow style */
			yaml_emitter_write_indicator(
				e, json_is_object(v) ? "{" : "[", true, true,
				false);
			yaml_emitter_write_indicator(
				e, json_is_object(v) ? "}" : "]", false, false,
				false);
			return e->error;
		}
		return json_is_object(v) ? y_mapping(e, v, depth)
					 : y_sequence(e, v, depth);
	case JSON_STRING: {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);
		struct yscalar a;
		int error = y_analyze_string(e, &a, s, n);

		if (error < 0)
			return error;
		y_string(e, &a);
		break;
	}
	case JSON_INTEGER:
		y_token(e, num, fmt_int(num, json_integer_value(v)));
		break;
	case JSON_REAL:
		y_token(e, num, fmt_yaml_real(num, json_real_value(v)));
		break;
	case JSON_TRUE:
		y_token(e, "true", 4);
		break;
	case JSON_FALSE:
		y_token(e, "false", 5);
		break;
	case JSON_NULL:
		y_token(e, "null", 4);
		break;
	}
	return e->error;
}

int diff_yaml_dump(const json_t *json, struct buf *out)
{
	struct yemit e;
	size_t len0 = out->len;
	int error;

	if (!json)
		return ERR_INVALID;
	memset(&e, 0, sizeof(e));
	e.out = out;
	e.indent = -1;
	e.whitespace = true;
	e.indention = true;
	buf_init(&e.str, 0);
	buf_init(&e.num, 0);
	y_set_context(&e, false, false);
	error = y_node(&e, (json_t *)json, 0);
	if (!error) {
		/* yaml_emitter_emit_document_end */
		e.indent = -1;
		yaml_emitter_write_indent(&e);
		error = e.error;
	}
	keystack_release(&e.ks);
	buf_release(&e.str);
	buf_release(&e.num);
	if (error < 0)
		buf_truncate(out, len0);
	return error;
}

/*
 * Go's unicode.IsLetter and unicode.IsDigit, for go-yaml's key order:
 * general categories L and Nd of Unicode 15.0.0, the version of Go 1.21
 * and later (kubectl 1.32 is built with Go 1.23). Made from Python's
 * unicodedata (Unicode 14.0) plus the letters and digits 15.0 added
 * (Khojki, Kawi, Nag Mundari, Cyrillic Extended-D, CJK Extension H, ...).
 * Ranges are inclusive.
 */
/* clang-format off */
static const uint32_t go_letter[][2] = {
	{0xaa, 0xaa}, {0xb5, 0xb5}, {0xba, 0xba}, {0xc0, 0xd6}, {0xd8, 0xf6},
	{0xf8, 0x2c1}, {0x2c6, 0x2d1}, {0x2e0, 0x2e4}, {0x2ec, 0x2ec},
	{0x2ee, 0x2ee}, {0x370, 0x374}, {0x376, 0x377}, {0x37a, 0x37d},
	{0x37f, 0x37f}, {0x386, 0x386}, {0x388, 0x38a}, {0x38c, 0x38c},
	{0x38e, 0x3a1}, {0x3a3, 0x3f5}, {0x3f7, 0x481}, {0x48a, 0x52f},
	{0x531, 0x556}, {0x559, 0x559}, {0x560, 0x588}, {0x5d0, 0x5ea},
	{0x5ef, 0x5f2}, {0x620, 0x64a}, {0x66e, 0x66f}, {0x671, 0x6d3},
	{0x6d5, 0x6d5}, {0x6e5, 0x6e6}, {0x6ee, 0x6ef}, {0x6fa, 0x6fc},
	{0x6ff, 0x6ff}, {0x710, 0x710}, {0x712, 0x72f}, {0x74d, 0x7a5},
	{0x7b1, 0x7b1}, {0x7ca, 0x7ea}, {0x7f4, 0x7f5}, {0x7fa, 0x7fa},
	{0x800, 0x815}, {0x81a, 0x81a}, {0x824, 0x824}, {0x828, 0x828},
	{0x840, 0x858}, {0x860, 0x86a}, {0x870, 0x887}, {0x889, 0x88e},
	{0x8a0, 0x8c9}, {0x904, 0x939}, {0x93d, 0x93d}, {0x950, 0x950},
	{0x958, 0x961}, {0x971, 0x980}, {0x985, 0x98c}, {0x98f, 0x990},
	{0x993, 0x9a8}, {0x9aa, 0x9b0}, {0x9b2, 0x9b2}, {0x9b6, 0x9b9},
	{0x9bd, 0x9bd}, {0x9ce, 0x9ce}, {0x9dc, 0x9dd}, {0x9df, 0x9e1},
	{0x9f0, 0x9f1}, {0x9fc, 0x9fc}, {0xa05, 0xa0a}, {0xa0f, 0xa10},
	{0xa13, 0xa28}, {0xa2a, 0xa30}, {0xa32, 0xa33}, {0xa35, 0xa36},
	{0xa38, 0xa39}, {0xa59, 0xa5c}, {0xa5e, 0xa5e}, {0xa72, 0xa74},
	{0xa85, 0xa8d}, {0xa8f, 0xa91}, {0xa93, 0xaa8}, {0xaaa, 0xab0},
	{0xab2, 0xab3}, {0xab5, 0xab9}, {0xabd, 0xabd}, {0xad0, 0xad0},
	{0xae0, 0xae1}, {0xaf9, 0xaf9}, {0xb05, 0xb0c}, {0xb0f, 0xb10},
	{0xb13, 0xb28}, {0xb2a, 0xb30}, {0xb32, 0xb33}, {0xb35, 0xb39},
	{0xb3d, 0xb3d}, {0xb5c, 0xb5d}, {0xb5f, 0xb61}, {0xb71, 0xb71},
	{0xb83, 0xb83}, {0xb85, 0xb8a}, {0xb8e, 0xb90}, {0xb92, 0xb95},
	{0xb99, 0xb9a}, {0xb9c, 0xb9c}, {0xb9e, 0xb9f}, {0xba3, 0xba4},
	{0xba8, 0xbaa}, {0xbae, 0xbb9}, {0xbd0, 0xbd0}, {0xc05, 0xc0c},
	{0xc0e, 0xc10}, {0xc12, 0xc28}, {0xc2a, 0xc39}, {0xc3d, 0xc3d},
	{0xc58, 0xc5a}, {0xc5d, 0xc5d}, {0xc60, 0xc61}, {0xc80, 0xc80},
	{0xc85, 0xc8c}, {0xc8e, 0xc90}, {0xc92, 0xca8}, {0xcaa, 0xcb3},
	{0xcb5, 0xcb9}, {0xcbd, 0xcbd}, {0xcdd, 0xcde}, {0xce0, 0xce1},
	{0xcf1, 0xcf2}, {0xd04, 0xd0c}, {0xd0e, 0xd10}, {0xd12, 0xd3a},
	{0xd3d, 0xd3d}, {0xd4e, 0xd4e}, {0xd54, 0xd56}, {0xd5f, 0xd61},
	{0xd7a, 0xd7f}, {0xd85, 0xd96}, {0xd9a, 0xdb1}, {0xdb3, 0xdbb},
	{0xdbd, 0xdbd}, {0xdc0, 0xdc6}, {0xe01, 0xe30}, {0xe32, 0xe33},
	{0xe40, 0xe46}, {0xe81, 0xe82}, {0xe84, 0xe84}, {0xe86, 0xe8a},
	{0xe8c, 0xea3}, {0xea5, 0xea5}, {0xea7, 0xeb0}, {0xeb2, 0xeb3},
	{0xebd, 0xebd}, {0xec0, 0xec4}, {0xec6, 0xec6}, {0xedc, 0xedf},
	{0xf00, 0xf00}, {0xf40, 0xf47}, {0xf49, 0xf6c}, {0xf88, 0xf8c},
	{0x1000, 0x102a}, {0x103f, 0x103f}, {0x1050, 0x1055}, {0x105a, 0x105d},
	{0x1061, 0x1061}, {0x1065, 0x1066}, {0x106e, 0x1070}, {0x1075, 0x1081},
	{0x108e, 0x108e}, {0x10a0, 0x10c5}, {0x10c7, 0x10c7}, {0x10cd, 0x10cd},
	{0x10d0, 0x10fa}, {0x10fc, 0x1248}, {0x124a, 0x124d}, {0x1250, 0x1256},
	{0x1258, 0x1258}, {0x125a, 0x125d}, {0x1260, 0x1288}, {0x128a, 0x128d},
	{0x1290, 0x12b0}, {0x12b2, 0x12b5}, {0x12b8, 0x12be}, {0x12c0, 0x12c0},
	{0x12c2, 0x12c5}, {0x12c8, 0x12d6}, {0x12d8, 0x1310}, {0x1312, 0x1315},
	{0x1318, 0x135a}, {0x1380, 0x138f}, {0x13a0, 0x13f5}, {0x13f8, 0x13fd},
	{0x1401, 0x166c}, {0x166f, 0x167f}, {0x1681, 0x169a}, {0x16a0, 0x16ea},
	{0x16f1, 0x16f8}, {0x1700, 0x1711}, {0x171f, 0x1731}, {0x1740, 0x1751},
	{0x1760, 0x176c}, {0x176e, 0x1770}, {0x1780, 0x17b3}, {0x17d7, 0x17d7},
	{0x17dc, 0x17dc}, {0x1820, 0x1878}, {0x1880, 0x1884}, {0x1887, 0x18a8},
	{0x18aa, 0x18aa}, {0x18b0, 0x18f5}, {0x1900, 0x191e}, {0x1950, 0x196d},
	{0x1970, 0x1974}, {0x1980, 0x19ab}, {0x19b0, 0x19c9}, {0x1a00, 0x1a16},
	{0x1a20, 0x1a54}, {0x1aa7, 0x1aa7}, {0x1b05, 0x1b33}, {0x1b45, 0x1b4c},
	{0x1b83, 0x1ba0}, {0x1bae, 0x1baf}, {0x1bba, 0x1be5}, {0x1c00, 0x1c23},
	{0x1c4d, 0x1c4f}, {0x1c5a, 0x1c7d}, {0x1c80, 0x1c88}, {0x1c90, 0x1cba},
	{0x1cbd, 0x1cbf}, {0x1ce9, 0x1cec}, {0x1cee, 0x1cf3}, {0x1cf5, 0x1cf6},
	{0x1cfa, 0x1cfa}, {0x1d00, 0x1dbf}, {0x1e00, 0x1f15}, {0x1f18, 0x1f1d},
	{0x1f20, 0x1f45}, {0x1f48, 0x1f4d}, {0x1f50, 0x1f57}, {0x1f59, 0x1f59},
	{0x1f5b, 0x1f5b}, {0x1f5d, 0x1f5d}, {0x1f5f, 0x1f7d}, {0x1f80, 0x1fb4},
	{0x1fb6, 0x1fbc}, {0x1fbe, 0x1fbe}, {0x1fc2, 0x1fc4}, {0x1fc6, 0x1fcc},
	{0x1fd0, 0x1fd3}, {0x1fd6, 0x1fdb}, {0x1fe0, 0x1fec}, {0x1ff2, 0x1ff4},
	{0x1ff6, 0x1ffc}, {0x2071, 0x2071}, {0x207f, 0x207f}, {0x2090, 0x209c},
	{0x2102, 0x2102}, {0x2107, 0x2107}, {0x210a, 0x2113}, {0x2115, 0x2115},
	{0x2119, 0x211d}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
	{0x212a, 0x212d}, {0x212f, 0x2139}, {0x213c, 0x213f}, {0x2145, 0x2149},
	{0x214e, 0x214e}, {0x2183, 0x2184}, {0x2c00, 0x2ce4}, {0x2ceb, 0x2cee},
	{0x2cf2, 0x2cf3}, {0x2d00, 0x2d25}, {0x2d27, 0x2d27}, {0x2d2d, 0x2d2d},
	{0x2d30, 0x2d67}, {0x2d6f, 0x2d6f}, {0x2d80, 0x2d96}, {0x2da0, 0x2da6},
	{0x2da8, 0x2dae}, {0x2db0, 0x2db6}, {0x2db8, 0x2dbe}, {0x2dc0, 0x2dc6},
	{0x2dc8, 0x2dce}, {0x2dd0, 0x2dd6}, {0x2dd8, 0x2dde}, {0x2e2f, 0x2e2f},
	{0x3005, 0x3006}, {0x3031, 0x3035}, {0x303b, 0x303c}, {0x3041, 0x3096},
	{0x309d, 0x309f}, {0x30a1, 0x30fa}, {0x30fc, 0x30ff}, {0x3105, 0x312f},
	{0x3131, 0x318e}, {0x31a0, 0x31bf}, {0x31f0, 0x31ff}, {0x3400, 0x4dbf},
	{0x4e00, 0xa48c}, {0xa4d0, 0xa4fd}, {0xa500, 0xa60c}, {0xa610, 0xa61f},
	{0xa62a, 0xa62b}, {0xa640, 0xa66e}, {0xa67f, 0xa69d}, {0xa6a0, 0xa6e5},
	{0xa717, 0xa71f}, {0xa722, 0xa788}, {0xa78b, 0xa7ca}, {0xa7d0, 0xa7d1},
	{0xa7d3, 0xa7d3}, {0xa7d5, 0xa7d9}, {0xa7f2, 0xa801}, {0xa803, 0xa805},
	{0xa807, 0xa80a}, {0xa80c, 0xa822}, {0xa840, 0xa873}, {0xa882, 0xa8b3},
	{0xa8f2, 0xa8f7}, {0xa8fb, 0xa8fb}, {0xa8fd, 0xa8fe}, {0xa90a, 0xa925},
	{0xa930, 0xa946}, {0xa960, 0xa97c}, {0xa984, 0xa9b2}, {0xa9cf, 0xa9cf},
	{0xa9e0, 0xa9e4}, {0xa9e6, 0xa9ef}, {0xa9fa, 0xa9fe}, {0xaa00, 0xaa28},
	{0xaa40, 0xaa42}, {0xaa44, 0xaa4b}, {0xaa60, 0xaa76}, {0xaa7a, 0xaa7a},
	{0xaa7e, 0xaaaf}, {0xaab1, 0xaab1}, {0xaab5, 0xaab6}, {0xaab9, 0xaabd},
	{0xaac0, 0xaac0}, {0xaac2, 0xaac2}, {0xaadb, 0xaadd}, {0xaae0, 0xaaea},
	{0xaaf2, 0xaaf4}, {0xab01, 0xab06}, {0xab09, 0xab0e}, {0xab11, 0xab16},
	{0xab20, 0xab26}, {0xab28, 0xab2e}, {0xab30, 0xab5a}, {0xab5c, 0xab69},
	{0xab70, 0xabe2}, {0xac00, 0xd7a3}, {0xd7b0, 0xd7c6}, {0xd7cb, 0xd7fb},
	{0xf900, 0xfa6d}, {0xfa70, 0xfad9}, {0xfb00, 0xfb06}, {0xfb13, 0xfb17},
	{0xfb1d, 0xfb1d}, {0xfb1f, 0xfb28}, {0xfb2a, 0xfb36}, {0xfb38, 0xfb3c},
	{0xfb3e, 0xfb3e}, {0xfb40, 0xfb41}, {0xfb43, 0xfb44}, {0xfb46, 0xfbb1},
	{0xfbd3, 0xfd3d}, {0xfd50, 0xfd8f}, {0xfd92, 0xfdc7}, {0xfdf0, 0xfdfb},
	{0xfe70, 0xfe74}, {0xfe76, 0xfefc}, {0xff21, 0xff3a}, {0xff41, 0xff5a},
	{0xff66, 0xffbe}, {0xffc2, 0xffc7}, {0xffca, 0xffcf}, {0xffd2, 0xffd7},
	{0xffda, 0xffdc}, {0x10000, 0x1000b}, {0x1000d, 0x10026},
	{0x10028, 0x1003a}, {0x1003c, 0x1003d}, {0x1003f, 0x1004d},
	{0x10050, 0x1005d}, {0x10080, 0x100fa}, {0x10280, 0x1029c},
	{0x102a0, 0x102d0}, {0x10300, 0x1031f}, {0x1032d, 0x10340},
	{0x10342, 0x10349}, {0x10350, 0x10375}, {0x10380, 0x1039d},
	{0x103a0, 0x103c3}, {0x103c8, 0x103cf}, {0x10400, 0x1049d},
	{0x104b0, 0x104d3}, {0x104d8, 0x104fb}, {0x10500, 0x10527},
	{0x10530, 0x10563}, {0x10570, 0x1057a}, {0x1057c, 0x1058a},
	{0x1058c, 0x10592}, {0x10594, 0x10595}, {0x10597, 0x105a1},
	{0x105a3, 0x105b1}, {0x105b3, 0x105b9}, {0x105bb, 0x105bc},
	{0x10600, 0x10736}, {0x10740, 0x10755}, {0x10760, 0x10767},
	{0x10780, 0x10785}, {0x10787, 0x107b0}, {0x107b2, 0x107ba},
	{0x10800, 0x10805}, {0x10808, 0x10808}, {0x1080a, 0x10835},
	{0x10837, 0x10838}, {0x1083c, 0x1083c}, {0x1083f, 0x10855},
	{0x10860, 0x10876}, {0x10880, 0x1089e}, {0x108e0, 0x108f2},
	{0x108f4, 0x108f5}, {0x10900, 0x10915}, {0x10920, 0x10939},
	{0x10980, 0x109b7}, {0x109be, 0x109bf}, {0x10a00, 0x10a00},
	{0x10a10, 0x10a13}, {0x10a15, 0x10a17}, {0x10a19, 0x10a35},
	{0x10a60, 0x10a7c}, {0x10a80, 0x10a9c}, {0x10ac0, 0x10ac7},
	{0x10ac9, 0x10ae4}, {0x10b00, 0x10b35}, {0x10b40, 0x10b55},
	{0x10b60, 0x10b72}, {0x10b80, 0x10b91}, {0x10c00, 0x10c48},
	{0x10c80, 0x10cb2}, {0x10cc0, 0x10cf2}, {0x10d00, 0x10d23},
	{0x10e80, 0x10ea9}, {0x10eb0, 0x10eb1}, {0x10f00, 0x10f1c},
	{0x10f27, 0x10f27}, {0x10f30, 0x10f45}, {0x10f70, 0x10f81},
	{0x10fb0, 0x10fc4}, {0x10fe0, 0x10ff6}, {0x11003, 0x11037},
	{0x11071, 0x11072}, {0x11075, 0x11075}, {0x11083, 0x110af},
	{0x110d0, 0x110e8}, {0x11103, 0x11126}, {0x11144, 0x11144},
	{0x11147, 0x11147}, {0x11150, 0x11172}, {0x11176, 0x11176},
	{0x11183, 0x111b2}, {0x111c1, 0x111c4}, {0x111da, 0x111da},
	{0x111dc, 0x111dc}, {0x11200, 0x11211}, {0x11213, 0x1122b},
	{0x1123f, 0x11240}, {0x11280, 0x11286}, {0x11288, 0x11288},
	{0x1128a, 0x1128d}, {0x1128f, 0x1129d}, {0x1129f, 0x112a8},
	{0x112b0, 0x112de}, {0x11305, 0x1130c}, {0x1130f, 0x11310},
	{0x11313, 0x11328}, {0x1132a, 0x11330}, {0x11332, 0x11333},
	{0x11335, 0x11339}, {0x1133d, 0x1133d}, {0x11350, 0x11350},
	{0x1135d, 0x11361}, {0x11400, 0x11434}, {0x11447, 0x1144a},
	{0x1145f, 0x11461}, {0x11480, 0x114af}, {0x114c4, 0x114c5},
	{0x114c7, 0x114c7}, {0x11580, 0x115ae}, {0x115d8, 0x115db},
	{0x11600, 0x1162f}, {0x11644, 0x11644}, {0x11680, 0x116aa},
	{0x116b8, 0x116b8}, {0x11700, 0x1171a}, {0x11740, 0x11746},
	{0x11800, 0x1182b}, {0x118a0, 0x118df}, {0x118ff, 0x11906},
	{0x11909, 0x11909}, {0x1190c, 0x11913}, {0x11915, 0x11916},
	{0x11918, 0x1192f}, {0x1193f, 0x1193f}, {0x11941, 0x11941},
	{0x119a0, 0x119a7}, {0x119aa, 0x119d0}, {0x119e1, 0x119e1},
	{0x119e3, 0x119e3}, {0x11a00, 0x11a00}, {0x11a0b, 0x11a32},
	{0x11a3a, 0x11a3a}, {0x11a50, 0x11a50}, {0x11a5c, 0x11a89},
	{0x11a9d, 0x11a9d}, {0x11ab0, 0x11af8}, {0x11c00, 0x11c08},
	{0x11c0a, 0x11c2e}, {0x11c40, 0x11c40}, {0x11c72, 0x11c8f},
	{0x11d00, 0x11d06}, {0x11d08, 0x11d09}, {0x11d0b, 0x11d30},
	{0x11d46, 0x11d46}, {0x11d60, 0x11d65}, {0x11d67, 0x11d68},
	{0x11d6a, 0x11d89}, {0x11d98, 0x11d98}, {0x11ee0, 0x11ef2},
	{0x11f02, 0x11f02}, {0x11f04, 0x11f10}, {0x11f12, 0x11f33},
	{0x11fb0, 0x11fb0}, {0x12000, 0x12399}, {0x12480, 0x12543},
	{0x12f90, 0x12ff0}, {0x13000, 0x1342e}, {0x13441, 0x13446},
	{0x14400, 0x14646}, {0x16800, 0x16a38}, {0x16a40, 0x16a5e},
	{0x16a70, 0x16abe}, {0x16ad0, 0x16aed}, {0x16b00, 0x16b2f},
	{0x16b40, 0x16b43}, {0x16b63, 0x16b77}, {0x16b7d, 0x16b8f},
	{0x16e40, 0x16e7f}, {0x16f00, 0x16f4a}, {0x16f50, 0x16f50},
	{0x16f93, 0x16f9f}, {0x16fe0, 0x16fe1}, {0x16fe3, 0x16fe3},
	{0x17000, 0x187f7}, {0x18800, 0x18cd5}, {0x18d00, 0x18d08},
	{0x1aff0, 0x1aff3}, {0x1aff5, 0x1affb}, {0x1affd, 0x1affe},
	{0x1b000, 0x1b122}, {0x1b132, 0x1b132}, {0x1b150, 0x1b152},
	{0x1b155, 0x1b155}, {0x1b164, 0x1b167}, {0x1b170, 0x1b2fb},
	{0x1bc00, 0x1bc6a}, {0x1bc70, 0x1bc7c}, {0x1bc80, 0x1bc88},
	{0x1bc90, 0x1bc99}, {0x1d400, 0x1d454}, {0x1d456, 0x1d49c},
	{0x1d49e, 0x1d49f}, {0x1d4a2, 0x1d4a2}, {0x1d4a5, 0x1d4a6},
	{0x1d4a9, 0x1d4ac}, {0x1d4ae, 0x1d4b9}, {0x1d4bb, 0x1d4bb},
	{0x1d4bd, 0x1d4c3}, {0x1d4c5, 0x1d505}, {0x1d507, 0x1d50a},
	{0x1d50d, 0x1d514}, {0x1d516, 0x1d51c}, {0x1d51e, 0x1d539},
	{0x1d53b, 0x1d53e}, {0x1d540, 0x1d544}, {0x1d546, 0x1d546},
	{0x1d54a, 0x1d550}, {0x1d552, 0x1d6a5}, {0x1d6a8, 0x1d6c0},
	{0x1d6c2, 0x1d6da}, {0x1d6dc, 0x1d6fa}, {0x1d6fc, 0x1d714},
	{0x1d716, 0x1d734}, {0x1d736, 0x1d74e}, {0x1d750, 0x1d76e},
	{0x1d770, 0x1d788}, {0x1d78a, 0x1d7a8}, {0x1d7aa, 0x1d7c2},
	{0x1d7c4, 0x1d7cb}, {0x1df00, 0x1df1e}, {0x1df25, 0x1df2a},
	{0x1e030, 0x1e06d}, {0x1e100, 0x1e12c}, {0x1e137, 0x1e13d},
	{0x1e14e, 0x1e14e}, {0x1e290, 0x1e2ad}, {0x1e2c0, 0x1e2eb},
	{0x1e4d0, 0x1e4eb}, {0x1e7e0, 0x1e7e6}, {0x1e7e8, 0x1e7eb},
	{0x1e7ed, 0x1e7ee}, {0x1e7f0, 0x1e7fe}, {0x1e800, 0x1e8c4},
	{0x1e900, 0x1e943}, {0x1e94b, 0x1e94b}, {0x1ee00, 0x1ee03},
	{0x1ee05, 0x1ee1f}, {0x1ee21, 0x1ee22}, {0x1ee24, 0x1ee24},
	{0x1ee27, 0x1ee27}, {0x1ee29, 0x1ee32}, {0x1ee34, 0x1ee37},
	{0x1ee39, 0x1ee39}, {0x1ee3b, 0x1ee3b}, {0x1ee42, 0x1ee42},
	{0x1ee47, 0x1ee47}, {0x1ee49, 0x1ee49}, {0x1ee4b, 0x1ee4b},
	{0x1ee4d, 0x1ee4f}, {0x1ee51, 0x1ee52}, {0x1ee54, 0x1ee54},
	{0x1ee57, 0x1ee57}, {0x1ee59, 0x1ee59}, {0x1ee5b, 0x1ee5b},
	{0x1ee5d, 0x1ee5d}, {0x1ee5f, 0x1ee5f}, {0x1ee61, 0x1ee62},
	{0x1ee64, 0x1ee64}, {0x1ee67, 0x1ee6a}, {0x1ee6c, 0x1ee72},
	{0x1ee74, 0x1ee77}, {0x1ee79, 0x1ee7c}, {0x1ee7e, 0x1ee7e},
	{0x1ee80, 0x1ee89}, {0x1ee8b, 0x1ee9b}, {0x1eea1, 0x1eea3},
	{0x1eea5, 0x1eea9}, {0x1eeab, 0x1eebb}, {0x20000, 0x2a6df},
	{0x2a700, 0x2b739}, {0x2b740, 0x2b81d}, {0x2b820, 0x2cea1},
	{0x2ceb0, 0x2ebe0}, {0x2f800, 0x2fa1d}, {0x30000, 0x3134a},
	{0x31350, 0x323af},
};
static const uint32_t go_digit[][2] = {
	{0x660, 0x669}, {0x6f0, 0x6f9}, {0x7c0, 0x7c9}, {0x966, 0x96f},
	{0x9e6, 0x9ef}, {0xa66, 0xa6f}, {0xae6, 0xaef}, {0xb66, 0xb6f},
	{0xbe6, 0xbef}, {0xc66, 0xc6f}, {0xce6, 0xcef}, {0xd66, 0xd6f},
	{0xde6, 0xdef}, {0xe50, 0xe59}, {0xed0, 0xed9}, {0xf20, 0xf29},
	{0x1040, 0x1049}, {0x1090, 0x1099}, {0x17e0, 0x17e9}, {0x1810, 0x1819},
	{0x1946, 0x194f}, {0x19d0, 0x19d9}, {0x1a80, 0x1a89}, {0x1a90, 0x1a99},
	{0x1b50, 0x1b59}, {0x1bb0, 0x1bb9}, {0x1c40, 0x1c49}, {0x1c50, 0x1c59},
	{0xa620, 0xa629}, {0xa8d0, 0xa8d9}, {0xa900, 0xa909}, {0xa9d0, 0xa9d9},
	{0xa9f0, 0xa9f9}, {0xaa50, 0xaa59}, {0xabf0, 0xabf9}, {0xff10, 0xff19},
	{0x104a0, 0x104a9}, {0x10d30, 0x10d39}, {0x11066, 0x1106f},
	{0x110f0, 0x110f9}, {0x11136, 0x1113f}, {0x111d0, 0x111d9},
	{0x112f0, 0x112f9}, {0x11450, 0x11459}, {0x114d0, 0x114d9},
	{0x11650, 0x11659}, {0x116c0, 0x116c9}, {0x11730, 0x11739},
	{0x118e0, 0x118e9}, {0x11950, 0x11959}, {0x11c50, 0x11c59},
	{0x11d50, 0x11d59}, {0x11da0, 0x11da9}, {0x11f50, 0x11f59},
	{0x16a60, 0x16a69}, {0x16ac0, 0x16ac9}, {0x16b50, 0x16b59},
	{0x1d7ce, 0x1d7ff}, {0x1e140, 0x1e149}, {0x1e2f0, 0x1e2f9},
	{0x1e4f0, 0x1e4f9}, {0x1e950, 0x1e959}, {0x1fbf0, 0x1fbf9},
};
/* clang-format on */

static bool go_is_letter(uint32_t c)
{
	if (c < 0x80)
		return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
	return in_ranges(c, go_letter,
			 sizeof(go_letter) / sizeof(go_letter[0]));
}

static bool go_is_digit(uint32_t c)
{
	if (c < 0x80)
		return c >= '0' && c <= '9';
	return in_ranges(c, go_digit, sizeof(go_digit) / sizeof(go_digit[0]));
}
