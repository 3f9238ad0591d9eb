/*
 * Bounded HTTP(S) requests for the source room (see internal.h), on
 * libcurl: the only file of source/ that includes it.
 *
 * One easy handle per struct src_http, reset between requests: a reset
 * keeps the handle's live connections, DNS cache and TLS sessions, so
 * consecutive requests to one registry share a connection. Redirects
 * are followed here rather than by libcurl, so that every hop is checked
 * (same scheme, host and port), counted and bounded like the first one.
 * Credentials travel in an Authorization header built here and wiped
 * after the transfer; never in a URL (one with user information is
 * refused) and never in a message.
 */
#include "source/internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/base64.h"
#include "util/file.h"
#include "util/sha256.h"

#include "util/banned.h" /* last */

#define MAX_REDIRECTS 5
/* URLs in messages are cut beyond this many bytes. */
#define URL_SHOWN_MAX 512

struct src_http {
	CURL *curl;
	char *username; /* secrets: wiped when freed */
	char *password;
	char *token;
	char *ca_file;
	char *user_agent;
	bool plain_http;
	struct strvec redirect_hosts;
	long timeout_ms;
	unsigned long requests;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static bool has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static bool is_redirect(long status)
{
	return status == 301 || status == 302 || status == 303 ||
	       status == 307 || status == 308;
}

static int dup_opt(char **dst, const char *s)
{
	if (!s)
		return 0;
	return (*dst = strdup(s)) ? 0 : ERR_NOMEM;
}

int src_http_new(struct src_http **out, const struct src_http_options *o,
		 struct err *err)
{
	static const struct src_http_options defaults = {0};
	struct src_http *h = NULL;
	int error = 0;

	*out = NULL;
	if (!o)
		o = &defaults;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return err_set(err, ERR_GENERIC, "libcurl: %s",
			       curl_easy_strerror(global_rc));
	/* A line break in a credential would inject headers. */
	if ((o->username && has_ctl(o->username)) ||
	    (o->password && has_ctl(o->password)) ||
	    (o->token && has_ctl(o->token)))
		return err_set(err, ERR_INVALID,
			       "a credential contains control characters");
	if (o->username && strchr(o->username, ':'))
		return err_set(err, ERR_INVALID,
			       "the user name contains ':', which basic "
			       "authentication cannot carry");
	if (o->user_agent && has_ctl(o->user_agent))
		return err_set(err, ERR_INVALID,
			       "the user agent contains control characters");
	if (!(h = calloc(1, sizeof(*h))))
		goto oom;
	h->plain_http = o->plain_http;
	h->timeout_ms = o->timeout_ms ? (long)o->timeout_ms
				      : (long)SRC_HTTP_DEFAULT_TIMEOUT_MS;
	if (dup_opt(&h->username, o->username) < 0 ||
	    dup_opt(&h->password, o->password) < 0 ||
	    dup_opt(&h->token, o->token) < 0 ||
	    dup_opt(&h->ca_file, o->ca_file) < 0 ||
	    dup_opt(&h->user_agent,
		    o->user_agent ? o->user_agent : "syncd/" SYNCD_VERSION) < 0)
		goto oom;
	for (const char *const *rh = o->redirect_hosts; rh && *rh; rh++)
		if (strvec_push(&h->redirect_hosts, *rh) < 0)
			goto oom;
	if (!(h->curl = curl_easy_init())) {
		error = err_set(err, ERR_GENERIC,
				"libcurl: cannot make a handle");
		goto out;
	}
	*out = h;
	h = NULL;
	goto out;
oom:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	src_http_free(h);
	return error;
}

void src_http_free(struct src_http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	file_secret_free(h->username);
	file_secret_free(h->password);
	file_secret_free(h->token);
	free(h->ca_file);
	free(h->user_agent);
	strvec_release(&h->redirect_hosts);
	free(h);
}

unsigned long src_http_requests(const struct src_http *h)
{
	return h ? h->requests : 0;
}

static void headers_release(struct src_http_response *r)
{
	free(r->etag);
	free(r->content_type);
	free(r->docker_content_digest);
	free(r->www_authenticate);
	free(r->link);
	r->etag = r->content_type = r->docker_content_digest = NULL;
	r->www_authenticate = r->link = NULL;
}

void src_http_response_release(struct src_http_response *r)
{
	if (!r)
		return;
	headers_release(r);
	free(r->effective_url);
	buf_release(&r->body);
	r->effective_url = NULL;
	r->status = 0;
	r->body_bytes = 0;
	r->body_sha256[0] = '\0';
}

/* ---- URLs --------------------------------------------------------- */

int src_url_redact(struct buf *out, const char *url)
{
	const char *scheme_end, *auth, *end, *at, *p, *path_end;
	size_t start = out->len, i, n;
	int error;

	scheme_end = strstr(url, "://");
	/* A "://" after the first '/' is in the path: no scheme. */
	if (scheme_end && memchr(url, '/', (size_t)(scheme_end - url)))
		scheme_end = NULL;
	auth = scheme_end ? scheme_end + 3 : url;
	end = auth + strcspn(auth, "/?#");
	at = NULL;
	for (p = auth; p < end; p++)
		if (*p == '@')
			at = p;
	path_end = end + strcspn(end, "?#");
	if ((error = buf_add(out, url, (size_t)(auth - url))) < 0 ||
	    (error = buf_add(out, at ? at + 1 : auth,
			     (size_t)(path_end - (at ? at + 1 : auth)))) < 0)
		goto fail;
	n = out->len - start;
	for (i = start; i < out->len; i++)
		if ((unsigned char)out->ptr[i] < 0x20 || out->ptr[i] == 0x7f)
			out->ptr[i] = '?';
	if (n > URL_SHOWN_MAX) {
		buf_truncate(out, start + utf8_cut(out->ptr + start, n,
						   URL_SHOWN_MAX));
		if ((error = buf_adds(out, "...")) < 0)
			goto fail;
	}
	return 0;
fail:
	buf_truncate(out, start);
	return error;
}

/* Scheme, host and port of an absolute URL (curl_free() each). */
static bool origin(const char *url, char **scheme, char **host, char **port)
{
	CURLU *u = curl_url();
	bool ok;

	*scheme = *host = *port = NULL;
	ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	     curl_url_get(u, CURLUPART_SCHEME, scheme, 0) == CURLUE_OK &&
	     curl_url_get(u, CURLUPART_HOST, host, 0) == CURLUE_OK &&
	     curl_url_get(u, CURLUPART_PORT, port, CURLU_DEFAULT_PORT) ==
		     CURLUE_OK;
	curl_url_cleanup(u);
	return ok;
}

/* Is url's host one of the hosts a redirect may lead to? */
static bool redirect_allowed(const struct src_http *h, const char *url)
{
	char *s = NULL, *host = NULL, *port = NULL;
	bool ok = false;

	if (h->redirect_hosts.len && origin(url, &s, &host, &port))
		for (size_t i = 0; i < h->redirect_hosts.len && !ok; i++) {
			const char *e = h->redirect_hosts.v[i];
			size_t n = strlen(host);

			ok = !strcasecmp(e, host) ||
			     (!strncasecmp(e, host, n) && e[n] == ':' &&
			      !strcmp(e + n + 1, port));
		}
	curl_free(s);
	curl_free(host);
	curl_free(port);
	return ok;
}

bool src_url_same_origin(const char *a, const char *b)
{
	char *s1 = NULL, *h1 = NULL, *p1 = NULL;
	char *s2 = NULL, *h2 = NULL, *p2 = NULL;
	bool same;

	same = origin(a, &s1, &h1, &p1) && origin(b, &s2, &h2, &p2) &&
	       !strcasecmp(s1, s2) && !strcasecmp(h1, h2) && !strcmp(p1, p2);
	curl_free(s1);
	curl_free(h1);
	curl_free(p1);
	curl_free(s2);
	curl_free(h2);
	curl_free(p2);
	return same;
}

int src_url_resolve(struct buf *out, const char *base, const char *ref,
		    struct err *err)
{
	struct buf shown = BUF_INIT;
	CURLU *u = curl_url();
	char *url = NULL;
	int error = 0;

	if (!u) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if (curl_url_set(u, CURLUPART_URL, base, 0) != CURLUE_OK ||
	    curl_url_set(u, CURLUPART_URL, ref, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK) {
		src_url_redact(&shown, ref);
		error = err_set(err, ERR_PARSE, "%s: not a valid URL",
				buf_cstr(&shown));
		goto out;
	}
	if ((error = buf_adds(out, url)) < 0)
		err_set(err, error, "URL too long");
out:
	curl_free(url);
	curl_url_cleanup(u);
	buf_release(&shown);
	return error;
}

/* Whether an absolute URL names user information ("user[:pw]@"). */
static bool has_userinfo(const char *url)
{
	const char *p = strstr(url, "://"), *end;

	if (!p)
		return false;
	p += 3;
	end = p + strcspn(p, "/?#");
	return memchr(p, '@', (size_t)(end - p)) != NULL;
}

/* ---- one request -------------------------------------------------- */

/* One hop's state, shared with the callbacks. */
struct transfer {
	struct src_http_response *r;
	bool head;
	uint64_t max;
	int fd;		   /* to_file, or -1 */
	long status;	   /* of the response being received */
	bool has_location; /* ... and it has a Location */
	bool over;	   /* the body (or its Content-Length) is over max */
	bool oom;
	int write_errno; /* writing the file failed */
	struct sha256_ctx sha;
};

static bool name_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && !strncasecmp(name, want, len);
}

static bool is_bearer(const char *v)
{
	return !strncasecmp(v, "bearer", 6) && (v[6] == ' ' || v[6] == '\t');
}

/* Keep a header value in *slot, by the rules of its field. */
static void keep_header(struct transfer *t, char **slot, const char *v,
			size_t len, bool join)
{
	char *s;

	if (*slot && join) {
		size_t old = strlen(*slot);

		if (old + 2 + len > SRC_HTTP_HEADER_MAX)
			return;
		if (!(s = realloc(*slot, old + 2 + len + 1))) {
			t->oom = true;
			return;
		}
		memcpy(s + old, ", ", 2);
		memcpy(s + old + 2, v, len);
		s[old + 2 + len] = '\0';
		*slot = s;
		return;
	}
	if (*slot) {
		/* A second WWW-Authenticate: a Bearer challenge wins. */
		if (slot != &t->r->www_authenticate || is_bearer(*slot))
			return;
		if (len < 7 || !is_bearer(v))
			return;
	}
	if (!(s = strndup(v, len))) {
		t->oom = true;
		return;
	}
	free(*slot);
	*slot = s;
}

static size_t on_header(char *data, size_t size, size_t n, void *payload)
{
	struct transfer *t = payload;
	struct src_http_response *r = t->r;
	size_t len = size * n, name_len;
	const char *colon, *v, *end;

	if (len >= 5 && !memcmp(data, "HTTP/", 5)) {
		/* A new response (after a 1xx, say): forget the last one's. */
		const char *sp = memchr(data, ' ', len);

		headers_release(r);
		t->has_location = false;
		t->status = 0;
		if (sp && (size_t)(sp - data) + 4 <= len)
			for (v = sp + 1; v < sp + 4 && *v >= '0' && *v <= '9';
			     v++)
				t->status = t->status * 10 + (*v - '0');
		return len;
	}
	if (!(colon = memchr(data, ':', len)))
		return len;
	name_len = (size_t)(colon - data);
	v = colon + 1;
	end = data + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' ||
			   end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (name_is(data, name_len, "content-length") && !t->head) {
		uint64_t cl = 0;
		const char *p;

		for (p = v; p < end && *p >= '0' && *p <= '9'; p++) {
			if (cl > (UINT64_MAX - 9) / 10) {
				cl = UINT64_MAX;
				break;
			}
			cl = cl * 10 + (uint64_t)(*p - '0');
		}
		if (cl > t->max) {
			/* Refused before any byte of the body. */
			t->over = true;
			return 0;
		}
		return len;
	}
	if (name_is(data, name_len, "location")) {
		t->has_location = true;
		return len;
	}
	if ((size_t)(end - v) > SRC_HTTP_HEADER_MAX)
		return len;
	if (name_is(data, name_len, "etag"))
		keep_header(t, &r->etag, v, (size_t)(end - v), false);
	else if (name_is(data, name_len, "content-type"))
		keep_header(t, &r->content_type, v, (size_t)(end - v), false);
	else if (name_is(data, name_len, "docker-content-digest"))
		keep_header(t, &r->docker_content_digest, v, (size_t)(end - v),
			    false);
	else if (name_is(data, name_len, "www-authenticate"))
		keep_header(t, &r->www_authenticate, v, (size_t)(end - v),
			    false);
	else if (name_is(data, name_len, "link"))
		keep_header(t, &r->link, v, (size_t)(end - v), true);
	return t->oom ? 0 : len;
}

static size_t on_body(char *data, size_t size, size_t n, void *payload)
{
	struct transfer *t = payload;
	struct src_http_response *r = t->r;
	size_t len = size * n;

	if (len > t->max - r->body_bytes) {
		t->over = true;
		return 0;
	}
	r->body_bytes += len;
	if (is_redirect(t->status) && t->has_location)
		return len; /* the next hop's body counts */
	sha256_update(&t->sha, data, len);
	if (t->fd >= 0 && t->status >= 200 && t->status < 300) {
		if (file_write_all(t->fd, data, len) < 0) {
			t->write_errno = errno;
			return 0;
		}
	} else if (t->fd >= 0) {
		size_t room = SRC_HTTP_ERROR_BODY_MAX - r->body.len;

		if (buf_add(&r->body, data, len < room ? len : room) < 0) {
			t->oom = true;
			return 0;
		}
	} else if (buf_add(&r->body, data, len) < 0) {
		t->oom = true;
		return 0;
	}
	return len;
}

static void wipe_headers(struct curl_slist *l)
{
	struct curl_slist *p;

	for (p = l; p; p = p->next)
		explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(l);
}

static int add_header(struct curl_slist **l, const char *line)
{
	struct curl_slist *nl = curl_slist_append(*l, line);

	if (!nl)
		return ERR_NOMEM;
	*l = nl;
	return 0;
}

/* The Authorization header the request asks for, into *l. */
static int add_auth(struct src_http *h, const struct src_http_request *req,
		    struct curl_slist **l)
{
	struct buf b = BUF_INIT, pair = BUF_INIT;
	int error = 0;

	if (req->no_auth)
		return 0;
	if (req->authorization) {
		if ((error = buf_adds(&b, "Authorization: ")) < 0 ||
		    (error = buf_adds(&b, req->authorization)) < 0)
			goto out;
	} else if (h->username) {
		if ((error = buf_addf(&pair, "%s:%s", h->username,
				      h->password ? h->password
				      : h->token  ? h->token
						  : "")) < 0 ||
		    (error = buf_adds(&b, "Authorization: Basic ")) < 0 ||
		    (error = base64_encode(&b, pair.ptr, pair.len, 0)) < 0)
			goto out;
	} else if (h->token) {
		if ((error = buf_adds(&b, "Authorization: Bearer ")) < 0 ||
		    (error = buf_adds(&b, h->token)) < 0)
			goto out;
	} else {
		goto out;
	}
	error = add_header(l, b.ptr);
out:
	file_secret_release(&pair);
	file_secret_release(&b);
	return error;
}

/* The request's own headers, validated, into *l. */
static int build_headers(struct src_http *h, const struct src_http_request *req,
			 const char *shown, struct curl_slist **l,
			 struct err *err)
{
	const char *method = req->method ? req->method : "GET";
	struct buf b = BUF_INIT;
	size_t i;
	int error = 0;

	for (i = 0; req->headers && req->headers[i]; i++) {
		if (has_ctl(req->headers[i]) || !strchr(req->headers[i], ':')) {
			error = err_set(err, ERR_INVALID,
					"%s %s: a request header is not "
					"\"Name: value\" on one line",
					method, shown);
			goto out;
		}
		if ((error = add_header(l, req->headers[i])) < 0)
			goto oom;
	}
	if (req->if_none_match) {
		if (has_ctl(req->if_none_match)) {
			error = err_set(err, ERR_INVALID,
					"%s %s: the ETag contains control "
					"characters",
					method, shown);
			goto out;
		}
		if ((error = buf_addf(&b, "If-None-Match: %s",
				      req->if_none_match)) < 0 ||
		    (error = add_header(l, b.ptr)) < 0)
			goto oom;
	}
	if (req->authorization && has_ctl(req->authorization)) {
		error = err_set(err, ERR_INVALID,
				"%s %s: the authorization contains control "
				"characters",
				method, shown);
		goto out;
	}
	if ((error = add_auth(h, req, l)) < 0)
		goto oom;
	/* Bodies are hashed as they come: no content encoding. */
	if ((error = add_header(l, "Accept-Encoding: identity")) < 0)
		goto oom;
	goto out;
oom:
	error = err_set(err, error, "out of memory");
out:
	buf_release(&b);
	return error;
}

static void setup(struct src_http *h, const char *url, bool head,
		  struct curl_slist *headers, struct transfer *t, char *errbuf)
{
	CURL *c = h->curl;

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR,
			 h->plain_http ? "http,https" : "https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR,
			 h->plain_http ? "http,https" : "https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (h->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->timeout_ms);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, h->user_agent);
	if (head)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
	errbuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
}

/* The error of a transfer that did not complete. */
static int transfer_error(struct src_http *h, const struct transfer *t,
			  CURLcode rc, const char *method, const char *shown,
			  const char *file, const char *errbuf, struct err *err)
{
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);

	if (t->over)
		return err_set(err, ERR_LIMIT,
			       "%s %s: body over %" PRIu64 " bytes", method,
			       shown, t->max);
	if (t->oom)
		return err_set(err, ERR_NOMEM, "out of memory");
	if (t->write_errno)
		return err_set(err, ERR_IO, "%s %s: %s: %s", method, shown,
			       file, err_errno_str(t->write_errno));
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return err_set(err, ERR_TIMEOUT,
			       "%s %s: timed out after %ld ms", method, shown,
			       h->timeout_ms);
	case CURLE_UNSUPPORTED_PROTOCOL:
		return err_set(err, ERR_INVALID,
			       "%s %s: only https%s URLs are allowed", method,
			       shown, h->plain_http ? " and http" : "");
	default:
		return err_set(err, ERR_IO, "%s %s: %s", method, shown, why);
	}
}

int src_http_do(struct src_http *h, const struct src_http_request *req,
		struct src_http_response *r, struct err *err)
{
	const char *method = req->method ? req->method : "GET";
	struct buf url = BUF_INIT, shown = BUF_INIT, target = BUF_INIT;
	struct curl_slist *headers = NULL;
	struct transfer t;
	uint8_t digest[SHA256_DIGEST_SIZE];
	char errbuf[CURL_ERROR_SIZE];
	unsigned hops;
	bool created = false;
	CURLcode rc;
	char *loc;
	int error = 0;

	src_http_response_release(r);
	memset(&t, 0, sizeof(t));
	t.fd = -1;
	t.max = req->max_bytes ? req->max_bytes : SRC_HTTP_DEFAULT_MAX_BYTES;
	t.head = !strcmp(method, "HEAD");
	/* 0 (no cap) only where size_t cannot hold the bound: on_body()
	 * checks it anyway. */
	buf_init(&r->body, req->to_file	      ? SRC_HTTP_ERROR_BODY_MAX
			   : t.max > SIZE_MAX ? 0
					      : (size_t)t.max);
	if ((error = src_url_redact(&shown, req->url ? req->url : "")) < 0) {
		err_set(err, error, "out of memory");
		goto out;
	}
	if (!req->url || (strcmp(method, "GET") && !t.head)) {
		error = err_set(err, ERR_INVALID,
				"%s %s: only GET and HEAD requests are made",
				method, buf_cstr(&shown));
		goto out;
	}
	if (has_userinfo(req->url)) {
		error = err_set(err, ERR_INVALID,
				"%s %s: user information in a URL is not "
				"accepted; give credentials as options",
				method, buf_cstr(&shown));
		goto out;
	}
	if ((error = build_headers(h, req, buf_cstr(&shown), &headers, err)) <
	    0)
		goto out;
	if (req->to_file &&
	    (t.fd = open(req->to_file, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC,
			 0600)) < 0) {
		error = err_set(err, ERR_IO, "%s: %s", req->to_file,
				err_errno_str(errno));
		goto out;
	}
	created = req->to_file != NULL;
	if ((error = buf_adds(&url, req->url)) < 0) {
		err_set(err, error, "out of memory");
		goto out;
	}
	for (hops = 0;; hops++) {
		t.r = r;
		t.status = 0;
		t.has_location = false;
		r->body_bytes = 0;
		buf_reset(&r->body);
		headers_release(r);
		sha256_init(&t.sha);
		setup(h, url.ptr, t.head, headers, &t, errbuf);
		h->requests++;
		rc = curl_easy_perform(h->curl);
		if (rc != CURLE_OK || t.over || t.oom || t.write_errno) {
			error = transfer_error(h, &t, rc, method,
					       buf_cstr(&shown), req->to_file,
					       errbuf, err);
			goto out;
		}
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &r->status);
		loc = NULL;
		if (is_redirect(r->status))
			curl_easy_getinfo(h->curl, CURLINFO_REDIRECT_URL, &loc);
		if (!loc)
			break;
		buf_reset(&target);
		if ((error = src_url_redact(&target, loc)) < 0) {
			err_set(err, error, "out of memory");
			goto out;
		}
		if (!src_url_same_origin(url.ptr, loc)) {
			struct src_http_request bare = *req;

			if (!redirect_allowed(h, loc)) {
				error = err_set(err, ERR_INVALID,
						"%s %s: redirected to another "
						"host (%s); refused",
						method, buf_cstr(&shown),
						buf_cstr(&target));
				goto out;
			}
			/* Another host gets no credentials. */
			bare.authorization = NULL;
			bare.no_auth = true;
			wipe_headers(headers);
			headers = NULL;
			if ((error = build_headers(h, &bare, buf_cstr(&shown),
						   &headers, err)) < 0)
				goto out;
		}
		if (hops == MAX_REDIRECTS) {
			error = err_set(err, ERR_LIMIT,
					"%s %s: more than %d redirects "
					"(the last to %s)",
					method, buf_cstr(&shown), MAX_REDIRECTS,
					buf_cstr(&target));
			goto out;
		}
		buf_reset(&url);
		if ((error = buf_adds(&url, loc)) < 0) {
			err_set(err, error, "out of memory");
			goto out;
		}
	}
	if (!(r->effective_url = strdup(url.ptr))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	sha256_final(&t.sha, digest);
	hex_encode(digest, sizeof(digest), r->body_sha256);
	if (t.fd >= 0 && close(t.fd) < 0) {
		t.fd = -1;
		error = err_set(err, ERR_IO, "%s: %s", req->to_file,
				err_errno_str(errno));
		goto out;
	}
	t.fd = -1;
out:
	/* The credentials' copies are not needed past the transfer. */
	curl_easy_reset(h->curl);
	wipe_headers(headers);
	if (t.fd >= 0)
		close(t.fd);
	if (error < 0 && created)
		unlink(req->to_file);
	buf_release(&url);
	buf_release(&shown);
	buf_release(&target);
	return error;
}
