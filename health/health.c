/*
 * The states, and health_of(): what is judged before any kind (a missing
 * object, one being deleted), then the configured rule for the object's
 * group and kind, else the built-in judge of the table below, else the
 * kstatus conventions of custom.c.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "health/internal.h"
#include "util/buf.h"
#include "util/err.h"

#include "util/banned.h" /* last */

static const char *const state_names[] = {
	[HEALTH_HEALTHY] = "Healthy",
	[HEALTH_SUSPENDED] = "Suspended",
	[HEALTH_PROGRESSING] = "Progressing",
	[HEALTH_MISSING] = "Missing",
	[HEALTH_DEGRADED] = "Degraded",
	[HEALTH_UNKNOWN] = "Unknown",
};

#define NSTATES (sizeof(state_names) / sizeof(*state_names))

const char *health_state_name(enum health_state s)
{
	return (unsigned)s < NSTATES ? state_names[s] : "Unknown";
}

int health_state_parse(const char *name, enum health_state *out)
{
	for (size_t i = 0; name && i < NSTATES; i++) {
		if (!strcasecmp(name, state_names[i])) {
			*out = (enum health_state)i;
			return 0;
		}
	}
	return ERR_INVALID;
}

bool health_worse(enum health_state a, enum health_state b)
{
	return (unsigned)a > (unsigned)b;
}

void health_release(struct health *h)
{
	if (!h)
		return;
	free(h->reason);
	h->state = HEALTH_UNKNOWN;
	h->reason = NULL;
}

void health_copy(struct health *out, const struct health *h)
{
	out->state = h->state;
	out->reason = h->reason ? strdup(h->reason) : NULL;
}

/*
 * Kinds whose objects have no status to wait for (configuration, policy,
 * RBAC), or only an informative one (ResourceQuota's usage): Healthy as
 * soon as they exist. No other kind is Healthy without a signal.
 */
static void no_status(struct health *out, const json_t *obj)
{
	(void)obj;
	health_set(out, HEALTH_HEALTHY, "no status to wait for");
}

/* One entry per built-in group and kind with a rule of its own. */
static const struct kind_judge {
	const char *group;
	const char *kind;
	health_judge_fn *judge;
} kind_judges[] = {
	{"apps", "Deployment", health_deployment},
	{"apps", "StatefulSet", health_statefulset},
	{"apps", "DaemonSet", health_daemonset},
	{"apps", "ReplicaSet", health_replicaset},
	{"", "ReplicationController", health_replicaset},
	{"", "Pod", health_pod},
	{"batch", "Job", health_job},
	{"batch", "CronJob", health_cronjob},
	{"", "PersistentVolumeClaim", health_pvc},
	{"", "PersistentVolume", health_pv},
	{"", "Service", health_service},
	{"", "Namespace", health_namespace},
	{"networking.k8s.io", "Ingress", health_ingress},
	{"autoscaling", "HorizontalPodAutoscaler", health_hpa},
	{"policy", "PodDisruptionBudget", health_pdb},
	{"apiextensions.k8s.io", "CustomResourceDefinition", health_crd},
	{"apiregistration.k8s.io", "APIService", health_apiservice},
	{"flowcontrol.apiserver.k8s.io", "FlowSchema", health_flowschema},
	{"certificates.k8s.io", "CertificateSigningRequest", health_csr},
	{"gateway.networking.k8s.io", "Gateway", health_gateway},
	{"gateway.networking.k8s.io", "HTTPRoute", health_route},
	{"gateway.networking.k8s.io", "GRPCRoute", health_route},
	{"gateway.networking.k8s.io", "TLSRoute", health_route},
	{"gateway.networking.k8s.io", "TCPRoute", health_route},
	{"gateway.networking.k8s.io", "UDPRoute", health_route},
	{"", "ConfigMap", no_status},
	{"", "Secret", no_status},
	{"", "ServiceAccount", no_status},
	{"", "Endpoints", no_status},
	{"", "LimitRange", no_status},
	{"", "ResourceQuota", no_status},
	{"", "PodTemplate", no_status},
	{"", "Event", no_status},
	{"events.k8s.io", "Event", no_status},
	{"apps", "ControllerRevision", no_status},
	{"rbac.authorization.k8s.io", "Role", no_status},
	{"rbac.authorization.k8s.io", "RoleBinding", no_status},
	{"rbac.authorization.k8s.io", "ClusterRole", no_status},
	{"rbac.authorization.k8s.io", "ClusterRoleBinding", no_status},
	{"networking.k8s.io", "NetworkPolicy", no_status},
	{"networking.k8s.io", "IngressClass", no_status},
	{"networking.k8s.io", "IPAddress", no_status},
	{"discovery.k8s.io", "EndpointSlice", no_status},
	{"scheduling.k8s.io", "PriorityClass", no_status},
	{"storage.k8s.io", "StorageClass", no_status},
	{"storage.k8s.io", "CSIDriver", no_status},
	{"storage.k8s.io", "VolumeAttributesClass", no_status},
	{"node.k8s.io", "RuntimeClass", no_status},
	{"coordination.k8s.io", "Lease", no_status},
	{"flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration",
	 no_status},
	{"admissionregistration.k8s.io", "MutatingWebhookConfiguration",
	 no_status},
	{"admissionregistration.k8s.io", "ValidatingWebhookConfiguration",
	 no_status},
	{"admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding",
	 no_status},
	{"admissionregistration.k8s.io", "MutatingAdmissionPolicy", no_status},
	{"admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding",
	 no_status},
	{"certificates.k8s.io", "ClusterTrustBundle", no_status},
	{"resource.k8s.io", "DeviceClass", no_status},
	{"resource.k8s.io", "ResourceClaimTemplate", no_status},
};

static health_judge_fn *judge_of(const char *group, size_t group_len,
				 const char *kind)
{
	for (size_t i = 0; i < sizeof(kind_judges) / sizeof(*kind_judges);
	     i++) {
		const struct kind_judge *k = &kind_judges[i];

		if (strlen(k->group) == group_len &&
		    !memcmp(k->group, group, group_len) &&
		    !strcmp(k->kind, kind))
			return k->judge;
	}
	return health_custom;
}

/*
 * An object being deleted waits for its finalizers, whatever its kind:
 * "being deleted; waiting for finalizers: a, b".
 */
static bool being_deleted(struct health *out, const json_t *obj)
{
	const json_t *fins = health_get(obj, "metadata", "finalizers", NULL);
	const json_t *f;
	struct buf names = BUF_INIT;
	size_t i;

	if (!health_get(obj, "metadata", "deletionTimestamp", NULL))
		return false;
	json_array_foreach (fins, i, f)
		buf_addf(&names, "%s%s", i ? ", " : "", health_str(f));
	if (names.len)
		health_set(out, HEALTH_PROGRESSING,
			   "being deleted; waiting for finalizers: %s",
			   names.ptr);
	else
		health_set(out, HEALTH_PROGRESSING, "being deleted");
	buf_release(&names);
	return true;
}

void health_of(struct health *out, const json_t *obj,
	       const struct health_rules *rules)
{
	const char *api = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *slash;
	size_t group_len;

	out->state = HEALTH_UNKNOWN;
	out->reason = NULL;
	if (!obj) {
		health_set(out, HEALTH_MISSING, "not in the cluster");
		return;
	}
	if (!api || !kind || !*kind) {
		health_set(out, HEALTH_UNKNOWN,
			   "not a Kubernetes object: no apiVersion or kind");
		return;
	}
	if (being_deleted(out, obj))
		return;
	slash = strchr(api, '/');
	group_len = slash ? (size_t)(slash - api) : 0;
	if (health_rules_judge(rules, api, group_len, kind, out, obj))
		return;
	judge_of(api, group_len, kind)(out, obj);
}
