/*
 * Server-side printing: the meta.k8s.io/v1 Table that kube-apiserver
 * answers when a client (kubectl get) asks for it in its Accept header.
 * The columns and cells follow kubernetes' pkg/printers/internalversion
 * for the kinds tests look at; any other built-in kind gets the default
 * table (Name, Created At), a custom resource Name and Age, as the API
 * server does for a CRD without additionalPrinterColumns.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kube-emu/emu.h"
#include "util/clock.h"

#include "util/banned.h" /* last */

/* A column: its name, type, format and priority (0 shown by default). */
struct column {
	const char *name;
	const char *type;
	const char *format;
	int priority;
};

/* The columns of one resource and the function filling a row's cells. */
struct printer {
	const char *group;
	const char *resource;
	const struct column *columns;
	void (*cells)(const json_t *obj, json_t *cells);
};

static const json_t *at(const json_t *obj, const char *a, const char *b)
{
	const json_t *v = json_object_get(obj, a);

	return b ? json_object_get(v, b) : v;
}

static json_int_t int_at(const json_t *obj, const char *a, const char *b)
{
	return json_integer_value(at(obj, a, b));
}

static const char *str_or(const json_t *v, const char *dflt)
{
	const char *s = json_string_value(v);

	return s && *s ? s : dflt;
}

static void add_str(json_t *cells, const char *s)
{
	json_array_append_new(cells, json_string(s));
}

static void add_int(json_t *cells, json_int_t n)
{
	json_array_append_new(cells, json_integer(n));
}

static void add_fmt(json_t *cells, const char *fmt, json_int_t a, json_int_t b)
{
	char s[64];

	snprintf(s, sizeof(s), fmt, (long long)a, (long long)b);
	add_str(cells, s);
}

static time_t parse_time(const char *s)
{
	time_t t;

	return clk_rfc3339_parse(s, &t) < 0 ? (time_t)-1 : t;
}

/*
 * Go's duration.HumanDuration, as `kubectl get` shows ages: "45s",
 * "5m3s", "3h20m", "2d4h", "1y20d".
 */
static void human_duration(long long sec, char *out, size_t n)
{
	long long min = sec / 60, h = sec / 3600, d = h / 24;

	if (sec < -1)
		snprintf(out, n, "<invalid>");
	else if (sec < 0)
		snprintf(out, n, "0s");
	else if (sec < 120)
		snprintf(out, n, "%llds", sec);
	else if (min < 10 && sec % 60)
		snprintf(out, n, "%lldm%llds", min, sec % 60);
	else if (min < 180)
		snprintf(out, n, "%lldm", min);
	else if (h < 8 && min % 60)
		snprintf(out, n, "%lldh%lldm", h, min % 60);
	else if (h < 48)
		snprintf(out, n, "%lldh", h);
	else if (h < 24 * 8 && h % 24)
		snprintf(out, n, "%lldd%lldh", d, h % 24);
	else if (h < 24 * 365 * 2)
		snprintf(out, n, "%lldd", d);
	else if (h < 24 * 365 * 8 && d % 365)
		snprintf(out, n, "%lldy%lldd", d / 365, d % 365);
	else
		snprintf(out, n, "%lldy", d / 365);
}

static void add_age(json_t *cells, const json_t *obj)
{
	time_t t = parse_time(
		json_string_value(at(obj, "metadata", "creationTimestamp")));
	char s[32];

	if (t == (time_t)-1) {
		add_str(cells, "<unknown>");
		return;
	}
	human_duration((long long)(time(NULL) - t), s, sizeof(s));
	add_str(cells, s);
}

static void add_name(json_t *cells, const json_t *obj)
{
	add_str(cells, str_or(at(obj, "metadata", "name"), ""));
}

/* "a=b,c=d" of a string map, or "<none>". */
static void add_map(json_t *cells, const json_t *map)
{
	struct buf b = BUF_INIT;
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)map, k, v)
		buf_addf(&b, "%s%s=%s", b.len ? "," : "", k,
			 str_or(v, ""));
	add_str(cells, b.len ? b.ptr : "<none>");
	buf_release(&b);
}

/* A LabelSelector as `kubectl` prints it ("app=web"), or "<none>". */
static void add_selector(json_t *cells, const json_t *sel)
{
	add_map(cells, json_object_get(sel, "matchLabels"));
}

/* Containers and Images of a pod template (wide columns). */
static void add_containers(json_t *cells, const json_t *podspec)
{
	struct buf names = BUF_INIT, images = BUF_INIT;
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(podspec, "containers"), i, c)
	{
		buf_addf(&names, "%s%s", i ? "," : "",
			 str_or(json_object_get(c, "name"), ""));
		buf_addf(&images, "%s%s", i ? "," : "",
			 str_or(json_object_get(c, "image"), ""));
	}
	add_str(cells, buf_cstr(&names));
	add_str(cells, buf_cstr(&images));
	buf_release(&names);
	buf_release(&images);
}

static const json_t *template_spec(const json_t *obj)
{
	return at(at(obj, "spec", "template"), "spec", NULL);
}

static const struct column cols_default[] = {
	{"Name", "string", "name", 0},
	{"Created At", "date", "", 0},
	{NULL, NULL, NULL, 0},
};

static void cells_default(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_str(cells, str_or(at(obj, "metadata", "creationTimestamp"), ""));
}

static const struct column cols_age[] = {
	{"Name", "string", "name", 0},
	{"Age", "string", "", 0},
	{NULL, NULL, NULL, 0},
};

static void cells_age(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_age(cells, obj);
}

static const struct column cols_namespace[] = {
	{"Name", "string", "name", 0},
	{"Status", "string", "", 0},
	{"Age", "string", "", 0},
	{NULL, NULL, NULL, 0},
};

static void cells_namespace(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_str(cells, str_or(at(obj, "status", "phase"), ""));
	add_age(cells, obj);
}

static const struct column cols_configmap[] = {
	{"Name", "string", "name", 0},
	{"Data", "integer", "", 0},
	{"Age", "string", "", 0},
	{NULL, NULL, NULL, 0},
};

static void cells_configmap(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_int(cells, (json_int_t)(json_object_size(at(obj, "data", NULL)) +
				    json_object_size(
					    at(obj, "binaryData", NULL))));
	add_age(cells, obj);
}

static const struct column cols_secret[] = {
	{"Name", "string", "name", 0},
	{"Type", "string", "", 0},
	{"Data", "integer", "", 0},
	{"Age", "string", "", 0},
	{NULL, NULL, NULL, 0},
};

static void cells_secret(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_str(cells, str_or(at(obj, "type", NULL), ""));
	add_int(cells, (json_int_t)json_object_size(at(obj, "data", NULL)));
	add_age(cells, obj);
}

static const struct column cols_serviceaccount[] = {
	{"Name", "string", "name", 0},
	{"Secrets", "string", "", 0},
	{"Age", "string", "", 0},
	{NULL, NULL, NULL, 0},
};

static void cells_serviceaccount(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_fmt(cells, "%lld",
		(json_int_t)json_array_size(at(obj, "secrets", NULL)), 0);
	add_age(cells, obj);
}

static const struct column cols_service[] = {
	{"Name", "string", "name", 0},
	{"Type", "string", "", 0},
	{"Cluster-IP", "string", "", 0},
	{"External-IP", "string", "", 0},
	{"Port(s)", "string", "", 0},
	{"Age", "string", "", 0},
	{"Selector", "string", "", 1},
	{NULL, NULL, NULL, 0},
};

static void cells_service(const json_t *obj, json_t *cells)
{
	const json_t *spec = at(obj, "spec", NULL), *p, *ext;
	const char *type = str_or(json_object_get(spec, "type"), "ClusterIP");
	struct buf ports = BUF_INIT, ips = BUF_INIT;
	json_t *ip;
	size_t i;

	add_name(cells, obj);
	add_str(cells, type);
	add_str(cells, str_or(json_object_get(spec, "clusterIP"), "<none>"));
	if (!strcmp(type, "ExternalName")) {
		add_str(cells, str_or(json_object_get(spec, "externalName"),
				      "<none>"));
	} else {
		ext = json_object_get(spec, "externalIPs");
		json_array_foreach((json_t *)ext, i, ip)
			buf_addf(&ips, "%s%s", i ? "," : "", str_or(ip, ""));
		if (!ips.len && !strcmp(type, "LoadBalancer"))
			buf_adds(&ips, "<pending>");
		add_str(cells, ips.len ? ips.ptr : "<none>");
	}
	json_array_foreach(json_object_get(spec, "ports"), i, p)
	{
		buf_addf(&ports, "%s%lld", i ? "," : "",
			 (long long)int_at(p, "port", NULL));
		if (json_integer_value(json_object_get(p, "nodePort")))
			buf_addf(&ports, ":%lld",
				 (long long)int_at(p, "nodePort", NULL));
		buf_addf(&ports, "/%s",
			 str_or(json_object_get(p, "protocol"), "TCP"));
	}
	add_str(cells, ports.len ? ports.ptr : "<none>");
	add_age(cells, obj);
	add_map(cells, json_object_get(spec, "selector"));
	buf_release(&ports);
	buf_release(&ips);
}

static json_int_t replicas_of(const json_t *obj)
{
	const json_t *r = at(obj, "spec", "replicas");

	return r ? json_integer_value(r) : 1;
}

static const struct column cols_deployment[] = {
	{"Name", "string", "name", 0},
	{"Ready", "string", "", 0},
	{"Up-to-date", "integer", "", 0},
	{"Available", "integer", "", 0},
	{"Age", "string", "", 0},
	{"Containers", "string", "", 1},
	{"Images", "string", "", 1},
	{"Selector", "string", "", 1},
	{NULL, NULL, NULL, 0},
};

static void cells_deployment(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_fmt(cells, "%lld/%lld", int_at(obj, "status", "readyReplicas"),
		replicas_of(obj));
	add_int(cells, int_at(obj, "status", "updatedReplicas"));
	add_int(cells, int_at(obj, "status", "availableReplicas"));
	add_age(cells, obj);
	add_containers(cells, template_spec(obj));
	add_selector(cells, at(obj, "spec", "selector"));
}

static const struct column cols_statefulset[] = {
	{"Name", "string", "name", 0},
	{"Ready", "string", "", 0},
	{"Age", "string", "", 0},
	{"Containers", "string", "", 1},
	{"Images", "string", "", 1},
	{NULL, NULL, NULL, 0},
};

static void cells_statefulset(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_fmt(cells, "%lld/%lld", int_at(obj, "status", "readyReplicas"),
		replicas_of(obj));
	add_age(cells, obj);
	add_containers(cells, template_spec(obj));
}

static const struct column cols_daemonset[] = {
	{"Name", "string", "name", 0},
	{"Desired", "integer", "", 0},
	{"Current", "integer", "", 0},
	{"Ready", "integer", "", 0},
	{"Up-to-date", "integer", "", 0},
	{"Available", "integer", "", 0},
	{"Node Selector", "string", "", 0},
	{"Age", "string", "", 0},
	{"Containers", "string", "", 1},
	{"Images", "string", "", 1},
	{"Selector", "string", "", 1},
	{NULL, NULL, NULL, 0},
};

static void cells_daemonset(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_int(cells, int_at(obj, "status", "desiredNumberScheduled"));
	add_int(cells, int_at(obj, "status", "currentNumberScheduled"));
	add_int(cells, int_at(obj, "status", "numberReady"));
	add_int(cells, int_at(obj, "status", "updatedNumberScheduled"));
	add_int(cells, int_at(obj, "status", "numberAvailable"));
	add_map(cells, json_object_get(template_spec(obj), "nodeSelector"));
	add_age(cells, obj);
	add_containers(cells, template_spec(obj));
	add_selector(cells, at(obj, "spec", "selector"));
}

static const struct column cols_replicaset[] = {
	{"Name", "string", "name", 0},
	{"Desired", "integer", "", 0},
	{"Current", "integer", "", 0},
	{"Ready", "integer", "", 0},
	{"Age", "string", "", 0},
	{"Containers", "string", "", 1},
	{"Images", "string", "", 1},
	{"Selector", "string", "", 1},
	{NULL, NULL, NULL, 0},
};

static void cells_replicaset(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_int(cells, replicas_of(obj));
	add_int(cells, int_at(obj, "status", "replicas"));
	add_int(cells, int_at(obj, "status", "readyReplicas"));
	add_age(cells, obj);
	add_containers(cells, template_spec(obj));
	add_selector(cells, at(obj, "spec", "selector"));
}

static const struct column cols_pod[] = {
	{"Name", "string", "name", 0},
	{"Ready", "string", "", 0},
	{"Status", "string", "", 0},
	{"Restarts", "string", "", 0},
	{"Age", "string", "", 0},
	{"IP", "string", "", 1},
	{"Node", "string", "", 1},
	{NULL, NULL, NULL, 0},
};

static void cells_pod(const json_t *obj, json_t *cells)
{
	const json_t *cs = at(obj, "status", "containerStatuses"), *c;
	json_int_t ready = 0;
	size_t i;

	json_array_foreach((json_t *)cs, i, c)
		ready += json_is_true(json_object_get(c, "ready"));
	add_name(cells, obj);
	add_fmt(cells, "%lld/%lld", ready,
		(json_int_t)json_array_size(at(obj, "spec", "containers")));
	add_str(cells, str_or(at(obj, "status", "phase"), "Pending"));
	add_str(cells, "0");
	add_age(cells, obj);
	add_str(cells, str_or(at(obj, "status", "podIP"), "<none>"));
	add_str(cells, str_or(at(obj, "spec", "nodeName"), "<none>"));
}

static const struct column cols_job[] = {
	{"Name", "string", "name", 0},
	{"Status", "string", "", 0},
	{"Completions", "string", "", 0},
	{"Duration", "string", "", 0},
	{"Age", "string", "", 0},
	{"Containers", "string", "", 1},
	{"Images", "string", "", 1},
	{NULL, NULL, NULL, 0},
};

/* "Complete", "Failed", "Suspended" or "Running", from the conditions. */
static const char *job_status(const json_t *obj)
{
	const json_t *c;
	const char *type;
	size_t i;

	json_array_foreach(at(obj, "status", "conditions"), i, c)
	{
		if (strcmp(str_or(json_object_get(c, "status"), ""), "True"))
			continue;
		type = str_or(json_object_get(c, "type"), "");
		if (!strcmp(type, "Complete") || !strcmp(type, "Failed") ||
		    !strcmp(type, "Suspended"))
			return type;
	}
	return "Running";
}

static void cells_job(const json_t *obj, json_t *cells)
{
	const json_t *comp = at(obj, "spec", "completions");
	time_t start = parse_time(
		json_string_value(at(obj, "status", "startTime")));
	time_t end = parse_time(
		json_string_value(at(obj, "status", "completionTime")));
	char d[32] = "";

	add_name(cells, obj);
	add_str(cells, job_status(obj));
	if (comp)
		add_fmt(cells, "%lld/%lld", int_at(obj, "status", "succeeded"),
			json_integer_value(comp));
	else
		add_fmt(cells, "%lld/1 of %lld",
			int_at(obj, "status", "succeeded"),
			replicas_of(obj));
	if (start != (time_t)-1)
		human_duration((long long)((end != (time_t)-1 ? end
							       : time(NULL)) -
					   start),
			       d, sizeof(d));
	add_str(cells, d);
	add_age(cells, obj);
	add_containers(cells, template_spec(obj));
}

static const struct column cols_cronjob[] = {
	{"Name", "string", "name", 0},
	{"Schedule", "string", "", 0},
	{"Timezone", "string", "", 0},
	{"Suspend", "boolean", "", 0},
	{"Active", "integer", "", 0},
	{"Last Schedule", "string", "", 0},
	{"Age", "string", "", 0},
	{NULL, NULL, NULL, 0},
};

static void cells_cronjob(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_str(cells, str_or(at(obj, "spec", "schedule"), ""));
	add_str(cells, str_or(at(obj, "spec", "timeZone"), "<none>"));
	json_array_append_new(
		cells, json_boolean(json_is_true(at(obj, "spec", "suspend"))));
	add_int(cells,
		(json_int_t)json_array_size(at(obj, "status", "active")));
	add_str(cells, "<none>");
	add_age(cells, obj);
}

static const struct column cols_lease[] = {
	{"Name", "string", "name", 0},
	{"Holder", "string", "", 0},
	{"Age", "string", "", 0},
	{NULL, NULL, NULL, 0},
};

static void cells_lease(const json_t *obj, json_t *cells)
{
	add_name(cells, obj);
	add_str(cells, str_or(at(obj, "spec", "holderIdentity"), ""));
	add_age(cells, obj);
}

static const struct column cols_binding[] = {
	{"Name", "string", "name", 0},
	{"Role", "string", "", 0},
	{"Age", "string", "", 0},
	{NULL, NULL, NULL, 0},
};

static void cells_binding(const json_t *obj, json_t *cells)
{
	char role[256];

	add_name(cells, obj);
	snprintf(role, sizeof(role), "%s/%s",
		 str_or(at(obj, "roleRef", "kind"), ""),
		 str_or(at(obj, "roleRef", "name"), ""));
	add_str(cells, role);
	add_age(cells, obj);
}

static const struct printer printers[] = {
	{"", "namespaces", cols_namespace, cells_namespace},
	{"", "configmaps", cols_configmap, cells_configmap},
	{"", "secrets", cols_secret, cells_secret},
	{"", "serviceaccounts", cols_serviceaccount, cells_serviceaccount},
	{"", "services", cols_service, cells_service},
	{"", "pods", cols_pod, cells_pod},
	{"apps", "deployments", cols_deployment, cells_deployment},
	{"apps", "statefulsets", cols_statefulset, cells_statefulset},
	{"apps", "daemonsets", cols_daemonset, cells_daemonset},
	{"apps", "replicasets", cols_replicaset, cells_replicaset},
	{"batch", "jobs", cols_job, cells_job},
	{"batch", "cronjobs", cols_cronjob, cells_cronjob},
	{"coordination.k8s.io", "leases", cols_lease, cells_lease},
	{"rbac.authorization.k8s.io", "rolebindings", cols_binding,
	 cells_binding},
	{"rbac.authorization.k8s.io", "clusterrolebindings", cols_binding,
	 cells_binding},
	{NULL, NULL, NULL, NULL},
};

static bool is_builtin(const struct emu_resource *res)
{
	const struct emu_resource *r;

	for (r = emu_resources; r->name; r++)
		if (r == res)
			return true;
	return false;
}

static const struct printer *printer_of(const struct emu_resource *res)
{
	static const struct printer dflt = {NULL, NULL, cols_default,
					    cells_default};
	static const struct printer custom = {NULL, NULL, cols_age, cells_age};
	const struct printer *p;

	for (p = printers; p->resource; p++)
		if (!strcmp(p->group, res->group) &&
		    !strcmp(p->resource, res->name))
			return p;
	return is_builtin(res) ? &dflt : &custom;
}

bool emu_table_wanted(const char *accept)
{
	return accept && strstr(accept, "as=Table") &&
	       strstr(accept, "g=meta.k8s.io");
}

/* The PartialObjectMetadata kube puts beside each row by default. */
static json_t *partial_metadata(const json_t *obj)
{
	json_t *meta = json_deep_copy(json_object_get(obj, "metadata"));

	if (!meta)
		meta = json_object();
	return json_pack("{s:s, s:s, s:o}", "kind", "PartialObjectMetadata",
			 "apiVersion", "meta.k8s.io/v1", "metadata", meta);
}

json_t *emu_table_new(const struct emu_resource *res, const json_t *objs,
		      const json_t *list_meta, bool headers)
{
	const struct printer *p = printer_of(res);
	const struct column *c;
	json_t *table, *cols, *rows, *cells, *obj;
	size_t i;

	cols = json_array();
	for (c = p->columns; headers && c->name; c++)
		json_array_append_new(
			cols, json_pack("{s:s, s:s, s:s, s:s, s:i}", "name",
					c->name, "type", c->type, "format",
					c->format, "description", "",
					"priority", c->priority));
	rows = json_array();
	json_array_foreach((json_t *)objs, i, obj)
	{
		cells = json_array();
		p->cells(obj, cells);
		json_array_append_new(rows,
				      json_pack("{s:o, s:o}", "cells", cells,
						"object",
						partial_metadata(obj)));
	}
	table = json_pack("{s:s, s:s, s:o, s:o, s:o}", "kind", "Table",
			  "apiVersion", "meta.k8s.io/v1", "metadata",
			  list_meta ? json_deep_copy(list_meta) : json_object(),
			  "columnDefinitions", cols, "rows", rows);
	return table;
}
