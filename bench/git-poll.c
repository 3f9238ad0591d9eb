/*
 * Benchmark driver: poll one Git source in a loop through source/source.h, the
 * way the controller does between two pushes, and print what each poll
 * cost. bench/git-poll.sh runs it against file:// and a smart HTTP server
 * and sets the figures beside `git ls-remote` and a no-op `git fetch`.
 *
 *   git-poll --url URL [--path SUBDIR] [--revision REV] --cache-dir DIR
 *            [--ca-file F] [--username U] [--password-file F] [-n POLLS]
 *            [--once]
 *
 * The first poll (which may clone) is not timed. Then POLLS polls are, and
 * one line is printed:
 *
 *   polls=200 mean_ms=0.41 p50_ms=0.39 p99_ms=0.90 fetches=0
 *   requests_per_poll=1.00 changed=0 commit=<id>
 *
 * --once polls a single time (after marking the previous tree rendered)
 * and prints "changed=true|false fetched=true|false commit=<id>": the
 * script uses it after a commit outside --path.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "source/source.h"
#include "util/clock.h"

#define MAX_POLLS 100000

static double now_ms(void)
{
	return (double)clk_mono_ns() / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void usage(void)
{
	fputs("usage: git-poll --url URL --cache-dir DIR [--path SUBDIR] "
	      "[--revision REV]\n"
	      "                [--ca-file F] [--username U] "
	      "[--password-file F] [-n POLLS] [--once]\n",
	      stderr);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"url", required_argument, NULL, 'u'},
		{"path", required_argument, NULL, 'p'},
		{"revision", required_argument, NULL, 'r'},
		{"cache-dir", required_argument, NULL, 'c'},
		{"ca-file", required_argument, NULL, 'a'},
		{"username", required_argument, NULL, 'U'},
		{"password-file", required_argument, NULL, 'P'},
		{"once", no_argument, NULL, '1'},
		{NULL, 0, NULL, 0},
	};
	struct source_options o;
	struct source_poll_result r;
	struct source *s = NULL;
	struct err err = ERR_INIT;
	double *t = NULL, sum = 0;
	unsigned long fetches = 0, changed = 0, req0;
	long polls = 200;
	int c, once = 0, rc = 1;

	memset(&o, 0, sizeof(o));
	o.version = SOURCE_OPTIONS_VERSION;
	while ((c = getopt_long(argc, argv, "n:", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			o.url = optarg;
			break;
		case 'p':
			o.subpath = optarg;
			break;
		case 'r':
			o.revision = optarg;
			break;
		case 'c':
			o.cache_dir = optarg;
			break;
		case 'a':
			o.auth.ca_file = optarg;
			break;
		case 'U':
			o.auth.username = optarg;
			break;
		case 'P':
			o.auth.password_file = optarg;
			break;
		case '1':
			once = 1;
			break;
		case 'n':
			polls = strtol(optarg, NULL, 10);
			if (polls < 1 || polls > MAX_POLLS) {
				usage();
				return 2;
			}
			break;
		default:
			usage();
			return 2;
		}
	}
	if (!o.url || !o.cache_dir || optind != argc) {
		usage();
		return 2;
	}
	if (source_open(&s, &o, &err) < 0 ||
	    source_poll(s, &r, &err) < 0)
		goto out;
	if (once) {
		printf("changed=%s fetched=%s commit=%s\n",
		       r.changed ? "true" : "false",
		       r.fetched ? "true" : "false", r.revision);
		if (r.changed && source_mark_rendered(s, r.tree, &err) < 0)
			goto out;
		rc = 0;
		goto out;
	}
	/* The state a controller is in after its first render. */
	if (source_mark_rendered(s, r.tree, &err) < 0)
		goto out;
	if (!(t = calloc((size_t)polls, sizeof(*t)))) {
		err_set(&err, ERR_NOMEM, "out of memory");
		goto out;
	}
	req0 = r.requests;
	for (long i = 0; i < polls; i++) {
		double t0 = now_ms();

		if (source_poll(s, &r, &err) < 0)
			goto out;
		t[i] = now_ms() - t0;
		sum += t[i];
		fetches += r.fetched;
		changed += r.changed;
	}
	qsort(t, (size_t)polls, sizeof(*t), cmp_double);
	printf("polls=%ld mean_ms=%.3f p50_ms=%.3f p99_ms=%.3f fetches=%lu "
	       "requests_per_poll=%.2f changed=%lu commit=%s\n",
	       polls, sum / (double)polls, t[polls / 2],
	       t[(size_t)((double)polls * 0.99)], fetches,
	       (double)(r.requests - req0) / (double)polls, changed, r.revision);
	rc = 0;
out:
	if (rc)
		err_print(&err, stderr, "git-poll: error");
	free(t);
	source_free(s);
	err_release(&err);
	return rc;
}
