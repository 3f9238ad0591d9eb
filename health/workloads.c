/*
 * Workloads: Deployments, StatefulSets and DaemonSets as `kubectl rollout
 * status` judges them (k8s.io/kubectl pkg/polymorphichelpers), with Argo
 * CD's states for paused and timed-out rollouts; ReplicaSets, Pods, Jobs
 * and CronJobs as Argo CD judges them. docs/health.md has the tables.
 */
#include <string.h>
#include <time.h>

#include "health/internal.h"
#include "util/clock.h"

#include "util/banned.h" /* last */

/* A status count: absent (omitempty) is 0. */
static long long count(const json_t *obj, const char *key)
{
	return (long long)health_int(health_get(obj, "status", key, NULL), 0);
}

/* spec.replicas, 1 when absent as the API server defaults it. */
static long long want_replicas(const json_t *obj)
{
	return (long long)health_int(health_get(obj, "spec", "replicas", NULL),
				     1);
}

/* spec.updateStrategy.type is OnDelete (updates wait for pod deletion). */
static bool on_delete(const json_t *obj)
{
	return health_str_is(health_get(obj, "spec", "updateStrategy", "type",
					NULL),
			     "OnDelete");
}

void health_deployment(struct health *out, const json_t *obj)
{
	long long want = want_replicas(obj);
	long long total = count(obj, "replicas");
	long long updated = count(obj, "updatedReplicas");
	long long available = count(obj, "availableReplicas");
	const json_t *progressing = health_cond(obj, "Progressing");

	if (json_is_true(health_get(obj, "spec", "paused", NULL)))
		health_set(out, HEALTH_SUSPENDED,
			   "the rollout is paused (spec.paused)");
	else if (health_generation_behind(out, obj, "rollout", true))
		return;
	else if (health_str_is(json_object_get(progressing, "reason"),
			       "ProgressDeadlineExceeded"))
		health_set_cond(out, HEALTH_DEGRADED, NULL, progressing);
	else if (updated < want)
		health_set(out, HEALTH_PROGRESSING,
			   "%lld of %lld replicas are updated", updated, want);
	else if (total > updated)
		health_set(out, HEALTH_PROGRESSING,
			   "%lld old replica%s pending termination",
			   total - updated,
			   total - updated == 1 ? " is" : "s are");
	else if (available < updated)
		health_set(out, HEALTH_PROGRESSING,
			   "%lld of %lld updated replicas are available",
			   available, updated);
	else
		health_set(out, HEALTH_HEALTHY,
			   "%lld of %lld replicas are updated and available",
			   available, want);
}

/*
 * The partition of a partitioned rolling update: pods with an ordinal
 * below it keep the old revision on purpose.
 */
static long long partition(const json_t *obj)
{
	return (long long)health_int(health_get(obj, "spec", "updateStrategy",
						"rollingUpdate", "partition",
						NULL),
				     0);
}

void health_statefulset(struct health *out, const json_t *obj)
{
	long long want = want_replicas(obj);
	long long ready = count(obj, "readyReplicas");
	long long updated = count(obj, "updatedReplicas");
	long long part = partition(obj);
	long long target = want - part > 0 ? want - part : 0;
	const char *update_rev =
		health_str(health_get(obj, "status", "updateRevision", NULL));
	const char *current_rev =
		health_str(health_get(obj, "status", "currentRevision", NULL));

	if (health_generation_behind(out, obj, "rollout", true))
		return;
	if (ready < want)
		health_set(out, HEALTH_PROGRESSING,
			   "%lld of %lld pods are ready", ready, want);
	else if (on_delete(obj))
		health_set(out, HEALTH_HEALTHY,
			   "%lld of %lld pods are ready (OnDelete: pods are "
			   "updated when deleted)",
			   ready, want);
	else if (part > 0 && updated < target)
		health_set(out, HEALTH_PROGRESSING,
			   "partitioned rollout: %lld of %lld new pods are "
			   "updated",
			   updated, target);
	else if (part > 0)
		health_set(out, HEALTH_HEALTHY,
			   "partitioned rollout complete: %lld new pod%s "
			   "updated, %lld kept below partition %lld",
			   updated, updated == 1 ? "" : "s",
			   want - updated > 0 ? want - updated : 0, part);
	else if (strcmp(update_rev, current_rev))
		health_set(out, HEALTH_PROGRESSING,
			   "rolling update: %lld of %lld pods are at revision "
			   "%s",
			   updated, want, update_rev);
	else
		health_set(out, HEALTH_HEALTHY,
			   "%lld of %lld pods are ready at revision %s", ready,
			   want, *current_rev ? current_rev : "(none)");
}

void health_daemonset(struct health *out, const json_t *obj)
{
	long long desired = count(obj, "desiredNumberScheduled");
	long long updated = count(obj, "updatedNumberScheduled");
	long long available = count(obj, "numberAvailable");

	if (health_generation_behind(out, obj, "rollout", true))
		return;
	if (!on_delete(obj) && updated < desired)
		health_set(out, HEALTH_PROGRESSING,
			   "%lld of %lld pods are updated", updated, desired);
	else if (available < desired)
		health_set(out, HEALTH_PROGRESSING,
			   "%lld of %lld pods are available", available,
			   desired);
	else if (on_delete(obj))
		health_set(out, HEALTH_HEALTHY,
			   "%lld of %lld pods are available (OnDelete: pods "
			   "are updated when deleted)",
			   available, desired);
	else
		health_set(out, HEALTH_HEALTHY,
			   "%lld of %lld pods are updated and available",
			   available, desired);
}

/* ReplicaSets and ReplicationControllers. */
void health_replicaset(struct health *out, const json_t *obj)
{
	const json_t *failure = health_cond(obj, "ReplicaFailure");
	long long want = want_replicas(obj);
	long long available = count(obj, "availableReplicas");

	if (health_generation_behind(out, obj, "controller", true))
		return;
	if (health_cond_is(failure, "True"))
		health_set_cond(out, HEALTH_DEGRADED, NULL, failure);
	else if (available < want)
		health_set(out, HEALTH_PROGRESSING,
			   "%lld of %lld replicas are available", available,
			   want);
	else
		health_set(out, HEALTH_HEALTHY,
			   "%lld of %lld replicas are available", available,
			   want);
}

/* ---- Pods ---- */

/*
 * A container waiting for a reason that will not pass by itself:
 * ErrImagePull, ImagePullBackOff, CrashLoopBackOff,
 * CreateContainerConfigError, InvalidImageName, ... (Argo CD's test:
 * "Err" prefix, "Error" or "BackOff" suffix).
 */
static bool stuck_waiting(const char *reason)
{
	size_t n = strlen(reason);

	return !strncmp(reason, "Err", 3) ||
	       (n >= 5 && !strcmp(reason + n - 5, "Error")) ||
	       (n >= 7 && !strcmp(reason + n - 7, "BackOff")) ||
	       !strcmp(reason, "InvalidImageName");
}

/*
 * The first container (init containers first) for which `pick` holds, or
 * NULL.
 */
static const json_t *container_where(const json_t *obj,
				      bool (*pick)(const json_t *ctr))
{
	static const char *const lists[] = {"initContainerStatuses",
					    "containerStatuses"};
	const json_t *c;
	size_t i;

	for (size_t l = 0; l < sizeof(lists) / sizeof(*lists); l++)
		json_array_foreach (health_get(obj, "status", lists[l], NULL),
				    i, c)
			if (pick(c))
				return c;
	return NULL;
}

static bool is_stuck(const json_t *ctr)
{
	const json_t *w = health_get(ctr, "state", "waiting", NULL);

	return w && stuck_waiting(health_str(json_object_get(w, "reason")));
}

static bool is_waiting(const json_t *ctr)
{
	return health_get(ctr, "state", "waiting", "reason", NULL) != NULL;
}

static bool has_failed(const json_t *ctr)
{
	const json_t *t = health_get(ctr, "state", "terminated", NULL);

	return t && (health_int(json_object_get(t, "exitCode"), 0) ||
		     health_str_is(json_object_get(t, "reason"), "OOMKilled"));
}

/* Not ready, and restarted at least once: its last run ended. */
static bool restarted_unready(const json_t *ctr)
{
	return !json_is_true(json_object_get(ctr, "ready")) &&
	       health_get(ctr, "lastState", "terminated", NULL);
}

/*
 * 'container "web": ImagePullBackOff: Back-off pulling image "x"' for a
 * state (waiting or terminated) of container ctr.
 */
static void set_container(struct health *out, enum health_state s,
			  const json_t *ctr, const json_t *state,
			  const char *what)
{
	const char *name = health_str(json_object_get(ctr, "name"));
	const char *reason = health_str(json_object_get(state, "reason"));
	const char *message = health_str(json_object_get(state, "message"));
	const json_t *code = json_object_get(state, "exitCode");

	if (json_is_integer(code))
		health_set(out, s,
			   "container \"%s\" %s: %s (exit code %lld)%s%s",
			   name, what, *reason ? reason : "terminated",
			   (long long)json_integer_value(code),
			   *message ? ": " : "", message);
	else
		health_set(out, s, "container \"%s\" %s: %s%s%s", name, what,
			   reason, *message ? ": " : "", message);
}

/* A Failed pod: its own reason and message, else its failed container. */
static void pod_failed(struct health *out, const json_t *obj)
{
	const char *reason = health_str(health_get(obj, "status", "reason",
						   NULL));
	const char *message = health_str(health_get(obj, "status", "message",
						    NULL));
	const json_t *ctr = container_where(obj, has_failed);

	if (*message)
		health_set(out, HEALTH_DEGRADED, "%s%s%s", reason,
			   *reason ? ": " : "", message);
	else if (ctr)
		set_container(out, HEALTH_DEGRADED, ctr,
			      health_get(ctr, "state", "terminated", NULL),
			      "failed");
	else
		health_set(out, HEALTH_DEGRADED, "failed%s%s",
			   *reason ? ": " : "", reason);
}

/* A Pending pod: unschedulable, or waiting for its containers. */
static void pod_pending(struct health *out, const json_t *obj)
{
	const json_t *scheduled = health_cond(obj, "PodScheduled");
	const json_t *ctr = container_where(obj, is_waiting);

	if (health_cond_is(scheduled, "False"))
		health_set_cond(out, HEALTH_PROGRESSING, NULL, scheduled);
	else if (ctr)
		set_container(out, HEALTH_PROGRESSING, ctr,
			      health_get(ctr, "state", "waiting", NULL),
			      "is waiting");
	else
		health_set(out, HEALTH_PROGRESSING, "pending");
}

/*
 * A Running pod. One that restarts its containers (restartPolicy Always)
 * is Healthy when Ready, Degraded when a container that restarted is not
 * ready; one that runs to completion (OnFailure, Never) is Progressing.
 */
static void pod_running(struct health *out, const json_t *obj)
{
	const char *policy =
		health_str(health_get(obj, "spec", "restartPolicy", NULL));
	const json_t *ready = health_cond(obj, "Ready");
	const json_t *ctr;

	if (*policy && strcmp(policy, "Always"))
		health_set(out, HEALTH_PROGRESSING,
			   "running to completion (restartPolicy %s)", policy);
	else if (health_cond_is(ready, "True"))
		health_set(out, HEALTH_HEALTHY, "running and ready");
	else if ((ctr = container_where(obj, restarted_unready)))
		set_container(out, HEALTH_DEGRADED, ctr,
			      health_get(ctr, "lastState", "terminated", NULL),
			      "restarted and is not ready; last run");
	else if (ready)
		health_set_cond(out, HEALTH_PROGRESSING, NULL, ready);
	else
		health_set(out, HEALTH_PROGRESSING, "running, not ready yet");
}

void health_pod(struct health *out, const json_t *obj)
{
	const json_t *phase = health_get(obj, "status", "phase", NULL);
	const json_t *stuck = container_where(obj, is_stuck);
	const char *message =
		health_str(health_get(obj, "status", "message", NULL));

	if (health_str_is(phase, "Succeeded"))
		health_set(out, HEALTH_HEALTHY, "succeeded");
	else if (health_str_is(phase, "Failed"))
		pod_failed(out, obj);
	else if (stuck)
		set_container(out, HEALTH_DEGRADED, stuck,
			      health_get(stuck, "state", "waiting", NULL),
			      "is waiting");
	else if (health_str_is(phase, "Pending"))
		pod_pending(out, obj);
	else if (health_str_is(phase, "Running"))
		pod_running(out, obj);
	else if (!phase)
		health_set(out, HEALTH_PROGRESSING, "no status yet");
	else
		health_set(out, HEALTH_UNKNOWN, "phase %s%s%s",
			   health_str(phase), *message ? ": " : "", message);
}

/* ---- Jobs ---- */

/* The first of `types` that is a True condition of obj, or NULL. */
static const json_t *true_cond(const json_t *obj, const char *const *types)
{
	for (; *types; types++) {
		const json_t *c = health_cond(obj, *types);

		if (health_cond_is(c, "True"))
			return c;
	}
	return NULL;
}

void health_job(struct health *out, const json_t *obj)
{
	static const char *const failed[] = {"Failed", "FailureTarget", NULL};
	static const char *const done[] = {"Complete", "SuccessCriteriaMet",
					   NULL};
	const json_t *c;
	long long nfailed = count(obj, "failed");

	if ((c = true_cond(obj, failed)))
		health_set_cond(out, HEALTH_DEGRADED, NULL, c);
	else if (true_cond(obj, done))
		health_set(out, HEALTH_HEALTHY, "complete: %lld succeeded",
			   count(obj, "succeeded"));
	else if (json_is_true(health_get(obj, "spec", "suspend", NULL)))
		health_set(out, HEALTH_SUSPENDED, "suspended (spec.suspend)");
	else if (nfailed)
		health_set(out, HEALTH_PROGRESSING,
			   "%lld active, %lld succeeded, %lld failed",
			   count(obj, "active"), count(obj, "succeeded"),
			   nfailed);
	else
		health_set(out, HEALTH_PROGRESSING,
			   "%lld active, %lld succeeded", count(obj, "active"),
			   count(obj, "succeeded"));
}

/* An RFC 3339 time of the status, or 0 when absent or malformed. */
static time_t status_time(const json_t *obj, const char *key)
{
	time_t t = 0;

	if (clk_rfc3339_parse(health_str(health_get(obj, "status", key, NULL)),
			      &t) < 0)
		return 0;
	return t;
}

/*
 * A CronJob's Jobs are not read: its own status tells whether the newest
 * run succeeded (lastSuccessfulTime is the completion time of the newest
 * successful run; a run that started later and is no longer active ended
 * without success).
 */
void health_cronjob(struct health *out, const json_t *obj)
{
	const char *schedule =
		health_str(health_get(obj, "spec", "schedule", NULL));
	const char *last =
		health_str(health_get(obj, "status", "lastScheduleTime", NULL));
	size_t active = json_array_size(health_get(obj, "status", "active",
						   NULL));
	time_t scheduled = status_time(obj, "lastScheduleTime");
	time_t succeeded = status_time(obj, "lastSuccessfulTime");

	if (json_is_true(health_get(obj, "spec", "suspend", NULL)))
		health_set(out, HEALTH_SUSPENDED, "suspended (spec.suspend)");
	else if (active)
		health_set(out, HEALTH_HEALTHY, "%zu Job%s running", active,
			   active == 1 ? "" : "s");
	else if (!scheduled)
		health_set(out, HEALTH_HEALTHY,
			   "not run yet; next run by schedule \"%s\"",
			   schedule);
	else if (succeeded < scheduled)
		health_set(out, HEALTH_DEGRADED,
			   "the last run, scheduled at %s, did not succeed%s",
			   last,
			   succeeded ? "" : "; no run has succeeded yet");
	else
		health_set(out, HEALTH_HEALTHY,
			   "the last run, scheduled at %s, succeeded; next run "
			   "by schedule \"%s\"",
			   last, schedule);
}
