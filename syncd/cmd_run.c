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
	"written, on stderr. SIGHUP reads FILE again (a bad file keeps\n"
	"the running configuration). SIGTERM or SIGINT: no new pass\n"
	"starts, the passes in flight finish, exit 0.\n"
	"\n"
	"  -c, --config FILE          the configuration file (required)\n"
	"      --once                 run every app once and exit\n"
	"  -h, --help                 this text\n"
	"\n"
	"Exit status: 0 (with --once: every app converged), 1 some app\n"
	"failed (--once), 2 could not run (an invalid config: every\n"
	"problem is printed as FILE:LINE and nothing starts).\n";

/* Log every line of `err` as an error of the reload. */
static void log_reload_errors(const struct err *err)
{
	const char *p = err_msg(err);
	struct buf line = BUF_INIT;

	while (*p) {
		size_t n = strcspn(p, "\n");

		buf_reset(&line);
		buf_add(&line, p, n);
		log_error("reload failed, the running configuration stays",
			  "error", buf_cstr(&line), NULL);
		p += n + (p[n] == '\n');
	}
	buf_release(&line);
}

/*
 * SIGHUP: read the file again. A bad file keeps the running controller
 * and says why; a file that changes only apps switches them in place;
 * one that changes global settings starts a new controller (made before
 * the old one stops, so a failure keeps the old one running).
 */
static void reload(struct controller **ctl, struct config **cfg,
		   const char *path)
{
	struct controller_reload_result r;
	struct controller *fresh = NULL;
	struct config *next = NULL;
	struct err err = ERR_INIT;
	char counts[96];

	log_info("reloading", "config", path, NULL);
	if (config_load(&next, path, &err) < 0)
		goto failed;
	if (config_same_globals(*cfg, next)) {
		if (controller_reload(*ctl, next, &r, &err) < 0)
			goto failed;
		snprintf(counts, sizeof(counts),
			 "added=%u removed=%u changed=%u unchanged=%u", r.added,
			 r.removed, r.changed, r.unchanged);
		log_info("config reloaded", "config", path, "apps", counts,
			 NULL);
		config_free(*cfg);
		*cfg = next;
		goto out;
	}
	if (controller_new(&fresh, next, &err) < 0)
		goto failed;
	if (controller_stop(*ctl, RUN_GRACE_MS) < 0) {
		log_error("passes still running after the grace period", NULL);
		fflush(NULL);
		_exit(EXIT_ERROR);
	}
	controller_free(*ctl);
	config_free(*cfg);
	*ctl = fresh;
	*cfg = next;
	log_setup(stderr, next->log_format, next->log_level);
	if (controller_start(fresh, &err) < 0) {
		/* Only out of memory gets here; nothing would run. */
		log_reload_errors(&err);
		fflush(NULL);
		_exit(EXIT_ERROR);
	}
	log_info("config reloaded, controller restarted", "config", path,
		 NULL);
	goto out;
failed:
	log_reload_errors(&err);
	controller_free(fresh);
	config_free(next);
out:
	err_release(&err);
}

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
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	if (controller_start(ctl, &err) < 0)
		goto fail;
	log_info("controller started", "config", path, NULL);
	for (;;) {
		if (sigwait(&sigs, &sig) != 0)
			sig = SIGTERM;
		if (sig != SIGHUP)
			break;
		reload(&ctl, &cfg, path);
	}
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
