#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

#include "util/banned.h" /* last */

void buf_init(struct buf *b, size_t cap)
{
	b->ptr = NULL;
	b->len = 0;
	b->alloc = 0;
	b->cap = cap;
}

int buf_grow(struct buf *b, size_t extra)
{
	size_t want, alloc;
	char *p;

	if (extra > (size_t)-1 - b->len - 1)
		return ERR_NOMEM;
	want = b->len + extra + 1;
	if (b->cap && want - 1 > b->cap)
		return ERR_LIMIT;
	if (want <= b->alloc)
		return 0;
	alloc = b->alloc ? b->alloc : 64;
	while (alloc < want)
		alloc = alloc > (size_t)-1 / 2 ? want : alloc * 2;
	p = realloc(b->ptr, alloc);
	if (!p)
		return ERR_NOMEM;
	if (!b->ptr)
		p[0] = '\0';
	b->ptr = p;
	b->alloc = alloc;
	return 0;
}

int buf_add(struct buf *b, const void *data, size_t len)
{
	int error;

	if ((error = buf_grow(b, len)) < 0)
		return error;
	if (len)
		memcpy(b->ptr + b->len, data, len);
	b->len += len;
	b->ptr[b->len] = '\0';
	return 0;
}

int buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int buf_addch(struct buf *b, char c)
{
	return buf_add(b, &c, 1);
}

int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n, error;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return ERR_GENERIC;
	if ((error = buf_grow(b, (size_t)n)) < 0)
		return error;
	vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int error;

	va_start(ap, fmt);
	error = buf_vaddf(b, fmt, ap);
	va_end(ap);
	return error;
}

void buf_reset(struct buf *b)
{
	buf_truncate(b, 0);
}

void buf_truncate(struct buf *b, size_t len)
{
	if (len >= b->len)
		return;
	b->len = len;
	b->ptr[len] = '\0';
}

size_t utf8_cut(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

void buf_release(struct buf *b)
{
	free(b->ptr);
	b->ptr = NULL;
	b->len = 0;
	b->alloc = 0;
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p = b->ptr;

	if (!p && !(p = calloc(1, 1)))
		return NULL;
	if (len)
		*len = b->len;
	b->ptr = NULL;
	b->len = 0;
	b->alloc = 0;
	return p;
}

const char *buf_cstr(const struct buf *b)
{
	return b->ptr ? b->ptr : "";
}
