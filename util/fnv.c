/*
 * FNV-1a (util/fnv.h).
 */
#include "util/fnv.h"

#include "util/banned.h" /* last */

uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}
