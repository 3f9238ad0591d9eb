/*
 * Unit tests of kube-emu's watches without HTTP: the initial ADDED
 * events, live events in order, replay from the history, 410 Expired,
 * selectors, bookmarks, timeouts and shutdown.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

static struct emu_store st;

static void setup(void)
{
	cr_assert_eq(emu_store_init(&st), 0);
}

static void teardown(void)
{
	emu_store_release(&st);
}

TestSuite(watch, .init = setup, .fini = teardown);

static const struct emu_resource *configmaps(void)
{
	return emu_resource_find("", "v1", "configmaps");
}

/* Create ConfigMap `name` in default with label app=APP; its rv. */
static unsigned long long create_cm(const char *name, const char *app)
{
	json_t *in = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}}", "apiVersion",
			       "v1", "kind", "ConfigMap", "metadata", "name",
			       name, "labels", "app", app);
	json_t *out = NULL;
	unsigned long long rv;

	cr_assert_eq(emu_store_create(&st, configmaps(), "default", in, NULL,
				      false, &out),
		     201);
	rv = strtoull(
		json_string_value(json_object_get(
			json_object_get(out, "metadata"), "resourceVersion")),
		NULL, 10);
	json_decref(in);
	json_decref(out);
	return rv;
}

static void update_cm(const char *name, const char *app)
{
	json_t *in =
		json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion",
			  "v1", "kind", "ConfigMap", "metadata", "name", name,
			  "labels", "app", app, "data", "k", "v");
	json_t *out = NULL;

	cr_assert_eq(emu_store_update(&st, configmaps(), "default", name, NULL,
				      NULL, in, false, &out),
		     200);
	json_decref(in);
	json_decref(out);
}

static void delete_cm(const char *name)
{
	json_t *out = NULL;

	cr_assert_eq(emu_store_delete(&st, configmaps(), "default", name, false,
				      &out),
		     200);
	json_decref(out);
}

static struct emu_watch *open_watch(const struct emu_watch_options *o)
{
	struct emu_watch *w = NULL;
	json_t *status = NULL;

	cr_assert_eq(emu_watch_open(&st, configmaps(), o, &w, &status), 0);
	cr_assert_null(status);
	cr_assert_not_null(w);
	return w;
}

/*
 * Read what is queued now as "TYPE name" lines ("TYPE" alone when the
 * object has no name); *ended when the stream is over.
 */
static void drain(struct emu_watch *w, struct buf *got, bool *ended)
{
	struct buf raw = BUF_INIT;
	char *line, *save = NULL;
	json_t *ev, *obj;
	const char *name;
	int r;

	*ended = false;
	while ((r = emu_watch_next(w, &raw, 0)) > 0)
		;
	*ended = r < 0;
	for (line = strtok_r(raw.ptr, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		ev = json_loads(line, 0, NULL);
		cr_assert_not_null(ev, "not JSON: %s", line);
		obj = json_object_get(ev, "object");
		cr_assert_not_null(json_object_get(obj, "kind"), "%s", line);
		cr_assert_not_null(json_object_get(obj, "apiVersion"), "%s",
				   line);
		name = json_string_value(json_object_get(
			json_object_get(obj, "metadata"), "name"));
		buf_addf(got, "%s%s%s;",
			 json_string_value(json_object_get(ev, "type")),
			 name ? " " : "", name ? name : "");
		json_decref(ev);
	}
	buf_release(&raw);
}

Test(watch, added_first_then_changes_in_order)
{
	struct emu_watch_options o = {.ns = "default"};
	struct emu_watch *w;
	struct buf got = BUF_INIT;
	bool ended;

	create_cm("a", "web");
	w = open_watch(&o);
	create_cm("b", "web");
	update_cm("b", "web");
	delete_cm("a");
	drain(w, &got, &ended);
	cr_assert_str_eq(buf_cstr(&got),
			 "ADDED a;ADDED b;MODIFIED b;DELETED a;");
	cr_assert_not(ended);
	emu_watch_free(w);
	buf_release(&got);
}

Test(watch, replays_history_after_resource_version)
{
	struct emu_watch_options o = {0};
	struct emu_watch *w;
	struct buf got = BUF_INIT;
	char rv[24];
	bool ended;

	create_cm("a", "web");
	snprintf(rv, sizeof(rv), "%llu", create_cm("b", "web"));
	update_cm("a", "web");
	delete_cm("b");
	o.rv = rv;
	w = open_watch(&o);
	drain(w, &got, &ended);
	cr_assert_str_eq(buf_cstr(&got), "MODIFIED a;DELETED b;");
	cr_assert_not(ended);
	emu_watch_free(w);
	buf_release(&got);
}

Test(watch, expired_resource_version_is_410)
{
	struct emu_watch_options o = {0};
	struct emu_watch *w;
	struct buf raw = BUF_INIT, name = BUF_INIT, want = BUF_INIT;
	json_t *ev, *obj;
	size_t i;

	/* The first writes fall out of the ring. */
	for (i = 0; i < EMU_WATCH_HISTORY + 5; i++) {
		buf_reset(&name);
		buf_addf(&name, "cm%zu", i);
		create_cm(buf_cstr(&name), "web");
	}
	o.rv = "2";
	w = open_watch(&o);
	cr_assert_eq(emu_watch_next(w, &raw, 0), 1);
	ev = json_loads(buf_cstr(&raw), 0, NULL);
	cr_assert_not_null(ev, "%s", buf_cstr(&raw));
	cr_assert_str_eq(json_string_value(json_object_get(ev, "type")),
			 "ERROR");
	obj = json_object_get(ev, "object");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "kind")),
			 "Status");
	cr_assert_eq(json_integer_value(json_object_get(obj, "code")), 410);
	cr_assert_str_eq(json_string_value(json_object_get(obj, "reason")),
			 "Expired");
	/* 3 initial namespaces + 1005 ConfigMaps: rv 9 is the oldest kept. */
	buf_addf(&want, "too old resource version: 2 (%u)", 3 + 5 + 1);
	cr_assert_str_eq(json_string_value(json_object_get(obj, "message")),
			 buf_cstr(&want));
	buf_reset(&raw);
	cr_assert_eq(emu_watch_next(w, &raw, 0), -1, "the stream ends");
	json_decref(ev);
	emu_watch_free(w);

	/* The oldest event kept can still be resumed from. */
	o.rv = "8";
	w = open_watch(&o);
	buf_reset(&raw);
	cr_assert_eq(emu_watch_next(w, &raw, 0), 1);
	cr_assert(strstr(buf_cstr(&raw), "\"ADDED\""), "%s", buf_cstr(&raw));
	cr_assert_null(strstr(buf_cstr(&raw), "ERROR"));
	emu_watch_free(w);
	buf_release(&raw);
	buf_release(&name);
	buf_release(&want);
}

Test(watch, selectors_filter_events)
{
	struct emu_watch_options o = {.labels = "app=web",
				      .fields = "metadata.name!=skip"};
	struct emu_watch *w;
	struct buf got = BUF_INIT;
	json_t *status = NULL;
	bool ended;

	create_cm("a", "web");
	create_cm("b", "db");
	w = open_watch(&o);
	create_cm("skip", "web");
	create_cm("c", "web");
	create_cm("d", "db");
	drain(w, &got, &ended);
	cr_assert_str_eq(buf_cstr(&got), "ADDED a;ADDED c;");
	emu_watch_free(w);
	buf_release(&got);

	o.labels = "app in (";
	cr_assert_eq(emu_watch_open(&st, configmaps(), &o, &w, &status), 400);
	cr_assert_null(w);
	cr_assert_eq(json_integer_value(json_object_get(status, "code")), 400);
	json_decref(status);
}

Test(watch, bookmarks_timeout_and_shutdown)
{
	struct emu_watch_options o = {
		.rv = "0", .bookmarks = true, .timeout_s = 2};
	struct emu_watch *w, *w2;
	struct emu_watch_options o2 = {0};
	struct buf raw = BUF_INIT;
	json_t *ev, *obj;
	int r;

	w = open_watch(&o);
	/* Nothing exists: the first line is a bookmark after ~1 s. */
	cr_assert_eq(emu_watch_next(w, &raw, EMU_BOOKMARK_MS + 500), 1);
	ev = json_loads(buf_cstr(&raw), 0, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(ev, "type")),
			 "BOOKMARK");
	obj = json_object_get(ev, "object");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "kind")),
			 "ConfigMap");
	cr_assert_str_eq(json_string_value(json_object_get(obj, "apiVersion")),
			 "v1");
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(obj, "metadata"), "resourceVersion")),
		"3");
	cr_assert_eq(json_object_size(obj), 3);
	json_decref(ev);
	/* timeoutSeconds=2 ends the stream within about 2 s more. */
	do
		r = emu_watch_next(w, &raw, 3000);
	while (r > 0);
	cr_assert_eq(r, -1);
	emu_watch_free(w);

	w2 = open_watch(&o2);
	emu_store_shutdown(&st);
	buf_reset(&raw);
	cr_assert_eq(emu_watch_next(w2, &raw, 5000), -1);
	emu_watch_free(w2);
	buf_release(&raw);
}

Test(watch, handler_hands_the_watch_to_the_http_layer)
{
	struct emu_server srv = {.host = "127.0.0.1:1"};
	struct emu_param q[2] = {{"watch", "true"}, {"timeoutSeconds", "x"}};
	struct emu_request req = {.method = "GET",
				  .path = "/api/v1/namespaces/default/"
					  "configmaps",
				  .query = q,
				  .nquery = 1};
	struct emu_response resp = EMU_RESPONSE_INIT;

	cr_assert_eq(emu_store_init(&srv.store), 0);
	emu_handle(&srv, &req, &resp);
	cr_assert_eq(resp.code, 200);
	cr_assert_not_null(resp.watch);
	emu_watch_free(resp.watch);
	emu_response_release(&resp);

	resp.watch = NULL;
	req.nquery = 2;
	emu_handle(&srv, &req, &resp);
	cr_assert_eq(resp.code, 400);
	cr_assert_null(resp.watch);
	emu_response_release(&resp);
	emu_store_release(&srv.store);
}
