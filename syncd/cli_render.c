/*
 * The render options of app commands: the directory renderer's globs
 * and recursion.
 */
#include <stdlib.h>
#include <string.h>

#include "renderers/render.h"
#include "syncd/cli_render.h"

enum {
	OPT_INCLUDE = CLI_RENDER_OPT,
	OPT_EXCLUDE,
	OPT_NO_RECURSE,
};

const struct option cli_render_longopts[] = {
	{"include", required_argument, NULL, OPT_INCLUDE},
	{"exclude", required_argument, NULL, OPT_EXCLUDE},
	{"no-recurse", no_argument, NULL, OPT_NO_RECURSE},
	{NULL, 0, NULL, 0},
};

const char cli_render_usage[] =
	"      --include GLOB         only files matching GLOB (repeatable); a\n"
	"                             glob without '/' matches the file name at\n"
	"                             any depth\n"
	"      --exclude GLOB         skip files matching GLOB (repeatable)\n"
	"      --no-recurse           only the files directly in PATH\n";

int cli_render_option(struct cli_render *r, int val, const char *arg,
		      struct err *err)
{
	switch (val) {
	case OPT_INCLUDE:
	case OPT_EXCLUDE:
		if ((val == OPT_INCLUDE ? r->ninclude : r->nexclude) ==
		    CLI_RENDER_MAX_GLOBS)
			return err_set(err, ERR_USAGE, "more than %d globs",
				       CLI_RENDER_MAX_GLOBS);
		if (val == OPT_INCLUDE)
			r->include[r->ninclude++] = arg;
		else
			r->exclude[r->nexclude++] = arg;
		return 1;
	case OPT_NO_RECURSE:
		r->no_recurse = true;
		return 1;
	default:
		return 0;
	}
}

int cli_render_run(struct cli_render *r, const char *dir,
		   const struct cli_render_env *env, struct diff_objset *out,
		   struct err *err)
{
	struct render_dir_options opts = RENDER_DIR_OPTIONS_INIT;

	(void)env;
	opts.no_recurse = r->no_recurse;
	if (r->ninclude)
		opts.include = r->include;
	if (r->nexclude)
		opts.exclude = r->exclude;
	return render_dir(out, dir, &opts, err);
}

void cli_render_release(struct cli_render *r)
{
	(void)r;
}
