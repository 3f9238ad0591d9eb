/*
 * Text kept deflated, for long-lived copies of large texts that are
 * rarely read: zlib's fastest level behind the text's length (4 bytes,
 * little-endian), so that it inflates into one allocation of the right
 * size. The watch cache keeps its objects this way (docs/decisions.md
 * 55), the controller its last report of each app (58).
 */
#ifndef UTIL_ZPACK_H
#define UTIL_ZPACK_H

#include <stddef.h>

/* text[0..len) deflated (malloc'd, *packed_len bytes), or NULL. */
unsigned char *zpack(const char *text, size_t len, size_t *packed_len);

/*
 * The text of packed[0..n) (malloc'd, NUL-terminated, *len bytes before
 * the NUL; len may be NULL), or NULL when it is not what zpack() made or
 * memory ran out.
 */
char *zunpack(const unsigned char *packed, size_t n, size_t *len);

#endif
