/*
 * The Gateway API (gateway.networking.k8s.io): a Gateway is Healthy when
 * its controller accepted and programmed it and every listener it reports
 * is fine; a route when every parent that reports on it accepted it and
 * resolved its references. The API server writes a Gateway's first
 * conditions itself (Unknown, reason Pending, "Waiting for controller"),
 * so Unknown and Pending mean "not yet", never "failed".
 */
#include <stdio.h>

#include "health/internal.h"

#include "util/banned.h" /* last */

/* A condition type and the status it has when all is well. */
struct expect {
	const char *type;
	const char *good;
};

/*
 * False for a reason that means "not yet": the controller is still
 * programming (Pending) or waiting for its load balancer's address
 * (AddressNotAssigned), as a Service of type LoadBalancer would be.
 */
static bool not_yet(const json_t *cond)
{
	const json_t *reason = json_object_get(cond, "reason");

	return health_cond_is(cond, "Unknown") ||
	       health_str_is(reason, "Pending") ||
	       health_str_is(reason, "AddressNotAssigned");
}

/* Keep in *worst the worse of itself and *h (h is released). */
static void keep_worst(struct health *worst, struct health *h)
{
	if (health_worse(h->state, worst->state))
		health_move(worst, h);
	else
		health_release(h);
}

/*
 * Judge one list of conditions against `want` (ending in {NULL}), keeping
 * the worst finding in *worst: a condition not at its good status is
 * Progressing when it is Unknown, not yet, or older than the object's
 * generation, else Degraded. A missing condition is Progressing when
 * `required`, else not looked at.
 */
static void judge_conds(struct health *worst, const json_t *obj,
			const json_t *conds, const struct expect *want,
			const char *prefix, bool required)
{
	for (; want->type; want++) {
		const json_t *c = health_cond_in(conds, want->type);
		struct health h = HEALTH_INIT;

		if (!c && !required)
			continue;
		if (!c)
			health_set(&h, HEALTH_PROGRESSING,
				   "%s: no %s condition yet", prefix,
				   want->type);
		else if (health_cond_stale(obj, c))
			health_set_stale(&h, prefix, obj, c);
		else if (health_cond_is(c, want->good))
			continue;
		else if (not_yet(c))
			health_set_cond(&h, HEALTH_PROGRESSING, prefix, c);
		else
			health_set_cond(&h, HEALTH_DEGRADED, prefix, c);
		keep_worst(worst, &h);
	}
}

void health_gateway(struct health *out, const json_t *obj)
{
	static const struct expect gateway[] = {
		{"Accepted", "True"}, {"Programmed", "True"}, {NULL, NULL}};
	static const struct expect listener[] = {
		{"Accepted", "True"},   {"ResolvedRefs", "True"},
		{"Programmed", "True"}, {"Conflicted", "False"},
		{NULL, NULL}};
	const json_t *listeners = health_get(obj, "status", "listeners", NULL);
	const json_t *l;
	struct health worst = {HEALTH_HEALTHY, NULL};
	size_t i;

	judge_conds(&worst, obj, health_get(obj, "status", "conditions", NULL),
		    gateway, "gateway", true);
	json_array_foreach (listeners, i, l) {
		char prefix[300];

		snprintf(prefix, sizeof(prefix), "listener \"%s\"",
			 health_str(json_object_get(l, "name")));
		judge_conds(&worst, obj, json_object_get(l, "conditions"),
			    listener, prefix, false);
	}
	if (worst.state != HEALTH_HEALTHY)
		health_move(out, &worst);
	else
		health_set(out, HEALTH_HEALTHY,
			   "accepted and programmed; %zu listener%s",
			   json_array_size(listeners),
			   json_array_size(listeners) == 1 ? "" : "s");
	health_release(&worst);
}

/* 'parent Gateway "infra/eg" section https' for a parentRef. */
static void parent_name(char *buf, size_t size, const json_t *ref)
{
	const char *kind = health_str(json_object_get(ref, "kind"));
	const char *ns = health_str(json_object_get(ref, "namespace"));
	const char *section = health_str(json_object_get(ref, "sectionName"));

	snprintf(buf, size, "parent %s \"%s%s%s\"%s%s",
		 *kind ? kind : "Gateway", ns, *ns ? "/" : "",
		 health_str(json_object_get(ref, "name")),
		 *section ? " section " : "", section);
}

/* HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute. */
void health_route(struct health *out, const json_t *obj)
{
	static const struct expect route[] = {
		{"Accepted", "True"}, {"ResolvedRefs", "True"}, {NULL, NULL}};
	const json_t *parents = health_get(obj, "status", "parents", NULL);
	size_t want = json_array_size(health_get(obj, "spec", "parentRefs",
						 NULL));
	size_t have = json_array_size(parents);
	const json_t *p;
	struct health worst = {HEALTH_HEALTHY, NULL};
	size_t i;

	json_array_foreach (parents, i, p) {
		char prefix[600];

		parent_name(prefix, sizeof(prefix),
			    json_object_get(p, "parentRef"));
		judge_conds(&worst, obj, json_object_get(p, "conditions"),
			    route, prefix, true);
	}
	if (worst.state != HEALTH_HEALTHY)
		health_move(out, &worst);
	else if (!have)
		health_set(out, HEALTH_PROGRESSING,
			   "waiting for a parent to accept it: no "
			   "status.parents yet");
	else if (have < want)
		health_set(out, HEALTH_PROGRESSING,
			   "%zu of %zu parents have reported", have, want);
	else
		health_set(out, HEALTH_HEALTHY,
			   "accepted by %zu parent%s, references resolved",
			   have, have == 1 ? "" : "s");
	health_release(&worst);
}
