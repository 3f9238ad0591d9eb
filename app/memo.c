/*
 * The verdicts kept from one pass to the next (app_memo in app.h).
 *
 * An open-addressing table of fixed-size entries: 64-bit hashes of the
 * identity and of the version, the count of differences ignore rules
 * dropped and the health, its reason one of a few texts kept once. No
 * name is stored, so 10,000 verdicts take 384 KB. A hash is FNV-1a over
 * the strings with a NUL after each; a verdict is taken for another
 * object only if both its 64-bit hashes collide with that object's,
 * identity and version, the version being a uid the server chose and a
 * resourceVersion.
 */
#include "app/app.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/fnv.h"
#include "util/banned.h" /* last */

#define MEMO_REASONS 64 /* distinct health reasons kept; more: not kept */

struct memo_entry {
	uint64_t key; /* 0: free (a hash of 0 is taken as 1) */
	uint64_t version;
	uint32_t ignored;
	uint8_t state;
	uint8_t reason; /* index in reasons, +1; 0: none */
};

struct app_memo {
	char *basis;
	struct memo_entry *slots;
	size_t cap, len; /* cap a power of two, or 0 */
	char *reasons[MEMO_REASONS];
	size_t nreasons;
};

struct app_memo *app_memo_new(void)
{
	return calloc(1, sizeof(struct app_memo));
}

void app_memo_forget(struct app_memo *m)
{
	if (!m)
		return;
	free(m->basis);
	free(m->slots);
	for (size_t i = 0; i < m->nreasons; i++)
		free(m->reasons[i]);
	memset(m, 0, sizeof(*m));
}

void app_memo_free(struct app_memo *m)
{
	app_memo_forget(m);
	free(m);
}

int app_memo_begin(struct app_memo *m, const char *basis)
{
	if (m->basis && !strcmp(m->basis, basis))
		return 0;
	app_memo_forget(m);
	return (m->basis = strdup(basis)) ? 0 : ERR_NOMEM;
}

size_t app_memo_len(const struct app_memo *m)
{
	return m ? m->len : 0;
}

/* h carried over the n bytes at s and the NUL after them. */
static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	return fnv1a(fnv1a(h, s, n), "", 1);
}

uint64_t app_memo_key(const char *group, const char *kind, const char *ns,
		      size_t ns_len, const char *name, size_t name_len)
{
	uint64_t h = fnv(FNV1A_BASIS, group, strlen(group));

	h = fnv(h, kind, strlen(kind));
	h = fnv(h, ns, ns_len);
	h = fnv(h, name, name_len);
	return h ? h : 1;
}

uint64_t app_memo_version(const char *uid, size_t uid_len, const char *rv,
			  size_t rv_len)
{
	return fnv(fnv(FNV1A_BASIS, uid, uid_len), rv, rv_len);
}

static struct memo_entry *slot(const struct app_memo *m, uint64_t key)
{
	size_t i = (size_t)key & (m->cap - 1);

	while (m->slots[i].key && m->slots[i].key != key)
		i = (i + 1) & (m->cap - 1);
	return &m->slots[i];
}

static int grow(struct app_memo *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct memo_entry *old = m->slots;
	size_t ocap = m->cap;

	if (!(m->slots = calloc(cap, sizeof(*m->slots)))) {
		m->slots = old;
		return ERR_NOMEM;
	}
	m->cap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].key)
			*slot(m, old[i].key) = old[i];
	free(old);
	return 0;
}

/* Index + 1 of `reason` among those kept, kept now if new; 0: none. */
static int reason_index(struct app_memo *m, const char *reason)
{
	size_t i;

	if (!reason)
		return 0;
	for (i = 0; i < m->nreasons; i++)
		if (!strcmp(m->reasons[i], reason))
			return (int)i + 1;
	if (m->nreasons == MEMO_REASONS)
		return -1;
	if (!(m->reasons[i] = strdup(reason)))
		return ERR_NOMEM;
	m->nreasons++;
	return (int)i + 1;
}

int app_memo_put(struct app_memo *m, uint64_t key, uint64_t version,
		 size_t ignored, const struct health *h)
{
	struct memo_entry *e;
	int reason;

	if (ignored > UINT32_MAX || (unsigned)h->state > UINT8_MAX)
		return 0;
	if ((reason = reason_index(m, h->reason)) < 0)
		return reason == ERR_NOMEM ? ERR_NOMEM : 0;
	if ((m->len + 1) * 4 > m->cap * 3 && grow(m) < 0)
		return ERR_NOMEM;
	e = slot(m, key);
	if (!e->key)
		m->len++;
	*e = (struct memo_entry){key, version, (uint32_t)ignored,
				 (uint8_t)h->state, (uint8_t)reason};
	return 0;
}

int app_memo_get(const struct app_memo *m, uint64_t key, uint64_t version,
		 size_t *ignored, struct health *h)
{
	const struct memo_entry *e;

	if (!m || !m->cap)
		return 0;
	e = slot(m, key);
	if (!e->key || e->version != version)
		return 0;
	*ignored = e->ignored;
	h->state = (enum health_state)e->state;
	h->reason = NULL;
	if (e->reason && !(h->reason = strdup(m->reasons[e->reason - 1])))
		return ERR_NOMEM;
	return 1;
}
