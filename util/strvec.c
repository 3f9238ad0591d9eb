#include "util/strvec.h"

#include <stdlib.h>
#include <string.h>

#include "util/err.h"

#include "util/banned.h" /* last */

int strvec_push(struct strvec *sv, const char *s)
{
	char *copy;

	if (sv->len + 2 > sv->alloc) {
		size_t a = sv->alloc ? sv->alloc * 2 : 8;
		char **p = realloc(sv->v, a * sizeof(*p));

		if (!p)
			return ERR_NOMEM;
		sv->v = p;
		sv->alloc = a;
	}
	if (!(copy = strdup(s)))
		return ERR_NOMEM;
	sv->v[sv->len++] = copy;
	sv->v[sv->len] = NULL;
	return 0;
}

bool strvec_has(const struct strvec *sv, const char *s)
{
	for (size_t i = 0; i < sv->len; i++)
		if (!strcmp(sv->v[i], s))
			return true;
	return false;
}

void strvec_release(struct strvec *sv)
{
	if (!sv)
		return;
	for (size_t i = 0; i < sv->len; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->len = sv->alloc = 0;
}
