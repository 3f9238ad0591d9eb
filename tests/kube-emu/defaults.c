/* Defaulting (not implemented yet). */
#include "tests/kube-emu/emu.h"

json_t *emu_defaults_apply(struct emu_store *st,
			   const struct emu_resource *res, json_t *obj,
			   const json_t *old)
{
	(void)st;
	(void)res;
	(void)obj;
	(void)old;
	return NULL;
}
