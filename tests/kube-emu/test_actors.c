/*
 * Unit tests of kube-emu's actors: the mutating-webhook stand-in, the
 * rollout stand-in and their control endpoints.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include "kube-emu/emu.h"
#include "util/clock.h"

#include "util/banned.h" /* last */

static const struct emu_resource *rsc(const char *g, const char *name)
{
	const struct emu_resource *r = emu_resource_find(g, "v1", name);

	cr_assert_not_null(r, "resource %s", name);
	return r;
}

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);

	cr_assert_not_null(v, "%s: %s", text, e.text);
	return v;
}

static void configure(struct emu_actors *a, const char *what, const char *spec)
{
	struct buf msg = BUF_INIT;

	cr_assert_eq(emu_actors_configure(a, what, spec, &msg), 0, "%s: %s",
		     spec, buf_cstr(&msg));
	buf_release(&msg);
}

static const char deployment[] =
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
	"\"metadata\":{\"name\":\"web\",\"namespace\":\"apps\","
	"\"labels\":{\"app\":\"web\"}},"
	"\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":"
	"{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":"
	"{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"web\","
	"\"image\":\"nginx:1.27\"}]}}}}";

static json_t *deploy_containers(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");

	return json_object_get(
		json_object_get(json_object_get(spec, "template"), "spec"),
		"containers");
}

static const char *str_at(const json_t *obj, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(obj, a), b));
}

static struct emu_store store;

static struct emu_actors *setup(void)
{
	struct emu_actors *a;

	cr_assert_eq(emu_store_init(&store), 0);
	a = emu_actors_new(&store);
	cr_assert_not_null(a);
	return a;
}

static void teardown(struct emu_actors *a)
{
	emu_actors_free(a);
	emu_store_release(&store);
}

Test(webhook, sidecar_injected_once)
{
	struct emu_actors *a = setup();
	json_t *obj = load(deployment), *cs, *side;
	const struct emu_resource *res = rsc("apps", "deployments");

	configure(a, "webhook",
		  "kind=Deployment,namespace=apps,sidecar=istio-proxy:"
		  "docker.io/istio/proxyv2:1.24");
	cr_assert_null(emu_actors_admit(a, res, "CREATE", obj));
	cs = deploy_containers(obj);
	cr_assert_eq(json_array_size(cs), 2);
	side = json_array_get(cs, 1);
	cr_assert_str_eq(json_string_value(json_object_get(side, "name")),
			 "istio-proxy");
	cr_assert_str_eq(json_string_value(json_object_get(side, "image")),
			 "docker.io/istio/proxyv2:1.24");
	cr_assert_str_eq(
		json_string_value(json_object_get(side, "imagePullPolicy")),
		"IfNotPresent");
	cr_assert_str_eq(json_string_value(json_object_get(
				 side, "terminationMessagePolicy")),
			 "File");
	/* An update of an object that has it already adds nothing. */
	cr_assert_null(emu_actors_admit(a, res, "UPDATE", obj));
	cr_assert_eq(json_array_size(deploy_containers(obj)), 2);
	json_decref(obj);
	teardown(a);
}

Test(webhook, pod_and_cronjob_templates)
{
	struct emu_actors *a = setup();
	json_t *pod = load("{\"metadata\":{\"name\":\"p\",\"namespace\":"
			   "\"default\"},\"spec\":{\"containers\":[{"
			   "\"name\":\"a\",\"image\":\"x\"}]}}");
	json_t *cj = load("{\"metadata\":{\"name\":\"c\",\"namespace\":"
			  "\"default\"},\"spec\":{\"schedule\":\"* * * * *\","
			  "\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":"
			  "{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]"
			  "}}}}}}");
	json_t *cs, *cm = load("{\"metadata\":{\"name\":\"m\"}}");

	configure(a, "webhook", "sidecar=log:fluent-bit");
	cr_assert_null(emu_actors_admit(a, rsc("", "pods"), "CREATE", pod));
	cs = json_object_get(json_object_get(pod, "spec"), "containers");
	cr_assert_eq(json_array_size(cs), 2);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(cs, 1), "imagePullPolicy")),
			 "Always");
	cr_assert_null(
		emu_actors_admit(a, rsc("batch", "cronjobs"), "CREATE", cj));
	cs = json_object_get(
		json_object_get(
			json_object_get(
				json_object_get(
					json_object_get(
						json_object_get(cj, "spec"),
						"jobTemplate"),
					"spec"),
				"template"),
			"spec"),
		"containers");
	cr_assert_eq(json_array_size(cs), 2);
	/* A ConfigMap has no pod template: left alone. */
	cr_assert_null(
		emu_actors_admit(a, rsc("", "configmaps"), "CREATE", cm));
	cr_assert_null(json_object_get(cm, "spec"));
	json_decref(pod);
	json_decref(cj);
	json_decref(cm);
	teardown(a);
}

Test(webhook, annotations_and_labels)
{
	struct emu_actors *a = setup();
	json_t *obj = load(deployment), *meta;

	configure(a, "webhook",
		  "group=apps,resource=deployments,annotation=injected=true,"
		  "annotation=team=a=b,label=mesh=on");
	cr_assert_null(
		emu_actors_admit(a, rsc("apps", "deployments"), "CREATE", obj));
	meta = json_object_get(obj, "metadata");
	cr_assert_str_eq(str_at(meta, "annotations", "injected"), "true");
	cr_assert_str_eq(str_at(meta, "annotations", "team"), "a=b");
	cr_assert_str_eq(str_at(meta, "labels", "mesh"), "on");
	cr_assert_str_eq(str_at(meta, "labels", "app"), "web");
	json_decref(obj);
	teardown(a);
}

Test(webhook, matching)
{
	struct emu_actors *a = setup();
	const struct emu_resource *res = rsc("apps", "deployments");
	json_t *obj = load(deployment), *meta;

	configure(a, "webhook", "namespace=other,annotation=ns=1");
	configure(a, "webhook", "kind=StatefulSet,annotation=kind=1");
	configure(a, "webhook", "selector=app=db,annotation=sel=1");
	configure(a, "webhook",
		  "selector=app in (web,api);tier!=x,"
		  "annotation=set=1");
	configure(a, "webhook", "op=UPDATE,annotation=upd=1");
	configure(a, "webhook",
		  "namespace=apps|other,kind=Deployment|"
		  "StatefulSet,op=CREATE,annotation=alt=1");
	cr_assert_null(emu_actors_admit(a, res, "CREATE", obj));
	meta = json_object_get(obj, "metadata");
	cr_assert_null(str_at(meta, "annotations", "ns"));
	cr_assert_null(str_at(meta, "annotations", "kind"));
	cr_assert_null(str_at(meta, "annotations", "sel"));
	cr_assert_null(str_at(meta, "annotations", "upd"));
	cr_assert_str_eq(str_at(meta, "annotations", "set"), "1");
	cr_assert_str_eq(str_at(meta, "annotations", "alt"), "1");
	cr_assert_null(emu_actors_admit(a, res, "UPDATE", obj));
	cr_assert_str_eq(str_at(meta, "annotations", "upd"), "1");
	json_decref(obj);
	teardown(a);
}

Test(webhook, deny)
{
	struct emu_actors *a = setup();
	const struct emu_resource *res = rsc("apps", "deployments");
	json_t *obj = load(deployment), *st;

	configure(a, "webhook",
		  "name=policy.example.com,kind=Deployment,"
		  "deny=images must come from the registry");
	st = emu_actors_admit(a, res, "CREATE", obj);
	cr_assert_not_null(st);
	cr_assert_eq(json_integer_value(json_object_get(st, "code")), 400);
	cr_assert_str_eq(json_string_value(json_object_get(st, "status")),
			 "Failure");
	cr_assert_str_eq(json_string_value(json_object_get(st, "message")),
			 "admission webhook \"policy.example.com\" denied "
			 "the request: images must come from the registry");
	cr_assert_null(json_object_get(st, "reason"));
	cr_assert_null(json_object_get(st, "details"));
	json_decref(st);
	json_decref(obj);
	teardown(a);
}

Test(webhook, deny_code_and_errors)
{
	struct emu_actors *a = setup();
	json_t *obj = load(deployment), *st;
	struct buf msg = BUF_INIT;
	static const char *const bad[] = {"sidecar=nocolon",
					  "colour=red",
					  "annotation=novalue",
					  "code=abc",
					  "op=DELETE",
					  "selector=a in (b",
					  NULL};
	const char *const *s;

	configure(a, "webhook", "name=w,deny=no,code=403");
	st = emu_actors_admit(a, rsc("apps", "deployments"), "UPDATE", obj);
	cr_assert_eq(json_integer_value(json_object_get(st, "code")), 403);
	cr_assert_str_eq(json_string_value(json_object_get(st, "message")),
			 "admission webhook \"w\" denied the request: no");
	json_decref(st);
	for (s = bad; *s; s++) {
		buf_reset(&msg);
		cr_assert_lt(emu_actors_configure(a, "webhook", *s, &msg), 0,
			     "%s", *s);
		cr_assert_gt(msg.len, 0);
	}
	buf_reset(&msg);
	cr_assert_lt(
		emu_actors_configure(a, "rollout", "ready-after=soon", &msg),
		0);
	buf_reset(&msg);
	cr_assert_lt(emu_actors_configure(a, "nothing", "x=y", &msg), 0);
	buf_release(&msg);
	json_decref(obj);
	teardown(a);
}

/* ---- rollouts ---- */

static json_t *create(const struct emu_resource *res, const char *text)
{
	json_t *in = load(text), *out = NULL;
	int code = emu_store_create(&store, res, "default", in, "test", false,
				    &out);

	cr_assert_eq(code, 201, "%d", code);
	json_decref(in);
	return out;
}


/*
 * Poll the store (bounded: about 10 s) until the object has a status
 * member `key`; returns the object (caller owns it) or fails.
 */
static json_t *wait_status(const struct emu_resource *res, const char *name,
			   const char *key, json_int_t want)
{
	json_t *obj = NULL;
	const json_t *v;
	int i;

	for (i = 0; i < 1000; i++) {
		cr_assert_eq(emu_store_get(&store, res, "default", name, &obj),
			     200);
		v = json_object_get(json_object_get(obj, "status"), key);
		if (v && (want < 0 || json_integer_value(v) == want))
			return obj;
		json_decref(obj);
		clk_sleep_ms(10);
	}
	cr_assert_fail("%s %s: no status.%s", res->kind, name, key);
	return NULL;
}

static const char *cond_field(const json_t *obj, const char *type,
			      const char *field)
{
	const json_t *c;
	size_t i;
	const json_t *conds =
		json_object_get(json_object_get(obj, "status"), "conditions");

	json_array_foreach(conds, i, c)
	{
		if (!strcmp(json_string_value(json_object_get(c, "type")),
			    type))
			return json_string_value(json_object_get(c, field));
	}
	return NULL;
}

static json_int_t status_int(const json_t *obj, const char *key)
{
	return json_integer_value(
		json_object_get(json_object_get(obj, "status"), key));
}

static const char web_deploy[] =
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":"
	"{\"name\":\"web\"},\"spec\":{\"replicas\":3,\"selector\":{"
	"\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":{"
	"\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":"
	"\"web\",\"image\":\"nginx:1.27\"}]}}}}";

Test(rollout, deployment)
{
	struct emu_actors *a = setup();
	const struct emu_resource *res = rsc("apps", "deployments");
	json_t *obj, *got, *upd, *out = NULL;
	const char *msg;

	configure(a, "rollout", "ready-after=20ms");
	obj = create(res, web_deploy);
	emu_actors_notify(a, res, obj);
	got = wait_status(res, "web", "observedGeneration", 1);
	cr_assert_eq(status_int(got, "replicas"), 3);
	cr_assert_eq(status_int(got, "updatedReplicas"), 3);
	cr_assert_eq(status_int(got, "readyReplicas"), 3);
	cr_assert_eq(status_int(got, "availableReplicas"), 3);
	cr_assert_str_eq(cond_field(got, "Available", "status"), "True");
	cr_assert_str_eq(cond_field(got, "Available", "reason"),
			 "MinimumReplicasAvailable");
	cr_assert_str_eq(cond_field(got, "Progressing", "reason"),
			 "NewReplicaSetAvailable");
	msg = cond_field(got, "Progressing", "message");
	cr_assert(!strncmp(msg, "ReplicaSet \"web-", 16), "%s", msg);
	cr_assert(strstr(msg, "\" has successfully progressed."), "%s", msg);
	/* A spec change: the status follows the new generation. */
	upd = json_deep_copy(got);
	json_object_set_new(json_object_get(upd, "spec"), "replicas",
			    json_integer(5));
	cr_assert_eq(emu_store_update(&store, res, "default", "web", NULL,
				      "test", upd, false, &out),
		     200);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(out, "metadata"), "generation")),
		     2);
	emu_actors_notify(a, res, out);
	json_decref(got);
	got = wait_status(res, "web", "observedGeneration", 2);
	cr_assert_eq(status_int(got, "replicas"), 5);
	cr_assert_eq(status_int(got, "availableReplicas"), 5);
	json_decref(got);
	json_decref(upd);
	json_decref(out);
	json_decref(obj);
	teardown(a);
}

Test(rollout, latest_generation_only)
{
	struct emu_actors *a = setup();
	const struct emu_resource *res = rsc("apps", "deployments");
	json_t *obj, *upd, *out = NULL, *got;
	unsigned long long rv;

	configure(a, "rollout", "kind=Deployment,ready-after=1s");
	obj = create(res, web_deploy);
	emu_actors_notify(a, res, obj);
	upd = json_deep_copy(obj);
	json_object_set_new(json_object_get(upd, "spec"), "replicas",
			    json_integer(2));
	cr_assert_eq(emu_store_update(&store, res, "default", "web", NULL,
				      "test", upd, false, &out),
		     200);
	emu_actors_notify(a, res, out);
	rv = strtoull(str_at(out, "metadata", "resourceVersion"), NULL, 10);
	got = wait_status(res, "web", "observedGeneration", -1);
	cr_assert_eq(status_int(got, "observedGeneration"), 2);
	cr_assert_eq(status_int(got, "replicas"), 2);
	/* Exactly one status write followed the update. */
	cr_assert_eq(
		strtoull(str_at(got, "metadata", "resourceVersion"), NULL, 10),
		rv + 1);
	json_decref(got);
	json_decref(upd);
	json_decref(out);
	json_decref(obj);
	teardown(a);
}

Test(rollout, deployment_fails)
{
	struct emu_actors *a = setup();
	const struct emu_resource *res = rsc("apps", "deployments");
	json_t *obj, *got;

	configure(a, "rollout", "ready-after=10ms");
	configure(a, "rollout", "kind=Deployment,name=web,fail");
	obj = create(res, web_deploy);
	emu_actors_notify(a, res, obj);
	got = wait_status(res, "web", "observedGeneration", 1);
	cr_assert_eq(status_int(got, "unavailableReplicas"), 3);
	cr_assert_null(json_object_get(json_object_get(got, "status"),
				       "availableReplicas"));
	cr_assert_str_eq(cond_field(got, "Progressing", "status"), "False");
	cr_assert_str_eq(cond_field(got, "Progressing", "reason"),
			 "ProgressDeadlineExceeded");
	cr_assert_str_eq(cond_field(got, "Available", "status"), "False");
	cr_assert_str_eq(cond_field(got, "Available", "reason"),
			 "MinimumReplicasUnavailable");
	json_decref(got);
	json_decref(obj);
	teardown(a);
}

Test(rollout, statefulset_and_daemonset)
{
	struct emu_actors *a = setup();
	const struct emu_resource *sts = rsc("apps", "statefulsets");
	const struct emu_resource *ds = rsc("apps", "daemonsets");
	json_t *o1, *o2, *got;
	const char *rev;

	configure(a, "rollout", "ready-after=0");
	o1 = create(sts,
		    "{\"metadata\":{\"name\":\"db\"},\"spec\":{\"replicas\":2,"
		    "\"serviceName\":\"db\",\"selector\":{\"matchLabels\":{"
		    "\"app\":\"db\"}},\"template\":{\"metadata\":{\"labels\":"
		    "{\"app\":\"db\"}},\"spec\":{\"containers\":[{\"name\":"
		    "\"db\",\"image\":\"postgres:17\"}]}}}}");
	o2 = create(ds, "{\"metadata\":{\"name\":\"agent\"},\"spec\":{"
			"\"selector\":{\"matchLabels\":{\"app\":\"agent\"}},"
			"\"template\":{\"metadata\":{\"labels\":{\"app\":"
			"\"agent\"}},\"spec\":{\"containers\":[{\"name\":"
			"\"agent\",\"image\":\"agent:1\"}]}}}}");
	emu_actors_notify(a, sts, o1);
	emu_actors_notify(a, ds, o2);
	got = wait_status(sts, "db", "observedGeneration", 1);
	cr_assert_eq(status_int(got, "replicas"), 2);
	cr_assert_eq(status_int(got, "readyReplicas"), 2);
	cr_assert_eq(status_int(got, "currentReplicas"), 2);
	cr_assert_eq(status_int(got, "updatedReplicas"), 2);
	cr_assert_eq(status_int(got, "availableReplicas"), 2);
	rev = str_at(got, "status", "currentRevision");
	cr_assert(rev && !strncmp(rev, "db-", 3));
	cr_assert_str_eq(rev, str_at(got, "status", "updateRevision"));
	json_decref(got);
	got = wait_status(ds, "agent", "observedGeneration", 1);
	cr_assert_eq(status_int(got, "desiredNumberScheduled"), 1);
	cr_assert_eq(status_int(got, "currentNumberScheduled"), 1);
	cr_assert_eq(status_int(got, "numberReady"), 1);
	cr_assert_eq(status_int(got, "updatedNumberScheduled"), 1);
	cr_assert_eq(status_int(got, "numberAvailable"), 1);
	cr_assert(json_is_integer(json_object_get(
		json_object_get(got, "status"), "numberMisscheduled")));
	cr_assert_eq(status_int(got, "numberMisscheduled"), 0);
	json_decref(got);
	json_decref(o1);
	json_decref(o2);
	teardown(a);
}

static const char job_text[] =
	"{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"backoffLimit\":2,"
	"\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":"
	"[{\"name\":\"j\",\"image\":\"busybox:1.36\"}]}}}}";

Test(rollout, jobs)
{
	struct emu_actors *a = setup();
	const struct emu_resource *res = rsc("batch", "jobs");
	json_t *ok, *bad, *got;
	char text[512];

	configure(a, "rollout", "kind=Job,ready-after=5ms");
	configure(a, "rollout", "rule=broken,kind=Job,name=migrate,fail");
	snprintf(text, sizeof(text), job_text, "backup");
	ok = create(res, text);
	snprintf(text, sizeof(text), job_text, "migrate");
	bad = create(res, text);
	emu_actors_notify(a, res, ok);
	emu_actors_notify(a, res, bad);
	got = wait_status(res, "backup", "succeeded", 1);
	cr_assert_not_null(str_at(got, "status", "completionTime"));
	cr_assert_not_null(str_at(got, "status", "startTime"));
	cr_assert_str_eq(cond_field(got, "Complete", "status"), "True");
	cr_assert_str_eq(cond_field(got, "Complete", "reason"),
			 "CompletionsReached");
	cr_assert_str_eq(cond_field(got, "SuccessCriteriaMet", "status"),
			 "True");
	json_decref(got);
	got = wait_status(res, "migrate", "failed", 3);
	cr_assert_null(str_at(got, "status", "completionTime"));
	cr_assert_str_eq(cond_field(got, "Failed", "status"), "True");
	cr_assert_str_eq(cond_field(got, "Failed", "reason"),
			 "BackoffLimitExceeded");
	cr_assert_str_eq(cond_field(got, "Failed", "message"),
			 "Job has reached the specified backoff limit");
	cr_assert_null(cond_field(got, "Complete", "status"));
	json_decref(got);
	json_decref(ok);
	json_decref(bad);
	teardown(a);
}

/*
 * Without a rule nothing is scheduled. The proof is ordering, not time:
 * the marker is due after the unmatched object would have been, and the
 * queue runs in due order.
 */
Test(rollout, unconfigured_writes_nothing)
{
	struct emu_actors *a = setup();
	const struct emu_resource *res = rsc("apps", "deployments");
	json_t *obj, *marker, *got = NULL;
	char text[sizeof(web_deploy) + 16];
	char *p;

	obj = create(res, web_deploy);
	emu_actors_notify(a, res, obj);
	snprintf(text, sizeof(text), "%s", web_deploy);
	p = strstr(text, "\"web\"}");
	memcpy(p, "\"mrk\"", 5);
	marker = create(res, text);
	configure(a, "rollout", "name=mrk,ready-after=50ms");
	emu_actors_notify(a, res, obj);
	emu_actors_notify(a, res, marker);
	json_decref(wait_status(res, "mrk", "observedGeneration", 1));
	cr_assert_eq(emu_store_get(&store, res, "default", "web", &got), 200);
	cr_assert_eq(json_object_size(json_object_get(got, "status")), 0);
	cr_assert_str_eq(str_at(got, "metadata", "resourceVersion"),
			 str_at(obj, "metadata", "resourceVersion"));
	json_decref(got);
	json_decref(obj);
	json_decref(marker);
	teardown(a);
}

Test(rollout, free_with_pending_timers)
{
	struct emu_actors *a = setup();
	const struct emu_resource *res = rsc("apps", "deployments");
	json_t *obj;

	configure(a, "rollout", "ready-after=1h");
	obj = create(res, web_deploy);
	emu_actors_notify(a, res, obj);
	emu_actors_notify(a, res, obj);
	json_decref(obj);
	teardown(a);
}

/* ---- control endpoints ---- */

static int control(struct emu_actors *a, const char *method, const char *path,
		   const char *body, json_t **out)
{
	struct emu_response resp = EMU_RESPONSE_INIT;
	struct emu_request req = {0};
	char *copy = strdup(path), *seg[8], *save = NULL, *s;
	size_t n = 0;
	int code;

	req.method = method;
	req.path = path;
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	req.content_type = "application/json";
	for (s = strtok_r(copy, "/", &save); s && n < 8;
	     s = strtok_r(NULL, "/", &save))
		seg[n++] = s;
	code = emu_actors_control(a, &req, seg, n, &resp) < 0 ? -1 : resp.code;
	*out = code > 0 ? json_loads(buf_cstr(&resp.body), 0, NULL) : NULL;
	emu_response_release(&resp);
	free(copy);
	return code;
}

Test(control, webhooks)
{
	struct emu_actors *a = setup();
	json_t *out = NULL, *obj = load(deployment), *st;

	cr_assert_eq(control(a, "GET", "/emu/other", NULL, &out), -1);
	cr_assert_eq(control(a, "POST", "/emu/webhooks",
			     "{\"name\":\"inject\",\"match\":{\"kind\":"
			     "\"Deployment\",\"namespace\":[\"apps\"]},"
			     "\"sidecar\":{\"name\":\"proxy\",\"image\":"
			     "\"proxy:1.0\"},\"annotations\":{\"a\":\"b\"}}",
			     &out),
		     201);
	cr_assert_str_eq(json_string_value(json_object_get(out, "name")),
			 "inject");
	cr_assert_str_eq(
		json_string_value(json_array_get(
			json_object_get(json_object_get(out, "match"), "kind"),
			0)),
		"Deployment");
	json_decref(out);
	cr_assert_eq(control(a, "POST", "/emu/webhooks",
			     "name=refuse,kind=StatefulSet,deny=no", &out),
		     201);
	json_decref(out);
	cr_assert_eq(control(a, "POST", "/emu/webhooks", "{\"deny\":3}", &out),
		     400);
	cr_assert_str_eq(json_string_value(json_object_get(out, "reason")),
			 "BadRequest");
	json_decref(out);
	cr_assert_eq(control(a, "GET", "/emu/webhooks", NULL, &out), 200);
	cr_assert_eq(json_array_size(json_object_get(out, "webhooks")), 2);
	json_decref(out);
	cr_assert_eq(control(a, "GET", "/emu/webhooks/inject", NULL, &out),
		     200);
	json_decref(out);
	cr_assert_null(
		emu_actors_admit(a, rsc("apps", "deployments"), "CREATE", obj));
	cr_assert_eq(json_array_size(deploy_containers(obj)), 2);
	st = emu_actors_admit(a, rsc("apps", "statefulsets"), "CREATE", obj);
	cr_assert_eq(json_integer_value(json_object_get(st, "code")), 400);
	json_decref(st);
	cr_assert_eq(control(a, "DELETE", "/emu/webhooks/refuse", NULL, &out),
		     200);
	json_decref(out);
	cr_assert_eq(control(a, "DELETE", "/emu/webhooks/refuse", NULL, &out),
		     404);
	json_decref(out);
	cr_assert_null(emu_actors_admit(a, rsc("apps", "statefulsets"),
					"CREATE", obj));
	cr_assert_eq(control(a, "DELETE", "/emu/webhooks", NULL, &out), 200);
	cr_assert_eq(json_integer_value(json_object_get(out, "deleted")), 1);
	json_decref(out);
	cr_assert_eq(control(a, "GET", "/emu/webhooks", NULL, &out), 200);
	cr_assert_eq(json_array_size(json_object_get(out, "webhooks")), 0);
	json_decref(out);
	cr_assert_eq(control(a, "PUT", "/emu/webhooks", "{}", &out), 405);
	json_decref(out);
	json_decref(obj);
	teardown(a);
}

Test(control, rollouts)
{
	struct emu_actors *a = setup();
	const struct emu_resource *res = rsc("apps", "deployments");
	json_t *out = NULL, *obj, *got;

	cr_assert_eq(control(a, "POST", "/emu/rollouts",
			     "{\"name\":\"all\",\"readyAfter\":\"10ms\"}",
			     &out),
		     201);
	cr_assert_eq(json_integer_value(json_object_get(out, "readyAfterMs")),
		     10);
	json_decref(out);
	cr_assert_eq(control(a, "POST", "/emu/rollouts",
			     "{\"name\":\"all\",\"readyAfter\":5,\"match\":{"
			     "\"kind\":\"Deployment\"}}",
			     &out),
		     200);
	json_decref(out);
	cr_assert_eq(control(a, "GET", "/emu/rollouts", NULL, &out), 200);
	cr_assert_eq(json_array_size(json_object_get(out, "rollouts")), 1);
	json_decref(out);
	obj = create(res, web_deploy);
	emu_actors_notify(a, res, obj);
	got = wait_status(res, "web", "observedGeneration", 1);
	json_decref(got);
	cr_assert_eq(control(a, "DELETE", "/emu/rollouts/all", NULL, &out),
		     200);
	json_decref(out);
	cr_assert_eq(control(a, "GET", "/emu/rollouts/all", NULL, &out), 404);
	json_decref(out);
	json_decref(obj);
	teardown(a);
}

/*
 * Through the store: admission runs on writes, and a webhook refusing
 * Deployments does not see kube-controller-manager's /status writes
 * (in Kubernetes, a rule on "deployments" does not match
 * "deployments/status").
 */
Test(rollout, through_store_with_webhooks)
{
	struct emu_actors *a = setup();
	const struct emu_resource *res = rsc("apps", "deployments");
	json_t *obj, *got, *out = NULL;

	configure(a, "webhook",
		  "kind=Deployment,sidecar=proxy:proxy:1.0,"
		  "op=CREATE");
	configure(a, "rollout", "ready-after=0");
	obj = create(res, web_deploy);
	cr_assert_eq(json_array_size(deploy_containers(obj)), 2);
	configure(a, "webhook", "name=freeze,kind=Deployment,deny=frozen");
	/* Unconditional: the status may have been written meanwhile. */
	json_object_del(json_object_get(obj, "metadata"), "resourceVersion");
	cr_assert_eq(emu_store_update(&store, res, "default", "web", NULL,
				      "test", obj, false, &out),
		     400);
	json_decref(out);
	emu_actors_notify(a, res, obj);
	got = wait_status(res, "web", "observedGeneration", 1);
	cr_assert_eq(status_int(got, "availableReplicas"), 3);
	json_decref(got);
	json_decref(obj);
	teardown(a);
}
