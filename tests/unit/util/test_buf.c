#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

Test(buf, empty_reads_as_empty_string)
{
	struct buf b = BUF_INIT;

	cr_assert_null(b.ptr);
	cr_assert_str_eq(buf_cstr(&b), "");
	buf_truncate(&b, 0);
	buf_reset(&b);
	cr_assert_null(b.ptr);
	/* An empty append still allocates and terminates. */
	cr_assert_eq(buf_add(&b, NULL, 0), 0);
	cr_assert_not_null(b.ptr);
	cr_assert_str_eq(b.ptr, "");
	buf_release(&b);
	buf_release(&b);
	cr_assert_null(b.ptr);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(b.alloc, 0);
}

Test(buf, growth_keeps_contents_and_terminator)
{
	struct buf b = BUF_INIT;
	size_t n = 100000;

	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(buf_addch(&b, (char)('a' + i % 26)), 0);
		cr_assert_gt(b.alloc, b.len);
		cr_assert_eq(b.ptr[b.len], '\0');
	}
	cr_assert_eq(b.len, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(b.ptr[i], (char)('a' + i % 26));
	/* Growth is geometric: a handful of reallocations, not n. */
	cr_assert_lt(b.alloc, 4 * n);
	buf_release(&b);
}

Test(buf, binary_data_with_nuls)
{
	struct buf b = BUF_INIT;
	const char data[] = {'a', '\0', 'b', '\0', 'c'};

	cr_assert_eq(buf_add(&b, data, sizeof(data)), 0);
	cr_assert_eq(b.len, sizeof(data));
	cr_assert_eq(memcmp(b.ptr, data, sizeof(data)), 0);
	cr_assert_eq(b.ptr[b.len], '\0');
	buf_release(&b);
}

Test(buf, cap_is_exact_and_failures_leave_buffer_unchanged)
{
	struct buf b = BUF_INIT;

	buf_init(&b, 10);
	cr_assert_eq(buf_adds(&b, "0123456789"), 0); /* exactly the cap */
	cr_assert_eq(b.len, 10);
	cr_assert_eq(buf_addch(&b, 'x'), ERR_LIMIT);
	cr_assert_eq(buf_addf(&b, "%s", "y"), ERR_LIMIT);
	cr_assert_eq(buf_grow(&b, 1), ERR_LIMIT);
	cr_assert_eq(buf_grow(&b, 0), 0);
	cr_assert_str_eq(b.ptr, "0123456789");
	cr_assert_eq(b.len, 10);

	/* Shrinking makes room again; release keeps the cap. */
	buf_truncate(&b, 4);
	cr_assert_str_eq(b.ptr, "0123");
	buf_truncate(&b, 8); /* no-op when longer */
	cr_assert_eq(b.len, 4);
	cr_assert_eq(buf_adds(&b, "abcdef"), 0);
	buf_release(&b);
	cr_assert_eq(b.cap, 10);
	cr_assert_eq(buf_adds(&b, "0123456789a"), ERR_LIMIT);
	cr_assert_null(b.ptr);

	/* Huge requests fail instead of overflowing. */
	buf_init(&b, 0);
	cr_assert_eq(buf_adds(&b, "abc"), 0);
	cr_assert_eq(buf_grow(&b, (size_t)-1), ERR_NOMEM);
	cr_assert_eq(buf_grow(&b, (size_t)-1 - 2), ERR_NOMEM);
	cr_assert_str_eq(b.ptr, "abc");
	buf_release(&b);
}

Test(buf, addf_large_output)
{
	struct buf b = BUF_INIT;
	size_t big = 200000;
	char *s = malloc(big + 1);

	cr_assert_not_null(s);
	memset(s, 'q', big);
	s[big] = '\0';
	cr_assert_eq(buf_adds(&b, "<"), 0);
	cr_assert_eq(buf_addf(&b, "%s|%0*d", s, 70000, 42), 0);
	cr_assert_eq(b.len, 1 + big + 1 + 70000);
	cr_assert_eq(b.ptr[0], '<');
	cr_assert_eq(memcmp(b.ptr + 1, s, big), 0);
	cr_assert_eq(b.ptr[1 + big], '|');
	cr_assert_eq(strspn(b.ptr + 2 + big, "0"), 70000 - 2);
	cr_assert_str_eq(b.ptr + b.len - 2, "42");

	/* Over a cap: refused whole, nothing appended. */
	buf_release(&b);
	buf_init(&b, 1000);
	cr_assert_eq(buf_adds(&b, "keep"), 0);
	cr_assert_eq(buf_addf(&b, "%s", s), ERR_LIMIT);
	cr_assert_str_eq(b.ptr, "keep");
	cr_assert_eq(buf_addf(&b, "%s", ""), 0);
	cr_assert_str_eq(b.ptr, "keep");
	buf_release(&b);
	free(s);
}

Test(buf, detach)
{
	struct buf b = BUF_INIT;
	size_t len = 99;
	char *p;

	/* Empty: an allocated "", never NULL. */
	p = buf_detach(&b, &len);
	cr_assert_not_null(p);
	cr_assert_str_eq(p, "");
	cr_assert_eq(len, 0);
	free(p);
	p = buf_detach(&b, NULL);
	cr_assert_str_eq(p, "");
	free(p);

	/* Allocated but emptied. */
	buf_adds(&b, "abc");
	buf_reset(&b);
	p = buf_detach(&b, &len);
	cr_assert_str_eq(p, "");
	cr_assert_eq(len, 0);
	free(p);

	buf_init(&b, 50);
	buf_adds(&b, "hello");
	p = buf_detach(&b, &len);
	cr_assert_str_eq(p, "hello");
	cr_assert_eq(len, 5);
	cr_assert_null(b.ptr);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(b.alloc, 0);
	cr_assert_eq(b.cap, 50);
	free(p);
	/* The buffer is usable again. */
	cr_assert_eq(buf_adds(&b, "again"), 0);
	cr_assert_str_eq(b.ptr, "again");
	buf_release(&b);
}

/* What err_print writes, as a malloc'd string. */
static char *printed(const struct err *err, const char *prefix)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	err_print(err, f, prefix);
	fclose(f);
	return text;
}

Test(err, set_appends_problems)
{
	struct err err = ERR_INIT;
	char *text;

	cr_assert_eq(err_count(&err), 0);
	cr_assert_str_eq(err_first(&err), "");
	cr_assert_str_eq(err_msg(&err), "");
	cr_assert_eq(err_set(&err, ERR_PARSE, "a.yaml:%d: bad", 3), ERR_PARSE);
	cr_assert_eq(err_set(&err, ERR_IO, "b.yaml: %s", "gone"), ERR_IO);
	cr_assert_eq(err.code, ERR_PARSE); /* the first problem's */
	cr_assert_eq(err_count(&err), 2);
	cr_assert_str_eq(err_first(&err), "a.yaml:3: bad");
	cr_assert_str_eq(err_msg(&err), "a.yaml:3: bad\nb.yaml: gone\n");
	text = printed(&err, "error");
	cr_assert_str_eq(text, "error: a.yaml:3: bad\nerror: b.yaml: gone\n");
	free(text);
	text = printed(&err, NULL);
	cr_assert_str_eq(text, "a.yaml:3: bad\nb.yaml: gone\n");
	free(text);

	err_reset(&err);
	cr_assert_eq(err_count(&err), 0);
	cr_assert_eq(err.code, 0);
	cr_assert_str_eq(err_msg(&err), "");
	err_release(&err);
	err_release(&err);
}

Test(err, null_err_is_allowed)
{
	cr_assert_eq(err_set(NULL, ERR_IO, "x %d", 1), ERR_IO);
	cr_assert_eq(err_count(NULL), 0);
	cr_assert_str_eq(err_first(NULL), "");
	cr_assert_str_eq(err_msg(NULL), "");
	err_print(NULL, stderr, "x");
	err_move(NULL, NULL);
	err_reset(NULL);
	err_release(NULL);
}

Test(err, newlines_are_flattened)
{
	struct err err = ERR_INIT;

	err_set(&err, ERR_PARSE, "line one\nline two\r\nthree%s", "\nend");
	err_set(&err, ERR_PARSE, "%s", "");
	cr_assert_eq(err_count(&err), 2);
	cr_assert_str_eq(err_msg(&err), "line one line two  three end\n\n");
	cr_assert_str_eq(err_first(&err), "line one line two  three end");
	err_release(&err);
}

/* A NUL from "%c" used to end the line early and crash err_print. */
Test(err, nul_in_message_is_flattened)
{
	struct err err = ERR_INIT;
	char *text;

	err_set(&err, ERR_PARSE, "bad byte '%c' at %d", '\0', 7);
	err_set(&err, ERR_PARSE, "second");
	cr_assert_str_eq(err_msg(&err), "bad byte ' ' at 7\nsecond\n");
	text = printed(&err, "p");
	cr_assert_str_eq(text, "p: bad byte ' ' at 7\np: second\n");
	free(text);
	err_release(&err);
}

/* A report whose last line lacks its newline must not crash readers. */
Test(err, last_line_without_newline)
{
	struct err err = ERR_INIT, dst = ERR_INIT;
	char *text;

	err.code = ERR_IO;
	err.count = 2;
	buf_adds(&err.msg, "first\nsecond");
	text = printed(&err, NULL);
	cr_assert_str_eq(text, "first\nsecond\n");
	free(text);
	err_move(&dst, &err);
	cr_assert_str_eq(err_msg(&dst), "first\nsecond\n");
	cr_assert_eq(err_count(&dst), 2);
	err_release(&err);
	err_release(&dst);
}

Test(err, first_is_truncated_not_overflowed)
{
	struct err err = ERR_INIT;
	char *big = malloc(5000);

	cr_assert_not_null(big);
	memset(big, 'x', 4999);
	big[4999] = '\0';
	err_set(&err, ERR_PARSE, "%s", big);
	cr_assert_eq(strlen(err_first(&err)), 1023);
	cr_assert_eq(strlen(err_msg(&err)), 5000);
	err_release(&err);
	free(big);
}

Test(err, cap_on_kept_problems)
{
	struct err err = ERR_INIT;
	char *text, *last;
	size_t lines = 0;

	for (int i = 0; i < ERR_MAX_PROBLEMS + 7; i++)
		err_set(&err, i ? ERR_IO : ERR_LIMIT, "problem %d", i);
	cr_assert_eq(err_count(&err), ERR_MAX_PROBLEMS + 7);
	cr_assert_eq(err.code, ERR_LIMIT);
	for (const char *p = err_msg(&err); *p; p++)
		lines += *p == '\n';
	cr_assert_eq(lines, ERR_MAX_PROBLEMS);
	cr_assert_not_null(strstr(err_msg(&err), "problem 49\n"));
	cr_assert_null(strstr(err_msg(&err), "problem 50"));

	text = printed(&err, "error");
	last = strrchr(text, '\n');
	*last = '\0';
	last = strrchr(text, '\n') + 1;
	cr_assert_str_eq(last, "error: ... and 7 more problems");
	cr_assert_not_null(
		strstr(text, "error: problem 0\nerror: problem 1\n"));
	free(text);

	text = printed(&err, NULL);
	cr_assert_not_null(
		strstr(text, "\nproblem 49\n... and 7 more problems\n"));
	free(text);
	err_release(&err);
}

Test(err, move)
{
	struct err dst = ERR_INIT, src = ERR_INIT;

	/* Into an empty report: the code comes along. */
	err_set(&src, ERR_PARSE, "s1");
	err_set(&src, ERR_IO, "s2");
	err_move(&dst, &src);
	cr_assert_eq(dst.code, ERR_PARSE);
	cr_assert_eq(err_count(&dst), 2);
	cr_assert_str_eq(err_msg(&dst), "s1\ns2\n");
	cr_assert_eq(err_count(&src), 0);
	cr_assert_eq(src.code, 0);
	cr_assert_str_eq(err_msg(&src), "");

	/* Appended after dst's own; dst keeps its first code. */
	err_set(&src, ERR_LIMIT, "s3");
	err_move(&dst, &src);
	cr_assert_eq(dst.code, ERR_PARSE);
	cr_assert_str_eq(err_msg(&dst), "s1\ns2\ns3\n");
	cr_assert_eq(err_count(&dst), 3);

	/* Moving nothing, or to nowhere (src is emptied). */
	err_move(&dst, &src);
	cr_assert_eq(err_count(&dst), 3);
	err_set(&src, ERR_IO, "dropped");
	err_move(NULL, &src);
	cr_assert_eq(err_count(&src), 0);
	err_release(&dst);
	err_release(&src);
}

Test(err, move_respects_the_cap)
{
	struct err dst = ERR_INIT, src = ERR_INIT;
	char *text;
	size_t lines = 0;

	for (int i = 0; i < 10; i++)
		err_set(&dst, ERR_IO, "dst %d", i);
	for (int i = 0; i < ERR_MAX_PROBLEMS + 10; i++)
		err_set(&src, ERR_PARSE, "src %d", i);
	err_move(&dst, &src);
	cr_assert_eq(err_count(&dst), 10 + ERR_MAX_PROBLEMS + 10);
	for (const char *p = err_msg(&dst); *p; p++)
		lines += *p == '\n';
	cr_assert_eq(lines, ERR_MAX_PROBLEMS);
	cr_assert_not_null(strstr(err_msg(&dst), "\nsrc 39\n"));
	cr_assert_null(strstr(err_msg(&dst), "src 40"));
	text = printed(&dst, NULL);
	cr_assert_not_null(strstr(text, "src 39\n... and 20 more problems\n"));
	free(text);

	/* A full dst takes no more lines, only the count. */
	err_set(&src, ERR_PARSE, "late");
	err_move(&dst, &src);
	cr_assert_eq(err_count(&dst), 10 + ERR_MAX_PROBLEMS + 10 + 1);
	cr_assert_null(strstr(err_msg(&dst), "late"));
	err_set(&dst, ERR_PARSE, "later");
	cr_assert_null(strstr(err_msg(&dst), "later"));
	err_release(&dst);
	err_release(&src);
}

Test(buf, utf8_cut_keeps_characters_whole)
{
	const char *s = "ab\xc3\xa9" "cd"; /* "abécd": é is two bytes */

	cr_assert_eq(utf8_cut(s, 6, 10), 6, "fits: unchanged");
	cr_assert_eq(utf8_cut(s, 6, 4), 4, "after é");
	cr_assert_eq(utf8_cut(s, 6, 3), 2, "inside é: before it");
	cr_assert_eq(utf8_cut(s, 6, 2), 2);
	cr_assert_eq(utf8_cut("\xe2\x82\xac", 3, 2), 0, "a lone € cut to 0");
}
