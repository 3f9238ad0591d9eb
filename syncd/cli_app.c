/*
 * The app options shared by render, diff and sync.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syncd/cli_app.h"
#include "util/log.h"

#include "util/banned.h" /* last */

static const struct option decrypt_longopts[] = {
	{"decrypt-age-key-file", required_argument, NULL, CLI_DECRYPT_OPT},
	{NULL, 0, NULL, 0},
};

const char cli_app_decrypt_usage[] =
	"      --decrypt-age-key-file FILE\n"
	"                             decrypt objects encrypted with SOPS\n"
	"                             (a top-level sops key) with the age\n"
	"                             identities of FILE, by the sops program\n"
	"                             (docs/sops.md); values of decrypted\n"
	"                             objects show as fingerprints\n";

static size_t count(const struct option *o)
{
	size_t n = 0;

	while (o[n].name)
		n++;
	return n;
}

void cli_app_init(struct cli_app *app)
{
	memset(app, 0, sizeof(*app));
	app_spec_init(&app->spec);
	app->source.spec = &app->spec;
}

const struct option *cli_app_longopts(struct cli_app *app,
				      const struct option *own)
{
	size_t a = count(own), b = count(cli_source_longopts),
	       c = count(cli_render_longopts),
	       d = app->decrypt ? count(decrypt_longopts) : 0;
	struct option *all = calloc(a + b + c + d + 1, sizeof(*all));

	if (!all)
		return NULL;
	memcpy(all, own, a * sizeof(*all));
	memcpy(all + a, cli_source_longopts, b * sizeof(*all));
	memcpy(all + a + b, cli_render_longopts, c * sizeof(*all));
	memcpy(all + a + b + c, decrypt_longopts, d * sizeof(*all));
	free(app->longopts);
	app->longopts = all;
	return all;
}

int cli_app_option(struct cli_app *app, int val, const char *arg,
		   struct err *err)
{
	int r;

	if (val == CLI_DECRYPT_OPT && app->decrypt) {
		app->spec.decryption.sops = true;
		if (app_spec_set(&app->spec, &app->spec.decryption.age_key_file,
				 arg) < 0)
			return err_set(err, ERR_NOMEM, "out of memory");
		return 1;
	}
	r = cli_source_option(&app->source, val, arg, err);

	if (r == 0)
		r = cli_render_option(&app->spec, val, arg, err);
	return r;
}

int cli_app_path(const struct cli_app *app, int argc, char **argv,
		 const char **path, struct err *err)
{
	*path = NULL;
	if (optind < argc - 1)
		return err_set(err, ERR_USAGE, "more than one PATH");
	if (optind == argc && !app->spec.source.url)
		return err_set(err, ERR_USAGE, "missing PATH");
	if (optind < argc)
		*path = argv[optind];
	return 0;
}

char *cli_app_default_name(const struct cli_app *app, const char *path)
{
	const struct source_options *g = &app->spec.source;

	return app_name_from_path(path ? path
				  : g->subpath ? g->subpath
					       : g->url);
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
	struct buf file = BUF_INIT;
	bool cacheable;
	int error;

	if ((error = cli_source_prepare(&app->source, path, err)) < 0)
		return error;
	if (revision)
		*revision = app->source.commit;
	error = app_render_cache_file(&file, &app->spec,
				      app->source.cache_path,
				      app->source.tree);
	if (error == ERR_NOMEM) {
		buf_release(&file);
		return err_set(err, error, "out of memory");
	}
	cacheable = error == 0 && app_spec_cacheable(&app->spec);
	if (cacheable && app_render_cache_read(file.ptr, out)) {
		if (app->source.verbose)
			log_info("render reused", "tree", app->source.tree,
				 "objects", "cached", NULL);
		error = 0;
		goto out;
	}
	error = app_spec_render(&app->spec, app->source.dir,
				app->source.commit,
				path ? path : app->spec.source.subpath, NULL, out,
				NULL, err);
	if (!error && cacheable)
		app_render_cache_write(file.ptr, out);
out:
	/* After the cache: it keeps what Git holds, ciphertext. */
	if (!error && app->decrypt)
		error = app_decrypt(out, &app->spec, NULL, err);
	buf_release(&file);
	return error;
}

void cli_app_release(struct cli_app *app)
{
	if (!app)
		return;
	cli_source_release(&app->source);
	app_spec_release(&app->spec);
	free(app->longopts);
	app->longopts = NULL;
}
