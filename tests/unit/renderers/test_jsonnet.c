/*
 * The jsonnet renderer: data-driven cases under tests/cases/render-jsonnet/
 * plus the cases that need a tree built at run time (symlinks, limits).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "renderers/render.h"
#include "tests/helpers/cases.h"

#define CASES "tests/cases/render-jsonnet"

/* Up to this many values per option kind in an options file. */
#define MAX_OPTS 16

static bool slurp(const char *path, struct buf *out)
{
	FILE *f = fopen(path, "r");
	char chunk[4096];
	size_t n;

	buf_init(out, 0);
	if (!f)
		return false;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(out, chunk, n);
	fclose(f);
	return true;
}

struct case_opts {
	struct render_jsonnet_options o;
	char *lines[5 * MAX_OPTS + 1];
	size_t nlines;
	const char *ext_str[MAX_OPTS + 1], *ext_code[MAX_OPTS + 1];
	const char *tla_str[MAX_OPTS + 1], *tla_code[MAX_OPTS + 1];
	const char *jpath[MAX_OPTS + 1];
	size_t n_ext_str, n_ext_code, n_tla_str, n_tla_code, n_jpath;
};

static void add_opt(const char **list, size_t *n, const char *v)
{
	cr_assert_lt(*n, MAX_OPTS);
	list[(*n)++] = v;
	list[*n] = NULL;
}

/* Read `options`: "KEY VALUE" per line. */
static void load_options(const char *name, struct case_opts *c)
{
	char path[512];
	struct buf text;
	char *line, *save = NULL;

	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), CASES "/%s/options", name);
	if (!slurp(path, &text))
		return;
	for (line = strtok_r(text.ptr, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' '), *v;

		cr_assert_not_null(sp, "%s: bad line %s", path, line);
		*sp = '\0';
		cr_assert_lt(c->nlines, 5 * MAX_OPTS);
		v = c->lines[c->nlines++] = strdup(sp + 1);
		if (!strcmp(line, "file"))
			c->o.file = v;
		else if (!strcmp(line, "ext-str"))
			add_opt(c->ext_str, &c->n_ext_str, v);
		else if (!strcmp(line, "ext-code"))
			add_opt(c->ext_code, &c->n_ext_code, v);
		else if (!strcmp(line, "tla-str"))
			add_opt(c->tla_str, &c->n_tla_str, v);
		else if (!strcmp(line, "tla-code"))
			add_opt(c->tla_code, &c->n_tla_code, v);
		else if (!strcmp(line, "jpath"))
			add_opt(c->jpath, &c->n_jpath, v);
		else
			cr_assert_fail("%s: unknown option %s", path, line);
	}
	c->o.ext_str = c->n_ext_str ? c->ext_str : NULL;
	c->o.ext_code = c->n_ext_code ? c->ext_code : NULL;
	c->o.tla_str = c->n_tla_str ? c->tla_str : NULL;
	c->o.tla_code = c->n_tla_code ? c->tla_code : NULL;
	c->o.jpath = c->n_jpath ? c->jpath : NULL;
	buf_release(&text);
}

static void release_options(struct case_opts *c)
{
	for (size_t i = 0; i < c->nlines; i++)
		free(c->lines[i]);
}

/* The set as [{"origin": ..., "object": ...}], indented by 2. */
static void dump_set(const struct diff_objset *set, struct buf *out)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < set->len; i++)
		json_array_append_new(arr,
				      json_pack("{s:s, s:O}", "origin",
						set->items[i]->origin, "object",
						set->items[i]->json));
	buf_init(out, 0);
	cr_assert_eq(diff_json_dump(arr, 2, out), 0);
	buf_addch(out, '\n');
	json_decref(arr);
}

static int is_case_dir(const struct dirent *d)
{
	char path[512];
	struct stat st;

	if (d->d_name[0] == '.')
		return 0;
	snprintf(path, sizeof(path), CASES "/%s", d->d_name);
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

ParameterizedTestParameters(render_jsonnet_cases, run)
{
	return case_dirs(CASES, is_case_dir);
}

ParameterizedTest(struct case_param *p, render_jsonnet_cases, run)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	struct case_opts c;
	struct buf want, got = BUF_INIT;
	char path[512], input[512];
	bool want_err;
	int rc;

	load_options(p->name, &c);
	snprintf(input, sizeof(input), CASES "/%s/input", p->name);
	snprintf(path, sizeof(path), CASES "/%s/expected.err", p->name);
	want_err = slurp(path, &want);
	if (!want_err) {
		snprintf(path, sizeof(path), CASES "/%s/expected.json",
			 p->name);
		cr_assert(slurp(path, &want), "%s: no expected file", p->name);
	}
	rc = render_jsonnet(&set, input, &c.o, &err);
	if (want_err) {
		cr_assert_lt(rc, 0, "%s: expected an error", p->name);
		buf_adds(&got, err_msg(&err));
		if (got.len)
			buf_addch(&got, '\n');
	} else {
		cr_assert_eq(rc, 0, "%s: %s", p->name, err_msg(&err));
		cr_assert_eq(err_count(&err), 0);
		dump_set(&set, &got);
	}
	cr_expect_str_eq(buf_cstr(&got), buf_cstr(&want),
			 "%s: got\n%s\nwant (%s)\n%s", p->name, buf_cstr(&got),
			 path, buf_cstr(&want));
	buf_release(&want);
	buf_release(&got);
	err_release(&err);
	diff_objset_release(&set);
	release_options(&c);
}

/* Trees built at run time: symlinks and limits. */

static char root[256], outside[256];

static void write_file(const char *dir, const char *rel, const char *text)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (slash = strchr(path + strlen(dir) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static void link_at(const char *target, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	cr_assert_eq(symlink(target, path), 0);
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/syncd-test-jsonnet.XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(outside, sizeof(outside), "/tmp/syncd-test-outside.XXXXXX");
	cr_assert_not_null(mkdtemp(outside));
	write_file(outside, "secret.libsonnet", "{ leaked: true }\n");
}

static void teardown(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", root, outside);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(render_jsonnet, .init = setup, .fini = teardown);

#define CM(n) \
	"{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: '" n "' } }"

Test(render_jsonnet, symlink_out_of_root_refused)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	char target[512];

	snprintf(target, sizeof(target), "%s/secret.libsonnet", outside);
	link_at(target, "lib.libsonnet");
	write_file(root, "main.jsonnet",
		   "local l = import 'lib.libsonnet';\n" CM("x") " + l\n");
	cr_assert_lt(render_jsonnet(&set, root, NULL, &err), 0);
	cr_assert_eq(set.len, 0);
	cr_assert(strstr(err_msg(&err), "lib.libsonnet"), "%s", err_msg(&err));
	cr_assert(strstr(err_msg(&err), "resolves outside the repository"),
		  "%s", err_msg(&err));
	cr_assert(strstr(err_msg(&err), "main.jsonnet:1:"), "%s",
		  err_msg(&err));
	cr_assert_null(strstr(err_msg(&err), "leaked"));
	err_release(&err);
}

Test(render_jsonnet, symlinked_dir_out_of_root_refused)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	link_at(outside, "vendor");
	write_file(root, "main.jsonnet", "import 'secret.libsonnet'\n");
	{
		const char *jp[] = {"vendor", NULL};
		struct render_jsonnet_options o = {.jpath = jp};

		cr_assert_lt(render_jsonnet(&set, root, &o, &err), 0);
		cr_assert(strstr(err_msg(&err),
				 "library path vendor: resolves outside"),
			  "%s", err_msg(&err));
	}
	err_reset(&err);
	write_file(root, "main.jsonnet", "import 'vendor/secret.libsonnet'\n");
	cr_assert_lt(render_jsonnet(&set, root, NULL, &err), 0);
	cr_assert(strstr(err_msg(&err), "resolves outside the repository"),
		  "%s", err_msg(&err));
	cr_assert_eq(set.len, 0);
	err_release(&err);
}

Test(render_jsonnet, symlink_inside_root_followed)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	write_file(root, "real/cm.libsonnet", CM("linked") "\n");
	link_at("real", "alias");
	write_file(root, "main.jsonnet", "import 'alias/cm.libsonnet'\n");
	cr_assert_eq(render_jsonnet(&set, root, NULL, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(set.len, 1);
	cr_assert_str_eq(set.items[0]->key.name, "linked");
	cr_assert_str_eq(set.items[0]->origin, "main.jsonnet");
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_jsonnet, main_file_outside_root_refused)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	struct render_jsonnet_options o = {0};
	char rel[512], target[512];

	/* "../<outside>/x.jsonnet" exists, but not inside the root. */
	write_file(outside, "x.jsonnet", CM("x"));
	snprintf(rel, sizeof(rel), "../%s/x.jsonnet",
		 strrchr(outside, '/') + 1);
	o.file = rel;
	cr_assert_lt(render_jsonnet(&set, root, &o, &err), 0);
	cr_assert(strstr(err_msg(&err), "resolves outside the repository"),
		  "%s", err_msg(&err));
	/* The only top-level *.jsonnet is a link out of the root. */
	err_reset(&err);
	snprintf(target, sizeof(target), "%s/x.jsonnet", outside);
	link_at(target, "main.jsonnet");
	cr_assert_lt(render_jsonnet(&set, root, NULL, &err), 0);
	cr_assert(strstr(err_msg(&err), "main.jsonnet: resolves outside"), "%s",
		  err_msg(&err));
	err_reset(&err);
	o.file = "/etc/hostname";
	cr_assert_lt(render_jsonnet(&set, root, &o, &err), 0);
	cr_assert(strstr(err_msg(&err), "must be relative"), "%s",
		  err_msg(&err));
	cr_assert_eq(set.len, 0);
	err_release(&err);
}

Test(render_jsonnet, output_cap)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	struct render_jsonnet_options o = {.max_output = 1000};

	write_file(root, "main.jsonnet",
		   "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: "
		   "{ name: 'big' }, data: { x: std.repeat('a', 2000) } }\n");
	cr_assert_eq(render_jsonnet(&set, root, &o, &err), ERR_LIMIT, "%s",
		     err_msg(&err));
	cr_assert(strstr(err_msg(&err), "over the 1000-byte limit"), "%s",
		  err_msg(&err));
	cr_assert_eq(set.len, 0);
	o.max_output = 0; /* the default, 64 MiB, lets it through */
	err_reset(&err);
	cr_assert_eq(render_jsonnet(&set, root, &o, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(set.len, 1);
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_jsonnet, nul_byte_import_refused)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/bin.txt", root);
	cr_assert_not_null(f = fopen(path, "w"));
	fwrite("a\0b", 1, 3, f);
	fclose(f);
	write_file(root, "main.jsonnet", "{ x: importstr 'bin.txt' }\n");
	cr_assert_lt(render_jsonnet(&set, root, NULL, &err), 0);
	cr_assert(strstr(err_msg(&err), "NUL byte"), "%s", err_msg(&err));
	err_release(&err);
}
