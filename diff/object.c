/*
 * Object identities and object sets.
 */
#include "diff/diff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/fnv.h"
#include "util/banned.h" /* last */

void diff_api_version_split(const char *api_version, size_t *group_len,
			    const char **version)
{
	const char *slash = strchr(api_version, '/');

	if (slash) {
		*group_len = (size_t)(slash - api_version);
		*version = slash + 1;
	} else {
		*group_len = 0;
		*version = api_version;
	}
}

/*
 * The key's strings live in one allocation, "group\0kind\0ns\0name\0", which
 * doubles as the hash key (mem_ with mem_len_ bytes).
 */
static int key_fill(struct diff_key *key, const char *group, size_t group_len,
		    const char *kind, const char *ns, const char *name,
		    const char *name_suffix)
{
	size_t kl = strlen(kind), nl = strlen(ns), ml = strlen(name);
	size_t sl = strlen(name_suffix);
	size_t total = group_len + kl + nl + ml + sl + 4;
	char *p = malloc(total);

	if (!p)
		return ERR_NOMEM;
	key->mem_ = p;
	key->mem_len_ = total;
	key->group = p;
	memcpy(p, group, group_len);
	p += group_len;
	*p++ = '\0';
	key->kind = p;
	memcpy(p, kind, kl + 1);
	p += kl + 1;
	key->ns = p;
	memcpy(p, ns, nl + 1);
	p += nl + 1;
	key->name = p;
	memcpy(p, name, ml);
	memcpy(p + ml, name_suffix, sl + 1);
	return 0;
}

static const char *get_str(const json_t *obj, const char *field)
{
	return json_string_value(json_object_get(obj, field));
}

int diff_key_from_object(struct diff_key *key, const json_t *obj,
			 struct err *err)
{
	const json_t *meta, *v;
	const char *api_version, *kind, *ns = "", *name, *suffix = "";
	const char *version;
	size_t group_len;

	memset(key, 0, sizeof(*key));
	if (!json_is_object(obj))
		return err_set(err, ERR_INVALID, "document is %s, not an object",
			       json_is_array(obj) ? "a list" : "a scalar");

	v = json_object_get(obj, "apiVersion");
	if (!v)
		return err_set(err, ERR_INVALID, "missing apiVersion");
	if (!(api_version = json_string_value(v)) || !*api_version)
		return err_set(err, ERR_INVALID,
			       "apiVersion must be a non-empty string");
	v = json_object_get(obj, "kind");
	if (!v)
		return err_set(err, ERR_INVALID, "missing kind");
	if (!(kind = json_string_value(v)) || !*kind)
		return err_set(err, ERR_INVALID, "kind must be a non-empty string");

	meta = json_object_get(obj, "metadata");
	if (!meta)
		return err_set(err, ERR_INVALID, "%s: missing metadata", kind);
	if (!json_is_object(meta))
		return err_set(err, ERR_INVALID, "%s: metadata must be an object",
			       kind);
	v = json_object_get(meta, "namespace");
	if (v && !json_is_null(v) && !(ns = json_string_value(v)))
		return err_set(err, ERR_INVALID,
			       "%s: metadata.namespace must be a string", kind);
	v = json_object_get(meta, "name");
	if (v && !json_is_null(v) && !json_is_string(v))
		return err_set(err, ERR_INVALID,
			       "%s: metadata.name must be a string", kind);
	name = json_string_value(v);
	if (!name || !*name) {
		name = get_str(meta, "generateName");
		if (!name || !*name)
			return err_set(err, ERR_INVALID,
				       "%s: missing metadata.name", kind);
		suffix = "*";
	}

	diff_api_version_split(api_version, &group_len, &version);
	if (!*version || strchr(version, '/'))
		return err_set(err, ERR_INVALID,
			       "%s %s: malformed apiVersion \"%s\"", kind, name,
			       api_version);
	if (key_fill(key, api_version, group_len, kind, ns, name, suffix) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	return 0;
}

int diff_key_init(struct diff_key *key, const char *group, const char *kind,
		  const char *ns, const char *name)
{
	memset(key, 0, sizeof(*key));
	return key_fill(key, group, strlen(group), kind, ns ? ns : "", name,
			"");
}

void diff_key_release(struct diff_key *key)
{
	if (!key)
		return;
	free(key->mem_);
	memset(key, 0, sizeof(*key));
}

bool diff_key_equal(const struct diff_key *a, const struct diff_key *b)
{
	return a->mem_len_ == b->mem_len_ &&
	       !memcmp(a->mem_, b->mem_, a->mem_len_);
}

int diff_key_cmp(const struct diff_key *a, const struct diff_key *b)
{
	int c;

	if ((c = strcmp(a->group, b->group)))
		return c;
	if ((c = strcmp(a->kind, b->kind)))
		return c;
	if ((c = strcmp(a->ns, b->ns)))
		return c;
	return strcmp(a->name, b->name);
}

int diff_key_format(const struct diff_key *key, struct buf *out)
{
	return buf_addf(out, "%s%s%s %s%s%s", key->kind, *key->group ? "." : "",
			key->group, key->ns, *key->ns ? "/" : "", key->name);
}

static bool key_is_generated(const struct diff_key *key)
{
	size_t n = strlen(key->name);

	return n && key->name[n - 1] == '*';
}

int diff_object_new(struct diff_object **out, json_t *json,
		    const char *origin, struct err *err)
{
	struct diff_object *obj;
	struct err why = ERR_INIT;
	int error;

	*out = NULL;
	if (!(obj = calloc(1, sizeof(*obj))))
		return err_set(err, ERR_NOMEM, "out of memory");
	if ((error = diff_key_from_object(&obj->key, json, &why)) < 0) {
		err_set(err, error, "%s%s%s", origin ? origin : "",
			origin ? ": " : "", err_first(&why));
		err_release(&why);
		free(obj);
		return error;
	}
	if (origin && !(obj->origin = strdup(origin))) {
		diff_object_free(obj);
		return err_set(err, ERR_NOMEM, "out of memory");
	}
	obj->json = json_incref(json);
	*out = obj;
	return 0;
}

int diff_object_new_settled(struct diff_object **out, const char *group,
			    const char *kind, const char *ns, const char *name,
			    const char *uid, size_t ignored)
{
	struct diff_object *obj;

	if (!(*out = obj = calloc(1, sizeof(*obj))))
		return ERR_NOMEM;
	if (diff_key_init(&obj->key, group, kind, ns, name) < 0 ||
	    !(obj->uid = strdup(uid))) {
		diff_object_free(obj);
		*out = NULL;
		return ERR_NOMEM;
	}
	obj->settled = true;
	obj->settled_ignored = ignored;
	return 0;
}

void diff_object_free(struct diff_object *obj)
{
	if (!obj)
		return;
	json_decref(obj->json);
	diff_key_release(&obj->key);
	free(obj->origin);
	free(obj->uid);
	free(obj);
}

const char *diff_object_uid(const struct diff_object *obj)
{
	if (obj->settled)
		return obj->uid;
	return json_string_value(
		json_object_get(json_object_get(obj->json, "metadata"), "uid"));
}

static uint64_t key_hash(const struct diff_key *key)
{
	return fnv1a(FNV1A_BASIS, key->mem_, key->mem_len_);
}

#define SLOT_EMPTY ((size_t)-1)

/* Slot index of `key`, or of the empty slot where it would go. */
static size_t set_find(const struct diff_objset *set,
		       const struct diff_key *key)
{
	size_t mask = set->nslots_ - 1;
	size_t i = (size_t)key_hash(key) & mask;

	while (set->slots_[i] != SLOT_EMPTY &&
	       !diff_key_equal(&set->items[set->slots_[i]]->key, key))
		i = (i + 1) & mask;
	return i;
}

static int set_reindex(struct diff_objset *set, size_t nslots)
{
	size_t *slots = malloc(nslots * sizeof(*slots));

	if (!slots)
		return ERR_NOMEM;
	for (size_t i = 0; i < nslots; i++)
		slots[i] = SLOT_EMPTY;
	free(set->slots_);
	set->slots_ = slots;
	set->nslots_ = nslots;
	for (size_t i = 0; i < set->len; i++) {
		if (key_is_generated(&set->items[i]->key))
			continue;
		set->slots_[set_find(set, &set->items[i]->key)] = i;
	}
	return 0;
}

int diff_objset_add(struct diff_objset *set, struct diff_object *obj,
		    struct err *err)
{
	bool generated = key_is_generated(&obj->key);
	size_t slot = 0;

	/* Keep the load factor under 1/2. */
	if ((set->len + 1) * 2 > set->nslots_ &&
	    set_reindex(set, set->nslots_ ? set->nslots_ * 2 : 64) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	if (!generated) {
		slot = set_find(set, &obj->key);
		if (set->slots_[slot] != SLOT_EMPTY) {
			const struct diff_object *old =
				set->items[set->slots_[slot]];
			struct buf id = BUF_INIT;

			diff_key_format(&obj->key, &id);
			err_set(err, ERR_EXISTS,
				"%s: duplicate object %s (also defined at %s)",
				obj->origin ? obj->origin : "(input)",
				buf_cstr(&id),
				old->origin ? old->origin : "(input)");
			buf_release(&id);
			return ERR_EXISTS;
		}
	}
	if (set->len == set->alloc) {
		size_t alloc = set->alloc ? set->alloc * 2 : 64;
		struct diff_object **items =
			realloc(set->items, alloc * sizeof(*items));

		if (!items)
			return err_set(err, ERR_NOMEM, "out of memory");
		set->items = items;
		set->alloc = alloc;
	}
	if (!generated)
		set->slots_[slot] = set->len;
	set->items[set->len++] = obj;
	return 0;
}

struct diff_object *diff_objset_get(const struct diff_objset *set,
				    const struct diff_key *key)
{
	size_t slot;

	if (!set->nslots_)
		return NULL;
	slot = set_find(set, key);
	return set->slots_[slot] == SLOT_EMPTY ? NULL
					       : set->items[set->slots_[slot]];
}

/* The index again after the items moved (same size: cannot fail). */
static void refill_slots(struct diff_objset *set)
{
	for (size_t i = 0; i < set->nslots_; i++)
		set->slots_[i] = SLOT_EMPTY;
	for (size_t i = 0; i < set->len; i++)
		if (!key_is_generated(&set->items[i]->key))
			set->slots_[set_find(set, &set->items[i]->key)] = i;
}

bool diff_objset_index(const struct diff_objset *set,
		       const struct diff_key *key, size_t *index)
{
	size_t slot;

	if (!set->nslots_)
		return false;
	slot = set_find(set, key);
	if (set->slots_[slot] == SLOT_EMPTY)
		return false;
	*index = set->slots_[slot];
	return true;
}

void diff_objset_truncate(struct diff_objset *set, size_t len)
{
	if (len >= set->len)
		return;
	for (size_t i = len; i < set->len; i++)
		diff_object_free(set->items[i]);
	set->len = len;
	refill_slots(set);
}

static int cmp_objects(const void *a, const void *b)
{
	const struct diff_object *x = *(struct diff_object *const *)a;
	const struct diff_object *y = *(struct diff_object *const *)b;

	return diff_key_cmp(&x->key, &y->key);
}

void diff_objset_sort(struct diff_objset *set)
{
	if (set->len < 2)
		return;
	qsort(set->items, set->len, sizeof(*set->items), cmp_objects);
	refill_slots(set);
}

void diff_objset_release(struct diff_objset *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->len; i++)
		diff_object_free(set->items[i]);
	free(set->items);
	free(set->slots_);
	memset(set, 0, sizeof(*set));
}

/* Built-in cluster-scoped kinds of kube-apiserver 1.32, by group. */
static const struct {
	const char *group;
	const char *kind;
} cluster_kinds[] = {
	{"", "Namespace"},
	{"", "Node"},
	{"", "PersistentVolume"},
	{"", "ComponentStatus"},
	{"admissionregistration.k8s.io", "MutatingWebhookConfiguration"},
	{"admissionregistration.k8s.io", "ValidatingWebhookConfiguration"},
	{"admissionregistration.k8s.io", "ValidatingAdmissionPolicy"},
	{"admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"},
	{"apiextensions.k8s.io", "CustomResourceDefinition"},
	{"apiregistration.k8s.io", "APIService"},
	{"certificates.k8s.io", "CertificateSigningRequest"},
	{"flowcontrol.apiserver.k8s.io", "FlowSchema"},
	{"flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"},
	{"networking.k8s.io", "IngressClass"},
	{"networking.k8s.io", "IPAddress"},
	{"networking.k8s.io", "ServiceCIDR"},
	{"node.k8s.io", "RuntimeClass"},
	{"rbac.authorization.k8s.io", "ClusterRole"},
	{"rbac.authorization.k8s.io", "ClusterRoleBinding"},
	{"scheduling.k8s.io", "PriorityClass"},
	{"storage.k8s.io", "CSIDriver"},
	{"storage.k8s.io", "CSINode"},
	{"storage.k8s.io", "StorageClass"},
	{"storage.k8s.io", "VolumeAttachment"},
};

bool diff_kind_cluster_scoped(const char *group, const char *kind)
{
	for (size_t i = 0; i < sizeof(cluster_kinds) / sizeof(*cluster_kinds);
	     i++)
		if (!strcmp(cluster_kinds[i].group, group) &&
		    !strcmp(cluster_kinds[i].kind, kind))
			return true;
	return false;
}

/* Is group/kind declared cluster-scoped by one of the CRDs? */
static bool crd_cluster_scoped(json_t *const *crds, size_t n,
			       const char *group, const char *kind)
{
	for (size_t i = 0; i < n; i++) {
		const json_t *spec = json_object_get(crds[i], "spec");
		const char *g = get_str(spec, "group");
		const char *k = get_str(json_object_get(spec, "names"), "kind");
		const char *scope = get_str(spec, "scope");

		if (g && k && scope && !strcmp(g, group) && !strcmp(k, kind))
			return !strcmp(scope, "Cluster");
	}
	return false;
}

int diff_objset_default_namespace(struct diff_objset *set, const char *ns,
				  const struct diff_objset *crds,
				  struct err *err)
{
	struct diff_objset out = DIFF_OBJSET_INIT;
	json_t **crd = NULL;
	size_t ncrd = 0;
	int error = 0;

	/* Take the CRDs first: `crds` may be `set` itself. */
	if (crds && crds->len && !(crd = calloc(crds->len, sizeof(*crd))))
		return err_set(err, ERR_NOMEM, "out of memory");
	for (size_t i = 0; crds && i < crds->len; i++)
		if (!strcmp(crds->items[i]->key.group, "apiextensions.k8s.io") &&
		    !strcmp(crds->items[i]->key.kind, "CustomResourceDefinition"))
			crd[ncrd++] = json_incref(crds->items[i]->json);

	for (size_t i = 0; i < set->len; i++) {
		struct diff_object *o = set->items[i];
		json_t *meta;

		set->items[i] = NULL;
		if (!*o->key.ns &&
		    !diff_kind_cluster_scoped(o->key.group, o->key.kind) &&
		    !crd_cluster_scoped(crd, ncrd, o->key.group, o->key.kind) &&
		    (meta = json_object_get(o->json, "metadata"))) {
			struct diff_key key;

			/* The object may be shared: give it its own copy. */
			json_t *copy = json_deep_copy(o->json);

			if (!copy) {
				error = err_set(err, ERR_NOMEM, "out of memory");
				diff_object_free(o);
				continue;
			}
			json_object_set_new(json_object_get(copy, "metadata"),
					    "namespace", json_string(ns));
			if (diff_key_from_object(&key, copy, NULL) < 0) {
				json_decref(copy);
				error = err_set(err, ERR_NOMEM, "out of memory");
				diff_object_free(o);
				continue;
			}
			json_decref(o->json);
			o->json = copy;
			diff_key_release(&o->key);
			o->key = key;
		}
		if (diff_objset_add(&out, o, err) < 0) {
			diff_object_free(o);
			error = error ? error : ERR_EXISTS;
		}
	}
	set->len = 0;
	diff_objset_release(set);
	*set = out;
	for (size_t i = 0; i < ncrd; i++)
		json_decref(crd[i]);
	free(crd);
	return error;
}

bool diff_dns_label(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n > max || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') &&
		    !(s[i] >= '0' && s[i] <= '9') && s[i] != '-')
			return false;
	return true;
}
