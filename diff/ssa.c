/*
 * Server-side apply as the API server runs it (structured-merge-diff's
 * Updater.Apply plus apimachinery's managedFields bookkeeping), for the
 * emulator: merge, prune what the applier stopped sending, find
 * conflicts with other managers, and rewrite managedFields.
 */
#include <stdlib.h>
#include <string.h>

#include "diff/internal.h"

#include "util/banned.h" /* last */

#define BEFORE_FIRST_APPLY "before-first-apply"

/* One managedFields entry of live, parsed. */
struct manager {
	json_t *entry;                   /* own reference (a copy) */
	struct diff_fieldset *set;
	struct diff_fieldset *conflict;  /* fields this apply changes */
	struct diff_fieldset *removed;   /* fields this apply removes */
};

struct ssa {
	const json_t *live;
	json_t *merged;
	const struct diff_schema *schema;
	struct manager *m;
	size_t n;
	size_t self;          /* the applier's Apply entry, or (size_t)-1 */
	struct manager *cur;  /* while walking one manager's set */
	json_t *conflicts;    /* array being built, or NULL */
	int error;
};

static const char *entry_str(const json_t *e, const char *key)
{
	const char *s = json_string_value(json_object_get(e, key));

	return s && *s ? s : NULL;
}

static bool str_eq(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

/* --- managers --- */

static void managers_free(struct manager *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_decref(m[i].entry);
		diff_fieldset_free(m[i].set);
		diff_fieldset_free(m[i].conflict);
		diff_fieldset_free(m[i].removed);
	}
	free(m);
}

static int manager_add(struct ssa *c, json_t *entry, struct diff_fieldset *set)
{
	struct manager *m = realloc(c->m, (c->n + 1) * sizeof(*m));

	if (!m) {
		json_decref(entry);
		diff_fieldset_free(set);
		return ERR_NOMEM;
	}
	c->m = m;
	m[c->n] = (struct manager){entry, set, NULL, NULL};
	c->n++;
	return 0;
}

/*
 * apimachinery's manager identifier (BuildManagerIdentifier): manager,
 * operation and subresource, and the version for an Update. Two entries
 * with the same identifier are one manager; decoding keeps the last.
 */
static bool same_manager(const json_t *a, const json_t *b)
{
	return str_eq(entry_str(a, "manager"), entry_str(b, "manager")) &&
	       str_eq(entry_str(a, "operation"), entry_str(b, "operation")) &&
	       str_eq(entry_str(a, "subresource"),
		      entry_str(b, "subresource")) &&
	       (str_eq(entry_str(a, "operation"), "Apply") ||
		str_eq(entry_str(a, "apiVersion"), entry_str(b, "apiVersion")));
}

/*
 * Load live's managedFields. A live object without any (or with none
 * readable) gets a before-first-apply Update entry owning all its
 * fields, as the API server adds on the first apply.
 */
static int load_managers(struct ssa *c, const char *manager, const char *time,
			 struct err *err)
{
	const json_t *mf, *e;
	struct diff_fieldset *set = NULL;
	json_t *entry;
	size_t i, k;
	int error = 0;

	c->self = (size_t)-1;
	if (!c->live)
		goto out;
	mf = json_object_get(json_object_get(c->live, "metadata"),
			     "managedFields");
	json_array_foreach (mf, i, e) {
		const char *op = entry_str(e, "operation");

		set = NULL;
		/* Unreadable as apimachinery reads them: no manager, an
		 * operation other than Apply or Update, no fieldsV1. */
		if (!json_is_object(e) || !entry_str(e, "manager") ||
		    (!str_eq(op, "Apply") && !str_eq(op, "Update")) ||
		    diff_fieldset_parse(&set, json_object_get(e, "fieldsV1"),
					NULL) < 0)
			continue;
		if (!(entry = json_deep_copy(e))) {
			diff_fieldset_free(set);
			error = ERR_NOMEM;
			goto out;
		}
		for (k = 0; k < c->n && !same_manager(c->m[k].entry, e); k++)
			;
		if (k < c->n) { /* a duplicate: the last one counts */
			json_decref(c->m[k].entry);
			diff_fieldset_free(c->m[k].set);
			c->m[k].entry = entry;
			c->m[k].set = set;
			continue;
		}
		if (c->self == (size_t)-1 &&
		    str_eq(entry_str(e, "manager"), manager) &&
		    str_eq(entry_str(e, "operation"), "Apply") &&
		    !entry_str(e, "subresource"))
			c->self = c->n;
		if ((error = manager_add(c, entry, set)) < 0)
			goto out;
	}
	if (c->n == 0) {
		if ((error = diff_fieldset_of_object(&set, c->live, c->schema,
						     err)) < 0)
			goto out;
		if (diff_fieldset_empty(set)) {
			diff_fieldset_free(set);
			goto out;
		}
		entry = json_pack("{s:s, s:s, s:s?, s:s, s:s, s:o}", "manager",
				  BEFORE_FIRST_APPLY, "operation", "Update",
				  "apiVersion",
				  entry_str(c->live, "apiVersion"), "time",
				  time, "fieldsType", "FieldsV1", "fieldsV1",
				  diff_fieldset_to_json(set));
		if (!entry) {
			diff_fieldset_free(set);
			error = ERR_NOMEM;
			goto out;
		}
		error = manager_add(c, entry, set);
	}
out:
	return error;
}

/* --- prune: what the applier stopped sending --- */

struct prune_ctx {
	struct ssa *c;
	const struct diff_fieldset *owned;  /* every manager's set now */
};

/* True when `p` names a key field of the map-list item it is in. */
static bool is_item_key(const struct ssa *c, const struct diff_path *p)
{
	const struct diff_schema *s = c->schema;
	const char *const *names;
	const json_t *const *defaults;
	size_t n;

	if (p->len < 2 || p->pe[p->len - 1].type != DIFF_PE_FIELD ||
	    p->pe[p->len - 2].type != DIFF_PE_KEY)
		return false;
	for (size_t i = 0; i + 2 < p->len; i++)
		s = diff_tree_step(s, &p->pe[i]);
	n = diff_schema_keys(s, &names, &defaults);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], p->pe[p->len - 1].text))
			return true;
	return false;
}

/* True when `p` is beneath an atomic value of the merged object. */
static bool under_atomic(const struct ssa *c, const struct diff_path *p)
{
	const struct diff_schema *s;
	const json_t *v;

	for (size_t i = 1; i < p->len; i++) {
		v = diff_tree_get(c->merged, p->pe, i, c->schema, &s);
		if (!v)
			return false;
		if ((json_is_object(v) || json_is_array(v)) &&
		    diff_schema_type_of(s, v) == DIFF_SCHEMA_ATOMIC)
			return true;
	}
	return false;
}

static int prune_visit(const struct diff_path *p, void *data)
{
	struct prune_ctx *pc = data;

	/* co-owned (or something under it is): it stays */
	if (diff_fieldset_has_prefix(pc->owned, p))
		return 0;
	/* an atomic value is replaced whole, never pruned inside (as
	 * structured-merge-diff's removing walker stops at one) */
	if (under_atomic(pc->c, p))
		return 0;
	/* an item that stays keeps its key */
	if (is_item_key(pc->c, p))
		return 0;
	diff_tree_delete(pc->c->merged, p->pe, p->len, pc->c->schema);
	return 0;
}

static int prune(struct ssa *c, const struct diff_fieldset *prev,
		 const struct diff_fieldset *sent)
{
	struct diff_fieldset *removed = NULL, *owned = NULL, *tmp;
	struct prune_ctx pc = {c, NULL};
	int error = 0;

	if (!prev)
		goto out;
	removed = diff_fieldset_difference(prev, sent);
	owned = diff_fieldset_union(sent, NULL);
	if (!removed || !owned) {
		error = ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < c->n; i++) {
		if (i == c->self)
			continue;
		tmp = diff_fieldset_union(owned, c->m[i].set);
		if (!tmp) {
			error = ERR_NOMEM;
			goto out;
		}
		diff_fieldset_free(owned);
		owned = tmp;
	}
	pc.owned = owned;
	diff_fieldset_walk(removed, prune_visit, &pc);
out:
	diff_fieldset_free(removed);
	diff_fieldset_free(owned);
	return error;
}

/* --- conflicts and removals for the other managers --- */

/*
 * A member another manager owns is changed by this apply when it gains a
 * value or a leaf or atomic value differs (containers merged field by
 * field change only through their children), and removed when it loses
 * its value.
 */
static int classify_visit(const struct diff_path *p, void *data)
{
	struct ssa *c = data;
	const struct diff_schema *s;
	const json_t *a = diff_tree_get(c->live, p->pe, p->len, c->schema, NULL);
	const json_t *b = diff_tree_get(c->merged, p->pe, p->len, c->schema, &s);
	struct diff_fieldset **into = NULL;

	if (a && !b)
		into = &c->cur->removed;
	else if (b && !a)
		into = &c->cur->conflict;
	else if (a && b && !diff_value_equal(a, b, false) &&
		 (!(json_is_object(b) || json_is_array(b)) ||
		  json_typeof(a) != json_typeof(b) ||
		  diff_schema_type_of(s, b) == DIFF_SCHEMA_ATOMIC))
		into = &c->cur->conflict;
	if (!into)
		return 0;
	if (!*into && !(*into = diff_fieldset_new()))
		return c->error = ERR_NOMEM;
	if (diff_fieldset_insert(*into, p) < 0)
		return c->error = ERR_NOMEM;
	return 0;
}

/* --- conflicts as JSON and text --- */

static int conflict_visit(const struct diff_path *p, void *data)
{
	struct ssa *c = data;
	const json_t *e = c->cur->entry;
	const char *op = entry_str(e, "operation");
	struct buf field = BUF_INIT;
	json_t *item = NULL;
	int error = ERR_NOMEM;

	if (diff_path_format(p, &field) < 0)
		goto out;
	item = json_pack("{s:s, s:s, s:s?, s:s}", "manager",
			 entry_str(e, "manager"), "operation",
			 op ? op : "Update", "apiVersion",
			 entry_str(e, "apiVersion"), "field", buf_cstr(&field));
	if (!item)
		goto out;
	if (entry_str(e, "subresource") &&
	    json_object_set_new(item, "subresource",
				json_string(entry_str(e, "subresource"))) < 0)
		goto out;
	if (json_array_append(c->conflicts, item) < 0)
		goto out;
	error = 0;
out:
	buf_release(&field);
	json_decref(item);
	return c->error = error;
}

/* Order of managers in conflict lists: by manager, operation, version. */
static int manager_cmp(const void *pa, const void *pb)
{
	const struct manager *a = *(const struct manager *const *)pa;
	const struct manager *b = *(const struct manager *const *)pb;
	static const char *const keys[] = {"manager", "operation",
					   "apiVersion", "subresource"};
	const char *x, *y;
	int r;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		x = entry_str(a->entry, keys[i]);
		y = entry_str(b->entry, keys[i]);
		r = strcmp(x ? x : "", y ? y : "");
		if (r)
			return r;
	}
	return 0;
}

/*
 * The order the API server stores managedFields in (apimachinery's
 * sortEncodedManagedFields): operation, time, manager, apiVersion,
 * subresource.
 */
static int entry_cmp(const void *pa, const void *pb)
{
	const json_t *a = *(const json_t *const *)pa;
	const json_t *b = *(const json_t *const *)pb;
	static const char *const keys[] = {"operation", "time", "manager",
					   "apiVersion", "subresource"};
	const char *x, *y;
	int r;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		x = entry_str(a, keys[i]);
		y = entry_str(b, keys[i]);
		r = strcmp(x ? x : "", y ? y : "");
		if (r)
			return r;
	}
	return 0;
}

/* The new managedFields array (sorted), or NULL on ENOMEM. */
static json_t *build_managed_fields(struct ssa *c)
{
	json_t **v = calloc(c->n ? c->n : 1, sizeof(*v)), *out = NULL;
	size_t n = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < c->n; i++) {
		json_t *fv;

		if (diff_fieldset_empty(c->m[i].set))
			continue;
		if (!(fv = diff_fieldset_to_json(c->m[i].set)) ||
		    json_object_set_new(c->m[i].entry, "fieldsV1", fv) < 0)
			goto out;
		v[n++] = c->m[i].entry;
	}
	qsort(v, n, sizeof(*v), entry_cmp);
	if (!(out = json_array()))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (json_array_append(out, v[i]) < 0) {
			json_decref(out);
			out = NULL;
			goto out;
		}
out:
	free(v);
	return out;
}

/* managedFields arrays equal but for the entries' times. */
static bool managed_fields_equal(const json_t *a, const json_t *b)
{
	json_t *x, *y;
	bool eq;

	if (json_array_size(a) != json_array_size(b))
		return false;
	for (size_t i = 0; i < json_array_size(a); i++) {
		x = json_copy(json_array_get(a, i));
		y = json_copy(json_array_get(b, i));
		json_object_del(x, "time");
		json_object_del(y, "time");
		eq = x && y && json_equal(x, y);
		json_decref(x);
		json_decref(y);
		if (!eq)
			return false;
	}
	return true;
}

/* Objects equal apart from metadata.managedFields. */
static bool objects_equal(const json_t *a, const json_t *b)
{
	json_t *x = json_copy((json_t *)a), *y = json_copy((json_t *)b);
	json_t *xm, *ym;
	bool eq = false;

	if (!x || !y)
		goto out;
	xm = json_copy(json_object_get(x, "metadata"));
	ym = json_copy(json_object_get(y, "metadata"));
	json_object_del(xm, "managedFields");
	json_object_del(ym, "managedFields");
	if (xm)
		json_object_set_new(x, "metadata", xm);
	if (ym)
		json_object_set_new(y, "metadata", ym);
	eq = diff_value_equal(x, y, false);
out:
	json_decref(x);
	json_decref(y);
	return eq;
}

/* The applied object without metadata.managedFields. */
static json_t *applied_copy(const json_t *applied)
{
	json_t *out = json_copy((json_t *)applied), *meta;

	if (!out)
		return NULL;
	meta = json_object_get(out, "metadata");
	if (json_is_object(meta) && json_object_get(meta, "managedFields")) {
		meta = json_copy(meta);
		json_object_del(meta, "managedFields");
		json_object_set_new(out, "metadata", meta);
	}
	return out;
}

/* The conflicts as diff_ssa_result.conflicts lists them. */
static int list_conflicts(struct ssa *c, json_t **out)
{
	struct manager **v = calloc(c->n, sizeof(*v));
	size_t n = 0;
	int error = ERR_NOMEM;

	if (!v || !(c->conflicts = json_array()))
		goto out;
	for (size_t i = 0; i < c->n; i++)
		if (!diff_fieldset_empty(c->m[i].conflict))
			v[n++] = &c->m[i];
	qsort(v, n, sizeof(*v), manager_cmp);
	for (size_t i = 0; i < n; i++) {
		c->cur = v[i];
		diff_fieldset_walk(v[i]->conflict, conflict_visit, c);
		if ((error = c->error) < 0)
			goto out;
	}
	*out = c->conflicts;
	c->conflicts = NULL;
	error = 0;
out:
	json_decref(c->conflicts);
	c->conflicts = NULL;
	free(v);
	return error;
}

int diff_ssa_apply(struct diff_ssa_result *out, const json_t *live,
		   const json_t *applied, const struct diff_schema *schema,
		   const char *manager, bool force, const char *time,
		   struct err *err)
{
	struct ssa c = {0};
	struct diff_fieldset *sent = NULL;
	json_t *body = NULL, *mf, *meta, *entry;
	const char *api_version;
	int error = 0;

	memset(out, 0, sizeof(*out));
	c.live = live;
	c.schema = schema;
	if (!json_is_object(applied) ||
	    !(api_version = entry_str(applied, "apiVersion"))) {
		error = err_set(err, ERR_INVALID,
				"apply: the object has no apiVersion");
		goto out;
	}
	if (!manager || !*manager || !time) {
		error = err_set(err, ERR_INVALID,
				"apply: no field manager or time");
		goto out;
	}
	if (live && !json_is_object(live)) {
		error = err_set(err, ERR_INVALID,
				"apply: the live object is not an object");
		goto out;
	}
	if (!(body = applied_copy(applied))) {
		error = ERR_NOMEM;
		goto out;
	}
	if ((error = diff_fieldset_of_object(&sent, body, schema, err)) < 0)
		goto out;
	if ((error = load_managers(&c, manager, time, err)) < 0)
		goto out;
	c.merged = live ? diff_tree_merge(live, body, schema) : json_deep_copy(body);
	if (!c.merged) {
		error = ERR_NOMEM;
		goto out;
	}
	if ((error = prune(&c, c.self < c.n ? c.m[c.self].set : NULL,
			   sent)) < 0)
		goto out;

	/* what this apply changes and removes of the others' fields */
	for (size_t i = 0; i < c.n; i++) {
		if (i == c.self)
			continue;
		c.cur = &c.m[i];
		diff_fieldset_walk(c.m[i].set, classify_visit, &c);
		if ((error = c.error) < 0)
			goto out;
	}
	for (size_t i = 0; !force && i < c.n; i++)
		if (!diff_fieldset_empty(c.m[i].conflict)) {
			error = list_conflicts(&c, &out->conflicts);
			goto out;
		}

	/* the others lose what this apply takes or removes */
	for (size_t i = 0; i < c.n; i++) {
		struct diff_fieldset *a, *b;

		if (i == c.self)
			continue;
		a = diff_fieldset_difference(c.m[i].set, c.m[i].conflict);
		b = a ? diff_fieldset_difference(a, c.m[i].removed) : NULL;
		diff_fieldset_free(a);
		if (!b) {
			error = ERR_NOMEM;
			goto out;
		}
		diff_fieldset_free(c.m[i].set);
		c.m[i].set = b;
	}

	/* the applier's entry: exactly what it sent */
	entry = json_pack("{s:s, s:s, s:s, s:s, s:s}", "manager", manager,
			  "operation", "Apply", "apiVersion", api_version,
			  "time", time, "fieldsType", "FieldsV1");
	if (!entry) {
		error = ERR_NOMEM;
		goto out;
	}
	if (c.self < c.n) {
		json_decref(c.m[c.self].entry);
		diff_fieldset_free(c.m[c.self].set);
		c.m[c.self].entry = entry;
		c.m[c.self].set = sent;
	} else if ((error = manager_add(&c, entry, sent)) < 0) {
		sent = NULL;
		goto out;
	}
	sent = NULL;

	if (!(mf = build_managed_fields(&c))) {
		error = ERR_NOMEM;
		goto out;
	}
	meta = json_object_get(c.merged, "metadata");
	if (!json_is_object(meta)) {
		meta = json_object();
		if (!meta || json_object_set_new(c.merged, "metadata", meta)) {
			json_decref(mf);
			error = ERR_NOMEM;
			goto out;
		}
	}
	if (json_array_size(mf))
		json_object_set_new(meta, "managedFields", mf);
	else {
		json_object_del(meta, "managedFields");
		json_decref(mf);
	}

	out->changed = !live || !objects_equal(live, c.merged) ||
		       !managed_fields_equal(
			       json_object_get(json_object_get(live,
							       "metadata"),
					       "managedFields"),
			       json_object_get(meta, "managedFields"));
	if (out->changed) {
		out->object = c.merged;
		c.merged = NULL;
	} else if (!(out->object = json_deep_copy(live))) {
		error = ERR_NOMEM;
	}
out:
	if (error < 0)
		diff_ssa_result_release(out);
	managers_free(c.m, c.n);
	diff_fieldset_free(sent);
	json_decref(body);
	json_decref(c.merged);
	return error;
}

void diff_ssa_result_release(struct diff_ssa_result *res)
{
	if (!res)
		return;
	json_decref(res->object);
	json_decref(res->conflicts);
	memset(res, 0, sizeof(*res));
}

/* Go's %q for the names the API server prints. */
static int add_quoted(struct buf *b, const char *s)
{
	int error = buf_addch(b, '"');

	for (; !error && *s; s++) {
		if (*s == '"' || *s == '\\')
			error = buf_addch(b, '\\');
		if (!error)
			error = buf_addch(b, *s);
	}
	return error ? error : buf_addch(b, '"');
}

/*
 * apimachinery's printManager: "\"m\"", then " with subresource \"s\"",
 * then for Update " using apps/v1" (Apply managers are not versioned).
 */
static int add_manager(struct buf *b, const json_t *c)
{
	const char *sub = entry_str(c, "subresource");
	const char *op = entry_str(c, "operation");
	const char *m = entry_str(c, "manager");
	int error = add_quoted(b, m ? m : "");

	if (!error && sub) {
		error = buf_adds(b, " with subresource ");
		if (!error)
			error = add_quoted(b, sub);
	}
	if (!error && !str_eq(op, "Apply"))
		error = buf_addf(b, " using %s",
				 entry_str(c, "apiVersion")
					 ? entry_str(c, "apiVersion")
					 : "");
	return error;
}

int diff_ssa_conflict_message(const json_t *conflicts, struct buf *message,
			      json_t **causes)
{
	struct buf who = BUF_INIT, prev = BUF_INIT;
	size_t n = json_array_size(conflicts), i;
	json_t *list = NULL, *c, *cause;
	const char *field;
	int error = 0;

	if (causes)
		*causes = NULL;
	if (!(list = json_array())) {
		error = ERR_NOMEM;
		goto out;
	}
	if ((error = buf_addf(message, "Apply failed with %zu conflict%s: ", n,
			      n == 1 ? "" : "s")) < 0)
		goto out;
	json_array_foreach (conflicts, i, c) {
		field = entry_str(c, "field") ? entry_str(c, "field") : "";
		buf_reset(&who);
		if ((error = add_manager(&who, c)) < 0)
			goto out;
		if (n == 1)
			error = buf_addf(message, "conflict with %s: %s",
					 buf_cstr(&who), field);
		else if (i && !strcmp(buf_cstr(&who), buf_cstr(&prev)))
			error = buf_addf(message, "\n- %s", field);
		else
			error = buf_addf(message, "%sconflicts with %s:\n- %s",
					 i ? "\n" : "", buf_cstr(&who), field);
		if (error < 0)
			goto out;
		buf_reset(&prev);
		if ((error = buf_adds(&prev, buf_cstr(&who))) < 0)
			goto out;
		cause = json_pack("{s:s, s:s+, s:s}", "reason",
				  "FieldManagerConflict", "message",
				  "conflict with ", buf_cstr(&who), "field",
				  field);
		if (!cause || json_array_append_new(list, cause) < 0) {
			error = ERR_NOMEM;
			goto out;
		}
	}
	if (causes) {
		*causes = list;
		list = NULL;
	}
out:
	buf_release(&who);
	buf_release(&prev);
	json_decref(list);
	return error;
}
