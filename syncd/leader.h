/*
 * leader: leader election among `syncd run` replicas over a
 * coordination.k8s.io/v1 Lease, with the semantics of client-go's
 * leaderelection package, so that syncd and Go controllers read each
 * other's Leases the same way.
 *
 * The Lease's spec is the record: holderIdentity, leaseDurationSeconds,
 * acquireTime, renewTime (MicroTime) and leaseTransitions. Every write is
 * a whole-object update carrying the resourceVersion last read, so when
 * two candidates race, the server takes one write and answers 409 to the
 * other: that candidate lost this round and tries again later.
 *
 * Time: a candidate never compares the server's timestamps with its own
 * clock (clocks of two nodes may disagree). It notes on its own monotonic
 * clock when it last saw the record change, and takes the Lease only when
 * the record has stayed the same for the record's leaseDurationSeconds
 * since then, or when holderIdentity is "" (a released Lease).
 *
 * The elector thread:
 * - as a candidate, reads (and when due, takes or creates) the Lease every
 *   retry period, plus a random jitter of up to 1.2 retry periods so that
 *   standbys do not move in step;
 * - as the leader, renews every retry period; when no renewal succeeded
 *   for the renew deadline it stops leading (stopped_leading) and becomes
 *   a candidate again. It stops leading before that deadline even if a
 *   request is still hanging: leader_is_leader() turns false once the
 *   deadline since the start of the last successful renewal has passed,
 *   which is before any other replica may take the Lease (renew deadline
 *   < lease duration).
 * Failed requests (network, 5xx, 409) are reported through `failed` and
 * retried at the next period; nothing is logged and nothing exits.
 *
 * Timing must satisfy lease > renew > 1.2 * retry (as client-go checks).
 * The Lease stores whole seconds: leaseDurationSeconds is the lease
 * duration rounded up (at least 1). Each request the elector makes may
 * itself retry inside kube_request(), so give it a client whose timeouts
 * and retries fit well within the renew deadline.
 *
 * Thread safety: leader_is_leader() and leader_identity() may be called
 * from any thread; leader_start(), leader_stop() and leader_free() belong
 * to the owner, and must not be called from a callback.
 */
#ifndef SYNCD_LEADER_H
#define SYNCD_LEADER_H

#include <stdbool.h>

#include "syncd/kube.h"
#include "util/err.h"

#define LEADER_OPTIONS_VERSION 1

#define LEADER_LEASE_MS_DEFAULT 15000L
#define LEADER_RENEW_MS_DEFAULT 10000L
#define LEADER_RETRY_MS_DEFAULT 2000L

struct leader;

struct leader_options {
	unsigned version;      /* LEADER_OPTIONS_VERSION */
	const char *namespace; /* of the Lease; required */
	const char *name;      /* of the Lease; required */
	/* This replica's name in holderIdentity; NULL: "HOSTNAME_RANDHEX". */
	const char *identity;
	long lease_ms; /* how long a Lease stays valid; 0: 15 s */
	long renew_ms; /* the leader gives up after this; 0: 10 s */
	long retry_ms; /* between attempts; 0: 2 s */
	/*
	 * Callbacks, all called from the elector thread, never with a lock
	 * held; each may be NULL. started_leading and stopped_leading come
	 * in pairs: stopped_leading follows every started_leading (when the
	 * renew deadline passed, or in leader_stop() while leading, then
	 * before the Lease is released, so that the work stops first).
	 * They should return quickly.
	 */
	void (*started_leading)(void *ctx);
	void (*stopped_leading)(void *ctx);
	/* The holder seen in the Lease changed ("" when released). */
	void (*new_leader)(const char *identity, void *ctx);
	/* One attempt failed: one line naming the Lease and the cause. */
	void (*failed)(const struct err *err, void *ctx);
	void *ctx;
};

#define LEADER_OPTIONS_INIT {.version = LEADER_OPTIONS_VERSION}

/*
 * An elector for the Lease opts->namespace/opts->name using `client`
 * (borrowed: it must outlive the elector). The options are copied.
 * ERR_INVALID for missing names or durations that break lease > renew >
 * 1.2 * retry. No request yet. Caller owns *out; free with leader_free().
 */
int leader_new(struct leader **out, struct kube_client *client,
	       const struct leader_options *opts, struct err *err);

/* Start the elector thread. ERR_INVALID when started before. */
int leader_start(struct leader *l, struct err *err);

/*
 * Whether this replica leads now: it won or renewed the Lease less than
 * the renew deadline ago (by the monotonic clock) and has not stopped.
 */
bool leader_is_leader(struct leader *l);

/* holderIdentity this elector writes; owned by `l`. */
const char *leader_identity(const struct leader *l);

/*
 * Stop the elector thread (waiting for a request in flight to end). When
 * it was leading, stopped_leading is called and then, if `release`, the
 * Lease is released (holderIdentity "", leaseDurationSeconds 1) so that
 * a standby takes over at its next attempt instead of after the lease
 * duration. Returns 0, or the release's error (the Lease then expires on
 * its own). Stopping a stopped or never started elector returns 0.
 */
int leader_stop(struct leader *l, bool release, struct err *err);

/* Stop without release if still running, and free. Accepts NULL. */
void leader_free(struct leader *l);

#endif
