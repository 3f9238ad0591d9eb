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
 * Append the k: text of a map-list item under the list's schema `list`:
 * its key fields, defaults filled in, as compact JSON sorted by name, byte
 * for byte what diff_json_dump() prints for that object (field sets hold
 * this text). Returns 0; 1 (appending nothing) when the item is not an
 * object or lacks a key that has no default; ERR_NOMEM.
 */
int diff_schema_item_key(struct buf *out, const json_t *item,
			 const struct diff_schema *list);

#endif
