/*
 * How an app's files become objects, for every command that takes a
 * PATH: the renderer (`--renderer auto|directory|...`), its options, and
 * the variables substituted afterwards, as command-line options that
 * fill the app spec (app/app.h). See docs/renderers.md.
 */
#ifndef SYNCD_CLI_RENDER_H
#define SYNCD_CLI_RENDER_H

#include <getopt.h>
#include <stdbool.h>

#include "app/app.h"
#include "util/err.h"

/* getopt_long `val`s of these options are in [CLI_RENDER_OPT, +0x100). */
#define CLI_RENDER_OPT 0x1200

extern const struct option cli_render_longopts[];
extern const char cli_render_usage[];

/*
 * Take render option `val` (from getopt_long) into the app spec: 1 when
 * it was one of ours, 0 when not, ERR_USAGE with a message for a bad
 * value. Rendering itself is app_spec_render().
 */
int cli_render_option(struct app_spec *s, int val, const char *arg,
		      struct err *err);

#endif
