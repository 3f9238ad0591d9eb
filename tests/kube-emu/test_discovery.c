/*
 * Unit tests of aggregated discovery (apidiscovery.k8s.io v2): the
 * Accept negotiation of /api and /apis, the document's shape, custom
 * resources in it, and the plain documents when it is not asked for.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

#define CRD_URL "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#define AGG_V2 \
	"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
#define AGG_V2BETA1 \
	"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
/* What kubectl 1.36 sends (client-go without peer discovery). */
#define KUBECTL_ACCEPT AGG_V2 "," AGG_V2BETA1 ",application/json"

static const char widget_crd[] =
	"{\"apiVersion\":\"apiextensions.k8s.io/v1\","
	"\"kind\":\"CustomResourceDefinition\","
	"\"metadata\":{\"name\":\"widgets.example.com\"},"
	"\"spec\":{\"group\":\"example.com\",\"scope\":\"Cluster\","
	"\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\","
	"\"shortNames\":[\"wd\"],\"categories\":[\"things\"]},"
	"\"versions\":[{\"name\":\"v1beta1\",\"served\":true,"
	"\"storage\":false,\"schema\":{\"openAPIV3Schema\":{"
	"\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}},"
	"{\"name\":\"v1\",\"served\":true,\"storage\":true,"
	"\"subresources\":{\"status\":{}},"
	"\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
	"\"x-kubernetes-preserve-unknown-fields\":true}}}]}}";

static void server_init(struct emu_server *srv)
{
	memset(srv, 0, sizeof(*srv));
	cr_assert_eq(emu_store_init(&srv->store), 0);
}

/* One request; *ct gets the response's Content-Type (static string). */
static int call(struct emu_server *srv, const char *method, const char *path,
		const char *accept, const char *body, const char **ct,
		json_t **out)
{
	struct emu_request req = {0};
	struct emu_response resp = EMU_RESPONSE_INIT;

	req.method = method;
	req.path = path;
	req.accept = accept;
	req.content_type = body ? "application/json" : NULL;
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	req.user_agent = "kubectl/v1.36.3 (linux/amd64)";
	emu_handle(srv, &req, &resp);
	*out = json_loads(buf_cstr(&resp.body), 0, NULL);
	if (ct)
		*ct = resp.content_type;
	emu_response_release(&resp);
	return resp.code;
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	if (b)
		v = json_object_get(v, b);
	return json_string_value(v);
}

/* The item of group `name` in an APIGroupDiscoveryList, or NULL. */
static json_t *group_item(const json_t *list, const char *name)
{
	json_t *it;
	size_t i;

	json_array_foreach(json_object_get(list, "items"), i, it)
	{
		const char *n = str_at(it, "metadata", "name");

		if (!strcmp(n ? n : "", name))
			return it;
	}
	return NULL;
}

static json_t *version_of(const json_t *group, const char *version)
{
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(group, "versions"), i, v)
	{
		if (!strcmp(str_at(v, "version", NULL), version))
			return v;
	}
	return NULL;
}

static json_t *resource_of(const json_t *version, const char *name)
{
	json_t *r;
	size_t i;

	json_array_foreach(json_object_get(version, "resources"), i, r)
	{
		if (!strcmp(str_at(r, "resource", NULL), name))
			return r;
	}
	return NULL;
}

static bool has_string(const json_t *arr, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
	{
		if (json_is_string(v) && !strcmp(json_string_value(v), s))
			return true;
	}
	return false;
}

Test(discovery, api_core_group)
{
	struct emu_server srv;
	const char *ct = NULL;
	json_t *out = NULL, *g, *v, *r, *sub;

	server_init(&srv);
	cr_assert_eq(call(&srv, "GET", "/api", KUBECTL_ACCEPT, NULL, &ct, &out),
		     200);
	cr_assert_str_eq(ct, AGG_V2);
	cr_assert_str_eq(str_at(out, "kind", NULL), "APIGroupDiscoveryList");
	cr_assert_str_eq(str_at(out, "apiVersion", NULL),
			 "apidiscovery.k8s.io/v2");
	cr_assert_eq(json_array_size(json_object_get(out, "items")), 1);
	g = group_item(out, "");
	cr_assert_not_null(g);
	v = version_of(g, "v1");
	cr_assert_not_null(v);
	cr_assert_str_eq(str_at(v, "freshness", NULL), "Current");
	r = resource_of(v, "configmaps");
	cr_assert_not_null(r);
	cr_assert_str_eq(str_at(r, "responseKind", "kind"), "ConfigMap");
	cr_assert_str_eq(str_at(r, "responseKind", "group"), "");
	cr_assert_str_eq(str_at(r, "responseKind", "version"), "v1");
	cr_assert_str_eq(str_at(r, "scope", NULL), "Namespaced");
	cr_assert_str_eq(str_at(r, "singularResource", NULL), "configmap");
	cr_assert(has_string(json_object_get(r, "shortNames"), "cm"));
	cr_assert(has_string(json_object_get(r, "verbs"), "patch"));
	r = resource_of(v, "namespaces");
	cr_assert_str_eq(str_at(r, "scope", NULL), "Cluster");
	sub = json_array_get(json_object_get(r, "subresources"), 0);
	cr_assert_str_eq(str_at(sub, "subresource", NULL), "status");
	cr_assert_str_eq(str_at(sub, "responseKind", "kind"), "Namespace");
	cr_assert(has_string(json_object_get(sub, "verbs"), "update"));
	r = resource_of(v, "pods");
	cr_assert(has_string(json_object_get(r, "categories"), "all"));
	/* Subresources are not resources of their own here. */
	cr_assert_null(resource_of(v, "pods/status"));
	json_decref(out);
	emu_store_release(&srv.store);
}

Test(discovery, apis_named_groups)
{
	struct emu_server srv;
	const char *ct = NULL;
	json_t *out = NULL, *g, *v, *r, *sub, *it;
	size_t i;
	bool scale = false;

	server_init(&srv);
	cr_assert_eq(call(&srv, "GET", "/apis", AGG_V2, NULL, &ct, &out), 200);
	cr_assert_str_eq(ct, AGG_V2);
	cr_assert_null(group_item(out, ""));
	/* The groups of the plain /apis, in its order. */
	cr_assert_str_eq(
		str_at(json_array_get(json_object_get(out, "items"), 0),
		       "metadata", "name"),
		"apps");
	g = group_item(out, "apps");
	v = version_of(g, "v1");
	r = resource_of(v, "deployments");
	cr_assert_str_eq(str_at(r, "responseKind", "group"), "apps");
	cr_assert_str_eq(str_at(r, "responseKind", "kind"), "Deployment");
	json_array_foreach(json_object_get(r, "subresources"), i, sub)
	{
		if (strcmp(str_at(sub, "subresource", NULL), "scale"))
			continue;
		scale = true;
		cr_assert_str_eq(str_at(sub, "responseKind", "group"),
				 "autoscaling");
		cr_assert_str_eq(str_at(sub, "responseKind", "kind"), "Scale");
	}
	cr_assert(scale);
	r = resource_of(version_of(group_item(out, "rbac.authorization.k8s.io"),
				   "v1"),
			"clusterroles");
	cr_assert_str_eq(str_at(r, "scope", NULL), "Cluster");
	json_array_foreach(json_object_get(out, "items"), i, it)
	{
		cr_assert_gt(json_array_size(json_object_get(it, "versions")),
			     0);
	}
	json_decref(out);
	emu_store_release(&srv.store);
}

Test(discovery, v2beta1_and_parameter_order)
{
	struct emu_server srv;
	const char *ct = NULL;
	json_t *out = NULL;

	server_init(&srv);
	cr_assert_eq(call(&srv, "GET", "/apis", AGG_V2BETA1 ",application/json",
			  NULL, &ct, &out),
		     200);
	cr_assert_str_eq(ct, AGG_V2BETA1);
	cr_assert_str_eq(str_at(out, "apiVersion", NULL),
			 "apidiscovery.k8s.io/v2beta1");
	json_decref(out);
	/* Parameters in any order, blanks around them. */
	cr_assert_eq(call(&srv, "GET", "/api",
			  "application/json; as=APIGroupDiscoveryList; v=v2; "
			  "g=apidiscovery.k8s.io",
			  NULL, &ct, &out),
		     200);
	cr_assert_str_eq(str_at(out, "kind", NULL), "APIGroupDiscoveryList");
	json_decref(out);
	emu_store_release(&srv.store);
}

Test(discovery, plain_unless_asked)
{
	struct emu_server srv;
	const char *ct = NULL;
	json_t *out = NULL;

	server_init(&srv);
	cr_assert_eq(call(&srv, "GET", "/apis", NULL, NULL, &ct, &out), 200);
	cr_assert_str_eq(ct, "application/json");
	cr_assert_str_eq(str_at(out, "kind", NULL), "APIGroupList");
	json_decref(out);
	cr_assert_eq(call(&srv, "GET", "/api", "application/json", NULL, &ct,
			  &out),
		     200);
	cr_assert_str_eq(str_at(out, "kind", NULL), "APIVersions");
	json_decref(out);
	/* Plain JSON listed first wins; an unknown version is skipped. */
	cr_assert_eq(call(&srv, "GET", "/apis", "application/json," AGG_V2,
			  NULL, &ct, &out),
		     200);
	cr_assert_str_eq(str_at(out, "kind", NULL), "APIGroupList");
	json_decref(out);
	cr_assert_eq(call(&srv, "GET", "/apis",
			  "application/json;g=apidiscovery.k8s.io;v=v9;"
			  "as=APIGroupDiscoveryList",
			  NULL, &ct, &out),
		     200);
	cr_assert_str_eq(str_at(out, "kind", NULL), "APIGroupList");
	json_decref(out);
	/* The group-version documents are never aggregated. */
	cr_assert_eq(call(&srv, "GET", "/apis/apps/v1", AGG_V2, NULL, &ct,
			  &out),
		     200);
	cr_assert_str_eq(str_at(out, "kind", NULL), "APIResourceList");
	json_decref(out);
	/* A server without aggregated discovery ignores the Accept. */
	srv.no_aggregated_discovery = true;
	cr_assert_eq(call(&srv, "GET", "/apis", KUBECTL_ACCEPT, NULL, &ct,
			  &out),
		     200);
	cr_assert_str_eq(ct, "application/json");
	cr_assert_str_eq(str_at(out, "kind", NULL), "APIGroupList");
	json_decref(out);
	emu_store_release(&srv.store);
}

Test(discovery, custom_resources)
{
	struct emu_server srv;
	json_t *out = NULL, *g, *v, *r;

	server_init(&srv);
	cr_assert_eq(call(&srv, "POST", CRD_URL, NULL,
			  widget_crd, NULL, &out),
		     201, "%s", str_at(out, "message", NULL));
	json_decref(out);
	cr_assert_eq(call(&srv, "GET", "/apis", AGG_V2, NULL, NULL, &out),
		     200);
	g = group_item(out, "example.com");
	cr_assert_not_null(g);
	/* Versions in kube's order: the preferred (GA) one first. */
	cr_assert_eq(json_array_size(json_object_get(g, "versions")), 2);
	cr_assert_str_eq(
		str_at(json_array_get(json_object_get(g, "versions"), 0),
		       "version", NULL),
		"v1");
	v = version_of(g, "v1");
	r = resource_of(v, "widgets");
	cr_assert_not_null(r);
	cr_assert_str_eq(str_at(r, "responseKind", "group"), "example.com");
	cr_assert_str_eq(str_at(r, "responseKind", "version"), "v1");
	cr_assert_str_eq(str_at(r, "responseKind", "kind"), "Widget");
	cr_assert_str_eq(str_at(r, "scope", NULL), "Cluster");
	cr_assert(has_string(json_object_get(r, "shortNames"), "wd"));
	cr_assert(has_string(json_object_get(r, "categories"), "things"));
	cr_assert_str_eq(
		str_at(json_array_get(json_object_get(r, "subresources"), 0),
		       "subresource", NULL),
		"status");
	r = resource_of(version_of(g, "v1beta1"), "widgets");
	cr_assert_str_eq(str_at(r, "responseKind", "version"), "v1beta1");
	cr_assert_null(json_object_get(r, "subresources"));
	json_decref(out);
	emu_store_release(&srv.store);
}

/* The index of the resource named `name` in an APIResourceList, or -1. */
static long index_of(const json_t *list, const char *name)
{
	const json_t *r;
	size_t i;

	json_array_foreach(json_object_get(list, "resources"), i, r)
	{
		if (!strcmp(str_at(r, "name", NULL), name))
			return (long)i;
	}
	return -1;
}

Test(discovery, plain_lists_sorted_with_storage_version_hashes)
{
	struct emu_server srv;
	json_t *out = NULL, *r;
	const char *prev = "";
	size_t i;

	server_init(&srv);
	cr_assert_eq(call(&srv, "GET", "/api/v1", "application/json", NULL,
			  NULL, &out),
		     200);
	/* sorted by name, subresources after their resource */
	json_array_foreach(json_object_get(out, "resources"), i, r)
	{
		const char *name = str_at(r, "name", NULL);

		cr_assert_lt(strcmp(prev, name), 0, "%s after %s", name, prev);
		prev = name;
	}
	/* the values of kube-apiserver 1.36 (the first 8 bytes of the
	 * SHA-256 of the storage group/version/kind) */
	r = json_array_get(json_object_get(out, "resources"),
			   (size_t)index_of(out, "configmaps"));
	cr_assert_str_eq(str_at(r, "storageVersionHash", NULL), "qFsyl6wFWjQ=");
	r = json_array_get(json_object_get(out, "resources"),
			   (size_t)index_of(out, "pods"));
	cr_assert_str_eq(str_at(r, "storageVersionHash", NULL), "xPOwRZ+Yhw8=");
	r = json_array_get(json_object_get(out, "resources"),
			   (size_t)index_of(out, "pods/status"));
	cr_assert_null(json_object_get(r, "storageVersionHash"),
		       "a subresource has none");
	json_decref(out);

	cr_assert_eq(call(&srv, "GET", "/apis/apps/v1", "application/json",
			  NULL, NULL, &out),
		     200);
	r = json_array_get(json_object_get(out, "resources"),
			   (size_t)index_of(out, "deployments"));
	cr_assert_str_eq(str_at(r, "storageVersionHash", NULL), "8aSe+NMegvE=");
	cr_assert_eq(index_of(out, "deployments/scale"),
		     index_of(out, "deployments") + 1);
	cr_assert_eq(index_of(out, "deployments/status"),
		     index_of(out, "deployments") + 2);
	json_decref(out);
	emu_store_release(&srv.store);
}
