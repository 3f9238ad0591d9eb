/*
 * syncd diff PATH: compare rendered objects with the live objects of a
 * cluster (app/live.c reads them by inventory label), or with live
 * objects read from files (--live, as `kubectl get -o json|yaml` writes
 * them).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diff/diff.h"
#include "renderers/render.h"
#include "app/app.h"
#include "syncd/cli.h"
#include "syncd/cli_app.h"
#include "util/file.h"

#include "util/banned.h" /* last */

static const char usage[] =
	"usage: syncd diff PATH [--kubeconfig FILE] [--context NAME] [-n NS]\n"
	"                  [--app NAME] [--server-side | --verify dryRun|off]\n"
	"                  [--create-namespace]\n"
	"                  [-o text|json]\n"
	"                  [--field-manager NAME] [--policy respect|override|report]\n"
	"                  [--color auto|always|never]\n"
	"       syncd diff PATH --live FILE|DIR [options]\n"
	"       (PATH, or --repo URL [--revision REV] [--path SUBDIR])\n"
	"\n"
	"Compare the objects PATH renders to with live objects, the way\n"
	"server-side apply sees them: only declared fields count, lists merge\n"
	"by their schema, and every difference names the managers that own it\n"
	"in the live object's managedFields. A field changed with a person's\n"
	"tool (kubectl edit, kubectl scale, ...) is drift; a field another\n"
	"controller owns (an HPA, an operator) is foreign.\n"
	"\n"
	"Without --live the live objects come from the cluster: one LIST per\n"
	"resource type and namespace, filtered by the app's inventory label\n"
	"(applyset.kubernetes.io/part-of), and one GET per desired object the\n"
	"LISTs did not return. Labelled objects nobody desires are Orphans.\n"
	"\n"
	"      --kubeconfig FILE      kubeconfig (default: $KUBECONFIG, then\n"
	"                             ~/.kube/config)\n"
	"      --context NAME         kubeconfig context (default: current)\n"
	"      --app NAME             the app's inventory name (default: the\n"
	"                             basename of PATH)\n"
	"      --server-side          dry-run apply every object and compare\n"
	"                             what the server would store (exact\n"
	"                             under admission webhooks and\n"
	"                             defaulting; one request per object)\n"
	"      --create-namespace     the namespace of -n is an object of the\n"
	"                             app (as sync --create-namespace makes\n"
	"                             it)\n"
	"      --verify MODE          dryRun (default): confirm each object\n"
	"                             found Drifted with one dry-run apply;\n"
	"                             in sync if the server would store it\n"
	"                             as it is (objects in sync cost no\n"
	"                             request); off: the local comparison\n"
	"                             alone\n"
	"      --live FILE|DIR        live objects from files instead of a\n"
	"                             cluster, e.g. from kubectl get -o yaml\n"
	"                             (single objects or Lists); every live\n"
	"                             object nobody desires is an Orphan\n"
	"  -o, --output FORMAT        text (default; like kubectl diff) or json\n"
	"                             (docs/drift-report.md)\n"
	"      --field-manager NAME   the manager syncd applies as (syncd)\n"
	"      --policy POLICY        what to do with foreign fields: respect\n"
	"                             (default), override or report\n"
	"  -n, --namespace NS         namespace for namespaced objects that\n"
	"                             name none, and of the app's inventory\n"
	"                             (default: the context's namespace;\n"
	"                             with --live: default)\n"
	"      --color WHEN           colour the text output (auto: on a terminal)\n"
	"      --person-manager GLOB  a manager that is a person's tool (repeatable;\n"
	"                             replaces the default kubectl* and\n"
	"                             before-first-apply)\n"
	"      --controller-manager GLOB\n"
	"                             a manager that is a controller even if it\n"
	"                             matches a person glob (repeatable)\n"
	"      --ignore-file FILE     ignore rules, a YAML list of {group, kind,\n"
	"                             namespace, name, jsonPointers, managers}\n"
	"      --qps N, --burst N     client-side rate limit: requests per\n"
	"                             second and burst (default 50, 100)\n"
	"  -h, --help                 this text\n";

static const char usage_tail[] =
	"\n"
	"Exit status: 0 no drift, 1 drift, 2 error.\n";

#define MAX_GLOBS 32
#define MAX_RULES 64

static const char *const rule_keys[] = {
	"group", "kind", "namespace", "name", "jsonPointers", "managers", NULL,
};

/* A list of strings of an ignore rule, NULL-terminated (caller frees). */
static int rule_strings(const char ***out, const json_t *rule,
			const char *field, const char *where, struct err *err)
{
	const json_t *arr = json_object_get(rule, field), *v;
	const char **list;
	size_t i;

	*out = NULL;
	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return err_set(err, ERR_INVALID, "%s: %s must be a list of strings",
			       where, field);
	if (!(list = calloc(json_array_size(arr) + 1, sizeof(*list))))
		return err_set(err, ERR_NOMEM, "out of memory");
	json_array_foreach (arr, i, v) {
		if (!json_is_string(v)) {
			free(list);
			return err_set(err, ERR_INVALID,
				       "%s: %s[%zu] must be a string", where,
				       field, i);
		}
		if (!strcmp(field, "jsonPointers") && *json_string_value(v) &&
		    *json_string_value(v) != '/') {
			free(list);
			return err_set(err, ERR_INVALID,
				       "%s: %s[%zu]: \"%s\" is not a JSON pointer "
				       "(it must start with /)",
				       where, field, i, json_string_value(v));
		}
		list[i] = json_string_value(v);
	}
	*out = list;
	return 0;
}

/*
 * Read ignore rules from a YAML or JSON file holding a list of rules. The
 * rules point into *doc, which the caller keeps until they are used.
 */
static int load_ignore_rules(struct diff_ignore_rule *rules, size_t *nrules,
			     json_t **doc, const char *path, struct err *err)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	struct buf data = BUF_INIT, where = BUF_INIT;
	const json_t *rule;
	size_t i;
	int error;

	*doc = NULL;
	if ((error = file_read(&data, path, path, 1u << 20, err)) < 0)
		return error;
	if ((error = render_parse(&docs, buf_cstr(&data), data.len, path,
				  err)) < 0)
		goto out;
	if (docs.len != 1 || !json_is_array(docs.items[0].value)) {
		error = err_set(err, ERR_INVALID,
				"%s: want one YAML document, a list of rules",
				path);
		goto out;
	}
	*doc = json_incref(docs.items[0].value);
	if (json_array_size(*doc) > MAX_RULES) {
		error = err_set(err, ERR_LIMIT, "%s: more than %d rules", path,
				MAX_RULES);
		goto out;
	}
	json_array_foreach (*doc, i, rule) {
		struct diff_ignore_rule *r = &rules[*nrules];
		const char *k;
		json_t *v;

		buf_reset(&where);
		buf_addf(&where, "%s:%u: rule %zu", path, docs.items[0].line,
			 i + 1);
		if (!json_is_object(rule)) {
			error = err_set(err, ERR_INVALID, "%s is not a mapping",
					buf_cstr(&where));
			goto out;
		}
		json_object_foreach ((json_t *)rule, k, v) {
			bool known = false;

			for (const char *const *rk = rule_keys; *rk; rk++)
				known |= !strcmp(*rk, k);
			if (!known) {
				error = err_set(err, ERR_INVALID,
						"%s: unknown key \"%s\"",
						buf_cstr(&where), k);
				goto out;
			}
			if (strcmp(k, "jsonPointers") && strcmp(k, "managers") &&
			    !json_is_string(v)) {
				error = err_set(err, ERR_INVALID,
						"%s: %s must be a string",
						buf_cstr(&where), k);
				goto out;
			}
		}
		memset(r, 0, sizeof(*r));
		(*nrules)++; /* from here on free_rules() owns its lists */
		r->group = json_string_value(json_object_get(rule, "group"));
		r->kind = json_string_value(json_object_get(rule, "kind"));
		r->ns = json_string_value(json_object_get(rule, "namespace"));
		r->name = json_string_value(json_object_get(rule, "name"));
		if ((error = rule_strings((const char ***)&r->json_pointers,
					  rule, "jsonPointers",
					  buf_cstr(&where), err)) < 0 ||
		    (error = rule_strings((const char ***)&r->managers, rule,
					  "managers", buf_cstr(&where), err)) < 0)
			goto out;
		if (!r->json_pointers && !r->managers) {
			error = err_set(err, ERR_INVALID,
					"%s: needs jsonPointers or managers",
					buf_cstr(&where));
			goto out;
		}
	}
out:
	render_docs_release(&docs);
	buf_release(&data);
	buf_release(&where);
	return error;
}

static void free_rules(struct diff_ignore_rule *rules, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((void *)rules[i].json_pointers);
		free((void *)rules[i].managers);
	}
}

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

/* The report's objects one at a time, with their health. */
struct report_items {
	const struct diff_report *report;
	const struct app_health *health;
	size_t cursor;
};

static json_t *report_item(size_t i, void *ctx)
{
	struct report_items *r = ctx;
	json_t *o = diff_report_object_json(r->report, i);

	if (o && r->health)
		app_health_annotate_object(o, i, r->health, &r->cursor);
	return o;
}

/*
 * The report on stdout, with the app's health when there is one;
 * EXIT_RESULT when it shows drift (health does not change the status).
 */
static int print_report(const struct diff_report *report,
			const struct app_health *health, bool json,
			const char *color, struct err *err)
{
	struct buf out = BUF_INIT;
	bool use_color;
	int rc = EXIT_ERROR;

	if (json) {
		/* Written an object at a time: never the whole tree. */
		struct report_items items = {report, health, 0};
		json_t *j = diff_report_head_json(report);

		if (j && health)
			json_object_set_new(j, "health",
					    app_health_json(health, false));
		if (!j ||
		    diff_json_dump_items(j, 2, json_object_get(j, "objects"),
					 report->len, report_item, &items,
					 &out) < 0 ||
		    buf_addch(&out, '\n') < 0) {
			json_decref(j);
			err_set(err, ERR_NOMEM, "cannot encode the report");
			goto out;
		}
		json_decref(j);
	} else {
		use_color = !strcmp(color, "always") ||
			    (!strcmp(color, "auto") && isatty(STDOUT_FILENO) &&
			     !getenv("NO_COLOR"));
		if (diff_report_to_text(report, use_color, &out) < 0) {
			err_set(err, ERR_NOMEM, "cannot render the report");
			goto out;
		}
		if (health)
			buf_addf(&out, "health: %s: %s\n",
				 health_state_name(health->state),
				 health->message ? health->message : "");
	}
	rc = cli_write_stdout(buf_cstr(&out), out.len);
	if (rc == EXIT_OK && diff_report_has_drift(report))
		rc = EXIT_RESULT;
out:
	buf_release(&out);
	return rc;
}

/* Desired against the live files of --live. */
static int diff_files(struct diff_objset *desired, const char *revision,
		      const char *live_path, const char *ns,
		      const struct diff_options *opts, bool json,
		      const char *color, struct err *err)
{
	struct diff_objset live = DIFF_OBJSET_INIT;
	struct diff_schemas *reg = NULL;
	struct diff_report *report = NULL;
	int rc = EXIT_ERROR;

	/* Read both sides first, then their CRDs, then default namespaces. */
	if (render_dir(&live, live_path, NULL, err) < 0)
		goto out;
	if (diff_objset_default_namespace(desired, ns, desired, err) < 0 ||
	    diff_objset_default_namespace(&live, ns, desired, err) < 0)
		goto out;
	if (!(reg = diff_schemas_new())) {
		err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if (add_crds(reg, &live, err) < 0 || add_crds(reg, desired, err) < 0)
		goto out;
	if (diff_compare(&report, desired, &live, reg, opts, revision,
			 err) < 0)
		goto out;
	rc = print_report(report, NULL, json, color, err);
out:
	diff_report_free(report);
	diff_schemas_free(reg);
	diff_objset_release(&live);
	return rc;
}

struct cluster_args {
	const char *kubeconfig;
	const char *context;
	const char *ns;	  /* NULL: the context's */
	const char *name; /* app name */
	bool server_side;
	enum app_verify verify; /* confirm local drift (not with server_side) */
	bool verify_set;
	struct kube_client_options ko;
	const struct app_spec *spec;
};

/* Desired against the cluster. */
static int diff_cluster(struct diff_objset *desired, const char *revision,
			const struct cluster_args *a,
			const struct diff_options *opts, bool json,
			const char *color, struct err *err)
{
	struct app_conn conn;
	struct app app;
	struct diff_objset dry = DIFF_OBJSET_INIT;
	struct diff_schemas *reg = NULL;
	struct diff_report *report = NULL;
	struct app_health health = {0};
	int error, rc = EXIT_ERROR;
	bool partial;

	memset(&app, 0, sizeof(app));
	if (app_conn_open(&conn, a->kubeconfig, a->context, &a->ko, err) < 0 ||
	    app_init(&app, conn.client, conn.disc, a->name,
		     a->ns ? a->ns : conn.cfg.namespace,
		     opts->field_manager ? opts->field_manager : "syncd",
		     err) < 0)
		goto out;
	app_use_spec(&app, a->spec);
	app.keep_live = a->server_side; /* compared again after dry runs */
	error = app_compare(&app, desired, opts, &reg, &report, revision, err);
	partial = error == ERR_NOTFOUND && report;
	if (error < 0 && !partial)
		goto out;
	if (a->server_side) {
		struct diff_report *exact = NULL;

		if (app_dry_run(&app, report, desired, &dry, err) < 0)
			partial = true;
		if (diff_compare(&exact, &dry, &app.live, reg, opts, revision,
				 err) < 0) {
			diff_report_free(exact);
			goto out;
		}
		diff_report_free(report);
		report = exact;
		app_report_options(report, desired);
	} else if (a->verify == APP_VERIFY_DRY_RUN && report &&
		   app_verify(&app, report, desired, reg, opts, NULL, NULL,
			      err) < 0) {
		/* Unconfirmed drift is still drift: reported as found. */
		partial = true;
	}
	if (app_health_of(&app, report, &health, err) < 0)
		goto out;
	rc = print_report(report, &health, json, color, err);
	if (partial)
		rc = EXIT_ERROR; /* the report is not the whole story */
out:
	if (err_count(err))
		cli_print_errors(err);
	app_health_release(&health);
	diff_report_free(report);
	diff_schemas_free(reg);
	diff_objset_release(&dry);
	app_release(&app);
	app_conn_close(&conn);
	return rc;
}

static int diff_main(int argc, char **argv)
{
	static const struct option own[] = {
		{"live", required_argument, NULL, 'l'},
		{"output", required_argument, NULL, 'o'},
		{"field-manager", required_argument, NULL, 'm'},
		{"policy", required_argument, NULL, 'p'},
		{"namespace", required_argument, NULL, 'n'},
		{"color", required_argument, NULL, 'c'},
		{"person-manager", required_argument, NULL, 'P'},
		{"controller-manager", required_argument, NULL, 'C'},
		{"ignore-file", required_argument, NULL, 'I'},
		{"kubeconfig", required_argument, NULL, 'K'},
		{"context", required_argument, NULL, 'X'},
		{"app", required_argument, NULL, 'A'},
		{"server-side", no_argument, NULL, 'S'},
		{"create-namespace", no_argument, NULL, 'N'},
		{"verify", required_argument, NULL, 'V'},
		{"qps", required_argument, NULL, 'Q'},
		{"burst", required_argument, NULL, 'B'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_app capp;
	struct cluster_args ca = {0};
	struct diff_options opts = DIFF_OPTIONS_INIT;
	struct diff_objset desired = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	const struct option *longopts;
	const char *live_path = NULL, *ns = NULL, *color = "auto";
	const char *path, *revision = NULL;
	const char *people[MAX_GLOBS + 1] = {0}, *controllers[MAX_GLOBS + 1] = {0};
	size_t npeople = 0, ncontrollers = 0, nrules = 0;
	struct diff_ignore_rule rules[MAX_RULES];
	const char *ignore_file = NULL;
	char *derived = NULL;
	json_t *rules_doc = NULL;
	bool json = false;
	int c, r, rc = EXIT_ERROR;

	cli_app_init(&capp);
	capp.decrypt = true;
	longopts = cli_app_longopts(&capp, own);
	if (!longopts) {
		fprintf(stderr, "error: out of memory\n");
		return EXIT_ERROR;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			live_path = optarg;
			break;
		case 'o':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				rc = cli_usage_error(&cli_diff_command,
						     "unknown output format "
						     "\"%s\" (want text or "
						     "json)",
						     optarg);
				goto out;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'm':
			if (!*optarg) {
				rc = cli_usage_error(&cli_diff_command,
						     "empty field manager");
				goto out;
			}
			opts.field_manager = optarg;
			break;
		case 'p':
			if (diff_policy_parse(optarg, &opts.policy) < 0) {
				rc = cli_usage_error(&cli_diff_command,
						     "unknown policy \"%s\" "
						     "(want respect, override "
						     "or report)",
						     optarg);
				goto out;
			}
			break;
		case 'n':
			ns = optarg;
			break;
		case 'c':
			if (strcmp(optarg, "auto") &&
			    strcmp(optarg, "always") &&
			    strcmp(optarg, "never")) {
				rc = cli_usage_error(&cli_diff_command,
						     "--color takes auto, "
						     "always or never");
				goto out;
			}
			color = optarg;
			break;
		case 'P':
		case 'C':
			if ((c == 'P' ? npeople : ncontrollers) == MAX_GLOBS) {
				rc = cli_usage_error(&cli_diff_command,
						     "more than %d globs",
						     MAX_GLOBS);
				goto out;
			}
			if (c == 'P')
				people[npeople++] = optarg;
			else
				controllers[ncontrollers++] = optarg;
			break;
		case 'I':
			ignore_file = optarg;
			break;
		case 'K':
			ca.kubeconfig = optarg;
			break;
		case 'X':
			ca.context = optarg;
			break;
		case 'A':
			ca.name = optarg;
			break;
		case 'S':
			ca.server_side = true;
			break;
		case 'N':
			capp.spec.create_namespace = true;
			break;
		case 'V':
			if (app_verify_parse(optarg, &ca.verify, &err) < 0) {
				rc = cli_usage_error(&cli_diff_command, "%s",
						     err_first(&err));
				goto out;
			}
			ca.verify_set = true;
			break;
		case 'Q':
		case 'B':
			if (cli_client_option(&ca.ko,
					      c == 'Q' ? "qps" : "burst",
					      optarg, &err) < 0) {
				rc = cli_usage_error(&cli_diff_command, "%s",
						     err_first(&err));
				goto out;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			cli_app_usage(stdout);
			fputs(cli_app_decrypt_usage, stdout);
			fputs(usage_tail, stdout);
			rc = EXIT_OK;
			goto out;
		default:
			r = cli_app_option(&capp, c, optarg, &err);
			if (r <= 0) {
				rc = cli_usage_error(&cli_diff_command, "%s",
						     r < 0 ? err_first(&err)
							   : "bad option");
				goto out;
			}
		}
	}
	if (cli_app_path(&capp, argc, argv, &path, &err) < 0) {
		rc = cli_usage_error(&cli_diff_command, "%s", err_first(&err));
		goto out;
	}
	if (live_path && (ca.kubeconfig || ca.context || ca.name ||
			  ca.server_side || ca.verify_set || ca.ko.qps ||
			  ca.ko.burst)) {
		rc = cli_usage_error(&cli_diff_command,
				     "--live compares with files: it takes no "
				     "cluster option (--kubeconfig, --context, "
				     "--app, --server-side, --verify, --qps, "
				     "--burst)");
		goto out;
	}
	if (!live_path && !ca.name) {
		derived = cli_app_default_name(&capp, path);
		if (!derived) {
			rc = cli_usage_error(&cli_diff_command,
					     "cannot derive an app name from "
					     "the path: give --app NAME");
			goto out;
		}
		ca.name = derived;
	}
	ca.ns = ns;
	if (app_spec_set(&capp.spec, &capp.spec.name, ca.name) < 0 ||
	    app_spec_set(&capp.spec, &capp.spec.namespace, ns) < 0) {
		fprintf(stderr, "error: out of memory\n");
		goto out;
	}

	/* The JSON report has no YAML diff: its two sides are not made. */
	opts.no_views = json;
	if (npeople)
		opts.person_managers = people;
	if (ncontrollers)
		opts.controller_managers = controllers;
	if (ignore_file) {
		if (load_ignore_rules(rules, &nrules, &rules_doc, ignore_file,
				      &err) < 0)
			goto fail;
		opts.ignore = rules;
		opts.nignore = nrules;
	}
	if (cli_app_load(&capp, path, &desired, &revision, &err) < 0)
		goto fail;
	if (live_path) {
		rc = diff_files(&desired, revision, live_path,
				ns ? ns : "default", &opts, json, color, &err);
		if (rc == EXIT_ERROR)
			goto fail;
		goto out;
	}
	/* diff_cluster() prints its own errors (after a partial report). */
	ca.spec = &capp.spec;
	rc = diff_cluster(&desired, revision, &ca, &opts, json, color, &err);
	goto out;
fail:
	cli_print_errors(&err);
	rc = EXIT_ERROR;
out:
	free_rules(rules, nrules);
	json_decref(rules_doc);
	diff_objset_release(&desired);
	cli_app_release(&capp);
	free(derived);
	err_release(&err);
	return rc;
}

const struct cli_command cli_diff_command = {
	"diff",
	"compare rendered objects with live objects, field by field",
	usage,
	diff_main,
};
