/*
 * Tools whose stdout is manifests: the runner shared by the kustomize,
 * helm and exec renderers, and the exec (plugin) renderer itself.
 *
 * A tool is a program we do not control, run on files we do not control.
 * It gets argv only (no shell), a timeout, a cap on what it prints, and
 * an environment built from nothing: PATH and HOME (a tool needs them to
 * find helpers and its cache), and what the renderer names. syncd's own
 * environment may hold a Git token or a kubeconfig path; none of it is
 * passed on.
 */
#include "renderers/render.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/proc.h"

#include "util/banned.h" /* last */

/* stderr lines copied into the error; the rest are counted. */
#define STDERR_LINES 20
/* Longest stderr line kept (bytes); longer ones are cut. */
#define STDERR_LINE_MAX 1000

void render_env_free(char **env)
{
	if (!env)
		return;
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

struct env {
	char **items;
	size_t len, alloc;
	int error;
};

static size_t name_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* Set "K=V" (kv) in *e, replacing an entry with the same name. */
static void env_put(struct env *e, const char *kv)
{
	size_t n = name_len(kv);
	char *copy;

	if (e->error)
		return;
	if (!(copy = strdup(kv))) {
		e->error = ERR_NOMEM;
		return;
	}
	for (size_t i = 0; i < e->len; i++) {
		if (name_len(e->items[i]) == n &&
		    !strncmp(e->items[i], kv, n)) {
			free(e->items[i]);
			e->items[i] = copy;
			return;
		}
	}
	if (e->len + 2 > e->alloc) {
		size_t a = e->alloc ? e->alloc * 2 : 16;
		char **p = realloc(e->items, a * sizeof(*p));

		if (!p) {
			free(copy);
			e->error = ERR_NOMEM;
			return;
		}
		e->items = p;
		e->alloc = a;
	}
	e->items[e->len++] = copy;
	e->items[e->len] = NULL;
}

static void env_putf(struct env *e, const char *name, const char *value)
{
	struct buf b = BUF_INIT;

	if (buf_addf(&b, "%s=%s", name, value ? value : "") < 0)
		e->error = ERR_NOMEM;
	else
		env_put(e, buf_cstr(&b));
	buf_release(&b);
}

static void env_base(struct env *e, bool tmpdir)
{
	const char *path = getenv("PATH"), *home = getenv("HOME");
	const char *tmp = getenv("TMPDIR");

	env_putf(e, "PATH",
		 path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	env_putf(e, "HOME", home && *home ? home : "/");
	if (tmpdir && tmp && *tmp)
		env_putf(e, "TMPDIR", tmp);
}

static int env_finish(struct env *e, char ***out, struct err *err)
{
	if (!e->error && !e->items)
		env_put(e, "PATH=/usr/local/bin:/usr/bin:/bin");
	if (e->error) {
		render_env_free(e->items);
		*out = NULL;
		return err_set(err, e->error, "out of memory");
	}
	*out = e->items;
	return 0;
}

static bool valid_env_name(const char *kv)
{
	size_t n = name_len(kv);

	if (!strchr(kv, '=') || !n || isdigit((unsigned char)kv[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)kv[i]) && kv[i] != '_')
			return false;
	return true;
}

int render_tool_env(char ***out, const char *const *extra, struct err *err)
{
	struct env e = {0};

	env_base(&e, true);
	for (; extra && *extra; extra++)
		env_put(&e, *extra);
	return env_finish(&e, out, err);
}

static const char *base_name(const char *path)
{
	const char *s;
	size_t n = strlen(path);

	/* "apps/web/" names "web". */
	while (n > 1 && path[n - 1] == '/')
		n--;
	for (s = path + n; s > path && s[-1] != '/'; s--)
		;
	return s;
}

int render_exec_env(char ***out, const char *root,
		    const struct render_exec_options *opts,
		    const struct render_app_info *info, struct err *err)
{
	static const struct render_app_info none = {0};
	struct env e = {0};
	struct buf name = BUF_INIT;

	*out = NULL;
	if (!info)
		info = &none;
	for (const char *const *v = opts ? opts->env : NULL; v && *v; v++) {
		if (!valid_env_name(*v))
			return err_set(err, ERR_USAGE,
				       "plugin environment entry \"%.*s\" is "
				       "not NAME=VALUE with NAME made of "
				       "letters, digits and _",
				       (int)name_len(*v), *v);
		if (!strncmp(*v, "SYNCD_", 6))
			return err_set(err, ERR_USAGE,
				       "plugin environment: %.*s is set by "
				       "syncd and cannot be configured",
				       (int)name_len(*v), *v);
	}
	env_base(&e, false);
	if (info->name) {
		env_putf(&e, "SYNCD_APP_NAME", info->name);
	} else {
		/* "." names the directory it is: resolve it when we can. */
		char *real = realpath(root, NULL);
		const char *b = base_name(real ? real : root);
		size_t n = strcspn(b, "/");

		if (buf_add(&name, b, n) < 0)
			e.error = ERR_NOMEM;
		free(real);
		env_putf(&e, "SYNCD_APP_NAME", buf_cstr(&name));
	}
	env_putf(&e, "SYNCD_APP_NAMESPACE", info->namespace);
	env_putf(&e, "SYNCD_REVISION", info->revision);
	env_putf(&e, "SYNCD_PATH", info->path ? info->path : root);
	for (const char *const *v = opts ? opts->env : NULL; v && *v; v++)
		env_put(&e, *v);
	buf_release(&name);
	return env_finish(&e, out, err);
}

/* Append `s[0..n)` to *b without control characters (a tool's stderr
 * may hold terminal escapes; our messages are one plain line). */
static void add_clean(struct buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\t')
			c = ' ';
		if (c < 0x20 || c == 0x7f)
			continue;
		buf_addch(b, (char)c);
	}
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)s[i]))
			return false;
	return true;
}

/*
 * kubectl logs through klog: "E1129 10:00:07.210779   31527 run.go:72] ".
 * The header says nothing to the reader of our one-line error; drop it.
 */
static void skip_klog(const char **p, size_t *n)
{
	const char *s = *p, *e = s + *n, *q;

	if (*n < 30 || !strchr("IWEF", s[0]))
		return;
	for (q = s + 1; q < s + 5; q++)
		if (!isdigit((unsigned char)*q))
			return;
	if (*q != ' ' || !isdigit((unsigned char)q[1]) || q[3] != ':')
		return;
	q = memchr(q, ']', (size_t)(e - q));
	if (!q || q - s > 60 || q + 1 >= e || q[1] != ' ')
		return;
	*n -= (size_t)(q + 2 - s);
	*p = q + 2;
}

/* Is stderr line p[0..n) one of the tool's hints about its own flags? */
static bool hint(const struct render_tool *tool, const char *p, size_t n)
{
	for (const char *const *h = tool->hints; h && *h; h++) {
		size_t len = strlen(*h);

		if (n >= len && !memcmp(p, *h, len))
			return true;
	}
	return false;
}

/*
 * "ORIGIN: `PROG` failed (exit status 1): FIRST STDERR LINE", then one
 * problem per further stderr line (at most STDERR_LINES, each cut at
 * STDERR_LINE_MAX bytes); a tool that says nothing is said to.
 */
static int report_failure(const struct render_tool *tool,
			  const struct proc_result *res, struct err *err)
{
	const char *p = buf_cstr(&res->errout), *end = p + res->errout.len;
	struct buf line = BUF_INIT;
	char how[64];
	unsigned shown = 0, more = 0;
	int error = ERR_GENERIC;

	proc_result_describe(res, how, sizeof(how));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (!blank(p, n) && !hint(tool, p, n)) {
			if (shown == STDERR_LINES) {
				more++;
			} else {
				buf_reset(&line);
				if (!shown)
					buf_addf(&line,
						 "%s: `%s` failed (%s): ",
						 tool->origin, tool->what, how);
				else
					buf_addf(&line, "%s: ", tool->origin);
				/* Leading blanks of a line carry no meaning. */
				while (n && isspace((unsigned char)*p)) {
					p++;
					n--;
				}
				skip_klog(&p, &n);
				add_clean(&line, p,
					  n > STDERR_LINE_MAX ? STDERR_LINE_MAX
							      : n);
				err_set(err, error, "%s", buf_cstr(&line));
				shown++;
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (!shown)
		err_set(err, error,
			"%s: `%s` failed (%s) with no output on "
			"stderr",
			tool->origin, tool->what, how);
	if (more || res->err_truncated)
		err_set(err, error, "%s: ... %u more lines of stderr%s",
			tool->origin, more,
			res->err_truncated ? " (stderr was truncated)" : "");
	buf_release(&line);
	return error;
}

int render_tool_run(struct diff_objset *out, const struct render_tool *tool,
		    struct err *err)
{
	struct proc_options po = PROC_OPTIONS_INIT;
	struct proc_result res = PROC_RESULT_INIT;
	struct err why = ERR_INIT;
	int error;

	po.cwd = tool->cwd;
	po.env = tool->env;
	po.timeout_ms =
		tool->timeout_ms ? tool->timeout_ms : RENDER_TOOL_TIMEOUT_MS;
	po.stdout_cap =
		tool->max_output ? tool->max_output : RENDER_TOOL_MAX_OUTPUT;
	error = proc_run(&res, tool->argv, &po, &why);
	switch (error) {
	case 0:
		break;
	case ERR_NOTFOUND:
		if (tool->missing)
			err_set(err, error, "%s", tool->missing);
		else
			err_set(err, error, "%s: `%s` not found", tool->origin,
				tool->argv[0]);
		goto out;
	case ERR_TIMEOUT:
		err_set(err, error,
			"%s: `%s` timed out after %u ms and was killed "
			"(--render-timeout)",
			tool->origin, tool->what, po.timeout_ms);
		goto out;
	case ERR_LIMIT:
		err_set(err, error,
			"%s: `%s` printed more than %zu bytes; refusing a "
			"truncated render",
			tool->origin, tool->what, po.stdout_cap);
		goto out;
	default:
		err_set(err, error, "%s: %s", tool->origin, err_first(&why));
		goto out;
	}
	if (!res.exited || res.exit_code != 0) {
		error = report_failure(tool, &res, err);
		goto out;
	}
	error = render_tool_output(out, buf_cstr(&res.out), res.out.len,
				   tool->origin, err);
out:
	proc_result_release(&res);
	err_release(&why);
	return error;
}

static bool is_list(const json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	size_t n = kind ? strlen(kind) : 0;

	return n >= 4 && !strcmp(kind + n - 4, "List") &&
	       json_is_array(json_object_get(doc, "items"));
}

static int add_object(struct diff_objset *out, json_t *json, const char *origin,
		      unsigned line, struct err *err)
{
	struct diff_object *obj;
	json_t *kind = json_object_get(json, "kind");
	int error;

	if (!json_is_string(kind) || !*json_string_value(kind))
		return err_set(err, ERR_INVALID,
			       "%s: output line %u: object %s kind", origin,
			       line, kind ? "with an invalid" : "without");
	if ((error = diff_object_new(&obj, json, origin, err)) < 0)
		return error;
	if ((error = diff_objset_add(out, obj, err)) < 0)
		diff_object_free(obj);
	return error;
}

int render_tool_output(struct diff_objset *out, const char *data, size_t len,
		       const char *origin, struct err *err)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err why = ERR_INIT;
	int error = 0, e;

	if (render_parse(&docs, data, len, "stdout", &why) < 0) {
		/* Nothing from a half-read stream is applied. */
		error = err_set(err, ERR_PARSE,
				"%s: output is not YAML or JSON: %s", origin,
				err_first(&why));
		goto out;
	}
	for (size_t i = 0; i < docs.len; i++) {
		json_t *doc = docs.items[i].value, *items;
		unsigned line = docs.items[i].line;

		if (!json_is_object(doc)) {
			e = err_set(err, ERR_INVALID,
				    "%s: output line %u: document is not an "
				    "object",
				    origin, line);
			error = error ? error : e;
			continue;
		}
		items = json_object_get(doc, "items");
		if (is_list(doc)) {
			for (size_t j = 0; j < json_array_size(items); j++) {
				json_t *item = json_array_get(items, j);

				if (!json_is_object(item))
					e = err_set(err, ERR_INVALID,
						    "%s: output line %u: "
						    "items[%zu] is not an "
						    "object",
						    origin, line, j);
				else
					e = add_object(out, item, origin, line,
						       err);
				error = error ? error : e;
			}
			continue;
		}
		if ((e = add_object(out, doc, origin, line, err)) < 0)
			error = error ? error : e;
	}
out:
	render_docs_release(&docs);
	err_release(&why);
	return error;
}

/*
 * proc would resolve a relative program against the tool's directory,
 * i.e. inside the repository: make it absolute here.
 */
int render_tool_program(struct buf *out, const char *cmd, struct err *err)
{
	char cwd[PATH_MAX];

	if (!cmd || !*cmd)
		return err_set(err, ERR_USAGE, "empty program name");
	if (!strchr(cmd, '/') || cmd[0] == '/')
		return buf_adds(out, cmd) < 0
			       ? err_set(err, ERR_NOMEM, "out of memory")
			       : 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return err_set(err, ERR_IO,
			       "cannot get the working directory: "
			       "%s",
			       strerror(errno));
	if (buf_addf(out, "%s/%s", cwd, cmd) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	return 0;
}

int render_exec(struct diff_objset *out, const char *root,
		const struct render_exec_options *opts,
		const struct render_app_info *info, struct err *err)
{
	struct render_tool tool = {0};
	struct buf prog = BUF_INIT, origin = BUF_INIT, missing = BUF_INIT;
	const char *argv[RENDER_MAX_ARGV];
	char **env = NULL;
	size_t n = 0;
	int error;

	if (!opts || !opts->cmd || !*opts->cmd) {
		error = err_set(err, ERR_USAGE,
				"the exec renderer needs --plugin-cmd");
		goto out;
	}
	if ((error = render_tool_program(&prog, opts->cmd, err)) < 0)
		goto out;
	argv[n++] = buf_cstr(&prog);
	for (const char *const *a = opts->args; a && *a; a++) {
		if (n + 1 >= RENDER_MAX_ARGV) {
			error = err_set(err, ERR_LIMIT,
					"more than %u plugin arguments",
					RENDER_MAX_ARGV - 2);
			goto out;
		}
		argv[n++] = *a;
	}
	argv[n] = NULL;
	if ((error = render_exec_env(&env, root, opts, info, err)) < 0)
		goto out;
	buf_addf(&origin, "plugin %s %s", base_name(opts->cmd),
		 info && info->path ? info->path : root);
	buf_addf(&missing, "%s: plugin command `%s` not found%s",
		 buf_cstr(&origin), opts->cmd,
		 strchr(opts->cmd, '/') ? "" : " in PATH");
	tool.what = opts->cmd;
	tool.argv = argv;
	tool.cwd = root;
	tool.env = env;
	tool.timeout_ms = opts->timeout_ms;
	tool.max_output = opts->max_output;
	tool.origin = buf_cstr(&origin);
	tool.missing = buf_cstr(&missing);
	error = render_tool_run(out, &tool, err);
out:
	render_env_free(env);
	buf_release(&prog);
	buf_release(&origin);
	buf_release(&missing);
	return error;
}
