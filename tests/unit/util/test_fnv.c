#include <criterion/criterion.h>

#include "util/fnv.h"

/* The published FNV-1a 64-bit test vectors; carried over in pieces. */
Test(fnv, known_values_and_pieces)
{
	cr_expect_eq(fnv1a(FNV1A_BASIS, "", 0), 0xcbf29ce484222325ull);
	cr_expect_eq(fnv1a(FNV1A_BASIS, "a", 1), 0xaf63dc4c8601ec8cull);
	cr_expect_eq(fnv1a(FNV1A_BASIS, "foobar", 6), 0x85944171f73967e8ull);
	cr_expect_eq(fnv1a(fnv1a(FNV1A_BASIS, "foo", 3), "bar", 3),
		     0x85944171f73967e8ull);
}
