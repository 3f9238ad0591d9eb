/*
 * Watches: a bounded history of events (the last EMU_WATCH_HISTORY
 * writes) to replay from a resourceVersion, and one queue of JSON lines
 * per open watch, fed by the writers under the store's mutex and read by
 * the HTTP layer, which waits on the store's condition variable.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

struct emu_watch {
	struct emu_store *st;
	struct emu_watch *next;
	const struct emu_resource *res;
	char *ns; /* NULL: every namespace */
	struct emu_selector labels;
	struct emu_field_selector fields;
	struct buf queue; /* pending lines, capped at EMU_WATCH_QUEUE_MAX */
	bool ended;	  /* no more events: the queue drains, then -1 */
	bool bookmarks;
	bool table;	   /* events carry meta.k8s.io Tables (kubectl get -w) */
	bool sent_headers; /* the first Table went out with its columns */
	bool bookmark_due; /* next_bookmark is set */
	struct timespec next_bookmark;
	struct timespec deadline; /* tv_sec 0: none */
	uint64_t rv; /* the newest resourceVersion the watch has seen */
};

static void ts_add_ms(struct timespec *t, long ms)
{
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static bool ts_reached(const struct timespec *now, const struct timespec *t)
{
	return now->tv_sec > t->tv_sec ||
	       (now->tv_sec == t->tv_sec && now->tv_nsec >= t->tv_nsec);
}

static const struct timespec *ts_min(const struct timespec *a,
				     const struct timespec *b)
{
	return ts_reached(a, b) ? b : a;
}

static bool field_ok(const char *want, bool negated, const char *have)
{
	if (!want)
		return true;
	return negated ? strcmp(want, have) != 0 : strcmp(want, have) == 0;
}

static bool matches(const struct emu_watch *w, const struct emu_resource *res,
		    const char *ns, const char *name, const json_t *obj)
{
	if (res != w->res || (w->ns && strcmp(w->ns, ns)))
		return false;
	if (!field_ok(w->fields.name, w->fields.name_negated, name) ||
	    !field_ok(w->fields.ns, w->fields.ns_negated, ns))
		return false;
	return emu_selector_matches(
		&w->labels,
		json_object_get(json_object_get(obj, "metadata"), "labels"));
}

static uint64_t rv_of(const json_t *obj)
{
	const char *rvs = json_string_value(json_object_get(
		json_object_get(obj, "metadata"), "resourceVersion"));

	return rvs ? strtoull(rvs, NULL, 10) : 0;
}

/* Queue one event line; a full queue ends the watch. Lock held. */
static void enqueue(struct emu_watch *w, const char *type, const json_t *obj)
{
	json_t *ev, *one, *table = NULL;
	char *s;

	if (w->table && strcmp(type, "ERROR") && strcmp(type, "BOOKMARK")) {
		/* Only the first Table carries the column definitions. */
		one = json_pack("[O]", obj);
		table = emu_table_new(w->res, one, NULL, !w->sent_headers);
		json_decref(one);
		w->sent_headers = true;
		obj = table;
	}
	if (strcmp(type, "ERROR") && rv_of(obj) > w->rv)
		w->rv = rv_of(obj);
	ev = json_pack("{s:s, s:O}", "type", type, "object", obj);
	json_decref(table);
	s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;

	if (!s || buf_adds(&w->queue, s) < 0 || buf_addch(&w->queue, '\n') < 0)
		w->ended = true;
	free(s);
	json_decref(ev);
}

/*
 * obj with kind and apiVersion, as events carry them: a shallow copy, as
 * stored objects (whose members it shares) never change in place.
 */
static json_t *event_object(const struct emu_resource *res, const json_t *obj)
{
	struct buf av = BUF_INIT;
	json_t *o = json_copy((json_t *)obj);

	emu_resource_api_version(res, &av);
	if (o) {
		json_object_set_new(o, "kind", json_string(res->kind));
		json_object_set_new(o, "apiVersion",
				    json_string(buf_cstr(&av)));
	}
	buf_release(&av);
	return o;
}

static void event_release(struct emu_event *e)
{
	free(e->ns);
	free(e->name);
	json_decref(e->obj);
	json_decref(e->prev);
	memset(e, 0, sizeof(*e));
}

/*
 * An event as one watch sees it (the watch cache's filtering): a
 * MODIFIED object that enters the watch's selection is ADDED, one that
 * leaves it is DELETED, shown as it was with the event's
 * resourceVersion. Lock held.
 */
static void deliver(struct emu_watch *w, const char *type,
		    const struct emu_resource *res, const char *ns,
		    const char *name, const json_t *obj, const json_t *prev)
{
	bool now, before;
	json_t *gone;
	char rv[24];

	if (w->ended)
		return;
	now = matches(w, res, ns, name, obj);
	before = prev && matches(w, res, ns, name, prev);
	if (!prev || strcmp(type, "MODIFIED")) {
		if (now)
			enqueue(w, type, obj);
	} else if (now) {
		enqueue(w, before ? "MODIFIED" : "ADDED", obj);
	} else if (before) {
		gone = json_copy((json_t *)prev);
		json_object_set_new(gone, "metadata",
				    json_copy(json_object_get(gone,
							      "metadata")));
		snprintf(rv, sizeof(rv), "%llu", (unsigned long long)rv_of(obj));
		json_object_set_new(json_object_get(gone, "metadata"),
				    "resourceVersion", json_string(rv));
		enqueue(w, "DELETED", gone);
		json_decref(gone);
	}
}

void emu_store_record(struct emu_store *st, const char *type,
		      const struct emu_resource *res, const char *ns,
		      const char *name, const json_t *obj, const json_t *prev)
{
	const char *rvs = json_string_value(json_object_get(
		json_object_get(obj, "metadata"), "resourceVersion"));
	struct emu_event *e;
	struct emu_watch *w;
	json_t *o = event_object(res, obj);
	json_t *p = prev ? event_object(res, prev) : NULL;

	if (!o) {
		json_decref(p);
		return;
	}
	if (!st->hist)
		st->hist = calloc(EMU_WATCH_HISTORY, sizeof(*st->hist));
	if (st->hist) {
		if (st->hist_len == EMU_WATCH_HISTORY) {
			e = &st->hist[st->hist_first];
			st->hist_floor = e->rv;
			event_release(e);
			st->hist_first =
				(st->hist_first + 1) % EMU_WATCH_HISTORY;
			st->hist_len--;
		}
		e = &st->hist[(st->hist_first + st->hist_len) %
			      EMU_WATCH_HISTORY];
		e->rv = rvs ? strtoull(rvs, NULL, 10) : st->rv;
		e->res = res;
		e->ns = strdup(ns);
		e->name = strdup(name);
		e->type = type;
		e->obj = json_incref(o);
		e->prev = json_incref(p);
		if (e->ns && e->name)
			st->hist_len++;
		else
			event_release(e);
	}
	for (w = st->watches; w; w = w->next)
		deliver(w, type, res, ns, name, o, p);
	json_decref(o);
	json_decref(p);
	pthread_cond_broadcast(&st->changed);
}

/*
 * The newest resourceVersion of an event of `res` (what the watch
 * cache of the resource has processed), or 0. Lock held.
 */
static uint64_t resource_rv(const struct emu_store *st,
			    const struct emu_resource *res)
{
	const struct emu_event *e;
	size_t i;

	for (i = st->hist_len; i-- > 0;) {
		e = &st->hist[(st->hist_first + i) % EMU_WATCH_HISTORY];
		if (e->res == res)
			return e->rv;
	}
	return 0;
}

/* The 410 the API server sends for a compacted resourceVersion. */
static void expire(struct emu_watch *w, uint64_t rv, uint64_t oldest)
{
	struct buf msg = BUF_INIT;
	json_t *status;

	buf_addf(&msg, "too old resource version: %llu (%llu)",
		 (unsigned long long)rv, (unsigned long long)oldest);
	status = emu_status_new(410, "Expired", buf_cstr(&msg), NULL, NULL,
				NULL);
	enqueue(w, "ERROR", status);
	json_decref(status);
	buf_release(&msg);
	w->ended = true;
}

/*
 * A BOOKMARK line at resourceVersion `rv`: kind, apiVersion and the
 * resourceVersion only; the one ending the initial events is annotated
 * k8s.io/initial-events-end. Lock held.
 */
static void bookmark_at(struct emu_watch *w, uint64_t rv, bool initial_end)
{
	struct buf av = BUF_INIT;
	char rvs[24];
	json_t *o;

	emu_resource_api_version(w->res, &av);
	snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
	o = json_pack("{s:s, s:s, s:{s:s}}", "kind", w->res->kind, "apiVersion",
		      buf_cstr(&av), "metadata", "resourceVersion", rvs);
	if (o && initial_end)
		json_object_set_new(json_object_get(o, "metadata"),
				    "annotations",
				    json_pack("{s:s}",
					      "k8s.io/initial-events-end",
					      "true"));
	if (o)
		enqueue(w, "BOOKMARK", o);
	json_decref(o);
	buf_release(&av);
}

/*
 * When the next bookmark is due, as the cacher's nextBookmarkTime: a
 * minute from `from`, but 2 s before the watch's deadline when that is
 * sooner; none when that moment has passed. Lock held.
 */
static void schedule_bookmark(struct emu_watch *w, const struct timespec *from)
{
	struct timespec pre;

	w->next_bookmark = *from;
	ts_add_ms(&w->next_bookmark, EMU_BOOKMARK_MS);
	w->bookmark_due = true;
	if (!w->deadline.tv_sec)
		return;
	pre = w->deadline;
	pre.tv_sec -= EMU_BOOKMARK_BEFORE_END_MS / 1000;
	if (ts_reached(&w->next_bookmark, &pre))
		w->next_bookmark = pre;
	if (ts_reached(from, &w->next_bookmark))
		w->bookmark_due = false;
}

/* A periodic bookmark: only when the resource moved past the watch. */
static void bookmark(struct emu_watch *w)
{
	uint64_t rv = resource_rv(w->st, w->res);

	if (rv > w->rv)
		bookmark_at(w, rv, false);
}

/* Queue what a new watch sees first. Lock held. */
static void start(struct emu_watch *w, const char *rvs)
{
	struct emu_store *st = w->st;
	const struct emu_event *e;
	json_t *o;
	uint64_t rv;
	size_t i;
	char *end;

	if (!rvs || !*rvs || !strcmp(rvs, "0")) {
		for (i = 0; i < st->len; i++) {
			const struct emu_entry *en = &st->items[i];

			if (!matches(w, en->res, en->ns, en->name, en->obj))
				continue;
			o = event_object(en->res, en->obj);
			if (o)
				enqueue(w, "ADDED", o);
			json_decref(o);
		}
		/*
		 * The initial events (sendInitialEvents, which a watch
		 * without a resourceVersion defaults to) end with a
		 * bookmark when bookmarks are asked for.
		 */
		if (w->bookmarks)
			bookmark_at(w, st->rv, true);
		if (st->rv > w->rv)
			w->rv = st->rv;
		return;
	}
	errno = 0;
	rv = strtoull(rvs, &end, 10);
	if (*end || errno || *rvs == '-' || rv < st->hist_floor) {
		expire(w, *end || errno ? 0 : rv,
		       st->hist_len ? st->hist[st->hist_first].rv : st->rv + 1);
		return;
	}
	w->rv = rv;
	for (i = 0; i < st->hist_len; i++) {
		e = &st->hist[(st->hist_first + i) % EMU_WATCH_HISTORY];
		if (e->rv > rv)
			deliver(w, e->type, e->res, e->ns, e->name, e->obj,
				e->prev);
	}
}

int emu_watch_open(struct emu_store *st, const struct emu_resource *res,
		   const struct emu_watch_options *opts, struct emu_watch **out,
		   json_t **status)
{
	struct buf msg = BUF_INIT;
	struct emu_watch *w = calloc(1, sizeof(*w));
	struct timespec now;
	int code = 0;

	*out = NULL;
	*status = NULL;
	if (!w || (opts->ns && !(w->ns = strdup(opts->ns)))) {
		*status = emu_status_new(500, "InternalError", "out of memory",
					 NULL, NULL, NULL);
		code = 500;
		goto out;
	}
	w->st = st;
	w->res = res;
	w->bookmarks = opts->bookmarks;
	w->table = opts->table;
	buf_init(&w->queue, EMU_WATCH_QUEUE_MAX);
	if (emu_selector_parse(&w->labels, opts->labels, &msg) < 0 ||
	    emu_field_selector_parse(&w->fields, opts->fields, &msg) < 0) {
		*status = emu_status_new(400, "BadRequest", buf_cstr(&msg),
					 NULL, NULL, NULL);
		code = 400;
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	w->deadline = now;
	if (opts->timeout_s)
		ts_add_ms(&w->deadline, (long)opts->timeout_s * 1000);
	else
		w->deadline.tv_sec = 0;
	schedule_bookmark(w, &now);
	pthread_mutex_lock(&st->lock);
	start(w, opts->rv);
	if (st->closing)
		w->ended = true;
	w->next = st->watches;
	st->watches = w;
	pthread_mutex_unlock(&st->lock);
	*out = w;
	w = NULL;
out:
	if (w) {
		emu_selector_release(&w->labels);
		emu_field_selector_release(&w->fields);
		buf_release(&w->queue);
		free(w->ns);
		free(w);
	}
	buf_release(&msg);
	return code;
}

int emu_watch_next(struct emu_watch *w, struct buf *out, int wait_ms)
{
	struct emu_store *st = w->st;
	struct timespec now, until;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	ts_add_ms(&until, wait_ms);
	pthread_mutex_lock(&st->lock);
	for (;;) {
		clock_gettime(CLOCK_REALTIME, &now);
		if (st->closing)
			w->ended = true;
		if (w->deadline.tv_sec && ts_reached(&now, &w->deadline))
			w->ended = true;
		if (!w->ended && w->bookmarks && w->bookmark_due &&
		    ts_reached(&now, &w->next_bookmark)) {
			bookmark(w);
			schedule_bookmark(w, &now);
		}
		if (w->queue.len) {
			ret = buf_add(out, w->queue.ptr, w->queue.len) < 0 ? -1
									   : 1;
			buf_reset(&w->queue);
			break;
		}
		if (w->ended) {
			ret = -1;
			break;
		}
		if (ts_reached(&now, &until))
			break;
		if (w->bookmarks && w->bookmark_due)
			until = *ts_min(&until, &w->next_bookmark);
		if (w->deadline.tv_sec)
			until = *ts_min(&until, &w->deadline);
		pthread_cond_timedwait(&st->changed, &st->lock, &until);
	}
	pthread_mutex_unlock(&st->lock);
	return ret;
}

void emu_watch_end_after(struct emu_watch *w, unsigned ms)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	ts_add_ms(&t, (long)ms);
	pthread_mutex_lock(&w->st->lock);
	if (!w->deadline.tv_sec || ts_reached(&w->deadline, &t))
		w->deadline = t;
	pthread_cond_broadcast(&w->st->changed);
	pthread_mutex_unlock(&w->st->lock);
}

/*
 * As if the history had been compacted past `rv`: the oldest version the
 * store still serves is newer than it.
 */
void emu_watch_expire(struct emu_watch *w, const char *rv)
{
	struct emu_store *st = w->st;
	uint64_t want = 0, oldest;
	char *end;

	if (rv && *rv) {
		want = strtoull(rv, &end, 10);
		if (*end)
			want = 0;
	}
	pthread_mutex_lock(&st->lock);
	oldest = st->hist_len ? st->hist[st->hist_first].rv : st->rv + 1;
	if (oldest <= want)
		oldest = want + 1;
	buf_reset(&w->queue);
	expire(w, want, oldest);
	pthread_cond_broadcast(&st->changed);
	pthread_mutex_unlock(&st->lock);
}

void emu_watch_free(struct emu_watch *w)
{
	struct emu_watch **p;

	if (!w)
		return;
	pthread_mutex_lock(&w->st->lock);
	for (p = &w->st->watches; *p; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&w->st->lock);
	emu_selector_release(&w->labels);
	emu_field_selector_release(&w->fields);
	buf_release(&w->queue);
	free(w->ns);
	free(w);
}

void emu_store_shutdown(struct emu_store *st)
{
	pthread_mutex_lock(&st->lock);
	st->closing = true;
	pthread_cond_broadcast(&st->changed);
	pthread_mutex_unlock(&st->lock);
}

void emu_store_watch_release(struct emu_store *st)
{
	size_t i;

	if (st->hist)
		for (i = 0; i < st->hist_len; i++)
			event_release(&st->hist[(st->hist_first + i) %
						EMU_WATCH_HISTORY]);
	free(st->hist);
	st->hist = NULL;
	st->hist_len = st->hist_first = 0;
	st->watches = NULL;
}
