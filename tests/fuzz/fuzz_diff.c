/*
 * libFuzzer target for the comparison of a desired object with its live
 * counterpart under the kind's schema, diff_compare_object() (diff/),
 * and the report's renderings. `make fuzz` builds and runs it from
 * tests/fuzz/corpus/fuzz_diff.
 *
 * Input: one flag byte (bits 0-1: the policy, respect, override or
 * report; bit 2: no live object), then the desired object's JSON, a NUL
 * byte, and the live object's JSON (with its managedFields).
 *
 * Besides the sanitizers, it checks: a refused comparison leaves a
 * problem, success none; no live object is Missing; every field has a
 * path in the API server's syntax (starting with '.' or '[') and a
 * change of its own; an object in sync reports no field; a Foreign object's
 * fields are all foreign, a Drifted one has one that is not; the report renders
 * as JSON and as text; comparing again gives the same JSON report; and
 * the field set walk against each managedFields entry agrees with the
 * set built and parsed (check_known_fields()).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct diff_schemas *reg;
static const unsigned char mask_key[] = "fuzz-mask-key";

static json_t *report_json(struct diff_object_report *rep,
			   enum diff_policy policy, bool text)
{
	struct diff_report r = {0};
	struct buf b = BUF_INIT;
	json_t *j;

	r.field_manager = (char *)"syncd";
	r.policy = policy;
	r.objects = rep;
	r.len = 1;
	if (!(j = diff_report_to_json(&r)))
		abort();
	if (text && diff_report_to_text(&r, true, &b) < 0)
		abort();
	buf_release(&b);
	return j;
}

static void check_report(const struct diff_object_report *rep,
			 const json_t *live)
{
	size_t i, foreign = 0;

	if (!live && rep->state != DIFF_MISSING)
		abort();
	for (i = 0; i < rep->nfields; i++) {
		const struct diff_field *f = &rep->fields[i];

		if (!f->path || (f->path[0] != '.' && f->path[0] != '['))
			abort();
		if (f->fight)
			abort(); /* nothing is held without a hold callback */
		foreign += f->foreign;
	}
	switch (rep->state) {
	case DIFF_IN_SYNC:
		/* An apply may still be sent: to own what syncd declares. */
		if (rep->nfields)
			abort();
		break;
	case DIFF_FOREIGN:
		if (!rep->nfields || foreign != rep->nfields)
			abort();
		break;
	case DIFF_DRIFTED:
		if (!rep->nfields || foreign == rep->nfields)
			abort();
		break;
	case DIFF_MISSING:
	case DIFF_ORPHAN:
	case DIFF_FIGHTING:
		break;
	default:
		abort();
	}
}

/*
 * The field set walk against fieldsV1 (diff_fieldset_of_object_is()),
 * for every managedFields entry of live: 1 only when the entry parses to
 * the set diff_fieldset_of_object() builds; 1 for that set written out;
 * an error only as diff_fieldset_of_object() gives it.
 */
static void check_known_fields(const json_t *desired, const json_t *live,
			       const struct diff_schema *schema)
{
	struct diff_fieldset *set = NULL, *parsed = NULL;
	struct err err = ERR_INIT, err2 = ERR_INIT;
	const json_t *list = json_object_get(json_object_get(live, "metadata"),
					     "managedFields"), *e;
	json_t *written = NULL;
	int built, r;
	size_t i;

	built = diff_fieldset_of_object(&set, desired, schema, &err);
	if (built == 0) {
		if (!(written = diff_fieldset_to_json(set)) ||
		    diff_fieldset_of_object_is(desired, schema, written,
					       &err2) != 1)
			abort();
	}
	json_array_foreach (list, i, e) {
		const json_t *fv = json_object_get(e, "fieldsV1");

		r = diff_fieldset_of_object_is(desired, schema, fv, &err2);
		if (r < 0 && (r != built ||
			      strcmp(err_first(&err2), err_first(&err))))
			abort();
		if (r == 1 &&
		    (built < 0 || diff_fieldset_parse(&parsed, fv, &err2) < 0 ||
		     !diff_fieldset_equal(set, parsed)))
			abort();
		diff_fieldset_free(parsed);
		parsed = NULL;
		err_release(&err2);
	}
	json_decref(written);
	diff_fieldset_free(set);
	err_release(&err);
	err_release(&err2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diff_options opts = DIFF_OPTIONS_INIT;
	struct diff_object_report rep = {0}, rep2 = {0};
	struct err err = ERR_INIT;
	json_t *desired = NULL, *live = NULL, *j1 = NULL, *j2 = NULL;
	const uint8_t *nul;
	int rc;

	if (!reg && !(reg = diff_schemas_new()))
		abort();
	if (size < 1 || !(nul = memchr(data + 1, '\0', size - 1)))
		return 0;
	switch (data[0] & 3) {
	case 1:
		opts.policy = DIFF_POLICY_OVERRIDE;
		break;
	case 2:
		opts.policy = DIFF_POLICY_REPORT;
		break;
	default:
		opts.policy = DIFF_POLICY_RESPECT;
	}
	opts.mask_key = mask_key;
	opts.mask_key_len = sizeof(mask_key) - 1;
	desired = json_loadb((const char *)data + 1, (size_t)(nul - data - 1),
			     0, NULL);
	if (!json_is_object(desired))
		goto out;
	if (!(data[0] & 4) &&
	    !(live = json_loadb((const char *)nul + 1,
				size - (size_t)(nul + 1 - data), 0, NULL)))
		goto out;

	rc = diff_compare_object(&rep, desired, live, reg, &opts, &err);
	if (rc < 0) {
		if (!err_count(&err))
			abort();
		goto out;
	}
	if (err_count(&err))
		abort();
	check_report(&rep, live);
	check_known_fields(desired, live,
			   diff_schemas_lookup(reg, rep.key.group,
					       rep.key.kind));
	j1 = report_json(&rep, opts.policy, true);

	if (diff_compare_object(&rep2, desired, live, reg, &opts, &err) < 0)
		abort();
	j2 = report_json(&rep2, opts.policy, false);
	if (!json_equal(j1, j2))
		abort();
out:
	json_decref(j1);
	json_decref(j2);
	diff_object_report_release(&rep);
	diff_object_report_release(&rep2);
	json_decref(desired);
	json_decref(live);
	err_release(&err);
	return 0;
}
