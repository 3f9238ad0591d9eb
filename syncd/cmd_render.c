/*
 * syncd render PATH: print the objects a path renders to.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"
#include "renderers/render.h"
#include "syncd/cli.h"

#define MAX_GLOBS 32

static const char usage[] =
	"usage: syncd render PATH [-o yaml|json] [--include GLOB]... "
	"[--exclude GLOB]...\n"
	"                    [--no-recurse]\n"
	"\n"
	"Render the manifests under PATH (a directory or one file) and print\n"
	"the objects, in path order, as a YAML stream (documents separated by\n"
	"---) or, with -o json, as one v1 List as kubectl prints it.\n"
	"\n"
	"  -o, --output FORMAT   yaml (default) or json\n"
	"      --include GLOB    only files matching GLOB (repeatable); a glob\n"
	"                        without '/' matches the file name at any depth\n"
	"      --exclude GLOB    skip files matching GLOB (repeatable)\n"
	"      --no-recurse      only the files directly in PATH\n"
	"  -h, --help            this text\n"
	"\n"
	"Exit status: 0 rendered, 2 error (one line per problem on stderr).\n";

static int print_objects(const struct diff_objset *set, bool json)
{
	struct buf out = BUF_INIT;
	int rc = EXIT_ERROR;

	if (json) {
		json_t *list = json_pack("{s:s, s:s, s:[], s:{s:s}}", "apiVersion",
					 "v1", "kind", "List", "items",
					 "metadata", "resourceVersion", "");
		json_t *items = json_object_get(list, "items");

		for (size_t i = 0; i < set->len; i++)
			json_array_append(items, set->items[i]->json);
		if (diff_json_dump(list, 4, &out) < 0 ||
		    buf_addch(&out, '\n') < 0) {
			json_decref(list);
			fprintf(stderr, "error: cannot encode the objects\n");
			goto out;
		}
		json_decref(list);
	} else {
		for (size_t i = 0; i < set->len; i++) {
			if ((i && buf_adds(&out, "---\n") < 0) ||
			    diff_yaml_dump(set->items[i]->json, &out) < 0) {
				fprintf(stderr, "error: %s: cannot encode\n",
					set->items[i]->origin);
				goto out;
			}
		}
	}
	rc = cli_write_stdout(buf_cstr(&out), out.len);
out:
	buf_release(&out);
	return rc;
}

static int render_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"include", required_argument, NULL, 'i'},
		{"exclude", required_argument, NULL, 'x'},
		{"no-recurse", no_argument, NULL, 'R'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct render_dir_options opts = RENDER_DIR_OPTIONS_INIT;
	const char *include[MAX_GLOBS + 1] = {0}, *exclude[MAX_GLOBS + 1] = {0};
	size_t ninclude = 0, nexclude = 0;
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	bool json = false;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!strcmp(optarg, "json"))
				json = true;
			else if (!strcmp(optarg, "yaml"))
				json = false;
			else
				return cli_usage_error(&cli_render_command,
						       "unknown output format "
						       "\"%s\" (want yaml or "
						       "json)",
						       optarg);
			break;
		case 'i':
		case 'x':
			if ((c == 'i' ? ninclude : nexclude) == MAX_GLOBS)
				return cli_usage_error(&cli_render_command,
						       "more than %d globs",
						       MAX_GLOBS);
			if (c == 'i')
				include[ninclude++] = optarg;
			else
				exclude[nexclude++] = optarg;
			break;
		case 'R':
			opts.no_recurse = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return EXIT_OK;
		default:
			return cli_usage_error(&cli_render_command,
					       "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error(&cli_render_command,
				       optind == argc ? "missing PATH"
						      : "more than one PATH");
	if (ninclude)
		opts.include = include;
	if (nexclude)
		opts.exclude = exclude;

	if (render_dir(&set, argv[optind], &opts, &err) < 0) {
		cli_print_errors(&err);
		rc = EXIT_ERROR;
	} else {
		rc = print_objects(&set, json);
	}
	diff_objset_release(&set);
	err_release(&err);
	return rc;
}

const struct cli_command cli_render_command = {
	"render",
	"print the objects a path renders to",
	usage,
	render_main,
};
