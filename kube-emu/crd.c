/*
 * CustomResourceDefinitions: their validation, the status kube's naming
 * and establishing controllers give them, and the registry of the
 * resources they serve.
 *
 * The registry is global (one per process, as the resource table) under
 * its own lock. Its entries are never freed: request handlers, watches
 * and stored entries keep `const struct emu_resource *` pointers, so a
 * deleted CRD only marks its entries gone, and a CRD created again with
 * the same group, version and plural takes its old entry back. Strings
 * are interned for the same reason: a pointer handed out stays valid.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diff/diff.h"
#include "kube-emu/emu.h"

#include "util/banned.h" /* last */

struct crd_res {
	struct emu_resource res; /* first: handed out as emu_resource */
	const char *crd;	 /* metadata.name of the serving CRD */
	const char *list_kind;
	json_t *categories; /* array of strings, owned */
	json_t *schema;	    /* openAPIV3Schema, owned, or NULL */
	struct emu_crd_scale scale; /* interned paths; NULL: no /scale */
	bool gone;
};

static pthread_rwlock_t crd_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct crd_res **regs;
static size_t nregs, regs_alloc;
static char **interned;
static size_t ninterned, interned_alloc;

/* A copy of `s` that lives as long as the process. Lock held. */
static const char *intern(const char *s)
{
	char **n, *c;
	size_t i;

	if (!s)
		return NULL;
	for (i = 0; i < ninterned; i++)
		if (!strcmp(interned[i], s))
			return interned[i];
	if (ninterned == interned_alloc) {
		size_t alloc = interned_alloc ? interned_alloc * 2 : 32;

		n = realloc(interned, alloc * sizeof(*n));
		if (!n)
			return NULL;
		interned = n;
		interned_alloc = alloc;
	}
	c = strdup(s);
	if (!c)
		return NULL;
	interned[ninterned++] = c;
	return c;
}

static const char *str_at(const json_t *obj, const char *a, const char *b)
{
	const json_t *v = json_object_get(obj, a);

	if (b)
		v = json_object_get(v, b);
	return json_string_value(v);
}

/* Is obj[key] the string `want`? */
static bool str_is(const json_t *obj, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(obj, key));

	return v && !strcmp(v, want);
}

static const json_t *spec_names(const json_t *crd)
{
	return json_object_get(json_object_get(crd, "spec"), "names");
}

const struct emu_resource *emu_crd_find(const char *group, const char *version,
					const char *name)
{
	const struct emu_resource *found = NULL;
	size_t i;

	pthread_rwlock_rdlock(&crd_lock);
	for (i = 0; i < nregs; i++) {
		const struct crd_res *c = regs[i];

		if (!c->gone && !strcmp(c->res.name, name) &&
		    !strcmp(c->res.version, version) &&
		    !strcmp(c->res.group, group)) {
			found = &c->res;
			break;
		}
	}
	pthread_rwlock_unlock(&crd_lock);
	return found;
}

bool emu_resource_is_custom(const struct emu_resource *res)
{
	const struct emu_resource *r;

	for (r = emu_resources; r->name; r++)
		if (r == res)
			return false;
	return res != NULL;
}

void emu_crd_foreach(void (*fn)(const struct emu_resource *res,
				const json_t *categories, const json_t *schema,
				void *arg),
		     void *arg)
{
	size_t i;

	pthread_rwlock_rdlock(&crd_lock);
	for (i = 0; i < nregs; i++)
		if (!regs[i]->gone)
			fn(&regs[i]->res, regs[i]->categories, regs[i]->schema,
			   arg);
	pthread_rwlock_unlock(&crd_lock);
}

/* The entry of group/version/plural, gone or not, or NULL. Lock held. */
static struct crd_res *slot_of(const char *group, const char *version,
			       const char *plural)
{
	size_t i;

	for (i = 0; i < nregs; i++)
		if (!strcmp(regs[i]->res.group, group) &&
		    !strcmp(regs[i]->res.version, version) &&
		    !strcmp(regs[i]->res.name, plural))
			return regs[i];
	return NULL;
}

/* "ct,cts" from spec.names.shortNames, or NULL. */
static void join_names(const json_t *arr, struct buf *out)
{
	const json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
	{
		if (!json_is_string(v))
			continue;
		if (out->len)
			buf_addch(out, ',');
		buf_adds(out, json_string_value(v));
	}
}

static bool has_string(const json_t *arr, const char *s)
{
	const json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
	{
		if (json_is_string(v) && !strcmp(json_string_value(v), s))
			return true;
	}
	return false;
}

/* Fill (or refill) one registry entry. Lock held. */
static int fill_slot(struct crd_res *c, const char *crd_name, const json_t *crd,
		     const json_t *ver)
{
	const json_t *spec = json_object_get(crd, "spec");
	const json_t *names = spec_names(crd);
	const json_t *subs = json_object_get(ver, "subresources");
	const json_t *schema = json_object_get(json_object_get(ver, "schema"),
					       "openAPIV3Schema");
	const json_t *cats = json_object_get(names, "categories");
	struct buf shorts = BUF_INIT;
	unsigned flags = EMU_RES_GENERATION;
	const char *kind = str_at(names, "kind", NULL);
	const char *singular = str_at(names, "singular", NULL);
	int ret = 0;

	if (str_is(spec, "scope", "Namespaced"))
		flags |= EMU_RES_NAMESPACED;
	if (json_object_get(subs, "status"))
		flags |= EMU_RES_STATUS;
	if (json_object_get(subs, "scale"))
		flags |= EMU_RES_SCALE;
	if (has_string(cats, "all"))
		flags |= EMU_RES_CAT_ALL;
	join_names(json_object_get(names, "shortNames"), &shorts);
	c->res.group = intern(str_at(spec, "group", NULL));
	c->res.version = intern(str_at(ver, "name", NULL));
	c->res.name = intern(str_at(names, "plural", NULL));
	c->res.kind = intern(kind);
	c->res.singular = intern(singular ? singular : "");
	c->res.short_names = shorts.len ? intern(shorts.ptr) : NULL;
	c->res.flags = flags;
	c->res.name_rule = EMU_NAME_SUBDOMAIN;
	c->crd = intern(crd_name);
	c->list_kind = intern(str_at(names, "listKind", NULL));
	json_decref(c->categories);
	c->categories =
		json_is_array(cats) ? json_deep_copy(cats) : json_array();
	json_decref(c->schema);
	c->schema = schema ? json_deep_copy(schema) : NULL;
	c->scale.spec_replicas = intern(
		str_at(json_object_get(subs, "scale"), "specReplicasPath", NULL));
	c->scale.status_replicas = intern(str_at(
		json_object_get(subs, "scale"), "statusReplicasPath", NULL));
	c->scale.label_selector = intern(str_at(
		json_object_get(subs, "scale"), "labelSelectorPath", NULL));
	if (!c->res.group || !c->res.version || !c->res.name || !c->res.kind ||
	    !c->res.singular || !c->crd || (shorts.len && !c->res.short_names))
		ret = -1;
	buf_release(&shorts);
	return ret;
}

/* Does `crd` serve version `version` of its group and plural? */
static bool serves_version(const json_t *crd, const struct crd_res *c)
{
	const json_t *vers = json_object_get(json_object_get(crd, "spec"),
					     "versions"),
		     *v;
	const char *group = str_at(crd, "spec", "group");
	const char *plural = str_at(spec_names(crd), "plural", NULL);
	const char *name;
	size_t i;

	if (!group || !plural || strcmp(group, c->res.group) ||
	    strcmp(plural, c->res.name))
		return false;
	json_array_foreach(vers, i, v)
	{
		name = str_at(v, "name", NULL);
		if (name && !strcmp(name, c->res.version) &&
		    json_is_true(json_object_get(v, "served")))
			return true;
	}
	return false;
}

/* Mark gone every entry of CRD `name` that `crd` (NULL: none) serves not. */
static void drop_unserved(const char *name, const json_t *crd)
{
	size_t i;

	for (i = 0; i < nregs; i++)
		if (!regs[i]->gone && !strcmp(regs[i]->crd, name) &&
		    (!crd || !serves_version(crd, regs[i])))
			regs[i]->gone = true;
}

/* Is the NamesAccepted condition of `crd` True? */
static bool names_accepted(const json_t *crd)
{
	const json_t *conds = json_object_get(json_object_get(crd, "status"),
					      "conditions"),
		     *c;
	size_t i;

	json_array_foreach(conds, i, c)
	{
		if (str_is(c, "type", "NamesAccepted"))
			return str_is(c, "status", "True");
	}
	return false;
}

int emu_crd_register(const json_t *crd, struct buf *msg)
{
	const char *name = str_at(crd, "metadata", "name");
	const json_t *vers = json_object_get(json_object_get(crd, "spec"),
					     "versions"),
		     *v;
	struct crd_res *c, **n;
	bool accepted = names_accepted(crd);
	size_t i;
	int ret = 0;

	if (!name || !str_at(crd, "spec", "group") ||
	    !str_at(spec_names(crd), "plural", NULL) ||
	    !str_at(spec_names(crd), "kind", NULL)) {
		buf_adds(msg, "CustomResourceDefinition without metadata.name, "
			      "spec.group, spec.names.plural or kind");
		return -1;
	}
	pthread_rwlock_wrlock(&crd_lock);
	drop_unserved(name, accepted ? crd : NULL);
	if (!accepted)
		goto out;
	json_array_foreach(vers, i, v)
	{
		if (!json_is_true(json_object_get(v, "served")) ||
		    !str_at(v, "name", NULL))
			continue;
		c = slot_of(str_at(crd, "spec", "group"),
			    str_at(v, "name", NULL),
			    str_at(spec_names(crd), "plural", NULL));
		if (!c) {
			if (nregs == regs_alloc) {
				size_t alloc = regs_alloc ? regs_alloc * 2 : 16;

				n = realloc(regs, alloc * sizeof(*n));
				if (!n)
					goto nomem;
				regs = n;
				regs_alloc = alloc;
			}
			c = calloc(1, sizeof(*c));
			if (!c)
				goto nomem;
			c->gone = true; /* until filled */
			regs[nregs++] = c;
		}
		if (fill_slot(c, name, crd, v) < 0) {
			c->gone = true;
			goto nomem;
		}
		c->gone = false;
	}
out:
	pthread_rwlock_unlock(&crd_lock);
	if (ret == 0 && accepted && emu_managed_register_crd(crd, msg) < 0)
		ret = -1;
	return ret;
nomem:
	buf_adds(msg, "out of memory");
	ret = -1;
	goto out;
}

void emu_crd_unregister(const json_t *crd)
{
	const char *name = str_at(crd, "metadata", "name");
	const char *group = str_at(crd, "spec", "group");
	const char *kind = str_at(spec_names(crd), "kind", NULL);

	if (name) {
		pthread_rwlock_wrlock(&crd_lock);
		drop_unserved(name, NULL);
		pthread_rwlock_unlock(&crd_lock);
	}
	if (group && kind)
		emu_managed_unregister_crd(group, kind);
}

bool emu_crd_serves(const json_t *crd, const struct emu_resource *res)
{
	const char *group = str_at(crd, "spec", "group");
	const char *plural = str_at(spec_names(crd), "plural", NULL);

	return group && plural && emu_resource_is_custom(res) &&
	       !strcmp(res->group, group) && !strcmp(res->name, plural);
}

/* ---- validation and status ---- */

struct causes {
	json_t *arr;
	struct buf msg; /* "field: detail" joined by ", " */
};

static void cause_add(struct causes *c, const char *reason, const char *field,
		      const char *detail)
{
	json_array_append_new(c->arr,
			      json_pack("{s:s, s:s, s:s}", "reason", reason,
					"message", detail, "field", field));
	if (c->msg.len)
		buf_adds(&c->msg, ", ");
	buf_addf(&c->msg, "%s: %s", field, detail);
}

static bool valid_name(const char *s, enum emu_name_rule rule)
{
	const char *why;

	return s && *s && emu_name_check(s, rule, &why) == 0;
}

/* The checks of kube's ValidateCustomResourceDefinition tests rely on. */
static void check_crd(const json_t *crd, struct causes *c)
{
	const json_t *spec = json_object_get(crd, "spec");
	const json_t *names = spec_names(crd);
	const json_t *vers = json_object_get(spec, "versions"), *v;
	const char *name = str_at(crd, "metadata", "name");
	const char *group = str_at(spec, "group", NULL);
	const char *plural = str_at(names, "plural", NULL);
	const char *kind = str_at(names, "kind", NULL);
	const char *scope = str_at(spec, "scope", NULL);
	struct buf d = BUF_INIT, want = BUF_INIT;
	size_t i, storage = 0;

	buf_addf(&want, "%s.%s", plural ? plural : "", group ? group : "");
	if (!name || strcmp(name, want.ptr)) {
		buf_addf(&d,
			 "Invalid value: \"%s\": must be "
			 "spec.names.plural+\".\"+spec.group",
			 name ? name : "");
		cause_add(c, "FieldValueInvalid", "metadata.name", d.ptr);
	}
	if (!group || !*group) {
		cause_add(c, "FieldValueRequired", "spec.group",
			  "Required value");
	} else if (!strchr(group, '.')) {
		buf_reset(&d);
		buf_addf(&d,
			 "Invalid value: \"%s\": should be a domain with "
			 "at least one dot",
			 group);
		cause_add(c, "FieldValueInvalid", "spec.group", d.ptr);
	}
	if (!scope || !*scope) {
		cause_add(c, "FieldValueRequired", "spec.scope",
			  "Required value");
	} else if (strcmp(scope, "Namespaced") && strcmp(scope, "Cluster")) {
		buf_reset(&d);
		buf_addf(&d,
			 "Unsupported value: \"%s\": supported values: "
			 "\"Cluster\", \"Namespaced\"",
			 scope);
		cause_add(c, "FieldValueNotSupported", "spec.scope", d.ptr);
	}
	if (!plural || !*plural) {
		cause_add(c, "FieldValueRequired", "spec.names.plural",
			  "Required value");
	} else if (!valid_name(plural, EMU_NAME_LABEL)) {
		buf_reset(&d);
		buf_addf(&d,
			 "Invalid value: \"%s\": a lowercase RFC 1123 "
			 "label must consist of lower case alphanumeric "
			 "characters or '-', and must start and end with "
			 "an alphanumeric character",
			 plural);
		cause_add(c, "FieldValueInvalid", "spec.names.plural", d.ptr);
	}
	if (!kind || !*kind)
		cause_add(c, "FieldValueRequired", "spec.names.kind",
			  "Required value");
	if (!json_is_array(vers) || !json_array_size(vers)) {
		cause_add(c, "FieldValueRequired", "spec.versions",
			  "Required value");
		goto out;
	}
	json_array_foreach(vers, i, v)
	{
		if (json_is_true(json_object_get(v, "storage")))
			storage++;
		if (!valid_name(str_at(v, "name", NULL), EMU_NAME_DNS1035)) {
			buf_reset(&d);
			buf_reset(&want);
			buf_addf(&want, "spec.versions[%zu].name", i);
			buf_addf(&d,
				 "Invalid value: \"%s\": a DNS-1035 label "
				 "must consist of lower case alphanumeric "
				 "characters or '-'",
				 str_at(v, "name", NULL)
					 ? str_at(v, "name", NULL)
					 : "");
			cause_add(c, "FieldValueInvalid", want.ptr, d.ptr);
		}
	}
	if (storage != 1)
		cause_add(c, "FieldValueInvalid", "spec.versions",
			  "Invalid value: []apiextensions."
			  "CustomResourceDefinitionVersion{...}: must have "
			  "exactly one version marked as storage version");
out:
	buf_release(&d);
	buf_release(&want);
}

json_t *emu_crd_prepare(const struct emu_resource *res, json_t *crd)
{
	struct causes c = {json_array(), BUF_INIT};
	const char *name = str_at(crd, "metadata", "name");
	struct buf m = BUF_INIT;
	json_t *st = NULL;

	if (!json_is_object(json_object_get(crd, "spec")))
		json_object_set_new(crd, "spec", json_object());
	check_crd(crd, &c);
	if (json_array_size(c.arr)) {
		buf_addf(&m, "%s.%s \"%s\" is invalid: ", res->kind, res->group,
			 name ? name : "");
		if (json_array_size(c.arr) > 1)
			buf_addf(&m, "[%s]", c.msg.ptr);
		else
			buf_adds(&m, c.msg.ptr);
		st = emu_status_new(422, "Invalid", m.ptr, name, res->group,
				    res->kind);
		json_object_set(json_object_get(st, "details"), "causes",
				c.arr);
	}
	json_decref(c.arr);
	buf_release(&c.msg);
	buf_release(&m);
	return st;
}

/*
 * The first name `want` holds that another CRD of `group` has accepted,
 * as the naming controller finds conflicts. Lock held.
 */
static bool name_taken(const char *crd, const char *group, const char *want,
		       bool as_kind)
{
	size_t i;

	for (i = 0; i < nregs; i++) {
		const struct crd_res *r = regs[i];
		const char *p, *s;
		size_t len;

		if (r->gone || !strcmp(r->crd, crd) ||
		    strcmp(r->res.group, group))
			continue;
		if (as_kind) {
			if (!strcmp(r->res.kind, want) ||
			    (r->list_kind && !strcmp(r->list_kind, want)))
				return true;
			continue;
		}
		if (!strcmp(r->res.name, want) ||
		    !strcmp(r->res.singular, want))
			return true;
		for (s = r->res.short_names; s && *s; s = *p ? p + 1 : p) {
			p = strchr(s, ',');
			if (!p)
				p = s + strlen(s);
			len = (size_t)(p - s);
			if (strlen(want) == len && !strncmp(s, want, len))
				return true;
		}
	}
	return false;
}

static json_t *condition(const json_t *old_status, const char *type,
			 const char *status, const char *reason,
			 const char *message, const char *now)
{
	const json_t *conds = json_object_get(old_status, "conditions"), *o;
	const char *ts = now;
	size_t i;

	json_array_foreach(conds, i, o)
	{
		if (str_is(o, "type", type) && str_is(o, "status", status) &&
		    str_at(o, "lastTransitionTime", NULL))
			ts = str_at(o, "lastTransitionTime", NULL);
	}
	return json_pack("{s:s, s:s, s:s, s:s, s:s}", "lastTransitionTime", ts,
			 "message", message, "reason", reason, "status", status,
			 "type", type);
}

void emu_crd_set_status(json_t *crd, const json_t *old)
{
	const json_t *spec = json_object_get(crd, "spec");
	const json_t *names = json_object_get(spec, "names");
	const json_t *old_status = json_object_get(old, "status");
	const json_t *vers = json_object_get(spec, "versions"), *v, *sv;
	const char *crd_name = str_at(crd, "metadata", "name");
	const char *group = str_at(spec, "group", NULL);
	json_t *status, *stored, *accepted, *conds;
	struct buf why = BUF_INIT;
	const char *reason = NULL, *n;
	char now[32];
	time_t t = time(NULL);
	struct tm tm;
	size_t i;
	static const char *const plural_like[] = {"plural", "singular", NULL};
	const char *const *k;

	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
	pthread_rwlock_rdlock(&crd_lock);
	for (k = plural_like; *k && !reason; k++) {
		n = str_at(names, *k, NULL);
		if (n && name_taken(crd_name, group, n, false)) {
			reason = !strcmp(*k, "plural") ? "PluralConflict"
						       : "SingularConflict";
			buf_addf(&why, "\"%s\" is already in use", n);
		}
	}
	json_array_foreach(json_object_get(names, "shortNames"), i, v)
	{
		if (reason || !json_is_string(v))
			continue;
		if (name_taken(crd_name, group, json_string_value(v), false)) {
			reason = "ShortNamesConflict";
			buf_addf(&why, "\"%s\" is already in use",
				 json_string_value(v));
		}
	}
	if (!reason && (n = str_at(names, "kind", NULL)) &&
	    name_taken(crd_name, group, n, true)) {
		reason = "KindConflict";
		buf_addf(&why, "\"%s\" is already in use", n);
	}
	if (!reason && (n = str_at(names, "listKind", NULL)) &&
	    name_taken(crd_name, group, n, true)) {
		reason = "ListKindConflict";
		buf_addf(&why, "\"%s\" is already in use", n);
	}
	pthread_rwlock_unlock(&crd_lock);

	status = json_object();
	conds = json_array();
	if (reason) {
		accepted = json_deep_copy(
			json_object_get(old_status, "acceptedNames"));
		if (!accepted)
			accepted = json_pack("{s:s, s:s}", "kind", "", "plural",
					     "");
		json_array_append_new(conds,
				      condition(old_status, "NamesAccepted",
						"False", reason, why.ptr, now));
		json_array_append_new(
			conds, condition(old_status, "Established", "False",
					 "NotAccepted",
					 "not all names are accepted", now));
	} else {
		accepted = json_deep_copy(names);
		json_array_append_new(conds,
				      condition(old_status, "NamesAccepted",
						"True", "NoConflicts",
						"no conflicts found", now));
		json_array_append_new(
			conds,
			condition(old_status, "Established", "True",
				  "InitialNamesAccepted",
				  "the initial names have been accepted", now));
	}
	/* storedVersions only grows: old storage versions may have data. */
	stored = json_deep_copy(json_object_get(old_status, "storedVersions"));
	if (!json_is_array(stored)) {
		json_decref(stored);
		stored = json_array();
	}
	json_array_foreach(vers, i, v)
	{
		bool have = false;
		size_t j;

		if (!json_is_true(json_object_get(v, "storage")) ||
		    !str_at(v, "name", NULL))
			continue;
		json_array_foreach(stored, j, sv)
		{
			if (json_is_string(sv) &&
			    !strcmp(json_string_value(sv),
				    str_at(v, "name", NULL)))
				have = true;
		}
		if (!have)
			json_array_append_new(
				stored, json_string(str_at(v, "name", NULL)));
	}
	json_object_set_new(status, "acceptedNames", accepted);
	json_object_set_new(status, "conditions", conds);
	json_object_set_new(status, "storedVersions", stored);
	json_object_set_new(crd, "status", status);
	buf_release(&why);
}

const char *emu_crd_list_kind(const struct emu_resource *res)
{
	const char *lk = NULL;

	if (!emu_resource_is_custom(res))
		return NULL;
	pthread_rwlock_rdlock(&crd_lock);
	lk = ((const struct crd_res *)res)->list_kind;
	pthread_rwlock_unlock(&crd_lock);
	return lk;
}

json_t *emu_crd_schema(const struct emu_resource *res,
		       struct emu_crd_scale *scale)
{
	const struct crd_res *c = (const struct crd_res *)res;
	json_t *schema = NULL;

	if (scale)
		memset(scale, 0, sizeof(*scale));
	if (!emu_resource_is_custom(res))
		return NULL;
	pthread_rwlock_rdlock(&crd_lock);
	/* a schema is replaced, never changed: the reference stays good */
	schema = json_incref(c->schema);
	if (scale)
		*scale = c->scale;
	pthread_rwlock_unlock(&crd_lock);
	return schema;
}

void emu_crd_prune(const struct emu_resource *res, json_t *obj,
		   json_t *unknown)
{
	const struct crd_res *c = (const struct crd_res *)res;

	if (!emu_resource_is_custom(res) || !json_is_object(obj))
		return;
	pthread_rwlock_rdlock(&crd_lock);
	/* The one structural walk, shared with the comparison (diff/). */
	diff_structural(obj, c->schema,
			DIFF_STRUCTURAL_PRUNE | DIFF_STRUCTURAL_DEFAULT |
				DIFF_STRUCTURAL_ROOT,
			unknown);
	pthread_rwlock_unlock(&crd_lock);
}
