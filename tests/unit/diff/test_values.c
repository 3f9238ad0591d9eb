#include <criterion/criterion.h>
#include <string.h>

#include "diff/diff.h"

static json_t *js(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);

	cr_assert_not_null(j, "bad test JSON %s: %s", text, jerr.text);
	return j;
}

/* The canonical form of a quantity that must parse. */
static const char *canon(const char *text)
{
	static struct buf b = BUF_INIT;
	int error;

	buf_reset(&b);
	error = diff_quantity_canonical(text, &b);
	cr_assert_eq(error, 0, "\"%s\" did not parse (%d)", text, error);
	return buf_cstr(&b);
}

static void assert_canon(const char *text, const char *want)
{
	cr_assert_str_eq(canon(text), want, "\"%s\"", text);
}

static void assert_qty_eq(const char *a, const char *b)
{
	char ca[256];

	snprintf(ca, sizeof(ca), "%s", canon(a));
	cr_assert_str_eq(ca, canon(b), "\"%s\" == \"%s\"", a, b);
}

static void assert_qty_ne(const char *a, const char *b)
{
	char ca[256];

	snprintf(ca, sizeof(ca), "%s", canon(a));
	cr_assert_str_neq(ca, canon(b), "\"%s\" != \"%s\"", a, b);
}

/* Equality both ways round, as the comparison must be symmetric. */
static bool equal(const char *a, const char *b, bool quantity)
{
	json_t *ja = js(a), *jb = js(b);
	bool ab = diff_value_equal(ja, jb, quantity);
	bool ba = diff_value_equal(jb, ja, quantity);

	cr_assert_eq(ab, ba, "asymmetric: %s vs %s", a, b);
	json_decref(ja);
	json_decref(jb);
	return ab;
}

Test(values, quantity_equalities)
{
	assert_qty_eq("1000m", "1");
	assert_qty_eq("1", "1.0");
	assert_qty_eq("1e3", "1000");
	assert_qty_eq("1e3", "1k");
	assert_qty_eq("0.5", "500m");
	assert_qty_eq("1024Mi", "1Gi");
	assert_qty_eq("1.5Gi", "1536Mi");
	assert_qty_eq("100M", "100000k");
	assert_qty_eq("0", "0m");
	assert_qty_eq("0", "0Gi");
	assert_qty_eq("+1", "1");
	assert_qty_eq("-1", "-1000m");
	assert_qty_eq("12E-2", "120m");
	assert_qty_eq("1Ki", "1024");
	assert_qty_eq("1Ei", "1024Pi");
	assert_qty_ne("1Ki", "1k");
	assert_qty_ne("1", "-1");
	assert_qty_ne("1m", "1M");
	assert_qty_ne("1Mi", "1M");
}

Test(values, quantity_canonical_strings)
{
	static const char *const cases[][2] = {
		{"1000m", "1"},
		{"1", "1"},
		{"1.0", "1"},
		{"1.50", "1.5"},
		{"10", "10"},
		{"100", "100"},
		{"007", "7"},
		{"0.5", "0.5"},
		{"500m", "0.5"},
		{"250m", "0.25"},
		{".5", "0.5"},
		{"1.", "1"},
		{"1e3", "1000"},
		{"1E3", "1000"},
		{"1e+3", "1000"},
		{"1.5e3", "1500"},
		{"12E-2", "0.12"},
		{"1e0", "1"},
		{"1e-9", "0.000000001"},
		{"1n", "0.000000001"},
		{"1u", "0.000001"},
		{"1m", "0.001"},
		{"1k", "1000"},
		{"1M", "1000000"},
		{"1G", "1000000000"},
		{"1T", "1000000000000"},
		{"1P", "1000000000000000"},
		{"1E", "1000000000000000000"},
		{"1Ki", "1024"},
		{"1Mi", "1048576"},
		{"1Gi", "1073741824"},
		{"1Ti", "1099511627776"},
		{"1Pi", "1125899906842624"},
		{"1Ei", "1152921504606846976"},
		{"1024Mi", "1073741824"},
		{"1.5Gi", "1610612736"},
		{"0.5Ki", "512"},
		{"0.1Ki", "102.4"},
		{"100M", "100000000"},
		{"100000k", "100000000"},
		{"0", "0"},
		{"0m", "0"},
		{"0Gi", "0"},
		{"0.000", "0"},
		{"-0", "0"},
		{"-0.0Mi", "0"},
		{"+0", "0"},
		{"+1", "1"},
		{"-1", "-1"},
		{"-1000m", "-1"},
		{"-1.5Gi", "-1610612736"},
		{"-12E-2", "-0.12"},
		/* exact beyond 64 bits: 12345678901234567890 * 2^60 */
		{"12345678901234567890Ei",
		 "14233598694204363376410106750713200640"},
		{"1e30", "1000000000000000000000000000000"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_canon(cases[i][0], cases[i][1]);
}

/*
 * The API server keeps nano precision and rounds non-zero magnitudes up
 * (resource.Quantity uses inf.RoundUp on the absolute value).
 */
Test(values, quantity_rounds_up_to_nano)
{
	assert_canon("0.1n", "0.000000001");
	assert_canon("1.5n", "0.000000002");
	assert_canon("1.0n", "0.000000001");
	assert_canon("0.0000000001", "0.000000001");
	assert_canon("0.0000000011", "0.000000002");
	assert_canon("1e-20", "0.000000001");
	assert_canon("0.999999999999", "1");
	assert_canon("9.9999999999", "10");
	assert_canon("1.0000000001", "1.000000001");
	assert_canon("-0.1n", "-0.000000001");
	assert_canon("-1.5n", "-0.000000002");
	assert_canon("0.1u", "0.0000001");
	assert_canon("0.000000000000m", "0");
	assert_qty_eq("0.1n", "1n");
	assert_qty_eq("0.3n", "0.9n");
	assert_qty_ne("1n", "2n");
	assert_qty_ne("0.1n", "0");
}

Test(values, quantity_bounds)
{
	char text[200];
	struct buf b = BUF_INIT;

	/* 100 digits are fine, 101 are not. */
	memset(text, '9', 100);
	strcpy(text + 100, "Ei");
	cr_assert_eq(diff_quantity_canonical(text, &b), 0);
	cr_assert_str_eq(buf_cstr(&b),
			 "115292150460684697599999999999999999999999999"
			 "999999999999999999999999999999999999999999999"
			 "99999999998847078495393153024");
	buf_reset(&b);
	memset(text, '0', 101);
	text[101] = '\0';
	cr_assert_eq(diff_quantity_canonical(text, &b), ERR_PARSE);
	/* Digits on both sides of the point count. */
	memset(text, '1', 101);
	text[50] = '.';
	text[101] = '\0';
	cr_assert_eq(diff_quantity_canonical(text, &b), 0);
	buf_reset(&b);
	text[101] = '1';
	text[102] = '\0';
	cr_assert_eq(diff_quantity_canonical(text, &b), ERR_PARSE);

	/* Exponents up to 1000. */
	cr_assert_eq(diff_quantity_canonical("1e1000", &b), 0);
	cr_assert_eq(b.len, 1001);
	buf_reset(&b);
	cr_assert_eq(diff_quantity_canonical("1e-1000", &b), 0);
	cr_assert_str_eq(buf_cstr(&b), "0.000000001");
	buf_reset(&b);
	cr_assert_eq(diff_quantity_canonical("1e1001", &b), ERR_PARSE);
	cr_assert_eq(diff_quantity_canonical("1e99999999999999999999", &b),
		     ERR_PARSE);
	cr_assert_eq(b.len, 0);
	buf_release(&b);
}

Test(values, quantity_errors)
{
	static const char *const bad[] = {
		"",    " ",    " 1",   "1 ",	"1 Mi", "1\n",	 "1\t",	  "1Kb",
		"1mi", "1ki",  "1K",   "1KI",	"1Mii", "1iB",	 "1b",	  "1x",
		"+-1", "-+1",  "--1",  "++1",	"1-",	"1+",	 ".",	  "+",
		"-",   "+.",   "-.",   "..5",	"1..2", "1.2.3", "1e",	  "1E+",
		"1e-", "1e3m", "1me3", "1e1.5", "1e 3", "1ee3",	 "1Kie3", "Mi",
		"Ki",  "m",    "k",    "e3",	"E",	"0x10",	 "1_000", "1,5",
		"inf", "NaN",  "-inf", "abc",	"1/2",
	};
	struct buf b = BUF_INIT;
	size_t i;

	buf_adds(&b, "keep");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(diff_quantity_canonical(bad[i], &b), ERR_PARSE,
			     "\"%s\" parsed as \"%s\"", bad[i], buf_cstr(&b));
		/* Nothing is appended on failure. */
		cr_assert_str_eq(buf_cstr(&b), "keep", "\"%s\"", bad[i]);
	}
	cr_assert_eq(diff_quantity_canonical(NULL, &b), ERR_PARSE);

	/* On success the value is appended. */
	cr_assert_eq(diff_quantity_canonical("2k", &b), 0);
	cr_assert_str_eq(buf_cstr(&b), "keep2000");
	buf_release(&b);
}

Test(values, scalars_plain)
{
	cr_assert(equal("1", "1", false));
	cr_assert(equal("1", "1.0", false));
	cr_assert(equal("-3", "-3.0", false));
	cr_assert(equal("0", "-0.0", false));
	cr_assert(equal("1e3", "1000", false));
	cr_assert(equal("0.5", "0.5", false));
	cr_assert_not(equal("1", "1.5", false));
	cr_assert_not(equal("1", "2.0", false));
	cr_assert_not(equal("1", "\"1\"", false));
	cr_assert_not(equal("1.0", "\"1\"", false));
	cr_assert_not(equal("\"1000m\"", "\"1\"", false));
	cr_assert(equal("\"abc\"", "\"abc\"", false));
	cr_assert_not(equal("\"abc\"", "\"abd\"", false));
	cr_assert_not(equal("\"a\"", "\"a\\u0000\"", false));
	cr_assert(equal("\"a\\u0000b\"", "\"a\\u0000b\"", false));
	cr_assert_not(equal("\"a\\u0000b\"", "\"a\\u0000c\"", false));
	cr_assert(equal("true", "true", false));
	cr_assert(equal("false", "false", false));
	cr_assert(equal("null", "null", false));
	cr_assert_not(equal("true", "false", false));
	cr_assert_not(equal("true", "1", false));
	cr_assert_not(equal("false", "0", false));
	cr_assert_not(equal("null", "0", false));
	cr_assert_not(equal("null", "false", false));
	cr_assert_not(equal("null", "\"\"", false));
	cr_assert_not(equal("{}", "[]", false));
	cr_assert_not(equal("{}", "null", false));

	/* Integers beyond 2^53 compare exactly against reals. */
	cr_assert(equal("9007199254740992", "9007199254740992.0", false));
	cr_assert_not(equal("9007199254740993", "9007199254740992.0", false));
	cr_assert_not(
		equal("9223372036854775807", "9223372036854775808.0", false));
	cr_assert(
		equal("-9223372036854775808", "-9223372036854775808.0", false));
	cr_assert_not(equal("1", "1e300", false));
}

Test(values, null_pointers)
{
	json_t *one = json_integer(1);

	cr_assert(diff_value_equal(NULL, NULL, false));
	cr_assert(diff_value_equal(NULL, NULL, true));
	cr_assert_not(diff_value_equal(one, NULL, false));
	cr_assert_not(diff_value_equal(NULL, one, true));
	json_decref(one);
}

Test(values, scalars_as_quantities)
{
	cr_assert(equal("\"1000m\"", "\"1\"", true));
	cr_assert(equal("\"1000m\"", "1", true));
	cr_assert(equal("\"1\"", "1", true));
	cr_assert(equal("\"1\"", "1.0", true));
	cr_assert(equal("\"500m\"", "0.5", true));
	cr_assert(equal("\"0.1\"", "0.1", true));
	cr_assert(equal("\"100m\"", "0.1", true));
	cr_assert(equal("\"1e3\"", "1000", true));
	cr_assert(equal("\"1Gi\"", "\"1024Mi\"", true));
	cr_assert(equal("\"1Gi\"", "1073741824", true));
	cr_assert(equal("\"1.5Gi\"", "\"1536Mi\"", true));
	cr_assert(equal("\"1k\"", "1e3", true));
	cr_assert(equal("\"1e21\"", "1e21", true));
	cr_assert(equal("\"0.000001\"", "1e-6", true));
	cr_assert(equal("\"-1\"", "\"-1000m\"", true));
	cr_assert(equal("\"0\"", "\"0Gi\"", true));
	cr_assert_not(equal("\"1Ki\"", "\"1k\"", true));
	cr_assert_not(equal("\"1\"", "2", true));
	cr_assert_not(equal("\"1.5Gi\"", "\"1.5G\"", true));

	/* Not both quantities: plain equality decides. */
	cr_assert(equal("\"abc\"", "\"abc\"", true));
	cr_assert_not(equal("\"abc\"", "\"abd\"", true));
	cr_assert_not(equal("\"1Kb\"", "1", true));
	cr_assert_not(equal("\"1 \"", "\"1\"", true));
	cr_assert(equal("\"1Kb\"", "\"1Kb\"", true));
	cr_assert_not(equal("\"1\\u0000\"", "\"1\"", true));
	/* Only strings and numbers are quantities. */
	cr_assert_not(equal("true", "\"1\"", true));
	cr_assert_not(equal("null", "\"0\"", true));
	cr_assert_not(equal("[1]", "1", true));
	cr_assert_not(equal("{\"a\":1}", "\"1\"", true));
}

Test(values, nested_plain)
{
	const char *a = "{\"spec\":{\"replicas\":3,\"ports\":[{\"port\":80},"
			"{\"port\":443}],\"paused\":false,\"x\":null}}";

	cr_assert(equal(a, a, false));
	/* Key order does not matter, int 3 == real 3.0 deep inside. */
	cr_assert(
		equal(a,
		      "{\"spec\":{\"x\":null,\"paused\":false,\"replicas\":3.0,"
		      "\"ports\":[{\"port\":80.0},{\"port\":443}]}}",
		      false));
	/* Array order does. */
	cr_assert_not(
		equal(a,
		      "{\"spec\":{\"replicas\":3,\"ports\":[{\"port\":443},"
		      "{\"port\":80}],\"paused\":false,\"x\":null}}",
		      false));
	/* A missing key, an extra key, a changed leaf, a type change. */
	cr_assert_not(
		equal(a,
		      "{\"spec\":{\"replicas\":3,\"ports\":[{\"port\":80},"
		      "{\"port\":443}],\"paused\":false}}",
		      false));
	cr_assert_not(
		equal(a,
		      "{\"spec\":{\"replicas\":3,\"ports\":[{\"port\":80},"
		      "{\"port\":443}],\"paused\":false,\"x\":null,"
		      "\"y\":1}}",
		      false));
	cr_assert_not(
		equal(a,
		      "{\"spec\":{\"replicas\":3,\"ports\":[{\"port\":80},"
		      "{\"port\":444}],\"paused\":false,\"x\":null}}",
		      false));
	cr_assert_not(
		equal(a,
		      "{\"spec\":{\"replicas\":\"3\",\"ports\":[{\"port\":80},"
		      "{\"port\":443}],\"paused\":false,\"x\":null}}",
		      false));
	/* Same size, different keys. */
	cr_assert_not(equal("{\"a\":1,\"b\":2}", "{\"a\":1,\"c\":2}", false));
	/* Array lengths. */
	cr_assert_not(equal("[1,2]", "[1,2,3]", false));
	cr_assert(equal("[]", "[]", false));
	cr_assert(equal("[[],{}]", "[[],{}]", false));
	cr_assert_not(equal("[[]]", "[{}]", false));
}

/* Keys with a NUL inside (jansson allows them) are keys like any other. */
Test(values, keys_with_nul)
{
	json_t *a = json_object(), *b = json_object(), *c = json_object();

	json_object_setn_new(a, "a\0b", 3, json_integer(1));
	json_object_setn_new(b, "a\0b", 3, json_real(1.0));
	json_object_setn_new(c, "a\0c", 3, json_integer(1));
	cr_assert(diff_value_equal(a, b, false));
	cr_assert_not(diff_value_equal(a, c, false));
	/* "a" alone is a different key. */
	json_object_set_new(c, "a", json_integer(1));
	json_object_deln(c, "a\0c", 3);
	cr_assert_not(diff_value_equal(a, c, false));
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

Test(values, nested_quantities)
{
	const char *a = "{\"resources\":{\"limits\":{\"cpu\":\"1000m\","
			"\"memory\":\"1Gi\"},\"requests\":{\"cpu\":0.5,"
			"\"memory\":\"512Mi\"}},\"args\":[\"1k\",2]}";
	const char *b = "{\"resources\":{\"limits\":{\"cpu\":1,"
			"\"memory\":\"1024Mi\"},\"requests\":{\"cpu\":\"500m\","
			"\"memory\":\"0.5Gi\"}},\"args\":[\"1000\",\"2\"]}";

	cr_assert(equal(a, b, true));
	cr_assert_not(equal(a, b, false));

	/* The flag reaches into arrays and objects, not across structure. */
	cr_assert(equal("[\"1Ki\",[\"2k\"]]", "[1024,[2000]]", true));
	cr_assert_not(equal("[\"1Ki\",[\"2k\"]]", "[1024,[2000]]", false));
	cr_assert_not(equal("[\"1Ki\"]", "[1024,1]", true));
	cr_assert_not(equal("{\"cpu\":\"1\"}", "{\"mem\":\"1\"}", true));
	cr_assert_not(equal("{\"cpu\":\"1\"}", "{\"cpu\":[\"1\"]}", true));
	cr_assert_not(equal(a,
			    "{\"resources\":{\"limits\":{\"cpu\":1,"
			    "\"memory\":\"1G\"},\"requests\":{\"cpu\":\"500m\","
			    "\"memory\":\"0.5Gi\"}},\"args\":[\"1000\",\"2\"]}",
			    true));
	/* Non-quantity leaves next to quantities compare plainly. */
	cr_assert(equal("{\"image\":\"web:1\",\"cpu\":\"1\"}",
			"{\"image\":\"web:1\",\"cpu\":\"1000m\"}", true));
	cr_assert_not(equal("{\"image\":\"web:1\",\"cpu\":\"1\"}",
			    "{\"image\":\"web:2\",\"cpu\":\"1000m\"}", true));
}
