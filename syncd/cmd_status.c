/*
 * syncd status [APP]: what a running `syncd run` says about its apps,
 * read from its HTTP endpoint (docs/http-api.md).
 *
 * The GET goes through a libcurl handle of its own rather than
 * kube_request(): that one is made for the Kubernetes API (a kubeconfig,
 * Status bodies, up to 5 retries with backoff on a refused connection),
 * while this command must answer at once, with the cause, when nothing
 * listens. The endpoint is plain HTTP by design: only http:// is allowed,
 * and no proxy is used (it is a local or in-cluster address). When the
 * controller has api.tokenFile, its app documents need that bearer token:
 * --token-file gives it (read once, never echoed).
 */
#include <curl/curl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "syncd/cli.h"
#include "syncd/status_fmt.h"
#include "util/file.h"

#include "util/banned.h" /* last */

#define DEFAULT_ADDR "http://127.0.0.1:8080"
#define TOKEN_MAX    4096u /* as the server's api.tokenFile */

static const char usage[] =
	"usage: syncd status [APP] [--addr URL] [--token-file FILE]\n"
	"                    [-o text|json] [--no-color]\n"
	"\n"
	"Show what a running `syncd run` reports: every app's state,\n"
	"revision, drifted fields and last sync, or for one APP its drift\n"
	"field by field (object, field, owner, since when).\n"
	"\n"
	"      --addr URL             the controller's HTTP endpoint (http://\n"
	"                             only); default $SYNCD_ADDR, else\n"
	"                             " DEFAULT_ADDR "\n"
	"      --token-file FILE      send the bearer token in FILE (the\n"
	"                             controller's api.tokenFile); default\n"
	"                             $SYNCD_TOKEN_FILE, else none\n"
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

static int timed_out(struct err *err, unsigned timeout_ms)
{
	return err_set(err, ERR_TIMEOUT, "timed out after %u s",
		       (timeout_ms + 999) / 1000);
}

struct sink {
	struct buf *body;
	size_t max;
	bool over; /* the body went past max */
};

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	struct sink *s = ctx;
	size_t len = size * n;

	if (s->body->len + len > s->max || buf_add(s->body, p, len) < 0) {
		s->over = true;
		return 0;
	}
	return len;
}

/* The failure of a transfer as a lower-case cause in `err`. */
static int transfer_error(CURL *h, CURLcode rc, const struct sink *sink,
			  size_t max_body, unsigned timeout_ms, struct err *err)
{
	char why[128];
	long os_errno = 0;

	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return timed_out(err, timeout_ms);
	case CURLE_FILESIZE_EXCEEDED:
	case CURLE_WRITE_ERROR:
		if (rc == CURLE_FILESIZE_EXCEEDED || sink->over)
			return err_set(err, ERR_LIMIT,
				       "the answer is larger than %zu MiB",
				       max_body >> 20 ? max_body >> 20 : 1);
		break;
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_UNSUPPORTED_PROTOCOL: /* HTTP/0.9: not an answer */
		return err_set(err, ERR_PARSE, "not an HTTP/1.1 answer");
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
		return err_set(err, ERR_PARSE,
			       "not an HTTP/1.1 answer (the connection closed "
			       "early)");
	default:
		break;
	}
	curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
	if (os_errno && (rc == CURLE_COULDNT_CONNECT || rc == CURLE_RECV_ERROR ||
			 rc == CURLE_SEND_ERROR))
		return err_set(err, ERR_IO, "%s",
			       cause((int)os_errno, why, sizeof(why)));
	return err_set(err, ERR_IO, "%s",
		       lower_first(curl_easy_strerror(rc), why, sizeof(why)));
}

/* status_http_get() with `token` (NULL: none) as a bearer token. */
static int http_get(const char *base, const char *path, const char *token,
		    size_t max_body, unsigned timeout_ms,
		    struct status_http_response *resp, struct err *err)
{
	struct url u;
	struct buf url = BUF_INIT;
	struct sink sink;
	struct curl_slist *headers = NULL, *h2;
	CURL *h = NULL;
	CURLcode rc;
	long code = 0;
	int error;

	if (!max_body)
		max_body = STATUS_HTTP_MAX_BODY;
	if (!timeout_ms)
		timeout_ms = STATUS_HTTP_TIMEOUT_MS;
	buf_release(&resp->body);
	buf_init(&resp->body, max_body);
	resp->code = 0;
	sink = (struct sink){&resp->body, max_body, false};

	if ((error = url_parse(&u, base, err)) < 0)
		goto out;
	if (buf_addf(&url, "http://%s%s%s:%s%s%s",
		     strchr(u.host, ':') ? "[" : "", u.host,
		     strchr(u.host, ':') ? "]" : "", u.port, u.prefix,
		     path) < 0 ||
	    !(h = curl_easy_init()) ||
	    !(headers = curl_slist_append(NULL, "Accept: application/json")) ||
	    !(h2 = curl_slist_append(headers, "Connection: close"))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	headers = h2;
	curl_easy_setopt(h, CURLOPT_URL, buf_cstr(&url));
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "syncd/" SYNCD_VERSION);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	if (token) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
		curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, token);
	}
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max_body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
	rc = curl_easy_perform(h);
	if (rc != CURLE_OK) {
		error = transfer_error(h, rc, &sink, max_body, timeout_ms, err);
		buf_reset(&resp->body);
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	resp->code = (int)code;
	error = 0;
out:
	curl_slist_free_all(headers);
	if (h)
		curl_easy_cleanup(h);
	buf_release(&url);
	return error;
}

int status_http_get(const char *base, const char *path, size_t max_body,
		    unsigned timeout_ms, struct status_http_response *resp,
		    struct err *err)
{
	return http_get(base, path, NULL, max_body, timeout_ms, resp, err);
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
		{"token-file", required_argument, NULL, 't'},
		{"output", required_argument, NULL, 'o'},
		{"no-color", no_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct status_http_response resp = STATUS_HTTP_RESPONSE_INIT;
	struct status_fmt_options fo = {0};
	struct buf path = BUF_INIT, out = BUF_INIT, token = BUF_INIT;
	struct err err = ERR_INIT;
	const char *addr = getenv("SYNCD_ADDR"), *app = NULL, *nc;
	const char *token_file = getenv("SYNCD_TOKEN_FILE");
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
		case 't':
			token_file = optarg;
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
	if (token_file && !*token_file)
		token_file = NULL;
	if (token_file &&
	    ((c = file_read_secret(&token, token_file, TOKEN_MAX, &err)) < 0 ||
	     !token.len)) {
		struct buf f = BUF_INIT;

		status_fmt_cell(&f, token_file, 200, false, false);
		if (c < 0)
			fprintf(stderr, "syncd status: %s\n", err_first(&err));
		else
			fprintf(stderr,
				"syncd status: %s: the token file is "
				"empty\n",
				buf_cstr(&f));
		buf_release(&f);
		goto out;
	}

	if (buf_adds(&path, "/api/v1/apps") < 0 ||
	    (app && (buf_addch(&path, '/') < 0 || add_segment(&path, app) < 0)))
		goto nomem;
	if (http_get(addr, buf_cstr(&path),
		     token_file ? buf_cstr(&token) : NULL, 0, 0, &resp,
		     &err) < 0) {
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
		fprintf(stderr, "syncd status: GET %s: HTTP %d%s%s\n",
			buf_cstr(&path), resp.code, detail,
			resp.code == 401 && !token_file
				? " (the controller has a token: give "
				  "--token-file FILE)"
				: "");
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
	file_secret_release(&token);
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
