/*
 * diff_ssa_apply(): the scenarios of docs/kubernetes-api.md "Server-side
 * apply", asserting the resulting object and managedFields exactly.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"

#define T1 "2026-11-01T10:00:00Z"
#define T2 "2026-11-01T10:05:00Z"
#define T3 "2026-11-01T10:10:00Z"

static struct diff_schemas *reg;

static void setup(void)
{
	reg = diff_schemas_new();
	cr_assert_not_null(reg);
}

static void teardown(void)
{
	diff_schemas_free(reg);
}

TestSuite(ssa, .init = setup, .fini = teardown);

/* JSON written with ' for " (the tests' texts hold no apostrophes). */
static json_t *J(const char *text)
{
	char *s = strdup(text), *p;
	json_error_t jerr;
	json_t *j;

	cr_assert_not_null(s);
	for (p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	j = json_loads(s, 0, &jerr);
	cr_assert_not_null(j, "bad test JSON: %s: %s", jerr.text, s);
	free(s);
	return j;
}

/* Canonical text: keys sorted, arrays in order. */
static char *canon(const json_t *j)
{
	struct buf b = BUF_INIT;

	cr_assert_eq(diff_json_dump(j, 0, &b), 0);
	return buf_detach(&b, NULL);
}

static void expect_json(const json_t *got, const char *want_text)
{
	json_t *want = J(want_text);
	char *g, *w = canon(want);

	cr_assert_not_null(got, "no object, want %s", w);
	g = canon(got);
	cr_expect_str_eq(g, w);
	free(g);
	free(w);
	json_decref(want);
}

static const struct diff_schema *schema_of(const json_t *obj)
{
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	const char *slash = av ? strchr(av, '/') : NULL;
	char group[64] = "";

	if (slash)
		snprintf(group, sizeof(group), "%.*s", (int)(slash - av), av);
	return diff_schemas_lookup(
		reg, group, json_string_value(json_object_get(obj, "kind")));
}

/* Apply; the caller releases *res. live_text may be NULL (create). */
static void apply(struct diff_ssa_result *res, const char *live_text,
		  const char *applied_text, const char *manager, bool force,
		  const char *time)
{
	json_t *live = live_text ? J(live_text) : NULL;
	json_t *applied = J(applied_text);
	struct err err = ERR_INIT;
	int rc = diff_ssa_apply(res, live, applied, schema_of(applied),
				manager, force, time, &err);

	cr_assert_eq(rc, 0, "apply failed (%d): %s", rc, err_first(&err));
	json_decref(live);
	json_decref(applied);
	err_release(&err);
}

/* --- a ConfigMap applied by two managers --- */

#define CM_SYNCD                                                             \
	"{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm',"     \
	"'namespace':'default','labels':{'a':'1'}},'data':{'x':'1'}}"

#define CM_SYNCD_MF                                                          \
	"{'manager':'syncd','operation':'Apply','apiVersion':'v1',"          \
	"'time':'" T1 "','fieldsType':'FieldsV1','fieldsV1':{'f:data':{"    \
	"'f:x':{}},'f:metadata':{'f:labels':{'f:a':{}}}}}"

#define CM_LIVE                                                              \
	"{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm',"     \
	"'namespace':'default','uid':'u1','resourceVersion':'7',"            \
	"'labels':{'a':'1'},'managedFields':[" CM_SYNCD_MF "]},"             \
	"'data':{'x':'1'}}"

Test(ssa, create)
{
	struct diff_ssa_result res;

	apply(&res, NULL, CM_SYNCD, "syncd", false, T1);
	cr_expect(res.changed);
	cr_expect_null(res.conflicts);
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{"
		    "'name':'cm','namespace':'default','labels':{'a':'1'},"
		    "'managedFields':[" CM_SYNCD_MF "]},'data':{'x':'1'}}");
	diff_ssa_result_release(&res);
}

Test(ssa, reapply_same_is_unchanged)
{
	struct diff_ssa_result res;

	apply(&res, CM_LIVE, CM_SYNCD, "syncd", false, T2);
	cr_expect_not(res.changed);
	cr_expect_null(res.conflicts);
	/* the live object as it was, old time included */
	expect_json(res.object, CM_LIVE);
	diff_ssa_result_release(&res);
}

Test(ssa, two_appliers_different_fields)
{
	struct diff_ssa_result res;

	apply(&res, CM_LIVE,
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm'},"
	      "'data':{'y':'2'}}",
	      "other", false, T2);
	cr_expect(res.changed);
	cr_expect_null(res.conflicts);
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{"
		    "'name':'cm','namespace':'default','uid':'u1',"
		    "'resourceVersion':'7','labels':{'a':'1'},"
		    "'managedFields':[" CM_SYNCD_MF ",{'manager':'other',"
		    "'operation':'Apply','apiVersion':'v1','time':'" T2 "',"
		    "'fieldsType':'FieldsV1','fieldsV1':{'f:data':{"
		    "'f:y':{}}}}]},'data':{'x':'1','y':'2'}}");
	diff_ssa_result_release(&res);
}

#define CM_SHARED_MF                                                         \
	CM_SYNCD_MF ",{'manager':'other','operation':'Apply',"               \
		    "'apiVersion':'v1','time':'" T2 "','fieldsType':"        \
		    "'FieldsV1','fieldsV1':{'f:data':{'f:x':{}}}}"

Test(ssa, same_value_is_shared_ownership)
{
	struct diff_ssa_result res;

	apply(&res, CM_LIVE,
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm'},"
	      "'data':{'x':'1'}}",
	      "other", false, T2);
	/* only managedFields change, and that is a write */
	cr_expect(res.changed);
	cr_expect_null(res.conflicts);
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{"
		    "'name':'cm','namespace':'default','uid':'u1',"
		    "'resourceVersion':'7','labels':{'a':'1'},"
		    "'managedFields':[" CM_SHARED_MF "]},'data':{'x':'1'}}");
	diff_ssa_result_release(&res);
}

Test(ssa, conflict_without_force)
{
	struct diff_ssa_result res;
	struct buf msg = BUF_INIT;
	json_t *causes = NULL;

	apply(&res, CM_LIVE,
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm'},"
	      "'data':{'x':'2','z':'3'}}",
	      "other", false, T2);
	cr_expect_null(res.object);
	cr_expect_not(res.changed);
	expect_json(res.conflicts,
		    "[{'manager':'syncd','operation':'Apply',"
		    "'apiVersion':'v1','field':'.data.x'}]");
	cr_assert_eq(diff_ssa_conflict_message(res.conflicts, &msg, &causes),
		     0);
	cr_expect_str_eq(buf_cstr(&msg), "Apply failed with 1 conflict: "
					 "conflict with \"syncd\": .data.x");
	expect_json(causes, "[{'reason':'FieldManagerConflict','message':"
			    "'conflict with \\'syncd\\'','field':'.data.x'}]");
	json_decref(causes);
	buf_release(&msg);
	diff_ssa_result_release(&res);
}

Test(ssa, conflict_with_force_takes_the_field)
{
	struct diff_ssa_result res;

	apply(&res, CM_LIVE,
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm'},"
	      "'data':{'x':'2'}}",
	      "other", true, T2);
	cr_expect(res.changed);
	cr_expect_null(res.conflicts);
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{"
		    "'name':'cm','namespace':'default','uid':'u1',"
		    "'resourceVersion':'7','labels':{'a':'1'},"
		    "'managedFields':[{'manager':'syncd','operation':'Apply',"
		    "'apiVersion':'v1','time':'" T1 "','fieldsType':"
		    "'FieldsV1','fieldsV1':{'f:metadata':{'f:labels':{"
		    "'f:a':{}}}}},{'manager':'other','operation':'Apply',"
		    "'apiVersion':'v1','time':'" T2 "','fieldsType':"
		    "'FieldsV1','fieldsV1':{'f:data':{'f:x':{}}}}]},"
		    "'data':{'x':'2'}}");
	diff_ssa_result_release(&res);
}

Test(ssa, field_no_longer_sent_is_removed)
{
	struct diff_ssa_result res;

	apply(&res, CM_LIVE,
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm',"
	      "'namespace':'default'},'data':{'x':'1'}}",
	      "syncd", false, T2);
	cr_expect(res.changed);
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{"
		    "'name':'cm','namespace':'default','uid':'u1',"
		    "'resourceVersion':'7','managedFields':[{'manager':"
		    "'syncd','operation':'Apply','apiVersion':'v1','time':'" T2
		    "','fieldsType':'FieldsV1','fieldsV1':{'f:data':{"
		    "'f:x':{}}}}]},'data':{'x':'1'}}");
	diff_ssa_result_release(&res);
}

Test(ssa, co_owned_field_not_sent_stays)
{
	struct diff_ssa_result res;

	apply(&res,
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm',"
	      "'namespace':'default','labels':{'a':'1'},'managedFields':["
	      CM_SHARED_MF "]},'data':{'x':'1'}}",
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm',"
	      "'labels':{'a':'1'}}}",
	      "syncd", false, T3);
	cr_expect(res.changed);
	/* x stays (other owns it too); syncd just stops owning it */
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{"
		    "'name':'cm','namespace':'default','labels':{'a':'1'},"
		    "'managedFields':[{'manager':'other','operation':'Apply',"
		    "'apiVersion':'v1','time':'" T2 "','fieldsType':"
		    "'FieldsV1','fieldsV1':{'f:data':{'f:x':{}}}},"
		    "{'manager':'syncd','operation':'Apply','apiVersion':"
		    "'v1','time':'" T3 "','fieldsType':'FieldsV1','fieldsV1':"
		    "{'f:metadata':{'f:labels':{'f:a':{}}}}}]},"
		    "'data':{'x':'1'}}");
	diff_ssa_result_release(&res);
}

/* --- the Deployment of the docs, scaled by an HPA --- */

#define DEPLOY_KUBECTL_MF                                                    \
	"{'manager':'kubectl','operation':'Apply','apiVersion':'apps/v1',"   \
	"'time':'" T1 "','fieldsType':'FieldsV1','fieldsV1':{'f:spec':{"     \
	"'f:selector':{},'f:template':{'f:metadata':{'f:labels':{"          \
	"'f:app':{}}},'f:spec':{'f:containers':{"                           \
	"'k:{\\'name\\':\\'web\\'}':{'.':{},'f:image':{},'f:name':{}}}}}}}}"

#define DEPLOY_KCM_MF                                                        \
	"{'manager':'kube-controller-manager','operation':'Update',"         \
	"'apiVersion':'apps/v1','time':'" T2 "','fieldsType':'FieldsV1',"    \
	"'fieldsV1':{'f:spec':{'f:replicas':{}}},'subresource':'scale'}"

#define DEPLOY_SPEC(replicas)                                                \
	"'spec':{" replicas "'selector':{'matchLabels':{'app':'web'}},"      \
	"'template':{'metadata':{'labels':{'app':'web'}},'spec':{"          \
	"'containers':[{'name':'web','image':'web:1'}]}}}"

#define DEPLOY_LIVE                                                          \
	"{'apiVersion':'apps/v1','kind':'Deployment','metadata':{"           \
	"'name':'web','namespace':'default','managedFields':["              \
	DEPLOY_KUBECTL_MF "," DEPLOY_KCM_MF "]},"                            \
	DEPLOY_SPEC("'replicas':4,") "}"

#define DEPLOY_APPLY_REPLICAS                                                \
	"{'apiVersion':'apps/v1','kind':'Deployment','metadata':{"           \
	"'name':'web','namespace':'default'}," DEPLOY_SPEC("'replicas':2,") \
	"}"

#define DEPLOY_KUBECTL_REPLICAS_MF                                           \
	"{'manager':'kubectl','operation':'Apply','apiVersion':'apps/v1',"   \
	"'time':'" T3 "','fieldsType':'FieldsV1','fieldsV1':{'f:spec':{"     \
	"'f:replicas':{},'f:selector':{},'f:template':{'f:metadata':{"      \
	"'f:labels':{'f:app':{}}},'f:spec':{'f:containers':{"               \
	"'k:{\\'name\\':\\'web\\'}':{'.':{},'f:image':{},'f:name':{}}}}}}}}"

Test(ssa, scale_subresource_conflict)
{
	struct diff_ssa_result res;
	struct buf msg = BUF_INIT;
	json_t *causes = NULL;

	apply(&res, DEPLOY_LIVE, DEPLOY_APPLY_REPLICAS, "kubectl", false, T3);
	cr_expect_null(res.object);
	expect_json(res.conflicts,
		    "[{'manager':'kube-controller-manager','operation':"
		    "'Update','apiVersion':'apps/v1','subresource':'scale',"
		    "'field':'.spec.replicas'}]");
	cr_assert_eq(diff_ssa_conflict_message(res.conflicts, &msg, &causes),
		     0);
	cr_expect_str_eq(buf_cstr(&msg),
			 "Apply failed with 1 conflict: conflict with "
			 "\"kube-controller-manager\" with subresource "
			 "\"scale\" using apps/v1: .spec.replicas");
	expect_json(causes,
		    "[{'reason':'FieldManagerConflict','message':'conflict "
		    "with \\'kube-controller-manager\\' with subresource "
		    "\\'scale\\' using apps/v1','field':'.spec.replicas'}]");
	json_decref(causes);
	buf_release(&msg);
	diff_ssa_result_release(&res);
}

Test(ssa, scale_subresource_forced)
{
	struct diff_ssa_result res;

	apply(&res, DEPLOY_LIVE, DEPLOY_APPLY_REPLICAS, "kubectl", true, T3);
	cr_expect(res.changed);
	cr_expect_null(res.conflicts);
	/* the controller's entry loses its only field and goes */
	expect_json(res.object,
		    "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{"
		    "'name':'web','namespace':'default','managedFields':["
		    DEPLOY_KUBECTL_REPLICAS_MF "]},"
		    DEPLOY_SPEC("'replicas':2,") "}");
	diff_ssa_result_release(&res);
}

Test(ssa, scale_same_replicas_is_shared)
{
	struct diff_ssa_result res;

	apply(&res,
	      "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{"
	      "'name':'web','namespace':'default','managedFields':["
	      DEPLOY_KUBECTL_MF "," DEPLOY_KCM_MF "]},"
	      DEPLOY_SPEC("'replicas':2,") "}",
	      DEPLOY_APPLY_REPLICAS, "kubectl", false, T3);
	cr_expect(res.changed);
	cr_expect_null(res.conflicts);
	expect_json(res.object,
		    "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{"
		    "'name':'web','namespace':'default','managedFields':["
		    DEPLOY_KUBECTL_REPLICAS_MF "," DEPLOY_KCM_MF "]},"
		    DEPLOY_SPEC("'replicas':2,") "}");
	diff_ssa_result_release(&res);
}

Test(ssa, multiple_conflicts_message)
{
	json_t *c = J("[{'manager':'a','operation':'Apply','apiVersion':'v1',"
		      "'field':'.data.x'},{'manager':'a','operation':'Apply',"
		      "'apiVersion':'v1','field':'.data.y'},{'manager':'b',"
		      "'operation':'Update','apiVersion':'v1','field':"
		      "'.data.z'}]");
	struct buf msg = BUF_INIT;

	cr_assert_eq(diff_ssa_conflict_message(c, &msg, NULL), 0);
	cr_expect_str_eq(buf_cstr(&msg),
			 "Apply failed with 3 conflicts: conflicts with "
			 "\"a\":\n- .data.x\n- .data.y\nconflicts with \"b\" "
			 "using v1:\n- .data.z");
	buf_release(&msg);
	json_decref(c);
}

/* --- an object created without managedFields --- */

#define CM_BARE                                                              \
	"{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm',"     \
	"'namespace':'default'},'data':{'x':'1','y':'2'}}"

/* CM_BARE (x and y) after syncd's first apply of x=1 at T2. */
#define CM_AFTER_FIRST_APPLY                                                 \
	"{'apiVersion':'v1','kind':'ConfigMap','metadata':{"                 \
	"'name':'cm','namespace':'default','managedFields':["                \
	"{'manager':'syncd','operation':'Apply','apiVersion':"               \
	"'v1','time':'" T2 "','fieldsType':'FieldsV1','fieldsV1':"           \
	"{'f:data':{'f:x':{}}}},{'manager':'before-first-apply',"            \
	"'operation':'Update','apiVersion':'v1','time':'" T2 "',"            \
	"'fieldsType':'FieldsV1','fieldsV1':{'f:data':{'f:x':{},"            \
	"'f:y':{}}}}]},'data':{'x':'1','y':'2'}}"

Test(ssa, before_first_apply)
{
	struct diff_ssa_result res;

	apply(&res, CM_BARE,
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm'},"
	      "'data':{'x':'1'}}",
	      "syncd", false, T2);
	cr_expect(res.changed);
	cr_expect_null(res.conflicts);
	expect_json(res.object, CM_AFTER_FIRST_APPLY);
	diff_ssa_result_release(&res);
}

/* Entries apimachinery cannot read (here no operation) are dropped; when
 * none is left the object is as one without managedFields, and applying
 * the same object twice is still a no-op the second time. */
Test(ssa, no_readable_entry_is_before_first_apply)
{
	struct diff_ssa_result res, again;
	const char *applied = "{'apiVersion':'v1','kind':'ConfigMap',"
			      "'metadata':{'name':'cm'},'data':{'x':'1'}}";
	json_t *j = J(applied);
	struct err err = ERR_INIT;

	apply(&res,
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{"
	      "'name':'cm','namespace':'default','managedFields':[{"
	      "'manager':'old','fieldsType':'FieldsV1','fieldsV1':{"
	      "'f:data':{'f:y':{}}}}]},'data':{'x':'1','y':'2'}}",
	      applied, "syncd", false, T2);
	cr_expect(res.changed);
	expect_json(res.object, CM_AFTER_FIRST_APPLY);
	cr_assert_eq(diff_ssa_apply(&again, res.object, j, schema_of(j),
				    "syncd", false, T2, &err),
		     0, "%s", err_first(&err));
	cr_expect_not(again.changed);
	cr_expect_null(again.conflicts);
	diff_ssa_result_release(&again);
	diff_ssa_result_release(&res);
	json_decref(j);
	err_release(&err);
}

/* Two entries of one manager (apimachinery's identifier): the last one
 * counts, and the result has one. */
Test(ssa, duplicate_entries_are_one_manager)
{
	struct diff_ssa_result res;

	apply(&res,
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{"
	      "'name':'cm','namespace':'default','labels':{'a':'1',"
	      "'b':'2'},'managedFields':[{'manager':'ctl','operation':"
	      "'Apply','apiVersion':'v1','time':'" T1 "','fieldsType':"
	      "'FieldsV1','fieldsV1':{'f:metadata':{'f:labels':{"
	      "'f:a':{}}}}},{'manager':'ctl','operation':'Apply',"
	      "'apiVersion':'v1','time':'" T1 "','fieldsType':"
	      "'FieldsV1','fieldsV1':{'f:metadata':{'f:labels':{"
	      "'f:b':{}}}}}]},'data':{'x':'1'}}",
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm',"
	      "'labels':{'a':'9'}}}",
	      "syncd", false, T2);
	/* "a" belongs to no one now: no conflict, and ctl keeps only "b" */
	cr_expect_null(res.conflicts);
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{"
		    "'name':'cm','namespace':'default','labels':{'a':'9',"
		    "'b':'2'},'managedFields':[{'manager':'ctl','operation':"
		    "'Apply','apiVersion':'v1','time':'" T1 "','fieldsType':"
		    "'FieldsV1','fieldsV1':{'f:metadata':{'f:labels':{"
		    "'f:b':{}}}}},{'manager':'syncd','operation':'Apply',"
		    "'apiVersion':'v1','time':'" T2 "','fieldsType':"
		    "'FieldsV1','fieldsV1':{'f:metadata':{'f:labels':{"
		    "'f:a':{}}}}}]},'data':{'x':'1'}}");
	diff_ssa_result_release(&res);
}

/*
 * An entry written when the selector was granular (f:matchLabels under
 * it) against today's atomic selector: the apply replaces the selector
 * whole and prunes nothing inside it.
 */
Test(ssa, nothing_pruned_inside_an_atomic_value)
{
	struct diff_ssa_result res;

	apply(&res,
	      "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{"
	      "'name':'web','namespace':'default','managedFields':[{"
	      "'manager':'syncd','operation':'Apply','apiVersion':"
	      "'apps/v1','time':'" T1 "','fieldsType':'FieldsV1',"
	      "'fieldsV1':{'f:spec':{'f:selector':{'f:matchLabels':{"
	      "'.':{},'f:app':{}}}}}}]},'spec':{'selector':{"
	      "'matchLabels':{'app':'web'}}}}",
	      "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{"
	      "'name':'web'},'spec':{'selector':{'matchLabels':{'app':"
	      "'web'}}}}",
	      "syncd", false, T2);
	cr_expect_null(res.conflicts);
	cr_assert_not_null(res.object);
	expect_json(json_object_get(json_object_get(res.object, "spec"),
				    "selector"),
		    "{'matchLabels':{'app':'web'}}");
	diff_ssa_result_release(&res);
}

Test(ssa, before_first_apply_conflicts)
{
	struct diff_ssa_result res;
	struct buf msg = BUF_INIT;

	apply(&res, CM_BARE,
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm'},"
	      "'data':{'x':'9'}}",
	      "syncd", false, T2);
	cr_expect_null(res.object);
	cr_assert_eq(diff_ssa_conflict_message(res.conflicts, &msg, NULL), 0);
	cr_expect_str_eq(buf_cstr(&msg),
			 "Apply failed with 1 conflict: conflict with "
			 "\"before-first-apply\" using v1: .data.x");
	buf_release(&msg);
	diff_ssa_result_release(&res);
}

/* --- list types --- */

#define POD_LIVE                                                             \
	"{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p',"            \
	"'namespace':'default','finalizers':['a','b'],'managedFields':[{"   \
	"'manager':'other','operation':'Update','apiVersion':'v1',"         \
	"'time':'" T1 "','fieldsType':'FieldsV1','fieldsV1':{"              \
	"'f:metadata':{'f:finalizers':{'.':{},'v:\\'a\\'':{},"              \
	"'v:\\'b\\'':{}}},'f:spec':{'f:containers':{"                       \
	"'k:{\\'name\\':\\'web\\'}':{'.':{},'f:name':{},'f:ports':{"        \
	"'k:{\\'containerPort\\':80,\\'protocol\\':\\'TCP\\'}':{'.':{},"    \
	"'f:containerPort':{},'f:protocol':{}}}}}}}}]},"                    \
	"'spec':{'containers':[{'name':'web','ports':[{'containerPort':80,"  \
	"'protocol':'TCP'}]}]}}"

Test(ssa, map_list_by_key_with_default)
{
	struct diff_ssa_result res;

	apply(&res, POD_LIVE,
	      "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},"
	      "'spec':{'containers':[{'name':'web','ports':[{'containerPort':"
	      "80,'name':'http'},{'containerPort':443}]}]}}",
	      "syncd", false, T2);
	cr_expect(res.changed);
	cr_expect_null(res.conflicts);
	/* port 80 without protocol is the live item 80/TCP */
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p',"
		    "'namespace':'default','finalizers':['a','b'],"
		    "'managedFields':[{'manager':'syncd','operation':'Apply',"
		    "'apiVersion':'v1','time':'" T2 "','fieldsType':"
		    "'FieldsV1','fieldsV1':{'f:spec':{'f:containers':{"
		    "'k:{\\'name\\':\\'web\\'}':{'.':{},'f:name':{},"
		    "'f:ports':{'k:{\\'containerPort\\':80,\\'protocol\\':"
		    "\\'TCP\\'}':{'.':{},'f:containerPort':{},'f:name':{}},"
		    "'k:{\\'containerPort\\':443,\\'protocol\\':\\'TCP\\'}':"
		    "{'.':{},'f:containerPort':{}}}}}}}},{'manager':'other',"
		    "'operation':'Update','apiVersion':'v1','time':'" T1 "',"
		    "'fieldsType':'FieldsV1','fieldsV1':{'f:metadata':{"
		    "'f:finalizers':{'.':{},'v:\\'a\\'':{},'v:\\'b\\'':{}}},"
		    "'f:spec':{'f:containers':{'k:{\\'name\\':\\'web\\'}':{"
		    "'.':{},'f:name':{},'f:ports':{'k:{\\'containerPort\\':80,"
		    "\\'protocol\\':\\'TCP\\'}':{'.':{},'f:containerPort':{},"
		    "'f:protocol':{}}}}}}}}]},'spec':{'containers':[{'name':"
		    "'web','ports':[{'containerPort':80,'protocol':'TCP',"
		    "'name':'http'},{'containerPort':443}]}]}}");
	diff_ssa_result_release(&res);
}

Test(ssa, set_merge_keeps_live_order_then_new)
{
	struct diff_ssa_result res;

	apply(&res, POD_LIVE,
	      "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p',"
	      "'finalizers':['c','a']}}",
	      "syncd", false, T2);
	cr_expect(res.changed);
	cr_expect_null(res.conflicts);
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p',"
		    "'namespace':'default','finalizers':['a','b','c'],"
		    "'managedFields':[{'manager':'syncd','operation':'Apply',"
		    "'apiVersion':'v1','time':'" T2 "','fieldsType':"
		    "'FieldsV1','fieldsV1':{'f:metadata':{'f:finalizers':{"
		    "'v:\\'a\\'':{},'v:\\'c\\'':{}}}}}," "{'manager':"
		    "'other','operation':'Update','apiVersion':'v1','time':'"
		    T1 "','fieldsType':'FieldsV1','fieldsV1':{'f:metadata':{"
		    "'f:finalizers':{'.':{},'v:\\'a\\'':{},'v:\\'b\\'':{}}},"
		    "'f:spec':{'f:containers':{'k:{\\'name\\':\\'web\\'}':{"
		    "'.':{},'f:name':{},'f:ports':{'k:{\\'containerPort\\':80,"
		    "\\'protocol\\':\\'TCP\\'}':{'.':{},'f:containerPort':{},"
		    "'f:protocol':{}}}}}}}}]},'spec':{'containers':[{'name':"
		    "'web','ports':[{'containerPort':80,'protocol':'TCP'}]}]"
		    "}}");
	diff_ssa_result_release(&res);
}

Test(ssa, no_api_version_is_invalid)
{
	struct diff_ssa_result res;
	struct err err = ERR_INIT;
	json_t *applied = J("{'kind':'ConfigMap','metadata':{'name':'cm'}}");

	cr_expect_eq(diff_ssa_apply(&res, NULL, applied,
				    schema_of(applied), "syncd", false, T1,
				    &err),
		     ERR_INVALID);
	cr_expect_null(res.object);
	json_decref(applied);
	err_release(&err);
}

/* --- a whole map-list item no longer sent --- */

#define TWO_CONTAINERS_MF                                                    \
	"{'manager':'syncd','operation':'Apply','apiVersion':'v1','time':'"  \
	T1 "','fieldsType':'FieldsV1','fieldsV1':{'f:spec':{"               \
	"'f:containers':{'k:{\\'name\\':\\'side\\'}':{'.':{},"              \
	"'f:image':{},'f:name':{}},'k:{\\'name\\':\\'web\\'}':{'.':{},"     \
	"'f:image':{},'f:name':{}}}}}}"

#define TWO_CONTAINERS_SPEC                                                  \
	"'spec':{'containers':[{'name':'web','image':'web:1'},{'name':"      \
	"'side','image':'side:1','tty':true}]}"

#define ONLY_WEB                                                             \
	"{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},"           \
	"'spec':{'containers':[{'name':'web','image':'web:1'}]}}"

#define ONLY_WEB_MF                                                          \
	"{'manager':'syncd','operation':'Apply','apiVersion':'v1','time':'"  \
	T2 "','fieldsType':'FieldsV1','fieldsV1':{'f:spec':{"               \
	"'f:containers':{'k:{\\'name\\':\\'web\\'}':{'.':{},"               \
	"'f:image':{},'f:name':{}}}}}}"

Test(ssa, item_no_longer_sent_is_removed)
{
	struct diff_ssa_result res;

	apply(&res,
	      "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p',"
	      "'managedFields':[" TWO_CONTAINERS_MF "]}," TWO_CONTAINERS_SPEC
	      "}",
	      ONLY_WEB, "syncd", false, T2);
	cr_expect(res.changed);
	/* the item goes whole, with the field nobody owned (tty) */
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p',"
		    "'managedFields':[" ONLY_WEB_MF "]},'spec':{'containers':"
		    "[{'name':'web','image':'web:1'}]}}");
	diff_ssa_result_release(&res);
}

Test(ssa, item_with_co_owned_field_stays)
{
	struct diff_ssa_result res;

	apply(&res,
	      "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p',"
	      "'managedFields':[" TWO_CONTAINERS_MF ",{'manager':'edit',"
	      "'operation':'Update','apiVersion':'v1','time':'" T1 "',"
	      "'fieldsType':'FieldsV1','fieldsV1':{'f:spec':{'f:containers':"
	      "{'k:{\\'name\\':\\'side\\'}':{'f:tty':{}}}}}}]},"
	      TWO_CONTAINERS_SPEC "}",
	      ONLY_WEB, "syncd", false, T2);
	cr_expect(res.changed);
	/* side stays with its key and the edited field; image goes */
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p',"
		    "'managedFields':[" ONLY_WEB_MF ",{'manager':'edit',"
		    "'operation':'Update','apiVersion':'v1','time':'" T1 "',"
		    "'fieldsType':'FieldsV1','fieldsV1':{'f:spec':{"
		    "'f:containers':{'k:{\\'name\\':\\'side\\'}':{'f:tty':{}"
		    "}}}}}]},'spec':{'containers':[{'name':'web','image':"
		    "'web:1'},{'name':'side','tty':true}]}}");
	diff_ssa_result_release(&res);
}

Test(ssa, empty_apply_drops_the_entry)
{
	struct diff_ssa_result res;

	apply(&res, CM_LIVE,
	      "{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'cm'}}",
	      "syncd", false, T2);
	cr_expect(res.changed);
	expect_json(res.object,
		    "{'apiVersion':'v1','kind':'ConfigMap','metadata':{"
		    "'name':'cm','namespace':'default','uid':'u1',"
		    "'resourceVersion':'7'}}");
	diff_ssa_result_release(&res);
}

Test(ssa, conflicts_with_two_managers_and_an_atomic_field)
{
	struct diff_ssa_result res;
	struct buf msg = BUF_INIT;

	apply(&res,
	      "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{"
	      "'name':'web','namespace':'default','managedFields':[{"
	      "'manager':'b','operation':'Update','apiVersion':'apps/v1',"
	      "'time':'" T1 "','fieldsType':'FieldsV1','fieldsV1':{'f:spec':"
	      "{'f:selector':{},'f:paused':{}}}},{'manager':'a','operation':"
	      "'Apply','apiVersion':'apps/v1','time':'" T2 "','fieldsType':"
	      "'FieldsV1','fieldsV1':{'f:spec':{'f:replicas':{}}}}]},"
	      "'spec':{'replicas':1,'paused':false,'selector':{'matchLabels':"
	      "{'app':'web','tier':'x'}}}}",
	      "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{"
	      "'name':'web'},'spec':{'replicas':3,'paused':false,"
	      "'selector':{'matchLabels':{'app':'web'}}}}",
	      "syncd", false, T3);
	cr_expect_null(res.object);
	/* the atomic selector conflicts whole; paused is the same value */
	expect_json(res.conflicts,
		    "[{'manager':'a','operation':'Apply','apiVersion':"
		    "'apps/v1','field':'.spec.replicas'},{'manager':'b',"
		    "'operation':'Update','apiVersion':'apps/v1','field':"
		    "'.spec.selector'}]");
	cr_assert_eq(diff_ssa_conflict_message(res.conflicts, &msg, NULL), 0);
	cr_expect_str_eq(buf_cstr(&msg),
			 "Apply failed with 2 conflicts: conflicts with \"a\":"
			 "\n- .spec.replicas\nconflicts with \"b\" using "
			 "apps/v1:\n- .spec.selector");
	buf_release(&msg);
	diff_ssa_result_release(&res);
}
