/*
 * An OCI distribution (registry) client (see internal.h), on fetch.c.
 *
 * Authentication follows the registry's lead: a request goes out without
 * credentials (or with the kept token, or with basic auth once the
 * registry asked for it), and a 401 is answered once per request: a
 * Bearer challenge by a token from the realm, kept for the next requests
 * until it is refused; a Basic challenge by sending the options' basic
 * auth. A second 401 for the same request means the credentials are
 * refused, and no third try is made.
 *
 * Nothing the registry sends is trusted: digests are checked against the
 * bytes received, bodies are bounded before and while they are read,
 * and a registry's text enters a message only as a short, sanitized
 * excerpt.
 */
#include "source/internal.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/file.h"

#include "util/banned.h" /* last */

#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_OCI_INDEX	"application/vnd.oci.image.index.v1+json"
#define MT_DOCKER_MANIFEST \
	"application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_LIST \
	"application/vnd.docker.distribution.manifest.list.v2+json"

#define TOKEN_MAX_BYTES	    (64u << 10)
#define TAGS_PAGE_MAX_BYTES (4u << 20)
#define TAGS_PAGE_SIZE	    1000
#define EXCERPT_MAX	    200
#define TAG_MAX		    128
#define NAME_TOTAL_MAX	    255

struct src_oci {
	struct src_http *http;
	bool plain_http;
	bool has_username;  /* basic auth possible */
	bool static_bearer; /* a token without user name: sent from the
			       start, as a bearer token */
	bool basic;	    /* the registry asked for Basic: send it */
	char *origin;	    /* "https://HOST" */
	char *base;	    /* "https://HOST/v2/NAME" */
	char *name;	    /* "HOST/NAME" */
	char *token;	    /* from the realm; wiped when freed */
};

static const char *const manifest_headers[] = {
	"Accept: " MT_OCI_MANIFEST ", " MT_DOCKER_MANIFEST ", " MT_OCI_INDEX
	", " MT_DOCKER_LIST,
	NULL,
};

static const char *const json_headers[] = {"Accept: application/json", NULL};

static bool is_lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static bool is_ctl(char ch)
{
	return (unsigned char)ch < 0x20 || ch == 0x7f;
}

/* RFC 9110 tchar. */
static bool is_tchar(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* ---- references ----------------------------------------------------- */

/* [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* */
static bool valid_component(const char *s, size_t n)
{
	size_t i = 0, start;

	for (;;) {
		start = i;
		while (i < n && is_lower_alnum(s[i]))
			i++;
		if (i == start)
			return false;
		if (i == n)
			return true;
		if (s[i] == '.') {
			i++;
		} else if (s[i] == '_') {
			i++;
			if (i < n && s[i] == '_')
				i++;
		} else if (s[i] == '-') {
			while (i < n && s[i] == '-')
				i++;
		} else {
			return false;
		}
	}
}

static bool valid_name(const char *name)
{
	const char *p = name, *slash;

	for (;;) {
		slash = strchr(p, '/');
		if (!valid_component(p,
				     slash ? (size_t)(slash - p) : strlen(p)))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

/* host[:port], host a DNS name, an IPv4 address or [IPv6]. */
static bool valid_host(const char *h, size_t n, const char **why)
{
	size_t i = 0, end;
	unsigned long port = 0;

	*why = "invalid registry host";
	if (n && h[0] == '[') {
		for (i = 1; i < n && h[i] != ']'; i++)
			if (!isxdigit((unsigned char)h[i]) && h[i] != ':' &&
			    h[i] != '.')
				return false;
		if (i == n || i == 1)
			return false;
		end = ++i;
	} else {
		for (; i < n && h[i] != ':'; i++)
			if (!isalnum((unsigned char)h[i]) && h[i] != '.' &&
			    h[i] != '-')
				return false;
		end = i;
		if (!end || h[0] == '.' || h[0] == '-')
			return false;
	}
	if (end == n)
		return true;
	*why = "invalid port";
	if (h[end] != ':' || end + 1 == n || n - end - 1 > 5)
		return false;
	for (i = end + 1; i < n; i++) {
		if (h[i] < '0' || h[i] > '9')
			return false;
		port = port * 10 + (unsigned long)(h[i] - '0');
	}
	return port >= 1 && port <= 65535;
}

int src_oci_parse_ref(struct src_oci_ref *out, const char *ref, struct err *err)
{
	struct buf shown = BUF_INIT;
	const char *auth, *auth_end, *name, *last, *why, *p;
	size_t i, host_len;
	int error = 0;

	memset(out, 0, sizeof(*out));
	if (src_url_redact(&shown, ref) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	if (strncmp(ref, "oci://", 6)) {
		error = err_set(err, ERR_INVALID,
				"%s: not an OCI reference (oci://HOST/NAME)",
				buf_cstr(&shown));
		goto out;
	}
	auth = ref + 6;
	auth_end = auth + strcspn(auth, "/");
	if (memchr(auth, '@', (size_t)(auth_end - auth))) {
		error = err_set(err, ERR_INVALID,
				"%s: user information in the reference is not "
				"accepted; give credentials as options",
				buf_cstr(&shown));
		goto out;
	}
	if (strpbrk(ref, "?#")) {
		error = err_set(err, ERR_INVALID,
				"%s: a query or fragment in the reference is "
				"not accepted",
				buf_cstr(&shown));
		goto out;
	}
	host_len = (size_t)(auth_end - auth);
	if (!host_len) {
		error = err_set(err, ERR_INVALID,
				"%s: no registry host (oci://HOST/NAME)",
				buf_cstr(&shown));
		goto out;
	}
	if (!valid_host(auth, host_len, &why) || host_len >= SRC_OCI_HOST_MAX) {
		error = err_set(err, ERR_INVALID, "%s: %s", buf_cstr(&shown),
				why);
		goto out;
	}
	if (!*auth_end || !auth_end[1]) {
		error = err_set(err, ERR_INVALID,
				"%s: no repository name (oci://HOST/NAME)",
				buf_cstr(&shown));
		goto out;
	}
	name = auth_end + 1;
	last = strrchr(name, '/');
	last = last ? last + 1 : name;
	if (strchr(name, '@')) {
		error = err_set(err, ERR_INVALID,
				"%s: a digest in the reference is not "
				"accepted; give it as the version",
				buf_cstr(&shown));
		goto out;
	}
	if (strchr(last, ':')) {
		error = err_set(err, ERR_INVALID,
				"%s: a tag in the reference is not accepted; "
				"give it as the version",
				buf_cstr(&shown));
		goto out;
	}
	for (p = name; *p; p++)
		if (*p >= 'A' && *p <= 'Z') {
			error = err_set(err, ERR_INVALID,
					"%s: repository names are lower case",
					buf_cstr(&shown));
			goto out;
		}
	if (!valid_name(name)) {
		error = err_set(err, ERR_INVALID,
				"%s: invalid repository name: components of "
				"a-z and 0-9 separated by '.', '_', '__' or "
				"dashes, joined by '/'",
				buf_cstr(&shown));
		goto out;
	}
	if (host_len + 1 + strlen(name) > NAME_TOTAL_MAX) {
		error = err_set(err, ERR_INVALID,
				"%s: HOST/NAME is longer than %d bytes",
				buf_cstr(&shown), NAME_TOTAL_MAX);
		goto out;
	}
	for (i = 0; i < host_len; i++)
		out->host[i] = (char)tolower((unsigned char)auth[i]);
	out->host[host_len] = '\0';
	memcpy(out->name, name, strlen(name) + 1);
out:
	buf_release(&shown);
	return error;
}

/* ---- header parsers ------------------------------------------------- */

static void skip_ows(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* A token or a quoted-string (escapes undone) into *val. */
static int read_value(const char **pp, struct buf *val, const char *what,
		      const char *start, struct err *err)
{
	const char *p = *pp;

	buf_reset(val);
	if (*p == '"') {
		for (p++; *p != '"'; p++) {
			if (!*p)
				return err_set(err, ERR_PARSE,
					       "%s: unterminated quoted "
					       "string at byte %zu",
					       what, (size_t)(*pp - start));
			if (*p == '\\' && p[1])
				p++;
			if (is_ctl(*p) && *p != '\t')
				return err_set(err, ERR_PARSE,
					       "%s: control character at "
					       "byte %zu",
					       what, (size_t)(p - start));
			if (buf_addch(val, *p) < 0)
				return err_set(err, ERR_PARSE,
					       "%s: value longer than %u "
					       "bytes",
					       what, SRC_HTTP_HEADER_MAX);
		}
		*pp = p + 1;
		return 0;
	}
	while (is_tchar(*p) || *p == '/' || *p == ':')
		p++;
	if (buf_add(val, *pp, (size_t)(p - *pp)) < 0)
		return err_set(err, ERR_PARSE, "%s: value longer than %u bytes",
			       what, SRC_HTTP_HEADER_MAX);
	*pp = p;
	return 0;
}

void src_oci_challenge_release(struct src_oci_challenge *ch)
{
	if (!ch)
		return;
	free(ch->realm);
	free(ch->service);
	free(ch->scope);
	ch->realm = ch->service = ch->scope = NULL;
	ch->scheme = 0;
}

int src_oci_parse_challenge(struct src_oci_challenge *ch, const char *value,
			    struct err *err)
{
	static const char what[] = "WWW-Authenticate";
	const char *p = value, *tok, *q;
	struct buf val = BUF_INIT;
	char **slot;
	size_t tok_len;
	bool in_challenge = false, recording = false;
	enum src_oci_auth_scheme scheme;
	int error = 0;

	src_oci_challenge_release(ch);
	buf_init(&val, SRC_HTTP_HEADER_MAX);
	for (;;) {
		skip_ows(&p);
		if (*p == ',') {
			p++;
			continue;
		}
		if (!*p)
			break;
		tok = p;
		while (is_tchar(*p))
			p++;
		tok_len = (size_t)(p - tok);
		if (!tok_len) {
			error = err_set(err, ERR_PARSE,
					"%s: unexpected character at byte %zu",
					what, (size_t)(p - value));
			goto out;
		}
		q = p;
		skip_ows(&q);
		if (*q == '=' && in_challenge) {
			/* auth-param (or the '=' padding of a token68) */
			p = q + 1;
			skip_ows(&p);
			if (*p == '=' || *p == ',' || !*p) {
				while (*p == '=')
					p++;
				continue;
			}
			if ((error = read_value(&p, &val, what, value, err)) <
			    0)
				goto out;
			slot = NULL;
			if (recording && tok_len == 5 &&
			    !strncasecmp(tok, "realm", 5))
				slot = &ch->realm;
			else if (recording && tok_len == 7 &&
				 !strncasecmp(tok, "service", 7))
				slot = &ch->service;
			else if (recording && tok_len == 5 &&
				 !strncasecmp(tok, "scope", 5))
				slot = &ch->scope;
			if (slot && !*slot &&
			    !(*slot = strdup(buf_cstr(&val)))) {
				error = err_set(err, ERR_NOMEM,
						"out of memory");
				goto out;
			}
			skip_ows(&p);
			if (*p && *p != ',') {
				error = err_set(err, ERR_PARSE,
						"%s: expected ',' at byte %zu",
						what, (size_t)(p - value));
				goto out;
			}
			continue;
		}
		if (*q == '=') {
			error = err_set(err, ERR_PARSE,
					"%s: a parameter before any "
					"authentication scheme",
					what);
			goto out;
		}
		/* A new challenge. */
		in_challenge = true;
		scheme = 0;
		if (tok_len == 6 && !strncasecmp(tok, "bearer", 6))
			scheme = SRC_OCI_AUTH_BEARER;
		else if (tok_len == 5 && !strncasecmp(tok, "basic", 5))
			scheme = SRC_OCI_AUTH_BASIC;
		recording = (scheme == SRC_OCI_AUTH_BEARER &&
			     ch->scheme != SRC_OCI_AUTH_BEARER) ||
			    (scheme == SRC_OCI_AUTH_BASIC && !ch->scheme);
		if (recording) {
			src_oci_challenge_release(ch);
			ch->scheme = scheme;
		}
	}
	if (!ch->scheme)
		error = err_set(err, ERR_INVALID,
				"%s: neither a Bearer nor a Basic challenge",
				what);
	else if (ch->scheme == SRC_OCI_AUTH_BEARER && !ch->realm)
		error = err_set(err, ERR_INVALID,
				"%s: a Bearer challenge without realm", what);
out:
	buf_release(&val);
	return error;
}

/* Whether the space-separated relation types of `rel` include "next". */
static bool rel_has_next(const char *rel)
{
	const char *p = rel;
	size_t n;

	while (*p) {
		while (*p == ' ' || *p == '\t')
			p++;
		n = strcspn(p, " \t");
		if (n == 4 && !strncasecmp(p, "next", 4))
			return true;
		p += n;
	}
	return false;
}

int src_oci_parse_link(struct buf *out, const char *value, struct err *err)
{
	static const char what[] = "Link";
	const char *p = value, *url, *end, *tok;
	struct buf val = BUF_INIT;
	bool next;
	int error = 0;

	buf_init(&val, SRC_HTTP_HEADER_MAX);
	for (;;) {
		skip_ows(&p);
		if (*p == ',') {
			p++;
			continue;
		}
		if (!*p)
			break;
		if (*p != '<') {
			error = err_set(err, ERR_PARSE,
					"%s: expected '<' at byte %zu", what,
					(size_t)(p - value));
			goto out;
		}
		url = p + 1;
		if (!(end = strchr(url, '>'))) {
			error = err_set(err, ERR_PARSE,
					"%s: unterminated <URL> at byte %zu",
					what, (size_t)(p - value));
			goto out;
		}
		for (p = url; p < end; p++)
			if (is_ctl(*p) || *p == ' ') {
				error = err_set(err, ERR_PARSE,
						"%s: a space or control "
						"character in the URL",
						what);
				goto out;
			}
		p = end + 1;
		next = false;
		for (;;) {
			skip_ows(&p);
			if (*p != ';')
				break;
			p++;
			skip_ows(&p);
			tok = p;
			while (is_tchar(*p))
				p++;
			if (p == tok) {
				error = err_set(err, ERR_PARSE,
						"%s: expected a parameter at "
						"byte %zu",
						what, (size_t)(p - value));
				goto out;
			}
			skip_ows(&p);
			if (*p != '=')
				continue; /* a parameter without value */
			p++;
			skip_ows(&p);
			if ((error = read_value(&p, &val, what, value, err)) <
			    0)
				goto out;
			if (p - tok >= 3 && !strncasecmp(tok, "rel", 3) &&
			    !is_tchar(tok[3]) && rel_has_next(buf_cstr(&val)))
				next = true;
		}
		if (*p && *p != ',') {
			error = err_set(err, ERR_PARSE,
					"%s: expected ',' at byte %zu", what,
					(size_t)(p - value));
			goto out;
		}
		if (next) {
			if (buf_add(out, url, (size_t)(end - url)) < 0)
				error = err_set(err, ERR_NOMEM,
						"out of memory");
			goto out;
		}
	}
out:
	buf_release(&val);
	return error;
}

void src_oci_error_excerpt(struct buf *out, const char *body, size_t len)
{
	json_t *root, *first;
	const char *text;
	size_t n, i, start = out->len;

	if (!body || !len)
		return;
	root = json_loadb(body, len, 0, NULL);
	first = json_array_get(json_object_get(root, "errors"), 0);
	text = json_string_value(json_object_get(first, "message"));
	if (!text || !*text)
		text = json_string_value(json_object_get(first, "code"));
	if (text && *text) {
		n = strlen(text);
		if (buf_add(out, text, utf8_cut(text, n, EXCERPT_MAX)) == 0) {
			for (i = start; i < out->len; i++)
				if (is_ctl(out->ptr[i]))
					out->ptr[i] = ' ';
			if (n > EXCERPT_MAX && buf_adds(out, "...") < 0)
				buf_truncate(out, start);
		}
	}
	json_decref(root);
}

/* ---- the client ----------------------------------------------------- */

bool source_digest_valid(const char *d)
{
	size_t i;

	if (strncmp(d, "sha256:", 7) || strlen(d) != 7 + 64)
		return false;
	for (i = 7; i < 7 + 64; i++)
		if (!((d[i] >= '0' && d[i] <= '9') ||
		      (d[i] >= 'a' && d[i] <= 'f')))
			return false;
	return true;
}

/* [A-Za-z0-9_][A-Za-z0-9._-]{0,127} */
static bool valid_tag(const char *t)
{
	size_t i;

	if (!*t || *t == '.' || *t == '-' || strlen(t) > TAG_MAX)
		return false;
	for (i = 0; t[i]; i++)
		if (!isalnum((unsigned char)t[i]) && t[i] != '_' &&
		    t[i] != '.' && t[i] != '-')
			return false;
	return true;
}

int src_oci_open(struct src_oci **out, const char *ref,
		 const struct src_http_options *o, struct err *err)
{
	static const struct src_http_options defaults = {0};
	struct src_oci_ref r;
	struct src_oci *c = NULL;
	struct buf b = BUF_INIT;
	int error;

	*out = NULL;
	if (!o)
		o = &defaults;
	if ((error = src_oci_parse_ref(&r, ref, err)) < 0)
		return error;
	if (!(c = calloc(1, sizeof(*c))))
		goto oom;
	c->plain_http = o->plain_http;
	c->has_username = o->username != NULL;
	c->static_bearer = o->token && !o->username;
	if ((error = src_http_new(&c->http, o, err)) < 0)
		goto out;
	if (buf_addf(&b, "%s://%s", o->plain_http ? "http" : "https", r.host) <
		    0 ||
	    !(c->origin = buf_detach(&b, NULL)) ||
	    buf_addf(&b, "%s/v2/%s", c->origin, r.name) < 0 ||
	    !(c->base = buf_detach(&b, NULL)) ||
	    buf_addf(&b, "%s/%s", r.host, r.name) < 0 ||
	    !(c->name = buf_detach(&b, NULL)))
		goto oom;
	*out = c;
	c = NULL;
	goto out;
oom:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	buf_release(&b);
	src_oci_free(c);
	return error;
}

void src_oci_free(struct src_oci *c)
{
	if (!c)
		return;
	src_http_free(c->http);
	file_secret_free(c->token);
	free(c->origin);
	free(c->base);
	free(c->name);
	free(c);
}

unsigned long src_oci_requests(const struct src_oci *c)
{
	return c ? src_http_requests(c->http) : 0;
}

const char *src_oci_name(const struct src_oci *c)
{
	return c->name;
}

/* Percent-encode everything but RFC 3986's unreserved characters. */
static int add_encoded(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int error = 0;

	for (; *s && !error; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isalnum(ch) || ch == '-' || ch == '.' || ch == '_' ||
		    ch == '~')
			error = buf_addch(b, (char)ch);
		else
			error = buf_addf(b, "%%%c%c", hex[ch >> 4],
					 hex[ch & 15]);
	}
	return error;
}

/*
 * "WHAT: registry answered STATUS[: excerpt]": the error of an answer
 * the caller has no use for.
 */
static int status_error(const struct src_http_response *r, const char *what,
			struct err *err)
{
	struct buf ex = BUF_INIT;
	int error;

	src_oci_error_excerpt(&ex, r->body.ptr, r->body.len);
	error = err_set(err, ERR_IO, "%s: registry answered %ld%s%s", what,
			r->status, ex.len ? ": " : "", buf_cstr(&ex));
	buf_release(&ex);
	return error;
}

/* Ask the challenge's realm for a token; kept in c->token. */
static int fetch_token(struct src_oci *c, const struct src_oci_challenge *ch,
		       struct err *err)
{
	struct src_http_request req = {0};
	struct src_http_response r = SRC_HTTP_RESPONSE_INIT;
	struct buf url = BUF_INIT, shown = BUF_INIT;
	const char *tok;
	json_t *root = NULL;
	int error = 0;

	if (src_url_redact(&shown, ch->realm) < 0)
		goto oom;
	if (strncmp(ch->realm, "https://", 8) &&
	    (!c->plain_http || strncmp(ch->realm, "http://", 7))) {
		error = err_set(err, ERR_INVALID,
				"%s: the token realm %s is not an https URL",
				c->name, buf_cstr(&shown));
		goto out;
	}
	if (buf_adds(&url, ch->realm) < 0)
		goto oom;
	if (ch->service &&
	    (buf_adds(&url,
		      strchr(ch->realm, '?') ? "&service=" : "?service=") < 0 ||
	     add_encoded(&url, ch->service) < 0))
		goto oom;
	if (buf_adds(&url, strchr(url.ptr, '?') ? "&scope=" : "?scope=") < 0)
		goto oom;
	if (ch->scope) {
		if (add_encoded(&url, ch->scope) < 0)
			goto oom;
	} else if (buf_adds(&url, "repository") < 0 ||
		   add_encoded(&url, ":") < 0 ||
		   add_encoded(&url, strchr(c->name, '/') + 1) < 0 ||
		   add_encoded(&url, ":pull") < 0) {
		goto oom;
	}
	req.url = url.ptr;
	req.headers = json_headers;
	req.max_bytes = TOKEN_MAX_BYTES;
	req.no_auth = !c->has_username;
	if ((error = src_http_do(c->http, &req, &r, err)) < 0)
		goto out;
	if (r.status == 401 || r.status == 403) {
		error = err_set(err, ERR_INVALID,
				"%s: authentication refused by the token "
				"service %s (%ld)",
				c->name, buf_cstr(&shown), r.status);
		goto out;
	}
	if (r.status != 200) {
		buf_reset(&url);
		if (buf_addf(&url, "%s: token service %s", c->name,
			     buf_cstr(&shown)) < 0)
			goto oom;
		error = status_error(&r, url.ptr, err);
		goto out;
	}
	root = json_loadb(r.body.ptr ? r.body.ptr : "", r.body.len, 0, NULL);
	tok = json_string_value(json_object_get(root, "token"));
	if (!tok || !*tok)
		tok = json_string_value(json_object_get(root, "access_token"));
	if (!tok || !*tok) {
		error = err_set(err, ERR_PARSE,
				"%s: the token service %s answered no token",
				c->name, buf_cstr(&shown));
		goto out;
	}
	for (const char *p = tok; *p; p++)
		if (is_ctl(*p) || *p == ' ') {
			error = err_set(err, ERR_INVALID,
					"%s: the token service %s answered a "
					"token with control characters",
					c->name, buf_cstr(&shown));
			goto out;
		}
	file_secret_free(c->token);
	if (!(c->token = strdup(tok)))
		goto oom;
	goto out;
oom:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	/* The answer holds the token: wipe it. */
	if (root && (tok = json_string_value(json_object_get(root, "token"))))
		explicit_bzero((char *)tok, strlen(tok));
	if (root &&
	    (tok = json_string_value(json_object_get(root, "access_token"))))
		explicit_bzero((char *)tok, strlen(tok));
	json_decref(root);
	file_secret_release(&r.body);
	src_http_response_release(&r);
	buf_release(&url);
	buf_release(&shown);
	return error;
}

/* Answer a 401: a token for a Bearer challenge, basic auth for Basic. */
static int answer_challenge(struct src_oci *c, const char *header,
			    struct err *err)
{
	struct src_oci_challenge ch = SRC_OCI_CHALLENGE_INIT;
	struct err perr = ERR_INIT;
	int error = 0;

	file_secret_free(c->token);
	c->token = NULL;
	if (!header) {
		error = err_set(err, ERR_INVALID,
				"%s: authentication refused (401)", c->name);
		goto out;
	}
	if (src_oci_parse_challenge(&ch, header, &perr) < 0) {
		error = err_set(err, ERR_INVALID,
				"%s: authentication required (401) and the "
				"challenge is not understood: %s",
				c->name, err_first(&perr));
		goto out;
	}
	if (ch.scheme == SRC_OCI_AUTH_BASIC) {
		if (!c->has_username)
			error = err_set(err, ERR_INVALID,
					"%s: the registry asks for basic "
					"authentication (401) and no user "
					"name is given",
					c->name);
		c->basic = true;
		goto out;
	}
	error = fetch_token(c, &ch, err);
out:
	src_oci_challenge_release(&ch);
	err_release(&perr);
	return error;
}

/*
 * One request to the registry, authenticated as it asks (see the top of
 * the file). 0 with any status but 401 in *r; a second 401 is
 * ERR_INVALID.
 */
static int reg_do(struct src_oci *c, const char *method, const char *url,
		  const char *const *headers, uint64_t max, const char *file,
		  struct src_http_response *r, struct err *err)
{
	struct src_http_request req;
	struct buf authz = BUF_INIT;
	bool answered = false;
	int error;

	for (;;) {
		memset(&req, 0, sizeof(req));
		req.method = method;
		req.url = url;
		req.headers = headers;
		req.max_bytes = max;
		req.to_file = file;
		file_secret_release(&authz);
		if (c->token) {
			if (buf_addf(&authz, "Bearer %s", c->token) < 0) {
				error = err_set(err, ERR_NOMEM,
						"out of memory");
				goto out;
			}
			req.authorization = authz.ptr;
		} else if (!c->basic && !c->static_bearer) {
			req.no_auth = true;
		}
		if ((error = src_http_do(c->http, &req, r, err)) < 0 ||
		    r->status != 401)
			goto out;
		if (answered) {
			error = err_set(err, ERR_INVALID,
					"%s: authentication refused (401)",
					c->name);
			goto out;
		}
		answered = true;
		if ((error = answer_challenge(c, r->www_authenticate, err)) < 0)
			goto out;
	}
out:
	file_secret_release(&authz);
	return error;
}

int src_oci_tags(struct src_oci *c, struct strvec *tags, struct err *err)
{
	struct src_http_response r = SRC_HTTP_RESPONSE_INIT;
	struct strvec got = STRVEC_INIT;
	struct buf url = BUF_INIT, next = BUF_INIT, shown = BUF_INIT;
	json_t *root = NULL, *list, *v;
	size_t i, before;
	int error = 0;

	if (buf_addf(&url, "%s/tags/list?n=%d", c->base, TAGS_PAGE_SIZE) < 0)
		goto oom;
	for (;;) {
		if ((error = reg_do(c, "GET", url.ptr, json_headers,
				    TAGS_PAGE_MAX_BYTES, NULL, &r, err)) < 0)
			goto out;
		if (r.status == 404) {
			error = err_set(err, ERR_NOTFOUND, "%s: not found",
					c->name);
			goto out;
		}
		if (r.status != 200) {
			error = status_error(&r, c->name, err);
			goto out;
		}
		json_decref(root);
		root = json_loadb(r.body.ptr ? r.body.ptr : "", r.body.len, 0,
				  NULL);
		list = json_object_get(root, "tags");
		if (!json_is_object(root) ||
		    (!json_is_array(list) && !json_is_null(list) && list)) {
			error = err_set(err, ERR_PARSE,
					"%s: the tags list is not "
					"{\"tags\": [...]}",
					c->name);
			goto out;
		}
		before = got.len;
		json_array_foreach(list, i, v)
		{
			if (!json_is_string(v))
				continue;
			if (got.len >= SRC_OCI_MAX_TAGS) {
				error = err_set(err, ERR_LIMIT,
						"%s: more than %u tags",
						c->name, SRC_OCI_MAX_TAGS);
				goto out;
			}
			if (strvec_push(&got, json_string_value(v)) < 0)
				goto oom;
		}
		buf_reset(&next);
		if (r.link &&
		    (error = src_oci_parse_link(&next, r.link, err)) < 0)
			goto out;
		if (!next.len)
			break;
		if (got.len == before) {
			/* Each page must bring a tag: no endless paging. */
			error = err_set(err, ERR_INVALID,
					"%s: an empty page of tags links to "
					"another",
					c->name);
			goto out;
		}
		buf_reset(&url);
		if ((error = src_url_resolve(&url, r.effective_url, next.ptr,
					     err)) < 0)
			goto out;
		if (!src_url_same_origin(url.ptr, c->origin)) {
			buf_reset(&shown);
			src_url_redact(&shown, url.ptr);
			error = err_set(err, ERR_INVALID,
					"%s: the tags list links to another "
					"host (%s); refused",
					c->name, buf_cstr(&shown));
			goto out;
		}
	}
	for (i = 0; i < got.len; i++)
		if (strvec_push(tags, got.v[i]) < 0)
			goto oom;
	goto out;
oom:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	json_decref(root);
	strvec_release(&got);
	src_http_response_release(&r);
	buf_release(&url);
	buf_release(&next);
	buf_release(&shown);
	return error;
}

/*
 * "HOST/NAME:TAG" or "HOST/NAME@DIGEST" into *what; ERR_INVALID when
 * `ref` is neither a tag nor a sha256 digest.
 */
static int ref_what(struct src_oci *c, const char *ref, bool *is_digest,
		    struct buf *what, struct err *err)
{
	*is_digest = strchr(ref, ':') != NULL;
	if (*is_digest && !source_digest_valid(ref))
		return err_set(err, ERR_INVALID,
			       "%s: not a sha256 digest (sha256: and 64 "
			       "lower-case hex digits)",
			       c->name);
	if (!*is_digest && !valid_tag(ref))
		return err_set(err, ERR_INVALID,
			       "%s: not a valid tag (letters, digits, '_', "
			       "'.', '-', at most %d, not starting with '.' "
			       "or '-')",
			       c->name, TAG_MAX);
	if (buf_addf(what, "%s%c%s", c->name, *is_digest ? '@' : ':', ref) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	return 0;
}

/* One request for a manifest (`what` names it): 200, or the error. */
static int manifest_do(struct src_oci *c, const char *method, const char *url,
		       const char *what, struct src_http_response *r,
		       struct err *err)
{
	int error;

	if ((error = reg_do(c, method, url, manifest_headers,
			    SRC_OCI_MAX_MANIFEST_BYTES, NULL, r, err)) < 0)
		return error;
	if (r->status == 404)
		return err_set(err, ERR_NOTFOUND, "%s: not found", what);
	if (r->status != 200)
		return status_error(r, what, err);
	return 0;
}

int src_oci_resolve(struct src_oci *c, const char *tag_or_digest,
		    char digest[SRC_DIGEST_MAX], struct err *err)
{
	struct src_http_response r = SRC_HTTP_RESPONSE_INIT;
	struct buf what = BUF_INIT, url = BUF_INIT;
	char got[SRC_DIGEST_MAX];
	bool is_digest;
	int error;

	digest[0] = '\0';
	if ((error = ref_what(c, tag_or_digest, &is_digest, &what, err)) < 0)
		goto out;
	if (buf_addf(&url, "%s/manifests/%s", c->base, tag_or_digest) < 0)
		goto oom;
	if ((error = manifest_do(c, "HEAD", url.ptr, what.ptr, &r, err)) < 0)
		goto out;
	if (r.docker_content_digest) {
		if (!source_digest_valid(r.docker_content_digest)) {
			error = err_set(err, ERR_INVALID,
					"%s: the registry sent a malformed "
					"Docker-Content-Digest",
					what.ptr);
			goto out;
		}
		snprintf(got, sizeof(got), "%s", r.docker_content_digest);
	} else {
		/* No digest header: hash the manifest itself. */
		if ((error = manifest_do(c, "GET", url.ptr, what.ptr, &r,
					 err)) < 0)
			goto out;
		snprintf(got, sizeof(got), "sha256:%s", r.body_sha256);
	}
	if (is_digest && strcmp(got, tag_or_digest)) {
		error = err_set(err, ERR_INVALID,
				"%s: the registry answered digest %s", what.ptr,
				got);
		goto out;
	}
	memcpy(digest, got, strlen(got) + 1);
	goto out;
oom:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	src_http_response_release(&r);
	buf_release(&what);
	buf_release(&url);
	return error;
}

static bool is_index_type(const char *t)
{
	return t && (!strcmp(t, MT_OCI_INDEX) || !strcmp(t, MT_DOCKER_LIST));
}

int src_oci_manifest(struct src_oci *c, const char *digest, json_t **manifest,
		     struct err *err)
{
	struct src_http_response r = SRC_HTTP_RESPONSE_INIT;
	struct buf what = BUF_INIT, url = BUF_INIT, ctype = BUF_INIT;
	json_t *root = NULL;
	json_error_t jerr;
	const char *mt;
	bool is_digest;
	int error;

	*manifest = NULL;
	if ((error = ref_what(c, digest, &is_digest, &what, err)) < 0)
		goto out;
	if (!is_digest) {
		error = err_set(err, ERR_INVALID,
				"%s: a manifest is fetched by digest",
				what.ptr);
		goto out;
	}
	if (buf_addf(&url, "%s/manifests/%s", c->base, digest) < 0)
		goto oom;
	if ((error = manifest_do(c, "GET", url.ptr, what.ptr, &r, err)) < 0)
		goto out;
	if (strcmp(digest + 7, r.body_sha256)) {
		error = err_set(err, ERR_INVALID,
				"%s: manifest digest mismatch (the body's is "
				"sha256:%s)",
				what.ptr, r.body_sha256);
		goto out;
	}
	if (!(root = json_loadb(r.body.ptr ? r.body.ptr : "", r.body.len, 0,
				&jerr)) ||
	    !json_is_object(root)) {
		error = err_set(err, ERR_PARSE,
				"%s: the manifest is not a JSON object%s%s",
				what.ptr, root ? "" : ": ",
				root ? "" : jerr.text);
		goto out;
	}
	mt = json_string_value(json_object_get(root, "mediaType"));
	if (!mt && r.content_type) {
		if (buf_add(&ctype, r.content_type,
			    strcspn(r.content_type, "; \t")) < 0)
			goto oom;
		mt = ctype.ptr;
	}
	if (is_index_type(mt) || json_object_get(root, "manifests")) {
		error = err_set(err, ERR_INVALID,
				"%s: an image index (several platforms), not "
				"a manifest; give the digest of one of its "
				"manifests",
				what.ptr);
		goto out;
	}
	if (json_integer_value(json_object_get(root, "schemaVersion")) != 2 ||
	    !json_is_array(json_object_get(root, "layers"))) {
		error = err_set(err, ERR_INVALID,
				"%s: not an OCI image manifest or Docker v2 "
				"schema 2 manifest (schemaVersion 2 with "
				"layers)",
				what.ptr);
		goto out;
	}
	*manifest = root;
	root = NULL;
	goto out;
oom:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	json_decref(root);
	src_http_response_release(&r);
	buf_release(&what);
	buf_release(&url);
	buf_release(&ctype);
	return error;
}

int src_oci_blob(struct src_oci *c, const char *digest, uint64_t size,
		 uint64_t max_bytes, const char *file, struct err *err)
{
	struct src_http_response r = SRC_HTTP_RESPONSE_INIT;
	struct buf what = BUF_INIT, url = BUF_INIT;
	bool is_digest, requested = false;
	int error;

	if (!max_bytes)
		max_bytes = SRC_HTTP_DEFAULT_MAX_BYTES;
	if ((error = ref_what(c, digest, &is_digest, &what, err)) < 0)
		goto out;
	if (!is_digest) {
		error = err_set(err, ERR_INVALID,
				"%s: a blob is fetched by digest", what.ptr);
		goto out;
	}
	if (size > max_bytes) {
		error = err_set(err, ERR_LIMIT,
				"%s: blob of %" PRIu64 " bytes is over the "
				"bound of %" PRIu64 " bytes; not downloaded",
				what.ptr, size, max_bytes);
		goto out;
	}
	if (buf_addf(&url, "%s/blobs/%s", c->base, digest) < 0) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	requested = true;
	/* A known size bounds the body: a byte more is a mismatch anyway. */
	if ((error = reg_do(c, "GET", url.ptr, NULL, size ? size : max_bytes,
			    file, &r, err)) < 0)
		goto out;
	if (r.status == 404) {
		error = err_set(err, ERR_NOTFOUND, "%s: not found", what.ptr);
		goto out;
	}
	if (r.status != 200) {
		error = status_error(&r, what.ptr, err);
		goto out;
	}
	if (size && r.body_bytes != size) {
		error = err_set(err, ERR_INVALID,
				"%s: blob of %" PRIu64 " bytes, the manifest "
				"says %" PRIu64,
				what.ptr, r.body_bytes, size);
		goto out;
	}
	if (strcmp(digest + 7, r.body_sha256)) {
		error = err_set(err, ERR_INVALID,
				"%s: blob digest mismatch (the body's is "
				"sha256:%s)",
				what.ptr, r.body_sha256);
		goto out;
	}
out:
	if (error < 0 && requested)
		unlink(file);
	src_http_response_release(&r);
	buf_release(&what);
	buf_release(&url);
	return error;
}
