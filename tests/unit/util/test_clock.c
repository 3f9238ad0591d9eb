/*
 * Monotonic time and RFC 3339 times.
 */
#include <criterion/criterion.h>
#include <time.h>

#include "util/clock.h"
#include "util/err.h"

Test(clock, rfc3339_times_parse)
{
	time_t t;

	cr_assert_eq(clk_rfc3339_parse("2026-11-29T10:05:00Z", &t), 0);
	cr_assert_eq(t, 1795946700);
	cr_assert_eq(clk_rfc3339_parse("2026-11-29T10:05:00.123456Z", &t), 0);
	cr_assert_eq(t, 1795946700);
	cr_assert_eq(clk_rfc3339_parse("2026-11-29T11:05:00+01:00", &t), 0);
	cr_assert_eq(t, 1795946700);
	cr_assert_eq(clk_rfc3339_parse("2026-11-29T09:35:00-00:30", &t), 0);
	cr_assert_eq(t, 1795946700);
	cr_assert_eq(clk_rfc3339_parse("2026-11-29T10:05:00", &t), ERR_PARSE);
	cr_assert_eq(clk_rfc3339_parse("2026-13-29T10:05:00Z", &t), ERR_PARSE);
	cr_assert_eq(clk_rfc3339_parse("2026-11-29T10:05:00Zjunk", &t),
		     ERR_PARSE);
	cr_assert_eq(clk_rfc3339_parse("2026-11-29t10:05:00z", &t), 0);
	cr_assert_eq(t, 1795946700);
	cr_assert_eq(clk_rfc3339_parse("2026-11-29T10:05:00+24:00", &t),
		     ERR_PARSE);
	cr_assert_eq(clk_rfc3339_parse("yesterday", &t), ERR_PARSE);
	cr_assert_eq(clk_rfc3339_parse(NULL, &t), ERR_PARSE);
}

Test(clock, rfc3339_format_round_trips)
{
	char out[CLK_RFC3339_SIZE];
	time_t t;

	clk_rfc3339_format(1795946700, out);
	cr_assert_str_eq(out, "2026-11-29T10:05:00Z");
	cr_assert_eq(clk_rfc3339_parse(out, &t), 0);
	cr_assert_eq(t, 1795946700);
}

Test(clock, monotonic_and_deadlines)
{
	uint64_t a = clk_mono_ms(), ns = clk_mono_ns();
	struct timespec now, later, capped;

	cr_assert_geq(ns / 1000000u, a);
	clock_gettime(CLOCK_MONOTONIC, &now);
	later = clk_mono_after_ms(1500);
	cr_assert_geq(later.tv_sec, now.tv_sec + 1);
	cr_assert_lt(later.tv_nsec, 1000000000L);
	/* at most a day ahead */
	capped = clk_mono_after_ms(UINT64_MAX);
	cr_assert_leq(capped.tv_sec, now.tv_sec + 24 * 3600 + 1);
}

Test(clock, durations_as_go_writes_them)
{
	uint64_t ms = 1;

	cr_assert_eq(clk_parse_duration("1h30m", 0, &ms), 0);
	cr_assert_eq(ms, 90 * 60 * 1000);
	cr_assert_eq(clk_parse_duration("2m500ms", 0, &ms), 0);
	cr_assert_eq(ms, 120500);
	cr_assert_eq(clk_parse_duration("0", 0, &ms), 0);
	cr_assert_eq(ms, 0);
	/* A bare number is seconds only when the caller says so. */
	cr_assert_eq(clk_parse_duration("90", 0, &ms), ERR_INVALID);
	cr_assert_eq(clk_parse_duration("90", CLK_DURATION_BARE_SECONDS, &ms), 0);
	cr_assert_eq(ms, 90000);
	cr_assert_eq(clk_parse_duration("90x", CLK_DURATION_BARE_SECONDS, &ms),
		     ERR_INVALID);
	cr_assert_eq(clk_parse_duration("", CLK_DURATION_BARE_SECONDS, &ms),
		     ERR_INVALID);
	/* Longer than a year, bare or not, is refused. */
	cr_assert_eq(clk_parse_duration("9000h", 0, &ms), ERR_INVALID);
	cr_assert_eq(clk_parse_duration("99999999999",
					 CLK_DURATION_BARE_SECONDS, &ms),
		     ERR_INVALID);
}

Test(clock, bare_milliseconds)
{
	uint64_t ms = 1;

	cr_assert_eq(clk_parse_duration("500", CLK_DURATION_BARE_MS, &ms), 0);
	cr_assert_eq(ms, 500);
	cr_assert_eq(clk_parse_duration("2s", CLK_DURATION_BARE_MS, &ms), 0);
	cr_assert_eq(ms, 2000);
}
