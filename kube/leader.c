/*
 * Leader election over a Lease, as client-go's leaderelection does it:
 * read the Lease, decide from what this replica observed and when (its
 * own monotonic clock), and write the whole object back with the
 * resourceVersion read, so that the API server arbitrates races.
 * See kube/kube.h for the rules.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "util/clock.h"

#include "util/banned.h" /* last */

/* client-go's JitterFactor: candidates wait retry * (1 + up to 1.2). */
#define JITTER_TENTHS 12
#define IDENTITY_MAX  256
#define LEASE_S_MAX   (366LL * 86400)

struct kube_leader {
	struct kube_client *client;
	struct kube_resource res; /* leases.coordination.k8s.io/v1 */
	char *ns;
	char *name;
	char *identity;
	long lease_ms, renew_ms, retry_ms;
	long long lease_s; /* leaseDurationSeconds written */
	void (*started_leading)(void *ctx);
	void (*stopped_leading)(void *ctx);
	void (*new_leader)(const char *identity, void *ctx);
	void (*failed)(const struct err *err, void *ctx);
	void *ctx;

	pthread_mutex_t lock;
	pthread_cond_t wake; /* on CLOCK_MONOTONIC */
	/*
	 * Held across a change of `leading` and its callback, so that
	 * started_leading and stopped_leading come in order, in pairs,
	 * whichever thread calls them.
	 */
	pthread_mutex_t cb_lock;
	pthread_t thread;
	pthread_t watchdog; /* stops leading at the renew deadline */
	/* Under lock. */
	bool started;
	bool stopping;
	bool release;
	bool leading;
	long long renewed_ms; /* start of the last successful write */

	/* The elector thread's own, read by kube_leader_stop() after the join.
	 */
	json_t *observed;      /* the Lease as last read or written */
	long long observed_ms; /* when its spec last changed */
	char *seen_holder;     /* holder last reported to new_leader */
	uint64_t rng;	       /* jitter */
	int release_error;
	struct err release_err;
};

/* kube's MicroTime in UTC: "2026-11-29T10:00:00.000000Z". */
/* The monotonic clock as the signed milliseconds this file computes in. */
static long long now_ms(void)
{
	return (long long)clk_mono_ms();
}

static void micro_time(char *out, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char sec[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, size, "%.20s.%06uZ", sec,
		 (unsigned)(ts.tv_nsec / 1000) % 1000000u);
}

static uint64_t random_u64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint64_t)now_ms() ^ ((uint64_t)getpid() << 32);
	return v ? v : 0x9E3779B97F4A7C15ull;
}

/* A uniform draw in [0, n) (xorshift64*), n > 0. */
static long draw(struct kube_leader *l, long n)
{
	l->rng ^= l->rng >> 12;
	l->rng ^= l->rng << 25;
	l->rng ^= l->rng >> 27;
	return (long)((l->rng * 0x2545F4914F6CDD1Dull) % (uint64_t)n);
}

/* client-go's default identity: the host name, "_", a random suffix. */
static char *default_identity(void)
{
	char host[IDENTITY_MAX], *out;
	size_t size;

	if (gethostname(host, sizeof(host)) < 0 || !*host)
		snprintf(host, sizeof(host), "syncd");
	host[sizeof(host) - 1] = '\0';
	size = strlen(host) + 18;
	if (!(out = malloc(size)))
		return NULL;
	snprintf(out, size, "%s_%016llx", host,
		 (unsigned long long)random_u64());
	return out;
}

/* ------------------------------------------------------------------ */
/* One attempt */

static const char *spec_str(const json_t *lease, const char *key)
{
	const char *v = json_string_value(
		json_object_get(json_object_get(lease, "spec"), key));

	return v ? v : "";
}

static long long spec_int(const json_t *lease, const char *key)
{
	return json_integer_value(
		json_object_get(json_object_get(lease, "spec"), key));
}

static void report(struct kube_leader *l, struct err *e)
{
	if (l->failed && err_count(e))
		l->failed(e, l->ctx);
	err_reset(e);
}

/*
 * Remember `lease` as observed now when its record differs from the one
 * observed before: the lease duration counts from the last change this
 * replica saw, not from the server's renewTime. Tells new_leader about a
 * new holder.
 */
static void observe(struct kube_leader *l, json_t *lease)
{
	json_t *spec = json_object_get(lease, "spec");
	const char *holder = spec_str(lease, "holderIdentity");
	char *copy;

	if (!l->observed ||
	    !json_equal(json_object_get(l->observed, "spec"), spec))
		l->observed_ms = now_ms();
	json_decref(l->observed);
	l->observed = json_incref(lease);
	if (l->seen_holder && !strcmp(l->seen_holder, holder))
		return;
	if (!(copy = strdup(holder)))
		return;
	free(l->seen_holder);
	l->seen_holder = copy;
	if (l->new_leader)
		l->new_leader(holder, l->ctx);
}

/* Fill the record of `lease` (which has a "spec" object) for writing. */
static void set_record(json_t *lease, const char *holder, long long dur_s,
		       const char *acquired, const char *renewed,
		       long long transitions)
{
	json_t *spec = json_object_get(lease, "spec");

	json_object_set_new(spec, "holderIdentity", json_string(holder));
	json_object_set_new(spec, "leaseDurationSeconds", json_integer(dur_s));
	json_object_set_new(spec, "acquireTime", json_string(acquired));
	json_object_set_new(spec, "renewTime", json_string(renewed));
	json_object_set_new(spec, "leaseTransitions",
			    json_integer(transitions));
}

/*
 * Create the Lease held by us. 1 when created, else ERR_* (ERR_EXISTS:
 * another candidate created it first).
 */
static int create_lease(struct kube_leader *l, struct err *e)
{
	json_t *lease, *out = NULL;
	char now[40];
	int error;

	micro_time(now, sizeof(now));
	lease = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{}}", "apiVersion",
			  "coordination.k8s.io/v1", "kind", "Lease", "metadata",
			  "name", l->name, "namespace", l->ns, "spec");
	if (!lease)
		return err_set(e, ERR_NOMEM, "lease %s/%s: out of memory",
			       l->ns, l->name);
	set_record(lease, l->identity, l->lease_s, now, now, 0);
	error = kube_create(l->client, &l->res, lease, &out, e);
	if (!error) {
		observe(l, out);
		error = 1;
	}
	json_decref(out);
	json_decref(lease);
	return error;
}

/*
 * client-go's tryAcquireOrRenew(): 1 when the Lease is ours after this
 * attempt (taken, created or renewed), 0 when another holder's Lease is
 * still valid, ERR_* when a request failed (ERR_EXISTS: another
 * candidate wrote first).
 */
static int try_acquire_or_renew(struct kube_leader *l, struct err *e)
{
	json_t *lease = NULL, *next = NULL, *out = NULL;
	const char *holder, *acquired;
	long long dur_s, transitions;
	char now[40];
	int error;

	error = kube_get(l->client, &l->res, l->ns, l->name, &lease, e);
	if (error == ERR_NOTFOUND) {
		err_reset(e);
		return create_lease(l, e);
	}
	if (error < 0)
		return error;
	if (!json_is_object(json_object_get(lease, "spec")))
		json_object_set_new(lease, "spec", json_object());
	observe(l, lease);

	holder = spec_str(lease, "holderIdentity");
	/* Another writer's value, kept within sane bounds (a year). */
	dur_s = spec_int(lease, "leaseDurationSeconds");
	if (dur_s < 0)
		dur_s = 0;
	if (dur_s > LEASE_S_MAX)
		dur_s = LEASE_S_MAX;
	if (*holder && strcmp(holder, l->identity) &&
	    now_ms() < l->observed_ms + dur_s * 1000) {
		error = 0;
		goto out;
	}

	micro_time(now, sizeof(now));
	transitions = spec_int(lease, "leaseTransitions");
	acquired = spec_str(lease, "acquireTime");
	if (strcmp(holder, l->identity) || !*acquired) {
		/* Taken over (or from a released Lease): a transition. */
		if (strcmp(holder, l->identity))
			transitions++;
		acquired = now;
	}
	if (!(next = json_deep_copy(lease))) {
		error = err_set(e, ERR_NOMEM, "lease %s/%s: out of memory",
				l->ns, l->name);
		goto out;
	}
	set_record(next, l->identity, l->lease_s, acquired, now, transitions);
	error = kube_update(l->client, &l->res, next, &out, e);
	if (!error) {
		observe(l, out);
		error = 1;
	}
out:
	json_decref(out);
	json_decref(next);
	json_decref(lease);
	return error;
}

/*
 * client-go's release(): write the observed Lease back with no holder
 * and leaseDurationSeconds 1, keeping leaseTransitions, only while the
 * record we last wrote still names us.
 */
static int release_lease(struct kube_leader *l, struct err *e)
{
	json_t *next, *out = NULL;
	char now[40];
	int error;

	if (!l->observed ||
	    strcmp(spec_str(l->observed, "holderIdentity"), l->identity))
		return 0;
	if (!(next = json_deep_copy(l->observed)))
		return err_set(e, ERR_NOMEM, "lease %s/%s: out of memory",
			       l->ns, l->name);
	micro_time(now, sizeof(now));
	set_record(next, "", 1, now, now,
		   spec_int(l->observed, "leaseTransitions"));
	error = kube_update(l->client, &l->res, next, &out, e);
	if (!error)
		observe(l, out);
	json_decref(out);
	json_decref(next);
	return error;
}

/* ------------------------------------------------------------------ */
/* The elector thread */

/* Sleep until `deadline` (monotonic ms) or a stop. True when stopping. */
static bool nap_until(struct kube_leader *l, long long deadline)
{
	struct timespec ts;
	bool stopping;

	ts.tv_sec = (time_t)(deadline / 1000);
	ts.tv_nsec = (long)(deadline % 1000) * 1000000L;
	pthread_mutex_lock(&l->lock);
	while (!l->stopping && now_ms() < deadline)
		if (pthread_cond_timedwait(&l->wake, &l->lock, &ts) ==
		    ETIMEDOUT)
			break;
	stopping = l->stopping;
	pthread_mutex_unlock(&l->lock);
	return stopping;
}

static bool stopping(struct kube_leader *l)
{
	bool v;

	pthread_mutex_lock(&l->lock);
	v = l->stopping;
	pthread_mutex_unlock(&l->lock);
	return v;
}

/*
 * Lead from `start` on, or stop leading (with `expired`, only once the
 * renew deadline has passed since the last renewal). True when the state
 * changed: its callback has then run, without l->lock held.
 */
static bool set_leading(struct kube_leader *l, bool leading, long long start,
			bool expired)
{
	bool change;

	pthread_mutex_lock(&l->cb_lock);
	pthread_mutex_lock(&l->lock);
	change = l->leading != leading &&
		 (!expired || now_ms() - l->renewed_ms >= l->renew_ms);
	if (change) {
		l->leading = leading;
		if (leading)
			l->renewed_ms = start;
		pthread_cond_broadcast(&l->wake);
	}
	pthread_mutex_unlock(&l->lock);
	if (change && leading && l->started_leading)
		l->started_leading(l->ctx);
	if (change && !leading && l->stopped_leading)
		l->stopped_leading(l->ctx);
	pthread_mutex_unlock(&l->cb_lock);
	return change;
}

/* Whether leading, and since when the last renewal counts. */
static bool leading_now(struct kube_leader *l, long long *renewed)
{
	bool v;

	pthread_mutex_lock(&l->lock);
	v = l->leading;
	*renewed = l->renewed_ms;
	pthread_mutex_unlock(&l->lock);
	return v;
}

/*
 * The renew deadline is kept by a thread of its own: the elector's
 * request may hang (a partition drops packets silently) for longer than
 * the deadline, and the work must stop before any standby could take the
 * Lease, not when that request gives up.
 */
static void *watchdog(void *arg)
{
	struct kube_leader *l = arg;
	struct timespec ts;
	long long deadline;

	pthread_mutex_lock(&l->lock);
	while (!l->stopping) {
		if (!l->leading) {
			pthread_cond_wait(&l->wake, &l->lock);
			continue;
		}
		deadline = l->renewed_ms + l->renew_ms;
		if (now_ms() >= deadline) {
			pthread_mutex_unlock(&l->lock);
			set_leading(l, false, 0, true);
			pthread_mutex_lock(&l->lock);
			continue;
		}
		ts.tv_sec = (time_t)(deadline / 1000);
		ts.tv_nsec = (long)(deadline % 1000) * 1000000L;
		pthread_cond_timedwait(&l->wake, &l->lock, &ts);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

static void *elector(void *arg)
{
	struct kube_leader *l = arg;
	struct err e = ERR_INIT;
	long long start, next, renewed;
	bool leading;
	int rc;

	while (!stopping(l)) {
		start = now_ms();
		rc = try_acquire_or_renew(l, &e);
		report(l, &e);
		if (rc == 1 && now_ms() - start < l->renew_ms) {
			/*
			 * The record names us from `start` on (the write
			 * reached the server after it), also when the
			 * watchdog gave up meanwhile: lead again.
			 */
			pthread_mutex_lock(&l->lock);
			leading = l->leading;
			if (leading)
				l->renewed_ms = start;
			pthread_mutex_unlock(&l->lock);
			if (!leading)
				set_leading(l, true, start, false);
		} else {
			/*
			 * Someone else holds the Lease, or no renewal got
			 * through within the deadline: before any standby
			 * may take over, stop acting as the leader (the
			 * watchdog does it at the deadline when this
			 * attempt hung past it).
			 */
			set_leading(l, false, 0, rc != 0);
		}
		next = now_ms() + l->retry_ms;
		if (!leading_now(l, &renewed))
			next += draw(l, l->retry_ms * JITTER_TENTHS / 10 + 1);
		else if (renewed + l->renew_ms < next)
			next = renewed + l->renew_ms;
		nap_until(l, next);
	}
	/* The work stops before the Lease is handed on. */
	if (set_leading(l, false, 0, false) && l->release)
		l->release_error = release_lease(l, &l->release_err);
	err_release(&e);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Public */

int kube_leader_new(struct kube_leader **out, struct kube_client *client,
		    const struct kube_leader_options *opts, struct err *err)
{
	struct kube_leader *l = NULL;
	pthread_condattr_t attr;
	int error = 0;

	*out = NULL;
	if (!opts || opts->version != KUBE_LEADER_OPTIONS_VERSION) {
		error = err_set(err, ERR_INVALID,
				"leader election: options version %u, want %u",
				opts ? opts->version : 0,
				KUBE_LEADER_OPTIONS_VERSION);
		goto out;
	}
	if (!opts->namespace || !*opts->namespace || !opts->name ||
	    !*opts->name) {
		error = err_set(err, ERR_INVALID,
				"leader election: no Lease namespace or name");
		goto out;
	}
	if (opts->identity &&
	    (!*opts->identity || strlen(opts->identity) >= IDENTITY_MAX)) {
		error = err_set(err, ERR_INVALID,
				"lease %s/%s: identity empty or too long",
				opts->namespace, opts->name);
		goto out;
	}
	if (!(l = calloc(1, sizeof(*l)))) {
		error = err_set(err, ERR_NOMEM,
				"leader election: out of memory");
		goto out;
	}
	l->client = client;
	l->lease_ms =
		opts->lease_ms ? opts->lease_ms : KUBE_LEADER_LEASE_MS_DEFAULT;
	l->renew_ms =
		opts->renew_ms ? opts->renew_ms : KUBE_LEADER_RENEW_MS_DEFAULT;
	l->retry_ms =
		opts->retry_ms ? opts->retry_ms : KUBE_LEADER_RETRY_MS_DEFAULT;
	if (l->retry_ms <= 0 || l->renew_ms <= 0 ||
	    l->lease_ms <= l->renew_ms ||
	    l->renew_ms * 10 <= l->retry_ms * JITTER_TENTHS ||
	    l->lease_ms > 86400000L) {
		error = err_set(
			err, ERR_INVALID,
			"lease %s/%s: want lease (%ld ms) > renew "
			"deadline (%ld ms) > 1.2 * retry period (%ld ms)",
			opts->namespace, opts->name, l->lease_ms, l->renew_ms,
			l->retry_ms);
		goto out;
	}
	l->lease_s = (l->lease_ms + 999) / 1000;
	l->started_leading = opts->started_leading;
	l->stopped_leading = opts->stopped_leading;
	l->new_leader = opts->new_leader;
	l->failed = opts->failed;
	l->ctx = opts->ctx;
	l->rng = random_u64();
	l->ns = strdup(opts->namespace);
	l->name = strdup(opts->name);
	l->identity =
		opts->identity ? strdup(opts->identity) : default_identity();
	l->res.group = strdup("coordination.k8s.io");
	l->res.version = strdup("v1");
	l->res.name = strdup("leases");
	l->res.kind = strdup("Lease");
	l->res.namespaced = true;
	if (!l->ns || !l->name || !l->identity || !l->res.group ||
	    !l->res.version || !l->res.name || !l->res.kind) {
		error = err_set(err, ERR_NOMEM,
				"leader election: out of memory");
		goto out;
	}
	pthread_mutex_init(&l->lock, NULL);
	pthread_mutex_init(&l->cb_lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&l->wake, &attr);
	pthread_condattr_destroy(&attr);
	*out = l;
	l = NULL;
out:
	if (l) {
		free(l->ns);
		free(l->name);
		free(l->identity);
		free(l->res.group);
		free(l->res.version);
		free(l->res.name);
		free(l->res.kind);
		free(l);
	}
	return error;
}

int kube_leader_start(struct kube_leader *l, struct err *err)
{
	int error = 0, rc;

	pthread_mutex_lock(&l->lock);
	if (l->started) {
		error = err_set(err, ERR_INVALID,
				"lease %s/%s: already started", l->ns, l->name);
		goto out;
	}
	if ((rc = pthread_create(&l->watchdog, NULL, watchdog, l))) {
		error = err_set(err, ERR_IO, "lease %s/%s: thread: %s", l->ns,
				l->name, strerror(rc));
		goto out;
	}
	if ((rc = pthread_create(&l->thread, NULL, elector, l))) {
		error = err_set(err, ERR_IO, "lease %s/%s: thread: %s", l->ns,
				l->name, strerror(rc));
		l->stopping = true;
		pthread_cond_broadcast(&l->wake);
		pthread_mutex_unlock(&l->lock);
		pthread_join(l->watchdog, NULL);
		return error;
	}
	l->started = true;
out:
	pthread_mutex_unlock(&l->lock);
	return error;
}

bool kube_leader_is_leader(struct kube_leader *l)
{
	bool v;

	pthread_mutex_lock(&l->lock);
	v = l->leading && !l->stopping &&
	    now_ms() - l->renewed_ms < l->renew_ms;
	pthread_mutex_unlock(&l->lock);
	return v;
}

const char *kube_leader_identity(const struct kube_leader *l)
{
	return l->identity;
}

int kube_leader_stop(struct kube_leader *l, bool release, struct err *err)
{
	bool join;
	int error;

	pthread_mutex_lock(&l->lock);
	join = l->started && !l->stopping;
	l->stopping = true;
	l->release = release;
	pthread_cond_broadcast(&l->wake);
	pthread_mutex_unlock(&l->lock);
	if (!join)
		return 0;
	pthread_join(l->thread, NULL);
	pthread_join(l->watchdog, NULL);
	error = l->release_error;
	if (error < 0 && err)
		err_move(err, &l->release_err);
	err_release(&l->release_err);
	return error;
}

void kube_leader_free(struct kube_leader *l)
{
	if (!l)
		return;
	kube_leader_stop(l, false, NULL);
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	pthread_mutex_destroy(&l->cb_lock);
	json_decref(l->observed);
	free(l->seen_holder);
	free(l->ns);
	free(l->name);
	free(l->identity);
	free(l->res.group);
	free(l->res.version);
	free(l->res.name);
	free(l->res.kind);
	free(l);
}
