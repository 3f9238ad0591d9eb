/*
 * The HTTP layer (kube/http.c) against a real kube-emu over TLS
 * with a bearer token: verbs, TLS settings, Status errors, retries under
 * injected faults (request counts from /emu/stats), the response cap,
 * the rate limiter, streams and connection reuse.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "kube/kube.h"
#include "tests/helpers/emu.h"

#define CM_PATH "/api/v1/namespaces/default/configmaps"

static struct test_emu emu;
static struct kube_config cfg;

static void setup(void)
{
	cr_assert_eq(test_emu_start(&emu, NULL), 0, "kube-emu did not start");
	cr_assert_eq(test_emu_config(&emu, &cfg), 0);
}

static void teardown(void)
{
	kube_config_release(&cfg);
	test_emu_stop(&emu);
}

TestSuite(kube_http, .init = setup, .fini = teardown, .timeout = 60);

static struct kube_client *client(const struct kube_client_options *opts)
{
	struct kube_client *c = NULL;
	struct err err = ERR_INIT;

	cr_assert_eq(kube_client_new(&c, &cfg, opts, &err), 0, "%s",
		     err_msg(&err));
	err_release(&err);
	return c;
}

/* Create ConfigMap `name` with one key holding `value`. */
static void create_cm(struct kube_client *c, const char *name,
		      const char *value)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;
	char *body;
	json_t *obj;

	obj = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1",
			"kind", "ConfigMap", "metadata", "name", name, "data",
			"k", value);
	body = json_dumps(obj, JSON_COMPACT);
	cr_assert_eq(kube_request(c, "POST", CM_PATH, "application/json", body,
				  strlen(body), &resp, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(resp.code, 201);
	free(body);
	json_decref(obj);
	kube_response_release(&resp);
	err_release(&err);
}

Test(kube_http, verbs_round_trip)
{
	struct kube_client *c = client(NULL);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;
	const char *patch = "{\"data\":{\"k\":\"patched\"}}";
	json_t *data;

	create_cm(c, "web", "v1");

	cr_assert_eq(kube_request(c, "GET", CM_PATH "/web", NULL, NULL, 0,
				  &resp, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(resp.code, 200);
	cr_assert_not_null(resp.json);
	cr_assert_null(resp.status);
	data = json_object_get(resp.json, "data");
	cr_assert_str_eq(json_string_value(json_object_get(data, "k")), "v1");

	cr_assert_eq(kube_request(c, "PATCH", CM_PATH "/web",
				  "application/merge-patch+json", patch,
				  strlen(patch), &resp, &err),
		     0, "%s", err_msg(&err));
	data = json_object_get(resp.json, "data");
	cr_assert_str_eq(json_string_value(json_object_get(data, "k")),
			 "patched");

	cr_assert_eq(kube_request(c, "DELETE", CM_PATH "/web", NULL, NULL, 0,
				  &resp, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(resp.code, 200);

	/* Gone: a 404 Status, parsed. */
	cr_assert_eq(kube_request(c, "GET", CM_PATH "/web", NULL, NULL, 0,
				  &resp, &err),
		     ERR_NOTFOUND);
	cr_assert_eq(resp.code, 404);
	cr_assert_not_null(resp.status);
	cr_assert_str_eq(
		json_string_value(json_object_get(resp.status, "reason")),
		"NotFound");
	cr_assert_str_eq(err_first(&err),
			 "configmaps \"web\" not found (404 NotFound)");
	cr_assert_eq(resp.retries, 0);

	cr_assert_eq(test_emu_count(&emu, "create", "configmaps", 201), 1);
	cr_assert_eq(test_emu_count(&emu, "get", "configmaps", 200), 1);
	cr_assert_eq(test_emu_count(&emu, "patch", "configmaps", 200), 1);
	cr_assert_eq(test_emu_count(&emu, "delete", "configmaps", 200), 1);
	cr_assert_eq(test_emu_count(&emu, "get", "configmaps", 404), 1);
	cr_assert_eq(kube_client_requests(c), 5);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, wrong_ca_is_a_clear_tls_error)
{
	struct kube_client *c;
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;

	/* Without the emu's CA only the system roots are trusted. */
	buf_release(&cfg.ca_pem);
	c = client(NULL);
	cr_assert_eq(
		kube_request(c, "GET", CM_PATH, NULL, NULL, 0, &resp, &err),
		ERR_INVALID);
	cr_assert_eq(resp.code, 0);
	cr_assert_not_null(strstr(err_first(&err),
				  "TLS: the server's "
				  "certificate is not trusted"),
			   "%s", err_first(&err));
	/* Not retried: nothing reached the API. */
	cr_assert_eq(resp.retries, 0);
	cr_assert_eq(test_emu_count(&emu, NULL, NULL, 0), 0);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, insecure_skip_tls_verify)
{
	struct kube_client *c;
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;

	buf_release(&cfg.ca_pem);
	cfg.insecure = true;
	c = client(NULL);
	cr_assert_eq(
		kube_request(c, "GET", CM_PATH, NULL, NULL, 0, &resp, &err), 0,
		"%s", err_msg(&err));
	cr_assert_str_eq(json_string_value(json_object_get(resp.json, "kind")),
			 "ConfigMapList");

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, tls_server_name)
{
	struct kube_client *c;
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;

	/* The emu's certificate names DNS:localhost as well as the IP. */
	cfg.tls_server_name = strdup("localhost");
	c = client(NULL);
	cr_assert_eq(
		kube_request(c, "GET", CM_PATH, NULL, NULL, 0, &resp, &err), 0,
		"%s", err_msg(&err));
	kube_client_free(c);

	/* A name the certificate does not carry fails verification. */
	free(cfg.tls_server_name);
	cfg.tls_server_name = strdup("api.example.invalid");
	c = client(NULL);
	cr_assert_eq(
		kube_request(c, "GET", CM_PATH, NULL, NULL, 0, &resp, &err),
		ERR_INVALID);
	cr_assert_not_null(strstr(err_first(&err), "TLS"), "%s",
			   err_first(&err));
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 1);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, wrong_token_is_401)
{
	struct kube_client *c;
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;

	free(cfg.token);
	cfg.token = strdup("not-the-token");
	c = client(NULL);
	cr_assert_eq(
		kube_request(c, "GET", CM_PATH, NULL, NULL, 0, &resp, &err),
		ERR_INVALID);
	cr_assert_eq(resp.code, 401);
	cr_assert_str_eq(err_first(&err), "Unauthorized (401 Unauthorized)");
	cr_assert_null(strstr(err_first(&err), "not-the-token"));
	/* One retry with fresh credentials, then the failure. */
	cr_assert_eq(resp.retries, 1);
	cr_assert_eq(test_emu_count(&emu, NULL, NULL, 401), 2);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, retries_503_with_retry_after)
{
	struct kube_client *c = client(NULL);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;

	create_cm(c, "a", "1");
	cr_assert_eq(test_emu_faults(&emu, "verb=get,code=503,count=2,"
					   "retryAfter=1"),
		     0);
	cr_assert_eq(kube_request(c, "GET", CM_PATH "/a", NULL, NULL, 0, &resp,
				  &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(resp.code, 200);
	cr_assert_eq(resp.retries, 2);
	cr_assert_eq(test_emu_count(&emu, "get", "configmaps", 0), 3);
	cr_assert_eq(test_emu_count(&emu, "get", "configmaps", 503), 2);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, retries_429)
{
	struct kube_client *c = client(NULL);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;

	cr_assert_eq(test_emu_faults(&emu, "verb=list,code=429,count=1,"
					   "retryAfter=1"),
		     0);
	cr_assert_eq(
		kube_request(c, "GET", CM_PATH, NULL, NULL, 0, &resp, &err), 0,
		"%s", err_msg(&err));
	cr_assert_eq(resp.retries, 1);
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 429), 1);
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 1);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, retries_exhausted)
{
	struct kube_client_options opts = {.max_retries = 2};
	struct kube_client *c = client(&opts);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;

	cr_assert_eq(test_emu_faults(&emu, "verb=list,code=500"), 0);
	cr_assert_eq(
		kube_request(c, "GET", CM_PATH, NULL, NULL, 0, &resp, &err),
		ERR_GENERIC);
	cr_assert_eq(resp.code, 500);
	cr_assert_eq(resp.retries, 2);
	cr_assert_not_null(strstr(err_first(&err), "(500 InternalError)"), "%s",
			   err_first(&err));
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 500), 3);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, invalid_422_not_retried)
{
	struct kube_client *c = client(NULL);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;
	const char *body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			   "\"metadata\":{\"name\":\"bad\"}}";

	cr_assert_eq(test_emu_faults(&emu, "verb=create,code=422"), 0);
	cr_assert_eq(kube_request(c, "POST", CM_PATH, "application/json", body,
				  strlen(body), &resp, &err),
		     ERR_INVALID);
	cr_assert_eq(resp.code, 422);
	cr_assert_eq(resp.retries, 0);
	cr_assert_not_null(resp.status);
	cr_assert_str_eq(
		json_string_value(json_object_get(resp.status, "reason")),
		"Invalid");
	cr_assert_not_null(strstr(err_first(&err), "(422 Invalid)"), "%s",
			   err_first(&err));
	cr_assert_eq(test_emu_count(&emu, "create", NULL, 0), 1);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, dropped_connection_retried)
{
	struct kube_client *c = client(NULL);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;

	create_cm(c, "d", "1");
	cr_assert_eq(test_emu_faults(&emu, "verb=get,drop,count=1"), 0);
	cr_assert_eq(kube_request(c, "GET", CM_PATH "/d", NULL, NULL, 0, &resp,
				  &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(resp.code, 200);
	cr_assert_eq(resp.retries, 1);
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(resp.json, "metadata"), "name")),
		"d");
	cr_assert_eq(test_emu_count(&emu, "get", "configmaps", 0), 2);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, dropped_post_not_retried)
{
	struct kube_client *c = client(NULL);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;
	const char *body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			   "\"metadata\":{\"name\":\"once\"}}";

	/* The server may have acted on it: sending it again is not ours. */
	cr_assert_eq(test_emu_faults(&emu, "verb=create,drop,count=1"), 0);
	cr_assert_eq(kube_request(c, "POST", CM_PATH, "application/json", body,
				  strlen(body), &resp, &err),
		     ERR_IO);
	cr_assert_eq(resp.retries, 0);
	cr_assert_eq(test_emu_count(&emu, "create", NULL, 0), 1);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, bad_server_address)
{
	struct kube_client *c = NULL;
	struct err err = ERR_INIT;

	free(cfg.server);
	cfg.server = strdup("https://exa mple:x");
	cr_assert_eq(kube_client_new(&c, &cfg, NULL, &err), ERR_INVALID);
	cr_assert_null(c);
	cr_assert_not_null(strstr(err_first(&err), "bad server address"), "%s",
			   err_first(&err));
	err_release(&err);
}

Test(kube_http, response_cap)
{
	struct kube_client_options opts = {.max_response = 1024};
	struct kube_client *c = client(&opts);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;
	char big[4097];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	create_cm(c, "small", "1");
	/* The create answers the object: over the cap as well. */
	cr_assert_eq(kube_request(c, "GET", CM_PATH "/small", NULL, NULL, 0,
				  &resp, &err),
		     0, "%s", err_msg(&err));
	kube_response_release(&resp);
	err_reset(&err);

	{
		char *body = NULL;
		json_t *obj =
			json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion",
				  "v1", "kind", "ConfigMap", "metadata", "name",
				  "big", "data", "k", big);

		body = json_dumps(obj, JSON_COMPACT);
		cr_assert_eq(kube_request(c, "POST", CM_PATH,
					  "application/json", body,
					  strlen(body), &resp, &err),
			     ERR_LIMIT);
		free(body);
		json_decref(obj);
	}
	err_reset(&err);
	cr_assert_eq(kube_request(c, "GET", CM_PATH "/big", NULL, NULL, 0,
				  &resp, &err),
		     ERR_LIMIT);
	cr_assert_not_null(strstr(err_first(&err), "larger than 1024 bytes"),
			   "%s", err_first(&err));
	cr_assert_eq(resp.retries, 0);
	cr_assert_eq(test_emu_count(&emu, "get", "configmaps", 200), 2);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

struct limiter_thread {
	struct kube_client *c;
	int rc;
};

static void *limited_get(void *arg)
{
	struct limiter_thread *t = arg;
	struct kube_response resp = KUBE_RESPONSE_INIT;

	t->rc = kube_request(t->c, "GET", CM_PATH, NULL, NULL, 0, &resp, NULL);
	kube_response_release(&resp);
	return NULL;
}

Test(kube_http, rate_limiter)
{
	struct kube_client_options opts = {.qps = 5, .burst = 1};
	struct kube_client *c = client(&opts);
	struct limiter_thread t[4];
	pthread_t tid[4];
	int i;

	/*
	 * Four requests at once with a bucket of one: one goes at once, the
	 * other three wait for a token each (200 ms apart). From several
	 * threads, which is also the client's thread-safety check.
	 */
	for (i = 0; i < 4; i++) {
		t[i].c = c;
		t[i].rc = -100;
		cr_assert_eq(pthread_create(&tid[i], NULL, limited_get, &t[i]),
			     0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		cr_assert_eq(t[i].rc, 0);
	}
	cr_assert_eq(kube_client_requests(c), 4);
	cr_assert_eq(kube_client_throttled(c), 3);
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 4);
	kube_client_free(c);
}

Test(kube_http, default_limiter_does_not_throttle_a_burst)
{
	struct kube_client *c = client(NULL);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	int i;

	for (i = 0; i < 20; i++)
		cr_assert_eq(kube_request(c, "GET", CM_PATH, NULL, NULL, 0,
					  &resp, NULL),
			     0);
	cr_assert_eq(kube_client_throttled(c), 0);
	kube_response_release(&resp);
	kube_client_free(c);
}

Test(kube_http, connections_reused)
{
	struct kube_client *c = client(NULL);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;
	int i;

	for (i = 0; i < 50; i++)
		cr_assert_eq(kube_request(c, "GET", CM_PATH, NULL, NULL, 0,
					  &resp, &err),
			     0, "%s", err_msg(&err));
	cr_assert_eq(kube_client_requests(c), 50);
	cr_assert_eq(kube_client_connections(c), 1);
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 50);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

struct lines {
	int n;
	int stop_at;
	char types[8][16];
	char names[8][32];
};

static int on_line(const char *data, size_t len, void *ctx)
{
	struct lines *l = ctx;
	json_t *ev = json_loadb(data, len, 0, NULL);
	const char *type, *name;

	cr_assert_not_null(ev, "not JSON: %.*s", (int)len, data);
	type = json_string_value(json_object_get(ev, "type"));
	name = json_string_value(json_object_get(
		json_object_get(json_object_get(ev, "object"), "metadata"),
		"name"));
	if (l->n < 8) {
		snprintf(l->types[l->n], sizeof(l->types[0]), "%s",
			 type ? type : "");
		snprintf(l->names[l->n], sizeof(l->names[0]), "%s",
			 name ? name : "");
	}
	json_decref(ev);
	l->n++;
	return l->n == l->stop_at ? 42 : 0;
}

Test(kube_http, stream_until_callback_stops)
{
	struct kube_client *c = client(NULL);
	struct lines l = {.stop_at = 2};
	struct err err = ERR_INIT;

	create_cm(c, "w1", "1");
	create_cm(c, "w2", "2");
	create_cm(c, "w3", "3");
	cr_assert_eq(kube_stream(c, CM_PATH "?watch=1", 0, NULL, on_line, &l, &err),
		     42, "%s", err_msg(&err));
	cr_assert_eq(l.n, 2);
	cr_assert_str_eq(l.types[0], "ADDED");
	cr_assert_str_eq(l.names[0], "w1");
	cr_assert_str_eq(l.names[1], "w2");
	cr_assert_eq(test_emu_count(&emu, "watch", "configmaps", 200), 1);

	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, stream_ended_by_server)
{
	struct kube_client *c = client(NULL);
	struct lines l = {.stop_at = 100};
	struct err err = ERR_INIT;

	create_cm(c, "s1", "1");
	cr_assert_eq(kube_stream(c, CM_PATH "?watch=1&timeoutSeconds=1", 0,
				 NULL, on_line, &l, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(l.n, 1);
	cr_assert_str_eq(l.names[0], "s1");

	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, stream_idle_timeout)
{
	struct kube_client *c = client(NULL);
	struct lines l = {.stop_at = 100};
	struct err err = ERR_INIT;

	/* Nothing in the namespace, no bookmarks: a silent stream. */
	cr_assert_eq(
		kube_stream(c, CM_PATH "?watch=1", 1000, NULL, on_line, &l, &err),
		ERR_TIMEOUT, "%s", err_msg(&err));
	cr_assert_eq(l.n, 0);

	err_release(&err);
	kube_client_free(c);
}

static volatile bool stream_stop;

static void *stop_stream_soon(void *arg)
{
	struct timespec ts = {0, 300 * 1000000L};

	(void)arg;
	nanosleep(&ts, NULL);
	stream_stop = true;
	return NULL;
}

Test(kube_http, stream_closed_by_stop_flag_while_silent)
{
	struct kube_client *c = client(NULL);
	struct lines l = {.stop_at = 100};
	struct err err = ERR_INIT;
	pthread_t t;

	/* No idle timeout, no events: only the flag can end it. */
	stream_stop = false;
	cr_assert_eq(pthread_create(&t, NULL, stop_stream_soon, NULL), 0);
	cr_assert_eq(kube_stream(c, CM_PATH "?watch=1", 0, &stream_stop,
				 on_line, &l, &err),
		     0, "%s", err_msg(&err));
	pthread_join(t, NULL);
	cr_assert_eq(l.n, 0);
	cr_assert_eq(err_count(&err), 0);

	err_release(&err);
	kube_client_free(c);
}

Test(kube_http, stream_error_status)
{
	struct kube_client *c = client(NULL);
	struct lines l = {.stop_at = 100};
	struct err err = ERR_INIT;

	cr_assert_eq(test_emu_faults(&emu, "verb=watch,code=503"), 0);
	cr_assert_eq(kube_stream(c, CM_PATH "?watch=1", 0, NULL, on_line, &l, &err),
		     ERR_IO);
	cr_assert_eq(l.n, 0);
	cr_assert_not_null(strstr(err_first(&err), "(503 ServiceUnavailable)"),
			   "%s", err_first(&err));
	/* Not retried: the caller resumes. */
	cr_assert_eq(test_emu_count(&emu, "watch", "configmaps", 503), 1);

	err_release(&err);
	kube_client_free(c);
}

/* The manager of an Update defaults to the User-Agent up to its '/'. */
static const char *manager_of(json_t *obj)
{
	json_t *mf = json_object_get(json_object_get(obj, "metadata"),
				     "managedFields");

	return json_string_value(
		json_object_get(json_array_get(mf, 0), "manager"));
}

Test(kube_http, user_agent)
{
	struct kube_client_options opts = {.user_agent = "probe/9.9"};
	struct kube_client *c = client(NULL), *c2 = client(&opts);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;

	create_cm(c, "ua", "1");
	create_cm(c2, "ua2", "1");
	cr_assert_eq(kube_request(c, "GET", CM_PATH "/ua", NULL, NULL, 0, &resp,
				  &err),
		     0, "%s", err_msg(&err));
	cr_assert_str_eq(manager_of(resp.json), "syncd");
	cr_assert_eq(kube_request(c, "GET", CM_PATH "/ua2", NULL, NULL, 0,
				  &resp, &err),
		     0, "%s", err_msg(&err));
	cr_assert_str_eq(manager_of(resp.json), "probe");

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
	kube_client_free(c2);
}

Test(kube_http, non_json_body_kept_raw)
{
	struct kube_client *c = client(NULL);
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;

	/* /readyz answers "ok" as text: kept raw, not parsed. */
	cr_assert_eq(
		kube_request(c, "GET", "/readyz", NULL, NULL, 0, &resp, &err),
		0, "%s", err_msg(&err));
	cr_assert_null(resp.json);
	cr_assert_str_eq(buf_cstr(&resp.body), "ok");

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

struct worker {
	struct kube_client *c;
	int failures;
};

static void *many_gets(void *arg)
{
	struct worker *w = arg;
	struct kube_response resp = KUBE_RESPONSE_INIT;
	int i;

	for (i = 0; i < 25; i++)
		if (kube_request(w->c, "GET", CM_PATH, NULL, NULL, 0, &resp,
				 NULL) < 0)
			w->failures++;
	kube_response_release(&resp);
	return NULL;
}

Test(kube_http, threads_share_a_client)
{
	struct kube_client *c = client(NULL);
	struct worker w[8];
	pthread_t tid[8];
	int i;

	for (i = 0; i < 8; i++) {
		w[i].c = c;
		w[i].failures = 0;
		cr_assert_eq(pthread_create(&tid[i], NULL, many_gets, &w[i]),
			     0);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(tid[i], NULL);
		cr_assert_eq(w[i].failures, 0);
	}
	cr_assert_eq(kube_client_requests(c), 200);
	/* At most one connection per thread that ran at the same time. */
	cr_assert_leq(kube_client_connections(c), 8);
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 200);
	kube_client_free(c);
}

Test(kube_err, code_table)
{
	cr_assert_eq(kube_err_code(200), 0);
	cr_assert_eq(kube_err_code(201), 0);
	cr_assert_eq(kube_err_code(400), ERR_INVALID);
	cr_assert_eq(kube_err_code(401), ERR_INVALID);
	cr_assert_eq(kube_err_code(403), ERR_INVALID);
	cr_assert_eq(kube_err_code(404), ERR_NOTFOUND);
	cr_assert_eq(kube_err_code(409), ERR_EXISTS);
	cr_assert_eq(kube_err_code(410), ERR_LIMIT);
	cr_assert_eq(kube_err_code(422), ERR_INVALID);
	cr_assert_eq(kube_err_code(429), ERR_LIMIT);
	cr_assert_eq(kube_err_code(500), ERR_GENERIC);
	cr_assert_eq(kube_err_code(503), ERR_IO);
	cr_assert_eq(kube_err_code(504), ERR_TIMEOUT);
}

Test(kube_http, token_with_header_break_refused)
{
	struct kube_client *c;
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;

	free(cfg.token);
	cfg.token = strdup("test-token\r\nX-Injected: 1");
	c = client(NULL);
	cr_assert_eq(
		kube_request(c, "GET", CM_PATH, NULL, NULL, 0, &resp, &err),
		ERR_INVALID);
	cr_assert_str_eq(err_first(&err),
			 "the bearer token contains control characters");
	cr_assert_eq(test_emu_count(&emu, NULL, NULL, 0), 0);

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}

static bool writes_allowed;

static bool may_write(void *ctx)
{
	(void)ctx;
	return writes_allowed;
}

/* A client whose writes are stopped (a replica that no longer leads). */
Test(kube_http, writes_stop_when_may_write_says_so)
{
	struct kube_client_options o = {0};
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err err = ERR_INIT;
	struct kube_client *c;
	const char *body = "{\"data\": {\"k\": \"v2\"}}";

	o.may_write = may_write;
	o.unacked_timeout_ms = 2000;
	c = client(&o);
	writes_allowed = true;
	create_cm(c, "guarded", "v1");

	writes_allowed = false;
	cr_assert_eq(kube_request(c, "PATCH", CM_PATH "/guarded",
				  "application/merge-patch+json", body,
				  strlen(body), &resp, &err),
		     ERR_CANCELED, "%s", err_msg(&err));
	cr_assert(strstr(err_msg(&err), "not sent"), "%s", err_msg(&err));
	err_reset(&err);
	cr_assert_eq(kube_request(c, "DELETE", CM_PATH "/guarded", NULL, NULL,
				  0, &resp, &err),
		     ERR_CANCELED);
	err_reset(&err);
	/* Reads go on; the server saw no write but the first. */
	cr_assert_eq(kube_request(c, "GET", CM_PATH "/guarded", NULL, NULL, 0,
				  &resp, &err),
		     0, "%s", err_msg(&err));
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(resp.json, "data"), "k")),
			 "v1");
	cr_assert_eq(test_emu_count(&emu, "patch", "configmaps", 0) +
			     test_emu_count(&emu, "delete", "configmaps", 0),
		     0);
	cr_assert_eq(kube_client_requests(c), 2);

	writes_allowed = true;
	cr_assert_eq(kube_request(c, "PATCH", CM_PATH "/guarded",
				  "application/merge-patch+json", body,
				  strlen(body), &resp, &err),
		     0, "%s", err_msg(&err));

	kube_response_release(&resp);
	err_release(&err);
	kube_client_free(c);
}
