/*
 * httpd: the HTTP endpoint of `syncd run` on libmicrohttpd.
 *
 * One thread per connection (MHD's internal polling thread accepts), at
 * most MAX_CONNECTIONS at once: a scrape whose collector is slow, or a
 * webhook whose handler takes a lock, never holds up /healthz. A request
 * is routed when its headers arrive; its body is collected (capped) and
 * the answer made once the whole request is in.
 *
 * The browser view (GET / and GET /ui/NAME) is served from the files embedded
 * at build time (controller/ui/assets.h) under a Content-Security-Policy that
 * lets the page load only its own script and style and talk only to this
 * server: together with the page building every value as text, a value from the
 * cluster or Git cannot run as script.
 */
#include "controller/controller.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "controller/ui/assets.h"
#include "util/sha256.h"
#include "util/file.h"

#include "util/banned.h" /* last */

#define DEFAULT_MAX_BODY  ((size_t)1 << 20)
#define DEFAULT_TIMEOUT_S 10u
#define MAX_CONNECTIONS	  64u
#define CONNECTION_MEMORY ((size_t)64 << 10)
#define SECRET_MAX	  4096u
#define DRAIN_FACTOR	  4u /* see on_request() */
#define APPS_PREFIX	  "/api/v1/apps/"
#define METRICS_TYPE	  "text/plain; version=0.0.4; charset=utf-8"
#define UI_CSP                                                      \
	"default-src 'none'; script-src 'self'; style-src 'self'; " \
	"img-src 'self'; connect-src 'self'; base-uri 'none'; "     \
	"form-action 'none'; frame-ancestors 'none'"

struct httpd {
	struct MHD_Daemon *daemon;
	struct httpd_handlers h;
	struct metrics *metrics;
	char *api_token_file;
	char *github_secret_file;
	char *gitlab_token_file;
	size_t max_body;
	unsigned port;
};

enum route {
	ROUTE_NONE,
	ROUTE_HEALTHZ,
	ROUTE_READYZ,
	ROUTE_METRICS,
	ROUTE_APPS,
	ROUTE_APP,
	ROUTE_SYNC,
	ROUTE_HOOK,
	ROUTE_UI,
};

/* Per request: the route and the body collected so far. */
struct request {
	enum route route;
	char *app; /* ROUTE_APP, ROUTE_SYNC: the name */
	/* ROUTE_UI: the embedded file */
	const struct httpd_asset *asset;
	struct buf body;
	bool too_big;
	size_t dropped; /* bytes read past the cap */
};

/* A JSON answer; `doc` is stolen. `challenge`: a WWW-Authenticate value. */
static enum MHD_Result reply_json_auth(struct MHD_Connection *conn,
				       unsigned code, json_t *doc,
				       const char *challenge)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	size_t len;

	json_decref(doc);
	if (!text)
		return MHD_NO;
	len = strlen(text);
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_COPY);
	free(text);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (challenge)
		MHD_add_response_header(r, "WWW-Authenticate", challenge);
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_json(struct MHD_Connection *conn, unsigned code,
				  json_t *doc)
{
	return reply_json_auth(conn, code, doc, NULL);
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned code,
				   const char *msg)
{
	return reply_json(conn, code, json_pack("{s:s}", "error", msg));
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned code,
				  const char *type, const char *text,
				  size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)text,
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * Constant-time equality of two byte strings of any lengths: their
 * digests are compared, so neither the contents nor where they first
 * differ shows in the time taken.
 */
static bool secret_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	uint8_t da[SHA256_DIGEST_SIZE], db[SHA256_DIGEST_SIZE];

	sha256(a, alen, da);
	sha256(b, blen, db);
	return timingsafe_memcmp(da, db, sizeof(da)) == 0;
}

static enum route route_of(const char *url, char **app,
			   const struct httpd_asset **asset)
{
	const char *name, *slash;

	*app = NULL;
	*asset = NULL;
	if (!strcmp(url, "/") || !strncmp(url, "/ui/", 4)) {
		*asset = httpd_asset_find(url);
		return *asset ? ROUTE_UI : ROUTE_NONE;
	}
	if (!strcmp(url, "/healthz"))
		return ROUTE_HEALTHZ;
	if (!strcmp(url, "/readyz"))
		return ROUTE_READYZ;
	if (!strcmp(url, "/metrics"))
		return ROUTE_METRICS;
	if (!strcmp(url, "/api/v1/apps"))
		return ROUTE_APPS;
	if (!strcmp(url, "/hooks/git"))
		return ROUTE_HOOK;
	if (strncmp(url, APPS_PREFIX, strlen(APPS_PREFIX)))
		return ROUTE_NONE;
	name = url + strlen(APPS_PREFIX);
	slash = strchr(name, '/');
	if (!*name || slash == name)
		return ROUTE_NONE;
	if (!slash) {
		*app = strdup(name);
		return *app ? ROUTE_APP : ROUTE_NONE;
	}
	if (strcmp(slash, "/sync"))
		return ROUTE_NONE;
	*app = strndup(name, (size_t)(slash - name));
	return *app ? ROUTE_SYNC : ROUTE_NONE;
}

static bool route_is_post(enum route r)
{
	return r == ROUTE_SYNC || r == ROUTE_HOOK;
}

static enum MHD_Result serve_readyz(struct httpd *d,
				    struct MHD_Connection *conn)
{
	struct buf why = BUF_INIT;
	enum MHD_Result ret;
	bool ok;

	buf_init(&why, 4096);
	ok = !d->h.ready || d->h.ready(&why, d->h.ctx);
	if (ok)
		ret = reply_text(conn, MHD_HTTP_OK, "text/plain", "ok\n", 3);
	else
		ret = reply_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				  why.len ? why.ptr : "not ready");
	buf_release(&why);
	return ret;
}

static enum MHD_Result serve_metrics(struct httpd *d,
				     struct MHD_Connection *conn)
{
	struct buf out = BUF_INIT;
	enum MHD_Result ret;

	if (!d->metrics)
		return reply_error(conn, MHD_HTTP_NOT_FOUND, "no metrics");
	if (metrics_render(d->metrics, &out) < 0)
		ret = reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "cannot render the metrics");
	else
		ret = reply_text(conn, MHD_HTTP_OK, METRICS_TYPE,
				 buf_cstr(&out), out.len);
	buf_release(&out);
	return ret;
}

static enum MHD_Result unknown_app(struct MHD_Connection *conn,
				   const char *name)
{
	json_t *doc = json_object();
	json_t *msg = json_sprintf("unknown app \"%s\"", name);

	/* A name that is not UTF-8 cannot be echoed in JSON. */
	if (!msg)
		msg = json_string("unknown app");
	json_object_set_new(doc, "error", msg);
	return reply_json(conn, MHD_HTTP_NOT_FOUND, doc);
}

/*
 * Does the request carry the bearer token of api_token_file (which must
 * be set)? When it does not, the answer is queued into *ret: 401 with a
 * Bearer challenge, or 500 when the file cannot be read. The file is
 * read on every request (rotation), and an empty one opens nothing.
 */
static bool bearer_ok(struct httpd *d, struct MHD_Connection *conn,
		      enum MHD_Result *ret)
{
	struct buf token = BUF_INIT;
	const char *auth;
	bool ok;

	/* The file name is not secret but is not echoed either. */
	if (file_read_secret(&token, d->api_token_file, SECRET_MAX, NULL) < 0) {
		*ret = reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "cannot read the API token file");
		return false;
	}
	auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_AUTHORIZATION);
	ok = token.len && auth && !strncasecmp(auth, "Bearer ", 7) &&
	     secret_equal(auth + 7, strlen(auth + 7), token.ptr, token.len);
	file_secret_release(&token);
	if (!ok)
		*ret = reply_json_auth(conn, MHD_HTTP_UNAUTHORIZED,
				       json_pack("{s:s}", "error",
						 "missing or wrong bearer "
						 "token"),
				       "Bearer");
	return ok;
}

static enum MHD_Result serve_sync(struct httpd *d, struct MHD_Connection *conn,
				  const char *name)
{
	enum MHD_Result ret;
	int rc;

	if (!d->api_token_file)
		return reply_error(conn, MHD_HTTP_FORBIDDEN,
				   "no API token is configured");
	if (!bearer_ok(d, conn, &ret))
		return ret;
	rc = d->h.sync ? d->h.sync(name, d->h.ctx) : ERR_NOTFOUND;
	if (rc == ERR_NOTFOUND)
		return unknown_app(conn, name);
	if (rc < 0)
		return reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "cannot queue the sync");
	return reply_json(
		conn, MHD_HTTP_ACCEPTED,
		json_pack("{s:s,s:s}", "app", name, "status", "queued"));
}

/* Adds `key`'s string value to urls[] when present and not empty. */
static void add_url(json_t *obj, const char *key, const char **urls, size_t *n)
{
	const char *v = json_string_value(json_object_get(obj, key));

	if (v && *v)
		urls[(*n)++] = v;
}

/*
 * A push event's repository and branch → handlers->push(). Tag pushes
 * and events without a branch trigger nothing.
 */
static enum MHD_Result serve_push(struct httpd *d, struct MHD_Connection *conn,
				  bool github, const struct buf *body)
{
	static const char heads[] = "refs/heads/";
	const char *urls[4], *ref;
	json_error_t jerr;
	json_t *doc, *repo;
	size_t n = 0;
	int triggered = 0;
	enum MHD_Result ret;

	doc = json_loadb(body->ptr ? body->ptr : "", body->len, 0, &jerr);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return reply_error(conn, MHD_HTTP_BAD_REQUEST,
				   "the event is not a JSON object");
	}
	ref = json_string_value(json_object_get(doc, "ref"));
	repo = json_object_get(doc, github ? "repository" : "project");
	if (github) {
		add_url(repo, "clone_url", urls, &n);
		add_url(repo, "ssh_url", urls, &n);
		add_url(repo, "html_url", urls, &n);
		add_url(repo, "git_url", urls, &n);
	} else {
		add_url(repo, "git_http_url", urls, &n);
		add_url(repo, "git_ssh_url", urls, &n);
		add_url(repo, "web_url", urls, &n);
	}
	if (ref && !strncmp(ref, heads, strlen(heads)) && ref[strlen(heads)] &&
	    n && d->h.push) {
		triggered = d->h.push(urls, n, ref + strlen(heads), d->h.ctx);
		if (triggered < 0) {
			json_decref(doc);
			return reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
					   "cannot poll the apps");
		}
	}
	ret = reply_json(conn, MHD_HTTP_ACCEPTED,
			 json_pack("{s:i}", "triggered", triggered));
	json_decref(doc);
	return ret;
}

/* "sha256=" and the lowercase hex HMAC-SHA-256 of the body. */
static bool github_signed(const char *secret, size_t slen, const char *sig,
			  const struct buf *body)
{
	uint8_t mac[SHA256_DIGEST_SIZE];
	char want[7 + 2 * SHA256_DIGEST_SIZE + 1];

	memcpy(want, "sha256=", 7);
	hmac_sha256(secret, slen, body->ptr ? body->ptr : "", body->len, mac);
	hex_encode(mac, sizeof(mac), want + 7);
	return secret_equal(sig, strlen(sig), want, strlen(want));
}

static enum MHD_Result serve_hook(struct httpd *d, struct MHD_Connection *conn,
				  const struct buf *body)
{
	struct buf secret = BUF_INIT;
	const char *gh_event, *gl_event, *sig, *file;
	bool github, ok;

	gh_event = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					       "X-GitHub-Event");
	gl_event = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					       "X-Gitlab-Event");
	if (gh_event) {
		github = true;
		file = d->github_secret_file;
		sig = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						  "X-Hub-Signature-256");
	} else if (gl_event) {
		github = false;
		file = d->gitlab_token_file;
		sig = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						  "X-Gitlab-Token");
	} else {
		return reply_error(conn, MHD_HTTP_UNAUTHORIZED,
				   "not a GitHub or GitLab event");
	}
	if (!file || !sig)
		return reply_error(conn, MHD_HTTP_UNAUTHORIZED,
				   "missing or bad signature");
	if (file_read_secret(&secret, file, SECRET_MAX, NULL) < 0)
		return reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "cannot read the webhook secret file");
	if (github)
		ok = secret.len &&
		     github_signed(secret.ptr, secret.len, sig, body);
	else
		ok = secret.len &&
		     secret_equal(sig, strlen(sig), secret.ptr, secret.len);
	file_secret_release(&secret);
	if (!ok)
		return reply_error(conn, MHD_HTTP_UNAUTHORIZED,
				   "missing or bad signature");

	if (github && !strcmp(gh_event, "ping"))
		return reply_json(conn, MHD_HTTP_OK,
				  json_pack("{s:b}", "pong", 1));
	if ((github && !strcmp(gh_event, "push")) ||
	    (!github && !strcmp(gl_event, "Push Hook")))
		return serve_push(d, conn, github, body);
	return reply_json(conn, MHD_HTTP_ACCEPTED,
			  json_pack("{s:i}", "triggered", 0));
}

/*
 * One embedded file of the browser view. It holds no data, so it needs no
 * token; the data comes from /api/v1/apps, which does when one is set.
 */
static enum MHD_Result serve_ui(struct MHD_Connection *conn,
				const struct httpd_asset *a)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	const char *match;
	bool same;

	match = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					    MHD_HTTP_HEADER_IF_NONE_MATCH);
	same = match && !strcmp(match, a->etag);
	r = MHD_create_response_from_buffer(same ? 0 : a->len, (void *)a->data,
					    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", a->type);
	MHD_add_response_header(r, "Content-Security-Policy", UI_CSP);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	/* Revalidated on each load: a new syncd serves its new page. */
	MHD_add_response_header(r, "Cache-Control", "no-cache");
	MHD_add_response_header(r, "ETag", a->etag);
	ret = MHD_queue_response(conn,
				 same ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve(struct httpd *d, struct MHD_Connection *conn,
			     struct request *req)
{
	enum MHD_Result ret;
	json_t *doc;

	/* With a token configured, the apps' documents need it too. */
	if ((req->route == ROUTE_APPS || req->route == ROUTE_APP) &&
	    d->api_token_file && !bearer_ok(d, conn, &ret))
		return ret;
	switch (req->route) {
	case ROUTE_HEALTHZ:
		return reply_text(conn, MHD_HTTP_OK, "text/plain", "ok\n", 3);
	case ROUTE_READYZ:
		return serve_readyz(d, conn);
	case ROUTE_METRICS:
		return serve_metrics(d, conn);
	case ROUTE_APPS:
		doc = d->h.apps ? d->h.apps(d->h.ctx) : NULL;
		if (!doc)
			return reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
					   "cannot list the apps");
		return reply_json(conn, MHD_HTTP_OK, doc);
	case ROUTE_APP:
		doc = d->h.app ? d->h.app(req->app, d->h.ctx) : NULL;
		if (!doc)
			return unknown_app(conn, req->app);
		return reply_json(conn, MHD_HTTP_OK, doc);
	case ROUTE_SYNC:
		return serve_sync(d, conn, req->app);
	case ROUTE_HOOK:
		return serve_hook(d, conn, &req->body);
	case ROUTE_UI:
		return serve_ui(conn, req->asset);
	case ROUTE_NONE:
		break;
	}
	return reply_error(conn, MHD_HTTP_NOT_FOUND, "not found");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *data,
				  size_t *data_size, void **con_cls)
{
	struct httpd *d = cls;
	struct request *req = *con_cls;
	const char *clen;
	bool post, get;

	(void)version;
	if (!req) {
		/* Headers are in: route now, answer errors before any body. */
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		*con_cls = req;
		buf_init(&req->body, d->max_body);
		req->route = route_of(url, &req->app, &req->asset);
		if (req->route == ROUTE_NONE)
			return reply_error(conn, MHD_HTTP_NOT_FOUND,
					   "not found");
		post = !strcmp(method, MHD_HTTP_METHOD_POST);
		get = !strcmp(method, MHD_HTTP_METHOD_GET) ||
		      !strcmp(method, MHD_HTTP_METHOD_HEAD);
		if (route_is_post(req->route) ? !post : !get)
			return reply_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
					   "method not allowed");
		clen = MHD_lookup_connection_value(
			conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (clen && strtoull(clen, NULL, 10) > d->max_body)
			return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
					   "request body too large");
		return MHD_YES;
	}
	if (*data_size) {
		/*
		 * A chunked body over the cap (no Content-Length to refuse
		 * up front): MHD cannot answer in the middle of a body, so
		 * the rest is read and dropped and the answer is 413; a
		 * client that keeps sending far past the cap is cut off.
		 */
		if (!req->too_big &&
		    buf_add(&req->body, data, *data_size) < 0) {
			req->too_big = true;
			buf_release(&req->body);
		}
		if (req->too_big) {
			req->dropped += *data_size;
			if (req->dropped / DRAIN_FACTOR > d->max_body)
				return MHD_NO;
		}
		*data_size = 0;
		return MHD_YES;
	}
	if (req->too_big)
		return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
				   "request body too large");
	return serve(d, conn, req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct request *req = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (!req)
		return;
	buf_release(&req->body);
	free(req->app);
	free(req);
	*con_cls = NULL;
}

/*
 * "[HOST]:PORT" → a socket address; an empty HOST is NULL in *sa_len = 0
 * (every interface, dual stack). "[::1]:80" brackets an IPv6 address.
 */
static int parse_listen(const char *listen, struct sockaddr_storage *ss,
			socklen_t *sa_len, uint16_t *port, struct err *err)
{
	struct addrinfo hints, *res = NULL;
	const char *colon = strrchr(listen, ':');
	char host[256], *end;
	unsigned long p;
	size_t hlen;
	int rc;

	*sa_len = 0;
	if (!colon || !colon[1])
		return err_set(err, ERR_INVALID,
			       "listen address \"%s\": want [HOST]:PORT",
			       listen);
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (*end || errno || p > 65535 || colon[1] == '-' || colon[1] == '+')
		return err_set(err, ERR_INVALID,
			       "listen address \"%s\": bad port", listen);
	*port = (uint16_t)p;
	hlen = (size_t)(colon - listen);
	if (hlen >= 2 && listen[0] == '[' && listen[hlen - 1] == ']') {
		listen++;
		hlen -= 2;
	}
	if (!hlen)
		return 0;
	if (hlen >= sizeof(host))
		return err_set(err, ERR_INVALID,
			       "listen address \"%s\": host too long", listen);
	memcpy(host, listen, hlen);
	host[hlen] = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc || !res)
		return err_set(err, ERR_IO, "listen address %s: %s", host,
			       rc ? gai_strerror(rc) : "no address");
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sa_len = res->ai_addrlen;
	freeaddrinfo(res);
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(*port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(*port);
	return 0;
}

static struct MHD_Daemon *start_daemon(struct httpd *d, unsigned flags,
				       uint16_t port, const struct sockaddr *sa,
				       unsigned timeout_s)
{
	struct MHD_OptionItem addr[] = {
		{sa ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, 0, (void *)sa},
		{MHD_OPTION_END, 0, NULL},
	};

	return MHD_start_daemon(flags, port, NULL, NULL, on_request, d,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, d,
				MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				CONNECTION_MEMORY, MHD_OPTION_CONNECTION_LIMIT,
				MAX_CONNECTIONS, MHD_OPTION_ARRAY, addr,
				MHD_OPTION_END);
}

int httpd_start(struct httpd **out, const struct httpd_handlers *h,
		const struct httpd_options *opts, struct err *err)
{
	const unsigned base =
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION;
	const union MHD_DaemonInfo *info;
	struct sockaddr_storage ss;
	socklen_t sa_len = 0;
	uint16_t port = 0;
	struct httpd *d;
	unsigned timeout_s;
	int error = 0;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return err_set(err, ERR_NOMEM, "out of memory");
	d->h = *h;
	d->metrics = opts->metrics;
	d->max_body = opts->max_body ? opts->max_body : DEFAULT_MAX_BODY;
	timeout_s = opts->timeout_s ? opts->timeout_s : DEFAULT_TIMEOUT_S;
	if ((opts->api_token_file &&
	     !(d->api_token_file = strdup(opts->api_token_file))) ||
	    (opts->github_secret_file &&
	     !(d->github_secret_file = strdup(opts->github_secret_file))) ||
	    (opts->gitlab_token_file &&
	     !(d->gitlab_token_file = strdup(opts->gitlab_token_file)))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	memset(&ss, 0, sizeof(ss));
	if ((error = parse_listen(opts->listen ? opts->listen : ":8080", &ss,
				  &sa_len, &port, err)) < 0)
		goto out;
	if (!sa_len) {
		/* Every interface: IPv6 and IPv4 when the host has IPv6. */
		d->daemon = start_daemon(d, base | MHD_USE_DUAL_STACK, port,
					 NULL, timeout_s);
		if (!d->daemon)
			d->daemon =
				start_daemon(d, base, port, NULL, timeout_s);
	} else {
		d->daemon = start_daemon(
			d, base | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
			port, (const struct sockaddr *)&ss, timeout_s);
	}
	if (!d->daemon) {
		error = err_set(err, ERR_IO, "cannot listen on %s",
				opts->listen ? opts->listen : ":8080");
		goto out;
	}
	info = MHD_get_daemon_info(d->daemon, MHD_DAEMON_INFO_BIND_PORT);
	d->port = info && info->port ? info->port : port;
	*out = d;
	d = NULL;
out:
	httpd_stop(d);
	return error;
}

unsigned httpd_port(const struct httpd *d)
{
	return d->port;
}

void httpd_stop(struct httpd *d)
{
	if (!d)
		return;
	if (d->daemon)
		MHD_stop_daemon(d->daemon);
	free(d->api_token_file);
	free(d->github_secret_file);
	free(d->gitlab_token_file);
	free(d);
}
