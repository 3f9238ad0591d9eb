/*
 * Unit tests of kube-emu's JSON patch (RFC 6902, as evanphx/json-patch v4
 * applies it in kube-apiserver) and strategic merge patch (the merge and
 * directives of k8s.io/apimachinery's strategicpatch with the patch tags
 * of the Go API types), without HTTP or a store.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

static json_t *J(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &e);

	cr_assert(v, "bad test JSON: %s: %s", text, e.text);
	return v;
}

static void assert_json(const json_t *got, const char *want)
{
	json_t *w = J(want);
	char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);

	cr_assert(json_equal(got, w), "got %s\nwant %s", g, want);
	free(g);
	json_decref(w);
}

/* ---- JSON patch ---- */

struct jp_result {
	int code;
	json_t *doc;
	char *msg;
};

static struct jp_result jp(const char *doc, const char *ops)
{
	struct buf msg = BUF_INIT;
	struct jp_result r;
	json_t *o = J(ops);

	r.doc = J(doc);
	r.code = emu_json_patch(r.doc, o, &msg);
	r.msg = strdup(buf_cstr(&msg));
	buf_release(&msg);
	json_decref(o);
	return r;
}

static void jp_release(struct jp_result *r)
{
	json_decref(r->doc);
	free(r->msg);
}

/* Patch `doc`, expect success and `want`. */
static void jp_ok(const char *doc, const char *ops, const char *want)
{
	struct jp_result r = jp(doc, ops);

	cr_assert_eq(r.code, 0, "code %d: %s", r.code, r.msg);
	assert_json(r.doc, want);
	jp_release(&r);
}

static const char invalid[] =
	"the server rejected our request due to an error in our request";

/* Patch `doc`, expect the failure `code` with message `want`. */
static void jp_fail(const char *doc, const char *ops, int code,
		    const char *want)
{
	struct jp_result r = jp(doc, ops);

	cr_assert_eq(r.code, code, "code %d (%s), want %d", r.code, r.msg,
		     code);
	cr_assert_str_eq(r.msg, want);
	jp_release(&r);
}

Test(jsonpatch, add_member_and_array_items)
{
	jp_ok("{\"a\":{}}",
	      "[{\"op\":\"add\",\"path\":\"/a/b\",\"value\":1},"
	      "{\"op\":\"add\",\"path\":\"/l\",\"value\":[1,2]},"
	      "{\"op\":\"add\",\"path\":\"/l/1\",\"value\":9},"
	      "{\"op\":\"add\",\"path\":\"/l/-\",\"value\":3},"
	      "{\"op\":\"add\",\"path\":\"/l/4\",\"value\":4}]",
	      "{\"a\":{\"b\":1},\"l\":[1,9,2,3,4]}");
}

Test(jsonpatch, add_replaces_existing_member)
{
	jp_ok("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":[2]}]",
	      "{\"a\":[2]}");
}

Test(jsonpatch, add_errors)
{
	/* Past the end of the array, a missing parent, no path at all. */
	jp_fail("{\"l\":[1]}",
		"[{\"op\":\"add\",\"path\":\"/l/3\",\"value\":1}]", 422,
		invalid);
	jp_fail("{}", "[{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]", 422,
		invalid);
	jp_fail("{}", "[{\"op\":\"add\",\"value\":1}]", 422, invalid);
	jp_fail("{}", "[{\"op\":\"add\",\"path\":\"x\",\"value\":1}]", 422,
		invalid);
	jp_fail("{\"l\":[1]}",
		"[{\"op\":\"add\",\"path\":\"/l/x\",\"value\":1}]", 422,
		invalid);
}

Test(jsonpatch, negative_indexes_count_from_the_end)
{
	jp_ok("{\"l\":[1,2,3]}", "[{\"op\":\"remove\",\"path\":\"/l/-1\"}]",
	      "{\"l\":[1,2]}");
	jp_ok("{\"l\":[1,2]}",
	      "[{\"op\":\"add\",\"path\":\"/l/-1\",\"value\":9}]",
	      "{\"l\":[1,2,9]}");
}

Test(jsonpatch, remove)
{
	jp_ok("{\"a\":1,\"b\":{\"c\":2,\"d\":3},\"l\":[1,2]}",
	      "[{\"op\":\"remove\",\"path\":\"/a\"},"
	      "{\"op\":\"remove\",\"path\":\"/b/c\"},"
	      "{\"op\":\"remove\",\"path\":\"/l/0\"}]",
	      "{\"b\":{\"d\":3},\"l\":[2]}");
	jp_fail("{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"/b\"}]", 422,
		invalid);
	jp_fail("{\"l\":[1]}", "[{\"op\":\"remove\",\"path\":\"/l/1\"}]", 422,
		invalid);
	jp_fail("{\"a\":1}", "[{\"op\":\"remove\"}]", 422, invalid);
}

Test(jsonpatch, replace)
{
	jp_ok("{\"a\":1,\"l\":[1,2]}",
	      "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":\"x\"},"
	      "{\"op\":\"replace\",\"path\":\"/l/1\",\"value\":5}]",
	      "{\"a\":\"x\",\"l\":[1,5]}");
	/* json-patch v4 lets replace add a missing member. */
	jp_ok("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"/b\",\"value\":2}]",
	      "{\"a\":1,\"b\":2}");
	jp_fail("{\"a\":1}",
		"[{\"op\":\"replace\",\"path\":\"/x/y\",\"value\":2}]", 422,
		invalid);
	jp_fail("{\"l\":[1]}",
		"[{\"op\":\"replace\",\"path\":\"/l/1\",\"value\":2}]", 422,
		invalid);
	jp_fail("{\"a\":1}", "[{\"op\":\"replace\",\"value\":2}]", 422,
		invalid);
}

Test(jsonpatch, replace_whole_document)
{
	jp_ok("{\"a\":1}",
	      "[{\"op\":\"replace\",\"path\":\"\",\"value\":{\"b\":2}}]",
	      "{\"b\":2}");
	jp_fail("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":3}]",
		422, invalid);
}

Test(jsonpatch, move_and_copy)
{
	jp_ok("{\"a\":{\"x\":1},\"l\":[1,2,3]}",
	      "[{\"op\":\"move\",\"from\":\"/a/x\",\"path\":\"/y\"},"
	      "{\"op\":\"move\",\"from\":\"/l/0\",\"path\":\"/l/-\"},"
	      "{\"op\":\"copy\",\"from\":\"/l\",\"path\":\"/m\"}]",
	      "{\"a\":{},\"y\":1,\"l\":[2,3,1],\"m\":[2,3,1]}");
	jp_fail("{\"a\":1}",
		"[{\"op\":\"move\",\"from\":\"/b\",\"path\":\"/c\"}]", 422,
		invalid);
	jp_fail("{\"a\":{\"b\":1}}",
		"[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b/c\"}]", 422,
		invalid);
	jp_fail("{\"a\":1}", "[{\"op\":\"copy\",\"path\":\"/c\"}]", 422,
		invalid);
	/* The library copies a missing member as null. */
	jp_ok("{\"a\":1}",
	      "[{\"op\":\"copy\",\"from\":\"/b\",\"path\":\"/c\"}]",
	      "{\"a\":1,\"c\":null}");
}

Test(jsonpatch, copy_is_deep)
{
	jp_ok("{\"a\":{\"x\":1}}",
	      "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/b\"},"
	      "{\"op\":\"replace\",\"path\":\"/b/x\",\"value\":2}]",
	      "{\"a\":{\"x\":1},\"b\":{\"x\":2}}");
}

Test(jsonpatch, test_op)
{
	jp_ok("{\"a\":{\"b\":[1,\"x\"]},\"n\":null}",
	      "[{\"op\":\"test\",\"path\":\"/a\",\"value\":{\"b\":[1,\"x\"]}},"
	      "{\"op\":\"test\",\"path\":\"/a/b/1\",\"value\":\"x\"},"
	      "{\"op\":\"test\",\"path\":\"/missing\",\"value\":null},"
	      "{\"op\":\"test\",\"path\":\"/n\",\"value\":null},"
	      "{\"op\":\"test\",\"path\":\"\",\"value\":"
	      "{\"a\":{\"b\":[1,\"x\"]},\"n\":null}}]",
	      "{\"a\":{\"b\":[1,\"x\"]},\"n\":null}");
	jp_fail("{\"metadata\":{\"resourceVersion\":\"5\"}}",
		"[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\","
		"\"value\":\"4\"},"
		"{\"op\":\"replace\",\"path\":\"/metadata/resourceVersion\","
		"\"value\":\"6\"}]",
		422, invalid);
	jp_fail("{\"a\":1}",
		"[{\"op\":\"test\",\"path\":\"/a\",\"value\":1.0}]", 422,
		invalid);
	jp_fail("{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/b\",\"value\":1}]",
		422, invalid);
}

Test(jsonpatch, applied_in_order)
{
	jp_ok("{\"metadata\":{\"labels\":{\"a\":\"true\"}}}",
	      "[{\"op\":\"test\",\"path\":\"/metadata/labels/a\","
	      "\"value\":\"true\"},"
	      "{\"op\":\"replace\",\"path\":\"/metadata/labels/a\","
	      "\"value\":\"false\"},"
	      "{\"op\":\"test\",\"path\":\"/metadata/labels/a\","
	      "\"value\":\"false\"}]",
	      "{\"metadata\":{\"labels\":{\"a\":\"false\"}}}");
}

Test(jsonpatch, pointer_escapes)
{
	jp_ok("{\"metadata\":{\"annotations\":{\"a/b\":\"1\",\"c~d\":\"2\"}}}",
	      "[{\"op\":\"remove\",\"path\":\"/metadata/annotations/a~1b\"},"
	      "{\"op\":\"replace\",\"path\":\"/metadata/annotations/c~0d\","
	      "\"value\":\"3\"},"
	      "{\"op\":\"add\",\"path\":\"/metadata/annotations/e~01\","
	      "\"value\":\"4\"}]",
	      "{\"metadata\":{\"annotations\":{\"c~d\":\"3\",\"e~1\":\"4\"}}}");
}

Test(jsonpatch, body_not_a_list_of_operations)
{
	jp_fail("{}", "{\"op\":\"add\",\"path\":\"/a\",\"value\":1}", 400,
		"error decoding patch: json: cannot unmarshal object into Go "
		"value of type []handlers.jsonPatchOp");
	jp_fail("{}", "\"x\"", 400,
		"error decoding patch: json: cannot unmarshal string into Go "
		"value of type []handlers.jsonPatchOp");
	jp_fail("{}", "[1]", 400,
		"error decoding patch: json: cannot unmarshal number into Go "
		"value of type handlers.jsonPatchOp");
	jp_fail("{}", "[{\"op\":5,\"path\":\"/a\"}]", 400,
		"error decoding patch: json: cannot unmarshal number into Go "
		"struct field jsonPatchOp.op of type string");
	jp_fail("{}", "[{\"op\":\"add\",\"path\":[\"a\"]}]", 400,
		"error decoding patch: json: cannot unmarshal array into Go "
		"struct field jsonPatchOp.path of type string");
}

Test(jsonpatch, null_body_changes_nothing)
{
	jp_ok("{\"a\":1}", "null", "{\"a\":1}");
	jp_ok("{\"a\":1}", "[]", "{\"a\":1}");
}

Test(jsonpatch, unknown_or_missing_op)
{
	jp_fail("{}", "[{\"op\":\"frobnicate\",\"path\":\"/a\"}]", 422,
		invalid);
	jp_fail("{}", "[{\"path\":\"/a\",\"value\":1}]", 422, invalid);
	jp_fail("{}", "[{\"op\":\"ADD\",\"path\":\"/a\",\"value\":1}]", 422,
		invalid);
	jp_fail("{}", "[null]", 422, invalid);
}

Test(jsonpatch, too_many_operations)
{
	json_t *ops = json_array(), *doc = json_object();
	struct buf msg = BUF_INIT;
	int i;

	for (i = 0; i < 10001; i++)
		json_array_append_new(ops,
				      json_pack("{s:s, s:s, s:i}", "op", "add",
						"path", "/x", "value", i));
	cr_assert_eq(emu_json_patch(doc, ops, &msg), 413);
	cr_assert_str_eq(buf_cstr(&msg),
			 "Request entity too large: The allowed maximum "
			 "operations in a JSON patch is 10000, got 10001");
	cr_assert_eq(json_object_size(doc), 0);
	buf_release(&msg);
	json_decref(ops);
	json_decref(doc);
}

/* ---- strategic merge patch ---- */

static const struct emu_resource *res_of(const char *group, const char *name)
{
	const struct emu_resource *r = emu_resource_find(group, "v1", name);

	cr_assert(r, "no resource %s", name);
	return r;
}

struct smp_result {
	int code;
	json_t *out;
	char *msg;
};

static struct smp_result smp(const struct emu_resource *res, const char *orig,
			     const char *patch)
{
	json_t *o = J(orig), *p = J(patch), *o_copy = json_deep_copy(o);
	struct buf msg = BUF_INIT;
	struct smp_result r;

	r.code = 0;
	r.out = emu_strategic_merge_patch(o, p, res, &r.code, &msg);
	r.msg = strdup(buf_cstr(&msg));
	/* The original is borrowed: it must not change. */
	cr_assert(json_equal(o, o_copy));
	buf_release(&msg);
	json_decref(o);
	json_decref(o_copy);
	json_decref(p);
	return r;
}

static void smp_ok(const struct emu_resource *res, const char *orig,
		   const char *patch, const char *want)
{
	struct smp_result r = smp(res, orig, patch);

	cr_assert(r.out, "failed with %d: %s", r.code, r.msg);
	assert_json(r.out, want);
	json_decref(r.out);
	free(r.msg);
}

static void smp_fail(const struct emu_resource *res, const char *orig,
		     const char *patch, int code, const char *want)
{
	struct smp_result r = smp(res, orig, patch);

	cr_assert_null(r.out);
	cr_assert_eq(r.code, code, "code %d (%s), want %d", r.code, r.msg,
		     code);
	cr_assert_str_eq(r.msg, want);
	free(r.msg);
}

#define DEPLOY_HEAD "{\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"

/* A Deployment whose pod template has `containers` (JSON text). */
#define DEPLOY(containers)                                         \
	DEPLOY_HEAD "\"spec\":{\"replicas\":2,\"template\":{"      \
		    "\"metadata\":{\"labels\":{\"app\":\"web\"}}," \
		    "\"spec\":{\"containers\":" containers "}}}}"

#define PATCH_CONTAINERS(containers) \
	"{\"spec\":{\"template\":{\"spec\":{\"containers\":" containers "}}}}"

#define WEB                                                          \
	"{\"name\":\"web\",\"image\":\"nginx:1\",\"args\":[\"-v\"]," \
	"\"ports\":[{\"containerPort\":80,\"name\":\"http\","        \
	"\"protocol\":\"TCP\"}],"                                    \
	"\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\"," \
	"\"value\":\"2\"}]}"
#define SIDECAR "{\"name\":\"log\",\"image\":\"busybox\"}"

static const struct emu_resource *deployments(void)
{
	return res_of("apps", "deployments");
}

Test(smp, kubectl_patch_image_keeps_the_rest)
{
	smp_ok(deployments(), DEPLOY("[" WEB "," SIDECAR "]"),
	       PATCH_CONTAINERS("[{\"name\":\"web\",\"image\":\"nginx:2\"}]"),
	       DEPLOY("[{\"name\":\"web\",\"image\":\"nginx:2\","
		      "\"args\":[\"-v\"],"
		      "\"ports\":[{\"containerPort\":80,\"name\":\"http\","
		      "\"protocol\":\"TCP\"}],"
		      "\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
		      "{\"name\":\"B\",\"value\":\"2\"}]}," SIDECAR "]"));
}

Test(smp, adding_a_container_puts_it_first)
{
	/*
	 * Without $setElementOrder, strategicpatch places patch items that
	 * the live list lacks before the live items.
	 */
	smp_ok(deployments(), DEPLOY("[" SIDECAR "]"),
	       PATCH_CONTAINERS("[{\"name\":\"new\",\"image\":\"x\"}]"),
	       DEPLOY("[{\"name\":\"new\",\"image\":\"x\"}," SIDECAR "]"));
}

Test(smp, delete_directive_removes_a_container)
{
	smp_ok(deployments(), DEPLOY("[" WEB "," SIDECAR "]"),
	       PATCH_CONTAINERS("[{\"name\":\"web\",\"$patch\":\"delete\"}]"),
	       DEPLOY("[" SIDECAR "]"));
}

Test(smp, replace_directive_in_a_list)
{
	smp_ok(deployments(), DEPLOY("[" WEB "," SIDECAR "]"),
	       PATCH_CONTAINERS("[{\"$patch\":\"replace\"},"
				"{\"name\":\"only\",\"image\":\"x\"}]"),
	       DEPLOY("[{\"name\":\"only\",\"image\":\"x\"}]"));
}

Test(smp, env_merges_by_name)
{
	smp_ok(deployments(), DEPLOY("[" SIDECAR "," WEB "]"),
	       PATCH_CONTAINERS("[{\"name\":\"web\",\"env\":["
				"{\"name\":\"B\",\"value\":\"3\"},"
				"{\"name\":\"C\",\"value\":\"4\"},"
				"{\"name\":\"A\",\"$patch\":\"delete\"}]}]"),
	       DEPLOY("[" SIDECAR ",{\"name\":\"web\",\"image\":\"nginx:1\","
		      "\"args\":[\"-v\"],"
		      "\"ports\":[{\"containerPort\":80,\"name\":\"http\","
		      "\"protocol\":\"TCP\"}],"
		      "\"env\":[{\"name\":\"B\",\"value\":\"3\"},"
		      "{\"name\":\"C\",\"value\":\"4\"}]}]"));
}

Test(smp, container_ports_merge_by_container_port_only)
{
	/* The SSA key is (containerPort, protocol); SMP's is containerPort. */
	smp_ok(deployments(), DEPLOY("[" WEB "]"),
	       PATCH_CONTAINERS("[{\"name\":\"web\",\"ports\":["
				"{\"containerPort\":80,\"name\":\"web\"},"
				"{\"containerPort\":443}]}]"),
	       DEPLOY("[{\"name\":\"web\",\"image\":\"nginx:1\","
		      "\"args\":[\"-v\"],"
		      "\"ports\":[{\"containerPort\":80,\"name\":\"web\","
		      "\"protocol\":\"TCP\"},{\"containerPort\":443}],"
		      "\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
		      "{\"name\":\"B\",\"value\":\"2\"}]}]"));
}

Test(smp, args_and_tolerations_are_replaced)
{
	smp_ok(res_of("", "pods"),
	       "{\"spec\":{\"tolerations\":[{\"key\":\"a\",\"operator\":"
	       "\"Exists\"}],\"containers\":[{\"name\":\"c\","
	       "\"args\":[\"1\",\"2\"],\"command\":[\"sh\"]}]}}",
	       "{\"spec\":{\"tolerations\":[{\"key\":\"b\",\"operator\":"
	       "\"Exists\",\"value\":null}],\"containers\":[{\"name\":\"c\","
	       "\"args\":[\"3\"]}]}}",
	       "{\"spec\":{\"tolerations\":[{\"key\":\"b\",\"operator\":"
	       "\"Exists\"}],\"containers\":[{\"name\":\"c\","
	       "\"args\":[\"3\"],\"command\":[\"sh\"]}]}}");
}

Test(smp, null_deletes_a_label)
{
	smp_ok(res_of("", "configmaps"),
	       "{\"metadata\":{\"name\":\"c\",\"labels\":{\"a\":\"1\","
	       "\"b\":\"2\"}},\"data\":{\"k\":\"v\"}}",
	       "{\"metadata\":{\"labels\":{\"a\":null,\"c\":\"3\","
	       "\"gone\":null}},\"data\":{\"k2\":\"v2\"}}",
	       "{\"metadata\":{\"name\":\"c\",\"labels\":{\"b\":\"2\","
	       "\"c\":\"3\"}},\"data\":{\"k\":\"v\",\"k2\":\"v2\"}}");
}

Test(smp, finalizers_merge_as_a_set)
{
	smp_ok(res_of("", "configmaps"),
	       "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}",
	       "{\"metadata\":{\"finalizers\":[\"c\",\"a\"]}}",
	       "{\"metadata\":{\"finalizers\":[\"c\",\"a\",\"b\"]}}");
}

Test(smp, delete_from_primitive_list)
{
	smp_ok(res_of("", "configmaps"),
	       "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}",
	       "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":"
	       "[\"b\",\"x\"]}}",
	       "{\"metadata\":{\"finalizers\":[\"a\",\"c\"]}}");
	smp_fail(res_of("", "configmaps"),
		 "{\"metadata\":{\"finalizers\":[\"a\"]}}",
		 "{\"metadata\":{\"$deleteFromPrimitiveListX\":[\"a\"]}}", 400,
		 "invalid patch format of primitive list");
}

Test(smp, owner_references_merge_by_uid)
{
	smp_ok(res_of("", "configmaps"),
	       "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\","
	       "\"name\":\"a\"},{\"uid\":\"2\",\"name\":\"b\"}]}}",
	       "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"2\","
	       "\"name\":\"B\"}]}}",
	       "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\","
	       "\"name\":\"a\"},{\"uid\":\"2\",\"name\":\"B\"}]}}");
}

Test(smp, set_element_order)
{
	smp_ok(deployments(), DEPLOY("[" WEB "," SIDECAR "]"),
	       "{\"spec\":{\"template\":{\"spec\":{"
	       "\"$setElementOrder/containers\":[{\"name\":\"log\"},"
	       "{\"name\":\"web\"}],"
	       "\"containers\":[{\"name\":\"web\",\"image\":\"nginx:3\"}]}}}}",
	       DEPLOY("[" SIDECAR ",{\"name\":\"web\",\"image\":\"nginx:3\","
		      "\"args\":[\"-v\"],"
		      "\"ports\":[{\"containerPort\":80,\"name\":\"http\","
		      "\"protocol\":\"TCP\"}],"
		      "\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
		      "{\"name\":\"B\",\"value\":\"2\"}]}]"));
	/* Primitives: the order of the directive wins. */
	smp_ok(res_of("", "configmaps"),
	       "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}",
	       "{\"metadata\":{\"$setElementOrder/finalizers\":[\"b\",\"c\","
	       "\"a\"],\"finalizers\":[\"c\"]}}",
	       "{\"metadata\":{\"finalizers\":[\"b\",\"c\",\"a\"]}}");
}

Test(smp, set_element_order_errors)
{
	smp_fail(deployments(), DEPLOY("[" WEB "]"),
		 "{\"spec\":{\"template\":{\"spec\":{"
		 "\"$setElementOrderX\":[{\"name\":\"web\"}]}}}}",
		 400, "invalid patch format of setElementOrder list");
	smp_fail(deployments(), DEPLOY("[" WEB "]"),
		 "{\"spec\":{\"template\":{\"spec\":{"
		 "\"$setElementOrder/containers\":[{\"name\":\"web\"}],"
		 "\"containers\":[{\"name\":\"x\",\"image\":\"y\"}]}}}}",
		 500,
		 "The order in patch list:\n[map[image:y name:x]]\n doesn't "
		 "match $setElementOrder list:\n[map[name:web]]\n");
}

Test(smp, retain_keys)
{
	smp_ok(deployments(),
	       DEPLOY_HEAD "\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\","
			   "\"rollingUpdate\":{\"maxSurge\":1}}}}",
	       "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],"
	       "\"type\":\"Recreate\"}}}",
	       DEPLOY_HEAD "\"spec\":{\"strategy\":{\"type\":\"Recreate\"}}}");
	/* A volume switching source, as kubectl apply sends it. */
	smp_ok(res_of("", "pods"),
	       "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]}}",
	       "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"$retainKeys\":"
	       "[\"configMap\",\"name\"],\"configMap\":{\"name\":\"c\"}}]}}",
	       "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"configMap\":"
	       "{\"name\":\"c\"}}]}}");
	smp_fail(deployments(),
		 DEPLOY_HEAD "\"spec\":{\"strategy\":{\"type\":\"Recreate\"}}}",
		 "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],"
		 "\"rollingUpdate\":{}}}}",
		 400, "invalid patch format of retainKeys");
	smp_fail(deployments(),
		 DEPLOY_HEAD "\"spec\":{\"strategy\":{\"type\":\"Recreate\"}}}",
		 "{\"spec\":{\"strategy\":{\"$retainKeys\":\"type\"}}}", 400,
		 "invalid patch format of retainKeys");
}

Test(smp, map_directives)
{
	smp_ok(res_of("", "configmaps"),
	       "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}}}",
	       "{\"metadata\":{\"labels\":{\"$patch\":\"replace\","
	       "\"c\":\"3\"}}}",
	       "{\"metadata\":{\"labels\":{\"c\":\"3\"}}}");
	smp_ok(res_of("", "configmaps"),
	       "{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"data\":{\"k\":\"v\"}"
	       "}",
	       "{\"data\":{\"$patch\":\"delete\"}}",
	       "{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"data\":{}}");
}

Test(smp, unknown_patch_directives)
{
	smp_fail(deployments(), DEPLOY("[" WEB "]"),
		 PATCH_CONTAINERS("[{\"name\":\"web\",\"$patch\":\"foo\"}]"),
		 500,
		 "unknown patch type: foo in map: map[$patch:foo name:web]");
	smp_fail(deployments(), DEPLOY("[" WEB "]"),
		 PATCH_CONTAINERS("[{\"name\":\"web\",\"$patch\":\"merge\"}]"),
		 500, "merging lists cannot yet be specified in the patch");
	smp_fail(res_of("", "configmaps"), "{\"data\":{\"a\":\"1\"}}",
		 "{\"data\":{\"$patch\":\"merge\"}}", 500,
		 "unknown patch type: merge in map: map[$patch:merge]");
}

Test(smp, item_without_merge_key)
{
	smp_fail(deployments(), DEPLOY("[" WEB "]"),
		 PATCH_CONTAINERS("[{\"image\":\"x\"}]"), 500,
		 "map: map[image:x] does not contain declared merge key: name");
}

Test(smp, service_ports_merge_by_port)
{
	smp_ok(res_of("", "services"),
	       "{\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":8080,"
	       "\"protocol\":\"TCP\"},{\"port\":443}]}}",
	       "{\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":9090}]}}",
	       "{\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":9090,"
	       "\"protocol\":\"TCP\"},{\"port\":443}]}}");
}

Test(smp, cronjob_pod_template)
{
	smp_ok(res_of("batch", "cronjobs"),
	       "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":"
	       "{\"containers\":[{\"name\":\"a\",\"image\":\"1\"},"
	       "{\"name\":\"b\",\"image\":\"1\"}]}}}}}}",
	       "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":"
	       "{\"containers\":[{\"name\":\"b\",\"image\":\"2\"}]}}}}}}",
	       "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":"
	       "{\"containers\":[{\"name\":\"a\",\"image\":\"1\"},"
	       "{\"name\":\"b\",\"image\":\"2\"}]}}}}}}");
}

Test(smp, new_values_lose_nulls_and_directives)
{
	smp_ok(res_of("", "configmaps"), "{\"metadata\":{\"name\":\"c\"}}",
	       "{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":null}},"
	       "\"data\":{\"$patch\":\"replace\",\"k\":\"v\"}}",
	       "{\"metadata\":{\"name\":\"c\",\"labels\":{\"a\":\"1\"}},"
	       "\"data\":{\"k\":\"v\"}}");
}

Test(smp, lists_of_lists)
{
	smp_fail(res_of("", "pods"),
		 "{\"metadata\":{\"finalizers\":[[\"a\"]]}}",
		 "{\"metadata\":{\"finalizers\":[[\"b\"]]}}", 422,
		 "the server rejected our request due to an error in our "
		 "request");
}

Test(smp, patch_not_an_object)
{
	smp_fail(res_of("", "configmaps"), "{}", "[1]", 400,
		 "json: cannot unmarshal array into Go value of type "
		 "map[string]interface {}");
}

Test(smp, custom_resource_is_415)
{
	static const struct emu_resource widgets = {
		"example.com", "v1", "widgets",		 "widget",
		"Widget",      NULL, EMU_RES_NAMESPACED, EMU_NAME_SUBDOMAIN};

	smp_fail(&widgets, "{\"spec\":{}}", "{\"spec\":{\"a\":1}}", 415,
		 "the body of the request was in an unknown format - "
		 "accepted media types include: application/json-patch+json, "
		 "application/merge-patch+json, application/apply-patch+yaml");
}
