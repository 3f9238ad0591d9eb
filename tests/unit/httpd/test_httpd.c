/*
 * httpd against real HTTP clients on loopback (libcurl, and raw sockets
 * for what curl will not send): every route and status, the bearer token
 * of the apps' documents, the browser view's embedded files and their
 * headers, the webhook signatures, body caps, a stalled client cut off,
 * and concurrent requests. The handlers are fakes that count their calls and
 * answer fixed documents; the assertions are on what came back and what was
 * called.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "controller/controller.h"
#include "util/sha256.h"

#define API_TOKEN "s3cret-api-token"
#define GH_SECRET "gh-hook-secret"
#define GL_TOKEN  "gl-hook-token"

/* What the fake handlers saw. */
static struct {
	atomic_int ready_calls, apps_calls, app_calls, sync_calls, push_calls;
	bool ready;
	pthread_mutex_t lock;
	char branch[64];
	char urls[4][128];
	size_t nurls;
	char synced[64];
} fake = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool fake_ready(struct buf *why, void *ctx)
{
	(void)ctx;
	fake.ready_calls++;
	if (!fake.ready)
		buf_adds(why, "watch caches not synced: app web");
	return fake.ready;
}

static json_t *fake_apps(void *ctx)
{
	(void)ctx;
	fake.apps_calls++;
	return json_pack("{s:s,s:[{s:s}]}", "kind", "AppList", "apps", "name",
			 "web");
}

static json_t *fake_app(const char *name, void *ctx)
{
	(void)ctx;
	fake.app_calls++;
	if (strcmp(name, "web"))
		return NULL;
	return json_pack("{s:s,s:s}", "name", "web", "state", "InSync");
}

static int fake_sync(const char *name, void *ctx)
{
	(void)ctx;
	if (strcmp(name, "web"))
		return ERR_NOTFOUND;
	fake.sync_calls++;
	pthread_mutex_lock(&fake.lock);
	snprintf(fake.synced, sizeof(fake.synced), "%s", name);
	pthread_mutex_unlock(&fake.lock);
	return 0;
}

static int fake_push(const char *const *urls, size_t nurls,
		     const char *branch, void *ctx)
{
	size_t i;

	(void)ctx;
	fake.push_calls++;
	pthread_mutex_lock(&fake.lock);
	snprintf(fake.branch, sizeof(fake.branch), "%s", branch);
	fake.nurls = nurls;
	for (i = 0; i < nurls && i < 4; i++)
		snprintf(fake.urls[i], sizeof(fake.urls[i]), "%s", urls[i]);
	pthread_mutex_unlock(&fake.lock);
	return 2;
}

static const struct httpd_handlers handlers = {
	.ctx = NULL,
	.ready = fake_ready,
	.apps = fake_apps,
	.app = fake_app,
	.sync = fake_sync,
	.push = fake_push,
};

static char dir[64];
static char api_file[128], gh_file[128], gl_file[128];
static struct metrics *metrics;
static struct httpd *server;
static unsigned port;

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

/* A server with every option set; `max_body` and `timeout_s` as given. */
static void start(size_t max_body, unsigned timeout_s)
{
	struct httpd_options o = {
		.listen = "127.0.0.1:0",
		.metrics = metrics,
		.api_token_file = api_file,
		.github_secret_file = gh_file,
		.gitlab_token_file = gl_file,
		.max_body = max_body,
		.timeout_s = timeout_s,
	};
	struct err err = ERR_INIT;

	cr_assert_eq(httpd_start(&server, &handlers, &o, &err), 0, "%s",
		     err_msg(&err));
	port = httpd_port(server);
	cr_assert_gt(port, 0);
	err_release(&err);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test-httpd-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(api_file, sizeof(api_file), "%s/api-token", dir);
	snprintf(gh_file, sizeof(gh_file), "%s/github-secret", dir);
	snprintf(gl_file, sizeof(gl_file), "%s/gitlab-token", dir);
	/* Files written by hand often end in a newline: it is dropped. */
	write_file(api_file, API_TOKEN "\n");
	write_file(gh_file, GH_SECRET "\n");
	write_file(gl_file, GL_TOKEN);
	fake.ready = true;
	metrics = metrics_new();
	cr_assert_not_null(metrics);
	cr_assert_eq(metrics_declare(metrics, "syncd_leader", METRICS_GAUGE,
				     "1 when leading.", NULL, 0),
		     0);
	cr_assert_eq(metrics_gauge_set(metrics, "syncd_leader", NULL, 1), 0);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	start(1024, 1);
}

static void teardown(void)
{
	httpd_stop(server);
	server = NULL;
	metrics_free(metrics);
	metrics = NULL;
	unlink(api_file);
	unlink(gh_file);
	unlink(gl_file);
	rmdir(dir);
	curl_global_cleanup();
}

struct reply {
	long code;
	char body[65536];
	size_t len;
	char ctype[128];
	char challenge[64]; /* WWW-Authenticate */
	char csp[512];	    /* Content-Security-Policy */
	char nosniff[32];   /* X-Content-Type-Options */
	char referrer[32];  /* Referrer-Policy */
	char cache[32];	    /* Cache-Control */
	char etag[64];
};

/* The value of header line `data` into `out` when it is `name`. */
static void header_into(const char *data, size_t len, const char *name,
			char *out, size_t size)
{
	size_t i, n = strlen(name);

	if (len <= n || strncasecmp(data, name, n) || data[n] != ':')
		return;
	for (i = n + 1; i < len && data[i] == ' '; i++)
		;
	snprintf(out, size, "%.*s", (int)strcspn(data + i, "\r\n"), data + i);
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
	struct reply *r = ctx;
	size_t len = size * n;

	header_into(data, len, "WWW-Authenticate", r->challenge,
		    sizeof(r->challenge));
	header_into(data, len, "Content-Security-Policy", r->csp,
		    sizeof(r->csp));
	header_into(data, len, "X-Content-Type-Options", r->nosniff,
		    sizeof(r->nosniff));
	header_into(data, len, "Referrer-Policy", r->referrer,
		    sizeof(r->referrer));
	header_into(data, len, "Cache-Control", r->cache, sizeof(r->cache));
	header_into(data, len, "ETag", r->etag, sizeof(r->etag));
	return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct reply *r = ctx;
	size_t len = size * n;

	if (r->len + len >= sizeof(r->body))
		return 0;
	memcpy(r->body + r->len, data, len);
	r->len += len;
	r->body[r->len] = '\0';
	return len;
}

/*
 * One request; `headers` NULL-terminated (may be NULL), `body` NULL for
 * none. Fills `r` (caller storage).
 */
static void http(const char *method, const char *path,
		 const char *const *headers, const char *body, size_t len,
		 struct reply *r)
{
	struct curl_slist *list = NULL;
	char url[256];
	char *ct = NULL;
	CURL *h = curl_easy_init();
	CURLcode rc;

	memset(r, 0, sizeof(*r));
	cr_assert_not_null(h);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)len);
	}
	for (; headers && *headers; headers++)
		list = curl_slist_append(list, *headers);
	/* No 100-continue round trip: the body goes with the headers. */
	list = curl_slist_append(list, "Expect:");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
	rc = curl_easy_perform(h);
	cr_assert_eq(rc, CURLE_OK, "%s %s: %s", method, path,
		     curl_easy_strerror(rc));
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->code);
	if (curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
		snprintf(r->ctype, sizeof(r->ctype), "%s", ct);
	curl_slist_free_all(list);
	curl_easy_cleanup(h);
}

static void get(const char *path, struct reply *r)
{
	http("GET", path, NULL, NULL, 0, r);
}

static const char *const with_token[] = {"Authorization: Bearer " API_TOKEN,
					 NULL};

/* GET with the API token of the test server. */
static void get_authorized(const char *path, struct reply *r)
{
	http("GET", path, with_token, NULL, 0, r);
}

/* The "error" string of a JSON error body. */
static void assert_error(const struct reply *r, long code, const char *msg)
{
	json_t *doc = json_loads(r->body, 0, NULL);
	const char *e = json_string_value(json_object_get(doc, "error"));

	cr_assert_eq(r->code, code, "got %ld: %s", r->code, r->body);
	cr_assert_str_eq(r->ctype, "application/json");
	cr_assert_not_null(e, "not a JSON error: %s", r->body);
	if (msg)
		cr_assert_str_eq(e, msg);
	json_decref(doc);
}

static long json_int(const struct reply *r, const char *key)
{
	json_t *doc = json_loads(r->body, 0, NULL);
	long v;

	cr_assert(json_is_integer(json_object_get(doc, key)), "%s", r->body);
	v = (long)json_integer_value(json_object_get(doc, key));
	json_decref(doc);
	return v;
}

TestSuite(httpd, .init = setup, .fini = teardown, .timeout = 60);

Test(httpd, healthz)
{
	struct reply r;

	get("/healthz", &r);
	cr_assert_eq(r.code, 200);
	cr_assert_str_eq(r.body, "ok\n");
	http("HEAD", "/healthz", NULL, NULL, 0, &r);
	cr_assert_eq(r.code, 200);
	cr_assert_eq(r.len, 0);
}

Test(httpd, readyz_follows_the_handler)
{
	struct reply r;

	get("/readyz", &r);
	cr_assert_eq(r.code, 200);
	cr_assert_str_eq(r.body, "ok\n");
	fake.ready = false;
	get("/readyz", &r);
	assert_error(&r, 503, "watch caches not synced: app web");
	cr_assert_eq(fake.ready_calls, 2);
}

Test(httpd, metrics)
{
	struct reply r;

	get("/metrics", &r);
	cr_assert_eq(r.code, 200);
	cr_assert_str_eq(r.ctype, "text/plain; version=0.0.4; charset=utf-8");
	cr_assert_str_eq(r.body, "# HELP syncd_leader 1 when leading.\n"
				 "# TYPE syncd_leader gauge\n"
				 "syncd_leader 1\n");
}

Test(httpd, no_registry_no_metrics)
{
	struct httpd_options o = {.listen = "127.0.0.1:0"};
	struct reply r;

	httpd_stop(server);
	cr_assert_eq(httpd_start(&server, &handlers, &o, NULL), 0);
	port = httpd_port(server);
	get("/metrics", &r);
	assert_error(&r, 404, NULL);
}

Test(httpd, apps_and_app)
{
	struct reply r;
	json_t *doc;

	get_authorized("/api/v1/apps", &r);
	cr_assert_eq(r.code, 200);
	cr_assert_str_eq(r.ctype, "application/json");
	doc = json_loads(r.body, 0, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(doc, "kind")),
			 "AppList");
	json_decref(doc);

	get_authorized("/api/v1/apps/web", &r);
	cr_assert_eq(r.code, 200);
	cr_assert_str_eq(r.body, "{\"name\":\"web\",\"state\":\"InSync\"}");
	get_authorized("/api/v1/apps/nope", &r);
	assert_error(&r, 404, "unknown app \"nope\"");
	cr_assert_eq(fake.apps_calls, 1);
	cr_assert_eq(fake.app_calls, 2);
}

Test(httpd, unknown_paths_and_wrong_methods)
{
	struct reply r;

	get("/index.html", &r);
	assert_error(&r, 404, "not found");
	get("/api/v1/apps/", &r);
	assert_error(&r, 404, NULL);
	get("/api/v1/apps/web/other", &r);
	assert_error(&r, 404, NULL);
	http("POST", "/healthz", NULL, "", 0, &r);
	assert_error(&r, 405, "method not allowed");
	http("DELETE", "/api/v1/apps/web", NULL, NULL, 0, &r);
	assert_error(&r, 405, NULL);
	get("/api/v1/apps/web/sync", &r);
	assert_error(&r, 405, NULL);
	get("/hooks/git", &r);
	assert_error(&r, 405, NULL);
	cr_assert_eq(fake.app_calls + fake.sync_calls + fake.push_calls, 0);
}

Test(httpd, sync_needs_the_token)
{
	const char *const none[] = {NULL};
	const char *const wrong[] = {"Authorization: Bearer nope", NULL};
	const char *const basic[] = {"Authorization: Basic " API_TOKEN, NULL};
	const char *const right[] = {"Authorization: Bearer " API_TOKEN, NULL};
	struct reply r;

	http("POST", "/api/v1/apps/web/sync", none, "", 0, &r);
	assert_error(&r, 401, NULL);
	cr_assert_str_eq(r.challenge, "Bearer");
	http("POST", "/api/v1/apps/web/sync", wrong, "", 0, &r);
	assert_error(&r, 401, NULL);
	http("POST", "/api/v1/apps/web/sync", basic, "", 0, &r);
	assert_error(&r, 401, NULL);
	/* Wrong token and unknown app: 401, names are not revealed. */
	http("POST", "/api/v1/apps/nope/sync", wrong, "", 0, &r);
	assert_error(&r, 401, NULL);
	cr_assert_eq(fake.sync_calls, 0);
	/* The secret is never echoed. */
	cr_assert_null(strstr(r.body, API_TOKEN));

	http("POST", "/api/v1/apps/web/sync", right, "", 0, &r);
	cr_assert_eq(r.code, 202, "%s", r.body);
	cr_assert_eq(fake.sync_calls, 1);
	cr_assert_str_eq(fake.synced, "web");
	http("POST", "/api/v1/apps/nope/sync", right, NULL, 0, &r);
	assert_error(&r, 404, "unknown app \"nope\"");
	cr_assert_eq(fake.sync_calls, 1);
}

Test(httpd, token_rotation_is_read_per_request)
{
	const char *const old[] = {"Authorization: Bearer " API_TOKEN, NULL};
	const char *const rotated[] = {"Authorization: Bearer rotated", NULL};
	struct reply r;

	write_file(api_file, "rotated\n");
	http("POST", "/api/v1/apps/web/sync", old, "", 0, &r);
	assert_error(&r, 401, NULL);
	http("POST", "/api/v1/apps/web/sync", rotated, "", 0, &r);
	cr_assert_eq(r.code, 202);
	/* An empty token file opens nothing. */
	write_file(api_file, "\n");
	{
		const char *const empty[] = {"Authorization: Bearer ", NULL};

		http("POST", "/api/v1/apps/web/sync", empty, "", 0, &r);
		assert_error(&r, 401, NULL);
	}
	cr_assert_eq(fake.sync_calls, 1);
}

Test(httpd, sync_without_token_file_is_403)
{
	const char *const right[] = {"Authorization: Bearer " API_TOKEN, NULL};
	struct httpd_options o = {.listen = "127.0.0.1:0"};
	struct reply r;

	httpd_stop(server);
	cr_assert_eq(httpd_start(&server, &handlers, &o, NULL), 0);
	port = httpd_port(server);
	http("POST", "/api/v1/apps/web/sync", right, "", 0, &r);
	assert_error(&r, 403, NULL);
	cr_assert_eq(fake.sync_calls, 0);
}

/* The test server again, without an API token file. */
static void restart_without_token(void)
{
	struct httpd_options o = {.listen = "127.0.0.1:0"};

	httpd_stop(server);
	cr_assert_eq(httpd_start(&server, &handlers, &o, NULL), 0);
	port = httpd_port(server);
}

Test(httpd, apps_need_the_token_when_one_is_configured)
{
	const char *const wrong[] = {"Authorization: Bearer nope", NULL};
	const char *const basic[] = {"Authorization: Basic " API_TOKEN, NULL};
	struct reply r;

	get("/api/v1/apps", &r);
	assert_error(&r, 401, "missing or wrong bearer token");
	cr_assert_str_eq(r.challenge, "Bearer");
	http("GET", "/api/v1/apps", wrong, NULL, 0, &r);
	assert_error(&r, 401, NULL);
	http("GET", "/api/v1/apps", basic, NULL, 0, &r);
	assert_error(&r, 401, NULL);
	http("HEAD", "/api/v1/apps", NULL, NULL, 0, &r);
	cr_assert_eq(r.code, 401);
	get("/api/v1/apps/web", &r);
	assert_error(&r, 401, NULL);
	/* Checked before the name: an unknown app is 401 too. */
	get("/api/v1/apps/nope", &r);
	assert_error(&r, 401, NULL);
	cr_assert_null(strstr(r.body, API_TOKEN));
	cr_assert_eq(fake.apps_calls + fake.app_calls, 0);

	get_authorized("/api/v1/apps", &r);
	cr_assert_eq(r.code, 200, "%s", r.body);
	get_authorized("/api/v1/apps/web", &r);
	cr_assert_eq(r.code, 200, "%s", r.body);
	cr_assert_eq(fake.apps_calls, 1);
	cr_assert_eq(fake.app_calls, 1);
	/* Rotated: the old token no longer opens them. */
	write_file(api_file, "rotated\n");
	get_authorized("/api/v1/apps", &r);
	assert_error(&r, 401, NULL);
}

Test(httpd, apps_are_open_without_a_token_file)
{
	struct reply r;

	restart_without_token();
	get("/api/v1/apps", &r);
	cr_assert_eq(r.code, 200, "%s", r.body);
	get("/api/v1/apps/web", &r);
	cr_assert_eq(r.code, 200, "%s", r.body);
	get("/api/v1/apps/nope", &r);
	assert_error(&r, 404, "unknown app \"nope\"");
	cr_assert_eq(fake.apps_calls, 1);
	cr_assert_eq(fake.app_calls, 2);
}

#define UI_CSP                                                      \
	"default-src 'none'; script-src 'self'; style-src 'self'; " \
	"img-src 'self'; connect-src 'self'; base-uri 'none'; "     \
	"form-action 'none'; frame-ancestors 'none'"

/* The headers every file of the browser view comes with. */
static void assert_ui_headers(const struct reply *r)
{
	cr_assert_str_eq(r->csp, UI_CSP);
	cr_assert_str_eq(r->nosniff, "nosniff");
	cr_assert_str_eq(r->referrer, "no-referrer");
	cr_assert_str_eq(r->cache, "no-cache");
	cr_assert_eq(r->etag[0], '"', "ETag: %s", r->etag);
}

/* The test server has a token file: the view's files need no token. */
Test(httpd, root_serves_the_page_under_a_strict_csp)
{
	struct reply r;

	get("/", &r);
	cr_assert_eq(r.code, 200, "%s", r.body);
	cr_assert_str_eq(r.ctype, "text/html; charset=utf-8");
	assert_ui_headers(&r);
	cr_assert(!strncmp(r.body, "<!DOCTYPE html>", 15), "%.80s", r.body);
	cr_assert_not_null(strstr(r.body, "<script src=\"ui/app.js\""));
	cr_assert_not_null(strstr(r.body, "href=\"ui/style.css\""));
	/* Nothing inline, which the policy would refuse anyway. */
	cr_assert_null(strstr(r.body, "<script>"));
	cr_assert_null(strstr(r.body, "<style"));
	cr_assert_null(strstr(r.body, " style="));
	cr_assert_null(strstr(r.body, " onload="));
	cr_assert_null(strstr(r.body, "javascript:"));
	/* A query string does not change the path. */
	get("/?x=1", &r);
	cr_assert_eq(r.code, 200);
	http("HEAD", "/", NULL, NULL, 0, &r);
	cr_assert_eq(r.code, 200);
	cr_assert_eq(r.len, 0);
	cr_assert_str_eq(r.csp, UI_CSP);
	cr_assert_eq(fake.apps_calls + fake.app_calls, 0);
}

Test(httpd, ui_script_is_javascript_and_builds_no_markup)
{
	struct reply r;

	get("/ui/app.js", &r);
	cr_assert_eq(r.code, 200, "%s", r.body);
	cr_assert_str_eq(r.ctype, "text/javascript; charset=utf-8");
	assert_ui_headers(&r);
	/* Values become text nodes; no string is parsed as HTML. */
	cr_assert_not_null(strstr(r.body, "createTextNode"));
	cr_assert_null(strstr(r.body, "innerHTML"));
	cr_assert_null(strstr(r.body, "outerHTML"));
	cr_assert_null(strstr(r.body, "insertAdjacentHTML"));
	cr_assert_null(strstr(r.body, "document.write"));
	cr_assert_null(strstr(r.body, "eval("));

	get("/ui/style.css", &r);
	cr_assert_eq(r.code, 200, "%s", r.body);
	cr_assert_str_eq(r.ctype, "text/css; charset=utf-8");
	assert_ui_headers(&r);
}

Test(httpd, unknown_ui_file_is_404)
{
	struct reply r;

	get("/ui/x", &r);
	assert_error(&r, 404, "not found");
	get("/ui/", &r);
	assert_error(&r, 404, NULL);
	/* The page is served at "/" only. */
	get("/ui/index.html", &r);
	assert_error(&r, 404, NULL);
	get("/ui/app.js/", &r);
	assert_error(&r, 404, NULL);
	http("POST", "/", NULL, "", 0, &r);
	assert_error(&r, 405, NULL);
}

Test(httpd, unchanged_ui_file_is_304)
{
	char match[128];
	const char *const headers[] = {match, NULL};
	const char *const other[] = {"If-None-Match: \"0\"", NULL};
	struct reply r;

	get("/ui/app.js", &r);
	cr_assert_eq(r.code, 200);
	snprintf(match, sizeof(match), "If-None-Match: %s", r.etag);
	http("GET", "/ui/app.js", headers, NULL, 0, &r);
	cr_assert_eq(r.code, 304);
	cr_assert_eq(r.len, 0);
	cr_assert_str_eq(r.csp, UI_CSP);
	http("GET", "/ui/app.js", other, NULL, 0, &r);
	cr_assert_eq(r.code, 200);
	cr_assert_gt(r.len, 0);
}

static const char gh_push[] =
	"{\"ref\":\"refs/heads/main\",\"repository\":{"
	"\"clone_url\":\"https://github.com/acme/deploy.git\","
	"\"ssh_url\":\"git@github.com:acme/deploy.git\","
	"\"html_url\":\"https://github.com/acme/deploy\","
	"\"git_url\":\"git://github.com/acme/deploy.git\"}}";

/* "X-Hub-Signature-256: sha256=..." of `body` under `secret`. */
static void gh_sign(const char *secret, const char *body, char *hdr,
		    size_t size)
{
	uint8_t mac[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1];

	hmac_sha256(secret, strlen(secret), body, strlen(body), mac);
	hex_encode(mac, sizeof(mac), hex);
	snprintf(hdr, size, "X-Hub-Signature-256: sha256=%s", hex);
}

static void github(const char *event, const char *secret, const char *body,
		   struct reply *r)
{
	char sig[128], ev[64];
	const char *headers[] = {ev, "Content-Type: application/json", sig,
				 NULL};

	snprintf(ev, sizeof(ev), "X-GitHub-Event: %s", event);
	if (secret)
		gh_sign(secret, body, sig, sizeof(sig));
	else
		headers[2] = NULL;
	http("POST", "/hooks/git", headers, body, strlen(body), r);
}

Test(httpd, github_push_good_signature)
{
	struct reply r;

	github("push", GH_SECRET, gh_push, &r);
	cr_assert_eq(r.code, 202, "%s", r.body);
	cr_assert_eq(json_int(&r, "triggered"), 2);
	cr_assert_eq(fake.push_calls, 1);
	cr_assert_str_eq(fake.branch, "main");
	cr_assert_eq(fake.nurls, 4);
	cr_assert_str_eq(fake.urls[0], "https://github.com/acme/deploy.git");
	cr_assert_str_eq(fake.urls[1], "git@github.com:acme/deploy.git");
	cr_assert_str_eq(fake.urls[2], "https://github.com/acme/deploy");
	cr_assert_str_eq(fake.urls[3], "git://github.com/acme/deploy.git");
}

Test(httpd, github_bad_signatures_call_nothing)
{
	char tampered[sizeof(gh_push)];
	char sig[128];
	const char *headers[] = {"X-GitHub-Event: push", sig, NULL};
	struct reply r;

	github("push", "wrong-secret", gh_push, &r);
	assert_error(&r, 401, NULL);
	cr_assert_str_eq(r.challenge, "");
	github("push", NULL, gh_push, &r);
	assert_error(&r, 401, NULL);
	/* Signed, then changed in transit. */
	gh_sign(GH_SECRET, gh_push, sig, sizeof(sig));
	memcpy(tampered, gh_push, sizeof(gh_push));
	memcpy(strstr(tampered, "main"), "prod", 4);
	http("POST", "/hooks/git", headers, tampered, strlen(tampered), &r);
	assert_error(&r, 401, NULL);
	/* The old SHA-1 header alone is not enough. */
	{
		const char *const sha1[] = {"X-GitHub-Event: push",
					    "X-Hub-Signature: sha1=00", NULL};

		http("POST", "/hooks/git", sha1, gh_push, strlen(gh_push), &r);
		assert_error(&r, 401, NULL);
	}
	/* Neither GitHub nor GitLab. */
	http("POST", "/hooks/git", NULL, gh_push, strlen(gh_push), &r);
	assert_error(&r, 401, NULL);
	cr_assert_eq(fake.push_calls, 0);
	cr_assert_null(strstr(r.body, GH_SECRET));
}

Test(httpd, github_ping_tag_and_other_events)
{
	const char *tag = "{\"ref\":\"refs/tags/v1\",\"repository\":{"
			  "\"clone_url\":\"https://github.com/a/b.git\"}}";
	struct reply r;

	github("ping", GH_SECRET, "{\"zen\":\"Keep it simple.\"}", &r);
	cr_assert_eq(r.code, 200, "%s", r.body);
	github("push", GH_SECRET, tag, &r);
	cr_assert_eq(r.code, 202);
	cr_assert_eq(json_int(&r, "triggered"), 0);
	github("issues", GH_SECRET, "{}", &r);
	cr_assert_eq(r.code, 202);
	cr_assert_eq(json_int(&r, "triggered"), 0);
	/* A signed push that is not JSON. */
	github("push", GH_SECRET, "payload=x", &r);
	assert_error(&r, 400, NULL);
	cr_assert_eq(fake.push_calls, 0);
}

Test(httpd, gitlab_push_token)
{
	const char *body = "{\"object_kind\":\"push\",\"ref\":\"refs/heads/"
			   "release/1.2\",\"project\":{"
			   "\"git_http_url\":\"https://gitlab.com/a/d.git\","
			   "\"git_ssh_url\":\"git@gitlab.com:a/d.git\","
			   "\"web_url\":\"https://gitlab.com/a/d\"}}";
	const char *const good[] = {"X-Gitlab-Event: Push Hook",
				    "X-Gitlab-Token: " GL_TOKEN, NULL};
	const char *const bad[] = {"X-Gitlab-Event: Push Hook",
				   "X-Gitlab-Token: " GL_TOKEN "x", NULL};
	const char *const none[] = {"X-Gitlab-Event: Push Hook", NULL};
	const char *const tag[] = {"X-Gitlab-Event: Tag Push Hook",
				   "X-Gitlab-Token: " GL_TOKEN, NULL};
	struct reply r;

	http("POST", "/hooks/git", bad, body, strlen(body), &r);
	assert_error(&r, 401, NULL);
	http("POST", "/hooks/git", none, body, strlen(body), &r);
	assert_error(&r, 401, NULL);
	http("POST", "/hooks/git", tag, body, strlen(body), &r);
	cr_assert_eq(r.code, 202);
	cr_assert_eq(json_int(&r, "triggered"), 0);
	cr_assert_eq(fake.push_calls, 0);

	http("POST", "/hooks/git", good, body, strlen(body), &r);
	cr_assert_eq(r.code, 202, "%s", r.body);
	cr_assert_eq(json_int(&r, "triggered"), 2);
	cr_assert_eq(fake.push_calls, 1);
	cr_assert_str_eq(fake.branch, "release/1.2");
	cr_assert_eq(fake.nurls, 3);
	cr_assert_str_eq(fake.urls[0], "https://gitlab.com/a/d.git");
	cr_assert_str_eq(fake.urls[2], "https://gitlab.com/a/d");
}

Test(httpd, oversized_body_is_413)
{
	char big[2048];
	char sig[128];
	const char *headers[] = {"X-GitHub-Event: push", sig, NULL};
	struct reply r;

	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, gh_push, strlen(gh_push));
	gh_sign(GH_SECRET, big, sig, sizeof(sig));
	http("POST", "/hooks/git", headers, big, strlen(big), &r);
	assert_error(&r, 413, NULL);
	cr_assert_eq(fake.push_calls, 0);
	/* At the cap exactly it is served. */
	big[1024] = '\0';
	gh_sign(GH_SECRET, big, sig, sizeof(sig));
	http("POST", "/hooks/git", headers, big, strlen(big), &r);
	cr_assert_eq(r.code, 202, "%s", r.body);
}

/* A raw connection to the server; the socket. */
static int dial(void)
{
	struct sockaddr_in sa;
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	/* A server that never closes fails the test instead of hanging. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Read until the server closes: true; false on the 5 s timeout. */
static bool read_to_close(int fd, char *out, size_t size)
{
	size_t len = 0;
	ssize_t n;

	for (;;) {
		n = recv(fd, out + len, size - 1 - len, 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			break;
		if (n < 0)
			return false;
		len += (size_t)n;
		cr_assert_lt(len, size - 1);
	}
	out[len] = '\0';
	return true;
}

Test(httpd, chunked_oversized_body_is_413)
{
	char req[4096], resp[4096];
	int fd = dial();
	size_t len;

	len = (size_t)snprintf(req, sizeof(req),
			       "POST /hooks/git HTTP/1.1\r\nHost: x\r\n"
			       "X-GitHub-Event: push\r\n"
			       "Transfer-Encoding: chunked\r\n"
			       "Connection: close\r\n\r\n%x\r\n",
			       2000);
	memset(req + len, 'a', 2000);
	len += 2000;
	len += (size_t)snprintf(req + len, sizeof(req) - len, "\r\n0\r\n\r\n");
	cr_assert_eq(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
	cr_assert(read_to_close(fd, resp, sizeof(resp)));
	close(fd);
	cr_assert(!strncmp(resp, "HTTP/1.1 413 ", 13), "%s", resp);
	cr_assert_eq(fake.push_calls, 0);
}

Test(httpd, chunked_body_far_over_the_cap_is_cut_off)
{
	char head[256], chunk[1100], resp[4096] = "";
	int fd = dial(), i;
	size_t len;

	len = (size_t)snprintf(head, sizeof(head),
			       "POST /hooks/git HTTP/1.1\r\nHost: x\r\n"
			       "X-GitHub-Event: push\r\n"
			       "Transfer-Encoding: chunked\r\n\r\n");
	cr_assert_eq(send(fd, head, len, MSG_NOSIGNAL), (ssize_t)len);
	len = (size_t)snprintf(chunk, sizeof(chunk), "400\r\n");
	memset(chunk + len, 'a', 1024);
	len += 1024;
	memcpy(chunk + len, "\r\n", 2);
	len += 2;
	/*
	 * A body that never ends, sent steadily for 2 s (past the 1 s idle
	 * timeout, so only the cap can stop it): the server hangs up, and
	 * a send fails once it has.
	 */
	for (i = 0; i < 200; i++) {
		if (send(fd, chunk, len, MSG_NOSIGNAL) < 0)
			break;
		usleep(10000);
	}
	cr_assert_lt(i, 200, "the server kept reading an endless body");
	read_to_close(fd, resp, sizeof(resp));
	close(fd);
	cr_assert_null(strstr(resp, " 202 "));
	cr_assert_eq(fake.push_calls, 0);
}

Test(httpd, stalled_client_is_cut_off)
{
	const char half[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-";
	char resp[4096];
	int fd = dial();

	/* timeout_s is 1: the server closes; SO_RCVTIMEO (5 s) would fail. */
	cr_assert_eq(send(fd, half, strlen(half), MSG_NOSIGNAL),
		     (ssize_t)strlen(half));
	cr_assert(read_to_close(fd, resp, sizeof(resp)),
		  "the server kept a stalled connection open");
	close(fd);
	/* Nothing was served to it, and the server still serves others. */
	cr_assert_null(strstr(resp, "200 OK"));
	{
		struct reply r;

		get("/healthz", &r);
		cr_assert_eq(r.code, 200);
	}
}

#define THREADS	   4
#define PER_THREAD 26

static void *hammer(void *arg)
{
	int *ok = arg, i;
	struct reply *r = malloc(sizeof(*r));

	for (i = 0; i < PER_THREAD; i++) {
		http("GET", i % 2 ? "/api/v1/apps" : "/metrics", with_token,
		     NULL, 0, r);
		if (r->code == 200)
			(*ok)++;
	}
	free(r);
	return NULL;
}

Test(httpd, concurrent_requests)
{
	pthread_t t[THREADS];
	int ok[THREADS] = {0}, i, total = 0;

	for (i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, hammer, &ok[i]), 0);
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		total += ok[i];
	}
	cr_assert_eq(total, THREADS * PER_THREAD);
	cr_assert_eq(fake.apps_calls, THREADS * PER_THREAD / 2);
}

Test(httpd, listen_errors)
{
	struct httpd_options o = {0};
	struct httpd *d = NULL;
	struct err err = ERR_INIT;
	char taken[64];

	o.listen = "127.0.0.1";
	cr_assert_eq(httpd_start(&d, &handlers, &o, &err), ERR_INVALID);
	o.listen = "127.0.0.1:70000";
	cr_assert_eq(httpd_start(&d, &handlers, &o, &err), ERR_INVALID);
	/* The port the test server holds. */
	snprintf(taken, sizeof(taken), "127.0.0.1:%u", port);
	o.listen = taken;
	err_reset(&err);
	cr_assert_eq(httpd_start(&d, &handlers, &o, &err), ERR_IO);
	cr_assert_not_null(strstr(err_msg(&err), taken), "%s", err_msg(&err));
	cr_assert_null(d);
	err_release(&err);
}

Test(httpd, ipv6_loopback_and_all_interfaces)
{
	struct httpd_options o = {.listen = "[::1]:0"};
	struct httpd *d = NULL;
	struct reply r;
	unsigned p;

	if (httpd_start(&d, &handlers, &o, NULL) == 0) {
		cr_assert_gt(httpd_port(d), 0);
		httpd_stop(d);
	}
	/* ":0": every interface, reachable on IPv4 loopback. */
	o.listen = ":0";
	cr_assert_eq(httpd_start(&d, &handlers, &o, NULL), 0);
	p = port;
	port = httpd_port(d);
	get("/healthz", &r);
	cr_assert_eq(r.code, 200);
	port = p;
	httpd_stop(d);
}
