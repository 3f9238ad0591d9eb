/*
 * What fuzz_httpd and fuzz_webhook share: syncd's HTTP server
 * (controller/httpd.c, httpd_start()) on 127.0.0.1 with a port of its
 * own, an API token, a GitHub secret and a GitLab token in files under
 * $TMPDIR (removed at exit), handlers that record their calls, and a
 * client that sends one well-formed request (Content-Length, Connection:
 * close) and reads the whole answer. The server runs for the whole
 * process; each run is one connection.
 */
#ifndef TESTS_FUZZ_HTTPD_FUZZ_H
#define TESTS_FUZZ_HTTPD_FUZZ_H

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "controller/controller.h"

#define FZ_TOKEN	 "fuzz-api-token-1"
#define FZ_GITHUB_SECRET "fuzz-github-secret"
#define FZ_GITLAB_TOKEN	 "fuzz-gitlab-token"
#define FZ_APP		 "web"
#define FZ_MAX_URLS	 8

/* What the handlers saw during one request. */
struct fz_calls {
	unsigned apps, app, sync, push;
	size_t nurls;
	char urls[FZ_MAX_URLS][512];
	char branch[512];
	bool push_truncated;
};

static struct httpd *fz_httpd;
static char fz_dir[4096], fz_token[4200], fz_github[4200], fz_gitlab[4200];
static pthread_mutex_t fz_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fz_calls fz_seen;

static bool fz_ready(struct buf *why, void *ctx)
{
	(void)why;
	(void)ctx;
	return true;
}

static json_t *fz_apps(void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&fz_lock);
	fz_seen.apps++;
	pthread_mutex_unlock(&fz_lock);
	return json_pack("{s:[{s:s}]}", "apps", "name", FZ_APP);
}

static json_t *fz_app(const char *name, void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&fz_lock);
	fz_seen.app++;
	pthread_mutex_unlock(&fz_lock);
	return strcmp(name, FZ_APP) ? NULL : json_pack("{s:s}", "name", name);
}

static int fz_sync(const char *name, void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&fz_lock);
	fz_seen.sync++;
	pthread_mutex_unlock(&fz_lock);
	return strcmp(name, FZ_APP) ? ERR_NOTFOUND : 0;
}

static int fz_push(const char *const *urls, size_t nurls, const char *branch,
		   void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&fz_lock);
	fz_seen.push++;
	fz_seen.nurls = nurls;
	for (size_t i = 0; i < nurls && i < FZ_MAX_URLS; i++) {
		if (strlen(urls[i]) >= sizeof(fz_seen.urls[i]))
			fz_seen.push_truncated = true;
		snprintf(fz_seen.urls[i], sizeof(fz_seen.urls[i]), "%s",
			 urls[i]);
	}
	if (strlen(branch) >= sizeof(fz_seen.branch))
		fz_seen.push_truncated = true;
	snprintf(fz_seen.branch, sizeof(fz_seen.branch), "%s", branch);
	pthread_mutex_unlock(&fz_lock);
	return 1;
}

static void fz_cleanup(void)
{
	httpd_stop(fz_httpd);
	fz_httpd = NULL;
	unlink(fz_token);
	unlink(fz_github);
	unlink(fz_gitlab);
	rmdir(fz_dir);
}

static void fz_write(char *path, const char *name, const char *text)
{
	FILE *f;

	snprintf(path, 4200, "%s/%s", fz_dir, name);
	/* A trailing newline, as editors leave it: the server strips it. */
	if (!(f = fopen(path, "w")) || fprintf(f, "%s\n", text) < 0 ||
	    fclose(f))
		abort();
}

static void fz_start(void)
{
	static const struct httpd_handlers h = {
		NULL, fz_ready, fz_apps, fz_app, fz_sync, fz_push,
	};
	struct httpd_options o = {0};
	const char *tmp = getenv("TMPDIR");
	struct err err = ERR_INIT;

	if (fz_httpd)
		return;
	snprintf(fz_dir, sizeof(fz_dir), "%s/syncd-fuzz-httpd.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(fz_dir))
		abort();
	fz_write(fz_token, "token", FZ_TOKEN);
	fz_write(fz_github, "github", FZ_GITHUB_SECRET);
	fz_write(fz_gitlab, "gitlab", FZ_GITLAB_TOKEN);
	o.listen = "127.0.0.1:0";
	o.api_token_file = fz_token;
	o.github_secret_file = fz_github;
	o.gitlab_token_file = fz_gitlab;
	o.timeout_s = 5;
	if (httpd_start(&fz_httpd, &h, &o, &err) < 0) {
		fprintf(stderr, "fuzz: %s\n", err_msg(&err));
		abort();
	}
	atexit(fz_cleanup);
}

/* Header names a fuzzed header may not take: the framing is ours. */
static inline bool fz_reserved(const char *name, size_t n)
{
	static const char *const names[] = {
		"content-length",
		"transfer-encoding",
		"connection",
		"host",
		"expect",
		"upgrade",
		"te",
		"trailer",
		"keep-alive",
		NULL,
	};

	for (const char *const *p = names; *p; p++)
		if (strlen(*p) == n && !strncasecmp(*p, name, n))
			return true;
	return false;
}

/*
 * Append one fuzzed header line "Name: value" to *req when it is one
 * (a token name, printable value); anything else is dropped.
 */
static inline void fz_add_header(struct buf *req, const char *line, size_t len)
{
	size_t n = 0, v;

	while (n < len && n < 64 &&
	       (isalnum((unsigned char)line[n]) || line[n] == '-'))
		n++;
	if (!n || n >= len || line[n] != ':' || fz_reserved(line, n))
		return;
	for (v = n + 1; v < len; v++)
		if ((unsigned char)line[v] < 0x20 ||
		    (unsigned char)line[v] > 0x7e)
			return;
	buf_add(req, line, len);
	buf_adds(req, "\r\n");
}

/* A path: bytes outside a safe set percent-encoded. */
static inline void fz_add_path(struct buf *req, const char *p, size_t len)
{
	if (!len || p[0] != '/')
		buf_addch(req, '/');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (isalnum(c) || (c && strchr("/-._~?&=%+:@", c)))
			buf_addch(req, (char)c);
		else
			buf_addf(req, "%%%02X", c);
	}
}

struct fz_response {
	int code;
	char *headers; /* NUL-terminated */
	const char *body;
	size_t body_len;
	struct buf raw;
};

/* The value of header `name` in the response, or NULL (static copy). */
static const char *fz_header(const struct fz_response *r, const char *name)
{
	static char value[512];
	size_t n = strlen(name);
	const char *p = r->headers;

	while ((p = strstr(p, "\r\n"))) {
		p += 2;
		if (!strncasecmp(p, name, n) && p[n] == ':') {
			p += n + 1;
			while (*p == ' ')
				p++;
			snprintf(value, sizeof(value), "%.*s",
				 (int)strcspn(p, "\r\n"), p);
			return value;
		}
	}
	return NULL;
}

/* One connection: send head, read the answer into r->raw; errno or 0. */
static int fz_exchange(const struct buf *head, struct fz_response *r)
{
	struct sockaddr_in sa = {0};
	struct timeval tv = {10, 0};
	char chunk[16384];
	ssize_t n;
	size_t off;
	int fd, error = 0;

	memset(r, 0, sizeof(*r));
	pthread_mutex_lock(&fz_lock);
	memset(&fz_seen, 0, sizeof(fz_seen));
	pthread_mutex_unlock(&fz_lock);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)httpd_port(fz_httpd));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		abort();
	/*
	 * Refused now and then after some 30,000 runs: the server side
	 * keeps each closed connection in TIME_WAIT, and a new connection
	 * from a recycled client port can meet one. Another attempt.
	 */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		error = errno;
		close(fd);
		return error;
	}
	for (off = 0; off < head->len; off += (size_t)n) {
		n = send(fd, head->ptr + off, head->len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break; /* refused early (413): read what it said */
	}
	while ((n = recv(fd, chunk, sizeof(chunk), 0)) > 0)
		buf_add(&r->raw, chunk, (size_t)n);
	if (n < 0)
		error = errno;
	close(fd);
	return error;
}

/*
 * Send the request (its head without the final blank line) with `body`,
 * read the answer into *r. A connection closed before any byte, or
 * refused, is tried again (the server was still at its connection limit
 * with the threads of earlier runs); aborts when the server does not answer
 * with a status line within 10 s: a request it cannot answer is a bug.
 */
static void fz_send(struct buf *head, const char *body, size_t len,
		    struct fz_response *r)
{
	char *end;
	int error = 0;

	buf_addf(head,
		 "Host: 127.0.0.1\r\nConnection: close\r\n"
		 "Content-Length: %zu\r\n\r\n",
		 len);
	buf_add(head, body, len);
	if (!head->ptr)
		abort();
	for (int attempt = 0; attempt < 5; attempt++) {
		if (attempt) {
			buf_release(&r->raw);
			usleep(20000);
		}
		error = fz_exchange(head, r);
		if (r->raw.len || error == EAGAIN)
			break;
		if (error)
			usleep(100000);
	}
	if (!r->raw.ptr || sscanf(r->raw.ptr, "HTTP/1.%*d %d", &r->code) != 1 ||
	    !(end = strstr(r->raw.ptr, "\r\n\r\n"))) {
		fprintf(stderr, "fuzz: no answer (%zu bytes, %s) to:\n%.*s\n",
			r->raw.len, error ? strerror(error) : "closed",
			(int)head->len, head->ptr);
		abort();
	}
	*end = '\0';
	r->headers = r->raw.ptr;
	r->body = end + 4;
	r->body_len = r->raw.len - (size_t)(r->body - r->raw.ptr);
}

static void fz_response_release(struct fz_response *r)
{
	buf_release(&r->raw);
}

/* A JSON answer's body, parsed; aborts when it is not JSON. */
static json_t *fz_json(const struct fz_response *r)
{
	const char *ct = fz_header(r, "Content-Type");
	json_t *j;

	if (!ct || strncmp(ct, "application/json", 16))
		return NULL;
	if (!(j = json_loadb(r->body, r->body_len, 0, NULL)))
		abort();
	return j;
}

#endif
