/*
 * JSON syntax errors as Go's encoding/json words them (its scanner,
 * which kube-apiserver's decoders share): the body of a request that does
 * not parse is refused with these texts ("unexpected end of JSON input",
 * "invalid character 'o' in literal null (expecting 'u')").
 */
#include <stdio.h>
#include <string.h>

#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

/* Deeper nesting is refused as Go's scanner refuses it (10000). */
#define MAX_NESTING 10000

struct scan {
	const unsigned char *p, *end;
	struct buf *why;
	unsigned depth;
	json_t *dups;	 /* duplicate keys found, or NULL: not asked */
	struct buf path; /* where the scanner is: "spec.containers[0]" */
};

/* encoding/json's quoteChar. */
static void quote_char(struct buf *out, unsigned char c)
{
	if (c == '\'')
		buf_adds(out, "'\\''");
	else if (c == '"')
		buf_adds(out, "'\"'");
	else if (c >= 0x20 && c < 0x7f)
		buf_addf(out, "'%c'", c);
	else if (c == '\n')
		buf_adds(out, "'\\n'");
	else if (c == '\r')
		buf_adds(out, "'\\r'");
	else if (c == '\t')
		buf_adds(out, "'\\t'");
	else if (c < 0x20 || c == 0x7f)
		buf_addf(out, "'\\x%02x'", c);
	else
		buf_addf(out, "'\\u%04x'", c);
}

static int bad(struct scan *s, const char *context)
{
	if (s->p >= s->end) {
		buf_adds(s->why, "unexpected end of JSON input");
		return -1;
	}
	buf_adds(s->why, "invalid character ");
	quote_char(s->why, *s->p);
	buf_addf(s->why, " %s", context);
	return -1;
}

static void skip_space(struct scan *s)
{
	while (s->p < s->end &&
	       (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

static int scan_string(struct scan *s)
{
	int i;

	s->p++; /* the opening quote */
	while (s->p < s->end) {
		unsigned char c = *s->p;

		if (c == '"') {
			s->p++;
			return 0;
		}
		if (c < 0x20)
			return bad(s, "in string literal");
		s->p++;
		if (c != '\\')
			continue;
		if (s->p >= s->end)
			break;
		c = *s->p;
		if (c == 'u') {
			s->p++;
			for (i = 0; i < 4; i++, s->p++)
				if (s->p >= s->end || !is_hex(*s->p))
					return bad(s, "in \\u hexadecimal "
						      "character escape");
			continue;
		}
		if (!strchr("\"\\/bfnrt", c))
			return bad(s, "in string escape code");
		s->p++;
	}
	return bad(s, "");
}

static bool digit(const struct scan *s)
{
	return s->p < s->end && *s->p >= '0' && *s->p <= '9';
}

static int scan_number(struct scan *s)
{
	if (*s->p == '-') {
		s->p++;
		if (!digit(s))
			return bad(s, "in numeric literal");
	}
	if (*s->p == '0')
		s->p++;
	else
		while (digit(s))
			s->p++;
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (!digit(s))
			return bad(s, "after decimal point in numeric literal");
		while (digit(s))
			s->p++;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (!digit(s))
			return bad(s, "in exponent of numeric literal");
		while (digit(s))
			s->p++;
	}
	return 0;
}

static int scan_literal(struct scan *s, const char *lit)
{
	char context[40];
	size_t i;

	for (i = 1; lit[i]; i++) {
		s->p++;
		if (s->p >= s->end || *s->p != (unsigned char)lit[i]) {
			snprintf(context, sizeof(context),
				 "in literal %s (expecting '%c')", lit, lit[i]);
			return bad(s, context);
		}
	}
	s->p++;
	return 0;
}

static int scan_value(struct scan *s);

/* Has `keys` (NUL-separated texts) the key key[0..n)? */
static bool seen_key(const struct buf *keys, const char *key, size_t n)
{
	const char *p = keys->ptr, *end;

	if (!p)
		return false; /* no key yet (NULL + 0 is undefined) */
	end = p + keys->len;
	while (p < end) {
		if (strlen(p) == n && !memcmp(p, key, n))
			return true;
		p += strlen(p) + 1;
	}
	return false;
}

static int scan_object(struct scan *s)
{
	struct buf keys = BUF_INIT;
	size_t plen = s->path.len, klen;
	const unsigned char *key;
	int ret = -1;

	s->p++;
	skip_space(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		return 0;
	}
	for (;;) {
		skip_space(s);
		if (s->p >= s->end || *s->p != '"') {
			bad(s, "looking for beginning of object key string");
			goto out;
		}
		key = s->p + 1;
		if (scan_string(s) < 0)
			goto out;
		klen = (size_t)(s->p - 1 - key);
		if (s->dups) {
			buf_addf(&s->path, "%s%.*s", plen ? "." : "",
				 (int)klen, key);
			if (seen_key(&keys, (const char *)key, klen))
				json_array_append_new(
					s->dups, json_string(buf_cstr(&s->path)));
			buf_add(&keys, key, klen);
			buf_addch(&keys, '\0');
		}
		skip_space(s);
		if (s->p >= s->end || *s->p != ':') {
			bad(s, "after object key");
			goto out;
		}
		s->p++;
		if (scan_value(s) < 0)
			goto out;
		buf_truncate(&s->path, plen);
		skip_space(s);
		if (s->p < s->end && *s->p == '}') {
			s->p++;
			ret = 0;
			goto out;
		}
		if (s->p >= s->end || *s->p != ',') {
			bad(s, "after object key:value pair");
			goto out;
		}
		s->p++;
	}
out:
	buf_truncate(&s->path, plen);
	buf_release(&keys);
	return ret;
}

static int scan_array(struct scan *s)
{
	size_t plen = s->path.len, i = 0;

	s->p++;
	skip_space(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		return 0;
	}
	for (;; i++) {
		if (s->dups)
			buf_addf(&s->path, "[%zu]", i);
		if (scan_value(s) < 0)
			return -1;
		buf_truncate(&s->path, plen);
		skip_space(s);
		if (s->p < s->end && *s->p == ']') {
			s->p++;
			return 0;
		}
		if (s->p >= s->end || *s->p != ',')
			return bad(s, "after array element");
		s->p++;
	}
}

static int scan_value(struct scan *s)
{
	int error;

	skip_space(s);
	if (s->p >= s->end)
		return bad(s, "");
	switch (*s->p) {
	case '{':
	case '[':
		if (++s->depth > MAX_NESTING) {
			buf_adds(s->why, "exceeded max depth");
			return -1;
		}
		error = *s->p == '{' ? scan_object(s) : scan_array(s);
		s->depth--;
		return error;
	case '"':
		return scan_string(s);
	case 't':
		return scan_literal(s, "true");
	case 'f':
		return scan_literal(s, "false");
	case 'n':
		return scan_literal(s, "null");
	default:
		if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))
			return scan_number(s);
		return bad(s, "looking for beginning of value");
	}
}

int emu_go_json_scan(const char *data, size_t len, struct buf *why,
		     json_t *dups)
{
	struct scan s = {(const unsigned char *)data,
			 (const unsigned char *)data + len, why, 0, dups,
			 BUF_INIT};
	int ret = -1;

	if (scan_value(&s) < 0)
		goto out;
	skip_space(&s);
	if (s.p < s.end) {
		bad(&s, "after top-level value");
		goto out;
	}
	ret = 0;
out:
	buf_release(&s.path);
	return ret;
}

int emu_go_json_check(const char *data, size_t len, struct buf *why)
{
	return emu_go_json_scan(data, len, why, NULL);
}
