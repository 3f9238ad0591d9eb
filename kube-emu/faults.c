/*
 * Fault injection and request counters.
 *
 * A fault spec is one or more rules separated by ';' (or newlines); a
 * rule is comma-separated `key=value` items and flags:
 *
 *   verb=list|watch  resource=deployments.apps  namespace=ns  name=bad-*
 *   code=503 retryAfter=2 message=TEXT  latency=200ms  drop
 *   watchEndAfter=2s  expire  count=3  percent=20  seed=7  dryRun=false
 *
 * The filters (verb, resource, namespace, name, dryRun: only dry runs,
 * or only real writes) select requests; every
 * selected request then passes count= (only the first N fire) and
 * percent= (a draw from the rule's own PRNG, seeded by seed=, so a run
 * repeats exactly). Rules are tried in order; the first one with a code
 * answers, later ones with a code are not tried (their counts stay).
 * The counters tally every API request by verb, resource and code. One
 * mutex guards rules and counters: requests arrive on many threads.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kube-emu/emu.h"
#include "util/clock.h"

#include "util/banned.h" /* last */

struct fault {
	char *text;	/* the rule as given, for GET /emu/faults */
	unsigned verbs; /* bit per verbs[] entry; 0: any */
	char *resource; /* plural; NULL: any */
	char *group;	/* NULL: any group */
	char *ns;
	char *name; /* glob */
	int dry_run; /* 1: only dry runs; 0: only real requests; -1: any */
	int code;
	unsigned retry_after;
	bool retry_after_set;
	char *message;
	unsigned latency_ms;
	bool drop;
	unsigned watch_end_ms;
	bool expire;
	long count;	  /* -1: unlimited */
	unsigned percent; /* 100: always */
	uint64_t prng;
	unsigned long fired;
};

struct counter {
	char *verb;
	const struct emu_resource *res;
	char *sub;
	int code;
	unsigned long count;
};

struct emu_faults {
	pthread_mutex_t lock;
	struct fault *rules;
	size_t nrules;
	struct counter *counters;
	size_t ncounters;
	unsigned long total;
};

static const char *const verbs[] = {
	"get",	  "list",  "watch",  "create",
	"update", "patch", "delete", "deletecollection",
	NULL};

struct emu_faults *emu_faults_new(void)
{
	struct emu_faults *f = calloc(1, sizeof(*f));

	if (f)
		pthread_mutex_init(&f->lock, NULL);
	return f;
}

static void fault_release(struct fault *r)
{
	free(r->text);
	free(r->resource);
	free(r->group);
	free(r->ns);
	free(r->name);
	free(r->message);
}

static void clear_rules(struct emu_faults *f)
{
	size_t i;

	for (i = 0; i < f->nrules; i++)
		fault_release(&f->rules[i]);
	free(f->rules);
	f->rules = NULL;
	f->nrules = 0;
}

static void clear_counters(struct emu_faults *f)
{
	size_t i;

	for (i = 0; i < f->ncounters; i++) {
		free(f->counters[i].verb);
		free(f->counters[i].sub);
	}
	free(f->counters);
	f->counters = NULL;
	f->ncounters = 0;
	f->total = 0;
}

void emu_faults_free(struct emu_faults *f)
{
	if (!f)
		return;
	clear_rules(f);
	clear_counters(f);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void emu_faults_clear(struct emu_faults *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	clear_rules(f);
	pthread_mutex_unlock(&f->lock);
}

/* splitmix64: small, and the same sequence on every platform. */
static uint64_t prng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* "200ms", "2s", "1m" or a bare number of milliseconds; at most an hour. */
static int parse_duration(const char *s, unsigned *ms)
{
	uint64_t v;

	if (clk_parse_duration(s, CLK_DURATION_BARE_MS, &v) < 0 ||
	    v > 3600ul * 1000)
		return -1;
	*ms = (unsigned)v;
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	if (!*s || *s == '-')
		return -1;
	*out = strtoul(s, &end, 10);
	return *end || *out > max ? -1 : 0;
}

/* verb=get|list: a bit per verb. */
static int parse_verbs(const char *s, unsigned *bits)
{
	const char *p = s, *bar;
	size_t len, i;

	*bits = 0;
	for (;;) {
		bar = strchr(p, '|');
		len = bar ? (size_t)(bar - p) : strlen(p);
		for (i = 0; verbs[i]; i++)
			if (strlen(verbs[i]) == len &&
			    !strncmp(verbs[i], p, len))
				break;
		if (!verbs[i])
			return -1;
		*bits |= 1u << i;
		if (!bar)
			return 0;
		p = bar + 1;
	}
}

static int set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
	return *dst ? 0 : -1;
}

/* One key=value or flag of a rule. 0, or -1 with the reason in msg. */
static int parse_item(struct fault *r, char *item, struct buf *msg)
{
	char *eq = strchr(item, '='), *v = NULL, *dot;
	unsigned long n = 0;
	int bad = 0;

	if (eq) {
		*eq = '\0';
		v = eq + 1;
	}
	if (!strcmp(item, "drop") && !v) {
		r->drop = true;
	} else if (!strcmp(item, "expire") && !v) {
		r->expire = true;
	} else if (!v) {
		buf_addf(msg, "unknown fault flag \"%s\"", item);
		return -1;
	} else if (!strcmp(item, "verb")) {
		bad = parse_verbs(v, &r->verbs);
	} else if (!strcmp(item, "resource")) {
		/* deployments.apps: plural, then the group after the dot */
		dot = strchr(v, '.');
		if (dot) {
			*dot = '\0';
			bad = set_str(&r->group, dot + 1);
		}
		if (!bad && strcmp(v, "*"))
			bad = set_str(&r->resource, v);
		if (!bad && !*v)
			bad = -1;
	} else if (!strcmp(item, "namespace")) {
		bad = set_str(&r->ns, v);
	} else if (!strcmp(item, "name")) {
		bad = set_str(&r->name, v);
	} else if (!strcmp(item, "dryRun")) {
		bad = strcmp(v, "true") && strcmp(v, "false");
		r->dry_run = !strcmp(v, "true");
	} else if (!strcmp(item, "message")) {
		bad = set_str(&r->message, v);
	} else if (!strcmp(item, "code")) {
		bad = parse_uint(v, 599, &n) || n < 400;
		r->code = (int)n;
	} else if (!strcmp(item, "retryAfter")) {
		bad = parse_uint(v, 3600, &n);
		r->retry_after = (unsigned)n;
		r->retry_after_set = true;
	} else if (!strcmp(item, "count")) {
		bad = parse_uint(v, 1000000000ul, &n);
		r->count = (long)n;
	} else if (!strcmp(item, "percent")) {
		bad = parse_uint(v, 100, &n);
		r->percent = (unsigned)n;
	} else if (!strcmp(item, "seed")) {
		bad = parse_uint(v, (unsigned long)-1, &n);
		r->prng = n;
	} else if (!strcmp(item, "latency")) {
		bad = parse_duration(v, &r->latency_ms);
	} else if (!strcmp(item, "watchEndAfter")) {
		bad = parse_duration(v, &r->watch_end_ms);
		if (!bad && !r->watch_end_ms)
			bad = -1;
	} else {
		buf_addf(msg, "unknown fault key \"%s\"", item);
		return -1;
	}
	if (bad) {
		buf_addf(msg, "invalid value for %s: \"%s\"", item, v);
		return -1;
	}
	return 0;
}

/* Parse one rule. 0, 1 when blank, or -1 (msg). */
static int parse_rule(struct fault *r, const char *text, struct buf *msg)
{
	char *save = NULL, *item, *orig, *work;
	int error = 0;

	while (*text == ' ' || *text == '\t')
		text++;
	if (!*text)
		return 1;
	memset(r, 0, sizeof(*r));
	r->count = -1;
	r->dry_run = -1;
	r->percent = 100;
	r->prng = 1;
	if (!(orig = strdup(text)) || !(work = strdup(text))) {
		free(orig);
		buf_adds(msg, "out of memory");
		return -1;
	}
	for (item = strtok_r(work, ",", &save); item && !error;
	     item = strtok_r(NULL, ",", &save)) {
		while (*item == ' ' || *item == '\t')
			item++;
		if (*item)
			error = parse_item(r, item, msg);
	}
	if (!error && !r->code && !r->drop && !r->latency_ms &&
	    !r->watch_end_ms && !r->expire) {
		buf_addf(msg, "the fault does nothing: give code=, drop, "
			      "latency=, watchEndAfter= or expire");
		error = -1;
	}
	free(work);
	if (!error && r->code && !r->retry_after_set &&
	    (r->code == 429 || r->code == 503))
		r->retry_after = 1;
	if (error) {
		fault_release(r);
		free(orig);
		return -1;
	}
	r->text = orig;
	return 0;
}

int emu_faults_add_spec(struct emu_faults *f, const char *spec, struct buf *msg)
{
	char *copy = strdup(spec ? spec : ""), *save = NULL, *text;
	struct fault *rules = NULL, *n;
	size_t nrules = 0, i;
	int error = 0, r;

	if (!copy) {
		buf_adds(msg, "out of memory");
		return -1;
	}
	for (text = strtok_r(copy, ";\n", &save); text && !error;
	     text = strtok_r(NULL, ";\n", &save)) {
		n = realloc(rules, (nrules + 1) * sizeof(*rules));
		if (!n) {
			buf_adds(msg, "out of memory");
			error = -1;
			break;
		}
		rules = n;
		r = parse_rule(&rules[nrules], text, msg);
		if (r < 0) {
			buf_addf(msg, " in fault \"%s\"", text);
			error = -1;
		} else if (r == 0) {
			nrules++;
		}
	}
	free(copy);
	if (!error && nrules) {
		pthread_mutex_lock(&f->lock);
		n = realloc(f->rules, (f->nrules + nrules) * sizeof(*n));
		if (n) {
			memcpy(n + f->nrules, rules, nrules * sizeof(*n));
			f->rules = n;
			f->nrules += nrules;
			nrules = 0;
		} else {
			buf_adds(msg, "out of memory");
			error = -1;
		}
		pthread_mutex_unlock(&f->lock);
	}
	for (i = 0; i < nrules; i++)
		fault_release(&rules[i]);
	free(rules);
	return error;
}

static unsigned verb_bit(const char *verb)
{
	size_t i;

	for (i = 0; verbs[i]; i++)
		if (!strcmp(verbs[i], verb))
			return 1u << i;
	return 0;
}

static bool selects(const struct fault *r, unsigned vbit,
		    const struct emu_resource *res, const char *ns,
		    const char *name, unsigned flags)
{
	bool lw = vbit & (verb_bit("list") | verb_bit("watch"));
	bool has_rv = flags & EMU_FAULT_HAS_RV;

	if (r->verbs && !(r->verbs & vbit))
		return false;
	if (r->resource && strcmp(r->resource, res->name))
		return false;
	if (r->group && strcmp(r->group, res->group))
		return false;
	if (r->ns && (!ns || strcmp(r->ns, ns)))
		return false;
	if (r->name && (!name || fnmatch(r->name, name, 0)))
		return false;
	if (r->dry_run >= 0 && r->dry_run != !!(flags & EMU_FAULT_DRY_RUN))
		return false;
	/* expire means something only to a list or watch resuming */
	if (r->expire && !(lw && has_rv))
		return false;
	if (r->watch_end_ms && !r->code && !r->drop && !r->latency_ms &&
	    !r->expire && vbit != verb_bit("watch"))
		return false;
	return true;
}

void emu_faults_match(struct emu_faults *f, const char *verb,
		      const struct emu_resource *res, const char *ns,
		      const char *name, unsigned flags, struct emu_fault_hit *hit)
{
	unsigned vbit = verb_bit(verb);
	struct fault *r;
	size_t i;

	memset(hit, 0, sizeof(*hit));
	if (!f || !res)
		return;
	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->nrules; i++) {
		r = &f->rules[i];
		if ((r->code || r->expire) && (hit->code || hit->expire))
			continue;
		if (!selects(r, vbit, res, ns, name, flags))
			continue;
		if (r->count >= 0 && r->fired >= (unsigned long)r->count)
			continue;
		if (r->percent < 100 && prng_next(&r->prng) % 100 >= r->percent)
			continue;
		r->fired++;
		hit->latency_ms += r->latency_ms;
		hit->drop |= r->drop;
		if (r->watch_end_ms &&
		    (!hit->watch_end_ms || r->watch_end_ms < hit->watch_end_ms))
			hit->watch_end_ms = r->watch_end_ms;
		if (r->expire)
			hit->expire = true;
		if (r->code) {
			hit->code = r->code;
			hit->retry_after = r->retry_after;
			/* a copy: the rule may be cleared meanwhile */
			snprintf(hit->message, sizeof(hit->message), "%s",
				 r->message ? r->message : "");
		}
	}
	pthread_mutex_unlock(&f->lock);
}

json_t *emu_fault_status(int code, const struct emu_resource *res,
			 const char *name, const char *message,
			 unsigned retry_after)
{
	struct buf msg = BUF_INIT, q = BUF_INIT;
	const char *reason = NULL, *detail = message;
	json_t *st, *details;

	if (res)
		emu_resource_qualified(res, &q);
	switch (code) {
	case 400:
		reason = "BadRequest";
		buf_adds(&msg, detail ? detail
				      : "the server rejected our request for "
					"an unknown reason");
		break;
	case 401:
		reason = "Unauthorized";
		buf_adds(&msg, detail ? detail : "Unauthorized");
		break;
	case 403:
		reason = "Forbidden";
		if (name)
			buf_addf(&msg, "%s \"%s\" is forbidden: %s",
				 buf_cstr(&q), name,
				 detail ? detail : "injected fault");
		else
			buf_addf(&msg, "%s is forbidden: %s", buf_cstr(&q),
				 detail ? detail : "injected fault");
		break;
	case 404:
		reason = "NotFound";
		if (name && res)
			buf_addf(&msg, "%s \"%s\" not found", buf_cstr(&q),
				 name);
		else
			buf_adds(&msg, "the server could not find the "
				       "requested resource");
		break;
	case 409:
		reason = "Conflict";
		buf_addf(&msg, "Operation cannot be fulfilled on %s \"%s\": %s",
			 buf_cstr(&q), name ? name : "",
			 detail ? detail
				: "the object has been modified; please "
				  "apply your changes to the latest version "
				  "and try again");
		break;
	case 410:
		reason = "Expired";
		buf_adds(&msg, detail ? detail
				      : "The resourceVersion for the provided "
					"list is too old.");
		break;
	case 422:
		reason = "Invalid";
		/* the qualified kind: Deployment.apps */
		buf_addf(&msg,
			 "%s%s%s \"%s\" is invalid: metadata.name: Invalid "
			 "value: \"%s\": %s",
			 res ? res->kind : "", res && *res->group ? "." : "",
			 res ? res->group : "", name ? name : "",
			 name ? name : "", detail ? detail : "injected fault");
		break;
	case 429:
		reason = "TooManyRequests";
		buf_adds(&msg, detail ? detail
				      : "Too many requests, please try again "
					"later.");
		break;
	case 500:
		reason = "InternalError";
		buf_addf(&msg, "Internal error occurred: %s",
			 detail ? detail : "injected fault");
		break;
	case 503:
		reason = "ServiceUnavailable";
		buf_adds(&msg, detail ? detail
				      : "the server is currently unable to "
					"handle the request");
		break;
	case 504:
		reason = "Timeout";
		buf_addf(&msg, "Timeout: %s",
			 detail ? detail
				: "request did not complete within requested "
				  "timeout - context deadline exceeded");
		break;
	default:
		buf_adds(&msg, detail ? detail : "injected fault");
		break;
	}
	st = emu_status_new(code, reason, buf_cstr(&msg), NULL, NULL, NULL);
	details = json_object();
	if (name && *name && code != 429 && code != 503 && code != 500)
		json_object_set_new(details, "name", json_string(name));
	if (res && (code == 403 || code == 404 || code == 409 || code == 422)) {
		if (*res->group)
			json_object_set_new(details, "group",
					    json_string(res->group));
		json_object_set_new(
			details, "kind",
			json_string(code == 422 ? res->kind : res->name));
	}
	if (code == 422)
		json_object_set_new(
			details, "causes",
			json_pack("[{s:s, s:s+, s:s}]", "reason",
				  "FieldValueInvalid", "message",
				  "Invalid value: ", name ? name : "", "field",
				  "metadata.name"));
	if (code == 500)
		json_object_set_new(
			details, "causes",
			json_pack("[{s:s}]", "message",
				  detail ? detail : "injected fault"));
	if (retry_after && (code == 429 || code == 503 || code == 504))
		json_object_set_new(details, "retryAfterSeconds",
				    json_integer(retry_after));
	if (st && json_object_size(details))
		json_object_set_new(st, "details", details);
	else
		json_decref(details);
	buf_release(&msg);
	buf_release(&q);
	return st;
}

static bool str_eq(const char *a, const char *b)
{
	return a ? b && !strcmp(a, b) : !b;
}

void emu_faults_count(struct emu_faults *f, const char *verb,
		      const struct emu_resource *res, const char *sub, int code)
{
	struct counter *c, *n;
	size_t i;

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->total++;
	for (i = 0; i < f->ncounters; i++) {
		c = &f->counters[i];
		if (c->res == res && c->code == code &&
		    !strcmp(c->verb, verb) && str_eq(c->sub, sub)) {
			c->count++;
			goto out;
		}
	}
	n = realloc(f->counters, (f->ncounters + 1) * sizeof(*n));
	if (!n)
		goto out;
	f->counters = n;
	c = &n[f->ncounters];
	c->verb = strdup(verb);
	c->sub = sub ? strdup(sub) : NULL;
	if (!c->verb || (sub && !c->sub)) {
		free(c->verb);
		free(c->sub);
		goto out;
	}
	c->res = res;
	c->code = code;
	c->count = 1;
	f->ncounters++;
out:
	pthread_mutex_unlock(&f->lock);
}

static json_t *faults_json(struct emu_faults *f)
{
	json_t *arr = json_array(), *o;
	const struct fault *r;
	struct buf vb = BUF_INIT;
	size_t i, j;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->nrules; i++) {
		r = &f->rules[i];
		o = json_pack("{s:s, s:I}", "spec", r->text, "fired",
			      (json_int_t)r->fired);
		if (!o)
			continue;
		if (r->verbs) {
			buf_reset(&vb);
			for (j = 0; verbs[j]; j++)
				if (r->verbs & (1u << j))
					buf_addf(&vb, "%s%s", vb.len ? "|" : "",
						 verbs[j]);
			json_object_set_new(o, "verb",
					    json_string(buf_cstr(&vb)));
		}
		if (r->resource || r->group) {
			buf_reset(&vb);
			buf_addf(&vb, "%s%s%s", r->resource ? r->resource : "*",
				 r->group && *r->group ? "." : "",
				 r->group ? r->group : "");
			json_object_set_new(o, "resource",
					    json_string(buf_cstr(&vb)));
		}
		if (r->ns)
			json_object_set_new(o, "namespace", json_string(r->ns));
		if (r->name)
			json_object_set_new(o, "name", json_string(r->name));
		if (r->code)
			json_object_set_new(o, "code", json_integer(r->code));
		if (r->retry_after)
			json_object_set_new(o, "retryAfter",
					    json_integer(r->retry_after));
		if (r->message)
			json_object_set_new(o, "message",
					    json_string(r->message));
		if (r->latency_ms)
			json_object_set_new(o, "latencyMs",
					    json_integer(r->latency_ms));
		if (r->drop)
			json_object_set_new(o, "drop", json_true());
		if (r->watch_end_ms)
			json_object_set_new(o, "watchEndAfterMs",
					    json_integer(r->watch_end_ms));
		if (r->expire)
			json_object_set_new(o, "expire", json_true());
		if (r->count >= 0) {
			json_object_set_new(o, "count", json_integer(r->count));
			json_object_set_new(
				o, "remaining",
				json_integer(r->count - (long)r->fired > 0
						     ? r->count - (long)r->fired
						     : 0));
		}
		if (r->percent < 100)
			json_object_set_new(o, "percent",
					    json_integer(r->percent));
		json_array_append_new(arr, o);
	}
	pthread_mutex_unlock(&f->lock);
	buf_release(&vb);
	return json_pack("{s:o}", "faults", arr);
}

static json_t *stats_json(struct emu_faults *f)
{
	json_t *arr = json_array(), *o;
	const struct counter *c;
	struct buf q = BUF_INIT;
	json_int_t total;
	size_t i;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->ncounters; i++) {
		c = &f->counters[i];
		o = json_pack("{s:s}", "verb", c->verb);
		if (!o)
			continue;
		if (c->res) {
			buf_reset(&q);
			emu_resource_qualified(c->res, &q);
			json_object_set_new(o, "resource",
					    json_string(buf_cstr(&q)));
		}
		if (c->sub)
			json_object_set_new(o, "subresource",
					    json_string(c->sub));
		json_object_set_new(o, "code", json_integer(c->code));
		json_object_set_new(o, "count",
				    json_integer((json_int_t)c->count));
		json_array_append_new(arr, o);
	}
	total = (json_int_t)f->total;
	pthread_mutex_unlock(&f->lock);
	buf_release(&q);
	return json_pack("{s:o, s:I}", "requests", arr, "total", total);
}

/*
 * A JSON body's fault: an object of the spec's keys ({"verb":"list",
 * "code":503,"drop":true}), written back as spec text.
 */
static int json_rule_text(const json_t *o, struct buf *out, struct buf *msg)
{
	const char *k;
	json_t *v;
	bool first = true;

	if (!json_is_object(o)) {
		buf_adds(msg, "a fault must be a spec string or an object");
		return -1;
	}
	json_object_foreach((json_t *)o, k, v)
	{
		if (json_is_false(v))
			continue;
		if (!first)
			buf_addch(out, ',');
		first = false;
		if (json_is_true(v)) {
			buf_adds(out, k);
		} else if (json_is_string(v)) {
			buf_addf(out, "%s=%s", k, json_string_value(v));
		} else if (json_is_integer(v)) {
			buf_addf(out, "%s=%lld", k,
				 (long long)json_integer_value(v));
		} else {
			buf_addf(msg, "invalid value for %s", k);
			return -1;
		}
	}
	return 0;
}

/* The spec text of a POST body: plain text, a JSON string, object, list. */
static int body_spec(const struct emu_request *req, struct buf *spec,
		     struct buf *msg)
{
	json_t *doc = NULL, *v;
	size_t i;
	int error = 0;

	if (req->body_len &&
	    (req->body[0] == '{' || req->body[0] == '[' || req->body[0] == '"'))
		doc = json_loadb(req->body, req->body_len, JSON_DECODE_ANY,
				 NULL);
	if (!doc) {
		buf_add(spec, req->body ? req->body : "", req->body_len);
		return 0;
	}
	if (json_is_string(doc)) {
		buf_adds(spec, json_string_value(doc));
	} else if (json_is_array(doc)) {
		json_array_foreach(doc, i, v)
		{
			if (i)
				buf_addch(spec, ';');
			if (json_is_string(v))
				buf_adds(spec, json_string_value(v));
			else if ((error = json_rule_text(v, spec, msg)) < 0)
				break;
		}
	} else {
		error = json_rule_text(doc, spec, msg);
	}
	json_decref(doc);
	return error;
}

static void method_not_allowed(struct emu_response *resp,
			       const struct emu_request *req)
{
	struct buf msg = BUF_INIT;

	buf_addf(&msg,
		 "the server does not allow this method on the "
		 "requested resource (%s %s)",
		 req->method, req->path);
	emu_reply_status(resp, 405, "MethodNotAllowed", buf_cstr(&msg));
	buf_release(&msg);
}

int emu_faults_control(struct emu_faults *f, const struct emu_request *req,
		       char **seg, size_t n, struct emu_response *resp)
{
	struct buf spec = BUF_INIT, msg = BUF_INIT;
	const char *m = req->method;

	if (n != 2 || !f ||
	    (strcmp(seg[1], "faults") && strcmp(seg[1], "stats")))
		return -1;
	if (!strcmp(seg[1], "stats")) {
		if (!strcmp(m, "DELETE")) {
			pthread_mutex_lock(&f->lock);
			clear_counters(f);
			pthread_mutex_unlock(&f->lock);
		} else if (strcmp(m, "GET")) {
			method_not_allowed(resp, req);
			return 0;
		}
		emu_reply_json(resp, 200, stats_json(f));
		return 0;
	}
	if (!strcmp(m, "GET")) {
		emu_reply_json(resp, 200, faults_json(f));
	} else if (!strcmp(m, "DELETE")) {
		emu_faults_clear(f);
		emu_reply_json(resp, 200, faults_json(f));
	} else if (!strcmp(m, "POST")) {
		if (body_spec(req, &spec, &msg) < 0 ||
		    emu_faults_add_spec(f, buf_cstr(&spec), &msg) < 0)
			emu_reply_status(resp, 400, "BadRequest",
					 buf_cstr(&msg));
		else
			emu_reply_json(resp, 201, faults_json(f));
	} else {
		method_not_allowed(resp, req);
	}
	buf_release(&spec);
	buf_release(&msg);
	return 0;
}
