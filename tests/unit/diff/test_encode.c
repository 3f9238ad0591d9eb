/*
 * diff_json_dump() and diff_yaml_dump().
 *
 * Data-driven: every tests/cases/encode/<case>/ holds input.json and what
 * kubectl prints for it, expected.yaml and expected.json (4-space indent).
 * The compact and 2-space forms are derived from expected.json by moving
 * whitespace only (Go's json.Marshal output is json.Compact of
 * MarshalIndent's). See tests/cases/encode/README.md.
 */
#include <criterion/criterion.h>
#include "tests/helpers/cases.h"
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diff/diff.h"

#define CASES	 "tests/cases/encode"
#define MAX_FILE (16 << 20)

static void read_file(struct buf *out, const char *path)
{
	char chunk[8192];
	size_t n;
	FILE *f = fopen(path, "rb");

	cr_assert_not_null(f, "cannot open %s", path);
	buf_init(out, MAX_FILE);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		cr_assert_eq(buf_add(out, chunk, n), 0, "%s too big", path);
	fclose(f);
}

static json_t *load_case(const char *name)
{
	char path[512];
	json_error_t jerr;
	json_t *j;

	snprintf(path, sizeof(path), CASES "/%s/input.json", name);
	j = json_load_file(path, JSON_ALLOW_NUL, &jerr);
	cr_assert_not_null(j, "%s:%d: %s", path, jerr.line, jerr.text);
	return j;
}

/* Fail with the first line that differs, both versions shown. */
static void expect_same(const char *what, const struct buf *want,
			const struct buf *got)
{
	const char *w = buf_cstr(want), *g = buf_cstr(got);
	size_t i = 0, line = 1, start = 0, wend, gend;

	if (want->len == got->len && !memcmp(w, g, want->len))
		return;
	while (i < want->len && i < got->len && w[i] == g[i]) {
		if (w[i] == '\n') {
			line++;
			start = i + 1;
		}
		i++;
	}
	for (wend = start; wend < want->len && w[wend] != '\n'; wend++)
		;
	for (gend = start; gend < got->len && g[gend] != '\n'; gend++)
		;
	cr_expect_fail("%s: line %zu differs\n want: %.*s\n  got: %.*s", what,
		       line, (int)(wend - start), w + start,
		       (int)(gend - start), g + start);
}

/* Go's json.Compact: drop the whitespace outside strings. */
static void json_compact(struct buf *out, const struct buf *in)
{
	bool in_string = false, escaped = false;
	size_t i;

	buf_init(out, 0);
	for (i = 0; i < in->len; i++) {
		char c = in->ptr[i];

		if (in_string) {
			if (escaped)
				escaped = false;
			else if (c == '\\')
				escaped = true;
			else if (c == '"')
				in_string = false;
		} else if (c == ' ' || c == '\n') {
			continue;
		} else if (c == '"') {
			in_string = true;
		}
		buf_addch(out, c);
	}
}

/* Re-indent 4-space MarshalIndent output with 2 spaces. */
static void json_reindent2(struct buf *out, const struct buf *in)
{
	size_t i = 0, sp;

	buf_init(out, 0);
	while (i < in->len) {
		for (sp = 0; i + sp < in->len && in->ptr[i + sp] == ' '; sp++)
			;
		cr_assert_eq(sp % 4, 0);
		for (size_t k = 0; k < sp / 2; k++)
			buf_addch(out, ' ');
		i += sp;
		while (i < in->len && in->ptr[i] != '\n')
			buf_addch(out, in->ptr[i++]);
		if (i < in->len)
			buf_addch(out, in->ptr[i++]);
	}
}

static bool is_case_dir(const struct dirent *d)
{
	char path[512];
	struct stat st;

	if (d->d_name[0] == '.')
		return false;
	snprintf(path, sizeof(path), CASES "/%s", d->d_name);
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static int case_filter(const struct dirent *d)
{
	return is_case_dir(d);
}

static struct criterion_test_params case_params(void)
{
	return case_dirs(CASES, case_filter);
}

ParameterizedTestParameters(encode_cases, yaml)
{
	return case_params();
}

ParameterizedTest(struct case_param *p, encode_cases, yaml)
{
	char path[512];
	struct buf want, got = BUF_INIT;
	json_t *in = load_case(p->name);

	snprintf(path, sizeof(path), CASES "/%s/expected.yaml", p->name);
	read_file(&want, path);
	cr_assert_eq(diff_yaml_dump(in, &got), 0, "%s", p->name);
	expect_same(path, &want, &got);
	buf_release(&want);
	buf_release(&got);
	json_decref(in);
}

ParameterizedTestParameters(encode_cases, json)
{
	return case_params();
}

/* indent 4 as in the file, then compact and indent 2 derived from it. */
ParameterizedTest(struct case_param *p, encode_cases, json)
{
	char path[512];
	struct buf want, alt, got = BUF_INIT;
	json_t *in = load_case(p->name);

	snprintf(path, sizeof(path), CASES "/%s/expected.json", p->name);
	read_file(&want, path);

	cr_assert_eq(diff_json_dump(in, 4, &got), 0, "%s", p->name);
	buf_addch(&got, '\n'); /* kubectl ends the document with one */
	expect_same(path, &want, &got);

	json_compact(&alt, &want); /* drops the final newline too */
	buf_reset(&got);
	cr_assert_eq(diff_json_dump(in, 0, &got), 0);
	expect_same("compact", &alt, &got);
	buf_release(&alt);

	json_reindent2(&alt, &want);
	buf_reset(&got);
	cr_assert_eq(diff_json_dump(in, 2, &got), 0);
	buf_addch(&got, '\n');
	expect_same("indent 2", &alt, &got);
	buf_release(&alt);

	buf_release(&want);
	buf_release(&got);
	json_decref(in);
}

Test(encode_cases, all_there)
{
	struct dirent **names;
	int n = scandir(CASES, &names, case_filter, alphasort);

	cr_assert_geq(n, 10, "want the 10 encode cases, have %d", n);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* --- behaviour the cases do not show --- */

static json_t *J(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);

	cr_assert_not_null(j, "bad test JSON: %s: %s", jerr.text, text);
	return j;
}

static void expect_json(const char *in, int indent, const char *want)
{
	struct buf b = BUF_INIT;
	json_t *j = J(in);

	cr_assert_eq(diff_json_dump(j, indent, &b), 0, "%s", in);
	cr_expect_str_eq(buf_cstr(&b), want, "%s", in);
	buf_release(&b);
	json_decref(j);
}

static void expect_yaml(const char *in, const char *want)
{
	struct buf b = BUF_INIT;
	json_t *j = J(in);

	cr_assert_eq(diff_yaml_dump(j, &b), 0, "%s", in);
	cr_expect_str_eq(buf_cstr(&b), want, "%s", in);
	buf_release(&b);
	json_decref(j);
}

Test(encode, json_compact_and_indent)
{
	expect_json("{\"b\":1,\"a\":[1,{},[]],\"c\":{\"y\":null,\"x\":true}}",
		    0,
		    "{\"a\":[1,{},[]],\"b\":1,\"c\":{\"x\":true,\"y\":null}}");
	expect_json("{\"b\":[],\"a\":{}}", 2,
		    "{\n  \"a\": {},\n  \"b\": []\n}");
	expect_json("[[1]]", 3, "[\n   [\n      1\n   ]\n]");
	expect_json("\"x\"", 4, "\"x\"");
}

/* Go sorts keys by their bytes; a key may hold NUL. */
Test(encode, json_key_bytes)
{
	struct buf b = BUF_INIT;
	json_t *j = json_object();

	json_object_setn_new(j, "a\0b", 3, json_integer(1));
	json_object_setn_new(j, "a", 1, json_integer(2));
	json_object_set_new(j, "B", json_integer(3));
	json_object_set_new(j, "\xc3\xa9", json_integer(4));
	cr_assert_eq(diff_json_dump(j, 0, &b), 0);
	cr_expect_str_eq(buf_cstr(&b),
			 "{\"B\":3,\"a\":2,\"a\\u0000b\":1,\"\xc3\xa9\":4}");
	buf_release(&b);
	json_decref(j);
}

/*
 * -0.0: Go's json prints "-0"; go-yaml reads that back as the int 0.
 * (kubectl annotate --local shows both; kubectl patch loses the sign.)
 */
Test(encode, negative_zero)
{
	struct buf b = BUF_INIT;
	json_t *j = json_pack("{s:f}", "a", -0.0);

	cr_assert_eq(diff_json_dump(j, 0, &b), 0);
	cr_expect_str_eq(buf_cstr(&b), "{\"a\":-0}");
	buf_reset(&b);
	cr_assert_eq(diff_yaml_dump(j, &b), 0);
	cr_expect_str_eq(buf_cstr(&b), "a: 0\n");
	buf_release(&b);
	json_decref(j);
}

/* Invalid UTF-8 reads as U+FFFD per bad byte, as Go's json.Marshal does. */
Test(encode, invalid_utf8)
{
	struct buf b = BUF_INIT;
	json_t *j = json_object();

	json_object_set_new(j, "k", json_stringn_nocheck("a\xff\xc3z", 4));
	cr_assert_eq(diff_json_dump(j, 0, &b), 0);
	cr_expect_str_eq(buf_cstr(&b), "{\"k\":\"a\\ufffd\\ufffdz\"}");
	buf_reset(&b);
	cr_assert_eq(diff_yaml_dump(j, &b), 0);
	cr_expect_str_eq(buf_cstr(&b), "k: a\xef\xbf\xbd\xef\xbf\xbdz\n");
	buf_release(&b);
	json_decref(j);
}

/* What go-yaml's Marshal prints for roots kubectl never shows. */
Test(encode, yaml_roots)
{
	expect_yaml("{}", "{}\n");
	expect_yaml("[]", "[]\n");
	expect_yaml("\"x\"", "x\n");
	expect_yaml("\"yes\"", "\"yes\"\n");
	expect_yaml("\"a\\nb\"", "|-\n  a\n  b\n");
	expect_yaml("null", "null\n");
	expect_yaml("[\"a\",{\"b\":[1,[2]]},[]]",
		    "- a\n- b:\n  - 1\n  - - 2\n- []\n");
}

/* Both append, and on failure leave the buffer as it was. */
static void check_fails_clean(const json_t *j, int want, size_t cap)
{
	struct buf b;

	buf_init(&b, cap);
	cr_assert_eq(buf_adds(&b, "keep"), 0);
	cr_expect_eq(diff_json_dump(j, 2, &b), want);
	cr_expect_str_eq(buf_cstr(&b), "keep");
	cr_expect_eq(diff_yaml_dump(j, &b), want);
	cr_expect_str_eq(buf_cstr(&b), "keep");
	buf_release(&b);
}

static json_t *nested_arrays(int depth)
{
	json_t *j = json_array();

	for (int i = 1; i < depth; i++) {
		json_t *outer = json_array();

		json_array_append_new(outer, j);
		j = outer;
	}
	return j;
}

Test(encode, depth_limit)
{
	struct buf b = BUF_INIT;
	json_t *ok = nested_arrays(1000), *deep = nested_arrays(1001);

	cr_expect_eq(diff_json_dump(ok, 0, &b), 0);
	cr_expect_eq(b.len, 2000);
	buf_reset(&b);
	cr_expect_eq(diff_yaml_dump(ok, &b), 0);
	buf_release(&b);
	check_fails_clean(deep, ERR_LIMIT, 0);
	json_decref(ok);
	json_decref(deep);
}

Test(encode, cap_and_append)
{
	struct buf b = BUF_INIT;
	json_t *j = J("{\"name\":\"a fairly long value\",\"n\":[1,2,3]}");

	check_fails_clean(j, ERR_LIMIT, 16);
	cr_assert_eq(buf_adds(&b, "A"), 0);
	cr_assert_eq(diff_json_dump(j, 0, &b), 0);
	cr_assert_eq(diff_yaml_dump(j, &b), 0);
	cr_expect_str_eq(buf_cstr(&b),
			 "A{\"n\":[1,2,3],\"name\":\"a fairly long value\"}"
			 "\"n\":\n- 1\n- 2\n- 3\nname: a fairly long value\n");
	buf_release(&b);
	json_decref(j);
}

Test(encode, bad_arguments)
{
	struct buf b = BUF_INIT;
	json_t *j = J("{}");

	cr_expect_eq(diff_json_dump(j, -1, &b), ERR_INVALID);
	cr_expect_eq(diff_json_dump(NULL, 0, &b), ERR_INVALID);
	cr_expect_eq(diff_yaml_dump(NULL, &b), ERR_INVALID);
	cr_expect_eq(b.len, 0);
	buf_release(&b);
	json_decref(j);
}

/* The array an item at a time: the same text as the whole tree. */
static json_t *nth_item(size_t i, void *ctx)
{
	return json_incref(json_array_get(ctx, i));
}

Test(encode, json_items_written_as_made)
{
	json_t *whole = json_loads("{\"z\":1,\"items\":[{\"b\":[1,2],\"a\":\"x\"},"
				   "[],{}],\"a\":{\"k\":[]}}",
				   0, NULL);
	json_t *head = json_deep_copy(whole), *items;
	struct buf a = BUF_INIT, b = BUF_INIT;

	items = json_object_get(head, "items");
	json_array_clear(items);
	for (int indent = 0; indent <= 2; indent += 2) {
		buf_reset(&a);
		buf_reset(&b);
		cr_assert_eq(diff_json_dump(whole, indent, &a), 0);
		cr_assert_eq(diff_json_dump_items(head, indent, items, 3,
						  nth_item,
						  json_object_get(whole,
								  "items"),
						  &b),
			     0);
		cr_assert_str_eq(buf_cstr(&b), buf_cstr(&a));
	}
	/* None: an empty array, as the tree would print it. */
	buf_reset(&b);
	cr_assert_eq(diff_json_dump_items(head, 2, items, 0, nth_item, NULL,
					  &b),
		     0);
	cr_assert(strstr(buf_cstr(&b), "\"items\": []"), "%s", buf_cstr(&b));
	json_decref(head);
	json_decref(whole);
	buf_release(&a);
	buf_release(&b);
}
