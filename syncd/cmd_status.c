/*
 * syncd status [APP]: what a running `syncd run` says about its apps,
 * read from its HTTP endpoint (docs/http-api.md).
 *
 * The request is a plain HTTP/1.1 GET over a TCP socket rather than
 * kube_request(): that one is made for the Kubernetes API (a kubeconfig,
 * Status bodies, up to 5 retries with backoff on a refused connection),
 * while this command must answer at once, with the cause, when nothing
 * listens. The endpoint is plain HTTP by design, so no TLS here.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "syncd/cli.h"
#include "syncd/status_fmt.h"
#include "util/clock.h"

#include "util/banned.h" /* last */

#define DEFAULT_ADDR "http://127.0.0.1:8080"
#define MAX_HEADER   (64u << 10)
#define READ_CHUNK   65536

static const char usage[] =
	"usage: syncd status [APP] [--addr URL] [-o text|json] [--no-color]\n"
	"\n"
	"Show what a running `syncd run` reports: every app's state,\n"
	"revision, drifted fields and last sync, or for one APP its drift\n"
	"field by field (object, field, owner, since when).\n"
	"\n"
	"      --addr URL             the controller's HTTP endpoint (http://\n"
	"                             only); default $SYNCD_ADDR, else\n"
	"                             " DEFAULT_ADDR "\n"
	"  -o, --output text|json     text (default) or the JSON document\n"
	"      --no-color             no colours (also when $NO_COLOR is set\n"
	"                             or stdout is not a terminal)\n"
	"  -h, --help                 this text\n"
	"\n"
	"Exit status: 0 shown, 2 could not (the endpoint unreachable, an\n"
	"unknown APP, a bad answer).\n";

void status_http_response_release(struct status_http_response *resp)
{
	if (!resp)
		return;
	buf_release(&resp->body);
	resp->code = 0;
}

/*
 * A system message with a lower-case first letter (unless it starts an
 * acronym), for "cannot reach X: connection refused".
 */
static const char *lower_first(const char *msg, char *out, size_t size)
{
	snprintf(out, size, "%s", msg);
	if (out[0] >= 'A' && out[0] <= 'Z' && !(out[1] >= 'A' && out[1] <= 'Z'))
		out[0] = (char)(out[0] - 'A' + 'a');
	return out;
}

static const char *cause(int errnum, char *out, size_t size)
{
	return lower_first(strerror(errnum), out, size);
}

struct url {
	char host[256];
	char port[8];
	char prefix[1024]; /* the path of the base URL, without a final '/' */
};

/* Split "http://host[:port][/prefix]"; "[v6]" hosts allowed. */
static int url_parse(struct url *u, const char *s, struct err *err)
{
	const char *p, *end, *colon;
	size_t n;

	if (strncasecmp(s, "http://", 7))
		return err_set(err, ERR_INVALID, "%s",
			       strncasecmp(s, "https://", 8)
				       ? "not an http:// URL"
				       : "https:// is not supported (the "
					 "endpoint is plain HTTP)");
	p = s + 7;
	end = p + strcspn(p, "/?#");
	if (*end == '?' || *end == '#' || memchr(p, '@', end - p))
		return err_set(err, ERR_INVALID,
			       "a query, fragment or user name in the URL");
	if (*p == '[') {
		const char *close = memchr(p, ']', end - p);

		if (!close)
			return err_set(err, ERR_INVALID, "bad IPv6 address");
		n = close - p - 1;
		if (n >= sizeof(u->host))
			return err_set(err, ERR_INVALID, "host too long");
		memcpy(u->host, p + 1, n);
		u->host[n] = '\0';
		colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
		if (!colon && close + 1 != end)
			return err_set(err, ERR_INVALID, "bad IPv6 address");
	} else {
		colon = memchr(p, ':', end - p);
		n = (colon ? colon : end) - p;
		if (n >= sizeof(u->host))
			return err_set(err, ERR_INVALID, "host too long");
		memcpy(u->host, p, n);
		u->host[n] = '\0';
	}
	if (!u->host[0])
		return err_set(err, ERR_INVALID, "no host in the URL");
	snprintf(u->port, sizeof(u->port), "80");
	if (colon) {
		n = end - colon - 1;
		if (!n || n >= sizeof(u->port) ||
		    strspn(colon + 1, "0123456789") < n)
			return err_set(err, ERR_INVALID, "bad port");
		memcpy(u->port, colon + 1, n);
		u->port[n] = '\0';
		if (strtol(u->port, NULL, 10) < 1 ||
		    strtol(u->port, NULL, 10) > 65535)
			return err_set(err, ERR_INVALID, "bad port");
	}
	n = strlen(end);
	while (n && end[n - 1] == '/')
		n--;
	if (n >= sizeof(u->prefix))
		return err_set(err, ERR_INVALID, "path too long");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)end[i] <= ' ' || end[i] == 0x7f)
			return err_set(
				err, ERR_INVALID,
				"a space or control character in the URL");
	memcpy(u->prefix, end, n);
	u->prefix[n] = '\0';
	return 0;
}

/* Milliseconds left before `deadline`, at least 0. */
static int left_ms(long long deadline)
{
	long long left = deadline - clk_mono_ms();

	return left < 0 ? 0 : (int)left;
}

static int timed_out(struct err *err, unsigned timeout_ms)
{
	return err_set(err, ERR_TIMEOUT, "timed out after %u s",
		       (timeout_ms + 999) / 1000);
}

/* Connect to the first address that answers, before `deadline`. */
static int dial(int *out, const struct url *u, long long deadline,
		unsigned timeout_ms, struct err *err)
{
	struct addrinfo hints = {0}, *res = NULL, *ai;
	char why[128];
	int fd = -1, rc, last = ECONNREFUSED, error = 0;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(u->host, u->port, &hints, &res);
	if (rc) {
		error = err_set(err, ERR_IO, "%s",
				rc == EAI_SYSTEM
					? cause(errno, why, sizeof(why))
					: lower_first(gai_strerror(rc), why,
						      sizeof(why)));
		goto out;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		struct pollfd pfd;
		socklen_t len = sizeof(rc);

		fd = socket(ai->ai_family,
			    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			last = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno != EINPROGRESS) {
			last = errno;
			goto next;
		}
		pfd.fd = fd;
		pfd.events = POLLOUT;
		do
			rc = poll(&pfd, 1, left_ms(deadline));
		while (rc < 0 && errno == EINTR);
		if (rc == 0) {
			close(fd);
			error = timed_out(err, timeout_ms);
			goto out;
		}
		if (rc > 0 &&
		    !getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &len) && rc == 0)
			break;
		last = rc > 0 ? rc : errno;
	next:
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		error = err_set(err, ERR_IO, "%s",
				cause(last, why, sizeof(why)));
out:
	if (res)
		freeaddrinfo(res);
	*out = fd;
	return error;
}

static int send_all(int fd, const char *p, size_t len, long long deadline,
		    unsigned timeout_ms, struct err *err)
{
	char why[128];

	while (len) {
		struct pollfd pfd = {fd, POLLOUT, 0};
		ssize_t n;
		int rc = poll(&pfd, 1, left_ms(deadline));

		if (rc == 0)
			return timed_out(err, timeout_ms);
		if (rc < 0 && errno == EINTR)
			continue;
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return err_set(err, ERR_IO, "%s",
				       cause(errno, why, sizeof(why)));
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Decode the chunked body at `p` (`len` bytes) into `body`. Returns 1
 * when the last chunk was seen, 0 when more is needed, or ERR_PARSE /
 * ERR_LIMIT (the body's cap).
 */
static int dechunk(const char *p, size_t len, struct buf *body)
{
	const char *end = p + len;

	buf_reset(body);
	for (;;) {
		const char *eol = memmem(p, end - p, "\r\n", 2);
		unsigned long long size = 0;
		const char *q;

		if (!eol)
			return 0;
		for (q = p;
		     q < eol && strchr("0123456789abcdefABCDEF", *q) && *q;
		     q++) {
			if (size > (1ULL << 40))
				return ERR_LIMIT;
			size = size * 16 +
			       (unsigned)(*q <= '9' ? *q - '0'
						    : (*q | 0x20) - 'a' + 10);
		}
		if (q == p || (q < eol && *q != ';' && *q != ' '))
			return ERR_PARSE;
		p = eol + 2;
		if (!size)
			return 1; /* trailers, if any, do not matter */
		if (size > (unsigned long long)(end - p) ||
		    (size_t)(end - p) - size < 2)
			return body->cap && size > body->cap ? ERR_LIMIT : 0;
		if (buf_add(body, p, size) < 0)
			return ERR_LIMIT;
		p += size;
		if (p[0] != '\r' || p[1] != '\n')
			return ERR_PARSE;
		p += 2;
	}
}

/* What the headers say about the body. */
struct head {
	size_t len; /* of the status line and headers, with \r\n\r\n */
	int code;
	bool chunked;
	long long length; /* Content-Length, or -1 */
};

static int parse_head(struct head *h, const char *raw, size_t len)
{
	const char *end = memmem(raw, len, "\r\n\r\n", 4), *p, *eol;
	int major, minor, n = 0;

	if (!end)
		return 0;
	h->len = end - raw + 4;
	h->chunked = false;
	h->length = -1;
	if (sscanf(raw, "HTTP/%1d.%1d %3d%n", &major, &minor, &h->code, &n) !=
		    3 ||
	    major != 1 || h->code < 100)
		return ERR_PARSE;
	p = memmem(raw, len, "\r\n", 2) + 2;
	while (p < end + 2) {
		eol = memmem(p, end + 2 - p, "\r\n", 2);
		if (!strncasecmp(p, "Content-Length:", 15)) {
			char *e;

			h->length = strtoll(p + 15, &e, 10);
			if (h->length < 0 || e == p + 15)
				return ERR_PARSE;
		} else if (!strncasecmp(p, "Transfer-Encoding:", 18)) {
			const char *v = p + 18;

			while (*v == ' ' || *v == '\t')
				v++;
			h->chunked = !strncasecmp(v, "chunked", 7);
		}
		p = eol + 2;
	}
	return 1;
}

int status_http_get(const char *base, const char *path, size_t max_body,
		    unsigned timeout_ms, struct status_http_response *resp,
		    struct err *err)
{
	struct url u;
	struct buf req = BUF_INIT, raw = BUF_INIT;
	struct head h = {0, 0, false, -1};
	long long deadline;
	bool have_head = false, eof = false;
	char why[128];
	int fd = -1, error, rc;

	if (!max_body)
		max_body = STATUS_HTTP_MAX_BODY;
	if (!timeout_ms)
		timeout_ms = STATUS_HTTP_TIMEOUT_MS;
	deadline = clk_mono_ms() + timeout_ms;
	buf_release(&resp->body);
	buf_init(&resp->body, max_body);
	resp->code = 0;
	/* Chunk framing may add to the body; the head has its own cap. */
	buf_init(&raw, MAX_HEADER + max_body + max_body / 4 + 4096);

	if ((error = url_parse(&u, base, err)) < 0)
		goto out;
	if (buf_addf(&req,
		     "GET %s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\n"
		     "User-Agent: syncd/%s\r\nAccept: application/json\r\n"
		     "Connection: close\r\n\r\n",
		     u.prefix, path, strchr(u.host, ':') ? "[" : "", u.host,
		     strchr(u.host, ':') ? "]" : "", u.port,
		     SYNCD_VERSION) < 0) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((error = dial(&fd, &u, deadline, timeout_ms, err)) < 0)
		goto out;
	if ((error = send_all(fd, req.ptr, req.len, deadline, timeout_ms,
			      err)) < 0)
		goto out;

	for (;;) {
		char chunk[READ_CHUNK];
		struct pollfd pfd = {fd, POLLIN, 0};
		ssize_t n;

		if (have_head) {
			size_t got = raw.len - h.len;

			if (h.chunked) {
				/* Try only when the terminator may be there. */
				if (eof ||
				    (got >= 5 && !memcmp(raw.ptr + raw.len - 4,
							 "\r\n\r\n", 4))) {
					rc = dechunk(raw.ptr + h.len, got,
						     &resp->body);
					if (rc == 1)
						break;
					if (rc == ERR_LIMIT)
						goto too_big;
					if (rc < 0 || eof)
						goto bad;
				}
			} else if (h.length >= 0) {
				if ((unsigned long long)h.length > max_body)
					goto too_big;
				if (got >= (unsigned long long)h.length) {
					buf_add(&resp->body, raw.ptr + h.len,
						(size_t)h.length);
					break;
				}
				if (eof)
					goto bad;
			} else if (eof) {
				if (got > max_body)
					goto too_big;
				buf_add(&resp->body, raw.ptr + h.len, got);
				break;
			}
		} else if (eof) {
			goto bad;
		}
		rc = poll(&pfd, 1, left_ms(deadline));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc == 0) {
			error = timed_out(err, timeout_ms);
			goto out;
		}
		n = recv(fd, chunk, sizeof(chunk), 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0) {
			error = err_set(err, ERR_IO, "%s",
					cause(errno, why, sizeof(why)));
			goto out;
		}
		if (n == 0) {
			eof = true;
			continue;
		}
		if (buf_add(&raw, chunk, (size_t)n) < 0)
			goto too_big;
		if (!have_head) {
			/* 1xx answers precede the real one: drop them. */
			while ((rc = parse_head(&h, raw.ptr, raw.len)) == 1 &&
			       h.code < 200) {
				memmove(raw.ptr, raw.ptr + h.len,
					raw.len - h.len);
				buf_truncate(&raw, raw.len - h.len);
			}
			if (rc < 0 || (rc == 0 && raw.len > MAX_HEADER))
				goto bad;
			have_head = rc == 1;
		}
	}
	resp->code = h.code;
	error = 0;
	goto out;
too_big:
	error = err_set(err, ERR_LIMIT, "the answer is larger than %zu MiB",
			max_body >> 20 ? max_body >> 20 : 1);
	goto out;
bad:
	error = err_set(err, ERR_PARSE, "not an HTTP/1.1 answer%s",
			eof ? " (the connection closed early)" : "");
out:
	if (fd >= 0)
		close(fd);
	buf_release(&req);
	buf_release(&raw);
	return error;
}

/* Append `s` percent-encoded as one path segment. */
static int add_segment(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int error = 0;

	for (; *s && !error; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-._~", c))
			error = buf_addch(b, (char)c);
		else
			error = buf_addf(b, "%%%c%c", hex[c >> 4], hex[c & 15]);
	}
	return error;
}

/* The "error" of a JSON error body, sanitised and cut, or "". */
static void error_text(char *out, size_t size, const struct buf *body)
{
	json_t *j = json_loadb(body->ptr ? body->ptr : "", body->len, 0, NULL);
	const char *e = json_string_value(json_object_get(j, "error"));
	struct buf b = BUF_INIT;

	out[0] = '\0';
	if (e && !status_fmt_cell(&b, e, 200, false, false))
		snprintf(out, size, ": %s", buf_cstr(&b));
	buf_release(&b);
	json_decref(j);
}

static int status_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"addr", required_argument, NULL, 'a'},
		{"output", required_argument, NULL, 'o'},
		{"no-color", no_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct status_http_response resp = STATUS_HTTP_RESPONSE_INIT;
	struct status_fmt_options fo = {0};
	struct buf path = BUF_INIT, out = BUF_INIT;
	struct err err = ERR_INIT;
	const char *addr = getenv("SYNCD_ADDR"), *app = NULL, *nc;
	bool json = false, no_color = false;
	json_t *doc = NULL;
	json_error_t jerr;
	char detail[256];
	int c, rc = EXIT_ERROR;

	if (!addr || !*addr)
		addr = DEFAULT_ADDR;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			addr = optarg;
			break;
		case 'o':
			if (!strcmp(optarg, "json"))
				json = true;
			else if (!strcmp(optarg, "text"))
				json = false;
			else
				return cli_usage_error(&cli_status_command,
						       "-o takes text or json");
			break;
		case 'n':
			no_color = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return EXIT_OK;
		default:
			return cli_usage_error(&cli_status_command,
					       "bad option");
		}
	}
	if (optind < argc)
		app = argv[optind++];
	if (optind < argc)
		return cli_usage_error(&cli_status_command, "unexpected \"%s\"",
				       argv[optind]);
	if (app && !*app)
		return cli_usage_error(&cli_status_command, "empty APP");

	if (buf_adds(&path, "/api/v1/apps") < 0 ||
	    (app && (buf_addch(&path, '/') < 0 || add_segment(&path, app) < 0)))
		goto nomem;
	if (status_http_get(addr, buf_cstr(&path), 0, 0, &resp, &err) < 0) {
		struct buf a = BUF_INIT;

		status_fmt_cell(&a, addr, 200, false, false);
		fprintf(stderr, "syncd status: cannot reach %s: %s\n",
			buf_cstr(&a), err_first(&err));
		buf_release(&a);
		goto out;
	}
	if (resp.code == 404 && app) {
		struct buf a = BUF_INIT;

		status_fmt_cell(&a, app, 200, false, false);
		fprintf(stderr, "syncd status: unknown app \"%s\"\n",
			buf_cstr(&a));
		buf_release(&a);
		goto out;
	}
	if (resp.code != 200) {
		error_text(detail, sizeof(detail), &resp.body);
		fprintf(stderr, "syncd status: GET %s: HTTP %d%s\n",
			buf_cstr(&path), resp.code, detail);
		goto out;
	}
	doc = json_loadb(buf_cstr(&resp.body), resp.body.len, 0, &jerr);
	if (!doc) {
		fprintf(stderr, "syncd status: GET %s: not JSON: %s\n",
			buf_cstr(&path), jerr.text);
		goto out;
	}
	nc = getenv("NO_COLOR");
	fo.now = time(NULL);
	fo.width = STATUS_WIDTH;
	fo.color = !no_color && !(nc && *nc) && isatty(STDOUT_FILENO);
	if (json)
		c = status_fmt_json(&out, doc, &err);
	else if (app)
		c = status_fmt_app(&out, doc, &fo, &err);
	else
		c = status_fmt_apps(&out, doc, &fo, &err);
	if (c < 0) {
		fprintf(stderr, "syncd status: GET %s: %s\n", buf_cstr(&path),
			err_first(&err));
		goto out;
	}
	rc = cli_write_stdout(buf_cstr(&out), out.len);
	goto out;
nomem:
	fputs("syncd status: out of memory\n", stderr);
out:
	json_decref(doc);
	status_http_response_release(&resp);
	buf_release(&path);
	buf_release(&out);
	err_release(&err);
	return rc;
}

const struct cli_command cli_status_command = {
	"status",
	"show the apps of a running controller (syncd run)",
	usage,
	status_main,
};
