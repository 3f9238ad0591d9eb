/*
 * Choosing a renderer, and the one entry point that renders an app.
 *
 * `auto` looks only at the names at the top of the app's directory, as
 * Argo CD and Flux do: a kustomization file means kustomize, Chart.yaml
 * means helm, *.jsonnet without YAML means jsonnet. The exec renderer is
 * never detected: a repository cannot ask for a program to be run.
 */
#include "renderers/render.h"
#include "renderers/internal.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "util/banned.h" /* last */

static const char *const names[] = {
	[RENDER_AUTO] = "auto",
	[RENDER_DIRECTORY] = "directory",
	[RENDER_KUSTOMIZE] = "kustomize",
	[RENDER_HELM] = "helm",
	[RENDER_JSONNET] = "jsonnet",
	[RENDER_EXEC] = "exec",
};

const char *render_kind_name(enum render_kind kind)
{
	if ((unsigned)kind >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[kind];
}

int render_kind_parse(enum render_kind *out, const char *name,
		      struct err *err)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (name && !strcmp(name, names[i])) {
			*out = (enum render_kind)i;
			return 0;
		}
	}
	return err_set(err, ERR_USAGE,
		       "unknown renderer \"%s\" (want auto, directory, "
		       "kustomize, helm, jsonnet or exec)",
		       name ? name : "");
}

int render_detect(enum render_kind *out, const char *root, struct err *err)
{
	bool kustomization = false, chart = false, jsonnet = false;
	bool yaml = false;
	struct dirent *d;
	struct stat st;
	DIR *dir;

	*out = RENDER_DIRECTORY;
	if (stat(root, &st) < 0)
		return err_set(err, errno == ENOENT ? ERR_NOTFOUND : ERR_IO,
			       "%s: %s", root, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (!(dir = opendir(root)))
		return err_set(err, ERR_IO, "%s: cannot read directory: %s",
			       root, strerror(errno));
	while ((errno = 0, d = readdir(dir))) {
		const char *n = d->d_name;

		if (n[0] == '.')
			continue;
		if (!strcmp(n, "kustomization.yaml") ||
		    !strcmp(n, "kustomization.yml") ||
		    !strcmp(n, "Kustomization"))
			kustomization = true;
		else if (!strcmp(n, "Chart.yaml"))
			chart = true;
		if (render_has_suffix(n, ".jsonnet"))
			jsonnet = true;
		else if (render_has_suffix(n, ".yaml") ||
			 render_has_suffix(n, ".yml"))
			yaml = true;
	}
	if (errno) {
		int e = errno;

		closedir(dir);
		return err_set(err, ERR_IO, "%s: cannot read directory: %s",
			       root, strerror(e));
	}
	closedir(dir);
	if (kustomization)
		*out = RENDER_KUSTOMIZE;
	else if (chart)
		*out = RENDER_HELM;
	else if (jsonnet && !yaml)
		*out = RENDER_JSONNET;
	return 0;
}

int render_app(struct diff_objset *out, enum render_kind *kind,
	       const char *root, const struct render_app_options *opts,
	       struct err *err)
{
	static const struct render_app_options defaults =
		RENDER_APP_OPTIONS_INIT;
	enum render_kind k;
	int error;

	if (!opts)
		opts = &defaults;
	if (opts->version != RENDER_APP_OPTIONS_VERSION)
		return err_set(err, ERR_INVALID,
			       "render_app: options version %u, want %u",
			       opts->version, RENDER_APP_OPTIONS_VERSION);
	k = opts->kind;
	if (k == RENDER_AUTO && (error = render_detect(&k, root, err)) < 0)
		return error;
	if (kind)
		*kind = k;
	switch (k) {
	case RENDER_KUSTOMIZE:
		error = render_kustomize(out, root, &opts->kustomize,
					 &opts->info, err);
		break;
	case RENDER_HELM:
		error = render_helm(out, root, &opts->helm, &opts->info, err);
		break;
	case RENDER_JSONNET:
		error = render_jsonnet(out, root, &opts->jsonnet, err);
		break;
	case RENDER_EXEC:
		error = render_exec(out, root, &opts->exec, &opts->info, err);
		break;
	case RENDER_DIRECTORY:
		error = render_dir(out, root, &opts->dir, err);
		break;
	default:
		return err_set(err, ERR_INVALID, "unknown renderer %d", (int)k);
	}
	if (error < 0)
		return error;
	/* Each object costs a diff, a dry run and a write per pass. */
	if (out->len > RENDER_MAX_OBJECTS)
		return err_set(err, ERR_LIMIT,
			       "%s: %zu objects rendered, over "
			       "the limit of %u objects per app",
			       opts->info.path ? opts->info.path : root,
			       out->len, RENDER_MAX_OBJECTS);
	if (opts->subst == RENDER_SUBST_OFF)
		return error;
	return render_substitute(out, &opts->vars,
				 opts->subst == RENDER_SUBST_STRICT, err);
}
