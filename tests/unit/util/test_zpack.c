/*
 * Deflated text: what goes in comes back, byte for byte, and what is not
 * zpack()'s output is refused, never read past its end.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "util/zpack.h"

static void round_trip(const char *text, size_t len)
{
	size_t n = 0, back = 0;
	unsigned char *z = zpack(text, len, &n);
	char *t;

	cr_assert_not_null(z);
	cr_assert_geq(n, 4);
	t = zunpack(z, n, &back);
	cr_assert_not_null(t);
	cr_assert_eq(back, len);
	cr_assert(!memcmp(t, text, len), "the text came back changed");
	cr_assert_eq(t[len], '\0');
	free(t);
	free(z);
}

Test(zpack, round_trip)
{
	size_t n = 300000;
	char *varied = malloc(n);
	unsigned x = 1;

	cr_assert_not_null(varied);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		varied[i] = (char)(x >> 16); /* NUL bytes too */
	}
	round_trip("", 0);
	round_trip("a", 1);
	round_trip("{\"kind\":\"ConfigMap\"}", 20);
	round_trip(varied, n);
	free(varied);
}

Test(zpack, repetitive_text_shrinks)
{
	size_t len = 100000, n = 0;
	char *text = malloc(len);
	unsigned char *z;

	cr_assert_not_null(text);
	for (size_t i = 0; i < len; i++)
		text[i] = "apiVersion: v1\n"[i % 15];
	z = zpack(text, len, &n);
	cr_assert_not_null(z);
	cr_assert_lt(n, len / 20, "%zu bytes", n);
	free(z);
	free(text);
}

Test(zpack, what_it_did_not_make_is_refused)
{
	const char *text = "the text of a report, long enough to deflate";
	size_t n = 0, len = 0;
	unsigned char *z = zpack(text, strlen(text), &n);

	cr_assert_not_null(z);
	cr_assert_null(zunpack(NULL, 0, &len));
	cr_assert_null(zunpack(z, 3, &len), "shorter than its header");
	cr_assert_null(zunpack(z, n - 1, &len), "the stream cut short");
	z[0]++; /* a length the stream does not have */
	cr_assert_null(zunpack(z, n, &len));
	z[0]--;
	z[n / 2] ^= 0x55; /* a damaged stream */
	cr_assert_null(zunpack(z, n, &len));
	free(z);
}
