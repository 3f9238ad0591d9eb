/*
 * Post-build substitution (render_substitute).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "renderers/render.h"

/* Objects of a YAML stream, origins "in.yaml:LINE". */
static void load(struct diff_objset *set, const char *yaml)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err err = ERR_INIT;
	char origin[64];

	cr_assert_eq(render_parse(&docs, yaml, strlen(yaml), "in.yaml", &err),
		     0, "%s", err_msg(&err));
	for (size_t i = 0; i < docs.len; i++) {
		struct diff_object *obj;

		snprintf(origin, sizeof(origin), "in.yaml:%u",
			 docs.items[i].line);
		cr_assert_eq(diff_object_new(&obj, docs.items[i].value, origin,
					     &err),
			     0, "%s", err_msg(&err));
		cr_assert_eq(diff_objset_add(set, obj, &err), 0, "%s",
			     err_msg(&err));
	}
	render_docs_release(&docs);
	err_release(&err);
}

static const char *names[] = {"IMAGE",	  "TAG",     "EMPTY", "NS",
			      "REPLICAS", "YAMLISH", "NAME"};
static const char *values[] = {
	"nginx", "1.27", "", "prod", "3", "x\n  privileged: true\n- evil: 1",
	"web"};
static const struct render_vars vars = {names, values, 7};

/* The string at a JSON pointer-ish path of item i. */
static const char *str_at(const struct diff_objset *set, size_t i,
			  const char *a, const char *b, const char *c)
{
	json_t *v = set->items[i]->json;

	v = json_object_get(v, a);
	if (b)
		v = json_object_get(v, b);
	if (c)
		v = json_object_get(v, c);
	cr_assert(json_is_string(v), "%s.%s.%s is not a string", a, b ? b : "",
		  c ? c : "");
	return json_string_value(v);
}

#define CM_HEAD "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"

Test(render_substitute, forms_and_defaults)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	load(&set,
	     CM_HEAD "data:\n"
		     "  plain: \"${IMAGE}:${TAG}\"\n"
		     "  unset_eq: \"${MISSING:=fallback}\"\n"
		     "  unset_dash: \"${MISSING:-other}\"\n"
		     "  empty_eq: \"${EMPTY:=was-empty}\"\n"
		     "  empty_dash: \"${EMPTY:-was-empty}\"\n"
		     "  set_eq: \"${TAG:=ignored}\"\n"
		     "  empty_default: \"a${MISSING:=}b\"\n"
		     "  default_with_colon: \"${MISSING:-http://x:80/p}\"\n"
		     "  empty_var: \"[${EMPTY}]\"\n");
	cr_assert_eq(render_substitute(&set, &vars, true, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(str_at(&set, 0, "data", "plain", NULL), "nginx:1.27");
	cr_assert_str_eq(str_at(&set, 0, "data", "unset_eq", NULL), "fallback");
	cr_assert_str_eq(str_at(&set, 0, "data", "unset_dash", NULL), "other");
	cr_assert_str_eq(str_at(&set, 0, "data", "empty_eq", NULL),
			 "was-empty");
	cr_assert_str_eq(str_at(&set, 0, "data", "empty_dash", NULL),
			 "was-empty");
	cr_assert_str_eq(str_at(&set, 0, "data", "set_eq", NULL), "1.27");
	cr_assert_str_eq(str_at(&set, 0, "data", "empty_default", NULL), "ab");
	cr_assert_str_eq(str_at(&set, 0, "data", "default_with_colon", NULL),
			 "http://x:80/p");
	cr_assert_str_eq(str_at(&set, 0, "data", "empty_var", NULL), "[]");
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_substitute, escapes_and_lone_dollars)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	load(&set, CM_HEAD "data:\n"
			   "  escaped: \"$${IMAGE} and $${NOPE:=x}\"\n"
			   "  mixed: \"$${IMAGE}=${IMAGE}\"\n"
			   "  lone: \"$IMAGE costs $5, $$ and $\"\n"
			   "  triple: \"$$${TAG}\"\n");
	cr_assert_eq(render_substitute(&set, &vars, true, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(str_at(&set, 0, "data", "escaped", NULL),
			 "${IMAGE} and ${NOPE:=x}");
	cr_assert_str_eq(str_at(&set, 0, "data", "mixed", NULL),
			 "${IMAGE}=nginx");
	cr_assert_str_eq(str_at(&set, 0, "data", "lone", NULL),
			 "$IMAGE costs $5, $$ and $");
	cr_assert_str_eq(str_at(&set, 0, "data", "triple", NULL), "$${TAG}");
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_substitute, strict_names_object_and_field)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	const char *msg;

	load(&set, "apiVersion: apps/v1\nkind: Deployment\n"
		   "metadata: {name: web, namespace: shop}\n"
		   "spec:\n  template:\n    spec:\n      containers:\n"
		   "      - name: web\n        image: \"${REGISTRY}/web\"\n"
		   "        args: [\"--a=${IMAGE}\", \"--b=${UNDEFINED_B}\"]\n"
		   "---\n" CM_HEAD "data: {k: \"${ALSO_MISSING}\"}\n");
	cr_assert_eq(render_substitute(&set, &vars, true, &err), ERR_INVALID);
	msg = err_msg(&err);
	cr_assert_eq(err_count(&err), 3, "%s", msg);
	cr_assert(strstr(msg, "in.yaml:1: Deployment.apps shop/web: "
			      ".spec.template.spec.containers[0].image: "
			      "variable REGISTRY is not defined"),
		  "%s", msg);
	cr_assert(strstr(msg, "in.yaml:1: Deployment.apps shop/web: "
			      ".spec.template.spec.containers[0].args[1]: "
			      "variable UNDEFINED_B is not defined"),
		  "%s", msg);
	cr_assert(strstr(msg, "in.yaml:12: ConfigMap cm: .data.k: variable "
			      "ALSO_MISSING is not defined"),
		  "%s", msg);
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_substitute, lenient_makes_undefined_empty)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	load(&set, CM_HEAD "data: {k: \"<${NOPE}>\", d: \"${NOPE:-x}\"}\n");
	cr_assert_eq(render_substitute(&set, &vars, false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(str_at(&set, 0, "data", "k", NULL), "<>");
	cr_assert_str_eq(str_at(&set, 0, "data", "d", NULL), "x");
	cr_assert_eq(err_count(&err), 0);
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_substitute, opt_out_annotation)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	load(&set,
	     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: skipped\n"
	     "  annotations: {syncd.io/substitute: disabled}\n"
	     "data: {script: \"echo ${#arr[@]} ${UNDEFINED}\"}\n"
	     "---\n"
	     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: active\n"
	     "  annotations: {syncd.io/substitute: enabled}\n"
	     "data: {k: \"${TAG}\"}\n");
	cr_assert_eq(render_substitute(&set, &vars, true, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(str_at(&set, 0, "data", "script", NULL),
			 "echo ${#arr[@]} ${UNDEFINED}");
	cr_assert_str_eq(str_at(&set, 1, "data", "k", NULL), "1.27");
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_substitute, keys_untouched_values_stay_strings)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	json_t *data;

	load(&set, CM_HEAD "data:\n"
			   "  ${TAG}: \"${TAG}\"\n"
			   "  yaml: \"${YAMLISH}\"\n"
			   "  count: \"${REPLICAS}\"\n");
	cr_assert_eq(render_substitute(&set, &vars, true, &err), 0, "%s",
		     err_msg(&err));
	data = json_object_get(set.items[0]->json, "data");
	cr_assert_str_eq(json_string_value(json_object_get(data, "${TAG}")),
			 "1.27");
	cr_assert_null(json_object_get(data, "1.27"));
	/* YAML-looking text is one string; no field appears. */
	cr_assert_str_eq(str_at(&set, 0, "data", "yaml", NULL),
			 "x\n  privileged: true\n- evil: 1");
	cr_assert_null(json_object_get(data, "privileged"));
	cr_assert_eq(json_object_size(data), 3);
	/* A string stays a string, even when the value reads as a number. */
	cr_assert(json_is_string(json_object_get(data, "count")));
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_substitute, nested_lists_and_maps_non_strings_kept)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	json_t *spec, *deep;

	load(&set,
	     "apiVersion: example.com/v1\nkind: Thing\n"
	     "metadata: {name: t}\n"
	     "spec:\n"
	     "  num: 5\n  flag: true\n  nothing: null\n"
	     "  lists: [[\"${TAG}\", [\"a-${IMAGE}\"]], {k: [\"${NS}\"]}]\n"
	     "  map: {a: {b: {c: \"${IMAGE}:${TAG}\"}}}\n");
	cr_assert_eq(render_substitute(&set, &vars, true, &err), 0, "%s",
		     err_msg(&err));
	spec = json_object_get(set.items[0]->json, "spec");
	deep = json_object_get(spec, "lists");
	cr_assert_str_eq(
		json_string_value(json_array_get(json_array_get(deep, 0), 0)),
		"1.27");
	cr_assert_str_eq(
		json_string_value(json_array_get(
			json_array_get(json_array_get(deep, 0), 1), 0)),
		"a-nginx");
	cr_assert_str_eq(
		json_string_value(json_array_get(
			json_object_get(json_array_get(deep, 1), "k"), 0)),
		"prod");
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(
				json_object_get(json_object_get(spec, "map"),
						"a"),
				"b"),
			"c")),
		"nginx:1.27");
	cr_assert_eq(json_integer_value(json_object_get(spec, "num")), 5);
	cr_assert(json_is_true(json_object_get(spec, "flag")));
	cr_assert(json_is_null(json_object_get(spec, "nothing")));
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_substitute, bad_forms_are_errors)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	const char *msg;

	load(&set, CM_HEAD "data:\n"
			   "  a: \"${1ABC}\"\n"
			   "  b: \"${#arr[@]}\"\n"
			   "  c: \"${UNCLOSED\"\n"
			   "  d: \"${X:=${Y}}\"\n"
			   "  e: \"${}\"\n");
	cr_assert_eq(render_substitute(&set, &vars, false, &err), ERR_INVALID);
	msg = err_msg(&err);
	cr_assert_eq(err_count(&err), 5, "%s", msg);
	cr_assert(strstr(msg, "ConfigMap cm: .data.a: bad substitution "
			      "\"${1ABC}\""),
		  "%s", msg);
	cr_assert(strstr(msg, ".data.b: bad substitution \"${#arr[@]}\""), "%s",
		  msg);
	cr_assert(strstr(msg, ".data.c: bad substitution \"${UNCLOSED\""), "%s",
		  msg);
	cr_assert(strstr(msg, ".data.d: bad substitution"), "%s", msg);
	cr_assert(strstr(msg, ".data.e: bad substitution \"${}\""), "%s", msg);
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_substitute, identity_changes_rekey_the_set)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	struct diff_key key;

	load(&set, "apiVersion: v1\nkind: ConfigMap\n"
		   "metadata: {name: \"${NAME}-cm\", namespace: \"${NS}\"}\n");
	cr_assert_eq(render_substitute(&set, &vars, true, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(set.len, 1);
	cr_assert_str_eq(set.items[0]->key.name, "web-cm");
	cr_assert_str_eq(set.items[0]->key.ns, "prod");
	cr_assert_eq(diff_key_init(&key, "", "ConfigMap", "prod", "web-cm"), 0);
	cr_assert_eq(diff_objset_get(&set, &key), set.items[0]);
	diff_key_release(&key);
	diff_objset_release(&set);

	/* Two objects that become one identity are reported. */
	load(&set, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"
		   "---\n"
		   "apiVersion: v1\nkind: ConfigMap\n"
		   "metadata: {name: \"${NAME}\"}\n");
	cr_assert_eq(render_substitute(&set, &vars, true, &err), ERR_EXISTS);
	cr_assert(strstr(err_msg(&err), "in.yaml:5"), "%s", err_msg(&err));
	cr_assert(strstr(err_msg(&err), "in.yaml:1"), "%s", err_msg(&err));
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_substitute, limits_and_bad_variable_names)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	static char big[600 * 1024];
	const char *n[] = {"BIG"}, *v[] = {big};
	struct render_vars bigvars = {n, v, 1};
	const char *bn[] = {"OK", "1BAD", "has-dash", ""};
	const char *bv[] = {"a", "b", "c", "d"};
	struct render_vars badvars = {bn, bv, 4};

	memset(big, 'x', sizeof(big) - 1);
	load(&set, CM_HEAD "data: {one: \"${BIG}\", two: \"${BIG}${BIG}\"}\n");
	cr_assert_eq(render_substitute(&set, &bigvars, true, &err),
		     ERR_INVALID);
	cr_assert_eq(err_count(&err), 1, "%s", err_msg(&err));
	cr_assert(strstr(err_msg(&err), ".data.two: substituted value is over "
					"the 1048576-byte limit"),
		  "%s", err_msg(&err));
	cr_assert_eq(strlen(str_at(&set, 0, "data", "one", NULL)),
		     sizeof(big) - 1);
	err_reset(&err);
	cr_assert_eq(render_substitute(&set, &badvars, true, &err),
		     ERR_INVALID);
	cr_assert_eq(err_count(&err), 3, "%s", err_msg(&err));
	cr_assert(strstr(err_msg(&err), "\"1BAD\""), "%s", err_msg(&err));
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_substitute, no_vars_and_empty_set)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	cr_assert_eq(render_substitute(&set, NULL, true, &err), 0);
	load(&set, CM_HEAD "data: {k: \"${A:=d}\", l: \"no vars\"}\n");
	cr_assert_eq(render_substitute(&set, NULL, true, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(str_at(&set, 0, "data", "k", NULL), "d");
	cr_assert_str_eq(str_at(&set, 0, "data", "l", NULL), "no vars");
	diff_objset_release(&set);
	err_release(&err);
}
