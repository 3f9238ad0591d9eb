/*
 * The comparison of a desired object with its live object, the way
 * server-side apply sees them, and the attribution of every difference to
 * the managers that own it.
 *
 * One pass walks the desired object under its schema beside the live one
 * and records each differing field (only declared fields are looked at,
 * so server defaults and fields other actors added never count). A
 * second pass looks at what our field manager owns in live but no longer
 * declares: the next apply would remove it, unless another manager also
 * owns it. Each difference is then attributed: a controller's field is
 * foreign and, under the default policy, left out of the apply request;
 * a person's change is healed with force.
 */
#include "diff/internal.h"

#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util/base64.h"
#include "util/sha256.h"

#include "util/banned.h" /* last */

/*
 * A managedFields entry of the live object. Only its name is read up
 * front; the other fields (entry_str()) and the field set are looked up
 * when needed, which for most objects is only our own entry's.
 */
struct manager {
	const json_t *entry;
	const char *name;
	struct diff_fieldset *set;
	bool parsed;
	enum diff_actor actor;
	bool ignored;          /* matches an ignore rule's managers */
};

/* A path whose text is owned (for paths kept beyond the walk). */
struct owned_path {
	struct diff_pe *pe;
	size_t len;
};

struct cmp {
	const struct diff_options *opts;
	const char *field_manager;
	struct diff_object_report *rep;
	const json_t *live;
	const struct diff_schemas *reg;
	const struct diff_schema *root_schema;
	bool secret;
	bool sensitive;        /* decrypted: every value but the identity
				  fingerprinted */
	bool typed;            /* stored from Go types: zero values dropped */

	/*
	 * The current path; owned[i] says whether pe[i].text is ours, node[i]
	 * is the declared value there (NULL under a set).
	 */
	struct diff_pe *pe;
	bool *owned;
	const json_t **node;
	size_t depth, alloc;

	/* the declared object as walked, and what the server stores for it */
	const json_t *droot;
	json_t *stored;
	bool stored_done;
	bool stored_exact;     /* ...read through the kind's Go type */

	struct manager *mgrs;
	size_t nmgrs;
	bool mgrs_loaded;

	/* paths to leave out of the apply request, and paths removed */
	struct owned_path *drop;
	size_t ndrop, adrop;
	struct owned_path *gone;
	size_t ngone, agone;
	/* paths held by a fight (also in drop): kept live in the view */
	struct owned_path *held;
	size_t nheld, aheld;

	bool heal;             /* some difference will be healed */
	bool force;            /* ...and it needs force */
	struct err *err;
	int error;
};

static const char *const default_person_managers[] = {
	"kubectl*",
	"before-first-apply",
	NULL,
};

/* Metadata the server owns: never declared, never compared. */
static const char *const server_metadata[] = {
	"name",
	"namespace",
	"uid",
	"resourceVersion",
	"generation",
	"creationTimestamp",
	"managedFields",
	"selfLink",
	"deletionTimestamp",
	"deletionGracePeriodSeconds",
	NULL,
};

static bool in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (!strcmp(*list, s))
			return true;
	return false;
}

static bool glob_any(const char *const *globs, const char *s)
{
	if (!globs)
		return false;
	for (; *globs; globs++)
		if (!fnmatch(*globs, s, 0))
			return true;
	return false;
}

static int oom(struct cmp *c)
{
	if (!c->error)
		c->error = err_set(c->err, ERR_NOMEM, "out of memory");
	return ERR_NOMEM;
}

/* --- the path stack --- */

static int push_node(struct cmp *c, enum diff_pe_type type, const char *text,
		     bool owned, const json_t *node)
{
	if (c->depth == c->alloc) {
		size_t a = c->alloc ? c->alloc * 2 : 32;
		struct diff_pe *pe = realloc(c->pe, a * sizeof(*pe));
		const json_t **nd;
		bool *ow;

		if (!pe)
			return oom(c);
		c->pe = pe;
		if (!(ow = realloc(c->owned, a * sizeof(*ow))))
			return oom(c);
		c->owned = ow;
		if (!(nd = realloc(c->node, a * sizeof(*nd))))
			return oom(c);
		c->node = nd;
		c->alloc = a;
	}
	c->pe[c->depth].type = type;
	c->pe[c->depth].text = text;
	c->owned[c->depth] = owned;
	c->node[c->depth] = node;
	c->depth++;
	return 0;
}

static int push(struct cmp *c, enum diff_pe_type type, const char *text,
		bool owned)
{
	return push_node(c, type, text, owned, NULL);
}

static void pop(struct cmp *c)
{
	c->depth--;
	if (c->owned[c->depth])
		free((char *)c->pe[c->depth].text);
}

static struct diff_path cur_path(const struct cmp *c)
{
	struct diff_path p = {c->pe, c->depth};

	return p;
}

/* --- Secrets: values never leave as they are --- */

static const unsigned char *mask_key(const struct diff_options *opts,
				     size_t *len)
{
	static unsigned char key[32];
	static int have_key;

	if (opts->mask_key) {
		*len = opts->mask_key_len;
		return opts->mask_key;
	}
	/* A random key per process: fingerprints compare within a run. */
	if (!__atomic_load_n(&have_key, __ATOMIC_ACQUIRE)) {
		unsigned char k[32];

		if (getrandom(k, sizeof(k), 0) != (ssize_t)sizeof(k))
			memset(k, 0x5a, sizeof(k));
		memcpy(key, k, sizeof(key));
		__atomic_store_n(&have_key, 1, __ATOMIC_RELEASE);
	}
	*len = sizeof(key);
	return key;
}

/* The padded standard base64 of in[0..len), or NULL out of memory. */
static char *b64_encode(const char *in, size_t len)
{
	struct buf out = BUF_INIT;

	if (base64_encode(&out, in, len, 0) < 0) {
		buf_release(&out);
		return NULL;
	}
	return buf_detach(&out, NULL);
}

/*
 * "(secret sha256:0123456789abcdef)": an HMAC of the secret's bytes (the
 * decoded bytes for data, the string for stringData), so two equal values
 * show the same fingerprint and the value itself cannot be read back.
 */
static json_t *fingerprint(const struct diff_options *opts, const json_t *v,
			   bool base64)
{
	unsigned char mac[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1], text[96];
	struct buf raw = BUF_INIT;
	const unsigned char *key;
	size_t key_len;
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);

	if (!s) {
		/* Not a string: still never show it. */
		return json_string("(secret)");
	}
	if (base64 && base64_decode(&raw, s, len,
				    BASE64_SKIP_NEWLINES | BASE64_ANY_LAST_BITS) == 0) {
		s = buf_cstr(&raw);
		len = raw.len;
	}
	key = mask_key(opts, &key_len);
	hmac_sha256(key, key_len, s, len, mac);
	buf_release(&raw);
	hex_encode(mac, 8, hex);
	snprintf(text, sizeof(text), "(secret sha256:%s)", hex);
	return json_string(text);
}

/*
 * A value that is not a string (a number, a boolean) of a decrypted
 * object: the fingerprint of its JSON text, so a change still shows.
 */
static json_t *fingerprint_any(const struct diff_options *opts,
			       const json_t *v, bool base64)
{
	json_t *s, *fp;
	char *text;

	if (json_is_string(v))
		return fingerprint(opts, v, base64);
	if (!(text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)))
		return NULL;
	s = json_string(text);
	free(text);
	fp = s ? fingerprint(opts, s, false) : NULL;
	json_decref(s);
	return fp;
}

/* Where a value of a decrypted object lies, for masking. */
enum mask_at {
	MASK_ROOT,     /* the object: apiVersion, kind shown */
	MASK_METADATA, /* metadata: name, namespace shown */
	MASK_ALL,      /* every leaf fingerprinted */
	MASK_ALL_B64,  /* ...of a Secret's data: the decoded bytes */
};

/*
 * A copy of `v` (at `at` in a decrypted object, `secret` when it is a
 * Secret) with every leaf fingerprinted but the identity's. NULL out of
 * memory.
 */
static json_t *mask_value(const struct diff_options *opts, const json_t *v,
			  enum mask_at at, bool secret)
{
	json_t *out, *x, *m;
	const char *k;
	size_t i;

	if (json_is_array(v)) {
		if (at == MASK_ROOT || at == MASK_METADATA)
			at = MASK_ALL;
		if (!(out = json_array()))
			return NULL;
		json_array_foreach ((json_t *)v, i, x) {
			if (!(m = mask_value(opts, x, at, secret)) ||
			    json_array_append_new(out, m) < 0)
				goto nomem;
		}
		return out;
	}
	if (!json_is_object(v))
		return at == MASK_ROOT || at == MASK_METADATA
			       ? fingerprint_any(opts, v, false)
			       : fingerprint_any(opts, v, at == MASK_ALL_B64);
	if (!(out = json_object()))
		return NULL;
	json_object_foreach ((json_t *)v, k, x) {
		enum mask_at next = MASK_ALL;

		if (at == MASK_ROOT) {
			if (!strcmp(k, "apiVersion") || !strcmp(k, "kind")) {
				m = json_deep_copy(x);
				goto set;
			}
			if (!strcmp(k, "metadata"))
				next = MASK_METADATA;
			else if (secret && !strcmp(k, "data"))
				next = MASK_ALL_B64;
		} else if (at == MASK_METADATA) {
			if (!strcmp(k, "name") || !strcmp(k, "namespace")) {
				m = json_deep_copy(x);
				goto set;
			}
		} else {
			next = at;
		}
		m = mask_value(opts, x, next, secret);
	set:
		if (!m || json_object_set_new(out, k, m) < 0)
			goto nomem;
	}
	return out;
nomem:
	json_decref(out);
	return NULL;
}

/* Replace every value of data/stringData in a Secret (view) in place. */
static void mask_secret_object(const struct diff_options *opts, json_t *obj)
{
	static const char *const maps[] = {"data", "stringData"};

	for (size_t m = 0; m < 2; m++) {
		json_t *map = json_object_get(obj, maps[m]);
		const char *k;
		json_t *v;

		if (!json_is_object(map))
			continue;
		json_object_foreach (map, k, v)
			json_object_set_new(map, k, fingerprint(opts, v, m == 0));
	}
}

/* True when the current path lies under a Secret's data or stringData. */
static bool secret_path(const struct cmp *c, const struct diff_pe *pe,
			size_t len, bool *base64)
{
	if (!c->secret || len < 2 || pe[0].type != DIFF_PE_FIELD)
		return false;
	*base64 = !strcmp(pe[0].text, "data");
	return *base64 || !strcmp(pe[0].text, "stringData");
}

/* The place of path pe[0..len) in a decrypted object, for mask_value(). */
static enum mask_at mask_at_path(const struct cmp *c, const struct diff_pe *pe,
				 size_t len, bool live)
{
	bool field = len && pe[0].type == DIFF_PE_FIELD;

	if (!len)
		return MASK_ROOT;
	if (field && !strcmp(pe[0].text, "metadata"))
		return len == 1 ? MASK_METADATA : MASK_ALL;
	if (field && c->secret &&
	    (!strcmp(pe[0].text, "data") ||
	     (live && !strcmp(pe[0].text, "stringData"))))
		return MASK_ALL_B64;
	return MASK_ALL;
}

/* apiVersion, kind, metadata.name, metadata.namespace: never masked. */
static bool identity_path(const struct diff_pe *pe, size_t len)
{
	if (len < 1 || len > 2 || pe[0].type != DIFF_PE_FIELD)
		return false;
	if (len == 1)
		return !strcmp(pe[0].text, "apiVersion") ||
		       !strcmp(pe[0].text, "kind");
	return pe[1].type == DIFF_PE_FIELD && !strcmp(pe[0].text, "metadata") &&
	       (!strcmp(pe[1].text, "name") ||
		!strcmp(pe[1].text, "namespace"));
}

static json_t *shown_value(const struct cmp *c, const struct diff_pe *pe,
			   size_t len, const json_t *v, bool live)
{
	bool base64;

	if (!v)
		return NULL;
	if (secret_path(c, pe, len, &base64))
		/* live never holds stringData: its values come from data */
		return fingerprint(c->opts, v, base64 || live);
	if (c->sensitive && !identity_path(pe, len))
		return mask_value(c->opts, v, mask_at_path(c, pe, len, live),
				  c->secret);
	return json_deep_copy(v);
}

/* --- managers --- */

static enum diff_actor classify(const struct cmp *c, const char *name)
{
	const char *const *people = c->opts->person_managers
					    ? c->opts->person_managers
					    : default_person_managers;

	if (!strcmp(name, c->field_manager))
		return DIFF_ACTOR_SELF;
	if (glob_any(c->opts->controller_managers, name))
		return DIFF_ACTOR_CONTROLLER;
	return glob_any(people, name) ? DIFF_ACTOR_PERSON
				      : DIFF_ACTOR_CONTROLLER;
}

static int add_warning(struct cmp *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int add_warning(struct cmp *c, const char *fmt, ...)
{
	struct diff_object_report *rep = c->rep;
	struct buf b = BUF_INIT;
	char **w;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	w = realloc(rep->warnings, (rep->nwarnings + 1) * sizeof(*w));
	if (!w) {
		buf_release(&b);
		return oom(c);
	}
	rep->warnings = w;
	if (!(w[rep->nwarnings] = buf_detach(&b, NULL)))
		return oom(c);
	rep->nwarnings++;
	return 0;
}

static bool rule_matches(const struct diff_ignore_rule *r,
			 const struct diff_key *key)
{
	return (!r->group || !fnmatch(r->group, key->group, 0)) &&
	       (!r->kind || !fnmatch(r->kind, key->kind, 0)) &&
	       (!r->ns || !fnmatch(r->ns, key->ns, 0)) &&
	       (!r->name || !fnmatch(r->name, key->name, 0));
}

/* A string field of the manager's entry, or NULL. */
static const char *entry_str(const struct manager *m, const char *key)
{
	return json_string_value(json_object_get(m->entry, key));
}

static void load_managers(struct cmp *c)
{
	const json_t *list, *e;
	size_t i;

	if (c->mgrs_loaded)
		return;
	c->mgrs_loaded = true;
	list = json_object_get(json_object_get(c->live, "metadata"),
			       "managedFields");
	if (!json_is_array(list) || !json_array_size(list))
		return;
	if (!(c->mgrs = calloc(json_array_size(list), sizeof(*c->mgrs)))) {
		oom(c);
		return;
	}
	json_array_foreach (list, i, e) {
		struct manager *m = &c->mgrs[c->nmgrs];
		const char *name = json_string_value(json_object_get(e, "manager"));

		if (!json_is_object(e)) {
			add_warning(c, "metadata.managedFields[%zu] is not an "
				       "object; ignored", i);
			continue;
		}
		m->entry = e;
		m->name = name ? name : "";
		m->actor = classify(c, m->name);
		for (size_t r = 0; r < c->opts->nignore; r++)
			if (rule_matches(&c->opts->ignore[r], &c->rep->key) &&
			    glob_any(c->opts->ignore[r].managers, m->name))
				m->ignored = true;
		c->nmgrs++;
	}
}

/* The manager's field set, or NULL when it has none or it is malformed. */
static const struct diff_fieldset *manager_set(struct cmp *c, size_t i)
{
	struct manager *m = &c->mgrs[i];
	struct err why = ERR_INIT;
	const json_t *fields_v1;

	if (m->parsed)
		return m->set;
	m->parsed = true;
	if (!(fields_v1 = json_object_get(m->entry, "fieldsV1")))
		return NULL;
	if (diff_fieldset_parse(&m->set, fields_v1, &why) < 0) {
		add_warning(c, "managedFields entry of %s is unreadable and "
			       "ignored: %s",
			    m->name, err_first(&why));
		m->set = NULL;
	}
	err_release(&why);
	return m->set;
}

/*
 * Which ancestors of a path are atomic nodes (replaced whole, owned as a
 * unit)? atomic[n] is true when the first n elements lead to one, judged
 * by the schema and the value found there in the live (or desired)
 * object. Filled only up to len - 1.
 */
static void atomic_ancestors(const struct cmp *c, const struct diff_pe *pe,
			     size_t len, bool *atomic)
{
	const struct diff_schema *s = c->root_schema;
	json_t *v = (json_t *)c->live;
	size_t idx;

	for (size_t n = 1; n < len; n++) {
		/* s is the schema of v, the node at depth n - 1. */
		v = v ? diff_tree_child(v, &pe[n - 1], s, &idx) : NULL;
		s = diff_tree_step(s, &pe[n - 1]);
		atomic[n] = v && (json_is_object(v) || json_is_array(v)) &&
			    diff_schema_type_of(s, v) == DIFF_SCHEMA_ATOMIC;
	}
}

/*
 * Does a set own the path: the path itself, or an atomic ancestor of it
 * (a manager that set a whole atomic list owns every element in it)?
 */
static bool owns(const struct diff_fieldset *set, const struct diff_pe *pe,
		 size_t len, const bool *atomic)
{
	struct diff_path p = {pe, len};

	if (diff_fieldset_has(set, &p))
		return true;
	for (size_t n = len - 1; n > 0; n--) {
		if (!atomic[n])
			continue;
		p.len = n;
		if (diff_fieldset_has(set, &p))
			return true;
	}
	return false;
}

static void owners_free(struct diff_owner *o, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(o[i].manager);
		free(o[i].operation);
		free(o[i].subresource);
		free(o[i].api_version);
		free(o[i].time);
	}
	free(o);
}

static int add_owner(struct diff_field *f, const struct manager *m)
{
	struct diff_owner *o = realloc(f->owners, (f->nowners + 1) * sizeof(*o));
	const char *operation = entry_str(m, "operation");
	const char *subresource = entry_str(m, "subresource");
	const char *api_version = entry_str(m, "apiVersion");
	const char *when = entry_str(m, "time");

	if (!o)
		return ERR_NOMEM;
	f->owners = o;
	o = &o[f->nowners++];
	memset(o, 0, sizeof(*o));
	o->actor = m->actor;
	if (!(o->manager = strdup(m->name)) ||
	    (operation && !(o->operation = strdup(operation))) ||
	    (subresource && *subresource &&
	     !(o->subresource = strdup(subresource))) ||
	    (api_version && !(o->api_version = strdup(api_version))) ||
	    (when && !(o->time = strdup(when))))
		return ERR_NOMEM;
	return 0;
}

/* Keep a copy of a path in a list (drop or gone). */
static int keep_path(struct cmp *c, struct owned_path **list, size_t *n,
		     size_t *alloc, const struct diff_pe *pe, size_t len)
{
	struct owned_path *op;

	if (*n == *alloc) {
		size_t a = *alloc ? *alloc * 2 : 8;
		struct owned_path *d = realloc(*list, a * sizeof(*d));

		if (!d)
			return oom(c);
		*list = d;
		*alloc = a;
	}
	op = &(*list)[*n];
	if (!(op->pe = calloc(len ? len : 1, sizeof(*op->pe))))
		return oom(c);
	op->len = len;
	(*n)++;
	for (size_t i = 0; i < len; i++) {
		op->pe[i].type = pe[i].type;
		if (!(op->pe[i].text = strdup(pe[i].text)))
			return oom(c);
	}
	return 0;
}

static int drop_path(struct cmp *c, const struct diff_pe *pe, size_t len)
{
	return keep_path(c, &c->drop, &c->ndrop, &c->adrop, pe, len);
}

/*
 * Record a difference at the current path (or at `pe`/`len` when given),
 * attributed to its owners.
 */
static int record_at(struct cmp *c, const struct diff_pe *pe, size_t len,
		     enum diff_change change, const json_t *desired,
		     const json_t *live)
{
	struct diff_object_report *rep = c->rep;
	struct diff_field f = {0}, *fields;
	struct diff_path path = {pe, len};
	struct buf text = BUF_INIT;
	bool controller = false, person = false, ignored = false;
	bool *atomic;

	load_managers(c);
	if (!(atomic = calloc(len + 1, sizeof(*atomic))))
		return oom(c);
	atomic_ancestors(c, pe, len, atomic);
	for (size_t i = 0; i < c->nmgrs; i++) {
		const struct diff_fieldset *set = manager_set(c, i);

		if (!set || !owns(set, pe, len, atomic))
			continue;
		if (c->mgrs[i].ignored)
			ignored = true;
		if (c->mgrs[i].actor == DIFF_ACTOR_CONTROLLER)
			controller = true;
		else if (c->mgrs[i].actor == DIFF_ACTOR_PERSON)
			person = true;
		if (add_owner(&f, &c->mgrs[i]) < 0) {
			free(atomic);
			goto nomem;
		}
	}
	free(atomic);
	if (ignored) {
		rep->nignored++;
		owners_free(f.owners, f.nowners);
		return change == DIFF_REMOVED ? 0 : drop_path(c, pe, len);
	}
	f.change = change;
	f.foreign = controller && change != DIFF_REMOVED;
	if (diff_path_format(&path, &text) < 0 ||
	    !(f.path = buf_detach(&text, NULL)))
		goto nomem;
	/*
	 * A field syncd would write may be held by the controller's fight
	 * detection: writing it again would only start another round with
	 * the manager that keeps changing it back. It is left out of the
	 * request like a foreign field under respect, and neither heals nor
	 * forces. Asked under policy report too, so the report shows it.
	 */
	if (c->opts->hold && change != DIFF_REMOVED &&
	    !(f.foreign && c->opts->policy != DIFF_POLICY_OVERRIDE))
		f.fight = c->opts->hold(&rep->key, f.path, c->opts->hold_ctx);
	if (f.fight) {
		if (drop_path(c, pe, len) < 0 ||
		    keep_path(c, &c->held, &c->nheld, &c->aheld, pe, len) < 0)
			goto nomem;
	} else if (f.foreign && c->opts->policy != DIFF_POLICY_OVERRIDE) {
		if (drop_path(c, pe, len) < 0)
			goto nomem;
	} else {
		c->heal = true;
		if (change != DIFF_REMOVED && (person || controller))
			c->force = true;
	}
	f.desired = shown_value(c, pe, len, desired, false);
	f.live = shown_value(c, pe, len, live, true);
	if ((desired && !f.desired) || (live && !f.live))
		goto nomem;
	fields = realloc(rep->fields, (rep->nfields + 1) * sizeof(*fields));
	if (!fields)
		goto nomem;
	rep->fields = fields;
	rep->fields[rep->nfields++] = f;
	return 0;
nomem:
	buf_release(&text);
	free(f.path);
	diff_fight_free(f.fight);
	json_decref(f.desired);
	json_decref(f.live);
	owners_free(f.owners, f.nowners);
	return oom(c);
}

static int record(struct cmp *c, enum diff_change change,
		  const json_t *desired, const json_t *live)
{
	return record_at(c, c->pe, c->depth, change, desired, live);
}

/* --- the walk over declared fields --- */

static int cmp_node(struct cmp *c, const json_t *d, const json_t *l,
		    const struct diff_schema *s);

static int cmp_object(struct cmp *c, const json_t *d, const json_t *l,
		      const struct diff_schema *s)
{
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)d, k, v) {
		int error;

		if (c->depth == 0 &&
		    (!strcmp(k, "apiVersion") || !strcmp(k, "kind") ||
		     !strcmp(k, "status")))
			continue;
		if (c->depth == 1 && c->pe[0].type == DIFF_PE_FIELD &&
		    !strcmp(c->pe[0].text, "metadata") &&
		    in_list(server_metadata, k))
			continue;
		if (c->depth == 0 && c->secret && !strcmp(k, "stringData") &&
		    json_is_object(v))
			continue; /* compared against data, see cmp_string_data */
		if ((error = push_node(c, DIFF_PE_FIELD, k, false, v)) < 0)
			return error;
		error = cmp_node(c, v, json_object_get(l, k),
				 diff_schema_field(s, k));
		pop(c);
		if (error < 0)
			return error;
	}
	return 0;
}

/* Secret stringData: the server folds it into base64 data. */
static int cmp_string_data(struct cmp *c, const json_t *d, const json_t *l)
{
	const json_t *sd = json_object_get(d, "stringData");
	const json_t *data = json_object_get(l, "data");
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)sd, k, v) {
		const json_t *lv = json_object_get(data, k);
		/* A server never returns stringData; a file written by hand may. */
		const json_t *lsd = json_object_get(
			json_object_get(l, "stringData"), k);
		char *enc = json_is_string(v) ? b64_encode(json_string_value(v),
							   json_string_length(v))
					      : NULL;
		bool same = enc && json_is_string(lv) &&
			    !strcmp(enc, json_string_value(lv));
		int error = 0;

		free(enc);
		if (lsd && !lv) {
			same = json_equal((json_t *)v, (json_t *)lsd);
			lv = lsd;
		}
		if (same)
			continue;
		if ((error = push(c, DIFF_PE_FIELD, "stringData", false)) < 0 ||
		    (error = push(c, DIFF_PE_FIELD, k, false)) < 0)
			return error;
		error = record(c, lv ? DIFF_CHANGED : DIFF_ABSENT, v, lv);
		pop(c);
		pop(c);
		if (error < 0)
			return error;
	}
	return 0;
}

static int cmp_set(struct cmp *c, const json_t *d, const json_t *l)
{
	size_t i;
	json_t *e;

	json_array_foreach ((json_t *)d, i, e) {
		char *text;
		int error;

		if (diff_tree_array_has(l, e))
			continue;
		if (!(text = diff_tree_compact(e)))
			return oom(c);
		if ((error = push(c, DIFF_PE_VALUE, text, true)) < 0) {
			free(text);
			return error;
		}
		error = record(c, DIFF_ABSENT, e, NULL);
		pop(c);
		if (error < 0)
			return error;
	}
	return 0;
}

/*
 * A map-list: items matched by their k: texts. The live items' texts are
 * built once per list, NUL-separated in one buffer; each desired item's
 * text goes after them and is pushed as it is (the buffer stays put
 * while the item is compared).
 */
static int cmp_map_list(struct cmp *c, const json_t *d, const json_t *l,
			const struct diff_schema *s)
{
	const struct diff_schema *items = diff_schema_items(s);
	size_t nlive = json_array_size(l), i, j, base;
	size_t off_inline[16], *off = off_inline;
	struct buf keys = BUF_INIT;
	json_t *e;
	int error = 0, r;

	if (nlive > sizeof(off_inline) / sizeof(off_inline[0]) &&
	    !(off = malloc(nlive * sizeof(*off))))
		return oom(c);
	for (i = 0; i < nlive; i++) {
		off[i] = keys.len;
		r = diff_schema_item_key(&keys, json_array_get(l, i), s);
		if (r < 0 || (!r && buf_add(&keys, "", 1) < 0)) {
			error = oom(c);
			goto out;
		}
		if (r)
			off[i] = SIZE_MAX;
	}
	base = keys.len;
	json_array_foreach ((json_t *)d, i, e) {
		const json_t *match = NULL;
		const char *key;

		buf_truncate(&keys, base);
		if ((r = diff_schema_item_key(&keys, e, s)) < 0) {
			error = oom(c);
			goto out;
		}
		if (r) {
			struct buf p = BUF_INIT;
			struct diff_path path = cur_path(c);

			diff_path_format(&path, &p);
			error = err_set(c->err, ERR_INVALID,
					"%s[%zu]: list item has no key",
					buf_cstr(&p), i);
			buf_release(&p);
			if (!c->error)
				c->error = error;
			goto out;
		}
		key = keys.ptr + base;
		for (j = 0; j < nlive && !match; j++)
			if (off[j] != SIZE_MAX &&
			    !strcmp(keys.ptr + off[j], key))
				match = json_array_get(l, j);
		if ((error = push_node(c, DIFF_PE_KEY, key, false, e)) < 0)
			goto out;
		if (!match)
			error = record(c, DIFF_ABSENT, e, NULL);
		else
			error = cmp_node(c, e, match, items);
		pop(c);
		if (error < 0)
			goto out;
	}
out:
	if (off != off_inline)
		free(off);
	buf_release(&keys);
	return error;
}

/*
 * What the server stores for the declared value at the current path: the
 * same place in diff_stored_object() of the whole declared object
 * (computed once, when the first atomic value differs), reached by field
 * names and by the index of each map-list item in its declared list.
 * NULL for kinds not served from Go types, or when out of memory.
 */
static const json_t *stored_here(struct cmp *c)
{
	const json_t *n;

	if (!c->stored_done) {
		struct buf why = BUF_INIT;
		int r = -1;

		c->stored_done = true;
		if (c->typed && c->droot &&
		    (c->stored = json_deep_copy(c->droot)) &&
		    (r = diff_stored_object(c->stored, 0, &why)) < 0) {
			/* The server would refuse it: compare as declared. */
			json_decref(c->stored);
			c->stored = NULL;
		}
		c->stored_exact = r > 0;
		buf_release(&why);
	}
	n = c->stored;
	for (size_t i = 0; i < c->depth && n; i++) {
		const json_t *list = i ? c->node[i - 1] : NULL;
		size_t at;

		switch (c->pe[i].type) {
		case DIFF_PE_FIELD:
			n = json_object_get(n, c->pe[i].text);
			break;
		case DIFF_PE_KEY:
			for (at = 0; at < json_array_size(list); at++)
				if (json_array_get(list, at) == c->node[i])
					break;
			n = json_array_get(n, at);
			break;
		default:
			return NULL;
		}
	}
	return n;
}

static bool zero_value(const json_t *v);

/*
 * Drop every zero-valued member of the objects in v (at any depth, in
 * list items too): how a value of a built-in kind reads once stored,
 * whether the Go field was omitempty (dropped) or not (`null` kept, as
 * kube before 1.34 wrote `creationTimestamp: null`).
 */
static void drop_zero_members(json_t *v)
{
	const char *k;
	json_t *child;
	void *tmp;
	size_t i;

	if (json_is_array(v)) {
		json_array_foreach (v, i, child)
			drop_zero_members(child);
		return;
	}
	if (!json_is_object(v))
		return;
	json_object_foreach_safe (v, tmp, k, child) {
		drop_zero_members(child);
		if (zero_value(child))
			json_object_del(v, k);
	}
}

/*
 * Is atomic `d` (under schema `s`) what kube would store as `l`? An
 * apply replaces an atomic value whole and the server then defaults it
 * again, so a declared value that lacks only defaults is not drift. A
 * built-in kind's value is compared as diff_stored_object() says it is
 * stored; a custom resource's value gets its CRD schema's `default`s, as
 * the apiextensions-apiserver gives them on every write.
 */
static bool atomic_equal(struct cmp *c, const json_t *d, const json_t *l,
			 const struct diff_schema *s)
{
	const json_t *stored;
	json_t *copy, *lcopy = NULL;
	bool equal;

	if (diff_value_equal(d, l, false))
		return true;
	/* `rules: []` is stored as `rules: null` (a Go nil slice). */
	if (c->typed && zero_value(d) && zero_value(l))
		return true;
	if (c->typed) {
		if (!(stored = stored_here(c)))
			return false;
		/*
		 * Read into its Go type and written out again, the value is
		 * exactly what kube returns; only kinds outside the table of
		 * Go types still need the zero values left out by hand.
		 */
		if (diff_value_equal(stored, l, false) || c->stored_exact)
			return diff_value_equal(stored, l, false);
		copy = json_deep_copy(stored);
	} else {
		if (!(copy = json_deep_copy(d)))
			return false;
		diff_structural(copy, diff_schema_openapi(s),
				DIFF_STRUCTURAL_DEFAULT, NULL);
		equal = diff_value_equal(copy, l, false);
		json_decref(copy);
		return equal;
	}
	if (!copy || !(lcopy = json_deep_copy(l))) {
		json_decref(copy);
		return false;
	}
	drop_zero_members(copy);
	drop_zero_members(lcopy);
	equal = diff_value_equal(copy, lcopy, false);
	json_decref(copy);
	json_decref(lcopy);
	return equal;
}

/* null, false, 0, "", [] or {}: what an omitempty Go field never stores. */
static bool zero_value(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_NULL:
	case JSON_FALSE:
		return true;
	case JSON_INTEGER:
		return json_integer_value(v) == 0;
	case JSON_REAL:
		return json_real_value(v) == 0;
	case JSON_STRING:
		return json_string_length(v) == 0;
	case JSON_ARRAY:
		return json_array_size(v) == 0;
	case JSON_OBJECT:
		return json_object_size(v) == 0;
	default:
		return false;
	}
}

static int cmp_node(struct cmp *c, const json_t *d, const json_t *l,
		    const struct diff_schema *s)
{
	enum diff_schema_type type;

	/*
	 * A built-in kind is stored through its Go types: a declared zero
	 * value is dropped (`readOnly: false`, `env: []`, `annotations:
	 * {}`), and a declared null may come back defaulted to an empty
	 * value (`securityContext: null` is stored as {}).
	 */
	if (!l)
		return json_is_null(d) || (c->typed && zero_value(d))
			       ? 0
			       : record(c, DIFF_ABSENT, d, NULL);
	if (json_is_null(d) && c->typed && zero_value(l))
		return 0;
	if (!json_is_object(d) && !json_is_array(d)) {
		/*
		 * The same string is the same value, quantity or not: no need
		 * to canonicalize "100m" twice to learn that.
		 */
		if (json_is_string(d) && json_is_string(l) &&
		    json_string_length(d) == json_string_length(l) &&
		    !memcmp(json_string_value(d), json_string_value(l),
			    json_string_length(d)))
			return 0;
		return diff_value_equal(d, l, diff_schema_is_quantity(s))
			       ? 0
			       : record(c, DIFF_CHANGED, d, l);
	}
	type = diff_schema_type_of(s, d);
	if (type == DIFF_SCHEMA_ATOMIC)
		return atomic_equal(c, d, l, s) ? 0
						 : record(c, DIFF_CHANGED, d, l);
	if (json_typeof(d) != json_typeof(l))
		return record(c, DIFF_CHANGED, d, l);
	if (json_is_object(d))
		return cmp_object(c, d, l, s);
	if (type == DIFF_SCHEMA_SET)
		return cmp_set(c, d, l);
	if (type == DIFF_SCHEMA_MAP_LIST)
		return cmp_map_list(c, d, l, s);
	return diff_value_equal(d, l, false) ? 0
					     : record(c, DIFF_CHANGED, d, l);
}

/* --- fields applied earlier, no longer declared --- */

struct removal {
	struct cmp *c;
	json_t *live;
	struct diff_pe *last;    /* last recorded removal (prefix check) */
	size_t last_len;
	const char *const *ptrs; /* ignored JSON pointers of this object */
};

static bool has_prefix(const struct diff_pe *pe, size_t len,
		       const struct diff_pe *prefix, size_t plen)
{
	if (plen > len)
		return false;
	for (size_t i = 0; i < plen; i++)
		if (pe[i].type != prefix[i].type ||
		    strcmp(pe[i].text, prefix[i].text))
			return false;
	return true;
}

/* A JSON pointer for a path made only of fields, else "". */
static void path_pointer(const struct diff_path *p, struct buf *out)
{
	for (size_t i = 0; i < p->len; i++) {
		if (p->pe[i].type != DIFF_PE_FIELD) {
			buf_reset(out);
			return;
		}
		buf_addch(out, '/');
		for (const char *s = p->pe[i].text; *s; s++) {
			if (*s == '~')
				buf_adds(out, "~0");
			else if (*s == '/')
				buf_adds(out, "~1");
			else
				buf_addch(out, *s);
		}
	}
}

static bool pointer_ignored(const char *const *ptrs, const char *pointer)
{
	size_t n;

	if (!ptrs || !*pointer)
		return false;
	for (; *ptrs; ptrs++) {
		n = strlen(*ptrs);
		if (!strncmp(pointer, *ptrs, n) &&
		    (pointer[n] == '\0' || pointer[n] == '/'))
			return true;
	}
	return false;
}

static int removal_visit(const struct diff_path *p, void *data)
{
	struct removal *r = data;
	struct cmp *c = r->c;
	json_t *lv;
	struct buf ptr = BUF_INIT;
	bool ignored;

	if (r->last && has_prefix(p->pe, p->len, r->last, r->last_len))
		return 0;
	/* Status and server metadata are never ours to remove. */
	if (p->len && p->pe[0].type == DIFF_PE_FIELD &&
	    !strcmp(p->pe[0].text, "status"))
		return 0;
	for (size_t i = 0; i < c->nmgrs; i++) {
		const struct diff_fieldset *set;

		if (c->mgrs[i].actor == DIFF_ACTOR_SELF)
			continue;
		if ((set = manager_set(c, i)) && diff_fieldset_has_prefix(set, p))
			return 0; /* co-owned: it stays, we just let go */
	}
	lv = diff_tree_get(r->live, p->pe, p->len, c->root_schema, NULL);
	if (!lv)
		return 0;
	path_pointer(p, &ptr);
	ignored = pointer_ignored(r->ptrs, buf_cstr(&ptr));
	buf_release(&ptr);
	if (ignored) {
		c->rep->nignored++;
		return 0;
	}
	free(r->last);
	r->last = malloc(p->len * sizeof(*r->last));
	if (!r->last)
		return oom(c);
	memcpy(r->last, p->pe, p->len * sizeof(*r->last));
	r->last_len = p->len;
	/* The texts are the walk's; the prefix check runs within it. */
	if (keep_path(c, &c->gone, &c->ngone, &c->agone, p->pe, p->len) < 0 ||
	    record_at(c, p->pe, p->len, DIFF_REMOVED, NULL, lv) < 0)
		return c->error;
	return 0;
}

/*
 * One of our Apply entries for the main resource? Read from the
 * managedFields entry itself (own_entry_fields() has no managers loaded);
 * a manager without a name is "", as load_managers() reads it.
 */
static bool own_apply_entry(const struct cmp *c, const json_t *e)
{
	const char *name = json_string_value(json_object_get(e, "manager"));
	const char *operation =
		json_string_value(json_object_get(e, "operation"));
	const char *subresource =
		json_string_value(json_object_get(e, "subresource"));

	return json_is_object(e) &&
	       !strcmp(name ? name : "", c->field_manager) && operation &&
	       !strcmp(operation, "Apply") && (!subresource || !*subresource);
}

/*
 * What our field manager applied (Apply, main resource): *out is the one
 * entry's set itself when there is one (owned by c, *acc stays NULL), or
 * the union of several in *acc (caller frees); NULL when there is none.
 */
static int own_applied_set(struct cmp *c, const struct diff_fieldset **out,
			   struct diff_fieldset **acc)
{
	const struct diff_fieldset *first = NULL;

	*out = NULL;
	*acc = NULL;
	load_managers(c);
	for (size_t i = 0; i < c->nmgrs; i++) {
		const struct diff_fieldset *set;
		struct diff_fieldset *u;

		if (!own_apply_entry(c, c->mgrs[i].entry))
			continue;
		if (!(set = manager_set(c, i)))
			continue;
		if (!first) {
			first = set;
			continue;
		}
		if (!(u = diff_fieldset_union(*acc ? *acc : first, set)))
			return oom(c);
		diff_fieldset_free(*acc);
		*acc = u;
	}
	*out = *acc ? *acc : first;
	return 0;
}

/*
 * The fieldsV1 of our one Apply entry for the main resource, read from
 * live's managedFields as they are (no manager loaded, no warning given);
 * NULL when there is none or several.
 */
static const json_t *own_entry_fields(const struct cmp *c)
{
	const json_t *list = json_object_get(
		json_object_get(c->live, "metadata"), "managedFields");
	const json_t *e, *own = NULL;
	size_t i;

	json_array_foreach (list, i, e) {
		if (!own_apply_entry(c, e))
			continue;
		if (own)
			return NULL; /* several: their union is needed */
		own = e;
	}
	return own ? json_object_get(own, "fieldsV1") : NULL;
}

/* --- JSON pointers (ignore rules) --- */

static char *pointer_token(const char **p)
{
	const char *s = *p, *end = strchr(s, '/');
	size_t n = end ? (size_t)(end - s) : strlen(s);
	char *tok = malloc(n + 1), *o = tok;

	if (!tok)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '~' && i + 1 < n && (s[i + 1] == '0' || s[i + 1] == '1')) {
			*o++ = s[i + 1] == '0' ? '~' : '/';
			i++;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	*p = end ? end + 1 : s + n;
	return tok;
}

/* Resolve an RFC 6901 pointer; *parent and *tok (caller frees) for deletion. */
static json_t *pointer_get(json_t *root, const char *ptr, json_t **parent,
			   char **last)
{
	json_t *node = root;

	*parent = NULL;
	*last = NULL;
	if (*ptr != '/')
		return *ptr ? NULL : root;
	ptr++;
	for (;;) {
		char *tok = pointer_token(&ptr);
		json_t *next;

		if (!tok)
			return NULL;
		if (json_is_object(node)) {
			next = json_object_get(node, tok);
		} else if (json_is_array(node)) {
			char *end;
			unsigned long i = strtoul(tok, &end, 10);

			next = *tok && !*end ? json_array_get(node, i) : NULL;
		} else {
			next = NULL;
		}
		if (!next) {
			free(tok);
			return NULL;
		}
		*parent = node;
		free(*last);
		*last = tok;
		node = next;
		if (!*ptr && ptr[-1] != '/')
			return node;
	}
}

static void pointer_delete(json_t *root, const char *ptr)
{
	json_t *parent;
	char *tok;

	if (pointer_get(root, ptr, &parent, &tok) && parent) {
		if (json_is_object(parent))
			json_object_del(parent, tok);
		else
			json_array_remove(parent, strtoul(tok, NULL, 10));
	}
	free(tok);
}

/* --- views for the text rendering --- */

static bool key_is(const char *key, size_t len, const char *name)
{
	return len == strlen(name) && !memcmp(key, name, len);
}

/*
 * Is a member left out of the view? Level 0 is the object, 1 its metadata,
 * 2 its annotations.
 */
static bool view_drops(unsigned level, const char *key, size_t len)
{
	if (level == 0)
		return key_is(key, len, "status");
	if (level == 2)
		return key_is(
			key, len,
			"kubectl.kubernetes.io/last-applied-configuration");
	for (const char *const *f = server_metadata + 2; *f; f++)
		if (key_is(key, len, *f))
			return true;
	return false;
}

/*
 * A copy of an object without the members the view drops: status, server
 * metadata, the last-applied annotation, and annotations left empty. The
 * live object's biggest parts (managedFields, status) are never copied.
 */
static json_t *view_copy(const json_t *obj, unsigned level)
{
	json_t *out = json_object(), *copy;

	if (!out)
		return NULL;
	for (void *it = json_object_iter((json_t *)obj); it;
	     it = json_object_iter_next((json_t *)obj, it)) {
		const char *key = json_object_iter_key(it);
		size_t len = json_object_iter_key_len(it);
		const json_t *val = json_object_iter_value(it);

		if (view_drops(level, key, len))
			continue;
		if (level < 2 && json_is_object(val) &&
		    key_is(key, len, level ? "annotations" : "metadata")) {
			if (!(copy = view_copy(val, level + 1)))
				goto nomem;
			if (level && !json_object_size(copy)) {
				json_decref(copy);
				continue;
			}
		} else if (!(copy = json_deep_copy(val))) {
			goto nomem;
		}
		if (json_object_setn_new_nocheck(out, key, len, copy) < 0)
			goto nomem;
	}
	return out;
nomem:
	json_decref(out);
	return NULL;
}

static json_t *strip_view(const json_t *obj, const struct diff_options *opts,
			  bool secret, bool sensitive)
{
	json_t *v =
		json_is_object(obj) ? view_copy(obj, 0) : json_deep_copy(obj);

	if (!v)
		return NULL;
	if (secret) {
		/* Show stringData as the data the server would store. */
		json_t *sd = json_object_get(v, "stringData");
		const char *k;
		json_t *x;

		if (json_is_object(sd)) {
			json_t *data = json_object_get(v, "data");

			if (!json_is_object(data)) {
				data = json_object();
				json_object_set_new(v, "data", data);
			}
			json_object_foreach (sd, k, x) {
				char *enc = json_is_string(x)
						    ? b64_encode(json_string_value(x),
								 json_string_length(x))
						    : NULL;

				if (enc)
					json_object_set_new(data, k,
							    json_string(enc));
				free(enc);
			}
			json_object_del(v, "stringData");
		}
		mask_secret_object(opts, v);
	}
	if (sensitive && json_is_object(v)) {
		/* The rest of a decrypted object; Secret data is done. */
		const char *k;
		json_t *x, *m;

		json_object_foreach (v, k, x) {
			if (!strcmp(k, "apiVersion") || !strcmp(k, "kind") ||
			    (secret && (!strcmp(k, "data") ||
					!strcmp(k, "stringData"))))
				continue;
			m = mask_value(opts, x,
				       strcmp(k, "metadata") ? MASK_ALL
							     : MASK_METADATA,
				       secret);
			if (!m) {
				json_decref(v);
				return NULL;
			}
			json_object_set_new(v, k, m);
		}
	}
	return v;
}

/* --- one object --- */

static void owned_paths_free(struct owned_path *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < p[i].len; j++)
			free((char *)p[i].pe[j].text);
		free(p[i].pe);
	}
	free(p);
}

static int fill_identity(struct diff_object_report *out, const json_t *obj,
			 struct err *err)
{
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	int error;

	if ((error = diff_key_from_object(&out->key, obj, err)) < 0)
		return error;
	if (!(out->api_version = strdup(av ? av : "")))
		return err_set(err, ERR_NOMEM, "out of memory");
	return 0;
}

int diff_compare_object(struct diff_object_report *out, const json_t *desired,
			const json_t *live, const struct diff_schemas *reg,
			const struct diff_options *opts, struct err *err)
{
	return diff_compare_sensitive(out, desired, live, reg, opts, false,
				      err);
}

int diff_compare_sensitive(struct diff_object_report *out,
			   const json_t *desired, const json_t *live,
			   const struct diff_schemas *reg,
			   const struct diff_options *opts_in, bool sensitive,
			   struct err *err)
{
	static const struct diff_options defaults = DIFF_OPTIONS_INIT;
	const struct diff_options *opts = opts_in ? opts_in : &defaults;
	struct cmp c = {0};
	struct diff_fieldset *desired_set = NULL, *own_union = NULL;
	struct diff_fieldset *want = NULL;
	const struct diff_fieldset *own = NULL;
	const json_t *own_fields;
	bool own_is_desired;
	json_t *compared = NULL, *apply = NULL;
	const char **ptrs = NULL;
	size_t nptrs = 0;
	struct buf id = BUF_INIT;
	int error = 0;

	memset(out, 0, sizeof(*out));
	if ((error = fill_identity(out, desired, err)) < 0)
		goto out;
	c.opts = opts;
	c.field_manager = opts->field_manager ? opts->field_manager : "syncd";
	c.rep = out;
	c.live = live;
	c.reg = reg;
	c.err = err;
	c.secret = !*out->key.group && !strcmp(out->key.kind, "Secret");
	c.sensitive = sensitive;
	c.root_schema = diff_schemas_lookup(reg, out->key.group, out->key.kind);
	c.typed = diff_schemas_typed(reg, out->key.group, out->key.kind);

	/*
	 * What we declare, as a field set. Usually it is what we own, the
	 * entry the server wrote for our last apply: one walk looking each
	 * field up in that entry says so, and no set is built.
	 */
	own_is_desired = false;
	if (live && (own_fields = own_entry_fields(&c))) {
		if ((error = diff_fieldset_of_object_is(desired, c.root_schema,
							own_fields, err)) < 0)
			goto out;
		own_is_desired = error == 1;
		error = 0;
	}
	if (!own_is_desired &&
	    (error = diff_fieldset_of_object(&desired_set, desired,
					     c.root_schema, err)) < 0)
		goto out;

	if (!live) {
		out->state = DIFF_MISSING;
		if (opts->policy != DIFF_POLICY_REPORT &&
		    !(out->apply = json_deep_copy(desired)))
			goto nomem;
		if (!opts->no_views &&
		    !(out->desired_view =
			      strip_view(desired, opts, c.secret, sensitive)))
			goto nomem;
		goto out;
	}

	/* Ignore rules with JSON pointers: differing values are dropped. */
	for (size_t r = 0; r < opts->nignore; r++) {
		const struct diff_ignore_rule *rule = &opts->ignore[r];

		if (!rule_matches(rule, &out->key) || !rule->json_pointers)
			continue;
		for (const char *const *p = rule->json_pointers; *p; p++) {
			json_t *parent, *dv, *lv;
			char *tok, *tok2;
			const char **np;

			np = realloc(ptrs, (nptrs + 2) * sizeof(*ptrs));
			if (!np)
				goto nomem;
			ptrs = np;
			ptrs[nptrs++] = *p;
			ptrs[nptrs] = NULL;
			if (!compared && !(compared = json_deep_copy(desired)))
				goto nomem;
			dv = pointer_get(compared, *p, &parent, &tok);
			lv = pointer_get((json_t *)live, *p, &parent, &tok2);
			free(tok);
			free(tok2);
			if (!dv)
				continue;
			if (!diff_value_equal(dv, lv, false))
				out->nignored++;
			pointer_delete(compared, *p);
		}
	}

	c.droot = compared ? compared : desired;
	if ((error = cmp_node(&c, c.droot, live, c.root_schema)) < 0 ||
	    c.error)
		goto out_error;
	if (c.secret && (error = cmp_string_data(&c, desired, live)) < 0)
		goto out_error;

	/*
	 * Fields we applied before and no longer declare. Usually what we
	 * own is exactly what we declare, known above without a set (own
	 * stays NULL then; it is built below if needed); else our entries
	 * are parsed and compared.
	 */
	if (!own_is_desired) {
		if ((error = own_applied_set(&c, &own, &own_union)) < 0)
			goto out_error;
		own_is_desired = own && diff_fieldset_equal(own, desired_set);
	}
	if (own && !own_is_desired && !diff_fieldset_subset(own, desired_set)) {
		struct diff_fieldset *gone =
			diff_fieldset_difference(own, desired_set);
		struct removal r = {&c, (json_t *)live, NULL, 0, ptrs};

		if (!gone)
			goto nomem;
		error = diff_fieldset_walk(gone, removal_visit, &r);
		free(r.last);
		diff_fieldset_free(gone);
		if (error < 0 || c.error)
			goto out_error;
	}

	/* The state. */
	if (!out->nfields) {
		out->state = DIFF_IN_SYNC;
	} else {
		/*
		 * Drifted when something syncd heals differs; a held field is
		 * not healed, so an object with only held (and foreign)
		 * fields is Fighting: nothing to act on until the fight
		 * clears.
		 */
		bool held = false, heals = false;

		for (size_t i = 0; i < out->nfields; i++) {
			if (out->fields[i].fight)
				held = true;
			else if (!out->fields[i].foreign)
				heals = true;
		}
		out->state = heals ? DIFF_DRIFTED
			     : held ? DIFF_FIGHTING
				    : DIFF_FOREIGN;
	}

	/*
	 * The request: desired less what we leave alone. Copied only when
	 * something is left alone or the request is sent (rarely, that is).
	 */
	if (opts->policy != DIFF_POLICY_REPORT) {
		bool same;

		if ((c.ndrop || nptrs) && !(apply = json_deep_copy(desired)))
			goto nomem;
		for (size_t i = 0; i < nptrs; i++) {
			json_t *parent, *dv, *lv;
			char *tok, *tok2;

			dv = pointer_get(apply, ptrs[i], &parent, &tok);
			lv = pointer_get((json_t *)live, ptrs[i], &parent, &tok2);
			free(tok);
			free(tok2);
			if (dv && !diff_value_equal(dv, lv, false))
				pointer_delete(apply, ptrs[i]);
		}
		for (size_t i = 0; i < c.ndrop; i++)
			diff_tree_delete(apply, c.drop[i].pe, c.drop[i].len,
				    c.root_schema);
		if (c.ndrop || nptrs) {
			if ((error = diff_fieldset_of_object(&want, apply,
							     c.root_schema,
							     err)) < 0)
				goto out;
		}
		/* Known equal to ours without the set: built now. */
		if (want && own_is_desired && !own) {
			if ((error = diff_fieldset_of_object(&desired_set,
							     desired,
							     c.root_schema,
							     err)) < 0)
				goto out;
			own = desired_set;
		}
		/* Apply when something heals or our ownership is not right. */
		same = want ? own && diff_fieldset_equal(own, want)
			    : own_is_desired;
		if (c.heal || !same) {
			if (!apply && !(apply = json_deep_copy(desired)))
				goto nomem;
			out->apply = apply;
			apply = NULL;
			out->force = opts->policy == DIFF_POLICY_OVERRIDE ||
				     c.force;
		}
	}

	if (out->state != DIFF_IN_SYNC && !opts->no_views) {
		/* Both views masked before merging: no Secret value leaks. */
		json_t *dv = strip_view(desired, opts, c.secret, sensitive);

		out->live_view = strip_view(live, opts, c.secret, sensitive);
		if (!out->live_view || !dv) {
			json_decref(dv);
			goto nomem;
		}
		/* A held field is not written: after the apply it is live's. */
		for (size_t i = 0; i < c.nheld; i++)
			diff_tree_delete(dv, c.held[i].pe, c.held[i].len,
					 c.root_schema);
		out->desired_view = diff_tree_merge(out->live_view, dv, c.root_schema);
		json_decref(dv);
		if (!out->desired_view)
			goto nomem;
		/* What the apply removes disappears from the view. */
		for (size_t i = 0; i < c.ngone; i++)
			diff_tree_delete(out->desired_view, c.gone[i].pe,
				    c.gone[i].len, c.root_schema);
	}
	goto out;

nomem:
	/* The identity is formatted only here: most objects never need it. */
	diff_key_format(&out->key, &id);
	error = err_set(err, ERR_NOMEM, "%s: out of memory", buf_cstr(&id));
	goto out;
out_error:
	if (!error)
		error = c.error;
out:
	for (size_t i = 0; i < c.nmgrs; i++)
		diff_fieldset_free(c.mgrs[i].set);
	free(c.mgrs);
	while (c.depth)
		pop(&c);
	free(c.pe);
	free(c.owned);
	free(c.node);
	json_decref(c.stored);
	owned_paths_free(c.drop, c.ndrop);
	owned_paths_free(c.gone, c.ngone);
	owned_paths_free(c.held, c.nheld);
	diff_fieldset_free(desired_set);
	diff_fieldset_free(own_union);
	diff_fieldset_free(want);
	json_decref(compared);
	json_decref(apply);
	free(ptrs);
	buf_release(&id);
	if (error < 0)
		diff_object_report_release(out);
	return error;
}

int diff_object_settle(struct diff_object *live,
		       const struct diff_object *desired,
		       const struct diff_schemas *reg,
		       const struct diff_options *opts, struct err *err)
{
	struct diff_object_report rep;
	struct err why = ERR_INIT;
	const char *uid;
	bool settles;
	int error;

	error = diff_compare_sensitive(&rep, desired->json, live->json, reg,
				       opts, desired->sensitive, &why);
	if (error == ERR_NOMEM) {
		err_move(err, &why);
		return error;
	}
	err_release(&why);
	if (error < 0)
		return 0; /* diff_compare() says why, in its place */
	settles = rep.state == DIFF_IN_SYNC && !rep.nfields &&
		  !rep.nwarnings && !rep.apply && !rep.live_view &&
		  !rep.desired_view;
	live->settled_ignored = rep.nignored;
	diff_object_report_release(&rep);
	if (!settles)
		return 0;
	uid = json_string_value(
		json_object_get(json_object_get(live->json, "metadata"), "uid"));
	if (uid && !(live->uid = strdup(uid)))
		return err_set(err, ERR_NOMEM, "out of memory");
	json_decref(live->json);
	live->json = NULL;
	live->settled = true;
	return 1;
}

int diff_settled_report(struct diff_object_report *out,
			const struct diff_object *desired,
			const struct diff_object *live, struct err *err)
{
	int error;

	memset(out, 0, sizeof(*out));
	if ((error = fill_identity(out, desired->json, err)) < 0) {
		diff_object_report_release(out);
		return error;
	}
	out->state = DIFF_IN_SYNC;
	out->nignored = live->settled_ignored;
	return 0;
}

int diff_orphan_object(struct diff_object_report *out, const json_t *live,
		       const struct diff_options *opts, struct err *err)
{
	int error;

	memset(out, 0, sizeof(*out));
	out->state = DIFF_ORPHAN;
	if ((error = fill_identity(out, live, err)) < 0 || opts->no_views)
		goto out;
	out->live_view = strip_view(live, opts,
				    !*out->key.group &&
					    !strcmp(out->key.kind, "Secret"),
				    false);
	if (!out->live_view)
		error = err_set(err, ERR_NOMEM, "out of memory");
out:
	if (error < 0)
		diff_object_report_release(out);
	return error;
}

void diff_field_release(struct diff_field *f)
{
	free(f->path);
	json_decref(f->desired);
	json_decref(f->live);
	diff_fight_free(f->fight);
	owners_free(f->owners, f->nowners);
	memset(f, 0, sizeof(*f));
}

void diff_object_report_release(struct diff_object_report *rep)
{
	if (!rep)
		return;
	diff_key_release(&rep->key);
	free(rep->api_version);
	free(rep->origin);
	for (size_t i = 0; i < rep->nfields; i++)
		diff_field_release(&rep->fields[i]);
	free(rep->fields);
	for (size_t i = 0; i < rep->nwarnings; i++)
		free(rep->warnings[i]);
	free(rep->warnings);
	json_decref(rep->apply);
	json_decref(rep->live_view);
	json_decref(rep->desired_view);
	memset(rep, 0, sizeof(*rep));
}
