#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"

/*
 * JSON written with single quotes (a \' inside a string is a quote that
 * stays escaped: 'k:{\'name\':\'web\'}').
 */
static json_t *J(const char *text)
{
	char *s = strdup(text);
	json_error_t jerr;
	json_t *j;

	cr_assert_not_null(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	j = json_loads(s, 0, &jerr);
	cr_assert_not_null(j, "bad test JSON: %s at %d: %s", jerr.text,
			   jerr.position, s);
	free(s);
	return j;
}

static char *dump(const json_t *j)
{
	return json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

/* Walk "spec.template.spec.containers[].ports[]": fields, [] = items. */
static const struct diff_schema *at(const struct diff_schema *s,
				    const char *path)
{
	char *copy = strdup(path), *save = NULL;

	cr_assert_not_null(copy);
	for (char *seg = strtok_r(copy, ".", &save); seg;
	     seg = strtok_r(NULL, ".", &save)) {
		size_t len = strlen(seg);
		bool items = len >= 2 && !strcmp(seg + len - 2, "[]");

		if (items)
			seg[len - 2] = '\0';
		if (*seg)
			s = diff_schema_field(s, seg);
		if (items)
			s = diff_schema_items(s);
		cr_assert_not_null(s, "%s: NULL schema", path);
	}
	free(copy);
	return s;
}

static enum diff_schema_type type_at(const struct diff_schema *root,
				     const char *path, const char *value)
{
	json_t *v = J(value);
	enum diff_schema_type t = diff_schema_type_of(at(root, path), v);

	json_decref(v);
	return t;
}

#define OBJ "{}"
#define ARR "[]"

/* Key names joined by ',' with '=JSON' for those with a default. */
static void assert_keys(const struct diff_schema *s, const char *want)
{
	const char *const *names;
	const json_t *const *defaults;
	size_t n = diff_schema_keys(s, &names, &defaults);
	char got[256] = "";

	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(got, ",");
		strcat(got, names[i]);
		if (defaults[i]) {
			char *d = dump(defaults[i]);

			strcat(got, "=");
			strcat(got, d);
			free(d);
		}
	}
	cr_assert_str_eq(got, want);
}

/* The fieldsV1 of `object` under the schema of its group/kind. */
/*
 * diff_fieldset_of_object_is() on an object whose set is `fields`
 * (diff_fieldset_to_json()): 1 for it, 0 for it with any one member less
 * (a leaf dropped, or a "." dropped from a node with children) or one
 * more.
 */
static int check_is(const json_t *obj, const struct diff_schema *schema,
		    const json_t *fields)
{
	struct err err = ERR_INIT;
	int r = diff_fieldset_of_object_is(obj, schema, fields, &err);

	cr_assert_geq(r, 0, "%s", err_msg(&err));
	err_release(&err);
	return r;
}

/*
 * Every member of `node` and below dropped in turn (a leaf, or a "."),
 * each leaf moved one level deeper, then one member added: each is no
 * longer the object's set. Put back as the server writes it ("." first),
 * so that `root` ends as it began.
 */
static void each_node(const json_t *obj, const struct diff_schema *schema,
		      json_t *root, json_t *node, size_t *edits)
{
	size_t n = json_object_size(node), i = 0;
	char **keys = calloc(n ? n : 1, sizeof(*keys));
	const char *k;
	json_t *v;

	json_object_foreach (node, k, v)
		keys[i++] = strdup(k);
	for (i = 0; i < n; i++) {
		json_t *keep = json_incref(json_object_get(node, keys[i]));

		if (!strcmp(keys[i], ".") || !json_object_size(keep)) {
			json_t *rest;

			json_object_del(node, keys[i]);
			cr_assert_eq(check_is(obj, schema, root), 0,
				     "without %s", keys[i]);
			(*edits)++;
			if (strcmp(keys[i], ".")) {
				/* as many members, one of them deeper */
				json_object_set_new(
					node, keys[i],
					json_pack("{s{}}", "f:zz-deeper"));
				cr_assert_eq(check_is(obj, schema, root), 0,
					     "with %s deeper", keys[i]);
				json_object_del(node, keys[i]);
			}
			rest = json_deep_copy(node);
			json_object_clear(node);
			if (!strcmp(keys[i], "."))
				json_object_set(node, keys[i], keep);
			json_object_update(node, rest);
			if (strcmp(keys[i], "."))
				json_object_set(node, keys[i], keep);
			json_decref(rest);
		} else {
			each_node(obj, schema, root, keep, edits);
		}
		json_decref(keep);
		free(keys[i]);
	}
	free(keys);
	json_object_set_new(node, "f:zz-not-declared", json_object());
	cr_assert_eq(check_is(obj, schema, root), 0, "with one member more");
	json_object_del(node, "f:zz-not-declared");
	(*edits)++;
}

static void fields_are_known(const json_t *obj,
			     const struct diff_schema *schema,
			     const json_t *fields)
{
	json_t *copy = json_deep_copy(fields);
	size_t edits = 0;

	cr_assert_eq(check_is(obj, schema, fields), 1);
	each_node(obj, schema, copy, copy, &edits);
	cr_assert(json_equal(copy, fields));
	cr_assert_eq(check_is(obj, schema, copy), 1);
	cr_assert_gt(edits, 0);
	json_decref(copy);
}

static void assert_fields(struct diff_schemas *reg, const char *object,
			  const char *want_text)
{
	json_t *obj = J(object), *want = J(want_text), *got;
	const char *api = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *slash = strchr(api, '/');
	char group[128] = "";
	struct diff_fieldset *set = NULL;
	struct err err = ERR_INIT;
	char *g, *w;

	if (slash)
		snprintf(group, sizeof(group), "%.*s", (int)(slash - api), api);
	cr_assert_eq(diff_fieldset_of_object(
			     &set, obj, diff_schemas_lookup(reg, group, kind),
			     &err),
		     0, "%s", err_msg(&err));
	got = diff_fieldset_to_json(set);
	g = dump(got);
	w = dump(want);
	cr_assert(json_equal(got, want), "fieldsV1\n got: %s\nwant: %s", g, w);
	fields_are_known(obj, diff_schemas_lookup(reg, group, kind), got);
	free(g);
	free(w);
	json_decref(got);
	json_decref(want);
	json_decref(obj);
	diff_fieldset_free(set);
	err_release(&err);
}

/* How many assert_fields_fail() calls the match walk failed alike. */
static size_t failed_alike;

/*
 * diff_fieldset_of_object fails with ERR_INVALID and exactly `msg`; and
 * diff_fieldset_of_object_is() against {} either fails the same way (the
 * error comes before any member) or answers 0 (a member came first).
 */
static void assert_fields_fail(struct diff_schemas *reg, const char *group,
			       const char *kind, const char *object,
			       const char *msg)
{
	json_t *obj = J(object), *none = J("{}");
	const struct diff_schema *schema =
		diff_schemas_lookup(reg, group, kind);
	struct diff_fieldset *set = NULL;
	struct err err = ERR_INIT;
	int r;

	cr_assert_eq(diff_fieldset_of_object(&set, obj, schema, &err),
		     ERR_INVALID);
	cr_assert_null(set);
	cr_assert_str_eq(err_first(&err), msg);
	err_release(&err);
	r = diff_fieldset_of_object_is(obj, schema, none, &err);
	if (r) {
		cr_assert_eq(r, ERR_INVALID);
		cr_assert_str_eq(err_first(&err), msg);
		failed_alike++;
	}
	json_decref(none);
	json_decref(obj);
	err_release(&err);
}

/* --- built-in kinds --- */

Test(schema, builtin_kinds_are_known)
{
	static const char *const kinds[][2] = {
		{"apps", "Deployment"},
		{"apps", "StatefulSet"},
		{"apps", "DaemonSet"},
		{"apps", "ReplicaSet"},
		{"", "Pod"},
		{"", "Service"},
		{"", "ConfigMap"},
		{"", "Secret"},
		{"", "ServiceAccount"},
		{"", "Namespace"},
		{"", "Endpoints"},
		{"", "PersistentVolumeClaim"},
		{"", "ResourceQuota"},
		{"", "LimitRange"},
		{"", "Event"},
		{"batch", "Job"},
		{"batch", "CronJob"},
		{"networking.k8s.io", "Ingress"},
		{"networking.k8s.io", "NetworkPolicy"},
		{"rbac.authorization.k8s.io", "Role"},
		{"rbac.authorization.k8s.io", "ClusterRole"},
		{"rbac.authorization.k8s.io", "RoleBinding"},
		{"rbac.authorization.k8s.io", "ClusterRoleBinding"},
		{"policy", "PodDisruptionBudget"},
		{"autoscaling", "HorizontalPodAutoscaler"},
		{"apiextensions.k8s.io", "CustomResourceDefinition"},
	};
	struct diff_schemas *reg = diff_schemas_new();
	const struct diff_schema *unknown;

	cr_assert_not_null(reg);
	unknown = diff_schemas_lookup(reg, "example.com", "Widget");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const struct diff_schema *root =
			diff_schemas_lookup(reg, kinds[i][0], kinds[i][1]);

		cr_assert_not_null(root);
		cr_assert_neq(root, unknown, "%s/%s is not known",
			      kinds[i][0], kinds[i][1]);
		cr_assert_eq(type_at(root, "metadata.finalizers", ARR),
			     DIFF_SCHEMA_SET, "%s", kinds[i][1]);
		cr_assert_eq(type_at(root, "metadata.ownerReferences", ARR),
			     DIFF_SCHEMA_MAP_LIST, "%s", kinds[i][1]);
	}
	/* The group decides: an "apps" Pod is nobody's. */
	cr_assert_eq(diff_schemas_lookup(reg, "apps", "Pod"), unknown);
	cr_assert_eq(diff_schemas_lookup(reg, NULL, "Pod"),
		     diff_schemas_lookup(reg, "", "Pod"));
	diff_schemas_free(reg);
}

Test(schema, object_meta)
{
	struct diff_schemas *reg = diff_schemas_new();
	const struct diff_schema *d =
		diff_schemas_lookup(reg, "apps", "Deployment");

	cr_assert_eq(type_at(d, "metadata", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(d, "metadata.labels", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(d, "metadata.annotations", OBJ),
		     DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(d, "metadata.finalizers", ARR), DIFF_SCHEMA_SET);
	cr_assert_eq(type_at(d, "metadata.managedFields", ARR),
		     DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(d, "metadata.ownerReferences", ARR),
		     DIFF_SCHEMA_MAP_LIST);
	assert_keys(at(d, "metadata.ownerReferences"), "uid");
	cr_assert_eq(type_at(d, "metadata.ownerReferences[]", OBJ),
		     DIFF_SCHEMA_ATOMIC);
	/* The pod template's metadata is an ObjectMeta too. */
	cr_assert_eq(type_at(d, "spec.template.metadata.finalizers", ARR),
		     DIFF_SCHEMA_SET);
	diff_schemas_free(reg);
}

Test(schema, pod_template_paths)
{
	struct diff_schemas *reg = diff_schemas_new();
	const struct diff_schema *d =
		diff_schemas_lookup(reg, "apps", "Deployment");
	const struct diff_schema *c = at(d, "spec.template.spec.containers[]");
	static const char *const atomic_lists[] = {
		"spec.template.spec.containers[].args",
		"spec.template.spec.containers[].command",
		"spec.template.spec.containers[].envFrom",
		"spec.template.spec.containers[].resizePolicy",
		"spec.template.spec.tolerations",
		"spec.template.spec.readinessGates",
		"spec.template.spec.affinity.nodeAffinity."
		"preferredDuringSchedulingIgnoredDuringExecution",
		"spec.template.spec.affinity.podAntiAffinity."
		"requiredDuringSchedulingIgnoredDuringExecution",
		"spec.template.spec.volumes[].configMap.items",
		"spec.template.spec.volumes[].projected.sources",
		"spec.template.spec.containers[].livenessProbe.exec.command",
		"spec.template.spec.containers[].securityContext.capabilities."
		"drop",
		"spec.template.spec.dnsConfig.nameservers",
	};
	static const char *const atomic_objects[] = {
		"spec.selector",
		"spec.template.spec.nodeSelector",
		"spec.template.spec.affinity.nodeAffinity."
		"requiredDuringSchedulingIgnoredDuringExecution",
		"spec.template.spec.containers[].env[].valueFrom.secretKeyRef",
		"spec.template.spec.containers[].env[].valueFrom."
		"configMapKeyRef",
		"spec.template.spec.containers[].env[].valueFrom.fieldRef",
		"spec.template.spec.imagePullSecrets[]",
		"spec.template.spec.topologySpreadConstraints[].labelSelector",
		"spec.template.spec.volumes[].csi.nodePublishSecretRef",
	};

	cr_assert_eq(type_at(d, "spec.template.spec.containers", ARR),
		     DIFF_SCHEMA_MAP_LIST);
	assert_keys(at(d, "spec.template.spec.containers"), "name");
	assert_keys(at(d, "spec.template.spec.initContainers"), "name");
	assert_keys(at(d, "spec.template.spec.ephemeralContainers"), "name");
	assert_keys(at(d, "spec.template.spec.volumes"), "name");
	assert_keys(at(d, "spec.template.spec.imagePullSecrets"), "name");
	assert_keys(at(d, "spec.template.spec.hostAliases"), "ip");
	assert_keys(at(d, "spec.template.spec.topologySpreadConstraints"),
		    "topologyKey,whenUnsatisfiable");
	assert_keys(at(d, "spec.template.spec.resourceClaims"), "name");
	assert_keys(at(d, "spec.template.spec.schedulingGates"), "name");
	assert_keys(at(c, "ports"), "containerPort,protocol=\"TCP\"");
	assert_keys(at(c, "env"), "name");
	assert_keys(at(c, "volumeMounts"), "mountPath");
	assert_keys(at(c, "volumeDevices"), "devicePath");
	assert_keys(at(c, "resources.claims"), "name");
	cr_assert_eq(type_at(c, "ports", ARR), DIFF_SCHEMA_MAP_LIST);
	cr_assert_eq(type_at(c, "ports[]", OBJ), DIFF_SCHEMA_GRANULAR);
	for (size_t i = 0; i < sizeof(atomic_lists) / sizeof(*atomic_lists);
	     i++)
		cr_assert_eq(type_at(d, atomic_lists[i], ARR),
			     DIFF_SCHEMA_ATOMIC, "%s", atomic_lists[i]);
	for (size_t i = 0;
	     i < sizeof(atomic_objects) / sizeof(*atomic_objects); i++)
		cr_assert_eq(type_at(d, atomic_objects[i], OBJ),
			     DIFF_SCHEMA_ATOMIC, "%s", atomic_objects[i]);

	/* Resources: granular maps of quantities. */
	cr_assert_eq(type_at(c, "resources.limits", OBJ),
		     DIFF_SCHEMA_GRANULAR);
	cr_assert(diff_schema_is_quantity(at(c, "resources.limits.cpu")));
	cr_assert(diff_schema_is_quantity(at(c, "resources.requests.memory")));
	cr_assert(diff_schema_is_quantity(
		at(d, "spec.template.spec.overhead.cpu")));
	cr_assert(diff_schema_is_quantity(
		at(d, "spec.template.spec.volumes[].emptyDir.sizeLimit")));
	cr_assert_not(diff_schema_is_quantity(at(c, "resources.limits")));
	cr_assert_not(diff_schema_is_quantity(at(c, "image")));
	cr_assert_not(diff_schema_is_quantity(at(d, "spec.replicas")));
	/* Granular structs and maps. */
	cr_assert_eq(type_at(d, "spec.strategy.rollingUpdate", OBJ),
		     DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(d, "spec.template.metadata.labels", OBJ),
		     DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(d, "spec.template.spec.securityContext", OBJ),
		     DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(c, "env[].valueFrom", OBJ), DIFF_SCHEMA_GRANULAR);
	/* The same pod spec everywhere a pod template is. */
	assert_keys(at(diff_schemas_lookup(reg, "", "Pod"),
		       "spec.containers[].ports"),
		    "containerPort,protocol=\"TCP\"");
	assert_keys(at(diff_schemas_lookup(reg, "batch", "CronJob"),
		       "spec.jobTemplate.spec.template.spec.containers"),
		    "name");
	assert_keys(at(diff_schemas_lookup(reg, "batch", "Job"),
		       "spec.template.spec.initContainers[].env"),
		    "name");
	assert_keys(at(diff_schemas_lookup(reg, "apps", "StatefulSet"),
		       "spec.template.spec.volumes"),
		    "name");
	assert_keys(at(diff_schemas_lookup(reg, "apps", "DaemonSet"),
		       "spec.template.spec.containers[].volumeMounts"),
		    "mountPath");
	assert_keys(at(diff_schemas_lookup(reg, "apps", "ReplicaSet"),
		       "spec.template.spec.containers"),
		    "name");
	diff_schemas_free(reg);
}

Test(schema, other_kind_paths)
{
	struct diff_schemas *reg = diff_schemas_new();
	const struct diff_schema *svc = diff_schemas_lookup(reg, "", "Service");
	const struct diff_schema *s;

	assert_keys(at(svc, "spec.ports"), "port,protocol=\"TCP\"");
	cr_assert_eq(type_at(svc, "spec.selector", OBJ), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(svc, "spec.clusterIPs", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(svc, "spec.externalIPs", ARR),
		     DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(svc, "spec.ipFamilies", ARR), DIFF_SCHEMA_ATOMIC);
	assert_keys(at(svc, "status.conditions"), "type");

	s = diff_schemas_lookup(reg, "", "ConfigMap");
	cr_assert_eq(type_at(s, "data", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(s, "binaryData", OBJ), DIFF_SCHEMA_GRANULAR);
	s = diff_schemas_lookup(reg, "", "Secret");
	cr_assert_eq(type_at(s, "stringData", OBJ), DIFF_SCHEMA_GRANULAR);
	s = diff_schemas_lookup(reg, "", "ServiceAccount");
	assert_keys(at(s, "secrets"), "name");
	cr_assert_eq(type_at(s, "secrets[]", OBJ), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "imagePullSecrets", ARR), DIFF_SCHEMA_ATOMIC);
	s = diff_schemas_lookup(reg, "", "Namespace");
	cr_assert_eq(type_at(s, "spec.finalizers", ARR), DIFF_SCHEMA_ATOMIC);
	s = diff_schemas_lookup(reg, "", "Endpoints");
	cr_assert_eq(type_at(s, "subsets", ARR), DIFF_SCHEMA_ATOMIC);
	s = diff_schemas_lookup(reg, "", "PersistentVolumeClaim");
	cr_assert(diff_schema_is_quantity(
		at(s, "spec.resources.requests.storage")));
	cr_assert_eq(type_at(s, "spec.accessModes", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "spec.selector", OBJ), DIFF_SCHEMA_ATOMIC);
	s = diff_schemas_lookup(reg, "", "ResourceQuota");
	/* Keys of maps hold dots ("requests.cpu"): one field. */
	cr_assert(diff_schema_is_quantity(
		diff_schema_field(at(s, "spec.hard"), "requests.cpu")));
	cr_assert(diff_schema_is_quantity(at(s, "spec.hard.pods")));
	s = diff_schemas_lookup(reg, "", "LimitRange");
	cr_assert_eq(type_at(s, "spec.limits", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert(diff_schema_is_quantity(at(s, "spec.limits[].max.memory")));
	cr_assert(diff_schema_is_quantity(
		at(s, "spec.limits[].defaultRequest.cpu")));

	s = diff_schemas_lookup(reg, "apps", "Deployment");
	assert_keys(at(s, "status.conditions"), "type");
	s = diff_schemas_lookup(reg, "apps", "StatefulSet");
	cr_assert_eq(type_at(s, "spec.volumeClaimTemplates", ARR),
		     DIFF_SCHEMA_ATOMIC);
	cr_assert(diff_schema_is_quantity(
		at(s, "spec.volumeClaimTemplates[].spec.resources.requests."
		      "storage")));
	s = diff_schemas_lookup(reg, "batch", "Job");
	cr_assert_eq(type_at(s, "spec.selector", OBJ), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "status.conditions", ARR), DIFF_SCHEMA_ATOMIC);
	s = diff_schemas_lookup(reg, "networking.k8s.io", "Ingress");
	cr_assert_eq(type_at(s, "spec.rules", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "spec.tls", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "spec.defaultBackend.service.port", OBJ),
		     DIFF_SCHEMA_GRANULAR);
	s = diff_schemas_lookup(reg, "networking.k8s.io", "NetworkPolicy");
	cr_assert_eq(type_at(s, "spec.ingress", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "spec.egress", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "spec.podSelector", OBJ), DIFF_SCHEMA_ATOMIC);
	s = diff_schemas_lookup(reg, "rbac.authorization.k8s.io", "Role");
	cr_assert_eq(type_at(s, "rules", ARR), DIFF_SCHEMA_ATOMIC);
	s = diff_schemas_lookup(reg, "rbac.authorization.k8s.io",
				"ClusterRoleBinding");
	cr_assert_eq(type_at(s, "subjects", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "roleRef", OBJ), DIFF_SCHEMA_ATOMIC);
	s = diff_schemas_lookup(reg, "rbac.authorization.k8s.io",
				"ClusterRole");
	cr_assert_eq(type_at(s, "aggregationRule.clusterRoleSelectors", ARR),
		     DIFF_SCHEMA_ATOMIC);
	s = diff_schemas_lookup(reg, "policy", "PodDisruptionBudget");
	cr_assert_eq(type_at(s, "spec.selector", OBJ), DIFF_SCHEMA_ATOMIC);
	s = diff_schemas_lookup(reg, "autoscaling", "HorizontalPodAutoscaler");
	cr_assert_eq(type_at(s, "spec.metrics", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "spec.scaleTargetRef", OBJ),
		     DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(s, "spec.behavior.scaleUp.policies", ARR),
		     DIFF_SCHEMA_ATOMIC);
	s = diff_schemas_lookup(reg, "apiextensions.k8s.io",
				"CustomResourceDefinition");
	cr_assert_eq(type_at(s, "spec.versions", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "spec.names", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(s, "spec.names.shortNames", ARR),
		     DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "spec.versions[].schema.openAPIV3Schema."
				"properties.spec.properties",
			     OBJ),
		     DIFF_SCHEMA_GRANULAR);
	assert_keys(at(s, "spec.versions[].schema.openAPIV3Schema."
			  "x-kubernetes-validations"),
		    "rule");
	diff_schemas_free(reg);
}

Test(schema, unknown_kind_defaults)
{
	struct diff_schemas *reg = diff_schemas_new();
	const struct diff_schema *s = diff_schemas_lookup(reg, "example.com",
							   "Widget");

	cr_assert_not_null(s);
	cr_assert_eq(type_at(s, "spec", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(s, "spec.a.b", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(s, "spec.list", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(s, "spec.list[]", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(diff_schema_keys(at(s, "spec.list"), NULL, NULL), 0);
	cr_assert_not(diff_schema_is_quantity(at(s, "spec.cpu")));
	/* Metadata is ObjectMeta whatever the kind. */
	cr_assert_eq(type_at(s, "metadata.finalizers", ARR), DIFF_SCHEMA_SET);
	/* Unknown fields of a known kind get the defaults too. */
	s = diff_schemas_lookup(reg, "apps", "Deployment");
	cr_assert_eq(type_at(s, "spec.future", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(s, "spec.future", ARR), DIFF_SCHEMA_ATOMIC);
	/* No registry: defaults, never NULL. */
	s = diff_schemas_lookup(NULL, "apps", "Deployment");
	cr_assert_not_null(s);
	cr_assert_eq(type_at(s, "x", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(s, "x", ARR), DIFF_SCHEMA_ATOMIC);
	diff_schemas_free(reg);
	diff_schemas_free(NULL);
}

Test(schema, type_of_mismatched_values)
{
	struct diff_schemas *reg = diff_schemas_new();
	const struct diff_schema *d =
		diff_schemas_lookup(reg, "apps", "Deployment");

	/* A list where a struct belongs, and the reverse: replaced whole. */
	cr_assert_eq(type_at(d, "spec.template", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(d, "spec.template.spec.containers", OBJ),
		     DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(d, "metadata.finalizers", OBJ),
		     DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(diff_schema_keys(at(d, "spec.template"), NULL, NULL), 0);
	diff_schemas_free(reg);
}

/* --- field sets of built-in kinds --- */

Test(schema, fieldset_doc_example)
{
	struct diff_schemas *reg = diff_schemas_new();

	/* docs/kubernetes-api.md, "managedFields": kubectl's entry. */
	assert_fields(reg,
		      "{'apiVersion':'apps/v1','kind':'Deployment',"
		      "'metadata':{'name':'web','namespace':'default'},"
		      "'spec':{'selector':{'matchLabels':{'app':'web'}},"
		      "'template':{'metadata':{'labels':{'app':'web'}},"
		      "'spec':{'containers':[{'name':'web',"
		      "'image':'nginx'}]}}}}",
		      "{'f:spec':{'f:selector':{},'f:template':{'f:metadata':"
		      "{'f:labels':{'f:app':{}}},'f:spec':{'f:containers':"
		      "{'k:{\\'name\\':\\'web\\'}':{'.':{},'f:image':{},"
		      "'f:name':{}}}}}}}");
	diff_schemas_free(reg);
}

Test(schema, fieldset_deployment)
{
	struct diff_schemas *reg = diff_schemas_new();

	assert_fields(
		reg,
		"{'apiVersion':'apps/v1','kind':'Deployment',"
		" 'metadata':{'name':'web','namespace':'prod','uid':'u-1',"
		"  'resourceVersion':'5','generation':2,"
		"  'creationTimestamp':'2026-01-01T00:00:00Z',"
		"  'managedFields':[{'manager':'x'}],"
		"  'labels':{'app.kubernetes.io/name':'web','team':'a'},"
		"  'annotations':{'example.com/owner':'ops'}},"
		" 'spec':{'replicas':3,"
		"  'selector':{'matchLabels':{'app':'web'}},"
		"  'strategy':{'type':'RollingUpdate',"
		"   'rollingUpdate':{'maxSurge':'25%'}},"
		"  'template':{"
		"   'metadata':{'creationTimestamp':null,"
		"    'labels':{'app':'web'}},"
		"   'spec':{"
		"    'containers':[{'name':'web','image':'nginx:1.27',"
		"      'args':['--port','80'],"
		"      'ports':[{'containerPort':80},"
		"       {'containerPort':53,'protocol':'UDP','name':'dns'}],"
		"      'env':[{'name':'MODE','value':'prod'},"
		"       {'name':'TOKEN','valueFrom':{'secretKeyRef':"
		"        {'name':'s','key':'t'}}}],"
		"      'volumeMounts':[{'name':'cfg','mountPath':'/etc/web',"
		"       'readOnly':true}],"
		"      'resources':{'limits':{'cpu':'500m','memory':'128Mi'},"
		"       'requests':{'cpu':'100m'}}},"
		"     {'name':'sidecar','image':'busybox','resources':{}}],"
		"    'volumes':[{'name':'cfg','configMap':{'name':'web-cfg',"
		"      'items':[{'key':'a','path':'a'}]}}],"
		"    'tolerations':[{'key':'k','operator':'Exists'}],"
		"    'nodeSelector':{'disk':'ssd'},"
		"    'securityContext':{}}}},"
		" 'status':{'replicas':3}}",
		"{'f:metadata':{'f:annotations':{'f:example.com/owner':{}},"
		"  'f:labels':{'f:app.kubernetes.io/name':{},'f:team':{}}},"
		" 'f:spec':{'f:replicas':{},'f:selector':{},"
		"  'f:strategy':{'f:rollingUpdate':{'f:maxSurge':{}},"
		"   'f:type':{}},"
		"  'f:template':{"
		"   'f:metadata':{'f:creationTimestamp':{},"
		"    'f:labels':{'f:app':{}}},"
		"   'f:spec':{"
		"    'f:containers':{"
		"     'k:{\\'name\\':\\'sidecar\\'}':{'.':{},'f:image':{},"
		"      'f:name':{},'f:resources':{}},"
		"     'k:{\\'name\\':\\'web\\'}':{'.':{},'f:args':{},"
		"      'f:env':{"
		"       'k:{\\'name\\':\\'MODE\\'}':{'.':{},'f:name':{},"
		"        'f:value':{}},"
		"       'k:{\\'name\\':\\'TOKEN\\'}':{'.':{},'f:name':{},"
		"        'f:valueFrom':{'f:secretKeyRef':{}}}},"
		"      'f:image':{},'f:name':{},"
		"      'f:ports':{"
		"       'k:{\\'containerPort\\':53,\\'protocol\\':\\'UDP\\'}':"
		"        {'.':{},'f:containerPort':{},'f:name':{},"
		"         'f:protocol':{}},"
		"       'k:{\\'containerPort\\':80,\\'protocol\\':\\'TCP\\'}':"
		"        {'.':{},'f:containerPort':{}}},"
		"      'f:resources':{'f:limits':{'f:cpu':{},'f:memory':{}},"
		"       'f:requests':{'f:cpu':{}}},"
		"      'f:volumeMounts':{"
		"       'k:{\\'mountPath\\':\\'/etc/web\\'}':{'.':{},"
		"        'f:mountPath':{},'f:name':{},'f:readOnly':{}}}}},"
		"    'f:nodeSelector':{},'f:securityContext':{},'f:tolerations':{},"
		"    'f:volumes':{'k:{\\'name\\':\\'cfg\\'}':{'.':{},"
		"     'f:configMap':{'f:items':{},'f:name':{}},"
		"     'f:name':{}}}}}}}");
	diff_schemas_free(reg);
}

Test(schema, fieldset_service)
{
	struct diff_schemas *reg = diff_schemas_new();

	assert_fields(
		reg,
		"{'apiVersion':'v1','kind':'Service',"
		" 'metadata':{'name':'web','labels':{'app':'web'}},"
		" 'spec':{'type':'ClusterIP',"
		"  'selector':{'app':'web','tier':'fe'},"
		"  'ports':[{'name':'http','port':80,'targetPort':8080},"
		"   {'name':'dns','port':53,'protocol':'UDP'}],"
		"  'clusterIPs':['10.0.0.1'],'ipFamilies':['IPv4'],"
		"  'sessionAffinityConfig':{'clientIP':"
		"   {'timeoutSeconds':10}}}}",
		"{'f:metadata':{'f:labels':{'f:app':{}}},"
		" 'f:spec':{'f:clusterIPs':{},'f:ipFamilies':{},"
		"  'f:ports':{"
		"   'k:{\\'port\\':53,\\'protocol\\':\\'UDP\\'}':{'.':{},"
		"    'f:name':{},'f:port':{},'f:protocol':{}},"
		"   'k:{\\'port\\':80,\\'protocol\\':\\'TCP\\'}':{'.':{},"
		"    'f:name':{},'f:port':{},'f:targetPort':{}}},"
		"  'f:selector':{},"
		"  'f:sessionAffinityConfig':{'f:clientIP':"
		"   {'f:timeoutSeconds':{}}},"
		"  'f:type':{}}}");
	diff_schemas_free(reg);
}

Test(schema, fieldset_configmap_and_rbac)
{
	struct diff_schemas *reg = diff_schemas_new();

	assert_fields(reg,
		      "{'apiVersion':'v1','kind':'ConfigMap',"
		      " 'metadata':{'name':'cfg','namespace':'prod',"
		      "  'annotations':{'a.b/c':'d'}},"
		      " 'data':{'app.properties':'x=1','empty':''},"
		      " 'binaryData':{'blob':'AAE='},'immutable':false}",
		      "{'f:binaryData':{'f:blob':{}},"
		      " 'f:data':{'f:app.properties':{},'f:empty':{}},"
		      " 'f:immutable':{},"
		      " 'f:metadata':{'f:annotations':{'f:a.b/c':{}}}}");
	assert_fields(reg,
		      "{'apiVersion':'rbac.authorization.k8s.io/v1',"
		      " 'kind':'Role','metadata':{'name':'r','namespace':'n'},"
		      " 'rules':[{'apiGroups':[''],'resources':['pods'],"
		      "  'verbs':['get','list']}]}",
		      "{'f:rules':{}}");
	assert_fields(reg,
		      "{'apiVersion':'rbac.authorization.k8s.io/v1',"
		      " 'kind':'RoleBinding','metadata':{'name':'b'},"
		      " 'roleRef':{'apiGroup':'rbac.authorization.k8s.io',"
		      "  'kind':'Role','name':'r'},"
		      " 'subjects':[{'kind':'ServiceAccount','name':'sa'}]}",
		      "{'f:roleRef':{},'f:subjects':{}}");
	assert_fields(reg,
		      "{'apiVersion':'autoscaling/v2',"
		      " 'kind':'HorizontalPodAutoscaler',"
		      " 'metadata':{'name':'h'},"
		      " 'spec':{'scaleTargetRef':{'apiVersion':'apps/v1',"
		      "  'kind':'Deployment','name':'web'},'maxReplicas':5,"
		      "  'metrics':[{'type':'Resource',"
		      "   'resource':{'name':'cpu',"
		      "   'target':{'type':'Utilization',"
		      "   'averageUtilization':80}}}]}}",
		      "{'f:spec':{'f:maxReplicas':{},'f:metrics':{},"
		      " 'f:scaleTargetRef':{'f:apiVersion':{},'f:kind':{},"
		      "  'f:name':{}}}}");
	diff_schemas_free(reg);
}

Test(schema, fieldset_metadata)
{
	struct diff_schemas *reg = diff_schemas_new();

	/* Finalizers by value, owner references by uid (atomic items),
	 * generateName tracked, label keys with dots and slashes as is. */
	assert_fields(reg,
		      "{'apiVersion':'v1','kind':'ConfigMap',"
		      " 'metadata':{'generateName':'cfg-',"
		      "  'finalizers':['example.com/a','b'],"
		      "  'ownerReferences':[{'apiVersion':'apps/v1',"
		      "   'kind':'Deployment','name':'web','uid':'1234',"
		      "   'controller':true}],"
		      "  'labels':{'app.kubernetes.io/part-of':'shop'},"
		      "  'selfLink':'/x','deletionTimestamp':null,"
		      "  'deletionGracePeriodSeconds':30}}",
		      "{'f:metadata':{"
		      " 'f:finalizers':{'v:\\'b\\'':{},"
		      "  'v:\\'example.com/a\\'':{}},"
		      " 'f:generateName':{},"
		      " 'f:labels':{'f:app.kubernetes.io/part-of':{}},"
		      " 'f:ownerReferences':{'k:{\\'uid\\':\\'1234\\'}':{}}}}");
	/* Only server-owned metadata: nothing at all. */
	assert_fields(reg,
		      "{'apiVersion':'v1','kind':'Secret',"
		      " 'metadata':{'name':'s','namespace':'n','uid':'u'},"
		      " 'status':{'x':1}}",
		      "{}");
	diff_schemas_free(reg);
}

/*
 * As kube-apiserver 1.36 records it (this object applied to it, its
 * managedFields read back): a null or empty-object field is owned as a
 * leaf whatever its type (labels, strategy, resources, securityContext,
 * volumes), an empty atomic list too (args, tolerations), while an empty
 * merged list (env, finalizers) owns nothing.
 */
Test(schema, fieldset_empty_and_null)
{
	struct diff_schemas *reg = diff_schemas_new();

	assert_fields(
		reg,
		"{'apiVersion':'apps/v1','kind':'Deployment',"
		" 'metadata':{'name':'x','labels':{},'finalizers':[]},"
		" 'spec':{'replicas':null,'strategy':{},'paused':false,"
		"  'template':{'metadata':{},'spec':{"
		"   'containers':[{'name':'a','args':[],'resources':{},"
		"    'securityContext':null,'env':[]}],"
		"   'volumes':null,'tolerations':[]}}}}",
		"{'f:metadata':{'f:labels':{}},"
		" 'f:spec':{'f:paused':{},'f:replicas':{},'f:strategy':{},"
		" 'f:template':{'f:metadata':{},'f:spec':{"
		"  'f:containers':{'k:{\\'name\\':\\'a\\'}':{'.':{},"
		"   'f:args':{},'f:name':{},'f:resources':{},"
		"   'f:securityContext':{}}},"
		"  'f:tolerations':{},'f:volumes':{}}}}}");
	diff_schemas_free(reg);
}

Test(schema, fieldset_unknown_kind)
{
	struct diff_schemas *reg = diff_schemas_new();

	assert_fields(reg,
		      "{'apiVersion':'example.com/v1','kind':'Widget',"
		      " 'metadata':{'name':'w','labels':{'a':'b'},"
		      "  'finalizers':['x']},"
		      " 'spec':{'size':3,'tags':['a','a'],"
		      "  'nested':{'deep':{'x':1}},'empty':{}}}",
		      "{'f:metadata':{'f:finalizers':{'v:\\'x\\'':{}},"
		      "  'f:labels':{'f:a':{}}},"
		      " 'f:spec':{'f:empty':{},'f:nested':{'f:deep':{'f:x':{}}},"
		      "  'f:size':{},'f:tags':{}}}");
	diff_schemas_free(reg);
}

Test(schema, fieldset_errors)
{
	struct diff_schemas *reg = diff_schemas_new();
	struct diff_fieldset *set = (struct diff_fieldset *)1;
	struct err err = ERR_INIT;
	json_t *arr = J("[1]");

	assert_fields_fail(
		reg, "apps", "Deployment",
		"{'spec':{'template':{'spec':{'containers':[{'image':'x'}]}}}}",
		".spec.template.spec.containers: element 0: associative list "
		"with keys has an element that omits key field \"name\" (and "
		"doesn't have default value)");
	assert_fields_fail(reg, "apps", "Deployment",
			   "{'spec':{'template':{'spec':{'containers':["
			   "{'name':'web'},{'name':'db'},{'name':'web'}]}}}}",
			   ".spec.template.spec.containers: duplicate entries "
			   "for key [name=\"web\"]");
	/* protocol defaults to TCP, so these two are the same port. */
	assert_fields_fail(
		reg, "", "Pod",
		"{'spec':{'containers':[{'name':'web','ports':["
		"{'containerPort':80},"
		"{'containerPort':80,'protocol':'TCP'}]}]}}",
		".spec.containers[name=\"web\"].ports: duplicate entries for "
		"key [containerPort=80,protocol=\"TCP\"]");
	assert_fields_fail(reg, "", "Service",
			   "{'spec':{'ports':[{'name':'x','protocol':'UDP'}]}}",
			   ".spec.ports: element 0: associative list with keys "
			   "has an element that omits key field \"port\" (and "
			   "doesn't have default value)");
	assert_fields_fail(reg, "", "Pod",
			   "{'spec':{'containers':['web']}}",
			   ".spec.containers: element 0: associative list "
			   "with keys may not have non-map elements");
	assert_fields_fail(reg, "", "Pod",
			   "{'spec':{'volumes':[{'name':'a'},null]}}",
			   ".spec.volumes: element 1: associative list with "
			   "keys may not have a null element");
	assert_fields_fail(reg, "", "ConfigMap",
			   "{'metadata':{'finalizers':['a','b','a']}}",
			   ".metadata.finalizers: duplicate entries for key "
			   "[=\"a\"]");
	assert_fields_fail(reg, "", "ConfigMap",
			   "{'metadata':{'finalizers':[{'a':1}]}}",
			   ".metadata.finalizers: element 0: associative list "
			   "without keys has an element that's a map type");
	assert_fields_fail(reg, "", "ConfigMap",
			   "{'metadata':{'finalizers':['a',null]}}",
			   ".metadata.finalizers: element 1: associative list "
			   "without keys has an element that's an explicit "
			   "null");
	assert_fields_fail(reg, "", "ConfigMap",
			   "{'metadata':{'finalizers':[['a']]}}",
			   ".metadata.finalizers: element 0: not supported: "
			   "associative list with lists as elements");
	/* All but the Pod ports (its container's name comes first). */
	cr_assert_eq(failed_alike, 9);

	cr_assert_eq(diff_fieldset_of_object(&set, arr, NULL, &err),
		     ERR_INVALID);
	cr_assert_null(set);
	err_release(&err);
	cr_assert_eq(diff_fieldset_of_object_is(arr, NULL, arr, &err),
		     ERR_INVALID);
	json_decref(arr);
	err_release(&err);
	diff_schemas_free(reg);
}

Test(schema, fieldset_too_deep)
{
	json_t *obj = json_object(), *o = obj;
	struct diff_fieldset *set = NULL;
	struct err err = ERR_INIT;

	for (int i = 0; i < 300; i++) {
		json_t *child = json_object();

		json_object_set_new(o, "a", child);
		o = child;
	}
	json_object_set_new(o, "leaf", json_true());
	cr_assert_eq(diff_fieldset_of_object(&set, obj, NULL, &err),
		     ERR_LIMIT);
	cr_assert_null(set);
	cr_assert(strstr(err_msg(&err), ": object nested too deeply"), "%s",
		  err_msg(&err));
	json_decref(obj);
	err_release(&err);
}

/* --- CRDs --- */

/*
 * A CRD in the style of the prometheus-operator ServiceMonitor: atomic
 * lists without markers, an atomic selector, a set, a map-list with a
 * defaulted key, preserve-unknown-fields, additionalProperties, an
 * embedded resource and int-or-string. v1alpha1 (neither served nor
 * stored) types targetLabels differently: v1, the storage version, wins.
 */
static const char monitor_crd[] =
	"{'apiVersion':'apiextensions.k8s.io/v1',"
	" 'kind':'CustomResourceDefinition',"
	" 'metadata':{'name':'monitors.example.com'},"
	" 'spec':{'group':'example.com','scope':'Namespaced',"
	"  'names':{'kind':'Monitor','plural':'monitors',"
	"   'listKind':'MonitorList','singular':'monitor'},"
	"  'versions':["
	"   {'name':'v1alpha1','served':false,'storage':false,"
	"    'schema':{'openAPIV3Schema':{'type':'object','properties':{"
	"     'spec':{'type':'object','properties':{'targetLabels':"
	"      {'type':'array','items':{'type':'string'}}}}}}}},"
	"   {'name':'v1','served':true,'storage':true,"
	"    'subresources':{'status':{}},"
	"    'schema':{'openAPIV3Schema':{"
	"     'description':'Monitor defines monitoring for services.',"
	"     'type':'object','required':['spec'],"
	"     'properties':{"
	"      'apiVersion':{'type':'string'},"
	"      'kind':{'type':'string'},"
	"      'metadata':{'type':'object'},"
	"      'spec':{'type':'object','required':['selector'],"
	"       'properties':{"
	"        'endpoints':{'type':'array','items':{'type':'object',"
	"         'properties':{'port':{'type':'string'},"
	"          'interval':{'type':'string','pattern':'^[0-9]+s$'},"
	"          'relabelings':{'type':'array','items':{'type':'object',"
	"           'x-kubernetes-preserve-unknown-fields':true}}}}},"
	"        'selector':{'type':'object',"
	"         'x-kubernetes-map-type':'atomic','properties':{"
	"          'matchLabels':{'type':'object',"
	"           'additionalProperties':{'type':'string'}},"
	"          'matchExpressions':{'type':'array',"
	"           'items':{'type':'object','required':['key','operator'],"
	"            'properties':{'key':{'type':'string'},"
	"             'operator':{'type':'string'},"
	"             'values':{'type':'array','items':{'type':'string'},"
	"              'x-kubernetes-list-type':'atomic'}}}}}},"
	"        'namespaceSelector':{'type':'object','properties':{"
	"         'any':{'type':'boolean'},"
	"         'matchNames':{'type':'array','items':{'type':'string'}}}},"
	"        'targetLabels':{'type':'array','items':{'type':'string'},"
	"         'x-kubernetes-list-type':'set'},"
	"        'ports':{'type':'array','x-kubernetes-list-type':'map',"
	"         'x-kubernetes-list-map-keys':['protocol','name'],"
	"         'items':{'type':'object','required':['name'],"
	"          'properties':{'name':{'type':'string'},"
	"           'protocol':{'type':'string','default':'TCP'},"
	"           'port':{'type':'integer','format':'int32'}}}},"
	"        'config':{'type':'object',"
	"         'x-kubernetes-preserve-unknown-fields':true},"
	"        'params':{'type':'object','additionalProperties':{"
	"         'type':'object','properties':{'value':{'type':'string'}}}},"
	"        'template':{'type':'object',"
	"         'x-kubernetes-embedded-resource':true,"
	"         'x-kubernetes-preserve-unknown-fields':true},"
	"        'replicas':{'x-kubernetes-int-or-string':true,"
	"         'anyOf':[{'type':'integer'},{'type':'string'}]}}},"
	"      'status':{'type':'object','properties':{"
	"       'conditions':{'type':'array','x-kubernetes-list-type':'map',"
	"        'x-kubernetes-list-map-keys':['type'],"
	"        'items':{'type':'object','properties':{"
	"         'type':{'type':'string'},"
	"         'status':{'type':'string'}}}}}}}}}}]}}";

static struct diff_schemas *reg_with(const char *crd_text)
{
	struct diff_schemas *reg = diff_schemas_new();
	json_t *crd = J(crd_text);
	struct err err = ERR_INIT;

	cr_assert_not_null(reg);
	cr_assert_eq(diff_schemas_add_crd(reg, crd, &err), 0, "%s",
		     err_msg(&err));
	json_decref(crd);
	err_release(&err);
	return reg;
}

Test(schema, crd_lookups)
{
	struct diff_schemas *reg = reg_with(monitor_crd);
	const struct diff_schema *m =
		diff_schemas_lookup(reg, "example.com", "Monitor");
	const json_t *const *defaults;

	cr_assert_neq(m, diff_schemas_lookup(reg, "example.com", "Other"));
	cr_assert_eq(type_at(m, "spec", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(m, "spec.endpoints", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(m, "spec.selector", OBJ), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(m, "spec.namespaceSelector", OBJ),
		     DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(m, "spec.namespaceSelector.matchNames", ARR),
		     DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(m, "spec.targetLabels", ARR), DIFF_SCHEMA_SET);
	cr_assert_eq(type_at(m, "spec.ports", ARR), DIFF_SCHEMA_MAP_LIST);
	/* Keys sorted by name; the schema's default fills a missing one. */
	assert_keys(at(m, "spec.ports"), "name,protocol=\"TCP\"");
	diff_schema_keys(at(m, "spec.ports"), NULL, &defaults);
	cr_assert_null(defaults[0]);
	cr_assert_eq(type_at(m, "spec.config", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(m, "spec.config.any.deeper", OBJ),
		     DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(m, "spec.config.list", ARR), DIFF_SCHEMA_ATOMIC);
	cr_assert_eq(type_at(m, "spec.params.x", OBJ), DIFF_SCHEMA_GRANULAR);
	cr_assert_eq(type_at(m, "spec.template.metadata.finalizers", ARR),
		     DIFF_SCHEMA_SET);
	cr_assert_eq(type_at(m, "metadata.ownerReferences", ARR),
		     DIFF_SCHEMA_MAP_LIST);
	assert_keys(at(m, "status.conditions"), "type");
	diff_schemas_free(reg);
}

Test(schema, crd_fieldset)
{
	struct diff_schemas *reg = reg_with(monitor_crd);

	assert_fields(
		reg,
		"{'apiVersion':'example.com/v1','kind':'Monitor',"
		" 'metadata':{'name':'m','namespace':'n',"
		"  'labels':{'app':'m'},'finalizers':['example.com/cleanup']},"
		" 'spec':{"
		"  'endpoints':[{'port':'web','interval':'30s'}],"
		"  'selector':{'matchLabels':{'app':'web'}},"
		"  'namespaceSelector':{'matchNames':['a','b']},"
		"  'targetLabels':['team','app'],"
		"  'ports':[{'name':'http','port':80},"
		"   {'name':'dns','protocol':'UDP','port':53}],"
		"  'config':{'scrape':{'timeout':'10s','paths':['/a']},"
		"   'debug':true,'empty':{}},"
		"  'params':{'first':{'value':'1'},'second':{}},"
		"  'template':{'apiVersion':'v1','kind':'Pod',"
		"   'metadata':{'name':'p','labels':{'x':'y'}},"
		"   'spec':{'nodeName':'n1'}},"
		"  'replicas':'50%'},"
		" 'status':{'conditions':[{'type':'Ready'}]}}",
		"{'f:metadata':{'f:finalizers':{"
		"   'v:\\'example.com/cleanup\\'':{}},"
		"  'f:labels':{'f:app':{}}},"
		" 'f:spec':{"
		"  'f:config':{'f:debug':{},'f:empty':{},"
		"   'f:scrape':{'.':{},'f:paths':{},'f:timeout':{}}},"
		"  'f:endpoints':{},"
		"  'f:namespaceSelector':{'f:matchNames':{}},"
		"  'f:params':{'f:first':{'.':{},'f:value':{}},"
		"   'f:second':{}},"
		"  'f:ports':{"
		"   'k:{\\'name\\':\\'dns\\',\\'protocol\\':\\'UDP\\'}':"
		"    {'.':{},'f:name':{},'f:port':{},'f:protocol':{}},"
		"   'k:{\\'name\\':\\'http\\',\\'protocol\\':\\'TCP\\'}':"
		"    {'.':{},'f:name':{},'f:port':{}}},"
		"  'f:replicas':{},"
		"  'f:selector':{},"
		"  'f:targetLabels':{'v:\\'app\\'':{},'v:\\'team\\'':{}},"
		"  'f:template':{'f:apiVersion':{},'f:kind':{},"
		"   'f:metadata':{'f:labels':{'f:x':{}},'f:name':{}},"
		"   'f:spec':{'.':{},'f:nodeName':{}}}}}");
	diff_schemas_free(reg);
}

static const char crd_head[] =
	"{'apiVersion':'apiextensions.k8s.io/v1',"
	" 'kind':'CustomResourceDefinition',"
	" 'metadata':{'name':'foos.example.com'},"
	" 'spec':{'group':'example.com','scope':'Namespaced',"
	"  'names':{'kind':'Foo','plural':'foos'},"
	"  'versions':[";
static const char crd_tail[] = "]}}";

/* A Foo CRD with one version (v1, served and stored) whose spec is `spec`. */
static json_t *foo_crd(const char *spec)
{
	char text[4096];

	snprintf(text, sizeof(text),
		 "%s{'name':'v1','served':true,'storage':true,"
		 "'schema':{'openAPIV3Schema':{'type':'object','properties':{"
		 "'spec':%s}}}}%s",
		 crd_head, spec, crd_tail);
	return J(text);
}

Test(schema, crd_preserve_unknown_fields)
{
	struct diff_schemas *reg = diff_schemas_new();
	json_t *crd = foo_crd(
		"{'type':'object','x-kubernetes-preserve-unknown-fields':true,"
		" 'properties':{'known':{'type':'array',"
		"  'x-kubernetes-list-type':'set','items':{'type':'string'}},"
		"  'closed':{'type':'object','properties':{"
		"   'a':{'type':'string'}}}}}");

	cr_assert_eq(diff_schemas_add_crd(reg, crd, NULL), 0);
	/* Known fields keep their types; unknown ones are deduced and
	 * owned on their own, down the whole subtree. */
	assert_fields(reg,
		      "{'apiVersion':'example.com/v1','kind':'Foo',"
		      " 'spec':{'known':['a'],'extra':{'x':1,'l':[1,1]},"
		      "  'closed':{'a':'b','b':{'c':1}}}}",
		      "{'f:spec':{'f:closed':{'f:a':{},"
		      "   'f:b':{'.':{},'f:c':{}}},"
		      "  'f:extra':{'.':{},'f:l':{},'f:x':{}},"
		      "  'f:known':{'v:\\'a\\'':{}}}}");
	json_decref(crd);
	diff_schemas_free(reg);
}

/* A root that keeps anything: every key under it is owned on its own. */
Test(schema, crd_preserve_unknown_root)
{
	struct diff_schemas *reg = diff_schemas_new();
	char text[1024];
	json_t *crd;

	snprintf(text, sizeof(text),
		 "%s{'name':'v1','served':true,'storage':true,"
		 "'schema':{'openAPIV3Schema':{'type':'object',"
		 "'x-kubernetes-preserve-unknown-fields':true}}}%s",
		 crd_head, crd_tail);
	crd = J(text);
	cr_assert_eq(diff_schemas_add_crd(reg, crd, NULL), 0);
	assert_fields(reg,
		      "{'apiVersion':'example.com/v1','kind':'Foo',"
		      " 'metadata':{'name':'f','labels':{'a':'b'}},"
		      " 'spec':{'a':{'b':1},'l':[{'x':1}]},'data':'x'}",
		      "{'f:data':{},"
		      " 'f:metadata':{'f:labels':{'f:a':{}}},"
		      " 'f:spec':{'.':{},'f:a':{'.':{},'f:b':{}},'f:l':{}}}");
	json_decref(crd);
	diff_schemas_free(reg);
}

Test(schema, crd_versions_and_replacement)
{
	struct diff_schemas *reg = diff_schemas_new();
	const struct diff_schema *s;
	json_t *crd;

	/* No storage flag: the first served version. */
	crd = J("{'kind':'CustomResourceDefinition',"
		" 'metadata':{'name':'foos.example.com'},"
		" 'spec':{'group':'example.com','names':{'kind':'Foo'},"
		"  'versions':["
		"   {'name':'v1beta1','served':false,"
		"    'schema':{'openAPIV3Schema':"
		"    {'type':'object','properties':{'spec':{'type':'object',"
		"     'properties':{'l':{'type':'array',"
		"      'x-kubernetes-list-type':'set'}}}}}}},"
		"   {'name':'v1','served':true,'schema':{'openAPIV3Schema':"
		"    {'type':'object','properties':{'spec':{'type':'object',"
		"     'properties':{'l':{'type':'array'}}}}}}}]}}");
	cr_assert_eq(diff_schemas_add_crd(reg, crd, NULL), 0);
	json_decref(crd);
	s = diff_schemas_lookup(reg, "example.com", "Foo");
	cr_assert_eq(type_at(s, "spec.l", ARR), DIFF_SCHEMA_ATOMIC);

	/* Adding again replaces. */
	crd = foo_crd("{'type':'object','properties':{'l':{'type':'array',"
		      "'x-kubernetes-list-type':'set',"
		      "'items':{'type':'string'}}}}");
	cr_assert_eq(diff_schemas_add_crd(reg, crd, NULL), 0);
	json_decref(crd);
	s = diff_schemas_lookup(reg, "example.com", "Foo");
	cr_assert_eq(type_at(s, "spec.l", ARR), DIFF_SCHEMA_SET);

	/* A bad replacement leaves the registration as it was. */
	crd = foo_crd("{'type':'object','properties':{'l':{'type':'array',"
		      "'x-kubernetes-list-type':'bag'}}}");
	cr_assert_eq(diff_schemas_add_crd(reg, crd, NULL), ERR_INVALID);
	json_decref(crd);
	s = diff_schemas_lookup(reg, "example.com", "Foo");
	cr_assert_eq(type_at(s, "spec.l", ARR), DIFF_SCHEMA_SET);

	/* Removing falls back to the defaults. */
	diff_schemas_remove(reg, "example.com", "Foo");
	diff_schemas_remove(reg, "example.com", "Foo");
	s = diff_schemas_lookup(reg, "example.com", "Foo");
	cr_assert_eq(s, diff_schemas_lookup(reg, "example.com", "Nothing"));
	cr_assert_eq(type_at(s, "metadata.finalizers", ARR), DIFF_SCHEMA_SET);
	diff_schemas_free(reg);
}

Test(schema, crd_without_schema)
{
	struct diff_schemas *reg = diff_schemas_new();
	json_t *crd = J("{'kind':'CustomResourceDefinition',"
			" 'metadata':{'name':'bars.example.com'},"
			" 'spec':{'group':'example.com','names':{'kind':'Bar'},"
			"  'versions':[{'name':'v1','served':true,"
			"   'storage':true}]}}");

	cr_assert_eq(diff_schemas_add_crd(reg, crd, NULL), 0);
	assert_fields(reg,
		      "{'apiVersion':'example.com/v1','kind':'Bar',"
		      " 'metadata':{'name':'b','finalizers':['f']},"
		      " 'spec':{'list':[{'a':1}],'obj':{'a':{'b':2}}}}",
		      "{'f:metadata':{'f:finalizers':{'v:\\'f\\'':{}}},"
		      " 'f:spec':{'f:list':{},'f:obj':{'f:a':{'f:b':{}}}}}");
	json_decref(crd);
	diff_schemas_free(reg);
}

Test(schema, crd_many)
{
	struct diff_schemas *reg = diff_schemas_new();
	char text[1024];

	/* Registrations in scrambled order, then every one looked up. */
	for (int i = 0; i < 200; i++) {
		int n = (i * 73) % 200;
		json_t *crd;

		snprintf(text, sizeof(text),
			 "{'metadata':{'name':'k%d.g%d.example.com'},"
			 "'spec':{'group':'g%d.example.com','names':"
			 "{'kind':'K%d'},'versions':[{'name':'v1',"
			 "'served':true,'storage':true,'schema':"
			 "{'openAPIV3Schema':{'type':'object','properties':"
			 "{'spec':{'type':'object','properties':{'k%d':"
			 "{'type':'array','x-kubernetes-list-type':'set'}"
			 "}}}}}}]}}",
			 n, n % 7, n % 7, n, n);
		crd = J(text);
		cr_assert_eq(diff_schemas_add_crd(reg, crd, NULL), 0);
		json_decref(crd);
	}
	for (int n = 0; n < 200; n++) {
		char group[64], kind[16], path[32];

		snprintf(group, sizeof(group), "g%d.example.com", n % 7);
		snprintf(kind, sizeof(kind), "K%d", n);
		snprintf(path, sizeof(path), "spec.k%d", n);
		cr_assert_eq(type_at(diff_schemas_lookup(reg, group, kind),
				     path, ARR),
			     DIFF_SCHEMA_SET, "%s/%s", group, kind);
	}
	diff_schemas_free(reg);
}

/* diff_schemas_add_crd(crd) fails with `code` and exactly `msg`. */
static void assert_crd_fails(json_t *crd, int code, const char *msg)
{
	struct diff_schemas *reg = diff_schemas_new();
	struct err err = ERR_INIT;

	cr_assert_eq(diff_schemas_add_crd(reg, crd, &err), code, "%s",
		     err_msg(&err));
	cr_assert_str_eq(err_first(&err), msg);
	cr_assert_eq(err_count(&err), 1);
	/* Nothing was registered. */
	cr_assert_eq(diff_schemas_lookup(reg, "example.com", "Foo"),
		     diff_schemas_lookup(reg, "example.com", "Nothing"));
	err_release(&err);
	json_decref(crd);
	diff_schemas_free(reg);
}

#define AT "CustomResourceDefinition foos.example.com: " \
	   "spec.versions[0].schema.openAPIV3Schema.properties.spec"

Test(schema, crd_errors)
{
	assert_crd_fails(
		foo_crd("{'type':'object','properties':{'ports':{"
			"'type':'array','x-kubernetes-list-type':'map',"
			"'items':{'type':'object','properties':{"
			"'name':{'type':'string'}}}}}}"),
		ERR_INVALID,
		AT ".properties.ports: x-kubernetes-list-type map without "
		   "x-kubernetes-list-map-keys");
	assert_crd_fails(
		foo_crd("{'type':'object','properties':{'ports':{"
			"'type':'array','x-kubernetes-list-type':'map',"
			"'x-kubernetes-list-map-keys':[],"
			"'items':{'type':'object'}}}}"),
		ERR_INVALID,
		AT ".properties.ports: x-kubernetes-list-map-keys must be a "
		   "non-empty list of field names");
	assert_crd_fails(
		foo_crd("{'type':'object','properties':{'ports':{"
			"'type':'array','x-kubernetes-list-type':'map',"
			"'x-kubernetes-list-map-keys':['port'],"
			"'items':{'type':'object','properties':{"
			"'name':{'type':'string'}}}}}}"),
		ERR_INVALID,
		AT ".properties.ports: x-kubernetes-list-map-keys: \"port\" is "
		   "not a property of the items");
	assert_crd_fails(
		foo_crd("{'type':'object','properties':{'ports':{"
			"'type':'array','x-kubernetes-list-type':'map',"
			"'x-kubernetes-list-map-keys':['name'],"
			"'items':{'type':'string'}}}}"),
		ERR_INVALID,
		AT ".properties.ports: x-kubernetes-list-type map needs items "
		   "of type object");
	assert_crd_fails(
		foo_crd("{'type':'object','properties':{'ports':{"
			"'type':'array','x-kubernetes-list-map-keys':['name'],"
			"'items':{'type':'object','properties':{"
			"'name':{'type':'string'}}}}}}"),
		ERR_INVALID,
		AT ".properties.ports: x-kubernetes-list-map-keys without "
		   "x-kubernetes-list-type map");
	assert_crd_fails(foo_crd("{'type':'object','properties':{'l':{"
				 "'type':'array',"
				 "'x-kubernetes-list-type':'bag'}}}"),
			 ERR_INVALID,
			 AT ".properties.l: unknown x-kubernetes-list-type "
			    "\"bag\"");
	assert_crd_fails(foo_crd("{'type':'object',"
				 "'x-kubernetes-map-type':'sometimes'}"),
			 ERR_INVALID,
			 AT ": unknown x-kubernetes-map-type \"sometimes\"");
	assert_crd_fails(foo_crd("{'type':'object','properties':{'n':{"
				 "'type':'float'}}}"),
			 ERR_INVALID,
			 AT ".properties.n: unknown type \"float\"");
	assert_crd_fails(foo_crd("{'type':7}"), ERR_INVALID,
			 AT ": type must be a string");
	assert_crd_fails(foo_crd("{'type':'object','properties':[]}"),
			 ERR_INVALID, AT ": properties must be an object");
	assert_crd_fails(foo_crd("{'type':'array',"
				 "'items':[{'type':'string'}]}"),
			 ERR_INVALID, AT ": items must be a schema object");
	assert_crd_fails(foo_crd("{'type':'object',"
				 "'additionalProperties':'yes'}"),
			 ERR_INVALID,
			 AT ": additionalProperties must be a boolean or a "
			    "schema");
	assert_crd_fails(foo_crd("'spec'"), ERR_INVALID,
			 AT ": schema must be an object");
}

Test(schema, crd_errors_outside_schemas)
{
	char text[2048];

	assert_crd_fails(J("{'kind':'CustomResourceDefinition',"
			   "'metadata':{'name':'foos.example.com'},"
			   "'spec':{'names':{'kind':'Foo'},"
			   "'versions':[{'name':'v1'}]}}"),
			 ERR_INVALID,
			 "CustomResourceDefinition foos.example.com: "
			 "spec.group must be a non-empty string");
	assert_crd_fails(J("{'kind':'CustomResourceDefinition',"
			   "'metadata':{'name':'foos.example.com'},"
			   "'spec':{'group':'example.com','names':{},"
			   "'versions':[{'name':'v1'}]}}"),
			 ERR_INVALID,
			 "CustomResourceDefinition foos.example.com: "
			 "spec.names.kind must be a non-empty string");
	assert_crd_fails(J("{'kind':'CustomResourceDefinition',"
			   "'metadata':{'name':'foos.example.com'},"
			   "'spec':{'group':'example.com',"
			   "'names':{'kind':'Foo'},'versions':[]}}"),
			 ERR_INVALID,
			 "CustomResourceDefinition foos.example.com: "
			 "spec.versions must be a non-empty list");
	assert_crd_fails(J("{'kind':'ConfigMap',"
			   "'metadata':{'name':'foos.example.com'}}"),
			 ERR_INVALID,
			 "CustomResourceDefinition foos.example.com: "
			 "kind is ConfigMap");
	assert_crd_fails(J("[1]"), ERR_INVALID,
			 "CustomResourceDefinition (unnamed): not an object");
	/* The root must be an object; a version needs a name. */
	snprintf(text, sizeof(text),
		 "%s{'name':'v1','schema':{'openAPIV3Schema':"
		 "{'type':'array'}}}%s",
		 crd_head, crd_tail);
	assert_crd_fails(J(text), ERR_INVALID,
			 "CustomResourceDefinition foos.example.com: "
			 "spec.versions[0].schema.openAPIV3Schema: must be "
			 "of type object");
	snprintf(text, sizeof(text), "%s{'served':true}%s", crd_head,
		 crd_tail);
	assert_crd_fails(J(text), ERR_INVALID,
			 "CustomResourceDefinition foos.example.com: "
			 "spec.versions[0]: name must be a string");
	/* Every version is checked, not only the one kept. */
	snprintf(text, sizeof(text),
		 "%s{'name':'v1','storage':true},"
		 "{'name':'v2','schema':{'openAPIV3Schema':{'type':'object',"
		 "'properties':{'spec':{'type':'object','properties':{"
		 "'m':{'type':'object','x-kubernetes-map-type':7}}}}}}}%s",
		 crd_head, crd_tail);
	assert_crd_fails(J(text), ERR_INVALID,
			 "CustomResourceDefinition foos.example.com: "
			 "spec.versions[1].schema.openAPIV3Schema.properties."
			 "spec.properties.m: x-kubernetes-map-type must be a "
			 "string");
}

Test(schema, crd_too_deep)
{
	char *spec = malloc(200 * 40 + 64), *p = spec;
	json_t *crd;

	cr_assert_not_null(spec);
	for (int i = 0; i < 200; i++)
		p += sprintf(p, "{'type':'object','properties':{'a':");
	p += sprintf(p, "{'type':'string'}");
	for (int i = 0; i < 200; i++)
		p += sprintf(p, "}}");
	{
		char *text = malloc(strlen(spec) + 512);

		cr_assert_not_null(text);
		sprintf(text,
			"%s{'name':'v1','schema':{'openAPIV3Schema':"
			"{'type':'object','properties':{'spec':%s}}}}%s",
			crd_head, spec, crd_tail);
		crd = J(text);
		free(text);
	}
	{
		struct diff_schemas *reg = diff_schemas_new();
		struct err err = ERR_INIT;

		cr_assert_eq(diff_schemas_add_crd(reg, crd, &err), ERR_LIMIT);
		cr_assert(strstr(err_msg(&err), "schema nested too deeply"),
			  "%s", err_msg(&err));
		err_release(&err);
		diff_schemas_free(reg);
	}
	json_decref(crd);
	free(spec);
}
