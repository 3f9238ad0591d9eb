/*
 * What the controller says an object it healed had (the DriftCorrected
 * Event's note and the "drift" of its "object written" line): the fields
 * another manager changed, with that manager; not the fields a new
 * revision changed, which only syncd owns.
 */
#include <criterion/criterion.h>

#include "controller/internal.h"

/* A writable copy of a literal (the structs hold char *). */
#define S(lit) ((char[]){lit})

static struct diff_owner self = {S("syncd"), S("Apply"), NULL, S("v1"),
				 NULL, DIFF_ACTOR_SELF};
static struct diff_owner edit = {S("kubectl-edit"), S("Update"), NULL,
				 S("v1"), NULL, DIFF_ACTOR_PERSON};
static struct diff_owner hpa = {S("kube-controller-manager"), S("Update"),
				S("scale"), S("autoscaling/v1"), NULL,
				DIFF_ACTOR_CONTROLLER};

static const char *note_of(struct diff_field *fields, size_t n, bool foreign)
{
	static char text[512];
	struct diff_object_report r = {0};
	struct buf out = BUF_INIT;

	r.state = DIFF_DRIFTED;
	r.fields = fields;
	r.nfields = n;
	ctl_drift_note(&r, foreign, &out);
	snprintf(text, sizeof(text), "%s", buf_cstr(&out));
	buf_release(&out);
	return text;
}

Test(drift_note, a_person_s_edit_names_the_manager)
{
	struct diff_field f[] = {
		{.path = S(".spec.template.spec.containers[name=\"web\"]"
			   ".image"),
		 .owners = &edit,
		 .nowners = 1},
	};

	cr_assert_str_eq(
		note_of(f, 1, false),
		".spec.template.spec.containers[name=\"web\"].image "
		"(kubectl-edit)");
}

Test(drift_note, a_new_revision_is_not_drift)
{
	/* A commit changed the value; syncd alone owns the field. */
	struct diff_field f[] = {
		{.path = S(".data.value"), .owners = &self, .nowners = 1},
		{.path = S(".data.gone"),
		 .change = DIFF_REMOVED,
		 .owners = &self,
		 .nowners = 1},
		{.path = S(".data.new"), .change = DIFF_ABSENT},
	};

	cr_assert_str_eq(note_of(f, 3, false), "");
}

Test(drift_note, only_the_fields_others_changed)
{
	struct diff_owner both[] = {self, edit};
	struct diff_field f[] = {
		{.path = S(".data.a"), .owners = &self, .nowners = 1},
		{.path = S(".data.b"), .owners = both, .nowners = 2},
		{.path = S(".spec.replicas"), .foreign = true, .owners = &hpa,
		 .nowners = 1},
	};

	/* The first owner that is not syncd is named. */
	cr_assert_str_eq(note_of(f, 3, false), ".data.b (kubectl-edit)");
	cr_assert_str_eq(note_of(f, 3, true),
			 ".spec.replicas (kube-controller-manager)");
}

Test(drift_note, fights_are_left_out_and_four_fields_are_cut)
{
	struct diff_fight fight = {0};
	struct diff_field f[] = {
		{.path = S(".a"), .owners = &edit, .nowners = 1},
		{.path = S(".b"),
		 .owners = &edit,
		 .nowners = 1,
		 .fight = &fight},
		{.path = S(".c"), .owners = &edit, .nowners = 1},
		{.path = S(".d"), .owners = &edit, .nowners = 1},
		{.path = S(".e"), .owners = &edit, .nowners = 1},
	};

	cr_assert_str_eq(note_of(f, 5, false),
			 ".a (kubectl-edit), .c (kubectl-edit), .d "
			 "(kubectl-edit), ...");
}
