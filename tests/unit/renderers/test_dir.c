#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "renderers/render.h"

static char root[256];

static void write_file(const char *rel, const char *text)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/syncd-test-dir.XXXXXX");
	cr_assert_not_null(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

#define CM(name) "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " name "}\n"

TestSuite(render_dir, .init = setup, .fini = teardown);

Test(render_dir, origins_and_order)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	write_file("b.yaml", CM("b") "---\n" CM("b2"));
	write_file("a/list.yaml", "apiVersion: v1\nkind: List\nitems:\n"
				  "- apiVersion: v1\n  kind: ConfigMap\n"
				  "  metadata: {name: x}\n"
				  "- apiVersion: v1\n  kind: Secret\n"
				  "  metadata: {name: why}\n");
	cr_assert_eq(render_dir(&set, root, NULL, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(set.len, 4);
	cr_assert_str_eq(set.items[0]->origin, "a/list.yaml:1 (items[0])");
	cr_assert_str_eq(set.items[1]->origin, "a/list.yaml:1 (items[1])");
	cr_assert_str_eq(set.items[1]->key.kind, "Secret");
	cr_assert_str_eq(set.items[2]->origin, "b.yaml:1");
	cr_assert_str_eq(set.items[3]->origin, "b.yaml:5");
	cr_assert_str_eq(set.items[3]->key.name, "b2");
	diff_objset_release(&set);
	err_release(&err);
}

/* Every bad file is reported, and the good objects are kept. */
Test(render_dir, all_problems_reported)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	write_file("1.yaml", "a: [\n");
	write_file("2.yaml", CM("ok"));
	write_file("3.yaml", "apiVersion: v1\nmetadata: {name: x}\n");
	write_file("4.json", "[1]");
	cr_assert_lt(render_dir(&set, root, NULL, &err), 0);
	cr_assert_eq(err_count(&err), 3);
	cr_assert_eq(set.len, 1);
	cr_assert_str_eq(set.items[0]->key.name, "ok");
	cr_assert(strstr(err_msg(&err), "3.yaml:1: missing kind\n"));
	cr_assert(strstr(err_msg(&err),
			 "4.json:1: document is a list, not an object\n"));
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_dir, include_exclude_no_recurse)
{
	static const char *const include[] = {"*.yaml", NULL};
	static const char *const exclude[] = {"skip/*", NULL};
	struct render_dir_options opts = RENDER_DIR_OPTIONS_INIT;
	struct diff_objset set = DIFF_OBJSET_INIT;

	write_file("top.yaml", CM("top"));
	write_file("top.json", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			       "\"metadata\":{\"name\":\"json\"}}");
	write_file("skip/s.yaml", CM("skipped"));
	write_file("deep/d.yaml", CM("deep"));
	opts.include = include;
	opts.exclude = exclude;
	cr_assert_eq(render_dir(&set, root, &opts, NULL), 0);
	cr_assert_eq(set.len, 2);
	cr_assert_str_eq(set.items[0]->key.name, "deep");
	cr_assert_str_eq(set.items[1]->key.name, "top");
	diff_objset_release(&set);

	opts.include = NULL;
	opts.exclude = NULL;
	opts.no_recurse = true;
	cr_assert_eq(render_dir(&set, root, &opts, NULL), 0);
	cr_assert_eq(set.len, 2);
	cr_assert_str_eq(set.items[0]->key.name, "json");
	cr_assert_str_eq(set.items[1]->key.name, "top");
	diff_objset_release(&set);
}

Test(render_dir, file_size_cap)
{
	struct render_dir_options opts = RENDER_DIR_OPTIONS_INIT;
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	write_file("big.yaml", CM("big") "data: {a: \"0123456789\"}\n");
	opts.max_file_size = 32;
	cr_assert_eq(render_dir(&set, root, &opts, &err), ERR_LIMIT);
	cr_assert(strstr(err_first(&err), "big.yaml: file is "));
	cr_assert_eq(set.len, 0);
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_dir, missing_root)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	char path[300];

	snprintf(path, sizeof(path), "%s/nope", root);
	cr_assert_eq(render_dir(&set, path, NULL, &err), ERR_NOTFOUND);
	cr_assert(strstr(err_first(&err), "No such file or directory"));
	err_release(&err);
}
