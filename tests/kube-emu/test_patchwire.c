/*
 * Unit tests of kube-emu's patch wiring through emu_handle: JSON patch,
 * strategic merge patch, patches and server-side apply on /status and
 * /scale with their managedFields, and deletecollection.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "kube-emu/emu.h"
#include "tests/kube-emu/test_call.h"

#include "util/banned.h" /* last */

#define CMS	     "/api/v1/namespaces/default/configmaps"
#define DEPS	     "/apis/apps/v1/namespaces/default/deployments"
#define WEB	     DEPS "/web"
#define JSON_CT	     "application/json"
#define JSONPATCH_CT "application/json-patch+json"
#define SMP_CT	     "application/strategic-merge-patch+json"
#define MERGE_CT     "application/merge-patch+json"
#define APPLY_CT     "application/apply-patch+yaml"

#define DEPLOYMENT                                                          \
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":" \
	"{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"selector\":"         \
	"{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":"   \
	"{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":"          \
	"[{\"name\":\"web\",\"image\":\"nginx:1\"},{\"name\":\"side\","     \
	"\"image\":\"busybox\"}]}}}}"

/* emu_test_call() whose answer is only its code. */
static int code_of(struct emu_server *srv, const char *method, const char *url,
		   const char *ct, const char *body)
{
	json_t *out = NULL;
	int code = emu_test_call(srv, method, url, ct, body, &out);

	json_decref(out);
	return code;
}

static void setup(struct emu_server *srv)
{
	memset(srv, 0, sizeof(*srv));
	srv->token = "T";
	srv->host = "127.0.0.1:1";
	cr_assert_eq(emu_store_init(&srv->store), 0);
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static const json_t *at(const json_t *o, const char *a, const char *b)
{
	return json_object_get(json_object_get(o, a), b);
}

/* The managedFields entry of (manager, operation, subresource). */
static const json_t *entry(const json_t *obj, const char *manager,
			   const char *op, const char *sub)
{
	const json_t *e;
	size_t i;

	json_array_foreach(at(obj, "metadata", "managedFields"), i, e)
	{
		if (!strcmp(str(e, "manager"), manager) &&
		    !strcmp(str(e, "operation"), op) &&
		    (sub ? str(e, "subresource") &&
				     !strcmp(str(e, "subresource"), sub)
			 : !str(e, "subresource")))
			return e;
	}
	return NULL;
}

/* The fields of managedFields entry (manager, op, sub) of obj. */
static void expect_fields(const json_t *obj, const char *manager,
			  const char *op, const char *sub, const char *want)
{
	const json_t *e = entry(obj, manager, op, sub);
	char *have;

	if (!e) {
		have = json_dumps(at(obj, "metadata", "managedFields"),
				  JSON_COMPACT);
		cr_assert_fail("no entry %s/%s/%s in %s", manager, op,
			       sub ? sub : "-", have);
	}
	have = json_dumps(json_object_get(e, "fieldsV1"),
			  JSON_COMPACT | JSON_SORT_KEYS);
	cr_assert_str_eq(have, want);
	free(have);
}

Test(patchwire, json_patch)
{
	struct emu_server srv;
	json_t *out = NULL;

	setup(&srv);
	cr_assert_eq(code_of(&srv, "POST", CMS, JSON_CT,
			     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			     "\"metadata\":{\"name\":\"c\"},\"data\":"
			     "{\"a\":\"1\"}}"),
		     201);
	cr_assert_eq(emu_test_call(&srv, "PATCH", CMS "/c", JSONPATCH_CT,
				   "[{\"op\":\"replace\",\"path\":\"/data/a\","
				   "\"value\":\"2\"},{\"op\":\"add\",\"path\":"
				   "\"/data/b\",\"value\":\"3\"}]",
				   &out),
		     200);
	cr_assert_str_eq(str(json_object_get(out, "data"), "a"), "2");
	cr_assert_str_eq(str(json_object_get(out, "data"), "b"), "3");
	cr_assert_not_null(entry(out, "kubectl", "Update", NULL));
	json_decref(out);

	/* a failed test operation changes nothing */
	cr_assert_eq(
		emu_test_call(&srv, "PATCH", CMS "/c", JSONPATCH_CT,
			      "[{\"op\":\"test\",\"path\":\"/data/a\","
			      "\"value\":\"9\"},{\"op\":\"remove\",\"path\":"
			      "\"/data/a\"}]",
			      &out),
		422);
	cr_assert_str_eq(str(out, "reason"), "Invalid");
	cr_assert_str_eq(str(out, "message"),
			 "the server rejected our request due to an error in "
			 "our request");
	/* kube drops the library's text: details are empty. */
	cr_assert(json_is_object(json_object_get(out, "details")));
	cr_assert_eq(json_object_size(json_object_get(out, "details")), 0);
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "GET", CMS "/c", NULL, NULL, &out),
		     200);
	cr_assert_str_eq(str(json_object_get(out, "data"), "a"), "2");
	json_decref(out);

	/* the body must be a list of operations */
	cr_assert_eq(emu_test_call(&srv, "PATCH", CMS "/c", JSONPATCH_CT,
				   "{\"op\":\"remove\"}", &out),
		     400);
	cr_assert_str_eq(str(out, "reason"), "BadRequest");
	json_decref(out);
	cr_assert_eq(code_of(&srv, "PATCH", CMS "/c", "text/plain", "[]"), 415);
	emu_store_release(&srv.store);
}

Test(patchwire, strategic_merge_patch_lists)
{
	struct emu_server srv;
	const json_t *c;
	json_t *out = NULL;

	setup(&srv);
	cr_assert_eq(code_of(&srv, "POST", DEPS, JSON_CT, DEPLOYMENT), 201);
	/* containers merge by name: side stays, web gets its new image */
	cr_assert_eq(
		emu_test_call(
			&srv, "PATCH", WEB, SMP_CT,
			"{\"spec\":{\"template\":{\"spec\":{\"containers\":"
			"[{\"name\":\"web\",\"image\":\"nginx:2\"}]}}}}",
			&out),
		200);
	c = json_object_get(
		json_object_get(json_object_get(json_object_get(out, "spec"),
						"template"),
				"spec"),
		"containers");
	cr_assert_eq(json_array_size(c), 2);
	cr_assert_str_eq(str(json_array_get(c, 0), "name"), "web");
	cr_assert_str_eq(str(json_array_get(c, 0), "image"), "nginx:2");
	cr_assert_str_eq(str(json_array_get(c, 1), "name"), "side");
	json_decref(out);

	/* $patch: delete removes one item */
	cr_assert_eq(
		emu_test_call(
			&srv, "PATCH", WEB, SMP_CT,
			"{\"spec\":{\"template\":{\"spec\":{\"containers\":"
			"[{\"name\":\"side\",\"$patch\":\"delete\"}]}}}}",
			&out),
		200);
	c = json_object_get(
		json_object_get(json_object_get(json_object_get(out, "spec"),
						"template"),
				"spec"),
		"containers");
	cr_assert_eq(json_array_size(c), 1);
	cr_assert_str_eq(str(json_array_get(c, 0), "name"), "web");
	json_decref(out);
	emu_store_release(&srv.store);
}

Test(patchwire, patches_on_status_and_scale)
{
	struct emu_server srv;
	json_t *out = NULL;

	setup(&srv);
	cr_assert_eq(code_of(&srv, "POST", DEPS, JSON_CT, DEPLOYMENT), 201);

	/* /status takes only the status; the write is recorded as such */
	cr_assert_eq(emu_test_call(&srv, "PATCH",
				   WEB "/status?fieldManager=ctl", MERGE_CT,
				   "{\"spec\":{\"replicas\":9},\"status\":"
				   "{\"replicas\":2,\"readyReplicas\":1}}",
				   &out),
		     200);
	cr_assert_eq(json_integer_value(at(out, "spec", "replicas")), 2);
	cr_assert_eq(json_integer_value(at(out, "status", "replicas")), 2);
	expect_fields(out, "ctl", "Update", "status",
		      "{\"f:status\":{\"f:readyReplicas\":{},"
		      "\"f:replicas\":{}}}");
	json_decref(out);

	/* a PUT of /status too */
	cr_assert_eq(emu_test_call(&srv, "GET", WEB, NULL, NULL, &out), 200);
	json_object_set_new(json_object_get(out, "status"), "updatedReplicas",
			    json_integer(1));
	{
		char *body = json_dumps(out, JSON_COMPACT);

		json_decref(out);
		cr_assert_eq(emu_test_call(&srv, "PUT",
					   WEB "/status?fieldManager=put",
					   JSON_CT, body, &out),
			     200);
		free(body);
	}
	expect_fields(out, "put", "Update", "status",
		      "{\"f:status\":{\"f:updatedReplicas\":{}}}");
	json_decref(out);

	/* a JSON patch of the Scale */
	cr_assert_eq(emu_test_call(
			     &srv, "PATCH", WEB "/scale?fieldManager=scaler",
			     JSONPATCH_CT,
			     "[{\"op\":\"replace\",\"path\":\"/spec/replicas\","
			     "\"value\":4}]",
			     &out),
		     200);
	cr_assert_str_eq(str(out, "kind"), "Scale");
	cr_assert_eq(json_integer_value(at(out, "spec", "replicas")), 4);
	json_decref(out);
	/* a merge patch of the Scale */
	cr_assert_eq(emu_test_call(&srv, "PATCH",
				   WEB "/scale?fieldManager=scaler", MERGE_CT,
				   "{\"spec\":{\"replicas\":5}}", &out),
		     200);
	cr_assert_eq(json_integer_value(at(out, "spec", "replicas")), 5);
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "GET", WEB, NULL, NULL, &out), 200);
	cr_assert_eq(json_integer_value(at(out, "spec", "replicas")), 5);
	expect_fields(out, "scaler", "Update", "scale",
		      "{\"f:spec\":{\"f:replicas\":{}}}");
	json_decref(out);
	emu_store_release(&srv.store);
}

#define STATUS_APPLY(n)                                                     \
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":" \
	"{\"name\":\"web\"},\"status\":{\"replicas\":" #n "}}"

#define SCALE_APPLY(n)                                                        \
	"{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"metadata\":" \
	"{\"name\":\"web\"},\"spec\":{\"replicas\":" #n "}}"

#define MAIN_APPLY                                                          \
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":" \
	"{\"name\":\"web\"},\"spec\":{\"replicas\":2,\"selector\":"         \
	"{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":"   \
	"{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":"          \
	"[{\"name\":\"web\",\"image\":\"nginx:1\"}]}}}}"

Test(patchwire, apply_to_status)
{
	struct emu_server srv;
	json_t *out = NULL;

	setup(&srv);
	cr_assert_eq(code_of(&srv, "PATCH", WEB "?fieldManager=ctl", APPLY_CT,
			     MAIN_APPLY),
		     201);
	cr_assert_eq(emu_test_call(&srv, "PATCH",
				   WEB "/status?fieldManager=ctl", APPLY_CT,
				   STATUS_APPLY(2), &out),
		     200);
	cr_assert_eq(json_integer_value(at(out, "status", "replicas")), 2);
	/* the status apply is a manager of its own, next to the main one */
	expect_fields(out, "ctl", "Apply", "status",
		      "{\"f:status\":{\"f:replicas\":{}}}");
	cr_assert_not_null(entry(out, "ctl", "Apply", NULL));
	cr_assert_null(json_object_get(
		json_object_get(entry(out, "ctl", "Apply", NULL), "fieldsV1"),
		"f:status"));
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "GET", WEB, NULL, NULL, &out), 200);
	cr_assert_eq(json_integer_value(at(out, "status", "replicas")), 2);
	cr_assert_eq(json_integer_value(at(out, "spec", "replicas")), 2);
	expect_fields(out, "ctl", "Apply", "status",
		      "{\"f:status\":{\"f:replicas\":{}}}");
	json_decref(out);

	/* another applier changing the value conflicts, as kube words it */
	cr_assert_eq(emu_test_call(&srv, "PATCH",
				   WEB "/status?fieldManager=other", APPLY_CT,
				   STATUS_APPLY(3), &out),
		     409);
	cr_assert_str_eq(str(out, "message"),
			 "Apply failed with 1 conflict: conflict with \"ctl\" "
			 "with subresource \"status\": .status.replicas");
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "PATCH",
				   WEB "/status?fieldManager=other&force=true",
				   APPLY_CT, STATUS_APPLY(3), &out),
		     200);
	cr_assert_eq(json_integer_value(at(out, "status", "replicas")), 3);
	expect_fields(out, "other", "Apply", "status",
		      "{\"f:status\":{\"f:replicas\":{}}}");
	cr_assert_null(entry(out, "ctl", "Apply", "status"));
	json_decref(out);

	/* the same status again writes nothing */
	cr_assert_eq(emu_test_call(&srv, "PATCH",
				   WEB "/status?fieldManager=other", APPLY_CT,
				   STATUS_APPLY(3), &out),
		     200);
	json_decref(out);
	cr_assert_eq(code_of(&srv, "PATCH", WEB "/status?fieldManager=x",
			     APPLY_CT, SCALE_APPLY(1)),
		     400);
	emu_store_release(&srv.store);
}

Test(patchwire, apply_to_scale)
{
	struct emu_server srv;
	json_t *out = NULL;

	setup(&srv);
	cr_assert_eq(code_of(&srv, "PATCH", WEB "?fieldManager=kubectl",
			     APPLY_CT, MAIN_APPLY),
		     201);
	/* kubectl's apply owns spec.replicas */
	cr_assert_eq(emu_test_call(&srv, "PATCH", WEB "/scale?fieldManager=hpa",
				   APPLY_CT, SCALE_APPLY(5), &out),
		     409);
	cr_assert_str_eq(str(out, "reason"), "Conflict");
	cr_assert_str_eq(str(out, "message"),
			 "Apply failed with 1 conflict: conflict with "
			 "\"kubectl\": .spec.replicas");
	json_decref(out);

	cr_assert_eq(emu_test_call(&srv, "PATCH",
				   WEB "/scale?fieldManager=hpa&force=true",
				   APPLY_CT, SCALE_APPLY(5), &out),
		     200);
	cr_assert_str_eq(str(out, "kind"), "Scale");
	cr_assert_str_eq(str(out, "apiVersion"), "autoscaling/v1");
	cr_assert_eq(json_integer_value(at(out, "spec", "replicas")), 5);
	json_decref(out);

	cr_assert_eq(emu_test_call(&srv, "GET", WEB, NULL, NULL, &out), 200);
	cr_assert_eq(json_integer_value(at(out, "spec", "replicas")), 5);
	expect_fields(out, "hpa", "Apply", "scale",
		      "{\"f:spec\":{\"f:replicas\":{}}}");
	cr_assert_str_eq(str(entry(out, "hpa", "Apply", "scale"), "apiVersion"),
			 "apps/v1");
	cr_assert_null(json_object_get(
		json_object_get(
			json_object_get(entry(out, "kubectl", "Apply", NULL),
					"fieldsV1"),
			"f:spec"),
		"f:replicas"));
	json_decref(out);

	/* the main applier now conflicts with the scale's owner */
	cr_assert_eq(emu_test_call(&srv, "PATCH", WEB "?fieldManager=kubectl",
				   APPLY_CT, MAIN_APPLY, &out),
		     409);
	cr_assert_str_eq(str(out, "message"),
			 "Apply failed with 1 conflict: conflict with \"hpa\" "
			 "with subresource \"scale\": .spec.replicas");
	json_decref(out);
	cr_assert_eq(code_of(&srv, "PATCH", WEB "/scale?fieldManager=x",
			     APPLY_CT, STATUS_APPLY(1)),
		     400);
	emu_store_release(&srv.store);
}

#define LABELED(name, app)                                            \
	"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":" \
	"{\"name\":\"" name "\",\"labels\":{\"app\":\"" app "\"}}}"

static size_t count_deleted(const char *lines)
{
	size_t n = 0;
	const char *p = lines;

	while ((p = strstr(p, "\"type\":\"DELETED\""))) {
		n++;
		p++;
	}
	return n;
}

Test(patchwire, delete_collection)
{
	struct emu_server srv;
	struct emu_watch_options wo = {0};
	struct emu_watch *w = NULL;
	struct buf lines = BUF_INIT;
	json_t *out = NULL, *st = NULL;
	const json_t *items;

	setup(&srv);
	cr_assert_eq(code_of(&srv, "POST", CMS, JSON_CT, LABELED("a", "x")),
		     201);
	cr_assert_eq(code_of(&srv, "POST", CMS, JSON_CT, LABELED("b", "x")),
		     201);
	cr_assert_eq(code_of(&srv, "POST", CMS, JSON_CT, LABELED("c", "y")),
		     201);

	/* dryRun deletes nothing but answers the same list */
	cr_assert_eq(emu_test_call(&srv, "GET", CMS, NULL, NULL, &out), 200);
	cr_assert_eq(json_array_size(json_object_get(out, "items")), 3);
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "DELETE",
				   CMS "?labelSelector=app=x&dryRun=All", NULL,
				   NULL, &out),
		     200);
	cr_assert_eq(json_array_size(json_object_get(out, "items")), 2);
	json_decref(out);
	cr_assert_eq(code_of(&srv, "GET", CMS "/a", NULL, NULL), 200);

	wo.rv = NULL;
	cr_assert_eq(emu_watch_open(&srv.store,
				    emu_resource_find("", "v1", "configmaps"),
				    &wo, &w, &st),
		     0);
	cr_assert_eq(emu_test_call(&srv, "DELETE", CMS "?labelSelector=app=x",
				   NULL, NULL, &out),
		     200);
	cr_assert_str_eq(str(out, "kind"), "ConfigMapList");
	items = json_object_get(out, "items");
	cr_assert_eq(json_array_size(items), 2);
	json_decref(out);
	cr_assert_eq(code_of(&srv, "GET", CMS "/a", NULL, NULL), 404);
	cr_assert_eq(code_of(&srv, "GET", CMS "/b", NULL, NULL), 404);
	cr_assert_eq(code_of(&srv, "GET", CMS "/c", NULL, NULL), 200);
	while (emu_watch_next(w, &lines, 0) == 1)
		;
	cr_assert_eq(count_deleted(buf_cstr(&lines)), 2);
	emu_watch_free(w);
	buf_release(&lines);

	/* by field selector */
	cr_assert_eq(emu_test_call(&srv, "DELETE",
				   CMS "?fieldSelector=metadata.name=c", NULL,
				   NULL, &out),
		     200);
	cr_assert_eq(json_array_size(json_object_get(out, "items")), 1);
	json_decref(out);
	cr_assert_eq(code_of(&srv, "GET", CMS "/c", NULL, NULL), 404);

	/* not across namespaces, not on namespaces */
	cr_assert_eq(code_of(&srv, "DELETE", "/api/v1/configmaps", NULL, NULL),
		     405);
	cr_assert_eq(code_of(&srv, "DELETE", "/api/v1/namespaces", NULL, NULL),
		     405);
	cr_assert_eq(code_of(&srv, "DELETE", CMS "?labelSelector=a in (x", NULL,
			     NULL),
		     400);
	emu_store_release(&srv.store);
}
