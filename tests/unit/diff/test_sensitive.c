/*
 * An object decrypted from the source (diff_object.sensitive): every
 * value a report shows, in its fields and in its views, is a
 * fingerprint, but apiVersion, kind, name and namespace; the apply body
 * keeps the real values.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "diff/diff.h"
#include "util/err.h"

static json_t *obj(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);

	cr_assert_not_null(j, "%s: %s", text, je.text);
	return j;
}

static struct diff_report *compare(bool sensitive, const char *desired,
				   const char *live)
{
	struct diff_objset d = DIFF_OBJSET_INIT, l = DIFF_OBJSET_INIT;
	struct diff_options opts = DIFF_OPTIONS_INIT;
	struct diff_object *o;
	struct diff_report *r = NULL;
	struct err err = ERR_INIT;
	json_t *j;

	opts.mask_key = (const unsigned char *)"k";
	opts.mask_key_len = 1;
	j = obj(desired);
	cr_assert_eq(diff_object_new(&o, j, "cm.enc.yaml:1", &err), 0);
	json_decref(j);
	o->sensitive = sensitive;
	cr_assert_eq(diff_objset_add(&d, o, &err), 0);
	if (live) {
		j = obj(live);
		cr_assert_eq(diff_object_new(&o, j, NULL, &err), 0);
		json_decref(j);
		cr_assert_eq(diff_objset_add(&l, o, &err), 0);
	}
	cr_assert_eq(diff_compare(&r, &d, &l, NULL, &opts, NULL, &err), 0, "%s",
		     err_msg(&err));
	diff_objset_release(&d);
	diff_objset_release(&l);
	err_release(&err);
	return r;
}

static char *text_of(const struct diff_report *r)
{
	json_t *j = diff_report_to_json(r);
	struct buf t = BUF_INIT;
	char *s = json_dumps(j, JSON_COMPACT);

	cr_assert_eq(diff_report_to_text(r, false, &t), 0);
	cr_assert_not_null(s);
	json_decref(j);
	buf_addf(&t, "\n%s", s);
	free(s);
	return buf_detach(&t, NULL);
}

#define DESIRED                                                              \
	"{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": "   \
	"{\"name\": \"app\", \"namespace\": \"ns\", \"labels\": {\"tier\": " \
	"\"label-canary\"}}, \"data\": {\"token\": \"value-canary\", "       \
	"\"n\": \"1\"}, \"binaryData\": {}, \"immutable\": false}"

Test(sensitive, a_decrypted_object_shows_fingerprints_only)
{
	struct diff_report *r = compare(
		true, DESIRED,
		"{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", "
		"\"metadata\": "
		"{\"name\": \"app\", \"namespace\": \"ns\", \"labels\": "
		"{\"tier\": \"old-label\"}}, \"data\": {\"token\": "
		"\"live-canary\", \"n\": \"1\"}}");
	char *all = text_of(r);

	cr_assert_eq(r->len, 1);
	cr_assert_eq(r->objects[0].state, DIFF_DRIFTED);
	cr_assert_null(strstr(all, "canary"), "a value shows:\n%s", all);
	cr_assert_null(strstr(all, "old-label"), "a value shows:\n%s", all);
	cr_assert(strstr(all, "(secret sha256:"), "%s", all);
	cr_assert(strstr(all, "name: app"), "the name shows:\n%s", all);
	cr_assert(strstr(all, "kind: ConfigMap"), "%s", all);
	cr_assert(strstr(all, ".data.token"), "the path shows:\n%s", all);
	/* What is sent is the real thing. */
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(r->objects[0].apply, "data"), "token")),
		"value-canary");
	free(all);
	diff_report_free(r);
}

Test(sensitive, a_missing_decrypted_object_shows_fingerprints_only)
{
	struct diff_report *r = compare(true, DESIRED, NULL);
	char *all = text_of(r);

	cr_assert_eq(r->objects[0].state, DIFF_MISSING);
	cr_assert_null(strstr(all, "canary"), "a value shows:\n%s", all);
	cr_assert(strstr(all, "namespace: ns"), "%s", all);
	free(all);
	diff_report_free(r);
}

Test(sensitive, the_same_object_not_decrypted_shows_its_values)
{
	struct diff_report *r = compare(false, DESIRED, NULL);
	char *all = text_of(r);

	cr_assert(strstr(all, "value-canary"), "%s", all);
	free(all);
	diff_report_free(r);
}

Test(sensitive, equal_values_have_equal_fingerprints_in_fields)
{
	struct diff_report *r = compare(
		true,
		"{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": "
		"{\"name\": \"db\"}, \"stringData\": {\"pw\": \"same\"}, "
		"\"type\": \"Opaque\"}",
		"{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": "
		"{\"name\": \"db\"}, \"data\": {\"pw\": \"b3RoZXI=\"}, "
		"\"type\": \"kubernetes.io/tls\"}");
	const struct diff_object_report *o = &r->objects[0];
	char *all = text_of(r);

	cr_assert_null(strstr(all, "Opaque"), "%s", all);
	cr_assert_null(strstr(all, "kubernetes.io/tls"), "%s", all);
	cr_assert_null(strstr(all, "same"), "%s", all);
	cr_assert_geq(o->nfields, 2);
	for (size_t i = 0; i < o->nfields; i++) {
		cr_assert(json_is_string(o->fields[i].desired));
		cr_assert(!strncmp(json_string_value(o->fields[i].desired),
				   "(secret sha256:", 15),
			  "%s: %s", o->fields[i].path,
			  json_string_value(o->fields[i].desired));
	}
	free(all);
	diff_report_free(r);
}
