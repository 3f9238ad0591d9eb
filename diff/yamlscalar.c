/*
 * yamlscalar: what go-yaml v2's resolver (resolve.go, YAML 1.1 rules) reads
 * a plain scalar as (see diff.h). The one copy of these rules: the manifest
 * decoder (renderers/yaml.c) uses it to load a value, the YAML encoder
 * (encode.c) to decide whether a string must be quoted to read back as a
 * string.
 *
 * Numbers follow Go's strconv (ParseInt/ParseUint base 0, ParseFloat);
 * timestamps follow go-yaml v2's parseTimestamp on Go's time.Parse.
 * Number parsing uses strtod(): syncd never changes LC_NUMERIC.
 */
#include "diff/diff.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h" /* last */

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return 99;
}

/*
 * strconv.ParseUint(s, base, 64), base 0 meaning "from the prefix" (0x,
 * 0o, 0b, leading 0 for octal), for text without underscores. Returns 0,
 * -1 (syntax) or -2 (range).
 */
static int go_parse_uint(const char *s, size_t n, int base, uint64_t *out)
{
	uint64_t v = 0;

	if (!n)
		return -1;
	if (base == 0) {
		base = 10;
		if (s[0] == '0') {
			char p = n >= 2 ? (char)(s[1] | 0x20) : '\0';

			if (n >= 3 && (p == 'b' || p == 'o' || p == 'x')) {
				base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
				s += 2;
				n -= 2;
			} else {
				base = 8;
				s++;
				n--;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		int d = digit_value(s[i]);

		if (d >= base)
			return -1;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return -2;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*out = v;
	return 0;
}

/* strconv.ParseInt(s, base, 64). Returns 0, -1 (syntax) or -2 (range). */
static int go_parse_int(const char *s, size_t n, int base, int64_t *out)
{
	bool neg = false;
	uint64_t u;
	int rc;

	if (n && (s[0] == '+' || s[0] == '-')) {
		neg = s[0] == '-';
		s++;
		n--;
	}
	if ((rc = go_parse_uint(s, n, base, &u)) < 0)
		return rc;
	if (!neg && u > (uint64_t)INT64_MAX)
		return -2;
	if (neg && u > (uint64_t)INT64_MAX + 1)
		return -2;
	if (neg)
		*out = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
	else
		*out = (int64_t)u;
	return 0;
}

static size_t skip_digits(const char *s, size_t n, size_t *i)
{
	size_t start = *i;

	while (*i < n && s[*i] >= '0' && s[*i] <= '9')
		(*i)++;
	return *i - start;
}

/*
 * go-yaml's yamlStyleFloat:
 * ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
 */
static bool yaml_float_syntax(const char *s, size_t n)
{
	size_t i = 0;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	if (i < n && s[i] == '.') {
		i++;
		if (!skip_digits(s, n, &i))
			return false;
	} else {
		if (!skip_digits(s, n, &i))
			return false;
		if (i < n && s[i] == '.') {
			i++;
			skip_digits(s, n, &i);
		}
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (!skip_digits(s, n, &i))
			return false;
	}
	return i == n;
}

/*
 * Go's underscoreOK: underscores only between digits (or after a base
 * prefix), as Go's number literals allow them.
 */
static bool underscore_ok(const char *s, size_t n)
{
	char saw = '^';
	bool hex = false;
	size_t i = 0;

	if (n && (s[0] == '-' || s[0] == '+')) {
		s++;
		n--;
	}
	if (n >= 2 && s[0] == '0' &&
	    ((s[1] | 0x20) == 'b' || (s[1] | 0x20) == 'o' ||
	     (s[1] | 0x20) == 'x')) {
		i = 2;
		saw = '0';
		hex = (s[1] | 0x20) == 'x';
	}
	for (; i < n; i++) {
		char c = s[i];

		if ((c >= '0' && c <= '9') ||
		    (hex && (c | 0x20) >= 'a' && (c | 0x20) <= 'f')) {
			saw = '0';
			continue;
		}
		if (c == '_') {
			if (saw != '0')
				return false;
			saw = '_';
			continue;
		}
		if (saw == '_')
			return false;
		saw = '!';
	}
	return saw != '_';
}

/*
 * strconv.ParseFloat(s, 64) for text already checked by yaml_float_syntax
 * (so NUL-terminated, digits, sign, '.', exponent only). Overflow is an
 * error, as in Go; underflow is not.
 */
static bool parse_float(const char *s, double *out)
{
	char *end;
	double d = strtod(s, &end);

	if (*end || isinf(d))
		return false;
	*out = d;
	return true;
}

/* Go's getnum(s, false): one or two digits. */
static bool ts_num(const char **p, const char *end, int *v)
{
	const char *s = *p;

	if (s == end || *s < '0' || *s > '9')
		return false;
	*v = *s++ - '0';
	if (s < end && *s >= '0' && *s <= '9')
		*v = *v * 10 + (*s++ - '0');
	*p = s;
	return true;
}

/* Go's getnum(s, true): exactly two digits. */
static bool ts_two(const char *s, int *v)
{
	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
		return false;
	*v = (s[0] - '0') * 10 + (s[1] - '0');
	return true;
}

static int days_in(int month, int year)
{
	static const int days[] = {31, 28, 31, 30, 31, 30,
				   31, 31, 30, 31, 30, 31};

	if (month == 2 && year % 4 == 0 && (year % 100 || year % 400 == 0))
		return 29;
	return days[month - 1];
}

/*
 * go-yaml v2's parseTimestamp: time.Parse with one of
 *   2006-1-2T15:4:5.999999999Z07:00   (also with a lower-case t)
 *   2006-1-2 15:4:5.999999999
 *   2006-1-2
 * A zone offset beyond +24:60 is no timestamp: the range check of the Go
 * releases kubectl 1.32 is built with (kubectl's own YAML output agrees).
 */
static bool is_timestamp(const char *s, size_t n)
{
	const char *p = s + 5, *end = s + n;
	int year = 0, mon, day, h, m, sec, th, tm;
	bool zone;

	if (n < 6 || s[4] != '-')
		return false;
	for (int i = 0; i < 4; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		year = year * 10 + (s[i] - '0');
	}
	if (!ts_num(&p, end, &mon) || mon < 1 || mon > 12)
		return false;
	if (p == end || *p++ != '-')
		return false;
	if (!ts_num(&p, end, &day) || day < 1 || day > days_in(mon, year))
		return false;
	if (p == end)
		return true;
	if (*p == 'T' || *p == 't') {
		zone = true;
		p++;
	} else if (*p == ' ') {
		zone = false;
		while (p < end && *p == ' ')
			p++;
	} else {
		return false;
	}
	if (!ts_num(&p, end, &h) || h >= 24 || p == end || *p++ != ':')
		return false;
	if (!ts_num(&p, end, &m) || m >= 60 || p == end || *p++ != ':')
		return false;
	if (!ts_num(&p, end, &sec) || sec >= 60)
		return false;
	if (end - p >= 2 && (*p == '.' || *p == ',') && p[1] >= '0' &&
	    p[1] <= '9') {
		for (p++; p < end && *p >= '0' && *p <= '9'; p++)
			;
	}
	if (zone) {
		if (p < end && *p == 'Z') {
			p++;
		} else {
			if (end - p < 6 || (*p != '+' && *p != '-') ||
			    p[3] != ':' || !ts_two(p + 1, &th) ||
			    !ts_two(p + 4, &tm))
				return false;
			if (th > 24 || tm > 60)
				return false;
			p += 6;
		}
	}
	return p == end;
}

/* go-yaml v2's resolve table: the first byte hints at the type. */
static char resolve_hint(unsigned char c)
{
	if (c == '+' || c == '-')
		return 'S';
	if (c >= '0' && c <= '9')
		return 'D';
	if (c == '.')
		return '.';
	if (c && strchr("yYnNtTfFoO~", c))
		return 'M';
	return 0;
}

/* go-yaml v2's resolve map: the exact spellings of bools, nulls, .inf. */
static bool resolve_map(const char *s, size_t n, struct diff_yaml_scalar *r)
{
	static const struct {
		const char *text;
		enum diff_yaml_kind kind;
		int v; /* bool value; float: 1 +inf, -1 -inf, 0 nan */
	} map[] = {
		{"y", DIFF_YAML_BOOL, 1},	{"Y", DIFF_YAML_BOOL, 1},
		{"yes", DIFF_YAML_BOOL, 1},	{"Yes", DIFF_YAML_BOOL, 1},
		{"YES", DIFF_YAML_BOOL, 1},	{"true", DIFF_YAML_BOOL, 1},
		{"True", DIFF_YAML_BOOL, 1},	{"TRUE", DIFF_YAML_BOOL, 1},
		{"on", DIFF_YAML_BOOL, 1},	{"On", DIFF_YAML_BOOL, 1},
		{"ON", DIFF_YAML_BOOL, 1},	{"n", DIFF_YAML_BOOL, 0},
		{"N", DIFF_YAML_BOOL, 0},	{"no", DIFF_YAML_BOOL, 0},
		{"No", DIFF_YAML_BOOL, 0},	{"NO", DIFF_YAML_BOOL, 0},
		{"false", DIFF_YAML_BOOL, 0},	{"False", DIFF_YAML_BOOL, 0},
		{"FALSE", DIFF_YAML_BOOL, 0},	{"off", DIFF_YAML_BOOL, 0},
		{"Off", DIFF_YAML_BOOL, 0},	{"OFF", DIFF_YAML_BOOL, 0},
		{"", DIFF_YAML_NULL, 0},	{"~", DIFF_YAML_NULL, 0},
		{"null", DIFF_YAML_NULL, 0},	{"Null", DIFF_YAML_NULL, 0},
		{"NULL", DIFF_YAML_NULL, 0},	{".nan", DIFF_YAML_FLOAT, 0},
		{".NaN", DIFF_YAML_FLOAT, 0},	{".NAN", DIFF_YAML_FLOAT, 0},
		{".inf", DIFF_YAML_FLOAT, 1},	{".Inf", DIFF_YAML_FLOAT, 1},
		{".INF", DIFF_YAML_FLOAT, 1},	{"+.inf", DIFF_YAML_FLOAT, 1},
		{"+.Inf", DIFF_YAML_FLOAT, 1},	{"+.INF", DIFF_YAML_FLOAT, 1},
		{"-.inf", DIFF_YAML_FLOAT, -1}, {"-.Inf", DIFF_YAML_FLOAT, -1},
		{"-.INF", DIFF_YAML_FLOAT, -1},
	};

	if (n > 5)
		return false;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (strlen(map[i].text) != n || memcmp(map[i].text, s, n))
			continue;
		r->kind = map[i].kind;
		if (r->kind == DIFF_YAML_BOOL)
			r->b = map[i].v;
		else if (r->kind == DIFF_YAML_FLOAT)
			r->f = map[i].v > 0   ? INFINITY
			       : map[i].v < 0 ? -INFINITY
					      : NAN;
		return true;
	}
	return false;
}

int diff_yaml_resolve(struct diff_yaml_scalar *out, const char *s, size_t n,
		      unsigned flags, struct buf *scratch)
{
	char hint = n ? resolve_hint((unsigned char)s[0]) : 'N';
	const char *p;
	size_t m;
	int error;

	out->kind = DIFF_YAML_STR;
	if (!hint || resolve_map(s, n, out))
		return 0;
	if (hint == 'M' || hint == 'N')
		return 0;

	/* Numbers: the text without any '_' (for '.': as Go's ParseFloat). */
	if (hint == '.' && !underscore_ok(s, n))
		return 0;
	buf_reset(scratch);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '_')
			continue;
		if ((error = buf_addch(scratch, s[i])) < 0)
			return error;
	}
	p = buf_cstr(scratch);
	m = scratch->len;

	if (hint == '.') {
		if (yaml_float_syntax(p, m) && parse_float(p, &out->f))
			out->kind = DIFF_YAML_FLOAT;
		return 0;
	}
	if ((flags & DIFF_YAML_TRY_TIMESTAMP) &&
	    is_timestamp(s, n)) {
		out->kind = DIFF_YAML_TIMESTAMP;
		return 0;
	}
	if (go_parse_int(p, m, 0, &out->i) == 0) {
		out->kind = DIFF_YAML_INT;
	} else if (go_parse_uint(p, m, 0, &out->u) == 0) {
		out->kind = DIFF_YAML_UINT;
	} else if (yaml_float_syntax(p, m) && parse_float(p, &out->f)) {
		out->kind = DIFF_YAML_FLOAT;
	} else if (m > 2 && p[0] == '0' && p[1] == 'b' &&
		   go_parse_int(p + 2, m - 2, 2, &out->i) == 0) {
		/*
		 * go-yaml v2 retries "0b<digits>" with ParseInt(digits, 2),
		 * which takes a sign: "0b-101" is -5. (Its ParseUint retry
		 * and its "-0b" retry accept nothing that ParseInt(s, 0) and
		 * ParseUint(s, 0) did not.)
		 */
		out->kind = DIFF_YAML_INT;
	}
	/* Anything else is a string, even a float too large, like 1e400. */
	return 0;
}
