/*
 * Health rules from the configuration file: each bad rule is refused with
 * its cause and the JSON pointer of the value at fault (for the loader's
 * FILE:LINE), and a refused rule leaves the set unchanged.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "health/health.h"

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);

	cr_assert_not_null(v, "%s: %s", text, jerr.text);
	return v;
}

/* Add the rule written as JSON; its code, and *where and err filled. */
static int add(struct health_rules *r, const char *text, char **where,
	       struct err *err)
{
	json_t *v = parse(text);
	int error = health_rules_add(r, v, where, err);

	json_decref(v);
	return error;
}

static const struct bad {
	const char *rule;
	int code;
	const char *where;
	const char *cause;
} bad[] = {
	{"[]", ERR_INVALID, "", "expected a mapping, got a list"},
	{"{\"kind\": \"A\", \"condition\": \"Ready\", \"colour\": 1}",
	 ERR_INVALID, "/colour", "unknown key"},
	{"{\"kind\": \"A\", \"condition\": \"Ready\", \"a/b~c\": 1}",
	 ERR_INVALID, "/a~1b~0c", "unknown key"},
	{"{\"condition\": \"Ready\"}", ERR_INVALID, "/kind", "required"},
	{"{\"kind\": \"\", \"condition\": \"Ready\"}", ERR_INVALID, "/kind",
	 "must not be empty"},
	{"{\"kind\": 3, \"condition\": \"Ready\"}", ERR_INVALID, "/kind",
	 "expected a string, got an integer"},
	{"{\"group\": [\"x\"], \"kind\": \"A\", \"condition\": \"Ready\"}",
	 ERR_INVALID, "/group", "expected a string, got a list"},
	{"{\"kind\": \"A\"}", ERR_INVALID, "", "needs condition or fields"},
	{"{\"kind\": \"A\", \"condition\": \"\"}", ERR_INVALID, "/condition",
	 "must not be empty"},
	{"{\"kind\": \"A\", \"condition\": []}", ERR_INVALID, "/condition",
	 "must not be empty"},
	{"{\"kind\": \"A\", \"condition\": {\"type\": \"Ready\"}}", ERR_INVALID,
	 "/condition", "expected a string or a list, got a mapping"},
	{"{\"kind\": \"A\", \"condition\": [\"Ready\", 1]}", ERR_INVALID,
	 "/condition/1", "expected a string, got an integer"},
	{"{\"kind\": \"A\", \"condition\": [\"Ready\", \"Ready\"]}",
	 ERR_INVALID, "/condition/1", "\"Ready\" is listed twice"},
	{"{\"kind\": \"A\", \"condition\": \"Ready\", \"healthy\": \"True\"}",
	 ERR_INVALID, "/healthy", "expected a list, got a string"},
	{"{\"kind\": \"A\", \"condition\": \"Ready\", \"healthy\": []}",
	 ERR_INVALID, "/healthy", "must not be empty"},
	{"{\"kind\": \"A\", \"condition\": \"Ready\", \"degraded\": [{}]}",
	 ERR_INVALID, "/degraded/0", "expected a string, got a mapping"},
	{"{\"kind\": \"A\", \"condition\": \"Ready\", \"degraded\": [\"\"]}",
	 ERR_INVALID, "/degraded/0", "must not be empty"},
	{"{\"kind\": \"A\", \"condition\": \"Ready\", \"healthy\": [\"True\"],"
	 " \"degraded\": [\"False\", \"True\"]}",
	 ERR_INVALID, "/degraded/1", "\"True\" is also in healthy"},
	{"{\"kind\": \"A\", \"healthy\": [\"True\"], \"fields\": [{\"path\":"
	 " \".status.phase\", \"healthy\": [\"Running\"]}]}",
	 ERR_INVALID, "/healthy", "only used with condition"},
	{"{\"kind\": \"A\", \"condition\": \"Ready\", \"observedGeneration\":"
	 " \"yes\"}",
	 ERR_INVALID, "/observedGeneration",
	 "expected a boolean, got a string"},
	{"{\"kind\": \"A\", \"fields\": {}}", ERR_INVALID, "/fields",
	 "expected a list, got a mapping"},
	{"{\"kind\": \"A\", \"fields\": []}", ERR_INVALID, "/fields",
	 "must not be empty"},
	{"{\"kind\": \"A\", \"fields\": [\".status.phase\"]}", ERR_INVALID,
	 "/fields/0", "expected a mapping, got a string"},
	{"{\"kind\": \"A\", \"fields\": [{\"healthy\": [\"Running\"]}]}",
	 ERR_INVALID, "/fields/0/path", "required"},
	{"{\"kind\": \"A\", \"fields\": [{\"path\": \".status.phase\"}]}",
	 ERR_INVALID, "/fields/0/healthy", "required"},
	{"{\"kind\": \"A\", \"fields\": [{\"path\": \".a\","
	 " \"healthy\": [\"x\"]}, {\"path\": \"status.phase\","
	 " \"healthy\": [\"Running\"]}]}",
	 ERR_INVALID, "/fields/1/path",
	 "\"status.phase\" is not a field path: it must start with '.'"},
	{"{\"kind\": \"A\", \"fields\": [{\"path\": \".status..phase\","
	 " \"healthy\": [\"Running\"]}]}",
	 ERR_INVALID, "/fields/0/path", "a key is empty"},
	{"{\"kind\": \"A\", \"fields\": [{\"path\": \".status.\","
	 " \"healthy\": [\"Running\"]}]}",
	 ERR_INVALID, "/fields/0/path", "a key is empty"},
	{"{\"kind\": \"A\", \"fields\": [{\"path\": \".status.items[x]\","
	 " \"healthy\": [\"Running\"]}]}",
	 ERR_INVALID, "/fields/0/path", "a list index is not [N]"},
	{"{\"kind\": \"A\", \"fields\": [{\"path\": \".status.items[0\","
	 " \"healthy\": [\"Running\"]}]}",
	 ERR_INVALID, "/fields/0/path", "a list index is not [N]"},
	{"{\"kind\": \"A\", \"fields\": [{\"path\": \".status]\","
	 " \"healthy\": [\"Running\"]}]}",
	 ERR_INVALID, "/fields/0/path", "a ']' without '['"},
	{"{\"kind\": \"A\", \"fields\": [{\"path\": "
	 "\".a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a"
	 ".a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a\","
	 " \"healthy\": [\"x\"]}]}",
	 ERR_INVALID, "/fields/0/path", "more than 32 steps"},
	{"{\"kind\": \"A\", \"fields\": [{\"path\": \".status.phase\","
	 " \"healthy\": [\"Running\"], \"when\": 1}]}",
	 ERR_INVALID, "/fields/0/when", "unknown key"},
	{"{\"kind\": \"A\", \"fields\": [{\"path\": \".status.phase\","
	 " \"healthy\": [\"Running\"], \"progressing\": [\"Running\"]}]}",
	 ERR_INVALID, "/fields/0/progressing/0",
	 "\"Running\" is also in healthy"},
	{"{\"kind\": \"A\", \"fields\": [{\"path\": \".status.phase\","
	 " \"healthy\": [1.5]}]}",
	 ERR_INVALID, "/fields/0/healthy/0", "expected a string, got a number"},
};

Test(health_rules, each_bad_rule_names_its_cause_and_place)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct health_rules *r = health_rules_new();
		struct err err = ERR_INIT;
		char *where = NULL;
		int code = add(r, bad[i].rule, &where, &err);

		cr_expect_eq(code, bad[i].code, "%s: code %d", bad[i].rule,
			     code);
		cr_expect_eq(err_count(&err), 1, "%s: %s", bad[i].rule,
			     err_msg(&err));
		cr_expect_not_null(strstr(err_first(&err), bad[i].cause),
				   "%s: cause \"%s\", want \"%s\"", bad[i].rule,
				   err_first(&err), bad[i].cause);
		cr_expect_str_eq(where ? where : "(null)", bad[i].where,
				 "%s: at %s", bad[i].rule, where);
		free(where);
		err_release(&err);
		health_rules_free(r);
	}
}

Test(health_rules, a_second_rule_for_a_kind_is_refused_and_the_first_kept)
{
	struct health_rules *r = health_rules_new();
	struct err err = ERR_INIT;
	char *where = NULL;
	json_t *obj = parse("{\"apiVersion\": \"example.com/v1\", \"kind\": "
			    "\"Widget\", \"status\": {\"phase\": \"Up\"}}");
	struct health h;

	cr_assert_eq(add(r,
			 "{\"group\": \"example.com\", \"kind\": \"Widget\","
			 " \"fields\": [{\"path\": \".status.phase\","
			 " \"healthy\": [\"Up\"]}]}",
			 &where, &err),
		     0, "%s", err_msg(&err));
	cr_assert_null(where);
	cr_assert_eq(add(r,
			 "{\"group\": \"example.com\", \"kind\": \"Widget\","
			 " \"fields\": [{\"path\": \".status.phase\","
			 " \"healthy\": [\"Down\"]}]}",
			 &where, &err),
		     ERR_EXISTS);
	cr_expect_str_eq(err_first(&err), "a rule for group \"example.com\" "
					  "kind Widget exists already");
	cr_expect_str_eq(where, "/kind");
	health_of(&h, obj, r);
	cr_expect_eq(h.state, HEALTH_HEALTHY, "%s", h.reason);
	health_release(&h);
	free(where);
	json_decref(obj);
	err_release(&err);
	health_rules_free(r);
}

Test(health_rules, the_same_kind_in_another_group_is_another_rule)
{
	struct health_rules *r = health_rules_new();
	struct err err = ERR_INIT;

	cr_assert_eq(add(r, "{\"kind\": \"Widget\", \"condition\": \"Ready\"}",
			 NULL, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(add(r,
			 "{\"group\": \"example.com\", \"kind\": \"Widget\","
			 " \"condition\": \"Ready\"}",
			 NULL, &err),
		     0, "%s", err_msg(&err));
	cr_expect_eq(err_count(&err), 0);
	err_release(&err);
	health_rules_free(r);
}

Test(health_rules, a_rule_decides_before_the_built_in_judge)
{
	struct health_rules *r = health_rules_new();
	struct err err = ERR_INIT;
	json_t *svc = parse("{\"apiVersion\": \"v1\", \"kind\": \"Service\","
			    " \"spec\": {\"type\": \"ClusterIP\"},"
			    " \"status\": {\"loadBalancer\": {}}}");
	struct health h;

	health_of(&h, svc, r);
	cr_expect_eq(h.state, HEALTH_HEALTHY, "%s", h.reason);
	health_release(&h);
	cr_assert_eq(add(r,
			 "{\"kind\": \"Service\", \"fields\": [{\"path\": "
			 "\".status.loadBalancer.ingress[0].ip\", \"healthy\":"
			 " [\"10.0.0.1\"]}]}",
			 NULL, &err),
		     0, "%s", err_msg(&err));
	health_of(&h, svc, r);
	cr_expect_eq(h.state, HEALTH_PROGRESSING, "%s", h.reason);
	cr_expect_str_eq(h.reason,
			 "no .status.loadBalancer.ingress[0].ip yet");
	health_release(&h);
	json_decref(svc);
	err_release(&err);
	health_rules_free(r);
}

Test(health_rules, freeing_accepts_null)
{
	health_rules_free(NULL);
	health_release(NULL);
}
