#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "app/app.h"

static uint64_t key_of(const char *ns, const char *name)
{
	return app_memo_key("apps", "Deployment", ns, strlen(ns), name,
			    strlen(name));
}

static uint64_t version_of(const char *uid, const char *rv)
{
	return app_memo_version(uid, strlen(uid), rv, strlen(rv));
}

Test(memo, a_verdict_holds_for_its_version_only)
{
	struct app_memo *m = app_memo_new();
	char waiting[] = "waiting for rollout";
	struct health h = {HEALTH_PROGRESSING, waiting}, got;
	size_t ignored = 0;

	cr_assert_not_null(m);
	cr_assert_eq(app_memo_begin(m, "render-1"), 0);
	cr_assert_eq(app_memo_put(m, key_of("ns", "web"), version_of("u1", "7"),
				  3, &h),
		     0);
	cr_assert_eq(app_memo_get(m, key_of("ns", "web"), version_of("u1", "7"),
				  &ignored, &got),
		     1);
	cr_expect_eq(ignored, 3);
	cr_expect_eq(got.state, HEALTH_PROGRESSING);
	cr_expect_str_eq(got.reason, "waiting for rollout");
	health_release(&got);
	/* Another resourceVersion, another uid (deleted and made again). */
	cr_expect_eq(app_memo_get(m, key_of("ns", "web"), version_of("u1", "8"),
				  &ignored, &got),
		     0);
	cr_expect_eq(app_memo_get(m, key_of("ns", "web"), version_of("u2", "7"),
				  &ignored, &got),
		     0);
	/* Another object; the string pieces do not run into each other. */
	cr_expect_eq(app_memo_get(m, key_of("nsw", "eb"), version_of("u1", "7"),
				  &ignored, &got),
		     0);
	cr_expect_neq(version_of("u17", ""), version_of("u1", "7"));
	/* A newer verdict replaces the older one. */
	h.state = HEALTH_HEALTHY;
	h.reason = NULL;
	cr_assert_eq(app_memo_put(m, key_of("ns", "web"), version_of("u1", "8"),
				  0, &h),
		     0);
	cr_expect_eq(app_memo_len(m), 1);
	cr_expect_eq(app_memo_get(m, key_of("ns", "web"), version_of("u1", "7"),
				  &ignored, &got),
		     0);
	cr_expect_eq(app_memo_get(m, key_of("ns", "web"), version_of("u1", "8"),
				  &ignored, &got),
		     1);
	cr_expect_eq(got.state, HEALTH_HEALTHY);
	cr_expect_null(got.reason);
	app_memo_free(m);
}

Test(memo, another_basis_forgets_every_verdict)
{
	struct app_memo *m = app_memo_new();
	struct health h = {HEALTH_HEALTHY, NULL}, got;
	size_t ignored;

	cr_assert_eq(app_memo_begin(m, "render-1"), 0);
	app_memo_put(m, key_of("ns", "a"), version_of("u", "1"), 0, &h);
	cr_assert_eq(app_memo_begin(m, "render-1"), 0); /* the same: kept */
	cr_expect_eq(app_memo_len(m), 1);
	cr_assert_eq(app_memo_begin(m, "render-2"), 0);
	cr_expect_eq(app_memo_len(m), 0);
	cr_expect_eq(app_memo_get(m, key_of("ns", "a"), version_of("u", "1"),
				  &ignored, &got),
		     0);
	app_memo_put(m, key_of("ns", "a"), version_of("u", "1"), 0, &h);
	app_memo_forget(m);
	cr_expect_eq(app_memo_len(m), 0);
	cr_expect_eq(app_memo_len(NULL), 0);
	cr_expect_eq(app_memo_get(NULL, 1, 1, &ignored, &got), 0);
	app_memo_free(m);
	app_memo_free(NULL);
}

Test(memo, many_verdicts_and_reasons)
{
	struct app_memo *m = app_memo_new();
	char name[32], reason[32];
	size_t ignored;
	struct health got;

	cr_assert_eq(app_memo_begin(m, "b"), 0);
	for (int i = 0; i < 10000; i++) {
		struct health h = {HEALTH_DEGRADED, reason};

		snprintf(name, sizeof(name), "obj-%d", i);
		snprintf(reason, sizeof(reason), "reason %d", i % 100);
		cr_assert_eq(app_memo_put(m, key_of("ns", name),
					  version_of(name, "1"), (size_t)i, &h),
			     0);
	}
	/* 64 distinct reasons are kept; verdicts of the others are not. */
	cr_expect_eq(app_memo_len(m), 10000 / 100 * 64);
	for (int i = 0; i < 10000; i++) {
		int r;

		snprintf(name, sizeof(name), "obj-%d", i);
		r = app_memo_get(m, key_of("ns", name), version_of(name, "1"),
				 &ignored, &got);
		cr_assert_eq(r, i % 100 < 64, "obj-%d: %d", i, r);
		if (!r)
			continue;
		snprintf(reason, sizeof(reason), "reason %d", i % 100);
		cr_assert_eq(ignored, (size_t)i);
		cr_assert_str_eq(got.reason, reason);
		health_release(&got);
	}
	app_memo_free(m);
}
