/*
 * Declarations shared by the files of the health library; not public.
 *
 * A judge reads one object and calls health_set() (or one of the helpers
 * that call it) before it returns; the last call wins. Judges only read:
 * every json_t they see is borrowed from the caller's object.
 */
#ifndef HEALTH_INTERNAL_H
#define HEALTH_INTERNAL_H

#include <stdbool.h>
#include <jansson.h>

#include "health/health.h"

/* Judges one object of a kind into *out. */
typedef void health_judge_fn(struct health *out, const json_t *obj);

/*
 * Set out's state and reason (printf-style; made one line and cut at
 * HEALTH_REASON_MAX bytes). The previous reason is freed.
 */
void health_set(struct health *out, enum health_state s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Move *from into *out (the old reason of *out is freed); *from is empty. */
void health_move(struct health *out, struct health *from);

/* The value at a path of object keys ending in NULL, or NULL. */
const json_t *health_get(const json_t *v, ...) __attribute__((sentinel));

/* v's string, or "" when v is not a string. */
const char *health_str(const json_t *v);

/* v's integer, or `def` when v is not an integer. */
json_int_t health_int(const json_t *v, json_int_t def);

/* Whether v is a string equal to s. */
bool health_str_is(const json_t *v, const char *s);

/* The condition of `type` in a conditions list, or NULL. */
const json_t *health_cond_in(const json_t *conds, const char *type);

/* The condition of `type` in obj's status.conditions, or NULL. */
const json_t *health_cond(const json_t *obj, const char *type);

/* Whether cond (may be NULL) has status `status` ("True", ...). */
bool health_cond_is(const json_t *cond, const char *status);

/*
 * Whether cond carries an observedGeneration older than obj's
 * metadata.generation: it speaks of a spec the controller has not seen.
 */
bool health_cond_stale(const json_t *obj, const json_t *cond);

/*
 * Set out to `s` with the condition as the reason: "Reason: message",
 * "Type is Status: message" without a reason, "Type is Status (Reason)"
 * without a message, after `prefix` (may be NULL).
 */
void health_set_cond(struct health *out, enum health_state s,
		     const char *prefix, const json_t *cond);

/*
 * Set out to Progressing for a stale condition (health_cond_stale()):
 * "[prefix: ]waiting for the controller: Ready is for generation 1 < 2".
 */
void health_set_stale(struct health *out, const char *prefix,
		      const json_t *obj, const json_t *cond);

/*
 * When status.observedGeneration is behind metadata.generation, set out
 * to Progressing ("waiting for the <what>: observedGeneration 3 <
 * generation 4") and return true. With `required`, an absent
 * observedGeneration is behind too ("... has not observed generation 4");
 * without, it is not checked.
 */
bool health_generation_behind(struct health *out, const json_t *obj,
			      const char *what, bool required);

/* The built-in judges, by file. */
/* workloads.c */
health_judge_fn health_deployment, health_statefulset, health_daemonset,
	health_replicaset, health_pod, health_job, health_cronjob;
/* builtin.c */
health_judge_fn health_service, health_ingress, health_pvc, health_pv,
	health_namespace, health_hpa, health_pdb, health_crd,
	health_apiservice, health_flowschema, health_csr;
/* gateway.c */
health_judge_fn health_gateway, health_route;
/* custom.c: kinds with no rule of their own (kstatus conventions) */
health_judge_fn health_custom;

/*
 * rules.c: judge obj by the configured rule for group/kind. False (and
 * *out untouched) when there is none.
 */
bool health_rules_judge(const struct health_rules *r, const char *group,
			size_t group_len, const char *kind, struct health *out,
			const json_t *obj);

#endif
