/*
 * Data-driven health cases: each tests/cases/health/<case>.yaml holds a
 * live object as the API server returns it (`object`; absent: not in the
 * cluster), optional health rules from the configuration file (`rules`),
 * the state health_of() must say (`want`) and a part of its reason
 * (`reason`). tests/cases/health/README.md has the format.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/health.h"
#include "renderers/render.h"
#include "tests/helpers/cases.h"
#include "util/file.h"

#define CASES "tests/cases/health"

static int yaml_files(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 5 && !strcmp(d->d_name + n - 5, ".yaml");
}

/* The case's one document, its keys checked. Caller decrefs. */
static json_t *load_case(const char *name)
{
	static const char *const keys[] = {"want", "reason", "rules", "object",
					   NULL};
	char path[512];
	struct buf data = BUF_INIT;
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err err = ERR_INIT;
	const char *key;
	json_t *c, *v;

	snprintf(path, sizeof(path), CASES "/%s", name);
	cr_assert_eq(file_read(&data, path, name, 1 << 20, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(render_parse(&docs, buf_cstr(&data), data.len, name,
				  &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(docs.len, 1, "%s: want one YAML document", name);
	c = json_incref(docs.items[0].value);
	json_object_foreach (c, key, v) {
		size_t i;

		for (i = 0; keys[i] && strcmp(keys[i], key); i++)
			;
		cr_assert_not_null(keys[i], "%s: unknown key %s", name, key);
	}
	render_docs_release(&docs);
	buf_release(&data);
	err_release(&err);
	return c;
}

static struct health_rules *load_rules(const char *name, const json_t *list)
{
	struct health_rules *rules = health_rules_new();
	struct err err = ERR_INIT;
	const json_t *r;
	char *where = NULL;
	size_t i;

	cr_assert_not_null(rules);
	json_array_foreach (list, i, r) {
		cr_assert_eq(health_rules_add(rules, r, &where, &err), 0,
			     "%s: rules[%zu]%s: %s", name, i,
			     where ? where : "", err_msg(&err));
	}
	err_release(&err);
	return rules;
}

/* Whether a case's name ends in its claim: "...-progressing.yaml". */
static bool named_for(const char *name, const char *want)
{
	char end[32];
	size_t n, len = strlen(name);

	snprintf(end, sizeof(end), "-%s.yaml", want);
	for (char *c = end; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	n = strlen(end);
	return len > n && !strcmp(name + len - n, end);
}

ParameterizedTestParameters(health_cases, each)
{
	return case_dirs(CASES, yaml_files);
}

ParameterizedTest(struct case_param *p, health_cases, each)
{
	json_t *c = load_case(p->name);
	const char *want = json_string_value(json_object_get(c, "want"));
	const char *reason = json_string_value(json_object_get(c, "reason"));
	struct health_rules *rules =
		load_rules(p->name, json_object_get(c, "rules"));
	struct health h;
	enum health_state state;

	cr_assert_not_null(want, "%s: no want", p->name);
	cr_assert_not_null(reason, "%s: no reason", p->name);
	cr_assert_eq(health_state_parse(want, &state), 0, "%s: want %s",
		     p->name, want);
	cr_expect(named_for(p->name, want), "%s: the name must end in -%s.yaml",
		  p->name, want);
	health_of(&h, json_object_get(c, "object"), rules);
	cr_assert_not_null(h.reason, "%s: no reason", p->name);
	cr_expect_str_eq(health_state_name(h.state), want, "%s: %s (%s)",
			 p->name, health_state_name(h.state), h.reason);
	cr_expect_not_null(strstr(h.reason, reason),
			   "%s: reason \"%s\" lacks \"%s\"", p->name, h.reason,
			   reason);
	cr_expect_null(strchr(h.reason, '\n'), "%s: two lines", p->name);
	cr_expect_leq(strlen(h.reason), HEALTH_REASON_MAX, "%s", p->name);
	health_release(&h);
	health_rules_free(rules);
	json_decref(c);
}

/*
 * The cases are there to be read: a lost or unreadable folder would leave
 * the parameterized test above with nothing to run.
 */
Test(health_cases, at_least_sixty_cases)
{
	struct dirent **names;
	int n = scandir(CASES, &names, yaml_files, alphasort);

	cr_assert_geq(n, 60, "want at least 60 health cases, have %d", n);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * Every state but Missing (which only a NULL object has) is proved by
 * some case: the claim of each case file is its name's last word.
 */
Test(health_cases, every_state_has_a_case)
{
	static const char *const ends[] = {"-healthy.yaml", "-suspended.yaml",
					   "-progressing.yaml", "-missing.yaml",
					   "-degraded.yaml", "-unknown.yaml"};
	struct dirent **names;
	int n = scandir(CASES, &names, yaml_files, alphasort);
	int seen[6] = {0};

	for (int i = 0; i < n; i++) {
		size_t len = strlen(names[i]->d_name);

		for (size_t e = 0; e < 6; e++) {
			size_t el = strlen(ends[e]);

			if (len > el &&
			    !strcmp(names[i]->d_name + len - el, ends[e]))
				seen[e]++;
		}
		free(names[i]);
	}
	free(names);
	for (size_t e = 0; e < 6; e++)
		cr_expect_gt(seen[e], 0, "no case ends in %s", ends[e]);
}
