/* JSON patch and strategic merge patch (not implemented yet). */
#include "tests/kube-emu/emu.h"

int emu_json_patch(json_t *doc, const json_t *ops, struct buf *msg)
{
	(void)doc;
	(void)ops;
	buf_adds(msg, "json patch is not supported");
	return 415;
}

json_t *emu_strategic_merge_patch(const json_t *orig, const json_t *patch,
				  const struct emu_resource *res, int *code,
				  struct buf *msg)
{
	(void)orig;
	(void)patch;
	(void)res;
	*code = 415;
	buf_adds(msg, "strategic merge patch is not supported");
	return NULL;
}
