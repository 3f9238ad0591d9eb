/*
 * Walking and changing objects along field-set paths, and merging them as
 * server-side apply does: shared by the comparison (compare.c) and the
 * apply engine (ssa.c).
 */
#include "diff/internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/banned.h" /* last */

char *diff_tree_compact(const json_t *v)
{
	struct buf b = BUF_INIT;

	if (diff_json_dump(v, 0, &b) < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

char *diff_tree_item_key(const json_t *item, const struct diff_schema *list)
{
	struct buf b = BUF_INIT;

	if (diff_schema_item_key(&b, item, list)) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

bool diff_tree_array_has(const json_t *arr, const json_t *v)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i,
			   e) if (diff_value_equal(e, v, false)) return true;
	return false;
}

const struct diff_schema *diff_tree_step(const struct diff_schema *s,
					 const struct diff_pe *pe)
{
	return pe->type == DIFF_PE_FIELD ? diff_schema_field(s, pe->text)
					 : diff_schema_items(s);
}

json_t *diff_tree_child(json_t *node, const struct diff_pe *pe,
			const struct diff_schema *s, size_t *index)
{
	struct buf t = BUF_INIT;
	json_t *e, *hit = NULL;
	size_t i;

	switch (pe->type) {
	case DIFF_PE_FIELD:
		return json_is_object(node) ? json_object_get(node, pe->text)
					    : NULL;
	case DIFF_PE_KEY:
	case DIFF_PE_VALUE:
		json_array_foreach(node, i, e)
		{
			buf_reset(&t);
			if (pe->type == DIFF_PE_KEY
				    ? diff_schema_item_key(&t, e, s)
				    : diff_json_dump(e, 0, &t))
				continue;
			if (!strcmp(buf_cstr(&t), pe->text)) {
				*index = i;
				hit = e;
				break;
			}
		}
		buf_release(&t);
		return hit;
	case DIFF_PE_INDEX:
		*index = strtoul(pe->text, NULL, 10);
		return json_array_get(node, *index);
	}
	return NULL;
}

json_t *diff_tree_get(const json_t *root, const struct diff_pe *pe, size_t len,
		      const struct diff_schema *s,
		      const struct diff_schema **sp)
{
	json_t *node = (json_t *)root;
	size_t idx;

	for (size_t i = 0; node && i < len; i++) {
		node = diff_tree_child(node, &pe[i], s, &idx);
		s = diff_tree_step(s, &pe[i]);
	}
	if (sp)
		*sp = s;
	return node;
}

/*
 * Delete the value at a path. Parents left empty by the deletion are
 * deleted too (an apply of "spec: {}" would claim spec itself), but a
 * parent that was empty to begin with is never touched.
 */
bool diff_tree_delete(json_t *node, const struct diff_pe *pe, size_t len,
		      const struct diff_schema *s)
{
	size_t idx = 0;
	json_t *child;
	bool gone;

	if (!len)
		return false;
	child = diff_tree_child(node, pe, s, &idx);
	if (!child)
		return false;
	if (len > 1) {
		size_t before = json_is_object(child) ? json_object_size(child)
						      : json_array_size(child);

		gone = diff_tree_delete(child, pe + 1, len - 1,
					diff_tree_step(s, pe));
		if (!gone || !before ||
		    (json_is_object(child) ? json_object_size(child)
					   : json_array_size(child)))
			return gone;
	}
	if (pe->type == DIFF_PE_FIELD)
		json_object_del(node, pe->text);
	else
		json_array_remove(node, idx);
	return true;
}

/* True when some key of obj holds a NUL (foreach shows it cut short). */
static bool has_nul_key(const json_t *obj)
{
	for (void *it = json_object_iter((json_t *)obj); it;
	     it = json_object_iter_next((json_t *)obj, it))
		if (strlen(json_object_iter_key(it)) !=
		    json_object_iter_key_len(it))
			return true;
	return false;
}

/*
 * Two objects: live's members in live's order, each merged with the
 * desired member of that name or copied, then the members only desired
 * has, in its order. That is live copied whole with each desired member
 * set over it, without copying the live members that get replaced (at
 * every level: copying whole would copy a deep path once per level).
 */
static json_t *merge_object(const json_t *l, const json_t *d,
			    const struct diff_schema *s)
{
	json_t *out, *e, *dv, *m;
	const char *k;

	if (has_nul_key(d)) {
		/* foreach names such keys cut short: do it the long way */
		if (!(out = json_deep_copy(l)))
			return NULL;
		json_object_foreach((json_t *)d, k, e)
		{
			m = diff_tree_merge(json_object_get(l, k), e,
					    diff_schema_field(s, k));
			if (!m || json_object_set_new(out, k, m) < 0)
				goto fail;
		}
		return out;
	}
	if (!(out = json_object()))
		return NULL;
	for (void *it = json_object_iter((json_t *)l); it;
	     it = json_object_iter_next((json_t *)l, it)) {
		size_t len = json_object_iter_key_len(it);

		k = json_object_iter_key(it);
		e = json_object_iter_value(it);
		dv = json_object_getn(d, k, len);
		m = dv ? diff_tree_merge(e, dv, diff_schema_field(s, k))
		       : json_deep_copy(e);
		if (!m || json_object_setn_new(out, k, len, m) < 0)
			goto fail;
	}
	json_object_foreach((json_t *)d, k, e)
	{
		if (json_object_get(l, k))
			continue;
		m = diff_tree_merge(NULL, e, diff_schema_field(s, k));
		if (!m || json_object_set_new(out, k, m) < 0)
			goto fail;
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

/* Map-list: live's items in order, each merged by key, new items after. */
static json_t *merge_map_list(const json_t *l, const json_t *d,
			      const struct diff_schema *s)
{
	json_t *out = json_deep_copy(l), *e, *le, *m;
	char *key, *lk;
	size_t i, j;
	bool found;

	if (!out)
		return NULL;
	json_array_foreach((json_t *)d, i, e)
	{
		key = diff_tree_item_key(e, s);
		found = false;
		json_array_foreach(out, j, le)
		{
			lk = key ? diff_tree_item_key(le, s) : NULL;
			found = lk && !strcmp(key, lk);
			free(lk);
			if (found)
				break;
		}
		free(key);
		if (found) {
			m = diff_tree_merge(le, e, diff_schema_items(s));
			if (!m || json_array_set_new(out, j, m) < 0)
				goto fail;
		} else if (json_array_append(out, e) < 0) {
			goto fail;
		}
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

/* merge(live, applied) as server-side apply merges; NULL when out of memory. */
json_t *diff_tree_merge(const json_t *l, const json_t *d,
			const struct diff_schema *s)
{
	enum diff_schema_type type;
	json_t *out, *e;
	size_t i;

	if (!l || json_typeof(l) != json_typeof(d) ||
	    (!json_is_object(d) && !json_is_array(d)))
		return json_deep_copy(d);
	type = diff_schema_type_of(s, d);
	if (type == DIFF_SCHEMA_ATOMIC)
		return json_deep_copy(d);
	if (json_is_object(d))
		return merge_object(l, d, s);
	if (type == DIFF_SCHEMA_MAP_LIST)
		return merge_map_list(l, d, s);
	if (type != DIFF_SCHEMA_SET)
		return json_deep_copy(d);
	if (!(out = json_deep_copy(l)))
		return NULL;
	json_array_foreach((json_t *)d, i,
			   e) if (!diff_tree_array_has(out, e) &&
				  json_array_append(out, e) < 0)
	{
		json_decref(out);
		return NULL;
	}
	return out;
}
