/* Fault injection and counters (not implemented yet). */
#include <stdlib.h>

#include "tests/kube-emu/emu.h"

struct emu_faults {
	int unused;
};

struct emu_faults *emu_faults_new(void)
{
	return calloc(1, sizeof(struct emu_faults));
}

void emu_faults_free(struct emu_faults *f)
{
	free(f);
}

int emu_faults_add_spec(struct emu_faults *f, const char *spec,
			struct buf *msg)
{
	(void)f;
	buf_addf(msg, "%s: faults are not supported", spec);
	return -1;
}
