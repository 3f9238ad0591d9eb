/*
 * The actors of a cluster other than the API server, reduced to what
 * syncd's tests observe:
 *
 * - a mutating admission webhook stand-in, called by the store under its
 *   lock: it injects a sidecar container, sets annotations and labels, or
 *   refuses the write with the Status kube-apiserver builds from a
 *   webhook's denial;
 * - a rollout stand-in playing kube-controller-manager: after a workload
 *   is created or its spec changes, it writes the status the controllers
 *   would once the pods are ready (or once the rollout failed).
 *
 * Both are configured from --webhook/--rollout flags or over HTTP at
 * /emu/webhooks and /emu/rollouts; both share one definition format, the
 * JSON documents those endpoints take and list, so the flag syntax is
 * only translated into it.
 *
 * Locking: the store calls emu_actors_admit() and emu_actors_notify()
 * with its lock held, and those take a->lock. The rollout thread
 * therefore never holds a->lock while it calls the store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube-emu/emu.h"
#include "util/clock.h"

#include "util/banned.h" /* last */

/* Most webhooks or rollout rules one server keeps. */
#define MAX_RULES 256
/* Longest delay a rollout rule may ask for: one hour. */
#define MAX_DELAY_MS 3600000LL
/* The manager kube-controller-manager's status writes are recorded under. */
#define KCM "kube-controller-manager"

struct webhook {
	char *name;
	json_t *def; /* the normalised definition (GET lists it) */
	/* Borrowed from def; NULL: any. */
	const json_t *groups, *kinds, *resources, *namespaces, *ops;
	struct emu_selector sel;
	const char *sc_name, *sc_image;
	const json_t *annotations, *labels;
	const char *deny; /* non-NULL: refuse with this message */
	const char *deny_reason;
	int deny_code;
};

struct rollout {
	char *name;
	json_t *def;
	const json_t *groups, *kinds, *namespaces, *names; /* NULL: any */
	long long delay_ms;
	bool fail;
};

/* One scheduled status write. */
struct pending {
	const struct emu_resource *res;
	char *ns;
	char *name;
	json_int_t gen;
	long long due_ms; /* CLOCK_MONOTONIC */
	struct pending *next;
};

struct emu_actors {
	struct emu_store *st;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* queue changed or stopping */
	struct webhook *hooks;
	size_t nhooks;
	struct rollout *rules;
	size_t nrules;
	unsigned serial; /* for default names */
	struct pending *queue;
	bool stop;
	bool thread_ok;
	pthread_t thread;
};

static const char *meta_str(const json_t *obj, const char *key)
{
	return json_string_value(
		json_object_get(json_object_get(obj, "metadata"), key));
}

/* ---- definitions ---- */

/* Is `s` one of the strings of `set` (NULL: anything)? */
static bool in_set(const json_t *set, const char *s)
{
	const json_t *v;
	size_t i;

	if (!set)
		return true;
	json_array_foreach(set, i, v)
	{
		if (!strcmp(json_string_value(v), s))
			return true;
	}
	return false;
}

/*
 * Normalise match member `key` of `in` into `out` as an array of strings
 * (a string is a one-element array). 0, or -1 with the reason in msg.
 */
static int norm_strings(json_t *out, const json_t *in, const char *key,
			const char *where, struct buf *msg)
{
	const json_t *v = json_object_get(in, key), *e;
	json_t *arr;
	size_t i;

	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v)) {
		json_object_set_new(out, key,
				    json_pack("[s]", json_string_value(v)));
		return 0;
	}
	if (!json_is_array(v))
		goto bad;
	arr = json_array();
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e)) {
			json_decref(arr);
			goto bad;
		}
		json_array_append(arr, (json_t *)e);
	}
	json_object_set_new(out, key, arr);
	return 0;
bad:
	buf_addf(msg, "%s.%s: want a string or an array of strings", where,
		 key);
	return -1;
}

/* The core group is "" in the table; accept "core" for it too. */
static void fix_core_group(json_t *match)
{
	json_t *groups = json_object_get(match, "group"), *g;
	size_t i;

	json_array_foreach(groups, i, g)
	{
		if (!strcmp(json_string_value(g), "core"))
			json_array_set_new(groups, i, json_string(""));
	}
}

static int string_map(const json_t *v, const char *what, struct buf *msg)
{
	const char *k;
	const json_t *e;

	if (!v)
		return 0;
	if (!json_is_object(v))
		goto bad;
	json_object_foreach((json_t *)v, k, e)
	{
		if (!json_is_string(e))
			goto bad;
	}
	return 0;
bad:
	buf_addf(msg, "%s: want an object of strings", what);
	return -1;
}

static void webhook_release(struct webhook *w)
{
	free(w->name);
	json_decref(w->def);
	emu_selector_release(&w->sel);
	memset(w, 0, sizeof(*w));
}

static void rollout_release(struct rollout *r)
{
	free(r->name);
	json_decref(r->def);
	memset(r, 0, sizeof(*r));
}

/*
 * Build a webhook from its JSON definition:
 * {"name","match":{"group","kind","resource","namespace","selector",
 * "operations"},"sidecar":{"name","image"},"annotations":{},"labels":{},
 * "deny":"MESSAGE" or {"message","code","reason"}}. `serial` names it
 * when the definition does not. 0, or -1 with the reason in msg.
 */
static int webhook_parse(struct webhook *w, const json_t *in, unsigned serial,
			 struct buf *msg)
{
	const json_t *match, *sc, *deny, *v;
	json_t *def = NULL, *m = NULL;
	struct buf name = BUF_INIT;
	const char *op;
	size_t i;
	int ret = -1;

	memset(w, 0, sizeof(*w));
	if (!json_is_object(in)) {
		buf_adds(msg, "webhook: want a JSON object");
		goto out;
	}
	if ((v = json_object_get(in, "name")) && !json_is_string(v)) {
		buf_adds(msg, "webhook name: want a string");
		goto out;
	}
	if (v && *json_string_value(v))
		buf_adds(&name, json_string_value(v));
	else
		buf_addf(&name, "webhook-%u.kube-emu.local", serial);
	def = json_pack("{s:s}", "name", name.ptr);
	m = json_object();
	match = json_object_get(in, "match");
	if (match && !json_is_object(match)) {
		buf_adds(msg, "webhook match: want an object");
		goto out;
	}
	if (norm_strings(m, match, "group", "match", msg) < 0 ||
	    norm_strings(m, match, "kind", "match", msg) < 0 ||
	    norm_strings(m, match, "resource", "match", msg) < 0 ||
	    norm_strings(m, match, "namespace", "match", msg) < 0 ||
	    norm_strings(m, match, "operations", "match", msg) < 0)
		goto out;
	fix_core_group(m);
	json_array_foreach(json_object_get(m, "operations"), i, v)
	{
		op = json_string_value(v);
		if (strcmp(op, "CREATE") && strcmp(op, "UPDATE")) {
			buf_addf(msg,
				 "webhook operation \"%s\": want CREATE or "
				 "UPDATE",
				 op);
			goto out;
		}
	}
	v = json_object_get(match, "selector");
	if (v && !json_is_string(v)) {
		buf_adds(msg, "webhook match.selector: want a label "
			      "selector string");
		goto out;
	}
	if (v) {
		if (emu_selector_parse(&w->sel, json_string_value(v), msg) < 0)
			goto out;
		json_object_set(m, "selector", (json_t *)v);
	}
	json_object_set_new(def, "match", m);
	m = NULL;
	sc = json_object_get(in, "sidecar");
	if (sc) {
		if (!json_is_string(json_object_get(sc, "name")) ||
		    !json_is_string(json_object_get(sc, "image")) ||
		    !*json_string_value(json_object_get(sc, "name"))) {
			buf_adds(msg, "webhook sidecar: want {\"name\":..., "
				      "\"image\":...}");
			goto out;
		}
		json_object_set_new(def, "sidecar",
				    json_pack("{s:O, s:O}", "name",
					      json_object_get(sc, "name"),
					      "image",
					      json_object_get(sc, "image")));
	}
	v = json_object_get(in, "annotations");
	if (string_map(v, "webhook annotations", msg) < 0)
		goto out;
	if (v)
		json_object_set_new(def, "annotations", json_deep_copy(v));
	v = json_object_get(in, "labels");
	if (string_map(v, "webhook labels", msg) < 0)
		goto out;
	if (v)
		json_object_set_new(def, "labels", json_deep_copy(v));
	deny = json_object_get(in, "deny");
	if (json_is_string(deny)) {
		json_object_set_new(
			def, "deny",
			json_pack("{s:O, s:i}", "message", deny, "code", 400));
	} else if (json_is_object(deny)) {
		json_int_t code = 400;

		v = json_object_get(deny, "code");
		if (v && (!json_is_integer(v) || json_integer_value(v) < 400 ||
			  json_integer_value(v) > 599)) {
			buf_adds(msg, "webhook deny.code: want 400..599");
			goto out;
		}
		if (v)
			code = json_integer_value(v);
		v = json_object_get(deny, "message");
		json_object_set_new(
			def, "deny",
			json_pack("{s:s, s:I}", "message",
				  json_is_string(v) ? json_string_value(v) : "",
				  "code", code));
		v = json_object_get(deny, "reason");
		if (json_is_string(v))
			json_object_set(json_object_get(def, "deny"), "reason",
					(json_t *)v);
	} else if (deny) {
		buf_adds(msg, "webhook deny: want a message or "
			      "{\"message\",\"code\"}");
		goto out;
	}
	/* Every pointer below borrows from def, which w now owns. */
	w->name = strdup(name.ptr);
	w->def = def;
	def = NULL;
	match = json_object_get(w->def, "match");
	w->groups = json_object_get(match, "group");
	w->kinds = json_object_get(match, "kind");
	w->resources = json_object_get(match, "resource");
	w->namespaces = json_object_get(match, "namespace");
	w->ops = json_object_get(match, "operations");
	sc = json_object_get(w->def, "sidecar");
	w->sc_name = json_string_value(json_object_get(sc, "name"));
	w->sc_image = json_string_value(json_object_get(sc, "image"));
	w->annotations = json_object_get(w->def, "annotations");
	w->labels = json_object_get(w->def, "labels");
	deny = json_object_get(w->def, "deny");
	w->deny = json_string_value(json_object_get(deny, "message"));
	w->deny_reason = json_string_value(json_object_get(deny, "reason"));
	w->deny_code = (int)json_integer_value(json_object_get(deny, "code"));
	ret = w->name ? 0 : -1;
out:
	json_decref(def);
	json_decref(m);
	buf_release(&name);
	if (ret < 0)
		webhook_release(w);
	return ret;
}

/* Milliseconds of "500ms", "2s", "1m", "1h" or "500"; -1 if malformed. */
static long long parse_duration(const char *s)
{
	uint64_t v;

	if (clk_parse_duration(s, CLK_DURATION_BARE_MS, &v) < 0 ||
	    v > MAX_DELAY_MS)
		return -1;
	return (long long)v;
}

/*
 * Build a rollout rule from {"name","match":{"group","kind","namespace",
 * "name"},"readyAfter":"500ms" or milliseconds,"fail":bool}.
 */
static int rollout_parse(struct rollout *r, const json_t *in, unsigned serial,
			 struct buf *msg)
{
	const json_t *match, *v;
	json_t *def = NULL, *m = NULL;
	struct buf name = BUF_INIT;
	long long delay = 0;
	int ret = -1;

	memset(r, 0, sizeof(*r));
	if (!json_is_object(in)) {
		buf_adds(msg, "rollout: want a JSON object");
		goto out;
	}
	if ((v = json_object_get(in, "name")) && !json_is_string(v)) {
		buf_adds(msg, "rollout name: want a string");
		goto out;
	}
	if (v && *json_string_value(v))
		buf_adds(&name, json_string_value(v));
	else
		buf_addf(&name, "rollout-%u", serial);
	match = json_object_get(in, "match");
	if (match && !json_is_object(match)) {
		buf_adds(msg, "rollout match: want an object");
		goto out;
	}
	m = json_object();
	if (norm_strings(m, match, "group", "match", msg) < 0 ||
	    norm_strings(m, match, "kind", "match", msg) < 0 ||
	    norm_strings(m, match, "namespace", "match", msg) < 0 ||
	    norm_strings(m, match, "name", "match", msg) < 0)
		goto out;
	fix_core_group(m);
	v = json_object_get(in, "readyAfter");
	if (json_is_integer(v)) {
		delay = json_integer_value(v);
		if (delay < 0 || delay > MAX_DELAY_MS)
			delay = -1;
	} else if (json_is_string(v)) {
		delay = parse_duration(json_string_value(v));
	} else if (v) {
		delay = -1;
	}
	if (delay < 0) {
		buf_adds(msg, "rollout readyAfter: want milliseconds or a "
			      "duration such as \"500ms\" or \"2s\" (at most "
			      "1h)");
		goto out;
	}
	v = json_object_get(in, "fail");
	if (v && !json_is_boolean(v)) {
		buf_adds(msg, "rollout fail: want true or false");
		goto out;
	}
	def = json_pack("{s:s, s:O, s:I, s:b}", "name", name.ptr, "match", m,
			"readyAfterMs", (json_int_t)delay, "fail",
			json_is_true(v));
	r->name = strdup(name.ptr);
	r->def = def;
	def = NULL;
	match = json_object_get(r->def, "match");
	r->groups = json_object_get(match, "group");
	r->kinds = json_object_get(match, "kind");
	r->namespaces = json_object_get(match, "namespace");
	r->names = json_object_get(match, "name");
	r->delay_ms = delay;
	r->fail = json_is_true(v);
	ret = r->name ? 0 : -1;
out:
	json_decref(def);
	json_decref(m);
	buf_release(&name);
	if (ret < 0)
		rollout_release(r);
	return ret;
}

/* Add or replace (same name) a definition. Lock held. */
static int add_webhook(struct emu_actors *a, const json_t *in, bool *replaced,
		       struct buf *msg)
{
	struct webhook w, *n;
	size_t i;

	if (webhook_parse(&w, in, a->serial + 1, msg) < 0)
		return -1;
	a->serial++;
	*replaced = false;
	for (i = 0; i < a->nhooks; i++) {
		if (!strcmp(a->hooks[i].name, w.name)) {
			webhook_release(&a->hooks[i]);
			a->hooks[i] = w;
			*replaced = true;
			return 0;
		}
	}
	if (a->nhooks == MAX_RULES ||
	    !(n = realloc(a->hooks, (a->nhooks + 1) * sizeof(*n)))) {
		buf_adds(msg, "too many webhooks");
		webhook_release(&w);
		return -1;
	}
	a->hooks = n;
	a->hooks[a->nhooks++] = w;
	return 0;
}

static int add_rollout(struct emu_actors *a, const json_t *in, bool *replaced,
		       struct buf *msg)
{
	struct rollout r, *n;
	size_t i;

	if (rollout_parse(&r, in, a->serial + 1, msg) < 0)
		return -1;
	a->serial++;
	*replaced = false;
	for (i = 0; i < a->nrules; i++) {
		if (!strcmp(a->rules[i].name, r.name)) {
			rollout_release(&a->rules[i]);
			a->rules[i] = r;
			*replaced = true;
			return 0;
		}
	}
	if (a->nrules == MAX_RULES ||
	    !(n = realloc(a->rules, (a->nrules + 1) * sizeof(*n)))) {
		buf_adds(msg, "too many rollout rules");
		rollout_release(&r);
		return -1;
	}
	a->rules = n;
	a->rules[a->nrules++] = r;
	return 0;
}

/* ---- the flag syntax ---- */

/* Append `alts` ("a|b|c") as strings to array member `key` of obj. */
static void add_alternatives(json_t *obj, const char *key, const char *alts)
{
	json_t *arr = json_object_get(obj, key);
	const char *p = alts, *bar;

	if (!json_is_array(arr)) {
		arr = json_array();
		json_object_set_new(obj, key, arr);
	}
	for (;;) {
		bar = strchr(p, '|');
		json_array_append_new(
			arr,
			json_stringn(p, bar ? (size_t)(bar - p) : strlen(p)));
		if (!bar)
			break;
		p = bar + 1;
	}
}

/* Set obj[map][K] = V from "K=V". -1 without '='. */
static int add_pair(json_t *obj, const char *map, const char *kv)
{
	const char *eq = strchr(kv, '=');
	json_t *m = json_object_get(obj, map);
	char *key;

	if (!eq || eq == kv)
		return -1;
	if (!m) {
		m = json_object();
		json_object_set_new(obj, map, m);
	}
	key = strndup(kv, (size_t)(eq - kv));
	if (!key)
		return -1;
	json_object_set_new(m, key, json_string(eq + 1));
	free(key);
	return 0;
}

/*
 * Split a flag's text at the commas that are not inside parentheses
 * (so that "selector=tier in (a,b)" stays whole); each item is passed to
 * fn. -1 when fn fails.
 */
static int split_items(const char *spec,
		       int (*fn)(json_t *def, const char *key,
				 const char *value, struct buf *msg),
		       json_t *def, struct buf *msg)
{
	struct buf item = BUF_INIT;
	const char *p = spec, *eq;
	char *key = NULL;
	int depth = 0, ret = 0;

	for (;; p++) {
		if (*p && (*p != ',' || depth > 0)) {
			if (*p == '(')
				depth++;
			else if (*p == ')' && depth > 0)
				depth--;
			buf_addch(&item, *p);
			continue;
		}
		if (item.len) {
			eq = strchr(item.ptr, '=');
			free(key);
			key = eq ? strndup(item.ptr, (size_t)(eq - item.ptr))
				 : strdup(item.ptr);
			if (!key || fn(def, key, eq ? eq + 1 : NULL, msg) < 0) {
				ret = -1;
				break;
			}
		}
		buf_reset(&item);
		if (!*p)
			break;
	}
	free(key);
	buf_release(&item);
	return ret;
}

static json_t *match_of(json_t *def)
{
	json_t *m = json_object_get(def, "match");

	if (!m) {
		m = json_object();
		json_object_set_new(def, "match", m);
	}
	return m;
}

static int webhook_item(json_t *def, const char *key, const char *value,
			struct buf *msg)
{
	const char *colon;
	char *sel, *c;

	if (!value) {
		buf_addf(msg, "webhook: \"%s\" needs a value", key);
		return -1;
	}
	if (!strcmp(key, "name")) {
		json_object_set_new(def, "name", json_string(value));
	} else if (!strcmp(key, "group") || !strcmp(key, "kind") ||
		   !strcmp(key, "resource") || !strcmp(key, "namespace")) {
		add_alternatives(match_of(def), key, value);
	} else if (!strcmp(key, "ns")) {
		add_alternatives(match_of(def), "namespace", value);
	} else if (!strcmp(key, "operations") || !strcmp(key, "op")) {
		add_alternatives(match_of(def), "operations", value);
	} else if (!strcmp(key, "selector")) {
		/* ';' stands for ',' so that the flag stays one list. */
		sel = strdup(value);
		if (!sel)
			return -1;
		for (c = sel; *c; c++)
			if (*c == ';')
				*c = ',';
		json_object_set_new(match_of(def), "selector",
				    json_string(sel));
		free(sel);
	} else if (!strcmp(key, "sidecar")) {
		colon = strchr(value, ':');
		if (!colon || colon == value || !colon[1]) {
			buf_addf(msg, "webhook sidecar \"%s\": want NAME:IMAGE",
				 value);
			return -1;
		}
		json_object_set_new(def, "sidecar",
				    json_pack("{s:s%, s:s}", "name", value,
					      (size_t)(colon - value), "image",
					      colon + 1));
	} else if (!strcmp(key, "annotation") || !strcmp(key, "label")) {
		if (add_pair(def, *key == 'a' ? "annotations" : "labels",
			     value) < 0) {
			buf_addf(msg, "webhook %s \"%s\": want KEY=VALUE", key,
				 value);
			return -1;
		}
	} else if (!strcmp(key, "deny")) {
		json_t *d = json_object_get(def, "deny");

		if (!d) {
			d = json_object();
			json_object_set_new(def, "deny", d);
		}
		json_object_set_new(d, "message", json_string(value));
	} else if (!strcmp(key, "code")) {
		json_t *d = json_object_get(def, "deny");
		char *end;
		long code = strtol(value, &end, 10);

		if (*end || end == value) {
			buf_addf(msg, "webhook code \"%s\": want a number",
				 value);
			return -1;
		}
		if (!d) {
			d = json_object();
			json_object_set_new(def, "deny", d);
		}
		json_object_set_new(d, "code", json_integer(code));
	} else {
		buf_addf(msg, "webhook: unknown key \"%s\"", key);
		return -1;
	}
	return 0;
}

static int rollout_item(json_t *def, const char *key, const char *value,
			struct buf *msg)
{
	if (!strcmp(key, "fail")) {
		if (value && strcmp(value, "true") && strcmp(value, "false")) {
			buf_addf(msg, "rollout fail=\"%s\": want true or false",
				 value);
			return -1;
		}
		json_object_set_new(
			def, "fail",
			json_boolean(!value || !strcmp(value, "true")));
		return 0;
	}
	if (!value) {
		buf_addf(msg, "rollout: \"%s\" needs a value", key);
		return -1;
	}
	if (!strcmp(key, "ready-after")) {
		json_object_set_new(def, "readyAfter", json_string(value));
	} else if (!strcmp(key, "rule")) {
		json_object_set_new(def, "name", json_string(value));
	} else if (!strcmp(key, "group") || !strcmp(key, "kind") ||
		   !strcmp(key, "namespace") || !strcmp(key, "name")) {
		add_alternatives(match_of(def), key, value);
	} else if (!strcmp(key, "ns")) {
		add_alternatives(match_of(def), "namespace", value);
	} else {
		buf_addf(msg, "rollout: unknown key \"%s\"", key);
		return -1;
	}
	return 0;
}

/* The JSON definition a flag's text stands for (new reference) or NULL. */
static json_t *spec_to_json(const char *what, const char *spec, struct buf *msg)
{
	json_t *def = json_object();
	bool hook = !strcmp(what, "webhook");

	if (split_items(spec, hook ? webhook_item : rollout_item, def, msg) <
	    0) {
		json_decref(def);
		return NULL;
	}
	return def;
}

static int configure_json(struct emu_actors *a, bool hook, const json_t *def,
			  bool *replaced, struct buf *msg)
{
	int ret;

	pthread_mutex_lock(&a->lock);
	ret = hook ? add_webhook(a, def, replaced, msg)
		   : add_rollout(a, def, replaced, msg);
	pthread_mutex_unlock(&a->lock);
	return ret;
}

int emu_actors_configure(struct emu_actors *a, const char *what,
			 const char *spec, struct buf *msg)
{
	json_t *def;
	bool replaced;
	int ret;

	if (strcmp(what, "webhook") && strcmp(what, "rollout")) {
		buf_addf(msg, "%s: not an actor (want webhook or rollout)",
			 what);
		return -1;
	}
	def = spec_to_json(what, spec, msg);
	if (!def)
		return -1;
	ret = configure_json(a, !strcmp(what, "webhook"), def, &replaced, msg);
	json_decref(def);
	return ret;
}

/* ---- admission ---- */

/*
 * Set on the rollout thread while it writes a status: a webhook on
 * "deployments" does not see writes to "deployments/status" in
 * Kubernetes, and the store's admission call cannot tell them apart.
 */
static _Thread_local bool writing_status;

/* The pod spec inside an object of `res`, or NULL. */
static json_t *pod_spec_of(const struct emu_resource *res, json_t *obj)
{
	static const char *const templated[] = {
		"Deployment", "StatefulSet", "DaemonSet",
		"ReplicaSet", "Job",	     "ReplicationController",
		NULL};
	const char *const *k;
	json_t *spec = json_object_get(obj, "spec");

	if (!strcmp(res->kind, "Pod"))
		return spec;
	if (!strcmp(res->kind, "PodTemplate"))
		return json_object_get(json_object_get(obj, "template"),
				       "spec");
	if (!strcmp(res->kind, "CronJob"))
		spec = json_object_get(json_object_get(spec, "jobTemplate"),
				       "spec");
	else {
		for (k = templated; *k; k++)
			if (!strcmp(res->kind, *k))
				break;
		if (!*k)
			return NULL;
	}
	return json_object_get(json_object_get(spec, "template"), "spec");
}

/*
 * Append the sidecar unless a container of its name exists. kube-apiserver
 * defaults an object again after a webhook's patch, so the container gets
 * the defaults of a bare container.
 */
static void inject_sidecar(const struct webhook *w,
			   const struct emu_resource *res, json_t *obj)
{
	json_t *spec = pod_spec_of(res, obj), *cs, *c;
	const char *img = w->sc_image, *slash, *colon;
	bool latest;
	size_t i;

	if (!json_is_object(spec))
		return;
	cs = json_object_get(spec, "containers");
	if (!json_is_array(cs)) {
		cs = json_array();
		json_object_set_new(spec, "containers", cs);
	}
	json_array_foreach(cs, i, c)
	{
		if (!strcmp(json_string_value(json_object_get(c, "name")) ?: "",
			    w->sc_name))
			return;
	}
	/* "Always" for ":latest" or no tag (a digest counts as a tag). */
	slash = strrchr(img, '/');
	colon = strrchr(slash ? slash : img, ':');
	latest = !strchr(img, '@') && (!colon || !strcmp(colon, ":latest"));
	json_array_append_new(
		cs, json_pack("{s:s, s:s, s:s, s:{}, s:s, s:s}", "name",
			      w->sc_name, "image", img, "imagePullPolicy",
			      latest ? "Always" : "IfNotPresent", "resources",
			      "terminationMessagePath", "/dev/termination-log",
			      "terminationMessagePolicy", "File"));
}

static void set_map(json_t *obj, const char *key, const json_t *values)
{
	json_t *meta = json_object_get(obj, "metadata"), *m;

	if (!values || !json_object_size(values))
		return;
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(obj, "metadata", meta);
	}
	m = json_object_get(meta, key);
	if (!json_is_object(m)) {
		m = json_object();
		json_object_set_new(meta, key, m);
	}
	json_object_update(m, (json_t *)values);
}

static bool webhook_matches(const struct webhook *w,
			    const struct emu_resource *res, const char *op,
			    const json_t *obj)
{
	const char *ns = meta_str(obj, "namespace");

	if (!in_set(w->ops, op) || !in_set(w->groups, res->group) ||
	    !in_set(w->kinds, res->kind) || !in_set(w->resources, res->name))
		return false;
	if (w->namespaces && (!ns || !in_set(w->namespaces, ns)))
		return false;
	return emu_selector_matches(
		&w->sel,
		json_object_get(json_object_get(obj, "metadata"), "labels"));
}

json_t *emu_actors_admit(struct emu_actors *a, const struct emu_resource *res,
			 const char *op, json_t *obj)
{
	struct buf msg = BUF_INIT;
	json_t *status = NULL;
	const struct webhook *w;
	size_t i;

	if (!a || writing_status)
		return NULL;
	pthread_mutex_lock(&a->lock);
	for (i = 0; i < a->nhooks; i++) {
		w = &a->hooks[i];
		if (!webhook_matches(w, res, op, obj))
			continue;
		if (w->deny) {
			/* As apiserver's webhook error: no reason by default.
			 */
			buf_addf(&msg,
				 "admission webhook \"%s\" denied the "
				 "request",
				 w->name);
			if (*w->deny)
				buf_addf(&msg, ": %s", w->deny);
			else
				buf_adds(&msg, " without explanation");
			status = emu_status_new(w->deny_code, w->deny_reason,
						msg.ptr, NULL, NULL, NULL);
			json_object_del(status, "details");
			break;
		}
		if (w->sc_name)
			inject_sidecar(w, res, obj);
		set_map(obj, "annotations", w->annotations);
		set_map(obj, "labels", w->labels);
	}
	pthread_mutex_unlock(&a->lock);
	buf_release(&msg);
	return status;
}

/* ---- rollouts ---- */

enum workload { WL_NONE, WL_DEPLOYMENT, WL_STATEFULSET, WL_DAEMONSET, WL_JOB };

static enum workload workload_of(const struct emu_resource *res)
{
	if (!strcmp(res->group, "apps")) {
		if (!strcmp(res->kind, "Deployment"))
			return WL_DEPLOYMENT;
		if (!strcmp(res->kind, "StatefulSet"))
			return WL_STATEFULSET;
		if (!strcmp(res->kind, "DaemonSet"))
			return WL_DAEMONSET;
	} else if (!strcmp(res->group, "batch") && !strcmp(res->kind, "Job")) {
		return WL_JOB;
	}
	return WL_NONE;
}

static bool has_condition(const json_t *obj, const char *type)
{
	const json_t *conds = json_object_get(json_object_get(obj, "status"),
					      "conditions"),
		     *c;
	size_t i;

	json_array_foreach(conds, i, c)
	{
		if (!strcmp(json_string_value(json_object_get(c, "type")) ?: "",
			    type) &&
		    !strcmp(json_string_value(json_object_get(c, "status"))
				    ?: "",
			    "True"))
			return true;
	}
	return false;
}

/* Does the object's status lag behind what the controller would write? */
static bool needs_status(enum workload wl, const json_t *obj)
{
	json_int_t gen, seen;

	if (wl == WL_JOB)
		return !has_condition(obj, "Complete") &&
		       !has_condition(obj, "Failed") &&
		       !json_is_true(json_object_get(
			       json_object_get(obj, "spec"), "suspend"));
	gen = json_integer_value(json_object_get(
		json_object_get(obj, "metadata"), "generation"));
	seen = json_integer_value(json_object_get(
		json_object_get(obj, "status"), "observedGeneration"));
	return gen != seen;
}

/* The last rule that matches, or NULL. Lock held. */
static const struct rollout *rule_for(const struct emu_actors *a,
				      const struct emu_resource *res,
				      const json_t *obj)
{
	const char *ns = meta_str(obj, "namespace") ?: "";
	const char *name = meta_str(obj, "name") ?: "";
	const struct rollout *r;
	size_t i;

	for (i = a->nrules; i-- > 0;) {
		r = &a->rules[i];
		if (in_set(r->groups, res->group) &&
		    in_set(r->kinds, res->kind) && in_set(r->namespaces, ns) &&
		    in_set(r->names, name))
			return r;
	}
	return NULL;
}

static void pending_free(struct pending *p)
{
	if (!p)
		return;
	free(p->ns);
	free(p->name);
	free(p);
}

void emu_actors_notify(struct emu_actors *a, const struct emu_resource *res,
		       const json_t *obj)
{
	enum workload wl = workload_of(res);
	const struct rollout *r;
	struct pending *p, **tail;
	const char *ns = meta_str(obj, "namespace") ?: "";
	const char *name = meta_str(obj, "name");
	json_int_t gen;

	if (!a || wl == WL_NONE || !name || !needs_status(wl, obj))
		return;
	gen = json_integer_value(json_object_get(
		json_object_get(obj, "metadata"), "generation"));
	pthread_mutex_lock(&a->lock);
	r = rule_for(a, res, obj);
	if (!r || a->stop)
		goto out;
	/* One pending write per object: a newer generation restarts it. */
	for (tail = &a->queue; *tail; tail = &(*tail)->next) {
		p = *tail;
		if (p->res == res && !strcmp(p->ns, ns) &&
		    !strcmp(p->name, name)) {
			if (p->gen != gen) {
				p->gen = gen;
				p->due_ms = clk_mono_ms() + r->delay_ms;
				pthread_cond_signal(&a->wake);
			}
			goto out;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		goto out;
	p->res = res;
	p->ns = strdup(ns);
	p->name = strdup(name);
	p->gen = gen;
	p->due_ms = clk_mono_ms() + r->delay_ms;
	if (!p->ns || !p->name) {
		pending_free(p);
		goto out;
	}
	*tail = p;
	pthread_cond_signal(&a->wake);
out:
	pthread_mutex_unlock(&a->lock);
}

/*
 * The pod-template hash the controllers put in ReplicaSet and revision
 * names: FNV-1a of the template, its decimal digits mapped onto the
 * alphabet of rand.SafeEncodeString.
 */
static void template_hash(const json_t *obj, char out[16])
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	const json_t *tmpl =
		json_object_get(json_object_get(obj, "spec"), "template");
	char *s = json_dumps(tmpl, JSON_COMPACT | JSON_SORT_KEYS);
	uint32_t h = 2166136261u;
	char digits[16];
	const char *p;
	size_t i;

	for (p = s ? s : ""; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 16777619u;
	}
	free(s);
	snprintf(digits, sizeof(digits), "%u", (unsigned)h);
	for (i = 0; digits[i]; i++)
		out[i] = alphabet[(unsigned char)digits[i] %
				  (sizeof(alphabet) - 1)];
	out[i] = '\0';
}

/*
 * A condition of `type`; lastTransitionTime stays what it was when the
 * old status had the same condition with the same status.
 */
static json_t *condition(const json_t *old_status, const char *type, bool ok,
			 const char *reason, const char *message,
			 const char *time_key)
{
	const json_t *conds = json_object_get(old_status, "conditions"), *c;
	const char *status = ok ? "True" : "False", *since = NULL;
	char now[32];
	json_t *cond;
	size_t i;

	clk_rfc3339_format(time(NULL), now);
	json_array_foreach(conds, i, c)
	{
		if (!strcmp(json_string_value(json_object_get(c, "type")) ?: "",
			    type) &&
		    !strcmp(json_string_value(json_object_get(c, "status"))
				    ?: "",
			    status))
			since = json_string_value(
				json_object_get(c, "lastTransitionTime"));
	}
	cond = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status",
			 status, "lastTransitionTime", since ? since : now,
			 "reason", reason, "message", message);
	json_object_set_new(cond, time_key, json_string(now));
	return cond;
}

/* Set `key` unless zero (Go's omitempty). */
static void set_count(json_t *st, const char *key, json_int_t v)
{
	if (v)
		json_object_set_new(st, key, json_integer(v));
}

static json_int_t replicas_of(const json_t *obj)
{
	const json_t *r =
		json_object_get(json_object_get(obj, "spec"), "replicas");

	return json_is_integer(r) ? json_integer_value(r) : 1;
}

static json_t *deployment_status(const json_t *obj, bool fail)
{
	const json_t *old = json_object_get(obj, "status");
	json_int_t n = replicas_of(obj);
	struct buf msg = BUF_INIT;
	json_t *st = json_object(), *conds = json_array();
	char hash[16];

	template_hash(obj, hash);
	set_count(st, "observedGeneration",
		  json_integer_value(json_object_get(
			  json_object_get(obj, "metadata"), "generation")));
	set_count(st, "replicas", n);
	set_count(st, "updatedReplicas", n);
	if (!fail) {
		set_count(st, "readyReplicas", n);
		set_count(st, "availableReplicas", n);
		buf_addf(&msg,
			 "ReplicaSet \"%s-%s\" has successfully progressed.",
			 meta_str(obj, "name"), hash);
		json_array_append_new(
			conds, condition(old, "Available", true,
					 "MinimumReplicasAvailable",
					 "Deployment has minimum availability.",
					 "lastUpdateTime"));
		json_array_append_new(conds,
				      condition(old, "Progressing", true,
						"NewReplicaSetAvailable",
						msg.ptr, "lastUpdateTime"));
	} else {
		set_count(st, "unavailableReplicas", n);
		buf_addf(&msg,
			 "ReplicaSet \"%s-%s\" has timed out progressing.",
			 meta_str(obj, "name"), hash);
		json_array_append_new(
			conds,
			condition(old, "Available", !n,
				  n ? "MinimumReplicasUnavailable"
				    : "MinimumReplicasAvailable",
				  n ? "Deployment does not have minimum "
				      "availability."
				    : "Deployment has minimum availability.",
				  "lastUpdateTime"));
		json_array_append_new(conds,
				      condition(old, "Progressing", false,
						"ProgressDeadlineExceeded",
						msg.ptr, "lastUpdateTime"));
	}
	json_object_set_new(st, "conditions", conds);
	buf_release(&msg);
	return st;
}

static json_t *statefulset_status(const json_t *obj, bool fail)
{
	json_int_t n = replicas_of(obj);
	json_t *st = json_object();
	char hash[16], rev[300];

	template_hash(obj, hash);
	snprintf(rev, sizeof(rev), "%s-%s", meta_str(obj, "name"), hash);
	set_count(st, "observedGeneration",
		  json_integer_value(json_object_get(
			  json_object_get(obj, "metadata"), "generation")));
	json_object_set_new(st, "replicas", json_integer(n));
	if (!fail)
		set_count(st, "readyReplicas", n);
	set_count(st, "currentReplicas", n);
	set_count(st, "updatedReplicas", n);
	json_object_set_new(st, "availableReplicas",
			    json_integer(fail ? 0 : n));
	json_object_set_new(st, "currentRevision", json_string(rev));
	json_object_set_new(st, "updateRevision", json_string(rev));
	json_object_set_new(st, "collisionCount", json_integer(0));
	return st;
}

/* A DaemonSet runs on the one node the emulated cluster has. */
static json_t *daemonset_status(const json_t *obj, bool fail)
{
	json_t *st =
		json_pack("{s:i, s:i, s:i, s:i}", "currentNumberScheduled", 1,
			  "desiredNumberScheduled", 1, "numberMisscheduled", 0,
			  "numberReady", fail ? 0 : 1);

	set_count(st, "observedGeneration",
		  json_integer_value(json_object_get(
			  json_object_get(obj, "metadata"), "generation")));
	json_object_set_new(st, "updatedNumberScheduled", json_integer(1));
	if (fail)
		json_object_set_new(st, "numberUnavailable", json_integer(1));
	else
		json_object_set_new(st, "numberAvailable", json_integer(1));
	return st;
}

/*
 * A finished Job, as the job controller (1.31 and later) leaves it: the interim
 * condition (SuccessCriteriaMet or FailureTarget) beside the terminal one.
 */
static json_t *job_status(const json_t *obj, bool fail)
{
	const json_t *old = json_object_get(obj, "status");
	const json_t *spec = json_object_get(obj, "spec"), *v;
	const char *started =
		json_string_value(json_object_get(old, "startTime"));
	json_t *st, *conds = json_array();
	json_int_t completions = 1, backoff = 6;
	const char *reason, *message;
	char now[32];

	clk_rfc3339_format(time(NULL), now);
	if (json_is_integer(v = json_object_get(spec, "completions")))
		completions = json_integer_value(v);
	if (json_is_integer(v = json_object_get(spec, "backoffLimit")))
		backoff = json_integer_value(v);
	st = json_pack("{s:s, s:i, s:i, s:{}}", "startTime",
		       started ? started : now, "ready", 0, "terminating", 0,
		       "uncountedTerminatedPods");
	if (!fail) {
		reason = "CompletionsReached";
		message = "Reached expected number of succeeded pods";
		set_count(st, "succeeded", completions);
		json_object_set_new(st, "completionTime", json_string(now));
		json_array_append_new(
			conds, condition(old, "SuccessCriteriaMet", true,
					 reason, message, "lastProbeTime"));
		json_array_append_new(conds,
				      condition(old, "Complete", true, reason,
						message, "lastProbeTime"));
	} else {
		reason = "BackoffLimitExceeded";
		message = "Job has reached the specified backoff limit";
		json_object_set_new(st, "failed", json_integer(backoff + 1));
		json_array_append_new(conds, condition(old, "FailureTarget",
						       true, reason, message,
						       "lastProbeTime"));
		json_array_append_new(conds,
				      condition(old, "Failed", true, reason,
						message, "lastProbeTime"));
	}
	json_object_set_new(st, "conditions", conds);
	return st;
}

/*
 * Write the status of one object, as its controller would. The object
 * is read again: when it moved on to another generation since this
 * write was scheduled, a newer one is queued and this one is dropped. The
 * write carries the read resourceVersion, so a change in between fails
 * it with 409 instead of overwriting; that change queued its own.
 */
static void roll_out(struct emu_actors *a, const struct pending *p)
{
	enum workload wl = workload_of(p->res);
	const struct rollout *r;
	json_t *obj = NULL, *body = NULL, *out = NULL, *status = NULL;
	bool fail;

	if (emu_store_get(a->st, p->res, p->ns, p->name, &obj) != 200)
		goto out;
	if (json_integer_value(json_object_get(json_object_get(obj, "metadata"),
					       "generation")) != p->gen ||
	    !needs_status(wl, obj))
		goto out;
	pthread_mutex_lock(&a->lock);
	r = rule_for(a, p->res, obj);
	fail = r && r->fail;
	pthread_mutex_unlock(&a->lock);
	if (!r)
		goto out;
	switch (wl) {
	case WL_DEPLOYMENT:
		status = deployment_status(obj, fail);
		break;
	case WL_STATEFULSET:
		status = statefulset_status(obj, fail);
		break;
	case WL_DAEMONSET:
		status = daemonset_status(obj, fail);
		break;
	case WL_JOB:
		status = job_status(obj, fail);
		break;
	case WL_NONE:
		goto out;
	}
	body = json_deep_copy(obj);
	json_object_set_new(body, "status", status);
	status = NULL;
	writing_status = true;
	emu_store_update(a->st, p->res, p->ns, p->name, "status", KCM, body,
			 false, &out);
	writing_status = false;
out:
	json_decref(obj);
	json_decref(body);
	json_decref(out);
	json_decref(status);
}

static void *rollout_thread(void *arg)
{
	struct emu_actors *a = arg;
	struct pending **pp, **first, *p;
	struct timespec ts;
	long long now;

	pthread_mutex_lock(&a->lock);
	while (!a->stop) {
		first = NULL;
		for (pp = &a->queue; *pp; pp = &(*pp)->next)
			if (!first || (*pp)->due_ms < (*first)->due_ms)
				first = pp;
		if (!first) {
			pthread_cond_wait(&a->wake, &a->lock);
			continue;
		}
		now = clk_mono_ms();
		if ((*first)->due_ms > now) {
			ts.tv_sec = (time_t)((*first)->due_ms / 1000);
			ts.tv_nsec = (long)((*first)->due_ms % 1000) * 1000000;
			pthread_cond_timedwait(&a->wake, &a->lock, &ts);
			continue;
		}
		p = *first;
		*first = p->next;
		pthread_mutex_unlock(&a->lock);
		roll_out(a, p);
		pending_free(p);
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* ---- lifecycle ---- */

struct emu_actors *emu_actors_new(struct emu_store *st)
{
	struct emu_actors *a = calloc(1, sizeof(*a));
	pthread_condattr_t attr;

	if (!a)
		return NULL;
	a->st = st;
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&a->wake, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&a->thread, NULL, rollout_thread, a) != 0) {
		emu_actors_free(a);
		return NULL;
	}
	a->thread_ok = true;
	pthread_mutex_lock(&st->lock);
	st->actors = a;
	pthread_mutex_unlock(&st->lock);
	return a;
}

static void clear_webhooks(struct emu_actors *a)
{
	size_t i;

	for (i = 0; i < a->nhooks; i++)
		webhook_release(&a->hooks[i]);
	free(a->hooks);
	a->hooks = NULL;
	a->nhooks = 0;
}

/* Drop the rules and every pending write. Lock held. */
static void clear_rollouts(struct emu_actors *a)
{
	struct pending *p;
	size_t i;

	for (i = 0; i < a->nrules; i++)
		rollout_release(&a->rules[i]);
	free(a->rules);
	a->rules = NULL;
	a->nrules = 0;
	while ((p = a->queue)) {
		a->queue = p->next;
		pending_free(p);
	}
}

void emu_actors_free(struct emu_actors *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_broadcast(&a->wake);
	pthread_mutex_unlock(&a->lock);
	if (a->thread_ok)
		pthread_join(a->thread, NULL);
	if (a->st) {
		pthread_mutex_lock(&a->st->lock);
		if (a->st->actors == a)
			a->st->actors = NULL;
		pthread_mutex_unlock(&a->st->lock);
	}
	clear_webhooks(a);
	clear_rollouts(a);
	pthread_cond_destroy(&a->wake);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* ---- /emu/webhooks and /emu/rollouts ---- */

/*
 * The definition of a POST body: a JSON object, or the flag's text (for
 * curl -d 'kind=Deployment,sidecar=...').
 */
static json_t *body_definition(const struct emu_request *req, bool hook,
			       struct buf *msg)
{
	json_error_t jerr;
	const char *p = req->body;
	size_t i = 0;
	char *text;
	json_t *def;

	while (p && i < req->body_len &&
	       (p[i] == ' ' || p[i] == '\n' || p[i] == '\t' || p[i] == '\r'))
		i++;
	if (!p || i == req->body_len) {
		buf_adds(msg, "empty body");
		return NULL;
	}
	if (p[i] == '{') {
		def = json_loadb(p, req->body_len, 0, &jerr);
		if (!def)
			buf_addf(msg, "body: %s", jerr.text);
		return def;
	}
	text = strndup(p + i, req->body_len - i);
	if (!text)
		return NULL;
	i = strlen(text);
	while (i && (text[i - 1] == '\n' || text[i - 1] == '\r' ||
		     text[i - 1] == ' '))
		text[--i] = '\0';
	def = spec_to_json(hook ? "webhook" : "rollout", text, msg);
	free(text);
	return def;
}

int emu_actors_control(struct emu_actors *a, const struct emu_request *req,
		       char **seg, size_t n, struct emu_response *resp)
{
	bool hook, replaced = false;
	const char *m = req->method, *kind;
	struct buf msg = BUF_INIT;
	json_t *list = NULL, *def = NULL, *found = NULL;
	size_t i, count, deleted = 0;

	if (!a || n < 2 || n > 3 || strcmp(seg[0], "emu") ||
	    (strcmp(seg[1], "webhooks") && strcmp(seg[1], "rollouts")))
		return -1;
	hook = !strcmp(seg[1], "webhooks");
	kind = hook ? "webhook" : "rollout rule";
	pthread_mutex_lock(&a->lock);
	count = hook ? a->nhooks : a->nrules;
	if (!strcmp(m, "GET")) {
		list = json_array();
		for (i = 0; i < count; i++) {
			const char *name =
				hook ? a->hooks[i].name : a->rules[i].name;
			json_t *d = hook ? a->hooks[i].def : a->rules[i].def;

			if (n == 3 && !strcmp(name, seg[2]))
				found = json_incref(d);
			json_array_append(list, d);
		}
	} else if (!strcmp(m, "DELETE") && n == 2) {
		deleted = count;
		if (hook)
			clear_webhooks(a);
		else
			clear_rollouts(a);
	} else if (!strcmp(m, "DELETE")) {
		for (i = 0; i < count; i++) {
			if (hook && !strcmp(a->hooks[i].name, seg[2])) {
				webhook_release(&a->hooks[i]);
				memmove(&a->hooks[i], &a->hooks[i + 1],
					(count - i - 1) * sizeof(*a->hooks));
				a->nhooks--;
				deleted = 1;
				break;
			}
			if (!hook && !strcmp(a->rules[i].name, seg[2])) {
				rollout_release(&a->rules[i]);
				memmove(&a->rules[i], &a->rules[i + 1],
					(count - i - 1) * sizeof(*a->rules));
				a->nrules--;
				deleted = 1;
				break;
			}
		}
	}
	pthread_mutex_unlock(&a->lock);

	if (!strcmp(m, "GET") && n == 2) {
		emu_reply_json(resp, 200,
			       json_pack("{s:o}",
					 hook ? "webhooks" : "rollouts", list));
		list = NULL;
	} else if (!strcmp(m, "GET") ||
		   (!strcmp(m, "DELETE") && n == 3 && !deleted)) {
		if (found) {
			emu_reply_json(resp, 200, found);
			found = NULL;
		} else {
			buf_addf(&msg, "%s \"%s\" not found", kind, seg[2]);
			emu_reply_status(resp, 404, "NotFound", msg.ptr);
		}
	} else if (!strcmp(m, "DELETE")) {
		emu_reply_json(
			resp, 200,
			json_pack("{s:I}", "deleted", (json_int_t)deleted));
	} else if (!strcmp(m, "POST") && n == 2) {
		def = body_definition(req, hook, &msg);
		if (!def || configure_json(a, hook, def, &replaced, &msg) < 0) {
			emu_reply_status(resp, 400, "BadRequest",
					 msg.len ? msg.ptr : "out of memory");
			goto out;
		}
		/*
		 * Answer with the stored, normalised definition: the one of
		 * the body's name when it replaced another, else the last.
		 */
		pthread_mutex_lock(&a->lock);
		count = hook ? a->nhooks : a->nrules;
		for (i = 0; i < count; i++) {
			json_t *d = hook ? a->hooks[i].def : a->rules[i].def;
			const char *want =
				json_string_value(json_object_get(def, "name"));

			if (replaced ? want && !strcmp(want,
						       hook ? a->hooks[i].name
							    : a->rules[i].name)
				     : i + 1 == count) {
				found = json_incref(d);
				break;
			}
		}
		pthread_mutex_unlock(&a->lock);
		emu_reply_json(resp, replaced ? 200 : 201, found);
		found = NULL;
	} else {
		buf_addf(&msg, "the server does not allow this method on the "
			       "requested resource");
		emu_reply_status(resp, 405, "MethodNotAllowed", msg.ptr);
	}
out:
	json_decref(list);
	json_decref(def);
	json_decref(found);
	buf_release(&msg);
	return 0;
}
