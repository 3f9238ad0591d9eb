/*
 * libFuzzer target for render_parse() (renderers/yaml.c): YAML and JSON
 * streams of any bytes. `make fuzz` builds it (clang, ASan+UBSan) into
 * build-fuzz/fuzz/fuzz_yaml and runs it from tests/fuzz/corpus/fuzz_yaml;
 * for a longer run by hand:
 *
 *   cp -r tests/fuzz/corpus/fuzz_yaml /tmp/corpus
 *   build-fuzz/fuzz/fuzz_yaml -max_total_time=600 -max_len=16384 \
 *       -timeout=10 /tmp/corpus
 *
 * Besides the sanitizers, it checks the contract of render_parse(): an
 * error leaves exactly one "<name>:<line>:<col>: ..." problem, success
 * none; every document is non-NULL with a 1-based position; strings are
 * valid UTF-8 without NUL; no document nests deeper than RENDER_MAX_DEPTH;
 * and an object or array document printed as JSON reads back equal.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "renderers/render.h"

#define NAME "fuzz.yaml"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_value(const json_t *v, unsigned depth)
{
	const char *k;
	json_t *c;
	size_t i;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (depth > RENDER_MAX_DEPTH)
			abort();
		json_object_foreach((json_t *)v, k, c)
		{
			if (!c)
				abort();
			check_value(c, depth + 1);
		}
		break;
	case JSON_ARRAY:
		if (depth > RENDER_MAX_DEPTH)
			abort();
		json_array_foreach(v, i, c)
		{
			if (!c)
				abort();
			check_value(c, depth + 1);
		}
		break;
	case JSON_STRING:
		/* No NUL inside (jansson checks UTF-8 when dumping). */
		if (strlen(json_string_value(v)) != json_string_length(v))
			abort();
		break;
	case JSON_REAL:
		/* Integral reals that fit in int64 must be integers. */
		if (json_real_value(v) >= -9223372036854775808.0 &&
		    json_real_value(v) < 9223372036854775808.0 &&
		    (double)(long long)json_real_value(v) == json_real_value(v))
			abort();
		break;
	default:
		break;
	}
}

static void check_round_trip(const json_t *v)
{
	struct render_docs again = RENDER_DOCS_INIT;
	char *text;

	if (!json_is_object(v) && !json_is_array(v))
		return;
	text = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (!text)
		abort(); /* invalid UTF-8 somewhere */
	if (render_parse(&again, text, strlen(text), "again", NULL) < 0 ||
	    again.len != 1 || !json_equal(again.items[0].value, v))
		abort();
	render_docs_release(&again);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err err = ERR_INIT;
	int rc;

	rc = render_parse(&docs, (const char *)data, size, NAME, &err);
	if (rc == 0 && (err.count || err.code))
		abort();
	if (rc < 0) {
		if (rc != ERR_PARSE && rc != ERR_LIMIT && rc != ERR_NOMEM)
			abort();
		if (err.count != 1 || err.code != rc ||
		    strncmp(err_first(&err), NAME ":", sizeof(NAME)))
			abort();
	}
	for (size_t i = 0; i < docs.len; i++) {
		if (!docs.items[i].value || !docs.items[i].line ||
		    !docs.items[i].column || json_is_null(docs.items[i].value))
			abort();
		check_value(docs.items[i].value, 1);
		check_round_trip(docs.items[i].value);
	}
	render_docs_release(&docs);
	err_release(&err);
	return 0;
}
