#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"
#include "controller/fights.h"

/*
 * Fight detection on hand-made reports: one Deployment whose image field
 * differs, owned by a manager of our choice. Time is passed in, in
 * milliseconds; the window is 10 minutes and 3 changes make a fight.
 */
#define MIN (60u * 1000u)
#define IMAGE ".spec.template.spec.containers[name=\"web\"].image"

static struct fights *f;
static int started, ended;
static char last_other[64];
static unsigned last_changes;

static void on_notify(bool start, const struct diff_key *key,
		      const char *path, const char *other, unsigned changes,
		      void *ctx)
{
	cr_assert_eq(ctx, &started);
	cr_assert_str_eq(key->name, "web");
	cr_assert_str_eq(path, IMAGE);
	snprintf(last_other, sizeof(last_other), "%s", other);
	last_changes = changes;
	if (start)
		started++;
	else
		ended++;
}

static void setup(void)
{
	struct fights_options o = {"syncd", 3, 10 * MIN, on_notify, &started};

	started = ended = 0;
	cr_assert_eq(fights_new(&f, &o, NULL), 0);
	cr_assert(f);
}

static void teardown(void)
{
	fights_free(f);
}

/*
 * A report with the Deployment and, when `manager` is not NULL, its image
 * differing and owned by `manager` (actor as given); `foreign` marks the
 * field as a controller's; `policy` is the report's.
 */
static struct diff_report *report(const char *manager, enum diff_actor actor,
				  bool foreign, enum diff_policy policy)
{
	struct diff_report *r = calloc(1, sizeof(*r));
	struct diff_object_report *o;
	struct diff_field *fd;

	cr_assert(r);
	r->policy = policy;
	r->len = 1;
	r->objects = o = calloc(1, sizeof(*o));
	cr_assert(o);
	cr_assert_eq(diff_key_init(&o->key, "apps", "Deployment", "default",
				   "web"),
		     0);
	o->state = DIFF_IN_SYNC;
	if (!manager)
		return r;
	o->state = DIFF_DRIFTED;
	o->nfields = 1;
	o->fields = fd = calloc(1, sizeof(*fd));
	cr_assert(fd);
	fd->path = strdup(IMAGE);
	fd->change = DIFF_CHANGED;
	fd->foreign = foreign;
	fd->nowners = 1;
	fd->owners = calloc(1, sizeof(*fd->owners));
	cr_assert(fd->owners);
	fd->owners[0].manager = strdup(manager);
	fd->owners[0].operation = strdup("Update");
	fd->owners[0].actor = actor;
	return r;
}

/* Observe a report at `now` and free it; returns fights started. */
static unsigned observe(const char *manager, uint64_t now)
{
	struct diff_report *r =
		report(manager, DIFF_ACTOR_PERSON, false, DIFF_POLICY_RESPECT);
	unsigned n = fights_observe(f, r, now);

	diff_report_free(r);
	return n;
}

static void write_it(void)
{
	struct diff_key k;

	cr_assert_eq(diff_key_init(&k, "apps", "Deployment", "default", "web"),
		     0);
	fights_written(f, &k);
	diff_key_release(&k);
}

/* Whether the image is held now (and the fight's details when it is). */
static bool held(const char *other, unsigned changes)
{
	struct diff_key k;
	struct diff_fight *fight;

	cr_assert_eq(diff_key_init(&k, "apps", "Deployment", "default", "web"),
		     0);
	fight = fights_hold(&k, IMAGE, f);
	diff_key_release(&k);
	if (!fight)
		return false;
	cr_assert_str_eq(fight->self, "syncd");
	cr_assert_str_eq(fight->other, other);
	cr_assert_eq(fight->changes, changes);
	cr_assert(fight->since && strlen(fight->since) == 20, "%s",
		  fight->since);
	diff_fight_free(fight);
	return true;
}

TestSuite(fights, .init = setup, .fini = teardown);

Test(fights, three_changes_back_after_writes_make_a_fight)
{
	cr_assert_eq(observe("kubectl-patch", 0), 0);
	write_it();
	cr_assert_eq(observe("kubectl-patch", 1000), 0);
	write_it();
	cr_assert_not(held("kubectl-patch", 0));
	cr_assert_eq(observe("kubectl-patch", 2000), 1);
	cr_assert_eq(started, 1);
	cr_assert_str_eq(last_other, "kubectl-patch");
	cr_assert_eq(last_changes, 3);
	cr_assert(held("kubectl-patch", 3));
	cr_assert_eq(fights_count(f), 1);
	/* Held fields are not counted again, and a write does not count. */
	write_it();
	cr_assert_eq(observe("kubectl-patch", 3000), 0);
	cr_assert_eq(started, 1);
	cr_assert(held("kubectl-patch", 3));
}

Test(fights, the_same_change_seen_again_counts_once)
{
	/* Resyncs that see one edit again, with no write between: one. */
	for (uint64_t t = 0; t < 10; t++)
		cr_assert_eq(observe("kubectl-edit", t * 1000), 0);
	write_it();
	cr_assert_eq(observe("kubectl-edit", 11000), 0);
	cr_assert_eq(fights_count(f), 0);
	cr_assert_not(held("kubectl-edit", 0));
}

Test(fights, passes_in_sync_between_changes_do_not_reset_the_count)
{
	/* A fighter changes it back between passes that see it in sync. */
	cr_assert_eq(observe("kubectl-patch", 0), 0);
	write_it();
	cr_assert_eq(observe(NULL, 500), 0);
	cr_assert_eq(observe("kubectl-patch", 1000), 0);
	write_it();
	cr_assert_eq(observe(NULL, 1500), 0);
	cr_assert_eq(observe("kubectl-patch", 2000), 1);
}

Test(fights, changes_spread_beyond_the_window_are_no_fight)
{
	cr_assert_eq(observe("kubectl-edit", 0), 0);
	write_it();
	cr_assert_eq(observe("kubectl-edit", 6 * MIN), 0);
	write_it();
	cr_assert_eq(observe("kubectl-edit", 12 * MIN), 0);
	write_it();
	cr_assert_eq(observe("kubectl-edit", 18 * MIN), 0);
	cr_assert_eq(started, 0);
}

Test(fights, another_manager_starts_the_count_over)
{
	cr_assert_eq(observe("kubectl-patch", 0), 0);
	write_it();
	cr_assert_eq(observe("kubectl-patch", 1000), 0);
	write_it();
	cr_assert_eq(observe("kubectl-edit", 2000), 0);
	write_it();
	cr_assert_eq(observe("kubectl-edit", 3000), 0);
	write_it();
	cr_assert_eq(observe("kubectl-edit", 4000), 1);
	cr_assert(held("kubectl-edit", 3));
}

static void fight_now(void)
{
	cr_assert_eq(observe("kubectl-patch", 0), 0);
	write_it();
	cr_assert_eq(observe("kubectl-patch", 1000), 0);
	write_it();
	cr_assert_eq(observe("kubectl-patch", 2000), 1);
}

Test(fights, ends_when_the_field_no_longer_differs)
{
	fight_now();
	cr_assert_eq(observe(NULL, 3000), 1);
	cr_assert_eq(ended, 1);
	cr_assert_eq(fights_next_end_ms(f, 3000), 0);
	cr_assert_not(held("kubectl-patch", 0));
	cr_assert_eq(fights_count(f), 0);
}

Test(fights, ends_when_another_manager_owns_the_field)
{
	fight_now();
	cr_assert_eq(observe("kubectl-edit", 3000), 1);
	cr_assert_eq(ended, 1);
	cr_assert_not(held("kubectl-patch", 0));
}

Test(fights, ends_after_the_window_and_starts_again_if_changed_back)
{
	fight_now();
	cr_assert_eq(fights_next_end_ms(f, 3000), 10 * MIN - 1000);
	cr_assert_eq(fights_next_end_ms(f, 2000 + 20 * MIN), 1);
	/* Still held inside the window. */
	cr_assert_eq(observe("kubectl-patch", 2000 + 10 * MIN - 1), 0);
	cr_assert(held("kubectl-patch", 3));
	/* The window passed: written once more. */
	cr_assert_eq(observe("kubectl-patch", 2000 + 10 * MIN), 1);
	cr_assert_eq(ended, 1);
	cr_assert_not(held("kubectl-patch", 0));
	/* A fighter that goes on: three more changes back hold it again. */
	write_it();
	cr_assert_eq(observe("kubectl-patch", 2001 + 10 * MIN), 0);
	write_it();
	cr_assert_eq(observe("kubectl-patch", 2002 + 10 * MIN), 0);
	write_it();
	cr_assert_eq(observe("kubectl-patch", 2003 + 10 * MIN), 1);
	cr_assert_eq(started, 2);
}

Test(fights, foreign_fields_left_alone_are_not_counted)
{
	for (uint64_t t = 0; t < 5; t++) {
		struct diff_report *r =
			report("kube-controller-manager",
			       DIFF_ACTOR_CONTROLLER, true,
			       DIFF_POLICY_RESPECT);

		cr_assert_eq(fights_observe(f, r, t * 1000), 0);
		diff_report_free(r);
		write_it();
	}
	cr_assert_eq(started, 0);
}

Test(fights, foreign_fields_taken_under_override_can_fight)
{
	unsigned n = 0;

	for (uint64_t t = 0; t < 3; t++) {
		struct diff_report *r =
			report("kube-controller-manager",
			       DIFF_ACTOR_CONTROLLER, true,
			       DIFF_POLICY_OVERRIDE);

		n += fights_observe(f, r, t * 1000);
		diff_report_free(r);
		write_it();
	}
	cr_assert_eq(n, 1);
	cr_assert(held("kube-controller-manager", 3));
}

Test(fights, a_field_nobody_else_owns_is_no_fight)
{
	for (uint64_t t = 0; t < 5; t++) {
		struct diff_report *r =
			report("syncd", DIFF_ACTOR_SELF, false,
			       DIFF_POLICY_RESPECT);

		cr_assert_eq(fights_observe(f, r, t * 1000), 0);
		diff_report_free(r);
		write_it();
	}
	cr_assert_eq(fights_count(f), 0);
}

Test(fights, zero_changes_never_fights)
{
	struct fights_options o = {"syncd", 0, 10 * MIN, NULL, NULL};

	fights_free(f);
	cr_assert_eq(fights_new(&f, &o, NULL), 0);
	cr_assert(f);
	for (uint64_t t = 0; t < 10; t++) {
		cr_assert_eq(observe("kubectl-patch", t * 1000), 0);
		write_it();
	}
	cr_assert_eq(fights_count(f), 0);
}
