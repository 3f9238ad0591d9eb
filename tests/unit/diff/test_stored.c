/*
 * diff_stored_defaults() against the real server: every case in
 * tests/cases/stored/ (written by generate.sh from what kube-apiserver
 * 1.36 stored for each object of declared.yaml) must be reproduced from
 * the declared object alone, everywhere but the case's "outside"
 * pointers (what needs more than the object: cluster IPs, node ports, a
 * Pod's admission). Defaulting a stored object again changes nothing.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include "tests/helpers/cases.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"

#include "util/banned.h" /* last */

#define CASES "tests/cases/stored"

/* The first place a and b differ, as a path, into where. */
static void first_difference(const json_t *a, const json_t *b,
			     struct buf *where)
{
	const char *k;
	json_t *v;
	size_t i;

	if (json_is_object(a) && json_is_object(b)) {
		json_object_foreach((json_t *)a, k, v)
		{
			if (!json_equal(v, json_object_get(b, k))) {
				buf_addf(where, ".%s", k);
				first_difference(v, json_object_get(b, k),
						 where);
				return;
			}
		}
		json_object_foreach((json_t *)b, k, v)
		{
			if (!json_object_get(a, k)) {
				buf_addf(where, ".%s (only stored)", k);
				return;
			}
		}
		return;
	}
	if (json_is_array(a) && json_is_array(b) &&
	    json_array_size(a) == json_array_size(b)) {
		json_array_foreach((json_t *)a, i, v)
		{
			if (!json_equal(v, json_array_get(b, i))) {
				buf_addf(where, "[%zu]", i);
				first_difference(v, json_array_get(b, i),
						 where);
				return;
			}
		}
	}
}

static json_t *load_case(const char *name)
{
	char path[512];
	json_error_t jerr;
	json_t *c;

	snprintf(path, sizeof(path), "%s/%s", CASES, name);
	c = json_load_file(path, 0, &jerr);
	cr_assert_not_null(c, "%s:%d: %s", path, jerr.line, jerr.text);
	return c;
}

/* The model's object and the server's, both without the outside parts. */
static void reproduce(const json_t *c, json_t **model, json_t **stored,
		      struct buf *why)
{
	const json_t *outside = json_object_get(c, "outside");
	size_t i;
	json_t *p;

	*model = json_deep_copy(json_object_get(c, "declared"));
	*stored = json_deep_copy(json_object_get(c, "stored"));
	cr_assert(*model && *stored, "case lacks declared or stored");
	if (diff_stored_object(*model, DIFF_STORED_CREATE, why) >= 0)
		buf_reset(why);
	json_array_foreach(outside, i, p)
	{
		case_pointer_remove(*model, json_string_value(p));
		case_pointer_remove(*stored, json_string_value(p));
	}
}

ParameterizedTestParameters(stored, each)
{
	return case_dirs(CASES, case_json_files);
}

ParameterizedTest(struct case_param *p, stored, each)
{
	json_t *c = load_case(p->name), *model, *stored;
	struct buf where = BUF_INIT, why = BUF_INIT;
	char *m, *s;

	reproduce(c, &model, &stored, &why);
	cr_expect_eq(why.len, 0, "%s: refused: %s", p->name, buf_cstr(&why));
	buf_release(&why);
	if (!json_equal(model, stored)) {
		first_difference(model, stored, &where);
		m = json_dumps(model, JSON_SORT_KEYS | JSON_COMPACT);
		s = json_dumps(stored, JSON_SORT_KEYS | JSON_COMPACT);
		cr_expect_fail("%s: the model differs from the server at %s\n"
			       "model:  %s\nserver: %s",
			       p->name, buf_cstr(&where), m, s);
		free(m);
		free(s);
	}
	buf_release(&where);
	json_decref(model);
	json_decref(stored);
	json_decref(c);
}

/* What the server stored is a fixed point: defaulting it adds nothing. */
ParameterizedTestParameters(stored, idempotent)
{
	return case_dirs(CASES, case_json_files);
}

ParameterizedTest(struct case_param *p, stored, idempotent)
{
	json_t *c = load_case(p->name);
	json_t *s = json_deep_copy(json_object_get(c, "stored"));
	json_t *again = json_deep_copy(s);
	struct buf why = BUF_INIT;

	cr_expect_geq(diff_stored_object(again, 0, &why), 0, "%s: refused: %s",
		     p->name, buf_cstr(&why));
	buf_release(&why);
	cr_expect(json_equal(s, again),
		  "%s: defaulting the stored object "
		  "changes it",
		  p->name);
	json_decref(again);
	json_decref(s);
	json_decref(c);
}

/*
 * The cases are there to be read: a lost or unreadable folder would leave
 * the parameterized tests above with nothing to run.
 */
Test(stored, at_least_forty_cases)
{
	struct dirent **names;
	int n = scandir(CASES, &names, case_json_files, alphasort);

	cr_assert_geq(n, 40, "want at least 40 stored cases, have %d", n);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}
