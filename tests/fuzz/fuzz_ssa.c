/*
 * libFuzzer target for the server-side apply merge, diff_ssa_apply()
 * (diff/ssa.c), as kube-emu runs it for every apply. `make fuzz` builds
 * and runs it from tests/fuzz/corpus/fuzz_ssa.
 *
 * Input: one flag byte (bit 0: force, bit 1: manager "kubectl" instead of
 * "syncd", bit 2: no live object, a create), then the live object's JSON,
 * a NUL byte, and the applied object's JSON. The kind's schema is the
 * built-in one of the applied object's group and kind.
 *
 * Besides the sanitizers, it checks: a refused apply leaves a problem and
 * an empty result; otherwise there is an object or (without force only)
 * conflicts, never both; an unchanged result equals live; every
 * managedFields entry of the result has a manager, an operation Apply or
 * Update, a
 * fieldsV1 that parses to a non-empty set, and no two entries share
 * manager, operation and subresource; and applying the same object again
 * as the same manager is a no-op without conflicts (apply is idempotent;
 * where the first apply left no manager, from the second one on).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"

#define TIME "2026-01-02T03:04:05Z"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct diff_schemas *reg;

static const struct diff_schema *schema_of(const json_t *obj)
{
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *slash = av ? strchr(av, '/') : NULL;
	char group[256] = "";

	if (slash && (size_t)(slash - av) < sizeof(group))
		memcpy(group, av, (size_t)(slash - av));
	return diff_schemas_lookup(reg, group, kind ? kind : "");
}

static const char *str_or(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static void check_managed_fields(const json_t *obj)
{
	const json_t *mf = json_object_get(json_object_get(obj, "metadata"),
					   "managedFields");
	struct diff_fieldset *set;
	size_t i, j;

	if (!mf)
		return;
	if (!json_is_array(mf))
		abort();
	for (i = 0; i < json_array_size(mf); i++) {
		const json_t *e = json_array_get(mf, i);

		if (!*str_or(e, "manager") ||
		    (strcmp(str_or(e, "operation"), "Apply") &&
		     strcmp(str_or(e, "operation"), "Update")))
			abort();
		if (diff_fieldset_parse(&set, json_object_get(e, "fieldsV1"),
					NULL) < 0 ||
		    diff_fieldset_empty(set))
			abort();
		diff_fieldset_free(set);
		for (j = 0; j < i; j++) {
			const json_t *o = json_array_get(mf, j);

			if (!strcmp(str_or(e, "manager"),
				    str_or(o, "manager")) &&
			    !strcmp(str_or(e, "operation"),
				    str_or(o, "operation")) &&
			    !strcmp(str_or(e, "subresource"),
				    str_or(o, "subresource")))
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diff_ssa_result res = {0}, again = {0};
	struct err err = ERR_INIT;
	json_t *live = NULL, *applied = NULL;
	const uint8_t *nul;
	const char *manager;
	bool force;
	int rc;

	if (!reg && !(reg = diff_schemas_new()))
		abort();
	if (size < 1 || !(nul = memchr(data + 1, '\0', size - 1)))
		return 0;
	force = data[0] & 1;
	manager = data[0] & 2 ? "kubectl" : "syncd";
	if (!(data[0] & 4) &&
	    !(live = json_loadb((const char *)data + 1,
				(size_t)(nul - data - 1), 0, NULL)))
		return 0;
	applied = json_loadb((const char *)nul + 1,
			     size - (size_t)(nul + 1 - data), 0, NULL);
	if (!applied)
		goto out;

	rc = diff_ssa_apply(&res, live, applied, schema_of(applied), manager,
			    force, TIME, &err);
	if (rc < 0) {
		if (!err_count(&err) || res.object || res.conflicts)
			abort();
		goto out;
	}
	if (err_count(&err) || !res.object == !res.conflicts ||
	    (force && res.conflicts))
		abort();
	if (res.conflicts)
		goto out;
	if (!json_is_object(res.object) ||
	    (!res.changed && (!live || !json_equal(res.object, live))))
		abort();
	check_managed_fields(res.object);

	/*
	 * The same apply again changes nothing and conflicts with no one.
	 * Except when no manager is left (the applier's set was empty, the
	 * others' pruned away) while fields remain: the next apply hands
	 * them to before-first-apply, as apimachinery's does, and only the
	 * one after it is a no-op.
	 */
	rc = diff_ssa_apply(&again, res.object, applied, schema_of(applied),
			    manager, false, TIME, &err);
	if (rc < 0 || again.conflicts)
		abort();
	if (again.changed && !json_array_size(json_object_get(
				     json_object_get(res.object, "metadata"),
				     "managedFields"))) {
		diff_ssa_result_release(&res);
		res = again;
		memset(&again, 0, sizeof(again));
		rc = diff_ssa_apply(&again, res.object, applied,
				    schema_of(applied), manager, false, TIME,
				    &err);
		if (rc < 0 || again.conflicts)
			abort();
	}
	if (again.changed || !json_equal(again.object, res.object))
		abort();
out:
	diff_ssa_result_release(&res);
	diff_ssa_result_release(&again);
	json_decref(live);
	json_decref(applied);
	err_release(&err);
	return 0;
}
