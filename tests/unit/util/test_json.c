#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

/* fastjson_load() and json_loadb() agree on text: both refuse it, or both
 * read it and print the same compact text (keys in their order). */
static void expect_same(const char *text)
{
	size_t len = strlen(text);
	const char *why = "unset";
	json_t *mine = fastjson_load(text, len, &why, NULL);
	json_t *theirs = json_loadb(text, len, 0, NULL);

	cr_expect_eq(!mine, !theirs, "%s: fastjson %s, jansson %s", text,
		     mine ? "reads it" : "refuses it",
		     theirs ? "reads it" : "refuses it");
	if (mine && theirs) {
		char *a = json_dumps(mine, JSON_COMPACT);
		char *b = json_dumps(theirs, JSON_COMPACT);

		cr_expect_str_eq(a, b, "%s", text);
		cr_expect_null(why);
		free(a);
		free(b);
	} else if (!mine) {
		cr_expect_not_null(why, "%s: no reason", text);
	}
	json_decref(mine);
	json_decref(theirs);
}

Test(json, reads_what_jansson_reads)
{
	static const char *const texts[] = {
		"{}", "[]", " \t\r\n{ } \n", "[1,-2,0,-0,3.25,-1e3,1E-2,2e+2]",
		"{\"a\":\"x\",\"b\":{\"c\":[null,true,false]}}",
		"{\"b\":1,\"a\":2,\"b\":3}", /* a repeated key keeps its place */
		"[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]",
		"[\"\\u00e9\\u20ac\\ud83d\\ude00\", \"é€😀\"]",
		"[9223372036854775807,-9223372036854775808]",
		"[1e-400]", /* underflow: 0, not an error */
		"{\"k:{\\\"port\\\":80}\":{\".\":{}}}",
		"[\"\x7f\"]",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++)
		expect_same(texts[i]);
}

Test(json, refuses_what_jansson_refuses)
{
	static const char *const texts[] = {
		"", "  ", "1", "\"s\"", "null", "{", "[", "[1,]", "{\"a\"}",
		"{\"a\":1,}", "{a:1}", "[01]", "[-]", "[1.]", "[.5]", "[1e]",
		"[+1]", "[1 2]", "{} x", "[] []", "[\"\\u0000\"]",
		"{\"a\\u0000\":1}", "[\"\\ud800\"]", "[\"\\udc00\"]",
		"[\"\\ud800\\u0041\"]", "[\"\\x\"]", "[\"\\u12g4\"]",
		"[\"tab\there\"]", "[\"\xc0\x80\"]", "[\"\xed\xa0\x80\"]",
		"[\"\xf4\x90\x80\x80\"]", "[\"\xe2\x82\"]", "[\"abc",
		"[9223372036854775808]", "[-9223372036854775809]", "[1e400]",
		"[tru]", "[nul]", "[True]", "\xef\xbb\xbf[]",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++)
		expect_same(texts[i]);
}

Test(json, nesting_limit_as_jansson)
{
	/* jansson counts every value: 2048 levels read, 2049 do not. */
	for (int depth = 2046; depth <= 2050; depth++) {
		char *text = malloc((size_t)depth * 2 + 2);
		int n = 0;

		for (int i = 0; i < depth; i++)
			text[n++] = '[';
		for (int i = 0; i < depth; i++)
			text[n++] = ']';
		text[n] = '\0';
		expect_same(text);
		text[depth - 1] = '1'; /* a scalar one level down */
		expect_same(text);
		free(text);
	}
}

Test(json, long_strings_and_many_keys)
{
	struct buf {
		char *p;
		size_t n;
	} b = {malloc(1 << 20), 0};

	b.n += (size_t)sprintf(b.p, "{");
	for (int i = 0; i < 2000; i++)
		b.n += (size_t)sprintf(b.p + b.n, "%s\"key-%d-%0200d\":\"%0300d\"",
				       i ? "," : "", i, i, i);
	b.n += (size_t)sprintf(b.p + b.n, "}");
	expect_same(b.p);
	free(b.p);
}

/*
 * Strings are scanned eight bytes at a time: a byte that ends the plain
 * run (quote, backslash, control character, the bytes of a multibyte
 * character, bad UTF-8) is found at every offset within those eight.
 */
Test(json, every_special_byte_at_every_offset)
{
	static const char *const specials[] = {
		"\\\"", "\\\\", "\\n", "\\u00e9", "é", "€", "😀", "\x1f",
		"\x7f", "\xff", "\xc3", "\"", " ",
	};
	char text[128];

	for (size_t s = 0; s < sizeof(specials) / sizeof(*specials); s++)
		for (int at = 0; at < 20; at++) {
			snprintf(text, sizeof(text), "[\"%.*s%s%s\"]", at,
				 "abcdefghijklmnopqrstuvwxyz", specials[s],
				 "0123456789abcdef");
			expect_same(text);
		}
}

/* fastjson_load_items()'s take: texts offered, those with "take" kept. */
struct offered {
	char texts[8][128];
	size_t n;
};

static bool take_marked(const char *item, size_t len, void *ctx)
{
	struct offered *o = ctx;

	cr_assert_lt(o->n, 8);
	cr_assert_lt(len, sizeof(o->texts[0]));
	memcpy(o->texts[o->n], item, len);
	o->texts[o->n++][len] = '\0';
	return memmem(item, len, "\"take\"", 6) != NULL;
}

static char *dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

Test(json, items_taken_are_left_out)
{
	const char *text =
		"{\"kind\":\"List\",\"items\":[ {\"a\":1,\"take\":true} ,"
		"{\"b\":[1,2]},\n{\"take\":\"\\u00e9\"}, {\"c\":null}],"
		"\"metadata\":{\"continue\":\"x\"}}";
	struct offered o = {.n = 0};
	json_t *all = fastjson_load(text, strlen(text), NULL, NULL);
	json_t *kept = fastjson_load_items(text, strlen(text), NULL, NULL,
					   take_marked, &o);
	char *got;

	cr_assert_not_null(kept);
	got = dump(kept);
	cr_expect_str_eq(got, "{\"kind\":\"List\",\"items\":[{\"b\":[1,2]},"
			      "{\"c\":null}],\"metadata\":{\"continue\":\"x\"}}");
	free(got);
	/* Each item offered as its exact text, in order, whole. */
	cr_assert_eq(o.n, 4);
	cr_expect_str_eq(o.texts[0], "{\"a\":1,\"take\":true}");
	cr_expect_str_eq(o.texts[1], "{\"b\":[1,2]}");
	cr_expect_str_eq(o.texts[2], "{\"take\":\"\\u00e9\"}");
	cr_expect_str_eq(o.texts[3], "{\"c\":null}");
	for (size_t i = 0; i < o.n; i++) {
		json_t *item = fastjson_load(o.texts[i], strlen(o.texts[i]),
					     NULL, NULL);

		cr_expect(json_equal(item, json_array_get(
						   json_object_get(all, "items"),
						   i)),
			  "item %zu", i);
		json_decref(item);
	}
	json_decref(all);
	json_decref(kept);
}

Test(json, items_only_of_the_top_object)
{
	static const char *const texts[] = {
		"[{\"take\":1}]",			  /* not an object */
		"{\"x\":{\"items\":[{\"take\":1}]}}", /* not at the top */
		"{\"items\":{\"take\":1}}",		  /* not an array */
		"{\"items\":[]}",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++) {
		struct offered o = {.n = 0};
		json_t *v = fastjson_load_items(texts[i], strlen(texts[i]), NULL,
						NULL, take_marked, &o);
		json_t *w = fastjson_load(texts[i], strlen(texts[i]), NULL,
					  NULL);

		cr_expect_eq(o.n, 0, "%s: %zu offered", texts[i], o.n);
		cr_expect(json_equal(v, w), "%s", texts[i]);
		json_decref(v);
		json_decref(w);
	}
}

/* An item taken is checked all the same: the list fails as it would. */
Test(json, items_taken_are_checked)
{
	static const char *const texts[] = {
		"{\"items\":[{\"take\":01}]}",
		"{\"items\":[{\"take\":\"\\x\"}]}",
		"{\"items\":[{\"take\":1},]}",
		"{\"items\":[{\"take\":1} {\"take\":2}]}",
		"{\"items\":[{\"take\":\"\xc0\x80\"}]}",
		"{\"items\":[{\"take\":tru}]}",
		"{\"items\":[{\"take\":1}",
		"{\"items\":[{\"take\":[1,2}]}",
		"{\"items\":[{\"take\":1e400}]}",
		"{\"items\":[{\"take\":-9223372036854775809}]}",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++) {
		struct offered o = {.n = 0};
		const char *why1 = NULL, *why2 = NULL;
		size_t at1 = 0, at2 = 0;
		json_t *v = fastjson_load_items(texts[i], strlen(texts[i]),
						&why1, &at1, take_marked, &o);
		json_t *w = fastjson_load(texts[i], strlen(texts[i]), &why2,
					  &at2);

		cr_expect_null(v, "%s: read", texts[i]);
		cr_expect_null(w, "%s: read", texts[i]);
		cr_expect_not_null(why1, "%s: no reason", texts[i]);
		cr_expect_str_eq(why1 ? why1 : "", why2 ? why2 : "", "%s",
				 texts[i]);
		cr_expect_eq(at1, at2, "%s: at %zu, not %zu", texts[i], at1,
			     at2);
		json_decref(v);
		json_decref(w);
	}
}

Test(json, members_in_one_scan)
{
	static const char *const keys[] = {"name", "namespace", "uid"};
	struct fastjson_span v[3];
	const char *s;
	size_t n;
	const char *meta = "{\"na\\u006de\":\"a\",\"labels\":{\"uid\":\"no\"},"
			   "\"uid\":\"u-1\",\"name\":\"second\"}";

	cr_expect_eq(fastjson_members(meta, strlen(meta), keys, 3, v), 2);
	/* The escaped name is "name"; the first of a name counts. */
	cr_expect(fastjson_plain_string(&v[0], &s, &n));
	cr_expect_eq(n, 1);
	cr_expect_eq(s[0], 'a');
	cr_expect_null(v[1].text); /* absent */
	cr_expect(fastjson_plain_string(&v[2], &s, &n));
	cr_expect_eq(n, 3);
	cr_expect_eq(strncmp(s, "u-1", 3), 0); /* not the label's */

	/* Nothing is read after the last member needed... */
	const char *cut = "{\"name\":\"x\",\"uid\":\"y\",\"namespace\":\"z\",\"rest";
	cr_expect_eq(fastjson_members(cut, strlen(cut), keys, 3, v), 3);
	/* ...but a fault before it fails. */
	const char *bad = "{\"name\":\"x\",\"uid\":01,\"namespace\":\"z\"}";
	cr_expect_eq(fastjson_members(bad, strlen(bad), keys, 3, v), -1);
	cr_expect_eq(fastjson_members("[1]", 3, keys, 3, v), -1);
	cr_expect_eq(fastjson_members("{}", 2, keys, 3, v), 0);
	cr_expect_eq(fastjson_members("{\"uid\":{\"a\":[1,\"}\"]}}", 21, keys, 3,
				      v),
		     1);
	cr_expect_eq(v[2].len, 13);
}

Test(json, plain_strings_only)
{
	struct fastjson_span v;
	const char *s;
	size_t n;

	v = (struct fastjson_span){"\"abc\"", 5};
	cr_expect(fastjson_plain_string(&v, &s, &n));
	cr_expect_eq(n, 3);
	v = (struct fastjson_span){"\"\"", 2};
	cr_expect(fastjson_plain_string(&v, &s, &n));
	cr_expect_eq(n, 0);
	v = (struct fastjson_span){"\"a\\\"b\"", 6};
	cr_expect_not(fastjson_plain_string(&v, &s, &n)); /* escaped */
	v = (struct fastjson_span){"12", 2};
	cr_expect_not(fastjson_plain_string(&v, &s, &n));
	v = (struct fastjson_span){"null", 4};
	cr_expect_not(fastjson_plain_string(&v, &s, &n));
	v = (struct fastjson_span){NULL, 0};
	cr_expect_not(fastjson_plain_string(&v, &s, &n));
}
