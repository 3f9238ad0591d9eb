/*
 * base64: RFC 4648 encoding and strict decoding, standard ("+/") and
 * URL-safe ("-_") alphabets.
 *
 * Decoding is strict: a character outside the alphabet, padding in the
 * wrong place, a missing pad (unless BASE64_NOPAD) or non-zero bits
 * left over in the last quantum (unless BASE64_ANY_LAST_BITS) are
 * errors, so that two different texts never decode to the same bytes. Error messages never quote the input
 * (it is often a key or a token).
 */
#ifndef UTIL_BASE64_H
#define UTIL_BASE64_H

#include <stddef.h>

#include "util/buf.h"

enum base64_flags {
	BASE64_URL = 1 << 0,	       /* the URL-safe alphabet ("-_") */
	BASE64_NOPAD = 1 << 1,	       /* encode without '='; decode with or
					  without it */
	BASE64_SKIP_NEWLINES = 1 << 2, /* decode: ignore '\r' and '\n' (as
					  Go's decoder does for kubeconfig
					  -data fields) */
	BASE64_ANY_LAST_BITS = 1 << 3, /* decode: accept non-zero bits left
					  over in the last quantum (Go's
					  non-strict StdEncoding) */
};

/* Bytes base64_encode() appends for `len` input bytes (with padding). */
size_t base64_encoded_len(size_t len);

/*
 * Append the encoding of data[0..len) to `out`. 0, or ERR_NOMEM/ERR_LIMIT
 * from the buffer (then `out` is unchanged).
 */
int base64_encode(struct buf *out, const void *data, size_t len,
		  unsigned flags);

/*
 * Append the bytes that in[0..len) encodes to `out`. 0, ERR_PARSE for
 * malformed input (then `out` is unchanged), or ERR_NOMEM/ERR_LIMIT
 * from the buffer.
 */
int base64_decode(struct buf *out, const char *in, size_t len, unsigned flags);

#endif
