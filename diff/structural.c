/*
 * Structural pruning and defaulting of custom resources, as the
 * apiextensions-apiserver decodes one under a version's openAPIV3Schema.
 * kube-emu stores custom resources through it; the comparison defaults
 * a declared atomic value through it before comparing it with what the
 * server stored.
 */
#include <string.h>

#include "diff/diff.h"
#include "diff/internal.h"
#include "util/buf.h"

#include "util/banned.h" /* last */

#define STRUCTURAL_MAX_DEPTH 64

static void walk_node(json_t *v, const json_t *schema, unsigned flags,
		      struct buf *path, json_t *unknown, unsigned depth);

static void walk_object(json_t *obj, const json_t *schema, unsigned flags,
			struct buf *path, json_t *unknown, unsigned depth)
{
	const json_t *props = json_object_get(schema, "properties");
	const json_t *ap = json_object_get(schema, "additionalProperties");
	bool keep = json_is_true(json_object_get(
			    schema, "x-kubernetes-preserve-unknown-fields")) ||
		    json_is_true(ap);
	/* the resource's root and embedded resources keep their meta */
	bool embedded = (flags & DIFF_STRUCTURAL_ROOT) ||
			json_is_true(json_object_get(
				schema, "x-kubernetes-embedded-resource"));
	unsigned inner = flags & ~(unsigned)DIFF_STRUCTURAL_ROOT;
	size_t plen = path->len;
	const json_t *ps;
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(obj, tmp, k, v)
	{
		if (embedded && (!strcmp(k, "apiVersion") ||
				 !strcmp(k, "kind") || !strcmp(k, "metadata")))
			continue;
		/* The path is only for naming pruned fields. */
		if (unknown)
			buf_addf(path, "%s%s", plen ? "." : "", k);
		ps = json_object_get(props, k);
		if (ps)
			walk_node(v, ps, inner, path, unknown, depth + 1);
		else if (json_is_object(ap))
			walk_node(v, ap, inner, path, unknown, depth + 1);
		else if (!keep && (flags & DIFF_STRUCTURAL_PRUNE)) {
			if (unknown)
				json_array_append_new(
					unknown, json_string(buf_cstr(path)));
			json_object_del(obj, k);
		}
		buf_truncate(path, plen);
	}
	if (!(flags & DIFF_STRUCTURAL_DEFAULT))
		return;
	json_object_foreach((json_t *)props, k, v)
	{
		const json_t *def = json_object_get(v, "default");

		if (def && !json_object_get(obj, k))
			json_object_set_new(obj, k, json_deep_copy(def));
	}
}

/*
 * As structural pruning walks: an object under a schema without
 * properties loses every field (unless the schema preserves unknown
 * fields), an array's items go under its items schema.
 */
static void walk_node(json_t *v, const json_t *schema, unsigned flags,
		      struct buf *path, json_t *unknown, unsigned depth)
{
	const json_t *items = json_object_get(schema, "items");
	size_t plen = path->len, i;
	json_t *e;

	if (depth > STRUCTURAL_MAX_DEPTH)
		return;
	if (json_is_object(v)) {
		walk_object(v, schema, flags, path, unknown, depth);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, e)
		{
			if (unknown)
				buf_addf(path, "[%zu]", i);
			walk_node(e, items, flags, path, unknown, depth + 1);
			buf_truncate(path, plen);
		}
	}
}

void diff_structural(json_t *v, const json_t *schema, unsigned flags,
		     json_t *unknown)
{
	struct buf path = BUF_INIT;

	if (!schema)
		return;
	walk_node(v, schema, flags, &path, unknown, 0);
	buf_release(&path);
}
