/*
 * The tool renderers: argv builders, auto-detection, the exec plugin's
 * environment, and the runner's failure messages (with small scripts
 * standing in for the tools).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "renderers/render.h"

static char root[256];

static void put(const char *rel, const char *text, mode_t mode)
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
	cr_assert_eq(chmod(path, mode), 0);
}

static const char *at(const char *rel)
{
	static char path[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(path[i], sizeof(path[i]), "%s/%s", root, rel);
	return path[i];
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/syncd-test-tools.XXXXXX");
	cr_assert_not_null(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(render_tools, .init = setup, .fini = teardown);

static void assert_argv(const char *const *got, const char *const *want)
{
	size_t i;

	for (i = 0; want[i]; i++) {
		cr_assert_not_null(got[i], "argv[%zu] missing, want %s", i,
				   want[i]);
		cr_assert_str_eq(got[i], want[i], "argv[%zu]", i);
	}
	cr_assert_null(got[i], "argv[%zu] = %s, want the end", i, got[i]);
}

Test(render_tools, kustomize_argv)
{
	const char *argv[8];
	const char *const build[] = {"kustomize",
				     "build",
				     ".",
				     "--load-restrictor",
				     "LoadRestrictionsRootOnly",
				     NULL};
	const char *const kubectl[] = {"/opt/k/kubectl-1.32",
				       "kustomize",
				       "app",
				       "--load-restrictor",
				       "LoadRestrictionsRootOnly",
				       NULL};

	cr_assert_eq(render_kustomize_argv(argv, 8, "kustomize", ".", NULL), 0);
	assert_argv(argv, build);
	cr_assert_eq(render_kustomize_argv(argv, 8, "/opt/k/kubectl-1.32",
					   "app", NULL),
		     0);
	assert_argv(argv, kubectl);
	cr_assert_eq(render_kustomize_argv(argv, 5, "kustomize", ".", NULL),
		     ERR_LIMIT);
}

Test(render_tools, helm_argv)
{
	struct render_helm_options o = {0};
	struct buf scratch = BUF_INIT;
	const char *argv[RENDER_MAX_ARGV];
	const char *const set[] = {"image.tag=1.2", "a.b={x,y}", NULL};
	const char *const values[] = {"/r/values.yaml", "/r/prod.yaml", NULL};
	const char *const minimal[] = {
		"helm", "template", "web", ".", "--namespace=default", NULL};
	const char *const full[] = {"/usr/bin/helm",
				    "template",
				    "web",
				    ".",
				    "--namespace=prod",
				    "--values=/r/values.yaml",
				    "--values=/r/prod.yaml",
				    "--values=/tmp/inline",
				    "--set=image.tag=1.2",
				    "--set=a.b={x,y}",
				    "--include-crds",
				    "--kube-version=1.32.0",
				    NULL};

	cr_assert_eq(render_helm_argv(argv, RENDER_MAX_ARGV, &scratch, "helm",
				      "web", "default", NULL, NULL, &o, NULL),
		     0);
	assert_argv(argv, minimal);
	o.set = set;
	o.include_crds = true;
	o.kube_version = "1.32.0";
	cr_assert_eq(render_helm_argv(argv, RENDER_MAX_ARGV, &scratch,
				      "/usr/bin/helm", "web", "prod", values,
				      "/tmp/inline", &o, NULL),
		     0);
	assert_argv(argv, full);
	cr_assert_eq(render_helm_argv(argv, 8, &scratch, "helm", "web", "prod",
				      values, "/tmp/inline", &o, NULL),
		     ERR_LIMIT);
	buf_release(&scratch);
}

Test(render_tools, helm_release_names)
{
	cr_assert_eq(render_helm_check_release("web-1", NULL), 0);
	cr_assert_eq(render_helm_check_release("--post-renderer=x", NULL),
		     ERR_USAGE);
	cr_assert_eq(render_helm_check_release("Web", NULL), ERR_USAGE);
	cr_assert_eq(render_helm_check_release("", NULL), ERR_USAGE);
	cr_assert_eq(render_helm_check_release(
			     "a23456789012345678901234567890123456789012345678"
			     "901234",
			     NULL),
		     ERR_USAGE);
}

static enum render_kind detect(void)
{
	enum render_kind k = RENDER_AUTO;
	struct err err = ERR_INIT;

	cr_assert_eq(render_detect(&k, root, &err), 0, "%s", err_msg(&err));
	err_release(&err);
	return k;
}

Test(render_tools, detection_rules)
{
	cr_assert_eq(detect(), RENDER_DIRECTORY, "empty directory");
	put("main.jsonnet", "{}", 0644);
	put("jsonnetfile.json", "{}", 0644);
	put(".hidden.yaml", "a: 1", 0644);
	cr_assert_eq(detect(), RENDER_JSONNET, "jsonnet without YAML");
	put("extra.yml", "a: 1", 0644);
	cr_assert_eq(detect(), RENDER_DIRECTORY, "jsonnet beside YAML");
	put("Chart.yaml", "name: x", 0644);
	cr_assert_eq(detect(), RENDER_HELM);
	put("Kustomization", "resources: []", 0644);
	cr_assert_eq(detect(), RENDER_KUSTOMIZE, "kustomize wins over helm");
	unlink(at("Kustomization"));
	put("kustomization.yml", "resources: []", 0644);
	cr_assert_eq(detect(), RENDER_KUSTOMIZE);
	unlink(at("kustomization.yml"));
	put("sub/kustomization.yaml", "resources: []", 0644);
	cr_assert_eq(detect(), RENDER_HELM, "only the top counts");
}

Test(render_tools, detection_of_a_file_and_errors)
{
	enum render_kind k = RENDER_AUTO;
	struct err err = ERR_INIT;

	put("kustomization.yaml", "resources: []", 0644);
	cr_assert_eq(render_detect(&k, at("kustomization.yaml"), &err), 0);
	cr_assert_eq(k, RENDER_DIRECTORY, "a single file is a directory app");
	cr_assert_eq(render_detect(&k, at("nope"), &err), ERR_NOTFOUND);
	err_release(&err);
}

Test(render_tools, kind_names)
{
	enum render_kind k;
	struct err err = ERR_INIT;

	cr_assert_eq(render_kind_parse(&k, "helm", NULL), 0);
	cr_assert_eq(k, RENDER_HELM);
	cr_assert_str_eq(render_kind_name(RENDER_EXEC), "exec");
	cr_assert_eq(render_kind_parse(&k, "kustomise", &err), ERR_USAGE);
	cr_assert_str_eq(
		err_first(&err),
		"unknown renderer \"kustomise\" (want auto, directory, "
		"kustomize, helm, jsonnet or exec)");
	err_release(&err);
}

static const char *env_get(char **env, const char *name)
{
	size_t n = strlen(name);

	for (; *env; env++)
		if (!strncmp(*env, name, n) && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

static size_t env_len(char **env)
{
	size_t n = 0;

	while (env[n])
		n++;
	return n;
}

Test(render_tools, exec_env_exact)
{
	const char *const vars[] = {"REGION=eu-1", "HOME=/srv/plugin", NULL};
	struct render_exec_options o = {0};
	struct render_app_info info = {"web", "prod", "0123abcd", "apps/web"};
	char **env = NULL;

	cr_assert_eq(setenv("PATH", "/usr/bin:/bin", 1), 0);
	cr_assert_eq(setenv("SECRET_TOKEN", "hunter2", 1), 0);
	o.cmd = "plugin";
	o.env = vars;
	cr_assert_eq(render_exec_env(&env, root, &o, &info, NULL), 0);
	cr_assert_eq(env_len(env), 7, "PATH HOME 4xSYNCD REGION");
	cr_assert_str_eq(env_get(env, "PATH"), "/usr/bin:/bin");
	cr_assert_str_eq(env_get(env, "HOME"), "/srv/plugin",
			 "configured HOME replaces the inherited one");
	cr_assert_str_eq(env_get(env, "SYNCD_APP_NAME"), "web");
	cr_assert_str_eq(env_get(env, "SYNCD_APP_NAMESPACE"), "prod");
	cr_assert_str_eq(env_get(env, "SYNCD_REVISION"), "0123abcd");
	cr_assert_str_eq(env_get(env, "SYNCD_PATH"), "apps/web");
	cr_assert_str_eq(env_get(env, "REGION"), "eu-1");
	cr_assert_null(env_get(env, "SECRET_TOKEN"), "nothing else inherited");
	render_env_free(env);
	unsetenv("SECRET_TOKEN");
}

Test(render_tools, exec_env_defaults_and_refusals)
{
	const char *const bad[] = {"SYNCD_REVISION=x", NULL};
	const char *const badname[] = {"1X=y", NULL};
	struct render_exec_options o = {0};
	struct err err = ERR_INIT;
	char **env = NULL;

	cr_assert_eq(render_exec_env(&env, "/srv/apps/web/", &o, NULL, NULL),
		     0);
	cr_assert_str_eq(env_get(env, "SYNCD_APP_NAME"), "web");
	cr_assert_str_eq(env_get(env, "SYNCD_APP_NAMESPACE"), "");
	cr_assert_str_eq(env_get(env, "SYNCD_REVISION"), "");
	cr_assert_str_eq(env_get(env, "SYNCD_PATH"), "/srv/apps/web/");
	render_env_free(env);
	o.env = bad;
	cr_assert_eq(render_exec_env(&env, root, &o, NULL, &err), ERR_USAGE);
	cr_assert_null(env);
	cr_assert_str_eq(err_first(&err),
			 "plugin environment: SYNCD_REVISION is set by syncd "
			 "and cannot be configured");
	o.env = badname;
	cr_assert_eq(render_exec_env(&env, root, &o, NULL, NULL), ERR_USAGE);
	err_release(&err);
}

Test(render_tools, tool_env_drops_the_rest)
{
	const char *const extra[] = {"KUBECONFIG=/dev/null", NULL};
	char **env = NULL;

	cr_assert_eq(setenv("GIT_TOKEN", "hunter2", 1), 0);
	cr_assert_eq(setenv("TMPDIR", "/var/tmp", 1), 0);
	cr_assert_eq(render_tool_env(&env, extra, NULL), 0);
	cr_assert_null(env_get(env, "GIT_TOKEN"));
	cr_assert_str_eq(env_get(env, "TMPDIR"), "/var/tmp");
	cr_assert_str_eq(env_get(env, "KUBECONFIG"), "/dev/null");
	cr_assert_not_null(env_get(env, "PATH"));
	cr_assert_not_null(env_get(env, "HOME"));
	cr_assert_eq(env_len(env), 4);
	render_env_free(env);
	unsetenv("GIT_TOKEN");
	unsetenv("TMPDIR");
}

/* Run the exec renderer with `script` as the plugin. */
static int run_plugin(struct diff_objset *set, const char *script,
		      struct err *err)
{
	struct render_exec_options o = {0};
	struct render_app_info info = {"web", "prod", "abc", "apps/web"};

	put("plugin.sh", script, 0755);
	put("app/README", "x", 0644);
	o.cmd = at("plugin.sh");
	o.timeout_ms = 2000;
	return render_exec(set, at("app"), &o, &info, err);
}

Test(render_tools, exec_plugin_output)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	cr_assert_eq(
		run_plugin(&set,
			   "#!/bin/sh\n"
			   "printf 'apiVersion: v1\\nkind: ConfigMap\\n"
			   "metadata: {name: %s, namespace: %s}\\n"
			   "data: {rev: \"%s\", path: \"%s\", "
			   "pwd: \"%s\"}\\n' \"$SYNCD_APP_NAME\" "
			   "\"$SYNCD_APP_NAMESPACE\" \"$SYNCD_REVISION\" "
			   "\"$SYNCD_PATH\" \"$(basename \"$PWD\")\"\n"
			   "echo '---'\n"
			   "echo '{\"apiVersion\":\"v1\",\"kind\":\"List\","
			   "\"items\":[{\"apiVersion\":\"v1\",\"kind\":"
			   "\"Secret\",\"metadata\":{\"name\":\"s\"}}]}'\n",
			   &err),
		0, "%s", err_msg(&err));
	cr_assert_eq(set.len, 2);
	cr_assert_str_eq(set.items[0]->origin, "plugin plugin.sh apps/web");
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(set.items[0]->json, "data"), "rev")),
		"abc");
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(set.items[0]->json, "data"), "pwd")),
		"app", "runs in the app directory");
	cr_assert_str_eq(set.items[0]->key.ns, "prod");
	cr_assert_str_eq(set.items[1]->key.kind, "Secret");
	diff_objset_release(&set);
	err_release(&err);
}

/* `text` with PLUGIN replaced by the plugin's path. */
static const char *expand(const char *text)
{
	static char out[1024];
	const char *p = strstr(text, "PLUGIN");

	if (!p)
		return text;
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(p - text), text,
		 at("plugin.sh"), p + 6);
	return out;
}

/* The problems a failing plugin reports: the first, and the second. */
static void expect_failure(const char *script, int code, const char *first,
			   const char *second)
{
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;

	cr_assert_eq(run_plugin(&set, script, &err), code, "%s", err_msg(&err));
	cr_assert_str_eq(err_first(&err), expand(first));
	if (second) {
		const char *nl = strchr(err_msg(&err), '\n');

		cr_assert_not_null(nl);
		cr_assert_eq(strncmp(nl + 1, second, strlen(second)), 0, "%s",
			     err_msg(&err));
	} else {
		cr_assert_eq(err_count(&err), 1, "%s", err_msg(&err));
	}
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_tools, exec_plugin_failures)
{
	expect_failure("#!/bin/sh\necho 'Error: values.yaml: no such file' "
		       ">&2\nprintf '\\033[31m  second\\n\\n' >&2\nexit 3\n",
		       ERR_GENERIC,
		       "plugin plugin.sh apps/web: `PLUGIN` failed (exit "
		       "status 3): Error: values.yaml: no such file",
		       "plugin plugin.sh apps/web: [31m  second");
	expect_failure("#!/bin/sh\necho 'E1129 10:00:07.210779   31527 "
		       "run.go:72] \"command failed\" err=\"x\"' >&2\n"
		       "exit 1\n",
		       ERR_GENERIC,
		       "plugin plugin.sh apps/web: `PLUGIN` failed (exit "
		       "status 1): \"command failed\" err=\"x\"",
		       NULL);
	expect_failure("#!/bin/sh\nexit 1\n", ERR_GENERIC,
		       "plugin plugin.sh apps/web: `PLUGIN` failed (exit "
		       "status 1) with no output on stderr",
		       NULL);
	expect_failure("#!/bin/sh\necho 'key: [unclosed'\n", ERR_PARSE,
		       "plugin plugin.sh apps/web: output is not YAML or "
		       "JSON: stdout:2:1: did not find expected ',' or ']' "
		       "(while parsing a flow sequence started at 1:6)",
		       NULL);
	expect_failure("#!/bin/sh\nprintf 'apiVersion: v1\\nkind: "
		       "ConfigMap\\nmetadata: {name: a}\\n---\\n"
		       "apiVersion: v1\\nmetadata: {name: b}\\n'\n",
		       ERR_INVALID,
		       "plugin plugin.sh apps/web: output line 5: object "
		       "without kind",
		       NULL);
	expect_failure("#!/bin/sh\necho '[1, 2]'\n", ERR_INVALID,
		       "plugin plugin.sh apps/web: output line 1: document "
		       "is not an object",
		       NULL);
	expect_failure("#!/bin/sh\nsleep 30\n", ERR_TIMEOUT,
		       "plugin plugin.sh apps/web: `PLUGIN` timed out after "
		       "2000 ms and was killed (--render-timeout)",
		       NULL);
}

/*
 * Inline values reach helm through a private file, never argv, and the
 * file is gone afterwards. The stand-in prints its argv and the file.
 */
Test(render_tools, helm_inline_values)
{
	struct render_helm_options o = {0};
	struct render_app_info info = {"web", "prod", NULL, "charts/web"};
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	const char *argv_seen, *values_seen, *file;
	struct stat st;
	json_t *data;

	put("helm",
	    "#!/bin/sh\n"
	    "for a; do last=$a; done\n"
	    "f=${last#--values=}\n"
	    "mode=$(stat -c %a \"$f\")\n"
	    "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: "
	    "%s, namespace: %s}\\ndata:\\n  argv: \"%s\"\\n  file: \"%s\"\\n"
	    "  mode: \"%s\"\\n  values: \"%s\"\\n' \"$2\" "
	    "\"${4#--namespace=}\" \"$*\" \"$f\" \"$mode\" \"$(cat \"$f\")\"\n",
	    0755);
	put("chart/Chart.yaml", "name: web\n", 0644);
	o.bin = at("helm");
	o.values_inline = "password: hunter2";
	cr_assert_eq(render_helm(&set, at("chart"), &o, &info, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(set.len, 1);
	cr_assert_str_eq(set.items[0]->origin, "helm charts/web");
	cr_assert_str_eq(set.items[0]->key.name, "web", "release = app name");
	cr_assert_str_eq(set.items[0]->key.ns, "prod", "namespace = app's");
	data = json_object_get(set.items[0]->json, "data");
	argv_seen = json_string_value(json_object_get(data, "argv"));
	values_seen = json_string_value(json_object_get(data, "values"));
	file = json_string_value(json_object_get(data, "file"));
	cr_assert_null(strstr(argv_seen, "hunter2"), "argv: %s", argv_seen);
	cr_assert_str_eq(values_seen, "password: hunter2");
	cr_assert_str_eq(json_string_value(json_object_get(data, "mode")),
			 "600");
	cr_assert_neq(stat(file, &st), 0, "%s was not removed", file);
	diff_objset_release(&set);
	err_release(&err);
}

Test(render_tools, helm_values_confined)
{
	struct render_helm_options o = {0};
	struct diff_objset set = DIFF_OBJSET_INIT;
	struct err err = ERR_INIT;
	const char *const escape[] = {"link.yaml", NULL};

	put("outside.yaml", "a: 1\n", 0644);
	put("chart/Chart.yaml", "name: web\n", 0644);
	cr_assert_eq(symlink("../outside.yaml", at("chart/link.yaml")), 0);
	o.bin = "/nonexistent/helm";
	o.values = escape;
	cr_assert_eq(render_helm(&set, at("chart"), &o, NULL, &err),
		     ERR_INVALID);
	cr_assert_not_null(strstr(err_first(&err), "values file link.yaml: "
						   "outside the repository"),
			   "%s", err_first(&err));
	cr_assert_eq(set.len, 0);
	err_release(&err);
}
