/*
 * The jsonnet renderer: evaluate a jsonnet program with the embedded
 * libjsonnet and turn its output into objects.
 *
 * This is the only file that includes <libjsonnet.h>.
 *
 * Everything jsonnet reads goes through our import callback, which works
 * on paths relative to the root and resolves each candidate with
 * realpath(): whatever symlinks or ".." the path holds, the file it lands
 * on must be inside the root, or the import fails. The main file is read
 * the same way and handed to jsonnet_evaluate_snippet() under its
 * root-relative name (rather than jsonnet_evaluate_file(), which opens the
 * file itself, relative to the process's working directory), so every
 * file name in jsonnet's messages is relative to the root, like the
 * directory renderer's, and the directory jsonnet passes to the callback
 * for an import is root-relative too.
 *
 * jsonnet_jpath_add() only feeds libjsonnet's default import callback,
 * which this renderer replaces: the library directories are searched by
 * the callback, after the importing file's directory, the last one first
 * (as `jsonnet -J a -J b` does).
 *
 * libjsonnet (and the C++ runtime it brings) is loaded on the first
 * evaluation, not when syncd starts: most processes never render jsonnet,
 * and mapping the two costs every one of them about 2 MB of resident
 * memory (docs/decisions.md 56). Its functions are called through `lib`.
 *
 * Evaluation runs in-process and cannot be interrupted: the output is
 * capped (opts->max_output) and jsonnet's own stack limit applies, but a
 * program that loops forever is only stopped by the caller's process
 * supervision.
 */
#include "renderers/render.h"
#include "renderers/internal.h"
#include "util/file.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <libjsonnet.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/banned.h" /* last */

#define DEFAULT_MAX_OUTPUT ((size_t)64 << 20)

/* Lines of stack trace kept from an evaluation error. */
#define MAX_TRACE 20

/* The shared library loaded, by its Debian runtime name (libjsonnet0). */
#define LIBJSONNET "libjsonnet.so.0"

/* libjsonnet's functions, once loaded (lib_load()). */
static struct {
	__typeof__(jsonnet_make) *make;
	__typeof__(jsonnet_destroy) *destroy;
	__typeof__(jsonnet_max_trace) *max_trace;
	__typeof__(jsonnet_import_callback) *import_callback;
	__typeof__(jsonnet_ext_var) *ext_var;
	__typeof__(jsonnet_ext_code) *ext_code;
	__typeof__(jsonnet_tla_var) *tla_var;
	__typeof__(jsonnet_tla_code) *tla_code;
	__typeof__(jsonnet_evaluate_snippet) *evaluate_snippet;
	__typeof__(jsonnet_realloc) *vm_realloc;
} lib;
static char lib_error[256]; /* why loading failed; "" when it did not */
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_open(void)
{
	void *h = dlopen(LIBJSONNET, RTLD_NOW | RTLD_LOCAL);
	const char *missing = NULL;

	if (!h) {
		const char *why = dlerror();

		snprintf(lib_error, sizeof(lib_error), "%s",
			 why ? why : LIBJSONNET ": cannot be loaded");
		return;
	}
#define SYM(field, name)                                                      \
	do {                                                                  \
		*(void **)&lib.field = dlsym(h, name);                        \
		if (!lib.field && !missing)                                   \
			missing = name;                                       \
	} while (0)
	SYM(make, "jsonnet_make");
	SYM(destroy, "jsonnet_destroy");
	SYM(max_trace, "jsonnet_max_trace");
	SYM(import_callback, "jsonnet_import_callback");
	SYM(ext_var, "jsonnet_ext_var");
	SYM(ext_code, "jsonnet_ext_code");
	SYM(tla_var, "jsonnet_tla_var");
	SYM(tla_code, "jsonnet_tla_code");
	SYM(evaluate_snippet, "jsonnet_evaluate_snippet");
	SYM(vm_realloc, "jsonnet_realloc");
#undef SYM
	if (missing) {
		snprintf(lib_error, sizeof(lib_error), "%s has no %s",
			 LIBJSONNET, missing);
		memset(&lib, 0, sizeof(lib));
		dlclose(h);
	}
	/* Otherwise kept open for the life of the process. */
}

/* Load libjsonnet once; 0, or an error naming what is missing. */
static int lib_load(struct err *err)
{
	pthread_once(&lib_once, lib_open);
	if (lib_error[0])
		return err_set(err, ERR_GENERIC,
			       "jsonnet: the library cannot be loaded: %s "
			       "(install libjsonnet0)",
			       lib_error);
	return 0;
}

struct jsonnet_ctx {
	struct JsonnetVm *vm;
	char *real_root;
	size_t real_root_len;
	char **jpath; /* root-relative, "" or ending in '/' */
	size_t njpath;
};

/*
 * Resolve `rel` (relative to the root, or absolute) and check that it lands
 * inside the root. On success *resolved (caller frees) is the real path and
 * *inside points at its root-relative part ("" for the root itself).
 * Returns 0, -ENOENT when nothing is there (so the next candidate can be
 * tried), or -1 with `why` filled.
 */
static int resolve_inside(const struct jsonnet_ctx *c, const char *rel,
			  char **resolved, const char **inside, struct buf *why)
{
	struct buf path = BUF_INIT;
	char *real;
	int error = 0;

	*resolved = NULL;
	if (rel[0] == '/')
		buf_adds(&path, rel);
	else
		buf_addf(&path, "%s/%s", c->real_root, rel);
	if (!(real = realpath(buf_cstr(&path), NULL))) {
		if (errno == ENOENT || errno == ENOTDIR) {
			error = -ENOENT;
		} else {
			buf_addf(why, "cannot resolve: %s", strerror(errno));
			error = -1;
		}
		goto out;
	}
	if (strncmp(real, c->real_root, c->real_root_len) ||
	    (real[c->real_root_len] != '/' && real[c->real_root_len] != '\0')) {
		buf_adds(why, "resolves outside the repository; refusing it");
		free(real);
		error = -1;
		goto out;
	}
	*resolved = real;
	*inside = real + c->real_root_len +
		  (real[c->real_root_len] == '/' ? 1 : 0);
out:
	buf_release(&path);
	return error;
}

/* A copy of s[0..len) in memory libjsonnet may free. */
static char *vm_strdup(struct JsonnetVm *vm, const char *s, size_t len)
{
	char *p = lib.vm_realloc(vm, NULL, len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/*
 * Read a resolved import. libjsonnet 0.18 takes the content as a C string,
 * so a file with a NUL byte cannot be imported faithfully and is refused.
 */
static int read_import(const char *real, const char *inside, struct buf *data,
		       struct buf *why)
{
	struct err e = ERR_INIT;
	struct stat st;
	int error = 0;

	if (stat(real, &st) < 0 || !S_ISREG(st.st_mode)) {
		buf_adds(why, "not a regular file");
		return -1;
	}
	if (file_read(data, real, inside, RENDER_MAX_FILE_SIZE, &e) <
	    0) {
		buf_adds(why, err_first(&e));
		error = -1;
	} else if (memchr(buf_cstr(data), '\0', data->len)) {
		buf_addf(why, "%s: contains a NUL byte", inside);
		buf_release(data);
		error = -1;
	}
	err_release(&e);
	return error;
}

/*
 * libjsonnet's import callback. `base` is the importing file's directory
 * as we named it (root-relative, "" or ending in '/'); candidates are
 * base+rel, then each library directory, the last added first. An absolute
 * `rel` is accepted only when it resolves inside the root. A candidate
 * that exists outside the root stops the search: it is refused, not
 * skipped, so a library path can never be shadowed by a link out of the
 * tree.
 */
static char *import_cb(void *ctx, const char *base, const char *rel,
		       char **found_here, int *success)
{
	struct jsonnet_ctx *c = ctx;
	struct buf cand = BUF_INIT, why = BUF_INIT, data = BUF_INIT;
	char *resolved = NULL, *result = NULL;
	const char *inside = NULL;
	size_t i = 0;
	int error = -ENOENT;

	*success = 0;
	if (!*rel) {
		result = vm_strdup(c->vm, "empty import path",
				   strlen("empty import path"));
		goto out;
	}
	if (rel[0] == '/') {
		error = resolve_inside(c, rel, &resolved, &inside, &why);
	} else {
		/* Candidate 0: next to the importer; then jpath[n-1..0]. */
		for (i = 0; i <= c->njpath && error == -ENOENT; i++) {
			buf_reset(&cand);
			buf_addf(&cand, "%s%s",
				 i ? c->jpath[c->njpath - i] : base, rel);
			error = resolve_inside(c, buf_cstr(&cand), &resolved,
					       &inside, &why);
		}
	}
	if (error == -ENOENT) {
		static const char msg[] = "no such file in the repository "
					  "or its library paths";

		result = vm_strdup(c->vm, msg, sizeof(msg) - 1);
		goto out;
	}
	if (error < 0 || read_import(resolved, inside, &data, &why) < 0) {
		result = vm_strdup(c->vm, buf_cstr(&why), why.len);
		goto out;
	}
	*found_here = vm_strdup(c->vm, inside, strlen(inside));
	result = vm_strdup(c->vm, buf_cstr(&data), data.len);
	*success = 1;
out:
	free(resolved);
	buf_release(&cand);
	buf_release(&why);
	buf_release(&data);
	return result;
}

/* Split "NAME=VALUE"; NAME must not be empty. */
static int split_pair(const char *pair, const char *what, struct buf *name,
		      const char **value, struct err *err)
{
	const char *eq = strchr(pair, '=');

	if (!eq || eq == pair)
		return err_set(err, ERR_USAGE, "%s \"%s\": expected NAME=VALUE",
			       what, pair);
	buf_reset(name);
	buf_add(name, pair, (size_t)(eq - pair));
	*value = eq + 1;
	return 0;
}

static int set_vars(struct JsonnetVm *vm, const char *const *pairs,
		    const char *what,
		    void (*set)(struct JsonnetVm *, const char *, const char *),
		    struct err *err)
{
	struct buf name = BUF_INIT;
	const char *value = NULL;
	int error = 0, e;

	for (; pairs && *pairs; pairs++) {
		if ((e = split_pair(*pairs, what, &name, &value, err)) < 0) {
			if (!error)
				error = e;
			continue;
		}
		set(vm, buf_cstr(&name), value);
	}
	buf_release(&name);
	return error;
}

static int setup_jpath(struct jsonnet_ctx *c, const char *const *jpath,
		       struct err *err)
{
	struct buf why = BUF_INIT;
	size_t n = 0;
	int error = 0;

	while (jpath && jpath[n])
		n++;
	if (!n)
		return 0;
	if (!(c->jpath = calloc(n, sizeof(*c->jpath))))
		return err_set(err, ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		char *real = NULL;
		const char *inside;
		struct stat st;
		int e;

		buf_reset(&why);
		if (jpath[i][0] == '/') {
			e = -1;
			buf_adds(&why, "must be relative to the repository");
		} else {
			e = resolve_inside(c, jpath[i], &real, &inside, &why);
		}
		if (e == -ENOENT)
			buf_adds(&why, "no such directory");
		else if (!e && (stat(real, &st) < 0 || !S_ISDIR(st.st_mode))) {
			buf_adds(&why, "not a directory");
			e = -1;
		}
		if (e) {
			if (!error)
				error = err_set(err, ERR_INVALID,
						"library path %s: %s", jpath[i],
						buf_cstr(&why));
			else
				err_set(err, ERR_INVALID, "library path %s: %s",
					jpath[i], buf_cstr(&why));
			free(real);
			continue;
		}
		buf_reset(&why);
		buf_addf(&why, "%s%s", inside, *inside ? "/" : "");
		c->jpath[c->njpath++] = buf_detach(&why, NULL);
		free(real);
	}
	buf_release(&why);
	return error;
}

static int select_jsonnet(const struct dirent *d)
{
	return d->d_name[0] != '.' && render_has_suffix(d->d_name, ".jsonnet");
}

/*
 * The main file: opts->file, else the only *.jsonnet at the top of the
 * root. *name gets its root-relative path (caller frees).
 */
static int find_main(struct jsonnet_ctx *c, const char *file, char **real,
		     char **name, struct err *err)
{
	struct dirent **names = NULL;
	struct buf why = BUF_INIT, list = BUF_INIT;
	const char *inside, *chosen = file;
	struct stat st;
	int n = 0, error = 0, e;

	*real = NULL;
	*name = NULL;
	if (!chosen) {
		if ((n = scandir(c->real_root, &names, select_jsonnet,
				 alphasort)) < 0) {
			error = err_set(err, ERR_IO, "cannot read the root: %s",
					strerror(errno));
			goto out;
		}
		if (n == 0) {
			error = err_set(err, ERR_NOTFOUND,
					"no *.jsonnet file at the top of the "
					"tree; name the main file");
			goto out;
		}
		if (n > 1) {
			for (int i = 0; i < n; i++)
				buf_addf(&list, "%s%s", i ? ", " : "",
					 names[i]->d_name);
			error = err_set(err, ERR_INVALID,
					"several main files (%s); name the one "
					"to evaluate",
					buf_cstr(&list));
			goto out;
		}
		chosen = names[0]->d_name;
	}
	if (chosen[0] == '/') {
		error = err_set(err, ERR_INVALID,
				"%s: the main file must be relative to the "
				"repository",
				chosen);
		goto out;
	}
	if ((e = resolve_inside(c, chosen, real, &inside, &why)) < 0) {
		error = err_set(err, e == -ENOENT ? ERR_NOTFOUND : ERR_INVALID,
				"%s: %s", chosen,
				e == -ENOENT ? "no such file" : buf_cstr(&why));
		goto out;
	}
	if (stat(*real, &st) < 0 || !S_ISREG(st.st_mode)) {
		error = err_set(err, ERR_INVALID, "%s: not a regular file",
				chosen);
		goto out;
	}
	if (!(*name = strdup(inside)))
		error = err_set(err, ERR_NOMEM, "out of memory");
out:
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	buf_release(&why);
	buf_release(&list);
	return error;
}

/*
 * An evaluation error, one problem per line of jsonnet's message, each
 * prefixed with the main file: the first line says what went wrong
 * ("RUNTIME ERROR: ..." or "STATIC ERROR: file:line:col: ..."), the
 * following ones are the stack trace ("file:line:col-col  function ...").
 * Tabs become spaces and blank lines are dropped.
 */
static int report_eval_error(const char *name, const char *msg, struct err *err)
{
	struct buf line = BUF_INIT;
	int error = 0;

	while (*msg) {
		const char *nl = strchr(msg, '\n');
		size_t len = nl ? (size_t)(nl - msg) : strlen(msg);

		buf_reset(&line);
		for (size_t i = 0; i < len; i++)
			buf_addch(&line, msg[i] == '\t' ? ' ' : msg[i]);
		while (line.len && line.ptr[line.len - 1] == ' ')
			buf_truncate(&line, line.len - 1);
		{
			const char *t = buf_cstr(&line);

			while (*t == ' ')
				t++;
			if (*t) {
				int e = err_set(err, ERR_INVALID, "%s: %s",
						name, t);

				if (!error)
					error = e;
			}
		}
		msg += len + (nl ? 1 : 0);
	}
	if (!error)
		error = err_set(err, ERR_INVALID, "%s: evaluation failed",
				name);
	buf_release(&line);
	return error;
}

/* A Kubernetes object (or List) rather than a map of them. */
static bool is_k8s_object(const json_t *v)
{
	return json_object_get(v, "apiVersion") && json_object_get(v, "kind");
}

struct emit {
	struct diff_objset *out;
	struct err *err;
	int error;
};

static void emit_fail(struct emit *em, int code)
{
	if (!em->error)
		em->error = code;
}

static void add_object(struct emit *em, json_t *json, const char *origin)
{
	struct diff_object *obj;
	int error;

	if (!json_is_object(json)) {
		emit_fail(em, err_set(em->err, ERR_INVALID,
				      "%s: value is %s, not an object", origin,
				      render_value_kind(json)));
		return;
	}
	if ((error = diff_object_new(&obj, json, origin, em->err)) < 0) {
		emit_fail(em, error);
		return;
	}
	if ((error = diff_objset_add(em->out, obj, em->err)) < 0) {
		diff_object_free(obj);
		emit_fail(em, error);
	}
}

/* One object, or the items of a List, from `v` at `origin`. */
static void emit_value(struct emit *em, json_t *v, const char *origin)
{
	struct buf o = BUF_INIT;
	json_t *items;

	if (!json_is_object(v) || !render_is_list_kind(v)) {
		add_object(em, v, origin);
		return;
	}
	items = json_object_get(v, "items");
	for (size_t i = 0; i < json_array_size(items); i++) {
		buf_reset(&o);
		buf_addf(&o, "%s (items[%zu])", origin, i);
		add_object(em, json_array_get(items, i), buf_cstr(&o));
	}
	buf_release(&o);
}

/*
 * The output shapes: an array of objects ("FILE[i]"), one object or List
 * ("FILE"), or an object whose values are objects ("FILE#key", in key
 * order, which is jsonnet's sorted field order). An object with both
 * apiVersion and kind is a Kubernetes object, anything else a map.
 */
static void emit_output(struct emit *em, json_t *root, const char *name)
{
	struct buf o = BUF_INIT;
	const char *key;
	json_t *v;

	if (json_is_array(root)) {
		for (size_t i = 0; i < json_array_size(root); i++) {
			buf_reset(&o);
			buf_addf(&o, "%s[%zu]", name, i);
			emit_value(em, json_array_get(root, i), buf_cstr(&o));
		}
	} else if (json_is_object(root) && is_k8s_object(root)) {
		emit_value(em, root, name);
	} else if (json_is_object(root)) {
		json_object_foreach(root, key, v)
		{
			buf_reset(&o);
			buf_addf(&o, "%s#%s", name, key);
			emit_value(em, v, buf_cstr(&o));
		}
	} else {
		emit_fail(em, err_set(em->err, ERR_INVALID,
				      "%s: output is %s; expected an object, "
				      "a list of objects or an object of "
				      "objects",
				      name, render_value_kind(root)));
	}
	buf_release(&o);
}

int render_jsonnet(struct diff_objset *out, const char *root,
		   const struct render_jsonnet_options *opts, struct err *err)
{
	static const struct render_jsonnet_options defaults = {0};
	struct jsonnet_ctx c = {0};
	struct emit em = {out, err, 0};
	struct buf text = BUF_INIT;
	char *real_main = NULL, *name = NULL, *result = NULL;
	json_t *json = NULL;
	json_error_t jerr;
	size_t max_output, len;
	int error = 0, failed = 0, e;

	if (!opts)
		opts = &defaults;
	max_output = opts->max_output ? opts->max_output : DEFAULT_MAX_OUTPUT;
	if (!(c.real_root = realpath(root, NULL))) {
		error = err_set(err, errno == ENOENT ? ERR_NOTFOUND : ERR_IO,
				"%s: %s", root, strerror(errno));
		goto out;
	}
	c.real_root_len = strlen(c.real_root);
	if (c.real_root_len == 1)
		c.real_root_len = 0; /* root is "/": every path is inside */

	if ((error = find_main(&c, opts->file, &real_main, &name, err)) < 0)
		goto out;
	if ((error = file_read(&text, real_main, name,
				      RENDER_MAX_FILE_SIZE, err)) < 0)
		goto out;
	if (memchr(buf_cstr(&text), '\0', text.len)) {
		error = err_set(err, ERR_PARSE, "%s: contains a NUL byte",
				name);
		goto out;
	}

	if ((error = lib_load(err)) < 0)
		goto out;
	if (!(c.vm = lib.make())) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	lib.max_trace(c.vm, MAX_TRACE);
	lib.import_callback(c.vm, import_cb, &c);
	/* Check every option and report each bad one before failing. */
	if ((e = setup_jpath(&c, opts->jpath, err)) < 0 && !error)
		error = e;
	if ((e = set_vars(c.vm, opts->ext_str, "ext var", lib.ext_var,
			  err)) < 0 &&
	    !error)
		error = e;
	if ((e = set_vars(c.vm, opts->ext_code, "ext code", lib.ext_code,
			  err)) < 0 &&
	    !error)
		error = e;
	if ((e = set_vars(c.vm, opts->tla_str, "top-level argument",
			  lib.tla_var, err)) < 0 &&
	    !error)
		error = e;
	if ((e = set_vars(c.vm, opts->tla_code, "top-level argument code",
			  lib.tla_code, err)) < 0 &&
	    !error)
		error = e;
	if (error)
		goto out;

	result = lib.evaluate_snippet(c.vm, name, buf_cstr(&text), &failed);
	if (!result) {
		error = err_set(err, ERR_NOMEM, "%s: out of memory", name);
		goto out;
	}
	if (failed) {
		error = report_eval_error(name, result, err);
		goto out;
	}
	len = strlen(result);
	if (len > max_output) {
		error = err_set(err, ERR_LIMIT,
				"%s: output is %zu bytes, over the %zu-byte "
				"limit",
				name, len, max_output);
		goto out;
	}
	if (!(json = json_loadb(result, len, JSON_DECODE_ANY, &jerr))) {
		error = err_set(err, ERR_PARSE,
				"%s: output is not valid JSON: %s", name,
				jerr.text);
		goto out;
	}
	emit_output(&em, json, name);
	error = em.error;
out:
	json_decref(json);
	if (result)
		lib.vm_realloc(c.vm, result, 0);
	if (c.vm)
		lib.destroy(c.vm);
	for (size_t i = 0; i < c.njpath; i++)
		free(c.jpath[i]);
	free(c.jpath);
	free(c.real_root);
	free(real_main);
	free(name);
	buf_release(&text);
	return error;
}
