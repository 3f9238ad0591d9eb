/*
 * Discovery and the API operations against a real kube-emu (TLS, token):
 * what the server stores and what /emu/stats counted, never timings.
 */
#include <criterion/criterion.h>

#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/kube.h"
#include "tests/helpers/emu.h"
#include "util/clock.h"

#define MANAGER "test"

static struct test_emu emu;
static struct kube_config cfg;
static struct kube_client *client;
static struct kube_discovery *disc;
static struct err err = ERR_INIT;

static void start_with(const char *const *args)
{
	/* Creating 1,200 objects must not wait on the 50 QPS default. */
	struct kube_client_options opts = {.qps = 5000, .burst = 5000};

	cr_assert_eq(test_emu_start(&emu, args), 0, "kube-emu did not start");
	cr_assert_eq(test_emu_config(&emu, &cfg), 0);
	cr_assert_eq(kube_client_new(&client, &cfg, &opts, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(kube_discovery_new(&disc, client, &err), 0);
}

static void setup(void)
{
	start_with(NULL);
}

/* Also called before a skip (which does not run .fini); runs once. */
static void teardown(void)
{
	if (!emu.pid && !client && !disc)
		return;
	kube_discovery_free(disc);
	disc = NULL;
	kube_client_free(client);
	client = NULL;
	kube_config_release(&cfg);
	test_emu_stop(&emu);
	err_release(&err);
}

static const struct kube_resource *find(const char *group, const char *kind)
{
	const struct kube_resource *r = NULL;

	cr_assert_eq(kube_discovery_find(disc, group, NULL, kind, &r, &err), 0,
		     "%s", err_msg(&err));
	return r;
}

static json_t *configmap(const char *ns, const char *name, const char *key,
			 const char *value)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion",
			 "v1", "kind", "ConfigMap", "metadata", "name", name,
			 "namespace", ns, "data", key, value);
}

static json_t *apply(const struct kube_resource *r, json_t *obj,
		     const char *manager)
{
	struct kube_apply_options o = {.field_manager = manager};
	json_t *out = NULL;

	cr_assert_eq(kube_apply(client, r, obj, &o, &out, &err), 0, "%s",
		     err_msg(&err));
	json_decref(obj);
	return out;
}

static void apply_cm(const char *ns, const char *name)
{
	json_decref(apply(find("", "ConfigMap"), configmap(ns, name, "k", "v"),
			  MANAGER));
}

static const char *rv_of(const json_t *obj)
{
	return json_string_value(json_object_get(
		json_object_get(obj, "metadata"), "resourceVersion"));
}

static const char *str_at(const json_t *obj, const char *a, const char *b)
{
	json_t *v = json_object_get(obj, a);

	if (b)
		v = json_object_get(v, b);
	return json_string_value(v);
}

/* ------------------------------------------------------------------ */

Test(kube_path, escapes_segments_and_scopes)
{
	char *verbs[] = {NULL};
	struct kube_resource cm = {
		(char *)"",	     (char *)"v1", (char *)"configmaps",
		(char *)"ConfigMap", true,	   verbs};
	struct kube_resource cr = {(char *)"rbac.authorization.k8s.io",
				   (char *)"v1",
				   (char *)"clusterroles",
				   (char *)"ClusterRole",
				   false,
				   verbs};
	struct kube_resource dep = {
		(char *)"apps",	      (char *)"v1", (char *)"deployments",
		(char *)"Deployment", true,	    verbs};
	struct buf b = BUF_INIT;

	kube_path(&b, &cm, "default", "web", NULL);
	cr_assert_str_eq(buf_cstr(&b),
			 "/api/v1/namespaces/default/configmaps/web");
	buf_reset(&b);
	kube_path(&b, &cm, NULL, NULL, NULL);
	cr_assert_str_eq(buf_cstr(&b), "/api/v1/configmaps");
	buf_reset(&b);
	kube_path(&b, &cr, "ignored", "system:admin/x y%", NULL);
	cr_assert_str_eq(buf_cstr(&b),
			 "/apis/rbac.authorization.k8s.io/v1/clusterroles/"
			 "system%3Aadmin%2Fx%20y%25");
	buf_reset(&b);
	kube_path(&b, &dep, "ns?#", "web", "scale");
	cr_assert_str_eq(buf_cstr(&b),
			 "/apis/apps/v1/namespaces/ns%3F%23/deployments/web/"
			 "scale");
	buf_reset(&b);
	kube_path(&b, &dep, "a", NULL, NULL);
	cr_assert_str_eq(buf_cstr(&b),
			 "/apis/apps/v1/namespaces/a/deployments");
	buf_release(&b);
}

/* ------------------------------------------------------------------ */

TestSuite(kube_discovery, .init = setup, .fini = teardown, .timeout = 60);

Test(kube_discovery, builtins_cached)
{
	const struct kube_resource *r, *again;
	char **v;
	bool list = false;

	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	r = find("", "ConfigMap");
	cr_assert_str_eq(r->name, "configmaps");
	cr_assert_str_eq(r->version, "v1");
	cr_assert(r->namespaced);
	for (v = r->verbs; *v; v++)
		list |= !strcmp(*v, "list");
	cr_assert(list);
	r = find("apps", "Deployment");
	cr_assert_str_eq(r->name, "deployments");
	cr_assert_str_eq(r->group, "apps");
	cr_assert_str_eq(r->version, "v1");
	r = find("rbac.authorization.k8s.io", "ClusterRole");
	cr_assert_not(r->namespaced);
	cr_assert_str_eq(r->name, "clusterroles");
	/* Cached: the same answers cost no request. */
	again = find("apps", "Deployment");
	cr_assert_eq(
		kube_discovery_find(disc, "apps", "v1", "Deployment", &r, &err),
		0);
	cr_assert_eq(r, again);
	/* Aggregated discovery: /api and /apis, nothing more. */
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 0), 2);
}

Test(kube_discovery, versioned_lookup_one_document)
{
	const struct kube_resource *r = NULL;

	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	cr_assert_eq(
		kube_discovery_find(disc, "apps", "v1", "Deployment", &r, &err),
		0, "%s", err_msg(&err));
	cr_assert_str_eq(r->name, "deployments");
	cr_assert_eq(kube_discovery_find(disc, "policy", "v1",
					 "PodDisruptionBudget", &r, &err),
		     0, "%s", err_msg(&err));
	cr_assert_str_eq(r->name, "poddisruptionbudgets");
	/* One aggregated /apis answers every named group-version. */
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 0), 1);
	/* A version not served: one refresh (/apis again), no 404. */
	cr_assert_eq(
		kube_discovery_find(disc, "apps", "v9", "Deployment", &r, &err),
		ERR_NOTFOUND);
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 404), 0);
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 0), 2);
}

/* Each test starts its own kube-emu. */
TestSuite(kube_discovery_plain, .fini = teardown, .timeout = 60);

/*
 * A server without aggregated discovery (before kube 1.26) answers /api
 * and /apis with plain JSON: discovery reads the plain documents, one
 * group-version at a time, with the same answers.
 */
Test(kube_discovery_plain, fallback)
{
	static const char *const args[] = {"--no-aggregated-discovery", NULL};
	const struct kube_resource *r, *again;

	start_with(args);
	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	r = find("apps", "Deployment");
	cr_assert_str_eq(r->name, "deployments");
	cr_assert_str_eq(r->version, "v1");
	r = find("rbac.authorization.k8s.io", "ClusterRole");
	cr_assert_not(r->namespaced);
	/* /apis (plain), /apis/apps/v1, /apis/rbac.../v1. */
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 0), 3);
	/* Known to be plain now: the core group reads /api/v1 only. */
	r = find("", "ConfigMap");
	cr_assert_str_eq(r->name, "configmaps");
	cr_assert(r->namespaced);
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 0), 4);
	again = find("apps", "Deployment");
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 0), 4);
	cr_assert_str_eq(again->kind, "Deployment");
	/* An unknown kind refreshes the plain way: /apis, /apis/apps/v1. */
	cr_assert_eq(kube_discovery_find(disc, "apps", NULL, "Gizmo", &r, &err),
		     ERR_NOTFOUND);
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 0), 6);
	err_reset(&err);
}

/* A core-group lookup first learns the server is plain from /api. */
Test(kube_discovery_plain, fallback_core_first)
{
	static const char *const args[] = {"--no-aggregated-discovery", NULL};
	const struct kube_resource *r;

	start_with(args);
	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	r = find("", "Secret");
	cr_assert_str_eq(r->name, "secrets");
	/* /api (an APIVersions, not aggregated), then /api/v1. */
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 0), 2);
	/* A versioned lookup then reads /apis/G/V directly. */
	cr_assert_eq(kube_discovery_find(disc, "policy", "v1",
					 "PodDisruptionBudget", &r, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 0), 3);
}

Test(kube_discovery, unknown_kind_message)
{
	const struct kube_resource *r = (void *)1;

	cr_assert_eq(kube_discovery_find(disc, "apps", NULL, "Gizmo", &r, &err),
		     ERR_NOTFOUND);
	cr_assert_null(r);
	cr_assert_str_eq(err_first(&err),
			 "no resource for Gizmo.apps on the server");
	err_reset(&err);
	cr_assert_eq(
		kube_discovery_find(disc, "apps", "v9", "Deployment", &r, &err),
		ERR_NOTFOUND);
	cr_assert_str_eq(err_first(&err),
			 "no resource for Deployment.apps (v9) on the server");
	err_reset(&err);
	cr_assert_eq(kube_discovery_find(disc, "", NULL, "Gadget", &r, &err),
		     ERR_NOTFOUND);
	cr_assert_str_eq(err_first(&err),
			 "no resource for Gadget on the server");
}

static json_t *widget_crd(void)
{
	json_error_t jerr;
	json_t *crd = json_loads(
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\","
		"\"kind\":\"CustomResourceDefinition\","
		"\"metadata\":{\"name\":\"widgets.example.com\"},"
		"\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\","
		"\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\","
		"\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},"
		"\"versions\":[{\"name\":\"v1\",\"served\":true,"
		"\"storage\":true,\"schema\":{\"openAPIV3Schema\":{"
		"\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":"
		"true}}}]}}",
		0, &jerr);

	cr_assert_not_null(crd, "%s", jerr.text);
	return crd;
}

Test(kube_discovery, crd_applied_a_moment_ago)
{
	const struct kube_resource *r = NULL;
	json_t *obj;

	/* Fill the cache (the named groups included) before the CRD. */
	find("apps", "Deployment");
	json_decref(
		apply(find("apiextensions.k8s.io", "CustomResourceDefinition"),
		      widget_crd(), MANAGER));
	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	r = find("example.com", "Widget");
	cr_assert_str_eq(r->name, "widgets");
	cr_assert(r->namespaced);
	/* One refresh: /apis again, which lists the new group. */
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 0), 1);
	obj = apply(r,
		    json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i}}", "apiVersion",
			      "example.com/v1", "kind", "Widget", "metadata",
			      "name", "w1", "namespace", "default", "spec",
			      "size", 3),
		    MANAGER);
	cr_assert_str_eq(str_at(obj, "kind", NULL), "Widget");
	json_decref(obj);
	/* The rest of the cache survived the refresh. */
	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	find("apps", "Deployment");
	find("example.com", "Widget");
	cr_assert_eq(test_emu_count(&emu, "get", NULL, 0), 0);
}

/* ------------------------------------------------------------------ */

TestSuite(kube_list, .init = setup, .fini = teardown, .timeout = 120);

static void create_many(unsigned n)
{
	const struct kube_resource *cm = find("", "ConfigMap");
	struct kube_apply_options o = {.field_manager = MANAGER};
	char name[32];
	unsigned i;

	for (i = 0; i < n; i++) {
		json_t *obj;

		snprintf(name, sizeof(name), "cm-%04u", i);
		obj = configmap("default", name, "k", "v");
		if (i % 2)
			json_object_set_new(json_object_get(obj, "metadata"),
					    "labels",
					    json_pack("{s:s}", "half", "yes"));
		cr_assert_eq(kube_apply(client, cm, obj, &o, NULL, &err), 0,
			     "%s", err_msg(&err));
		json_decref(obj);
	}
}

Test(kube_list, pagination_and_selector)
{
	const struct kube_resource *cm;
	struct kube_list_options lo = {.page_size = 500};
	json_t *items = NULL, *it;
	char *rv = NULL;
	size_t i;

	create_many(1200);
	cm = find("", "ConfigMap");
	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	cr_assert_eq(kube_list(client, cm, "default", &lo, &items, &rv, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(json_array_size(items), 1200);
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 3);
	cr_assert_not_null(rv);
	cr_assert_gt(strlen(rv), 0);
	json_array_foreach(items, i, it)
	{
		cr_assert_str_eq(str_at(it, "kind", NULL), "ConfigMap");
		cr_assert_str_eq(str_at(it, "apiVersion", NULL), "v1");
	}
	cr_assert_str_eq(str_at(json_array_get(items, 0), "metadata", "name"),
			 "cm-0000");
	json_decref(items);
	free(rv);

	lo.label_selector = "half=yes";
	cr_assert_eq(kube_list(client, cm, "default", &lo, &items, NULL, &err),
		     0);
	cr_assert_eq(json_array_size(items), 600);
	json_array_foreach(items, i, it) cr_assert_str_eq(
		str_at(json_object_get(it, "metadata"), "labels", "half"),
		"yes");
	json_decref(items);

	lo.label_selector = "half notin (yes)";
	cr_assert_eq(kube_list(client, cm, "default", &lo, &items, NULL, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(json_array_size(items), 600);
	json_decref(items);
}

Test(kube_list, expired_continue_restarts_once)
{
	const struct kube_resource *cm;
	struct kube_list_options lo = {.page_size = 100};
	json_t *items = NULL;

	create_many(250);
	cm = find("", "ConfigMap");
	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	/* The first continue token is refused with 410 Expired. */
	cr_assert_eq(test_emu_faults(&emu, "verb=list,expire,count=1"), 0);
	cr_assert_eq(kube_list(client, cm, "default", &lo, &items, NULL, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(json_array_size(items), 250);
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 410), 1);
	/* Page 1, the refused page 2, then 3 pages of the restart. */
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 4);
	json_decref(items);

	/* Twice in a row: the error is reported, naming the resource. */
	cr_assert_eq(test_emu_faults(&emu, "verb=list,expire,count=2"), 0);
	cr_assert_lt(kube_list(client, cm, "default", &lo, &items, NULL, &err),
		     0);
	cr_assert_null(items);
	cr_assert(strstr(err_first(&err), "configmaps"), "%s", err_first(&err));
	cr_assert(strstr(err_first(&err), "410"), "%s", err_first(&err));
}

/* What kube_list_each() handed over: pages, items, restarts. */
struct pages_seen {
	size_t pages, items, again, most;
	int stop_after; /* pages; 0: never */
};

static int seen_page(json_t *items, bool again, void *ctx)
{
	struct pages_seen *s = ctx;

	if (again) {
		s->again++;
		s->items = 0; /* what earlier pages gave is forgotten */
	}
	s->pages++;
	s->items += json_array_size(items);
	if (json_array_size(items) > s->most)
		s->most = json_array_size(items);
	cr_assert_str_eq(str_at(json_array_get(items, 0), "kind", NULL),
			 "ConfigMap");
	return s->stop_after && (int)s->pages == s->stop_after ? 7 : 0;
}

Test(kube_list, each_page_in_turn)
{
	const struct kube_resource *cm;
	struct kube_list_options lo = {.page_size = 100};
	struct pages_seen s = {0};

	create_many(250);
	cm = find("", "ConfigMap");
	cr_assert_eq(kube_list_each(client, cm, "default", &lo, seen_page, &s,
				    &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(s.pages, 3);
	cr_assert_eq(s.items, 250);
	cr_assert_eq(s.most, 100); /* never more than a page at once */
	cr_assert_eq(s.again, 0);

	/* The callback stops it: its value is returned, nothing more read. */
	memset(&s, 0, sizeof(s));
	s.stop_after = 2;
	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	cr_assert_eq(kube_list_each(client, cm, "default", &lo, seen_page, &s,
				    &err),
		     7);
	cr_assert_eq(s.pages, 2);
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 2);

	/* An expired continue token: the list starts over, said so once. */
	memset(&s, 0, sizeof(s));
	cr_assert_eq(test_emu_faults(&emu, "verb=list,expire,count=1"), 0);
	cr_assert_eq(kube_list_each(client, cm, "default", &lo, seen_page, &s,
				    &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(s.again, 1);
	cr_assert_eq(s.items, 250);
	cr_assert_eq(s.pages, 4); /* page 1, then 3 of the restart */

	/* Twice in a row: the error names the resource and the 410. */
	err_reset(&err);
	cr_assert_eq(test_emu_faults(&emu, "verb=list,expire,count=2"), 0);
	cr_assert_lt(kube_list_each(client, cm, "default", &lo, seen_page, &s,
				    &err),
		     0);
	cr_assert(strstr(err_first(&err), "configmaps"), "%s", err_first(&err));
	cr_assert(strstr(err_first(&err), "410"), "%s", err_first(&err));
}

/* ------------------------------------------------------------------ */

TestSuite(kube_apply, .init = setup, .fini = teardown, .timeout = 60);

Test(kube_apply, create_update_noop)
{
	const struct kube_resource *cm = find("", "ConfigMap");
	json_t *a, *b, *c, *live;
	char *rv1;

	a = apply(cm, configmap("default", "web", "color", "blue"), MANAGER);
	rv1 = strdup(rv_of(a));
	cr_assert_str_eq(str_at(a, "data", "color"), "blue");
	/* The same apply again: nothing written, same resourceVersion. */
	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	b = apply(cm, configmap("default", "web", "color", "blue"), MANAGER);
	cr_assert_str_eq(rv_of(b), rv1);
	cr_assert_eq(test_emu_count(&emu, "patch", "configmaps", 200), 1);
	/* A change: new resourceVersion, new value stored. */
	c = apply(cm, configmap("default", "web", "color", "green"), MANAGER);
	cr_assert_str_neq(rv_of(c), rv1);
	cr_assert_eq(kube_get(client, cm, "default", "web", &live, &err), 0);
	cr_assert_str_eq(str_at(live, "data", "color"), "green");
	cr_assert_str_eq(
		str_at(json_array_get(json_object_get(
					      json_object_get(live, "metadata"),
					      "managedFields"),
				      0),
		       "manager", NULL),
		MANAGER);
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(live);
	free(rv1);
}

Test(kube_apply, conflict_force_dry_run)
{
	const struct kube_resource *cm = find("", "ConfigMap");
	struct kube_apply_options o = {.field_manager = "other"};
	json_t *obj, *live, *out = NULL;

	json_decref(apply(cm, configmap("default", "web", "color", "blue"),
			  MANAGER));
	obj = configmap("default", "web", "color", "red");
	cr_assert_eq(kube_apply(client, cm, obj, &o, &out, &err), ERR_EXISTS,
		     "%s", err_msg(&err));
	cr_assert_null(out);
	cr_assert(strstr(err_first(&err),
			 "Apply failed with 1 conflict: "
			 "conflict with \"test\": .data.color"),
		  "%s", err_first(&err));
	cr_assert(strstr(err_first(&err), "\"web\""), "%s", err_first(&err));
	cr_assert(strstr(err_first(&err), "(409 Conflict)"), "%s",
		  err_first(&err));
	err_reset(&err);

	/* Dry run with force: the answer shows red, the store keeps blue. */
	o.force = true;
	o.dry_run = true;
	cr_assert_eq(kube_apply(client, cm, obj, &o, &out, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(str_at(out, "data", "color"), "red");
	json_decref(out);
	cr_assert_eq(kube_get(client, cm, "default", "web", &live, &err), 0);
	cr_assert_str_eq(str_at(live, "data", "color"), "blue");
	json_decref(live);

	o.dry_run = false;
	cr_assert_eq(kube_apply(client, cm, obj, &o, NULL, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(kube_get(client, cm, "default", "web", &live, &err), 0);
	cr_assert_str_eq(str_at(live, "data", "color"), "red");
	json_decref(live);
	json_decref(obj);

	/* A dry-run create stores nothing. */
	o.dry_run = true;
	obj = configmap("default", "ghost", "k", "v");
	cr_assert_eq(kube_apply(client, cm, obj, &o, &out, &err), 0);
	cr_assert_str_eq(str_at(out, "metadata", "name"), "ghost");
	json_decref(out);
	json_decref(obj);
	cr_assert_eq(kube_get(client, cm, "default", "ghost", &live, &err),
		     ERR_NOTFOUND);
	cr_assert_null(live);
	cr_assert(strstr(err_first(&err), "configmaps \"ghost\" not found"),
		  "%s", err_first(&err));
}

Test(kube_apply, missing_namespace_refused)
{
	const struct kube_resource *cm = find("", "ConfigMap");
	struct kube_apply_options o = {.field_manager = MANAGER};
	json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1",
				"kind", "ConfigMap", "metadata", "name", "x");

	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	cr_assert_eq(kube_apply(client, cm, obj, &o, NULL, &err), ERR_INVALID);
	cr_assert_str_eq(err_first(&err),
			 "apply ConfigMap \"x\": no metadata.namespace");
	cr_assert_eq(test_emu_count(&emu, "patch", NULL, 0), 0);
	json_decref(obj);
}

/* ------------------------------------------------------------------ */

TestSuite(kube_delete, .init = setup, .fini = teardown, .timeout = 60);

Test(kube_delete, dry_run_then_gone)
{
	const struct kube_resource *cm = find("", "ConfigMap");
	struct kube_delete_options o = {.dry_run = true};
	json_t *live = NULL;

	apply_cm("default", "web");
	cr_assert_eq(kube_delete(client, cm, "default", "web", &o, &err), 0,
		     "%s", err_msg(&err));
	cr_assert_eq(kube_get(client, cm, "default", "web", &live, &err), 0);
	json_decref(live);

	o.dry_run = false;
	o.propagation = "Foreground";
	cr_assert_eq(kube_delete(client, cm, "default", "web", &o, &err), 0,
		     "%s", err_msg(&err));
	cr_assert_eq(kube_get(client, cm, "default", "web", &live, &err),
		     ERR_NOTFOUND);
	err_reset(&err);
	cr_assert_eq(kube_delete(client, cm, "default", "web", NULL, &err),
		     ERR_NOTFOUND);
	cr_assert_str_eq(err_first(&err),
			 "configmaps \"web\" not found (404 NotFound)");
}

Test(kube_delete, preconditions)
{
	const struct kube_resource *cm = find("", "ConfigMap");
	struct kube_delete_options o = {.uid = "not-the-uid", .dry_run = true};
	json_t *obj, *live = NULL;
	char *uid, *rv;

	obj = apply(cm, configmap("default", "web", "k", "v"), MANAGER);
	uid = strdup(str_at(obj, "metadata", "uid"));
	rv = strdup(rv_of(obj));
	json_decref(obj);

	/* A dry run checks the preconditions too. */
	cr_assert_eq(kube_delete(client, cm, "default", "web", &o, &err),
		     ERR_EXISTS, "%s", err_msg(&err));
	err_reset(&err);
	o.dry_run = false;
	cr_assert_eq(kube_delete(client, cm, "default", "web", &o, &err),
		     ERR_EXISTS, "%s", err_msg(&err));
	cr_assert(strstr(err_first(&err), "the UID in the precondition (not-the-uid) does not match"), "%s",
		  err_first(&err));
	cr_assert(strstr(err_first(&err), "(409 Conflict)"), "%s",
		  err_first(&err));
	err_reset(&err);
	o.uid = uid;
	o.resource_version = "1";
	cr_assert_eq(kube_delete(client, cm, "default", "web", &o, &err),
		     ERR_EXISTS, "%s", err_msg(&err));
	cr_assert(strstr(err_first(&err), "ResourceVersion"), "%s",
		  err_first(&err));
	cr_assert_eq(kube_get(client, cm, "default", "web", &live, &err), 0);
	json_decref(live);

	o.resource_version = rv;
	cr_assert_eq(kube_delete(client, cm, "default", "web", &o, &err), 0,
		     "%s", err_msg(&err));
	cr_assert_eq(kube_get(client, cm, "default", "web", &live, &err),
		     ERR_NOTFOUND);
	free(uid);
	free(rv);
}

/* ------------------------------------------------------------------ */

struct seen {
	char names[64][32];
	unsigned n;
	unsigned relists;
	size_t relist_size;
	unsigned bookmarks;
	char bookmark_rv[32];
	unsigned want; /* stop after this many named events */
	bool stop_on_bookmark;
	volatile bool relisted; /* for the writer thread */
};

static int on_event(const struct kube_watch_event *ev, void *ctx)
{
	struct seen *s = ctx;
	const char *name;

	if (!strcmp(ev->type, "RELIST")) {
		cr_assert(json_is_array(ev->object));
		s->relists++;
		s->relist_size = json_array_size(ev->object);
		s->relisted = true;
		return 0;
	}
	if (!strcmp(ev->type, "BOOKMARK")) {
		const char *rv = rv_of(ev->object);

		cr_assert_not_null(rv);
		snprintf(s->bookmark_rv, sizeof(s->bookmark_rv), "%s", rv);
		s->bookmarks++;
		return s->stop_on_bookmark ? 7 : 0;
	}
	name = str_at(ev->object, "metadata", "name");
	cr_assert_not_null(name);
	if (s->n < 64)
		snprintf(s->names[s->n++], sizeof(s->names[0]), "%s:%s",
			 ev->type, name);
	return s->n >= s->want ? 7 : 0;
}

/* The resourceVersion of the configmaps collection now. */
static char *list_rv(void)
{
	json_t *items = NULL;
	char *rv = NULL;

	cr_assert_eq(kube_list(client, find("", "ConfigMap"), "default", NULL,
			       &items, &rv, &err),
		     0);
	json_decref(items);
	return rv;
}

TestSuite(kube_watch, .fini = teardown, .timeout = 60);

Test(kube_watch, events_in_order, .init = setup)
{
	const struct kube_resource *cm = find("", "ConfigMap");
	struct kube_watch_options wo = {.bookmarks = true};
	struct seen s = {.want = 4};
	char *rv = list_rv();
	json_t *live;

	apply_cm("default", "a");
	apply_cm("default", "b");
	json_decref(
		apply(cm, configmap("default", "a", "k", "changed"), MANAGER));
	cr_assert_eq(kube_get(client, cm, "default", "b", &live, &err), 0);
	json_decref(live);
	cr_assert_eq(kube_delete(client, cm, "default", "b", NULL, &err), 0);
	wo.resource_version = rv;
	cr_assert_eq(kube_watch(client, cm, "default", &wo, on_event, &s, NULL,
				&err),
		     7, "%s", err_msg(&err));
	cr_assert_eq(s.n, 4);
	cr_assert_str_eq(s.names[0], "ADDED:a");
	cr_assert_str_eq(s.names[1], "ADDED:b");
	cr_assert_str_eq(s.names[2], "MODIFIED:a");
	cr_assert_str_eq(s.names[3], "DELETED:b");
	cr_assert_eq(s.relists, 0);
	free(rv);
}

struct writer {
	const struct kube_resource *cm;
	const char *prefix;
	unsigned count;
	long gap_ms;
	volatile bool *wait_for; /* start when it turns true; NULL: at once */
	const char *ns;		 /* NULL: "default" */
};


/*
 * Creates ConfigMaps from another thread (its own client: what another
 * writer in the cluster would do).
 */
static void *write_cms(void *arg)
{
	struct writer *w = arg;
	struct kube_client *c2 = NULL;
	struct kube_apply_options o = {.field_manager = MANAGER};
	struct err e = ERR_INIT;
	char name[32];
	unsigned i, waited = 0;

	while (w->wait_for && !*w->wait_for && waited++ < 500)
		clk_sleep_ms(20);
	if (kube_client_new(&c2, &cfg, NULL, &e) < 0)
		return NULL;
	for (i = 0; i < w->count; i++) {
		json_t *obj;

		clk_sleep_ms(w->gap_ms);
		snprintf(name, sizeof(name), "%s%u", w->prefix, i);
		obj = configmap(w->ns ? w->ns : "default", name, "k", "v");
		kube_apply(c2, w->cm, obj, &o, NULL, &e);
		json_decref(obj);
	}
	kube_client_free(c2);
	err_release(&e);
	return NULL;
}

/*
 * Watch "default" until `s` has seen enough (the callback's 7) while
 * `w` writes from its own thread; the writer is done on return.
 */
static void watch_while_writing(const struct kube_resource *cm,
				const struct kube_watch_options *wo,
				struct seen *s, struct writer *w)
{
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, write_cms, w), 0);
	cr_assert_eq(kube_watch(client, cm, "default", wo, on_event, s, NULL,
				&err),
		     7, "%s", err_msg(&err));
	pthread_join(t, NULL);
}

Test(kube_watch, lists_first_without_resource_version, .init = setup)
{
	const struct kube_resource *cm = find("", "ConfigMap");
	/* A short timeout brings the bookmark 2 s before it. */
	struct kube_watch_options wo = {.bookmarks = true, .timeout_s = 3};
	struct seen s = {.want = 1, .stop_on_bookmark = true};
	/* a write elsewhere moves the resource past the watch's list */
	struct writer w = {cm, "elsewhere", 1, 300, NULL, "kube-system"};

	apply_cm("default", "a");
	apply_cm("default", "b");
	watch_while_writing(cm, &wo, &s, &w);
	cr_assert_eq(s.relists, 1);
	cr_assert_eq(s.relist_size, 2);
	/* Existing objects came in the RELIST, not again as ADDED. */
	cr_assert_eq(s.n, 0);
	cr_assert_eq(s.bookmarks, 1);
}

static const char *const end_fast[] = {"--faults",
				       "verb=watch,watchEndAfter=300ms", NULL};

Test(kube_watch, resumes_after_server_ends_stream)
{
	const struct kube_resource *cm;
	struct kube_watch_options wo = {.bookmarks = false};
	struct writer w = {NULL, "w", 6, 250, NULL, NULL};
	struct seen s = {.want = 6};
	char *rv, want[32];
	unsigned i;

	start_with(end_fast);
	cm = find("", "ConfigMap");
	w.cm = cm;
	rv = list_rv();
	wo.resource_version = rv;
	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	watch_while_writing(cm, &wo, &s, &w);
	/* Every object once, in order: resumed where each stream ended. */
	cr_assert_eq(s.n, 6);
	for (i = 0; i < 6; i++) {
		snprintf(want, sizeof(want), "ADDED:w%u", i);
		cr_assert_str_eq(s.names[i], want);
	}
	cr_assert_eq(s.relists, 0);
	cr_assert_geq(test_emu_count(&emu, "watch", "configmaps", 200), 2);
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 0), 0);
	free(rv);
}

static const char *const expire_once[] = {"--faults",
					  "verb=watch,expire,count=1", NULL};

Test(kube_watch, expired_relists)
{
	const struct kube_resource *cm;
	struct kube_watch_options wo = {.bookmarks = true};
	struct seen s = {.want = 1};
	struct writer w = {NULL, "after", 1, 0, &s.relisted, NULL};
	char *rv;

	start_with(expire_once);
	cm = find("", "ConfigMap");
	w.cm = cm;
	apply_cm("default", "a");
	rv = list_rv();
	apply_cm("default", "b");
	apply_cm("default", "c");
	wo.resource_version = rv;
	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	watch_while_writing(cm, &wo, &s, &w);
	/* 410 on the first watch: the list (a, b, c), then new events. */
	cr_assert_eq(s.relists, 1);
	cr_assert_eq(s.relist_size, 3);
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(s.names[0], "ADDED:after0");
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 1);
	cr_assert_geq(test_emu_count(&emu, "watch", "configmaps", 0), 2);
	free(rv);
}

Test(kube_watch, bookmarks_and_stop, .init = setup)
{
	const struct kube_resource *cm = find("", "ConfigMap");
	/*
	 * A periodic bookmark comes a minute apart, or 2 s before the
	 * watch's timeout when that is sooner (the watch cache's rule).
	 */
	struct kube_watch_options wo = {.bookmarks = true, .timeout_s = 3};
	struct seen s = {.want = 100, .stop_on_bookmark = true};
	static volatile bool stop;
	char *rv = list_rv();

	/*
	 * It is sent only when the resource moved past the watch: a
	 * ConfigMap elsewhere moves it without an event for "default".
	 */
	apply_cm("kube-system", "elsewhere");
	wo.resource_version = rv;
	cr_assert_eq(kube_watch(client, cm, "default", &wo, on_event, &s, NULL,
				&err),
		     7, "%s", err_msg(&err));
	cr_assert_eq(s.bookmarks, 1);
	cr_assert_gt(strlen(s.bookmark_rv), 0);

	/* A stop flag already set: returns 0 without calling back. */
	stop = true;
	memset(&s, 0, sizeof(s));
	cr_assert_eq(kube_watch(client, cm, "default", &wo, on_event, &s, &stop,
				&err),
		     0);
	cr_assert_eq(s.n + s.bookmarks + s.relists, 0);
	free(rv);
}

static const char *const watch_503_twice[] = {
	"--faults", "verb=watch,code=503,count=2", NULL};

Test(kube_watch, reconnects_after_server_errors)
{
	const struct kube_resource *cm;
	struct kube_watch_options wo = {.bookmarks = false};
	struct seen s = {.want = 1};
	char *rv;

	start_with(watch_503_twice);
	cm = find("", "ConfigMap");
	rv = list_rv();
	apply_cm("default", "a");
	wo.resource_version = rv;
	cr_assert_eq(kube_watch(client, cm, "default", &wo, on_event, &s, NULL,
				&err),
		     7, "%s", err_msg(&err));
	cr_assert_str_eq(s.names[0], "ADDED:a");
	cr_assert_eq(test_emu_count(&emu, "watch", "configmaps", 503), 2);
	cr_assert_eq(test_emu_count(&emu, "watch", "configmaps", 200), 1);
	free(rv);
}

static const char *const watch_forbidden[] = {"--faults", "verb=watch,code=403",
					      NULL};

Test(kube_watch, refused_is_not_retried)
{
	const struct kube_resource *cm;
	struct kube_watch_options wo = {.resource_version = "1"};
	struct seen s = {.want = 1};

	start_with(watch_forbidden);
	cm = find("", "ConfigMap");
	cr_assert_eq(kube_watch(client, cm, "default", &wo, on_event, &s, NULL,
				&err),
		     ERR_INVALID);
	cr_assert(strstr(err_first(&err), "403"), "%s", err_first(&err));
	cr_assert(strstr(err_first(&err), "configmaps"), "%s", err_first(&err));
	cr_assert_eq(test_emu_count(&emu, "watch", "configmaps", 0), 1);
}

static volatile bool stop_later;

static void *set_stop(void *arg)
{
	(void)arg;
	clk_sleep_ms(300);
	stop_later = true;
	return NULL;
}

Test(kube_watch, stop_flag_on_a_quiet_stream, .init = setup)
{
	const struct kube_resource *cm = find("", "ConfigMap");
	struct kube_watch_options wo = {.bookmarks = false};
	struct seen s = {.want = 100};
	pthread_t t;
	char *rv = list_rv();

	wo.resource_version = rv;
	stop_later = false;
	cr_assert_eq(pthread_create(&t, NULL, set_stop, NULL), 0);
	cr_assert_eq(kube_watch(client, cm, "default", &wo, on_event, &s,
				&stop_later, &err),
		     0, "%s", err_msg(&err));
	pthread_join(t, NULL);
	cr_assert_eq(s.n, 0);
	free(rv);
}

static void *set_stop_after_5s(void *arg)
{
	(void)arg;
	clk_sleep_ms(5000);
	stop_later = true;
	return NULL;
}

/*
 * A quiet watch is one request for as long as the server keeps it open:
 * not reopened every few seconds to look at the stop flag (what the real
 * API server showed: a WATCH per type every 2 s of a quiet cluster).
 */
Test(kube_watch, a_quiet_stream_stays_open, .init = setup)
{
	const struct kube_resource *cm = find("", "ConfigMap");
	struct kube_watch_options wo = {.bookmarks = false};
	struct seen s = {.want = 100};
	pthread_t t;
	char *rv = list_rv();

	wo.resource_version = rv;
	stop_later = false;
	cr_assert_eq(test_emu_reset_stats(&emu), 0);
	cr_assert_eq(pthread_create(&t, NULL, set_stop_after_5s, NULL), 0);
	cr_assert_eq(kube_watch(client, cm, "default", &wo, on_event, &s,
				&stop_later, &err),
		     0, "%s", err_msg(&err));
	pthread_join(t, NULL);
	cr_assert_eq(s.n, 0);
	cr_assert_eq(test_emu_count(&emu, "watch", "configmaps", 0), 1,
		     "a quiet watch was reopened");
	free(rv);
}

/* ------------------------------------------------------------------ */

TestSuite(kube_event, .init = setup, .fini = teardown, .timeout = 60);

Test(kube_event, stored_as_kube_stores_it)
{
	const struct kube_resource *ev = find("events.k8s.io", "Event");
	json_t *obj, *items = NULL, *e, *ref;
	char note[2000];
	struct kube_event k = {0};
	regex_t re;

	obj = apply(find("", "ConfigMap"),
		    configmap("default", "web", "k", "v"), MANAGER);
	memset(note, 'x', sizeof(note) - 1);
	note[sizeof(note) - 1] = '\0';
	k.regarding = obj;
	k.type = "Warning";
	k.reason = "SyncFailed";
	k.action = "Sync";
	k.note = note;
	k.controller = "syncd.io/syncd";
	k.instance = "syncd-0";
	cr_assert_eq(kube_event_create(client, &k, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(kube_list(client, ev, "default", NULL, &items, NULL, &err),
		     0);
	cr_assert_eq(json_array_size(items), 1);
	e = json_array_get(items, 0);
	cr_assert_str_eq(str_at(e, "kind", NULL), "Event");
	cr_assert_str_eq(str_at(e, "apiVersion", NULL), "events.k8s.io/v1");
	cr_assert_eq(strncmp(str_at(e, "metadata", "name"), "web-", 4), 0);
	cr_assert_gt(strlen(str_at(e, "metadata", "name")), 4);
	cr_assert_str_eq(str_at(e, "type", NULL), "Warning");
	cr_assert_str_eq(str_at(e, "reason", NULL), "SyncFailed");
	cr_assert_str_eq(str_at(e, "action", NULL), "Sync");
	cr_assert_str_eq(str_at(e, "reportingController", NULL),
			 "syncd.io/syncd");
	cr_assert_str_eq(str_at(e, "reportingInstance", NULL), "syncd-0");
	cr_assert_eq(strlen(str_at(e, "note", NULL)), 1024);
	cr_assert_eq(regcomp(&re,
			     "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:"
			     "[0-9]{2}\\.[0-9]{6}Z$",
			     REG_EXTENDED | REG_NOSUB),
		     0);
	cr_assert_eq(regexec(&re, str_at(e, "eventTime", NULL), 0, NULL, 0), 0,
		     "%s", str_at(e, "eventTime", NULL));
	regfree(&re);
	ref = json_object_get(e, "regarding");
	cr_assert_str_eq(str_at(ref, "kind", NULL), "ConfigMap");
	cr_assert_str_eq(str_at(ref, "apiVersion", NULL), "v1");
	cr_assert_str_eq(str_at(ref, "name", NULL), "web");
	cr_assert_str_eq(str_at(ref, "namespace", NULL), "default");
	cr_assert_str_eq(str_at(ref, "uid", NULL),
			 str_at(obj, "metadata", "uid"));
	json_decref(items);
	json_decref(obj);
}
