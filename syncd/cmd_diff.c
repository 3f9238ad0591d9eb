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
	"      --person-manager GLOB  a manager that is a person's tool (repeatable;\n"
	"                             replaces the default kubectl* and\n"
	"                             before-first-apply)\n"
	"      --controller-manager GLOB\n"
	"                             a manager that is a controller even if it\n"
	"                             matches a person glob (repeatable)\n"
	"      --ignore-file FILE     ignore rules, a YAML list of {group, kind,\n"
	"                             namespace, name, jsonPointers, managers}\n"
	"  -h, --help                 this text\n"
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
	if ((error = render_read_file(&data, path, path, 1u << 20, err)) < 0)
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

static int diff_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"live", required_argument, NULL, 'l'},
		{"output", required_argument, NULL, 'o'},
		{"field-manager", required_argument, NULL, 'm'},
		{"policy", required_argument, NULL, 'p'},
		{"namespace", required_argument, NULL, 'n'},
		{"color", required_argument, NULL, 'c'},
		{"person-manager", required_argument, NULL, 'P'},
		{"controller-manager", required_argument, NULL, 'C'},
		{"ignore-file", required_argument, NULL, 'I'},
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
	const char *people[MAX_GLOBS + 1] = {0}, *controllers[MAX_GLOBS + 1] = {0};
	size_t npeople = 0, ncontrollers = 0, nrules = 0;
	struct diff_ignore_rule rules[MAX_RULES];
	const char *ignore_file = NULL;
	json_t *rules_doc = NULL;
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
		case 'P':
		case 'C':
			if ((c == 'P' ? npeople : ncontrollers) == MAX_GLOBS)
				return cli_usage_error(&cli_diff_command,
						       "more than %d globs",
						       MAX_GLOBS);
			if (c == 'P')
				people[npeople++] = optarg;
			else
				controllers[ncontrollers++] = optarg;
			break;
		case 'I':
			ignore_file = optarg;
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
	free_rules(rules, nrules);
	json_decref(rules_doc);
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
