/*
 * libFuzzer target for diff_fieldset_parse() (diff/fieldset.c): the
 * fieldsV1 JSON of a managedFields entry, any bytes. `make fuzz` builds
 * and runs it from tests/fuzz/corpus/fuzz_fieldset.
 *
 * Besides the sanitizers, it checks: a refused input leaves a problem and
 * no set, success none; the set printed with diff_fieldset_to_json()
 * parses back to an equal set that prints the same (the canonical form is
 * a fixed point, from the second print where a float is negative zero);
 * walking visits diff_fieldset_size() members, each one
 * a member (and a prefix) of the set with a printable path, and inserting
 * them into an empty set rebuilds an equal set; a ∪ a = a ∩ a = a and
 * a \ a is empty.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct walk {
	const struct diff_fieldset *set;
	struct diff_fieldset *copy;
	size_t n;
};

static int visit(const struct diff_path *path, void *data)
{
	struct walk *w = data;
	struct buf b = BUF_INIT;

	w->n++;
	if (!diff_fieldset_has(w->set, path) ||
	    !diff_fieldset_has_prefix(w->set, path))
		abort();
	if (diff_path_format(path, &b) < 0)
		abort();
	if (path->len && !b.len)
		abort();
	buf_release(&b);
	if (diff_fieldset_insert(w->copy, path) < 0)
		abort();
	return 0;
}

/* The compact JSON text of j, kept until the next call. */
static const char *json_dumps_sink(const json_t *j)
{
	static char *text;

	free(text);
	if (!(text = json_dumps(j, JSON_COMPACT)))
		abort();
	return text;
}

static void check_same(struct diff_fieldset *a, struct diff_fieldset *b)
{
	if (!b || !diff_fieldset_equal(a, b) || !diff_fieldset_subset(a, b) ||
	    !diff_fieldset_subset(b, a))
		abort();
	diff_fieldset_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diff_fieldset *set = NULL, *again = NULL, *d;
	struct err err = ERR_INIT;
	struct walk w = {0};
	json_t *in, *out = NULL, *out2 = NULL;
	int rc;

	in = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!in)
		return 0;
	rc = diff_fieldset_parse(&set, in, &err);
	if (rc < 0) {
		if (set || !err_count(&err))
			abort();
		goto out;
	}
	if (!set || err_count(&err))
		abort();

	/*
	 * The canonical form reads back equal and prints the same. Not at
	 * once where a float is negative zero: "-0.0" prints as "-0", as
	 * Go prints it (and as value elements built from objects are
	 * written), which reads back as the integer 0, printed "0". Go's
	 * own round trip does the same; from there on it is a fixed point.
	 */
	if (!(out = diff_fieldset_to_json(set)))
		abort();
	if (diff_fieldset_parse(&again, out, &err) < 0)
		abort();
	if (!(out2 = diff_fieldset_to_json(again)))
		abort();
	if (!json_equal(out, out2)) {
		if (!strstr(json_dumps_sink(out), "-0"))
			abort();
		json_decref(out);
		out = out2;
		diff_fieldset_free(set);
		set = again;
		if (diff_fieldset_parse(&again, out, &err) < 0 ||
		    !(out2 = diff_fieldset_to_json(again)) ||
		    !json_equal(out, out2))
			abort();
	}
	check_same(set, again);

	w.set = set;
	if (!(w.copy = diff_fieldset_new()))
		abort();
	if (diff_fieldset_walk(set, visit, &w) != 0)
		abort();
	if (w.n != diff_fieldset_size(set) ||
	    diff_fieldset_empty(set) != (w.n == 0))
		abort();
	check_same(set, w.copy);

	check_same(set, diff_fieldset_union(set, set));
	check_same(set, diff_fieldset_intersect(set, set));
	if (!(d = diff_fieldset_difference(set, set)) ||
	    !diff_fieldset_empty(d))
		abort();
	diff_fieldset_free(d);
out:
	json_decref(out);
	json_decref(out2);
	json_decref(in);
	diff_fieldset_free(set);
	err_release(&err);
	return 0;
}
