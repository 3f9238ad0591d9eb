/* Admission and rollout stand-ins (not implemented yet). */
#include <stdlib.h>

#include "tests/kube-emu/emu.h"

struct emu_actors {
	struct emu_store *st;
};

struct emu_actors *emu_actors_new(struct emu_store *st)
{
	struct emu_actors *a = calloc(1, sizeof(*a));

	if (a)
		a->st = st;
	return a;
}

void emu_actors_free(struct emu_actors *a)
{
	free(a);
}

int emu_actors_configure(struct emu_actors *a, const char *what,
			 const char *spec, struct buf *msg)
{
	(void)a;
	(void)spec;
	buf_addf(msg, "%s: not supported", what);
	return -1;
}

json_t *emu_actors_admit(struct emu_actors *a, const struct emu_resource *res,
			 const char *op, json_t *obj)
{
	(void)a;
	(void)res;
	(void)op;
	(void)obj;
	return NULL;
}

void emu_actors_notify(struct emu_actors *a, const struct emu_resource *res,
		       const json_t *obj)
{
	(void)a;
	(void)res;
	(void)obj;
}

int emu_actors_control(struct emu_actors *a, const struct emu_request *req,
		       char **seg, size_t n, struct emu_response *resp)
{
	(void)a;
	(void)req;
	(void)seg;
	(void)n;
	(void)resp;
	return -1;
}
