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
#include "tests/kube-emu/emu.h"

static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;
static struct diff_schemas *schemas;
/*
 * Readers hold it while they use a schema node; registering or dropping
 * a CRD (which frees its old schema tree) takes it for writing.
 */
static pthread_rwlock_t schemas_lock = PTHREAD_RWLOCK_INITIALIZER;

static void schemas_init(void)
{
	schemas = diff_schemas_new();
}

const struct diff_schema *emu_schema_acquire(const struct emu_resource *res)
{
	pthread_once(&schemas_once, schemas_init);
	pthread_rwlock_rdlock(&schemas_lock);
	if (!schemas)
		return NULL;
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

/* The list item of `list` matching the key object `keys`, or NULL. */
static const json_t *find_item(const json_t *list, const char *keys,
			       const struct diff_schema *s)
{
	const char *const *names;
	const json_t *const *defaults;
	size_t nkeys = diff_schema_keys(s, &names, &defaults), i, j;
	json_t *want = json_loads(keys, 0, NULL), *item, *have;
	const char *k;
	json_t *v;
	const json_t *found = NULL;
	bool match;

	json_array_foreach((json_t *)list, i, item)
	{
		match = json_is_object(item);
		json_object_foreach(want, k, v)
		{
			if (!match)
				break;
			have = json_object_get(item, k);
			for (j = 0; !have && j < nkeys; j++)
				if (!strcmp(names[j], k))
					have = (json_t *)defaults[j];
			match = have && json_equal(have, v);
		}
		if (match) {
			found = item;
			break;
		}
	}
	json_decref(want);
	return found;
}

/* The value at `path` in obj, or NULL. */
static const json_t *value_at(const json_t *obj, const struct diff_path *p,
			      const struct diff_schema *s)
{
	const json_t *cur = obj, *item;
	json_t *want;
	size_t i, j;

	for (i = 0; cur && i < p->len; i++) {
		const struct diff_pe *pe = &p->pe[i];

		switch (pe->type) {
		case DIFF_PE_FIELD:
			cur = json_object_get(cur, pe->text);
			s = diff_schema_field(s, pe->text);
			break;
		case DIFF_PE_KEY:
			cur = find_item(cur, pe->text, s);
			s = diff_schema_items(s);
			break;
		case DIFF_PE_VALUE:
			want = json_loads(pe->text, JSON_DECODE_ANY, NULL);
			item = NULL;
			for (j = 0; want && j < json_array_size(cur); j++)
				if (json_equal(json_array_get(cur, j), want))
					item = json_array_get(cur, j);
			json_decref(want);
			cur = item;
			s = diff_schema_items(s);
			break;
		case DIFF_PE_INDEX:
			cur = json_array_get(cur, strtoul(pe->text, NULL, 10));
			s = diff_schema_items(s);
			break;
		}
	}
	return cur;
}

/*
 * Nodes that exist in the zero value of a built-in kind's Go type (struct
 * fields that are not pointers): an Update never "adds" them, so they get
 * no "." of their own. "[]" stands for any list item.
 */
static const char *const zero_structs[] = {
	"metadata",
	"spec",
	"status",
	"roleRef",
	"spec.strategy",
	"spec.updateStrategy",
	"spec.scaleTargetRef",
	"status.loadBalancer",
	"spec.template",
	"spec.template.metadata",
	"spec.template.spec",
	"spec.template.spec.containers[].resources",
	"spec.template.spec.initContainers[].resources",
	"spec.containers[].resources",
	"spec.initContainers[].resources",
	"spec.jobTemplate",
	"spec.jobTemplate.metadata",
	"spec.jobTemplate.spec",
	"spec.jobTemplate.spec.template",
	"spec.jobTemplate.spec.template.metadata",
	"spec.jobTemplate.spec.template.spec",
	"spec.jobTemplate.spec.template.spec.containers[].resources",
	"spec.jobTemplate.spec.template.spec.initContainers[].resources",
	"spec.volumeClaimTemplates[].metadata",
	"spec.volumeClaimTemplates[].spec",
	"spec.volumeClaimTemplates[].spec.resources",
	"spec.volumeClaimTemplates[].status",
	NULL,
};

static bool is_zero_struct(const struct emu_resource *res,
			   const struct diff_path *p, size_t len)
{
	const char *const *z;
	struct buf b = BUF_INIT;
	bool found = false;
	size_t i;

	for (i = 0; i < len; i++) {
		if (p->pe[i].type == DIFF_PE_FIELD)
			buf_addf(&b, "%s%s", i ? "." : "", p->pe[i].text);
		else
			buf_adds(&b, "[]");
	}
	if (emu_resource_is_custom(res)) {
		found = !strcmp(buf_cstr(&b), "metadata");
	} else {
		for (z = zero_structs; *z && !found; z++)
			found = !strcmp(buf_cstr(&b), *z);
	}
	buf_release(&b);
	return found;
}

struct self_ctx {
	const json_t *old;
	const json_t *new_obj;
	const struct diff_schema *schema;
	const struct emu_resource *res;
	struct diff_fieldset *selves;
	int error;
};

/*
 * For each added member, the maps and optional structs above it that the
 * write brought into existence: kube's Update entries own those nodes
 * too (`"f:labels":{".":{},"f:app":{}}` after `kubectl create`), as the
 * field manager compares against the Go type's zero value.
 */
static int add_selves(const struct diff_path *path, void *data)
{
	struct self_ctx *c = data;
	struct diff_path prefix = {path->pe, 0};
	const json_t *now, *before;

	for (prefix.len = 1; prefix.len < path->len; prefix.len++) {
		if (path->pe[prefix.len - 1].type != DIFF_PE_FIELD)
			continue;
		now = value_at(c->new_obj, &prefix, c->schema);
		if (!json_is_object(now) || !json_object_size(now))
			continue;
		before = c->old ? value_at(c->old, &prefix, c->schema) : NULL;
		if (json_is_object(before) ||
		    is_zero_struct(c->res, &prefix, prefix.len))
			continue;
		if (diff_fieldset_insert(c->selves, &prefix) < 0) {
			c->error = -1;
			return -1;
		}
	}
	return 0;
}

struct modified_ctx {
	const json_t *old;
	const json_t *new_obj;
	const struct diff_schema *schema;
	struct diff_fieldset *modified;
	int error;
};

/*
 * A member whose value differs between old and new. Members with
 * children (map-list items ".") differ only through their children, so
 * only scalars and atomic values are compared.
 */
static int check_modified(const struct diff_path *path, void *data)
{
	struct modified_ctx *c = data;
	const json_t *a = value_at(c->old, path, c->schema);
	const json_t *b = value_at(c->new_obj, path, c->schema);
	bool container_with_children = false;

	if (a && b && !json_equal(a, b)) {
		if (json_is_object(b) || json_is_array(b)) {
			enum diff_schema_type t;
			const struct diff_schema *s = c->schema;
			size_t i;

			for (i = 0; i < path->len; i++)
				s = path->pe[i].type == DIFF_PE_FIELD
					    ? diff_schema_field(
						      s, path->pe[i].text)
					    : diff_schema_items(s);
			t = diff_schema_type_of(s, b);
			container_with_children = t != DIFF_SCHEMA_ATOMIC;
		}
		if (!container_with_children &&
		    diff_fieldset_insert(c->modified, path) < 0)
			return c->error = -1;
	}
	return 0;
}

static void now_rfc3339(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static bool str_is(const json_t *v, const char *s)
{
	const char *have = json_string_value(v);

	return s ? have && !strcmp(have, s) : have == NULL;
}

/*
 * diff_fieldset_of_object() leaves status out (syncd never owns it), but
 * the API server tracks status like any field: writes through /status
 * own what they set. The fields of obj's status (walked with the kind's
 * status schema, then put under f:status) are added to *set.
 */
static int add_status_fields(struct diff_fieldset **set, const json_t *obj,
			     const struct diff_schema *schema)
{
	const json_t *status = json_object_get(obj, "status");
	struct diff_fieldset *st = NULL, *both;
	json_t *js = NULL;
	int error = -1;

	if (!json_is_object(status) || !json_object_size(status))
		return 0;
	if (diff_fieldset_of_object(&st, status,
				    diff_schema_field(schema, "status"),
				    NULL) < 0)
		goto out;
	js = json_pack("{s:o}", "f:status", diff_fieldset_to_json(st));
	diff_fieldset_free(st);
	st = NULL;
	if (!js || diff_fieldset_parse(&st, js, NULL) < 0)
		goto out;
	both = diff_fieldset_union(*set, st);
	if (!both)
		goto out;
	diff_fieldset_free(*set);
	*set = both;
	error = 0;
out:
	diff_fieldset_free(st);
	json_decref(js);
	return error;
}

int emu_managed_update(json_t *obj, const json_t *old,
		       const struct emu_resource *res, const char *manager,
		       const char *sub, const char *api_version)
{
	struct diff_fieldset *set_new = NULL, *set_old = NULL, *added = NULL;
	struct diff_fieldset *removed = NULL, *touched = NULL, *both = NULL;
	struct diff_fieldset *mine = NULL, *tmp = NULL, *entry_set = NULL;
	struct modified_ctx mc = {0};
	struct self_ctx sc = {0};
	json_t *meta = json_object_get(obj, "metadata"), *entries, *out, *e;
	const struct diff_schema *schema;
	const json_t *incoming;
	bool found = false, locked = false;
	char ts[32];
	size_t i;
	int error = -1;

	schema = emu_schema_acquire(res);
	locked = true;
	if (!schema || !json_is_object(meta))
		goto out;
	if (diff_fieldset_of_object(&set_new, obj, schema, NULL) < 0 ||
	    add_status_fields(&set_new, obj, schema) < 0)
		goto out;
	if (old) {
		if (diff_fieldset_of_object(&set_old, old, schema, NULL) < 0 ||
		    add_status_fields(&set_old, old, schema) < 0)
			goto out;
	} else if (!(set_old = diff_fieldset_new())) {
		goto out;
	}
	added = diff_fieldset_difference(set_new, set_old);
	removed = diff_fieldset_difference(set_old, set_new);
	both = diff_fieldset_intersect(set_new, set_old);
	mc.modified = diff_fieldset_new();
	if (!added || !removed || !both || !mc.modified)
		goto out;
	mc.old = old;
	mc.new_obj = obj;
	mc.schema = schema;
	if (old && diff_fieldset_walk(both, check_modified, &mc) < 0)
		goto out;
	sc.old = old;
	sc.new_obj = obj;
	sc.schema = schema;
	sc.res = res;
	sc.selves = diff_fieldset_new();
	if (!sc.selves || diff_fieldset_walk(added, add_selves, &sc) < 0)
		goto out;
	tmp = diff_fieldset_union(added, mc.modified);
	touched = tmp ? diff_fieldset_union(tmp, sc.selves) : NULL;
	diff_fieldset_free(tmp);
	tmp = NULL;
	if (!touched)
		goto out;

	/* A body without managedFields keeps the stored ones. */
	incoming = json_object_get(meta, "managedFields");
	if (!json_is_array(incoming))
		incoming =
			old ? json_object_get(json_object_get(old, "metadata"),
					      "managedFields")
			    : NULL;
	entries = incoming ? json_deep_copy(incoming) : json_array();
	out = json_array();
	now_rfc3339(ts);
	json_array_foreach(entries, i, e)
	{
		diff_fieldset_free(entry_set);
		entry_set = NULL;
		if (diff_fieldset_parse(&entry_set,
					json_object_get(e, "fieldsV1"),
					NULL) < 0)
			continue;
		if (str_is(json_object_get(e, "manager"), manager) &&
		    str_is(json_object_get(e, "operation"), "Update") &&
		    str_is(json_object_get(e, "apiVersion"), api_version) &&
		    str_is(json_object_get(e, "subresource"), sub)) {
			found = true;
			tmp = diff_fieldset_union(entry_set, touched);
			mine = tmp ? diff_fieldset_difference(tmp, removed)
				   : NULL;
			diff_fieldset_free(tmp);
			tmp = NULL;
			if (mine && !diff_fieldset_empty(mine)) {
				json_object_set_new(e, "time", json_string(ts));
				json_object_set_new(
					e, "fieldsV1",
					diff_fieldset_to_json(mine));
				json_array_append(out, e);
			}
			continue;
		}
		tmp = diff_fieldset_difference(entry_set, touched);
		diff_fieldset_free(entry_set);
		entry_set = tmp ? diff_fieldset_difference(tmp, removed) : NULL;
		diff_fieldset_free(tmp);
		tmp = NULL;
		if (!entry_set || diff_fieldset_empty(entry_set))
			continue;
		json_object_set_new(e, "fieldsV1",
				    diff_fieldset_to_json(entry_set));
		json_array_append(out, e);
	}
	if (!found && !diff_fieldset_empty(touched)) {
		e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "manager",
			      manager, "operation", "Update", "apiVersion",
			      api_version, "time", ts, "fieldsType", "FieldsV1",
			      "fieldsV1", diff_fieldset_to_json(touched));
		if (sub)
			json_object_set_new(e, "subresource", json_string(sub));
		json_array_append_new(out, e);
	}
	json_decref(entries);
	if (json_array_size(out))
		json_object_set_new(meta, "managedFields", out);
	else {
		json_object_del(meta, "managedFields");
		json_decref(out);
	}
	error = 0;
out:
	if (locked)
		emu_schema_release();
	diff_fieldset_free(set_new);
	diff_fieldset_free(set_old);
	diff_fieldset_free(added);
	diff_fieldset_free(removed);
	diff_fieldset_free(both);
	diff_fieldset_free(touched);
	diff_fieldset_free(mine);
	diff_fieldset_free(entry_set);
	diff_fieldset_free(mc.modified);
	diff_fieldset_free(sc.selves);
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
	now_rfc3339(ts);
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
