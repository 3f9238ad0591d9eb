/*
 * Deflated text (util/zpack.h).
 */
#include "util/zpack.h"

#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "util/banned.h" /* last */

#define HEADER 4 /* the text's length, little-endian */

/*
 * compress2(..., Z_BEST_SPEED) with a window and a hash table no larger
 * than the text needs: deflate's state is about 256 KB at its defaults,
 * set up (and zeroed, and given back) for every text, most of them a
 * kilobyte. The stream is the same zlib format; a smaller window only
 * says so in its header, and inflate reads it as any other.
 */
static int deflate_sized(unsigned char *out, uLongf *room, const char *text,
			 size_t len)
{
	z_stream z = {0};
	int bits = 9, error; /* the smallest window zlib writes: 512 bytes */

	while (bits < MAX_WBITS && ((size_t)1 << bits) < len)
		bits++;
	/* memLevel m: a hash of 2^(m+7) heads, two for each window byte. */
	if ((error = deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, bits,
				  bits - 6 < 8 ? bits - 6 : 8,
				  Z_DEFAULT_STRATEGY)) != Z_OK)
		return error;
	z.next_in = (Bytef *)(uintptr_t)text;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)*room;
	error = deflate(&z, Z_FINISH);
	*room = z.total_out;
	deflateEnd(&z);
	return error == Z_STREAM_END ? Z_OK : Z_BUF_ERROR;
}

unsigned char *zpack(const char *text, size_t len, size_t *packed_len)
{
	uLongf room = compressBound((uLong)len);
	unsigned char *b, *shrunk;

	if (len > UINT32_MAX || !(b = malloc(HEADER + room)))
		return NULL;
	for (int i = 0; i < HEADER; i++)
		b[i] = (unsigned char)(len >> (8 * i));
	if (deflate_sized(b + HEADER, &room, text, len) != Z_OK) {
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
