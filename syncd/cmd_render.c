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
#include "syncd/cli_app.h"

#include "util/banned.h" /* last */

static const char usage[] =
	"usage: syncd render PATH [-o yaml|json] [--renderer NAME] [options]\n"
	"       syncd render --repo URL [--revision REV] [--path SUBDIR]\n"
	"                    [-o yaml|json] [options]\n"
	"\n"
	"Render the app at PATH (a directory or one file), or at --path in a\n"
	"Git repository, and print the objects, in path order, as a YAML\n"
	"stream (documents separated by ---) or, with -o json, as one v1 List\n"
	"as kubectl prints it. The renderer is detected (kustomization file:\n"
	"kustomize; Chart.yaml: helm; *.jsonnet without YAML: jsonnet; else\n"
	"the directory renderer) unless --renderer names one.\n"
	"\n"
	"  -o, --output FORMAT        yaml (default) or json\n"
	"  -h, --help                 this text\n";

static const char usage_tail[] =
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
	static const struct option own[] = {
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_app app;
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	const struct option *longopts;
	const char *path;
	bool json = false;
	int c, r, rc = EXIT_ERROR;

	cli_app_init(&app);
	longopts = cli_app_longopts(&app, own);
	if (!longopts) {
		fprintf(stderr, "error: out of memory\n");
		return EXIT_ERROR;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!strcmp(optarg, "json")) {
				json = true;
			} else if (!strcmp(optarg, "yaml")) {
				json = false;
			} else {
				rc = cli_usage_error(&cli_render_command,
						     "unknown output format "
						     "\"%s\" (want yaml or "
						     "json)",
						     optarg);
				goto out;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			cli_app_usage(stdout);
			fputs(usage_tail, stdout);
			rc = EXIT_OK;
			goto out;
		default:
			r = cli_app_option(&app, c, optarg, &err);
			if (r < 0) {
				rc = cli_usage_error(&cli_render_command, "%s",
						     err_first(&err));
				goto out;
			}
			if (r == 0) {
				rc = cli_usage_error(&cli_render_command,
						     "bad option");
				goto out;
			}
		}
	}
	if (cli_app_path(&app, argc, argv, &path, &err) < 0) {
		rc = cli_usage_error(&cli_render_command, "%s",
				     err_first(&err));
		goto out;
	}
	if (cli_app_load(&app, path, &set, NULL, &err) < 0) {
		cli_print_errors(&err);
		rc = EXIT_ERROR;
	} else {
		rc = print_objects(&set, json);
	}
out:
	cli_app_release(&app);
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
