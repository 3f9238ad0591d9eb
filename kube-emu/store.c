/*
 * The in-memory object store: one array of entries under one mutex, one
 * resourceVersion counter for all writes, as etcd's revision.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "diff/diff.h"
#include "kube-emu/emu.h"
#include "util/base64.h"
#include "util/clock.h"

#include "util/banned.h" /* last */

static const char *const initial_namespaces[] = {"default", "kube-system",
						 "kube-public", NULL};

static void new_uid(char out[37])
{
	unsigned char b[16];
	size_t i;

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		for (i = 0; i < sizeof(b); i++)
			b[i] = (unsigned char)rand();
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		 b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void set_rv(json_t *meta, uint64_t rv)
{
	char s[24];

	snprintf(s, sizeof(s), "%llu", (unsigned long long)rv);
	json_object_set_new(meta, "resourceVersion", json_string(s));
}

static const char *meta_str(const json_t *obj, const char *key)
{
	return json_string_value(
		json_object_get(json_object_get(obj, "metadata"), key));
}

/*
 * The hash index: slots map hash(resource, namespace, name) to an item's
 * position plus one (0: empty slot). Linear probing, at most half full;
 * removal shifts later slots of the run back, so there are no
 * tombstones. Items move (a removal puts the last item in the hole), and
 * the index follows them.
 */
struct emu_slot {
	uint32_t hash;
	uint32_t item; /* position + 1; 0: empty */
};

static uint32_t key_hash(const struct emu_resource *res, const char *ns,
			 const char *name)
{
	uintptr_t p = (uintptr_t)res;
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < sizeof(p); i++, p >>= 8)
		h = (h ^ (p & 0xff)) * 16777619u;
	for (; *ns; ns++)
		h = (h ^ (unsigned char)*ns) * 16777619u;
	h = (h ^ '/') * 16777619u;
	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h;
}

static bool entry_is(const struct emu_entry *e, const struct emu_resource *res,
		     const char *ns, const char *name)
{
	return e->res == res && !strcmp(e->name, name) && !strcmp(e->ns, ns);
}

/* Index of the entry, or -1. Lock held. */
static ssize_t find(const struct emu_store *st, const struct emu_resource *res,
		    const char *ns, const char *name)
{
	uint32_t h;
	size_t mask = st->nslots - 1, k;
	const struct emu_slot *sl;

	if (!st->nslots)
		return -1;
	h = key_hash(res, ns, name);
	for (k = h & mask;; k = (k + 1) & mask) {
		sl = &st->slots[k];
		if (!sl->item)
			return -1;
		if (sl->hash == h &&
		    entry_is(&st->items[sl->item - 1], res, ns, name))
			return (ssize_t)sl->item - 1;
	}
}

static void slot_put(struct emu_slot *slots, size_t nslots, uint32_t h,
		     uint32_t item)
{
	size_t k;

	for (k = h & (nslots - 1); slots[k].item; k = (k + 1) & (nslots - 1))
		;
	slots[k].hash = h;
	slots[k].item = item;
}

/* Make room for `want` items at most half full. -1: no memory. */
static int index_reserve(struct emu_store *st, size_t want)
{
	struct emu_slot *n;
	size_t nslots = st->nslots ? st->nslots : 128, k;

	while (nslots < 2 * want)
		nslots *= 2;
	if (nslots == st->nslots)
		return 0;
	n = calloc(nslots, sizeof(*n));
	if (!n)
		return -1;
	for (k = 0; k < st->nslots; k++)
		if (st->slots[k].item)
			slot_put(n, nslots, st->slots[k].hash,
				 st->slots[k].item);
	free(st->slots);
	st->slots = n;
	st->nslots = nslots;
	return 0;
}

/* The slot holding item i. Lock held; the item is indexed. */
static size_t slot_of(const struct emu_store *st, size_t i)
{
	const struct emu_entry *e = &st->items[i];
	size_t mask = st->nslots - 1, k;

	for (k = key_hash(e->res, e->ns, e->name) & mask;
	     st->slots[k].item != i + 1; k = (k + 1) & mask)
		;
	return k;
}

/* Take item i out of the index (backward-shift deletion). Lock held. */
static void index_remove(struct emu_store *st, size_t i)
{
	size_t mask = st->nslots - 1, hole = slot_of(st, i), k, home;

	st->slots[hole].item = 0;
	for (k = (hole + 1) & mask; st->slots[k].item; k = (k + 1) & mask) {
		home = st->slots[k].hash & mask;
		/* Move back unless its home lies in (hole, k]. */
		if ((k > hole && (home <= hole || home > k)) ||
		    (k < hole && home <= hole && home > k)) {
			st->slots[hole] = st->slots[k];
			st->slots[k].item = 0;
			hole = k;
		}
	}
}

/*
 * managedFields are the bulkiest part of a small object in jansson (a
 * 1 KB ConfigMap's single entry costs about 3.7 KB of heap, its fieldsV1
 * alone 2 KB), and they repeat: objects of one shape written by one
 * manager have equal fieldsV1, often equal entries. Stored objects are
 * never changed in place, so equal values are shared: the interned
 * copies live in one process-wide table, dropped by a sweep once only
 * the table holds them.
 */
struct interned {
	uint32_t hash; /* of the value's compact JSON */
	json_t *val;   /* NULL: empty slot */
};

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static struct interned *itab;
static size_t icap, icount, isweep_at = 1024;

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void intern_put(struct interned *tab, size_t cap,
		       const struct interned *e)
{
	size_t k;

	for (k = e->hash & (cap - 1); tab[k].val; k = (k + 1) & (cap - 1))
		;
	tab[k] = *e;
}

/* Rebuild into `cap` slots; sweep: drop values only the table holds. */
static int intern_rehash(size_t cap, bool sweep)
{
	struct interned *n = calloc(cap, sizeof(*n));
	size_t k;

	if (!n)
		return -1;
	icount = 0;
	for (k = 0; k < icap; k++) {
		if (!itab[k].val)
			continue;
		if (sweep && itab[k].val->refcount == 1) {
			json_decref(itab[k].val);
			continue;
		}
		intern_put(n, cap, &itab[k]);
		icount++;
	}
	free(itab);
	itab = n;
	icap = cap;
	return 0;
}

/*
 * The shared equal of `v` (a new reference), or v itself when it is new
 * or memory runs out. Takes v's reference.
 */
static json_t *intern(json_t *v)
{
	struct interned e;
	json_t *found = NULL;
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	size_t k;

	if (!text)
		return v;
	e.hash = str_hash(text);
	free(text);
	pthread_mutex_lock(&intern_lock);
	for (k = icap ? e.hash & (icap - 1) : 0; icap && itab[k].val;
	     k = (k + 1) & (icap - 1)) {
		if (itab[k].hash == e.hash && json_equal(itab[k].val, v)) {
			found = json_incref(itab[k].val);
			break;
		}
	}
	if (found) {
		json_decref(v);
		goto out;
	}
	if (icount + 1 >= isweep_at) {
		intern_rehash(icap, true);
		isweep_at = icount * 2 > 1024 ? icount * 2 : 1024;
	}
	found = v;
	if ((icount + 1) * 2 > icap &&
	    intern_rehash(icap ? icap * 2 : 256, false) < 0)
		goto out;
	e.val = json_incref(v);
	intern_put(itab, icap, &e);
	icount++;
out:
	pthread_mutex_unlock(&intern_lock);
	return found;
}

/* Share the managedFields of an object about to be stored. */
static void intern_managed_fields(json_t *obj)
{
	json_t *meta = json_object_get(obj, "metadata");
	json_t *mf = json_object_get(meta, "managedFields"), *e, *f;
	size_t i;

	if (!json_is_array(mf) || !json_array_size(mf))
		return;
	json_array_foreach(mf, i, e)
	{
		if ((f = json_object_get(e, "fieldsV1")))
			json_object_set_new(e, "fieldsV1",
					    intern(json_incref(f)));
	}
	json_object_set_new(meta, "managedFields", intern(json_incref(mf)));
}

/* The copy of `obj` the store keeps: compact in memory, shared parts. */
static json_t *stored_copy(const json_t *obj)
{
	json_t *copy = json_deep_copy(obj);

	if (copy)
		intern_managed_fields(copy);
	return copy;
}

static void entry_release(struct emu_entry *e)
{
	free(e->ns);
	free(e->name);
	json_decref(e->obj);
}

/* Append an entry taking `obj`'s reference. Lock held. */
static int insert(struct emu_store *st, const struct emu_resource *res,
		  const char *ns, const char *name, json_t *obj)
{
	struct emu_entry *n, *e;

	if (st->len == st->alloc) {
		size_t alloc = st->alloc ? st->alloc * 2 : 64;

		n = realloc(st->items, alloc * sizeof(*n));
		if (!n) {
			json_decref(obj);
			return -1;
		}
		st->items = n;
		st->alloc = alloc;
	}
	if (st->len >= UINT32_MAX - 1 || index_reserve(st, st->len + 1) < 0) {
		json_decref(obj);
		return -1;
	}
	e = &st->items[st->len];
	e->res = res;
	e->ns = strdup(ns);
	e->name = strdup(name);
	e->obj = obj;
	if (!e->ns || !e->name) {
		entry_release(e);
		return -1;
	}
	slot_put(st->slots, st->nslots, key_hash(res, ns, name),
		 (uint32_t)++st->len);
	return 0;
}

/*
 * Remove an entry; its DELETED event gets a resourceVersion of its own,
 * as the deletion is a write in etcd. Lock held.
 */
static void remove_at(struct emu_store *st, size_t i)
{
	struct emu_entry *e = &st->items[i];
	json_t *gone = json_deep_copy(e->obj);

	++st->rv;
	if (gone) {
		set_rv(json_object_get(gone, "metadata"), st->rv);
		emu_store_record(st, "DELETED", e->res, e->ns, e->name, gone,
				 NULL);
	}
	json_decref(gone);
	index_remove(st, i);
	entry_release(&st->items[i]);
	if (i != --st->len) {
		/* The last item fills the hole; its slot follows it. */
		st->slots[slot_of(st, st->len)].item = (uint32_t)i + 1;
		st->items[i] = st->items[st->len];
	}
}

static bool is_crd_res(const struct emu_resource *res)
{
	return !strcmp(res->name, "customresourcedefinitions") &&
	       !strcmp(res->group, "apiextensions.k8s.io");
}

static const struct emu_resource *namespaces_res(void)
{
	return emu_resource_find("", "v1", "namespaces");
}

/*
 * The server-owned fields of a Namespace: its name label, the kubernetes
 * finalizer (spec.finalizers changes only through /finalize, so an
 * update keeps the old spec) and phase Active.
 */
static void namespace_label(json_t *obj, const char *name)
{
	json_t *meta = json_object_get(obj, "metadata"), *labels;

	labels = json_object_get(meta, "labels");
	if (!json_is_object(labels)) {
		labels = json_object();
		json_object_set_new(meta, "labels", labels);
	}
	json_object_set_new(labels, "kubernetes.io/metadata.name",
			    json_string(name));
}

/*
 * What the namespace strategy sets after the field manager (so nobody
 * owns it): the finalizer on create, kept on update, and the phase.
 */
static void namespace_prepare(json_t *obj, const json_t *old)
{
	if (old)
		json_object_set(obj, "spec", json_object_get(old, "spec"));
	else
		json_object_set_new(
			obj, "spec",
			json_pack("{s:[s]}", "finalizers", "kubernetes"));
	json_object_set_new(obj, "status",
			    json_pack("{s:s}", "phase", "Active"));
}

int emu_store_init(struct emu_store *st)
{
	const char *const *ns;
	json_t *in;
	json_t *out = NULL;
	int code;

	memset(st, 0, sizeof(*st));
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->changed, NULL);
	for (ns = initial_namespaces; *ns; ns++) {
		in = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1",
			       "kind", "Namespace", "metadata", "name", *ns);
		code = emu_store_create(st, namespaces_res(), "", in,
					"kube-apiserver", false, &out);
		json_decref(in);
		json_decref(out);
		if (code != 201)
			return -1;
	}
	return 0;
}

void emu_store_release(struct emu_store *st)
{
	size_t i;

	if (!st)
		return;
	for (i = 0; i < st->len; i++) {
		if (is_crd_res(st->items[i].res))
			emu_crd_unregister(st->items[i].obj);
		entry_release(&st->items[i]);
	}
	free(st->items);
	st->items = NULL;
	st->len = st->alloc = 0;
	free(st->slots);
	st->slots = NULL;
	st->nslots = 0;
	emu_store_watch_release(st);
	pthread_cond_destroy(&st->changed);
	pthread_mutex_destroy(&st->lock);
}

json_t *emu_status_not_found(const struct emu_resource *res, const char *name)
{
	struct buf q = BUF_INIT, msg = BUF_INIT;
	json_t *st;

	emu_resource_qualified(res, &q);
	buf_addf(&msg, "%s \"%s\" not found", buf_cstr(&q), name);
	st = emu_status_new(404, "NotFound", buf_cstr(&msg), name, res->group,
			    res->name);
	buf_release(&q);
	buf_release(&msg);
	return st;
}

/* 422 Invalid with one FieldValueInvalid cause. */
static json_t *status_invalid(const struct emu_resource *res, const char *name,
			      const char *field, const char *cause_reason,
			      const char *detail)
{
	struct buf msg = BUF_INIT;
	json_t *st, *details;

	/* Kind.group as validation words it (events.k8s.io's is core's) */
	buf_adds(&msg, res->kind);
	if (*res->group && strcmp(res->group, "events.k8s.io"))
		buf_addf(&msg, ".%s", res->group);
	buf_addf(&msg, " \"%s\" is invalid: %s: %s", name, field, detail);
	st = emu_status_new(422, "Invalid", buf_cstr(&msg), name, res->group,
			    res->kind);
	details = json_object_get(st, "details");
	json_object_set_new(details, "causes",
			    json_pack("[{s:s, s:s, s:s}]", "reason",
				      cause_reason, "message", detail, "field",
				      field));
	buf_release(&msg);
	return st;
}

int emu_store_get(struct emu_store *st, const struct emu_resource *res,
		  const char *ns, const char *name, json_t **out)
{
	ssize_t i;

	pthread_mutex_lock(&st->lock);
	i = find(st, res, ns, name);
	*out = i < 0 ? emu_status_not_found(res, name)
		     : json_deep_copy(st->items[i].obj);
	pthread_mutex_unlock(&st->lock);
	return i < 0 ? 404 : 200;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct emu_entry *x = *(struct emu_entry *const *)a;
	const struct emu_entry *y = *(struct emu_entry *const *)b;
	int c = strcmp(x->ns, y->ns);

	return c ? c : strcmp(x->name, y->name);
}

/* "ns/name" of an entry, the order key of lists and continue tokens. */
static void entry_key(const struct emu_entry *e, struct buf *out)
{
	buf_reset(out);
	buf_addf(out, "%s/%s", e->ns, e->name);
}

/*
 * Continue tokens as the etcd3 store writes them: base64url (without
 * padding) of {"v":"meta.k8s.io/v1","rv":RV,"start":"KEY"}.
 */
static void continue_encode(const char *key, uint64_t rv, struct buf *out)
{
	json_t *tok = json_pack("{s:s, s:I, s:s}", "v", "meta.k8s.io/v1",
				"rv", (json_int_t)rv, "start", key);
	char *text = tok ? json_dumps(tok, JSON_COMPACT) : NULL;

	if (text)
		base64_encode(out, text, strlen(text), BASE64_URL | BASE64_NOPAD);
	free(text);
	json_decref(tok);
}

/* Where Go's base64.RawURLEncoding gives up on `s`; -1 when it does not. */
static long b64_error_at(const char *s)
{
	size_t n = strlen(s), i;

	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
			return (long)i;
	return n % 4 == 1 ? (long)n - 1 : -1;
}

/*
 * The key a continue token starts after; -1 with kube's 400 message in
 * `msg` ("invalid continue token: continue key is not valid: ...").
 */
static int continue_decode(const char *s, struct buf *start, struct buf *msg)
{
	struct buf raw = BUF_INIT;
	json_t *tok = NULL;
	long at = b64_error_at(s);
	const char *key, *v;
	int ret = -1;

	buf_adds(msg, "invalid continue token: continue key is not valid: ");
	if (at >= 0 ||
	    base64_decode(&raw, s, strlen(s), BASE64_URL | BASE64_NOPAD) < 0) {
		buf_addf(msg, "illegal base64 data at input byte %ld",
			 at < 0 ? 0 : at);
		goto out;
	}
	tok = json_loadb(raw.ptr ? raw.ptr : "", raw.len, 0, NULL);
	v = json_string_value(json_object_get(tok, "v"));
	key = json_string_value(json_object_get(tok, "start"));
	if (!tok || !v || !key) {
		buf_adds(msg, "invalid character looking for beginning of "
			      "value");
		goto out;
	}
	if (strcmp(v, "meta.k8s.io/v1")) {
		buf_adds(msg, "server does not recognize this encoded version");
		goto out;
	}
	buf_adds(start, key);
	buf_reset(msg);
	ret = 0;
out:
	json_decref(tok);
	buf_release(&raw);
	return ret;
}

static bool field_ok(const char *want, bool negated, const char *have)
{
	if (!want)
		return true;
	return negated ? strcmp(want, have) != 0 : strcmp(want, have) == 0;
}

int emu_store_list(struct emu_store *st, const struct emu_resource *res,
		   const struct emu_list_options *opts, json_t **out)
{
	struct emu_entry **sel = NULL;
	struct buf start = BUF_INIT, key = BUF_INIT, tok = BUF_INIT;
	struct buf lk = BUF_INIT;
	json_t *items = NULL, *list = NULL, *item, *meta;
	size_t n = 0, i, first = 0, count;
	const struct emu_entry *e;
	bool custom = emu_resource_is_custom(res);
	int code = 200;
	char rv[24];

	if (opts->cont && *opts->cont &&
	    continue_decode(opts->cont, &start, &tok) < 0) {
		*out = emu_status_new(400, "BadRequest", buf_cstr(&tok), NULL,
				      NULL, NULL);
		buf_release(&tok);
		buf_release(&start);
		return 400;
	}
	pthread_mutex_lock(&st->lock);
	sel = calloc(st->len ? st->len : 1, sizeof(*sel));
	if (!sel) {
		code = 500;
		goto out;
	}
	for (i = 0; i < st->len; i++) {
		e = &st->items[i];
		if (e->res != res || (opts->ns && strcmp(opts->ns, e->ns)))
			continue;
		if (opts->fields &&
		    (!field_ok(opts->fields->name, opts->fields->name_negated,
			       e->name) ||
		     !field_ok(opts->fields->ns, opts->fields->ns_negated,
			       e->ns)))
			continue;
		if (opts->labels &&
		    !emu_selector_matches(
			    opts->labels,
			    json_object_get(json_object_get(e->obj, "metadata"),
					    "labels")))
			continue;
		sel[n++] = &st->items[i];
	}
	qsort(sel, n, sizeof(*sel), entry_cmp);
	if (start.len) {
		while (first < n) {
			entry_key(sel[first], &key);
			if (strcmp(buf_cstr(&key), buf_cstr(&start)) > 0)
				break;
			first++;
		}
	}
	items = json_array();
	for (i = first, count = 0; i < n; i++, count++) {
		if (opts->limit && count == opts->limit)
			break;
		/*
		 * A shallow copy: stored objects are never changed in place
		 * (a write stores a new object), so the items may share
		 * their members; readers of a list must not change them.
		 * Typed lists drop each item's kind and apiVersion;
		 * custom resources, unstructured in kube, keep them.
		 */
		item = json_copy(sel[i]->obj);
		if (!custom) {
			json_object_del(item, "kind");
			json_object_del(item, "apiVersion");
		}
		json_array_append_new(items, item);
	}
	snprintf(rv, sizeof(rv), "%llu", (unsigned long long)st->rv);
	meta = json_pack("{s:s}", "resourceVersion", rv);
	if (i < n) {
		entry_key(sel[i - 1], &key);
		continue_encode(buf_cstr(&key), st->rv, &tok);
		json_object_set_new(meta, "continue",
				    json_string(buf_cstr(&tok)));
		json_object_set_new(meta, "remainingItemCount",
				    json_integer((json_int_t)(n - i)));
	} else if (custom) {
		/* an unstructured list writes its empty continue */
		json_object_set_new(meta, "continue", json_string(""));
	}
	if (emu_crd_list_kind(res))
		buf_adds(&lk, emu_crd_list_kind(res));
	else
		buf_addf(&lk, "%sList", res->kind);
	buf_reset(&key);
	emu_resource_api_version(res, &key);
	list = json_pack("{s:s, s:s, s:o, s:o}", "kind", buf_cstr(&lk),
			 "apiVersion", buf_cstr(&key), "metadata", meta,
			 "items", items);
	items = NULL;
out:
	pthread_mutex_unlock(&st->lock);
	if (code != 200)
		list = emu_status_new(500, "InternalError", "out of memory",
				      NULL, NULL, NULL);
	*out = list;
	json_decref(items);
	free(sel);
	buf_release(&start);
	buf_release(&key);
	buf_release(&tok);
	buf_release(&lk);
	return code;
}

/* json_equal() of two objects' members other than `skip`. */
static bool equal_except(const json_t *a, const json_t *b, const char *skip)
{
	const char *k;
	json_t *v;

	if (json_object_size(a) - (json_object_get(a, skip) != NULL) !=
	    json_object_size(b) - (json_object_get(b, skip) != NULL))
		return false;
	json_object_foreach((json_t *)a, k, v)
	{
		if (strcmp(k, skip) && !json_equal(v, json_object_get(b, k)))
			return false;
	}
	return true;
}

/* managedFields that differ at most in their entries' times. */
static bool managed_equal_but_times(const json_t *a, const json_t *b)
{
	size_t i;

	if (json_array_size(a) != json_array_size(b))
		return false;
	for (i = 0; i < json_array_size(a); i++)
		if (!equal_except(json_array_get(a, i), json_array_get(b, i),
				  "time"))
			return false;
	return true;
}

/*
 * Would storing `obj` over `old` change nothing? The managedFields of
 * the writer's own entry get a new time even when it touched nothing;
 * such an update is still a no-op, as in kube (mf_before: obj's
 * managedFields before the bookkeeping). An apply whose merge differed
 * from the live object only by what defaulting puts back is one too:
 * kube-apiserver keeps the old managedFields when only their times
 * changed (IgnoreManagedFieldsTimestampsTransformer).
 */
static bool is_noop(const json_t *obj, const json_t *old,
		    const json_t *mf_before)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const json_t *oldmeta = json_object_get(old, "metadata");
	const json_t *oldmf = json_object_get(oldmeta, "managedFields");

	if (json_equal(obj, old))
		return true;
	return equal_except(obj, old, "metadata") &&
	       equal_except(meta, oldmeta, "managedFields") &&
	       (json_equal(mf_before, oldmf) ||
		managed_equal_but_times(json_object_get(meta, "managedFields"),
					oldmf));
}

/*
 * Does the update change what bumps metadata.generation? Built-in kinds:
 * the spec. Custom resources: anything but metadata (and status when
 * it has its own subresource), as kube's customresource strategy.
 */
static bool generation_changes(const struct emu_resource *res,
			       const json_t *obj, const json_t *old)
{
	const char *k;
	json_t *v;

	/*
	 * A Deployment's annotations bump it too: they are copied to its
	 * ReplicaSets (the deployment strategy's PrepareForUpdate).
	 */
	if (!strcmp(res->group, "apps") && !strcmp(res->kind, "Deployment")) {
		const json_t *a = json_object_get(
			json_object_get(obj, "metadata"), "annotations");
		const json_t *b = json_object_get(
			json_object_get(old, "metadata"), "annotations");

		if ((a || b) && !json_equal(a, b))
			return true;
	}
	if (!emu_resource_is_custom(res))
		return !json_equal(json_object_get(obj, "spec"),
				   json_object_get(old, "spec"));
	json_object_foreach((json_t *)obj, k, v)
	{
		if (!strcmp(k, "metadata") ||
		    (!strcmp(k, "status") && (res->flags & EMU_RES_STATUS)))
			continue;
		if (!json_equal(v, json_object_get(old, k)))
			return true;
	}
	json_object_foreach((json_t *)old, k, v)
	{
		if (!strcmp(k, "metadata") ||
		    (!strcmp(k, "status") && (res->flags & EMU_RES_STATUS)))
			continue;
		if (!json_object_get(obj, k))
			return true;
	}
	return false;
}

/*
 * Defaulting, validation, managedFields and admission of a write, in
 * kube's order: defaults are owned by the writer (they are part of its
 * request once defaulted), what admission adds is owned by nobody.
 * `old` is NULL on create. Returns NULL, or a new Status refusing the
 * write. Lock held.
 */
static json_t *admit_write(struct emu_store *st, const struct emu_resource *res,
			   json_t *obj, const json_t *old, const char *manager,
			   const char *sub)
{
	bool crd = is_crd_res(res) && !sub;
	struct buf av = BUF_INIT, ignored = BUF_INIT;
	json_t *status, *before = NULL;
	int root = emu_resource_is_custom(res)
			   ? -1
			   : diff_gotype_root(res->group, res->version, res->kind);

	/*
	 * A built-in kind goes through its Go type: decoded (the handler
	 * has refused what does not decode), defaulted, encoded.
	 */
	if (root >= 0)
		diff_gotype_decode(obj, root, NULL, &ignored);
	status = emu_defaults_apply(res, obj, old);
	if (!status && root >= 0)
		diff_gotype_encode(obj, root);
	if (!status && crd)
		status = emu_crd_prepare(res, obj);
	if (status)
		goto out;
	emu_resource_api_version(res, &av);
	if (manager)
		emu_managed_update(obj, old, res, manager, sub, av.ptr);
	/*
	 * Then the registry: what it sets nobody owns; the object is
	 * validated as stored, and read back through the decoder's
	 * defaults again (a Job's labels come from its generated ones).
	 */
	if (!sub || strcmp(sub, "status")) {
		if ((status = emu_defaults_prepare(st, res, obj, old)))
			goto out;
		json_decref(emu_defaults_apply(res, obj, old));
		if (root >= 0)
			diff_gotype_encode(obj, root);
	}
	if ((status = emu_validate_object(res, obj, old, sub)))
		goto out;
	if (crd && !old) {
		/* PrepareForCreate: only the storage version is known */
		before = json_deep_copy(obj);
		emu_crd_set_status(before, NULL);
		json_object_set_new(
			obj, "status",
			json_pack("{s:O}", "storedVersions",
				  json_object_get(json_object_get(before,
								  "status"),
						  "storedVersions")));
		if (root >= 0)
			diff_gotype_encode(obj, root);
	}
	/*
	 * Webhook rules name resources, not subresources: a rule on
	 * "deployments" does not see writes to deployments/status.
	 */
	if (!sub)
		status = emu_actors_admit(st->actors, res,
					  old ? "UPDATE" : "CREATE", obj);
out:
	json_decref(before);
	buf_release(&av);
	buf_release(&ignored);
	return status;
}

const json_t *emu_store_peek(const struct emu_store *st,
			     const struct emu_resource *res, const char *ns,
			     const char *name)
{
	ssize_t i = find(st, res, ns, name);

	return i < 0 ? NULL : st->items[i].obj;
}

void emu_random_suffix(struct buf *out)
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	unsigned char b[5];
	size_t i;

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		for (i = 0; i < sizeof(b); i++)
			b[i] = (unsigned char)rand();
	for (i = 0; i < sizeof(b); i++)
		buf_addch(out, alphabet[b[i] % (sizeof(alphabet) - 1)]);
}

/* Random suffix of generateName, as kube: 5 characters. */
static void generate_name(const char *prefix, struct buf *out)
{
	buf_adds(out, prefix);
	emu_random_suffix(out);
}

/*
 * The CRD as its naming and establishing controllers (which run inside
 * kube-apiserver) leave it: names accepted or not, Established, stored
 * versions, a /status Update of "kube-apiserver". New reference.
 */
static json_t *crd_established(const struct emu_resource *res,
			       const json_t *crd)
{
	json_t *out = json_deep_copy(crd);

	if (!out)
		return NULL;
	emu_crd_set_status(out, crd);
	if (!json_equal(json_object_get(out, "status"),
			json_object_get(crd, "status")) &&
	    json_object_get(json_object_get(crd, "metadata"), "managedFields"))
		emu_managed_update(out, crd, res, "kube-apiserver", "status",
				   "apiextensions.k8s.io/v1");
	return out;
}

/*
 * Store the controllers' status write of the CRD at index i as a write
 * of its own (a new resourceVersion, a MODIFIED event) when it changes
 * anything. Lock held.
 */
static void crd_controllers(struct emu_store *st, size_t i)
{
	struct emu_entry *e = &st->items[i];
	json_t *next = crd_established(e->res, e->obj), *prev;

	if (!next || json_equal(json_object_get(next, "status"),
				json_object_get(e->obj, "status"))) {
		json_decref(next);
		return;
	}
	set_rv(json_object_get(next, "metadata"), ++st->rv);
	prev = e->obj;
	e->obj = stored_copy(next);
	if (e->obj)
		emu_store_record(st, "MODIFIED", e->res, e->ns, e->name, e->obj,
				 prev);
	else
		e->obj = json_incref(prev);
	json_decref(prev);
	json_decref(next);
}

int emu_store_create(struct emu_store *st, const struct emu_resource *res,
		     const char *ns, const json_t *in, const char *manager,
		     bool dry_run, json_t **out)
{
	struct buf name = BUF_INIT, msg = BUF_INIT;
	json_t *obj = json_deep_copy(in), *meta, *refused, *stored;
	const char *why, *gen;
	char ts[32], uid[37];
	int code = 201;

	pthread_mutex_lock(&st->lock);
	meta = json_object_get(obj, "metadata");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(obj, "metadata", meta);
	}
	if (meta_str(obj, "name") && *meta_str(obj, "name")) {
		buf_adds(&name, meta_str(obj, "name"));
	} else if ((gen = meta_str(obj, "generateName")) && *gen) {
		generate_name(gen, &name);
		json_object_set_new(meta, "name", json_string(name.ptr));
	} else {
		*out = status_invalid(res, "", "metadata.name",
				      "FieldValueRequired",
				      "Required value: name or generateName "
				      "is required");
		code = 422;
		goto out;
	}
	if (emu_name_check(name.ptr, res->name_rule, &why) < 0) {
		buf_addf(&msg, "Invalid value: \"%s\": %s", name.ptr, why);
		*out = status_invalid(res, name.ptr, "metadata.name",
				      "FieldValueInvalid", msg.ptr);
		code = 422;
		goto out;
	}
	if (*ns && find(st, namespaces_res(), "", ns) < 0) {
		*out = emu_status_not_found(namespaces_res(), ns);
		code = 404;
		goto out;
	}
	if (find(st, res, ns, name.ptr) >= 0) {
		buf_reset(&msg);
		emu_resource_qualified(res, &msg);
		buf_addf(&msg, " \"%s\" already exists", name.ptr);
		*out = emu_status_new(409, "AlreadyExists", msg.ptr, name.ptr,
				      res->group, res->name);
		code = 409;
		goto out;
	}
	if (*ns)
		json_object_set_new(meta, "namespace", json_string(ns));
	else
		json_object_del(meta, "namespace");
	new_uid(uid);
	clk_rfc3339_format(time(NULL), ts);
	json_object_set_new(meta, "uid", json_string(uid));
	json_object_del(meta, "resourceVersion");
	json_object_set_new(meta, "creationTimestamp", json_string(ts));
	if (res->flags & EMU_RES_GENERATION)
		json_object_set_new(meta, "generation", json_integer(1));
	else
		json_object_del(meta, "generation");
	if (res->flags & EMU_RES_STATUS)
		json_object_del(obj, "status");
	if (res == namespaces_res())
		namespace_label(obj, name.ptr);
	if ((refused = admit_write(st, res, obj, NULL, manager, NULL))) {
		code = (int)json_integer_value(
			json_object_get(refused, "code"));
		*out = refused;
		goto out;
	}
	if (res == namespaces_res())
		namespace_prepare(obj, NULL);
	/* Admission may not rename or move the object. */
	meta = json_object_get(obj, "metadata");
	json_object_set_new(meta, "name", json_string(name.ptr));
	if (*ns)
		json_object_set_new(meta, "namespace", json_string(ns));
	if (!dry_run && is_crd_res(res)) {
		json_t *final = crd_established(res, obj);

		if (!final || emu_crd_register(final, &msg) < 0) {
			json_decref(final);
			*out = status_invalid(
				res, name.ptr,
				"spec.versions[0].schema.openAPIV3Schema",
				"FieldValueInvalid", buf_cstr(&msg));
			code = 422;
			goto out;
		}
		json_decref(final);
	}
	if (!dry_run) {
		set_rv(meta, ++st->rv);
		stored = stored_copy(obj);
		if (!stored || insert(st, res, ns, name.ptr, stored) < 0) {
			*out = emu_status_new(500, "InternalError",
					      "out of memory", NULL, NULL,
					      NULL);
			code = 500;
			goto out;
		}
		/* Events share the stored object, which never changes. */
		emu_store_record(st, "ADDED", res, ns, name.ptr, stored, NULL);
		emu_actors_notify(st->actors, res, obj);
		if (is_crd_res(res))
			crd_controllers(st, st->len - 1);
	}
	*out = json_incref(obj);
out:
	pthread_mutex_unlock(&st->lock);
	json_decref(obj);
	buf_release(&name);
	buf_release(&msg);
	return code;
}

static void purge(struct emu_store *st, size_t i);


/* "configmaps \"x\"" becomes kube's optimistic-concurrency message. */
static void conflict_message(struct buf *msg)
{
	struct buf full = BUF_INIT;

	buf_addf(&full,
		 "Operation cannot be fulfilled on %s: the object has been "
		 "modified; please apply your changes to the latest version "
		 "and try again",
		 buf_cstr(msg));
	buf_release(msg);
	*msg = full;
}

/* What an update keeps of the stored metadata, whatever the body says. */
static void keep_server_meta(json_t *meta, const json_t *oldmeta)
{
	static const char *const kept[] = {"uid",
					   "creationTimestamp",
					   "generation",
					   "resourceVersion",
					   "deletionTimestamp",
					   "deletionGracePeriodSeconds",
					   NULL};
	const char *const *k;

	for (k = kept; *k; k++) {
		if (json_object_get(oldmeta, *k))
			json_object_set(meta, *k, json_object_get(oldmeta, *k));
		else
			json_object_del(meta, *k);
	}
}

int emu_store_update(struct emu_store *st, const struct emu_resource *res,
		     const char *ns, const char *name, const char *sub,
		     const char *manager, const json_t *in, bool dry_run,
		     json_t **out)
{
	bool status_only = sub && !strcmp(sub, "status");
	struct buf msg = BUF_INIT;
	json_t *obj = NULL, *old, *meta, *oldmeta, *refused, *mf_before = NULL;
	json_t *prev;
	const char *rv;
	json_int_t gen;
	ssize_t i;
	int code = 200;

	pthread_mutex_lock(&st->lock);
	i = find(st, res, ns, name);
	if (i < 0) {
		*out = emu_status_not_found(res, name);
		code = 404;
		goto out;
	}
	old = st->items[i].obj;
	oldmeta = json_object_get(old, "metadata");
	rv = meta_str(in, "resourceVersion");
	if (rv && *rv && strcmp(rv, meta_str(old, "resourceVersion"))) {
		emu_resource_qualified(res, &msg);
		buf_addf(&msg, " \"%s\"", name);
		conflict_message(&msg);
		*out = emu_status_new(409, "Conflict", msg.ptr, name,
				      res->group, res->name);
		code = 409;
		goto out;
	}
	if (status_only) {
		/* /status: only the status comes from the body. */
		obj = json_deep_copy(old);
		if (json_object_get(in, "status"))
			json_object_set_new(
				obj, "status",
				json_deep_copy(json_object_get(in, "status")));
		else
			json_object_del(obj, "status");
	} else {
		obj = json_deep_copy(in);
		if (!json_is_object(json_object_get(obj, "metadata")))
			json_object_set_new(obj, "metadata", json_object());
		if (res->flags & EMU_RES_STATUS) {
			if (json_object_get(old, "status"))
				json_object_set_new(
					obj, "status",
					json_deep_copy(json_object_get(
						old, "status")));
			else
				json_object_del(obj, "status");
		}
	}
	meta = json_object_get(obj, "metadata");
	json_object_set_new(meta, "name", json_string(name));
	if (*ns)
		json_object_set_new(meta, "namespace", json_string(ns));
	keep_server_meta(meta, oldmeta);
	if (res == namespaces_res())
		namespace_label(obj, name);
	if (!json_is_array(json_object_get(meta, "managedFields"))) {
		if (json_object_get(oldmeta, "managedFields"))
			json_object_set(
				meta, "managedFields",
				json_object_get(oldmeta, "managedFields"));
		else
			json_object_del(meta, "managedFields");
	}
	mf_before = json_incref(json_object_get(meta, "managedFields"));
	if ((refused = admit_write(st, res, obj, old, manager, sub))) {
		code = (int)json_integer_value(
			json_object_get(refused, "code"));
		*out = refused;
		goto out;
	}
	/* Admission may not rename the object or touch what the server owns. */
	meta = json_object_get(obj, "metadata");
	json_object_set_new(meta, "name", json_string(name));
	keep_server_meta(meta, oldmeta);
	if (res == namespaces_res() && !status_only)
		namespace_prepare(obj, old);
	if (is_noop(obj, old, mf_before)) {
		*out = json_deep_copy(old);
		goto out;
	}
	if ((res->flags & EMU_RES_GENERATION) &&
	    generation_changes(res, obj, old)) {
		gen = json_integer_value(
			json_object_get(oldmeta, "generation"));
		json_object_set_new(meta, "generation", json_integer(gen + 1));
	}
	if (!dry_run && is_crd_res(res)) {
		json_t *final = crd_established(res, obj);

		if (!final || emu_crd_register(final, &msg) < 0) {
			json_decref(final);
			*out = status_invalid(
				res, name,
				"spec.versions[0].schema.openAPIV3Schema",
				"FieldValueInvalid", buf_cstr(&msg));
			code = 422;
			goto out;
		}
		json_decref(final);
	}
	/*
	 * An object being deleted goes once an update leaves it without
	 * finalizers; the answer is what was written, without its
	 * managedFields, at the version it had.
	 */
	if (json_object_get(oldmeta, "deletionTimestamp") &&
	    !json_array_size(json_object_get(meta, "finalizers"))) {
		json_object_del(meta, "managedFields");
		json_object_set(meta, "resourceVersion",
				json_object_get(oldmeta, "resourceVersion"));
		if (!dry_run)
			purge(st, (size_t)i);
		*out = json_incref(obj);
		goto out;
	}
	if (!dry_run) {
		set_rv(meta, ++st->rv);
		prev = st->items[i].obj;
		st->items[i].obj = stored_copy(obj);
		if (st->items[i].obj)
			emu_store_record(st, "MODIFIED", res, ns, name,
					 st->items[i].obj, prev);
		json_decref(prev);
		emu_actors_notify(st->actors, res, obj);
		if (is_crd_res(res) && !status_only)
			crd_controllers(st, (size_t)i);
	}
	*out = json_incref(obj);
out:
	pthread_mutex_unlock(&st->lock);
	json_decref(obj);
	json_decref(mf_before);
	buf_release(&msg);
	return code;
}

static bool is_initial_namespace(const char *name)
{
	const char *const *ns;

	for (ns = initial_namespaces; *ns; ns++)
		if (!strcmp(*ns, name))
			return true;
	return false;
}

/*
 * Remove entry i for good, with what goes with it: a CRD's custom
 * objects and resources, a namespace's objects. Lock held.
 */
static void purge(struct emu_store *st, size_t i)
{
	const struct emu_resource *res = st->items[i].res;
	json_t *crd = is_crd_res(res) ? json_incref(st->items[i].obj) : NULL;
	char *ns = res == namespaces_res() ? strdup(st->items[i].name) : NULL;
	size_t j;

	remove_at(st, i);
	if (crd) {
		/* Its custom objects go with it, then its resources. */
		for (j = st->len; j-- > 0;)
			if (emu_crd_serves(crd, st->items[j].res))
				remove_at(st, j);
		emu_crd_unregister(crd);
		json_decref(crd);
	}
	if (ns) {
		/* The namespace's objects go with it. */
		for (j = st->len; j-- > 0;)
			if ((st->items[j].res->flags & EMU_RES_NAMESPACED) &&
			    !strcmp(st->items[j].ns, ns))
				remove_at(st, j);
	}
	free(ns);
}

/* The condition the CRD registry's deletion adds to its status. */
static void crd_terminating(json_t *crd, const char *now)
{
	json_t *status = json_object_get(crd, "status"), *conds;

	if (!json_is_object(status))
		return;
	conds = json_object_get(status, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(status, "conditions", conds);
	}
	json_array_append_new(
		conds, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type",
				 "Terminating", "status", "True",
				 "lastTransitionTime", now, "reason",
				 "InstanceDeletionPending", "message",
				 "CustomResourceDefinition marked for deletion; "
				 "CustomResource deletion will begin soon"));
}

/* Does the deletion of an object of `res` answer the deleted object
 * (the registries' ReturnDeletedObject) rather than a Success Status? */
static bool returns_deleted_object(const struct emu_resource *res)
{
	static const char *const core[] = {"namespaces", "pods", "services",
					   "serviceaccounts", NULL};
	const char *const *p;

	if (*res->group)
		return false;
	for (p = core; *p; p++)
		if (!strcmp(res->name, *p))
			return true;
	return false;
}

/* Add `f` to the finalizers array `list` unless it is there. */
static void add_finalizer(json_t *list, const char *f)
{
	json_t *v;
	size_t i;

	json_array_foreach(list, i, v)
	{
		if (json_is_string(v) && !strcmp(json_string_value(v), f))
			return;
	}
	json_array_append_new(list, json_string(f));
}

/*
 * May the emulator finish what a controller of a full cluster finishes
 * within moments? The garbage collector's foregroundDeletion and orphan,
 * the namespace controller's "kubernetes" and the apiextensions cleanup
 * of a CRD; a finalizer of anybody else's keeps the object.
 */
static bool only_controller_finalizers(const json_t *meta)
{
	static const char *const known[] = {
		"foregroundDeletion", "orphan",
		"customresourcecleanup.apiextensions.k8s.io", NULL};
	const char *const *k;
	const json_t *f;
	size_t i;

	json_array_foreach(json_object_get(meta, "finalizers"), i, f)
	{
		for (k = known; *k; k++)
			if (json_is_string(f) && !strcmp(json_string_value(f), *k))
				break;
		if (!*k)
			return false;
	}
	return true;
}

int emu_store_delete_opts(struct emu_store *st, const struct emu_resource *res,
			  const char *ns, const char *name,
			  const char *propagation, bool dry_run, json_t **out)
{
	struct buf msg = BUF_INIT;
	json_t *details, *marked = NULL, *meta, *fin, *gone;
	bool is_ns = res == namespaces_res(), has_finalizers;
	char ts[32];
	ssize_t i;
	int code = 200;

	pthread_mutex_lock(&st->lock);
	i = find(st, res, ns, name);
	if (i < 0) {
		*out = emu_status_not_found(res, name);
		code = 404;
		goto out;
	}
	if (is_ns && is_initial_namespace(name)) {
		buf_addf(&msg,
			 "namespaces \"%s\" is forbidden: this "
			 "namespace may not be deleted",
			 name);
		*out = emu_status_new(403, "Forbidden", msg.ptr, name, "",
				      "namespaces");
		code = 403;
		goto out;
	}
	/*
	 * With finalizers (its own, or those the deletion adds: the
	 * namespace's, a CRD's cleanup, the garbage collector's for
	 * Foreground and Orphan) the object is only marked: a
	 * deletionTimestamp, and the marked object is the answer.
	 */
	marked = json_deep_copy(st->items[i].obj);
	meta = json_object_get(marked, "metadata");
	fin = json_object_get(meta, "finalizers");
	if (!json_is_array(fin)) {
		fin = json_array();
		json_object_set_new(meta, "finalizers", fin);
	}
	if (propagation && !strcmp(propagation, "Foreground"))
		add_finalizer(fin, "foregroundDeletion");
	else if (propagation && !strcmp(propagation, "Orphan"))
		add_finalizer(fin, "orphan");
	if (is_crd_res(res))
		add_finalizer(fin, "customresourcecleanup.apiextensions.k8s.io");
	has_finalizers = json_array_size(fin) > 0;
	if (!has_finalizers)
		json_object_del(meta, "finalizers"); /* frees fin */
	if (has_finalizers || is_ns) {
		if (!json_object_get(meta, "deletionTimestamp")) {
			clk_rfc3339_format(time(NULL), ts);
			json_object_set_new(meta, "deletionTimestamp",
					    json_string(ts));
			/*
			 * rest.BeforeDelete: no grace period, a new
			 * generation; namespaces and CRDs have deletions of
			 * their own.
			 */
			if (!is_ns && !is_crd_res(res)) {
				json_object_set_new(meta,
						    "deletionGracePeriodSeconds",
						    json_integer(0));
				if (json_integer_value(
					    json_object_get(meta, "generation")))
					json_object_set_new(
						meta, "generation",
						json_integer(
							json_integer_value(
								json_object_get(
									meta,
									"generation")) +
							1));
			}
			if (is_crd_res(res))
				crd_terminating(marked, ts);
		}
		if (is_ns)
			json_object_set_new(json_object_get(marked, "status"),
					    "phase", json_string("Terminating"));
		if (!dry_run) {
			set_rv(meta, ++st->rv);
			gone = st->items[i].obj;
			st->items[i].obj = stored_copy(marked);
			emu_store_record(st, "MODIFIED", res, ns, name,
					 st->items[i].obj, gone);
			json_decref(gone);
			/*
			 * The controllers a full cluster runs finish it at
			 * once: the namespace's contents, a CRD's objects,
			 * the dependents of a Foreground or Orphan deletion
			 * (there are none the emulator tracks).
			 */
			if (is_ns || only_controller_finalizers(meta))
				purge(st, (size_t)i);
		}
		*out = marked;
		marked = NULL;
		goto out;
	}
	if (returns_deleted_object(res)) {
		*out = json_incref(marked);
		set_rv(json_object_get(*out, "metadata"), st->rv + 1);
	} else {
		*out = json_pack("{s:s, s:s, s:{}, s:s, s:{s:s, s:s, s:O}}",
				 "kind", "Status", "apiVersion", "v1",
				 "metadata", "status", "Success", "details",
				 "name", name, "kind", res->name, "uid",
				 json_object_get(meta, "uid"));
		if (*res->group) {
			details = json_object_get(*out, "details");
			json_object_set_new(details, "group",
					    json_string(res->group));
		}
	}
	if (!dry_run)
		purge(st, (size_t)i);
out:
	pthread_mutex_unlock(&st->lock);
	json_decref(marked);
	buf_release(&msg);
	return code;
}

int emu_store_delete(struct emu_store *st, const struct emu_resource *res,
		     const char *ns, const char *name, bool dry_run,
		     json_t **out)
{
	return emu_store_delete_opts(st, res, ns, name, NULL, dry_run, out);
}

/* "apps/v1/deployments" or "/v1/configmaps". */
static void resource_path(const struct emu_resource *res, struct buf *out)
{
	buf_addf(out, "%s/%s/%s", res->group, res->version, res->name);
}

json_t *emu_store_dump(struct emu_store *st)
{
	struct buf path = BUF_INIT, rv = BUF_INIT;
	json_t *doc, *objs;
	size_t i;

	doc = json_object();
	objs = json_array();
	if (!doc || !objs)
		goto fail;
	pthread_mutex_lock(&st->lock);
	for (i = 0; i < st->len; i++) {
		buf_reset(&path);
		resource_path(st->items[i].res, &path);
		if (json_array_append_new(
			    objs, json_pack("{s:s, s:O}", "resource", path.ptr,
					    "object", st->items[i].obj)) < 0) {
			pthread_mutex_unlock(&st->lock);
			goto fail;
		}
	}
	buf_addf(&rv, "%llu", (unsigned long long)st->rv);
	pthread_mutex_unlock(&st->lock);
	json_object_set_new(doc, "resourceVersion", json_string(rv.ptr));
	json_object_set_new(doc, "objects", objs);
	buf_release(&path);
	buf_release(&rv);
	return doc;
fail:
	buf_release(&path);
	buf_release(&rv);
	json_decref(objs);
	json_decref(doc);
	return NULL;
}

/* The resource named "G/V/PLURAL", or NULL. */
static const struct emu_resource *resource_of_path(const char *path)
{
	char *copy = strdup(path), *v, *n;
	const struct emu_resource *res = NULL;

	if (copy && (v = strchr(copy, '/')) && (n = strchr(v + 1, '/'))) {
		*v++ = '\0';
		*n++ = '\0';
		res = emu_resource_find(copy, v, n);
	}
	free(copy);
	return res;
}

int emu_store_restore(struct emu_store *st, const json_t *dump,
		      struct buf *msg)
{
	const json_t *objs = json_object_get(dump, "objects"), *o, *obj;
	const struct emu_resource *res;
	struct emu_store tmp;
	const char *rvs = json_string_value(
		json_object_get(dump, "resourceVersion"));
	unsigned long long rv;
	char *end;
	size_t i;
	int pass, ret = -1;

	if (!json_is_array(objs) || !rvs) {
		buf_adds(msg, "not a kube-emu data file "
			      "(no objects or resourceVersion)");
		return -1;
	}
	rv = strtoull(rvs, &end, 10);
	if (*end || !*rvs) {
		buf_addf(msg, "bad resourceVersion \"%s\"", rvs);
		return -1;
	}
	/* Check every entry before touching the store. */
	json_array_foreach(objs, i, o)
	{
		obj = json_object_get(o, "object");
		if (!json_is_string(json_object_get(o, "resource")) ||
		    !json_is_object(obj) || !meta_str(obj, "name")) {
			buf_addf(msg, "objects[%zu]: want resource and object "
				      "with metadata.name",
				 i);
			return -1;
		}
	}
	/* Build the new contents aside; swap them in only when complete. */
	memset(&tmp, 0, sizeof(tmp));
	/*
	 * Pass 0 stores CustomResourceDefinitions, pass 1 everything else:
	 * a custom resource's kind exists only once its CRD does.
	 */
	for (pass = 0; pass < 2; pass++) {
		json_array_foreach(objs, i, o)
		{
			const char *path = json_string_value(
				json_object_get(o, "resource"));
			bool is_crd = !strncmp(path, "apiextensions.k8s.io/",
					       21);
			const char *ns;

			if (is_crd != (pass == 0))
				continue;
			obj = json_object_get(o, "object");
			res = resource_of_path(path);
			if (!res) {
				buf_addf(msg, "objects[%zu]: unknown resource "
					      "\"%s\"",
					 i, path);
				goto out;
			}
			ns = meta_str(obj, "namespace");
			if (find(&tmp, res, ns ? ns : "",
				 meta_str(obj, "name")) >= 0) {
				buf_addf(msg,
					 "objects[%zu]: duplicate %s \"%s\"", i,
					 path, meta_str(obj, "name"));
				goto out;
			}
			if (insert(&tmp, res, ns ? ns : "",
				   meta_str(obj, "name"),
				   stored_copy(obj)) < 0) {
				buf_adds(msg, "out of memory");
				goto out;
			}
			if (is_crd_res(res) && emu_crd_register(obj, msg) < 0)
				goto out;
		}
	}
	pthread_mutex_lock(&st->lock);
	for (i = 0; i < st->len; i++)
		entry_release(&st->items[i]);
	free(st->items);
	free(st->slots);
	st->items = tmp.items;
	st->len = tmp.len;
	st->alloc = tmp.alloc;
	st->slots = tmp.slots;
	st->nslots = tmp.nslots;
	tmp.items = NULL;
	tmp.slots = NULL;
	tmp.len = 0;
	st->rv = rv;
	pthread_mutex_unlock(&st->lock);
	ret = 0;
out:
	for (i = 0; i < tmp.len; i++)
		entry_release(&tmp.items[i]);
	free(tmp.items);
	free(tmp.slots);
	return ret;
}

/* ---- JSON text ---- */

/* An output buffer that remembers its first failed append. */
struct writer {
	struct buf *out;
	int error;
};

static void put(struct writer *w, const char *s, size_t len)
{
	if (!w->error && buf_add(w->out, s, len) < 0)
		w->error = -1;
}

static void write_string(struct writer *w, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = s, *end = s + len;
	char esc[7] = "\\u00";
	unsigned char c;

	put(w, "\"", 1);
	for (; s < end; s++) {
		c = (unsigned char)*s;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(w, run, (size_t)(s - run));
		run = s + 1;
		switch (c) {
		case '"':
			put(w, "\\\"", 2);
			break;
		case '\\':
			put(w, "\\\\", 2);
			break;
		case '\b':
			put(w, "\\b", 2);
			break;
		case '\f':
			put(w, "\\f", 2);
			break;
		case '\n':
			put(w, "\\n", 2);
			break;
		case '\r':
			put(w, "\\r", 2);
			break;
		case '\t':
			put(w, "\\t", 2);
			break;
		default:
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			put(w, esc, 6);
		}
	}
	put(w, run, (size_t)(s - run));
	put(w, "\"", 1);
}

static void write_value(struct writer *w, const json_t *v)
{
	const char *key;
	json_t *m;
	char num[32], *text;
	size_t i;
	bool first = true;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		put(w, "{", 1);
		json_object_foreach((json_t *)v, key, m)
		{
			if (!first)
				put(w, ",", 1);
			first = false;
			write_string(w, key, strlen(key));
			put(w, ":", 1);
			write_value(w, m);
		}
		put(w, "}", 1);
		break;
	case JSON_ARRAY:
		put(w, "[", 1);
		json_array_foreach(v, i, m)
		{
			if (i)
				put(w, ",", 1);
			write_value(w, m);
		}
		put(w, "]", 1);
		break;
	case JSON_STRING:
		write_string(w, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		put(w, num, strlen(num));
		break;
	case JSON_TRUE:
		put(w, "true", 4);
		break;
	case JSON_FALSE:
		put(w, "false", 5);
		break;
	case JSON_NULL:
		put(w, "null", 4);
		break;
	default:
		/* Reals: jansson's own digits, so both writers agree. */
		text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!text)
			w->error = -1;
		else
			put(w, text, strlen(text));
		free(text);
	}
}

int emu_json_write(const json_t *v, struct buf *out)
{
	struct writer w = {out, 0};

	write_value(&w, v);
	return w.error;
}
