/*
 * syncd run -c syncd.yaml: the controller (syncd/controller.c) until
 * SIGTERM or SIGINT, or one pass of every app with --once.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "syncd/cli.h"
#include "syncd/config.h"
#include "syncd/controller.h"
#include "util/log.h"

/* How long passes in flight may take to finish after SIGTERM. */
#define RUN_GRACE_MS 30000u

static const char usage[] =
	"usage: syncd run -c FILE [--once]\n"
	"\n"
	"Keep every app of FILE (see docs/config.md) equal to its Git\n"
	"source: each app is polled every source.interval and re-read\n"
	"from the cluster every resync; what drifted is applied again\n"
	"(selfHeal), fields other controllers own are left alone\n"
	"(foreignFields: respect). One log line per pass and per object\n"
	"written, on stderr. SIGTERM or SIGINT: no new pass starts, the\n"
	"passes in flight finish, exit 0.\n"
	"\n"
	"  -c, --config FILE          the configuration file (required)\n"
	"      --once                 run every app once and exit\n"
	"  -h, --help                 this text\n"
	"\n"
	"Exit status: 0 (with --once: every app converged), 1 some app\n"
	"failed (--once), 2 could not run (an invalid config: every\n"
	"problem is printed as FILE:LINE and nothing starts).\n";

static int run_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"once", no_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct config *cfg = NULL;
	struct controller *ctl = NULL;
	struct err err = ERR_INIT;
	const char *path = NULL;
	bool once = false;
	sigset_t sigs;
	int c, sig, r, rc = EXIT_ERROR;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			path = optarg;
			break;
		case 'o':
			once = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return EXIT_OK;
		default:
			return cli_usage_error(&cli_run_command, "bad option");
		}
	}
	if (optind < argc)
		return cli_usage_error(&cli_run_command, "unexpected \"%s\"",
				       argv[optind]);
	if (!path)
		return cli_usage_error(&cli_run_command, "missing -c FILE");
	if (config_load(&cfg, path, &err) < 0)
		goto fail;
	log_setup(stderr, cfg->log_format, cfg->log_level);

	if (controller_new(&ctl, cfg, &err) < 0)
		goto fail;
	if (once) {
		r = controller_run_once(ctl, &err);
		if (r < 0)
			goto fail;
		rc = r ? EXIT_RESULT : EXIT_OK;
		goto out;
	}
	/*
	 * Block the stop signals before any thread starts, so that every
	 * thread inherits the mask and only sigwait() below receives them.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	if (controller_start(ctl, &err) < 0)
		goto fail;
	log_info("controller started", "config", path, NULL);
	if (sigwait(&sigs, &sig) != 0)
		sig = SIGTERM;
	log_info("stopping", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM",
		 NULL);
	if (controller_stop(ctl, RUN_GRACE_MS) < 0) {
		/* Past the grace period: exit without waiting any longer. */
		log_error("passes still running after the grace period", NULL);
		fflush(NULL);
		_exit(EXIT_ERROR);
	}
	log_info("stopped", NULL);
	rc = EXIT_OK;
	goto out;
fail:
	cli_print_errors(&err);
	rc = EXIT_ERROR;
out:
	controller_free(ctl);
	config_free(cfg);
	err_release(&err);
	return rc;
}

const struct cli_command cli_run_command = {
	"run",
	"keep the apps of a config file converged (the controller)",
	usage,
	run_main,
};
