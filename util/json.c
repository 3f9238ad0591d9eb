/*
 * A JSON reader for the hot paths: LIST responses and render caches.
 *
 * It accepts exactly what json_loadb(data, len, 0, ...) accepts and builds
 * the same values in the same key order (fuzz_json compares the two), but
 * scans strings a run of plain bytes at a time instead of byte by byte
 * through a stream, which is where jansson's reader spends its time on
 * Kubernetes objects (long strings: data values, images, fieldsV1 keys).
 *
 * What json_loadb() with no flags accepts: an object or an array at the
 * top, with only whitespace after it; strings of valid UTF-8 with no raw
 * control character and no \u0000; \u escapes with surrogate pairs
 * matched; integers that fit json_int_t (else an error), other numbers as
 * doubles (an overflow is an error, an underflow is not); a repeated key
 * replaces the earlier value in its place; at most 2048 levels of nesting.
 * One difference: a NUL byte right after a number or a literal, which
 * jansson's reader skips ("[2\0]" reads as [2]), is refused here.
 */
#include "util/json.h"

#include "util/buf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h" /* last */

#define MAX_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH */

struct reader {
	const unsigned char *p, *end;
	struct buf str; /* an unescaped string or a number's text */
	unsigned depth;
	const char *why;
	fastjson_take_fn *take; /* fastjson_load_items(); NULL: none */
	void *take_ctx;
	unsigned skipping; /* > 0: check, build nothing (skip_value()) */
};

static json_t *fail(struct reader *r, const char *why)
{
	if (!r->why)
		r->why = why;
	return NULL;
}

static void skip_space(struct reader *r)
{
	while (r->p < r->end &&
	       (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if none. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4)
		return 0;
	len = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	if (n < len)
		return 0;
	cp = c & (0xff >> (len + 1));
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* Overlong forms, surrogates, past U+10FFFF. */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

static int hex4(const unsigned char *p, const unsigned char *end, uint32_t *out)
{
	uint32_t v = 0;

	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		unsigned c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	*out = v;
	return 0;
}

static int put_utf8(struct buf *b, uint32_t cp)
{
	char s[4];
	size_t n;

	if (cp < 0x80) {
		s[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		s[0] = (char)(0xc0 | cp >> 6);
		s[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		s[0] = (char)(0xe0 | cp >> 12);
		s[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		s[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		s[0] = (char)(0xf0 | cp >> 18);
		s[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		s[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		s[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return buf_add(b, s, n);
}

/*
 * Whether any of the 8 bytes of w ends a plain run: a control character,
 * '"', '\\' or a byte of a multibyte UTF-8 sequence (the classic
 * has-less-than and has-zero-byte tests, exact for "any").
 */
static bool word_special(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ull;
	const uint64_t high = 0x8080808080808080ull;
	uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');

	return (((w - ones * 0x20) & ~w) | ((q - ones) & ~q) |
		((b - ones) & ~b) | w) &
	       high;
}

/*
 * The string at r->p (just past its opening quote), checked, up to and
 * past its closing quote: into r->str, unescaped, if `keep`. Plain bytes
 * are copied a run at a time.
 */
static bool scan_string(struct reader *r, bool keep)
{
	if (keep)
		buf_reset(&r->str);
	for (;;) {
		const unsigned char *run = r->p;
		uint32_t cp, lo;

		for (;;) {
			const unsigned char *stop;
			uint64_t w;

			/* Eight plain bytes at a time, most of a long string. */
			while (r->end - r->p >= 8 &&
			       (memcpy(&w, r->p, 8), !word_special(w)))
				r->p += 8;
			/* Then the eight (or fewer) with the byte that ends it. */
			stop = r->end - r->p > 8 ? r->p + 8 : r->end;
			while (r->p < stop && *r->p >= 0x20 && *r->p < 0x80 &&
			       *r->p != '"' && *r->p != '\\')
				r->p++;
			if (r->p == stop) {
				if (stop == r->end)
					break;
				continue;
			}
			if (*r->p < 0x80)
				break; /* '"', '\\' or a control character */
			size_t n = utf8_len(r->p, (size_t)(r->end - r->p));

			if (!n)
				return fail(r, "invalid UTF-8 in a string"), false;
			r->p += n;
		}
		if (keep && r->p > run &&
		    buf_add(&r->str, run, (size_t)(r->p - run)) < 0)
			return fail(r, "out of memory"), false;
		if (r->p == r->end)
			return fail(r, "premature end of input in a string"), false;
		if (*r->p == '"') {
			r->p++;
			return true;
		}
		if (*r->p < 0x20)
			return fail(r, "control character in a string"), false;
		/* A backslash. */
		if (r->end - r->p < 2)
			return fail(r, "premature end of input in a string"), false;
		r->p += 2;
		switch (r->p[-1]) {
		case '"':
		case '\\':
		case '/':
			cp = r->p[-1];
			break;
		case 'b':
			cp = '\b';
			break;
		case 'f':
			cp = '\f';
			break;
		case 'n':
			cp = '\n';
			break;
		case 'r':
			cp = '\r';
			break;
		case 't':
			cp = '\t';
			break;
		case 'u':
			if (hex4(r->p, r->end, &cp) < 0)
				return fail(r, "invalid \\u escape"), false;
			r->p += 4;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return fail(r, "lone low surrogate"), false;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (r->end - r->p < 6 || r->p[0] != '\\' ||
				    r->p[1] != 'u' ||
				    hex4(r->p + 2, r->end, &lo) < 0 ||
				    lo < 0xdc00 || lo > 0xdfff)
					return fail(r, "lone high surrogate"),
					       false;
				r->p += 6;
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				     (lo - 0xdc00);
			}
			if (!cp)
				return fail(r, "\\u0000 in a string"), false;
			break;
		default:
			return fail(r, "invalid escape in a string"), false;
		}
		if (keep && put_utf8(&r->str, cp) < 0)
			return fail(r, "out of memory"), false;
	}
}

static bool read_string(struct reader *r)
{
	return scan_string(r, true);
}

/* Past the number at r->p, as JSON writes one; *real: not an integer. */
static bool scan_number(struct reader *r, bool *real)
{
	*real = false;
	if (r->p < r->end && *r->p == '-')
		r->p++;
	if (r->p < r->end && *r->p == '0') {
		r->p++;
	} else if (r->p < r->end && *r->p >= '1' && *r->p <= '9') {
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	} else {
		return fail(r, "invalid number"), false;
	}
	if (r->p < r->end && *r->p == '.') {
		*real = true;
		r->p++;
		if (r->p == r->end || *r->p < '0' || *r->p > '9')
			return fail(r, "invalid number"), false;
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
		*real = true;
		r->p++;
		if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (r->p == r->end || *r->p < '0' || *r->p > '9')
			return fail(r, "invalid number"), false;
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	/* A digit right after "0" or "-0": jansson reads "01" as 0 then 1. */
	if (r->p < r->end && *r->p >= '0' && *r->p <= '9')
		return fail(r, "invalid number"), false;
	return true;
}

static json_t *read_number(struct reader *r)
{
	const unsigned char *start = r->p;
	bool real;
	char *end;

	if (!scan_number(r, &real))
		return NULL;
	buf_reset(&r->str);
	if (buf_add(&r->str, start, (size_t)(r->p - start)) < 0)
		return fail(r, "out of memory");
	errno = 0;
	if (!real) {
		json_int_t v = strtoll(buf_cstr(&r->str), &end, 10);

		if (errno == ERANGE)
			return fail(r, "too big integer");
		return json_integer(v);
	}
	double d = strtod(buf_cstr(&r->str), &end);

	if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL))
		return fail(r, "real number overflow");
	return json_real(d);
}

static bool literal(struct reader *r, const char *word, size_t n)
{
	if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n))
		return false;
	r->p += n;
	return true;
}

static json_t *read_value(struct reader *r);
static json_t *read_value_as(struct reader *r, bool offer);

/*
 * Past one value, checked as read_value() checks it, building nothing:
 * read in r->skipping mode, where every value read is json_null() (no
 * allocation kept).
 */
static bool skip_value(struct reader *r)
{
	json_t *v;

	r->skipping++;
	v = read_value(r);
	r->skipping--;
	return v != NULL;
}

static json_t *read_object(struct reader *r)
{
	json_t *obj = r->skipping ? json_null() : json_object();

	if (!obj)
		return fail(r, "out of memory");
	skip_space(r);
	if (r->p < r->end && *r->p == '}') {
		r->p++;
		return obj;
	}
	for (;;) {
		char short_key[128], *key;
		size_t klen;
		json_t *v;
		int error;

		if (r->p == r->end || *r->p != '"')
			goto bad;
		r->p++;
		if (!scan_string(r, !r->skipping))
			goto bad;
		if (r->skipping) {
			skip_space(r);
			if (r->p == r->end || *r->p != ':') {
				fail(r, "':' expected");
				goto bad;
			}
			r->p++;
			if (!read_value(r))
				goto bad;
			goto next;
		}
		/* The value's strings reuse r->str: the key is copied. */
		klen = r->str.len;
		key = klen < sizeof(short_key) ? short_key : malloc(klen + 1);
		if (!key) {
			fail(r, "out of memory");
			goto bad;
		}
		if (klen)
			memcpy(key, r->str.ptr, klen);
		key[klen] = '\0';
		skip_space(r);
		if (r->p == r->end || *r->p != ':') {
			fail(r, "':' expected");
			v = NULL;
		} else {
			r->p++;
			/* A list's items: offered to r->take. */
			v = read_value_as(r, r->take && r->depth == 1 &&
						     klen == 5 &&
						     !memcmp(key, "items", 5));
		}
		/* On failure jansson has let go of v already. */
		error = !v || json_object_setn_new_nocheck(obj, key, klen, v);
		if (key != short_key)
			free(key);
		if (error) {
			fail(r, "out of memory");
			goto bad;
		}
	next:
		skip_space(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			skip_space(r);
			continue;
		}
		if (r->p < r->end && *r->p == '}') {
			r->p++;
			return obj;
		}
		fail(r, "'}' expected");
		goto bad;
	}
bad:
	fail(r, "invalid object");
	json_decref(obj);
	return NULL;
}

/*
 * An array's values and its ']'. `offer` (the items of a list read by
 * fastjson_load_items()): each value is checked whole first and its text
 * offered to r->take; only those not taken are read into the array.
 */
static json_t *read_array(struct reader *r, bool offer)
{
	json_t *arr = r->skipping ? json_null() : json_array();

	if (!arr)
		return fail(r, "out of memory");
	skip_space(r);
	if (r->p < r->end && *r->p == ']') {
		r->p++;
		return arr;
	}
	for (;;) {
		const unsigned char *start = r->p;
		json_t *v;

		if (offer) {
			skip_space(r);
			start = r->p;
			if (!skip_value(r)) {
				json_decref(arr);
				return NULL;
			}
			if (r->take((const char *)start,
				    (size_t)(r->p - start), r->take_ctx))
				goto next;
			r->p = start;
		}
		v = read_value(r);
		if (!v || (!r->skipping && json_array_append_new(arr, v))) {
			fail(r, "out of memory");
			json_decref(arr);
			return NULL;
		}
	next:
		skip_space(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		if (r->p < r->end && *r->p == ']') {
			r->p++;
			return arr;
		}
		json_decref(arr);
		return fail(r, "']' expected");
	}
}

static json_t *read_scalar_or_nested(struct reader *r, bool offer);

/*
 * Every value counts towards the depth, as in jansson. `offer`: an array's
 * values are offered to r->take (read_array()).
 */
static json_t *read_value_as(struct reader *r, bool offer)
{
	json_t *v;

	if (++r->depth > MAX_DEPTH)
		return fail(r, "maximum nesting depth exceeded");
	v = read_scalar_or_nested(r, offer);
	r->depth--;
	return v;
}

static json_t *read_value(struct reader *r)
{
	return read_value_as(r, false);
}

static json_t *read_scalar_or_nested(struct reader *r, bool offer)
{
	json_t *v;

	skip_space(r);
	if (r->p == r->end)
		return fail(r, "premature end of input");
	switch (*r->p) {
	case '{':
		r->p++;
		return read_object(r);
	case '[':
		r->p++;
		return read_array(r, offer);
	case '"':
		r->p++;
		if (!scan_string(r, !r->skipping))
			return NULL;
		if (r->skipping)
			return json_null();
		v = json_stringn_nocheck(r->str.ptr ? r->str.ptr : "",
					 r->str.len);
		return v ? v : fail(r, "out of memory");
	case 't':
		return literal(r, "true", 4) ? json_true()
					     : fail(r, "invalid literal");
	case 'f':
		return literal(r, "false", 5) ? json_false()
					      : fail(r, "invalid literal");
	case 'n':
		return literal(r, "null", 4) ? json_null()
					     : fail(r, "invalid literal");
	default:
		v = read_number(r);
		if (v && r->skipping) { /* its range checked: nothing kept */
			json_decref(v);
			v = json_null();
		}
		return v;
	}
}

json_t *fastjson_load(const char *data, size_t len, const char **why,
		      size_t *at)
{
	return fastjson_load_items(data, len, why, at, NULL, NULL);
}

json_t *fastjson_load_items(const char *data, size_t len, const char **why,
			    size_t *at, fastjson_take_fn *take, void *ctx)
{
	struct reader r = {.p = (const unsigned char *)data,
			   .end = (const unsigned char *)data + len,
			   .str = BUF_INIT,
			   .take = take,
			   .take_ctx = ctx};
	json_t *v = NULL;

	skip_space(&r);
	if (r.p == r.end || (*r.p != '{' && *r.p != '['))
		fail(&r, "an object or an array expected");
	else
		v = read_value(&r);
	if (v) {
		skip_space(&r);
		if (r.p != r.end) {
			json_decref(v);
			v = fail(&r, "end of input expected");
		}
	}
	buf_release(&r.str);
	if (why)
		*why = v ? NULL : r.why ? r.why : "invalid JSON";
	if (at)
		*at = v ? 0 : (size_t)(r.p - (const unsigned char *)data);
	return v;
}

int fastjson_members(const char *data, size_t len, const char *const *keys,
		     size_t n, struct fastjson_span *out)
{
	struct reader r = {.p = (const unsigned char *)data,
			   .end = (const unsigned char *)data + len,
			   .str = BUF_INIT};
	int found = 0;

	for (size_t i = 0; i < n; i++)
		out[i] = (struct fastjson_span){NULL, 0};
	skip_space(&r);
	if (r.p == r.end || *r.p != '{')
		goto bad;
	r.p++;
	skip_space(&r);
	if (r.p < r.end && *r.p == '}')
		goto out;
	for (;;) {
		const unsigned char *start, *name;
		size_t i, nlen;

		if (r.p == r.end || *r.p++ != '"')
			goto bad;
		name = r.p;
		if (!scan_string(&r, false))
			goto bad;
		nlen = (size_t)(r.p - 1 - name);
		if (memchr(name, '\\', nlen)) { /* escaped: compare unescaped */
			r.p = name;
			if (!read_string(&r))
				goto bad;
			name = (const unsigned char *)r.str.ptr;
			nlen = r.str.len;
		}
		skip_space(&r);
		if (r.p == r.end || *r.p++ != ':')
			goto bad;
		skip_space(&r);
		start = r.p;
		for (i = 0; i < n; i++)
			if (!out[i].text && strlen(keys[i]) == nlen &&
			    !memcmp(keys[i], name, nlen))
				break;
		if (!skip_value(&r))
			goto bad;
		if (i < n) {
			out[i].text = (const char *)start;
			out[i].len = (size_t)(r.p - start);
			if (++found == (int)n)
				goto out; /* the rest is not needed */
		}
		skip_space(&r);
		if (r.p < r.end && *r.p == ',') {
			r.p++;
			skip_space(&r);
			continue;
		}
		if (r.p < r.end && *r.p == '}')
			goto out;
		goto bad;
	}
bad:
	found = -1;
out:
	buf_release(&r.str);
	return found;
}

bool fastjson_plain_string(const struct fastjson_span *v, const char **s,
			   size_t *n)
{
	if (!v->text || v->len < 2 || v->text[0] != '"' ||
	    v->text[v->len - 1] != '"' || memchr(v->text, '\\', v->len))
		return false;
	*s = v->text + 1;
	*n = v->len - 2;
	return true;
}
