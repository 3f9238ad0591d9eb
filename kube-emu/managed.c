/*
 * managedFields for Update operations (create, PUT, merge patch, /scale),
 * as kube-apiserver's fieldmanager records them: the writer gains every
 * field it added or changed, every other manager loses the fields that
 * were added, changed or removed, and entries left empty are dropped.
 * Server-side apply (emu_managed_apply) runs diff/'s diff_ssa_apply()
 * with the same schemas. Field sets and list types come from diff/
 * (shared with syncd).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diff/diff.h"
#include "kube-emu/emu.h"
#include "util/clock.h"

#include "util/banned.h" /* last */

static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;
static struct diff_schemas *schemas;
/*
 * Readers hold it while they use a schema node; registering or dropping
 * a CRD (which frees its old schema tree) takes it for writing.
 */
static pthread_rwlock_t schemas_lock = PTHREAD_RWLOCK_INITIALIZER;

static void schemas_init(void)
{
	/*
	 * The built-in kinds' schemas from their Go types, all of them
	 * rather than diff/'s table of list types: what kube-apiserver's
	 * field manager merges and tracks by.
	 */
	schemas = diff_schemas_new();
	if (schemas)
		diff_schemas_add_gotypes(schemas, true);
}

const struct diff_schema *emu_schema_acquire(const struct emu_resource *res)
{
	pthread_once(&schemas_once, schemas_init);
	pthread_rwlock_rdlock(&schemas_lock);
	if (!schemas)
		return NULL;
	if (!emu_resource_is_custom(res) &&
	    diff_gotype_root(res->group, res->version, res->kind) >= 0)
		return diff_schemas_lookup(
			schemas, diff_schemas_gotype_group(res->group),
			res->kind);
	return diff_schemas_lookup(schemas, res->group, res->kind);
}

void emu_schema_release(void)
{
	pthread_rwlock_unlock(&schemas_lock);
}

int emu_managed_register_crd(const json_t *crd, struct buf *msg)
{
	struct err err = ERR_INIT;
	int error;

	pthread_once(&schemas_once, schemas_init);
	pthread_rwlock_wrlock(&schemas_lock);
	error = schemas ? diff_schemas_add_crd(schemas, crd, &err) : ERR_NOMEM;
	pthread_rwlock_unlock(&schemas_lock);
	if (error < 0)
		buf_adds(msg, err_first(&err) ? err_first(&err)
					       : "out of memory");
	err_release(&err);
	return error < 0 ? -1 : 0;
}

void emu_managed_unregister_crd(const char *group, const char *kind)
{
	pthread_once(&schemas_once, schemas_init);
	pthread_rwlock_wrlock(&schemas_lock);
	if (schemas)
		diff_schemas_remove(schemas, group, kind);
	pthread_rwlock_unlock(&schemas_lock);
}

/*
 * structured-merge-diff's Compare of two objects (typed/compare.go): the
 * paths `rhs` adds, modifies and removes relative to `lhs`. A map or list
 * present only on one side is itself added or removed (the "." of
 * fieldsV1) with everything under it; an atomic value, a scalar, and a
 * map or list empty on both sides are leaves compared as a whole. A
 * present null counts as present. Items of sets and map-lists pair up by
 * value or key; an item without its key (no default) is skipped, as SMD
 * skips what it cannot name.
 */
#define CMP_DEPTH 64

struct cmpw {
	struct diff_fieldset *added, *modified, *removed;
	struct diff_pe pe[CMP_DEPTH];
	char *text[CMP_DEPTH];
	size_t len;
	int error;
};

static int cmp_push(struct cmpw *w, enum diff_pe_type type, const char *text)
{
	if (w->len == CMP_DEPTH)
		return -1;
	if (!(w->text[w->len] = strdup(text))) {
		w->error = -1;
		return -1;
	}
	w->pe[w->len].type = type;
	w->pe[w->len].text = w->text[w->len];
	w->len++;
	return 0;
}

static void cmp_pop(struct cmpw *w)
{
	w->len--;
	free(w->text[w->len]);
}

static void cmp_insert(struct cmpw *w, struct diff_fieldset *set)
{
	struct diff_path p = {w->pe, w->len};

	if (w->len && diff_fieldset_insert(set, &p) < 0)
		w->error = -1;
}

/* The v: or k: text of a list item; -1 when it has none. */
static int item_text(const json_t *item, const struct diff_schema *list,
		     bool set, struct buf *out)
{
	const char *const *names;
	const json_t *const *defaults;
	size_t nkeys, i;
	json_t *key;
	int error = 0;

	if (set)
		return json_is_object(item) || json_is_array(item) ||
				       diff_json_dump(item, 0, out) < 0
			       ? -1
			       : 0;
	if (!json_is_object(item))
		return -1;
	nkeys = diff_schema_keys(list, &names, &defaults);
	key = json_object();
	for (i = 0; i < nkeys && !error; i++) {
		const json_t *v = json_object_get(item, names[i]);

		if (!v)
			v = defaults[i];
		if (!v)
			error = -1;
		else
			json_object_set(key, names[i], (json_t *)v);
	}
	if (!error && diff_json_dump(key, 0, out) < 0)
		error = -1;
	json_decref(key);
	return error;
}

static bool empty_node(const json_t *v)
{
	return !v || json_is_null(v) ||
	       (json_is_object(v) && !json_object_size(v)) ||
	       (json_is_array(v) && !json_array_size(v));
}

static void cmp_node(struct cmpw *w, const json_t *l, const json_t *r,
		     const struct diff_schema *s);

static void cmp_leaf(struct cmpw *w, const json_t *l, const json_t *r)
{
	if (!l)
		cmp_insert(w, w->added);
	else if (!r)
		cmp_insert(w, w->removed);
	else if (!json_equal(l, r))
		cmp_insert(w, w->modified);
}

static void cmp_map(struct cmpw *w, const json_t *l, const json_t *r,
		    const struct diff_schema *s)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)r, k, v)
	{
		if (cmp_push(w, DIFF_PE_FIELD, k) < 0)
			return;
		cmp_node(w, json_is_object(l) ? json_object_get(l, k) : NULL,
			 v, diff_schema_field(s, k));
		cmp_pop(w);
	}
	json_object_foreach((json_t *)l, k, v)
	{
		if (json_is_object(r) && json_object_get(r, k))
			continue;
		if (cmp_push(w, DIFF_PE_FIELD, k) < 0)
			return;
		cmp_node(w, v, NULL, diff_schema_field(s, k));
		cmp_pop(w);
	}
}

/* The item of `list` whose text is `text` (the first), or NULL. */
static const json_t *item_by_text(const json_t *list,
				  const struct diff_schema *s, bool set,
				  const char *text)
{
	struct buf b = BUF_INIT;
	const json_t *found = NULL;
	json_t *e;
	size_t i;

	json_array_foreach((json_t *)list, i, e)
	{
		buf_reset(&b);
		if (item_text(e, s, set, &b) == 0 &&
		    !strcmp(buf_cstr(&b), text)) {
			found = e;
			break;
		}
	}
	buf_release(&b);
	return found;
}

static void cmp_items(struct cmpw *w, const json_t *l, const json_t *r,
		      const struct diff_schema *s, bool set)
{
	const struct diff_schema *items = diff_schema_items(s);
	enum diff_pe_type type = set ? DIFF_PE_VALUE : DIFF_PE_KEY;
	struct buf b = BUF_INIT;
	json_t *e;
	size_t i;

	json_array_foreach((json_t *)r, i, e)
	{
		buf_reset(&b);
		if (item_text(e, s, set, &b) < 0 ||
		    item_by_text(r, s, set, buf_cstr(&b)) != e ||
		    cmp_push(w, type, buf_cstr(&b)) < 0)
			continue;
		cmp_node(w, item_by_text(l, s, set, buf_cstr(&b)), e, items);
		cmp_pop(w);
	}
	json_array_foreach((json_t *)l, i, e)
	{
		buf_reset(&b);
		if (item_text(e, s, set, &b) < 0 ||
		    item_by_text(l, s, set, buf_cstr(&b)) != e ||
		    item_by_text(r, s, set, buf_cstr(&b)) ||
		    cmp_push(w, type, buf_cstr(&b)) < 0)
			continue;
		cmp_node(w, e, NULL, items);
		cmp_pop(w);
	}
	buf_release(&b);
}

static void cmp_node(struct cmpw *w, const json_t *l, const json_t *r,
		     const struct diff_schema *s)
{
	const json_t *v = r ? r : l;
	enum diff_schema_type type;
	bool kids;

	if (w->error)
		return;
	kids = (json_is_object(v) || json_is_array(v)) &&
	       (!l || !r || json_is_null(l) || json_is_null(r) ||
		json_typeof(l) == json_typeof(r)) &&
	       !(empty_node(l) && empty_node(r));
	type = kids ? diff_schema_type_of(s, v) : DIFF_SCHEMA_ATOMIC;
	if (kids && json_is_object(v) && type == DIFF_SCHEMA_GRANULAR) {
		cmp_map(w, l, r, s);
	} else if (kids && json_is_array(v) &&
		   (type == DIFF_SCHEMA_SET || type == DIFF_SCHEMA_MAP_LIST)) {
		cmp_items(w, l, r, s, type == DIFF_SCHEMA_SET);
	} else {
		cmp_leaf(w, l, r);
		return;
	}
	if (!l)
		cmp_insert(w, w->added);
	else if (!r)
		cmp_insert(w, w->removed);
}

/*
 * What the field manager never records (stripmeta.go) and, for writes of
 * a subresource, what that subresource resets: the writer's set loses
 * exactly these paths (strip) or everything under them (reset).
 */
static const char *const strip_meta[] = {
	"metadata",	    "metadata.name",	     "metadata.namespace",
	"metadata.creationTimestamp", "metadata.selfLink",
	"metadata.uid",	    "metadata.clusterName", "metadata.generation",
	"metadata.managedFields",     "metadata.resourceVersion",
	NULL,
};

/* A dotted path of field names ("metadata.labels") as a diff_path. */
static int dotted_path(const char *dotted, struct diff_pe *pe, size_t max,
		       char *buf, size_t size, size_t *len)
{
	char *tok, *save = NULL;

	if (strlen(dotted) >= size)
		return -1;
	memcpy(buf, dotted, strlen(dotted) + 1);
	*len = 0;
	for (tok = strtok_r(buf, ".", &save); tok;
	     tok = strtok_r(NULL, ".", &save)) {
		if (*len == max)
			return -1;
		pe[*len].type = DIFF_PE_FIELD;
		pe[(*len)++].text = tok;
	}
	return 0;
}

/* A set holding the paths (exact members) of a NULL-ended list. */
static struct diff_fieldset *paths_set(const char *const *paths)
{
	struct diff_fieldset *set = diff_fieldset_new();
	struct diff_pe pe[8];
	struct diff_path p = {pe, 0};
	char buf[128];

	for (; set && *paths; paths++) {
		if (dotted_path(*paths, pe, 8, buf, sizeof(buf), &p.len) < 0 ||
		    diff_fieldset_insert(set, &p) < 0) {
			diff_fieldset_free(set);
			return NULL;
		}
	}
	return set;
}

struct reset_ctx {
	const char *const *prefixes;
	struct diff_fieldset *out;
	int error;
};

static bool has_prefix(const struct diff_path *path, const char *dotted)
{
	struct diff_pe pe[8];
	char buf[128];
	size_t len, i;

	if (dotted_path(dotted, pe, 8, buf, sizeof(buf), &len) < 0 ||
	    len > path->len)
		return false;
	for (i = 0; i < len; i++)
		if (path->pe[i].type != DIFF_PE_FIELD ||
		    strcmp(path->pe[i].text, pe[i].text))
			return false;
	return true;
}

static int keep_unreset(const struct diff_path *path, void *data)
{
	struct reset_ctx *c = data;
	const char *const *p;

	for (p = c->prefixes; *p; p++)
		if (has_prefix(path, *p))
			return 0;
	if (diff_fieldset_insert(c->out, path) < 0)
		return c->error = -1;
	return 0;
}

/* `set` without what lies under `prefixes`; consumes set. */
static struct diff_fieldset *without_reset(struct diff_fieldset *set,
					   const char *const *prefixes)
{
	struct reset_ctx c = {prefixes, NULL, 0};

	if (!set || !prefixes || !*prefixes)
		return set;
	c.out = diff_fieldset_new();
	if (c.out && (diff_fieldset_walk(set, keep_unreset, &c) < 0 ||
		      c.error)) {
		diff_fieldset_free(c.out);
		c.out = NULL;
	}
	diff_fieldset_free(set);
	return c.out;
}

/*
 * The fields a write's strategy resets (GetResetFields of kube's
 * registries): a main-resource write never touches the status, a /status
 * write nothing but it (a Deployment's labels and a Pod's deletion and
 * owners stay too).
 */
static const char *const *reset_fields(const struct emu_resource *res,
				       const char *sub)
{
	static const char *const main_reset[] = {"status", NULL};
	static const char *const status_reset[] = {"spec", NULL};
	static const char *const deploy_status[] = {"spec", "metadata.labels",
						    NULL};
	static const char *const pod_status[] = {
		"spec", "metadata.deletionTimestamp", "metadata.ownerReferences",
		NULL};

	if (!(res->flags & EMU_RES_STATUS))
		return NULL;
	if (!sub || strcmp(sub, "status"))
		return main_reset;
	if (!strcmp(res->group, "apps") && !strcmp(res->kind, "Deployment"))
		return deploy_status;
	if (!*res->group && !strcmp(res->kind, "Pod"))
		return pod_status;
	return status_reset;
}

static bool str_is(const json_t *v, const char *s)
{
	const char *have = json_string_value(v);

	return s ? have && !strcmp(have, s) : have == NULL;
}

/*
 * What a create is compared against: the encoding of the kind's zero
 * value (a built-in's Go type; a custom resource is unstructured and
 * starts as just its apiVersion and kind). New reference.
 */
static json_t *zero_of(const struct emu_resource *res, const json_t *obj)
{
	int root = emu_resource_is_custom(res)
			   ? -1
			   : diff_gotype_root(res->group, res->version, res->kind);

	if (root >= 0)
		return diff_gotype_zero(root);
	return json_pack("{s:O?, s:O?}", "apiVersion",
			 json_object_get(obj, "apiVersion"), "kind",
			 json_object_get(obj, "kind"));
}


/* Does `entries` (managedFields) hold an entry whose fields parse? */
static bool any_entry(const json_t *entries)
{
	struct diff_fieldset *set;
	const json_t *e;
	bool found = false;
	size_t i;

	json_array_foreach((json_t *)entries, i, e)
	{
		set = NULL;
		if (json_string_value(json_object_get(e, "manager")) &&
		    diff_fieldset_parse(&set, json_object_get(e, "fieldsV1"),
					NULL) == 0)
			found = true;
		diff_fieldset_free(set);
		if (found)
			break;
	}
	return found;
}

/* set \ remove, freeing set; NULL (out of memory) stays NULL. */
static struct diff_fieldset *minus(struct diff_fieldset *set,
				   const struct diff_fieldset *remove)
{
	struct diff_fieldset *out;

	if (!set)
		return NULL;
	out = diff_fieldset_difference(set, remove);
	diff_fieldset_free(set);
	return out;
}

/*
 * The Update bookkeeping of apimachinery's field manager
 * (managedfieldsupdater.go, SMD's Updater.Update, stripmeta.go): compare
 * old (or the zero value) with obj; every other manager loses what was
 * added, modified or removed; the writer gains what was added or
 * modified, outside what the write's strategy resets and the metadata
 * the server owns. Its entry (manager, Update, apiVersion, subresource)
 * gets the time of this write only when it gained something.
 */
int emu_managed_update(json_t *obj, const json_t *old,
		       const struct emu_resource *res, const char *manager,
		       const char *sub, const char *api_version)
{
	static const char *const strip_paths[] = {
		"apiVersion", "kind", NULL,
	};
	struct cmpw w = {0};
	struct diff_fieldset *touched = NULL, *mine = NULL, *entry_set = NULL;
	struct diff_fieldset *strip = NULL, *strip2 = NULL, *tmp = NULL;
	json_t *meta = json_object_get(obj, "metadata"), *entries = NULL, *out;
	json_t *zero = NULL, *e;
	const char *const *reset = reset_fields(res, sub);
	const struct diff_schema *schema;
	const json_t *incoming, *lhs = old;
	bool found = false, reset_mf = false;
	char ts[32];
	size_t i;
	int error = -1;

	schema = emu_schema_acquire(res);
	if (!schema || !json_is_object(meta))
		goto out;
	if (!old && !(lhs = zero = zero_of(res, obj)))
		goto out;
	w.added = diff_fieldset_new();
	w.modified = diff_fieldset_new();
	w.removed = diff_fieldset_new();
	if (!w.added || !w.modified || !w.removed)
		goto out;
	cmp_node(&w, lhs, obj, schema);
	if (w.error)
		goto out;
	w.added = without_reset(w.added, reset);
	w.modified = without_reset(w.modified, reset);
	w.removed = without_reset(w.removed, reset);
	touched = w.added && w.modified
			  ? diff_fieldset_union(w.added, w.modified)
			  : NULL;
	strip = paths_set(strip_meta);
	strip2 = paths_set(strip_paths);
	tmp = strip && strip2 ? diff_fieldset_union(strip, strip2) : NULL;
	if (!w.removed || !touched || !tmp)
		goto out;

	/*
	 * decodeLiveOrNew: the body's managedFields, when it has some that
	 * parse; [] or [{}] resets them; else the stored ones (subresource
	 * writes always keep the stored ones).
	 */
	incoming = sub ? NULL : json_object_get(meta, "managedFields");
	if (json_is_array(incoming) &&
	    (!json_array_size(incoming) ||
	     (json_array_size(incoming) == 1 &&
	      !json_object_size(json_array_get(incoming, 0)))))
		reset_mf = true;
	else if (!any_entry(incoming))
		incoming =
			old ? json_object_get(json_object_get(old, "metadata"),
					      "managedFields")
			    : NULL;
	entries = incoming && !reset_mf ? json_deep_copy(incoming)
				       : json_array();
	/*
	 * skipNonAppliedManager: an update of an object nobody is tracked
	 * on stays untracked (until an apply).
	 */
	if (old && !any_entry(entries)) {
		json_object_del(meta, "managedFields");
		error = 0;
		goto out;
	}

	out = json_array();
	clk_rfc3339_format(time(NULL), ts);
	/* The writer's own share of this write. */
	mine = minus(diff_fieldset_difference(touched, w.removed), tmp);
	if (!mine || !entries || !out) {
		json_decref(out);
		goto out;
	}
	json_array_foreach(entries, i, e)
	{
		bool self;

		diff_fieldset_free(entry_set);
		entry_set = NULL;
		if (diff_fieldset_parse(&entry_set,
					json_object_get(e, "fieldsV1"),
					NULL) < 0)
			continue;
		self = str_is(json_object_get(e, "manager"), manager) &&
		       str_is(json_object_get(e, "operation"), "Update") &&
		       str_is(json_object_get(e, "apiVersion"), api_version) &&
		       str_is(json_object_get(e, "subresource"), sub);
		entry_set = minus(minus(entry_set, touched), w.removed);
		if (self) {
			found = true;
			if (!diff_fieldset_empty(mine)) {
				struct diff_fieldset *u =
					entry_set ? diff_fieldset_union(
							    entry_set, mine)
						  : NULL;

				diff_fieldset_free(entry_set);
				entry_set = minus(u, tmp);
				json_object_set_new(e, "time",
						    json_string(ts));
			}
		}
		if (!entry_set || diff_fieldset_empty(entry_set))
			continue;
		json_object_set_new(e, "fieldsV1",
				    diff_fieldset_to_json(entry_set));
		json_array_append(out, e);
	}
	if (!found && !diff_fieldset_empty(mine)) {
		e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "manager",
			      manager, "operation", "Update", "apiVersion",
			      api_version, "time", ts, "fieldsType", "FieldsV1",
			      "fieldsV1", diff_fieldset_to_json(mine));
		if (sub)
			json_object_set_new(e, "subresource", json_string(sub));
		json_array_append_new(out, e);
	}
	/*
	 * A /scale write is tracked on the Scale and merged back by
	 * apimachinery's ScaleHandler.ToParent, which takes the time from
	 * the parent's entries: the scale writer's entry has none.
	 */
	if (sub && !strcmp(sub, "scale"))
		json_array_foreach(out, i, e)
		{
			if (str_is(json_object_get(e, "manager"), manager) &&
			    str_is(json_object_get(e, "subresource"), "scale"))
				json_object_del(e, "time");
		}
	if (json_array_size(out))
		json_object_set_new(meta, "managedFields", out);
	else {
		json_object_del(meta, "managedFields");
		json_decref(out);
	}
	error = 0;
out:
	emu_schema_release();
	while (w.len)
		cmp_pop(&w);
	json_decref(entries);
	json_decref(zero);
	diff_fieldset_free(w.added);
	diff_fieldset_free(w.modified);
	diff_fieldset_free(w.removed);
	diff_fieldset_free(touched);
	diff_fieldset_free(mine);
	diff_fieldset_free(entry_set);
	diff_fieldset_free(strip);
	diff_fieldset_free(strip2);
	diff_fieldset_free(tmp);
	return error;
}

int emu_managed_apply(struct diff_ssa_result *out, const json_t *live,
		      const json_t *applied, const struct emu_resource *res,
		      const char *manager, bool force, struct err *err)
{
	const struct diff_schema *schema = emu_schema_acquire(res);
	char ts[32];
	int error;

	if (!schema) {
		emu_schema_release();
		memset(out, 0, sizeof(*out));
		return ERR_NOMEM;
	}
	clk_rfc3339_format(time(NULL), ts);
	error = diff_ssa_apply(out, live, applied, schema, manager, force, ts,
			       err);
	emu_schema_release();
	return error;
}

void emu_manager_name(const char *field_manager, const char *user_agent,
		      struct buf *out)
{
	const char *slash;

	if (field_manager && *field_manager) {
		buf_adds(out, field_manager);
		return;
	}
	if (!user_agent || !*user_agent) {
		buf_adds(out, "unknown");
		return;
	}
	slash = strchr(user_agent, '/');
	buf_add(out, user_agent,
		slash ? (size_t)(slash - user_agent) : strlen(user_agent));
}
