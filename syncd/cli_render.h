/*
 * How an app's files become objects, for every command that takes a
 * PATH: the renderer (`--renderer auto|directory|...`) and its options.
 */
#ifndef SYNCD_CLI_RENDER_H
#define SYNCD_CLI_RENDER_H

#include <getopt.h>
#include <stdbool.h>

#include "diff/diff.h"
#include "util/err.h"

/* getopt_long `val`s of these options are in [CLI_RENDER_OPT, +0x100). */
#define CLI_RENDER_OPT 0x1200

#define CLI_RENDER_MAX_GLOBS 32

struct cli_render {
	const char *include[CLI_RENDER_MAX_GLOBS + 1];
	size_t ninclude;
	const char *exclude[CLI_RENDER_MAX_GLOBS + 1];
	size_t nexclude;
	bool no_recurse;
	void *priv;
};

#define CLI_RENDER_INIT {{0}, 0, {0}, 0, false, NULL}

/* What a renderer may know about the app (exec plugins, substitution). */
struct cli_render_env {
	const char *app_name;
	const char *app_namespace;
	const char *revision; /* commit id, or NULL */
	const char *path;     /* the app's path as given */
};

extern const struct option cli_render_longopts[];
extern const char cli_render_usage[];

/* As cli_source_option(). */
int cli_render_option(struct cli_render *r, int val, const char *arg,
		      struct err *err);

/*
 * Render `dir` (a directory or a file) into *out (objects added in
 * order; on error *out holds what was rendered for the caller to
 * release).
 */
int cli_render_run(struct cli_render *r, const char *dir,
		   const struct cli_render_env *env, struct diff_objset *out,
		   struct err *err);

void cli_render_release(struct cli_render *r);

#endif
