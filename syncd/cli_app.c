/*
 * The app options shared by render, diff and sync.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syncd/cli_app.h"

static size_t count(const struct option *o)
{
	size_t n = 0;

	while (o[n].name)
		n++;
	return n;
}

const struct option *cli_app_longopts(struct cli_app *app,
				      const struct option *own)
{
	size_t a = count(own), b = count(cli_source_longopts),
	       c = count(cli_render_longopts);
	struct option *all = calloc(a + b + c + 1, sizeof(*all));

	if (!all)
		return NULL;
	memcpy(all, own, a * sizeof(*all));
	memcpy(all + a, cli_source_longopts, b * sizeof(*all));
	memcpy(all + a + b, cli_render_longopts, c * sizeof(*all));
	free(app->longopts);
	app->longopts = all;
	return all;
}

int cli_app_option(struct cli_app *app, int val, const char *arg,
		   struct err *err)
{
	int r = cli_source_option(&app->source, val, arg, err);

	if (r == 0)
		r = cli_render_option(&app->render, val, arg, err);
	return r;
}

void cli_app_usage(FILE *f)
{
	fputs(cli_source_usage, f);
	fputs(cli_render_usage, f);
}

int cli_app_load(struct cli_app *app, const char *path,
		 struct diff_objset *out, const char **revision,
		 struct err *err)
{
	struct cli_render_env env = {0};
	int error;

	if ((error = cli_source_prepare(&app->source, path, err)) < 0)
		return error;
	env.app_name = app->name;
	env.app_namespace = app->namespace;
	env.revision = app->source.commit;
	env.path = path ? path : app->source.subpath;
	if (revision)
		*revision = app->source.commit;
	return cli_render_run(&app->render, app->source.dir, &env, out, err);
}

void cli_app_release(struct cli_app *app)
{
	if (!app)
		return;
	cli_source_release(&app->source);
	cli_render_release(&app->render);
	free(app->longopts);
	app->longopts = NULL;
}
