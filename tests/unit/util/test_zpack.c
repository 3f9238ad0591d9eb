/*
 * Deflated text: what goes in comes back, byte for byte, and what is not
 * zpack()'s output is refused, never read past its end.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "util/zpack.h"

#include <zlib.h>

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

/*
 * The window and hash are sized to the text (deflate's default state is
 * 256 KB, set up for each text): the output reads back, and is as small
 * as compress2() at the same level makes it, within 1%.
 */
Test(zpack, sized_to_the_text_as_small_as_compress2)
{
	static const size_t sizes[] = {1,    100,  511,	 512,	513,
				       1000, 4096, 5000, 40000, 200000};
	char *text = malloc(200000);
	unsigned int seed = 7;

	cr_assert_not_null(text);
	for (size_t i = 0; i < 200000; i++) {
		/* JSON-like: words of a small vocabulary, random digits. */
		static const char *const words[] = {
			"\"metadata\":{", "\"name\":\"", "cm-", "\"},",
			"\"data\":{\"fill\":\"", "\"labels\":{", "app-"};
		const char *w = words[rand_r(&seed) % 7];

		for (; *w && i < 200000; w++)
			text[i++] = *w;
		if (i < 200000)
			text[i] = (char)('0' + rand_r(&seed) % 10);
	}
	for (size_t k = 0; k < sizeof(sizes) / sizeof(*sizes); k++) {
		size_t n = sizes[k], plen, back;
		uLongf room = compressBound((uLong)n);
		unsigned char *ref = malloc(room);
		unsigned char *z = zpack(text, n, &plen);
		char *u = zunpack(z, plen, &back);

		cr_assert_not_null(u, "%zu bytes", n);
		cr_assert_eq(back, n);
		cr_assert_eq(memcmp(u, text, n), 0, "%zu bytes", n);
		cr_assert_eq(compress2(ref, &room, (const Bytef *)text,
				       (uLong)n, Z_BEST_SPEED),
			     Z_OK);
		cr_expect_leq((plen - 4) * 100, (size_t)room * 101,
			      "%zu bytes: %zu packed, compress2 %lu", n,
			      plen - 4, (unsigned long)room);
		free(ref);
		free(z);
		free(u);
	}
	free(text);
}
