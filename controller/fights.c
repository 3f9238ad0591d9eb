/*
 * fights: fight detection for one app (see fights.h).
 *
 * The fields are few (only fields that differed recently are remembered),
 * so they live in an array searched linearly.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/fights.h"

#include "util/banned.h" /* last */

struct entry {
	struct diff_key key;
	char *path;
	char *other;	  /* the manager changing it back */
	uint64_t *times;  /* the last `changes` changes back, oldest first */
	unsigned ntimes;
	bool written;	  /* syncd wrote it since the last change counted */
	bool seen;	  /* differs in the pass being observed */
	bool fighting;
	uint64_t held_ms; /* when it was held (monotonic) */
	time_t held_at;	  /* the same, wall clock, for the report */
	unsigned held_changes;
};

struct fights {
	char *self;
	unsigned changes;
	uint64_t window_ms;
	void (*notify)(bool started, const struct diff_key *key,
		       const char *path, const char *other, unsigned changes,
		       void *ctx);
	void *ctx;
	struct entry *v;
	size_t len, alloc;
	unsigned changed; /* fights started or ended in this observation */
};

int fights_new(struct fights **out, const struct fights_options *opts,
	       struct err *err)
{
	struct fights *f = calloc(1, sizeof(*f));

	*out = NULL;
	if (!f || !(f->self = strdup(opts->self ? opts->self : "syncd"))) {
		free(f);
		return err_set(err, ERR_NOMEM, "out of memory");
	}
	f->changes = opts->changes;
	f->window_ms = opts->window_ms;
	f->notify = opts->notify;
	f->ctx = opts->ctx;
	*out = f;
	return 0;
}

static void entry_release(struct entry *e)
{
	diff_key_release(&e->key);
	free(e->path);
	free(e->other);
	free(e->times);
}

void fights_free(struct fights *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->len; i++)
		entry_release(&f->v[i]);
	free(f->v);
	free(f->self);
	free(f);
}

static struct entry *find(struct fights *f, const struct diff_key *key,
			  const char *path)
{
	for (size_t i = 0; i < f->len; i++)
		if (!strcmp(f->v[i].path, path) &&
		    diff_key_equal(&f->v[i].key, key))
			return &f->v[i];
	return NULL;
}

static void drop(struct fights *f, size_t i)
{
	entry_release(&f->v[i]);
	memmove(&f->v[i], &f->v[i + 1], (f->len - i - 1) * sizeof(*f->v));
	f->len--;
}

static struct entry *add(struct fights *f, const struct diff_key *key,
			 const char *path)
{
	struct entry *e;

	if (f->len == FIGHTS_MAX_ENTRIES)
		drop(f, 0); /* the oldest: entries are appended */
	if (f->len == f->alloc) {
		size_t n = f->alloc ? 2 * f->alloc : 16;
		struct entry *v = realloc(f->v, n * sizeof(*v));

		if (!v)
			return NULL;
		f->v = v;
		f->alloc = n;
	}
	e = &f->v[f->len];
	memset(e, 0, sizeof(*e));
	if (diff_key_init(&e->key, key->group, key->kind, key->ns,
			  key->name) < 0)
		return NULL;
	if (!(e->path = strdup(path)) ||
	    !(e->times = calloc(f->changes ? f->changes : 1,
				sizeof(*e->times)))) {
		entry_release(e);
		return NULL;
	}
	f->len++;
	return e;
}

static void end_fight(struct fights *f, struct entry *e)
{
	if (e->fighting) {
		f->changed++;
		if (f->notify)
			f->notify(false, &e->key, e->path, e->other,
				  e->held_changes, f->ctx);
	}
	e->fighting = false;
	e->ntimes = 0;
	e->written = false;
}

/* Changes back within the window ending at `now`. */
static unsigned recent(const struct fights *f, const struct entry *e,
		       uint64_t now)
{
	unsigned n = 0;

	for (unsigned i = 0; i < e->ntimes; i++)
		if (now - e->times[i] < f->window_ms)
			n++;
	return n;
}

static void push_time(struct fights *f, struct entry *e, uint64_t now)
{
	unsigned cap = f->changes ? f->changes : 1;

	if (e->ntimes == cap) {
		memmove(e->times, e->times + 1,
			(cap - 1) * sizeof(*e->times));
		e->ntimes--;
	}
	e->times[e->ntimes++] = now;
}

/* The manager to blame: the first owner that is not syncd. */
static const char *other_owner(const struct diff_field *fd)
{
	for (size_t i = 0; i < fd->nowners; i++)
		if (fd->owners[i].actor != DIFF_ACTOR_SELF)
			return fd->owners[i].manager;
	return NULL;
}

/* One differing field of the report. */
static void observe_field(struct fights *f, const struct diff_report *r,
			 const struct diff_key *key,
			 const struct diff_field *fd, uint64_t now)
{
	const char *other;
	struct entry *e;

	if (fd->change == DIFF_REMOVED ||
	    (fd->foreign && r->policy != DIFF_POLICY_OVERRIDE))
		return; /* syncd does not write it */
	if (!(other = other_owner(fd)))
		return; /* nobody else has it: nothing to fight */
	if (!(e = find(f, key, fd->path)) && !(e = add(f, key, fd->path)))
		return; /* out of memory: no fight detection for it */
	e->seen = true;
	if (!e->other || strcmp(e->other, other)) {
		char *dup = strdup(other);

		if (!dup)
			return;
		end_fight(f, e);
		free(e->other);
		e->other = dup;
	}
	if (e->fighting) {
		if (now - e->held_ms >= f->window_ms)
			end_fight(f, e); /* try again: written next pass */
		return;
	}
	if (!e->ntimes || e->written) {
		push_time(f, e, now);
		e->written = false;
	}
	if (!f->changes || recent(f, e, now) < f->changes)
		return;
	e->fighting = true;
	e->held_ms = now;
	e->held_at = time(NULL);
	e->held_changes = recent(f, e, now);
	f->changed++;
	if (f->notify)
		f->notify(true, key, fd->path, other, e->held_changes, f->ctx);
	return;
}

unsigned fights_observe(struct fights *f, const struct diff_report *report,
			uint64_t now_ms)
{
	size_t i;

	f->changed = 0;
	for (i = 0; i < f->len; i++)
		f->v[i].seen = false;
	for (i = 0; report && i < report->len; i++) {
		const struct diff_object_report *o = &report->objects[i];

		for (size_t j = 0; j < o->nfields; j++)
			observe_field(f, report, &o->key, &o->fields[j],
				      now_ms);
	}
	/*
	 * A field that no longer differs ends its fight; one that is not
	 * fighting is kept while its changes are in the window (a fighter
	 * changes it back between passes that see it in sync).
	 */
	i = 0;
	while (i < f->len) {
		struct entry *e = &f->v[i];

		if (!e->seen && e->fighting) {
			end_fight(f, e);
			drop(f, i);
		} else if (!e->seen && !recent(f, e, now_ms)) {
			drop(f, i);
		} else {
			i++;
		}
	}
	return f->changed;
}

void fights_written(struct fights *f, const struct diff_key *key)
{
	for (size_t i = 0; i < f->len; i++)
		if (f->v[i].seen && !f->v[i].fighting &&
		    diff_key_equal(&f->v[i].key, key))
			f->v[i].written = true;
}

struct diff_fight *fights_hold(const struct diff_key *key, const char *path,
			       void *ctx)
{
	struct fights *f = ctx;
	struct entry *e = find(f, key, path);
	char since[32];
	struct tm tm;

	if (!e || !e->fighting)
		return NULL;
	gmtime_r(&e->held_at, &tm);
	strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return diff_fight_new(f->self, e->other, e->held_changes, since);
}

size_t fights_count(const struct fights *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->len; i++)
		n += f->v[i].fighting;
	return n;
}

uint64_t fights_next_end_ms(const struct fights *f, uint64_t now_ms)
{
	uint64_t next = 0;

	for (size_t i = 0; i < f->len; i++) {
		const struct entry *e = &f->v[i];
		uint64_t end = e->held_ms + f->window_ms, left;

		if (!e->fighting)
			continue;
		left = end > now_ms ? end - now_ms : 1;
		if (!next || left < next)
			next = left;
	}
	return next;
}
