/*
 * syncd diff PATH --live FILE|DIR: compare rendered objects with live
 * objects read from files (as `kubectl get -o json|yaml` writes them).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diff/diff.h"
#include "renderers/render.h"
#include "syncd/cli.h"

static const char usage[] =
	"usage: syncd diff PATH --live FILE|DIR [-o text|json]\n"
	"                  [--field-manager NAME] [--policy respect|override|report]\n"
	"                  [-n NAMESPACE] [--color auto|always|never]\n"
	"\n"
	"Compare the objects PATH renders to with live objects, the way\n"
	"server-side apply sees them: only declared fields count, lists merge\n"
	"by their schema, and every difference names the managers that own it\n"
	"in the live object's managedFields. A field changed with a person's\n"
	"tool (kubectl edit, kubectl scale, ...) is drift; a field another\n"
	"controller owns (an HPA, an operator) is foreign.\n"
	"\n"
	"      --live FILE|DIR        live objects, e.g. from kubectl get -o yaml\n"
	"                             (single objects or Lists); every live\n"
	"                             object nobody desires is an Orphan\n"
	"  -o, --output FORMAT        text (default; like kubectl diff) or json\n"
	"                             (docs/drift-report.md)\n"
	"      --field-manager NAME   the manager syncd applies as (syncd)\n"
	"      --policy POLICY        what to do with foreign fields: respect\n"
	"                             (default), override or report\n"
	"  -n, --namespace NS         namespace for namespaced objects that name\n"
	"                             none (default: default)\n"
	"      --color WHEN           colour the text output (auto: on a terminal)\n"
	"  -h, --help                 this text\n"
	"\n"
	"Exit status: 0 no drift, 1 drift, 2 error.\n";

/* CRDs among both sets give custom kinds their list types and scope. */
static int add_crds(struct diff_schemas *reg, const struct diff_objset *set,
		    struct err *err)
{
	int error = 0;

	for (size_t i = 0; i < set->len; i++) {
		const struct diff_object *o = set->items[i];

		if (strcmp(o->key.group, "apiextensions.k8s.io") ||
		    strcmp(o->key.kind, "CustomResourceDefinition"))
			continue;
		if (diff_schemas_add_crd(reg, o->json, err) < 0)
			error = ERR_INVALID;
	}
	return error;
}

static int diff_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"live", required_argument, NULL, 'l'},
		{"output", required_argument, NULL, 'o'},
		{"field-manager", required_argument, NULL, 'm'},
		{"policy", required_argument, NULL, 'p'},
		{"namespace", required_argument, NULL, 'n'},
		{"color", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct diff_options opts = DIFF_OPTIONS_INIT;
	struct diff_objset desired = DIFF_OBJSET_INIT, live = DIFF_OBJSET_INIT;
	struct diff_schemas *reg = NULL;
	struct diff_report *report = NULL;
	struct err err = ERR_INIT;
	struct buf out = BUF_INIT;
	const char *live_path = NULL, *ns = "default", *color = "auto";
	bool json = false, use_color;
	int c, rc = EXIT_ERROR;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			live_path = optarg;
			break;
		case 'o':
			if (strcmp(optarg, "text") && strcmp(optarg, "json"))
				return cli_usage_error(&cli_diff_command,
						       "unknown output format "
						       "\"%s\" (want text or "
						       "json)",
						       optarg);
			json = !strcmp(optarg, "json");
			break;
		case 'm':
			if (!*optarg)
				return cli_usage_error(&cli_diff_command,
						       "empty field manager");
			opts.field_manager = optarg;
			break;
		case 'p':
			if (diff_policy_parse(optarg, &opts.policy) < 0)
				return cli_usage_error(&cli_diff_command,
						       "unknown policy \"%s\" "
						       "(want respect, override "
						       "or report)",
						       optarg);
			break;
		case 'n':
			ns = optarg;
			break;
		case 'c':
			if (strcmp(optarg, "auto") && strcmp(optarg, "always") &&
			    strcmp(optarg, "never"))
				return cli_usage_error(&cli_diff_command,
						       "--color takes auto, "
						       "always or never");
			color = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return EXIT_OK;
		default:
			return cli_usage_error(&cli_diff_command, "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error(&cli_diff_command,
				       optind == argc ? "missing PATH"
						      : "more than one PATH");
	if (!live_path)
		return cli_usage_error(&cli_diff_command,
				       "--live is required (cluster mode comes "
				       "with the Kubernetes client)");

	/* Read both sides first, then their CRDs, then default namespaces. */
	if (render_dir(&desired, argv[optind], NULL, &err) < 0 ||
	    render_dir(&live, live_path, NULL, &err) < 0)
		goto fail;
	if (diff_objset_default_namespace(&desired, ns, &desired, &err) < 0 ||
	    diff_objset_default_namespace(&live, ns, &desired, &err) < 0)
		goto fail;
	if (!(reg = diff_schemas_new())) {
		err_set(&err, ERR_NOMEM, "out of memory");
		goto fail;
	}
	if (add_crds(reg, &live, &err) < 0 || add_crds(reg, &desired, &err) < 0)
		goto fail;
	if (diff_compare(&report, &desired, &live, reg, &opts, NULL, &err) < 0)
		goto fail;

	if (json) {
		json_t *j = diff_report_to_json(report);

		if (!j || diff_json_dump(j, 2, &out) < 0 ||
		    buf_addch(&out, '\n') < 0) {
			json_decref(j);
			err_set(&err, ERR_NOMEM, "cannot encode the report");
			goto fail;
		}
		json_decref(j);
	} else {
		use_color = !strcmp(color, "always") ||
			    (!strcmp(color, "auto") && isatty(STDOUT_FILENO) &&
			     !getenv("NO_COLOR"));
		if (diff_report_to_text(report, use_color, &out) < 0) {
			err_set(&err, ERR_NOMEM, "cannot render the report");
			goto fail;
		}
	}
	rc = cli_write_stdout(buf_cstr(&out), out.len);
	if (rc == EXIT_OK && diff_report_has_drift(report))
		rc = EXIT_RESULT;
	goto out;
fail:
	cli_print_errors(&err);
	rc = EXIT_ERROR;
out:
	diff_report_free(report);
	diff_schemas_free(reg);
	diff_objset_release(&desired);
	diff_objset_release(&live);
	buf_release(&out);
	err_release(&err);
	return rc;
}

const struct cli_command cli_diff_command = {
	"diff",
	"compare rendered objects with live objects, field by field",
	usage,
	diff_main,
};
