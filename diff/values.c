/*
 * Value equality as the API server sees it, and canonical resource
 * quantities.
 *
 * A quantity (k8s.io/apimachinery/pkg/api/resource) is
 *
 *   [+-] digits [. digits] suffix      (at least one digit overall)
 *
 * where suffix is a binary SI suffix (Ki Mi Gi Ti Pi Ei: 2^10 .. 2^60), a
 * decimal SI suffix (n u m "" k M G T P E: 10^-9 .. 10^18) or a decimal
 * exponent (e or E, then a signed integer). The canonical form is the
 * exact value in base units as a decimal string. The arithmetic is done on
 * decimal digit strings, so there is no floating point and no overflow:
 * the input is bounded instead (QTY_MAX_DIGITS digits, exponents up to
 * QTY_MAX_EXPONENT), which bounds the work and the output.
 */
#include "diff/internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h" /* last */

/* Digits in the number part, leading and trailing zeros included. */
#define QTY_MAX_DIGITS 100
/* Largest |n| in a 1eN exponent suffix. */
#define QTY_MAX_EXPONENT 1000
/* Fractional digits the API server keeps (nano precision). */
#define QTY_MAX_FRACTION 9
/* Room for the digits, times 1024^6 (at most 19 more digits), plus carry. */
#define QTY_DIGITS_ROOM (QTY_MAX_DIGITS + 24)

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Parse a suffix: a decimal power of ten (*dec_exp) or a binary one
 * (*bin_pow: multiply by 1024^bin_pow). -1 when it is not a suffix.
 */
static int parse_suffix(const char *s, int *dec_exp, int *bin_pow)
{
	static const char dec[] = "num kMGTPE";
	static const char bin[] = "KMGTPE";
	const char *p;
	long e = 0;
	int neg = 0;

	*dec_exp = 0;
	*bin_pow = 0;
	if (!s[0])
		return 0;
	if (s[1] == '\0' && s[0] != ' ' && (p = strchr(dec, s[0]))) {
		/* n u m: 10^-9 10^-6 10^-3; k M G T P E: 10^3 .. 10^18. */
		*dec_exp = ((int)(p - dec) - 3) * 3;
		return 0;
	}
	if (s[1] == 'i' && s[2] == '\0' && (p = strchr(bin, s[0]))) {
		*bin_pow = (int)(p - bin) + 1;
		return 0;
	}
	if (s[0] != 'e' && s[0] != 'E')
		return -1;
	/* An exponent: e or E, an optional sign, one or more digits. */
	s++;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (!is_digit(*s))
		return -1;
	for (; is_digit(*s); s++) {
		e = e * 10 + (*s - '0');
		if (e > QTY_MAX_EXPONENT)
			return -1;
	}
	if (*s)
		return -1;
	*dec_exp = neg ? -(int)e : (int)e;
	return 0;
}

/* d[0..*len) *= 1024, most significant digit first (values 0..9). */
static void digits_mul1024(uint8_t *d, size_t *len)
{
	unsigned carry = 0;
	size_t i = *len, extra;

	while (i--) {
		unsigned v = d[i] * 1024u + carry;

		d[i] = (uint8_t)(v % 10);
		carry = v / 10;
	}
	/* At most 4 new leading digits (1024 < 10^4). */
	for (extra = 0; carry; extra++) {
		memmove(d + 1, d, *len + extra);
		d[0] = (uint8_t)(carry % 10);
		carry /= 10;
	}
	*len += extra;
}

/* d[0..*len) += 1; may grow by one leading digit. */
static void digits_inc(uint8_t *d, size_t *len)
{
	size_t i = *len;

	while (i--) {
		if (d[i] < 9) {
			d[i]++;
			return;
		}
		d[i] = 0;
	}
	memmove(d + 1, d, *len);
	d[0] = 1;
	(*len)++;
}

int diff_quantity_canonical(const char *text, struct buf *out)
{
	uint8_t d[QTY_DIGITS_ROOM];
	size_t len = 0, start = out->len, nint = 0, nfrac = 0, i;
	const char *p = text;
	int neg = 0, dec_exp, bin_pow, error = 0;
	long scale; /* value = digits * 10^scale */

	if (!p)
		return ERR_PARSE;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	for (; is_digit(*p); p++, nint++)
		if (len < QTY_MAX_DIGITS)
			d[len++] = (uint8_t)(*p - '0');
	if (*p == '.')
		for (p++; is_digit(*p); p++, nfrac++)
			if (len < QTY_MAX_DIGITS)
				d[len++] = (uint8_t)(*p - '0');
	if (nint + nfrac == 0 || nint + nfrac > QTY_MAX_DIGITS)
		return ERR_PARSE;
	if (parse_suffix(p, &dec_exp, &bin_pow) < 0)
		return ERR_PARSE;

	scale = (long)dec_exp - (long)nfrac;
	while (bin_pow--)
		digits_mul1024(d, &len);

	/* Normalise: no leading zeros, no trailing zeros (moved to scale). */
	for (i = 0; i < len && d[i] == 0; i++)
		;
	if (i == len)
		return buf_addch(out, '0');
	memmove(d, d + i, len - i);
	len -= i;
	while (d[len - 1] == 0) {
		len--;
		scale++;
	}

	/*
	 * The API server keeps nano precision and rounds the magnitude of a
	 * non-zero value up (away from zero) to it: 0.1n is 1n, -0.1n is -1n.
	 * The digits dropped are non-zero (the last digit is), so rounding up
	 * always adds one unit at the 10^-9 place.
	 */
	if (scale < -QTY_MAX_FRACTION) {
		size_t drop = (size_t)(-QTY_MAX_FRACTION - scale);

		if (drop >= len) {
			d[0] = 1;
			len = 1;
		} else {
			len -= drop;
			digits_inc(d, &len);
		}
		scale = -QTY_MAX_FRACTION;
		while (d[len - 1] == 0) {
			len--;
			scale++;
		}
	}

	if (neg && (error = buf_addch(out, '-')) < 0)
		goto out;
	if (scale >= 0) {
		for (i = 0; i < len && error == 0; i++)
			error = buf_addch(out, (char)('0' + d[i]));
		for (i = 0; i < (size_t)scale && error == 0; i++)
			error = buf_addch(out, '0');
	} else {
		size_t nf = (size_t)-scale; /* fractional digits, <= 9 */
		size_t ni = len > nf ? len - nf : 0;

		if (!ni)
			error = buf_addch(out, '0');
		for (i = 0; i < ni && error == 0; i++)
			error = buf_addch(out, (char)('0' + d[i]));
		if (error == 0)
			error = buf_addch(out, '.');
		for (i = len; i < nf && error == 0; i++)
			error = buf_addch(out, '0');
		for (i = ni; i < len && error == 0; i++)
			error = buf_addch(out, (char)('0' + d[i]));
	}
out:
	if (error < 0)
		buf_truncate(out, start);
	return error;
}

/*
 * A number as the text a manifest would carry: integers in decimal, reals
 * in the shortest form that reads back to the same double (0.5, 1e+21).
 * The text of a non-finite real is not a quantity, which makes the caller
 * fall back to plain equality.
 */
void diff_number_text(const json_t *v, char *out, size_t size)
{
	if (json_is_integer(v)) {
		snprintf(out, size, "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		return;
	}
	double r = json_real_value(v);

	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, size, "%.*g", prec, r);
		if (strtod(out, NULL) == r)
			return;
	}
}

/* The canonical quantity of a string or number; < 0 when it is not one. */
static int value_quantity(const json_t *v, struct buf *out)
{
	char num[64];

	if (json_is_string(v)) {
		/* A string with a NUL inside is not a quantity. */
		if (strlen(json_string_value(v)) != json_string_length(v))
			return ERR_PARSE;
		return diff_quantity_canonical(json_string_value(v), out);
	}
	if (json_is_number(v)) {
		diff_number_text(v, num, sizeof(num));
		return diff_quantity_canonical(num, out);
	}
	return ERR_PARSE;
}

/*
 * 1 when both values are quantities with one value, 0 when they are
 * quantities with different values, -1 when either is not a quantity.
 */
static int quantity_equal(const json_t *a, const json_t *b)
{
	struct buf ca = BUF_INIT, cb = BUF_INIT;
	int ret = -1;

	if (value_quantity(a, &ca) < 0 || value_quantity(b, &cb) < 0)
		goto out;
	ret = ca.len == cb.len && !memcmp(buf_cstr(&ca), buf_cstr(&cb), ca.len);
out:
	buf_release(&ca);
	buf_release(&cb);
	return ret;
}

/* An integer equals a real only when the real is integral and the same. */
static bool int_real_equal(json_int_t i, double r)
{
	/* -2^63 <= r < 2^63: the range where the conversion is exact. */
	if (!isfinite(r) || r != floor(r) || r < -9223372036854775808.0 ||
	    r >= 9223372036854775808.0)
		return false;
	return (long long)r == (long long)i;
}

static bool number_equal(const json_t *a, const json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	if (json_is_real(a) && json_is_real(b))
		return json_real_value(a) == json_real_value(b);
	if (json_is_integer(a))
		return int_real_equal(json_integer_value(a),
				      json_real_value(b));
	return int_real_equal(json_integer_value(b), json_real_value(a));
}

static bool object_equal(const json_t *a, const json_t *b, bool quantity)
{
	void *it;

	if (json_object_size(a) != json_object_size(b))
		return false;
	/* jansson's iterators take a non-const object; nothing is changed. */
	for (it = json_object_iter((json_t *)a); it;
	     it = json_object_iter_next((json_t *)a, it)) {
		const json_t *bv =
			json_object_getn(b, json_object_iter_key(it),
					 json_object_iter_key_len(it));

		if (!bv ||
		    !diff_value_equal(json_object_iter_value(it), bv, quantity))
			return false;
	}
	return true;
}

static bool array_equal(const json_t *a, const json_t *b, bool quantity)
{
	size_t i, n = json_array_size(a);

	if (n != json_array_size(b))
		return false;
	for (i = 0; i < n; i++)
		if (!diff_value_equal(json_array_get(a, i),
				      json_array_get(b, i), quantity))
			return false;
	return true;
}

bool diff_value_equal(const json_t *a, const json_t *b, bool quantity)
{
	if (!a || !b)
		return a == b;
	if (quantity && (json_is_string(a) || json_is_number(a)) &&
	    (json_is_string(b) || json_is_number(b))) {
		int q = quantity_equal(a, b);

		if (q >= 0)
			return q;
		/* Not both quantities: compare them as plain values. */
	}
	if (json_is_number(a) && json_is_number(b))
		return number_equal(a, b);
	if (json_typeof(a) != json_typeof(b))
		return false;
	switch (json_typeof(a)) {
	case JSON_OBJECT:
		return object_equal(a, b, quantity);
	case JSON_ARRAY:
		return array_equal(a, b, quantity);
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b),
			       json_string_length(a));
	default:
		/* true, false, null: the type is the value. */
		return true;
	}
}
