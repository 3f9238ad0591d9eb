#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"

/* --- helpers --- */

#define PE_F(s)                  \
	{                        \
		DIFF_PE_FIELD, s \
	}
#define PE_K(s)                \
	{                      \
		DIFF_PE_KEY, s \
	}
#define PE_V(s)                  \
	{                        \
		DIFF_PE_VALUE, s \
	}
#define PE_I(s)                  \
	{                        \
		DIFF_PE_INDEX, s \
	}
#define PATH(...)                                                            \
	(&(struct diff_path){(const struct diff_pe[]){__VA_ARGS__},          \
			     sizeof((const struct diff_pe[]){__VA_ARGS__}) / \
				     sizeof(struct diff_pe)})
#define EMPTY_PATH (&(struct diff_path){NULL, 0})

static json_t *J(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);

	cr_assert_not_null(j, "bad test JSON: %s: %s", jerr.text, text);
	return j;
}

/* Compact JSON text, keys in their order (as the API server sent them). */
static char *dump(const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);

	cr_assert_not_null(s);
	return s;
}

static struct diff_fieldset *P(const char *text)
{
	struct diff_fieldset *set = NULL;
	struct err err = ERR_INIT;
	json_t *j = J(text);
	int rc = diff_fieldset_parse(&set, j, &err);

	cr_assert_eq(rc, 0, "parse failed (%d): %s", rc, err_first(&err));
	cr_assert_not_null(set);
	json_decref(j);
	err_release(&err);
	return set;
}

/* The set serialized, compact. */
static char *ser(const struct diff_fieldset *set)
{
	json_t *j = diff_fieldset_to_json(set);
	char *s;

	cr_assert_not_null(j);
	s = dump(j);
	json_decref(j);
	return s;
}

static void expect_set(const struct diff_fieldset *set, const char *want)
{
	json_t *w = J(want);
	char *got = ser(set), *exp = dump(w);

	cr_expect_str_eq(got, exp);
	free(got);
	free(exp);
	json_decref(w);
}

/* parse -> to_json is the identity on canonical input. */
static void expect_round_trip(const char *text)
{
	struct diff_fieldset *set = P(text);

	expect_set(set, text);
	diff_fieldset_free(set);
}

/* parse `in` and expect `out` back. */
static void expect_canonical(const char *in, const char *out)
{
	struct diff_fieldset *set = P(in);

	expect_set(set, out);
	diff_fieldset_free(set);
}

static char *path_str(const struct diff_path *p)
{
	struct buf b = BUF_INIT;
	char *s;

	cr_assert_eq(diff_path_format(p, &b), 0);
	s = buf_detach(&b, NULL);
	cr_assert_not_null(s);
	return s;
}

static void expect_path(const struct diff_path *p, const char *want)
{
	char *s = path_str(p);

	cr_expect_str_eq(s, want);
	free(s);
}

static void expect_error(const char *text, int code, const char *msg)
{
	struct diff_fieldset *set = (struct diff_fieldset *)&set;
	struct err err = ERR_INIT;
	json_t *j = J(text);

	cr_expect_eq(diff_fieldset_parse(&set, j, &err), code, "input %s",
		     text);
	cr_expect_null(set);
	cr_expect_str_eq(err_first(&err), msg, "input %s", text);
	json_decref(j);
	err_release(&err);
}

/* --- realistic managedFields (as kube-apiserver 1.32 writes them) --- */

/* docs/kubernetes-api.md, managedFields example */
static const char doc_apply[] =
	"{\"f:spec\":{\"f:selector\":{},\"f:template\":{\"f:metadata\":"
	"{\"f:labels\":{\"f:app\":{}}},\"f:spec\":{\"f:containers\":"
	"{\"k:{\\\"name\\\":\\\"web\\\"}\":{\".\":{},\"f:image\":{},"
	"\"f:name\":{}}}}}}}";
static const char doc_scale[] = "{\"f:spec\":{\"f:replicas\":{}}}";

/* kubectl client-side apply of a Deployment (operation Update). */
static const char deploy_csa[] =
	"{\"f:metadata\":{\"f:annotations\":{\".\":{},"
	"\"f:kubectl.kubernetes.io/last-applied-configuration\":{}},"
	"\"f:labels\":{\".\":{},\"f:app\":{},\"f:app.kubernetes.io/name\":{}}},"
	"\"f:spec\":{\"f:progressDeadlineSeconds\":{},\"f:replicas\":{},"
	"\"f:revisionHistoryLimit\":{},\"f:selector\":{},"
	"\"f:strategy\":{\"f:rollingUpdate\":{\".\":{},\"f:maxSurge\":{},"
	"\"f:maxUnavailable\":{}},\"f:type\":{}},"
	"\"f:template\":{\"f:metadata\":{\"f:labels\":{\".\":{},"
	"\"f:app\":{}}},\"f:spec\":{\"f:containers\":{"
	"\"k:{\\\"name\\\":\\\"sidecar\\\"}\":{\".\":{},\"f:image\":{},"
	"\"f:imagePullPolicy\":{},\"f:name\":{}},"
	"\"k:{\\\"name\\\":\\\"web\\\"}\":{\".\":{},\"f:env\":{\".\":{},"
	"\"k:{\\\"name\\\":\\\"LOG_LEVEL\\\"}\":{\".\":{},\"f:name\":{},"
	"\"f:value\":{}},\"k:{\\\"name\\\":\\\"MODE\\\"}\":{\".\":{},"
	"\"f:name\":{},\"f:value\":{}}},\"f:image\":{},"
	"\"f:imagePullPolicy\":{},\"f:name\":{},\"f:ports\":{\".\":{},"
	"\"k:{\\\"containerPort\\\":80,\\\"protocol\\\":\\\"TCP\\\"}\":{"
	"\".\":{},\"f:containerPort\":{},\"f:name\":{},\"f:protocol\":{}},"
	"\"k:{\\\"containerPort\\\":443,\\\"protocol\\\":\\\"TCP\\\"}\":{"
	"\".\":{},\"f:containerPort\":{},\"f:protocol\":{}},"
	"\"k:{\\\"containerPort\\\":8080,\\\"protocol\\\":\\\"UDP\\\"}\":{"
	"\".\":{},\"f:containerPort\":{},\"f:protocol\":{}}},"
	"\"f:resources\":{\".\":{},\"f:limits\":{\".\":{},\"f:cpu\":{},"
	"\"f:memory\":{}},\"f:requests\":{\".\":{},\"f:cpu\":{},"
	"\"f:memory\":{}}},\"f:terminationMessagePath\":{},"
	"\"f:terminationMessagePolicy\":{},\"f:volumeMounts\":{\".\":{},"
	"\"k:{\\\"mountPath\\\":\\\"/etc/config\\\"}\":{\".\":{},"
	"\"f:mountPath\":{},\"f:name\":{}}}}},\"f:dnsPolicy\":{},"
	"\"f:restartPolicy\":{},\"f:schedulerName\":{},"
	"\"f:securityContext\":{},\"f:terminationGracePeriodSeconds\":{},"
	"\"f:volumes\":{\".\":{},\"k:{\\\"name\\\":\\\"config\\\"}\":{"
	"\".\":{},\"f:configMap\":{\".\":{},\"f:defaultMode\":{},"
	"\"f:name\":{}},\"f:name\":{}}}}}}}";

/* kube-controller-manager, subresource status. */
static const char deploy_status[] =
	"{\"f:metadata\":{\"f:annotations\":{\".\":{},"
	"\"f:deployment.kubernetes.io/revision\":{}}},"
	"\"f:status\":{\"f:availableReplicas\":{},\"f:conditions\":{\".\":{},"
	"\"k:{\\\"type\\\":\\\"Available\\\"}\":{\".\":{},"
	"\"f:lastTransitionTime\":{},\"f:lastUpdateTime\":{},\"f:message\":{},"
	"\"f:reason\":{},\"f:status\":{},\"f:type\":{}},"
	"\"k:{\\\"type\\\":\\\"Progressing\\\"}\":{\".\":{},"
	"\"f:lastTransitionTime\":{},\"f:lastUpdateTime\":{},\"f:message\":{},"
	"\"f:reason\":{},\"f:status\":{},\"f:type\":{}}},"
	"\"f:observedGeneration\":{},\"f:readyReplicas\":{},\"f:replicas\":{},"
	"\"f:updatedReplicas\":{}}}";

/* A Service: ports 80 before 443 (by value, as the server orders them). */
static const char service[] =
	"{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:app\":{}}},"
	"\"f:spec\":{\"f:internalTrafficPolicy\":{},\"f:ports\":{\".\":{},"
	"\"k:{\\\"port\\\":80,\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},"
	"\"f:name\":{},\"f:port\":{},\"f:protocol\":{},\"f:targetPort\":{}},"
	"\"k:{\\\"port\\\":443,\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},"
	"\"f:name\":{},\"f:port\":{},\"f:protocol\":{},\"f:targetPort\":{}},"
	"\"k:{\\\"port\\\":443,\\\"protocol\\\":\\\"UDP\\\"}\":{\".\":{},"
	"\"f:name\":{},\"f:port\":{},\"f:protocol\":{},\"f:targetPort\":{}}},"
	"\"f:selector\":{},\"f:sessionAffinity\":{},\"f:type\":{}}}";

/* A ConfigMap applied by syncd: map keys with dots and slashes. */
static const char configmap[] =
	"{\"f:data\":{\"f:.env\":{},\"f:app.properties\":{},"
	"\"f:config.yaml\":{},\"f:nginx/conf.d\":{}},"
	"\"f:metadata\":{\"f:annotations\":{\"f:syncd.io/source\":{}},"
	"\"f:labels\":{\"f:app.kubernetes.io/managed-by\":{},"
	"\"f:app.kubernetes.io/name\":{}}}}";

static const char finalizers[] =
	"{\"f:metadata\":{\"f:finalizers\":{\".\":{},"
	"\"v:\\\"example.com/protect\\\"\":{},\"v:\\\"kubernetes\\\"\":{}}}}";

/* --- round trips --- */

Test(fieldset, round_trip_doc_example)
{
	expect_round_trip(doc_apply);
	expect_round_trip(doc_scale);
}

Test(fieldset, round_trip_realistic)
{
	expect_round_trip(deploy_csa);
	expect_round_trip(deploy_status);
	expect_round_trip(service);
	expect_round_trip(configmap);
	expect_round_trip(finalizers);
	expect_round_trip("{}");
}

Test(fieldset, round_trip_whole_managed_fields)
{
	static const char mf[] =
		"[{\"manager\":\"kubectl\",\"operation\":\"Apply\","
		"\"apiVersion\":\"apps/v1\",\"time\":\"2026-11-01T10:00:00Z\","
		"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":%s},"
		"{\"manager\":\"kube-controller-manager\",\"operation\":"
		"\"Update\",\"apiVersion\":\"apps/v1\",\"time\":"
		"\"2026-11-01T10:05:00Z\",\"fieldsType\":\"FieldsV1\","
		"\"fieldsV1\":%s,\"subresource\":\"scale\"}]";
	char text[4096];
	json_t *list, *e, *out = json_array();
	char *a, *b;
	size_t i;

	snprintf(text, sizeof(text), mf, doc_apply, doc_scale);
	list = J(text);
	json_array_foreach(list, i, e)
	{
		struct diff_fieldset *set = NULL;
		json_t *copy = json_deep_copy(e);

		cr_assert_eq(diff_fieldset_parse(&set,
						 json_object_get(e, "fieldsV1"),
						 NULL),
			     0);
		json_object_set_new(copy, "fieldsV1",
				    diff_fieldset_to_json(set));
		json_array_append_new(out, copy);
		diff_fieldset_free(set);
	}
	a = dump(list);
	b = dump(out);
	cr_expect_str_eq(b, a);
	free(a);
	free(b);
	json_decref(list);
	json_decref(out);
}

/* --- canonical element text and order --- */

Test(fieldset, key_order_canonicalized)
{
	struct diff_fieldset *set =
		P("{\"f:ports\":{\"k:{\\\"protocol\\\":\\\"TCP\\\","
		  "\\\"containerPort\\\":80}\":{\".\":{},\"f:containerPort\":{}"
		  "}}}");

	expect_set(
		set,
		"{\"f:ports\":{\"k:{\\\"containerPort\\\":80,\\\"protocol\\\":"
		"\\\"TCP\\\"}\":{\".\":{},\"f:containerPort\":{}}}}");
	cr_expect(diff_fieldset_has(
		set,
		PATH(PE_F("ports"),
		     PE_K("{\"containerPort\":80,\"protocol\":\"TCP\"}"))));
	cr_expect_not(diff_fieldset_has(
		set,
		PATH(PE_F("ports"),
		     PE_K("{\"protocol\":\"TCP\",\"containerPort\":80}"))));
	diff_fieldset_free(set);

	/* whitespace goes, nested objects are sorted too */
	expect_canonical(
		"{\"k:{ \\\"b\\\" : [ 1 , {\\\"y\\\":1,\\\"x\\\":2} ], "
		"\\\"a\\\" : true }\":{}}",
		"{\"k:{\\\"a\\\":true,\\\"b\\\":[1,{\\\"x\\\":2,\\\"y\\\":1}]}"
		"\":"
		"{}}");
}

Test(fieldset, same_element_twice_is_merged)
{
	struct diff_fieldset *set =
		P("{\"f:ports\":{\"k:{\\\"b\\\":2,\\\"a\\\":1}\":{\"f:y\":{}},"
		  "\"k:{\\\"a\\\":1,\\\"b\\\":2}\":{\".\":{},\"f:x\":{}},"
		  "\"v:1.0\":{},\"v:1\":{\"f:z\":{}}}}");

	expect_set(set, "{\"f:ports\":{\"k:{\\\"a\\\":1,\\\"b\\\":2}\":{"
			"\".\":{},\"f:x\":{},\"f:y\":{}},\"v:1\":{\".\":{},"
			"\"f:z\":{}}}}");
	cr_expect_eq(diff_fieldset_size(set), 5);
	diff_fieldset_free(set);
}

Test(fieldset, typed_keys)
{
	struct diff_fieldset *set =
		P("{\"f:ports\":{\"k:{\\\"port\\\":\\\"80\\\"}\":{},"
		  "\"k:{\\\"port\\\":80}\":{}}}");

	cr_expect_eq(diff_fieldset_size(set), 2);
	/* numbers before strings */
	expect_set(set, "{\"f:ports\":{\"k:{\\\"port\\\":80}\":{},"
			"\"k:{\\\"port\\\":\\\"80\\\"}\":{}}}");
	cr_expect(diff_fieldset_has(
		set, PATH(PE_F("ports"), PE_K("{\"port\":80}"))));
	cr_expect(diff_fieldset_has(
		set, PATH(PE_F("ports"), PE_K("{\"port\":\"80\"}"))));
	cr_expect_not(diff_fieldset_has(
		set, PATH(PE_F("ports"), PE_K("{\"port\":8}"))));
	diff_fieldset_free(set);
}

Test(fieldset, serialization_order)
{
	/* scrambled input, every kind of child, "." last in the input */
	expect_canonical(
		"{\"f:x\":{\"i:10\":{},\"v:\\\"s\\\"\":{},\"i:9\":{},"
		"\"k:{\\\"n\\\":\\\"b\\\"}\":{},\"v:true\":{},\"f:b\":{},"
		"\"k:{\\\"n\\\":10}\":{},\"v:2\":{},\"k:{\\\"n\\\":9}\":{},"
		"\"f:a.b\":{},\"v:null\":{},\"v:[1]\":{},\"v:{\\\"a\\\":1}\":{}"
		","
		"\"v:false\":{},\"f:a\":{},\"v:-1.5\":{},\".\":{}}}",
		"{\"f:x\":{\".\":{},\"f:a\":{},\"f:a.b\":{},\"f:b\":{},"
		"\"k:{\\\"n\\\":9}\":{},\"k:{\\\"n\\\":10}\":{},"
		"\"k:{\\\"n\\\":\\\"b\\\"}\":{},\"v:-1.5\":{},\"v:2\":{},"
		"\"v:\\\"s\\\"\":{},\"v:false\":{},\"v:true\":{},\"v:[1]\":{},"
		"\"v:{\\\"a\\\":1}\":{},\"v:null\":{},\"i:9\":{},\"i:10\":{}}"
		"}");
	/* strings by their bytes, unescaped: "a" < "a!" */
	expect_canonical("{\"v:\\\"a!\\\"\":{},\"v:\\\"a\\\"\":{}}",
			 "{\"v:\\\"a\\\"\":{},\"v:\\\"a!\\\"\":{}}");
	/* keys: field by field, fewer fields first */
	expect_canonical(
		"{\"k:{\\\"a\\\":1,\\\"b\\\":1}\":{},\"k:{\\\"b\\\":0}\":{},"
		"\"k:{\\\"a\\\":1}\":{},\"k:{\\\"a\\\":0,\\\"b\\\":5}\":{}}",
		"{\"k:{\\\"a\\\":0,\\\"b\\\":5}\":{},\"k:{\\\"a\\\":1}\":{},"
		"\"k:{\\\"a\\\":1,\\\"b\\\":1}\":{},\"k:{\\\"b\\\":0}\":{}}");
}

Test(fieldset, canonical_numbers_and_strings)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"v:1.50", "v:1.5"},
		{"v:1e2", "v:100"},
		{"v:1E+2", "v:100"},
		{"v:-0", "v:0"},
		{"v:0.0", "v:0"},
		{"v:-0.0", "v:-0"}, /* the float -0, as Go prints it */
		{"v:-0.0000e3", "v:-0"},
		{"v:1e-7", "v:1e-7"},
		{"v:0.000001", "v:0.000001"},
		{"v:1.5e21", "v:1.5e+21"},
		{"v:123456789e12", "v:123456789000000000000"},
		{"v:1e21", "v:1e+21"},
		{"v:0.1e1", "v:1"},
		{"v:9223372036854775807", "v:9223372036854775807"},
		{"v:-9223372036854775808", "v:-9223372036854775808"},
		{"v:9223372036854775808", "v:9223372036854776000"},
		{"v:123456789012345678901", "v:123456789012345680000"},
		{"v:0.30000000000000001", "v:0.3"},
		{"v:5e-324", "v:5e-324"},
		{"v:1.7976931348623157e308", "v:1.7976931348623157e+308"},
		{"v:\"a\\/b\"", "v:\"a/b\""},
		{"v:\"<&>\"", "v:\"\\u003c\\u0026\\u003e\""},
		{"v:\"\\u00e9\\u2028\"", "v:\"\xc3\xa9\\u2028\""},
		{"v:\"\\ud83d\\ude00\"", "v:\"\xf0\x9f\x98\x80\""},
		{"v:\"\\ud800\"", "v:\"\xef\xbf\xbd\""},
		{"v:\"\\b\\f\\n\\r\\t\\u0001\\u007f\"",
		 "v:\"\\b\\f\\n\\r\\t\\u0001\x7f\""},
		{"v:\"q\\\"b\\\\s\"", "v:\"q\\\"b\\\\s\""},
		{"v: [ ] ", "v:[]"},
		{"v:{ }", "v:{}"},
		{"i:007", "i:7"},
		{"i:0", "i:0"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *in = json_object(), *want = json_object();
		struct diff_fieldset *set = NULL;
		struct err err = ERR_INIT;
		json_t *got;
		char *a, *b;

		json_object_set_new(in, cases[i].in, json_object());
		json_object_set_new(want, cases[i].out, json_object());
		cr_assert_eq(diff_fieldset_parse(&set, in, &err), 0, "%s: %s",
			     cases[i].in, err_first(&err));
		got = diff_fieldset_to_json(set);
		a = dump(got);
		b = dump(want);
		cr_expect_str_eq(a, b, "input %s", cases[i].in);
		free(a);
		free(b);
		json_decref(got);
		json_decref(in);
		json_decref(want);
		diff_fieldset_free(set);
		err_release(&err);
	}
}

/*
 * Element texts must be what diff_json_dump() prints for the value, so
 * that paths built from objects (compare.c) find parsed ones.
 */
Test(fieldset, canonical_text_is_diff_json_dump)
{
	static const char *const values[] = {
		"80",
		"-3",
		"1.5",
		"1e-7",
		"1e21",
		"123456.789",
		"0.1",
		"\"TCP\"",
		"\"<a href=\\\"x\\\">&amp;</a>\"",
		"\"tab\\there\\u0000\\u001f\"",
		"\"\\u2029 \\u00e9\"",
		"true",
		"null",
		"[1,\"b\",{\"z\":1,\"a\":[]}]",
		"{\"protocol\":\"TCP\",\"containerPort\":8080}",
	};
	size_t i;

	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		json_error_t jerr;
		json_t *v = json_loads(values[i],
				       JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
		struct buf want = BUF_INIT, key = BUF_INIT;
		struct diff_fieldset *set = NULL;
		json_t *in = json_object(), *out;
		const char *k;
		json_t *dummy;

		cr_assert_not_null(v, "%s", values[i]);
		cr_assert_eq(diff_json_dump(v, 0, &want), 0);
		buf_adds(&key, "v:");
		buf_adds(&key, values[i]);
		json_object_set_new(in, key.ptr, json_object());
		cr_assert_eq(diff_fieldset_parse(&set, in, NULL), 0, "%s",
			     values[i]);
		out = diff_fieldset_to_json(set);
		json_object_foreach(out, k, dummy) cr_expect_str_eq(
			k + 2, buf_cstr(&want), "value %s", values[i]);
		cr_expect(diff_fieldset_has(set, PATH(PE_V(buf_cstr(&want)))));
		json_decref(out);
		json_decref(in);
		json_decref(v);
		diff_fieldset_free(set);
		buf_release(&want);
		buf_release(&key);
	}
}

Test(fieldset, member_semantics)
{
	struct diff_fieldset *set;

	/* a leaf {} and {".":{}} are the same member */
	expect_canonical("{\"f:a\":{\".\":{}}}", "{\"f:a\":{}}");
	/* a member with children, and a non-member with children */
	set = P("{\"f:a\":{\".\":{},\"f:b\":{}},\"f:c\":{\"f:d\":{}}}");
	cr_expect_eq(diff_fieldset_size(set), 3);
	cr_expect(diff_fieldset_has(set, PATH(PE_F("a"))));
	cr_expect(diff_fieldset_has(set, PATH(PE_F("a"), PE_F("b"))));
	cr_expect_not(diff_fieldset_has(set, PATH(PE_F("c"))));
	cr_expect(diff_fieldset_has(set, PATH(PE_F("c"), PE_F("d"))));
	cr_expect_not(diff_fieldset_has(set, EMPTY_PATH));
	diff_fieldset_free(set);
	/* "." at the top: the root itself */
	set = P("{\".\":{}}");
	cr_expect_eq(diff_fieldset_size(set), 1);
	cr_expect(diff_fieldset_has(set, EMPTY_PATH));
	expect_set(set, "{\".\":{}}");
	diff_fieldset_free(set);
}

/* --- queries --- */

Test(fieldset, has_prefix_empty_size)
{
	struct diff_fieldset *set = P(doc_apply), *none;
	const char *web = "{\"name\":\"web\"}";

	cr_expect_eq(diff_fieldset_size(set), 5);
	cr_expect_not(diff_fieldset_empty(set));
	cr_expect(diff_fieldset_has(set, PATH(PE_F("spec"), PE_F("selector"))));
	cr_expect(diff_fieldset_has(set, PATH(PE_F("spec"), PE_F("template"),
					      PE_F("spec"), PE_F("containers"),
					      PE_K(web))));
	cr_expect(diff_fieldset_has(set, PATH(PE_F("spec"), PE_F("template"),
					      PE_F("spec"), PE_F("containers"),
					      PE_K(web), PE_F("image"))));
	cr_expect_not(diff_fieldset_has(set, PATH(PE_F("spec"))));
	cr_expect_not(
		diff_fieldset_has(set, PATH(PE_F("spec"), PE_F("selector"),
					    PE_F("matchLabels"))));
	cr_expect_not(
		diff_fieldset_has(set, PATH(PE_F("spec"), PE_F("replicas"))));
	cr_expect_not(diff_fieldset_has(set, PATH(PE_K("{\"spec\":1}"))));
	cr_expect_not(diff_fieldset_has(set, PATH(PE_V("\"spec\""))));

	cr_expect(diff_fieldset_has_prefix(set, EMPTY_PATH));
	cr_expect(diff_fieldset_has_prefix(set, PATH(PE_F("spec"))));
	cr_expect(diff_fieldset_has_prefix(
		set, PATH(PE_F("spec"), PE_F("template"), PE_F("metadata"))));
	cr_expect(diff_fieldset_has_prefix(
		set, PATH(PE_F("spec"), PE_F("selector"))));
	cr_expect_not(diff_fieldset_has_prefix(set, PATH(PE_F("status"))));
	cr_expect_not(diff_fieldset_has_prefix(
		set, PATH(PE_F("spec"), PE_F("selector"), PE_F("x"))));

	none = P("{}");
	cr_expect(diff_fieldset_empty(none));
	cr_expect_eq(diff_fieldset_size(none), 0);
	cr_expect_not(diff_fieldset_has_prefix(none, EMPTY_PATH));
	cr_expect_not(diff_fieldset_has(none, EMPTY_PATH));
	expect_set(none, "{}");
	diff_fieldset_free(none);
	diff_fieldset_free(set);

	/* NULL reads as the empty set */
	cr_expect(diff_fieldset_empty(NULL));
	cr_expect_eq(diff_fieldset_size(NULL), 0);
	cr_expect_not(diff_fieldset_has(NULL, PATH(PE_F("a"))));
	diff_fieldset_free(NULL);
}

Test(fieldset, insert_builds_the_parsed_set)
{
	struct diff_fieldset *set = diff_fieldset_new(), *parsed = P(doc_apply);
	const char *web = "{\"name\":\"web\"}";
	char *a, *b;

	cr_assert_not_null(set);
	cr_expect(diff_fieldset_empty(set));
	expect_set(set, "{}");
	/* out of order on purpose */
	cr_assert_eq(
		diff_fieldset_insert(set, PATH(PE_F("spec"), PE_F("template"),
					       PE_F("spec"), PE_F("containers"),
					       PE_K(web), PE_F("name"))),
		0);
	cr_assert_eq(
		diff_fieldset_insert(set, PATH(PE_F("spec"), PE_F("selector"))),
		0);
	cr_assert_eq(
		diff_fieldset_insert(set, PATH(PE_F("spec"), PE_F("template"),
					       PE_F("spec"), PE_F("containers"),
					       PE_K(web))),
		0);
	cr_assert_eq(
		diff_fieldset_insert(set, PATH(PE_F("spec"), PE_F("template"),
					       PE_F("spec"), PE_F("containers"),
					       PE_K(web), PE_F("image"))),
		0);
	cr_assert_eq(
		diff_fieldset_insert(set, PATH(PE_F("spec"), PE_F("template"),
					       PE_F("metadata"), PE_F("labels"),
					       PE_F("app"))),
		0);
	/* again: no change */
	cr_assert_eq(
		diff_fieldset_insert(set, PATH(PE_F("spec"), PE_F("selector"))),
		0);
	cr_expect_eq(diff_fieldset_size(set), 5);
	a = ser(set);
	b = ser(parsed);
	cr_expect_str_eq(a, b);
	free(a);
	free(b);

	/* an intermediate node becomes a member: gets "." */
	cr_assert_eq(diff_fieldset_insert(set, PATH(PE_F("spec"))), 0);
	cr_expect_eq(diff_fieldset_size(set), 6);
	cr_expect(diff_fieldset_has(set, PATH(PE_F("spec"))));
	a = ser(set);
	cr_expect_eq(strncmp(a, "{\"f:spec\":{\".\":{},\"f:selector\":{}", 33),
		     0, "%s", a);
	free(a);

	/* the root */
	cr_assert_eq(diff_fieldset_insert(set, EMPTY_PATH), 0);
	cr_expect(diff_fieldset_has(set, EMPTY_PATH));
	cr_expect_eq(diff_fieldset_size(set), 7);

	diff_fieldset_free(set);
	diff_fieldset_free(parsed);
}

Test(fieldset, insert_rejects_non_canonical_text)
{
	struct diff_fieldset *set = P(doc_scale);
	char *before = ser(set), *after;

	cr_expect_eq(
		diff_fieldset_insert(set, PATH(PE_K("{\"protocol\":\"TCP\","
						    "\"containerPort\":80}"))),
		ERR_INVALID);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_K("{\"a\": 1}"))),
		     ERR_INVALID);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_K("[1]"))), ERR_INVALID);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_K("{bad"))),
		     ERR_INVALID);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_V("1.50"))),
		     ERR_INVALID);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_V("\"<\""))),
		     ERR_INVALID);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_I("01"))), ERR_INVALID);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_I("-1"))), ERR_INVALID);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_I(""))), ERR_INVALID);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_F("\xff"))),
		     ERR_INVALID);
	cr_expect_eq(
		diff_fieldset_insert(set, PATH({(enum diff_pe_type)7, "x"})),
		ERR_INVALID);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_F(NULL))), ERR_INVALID);
	/* all or nothing: new nodes before a bad element are taken back */
	cr_expect_eq(
		diff_fieldset_insert(set, PATH(PE_F("spec"), PE_F("new"),
					       PE_F("deeper"), PE_K("{bad"))),
		ERR_INVALID);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_F("status"), PE_I("x"))),
		     ERR_INVALID);
	cr_expect_not(
		diff_fieldset_has_prefix(set, PATH(PE_F("spec"), PE_F("new"))));
	cr_expect_not(diff_fieldset_has_prefix(set, PATH(PE_F("status"))));
	cr_expect_eq(diff_fieldset_size(set), 1);
	after = ser(set);
	cr_expect_str_eq(after, before);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_F("spec"), PE_F("new"))),
		     0);
	cr_expect(diff_fieldset_has(set, PATH(PE_F("spec"), PE_F("new"))));
	cr_expect(diff_fieldset_has(set, PATH(PE_F("spec"), PE_F("replicas"))));
	cr_expect_eq(diff_fieldset_size(set), 2);
	free(before);
	free(after);

	cr_expect_eq(diff_fieldset_insert(
			     set, PATH(PE_K("{\"containerPort\":80,"
					    "\"protocol\":\"\\u003c\"}"))),
		     0);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_V("1.5"))), 0);
	cr_expect_eq(diff_fieldset_insert(set, PATH(PE_I("10"))), 0);
	cr_expect_eq(diff_fieldset_size(set), 5);
	diff_fieldset_free(set);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

Test(fieldset, insert_many_into_a_parsed_set)
{
	struct diff_fieldset *set = P(configmap);
	char *names[300], buf[32];
	json_t *j, *labels, *v;
	const char *k;
	size_t i;

	for (i = 0; i < 300; i++) {
		snprintf(buf, sizeof(buf), "key-%03zu.example/x",
			 (i * 7) % 300);
		names[i] = strdup(buf);
		cr_assert_eq(diff_fieldset_insert(set, PATH(PE_F("metadata"),
							    PE_F("labels"),
							    PE_F(names[i]))),
			     0);
	}
	cr_expect_eq(diff_fieldset_size(set), 7 + 300);
	for (i = 0; i < 300; i++)
		cr_expect(diff_fieldset_has(set, PATH(PE_F("metadata"),
						      PE_F("labels"),
						      PE_F(names[i]))));
	qsort(names, 300, sizeof(names[0]), cmp_str);
	j = diff_fieldset_to_json(set);
	labels = json_object_get(json_object_get(j, "f:metadata"), "f:labels");
	i = 0;
	json_object_foreach(labels, k, v)
	{
		if (strncmp(k, "f:key-", 6))
			continue;
		cr_expect_str_eq(k + 2, names[i]);
		i++;
	}
	cr_expect_eq(i, 300);
	json_decref(j);
	for (i = 0; i < 300; i++)
		free(names[i]);
	diff_fieldset_free(set);
}

Test(fieldset, many_children_unsorted)
{
	json_t *in = json_object(), *data = json_object();
	struct diff_fieldset *set = NULL;
	json_t *out;
	char key[32];
	const char *k, *prev = "";
	json_t *v;
	int i;

	for (i = 2000; i > 0; i--) {
		snprintf(key, sizeof(key), "f:k%d", i);
		json_object_set_new(data, key, json_object());
	}
	json_object_set_new(in, "f:data", data);
	cr_assert_eq(diff_fieldset_parse(&set, in, NULL), 0);
	cr_expect_eq(diff_fieldset_size(set), 2000);
	out = diff_fieldset_to_json(set);
	json_object_foreach(json_object_get(out, "f:data"), k, v)
	{
		cr_expect_gt(strcmp(k, prev), 0, "%s after %s", k, prev);
		prev = k;
	}
	cr_expect(diff_fieldset_has(set, PATH(PE_F("data"), PE_F("k1234"))));
	json_decref(out);
	json_decref(in);
	diff_fieldset_free(set);
}

/* --- set algebra --- */

static void expect_op(struct diff_fieldset *(*op)(const struct diff_fieldset *,
						  const struct diff_fieldset *),
		      const char *a, const char *b, const char *want,
		      size_t size)
{
	struct diff_fieldset *sa = P(a), *sb = P(b), *r = op(sa, sb);

	cr_assert_not_null(r);
	expect_set(r, want);
	cr_expect_eq(diff_fieldset_size(r), size, "%s op %s", a, b);
	cr_expect_eq(diff_fieldset_empty(r), size == 0);
	diff_fieldset_free(sa);
	diff_fieldset_free(sb);
	diff_fieldset_free(r);
}

Test(fieldset, union_intersect_difference)
{
	static const char a[] =
		"{\"f:metadata\":{\"f:labels\":{\"f:app\":{},\"f:tier\":{}}},"
		"\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":80}\":{\".\":{},"
		"\"f:name\":{}},\"k:{\\\"port\\\":443}\":{}},"
		"\"f:replicas\":{}}}";
	static const char b[] =
		"{\"f:metadata\":{\"f:labels\":{\"f:app\":{},\"f:zone\":{}}},"
		"\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":80}\":{\".\":{},"
		"\"f:protocol\":{}},\"k:{\\\"port\\\":8080}\":{}}},"
		"\"f:status\":{\"f:phase\":{}}}";

	expect_op(diff_fieldset_union, a, b,
		  "{\"f:metadata\":{\"f:labels\":{\"f:app\":{},\"f:tier\":{},"
		  "\"f:zone\":{}}},\"f:spec\":{\"f:ports\":{"
		  "\"k:{\\\"port\\\":80}\":{\".\":{},\"f:name\":{},"
		  "\"f:protocol\":{}},\"k:{\\\"port\\\":443}\":{},"
		  "\"k:{\\\"port\\\":8080}\":{}},\"f:replicas\":{}},"
		  "\"f:status\":{\"f:phase\":{}}}",
		  10);
	expect_op(diff_fieldset_intersect, a, b,
		  "{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}},"
		  "\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":80}\":{}}}}",
		  2);
	expect_op(diff_fieldset_difference, a, b,
		  "{\"f:metadata\":{\"f:labels\":{\"f:tier\":{}}},"
		  "\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":80}\":{"
		  "\"f:name\":{}},\"k:{\\\"port\\\":443}\":{}},"
		  "\"f:replicas\":{}}}",
		  4);
	expect_op(diff_fieldset_difference, b, a,
		  "{\"f:metadata\":{\"f:labels\":{\"f:zone\":{}}},"
		  "\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":80}\":{"
		  "\"f:protocol\":{}},\"k:{\\\"port\\\":8080}\":{}}},"
		  "\"f:status\":{\"f:phase\":{}}}",
		  4);
	/* with itself and with the empty set */
	expect_op(diff_fieldset_union, a, a, a, 6);
	expect_op(diff_fieldset_intersect, a, a, a, 6);
	expect_op(diff_fieldset_difference, a, a, "{}", 0);
	expect_op(diff_fieldset_union, a, "{}", a, 6);
	expect_op(diff_fieldset_union, "{}", a, a, 6);
	expect_op(diff_fieldset_intersect, a, "{}", "{}", 0);
	expect_op(diff_fieldset_difference, a, "{}", a, 6);
	expect_op(diff_fieldset_difference, "{}", a, "{}", 0);
	/* the realistic sets of two managers do not overlap */
	expect_op(diff_fieldset_intersect, deploy_csa, deploy_status,
		  "{\"f:metadata\":{\"f:annotations\":{}}}", 1);
}

Test(fieldset, dot_member_semantics_in_algebra)
{
	static const char a[] = "{\"f:spec\":{\".\":{},\"f:x\":{}}}";
	static const char b[] = "{\"f:spec\":{}}";

	/* removing the member keeps its children */
	expect_op(diff_fieldset_difference, a, b, "{\"f:spec\":{\"f:x\":{}}}",
		  1);
	/* removing the children keeps the member */
	expect_op(diff_fieldset_difference, a, "{\"f:spec\":{\"f:x\":{}}}",
		  "{\"f:spec\":{}}", 1);
	expect_op(diff_fieldset_intersect, a, b, "{\"f:spec\":{}}", 1);
	expect_op(diff_fieldset_difference, b, a, "{}", 0);
	expect_op(diff_fieldset_union, b, "{\"f:spec\":{\"f:x\":{}}}", a, 2);
	/* a member leaf in one, a non-member with children in the other */
	expect_op(diff_fieldset_intersect, b, "{\"f:spec\":{\"f:x\":{}}}", "{}",
		  0);
	/* a whole subtree under a removed parent survives */
	expect_op(diff_fieldset_difference,
		  "{\"f:a\":{\".\":{},\"f:b\":{\".\":{},\"f:c\":{}}}}",
		  "{\"f:a\":{\"f:b\":{}}}",
		  "{\"f:a\":{\".\":{},\"f:b\":{\"f:c\":{}}}}", 2);
	/* the root as a member */
	expect_op(diff_fieldset_difference, "{\".\":{},\"f:a\":{}}",
		  "{\"f:a\":{}}", "{\".\":{}}", 1);
}

Test(fieldset, algebra_with_null_and_inserted_sets)
{
	struct diff_fieldset *a = diff_fieldset_new(), *b = P(doc_scale);
	struct diff_fieldset *u, *d;

	cr_assert_eq(
		diff_fieldset_insert(a, PATH(PE_F("spec"), PE_F("replicas"))),
		0);
	cr_assert_eq(
		diff_fieldset_insert(a, PATH(PE_F("spec"), PE_F("paused"))), 0);
	d = diff_fieldset_difference(a, b);
	expect_set(d, "{\"f:spec\":{\"f:paused\":{}}}");
	u = diff_fieldset_union(NULL, b);
	expect_set(u, doc_scale);
	diff_fieldset_free(d);
	diff_fieldset_free(u);
	u = diff_fieldset_union(NULL, NULL);
	cr_assert_not_null(u);
	cr_expect(diff_fieldset_empty(u));
	diff_fieldset_free(u);
	diff_fieldset_free(a);
	diff_fieldset_free(b);
}

/* subset and equal say what the differences would say, both ways. */
static void expect_relation(const char *a, const char *b, bool subset,
			    bool superset)
{
	struct diff_fieldset *sa = P(a), *sb = P(b);
	struct diff_fieldset *ab = diff_fieldset_difference(sa, sb);
	struct diff_fieldset *ba = diff_fieldset_difference(sb, sa);

	cr_assert(ab && ba);
	cr_expect_eq(diff_fieldset_subset(sa, sb), subset, "%s <= %s", a, b);
	cr_expect_eq(diff_fieldset_subset(sb, sa), superset, "%s >= %s", a, b);
	cr_expect_eq(diff_fieldset_equal(sa, sb), subset && superset,
		     "%s == %s", a, b);
	cr_expect_eq(diff_fieldset_equal(sb, sa), subset && superset,
		     "%s == %s", b, a);
	/* the predicates agree with the algebra */
	cr_expect_eq(subset, diff_fieldset_empty(ab), "%s \\ %s", a, b);
	cr_expect_eq(superset, diff_fieldset_empty(ba), "%s \\ %s", b, a);
	diff_fieldset_free(ab);
	diff_fieldset_free(ba);
	diff_fieldset_free(sa);
	diff_fieldset_free(sb);
}

Test(fieldset, subset_and_equal)
{
	static const char a[] =
		"{\"f:metadata\":{\"f:labels\":{\"f:app\":{},\"f:tier\":{}}},"
		"\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":80}\":{\".\":{},"
		"\"f:name\":{}},\"k:{\\\"port\\\":443}\":{}},"
		"\"f:replicas\":{}}}";
	static const char a_less[] =
		"{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}},"
		"\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":80}\":{"
		"\"f:name\":{}},\"k:{\\\"port\\\":443}\":{}}}}";
	/* same shape as a_less, one member more deep down */
	static const char a_other[] =
		"{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}},"
		"\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":80}\":{"
		"\"f:name\":{},\"f:protocol\":{}},"
		"\"k:{\\\"port\\\":443}\":{}}}}";

	expect_relation(a, a, true, true);
	expect_relation(a_less, a, true, false);
	expect_relation(a_other, a, false, false);
	expect_relation(a_other, a_less, false, true);
	expect_relation("{}", a, true, false);
	expect_relation("{}", "{}", true, true);
	expect_relation(deploy_csa, deploy_csa, true, true);
	expect_relation(deploy_csa, deploy_status, false, false);
	/* "." members: a node with children, and the same node as a member */
	expect_relation("{\"f:spec\":{\"f:x\":{}}}",
			"{\"f:spec\":{\".\":{},\"f:x\":{}}}", true, false);
	expect_relation("{\"f:spec\":{}}", "{\"f:spec\":{\"f:x\":{}}}", false,
			false);
	expect_relation("{\".\":{},\"f:a\":{}}", "{\"f:a\":{}}", false, true);
	/* same size, different members */
	expect_relation("{\"f:a\":{},\"f:b\":{}}", "{\"f:a\":{},\"f:c\":{}}",
			false, false);
	/* k: elements compare by typed value, written canonically */
	expect_relation("{\"k:{\\\"b\\\":1,\\\"a\\\":\\\"x\\\"}\":{}}",
			"{\"k:{\\\"a\\\":\\\"x\\\",\\\"b\\\":1.0}\":{}}", true,
			true);
	expect_relation("{\"k:{\\\"port\\\":80}\":{}}",
			"{\"k:{\\\"port\\\":\\\"80\\\"}\":{}}", false, false);
}

Test(fieldset, subset_and_equal_null_and_inserted)
{
	struct diff_fieldset *empty = diff_fieldset_new(),
			     *parsed = P(doc_apply);
	struct diff_fieldset *built = diff_fieldset_new();
	const char *web = "{\"name\":\"web\"}";

	cr_expect(diff_fieldset_subset(NULL, NULL));
	cr_expect(diff_fieldset_equal(NULL, NULL));
	cr_expect(diff_fieldset_equal(NULL, empty));
	cr_expect(diff_fieldset_subset(NULL, parsed));
	cr_expect_not(diff_fieldset_subset(parsed, NULL));
	cr_expect_not(diff_fieldset_equal(parsed, empty));
	/* built by insert, in another order: the same set */
	cr_assert_eq(diff_fieldset_insert(built,
					  PATH(PE_F("spec"), PE_F("template"),
					       PE_F("spec"), PE_F("containers"),
					       PE_K(web), PE_F("image"))),
		     0);
	cr_assert_eq(
		diff_fieldset_insert(built, PATH(PE_F("spec"), PE_F("template"),
						 PE_F("metadata"),
						 PE_F("labels"), PE_F("app"))),
		0);
	cr_expect_not(diff_fieldset_subset(parsed, built));
	cr_expect(diff_fieldset_subset(built, parsed));
	cr_assert_eq(diff_fieldset_insert(built,
					  PATH(PE_F("spec"), PE_F("template"),
					       PE_F("spec"), PE_F("containers"),
					       PE_K(web), PE_F("name"))),
		     0);
	cr_assert_eq(diff_fieldset_insert(built,
					  PATH(PE_F("spec"), PE_F("template"),
					       PE_F("spec"), PE_F("containers"),
					       PE_K(web))),
		     0);
	cr_expect_not(diff_fieldset_equal(parsed, built));
	cr_assert_eq(diff_fieldset_insert(built,
					  PATH(PE_F("spec"), PE_F("selector"))),
		     0);
	cr_expect(diff_fieldset_equal(parsed, built));
	cr_expect(diff_fieldset_equal(built, parsed));
	diff_fieldset_free(built);
	diff_fieldset_free(parsed);
	diff_fieldset_free(empty);
}

/*
 * Inserts that share prefixes, interleaved with inserts that fail and with
 * inserts that make a parent's child array move (insert's cursor follows
 * the last path): the set is what parsing the same paths gives.
 */
Test(fieldset, insert_sequences_match_parse)
{
	static const char *const names[] = {"m", "c", "x", "a", "q",
					    "b", "z", "k", "d", "p"};
	struct diff_fieldset *set = diff_fieldset_new();
	json_t *want = json_object(), *spec = json_object(), *got;
	char *a, *b;

	json_object_set_new(want, "f:spec", spec);
	for (size_t i = 0; i < 10; i++) {
		char key[8];
		json_t *node = json_object();

		snprintf(key, sizeof(key), "f:%s", names[i]);
		for (size_t j = 0; j <= i; j++) {
			char leaf[8];

			snprintf(leaf, sizeof(leaf), "f:%s", names[j]);
			json_object_set_new(node, leaf, json_object());
			cr_assert_eq(
				diff_fieldset_insert(set, PATH(PE_F("spec"),
							       PE_F(names[i]),
							       PE_F(names[j]))),
				0);
			/* a failure under the same prefix changes nothing */
			cr_expect_eq(
				diff_fieldset_insert(set, PATH(PE_F("spec"),
							       PE_F(names[i]),
							       PE_K("{bad"))),
				ERR_INVALID);
			/* a sibling of an ancestor moves the arrays above */
			cr_assert_eq(
				diff_fieldset_insert(set, PATH(PE_F(names[j]))),
				0);
		}
		json_object_set_new(spec, key, node);
	}
	for (size_t j = 0; j < 10; j++) {
		char key[8];

		snprintf(key, sizeof(key), "f:%s", names[j]);
		json_object_set_new(want, key, json_object());
	}
	got = diff_fieldset_to_json(set);
	cr_assert_not_null(got);
	a = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
	b = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
	cr_expect_str_eq(a, b);
	cr_expect_eq(diff_fieldset_size(set), 55 + 10);
	free(a);
	free(b);
	json_decref(got);
	json_decref(want);
	diff_fieldset_free(set);
}

/* --- walk --- */

struct collect {
	struct buf out;
	int calls;
	int stop_at;
};

static int collect(const struct diff_path *path, void *data)
{
	struct collect *c = data;
	char *s = path_str(path);

	buf_adds(&c->out, s);
	buf_addch(&c->out, '\n');
	free(s);
	return ++c->calls == c->stop_at ? 42 : 0;
}

Test(fieldset, walk_order_and_stop)
{
	struct diff_fieldset *set =
		P("{\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":443}\":{"
		  "\"f:name\":{}},\"k:{\\\"port\\\":80}\":{\".\":{},"
		  "\"f:name\":{}}},\"f:args\":{\"i:10\":{},\"i:2\":{}},"
		  "\".\":{}},\"f:metadata\":{\"f:finalizers\":{\"v:\\\"b\\\"\":"
		  "{},"
		  "\"v:\\\"a\\\"\":{}}}}");
	struct collect c = {BUF_INIT, 0, 0};

	cr_expect_eq(diff_fieldset_walk(set, collect, &c), 0);
	cr_expect_str_eq(buf_cstr(&c.out), ".metadata.finalizers[=\"a\"]\n"
					   ".metadata.finalizers[=\"b\"]\n"
					   ".spec\n"
					   ".spec.args[2]\n"
					   ".spec.args[10]\n"
					   ".spec.ports[port=80]\n"
					   ".spec.ports[port=80].name\n"
					   ".spec.ports[port=443].name\n");
	cr_expect_eq((size_t)c.calls, diff_fieldset_size(set));

	buf_reset(&c.out);
	c.calls = 0;
	c.stop_at = 3;
	cr_expect_eq(diff_fieldset_walk(set, collect, &c), 42);
	cr_expect_eq(c.calls, 3);
	cr_expect_str_eq(buf_cstr(&c.out), ".metadata.finalizers[=\"a\"]\n"
					   ".metadata.finalizers[=\"b\"]\n"
					   ".spec\n");
	buf_release(&c.out);
	diff_fieldset_free(set);

	/* the root member is the empty path; the empty set calls nothing */
	set = P("{\".\":{},\"f:a\":{}}");
	c = (struct collect){BUF_INIT, 0, 0};
	cr_expect_eq(diff_fieldset_walk(set, collect, &c), 0);
	cr_expect_str_eq(buf_cstr(&c.out), "\n.a\n");
	diff_fieldset_free(set);
	buf_reset(&c.out);
	c.calls = 0;
	cr_expect_eq(diff_fieldset_walk(NULL, collect, &c), 0);
	cr_expect_eq(c.calls, 0);
	buf_release(&c.out);
}

/* --- path printing --- */

Test(fieldset, path_format)
{
	struct buf b = BUF_INIT;

	expect_path(PATH(PE_F("spec"), PE_F("template"), PE_F("spec"),
			 PE_F("containers"), PE_K("{\"name\":\"web\"}"),
			 PE_F("image")),
		    ".spec.template.spec.containers[name=\"web\"].image");
	expect_path(PATH(PE_F("ports"),
			 PE_K("{\"containerPort\":80,\"protocol\":\"TCP\"}")),
		    ".ports[containerPort=80,protocol=\"TCP\"]");
	expect_path(PATH(PE_F("finalizers"), PE_V("\"x\"")),
		    ".finalizers[=\"x\"]");
	expect_path(PATH(PE_F("ports"), PE_V("80")), ".ports[=80]");
	expect_path(PATH(PE_F("args"), PE_I("3")), ".args[3]");
	expect_path(PATH(PE_F("metadata"), PE_F("labels"),
			 PE_F("app.kubernetes.io/name")),
		    ".metadata.labels.app.kubernetes.io/name");
	expect_path(
		PATH(PE_K("{\"a\":true,\"b\":null,\"c\":-1.5,"
			  "\"d\":\"q\\\"\\u003c\",\"e\":[1,{\"x\":\"]\"}]}")),
		"[a=true,b=null,c=-1.5,d=\"q\\\"\\u003c\",e=[1,{\"x\":\"]\"}]"
		"]");
	/* key names are shown unescaped */
	expect_path(PATH(PE_K("{\"a\\\"b\":1}")), "[a\"b=1]");
	expect_path(PATH(PE_K("{}")), "[]");
	expect_path(PATH(PE_V("{\"a\":1}")), "[={\"a\":1}]");
	/* not a canonical k: text: shown as it is */
	expect_path(PATH(PE_K("{bad")), "[{bad]");
	expect_path(EMPTY_PATH, "");

	/* appends; an unknown type fails and leaves the buffer alone */
	buf_adds(&b, "x");
	cr_expect_eq(diff_path_format(PATH(PE_F("a")), &b), 0);
	cr_expect_eq(diff_path_format(
			     PATH(PE_F("a"), {(enum diff_pe_type)9, "z"}), &b),
		     ERR_INVALID);
	cr_expect_str_eq(buf_cstr(&b), "x.a");
	buf_release(&b);
}

/* --- bad input --- */

Test(fieldset, parse_errors)
{
	struct err err = ERR_INIT;
	struct diff_fieldset *set = (struct diff_fieldset *)&err;
	json_t *j;

	expect_error("{\"f:spec\":{\"x:foo\":{}}}", ERR_PARSE,
		     "fieldsV1 .spec: unknown prefix \"x:foo\"");
	expect_error("{\"f\":{}}", ERR_PARSE, "fieldsV1: unknown prefix \"f\"");
	expect_error("{\"f:spec\":{\"F:x\":{}}}", ERR_PARSE,
		     "fieldsV1 .spec: unknown prefix \"F:x\"");
	expect_error("{\"f:spec\":{\"f:containers\":{\"k:{bad json\":{}}}}",
		     ERR_PARSE,
		     "fieldsV1 .spec.containers: k:{bad json: not a JSON "
		     "object");
	expect_error("{\"f:spec\":{\"f:containers\":{\"k:[1]\":{}}}}",
		     ERR_PARSE,
		     "fieldsV1 .spec.containers: k:[1]: not a JSON object");
	expect_error("{\"k:{\\\"a\\\":1,\\\"a\\\":2}\":{}}", ERR_PARSE,
		     "fieldsV1: k:{\"a\":1,\"a\":2}: not a JSON object");
	expect_error("{\"k:\":{}}", ERR_PARSE,
		     "fieldsV1: k:: not a JSON object");
	expect_error("{\"f:metadata\":{\"f:finalizers\":{\"v:\\\"x\":{}}}}",
		     ERR_PARSE,
		     "fieldsV1 .metadata.finalizers: v:\"x: not valid JSON");
	expect_error("{\"v:1 2\":{}}", ERR_PARSE,
		     "fieldsV1: v:1 2: not valid JSON");
	expect_error("{\"v:01\":{}}", ERR_PARSE,
		     "fieldsV1: v:01: not valid JSON");
	expect_error("{\"v:1e999\":{}}", ERR_PARSE,
		     "fieldsV1: v:1e999: not valid JSON");
	expect_error("{\"v:\\\"\\\\x\\\"\":{}}", ERR_PARSE,
		     "fieldsV1: v:\"\\x\": not valid JSON");
	expect_error("{\"v:tru\":{}}", ERR_PARSE,
		     "fieldsV1: v:tru: not valid JSON");
	expect_error("{\"f:spec\":{\"f:args\":{\"i:-1\":{}}}}", ERR_PARSE,
		     "fieldsV1 .spec.args: i:-1: not a non-negative integer");
	expect_error("{\"i:\":{}}", ERR_PARSE,
		     "fieldsV1: i:: not a non-negative integer");
	expect_error("{\"i:1.5\":{}}", ERR_PARSE,
		     "fieldsV1: i:1.5: not a non-negative integer");
	expect_error("{\"i:1234567890123456789\":{}}", ERR_PARSE,
		     "fieldsV1: i:1234567890123456789: not a non-negative "
		     "integer");
	expect_error("{\"f:spec\":{\".\":{\"f:x\":{}}}}", ERR_PARSE,
		     "fieldsV1 .spec: .: value is not {}");
	expect_error("{\"f:spec\":{\".\":null}}", ERR_PARSE,
		     "fieldsV1 .spec: .: value is not {}");
	expect_error("{\"f:spec\":{\"\":{}}}", ERR_PARSE,
		     "fieldsV1 .spec: empty key");
	expect_error("{\"f:spec\":1}", ERR_PARSE,
		     "fieldsV1: f:spec: value is not an object");
	expect_error("{\"f:spec\":{\"f:replicas\":[]}}", ERR_PARSE,
		     "fieldsV1 .spec: f:replicas: value is not an object");
	expect_error("{\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":80,"
		     "\\\"protocol\\\":\\\"TCP\\\"}\":{\"q:x\":{}}}}}",
		     ERR_PARSE,
		     "fieldsV1 .spec.ports[port=80,protocol=\"TCP\"]: unknown "
		     "prefix \"q:x\"");
	expect_error("[]", ERR_PARSE, "fieldsV1: not a JSON object");
	expect_error("{\"f:a\":{\"v:\\\"0123456789012345678901234567890123456"
		     "7890123456789012345678901234567890123456789\":{}}}",
		     ERR_PARSE,
		     "fieldsV1 .a: v:\"012345678901234567890123456789012345678"
		     "90123456789012345678901234567890123456...: not valid "
		     "JSON");

	cr_expect_eq(diff_fieldset_parse(&set, NULL, &err), ERR_PARSE);
	cr_expect_null(set);
	cr_expect_str_eq(err_first(&err), "fieldsV1: not a JSON object");
	err_reset(&err);

	/* a key with a NUL byte (only jansson's API can make one) */
	j = json_object();
	json_object_setn_new(j, "f:a\0b", 5, json_object());
	cr_expect_eq(diff_fieldset_parse(&set, j, &err), ERR_PARSE);
	cr_expect_str_eq(err_first(&err),
			 "fieldsV1: key \"f:a\" holds a NUL byte");
	json_decref(j);
	/* err may be NULL */
	j = J("{\"x:y\":{}}");
	cr_expect_eq(diff_fieldset_parse(&set, j, NULL), ERR_PARSE);
	json_decref(j);
	err_release(&err);
}

static json_t *nested(int levels)
{
	json_t *j = json_object();
	int i;

	for (i = 0; i < levels; i++) {
		json_t *up = json_object();

		json_object_set_new(up, "f:a", j);
		j = up;
	}
	return j;
}

Test(fieldset, depth_limit)
{
	struct diff_fieldset *set = NULL;
	struct err err = ERR_INIT;
	struct diff_pe pe[300];
	struct diff_path path = {pe, 256};
	struct buf deep = BUF_INIT;
	json_t *j = nested(256);
	int i;

	cr_expect_eq(diff_fieldset_parse(&set, j, &err), 0);
	cr_expect_eq(diff_fieldset_size(set), 1);
	for (i = 0; i < 300; i++)
		pe[i] = (struct diff_pe){DIFF_PE_FIELD, "a"};
	cr_expect(diff_fieldset_has(set, &path));
	diff_fieldset_free(set);
	json_decref(j);

	j = nested(257);
	cr_expect_eq(diff_fieldset_parse(&set, j, &err), ERR_LIMIT);
	cr_expect_null(set);
	cr_expect_eq(strncmp(err_first(&err), "fieldsV1 .a.a.a.", 16), 0);
	cr_expect_neq(
		strstr(err_first(&err), ": nested deeper than 256 levels"),
		NULL);
	json_decref(j);
	err_reset(&err);

	set = diff_fieldset_new();
	path.len = 257;
	cr_expect_eq(diff_fieldset_insert(set, &path), ERR_LIMIT);
	path.len = 256;
	cr_expect_eq(diff_fieldset_insert(set, &path), 0);
	cr_expect_eq(diff_fieldset_size(set), 1);
	diff_fieldset_free(set);

	/* JSON nested inside an element */
	buf_adds(&deep, "{\"v:");
	for (i = 0; i < 300; i++)
		buf_addch(&deep, '[');
	for (i = 0; i < 300; i++)
		buf_addch(&deep, ']');
	buf_adds(&deep, "\":{}}");
	j = J(deep.ptr);
	cr_expect_eq(diff_fieldset_parse(&set, j, &err), ERR_LIMIT);
	cr_expect_eq(strncmp(err_first(&err), "fieldsV1: v:[[[[", 16), 0);
	cr_expect_neq(
		strstr(err_first(&err), ": JSON too long or nested too deeply"),
		NULL);
	json_decref(j);
	buf_release(&deep);
	err_release(&err);
}

/* --- mutated input never crashes, and canonical form is a fixed point --- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int count_walk(const struct diff_path *path, void *data)
{
	const struct diff_fieldset *set = ((void **)data)[0];
	size_t *n = ((void **)data)[1];
	struct buf b = BUF_INIT;

	cr_assert(diff_fieldset_has(set, path));
	cr_assert(diff_fieldset_has_prefix(set, path));
	cr_assert_eq(diff_path_format(path, &b), 0);
	buf_release(&b);
	(*n)++;
	return 0;
}

/* Whatever parses: serializing and parsing again changes nothing. */
static void check_fixed_point(const json_t *j)
{
	struct diff_fieldset *set = NULL, *again = NULL, *u, *d;
	json_t *out;
	char *a, *b;
	size_t n = 0;
	void *ctx[2];

	if (diff_fieldset_parse(&set, j, NULL) < 0) {
		cr_assert_null(set);
		return;
	}
	out = diff_fieldset_to_json(set);
	cr_assert_not_null(out);
	cr_assert_eq(diff_fieldset_parse(&again, out, NULL), 0);
	a = dump(out);
	json_decref(out);
	b = ser(again);
	cr_assert_str_eq(a, b);
	ctx[0] = set;
	ctx[1] = &n;
	cr_assert_eq(diff_fieldset_walk(set, count_walk, ctx), 0);
	cr_assert_eq(n, diff_fieldset_size(set));
	u = diff_fieldset_union(set, again);
	d = diff_fieldset_difference(set, again);
	cr_assert_eq(diff_fieldset_size(u), n);
	cr_assert(diff_fieldset_empty(d));
	diff_fieldset_free(u);
	diff_fieldset_free(d);
	free(a);
	free(b);
	diff_fieldset_free(set);
	diff_fieldset_free(again);
}

Test(fieldset, fuzz_mutated_text)
{
	static const char alphabet[] = "{}[]\":,\\.fkvi0123456789-+eE x\"tn";
	const char *seeds[] = {deploy_csa, service, finalizers, deploy_status};
	size_t iter, parsed = 0;

	for (iter = 0; iter < 6000; iter++) {
		const char *seed = seeds[iter % 4];
		size_t len = strlen(seed), i, n;
		char *t = malloc(len + 16);
		json_t *j;

		memcpy(t, seed, len + 1);
		n = 1 + rng() % 4;
		for (i = 0; i < n; i++) {
			size_t pos = rng() % len;

			switch (rng() % 4) {
			case 0:
				t[pos] = '\0'; /* truncate */
				len = pos ? pos : 1;
				t[len - 1] = t[len - 1] ? t[len - 1] : '{';
				t[len] = '\0';
				break;
			case 1:
				t[pos] = alphabet[rng() %
						  (sizeof(alphabet) - 1)];
				break;
			case 2:
				t[pos] = (char)(rng() & 0xff);
				if (!t[pos])
					t[pos] = 'x';
				break;
			default:
				memmove(t + pos, t + pos + 1, len - pos);
				len--;
				if (!len) {
					t[0] = '{';
					t[1] = '\0';
					len = 1;
				}
				break;
			}
		}
		j = json_loads(t, 0, NULL);
		if (j) {
			parsed++;
			check_fixed_point(j);
			json_decref(j);
		}
		free(t);
	}
	cr_expect_gt(parsed, 100, "too few mutants parse: %zu", parsed);
}

Test(fieldset, fuzz_element_texts)
{
	static const char *const atoms[] = {
		"\"a\"",       "\"\\u00e9\"",
		"\"\\ud800\"", "\"<\"",
		"\"\\\\\"",    "0",
		"-0",	       "1",
		"80",	       "443",
		"1.5",	       "1e3",
		"-2.5e-8",     "9223372036854775808",
		"true",	       "false",
		"null",	       "[]",
		"{}",	       "\"\\\"\"",
		"\"\\n\"",     "1e400",
		"01",	       "\"",
		"{",	       "[",
		",",	       ":",
		" ",	       "\"x",
		"tru",	       "\xc3\xa9",
		"\"\\u12\"",
	};
	size_t na = sizeof(atoms) / sizeof(atoms[0]);
	size_t iter, parsed = 0;

	for (iter = 0; iter < 6000; iter++) {
		struct buf t = BUF_INIT;
		json_t *j = json_object(), *child = json_object();
		size_t i, n = 1 + rng() % 6;

		buf_adds(&t, rng() % 2 ? "k:{" : "v:");
		for (i = 0; i < n; i++) {
			switch (rng() % 5) {
			case 0:
				buf_addf(&t, "\"f%d\":", (int)(rng() % 4));
				break;
			case 1:
				buf_addch(&t, ',');
				break;
			default:
				break;
			}
			buf_adds(&t, atoms[rng() % na]);
		}
		if (rng() % 3)
			buf_addch(&t, t.ptr[0] == 'k' ? '}' : ' ');
		json_object_set_new(child, "f:x", json_object());
		json_object_set_new(child, "v:1", json_object());
		json_object_setn_new(j, t.ptr, t.len, child);
		if (json_object_size(j)) {
			struct diff_fieldset *set = NULL;

			if (diff_fieldset_parse(&set, j, NULL) == 0)
				parsed++;
			diff_fieldset_free(set);
			check_fixed_point(j);
		}
		json_decref(j);
		buf_release(&t);
	}
	cr_expect_gt(parsed, 100, "too few element texts parse: %zu", parsed);
}

/* Lookups with any text never crash (texts are compared as given). */
Test(fieldset, lookup_with_garbage_text)
{
	struct diff_fieldset *set = P(service);
	static const char *const texts[] = {
		"",
		"{",
		"{\"port\"",
		"{\"port\":",
		"{\"port\":80,",
		"{\"port\":80,\"protocol\":\"TCP\"",
		"[",
		"\"",
		"\"\\u",
		"{\"a\":[[[[",
		"-",
		"1e",
		"{\"port\":1e99999999}",
		"nul",
	};
	size_t i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		cr_expect_not(
			diff_fieldset_has(set, PATH(PE_F("spec"), PE_F("ports"),
						    PE_K(texts[i]))));
		cr_expect_not(
			diff_fieldset_has(set, PATH(PE_F("spec"), PE_F("ports"),
						    PE_V(texts[i]))));
		cr_expect_not(
			diff_fieldset_has(set, PATH(PE_F("spec"), PE_F("ports"),
						    PE_I(texts[i]))));
		free(path_str(PATH(PE_K(texts[i]))));
	}
	cr_expect(diff_fieldset_has(
		set, PATH(PE_F("spec"), PE_F("ports"),
			  PE_K("{\"port\":443,\"protocol\":\"UDP\"}"),
			  PE_F("targetPort"))));
	diff_fieldset_free(set);
}
