/*
 * The API operations syncd needs, on top of kube_request() and
 * kube_stream(): get, paginated list, create, update, server-side apply,
 * delete, watch with resume and relist, and Events.
 *
 * Messages: kube's Status message usually names the object already
 * ("configmaps \"web\" not found"); when it does not (an apply conflict,
 * a connection error), the object is put in front, so that every error
 * line says what it is about.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/kube.h"
#include "util/json.h"

#include "util/banned.h" /* last */

/* A watch event line is one object; kube caps objects at 1.5 MiB in etcd. */
#define WATCH_LINE_MAX (16u << 20)
/*
 * A watch stream silent this long is taken for dead and reopened: the
 * real API server sends a watch that allows bookmarks one every minute
 * (and the server ends every stream after timeoutSeconds anyway). The
 * stop flag is looked at about once a second regardless.
 */
#define WATCH_IDLE_MS 90000L
/* Reconnect backoff: base, cap, and failed attempts in a row before giving up.
 */
#define WATCH_BACKOFF_MS     200L
#define WATCH_BACKOFF_CAP_MS 10000L
#define WATCH_MAX_FAILURES   10
/* kube's limit on an Event's note. */
#define EVENT_NOTE_MAX 1024
/* generateName's base is cut so that base + 5 random chars fit in 63. */
#define GENERATE_NAME_MAX 58

/* Escape one path segment or query value: RFC 3986 unreserved kept. */
static void add_escaped(struct buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
		    ch == '_' || ch == '~') {
			buf_addch(out, (char)ch);
		} else {
			buf_addch(out, '%');
			buf_addch(out, hex[ch >> 4]);
			buf_addch(out, hex[ch & 15]);
		}
	}
}

void kube_path(struct buf *out, const struct kube_resource *r, const char *ns,
	       const char *name, const char *sub)
{
	if (*r->group) {
		buf_adds(out, "/apis/");
		add_escaped(out, r->group);
		buf_addch(out, '/');
	} else {
		buf_adds(out, "/api/");
	}
	add_escaped(out, r->version);
	if (r->namespaced && ns && *ns) {
		buf_adds(out, "/namespaces/");
		add_escaped(out, ns);
	}
	buf_addch(out, '/');
	add_escaped(out, r->name);
	if (name) {
		buf_addch(out, '/');
		add_escaped(out, name);
		if (sub) {
			buf_addch(out, '/');
			add_escaped(out, sub);
		}
	}
}

/* Append "?k=v" or "&k=v" with v escaped. */
static void add_query(struct buf *out, const char *key, const char *value)
{
	buf_addch(out, strchr(buf_cstr(out), '?') ? '&' : '?');
	buf_adds(out, key);
	buf_addch(out, '=');
	add_escaped(out, value);
}

/* "deployments.apps \"web\" in namespace \"ns\"" or "... \"web\"". */
static void describe(struct buf *out, const struct kube_resource *r,
		     const char *ns, const char *name)
{
	buf_adds(out, r->name);
	if (*r->group)
		buf_addf(out, ".%s", r->group);
	if (name)
		buf_addf(out, " \"%s\"", name);
	if (r->namespaced && ns && *ns)
		buf_addf(out, " in namespace \"%s\"", ns);
}

/*
 * Pass a failed request's message on, naming the object in front unless
 * the server's message already quotes its name. Returns `code`.
 */
static int fail(struct err *err, struct err *local, int code, const char *verb,
		const struct kube_resource *r, const char *ns, const char *name)
{
	struct buf what = BUF_INIT, quoted = BUF_INIT;
	const char *msg = err_first(local);

	if (name)
		buf_addf(&quoted, "\"%s\"", name);
	if (name && strstr(msg, quoted.ptr ? quoted.ptr : "")) {
		err_set(err, code, "%s", msg);
	} else {
		describe(&what, r, ns, name);
		err_set(err, code, "%s %s: %s", verb, buf_cstr(&what),
			*msg ? msg : "request failed");
	}
	buf_release(&what);
	buf_release(&quoted);
	return code;
}

int kube_get(struct kube_client *c, const struct kube_resource *r,
	     const char *ns, const char *name, json_t **out, struct err *err)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err local = ERR_INIT;
	struct buf path = BUF_INIT;
	int error;

	*out = NULL;
	kube_path(&path, r, ns, name, NULL);
	error = kube_request(c, "GET", buf_cstr(&path), NULL, NULL, 0, &resp,
			     &local);
	if (error < 0) {
		fail(err, &local, error, "get", r, ns, name);
		goto out;
	}
	if (!json_is_object(resp.json)) {
		error = err_set(err, ERR_PARSE, "get %s: not a JSON object",
				buf_cstr(&path));
		goto out;
	}
	*out = json_incref(resp.json);
out:
	kube_response_release(&resp);
	err_release(&local);
	buf_release(&path);
	return error;
}

/* "ConfigMapList" -> "ConfigMap"; a kind not ending in "List" as is. */
static char *item_kind(const char *list_kind, const struct kube_resource *r)
{
	size_t n;

	if (!list_kind)
		return strdup(r->kind);
	n = strlen(list_kind);
	if (n > 4 && !strcmp(list_kind + n - 4, "List"))
		return strndup(list_kind, n - 4);
	return strdup(r->kind);
}

static void api_version(struct buf *out, const struct kube_resource *r)
{
	if (*r->group)
		buf_addf(out, "%s/%s", r->group, r->version);
	else
		buf_adds(out, r->version);
}

/*
 * One pass over every page. *expired tells a 410 on a continue token
 * (the caller starts again); the 410's message stays in `local`.
 */
/*
 * The pages of a LIST: appended to `items`, or, with `page_fn`, handed
 * to it one page at a time (a non-zero return stops the list and is
 * returned).
 */
static int list_pages(struct kube_client *c, const struct kube_resource *r,
		      const char *ns, const struct kube_list_options *opts,
		      json_t *items, char **rv, bool *expired,
		      int (*page_fn)(json_t *page, void *ctx), void *page_ctx,
		      struct err *local)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct buf path = BUF_INIT, av = BUF_INIT;
	char *cont = NULL, *kind = NULL, limit[24];
	unsigned page = opts && opts->page_size ? opts->page_size : 500;
	int error = 0;

	*expired = false;
	snprintf(limit, sizeof(limit), "%u", page);
	api_version(&av, r);
	do {
		json_t *list_items, *it, *meta;
		const char *next;
		size_t i;

		buf_reset(&path);
		kube_path(&path, r, ns, NULL, NULL);
		add_query(&path, "limit", limit);
		if (opts && opts->label_selector && *opts->label_selector)
			add_query(&path, "labelSelector", opts->label_selector);
		if (opts && opts->field_selector && *opts->field_selector)
			add_query(&path, "fieldSelector", opts->field_selector);
		if (cont)
			add_query(&path, "continue", cont);
		kube_response_release(&resp);
		error = kube_request_list(c, buf_cstr(&path),
					  page_fn && opts ? opts->take : NULL,
					  opts ? opts->take_ctx : NULL, &resp,
					  local);
		if (error < 0) {
			*expired = cont && resp.code == 410;
			goto out;
		}
		list_items = json_object_get(resp.json, "items");
		if (!json_is_array(list_items) && !json_is_null(list_items)) {
			error = err_set(local, ERR_PARSE,
					"the list has no items array");
			goto out;
		}
		if (!kind &&
		    !(kind = item_kind(json_string_value(json_object_get(
					       resp.json, "kind")),
				       r))) {
			error = err_set(local, ERR_NOMEM, "out of memory");
			goto out;
		}
		json_array_foreach(list_items, i, it)
		{
			if (!json_is_object(it))
				continue;
			if (!json_object_get(it, "kind"))
				json_object_set_new(it, "kind",
						    json_string(kind));
			if (!json_object_get(it, "apiVersion"))
				json_object_set_new(it, "apiVersion",
						    json_string(av.ptr));
			if (!page_fn)
				json_array_append(items, it);
		}
		if (page_fn && json_is_array(list_items) &&
		    (error = page_fn(list_items, page_ctx)) != 0)
			goto out;
		meta = json_object_get(resp.json, "metadata");
		if (rv) {
			const char *v = json_string_value(
				json_object_get(meta, "resourceVersion"));

			free(*rv);
			*rv = v ? strdup(v) : NULL;
		}
		next = json_string_value(json_object_get(meta, "continue"));
		free(cont);
		cont = next && *next ? strdup(next) : NULL;
	} while (cont);
out:
	free(cont);
	free(kind);
	buf_release(&path);
	buf_release(&av);
	kube_response_release(&resp);
	return error;
}

int kube_list(struct kube_client *c, const struct kube_resource *r,
	      const char *ns, const struct kube_list_options *opts,
	      json_t **items, char **rv, struct err *err)
{
	struct err local = ERR_INIT;
	json_t *arr = NULL;
	char *version = NULL;
	bool expired = false;
	int error, attempt;

	*items = NULL;
	if (rv)
		*rv = NULL;
	/*
	 * A continue token expires when the list takes longer than the
	 * server keeps its snapshot (kube: 5 minutes of compaction); the
	 * list starts over once, from a fresh snapshot.
	 */
	for (attempt = 0; attempt < 2; attempt++) {
		json_decref(arr);
		free(version);
		version = NULL;
		err_reset(&local);
		if (!(arr = json_array())) {
			error = err_set(err, ERR_NOMEM, "list: out of memory");
			goto out;
		}
		error = list_pages(c, r, ns, opts, arr, rv ? &version : NULL,
				   &expired, NULL, NULL, &local);
		if (error >= 0 || !expired)
			break;
	}
	if (error < 0) {
		fail(err, &local, error, "list", r, ns, NULL);
		goto out;
	}
	*items = arr;
	arr = NULL;
	if (rv) {
		*rv = version;
		version = NULL;
	}
out:
	json_decref(arr);
	free(version);
	err_release(&local);
	return error;
}

/* kube_list_each()'s page function: `again` on a list's first page. */
struct each {
	int (*fn)(json_t *items, bool again, void *ctx);
	void *ctx;
	bool again;
};

static int each_page(json_t *page, void *ctx)
{
	struct each *e = ctx;
	bool again = e->again;

	e->again = false;
	return e->fn(page, again, e->ctx);
}

int kube_list_each(struct kube_client *c, const struct kube_resource *r,
		   const char *ns, const struct kube_list_options *opts,
		   int (*fn)(json_t *items, bool again, void *ctx), void *ctx,
		   struct err *err)
{
	struct err local = ERR_INIT;
	struct each e = {fn, ctx, false};
	bool expired = false;
	int error = 0;

	/* As kube_list(): an expired continue token starts over once. */
	for (int attempt = 0; attempt < 2; attempt++) {
		err_reset(&local);
		e.again = attempt > 0;
		error = list_pages(c, r, ns, opts, NULL, NULL, &expired,
				   each_page, &e, &local);
		if (error >= 0 || !expired)
			break;
	}
	if (error < 0 && err_count(&local))
		fail(err, &local, error, "list", r, ns, NULL);
	err_release(&local);
	return error;
}

/* metadata.namespace and metadata.name of an object (may be NULL). */
static void object_names(const json_t *obj, const char **ns, const char **name)
{
	json_t *meta = json_object_get(obj, "metadata");

	*ns = json_string_value(json_object_get(meta, "namespace"));
	*name = json_string_value(json_object_get(meta, "name"));
}

/*
 * The name and namespace a whole-object write (`verb`) goes to: the
 * object's, which must have a name, and a namespace when the resource is
 * namespaced.
 */
static int write_target(const char *verb, const struct kube_resource *r,
			const json_t *obj, const char **ns, const char **name,
			struct err *err)
{
	object_names(obj, ns, name);
	if (!*name || !**name)
		return err_set(err, ERR_INVALID, "%s %s: no metadata.name",
			       verb, r->kind);
	if (r->namespaced && (!*ns || !**ns))
		return err_set(err, ERR_INVALID,
			       "%s %s \"%s\": no metadata.namespace", verb,
			       r->kind, *name);
	return 0;
}

/* The stored object a write answered with, into *out when asked. */
static int write_answer(const char *verb, const struct kube_resource *r,
			const char *name, const struct kube_response *resp,
			json_t **out, struct err *err)
{
	if (!out)
		return 0;
	if (!json_is_object(resp->json))
		return err_set(err, ERR_PARSE,
			       "%s %s \"%s\": the answer is not an object",
			       verb, r->kind, name);
	*out = json_incref(resp->json);
	return 0;
}

int kube_apply(struct kube_client *c, const struct kube_resource *r,
	       const json_t *obj, const struct kube_apply_options *opts,
	       json_t **out, struct err *err)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err local = ERR_INIT;
	struct buf path = BUF_INIT;
	const char *ns, *name;
	char *body = NULL;
	int error;

	if (out)
		*out = NULL;
	if ((error = write_target("apply", r, obj, &ns, &name, err)) < 0)
		goto out;
	if (!opts || !opts->field_manager || !*opts->field_manager) {
		error = err_set(err, ERR_INVALID,
				"apply %s \"%s\": no field manager", r->kind,
				name);
		goto out;
	}
	kube_path(&path, r, ns, name, NULL);
	add_query(&path, "fieldManager", opts->field_manager);
	if (opts->force)
		add_query(&path, "force", "true");
	if (opts->dry_run)
		add_query(&path, "dryRun", "All");
	/* JSON is YAML: kube's apply-patch+yaml decoder takes it as is. */
	body = json_dumps(obj, JSON_COMPACT);
	if (!body) {
		error = err_set(err, ERR_NOMEM, "apply: out of memory");
		goto out;
	}
	error = kube_request(c, "PATCH", buf_cstr(&path),
			     "application/apply-patch+yaml", body, strlen(body),
			     &resp, &local);
	if (error < 0) {
		fail(err, &local, error, "apply", r, ns, name);
		goto out;
	}
	error = write_answer("apply", r, name, &resp, out, err);
out:
	free(body);
	kube_response_release(&resp);
	err_release(&local);
	buf_release(&path);
	return error;
}

/*
 * kube_create() and kube_update(): one JSON write of a whole object, to
 * the collection (POST) or to the object itself (PUT).
 */
static int write_object(struct kube_client *c, const struct kube_resource *r,
			const json_t *obj, bool create, json_t **out,
			struct err *err)
{
	const char *verb = create ? "create" : "update";
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err local = ERR_INIT;
	struct buf path = BUF_INIT;
	const char *ns, *name;
	char *body = NULL;
	int error;

	if (out)
		*out = NULL;
	if ((error = write_target(verb, r, obj, &ns, &name, err)) < 0)
		goto out;
	kube_path(&path, r, ns, create ? NULL : name, NULL);
	body = json_dumps(obj, JSON_COMPACT);
	if (!body) {
		error = err_set(err, ERR_NOMEM, "%s: out of memory", verb);
		goto out;
	}
	error = kube_request(c, create ? "POST" : "PUT", buf_cstr(&path),
			     "application/json", body, strlen(body), &resp,
			     &local);
	if (error < 0) {
		fail(err, &local, error, verb, r, ns, name);
		goto out;
	}
	error = write_answer(verb, r, name, &resp, out, err);
out:
	free(body);
	kube_response_release(&resp);
	err_release(&local);
	buf_release(&path);
	return error;
}

int kube_create(struct kube_client *c, const struct kube_resource *r,
		const json_t *obj, json_t **out, struct err *err)
{
	return write_object(c, r, obj, true, out, err);
}

int kube_update(struct kube_client *c, const struct kube_resource *r,
		const json_t *obj, json_t **out, struct err *err)
{
	return write_object(c, r, obj, false, out, err);
}

int kube_delete(struct kube_client *c, const struct kube_resource *r,
		const char *ns, const char *name,
		const struct kube_delete_options *opts, struct err *err)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err local = ERR_INIT;
	struct buf path = BUF_INIT;
	json_t *body = NULL, *pre = NULL;
	char *text = NULL;
	int error;

	kube_path(&path, r, ns, name, NULL);
	if (opts && opts->dry_run)
		add_query(&path, "dryRun", "All");
	body = json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions",
			 "apiVersion", "v1", "propagationPolicy",
			 opts && opts->propagation ? opts->propagation
						   : "Background");
	pre = json_object();
	if (!body || !pre) {
		error = err_set(err, ERR_NOMEM, "delete: out of memory");
		goto out;
	}
	if (opts && opts->uid)
		json_object_set_new(pre, "uid", json_string(opts->uid));
	if (opts && opts->resource_version)
		json_object_set_new(pre, "resourceVersion",
				    json_string(opts->resource_version));
	if (json_object_size(pre))
		json_object_set(body, "preconditions", pre);
	if (opts && opts->dry_run)
		json_object_set_new(body, "dryRun", json_pack("[s]", "All"));
	if (!(text = json_dumps(body, JSON_COMPACT))) {
		error = err_set(err, ERR_NOMEM, "delete: out of memory");
		goto out;
	}
	error = kube_request(c, "DELETE", buf_cstr(&path), "application/json",
			     text, strlen(text), &resp, &local);
	if (error < 0)
		fail(err, &local, error, "delete", r, ns, name);
out:
	free(text);
	json_decref(body);
	json_decref(pre);
	kube_response_release(&resp);
	err_release(&local);
	buf_release(&path);
	return error;
}

/* ------------------------------------------------------------------ */
/* Watch */

struct watch_state {
	int (*fn)(const struct kube_watch_event *ev, void *ctx);
	void *ctx;
	const volatile bool *stop;
	char *rv;	  /* the last resourceVersion seen */
	bool expired;	  /* an ERROR event with 410 came */
	bool stopped;	  /* *stop was seen */
	int fn_ret;	  /* fn's non-zero value */
	unsigned events;  /* events in this stream */
	struct buf error; /* an ERROR event's message */
};

/* Sentinel a line callback returns to end the stream. */
#define STREAM_END 1

static void remember_rv(struct watch_state *st, json_t *obj)
{
	const char *v = json_string_value(json_object_get(
		json_object_get(obj, "metadata"), "resourceVersion"));
	char *copy;

	if (v && *v && (copy = strdup(v))) {
		free(st->rv);
		st->rv = copy;
	}
}

static int watch_line(const char *data, size_t len, void *ctx)
{
	struct watch_state *st = ctx;
	struct kube_watch_event ev;
	json_t *line, *obj;
	const char *type;
	int ret = 0;

	if (st->stop && *st->stop) {
		st->stopped = true;
		return STREAM_END;
	}
	if (!len)
		return 0;
	line = fastjson_load(data, len, NULL, NULL);
	type = json_string_value(json_object_get(line, "type"));
	obj = json_object_get(line, "object");
	if (!type || !json_is_object(obj)) {
		/* Not an event: end this stream; the watch reopens. */
		buf_reset(&st->error);
		buf_adds(&st->error, "a watch line is not an event");
		ret = STREAM_END;
		goto out;
	}
	if (!strcmp(type, "ERROR")) {
		json_int_t code =
			json_integer_value(json_object_get(obj, "code"));
		const char *msg =
			json_string_value(json_object_get(obj, "message"));

		st->expired = code == 410;
		buf_reset(&st->error);
		buf_addf(&st->error, "%s (%lld)", msg ? msg : "watch error",
			 (long long)code);
		ret = STREAM_END;
		goto out;
	}
	remember_rv(st, obj);
	st->events++;
	ev.type = type;
	ev.object = obj;
	if ((st->fn_ret = st->fn(&ev, st->ctx)))
		ret = STREAM_END;
	else if (st->stop && *st->stop)
		st->stopped = true, ret = STREAM_END;
out:
	json_decref(line);
	return ret;
}

/* Sleep `ms` in small steps, returning early when *stop turns true. */
static void nap(long ms, const volatile bool *stop)
{
	struct timespec ts;

	while (ms > 0 && !(stop && *stop)) {
		long step = ms < 100 ? ms : 100;

		ts.tv_sec = 0;
		ts.tv_nsec = step * 1000000L;
		nanosleep(&ts, NULL);
		ms -= step;
	}
}

/* A pseudo-random 0..n-1 from the clock: enough to spread reconnects. */
static long jitter(long n)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)((unsigned long)ts.tv_nsec % (unsigned long)n);
}

/* One page of a paged re-list: a RELIST_PAGE event. */
static int relist_page(json_t *page, void *ctx)
{
	struct watch_state *st = ctx;
	struct kube_watch_event ev = {"RELIST_PAGE", page};

	st->fn_ret = st->fn(&ev, st->ctx);
	return st->fn_ret;
}

/*
 * A paged re-list: RELIST_BEGIN, RELIST_PAGE for each page, RELIST_END
 * once the list is complete (its resourceVersion is then the watch's).
 */
static int relist_paged(struct kube_client *c, const struct kube_resource *r,
			const char *ns, const struct kube_watch_options *opts,
			struct watch_state *st, struct err *err)
{
	struct kube_list_options lo = {0};
	struct kube_watch_event ev = {"RELIST_BEGIN", NULL};
	struct err local = ERR_INIT;
	char *rv = NULL;
	bool expired = false;
	int error;

	lo.label_selector = opts->label_selector;
	if ((st->fn_ret = st->fn(&ev, st->ctx)) != 0)
		return 0;
	error = list_pages(c, r, ns, &lo, NULL, &rv, &expired, relist_page, st,
			   &local);
	if (st->fn_ret) {
		error = 0; /* the callback stopped it: its return says why */
		goto out;
	}
	if (error < 0) {
		fail(err, &local, error, "list", r, ns, NULL);
		goto out;
	}
	free(st->rv);
	st->rv = rv;
	rv = NULL;
	ev.type = "RELIST_END";
	st->fn_ret = st->fn(&ev, st->ctx);
out:
	free(rv);
	err_release(&local);
	return error;
}

/* List, hand the items to fn as a RELIST event, continue from its rv. */
static int relist(struct kube_client *c, const struct kube_resource *r,
		  const char *ns, const struct kube_watch_options *opts,
		  struct watch_state *st, struct err *err)
{
	struct kube_list_options lo = {0};
	struct kube_watch_event ev;
	json_t *items = NULL;
	char *rv = NULL;
	int error;

	if (opts && opts->paged_relist)
		return relist_paged(c, r, ns, opts, st, err);
	lo.label_selector = opts ? opts->label_selector : NULL;
	error = kube_list(c, r, ns, &lo, &items, &rv, err);
	if (error < 0)
		goto out;
	free(st->rv);
	st->rv = rv;
	rv = NULL;
	ev.type = "RELIST";
	ev.object = items;
	st->fn_ret = st->fn(&ev, st->ctx);
out:
	json_decref(items);
	free(rv);
	return error;
}

int kube_watch(struct kube_client *c, const struct kube_resource *r,
	       const char *ns, const struct kube_watch_options *opts,
	       int (*fn)(const struct kube_watch_event *ev, void *ctx),
	       void *ctx, const volatile bool *stop, struct err *err)
{
	struct watch_state st = {0};
	struct buf path = BUF_INIT;
	struct err local = ERR_INIT;
	unsigned failures = 0;
	long backoff = WATCH_BACKOFF_MS;
	char timeout[24];
	bool need_list;
	int error = 0, ret;

	st.fn = fn;
	st.ctx = ctx;
	st.stop = stop;
	snprintf(timeout, sizeof(timeout), "%u",
		 opts && opts->timeout_s ? opts->timeout_s : 300);
	need_list =
		!opts || !opts->resource_version || !*opts->resource_version;
	if (!need_list && !(st.rv = strdup(opts->resource_version))) {
		error = err_set(err, ERR_NOMEM, "watch: out of memory");
		goto out;
	}
	while (!(stop && *stop)) {
		if (need_list) {
			err_reset(&local);
			error = relist(c, r, ns, opts, &st, &local);
			if (error == ERR_INVALID || error == ERR_NOTFOUND) {
				/* Refused or gone: trying again will not help. */
				err_move(err, &local);
				goto out;
			}
			if (error < 0)
				goto failed;
			need_list = false;
			if (st.fn_ret)
				break;
			if (stop && *stop)
				break;
		}
		buf_reset(&path);
		kube_path(&path, r, ns, NULL, NULL);
		add_query(&path, "watch", "1");
		if (!opts || opts->bookmarks)
			add_query(&path, "allowWatchBookmarks", "true");
		if (opts && opts->label_selector && *opts->label_selector)
			add_query(&path, "labelSelector", opts->label_selector);
		add_query(&path, "resourceVersion", st.rv ? st.rv : "0");
		add_query(&path, "timeoutSeconds", timeout);
		st.expired = false;
		st.events = 0;
		buf_reset(&st.error);
		err_reset(&local);
		ret = kube_stream(c, buf_cstr(&path), WATCH_IDLE_MS, stop,
				  watch_line, &st, &local);
		if (st.fn_ret || st.stopped)
			break;
		if (st.expired) {
			/* Too old for the server's history: start over. */
			need_list = true;
			continue;
		}
		if (ret == 0 || (ret == ERR_TIMEOUT &&
				 strstr(err_first(&local), "no data for"))) {
			/*
			 * The server ended the stream (timeoutSeconds, a
			 * restart), it stayed silent too long, or the stop
			 * flag closed it: reopen from the last
			 * resourceVersion seen, unless stopping.
			 */
			failures = 0;
			backoff = WATCH_BACKOFF_MS;
			continue;
		}
		if (ret == ERR_LIMIT && strstr(err_first(&local), "(410 ")) {
			/* A server that answers the request itself with 410. */
			need_list = true;
			continue;
		}
		if (ret == ERR_INVALID || ret == ERR_NOTFOUND) {
			/* Refused (403, 404, 400): trying again will not help.
			 */
			error = fail(err, &local, ret, "watch", r, ns, NULL);
			goto out;
		}
		if (ret == STREAM_END && st.events) {
			failures = 0;
			backoff = WATCH_BACKOFF_MS;
		}
		if (ret == STREAM_END && st.error.len)
			err_set(&local, ERR_GENERIC, "%s", st.error.ptr);
		error = ret < 0 ? ret : ERR_GENERIC;
	failed:
		if (++failures >= WATCH_MAX_FAILURES) {
			fail(err, &local, error, "watch", r, ns, NULL);
			goto out;
		}
		/* Bounded exponential backoff with some jitter. */
		nap(backoff / 2 + jitter(backoff / 2 + 1), stop);
		backoff = backoff * 2 > WATCH_BACKOFF_CAP_MS
				  ? WATCH_BACKOFF_CAP_MS
				  : backoff * 2;
		error = 0;
	}
	error = st.fn_ret;
out:
	free(st.rv);
	buf_release(&st.error);
	buf_release(&path);
	err_release(&local);
	return error;
}

/* ------------------------------------------------------------------ */
/* Events */

/* kube's MicroTime: "2026-11-29T10:00:00.000000Z". */
static void micro_time(char *out, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char sec[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, size, "%.20s.%06uZ", sec,
		 (unsigned)(ts.tv_nsec / 1000) % 1000000u);
}

/* Copy a string member if present. */
static void copy_member(json_t *dst, const char *key, json_t *src,
			const char *from)
{
	json_t *v = json_object_get(src, from);

	if (json_is_string(v))
		json_object_set(dst, key, v);
}

int kube_event_create(struct kube_client *c, const struct kube_event *ev,
		      struct err *err)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err local = ERR_INIT;
	struct buf path = BUF_INIT, gen = BUF_INIT;
	json_t *meta, *obj = NULL, *ref = NULL;
	const char *ns, *name, *kind;
	const char *note = ev->note ? ev->note : "";
	char when[64], *body = NULL;
	int error;

	meta = json_object_get(ev->regarding, "metadata");
	kind = json_string_value(json_object_get(ev->regarding, "kind"));
	ns = json_string_value(json_object_get(meta, "namespace"));
	name = json_string_value(json_object_get(meta, "name"));
	if (!ns || !*ns)
		ns = "default";
	if (!name || !*name) {
		error = err_set(err, ERR_INVALID,
				"event: the object has no metadata.name");
		goto out;
	}
	/* kube appends 5 random characters to generateName. */
	buf_add(&gen, name,
		strlen(name) > GENERATE_NAME_MAX - 1 ? GENERATE_NAME_MAX - 1
						     : strlen(name));
	buf_addch(&gen, '-');
	micro_time(when, sizeof(when));
	ref = json_object();
	copy_member(ref, "kind", (json_t *)ev->regarding, "kind");
	copy_member(ref, "apiVersion", (json_t *)ev->regarding, "apiVersion");
	copy_member(ref, "namespace", meta, "namespace");
	copy_member(ref, "name", meta, "name");
	copy_member(ref, "uid", meta, "uid");
	copy_member(ref, "resourceVersion", meta, "resourceVersion");
	obj = json_pack(
		"{s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:s%, "
		"s:s, s:O}",
		"apiVersion", "events.k8s.io/v1", "kind", "Event", "metadata",
		"generateName", buf_cstr(&gen), "namespace", ns, "eventTime",
		when, "reportingController",
		ev->controller ? ev->controller : "syncd.io/syncd",
		"reportingInstance", ev->instance ? ev->instance : "syncd",
		"action", ev->action ? ev->action : "Sync", "reason",
		ev->reason ? ev->reason : "Unknown", "note", note,
		utf8_cut(note, strlen(note), EVENT_NOTE_MAX), "type",
		ev->type ? ev->type : "Normal", "regarding", ref);
	if (!ref || !obj || !(body = json_dumps(obj, JSON_COMPACT))) {
		error = err_set(err, ERR_NOMEM, "event: out of memory");
		goto out;
	}
	buf_adds(&path, "/apis/events.k8s.io/v1/namespaces/");
	add_escaped(&path, ns);
	buf_adds(&path, "/events");
	error = kube_request(c, "POST", buf_cstr(&path), "application/json",
			     body, strlen(body), &resp, &local);
	if (error < 0)
		err_set(err, error, "create event about %s \"%s\": %s",
			kind ? kind : "object", name, err_first(&local));
out:
	free(body);
	json_decref(obj);
	json_decref(ref);
	kube_response_release(&resp);
	err_release(&local);
	buf_release(&path);
	buf_release(&gen);
	return error;
}
