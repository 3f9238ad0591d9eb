/*
 * syncd run -c syncd.yaml: the controller (controller/controller.c) until
 * SIGTERM or SIGINT, or one pass of every app with --once.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "syncd/cli.h"
#include "controller/controller.h"
#include "util/log.h"

#include "util/banned.h" /* last */

/* How long passes in flight may take to finish after SIGTERM. */
#define RUN_GRACE_MS 30000u

static const char usage[] =
	"usage: syncd run -c FILE [--once | --check]\n"
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
	"      --check                only check FILE: print a summary and\n"
	"                             exit 0, or every problem and exit 2\n"
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
 * What the HTTP endpoint talks to: the controller running now. A reload
 * that makes a new controller swaps it under the write lock.
 */
struct runner {
	pthread_rwlock_t lock;
	struct controller *ctl;
	struct config *cfg;
	struct metrics *metrics;
	struct httpd *httpd;
};

static bool h_ready(struct buf *why, void *ctx)
{
	struct runner *r = ctx;
	bool ok;

	pthread_rwlock_rdlock(&r->lock);
	ok = controller_ready(r->ctl, why);
	pthread_rwlock_unlock(&r->lock);
	return ok;
}

static json_t *h_apps(void *ctx)
{
	struct runner *r = ctx;
	json_t *doc;

	pthread_rwlock_rdlock(&r->lock);
	doc = controller_apps_json(r->ctl);
	pthread_rwlock_unlock(&r->lock);
	return doc;
}

static json_t *h_app(const char *name, void *ctx)
{
	struct runner *r = ctx;
	json_t *doc;

	pthread_rwlock_rdlock(&r->lock);
	doc = controller_app_json(r->ctl, name);
	pthread_rwlock_unlock(&r->lock);
	return doc;
}

static int h_sync(const char *name, void *ctx)
{
	struct runner *r = ctx;
	int error;

	pthread_rwlock_rdlock(&r->lock);
	error = controller_sync_now(r->ctl, name);
	pthread_rwlock_unlock(&r->lock);
	if (!error)
		log_info("pass requested over HTTP", "app", name, NULL);
	return error;
}

static int h_push(const char *const *urls, size_t nurls, const char *branch,
		  void *ctx)
{
	struct runner *r = ctx;
	struct buf repo = BUF_INIT;
	char n[16];
	int count;

	pthread_rwlock_rdlock(&r->lock);
	count = controller_push(r->ctl, urls, nurls, branch);
	pthread_rwlock_unlock(&r->lock);
	snprintf(n, sizeof(n), "%d", count);
	/* Host and path only: a URL in an event could carry credentials. */
	if (nurls)
		controller_repo_key(urls[0], &repo);
	log_info("push event", "repo", buf_cstr(&repo), "branch", branch,
		 "apps", n, NULL);
	buf_release(&repo);
	return count;
}

static void collect(struct metrics *m, void *ctx)
{
	struct runner *r = ctx;

	(void)m;
	pthread_rwlock_rdlock(&r->lock);
	controller_collect(r->ctl);
	pthread_rwlock_unlock(&r->lock);
}

static bool same_opt(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Start the endpoint of `cfg`. */
static int start_http(struct runner *r, const struct config *cfg,
		      struct err *err)
{
	struct httpd_handlers h = {r,	   h_ready, h_apps,
				   h_app, h_sync,  h_push};
	struct httpd_options o = {0};
	char port[16];
	int error;

	o.listen = cfg->listen;
	o.metrics = r->metrics;
	o.api_token_file = cfg->api_token_file;
	o.github_secret_file = cfg->github_secret_file;
	o.gitlab_token_file = cfg->gitlab_token_file;
	if ((error = httpd_start(&r->httpd, &h, &o, err)) < 0)
		return error;
	snprintf(port, sizeof(port), "%u", httpd_port(r->httpd));
	log_info("serving HTTP", "listen", cfg->listen, "port", port, NULL);
	return 0;
}

/*
 * SIGHUP: read the file again. A bad file keeps the running controller
 * and says why; a file that changes only apps switches them in place;
 * one that changes global settings starts a new controller (made before
 * the old one stops, so a failure keeps the old one running), and a new
 * HTTP endpoint when its settings changed.
 */
static void reload(struct runner *run, const char *path)
{
	struct controller_reload_result r;
	struct controller *fresh = NULL, *old;
	struct config *next = NULL, *prev = run->cfg;
	struct err err = ERR_INIT;
	char counts[96];

	log_info("reloading", "config", path, NULL);
	if (config_load(&next, path, &err) < 0)
		goto failed;
	if (config_same_globals(prev, next)) {
		if (controller_reload(run->ctl, next, &r, &err) < 0) {
			if (controller_config(run->ctl) != next)
				goto failed;
			/* Switched, but the queue did not restart. */
			log_reload_errors(&err);
			run->cfg = next;
			config_free(prev);
			goto out;
		}
		snprintf(counts, sizeof(counts),
			 "added=%u removed=%u changed=%u unchanged=%u", r.added,
			 r.removed, r.changed, r.unchanged);
		log_info("config reloaded", "config", path, "apps", counts,
			 NULL);
		run->cfg = next;
		config_free(prev);
		goto out;
	}
	if (controller_new(&fresh, next, run->metrics, &err) < 0)
		goto failed;
	if (controller_stop(run->ctl, RUN_GRACE_MS) < 0) {
		log_error("passes still running after the grace period", NULL);
		fflush(NULL);
		_exit(EXIT_ERROR);
	}
	pthread_rwlock_wrlock(&run->lock);
	old = run->ctl;
	run->ctl = fresh;
	run->cfg = next;
	pthread_rwlock_unlock(&run->lock);
	controller_free(old);
	log_setup(stderr, next->log_format, next->log_level);
	if (!same_opt(prev->listen, next->listen) ||
	    !same_opt(prev->api_token_file, next->api_token_file) ||
	    !same_opt(prev->github_secret_file, next->github_secret_file) ||
	    !same_opt(prev->gitlab_token_file, next->gitlab_token_file)) {
		httpd_stop(run->httpd);
		run->httpd = NULL;
		if (start_http(run, next, &err) < 0) {
			log_reload_errors(&err);
			err_reset(&err);
		}
	}
	config_free(prev);
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
		{"check", no_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct runner run = {.ctl = NULL};
	struct err err = ERR_INIT;
	const char *path = NULL;
	bool once = false, check = false;
	sigset_t sigs;
	int c, sig, r, rc = EXIT_ERROR;

	/*
	 * The daemon: a peer that goes away mid-request (a Git server
	 * stopped while libgit2 writes to it, a scraper that hangs up) is an
	 * error of that request, never the death of the process.
	 */
	signal(SIGPIPE, SIG_IGN);
	pthread_rwlock_init(&run.lock, NULL);
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			path = optarg;
			break;
		case 'o':
			once = true;
			break;
		case 'k':
			check = true;
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
	if (once && check)
		return cli_usage_error(&cli_run_command,
				       "--once and --check exclude each other");
	if (config_load(&run.cfg, path, &err) < 0)
		goto fail;
	if (check) {
		printf("%s: valid, %zu app%s\n", path, run.cfg->napps,
		       run.cfg->napps == 1 ? "" : "s");
		rc = EXIT_OK;
		goto out;
	}
	log_setup(stderr, run.cfg->log_format, run.cfg->log_level);
	if (!once && !(run.metrics = metrics_new())) {
		err_set(&err, ERR_NOMEM, "out of memory");
		goto fail;
	}
	if (controller_new(&run.ctl, run.cfg, run.metrics, &err) < 0)
		goto fail;
	if (run.metrics)
		metrics_set_collector(run.metrics, collect, &run);
	if (once) {
		r = controller_run_once(run.ctl, &err);
		if (r < 0)
			goto fail;
		rc = r ? EXIT_RESULT : EXIT_OK;
		goto out;
	}
	/*
	 * Block the signals before any thread starts, so that every thread
	 * inherits the mask and only sigwait() below receives them.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	if (start_http(&run, run.cfg, &err) < 0)
		goto fail;
	if (controller_start(run.ctl, &err) < 0)
		goto fail;
	log_info("controller started", "config", path, NULL);
	for (;;) {
		if (sigwait(&sigs, &sig) != 0)
			sig = SIGTERM;
		if (sig != SIGHUP)
			break;
		reload(&run, path);
	}
	log_info("stopping", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM",
		 NULL);
	if (controller_stop(run.ctl, RUN_GRACE_MS) < 0) {
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
	httpd_stop(run.httpd);
	controller_free(run.ctl);
	config_free(run.cfg);
	metrics_free(run.metrics);
	pthread_rwlock_destroy(&run.lock);
	err_release(&err);
	return rc;
}

const struct cli_command cli_run_command = {
	"run",
	"keep the apps of a config file converged (the controller)",
	usage,
	run_main,
};
