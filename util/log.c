/*
 * log: see log.h. Each line is built in a private buffer (no lock held
 * while formatting), then written with one fwrite() + fflush() under the
 * sink's mutex.
 */
#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/buf.h"
#include "util/err.h"

#include "util/banned.h" /* last */

#define MAX_KEY 128

static const char *const level_names[] = {"debug", "info", "warn", "error"};

static const char *const sensitive_keys[] = {
	"password",	 "passwd",	"secret",     "token",
	"authorization", "credential",	"cookie",     "apikey",
	"api_key",	 "private_key", "privatekey",
};

static const char redacted[] = "[REDACTED]";
static const char truncated_mark[] = "...(truncated)";

/* The sink. `sink` is guarded by `lock`; NULL means stderr. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *sink;
static atomic_int cur_format = LOG_FORMAT_LOGFMT;
static atomic_int cur_min = LOG_INFO;

void log_setup(FILE *out, enum log_format fmt, enum log_level min)
{
	pthread_mutex_lock(&lock);
	sink = out;
	atomic_store(&cur_format, (int)fmt);
	atomic_store(&cur_min, (int)min);
	pthread_mutex_unlock(&lock);
}

int log_parse_level(const char *s, enum log_level *out)
{
	if (!s)
		return ERR_INVALID;
	for (size_t i = 0; i < sizeof(level_names) / sizeof(*level_names);
	     i++) {
		if (!strcasecmp(s, level_names[i])) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	if (!strcasecmp(s, "warning")) {
		*out = LOG_WARN;
		return 0;
	}
	return ERR_INVALID;
}

int log_parse_format(const char *s, enum log_format *out)
{
	if (s && !strcasecmp(s, "logfmt")) {
		*out = LOG_FORMAT_LOGFMT;
		return 0;
	}
	if (s && !strcasecmp(s, "json")) {
		*out = LOG_FORMAT_JSON;
		return 0;
	}
	return ERR_INVALID;
}

bool log_enabled(enum log_level lvl)
{
	return (int)lvl >= atomic_load_explicit(&cur_min, memory_order_relaxed);
}

/*
 * Length of the valid UTF-8 sequence at s[0..n), or 0 when s starts with an
 * invalid one (overlong forms, surrogates and values above U+10FFFF
 * included, as JSON decoders reject them).
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

static bool needs_quotes(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n;

		if (u[i] <= ' ' || u[i] == '=' || u[i] == '"' || u[i] == 0x7f)
			return true;
		if (!(n = utf8_len(u + i, len - i)))
			return true;
		i += n;
	}
	return false;
}

/* Append s as the inside of a JSON string (also used for quoted logfmt). */
static void add_escaped(struct buf *b, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		unsigned char c = u[i];
		size_t n;

		switch (c) {
		case '"':
			buf_adds(b, "\\\"");
			break;
		case '\\':
			buf_adds(b, "\\\\");
			break;
		case '\n':
			buf_adds(b, "\\n");
			break;
		case '\r':
			buf_adds(b, "\\r");
			break;
		case '\t':
			buf_adds(b, "\\t");
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				buf_addf(b, "\\u%04x", c);
			} else if (!(n = utf8_len(u + i, len - i))) {
				buf_adds(b, "\\ufffd");
			} else {
				buf_add(b, s + i, n);
				i += n;
				continue;
			}
		}
		i++;
	}
}

static bool is_sensitive(const char *key)
{
	for (size_t i = 0; i < sizeof(sensitive_keys) / sizeof(*sensitive_keys);
	     i++)
		if (strcasestr(key, sensitive_keys[i]))
			return true;
	return false;
}

static bool ends_authority(char c)
{
	return c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' ||
	       c == '<' || c == '>' || (unsigned char)c <= ' ';
}

/*
 * Copy s[0..len) into out with the user-info of every URL ("scheme://
 * user:password@host") replaced by REDACTED; a value is cut at
 * LOG_VALUE_MAX bytes.
 */
static void clean_value(struct buf *out, const char *s, size_t len)
{
	bool cut = false;
	size_t i = 0;

	if (len > LOG_VALUE_MAX) {
		len = utf8_cut(s, len, LOG_VALUE_MAX);
		cut = true;
	}
	while (i < len) {
		const char *sep = memmem(s + i, len - i, "://", 3);
		size_t start, end, at = 0;

		if (!sep) {
			buf_add(out, s + i, len - i);
			break;
		}
		start = (size_t)(sep - s) + 3;
		for (end = start; end < len && !ends_authority(s[end]); end++)
			if (s[end] == '@')
				at = end;
		if (at) {
			buf_add(out, s + i, start - i);
			buf_adds(out, "REDACTED");
			i = at;
		} else {
			buf_add(out, s + i, end - i);
			i = end;
		}
	}
	if (cut)
		buf_adds(out, truncated_mark);
}

static void add_string(struct buf *b, enum log_format fmt, const char *s,
		       size_t len)
{
	if (fmt == LOG_FORMAT_JSON || needs_quotes(s, len)) {
		buf_addch(b, '"');
		add_escaped(b, s, len);
		buf_addch(b, '"');
	} else {
		buf_add(b, s, len);
	}
}

static bool is_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '/' ||
	       c == '-';
}

static void add_field(struct buf *b, struct buf *scratch, enum log_format fmt,
		      const char *key, const char *value)
{
	char k[MAX_KEY + 2];
	size_t n = 0;

	/* A field must not pass for one of the line's own. */
	if (!strcmp(key, "time") || !strcmp(key, "level") ||
	    !strcmp(key, "msg"))
		k[n++] = '_';
	for (const char *p = key; *p && n < MAX_KEY + 1; p++)
		k[n++] = is_key_char(*p) ? *p : '_';
	if (!n)
		k[n++] = '_';
	k[n] = '\0';

	buf_reset(scratch);
	if (is_sensitive(key))
		buf_adds(scratch, redacted);
	else if (value)
		clean_value(scratch, value, strlen(value));

	if (fmt == LOG_FORMAT_JSON) {
		buf_addf(b, ",\"%s\":", k);
		add_string(b, fmt, buf_cstr(scratch), scratch->len);
	} else {
		buf_addf(b, " %s=", k);
		if (scratch->len)
			add_string(b, fmt, buf_cstr(scratch), scratch->len);
	}
}

static void format_line(struct buf *b, enum log_format fmt, enum log_level lvl,
			const char *const *args, size_t nargs)
{
	struct buf scratch = BUF_INIT;
	const char *msg = nargs && args[0] ? args[0] : "";
	struct timespec ts;
	struct tm tm;
	char when[96];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)(ts.tv_nsec / 1000000));

	clean_value(&scratch, msg, strlen(msg));
	if (fmt == LOG_FORMAT_JSON) {
		buf_addf(b, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":", when,
			 level_names[lvl]);
		add_string(b, fmt, buf_cstr(&scratch), scratch.len);
	} else {
		buf_addf(b, "time=%s level=%s msg=", when, level_names[lvl]);
		if (scratch.len)
			add_string(b, fmt, buf_cstr(&scratch), scratch.len);
	}
	for (size_t i = 1, fields = 0;
	     i < nargs && args[i] && fields < LOG_MAX_FIELDS; i += 2, fields++)
		add_field(b, &scratch, fmt, args[i],
			  i + 1 < nargs ? args[i + 1] : NULL);
	if (fmt == LOG_FORMAT_JSON)
		buf_addch(b, '}');
	buf_addch(b, '\n');
	buf_release(&scratch);
}

void log_msg_array(enum log_level lvl, const char *const *args, size_t nargs)
{
	static const char oom[] = "level=error msg=\"log: out of memory\"\n";
	struct buf line = BUF_INIT;
	enum log_format fmt;
	FILE *f;

	if (!log_enabled(lvl))
		return;
	if ((int)lvl > LOG_ERROR)
		lvl = LOG_ERROR;
	if ((int)lvl < LOG_DEBUG)
		lvl = LOG_DEBUG;
	fmt = atomic_load_explicit(&cur_format, memory_order_relaxed) ==
			      LOG_FORMAT_JSON
		      ? LOG_FORMAT_JSON
		      : LOG_FORMAT_LOGFMT;
	format_line(&line, fmt, lvl, args, nargs);

	pthread_mutex_lock(&lock);
	f = sink ? sink : stderr;
	/*
	 * Out of memory while building the line: the final '\n' (the last
	 * append) is then missing. Say so rather than print half a line.
	 */
	if (line.len && line.ptr[line.len - 1] == '\n')
		fwrite(line.ptr, 1, line.len, f);
	else
		fwrite(oom, 1, sizeof(oom) - 1, f);
	fflush(f);
	pthread_mutex_unlock(&lock);
	buf_release(&line);
}

void log_msg(enum log_level lvl, const char *msg, ...)
{
	const char *args[1 + 2 * LOG_MAX_FIELDS];
	size_t n = 0;
	va_list ap;

	if (!log_enabled(lvl))
		return;
	args[n++] = msg;
	va_start(ap, msg);
	for (;;) {
		const char *key = va_arg(ap, const char *), *value;

		if (!key)
			break;
		value = va_arg(ap, const char *);
		/* Read to the NULL key anyway: only storing is bounded. */
		if (n + 2 <= sizeof(args) / sizeof(*args)) {
			args[n++] = key;
			args[n++] = value;
		}
	}
	va_end(ap);
	log_msg_array(lvl, args, n);
}
