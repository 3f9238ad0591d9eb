/*
 * The app options shared by render, diff and sync.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "renderers/render.h"
#include "syncd/app.h"
#include "syncd/cli_app.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/file.h"

#include "util/banned.h" /* last */

/* Format of the render cache files; bump when it changes. */
#define RENDER_CACHE_VERSION 1
/* Largest render cache file read back. */
#define RENDER_CACHE_MAX (256u << 20)

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

	if (r == 0) {
		r = cli_render_option(&app->render, val, arg, err);
		/* Every render option is part of the render cache key. */
		if (r == 1 && buf_addf(&app->render_args, "%d=%s\n", val,
				       arg ? arg : "") < 0)
			r = err_set(err, ERR_NOMEM, "out of memory");
	}
	return r;
}

int cli_app_path(const struct cli_app *app, int argc, char **argv,
		 const char **path, struct err *err)
{
	*path = NULL;
	if (optind < argc - 1)
		return err_set(err, ERR_USAGE, "more than one PATH");
	if (optind == argc && !app->source.repo)
		return err_set(err, ERR_USAGE, "missing PATH");
	if (optind < argc)
		*path = argv[optind];
	return 0;
}

char *cli_app_default_name(const struct cli_app *app, const char *path)
{
	const struct cli_source *s = &app->source;

	return app_name_from_path(path ? path
				  : s->subpath ? s->subpath
					       : s->repo);
}

void cli_app_usage(FILE *f)
{
	fputs(cli_source_usage, f);
	fputs(cli_render_usage, f);
}

/*
 * The render cache file of this load, or false when the render must not
 * be cached (not from Git; exec plugins and variable files can change
 * without a commit).
 */
static bool cache_file(const struct cli_app *app, struct buf *out)
{
	const struct cli_source *s = &app->source;
	struct sha256_ctx ctx;
	unsigned char digest[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1];
	struct buf key = BUF_INIT;
	bool ok;

	if (!s->tree || !s->cache_path ||
	    app->render.kind == RENDER_EXEC || app->render.vars_files.len)
		return false;
	ok = buf_addf(&key, "v%d\ntree=%s\nname=%s\nnamespace=%s\n%s",
		      RENDER_CACHE_VERSION, s->tree, app->name ? app->name : "",
		      app->namespace ? app->namespace : "",
		      buf_cstr(&app->render_args)) >= 0;
	if (ok) {
		sha256_init(&ctx);
		sha256_update(&ctx, key.ptr, key.len);
		sha256_final(&ctx, digest);
		hex_encode(digest, sizeof(digest), hex);
		ok = buf_addf(out, "%s/renders/%s.json", s->cache_path, hex) >= 0;
	}
	buf_release(&key);
	return ok;
}

bool cli_render_cache_read(const char *file, struct diff_objset *out)
{
	struct buf data = BUF_INIT;
	struct err err = ERR_INIT;
	struct diff_object *obj = NULL;
	json_t *doc = NULL, *objs, *o;
	size_t i;
	bool ok = false;

	if (access(file, R_OK) < 0 ||
	    file_read(&data, file, file, RENDER_CACHE_MAX, &err) < 0)
		goto out;
	doc = json_loadb(data.ptr, data.len, 0, NULL);
	objs = json_object_get(doc, "objects");
	if (json_integer_value(json_object_get(doc, "version")) !=
		    RENDER_CACHE_VERSION ||
	    !json_is_array(objs))
		goto out;
	json_array_foreach (objs, i, o) {
		if (diff_object_new(&obj, json_object_get(o, "object"),
				    json_string_value(json_object_get(o, "origin")),
				    &err) < 0 ||
		    diff_objset_add(out, obj, &err) < 0)
			goto out;
		obj = NULL;
	}
	ok = true;
out:
	if (!ok) {
		diff_object_free(obj);
		diff_objset_release(out);
	}
	json_decref(doc);
	buf_release(&data);
	err_release(&err);
	return ok;
}

bool cli_render_cache_write(const char *file, const struct diff_objset *set)
{
	struct buf tmp = BUF_INIT, dir = BUF_INIT;
	json_t *doc, *objs;
	const char *slash;
	size_t i;
	int fd = -1;
	bool ok = false;

	doc = json_pack("{s:i, s:[]}", "version", RENDER_CACHE_VERSION,
			"objects");
	objs = json_object_get(doc, "objects");
	for (i = 0; doc && i < set->len; i++)
		json_array_append_new(
			objs, json_pack("{s:O, s:s?}", "object",
					set->items[i]->json, "origin",
					set->items[i]->origin));
	slash = strrchr(file, '/');
	if (!doc || !slash || buf_add(&dir, file, slash - file) < 0 ||
	    (mkdir(dir.ptr, 0700) < 0 && errno != EEXIST) ||
	    buf_addf(&tmp, "%s.tmp.%ld", file, (long)getpid()) < 0)
		goto out;
	fd = open(tmp.ptr, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out;
	if (json_dumpfd(doc, fd, JSON_COMPACT) < 0 || fsync(fd) < 0) {
		unlink(tmp.ptr);
		goto out;
	}
	close(fd);
	fd = -1;
	if (rename(tmp.ptr, file) < 0)
		unlink(tmp.ptr);
	else
		ok = true;
out:
	if (fd >= 0) {
		close(fd);
		unlink(tmp.ptr);
	}
	json_decref(doc);
	buf_release(&tmp);
	buf_release(&dir);
	return ok;
}

int cli_app_load(struct cli_app *app, const char *path,
		 struct diff_objset *out, const char **revision,
		 struct err *err)
{
	struct cli_render_env env = {0};
	struct buf file = BUF_INIT;
	bool cacheable;
	int error;

	app->render_cached = false;
	if ((error = cli_source_prepare(&app->source, path, err)) < 0)
		return error;
	env.app_name = app->name;
	env.app_namespace = app->namespace;
	env.revision = app->source.commit;
	env.path = path ? path : app->source.subpath;
	if (revision)
		*revision = app->source.commit;
	cacheable = cache_file(app, &file);
	if (cacheable && cli_render_cache_read(file.ptr, out)) {
		app->render_cached = true;
		if (app->source.verbose)
			log_info("render reused", "tree", app->source.tree,
				 "objects", "cached", NULL);
		goto out;
	}
	error = cli_render_run(&app->render, app->source.dir, &env, out, err);
	if (!error && cacheable)
		cli_render_cache_write(file.ptr, out);
out:
	buf_release(&file);
	return error;
}

void cli_app_release(struct cli_app *app)
{
	if (!app)
		return;
	cli_source_release(&app->source);
	cli_render_release(&app->render);
	free(app->longopts);
	app->longopts = NULL;
	buf_release(&app->render_args);
}
