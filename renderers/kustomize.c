/*
 * The kustomize renderer: `kustomize build`, or `kubectl kustomize` (the
 * same library built into kubectl) when no kustomize binary is installed.
 *
 * kustomize's default load restrictor (LoadRestrictionsRootOnly) is what
 * keeps a kustomization from reading files outside its directory, e.g.
 * `resources: [../../../etc/secret.yaml]`; we pass it explicitly so that
 * the command line says so, and never offer a way to relax it. Helm
 * inflation, exec and alpha plugins stay off (kustomize's defaults): a
 * repository must not be able to run programs through its kustomization.
 */
#include "renderers/render.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/banned.h" /* last */

static const char missing_msg[] =
	"neither `kustomize` nor `kubectl` found in PATH (install kubectl: "
	"Debian package `kubectl` from the Kubernetes or Google Cloud apt "
	"repository, or choose a binary with --kustomize-bin)";

/* True when `bin` names kubectl: "kubectl", "/usr/bin/kubectl-1.32". */
static bool is_kubectl(const char *bin)
{
	const char *b = strrchr(bin, '/');

	return !strncmp(b ? b + 1 : bin, "kubectl", 7);
}

int render_kustomize_argv(const char **argv, size_t max, const char *bin,
			  const char *dir, struct err *err)
{
	if (max < 6)
		return err_set(err, ERR_LIMIT, "argv too small for kustomize");
	argv[0] = bin;
	argv[1] = is_kubectl(bin) ? "kustomize" : "build";
	argv[2] = dir;
	argv[3] = "--load-restrictor";
	argv[4] = "LoadRestrictionsRootOnly";
	argv[5] = NULL;
	return 0;
}

/*
 * Whether `name` is an executable in an absolute PATH entry (relative
 * entries are skipped, as util/proc does, so a repository's own files
 * never count).
 */
static bool on_path(const char *name)
{
	const char *path = getenv("PATH"), *p, *end;
	struct buf full = BUF_INIT;
	struct stat st;
	bool found = false;

	for (p = path ? path : ""; *p && !found; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		if (*p != '/')
			continue;
		buf_reset(&full);
		if (buf_add(&full, p, (size_t)(end - p)) < 0 ||
		    buf_addf(&full, "/%s", name) < 0)
			break;
		found = stat(buf_cstr(&full), &st) == 0 &&
			S_ISREG(st.st_mode) &&
			access(buf_cstr(&full), X_OK) == 0;
	}
	buf_release(&full);
	return found;
}

int render_kustomize(struct diff_objset *out, const char *root,
		     const struct render_kustomize_options *opts,
		     const struct render_app_info *info, struct err *err)
{
	static const struct render_kustomize_options defaults = {0};
	struct render_tool tool = {0};
	struct buf origin = BUF_INIT, missing = BUF_INIT, prog = BUF_INIT;
	const char *argv[8], *bin;
	char **env = NULL;
	struct stat st;
	int error;

	if (!opts)
		opts = &defaults;
	buf_addf(&origin, "kustomize %s",
		 info && info->path ? info->path : root);
	if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode)) {
		error = err_set(err, ERR_INVALID,
				"%s: not a directory (kustomize renders a "
				"directory with a kustomization file)",
				buf_cstr(&origin));
		goto out;
	}
	if (opts->bin) {
		if ((error = render_tool_program(&prog, opts->bin, err)) < 0)
			goto out;
		bin = buf_cstr(&prog);
		buf_addf(&missing, "%s: `%s` not found%s (--kustomize-bin)",
			 buf_cstr(&origin), opts->bin,
			 strchr(opts->bin, '/') ? "" : " in PATH");
	} else {
		bin = on_path("kustomize") ? "kustomize" : "kubectl";
		buf_addf(&missing, "%s: %s", buf_cstr(&origin), missing_msg);
	}
	if ((error = render_kustomize_argv(argv, 8, bin, ".", err)) < 0 ||
	    (error = render_tool_env(&env, NULL, err)) < 0)
		goto out;
	tool.what = is_kubectl(bin) ? "kubectl kustomize" : "kustomize build";
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
	buf_release(&origin);
	buf_release(&missing);
	buf_release(&prog);
	return error;
}
