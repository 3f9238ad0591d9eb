/*
 * The watch cache against a real kube-emu: what the cache holds after
 * the server's objects change, what the change callback was told and
 * how many LISTs /emu/stats counted. Waits poll a condition with a
 * deadline; nothing asserts on elapsed time.
 */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/kube.h"
#include "tests/helpers/emu.h"
#include "util/clock.h"

#define MANAGER "test"
#define WAIT_MS 20000L

static struct test_emu emu;
static struct kube_config cfg;
static struct kube_client *client;
static struct kube_discovery *disc;
static struct kube_watchcache *wc;
static struct err err = ERR_INIT;

/* What the change callback heard, in order. */
static pthread_mutex_t heard_lock = PTHREAD_MUTEX_INITIALIZER;
static char heard[256][32];
static char heard_rv[256][32]; /* "" for a re-list */
static unsigned nheard;

static void on_changed(const char *value, const char *rv, void *ctx)
{
	cr_assert_eq(ctx, &heard);
	pthread_mutex_lock(&heard_lock);
	if (nheard < 256) {
		snprintf(heard_rv[nheard], sizeof(heard_rv[0]), "%s",
			 rv ? rv : "");
		snprintf(heard[nheard++], sizeof(heard[0]), "%s", value);
	}
	pthread_mutex_unlock(&heard_lock);
}

/* The resourceVersion heard with the n-th report of `value` ("" none). */
static const char *heard_rv_of(const char *value, unsigned n)
{
	const char *rv = NULL;

	pthread_mutex_lock(&heard_lock);
	for (unsigned i = 0; i < nheard && !rv; i++)
		if (!strcmp(heard[i], value) && n-- == 0)
			rv = heard_rv[i];
	pthread_mutex_unlock(&heard_lock);
	return rv ? rv : "";
}

static unsigned heard_count(const char *value)
{
	unsigned i, n = 0;

	pthread_mutex_lock(&heard_lock);
	for (i = 0; i < nheard; i++)
		if (!value || !strcmp(heard[i], value))
			n++;
	pthread_mutex_unlock(&heard_lock);
	return n;
}

static bool keep_status; /* the next start_with() keeps status */

static void start_with(const char *const *args)
{
	struct kube_client_options opts = {.qps = 5000, .burst = 5000};
	struct kube_watchcache_options wo = {.changed = on_changed,
					     .ctx = &heard,
					     .keep_status = keep_status};

	nheard = 0;
	cr_assert_eq(test_emu_start(&emu, args), 0, "kube-emu did not start");
	cr_assert_eq(test_emu_config(&emu, &cfg), 0);
	cr_assert_eq(kube_client_new(&client, &cfg, &opts, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(kube_discovery_new(&disc, client, &err), 0);
	cr_assert_eq(kube_watchcache_new(&wc, client, &wo, &err), 0);
}

static void setup(void)
{
	keep_status = false;
	start_with(NULL);
}

/* As the controller has it: status kept, its changes reported. */
static void setup_keep_status(void)
{
	keep_status = true;
	start_with(NULL);
}

static void teardown(void)
{
	kube_watchcache_free(wc);
	wc = NULL;
	kube_discovery_free(disc);
	disc = NULL;
	kube_client_free(client);
	client = NULL;
	kube_config_release(&cfg);
	test_emu_stop(&emu);
	err_release(&err);
}

static const struct kube_resource *find(const char *kind)
{
	const struct kube_resource *r = NULL;

	cr_assert_eq(kube_discovery_find(disc, "", NULL, kind, &r, &err), 0,
		     "%s", err_msg(&err));
	return r;
}

static void apply(const char *kind, json_t *obj)
{
	struct kube_apply_options o = {.field_manager = MANAGER};

	cr_assert_eq(kube_apply(client, find(kind), obj, &o, NULL, &err), 0,
		     "%s", err_msg(&err));
	json_decref(obj);
}

/* A ConfigMap with data k=value, labelled part-of=app unless app NULL. */
static void apply_cm(const char *ns, const char *name, const char *value,
		     const char *app)
{
	json_t *obj =
		json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion",
			  "v1", "kind", "ConfigMap", "metadata", "name", name,
			  "namespace", ns, "data", "k", value);

	if (app)
		json_object_set_new(
			json_object_get(obj, "metadata"), "labels",
			json_pack("{s:s}", KUBE_WATCHCACHE_PART_OF_LABEL, app));
	apply("ConfigMap", obj);
}

static void apply_ns(const char *name)
{
	apply("Namespace",
	      json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
			"Namespace", "metadata", "name", name));
}

static void delete_cm(const char *ns, const char *name)
{
	cr_assert_eq(
		kube_delete(client, find("ConfigMap"), ns, name, NULL, &err), 0,
		"%s", err_msg(&err));
}

static long now_ms(void)
{
	return (long)clk_mono_ms();
}


static void wait_synced(const char *kind, const char *ns)
{
	long deadline = now_ms() + WAIT_MS;

	while (!kube_watchcache_synced(wc, find(kind), ns, NULL) &&
	       now_ms() < deadline)
		clk_sleep_ms(20);
	cr_assert(kube_watchcache_synced(wc, find(kind), ns, NULL),
		  "%s in %s never synced", kind, ns ? ns : "all");
}

/* The cached object ns/name of kind (new reference), or NULL. */
static json_t *cached(const char *kind, const char *ns, const char *name)
{
	json_t *items = NULL, *obj, *found = NULL;
	size_t i;

	cr_assert_eq(kube_watchcache_list(wc, find(kind), ns, NULL, &items, &err), 0,
		     "%s", err_msg(&err));
	json_array_foreach(items, i, obj)
	{
		json_t *md = json_object_get(obj, "metadata");

		if (!strcmp(json_string_value(json_object_get(md, "name")),
			    name))
			found = json_incref(obj);
	}
	json_decref(items);
	return found;
}

static size_t cached_count(const char *kind, const char *ns)
{
	json_t *items = NULL;
	size_t n;

	cr_assert_eq(kube_watchcache_list(wc, find(kind), ns, NULL, &items, &err), 0,
		     "%s", err_msg(&err));
	n = json_array_size(items);
	json_decref(items);
	return n;
}

/* data.k of the cached ConfigMap, "" when absent (static storage). */
static const char *cached_value(const char *ns, const char *name)
{
	static char v[64];
	json_t *obj = cached("ConfigMap", ns, name);
	const char *s = json_string_value(
		json_object_get(json_object_get(obj, "data"), "k"));

	snprintf(v, sizeof(v), "%s", s ? s : "");
	json_decref(obj);
	return v;
}

/* Poll until the cached value of ns/name is `want` ("" for absent). */
static void wait_value(const char *ns, const char *name, const char *want)
{
	long deadline = now_ms() + WAIT_MS;

	while (strcmp(cached_value(ns, name), want) && now_ms() < deadline)
		clk_sleep_ms(20);
	cr_assert_str_eq(cached_value(ns, name), want, "%s/%s", ns, name);
}

static void wait_heard(const char *value, unsigned n)
{
	long deadline = now_ms() + WAIT_MS;

	while (heard_count(value) < n && now_ms() < deadline)
		clk_sleep_ms(20);
	cr_assert_geq(heard_count(value), n, "%s", value);
}

TestSuite(watchcache, .fini = teardown, .timeout = 90);

Test(watchcache, initial_sync_and_events, .init = setup)
{
	const struct kube_resource *cm = find("ConfigMap");
	json_t *items = NULL, *obj;

	apply_cm("default", "a", "1", "app1");
	apply_cm("default", "b", "1", NULL);
	cr_assert_eq(kube_watchcache_list(wc, cm, "default", NULL, &items, &err),
		     ERR_NOTFOUND);
	cr_assert_eq(kube_watchcache_watch(wc, cm, "default", NULL, &err), 0, "%s",
		     err_msg(&err));
	wait_synced("ConfigMap", "default");
	cr_assert_eq(cached_count("ConfigMap", "default"), 2);
	cr_assert_str_eq(cached_value("default", "a"), "1");
	cr_assert_str_eq(cached_value("default", "b"), "1");
	/* managedFields stay: the diff needs them. */
	obj = cached("ConfigMap", "default", "a");
	cr_assert(json_array_size(json_object_get(
			  json_object_get(obj, "metadata"), "managedFields")) >
		  0);
	json_decref(obj);
	/* The first list reports the labelled object once. */
	wait_heard("app1", 1);
	cr_assert_eq(heard_count("app1"), 1);
	cr_assert_eq(heard_count(NULL), 1);

	apply_cm("default", "a", "2", "app1"); /* MODIFIED */
	apply_cm("default", "c", "1", "app2"); /* ADDED */
	delete_cm("default", "b");	       /* DELETED */
	wait_value("default", "a", "2");
	wait_value("default", "c", "1");
	wait_value("default", "b", "");
	cr_assert_eq(cached_count("ConfigMap", "default"), 2);
	wait_heard("app1", 2);
	wait_heard("app2", 1);
	/* An event names the version it carries: a writer knows its echo. */
	obj = cached("ConfigMap", "default", "a");
	cr_assert_str_eq(heard_rv_of("app1", 1),
			 json_string_value(json_object_get(
				 json_object_get(obj, "metadata"),
				 "resourceVersion")));
	json_decref(obj);

	delete_cm("default", "c");
	wait_value("default", "c", "");
	wait_heard("app2", 2);
	/* b carried no label: nothing else was reported. */
	cr_assert_eq(heard_count(NULL), 4);
}

/* The names of the objects of app `value` in the cache, sorted, joined. */
static const char *part_of_names(const char *value)
{
	static char names[256];
	json_t *items = NULL, *obj;
	size_t i, len = 0;

	cr_assert_eq(kube_watchcache_list_part_of(wc, find("ConfigMap"),
						  "default", NULL, value, NULL,
						  &items, &err),
		     0, "%s", err_msg(&err));
	names[0] = '\0';
	json_array_foreach(items, i, obj)
	{
		const char *n = json_string_value(json_object_get(
			json_object_get(obj, "metadata"), "name"));

		len += (size_t)snprintf(names + len, sizeof(names) - len,
					"%s%s", len ? "," : "", n);
		cr_assert_lt(len, sizeof(names));
	}
	json_decref(items);
	return names;
}

/*
 * An object whose app label changes leaves its old app's objects for the
 * new one's; both apps hear of it, and it is stored once.
 */
Test(watchcache, an_object_moved_to_another_app_is_found_there,
     .init = setup)
{
	const struct kube_resource *cm = find("ConfigMap");

	apply_cm("default", "a", "1", "app1");
	apply_cm("default", "b", "1", "app1");
	cr_assert_eq(kube_watchcache_watch(wc, cm, "default", NULL, &err), 0,
		     "%s", err_msg(&err));
	wait_synced("ConfigMap", "default");
	cr_assert_str_eq(part_of_names("app1"), "a,b");
	wait_heard("app1", 1);

	apply_cm("default", "a", "2", "app2");
	wait_value("default", "a", "2");
	wait_heard("app2", 1);
	wait_heard("app1", 2); /* the app it left hears too */
	cr_assert_str_eq(part_of_names("app1"), "b");
	cr_assert_str_eq(part_of_names("app2"), "a");
	cr_assert_eq(cached_count("ConfigMap", "default"), 2);

	/* Without a label: in no app's objects, still cached. */
	apply_cm("default", "a", "3", NULL);
	wait_value("default", "a", "3");
	wait_heard("app2", 2);
	cr_assert_str_eq(part_of_names("app2"), "");
	cr_assert_eq(cached_count("ConfigMap", "default"), 2);

	/* Deleted from where it is, the last of its bucket. */
	delete_cm("default", "b");
	wait_value("default", "b", "");
	wait_heard("app1", 3);
	cr_assert_str_eq(part_of_names("app1"), "");
	cr_assert_eq(cached_count("ConfigMap", "default"), 1);
}

/* Objects are stored deflated: what comes back is what was stored. */
Test(watchcache, a_large_object_comes_back_whole, .init = setup)
{
	const struct kube_resource *cm = find("ConfigMap");
	size_t n = 200000;
	char *big = malloc(n + 1);
	const char *got;
	json_t *obj;
	unsigned x = 12345;

	cr_assert_not_null(big);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u; /* varied: it deflates little */
		big[i] = "0123456789abcdef\"\\ \t"[(x >> 16) % 20];
	}
	big[n] = '\0';
	apply_cm("default", "big", big, "app1");
	apply_cm("default", "small", "", "app1");
	cr_assert_eq(kube_watchcache_watch(wc, cm, "default", NULL, &err), 0,
		     "%s", err_msg(&err));
	wait_synced("ConfigMap", "default");
	obj = cached("ConfigMap", "default", "big");
	got = json_string_value(json_object_get(json_object_get(obj, "data"),
						"k"));
	cr_assert_not_null(got);
	cr_assert_eq(strlen(got), n);
	cr_assert(!memcmp(got, big, n), "the value came back changed");
	json_decref(obj);
	cr_assert_str_eq(cached_value("default", "small"), "");
	free(big);
}

Test(watchcache, callback_only_for_labelled_objects, .init = setup)
{
	const struct kube_resource *cm = find("ConfigMap");

	cr_assert_eq(kube_watchcache_watch(wc, cm, "default", NULL, &err), 0);
	wait_synced("ConfigMap", "default");
	cr_assert_eq(heard_count(NULL), 0);
	apply_cm("default", "plain", "1", NULL);
	apply_cm("default", "plain", "2", NULL);
	apply_cm("default", "owned", "1", "shop");
	/* Events of one watch arrive in order: plain's came before. */
	wait_value("default", "owned", "1");
	wait_heard("shop", 1);
	cr_assert_str_eq(cached_value("default", "plain"), "2");
	cr_assert_eq(heard_count(NULL), 1);
	cr_assert_str_eq(heard[0], "shop");

	/* Moving an object to another app reports both apps. */
	apply_cm("default", "owned", "2", "shop2");
	wait_value("default", "owned", "2");
	wait_heard("shop2", 1);
	cr_assert_eq(heard_count("shop"), 2);
}

Test(watchcache, status_dropped, .init = setup)
{
	const struct kube_resource *ns = find("Namespace");
	json_t *live = NULL, *obj = NULL;
	long deadline;

	apply_ns("team-a");
	cr_assert_eq(kube_get(client, ns, NULL, "team-a", &live, &err), 0);
	cr_assert_not_null(json_object_get(live, "status"),
			   "the server sets a namespace's status");
	cr_assert_eq(kube_watchcache_watch(wc, ns, NULL, NULL, &err), 0);
	wait_synced("Namespace", NULL);
	obj = cached("Namespace", NULL, "team-a");
	cr_assert_not_null(obj);
	cr_assert_null(json_object_get(obj, "status"));
	/* Everything else is the live object as it is. */
	json_object_del(live, "status");
	cr_assert(json_equal(obj, live));
	json_decref(obj);

	/* Also for objects that arrive by watch event. */
	apply_ns("team-b");
	deadline = now_ms() + WAIT_MS;
	while (!(obj = cached("Namespace", NULL, "team-b")) &&
	       now_ms() < deadline)
		clk_sleep_ms(20);
	cr_assert_not_null(obj);
	cr_assert_null(json_object_get(obj, "status"));
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(obj, "metadata"), "name")),
			 "team-b");
	json_decref(obj);
	json_decref(live);
}

static const char *const end_fast[] = {"--faults",
				       "verb=watch,watchEndAfter=300ms", NULL};

Test(watchcache, resumes_without_relist)
{
	char name[16];
	unsigned i;

	start_with(end_fast);
	cr_assert_eq(
		kube_watchcache_watch(wc, find("ConfigMap"), "default", NULL, &err),
		0);
	wait_synced("ConfigMap", "default");
	/* Writes spread over several 300 ms streams. */
	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "w%u", i);
		apply_cm("default", name, "1", "app");
		clk_sleep_ms(200);
	}
	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "w%u", i);
		wait_value("default", name, "1");
	}
	wait_heard("app", 6);
	/* Resumed where each stream ended: every object reported once. */
	cr_assert_eq(heard_count("app"), 6);
	cr_assert_eq(cached_count("ConfigMap", "default"), 6);
	cr_assert_geq(test_emu_count(&emu, "watch", "configmaps", 200), 2);
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 0), 1);
}

static const char *const expire_once[] = {"--faults",
					  "verb=watch,expire,count=1", NULL};

Test(watchcache, relists_after_expired)
{
	start_with(expire_once);
	apply_cm("default", "a", "1", "app");
	cr_assert_eq(
		kube_watchcache_watch(wc, find("ConfigMap"), "default", NULL, &err),
		0);
	wait_synced("ConfigMap", "default");
	apply_cm("default", "b", "1", "app");
	wait_value("default", "b", "1");
	cr_assert_str_eq(cached_value("default", "a"), "1");
	cr_assert_eq(cached_count("ConfigMap", "default"), 2);
	/* The first watch got 410: listed once more, then watched. */
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 2);
	cr_assert_geq(test_emu_count(&emu, "watch", "configmaps", 0), 2);
	/* The re-list found nothing new about a: reported once. */
	wait_heard("app", 2);
	cr_assert_eq(heard_count("app"), 2);
}

Test(watchcache, stop_while_idle, .init = setup)
{
	const struct kube_resource *cm = find("ConfigMap");

	apply_cm("default", "a", "1", NULL);
	cr_assert_eq(kube_watchcache_watch(wc, cm, "default", NULL, &err), 0);
	wait_synced("ConfigMap", "default");
	/* The suite's timeout bounds this: a quiet stream must notice. */
	kube_watchcache_stop(wc);
	kube_watchcache_stop(wc);
	/* The last state stays readable; no new watch starts. */
	cr_assert_str_eq(cached_value("default", "a"), "1");
	cr_assert_eq(kube_watchcache_watch(wc, cm, "kube-system", NULL, &err),
		     ERR_INVALID);
}

Test(watchcache, two_namespaces, .init = setup)
{
	const struct kube_resource *cm = find("ConfigMap");

	apply_ns("one");
	apply_ns("two");
	apply_cm("one", "x", "1", "app-one");
	apply_cm("two", "x", "2", "app-two");
	apply_cm("two", "y", "2", NULL);
	cr_assert_eq(kube_watchcache_watch(wc, cm, "one", NULL, &err), 0);
	cr_assert_eq(kube_watchcache_watch(wc, cm, "two", NULL, &err), 0);
	/* Once per (resource, namespace, selector). */
	cr_assert_eq(kube_watchcache_watch(wc, cm, "two", "", &err), 0);
	wait_synced("ConfigMap", "one");
	wait_synced("ConfigMap", "two");
	cr_assert_eq(cached_count("ConfigMap", "one"), 1);
	cr_assert_eq(cached_count("ConfigMap", "two"), 2);
	cr_assert_str_eq(cached_value("one", "x"), "1");
	cr_assert_str_eq(cached_value("two", "x"), "2");
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 0), 2);

	apply_cm("two", "x", "3", "app-two");
	wait_value("two", "x", "3");
	cr_assert_str_eq(cached_value("one", "x"), "1");
	wait_heard("app-two", 2);
	wait_heard("app-one", 1);
	cr_assert_eq(heard_count("app-one"), 1);
}

Test(watchcache, label_selector_is_its_own_watch, .init = setup)
{
	const struct kube_resource *cm = find("ConfigMap");
	json_t *items = NULL;

	apply_cm("default", "a", "1", "app");
	apply_cm("default", "b", "1", NULL);
	cr_assert_eq(kube_watchcache_watch(wc, cm, "default",
				      KUBE_WATCHCACHE_PART_OF_LABEL, &err),
		     0);
	cr_assert_eq(kube_watchcache_watch(wc, cm, "default", NULL, &err), 0);
	wait_synced("ConfigMap", "default");
	cr_assert_eq(cached_count("ConfigMap", "default"), 2);
	{
		long deadline = now_ms() + WAIT_MS;

		while (!kube_watchcache_synced(wc, cm, "default",
					  KUBE_WATCHCACHE_PART_OF_LABEL) &&
		       now_ms() < deadline)
			clk_sleep_ms(20);
	}
	cr_assert_eq(kube_watchcache_list(wc, cm, "default",
				     KUBE_WATCHCACHE_PART_OF_LABEL, &items, &err),
		     0);
	cr_assert_eq(json_array_size(items), 1);
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(json_array_get(items, 0), "metadata"),
			"name")),
		"a");
	json_decref(items);
}

Test(watchcache, a_large_list_is_stored_page_by_page, .init = setup)
{
	const struct kube_resource *cm = find("ConfigMap");
	json_t *items = NULL;
	char name[32];

	for (int i = 0; i < 1100; i++) {
		snprintf(name, sizeof(name), "cm-%04d", i);
		apply_cm("default", name, "v", i % 2 ? "odd" : "even");
	}
	test_emu_reset_stats(&emu);
	cr_assert_eq(kube_watchcache_watch(wc, cm, NULL, KUBE_WATCHCACHE_PART_OF_LABEL,
				      &err),
		     0, "%s", err_msg(&err));
	{
		long deadline = now_ms() + WAIT_MS;

		while (!kube_watchcache_synced(wc, cm, NULL,
					  KUBE_WATCHCACHE_PART_OF_LABEL) &&
		       now_ms() < deadline)
			clk_sleep_ms(20);
	}
	/* Three pages of at most 500: never one list of everything. */
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 3);
	cr_assert_eq(kube_watchcache_list_part_of(wc, cm, NULL,
					     KUBE_WATCHCACHE_PART_OF_LABEL, "odd",
					     NULL, &items, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(json_array_size(items), 550);
	json_decref(items);
	/* One namespace of a watch of every namespace. */
	cr_assert_eq(kube_watchcache_list_part_of(wc, cm, NULL,
					     KUBE_WATCHCACHE_PART_OF_LABEL, "even",
					     "default", &items, &err),
		     0);
	cr_assert_eq(json_array_size(items), 550);
	json_decref(items);
	cr_assert_eq(kube_watchcache_list_part_of(wc, cm, NULL,
					     KUBE_WATCHCACHE_PART_OF_LABEL, "even",
					     "other", &items, &err),
		     0);
	cr_assert_eq(json_array_size(items), 0);
	json_decref(items);
}

/*
 * The first watch waits, then expires: what changed meanwhile is learnt
 * from the re-list, which must forget what it no longer lists.
 */
static const char *const expire_late[] = {
	"--faults", "verb=watch,expire,latency=1500ms,count=1", NULL};

Test(watchcache, a_relist_forgets_what_it_no_longer_lists)
{
	start_with(expire_late);
	apply_cm("default", "a", "1", "app1");
	apply_cm("default", "b", "1", "app2");
	cr_assert_eq(kube_watchcache_watch(wc, find("ConfigMap"), "default",
					   NULL, &err),
		     0, "%s", err_msg(&err));
	wait_synced("ConfigMap", "default");
	cr_assert_eq(cached_count("ConfigMap", "default"), 2);
	/* While the first watch waits for its 410. */
	delete_cm("default", "b");
	apply_cm("default", "c", "1", "app1");
	wait_value("default", "c", "1");
	wait_value("default", "b", "");
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 200), 2,
		     "the change was not learnt from the re-list");
	cr_assert_eq(cached_count("ConfigMap", "default"), 2);
	cr_assert_str_eq(part_of_names("app1"), "a,c");
	cr_assert_str_eq(part_of_names("app2"), "");
	wait_heard("app2", 2); /* listed, then forgotten */
}

static const char *const refuse_lists[] = {
	"--faults", "verb=list,resource=configmaps,code=403", NULL};

Test(watchcache, a_refused_list_stops_the_watch)
{
	const struct kube_resource *cm;

	start_with(refuse_lists);
	cm = find("ConfigMap");
	cr_assert_eq(kube_watchcache_watch(wc, cm, NULL, NULL, &err), 0);
	{
		long deadline = now_ms() + WAIT_MS;

		while (!kube_watchcache_refused(wc, cm, NULL, NULL) &&
		       now_ms() < deadline)
			clk_sleep_ms(20);
	}
	cr_assert(kube_watchcache_refused(wc, cm, NULL, NULL));
	cr_assert_not(kube_watchcache_synced(wc, cm, NULL, NULL));
	/* Not tried again: the owner watches narrower instead. */
	clk_sleep_ms(1500);
	cr_assert_eq(test_emu_count(&emu, "list", "configmaps", 403), 1);
}

/*
 * A namespaced role refuses the list of every namespace; the owner then
 * watches each namespace. The refused watch never syncs, and must not
 * keep the cache from saying it is synced (readiness of a namespaced
 * syncd on the real server hung on it).
 */
Test(watchcache, a_refused_watch_does_not_count_for_all_synced)
{
	const struct kube_resource *cm, *ns;
	long deadline;

	start_with(refuse_lists);
	cm = find("ConfigMap");
	ns = find("Namespace");
	cr_assert_eq(kube_watchcache_watch(wc, ns, NULL, NULL, &err), 0);
	cr_assert_eq(kube_watchcache_watch(wc, cm, NULL, NULL, &err), 0);
	deadline = now_ms() + WAIT_MS;
	while (!(kube_watchcache_refused(wc, cm, NULL, NULL) &&
		 kube_watchcache_synced(wc, ns, NULL, NULL)) &&
	       now_ms() < deadline)
		clk_sleep_ms(20);
	cr_assert(kube_watchcache_refused(wc, cm, NULL, NULL));
	cr_assert(kube_watchcache_synced(wc, ns, NULL, NULL));
	cr_assert(kube_watchcache_all_synced(wc),
		  "the refused watch holds back all_synced");
}

/* The resourceVersion of the cached Deployment ns/name ("" absent). */
static const char *cached_deploy_rv(const struct kube_resource *d,
				    const char *name)
{
	static char rv[32];
	json_t *items = NULL, *obj;
	size_t i;

	rv[0] = '\0';
	cr_assert_eq(kube_watchcache_list(wc, d, "default", NULL, &items, &err), 0,
		     "%s", err_msg(&err));
	json_array_foreach(items, i, obj)
	{
		json_t *md = json_object_get(obj, "metadata");

		if (!strcmp(json_string_value(json_object_get(md, "name")),
			    name))
			snprintf(rv, sizeof(rv), "%s",
				 json_string_value(json_object_get(
					 md, "resourceVersion")));
	}
	json_decref(items);
	return rv;
}

/* PATCH (merge) `body` into default/web or its subresource `sub`. */
static char *patch_web(const char *sub, const char *body)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	char path[256], *rv;

	snprintf(path, sizeof(path),
		 "/apis/apps/v1/namespaces/default/deployments/web%s%s"
		 "?fieldManager=kube-controller-manager",
		 sub ? "/" : "", sub ? sub : "");
	cr_assert_eq(kube_request(client, "PATCH", path,
				  "application/merge-patch+json", body,
				  strlen(body), &resp, &err),
		     0, "%s", err_msg(&err));
	rv = strdup(json_string_value(json_object_get(
		json_object_get(resp.json, "metadata"), "resourceVersion")));
	kube_response_release(&resp);
	return rv;
}

/*
 * Deployment default/web of app "shop", applied and watched, its ADDED
 * heard: the Deployments resource.
 */
static const struct kube_resource *watched_web(void)
{
	const struct kube_resource *d = NULL;
	json_t *obj;

	cr_assert_eq(kube_discovery_find(disc, "apps", NULL, "Deployment", &d,
					 &err),
		     0, "%s", err_msg(&err));
	obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:i, s:{s:{s:s}},"
			" s:{s:{s:{s:s}}, s:{s:[{s:s, s:s}]}}}}",
			"apiVersion", "apps/v1", "kind", "Deployment",
			"metadata", "name", "web", "namespace", "default",
			"labels", KUBE_WATCHCACHE_PART_OF_LABEL, "shop", "spec",
			"replicas", 1, "selector", "matchLabels", "app", "web",
			"template", "metadata", "labels", "app", "web", "spec",
			"containers", "name", "web", "image", "nginx:1.27");
	cr_assert_not_null(obj);
	cr_assert_eq(kube_apply(client, d, obj,
				&(struct kube_apply_options){MANAGER, 0, 0},
				NULL, &err),
		     0, "%s", err_msg(&err));
	json_decref(obj);
	cr_assert_eq(kube_watchcache_watch(wc, d, "default", NULL, &err), 0);
	wait_heard("shop", 1);
	return d;
}

/*
 * Controllers write the status of Deployments and HPAs many times a
 * minute; none of it is compared, so none of it runs a pass.
 */
Test(watchcache, a_status_write_is_stored_not_reported, .init = setup)
{
	const struct kube_resource *d = watched_web();
	char *rv;
	long deadline;


	/* The status write reaches the cache... */
	rv = patch_web("status",
		       "{\"status\":{\"observedGeneration\":1,"
		       "\"replicas\":1,\"updatedReplicas\":1}}");
	deadline = now_ms() + WAIT_MS;
	while (strcmp(cached_deploy_rv(d, "web"), rv) && now_ms() < deadline)
		clk_sleep_ms(20);
	cr_assert_str_eq(cached_deploy_rv(d, "web"), rv);
	free(rv);
	/* ...and a change of the object itself is reported, after it. */
	free(patch_web(NULL, "{\"metadata\":{\"annotations\":"
			     "{\"changed\":\"yes\"}}}"));
	wait_heard("shop", 2);
	clk_sleep_ms(200);
	cr_assert_eq(heard_count("shop"), 2,
		     "the status write was reported as a change");
}

/*
 * The controller's cache keeps status (health reads it) and reports a
 * status write as a change; a write that changes nothing is not.
 */
Test(watchcache, kept_status_is_stored_and_reported,
     .init = setup_keep_status)
{
	const struct kube_resource *d;
	json_t *obj;
	char *rv;
	long deadline;

	d = watched_web();

	rv = patch_web("status",
		       "{\"status\":{\"observedGeneration\":1,"
		       "\"replicas\":1,\"updatedReplicas\":1}}");
	wait_heard("shop", 2);
	deadline = now_ms() + WAIT_MS;
	while (strcmp(cached_deploy_rv(d, "web"), rv) && now_ms() < deadline)
		clk_sleep_ms(20);
	cr_assert_str_eq(cached_deploy_rv(d, "web"), rv);
	free(rv);
	cr_assert_eq(kube_watchcache_list(wc, d, "default", NULL, &obj, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(json_array_get(obj, 0), "status"),
			     "updatedReplicas")),
		     1, "the cache keeps status");
	json_decref(obj);
}
