/*
 * queue: the controller's scheduler. A deduplicating work queue of app
 * names served by a pool of worker threads, with per-app poll and resync
 * timers, debounced triggers and per-app retry backoff.
 *
 * The queue knows nothing about Git or Kubernetes: each pass is a call of
 * the `reconcile` callback with the app's name. The guarantees:
 *
 * - An app waiting to run is queued at most once: triggering it again
 *   while it waits does nothing.
 * - An app is never reconciled by two workers at once. A trigger that
 *   arrives while its pass runs makes it run once more after the pass.
 * - A pass that returns non-zero schedules a retry after a capped
 *   exponential backoff with jitter (by default 5 s doubling to 5 min;
 *   the n-th consecutive failure waits between 80% and 100% of
 *   min(base * 2^(n-1), max)). Until the retry runs, every other trigger
 *   of that app (timers, queue_enqueue) is absorbed by it, so a failing
 *   app cannot be hammered by watch events. A successful pass resets the
 *   backoff. Other apps are not affected.
 * - Poll and resync timers are periodic from the moment queue_set_app()
 *   armed them; a period missed (the app ran long, or was in backoff) is
 *   skipped, not made up for.
 *
 * Locking: one mutex guards all queue state; it is never held while the
 * reconcile callback runs, so the callback may call queue_enqueue() and the
 * other functions below (for any app, including its own). The clock
 * callback is called with the mutex held and must not call back into the
 * queue. All functions are safe to call from any thread, except
 * queue_stop() and queue_free(), which belong to the thread that owns the
 * queue (never from the callback); queue_free() is the last call.
 *
 * Time: every due time is measured with the clock of the options
 * (milliseconds, monotonic). Tests pass a fake clock, move it forward and
 * call queue_wait_idle(), which runs everything due at the fake time and
 * returns once no pass is running or waiting, so schedules are asserted
 * exactly without sleeping. The timer thread waits on a condition variable
 * (real monotonic time) until the next due time or a change; it never
 * polls.
 */
#ifndef CONTROLLER_QUEUE_H
#define CONTROLLER_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

#define QUEUE_OPTIONS_VERSION 1

/* Defaults of the backoff, in milliseconds. */
#define QUEUE_BACKOFF_BASE_MS 5000
#define QUEUE_BACKOFF_MAX_MS  300000

/* App names longer than this are refused (Kubernetes names are <= 253). */
#define QUEUE_NAME_MAX 253

struct queue_options {
	unsigned version; /* QUEUE_OPTIONS_VERSION */
	unsigned workers; /* worker threads; 0 means 1 */
	/*
	 * One pass for `app`; 0 on success, anything else is a failure and
	 * schedules a retry. Called without the queue's lock held.
	 */
	int (*reconcile)(const char *app, void *ctx);
	void *ctx;
	/* Monotonic milliseconds; NULL means CLOCK_MONOTONIC. */
	uint64_t (*now_ms)(void *clock_ctx);
	void *clock_ctx;
	uint64_t backoff_base_ms; /* 0 means QUEUE_BACKOFF_BASE_MS */
	uint64_t backoff_max_ms;  /* 0 means QUEUE_BACKOFF_MAX_MS */
	/* Seed of the jitter; 0 means one drawn from the time and pid. */
	uint64_t seed;
};

#define QUEUE_OPTIONS_INIT                                                \
	{                                                                 \
		QUEUE_OPTIONS_VERSION, 0, NULL, NULL, NULL, NULL, 0, 0, 0 \
	}

struct queue;

/* What queue_app_info() reports about one app. */
struct queue_app_info {
	bool queued;	       /* waiting for a worker */
	bool running;	       /* a pass is in flight */
	bool rerun;	       /* triggered during the pass: runs again */
	unsigned failures;     /* consecutive failed passes */
	uint64_t retry_due_ms; /* when the retry runs; 0 when none pending */
	uint64_t passes;       /* passes run since the app was set */
};

/*
 * Start a queue: its worker threads and the timer thread. `opts->reconcile`
 * is required. On success the caller owns *out; stop it with queue_stop()
 * and free it with queue_free().
 */
int queue_new(struct queue **out, const struct queue_options *opts,
	      struct err *err);

/*
 * Add the app `name`, or change its timers. Intervals are in milliseconds,
 * 0 disables that timer. A new app is triggered at once; for an existing
 * app a changed interval re-arms that timer from now (an unchanged one
 * keeps its schedule). Returns ERR_INVALID for an empty name, ERR_LIMIT for
 * a name over QUEUE_NAME_MAX, ERR_NOMEM, or ERR_INVALID after queue_stop().
 */
int queue_set_app(struct queue *q, const char *name, uint64_t poll_interval_ms,
		  uint64_t resync_interval_ms);

/*
 * Remove the app: its timers stop and it leaves the queue. A pass in flight
 * finishes (the name stays valid for it) and is not followed by another.
 * Returns ERR_NOTFOUND when the app is not set.
 */
int queue_remove_app(struct queue *q, const char *name);

/*
 * Trigger a pass of `name` now (watch events, webhooks). Deduplicated as
 * described above; during a retry backoff the trigger is absorbed by the
 * pending retry. Returns ERR_NOTFOUND when the app is not set.
 */
int queue_enqueue(struct queue *q, const char *name);

/*
 * Trigger a pass of `name` after `delay_ms` (debounce). Calls before the
 * pass coalesce: the earliest due time wins. A delay of 0 is
 * queue_enqueue(). Returns ERR_NOTFOUND when the app is not set.
 */
int queue_enqueue_after(struct queue *q, const char *name, uint64_t delay_ms);

/* Copy the state of `name` into *info; ERR_NOTFOUND when not set. */
int queue_app_info(struct queue *q, const char *name,
		   struct queue_app_info *info);

/*
 * Run everything due at the clock's current time and wait until no pass is
 * running or waiting to run (timers due later do not count), at most
 * `timeout_ms` of real time. Returns 0, or ERR_TIMEOUT.
 */
int queue_wait_idle(struct queue *q, uint64_t timeout_ms);

/*
 * Stop: no new pass starts (apps still waiting are dropped), passes in
 * flight finish, threads are joined. Waits at most `grace_ms` of real time
 * for the passes in flight; if one is still running then, returns
 * ERR_TIMEOUT and leaves the threads running (queue_free() then waits for
 * them; a daemon past its grace period exits instead). Calling it again is
 * allowed.
 */
int queue_stop(struct queue *q, uint64_t grace_ms);

/*
 * Stop (waiting as long as passes take) if not stopped, and free the queue.
 * Accepts NULL.
 */
void queue_free(struct queue *q);

/*
 * The nominal backoff before the retry after `failures` consecutive
 * failures (>= 1): min(base * 2^(failures - 1), max), without jitter.
 */
uint64_t queue_backoff_ms(unsigned failures, uint64_t base_ms, uint64_t max_ms);

#endif
