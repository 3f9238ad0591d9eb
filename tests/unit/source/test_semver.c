/*
 * Semantic versions and ranges, read as Helm's --version and Flux's
 * semver: read them (Masterminds semver 3.4): one table of (range,
 * version, match) cases per rule, bad input, and the newest matching
 * version of a list.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "source/internal.h"

struct match_case {
	const char *range;
	const char *version;
	bool match;
};

static void check_cases(const struct match_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct match_case *c = &cases[i];
		struct src_semver_range *r = NULL;
		struct src_semver v;
		struct err e = ERR_INIT;

		cr_assert_eq(src_semver_range_parse(&r, c->range, &e), 0,
			     "%s: %s", c->range, err_msg(&e));
		cr_assert_eq(src_semver_parse(&v, c->version, &e), 0, "%s: %s",
			     c->version, err_msg(&e));
		cr_expect_eq(src_semver_range_match(r, &v), c->match,
			     "\"%s\" %s \"%s\"", c->range,
			     c->match ? "should match" : "should not match",
			     c->version);
		src_semver_range_free(r);
		err_release(&e);
	}
}

#define CHECK(cases) check_cases(cases, sizeof(cases) / sizeof(cases[0]))

Test(semver, parses_full_partial_and_prefixed_versions)
{
	struct src_semver v;
	struct err e = ERR_INIT;

	cr_assert_eq(src_semver_parse(&v, "v1.2.3-rc.1+build.5", &e), 0);
	cr_assert_eq(v.major, 1);
	cr_assert_eq(v.minor, 2);
	cr_assert_eq(v.patch, 3);
	cr_assert_str_eq(v.pre, "rc.1");
	cr_assert_str_eq(v.build, "build.5");

	cr_assert_eq(src_semver_parse(&v, "1.2", &e), 0);
	cr_assert(v.major == 1 && v.minor == 2 && v.patch == 0);
	cr_assert_str_eq(v.pre, "");
	cr_assert_eq(src_semver_parse(&v, "7", &e), 0);
	cr_assert(v.major == 7 && v.minor == 0 && v.patch == 0);
	cr_assert_eq(src_semver_parse(&v, "1.2-beta-2", &e), 0);
	cr_assert(v.minor == 2 && v.patch == 0);
	cr_assert_str_eq(v.pre, "beta-2");
	/* Masterminds coerces leading zeros of the numbers. */
	cr_assert_eq(src_semver_parse(&v, "01.02.03", &e), 0);
	cr_assert(v.major == 1 && v.minor == 2 && v.patch == 3);
	cr_assert_eq(src_semver_parse(&v, "18446744073709551615.0.0", &e), 0);
	cr_assert_eq(v.major, UINT64_MAX);
	cr_assert_eq(err_count(&e), 0);
}

Test(semver, refuses_what_is_not_a_version)
{
	static const char *const bad[] = {
		"",
		"v",
		"latest",
		"1.2.3.4",
		"1..2",
		"1.2.",
		"1.2.3-",
		"1.2.3+",
		"1.2.3-rc..1",
		"1.2.3-01",
		"1.2.3-rc_1",
		" 1.2.3",
		"1.2.3 ",
		"V1.2.3",
		"1.x",
		"18446744073709551616.0.0",
		"1.2.3-"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aa",
	};
	struct src_semver v;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct err e = ERR_INIT;

		cr_expect_eq(src_semver_parse(&v, bad[i], &e), ERR_PARSE,
			     "\"%s\" parsed", bad[i]);
		err_release(&e);
	}

	struct err e = ERR_INIT;

	cr_assert_eq(src_semver_parse(&v, "latest", &e), ERR_PARSE);
	cr_assert_str_eq(err_msg(&e), "\"latest\" is not a semantic version\n");
	err_release(&e);
}

Test(semver, orders_by_semver_precedence)
{
	/* The SemVer 2.0 example, then numbers compared as numbers. */
	static const char *const order[] = {
		"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
		"1.0.0-beta",  "1.0.0-beta.2",	"1.0.0-beta.11",
		"1.0.0-rc.1",  "1.0.0",		"1.0.1",
		"1.9.0",       "1.10.0",	"2.0.0-0",
		"2.0.0-1",     "2.0.0-10",	"2.0.0-A",
		"2.0.0-a",     "2.0.0",		"10.0.0",
	};
	size_t n = sizeof(order) / sizeof(order[0]);

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			struct src_semver a, b;
			int want = i < j ? -1 : i > j, got;

			cr_assert_eq(src_semver_parse(&a, order[i], NULL), 0);
			cr_assert_eq(src_semver_parse(&b, order[j], NULL), 0);
			got = src_semver_cmp(&a, &b);
			cr_expect_eq(got < 0 ? -1 : got > 0, want,
				     "cmp(%s, %s) = %d", order[i], order[j],
				     got);
		}
}

Test(semver, ignores_build_metadata_and_the_v_prefix_in_comparisons)
{
	struct src_semver a, b;

	cr_assert_eq(src_semver_parse(&a, "1.2.3+linux", NULL), 0);
	cr_assert_eq(src_semver_parse(&b, "v1.2.3+darwin", NULL), 0);
	cr_assert_eq(src_semver_cmp(&a, &b), 0);
}

Test(semver, exact_and_equals_match_one_version)
{
	static const struct match_case cases[] = {
		{"1.2.3", "1.2.3", true},
		{"1.2.3", "1.2.4", false},
		{"1.2.3", "1.2.2", false},
		{"=1.2.3", "1.2.3", true},
		{"= 1.2.3", "1.2.3", true},
		{"v1.2.3", "1.2.3", true},
		{"1.2.3", "v1.2.3", true},
		{"1.2.3", "1.2.3+build.7", true},
		{"1.2.3+meta", "1.2.3", true},
		{"1.2.3", "1.2.3-rc.1", false},
		{"1.2.3-rc.1", "1.2.3-rc.1", true},
		{"1.2.3-rc.1", "1.2.3-rc.2", false},
	};

	CHECK(cases);
}

Test(semver, not_equal_excludes_a_version_or_the_range_it_names)
{
	static const struct match_case cases[] = {
		{"!=1.2.3", "1.2.3", false},
		{"!=1.2.3", "1.2.4", true},
		{"!=4.1", "4.1.0", false},
		{"!=4.1", "4.1.5", false},
		{"!=4.1", "4.2.0", true},
		{"!=4.1", "5.1.0", true},
		{"!=4.x", "4.1.0", false},
		{"!=4.x", "5.0.0", true},
		{"!=4.1.x", "4.2.0", true},
		{"!=4.2.x", "4.2.3", false},
		{"!=4.1-alpha", "4.1.0", true},
		{"!=4.1-alpha", "4.1.0-alpha", false},
		{"!=4.1-alpha", "4.1.1-alpha", false},
		{"!=4.1-alpha", "4.1.1-beta", true},
		{"!=*", "1.0.0", false},
	};

	CHECK(cases);
}

Test(semver, comparisons_read_missing_parts_as_ranges)
{
	static const struct match_case cases[] = {
		{">1.2.3", "1.2.4", true},     {">1.2.3", "1.2.3", false},
		{">1.1", "1.1.9", false},      {">1.1", "1.2.0", true},
		{">1.1", "4.1.0", true},       {">1", "1.9.9", false},
		{">1", "2.0.0", true},	       {">1.x", "1.5.0", false},
		{"<1.2.3", "1.2.2", true},     {"<1.2.3", "1.2.3", false},
		{"<1.1", "1.0.9", true},       {"<1.1", "1.1.0", false},
		{"<1.x", "0.9.0", true},       {"<1.x", "1.1.1", false},
		{"<11", "0.1.0", true},	       {"<11", "11.1.0", false},
		{">=1.2.3", "1.2.3", true},    {">=1.2.3", "1.2.2", false},
		{"=>1.2", "1.2.0", true},      {">= 1.2", "1.1.9", false},
		{"<=1.2.3", "1.2.3", true},    {"<=1.2.3", "1.2.4", false},
		{"<=1.1", "1.1.9", true},      {"<=1.1", "1.2.0", false},
		{"<=1.1", "0.1.0", true},      {"=<2", "2.9.9", true},
		{"=<2", "3.0.0", false},       {"<=2.x", "3.0.0", false},
		{"<=1.1.x", "1.2.500", false},
	};

	CHECK(cases);
}

Test(semver, tilde_allows_patch_changes)
{
	static const struct match_case cases[] = {
		{"~1.2.3", "1.2.3", true},  {"~1.2.3", "1.2.9", true},
		{"~1.2.3", "1.3.0", false}, {"~1.2.3", "1.2.2", false},
		{"~1.2", "1.2.0", true},    {"~1.2", "1.3.0", false},
		{"~1", "1.9.0", true},	    {"~1", "2.0.0", false},
		{"~1.x", "1.9.0", true},    {"~>1.2", "1.2.5", true},
		{"~>1.2", "1.3.0", false},  {"~0.2.3", "0.2.5", true},
		{"~0.2.3", "0.3.0", false}, {"~*", "2.1.1", true},
		{"~0.0.0", "1.2.3", true},
	};

	CHECK(cases);
}

Test(semver, caret_allows_changes_right_of_the_first_non_zero_part)
{
	static const struct match_case cases[] = {
		{"^1.2.3", "1.2.3", true},
		{"^1.2.3", "1.9.9", true},
		{"^1.2.3", "2.0.0", false},
		{"^1.2.3", "1.2.2", false},
		{"^1.2", "1.2.0", true},
		{"^1.2", "1.1.9", false},
		{"^1", "1.99.0", true},
		{"^1.x", "1.5.0", true},
		{"^1.x", "2.0.0", false},
		/* ^0.x: the minor is the breaking part. */
		{"^0.2.3", "0.2.3", true},
		{"^0.2.3", "0.2.5", true},
		{"^0.2.3", "0.3.0", false},
		{"^0.2.3", "0.2.2", false},
		{"^0.2", "0.2.9", true},
		{"^0.2", "0.3.0", false},
		{"^0.2", "1.2.0", false},
		/* ^0.0.x: every patch is. */
		{"^0.0.3", "0.0.3", true},
		{"^0.0.3", "0.0.4", false},
		{"^0.0", "0.0.9", true},
		{"^0.0", "0.1.0", false},
		{"^0", "0.9.0", true},
		{"^0", "1.0.0", false},
		{"^0.0.0", "1.2.3", false},
		{"^*", "3.1.4", true},
	};

	CHECK(cases);
}

Test(semver, wildcards_and_partial_versions_are_ranges)
{
	static const struct match_case cases[] = {
		{"1.2.x", "1.2.0", true},  {"1.2.x", "1.2.9", true},
		{"1.2.x", "1.3.0", false}, {"1.2.X", "1.2.1", true},
		{"1.2.*", "1.2.1", true},  {"1.x", "1.9.0", true},
		{"1.x", "2.0.0", false},   {"1.x", "0.9.0", false},
		{"1.x.x", "1.4.0", true},  {"1.*", "1.5.0", true},
		{"*", "4.5.6", true},	   {"x", "0.0.1", true},
		{"X", "0.0.0", true},	   {"1.2", "1.2.7", true},
		{"1.2", "1.3.0", false},   {"1", "1.7.0", true},
		{"1", "2.0.0", false},	   {">=*", "0.1.0", true},
	};

	CHECK(cases);
}

Test(semver, hyphen_ranges_are_inclusive)
{
	static const struct match_case cases[] = {
		{"1.2 - 1.4.5", "1.2.0", true},
		{"1.2 - 1.4.5", "1.4.5", true},
		{"1.2 - 1.4.5", "1.4.6", false},
		{"1.2 - 1.4.5", "1.1.9", false},
		{"1.2 - 1.4", "1.4.9", true},
		{"1.2 - 1.4", "1.5.0", false},
		{"1.2.3 - 2", "2.9.0", true},
		{"1.2.3 - 2", "3.0.0", false},
		{"1.0 - 2.0, !=1.5.0", "1.5.0", false},
		{"1.0 - 2.0 !=1.5.0", "1.6.0", true},
	};

	CHECK(cases);
}

Test(semver, spaces_and_commas_join_terms_and_bars_separate_them)
{
	static const struct match_case cases[] = {
		{">=1.1, <2", "1.5.0", true},
		{">=1.1 <2", "2.0.0", false},
		{">1.1,<3", "4.3.2", false},
		{">1.1    <3", "2.0.0", true},
		{">1.1 , <3", "2.0.0", true},
		{">= 1.1, < 2, != 1.2.3", "1.2.3", false},
		{">= 1.1, < 2, != 1.2.3", "1.2.4", true},
		{"<1.0 || >=2.0", "0.5.0", true},
		{"<1.0 || >=2.0", "1.5.0", false},
		{"<1.0 || >=2.0", "2.0.0", true},
		{"<1.0||>=2.0", "2.0.0", true},
		{">= 1.1 <2 != 1.2.3 || >= 3", "3.0.0", true},
		{">= 1.1 <2 != 1.2.3 || > 3", "3.0.0", false},
		{">= 1.1 <2 != 1.2.3 || > 3", "1.2.3", false},
		{"1.x || 3.x", "3.1.0", true},
		{"1.x || 3.x", "2.1.0", false},
	};

	CHECK(cases);
}

Test(semver, prereleases_match_only_groups_that_name_one)
{
	static const struct match_case cases[] = {
		{">=1.2.3", "1.2.4-beta", false},
		{"*", "1.2.3-alpha", false},
		{"1.x", "1.2.3-alpha", false},
		{"^1.2", "1.3.0-rc.1", false},
		{"<2.0.0", "2.0.0-rc.1", false},
		{"<0", "0.0.0-alpha", false},
		/* A term with a pre-release opens its whole group to them,
		 * whatever their major.minor.patch (Masterminds 3.4). */
		{">=1.2.3-0", "1.2.4-beta", true},
		{">=1.2.3-0", "1.3.0-rc.1", true},
		{"*-0", "1.2.3-alpha", true},
		{"<0-z", "0.0.0-alpha", true},
		{">=1.0.0-rc.1 <2.0.0", "1.5.0-beta", true},
		{">=1.0.0-rc.1 <2.0.0", "2.0.0-rc.1", true},
		{">=1.0.0-rc.1 <2.0.0", "2.0.0", false},
		{">=1.0.0-rc.1 <2.0.0", "1.0.0-beta", false},
		{"^1.2.3-beta.2", "1.2.3-beta.4", true},
		{"^1.2.3-beta.2", "1.2.3-beta.1", false},
		{"^1.2.3-beta.2", "1.2.3", true},
		{"^1.2.3-beta.2", "1.9.0-alpha", true},
		{"^0.2.3-beta.2", "0.3.4-beta.2", false},
		{"~1.2.3-0", "1.2.5-alpha", true},
		/* Precedence inside pre-releases. */
		{">1.2.3-alpha.1", "1.2.3-alpha.2", true},
		{">1.2.3-alpha.9", "1.2.3-alpha.10", true},
		{">1.2.3-alpha", "1.2.3-alpha.1", true},
		{">1.2.3-beta", "1.2.3-alpha", false},
		{"<1.2.3-2", "1.2.3-10", false},
		{">1.2.3-1", "1.2.3-a", true},
		{">=1.2.3-BETA", "1.2.3-alpha", true},
		/* Only the group with the pre-release term takes them. */
		{"<1.2.3 || >=2.0.0-0", "1.5.0-rc.1", false},
		{"<1.2.3 || >=2.0.0-0", "2.1.0-rc.1", true},
		{"<1.2.3 || >=2.0.0-0", "1.0.0", true},
	};

	CHECK(cases);
}

Test(semver, refuses_bad_ranges_naming_the_term)
{
	static const struct {
		const char *range;
		const char *msg;
	} cases[] = {
		{">=1.0 <abc",
		 "version range \">=1.0 <abc\": \"<abc\" is not a version "
		 "constraint"},
		{"latest",
		 "version range \"latest\": \"latest\" is not a version "
		 "constraint"},
		{">=",
		 "version range \">=\": \">=\" is not a version constraint"},
		{"1.2.3.4",
		 "version range \"1.2.3.4\": \"1.2.3.4\" is not a version "
		 "constraint"},
		{">=1.0<2.0",
		 "version range \">=1.0<2.0\": \">=1.0<2.0\" is not a version "
		 "constraint"},
		{">1 - 2",
		 "version range \">1 - 2\": \">1 - 2\" is not a version "
		 "constraint"},
		{"1 - >2",
		 "version range \"1 - >2\": \"1 - >2\" is not a version "
		 "constraint"},
		{"!1.0", "version range \"!1.0\": \"!1.0\" is not a version "
			 "constraint"},
		{"1 | 2",
		 "version range \"1 | 2\": \"|\" is not a version constraint"},
		{"1.2.3-01",
		 "version range \"1.2.3-01\": \"1.2.3-01\" is not a version "
		 "constraint"},
		{"1.2.x.y",
		 "version range \"1.2.x.y\": \"1.2.x.y\" is not a version "
		 "constraint"},
		{"", "version range \"\": an empty alternative"},
		{"   ", "version range \"   \": an empty alternative"},
		{"1.0 ||", "version range \"1.0 ||\": an empty alternative"},
		{"|| 1.0", "version range \"|| 1.0\": an empty alternative"},
		{"1.0,,2.0",
		 "version range \"1.0,,2.0\": a comma without a term after it"},
		{"1.0,", "version range \"1.0,\": a comma without a term after "
			 "it"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct src_semver_range *r = (void *)1;
		struct err e = ERR_INIT;

		cr_expect_eq(src_semver_range_parse(&r, cases[i].range, &e),
			     ERR_PARSE, "\"%s\" parsed", cases[i].range);
		cr_expect_null(r, "%s: no range on failure", cases[i].range);
		cr_expect_str_eq(err_first(&e), cases[i].msg);
		err_release(&e);
	}
}

Test(semver, newest_picks_the_highest_match_and_skips_what_does_not_parse)
{
	static const char *const tags[] = {
		"1.9.0",      "latest",	     "1.10.0", NULL,	     "v1.2",
		"2.0.0-rc.1", "1.10.0-rc.1", "main",   "1.10.0+abc", "0.9.9",
	};
	size_t n = sizeof(tags) / sizeof(tags[0]);
	struct src_semver_range *r;

	cr_assert_eq(src_semver_range_parse(&r, ">=1.0.0", NULL), 0);
	/* 1.10.0 over 1.9.0; of 1.10.0 and 1.10.0+abc, the first. */
	cr_assert_eq(src_semver_newest(r, tags, n), 2);
	src_semver_range_free(r);

	cr_assert_eq(src_semver_range_parse(&r, "*", NULL), 0);
	cr_assert_eq(src_semver_newest(r, tags, n), 2);
	src_semver_range_free(r);

	cr_assert_eq(src_semver_range_parse(&r, ">=1.0.0-0", NULL), 0);
	cr_assert_eq(src_semver_newest(r, tags, n), 5);
	src_semver_range_free(r);

	cr_assert_eq(src_semver_range_parse(&r, "~1.2", NULL), 0);
	cr_assert_eq(src_semver_newest(r, tags, n), 4);
	src_semver_range_free(r);

	cr_assert_eq(src_semver_range_parse(&r, ">=3", NULL), 0);
	cr_assert_eq(src_semver_newest(r, tags, n), -1);
	cr_assert_eq(src_semver_newest(r, NULL, 0), -1);
	src_semver_range_free(r);
}
