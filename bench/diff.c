/*
 * Benchmark: diff 10,000 desired objects against 10,000 live objects held
 * in memory (1% drifted, realistic managedFields with three managers
 * each), and compare with the floor: the time jansson alone needs to
 * parse the same live JSON. A second floor is the time it takes only to
 * read what the diff has to read in those objects, comparing nothing.
 *
 * Goal (issue 3): under 100 ms on one core, and under 2 KB of extra
 * memory per object beyond the parsed JSON. Figures are printed as
 * measured; run it pinned to one core (`make bench` does).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diff/diff.h"
#include "util/clock.h"

#define NOBJ 10000

static double now(void)
{
	return (double)clk_mono_ns() / 1e9;
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* Where the reading floor puts its sums, so that its reads are kept. */
static volatile size_t read_sink;

/*
 * The reading floor: every node of the desired object, the live value at
 * each desired path (list items by position), each manager's name and our
 * manager's fieldsV1 whole.
 * The objects are far bigger than the caches, so this is mostly waiting
 * for memory; a diff has to read all of it too.
 */
static size_t read_all(const json_t *j)
{
	size_t n = (size_t)json_typeof(j), i;
	const char *k;
	json_t *v;

	if (json_is_object(j)) {
		json_object_foreach ((json_t *)j, k, v)
			n += (unsigned char)*k + read_all(v);
	} else if (json_is_array(j)) {
		json_array_foreach (j, i, v)
			n += read_all(v);
	} else if (json_is_string(j)) {
		n += (unsigned char)*json_string_value(j);
	}
	return n;
}

static size_t read_live(const json_t *d, const json_t *l)
{
	size_t n = 0, i;
	const char *k;
	json_t *v;

	if (!l)
		return 0;
	if (json_is_object(d)) {
		json_object_foreach ((json_t *)d, k, v)
			n += read_live(v, json_object_get(l, k));
	} else if (json_is_array(d)) {
		json_array_foreach (d, i, v)
			n += read_live(v, json_array_get(l, i));
	} else {
		n += read_all(l);
	}
	return n;
}

static size_t read_floor(const struct diff_objset *desired,
			 const struct diff_objset *live)
{
	size_t n = 0, i;
	const json_t *e;

	for (size_t o = 0; o < desired->len; o++) {
		const struct diff_object *d = desired->items[o];
		const struct diff_object *l = diff_objset_get(live, &d->key);
		const json_t *mf;

		n += read_all(d->json);
		if (!l)
			continue;
		n += read_live(d->json, l->json);
		mf = json_object_get(json_object_get(l->json, "metadata"),
				     "managedFields");
		json_array_foreach (mf, i, e) {
			const char *m = json_string_value(
				json_object_get(e, "manager"));

			if (m && !strcmp(m, "syncd"))
				n += read_all(json_object_get(e, "fieldsV1"));
		}
	}
	return n;
}

static json_t *desired_object(int i)
{
	char name[32];

	snprintf(name, sizeof(name), "app-%05d", i);
	return json_pack(
		"{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:i, s:{s:{s:s}},"
		" s:{s:{s:{s:s}}, s:{s:[{s:s, s:s, s:[s, s], s:[{s:i, s:s}],"
		" s:[{s:s, s:s}], s:{s:{s:s, s:s}, s:{s:s, s:s}}}]}}}}",
		"apiVersion", "apps/v1", "kind", "Deployment", "metadata",
		"name", name, "namespace", "bench", "labels", "app", name,
		"tier", "web", "spec", "replicas", 2, "selector", "matchLabels",
		"app", name, "template", "metadata", "labels", "app", name,
		"spec", "containers", "name", "web", "image",
		"ghcr.io/example/web:1.0", "args", "--port=8080",
		"--log-level=info", "ports", "containerPort", 8080, "name",
		"http", "env", "name", "MODE", "value", "production",
		"resources", "requests", "cpu", "100m", "memory", "64Mi",
		"limits", "cpu", "1", "memory", "256Mi");
}

/* The live object: defaults, status, and managedFields of 3 managers. */
static char *live_text(int i, bool drifted)
{
	char name[32];
	char *text;
	static const char fmt[] =
		"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
		"\"metadata\":{\"name\":\"%s\",\"namespace\":\"bench\","
		"\"uid\":\"6f1c9a52-%08d\",\"resourceVersion\":\"%d\","
		"\"generation\":2,\"creationTimestamp\":\"2026-11-01T10:00:00Z\","
		"\"labels\":{\"app\":\"%s\",\"tier\":\"web\"},"
		"\"annotations\":{\"deployment.kubernetes.io/revision\":\"2\"},"
		"\"managedFields\":["
		"{\"manager\":\"syncd\",\"operation\":\"Apply\",\"apiVersion\":"
		"\"apps/v1\",\"time\":\"2026-11-01T10:00:00Z\",\"fieldsType\":"
		"\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\"f:app\":"
		"{},\"f:tier\":{}}},\"f:spec\":{\"f:replicas\":{},\"f:selector\":{},"
		"\"f:template\":{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}},"
		"\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"web\\\"}\":{"
		"\".\":{},\"f:args\":{},\"f:env\":{\"k:{\\\"name\\\":\\\"MODE\\\"}"
		"\":{\".\":{},\"f:name\":{},\"f:value\":{}}},\"f:image\":{},"
		"\"f:name\":{},\"f:ports\":{\"k:{\\\"containerPort\\\":8080,"
		"\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},\"f:containerPort\":{},"
		"\"f:name\":{}}},\"f:resources\":{\"f:limits\":{\"f:cpu\":{},"
		"\"f:memory\":{}},\"f:requests\":{\"f:cpu\":{},\"f:memory\":{}}}"
		"}}}}}}},"
		"{\"manager\":\"kube-controller-manager\",\"operation\":\"Update\","
		"\"apiVersion\":\"apps/v1\",\"time\":\"2026-11-01T10:00:05Z\","
		"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{"
		"\"f:annotations\":{\".\":{},\"f:deployment.kubernetes.io/revision\":"
		"{}}},\"f:status\":{\"f:availableReplicas\":{},\"f:conditions\":{"
		"\".\":{},\"k:{\\\"type\\\":\\\"Available\\\"}\":{\".\":{},"
		"\"f:status\":{},\"f:type\":{}}},\"f:observedGeneration\":{},"
		"\"f:readyReplicas\":{},\"f:replicas\":{}}},\"subresource\":"
		"\"status\"},"
		"{\"manager\":\"kubectl-edit\",\"operation\":\"Update\","
		"\"apiVersion\":\"apps/v1\",\"time\":\"2026-11-01T11:00:00Z\","
		"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:template\":"
		"{\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"web\\\"}\":{"
		"\"f:imagePullPolicy\":{}}}}}}}}]},"
		"\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":"
		"\"%s\"}},\"progressDeadlineSeconds\":600,\"revisionHistoryLimit\":10,"
		"\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{"
		"\"maxSurge\":\"25%%\",\"maxUnavailable\":\"25%%\"}},\"template\":{"
		"\"metadata\":{\"creationTimestamp\":null,\"labels\":{\"app\":\"%s\"}},"
		"\"spec\":{\"containers\":[{\"name\":\"web\",\"image\":\"%s\","
		"\"args\":[\"--port=8080\",\"--log-level=info\"],\"ports\":[{"
		"\"containerPort\":8080,\"name\":\"http\",\"protocol\":\"TCP\"}],"
		"\"env\":[{\"name\":\"MODE\",\"value\":\"production\"}],"
		"\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"},"
		"\"limits\":{\"cpu\":\"1\",\"memory\":\"256Mi\"}},"
		"\"imagePullPolicy\":\"Always\",\"terminationMessagePath\":"
		"\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\"}],"
		"\"dnsPolicy\":\"ClusterFirst\",\"restartPolicy\":\"Always\","
		"\"schedulerName\":\"default-scheduler\",\"securityContext\":{},"
		"\"terminationGracePeriodSeconds\":30}}},"
		"\"status\":{\"availableReplicas\":2,\"observedGeneration\":2,"
		"\"readyReplicas\":2,\"replicas\":2,\"conditions\":[{\"type\":"
		"\"Available\",\"status\":\"True\"}]}}";

	snprintf(name, sizeof(name), "app-%05d", i);
	if (asprintf(&text, fmt, name, i, 1000 + i, name, name, name,
		     drifted ? "ghcr.io/example/web:1.1-hotfix"
			     : "ghcr.io/example/web:1.0") < 0)
		return NULL;
	return text;
}

int main(void)
{
	struct diff_objset desired = DIFF_OBJSET_INIT, live = DIFF_OBJSET_INIT;
	struct diff_schemas *reg = diff_schemas_new();
	struct diff_report *report = NULL;
	struct diff_summary sum;
	struct err err = ERR_INIT;
	char **texts = calloc(NOBJ, sizeof(*texts));
	size_t total = 0, before, after, peak_extra;
	double t0, t_parse, t_diff, best_diff = 1e9, best_parse = 1e9;
	double t_read, best_read = 1e9;

	for (int i = 0; i < NOBJ; i++) {
		texts[i] = live_text(i, i % 100 == 0);
		total += strlen(texts[i]);
	}
	/* The floor: jansson parsing the live JSON, best of 5. */
	for (int run = 0; run < 5; run++) {
		t0 = now();
		for (int i = 0; i < NOBJ; i++)
			json_decref(json_loads(texts[i], 0, NULL));
		t_parse = now() - t0;
		if (t_parse < best_parse)
			best_parse = t_parse;
	}
	for (int i = 0; i < NOBJ; i++) {
		struct diff_object *o;
		json_error_t jerr;
		json_t *d = desired_object(i), *l = json_loads(texts[i], 0, &jerr);

		if (!l) {
			fprintf(stderr, "live JSON: %d:%d: %s\n", jerr.line,
				jerr.column, jerr.text);
			return 2;
		}
		if (!d || !l || diff_object_new(&o, d, NULL, &err) < 0 ||
		    diff_objset_add(&desired, o, &err) < 0 ||
		    diff_object_new(&o, l, NULL, &err) < 0 ||
		    diff_objset_add(&live, o, &err) < 0) {
			fprintf(stderr, "setup failed: %s\n", err_msg(&err));
			return 2;
		}
		json_decref(d);
		json_decref(l);
		free(texts[i]);
	}
	free(texts);

	before = heap_in_use();
	peak_extra = 0;
	for (int run = 0; run < 5; run++) {
		t0 = now();
		if (diff_compare(&report, &desired, &live, reg, NULL, NULL,
				 &err) < 0) {
			fprintf(stderr, "diff failed: %s\n", err_msg(&err));
			return 2;
		}
		t_diff = now() - t0;
		after = heap_in_use();
		if (after > before && after - before > peak_extra)
			peak_extra = after - before;
		if (t_diff < best_diff)
			best_diff = t_diff;
		diff_report_summary(report, &sum);
		if (run < 4)
			diff_report_free(report);
	}
	/* After the diff, so that it cannot warm anything up for it. */
	for (int run = 0; run < 5; run++) {
		t0 = now();
		read_sink += read_floor(&desired, &live);
		t_read = now() - t0;
		if (t_read < best_read)
			best_read = t_read;
	}
	printf("objects: %d desired, %d live, %zu MB of live JSON\n", NOBJ,
	       NOBJ, total >> 20);
	printf("result: %zu in sync, %zu drifted, %zu fields\n", sum.in_sync,
	       sum.drifted, sum.fields);
	printf("jansson parse of the live JSON (floor): %8.1f ms\n",
	       best_parse * 1e3);
	printf("reading what the diff reads (floor):    %8.1f ms\n",
	       best_read * 1e3);
	printf("syncd diff of 10,000 pairs:             %8.1f ms  (%.2fx the "
	       "floor; %.2fx reading; goal < 100 ms: %s)\n",
	       best_diff * 1e3, best_diff / best_parse, best_diff / best_read,
	       best_diff < 0.1 ? "met" : "missed");
	printf("extra memory held by the report:        %8.0f B/object  "
	       "(goal < 2048: %s)\n",
	       (double)peak_extra / NOBJ,
	       peak_extra / NOBJ < 2048 ? "met" : "missed");
	diff_report_free(report);
	diff_objset_release(&desired);
	diff_objset_release(&live);
	diff_schemas_free(reg);
	return 0;
}
