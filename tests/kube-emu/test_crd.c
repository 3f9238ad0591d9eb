/*
 * Unit tests of CustomResourceDefinitions: registration, discovery,
 * custom objects with the CRD's list types, deletion and restore.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "kube-emu/emu.h"
#include "tests/kube-emu/test_call.h"

#include "util/banned.h" /* last */

#define CRD_URL	   "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#define WIDGET_URL "/apis/example.com/v1/namespaces/default/widgets"
#define JSON_CT	   "application/json"
#define MERGE_CT   "application/merge-patch+json"
#define APPLY_CT   "application/apply-patch+yaml"

/* A namespaced CRD with /status and a spec.ports list map keyed by name. */
static const char widget_crd[] =
	"{\"apiVersion\":\"apiextensions.k8s.io/v1\","
	"\"kind\":\"CustomResourceDefinition\","
	"\"metadata\":{\"name\":\"widgets.example.com\"},"
	"\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\","
	"\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\","
	"\"shortNames\":[\"wd\"],\"categories\":[\"all\",\"things\"]},"
	"\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
	"\"subresources\":{\"status\":{}},"
	"\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
	"\"spec\":{\"type\":\"object\",\"properties\":{"
	"\"size\":{\"type\":\"integer\"},"
	"\"ports\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\","
	"\"x-kubernetes-list-map-keys\":[\"name\"],"
	"\"items\":{\"type\":\"object\",\"properties\":{"
	"\"name\":{\"type\":\"string\"},\"port\":{\"type\":\"integer\"}}}}}},"
	"\"status\":{\"type\":\"object\","
	"\"x-kubernetes-preserve-unknown-fields\":true}}}}}]}}";

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	if (b)
		v = json_object_get(v, b);
	return json_string_value(v);
}

/* The condition of `type` in a CRD's status. */
static const json_t *condition(const json_t *crd, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(
		json_object_get(json_object_get(crd, "status"), "conditions"),
		i, c) if (!strcmp(str_at(c, "type", NULL), type)) return c;
	return NULL;
}

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

static json_int_t generation(const json_t *obj)
{
	return json_integer_value(json_object_get(
		json_object_get(obj, "metadata"), "generation"));
}

/* The discovery entry of resource `name` in an APIResourceList. */
static const json_t *discovered(const json_t *list, const char *name)
{
	const json_t *r;
	size_t i;

	json_array_foreach(
		json_object_get(list, "resources"), i,
		r) if (!strcmp(str_at(r, "name", NULL), name)) return r;
	return NULL;
}

static void server_init(struct emu_server *srv)
{
	memset(srv, 0, sizeof(*srv));
	srv->token = "T";
	cr_assert_eq(emu_store_init(&srv->store), 0);
}

static void create_widget_crd(struct emu_server *srv)
{
	json_t *out = NULL;

	cr_assert_eq(emu_test_call(srv, "POST", CRD_URL "?fieldManager=kubectl",
				   JSON_CT, widget_crd, &out),
		     201, "%s", str_at(out, "message", NULL));
	json_decref(out);
}

Test(crd, established_and_discovered)
{
	struct emu_server srv;
	json_t *out = NULL, *g;
	const json_t *c, *r;
	size_t i;
	bool found = false;
	char *f;

	server_init(&srv);
	cr_assert_null(emu_resource_find("example.com", "v1", "widgets"));
	cr_assert_eq(emu_test_call(&srv, "POST",
				   CRD_URL "?fieldManager=kubectl", JSON_CT,
				   widget_crd, &out),
		     201);
	/* The create is answered before the controllers write the status. */
	cr_assert_null(condition(out, "NamesAccepted"));
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "GET", CRD_URL "/widgets.example.com",
				   NULL, NULL, &out),
		     200);
	c = condition(out, "NamesAccepted");
	cr_assert_not_null(c);
	cr_assert_str_eq(str_at(c, "status", NULL), "True");
	cr_assert_str_eq(str_at(c, "reason", NULL), "NoConflicts");
	cr_assert_str_eq(str_at(c, "message", NULL), "no conflicts found");
	c = condition(out, "Established");
	cr_assert_not_null(c);
	cr_assert_str_eq(str_at(c, "status", NULL), "True");
	cr_assert_str_eq(str_at(c, "reason", NULL), "InitialNamesAccepted");
	cr_assert_str_eq(
		str_at(json_object_get(out, "status"), "acceptedNames", "kind"),
		"Widget");
	cr_assert_str_eq(str_at(json_object_get(out, "status"), "acceptedNames",
				"listKind"),
			 "WidgetList");
	cr_assert_str_eq(
		str_at(json_object_get(out, "spec"), "names", "singular"),
		"widget");
	cr_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(json_object_get(out, "status"),
						 "storedVersions"),
				 0)),
			 "v1");
	cr_assert_eq(generation(out), 1);
	/* The status is the server's, recorded as its /status write. */
	f = fields_of(out, "kube-apiserver");
	cr_assert_not_null(strstr(f, "f:conditions"), "%s", json_dumps(out, 0));
	free(f);
	json_decref(out);

	cr_assert_not_null(emu_resource_find("example.com", "v1", "widgets"));
	cr_assert_eq(emu_test_call(&srv, "GET", "/apis", NULL, NULL, &out),
		     200);
	json_array_foreach(json_object_get(out, "groups"), i, g)
	{
		if (strcmp(str_at(g, "name", NULL), "example.com"))
			continue;
		found = true;
		cr_assert_str_eq(str_at(g, "preferredVersion", "groupVersion"),
				 "example.com/v1");
	}
	cr_assert(found);
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "GET", "/apis/example.com", NULL, NULL,
				   &out),
		     200);
	cr_assert_str_eq(str_at(out, "name", NULL), "example.com");
	json_decref(out);

	cr_assert_eq(emu_test_call(&srv, "GET", "/apis/example.com/v1", NULL,
				   NULL, &out),
		     200);
	r = discovered(out, "widgets");
	cr_assert_not_null(r);
	cr_assert_str_eq(str_at(r, "kind", NULL), "Widget");
	cr_assert_str_eq(str_at(r, "singularName", NULL), "widget");
	cr_assert(json_is_true(json_object_get(r, "namespaced")));
	cr_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(r, "shortNames"), 0)),
			 "wd");
	cr_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(r, "categories"), 1)),
			 "things");
	cr_assert_not_null(discovered(out, "widgets/status"));
	cr_assert_null(discovered(out, "widgets/scale"));
	json_decref(out);

	cr_assert_eq(
		emu_test_call(&srv, "GET", "/openapi/v3", NULL, NULL, &out),
		200);
	cr_assert_not_null(json_object_get(json_object_get(out, "paths"),
					   "apis/example.com/v1"));
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "GET",
				   "/openapi/v3/apis/example.com/v1", NULL,
				   NULL, &out),
		     200);
	cr_assert_not_null(json_object_get(
		json_object_get(json_object_get(out, "components"), "schemas"),
		"io.k8s.emu.example.com.v1.Widget"));
	json_decref(out);
	emu_store_release(&srv.store);
}

Test(crd, custom_objects)
{
	struct emu_server srv;
	json_t *out = NULL, *item;
	char *f;

	server_init(&srv);
	create_widget_crd(&srv);

	cr_assert_eq(
		emu_test_call(
			&srv, "POST", WIDGET_URL "?fieldManager=writer",
			JSON_CT,
			"{\"apiVersion\":\"example.com/v1\",\"kind\":"
			"\"Widget\",\"metadata\":{\"name\":\"w1\"},"
			"\"spec\":{\"size\":1,\"ports\":[{\"name\":"
			"\"http\",\"port\":80}]},\"status\":{\"ok\":true}}",
			&out),
		201, "%s", str_at(out, "message", NULL));
	cr_assert_eq(generation(out), 1);
	/* /status exists, so a create drops the status. */
	cr_assert_null(json_object_get(out, "status"));
	f = fields_of(out, "writer");
	cr_assert_not_null(strstr(f, "\"k:{\\\"name\\\":\\\"http\\\"}\""), "%s",
			   f);
	free(f);
	json_decref(out);

	cr_assert_eq(
		emu_test_call(&srv, "GET", WIDGET_URL "/w1", NULL, NULL, &out),
		200);
	cr_assert_str_eq(str_at(out, "kind", NULL), "Widget");
	json_decref(out);

	/* A change of the spec bumps the generation; metadata does not. */
	cr_assert_eq(emu_test_call(&srv, "PATCH",
				   WIDGET_URL "/w1?fieldManager=writer",
				   MERGE_CT, "{\"spec\":{\"size\":2}}", &out),
		     200);
	cr_assert_eq(generation(out), 2);
	json_decref(out);
	cr_assert_eq(emu_test_call(
			     &srv, "PATCH",
			     WIDGET_URL "/w1?fieldManager=writer", MERGE_CT,
			     "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}", &out),
		     200);
	cr_assert_eq(generation(out), 2);
	json_decref(out);

	/* Server-side apply merges the list map by its key. */
	cr_assert_eq(emu_test_call(&srv, "PATCH",
				   WIDGET_URL "/w1?fieldManager=applier",
				   APPLY_CT,
				   "apiVersion: example.com/v1\nkind: Widget\n"
				   "metadata:\n  name: w1\nspec:\n  ports:\n"
				   "  - name: https\n    port: 443\n",
				   &out),
		     200, "%s", str_at(out, "message", NULL));
	cr_assert_eq(json_array_size(json_object_get(
			     json_object_get(out, "spec"), "ports")),
		     2);
	f = fields_of(out, "applier");
	cr_assert_not_null(strstr(f, "k:{\\\"name\\\":\\\"https\\\"}"), "%s",
			   f);
	cr_assert_null(strstr(f, "\\\"http\\\""), "%s", f);
	free(f);
	json_decref(out);

	/* Lists carry the CRD's listKind; items keep kind and apiVersion. */
	cr_assert_eq(emu_test_call(&srv, "GET", WIDGET_URL, NULL, NULL, &out),
		     200);
	cr_assert_str_eq(str_at(out, "kind", NULL), "WidgetList");
	cr_assert_str_eq(str_at(out, "apiVersion", NULL), "example.com/v1");
	cr_assert_eq(json_array_size(json_object_get(out, "items")), 1);
	item = json_array_get(json_object_get(out, "items"), 0);
	cr_assert_str_eq(str_at(item, "kind", NULL), "Widget");
	cr_assert_str_eq(str_at(item, "apiVersion", NULL), "example.com/v1");
	json_decref(out);
	emu_store_release(&srv.store);
}

Test(crd, delete_removes_objects_and_resources)
{
	struct emu_server srv;
	struct emu_watch *w = NULL;
	struct emu_watch_options wo = {0};
	struct buf events = BUF_INIT;
	const struct emu_resource *r;
	json_t *out = NULL, *st = NULL;

	server_init(&srv);
	create_widget_crd(&srv);
	cr_assert_eq(
		emu_test_call(&srv, "POST", WIDGET_URL, JSON_CT,
			      "{\"apiVersion\":\"example.com/v1\",\"kind\":"
			      "\"Widget\",\"metadata\":{\"name\":\"w1\"}}",
			      &out),
		201);
	json_decref(out);
	r = emu_resource_find("example.com", "v1", "widgets");
	cr_assert_not_null(r);
	cr_assert_eq(emu_watch_open(&srv.store, r, &wo, &w, &st), 0);
	while (emu_watch_next(w, &events, 0) > 0)
		;
	buf_reset(&events);

	cr_assert_eq(emu_test_call(&srv, "DELETE",
				   CRD_URL "/widgets.example.com", NULL, NULL,
				   &out),
		     200);
	/*
	 * The finalizer keeps it, Terminating, until the objects are gone:
	 * the answer is the CRD marked for deletion.
	 */
	cr_assert_str_eq(str_at(out, "kind", NULL), "CustomResourceDefinition");
	cr_assert_not_null(str_at(out, "metadata", "deletionTimestamp"));
	cr_assert_str_eq(str_at(condition(out, "Terminating"), "status", NULL),
			 "True");
	json_decref(out);
	while (emu_watch_next(w, &events, 0) > 0)
		;
	cr_assert_not_null(strstr(buf_cstr(&events), "\"DELETED\""), "%s",
			   buf_cstr(&events));
	cr_assert_not_null(strstr(buf_cstr(&events), "\"w1\""));
	emu_watch_free(w);
	buf_release(&events);

	/* The pointer stays valid, the resource is gone. */
	cr_assert_str_eq(r->name, "widgets");
	cr_assert_null(emu_resource_find("example.com", "v1", "widgets"));
	cr_assert_eq(
		emu_test_call(&srv, "GET", WIDGET_URL "/w1", NULL, NULL, &out),
		404);
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "GET", "/apis/example.com/v1", NULL,
				   NULL, &out),
		     404);
	json_decref(out);

	/* Created again, it takes its old entry back, with no objects. */
	create_widget_crd(&srv);
	cr_assert_eq(emu_resource_find("example.com", "v1", "widgets"), r);
	cr_assert_eq(emu_test_call(&srv, "GET", WIDGET_URL, NULL, NULL, &out),
		     200);
	cr_assert_eq(json_array_size(json_object_get(out, "items")), 0);
	json_decref(out);
	emu_store_release(&srv.store);
}

Test(crd, invalid)
{
	struct emu_server srv;
	json_t *out = NULL, *bad;
	char *body;

	server_init(&srv);
	bad = json_loads(widget_crd, 0, NULL);
	json_object_set_new(json_object_get(bad, "metadata"), "name",
			    json_string("widgets"));
	body = json_dumps(bad, JSON_COMPACT);
	cr_assert_eq(emu_test_call(&srv, "POST", CRD_URL, JSON_CT, body, &out),
		     422);
	cr_assert_str_eq(str_at(out, "reason", NULL), "Invalid");
	cr_assert_str_eq(str_at(out, "message", NULL),
			 "CustomResourceDefinition.apiextensions.k8s.io "
			 "\"widgets\" is invalid: metadata.name: Invalid "
			 "value: \"widgets\": must be "
			 "spec.names.plural+\".\"+spec.group");
	cr_assert_str_eq(
		str_at(json_array_get(
			       json_object_get(json_object_get(out, "details"),
					       "causes"),
			       0),
		       "field", NULL),
		"metadata.name");
	json_decref(out);
	free(body);

	/* Exactly one storage version. */
	json_object_set_new(json_object_get(bad, "metadata"), "name",
			    json_string("widgets.example.com"));
	json_object_set_new(
		json_array_get(json_object_get(json_object_get(bad, "spec"),
					       "versions"),
			       0),
		"storage", json_false());
	body = json_dumps(bad, JSON_COMPACT);
	cr_assert_eq(emu_test_call(&srv, "POST", CRD_URL, JSON_CT, body, &out),
		     422);
	cr_assert_not_null(strstr(str_at(out, "message", NULL),
				  "must have exactly one version marked as "
				  "storage version"));
	json_decref(out);
	free(body);
	json_decref(bad);
	cr_assert_null(emu_resource_find("example.com", "v1", "widgets"));
	emu_store_release(&srv.store);
}

Test(crd, name_conflict_not_accepted)
{
	struct emu_server srv;
	json_t *out = NULL, *other;
	const json_t *c;
	char *body;

	server_init(&srv);
	create_widget_crd(&srv);
	/* Another plural of the same group claiming kind Widget. */
	other = json_loads(widget_crd, 0, NULL);
	json_object_set_new(json_object_get(other, "metadata"), "name",
			    json_string("gadgets.example.com"));
	json_object_set_new(
		json_object_get(json_object_get(other, "spec"), "names"),
		"plural", json_string("gadgets"));
	json_object_set_new(
		json_object_get(json_object_get(other, "spec"), "names"),
		"singular", json_string("gadget"));
	json_object_del(
		json_object_get(json_object_get(other, "spec"), "names"),
		"shortNames");
	body = json_dumps(other, JSON_COMPACT);
	cr_assert_eq(emu_test_call(&srv, "POST", CRD_URL, JSON_CT, body, &out),
		     201);
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "GET", CRD_URL "/gadgets.example.com",
				   NULL, NULL, &out),
		     200);
	c = condition(out, "NamesAccepted");
	cr_assert_str_eq(str_at(c, "status", NULL), "False");
	cr_assert_str_eq(str_at(c, "reason", NULL), "KindConflict");
	cr_assert_str_eq(str_at(c, "message", NULL),
			 "\"Widget\" is already in use");
	c = condition(out, "Established");
	cr_assert_str_eq(str_at(c, "status", NULL), "False");
	cr_assert_str_eq(str_at(c, "reason", NULL), "NotAccepted");
	cr_assert_null(emu_resource_find("example.com", "v1", "gadgets"));
	json_decref(out);
	free(body);
	json_decref(other);
	emu_store_release(&srv.store);
}

Test(crd, restore)
{
	struct emu_server srv;
	struct buf msg = BUF_INIT;
	json_t *out = NULL, *dump;

	server_init(&srv);
	create_widget_crd(&srv);
	cr_assert_eq(
		emu_test_call(&srv, "POST", WIDGET_URL, JSON_CT,
			      "{\"apiVersion\":\"example.com/v1\",\"kind\":"
			      "\"Widget\",\"metadata\":{\"name\":\"w1\"},"
			      "\"spec\":{\"size\":3}}",
			      &out),
		201);
	json_decref(out);
	dump = emu_store_dump(&srv.store);
	cr_assert_not_null(dump);
	emu_store_release(&srv.store);
	/* Releasing the store dropped its CRDs' resources. */
	cr_assert_null(emu_resource_find("example.com", "v1", "widgets"));

	server_init(&srv);
	cr_assert_eq(emu_store_restore(&srv.store, dump, &msg), 0, "%s",
		     buf_cstr(&msg));
	cr_assert_not_null(emu_resource_find("example.com", "v1", "widgets"));
	cr_assert_eq(
		emu_test_call(&srv, "GET", WIDGET_URL "/w1", NULL, NULL, &out),
		200);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(out, "spec"), "size")),
		     3);
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "GET", "/apis/example.com/v1", NULL,
				   NULL, &out),
		     200);
	json_decref(out);
	json_decref(dump);
	buf_release(&msg);
	emu_store_release(&srv.store);
}

/* A CRD whose schema constrains its values, with a /scale subresource. */
static const char gizmo_crd[] =
	"{\"apiVersion\":\"apiextensions.k8s.io/v1\","
	"\"kind\":\"CustomResourceDefinition\","
	"\"metadata\":{\"name\":\"gizmos.example.com\"},"
	"\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\","
	"\"names\":{\"plural\":\"gizmos\",\"kind\":\"Gizmo\"},"
	"\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
	"\"subresources\":{\"status\":{},\"scale\":{"
	"\"specReplicasPath\":\".spec.count\","
	"\"statusReplicasPath\":\".status.count\"}},"
	"\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
	"\"spec\":{\"type\":\"object\",\"properties\":{"
	"\"count\":{\"type\":\"integer\",\"maximum\":10},"
	"\"color\":{\"type\":\"string\",\"enum\":[\"red\",\"blue\"],"
	"\"default\":\"red\"},"
	"\"tags\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"set\","
	"\"items\":{\"type\":\"string\"}}}},"
	"\"status\":{\"type\":\"object\",\"properties\":{"
	"\"count\":{\"type\":\"integer\"}}}}}}}]}}";

#define GIZMO_URL "/apis/example.com/v1/namespaces/default/gizmos"

/* POST body to GIZMO_URL (query appended): the code, *out the answer. */
static int post_gizmo(struct emu_server *srv, const char *query,
		      const char *spec, json_t **out)
{
	char url[256], body[512];

	snprintf(url, sizeof(url), GIZMO_URL "%s", query);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Gizmo\","
		 "\"metadata\":{\"name\":\"g\"},\"spec\":%s}",
		 spec);
	return emu_test_call(srv, "POST", url, JSON_CT, body, out);
}

static const char *cause_message(const json_t *st, size_t i)
{
	return str_at(json_array_get(json_object_get(json_object_get(
						     st, "details"),
					     "causes"),
			       i),
		      "message", NULL);
}

Test(crd, custom_resources_validated_by_schema)
{
	struct emu_server srv;
	json_t *out = NULL;

	server_init(&srv);
	cr_assert_eq(emu_test_call(&srv, "POST", CRD_URL, JSON_CT, gizmo_crd,
				   &out),
		     201);
	json_decref(out);

	cr_assert_eq(post_gizmo(&srv, "", "{\"color\":\"green\"}", &out), 422);
	cr_assert_str_eq(str_at(out, "message", NULL),
			 "Gizmo.example.com \"g\" is invalid: spec.color: "
			 "Unsupported value: \"green\": supported values: "
			 "\"red\", \"blue\"");
	json_decref(out);
	/* the schema's maximum, and the scale's own check of its path */
	cr_assert_eq(post_gizmo(&srv, "", "{\"count\":\"x\"}", &out), 422);
	cr_assert_str_eq(cause_message(out, 0),
			 "Invalid value: \"string\": spec.count in body must "
			 "be of type integer: \"string\"");
	cr_assert_str_eq(cause_message(out, 1),
			 "Invalid value: 0: .spec.count accessor error: x is "
			 "of the type string, expected int64");
	json_decref(out);
	cr_assert_eq(post_gizmo(&srv, "", "{\"count\":11}", &out), 422);
	cr_assert_str_eq(cause_message(out, 0),
			 "Invalid value: 11: spec.count in body should be less "
			 "than or equal to 10");
	json_decref(out);
	cr_assert_eq(post_gizmo(&srv, "", "{\"tags\":[\"a\",\"a\",\"a\"]}",
				&out),
		     422);
	cr_assert_str_eq(str_at(json_array_get(json_object_get(
						       json_object_get(
							       out, "details"),
						       "causes"),
					       0),
				"field", NULL),
			 "spec.tags[1]");
	cr_assert_null(json_array_get(
		json_object_get(json_object_get(out, "details"), "causes"), 1));
	json_decref(out);
	/* unknown fields: refused under Strict, else pruned */
	cr_assert_eq(post_gizmo(&srv, "?fieldValidation=Strict",
				"{\"z\":1,\"b\":{\"c\":1}}", &out),
		     400);
	cr_assert_str_eq(str_at(out, "message", NULL),
			 "Gizmo in version \"v1\" cannot be handled as a "
			 "Gizmo: strict decoding error: unknown field "
			 "\"spec.b\", unknown field \"spec.z\"");
	json_decref(out);
	cr_assert_eq(post_gizmo(&srv, "", "{\"count\":2,\"z\":1}", &out), 201);
	cr_assert_null(json_object_get(json_object_get(out, "spec"), "z"));
	cr_assert_str_eq(str_at(json_object_get(out, "spec"), "color", NULL),
			 "red");
	json_decref(out);
	/* the scale reads the CRD's paths */
	cr_assert_eq(emu_test_call(&srv, "GET", GIZMO_URL "/g/scale", NULL,
				   NULL, &out),
		     200);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(out, "spec"), "replicas")),
		     2);
	cr_assert_null(json_object_get(json_object_get(out, "status"),
				       "selector"));
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "PATCH", GIZMO_URL "/g/scale", MERGE_CT,
				   "{\"spec\":{\"replicas\":5}}", &out),
		     200);
	json_decref(out);
	cr_assert_eq(emu_test_call(&srv, "GET", GIZMO_URL "/g", NULL, NULL,
				   &out),
		     200);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(out, "spec"), "count")),
		     5);
	json_decref(out);
	/* a PUT must name the resourceVersion it replaces */
	cr_assert_eq(emu_test_call(&srv, "PUT", GIZMO_URL "/g", JSON_CT,
				   "{\"apiVersion\":\"example.com/v1\","
				   "\"kind\":\"Gizmo\",\"metadata\":{\"name\":"
				   "\"g\"},\"spec\":{}}",
				   &out),
		     422);
	cr_assert_str_eq(str_at(out, "message", NULL),
			 "gizmos.example.com \"g\" is invalid: "
			 "metadata.resourceVersion: Invalid value: 0: must be "
			 "specified for an update");
	json_decref(out);
	emu_store_release(&srv.store);
}
