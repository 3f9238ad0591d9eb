/*
 * clock: monotonic time for timeouts, backoff and timed waits, and RFC
 * 3339 times as the Kubernetes API writes them.
 */
#ifndef UTIL_CLOCK_H
#define UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* "2026-11-29T10:05:00Z" and its terminating NUL. */
#define CLK_RFC3339_SIZE 21

/* CLOCK_MONOTONIC in milliseconds and in nanoseconds. */
uint64_t clk_mono_ms(void);
uint64_t clk_mono_ns(void);

/*
 * The absolute CLOCK_MONOTONIC time `ms` from now (at most a day ahead),
 * for waits on a condition variable whose clock is CLOCK_MONOTONIC.
 */
struct timespec clk_mono_after_ms(uint64_t ms);

/*
 * Parse an RFC 3339 time ("2026-11-29T10:05:00Z"; a fraction, a "t" or
 * " " separator and "+01:00" offsets allowed) into *out. 0, or ERR_PARSE
 * when malformed.
 */
int clk_rfc3339_parse(const char *s, time_t *out);

/* `t` in UTC as "2026-11-29T10:05:00Z" (whole seconds, as metav1.Time). */
void clk_rfc3339_format(time_t t, char out[CLK_RFC3339_SIZE]);

/* Sleep `ms` milliseconds (nothing for 0 or less), resumed after signals. */
void clk_sleep_ms(long ms);

/* Longest duration clk_parse_duration() takes: a year. */
#define CLK_DURATION_MAX_MS (366ull * 24 * 3600 * 1000)

/* clk_parse_duration(): a bare number is seconds ("90" = 90s), or
 * milliseconds ("500" = 500ms). */
#define CLK_DURATION_BARE_SECONDS 1u
#define CLK_DURATION_BARE_MS 2u

/*
 * Parse a duration as Go writes them, "30s", "3m", "1h30m" or "250ms"
 * (units ms, s, m, h, summed), or "0", into milliseconds, at most
 * CLK_DURATION_MAX_MS. With CLK_DURATION_BARE_SECONDS a number alone
 * is seconds, with CLK_DURATION_BARE_MS milliseconds. 0, or ERR_INVALID (no
 * message: the caller names the key or flag).
 */
int clk_parse_duration(const char *s, unsigned flags, uint64_t *ms);

#endif
