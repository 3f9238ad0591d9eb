/*
 * Deflated text (util/zpack.h).
 */
#include "util/zpack.h"

#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "util/banned.h" /* last */

#define HEADER 4 /* the text's length, little-endian */

unsigned char *zpack(const char *text, size_t len, size_t *packed_len)
{
	uLongf room = compressBound((uLong)len);
	unsigned char *b, *shrunk;

	if (len > UINT32_MAX || !(b = malloc(HEADER + room)))
		return NULL;
	for (int i = 0; i < HEADER; i++)
		b[i] = (unsigned char)(len >> (8 * i));
	if (compress2(b + HEADER, &room, (const Bytef *)text, (uLong)len,
		      Z_BEST_SPEED) != Z_OK) {
		free(b);
		return NULL;
	}
	/* compressBound() is more than the text: give the rest back. */
	if ((shrunk = realloc(b, HEADER + room)))
		b = shrunk;
	*packed_len = HEADER + room;
	return b;
}

char *zunpack(const unsigned char *packed, size_t n, size_t *len)
{
	uLongf want = 0, got;
	char *text;

	if (!packed || n < HEADER)
		return NULL;
	for (int i = 0; i < HEADER; i++)
		want |= (uLongf)packed[i] << (8 * i);
	if (!(text = malloc(want + 1)))
		return NULL;
	got = want;
	if (uncompress((Bytef *)text, &got, packed + HEADER,
		       (uLong)(n - HEADER)) != Z_OK ||
	    got != want) {
		free(text);
		return NULL;
	}
	text[got] = '\0';
	if (len)
		*len = got;
	return text;
}
