/*
 * The options every command that reads an app takes (render, diff,
 * sync): where the files come from (cli_source.h) and how they become
 * objects (cli_render.h). A command appends cli_app_longopts() to its
 * own options, hands unknown `val`s to cli_app_option(), and loads the
 * app's objects with cli_app_load().
 */
#ifndef SYNCD_CLI_APP_H
#define SYNCD_CLI_APP_H

#include <getopt.h>

#include "diff/diff.h"
#include "syncd/cli_render.h"
#include "syncd/cli_source.h"
#include "util/err.h"

struct cli_app {
	struct app_spec spec;	 /* what the options say the app is */
	struct cli_source source;
	struct option *longopts; /* own + app options, from cli_app_longopts */
	/*
	 * Set before cli_app_longopts() by the commands that compare and
	 * apply (diff, sync): objects encrypted with SOPS are decrypted
	 * after the render, with the age identities of
	 * --decrypt-age-key-file. `syncd render` prints what Git holds.
	 */
	bool decrypt;
};

/* getopt_long `val` of --decrypt-age-key-file. */
#define CLI_DECRYPT_OPT 0x1300

/* The --help text of --decrypt-age-key-file (diff, sync). */
extern const char cli_app_decrypt_usage[];

/* Fill *app (its spec with every default); release with cli_app_release(). */
void cli_app_init(struct cli_app *app);

/*
 * `own` (ended by an all-zero entry) followed by the source and render
 * options (and --decrypt-age-key-file when app->decrypt), in app->longopts (released by cli_app_release()). NULL when
 * out of memory.
 */
const struct option *cli_app_longopts(struct cli_app *app,
				      const struct option *own);

/* 1 when `val` is an app option (taken), 0 when not, <0 on a bad value. */
int cli_app_option(struct cli_app *app, int val, const char *arg,
		   struct err *err);

/*
 * The PATH operand after option parsing (argv[optind..argc)): *path gets
 * it, or NULL with --repo. ERR_USAGE with "missing PATH" or "more than
 * one PATH" otherwise.
 */
int cli_app_path(const struct cli_app *app, int argc, char **argv,
		 const char **path, struct err *err);

/*
 * The app name when --app is not given: the last component of PATH (or
 * of --path, or of the repository URL). Caller frees; NULL when none
 * can be derived.
 */
char *cli_app_default_name(const struct cli_app *app, const char *path);

/* The --help text of the app options. */
void cli_app_usage(FILE *f);

/*
 * Fetch (when from Git) and render the app at `path` (NULL with --repo)
 * into *out. *revision (may be NULL) gets the commit id or NULL; it is
 * owned by `app`.
 *
 * Renders from Git go through the render cache (app_render_cache_file()
 * in app/app.h), shared with the controller. With app->decrypt, objects
 * encrypted with SOPS are decrypted after the cache (app_decrypt()): the
 * cache holds ciphertext only.
 */
int cli_app_load(struct cli_app *app, const char *path,
		 struct diff_objset *out, const char **revision,
		 struct err *err);

void cli_app_release(struct cli_app *app);

#endif
