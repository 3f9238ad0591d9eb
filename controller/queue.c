/*
 * queue: deduplicating work queue, per-app timers and retry backoff.
 *
 * All state lives under q->lock. Each app is in at most one of the states
 * "idle", "queued" (on the ready list) or "running"; the state flags below
 * say which, and the ready list is a FIFO so apps are served in trigger
 * order. Three condition variables, all on q->lock:
 *
 *   work_cond  workers wait for the ready list (or stop);
 *   timer_cond the timer thread waits for the next due time or a change;
 *   idle_cond  queue_wait_idle() and queue_stop() wait for passes to end.
 *
 * Condition variables use CLOCK_MONOTONIC for their timed waits, so wall
 * clock steps do not disturb the schedule.
 */
#include "controller/queue.h"
#include "util/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/banned.h" /* last */

#define NEVER UINT64_MAX

struct qapp {
	char *name;
	uint64_t poll_ms, resync_ms;			    /* 0: timer off */
	uint64_t poll_due, resync_due, kick_due, retry_due; /* NEVER: none */
	unsigned failures;
	uint64_t passes;
	bool queued;	   /* on the ready list */
	bool running;	   /* a worker runs its pass */
	bool rerun;	   /* triggered while running */
	bool removed;	   /* removed while running: freed when the pass ends */
	struct qapp *next; /* ready list */
};

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t work_cond, timer_cond, idle_cond;
	struct queue_options opts;
	uint64_t rng;

	struct qapp **apps; /* every app not removed, plus removed running */
	size_t napps, alloc;
	struct qapp *ready_head, *ready_tail;
	unsigned running;

	pthread_t *threads; /* workers, then the timer thread */
	unsigned nthreads;  /* started */
	unsigned live;	    /* workers and timer thread not yet returned */
	bool stopping;
	bool joined;
	bool sync_ok; /* the lock and conditions were initialised */
};

static uint64_t monotonic_ms(void *unused)
{
	(void)unused;
	return clk_mono_ms();
}

static uint64_t now(struct queue *q)
{
	return q->opts.now_ms(q->opts.clock_ctx);
}

/* xorshift64*: jitter needs spread, not cryptographic strength. */
static uint64_t rng_next(struct queue *q)
{
	uint64_t x = q->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	q->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

uint64_t queue_backoff_ms(unsigned failures, uint64_t base_ms, uint64_t max_ms)
{
	uint64_t d = base_ms;

	if (failures == 0)
		return 0;
	for (unsigned i = 1; i < failures && d < max_ms; i++)
		d = d > max_ms / 2 ? max_ms : d * 2;
	return d < max_ms ? d : max_ms;
}

/*
 * Jitter takes up to a fifth off the nominal delay rather than adding to
 * it, so the cap is never exceeded and apps failing together spread out.
 */
static uint64_t backoff_jittered(struct queue *q, unsigned failures)
{
	uint64_t d = queue_backoff_ms(failures, q->opts.backoff_base_ms,
				      q->opts.backoff_max_ms);

	return d - rng_next(q) % (d / 5 + 1);
}

/* Absolute time `t + d`, saturating below NEVER. */
static uint64_t due_after(uint64_t t, uint64_t d)
{
	return d >= NEVER - 1 - t ? NEVER - 1 : t + d;
}

/* A timer fired at `t`: its next period, skipping periods already past. */
static uint64_t next_period(uint64_t due, uint64_t period, uint64_t t)
{
	due = due_after(due, period);
	if (due <= t)
		due = due_after(t, period);
	return due;
}

static struct qapp *find(struct queue *q, const char *name)
{
	for (size_t i = 0; i < q->napps; i++)
		if (!q->apps[i]->removed && !strcmp(q->apps[i]->name, name))
			return q->apps[i];
	return NULL;
}

/* An entry removed while its pass runs, still owned by that worker. */
static struct qapp *find_removed(struct queue *q, const char *name)
{
	for (size_t i = 0; i < q->napps; i++)
		if (q->apps[i]->removed && !strcmp(q->apps[i]->name, name))
			return q->apps[i];
	return NULL;
}

static void app_free(struct qapp *a)
{
	if (a) {
		free(a->name);
		free(a);
	}
}

static void forget(struct queue *q, struct qapp *a)
{
	for (size_t i = 0; i < q->napps; i++) {
		if (q->apps[i] == a) {
			q->apps[i] = q->apps[--q->napps];
			break;
		}
	}
	app_free(a);
}

static void ready_push(struct queue *q, struct qapp *a)
{
	a->queued = true;
	a->next = NULL;
	if (q->ready_tail)
		q->ready_tail->next = a;
	else
		q->ready_head = a;
	q->ready_tail = a;
	pthread_cond_signal(&q->work_cond);
}

static struct qapp *ready_pop(struct queue *q)
{
	struct qapp *a = q->ready_head;

	if (a) {
		q->ready_head = a->next;
		if (!q->ready_head)
			q->ready_tail = NULL;
		a->next = NULL;
		a->queued = false;
	}
	return a;
}

static void ready_unlink(struct queue *q, struct qapp *a)
{
	struct qapp **pp = &q->ready_head, *prev = NULL;

	while (*pp && *pp != a) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (!*pp)
		return;
	*pp = a->next;
	if (q->ready_tail == a)
		q->ready_tail = prev;
	a->next = NULL;
	a->queued = false;
}

/*
 * One trigger of `a`, with the deduplication rules: a pending retry absorbs
 * it, a running pass gets a rerun, a queued app stays queued once.
 */
static void trigger(struct queue *q, struct qapp *a)
{
	if (a->retry_due != NEVER || a->queued)
		return;
	if (a->running)
		a->rerun = true;
	else if (!q->stopping)
		ready_push(q, a);
}

/*
 * Fire every timer due at `t`, and return the earliest due time left. The
 * retry is looked at first: once it fires, the other timers due at the
 * same time coalesce with it instead of being absorbed.
 */
static uint64_t fire_due(struct queue *q, uint64_t t)
{
	uint64_t next = NEVER;

	for (size_t i = 0; i < q->napps; i++) {
		struct qapp *a = q->apps[i];
		bool fire = false;

		if (a->removed)
			continue;
		if (a->retry_due <= t) {
			a->retry_due = NEVER;
			fire = true;
		}
		if (a->kick_due <= t) {
			a->kick_due = NEVER;
			fire = true;
		}
		if (a->poll_ms && a->poll_due <= t) {
			a->poll_due = next_period(a->poll_due, a->poll_ms, t);
			fire = true;
		}
		if (a->resync_ms && a->resync_due <= t) {
			a->resync_due =
				next_period(a->resync_due, a->resync_ms, t);
			fire = true;
		}
		if (fire)
			trigger(q, a);
		if (a->retry_due < next)
			next = a->retry_due;
		if (a->kick_due < next)
			next = a->kick_due;
		if (a->poll_ms && a->poll_due < next)
			next = a->poll_due;
		if (a->resync_ms && a->resync_due < next)
			next = a->resync_due;
	}
	return next;
}

static void *timer_main(void *arg)
{
	struct queue *q = arg;

	pthread_mutex_lock(&q->lock);
	while (!q->stopping) {
		uint64_t t = now(q);
		uint64_t next = fire_due(q, t);

		if (next == NEVER) {
			pthread_cond_wait(&q->timer_cond, &q->lock);
		} else {
			struct timespec ts = clk_mono_after_ms(next - t);

			pthread_cond_timedwait(&q->timer_cond, &q->lock, &ts);
		}
	}
	q->live--;
	pthread_cond_broadcast(&q->idle_cond);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

static void *worker_main(void *arg)
{
	struct queue *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct qapp *a;
		int rc;

		while (!q->stopping && !q->ready_head)
			pthread_cond_wait(&q->work_cond, &q->lock);
		if (q->stopping)
			break;
		a = ready_pop(q);
		a->running = true;
		a->rerun = false;
		q->running++;
		pthread_mutex_unlock(&q->lock);

		rc = q->opts.reconcile(a->name, q->opts.ctx);

		pthread_mutex_lock(&q->lock);
		a->running = false;
		a->passes++;
		q->running--;
		if (a->removed) {
			forget(q, a);
		} else if (rc) {
			/* The retry stands in for any trigger of the pass. */
			a->failures++;
			a->rerun = false;
			a->retry_due = due_after(
				now(q), backoff_jittered(q, a->failures));
			pthread_cond_signal(&q->timer_cond);
		} else {
			a->failures = 0;
			if (a->rerun) {
				a->rerun = false;
				trigger(q, a);
			}
		}
		pthread_cond_broadcast(&q->idle_cond);
	}
	q->live--;
	pthread_cond_broadcast(&q->idle_cond);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

static int check_name(const char *name)
{
	if (!name || !*name)
		return ERR_INVALID;
	if (strlen(name) > QUEUE_NAME_MAX)
		return ERR_LIMIT;
	return 0;
}

int queue_new(struct queue **out, const struct queue_options *opts,
	      struct err *err)
{
	struct queue *q = NULL;
	pthread_condattr_t ca;
	unsigned want;
	int error = 0, rc;

	*out = NULL;
	if (!opts || opts->version != QUEUE_OPTIONS_VERSION ||
	    !opts->reconcile) {
		error = err_set(err, ERR_INVALID,
				"queue: options need version and reconcile");
		goto out;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		error = err_set(err, ERR_NOMEM, "queue: out of memory");
		goto out;
	}
	q->opts = *opts;
	if (!q->opts.workers)
		q->opts.workers = 1;
	if (!q->opts.now_ms)
		q->opts.now_ms = monotonic_ms;
	if (!q->opts.backoff_base_ms)
		q->opts.backoff_base_ms = QUEUE_BACKOFF_BASE_MS;
	if (!q->opts.backoff_max_ms)
		q->opts.backoff_max_ms = QUEUE_BACKOFF_MAX_MS;
	q->rng = q->opts.seed ? q->opts.seed
			      : (monotonic_ms(NULL) * 0x9E3779B97F4A7C15ULL) ^
					(uint64_t)getpid();
	if (!q->rng)
		q->rng = 1;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->work_cond, &ca);
	pthread_cond_init(&q->timer_cond, &ca);
	pthread_cond_init(&q->idle_cond, &ca);
	pthread_condattr_destroy(&ca);
	q->sync_ok = true;

	want = q->opts.workers + 1;
	q->threads = calloc(want, sizeof(*q->threads));
	if (!q->threads) {
		error = err_set(err, ERR_NOMEM, "queue: out of memory");
		goto out;
	}
	pthread_mutex_lock(&q->lock);
	for (; q->nthreads < want; q->nthreads++) {
		void *(*fn)(void *) = q->nthreads < q->opts.workers
					      ? worker_main
					      : timer_main;

		rc = pthread_create(&q->threads[q->nthreads], NULL, fn, q);
		if (rc) {
			error = err_set(err, ERR_IO,
					"queue: starting thread %u: %s",
					q->nthreads, err_errno_str(rc));
			break;
		}
		q->live++;
	}
	pthread_mutex_unlock(&q->lock);
out:
	if (error < 0)
		queue_free(q);
	else
		*out = q;
	return error;
}

int queue_set_app(struct queue *q, const char *name, uint64_t poll_interval_ms,
		  uint64_t resync_interval_ms)
{
	struct qapp *a;
	uint64_t t;
	int error;

	if ((error = check_name(name)) < 0)
		return error;
	pthread_mutex_lock(&q->lock);
	if (q->stopping) {
		error = ERR_INVALID;
		goto out;
	}
	t = now(q);
	a = find(q, name);
	if (!a && (a = find_removed(q, name))) {
		/*
		 * Removed while its pass runs, and set again: revive the
		 * entry, so that the new app's first pass waits for the old
		 * one instead of running beside it.
		 */
		a->removed = false;
		a->rerun = true;
		a->failures = 0;
		a->poll_ms = poll_interval_ms;
		a->resync_ms = resync_interval_ms;
		a->poll_due = due_after(t, poll_interval_ms);
		a->resync_due = due_after(t, resync_interval_ms);
		a->kick_due = NEVER;
		a->retry_due = NEVER;
		pthread_cond_signal(&q->timer_cond);
		goto out;
	}
	if (a) {
		if (a->poll_ms != poll_interval_ms)
			a->poll_due = due_after(t, poll_interval_ms);
		if (a->resync_ms != resync_interval_ms)
			a->resync_due = due_after(t, resync_interval_ms);
		a->poll_ms = poll_interval_ms;
		a->resync_ms = resync_interval_ms;
		pthread_cond_signal(&q->timer_cond);
		goto out;
	}
	if (q->napps == q->alloc) {
		size_t n = q->alloc ? q->alloc * 2 : 16;
		struct qapp **p = realloc(q->apps, n * sizeof(*p));

		if (!p) {
			error = ERR_NOMEM;
			goto out;
		}
		q->apps = p;
		q->alloc = n;
	}
	a = calloc(1, sizeof(*a));
	if (!a || !(a->name = strdup(name))) {
		free(a);
		error = ERR_NOMEM;
		goto out;
	}
	a->poll_ms = poll_interval_ms;
	a->resync_ms = resync_interval_ms;
	a->poll_due = due_after(t, poll_interval_ms);
	a->resync_due = due_after(t, resync_interval_ms);
	a->kick_due = NEVER;
	a->retry_due = NEVER;
	q->apps[q->napps++] = a;
	trigger(q, a);
	pthread_cond_signal(&q->timer_cond);
out:
	pthread_mutex_unlock(&q->lock);
	return error;
}

int queue_remove_app(struct queue *q, const char *name)
{
	struct qapp *a;
	int error = 0;

	pthread_mutex_lock(&q->lock);
	a = name ? find(q, name) : NULL;
	if (!a) {
		error = ERR_NOTFOUND;
		goto out;
	}
	if (a->queued)
		ready_unlink(q, a);
	if (a->running)
		a->removed = true; /* the worker frees it */
	else
		forget(q, a);
	pthread_cond_broadcast(&q->idle_cond);
out:
	pthread_mutex_unlock(&q->lock);
	return error;
}

int queue_enqueue_after(struct queue *q, const char *name, uint64_t delay_ms)
{
	struct qapp *a;
	int error = 0;

	pthread_mutex_lock(&q->lock);
	a = name ? find(q, name) : NULL;
	if (!a) {
		error = ERR_NOTFOUND;
		goto out;
	}
	if (!delay_ms) {
		trigger(q, a);
	} else {
		uint64_t due = due_after(now(q), delay_ms);

		if (due < a->kick_due) {
			a->kick_due = due;
			pthread_cond_signal(&q->timer_cond);
		}
	}
out:
	pthread_mutex_unlock(&q->lock);
	return error;
}

int queue_enqueue(struct queue *q, const char *name)
{
	return queue_enqueue_after(q, name, 0);
}

int queue_app_info(struct queue *q, const char *name,
		   struct queue_app_info *info)
{
	struct qapp *a;
	int error = 0;

	memset(info, 0, sizeof(*info));
	pthread_mutex_lock(&q->lock);
	a = name ? find(q, name) : NULL;
	if (!a) {
		error = ERR_NOTFOUND;
		goto out;
	}
	info->queued = a->queued;
	info->running = a->running;
	info->rerun = a->rerun;
	info->failures = a->failures;
	info->retry_due_ms = a->retry_due == NEVER ? 0 : a->retry_due;
	info->passes = a->passes;
out:
	pthread_mutex_unlock(&q->lock);
	return error;
}

int queue_wait_idle(struct queue *q, uint64_t timeout_ms)
{
	struct timespec ts = clk_mono_after_ms(timeout_ms);
	int error = 0;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		if (!q->stopping)
			fire_due(q, now(q));
		if (!q->running && (!q->ready_head || q->stopping))
			break;
		if (pthread_cond_timedwait(&q->idle_cond, &q->lock, &ts) ==
		    ETIMEDOUT) {
			error = ERR_TIMEOUT;
			break;
		}
	}
	/* The timer thread re-reads the due times it may have missed. */
	pthread_cond_signal(&q->timer_cond);
	pthread_mutex_unlock(&q->lock);
	return error;
}

/* Join every thread; only once they have all returned or will return. */
static void join_all(struct queue *q)
{
	for (unsigned i = 0; i < q->nthreads; i++)
		pthread_join(q->threads[i], NULL);
	q->joined = true;
}

int queue_stop(struct queue *q, uint64_t grace_ms)
{
	struct timespec ts = clk_mono_after_ms(grace_ms);
	int error = 0;

	pthread_mutex_lock(&q->lock);
	q->stopping = true;
	/* Apps still waiting are dropped, not run. */
	while (ready_pop(q))
		;
	pthread_cond_broadcast(&q->work_cond);
	pthread_cond_broadcast(&q->timer_cond);
	while (q->live) {
		if (pthread_cond_timedwait(&q->idle_cond, &q->lock, &ts) ==
		    ETIMEDOUT) {
			error = ERR_TIMEOUT;
			break;
		}
	}
	pthread_mutex_unlock(&q->lock);
	if (!error && !q->joined)
		join_all(q);
	return error;
}

void queue_free(struct queue *q)
{
	if (!q)
		return;
	if (q->sync_ok) {
		pthread_mutex_lock(&q->lock);
		q->stopping = true;
		while (ready_pop(q))
			;
		pthread_cond_broadcast(&q->work_cond);
		pthread_cond_broadcast(&q->timer_cond);
		pthread_mutex_unlock(&q->lock);
		if (!q->joined)
			join_all(q);
		pthread_mutex_destroy(&q->lock);
		pthread_cond_destroy(&q->work_cond);
		pthread_cond_destroy(&q->timer_cond);
		pthread_cond_destroy(&q->idle_cond);
	}
	for (size_t i = 0; i < q->napps; i++)
		app_free(q->apps[i]);
	free(q->apps);
	free(q->threads);
	free(q);
}
