/*
 * The render options of app commands: which renderer, its options, and
 * the variables substituted after rendering.
 *
 * The exec plugin's command, its arguments and its environment come from
 * here (the command line, or the controller config), never from the
 * repository being rendered.
 */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "renderers/render.h"
#include "syncd/cli_render.h"
#include "util/clock.h"

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
	OPT_HELM_VALUES_FILE,
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
	{"helm-values-file", required_argument, NULL, OPT_HELM_VALUES_FILE},
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
	"      --helm-values-file FILE\n"
	"                             a values file of this machine, after\n"
	"                             --helm-values (repeatable)\n"
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

static int push(struct app_spec *s, enum app_list which, const char *arg,
		struct err *err)
{
	if (app_spec_add(s, which, arg) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	return 1;
}

static int set(struct app_spec *s, const char **field, const char *arg,
	       struct err *err)
{
	if (app_spec_set(s, field, arg) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	return 1;
}

static int push_str(struct strvec *sv, const char *arg, struct err *err)
{
	if (strvec_push(sv, arg) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	return 1;
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
	uint64_t v;

	if (clk_parse_duration(arg, CLK_DURATION_BARE_SECONDS, &v) < 0 ||
	    !v || v > UINT_MAX)
		return err_set(err, ERR_USAGE,
			       "--render-timeout \"%s\": want a positive "
			       "duration such as 90, 90s, 2m or 500ms",
			       arg);
	*ms = (unsigned)v;
	return 0;
}

int cli_render_option(struct app_spec *s, int val, const char *arg,
		      struct err *err)
{
	struct render_app_options *r = &s->render;
	enum render_kind kind;
	unsigned ms = 0;
	int error;

	switch (val) {
	case OPT_INCLUDE:
		return push(s, APP_LIST_INCLUDE, arg, err);
	case OPT_EXCLUDE:
		return push(s, APP_LIST_EXCLUDE, arg, err);
	case OPT_NO_RECURSE:
		r->dir.no_recurse = true;
		return 1;
	case OPT_RENDERER:
		if ((error = render_kind_parse(&kind, arg, err)) < 0)
			return error;
		r->kind = kind;
		return 1;
	case OPT_TIMEOUT:
		if ((error = parse_duration(&ms, arg, err)) < 0)
			return error;
		app_spec_set_render_timeout(s, ms);
		return 1;
	case OPT_KUSTOMIZE_BIN:
		return set(s, &r->kustomize.bin, arg, err);
	case OPT_HELM_BIN:
		return set(s, &r->helm.bin, arg, err);
	case OPT_HELM_RELEASE:
		if ((error = render_helm_check_release(arg, err)) < 0)
			return error;
		return set(s, &r->helm.release, arg, err);
	case OPT_HELM_VALUES:
		return push(s, APP_LIST_HELM_VALUES, arg, err);
	case OPT_HELM_VALUES_FILE:
		return push(s, APP_LIST_HELM_VALUES_FILES, arg, err);
	case OPT_HELM_SET:
		if ((error = need_pair("--helm-set", arg, err)) < 0)
			return error;
		return push(s, APP_LIST_HELM_SET, arg, err);
	case OPT_HELM_CRDS:
		r->helm.include_crds = true;
		return 1;
	case OPT_HELM_KUBE_VERSION:
		return set(s, &r->helm.kube_version, arg, err);
	case OPT_PLUGIN_CMD:
		if (!*arg)
			return err_set(err, ERR_USAGE,
				       "--plugin-cmd: empty program");
		return set(s, &r->exec.cmd, arg, err);
	case OPT_PLUGIN_ARG:
		return push(s, APP_LIST_PLUGIN_ARGS, arg, err);
	case OPT_PLUGIN_ENV:
		if ((error = need_pair("--plugin-env", arg, err)) < 0)
			return error;
		if (!render_var_name(arg, strcspn(arg, "=")))
			return err_set(err, ERR_USAGE,
				       "--plugin-env \"%.*s\": a name is "
				       "letters, digits and _",
				       (int)strcspn(arg, "="), arg);
		if (!strncmp(arg, "SYNCD_", 6))
			return err_set(err, ERR_USAGE,
				       "--plugin-env: SYNCD_* variables are "
				       "set by syncd");
		return push(s, APP_LIST_PLUGIN_ENV, arg, err);
	case OPT_JSONNET_FILE:
		return set(s, &r->jsonnet.file, arg, err);
	case OPT_JSONNET_EXT_STR:
	case OPT_JSONNET_EXT_CODE:
	case OPT_JSONNET_TLA_STR:
	case OPT_JSONNET_TLA_CODE:
		if ((error = need_pair("jsonnet variable", arg, err)) < 0)
			return error;
		if (val == OPT_JSONNET_EXT_STR)
			return push(s, APP_LIST_JSONNET_EXT_STR, arg, err);
		if (val == OPT_JSONNET_EXT_CODE)
			return push(s, APP_LIST_JSONNET_EXT_CODE, arg, err);
		if (val == OPT_JSONNET_TLA_STR)
			return push(s, APP_LIST_JSONNET_TLA_STR, arg, err);
		return push(s, APP_LIST_JSONNET_TLA_CODE, arg, err);
	case OPT_JSONNET_JPATH:
		return push(s, APP_LIST_JSONNET_JPATH, arg, err);
	case OPT_VAR:
		if ((error = need_pair("--var", arg, err)) < 0)
			return error;
		if (!render_var_name(arg, strcspn(arg, "=")))
			return err_set(err, ERR_USAGE,
				       "--var \"%.*s\": a variable name is "
				       "letters, digits and _, not starting "
				       "with a digit",
				       (int)strcspn(arg, "="), arg);
		return push_str(&s->vars, arg, err);
	case OPT_VARS_FILE:
		return push_str(&s->vars_files, arg, err);
	case OPT_SUBSTITUTE:
		if (!strcmp(arg, "strict"))
			s->substitute = RENDER_SUBST_STRICT;
		else if (!strcmp(arg, "lenient"))
			s->substitute = RENDER_SUBST_LENIENT;
		else if (!strcmp(arg, "off"))
			s->substitute = RENDER_SUBST_OFF;
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
