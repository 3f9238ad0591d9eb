/*
 * log: the daemon's logging sink, one structured line per event.
 *
 * For syncd/ only: libraries (util, diff, renderers) never log, they fill a
 * struct err and the daemon decides what to print.
 *
 * A call names an event and adds string fields:
 *
 *   log_info("synced app", "app", app, "rev", rev, NULL);
 *
 * and writes one line, as logfmt (the default)
 *
 *   time=2026-11-29T10:00:00.123Z level=info msg="synced app" app=web rev=a1
 *
 * or as JSON (one line, wrapped here)
 *
 *   {"time":"2026-11-29T10:00:00.123Z","level":"info","msg":"synced app",
 *   "app":"web","rev":"a1"}
 *
 * time is UTC with milliseconds. A logfmt value is quoted when it holds a
 * space, '=', '"', a control character or invalid UTF-8; inside quotes (and
 * in every JSON string) '"', '\\', \n, \r, \t are backslash-escaped, other
 * control characters become \u00XX and invalid UTF-8 bytes \ufffd. An empty
 * or NULL value prints as `key=` (logfmt) or "" (JSON).
 *
 * Secrets. Keeping credentials out of logs is the caller's job: never pass
 * a token, a password, a kubeconfig, a Secret's data or a whole object as a
 * value. The sink makes the common slips harmless:
 *   - `msg` is a plain string, never a format, so data cannot be
 *     interpreted; put variable parts in fields.
 *   - A field whose key contains (case-insensitively) password, passwd,
 *     secret, token, authorization, credential, cookie, apikey, api_key,
 *     private_key or privatekey is printed as [REDACTED], whatever its
 *     value: name fields after what they hold.
 *   - The user-info part of a URL ("https://user:token@host/..." and
 *     "https://token@host/...") is replaced by REDACTED in `msg` and in
 *     every value, so a Git remote URL can be logged as is.
 *   - Keys are restricted to [A-Za-z0-9_./-] (other bytes become '_'), so
 *     a value passed by mistake as a key cannot break the line's syntax;
 *     the keys time, level and msg become _time, _level and _msg, so a
 *     field cannot pass for the line's own.
 *   - Values longer than LOG_VALUE_MAX bytes are cut (at a UTF-8 character
 *     boundary) and end in "...(truncated)".
 *
 * Thread-safe: each line is built in memory and written with one fwrite()
 * and fflush() under a mutex, so lines from several threads never mix.
 *
 * Not compatible with <syslog.h>, which defines LOG_DEBUG and LOG_INFO as
 * macros: a file includes one or the other.
 */
#ifndef UTIL_LOG_H
#define UTIL_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#if defined(LOG_DEBUG) || defined(LOG_INFO)
#error "util/log.h cannot be used together with <syslog.h>"
#endif

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

enum log_format { LOG_FORMAT_LOGFMT, LOG_FORMAT_JSON };

/* Fields beyond this many key/value pairs in one call are dropped. */
#define LOG_MAX_FIELDS 31

/* Longest value (and msg) printed, in bytes, before escaping. */
#define LOG_VALUE_MAX 8192

/*
 * Where, how and from which level on to log. `out` NULL means stderr; the
 * stream stays the caller's (it is not closed) and must stay open while it
 * is the sink. Until the first call: stderr, logfmt, LOG_INFO.
 */
void log_setup(FILE *out, enum log_format fmt, enum log_level min);

/*
 * Parse "debug", "info", "warn" (or "warning"), "error", case-insensitive,
 * into *out. 0 on success; ERR_INVALID (and *out untouched) otherwise.
 */
int log_parse_level(const char *s, enum log_level *out);

/* Parse "logfmt" or "json" into *out. 0 on success, else ERR_INVALID. */
int log_parse_format(const char *s, enum log_format *out);

/* Would a line at `lvl` be written? For skipping costly field values. */
bool log_enabled(enum log_level lvl);

/*
 * Write one line: msg, then key/value pairs of strings, ended by a NULL
 * key: log_msg(LOG_WARN, "retrying", "app", app, "error", why, NULL).
 * A value may be NULL (printed empty), so the list must still end with a
 * NULL *key* after the last value; the compiler checks that the last
 * argument is NULL, not that the pairs are complete. Prefer the
 * log_debug() ... log_error() macros, which check the count too.
 */
void log_msg(enum log_level lvl, const char *msg, ...)
	__attribute__((sentinel));

/*
 * The same with the arguments in an array: args[0] is msg, then keys and
 * values; the list ends at a NULL key or after nargs entries (a key
 * without a value gets an empty one).
 */
void log_msg_array(enum log_level lvl, const char *const *args, size_t nargs);

/*
 * log_info(msg, key, value, ..., NULL) and friends. Every argument must be
 * a string (a number is a compile error: format it first), and a missing
 * value or missing final NULL is a compile error ("log: want msg,
 * key/value pairs, NULL"). At most LOG_MAX_FIELDS pairs.
 */
#define log_debug(...) LOG_CALL_(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  LOG_CALL_(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  LOG_CALL_(LOG_WARN, __VA_ARGS__)
#define log_error(...) LOG_CALL_(LOG_ERROR, __VA_ARGS__)

/* Implementation of the macros above. */
#define LOG_CALL_(lvl, ...)                                      \
	log_msg_array((lvl), (const char *const[]){__VA_ARGS__}, \
		      LOG_NARGS_(__VA_ARGS__) +                  \
			      LOG_CHECK_PAIRS_(LOG_NARGS_(__VA_ARGS__)))
#define LOG_CHECK_PAIRS_(n)                                              \
	(0 * sizeof(struct {                                             \
		 _Static_assert((n) % 2 == 0,                            \
				"log: want msg, key/value pairs, NULL"); \
		 char c_;                                                \
	 }))
#define LOG_NARGS_(...)                                                       \
	LOG_NARGS_N_(__VA_ARGS__, 64, 63, 62, 61, 60, 59, 58, 57, 56, 55, 54, \
		     53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40,  \
		     39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26,  \
		     25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12,  \
		     11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define LOG_NARGS_N_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, \
		     a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24,  \
		     a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35,  \
		     a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46,  \
		     a47, a48, a49, a50, a51, a52, a53, a54, a55, a56, a57,  \
		     a58, a59, a60, a61, a62, a63, a64, n, ...)              \
	n

#endif
