/*
 * base64 (RFC 4648 sections 4 and 5). See base64.h for the rules.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "util/base64.h"
#include "util/err.h"

#include "util/banned.h" /* last */

static const char std_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				 "abcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				 "abcdefghijklmnopqrstuvwxyz0123456789-_";

size_t base64_encoded_len(size_t len)
{
	return (len + 2) / 3 * 4;
}

int base64_encode(struct buf *out, const void *data, size_t len, unsigned flags)
{
	const char *digits = flags & BASE64_URL ? url_digits : std_digits;
	const unsigned char *p = data;
	size_t start = out->len, i;
	char quad[4];
	int error;

	if ((error = buf_grow(out, base64_encoded_len(len))) < 0)
		return error;
	for (i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t n = 4;

		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		quad[0] = digits[(v >> 18) & 63];
		quad[1] = digits[(v >> 12) & 63];
		quad[2] = i + 1 < len ? digits[(v >> 6) & 63] : '=';
		quad[3] = i + 2 < len ? digits[v & 63] : '=';
		if (flags & BASE64_NOPAD)
			n = i + 2 < len ? 4 : i + 1 < len ? 3 : 2;
		if ((error = buf_add(out, quad, n)) < 0) {
			buf_truncate(out, start);
			return error;
		}
	}
	return 0;
}

/* The value of one digit, or -1. */
static int digit_value(unsigned char c, bool url)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (url ? '-' : '+'))
		return 62;
	if (c == (url ? '_' : '/'))
		return 63;
	return -1;
}

int base64_decode(struct buf *out, const char *in, size_t len, unsigned flags)
{
	bool url = flags & BASE64_URL;
	uint32_t last_bits = flags & BASE64_ANY_LAST_BITS ? 0 : ~0u;
	size_t start = out->len, i, ndig = 0, npad = 0;
	unsigned char bytes[3];
	uint32_t acc = 0;
	int error = 0, v;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if ((c == '\n' || c == '\r') && (flags & BASE64_SKIP_NEWLINES))
			continue;
		if (c == '=') {
			/* Padding only completes a quantum of 2 or 3 digits. */
			if (ndig % 4 < 2 || ndig % 4 + npad >= 4)
				goto bad;
			npad++;
			continue;
		}
		if (npad || (v = digit_value(c, url)) < 0)
			goto bad;
		acc = acc << 6 | (uint32_t)v;
		if (++ndig % 4 == 0) {
			bytes[0] = (unsigned char)(acc >> 16);
			bytes[1] = (unsigned char)(acc >> 8);
			bytes[2] = (unsigned char)acc;
			acc = 0;
			if ((error = buf_add(out, bytes, 3)) < 0)
				goto out;
		}
	}
	switch (ndig % 4) {
	case 0:
		if (npad)
			goto bad;
		break;
	case 1:
		goto bad;
	case 2:
		/* 12 bits, 8 used: the last 4 must be zero. */
		if ((acc & 0xf & last_bits) ||
		    (npad != 2 && !(npad == 0 && (flags & BASE64_NOPAD))))
			goto bad;
		bytes[0] = (unsigned char)(acc >> 4);
		error = buf_add(out, bytes, 1);
		break;
	case 3:
		if ((acc & 0x3 & last_bits) ||
		    (npad != 1 && !(npad == 0 && (flags & BASE64_NOPAD))))
			goto bad;
		bytes[0] = (unsigned char)(acc >> 10);
		bytes[1] = (unsigned char)(acc >> 2);
		error = buf_add(out, bytes, 2);
		break;
	}
	goto out;
bad:
	error = ERR_PARSE;
out:
	if (error < 0)
		buf_truncate(out, start);
	return error;
}
