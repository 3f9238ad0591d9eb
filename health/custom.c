/*
 * Kinds with no rule of their own (custom resources, mostly), judged by
 * the conventions of kstatus (sigs.k8s.io/cli-utils/pkg/kstatus) and of
 * the condition types most operators use. Unlike kstatus and Argo CD,
 * nothing is Healthy for want of a signal: no status yet is Progressing,
 * a status that says nothing we know is Unknown. docs/health.md has the
 * decision table.
 */
#include "health/internal.h"
#include "util/buf.h"

#include "util/banned.h" /* last */

/*
 * What a condition says, first match wins: `status` NULL matches any
 * status the entries before it did not, `reason` NULL any reason.
 */
static const struct cond_rule {
	const char *type;
	const char *status;
	const char *reason;
	enum health_state state;
} cond_rules[] = {
	{"Stalled", "True", NULL, HEALTH_DEGRADED},
	{"Failed", "True", NULL, HEALTH_DEGRADED},
	{"Degraded", "True", NULL, HEALTH_DEGRADED},
	{"Reconciling", "True", NULL, HEALTH_PROGRESSING},
	{"Ready", "True", NULL, HEALTH_HEALTHY},
	{"Ready", "False", NULL, HEALTH_DEGRADED},
	{"Ready", NULL, NULL, HEALTH_PROGRESSING},
	{"Progressing", "False", "ProgressDeadlineExceeded", HEALTH_DEGRADED},
	{"Available", "True", NULL, HEALTH_HEALTHY},
	{"Available", NULL, NULL, HEALTH_PROGRESSING},
	{"Progressing", "True", NULL, HEALTH_PROGRESSING},
};

static bool matches(const struct cond_rule *r, const json_t *c)
{
	return c && (!r->status || health_cond_is(c, r->status)) &&
	       (!r->reason ||
		health_str_is(json_object_get(c, "reason"), r->reason));
}

/* Decide by the first rule a condition matches; false when none does. */
static bool by_conditions(struct health *out, const json_t *obj)
{
	for (size_t i = 0; i < sizeof(cond_rules) / sizeof(*cond_rules); i++) {
		const struct cond_rule *r = &cond_rules[i];
		const json_t *c = health_cond(obj, r->type);

		if (!matches(r, c))
			continue;
		if (health_cond_stale(obj, c))
			health_set_stale(out, NULL, obj, c);
		else
			health_set_cond(out, r->state, NULL, c);
		return true;
	}
	return false;
}

static bool empty_value(const json_t *v)
{
	return !v || json_is_null(v) ||
	       (json_is_string(v) && !json_string_length(v)) ||
	       (json_is_object(v) && !json_object_size(v)) ||
	       (json_is_array(v) && !json_array_size(v));
}

/* No status, or one whose every member is empty: nothing written yet. */
static bool no_status_yet(const json_t *status)
{
	const char *key;
	json_t *v;

	if (!json_is_object(status))
		return empty_value(status);
	json_object_foreach ((json_t *)status, key, v)
		if (!empty_value(v))
			return false;
	return true;
}

/*
 * Unknown, naming what the status does hold so that whoever writes a
 * health rule for the kind knows where to look.
 */
static void no_signal(struct health *out, const json_t *obj)
{
	const json_t *conds = health_get(obj, "status", "conditions", NULL);
	const json_t *phase = health_get(obj, "status", "phase", NULL);
	const json_t *c;
	struct buf seen = BUF_INIT;
	size_t i;

	json_array_foreach (conds, i, c)
		buf_addf(&seen, "%s%s", i ? ", " : " (conditions: ",
			 health_str(json_object_get(c, "type")));
	if (json_is_string(phase))
		buf_addf(&seen, "%sphase %s", seen.len ? "; " : " (",
			 health_str(phase));
	if (seen.len)
		buf_addch(&seen, ')');
	health_set(out, HEALTH_UNKNOWN,
		   "no health signal in its status%s; a health rule for its "
		   "kind can say what it means",
		   buf_cstr(&seen));
	buf_release(&seen);
}

void health_custom(struct health *out, const json_t *obj)
{
	const json_t *status = json_object_get(obj, "status");

	if (no_status_yet(status))
		health_set(out, HEALTH_PROGRESSING, "no status yet");
	else if (!json_is_object(status))
		health_set(out, HEALTH_UNKNOWN, "status is not an object");
	else if (health_generation_behind(out, obj, "controller", false))
		return;
	else if (by_conditions(out, obj))
		return;
	else if (json_is_integer(json_object_get(status, "observedGeneration")))
		health_set(out, HEALTH_HEALTHY,
			   "the controller observed generation %lld; no "
			   "condition reports a problem",
			   (long long)json_integer_value(json_object_get(
				   status, "observedGeneration")));
	else
		no_signal(out, obj);
}
