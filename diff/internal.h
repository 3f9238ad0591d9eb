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

#endif
