/*
 * kube-emu against the real server, object by object: every case of
 * tests/cases/stored/ whose kind kube-emu serves (generated from what
 * kube-apiserver 1.36 stored for each declared object) is created in a
 * kube-emu store, and what kube-emu stores must be what the real server
 * stored, everywhere but the case's "outside" pointers and the metadata
 * every write sets. kube-emu defaults through diff_stored_defaults(), the
 * model syncd's comparison uses, so the two cannot drift apart.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include "tests/helpers/cases.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"
#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

#define CASES "tests/cases/stored"

/* kube-emu's resource of the object's kind, or NULL when not served. */
static const struct emu_resource *resource_of(const json_t *obj)
{
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *slash = strchr(av, '/');
	size_t glen = slash ? (size_t)(slash - av) : 0;
	const char *ver = slash ? slash + 1 : av;
	const struct emu_resource *r;

	for (r = emu_resources; r->name; r++)
		if (strlen(r->group) == glen && !strncmp(r->group, av, glen) &&
		    !strcmp(r->version, ver) && !strcmp(r->kind, kind))
			return r;
	return NULL;
}

static void strip_write_metadata(json_t *obj)
{
	static const char *const keys[] = {"uid", "resourceVersion",
					   "creationTimestamp", "generation",
					   "managedFields"};
	json_t *meta = json_object_get(obj, "metadata");

	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		json_object_del(meta, keys[i]);
}

ParameterizedTestParameters(stored, kube_emu_stores_the_same)
{
	return case_dirs(CASES, case_json_files);
}

ParameterizedTest(struct case_param *p, stored, kube_emu_stores_the_same)
{
	struct emu_store st;
	const struct emu_resource *res;
	json_t *c, *got = NULL, *want, *ns, *v;
	json_error_t jerr;
	char path[512];
	const char *nsname;
	size_t i;
	int code;

	snprintf(path, sizeof(path), "%s/%s", CASES, p->name);
	c = json_load_file(path, 0, &jerr);
	cr_assert_not_null(c, "%s:%d: %s", path, jerr.line, jerr.text);
	if (!(res = resource_of(json_object_get(c, "declared")))) {
		json_decref(c);
		return; /* a kind kube-emu does not serve */
	}
	cr_assert_eq(emu_store_init(&st), 0);
	nsname = json_string_value(json_object_get(
		json_object_get(json_object_get(c, "declared"), "metadata"),
		"namespace"));
	if (nsname) {
		ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1",
			       "kind", "Namespace", "metadata", "name", nsname);
		code = emu_store_create(
			&st, emu_resource_find("", "v1", "namespaces"), "", ns,
			"test", false, &got);
		cr_assert(code == 201 || code == 409, "namespace: %d", code);
		json_decref(got);
		json_decref(ns);
		/* As generate.sh: no controller makes it. */
		ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1",
			       "kind", "ServiceAccount", "metadata", "name",
			       "default");
		code = emu_store_create(
			&st, emu_resource_find("", "v1", "serviceaccounts"),
			nsname, ns, "test", false, &got);
		cr_assert(code == 201 || code == 409, "account: %d", code);
		json_decref(got);
		json_decref(ns);
	}
	code = emu_store_create(&st, res, nsname ? nsname : "",
				json_object_get(c, "declared"),
				"kubectl-create", false, &got);
	cr_assert_eq(code, 201, "%s: kube-emu answers %d: %s", p->name, code,
		     json_dumps(got, JSON_COMPACT));
	want = json_deep_copy(json_object_get(c, "stored"));
	strip_write_metadata(got);
	json_array_foreach(json_object_get(c, "outside"), i, v)
	{
		case_pointer_remove(got, json_string_value(v));
		case_pointer_remove(want, json_string_value(v));
	}
	if (!json_equal(got, want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
		char *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);

		cr_expect_fail(
			"%s: kube-emu stores\n  %s\nthe real server\n  %s",
			p->name, g, w);
		free(g);
		free(w);
	}
	json_decref(got);
	json_decref(want);
	json_decref(c);
	emu_store_release(&st);
}

/* The comparison above is not vacuous: most cases are kinds kube-emu serves. */
Test(stored, most_cases_are_served_kinds)
{
	struct dirent **names;
	int n = scandir(CASES, &names, case_json_files, alphasort), served = 0;
	char path[512];

	for (int i = 0; i < n; i++) {
		json_t *c;

		snprintf(path, sizeof(path), "%s/%s", CASES, names[i]->d_name);
		c = json_load_file(path, 0, NULL);
		if (c && resource_of(json_object_get(c, "declared")))
			served++;
		json_decref(c);
		free(names[i]);
	}
	free(names);
	cr_assert_geq(served, 28,
		      "only %d of %d cases are kinds kube-emu "
		      "serves",
		      served, n);
}
