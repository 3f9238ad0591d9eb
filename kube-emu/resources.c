/*
 * The built-in resource table and the discovery documents made from it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kube-emu/emu.h"
#include "util/base64.h"
#include "util/sha256.h"

#include "util/banned.h" /* last */

#define NS  EMU_RES_NAMESPACED
#define ST  EMU_RES_STATUS
#define SC  EMU_RES_SCALE
#define GEN EMU_RES_GENERATION
#define SUB EMU_NAME_SUBDOMAIN
#define ALL EMU_RES_CAT_ALL

/*
 * As kube-apiserver 1.36 registers them. Generation is kept only by the
 * kinds whose registry strategy sets it (not ConfigMaps, Secrets, ...).
 * DaemonSets have no /scale in Kubernetes, so none here either.
 */
const struct emu_resource emu_resources[] = {
	{"", "v1", "namespaces", "namespace", "Namespace", "ns", ST,
	 EMU_NAME_LABEL},
	{"", "v1", "configmaps", "configmap", "ConfigMap", "cm", NS, SUB},
	{"", "v1", "secrets", "secret", "Secret", NULL, NS, SUB},
	{"", "v1", "services", "service", "Service", "svc", ALL | NS | ST,
	 EMU_NAME_LABEL},
	{"", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", "sa",
	 NS, SUB},
	{"", "v1", "pods", "pod", "Pod", "po", ALL | NS | ST | GEN, SUB},
	{"", "v1", "endpoints", "endpoints", "Endpoints", "ep", NS, SUB},
	{"", "v1", "events", "event", "Event", "ev", NS, SUB},
	{"apps", "v1", "deployments", "deployment", "Deployment", "deploy",
	 ALL | NS | ST | SC | GEN, SUB},
	{"apps", "v1", "statefulsets", "statefulset", "StatefulSet", "sts",
	 ALL | NS | ST | SC | GEN, SUB},
	{"apps", "v1", "daemonsets", "daemonset", "DaemonSet", "ds",
	 ALL | NS | ST | GEN, SUB},
	{"apps", "v1", "replicasets", "replicaset", "ReplicaSet", "rs",
	 ALL | NS | ST | SC | GEN, SUB},
	{"batch", "v1", "jobs", "job", "Job", NULL, ALL | NS | ST | GEN, SUB},
	{"batch", "v1", "cronjobs", "cronjob", "CronJob", "cj",
	 ALL | NS | ST | GEN, SUB},
	{"rbac.authorization.k8s.io", "v1", "roles", "role", "Role", NULL, NS,
	 EMU_NAME_PATH},
	{"rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding",
	 "RoleBinding", NULL, NS, EMU_NAME_PATH},
	{"rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole",
	 "ClusterRole", NULL, 0, EMU_NAME_PATH},
	{"rbac.authorization.k8s.io", "v1", "clusterrolebindings",
	 "clusterrolebinding", "ClusterRoleBinding", NULL, 0, EMU_NAME_PATH},
	{"networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", "ing",
	 NS | ST | GEN, SUB},
	{"networking.k8s.io", "v1", "networkpolicies", "networkpolicy",
	 "NetworkPolicy", "netpol", NS | GEN, SUB},
	{"policy", "v1", "poddisruptionbudgets", "poddisruptionbudget",
	 "PodDisruptionBudget", "pdb", NS | ST | GEN, SUB},
	{"autoscaling", "v2", "horizontalpodautoscalers",
	 "horizontalpodautoscaler", "HorizontalPodAutoscaler", "hpa",
	 ALL | NS | ST, SUB},
	{"coordination.k8s.io", "v1", "leases", "lease", "Lease", NULL, NS,
	 SUB},
	{"events.k8s.io", "v1", "events", "event", "Event", "ev", NS, SUB},
	{"apiextensions.k8s.io", "v1", "customresourcedefinitions",
	 "customresourcedefinition", "CustomResourceDefinition", "crd,crds",
	 ST | GEN, SUB},
	{"apiregistration.k8s.io", "v1", "apiservices", "apiservice",
	 "APIService", NULL, ST, SUB},
	{NULL, NULL, NULL, NULL, NULL, NULL, 0, SUB},
};

const struct emu_resource *
emu_resource_find(const char *group, const char *version, const char *name)
{
	const struct emu_resource *r;

	for (r = emu_resources; r->name; r++)
		if (!strcmp(r->group, group) && !strcmp(r->version, version) &&
		    !strcmp(r->name, name))
			return r;
	return emu_crd_find(group, version, name);
}

void emu_resource_qualified(const struct emu_resource *res, struct buf *out)
{
	if (*res->group)
		buf_addf(out, "%s.%s", res->name, res->group);
	else
		buf_adds(out, res->name);
}

void emu_resource_api_version(const struct emu_resource *res, struct buf *out)
{
	if (*res->group)
		buf_addf(out, "%s/%s", res->group, res->version);
	else
		buf_adds(out, res->version);
}

json_t *emu_discovery_version(void)
{
	/* The emulated version is the binary's (no --emulated-version). */
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, "
			 "s:s, s:s, s:s}",
			 "major", EMU_KUBE_MAJOR, "minor", EMU_KUBE_MINOR,
			 "emulationMajor", EMU_KUBE_MAJOR, "emulationMinor",
			 EMU_KUBE_MINOR, "minCompatibilityMajor",
			 EMU_KUBE_MAJOR, "minCompatibilityMinor",
			 EMU_KUBE_MIN_COMPAT_MINOR, "gitVersion",
			 EMU_KUBE_GIT_VERSION, "gitCommit",
			 "0000000000000000000000000000000000000000",
			 "gitTreeState", "clean", "buildDate",
			 "2026-01-01T00:00:00Z", "goVersion", "go1.26.8",
			 "compiler", "gc", "platform", "linux/amd64");
}

json_t *emu_discovery_api(const char *host)
{
	return json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions",
			 "versions", "v1", "serverAddressByClientCIDRs",
			 "clientCIDR", "0.0.0.0/0", "serverAddress", host);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Has an earlier table entry the same group (and version when given)? */
static bool seen_before(const struct emu_resource *r, bool with_version)
{
	const struct emu_resource *p;

	for (p = emu_resources; p != r; p++)
		if (!strcmp(p->group, r->group) &&
		    (!with_version || !strcmp(p->version, r->version)))
			return true;
	return false;
}

/*
 * Kube's version order ("kube-aware"): GA before beta before alpha,
 * higher numbers first; other strings after them, alphabetically.
 */
static int version_rank(const char *v, long *major, long *minor)
{
	char *end;

	*major = *minor = 0;
	if (v[0] != 'v' || v[1] < '1' || v[1] > '9')
		return 3;
	*major = strtol(v + 1, &end, 10);
	if (!*end)
		return 0;
	if (!strncmp(end, "beta", 4) && end[4] >= '1' && end[4] <= '9') {
		*minor = strtol(end + 4, &end, 10);
		return *end ? 3 : 1;
	}
	if (!strncmp(end, "alpha", 5) && end[5] >= '1' && end[5] <= '9') {
		*minor = strtol(end + 5, &end, 10);
		return *end ? 3 : 2;
	}
	return 3;
}

static int version_cmp(const void *a, const void *b)
{
	const char *x = json_string_value(*(json_t *const *)a);
	const char *y = json_string_value(*(json_t *const *)b);
	long xm, xn, ym, yn;
	int rx = version_rank(x, &xm, &xn), ry = version_rank(y, &ym, &yn);

	if (rx != ry)
		return rx - ry;
	if (rx == 3)
		return strcmp(x, y);
	if (xm != ym)
		return xm > ym ? -1 : 1;
	if (xn != yn)
		return xn > yn ? -1 : 1;
	return 0;
}

/* Collects {group: {version: true}} of the custom resources. */
static void collect_group(const struct emu_resource *res,
			  const json_t *categories, const json_t *schema,
			  void *arg)
{
	json_t *groups = arg, *g = json_object_get(groups, res->group);

	(void)categories;
	(void)schema;
	if (!g) {
		g = json_object();
		json_object_set_new(groups, res->group, g);
	}
	json_object_set_new(g, res->version, json_true());
}

/* The versions of one custom group, in kube's order (new reference). */
static json_t *sorted_versions(const json_t *versions)
{
	const char *v;
	json_t *val, **arr, *out = json_array();
	size_t n = 0, i;

	arr = calloc(json_object_size(versions) + 1, sizeof(*arr));
	if (!arr)
		return out;
	json_object_foreach((json_t *)versions, v, val)
	{
		arr[n++] = json_string(v);
	}
	qsort(arr, n, sizeof(*arr), version_cmp);
	for (i = 0; i < n; i++)
		json_array_append_new(out, arr[i]);
	free(arr);
	return out;
}

static json_t *group_json(const char *group, const json_t *versions)
{
	json_t *vs = json_array(), *v, *g;
	char gv[256];
	size_t i;

	json_array_foreach(versions, i, v)
	{
		snprintf(gv, sizeof(gv), "%s/%s", group, json_string_value(v));
		json_array_append_new(
			vs, json_pack("{s:s, s:s}", "groupVersion", gv,
				      "version", json_string_value(v)));
	}
	g = json_pack("{s:s, s:o, s:O}", "name", group, "versions", vs,
		      "preferredVersion", json_array_get(vs, 0));
	return g;
}

/*
 * The groups of the custom resources, after the built-in ones as the
 * aggregator orders them (lower priority), alphabetically.
 */
static void add_custom_groups(json_t *groups)
{
	json_t *custom = json_object(), *versions;
	const char **names;
	const char *g;
	json_t *val;
	size_t n = 0, i;

	emu_crd_foreach(collect_group, custom);
	names = calloc(json_object_size(custom) + 1, sizeof(*names));
	if (names) {
		json_object_foreach(custom, g, val)
		{
			names[n++] = g;
		}
		qsort(names, n, sizeof(*names), str_cmp);
		for (i = 0; i < n; i++) {
			versions = sorted_versions(
				json_object_get(custom, names[i]));
			json_array_append_new(groups,
					      group_json(names[i], versions));
			json_decref(versions);
		}
	}
	free(names);
	json_decref(custom);
}

json_t *emu_discovery_groups(void)
{
	const struct emu_resource *r;
	json_t *groups = json_array();
	char gv[256];

	for (r = emu_resources; r->name; r++) {
		if (!*r->group || seen_before(r, false))
			continue;
		snprintf(gv, sizeof(gv), "%s/%s", r->group, r->version);
		json_array_append_new(
			groups,
			json_pack("{s:s, s:[{s:s, s:s}], s:{s:s, s:s}}", "name",
				  r->group, "versions", "groupVersion", gv,
				  "version", r->version, "preferredVersion",
				  "groupVersion", gv, "version", r->version));
	}
	add_custom_groups(groups);
	return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList",
			 "apiVersion", "v1", "groups", groups);
}

static json_t *verbs_json(const struct emu_resource *r)
{
	if (!strcmp(r->name, "namespaces"))
		return json_pack("[s,s,s,s,s,s,s]", "create", "delete", "get",
				 "list", "patch", "update", "watch");
	return json_pack("[s,s,s,s,s,s,s,s]", "create", "delete",
			 "deletecollection", "get", "list", "patch", "update",
			 "watch");
}

static json_t *short_names_json(const char *s)
{
	json_t *arr = json_array();
	const char *comma;

	while (s && *s) {
		comma = strchr(s, ',');
		if (!comma)
			comma = s + strlen(s);
		json_array_append_new(arr, json_stringn(s, comma - s));
		s = *comma ? comma + 1 : comma;
	}
	return arr;
}

static json_t *subresource_json(const struct emu_resource *r, const char *sub)
{
	char name[160];
	json_t *o;

	snprintf(name, sizeof(name), "%s/%s", r->name, sub);
	o = json_pack("{s:s, s:s, s:b, s:s, s:[s,s,s]}", "name", name,
		      "singularName", "", "namespaced",
		      (r->flags & EMU_RES_NAMESPACED) != 0, "kind",
		      strcmp(sub, "scale") ? r->kind : "Scale", "verbs", "get",
		      "patch", "update");
	if (!strcmp(sub, "scale")) {
		json_object_set_new(o, "group", json_string("autoscaling"));
		json_object_set_new(o, "version", json_string("v1"));
	}
	return o;
}

/*
 * discovery.StorageVersionHash: the first 8 bytes of the SHA-256 of the
 * storage "group/version/kind", base64. events.k8s.io's Events are
 * stored as core v1 Events.
 */
static json_t *storage_version_hash(const struct emu_resource *r)
{
	const char *g = strcmp(r->group, "events.k8s.io") ? r->group : "";
	struct sha256_ctx ctx;
	uint8_t sum[SHA256_DIGEST_SIZE];
	struct buf gvk = BUF_INIT, out = BUF_INIT;
	json_t *hash = NULL;

	buf_addf(&gvk, "%s/%s/%s", g, r->version, r->kind);
	sha256_init(&ctx);
	sha256_update(&ctx, gvk.ptr, gvk.len);
	sha256_final(&ctx, sum);
	if (base64_encode(&out, sum, 8, 0) == 0)
		hash = json_string(buf_cstr(&out));
	buf_release(&gvk);
	buf_release(&out);
	return hash;
}

/* Append r and its subresources to list; categories NULL: from flags. */
static void add_resource(json_t *list, const struct emu_resource *r,
			 const json_t *categories)
{
	json_t *o;

	o = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", r->name,
		      "singularName", r->singular, "namespaced",
		      (r->flags & EMU_RES_NAMESPACED) != 0, "kind", r->kind,
		      "verbs", verbs_json(r));
	json_object_set_new(o, "storageVersionHash", storage_version_hash(r));
	if (r->short_names)
		json_object_set_new(o, "shortNames",
				    short_names_json(r->short_names));
	if (categories && json_array_size(categories))
		json_object_set_new(o, "categories",
				    json_deep_copy(categories));
	else if (!categories && (r->flags & EMU_RES_CAT_ALL))
		json_object_set_new(o, "categories", json_pack("[s]", "all"));
	json_array_append_new(list, o);
	if (r->flags & EMU_RES_STATUS)
		json_array_append_new(list, subresource_json(r, "status"));
	if (r->flags & EMU_RES_SCALE)
		json_array_append_new(list, subresource_json(r, "scale"));
}

static int by_name(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a,
							"name")),
		      json_string_value(json_object_get(*(json_t *const *)b,
							"name")));
}

/* The list sorted by resource name, as kube-apiserver lists them. */
static json_t *sorted_by_name(json_t *list)
{
	size_t n = json_array_size(list), i;
	json_t **items = n ? malloc(n * sizeof(*items)) : NULL, *out;

	if (!items)
		return list;
	for (i = 0; i < n; i++)
		items[i] = json_array_get(list, i);
	qsort(items, n, sizeof(*items), by_name);
	out = json_array();
	for (i = 0; out && i < n; i++)
		json_array_append(out, items[i]);
	free(items);
	if (!out)
		return list;
	json_decref(list);
	return out;
}

struct gv_filter {
	const char *group;
	const char *version;
	json_t *list; /* NULL until something matched */
};

static void add_custom_resource(const struct emu_resource *res,
				const json_t *categories, const json_t *schema,
				void *arg)
{
	struct gv_filter *f = arg;

	(void)schema;
	if (strcmp(res->group, f->group) || strcmp(res->version, f->version))
		return;
	if (!f->list)
		f->list = json_array();
	add_resource(f->list, res, categories);
}

json_t *emu_discovery_resources(const char *group, const char *version)
{
	const struct emu_resource *r;
	struct gv_filter f = {group, version, NULL};
	char gv[256];

	for (r = emu_resources; r->name; r++) {
		if (strcmp(r->group, group) || strcmp(r->version, version))
			continue;
		if (!f.list)
			f.list = json_array();
		add_resource(f.list, r, NULL);
	}
	emu_crd_foreach(add_custom_resource, &f);
	if (!f.list)
		return NULL;
	f.list = sorted_by_name(f.list);
	if (*group)
		snprintf(gv, sizeof(gv), "%s/%s", group, version);
	else
		snprintf(gv, sizeof(gv), "%s", version);
	return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList",
			 "apiVersion", "v1", "groupVersion", gv, "resources",
			 f.list);
}

/* Is [p, p+n) equal to s, ignoring case? */
static bool token_is(const char *p, size_t n, const char *s)
{
	return strlen(s) == n && !strncasecmp(p, s, n);
}

/* [*p, *p+*n) without the blanks around it. */
static void trim(const char **p, size_t *n)
{
	while (*n && (**p == ' ' || **p == '\t')) {
		(*p)++;
		(*n)--;
	}
	while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
		(*n)--;
}

/* A parameter value of a media range: its text and length. */
struct media_param {
	const char *p;
	size_t n;
};

/* Is the parameter there and equal to s (case-sensitive, as kube)? */
static bool param_is(const struct media_param *v, const char *s)
{
	return v->p && strlen(s) == v->n && !strncmp(v->p, s, v->n);
}

/*
 * One media range of an Accept header: 1 for aggregated discovery (the
 * version in *version), 0 for plain JSON, -1 for something else (e.g.
 * protobuf, which this server does not encode discovery in).
 */
static int media_range(const char *p, size_t n, const char **version)
{
	const char *semi = memchr(p, ';', n), *t = p, *k, *eq;
	struct media_param g = {NULL, 0}, as = {NULL, 0}, v = {NULL, 0}, val;
	size_t tn = semi ? (size_t)(semi - p) : n, pn, kn;

	trim(&t, &tn);
	while (semi) {
		k = semi + 1;
		semi = memchr(k, ';', n - (size_t)(k - p));
		pn = semi ? (size_t)(semi - k) : n - (size_t)(k - p);
		if (!(eq = memchr(k, '=', pn)))
			continue;
		kn = (size_t)(eq - k);
		val.p = eq + 1;
		val.n = pn - kn - 1;
		trim(&k, &kn);
		trim(&val.p, &val.n);
		if (token_is(k, kn, "g"))
			g = val;
		else if (token_is(k, kn, "as"))
			as = val;
		else if (token_is(k, kn, "v"))
			v = val;
	}
	if (!g.p && !as.p)
		return token_is(t, tn, "application/json") ||
				       token_is(t, tn, "application/*") ||
				       token_is(t, tn, "*/*")
			       ? 0
			       : -1;
	if (!token_is(t, tn, "application/json") ||
	    !param_is(&g, "apidiscovery.k8s.io") ||
	    !param_is(&as, "APIGroupDiscoveryList"))
		return -1;
	if (param_is(&v, "v2"))
		*version = "v2";
	else if (param_is(&v, "v2beta1"))
		*version = "v2beta1";
	else
		return -1;
	return 1;
}

/*
 * The first media range this server can answer decides, as kube's
 * negotiation does (q values are not weighed: clients list the ranges
 * in the order they prefer them).
 */
const char *emu_discovery_aggregated_wanted(const char *accept)
{
	const char *p = accept, *comma, *version = NULL;
	size_t n;
	int r;

	while (p && *p) {
		comma = strchr(p, ',');
		n = comma ? (size_t)(comma - p) : strlen(p);
		r = media_range(p, n, &version);
		if (r == 1)
			return version;
		if (r == 0)
			return NULL;
		p = comma ? comma + 1 : NULL;
	}
	return NULL;
}

/* One APIResourceList entry as an APIResourceDiscovery (no subresources). */
static json_t *resource_discovery(const json_t *e, const char *group,
				  const char *version)
{
	json_t *o, *v;

	o = json_pack("{s:O, s:{s:s, s:s, s:O}, s:s, s:O, s:O}", "resource",
		      json_object_get(e, "name"), "responseKind", "group",
		      group, "version", version, "kind",
		      json_object_get(e, "kind"), "scope",
		      json_is_true(json_object_get(e, "namespaced"))
			      ? "Namespaced"
			      : "Cluster",
		      "singularResource", json_object_get(e, "singularName"),
		      "verbs", json_object_get(e, "verbs"));
	if (!o)
		return NULL;
	if ((v = json_object_get(e, "shortNames")))
		json_object_set(o, "shortNames", v);
	if ((v = json_object_get(e, "categories")))
		json_object_set(o, "categories", v);
	return o;
}

/* A "parent/sub" entry as an APISubresourceDiscovery of its parent. */
static void add_subresource(json_t *resources, const json_t *e,
			    const char *slash, const char *group,
			    const char *version)
{
	const char *name = json_string_value(json_object_get(e, "name"));
	json_t *r, *subs, *sub;
	const char *g = json_string_value(json_object_get(e, "group"));
	const char *v = json_string_value(json_object_get(e, "version"));
	size_t i, plen = (size_t)(slash - name);

	json_array_foreach(resources, i, r)
	{
		const char *rn =
			json_string_value(json_object_get(r, "resource"));

		if (strlen(rn) != plen || strncmp(rn, name, plen))
			continue;
		sub = json_pack("{s:s, s:{s:s, s:s, s:O}, s:O}", "subresource",
				slash + 1, "responseKind", "group",
				g ? g : group, "version", v ? v : version,
				"kind", json_object_get(e, "kind"), "verbs",
				json_object_get(e, "verbs"));
		if (!sub)
			return;
		subs = json_object_get(r, "subresources");
		if (!subs) {
			subs = json_array();
			json_object_set_new(r, "subresources", subs);
		}
		json_array_append_new(subs, sub);
		return;
	}
}

/* The APIVersionDiscovery of group/version (NULL: not served). */
static json_t *version_discovery(const char *group, const char *version)
{
	json_t *list = emu_discovery_resources(group, version), *e, *out;
	json_t *resources = json_array();
	const char *name, *slash;
	size_t i;

	if (!list) {
		json_decref(resources);
		return NULL;
	}
	/* Parents come before their subresources in the plain document. */
	json_array_foreach(json_object_get(list, "resources"), i, e)
	{
		name = json_string_value(json_object_get(e, "name"));
		if (!name)
			continue;
		if ((slash = strchr(name, '/')))
			add_subresource(resources, e, slash, group, version);
		else
			json_array_append_new(
				resources,
				resource_discovery(e, group, version));
	}
	json_decref(list);
	out = json_pack("{s:s, s:o, s:s}", "version", version, "resources",
			resources, "freshness", "Current");
	return out;
}

json_t *emu_discovery_aggregated(bool core, const char *version)
{
	json_t *items = json_array(), *groups, *g, *v, *versions, *vd;
	char api_version[64];
	size_t i, j;

	if (core) {
		versions = json_array();
		if ((vd = version_discovery("", "v1")))
			json_array_append_new(versions, vd);
		json_array_append_new(items,
				      json_pack("{s:{s:s}, s:o}", "metadata",
						"name", "", "versions",
						versions));
	} else {
		/* The order of /apis: priority, then each group's
		 * versions, the preferred one first. */
		groups = emu_discovery_groups();
		json_array_foreach(json_object_get(groups, "groups"), i, g)
		{
			const char *name =
				json_string_value(json_object_get(g, "name"));

			versions = json_array();
			json_array_foreach(json_object_get(g, "versions"), j, v)
			{
				vd = version_discovery(
					name, json_string_value(json_object_get(
						      v, "version")));
				if (vd)
					json_array_append_new(versions, vd);
			}
			json_array_append_new(
				items, json_pack("{s:{s:s}, s:o}", "metadata",
						 "name", name, "versions",
						 versions));
		}
		json_decref(groups);
	}
	snprintf(api_version, sizeof(api_version), "apidiscovery.k8s.io/%s",
		 version);
	return json_pack("{s:s, s:s, s:{}, s:o}", "kind",
			 "APIGroupDiscoveryList", "apiVersion", api_version,
			 "metadata", "items", items);
}

static void index_add(json_t *paths, const char *group, const char *version)
{
	char key[256], url[300];

	if (*group)
		snprintf(key, sizeof(key), "apis/%s/%s", group, version);
	else
		snprintf(key, sizeof(key), "api/%s", version);
	snprintf(url, sizeof(url), "/openapi/v3/%s?hash=0", key);
	json_object_set_new(paths, key,
			    json_pack("{s:s}", "serverRelativeURL", url));
}

static void index_add_custom(const struct emu_resource *res,
			     const json_t *categories, const json_t *schema,
			     void *arg)
{
	(void)categories;
	(void)schema;
	index_add(arg, res->group, res->version);
}

json_t *emu_openapi_v3_index(void)
{
	const struct emu_resource *r;
	json_t *paths = json_object();

	for (r = emu_resources; r->name; r++)
		if (!seen_before(r, true))
			index_add(paths, r->group, r->version);
	emu_crd_foreach(index_add_custom, paths);
	return json_pack("{s:o}", "paths", paths);
}

/* The query parameters kubectl looks for on writes. */
static json_t *write_params(void)
{
	static const char *const names[] = {"dryRun", "fieldManager",
					    "fieldValidation", "force"};
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		json_array_append_new(
			arr, json_pack("{s:s, s:s, s:b, s:{s:s}}", "name",
				       names[i], "in", "query", "uniqueItems",
				       1, "schema", "type",
				       strcmp(names[i], "force") ? "string"
								 : "boolean"));
	return arr;
}

static json_t *operation(const struct emu_resource *r, const char *action,
			 bool with_params)
{
	json_t *op =
		json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "operationId",
			  action, "x-kubernetes-action", action,
			  "x-kubernetes-group-version-kind", "group", r->group,
			  "version", r->version, "kind", r->kind);

	if (with_params)
		json_object_set_new(op, "parameters", write_params());
	return op;
}

struct openapi_doc {
	const char *group;
	const char *version;
	json_t *paths;
	json_t *schemas;
	bool found;
};

/* The paths and schema of one resource; schema NULL: any object. */
static void doc_add(struct openapi_doc *d, const struct emu_resource *r,
		    const json_t *schema)
{
	char base[256], coll[400], item[420], name[256];
	json_t *s;

	d->found = true;
	if (*r->group)
		snprintf(base, sizeof(base), "/apis/%s/%s", r->group,
			 r->version);
	else
		snprintf(base, sizeof(base), "/api/%s", r->version);
	snprintf(coll, sizeof(coll), "%s%s/%s", base,
		 (r->flags & EMU_RES_NAMESPACED) ? "/namespaces/{namespace}"
						 : "",
		 r->name);
	snprintf(item, sizeof(item), "%s/{name}", coll);
	json_object_set_new(d->paths, coll,
			    json_pack("{s:o, s:o}", "get",
				      operation(r, "list", false), "post",
				      operation(r, "post", true)));
	json_object_set_new(d->paths, item,
			    json_pack("{s:o, s:o, s:o, s:o}", "get",
				      operation(r, "get", false), "put",
				      operation(r, "put", true), "patch",
				      operation(r, "patch", true), "delete",
				      operation(r, "delete", false)));
	snprintf(name, sizeof(name), "io.k8s.emu.%s.%s.%s",
		 *r->group ? r->group : "core", r->version, r->kind);
	if (schema) {
		s = json_deep_copy(schema);
	} else {
		s = json_pack("{s:s, s:b}", "type", "object",
			      "x-kubernetes-preserve-unknown-fields", 1);
	}
	json_object_set_new(s, "x-kubernetes-group-version-kind",
			    json_pack("[{s:s, s:s, s:s}]", "group", r->group,
				      "version", r->version, "kind", r->kind));
	json_object_set_new(d->schemas, name, s);
}

static void doc_add_custom(const struct emu_resource *res,
			   const json_t *categories, const json_t *schema,
			   void *arg)
{
	struct openapi_doc *d = arg;

	(void)categories;
	if (!strcmp(res->group, d->group) && !strcmp(res->version, d->version))
		doc_add(d, res, schema);
}

json_t *emu_openapi_v3_doc(const char *group, const char *version)
{
	const struct emu_resource *r;
	struct openapi_doc d = {group, version, json_object(), json_object(),
				false};

	for (r = emu_resources; r->name; r++)
		if (!strcmp(r->group, group) && !strcmp(r->version, version))
			doc_add(&d, r, NULL);
	emu_crd_foreach(doc_add_custom, &d);
	if (!d.found) {
		json_decref(d.paths);
		json_decref(d.schemas);
		return NULL;
	}
	return json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:o}}", "openapi",
			 "3.0.0", "info", "title", "Kubernetes", "version",
			 EMU_KUBE_GIT_VERSION, "paths", d.paths, "components",
			 "schemas", d.schemas);
}

json_t *emu_openapi_v2(void)
{
	return json_pack("{s:s, s:{s:s, s:s}, s:{}, s:{}}", "swagger", "2.0",
			 "info", "title", "Kubernetes", "version",
			 EMU_KUBE_GIT_VERSION, "paths", "definitions");
}
