/*
 * The string vector.
 */
#include <criterion/criterion.h>

#include "util/strvec.h"

Test(strvec, pushes_copies_and_stays_null_terminated)
{
	struct strvec sv = STRVEC_INIT;
	char word[8] = "a";

	cr_assert_null(sv.v);
	cr_assert_not(strvec_has(&sv, "a"));
	for (int i = 0; i < 20; i++) {
		word[0] = (char)('a' + i);
		cr_assert_eq(strvec_push(&sv, word), 0);
		cr_assert_null(sv.v[sv.len]);
	}
	word[0] = '?';
	cr_assert_eq(sv.len, 20);
	cr_assert_str_eq(sv.v[0], "a", "a copy, not the caller's buffer");
	cr_assert_str_eq(sv.v[19], "t");
	cr_assert(strvec_has(&sv, "j"));
	cr_assert_not(strvec_has(&sv, "?"));
	strvec_release(&sv);
	cr_assert_null(sv.v);
	cr_assert_eq(sv.len, 0);
	strvec_release(&sv);
	strvec_release(NULL);
}
