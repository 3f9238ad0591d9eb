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

/* The report as the case checks it: with each object's apply body. */
static json_t *report_json(const struct diff_report *report)
{
	json_t *j = diff_report_to_json(report),
	       *objs = json_object_get(j, "objects");

	for (size_t i = 0; i < report->len; i++)
		json_object_set(json_array_get(objs, i), "applyBody",
				report->objects[i].apply
					? report->objects[i].apply
					: json_null());
	return j;
}

/*
 * Live objects settled as they are read (diff_object_settle()): exactly
 * those the report finds in sync with nothing to send, show or warn of;
 * and the report over the settled set is the same report.
 */
static void settled_same(const char *name, const struct diff_objset *desired,
			 const struct diff_objset *live,
			 const struct diff_schemas *reg,
			 const struct diff_options *opts,
			 const struct diff_report *want, const json_t *want_json)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct diff_report *got = NULL;
	struct err err = ERR_INIT;
	json_t *got_json;

	for (size_t i = 0; i < live->len; i++) {
		struct diff_object *o = NULL;
		const struct diff_object *d =
			diff_objset_get(desired, &live->items[i]->key);
		const struct diff_object_report *r = NULL;
		bool quiet;
		int rc;

		cr_assert_eq(diff_object_new(&o, live->items[i]->json, NULL,
					     &err),
			     0);
		for (size_t j = 0; j < want->len && d; j++)
			if (diff_key_equal(&want->objects[j].key, &d->key))
				r = &want->objects[j];
		quiet = r && r->state == DIFF_IN_SYNC && !r->nfields &&
			!r->nwarnings && !r->apply;
		rc = d ? diff_object_settle(o, d, reg, opts, &err) : 0;
		cr_assert_eq(rc, quiet ? 1 : 0, "%s: live object %zu: settled %d",
			     name, i, rc);
		cr_assert_eq(o->settled, rc == 1);
		cr_assert(rc == 1 ? !o->json : o->json == live->items[i]->json);
		cr_assert_eq(diff_objset_add(&set, o, &err), 0);
	}
	cr_assert_eq(diff_compare(&got, desired, &set, reg, opts, NULL, &err), 0,
		     "%s: %s", name, err_msg(&err));
	got_json = report_json(got);
	if (!json_equal(got_json, (json_t *)want_json)) {
		char *a = json_dumps(got_json, JSON_INDENT(2) | JSON_SORT_KEYS);

		cr_log_error("%s: report over settled objects:\n%s", name, a);
		free(a);
		cr_assert_fail("%s: settling changed the report", name);
	}
	json_decref(got_json);
	diff_report_free(got);
	diff_objset_release(&set);
	err_release(&err);
}

/*
 * diff_options.no_views: the same report, without the YAML diff's two
 * sides (syncd sync and JSON output never show them).
 */
static void no_views_same(const char *name, const struct diff_objset *desired,
			  const struct diff_objset *live,
			  const struct diff_schemas *reg,
			  const struct diff_options *opts, const json_t *want_json)
{
	struct diff_options o = *opts;
	struct diff_report *got = NULL;
	struct err err = ERR_INIT;
	json_t *got_json;

	o.no_views = true;
	cr_assert_eq(diff_compare(&got, desired, live, reg, &o, NULL, &err), 0,
		     "%s: %s", name, err_msg(&err));
	for (size_t i = 0; i < got->len; i++)
		cr_assert(!got->objects[i].live_view &&
				  !got->objects[i].desired_view,
			  "%s: object %zu has a view with no_views", name, i);
	got_json = report_json(got);
	cr_assert(json_equal(got_json, (json_t *)want_json),
		  "%s: no_views changed the report", name);
	json_decref(got_json);
	diff_report_free(got);
	err_release(&err);
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
	json_t *options = NULL, *expected, *actual;
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

	actual = report_json(report);

	settled_same(name, &desired, &live, reg, &opts, report, actual);
	no_views_same(name, &desired, &live, reg, &opts, actual);

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
