/*
 * The render options of app commands: which renderer, its options, and
 * the variables substituted after rendering.
 *
 * The exec plugin's command, its arguments and its environment come from
 * here (the command line; the controller config later), never from the
 * repository being rendered.
 */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "renderers/render.h"
#include "syncd/cli_render.h"
#include "util/file.h"

#include "util/banned.h" /* last */

enum {
	OPT_INCLUDE = CLI_RENDER_OPT,
	OPT_EXCLUDE,
	OPT_NO_RECURSE,
	OPT_RENDERER,
	OPT_TIMEOUT,
	OPT_KUSTOMIZE_BIN,
	OPT_HELM_BIN,
	OPT_HELM_RELEASE,
	OPT_HELM_VALUES,
	OPT_HELM_SET,
	OPT_HELM_CRDS,
	OPT_HELM_KUBE_VERSION,
	OPT_PLUGIN_CMD,
	OPT_PLUGIN_ARG,
	OPT_PLUGIN_ENV,
	OPT_JSONNET_FILE,
	OPT_JSONNET_EXT_STR,
	OPT_JSONNET_EXT_CODE,
	OPT_JSONNET_TLA_STR,
	OPT_JSONNET_TLA_CODE,
	OPT_JSONNET_JPATH,
	OPT_VAR,
	OPT_VARS_FILE,
	OPT_SUBSTITUTE,
};

const struct option cli_render_longopts[] = {
	{"include", required_argument, NULL, OPT_INCLUDE},
	{"exclude", required_argument, NULL, OPT_EXCLUDE},
	{"no-recurse", no_argument, NULL, OPT_NO_RECURSE},
	{"renderer", required_argument, NULL, OPT_RENDERER},
	{"render-timeout", required_argument, NULL, OPT_TIMEOUT},
	{"kustomize-bin", required_argument, NULL, OPT_KUSTOMIZE_BIN},
	{"helm-bin", required_argument, NULL, OPT_HELM_BIN},
	{"helm-release", required_argument, NULL, OPT_HELM_RELEASE},
	{"helm-values", required_argument, NULL, OPT_HELM_VALUES},
	{"helm-set", required_argument, NULL, OPT_HELM_SET},
	{"helm-include-crds", no_argument, NULL, OPT_HELM_CRDS},
	{"helm-kube-version", required_argument, NULL, OPT_HELM_KUBE_VERSION},
	{"plugin-cmd", required_argument, NULL, OPT_PLUGIN_CMD},
	{"plugin-arg", required_argument, NULL, OPT_PLUGIN_ARG},
	{"plugin-env", required_argument, NULL, OPT_PLUGIN_ENV},
	{"jsonnet-file", required_argument, NULL, OPT_JSONNET_FILE},
	{"jsonnet-ext-str", required_argument, NULL, OPT_JSONNET_EXT_STR},
	{"jsonnet-ext-code", required_argument, NULL, OPT_JSONNET_EXT_CODE},
	{"jsonnet-tla-str", required_argument, NULL, OPT_JSONNET_TLA_STR},
	{"jsonnet-tla-code", required_argument, NULL, OPT_JSONNET_TLA_CODE},
	{"jsonnet-jpath", required_argument, NULL, OPT_JSONNET_JPATH},
	{"var", required_argument, NULL, OPT_VAR},
	{"vars-file", required_argument, NULL, OPT_VARS_FILE},
	{"substitute", required_argument, NULL, OPT_SUBSTITUTE},
	{NULL, 0, NULL, 0},
};

const char cli_render_usage[] =
	"      --renderer KIND        auto (default), directory, kustomize, "
	"helm,\n"
	"                             jsonnet or exec; auto picks kustomize "
	"for a\n"
	"                             kustomization file, helm for Chart.yaml,"
	"\n"
	"                             jsonnet for *.jsonnet without YAML, "
	"else\n"
	"                             directory\n"
	"      --include GLOB         only files matching GLOB (repeatable); "
	"a\n"
	"                             glob without '/' matches the file name "
	"at\n"
	"                             any depth\n"
	"      --exclude GLOB         skip files matching GLOB (repeatable)\n"
	"      --no-recurse           only the files directly in PATH\n"
	"      --render-timeout DUR   limit of one tool run (kustomize, helm, "
	"exec):\n"
	"                             e.g. 90, 90s, 2m, 500ms (default 60s)\n"
	"      --kustomize-bin PROG   kustomize or kubectl to run (default:\n"
	"                             kustomize from PATH, else kubectl)\n"
	"      --helm-release NAME    release name (default: the app name)\n"
	"      --helm-values FILE     values file relative to PATH "
	"(repeatable)\n"
	"      --helm-set KEY=VALUE   a --set pair (repeatable)\n"
	"      --helm-include-crds    render the chart's crds/ too\n"
	"      --helm-kube-version V  Kubernetes version for "
	".Capabilities\n"
	"      --helm-bin PROG        helm binary (default: helm from PATH)\n"
	"      --plugin-cmd PROG      exec renderer: the program to run in "
	"PATH\n"
	"      --plugin-arg ARG       one argument of it (repeatable)\n"
	"      --plugin-env NAME=VAL  one variable of its environment "
	"(repeatable)\n"
	"      --jsonnet-file FILE    main jsonnet file (default: the only "
	"one)\n"
	"      --jsonnet-ext-str NAME=VALUE, --jsonnet-ext-code NAME=CODE\n"
	"      --jsonnet-tla-str NAME=VALUE, --jsonnet-tla-code NAME=CODE\n"
	"      --jsonnet-jpath DIR    library directory inside PATH "
	"(repeatable)\n"
	"      --var NAME=VALUE       a variable for ${NAME} (repeatable)\n"
	"      --vars-file FILE       variables from KEY=VALUE lines or a "
	"YAML\n"
	"                             map (repeatable; --var wins)\n"
	"      --substitute MODE      strict, lenient or off (default: strict\n"
	"                             when variables are given, else off)\n";

static int push(struct strvec *sv, const char *arg, struct err *err)
{
	if (strvec_push(sv, arg) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	return 1;
}

/* A variable name as Flux takes it: [_a-zA-Z][_a-zA-Z0-9]*. */
static bool var_name(const char *s, size_t n)
{
	if (!n || isdigit((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

static int need_pair(const char *flag, const char *arg, struct err *err)
{
	const char *eq = strchr(arg, '=');

	if (!eq || eq == arg)
		return err_set(err, ERR_USAGE, "%s \"%s\": want NAME=VALUE",
			       flag, arg);
	return 0;
}

/* "90" (seconds), "90s", "2m", "500ms" into milliseconds. */
static int parse_duration(unsigned *ms, const char *arg, struct err *err)
{
	char *end;
	unsigned long long v, mul = 1000;

	if (!isdigit((unsigned char)arg[0]))
		goto bad;
	v = strtoull(arg, &end, 10);
	if (!strcmp(end, "ms"))
		mul = 1;
	else if (!strcmp(end, "m"))
		mul = 60000;
	else if (*end && strcmp(end, "s"))
		goto bad;
	if (!v || v > UINT_MAX / mul)
		goto bad;
	*ms = (unsigned)(v * mul);
	return 0;
bad:
	return err_set(err, ERR_USAGE,
		       "--render-timeout \"%s\": want a positive duration "
		       "such as 90, 90s, 2m or 500ms",
		       arg);
}

int cli_render_option(struct cli_render *r, int val, const char *arg,
		      struct err *err)
{
	enum render_kind kind;
	int error;

	switch (val) {
	case OPT_INCLUDE:
	case OPT_EXCLUDE:
		if ((val == OPT_INCLUDE ? r->ninclude : r->nexclude) ==
		    CLI_RENDER_MAX_GLOBS)
			return err_set(err, ERR_USAGE, "more than %d globs",
				       CLI_RENDER_MAX_GLOBS);
		if (val == OPT_INCLUDE)
			r->include[r->ninclude++] = arg;
		else
			r->exclude[r->nexclude++] = arg;
		return 1;
	case OPT_NO_RECURSE:
		r->no_recurse = true;
		return 1;
	case OPT_RENDERER:
		if ((error = render_kind_parse(&kind, arg, err)) < 0)
			return error;
		r->kind = (int)kind;
		return 1;
	case OPT_TIMEOUT:
		if ((error = parse_duration(&r->timeout_ms, arg, err)) < 0)
			return error;
		return 1;
	case OPT_KUSTOMIZE_BIN:
		r->kustomize_bin = arg;
		return 1;
	case OPT_HELM_BIN:
		r->helm_bin = arg;
		return 1;
	case OPT_HELM_RELEASE:
		if ((error = render_helm_check_release(arg, err)) < 0)
			return error;
		r->helm_release = arg;
		return 1;
	case OPT_HELM_VALUES:
		return push(&r->helm_values, arg, err);
	case OPT_HELM_SET:
		if ((error = need_pair("--helm-set", arg, err)) < 0)
			return error;
		return push(&r->helm_set, arg, err);
	case OPT_HELM_CRDS:
		r->helm_include_crds = true;
		return 1;
	case OPT_HELM_KUBE_VERSION:
		r->helm_kube_version = arg;
		return 1;
	case OPT_PLUGIN_CMD:
		if (!*arg)
			return err_set(err, ERR_USAGE,
				       "--plugin-cmd: empty program");
		r->plugin_cmd = arg;
		return 1;
	case OPT_PLUGIN_ARG:
		return push(&r->plugin_args, arg, err);
	case OPT_PLUGIN_ENV:
		if ((error = need_pair("--plugin-env", arg, err)) < 0)
			return error;
		if (!var_name(arg, strcspn(arg, "=")))
			return err_set(err, ERR_USAGE,
				       "--plugin-env \"%.*s\": a name is "
				       "letters, digits and _",
				       (int)strcspn(arg, "="), arg);
		if (!strncmp(arg, "SYNCD_", 6))
			return err_set(err, ERR_USAGE,
				       "--plugin-env: SYNCD_* variables are "
				       "set by syncd");
		return push(&r->plugin_env, arg, err);
	case OPT_JSONNET_FILE:
		r->jsonnet_file = arg;
		return 1;
	case OPT_JSONNET_EXT_STR:
	case OPT_JSONNET_EXT_CODE:
	case OPT_JSONNET_TLA_STR:
	case OPT_JSONNET_TLA_CODE:
		if ((error = need_pair("jsonnet variable", arg, err)) < 0)
			return error;
		if (val == OPT_JSONNET_EXT_STR)
			return push(&r->jsonnet_ext_str, arg, err);
		if (val == OPT_JSONNET_EXT_CODE)
			return push(&r->jsonnet_ext_code, arg, err);
		if (val == OPT_JSONNET_TLA_STR)
			return push(&r->jsonnet_tla_str, arg, err);
		return push(&r->jsonnet_tla_code, arg, err);
	case OPT_JSONNET_JPATH:
		return push(&r->jsonnet_jpath, arg, err);
	case OPT_VAR:
		if ((error = need_pair("--var", arg, err)) < 0)
			return error;
		if (!var_name(arg, strcspn(arg, "=")))
			return err_set(err, ERR_USAGE,
				       "--var \"%.*s\": a variable name is "
				       "letters, digits and _, not starting "
				       "with a digit",
				       (int)strcspn(arg, "="), arg);
		return push(&r->vars, arg, err);
	case OPT_VARS_FILE:
		return push(&r->vars_files, arg, err);
	case OPT_SUBSTITUTE:
		if (!strcmp(arg, "strict"))
			r->substitute = RENDER_SUBST_STRICT;
		else if (!strcmp(arg, "lenient"))
			r->substitute = RENDER_SUBST_LENIENT;
		else if (!strcmp(arg, "off"))
			r->substitute = RENDER_SUBST_OFF;
		else
			return err_set(err, ERR_USAGE,
				       "--substitute \"%s\": want strict, "
				       "lenient or off",
				       arg);
		return 1;
	default:
		return 0;
	}
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
			return p + n < e && var_name(p, n);
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
		if (p + n == e_ || !var_name(p, n)) {
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

		if (!var_name(key, strlen(key))) {
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

int cli_render_read_vars(struct strvec *out, const char *path,
			 struct err *err)
{
	struct buf data = BUF_INIT;
	int error;

	if ((error = file_read(&data, path, path,
				      CLI_RENDER_MAX_VARS_FILE, err)) < 0)
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

int cli_render_run(struct cli_render *r, const char *dir,
		   const struct cli_render_env *env, struct diff_objset *out,
		   struct err *err)
{
	struct render_app_options opts = RENDER_APP_OPTIONS_INIT;
	struct strvec vars = {0};
	const char **names = NULL, **values = NULL;
	enum render_kind used = RENDER_AUTO;
	int error = 0;

	opts.kind = (enum render_kind)r->kind;
	if (env) {
		opts.info.name = env->app_name;
		opts.info.namespace = env->app_namespace;
		opts.info.revision = env->revision;
		opts.info.path = env->path;
	}
	opts.dir.no_recurse = r->no_recurse;
	if (r->ninclude)
		opts.dir.include = r->include;
	if (r->nexclude)
		opts.dir.exclude = r->exclude;
	opts.kustomize.bin = r->kustomize_bin;
	opts.kustomize.timeout_ms = r->timeout_ms;
	opts.helm.bin = r->helm_bin;
	opts.helm.release = r->helm_release;
	opts.helm.values = (const char *const *)r->helm_values.v;
	opts.helm.set = (const char *const *)r->helm_set.v;
	opts.helm.include_crds = r->helm_include_crds;
	opts.helm.kube_version = r->helm_kube_version;
	opts.helm.timeout_ms = r->timeout_ms;
	opts.exec.cmd = r->plugin_cmd;
	opts.exec.args = (const char *const *)r->plugin_args.v;
	opts.exec.env = (const char *const *)r->plugin_env.v;
	opts.exec.timeout_ms = r->timeout_ms;
	opts.jsonnet.file = r->jsonnet_file;
	opts.jsonnet.ext_str = (const char *const *)r->jsonnet_ext_str.v;
	opts.jsonnet.ext_code = (const char *const *)r->jsonnet_ext_code.v;
	opts.jsonnet.tla_str = (const char *const *)r->jsonnet_tla_str.v;
	opts.jsonnet.tla_code = (const char *const *)r->jsonnet_tla_code.v;
	opts.jsonnet.jpath = (const char *const *)r->jsonnet_jpath.v;

	if (r->kind == RENDER_EXEC && !r->plugin_cmd) {
		error = err_set(err, ERR_USAGE,
				"--renderer exec needs --plugin-cmd");
		goto out;
	}
	if (r->kind != RENDER_EXEC && r->plugin_cmd) {
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
	if (opts.kind != RENDER_DIRECTORY &&
	    (r->ninclude || r->nexclude || r->no_recurse)) {
		error = err_set(err, ERR_USAGE,
				"%s: --include, --exclude and --no-recurse "
				"apply to the directory renderer, not %s%s",
				env && env->path ? env->path : dir,
				render_kind_name(opts.kind),
				r->kind == RENDER_AUTO
					? " (detected; choose one with "
					  "--renderer)"
					: "");
		goto out;
	}

	/* Files first, then --var: the command line wins. */
	for (size_t i = 0; i < r->vars_files.len; i++) {
		int e = cli_render_read_vars(&vars, r->vars_files.v[i], err);

		if (e < 0 && !error)
			error = e;
	}
	if (error)
		goto out;
	for (size_t i = 0; i < r->vars.len; i++) {
		if (strvec_push(&vars, r->vars.v[i]) < 0) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			goto out;
		}
	}
	if (r->substitute == CLI_RENDER_SUBST_UNSET)
		opts.subst = r->vars.len || r->vars_files.len
				     ? RENDER_SUBST_STRICT
				     : RENDER_SUBST_OFF;
	else
		opts.subst = (enum render_subst_mode)r->substitute;
	if ((error = split_vars(&vars, &names, &values, &opts.vars.len, err)) <
	    0)
		goto out;
	opts.vars.names = names;
	opts.vars.values = values;
	error = render_app(out, &used, dir, &opts, err);
	r->used_kind = (int)used;
out:
	free(names);
	free(values);
	strvec_release(&vars);
	return error;
}

void cli_render_release(struct cli_render *r)
{
	if (!r)
		return;
	strvec_release(&r->helm_values);
	strvec_release(&r->helm_set);
	strvec_release(&r->plugin_args);
	strvec_release(&r->plugin_env);
	strvec_release(&r->jsonnet_ext_str);
	strvec_release(&r->jsonnet_ext_code);
	strvec_release(&r->jsonnet_tla_str);
	strvec_release(&r->jsonnet_tla_code);
	strvec_release(&r->jsonnet_jpath);
	strvec_release(&r->vars);
	strvec_release(&r->vars_files);
}
