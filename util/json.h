/*
 * A JSON reader for the hot paths (LIST responses, render caches): what
 * json_loadb(data, len, 0, NULL) reads, the same values in the same key
 * order, several times faster on Kubernetes objects (see util/json.c).
 */
#ifndef UTIL_JSON_H
#define UTIL_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Parse len bytes of JSON: an object or an array. NULL when they are not
 * JSON (or memory ran out); *why then names the cause in a few words (a
 * static string) and *at the byte offset where reading stopped (either
 * may be NULL). Caller owns the result.
 */
json_t *fastjson_load(const char *data, size_t len, const char **why,
		      size_t *at);

/*
 * fastjson_load_items()'s offer: the text of one value of the top-level
 * object's "items" array (whole and valid JSON). true: the caller took
 * it, and the array leaves it out; false: it is read into the array, as
 * fastjson_load() reads it (also when the caller could not take it).
 */
typedef bool fastjson_take_fn(const char *item, size_t len, void *ctx);

/*
 * fastjson_load() of a Kubernetes list, offering each value of its
 * "items" array to `take` first, before any tree is built of it: a
 * caller that knows an item from a few of its fields need not have it
 * read (take NULL: fastjson_load()). Every item is checked as JSON all
 * the same; a fault anywhere fails as fastjson_load() fails.
 */
json_t *fastjson_load_items(const char *data, size_t len, const char **why,
			    size_t *at, fastjson_take_fn *take, void *ctx);

/* A value's text, inside the text it was found in. */
struct fastjson_span {
	const char *text; /* NULL: not found */
	size_t len;
};

/*
 * The values of the members named keys[0..n) of the JSON object that
 * `data` holds (one scan, no tree; keys compared with the members' names
 * unescaped): out[i] for keys[i]. Returns how many were found; -1 when
 * data is not an object, or has a fault before the last member needed
 * (out[] then holds what was found before it). It reads no further than
 * that member: the rest is not checked. The first of a name repeated
 * counts.
 */
int fastjson_members(const char *data, size_t len, const char *const *keys,
		     size_t n, struct fastjson_span *out);

/*
 * A string value written without escapes (every name, uid and
 * resourceVersion the API server writes): *s, *n its characters, inside
 * v. false for anything else (not a string, or one with a backslash).
 */
bool fastjson_plain_string(const struct fastjson_span *v, const char **s,
			   size_t *n);

#endif
