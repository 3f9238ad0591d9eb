/*
 * What kube-apiserver 1.36 does to a write that needs more than the
 * object: the registries' cluster IPs and node ports, a Job's generated
 * selector, a DaemonSet's template generation, a local APIService's
 * status, and a Pod's admission (service account token volume, default
 * tolerations, priority, QoS class). What the object alone decides
 * (defaults, quantities, Secret stringData) is diff_stored_defaults(),
 * the one model syncd's comparison uses too.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diff/diff.h"
#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

/* 10.96.0.0/12, the default service CIDR of kubeadm and kind. */
#define CLUSTER_IP_BASE 0x0a600000u
#define CLUSTER_IP_SIZE (1u << 20)
/* 10.96.0.1 belongs to the "kubernetes" Service. */
#define CLUSTER_IP_FIRST 2u
#define NODE_PORT_MIN	 30000
#define NODE_PORT_MAX	 32767

struct dctx {
	struct emu_store *st;
	const struct emu_resource *res;
	const json_t *old;
};

/*
 * The selector batch/v1's registry generates when manualSelector is not
 * true: the template gets job-name and controller-uid labels (legacy and
 * batch.kubernetes.io/ forms, unless already there) and the selector
 * matches the uid.
 */
static void job_selector(json_t *job, json_t *spec)
{
	static const char *const name_keys[] = {"job-name",
						"batch.kubernetes.io/job-name"};
	static const char *const uid_keys[] = {
		"controller-uid", "batch.kubernetes.io/controller-uid"};
	json_t *meta = json_object_get(job, "metadata");
	const char *name = diff_json_str(meta, "name"),
		   *uid = diff_json_str(meta, "uid");
	json_t *labels, *ml;
	size_t i;

	if (json_is_true(json_object_get(spec, "manualSelector")) || !name ||
	    !uid)
		return;
	labels = diff_json_child(
		diff_json_child(diff_json_child(spec, "template"), "metadata"),
		"labels");
	if (!labels)
		return;
	for (i = 0; i < 2; i++) {
		if (!json_object_get(labels, name_keys[i]))
			json_object_set_new(labels, name_keys[i],
					    json_string(name));
		if (!json_object_get(labels, uid_keys[i]))
			json_object_set_new(labels, uid_keys[i],
					    json_string(uid));
	}
	ml = diff_json_child(diff_json_child(spec, "selector"), "matchLabels");
	if (ml && !json_object_get(ml, uid_keys[1]))
		json_object_set_new(ml, uid_keys[1], json_string(uid));
}

/* The Job's labels shared with its template's by job(): copied apart. */
static void job_unshare(json_t *job)
{
	json_t *meta = json_object_get(job, "metadata");
	json_t *spec = json_object_get(job, "spec");
	json_t *tmeta =
		json_object_get(json_object_get(spec, "template"), "metadata");
	json_t *labels = json_object_get(meta, "labels");

	if (labels && labels == json_object_get(tmeta, "labels"))
		json_object_set_new(meta, "labels", json_deep_copy(labels));
}

/* ---- Services ---- */

static bool is_service(const struct emu_entry *e)
{
	return !*e->res->group && !strcmp(e->res->name, "services");
}

static bool ip_in_use(struct emu_store *st, const char *ip)
{
	json_t *spec, *v;
	size_t i, j;

	for (i = 0; i < st->len; i++) {
		if (!is_service(&st->items[i]))
			continue;
		spec = json_object_get(st->items[i].obj, "spec");
		if (diff_json_str_is(spec, "clusterIP", ip))
			return true;
		json_array_foreach(json_object_get(spec, "clusterIPs"), j, v)
		{
			if (json_is_string(v) &&
			    !strcmp(json_string_value(v), ip))
				return true;
		}
	}
	return false;
}

/* The next free address of the service CIDR, in order. */
static void allocate_ip(struct emu_store *st, char out[16])
{
	uint32_t n, tries, ip;

	for (tries = 0; tries < CLUSTER_IP_SIZE; tries++) {
		n = st->next_cluster_ip;
		if (n < CLUSTER_IP_FIRST || n >= CLUSTER_IP_SIZE - 1)
			n = CLUSTER_IP_FIRST;
		st->next_cluster_ip = n + 1;
		ip = CLUSTER_IP_BASE + n;
		snprintf(out, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255,
			 (ip >> 8) & 255, ip & 255);
		if (!ip_in_use(st, out))
			return;
	}
	/* Full: hand out the last one tried rather than nothing. */
}

static bool port_used_in(const json_t *spec, json_int_t port)
{
	const json_t *p;
	size_t i;

	if (json_integer_value(json_object_get(spec, "healthCheckNodePort")) ==
	    port)
		return true;
	json_array_foreach(json_object_get(spec, "ports"), i, p)
	{
		if (json_integer_value(json_object_get(p, "nodePort")) == port)
			return true;
	}
	return false;
}

static json_int_t allocate_node_port(struct emu_store *st, const json_t *spec)
{
	json_int_t port;
	size_t i;

	for (port = NODE_PORT_MIN; port <= NODE_PORT_MAX; port++) {
		if (port_used_in(spec, port))
			continue;
		for (i = 0; i < st->len; i++)
			if (is_service(&st->items[i]) &&
			    port_used_in(
				    json_object_get(st->items[i].obj, "spec"),
				    port))
				break;
		if (i == st->len)
			return port;
	}
	return 0;
}

static bool no_node_port(const json_t *p)
{
	const json_t *np = json_object_get(p, "nodePort");

	return !json_is_integer(np) || json_integer_value(np) == 0;
}

/* Node ports kept from the stored object, by port name (patchAllocatedValues).
 */
static void keep_node_ports(json_t *spec, const json_t *old_spec)
{
	const json_t *op;
	json_t *p;
	size_t i, j;

	json_array_foreach(json_object_get(spec, "ports"), i, p)
	{
		const char *name = diff_json_str(p, "name");

		if (!no_node_port(p))
			continue;
		json_array_foreach(json_object_get(old_spec, "ports"), j, op)
		{
			const char *on = diff_json_str(op, "name");
			json_t *np = json_object_get(op, "nodePort");

			if (strcmp(name ? name : "", on ? on : ""))
				continue;
			if (json_is_integer(np) &&
			    !port_used_in(spec, json_integer_value(np)))
				json_object_set(p, "nodePort", np);
			break;
		}
	}
}

static const char *svc_type(const json_t *spec)
{
	const char *t = diff_json_str(spec, "type");

	return t && *t ? t : "ClusterIP";
}

static bool needs_node_ports(const json_t *spec)
{
	const char *t = svc_type(spec);
	const json_t *alloc;

	if (!strcmp(t, "NodePort"))
		return true;
	alloc = json_object_get(spec, "allocateLoadBalancerNodePorts");
	return !strcmp(t, "LoadBalancer") && !json_is_false(alloc);
}

static bool externally_accessible(const json_t *spec)
{
	const char *t = svc_type(spec);

	return !strcmp(t, "NodePort") || !strcmp(t, "LoadBalancer") ||
	       json_array_size(json_object_get(spec, "externalIPs"));
}

static bool same_value(const json_t *a, const json_t *b, const char *key)
{
	const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);

	if (!x || json_is_null(x))
		return !y || json_is_null(y);
	return y && json_equal(x, y);
}

static bool same_node_ports(const json_t *spec, const json_t *old_spec)
{
	const json_t *p, *q;
	size_t i, j;

	json_array_foreach(json_object_get(spec, "ports"), i, p)
	{
		json_int_t np =
			json_integer_value(json_object_get(p, "nodePort"));

		if (!np)
			continue;
		json_array_foreach(json_object_get(old_spec, "ports"), j, q)
		{
			if (json_integer_value(
				    json_object_get(q, "nodePort")) == np)
				break;
		}
		if (j == json_array_size(json_object_get(old_spec, "ports")))
			return false;
	}
	return true;
}

/*
 * dropTypeDependentFields: on a type change, what the old type needed
 * and the writer left as it was is dropped rather than refused (node
 * ports when leaving NodePort, cluster IPs when becoming ExternalName).
 */
static void drop_type_fields(json_t *spec, const json_t *old_spec)
{
	json_t *p;
	size_t i;

	if (strcmp(svc_type(old_spec), "ExternalName") &&
	    !strcmp(svc_type(spec), "ExternalName")) {
		if (same_value(spec, old_spec, "clusterIP") &&
		    same_value(spec, old_spec, "clusterIPs")) {
			json_object_del(spec, "clusterIP");
			json_object_del(spec, "clusterIPs");
		}
		if (same_value(spec, old_spec, "ipFamilies"))
			json_object_del(spec, "ipFamilies");
		if (same_value(spec, old_spec, "ipFamilyPolicy"))
			json_object_del(spec, "ipFamilyPolicy");
		if (same_value(spec, old_spec, "internalTrafficPolicy"))
			json_object_del(spec, "internalTrafficPolicy");
	}
	if (needs_node_ports(old_spec) && !needs_node_ports(spec) &&
	    same_node_ports(spec, old_spec)) {
		json_array_foreach(json_object_get(spec, "ports"), i, p)
		{
			json_object_del(p, "nodePort");
		}
	}
	if (!strcmp(svc_type(old_spec), "LoadBalancer") &&
	    strcmp(svc_type(spec), "LoadBalancer")) {
		if (same_value(spec, old_spec, "healthCheckNodePort"))
			json_object_del(spec, "healthCheckNodePort");
		if (same_value(spec, old_spec, "allocateLoadBalancerNodePorts"))
			json_object_del(spec, "allocateLoadBalancerNodePorts");
		if (same_value(spec, old_spec, "loadBalancerClass"))
			json_object_del(spec, "loadBalancerClass");
	}
	if (externally_accessible(old_spec) && !externally_accessible(spec) &&
	    same_value(spec, old_spec, "externalTrafficPolicy"))
		json_object_del(spec, "externalTrafficPolicy");
}

/*
 * What the Service registry does after the field manager (so nobody
 * owns it): dropTypeDependentFields on update, cluster IPs and IP
 * families, node ports and the health check node port, kept from the
 * stored object or allocated.
 */
static void service_allocate(struct dctx *c, json_t *spec)
{
	const json_t *old_spec = json_object_get(c->old, "spec");
	const char *type, *ip;
	json_t *p, *ips;
	bool headless, node_ports, lb;
	char addr[16];
	size_t i;

	if (!json_is_object(spec))
		return;
	if (json_is_object(old_spec))
		drop_type_fields(spec, old_spec);
	type = svc_type(spec);
	lb = !strcmp(type, "LoadBalancer");
	if (!strcmp(type, "ExternalName"))
		return;

	/* Cluster IPs: kept from the stored object, else allocated. */
	if (old_spec && !diff_json_str_is(old_spec, "type", "ExternalName")) {
		if (!diff_json_str(spec, "clusterIP") ||
		    !*diff_json_str(spec, "clusterIP"))
			json_object_set(spec, "clusterIP",
					json_object_get(old_spec, "clusterIP"));
		if (diff_json_absent(spec, "clusterIPs") &&
		    json_object_get(old_spec, "clusterIPs"))
			json_object_set(
				spec, "clusterIPs",
				json_object_get(old_spec, "clusterIPs"));
	}
	ips = json_object_get(spec, "clusterIPs");
	ip = diff_json_str(spec, "clusterIP");
	if ((!ip || !*ip) && json_is_string(json_array_get(ips, 0)))
		json_object_set(spec, "clusterIP", json_array_get(ips, 0));
	ip = diff_json_str(spec, "clusterIP");
	if (!ip || !*ip) {
		allocate_ip(c->st, addr);
		json_object_set_new(spec, "clusterIP", json_string(addr));
	}
	if (!json_is_array(ips) || !json_array_size(ips))
		json_object_set_new(
			spec, "clusterIPs",
			json_pack("[O]", json_object_get(spec, "clusterIP")));
	headless = diff_json_str_is(spec, "clusterIP", "None");
	if (diff_json_absent(spec, "ipFamilyPolicy"))
		json_object_set_new(
			spec, "ipFamilyPolicy",
			json_string(
				headless && diff_json_absent(spec, "selector")
					? "RequireDualStack"
					: "SingleStack"));
	if (!json_array_size(json_object_get(spec, "ipFamilies")))
		json_object_set_new(spec, "ipFamilies",
				    json_pack("[s]", "IPv4"));

	/* Node ports. */
	node_ports = !strcmp(type, "NodePort") ||
		     (lb && json_is_true(json_object_get(
				    spec, "allocateLoadBalancerNodePorts")));
	if (!node_ports)
		return;
	if (old_spec && (diff_json_str_is(old_spec, "type", "NodePort") ||
			 diff_json_str_is(old_spec, "type", "LoadBalancer")))
		keep_node_ports(spec, old_spec);
	json_array_foreach(json_object_get(spec, "ports"), i, p)
	{
		if (json_is_object(p) && no_node_port(p))
			json_object_set_new(
				p, "nodePort",
				json_integer(allocate_node_port(c->st, spec)));
	}
	if (lb && diff_json_str_is(spec, "externalTrafficPolicy", "Local") &&
	    !json_integer_value(json_object_get(spec, "healthCheckNodePort"))) {
		json_t *hc = json_object_get(old_spec, "healthCheckNodePort");

		if (json_integer_value(hc))
			json_object_set(spec, "healthCheckNodePort", hc);
		else
			json_object_set_new(
				spec, "healthCheckNodePort",
				json_integer(allocate_node_port(c->st, spec)));
	}
}

/*
 * The template generation annotation as the field manager sees a
 * DaemonSet: what the write sends, or "0" when it sends none (apps/v1's
 * conversion writes the internal TemplateGeneration back), so that the
 * creator, or a writer leaving it out, owns the key.
 */
static void daemonset_generation_seen(json_t *obj)
{
	static const char key[] = "deprecated.daemonset.template.generation";
	json_t *ann = diff_json_child(diff_json_child(obj, "metadata"),
				      "annotations");

	if (ann && !diff_json_str(ann, key))
		json_object_set_new(ann, key, json_string("0"));
}

/*
 * A DaemonSet's template generation, which apps/v1 keeps in an
 * annotation: what the writer sends is replaced (the strategy keeps the
 * stored one; 1 on create), and a template change counts one up.
 */
static void daemonset_generation(json_t *obj, const json_t *old)
{
	static const char key[] = "deprecated.daemonset.template.generation";
	const json_t *old_ann = json_object_get(
		json_object_get(old, "metadata"), "annotations");
	const char *was = diff_json_str(old_ann, key);
	json_t *ann = diff_json_child(diff_json_child(obj, "metadata"),
				      "annotations");
	long long gen = was ? strtoll(was, NULL, 10) : 1;
	char text[24];

	if (!ann)
		return;
	if (old &&
	    !json_equal(
		    json_object_get(json_object_get(obj, "spec"), "template"),
		    json_object_get(json_object_get(old, "spec"), "template")))
		gen++;
	snprintf(text, sizeof(text), "%lld", gen < 1 ? 1 : gen);
	json_object_set_new(ann, key, json_string(text));
}

/* The aggregator's PrepareForCreate: a local APIService is available. */
static void local_apiservice(json_t *obj)
{
	char now[32];
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_set_new(
		obj, "status",
		json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}]}", "conditions",
			  "type", "Available", "status", "True",
			  "lastTransitionTime", now, "reason", "Local",
			  "message", "Local APIServices are always available"));
}

/* ---- Pods: admission and the first status ---- */

#define SA_MOUNT_PATH "/var/run/secrets/kubernetes.io/serviceaccount"

static const struct emu_resource *core_resource(const char *plural)
{
	return emu_resource_find("", "v1", plural);
}

/* A container already mounts something at the token's path. */
static bool mounts_token_path(const json_t *ct)
{
	const json_t *m;
	size_t i;

	json_array_foreach(json_object_get(ct, "volumeMounts"), i, m)
	{
		if (diff_json_str_is(m, "mountPath", SA_MOUNT_PATH))
			return true;
	}
	return false;
}

/*
 * The ServiceAccount admission plugin: the account defaults to
 * "default" and must exist; unless automounting is off (the Pod's say,
 * else the account's), a projected kube-api-access-XXXXX volume with the
 * token, the cluster CA and the namespace, mounted read-only in every
 * container. NULL, or the 403 of a missing account.
 */
static json_t *pod_service_account(struct emu_store *st, json_t *pod)
{
	json_t *spec = diff_json_child(pod, "spec"), *vol, *mount, *ct, *list;
	const char *ns =
		diff_json_str(json_object_get(pod, "metadata"), "namespace");
	const char *name =
		diff_json_str(json_object_get(pod, "metadata"), "name");
	const json_t *sa, *auto_pod, *auto_sa;
	static const char *const lists[] = {"initContainers", "containers"};
	struct buf msg = BUF_INIT, vname = BUF_INIT;
	const char *account;
	json_t *status = NULL;
	size_t i, l;

	if (!spec)
		return NULL;
	diff_json_default_str(spec, "serviceAccountName", "default");
	account = diff_json_str(spec, "serviceAccountName");
	sa = emu_store_peek(st, core_resource("serviceaccounts"), ns ? ns : "",
			    account);
	if (!sa) {
		buf_addf(&msg,
			 "pods \"%s\" is forbidden: error looking up service "
			 "account %s/%s: serviceaccount \"%s\" not found",
			 name ? name : "", ns ? ns : "", account, account);
		status = emu_status_new(403, "Forbidden", msg.ptr, name, NULL,
					"pods");
		goto out;
	}
	json_object_set_new(spec, "serviceAccount", json_string(account));
	auto_pod = json_object_get(spec, "automountServiceAccountToken");
	auto_sa = json_object_get(sa, "automountServiceAccountToken");
	if (json_is_false(auto_pod) || (!auto_pod && json_is_false(auto_sa)))
		goto out;
	buf_adds(&vname, "kube-api-access-");
	emu_random_suffix(&vname);
	vol = json_pack(
		"{s:s, s:{s:[{s:{s:i, s:s}}, {s:{s:s, s:[{s:s, s:s}]}}, "
		"{s:{s:[{s:s, s:{s:s, s:s}}]}}], s:i}}",
		"name", vname.ptr, "projected", "sources",
		"serviceAccountToken", "expirationSeconds", 3607, "path",
		"token", "configMap", "name", "kube-root-ca.crt", "items",
		"key", "ca.crt", "path", "ca.crt", "downwardAPI", "items",
		"path", "namespace", "fieldRef", "apiVersion", "v1",
		"fieldPath", "metadata.namespace", "defaultMode", 420);
	list = json_object_get(spec, "volumes");
	if (!json_is_array(list)) {
		list = json_array();
		json_object_set_new(spec, "volumes", list);
	}
	json_array_append_new(list, vol);
	for (l = 0; l < 2; l++)
		json_array_foreach(json_object_get(spec, lists[l]), i, ct)
		{
			if (!json_is_object(ct) || mounts_token_path(ct))
				continue;
			mount = json_pack("{s:s, s:b, s:s}", "name", vname.ptr,
					  "readOnly", 1, "mountPath",
					  SA_MOUNT_PATH);
			list = json_object_get(ct, "volumeMounts");
			if (!json_is_array(list)) {
				list = json_array();
				json_object_set_new(ct, "volumeMounts", list);
			}
			json_array_append_new(list, mount);
		}
out:
	buf_release(&msg);
	buf_release(&vname);
	return status;
}

/* Does a toleration cover the NoExecute taint `key`? */
static bool tolerates(const json_t *tolerations, const char *key)
{
	const json_t *t;
	const char *tk, *e;
	size_t i;

	json_array_foreach((json_t *)tolerations, i, t)
	{
		tk = diff_json_str(t, "key");
		e = diff_json_str(t, "effect");
		if ((!tk || !*tk || !strcmp(tk, key)) &&
		    (!e || !*e || !strcmp(e, "NoExecute")))
			return true;
	}
	return false;
}

/* DefaultTolerationSeconds: 300 s for not-ready and unreachable nodes. */
static void pod_default_tolerations(json_t *spec)
{
	static const char *const keys[] = {"node.kubernetes.io/not-ready",
					   "node.kubernetes.io/unreachable"};
	json_t *list = json_object_get(spec, "tolerations");
	size_t i;

	for (i = 0; i < 2; i++) {
		if (tolerates(list, keys[i]))
			continue;
		if (!json_is_array(list)) {
			list = json_array();
			json_object_set_new(spec, "tolerations", list);
		}
		json_array_append_new(
			list, json_pack("{s:s, s:s, s:s, s:i}", "key", keys[i],
					"operator", "Exists", "effect",
					"NoExecute", "tolerationSeconds", 300));
	}
}

/* qos.GetPodQOS over the containers' cpu and memory. */
static const char *pod_qos(const json_t *spec)
{
	static const char *const lists[] = {"initContainers", "containers"};
	static const char *const names[] = {"cpu", "memory"};
	bool any = false, guaranteed = true;
	const json_t *ct, *res, *lim, *req;
	size_t i, l, n;

	for (l = 0; l < 2; l++)
		json_array_foreach(json_object_get(spec, lists[l]), i, ct)
		{
			res = json_object_get(ct, "resources");
			lim = json_object_get(res, "limits");
			req = json_object_get(res, "requests");
			for (n = 0; n < 2; n++) {
				const json_t *a =
					json_object_get(lim, names[n]);
				const json_t *b =
					json_object_get(req, names[n]);

				if (a || b)
					any = true;
				if (!a || (b && !json_equal(a, b)))
					guaranteed = false;
			}
		}
	if (!any)
		return "BestEffort";
	return guaranteed ? "Guaranteed" : "Burstable";
}

static json_t *pod_prepare(struct emu_store *st, json_t *pod)
{
	json_t *spec, *status;

	if ((status = pod_service_account(st, pod)))
		return status;
	spec = diff_json_child(pod, "spec");
	pod_default_tolerations(spec);
	/* Priority: no class, so priority 0 and the default policy */
	if (!diff_json_str(spec, "priorityClassName"))
		diff_json_default(spec, "priority", json_integer(0));
	diff_json_default_str(spec, "preemptionPolicy", "PreemptLowerPriority");
	status = diff_json_child(pod, "status");
	diff_json_default_str(status, "phase", "Pending");
	diff_json_default_str(status, "qosClass", pod_qos(spec));
	return NULL;
}

json_t *emu_defaults_prepare(struct emu_store *st,
			     const struct emu_resource *res, json_t *obj,
			     const json_t *old)
{
	struct dctx c = {st, res, old};
	const char *g = res->group, *k = res->kind;

	if (!json_is_object(obj))
		return NULL;
	if (!*g && !strcmp(k, "Service"))
		service_allocate(&c, json_object_get(obj, "spec"));
	else if (!*g && !strcmp(k, "Pod") && !old)
		return pod_prepare(st, obj);
	else if (!strcmp(g, "batch") && !strcmp(k, "Job")) {
		if (!old)
			job_selector(obj, diff_json_child(obj, "spec"));
		job_unshare(obj);
	} else if (!strcmp(g, "apps") && !strcmp(k, "DaemonSet"))
		daemonset_generation(obj, old);
	else if (!strcmp(g, "apiregistration.k8s.io") && !old &&
		 diff_json_absent(json_object_get(obj, "spec"), "service"))
		local_apiservice(obj);
	return NULL;
}

json_t *emu_defaults_apply(const struct emu_resource *res, json_t *obj,
			   const json_t *old)
{
	const char *bad;
	struct buf msg = BUF_INIT;
	json_t *status;

	if (!json_is_object(obj))
		return NULL;
	bad = diff_stored_defaults(obj, res->group, res->kind,
				   old ? 0 : DIFF_STORED_CREATE);
	if (!strcmp(res->group, "apps") && !strcmp(res->kind, "DaemonSet"))
		daemonset_generation_seen(obj);
	if (!bad)
		return NULL;
	/*
	 * A quantity is decoded with the object, so kube answers as for a
	 * body it cannot decode: 400, not 422.
	 */
	buf_addf(&msg, "%s in version \"%s\" cannot be handled as a %s: %s",
		 res->kind, res->version, res->kind, bad);
	status = emu_status_new(400, "BadRequest", buf_cstr(&msg), NULL, NULL,
				NULL);
	buf_release(&msg);
	return status;
}
