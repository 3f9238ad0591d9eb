/*
 * The source options of app commands. Only local paths for now; Git
 * repositories come with syncd/git.c.
 */
#include <stdlib.h>
#include <string.h>

#include "syncd/cli_source.h"

const struct option cli_source_longopts[] = {
	{NULL, 0, NULL, 0},
};

const char cli_source_usage[] = "";

int cli_source_option(struct cli_source *s, int val, const char *arg,
		      struct err *err)
{
	(void)s;
	(void)val;
	(void)arg;
	(void)err;
	return 0;
}

int cli_source_prepare(struct cli_source *s, const char *path,
		       struct err *err)
{
	if (!path)
		return err_set(err, ERR_USAGE, "missing PATH");
	if (!(s->dir = strdup(path)))
		return err_set(err, ERR_NOMEM, "out of memory");
	return 0;
}

void cli_source_release(struct cli_source *s)
{
	if (!s)
		return;
	free(s->dir);
	free(s->commit);
	s->dir = s->commit = NULL;
}
