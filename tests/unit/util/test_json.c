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
