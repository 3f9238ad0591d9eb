/*
 * Unit tests of kube-emu's fault injection and request counters: the
 * spec language, matching, counts and percentages, the Status bodies,
 * and /emu/faults and /emu/stats through the handler.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

static const struct emu_resource *res(const char *g, const char *name)
{
	const struct emu_resource *r = emu_resource_find(g, "v1", name);

	cr_assert_not_null(r, "resource %s", name);
	return r;
}

static void add_ok(struct emu_faults *f, const char *spec)
{
	struct buf msg = BUF_INIT;

	cr_assert_eq(emu_faults_add_spec(f, spec, &msg), 0, "%s: %s", spec,
		     buf_cstr(&msg));
	buf_release(&msg);
}

static void add_bad(const char *spec, const char *want)
{
	struct emu_faults *f = emu_faults_new();
	struct buf msg = BUF_INIT;

	cr_assert_eq(emu_faults_add_spec(f, spec, &msg), -1, "%s", spec);
	cr_assert(strstr(buf_cstr(&msg), want), "%s: %s", spec, buf_cstr(&msg));
	buf_release(&msg);
	emu_faults_free(f);
}

Test(faults, spec_syntax)
{
	struct emu_faults *f = emu_faults_new();

	add_ok(f, "verb=list,resource=configmaps,code=503,count=3,"
		  "retryAfter=2");
	add_ok(f, "verb=get|list,resource=deployments.apps,namespace=ns,"
		  "name=web-*,latency=20ms;percent=20,seed=3,drop");
	add_ok(f, "watchEndAfter=2s\nexpire;code=422,name=bad-*,"
		  "message=names starting with bad- are refused");
	add_ok(f, " ; ");
	emu_faults_free(f);

	add_bad("verb=lsit,code=500", "invalid value for verb: \"lsit\"");
	add_bad("code=200", "invalid value for code");
	add_bad("code=503,bogus=1", "unknown fault key \"bogus\"");
	add_bad("code=503,dorp", "unknown fault flag \"dorp\"");
	add_bad("verb=list", "the fault does nothing");
	add_bad("percent=101,drop", "invalid value for percent");
	add_bad("latency=2h", "invalid value for latency");
	add_bad("code=500;verb=list", "in fault \"verb=list\"");
}

Test(faults, count_and_filters)
{
	struct emu_faults *f = emu_faults_new();
	const struct emu_resource *cm = res("", "configmaps");
	const struct emu_resource *sec = res("", "secrets");
	struct emu_fault_hit hit;
	int i;

	add_ok(f, "verb=list,resource=configmaps,code=503,count=3");
	emu_faults_match(f, "get", cm, "default", "x", false, &hit);
	cr_assert_eq(hit.code, 0);
	emu_faults_match(f, "list", sec, "default", NULL, false, &hit);
	cr_assert_eq(hit.code, 0);
	for (i = 0; i < 3; i++) {
		emu_faults_match(f, "list", cm, "default", NULL, false, &hit);
		cr_assert_eq(hit.code, 503, "request %d", i);
		/* 503 and 429 carry Retry-After, 1 s unless given */
		cr_assert_eq(hit.retry_after, 1);
	}
	emu_faults_match(f, "list", cm, "default", NULL, false, &hit);
	cr_assert_eq(hit.code, 0);
	emu_faults_free(f);
}

Test(faults, name_namespace_group)
{
	struct emu_faults *f = emu_faults_new();
	const struct emu_resource *cm = res("", "configmaps");
	const struct emu_resource *dep = res("apps", "deployments");
	struct emu_fault_hit hit;

	add_ok(f, "code=422,name=bad-*,namespace=team");
	add_ok(f, "resource=deployments.apps,code=429,retryAfter=7");
	emu_faults_match(f, "create", cm, "team", "bad-one", false, &hit);
	cr_assert_eq(hit.code, 422);
	emu_faults_match(f, "create", cm, "team", "good", false, &hit);
	cr_assert_eq(hit.code, 0);
	emu_faults_match(f, "create", cm, "other", "bad-one", false, &hit);
	cr_assert_eq(hit.code, 0);
	/* a collection has no name: the name filter does not select it */
	emu_faults_match(f, "list", cm, "team", NULL, false, &hit);
	cr_assert_eq(hit.code, 0);
	emu_faults_match(f, "get", dep, "team", "web", false, &hit);
	cr_assert_eq(hit.code, 429);
	cr_assert_eq(hit.retry_after, 7);
	emu_faults_clear(f);
	emu_faults_match(f, "get", dep, "team", "web", false, &hit);
	cr_assert_eq(hit.code, 0);
	emu_faults_free(f);
}

/* The fired/not-fired sequence of 200 requests under `spec`. */
static void pattern(const char *spec, char out[201])
{
	struct emu_faults *f = emu_faults_new();
	struct emu_fault_hit hit;
	int i;

	add_ok(f, spec);
	for (i = 0; i < 200; i++) {
		emu_faults_match(f, "get", res("", "configmaps"), "default",
				 "x", false, &hit);
		out[i] = hit.code ? '1' : '0';
	}
	out[200] = '\0';
	emu_faults_free(f);
}

Test(faults, percent_is_reproducible)
{
	char a[201], b[201], c[201];
	int fired = 0, i;

	pattern("percent=20,code=500", a);
	pattern("percent=20,code=500", b);
	pattern("percent=20,code=500,seed=99", c);
	cr_assert_str_eq(a, b);
	cr_assert_str_neq(a, c);
	for (i = 0; i < 200; i++)
		fired += a[i] == '1';
	cr_assert(fired > 20 && fired < 60, "fired %d of 200", fired);
	pattern("percent=0,code=500", a);
	cr_assert_null(strchr(a, '1'));
}

Test(faults, actions_combine)
{
	struct emu_faults *f = emu_faults_new();
	const struct emu_resource *cm = res("", "configmaps");
	struct emu_fault_hit hit;

	add_ok(f, "latency=30ms;latency=20ms,drop;code=500,count=1;"
		  "code=503,count=1;watchEndAfter=2s;verb=list|watch,expire");
	emu_faults_match(f, "watch", cm, "default", NULL, true, &hit);
	cr_assert_eq(hit.latency_ms, 50);
	cr_assert(hit.drop);
	/* the first code wins; the second rule keeps its count */
	cr_assert_eq(hit.code, 500);
	cr_assert_eq(hit.watch_end_ms, 2000);
	cr_assert_not(hit.expire);
	emu_faults_match(f, "watch", cm, "default", NULL, true, &hit);
	cr_assert_eq(hit.code, 503);
	emu_faults_match(f, "watch", cm, "default", NULL, false, &hit);
	cr_assert_eq(hit.code, 0);
	cr_assert_not(hit.expire, "expire needs a resourceVersion");
	emu_faults_match(f, "list", cm, "default", NULL, true, &hit);
	cr_assert(hit.expire);
	emu_faults_match(f, "get", cm, "default", "x", true, &hit);
	cr_assert_not(hit.expire);
	cr_assert_eq(hit.watch_end_ms, 0, "watchEndAfter alone is for watches");
	emu_faults_free(f);
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

Test(faults, status_bodies)
{
	const struct emu_resource *cm = res("", "configmaps");
	const struct emu_resource *dep = res("apps", "deployments");
	json_t *st, *d;

	st = emu_fault_status(429, cm, NULL, NULL, 3);
	cr_assert_str_eq(str(st, "reason"), "TooManyRequests");
	cr_assert_str_eq(str(st, "message"),
			 "Too many requests, please try again later.");
	cr_assert_eq(
		json_integer_value(json_object_get(
			json_object_get(st, "details"), "retryAfterSeconds")),
		3);
	cr_assert_eq(json_integer_value(json_object_get(st, "code")), 429);
	json_decref(st);

	st = emu_fault_status(503, cm, NULL, NULL, 1);
	cr_assert_str_eq(str(st, "reason"), "ServiceUnavailable");
	json_decref(st);

	st = emu_fault_status(500, cm, "x", NULL, 0);
	cr_assert_str_eq(str(st, "reason"), "InternalError");
	cr_assert_str_eq(str(st, "message"),
			 "Internal error occurred: injected fault");
	json_decref(st);

	st = emu_fault_status(422, dep, "bad-web", "no", 0);
	cr_assert_str_eq(str(st, "reason"), "Invalid");
	cr_assert_str_eq(str(st, "message"),
			 "Deployment.apps \"bad-web\" is invalid: "
			 "metadata.name: Invalid value: \"bad-web\": no");
	d = json_object_get(st, "details");
	cr_assert_str_eq(str(d, "name"), "bad-web");
	cr_assert_str_eq(str(d, "group"), "apps");
	cr_assert_str_eq(str(d, "kind"), "Deployment");
	cr_assert_str_eq(
		str(json_array_get(json_object_get(d, "causes"), 0), "field"),
		"metadata.name");
	json_decref(st);

	st = emu_fault_status(404, dep, "web", NULL, 0);
	cr_assert_str_eq(str(st, "message"),
			 "deployments.apps \"web\" not found");
	json_decref(st);
}

/* ---- through the handler ---- */

struct reply {
	int code;
	unsigned retry_after;
	bool drop;
	struct emu_watch *watch;
	json_t *body;
};

static void call(struct emu_server *srv, const char *method, const char *url,
		 const char *ct, const char *body, struct reply *r)
{
	struct emu_request req = {0};
	struct emu_response resp = EMU_RESPONSE_INIT;
	struct emu_param q[6];
	char path[256], *qs, *save = NULL, *kv, *eq;

	snprintf(path, sizeof(path), "%s", url);
	qs = strchr(path, '?');
	if (qs) {
		*qs++ = '\0';
		for (kv = strtok_r(qs, "&", &save); kv && req.nquery < 6;
		     kv = strtok_r(NULL, "&", &save)) {
			eq = strchr(kv, '=');
			if (eq)
				*eq++ = '\0';
			q[req.nquery].key = kv;
			q[req.nquery].value = eq ? eq : "";
			req.nquery++;
		}
	}
	req.method = method;
	req.path = path;
	req.query = q;
	req.content_type = ct;
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	req.authorization = "Bearer T";
	req.user_agent = "test/1";
	emu_handle(srv, &req, &resp);
	r->code = resp.code;
	r->retry_after = resp.retry_after;
	r->drop = resp.drop;
	r->watch = resp.watch;
	r->body = json_loads(buf_cstr(&resp.body), 0, NULL);
	emu_response_release(&resp);
}

static int code_of(struct emu_server *srv, const char *method, const char *url,
		   const char *body)
{
	struct reply r;

	call(srv, method, url, body ? "application/json" : NULL, body, &r);
	json_decref(r.body);
	emu_watch_free(r.watch);
	return r.code;
}

static void setup(struct emu_server *srv)
{
	memset(srv, 0, sizeof(*srv));
	srv->token = "T";
	srv->host = "127.0.0.1:1";
	cr_assert_eq(emu_store_init(&srv->store), 0);
	srv->faults = emu_faults_new();
	cr_assert_not_null(srv->faults);
}

static void teardown(struct emu_server *srv)
{
	emu_store_release(&srv->store);
	emu_faults_free(srv->faults);
}

#define CMS "/api/v1/namespaces/default/configmaps"
#define CM(name)                                                      \
	"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":" \
	"{\"name\":\"" name "\"}}"

Test(faults_handler, retry_after_then_success)
{
	struct emu_server srv;
	struct reply r;
	int i;

	setup(&srv);
	add_ok(srv.faults, "verb=list,resource=configmaps,code=503,count=2,"
			   "retryAfter=4");
	for (i = 0; i < 2; i++) {
		call(&srv, "GET", CMS, NULL, NULL, &r);
		cr_assert_eq(r.code, 503);
		cr_assert_eq(r.retry_after, 4);
		cr_assert_str_eq(str(r.body, "reason"), "ServiceUnavailable");
		json_decref(r.body);
	}
	call(&srv, "GET", CMS, NULL, NULL, &r);
	cr_assert_eq(r.code, 200);
	cr_assert_eq(r.retry_after, 0);
	cr_assert_str_eq(str(r.body, "kind"), "ConfigMapList");
	json_decref(r.body);
	teardown(&srv);
}

Test(faults_handler, invalid_name_drop_and_expire)
{
	struct emu_server srv;
	struct reply r;

	setup(&srv);
	add_ok(srv.faults, "verb=create,code=422,name=bad-*");
	add_ok(srv.faults, "verb=get,name=dropped,drop");
	add_ok(srv.faults, "verb=list,expire");
	call(&srv, "POST", CMS, "application/json", CM("bad-cm"), &r);
	cr_assert_eq(r.code, 422);
	cr_assert_str_eq(str(r.body, "message"),
			 "ConfigMap \"bad-cm\" is invalid: metadata.name: "
			 "Invalid value: \"bad-cm\": injected fault");
	json_decref(r.body);
	cr_assert_eq(code_of(&srv, "GET", CMS "/bad-cm", NULL), 404);
	cr_assert_eq(code_of(&srv, "POST", CMS, CM("dropped")), 201);

	call(&srv, "GET", CMS "/dropped", NULL, NULL, &r);
	cr_assert_eq(r.code, 200);
	cr_assert(r.drop);
	json_decref(r.body);

	call(&srv, "GET", CMS "?resourceVersion=1", NULL, NULL, &r);
	cr_assert_eq(r.code, 410);
	cr_assert_str_eq(str(r.body, "reason"), "Expired");
	cr_assert_str_eq(str(r.body, "message"),
			 "The resourceVersion for the provided list is too "
			 "old.");
	json_decref(r.body);
	/* without a resourceVersion nothing can be expired */
	cr_assert_eq(code_of(&srv, "GET", CMS, NULL), 200);
	cr_assert_eq(code_of(&srv, "GET", CMS "?resourceVersion=0", NULL), 200);
	teardown(&srv);
}

Test(faults_handler, watch_expire_and_end)
{
	struct emu_server srv;
	struct buf lines = BUF_INIT;
	struct reply r;
	json_t *ev;
	int rc;

	setup(&srv);
	add_ok(srv.faults, "verb=watch,expire,count=1");
	add_ok(srv.faults, "verb=watch,watchEndAfter=50ms");
	cr_assert_eq(code_of(&srv, "POST", CMS, CM("a")), 201);

	call(&srv, "GET", CMS "?watch=1&resourceVersion=1", NULL, NULL, &r);
	cr_assert_eq(r.code, 200);
	cr_assert_not_null(r.watch);
	json_decref(r.body);
	cr_assert_eq(emu_watch_next(r.watch, &lines, 1000), 1);
	ev = json_loads(buf_cstr(&lines), 0, NULL);
	cr_assert_str_eq(str(ev, "type"), "ERROR");
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(ev, "object"), "code")),
		     410);
	cr_assert(strstr(str(json_object_get(ev, "object"), "message"),
			 "too old resource version: 1 ("));
	json_decref(ev);
	cr_assert_eq(emu_watch_next(r.watch, &lines, 1000), -1);
	emu_watch_free(r.watch);

	/* the second watch ends by itself, without an ERROR */
	buf_reset(&lines);
	call(&srv, "GET", CMS "?watch=1", NULL, NULL, &r);
	cr_assert_eq(r.code, 200);
	json_decref(r.body);
	while ((rc = emu_watch_next(r.watch, &lines, 5000)) == 1)
		;
	cr_assert_eq(rc, -1);
	cr_assert(strstr(buf_cstr(&lines), "\"ADDED\""));
	cr_assert_null(strstr(buf_cstr(&lines), "\"ERROR\""));
	emu_watch_free(r.watch);
	buf_release(&lines);
	teardown(&srv);
}

/* The count of (verb, resource, code) in a /emu/stats answer. */
static json_int_t stat(const json_t *stats, const char *verb,
		       const char *resource, int code)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(stats, "requests"), i, e)
	{
		if (!strcmp(str(e, "verb"), verb) &&
		    !strcmp(str(e, "resource") ? str(e, "resource") : "",
			    resource) &&
		    json_integer_value(json_object_get(e, "code")) == code)
			return json_integer_value(json_object_get(e, "count"));
	}
	return 0;
}

Test(faults_handler, stats_count_verbs_resources_codes)
{
	struct emu_server srv;
	struct reply r;

	setup(&srv);
	add_ok(srv.faults, "verb=list,resource=configmaps,code=429,count=1");
	cr_assert_eq(code_of(&srv, "GET", CMS, NULL), 429);
	cr_assert_eq(code_of(&srv, "GET", CMS, NULL), 200);
	cr_assert_eq(code_of(&srv, "GET", CMS, NULL), 200);
	cr_assert_eq(code_of(&srv, "POST", CMS, CM("a")), 201);
	cr_assert_eq(code_of(&srv, "POST", CMS, CM("a")), 409);
	cr_assert_eq(code_of(&srv, "GET", CMS "/a", NULL), 200);
	cr_assert_eq(code_of(&srv, "DELETE", CMS "/a", NULL), 200);
	cr_assert_eq(code_of(&srv, "GET",
			     "/apis/apps/v1/namespaces/default/deployments/x",
			     NULL),
		     404);
	cr_assert_eq(code_of(&srv, "GET", "/version", NULL), 200);
	/* neither /readyz nor /emu/ are counted */
	cr_assert_eq(code_of(&srv, "GET", "/readyz", NULL), 200);
	cr_assert_eq(code_of(&srv, "GET", "/emu/faults", NULL), 200);

	call(&srv, "GET", "/emu/stats", NULL, NULL, &r);
	cr_assert_eq(r.code, 200);
	cr_assert_eq(stat(r.body, "list", "configmaps", 429), 1);
	cr_assert_eq(stat(r.body, "list", "configmaps", 200), 2);
	cr_assert_eq(stat(r.body, "create", "configmaps", 201), 1);
	cr_assert_eq(stat(r.body, "create", "configmaps", 409), 1);
	cr_assert_eq(stat(r.body, "get", "configmaps", 200), 1);
	cr_assert_eq(stat(r.body, "delete", "configmaps", 200), 1);
	cr_assert_eq(stat(r.body, "get", "deployments.apps", 404), 1);
	cr_assert_eq(stat(r.body, "get", "", 200), 1);
	cr_assert_eq(json_integer_value(json_object_get(r.body, "total")), 9);
	json_decref(r.body);

	call(&srv, "DELETE", "/emu/stats", NULL, NULL, &r);
	cr_assert_eq(r.code, 200);
	cr_assert_eq(json_integer_value(json_object_get(r.body, "total")), 0);
	cr_assert_eq(json_array_size(json_object_get(r.body, "requests")), 0);
	json_decref(r.body);
	teardown(&srv);
}

Test(faults_handler, control_endpoint)
{
	struct emu_server srv;
	struct reply r;
	json_t *f;

	setup(&srv);
	call(&srv, "POST", "/emu/faults", "text/plain",
	     "verb=get,resource=configmaps,code=500,count=2", &r);
	cr_assert_eq(r.code, 201);
	json_decref(r.body);
	call(&srv, "POST", "/emu/faults", "application/json",
	     "{\"verb\":\"list\",\"code\":503,\"retryAfter\":2,\"drop\":true,"
	     "\"expire\":false}",
	     &r);
	cr_assert_eq(r.code, 201);
	json_decref(r.body);
	call(&srv, "POST", "/emu/faults", "application/json", "\"code=nope\"",
	     &r);
	cr_assert_eq(r.code, 400);
	cr_assert_str_eq(str(r.body, "reason"), "BadRequest");
	json_decref(r.body);

	cr_assert_eq(code_of(&srv, "GET", CMS "/x", NULL), 500);
	call(&srv, "GET", "/emu/faults", NULL, NULL, &r);
	cr_assert_eq(r.code, 200);
	f = json_object_get(r.body, "faults");
	cr_assert_eq(json_array_size(f), 2);
	cr_assert_str_eq(str(json_array_get(f, 0), "spec"),
			 "verb=get,resource=configmaps,code=500,count=2");
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(f, 0),
							"remaining")),
		     1);
	cr_assert_eq(json_integer_value(
			     json_object_get(json_array_get(f, 0), "fired")),
		     1);
	cr_assert_str_eq(str(json_array_get(f, 1), "spec"),
			 "verb=list,code=503,retryAfter=2,drop");
	json_decref(r.body);

	call(&srv, "DELETE", "/emu/faults", NULL, NULL, &r);
	cr_assert_eq(r.code, 200);
	cr_assert_eq(json_array_size(json_object_get(r.body, "faults")), 0);
	json_decref(r.body);
	cr_assert_eq(code_of(&srv, "GET", CMS "/x", NULL), 404);
	cr_assert_eq(code_of(&srv, "PUT", "/emu/faults", NULL), 405);
	cr_assert_eq(code_of(&srv, "GET", "/emu/nothing", NULL), 404);
	teardown(&srv);
}

Test(faults_handler, control_needs_token)
{
	struct emu_server srv;
	struct emu_request req = {0};
	struct emu_response resp = EMU_RESPONSE_INIT;

	setup(&srv);
	req.method = "GET";
	req.path = "/emu/stats";
	req.authorization = "Bearer wrong";
	emu_handle(&srv, &req, &resp);
	cr_assert_eq(resp.code, 401);
	emu_response_release(&resp);
	teardown(&srv);
}

Test(faults, dry_run_filter)
{
	struct emu_faults *f = emu_faults_new();
	const struct emu_resource *dep = res("apps", "deployments");
	struct emu_fault_hit hit;

	add_ok(f, "verb=patch,dryRun=false,code=503,count=1");
	add_ok(f, "verb=patch,dryRun=true,code=422,count=1");
	/* A dry run meets only the dry-run rule, a write only the other. */
	emu_faults_match(f, "patch", dep, "team", "web", EMU_FAULT_DRY_RUN,
			 &hit);
	cr_assert_eq(hit.code, 422);
	emu_faults_match(f, "patch", dep, "team", "web", EMU_FAULT_DRY_RUN,
			 &hit);
	cr_assert_eq(hit.code, 0, "the dry-run rule's count is used up");
	emu_faults_match(f, "patch", dep, "team", "web", 0, &hit);
	cr_assert_eq(hit.code, 503);
	emu_faults_free(f);
}
