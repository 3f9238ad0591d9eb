/*
 * syncd sync PATH: one reconcile pass of an app against a cluster
 * (app/sync.c): compare, apply what differs in order, prune orphans.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"
#include "app/app.h"
#include "util/clock.h"
#include "syncd/cli.h"
#include "syncd/cli_app.h"

#include "util/banned.h" /* last */

static const char usage[] =
	"usage: syncd sync PATH [--kubeconfig FILE] [--context NAME]\n"
	"                  [-n NS] [--app NAME] [--field-manager NAME]\n"
	"                  [--dry-run] [--force-conflicts] [--prune]\n"
	"                  [--verify dryRun|off] [--wait [--timeout D]]\n"
	"                  [--prune-allow-kind KIND[.GROUP]]...\n"
	"                  [--prune-budget N] [--allow-empty]\n"
	"                  [--create-namespace] [--on-immutable report|replace]\n"
	"                  [--replace-allow-kind KIND[.GROUP]]...\n"
	"       (PATH, or --repo URL [--revision REV] [--path SUBDIR])\n"
	"\n"
	"Make the cluster match what PATH renders to, in one pass:\n"
	"server-side apply (field manager syncd) of every object that\n"
	"differs, in order (the app's inventory Secret, CRDs - then wait\n"
	"until they are established - Namespaces, other cluster-scoped\n"
	"objects, namespaced objects; objects annotated syncd.io/wave: \"N\"\n"
	"go wave by wave, each once the one before is healthy); objects\n"
	"already in sync are not written. Every applied object carries\n"
	"the label applyset.kubernetes.io/part-of=<id>, and the inventory\n"
	"Secret\n"
	"(named after the app) lists their kinds, as kubectl's ApplySets\n"
	"do. Fields a person changed (kubectl edit, scale, ...) are taken\n"
	"back; fields another controller owns (an HPA's replicas) are left\n"
	"alone unless --force-conflicts.\n"
	"\n"
	"      --kubeconfig FILE      kubeconfig (default: $KUBECONFIG,\n"
	"                             then ~/.kube/config)\n"
	"      --context NAME         kubeconfig context (default: current)\n"
	"  -n, --namespace NS         namespace for namespaced objects that\n"
	"                             name none, and of the inventory\n"
	"                             Secret (default: the context's)\n"
	"      --app NAME             the app's inventory name (default:\n"
	"                             the basename of PATH)\n"
	"      --field-manager NAME   the manager to apply as (syncd)\n"
	"      --dry-run              dry-run every apply (the server\n"
	"                             validates and admits), delete\n"
	"                             nothing, print what would change\n"
	"      --force-conflicts      take fields other controllers own\n"
	"                             back (policy override; default:\n"
	"                             respect)\n"
	"      --verify MODE          dryRun (default): confirm each object\n"
	"                             the local comparison finds Drifted\n"
	"                             with one dry-run apply, and leave it\n"
	"                             alone if the server would store it as\n"
	"                             it is; off: trust the local comparison\n"
	"      --wait                 after the sync, wait until every\n"
	"                             object is healthy (Deployments\n"
	"                             available, Jobs complete, CRs\n"
	"                             Ready, ...: docs/health.md); exit 1\n"
	"                             at once when one is Degraded\n"
	"      --timeout D            how long --wait waits, and how long\n"
	"                             each wave (annotation syncd.io/wave)\n"
	"                             waits for the one before it to be\n"
	"                             healthy (default 5m; Go durations:\n"
	"                             90s, 2m30s)\n"
	"      --prune                delete labelled objects the app no\n"
	"                             longer has (never Namespaces,\n"
	"                             PersistentVolumeClaims or CRDs\n"
	"                             unless allowed)\n"
	"      --prune-allow-kind K   allow pruning kind K: Namespace,\n"
	"                             PersistentVolumeClaim or\n"
	"                             CustomResourceDefinition.\n"
	"                             apiextensions.k8s.io (repeatable)\n"
	"      --prune-budget N       prune nothing when more than N\n"
	"                             objects would go (default 50)\n"
	"      --allow-empty          prune even when PATH renders no\n"
	"                             objects at all (default: a render of\n"
	"                             nothing prunes nothing)\n"
	"      --create-namespace     create the namespace of -n (an object\n"
	"                             of the app, never pruned unless\n"
	"                             allowed)\n"
	"      --on-immutable MODE    report (default): an apply the server\n"
	"                             refuses for an immutable field fails\n"
	"                             with its message; replace: delete the\n"
	"                             object and create it again (objects\n"
	"                             may also say syncd.io/replace)\n"
	"      --replace-allow-kind K allow replacing kind K (Namespace,\n"
	"                             PersistentVolumeClaim, CRDs: never\n"
	"                             otherwise; repeatable)\n"
	"      --qps N, --burst N     client-side rate limit: requests per\n"
	"                             second and burst (default 50, 100)\n"
	"  -h, --help                 this text\n";

static const char usage_tail[] =
	"\n"
	"Exit status: 0 converged (with --wait: and healthy), 1 some objects\n"
	"failed (listed with the API server's message; with --wait: an object\n"
	"is Degraded, or the timeout passed, naming the objects and why), 2\n"
	"could not run.\n";

/* --wait: polls start at WAIT_FIRST_MS and double up to WAIT_MAX_MS. */
#define WAIT_FIRST_MS 500
#define WAIT_MAX_MS 5000
#define WAIT_DEFAULT_MS (5 * 60 * 1000)

#define MAX_ALLOW 16

/* One more KIND of a repeatable --*-allow-kind flag: EXIT_OK, or the
 * exit status of the error already printed. */
static int add_kind(struct strvec *kinds, const char *flag, const char *kind)
{
	if (kinds->len == MAX_ALLOW)
		return cli_usage_error(&cli_sync_command, "more than %d %s",
				       MAX_ALLOW, flag);
	if (strvec_push(kinds, kind) < 0) {
		fprintf(stderr, "error: out of memory\n");
		return EXIT_ERROR;
	}
	return EXIT_OK;
}

static int print_result(const struct app_sync_result *res, bool dry_run)
{
	struct buf out = BUF_INIT;
	int rc;

	for (size_t i = 0; i < res->nentries; i++) {
		const struct app_sync_entry *e = &res->entries[i];

		if (e->object)
			buf_addf(&out, "%s: %s\n", e->object, e->result);
		else
			buf_addf(&out, "%s\n", e->result);
	}
	buf_addf(&out,
		 "%s%zu applied, %zu unchanged, %zu pruned, %zu orphans kept, "
		 "%zu failed\n",
		 dry_run ? "dry run: " : "", res->applied, res->unchanged,
		 res->pruned, res->kept, res->failed);
	if (err_count(&res->failures)) {
		const char *p = err_msg(&res->failures);

		buf_adds(&out, "failures:\n");
		while (*p) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);

			buf_adds(&out, "  ");
			buf_add(&out, p, n);
			buf_addch(&out, '\n');
			p += n + (nl ? 1 : 0);
		}
	}
	rc = cli_write_stdout(buf_cstr(&out), out.len);
	buf_release(&out);
	return rc;
}

/*
 * sync --wait: read the app's live objects again (its LISTs) until every
 * object is Healthy (EXIT_OK), one is Degraded (EXIT_RESULT at once) or
 * `timeout_ms` passed (EXIT_RESULT, naming what is not healthy yet).
 * Each change of the app's health is printed as it is seen.
 */
static int wait_healthy(struct app *app, struct diff_objset *desired,
			const struct diff_report *report, uint64_t timeout_ms,
			struct err *err)
{
	uint64_t start = clk_mono_ms(), elapsed;
	long pause = WAIT_FIRST_MS;
	char *seen = NULL;
	int rc = EXIT_ERROR;

	for (;;) {
		struct app_health h;

		if (app_read_live(app, desired, err) < 0 ||
		    app_health_of(app, report, &h, err) < 0)
			break;
		elapsed = clk_mono_ms() - start;
		if (h.state == HEALTH_HEALTHY || h.state == HEALTH_DEGRADED) {
			printf("health: %s after %.1fs: %s\n",
			       health_state_name(h.state),
			       (double)elapsed / 1000.0,
			       h.state == HEALTH_HEALTHY
				       ? "every object is healthy"
				       : h.message);
			rc = h.state == HEALTH_HEALTHY ? EXIT_OK : EXIT_RESULT;
			app_health_release(&h);
			break;
		}
		if (!seen || strcmp(seen, h.message)) {
			printf("waiting: %s: %s\n", health_state_name(h.state),
			       h.message);
			fflush(stdout);
			free(seen);
			seen = strdup(h.message);
		}
		if (elapsed >= timeout_ms) {
			printf("health: timed out after %.1fs, still %s: %s\n",
			       (double)elapsed / 1000.0,
			       health_state_name(h.state), h.message);
			rc = EXIT_RESULT;
			app_health_release(&h);
			break;
		}
		app_health_release(&h);
		if ((uint64_t)pause > timeout_ms - elapsed)
			pause = (long)(timeout_ms - elapsed);
		clk_sleep_ms(pause);
		pause = pause * 2 > WAIT_MAX_MS ? WAIT_MAX_MS : pause * 2;
	}
	free(seen);
	fflush(stdout);
	return rc;
}

static int sync_main(int argc, char **argv)
{
	static const struct option own[] = {
		{"kubeconfig", required_argument, NULL, 'K'},
		{"context", required_argument, NULL, 'X'},
		{"namespace", required_argument, NULL, 'n'},
		{"app", required_argument, NULL, 'A'},
		{"field-manager", required_argument, NULL, 'm'},
		{"dry-run", no_argument, NULL, 'D'},
		{"force-conflicts", no_argument, NULL, 'F'},
		{"verify", required_argument, NULL, 'V'},
		{"wait", no_argument, NULL, 'W'},
		{"timeout", required_argument, NULL, 'T'},
		{"prune", no_argument, NULL, 'R'},
		{"prune-allow-kind", required_argument, NULL, 'k'},
		{"prune-budget", required_argument, NULL, 'b'},
		{"allow-empty", no_argument, NULL, 'E'},
		{"create-namespace", no_argument, NULL, 'C'},
		{"on-immutable", required_argument, NULL, 'I'},
		{"replace-allow-kind", required_argument, NULL, 'r'},
		{"qps", required_argument, NULL, 'Q'},
		{"burst", required_argument, NULL, 'B'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_app capp;
	struct diff_options dopts = DIFF_OPTIONS_INIT;
	struct app_sync_options so = {0};
	struct kube_client_options ko = {0};
	struct app_sync_result res = APP_SYNC_RESULT_INIT;
	struct diff_objset desired = DIFF_OBJSET_INIT;
	struct diff_schemas *reg = NULL;
	struct diff_report *report = NULL;
	struct err err = ERR_INIT;
	struct app_conn conn;
	struct app app;
	const struct option *longopts;
	const char *kubeconfig = NULL, *context = NULL, *ns = NULL;
	const char *name = NULL, *path, *revision = NULL;
	unsigned long budget;
	uint64_t timeout_ms = WAIT_DEFAULT_MS;
	bool wait = false, dry_run = false;
	char *derived = NULL, *end;
	int c, r, error, rc = EXIT_ERROR;

	memset(&conn, 0, sizeof(conn));
	memset(&app, 0, sizeof(app));
	cli_app_init(&capp);
	capp.decrypt = true;
	longopts = cli_app_longopts(&capp, own);
	if (!longopts) {
		fprintf(stderr, "error: out of memory\n");
		return EXIT_ERROR;
	}
	dopts.field_manager = "syncd";
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'K':
			kubeconfig = optarg;
			break;
		case 'X':
			context = optarg;
			break;
		case 'n':
			ns = optarg;
			break;
		case 'A':
			name = optarg;
			break;
		case 'm':
			if (!*optarg) {
				rc = cli_usage_error(&cli_sync_command,
						     "empty field manager");
				goto out;
			}
			dopts.field_manager = optarg;
			break;
		case 'D':
			dry_run = true;
			break;
		case 'E':
			capp.spec.allow_empty = true;
			break;
		case 'C':
			capp.spec.create_namespace = true;
			break;
		case 'I':
			if (strcmp(optarg, "report") && strcmp(optarg, "replace")) {
				rc = cli_usage_error(&cli_sync_command,
						     "--on-immutable wants report "
						     "or replace, not \"%s\"",
						     optarg);
				goto out;
			}
			capp.spec.on_immutable_replace =
				!strcmp(optarg, "replace");
			break;
		case 'r':
			if ((rc = add_kind(&capp.spec.replace_allow_kinds,
					   "--replace-allow-kind", optarg)) !=
			    EXIT_OK)
				goto out;
			rc = EXIT_ERROR;
			break;
		case 'F':
			capp.spec.foreign_fields = DIFF_POLICY_OVERRIDE;
			break;
		case 'V':
			if (app_verify_parse(optarg, &capp.spec.verify, &err) <
			    0) {
				rc = cli_usage_error(&cli_sync_command, "%s",
						     err_first(&err));
				goto out;
			}
			break;
		case 'W':
			wait = true;
			break;
		case 'T':
			if (clk_parse_duration(optarg, CLK_DURATION_BARE_SECONDS,
					       &timeout_ms) < 0 ||
			    !timeout_ms) {
				rc = cli_usage_error(&cli_sync_command,
						     "--timeout wants a duration "
						     "such as 90s or 5m, not "
						     "\"%s\"",
						     optarg);
				goto out;
			}
			break;
		case 'R':
			capp.spec.prune = true;
			break;
		case 'k':
			if ((rc = add_kind(&capp.spec.prune_allow_kinds,
					   "--prune-allow-kind", optarg)) !=
			    EXIT_OK)
				goto out;
			rc = EXIT_ERROR;
			break;
		case 'b':
			budget = strtoul(optarg, &end, 10);
			if (!*optarg || *end || *optarg == '-' ||
			    budget > UINT_MAX) {
				rc = cli_usage_error(&cli_sync_command,
						     "--prune-budget wants a "
						     "number, not \"%s\"",
						     optarg);
				goto out;
			}
			capp.spec.prune_budget = (unsigned)budget;
			break;
		case 'Q':
		case 'B':
			if (cli_client_option(&ko, c == 'Q' ? "qps" : "burst",
					      optarg, &err) < 0) {
				rc = cli_usage_error(&cli_sync_command, "%s",
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
				rc = cli_usage_error(&cli_sync_command, "%s",
						     r < 0 ? err_first(&err)
							   : "bad option");
				goto out;
			}
		}
	}
	if (cli_app_path(&capp, argc, argv, &path, &err) < 0) {
		rc = cli_usage_error(&cli_sync_command, "%s", err_first(&err));
		goto out;
	}

	if (wait && dry_run) {
		rc = cli_usage_error(&cli_sync_command,
				     "--wait waits for what a sync applied: "
				     "not with --dry-run");
		goto out;
	}
	if (!name) {
		derived = cli_app_default_name(&capp, path);
		if (!derived) {
			rc = cli_usage_error(&cli_sync_command,
					     "cannot derive an app name from "
					     "the path: give --app NAME");
			goto out;
		}
		name = derived;
	}
	/* What the spec says of keeping the app. */
	app_sync_options_from_spec(&so, &capp.spec);
	so.dry_run = dry_run;
	/* A wave waits for the one before it as --wait would. */
	so.wave_wait_ms = timeout_ms;
	dopts.policy = capp.spec.foreign_fields;
	dopts.no_views = true; /* sync prints what it writes, not a diff */
	if (app_spec_set(&capp.spec, &capp.spec.name, name) < 0 ||
	    app_spec_set(&capp.spec, &capp.spec.namespace, ns) < 0) {
		fprintf(stderr, "error: out of memory\n");
		goto out;
	}

	if (cli_app_load(&capp, path, &desired, &revision, &err) < 0 ||
	    /* before connecting; app_compare() checks again */
	    app_annotations_check(&desired, &err) < 0 ||
	    app_conn_open(&conn, kubeconfig, context, &ko, &err) < 0 ||
	    app_init(&app, conn.client, conn.disc, name,
		     ns ? ns : conn.cfg.namespace, dopts.field_manager,
		     &err) < 0)
		goto fail;
	app_use_spec(&app, &capp.spec);
	error = app_compare(&app, &desired, &dopts, &reg, &report, revision,
			    &err);
	if (error == ERR_NOTFOUND && report) {
		/* Kinds nobody serves: those objects fail, the rest goes on. */
		err_reset(&err);
	} else if (error < 0) {
		goto fail;
	}
	if (capp.spec.verify == APP_VERIFY_DRY_RUN) {
		struct err e = ERR_INIT;

		/* A dry run that cannot be sent: the local verdict stands. */
		error = app_verify(&app, report, &desired, reg, &dopts, NULL,
				   NULL, &e);
		if (error == ERR_NOMEM) {
			err_move(&err, &e);
			goto fail;
		}
		err_release(&e);
	}
	if (app_sync(&app, report, &desired, &so, &res, &err) < 0)
		goto fail;
	rc = print_result(&res, so.dry_run);
	if (err_count(&res.failures))
		err_print(&res.failures, stderr, "error");
	if (rc == EXIT_OK && (res.failed || res.waiting))
		rc = EXIT_RESULT;
	if (rc == EXIT_OK && wait) {
		rc = wait_healthy(&app, &desired, report, timeout_ms, &err);
		if (rc == EXIT_ERROR)
			goto fail;
	}
	goto out;
fail:
	cli_print_errors(&err);
	rc = EXIT_ERROR;
out:
	app_sync_result_release(&res);
	diff_report_free(report);
	diff_schemas_free(reg);
	diff_objset_release(&desired);
	app_release(&app);
	app_conn_close(&conn);
	cli_app_release(&capp);
	free(derived);
	err_release(&err);
	return rc;
}

const struct cli_command cli_sync_command = {
	"sync",
	"apply what differs from a path to a cluster, and prune",
	usage,
	sync_main,
};
