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
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	json_t *mine = fastjson_load((const char *)data, size, &why, NULL);
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
	json_decref(mine);
	json_decref(theirs);
	return 0;
}
