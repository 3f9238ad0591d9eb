#include <criterion/criterion.h>

#include "kube/kube.h"

/*
 * The limits of the event recorder with a fake clock and no client
 * (events are counted, not sent).
 */
static uint64_t fake_now = 1000;

static uint64_t fake_clock(void *ctx)
{
	(void)ctx;
	return fake_now;
}

static json_t *object(const char *name, const char *uid)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion",
			      "apps/v1", "kind", "Deployment", "metadata",
			      "name", name, "namespace", "default");

	if (uid)
		json_object_set_new(json_object_get(o, "metadata"), "uid",
				    json_string(uid));
	return o;
}

static struct kube_events *recorder(void)
{
	struct kube_events_options o = {0};

	struct kube_events *ev;

	o.now_ms = fake_clock;
	fake_now = 1000;
	cr_assert_eq(kube_events_new(&ev, &o, NULL), 0);
	return ev;
}

Test(events, the_same_event_again_is_dropped_for_ten_minutes)
{
	struct kube_events *ev = recorder();
	json_t *web = object("web", "u1");
	uint64_t sent, dropped;

	cr_assert_eq(kube_events_emit(ev, web, "Warning", "FieldFight", "Sync",
				 "image"),
		     1);
	cr_assert_eq(kube_events_emit(ev, web, "Warning", "FieldFight", "Sync",
				 "image"),
		     0);
	/* Another note or reason is another event. */
	cr_assert_eq(kube_events_emit(ev, web, "Warning", "FieldFight", "Sync",
				 "replicas"),
		     1);
	cr_assert_eq(kube_events_emit(ev, web, "Normal", "DriftCorrected", "Sync",
				 "image"),
		     1);
	fake_now += 10 * 60 * 1000 - 1;
	cr_assert_eq(kube_events_emit(ev, web, "Warning", "FieldFight", "Sync",
				 "image"),
		     0);
	fake_now += 1;
	cr_assert_eq(kube_events_emit(ev, web, "Warning", "FieldFight", "Sync",
				 "image"),
		     1);
	kube_events_counts(ev, &sent, &dropped);
	cr_assert_eq(sent, 4);
	cr_assert_eq(dropped, 2);
	json_decref(web);
	kube_events_free(ev);
}

Test(events, each_object_has_a_burst_of_25_refilled_every_5_minutes)
{
	struct kube_events *ev = recorder();
	json_t *web = object("web", NULL), *db = object("db", NULL);
	char note[16];
	int i;

	for (i = 0; i < 25; i++) {
		snprintf(note, sizeof(note), "n%d", i);
		cr_assert_eq(kube_events_emit(ev, web, "Normal", "R", "A", note), 1);
	}
	cr_assert_eq(kube_events_emit(ev, web, "Normal", "R", "A", "one more"), 0);
	/* Another object has its own bucket. */
	cr_assert_eq(kube_events_emit(ev, db, "Normal", "R", "A", "n0"), 1);
	fake_now += 5 * 60 * 1000;
	cr_assert_eq(kube_events_emit(ev, web, "Normal", "R", "A", "later"), 1);
	cr_assert_eq(kube_events_emit(ev, web, "Normal", "R", "A", "later 2"), 0);
	json_decref(web);
	json_decref(db);
	kube_events_free(ev);
}

Test(events, all_objects_share_a_global_limit)
{
	struct kube_events *ev = recorder();
	char name[16];
	int sent = 0;

	for (int i = 0; i < 150; i++) {
		json_t *o;

		snprintf(name, sizeof(name), "o%d", i);
		o = object(name, NULL);
		sent += kube_events_emit(ev, o, "Normal", "R", "A", "x");
		json_decref(o);
	}
	cr_assert_eq(sent, 100);
	/* 10 per second come back. */
	fake_now += 1000;
	for (int i = 0; i < 20; i++) {
		json_t *o;

		snprintf(name, sizeof(name), "p%d", i);
		o = object(name, NULL);
		sent += kube_events_emit(ev, o, "Normal", "R", "A", "x");
		json_decref(o);
	}
	cr_assert_eq(sent, 110);
	kube_events_free(ev);
}
