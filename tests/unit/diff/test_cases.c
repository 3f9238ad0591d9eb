/*
 * Data-driven drift cases: tests/cases/diff/<case>/ holds desired/ (a tree
 * to render), live/ (objects as kubectl get writes them), an optional
 * options.json ({"policy", "fieldManager", "namespace", "ignore": [...]})
 * and expected.json: the drift report it must produce.
 *
 * expected.json is matched as a pattern: objects need only the keys they
 * name, arrays must have the same length, except that an object's
 * "applyBody" is compared exactly with the apply request syncd would send
 * (null: none).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include "tests/helpers/cases.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diff/diff.h"
#include "renderers/render.h"

#define CASES "tests/cases/diff"

static bool match(const json_t *want, const json_t *got, struct buf *where)
{
	size_t mark = where->len;

	if (json_is_object(want)) {
		const char *k;
		json_t *v;

		if (!json_is_object(got))
			return false;
		json_object_foreach ((json_t *)want, k, v) {
			buf_truncate(where, mark);
			buf_addf(where, ".%s", k);
			if (!match(v, json_object_get(got, k), where))
				return false;
		}
		buf_truncate(where, mark);
		return true;
	}
	if (json_is_array(want)) {
		size_t i;
		json_t *v;

		if (!json_is_array(got) ||
		    json_array_size(got) != json_array_size(want)) {
			buf_adds(where, " (array length)");
			return false;
		}
		json_array_foreach ((json_t *)want, i, v) {
			buf_truncate(where, mark);
			buf_addf(where, "[%zu]", i);
			if (!match(v, json_array_get(got, i), where))
				return false;
		}
		buf_truncate(where, mark);
		return true;
	}
	return got && json_equal((json_t *)want, (json_t *)got);
}

static json_t *load_json(const char *path)
{
	json_error_t jerr;
	json_t *j = json_load_file(path, 0, &jerr);

	cr_assert_not_null(j, "%s:%d: %s", path, jerr.line, jerr.text);
	return j;
}

static const char **strings(const json_t *arr)
{
	const char **out;
	size_t i;
	json_t *v;

	if (!arr)
		return NULL;
	out = calloc(json_array_size(arr) + 1, sizeof(*out));
	json_array_foreach (arr, i, v)
		out[i] = json_string_value(v);
	return out;
}

static void run_case(const char *name)
{
	char path[1024], desired_dir[1024], live_dir[1024];
	struct diff_options opts = DIFF_OPTIONS_INIT;
	struct diff_objset desired = DIFF_OBJSET_INIT, live = DIFF_OBJSET_INIT;
	struct diff_ignore_rule rules[8];
	struct diff_schemas *reg = diff_schemas_new();
	struct diff_report *report = NULL;
	struct err err = ERR_INIT;
	struct buf where = BUF_INIT;
	json_t *options = NULL, *expected, *actual, *objs;
	const char *ns = "default";
	static const unsigned char key[] = "syncd test fingerprint key";
	size_t i;

	snprintf(path, sizeof(path), CASES "/%s/options.json", name);
	if (access(path, F_OK) == 0)
		options = load_json(path);
	opts.field_manager =
		json_string_value(json_object_get(options, "fieldManager"));
	if (json_object_get(options, "policy"))
		cr_assert_eq(diff_policy_parse(json_string_value(json_object_get(
							     options, "policy")),
					       &opts.policy),
			     0);
	if (json_object_get(options, "namespace"))
		ns = json_string_value(json_object_get(options, "namespace"));
	opts.mask_key = key;
	opts.mask_key_len = sizeof(key) - 1;
	memset(rules, 0, sizeof(rules));
	json_t *ign = json_object_get(options, "ignore"), *r;
	json_array_foreach (ign, i, r) {
		cr_assert_lt(i, 8);
		rules[i].group = json_string_value(json_object_get(r, "group"));
		rules[i].kind = json_string_value(json_object_get(r, "kind"));
		rules[i].ns = json_string_value(json_object_get(r, "namespace"));
		rules[i].name = json_string_value(json_object_get(r, "name"));
		rules[i].json_pointers =
			strings(json_object_get(r, "jsonPointers"));
		rules[i].managers = strings(json_object_get(r, "managers"));
		opts.nignore++;
	}
	opts.ignore = rules;

	snprintf(desired_dir, sizeof(desired_dir), CASES "/%s/desired", name);
	snprintf(live_dir, sizeof(live_dir), CASES "/%s/live", name);
	cr_assert_eq(render_dir(&desired, desired_dir, NULL, &err), 0,
		     "%s: %s", name, err_msg(&err));
	if (access(live_dir, F_OK) == 0)
		cr_assert_eq(render_dir(&live, live_dir, NULL, &err), 0,
			     "%s: %s", name, err_msg(&err));
	cr_assert_eq(diff_objset_default_namespace(&desired, ns, &desired, &err),
		     0);
	cr_assert_eq(diff_objset_default_namespace(&live, ns, &desired, &err), 0);
	for (i = 0; i < desired.len; i++)
		if (!strcmp(desired.items[i]->key.kind,
			    "CustomResourceDefinition"))
			cr_assert_eq(diff_schemas_add_crd(
					     reg, desired.items[i]->json, &err),
				     0, "%s: %s", name, err_msg(&err));
	cr_assert_eq(diff_compare(&report, &desired, &live, reg, &opts, NULL,
				  &err),
		     0, "%s: %s", name, err_msg(&err));

	actual = diff_report_to_json(report);
	objs = json_object_get(actual, "objects");
	for (i = 0; i < report->len; i++)
		json_object_set(json_array_get(objs, i), "applyBody",
				report->objects[i].apply
					? report->objects[i].apply
					: json_null());

	snprintf(path, sizeof(path), CASES "/%s/expected.json", name);
	expected = load_json(path);
	if (!match(expected, actual, &where)) {
		char *a = json_dumps(actual, JSON_INDENT(2) | JSON_SORT_KEYS);

		cr_log_error("%s: mismatch at %s; actual report:\n%s", name,
			     buf_cstr(&where), a);
		free(a);
		cr_assert_fail("%s: report does not match expected.json at %s",
			       name, buf_cstr(&where));
	}

	for (i = 0; i < opts.nignore; i++) {
		free((void *)rules[i].json_pointers);
		free((void *)rules[i].managers);
	}
	json_decref(expected);
	json_decref(actual);
	json_decref(options);
	diff_report_free(report);
	diff_schemas_free(reg);
	diff_objset_release(&desired);
	diff_objset_release(&live);
	buf_release(&where);
	err_release(&err);
}

static int skip_dots(const struct dirent *d)
{
	return d->d_name[0] != '.' && strcmp(d->d_name, "README.md");
}

ParameterizedTestParameters(diff_cases, each)
{
	return case_dirs(CASES, skip_dots);
}

ParameterizedTest(struct case_param *p, diff_cases, each)
{
	run_case(p->name);
}

Test(diff_cases, at_least_forty)
{
	struct dirent **names;
	int n = scandir(CASES, &names, skip_dots, alphasort);

	cr_assert_geq(n, 40, "want at least 40 diff cases, have %d", n);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}
