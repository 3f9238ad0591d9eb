#include "util/err.h"

#include <string.h>

#include "util/banned.h" /* last */

int err_vset(struct err *err, int code, const char *fmt, va_list ap)
{
	size_t start;

	if (!err)
		return code;
	if (!err->count)
		err->code = code;
	if (err->count++ >= ERR_MAX_PROBLEMS)
		return code;
	start = err->msg.len;
	if (buf_vaddf(&err->msg, fmt, ap) < 0) {
		buf_truncate(&err->msg, start);
		buf_adds(&err->msg, "out of memory while reporting an error");
	}
	/*
	 * One problem is one line, whatever the message held. A NUL (from
	 * "%c") would end the line early for every reader of the text.
	 */
	for (size_t i = start; i < err->msg.len; i++)
		if (err->msg.ptr[i] == '\n' || err->msg.ptr[i] == '\r' ||
		    err->msg.ptr[i] == '\0')
			err->msg.ptr[i] = ' ';
	/* Whole lines only: without its newline, drop the text. */
	if (buf_addch(&err->msg, '\n') < 0)
		buf_truncate(&err->msg, start);
	return code;
}

int err_set(struct err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = err_vset(err, code, fmt, ap);
	va_end(ap);
	return code;
}

const char *err_first(const struct err *err)
{
	static __thread char line[1024];
	const char *msg, *nl;
	size_t n;

	if (!err || !err->msg.len)
		return "";
	msg = err->msg.ptr;
	nl = strchr(msg, '\n');
	n = nl ? (size_t)(nl - msg) : strlen(msg);
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	memcpy(line, msg, n);
	line[n] = '\0';
	return line;
}

const char *err_msg(const struct err *err)
{
	return err ? buf_cstr(&err->msg) : "";
}

/* Length of the line at p, without its newline (which may be missing). */
static size_t line_len(const char *p)
{
	return strcspn(p, "\n");
}

void err_print(const struct err *err, FILE *f, const char *prefix)
{
	const char *p;

	if (!err)
		return;
	for (p = buf_cstr(&err->msg); *p;) {
		size_t n = line_len(p);

		if (prefix)
			fprintf(f, "%s: ", prefix);
		fprintf(f, "%.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
	if (err->count > ERR_MAX_PROBLEMS)
		fprintf(f, "%s%s... and %u more problems\n", prefix ? prefix : "",
			prefix ? ": " : "", err->count - ERR_MAX_PROBLEMS);
}

void err_move(struct err *dst, struct err *src)
{
	if (!src || !src->count)
		return;
	if (dst) {
		unsigned kept = dst->count < ERR_MAX_PROBLEMS
					? ERR_MAX_PROBLEMS - dst->count
					: 0;
		const char *p = buf_cstr(&src->msg);
		size_t n = 0;

		if (!dst->count)
			dst->code = src->code;
		/* Keep whole lines only, up to dst's room. */
		while (kept && p[n]) {
			n += line_len(p + n);
			n += p[n] == '\n';
			kept--;
		}
		if (buf_add(&dst->msg, p, n) == 0 && n && p[n - 1] != '\n')
			buf_addch(&dst->msg, '\n');
		dst->count += src->count;
	}
	err_reset(src);
}

void err_reset(struct err *err)
{
	if (!err)
		return;
	err->code = 0;
	err->count = 0;
	buf_reset(&err->msg);
}

void err_release(struct err *err)
{
	if (!err)
		return;
	err->code = 0;
	err->count = 0;
	buf_release(&err->msg);
}

const char *err_errno_str(int errnum)
{
	return strerror(errnum);
}
