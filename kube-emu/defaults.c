/*
 * Defaulting, as kube-apiserver 1.36 does it when it decodes a write: the
 * SetDefaults_* functions of k8s.io/kubernetes/pkg/apis/{core,apps,batch,
 * autoscaling,networking,rbac}/v1, what the registries add on create
 * (Service cluster IPs and node ports, Job selectors, Secret stringData),
 * and quantities written back in resource.Quantity's canonical form.
 *
 * A field is defaulted only when it is absent or null (a nil pointer in
 * Go) or, for the fields Go holds as plain strings, empty. So defaulting
 * a defaulted object changes nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diff/diff.h"
#include "kube-emu/emu.h"
#include "util/base64.h"

#include "util/banned.h" /* last */

/* 10.96.0.0/12, the default service CIDR of kubeadm and kind. */
#define CLUSTER_IP_BASE 0x0a600000u
#define CLUSTER_IP_SIZE (1u << 20)
/* 10.96.0.1 belongs to the "kubernetes" Service. */
#define CLUSTER_IP_FIRST 2u
#define NODE_PORT_MIN	 30000
#define NODE_PORT_MAX	 32767

/* The regular expression kube quotes when a quantity does not parse. */
#define QTY_REGEX "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"

/* resource.Quantity's parse errors. */
static const char err_format[] =
	"quantities must match the regular expression '" QTY_REGEX "'";
static const char err_suffix[] = "unable to parse quantity's suffix";

struct dctx {
	struct emu_store *st;
	const struct emu_resource *res;
	const json_t *old;
	const char *bad_quantity; /* why the first bad quantity is bad */
};

static bool absent(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return !v || json_is_null(v);
}

/* Set o[key] = v when absent (steals v). */
static void set_default(json_t *o, const char *key, json_t *v)
{
	if (json_is_object(o) && absent(o, key))
		json_object_set_new(o, key, v);
	else
		json_decref(v);
}

/* A Go string field: absent, null and "" all take the default. */
static void set_default_str(json_t *o, const char *key, const char *s)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_object(o))
		return;
	if (!v || json_is_null(v) ||
	    (json_is_string(v) && !*json_string_value(v)))
		json_object_set_new(o, key, json_string(s));
}

/* o[key] as an object, created ({}) when absent or null. */
static json_t *child(json_t *o, const char *key)
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

static const char *str_at(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool str_is(const json_t *o, const char *key, const char *want)
{
	const char *s = str_at(o, key);

	return s && !strcmp(s, want);
}

/* ---- quantities ---- */

/* A JSON number as a manifest would spell it (0.5, not 0.50000000000). */
static void number_text(const json_t *v, char *out, size_t size)
{
	double r;
	int prec;

	if (json_is_integer(v)) {
		snprintf(out, size, "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		return;
	}
	r = json_real_value(v);
	for (prec = 1; prec <= 17; prec++) {
		snprintf(out, size, "%.*g", prec, r);
		if (strtod(out, NULL) == r)
			return;
	}
}

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
static void quantity_at(struct dctx *c, json_t *o, const char *key)
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
		number_text(v, num, sizeof(num));
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
static void quantity_map(struct dctx *c, json_t *list)
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

static void resources_quantities(struct dctx *c, json_t *r)
{
	quantity_map(c, json_object_get(r, "limits"));
	quantity_map(c, json_object_get(r, "requests"));
}

/* ---- pod specs ---- */

static void field_ref(json_t *holder)
{
	json_t *ref = json_object_get(holder, "fieldRef");

	if (json_is_object(ref))
		set_default_str(ref, "apiVersion", "v1");
}

static void http_get(json_t *handler)
{
	json_t *h = json_object_get(handler, "httpGet");

	if (!json_is_object(h))
		return;
	set_default_str(h, "path", "/");
	set_default_str(h, "scheme", "HTTP");
}

static void probe(json_t *p)
{
	if (!json_is_object(p))
		return;
	set_default(p, "timeoutSeconds", json_integer(1));
	set_default(p, "periodSeconds", json_integer(10));
	set_default(p, "successThreshold", json_integer(1));
	set_default(p, "failureThreshold", json_integer(3));
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

static void container(struct dctx *c, json_t *ct, bool host_network)
{
	json_t *a, *it, *lc, *res;
	size_t i;

	if (!json_is_object(ct))
		return;
	/* A struct without omitempty effect: Go always writes it. */
	set_default(ct, "resources", json_object());
	set_default_str(ct, "imagePullPolicy",
			pull_policy(str_at(ct, "image")));
	set_default_str(ct, "terminationMessagePath", "/dev/termination-log");
	set_default_str(ct, "terminationMessagePolicy", "File");
	a = json_object_get(ct, "ports");
	json_array_foreach(a, i, it)
	{
		if (!json_is_object(it))
			continue;
		set_default_str(it, "protocol", "TCP");
		if (host_network && absent(it, "hostPort") &&
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
		if (json_is_object(rf))
			quantity_at(c, rf, "divisor");
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
	json_t *meta = child(holder, "metadata");

	if (meta && json_is_null(json_object_get(meta, "creationTimestamp")))
		json_object_del(meta, "creationTimestamp");
}

static void pvc_spec(struct dctx *c, json_t *spec)
{
	if (!json_is_object(spec))
		return;
	set_default_str(spec, "volumeMode", "Filesystem");
	set_default(spec, "resources", json_object());
	resources_quantities(c, json_object_get(spec, "resources"));
}

static void downward_items(struct dctx *c, json_t *src)
{
	json_t *it, *rf;
	size_t i;

	json_array_foreach(json_object_get(src, "items"), i, it)
	{
		field_ref(it);
		rf = json_object_get(it, "resourceFieldRef");
		if (json_is_object(rf))
			quantity_at(c, rf, "divisor");
	}
}

static void volume(struct dctx *c, json_t *v)
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
			set_default(src, "defaultMode", json_integer(420));
	}
	downward_items(c, json_object_get(v, "downwardAPI"));
	src = json_object_get(v, "projected");
	json_array_foreach(json_object_get(src, "sources"), i, it)
	{
		json_t *tok = json_object_get(it, "serviceAccountToken");

		downward_items(c, json_object_get(it, "downwardAPI"));
		if (json_is_object(tok))
			set_default(tok, "expirationSeconds",
				    json_integer(3600));
	}
	src = json_object_get(v, "hostPath");
	if (json_is_object(src))
		set_default(src, "type", json_string(""));
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

static void containers(struct dctx *c, json_t *spec, const char *key,
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
		req = child(json_object_get(ct, "resources"), "requests");
		json_object_foreach(lim, name, v)
		{
			if (req && !json_object_get(req, name))
				json_object_set(req, name, v);
		}
	}
}

/* SetDefaults_PodSpec and what it reaches; `pod`: SetDefaults_Pod too. */
static void pod_spec(struct dctx *c, json_t *spec, bool pod)
{
	bool host_net;
	json_t *v;
	size_t i;

	if (!json_is_object(spec))
		return;
	host_net = pod && json_is_true(json_object_get(spec, "hostNetwork"));
	set_default_str(spec, "dnsPolicy", "ClusterFirst");
	set_default_str(spec, "restartPolicy", "Always");
	set_default(spec, "securityContext", json_object());
	set_default(spec, "terminationGracePeriodSeconds", json_integer(30));
	set_default_str(spec, "schedulerName", "default-scheduler");
	if (pod)
		set_default(spec, "enableServiceLinks", json_true());
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

static void pod_template(struct dctx *c, json_t *tmpl)
{
	if (!json_is_object(tmpl))
		return;
	embedded_meta(tmpl);
	pod_spec(c, json_object_get(tmpl, "spec"), false);
}

/* ---- workloads ---- */

static void deployment(struct dctx *c, json_t *spec)
{
	json_t *strat, *ru;

	set_default(spec, "replicas", json_integer(1));
	strat = child(spec, "strategy");
	set_default_str(strat, "type", "RollingUpdate");
	if (str_is(strat, "type", "RollingUpdate")) {
		ru = child(strat, "rollingUpdate");
		set_default(ru, "maxUnavailable", json_string("25%"));
		set_default(ru, "maxSurge", json_string("25%"));
	}
	set_default(spec, "revisionHistoryLimit", json_integer(10));
	set_default(spec, "progressDeadlineSeconds", json_integer(600));
	pod_template(c, json_object_get(spec, "template"));
}

static void statefulset(struct dctx *c, json_t *spec)
{
	json_t *us, *ru, *pol, *t;
	size_t i;

	set_default_str(spec, "podManagementPolicy", "OrderedReady");
	us = child(spec, "updateStrategy");
	if (!str_at(us, "type") || !*str_at(us, "type")) {
		set_default_str(us, "type", "RollingUpdate");
		child(us, "rollingUpdate");
	}
	ru = json_object_get(us, "rollingUpdate");
	if (str_is(us, "type", "RollingUpdate") && json_is_object(ru))
		set_default(ru, "partition", json_integer(0));
	pol = child(spec, "persistentVolumeClaimRetentionPolicy");
	set_default_str(pol, "whenDeleted", "Retain");
	set_default_str(pol, "whenScaled", "Retain");
	set_default(spec, "replicas", json_integer(1));
	set_default(spec, "revisionHistoryLimit", json_integer(10));
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
		pvc_spec(c, child(t, "spec"));
		set_default_str(child(t, "status"), "phase", "Pending");
	}
}

static void daemonset(struct dctx *c, json_t *spec)
{
	json_t *us, *ru;

	us = child(spec, "updateStrategy");
	set_default_str(us, "type", "RollingUpdate");
	if (str_is(us, "type", "RollingUpdate")) {
		ru = child(us, "rollingUpdate");
		set_default(ru, "maxUnavailable", json_integer(1));
		set_default(ru, "maxSurge", json_integer(0));
	}
	set_default(spec, "revisionHistoryLimit", json_integer(10));
	pod_template(c, json_object_get(spec, "template"));
}

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
	const char *name = str_at(meta, "name"), *uid = str_at(meta, "uid");
	json_t *labels, *ml;
	size_t i;

	if (json_is_true(json_object_get(spec, "manualSelector")) || !name ||
	    !uid)
		return;
	labels = child(child(child(spec, "template"), "metadata"), "labels");
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
	ml = child(child(spec, "selector"), "matchLabels");
	if (ml && !json_object_get(ml, uid_keys[1]))
		json_object_set_new(ml, uid_keys[1], json_string(uid));
}

/* The Job's labels shared with its template's by job(): copied apart. */
static void job_unshare(json_t *job)
{
	json_t *meta = json_object_get(job, "metadata");
	json_t *spec = json_object_get(job, "spec");
	json_t *tmeta = json_object_get(json_object_get(spec, "template"),
					"metadata");
	json_t *labels = json_object_get(meta, "labels");

	if (labels && labels == json_object_get(tmeta, "labels"))
		json_object_set_new(meta, "labels", json_deep_copy(labels));
}

static void job(struct dctx *c, json_t *obj, json_t *spec)
{
	json_t *meta = child(obj, "metadata"), *tl, *labels, *rule, *cond;
	bool alias = false;
	size_t i, j;

	if (absent(spec, "completions") && absent(spec, "parallelism")) {
		json_object_set_new(spec, "completions", json_integer(1));
		json_object_set_new(spec, "parallelism", json_integer(1));
	}
	set_default(spec, "parallelism", json_integer(1));
	if (absent(spec, "backoffLimit"))
		json_object_set_new(
			spec, "backoffLimit",
			json_integer(absent(spec, "backoffLimitPerIndex")
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
			set_default_str(cond, "status", "True");
		}
	}
	set_default_str(spec, "completionMode", "NonIndexed");
	set_default(spec, "suspend", json_false());
	set_default(spec, "manualSelector", json_false());
	set_default_str(spec, "podReplacementPolicy",
			absent(spec, "podFailurePolicy") ? "TerminatingOrFailed"
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
		if (c->old)
			json_object_set_new(meta, "labels", json_deep_copy(tl));
		else
			json_object_set(meta, "labels", tl);
	}
	pod_template(c, json_object_get(spec, "template"));
}

static void cronjob(struct dctx *c, json_t *spec)
{
	json_t *jt;

	set_default_str(spec, "concurrencyPolicy", "Allow");
	set_default(spec, "suspend", json_false());
	set_default(spec, "successfulJobsHistoryLimit", json_integer(3));
	set_default(spec, "failedJobsHistoryLimit", json_integer(1));
	jt = json_object_get(spec, "jobTemplate");
	if (json_is_object(jt))
		embedded_meta(jt);
	pod_template(c,
		     json_object_get(json_object_get(jt, "spec"), "template"));
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
		if (str_is(spec, "clusterIP", ip))
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
		const char *name = str_at(p, "name");

		if (!no_node_port(p))
			continue;
		json_array_foreach(json_object_get(old_spec, "ports"), j, op)
		{
			const char *on = str_at(op, "name");
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
	const char *t = str_at(spec, "type");

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

/* SetDefaults_Service: what the writer of a Service owns. */
static void service(struct dctx *c, json_t *spec)
{
	const char *type;
	json_t *p, *tp;
	bool lb;
	size_t i;

	(void)c;
	set_default_str(spec, "type", "ClusterIP");
	set_default_str(spec, "sessionAffinity", "None");
	type = str_at(spec, "type");
	if (str_is(spec, "sessionAffinity", "ClientIP")) {
		json_t *cfg =
			child(child(spec, "sessionAffinityConfig"), "clientIP");

		set_default(cfg, "timeoutSeconds", json_integer(10800));
	}
	json_array_foreach(json_object_get(spec, "ports"), i, p)
	{
		if (!json_is_object(p))
			continue;
		set_default_str(p, "protocol", "TCP");
		tp = json_object_get(p, "targetPort");
		if (!tp || json_is_null(tp) ||
		    (json_is_integer(tp) && !json_integer_value(tp)) ||
		    (json_is_string(tp) && !*json_string_value(tp)))
			json_object_set(p, "targetPort",
					json_object_get(p, "port"));
	}
	lb = !strcmp(type, "LoadBalancer");
	if (lb || !strcmp(type, "NodePort"))
		set_default_str(spec, "externalTrafficPolicy", "Cluster");
	if (lb)
		set_default(spec, "allocateLoadBalancerNodePorts", json_true());
	if (!strcmp(type, "ExternalName"))
		return;
	set_default_str(spec, "internalTrafficPolicy", "Cluster");
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
	if (old_spec && !str_is(old_spec, "type", "ExternalName")) {
		if (!str_at(spec, "clusterIP") || !*str_at(spec, "clusterIP"))
			json_object_set(spec, "clusterIP",
					json_object_get(old_spec, "clusterIP"));
		if (absent(spec, "clusterIPs") &&
		    json_object_get(old_spec, "clusterIPs"))
			json_object_set(
				spec, "clusterIPs",
				json_object_get(old_spec, "clusterIPs"));
	}
	ips = json_object_get(spec, "clusterIPs");
	ip = str_at(spec, "clusterIP");
	if ((!ip || !*ip) && json_is_string(json_array_get(ips, 0)))
		json_object_set(spec, "clusterIP", json_array_get(ips, 0));
	ip = str_at(spec, "clusterIP");
	if (!ip || !*ip) {
		allocate_ip(c->st, addr);
		json_object_set_new(spec, "clusterIP", json_string(addr));
	}
	if (!json_is_array(ips) || !json_array_size(ips))
		json_object_set_new(
			spec, "clusterIPs",
			json_pack("[O]", json_object_get(spec, "clusterIP")));
	headless = str_is(spec, "clusterIP", "None");
	if (absent(spec, "ipFamilyPolicy"))
		json_object_set_new(
			spec, "ipFamilyPolicy",
			json_string(headless && absent(spec, "selector")
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
	if (old_spec && (str_is(old_spec, "type", "NodePort") ||
			 str_is(old_spec, "type", "LoadBalancer")))
		keep_node_ports(spec, old_spec);
	json_array_foreach(json_object_get(spec, "ports"), i, p)
	{
		if (json_is_object(p) && no_node_port(p))
			json_object_set_new(
				p, "nodePort",
				json_integer(allocate_node_port(c->st, spec)));
	}
	if (lb && str_is(spec, "externalTrafficPolicy", "Local") &&
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

/* A load balancer's ingress with an IP defaults its ipMode to VIP. */
static void lb_ingress_mode(json_t *status)
{
	json_t *ing;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(status,
							  "loadBalancer"),
					   "ingress"),
			   i, ing)
	{
		if (str_at(ing, "ip") && *str_at(ing, "ip"))
			set_default_str(ing, "ipMode", "VIP");
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
			set_default_str(port, "protocol", "TCP");
		}
	}
}

/* Secret: type Opaque; stringData folded into data, where it wins. */
static void secret(json_t *obj)
{
	json_t *sd = json_object_get(obj, "stringData"), *data, *v;
	struct buf enc = BUF_INIT;
	const char *key;

	set_default_str(obj, "type", "Opaque");
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
		data = child(obj, "data");
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
				set_default(port, "protocol",
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

static void hpa(struct dctx *c, json_t *spec)
{
	json_t *beh, *r, *m;
	size_t i;

	set_default(spec, "minReplicas", json_integer(1));
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
	r = child(beh, "scaleUp");
	set_default(r, "stabilizationWindowSeconds", json_integer(0));
	set_default(r, "selectPolicy", json_string("Max"));
	set_default(r, "policies",
		    json_pack("[o, o]", scaling_policy("Pods", 4),
			      scaling_policy("Percent", 100)));
	r = child(beh, "scaleDown");
	set_default(r, "selectPolicy", json_string("Max"));
	set_default(r, "policies",
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
		if (str_is(s, "kind", "ServiceAccount") &&
		    str_is(s, "apiGroup", ""))
			json_object_del(s, "apiGroup");
		if (!absent(s, "apiGroup"))
			continue;
		if (str_is(s, "kind", "User") ||
			 str_is(s, "kind", "Group"))
			json_object_set_new(
				s, "apiGroup",
				json_string("rbac.authorization.k8s.io"));
	}
}

static void namespace_label(json_t *obj)
{
	json_t *meta = child(obj, "metadata");
	const char *name = str_at(meta, "name");
	json_t *labels;

	if (!name)
		return;
	labels = child(meta, "labels");
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
	{"autoscaling", "HorizontalPodAutoscaler", {"desiredReplicas", NULL},
	 false},
	{"policy",
	 "PodDisruptionBudget",
	 {"currentHealthy", "desiredHealthy", "disruptionsAllowed",
	  "expectedPods", NULL},
	 false},
	{"apiregistration.k8s.io", "APIService", {NULL}, false},
	{NULL, NULL, {NULL}, false},
};

static void zero_status(const struct emu_resource *res, json_t *obj)
{
	const struct zero_status *z;
	const char *const *f;
	json_t *status;

	for (z = zero_statuses; z->kind; z++)
		if (!strcmp(z->group, res->group) && !strcmp(z->kind, res->kind))
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

/*
 * The template generation annotation as the field manager sees a
 * DaemonSet: what the write sends, or "0" when it sends none (apps/v1's
 * conversion writes the internal TemplateGeneration back), so that the
 * creator, or a writer leaving it out, owns the key.
 */
static void daemonset_generation_seen(json_t *obj)
{
	static const char key[] = "deprecated.daemonset.template.generation";
	json_t *ann = child(child(obj, "metadata"), "annotations");

	if (ann && !str_at(ann, key))
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
	const char *was = str_at(old_ann, key);
	json_t *ann = child(child(obj, "metadata"), "annotations");
	long long gen = was ? strtoll(was, NULL, 10) : 1;
	char text[24];

	if (!ann)
		return;
	if (old && !json_equal(json_object_get(json_object_get(obj, "spec"),
					       "template"),
			       json_object_get(json_object_get(old, "spec"),
					       "template")))
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
		if (str_is(m, "mountPath", SA_MOUNT_PATH))
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
	json_t *spec = child(pod, "spec"), *vol, *mount, *ct, *list;
	const char *ns = str_at(json_object_get(pod, "metadata"), "namespace");
	const char *name = str_at(json_object_get(pod, "metadata"), "name");
	const json_t *sa, *auto_pod, *auto_sa;
	static const char *const lists[] = {"initContainers", "containers"};
	struct buf msg = BUF_INIT, vname = BUF_INIT;
	const char *account;
	json_t *status = NULL;
	size_t i, l;

	if (!spec)
		return NULL;
	set_default_str(spec, "serviceAccountName", "default");
	account = str_at(spec, "serviceAccountName");
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
		"token", "configMap", "name", "kube-root-ca.crt", "items", "key",
		"ca.crt", "path", "ca.crt", "downwardAPI", "items", "path",
		"namespace", "fieldRef", "apiVersion", "v1", "fieldPath",
		"metadata.namespace", "defaultMode", 420);
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
		tk = str_at(t, "key");
		e = str_at(t, "effect");
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
				const json_t *a = json_object_get(lim, names[n]);
				const json_t *b = json_object_get(req, names[n]);

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
	spec = child(pod, "spec");
	pod_default_tolerations(spec);
	/* Priority: no class, so priority 0 and the default policy */
	if (!str_at(spec, "priorityClassName"))
		set_default(spec, "priority", json_integer(0));
	set_default_str(spec, "preemptionPolicy", "PreemptLowerPriority");
	status = child(pod, "status");
	set_default_str(status, "phase", "Pending");
	set_default_str(status, "qosClass", pod_qos(spec));
	return NULL;
}

json_t *emu_defaults_prepare(struct emu_store *st,
			     const struct emu_resource *res, json_t *obj,
			     const json_t *old)
{
	struct dctx c = {st, res, old, NULL};
	const char *g = res->group, *k = res->kind;

	if (!json_is_object(obj))
		return NULL;
	if (!*g && !strcmp(k, "Service"))
		service_allocate(&c, json_object_get(obj, "spec"));
	else if (!*g && !strcmp(k, "Pod") && !old)
		return pod_prepare(st, obj);
	else if (!strcmp(g, "batch") && !strcmp(k, "Job")) {
		if (!old)
			job_selector(obj, child(obj, "spec"));
		job_unshare(obj);
	}
	else if (!strcmp(g, "apps") && !strcmp(k, "DaemonSet"))
		daemonset_generation(obj, old);
	else if (!strcmp(g, "apiregistration.k8s.io") && !old &&
		 absent(json_object_get(obj, "spec"), "service"))
		local_apiservice(obj);
	return NULL;
}

json_t *emu_defaults_apply(struct emu_store *st, const struct emu_resource *res,
			   json_t *obj, const json_t *old)
{
	struct dctx c = {st, res, old, NULL};
	const char *g = res->group, *k = res->kind;
	struct buf msg = BUF_INIT;
	json_t *spec, *status;

	if (!json_is_object(obj))
		return NULL;
	spec = json_object_get(obj, "spec");
	if (!*g && !strcmp(k, "Pod")) {
		pod_spec(&c, spec, true);
	} else if (!*g && !strcmp(k, "Service")) {
		service(&c, child(obj, "spec"));
		lb_ingress_mode(json_object_get(obj, "status"));
	} else if (!*g && !strcmp(k, "Secret")) {
		secret(obj);
	} else if (!*g && !strcmp(k, "Namespace")) {
		namespace_label(obj);
	} else if (!*g && !strcmp(k, "Endpoints")) {
		endpoints(obj);
	} else if (!strcmp(g, "apps")) {
		spec = child(obj, "spec");
		if (!strcmp(k, "Deployment"))
			deployment(&c, spec);
		else if (!strcmp(k, "StatefulSet"))
			statefulset(&c, spec);
		else if (!strcmp(k, "DaemonSet")) {
			daemonset(&c, spec);
			daemonset_generation_seen(obj);
		} else if (!strcmp(k, "ReplicaSet")) {
			set_default(spec, "replicas", json_integer(1));
			pod_template(&c, json_object_get(spec, "template"));
		}
	} else if (!strcmp(g, "batch") && !strcmp(k, "Job")) {
		job(&c, obj, child(obj, "spec"));
	} else if (!strcmp(g, "batch") && !strcmp(k, "CronJob")) {
		cronjob(&c, child(obj, "spec"));
	} else if (!strcmp(g, "networking.k8s.io") &&
		   !strcmp(k, "NetworkPolicy")) {
		network_policy(child(obj, "spec"));
	} else if (!strcmp(g, "autoscaling") &&
		   !strcmp(k, "HorizontalPodAutoscaler")) {
		hpa(&c, child(obj, "spec"));
	} else if (!strcmp(g, "rbac.authorization.k8s.io") &&
		   (!strcmp(k, "RoleBinding") ||
		    !strcmp(k, "ClusterRoleBinding"))) {
		subjects(obj);
	}
	zero_status(res, obj);
	if (!c.bad_quantity)
		return NULL;
	/*
	 * A quantity is decoded with the object, so kube answers as for a
	 * body it cannot decode: 400, not 422.
	 */
	buf_addf(&msg, "%s in version \"%s\" cannot be handled as a %s: %s", k,
		 res->version, k, c.bad_quantity);
	status = emu_status_new(400, "BadRequest", buf_cstr(&msg), NULL, NULL,
				NULL);
	buf_release(&msg);
	return status;
}
