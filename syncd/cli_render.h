/*
 * How an app's files become objects, for every command that takes a
 * PATH: the renderer (`--renderer auto|directory|...`), its options, and
 * the variables substituted afterwards. See docs/renderers.md.
 */
#ifndef SYNCD_CLI_RENDER_H
#define SYNCD_CLI_RENDER_H

#include <getopt.h>
#include <stdbool.h>

#include "diff/diff.h"
#include "util/err.h"
#include "util/strvec.h"

/* getopt_long `val`s of these options are in [CLI_RENDER_OPT, +0x100). */
#define CLI_RENDER_OPT 0x1200

#define CLI_RENDER_MAX_GLOBS 32

/* Where a substitution default comes from: no flag given. */
#define CLI_RENDER_SUBST_UNSET (-1)

struct cli_render {
	const char *include[CLI_RENDER_MAX_GLOBS + 1];
	size_t ninclude;
	const char *exclude[CLI_RENDER_MAX_GLOBS + 1];
	size_t nexclude;
	bool no_recurse;
	void *priv;

	/* --renderer (enum render_kind; 0: auto) and --render-timeout. */
	int kind;
	unsigned timeout_ms;        /* 0: the renderers' default (60 s) */
	const char *kustomize_bin;
	/* helm */
	const char *helm_bin;
	const char *helm_release;
	const char *helm_kube_version;
	bool helm_include_crds;
	struct strvec helm_values;
	struct strvec helm_set;
	/* exec plugin */
	const char *plugin_cmd;
	struct strvec plugin_args;
	struct strvec plugin_env;
	/* jsonnet */
	const char *jsonnet_file;
	struct strvec jsonnet_ext_str;
	struct strvec jsonnet_ext_code;
	struct strvec jsonnet_tla_str;
	struct strvec jsonnet_tla_code;
	struct strvec jsonnet_jpath;
	/* substitution: --var "NAME=VALUE" in order, --vars-file paths */
	struct strvec vars;
	struct strvec vars_files;
	int substitute;             /* enum render_subst_mode, or
				       CLI_RENDER_SUBST_UNSET */
	int used_kind;              /* the renderer the last run used */
};

#define CLI_RENDER_INIT \
	{{0}, 0, {0}, 0, false, NULL, 0, 0, NULL, NULL, NULL, NULL, false, \
	 {0}, {0}, NULL, {0}, {0}, NULL, {0}, {0}, {0}, {0}, {0}, {0}, {0}, \
	 CLI_RENDER_SUBST_UNSET, 0}

/* Largest --vars-file read (bytes). */
#define CLI_RENDER_MAX_VARS_FILE (1u << 20)

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
 * Render `dir` (a directory or a file) with the chosen renderer, then
 * substitute variables (from --vars-file files, then --var, later ones
 * winning) when substitution is on, into *out (objects added in order;
 * on error *out holds what was rendered for the caller to release).
 */
int cli_render_run(struct cli_render *r, const char *dir,
		   const struct cli_render_env *env, struct diff_objset *out,
		   struct err *err);

void cli_render_release(struct cli_render *r);

/*
 * Read a --vars-file: KEY=VALUE lines (blank lines and # comments
 * skipped, one pair of surrounding quotes removed) or a YAML/JSON map of
 * scalars. Appends "NAME=VALUE" strings to *out. Messages name `path`.
 */
int cli_render_read_vars(struct strvec *out, const char *path,
			 struct err *err);

#endif
