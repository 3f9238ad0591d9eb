/*
 * Where an app's files come from, for every command that takes a PATH:
 * a local directory or file, or `--repo URL [--revision REV] [--path
 * SUBDIR]` (a Git repository, source/git.c), with the credentials, trust
 * and signature policy of that repository.
 */
#ifndef SYNCD_CLI_SOURCE_H
#define SYNCD_CLI_SOURCE_H

#include <getopt.h>
#include <stdbool.h>

#include "app/app.h"
#include "util/err.h"

/* getopt_long `val`s of these options are in [CLI_SOURCE_OPT, +0x100). */
#define CLI_SOURCE_OPT 0x1100

/*
 * The source options fill spec->source (the app spec, app/app.h); this
 * holds the state of one checkout.
 */
struct cli_source {
	struct app_spec *spec; /* borrowed: where the options go */
	bool verbose;	       /* --verbose: one log line per poll */
	bool type_given;       /* --source-type was given */
	/* State of a checkout, released by cli_source_release(). */
	char *dir;    /* the directory (or file) to render */
	char *commit; /* resolved commit id, or NULL for a local PATH */
	char *tree;   /* tree id of --path at that commit, or NULL */
	char *cache_path; /* the repository's cache directory, or NULL */
	void *priv;
};

/* Options, ended by an all-zero entry; text for --help. */
extern const struct option cli_source_longopts[];
extern const char cli_source_usage[];

/*
 * Take option `val` (from getopt_long). 1 when it was one of ours, 0
 * when not, ERR_USAGE with a message for a bad value. Values are copied
 * into s->spec.
 */
int cli_source_option(struct cli_source *s, int val, const char *arg,
		      struct err *err);

/*
 * Make the files available: for a local PATH, s->dir is PATH; with
 * --repo, PATH must be absent (NULL) and s->dir is a read-only checkout
 * of the commit (--path inside it), s->commit its id. Git options
 * without --repo are a usage error. On failure, one line naming the URL
 * (without user information) and the cause.
 */
int cli_source_prepare(struct cli_source *s, const char *path, struct err *err);

void cli_source_release(struct cli_source *s);

#endif
