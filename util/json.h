/*
 * A JSON reader for the hot paths (LIST responses, render caches): what
 * json_loadb(data, len, 0, NULL) reads, the same values in the same key
 * order, several times faster on Kubernetes objects (see util/json.c).
 */
#ifndef UTIL_JSON_H
#define UTIL_JSON_H

#include <jansson.h>
#include <stddef.h>

/*
 * Parse len bytes of JSON: an object or an array. NULL when they are not
 * JSON (or memory ran out); *why then names the cause in a few words (a
 * static string) and *at the byte offset where reading stopped (either
 * may be NULL). Caller owns the result.
 */
json_t *fastjson_load(const char *data, size_t len, const char **why,
		      size_t *at);

#endif
