/*
 * The other built-in kinds with a status worth reading: phases (claims,
 * volumes, namespaces), addresses (Services, Ingresses), conditions
 * (autoscalers, disruption budgets, CRDs, APIServices, FlowSchemas,
 * certificate requests). docs/health.md has the tables.
 */
#include <string.h>

#include "health/internal.h"

#include "util/banned.h" /* last */

/* What one value of status.phase means. */
struct phase {
	const char *name;
	enum health_state state;
	const char *reason;
};

/*
 * Judge by status.phase from a table ending in {NULL}: the entry's state
 * and reason (and the status message, when there is one); no phase yet
 * is Progressing, a phase the table does not know Unknown.
 */
static void by_phase(struct health *out, const json_t *obj,
		     const struct phase *table)
{
	const json_t *phase = health_get(obj, "status", "phase", NULL);
	const char *message =
		health_str(health_get(obj, "status", "message", NULL));
	const char *sep = *message ? ": " : "";

	if (!json_is_string(phase)) {
		health_set(out, HEALTH_PROGRESSING, "no status yet");
		return;
	}
	for (; table->name; table++) {
		if (health_str_is(phase, table->name)) {
			health_set(out, table->state, "%s%s%s", table->reason,
				   sep, message);
			return;
		}
	}
	health_set(out, HEALTH_UNKNOWN, "phase %s%s%s", health_str(phase), sep,
		   message);
}

void health_pvc(struct health *out, const json_t *obj)
{
	static const struct phase phases[] = {
		{"Bound", HEALTH_HEALTHY, "bound to a volume"},
		{"Pending", HEALTH_PROGRESSING, "waiting for a volume"},
		{"Lost", HEALTH_DEGRADED, "its volume is lost"},
		{NULL, HEALTH_UNKNOWN, NULL},
	};

	by_phase(out, obj, phases);
}

void health_pv(struct health *out, const json_t *obj)
{
	static const struct phase phases[] = {
		{"Available", HEALTH_HEALTHY, "available for a claim"},
		{"Bound", HEALTH_HEALTHY, "bound to a claim"},
		{"Released", HEALTH_HEALTHY,
		 "released by its claim (kept by its reclaim policy)"},
		{"Pending", HEALTH_PROGRESSING, "pending"},
		{"Failed", HEALTH_DEGRADED, "reclamation failed"},
		{NULL, HEALTH_UNKNOWN, NULL},
	};

	by_phase(out, obj, phases);
}

void health_namespace(struct health *out, const json_t *obj)
{
	static const struct phase phases[] = {
		{"Active", HEALTH_HEALTHY, "active"},
		{"Terminating", HEALTH_PROGRESSING, "being deleted"},
		{NULL, HEALTH_UNKNOWN, NULL},
	};

	by_phase(out, obj, phases);
}

/*
 * The first address of a status.loadBalancer.ingress list (an IP or a
 * host name), or NULL when the list is empty.
 */
static const char *lb_address(const json_t *obj)
{
	const json_t *first = json_array_get(
		health_get(obj, "status", "loadBalancer", "ingress", NULL), 0);
	const char *ip = json_string_value(json_object_get(first, "ip"));
	const char *host =
		json_string_value(json_object_get(first, "hostname"));

	if (!first)
		return NULL;
	return ip ? ip : host ? host : "(no address)";
}

void health_service(struct health *out, const json_t *obj)
{
	const json_t *type = health_get(obj, "spec", "type", NULL);
	const char *addr = lb_address(obj);

	if (!health_str_is(type, "LoadBalancer"))
		health_set(out, HEALTH_HEALTHY, "no status to wait for (%s)",
			   json_is_string(type) ? health_str(type)
						: "ClusterIP");
	else if (!addr)
		health_set(out, HEALTH_PROGRESSING,
			   "waiting for the load balancer: no "
			   "status.loadBalancer.ingress yet");
	else
		health_set(out, HEALTH_HEALTHY, "load balancer at %s", addr);
}

void health_ingress(struct health *out, const json_t *obj)
{
	const char *addr = lb_address(obj);

	if (!addr)
		health_set(out, HEALTH_PROGRESSING,
			   "waiting for the ingress controller: no "
			   "status.loadBalancer.ingress yet");
	else
		health_set(out, HEALTH_HEALTHY, "published at %s", addr);
}

static bool has_prefix(const json_t *v, const char *prefix)
{
	return !strncmp(health_str(v), prefix, strlen(prefix));
}

/*
 * autoscaling/v2 reports conditions: a False AbleToScale with a Failed*
 * reason (the scale subresource cannot be read or written) or a False
 * ScalingActive with a FailedGet* or Invalid* reason (no metrics, a bad
 * selector) is Degraded; a backoff or ScalingLimited is not. autoscaling/v1
 * has no conditions: a desired replica count shows the autoscaler ran.
 */
void health_hpa(struct health *out, const json_t *obj)
{
	const json_t *conds = health_get(obj, "status", "conditions", NULL);
	const json_t *able = health_cond_in(conds, "AbleToScale");
	const json_t *active = health_cond_in(conds, "ScalingActive");
	const json_t *active_reason = json_object_get(active, "reason");
	long long current = (long long)health_int(
		health_get(obj, "status", "currentReplicas", NULL), 0);
	long long desired = (long long)health_int(
		health_get(obj, "status", "desiredReplicas", NULL), 0);

	if (health_cond_is(able, "False") &&
	    has_prefix(json_object_get(able, "reason"), "Failed"))
		health_set_cond(out, HEALTH_DEGRADED, NULL, able);
	else if (health_cond_is(active, "False") &&
		 (has_prefix(active_reason, "FailedGet") ||
		  has_prefix(active_reason, "Invalid")))
		health_set_cond(out, HEALTH_DEGRADED, NULL, active);
	else if (json_array_size(conds) || desired > 0)
		health_set(out, HEALTH_HEALTHY,
			   "%lld current replicas, %lld desired", current,
			   desired);
	else
		health_set(out, HEALTH_PROGRESSING,
			   "waiting for the autoscaler's first status");
}

/*
 * A budget not met (fewer healthy pods than it wants) is Progressing, as
 * kstatus says: the pods' own workload tells why. DisruptionAllowed False
 * for InsufficientPods is that same case; for any other reason
 * (SyncFailed: the controller cannot compute the budget) it is Degraded.
 */
void health_pdb(struct health *out, const json_t *obj)
{
	const json_t *allowed = health_cond(obj, "DisruptionAllowed");
	long long current = (long long)health_int(
		health_get(obj, "status", "currentHealthy", NULL), 0);
	long long desired = (long long)health_int(
		health_get(obj, "status", "desiredHealthy", NULL), 0);
	long long allowed_now = (long long)health_int(
		health_get(obj, "status", "disruptionsAllowed", NULL), 0);

	if (health_generation_behind(out, obj, "controller", true))
		return;
	if (health_cond_is(allowed, "False") &&
	    !health_str_is(json_object_get(allowed, "reason"),
			   "InsufficientPods"))
		health_set_cond(out, HEALTH_DEGRADED, NULL, allowed);
	else if (current < desired)
		health_set(out, HEALTH_PROGRESSING,
			   "budget not met: %lld of %lld desired pods are "
			   "healthy",
			   current, desired);
	else
		health_set(out, HEALTH_HEALTHY,
			   "budget met: %lld healthy pods, %lld disruption%s "
			   "allowed",
			   current, allowed_now, allowed_now == 1 ? "" : "s");
}

void health_crd(struct health *out, const json_t *obj)
{
	const json_t *names = health_cond(obj, "NamesAccepted");
	const json_t *structural = health_cond(obj, "NonStructuralSchema");
	const json_t *established = health_cond(obj, "Established");

	if (health_cond_is(names, "False"))
		health_set_cond(out, HEALTH_DEGRADED, NULL, names);
	else if (health_cond_is(structural, "True"))
		health_set_cond(out, HEALTH_DEGRADED, NULL, structural);
	else if (health_cond_is(established, "True"))
		health_set(out, HEALTH_HEALTHY, "established");
	else if (established)
		health_set_cond(out, HEALTH_PROGRESSING, NULL, established);
	else
		health_set(out, HEALTH_PROGRESSING,
			   "waiting to be established");
}

/*
 * A local APIService is Available at once. A remote one whose Service has
 * no ready endpoints yet (or no Service yet) is starting; any other
 * failure (FailedDiscoveryCheck: the backend answers wrongly or not at
 * all) is Degraded.
 */
void health_apiservice(struct health *out, const json_t *obj)
{
	static const char *const starting[] = {
		"MissingEndpoints", "EndpointsNotFound", "ServiceNotFound",
		NULL};
	const json_t *avail = health_cond(obj, "Available");
	const json_t *reason = json_object_get(avail, "reason");
	const char *const *s;

	for (s = starting; *s && !health_str_is(reason, *s); s++)
		;
	if (health_cond_is(avail, "True"))
		health_set_cond(out, HEALTH_HEALTHY, NULL, avail);
	else if (health_cond_is(avail, "False") && !*s)
		health_set_cond(out, HEALTH_DEGRADED, NULL, avail);
	else if (avail)
		health_set_cond(out, HEALTH_PROGRESSING, NULL, avail);
	else
		health_set(out, HEALTH_PROGRESSING,
			   "waiting for the aggregator's first status");
}

/* A FlowSchema whose priority level does not exist is Dangling. */
void health_flowschema(struct health *out, const json_t *obj)
{
	const json_t *dangling = health_cond(obj, "Dangling");

	if (health_cond_is(dangling, "True"))
		health_set_cond(out, HEALTH_DEGRADED, NULL, dangling);
	else
		health_set(out, HEALTH_HEALTHY, "its priority level exists");
}

void health_csr(struct health *out, const json_t *obj)
{
	const json_t *denied = health_cond(obj, "Denied");
	const json_t *failed = health_cond(obj, "Failed");

	if (health_cond_is(denied, "True"))
		health_set_cond(out, HEALTH_DEGRADED, NULL, denied);
	else if (health_cond_is(failed, "True"))
		health_set_cond(out, HEALTH_DEGRADED, NULL, failed);
	else if (json_string_length(
			 health_get(obj, "status", "certificate", NULL)))
		health_set(out, HEALTH_HEALTHY, "certificate issued");
	else if (health_cond_is(health_cond(obj, "Approved"), "True"))
		health_set(out, HEALTH_PROGRESSING,
			   "approved; waiting for the signer");
	else
		health_set(out, HEALTH_PROGRESSING, "waiting for approval");
}
