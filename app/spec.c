/*
 * The app spec: one type for everything that says what an app is, filled
 * by the config loader and by the command-line options alike, and the
 * render cache that is keyed by it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/app.h"
#include "util/file.h"
#include "util/json.h"
#include "util/sha256.h"

#include "util/banned.h" /* last */

/* Format of the render cache files; bump when it changes. */
#define RENDER_CACHE_VERSION 2
/* Largest render cache file read back. */
#define RENDER_CACHE_MAX (256u << 20)

/* Largest variables file read (bytes). */
#define APP_MAX_VARS_FILE (1u << 20)

const char *const app_deletion_names[] = {"orphan", "delete", NULL};

void app_spec_init(struct app_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->source = (struct source_options)SOURCE_OPTIONS_INIT;
	s->render = (struct render_app_options)RENDER_APP_OPTIONS_INIT;
	s->interval_ms = 60 * 1000;
	s->substitute = APP_SUBST_DEFAULT;
	s->prune_budget = 50;
	s->self_heal = true;
	s->foreign_fields = DIFF_POLICY_RESPECT;
}

/* Point the render options at the lists they read. */
static void bind(struct app_spec *s)
{
	struct render_app_options *r = &s->render;
	const char *const *l[APP_LIST_COUNT];

	for (size_t i = 0; i < APP_LIST_COUNT; i++)
		l[i] = (const char *const *)s->lists[i].v;
	r->dir.include = l[APP_LIST_INCLUDE];
	r->dir.exclude = l[APP_LIST_EXCLUDE];
	r->helm.values = l[APP_LIST_HELM_VALUES];
	r->helm.values_files = l[APP_LIST_HELM_VALUES_FILES];
	r->helm.set = l[APP_LIST_HELM_SET];
	r->jsonnet.ext_str = l[APP_LIST_JSONNET_EXT_STR];
	r->jsonnet.ext_code = l[APP_LIST_JSONNET_EXT_CODE];
	r->jsonnet.tla_str = l[APP_LIST_JSONNET_TLA_STR];
	r->jsonnet.tla_code = l[APP_LIST_JSONNET_TLA_CODE];
	r->jsonnet.jpath = l[APP_LIST_JSONNET_JPATH];
	r->exec.args = l[APP_LIST_PLUGIN_ARGS];
	r->exec.env = l[APP_LIST_PLUGIN_ENV];
	s->source.redirect_hosts = l[APP_LIST_REDIRECT_HOSTS];
	r->kustomize.timeout_ms = s->render_timeout_ms;
	r->helm.timeout_ms = s->render_timeout_ms;
	r->exec.timeout_ms = s->render_timeout_ms;
}

int app_spec_set(struct app_spec *s, const char **field, const char *value)
{
	if (!value) {
		*field = NULL;
		return 0;
	}
	if (strvec_push(&s->strings, value) < 0)
		return ERR_NOMEM;
	*field = s->strings.v[s->strings.len - 1];
	return 0;
}

int app_spec_add(struct app_spec *s, enum app_list which, const char *value)
{
	if (strvec_push(&s->lists[which], value) < 0)
		return ERR_NOMEM;
	bind(s);
	return 0;
}

void app_spec_set_render_timeout(struct app_spec *s, unsigned ms)
{
	s->render_timeout_ms = ms;
	bind(s);
}

size_t app_spec_list_len(const struct app_spec *s, enum app_list which)
{
	return s->lists[which].len;
}

int app_spec_add_ignore(struct app_spec *s, const struct diff_ignore_rule *r)
{
	struct diff_ignore_rule *rules, *n;
	struct app_ignore_lists *lists;
	size_t i = s->nignore;

	rules = realloc(s->ignore, (i + 1) * sizeof(*rules));
	if (!rules)
		return ERR_NOMEM;
	s->ignore = rules;
	lists = realloc(s->ignore_lists, (i + 1) * sizeof(*lists));
	if (!lists)
		return ERR_NOMEM;
	s->ignore_lists = lists;
	memset(&lists[i], 0, sizeof(lists[i]));
	n = &rules[i];
	memset(n, 0, sizeof(*n));
	s->nignore++;
	if (app_spec_set(s, &n->group, r->group) < 0 ||
	    app_spec_set(s, &n->kind, r->kind) < 0 ||
	    app_spec_set(s, &n->ns, r->ns) < 0 ||
	    app_spec_set(s, &n->name, r->name) < 0)
		return ERR_NOMEM;
	for (const char *const *p = r->json_pointers; p && *p; p++)
		if (strvec_push(&lists[i].json_pointers, *p) < 0)
			return ERR_NOMEM;
	for (const char *const *p = r->managers; p && *p; p++)
		if (strvec_push(&lists[i].managers, *p) < 0)
			return ERR_NOMEM;
	n->json_pointers = (const char *const *)lists[i].json_pointers.v;
	n->managers = (const char *const *)lists[i].managers.v;
	return 0;
}

void app_spec_release(struct app_spec *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < APP_LIST_COUNT; i++)
		strvec_release(&s->lists[i]);
	for (size_t i = 0; i < s->nignore; i++) {
		strvec_release(&s->ignore_lists[i].json_pointers);
		strvec_release(&s->ignore_lists[i].managers);
	}
	free(s->ignore);
	free(s->ignore_lists);
	strvec_release(&s->vars);
	strvec_release(&s->vars_files);
	strvec_release(&s->prune_allow_kinds);
	strvec_release(&s->replace_allow_kinds);
	strvec_release(&s->depends_on);
	strvec_release(&s->strings);
	json_decref(s->namespace_metadata);
	json_decref(s->raw);
	app_spec_init(s);
}

/* The first non-blank, non-comment line looks like NAME=VALUE. */
static bool looks_like_dotenv(const char *p, const char *end)
{
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		size_t n;

		while (p < e && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		if (p < e && *p != '#') {
			if (e - p > 7 && !strncmp(p, "export ", 7))
				p += 7;
			n = 0;
			while (p + n < e && p[n] != '=')
				n++;
			return p + n < e && render_var_name(p, n);
		}
		p = nl ? nl + 1 : end;
	}
	return false;
}

static int push_var(struct strvec *out, const char *name, size_t nlen,
		    const char *value, size_t vlen, struct err *err)
{
	struct buf b = BUF_INIT;
	int error = 0;

	if (buf_add(&b, name, nlen) < 0 || buf_addch(&b, '=') < 0 ||
	    buf_add(&b, value, vlen) < 0 || strvec_push(out, b.ptr) < 0)
		error = err_set(err, ERR_NOMEM, "out of memory");
	buf_release(&b);
	return error;
}

static int read_dotenv(struct strvec *out, const char *p, const char *end,
		       const char *path, struct err *err)
{
	unsigned line = 0;
	int error = 0, e;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e_ = nl ? nl : end, *v;
		size_t n;

		line++;
		while (e_ > p &&
		       (e_[-1] == '\r' || e_[-1] == ' ' || e_[-1] == '\t'))
			e_--;
		while (p < e_ && (*p == ' ' || *p == '\t'))
			p++;
		if (p == e_ || *p == '#')
			goto next;
		if (e_ - p > 7 && !strncmp(p, "export ", 7))
			p += 7;
		n = 0;
		while (p + n < e_ && p[n] != '=')
			n++;
		if (p + n == e_ || !render_var_name(p, n)) {
			e = err_set(err, ERR_PARSE,
				    "%s:%u: not NAME=VALUE (a name is "
				    "letters, digits and _)",
				    path, line);
			error = error ? error : e;
			goto next;
		}
		v = p + n + 1;
		if (e_ - v >= 2 && (*v == '"' || *v == '\'') && e_[-1] == *v) {
			v++;
			e_--;
		}
		if ((e = push_var(out, p, n, v, (size_t)(e_ - v), err)) < 0)
			return e;
	next:
		p = nl ? nl + 1 : end;
	}
	return error;
}

static int read_yaml_vars(struct strvec *out, const struct buf *data,
			  const char *path, struct err *err)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	const char *key;
	json_t *map, *v;
	char num[32];
	int error;

	if ((error = render_parse(&docs, buf_cstr(data), data->len, path,
				  err)) < 0)
		goto out;
	if (docs.len == 0)
		goto out;
	map = docs.items[0].value;
	if (docs.len > 1 || !json_is_object(map)) {
		error = err_set(err, ERR_INVALID,
				"%s: want KEY=VALUE lines or one YAML map of "
				"names to values",
				path);
		goto out;
	}
	json_object_foreach(map, key, v)
	{
		const char *s = num;
		int e = 0;

		if (!render_var_name(key, strlen(key))) {
			e = err_set(err, ERR_INVALID,
				    "%s: \"%s\" is not a variable name "
				    "(letters, digits and _)",
				    path, key);
		} else if (json_is_string(v)) {
			s = json_string_value(v);
		} else if (json_is_integer(v)) {
			snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
				 json_integer_value(v));
		} else if (json_is_boolean(v)) {
			s = json_is_true(v) ? "true" : "false";
		} else {
			e = err_set(err, ERR_INVALID,
				    "%s: %s: want a string, an integer or a "
				    "boolean (quote other values)",
				    path, key);
		}
		if (!e && (e = push_var(out, key, strlen(key), s, strlen(s),
					err)) == ERR_NOMEM) {
			error = e;
			goto out;
		}
		if (e && !error)
			error = e;
	}
out:
	render_docs_release(&docs);
	return error;
}

int app_read_vars(struct strvec *out, const char *path, struct err *err)
{
	struct buf data = BUF_INIT;
	int error;

	if ((error = file_read(&data, path, path, APP_MAX_VARS_FILE, err)) < 0)
		return error;
	if (looks_like_dotenv(buf_cstr(&data), buf_cstr(&data) + data.len))
		error = read_dotenv(out, buf_cstr(&data),
				    buf_cstr(&data) + data.len, path, err);
	else
		error = read_yaml_vars(out, &data, path, err);
	buf_release(&data);
	return error;
}

/*
 * Split "NAME=VALUE" strings into the renderers' name and value arrays,
 * a later NAME replacing an earlier one. The arrays point into `all`.
 */
static int split_vars(const struct strvec *all, const char ***names,
		      const char ***values, size_t *len, struct err *err)
{
	size_t n = 0;

	*names = calloc(all->len + 1, sizeof(**names));
	*values = calloc(all->len + 1, sizeof(**values));
	if (!*names || !*values)
		return err_set(err, ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < all->len; i++) {
		char *s = all->v[i], *eq = strchr(s, '=');
		size_t j;

		/* Stored as "NAME=VALUE"; cut at '=' in place. */
		*eq = '\0';
		for (j = 0; j < n; j++)
			if (!strcmp((*names)[j], s))
				break;
		(*names)[j] = s;
		(*values)[j] = eq + 1;
		if (j == n)
			n++;
	}
	*len = n;
	return 0;
}

bool app_spec_renders_helm(const struct app_spec *s, const char *dir)
{
	enum render_kind kind = s->render.kind;

	if (kind == RENDER_AUTO && render_detect(&kind, dir, NULL) < 0)
		return false;
	return kind == RENDER_HELM;
}

int app_spec_render(const struct app_spec *s, const char *dir,
		    const char *revision, const char *path,
		    const char *kube_version, struct diff_objset *out,
		    enum render_kind *used, struct err *err)
{
	struct render_app_options opts = s->render;
	struct strvec vars = STRVEC_INIT;
	const char **names = NULL, **values = NULL;
	bool globs = app_spec_list_len(s, APP_LIST_INCLUDE) ||
		     app_spec_list_len(s, APP_LIST_EXCLUDE) ||
		     s->render.dir.no_recurse;
	int error = 0;

	opts.info.name = s->name;
	opts.info.namespace = s->namespace;
	opts.info.revision = revision;
	opts.info.path = path;
	if (!opts.helm.kube_version)
		opts.helm.kube_version = kube_version;
	if (s->render.kind == RENDER_EXEC && !s->render.exec.cmd) {
		error = err_set(err, ERR_USAGE,
				"--renderer exec needs --plugin-cmd");
		goto out;
	}
	if (s->render.kind != RENDER_EXEC && s->render.exec.cmd) {
		error = err_set(err, ERR_USAGE,
				"--plugin-cmd is used only with --renderer "
				"exec");
		goto out;
	}

	/*
	 * The globs and --no-recurse only mean something to the directory
	 * renderer: silently ignoring them would render other objects than
	 * the user asked for.
	 */
	if (opts.kind == RENDER_AUTO &&
	    (error = render_detect(&opts.kind, dir, err)) < 0)
		goto out;
	if (opts.kind != RENDER_DIRECTORY && globs) {
		error = err_set(err, ERR_USAGE,
				"%s: --include, --exclude and --no-recurse "
				"apply to the directory renderer, not %s%s",
				path ? path : dir, render_kind_name(opts.kind),
				s->render.kind == RENDER_AUTO
					? " (detected; choose one with "
					  "--renderer)"
					: "");
		goto out;
	}

	/* Files first, then the variables given one by one, which win. */
	for (size_t i = 0; i < s->vars_files.len; i++) {
		int e = app_read_vars(&vars, s->vars_files.v[i], err);

		if (e < 0 && !error)
			error = e;
	}
	if (error)
		goto out;
	for (size_t i = 0; i < s->vars.len; i++) {
		if (strvec_push(&vars, s->vars.v[i]) < 0) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			goto out;
		}
	}
	if (s->substitute == APP_SUBST_DEFAULT)
		opts.subst = s->vars.len || s->vars_files.len
				     ? RENDER_SUBST_STRICT
				     : RENDER_SUBST_OFF;
	else
		opts.subst = (enum render_subst_mode)s->substitute;
	if ((error = split_vars(&vars, &names, &values, &opts.vars.len, err)) <
	    0)
		goto out;
	opts.vars.names = names;
	opts.vars.values = values;
	error = render_app(out, used, dir, &opts, err);
out:
	free(names);
	free(values);
	strvec_release(&vars);
	return error;
}

bool app_spec_cacheable(const struct app_spec *s)
{
	return s->render.kind != RENDER_EXEC && !s->vars_files.len &&
	       !app_spec_list_len(s, APP_LIST_HELM_VALUES_FILES);
}

static void key_str(struct sha256_ctx *h, const char *name, const char *v)
{
	/* "name" NUL, then the value and NUL, or a lone 0xff for NULL. */
	sha256_update(h, name, strlen(name) + 1);
	if (v)
		sha256_update(h, v, strlen(v) + 1);
	else
		sha256_update(h, "\xff", 1);
}

static void key_list(struct sha256_ctx *h, const char *name,
		     const char *const *v)
{
	char n[24];
	size_t len = 0;

	while (v && v[len])
		len++;
	snprintf(n, sizeof(n), "%zu", len);
	key_str(h, name, n);
	for (size_t i = 0; i < len; i++)
		key_str(h, "", v[i]);
}

static void key_num(struct sha256_ctx *h, const char *name,
		    unsigned long long v)
{
	char n[24];

	snprintf(n, sizeof(n), "%llu", v);
	key_str(h, name, n);
}

int app_render_cache_file(struct buf *out, const struct app_spec *s,
			  const char *base, const char *tree)
{
	const struct render_app_options *r = &s->render;
	struct sha256_ctx h;
	unsigned char d[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1];

	buf_reset(out);
	if (!base || !tree)
		return ERR_NOTFOUND;
	sha256_init(&h);
	/* Everything that decides what the render holds, in one order. */
	key_num(&h, "version", RENDER_CACHE_VERSION);
	key_str(&h, "tree", tree);
	key_str(&h, "name", s->name);
	key_str(&h, "namespace", s->namespace);
	key_str(&h, "path", s->source.subpath);
	key_num(&h, "kind", r->kind);
	key_num(&h, "timeout", s->render_timeout_ms);
	key_num(&h, "no_recurse", r->dir.no_recurse);
	key_list(&h, "include", r->dir.include);
	key_list(&h, "exclude", r->dir.exclude);
	key_str(&h, "kustomize.bin", r->kustomize.bin);
	key_str(&h, "helm.bin", r->helm.bin);
	key_str(&h, "helm.release", r->helm.release);
	key_list(&h, "helm.values", r->helm.values);
	key_list(&h, "helm.values_files", r->helm.values_files);
	key_list(&h, "helm.set", r->helm.set);
	key_num(&h, "helm.include_crds", r->helm.include_crds);
	key_str(&h, "helm.kube_version", r->helm.kube_version);
	key_str(&h, "helm.values_inline", r->helm.values_inline);
	key_str(&h, "jsonnet.file", r->jsonnet.file);
	key_list(&h, "jsonnet.ext_str", r->jsonnet.ext_str);
	key_list(&h, "jsonnet.ext_code", r->jsonnet.ext_code);
	key_list(&h, "jsonnet.tla_str", r->jsonnet.tla_str);
	key_list(&h, "jsonnet.tla_code", r->jsonnet.tla_code);
	key_list(&h, "jsonnet.jpath", r->jsonnet.jpath);
	key_str(&h, "exec.cmd", r->exec.cmd);
	key_list(&h, "exec.args", r->exec.args);
	key_list(&h, "exec.env", r->exec.env);
	key_list(&h, "vars", (const char *const *)s->vars.v);
	key_list(&h, "vars_files", (const char *const *)s->vars_files.v);
	key_num(&h, "substitute", (unsigned long long)(s->substitute + 1));
	sha256_final(&h, d);
	hex_encode(d, sizeof(d), hex);
	if (buf_addf(out, "%s/renders/%s.json", base, hex) < 0)
		return ERR_NOMEM;
	return 0;
}

void app_render_cache_sweep(const char *file)
{
	const char *slash = strrchr(file, '/');
	struct buf dir = BUF_INIT;

	if (slash && buf_add(&dir, file, (size_t)(slash - file)) >= 0)
		file_sweep_temps(dir.ptr);
	buf_release(&dir);
}

bool app_render_cache_read(const char *file, struct diff_objset *out)
{
	struct buf data = BUF_INIT;
	struct err err = ERR_INIT;
	struct diff_object *obj = NULL;
	json_t *doc = NULL, *objs, *o;
	size_t i;
	bool ok = false;

	if (access(file, R_OK) < 0 ||
	    file_read(&data, file, file, RENDER_CACHE_MAX, &err) < 0)
		goto out;
	doc = fastjson_load(data.ptr, data.len, NULL, NULL);
	objs = json_object_get(doc, "objects");
	if (json_integer_value(json_object_get(doc, "version")) !=
		    RENDER_CACHE_VERSION ||
	    !json_is_array(objs))
		goto out;
	json_array_foreach (objs, i, o) {
		if (diff_object_new(&obj, json_object_get(o, "object"),
				    json_string_value(json_object_get(o, "origin")),
				    &err) < 0 ||
		    diff_objset_add(out, obj, &err) < 0)
			goto out;
		obj = NULL;
	}
	ok = true;
out:
	if (!ok) {
		diff_object_free(obj);
		diff_objset_release(out);
	}
	json_decref(doc);
	buf_release(&data);
	err_release(&err);
	return ok;
}

static int dump_doc(int fd, void *ctx)
{
	return json_dumpfd(ctx, fd, JSON_COMPACT);
}

bool app_render_cache_write(const char *file, const struct diff_objset *set)
{
	struct buf dir = BUF_INIT;
	struct err err = ERR_INIT;
	json_t *doc, *objs;
	const char *slash;
	size_t i;
	bool ok = false;

	doc = json_pack("{s:i, s:[]}", "version", RENDER_CACHE_VERSION,
			"objects");
	objs = json_object_get(doc, "objects");
	for (i = 0; doc && i < set->len; i++)
		json_array_append_new(
			objs, json_pack("{s:O, s:s?}", "object",
					set->items[i]->json, "origin",
					set->items[i]->origin));
	slash = strrchr(file, '/');
	if (doc && slash && buf_add(&dir, file, slash - file) >= 0 &&
	    (mkdir(dir.ptr, 0700) == 0 || errno == EEXIST)) {
		app_render_cache_sweep(file);
		ok = file_replace(file, dump_doc, doc, &err) == 0;
	}
	json_decref(doc);
	buf_release(&dir);
	err_release(&err);
	return ok;
}
