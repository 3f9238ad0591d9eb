/*
 * render_parse(): YAML 1.1 resolution as go-yaml v2 / sigs.k8s.io/yaml do
 * it, JSON streams, errors with positions, limits, real-world manifests.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "renderers/render.h"

#define KUBE_PROMETHEUS \
	"../shared/fixtures/real-world/kube-prometheus/manifests"

static char *dump(const json_t *v)
{
	char *s =
		json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS |
				      JSON_REAL_PRECISION(17));

	return s ? s : strdup("(null)");
}

/* Parse data[0..len), expecting success and exactly one document. */
static json_t *parse_one_n(const char *data, size_t len)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err err = ERR_INIT;
	json_t *v;
	int rc;

	rc = render_parse(&docs, data, len, "t.yaml", &err);
	cr_assert_eq(rc, 0, "parse of [%s] failed: %s", data, err_msg(&err));
	cr_assert_eq(docs.len, 1, "[%s]: %zu documents", data, docs.len);
	cr_assert_not_null(docs.items[0].value);
	v = json_incref(docs.items[0].value);
	render_docs_release(&docs);
	err_release(&err);
	return v;
}

static json_t *parse_one(const char *data)
{
	return parse_one_n(data, strlen(data));
}

/* The document equals the JSON text `want`, types included. */
static void check_yaml(const char *yaml, const char *want_json)
{
	json_t *got = parse_one(yaml);
	json_t *want = json_loads(want_json, JSON_DECODE_ANY, NULL);
	char *g = dump(got), *w;

	cr_assert_not_null(want, "bad expectation %s", want_json);
	w = dump(want);
	cr_assert(json_equal(got, want), "[%s]\n  got:  %s\n  want: %s", yaml,
		  g, w);
	free(g);
	free(w);
	json_decref(got);
	json_decref(want);
}

/* "v: <scalar>" decodes to {"v": <want>}. */
static void check_value(const char *scalar, const char *want_json)
{
	char yaml[512], want[512];

	snprintf(yaml, sizeof(yaml), "v: %s\n", scalar);
	snprintf(want, sizeof(want), "{\"v\": %s}", want_json);
	check_yaml(yaml, want);
}

/* "<key>: x" decodes to {"<want_key>": "x"}. */
static void check_key(const char *key, const char *want_key)
{
	char yaml[512];
	json_t *got, *want;
	char *g;

	snprintf(yaml, sizeof(yaml), "%s: x\n", key);
	got = parse_one(yaml);
	want = json_pack("{s:s}", want_key, "x");
	g = dump(got);
	cr_assert(json_equal(got, want), "[%s] got %s, want key \"%s\"", key, g,
		  want_key);
	free(g);
	json_decref(got);
	json_decref(want);
}

/*
 * Parsing fails with `code` and exactly one problem whose text contains
 * `msg`. Returns the number of documents decoded before the error.
 */
static size_t check_error_n(const char *data, size_t len, int code,
			    const char *msg)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err err = ERR_INIT;
	size_t n;
	int rc;

	rc = render_parse(&docs, data, len, "t.yaml", &err);
	cr_assert_eq(rc, code, "[%s]: rc %d, want %d (%s)", data, rc, code,
		     err_msg(&err));
	cr_assert_eq(err.code, code);
	cr_assert_eq(err_count(&err), 1, "[%s]: %u problems: %s", data,
		     err_count(&err), err_msg(&err));
	cr_assert(strstr(err_first(&err), msg),
		  "[%s]: message\n  %s\nlacks\n  %s", data, err_first(&err),
		  msg);
	n = docs.len;
	render_docs_release(&docs);
	err_release(&err);
	return n;
}

static size_t check_error(const char *data, int code, const char *msg)
{
	return check_error_n(data, strlen(data), code, msg);
}

/* ------------------------------------------------------------------ */
/* Plain scalars                                                       */

Test(yaml_scalars, booleans_true)
{
	const char *t[] = {"y",	 "Y",  "yes",  "Yes",  "YES", "on",
			   "On", "ON", "true", "True", "TRUE"};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		check_value(t[i], "true");
}

Test(yaml_scalars, booleans_false)
{
	const char *f[] = {"n",	  "N",	 "no",	  "No",	   "NO",   "off",
			   "Off", "OFF", "false", "False", "FALSE"};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		check_value(f[i], "false");
}

Test(yaml_scalars, other_spellings_are_strings)
{
	const char *s[] = {"yEs",  "YeS",   "tRUE",   "TRue", "oN",  "oFF",
			   "nO",   "FaLSe", "yess",   "t",    "f",   "nUll",
			   "NuLL", "nil",   "none",   "~~",   "Nan", "inf",
			   ".iNf", ".NaN_", "enabled"};

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		char want[64];

		snprintf(want, sizeof(want), "\"%s\"", s[i]);
		check_value(s[i], want);
	}
}

Test(yaml_scalars, nulls)
{
	check_yaml("v:\n", "{\"v\": null}");
	check_value("~", "null");
	check_value("null", "null");
	check_value("Null", "null");
	check_value("NULL", "null");
	check_yaml("- \n- ~\n-\n", "[null, null, null]");
	check_yaml("m: {a: , b: ~}", "{\"m\": {\"a\": null, \"b\": null}}");
}

Test(yaml_scalars, integers_in_every_base)
{
	check_value("0", "0");
	check_value("12", "12");
	check_value("-12", "-12");
	check_value("+1", "1");
	check_value("0x1A", "26");
	check_value("0X1a", "26");
	check_value("-0x1A", "-26");
	check_value("+0x10", "16");
	check_value("0o17", "15");
	check_value("0O17", "15");
	check_value("017", "15");
	check_value("-017", "-15");
	check_value("00", "0");
	check_value("0b101", "5");
	check_value("0B101", "5");
	check_value("-0b101", "-5");
	/* go-yaml v2 retries 0b<rest> with ParseInt(rest, 2): a sign works. */
	check_value("0b-101", "-5");
	check_value("0b+101", "5");
	check_value("1_000", "1000");
	check_value("1__0_", "10");
	check_value("0x_1F", "31");
	check_value("-1_000_000", "-1000000");
	check_value("9223372036854775807", "9223372036854775807");
	check_value("-9223372036854775808", "-9223372036854775808");
	check_value("0x7FFFFFFFFFFFFFFF", "9223372036854775807");
}

Test(yaml_scalars, integers_beyond_int64)
{
	/* Fits in uint64 (go-yaml: uint64): a real here. */
	check_value("9223372036854775808", "9223372036854775808.0");
	check_value("18446744073709551615", "18446744073709551615.0");
	check_value("0xFFFFFFFFFFFFFFFF", "18446744073709551615.0");
	/* Beyond uint64, decimal: go-yaml reads it as a float. */
	check_value("18446744073709551616", "18446744073709551616.0");
	check_value("99999999999999999999", "1e20");
	/* Rounds to -2^63, an integral float that fits: an integer. */
	check_value("-9223372036854775809", "-9223372036854775808");
	check_value("-9223372036854777856", "-9223372036854777856.0");
	/* Beyond uint64, hex: matches nothing, so a string. */
	check_value("0x1FFFFFFFFFFFFFFFF", "\"0x1FFFFFFFFFFFFFFFF\"");
}

Test(yaml_scalars, floats)
{
	check_value("1.5", "1.5");
	check_value("-1.5", "-1.5");
	check_value("+1.5", "1.5");
	check_value("1.5e-3", "0.0015");
	check_value("6.02e23", "6.02e23");
	check_value(".5", "0.5");
	check_value("-.5", "-0.5");
	check_value("+.5", "0.5");
	check_value(".5e1", "5");
	check_value("._5", "\"._5\"");
	check_value(".5_0", "0.5");
	check_value("1_000.5", "1000.5");
	check_value("0.1", "0.1");
	check_value("1e400", "\"1e400\""); /* ParseFloat fails: a string */
	check_value("1e-400", "0");
}

Test(yaml_scalars, integral_floats_become_integers)
{
	check_value("1e3", "1000");
	check_value("1E3", "1000");
	check_value("1.", "1");
	check_value("1.0", "1");
	check_value("-0.0", "0");
	check_value("08", "8"); /* not octal: a float, 8 */
	check_value("09", "9");
	check_value("012345678", "12345678");
	check_value("1e18", "1000000000000000000");
	/* Integral but not an int64: stays a real. */
	check_value("1e19", "1e19");
	check_value("9.3e18", "9.3e18");
}

Test(yaml_scalars, inf_and_nan_are_errors)
{
	const char *t[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf", "+.INF",
			   "-.inf", "-.Inf", "-.INF", ".nan",  ".NaN",	".NAN"};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char yaml[64], msg[64];

		snprintf(yaml, sizeof(yaml), "a: 1\nv: %s\n", t[i]);
		snprintf(msg, sizeof(msg),
			 "t.yaml:2:4: %s cannot be represented in JSON", t[i]);
		check_error(yaml, ERR_PARSE, msg);
	}
	check_error("- !!float .inf\n", ERR_PARSE,
		    "t.yaml:1:3: .inf cannot be represented in JSON");
}

Test(yaml_scalars, timestamps_stay_strings)
{
	check_value("2001-12-14", "\"2001-12-14\"");
	check_value("2001-12-14T21:59:43.10-05:00",
		    "\"2001-12-14T21:59:43.10-05:00\"");
	check_value("2001-12-14t21:59:43.10Z", "\"2001-12-14t21:59:43.10Z\"");
	check_value("2001-12-14 21:59:43.10", "\"2001-12-14 21:59:43.10\"");
	check_value("2001-12-14 21:59:43.10 -5",
		    "\"2001-12-14 21:59:43.10 -5\"");
	check_value("2001-13-45", "\"2001-13-45\"");
}

Test(yaml_scalars, other_strings)
{
	check_value("=", "\"=\"");
	check_yaml("- =\n- '!='\n- =~\n", "[\"=\", \"!=\", \"=~\"]");
	check_value("abc", "\"abc\"");
	check_value("1:20", "\"1:20\"");
	check_value("0x", "\"0x\"");
	check_value("0b", "\"0b\"");
	check_value("0b2", "\"0b2\"");
	check_value("+", "\"+\"");
	check_value("1-2", "\"1-2\"");
	check_value("0.1.2", "\"0.1.2\"");
	check_value("1,000", "\"1,000\"");
	check_value("1e", "\"1e\"");
	check_value("_1", "\"_1\"");
	check_value("<<", "\"<<\"");
	check_value("100m", "\"100m\"");
	check_value("1Gi", "\"1Gi\"");
	check_value("v1.2.3", "\"v1.2.3\"");
	check_value("héllo wörld", "\"héllo wörld\"");
	check_value("a #b", "\"a\"");
	check_value("multi\n  line", "\"multi line\"");
}

Test(yaml_scalars, quoted_are_strings)
{
	check_value("\"yes\"", "\"yes\"");
	check_value("'yes'", "\"yes\"");
	check_value("'1'", "\"1\"");
	check_value("\"1e3\"", "\"1e3\"");
	check_value("\"null\"", "\"null\"");
	check_value("''", "\"\"");
	check_value("\"~\"", "\"~\"");
	check_value("\".inf\"", "\".inf\"");
	check_value("'it''s'", "\"it's\"");
	check_value("\"tab\\there\\u00e9\"", "\"tab\\there\\u00e9\"");
}

Test(yaml_scalars, block_scalars)
{
	check_yaml("v: |\n  a\n  b\n\n", "{\"v\": \"a\\nb\\n\"}");
	check_yaml("v: |-\n  a\n  b\n\n", "{\"v\": \"a\\nb\"}");
	check_yaml("v: |+\n  a\n  b\n\nw: 1\n",
		   "{\"v\": \"a\\nb\\n\\n\", \"w\": 1}");
	check_yaml("v: >\n  a\n  b\n\n  c\n", "{\"v\": \"a b\\nc\\n\"}");
	check_yaml("v: >-\n  a\n  b\n", "{\"v\": \"a b\"}");
	check_yaml("v: |2\n    indented\n  x\n",
		   "{\"v\": \"  indented\\nx\\n\"}");
	check_yaml("v: |\n  true\n", "{\"v\": \"true\\n\"}");
	check_yaml("v: >-\n  123\n", "{\"v\": \"123\"}");
}

/* ------------------------------------------------------------------ */
/* Tags                                                                */

Test(yaml_tags, explicit_types)
{
	check_value("!!str 123", "\"123\"");
	check_value("!!str yes", "\"yes\"");
	check_value("!!str ~", "\"~\"");
	check_value("!!str", "\"\"");
	check_value("!!int \"12\"", "12");
	check_value("!!int '0x10'", "16");
	check_value("!!int 18446744073709551615", "18446744073709551615.0");
	check_value("!!float 1.5", "1.5");
	check_value("!!float \"2.5\"", "2.5");
	check_value("!!float 1", "1"); /* an integral float: see the header */
	check_value("!!bool yes", "true");
	check_value("!!bool \"false\"", "false");
	check_value("!!null ~", "null");
	check_value("!!null ''", "null");
	check_value("!!timestamp 2001-12-14", "\"2001-12-14\"");
	check_value("!!timestamp \"2001-12-14T21:59:43Z\"",
		    "\"2001-12-14T21:59:43Z\"");
	check_value("!<tag:yaml.org,2002:int> 7", "7");
	check_yaml("%TAG !y! tag:yaml.org,2002:\n---\nv: !y!int '5'\n",
		   "{\"v\": 5}");
}

Test(yaml_tags, binary)
{
	check_value("!!binary aGVsbG8=", "\"hello\"");
	check_value("!!binary aGk=", "\"hi\"");
	check_value("!!binary \"\"", "\"\"");
	/* go-yaml's decoder is not strict: leftover bits are dropped */
	check_value("!!binary aGl=", "\"hi\"");
	check_yaml("v: !!binary |\n  aGVs\n  bG8gd29y\n  bGQ=\n",
		   "{\"v\": \"hello world\"}");
	check_error("v: !!binary aGVsbG8\n", ERR_PARSE,
		    "t.yaml:1:4: !!binary value contains invalid base64 data");
	check_error("v: !!binary 'aGk= x'\n", ERR_PARSE, "invalid base64");
	check_error("v: !!binary a===\n", ERR_PARSE, "invalid base64");
	/* 0xFF: not UTF-8, so not a JSON string. */
	check_error("v: !!binary /w==\n", ERR_PARSE,
		    "t.yaml:1:4: !!binary value is not valid UTF-8");
	/* A NUL byte. */
	check_error("v: !!binary AA==\n", ERR_PARSE, "NUL character");
}

Test(yaml_tags, unknown_tags_keep_the_text)
{
	check_value("!foo bar", "\"bar\"");
	check_value("!foo 12", "\"12\"");
	check_value("! 12", "\"12\"");
	check_value("!foo true", "\"true\"");
	check_value("!!map 12", "\"12\"");
	check_yaml("v: !foo {a: 1}\nw: !bar [1]\n",
		   "{\"v\": {\"a\": 1}, \"w\": [1]}");
	check_yaml("v: !!map {a: 1}\nw: !!seq [1]\n",
		   "{\"v\": {\"a\": 1}, \"w\": [1]}");
}

Test(yaml_tags, mismatches_are_errors)
{
	check_error("v: !!int abc\n", ERR_PARSE,
		    "t.yaml:1:4: cannot decode !!str `abc` as a !!int");
	check_error("v: !!int 1.5\n", ERR_PARSE,
		    "cannot decode !!float `1.5` as a !!int");
	check_error("v: !!int 2001-12-14\n", ERR_PARSE,
		    "cannot decode !!str `2001-12-14` as a !!int");
	check_error("v: !!bool 1\n", ERR_PARSE,
		    "cannot decode !!int `1` as a !!bool");
	check_error("v: !!float abc\n", ERR_PARSE,
		    "cannot decode !!str `abc` as a !!float");
	check_error("v: !!float 18446744073709551615\n", ERR_PARSE,
		    "cannot decode !!int `18446744073709551615` as a !!float");
	check_error("v: !!null 0\n", ERR_PARSE,
		    "cannot decode !!int `0` as a !!null");
	check_error("v: !!timestamp abc\n", ERR_PARSE,
		    "cannot decode !!str `abc` as a !!timestamp");
	check_error("v: !!seq {a: 1}\n", ERR_PARSE,
		    "t.yaml:1:4: cannot decode !!map as a !!seq");
	check_error("v: !!map [1]\n", ERR_PARSE,
		    "cannot decode !!seq as a !!map");
	check_error("v: !!str [1]\n", ERR_PARSE,
		    "cannot decode !!seq as a !!str");
}

Test(yaml_tags, nul_in_strings_is_refused)
{
	check_error("v: \"a\\0b\"\n", ERR_PARSE,
		    "t.yaml:1:4: string contains a NUL character");
	check_error("v: \"\\x00\"\n", ERR_PARSE, "NUL character");
	check_error("\"a\\0\": 1\n", ERR_PARSE,
		    "t.yaml:1:1: key contains a NUL");
}

/* ------------------------------------------------------------------ */
/* Keys                                                                */

Test(yaml_keys, stringified_like_sigs_k8s_io_yaml)
{
	check_key("y", "true");
	check_key("on", "true");
	check_key("n", "false");
	check_key("No", "false");
	check_key("1", "1");
	check_key("-1", "-1");
	check_key("0x10", "16");
	check_key("017", "15");
	check_key("1_000", "1000");
	check_key("1.5", "1.5");
	check_key("0.1", "0.1");
	check_key("1e3", "1000");
	check_key("123456.0", "123456");
	check_key("1e6", "1e+06");
	check_key("0.00001", "1e-05");
	check_key("0.0001", "0.0001");
	/* float32 precision, as FormatFloat(f, 'g', -1, 32). */
	check_key("3.14159265358979", "3.1415927");
	check_key(".inf", ".inf");
	check_key("-.Inf", "-.inf");
	check_key(".nan", ".nan");
	check_key("2001-12-14", "2001-12-14");
	check_key("\"1\"", "1");
	check_key("'yes'", "yes");
	check_key("!!str 1", "1");
	check_key("\"<<\"", "<<");
	check_key("18446744073709551615", "18446744073709551615");
	check_yaml("? |\n  block\n: 1\n", "{\"block\\n\": 1}");
}

Test(yaml_keys, alias_keys)
{
	check_yaml("a: &k 5\nb:\n  *k : x\n",
		   "{\"a\": 5, \"b\": {\"5\": \"x\"}}");
	check_yaml("a: &k name\nb:\n  *k : x\n",
		   "{\"a\": \"name\", \"b\": {\"name\": \"x\"}}");
	check_error(
		"a: &k [1]\nb:\n  *k : x\n", ERR_PARSE,
		"t.yaml:3:3: a mapping key must be a scalar, not a sequence");
}

Test(yaml_keys, collections_cannot_be_keys)
{
	check_error(
		"? [a]\n: b\n", ERR_PARSE,
		"t.yaml:1:3: a mapping key must be a scalar, not a sequence");
	check_error(
		"x:\n  {a: 1}: b\n", ERR_PARSE,
		"t.yaml:2:3: a mapping key must be a scalar, not a mapping");
}

Test(yaml_keys, duplicates)
{
	check_error("a: 1\nb: 2\na: 3\n", ERR_PARSE,
		    "t.yaml:3:1: duplicate key \"a\" (first at line 1)");
	check_error("metadata:\n  name: a\n  labels: {}\n  name: b\n",
		    ERR_PARSE,
		    "t.yaml:4:3: duplicate key \"name\" (first at line 2)");
	/* After stringification. */
	check_error("y: 1\ntrue: 2\n", ERR_PARSE,
		    "t.yaml:2:1: duplicate key \"true\" (first at line 1)");
	check_error("1: a\n\"1\": b\n", ERR_PARSE,
		    "t.yaml:2:1: duplicate key \"1\" (first at line 1)");
	check_error("0x10: a\n16: b\n", ERR_PARSE, "duplicate key \"16\"");
	/* A null key is refused, as kubectl refuses it. */
	check_error("~: a\n", ERR_PARSE,
		    "t.yaml:1:1: a mapping key cannot be null");
	check_error("a: 1\nnull: b\n", ERR_PARSE,
		    "t.yaml:2:1: a mapping key cannot be null");
	check_error("a: &n\nb:\n  *n : x\n", ERR_PARSE,
		    "a mapping key cannot be null");
	check_error("m: {a: 1, b: 2, a: 3}\n", ERR_PARSE,
		    "t.yaml:1:17: duplicate key \"a\" (first at line 1)");
	/* The same key in different mappings is fine. */
	check_yaml("a: {id: 1}\nb: {id: 2}\nc:\n- id: 3\n- id: 4\n",
		   "{\"a\": {\"id\": 1}, \"b\": {\"id\": 2},"
		   " \"c\": [{\"id\": 3}, {\"id\": 4}]}");
	/* A key of the outer mapping after a nested one. */
	check_error("a:\n  b: 1\n  c:\n    d: 1\n  e: 2\n  b: 3\n", ERR_PARSE,
		    "t.yaml:6:3: duplicate key \"b\" (first at line 2)");
}

/* ------------------------------------------------------------------ */
/* Merge keys, anchors, aliases                                        */

Test(yaml_merge, single)
{
	check_yaml("base: &b {a: 1, b: 2}\n"
		   "m:\n  <<: *b\n  b: 3\n  c: 4\n",
		   "{\"base\": {\"a\": 1, \"b\": 2},"
		   " \"m\": {\"a\": 1, \"b\": 3, \"c\": 4}}");
	check_yaml("m:\n  <<: {a: 1}\n  b: 2\n",
		   "{\"m\": {\"a\": 1, \"b\": 2}}");
	check_yaml("m:\n  !!merge <<: {a: 1}\n", "{\"m\": {\"a\": 1}}");
}

Test(yaml_merge, list_earlier_wins)
{
	check_yaml("x: &x {a: 1, b: 1}\n"
		   "z: &y {b: 2, c: 2}\n"
		   "m:\n  <<: [*x, *y]\n  d: 3\n",
		   "{\"x\": {\"a\": 1, \"b\": 1}, \"z\": {\"b\": 2, \"c\": 2},"
		   " \"m\": {\"a\": 1, \"b\": 1, \"c\": 2, \"d\": 3}}");
	check_yaml("x: &x {a: 1, b: 1}\n"
		   "z: &y {b: 2, c: 2}\n"
		   "m:\n  <<: [*y, *x]\n",
		   "{\"x\": {\"a\": 1, \"b\": 1}, \"z\": {\"b\": 2, \"c\": 2},"
		   " \"m\": {\"a\": 1, \"b\": 2, \"c\": 2}}");
}

Test(yaml_merge, explicit_keys_win_wherever_they_are)
{
	check_yaml("x: &x {a: 1, b: 1, c: 1}\n"
		   "m:\n  a: 0\n  <<: *x\n  c: 2\n",
		   "{\"x\": {\"a\": 1, \"b\": 1, \"c\": 1},"
		   " \"m\": {\"a\": 0, \"b\": 1, \"c\": 2}}");
	/* Explicit keys still may not repeat. */
	check_error("x: &x {a: 1}\nm:\n  <<: *x\n  a: 2\n  a: 3\n", ERR_PARSE,
		    "t.yaml:5:3: duplicate key \"a\" (first at line 4)");
}

Test(yaml_merge, quoted_is_a_plain_key)
{
	check_yaml("\"<<\": {a: 1}\n", "{\"<<\": {\"a\": 1}}");
}

Test(yaml_merge, bad_values)
{
	check_error("m:\n  <<: 1\n", ERR_PARSE,
		    "t.yaml:2:7: map merge requires a mapping or a sequence "
		    "of mappings");
	check_error("m:\n  <<: [{a: 1}, 2]\n", ERR_PARSE, "map merge requires");
	check_error("s: &s [1]\nm:\n  <<: *s\n", ERR_PARSE,
		    "map merge requires");
	check_error("m:\n  <<:\n", ERR_PARSE, "map merge requires");
	/* go-yaml v2 refuses an alias to a sequence, even of mappings. */
	check_error("a: &a {x: 1}\ns: &s [*a]\nm:\n  <<: *s\n", ERR_PARSE,
		    "t.yaml:4:7: map merge requires");
	check_yaml("a: &a {x: 1}\nm:\n  <<: []\n  <<: [*a]\n",
		   "{\"a\": {\"x\": 1}, \"m\": {\"x\": 1}}");
}

Test(yaml_anchors, alias_is_a_deep_copy)
{
	json_t *doc = parse_one("a: &x {k: [1, 2], s: str}\nb: *x\n"
				"c: &y hello\nd: *y\n");
	json_t *a = json_object_get(doc, "a"), *b = json_object_get(doc, "b");
	json_t *want = json_loads("{\"k\": [1, 2], \"s\": \"str\"}", 0, NULL);

	cr_assert(json_equal(a, b));
	cr_assert_neq(a, b);
	cr_assert_neq(json_object_get(a, "k"), json_object_get(b, "k"));
	cr_assert_neq(json_object_get(doc, "c"), json_object_get(doc, "d"));
	json_array_append_new(json_object_get(a, "k"), json_integer(3));
	json_object_set_new(a, "s", json_string("changed"));
	cr_assert(json_equal(b, want), "b changed with a");
	json_decref(want);
	json_decref(doc);
}

Test(yaml_anchors, merged_values_are_copies)
{
	json_t *doc = parse_one("base: &b {k: [1]}\nm:\n  <<: *b\n");
	json_t *k1 = json_object_get(json_object_get(doc, "base"), "k");
	json_t *k2 = json_object_get(json_object_get(doc, "m"), "k");

	cr_assert_not_null(k2);
	cr_assert_neq(k1, k2);
	cr_assert_eq(k1->refcount, 1);
	cr_assert_eq(k2->refcount, 1);
	json_decref(doc);
}

Test(yaml_anchors, aliases_and_redefinition)
{
	check_yaml("- &a 1\n- *a\n- &a 2\n- *a\n", "[1, 1, 2, 2]");
	check_yaml("- &a [x, &b z]\n- *b\n- *a\n",
		   "[[\"x\", \"z\"], \"z\", [\"x\", \"z\"]]");
	/* y and n are booleans in YAML 1.1, as keys too. */
	check_yaml("- &a [x, &b y]\n- *b\n", "[[\"x\", true], true]");
}

Test(yaml_anchors, undefined_or_recursive)
{
	check_error("a: 1\nb: *nope\n", ERR_PARSE,
		    "t.yaml:2:4: unknown anchor 'nope' referenced");
	check_error("a: &x [1, *x]\n", ERR_PARSE,
		    "t.yaml:1:11: anchor 'x' value contains itself");
	/* Anchors do not cross documents; the first document is kept. */
	cr_assert_eq(check_error("a: &x 1\n---\nb: *x\n", ERR_PARSE,
				 "t.yaml:3:4: unknown anchor 'x'"),
		     1);
}

/* 9 levels of 9 aliases: 9^9 nodes if expanded. */
static const char laughs[] =
	"a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\","
	"\"lol\",\"lol\"]\n"
	"b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
	"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
	"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
	"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
	"f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
	"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
	"h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
	"i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";

Test(yaml_anchors, billion_laughs, .timeout = 10)
{
	check_error(laughs, ERR_LIMIT,
		    "alias expansion exceeds 100000 nodes (a 'billion laughs' "
		    "document?)");
	/* The error is where the budget ran out: on line 6 (f:). */
	check_error(laughs, ERR_LIMIT, "t.yaml:6:");
}

Test(yaml_anchors, alias_budget_is_per_stream)
{
	struct buf doc = BUF_INIT, all = BUF_INIT;

	/* 1001 nodes, copied 60 times: 60060 per document. */
	buf_adds(&doc, "---\na: &x [");
	for (int i = 0; i < 1000; i++)
		buf_addf(&doc, "%s%d", i ? "," : "", i);
	buf_adds(&doc, "]\nb: [");
	for (int i = 0; i < 60; i++)
		buf_addf(&doc, "%s*x", i ? "," : "");
	buf_adds(&doc, "]\n");
	json_decref(parse_one(doc.ptr));
	buf_add(&all, doc.ptr, doc.len);
	buf_add(&all, doc.ptr, doc.len);
	cr_assert_eq(check_error(all.ptr, ERR_LIMIT, "alias expansion exceeds"),
		     1);
	buf_release(&doc);
	buf_release(&all);
}

/* ------------------------------------------------------------------ */
/* Depth                                                               */

static char *nested(const char *open, const char *close, unsigned n)
{
	struct buf b = BUF_INIT;

	for (unsigned i = 0; i < n; i++)
		buf_adds(&b, open);
	for (unsigned i = 0; i < n; i++)
		buf_adds(&b, close);
	return buf_detach(&b, NULL);
}

Test(yaml_depth, flow_limit)
{
	char *ok = nested("[", "]", RENDER_MAX_DEPTH);
	char *deep = nested("[", "]", RENDER_MAX_DEPTH + 1);
	json_t *v;

	/* A YAML stream that starts with "[" is read as JSON ... */
	v = parse_one(ok);
	json_decref(v);
	check_error(deep, ERR_LIMIT, "nesting deeper than 512 levels");
	free(ok);
	free(deep);

	/* ... so put a key first to get the YAML path. */
	ok = nested("[", "]", RENDER_MAX_DEPTH - 1);
	deep = nested("[", "]", RENDER_MAX_DEPTH);
	{
		struct buf a = BUF_INIT, b = BUF_INIT;

		buf_addf(&a, "k: %s\n", ok);
		buf_addf(&b, "k: %s\n", deep);
		v = parse_one(a.ptr);
		json_decref(v);
		check_error(b.ptr, ERR_LIMIT,
			    "t.yaml:1:515: nesting deeper than 512 levels");
		buf_release(&a);
		buf_release(&b);
	}
	free(ok);
	free(deep);
}

Test(yaml_depth, huge_nesting_does_not_recurse, .timeout = 10)
{
	char *deep = nested("[", "]", 200000);
	struct buf b = BUF_INIT;

	buf_addf(&b, "k: %s\n", deep);
	check_error(b.ptr, ERR_LIMIT, "nesting deeper than 512 levels");
	check_error(deep, ERR_LIMIT, "nesting deeper than 512 levels");
	buf_release(&b);
	free(deep);
}

Test(yaml_depth, block_nesting)
{
	struct buf b = BUF_INIT;

	for (unsigned i = 0; i <= RENDER_MAX_DEPTH; i++) {
		for (unsigned k = 0; k < i; k++)
			buf_adds(&b, " ");
		buf_adds(&b, "k:\n");
	}
	/* 513 mappings, the last one's value is null. */
	check_error(b.ptr, ERR_LIMIT, "t.yaml:513:513: nesting deeper");
	buf_release(&b);
}

Test(yaml_depth, through_aliases)
{
	char *inner = nested("[", "]", 300);
	struct buf b = BUF_INIT;

	buf_addf(&b, "a: &a %s\nb: %s\n", inner, "");
	/* Put *a at depth 300: 300 + 300 levels. */
	buf_truncate(&b, b.len - 1);
	for (int i = 0; i < 300; i++)
		buf_adds(&b, "[");
	buf_adds(&b, "*a");
	for (int i = 0; i < 300; i++)
		buf_adds(&b, "]");
	buf_adds(&b, "\n");
	check_error(b.ptr, ERR_LIMIT, "nesting deeper than 512 levels");
	buf_release(&b);
	free(inner);
}

/* ------------------------------------------------------------------ */
/* Streams and positions                                               */

Test(yaml_stream, documents_and_positions)
{
	const char *s = "# head\n"	      /* 1 */
			"---\n"		      /* 2 */
			"a: 1\n"	      /* 3 */
			"---\n"		      /* 4 */
			"---\n"		      /* 5 */
			"~\n"		      /* 6 */
			"---\n"		      /* 7 */
			"null\n"	      /* 8 */
			"...\n"		      /* 9 */
			"---\n"		      /* 10 */
			"# comment\n"	      /* 11 */
			"  b: 2\n"	      /* 12 */
			"---\n"		      /* 13 */
			"- x\n"		      /* 14 */
			"--- 5\n"	      /* 15 */
			"--- !!str\n"	      /* 16 */
			"---\n"		      /* 17 */
			"# only a comment\n"; /* 18 */
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err err = ERR_INIT;
	const char *want[] = {"{\"a\": 1}", "{\"b\": 2}", "[\"x\"]", "5",
			      "\"\""};
	const unsigned lines[] = {3, 12, 14, 15, 16};
	const unsigned cols[] = {1, 3, 1, 5, 5};

	cr_assert_eq(render_parse(&docs, s, strlen(s), "t.yaml", &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(docs.len, 5);
	for (size_t i = 0; i < docs.len; i++) {
		json_t *w = json_loads(want[i], JSON_DECODE_ANY, NULL);

		cr_assert(json_equal(docs.items[i].value, w), "doc %zu", i);
		cr_assert_eq(docs.items[i].line, lines[i], "doc %zu line %u", i,
			     docs.items[i].line);
		cr_assert_eq(docs.items[i].column, cols[i], "doc %zu col %u", i,
			     docs.items[i].column);
		json_decref(w);
	}
	render_docs_release(&docs);
	render_docs_release(&docs); /* idempotent */
	render_docs_release(NULL);
	err_release(&err);
}

Test(yaml_stream, empty_inputs)
{
	const char *inputs[] = {"",
				"\n\n",
				"# c\n",
				"---\n",
				"---\n...\n",
				"--- ~\n--- null\n",
				"\xEF\xBB\xBF"};

	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		struct render_docs docs = RENDER_DOCS_INIT;
		struct err err = ERR_INIT;

		cr_assert_eq(render_parse(&docs, inputs[i], strlen(inputs[i]),
					  "t.yaml", &err),
			     0, "[%s]: %s", inputs[i], err_msg(&err));
		cr_assert_eq(docs.len, 0, "[%s]", inputs[i]);
		render_docs_release(&docs);
		err_release(&err);
	}
	{
		struct render_docs docs = RENDER_DOCS_INIT;

		cr_assert_eq(render_parse(&docs, NULL, 0, NULL, NULL), 0);
		cr_assert_eq(docs.len, 0);
	}
}

Test(yaml_stream, appends_to_existing_docs)
{
	struct render_docs docs = RENDER_DOCS_INIT;

	cr_assert_eq(render_parse(&docs, "a: 1\n", 5, "x", NULL), 0);
	cr_assert_eq(render_parse(&docs, "b: 2\n---\nc: 3\n", 14, "y", NULL),
		     0);
	cr_assert_eq(docs.len, 3);
	cr_assert_eq(docs.items[2].line, 3);
	render_docs_release(&docs);
}

Test(yaml_stream, scalar_and_list_documents)
{
	check_yaml("hello\n", "\"hello\"");
	check_yaml("- a\n- 1\n", "[\"a\", 1]");
	check_yaml("--- 'x'\n", "\"x\"");
}

Test(yaml_stream, crlf_and_bom)
{
	json_t *v = parse_one("\xEF\xBB\xBF"
			      "a: 1\r\nb: yes\r\n");
	json_t *w = json_loads("{\"a\": 1, \"b\": true}", 0, NULL);
	struct render_docs docs = RENDER_DOCS_INIT;

	cr_assert(json_equal(v, w));
	json_decref(v);
	json_decref(w);
	cr_assert_eq(render_parse(&docs, "\xEF\xBB\xBF  k: v\n", 10, "t", NULL),
		     0);
	cr_assert_eq(docs.items[0].line, 1);
	cr_assert_eq(docs.items[0].column, 3);
	render_docs_release(&docs);
	check_yaml("\xEF\xBB\xBF{\"a\": 1.0}", "{\"a\": 1}");
}

Test(yaml_stream, docs_before_an_error_are_kept)
{
	cr_assert_eq(check_error("a: 1\n---\nb: 2\n---\nc: [\n", ERR_PARSE,
				 "t.yaml:"),
		     2);
	cr_assert_eq(check_error("a: 1\n---\nb: .inf\n", ERR_PARSE,
				 "t.yaml:3:4: .inf"),
		     1);
}

Test(yaml_stream, name_in_messages)
{
	struct err err = ERR_INIT;
	struct render_docs docs = RENDER_DOCS_INIT;

	cr_assert_eq(
		render_parse(&docs, "a: *x\n", 6, "apps/web/deploy.yaml", &err),
		ERR_PARSE);
	cr_assert_str_eq(err_first(&err), "apps/web/deploy.yaml:1:4: unknown "
					  "anchor 'x' referenced");
	err_reset(&err);
	cr_assert_eq(render_parse(&docs, "a: *x\n", 6, NULL, &err), ERR_PARSE);
	cr_assert(strstr(err_first(&err), "<input>:1:4:"));
	/* err may be NULL */
	cr_assert_eq(render_parse(&docs, "a: *x\n", 6, NULL, NULL), ERR_PARSE);
	cr_assert_eq(docs.len, 0);
	err_release(&err);
}

/* ------------------------------------------------------------------ */
/* libyaml errors                                                      */

Test(yaml_errors, tab_indentation)
{
	check_error("a:\n\tb: 1\n", ERR_PARSE,
		    "t.yaml:2:1: found character that cannot start any token "
		    "(while scanning for the next token)");
}

Test(yaml_errors, unterminated_quote)
{
	check_error("a: \"abc\nb: 1\n", ERR_PARSE,
		    "found unexpected end of stream (while scanning a quoted "
		    "scalar started at 1:4)");
	check_error("a: 'abc\n", ERR_PARSE, "t.yaml:2:1: found unexpected end");
}

Test(yaml_errors, mapping_values_not_allowed)
{
	check_error("a: b: c\n", ERR_PARSE,
		    "t.yaml:1:5: mapping values are not allowed in this "
		    "context");
}

Test(yaml_errors, invalid_utf8)
{
	check_error("a: 1\nb: x\xff\n", ERR_PARSE,
		    "t.yaml:2:5: invalid leading UTF-8 octet (byte 0xFF)");
	/* libyaml points at the bad continuation byte, here the newline. */
	check_error("a: 1\nbé: x\xc3\n", ERR_PARSE,
		    "t.yaml:2:7: invalid trailing UTF-8 octet (byte 0x0A)");
	check_error("a: 1\nbé: x\xc3", ERR_PARSE,
		    "t.yaml:2:6: incomplete UTF-8 octet sequence");
	check_error("a: \xed\xa0\x80\n", ERR_PARSE, "t.yaml:1:4:");
}

Test(yaml_errors, nul_byte)
{
	static const char s[] = "a: 1\nb: x\0y\nc: 3\n";

	check_error_n(s, sizeof(s) - 1, ERR_PARSE,
		      "t.yaml:2:5: control characters are not allowed (U+0000, "
		      "a NUL byte)");
	check_error_n("\0", 1, ERR_PARSE, "t.yaml:1:1: control characters");
	check_error_n("a: 1\n\0", 6, ERR_PARSE, "t.yaml:2:1: control");
	check_error("a: \x01\n", ERR_PARSE,
		    "t.yaml:1:4: control characters are not allowed (U+0001)");
}

Test(yaml_errors, nul_byte_deep_in_a_large_stream)
{
	struct buf b = BUF_INIT;

	for (int i = 0; i < 5000; i++)
		buf_addf(&b, "k%d: value number %d\n", i, i);
	buf_add(&b, "z: \0\n", 5);
	check_error_n(b.ptr, b.len, ERR_PARSE, "t.yaml:5001:4: control");
	buf_release(&b);
}

/* ------------------------------------------------------------------ */
/* JSON                                                                */

Test(yaml_json, single_value)
{
	check_yaml("{\"a\": 1, \"b\": [true, null, \"x\", 1.5, 2.0, 1e3]}",
		   "{\"a\": 1, \"b\": [true, null, \"x\", 1.5, 2, 1000]}");
	check_yaml("  \n[1, 2]", "[1, 2]");
	/* JSON never goes through YAML resolution. */
	check_yaml("{\"a\": \"yes\", \"y\": \"0x10\"}",
		   "{\"a\": \"yes\", \"y\": \"0x10\"}");
}

Test(yaml_json, concatenated_values)
{
	const char *s = "{\"a\": 1}\n"
			"  {\"b\": 2} [3]\n"
			"null\n"
			"\n"
			"{\"c\":\n 4}";
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err err = ERR_INIT;
	const unsigned lines[] = {1, 2, 2, 5}, cols[] = {1, 3, 12, 1};

	cr_assert_eq(render_parse(&docs, s, strlen(s), "t.json", &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(docs.len, 4);
	for (size_t i = 0; i < docs.len; i++) {
		cr_assert_eq(docs.items[i].line, lines[i], "doc %zu: line %u",
			     i, docs.items[i].line);
		cr_assert_eq(docs.items[i].column, cols[i], "doc %zu: col %u",
			     i, docs.items[i].column);
	}
	cr_assert(json_is_array(docs.items[2].value));
	render_docs_release(&docs);
	/* Top-level scalars after the first value, integral reals too. */
	cr_assert_eq(render_parse(&docs, "[1]4.0 \"x\" 2.5", 14, "t", &err), 0);
	cr_assert_eq(docs.len, 4);
	cr_assert(json_is_integer(docs.items[1].value));
	cr_assert_eq(json_integer_value(docs.items[1].value), 4);
	cr_assert_str_eq(json_string_value(docs.items[2].value), "x");
	cr_assert(json_is_real(docs.items[3].value));
	render_docs_release(&docs);
	err_release(&err);
	check_yaml("[1]", "[1]");
}

Test(yaml_json, errors_with_positions)
{
	check_error("{\"a\": 1,\n \"a\": 2}", ERR_PARSE,
		    "t.yaml:2:4: duplicate object key");
	check_error("{\"a\":\n  }", ERR_PARSE,
		    "t.yaml:2:3: unexpected token near '}'");
	cr_assert_eq(check_error("{}\n{} x", ERR_PARSE, "t.yaml:2:4:"), 2);
	/*
	 * JSON integers beyond int64 are an error (jansson cannot hold them;
	 * rereading them as reals would silently round the ones below 2^64).
	 * YAML turns [2^63, 2^64) into reals instead, as go-yaml's uint64.
	 */
	check_error("{\"a\": 18446744073709551616}", ERR_PARSE,
		    "t.yaml:1:26: too big integer near '18446744073709551616' "
		    "(integers must fit in 64 bits; quote the value)");
	check_error("{\"a\": 9223372036854775808}", ERR_PARSE,
		    "too big integer");
	check_error("{\"a\": 1e400}", ERR_PARSE, "real number overflow");
	check_error("{\"a\": \"\\u0000\"}", ERR_PARSE,
		    "NUL character (\\u0000)");
	check_error_n("{\"a\": \"x\0\"}", 11, ERR_PARSE,
		      "t.yaml:1:8: control character 0x0");
	check_error("{\"a\": \"\xff\"}", ERR_PARSE, "t.yaml:1:8:");
	check_error("{\"a\": [1, 2}", ERR_PARSE, "t.yaml:1:12:");
}

Test(yaml_json, depth)
{
	char *deep = nested("[", "]", RENDER_MAX_DEPTH + 1);
	char *deeper = nested("[", "]", 5000);
	struct buf b = BUF_INIT;

	check_error(deep, ERR_LIMIT, "t.yaml:1:1: nesting deeper than 512");
	check_error(deeper, ERR_LIMIT, "nesting deeper than 512");
	buf_addf(&b, "{\"a\": %s}", deep);
	check_error(b.ptr, ERR_LIMIT, "nesting deeper than 512");
	buf_release(&b);
	free(deep);
	free(deeper);
}

/* ------------------------------------------------------------------ */
/* Real-world manifests                                                */

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct buf b = BUF_INIT;
	char chunk[65536];
	size_t n;

	cr_assert_not_null(f, "cannot open %s", path);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	return buf_detach(&b, len);
}

/* Does any "enum" array under v hold the string s? */
static bool enum_has(const json_t *v, const char *s)
{
	const char *k;
	json_t *c, *e;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, c)
		{
			if (!strcmp(k, "enum") && json_is_array(c)) {
				json_array_foreach(c, i, e)
				{
					if (json_is_string(e) &&
					    !strcmp(json_string_value(e), s))
						return true;
				}
			}
			if (enum_has(c, s))
				return true;
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, c)
		{
			if (enum_has(c, s))
				return true;
		}
	}
	return false;
}

static size_t parse_tree(const char *dir, size_t *files)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t docs_total = 0;

	cr_assert_not_null(d, "cannot open %s (tests run from the repo root)",
			   dir);
	while ((de = readdir(d))) {
		char path[4096];
		struct stat sb;
		struct render_docs docs = RENDER_DOCS_INIT;
		struct err err = ERR_INIT;
		size_t len;
		char *data;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		cr_assert_eq(stat(path, &sb), 0);
		if (S_ISDIR(sb.st_mode)) {
			docs_total += parse_tree(path, files);
			continue;
		}
		data = read_file(path, &len);
		cr_assert_eq(render_parse(&docs, data, len, path, &err), 0,
			     "%s", err_msg(&err));
		cr_assert_geq(docs.len, 1, "%s: no documents", path);
		for (size_t i = 0; i < docs.len; i++) {
			json_t *v = docs.items[i].value;

			cr_assert(json_is_object(v), "%s: doc %zu", path, i);
			cr_assert(json_is_string(json_object_get(v, "kind")),
				  "%s: doc %zu has no kind", path, i);
		}
		docs_total += docs.len;
		(*files)++;
		render_docs_release(&docs);
		err_release(&err);
		free(data);
	}
	closedir(d);
	return docs_total;
}

/* The shared fixtures are beside the checkout, or the test is skipped. */
static void need_fixtures(void)
{
	if (access(KUBE_PROMETHEUS, R_OK)) {
		fprintf(stderr, "%s is absent: real-world YAML tests skipped\n",
			KUBE_PROMETHEUS);
		cr_skip_test("%s is absent", KUBE_PROMETHEUS);
	}
}

Test(yaml_real_world, kube_prometheus_manifests)
{
	size_t files = 0, docs;

	need_fixtures();
	docs = parse_tree(KUBE_PROMETHEUS, &files);

	cr_assert_geq(files, 90, "%zu files", files);
	cr_assert_geq(docs, files);
}

Test(yaml_real_world, alertmanager_crd_enum_has_equals)
{
	size_t len;
	char *data;
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err err = ERR_INIT;

	need_fixtures();
	data = read_file(KUBE_PROMETHEUS
			 "/setup/0alertmanagerConfigCustomResourceDefinition.yaml",
			 &len);

	cr_assert_eq(render_parse(&docs, data, len, "crd.yaml", &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(docs.len, 1);
	cr_assert(enum_has(docs.items[0].value, "="));
	cr_assert(enum_has(docs.items[0].value, "!~"));
	cr_assert_str_eq(
		json_string_value(json_object_get(docs.items[0].value, "kind")),
		"CustomResourceDefinition");
	render_docs_release(&docs);
	err_release(&err);
	free(data);
}
