/*
 * Schemas: how each field of an object merges, as structured-merge-diff
 * (SMD) sees it in kube-apiserver, and the field set an applier owns.
 *
 * A schema is a tree (a graph, for recursive types) of nodes. A node is
 *
 *   N_STRUCT    granular struct or map: declared fields by name; keys that
 *               are not declared are map entries of type `values` when it
 *               is set, else fields of the default type
 *   N_ATOMIC    replaced whole (atomic list, map or struct); fields, values
 *               and items may still be declared, for lookups inside it
 *   N_SET       list of scalars merged by value
 *   N_MAP_LIST  list of objects merged by `keys` (sorted by name)
 *   N_SCALAR    a leaf
 *   N_DEFAULT   nothing known: objects granular, lists atomic
 *   N_DEDUCED   SMD's type for schema-less values (preserve-unknown-fields
 *               subtrees): objects granular with every key a map entry,
 *               lists atomic
 *
 * The built-in kinds come from the table in diff/schema_builtin.c, parsed
 * into a pool owned by the registry; each CRD gets a pool of its own, so
 * that replacing or removing it frees exactly its nodes. Nodes shared by
 * everything (scalar, atomic, default, ...) are static.
 */
#include "diff/internal.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/banned.h" /* last */

/* diff/schema_builtin.c */
extern const char diff_schema_builtin_text[];

/* Deepest path diff_fieldset_of_object() follows, deepest CRD schema. */
#define MAX_PATH_DEPTH 256
#define MAX_SCHEMA_DEPTH 128

enum node_kind {
	N_STRUCT,
	N_ATOMIC,
	N_SET,
	N_MAP_LIST,
	N_SCALAR,
	N_DEFAULT,
	N_DEDUCED,
};

struct field {
	const char *name;
	const struct diff_schema *schema;
};

struct diff_schema {
	unsigned char kind;                /* enum node_kind */
	bool quantity;
	size_t nfields;
	const struct field *fields;        /* sorted by name */
	const struct diff_schema *values;  /* type of undeclared keys */
	const struct diff_schema *items;   /* type of list items */
	size_t nkeys;
	const char *const *keys;           /* N_MAP_LIST, sorted by name */
	const json_t *const *defaults;     /* nkeys entries, NULL: none */
	const json_t *openapi;             /* a CRD's node: its JSONSchemaProps
					      (defaults), kept by the pool */
};

static const struct diff_schema default_node = {.kind = N_DEFAULT};
static const struct diff_schema deduced_node = {
	.kind = N_DEDUCED, .values = &deduced_node, .items = &deduced_node};
static const struct diff_schema scalar_node = {.kind = N_SCALAR};
static const struct diff_schema quantity_node = {.kind = N_SCALAR,
						 .quantity = true};
static const struct diff_schema atomic_node = {.kind = N_ATOMIC};
static const struct diff_schema struct_node = {.kind = N_STRUCT};
static const struct diff_schema set_node = {.kind = N_SET,
					    .items = &scalar_node};

/* --- pools: bump allocation, freed all at once --- */

struct chunk {
	struct chunk *next;
	size_t used, size;
	max_align_t mem[];
};

struct pool {
	struct chunk *chunks;
	json_t **json;     /* references released with the pool */
	size_t njson, json_alloc;
};

/* Chunks start small (most CRDs are) and double up to POOL_CHUNK_MAX. */
#define POOL_CHUNK_MIN 2048
#define POOL_CHUNK_MAX 65536

static void *pool_zalloc(struct pool *p, size_t n)
{
	const size_t align = alignof(max_align_t);
	struct chunk *c = p->chunks;
	void *mem;

	n = (n + align - 1) & ~(align - 1);
	if (!c || c->size - c->used < n) {
		size_t size = c ? 2 * c->size : POOL_CHUNK_MIN;

		if (size > POOL_CHUNK_MAX)
			size = POOL_CHUNK_MAX;
		if (size < n)
			size = n;

		if (!(c = malloc(sizeof(*c) + size)))
			return NULL;
		c->used = 0;
		c->size = size;
		c->next = p->chunks;
		p->chunks = c;
	}
	mem = (char *)c->mem + c->used;
	c->used += n;
	memset(mem, 0, n);
	return mem;
}

static char *pool_strndup(struct pool *p, const char *s, size_t len)
{
	char *d = pool_zalloc(p, len + 1);

	if (d)
		memcpy(d, s, len);
	return d;
}

/* Keep `j` (a reference the caller gives up) until the pool is released. */
static int pool_keep(struct pool *p, json_t *j)
{
	if (!j)
		return ERR_NOMEM;
	if (p->njson == p->json_alloc) {
		size_t n = p->json_alloc ? 2 * p->json_alloc : 8;
		json_t **a = realloc(p->json, n * sizeof(*a));

		if (!a) {
			json_decref(j);
			return ERR_NOMEM;
		}
		p->json = a;
		p->json_alloc = n;
	}
	p->json[p->njson++] = j;
	return 0;
}

static void pool_release(struct pool *p)
{
	struct chunk *c = p->chunks;

	while (c) {
		struct chunk *next = c->next;

		free(c);
		c = next;
	}
	for (size_t i = 0; i < p->njson; i++)
		json_decref(p->json[i]);
	free(p->json);
	memset(p, 0, sizeof(*p));
}

static int field_cmp(const void *a, const void *b)
{
	return strcmp(((const struct field *)a)->name,
		      ((const struct field *)b)->name);
}

/* Sort fields by name; false when a name appears twice. */
static bool fields_sort(struct field *f, size_t n)
{
	if (n < 2)
		return true;
	qsort(f, n, sizeof(*f), field_cmp);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(f[i - 1].name, f[i].name))
			return false;
	return true;
}

/* Sort map-list keys by name, their defaults alongside (a few keys). */
static bool keys_sort(const char **keys, const json_t **defaults, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0;
		     j--) {
			const char *k = keys[j];
			const json_t *d = defaults[j];

			keys[j] = keys[j - 1];
			defaults[j] = defaults[j - 1];
			keys[j - 1] = k;
			defaults[j - 1] = d;
		}
	for (size_t i = 1; i < n; i++)
		if (!strcmp(keys[i - 1], keys[i]))
			return false;
	return true;
}

/* --- the registry --- */

struct kind_entry {
	const char *group;
	const char *kind;
	const struct diff_schema *root;
};

struct crd_entry {
	const char *group;
	const char *kind;
	const struct diff_schema *root;
	struct pool pool;   /* holds this entry, its strings and nodes */
};

struct diff_schemas {
	struct pool pool;                 /* built-in nodes */
	struct kind_entry *kinds;         /* built-in kinds, sorted */
	size_t nkinds, kinds_alloc;
	const struct diff_schema *object_meta;
	const struct diff_schema *default_root;
	struct crd_entry **crds;          /* sorted by group, kind */
	size_t ncrds, crds_alloc;
};

static int gk_cmp(const char *g1, const char *k1, const char *g2,
		  const char *k2)
{
	int c = strcmp(g1, g2);

	return c ? c : strcmp(k1, k2);
}

static int kind_entry_cmp(const void *a, const void *b)
{
	const struct kind_entry *x = a, *y = b;

	return gk_cmp(x->group, x->kind, y->group, y->kind);
}

/* --- the built-in table (see diff/schema_builtin.c for its syntax) --- */

#define NAMED_SLOTS 512

struct named {
	const char *name;  /* into the table text, not terminated */
	size_t len;
	struct diff_schema *node;
	bool defined;
};

struct dsl {
	struct diff_schemas *reg;
	struct named *slots;
	const char *p;     /* cursor in the current line */
	const char *eol;   /* end of the current line */
};

static struct named *dsl_named(struct dsl *d, const char *name, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 16777619u;
	for (i = 0; i < NAMED_SLOTS; i++) {
		struct named *n = &d->slots[(h + i) & (NAMED_SLOTS - 1)];

		if (!n->name) {
			if (!(n->node = pool_zalloc(&d->reg->pool,
						    sizeof(*n->node))))
				return NULL;
			n->name = name;
			n->len = len;
			return n;
		}
		if (n->len == len && !memcmp(n->name, name, len))
			return n;
	}
	return NULL;
}

/* The next word: up to a space, '(' or the end of the line. */
static size_t dsl_word(struct dsl *d, const char **word)
{
	const char *s = d->p;

	while (d->p < d->eol && *d->p != ' ' && *d->p != '(')
		d->p++;
	*word = s;
	return (size_t)(d->p - s);
}

static bool dsl_is(const char *w, size_t len, const char *lit)
{
	return strlen(lit) == len && !memcmp(w, lit, len);
}

static const struct diff_schema *dsl_type(struct dsl *d);

/* maplist(KEY[=JSON],...) TYPE, after the word "maplist". */
static const struct diff_schema *dsl_maplist(struct dsl *d)
{
	struct pool *pool = &d->reg->pool;
	const char *keys[8], **k;
	const json_t *defaults[8], **def;
	size_t n = 0;
	struct diff_schema *node;

	if (d->p >= d->eol || *d->p++ != '(')
		return NULL;
	for (;;) {
		const char *s = d->p;
		json_t *dflt = NULL;

		while (d->p < d->eol && !strchr("=,)", *d->p))
			d->p++;
		if (d->p >= d->eol || d->p == s || n == 8)
			return NULL;
		if (!(keys[n] = pool_strndup(pool, s, (size_t)(d->p - s))))
			return NULL;
		if (*d->p == '=') {
			s = ++d->p;
			while (d->p < d->eol && !strchr(",)", *d->p))
				d->p++;
			dflt = json_loadb(s, (size_t)(d->p - s),
					  JSON_DECODE_ANY, NULL);
			if (!dflt || d->p >= d->eol ||
			    pool_keep(pool, dflt) < 0)
				return NULL;
		}
		defaults[n++] = dflt;
		if (*d->p++ == ')')
			break;
	}
	if (d->p >= d->eol || *d->p++ != ' ' || !keys_sort(keys, defaults, n))
		return NULL;
	if (!(node = pool_zalloc(pool, sizeof(*node))))
		return NULL;
	k = pool_zalloc(pool, n * sizeof(*k));
	def = pool_zalloc(pool, n * sizeof(*def));
	if (!k || !def)
		return NULL;
	memcpy(k, keys, n * sizeof(*k));
	memcpy(def, defaults, n * sizeof(*def));
	node->kind = N_MAP_LIST;
	node->nkeys = n;
	node->keys = k;
	node->defaults = def;
	node->items = dsl_type(d);
	return node->items ? node : NULL;
}

/* A TYPE at the cursor; NULL when malformed or out of memory. */
static const struct diff_schema *dsl_type(struct dsl *d)
{
	static const struct {
		const char *word;
		const struct diff_schema *node;
	} simple[] = {
		{"scalar", &scalar_node},   {"quantity", &quantity_node},
		{"atomic", &atomic_node},   {"struct", &struct_node},
		{"set", &set_node},         {"deduced", &deduced_node},
		{"default", &default_node},
	};
	const char *w;
	size_t len = dsl_word(d, &w);
	struct diff_schema *node;
	struct named *n;

	if (!len)
		return NULL;
	for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++)
		if (dsl_is(w, len, simple[i].word))
			return simple[i].node;
	if (dsl_is(w, len, "maplist"))
		return dsl_maplist(d);
	if (dsl_is(w, len, "map") || dsl_is(w, len, "atomic-map") ||
	    dsl_is(w, len, "list")) {
		const struct diff_schema *inner;

		if (d->p >= d->eol || *d->p++ != ' ' ||
		    !(node = pool_zalloc(&d->reg->pool, sizeof(*node))))
			return NULL;
		if (!(inner = dsl_type(d)))
			return NULL;
		node->kind = w[0] == 'm' ? N_STRUCT : N_ATOMIC;
		if (w[0] == 'l')
			node->items = inner;
		else
			node->values = inner;
		return node;
	}
	n = dsl_named(d, w, len);
	return n ? n->node : NULL;
}

/* Number of field lines (starting with a tab) after the line at `eol`. */
static size_t dsl_count_fields(const char *eol)
{
	size_t n = 0;

	while (*eol == '\n' && eol[1] == '\t') {
		n++;
		eol = strchr(eol + 1, '\n');
		if (!eol)
			break;
	}
	return n;
}

static int dsl_kind(struct dsl *d)
{
	struct diff_schemas *reg = d->reg;
	const char *w, *slash;
	size_t len = dsl_word(d, &w);
	struct kind_entry *e;

	if (d->p >= d->eol || *d->p++ != ' ' ||
	    !(slash = memchr(w, '/', len)))
		return ERR_GENERIC;
	if (reg->nkinds == reg->kinds_alloc) {
		size_t n = reg->kinds_alloc ? 2 * reg->kinds_alloc : 32;
		struct kind_entry *a = realloc(reg->kinds, n * sizeof(*a));

		if (!a)
			return ERR_NOMEM;
		reg->kinds = a;
		reg->kinds_alloc = n;
	}
	e = &reg->kinds[reg->nkinds];
	e->group = pool_strndup(&reg->pool, w, (size_t)(slash - w));
	e->kind = pool_strndup(&reg->pool, slash + 1,
			       (size_t)(w + len - slash - 1));
	e->root = dsl_type(d);
	if (!e->group || !e->kind || !e->root || d->p != d->eol)
		return ERR_GENERIC;
	reg->nkinds++;
	return 0;
}

/*
 * Parse the built-in table into reg. Any error is a bug in the table (or
 * no memory): the registry is then not usable.
 */
static int dsl_parse(struct diff_schemas *reg)
{
	struct dsl d = {reg, NULL, NULL, NULL};
	const char *line = diff_schema_builtin_text;
	struct diff_schema *cur = NULL;
	struct field *fields = NULL;
	size_t cap = 0;
	struct named *n;
	int error = 0;

	if (!(d.slots = calloc(NAMED_SLOTS, sizeof(*d.slots))))
		return ERR_NOMEM;
	for (; *line; line = *d.eol ? d.eol + 1 : d.eol) {
		const char *w;
		size_t len;

		d.p = line;
		d.eol = strchr(line, '\n');
		if (!d.eol)
			d.eol = line + strlen(line);
		if (*line == '\t') {
			/* A field of the current type. */
			const struct diff_schema *t;

			d.p++;
			len = dsl_word(&d, &w);
			if (!cur || cur->nfields == cap || !len ||
			    d.p >= d.eol || *d.p++ != ' ')
				goto bad;
			fields[cur->nfields].name =
				pool_strndup(&reg->pool, w, len);
			t = dsl_type(&d);
			if (!fields[cur->nfields].name || !t || d.p != d.eol)
				goto bad;
			fields[cur->nfields++].schema = t;
			continue;
		}
		if (cur && !fields_sort(fields, cur->nfields))
			goto bad;
		cur = NULL;
		if (*line == '#' || line == d.eol)
			continue;
		len = dsl_word(&d, &w);
		if (dsl_is(w, len, "kind")) {
			d.p++;
			if ((error = dsl_kind(&d)) < 0)
				goto out;
			continue;
		}
		/* NAME struct|atomic, fields on the lines that follow. */
		if (!len || d.p >= d.eol || *d.p++ != ' ' ||
		    !(n = dsl_named(&d, w, len)) || n->defined)
			goto bad;
		n->defined = true;
		cur = n->node;
		len = dsl_word(&d, &w);
		if (d.p != d.eol)
			goto bad;
		if (dsl_is(w, len, "struct"))
			cur->kind = N_STRUCT;
		else if (dsl_is(w, len, "atomic"))
			cur->kind = N_ATOMIC;
		else
			goto bad;
		cap = dsl_count_fields(d.eol);
		fields = pool_zalloc(&reg->pool,
				     (cap ? cap : 1) * sizeof(*fields));
		if (!fields)
			goto nomem;
		cur->fields = fields;
	}
	if (cur && !fields_sort(fields, cur->nfields))
		goto bad;
	for (size_t i = 0; i < NAMED_SLOTS; i++)
		if (d.slots[i].name && !d.slots[i].defined)
			goto bad;
	if (!(n = dsl_named(&d, "ObjectMeta", 10)) || !n->defined)
		goto bad;
	reg->object_meta = n->node;
	if (!(n = dsl_named(&d, "Object", 6)) || !n->defined)
		goto bad;
	reg->default_root = n->node;
	qsort(reg->kinds, reg->nkinds, sizeof(*reg->kinds), kind_entry_cmp);
	for (size_t i = 1; i < reg->nkinds; i++)
		if (!kind_entry_cmp(&reg->kinds[i - 1], &reg->kinds[i]))
			goto bad;
	goto out;
nomem:
	error = ERR_NOMEM;
	goto out;
bad:
	error = ERR_GENERIC;
out:
	free(d.slots);
	return error;
}

/*
 * The kinds of the Go-types table (diff/gotypes_gen.c) the table above
 * does not declare (ReplicationController, PersistentVolume, EndpointSlice,
 * ...): their schemas come from their Go types, the same ones kube-emu's
 * field manager uses, so that an atomic map such as a
 * ReplicationController's selector is atomic here too. A registry of its
 * own (the table parsed again gives its CRD-style schemas their
 * ObjectMeta), built once per process, on the first registry, and never
 * changed: lookups share it without a lock. It lives as long as the
 * process.
 */
static struct diff_schemas *gotype_layer;
static pthread_once_t gotype_once = PTHREAD_ONCE_INIT;

static const struct diff_schema *dsl_lookup(const struct diff_schemas *reg,
					    const char *group,
					    const char *kind);

const char *diff_schemas_gotype_group(const char *group)
{
	return group && *group ? group : "core";
}

void diff_schemas_add_gotypes(struct diff_schemas *reg, bool all)
{
	const char *group, *version, *kind;
	int root;

	for (size_t i = 0;
	     diff_gotype_kind_at(i, &group, &version, &kind, &root); i++) {
		json_t *crd;

		if (!all && dsl_lookup(reg, group, kind))
			continue;
		crd = json_pack("{s:s, s:{s:s}, s:{s:s, s:{s:s}, s:[{s:s, s:b, "
				"s:b, s:{s:o}}]}}",
				"kind", "CustomResourceDefinition", "metadata",
				"name", kind, "spec", "group",
				diff_schemas_gotype_group(group), "names",
				"kind", kind, "versions", "name", version,
				"served", 1, "storage", 1, "schema",
				"openAPIV3Schema", diff_gotype_schema(root));
		/* A kind that fails to register keeps the default schema. */
		if (crd)
			diff_schemas_add_crd(reg, crd, NULL);
		json_decref(crd);
	}
}

static void gotype_layer_build(void)
{
	struct diff_schemas *layer = calloc(1, sizeof(*layer));

	if (!layer || dsl_parse(layer) < 0) {
		diff_schemas_free(layer);
		return;
	}
	diff_schemas_add_gotypes(layer, false);
	gotype_layer = layer;
}

struct diff_schemas *diff_schemas_new(void)
{
	struct diff_schemas *reg = calloc(1, sizeof(*reg));

	if (reg && dsl_parse(reg) < 0) {
		diff_schemas_free(reg);
		return NULL;
	}
	if (reg)
		pthread_once(&gotype_once, gotype_layer_build);
	return reg;
}

static void crd_entry_free(struct crd_entry *e)
{
	if (e) {
		struct pool pool = e->pool;

		/* The entry lives in its own pool. */
		pool_release(&pool);
	}
}

void diff_schemas_free(struct diff_schemas *reg)
{
	if (!reg)
		return;
	for (size_t i = 0; i < reg->ncrds; i++)
		crd_entry_free(reg->crds[i]);
	free(reg->crds);
	free(reg->kinds);
	pool_release(&reg->pool);
	free(reg);
}

/* Index of group/kind in reg->crds, or where it would go (*found false). */
static size_t crd_find(const struct diff_schemas *reg, const char *group,
		       const char *kind, bool *found)
{
	size_t lo = 0, hi = reg->ncrds;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct crd_entry *e = reg->crds[mid];
		int c = gk_cmp(group, kind, e->group, e->kind);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*found = false;
	return lo;
}

/* The table's root of group/kind, or NULL. */
static const struct diff_schema *dsl_lookup(const struct diff_schemas *reg,
					    const char *group,
					    const char *kind)
{
	size_t lo = 0, hi = reg->nkinds;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct kind_entry *e = &reg->kinds[mid];
		int c = gk_cmp(group, kind, e->group, e->kind);

		if (!c)
			return e->root;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const struct diff_schema *diff_schemas_lookup(const struct diff_schemas *reg,
					      const char *group,
					      const char *kind)
{
	const struct diff_schema *root;
	size_t i;
	bool found;

	if (!reg)
		return &default_node;
	if (!group)
		group = "";
	if (!kind)
		return reg->default_root;
	if ((root = dsl_lookup(reg, group, kind)))
		return root;
	i = crd_find(reg, group, kind, &found);
	if (found)
		return reg->crds[i]->root;
	/* Only kinds the server serves from Go types are in the layer. */
	if (gotype_layer && reg != gotype_layer &&
	    diff_schemas_typed(reg, group, kind)) {
		i = crd_find(gotype_layer, diff_schemas_gotype_group(group),
			     kind, &found);
		if (found)
			return gotype_layer->crds[i]->root;
	}
	return reg->default_root;
}

/* The API groups kube-apiserver 1.36 serves from Go types, sorted. */
static const char *const typed_groups[] = {
	"",
	"admissionregistration.k8s.io",
	"apiextensions.k8s.io",
	"apiregistration.k8s.io",
	"apps",
	"authentication.k8s.io",
	"authorization.k8s.io",
	"autoscaling",
	"batch",
	"certificates.k8s.io",
	"coordination.k8s.io",
	"discovery.k8s.io",
	"events.k8s.io",
	"flowcontrol.apiserver.k8s.io",
	"internal.apiserver.k8s.io",
	"networking.k8s.io",
	"node.k8s.io",
	"policy",
	"rbac.authorization.k8s.io",
	"resource.k8s.io",
	"scheduling.k8s.io",
	"storage.k8s.io",
	"storagemigration.k8s.io",
};

static int str_cmp(const void *a, const void *b)
{
	return strcmp(a, *(const char *const *)b);
}

bool diff_schemas_typed(const struct diff_schemas *reg, const char *group,
			const char *kind)
{
	bool found = false;

	if (!group)
		group = "";
	if (!bsearch(group, typed_groups,
		     sizeof(typed_groups) / sizeof(typed_groups[0]),
		     sizeof(typed_groups[0]), str_cmp))
		return false;
	if (reg && kind)
		crd_find(reg, group, kind, &found);
	return !found;
}

void diff_schemas_remove(struct diff_schemas *reg, const char *group,
			 const char *kind)
{
	bool found;
	size_t i;

	if (!reg || !group || !kind)
		return;
	i = crd_find(reg, group, kind, &found);
	if (!found)
		return;
	crd_entry_free(reg->crds[i]);
	memmove(&reg->crds[i], &reg->crds[i + 1],
		(reg->ncrds - i - 1) * sizeof(*reg->crds));
	reg->ncrds--;
}

/* --- lookups --- */

static const struct field *find_field(const struct diff_schema *s,
				      const char *name)
{
	size_t lo = 0, hi = s->nfields;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *f = s->fields[mid].name;
		/* the first byte mostly decides: spare the call */
		int c = (unsigned char)*name - (unsigned char)*f;

		if (!c && *name)
			c = strcmp(name + 1, f + 1);
		if (!c)
			return &s->fields[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

enum diff_schema_type diff_schema_type_of(const struct diff_schema *s,
					  const json_t *value)
{
	bool list = json_is_array(value), object = json_is_object(value);

	if (!s)
		s = &default_node;
	switch ((enum node_kind)s->kind) {
	case N_STRUCT:
		return list ? DIFF_SCHEMA_ATOMIC : DIFF_SCHEMA_GRANULAR;
	case N_SET:
		return list ? DIFF_SCHEMA_SET : DIFF_SCHEMA_ATOMIC;
	case N_MAP_LIST:
		return list ? DIFF_SCHEMA_MAP_LIST : DIFF_SCHEMA_ATOMIC;
	case N_DEFAULT:
	case N_DEDUCED:
		return object ? DIFF_SCHEMA_GRANULAR : DIFF_SCHEMA_ATOMIC;
	case N_ATOMIC:
	case N_SCALAR:
		break;
	}
	return DIFF_SCHEMA_ATOMIC;
}

const struct diff_schema *diff_schema_field(const struct diff_schema *s,
					    const char *name)
{
	const struct field *f;

	if (!s)
		return &default_node;
	if (name && (f = find_field(s, name)))
		return f->schema;
	if (s->values)
		return s->values;
	return s->kind == N_DEDUCED ? &deduced_node : &default_node;
}

const struct diff_schema *diff_schema_items(const struct diff_schema *s)
{
	if (!s)
		return &default_node;
	if (s->items)
		return s->items;
	return s->kind == N_DEDUCED ? &deduced_node : &default_node;
}

size_t diff_schema_keys(const struct diff_schema *s, const char *const **names,
			const json_t *const **defaults)
{
	static const char *const no_names[1];
	static const json_t *const no_defaults[1];

	if (!s || s->kind != N_MAP_LIST) {
		if (names)
			*names = no_names;
		if (defaults)
			*defaults = no_defaults;
		return 0;
	}
	if (names)
		*names = s->keys;
	if (defaults)
		*defaults = s->defaults;
	return s->nkeys;
}

bool diff_schema_is_quantity(const struct diff_schema *s)
{
	return s && s->quantity;
}

/* --- CRDs --- */

struct crd_ctx {
	struct diff_schemas *reg;
	struct pool *pool;
	const char *name;   /* the CRD's, for messages */
	struct buf path;    /* where in the CRD we are */
	unsigned depth;
	struct err *err;
};

static int crd_fail(struct crd_ctx *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int crd_fail(struct crd_ctx *c, int code, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	buf_addf(&msg, "CustomResourceDefinition %s: ", c->name);
	if (c->path.len)
		buf_addf(&msg, "%s: ", buf_cstr(&c->path));
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	err_set(c->err, code, "%s", buf_cstr(&msg));
	buf_release(&msg);
	return code;
}

static int crd_nomem(struct crd_ctx *c)
{
	return crd_fail(c, ERR_NOMEM, "out of memory");
}

/* The string value of an optional member; *out NULL when absent. */
static int crd_string(struct crd_ctx *c, const json_t *js, const char *key,
		      const char **out)
{
	const json_t *v = json_object_get(js, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return crd_fail(c, ERR_INVALID, "%s must be a string", key);
	*out = json_string_value(v);
	return 0;
}

static int crd_node(struct crd_ctx *c, const json_t *js, bool pue,
		    bool root, const struct diff_schema **out);

/*
 * Give a struct node the fields apiVersion, kind and metadata (the real
 * ObjectMeta, whatever the schema says), as the CRD OpenAPI builder does
 * for the root and for x-kubernetes-embedded-resource objects.
 */
static int crd_add_meta(struct crd_ctx *c, struct diff_schema *node)
{
	static const char *const names[] = {"apiVersion", "kind", "metadata"};
	struct field *f = pool_zalloc(c->pool,
				      (node->nfields + 3) * sizeof(*f));
	size_t n = 0;

	if (!f)
		return crd_nomem(c);
	for (size_t i = 0; i < node->nfields; i++) {
		bool meta = false;

		for (size_t j = 0; j < 3; j++)
			meta |= !strcmp(node->fields[i].name, names[j]);
		if (!meta)
			f[n++] = node->fields[i];
	}
	for (size_t j = 0; j < 3; j++) {
		f[n].name = names[j];
		f[n++].schema = j == 2 ? c->reg->object_meta : &scalar_node;
	}
	fields_sort(f, n);
	node->fields = f;
	node->nfields = n;
	return 0;
}

static int crd_object(struct crd_ctx *c, const json_t *js, bool pue,
		      bool root, const struct diff_schema **out)
{
	const json_t *props = json_object_get(js, "properties");
	const json_t *ap = json_object_get(js, "additionalProperties");
	const char *map_type, *key;
	struct diff_schema *node;
	struct field *f = NULL;
	size_t plen = c->path.len, n = 0;
	json_t *v;
	int error;

	if (props && !json_is_object(props))
		return crd_fail(c, ERR_INVALID, "properties must be an object");
	error = crd_string(c, js, "x-kubernetes-map-type", &map_type);
	if (error < 0)
		return error;
	if (!(node = pool_zalloc(c->pool, sizeof(*node))))
		return crd_nomem(c);
	node->openapi = js;
	if (!map_type || !strcmp(map_type, "granular"))
		node->kind = N_STRUCT;
	else if (!strcmp(map_type, "atomic"))
		node->kind = N_ATOMIC;
	else
		return crd_fail(c, ERR_INVALID,
				"unknown x-kubernetes-map-type \"%s\"",
				map_type);
	if (json_object_size(props) &&
	    !(f = pool_zalloc(c->pool, json_object_size(props) * sizeof(*f))))
		return crd_nomem(c);
	json_object_foreach ((json_t *)props, key, v) {
		const struct diff_schema *child;

		if (buf_addf(&c->path, ".properties.%s", key) < 0)
			return crd_nomem(c);
		if ((error = crd_node(c, v, pue, false, &child)) < 0)
			return error;
		buf_truncate(&c->path, plen);
		if (!(f[n].name = pool_strndup(c->pool, key, strlen(key))))
			return crd_nomem(c);
		f[n++].schema = child;
	}
	fields_sort(f, n);
	node->fields = f;
	node->nfields = n;
	if ((root || json_is_true(json_object_get(
			     js, "x-kubernetes-embedded-resource"))) &&
	    (error = crd_add_meta(c, node)) < 0)
		return error;

	/*
	 * Keys beyond the properties, as schemaconv types them: an object
	 * without properties (or under preserve-unknown-fields) is free-form.
	 */
	if (!ap) {
		if (pue || !node->nfields)
			node->values = &deduced_node;
	} else if (json_is_object(ap)) {
		if (buf_adds(&c->path, ".additionalProperties") < 0)
			return crd_nomem(c);
		if ((error = crd_node(c, ap, pue, false, &node->values)) < 0)
			return error;
		buf_truncate(&c->path, plen);
	} else if (json_is_true(ap)) {
		node->values = &deduced_node;
	} else if (!json_is_false(ap)) {
		return crd_fail(c, ERR_INVALID,
				"additionalProperties must be a boolean or "
				"a schema");
	}
	*out = node;
	return 0;
}

static int crd_array(struct crd_ctx *c, const json_t *js, bool pue,
		     const struct diff_schema **out)
{
	const json_t *items = json_object_get(js, "items");
	const json_t *keys = json_object_get(js, "x-kubernetes-list-map-keys");
	const json_t *props;
	const char *list_type, *type;
	struct diff_schema *node;
	size_t plen = c->path.len, nkeys;
	const char **names;
	const json_t **defaults;
	int error;

	error = crd_string(c, js, "x-kubernetes-list-type", &list_type);
	if (error < 0)
		return error;
	if (!(node = pool_zalloc(c->pool, sizeof(*node))))
		return crd_nomem(c);
	node->openapi = js;
	if (items && !json_is_object(items))
		return crd_fail(c, ERR_INVALID,
				"items must be a schema object");
	if (items) {
		if (buf_adds(&c->path, ".items") < 0)
			return crd_nomem(c);
		if ((error = crd_node(c, items, pue, false, &node->items)) < 0)
			return error;
		buf_truncate(&c->path, plen);
	}
	if (keys && (!list_type || strcmp(list_type, "map")))
		return crd_fail(c, ERR_INVALID,
				"x-kubernetes-list-map-keys without "
				"x-kubernetes-list-type map");
	*out = node;
	if (!list_type || !strcmp(list_type, "atomic")) {
		node->kind = N_ATOMIC;
		return 0;
	}
	if (!strcmp(list_type, "set")) {
		node->kind = N_SET;
		return 0;
	}
	if (strcmp(list_type, "map"))
		return crd_fail(c, ERR_INVALID,
				"unknown x-kubernetes-list-type \"%s\"",
				list_type);
	if (!keys)
		return crd_fail(c, ERR_INVALID,
				"x-kubernetes-list-type map without "
				"x-kubernetes-list-map-keys");
	if (!json_is_array(keys) || !(nkeys = json_array_size(keys)))
		return crd_fail(c, ERR_INVALID,
				"x-kubernetes-list-map-keys must be a "
				"non-empty list of field names");
	if ((error = crd_string(c, items, "type", &type)) < 0)
		return error;
	if (!items || !type || strcmp(type, "object"))
		return crd_fail(c, ERR_INVALID,
				"x-kubernetes-list-type map needs items of "
				"type object");
	props = json_object_get(items, "properties");
	names = pool_zalloc(c->pool, nkeys * sizeof(*names));
	defaults = pool_zalloc(c->pool, nkeys * sizeof(*defaults));
	if (!names || !defaults)
		return crd_nomem(c);
	for (size_t i = 0; i < nkeys; i++) {
		const json_t *k = json_array_get(keys, i);
		const json_t *def;

		if (!json_is_string(k) || !json_string_length(k))
			return crd_fail(c, ERR_INVALID,
					"x-kubernetes-list-map-keys must be a "
					"non-empty list of field names");
		names[i] = json_string_value(k);
		if (!json_is_object(json_object_get(props, names[i])))
			return crd_fail(c, ERR_INVALID,
					"x-kubernetes-list-map-keys: \"%s\" is "
					"not a property of the items",
					names[i]);
		if (!(names[i] = pool_strndup(c->pool, names[i],
					      strlen(names[i]))))
			return crd_nomem(c);
		def = json_object_get(json_object_get(props, names[i]),
				      "default");
		if (def) {
			json_t *copy = json_deep_copy(def);

			if (pool_keep(c->pool, copy) < 0)
				return crd_nomem(c);
			defaults[i] = copy;
		}
	}
	if (!keys_sort(names, defaults, nkeys))
		return crd_fail(c, ERR_INVALID,
				"x-kubernetes-list-map-keys names a field "
				"twice");
	node->kind = N_MAP_LIST;
	node->nkeys = nkeys;
	node->keys = names;
	node->defaults = defaults;
	return 0;
}

/* The node for one schema object (a JSONSchemaProps); `root` for the
 * openAPIV3Schema itself. */
static int crd_node(struct crd_ctx *c, const json_t *js, bool pue,
		    bool root, const struct diff_schema **out)
{
	const char *type;
	int error;

	if (!json_is_object(js))
		return crd_fail(c, ERR_INVALID, "schema must be an object");
	if (c->depth >= MAX_SCHEMA_DEPTH)
		return crd_fail(c, ERR_LIMIT, "schema nested too deeply");
	if ((error = crd_string(c, js, "type", &type)) < 0)
		return error;
	/* Preserve-unknown-fields holds for the whole subtree. */
	if (json_is_true(json_object_get(
		    js, "x-kubernetes-preserve-unknown-fields")))
		pue = true;
	c->depth++;
	if (!type || !*type ||
	    json_is_true(json_object_get(js, "x-kubernetes-int-or-string")))
		*out = &deduced_node;
	else if (!strcmp(type, "object"))
		error = crd_object(c, js, pue, root, out);
	else if (!strcmp(type, "array"))
		error = crd_array(c, js, pue, out);
	else if (!strcmp(type, "string") || !strcmp(type, "integer") ||
		 !strcmp(type, "number") || !strcmp(type, "boolean"))
		*out = &scalar_node;
	else
		error = crd_fail(c, ERR_INVALID, "unknown type \"%s\"", type);
	c->depth--;
	return error;
}

/*
 * The root of one version: spec.versions[i].schema.openAPIV3Schema, or
 * the default root (ObjectMeta, the rest unknown) without a schema.
 */
static int crd_version(struct crd_ctx *c, const json_t *version, size_t i,
		       const struct diff_schema **out)
{
	const json_t *schema, *v;
	const struct diff_schema *root;
	int error;

	buf_reset(&c->path);
	if (buf_addf(&c->path, "spec.versions[%zu]", i) < 0)
		return crd_nomem(c);
	if (!json_is_object(version))
		return crd_fail(c, ERR_INVALID, "not an object");
	if (!json_is_string(json_object_get(version, "name")))
		return crd_fail(c, ERR_INVALID, "name must be a string");
	*out = c->reg->default_root;
	if (!(v = json_object_get(version, "schema")) || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return crd_fail(c, ERR_INVALID, "schema must be an object");
	if (buf_adds(&c->path, ".schema.openAPIV3Schema") < 0)
		return crd_nomem(c);
	if (!(schema = json_object_get(v, "openAPIV3Schema")) ||
	    json_is_null(schema))
		return 0;
	if ((error = crd_node(c, schema, false, true, &root)) < 0)
		return error;
	if (root->kind != N_STRUCT)
		return crd_fail(c, ERR_INVALID, "must be of type object");
	*out = root;
	return 0;
}

int diff_schemas_add_crd(struct diff_schemas *reg, const json_t *crd,
			 struct err *err)
{
	struct crd_ctx c = {reg, NULL, "(unnamed)", BUF_INIT, 0, err};
	struct pool pool = {NULL, NULL, 0, 0};
	const json_t *spec, *versions, *v;
	const char *group = NULL, *kind = NULL, *s;
	struct crd_entry *e;
	size_t chosen = SIZE_MAX, i;
	bool found;
	int error = 0;

	c.pool = &pool;
	if (!reg)
		return err_set(err, ERR_INVALID, "no schema registry");
	s = json_string_value(
		json_object_get(json_object_get(crd, "metadata"), "name"));
	if (s)
		c.name = s;
	if (!json_is_object(crd)) {
		error = crd_fail(&c, ERR_INVALID, "not an object");
		goto out;
	}
	s = json_string_value(json_object_get(crd, "kind"));
	if (s && strcmp(s, "CustomResourceDefinition")) {
		error = crd_fail(&c, ERR_INVALID, "kind is %s", s);
		goto out;
	}
	spec = json_object_get(crd, "spec");
	group = json_string_value(json_object_get(spec, "group"));
	kind = json_string_value(
		json_object_get(json_object_get(spec, "names"), "kind"));
	versions = json_object_get(spec, "versions");
	if (!group || !*group) {
		error = crd_fail(&c, ERR_INVALID,
				 "spec.group must be a non-empty string");
		goto out;
	}
	if (!kind || !*kind) {
		error = crd_fail(&c, ERR_INVALID,
				 "spec.names.kind must be a non-empty string");
		goto out;
	}
	if (!json_is_array(versions) || !json_array_size(versions)) {
		error = crd_fail(&c, ERR_INVALID,
				 "spec.versions must be a non-empty list");
		goto out;
	}

	/* The storage version, else the first served one, else the first. */
	json_array_foreach (versions, i, v)
		if (json_is_true(json_object_get(v, "storage"))) {
			chosen = i;
			break;
		}
	json_array_foreach (versions, i, v)
		if (chosen == SIZE_MAX &&
		    json_is_true(json_object_get(v, "served")))
			chosen = i;
	if (chosen == SIZE_MAX)
		chosen = 0;

	if (!(e = pool_zalloc(&pool, sizeof(*e))) ||
	    !(e->group = pool_strndup(&pool, group, strlen(group))) ||
	    !(e->kind = pool_strndup(&pool, kind, strlen(kind)))) {
		error = crd_nomem(&c);
		goto out;
	}
	/*
	 * The nodes point into the versions (their defaults): the entry's
	 * pool holds a reference, no copy (a pass registers every CRD it
	 * reads, kube-prometheus's are megabytes; nothing changes a
	 * registered CRD's versions).
	 */
	if (pool_keep(&pool, json_incref((json_t *)versions)) < 0) {
		error = crd_nomem(&c);
		goto out;
	}
	/* Every version must be usable; the chosen one is kept. */
	json_array_foreach (versions, i, v) {
		const struct diff_schema *root = NULL;

		if ((error = crd_version(&c, v, i, &root)) < 0)
			goto out;
		if (i == chosen)
			e->root = root;
	}

	i = crd_find(reg, e->group, e->kind, &found);
	if (found) {
		crd_entry_free(reg->crds[i]);
	} else {
		if (reg->ncrds == reg->crds_alloc) {
			size_t n = reg->crds_alloc ? 2 * reg->crds_alloc : 16;
			struct crd_entry **a =
				realloc(reg->crds, n * sizeof(*a));

			if (!a) {
				error = crd_nomem(&c);
				goto out;
			}
			reg->crds = a;
			reg->crds_alloc = n;
		}
		memmove(&reg->crds[i + 1], &reg->crds[i],
			(reg->ncrds - i) * sizeof(*reg->crds));
		reg->ncrds++;
	}
	e->pool = pool;
	reg->crds[i] = e;
	memset(&pool, 0, sizeof(pool));
out:
	pool_release(&pool);
	buf_release(&c.path);
	return error;
}

/* --- the field set of an applied object --- */

struct walk {
	struct diff_fieldset *set;
	struct diff_pe *pe;   /* the current path, MAX_PATH_DEPTH long */
	size_t depth;
	struct err *err;
	/*
	 * Match mode (set NULL, fv[0] a fieldsV1 object): each member is
	 * looked up in the fieldsV1 text instead of inserted. fv[i] is
	 * the fieldsV1 node of pe[0..i), valid for i <= resolved; a
	 * member is resolved only when inserted (a path may hold none).
	 * `matched` counts the members found, `last` the last one (a
	 * path is inserted twice only right after itself).
	 */
	const json_t **fv;
	size_t resolved, matched;
	const json_t *last;
	struct buf key;
};

/* Match mode: the walk's object has a member the fieldsV1 has not. */
#define WALK_DIFFERS (-1000)

static int walk_fail(struct walk *w, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Report "<path>: <message>", the path in the API server's syntax. */
static int walk_fail(struct walk *w, int code, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	struct diff_path p = {w->pe, w->depth};
	va_list ap;

	if (w->depth) {
		diff_path_format(&p, &msg);
		buf_adds(&msg, ": ");
	}
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	err_set(w->err, code, "%s", buf_cstr(&msg));
	buf_release(&msg);
	return code;
}

static int walk_push(struct walk *w, enum diff_pe_type type, const char *text)
{
	if (w->depth == MAX_PATH_DEPTH)
		return walk_fail(w, ERR_LIMIT, "object nested too deeply");
	if (w->resolved > w->depth)
		w->resolved = w->depth;
	w->pe[w->depth].type = type;
	w->pe[w->depth].text = text;
	w->depth++;
	return 0;
}

/*
 * True when a fieldsV1 node is a member: {}, or "." first ({".":{},...}),
 * as the server writes it (fields_members() refuses "." anywhere else).
 */
static bool fields_member(const json_t *node)
{
	void *it;

	return !json_object_size(node) ||
	       ((it = json_object_iter((json_t *)node)) &&
		!strcmp(json_object_iter_key(it), "."));
}

/* Match mode's insert: the member's node in the fieldsV1, counted once. */
static int walk_match(struct walk *w)
{
	static const char prefix[][3] = {"f:", "k:", "v:", "i:"};
	const json_t *node;

	if (!w->depth)
		return WALK_DIFFERS; /* the root is never one of ours */
	if (w->resolved > w->depth)
		w->resolved = w->depth;
	for (size_t i = w->resolved; i < w->depth; i++) {
		buf_truncate(&w->key, 0);
		if (buf_add(&w->key, prefix[w->pe[i].type], 2) < 0 ||
		    buf_adds(&w->key, w->pe[i].text) < 0)
			return walk_fail(w, ERR_NOMEM, "out of memory");
		node = json_object_getn(w->fv[i], w->key.ptr, w->key.len);
		if (!json_is_object(node))
			return WALK_DIFFERS;
		w->fv[i + 1] = node;
		w->resolved = i + 1;
	}
	node = w->fv[w->depth];
	if (!fields_member(node))
		return WALK_DIFFERS;
	if (node != w->last) {
		w->last = node;
		w->matched++;
	}
	return 0;
}

static int walk_insert(struct walk *w)
{
	struct diff_path p = {w->pe, w->depth};
	int error;

	if (!w->set)
		return walk_match(w);
	error = diff_fieldset_insert(w->set, &p);

	if (error < 0)
		return walk_fail(w, error, "cannot add to the field set");
	return 0;
}

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The least text (by strcmp) that appears twice among texts[0..n), or
 * NULL. A few texts are compared pairwise, more are sorted.
 */
static const char *find_duplicate(const char **texts, size_t n, int *error)
{
	const char **sorted;
	const char *dup = NULL;

	*error = 0;
	if (n < 2)
		return NULL;
	if (n <= 16) {
		for (size_t i = 0; i < n; i++)
			for (size_t j = i + 1; j < n; j++)
				if (!strcmp(texts[i], texts[j]) &&
				    (!dup || strcmp(texts[i], dup) < 0))
					dup = texts[i];
		return dup;
	}
	if (!(sorted = malloc(n * sizeof(*sorted)))) {
		*error = ERR_NOMEM;
		return NULL;
	}
	memcpy(sorted, texts, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), str_ptr_cmp);
	for (size_t i = 1; i < n && !dup; i++)
		if (!strcmp(sorted[i - 1], sorted[i]))
			dup = sorted[i];
	free(sorted);
	return dup;
}

/* True when Go's encoding/json writes `s` between its quotes as it is. */
static bool plain_json_string(const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\' ||
		    ch == '<' || ch == '>' || ch == '&')
			return false;
	}
	return true;
}

/* Append `,"name":` (no comma for the first member) in one go. */
static int add_member_name(struct buf *out, bool comma, const char *name)
{
	size_t n = strlen(name);
	char *p;
	int error;

	if ((error = buf_grow(out, n + 4)) < 0)
		return error;
	p = out->ptr + out->len;
	if (comma)
		*p++ = ',';
	*p++ = '"';
	memcpy(p, name, n);
	p += n;
	*p++ = '"';
	*p++ = ':';
	out->len = (size_t)(p - out->ptr);
	*p = '\0';
	return 0;
}

/* Key fields written directly (more go through a json_t). */
#define DIRECT_KEYS 8

/*
 * Append the k: text of a map-list item to `out`: its key fields, defaults
 * filled in, as compact JSON sorted by name. It is byte for byte what
 * diff_json_dump() prints for an object of those fields (field sets hold
 * that text), written directly when the names need no escaping and the
 * values are scalars (the usual case: no json_t is built), else through
 * such an object. Returns 1 (and appends nothing) when the item is not an
 * object or lacks a key without a default, ERR_NOMEM.
 */
int diff_schema_item_key(struct buf *out, const json_t *item,
			 const struct diff_schema *list)
{
	const char *const *names;
	const json_t *const *defaults;
	size_t n = diff_schema_keys(list, &names, &defaults), start = out->len;
	const json_t *vals[DIRECT_KEYS], *v;
	json_t *key = NULL;
	bool direct = n <= DIRECT_KEYS;
	int error = 0;

	if (!json_is_object(item))
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (!(v = json_object_get(item, names[i])))
			v = defaults[i];
		if (!v)
			return 1;
		if (json_is_object(v) || json_is_array(v) ||
		    !plain_json_string(names[i]))
			direct = false;
		if (i < DIRECT_KEYS)
			vals[i] = v;
	}
	if (direct) {
		/* Names come sorted and unique: the order dump would give. */
		error = buf_addch(out, '{');
		for (size_t i = 0; i < n && !error; i++)
			if (!(error = add_member_name(out, i, names[i])))
				error = diff_json_dump(vals[i], 0, out);
		if (!error)
			error = buf_addch(out, '}');
		goto out;
	}
	if (!(key = json_object()))
		return ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!(v = json_object_get(item, names[i])))
			v = defaults[i];
		json_object_set(key, names[i], (json_t *)v);
	}
	error = diff_json_dump(key, 0, out);
out:
	json_decref(key);
	if (error < 0) {
		buf_truncate(out, start);
		return error == ERR_NOMEM ? ERR_NOMEM : 1;
	}
	return 0;
}

/*
 * Append the canonical k: text of item `i` of a map-list under `s` to
 * `out`: what diff_json_dump() prints for an object of its key fields.
 * Written directly when the names need no escaping and the values are
 * scalars (no json_t is built), else through such an object.
 */
static int walk_key_text(struct walk *w, const struct diff_schema *s,
			 const json_t *item, size_t i, struct buf *out)
{
	int error;

	if (json_is_null(item))
		return walk_fail(w, ERR_INVALID,
				 "element %zu: associative list with keys may "
				 "not have a null element",
				 i);
	if (!json_is_object(item))
		return walk_fail(w, ERR_INVALID,
				 "element %zu: associative list with keys may "
				 "not have non-map elements",
				 i);
	for (size_t k = 0; k < s->nkeys; k++)
		if (!json_object_get(item, s->keys[k]) && !s->defaults[k])
			return walk_fail(w, ERR_INVALID,
					 "element %zu: associative list with "
					 "keys has an element that omits key "
					 "field \"%s\" (and doesn't have "
					 "default value)",
					 i, s->keys[k]);
	if ((error = diff_schema_item_key(out, item, s)) == ERR_NOMEM)
		return walk_fail(w, error, "out of memory");
	if (error)
		return walk_fail(w, ERR_INVALID,
				 "element %zu: key cannot be encoded", i);
	return 0;
}

/* Append the canonical v: text of element `i` of a set to `out`. */
static int walk_value_text(struct walk *w, const json_t *e, size_t i,
			   struct buf *out)
{
	int error;

	if (json_is_object(e))
		return walk_fail(w, ERR_INVALID,
				 "element %zu: associative list without keys "
				 "has an element that's a map type",
				 i);
	if (json_is_array(e))
		return walk_fail(w, ERR_INVALID,
				 "element %zu: not supported: associative list "
				 "with lists as elements",
				 i);
	if (json_is_null(e))
		return walk_fail(w, ERR_INVALID,
				 "element %zu: associative list without keys "
				 "has an element that's an explicit null",
				 i);
	if ((error = diff_json_dump(e, 0, out)) == ERR_NOMEM)
		return walk_fail(w, error, "out of memory");
	if (error < 0)
		return walk_fail(w, ERR_INVALID,
				 "element %zu: value cannot be encoded", i);
	return 0;
}

static int walk_node(struct walk *w, const struct diff_schema *s,
		     const json_t *v);

/*
 * The items of a set or map-list: each one a member by its value or key
 * (SMD owns every listed item, with "." when it has fields of its own);
 * a key or value listed twice is an error, as the API server rejects it.
 * The texts go into one buffer, NUL-separated; it is not touched while
 * they are on the path.
 */
static int walk_items(struct walk *w, const struct diff_schema *s,
		      const json_t *list, bool set)
{
	size_t n = json_array_size(list), i;
	const char *inline_texts[16], **texts = inline_texts, *dup;
	size_t inline_off[16], *off = inline_off;
	struct buf buf = BUF_INIT;
	json_t *e;
	int error = 0;

	if (n > sizeof(inline_off) / sizeof(inline_off[0]) &&
	    (!(texts = malloc(n * sizeof(*texts))) ||
	     !(off = malloc(n * sizeof(*off))))) {
		error = walk_fail(w, ERR_NOMEM, "out of memory");
		goto out;
	}
	json_array_foreach (list, i, e) {
		off[i] = buf.len;
		error = set ? walk_value_text(w, e, i, &buf)
			    : walk_key_text(w, s, e, i, &buf);
		if (error < 0)
			goto out;
		if ((error = buf_add(&buf, "", 1)) < 0) {
			error = walk_fail(w, error, "out of memory");
			goto out;
		}
	}
	for (i = 0; i < n; i++)
		texts[i] = buf.ptr + off[i];
	if ((dup = find_duplicate(texts, n, &error))) {
		struct diff_pe pe = {set ? DIFF_PE_VALUE : DIFF_PE_KEY, dup};
		struct diff_path p = {&pe, 1};
		struct buf key = BUF_INIT;

		diff_path_format(&p, &key);
		error = walk_fail(w, ERR_INVALID,
				  "duplicate entries for key %s",
				  buf_cstr(&key));
		buf_release(&key);
	}
	if (error < 0) {
		if (error == ERR_NOMEM)
			walk_fail(w, error, "out of memory");
		goto out;
	}
	json_array_foreach (list, i, e) {
		if ((error = walk_push(w, set ? DIFF_PE_VALUE : DIFF_PE_KEY,
				       texts[i])) < 0)
			goto out;
		if (!set)
			error = walk_node(w, diff_schema_items(s), e);
		if (error >= 0)
			error = walk_insert(w);
		w->depth--;
		if (error < 0)
			goto out;
	}
out:
	if (texts != inline_texts)
		free(texts);
	if (off != inline_off)
		free(off);
	buf_release(&buf);
	return error;
}

/*
 * The fields of a granular object. A key that is not a declared field of
 * a map-ish node is a map entry, which SMD owns on its own as well (so an
 * entry with fields gets "."); `skip` names keys never tracked.
 */
static int walk_object(struct walk *w, const struct diff_schema *s,
		       const json_t *obj, const char *const *skip)
{
	bool entries = s->values || s->kind == N_DEDUCED;
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)obj, k, v) {
		const struct diff_schema *child;
		bool skipped = false;
		int error;

		for (size_t i = 0; skip && skip[i]; i++)
			skipped |= !strcmp(k, skip[i]);
		if (skipped)
			continue;
		child = diff_schema_field(s, k);
		if ((error = walk_push(w, DIFF_PE_FIELD, k)) < 0)
			return error;
		if (w->depth == 1 && !strcmp(k, "metadata") &&
		    json_is_object(v) &&
		    diff_schema_type_of(child, v) == DIFF_SCHEMA_GRANULAR) {
			static const char *const server_owned[] = {
				"creationTimestamp",
				"deletionGracePeriodSeconds",
				"deletionTimestamp",
				"generation",
				"managedFields",
				"name",
				"namespace",
				"resourceVersion",
				"selfLink",
				"uid",
				NULL,
			};

			error = walk_object(w, child, v, server_owned);
		} else {
			error = walk_node(w, child, v);
		}
		/*
		 * A map entry is a member of its own; walk_node() has added
		 * it already when it is a string, number or boolean. As SMD
		 * does (and kube-apiserver records), a null or an empty
		 * object is owned as a leaf too, whatever its type: applying
		 * `emptyDir: {}` or `securityContext: null` owns the field.
		 */
		if (error >= 0 &&
		    ((entries && !find_field(s, k) &&
		      (json_is_object(v) || json_is_array(v))) ||
		     json_is_null(v) ||
		     (json_is_object(v) && !json_object_size(v))))
			error = walk_insert(w);
		w->depth--;
		if (error < 0)
			return error;
	}
	return 0;
}

static int walk_node(struct walk *w, const struct diff_schema *s,
		     const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (diff_schema_type_of(s, v) != DIFF_SCHEMA_GRANULAR)
			return walk_insert(w);
		return walk_object(w, s, v, NULL);
	case JSON_ARRAY:
		switch (diff_schema_type_of(s, v)) {
		case DIFF_SCHEMA_SET:
			return walk_items(w, s, v, true);
		case DIFF_SCHEMA_MAP_LIST:
			return walk_items(w, s, v, false);
		default:
			return walk_insert(w);
		}
	case JSON_NULL:
		/* A null field is owned by walk_object(); a null list item
		 * or root owns nothing under it. */
		return 0;
	default:
		return walk_insert(w);
	}
}

/* The walk of a whole object: its type meta and status are not fields. */
static int walk_root(struct walk *w, const struct diff_schema *schema,
		     const json_t *obj)
{
	static const char *const type_meta[] = {"apiVersion", "kind",
						"status", NULL};

	if (!schema)
		schema = &default_node;
	if (diff_schema_type_of(schema, obj) == DIFF_SCHEMA_GRANULAR)
		return walk_object(w, schema, obj, type_meta);
	return walk_node(w, schema, obj);
}

int diff_fieldset_of_object(struct diff_fieldset **out, const json_t *obj,
			    const struct diff_schema *schema, struct err *err)
{
	struct diff_pe path[MAX_PATH_DEPTH];
	struct walk w = {.pe = path, .err = err, .key = BUF_INIT};
	int error = 0;

	*out = NULL;
	if (!json_is_object(obj))
		return err_set(err, ERR_INVALID, "not an object");
	w.set = diff_fieldset_new();
	if (!w.set) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	error = walk_root(&w, schema, obj);
	if (error >= 0) {
		*out = w.set;
		w.set = NULL;
	}
out:
	diff_fieldset_free(w.set);
	return error < 0 ? error : 0;
}

/*
 * The members of a fieldsV1 node below it, when it is written as the
 * server writes it: every key but "." an element (f:, k:, v:, i:) with an
 * object value, "." only as {} in a node with other keys, every leaf {}.
 * -1 for anything else (the caller then parses it).
 */
static long fields_members(const json_t *node, size_t depth)
{
	long n = 0, below;
	bool first = true;

	if (depth > MAX_PATH_DEPTH)
		return -1;
	/* Not json_object_foreach(): it looks each key up again. */
	for (void *it = json_object_iter((json_t *)node); it;
	     it = json_object_iter_next((json_t *)node, it), first = false) {
		const char *k = json_object_iter_key(it);
		const json_t *v = json_object_iter_value(it);

		if (!strcmp(k, ".")) {
			if (!first || !json_is_object(v) ||
			    json_object_size(v) || json_object_size(node) < 2)
				return -1;
			continue;
		}
		if ((k[0] != 'f' && k[0] != 'k' && k[0] != 'v' &&
		     k[0] != 'i') || k[1] != ':' || !json_is_object(v) ||
		    (below = fields_members(v, depth + 1)) < 0)
			return -1;
		n += below + fields_member(v);
	}
	return n;
}

int diff_fieldset_of_object_is(const json_t *obj,
			       const struct diff_schema *schema,
			       const json_t *fields_v1, struct err *err)
{
	struct diff_pe path[MAX_PATH_DEPTH];
	const json_t *fv[MAX_PATH_DEPTH + 1];
	struct walk w = {.pe = path, .err = err, .fv = fv, .key = BUF_INIT};
	long members;
	int error;

	if (!json_is_object(obj))
		return err_set(err, ERR_INVALID, "not an object");
	if (!json_is_object(fields_v1) ||
	    json_object_get(fields_v1, ".") ||
	    (members = fields_members(fields_v1, 0)) < 0)
		return 0;
	fv[0] = fields_v1;
	error = walk_root(&w, schema, obj);
	buf_release(&w.key);
	if (error == WALK_DIFFERS)
		return 0;
	if (error < 0)
		return error;
	return w.matched == (size_t)members;
}

const json_t *diff_schema_openapi(const struct diff_schema *s)
{
	return s ? s->openapi : NULL;
}
