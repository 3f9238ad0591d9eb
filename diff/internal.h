/*
 * Declarations shared by the files of the diff library; not public.
 */
#ifndef DIFF_INTERNAL_H
#define DIFF_INTERNAL_H

#include "diff/diff.h"

/*
 * Fill *out for a live object nobody desires: state Orphan, a live view
 * without server metadata and with Secret values fingerprinted.
 */
int diff_orphan_object(struct diff_object_report *out, const json_t *live,
		       const struct diff_options *opts, struct err *err);

/*
 * The report of a desired object whose live counterpart was settled
 * (diff_object_settle()): in sync, compared already.
 */
int diff_settled_report(struct diff_object_report *out,
			const struct diff_object *desired,
			const struct diff_object *live, struct err *err);

/*
 * diff_compare_object() of one desired object, `sensitive` when it was
 * decrypted from the source (diff_object.sensitive): then every value of
 * the report (fields and views) but apiVersion, kind, metadata.name and
 * metadata.namespace is a fingerprint, as a Secret's data is.
 */
int diff_compare_sensitive(struct diff_object_report *out,
			   const json_t *desired, const json_t *live,
			   const struct diff_schemas *reg,
			   const struct diff_options *opts, bool sensitive,
			   struct err *err);

/*
 * The JSONSchemaProps a CRD's schema node was built from (its
 * `default`s, for diff_structural()); NULL for built-in kinds.
 */
const json_t *diff_schema_openapi(const struct diff_schema *s);

/*
 * A JSON number as a manifest would spell it: integers in decimal, reals
 * in the shortest form that reads back to the same double (0.5, 1e+21).
 */
void diff_number_text(const json_t *v, char *out, size_t size);

/*
 * Append the k: text of a map-list item under the list's schema `list`:
 * its key fields, defaults filled in, as compact JSON sorted by name, byte
 * for byte what diff_json_dump() prints for that object (field sets hold
 * this text). Returns 0; 1 (appending nothing) when the item is not an
 * object or lacks a key that has no default; ERR_NOMEM.
 */
int diff_schema_item_key(struct buf *out, const json_t *item,
			 const struct diff_schema *list);

/*
 * Objects along field-set paths (diff/tree.c). A node's schema is the one
 * diff_tree_step() reaches from the root's; diff_tree_child() needs the
 * schema of the node it steps from (a map-list's, for k: elements).
 */
char *diff_tree_compact(const json_t *v);                /* caller frees */
char *diff_tree_item_key(const json_t *item, const struct diff_schema *list);
bool diff_tree_array_has(const json_t *arr, const json_t *v);
const struct diff_schema *diff_tree_step(const struct diff_schema *s,
					 const struct diff_pe *pe);
json_t *diff_tree_child(json_t *node, const struct diff_pe *pe,
			const struct diff_schema *s, size_t *index);
/* The value at a path (borrowed), its schema in *sp when sp is given. */
json_t *diff_tree_get(const json_t *root, const struct diff_pe *pe, size_t len,
		      const struct diff_schema *s,
		      const struct diff_schema **sp);
/*
 * Delete the value at a path; parents the deletion leaves empty go too,
 * parents that were empty before stay. True when something was deleted.
 */
bool diff_tree_delete(json_t *node, const struct diff_pe *pe, size_t len,
		      const struct diff_schema *s);
/* merge(live, applied) as server-side apply merges; new reference. */
json_t *diff_tree_merge(const json_t *l, const json_t *d,
			const struct diff_schema *s);

#endif
