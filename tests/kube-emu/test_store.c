/*
 * Unit tests of the store: its hash index under many writes, namespace
 * cascades, dump and restore, and the order of the write pipeline
 * (defaults, validation, managedFields, admission).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "kube-emu/emu.h"
#include "tests/kube-emu/test_call.h"

#include "util/banned.h" /* last */

static const struct emu_resource *core(const char *name)
{
	const struct emu_resource *r = emu_resource_find("", "v1", name);

	cr_assert_not_null(r, "resource %s", name);
	return r;
}

static json_t *cm(const char *name)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1",
			 "kind", "ConfigMap", "metadata", "name", name, "data",
			 "k", name);
}

static void create_cm(struct emu_store *st, const char *ns, const char *name)
{
	json_t *in = cm(name), *out = NULL;

	cr_assert_eq(emu_store_create(st, core("configmaps"), ns, in, NULL,
				      false, &out),
		     201, "%s/%s", ns, name);
	json_decref(in);
	json_decref(out);
}

static void create_ns(struct emu_store *st, const char *name)
{
	json_t *in = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1",
			       "kind", "Namespace", "metadata", "name", name),
	       *out = NULL;

	cr_assert_eq(emu_store_create(st, core("namespaces"), "", in, NULL,
				      false, &out),
		     201);
	json_decref(in);
	json_decref(out);
}

static int get_code(struct emu_store *st, const char *ns, const char *name)
{
	json_t *out = NULL;
	int code = emu_store_get(st, core("configmaps"), ns, name, &out);

	if (code == 200)
		cr_assert_str_eq(json_string_value(json_object_get(
					 json_object_get(out, "data"), "k")),
				 name);
	json_decref(out);
	return code;
}

static int delete_code(struct emu_store *st, const char *ns, const char *name)
{
	json_t *out = NULL;
	int code =
		emu_store_delete(st, core("configmaps"), ns, name, false, &out);

	json_decref(out);
	return code;
}

static size_t list_len(struct emu_store *st, const char *ns)
{
	struct emu_list_options lo = {0};
	json_t *out = NULL;
	size_t n;

	lo.ns = ns;
	cr_assert_eq(emu_store_list(st, core("configmaps"), &lo, &out), 200);
	n = json_array_size(json_object_get(out, "items"));
	json_decref(out);
	return n;
}

#define N 3000

Test(store_index, many_creates_and_deletes)
{
	static const char *const nss[] = {"default", "kube-system", "team"};
	struct emu_store st;
	char name[32];
	size_t i, j, live[3] = {0};

	cr_assert_eq(emu_store_init(&st), 0);
	create_ns(&st, "team");
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "cm-%zu", i);
		create_cm(&st, nss[i % 3], name);
		live[i % 3]++;
	}
	/* Delete every third (moving other items into the holes). */
	for (i = 0; i < N; i += 3) {
		snprintf(name, sizeof(name), "cm-%zu", i);
		cr_assert_eq(delete_code(&st, nss[i % 3], name), 200);
		cr_assert_eq(delete_code(&st, nss[i % 3], name), 404);
		live[i % 3]--;
	}
	/* The same names again, in another namespace. */
	for (i = 0; i < N; i += 6) {
		snprintf(name, sizeof(name), "cm-%zu", i);
		create_cm(&st, nss[(i + 1) % 3], name);
		live[(i + 1) % 3]++;
	}
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "cm-%zu", i);
		for (j = 0; j < 3; j++) {
			bool want = (i % 3 != 0 && j == i % 3) ||
				    (i % 6 == 0 && j == (i + 1) % 3);

			cr_assert_eq(get_code(&st, nss[j], name),
				     want ? 200 : 404, "%s/%s", nss[j], name);
		}
	}
	for (j = 0; j < 3; j++)
		cr_assert_eq(list_len(&st, nss[j]), live[j]);
	cr_assert_eq(list_len(&st, NULL), live[0] + live[1] + live[2]);
	/* Everything goes; the index empties cleanly. */
	for (i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "cm-%zu", i);
		for (j = 0; j < 3; j++)
			delete_code(&st, nss[j], name);
	}
	cr_assert_eq(list_len(&st, NULL), 0);
	create_cm(&st, "default", "cm-1");
	cr_assert_eq(get_code(&st, "default", "cm-1"), 200);
	emu_store_release(&st);
}

Test(store_index, list_order_and_pages)
{
	struct emu_store st;
	struct emu_list_options lo = {0};
	json_t *out = NULL, *item;
	char prev[32] = "";
	char name[32];
	size_t i, total = 0;
	char *cont = NULL;

	cr_assert_eq(emu_store_init(&st), 0);
	for (i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "cm-%03zu", (i * 37) % 500);
		create_cm(&st, "default", name);
	}
	lo.ns = "default";
	lo.limit = 120;
	do {
		lo.cont = cont;
		cr_assert_eq(emu_store_list(&st, core("configmaps"), &lo, &out),
			     200);
		json_array_foreach(json_object_get(out, "items"), i, item)
		{
			const char *n = json_string_value(json_object_get(
				json_object_get(item, "metadata"), "name"));

			cr_assert_gt(strcmp(n, prev), 0, "%s after %s", n,
				     prev);
			cr_assert_null(json_object_get(item, "kind"));
			snprintf(prev, sizeof(prev), "%s", n);
			total++;
		}
		free(cont);
		cont = json_string_value(json_object_get(
			       json_object_get(out, "metadata"), "continue"))
			       ? strdup(json_string_value(json_object_get(
					 json_object_get(out, "metadata"),
					 "continue")))
			       : NULL;
		json_decref(out);
	} while (cont);
	cr_assert_eq(total, 500);
	emu_store_release(&st);
}

Test(store_index, namespace_cascade)
{
	struct emu_store st;
	json_t *out = NULL, *late;
	char name[32];
	size_t i;

	cr_assert_eq(emu_store_init(&st), 0);
	create_ns(&st, "team");
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "cm-%zu", i);
		create_cm(&st, i % 2 ? "team" : "default", name);
	}
	cr_assert_eq(emu_store_delete(&st, core("namespaces"), "", "team",
				      false, &out),
		     200);
	json_decref(out);
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "cm-%zu", i);
		cr_assert_eq(get_code(&st, i % 2 ? "team" : "default", name),
			     i % 2 ? 404 : 200);
	}
	cr_assert_eq(list_len(&st, "team"), 0);
	cr_assert_eq(list_len(&st, "default"), 100);
	/* Writes into the deleted namespace are refused. */
	late = cm("late");
	cr_assert_eq(emu_store_create(&st, core("configmaps"), "team", late,
				      NULL, false, &out),
		     404);
	json_decref(late);
	json_decref(out);
	/* Recreated, it is empty and usable. */
	create_ns(&st, "team");
	create_cm(&st, "team", "cm-1");
	cr_assert_eq(get_code(&st, "team", "cm-1"), 200);
	emu_store_release(&st);
}

Test(store_index, dump_restore_round_trip)
{
	struct emu_store a, b;
	struct buf msg = BUF_INIT;
	json_t *d1, *d2, *out = NULL, *in, *bad;
	char name[32];
	size_t i;
	const char *rv;

	cr_assert_eq(emu_store_init(&a), 0);
	create_ns(&a, "team");
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "cm-%zu", i);
		create_cm(&a, i % 2 ? "team" : "default", name);
	}
	for (i = 0; i < 300; i += 5) {
		snprintf(name, sizeof(name), "cm-%zu", i);
		cr_assert_eq(delete_code(&a, i % 2 ? "team" : "default", name),
			     200);
	}
	d1 = emu_store_dump(&a);
	cr_assert_not_null(d1);

	cr_assert_eq(emu_store_init(&b), 0);
	cr_assert_eq(emu_store_restore(&b, d1, &msg), 0, "%s", buf_cstr(&msg));
	d2 = emu_store_dump(&b);
	cr_assert(json_equal(json_object_get(d1, "resourceVersion"),
			     json_object_get(d2, "resourceVersion")));
	cr_assert_eq(json_array_size(json_object_get(d1, "objects")),
		     json_array_size(json_object_get(d2, "objects")));
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "cm-%zu", i);
		cr_assert_eq(get_code(&b, i % 2 ? "team" : "default", name),
			     i % 5 ? 200 : 404);
	}
	/* The index of the restored store takes new writes. */
	cr_assert_eq(delete_code(&b, "team", "cm-1"), 200);
	cr_assert_eq(get_code(&b, "team", "cm-1"), 404);
	in = cm("cm-1");
	cr_assert_eq(emu_store_create(&b, core("configmaps"), "team", in, NULL,
				      false, &out),
		     201);
	rv = json_string_value(json_object_get(json_object_get(out, "metadata"),
					       "resourceVersion"));
	cr_assert_gt(strtoull(rv, NULL, 10),
		     strtoull(json_string_value(
				      json_object_get(d1, "resourceVersion")),
			      NULL, 10));
	json_decref(out);
	json_decref(in);

	/* A duplicate object is refused and leaves the store alone. */
	bad = json_deep_copy(d1);
	json_array_append(json_object_get(bad, "objects"),
			  json_array_get(json_object_get(bad, "objects"), 3));
	buf_reset(&msg);
	cr_assert_eq(emu_store_restore(&b, bad, &msg), -1);
	cr_assert_not_null(strstr(buf_cstr(&msg), "duplicate"), "%s",
			   buf_cstr(&msg));
	cr_assert_eq(get_code(&b, "team", "cm-1"), 200);

	json_decref(bad);
	json_decref(d1);
	json_decref(d2);
	buf_release(&msg);
	emu_store_release(&a);
	emu_store_release(&b);
}

/* The fieldsV1 of `manager`'s entry, as compact sorted JSON, or "". */
static char *fields_of(const json_t *obj, const char *manager)
{
	json_t *mf = json_object_get(json_object_get(obj, "metadata"),
				     "managedFields"),
	       *e;
	size_t i;

	json_array_foreach(mf, i, e) if (
		!strcmp(json_string_value(json_object_get(e, "manager")),
			manager)) return json_dumps(json_object_get(e,
								    "fieldsV1"),
						    JSON_COMPACT |
							    JSON_SORT_KEYS);
	return strdup("");
}

/*
 * Defaults run before managedFields: on an Update (create) the writer
 * owns what was defaulted for it, as in kube; apply records only what
 * the applier sent, so a defaulted field is owned by nobody.
 */
Test(store_wiring, defaults_before_managed_fields)
{
	struct emu_server srv = {0};
	json_t *out = NULL;
	char *f;

	cr_assert_eq(emu_store_init(&srv.store), 0);
	/* A Namespace's name label is a default of the server. */
	cr_assert_eq(
		emu_test_call(&srv, "POST",
			      "/api/v1/namespaces?fieldManager=mgr",
			      "application/json",
			      "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
			      "\"metadata\":{\"name\":\"team\"}}",
			      &out),
		201);
	f = fields_of(out, "mgr");
	cr_assert_not_null(strstr(f, "\"f:kubernetes.io/metadata.name\""), "%s",
			   f);
	free(f);
	json_decref(out);

	cr_assert_eq(
		emu_test_call(&srv, "PATCH",
			      "/api/v1/namespaces/other?fieldManager=applier",
			      "application/apply-patch+yaml",
			      "apiVersion: v1\nkind: Namespace\nmetadata:\n"
			      "  name: other\n  labels:\n    a: b\n",
			      &out),
		201, "%s", json_string_value(json_object_get(out, "message")));
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(json_object_get(out, "metadata"),
					"labels"),
			"kubernetes.io/metadata.name")),
		"other");
	f = fields_of(out, "applier");
	cr_assert_not_null(strstr(f, "\"f:a\""), "%s", f);
	cr_assert_null(strstr(f, "metadata.name"), "%s", f);
	free(f);
	json_decref(out);

	/* The same through a kind with a spec default: Deployments. */
	cr_assert_eq(
		emu_test_call(
			&srv, "POST",
			"/apis/apps/v1/namespaces/default/deployments"
			"?fieldManager=mgr",
			"application/json",
			"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
			"\"metadata\":{\"name\":\"web\"},\"spec\":{"
			"\"selector\":{\"matchLabels\":{\"app\":\"web\"}},"
			"\"template\":{\"metadata\":{\"labels\":{\"app\":"
			"\"web\"}},\"spec\":{\"containers\":[{\"name\":"
			"\"web\",\"image\":\"nginx:1\"}]}}}}",
			&out),
		201, "%s", json_string_value(json_object_get(out, "message")));
	if (json_object_get(json_object_get(out, "spec"),
			    "progressDeadlineSeconds")) {
		f = fields_of(out, "mgr");
		cr_assert_not_null(strstr(f, "f:progressDeadlineSeconds"), "%s",
				   f);
		free(f);
	}
	json_decref(out);
	cr_assert_eq(
		emu_test_call(&srv, "PATCH",
			      "/apis/apps/v1/namespaces/default/deployments/api"
			      "?fieldManager=applier",
			      "application/apply-patch+yaml",
			      "apiVersion: apps/v1\nkind: Deployment\n"
			      "metadata:\n  name: api\nspec:\n  selector:\n"
			      "    matchLabels: {app: api}\n  template:\n"
			      "    metadata:\n      labels: {app: api}\n"
			      "    spec:\n      containers:\n"
			      "      - name: api\n        image: nginx:1\n",
			      &out),
		201, "%s", json_string_value(json_object_get(out, "message")));
	if (json_object_get(json_object_get(out, "spec"),
			    "progressDeadlineSeconds")) {
		f = fields_of(out, "applier");
		cr_assert_null(strstr(f, "f:progressDeadlineSeconds"), "%s", f);
		cr_assert_not_null(strstr(f, "f:image"), "%s", f);
		free(f);
	}
	json_decref(out);
	emu_store_release(&srv.store);
}

/* A write that changes nothing keeps its resourceVersion. */
Test(store_wiring, noop_update)
{
	struct emu_store st;
	json_t *in = cm("a"), *out = NULL, *again = NULL;
	const char *rv;

	cr_assert_eq(emu_store_init(&st), 0);
	cr_assert_eq(emu_store_create(&st, core("configmaps"), "default", in,
				      "mgr", false, &out),
		     201);
	rv = json_string_value(json_object_get(json_object_get(out, "metadata"),
					       "resourceVersion"));
	cr_assert_eq(emu_store_update(&st, core("configmaps"), "default", "a",
				      NULL, "mgr", in, false, &again),
		     200);
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(again, "metadata"), "resourceVersion")),
		rv);
	cr_assert(json_equal(out, again));
	json_decref(again);
	json_object_set_new(json_object_get(in, "data"), "k",
			    json_string("changed"));
	cr_assert_eq(emu_store_update(&st, core("configmaps"), "default", "a",
				      NULL, "mgr", in, false, &again),
		     200);
	cr_assert_str_neq(
		json_string_value(json_object_get(
			json_object_get(again, "metadata"), "resourceVersion")),
		rv);
	json_decref(again);
	json_decref(out);
	json_decref(in);
	emu_store_release(&st);
}

/* A Status from validation refuses the write: nothing stored, no rv. */
Test(store_wiring, validation_refuses)
{
	struct emu_store st;
	json_t *in = cm("bad"), *out = NULL;
	uint64_t rv;

	cr_assert_eq(emu_store_init(&st), 0);
	rv = st.rv;
	json_object_set_new(json_object_get(in, "data"), "not a key!",
			    json_string("v"));
	cr_assert_eq(emu_store_create(&st, core("configmaps"), "default", in,
				      "mgr", false, &out),
		     422);
	cr_assert_str_eq(json_string_value(json_object_get(out, "reason")),
			 "Invalid");
	json_decref(out);
	cr_assert_eq(st.rv, rv);
	cr_assert_eq(get_code(&st, "default", "bad"), 404);

	/* The same on update: the stored object stays as it was. */
	json_object_del(json_object_get(in, "data"), "not a key!");
	json_object_set_new(json_object_get(in, "data"), "k",
			    json_string("bad"));
	cr_assert_eq(emu_store_create(&st, core("configmaps"), "default", in,
				      "mgr", false, &out),
		     201);
	json_decref(out);
	json_object_set_new(json_object_get(in, "data"), "not a key!",
			    json_string("v"));
	cr_assert_eq(emu_store_update(&st, core("configmaps"), "default", "bad",
				      NULL, "mgr", in, false, &out),
		     422);
	json_decref(out);
	cr_assert_eq(get_code(&st, "default", "bad"), 200);
	json_decref(in);
	emu_store_release(&st);
}
