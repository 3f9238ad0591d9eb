#include <criterion/criterion.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/queue.h"
#include "util/err.h"

/*
 * A fake clock the tests move by hand, and a reconcile callback that
 * records every pass: how many per app, at which fake time, how many ran
 * at once. An app named in `gate_app` blocks in its pass until the gate
 * opens; apps whose name starts with "fail" fail while `fail_left` > 0
 * (or always when it is negative).
 */
#define MAX_APPS  256
#define MAX_TIMES 64

static _Atomic uint64_t fake_now;

static uint64_t fake_clock(void *ctx)
{
	(void)ctx;
	return atomic_load(&fake_now);
}

struct rec {
	char name[32];
	atomic_int inflight;
	atomic_int max_inflight;
	atomic_int passes;
	uint64_t times[MAX_TIMES]; /* fake time at the start of each pass */
};

static struct rec recs[MAX_APPS];
static atomic_int nrecs;
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static const char *gate_app;
static bool gate_open;
static int gate_entered;

static atomic_int fail_left;

static struct rec *rec_get(const char *name)
{
	struct rec *r = NULL;

	pthread_mutex_lock(&rec_lock);
	for (int i = 0; i < nrecs; i++)
		if (!strcmp(recs[i].name, name))
			r = &recs[i];
	if (!r) {
		cr_assert_lt(nrecs, MAX_APPS);
		r = &recs[nrecs++];
		snprintf(r->name, sizeof(r->name), "%s", name);
	}
	pthread_mutex_unlock(&rec_lock);
	return r;
}

static int passes(const char *name)
{
	return atomic_load(&rec_get(name)->passes);
}

static int reconcile(const char *app, void *ctx)
{
	struct rec *r = rec_get(app);
	int n, in, max, rc = 0;

	(void)ctx;
	in = atomic_fetch_add(&r->inflight, 1) + 1;
	max = atomic_load(&r->max_inflight);
	while (in > max &&
	       !atomic_compare_exchange_weak(&r->max_inflight, &max, in))
		;
	n = atomic_fetch_add(&r->passes, 1);
	if (n < MAX_TIMES)
		r->times[n] = atomic_load(&fake_now);

	pthread_mutex_lock(&gate_lock);
	if (gate_app && !strcmp(gate_app, app)) {
		gate_entered++;
		pthread_cond_broadcast(&gate_cond);
		while (!gate_open)
			pthread_cond_wait(&gate_cond, &gate_lock);
	}
	pthread_mutex_unlock(&gate_lock);

	/* Give other workers a chance to collide with this pass. */
	sched_yield();
	if (!strncmp(app, "fail", 4)) {
		int left = atomic_load(&fail_left);

		if (left < 0)
			rc = -1;
		else if (left > 0)
			rc = atomic_fetch_sub(&fail_left, 1) > 0 ? -1 : 0;
	}
	atomic_fetch_sub(&r->inflight, 1);
	return rc;
}

static void gate_close(const char *app)
{
	pthread_mutex_lock(&gate_lock);
	gate_app = app;
	gate_open = false;
	gate_entered = 0;
	pthread_mutex_unlock(&gate_lock);
}

static void gate_wait_entered(int n)
{
	pthread_mutex_lock(&gate_lock);
	while (gate_entered < n)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static void gate_release(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_open = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
}

static struct queue *start(unsigned workers, uint64_t t0)
{
	struct queue_options o = QUEUE_OPTIONS_INIT;
	struct err err = ERR_INIT;
	struct queue *q = NULL;

	atomic_store(&fake_now, t0);
	o.workers = workers;
	o.reconcile = reconcile;
	o.now_ms = fake_clock;
	o.seed = 42;
	cr_assert_eq(queue_new(&q, &o, &err), 0, "%s", err_msg(&err));
	err_release(&err);
	return q;
}

/* Move the fake clock to `t` and let everything due run. */
static void at(struct queue *q, uint64_t t)
{
	atomic_store(&fake_now, t);
	cr_assert_eq(queue_wait_idle(q, 20000), 0, "queue not idle at %llu",
		     (unsigned long long)t);
}

static void finish(struct queue *q)
{
	cr_assert_eq(queue_stop(q, 20000), 0);
	queue_free(q);
}

Test(queue, options_are_checked)
{
	struct queue_options o = QUEUE_OPTIONS_INIT;
	struct err err = ERR_INIT;
	struct queue *q = (struct queue *)&o;

	cr_assert_eq(queue_new(&q, &o, &err), ERR_INVALID);
	cr_assert_null(q);
	cr_assert_eq(err_count(&err), 1);
	err_release(&err);
}

Test(queue, names_are_checked)
{
	struct queue *q = start(1, 0);
	char longname[QUEUE_NAME_MAX + 2];

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	cr_assert_eq(queue_set_app(q, "", 0, 0), ERR_INVALID);
	cr_assert_eq(queue_set_app(q, NULL, 0, 0), ERR_INVALID);
	cr_assert_eq(queue_set_app(q, longname, 0, 0), ERR_LIMIT);
	cr_assert_eq(queue_enqueue(q, "nope"), ERR_NOTFOUND);
	cr_assert_eq(queue_enqueue_after(q, "nope", 5), ERR_NOTFOUND);
	cr_assert_eq(queue_remove_app(q, "nope"), ERR_NOTFOUND);
	finish(q);
}

Test(queue, dedup_while_waiting)
{
	struct queue *q = start(1, 0);
	struct queue_app_info info;

	gate_close("block");
	cr_assert_eq(queue_set_app(q, "block", 0, 0), 0);
	gate_wait_entered(1);
	/* The only worker is busy: "a" waits, and stays queued once. */
	cr_assert_eq(queue_set_app(q, "a", 0, 0), 0);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(queue_enqueue(q, "a"), 0);
	cr_assert_eq(queue_enqueue_after(q, "a", 0), 0);
	cr_assert_eq(queue_app_info(q, "a", &info), 0);
	cr_assert(info.queued);
	cr_assert_not(info.running);
	gate_release();
	at(q, 0);
	cr_assert_eq(passes("a"), 1);
	cr_assert_eq(passes("block"), 1);
	finish(q);
}

Test(queue, enqueue_while_running_runs_once_more)
{
	struct queue *q = start(4, 0);
	struct queue_app_info info;

	gate_close("a");
	cr_assert_eq(queue_set_app(q, "a", 0, 0), 0);
	gate_wait_entered(1);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(queue_enqueue(q, "a"), 0);
	cr_assert_eq(queue_app_info(q, "a", &info), 0);
	cr_assert(info.running);
	cr_assert(info.rerun);
	cr_assert_not(info.queued);
	gate_release();
	at(q, 0);
	cr_assert_eq(passes("a"), 2);
	cr_assert_eq(atomic_load(&rec_get("a")->max_inflight), 1);
	cr_assert_eq(queue_app_info(q, "a", &info), 0);
	cr_assert_eq(info.passes, 2);
	finish(q);
}

struct hammer {
	struct queue *q;
	unsigned seed;
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	char name[16];

	for (int i = 0; i < 3000; i++) {
		h->seed = h->seed * 1103515245 + 12345;
		snprintf(name, sizeof(name), "app%u", (h->seed >> 16) % 5);
		if (queue_enqueue(h->q, name))
			return arg; /* non-NULL: failure */
	}
	return NULL;
}

Test(queue, never_two_workers_on_one_app)
{
	struct queue *q = start(8, 0);
	struct hammer h[8];
	pthread_t t[8];
	char name[16];

	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "app%d", i);
		cr_assert_eq(queue_set_app(q, name, 0, 0), 0);
	}
	for (int i = 0; i < 8; i++) {
		h[i].q = q;
		h[i].seed = (unsigned)i + 1;
		cr_assert_eq(pthread_create(&t[i], NULL, hammer_main, &h[i]),
			     0);
	}
	for (int i = 0; i < 8; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		cr_assert_null(ret);
	}
	at(q, 0);
	for (int i = 0; i < 5; i++) {
		struct rec *r;

		snprintf(name, sizeof(name), "app%d", i);
		r = rec_get(name);
		cr_assert_eq(atomic_load(&r->max_inflight), 1, "%s", name);
		cr_assert_geq(atomic_load(&r->passes), 1);
		/* Dedup: far fewer passes than the 24000 triggers. */
		cr_assert_lt(atomic_load(&r->passes), 24000);
	}
	finish(q);
}

Test(queue, timers_fire_at_fake_times)
{
	struct queue *q = start(2, 1000);
	struct rec *r;

	cr_assert_eq(queue_set_app(q, "a", 100, 250), 0);
	at(q, 1000);
	cr_assert_eq(passes("a"), 1); /* a new app runs at once */
	at(q, 1099);
	cr_assert_eq(passes("a"), 1);
	at(q, 1100);
	cr_assert_eq(passes("a"), 2);
	at(q, 1200);
	cr_assert_eq(passes("a"), 3);
	at(q, 1250); /* resync */
	cr_assert_eq(passes("a"), 4);
	at(q, 1300);
	cr_assert_eq(passes("a"), 5);
	/* A jump past several periods fires once and skips the rest. */
	at(q, 2000);
	cr_assert_eq(passes("a"), 6);
	at(q, 2099);
	cr_assert_eq(passes("a"), 6);
	at(q, 2100);
	cr_assert_eq(passes("a"), 7);
	at(q, 2250); /* resync: 1750 was skipped, 2250 is next */
	cr_assert_eq(passes("a"), 8);
	r = rec_get("a");
	uint64_t want[] = {1000, 1100, 1200, 1250, 1300, 2000, 2100, 2250};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert_eq(r->times[i], want[i], "pass %zu at %llu", i,
			     (unsigned long long)r->times[i]);

	/* Changing the interval re-arms that timer from now. */
	cr_assert_eq(queue_set_app(q, "a", 1000, 250), 0);
	at(q, 2300);
	cr_assert_eq(passes("a"), 8);
	at(q, 2500); /* resync kept its schedule */
	cr_assert_eq(passes("a"), 9);
	finish(q);
}

/* Bounded by Criterion's timeout: a timer that never fires fails the test. */
Test(queue, timers_fire_with_real_clock, .timeout = 60)
{
	struct queue_options o = QUEUE_OPTIONS_INIT;
	struct queue *q = NULL;
	struct queue_app_info info;

	/* The timer thread alone (no wait_idle) drives a real 1 ms poll. */
	o.reconcile = reconcile;
	cr_assert_eq(queue_new(&q, &o, NULL), 0);
	cr_assert_eq(queue_set_app(q, "real", 1, 0), 0);
	for (;;) {
		cr_assert_eq(queue_app_info(q, "real", &info), 0);
		if (info.passes >= 5)
			break;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	cr_assert_geq(passes("real"), 5);
	finish(q);
}

Test(queue, debounce_coalesces_earliest_wins)
{
	struct queue *q = start(2, 0);

	cr_assert_eq(queue_set_app(q, "a", 0, 0), 0);
	at(q, 0);
	cr_assert_eq(passes("a"), 1);
	cr_assert_eq(queue_enqueue_after(q, "a", 100), 0); /* due 100 */
	at(q, 50);
	cr_assert_eq(queue_enqueue_after(q, "a", 100), 0); /* 150: later */
	cr_assert_eq(queue_enqueue_after(q, "a", 30), 0);  /* 80: wins */
	at(q, 79);
	cr_assert_eq(passes("a"), 1);
	at(q, 80);
	cr_assert_eq(passes("a"), 2);
	at(q, 1000); /* nothing left over from the coalesced calls */
	cr_assert_eq(passes("a"), 2);
	cr_assert_eq(rec_get("a")->times[1], 80);
	finish(q);
}

Test(queue, backoff_nominal_sequence)
{
	uint64_t want[] = {0,	  5000,	  10000,  20000,  40000,
			   80000, 160000, 300000, 300000, 300000};

	for (unsigned n = 0; n < sizeof(want) / sizeof(want[0]); n++)
		cr_assert_eq(queue_backoff_ms(n, 5000, 300000), want[n],
			     "failures %u", n);
	cr_assert_eq(queue_backoff_ms(200, 5000, 300000), 300000);
	cr_assert_eq(queue_backoff_ms(1000000, 1, UINT64_MAX), UINT64_MAX);
}

Test(queue, backoff_sequence_with_jitter_bounds)
{
	struct queue *q = start(2, 0);
	struct queue_app_info info;
	uint64_t t = 0, prev_delay = 0;
	bool varied = false;

	atomic_store(&fail_left, -1);
	cr_assert_eq(queue_set_app(q, "fail", 0, 0), 0);
	cr_assert_eq(queue_set_app(q, "ok", 1000, 0), 0);
	at(q, 0);
	for (unsigned n = 1; n <= 12; n++) {
		uint64_t d = queue_backoff_ms(n, 5000, 300000), delay;
		int ok_before = passes("ok");

		cr_assert_eq(passes("fail"), (int)n);
		cr_assert_eq(queue_app_info(q, "fail", &info), 0);
		cr_assert_eq(info.failures, n);
		delay = info.retry_due_ms - t;
		cr_assert(delay >= d - d / 5 && delay <= d,
			  "failure %u: delay %llu outside [%llu, %llu]", n,
			  (unsigned long long)delay,
			  (unsigned long long)(d - d / 5),
			  (unsigned long long)d);
		if (n > 7 && delay != prev_delay)
			varied = true;
		prev_delay = delay;
		/* Triggers during the backoff are absorbed by the retry. */
		cr_assert_eq(queue_enqueue(q, "fail"), 0);
		at(q, info.retry_due_ms - 1);
		cr_assert_eq(passes("fail"), (int)n);
		/* The other app's timer keeps running meanwhile. */
		cr_assert_gt(passes("ok"), ok_before);
		t = info.retry_due_ms;
		at(q, t);
	}
	/* Capped delays still differ: the jitter spreads them. */
	cr_assert(varied);
	cr_assert_eq(atomic_load(&rec_get("ok")->max_inflight), 1);
	finish(q);
}

Test(queue, backoff_resets_after_success)
{
	struct queue *q = start(1, 0);
	struct queue_app_info info;

	atomic_store(&fail_left, 3);
	cr_assert_eq(queue_set_app(q, "fail", 0, 0), 0);
	at(q, 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(queue_app_info(q, "fail", &info), 0);
		cr_assert_eq(info.failures, (unsigned)i + 1);
		at(q, info.retry_due_ms);
	}
	cr_assert_eq(passes("fail"), 4);
	cr_assert_eq(queue_app_info(q, "fail", &info), 0);
	cr_assert_eq(info.failures, 0);
	cr_assert_eq(info.retry_due_ms, 0);

	/* The next failure starts again at 5 s. */
	uint64_t t = atomic_load(&fake_now);
	atomic_store(&fail_left, 1);
	cr_assert_eq(queue_enqueue(q, "fail"), 0);
	at(q, t);
	cr_assert_eq(passes("fail"), 5);
	cr_assert_eq(queue_app_info(q, "fail", &info), 0);
	cr_assert_eq(info.failures, 1);
	cr_assert(info.retry_due_ms >= t + 4000 &&
		  info.retry_due_ms <= t + 5000);
	finish(q);
}

Test(queue, remove_stops_timers)
{
	struct queue *q = start(2, 0);

	cr_assert_eq(queue_set_app(q, "a", 100, 200), 0);
	cr_assert_eq(queue_set_app(q, "b", 100, 0), 0);
	at(q, 0);
	cr_assert_eq(queue_enqueue_after(q, "a", 50), 0);
	cr_assert_eq(queue_remove_app(q, "a"), 0);
	cr_assert_eq(queue_enqueue(q, "a"), ERR_NOTFOUND);
	at(q, 1000);
	cr_assert_eq(passes("a"), 1);
	cr_assert_eq(passes("b"), 2); /* the jump fires b once */
	finish(q);
}

Test(queue, remove_while_running)
{
	struct queue *q = start(2, 0);

	gate_close("a");
	cr_assert_eq(queue_set_app(q, "a", 100, 0), 0);
	gate_wait_entered(1);
	cr_assert_eq(queue_enqueue(q, "a"), 0); /* would rerun */
	cr_assert_eq(queue_remove_app(q, "a"), 0);
	cr_assert_eq(queue_enqueue(q, "a"), ERR_NOTFOUND);
	gate_release();
	at(q, 1000);
	cr_assert_eq(passes("a"), 1);
	finish(q);
}

Test(queue, set_again_while_removed_pass_runs)
{
	struct queue *q = start(4, 0);

	gate_close("a");
	cr_assert_eq(queue_set_app(q, "a", 0, 0), 0);
	gate_wait_entered(1);
	cr_assert_eq(queue_remove_app(q, "a"), 0);
	cr_assert_eq(queue_set_app(q, "a", 0, 0), 0);
	/* The new app's pass waits for the old one. */
	gate_release();
	at(q, 0);
	cr_assert_eq(passes("a"), 2);
	cr_assert_eq(atomic_load(&rec_get("a")->max_inflight), 1);
	finish(q);
}

struct stopper {
	struct queue *q;
	int rc;
};

static void *stop_main(void *arg)
{
	struct stopper *s = arg;

	s->rc = queue_stop(s->q, 20000);
	return NULL;
}

Test(queue, stop_waits_for_pass_in_flight)
{
	struct queue *q = start(1, 0);
	struct stopper s = {q, 1};
	pthread_t t;

	gate_close("a");
	cr_assert_eq(queue_set_app(q, "a", 0, 0), 0);
	gate_wait_entered(1);
	cr_assert_eq(queue_set_app(q, "b", 0, 0), 0); /* waits: dropped */
	/* Past the grace period the pass is still running. */
	cr_assert_eq(queue_stop(q, 20), ERR_TIMEOUT);
	cr_assert_eq(queue_set_app(q, "c", 0, 0), ERR_INVALID);
	cr_assert_eq(pthread_create(&t, NULL, stop_main, &s), 0);
	gate_release();
	pthread_join(t, NULL);
	cr_assert_eq(s.rc, 0);
	cr_assert_eq(passes("a"), 1);
	cr_assert_eq(atomic_load(&rec_get("a")->inflight), 0);
	cr_assert_eq(passes("b"), 0);
	cr_assert_eq(queue_stop(q, 0), 0); /* again: a no-op */
	queue_free(q);
}

static void *release_main(void *arg)
{
	gate_release();
	return arg;
}

Test(queue, free_waits_after_grace_timeout)
{
	struct queue *q = start(2, 0);
	pthread_t t;

	gate_close("a");
	cr_assert_eq(queue_set_app(q, "a", 0, 0), 0);
	gate_wait_entered(1);
	cr_assert_eq(queue_stop(q, 1), ERR_TIMEOUT);
	cr_assert_eq(pthread_create(&t, NULL, release_main, NULL), 0);
	queue_free(q); /* joins the worker once the pass ends */
	pthread_join(t, NULL);
	cr_assert_eq(passes("a"), 1);
	cr_assert_eq(atomic_load(&rec_get("a")->inflight), 0);
}

Test(queue, many_apps_two_workers)
{
	struct queue *q = start(2, 0);
	char name[16];

	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		cr_assert_eq(queue_set_app(q, name, 100 * (1 + i % 10),
					   i % 3 ? 0 : 700),
			     0);
	}
	for (uint64_t t = 0; t <= 5000; t += 100)
		at(q, t);
	for (int i = 0; i < 200; i++) {
		uint64_t poll = 100 * (1 + i % 10);
		int want = 1 + (int)(5000 / poll);
		struct rec *r;

		/* Resync firings not on a poll firing add a pass. */
		if (i % 3 == 0)
			for (uint64_t t = 700; t <= 5000; t += 700)
				if (t % poll)
					want++;
		snprintf(name, sizeof(name), "m%d", i);
		r = rec_get(name);
		cr_assert_eq(atomic_load(&r->passes), want, "%s: %d, want %d",
			     name, atomic_load(&r->passes), want);
		cr_assert_eq(atomic_load(&r->max_inflight), 1);
	}
	finish(q);
}
