#include "util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/err.h"

#include "util/banned.h" /* last */

uint64_t clk_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clk_mono_ms(void)
{
	return clk_mono_ns() / 1000000u;
}

struct timespec clk_mono_after_ms(uint64_t ms)
{
	struct timespec ts;

	if (ms > 24ULL * 3600 * 1000)
		ms = 24ULL * 3600 * 1000;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

int clk_rfc3339_parse(const char *s, time_t *out)
{
	struct tm tm;
	int n = 0, oh = 0, om = 0;
	long off = 0;
	const char *p;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if (!s ||
	    sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &tm.tm_year,
		   &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec,
		   &n) != 6 ||
	    n != 19)
		return ERR_PARSE;
	p = s + n;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return ERR_PARSE;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5)
			return ERR_PARSE;
		off = (oh * 60L + om) * 60L * (*p == '-' ? -1 : 1);
		p += 1 + n;
	} else {
		return ERR_PARSE;
	}
	if (*p || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
	    tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 60 || oh > 23 || om > 59)
		return ERR_PARSE;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	if ((t = timegm(&tm)) == (time_t)-1)
		return ERR_PARSE;
	*out = t - off;
	return 0;
}

void clk_rfc3339_format(time_t t, char out[CLK_RFC3339_SIZE])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, CLK_RFC3339_SIZE, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int clk_parse_duration(const char *s, unsigned flags, uint64_t *ms)
{
	uint64_t total = 0;

	if (!s || !*s)
		return ERR_INVALID;
	if (!strcmp(s, "0")) {
		*ms = 0;
		return 0;
	}
	/* A bare number of seconds or milliseconds, when allowed. */
	if ((flags & (CLK_DURATION_BARE_SECONDS | CLK_DURATION_BARE_MS)) &&
	    s[strspn(s, "0123456789")] == '\0') {
		uint64_t n = 0,
			 unit = flags & CLK_DURATION_BARE_SECONDS ? 1000 : 1;

		for (; *s; s++) {
			n = n * 10 + (uint64_t)(*s - '0');
			if (n > CLK_DURATION_MAX_MS / unit)
				return ERR_INVALID;
		}
		*ms = n * unit;
		return 0;
	}
	while (*s) {
		uint64_t n = 0, unit;
		const char *start = s;

		while (*s >= '0' && *s <= '9') {
			if (n > UINT64_MAX / 10 - 10)
				return ERR_INVALID;
			n = n * 10 + (uint64_t)(*s++ - '0');
		}
		if (s == start)
			return ERR_INVALID;
		if (!strncmp(s, "ms", 2)) {
			unit = 1;
			s += 2;
		} else if (*s == 's') {
			unit = 1000;
			s++;
		} else if (*s == 'm') {
			unit = 60 * 1000;
			s++;
		} else if (*s == 'h') {
			unit = 3600 * 1000;
			s++;
		} else {
			return ERR_INVALID;
		}
		/* A year is far more than any period here needs. */
		if (n > CLK_DURATION_MAX_MS / unit)
			return ERR_INVALID;
		total += n * unit;
		if (total > CLK_DURATION_MAX_MS)
			return ERR_INVALID;
	}
	*ms = total;
	return 0;
}

void clk_sleep_ms(long ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}
