/*
 * events: rate-limited Kubernetes Events (see events.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/kube.h"
#include "util/buf.h"
#include "util/sha256.h"
#include "util/clock.h"

#include "util/banned.h" /* last */

/* One object's limits, and the last events sent about it. */
#define RECENT 8

struct recent {
	unsigned char digest[SHA256_DIGEST_SIZE]; /* reason + note */
	uint64_t at;
};

struct object {
	char *key; /* uid, else kind/namespace/name */
	double tokens;
	uint64_t refilled;
	struct recent recent[RECENT];
	unsigned next;
};

struct kube_events {
	struct kube_events_options o;
	pthread_mutex_t lock;
	struct object *v;
	size_t len, alloc;
	double tokens; /* the global bucket */
	uint64_t refilled;
	uint64_t sent, dropped;
};

static uint64_t mono_ms(void *ctx)
{
	(void)ctx;
	return clk_mono_ms();
}

int kube_events_new(struct kube_events **out,
		    const struct kube_events_options *opts, struct err *err)
{
	struct kube_events *ev = calloc(1, sizeof(*ev));

	*out = NULL;
	if (!ev)
		return err_set(err, ERR_NOMEM, "out of memory");
	ev->o = *opts;
	if (!ev->o.burst)
		ev->o.burst = 25;
	if (!ev->o.refill_ms)
		ev->o.refill_ms = 5 * 60 * 1000;
	if (!ev->o.dedup_ms)
		ev->o.dedup_ms = 10 * 60 * 1000;
	if (!ev->o.global_burst)
		ev->o.global_burst = 100;
	if (!ev->o.global_per_s)
		ev->o.global_per_s = 10;
	if (!ev->o.now_ms)
		ev->o.now_ms = mono_ms;
	ev->tokens = ev->o.global_burst;
	ev->refilled = ev->o.now_ms(ev->o.clock_ctx);
	pthread_mutex_init(&ev->lock, NULL);
	*out = ev;
	return 0;
}

void kube_events_free(struct kube_events *ev)
{
	if (!ev)
		return;
	for (size_t i = 0; i < ev->len; i++)
		free(ev->v[i].key);
	free(ev->v);
	pthread_mutex_destroy(&ev->lock);
	free(ev);
}

static void object_key(const json_t *obj, struct buf *out)
{
	const json_t *md = json_object_get(obj, "metadata");
	const char *uid = json_string_value(json_object_get(md, "uid"));
	const char *ns = json_string_value(json_object_get(md, "namespace"));

	if (uid && *uid) {
		buf_adds(out, uid);
		return;
	}
	buf_addf(out, "%s/%s/%s/%s",
		 json_string_value(json_object_get(obj, "apiVersion")) ?: "",
		 json_string_value(json_object_get(obj, "kind")) ?: "",
		 ns ? ns : "",
		 json_string_value(json_object_get(md, "name")) ?: "");
}

/* The object's entry, made (forgetting the oldest) when new. Lock held. */
static struct object *find(struct kube_events *ev, const char *key,
			   uint64_t now)
{
	struct object *o;

	for (size_t i = 0; i < ev->len; i++)
		if (!strcmp(ev->v[i].key, key))
			return &ev->v[i];
	if (ev->len == KUBE_EVENTS_MAX_OBJECTS) {
		free(ev->v[0].key);
		memmove(&ev->v[0], &ev->v[1], (ev->len - 1) * sizeof(*ev->v));
		ev->len--;
	}
	if (ev->len == ev->alloc) {
		size_t n = ev->alloc ? 2 * ev->alloc : 16;
		struct object *v = realloc(ev->v, n * sizeof(*v));

		if (!v)
			return NULL;
		ev->v = v;
		ev->alloc = n;
	}
	o = &ev->v[ev->len];
	memset(o, 0, sizeof(*o));
	if (!(o->key = strdup(key)))
		return NULL;
	o->tokens = ev->o.burst;
	o->refilled = now;
	ev->len++;
	return o;
}

static void refill(double *tokens, uint64_t *at, uint64_t now, double per_ms,
		   double cap)
{
	*tokens += (double)(now - *at) * per_ms;
	if (*tokens > cap)
		*tokens = cap;
	*at = now;
}

/* Whether the limits let this event through (and take its tokens). */
static bool admit(struct kube_events *ev, const json_t *regarding,
		  const char *reason, const char *note)
{
	struct buf key = BUF_INIT;
	struct sha256_ctx h;
	unsigned char d[SHA256_DIGEST_SIZE];
	uint64_t now = ev->o.now_ms(ev->o.clock_ctx);
	struct object *o;
	bool ok = false;

	object_key(regarding, &key);
	sha256_init(&h);
	sha256_update(&h, reason, strlen(reason) + 1);
	sha256_update(&h, note, strlen(note));
	sha256_final(&h, d);
	pthread_mutex_lock(&ev->lock);
	if (!(o = find(ev, buf_cstr(&key), now)))
		goto out;
	for (unsigned i = 0; i < RECENT; i++)
		if (o->recent[i].at && now - o->recent[i].at < ev->o.dedup_ms &&
		    !memcmp(o->recent[i].digest, d, sizeof(d)))
			goto out;
	refill(&o->tokens, &o->refilled, now, 1.0 / (double)ev->o.refill_ms,
	       ev->o.burst);
	refill(&ev->tokens, &ev->refilled, now,
	       ev->o.global_per_s / 1000.0, ev->o.global_burst);
	if (o->tokens < 1 || ev->tokens < 1)
		goto out;
	o->tokens -= 1;
	ev->tokens -= 1;
	memcpy(o->recent[o->next].digest, d, sizeof(d));
	o->recent[o->next].at = now ? now : 1;
	o->next = (o->next + 1) % RECENT;
	ok = true;
out:
	if (ok)
		ev->sent++;
	else
		ev->dropped++;
	pthread_mutex_unlock(&ev->lock);
	buf_release(&key);
	return ok;
}

int kube_events_emit(struct kube_events *ev, const json_t *regarding,
		     const char *type, const char *reason, const char *action,
		     const char *note)
{
	struct kube_event ke = {regarding, type,   reason,
				action,	   note,   "syncd.io/syncd",
				ev->o.instance};
	struct err err = ERR_INIT;
	int error;

	if (!admit(ev, regarding, reason, note ? note : ""))
		return 0;
	if (!ev->o.client)
		return 1;
	error = kube_event_create(ev->o.client, &ke, &err);
	err_release(&err);
	return error < 0 ? error : 1;
}

void kube_events_counts(struct kube_events *ev, uint64_t *sent,
			uint64_t *dropped)
{
	pthread_mutex_lock(&ev->lock);
	*sent = ev->sent;
	*dropped = ev->dropped;
	pthread_mutex_unlock(&ev->lock);
}
