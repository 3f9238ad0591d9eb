/*
 * Fields held because of a fight: the controller's hold callback decides
 * which fields syncd stops writing; the drift engine reports them with
 * the fight, leaves them out of the apply request and never forces
 * because of them.
 *
 * The live objects carry realistic managedFields: syncd's Apply entry owns
 * what it declares except the fields another manager changed since (an
 * Update moves ownership of a field to the updater).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"

#define IMAGE_PATH ".spec.template.spec.containers[name=\"web\"].image"
#define REPLICAS_PATH ".spec.replicas"
#define SINCE "2026-11-29T10:00:00Z"

static const char image_fields[] =
	"{\"f:spec\":{\"f:template\":{\"f:spec\":{\"f:containers\":"
	"{\"k:{\\\"name\\\":\\\"web\\\"}\":{\"f:image\":{}}}}}}}";
static const char replicas_fields[] = "{\"f:spec\":{\"f:replicas\":{}}}";
static const char label_fields[] =
	"{\"f:metadata\":{\"f:labels\":{\"f:tier\":{}}}}";

static json_t *J(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);

	cr_assert_not_null(j, "bad test JSON: %s", jerr.text);
	return j;
}

static json_t *desired_obj(const char *name)
{
	json_t *d = json_pack(
		"{s:s, s:s, s:{s:s, s:s}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, "
		"s:{s:[{s:s, s:s}]}}}}",
		"apiVersion", "apps/v1", "kind", "Deployment", "metadata",
		"name", name, "namespace", "default", "spec", "replicas", 2,
		"selector", "matchLabels", "app", name, "template", "metadata",
		"labels", "app", name, "spec", "containers", "name", "web",
		"image", "nginx:1.27");

	cr_assert_not_null(d);
	return d;
}

/* Another manager's entry: it owns `fields` (fieldsV1 text). */
struct other {
	const char *manager;
	const char *fields;
};

static json_t *entry(const char *manager, const char *operation,
		     json_t *fields_v1)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "manager", manager,
			 "operation", operation, "apiVersion", "apps/v1",
			 "time", "2026-11-29T10:05:00Z", "fieldsType",
			 "FieldsV1", "fieldsV1", fields_v1);
}

static struct diff_fieldset *parse_set(const char *text)
{
	struct diff_fieldset *set = NULL;
	struct err err = ERR_INIT;
	json_t *j = J(text);

	cr_assert_eq(diff_fieldset_parse(&set, j, &err), 0, "%s",
		     err_msg(&err));
	json_decref(j);
	err_release(&err);
	return set;
}

/*
 * The live object: desired with the image and replicas given, syncd's
 * Apply entry owning what desired declares (plus `syncd_extra`, fields
 * applied earlier and no longer declared; may be NULL) less what the
 * others own.
 */
static json_t *live_obj(const json_t *desired, const char *image,
			json_int_t replicas, const struct other *others,
			size_t nothers, const char *syncd_extra)
{
	const struct diff_schema *schema;
	struct diff_schemas *reg = diff_schemas_new();
	struct diff_fieldset *own = NULL, *t;
	struct err err = ERR_INIT;
	json_t *live = json_deep_copy(desired), *mf = json_array();
	json_t *spec = json_object_get(live, "spec");
	json_t *c0 = json_array_get(json_object_get(json_object_get(
		json_object_get(spec, "template"), "spec"), "containers"), 0);

	json_object_set_new(c0, "image", json_string(image));
	json_object_set_new(spec, "replicas", json_integer(replicas));
	schema = diff_schemas_lookup(reg, "apps", "Deployment");
	cr_assert_eq(diff_fieldset_of_object(&own, desired, schema, &err), 0);
	for (size_t i = 0; i < nothers; i++) {
		struct diff_fieldset *o = parse_set(others[i].fields);

		cr_assert_not_null(t = diff_fieldset_difference(own, o));
		diff_fieldset_free(own);
		own = t;
		json_array_append_new(mf, entry(others[i].manager, "Update",
						diff_fieldset_to_json(o)));
		diff_fieldset_free(o);
	}
	if (syncd_extra) {
		struct diff_fieldset *x = parse_set(syncd_extra);

		cr_assert_not_null(t = diff_fieldset_union(own, x));
		diff_fieldset_free(own);
		diff_fieldset_free(x);
		own = t;
		/* live still has what syncd applied earlier */
		json_object_set_new(json_object_get(live, "metadata"), "labels",
				    json_pack("{s:s}", "tier", "front"));
	}
	json_array_insert_new(mf, 0, entry("syncd", "Apply",
					   diff_fieldset_to_json(own)));
	json_object_set_new(json_object_get(live, "metadata"), "managedFields",
			    mf);
	diff_fieldset_free(own);
	diff_schemas_free(reg);
	err_release(&err);
	return live;
}

/* The hold callback: holds the paths listed, records every call. */
struct holder {
	const char *held[4];
	char *seen[16];
	size_t nseen;
	bool wrong_key;
};

static struct diff_fight *hold_cb(const struct diff_key *key,
				  const char *path, void *ctx)
{
	struct holder *h = ctx;

	if (strcmp(key->group, "apps") || strcmp(key->kind, "Deployment") ||
	    strcmp(key->ns, "default"))
		h->wrong_key = true;
	if (h->nseen < 16)
		h->seen[h->nseen++] = strdup(path);
	for (size_t i = 0; i < 4 && h->held[i]; i++)
		if (!strcmp(h->held[i], path))
			return diff_fight_new("syncd", "kubectl-patch", 3,
					      SINCE);
	return NULL;
}

static void holder_release(struct holder *h)
{
	for (size_t i = 0; i < h->nseen; i++)
		free(h->seen[i]);
	h->nseen = 0;
}

static bool seen(const struct holder *h, const char *path)
{
	for (size_t i = 0; i < h->nseen; i++)
		if (!strcmp(h->seen[i], path))
			return true;
	return false;
}

static const struct diff_field *field(const struct diff_object_report *rep,
				      const char *path)
{
	for (size_t i = 0; i < rep->nfields; i++)
		if (!strcmp(rep->fields[i].path, path))
			return &rep->fields[i];
	return NULL;
}

static void compare(struct diff_object_report *rep, const json_t *desired,
		    const json_t *live, const struct diff_options *opts)
{
	struct diff_schemas *reg = diff_schemas_new();
	struct err err = ERR_INIT;

	cr_assert_eq(diff_compare_object(rep, desired, live, reg, opts, &err),
		     0, "%s", err_msg(&err));
	diff_schemas_free(reg);
	err_release(&err);
}

static const json_t *apply_image(const json_t *apply)
{
	return json_object_get(
		json_array_get(json_object_get(json_object_get(json_object_get(
			json_object_get(apply, "spec"), "template"), "spec"),
			"containers"), 0), "image");
}

static const struct other patched_image[] = {
	{"kubectl-patch", image_fields},
};

static const struct other patched_image_edited_replicas[] = {
	{"kubectl-patch", image_fields},
	{"kubectl-edit", replicas_fields},
};

Test(fight, held_field_only_is_fighting)
{
	struct diff_options opts = DIFF_OPTIONS_INIT;
	struct holder h = {.held = {IMAGE_PATH}};
	struct diff_object_report rep;
	const struct diff_field *f;
	json_t *d = desired_obj("web");
	json_t *l = live_obj(d, "nginx:1.26-patched", 2, patched_image, 1,
			     NULL);
	const char *v;

	opts.hold = hold_cb;
	opts.hold_ctx = &h;
	compare(&rep, d, l, &opts);
	cr_assert_eq(rep.state, DIFF_FIGHTING, "state %s",
		     diff_state_name(rep.state));
	cr_assert_str_eq(diff_state_name(rep.state), "Fighting");
	cr_assert_eq(rep.nfields, 1);
	cr_assert_not_null(f = field(&rep, IMAGE_PATH));
	cr_assert_not_null(f->fight);
	cr_assert_str_eq(f->fight->self, "syncd");
	cr_assert_str_eq(f->fight->other, "kubectl-patch");
	cr_assert_eq(f->fight->changes, 3);
	cr_assert_str_eq(f->fight->since, SINCE);
	cr_assert_not(f->foreign);
	cr_assert_eq(f->nowners, 1);
	cr_assert_str_eq(f->owners[0].manager, "kubectl-patch");
	/* syncd's ownership is already all but the image: nothing to send */
	cr_assert_null(rep.apply);
	cr_assert_not(rep.force);
	/* the after-apply view keeps the live image: it is not written */
	v = json_string_value(apply_image(rep.desired_view));
	cr_assert_str_eq(v, "nginx:1.26-patched");
	cr_assert_eq(h.nseen, 1);
	cr_assert_str_eq(h.seen[0], IMAGE_PATH);
	cr_assert_not(h.wrong_key);
	diff_object_report_release(&rep);
	holder_release(&h);

	/* The same object without the hold: Drifted, healed with force. */
	opts.hold = NULL;
	compare(&rep, d, l, &opts);
	cr_assert_eq(rep.state, DIFF_DRIFTED);
	cr_assert_null(field(&rep, IMAGE_PATH)->fight);
	cr_assert_not_null(rep.apply);
	cr_assert_str_eq(json_string_value(apply_image(rep.apply)),
			 "nginx:1.27");
	cr_assert(rep.force);
	diff_object_report_release(&rep);
	json_decref(d);
	json_decref(l);
}

Test(fight, held_field_with_other_drift)
{
	struct diff_options opts = DIFF_OPTIONS_INIT;
	struct holder h = {.held = {IMAGE_PATH}};
	struct diff_object_report rep;
	const struct diff_field *img, *rep_f;
	json_t *d = desired_obj("web");
	json_t *l = live_obj(d, "nginx:1.26-patched", 5,
			     patched_image_edited_replicas, 2, NULL);
	json_t *c0;

	opts.hold = hold_cb;
	opts.hold_ctx = &h;
	compare(&rep, d, l, &opts);
	cr_assert_eq(rep.state, DIFF_DRIFTED, "state %s",
		     diff_state_name(rep.state));
	cr_assert_eq(rep.nfields, 2);
	cr_assert_not_null(img = field(&rep, IMAGE_PATH));
	cr_assert_not_null(rep_f = field(&rep, REPLICAS_PATH));
	cr_assert_not_null(img->fight);
	cr_assert_null(rep_f->fight);
	/* both were asked, only the image is held */
	cr_assert_eq(h.nseen, 2);
	cr_assert(seen(&h, IMAGE_PATH));
	cr_assert(seen(&h, REPLICAS_PATH));
	/* the request heals replicas and leaves the image out */
	cr_assert_not_null(rep.apply);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(rep.apply, "spec"), "replicas")),
		     2);
	c0 = json_array_get(json_object_get(json_object_get(json_object_get(
		json_object_get(rep.apply, "spec"), "template"), "spec"),
		"containers"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(c0, "name")), "web");
	cr_assert_null(json_object_get(c0, "image"));
	/* force: replicas is kubectl-edit's */
	cr_assert(rep.force);
	diff_object_report_release(&rep);
	holder_release(&h);
	json_decref(d);
	json_decref(l);
}

Test(fight, held_field_never_forces)
{
	/*
	 * Replicas drifted with no other owner (syncd lost nothing): the
	 * request needs no force, and the held image, which would, adds
	 * none.
	 */
	struct diff_options opts = DIFF_OPTIONS_INIT;
	struct holder h = {.held = {IMAGE_PATH}};
	struct diff_object_report rep;
	json_t *d = desired_obj("web");
	json_t *l = live_obj(d, "nginx:1.26-patched", 5, patched_image, 1,
			     NULL);

	opts.hold = hold_cb;
	opts.hold_ctx = &h;
	compare(&rep, d, l, &opts);
	cr_assert_eq(rep.state, DIFF_DRIFTED);
	cr_assert_not_null(field(&rep, IMAGE_PATH)->fight);
	cr_assert_not_null(rep.apply);
	cr_assert_null(apply_image(rep.apply));
	cr_assert_not(rep.force);
	diff_object_report_release(&rep);
	holder_release(&h);
	json_decref(d);
	json_decref(l);
}

Test(fight, callback_only_for_fields_syncd_writes)
{
	static const struct other hpa[] = {
		{"kubectl-patch", image_fields},
		{"hpa-controller", replicas_fields},
	};
	struct diff_options opts = DIFF_OPTIONS_INIT;
	struct holder h = {.held = {NULL}};
	struct diff_object_report rep;
	json_t *d = desired_obj("web");
	/* syncd applied a label earlier and no longer declares it */
	json_t *l = live_obj(d, "nginx:1.26-patched", 5, hpa, 2, label_fields);

	opts.hold = hold_cb;
	opts.hold_ctx = &h;

	/* respect: the foreign replicas is left alone, never asked */
	compare(&rep, d, l, &opts);
	cr_assert_not_null(field(&rep, ".metadata.labels.tier"));
	cr_assert_eq(field(&rep, ".metadata.labels.tier")->change,
		     DIFF_REMOVED);
	cr_assert(field(&rep, REPLICAS_PATH)->foreign);
	cr_assert_eq(h.nseen, 1, "%zu calls", h.nseen);
	cr_assert_str_eq(h.seen[0], IMAGE_PATH);
	cr_assert_eq(rep.state, DIFF_DRIFTED);
	diff_object_report_release(&rep);
	holder_release(&h);

	/* override: syncd takes replicas back, so it is asked too */
	opts.policy = DIFF_POLICY_OVERRIDE;
	compare(&rep, d, l, &opts);
	cr_assert_eq(h.nseen, 2, "%zu calls", h.nseen);
	cr_assert(seen(&h, IMAGE_PATH));
	cr_assert(seen(&h, REPLICAS_PATH));
	cr_assert_not(seen(&h, ".metadata.labels.tier"));
	diff_object_report_release(&rep);
	holder_release(&h);

	/* report: nothing is written, but fights are still shown */
	opts.policy = DIFF_POLICY_REPORT;
	h.held[0] = IMAGE_PATH;
	compare(&rep, d, l, &opts);
	cr_assert_eq(h.nseen, 1);
	cr_assert_not_null(field(&rep, IMAGE_PATH)->fight);
	cr_assert_null(rep.apply);
	diff_object_report_release(&rep);
	holder_release(&h);
	json_decref(d);
	json_decref(l);
}

Test(fight, held_foreign_field_under_override)
{
	static const struct other hpa[] = {
		{"hpa-controller", replicas_fields},
	};
	struct diff_options opts = DIFF_OPTIONS_INIT;
	struct holder h = {.held = {REPLICAS_PATH}};
	struct diff_objset ds = DIFF_OBJSET_INIT, ls = DIFF_OBJSET_INIT;
	struct diff_object *o;
	struct diff_schemas *reg = diff_schemas_new();
	struct diff_report *report = NULL;
	struct err err = ERR_INIT;
	const struct diff_field *f;
	json_t *d = desired_obj("web");
	json_t *l = live_obj(d, "nginx:1.27", 5, hpa, 1, NULL);

	opts.policy = DIFF_POLICY_OVERRIDE;
	opts.hold = hold_cb;
	opts.hold_ctx = &h;
	cr_assert_eq(diff_object_new(&o, d, NULL, &err), 0);
	cr_assert_eq(diff_objset_add(&ds, o, &err), 0);
	cr_assert_eq(diff_object_new(&o, l, NULL, &err), 0);
	cr_assert_eq(diff_objset_add(&ls, o, &err), 0);
	cr_assert_eq(diff_compare(&report, &ds, &ls, reg, &opts, NULL, &err),
		     0, "%s", err_msg(&err));
	cr_assert_eq(report->len, 1);
	cr_assert_eq(report->objects[0].state, DIFF_FIGHTING);
	cr_assert_not_null(f = field(&report->objects[0], REPLICAS_PATH));
	cr_assert(f->foreign);
	cr_assert_not_null(f->fight);
	cr_assert_null(report->objects[0].apply);
	/* override takes foreign fields back, but not a held one */
	cr_assert_not(diff_report_has_drift(report));
	diff_report_free(report);
	diff_objset_release(&ds);
	diff_objset_release(&ls);
	diff_schemas_free(reg);
	holder_release(&h);
	err_release(&err);
	json_decref(d);
	json_decref(l);
}

/* A report of `n` Deployments: web (image held) and api (image held,
 * replicas edited). */
static struct diff_report *two_objects(struct holder *h, size_t n)
{
	struct diff_options opts = DIFF_OPTIONS_INIT;
	struct diff_objset ds = DIFF_OBJSET_INIT, ls = DIFF_OBJSET_INIT;
	struct diff_schemas *reg = diff_schemas_new();
	struct diff_report *report = NULL;
	struct err err = ERR_INIT;
	const char *names[] = {"web", "api"};

	opts.hold = hold_cb;
	opts.hold_ctx = h;
	for (size_t i = 0; i < n; i++) {
		struct diff_object *o;
		json_t *d = desired_obj(names[i]);
		json_t *l = i ? live_obj(d, "nginx:1.26-patched", 5,
					 patched_image_edited_replicas, 2, NULL)
			      : live_obj(d, "nginx:1.26-patched", 2,
					 patched_image, 1, NULL);

		cr_assert_eq(diff_object_new(&o, d, "x.yaml:1", &err), 0);
		cr_assert_eq(diff_objset_add(&ds, o, &err), 0);
		cr_assert_eq(diff_object_new(&o, l, NULL, &err), 0);
		cr_assert_eq(diff_objset_add(&ls, o, &err), 0);
		json_decref(d);
		json_decref(l);
	}
	cr_assert_eq(diff_compare(&report, &ds, &ls, reg, &opts, "abc", &err),
		     0, "%s", err_msg(&err));
	diff_objset_release(&ds);
	diff_objset_release(&ls);
	diff_schemas_free(reg);
	err_release(&err);
	return report;
}

Test(fight, summary_counts)
{
	struct holder h = {.held = {IMAGE_PATH}};
	struct diff_report *report = two_objects(&h, 2);
	struct diff_summary s;

	diff_report_summary(report, &s);
	cr_assert_eq(s.objects, 2);
	cr_assert_eq(s.fighting, 1);
	cr_assert_eq(s.drifted, 1);
	cr_assert_eq(s.foreign, 0);
	cr_assert_eq(s.fields, 3);
	cr_assert_eq(s.fighting_fields, 2);
	cr_assert_eq(s.foreign_fields, 0);
	cr_assert(diff_report_has_drift(report));
	diff_report_free(report);
	holder_release(&h);
}

Test(fight, fighting_alone_is_not_drift)
{
	struct holder h = {.held = {IMAGE_PATH}};
	struct diff_report *report = two_objects(&h, 1);
	json_t *j;

	cr_assert_eq(report->objects[0].state, DIFF_FIGHTING);
	cr_assert_not(diff_report_has_drift(report));
	j = diff_report_to_json(report);
	cr_assert(json_is_false(json_object_get(j, "drift")));
	json_decref(j);
	diff_report_free(report);
	holder_release(&h);
}

Test(fight, json_shape)
{
	struct holder h = {.held = {IMAGE_PATH}};
	struct diff_report *report = two_objects(&h, 2);
	json_t *j = diff_report_to_json(report), *sum, *web, *api, *f, *fight;
	json_t *m;

	cr_assert_not_null(j);
	sum = json_object_get(j, "summary");
	cr_assert_eq(json_integer_value(json_object_get(sum, "fighting")), 1);
	cr_assert_eq(json_integer_value(json_object_get(sum, "fightingFields")),
		     2);
	cr_assert_eq(json_integer_value(json_object_get(sum, "foreign")), 0);
	cr_assert_eq(json_integer_value(json_object_get(sum, "drifted")), 1);
	cr_assert(json_is_true(json_object_get(j, "drift")));

	web = json_array_get(json_object_get(j, "objects"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(web, "name")),
			 "web");
	cr_assert_str_eq(json_string_value(json_object_get(web, "state")),
			 "Fighting");
	cr_assert(json_is_false(json_object_get(web, "apply")));
	cr_assert(json_is_false(json_object_get(web, "force")));
	f = json_array_get(json_object_get(web, "fields"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(f, "path")),
			 IMAGE_PATH);
	cr_assert_str_eq(json_string_value(json_object_get(f, "owner")),
			 "fighting");
	cr_assert_not_null(fight = json_object_get(f, "fight"));
	m = json_object_get(fight, "managers");
	cr_assert_eq(json_array_size(m), 2);
	cr_assert_str_eq(json_string_value(json_array_get(m, 0)), "syncd");
	cr_assert_str_eq(json_string_value(json_array_get(m, 1)),
			 "kubectl-patch");
	cr_assert_eq(json_integer_value(json_object_get(fight, "changes")), 3);
	cr_assert_str_eq(json_string_value(json_object_get(fight, "since")),
			 SINCE);
	cr_assert_eq(json_object_size(fight), 3);

	api = json_array_get(json_object_get(j, "objects"), 1);
	cr_assert_str_eq(json_string_value(json_object_get(api, "state")),
			 "Drifted");
	cr_assert(json_is_true(json_object_get(api, "apply")));
	cr_assert(json_is_true(json_object_get(api, "force")));
	for (size_t i = 0; i < 2; i++) {
		const char *path, *owner;

		f = json_array_get(json_object_get(api, "fields"), i);
		path = json_string_value(json_object_get(f, "path"));
		owner = json_string_value(json_object_get(f, "owner"));
		if (!strcmp(path, REPLICAS_PATH)) {
			cr_assert_str_eq(owner, "self");
			cr_assert_null(json_object_get(f, "fight"));
		} else {
			cr_assert_str_eq(owner, "fighting");
			cr_assert_not_null(json_object_get(f, "fight"));
		}
	}
	json_decref(j);
	diff_report_free(report);
	holder_release(&h);
}

Test(fight, text_rendering)
{
	struct holder h = {.held = {IMAGE_PATH}};
	struct diff_report *report = two_objects(&h, 1);
	struct buf out = BUF_INIT;
	const char *t;

	cr_assert_eq(diff_report_to_text(report, false, &out), 0);
	t = buf_cstr(&out);
	cr_assert_not_null(strstr(t, "Fighting Deployment.apps default/web"),
			   "%s", t);
	cr_assert_not_null(
		strstr(t, "~ " IMAGE_PATH ": fighting (syncd vs kubectl-patch, "
			  "3 changes since " SINCE "), owned by kubectl-patch "
			  "(Update, 2026-11-29T10:05:00Z); not written\n"),
		"%s", t);
	/* the diff does not pretend the image is written */
	cr_assert_null(strstr(t, "+        image: nginx:1.27"), "%s", t);
	cr_assert_not_null(strstr(t, "1 fighting; 1 fields differ (0 foreign, "
				     "1 fighting, 0 ignored)"),
			   "%s", t);
	buf_release(&out);
	diff_report_free(report);
	holder_release(&h);
}

Test(fight, fight_new_and_free)
{
	struct diff_fight *f = diff_fight_new("syncd", "other", 4, SINCE);

	cr_assert_not_null(f);
	cr_assert_str_eq(f->self, "syncd");
	cr_assert_str_eq(f->other, "other");
	cr_assert_eq(f->changes, 4);
	cr_assert_str_eq(f->since, SINCE);
	diff_fight_free(f);
	diff_fight_free(NULL);
}
