/*
 * What kube-apiserver 1.36 stores for a declared object of a built-in
 * kind, as far as the object alone decides it: the SetDefaults_*
 * functions of k8s.io/kubernetes/pkg/apis/{core,apps,batch,autoscaling,
 * networking,rbac,...}/v1, Secret stringData folded into data, the
 * namespace name label, quantities written back in resource.Quantity's
 * canonical form, and the status a Go type always serializes.
 *
 * What needs the rest of the store (cluster IPs, node ports, a Job's
 * generated selector, a Pod's service account and QoS class) is
 * kube-emu's (kube-emu/defaults.c), which calls this first.
 *
 * A field is defaulted only when it is absent or null (a nil pointer in
 * Go) or, for the fields Go holds as plain strings, empty. So defaulting
 * a defaulted object changes nothing.
 *
 * The cases in tests/cases/stored/ are generated from the real server
 * (tests/real/gen-stored.sh) and each is reproduced by this file
 * (tests/unit/diff/stored.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff/internal.h"
#include "util/base64.h"

#include "util/banned.h" /* last */

struct sctx {
	bool create;
	const char *bad_quantity; /* why the first bad quantity is bad */
};

/* The regular expression kube quotes when a quantity does not parse. */
#define QTY_REGEX "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"

/* resource.Quantity's parse errors. */
static const char err_format[] =
	"quantities must match the regular expression '" QTY_REGEX "'";
static const char err_suffix[] = "unable to parse quantity's suffix";

bool diff_json_absent(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return !v || json_is_null(v);
}

/* Set o[key] = v when absent (steals v). */
void diff_json_default(json_t *o, const char *key, json_t *v)
{
	if (json_is_object(o) && diff_json_absent(o, key))
		json_object_set_new(o, key, v);
	else
		json_decref(v);
}

/* A Go string field: absent, null and "" all take the default. */
void diff_json_default_str(json_t *o, const char *key, const char *s)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_object(o))
		return;
	if (!v || json_is_null(v) ||
	    (json_is_string(v) && !*json_string_value(v)))
		json_object_set_new(o, key, json_string(s));
}

/* o[key] as an object, created ({}) when absent or null. */
json_t *diff_json_child(json_t *o, const char *key)
{
	json_t *c;

	if (!json_is_object(o))
		return NULL;
	c = json_object_get(o, key);
	if (!c || json_is_null(c)) {
		c = json_object();
		json_object_set_new(o, key, c);
	}
	return json_is_object(c) ? c : NULL;
}

const char *diff_json_str(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

bool diff_json_str_is(const json_t *o, const char *key, const char *want)
{
	const char *s = diff_json_str(o, key);

	return s && !strcmp(s, want);
}

/* ---- quantities ---- */

enum qty_format { QTY_DECIMAL_SI, QTY_BINARY_SI, QTY_DECIMAL_EXP };

/* The format resource.Quantity remembers: that of the suffix written. */
static enum qty_format qty_format_of(const char *text)
{
	const char *p = text;

	if (*p == '+' || *p == '-')
		p++;
	while ((*p >= '0' && *p <= '9') || *p == '.')
		p++;
	if (*p && p[1] == 'i')
		return QTY_BINARY_SI; /* "Ei" is exbibytes, not an exponent */
	if (*p == 'e' || *p == 'E')
		return QTY_DECIMAL_EXP;
	return QTY_DECIMAL_SI;
}

/* d[0..*len) /= 1024 when exact (digits most significant first). */
static bool digits_div1024(char *d, size_t *len)
{
	char q[160];
	unsigned rem = 0;
	size_t i, n = 0;

	for (i = 0; i < *len; i++) {
		rem = rem * 10 + (unsigned)(d[i] - '0');
		if (n || rem >= 1024)
			q[n++] = (char)('0' + rem / 1024);
		rem %= 1024;
	}
	if (rem || !n)
		return false;
	memcpy(d, q, n);
	*len = n;
	return true;
}

/*
 * resource.Quantity's String() of `text`: the value from
 * diff_quantity_canonical() (exact, nano precision), written in the
 * format of the input's suffix. Decimal forms put the mantissa over a
 * power of ten that is a multiple of 3 ("1500", "500m", "2k", "80e-3");
 * binary ones an exact power of 1024 ("1536Mi"), falling back to decimal
 * below 1024 or for a fraction. -1 when text is not a quantity.
 */
static int qty_canonical(const char *text, struct buf *out)
{
	static const char *const dec_sfx[] = {"n", "u", "m", "",  "k",
					      "M", "G", "T", "P", "E"};
	static const char *const bin_sfx[] = {"",   "Ki", "Mi", "Gi",
					      "Ti", "Pi", "Ei"};
	enum qty_format fmt = qty_format_of(text);
	struct buf v = BUF_INIT;
	char d[160];
	const char *p, *dot;
	size_t len = 0;
	long exp10 = 0;
	int pow2 = 0, ret = -1;
	bool neg;

	if (diff_quantity_canonical(text, &v) < 0 || v.len > 120)
		goto out;
	p = v.ptr;
	neg = *p == '-';
	if (neg)
		p++;
	if (!strcmp(p, "0")) {
		ret = buf_adds(out, "0") < 0 ? -1 : 0;
		goto out;
	}
	/* Digits without the point; exp10 counts the fractional ones. */
	dot = strchr(p, '.');
	for (; *p; p++) {
		if (*p == '.')
			continue;
		if (len || *p != '0')
			d[len++] = *p;
		if (dot && p > dot)
			exp10--;
	}
	while (len && d[len - 1] == '0') {
		len--;
		exp10++;
	}
	/* Binary only for integers of at least 1024. */
	if (fmt == QTY_BINARY_SI) {
		bool big = exp10 >= 0 && (size_t)exp10 + len >= 4;

		if (big && exp10 + (long)len == 4) {
			char whole[8];

			memcpy(whole, d, len);
			memset(whole + len, '0', (size_t)exp10);
			big = memcmp(whole, "1024", 4) >= 0;
		}
		if (!big)
			fmt = QTY_DECIMAL_SI;
	}
	if (fmt == QTY_BINARY_SI) {
		for (; exp10 > 0; exp10--)
			d[len++] = '0';
		while (pow2 < 6 && digits_div1024(d, &len))
			pow2++;
	} else {
		/* The power of ten a multiple of 3 (floored). */
		while (((exp10 % 3) + 3) % 3) {
			d[len++] = '0';
			exp10--;
		}
		if (fmt == QTY_DECIMAL_SI) {
			while (exp10 > 18) {
				memset(d + len, '0', 3);
				len += 3;
				exp10 -= 3;
			}
		}
	}
	ret = 0;
	if (neg)
		ret |= buf_addch(out, '-');
	ret |= buf_add(out, d, len);
	if (fmt == QTY_BINARY_SI)
		ret |= buf_adds(out, bin_sfx[pow2]);
	else if (fmt == QTY_DECIMAL_SI)
		ret |= buf_adds(out, dec_sfx[exp10 / 3 + 3]);
	else if (exp10)
		ret |= buf_addf(out, "e%ld", exp10);
	ret = ret ? -1 : 0;
out:
	buf_release(&v);
	return ret;
}

/*
 * Why `text` (not a quantity) is refused: ParseQuantity checks the shape
 * first (sign, digits with at most one point, suffix letters, an
 * optional signed exponent) and only then interprets the suffix.
 */
static const char *qty_error(const char *text)
{
	const char *p = text;
	size_t digits = 0;

	if (*p == '+' || *p == '-')
		p++;
	for (; *p >= '0' && *p <= '9'; p++)
		digits++;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			digits++;
	if (!digits)
		return err_format;
	while (*p && strchr("eEinumkKMGTP", *p))
		p++;
	if (*p == '+' || *p == '-')
		p++;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p ? err_format : err_suffix;
}

/* Canonicalize o[key] when it is a quantity (string or number). */
static void quantity_at(struct sctx *c, json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	struct buf out = BUF_INIT, trimmed = BUF_INIT;
	char num[64];
	const char *text, *end;

	if (!v || json_is_null(v))
		return;
	if (json_is_string(v)) {
		/* Surrounding white space is trimmed, as Go's decoder does. */
		text = json_string_value(v);
		if (strlen(text) != json_string_length(v))
			text = "";
		while (*text == ' ' || *text == '\t' || *text == '\n' ||
		       *text == '\r')
			text++;
		end = text + strlen(text);
		while (end > text && (end[-1] == ' ' || end[-1] == '\t' ||
				      end[-1] == '\n' || end[-1] == '\r'))
			end--;
		buf_add(&trimmed, text, (size_t)(end - text));
		text = buf_cstr(&trimmed);
	} else if (json_is_number(v)) {
		diff_number_text(v, num, sizeof(num));
		text = num;
	} else {
		text = json_is_boolean(v) ? "true" : "{";
	}
	if (qty_canonical(text, &out) < 0) {
		if (!c->bad_quantity)
			c->bad_quantity = qty_error(text);
	} else if (!json_is_string(v) ||
		   strcmp(out.ptr, json_string_value(v))) {
		json_object_set_new(o, key, json_string(out.ptr));
	}
	buf_release(&out);
	buf_release(&trimmed);
}

/* Every value of a ResourceList ({"cpu": "500m", ...}). */
static void quantity_map(struct sctx *c, json_t *list)
{
	const char *key;
	json_t *v;
	void *tmp;

	if (!json_is_object(list))
		return;
	json_object_foreach_safe(list, tmp, key, v)
	{
		quantity_at(c, list, key);
	}
}

static void resources_quantities(struct sctx *c, json_t *r)
{
	quantity_map(c, json_object_get(r, "limits"));
	quantity_map(c, json_object_get(r, "requests"));
}

/* ---- pod specs ---- */

static void field_ref(json_t *holder)
{
	json_t *ref = json_object_get(holder, "fieldRef");

	if (json_is_object(ref))
		diff_json_default_str(ref, "apiVersion", "v1");
}

/*
 * A resourceFieldRef's divisor is a resource.Quantity held by value, so
 * an absent one is written as its zero, "0".
 */
static void resource_field_ref(struct sctx *c, json_t *rf)
{
	if (!json_is_object(rf))
		return;
	diff_json_default(rf, "divisor", json_string("0"));
	quantity_at(c, rf, "divisor");
}

static void http_get(json_t *handler)
{
	json_t *h = json_object_get(handler, "httpGet");

	if (!json_is_object(h))
		return;
	diff_json_default_str(h, "path", "/");
	diff_json_default_str(h, "scheme", "HTTP");
}

static void probe(json_t *p)
{
	if (!json_is_object(p))
		return;
	diff_json_default(p, "timeoutSeconds", json_integer(1));
	diff_json_default(p, "periodSeconds", json_integer(10));
	diff_json_default(p, "successThreshold", json_integer(1));
	diff_json_default(p, "failureThreshold", json_integer(3));
	http_get(p);
}

/* Always for ":latest" or no tag (a digest counts as a tag), as kube. */
static const char *pull_policy(const char *image)
{
	const char *slash, *colon;

	if (!image || strchr(image, '@'))
		return image ? "IfNotPresent" : "Always";
	slash = strrchr(image, '/');
	colon = strrchr(slash ? slash : image, ':');
	if (!colon || !strcmp(colon + 1, "latest"))
		return "Always";
	return "IfNotPresent";
}

static void container(struct sctx *c, json_t *ct, bool host_network)
{
	json_t *a, *it, *lc, *res;
	size_t i;

	if (!json_is_object(ct))
		return;
	/* A struct without omitempty effect: Go always writes it. */
	diff_json_default(ct, "resources", json_object());
	diff_json_default_str(ct, "imagePullPolicy",
			      pull_policy(diff_json_str(ct, "image")));
	diff_json_default_str(ct, "terminationMessagePath",
			      "/dev/termination-log");
	diff_json_default_str(ct, "terminationMessagePolicy", "File");
	a = json_object_get(ct, "ports");
	json_array_foreach(a, i, it)
	{
		if (!json_is_object(it))
			continue;
		diff_json_default_str(it, "protocol", "TCP");
		if (host_network && diff_json_absent(it, "hostPort") &&
		    json_object_get(it, "containerPort"))
			json_object_set(it, "hostPort",
					json_object_get(it, "containerPort"));
	}
	a = json_object_get(ct, "env");
	json_array_foreach(a, i, it)
	{
		json_t *from = json_object_get(it, "valueFrom");
		json_t *rf = json_object_get(from, "resourceFieldRef");

		field_ref(from);
		resource_field_ref(c, rf);
	}
	probe(json_object_get(ct, "livenessProbe"));
	probe(json_object_get(ct, "readinessProbe"));
	probe(json_object_get(ct, "startupProbe"));
	lc = json_object_get(ct, "lifecycle");
	if (json_is_object(lc)) {
		http_get(json_object_get(lc, "postStart"));
		http_get(json_object_get(lc, "preStop"));
	}
	res = json_object_get(ct, "resources");
	if (json_is_object(res))
		resources_quantities(c, res);
}

/*
 * An embedded ObjectMeta is a struct Go always writes (`metadata: {}`);
 * its zero creationTimestamp is left out (omitzero, kube 1.33 and later),
 * and a null one sent by the client is dropped with it.
 */
static void embedded_meta(json_t *holder)
{
	json_t *meta = diff_json_child(holder, "metadata");

	if (meta && json_is_null(json_object_get(meta, "creationTimestamp")))
		json_object_del(meta, "creationTimestamp");
}

static void pvc_spec(struct sctx *c, json_t *spec)
{
	if (!json_is_object(spec))
		return;
	diff_json_default_str(spec, "volumeMode", "Filesystem");
	diff_json_default(spec, "resources", json_object());
	resources_quantities(c, json_object_get(spec, "resources"));
}

static void downward_items(struct sctx *c, json_t *src)
{
	json_t *it;
	size_t i;

	json_array_foreach(json_object_get(src, "items"), i, it)
	{
		field_ref(it);
		resource_field_ref(c, json_object_get(it, "resourceFieldRef"));
	}
}

static void volume(struct sctx *c, json_t *v)
{
	static const char *const moded[] = {"secret", "configMap",
					    "downwardAPI", "projected"};
	json_t *src, *it;
	size_t i;

	if (!json_is_object(v))
		return;
	/* A volume with no source at all is an emptyDir. */
	if (json_object_size(v) == 1 && json_object_get(v, "name"))
		json_object_set_new(v, "emptyDir", json_object());
	for (i = 0; i < sizeof(moded) / sizeof(*moded); i++) {
		src = json_object_get(v, moded[i]);
		if (json_is_object(src))
			diff_json_default(src, "defaultMode",
					  json_integer(420));
	}
	downward_items(c, json_object_get(v, "downwardAPI"));
	src = json_object_get(v, "projected");
	json_array_foreach(json_object_get(src, "sources"), i, it)
	{
		json_t *tok = json_object_get(it, "serviceAccountToken");

		downward_items(c, json_object_get(it, "downwardAPI"));
		if (json_is_object(tok))
			diff_json_default(tok, "expirationSeconds",
					  json_integer(3600));
	}
	src = json_object_get(v, "hostPath");
	if (json_is_object(src))
		diff_json_default(src, "type", json_string(""));
	src = json_object_get(v, "emptyDir");
	if (json_is_object(src))
		quantity_at(c, src, "sizeLimit");
	src = json_object_get(json_object_get(v, "ephemeral"),
			      "volumeClaimTemplate");
	if (json_is_object(src)) {
		embedded_meta(src);
		pvc_spec(c, json_object_get(src, "spec"));
	}
}

static void containers(struct sctx *c, json_t *spec, const char *key,
		       bool host_network, bool pod)
{
	json_t *ct, *lim, *req, *v;
	const char *name;
	size_t i;

	json_array_foreach(json_object_get(spec, key), i, ct)
	{
		container(c, ct, host_network);
		/* Pods (not templates): requests default to the limits. */
		lim = json_object_get(json_object_get(ct, "resources"),
				      "limits");
		if (!pod || !json_is_object(lim))
			continue;
		req = diff_json_child(json_object_get(ct, "resources"),
				      "requests");
		json_object_foreach(lim, name, v)
		{
			if (req && !json_object_get(req, name))
				json_object_set(req, name, v);
		}
	}
}

/* SetDefaults_PodSpec and what it reaches; `pod`: SetDefaults_Pod too. */
static void pod_spec(struct sctx *c, json_t *spec, bool pod)
{
	bool host_net;
	json_t *v;
	size_t i;

	if (!json_is_object(spec))
		return;
	host_net = pod && json_is_true(json_object_get(spec, "hostNetwork"));
	diff_json_default_str(spec, "dnsPolicy", "ClusterFirst");
	diff_json_default_str(spec, "restartPolicy", "Always");
	diff_json_default(spec, "securityContext", json_object());
	diff_json_default(spec, "terminationGracePeriodSeconds",
			  json_integer(30));
	diff_json_default_str(spec, "schedulerName", "default-scheduler");
	if (pod)
		diff_json_default(spec, "enableServiceLinks", json_true());
	containers(c, spec, "initContainers", host_net, pod);
	containers(c, spec, "containers", host_net, pod);
	json_array_foreach(json_object_get(spec, "ephemeralContainers"), i, v)
	{
		container(c, v, false);
	}
	json_array_foreach(json_object_get(spec, "volumes"), i, v)
	{
		volume(c, v);
	}
	quantity_map(c, json_object_get(spec, "overhead"));
}

static void pod_template(struct sctx *c, json_t *tmpl)
{
	if (!json_is_object(tmpl))
		return;
	embedded_meta(tmpl);
	pod_spec(c, json_object_get(tmpl, "spec"), false);
}

/* ---- workloads ---- */

static void deployment(struct sctx *c, json_t *spec)
{
	json_t *strat, *ru;

	diff_json_default(spec, "replicas", json_integer(1));
	strat = diff_json_child(spec, "strategy");
	diff_json_default_str(strat, "type", "RollingUpdate");
	if (diff_json_str_is(strat, "type", "RollingUpdate")) {
		ru = diff_json_child(strat, "rollingUpdate");
		diff_json_default(ru, "maxUnavailable", json_string("25%"));
		diff_json_default(ru, "maxSurge", json_string("25%"));
	}
	diff_json_default(spec, "revisionHistoryLimit", json_integer(10));
	diff_json_default(spec, "progressDeadlineSeconds", json_integer(600));
	pod_template(c, json_object_get(spec, "template"));
}

static void statefulset(struct sctx *c, json_t *spec)
{
	json_t *us, *ru, *pol, *t;
	size_t i;

	diff_json_default_str(spec, "podManagementPolicy", "OrderedReady");
	us = diff_json_child(spec, "updateStrategy");
	if (!diff_json_str(us, "type") || !*diff_json_str(us, "type")) {
		diff_json_default_str(us, "type", "RollingUpdate");
		diff_json_child(us, "rollingUpdate");
	}
	ru = json_object_get(us, "rollingUpdate");
	if (diff_json_str_is(us, "type", "RollingUpdate") && json_is_object(ru))
		diff_json_default(ru, "partition", json_integer(0));
	pol = diff_json_child(spec, "persistentVolumeClaimRetentionPolicy");
	diff_json_default_str(pol, "whenDeleted", "Retain");
	diff_json_default_str(pol, "whenScaled", "Retain");
	diff_json_default(spec, "replicas", json_integer(1));
	diff_json_default(spec, "revisionHistoryLimit", json_integer(10));
	pod_template(c, json_object_get(spec, "template"));
	/*
	 * The claim templates: PVC defaults, and the apiVersion and kind
	 * apps/v1's conversion writes into each (kubernetes issue 87583).
	 */
	json_array_foreach(json_object_get(spec, "volumeClaimTemplates"), i, t)
	{
		if (!json_is_object(t))
			continue;
		json_object_set_new(t, "apiVersion", json_string("v1"));
		json_object_set_new(t, "kind",
				    json_string("PersistentVolumeClaim"));
		embedded_meta(t);
		pvc_spec(c, diff_json_child(t, "spec"));
		diff_json_default_str(diff_json_child(t, "status"), "phase",
				      "Pending");
	}
}

static void daemonset(struct sctx *c, json_t *spec)
{
	json_t *us, *ru;

	us = diff_json_child(spec, "updateStrategy");
	diff_json_default_str(us, "type", "RollingUpdate");
	if (diff_json_str_is(us, "type", "RollingUpdate")) {
		ru = diff_json_child(us, "rollingUpdate");
		diff_json_default(ru, "maxUnavailable", json_integer(1));
		diff_json_default(ru, "maxSurge", json_integer(0));
	}
	diff_json_default(spec, "revisionHistoryLimit", json_integer(10));
	pod_template(c, json_object_get(spec, "template"));
}

/*
 * The selector batch/v1's registry generates when manualSelector is not
 * true: the template gets job-name and controller-uid labels (legacy and
 * batch.kubernetes.io/ forms, unless already there) and the selector
 * matches the uid.
 */

static void job(struct sctx *c, json_t *obj, json_t *spec)
{
	json_t *meta = diff_json_child(obj, "metadata"), *tl, *labels, *rule,
	       *cond;
	bool alias = false;
	size_t i, j;

	if (diff_json_absent(spec, "completions") &&
	    diff_json_absent(spec, "parallelism")) {
		json_object_set_new(spec, "completions", json_integer(1));
		json_object_set_new(spec, "parallelism", json_integer(1));
	}
	diff_json_default(spec, "parallelism", json_integer(1));
	if (diff_json_absent(spec, "backoffLimit"))
		json_object_set_new(
			spec, "backoffLimit",
			json_integer(
				diff_json_absent(spec, "backoffLimitPerIndex")
					? 6
					: 2147483647));
	/*
	 * A Job without labels takes its template's; in Go both then share
	 * one map, so the generated selector labels land in both.
	 */
	tl = json_object_get(
		json_object_get(json_object_get(spec, "template"), "metadata"),
		"labels");
	labels = json_object_get(meta, "labels");
	if (json_is_object(tl) &&
	    (!json_is_object(labels) || !json_object_size(labels)))
		alias = true;
	json_array_foreach(
		json_object_get(json_object_get(spec, "podFailurePolicy"),
				"rules"),
		i, rule)
	{
		json_array_foreach(json_object_get(rule, "onPodConditions"), j,
				   cond)
		{
			diff_json_default_str(cond, "status", "True");
		}
	}
	diff_json_default_str(spec, "completionMode", "NonIndexed");
	diff_json_default(spec, "suspend", json_false());
	diff_json_default(spec, "manualSelector", json_false());
	diff_json_default_str(spec, "podReplacementPolicy",
			      diff_json_absent(spec, "podFailurePolicy")
				      ? "TerminatingOrFailed"
				      : "Failed");
	if (alias) {
		tl = json_object_get(
			json_object_get(json_object_get(spec, "template"),
					"metadata"),
			"labels");
		/*
		 * On create the registry then adds the selector labels to
		 * the template's map, so to both: one JSON object shared
		 * until job_selector() has added them.
		 */
		if (!c->create)
			json_object_set_new(meta, "labels", json_deep_copy(tl));
		else
			json_object_set(meta, "labels", tl);
	}
	pod_template(c, json_object_get(spec, "template"));
}

static void cronjob(struct sctx *c, json_t *spec)
{
	json_t *jt;

	diff_json_default_str(spec, "concurrencyPolicy", "Allow");
	diff_json_default(spec, "suspend", json_false());
	diff_json_default(spec, "successfulJobsHistoryLimit", json_integer(3));
	diff_json_default(spec, "failedJobsHistoryLimit", json_integer(1));
	jt = json_object_get(spec, "jobTemplate");
	if (json_is_object(jt))
		embedded_meta(jt);
	pod_template(c,
		     json_object_get(json_object_get(jt, "spec"), "template"));
}

/* SetDefaults_Service: what the writer of a Service owns. */
static void service(struct sctx *c, json_t *spec)
{
	const char *type;
	json_t *p, *tp;
	bool lb;
	size_t i;

	(void)c;
	diff_json_default_str(spec, "type", "ClusterIP");
	diff_json_default_str(spec, "sessionAffinity", "None");
	type = diff_json_str(spec, "type");
	if (diff_json_str_is(spec, "sessionAffinity", "ClientIP")) {
		json_t *cfg = diff_json_child(
			diff_json_child(spec, "sessionAffinityConfig"),
			"clientIP");

		diff_json_default(cfg, "timeoutSeconds", json_integer(10800));
	}
	json_array_foreach(json_object_get(spec, "ports"), i, p)
	{
		if (!json_is_object(p))
			continue;
		diff_json_default_str(p, "protocol", "TCP");
		tp = json_object_get(p, "targetPort");
		if (!tp || json_is_null(tp) ||
		    (json_is_integer(tp) && !json_integer_value(tp)) ||
		    (json_is_string(tp) && !*json_string_value(tp)))
			json_object_set(p, "targetPort",
					json_object_get(p, "port"));
	}
	lb = !strcmp(type, "LoadBalancer");
	if (lb || !strcmp(type, "NodePort"))
		diff_json_default_str(spec, "externalTrafficPolicy", "Cluster");
	if (lb)
		diff_json_default(spec, "allocateLoadBalancerNodePorts",
				  json_true());
	if (!strcmp(type, "ExternalName"))
		return;
	diff_json_default_str(spec, "internalTrafficPolicy", "Cluster");
}

/* A load balancer's ingress with an IP defaults its ipMode to VIP. */
static void lb_ingress_mode(json_t *status)
{
	json_t *ing;
	size_t i;

	json_array_foreach(
		json_object_get(json_object_get(status, "loadBalancer"),
				"ingress"),
		i, ing)
	{
		if (diff_json_str(ing, "ip") && *diff_json_str(ing, "ip"))
			diff_json_default_str(ing, "ipMode", "VIP");
	}
}

/* ---- other kinds ---- */

/* SetDefaults_EndpointPort: TCP. */
static void endpoints(json_t *obj)
{
	json_t *subset, *port;
	size_t i, j;

	json_array_foreach(json_object_get(obj, "subsets"), i, subset)
	{
		json_array_foreach(json_object_get(subset, "ports"), j, port)
		{
			diff_json_default_str(port, "protocol", "TCP");
		}
	}
}

/* Secret: type Opaque; stringData folded into data, where it wins. */
static void secret(json_t *obj)
{
	json_t *sd = json_object_get(obj, "stringData"), *data, *v;
	struct buf enc = BUF_INIT;
	const char *key;

	diff_json_default_str(obj, "type", "Opaque");
	/*
	 * A stringData the decoder would refuse stays for validation to
	 * report (400), as kube decodes before it converts.
	 */
	if (sd && !json_is_object(sd) && !json_is_null(sd))
		return;
	json_object_foreach(sd, key, v)
	{
		if (!json_is_string(v) && !json_is_null(v))
			return;
	}
	if (json_is_object(sd) && json_object_size(sd)) {
		data = diff_json_child(obj, "data");
		json_object_foreach(sd, key, v)
		{
			if (!json_is_string(v) || !data)
				continue;
			buf_reset(&enc);
			base64_encode(&enc, json_string_value(v),
				      json_string_length(v), 0);
			json_object_set_new(data, key,
					    json_string(buf_cstr(&enc)));
		}
	}
	json_object_del(obj, "stringData");
	buf_release(&enc);
}

static void network_policy(json_t *spec)
{
	static const char *const dirs[] = {"ingress", "egress"};
	json_t *rule, *port, *types;
	size_t d, i, j;

	for (d = 0; d < 2; d++) {
		json_array_foreach(json_object_get(spec, dirs[d]), i, rule)
		{
			json_array_foreach(json_object_get(rule, "ports"), j,
					   port)
			{
				diff_json_default(port, "protocol",
						  json_string("TCP"));
			}
		}
	}
	if (json_array_size(json_object_get(spec, "policyTypes")))
		return;
	types = json_pack("[s]", "Ingress");
	if (json_array_size(json_object_get(spec, "egress")))
		json_array_append_new(types, json_string("Egress"));
	json_object_set_new(spec, "policyTypes", types);
}

static json_t *scaling_policy(const char *type, int value)
{
	return json_pack("{s:s, s:i, s:i}", "type", type, "value", value,
			 "periodSeconds", 15);
}

static void hpa(struct sctx *c, json_t *spec)
{
	json_t *beh, *r, *m;
	size_t i;

	diff_json_default(spec, "minReplicas", json_integer(1));
	if (!json_array_size(json_object_get(spec, "metrics")))
		json_object_set_new(spec, "metrics",
				    json_pack("[{s:s, s:{s:s, s:{s:s, s:i}}}]",
					      "type", "Resource", "resource",
					      "name", "cpu", "target", "type",
					      "Utilization",
					      "averageUtilization", 80));
	json_array_foreach(json_object_get(spec, "metrics"), i, m)
	{
		static const char *const src[] = {"resource", "pods", "object",
						  "external",
						  "containerResource"};
		size_t s;

		for (s = 0; s < 5; s++) {
			json_t *t = json_object_get(json_object_get(m, src[s]),
						    "target");

			if (!json_is_object(t))
				continue;
			quantity_at(c, t, "value");
			quantity_at(c, t, "averageValue");
		}
	}
	/* Behavior is filled in only when given. */
	beh = json_object_get(spec, "behavior");
	if (!json_is_object(beh))
		return;
	r = diff_json_child(beh, "scaleUp");
	diff_json_default(r, "stabilizationWindowSeconds", json_integer(0));
	diff_json_default(r, "selectPolicy", json_string("Max"));
	diff_json_default(r, "policies",
			  json_pack("[o, o]", scaling_policy("Pods", 4),
				    scaling_policy("Percent", 100)));
	r = diff_json_child(beh, "scaleDown");
	diff_json_default(r, "selectPolicy", json_string("Max"));
	diff_json_default(r, "policies",
			  json_pack("[o]", scaling_policy("Percent", 100)));
}

static void subjects(json_t *obj)
{
	json_t *s;
	size_t i;

	json_array_foreach(json_object_get(obj, "subjects"), i, s)
	{
		if (!json_is_object(s))
			continue;
		/*
		 * A ServiceAccount's apiGroup defaults to "", which Go's
		 * omitempty leaves out of what the server returns.
		 */
		if (diff_json_str_is(s, "kind", "ServiceAccount") &&
		    diff_json_str_is(s, "apiGroup", ""))
			json_object_del(s, "apiGroup");
		if (!diff_json_absent(s, "apiGroup"))
			continue;
		if (diff_json_str_is(s, "kind", "User") ||
		    diff_json_str_is(s, "kind", "Group"))
			json_object_set_new(
				s, "apiGroup",
				json_string("rbac.authorization.k8s.io"));
	}
}

/* SetDefaults_ReplicationController: selector and labels from the template. */
static void replication_controller(struct sctx *c, json_t *obj)
{
	json_t *spec = diff_json_child(obj, "spec"),
	       *meta = diff_json_child(obj, "metadata");
	json_t *tmpl = json_object_get(spec, "template");
	json_t *tl =
		json_object_get(json_object_get(tmpl, "metadata"), "labels");

	if (json_is_object(tl) && json_object_size(tl)) {
		if (!json_object_size(json_object_get(spec, "selector")))
			json_object_set_new(spec, "selector",
					    json_deep_copy(tl));
		if (meta && !json_object_size(json_object_get(meta, "labels")))
			json_object_set_new(meta, "labels", json_deep_copy(tl));
	}
	diff_json_default(spec, "replicas", json_integer(1));
	pod_template(c, tmpl);
}

/* Copy each member of `from` that `to` lacks (ResourceList defaults). */
static void fill_missing(json_t *to, const json_t *from)
{
	const char *k;
	json_t *v;

	if (!json_is_object(to))
		return;
	json_object_foreach((json_t *)from, k, v)
	{
		if (!json_object_get(to, k))
			json_object_set(to, k, v);
	}
}

/*
 * SetDefaults_LimitRangeItem: a container's default limit from its max,
 * its default request from the default limit, then from its min; every
 * ResourceList in canonical quantities.
 */
static void limit_range(struct sctx *c, json_t *spec)
{
	static const char *const lists[] = {"max", "min", "default",
					    "defaultRequest",
					    "maxLimitRequestRatio"};
	json_t *item;
	size_t i, l;

	json_array_foreach(json_object_get(spec, "limits"), i, item)
	{
		if (!json_is_object(item))
			continue;
		for (l = 0; l < sizeof(lists) / sizeof(*lists); l++)
			quantity_map(c, json_object_get(item, lists[l]));
		if (!diff_json_str_is(item, "type", "Container"))
			continue;
		fill_missing(diff_json_child(item, "default"),
			     json_object_get(item, "max"));
		fill_missing(diff_json_child(item, "defaultRequest"),
			     json_object_get(item, "default"));
		fill_missing(diff_json_child(item, "defaultRequest"),
			     json_object_get(item, "min"));
	}
}

/* admissionregistration/v1's SetDefaults of a webhook configuration. */
static void webhooks(json_t *obj, bool mutating)
{
	json_t *wh, *rule, *svc;
	size_t i, j;

	json_array_foreach(json_object_get(obj, "webhooks"), i, wh)
	{
		if (!json_is_object(wh))
			continue;
		diff_json_default_str(wh, "failurePolicy", "Fail");
		diff_json_default_str(wh, "matchPolicy", "Equivalent");
		diff_json_default(wh, "namespaceSelector", json_object());
		diff_json_default(wh, "objectSelector", json_object());
		diff_json_default(wh, "timeoutSeconds", json_integer(10));
		if (mutating)
			diff_json_default_str(wh, "reinvocationPolicy",
					      "Never");
		json_array_foreach(json_object_get(wh, "rules"), j, rule)
		{
			diff_json_default_str(rule, "scope", "*");
		}
		svc = json_object_get(json_object_get(wh, "clientConfig"),
				      "service");
		if (json_is_object(svc))
			diff_json_default(svc, "port", json_integer(443));
	}
}

/* apiextensions/v1's SetDefaults of a CRD: names and conversion. */
static void crd(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	json_t *names = json_object_get(spec, "names");
	const char *kind = diff_json_str(names, "kind");
	struct buf s = BUF_INIT;

	if (!json_is_object(names) || !kind)
		return;
	if (!diff_json_str(names, "singular") ||
	    !*diff_json_str(names, "singular")) {
		for (const char *p = kind; *p; p++)
			buf_addch(&s,
				  (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a'
								: *p));
		json_object_set_new(names, "singular",
				    json_string(buf_cstr(&s)));
	}
	if (!diff_json_str(names, "listKind") ||
	    !*diff_json_str(names, "listKind")) {
		buf_reset(&s);
		buf_addf(&s, "%sList", kind);
		json_object_set_new(names, "listKind",
				    json_string(buf_cstr(&s)));
	}
	diff_json_default_str(diff_json_child(spec, "conversion"), "strategy",
			      "None");
	buf_release(&s);
}

/* discovery/v1: a port's protocol. */
static void endpoint_slice(json_t *obj)
{
	json_t *port;
	size_t i;

	json_array_foreach(json_object_get(obj, "ports"), i, port)
	{
		diff_json_default_str(port, "protocol", "TCP");
	}
}

/* core/v1 SetDefaults_PersistentVolume and its volume sources. */
static void persistent_volume(struct sctx *c, json_t *spec)
{
	diff_json_default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
	diff_json_default_str(spec, "volumeMode", "Filesystem");
	if (json_is_object(json_object_get(spec, "hostPath")))
		diff_json_default(json_object_get(spec, "hostPath"), "type",
				  json_string(""));
	quantity_map(c, json_object_get(spec, "capacity"));
}

static void namespace_label(json_t *obj)
{
	json_t *meta = diff_json_child(obj, "metadata");
	const char *name = diff_json_str(meta, "name");
	json_t *labels;

	if (!name)
		return;
	labels = diff_json_child(meta, "labels");
	if (labels)
		json_object_set_new(labels, "kubernetes.io/metadata.name",
				    json_string(name));
}

/*
 * The status a built-in kind's Go type always serializes: a struct status
 * is never omitted (`status: {}`), and its counters without omitempty are
 * written even when 0. Kinds and fields as k8s.io/api 1.36 tags them.
 */
struct zero_status {
	const char *group;
	const char *kind;
	const char *const fields[5]; /* integer fields, 0 when absent */
	bool load_balancer;	     /* status.loadBalancer: {} */
};

static const struct zero_status zero_statuses[] = {
	{"apps", "Deployment", {NULL}, false},
	{"apps", "StatefulSet", {"availableReplicas", "replicas", NULL}, false},
	{"apps",
	 "DaemonSet",
	 {"currentNumberScheduled", "desiredNumberScheduled",
	  "numberMisscheduled", "numberReady", NULL},
	 false},
	{"apps", "ReplicaSet", {"replicas", NULL}, false},
	{"batch", "Job", {NULL}, false},
	{"batch", "CronJob", {NULL}, false},
	{"", "Service", {NULL}, true},
	{"networking.k8s.io", "Ingress", {NULL}, true},
	{"autoscaling",
	 "HorizontalPodAutoscaler",
	 {"desiredReplicas", NULL},
	 false},
	{"policy",
	 "PodDisruptionBudget",
	 {"currentHealthy", "desiredHealthy", "disruptionsAllowed",
	  "expectedPods", NULL},
	 false},
	{"apiregistration.k8s.io", "APIService", {NULL}, false},
	{NULL, NULL, {NULL}, false},
};

static void zero_status(const char *group, const char *kind, json_t *obj)
{
	const struct zero_status *z;
	const char *const *f;
	json_t *status;

	for (z = zero_statuses; z->kind; z++)
		if (!strcmp(z->group, group) && !strcmp(z->kind, kind))
			break;
	if (!z->kind)
		return;
	status = json_object_get(obj, "status");
	if (!json_is_object(status)) {
		status = json_object();
		json_object_set_new(obj, "status", status);
	}
	for (f = z->fields; *f; f++)
		if (!json_object_get(status, *f))
			json_object_set_new(status, *f, json_integer(0));
	if (z->load_balancer && !json_object_get(status, "loadBalancer"))
		json_object_set_new(status, "loadBalancer", json_object());
}

const char *diff_stored_defaults(json_t *obj, const char *group,
				 const char *kind, unsigned flags)
{
	struct sctx c = {(flags & DIFF_STORED_CREATE) != 0, NULL};
	const char *g = group, *k = kind;
	json_t *spec;

	if (!json_is_object(obj) || !g || !k)
		return NULL;
	spec = json_object_get(obj, "spec");
	if (!*g && !strcmp(k, "Pod")) {
		pod_spec(&c, spec, true);
	} else if (!*g && !strcmp(k, "Service")) {
		service(&c, diff_json_child(obj, "spec"));
		lb_ingress_mode(json_object_get(obj, "status"));
	} else if (!*g && !strcmp(k, "Secret")) {
		secret(obj);
	} else if (!*g && !strcmp(k, "Namespace")) {
		namespace_label(obj);
	} else if (!*g && !strcmp(k, "Endpoints")) {
		endpoints(obj);
	} else if (!*g && !strcmp(k, "PersistentVolumeClaim")) {
		pvc_spec(&c, diff_json_child(obj, "spec"));
	} else if (!*g && !strcmp(k, "PersistentVolume")) {
		persistent_volume(&c, diff_json_child(obj, "spec"));
	} else if (!*g && !strcmp(k, "PodTemplate")) {
		pod_template(&c, json_object_get(obj, "template"));
	} else if (!*g && !strcmp(k, "ReplicationController")) {
		replication_controller(&c, obj);
	} else if (!*g && !strcmp(k, "LimitRange")) {
		limit_range(&c, json_object_get(obj, "spec"));
	} else if (!*g && !strcmp(k, "ResourceQuota")) {
		quantity_map(&c, json_object_get(json_object_get(obj, "spec"),
						 "hard"));
	} else if (!strcmp(g, "storage.k8s.io") && !strcmp(k, "StorageClass")) {
		diff_json_default_str(obj, "reclaimPolicy", "Delete");
		diff_json_default_str(obj, "volumeBindingMode", "Immediate");
	} else if (!strcmp(g, "scheduling.k8s.io") &&
		   !strcmp(k, "PriorityClass")) {
		diff_json_default_str(obj, "preemptionPolicy",
				      "PreemptLowerPriority");
	} else if (!strcmp(g, "discovery.k8s.io") &&
		   !strcmp(k, "EndpointSlice")) {
		endpoint_slice(obj);
	} else if (!strcmp(g, "admissionregistration.k8s.io") &&
		   (!strcmp(k, "ValidatingWebhookConfiguration") ||
		    !strcmp(k, "MutatingWebhookConfiguration"))) {
		webhooks(obj, *k == 'M');
	} else if (!strcmp(g, "apiextensions.k8s.io") &&
		   !strcmp(k, "CustomResourceDefinition")) {
		crd(obj);
	} else if (!strcmp(g, "apps")) {
		spec = diff_json_child(obj, "spec");
		if (!strcmp(k, "Deployment"))
			deployment(&c, spec);
		else if (!strcmp(k, "StatefulSet"))
			statefulset(&c, spec);
		else if (!strcmp(k, "DaemonSet"))
			daemonset(&c, spec);
		else if (!strcmp(k, "ReplicaSet")) {
			diff_json_default(spec, "replicas", json_integer(1));
			pod_template(&c, json_object_get(spec, "template"));
		}
	} else if (!strcmp(g, "batch") && !strcmp(k, "Job")) {
		job(&c, obj, diff_json_child(obj, "spec"));
	} else if (!strcmp(g, "batch") && !strcmp(k, "CronJob")) {
		cronjob(&c, diff_json_child(obj, "spec"));
	} else if (!strcmp(g, "networking.k8s.io") &&
		   !strcmp(k, "NetworkPolicy")) {
		network_policy(diff_json_child(obj, "spec"));
	} else if (!strcmp(g, "autoscaling") &&
		   !strcmp(k, "HorizontalPodAutoscaler")) {
		hpa(&c, diff_json_child(obj, "spec"));
	} else if (!strcmp(g, "rbac.authorization.k8s.io") &&
		   (!strcmp(k, "RoleBinding") ||
		    !strcmp(k, "ClusterRoleBinding"))) {
		subjects(obj);
	}
	zero_status(g, k, obj);
	return c.bad_quantity;
}

int diff_stored_object(json_t *obj, unsigned flags, struct buf *why)
{
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *slash, *bad;
	char group[256];
	int root;

	if (!av || !kind)
		return 0;
	slash = strchr(av, '/');
	snprintf(group, sizeof(group), "%.*s", slash ? (int)(slash - av) : 0,
		 av);
	root = diff_gotype_root(group, slash ? slash + 1 : av, kind);
	if (root >= 0 && diff_gotype_decode(obj, root, NULL, why) < 0)
		return -1;
	if ((bad = diff_stored_defaults(obj, group, kind, flags))) {
		buf_adds(why, bad);
		return -1;
	}
	if (root < 0)
		return 0;
	diff_gotype_encode(obj, root);
	return 1;
}
