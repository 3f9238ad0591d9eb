#include <criterion/criterion.h>
#include <string.h>

#include "diff/diff.h"

static json_t *obj(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);

	cr_assert_not_null(j, "bad test JSON: %s", jerr.text);
	return j;
}

static const char *format(const struct diff_key *key)
{
	static struct buf b = BUF_INIT;

	buf_reset(&b);
	diff_key_format(key, &b);
	return buf_cstr(&b);
}

Test(object, api_version_split)
{
	size_t glen;
	const char *version;

	diff_api_version_split("apps/v1", &glen, &version);
	cr_assert_eq(glen, 4);
	cr_assert_str_eq(version, "v1");
	diff_api_version_split("v1", &glen, &version);
	cr_assert_eq(glen, 0);
	cr_assert_str_eq(version, "v1");
}

Test(object, key_from_object)
{
	json_t *j = obj("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
			"\"metadata\":{\"name\":\"web\",\"namespace\":\"prod\"}}");
	struct diff_key k;

	cr_assert_eq(diff_key_from_object(&k, j, NULL), 0);
	cr_assert_str_eq(k.group, "apps");
	cr_assert_str_eq(k.kind, "Deployment");
	cr_assert_str_eq(k.ns, "prod");
	cr_assert_str_eq(k.name, "web");
	cr_assert_str_eq(format(&k), "Deployment.apps prod/web");
	diff_key_release(&k);
	json_decref(j);

	j = obj("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
		"\"metadata\":{\"name\":\"prod\"}}");
	cr_assert_eq(diff_key_from_object(&k, j, NULL), 0);
	cr_assert_str_eq(k.group, "");
	cr_assert_str_eq(k.ns, "");
	cr_assert_str_eq(format(&k), "Namespace prod");
	diff_key_release(&k);
	json_decref(j);
}

Test(object, version_is_not_identity)
{
	json_t *a = obj("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
			"\"metadata\":{\"name\":\"web\"}}");
	json_t *b = obj("{\"apiVersion\":\"apps/v1beta2\",\"kind\":\"Deployment\","
			"\"metadata\":{\"name\":\"web\"}}");
	json_t *c = obj("{\"apiVersion\":\"example.com/v1\",\"kind\":\"Deployment\","
			"\"metadata\":{\"name\":\"web\"}}");
	struct diff_key ka, kb, kc;

	cr_assert_eq(diff_key_from_object(&ka, a, NULL), 0);
	cr_assert_eq(diff_key_from_object(&kb, b, NULL), 0);
	cr_assert_eq(diff_key_from_object(&kc, c, NULL), 0);
	cr_assert(diff_key_equal(&ka, &kb));
	cr_assert_not(diff_key_equal(&ka, &kc));
	cr_assert_eq(diff_key_cmp(&ka, &kb), 0);
	cr_assert_gt(diff_key_cmp(&kc, &ka), 0); /* "example.com" > "apps" */
	diff_key_release(&ka);
	diff_key_release(&kb);
	diff_key_release(&kc);
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

/* Field separators cannot be forged: ("a", "b/c") != ("a/b", "c"). */
Test(object, key_parts_do_not_run_together)
{
	struct diff_key a, b;

	cr_assert_eq(diff_key_init(&a, "", "ConfigMap", "a", "bc"), 0);
	cr_assert_eq(diff_key_init(&b, "", "ConfigMap", "ab", "c"), 0);
	cr_assert_not(diff_key_equal(&a, &b));
	diff_key_release(&a);
	diff_key_release(&b);
}

struct bad_case {
	const char *json;
	const char *message;
};

Test(object, invalid_objects)
{
	static const struct bad_case cases[] = {
		{"[1]", "document is a list, not an object"},
		{"\"x\"", "document is a scalar, not an object"},
		{"{\"kind\":\"A\",\"metadata\":{\"name\":\"x\"}}",
		 "missing apiVersion"},
		{"{\"apiVersion\":1,\"kind\":\"A\",\"metadata\":{\"name\":\"x\"}}",
		 "apiVersion must be a non-empty string"},
		{"{\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\"}}",
		 "missing kind"},
		{"{\"apiVersion\":\"v1\",\"kind\":\"\",\"metadata\":{}}",
		 "kind must be a non-empty string"},
		{"{\"apiVersion\":\"v1\",\"kind\":\"A\"}", "A: missing metadata"},
		{"{\"apiVersion\":\"v1\",\"kind\":\"A\",\"metadata\":[]}",
		 "A: metadata must be an object"},
		{"{\"apiVersion\":\"v1\",\"kind\":\"A\",\"metadata\":{}}",
		 "A: missing metadata.name"},
		{"{\"apiVersion\":\"v1\",\"kind\":\"A\",\"metadata\":{\"name\":\"\"}}",
		 "A: missing metadata.name"},
		{"{\"apiVersion\":\"v1\",\"kind\":\"A\",\"metadata\":{\"name\":3}}",
		 "A: metadata.name must be a string"},
		{"{\"apiVersion\":\"v1\",\"kind\":\"A\",\"metadata\":{\"name\":\"x\","
		 "\"namespace\":{}}}",
		 "A: metadata.namespace must be a string"},
		{"{\"apiVersion\":\"a/b/c\",\"kind\":\"A\",\"metadata\":{\"name\":\"x\"}}",
		 "A x: malformed apiVersion \"a/b/c\""},
		{"{\"apiVersion\":\"apps/\",\"kind\":\"A\",\"metadata\":{\"name\":\"x\"}}",
		 "A x: malformed apiVersion \"apps/\""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = obj(cases[i].json);
		struct diff_key k;
		struct err err = ERR_INIT;

		cr_assert_eq(diff_key_from_object(&k, j, &err), ERR_INVALID,
			     "case %zu", i);
		cr_assert_str_eq(err_first(&err), cases[i].message, "case %zu",
				 i);
		err_release(&err);
		json_decref(j);
	}
}

Test(object, objset_add_get_duplicate)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	struct diff_object *o;
	struct diff_key k;
	char text[256];

	/* Enough objects to grow the index several times. */
	for (int i = 0; i < 1000; i++) {
		snprintf(text, sizeof(text),
			 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			 "\"metadata\":{\"name\":\"cm-%d\",\"namespace\":\"ns\"}}",
			 i);
		json_t *j = obj(text);
		char origin[32];

		snprintf(origin, sizeof(origin), "f.yaml:%d", i + 1);
		cr_assert_eq(diff_object_new(&o, j, origin, NULL), 0);
		json_decref(j);
		cr_assert_eq(diff_objset_add(&set, o, NULL), 0);
	}
	cr_assert_eq(set.len, 1000);
	cr_assert_eq(diff_key_init(&k, "", "ConfigMap", "ns", "cm-777"), 0);
	o = diff_objset_get(&set, &k);
	cr_assert_not_null(o);
	cr_assert_str_eq(o->origin, "f.yaml:778");
	diff_key_release(&k);
	cr_assert_eq(diff_key_init(&k, "", "ConfigMap", "other", "cm-777"), 0);
	cr_assert_null(diff_objset_get(&set, &k));
	diff_key_release(&k);

	json_t *dup = obj("{\"apiVersion\":\"v1beta1\",\"kind\":\"ConfigMap\","
			  "\"metadata\":{\"name\":\"cm-5\",\"namespace\":\"ns\"}}");
	cr_assert_eq(diff_object_new(&o, dup, "g.yaml:3", NULL), 0);
	json_decref(dup);
	cr_assert_eq(diff_objset_add(&set, o, &err), ERR_EXISTS);
	cr_assert_str_eq(err_first(&err),
			 "g.yaml:3: duplicate object ConfigMap ns/cm-5 (also "
			 "defined at f.yaml:6)");
	diff_object_free(o);
	err_release(&err);
	cr_assert_eq(set.len, 1000);
	diff_objset_release(&set);
	cr_assert_eq(set.len, 0);
}

Test(object, generate_name_never_duplicates)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct diff_object *o;
	json_t *j = obj("{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\","
			"\"metadata\":{\"generateName\":\"migrate-\"}}");

	for (int i = 0; i < 2; i++) {
		cr_assert_eq(diff_object_new(&o, j, NULL, NULL), 0);
		cr_assert_str_eq(o->key.name, "migrate-*");
		cr_assert_eq(diff_objset_add(&set, o, NULL), 0);
	}
	cr_assert_eq(set.len, 2);
	json_decref(j);
	diff_objset_release(&set);
}

Test(object, objset_sort_keeps_lookup)
{
	static const char *names[] = {"c", "a", "b"};
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct diff_object *o;
	struct diff_key k;

	for (int i = 0; i < 3; i++) {
		json_t *j = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1",
				      "kind", "ConfigMap", "metadata", "name",
				      names[i]);
		cr_assert_eq(diff_object_new(&o, j, NULL, NULL), 0);
		json_decref(j);
		cr_assert_eq(diff_objset_add(&set, o, NULL), 0);
	}
	diff_objset_sort(&set);
	cr_assert_str_eq(set.items[0]->key.name, "a");
	cr_assert_str_eq(set.items[2]->key.name, "c");
	cr_assert_eq(diff_key_init(&k, "", "ConfigMap", "", "c"), 0);
	cr_assert_eq(diff_objset_get(&set, &k), set.items[2]);
	diff_key_release(&k);
	diff_objset_release(&set);
}

Test(object, objset_index_and_truncate)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct diff_object *o;
	struct diff_key k;
	char name[16];
	size_t at = 99;

	for (int i = 0; i < 100; i++) {
		json_t *j;

		snprintf(name, sizeof(name), "cm-%02d", i);
		j = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1",
			      "kind", "ConfigMap", "metadata", "name", name,
			      "uid", name);
		cr_assert_eq(diff_object_new(&o, j, NULL, NULL), 0);
		json_decref(j);
		cr_assert_eq(diff_objset_add(&set, o, NULL), 0);
	}
	cr_assert_eq(diff_key_init(&k, "", "ConfigMap", "", "cm-42"), 0);
	cr_assert(diff_objset_index(&set, &k, &at));
	cr_assert_eq(at, 42);
	cr_assert_str_eq(diff_object_uid(set.items[at]), "cm-42");
	diff_key_release(&k);

	/* The last ones go, the others are still found where they are. */
	diff_objset_truncate(&set, 40);
	cr_assert_eq(set.len, 40);
	cr_assert_eq(diff_key_init(&k, "", "ConfigMap", "", "cm-42"), 0);
	cr_assert_null(diff_objset_get(&set, &k));
	cr_assert_not(diff_objset_index(&set, &k, &at));
	diff_key_release(&k);
	cr_assert_eq(diff_key_init(&k, "", "ConfigMap", "", "cm-39"), 0);
	cr_assert_eq(diff_objset_get(&set, &k), set.items[39]);
	diff_key_release(&k);
	/* And they can come back. */
	for (int i = 40; i < 45; i++) {
		json_t *j;

		snprintf(name, sizeof(name), "cm-%02d", i);
		j = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
			      "ConfigMap", "metadata", "name", name);
		cr_assert_eq(diff_object_new(&o, j, NULL, NULL), 0);
		json_decref(j);
		cr_assert_eq(diff_objset_add(&set, o, NULL), 0);
	}
	cr_assert_eq(set.len, 45);
	diff_objset_truncate(&set, 0);
	cr_assert_eq(set.len, 0);
	diff_objset_release(&set);
}
