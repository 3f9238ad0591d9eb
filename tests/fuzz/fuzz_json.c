/*
 * libFuzzer target for fastjson_load() (util/json.c), against jansson's
 * own reader: any bytes. `make fuzz` builds it (clang, ASan+UBSan) into
 * build-fuzz/fuzz/fuzz_json and runs it from tests/fuzz/corpus/fuzz_json.
 *
 * Besides the sanitizers, it checks the contract: fastjson_load() reads
 * exactly what json_loadb(data, size, 0, NULL) reads, with a reason when
 * it refuses, and builds the same value with its keys in the same order
 * (both printed compactly in their key order: the same text). Except
 * for a NUL byte after a number or a literal, which jansson skips and
 * fastjson_load() refuses.
 *
 * Then fastjson_load_items(), taking every other item of a top-level
 * "items" array: it fails exactly where fastjson_load() fails, and
 * otherwise reads the same value but for the items taken, each offered
 * as a text that reads as that item; the names fastjson_members() finds
 * in an item are its members, and what it finds reads as JSON.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The items offered, in order, as JSON read from their text. */
struct taking {
	json_t *offered; /* array */
	bool fault;
};

static bool take_odd(const char *item, size_t len, void *ctx)
{
	static const char *const keys[] = {"metadata", "kind", "a", ""};
	struct taking *t = ctx;
	struct fastjson_span v[4];
	json_t *one = fastjson_load(item, len, NULL, NULL);
	int found;

	if (!one) { /* a scalar item: read it inside an array */
		char *wrapped = malloc(len + 2);
		json_t *arr;

		if (!wrapped)
			abort();
		wrapped[0] = '[';
		memcpy(wrapped + 1, item, len);
		wrapped[len + 1] = ']';
		arr = fastjson_load(wrapped, len + 2, NULL, NULL);
		one = json_incref(json_array_get(arr, 0));
		json_decref(arr);
		free(wrapped);
	}
	if (!one) {
		t->fault = true; /* an item offered that does not read */
		return false;
	}
	found = fastjson_members(item, len, keys, 4, v);
	if (json_is_object(one) ? found < 0 : found != -1)
		t->fault = true;
	for (int i = 0; i < 4 && found > 0; i++)
		if (v[i].text && !json_object_get(one, keys[i]))
			t->fault = true;
	json_array_append_new(t->offered, one);
	return json_array_size(t->offered) % 2 == 1;
}

/* fastjson_load_items() against fastjson_load()'s `mine` (may be NULL). */
static void check_items(const uint8_t *data, size_t size, const json_t *mine,
			const char *why, size_t at)
{
	struct taking t = {json_array(), false};
	const char *why2 = NULL;
	size_t at2 = 0, k = 0;
	json_t *kept = fastjson_load_items((const char *)data, size, &why2,
					   &at2, take_odd, &t);
	const json_t *all = json_object_get(mine, "items");

	if (!kept != !mine || t.fault)
		abort();
	if (!mine) {
		if (strcmp(why, why2) || at != at2)
			abort();
	} else if (json_array_size(t.offered) != json_array_size(all)) {
		/* Only a second "items" member (its value wins) explains it. */
		const uint8_t *first = memmem(data, size, "items", 5);

		if (!memmem(data, size, "\\u", 2) &&
		    (!first ||
		     !memmem(first + 5, size - (size_t)(first + 5 - data),
			     "items", 5)))
			abort();
	} else if (json_is_array(all)) {
		const json_t *rest = json_object_get(kept, "items");

		/* Items offered: all of them; kept: the second, fourth... */
		for (size_t i = 0; i < json_array_size(all); i++) {
			const json_t *item = json_array_get(all, i);

			if (!json_equal(item, json_array_get(t.offered, i)) ||
			    (i % 2 && !json_equal(item,
						  json_array_get(rest, k++))))
				abort();
		}
		if (k != json_array_size(rest))
			abort();
	} else if (!json_equal(mine, kept)) {
		abort();
	}
	json_decref(kept);
	json_decref(t.offered);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	size_t at = 0;
	json_t *mine = fastjson_load((const char *)data, size, &why, &at);
	json_t *theirs = json_loadb((const char *)data, size, 0, NULL);
	char *a, *b;

	/*
	 * One difference, on purpose: jansson skips a NUL byte right after
	 * a number or a literal ("[2\0]" reads as [2]); that is not JSON,
	 * and fastjson_load() refuses it.
	 */
	if (!mine && theirs && memchr(data, '\0', size)) {
		json_decref(theirs);
		theirs = NULL;
	}
	if (!mine != !theirs || (!mine && !why) || (mine && why))
		abort();
	if (mine) {
		a = json_dumps(mine, JSON_COMPACT | JSON_ENCODE_ANY);
		b = json_dumps(theirs, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!a || !b || strcmp(a, b) || !json_equal(mine, theirs))
			abort();
		free(a);
		free(b);
	}
	check_items(data, size, mine, why, at);
	json_decref(mine);
	json_decref(theirs);
	return 0;
}
