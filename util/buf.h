/*
 * buf: a growable byte buffer with an optional size cap.
 *
 * The contents are always NUL-terminated once anything was added, so
 * `b.ptr` can be used as a C string; binary data (with NULs inside) is fine
 * too, `len` is authoritative. A buffer initialised with BUF_INIT has
 * ptr == NULL until the first append; use buf_cstr() where an empty buffer
 * must read as "".
 *
 * Every buffer fed from the network, from Git or from a child process is
 * given a cap: an append that would make len exceed cap fails with
 * ERR_LIMIT and leaves the buffer unchanged. cap == 0 means "no cap".
 */
#ifndef UTIL_BUF_H
#define UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *ptr;
	size_t len;
	size_t alloc;
	size_t cap;
};

#define BUF_INIT {NULL, 0, 0, 0}

/* Fill caller storage: empty, with the given cap (0: unlimited). */
void buf_init(struct buf *b, size_t cap);

/* Make room for `extra` more bytes (plus the NUL). ERR_LIMIT over the cap. */
int buf_grow(struct buf *b, size_t extra);

int buf_add(struct buf *b, const void *data, size_t len);
int buf_adds(struct buf *b, const char *s);
int buf_addch(struct buf *b, char c);
int buf_addf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Drop the contents, keep the allocation. */
void buf_reset(struct buf *b);

/* Shorten to `len` bytes (no-op when already shorter). */
void buf_truncate(struct buf *b, size_t len);

/*
 * The length of s[0..len) cut to at most `max` bytes without splitting a
 * UTF-8 sequence (len itself when it fits).
 */
size_t utf8_cut(const char *s, size_t len, size_t max);

/* Free the contents; the buffer is BUF_INIT again (cap kept). */
void buf_release(struct buf *b);

/*
 * Hand the contents to the caller and leave the buffer empty. Never NULL:
 * an empty buffer yields an allocated "". Caller owns the result; free().
 * Returns NULL only when out of memory.
 */
char *buf_detach(struct buf *b, size_t *len);

/* The contents as a C string; "" when empty. Valid until the next change. */
const char *buf_cstr(const struct buf *b);

#endif
