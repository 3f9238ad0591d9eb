/*
 * Unit tests of kube-emu's defaulting: each kind against the object
 * kube-apiserver 1.36 stores (tests/cases/differential/07-defaults
 * compares them with the real server), idempotence, Service address
 * allocation, Secret stringData and canonical quantities.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"
#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

static struct emu_store store;

static void setup(void)
{
	cr_assert_eq(emu_store_init(&store), 0);
}

static void teardown(void)
{
	emu_store_release(&store);
}

TestSuite(defaults, .init = setup, .fini = teardown);

static const struct emu_resource *find_res(const char *g, const char *plural)
{
	const struct emu_resource *r = emu_resource_find(
		g, !strcmp(g, "autoscaling") ? "v2" : "v1", plural);

	cr_assert_not_null(r, "resource %s", plural);
	return r;
}

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &e);

	cr_assert_not_null(j, "bad JSON in test: %s: %s", e.text, text);
	return j;
}

static void assert_json(const json_t *got, const char *want_text)
{
	json_t *want = load(want_text);
	char *g = json_dumps(got, JSON_SORT_KEYS);
	char *w = json_dumps(want, JSON_SORT_KEYS);

	cr_assert(json_equal(got, want), "got  %s\nwant %s", g, w);
	free(g);
	free(w);
	json_decref(want);
}

/*
 * What the store does to a write but the encoding, the field manager,
 * validation and admission webhooks: decoded through the Go type,
 * defaulted, then what the registry sets, read back through the
 * defaults again. (Encoding would add the zero values of what these
 * partial objects lack; the differential check sees whole ones.)
 */
static json_t *as_stored(const struct emu_resource *r, json_t *obj,
			 const json_t *old)
{
	int root = emu_resource_is_custom(r)
			   ? -1
			   : diff_gotype_root(r->group, r->version, r->kind);
	struct buf ignored = BUF_INIT;
	json_t *st;

	if (root >= 0)
		diff_gotype_decode(obj, root, NULL, &ignored);
	buf_release(&ignored);
	if ((st = emu_defaults_apply(r, obj, old)))
		return st;
	if ((st = emu_defaults_prepare(&store, r, obj, old)))
		return st;
	json_decref(emu_defaults_apply(r, obj, old));
	return NULL;
}

/*
 * Default `in` as a create of g/plural, compare with `want`, then check
 * that defaulting the result again changes nothing.
 */
static void check(const char *g, const char *plural, const char *in,
		  const char *want)
{
	const struct emu_resource *r = find_res(g, plural);
	json_t *obj = load(in), *again, *st;

	st = as_stored(r, obj, NULL);
	cr_assert_null(st, "unexpected Status");
	again = load(want);
	if (!json_object_get(again, "status")) {
		/* The zero status is checked by defaults::zero_status. */
		st = json_deep_copy(obj);
		json_object_del(st, "status");
		assert_json(st, want);
		json_decref(st);
	} else {
		assert_json(obj, want);
	}
	json_decref(again);
	again = json_deep_copy(obj);
	st = as_stored(r, again, obj);
	cr_assert_null(st);
	cr_assert(json_equal(obj, again), "defaulting is not idempotent");
	json_decref(again);
	json_decref(obj);
}

#define POD_SPEC_DEFAULTS                                                 \
	"\"dnsPolicy\":\"ClusterFirst\",\"restartPolicy\":\"Always\","    \
	"\"schedulerName\":\"default-scheduler\",\"securityContext\":{}," \
	"\"terminationGracePeriodSeconds\":30"
#define CONTAINER_DEFAULTS                                     \
	"\"terminationMessagePath\":\"/dev/termination-log\"," \
	"\"terminationMessagePolicy\":\"File\",\"resources\":{}"
Test(defaults, deployment)
{
	check("apps", "deployments",
	      "{\"metadata\":{\"name\":\"web\"},\"spec\":{"
	      "\"selector\":{\"matchLabels\":{\"app\":\"web\"}},"
	      "\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},"
	      "\"spec\":{\"containers\":[{\"name\":\"web\","
	      "\"image\":\"nginx:1.27\",\"ports\":[{\"containerPort\":80}],"
	      "\"env\":[{\"name\":\"NODE\",\"valueFrom\":{\"fieldRef\":"
	      "{\"fieldPath\":\"spec.nodeName\"}}}],"
	      "\"livenessProbe\":{\"httpGet\":{\"port\":80}},"
	      "\"readinessProbe\":{\"tcpSocket\":{\"port\":80},"
	      "\"periodSeconds\":5},"
	      "\"resources\":{\"limits\":{\"cpu\":\"1000m\","
	      "\"memory\":\"1024Mi\"},\"requests\":{\"cpu\":0.5}}}]}}}}",
	      "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":1,"
	      "\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":"
	      "{\"maxUnavailable\":\"25%\",\"maxSurge\":\"25%\"}},"
	      "\"revisionHistoryLimit\":10,\"progressDeadlineSeconds\":600,"
	      "\"selector\":{\"matchLabels\":{\"app\":\"web\"}},"
	      "\"template\":{\"metadata\":{\"labels\":"
	      "{\"app\":\"web\"}},\"spec\":{" POD_SPEC_DEFAULTS
	      ",\"containers\":[{"
	      "\"name\":\"web\",\"image\":\"nginx:1.27\","
	      "\"imagePullPolicy\":\"IfNotPresent\"," CONTAINER_DEFAULTS ","
	      "\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}],"
	      "\"env\":[{\"name\":\"NODE\",\"valueFrom\":{\"fieldRef\":"
	      "{\"apiVersion\":\"v1\",\"fieldPath\":\"spec.nodeName\"}}}],"
	      "\"livenessProbe\":{\"httpGet\":{\"port\":80,\"path\":\"/\","
	      "\"scheme\":\"HTTP\"},\"timeoutSeconds\":1,"
	      "\"periodSeconds\":10,\"successThreshold\":1,"
	      "\"failureThreshold\":3},"
	      "\"readinessProbe\":{\"tcpSocket\":{\"port\":80},"
	      "\"periodSeconds\":5,\"timeoutSeconds\":1,"
	      "\"successThreshold\":1,\"failureThreshold\":3},"
	      "\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},"
	      "\"requests\":{\"cpu\":\"500m\"}}}]}}}}");
}

Test(defaults, deployment_recreate_keeps_given)
{
	check("apps", "deployments",
	      "{\"spec\":{\"replicas\":0,\"strategy\":{\"type\":\"Recreate\"},"
	      "\"revisionHistoryLimit\":2,\"template\":{\"spec\":{"
	      "\"restartPolicy\":\"Always\",\"dnsPolicy\":\"Default\","
	      "\"containers\":[{\"name\":\"a\",\"image\":\"busybox\","
	      "\"imagePullPolicy\":\"Never\"}]}}}}",
	      "{\"spec\":{\"replicas\":0,\"strategy\":{\"type\":\"Recreate\"},"
	      "\"revisionHistoryLimit\":2,\"progressDeadlineSeconds\":600,"
	      "\"template\":{\"metadata\":{"
	      "},\"spec\":{\"restartPolicy\":\"Always\","
	      "\"dnsPolicy\":\"Default\",\"schedulerName\":"
	      "\"default-scheduler\",\"securityContext\":{},"
	      "\"terminationGracePeriodSeconds\":30,\"containers\":[{"
	      "\"name\":\"a\",\"image\":\"busybox\",\"imagePullPolicy\":"
	      "\"Never\"," CONTAINER_DEFAULTS "}]}}}}");
}

Test(defaults, image_pull_policy)
{
	static const struct {
		const char *image, *policy;
	} t[] = {
		{"nginx", "Always"},
		{"nginx:latest", "Always"},
		{"nginx:1.27", "IfNotPresent"},
		{"localhost:5000/app", "Always"},
		{"localhost:5000/app:v1", "IfNotPresent"},
		{"nginx@sha256:0123", "IfNotPresent"},
	};
	const struct emu_resource *r = find_res("", "pods");
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(*t); i++) {
		json_t *pod =
			json_pack("{s:{s:[{s:s, s:s}]}}", "spec", "containers",
				  "name", "a", "image", t[i].image);
		json_t *ct;

		cr_assert_null(emu_defaults_apply(r, pod, NULL));
		ct = json_array_get(
			json_object_get(json_object_get(pod, "spec"),
					"containers"),
			0);
		cr_assert_str_eq(json_string_value(json_object_get(
					 ct, "imagePullPolicy")),
				 t[i].policy, "%s", t[i].image);
		json_decref(pod);
	}
}

/* The "default" ServiceAccount of namespace "default". */
static void add_default_account(bool automount)
{
	json_t *sa = json_pack("{s:s, s:s, s:{s:s}, s:b}", "apiVersion", "v1",
			       "kind", "ServiceAccount", "metadata", "name",
			       "default", "automountServiceAccountToken",
			       automount);
	json_t *out = NULL;

	cr_assert_eq(emu_store_create(&store, find_res("", "serviceaccounts"),
				      "default", sa, NULL, false, &out),
		     201);
	json_decref(out);
	json_decref(sa);
}

#define POD_ADMITTED                                                      \
	"\"serviceAccountName\":\"default\",\"serviceAccount\":\"default\","  \
	"\"priority\":0,\"preemptionPolicy\":\"PreemptLowerPriority\","     \
	"\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\","       \
	"\"operator\":\"Exists\",\"effect\":\"NoExecute\","                 \
	"\"tolerationSeconds\":300},{\"key\":"                              \
	"\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","        \
	"\"effect\":\"NoExecute\",\"tolerationSeconds\":300}]"

Test(defaults, pod)
{
	add_default_account(false);
	check("", "pods",
	      "{\"metadata\":{\"namespace\":\"default\"},"
	      "\"spec\":{\"initContainers\":[{\"name\":\"i\","
	      "\"image\":\"busybox:1\"}],\"containers\":[{\"name\":\"a\","
	      "\"image\":\"busybox:1\",\"resources\":{\"limits\":"
	      "{\"memory\":\"128Mi\",\"cpu\":\"250m\"},\"requests\":"
	      "{\"cpu\":\"100m\"}},\"lifecycle\":{\"preStop\":{\"httpGet\":"
	      "{\"port\":8080}}}}],\"volumes\":[{\"name\":\"c\","
	      "\"configMap\":{\"name\":\"x\"}},{\"name\":\"s\",\"secret\":"
	      "{\"secretName\":\"x\"}},{\"name\":\"d\",\"downwardAPI\":"
	      "{\"items\":[{\"path\":\"l\",\"fieldRef\":{\"fieldPath\":"
	      "\"metadata.labels\"}}]}},{\"name\":\"p\",\"projected\":"
	      "{\"sources\":[{\"serviceAccountToken\":{\"path\":\"t\"}}]}},"
	      "{\"name\":\"h\",\"hostPath\":{\"path\":\"/tmp\"}},"
	      "{\"name\":\"e\",\"emptyDir\":{}},{\"name\":\"m\","
	      "\"emptyDir\":{\"sizeLimit\":\"1.5Gi\"}},{\"name\":\"n\"}]}}",
	      "{\"metadata\":{\"namespace\":\"default\"},"
	      "\"spec\":{" POD_SPEC_DEFAULTS ",\"enableServiceLinks\":true,"
	      POD_ADMITTED ",\"initContainers\":[{\"name\":\"i\",\"image\":\"busybox:1\","
	      "\"imagePullPolicy\":\"IfNotPresent\"," CONTAINER_DEFAULTS "}],"
	      "\"containers\":[{\"name\":\"a\",\"image\":\"busybox:1\","
	      "\"imagePullPolicy\":\"IfNotPresent\"," CONTAINER_DEFAULTS ","
	      "\"resources\":{\"limits\":{\"memory\":\"128Mi\","
	      "\"cpu\":\"250m\"},\"requests\":{\"cpu\":\"100m\","
	      "\"memory\":\"128Mi\"}},\"lifecycle\":{\"preStop\":"
	      "{\"httpGet\":{\"port\":8080,\"path\":\"/\","
	      "\"scheme\":\"HTTP\"}}}}],"
	      "\"volumes\":[{\"name\":\"c\",\"configMap\":{\"name\":\"x\","
	      "\"defaultMode\":420}},{\"name\":\"s\",\"secret\":"
	      "{\"secretName\":\"x\",\"defaultMode\":420}},{\"name\":\"d\","
	      "\"downwardAPI\":{\"defaultMode\":420,\"items\":[{\"path\":"
	      "\"l\",\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":"
	      "\"metadata.labels\"}}]}},{\"name\":\"p\",\"projected\":"
	      "{\"defaultMode\":420,\"sources\":[{\"serviceAccountToken\":"
	      "{\"path\":\"t\",\"expirationSeconds\":3600}}]}},"
	      "{\"name\":\"h\",\"hostPath\":{\"path\":\"/tmp\","
	      "\"type\":\"\"}},{\"name\":\"e\",\"emptyDir\":{}},"
	      "{\"name\":\"m\",\"emptyDir\":{\"sizeLimit\":\"1536Mi\"}},"
	      "{\"name\":\"n\",\"emptyDir\":{}}]}}");
}

/*
 * Admission of a Pod: its account's token volume, mounted in every
 * container; the status it starts with; no account, no Pod.
 */
Test(defaults, pod_admission)
{
	const struct emu_resource *r = find_res("", "pods");
	json_t *pod = load("{\"metadata\":{\"name\":\"p\",\"namespace\":"
			   "\"default\"},\"spec\":{\"containers\":[{\"name\":"
			   "\"a\",\"image\":\"x:1\",\"resources\":{\"limits\":"
			   "{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}");
	json_t *st, *vol, *mount;
	const char *vname;

	st = as_stored(r, pod, NULL);
	cr_assert_not_null(st);
	cr_assert_eq(json_integer_value(json_object_get(st, "code")), 403);
	cr_assert_str_eq(
		json_string_value(json_object_get(st, "message")),
		"pods \"p\" is forbidden: error looking up service account "
		"default/default: serviceaccount \"default\" not found");
	json_decref(st);
	add_default_account(true);
	cr_assert_null(as_stored(r, pod, NULL));
	vol = json_array_get(
		json_object_get(json_object_get(pod, "spec"), "volumes"), 0);
	vname = json_string_value(json_object_get(vol, "name"));
	cr_assert_not_null(vname);
	cr_assert_eq(strncmp(vname, "kube-api-access-", 16), 0, "%s", vname);
	cr_assert_eq(strlen(vname), 21, "%s", vname);
	mount = json_array_get(
		json_object_get(
			json_array_get(
				json_object_get(json_object_get(pod, "spec"),
						"containers"),
				0),
			"volumeMounts"),
		0);
	cr_assert_str_eq(json_string_value(json_object_get(mount, "name")),
			 vname);
	json_object_del(mount, "name");
	assert_json(mount,
		    "{\"readOnly\":true,\"mountPath\":"
		    "\"/var/run/secrets/kubernetes.io/serviceaccount\"}");
	assert_json(json_object_get(pod, "status"),
		    "{\"phase\":\"Pending\",\"qosClass\":\"Guaranteed\"}");
	json_decref(pod);
}

Test(defaults, statefulset)
{
	check("apps", "statefulsets",
	      "{\"spec\":{\"serviceName\":\"db\",\"template\":{\"spec\":{"
	      "\"containers\":[{\"name\":\"db\",\"image\":\"pg:16\"}]}},"
	      "\"volumeClaimTemplates\":[{\"metadata\":{\"name\":\"data\"},"
	      "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":"
	      "{\"requests\":{\"storage\":\"1024Mi\"}}}}]}}",
	      "{\"spec\":{\"serviceName\":\"db\",\"replicas\":1,"
	      "\"revisionHistoryLimit\":10,\"podManagementPolicy\":"
	      "\"OrderedReady\",\"updateStrategy\":{\"type\":"
	      "\"RollingUpdate\",\"rollingUpdate\":{\"partition\":0}},"
	      "\"persistentVolumeClaimRetentionPolicy\":{\"whenDeleted\":"
	      "\"Retain\",\"whenScaled\":\"Retain\"},"
	      "\"template\":{\"metadata\":{"
	      "},\"spec\":{" POD_SPEC_DEFAULTS
	      ",\"containers\":[{\"name\":\"db\",\"image\":\"pg:16\","
	      "\"imagePullPolicy\":\"IfNotPresent\"," CONTAINER_DEFAULTS
	      "}]}},\"volumeClaimTemplates\":[{\"apiVersion\":\"v1\","
	      "\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":"
	      "\"data\""
	      "},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
	      "\"resources\":{\"requests\":{\"storage\":\"1Gi\"}},"
	      "\"volumeMode\":\"Filesystem\"},\"status\":{\"phase\":"
	      "\"Pending\"}}]}}");
}

Test(defaults, statefulset_ondelete_and_bare_rolling_update)
{
	/* Kube gives a partition only when rollingUpdate exists. */
	check("apps", "statefulsets",
	      "{\"spec\":{\"updateStrategy\":{\"type\":\"RollingUpdate\"}}}",
	      "{\"spec\":{\"replicas\":1,\"revisionHistoryLimit\":10,"
	      "\"podManagementPolicy\":\"OrderedReady\",\"updateStrategy\":"
	      "{\"type\":\"RollingUpdate\"},"
	      "\"persistentVolumeClaimRetentionPolicy\":{\"whenDeleted\":"
	      "\"Retain\",\"whenScaled\":\"Retain\"}}}");
	check("apps", "statefulsets",
	      "{\"spec\":{\"updateStrategy\":{\"type\":\"OnDelete\"}}}",
	      "{\"spec\":{\"replicas\":1,\"revisionHistoryLimit\":10,"
	      "\"podManagementPolicy\":\"OrderedReady\",\"updateStrategy\":"
	      "{\"type\":\"OnDelete\"},"
	      "\"persistentVolumeClaimRetentionPolicy\":{\"whenDeleted\":"
	      "\"Retain\",\"whenScaled\":\"Retain\"}}}");
}

Test(defaults, daemonset_and_replicaset)
{
	check("apps", "daemonsets", "{\"spec\":{\"template\":{\"spec\":{}}}}",
	      "{\"metadata\":{\"annotations\":{"
	      "\"deprecated.daemonset.template.generation\":\"1\"}},"
	      "\"spec\":{\"updateStrategy\":{\"type\":\"RollingUpdate\","
	      "\"rollingUpdate\":{\"maxUnavailable\":1,\"maxSurge\":0}},"
	      "\"revisionHistoryLimit\":10,\"template\":{\"metadata\":"
	      "{},\"spec\":{" POD_SPEC_DEFAULTS "}}}}");
	check("apps", "replicasets", "{\"spec\":{}}",
	      "{\"spec\":{\"replicas\":1}}");
}

Test(defaults, job_generated_selector)
{
	check("batch", "jobs",
	      "{\"metadata\":{\"name\":\"pi\",\"uid\":\"u-1\"},\"spec\":{"
	      "\"template\":{\"metadata\":{\"labels\":{\"app\":\"pi\"}},"
	      "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{"
	      "\"name\":\"pi\",\"image\":\"perl:5\"}]}}}}",
	      "{\"metadata\":{\"name\":\"pi\",\"uid\":\"u-1\",\"labels\":{"
	      "\"app\":\"pi\",\"job-name\":\"pi\","
	      "\"batch.kubernetes.io/job-name\":\"pi\","
	      "\"controller-uid\":\"u-1\","
	      "\"batch.kubernetes.io/controller-uid\":\"u-1\"}},"
	      "\"spec\":{\"completions\":1,\"parallelism\":1,"
	      "\"backoffLimit\":6,\"completionMode\":\"NonIndexed\","
	      "\"manualSelector\":false,"
	      "\"suspend\":false,\"podReplacementPolicy\":"
	      "\"TerminatingOrFailed\",\"selector\":{\"matchLabels\":{"
	      "\"batch.kubernetes.io/controller-uid\":\"u-1\"}},"
	      "\"template\":{\"metadata\":{\"labels\":{"
	      "\"app\":\"pi\",\"job-name\":\"pi\",\"batch.kubernetes.io/"
	      "job-name\":\"pi\","
	      "\"controller-uid\":\"u-1\","
	      "\"batch.kubernetes.io/controller-uid\":\"u-1\"}},"
	      "\"spec\":{\"restartPolicy\":\"Never\",\"dnsPolicy\":"
	      "\"ClusterFirst\",\"schedulerName\":\"default-scheduler\","
	      "\"securityContext\":{},\"terminationGracePeriodSeconds\":30,"
	      "\"containers\":[{\"name\":\"pi\",\"image\":\"perl:5\","
	      "\"imagePullPolicy\":\"IfNotPresent\"," CONTAINER_DEFAULTS
	      "}]}}}}");
}

Test(defaults, job_manual_selector_and_own_labels)
{
	check("batch", "jobs",
	      "{\"metadata\":{\"name\":\"j\",\"uid\":\"u\",\"labels\":{"
	      "\"team\":\"a\"}},\"spec\":{\"manualSelector\":true,"
	      "\"parallelism\":3,\"backoffLimitPerIndex\":1,"
	      "\"completionMode\":\"Indexed\",\"completions\":3,"
	      "\"podFailurePolicy\":{\"rules\":[{"
	      "\"onPodConditions\":[{\"type\":\"X\"}]}]},"
	      "\"selector\":{\"matchLabels\":{\"x\":\"y\"}},"
	      "\"template\":{\"metadata\":{\"labels\":{\"x\":\"y\"}}}}}",
	      "{\"metadata\":{\"name\":\"j\",\"uid\":\"u\",\"labels\":{"
	      "\"team\":\"a\"}},\"spec\":{\"manualSelector\":true,"
	      "\"parallelism\":3,\"completions\":3,\"backoffLimitPerIndex\":1,"
	      "\"backoffLimit\":2147483647,\"completionMode\":\"Indexed\","
	      "\"suspend\":false,\"podFailurePolicy\":{\"rules\":[{"
	      "\"onPodConditions\":[{\"type\":\"X\",\"status\":"
	      "\"True\"}]}]},"
	      "\"podReplacementPolicy\":\"Failed\",\"selector\":{"
	      "\"matchLabels\":{\"x\":\"y\"}},\"template\":{\"metadata\":"
	      "{\"labels\":{\"x\":\"y\"}}}}}");
}

Test(defaults, cronjob)
{
	check("batch", "cronjobs",
	      "{\"spec\":{\"schedule\":\"* * * * *\",\"jobTemplate\":{"
	      "\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":"
	      "\"OnFailure\"}}}}}}",
	      "{\"spec\":{\"schedule\":\"* * * * *\",\"concurrencyPolicy\":"
	      "\"Allow\",\"suspend\":false,\"successfulJobsHistoryLimit\":3,"
	      "\"failedJobsHistoryLimit\":1,\"jobTemplate\":{\"metadata\":"
	      "{},\"spec\":{\"template\":{\"metadata\":{"
	      "},\"spec\":{\"restartPolicy\":\"OnFailure\","
	      "\"dnsPolicy\":\"ClusterFirst\",\"schedulerName\":"
	      "\"default-scheduler\",\"securityContext\":{},"
	      "\"terminationGracePeriodSeconds\":30}}}}}}");
}

Test(defaults, service_cluster_ip)
{
	check("", "services",
	      "{\"spec\":{\"selector\":{\"app\":\"web\"},\"ports\":[{"
	      "\"port\":80},{\"name\":\"m\",\"port\":9090,\"targetPort\":"
	      "\"metrics\",\"protocol\":\"UDP\"}]}}",
	      "{\"spec\":{\"selector\":{\"app\":\"web\"},\"type\":"
	      "\"ClusterIP\",\"sessionAffinity\":\"None\","
	      "\"internalTrafficPolicy\":\"Cluster\",\"clusterIP\":"
	      "\"10.96.0.2\",\"clusterIPs\":[\"10.96.0.2\"],\"ipFamilies\":"
	      "[\"IPv4\"],\"ipFamilyPolicy\":\"SingleStack\",\"ports\":[{"
	      "\"port\":80,\"targetPort\":80,\"protocol\":\"TCP\"},{"
	      "\"name\":\"m\",\"port\":9090,\"targetPort\":\"metrics\","
	      "\"protocol\":\"UDP\"}]}}");
}

/* Create a Service in the store as store.c would (defaults, then insert). */
static json_t *create_service(const char *name, const char *spec_json)
{
	const struct emu_resource *r = find_res("", "services");
	json_t *obj, *out = NULL;
	int code;

	obj = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", "v1", "kind",
			"Service", "metadata", "name", name, "spec",
			load(spec_json));
	code = emu_store_create(&store, r, "default", obj, NULL, false, &out);
	cr_assert_eq(code, 201);
	json_decref(obj);
	return out;
}

static const char *spec_str(const json_t *obj, const char *key)
{
	return json_string_value(
		json_object_get(json_object_get(obj, "spec"), key));
}

Test(defaults, service_allocation_order_and_reuse)
{
	json_t *a, *b, *c, *d;

	a = create_service("a", "{\"ports\":[{\"port\":80}]}");
	/* A given address is kept and not handed out again. */
	b = create_service("b", "{\"clusterIP\":\"10.96.0.3\","
				"\"ports\":[{\"port\":80}]}");
	c = create_service("c", "{\"ports\":[{\"port\":80}]}");
	d = create_service("d", "{\"clusterIP\":\"None\"}");
	cr_assert_str_eq(spec_str(a, "clusterIP"), "10.96.0.2");
	cr_assert_str_eq(spec_str(b, "clusterIP"), "10.96.0.3");
	cr_assert_str_eq(spec_str(c, "clusterIP"), "10.96.0.4");
	cr_assert_str_eq(spec_str(d, "clusterIP"), "None");
	assert_json(json_object_get(d, "spec"),
		    "{\"clusterIP\":\"None\",\"clusterIPs\":[\"None\"],"
		    "\"type\":\"ClusterIP\",\"sessionAffinity\":\"None\","
		    "\"internalTrafficPolicy\":\"Cluster\",\"ipFamilies\":"
		    "[\"IPv4\"],\"ipFamilyPolicy\":\"RequireDualStack\"}");
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(d);
}

Test(defaults, service_update_keeps_allocations)
{
	const struct emu_resource *r = find_res("", "services");
	json_t *old, *upd;

	old = create_service("np", "{\"type\":\"NodePort\",\"ports\":["
				   "{\"name\":\"http\",\"port\":80},"
				   "{\"name\":\"https\",\"port\":443}]}");
	assert_json(
		json_object_get(old, "spec"),
		"{\"type\":\"NodePort\",\"sessionAffinity\":\"None\","
		"\"externalTrafficPolicy\":\"Cluster\","
		"\"internalTrafficPolicy\":\"Cluster\",\"clusterIP\":"
		"\"10.96.0.2\",\"clusterIPs\":[\"10.96.0.2\"],"
		"\"ipFamilies\":[\"IPv4\"],\"ipFamilyPolicy\":"
		"\"SingleStack\",\"ports\":[{\"name\":\"http\",\"port\":80,"
		"\"targetPort\":80,\"protocol\":\"TCP\",\"nodePort\":30000},"
		"{\"name\":\"https\",\"port\":443,\"targetPort\":443,"
		"\"protocol\":\"TCP\",\"nodePort\":30001}]}");
	/* An update without the allocated values gets the stored ones. */
	upd = load("{\"metadata\":{\"name\":\"np\"},\"spec\":{\"type\":"
		   "\"LoadBalancer\",\"ports\":[{\"name\":\"https\","
		   "\"port\":443},{\"name\":\"http\",\"port\":8080},"
		   "{\"name\":\"new\",\"port\":9000}]}}");
	cr_assert_null(as_stored(r, upd, old));
	assert_json(
		json_object_get(upd, "spec"),
		"{\"type\":\"LoadBalancer\",\"sessionAffinity\":\"None\","
		"\"externalTrafficPolicy\":\"Cluster\","
		"\"allocateLoadBalancerNodePorts\":true,"
		"\"internalTrafficPolicy\":\"Cluster\",\"clusterIP\":"
		"\"10.96.0.2\",\"clusterIPs\":[\"10.96.0.2\"],"
		"\"ipFamilies\":[\"IPv4\"],\"ipFamilyPolicy\":"
		"\"SingleStack\",\"ports\":[{\"name\":\"https\",\"port\":443,"
		"\"targetPort\":443,\"protocol\":\"TCP\",\"nodePort\":30001},"
		"{\"name\":\"http\",\"port\":8080,\"targetPort\":8080,"
		"\"protocol\":\"TCP\",\"nodePort\":30000},{\"name\":\"new\","
		"\"port\":9000,\"targetPort\":9000,\"protocol\":\"TCP\","
		"\"nodePort\":30002}]}");
	json_decref(upd);
	json_decref(old);
}

Test(defaults, service_type_change_drops_allocations)
{
	const struct emu_resource *r = find_res("", "services");
	json_t *old, *upd;

	old = create_service("t", "{\"type\":\"NodePort\",\"ports\":["
				  "{\"port\":80}]}");
	/* The stored spec with only the type changed (kubectl apply). */
	upd = json_deep_copy(old);
	json_object_set_new(json_object_get(upd, "spec"), "type",
			    json_string("ClusterIP"));
	cr_assert_null(as_stored(r, upd, old));
	assert_json(json_object_get(upd, "spec"),
		    "{\"type\":\"ClusterIP\",\"sessionAffinity\":\"None\","
		    "\"internalTrafficPolicy\":\"Cluster\",\"clusterIP\":"
		    "\"10.96.0.2\",\"clusterIPs\":[\"10.96.0.2\"],"
		    "\"ipFamilies\":[\"IPv4\"],\"ipFamilyPolicy\":"
		    "\"SingleStack\",\"ports\":[{\"port\":80,\"targetPort\":"
		    "80,\"protocol\":\"TCP\"}]}");
	json_object_set_new(json_object_get(upd, "spec"), "type",
			    json_string("ExternalName"));
	json_object_set_new(json_object_get(upd, "spec"), "externalName",
			    json_string("db.example.com"));
	cr_assert_null(as_stored(r, upd, old));
	assert_json(json_object_get(upd, "spec"),
		    "{\"type\":\"ExternalName\",\"sessionAffinity\":\"None\","
		    "\"externalName\":\"db.example.com\",\"ports\":[{"
		    "\"port\":80,\"targetPort\":80,\"protocol\":\"TCP\"}]}");
	json_decref(upd);
	json_decref(old);
}

Test(defaults, service_external_name)
{
	check("", "services",
	      "{\"spec\":{\"type\":\"ExternalName\",\"externalName\":"
	      "\"db.example.com\"}}",
	      "{\"spec\":{\"type\":\"ExternalName\",\"externalName\":"
	      "\"db.example.com\",\"sessionAffinity\":\"None\"}}");
	cr_assert_eq(store.next_cluster_ip, 0, "no address was used");
}

Test(defaults, secret_string_data)
{
	check("", "secrets",
	      "{\"data\":{\"a\":\"eA==\",\"b\":\"eA==\"},\"stringData\":{"
	      "\"b\":\"hello\",\"c\":\"ab\",\"d\":\"abc\",\"e\":\"\"}}",
	      "{\"type\":\"Opaque\",\"data\":{\"a\":\"eA==\",\"b\":"
	      "\"aGVsbG8=\",\"c\":\"YWI=\",\"d\":\"YWJj\",\"e\":\"\"}}");
	/* A value the decoder refuses is left for validation. */
	check("", "secrets", "{\"stringData\":{\"a\":1}}",
	      "{\"type\":\"Opaque\",\"stringData\":{\"a\":1}}");
	check("", "secrets", "{\"type\":\"kubernetes.io/tls\"}",
	      "{\"type\":\"kubernetes.io/tls\"}");
}

Test(defaults, namespace_label)
{
	check("", "namespaces",
	      "{\"metadata\":{\"name\":\"team\",\"labels\":{\"a\":\"b\"}}}",
	      "{\"metadata\":{\"name\":\"team\",\"labels\":{\"a\":\"b\","
	      "\"kubernetes.io/metadata.name\":\"team\"}}}");
}

Test(defaults, network_policy)
{
	check("networking.k8s.io", "networkpolicies",
	      "{\"spec\":{\"podSelector\":{},\"ingress\":[{\"ports\":[{"
	      "\"port\":80}]}]}}",
	      "{\"spec\":{\"podSelector\":{},\"policyTypes\":[\"Ingress\"],"
	      "\"ingress\":[{\"ports\":[{\"port\":80,\"protocol\":"
	      "\"TCP\"}]}]}}");
	check("networking.k8s.io", "networkpolicies",
	      "{\"spec\":{\"egress\":[{}]}}",
	      "{\"spec\":{\"egress\":[{}],\"policyTypes\":[\"Ingress\","
	      "\"Egress\"]}}");
}

Test(defaults, hpa)
{
	check("autoscaling", "horizontalpodautoscalers",
	      "{\"spec\":{\"maxReplicas\":5}}",
	      "{\"spec\":{\"maxReplicas\":5,\"minReplicas\":1,\"metrics\":[{"
	      "\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\","
	      "\"target\":{\"type\":\"Utilization\","
	      "\"averageUtilization\":80}}}]}}");
	check("autoscaling", "horizontalpodautoscalers",
	      "{\"spec\":{\"minReplicas\":2,\"metrics\":[{\"type\":"
	      "\"Resource\",\"resource\":{\"name\":\"memory\",\"target\":{"
	      "\"type\":\"AverageValue\",\"averageValue\":\"1024Mi\"}}}],"
	      "\"behavior\":{\"scaleDown\":{\"stabilizationWindowSeconds\":"
	      "60}}}}",
	      "{\"spec\":{\"minReplicas\":2,\"metrics\":[{\"type\":"
	      "\"Resource\",\"resource\":{\"name\":\"memory\",\"target\":{"
	      "\"type\":\"AverageValue\",\"averageValue\":\"1Gi\"}}}],"
	      "\"behavior\":{\"scaleDown\":{\"stabilizationWindowSeconds\":60,"
	      "\"selectPolicy\":\"Max\",\"policies\":[{\"type\":\"Percent\","
	      "\"value\":100,\"periodSeconds\":15}]},\"scaleUp\":{"
	      "\"stabilizationWindowSeconds\":0,\"selectPolicy\":\"Max\","
	      "\"policies\":[{\"type\":\"Pods\",\"value\":4,"
	      "\"periodSeconds\":15},{\"type\":\"Percent\",\"value\":100,"
	      "\"periodSeconds\":15}]}}}}");
}

Test(defaults, pdb_and_configmap_untouched)
{
	check("policy", "poddisruptionbudgets",
	      "{\"spec\":{\"minAvailable\":1}}",
	      "{\"spec\":{\"minAvailable\":1}}");
	check("", "configmaps", "{\"data\":{\"a\":\"b\"}}",
	      "{\"data\":{\"a\":\"b\"}}");
}

/*
 * A ServiceAccount subject's apiGroup defaults to "", which omitempty
 * leaves out of what kube returns (also when the client sent "").
 */
Test(defaults, rolebinding_subjects)
{
	check("rbac.authorization.k8s.io", "rolebindings",
	      "{\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"a\"},"
	      "{\"kind\":\"User\",\"name\":\"b\"},"
	      "{\"kind\":\"ServiceAccount\",\"name\":\"c\",\"apiGroup\":\"\"}]}",
	      "{\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"a\"},"
	      "{\"kind\":\"User\",\"name\":\"b\","
	      "\"apiGroup\":\"rbac.authorization.k8s.io\"},"
	      "{\"kind\":\"ServiceAccount\",\"name\":\"c\"}]}");
}

#define FORMAT_ERR                                      \
	"quantities must match the regular expression " \
	"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#define SUFFIX_ERR "unable to parse quantity's suffix"

/* The canonical form of one container memory limit. */
static json_t *limit_of(const char *qty_json, json_t **status)
{
	const struct emu_resource *r = find_res("", "pods");
	json_t *pod =
		json_pack("{s:{s:[{s:s, s:s, s:{s:{s:o}}}]}}", "spec",
			  "containers", "name", "a", "image", "x:1",
			  "resources", "limits", "memory", load(qty_json));

	*status = emu_defaults_apply(r, pod, NULL);
	return pod;
}

Test(defaults, quantities)
{
	static const struct {
		const char *in, *out;
	} t[] = {
		{"\"1000m\"", "1"},
		{"\"0.5\"", "500m"},
		{"\"1024Mi\"", "1Gi"},
		{"\"1.5Gi\"", "1536Mi"},
		{"\"1e3\"", "1e3"},
		{"\"1E3\"", "1e3"},
		{"\"1.5e3\"", "1500"},
		{"\"80e-3\"", "80e-3"},
		{"\"1000M\"", "1G"},
		{"\"1500\"", "1500"},
		{"\"2000\"", "2k"},
		{"\"1.08\"", "1080m"},
		{"\"100Mi\"", "100Mi"},
		{"\"1536\"", "1536"},
		{"\"1.5Ki\"", "1536"},
		{"\"512Ki\"", "512Ki"},
		{"\"0.5Gi\"", "512Mi"},
		{"\"5Ki\"", "5Ki"},
		{"\".001Ki\"", "1024m"},
		{"\".000000000001Ki\"", "2n"},
		{"\"0\"", "0"},
		{"\"0Gi\"", "0"},
		{"\"-1500m\"", "-1500m"},
		{"\"+2\"", "2"},
		{"1", "1"},
		{"0.25", "250m"},
		{"\"1024\"", "1024"},
		{"\"1Ki\"", "1Ki"},
		{"\"3k\"", "3k"},
		{"\"1234567M\"", "1234567M"},
		{"\"0.1n\"", "1n"},
		{"\"1Ei\"", "1Ei"},
		{"\" 1 \"", "1"},
		{"\"100m\"", "100m"},
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(*t); i++) {
		json_t *st, *pod = limit_of(t[i].in, &st), *ct;
		const char *got;

		cr_assert_null(st, "%s refused", t[i].in);
		ct = json_array_get(
			json_object_get(json_object_get(pod, "spec"),
					"containers"),
			0);
		got = json_string_value(json_object_get(
			json_object_get(json_object_get(ct, "resources"),
					"limits"),
			"memory"));
		cr_assert_not_null(got, "%s", t[i].in);
		cr_assert_str_eq(got, t[i].out, "%s: %s", t[i].in, got);
		json_decref(pod);
	}
}

Test(defaults, bad_quantity)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{"\"abc\"", FORMAT_ERR},     {"\"1.1.M\"", FORMAT_ERR},
		{"\"\"", FORMAT_ERR},	     {"true", FORMAT_ERR},
		{"\"5 Mi\"", FORMAT_ERR},    {"\"0.1am\"", FORMAT_ERR},
		{"\"1i\"", SUFFIX_ERR},	     {"\"1mi\"", SUFFIX_ERR},
		{"\"-3.01e-\"", SUFFIX_ERR},
	};
	struct buf want = BUF_INIT;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		json_t *st, *pod = limit_of(bad[i].in, &st);

		cr_assert_not_null(st, "%s accepted", bad[i].in);
		buf_reset(&want);
		buf_addf(&want,
			 "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
			 "\"metadata\":{},\"status\":\"Failure\","
			 "\"message\":\"Pod in version \\\"v1\\\" cannot "
			 "be handled as a Pod: %s\",\"reason\":"
			 "\"BadRequest\",\"code\":400}",
			 bad[i].why);
		assert_json(st, want.ptr);
		json_decref(st);
		json_decref(pod);
	}
	buf_release(&want);
}

/* The status Go's types always print, whatever the client sent. */
Test(defaults, zero_status)
{
	static const struct {
		const char *group, *plural, *kind, *status;
	} cases[] = {
		{"apps", "deployments", "Deployment", "{}"},
		{"apps", "statefulsets", "StatefulSet",
		 "{\"availableReplicas\":0,\"replicas\":0}"},
		{"apps", "daemonsets", "DaemonSet",
		 "{\"currentNumberScheduled\":0,\"desiredNumberScheduled\":0,"
		 "\"numberMisscheduled\":0,\"numberReady\":0}"},
		{"apps", "replicasets", "ReplicaSet", "{\"replicas\":0}"},
		{"batch", "jobs", "Job", "{}"},
		{"", "services", "Service", "{\"loadBalancer\":{}}"},
		{"policy", "poddisruptionbudgets", "PodDisruptionBudget",
		 "{\"currentHealthy\":0,\"desiredHealthy\":0,"
		 "\"disruptionsAllowed\":0,\"expectedPods\":0}"},
	};
	size_t i;
	json_t *obj;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		obj = json_pack("{s:s, s:{s:s}, s:{}}", "kind", cases[i].kind,
				"metadata", "name", "x", "spec");
		cr_assert_null(emu_defaults_apply(
			find_res(cases[i].group, cases[i].plural), obj,
			NULL));
		assert_json(json_object_get(obj, "status"), cases[i].status);
		json_decref(obj);
	}
	/* A ConfigMap has no status. */
	obj = json_pack("{s:s, s:{s:s}}", "kind", "ConfigMap", "metadata",
			"name", "x");
	cr_assert_null(emu_defaults_apply(find_res("", "configmaps"),
					  obj, NULL));
	cr_assert_null(json_object_get(obj, "status"));
	json_decref(obj);
}
