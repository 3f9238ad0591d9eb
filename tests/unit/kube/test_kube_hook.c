/*
 * kube_client_options.on_response: one call per HTTP attempt with the
 * verb the API server counts and the status, checked against what a real
 * kube-emu counted in /emu/stats; 0 for a transport error.
 */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"
#include "tests/helpers/emu.h"

#define NS_CM	 "/api/v1/namespaces/default/configmaps"
#define MAX_SEEN 64

struct seen {
	pthread_mutex_t lock;
	size_t n;
	char verb[MAX_SEEN][24];
	int code[MAX_SEEN];
};

static struct seen seen = {PTHREAD_MUTEX_INITIALIZER, 0, {{0}}, {0}};
static struct test_emu emu;
static struct kube_config cfg;
static struct kube_client *client;
static struct err err = ERR_INIT;

static void on_response(const char *verb, int code, void *ctx)
{
	struct seen *s = ctx;

	pthread_mutex_lock(&s->lock);
	cr_assert_lt(s->n, MAX_SEEN);
	snprintf(s->verb[s->n], sizeof(s->verb[0]), "%s", verb);
	s->code[s->n] = code;
	s->n++;
	pthread_mutex_unlock(&s->lock);
}

/* Calls with `verb` and `code` (ANY: any code). */
#define ANY (-1)
static long count(const char *verb, int code)
{
	size_t i;
	long n = 0;

	pthread_mutex_lock(&seen.lock);
	for (i = 0; i < seen.n; i++)
		if (!strcmp(seen.verb[i], verb) &&
		    (code == ANY || seen.code[i] == code))
			n++;
	pthread_mutex_unlock(&seen.lock);
	return n;
}

static void setup(void)
{
	struct kube_client_options opts = {
		.qps = 1000,
		.burst = 1000,
		.on_response = on_response,
		.on_response_ctx = &seen,
	};

	cr_assert_eq(test_emu_start(&emu, NULL), 0, "kube-emu did not start");
	cr_assert_eq(test_emu_config(&emu, &cfg), 0);
	cr_assert_eq(kube_client_new(&client, &cfg, &opts, &err), 0, "%s",
		     err_msg(&err));
}

static void teardown(void)
{
	kube_client_free(client);
	client = NULL;
	kube_config_release(&cfg);
	test_emu_stop(&emu);
	err_release(&err);
}

static int req(const char *method, const char *path, const char *ctype,
	       const char *body)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	long code;

	err_reset(&err);
	kube_request(client, method, path, ctype, body, body ? strlen(body) : 0,
		     &resp, &err);
	code = resp.code;
	kube_response_release(&resp);
	return (int)code;
}

static int stop_at_first(const char *data, size_t len, void *ctx)
{
	(void)data;
	(void)len;
	(void)ctx;
	return 1;
}

TestSuite(kube_hook, .init = setup, .fini = teardown, .timeout = 60);

Test(kube_hook, every_verb_as_the_server_counts_it)
{
	static const char *const verbs[] = {
		"get",	  "list",  "watch",  "create",
		"update", "patch", "delete", "deletecollection",
	};
	const char *cm = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			 "\"metadata\":{\"name\":\"a\",\"namespace\":"
			 "\"default\"},\"data\":{\"k\":\"1\"}}";
	const char *cm2 = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			  "\"metadata\":{\"name\":\"a\",\"namespace\":"
			  "\"default\"},\"data\":{\"k\":\"2\"}}";
	size_t i;

	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	cr_assert_eq(req("POST", NS_CM, "application/json", cm), 201);
	cr_assert_eq(req("GET", NS_CM, NULL, NULL), 200);
	cr_assert_eq(req("GET", NS_CM "/a", NULL, NULL), 200);
	cr_assert_eq(req("GET", NS_CM "/nope", NULL, NULL), 404);
	cr_assert_eq(req("PUT", NS_CM "/a", "application/json", cm2), 200);
	cr_assert_eq(req("PATCH", NS_CM "/a", "application/merge-patch+json",
			 "{\"data\":{\"k\":\"3\"}}"),
		     200);
	cr_assert_eq(kube_stream(client, NS_CM "?watch=1&resourceVersion=0",
				 5000, NULL, stop_at_first, NULL, &err),
		     1, "%s", err_msg(&err));
	cr_assert_eq(req("DELETE", NS_CM "/a", NULL, NULL), 200);
	cr_assert_eq(req("DELETE", NS_CM, NULL, NULL), 200);

	cr_assert_eq(count("create", 201), 1);
	cr_assert_eq(count("list", 200), 1);
	cr_assert_eq(count("get", 200), 1);
	cr_assert_eq(count("get", 404), 1);
	cr_assert_eq(count("update", 200), 1);
	cr_assert_eq(count("patch", 200), 1);
	cr_assert_eq(count("watch", 200), 1);
	cr_assert_eq(count("delete", 200), 1);
	cr_assert_eq(count("deletecollection", 200), 1);
	/* The same counts, verb by verb, as the server's own. */
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		cr_assert_eq(count(verbs[i], ANY),
			     test_emu_count(&emu, verbs[i], "configmaps", 0),
			     "verb %s", verbs[i]);
}

Test(kube_hook, cluster_scoped_and_group_paths)
{
	cr_assert_eq(req("GET", "/api/v1/namespaces", NULL, NULL), 200);
	cr_assert_eq(req("GET", "/api/v1/namespaces/default", NULL, NULL), 200);
	cr_assert_eq(req("GET", "/apis/apps/v1/namespaces/default/deployments",
			 NULL, NULL),
		     200);
	cr_assert_eq(
		req("GET", "/apis/apps/v1/deployments?limit=5", NULL, NULL),
		200);
	/* Discovery is not a resource: a get. */
	cr_assert_eq(req("GET", "/api", NULL, NULL), 200);
	cr_assert_eq(count("list", 200), 3);
	cr_assert_eq(count("get", 200), 2);
	cr_assert_eq(seen.n, 5);
}

Test(kube_hook, each_retry_is_one_call)
{
	cr_assert_eq(test_emu_faults(&emu,
				     "verb=get,resource=configmaps,name=flaky,"
				     "code=500,count=2"),
		     0);
	cr_assert_eq(req("GET", NS_CM "/flaky", NULL, NULL), 404);
	cr_assert_eq(count("get", 500), 2);
	cr_assert_eq(count("get", 404), 1);
	cr_assert_eq(seen.n, 3);
}

Test(kube_hook, transport_error_is_code_zero)
{
	struct kube_client_options opts = {
		.max_retries = 1,
		.connect_timeout_ms = 2000,
		.on_response = on_response,
		.on_response_ctx = &seen,
	};
	struct kube_client *dead = NULL;
	char *server = cfg.server;
	int rc;

	/* Port 1 on loopback: nothing listens there, connect is refused. */
	cfg.server = (char *)"https://127.0.0.1:1";
	rc = kube_client_new(&dead, &cfg, &opts, &err);
	cfg.server = server;
	cr_assert_eq(rc, 0, "%s", err_msg(&err));
	rc = kube_request(dead, "GET", NS_CM, NULL, NULL, 0, NULL, &err);
	kube_client_free(dead);
	cr_assert_lt(rc, 0);
	/* The first try and its one retry. */
	cr_assert_eq(count("list", 0), 2);
	cr_assert_eq(seen.n, 2);
}
