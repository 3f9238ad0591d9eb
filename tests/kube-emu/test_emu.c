/*
 * Unit tests of kube-emu: selectors, names, the store and the handler.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "kube-emu/emu.h"
#include "tests/kube-emu/test_call.h"

#include "util/banned.h" /* last */

static const struct emu_resource *res(const char *g, const char *name)
{
	const struct emu_resource *r = emu_resource_find(
		g, *g && !strcmp(g, "autoscaling") ? "v2" : "v1", name);

	cr_assert_not_null(r, "resource %s", name);
	return r;
}

static bool sel_match(const char *sel, const char *labels_json)
{
	struct emu_selector s = EMU_SELECTOR_INIT;
	struct buf msg = BUF_INIT;
	json_t *labels = json_loads(labels_json, 0, NULL);
	bool m;

	cr_assert_eq(emu_selector_parse(&s, sel, &msg), 0, "%s: %s", sel,
		     buf_cstr(&msg));
	m = emu_selector_matches(&s, labels);
	emu_selector_release(&s);
	buf_release(&msg);
	json_decref(labels);
	return m;
}

Test(selector, operators)
{
	const char *l = "{\"app\":\"web\",\"tier\":\"front\"}";

	cr_assert(sel_match("", l));
	cr_assert(sel_match("app=web", l));
	cr_assert(sel_match("app==web", l));
	cr_assert(!sel_match("app=db", l));
	cr_assert(sel_match("app!=db", l));
	cr_assert(sel_match("missing!=x", l));
	cr_assert(!sel_match("app!=web", l));
	cr_assert(sel_match("tier in (back, front)", l));
	cr_assert(!sel_match("tier in (back)", l));
	cr_assert(sel_match("tier notin (back)", l));
	cr_assert(sel_match("missing notin (back)", l));
	cr_assert(!sel_match("tier notin (front,back)", l));
	cr_assert(sel_match("app", l));
	cr_assert(!sel_match("missing", l));
	cr_assert(sel_match("!missing", l));
	cr_assert(!sel_match("!app", l));
	cr_assert(sel_match(" app = web , tier in (front), !x ", l));
	cr_assert(!sel_match("app=web,tier=back", l));
	cr_assert(sel_match("app.kubernetes.io/name!=x", "null"));
	cr_assert(!sel_match("app", "null"));
}

Test(selector, errors)
{
	static const char *const bad[] = {
		"app in back", "app in (a", "=x", "app x", "!", "a=b c", NULL};
	const char *const *s;

	for (s = bad; *s; s++) {
		struct emu_selector sel = EMU_SELECTOR_INIT;
		struct buf msg = BUF_INIT;

		cr_assert_lt(emu_selector_parse(&sel, *s, &msg), 0, "%s", *s);
		cr_assert_gt(msg.len, 0);
		cr_assert_eq(sel.len, 0);
		buf_release(&msg);
	}
}

Test(selector, fields)
{
	struct emu_field_selector fs = EMU_FIELD_SELECTOR_INIT;
	struct buf msg = BUF_INIT;

	cr_assert_eq(
		emu_field_selector_parse(
			&fs, "metadata.name=a,metadata.namespace!=b", &msg),
		0);
	cr_assert_str_eq(fs.name, "a");
	cr_assert(!fs.name_negated);
	cr_assert_str_eq(fs.ns, "b");
	cr_assert(fs.ns_negated);
	emu_field_selector_release(&fs);
	cr_assert_lt(emu_field_selector_parse(&fs, "spec.x=1", &msg), 0);
	cr_assert_str_eq(buf_cstr(&msg),
			 "\"spec.x\" is not a known field selector: only "
			 "\"metadata.name\", \"metadata.namespace\"");
	buf_release(&msg);
}

Test(names, rules)
{
	const char *why;

	cr_assert_eq(emu_name_check("web-1.example", EMU_NAME_SUBDOMAIN, &why),
		     0);
	cr_assert_lt(emu_name_check("Web", EMU_NAME_SUBDOMAIN, &why), 0);
	cr_assert_lt(emu_name_check("a..b", EMU_NAME_SUBDOMAIN, &why), 0);
	cr_assert_lt(emu_name_check("-a", EMU_NAME_SUBDOMAIN, &why), 0);
	cr_assert_lt(emu_name_check("a.b", EMU_NAME_LABEL, &why), 0);
	cr_assert_eq(emu_name_check("1abc", EMU_NAME_LABEL, &why), 0);
	cr_assert_lt(emu_name_check("1abc", EMU_NAME_DNS1035, &why), 0);
	cr_assert(strstr(why, "DNS-1035"));
	cr_assert_eq(emu_name_check("system:admin", EMU_NAME_PATH, &why), 0);
	cr_assert_lt(emu_name_check("a/b", EMU_NAME_PATH, &why), 0);
	cr_assert_str_eq(why, "may not contain '/'");
}

static json_t *cm(const char *name, const char *labels)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion",
			      "v1", "kind", "ConfigMap", "metadata", "name",
			      name, "data", "k", "v");

	if (labels)
		json_object_set_new(json_object_get(o, "metadata"), "labels",
				    json_loads(labels, 0, NULL));
	return o;
}

static void create_ok(struct emu_store *st, const struct emu_resource *r,
		      const char *ns, json_t *obj)
{
	json_t *out = NULL;

	cr_assert_eq(emu_store_create(st, r, ns, obj, NULL, false, &out), 201);
	json_decref(out);
	json_decref(obj);
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(o, a), b));
}

Test(store, create_get_conflict_delete)
{
	struct emu_store st;
	const struct emu_resource *r = res("", "configmaps");
	json_t *in = cm("a", NULL), *out = NULL, *again = NULL;
	char rv[32];

	cr_assert_eq(emu_store_init(&st), 0);
	cr_assert_eq(emu_store_create(&st, r, "default", in, NULL, false, &out),
		     201);
	cr_assert_str_eq(str_at(out, "metadata", "namespace"), "default");
	cr_assert_eq(strlen(str_at(out, "metadata", "uid")), 36);
	cr_assert_eq(str_at(out, "metadata", "uid")[14], '4');
	cr_assert_not_null(str_at(out, "metadata", "creationTimestamp"));
	cr_assert_null(json_object_get(json_object_get(out, "metadata"),
				       "generation"));
	snprintf(rv, sizeof(rv), "%s",
		 str_at(out, "metadata", "resourceVersion"));
	json_decref(out);

	/* Duplicate. */
	cr_assert_eq(emu_store_create(&st, r, "default", in, NULL, false, &out),
		     409);
	cr_assert_str_eq(json_string_value(json_object_get(out, "message")),
			 "configmaps \"a\" already exists");
	cr_assert_str_eq(json_string_value(json_object_get(out, "reason")),
			 "AlreadyExists");
	json_decref(out);

	/* Update with the current resourceVersion, then a stale one. */
	json_object_set_new(json_object_get(in, "metadata"), "resourceVersion",
			    json_string(rv));
	json_object_set_new(json_object_get(in, "data"), "k", json_string("w"));
	cr_assert_eq(emu_store_update(&st, r, "default", "a", NULL, NULL, in,
				      false, &out),
		     200);
	cr_assert_str_neq(str_at(out, "metadata", "resourceVersion"), rv);
	cr_assert_eq(emu_store_update(&st, r, "default", "a", NULL, NULL, in,
				      false, &again),
		     409);
	cr_assert_str_eq(json_string_value(json_object_get(again, "message")),
			 "Operation cannot be fulfilled on configmaps \"a\": "
			 "the object has been modified; please apply your "
			 "changes to the latest version and try again");
	json_decref(again);

	/* An update that changes nothing keeps the resourceVersion. */
	json_object_set(json_object_get(in, "metadata"), "resourceVersion",
			json_object_get(json_object_get(out, "metadata"),
					"resourceVersion"));
	cr_assert_eq(emu_store_update(&st, r, "default", "a", NULL, NULL, in,
				      false, &again),
		     200);
	cr_assert_str_eq(str_at(again, "metadata", "resourceVersion"),
			 str_at(out, "metadata", "resourceVersion"));
	json_decref(again);
	json_decref(out);

	cr_assert_eq(emu_store_get(&st, r, "default", "a", &out), 200);
	cr_assert_str_eq(str_at(out, "data", "k"), "w");
	json_decref(out);

	cr_assert_eq(emu_store_delete(&st, r, "default", "a", false, &out),
		     200);
	cr_assert_str_eq(json_string_value(json_object_get(out, "status")),
			 "Success");
	json_decref(out);
	cr_assert_eq(emu_store_get(&st, r, "default", "a", &out), 404);
	cr_assert_str_eq(json_string_value(json_object_get(out, "message")),
			 "configmaps \"a\" not found");
	cr_assert_str_eq(str_at(out, "details", "kind"), "configmaps");
	cr_assert_eq(json_integer_value(json_object_get(out, "code")), 404);
	json_decref(out);
	json_decref(in);
	emu_store_release(&st);
}

Test(store, namespaces_and_cascade)
{
	struct emu_store st;
	const struct emu_resource *r = res("", "configmaps");
	const struct emu_resource *nsr = res("", "namespaces");
	struct emu_list_options lo = {0};
	json_t *out = NULL, *in = cm("a", NULL);

	cr_assert_eq(emu_store_init(&st), 0);
	cr_assert_eq(emu_store_create(&st, r, "nope", in, NULL, false, &out),
		     404);
	json_decref(in);
	cr_assert_str_eq(json_string_value(json_object_get(out, "message")),
			 "namespaces \"nope\" not found");
	json_decref(out);
	create_ok(&st, nsr, "",
		  json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
			    "Namespace", "metadata", "name", "team"));
	create_ok(&st, r, "team", cm("a", NULL));
	create_ok(&st, r, "team", cm("b", NULL));
	create_ok(&st, r, "default", cm("a", NULL));
	cr_assert_eq(emu_store_get(&st, nsr, "", "team", &out), 200);
	cr_assert_str_eq(str_at(json_object_get(out, "metadata"), "labels",
				"kubernetes.io/metadata.name"),
			 "team");
	json_decref(out);

	cr_assert_eq(emu_store_delete(&st, nsr, "", "team", false, &out), 200);
	json_decref(out);
	cr_assert_eq(emu_store_list(&st, r, &lo, &out), 200);
	cr_assert_eq(json_array_size(json_object_get(out, "items")), 1);
	json_decref(out);

	cr_assert_eq(emu_store_delete(&st, nsr, "", "default", false, &out),
		     403);
	json_decref(out);
	emu_store_release(&st);
}

Test(store, list_selectors_and_pages)
{
	struct emu_store st;
	const struct emu_resource *r = res("", "configmaps");
	struct emu_selector sel = EMU_SELECTOR_INIT;
	struct emu_list_options lo = {0};
	struct buf msg = BUF_INIT;
	json_t *out = NULL, *items;
	char *token;

	cr_assert_eq(emu_store_init(&st), 0);
	create_ok(&st, r, "default", cm("c", "{\"app\":\"web\"}"));
	create_ok(&st, r, "default", cm("a", "{\"app\":\"web\"}"));
	create_ok(&st, r, "default", cm("b", "{\"app\":\"db\"}"));
	create_ok(&st, r, "kube-system", cm("d", "{\"app\":\"web\"}"));

	cr_assert_eq(emu_selector_parse(&sel, "app=web", &msg), 0);
	lo.labels = &sel;
	cr_assert_eq(emu_store_list(&st, r, &lo, &out), 200);
	items = json_object_get(out, "items");
	cr_assert_eq(json_array_size(items), 3);
	cr_assert_str_eq(json_string_value(json_object_get(out, "kind")),
			 "ConfigMapList");
	cr_assert_null(json_object_get(json_array_get(items, 0), "kind"));
	cr_assert_str_eq(str_at(json_array_get(items, 0), "metadata", "name"),
			 "a");
	cr_assert_str_eq(str_at(json_array_get(items, 2), "metadata", "name"),
			 "d");
	cr_assert_not_null(str_at(out, "metadata", "resourceVersion"));
	json_decref(out);

	lo.ns = "default";
	lo.labels = NULL;
	lo.limit = 2;
	cr_assert_eq(emu_store_list(&st, r, &lo, &out), 200);
	cr_assert_eq(json_array_size(json_object_get(out, "items")), 2);
	token = strdup(str_at(out, "metadata", "continue"));
	json_decref(out);
	lo.cont = token;
	cr_assert_eq(emu_store_list(&st, r, &lo, &out), 200);
	items = json_object_get(out, "items");
	cr_assert_eq(json_array_size(items), 1);
	cr_assert_str_eq(str_at(json_array_get(items, 0), "metadata", "name"),
			 "c");
	cr_assert_null(str_at(out, "metadata", "continue"));
	json_decref(out);
	free(token);
	emu_selector_release(&sel);
	buf_release(&msg);
	emu_store_release(&st);
}

Test(store, generation_and_status)
{
	struct emu_store st;
	const struct emu_resource *r = res("apps", "deployments");
	json_t *d = json_pack(
		"{s:s, s:s, s:{s:s}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, "
		"s:{s:[{s:s, s:s}]}}}, s:{s:i}}",
		"apiVersion", "apps/v1", "kind", "Deployment", "metadata",
		"name", "web", "spec", "replicas", 1, "selector", "matchLabels",
		"app", "web", "template", "metadata", "labels", "app", "web",
		"spec", "containers", "name", "web", "image", "nginx", "status",
		"replicas", 5);
	json_t *out = NULL, *out2 = NULL;

	cr_assert_eq(emu_store_init(&st), 0);
	cr_assert_eq(emu_store_create(&st, r, "default", d, NULL, false, &out),
		     201);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(out, "metadata"), "generation")),
		     1);
	/* The body's status is dropped; kube shows the empty struct. */
	cr_assert_eq(json_object_size(json_object_get(out, "status")), 0);
	json_decref(out);
	json_object_set_new(json_object_get(d, "spec"), "replicas",
			    json_integer(3));
	cr_assert_eq(emu_store_update(&st, r, "default", "web", NULL, NULL, d,
				      false, &out),
		     200);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(out, "metadata"), "generation")),
		     2);
	/* The body's status is dropped; kube shows the empty struct. */
	cr_assert_eq(json_object_size(json_object_get(out, "status")), 0);
	/* /status writes the status only, and keeps the generation. */
	cr_assert_eq(emu_store_update(&st, r, "default", "web", "status", NULL,
				      d, false, &out2),
		     200);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(out2, "status"), "replicas")),
		     5);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(out2, "metadata"), "generation")),
		     2);
	json_decref(out);
	json_decref(out2);
	/* Dry run stores nothing. */
	json_object_set_new(json_object_get(d, "metadata"), "name",
			    json_string("dry"));
	cr_assert_eq(emu_store_create(&st, r, "default", d, NULL, true, &out),
		     201);
	json_decref(out);
	cr_assert_eq(emu_store_get(&st, r, "default", "dry", &out), 404);
	json_decref(out);
	json_decref(d);
	emu_store_release(&st);
}

/* The next call() has a body over the cap. */
static bool next_too_large;

/* Drive the handler like an HTTP request ("PATH?k=v&k=v"). */
static int call(struct emu_server *srv, const char *method, const char *url,
		const char *ct, const char *body, json_t **out)
{
	struct emu_test_options o = {.body_too_large = next_too_large};
	struct emu_response resp = EMU_RESPONSE_INIT;

	next_too_large = false;
	emu_test_request(srv, method, url, ct, body, &o, &resp);
	*out = json_loads(buf_cstr(&resp.body), 0, NULL);
	emu_response_release(&resp);
	emu_watch_free(resp.watch);
	return resp.code;
}

static void expect_status(json_t *st, int code, const char *reason,
			  const char *message)
{
	cr_assert_str_eq(json_string_value(json_object_get(st, "kind")),
			 "Status");
	cr_assert_str_eq(json_string_value(json_object_get(st, "status")),
			 "Failure");
	cr_assert_eq(json_integer_value(json_object_get(st, "code")), code);
	cr_assert_str_eq(json_string_value(json_object_get(st, "reason")),
			 reason);
	if (message)
		cr_assert_str_eq(
			json_string_value(json_object_get(st, "message")),
			message);
	json_decref(st);
}

Test(handler, routes_and_errors)
{
	struct emu_server srv = {0};
	const char *cmp = "/api/v1/namespaces/default/configmaps";
	json_t *out = NULL;

	srv.token = "T";
	srv.host = "127.0.0.1:1";
	cr_assert_eq(emu_store_init(&srv.store), 0);

	cr_assert_eq(call(&srv, "GET", "/apis/apps/v1", NULL, NULL, &out), 200);
	cr_assert_str_eq(
		json_string_value(json_object_get(out, "groupVersion")),
		"apps/v1");
	json_decref(out);
	cr_assert_eq(call(&srv, "GET", "/api/v1/nothings", NULL, NULL, &out),
		     404);
	expect_status(out, 404, "NotFound",
		      "the server could not find the requested resource");
	cr_assert_eq(
		call(&srv, "POST", cmp, "application/json", "{\"a\":", &out),
		400);
	expect_status(out, 400, "BadRequest", NULL);
	cr_assert_eq(call(&srv, "POST", cmp, "application/json",
			  "{\"apiVersion\":\"v1\",\"kind\":\"Secret\","
			  "\"metadata\":{\"name\":\"x\"}}",
			  &out),
		     400);
	expect_status(out, 400, "BadRequest",
		      "Secret in version \"v1\" cannot be handled as a "
		      "ConfigMap: converting (v1.Secret) to (core.ConfigMap): "
		      "unknown conversion");
	cr_assert_eq(call(&srv, "POST", cmp, "application/json",
			  "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			  "\"metadata\":{\"name\":\"x\",\"namespace\":\"o\"}}",
			  &out),
		     400);
	expect_status(out, 400, "BadRequest",
		      "the namespace of the provided object does not match "
		      "the namespace sent on the request");
	cr_assert_eq(call(&srv, "POST", cmp, "text/plain", "x", &out), 415);
	expect_status(out, 415, "UnsupportedMediaType", NULL);
	next_too_large = true;
	cr_assert_eq(call(&srv, "POST", cmp, "application/json", "", &out),
		     413);
	expect_status(out, 413, "RequestEntityTooLarge",
		      "Request entity too large: limit is 3145728");
	cr_assert_eq(call(&srv, "POST", cmp, "application/yaml",
			  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
			  "  name: A_b\n",
			  &out),
		     422);
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_array_get(
				json_object_get(json_object_get(out, "details"),
						"causes"),
				0),
			"field")),
		"metadata.name");
	expect_status(out, 422, "Invalid", NULL);
	cr_assert_eq(call(&srv, "POST",
			  "/api/v1/namespaces/default/configmaps?dryRun=All",
			  "application/yaml",
			  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
			  "  name: dry\n",
			  &out),
		     201);
	json_decref(out);
	cr_assert_eq(call(&srv, "GET",
			  "/api/v1/namespaces/default/"
			  "configmaps/dry",
			  NULL, NULL, &out),
		     404);
	expect_status(out, 404, "NotFound", "configmaps \"dry\" not found");
	cr_assert_eq(call(&srv, "GET",
			  "/apis/apps/v1/namespaces/default/"
			  "deployments/web",
			  NULL, NULL, &out),
		     404);
	expect_status(out, 404, "NotFound",
		      "deployments.apps \"web\" not found");
	emu_store_release(&srv.store);
}

Test(handler, unauthorized)
{
	struct emu_server srv = {0};
	struct emu_request req = {0};
	struct emu_response resp = EMU_RESPONSE_INIT;

	srv.token = "other";
	cr_assert_eq(emu_store_init(&srv.store), 0);
	req.method = "GET";
	req.path = "/api/v1/namespaces";
	req.authorization = "Bearer T";
	emu_handle(&srv, &req, &resp);
	cr_assert_eq(resp.code, 401);
	cr_assert(strstr(buf_cstr(&resp.body), "\"reason\":\"Unauthorized\""));
	buf_reset(&resp.body);
	req.path = "/readyz";
	emu_handle(&srv, &req, &resp);
	cr_assert_eq(resp.code, 200);
	cr_assert_str_eq(buf_cstr(&resp.body), "ok");
	emu_response_release(&resp);
	emu_store_release(&srv.store);
}

/* The fieldsV1 of the entry of `manager`, compact, or "" when none. */
static char *fields_of(const json_t *obj, const char *manager)
{
	json_t *mf = json_object_get(json_object_get(obj, "metadata"),
				     "managedFields"),
	       *e;
	size_t i;

	json_array_foreach(mf, i, e)
	{
		if (!strcmp(json_string_value(json_object_get(e, "manager")),
			    manager))
			return json_dumps(json_object_get(e, "fieldsV1"),
					  JSON_COMPACT | JSON_SORT_KEYS);
	}
	return strdup("");
}

Test(handler, managed_fields_for_updates)
{
	struct emu_server srv = {0};
	json_t *out = NULL;
	char *f;

	srv.token = "T";
	cr_assert_eq(emu_store_init(&srv.store), 0);
	cr_assert_eq(call(&srv, "POST",
			  "/apis/apps/v1/namespaces/default/"
			  "deployments?fieldManager=syncd",
			  "application/json",
			  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
			  "\"metadata\":{\"name\":\"web\"},\"spec\":{"
			  "\"replicas\":2,\"selector\":{\"matchLabels\":"
			  "{\"app\":\"web\"}},\"template\":{"
			  "\"metadata\":{\"labels\":{\"app\":\"web\"}},"
			  "\"spec\":{"
			  "\"containers\":[{\"name\":\"web\","
			  "\"image\":\"nginx\"}]}}}}",
			  &out),
		     201);
	/*
	 * An Update owns what it wrote, defaults included (they were set
	 * before the field manager ran), as kube records `kubectl create`.
	 */
	f = fields_of(out, "syncd");
	cr_assert_not_null(strstr(f, "\"f:replicas\":{}"), "%s", f);
	cr_assert_not_null(strstr(f, "\"f:progressDeadlineSeconds\":{}"), "%s",
			   f);
	cr_assert_not_null(strstr(f, "\"f:imagePullPolicy\":{}"), "%s", f);
	cr_assert_not_null(strstr(f, "\"k:{\\\"name\\\":\\\"web\\\"}\":{\".\":{}"),
			   "%s", f);
	free(f);
	json_decref(out);

	/* kubectl scale: a /scale merge patch without fieldManager. */
	cr_assert_eq(call(&srv, "PATCH",
			  "/apis/apps/v1/namespaces/default/deployments/web/"
			  "scale",
			  "application/merge-patch+json",
			  "{\"spec\":{\"replicas\":4}}", &out),
		     200);
	cr_assert_str_eq(json_string_value(json_object_get(out, "kind")),
			 "Scale");
	json_decref(out);
	cr_assert_eq(call(&srv, "GET",
			  "/apis/apps/v1/namespaces/default/"
			  "deployments/web",
			  NULL, NULL, &out),
		     200);
	f = fields_of(out, "kubectl");
	cr_assert_str_eq(f, "{\"f:spec\":{\"f:replicas\":{}}}");
	free(f);
	f = fields_of(out, "syncd");
	cr_assert_null(strstr(f, "f:replicas"), "%s", f);
	free(f);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(out, "metadata"), "generation")),
		     2);
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_array_get(json_object_get(
					       json_object_get(out, "metadata"),
					       "managedFields"),
				       1),
			"subresource")),
		"scale");
	json_decref(out);

	/* A patch that changes nothing writes nothing. */
	cr_assert_eq(call(&srv, "GET",
			  "/apis/apps/v1/namespaces/default/"
			  "deployments/web",
			  NULL, NULL, &out),
		     200);
	f = strdup(json_string_value(json_object_get(
		json_object_get(out, "metadata"), "resourceVersion")));
	json_decref(out);
	cr_assert_eq(call(&srv, "PATCH",
			  "/apis/apps/v1/namespaces/default/deployments/web",
			  "application/merge-patch+json",
			  "{\"spec\":{\"replicas\":4}}", &out),
		     200);
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(out, "metadata"), "resourceVersion")),
		f);
	free(f);
	json_decref(out);
	emu_store_release(&srv.store);
}

/* The body of `kubectl create configmap pb --from-literal=k=hello`. */
static const unsigned char kubectl_cm_pb[] = {
	0x6b, 0x38, 0x73, 0x00, 0x0a, 0x0f, 0x0a, 0x02, 0x76, 0x31, 0x12, 0x09,
	0x43, 0x6f, 0x6e, 0x66, 0x69, 0x67, 0x4d, 0x61, 0x70, 0x12, 0x20, 0x0a,
	0x12, 0x0a, 0x02, 0x70, 0x62, 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00, 0x2a,
	0x00, 0x32, 0x00, 0x38, 0x00, 0x42, 0x00, 0x12, 0x0a, 0x0a, 0x01, 0x6b,
	0x12, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x1a, 0x00, 0x22, 0x00};

Test(protobuf, kubectl_create_configmap)
{
	struct buf msg = BUF_INIT;
	json_t *obj = emu_protobuf_decode((const char *)kubectl_cm_pb,
					  sizeof(kubectl_cm_pb), &msg);
	char *s;

	cr_assert_not_null(obj, "%s", buf_cstr(&msg));
	s = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
	cr_assert_str_eq(s, "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"hello\"},"
			    "\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
			    "\"pb\"}}");
	free(s);
	json_decref(obj);

	/* Truncated: an error, not a crash. */
	obj = emu_protobuf_decode((const char *)kubectl_cm_pb,
				  sizeof(kubectl_cm_pb) - 9, &msg);
	cr_assert_null(obj);
	cr_assert_gt(msg.len, 0);
	buf_release(&msg);
}

#define APPLY_CT "application/apply-patch+yaml"
#define CM_URL	 "/api/v1/namespaces/default/configmaps/cfg"
#define WEB_URL	 "/apis/apps/v1/namespaces/default/deployments/web"

static const char *rv_of(const json_t *obj)
{
	return json_string_value(json_object_get(
		json_object_get(obj, "metadata"), "resourceVersion"));
}

static const char *cause_at(const json_t *st, const char *key)
{
	return json_string_value(json_object_get(
		json_array_get(json_object_get(json_object_get(st, "details"),
					       "causes"),
			       0),
		key));
}

Test(apply, create_reapply_share_conflict)
{
	struct emu_server srv = {0};
	json_t *out = NULL;
	const json_t *e;
	char *f, *rv;

	srv.token = "T";
	cr_assert_eq(emu_store_init(&srv.store), 0);

	/* Without a field manager: 422, as PatchOptions validation. */
	cr_assert_eq(call(&srv, "PATCH", CM_URL, APPLY_CT,
			  "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}",
			  &out),
		     422);
	cr_assert_str_eq(cause_at(out, "field"), "fieldManager");
	expect_status(out, 422, "Invalid",
		      "PatchOptions.meta.k8s.io \"\" is invalid: "
		      "fieldManager: Required value: is required for apply "
		      "patch");

	/* The body must be the URL's kind and name. */
	cr_assert_eq(call(&srv, "PATCH", CM_URL "?fieldManager=syncd", APPLY_CT,
			  "{\"apiVersion\":\"v1\",\"kind\":\"Secret\"}", &out),
		     400);
	expect_status(out, 400, "BadRequest",
		      "invalid object type: /v1, Kind=Secret");
	cr_assert_eq(call(&srv, "PATCH", CM_URL "?fieldManager=syncd", APPLY_CT,
			  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
			  "  name: other\n",
			  &out),
		     400);
	expect_status(out, 400, "BadRequest", NULL);

	/* dryRun creates nothing. */
	cr_assert_eq(call(&srv, "PATCH",
			  CM_URL "?fieldManager=syncd&dryRun=All", APPLY_CT,
			  "apiVersion: v1\nkind: ConfigMap\n", &out),
		     201);
	json_decref(out);
	cr_assert_eq(call(&srv, "GET", CM_URL, NULL, NULL, &out), 404);
	json_decref(out);

	/* A uid in the body is a precondition: nothing has it. */
	cr_assert_eq(call(&srv, "PATCH", CM_URL "?fieldManager=syncd", APPLY_CT,
			  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
			  "  name: cfg\n  uid: forged\ndata:\n  a: \"1\"\n",
			  &out),
		     409);
	expect_status(out, 409, "Conflict",
		      "Operation cannot be fulfilled on configmaps \"cfg\": "
		      "uid mismatch: the provided object specified uid forged, "
		      "and no existing object was found");

	/*
	 * Create (YAML body); the resourceVersion and creationTimestamp
	 * in the body are ignored on create.
	 */
	cr_assert_eq(call(&srv, "PATCH", CM_URL "?fieldManager=syncd", APPLY_CT,
			  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
			  "  name: cfg\n  resourceVersion: \"999\"\n"
			  "  creationTimestamp: \"2020-01-01T00:00:00Z\"\n"
			  "data:\n  a: \"1\"\n",
			  &out),
		     201);
	cr_assert_str_neq(rv_of(out), "999");
	cr_assert_str_neq(str_at(out, "metadata", "creationTimestamp"),
			  "2020-01-01T00:00:00Z");
	e = json_array_get(json_object_get(json_object_get(out, "metadata"),
					   "managedFields"),
			   0);
	cr_assert_str_eq(json_string_value(json_object_get(e, "manager")),
			 "syncd");
	cr_assert_str_eq(json_string_value(json_object_get(e, "operation")),
			 "Apply");
	cr_assert_str_eq(json_string_value(json_object_get(e, "apiVersion")),
			 "v1");
	f = fields_of(out, "syncd");
	cr_assert_str_eq(f, "{\"f:data\":{\"f:a\":{}}}");
	free(f);
	rv = strdup(rv_of(out));
	json_decref(out);

	/* The same apply again (JSON body) writes nothing. */
	cr_assert_eq(call(&srv, "PATCH", CM_URL "?fieldManager=syncd", APPLY_CT,
			  "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			  "\"metadata\":{\"name\":\"cfg\"},"
			  "\"data\":{\"a\":\"1\"}}",
			  &out),
		     200);
	cr_assert_str_eq(rv_of(out), rv);
	json_decref(out);

	/* A second manager with the same value: shared ownership. */
	cr_assert_eq(call(&srv, "PATCH", CM_URL "?fieldManager=other", APPLY_CT,
			  "apiVersion: v1\nkind: ConfigMap\ndata:\n"
			  "  a: \"1\"\n",
			  &out),
		     200);
	f = fields_of(out, "syncd");
	cr_assert_str_eq(f, "{\"f:data\":{\"f:a\":{}}}");
	free(f);
	f = fields_of(out, "other");
	cr_assert_str_eq(f, "{\"f:data\":{\"f:a\":{}}}");
	free(f);
	json_decref(out);

	/* A different value: conflict, nothing written. */
	cr_assert_eq(call(&srv, "PATCH", CM_URL "?fieldManager=other", APPLY_CT,
			  "apiVersion: v1\nkind: ConfigMap\ndata:\n"
			  "  a: \"2\"\n",
			  &out),
		     409);
	cr_assert_str_eq(cause_at(out, "reason"), "FieldManagerConflict");
	cr_assert_str_eq(cause_at(out, "field"), ".data.a");
	expect_status(out, 409, "Conflict",
		      "Apply failed with 1 conflict: conflict with "
		      "\"syncd\": .data.a");
	cr_assert_eq(call(&srv, "GET", CM_URL, NULL, NULL, &out), 200);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(out, "data"), "a")),
			 "1");
	json_decref(out);
	free(rv);
	emu_store_release(&srv.store);
}

Test(apply, scale_conflict_and_force)
{
	struct emu_server srv = {0};
	json_t *out = NULL, *meta;
	char *f, *uid;

	srv.token = "T";
	cr_assert_eq(emu_store_init(&srv.store), 0);
	cr_assert_eq(call(&srv, "PATCH", WEB_URL "?fieldManager=kubectl",
			  APPLY_CT,
			  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
			  "\"metadata\":{\"name\":\"web\"},\"spec\":{"
			  "\"replicas\":3,\"selector\":{\"matchLabels\":"
			  "{\"app\":\"web\"}},\"template\":{"
			  "\"metadata\":{\"labels\":{\"app\":\"web\"}},"
			  "\"spec\":{"
			  "\"containers\":[{\"name\":\"web\","
			  "\"image\":\"nginx\"}]}}}}",
			  &out),
		     201);
	uid = strdup(json_string_value(
		json_object_get(json_object_get(out, "metadata"), "uid")));
	json_decref(out);

	/* An HPA scales through /scale. */
	cr_assert_eq(call(&srv, "PATCH",
			  WEB_URL "/scale?fieldManager=kube-controller-manager",
			  "application/merge-patch+json",
			  "{\"spec\":{\"replicas\":5}}", &out),
		     200);
	json_decref(out);

	/* Applying another replica count conflicts with it. */
	cr_assert_eq(call(&srv, "PATCH", WEB_URL "?fieldManager=kubectl",
			  APPLY_CT,
			  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
			  "\"metadata\":{\"name\":\"web\"},\"spec\":{"
			  "\"replicas\":2,\"selector\":{\"matchLabels\":"
			  "{\"app\":\"web\"}},\"template\":{"
			  "\"metadata\":{\"labels\":{\"app\":\"web\"}},"
			  "\"spec\":{"
			  "\"containers\":[{\"name\":\"web\","
			  "\"image\":\"nginx\"}]}}}}",
			  &out),
		     409);
	cr_assert_str_eq(cause_at(out, "message"),
			 "conflict with \"kube-controller-manager\" with "
			 "subresource \"scale\" using apps/v1");
	cr_assert_str_eq(cause_at(out, "field"), ".spec.replicas");
	expect_status(out, 409, "Conflict",
		      "Apply failed with 1 conflict: conflict with "
		      "\"kube-controller-manager\" with subresource \"scale\" "
		      "using apps/v1: .spec.replicas");
	cr_assert_eq(call(&srv, "GET", WEB_URL, NULL, NULL, &out), 200);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(out, "spec"), "replicas")),
		     5);
	json_decref(out);

	/* With force the applier takes the field; a body status is ignored. */
	cr_assert_eq(call(&srv, "PATCH",
			  WEB_URL "?fieldManager=kubectl&force=true", APPLY_CT,
			  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
			  "\"metadata\":{\"name\":\"web\"},\"spec\":{"
			  "\"replicas\":2,\"selector\":{\"matchLabels\":"
			  "{\"app\":\"web\"}},\"template\":{"
			  "\"metadata\":{\"labels\":{\"app\":\"web\"}},"
			  "\"spec\":{"
			  "\"containers\":[{\"name\":\"web\","
			  "\"image\":\"nginx\"}]}}},"
			  "\"status\":{\"replicas\":9}}",
			  &out),
		     200);
	meta = json_object_get(out, "metadata");
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(out, "spec"), "replicas")),
		     2);
	/* The body's status is dropped; kube shows the empty struct. */
	cr_assert_eq(json_object_size(json_object_get(out, "status")), 0);
	cr_assert_str_eq(json_string_value(json_object_get(meta, "uid")), uid);
	cr_assert_eq(json_integer_value(json_object_get(meta, "generation")),
		     3);
	f = fields_of(out, "kube-controller-manager");
	cr_assert_str_eq(f, "");
	free(f);
	f = fields_of(out, "kubectl");
	cr_assert_not_null(strstr(f, "\"f:replicas\""), "%s", f);
	free(f);
	json_decref(out);
	free(uid);
	emu_store_release(&srv.store);
}
