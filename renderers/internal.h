/*
 * Helpers shared by the renderers' files; not part of the public
 * renderers/render.h.
 */
#ifndef RENDERERS_INTERNAL_H
#define RENDERERS_INTERNAL_H

#include <stdbool.h>
#include <jansson.h>

/* Does `s` end with `suffix`? */
bool render_has_suffix(const char *s, const char *suffix);

/* "an object", "a list", "a string", ... for messages about a value. */
const char *render_value_kind(const json_t *v);

/* A document whose kind ends in "List" and that has `items` (expanded). */
bool render_is_list_kind(const json_t *doc);

#endif
