/*
 * events: Kubernetes Events (events.k8s.io/v1) about the objects syncd
 * manages, rate limited the way client-go's event recorder limits them:
 *
 * - the same event (object, reason, note) again within `dedup_ms` (10
 *   minutes) is dropped: a fight or a failing object does not repeat
 *   itself on every pass;
 * - each object has a token bucket of `burst` (25) events refilled by one
 *   every `refill_ms` (5 minutes), like client-go's spam filter;
 * - all objects together may not exceed `global_burst` (100) refilled at
 *   `global_per_s` (10) per second.
 *
 * Events are sent at once by the calling thread; one that fails is
 * dropped (an Event is best effort: the log has everything too).
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef SYNCD_EVENTS_H
#define SYNCD_EVENTS_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "syncd/kube.h"

/* Objects whose limits are remembered; the oldest are forgotten. */
#define EVENTS_MAX_OBJECTS 4096

struct events_options {
	struct kube_client *client; /* borrowed; NULL: count, send nothing */
	const char *instance;	    /* reportingInstance; NULL: "syncd" */
	unsigned burst;		    /* 0: 25 */
	uint64_t refill_ms;	    /* 0: 5 minutes */
	uint64_t dedup_ms;	    /* 0: 10 minutes */
	unsigned global_burst;	    /* 0: 100 */
	unsigned global_per_s;	    /* 0: 10 */
	/* Monotonic milliseconds; NULL: CLOCK_MONOTONIC. */
	uint64_t (*now_ms)(void *ctx);
	void *clock_ctx;
};

struct events;

/* NULL when out of memory. */
struct events *events_new(const struct events_options *opts);
void events_free(struct events *ev);

/*
 * An event about `regarding` (an object with kind, apiVersion and
 * metadata name/namespace, uid when known). `type` "Normal" or
 * "Warning". Returns 1 when sent (or would have been, without a client),
 * 0 when a limit dropped it, <0 when sending failed.
 */
int events_emit(struct events *ev, const json_t *regarding, const char *type,
		const char *reason, const char *action, const char *note);

/* Events sent and dropped so far. */
void events_counts(struct events *ev, uint64_t *sent, uint64_t *dropped);

#endif
