/*
 * The helm renderer: `helm template` on a chart directory.
 *
 * Values files come from the repository and are confined to it (a
 * `../../etc/...` or a symlink out of the checkout is refused before helm
 * sees it). Inline values come from the syncd config and may hold
 * secrets, so they go through a private temporary file, never argv
 * (argv is visible to every user of the machine in /proc). Every value is
 * one `--flag=value` word: a release name or a --set pair cannot turn
 * into another flag.
 */
#include "renderers/render.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"

#include "util/banned.h" /* last */

static const char missing_msg[] =
	"`helm` not found in PATH (install helm 3: https://helm.sh/docs/"
	"intro/install/ (no Debian package), or choose a binary with "
	"--helm-bin)";

/*
 * helm 3 ends a template error with this advice, which syncd's users
 * cannot follow (syncd runs helm): the error line above it says it all.
 */
static const char *const debug_hint[] = {
	"Use --debug flag to render out invalid YAML",
	NULL,
};

int render_helm_check_release(const char *release, struct err *err)
{
	if (!release || !diff_dns_label(release, 53))
		return err_set(err, ERR_USAGE,
			       "helm release name \"%s\" is not a DNS-1123 "
			       "label of at most 53 characters (lower case "
			       "letters, digits, '-')",
			       release ? release : "");
	return 0;
}

/* Append one NUL-terminated word to scratch and note where it starts. */
static int add_word(struct buf *scratch, size_t *offs, size_t *nwords,
		    const char *fmt, const char *value)
	__attribute__((format(printf, 4, 0)));

static int add_word(struct buf *scratch, size_t *offs, size_t *nwords,
		    const char *fmt, const char *value)
{
	if (*nwords == RENDER_MAX_ARGV)
		return ERR_LIMIT;
	offs[(*nwords)++] = scratch->len;
	if (buf_addf(scratch, fmt, value) < 0 || buf_addch(scratch, '\0') < 0)
		return ERR_NOMEM;
	return 0;
}

int render_helm_argv(const char **argv, size_t max, struct buf *scratch,
		     const char *bin, const char *release,
		     const char *namespace, const char *const *values,
		     const char *inline_file,
		     const struct render_helm_options *opts, struct err *err)
{
	size_t offs[RENDER_MAX_ARGV], nwords = 0, n = 0;
	const char *const *v;
	int error = 0;

	/* Words first (the buffer may move), pointers after. */
	buf_reset(scratch);
	error = add_word(scratch, offs, &nwords, "--namespace=%s", namespace);
	for (v = values; !error && v && *v; v++)
		error = add_word(scratch, offs, &nwords, "--values=%s", *v);
	if (!error && inline_file)
		error = add_word(scratch, offs, &nwords, "--values=%s",
				 inline_file);
	for (v = opts ? opts->set : NULL; !error && v && *v; v++)
		error = add_word(scratch, offs, &nwords, "--set=%s", *v);
	if (!error && opts && opts->include_crds)
		error = add_word(scratch, offs, &nwords, "%s",
				 "--include-crds");
	if (!error && opts && opts->kube_version)
		error = add_word(scratch, offs, &nwords, "--kube-version=%s",
				 opts->kube_version);
	if (error == ERR_NOMEM)
		return err_set(err, error, "out of memory");
	if (error || max < nwords + 5)
		return err_set(err, ERR_LIMIT,
			       "helm: too many arguments (%zu, room for %zu)",
			       nwords + 5, max);
	argv[n++] = bin;
	argv[n++] = "template";
	argv[n++] = release;
	argv[n++] = ".";
	for (size_t i = 0; i < nwords; i++)
		argv[n++] = scratch->ptr + offs[i];
	argv[n] = NULL;
	return 0;
}

/* Real path of `rel` under `real_root`, refusing anything outside it. */
static int resolve_values(char **out, const char *real_root, const char *rel,
			  const char *origin, struct err *err)
{
	struct buf path = BUF_INIT;
	size_t n = strlen(real_root);
	char *real = NULL;
	int error = 0;

	*out = NULL;
	if (rel[0] == '/') {
		error = err_set(err, ERR_INVALID,
				"%s: values file %s: must be relative to the "
				"repository",
				origin, rel);
		goto out;
	}
	if (buf_addf(&path, "%s/%s", real_root, rel) < 0) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if (!(real = realpath(buf_cstr(&path), NULL))) {
		error = err_set(err, errno == ENOENT ? ERR_NOTFOUND : ERR_IO,
				"%s: values file %s: %s", origin, rel,
				strerror(errno));
		goto out;
	}
	if (strncmp(real, real_root, n) || (real[n] != '/' && real[n])) {
		error = err_set(err, ERR_INVALID,
				"%s: values file %s: outside the repository "
				"(resolves to %s); refused",
				origin, rel, real);
		goto out;
	}
	*out = real;
	real = NULL;
out:
	free(real);
	buf_release(&path);
	return error;
}

/* Write the inline values to a new 0600 file; *path gets its name. */
static int write_inline(char **path, const char *text, const char *origin,
			struct err *err)
{
	const char *tmp = getenv("TMPDIR");
	struct buf name = BUF_INIT;
	size_t len = strlen(text);
	int fd, error = 0;

	*path = NULL;
	if (buf_addf(&name, "%s/syncd-helm-values.XXXXXX",
		     tmp && *tmp == '/' ? tmp : "/tmp") < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	/* mkstemp creates the file 0600, O_EXCL. */
	if ((fd = mkstemp(name.ptr)) < 0) {
		error = err_set(err, ERR_IO,
				"%s: cannot create a temporary values file: "
				"%s",
				origin, strerror(errno));
		goto out;
	}
	if (file_write_all(fd, text, len) < 0)
		error = err_set(err, ERR_IO,
				"%s: cannot write the temporary values file: "
				"%s",
				origin, strerror(errno));
	if (close(fd) < 0 && !error)
		error = err_set(err, ERR_IO,
				"%s: cannot write the temporary values file: "
				"%s",
				origin, strerror(errno));
	if (error) {
		unlink(name.ptr);
		goto out;
	}
	*path = buf_detach(&name, NULL);
	if (!*path) {
		unlink(name.ptr);
		error = err_set(err, ERR_NOMEM, "out of memory");
	}
out:
	buf_release(&name);
	return error;
}

int render_helm(struct diff_objset *out, const char *root,
		const struct render_helm_options *opts,
		const struct render_app_info *info, struct err *err)
{
	static const struct render_helm_options defaults = {0};
	struct render_tool tool = {0};
	struct buf origin = BUF_INIT, missing = BUF_INIT, prog = BUF_INIT;
	struct buf scratch = BUF_INIT;
	const char *argv[RENDER_MAX_ARGV], *release, *ns, *bin = "helm";
	const char *values[RENDER_MAX_ARGV / 2];
	char *real_root = NULL, *real_chart = NULL, *inline_file = NULL;
	char **env = NULL;
	size_t nvalues = 0;
	struct stat st;
	int error = 0;

	memset(values, 0, sizeof(values));
	if (!opts)
		opts = &defaults;
	buf_addf(&origin, "helm %s", info && info->path ? info->path : root);
	if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    !(real_chart = realpath(root, NULL))) {
		error = err_set(err, ERR_INVALID, "%s: not a chart directory",
				buf_cstr(&origin));
		goto out;
	}
	if (opts->release)
		release = opts->release;
	else if (info && info->name)
		release = info->name;
	else
		release = strrchr(real_chart, '/') + 1;
	if ((error = render_helm_check_release(release, err)) < 0)
		goto out;
	if (opts->namespace)
		ns = opts->namespace;
	else if (info && info->namespace)
		ns = info->namespace;
	else
		ns = "default";
	if (!diff_dns_label(ns, 63)) {
		error = err_set(err, ERR_USAGE,
				"%s: namespace \"%s\" is not a DNS-1123 label",
				buf_cstr(&origin), ns);
		goto out;
	}
	for (const char *const *s = opts->set; s && *s; s++) {
		if (!strchr(*s, '=') || **s == '=') {
			error = err_set(
				err, ERR_USAGE,
				"%s: --helm-set \"%s\" is not KEY=VALUE",
				buf_cstr(&origin), *s);
			goto out;
		}
	}
	if (opts->values && *opts->values &&
	    !(real_root = realpath(opts->repo_root ? opts->repo_root : root,
				   NULL))) {
		error = err_set(err, ERR_IO, "%s: repository %s: %s",
				buf_cstr(&origin),
				opts->repo_root ? opts->repo_root : root,
				strerror(errno));
		goto out;
	}
	for (const char *const *v = opts->values; v && *v; v++) {
		char *real;

		if (nvalues + 1 == RENDER_MAX_ARGV / 2) {
			error = err_set(err, ERR_LIMIT,
					"%s: too many values files",
					buf_cstr(&origin));
			goto out;
		}
		if ((error = resolve_values(&real, real_root, *v,
					    buf_cstr(&origin), err)) < 0)
			goto out;
		values[nvalues++] = real;
	}
	for (const char *const *v = opts->values_files; v && *v; v++) {
		char *real;

		if (nvalues + 1 == RENDER_MAX_ARGV / 2) {
			error = err_set(err, ERR_LIMIT,
					"%s: too many values files",
					buf_cstr(&origin));
			goto out;
		}
		if (!(real = realpath(*v, NULL)) || access(real, R_OK) < 0) {
			error = err_set(err, errno == ENOENT ? ERR_NOTFOUND
							     : ERR_IO,
					"%s: values file %s: %s",
					buf_cstr(&origin), *v,
					strerror(errno));
			free(real);
			goto out;
		}
		values[nvalues++] = real;
	}
	if (opts->values_inline &&
	    (error = write_inline(&inline_file, opts->values_inline,
				  buf_cstr(&origin), err)) < 0)
		goto out;
	if (opts->bin) {
		if ((error = render_tool_program(&prog, opts->bin, err)) < 0)
			goto out;
		bin = buf_cstr(&prog);
		buf_addf(&missing, "%s: `%s` not found%s (--helm-bin)",
			 buf_cstr(&origin), opts->bin,
			 strchr(opts->bin, '/') ? "" : " in PATH");
	} else {
		buf_addf(&missing, "%s: %s", buf_cstr(&origin), missing_msg);
	}
	if ((error = render_helm_argv(argv, RENDER_MAX_ARGV, &scratch, bin,
				      release, ns, values, inline_file, opts,
				      err)) < 0 ||
	    (error = render_tool_env(&env, NULL, err)) < 0)
		goto out;
	tool.what = "helm template";
	tool.argv = argv;
	tool.cwd = real_chart;
	tool.env = env;
	tool.timeout_ms = opts->timeout_ms;
	tool.max_output = opts->max_output;
	tool.origin = buf_cstr(&origin);
	tool.missing = buf_cstr(&missing);
	tool.hints = debug_hint;
	error = render_tool_run(out, &tool, err);
out:
	if (inline_file)
		unlink(inline_file);
	free(inline_file);
	for (size_t i = 0; i < nvalues; i++)
		free((char *)values[i]);
	free(real_root);
	free(real_chart);
	render_env_free(env);
	buf_release(&origin);
	buf_release(&missing);
	buf_release(&prog);
	buf_release(&scratch);
	return error;
}
