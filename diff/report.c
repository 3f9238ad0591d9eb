/*
 * Drift reports: comparing a whole app, and the JSON and text renderings.
 * The JSON form is documented in docs/drift-report.md; its field names
 * are stable within a report version.
 */
#include "diff/internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/banned.h" /* last */

#define REPORT_VERSION 1

static const char *const state_names[] = {
	[DIFF_IN_SYNC] = "InSync",   [DIFF_DRIFTED] = "Drifted",
	[DIFF_MISSING] = "Missing",  [DIFF_ORPHAN] = "Orphan",
	[DIFF_FOREIGN] = "Foreign",  [DIFF_FIGHTING] = "Fighting",
};

static const char *const policy_names[] = {
	[DIFF_POLICY_RESPECT] = "respect",
	[DIFF_POLICY_OVERRIDE] = "override",
	[DIFF_POLICY_REPORT] = "report",
};

static const char *const change_names[] = {
	[DIFF_CHANGED] = "changed",
	[DIFF_ABSENT] = "absent",
	[DIFF_REMOVED] = "removed",
};

static const char *const actor_names[] = {
	[DIFF_ACTOR_SELF] = "self",
	[DIFF_ACTOR_PERSON] = "person",
	[DIFF_ACTOR_CONTROLLER] = "controller",
};

const char *diff_state_name(enum diff_state state)
{
	return state_names[state];
}

const char *diff_policy_name(enum diff_policy policy)
{
	return policy_names[policy];
}

int diff_policy_parse(const char *name, enum diff_policy *out)
{
	for (size_t i = 0; i < sizeof(policy_names) / sizeof(*policy_names);
	     i++) {
		if (!strcmp(name, policy_names[i])) {
			*out = (enum diff_policy)i;
			return 0;
		}
	}
	return ERR_INVALID;
}

struct diff_fight *diff_fight_new(const char *self, const char *other,
				  unsigned changes, const char *since)
{
	struct diff_fight *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->changes = changes;
	if (!(f->self = strdup(self ? self : "")) ||
	    !(f->other = strdup(other ? other : "")) ||
	    !(f->since = strdup(since ? since : ""))) {
		diff_fight_free(f);
		return NULL;
	}
	return f;
}

void diff_fight_free(struct diff_fight *fight)
{
	if (!fight)
		return;
	free(fight->self);
	free(fight->other);
	free(fight->since);
	free(fight);
}

static int cmp_keys(const void *a, const void *b)
{
	const struct diff_object *x = *(struct diff_object *const *)a;
	const struct diff_object *y = *(struct diff_object *const *)b;

	return diff_key_cmp(&x->key, &y->key);
}

int diff_compare(struct diff_report **out, const struct diff_objset *desired,
		 const struct diff_objset *live, const struct diff_schemas *reg,
		 const struct diff_options *opts, const char *revision,
		 struct err *err)
{
	static const struct diff_options defaults = DIFF_OPTIONS_INIT;
	struct diff_report *r = calloc(1, sizeof(*r));
	const struct diff_object **orphans = NULL;
	size_t norphans = 0, nmatched = 0;
	int error = 0;

	*out = NULL;
	if (!opts)
		opts = &defaults;
	if (!r)
		return err_set(err, ERR_NOMEM, "out of memory");
	r->policy = opts->policy;
	if (!(r->field_manager = strdup(opts->field_manager
						? opts->field_manager
						: "syncd")) ||
	    (revision && !(r->revision = strdup(revision))) ||
	    !(r->objects = calloc(desired->len + (live ? live->len : 0) + 1,
				  sizeof(*r->objects))) ||
	    !(orphans = calloc((live ? live->len : 0) + 1, sizeof(*orphans)))) {
		diff_report_free(r);
		free(orphans);
		return err_set(err, ERR_NOMEM, "out of memory");
	}

	for (size_t i = 0; i < desired->len; i++) {
		const struct diff_object *d = desired->items[i];
		const struct diff_object *l =
			live ? diff_objset_get(live, &d->key) : NULL;
		struct diff_object_report *rep = &r->objects[r->len];
		struct err why = ERR_INIT;
		int e;

		if (l)
			nmatched++;
		e = l && l->settled
			    ? diff_settled_report(rep, d, l, &why)
			    : diff_compare_sensitive(rep, d->json,
						     l ? l->json : NULL, reg,
						     opts, d->sensitive, &why);
		if (e < 0) {
			err_set(err, e, "%s%s%s", d->origin ? d->origin : "",
				d->origin ? ": " : "", err_first(&why));
			err_release(&why);
			if (!error)
				error = e;
			continue;
		}
		if (d->origin && !(rep->origin = strdup(d->origin))) {
			diff_object_report_release(rep);
			error = err_set(err, ERR_NOMEM, "out of memory");
			break;
		}
		r->len++;
	}

	/*
	 * Desired objects have distinct identities, so they matched as many
	 * distinct live ones: when that is all of them, none is an orphan
	 * and looking each up again would only cost time.
	 */
	for (size_t i = 0; live && nmatched < live->len && i < live->len; i++)
		if (!diff_objset_get(desired, &live->items[i]->key))
			orphans[norphans++] = live->items[i];
	qsort(orphans, norphans, sizeof(*orphans), cmp_keys);
	for (size_t i = 0; i < norphans; i++) {
		if ((error = diff_orphan_object(&r->objects[r->len],
					       orphans[i]->json, opts, err)) < 0)
			break;
		r->len++;
	}
	free(orphans);
	*out = r;
	return error;
}

void diff_report_free(struct diff_report *report)
{
	if (!report)
		return;
	for (size_t i = 0; i < report->len; i++)
		diff_object_report_release(&report->objects[i]);
	free(report->objects);
	free(report->revision);
	free(report->field_manager);
	free(report);
}

void diff_report_summary(const struct diff_report *report,
			 struct diff_summary *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < report->len; i++) {
		const struct diff_object_report *o = &report->objects[i];

		s->objects++;
		switch (o->state) {
		case DIFF_IN_SYNC:
			s->in_sync++;
			break;
		case DIFF_DRIFTED:
			s->drifted++;
			break;
		case DIFF_MISSING:
			s->missing++;
			break;
		case DIFF_ORPHAN:
			s->orphan++;
			break;
		case DIFF_FOREIGN:
			s->foreign++;
			break;
		case DIFF_FIGHTING:
			s->fighting++;
			break;
		}
		s->fields += o->nfields;
		s->ignored_fields += o->nignored;
		/* A held field counts as fighting only, even if foreign. */
		for (size_t j = 0; j < o->nfields; j++) {
			if (o->fields[j].fight)
				s->fighting_fields++;
			else if (o->fields[j].foreign)
				s->foreign_fields++;
		}
	}
}

/* A foreign field that is not held: taken back under override. */
static bool overrides_foreign(const struct diff_object_report *o)
{
	for (size_t i = 0; i < o->nfields; i++)
		if (o->fields[i].foreign && !o->fields[i].fight)
			return true;
	return false;
}

bool diff_report_has_drift(const struct diff_report *report)
{
	for (size_t i = 0; i < report->len; i++) {
		const struct diff_object_report *o = &report->objects[i];
		enum diff_state st = o->state;

		/*
		 * A Fighting object's held fields are not written: it is
		 * drift only for the foreign fields override takes back.
		 */
		if (st == DIFF_DRIFTED || st == DIFF_MISSING ||
		    st == DIFF_ORPHAN ||
		    (st == DIFF_FOREIGN &&
		     report->policy == DIFF_POLICY_OVERRIDE) ||
		    (st == DIFF_FIGHTING &&
		     report->policy == DIFF_POLICY_OVERRIDE &&
		     overrides_foreign(o)))
			return true;
	}
	return false;
}

/* --- JSON --- */

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *owner_json(const struct diff_owner *o)
{
	json_t *j = json_object();

	json_object_set_new(j, "manager", json_string(o->manager));
	json_object_set_new(j, "kind", json_string(actor_names[o->actor]));
	json_object_set_new(j, "operation", str_or_null(o->operation));
	if (o->subresource)
		json_object_set_new(j, "subresource",
				    json_string(o->subresource));
	json_object_set_new(j, "apiVersion", str_or_null(o->api_version));
	json_object_set_new(j, "time", str_or_null(o->time));
	return j;
}

static json_t *fight_json(const struct diff_fight *f)
{
	return json_pack("{s:[s,s], s:I, s:s}", "managers", f->self, f->other,
			 "changes", (json_int_t)f->changes, "since", f->since);
}

static json_t *field_json(const struct diff_field *f)
{
	json_t *j = json_object(), *owners = json_array();

	json_object_set_new(j, "path", json_string(f->path));
	json_object_set_new(j, "change", json_string(change_names[f->change]));
	json_object_set_new(j, "owner",
			    json_string(f->fight     ? "fighting"
					: f->foreign ? "foreign"
						     : "self"));
	if (f->fight)
		json_object_set_new(j, "fight", fight_json(f->fight));
	if (f->desired)
		json_object_set(j, "desired", f->desired);
	if (f->live)
		json_object_set(j, "live", f->live);
	for (size_t i = 0; i < f->nowners; i++)
		json_array_append_new(owners, owner_json(&f->owners[i]));
	json_object_set_new(j, "managers", owners);
	return j;
}

static json_t *object_json(const struct diff_object_report *o)
{
	json_t *j = json_object(), *fields = json_array();
	size_t glen;
	const char *version;

	diff_api_version_split(o->api_version, &glen, &version);
	json_object_set_new(j, "group", json_string(o->key.group));
	json_object_set_new(j, "version", json_string(version));
	json_object_set_new(j, "kind", json_string(o->key.kind));
	json_object_set_new(j, "namespace", json_string(o->key.ns));
	json_object_set_new(j, "name", json_string(o->key.name));
	json_object_set_new(j, "state", json_string(state_names[o->state]));
	if (o->origin)
		json_object_set_new(j, "origin", json_string(o->origin));
	for (size_t i = 0; i < o->nfields; i++)
		json_array_append_new(fields, field_json(&o->fields[i]));
	json_object_set_new(j, "fields", fields);
	json_object_set_new(j, "ignoredFields", json_integer((json_int_t)o->nignored));
	json_object_set_new(j, "apply", json_boolean(o->apply != NULL));
	json_object_set_new(j, "force", json_boolean(o->apply && o->force));
	if (o->nwarnings) {
		json_t *w = json_array();

		for (size_t i = 0; i < o->nwarnings; i++)
			json_array_append_new(w, json_string(o->warnings[i]));
		json_object_set_new(j, "warnings", w);
	}
	return j;
}

json_t *diff_report_head_json(const struct diff_report *report)
{
	struct diff_summary s;
	json_t *j = json_object(), *objects = json_array(), *sum;

	diff_report_summary(report, &s);
	json_object_set_new(j, "apiVersion", json_string("syncd.dev/v1"));
	json_object_set_new(j, "kind", json_string("DriftReport"));
	json_object_set_new(j, "reportVersion", json_integer(REPORT_VERSION));
	json_object_set_new(j, "revision", str_or_null(report->revision));
	json_object_set_new(j, "fieldManager",
			    json_string(report->field_manager));
	json_object_set_new(j, "policy",
			    json_string(policy_names[report->policy]));
	json_object_set_new(j, "drift", json_boolean(diff_report_has_drift(report)));
	sum = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
			"s:I}",
			"objects", (json_int_t)s.objects, "inSync",
			(json_int_t)s.in_sync, "drifted", (json_int_t)s.drifted,
			"missing", (json_int_t)s.missing, "orphan",
			(json_int_t)s.orphan, "foreign", (json_int_t)s.foreign,
			"fighting", (json_int_t)s.fighting, "fields",
			(json_int_t)s.fields, "foreignFields",
			(json_int_t)s.foreign_fields, "fightingFields",
			(json_int_t)s.fighting_fields, "ignoredFields",
			(json_int_t)s.ignored_fields);
	json_object_set_new(j, "summary", sum);
	json_object_set_new(j, "objects", objects);
	return j;
}

json_t *diff_report_object_json(const struct diff_report *report, size_t i)
{
	return object_json(&report->objects[i]);
}

json_t *diff_report_to_json(const struct diff_report *report)
{
	json_t *j = diff_report_head_json(report),
	       *objects = json_object_get(j, "objects");

	for (size_t i = 0; i < report->len; i++)
		json_array_append_new(objects, object_json(&report->objects[i]));
	return j;
}

/* --- text --- */

#define C_BOLD "\033[1m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_CYAN "\033[36m"
#define C_RESET "\033[0m"

static void owners_text(const struct diff_field *f, struct buf *out)
{
	for (size_t i = 0; i < f->nowners; i++) {
		const struct diff_owner *o = &f->owners[i];

		buf_addf(out, "%s%s (%s%s%s%s%s)", i ? ", " : "", o->manager,
			 o->operation ? o->operation : "?",
			 o->subresource ? ", /" : "",
			 o->subresource ? o->subresource : "",
			 o->time ? ", " : "", o->time ? o->time : "");
	}
}

static void field_text(const struct diff_report *r, const struct diff_field *f,
		       bool color, struct buf *out)
{
	static const char marks[] = {[DIFF_CHANGED] = '~',
				     [DIFF_ABSENT] = '+',
				     [DIFF_REMOVED] = '-'};

	buf_addf(out, "  %c %s", marks[f->change], f->path);
	if (f->change == DIFF_REMOVED) {
		buf_adds(out, ": applied earlier, no longer declared: "
			      "the apply removes it");
	} else if (f->fight) {
		/* Held by the controller: say so before whose it is. */
		buf_addf(out, ": %sfighting%s (%s vs %s, %u change%s since %s)",
			 color ? C_YELLOW : "", color ? C_RESET : "",
			 f->fight->self, f->fight->other, f->fight->changes,
			 f->fight->changes == 1 ? "" : "s", f->fight->since);
		if (f->nowners)
			buf_adds(out, ", owned by ");
		owners_text(f, out);
		buf_adds(out, "; not written");
	} else if (f->foreign) {
		buf_addf(out, ": %sforeign%s, owned by ", color ? C_YELLOW : "",
			 color ? C_RESET : "");
		owners_text(f, out);
		buf_adds(out, r->policy == DIFF_POLICY_OVERRIDE
				      ? "; taken back (policy override)"
				      : r->policy == DIFF_POLICY_RESPECT
						? "; left alone (policy respect)"
						: "");
	} else if (f->nowners) {
		bool self_only = true;

		for (size_t i = 0; i < f->nowners; i++)
			if (f->owners[i].actor != DIFF_ACTOR_SELF)
				self_only = false;
		buf_adds(out, self_only ? ": changed outside any manager's "
					  "record, owned by "
					: ": changed by ");
		owners_text(f, out);
	} else if (f->change == DIFF_ABSENT) {
		buf_adds(out, ": not set in the live object");
	} else {
		buf_adds(out, ": changed, no manager owns it");
	}
	buf_addch(out, '\n');
}

static int object_text(const struct diff_report *r,
		       const struct diff_object_report *o, bool color,
		       struct buf *out)
{
	struct buf id = BUF_INIT, a = BUF_INIT, b = BUF_INIT, la = BUF_INIT,
		   lb = BUF_INIT, d = BUF_INIT;
	int error = 0;

	diff_key_format(&o->key, &id);
	buf_addf(out, "%s%s %s%s", color ? C_BOLD : "", state_names[o->state],
		 buf_cstr(&id), color ? C_RESET : "");
	if (o->origin)
		buf_addf(out, " (%s)", o->origin);
	buf_addch(out, '\n');
	for (size_t i = 0; i < o->nfields; i++)
		field_text(r, &o->fields[i], color, out);
	for (size_t i = 0; i < o->nwarnings; i++)
		buf_addf(out, "  warning: %s\n", o->warnings[i]);
	if ((o->live_view && (error = diff_yaml_dump(o->live_view, &a)) < 0) ||
	    (o->desired_view &&
	     (error = diff_yaml_dump(o->desired_view, &b)) < 0))
		goto out;
	buf_addf(&la, "live/%s", buf_cstr(&id));
	buf_addf(&lb, "desired/%s", buf_cstr(&id));
	if ((error = diff_unified(buf_cstr(&a), a.len, buf_cstr(&b), b.len,
				  buf_cstr(&la), buf_cstr(&lb), 3, &d)) < 0)
		goto out;
	if (!color) {
		buf_add(out, buf_cstr(&d), d.len);
	} else {
		const char *p = buf_cstr(&d), *nl;

		for (; *p; p = nl + 1) {
			const char *c = *p == '+'   ? C_GREEN
					: *p == '-' ? C_RED
					: *p == '@' ? C_CYAN
						    : NULL;

			nl = strchr(p, '\n');
			if (!nl)
				nl = p + strlen(p) - 1;
			if (c && strncmp(p, "---", 3) && strncmp(p, "+++", 3))
				buf_addf(out, "%s%.*s%s\n", c, (int)(nl - p), p,
					 C_RESET);
			else
				buf_addf(out, "%.*s\n", (int)(nl - p), p);
		}
	}
out:
	buf_release(&id);
	buf_release(&a);
	buf_release(&b);
	buf_release(&la);
	buf_release(&lb);
	buf_release(&d);
	return error;
}

int diff_report_to_text(const struct diff_report *report, bool color,
			struct buf *out)
{
	struct diff_summary s;
	int error;

	for (size_t i = 0; i < report->len; i++) {
		const struct diff_object_report *o = &report->objects[i];

		if (o->state == DIFF_IN_SYNC)
			continue;
		if ((error = object_text(report, o, color, out)) < 0)
			return error;
	}
	diff_report_summary(report, &s);
	/*
	 * Fights exist only under the controller: a one-shot report keeps
	 * the line it always had.
	 */
	if (!s.fighting && !s.fighting_fields)
		return buf_addf(out,
				"%zu objects: %zu in sync, %zu drifted, %zu "
				"missing, %zu orphan, %zu foreign; %zu fields "
				"differ (%zu foreign, %zu ignored)\n",
				s.objects, s.in_sync, s.drifted, s.missing,
				s.orphan, s.foreign, s.fields, s.foreign_fields,
				s.ignored_fields);
	return buf_addf(out,
			"%zu objects: %zu in sync, %zu drifted, %zu missing, "
			"%zu orphan, %zu foreign, %zu fighting; %zu fields "
			"differ (%zu foreign, %zu fighting, %zu ignored)\n",
			s.objects, s.in_sync, s.drifted, s.missing, s.orphan,
			s.foreign, s.fighting, s.fields, s.foreign_fields,
			s.fighting_fields, s.ignored_fields);
}
