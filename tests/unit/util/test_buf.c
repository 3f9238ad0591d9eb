#include <criterion/criterion.h>

#include "util/buf.h"
#include "util/err.h"

Test(buf, append_and_cap)
{
	struct buf b = BUF_INIT;

	buf_init(&b, 8);
	cr_assert_eq(buf_adds(&b, "abcd"), 0);
	cr_assert_eq(buf_addf(&b, "%d", 123), 0);
	cr_assert_str_eq(b.ptr, "abcd123");
	cr_assert_eq(buf_adds(&b, "xy"), ERR_LIMIT);
	cr_assert_str_eq(b.ptr, "abcd123");
	cr_assert_eq(b.len, 7);
	buf_release(&b);
}
