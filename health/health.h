/*
 * health: how healthy one live Kubernetes object is, as Argo CD and
 * `kubectl rollout status` judge it.
 *
 * This is the one public header of the health library.
 *
 * An object is a jansson json_t * as the API server returns it (a GET or
 * a watch event's object). health_of() reads its status and says one of
 * six states with a one-line reason a person can act on:
 *
 *   Progressing  2 of 3 updated replicas are available
 *   Degraded     ProgressDeadlineExceeded: ReplicaSet "web-abc" has timed
 *                out progressing.
 *
 * Built-in kinds (workloads, Pods, Jobs, Services, Ingresses, the Gateway
 * API, ...) have rules of their own; any other kind is judged by the
 * kstatus conventions (observedGeneration, the Ready, Stalled and
 * Reconciling conditions); per-kind rules from the configuration file
 * (health_rules_add()) take precedence over both. Every rule, and every
 * reason's wording, is in docs/health.md.
 *
 * The library never logs and never blocks; everything here is pure and
 * thread-safe (a struct health_rules may be read by several threads once
 * it is built).
 */
#ifndef HEALTH_HEALTH_H
#define HEALTH_HEALTH_H

#include <stdbool.h>
#include <jansson.h>

#include "util/err.h"

/*
 * The states, ordered from best to worst as Argo CD orders them: an app's
 * health is the worst of its objects' (health_worse()).
 */
enum health_state {
	HEALTH_HEALTHY,
	HEALTH_SUSPENDED,   /* paused or suspended on purpose */
	HEALTH_PROGRESSING, /* not there yet, expected to get there */
	HEALTH_MISSING,     /* declared but not in the cluster */
	HEALTH_DEGRADED,    /* failed, or stuck with an error */
	HEALTH_UNKNOWN,     /* the status says nothing we can judge */
};

/* Longest reason, in bytes; a longer one is cut and ends in "...". */
#define HEALTH_REASON_MAX 512

/* "Healthy", "Suspended", ...; "Unknown" for a value out of range. */
const char *health_state_name(enum health_state s);

/*
 * Parse a state's name ("Healthy", ..., case-insensitive) into *out.
 * 0, or ERR_INVALID (and *out untouched).
 */
int health_state_parse(const char *name, enum health_state *out);

/* Whether a is worse than b (later in the order above). */
bool health_worse(enum health_state a, enum health_state b);

/*
 * One object's health. `reason` is one line (no newline, at most
 * HEALTH_REASON_MAX bytes), owned by the struct: release it with
 * health_release(). It is NULL only when memory ran out.
 */
struct health {
	enum health_state state;
	char *reason;
};

#define HEALTH_INIT {HEALTH_UNKNOWN, NULL}

/* Free the reason; *h is HEALTH_INIT again. NULL: nothing. */
void health_release(struct health *h);

/*
 * *out (not holding a reason) becomes a copy of *h; out of memory, the
 * copy has no reason, as health_of() leaves it then.
 */
void health_copy(struct health *out, const struct health *h);

/*
 * Per-kind rules from the configuration file (docs/health.md, "Rules for
 * other kinds"): for one group and kind, the conditions and status fields
 * that decide, and what their values mean.
 */
struct health_rules;

/* An empty rule set; NULL when out of memory. Free with health_rules_free(). */
struct health_rules *health_rules_new(void);

/* Free the rules. NULL: nothing. */
void health_rules_free(struct health_rules *r);

/*
 * Add one rule from its configuration form (a mapping decoded from the
 * YAML file; not kept, nothing of it is borrowed):
 *
 *   {group, kind, condition, healthy, degraded, suspended, fields,
 *    observedGeneration}
 *
 * 0 on success. On a bad rule: ERR_INVALID (ERR_EXISTS for a second rule
 * for the same group and kind), one problem in err (the cause only, as
 * "unknown key" or "expected a string, got a list": the caller names the
 * file and line), and, when `where` is not NULL, *where set to the JSON
 * pointer inside the rule of the value at fault ("/fields/0/path", "" for
 * the rule itself), which the caller frees; the rule set is unchanged.
 * ERR_NOMEM when memory ran out (*where then may be NULL). Only the first
 * problem of a rule is reported.
 */
int health_rules_add(struct health_rules *r, const json_t *rule, char **where,
		     struct err *err);

/*
 * The health of live object `obj` into *out (overwritten, not released
 * first; release it with health_release()). `obj` NULL is Missing, "not
 * in the cluster". `rules` may be NULL. Never fails: a status it cannot
 * read gives Unknown with a reason saying why.
 */
void health_of(struct health *out, const json_t *obj,
	       const struct health_rules *rules);

#endif
