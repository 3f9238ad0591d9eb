/*
 * The metrics registry: exact exposition text for each type, escaping,
 * order, removal, the collector, the errors, concurrent updates, and
 * `promtool check metrics` on a full scrape when promtool is installed.
 */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "controller/controller.h"

static struct metrics *m;
static struct buf out = BUF_INIT;

static void setup(void)
{
	m = metrics_new();
	cr_assert_not_null(m);
}

static void teardown(void)
{
	metrics_free(m);
	m = NULL;
	buf_release(&out);
}

static const char *render(void)
{
	buf_reset(&out);
	cr_assert_eq(metrics_render(m, &out), 0);
	return buf_cstr(&out);
}

TestSuite(metrics, .init = setup, .fini = teardown, .timeout = 30);

Test(metrics, counter)
{
	const char *const l[] = {"app", "web", "result", "success", NULL};

	cr_assert_eq(metrics_declare(m, "syncd_sync_total", METRICS_COUNTER,
				     "Passes run.", NULL, 0),
		     0);
	cr_assert_eq(metrics_counter_add(m, "syncd_sync_total", l, 1), 0);
	cr_assert_eq(metrics_counter_add(m, "syncd_sync_total", l, 2), 0);
	cr_assert_str_eq(render(), "# HELP syncd_sync_total Passes run.\n"
				   "# TYPE syncd_sync_total counter\n"
				   "syncd_sync_total{app=\"web\","
				   "result=\"success\"} 3\n");
	/* Counters only go up. */
	cr_assert_eq(metrics_counter_add(m, "syncd_sync_total", l, -1),
		     ERR_INVALID);
}

Test(metrics, gauge_values)
{
	const char *const a[] = {"v", "a", NULL}, *const b[] = {"v", "b", NULL},
			  *const c[] = {"v", "c", NULL},
			  *const d[] = {"v", "d", NULL},
			  *const e[] = {"v", "e", NULL};

	cr_assert_eq(
		metrics_declare(m, "g", METRICS_GAUGE, "A gauge.", NULL, 0), 0);
	cr_assert_eq(metrics_gauge_set(m, "g", a, 1e6), 0);
	cr_assert_eq(metrics_gauge_set(m, "g", b, 0.1), 0);
	cr_assert_eq(metrics_gauge_set(m, "g", c, -2.5), 0);
	cr_assert_eq(metrics_gauge_set(m, "g", d, 1.0 / 3), 0);
	cr_assert_eq(metrics_gauge_set(m, "g", e, 1764410700.25), 0);
	cr_assert_eq(metrics_gauge_set(m, "g", NULL, 7), 0);
	/* Set replaces. */
	cr_assert_eq(metrics_gauge_set(m, "g", NULL, 5), 0);
	cr_assert_str_eq(render(), "# HELP g A gauge.\n"
				   "# TYPE g gauge\n"
				   "g 5\n"
				   "g{v=\"a\"} 1000000\n"
				   "g{v=\"b\"} 0.1\n"
				   "g{v=\"c\"} -2.5\n"
				   "g{v=\"d\"} 0.3333333333333333\n"
				   "g{v=\"e\"} 1764410700.25\n");
}

Test(metrics, histogram)
{
	const double buckets[] = {0.1, 1, 10};
	const char *const l[] = {"app", "web", NULL};

	cr_assert_eq(metrics_declare(m, "syncd_reconcile_duration_seconds",
				     METRICS_HISTOGRAM, "Pass duration.",
				     buckets, 3),
		     0);
	cr_assert_eq(
		metrics_observe(m, "syncd_reconcile_duration_seconds", l, 0.05),
		0);
	cr_assert_eq(
		metrics_observe(m, "syncd_reconcile_duration_seconds", l, 1),
		0);
	cr_assert_eq(
		metrics_observe(m, "syncd_reconcile_duration_seconds", l, 2.5),
		0);
	cr_assert_eq(
		metrics_observe(m, "syncd_reconcile_duration_seconds", l, 60),
		0);
	cr_assert_str_eq(
		render(),
		"# HELP syncd_reconcile_duration_seconds Pass duration.\n"
		"# TYPE syncd_reconcile_duration_seconds histogram\n"
		"syncd_reconcile_duration_seconds_bucket{app=\"web\","
		"le=\"0.1\"} 1\n"
		"syncd_reconcile_duration_seconds_bucket{app=\"web\","
		"le=\"1\"} 2\n"
		"syncd_reconcile_duration_seconds_bucket{app=\"web\","
		"le=\"10\"} 3\n"
		"syncd_reconcile_duration_seconds_bucket{app=\"web\","
		"le=\"+Inf\"} 4\n"
		"syncd_reconcile_duration_seconds_sum{app=\"web\"} 63.55\n"
		"syncd_reconcile_duration_seconds_count{app=\"web\"} 4\n");
}

Test(metrics, histogram_without_labels_or_buckets)
{
	cr_assert_eq(metrics_declare(m, "h", METRICS_HISTOGRAM, "H.", NULL, 0),
		     0);
	cr_assert_eq(metrics_observe(m, "h", NULL, 3), 0);
	cr_assert_str_eq(render(), "# HELP h H.\n"
				   "# TYPE h histogram\n"
				   "h_bucket{le=\"+Inf\"} 1\n"
				   "h_sum 3\n"
				   "h_count 1\n");
}

Test(metrics, escaping)
{
	const char *const l[] = {"path", "a\\b \"q\"\nz", NULL};

	cr_assert_eq(metrics_declare(m, "e", METRICS_GAUGE,
				     "Back\\slash \"quotes\" and\nnewline.",
				     NULL, 0),
		     0);
	cr_assert_eq(metrics_gauge_set(m, "e", l, 1), 0);
	/* HELP escapes backslash and newline only; values also quotes. */
	cr_assert_str_eq(render(),
			 "# HELP e Back\\\\slash \"quotes\" and\\nnewline.\n"
			 "# TYPE e gauge\n"
			 "e{path=\"a\\\\b \\\"q\\\"\\nz\"} 1\n");
}

Test(metrics, sorted_by_family_then_labels)
{
	const char *const b2[] = {"app", "b", "x", "2", NULL};
	const char *const b1[] = {"x", "1", "app", "b", NULL};
	const char *const a[] = {"app", "a", NULL};

	cr_assert_eq(metrics_declare(m, "zz", METRICS_GAUGE, "Z.", NULL, 0), 0);
	cr_assert_eq(metrics_declare(m, "aa", METRICS_GAUGE, "A.", NULL, 0), 0);
	cr_assert_eq(metrics_gauge_set(m, "zz", b2, 1), 0);
	cr_assert_eq(metrics_gauge_set(m, "zz", b1, 2), 0);
	cr_assert_eq(metrics_gauge_set(m, "zz", a, 3), 0);
	cr_assert_eq(metrics_gauge_set(m, "aa", NULL, 4), 0);
	/* Labels print sorted by name whatever order they were given in. */
	cr_assert_str_eq(render(), "# HELP aa A.\n"
				   "# TYPE aa gauge\n"
				   "aa 4\n"
				   "# HELP zz Z.\n"
				   "# TYPE zz gauge\n"
				   "zz{app=\"a\"} 3\n"
				   "zz{app=\"b\",x=\"1\"} 2\n"
				   "zz{app=\"b\",x=\"2\"} 1\n");
}

Test(metrics, same_series_whatever_the_label_order)
{
	const char *const ab[] = {"a", "1", "b", "2", NULL};
	const char *const ba[] = {"b", "2", "a", "1", NULL};

	cr_assert_eq(metrics_declare(m, "c", METRICS_COUNTER, "C.", NULL, 0),
		     0);
	cr_assert_eq(metrics_counter_add(m, "c", ab, 1), 0);
	cr_assert_eq(metrics_counter_add(m, "c", ba, 1), 0);
	cr_assert_str_eq(render(), "# HELP c C.\n"
				   "# TYPE c counter\n"
				   "c{a=\"1\",b=\"2\"} 2\n");
}

Test(metrics, remove_by_label)
{
	const char *const web[] = {"app", "web", "state", "InSync", NULL};
	const char *const db[] = {"app", "db", "state", "InSync", NULL};

	cr_assert_eq(metrics_declare(m, "objs", METRICS_GAUGE, "O.", NULL, 0),
		     0);
	cr_assert_eq(
		metrics_declare(m, "syncs", METRICS_COUNTER, "S.", NULL, 0), 0);
	cr_assert_eq(metrics_gauge_set(m, "objs", web, 3), 0);
	cr_assert_eq(metrics_gauge_set(m, "objs", db, 4), 0);
	cr_assert_eq(metrics_counter_add(m, "syncs", web, 1), 0);
	cr_assert_eq(metrics_counter_add(m, "syncs", db, 1), 0);

	/* One family. */
	metrics_remove(m, "objs", "app", "web");
	cr_assert_str_eq(render(), "# HELP objs O.\n"
				   "# TYPE objs gauge\n"
				   "objs{app=\"db\",state=\"InSync\"} 4\n"
				   "# HELP syncs S.\n"
				   "# TYPE syncs counter\n"
				   "syncs{app=\"db\",state=\"InSync\"} 1\n"
				   "syncs{app=\"web\",state=\"InSync\"} 1\n");
	/* Every family; an emptied family is left out. */
	metrics_remove(m, NULL, "app", "db");
	cr_assert_str_eq(render(), "# HELP syncs S.\n"
				   "# TYPE syncs counter\n"
				   "syncs{app=\"web\",state=\"InSync\"} 1\n");
	/* A series made again starts from zero. */
	cr_assert_eq(metrics_counter_add(m, "syncs", db, 2), 0);
	cr_assert_str_eq(render(), "# HELP syncs S.\n"
				   "# TYPE syncs counter\n"
				   "syncs{app=\"db\",state=\"InSync\"} 2\n"
				   "syncs{app=\"web\",state=\"InSync\"} 1\n");
}

/* Lines of the scrape that start with `prefix`. */
static size_t lines_with(const char *text, const char *prefix)
{
	size_t n = 0, len = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		n += !strncmp(p, prefix, len);
	return n;
}

/*
 * Many apps' series, found by label hash: each set addresses its own
 * series (values read back), also after a scrape sorted them; a removal
 * of every other app leaves the rest addressable, and the removed ones
 * start again from nothing.
 */
Test(metrics, many_series_each_found_again)
{
	char app[16], line[96];
	const char *const states[] = {"InSync", "Drifted", "Missing"};

	cr_assert_eq(metrics_declare(m, "objs", METRICS_GAUGE, "O.", NULL, 0),
		     0);
	for (int round = 0; round < 2; round++)
		for (int a = 0; a < 500; a++)
			for (int st = 0; st < 3; st++) {
				const char *const l[] = {"state", states[st],
							 "app", app, NULL};

				snprintf(app, sizeof(app), "app-%03d", a);
				cr_assert_eq(metrics_gauge_set(m, "objs", l,
							       a * 10 + st +
								       round),
					     0);
			}
	cr_assert_eq(lines_with(render(), "objs{"), 1500);
	/* A scrape sorts the series: each is still found where it went. */
	for (int a = 0; a < 500; a++) {
		const char *const l[] = {"app", app, "state", "Drifted", NULL};

		snprintf(app, sizeof(app), "app-%03d", a);
		cr_assert_eq(metrics_gauge_set(m, "objs", l, a * 10 + 1 + 1), 0);
	}
	cr_assert_eq(lines_with(render(), "objs{"), 1500);
	snprintf(line, sizeof(line),
		 "objs{app=\"app-421\",state=\"Missing\"} %d\n", 4210 + 2 + 1);
	cr_assert_not_null(strstr(render(), line), "%s", line);
	for (int a = 0; a < 500; a += 2) {
		snprintf(app, sizeof(app), "app-%03d", a);
		metrics_remove(m, "objs", "app", app);
	}
	cr_assert_eq(lines_with(render(), "objs{"), 750);
	for (int a = 0; a < 500; a++) {
		const char *const l[] = {"app", app, "state", "InSync", NULL};

		snprintf(app, sizeof(app), "app-%03d", a);
		cr_assert_eq(metrics_gauge_set(m, "objs", l, -a), 0);
	}
	/* The odd apps' InSync series set again, the even ones' made anew. */
	cr_assert_eq(lines_with(render(), "objs{"), 1000);
	cr_assert_not_null(
		strstr(render(), "objs{app=\"app-002\",state=\"InSync\"} -2\n"));
	cr_assert_not_null(
		strstr(render(), "objs{app=\"app-003\",state=\"InSync\"} -3\n"));
	cr_assert_not_null(
		strstr(render(), "objs{app=\"app-003\",state=\"Drifted\"} 32\n"));
	cr_assert_null(strstr(render(), "objs{app=\"app-002\",state=\"Drifted\""));
}

static void collect(struct metrics *mm, void *ctx)
{
	int *calls = ctx;

	(*calls)++;
	/* The collector uses the same API: no lock is held. */
	cr_assert_eq(metrics_gauge_set(mm, "drift", NULL, *calls * 10), 0);
}

Test(metrics, collector_runs_at_each_render)
{
	int calls = 0;

	cr_assert_eq(metrics_declare(m, "drift", METRICS_GAUGE, "D.", NULL, 0),
		     0);
	metrics_set_collector(m, collect, &calls);
	cr_assert_str_eq(render(), "# HELP drift D.\n"
				   "# TYPE drift gauge\n"
				   "drift 10\n");
	cr_assert_str_eq(render(), "# HELP drift D.\n"
				   "# TYPE drift gauge\n"
				   "drift 20\n");
	cr_assert_eq(calls, 2);
	metrics_set_collector(m, NULL, NULL);
	render();
	cr_assert_eq(calls, 2);
}

Test(metrics, errors)
{
	const double bad[] = {1, 1};
	const double inf[] = {1, 1.0 / 0.0};
	const char *const colon[] = {"a:b", "x", NULL};
	const char *const le[] = {"le", "1", NULL};
	const char *const dup[] = {"a", "1", "a", "2", NULL};
	const char *const odd[] = {"a", NULL};

	cr_assert_eq(
		metrics_declare(m, "ok:name_1", METRICS_GAUGE, "x", NULL, 0),
		0);
	cr_assert_eq(
		metrics_declare(m, "ok:name_1", METRICS_GAUGE, "x", NULL, 0),
		ERR_EXISTS);
	cr_assert_eq(metrics_declare(m, "1bad", METRICS_GAUGE, "x", NULL, 0),
		     ERR_INVALID);
	cr_assert_eq(
		metrics_declare(m, "bad-name", METRICS_GAUGE, "x", NULL, 0),
		ERR_INVALID);
	cr_assert_eq(metrics_declare(m, "", METRICS_GAUGE, "x", NULL, 0),
		     ERR_INVALID);
	cr_assert_eq(metrics_declare(m, "h", METRICS_HISTOGRAM, "x", bad, 2),
		     ERR_INVALID);
	cr_assert_eq(metrics_declare(m, "h", METRICS_HISTOGRAM, "x", inf, 2),
		     ERR_INVALID);
	cr_assert_eq(metrics_declare(m, "g2", METRICS_GAUGE, "x", bad, 1),
		     ERR_INVALID);
	cr_assert_eq(metrics_declare(m, "h", METRICS_HISTOGRAM, "x", bad, 1),
		     0);

	cr_assert_eq(metrics_gauge_set(m, "missing", NULL, 1), ERR_NOTFOUND);
	cr_assert_eq(metrics_counter_add(m, "ok:name_1", NULL, 1), ERR_INVALID);
	cr_assert_eq(metrics_gauge_set(m, "ok:name_1", colon, 1), ERR_INVALID);
	cr_assert_eq(metrics_gauge_set(m, "ok:name_1", dup, 1), ERR_INVALID);
	cr_assert_eq(metrics_gauge_set(m, "ok:name_1", odd, 1), ERR_INVALID);
	cr_assert_eq(metrics_observe(m, "h", le, 1), ERR_INVALID);
	/* Nothing was half-made by the failures. */
	cr_assert_str_eq(render(), "");
}

Test(metrics, render_keeps_nothing_over_the_cap)
{
	struct buf small;

	buf_init(&small, 16);
	cr_assert_eq(
		metrics_declare(m, "g", METRICS_GAUGE, "A gauge.", NULL, 0), 0);
	cr_assert_eq(metrics_gauge_set(m, "g", NULL, 1), 0);
	cr_assert_eq(metrics_render(m, &small), ERR_LIMIT);
	cr_assert_eq(small.len, 0);
	buf_release(&small);
}

#define THREADS 4
#define ADDS	10000

static void *adder(void *arg)
{
	const char *const l[] = {"t", "x", NULL};
	int i;

	(void)arg;
	for (i = 0; i < ADDS; i++) {
		metrics_counter_add(m, "c", l, 1);
		metrics_observe(m, "h", l, i % 3);
	}
	return NULL;
}

Test(metrics, concurrent_updates_are_all_counted)
{
	const double buckets[] = {0.5, 1.5};
	pthread_t t[THREADS];
	int i;

	cr_assert_eq(metrics_declare(m, "c", METRICS_COUNTER, "C.", NULL, 0),
		     0);
	cr_assert_eq(
		metrics_declare(m, "h", METRICS_HISTOGRAM, "H.", buckets, 2),
		0);
	for (i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, adder, NULL), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	cr_assert(strstr(render(), "c{t=\"x\"} 40000\n"));
	cr_assert(strstr(buf_cstr(&out), "h_count{t=\"x\"} 40000\n"));
	cr_assert(strstr(buf_cstr(&out), "h_sum{t=\"x\"} 39996\n"));
	/* 0, 1, 2 in turn: a third below 0.5, two thirds below 1.5. */
	cr_assert(
		strstr(buf_cstr(&out), "h_bucket{t=\"x\",le=\"0.5\"} 13336\n"));
	cr_assert(
		strstr(buf_cstr(&out), "h_bucket{t=\"x\",le=\"1.5\"} 26668\n"));
}

/* The path of promtool, or NULL: looked up in $PATH. */
static char *find_promtool(void)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, *found = NULL;
	char full[4096];

	if (!path)
		return NULL;
	copy = strdup(path);
	for (dir = strtok_r(copy, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(full, sizeof(full), "%s/promtool", dir);
		if (!access(full, X_OK))
			found = strdup(full);
	}
	free(copy);
	return found;
}

Test(metrics, promtool_accepts_the_output)
{
	const double buckets[] = {0.005, 0.1, 1, 10};
	const char *const info[] = {"app",	"web",
				    "repo",	"https://git.example.com/d.git",
				    "path",	"apps/\"web\"\\x",
				    "revision", "9f1c",
				    NULL};
	const char *const ok[] = {"app", "web", "result", "success", NULL};
	char *promtool = find_promtool();
	int in[2], status;
	pid_t pid;
	FILE *f;

	if (!promtool)
		cr_skip_test("promtool is not installed");
	cr_assert_eq(metrics_declare(m, "syncd_app_info", METRICS_GAUGE,
				     "Apps and their source.", NULL, 0),
		     0);
	cr_assert_eq(metrics_declare(m, "syncd_sync_total", METRICS_COUNTER,
				     "Passes by result.", NULL, 0),
		     0);
	cr_assert_eq(metrics_declare(m, "syncd_reconcile_duration_seconds",
				     METRICS_HISTOGRAM, "Pass duration.",
				     buckets, 4),
		     0);
	cr_assert_eq(metrics_declare(m, "syncd_leader", METRICS_GAUGE,
				     "1 when leading.", NULL, 0),
		     0);
	cr_assert_eq(metrics_gauge_set(m, "syncd_app_info", info, 1), 0);
	cr_assert_eq(metrics_counter_add(m, "syncd_sync_total", ok, 3), 0);
	cr_assert_eq(metrics_observe(m, "syncd_reconcile_duration_seconds", ok,
				     0.25),
		     0);
	cr_assert_eq(metrics_gauge_set(m, "syncd_leader", NULL, 1), 0);
	render();

	cr_assert_eq(pipe(in), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		char *const argv[] = {promtool, (char *)"check",
				      (char *)"metrics", NULL};

		dup2(in[0], 0);
		close(in[0]);
		close(in[1]);
		execv(promtool, argv);
		_exit(127);
	}
	close(in[0]);
	f = fdopen(in[1], "w");
	fwrite(out.ptr, 1, out.len, f);
	fclose(f);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	free(promtool);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "promtool check metrics refused:\n%s", buf_cstr(&out));
}
