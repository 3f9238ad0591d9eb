#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/controller.h"
#include "syncd/cli_render.h"
#include "util/clock.h"
#include "util/err.h"

#define CASES "tests/cases/config/"

/* Load a case that must fail; returns all messages (free them). */
static char *load_bad(const char *name, int *code)
{
	struct err err = ERR_INIT;
	struct config *cfg = (struct config *)1;
	char *msg;

	*code = config_load(&cfg, name, &err);
	cr_assert_lt(*code, 0, "%s loaded", name);
	cr_assert_null(cfg, "%s: partial config returned", name);
	msg = strdup(err_msg(&err));
	cr_assert_not_null(msg);
	/* One line per problem; drop the last newline. */
	if (*msg && msg[strlen(msg) - 1] == '\n')
		msg[strlen(msg) - 1] = '\0';
	err_release(&err);
	return msg;
}

static struct config *load_ok(const char *name)
{
	struct err err = ERR_INIT;
	struct config *cfg = NULL;
	int rc = config_load(&cfg, name, &err);

	cr_assert_eq(rc, 0, "%s: %s", name, err_msg(&err));
	cr_assert_not_null(cfg);
	cr_assert_eq(err_count(&err), 0);
	err_release(&err);
	return cfg;
}

static void check_default_app(const struct app_spec *a)
{
	const struct render_app_options *r = &a->render;

	cr_assert_eq(a->interval_ms, 60 * 1000);
	cr_assert_null(a->source.revision);
	cr_assert_null(a->source.subpath);
	cr_assert_null(a->source.auth.password_file);
	cr_assert_null(a->source.verify.allowed_signers_file);
	cr_assert_eq(r->kind, RENDER_AUTO);
	cr_assert_eq(a->render_timeout_ms, 0);
	cr_assert_not(r->dir.no_recurse);
	cr_assert_null(r->dir.include);
	cr_assert_eq(app_spec_list_len(a, APP_LIST_INCLUDE), 0);
	cr_assert_null(r->dir.exclude);
	cr_assert_null(r->helm.values);
	cr_assert_null(r->helm.set);
	cr_assert_not(r->helm.include_crds);
	cr_assert_null(r->helm.release);
	cr_assert_null(r->helm.bin);
	cr_assert_null(r->kustomize.bin);
	cr_assert_null(r->jsonnet.file);
	cr_assert_null(r->jsonnet.jpath);
	cr_assert_null(r->exec.cmd);
	cr_assert_null(r->exec.args);
	cr_assert_eq(a->vars.len, 0);
	cr_assert_eq(a->vars_files.len, 0);
	cr_assert_eq(a->substitute, RENDER_SUBST_OFF);
	cr_assert_null(a->namespace);
	cr_assert_not(a->prune);
	cr_assert_eq(a->prune_allow_kinds.len, 0);
	cr_assert_eq(a->prune_budget, 50);
	cr_assert(a->self_heal);
	cr_assert_eq(a->foreign_fields, DIFF_POLICY_RESPECT);
	cr_assert_eq(a->verify, APP_VERIFY_DRY_RUN);
	cr_assert_eq(a->nignore, 0);
}

static void check_default_globals(const struct config *c)
{
	cr_assert_eq(c->resync_ms, 3 * 60 * 1000);
	cr_assert_eq(c->relist_ms, 60 * 60 * 1000);
	cr_assert_eq(c->workers, 2);
	cr_assert_str_eq(c->field_manager, "syncd");
	cr_assert_null(c->kubeconfig);
	cr_assert_null(c->context);
	cr_assert_null(c->cache_dir);
	cr_assert_float_eq(c->qps, 50.0, 1e-9);
	cr_assert_eq(c->burst, 100);
	cr_assert(c->watch);
	cr_assert_eq(c->fight_changes, 3);
	cr_assert_eq(c->fight_window_ms, 10 * 60 * 1000);
	cr_assert_eq(c->log_format, LOG_FORMAT_LOGFMT);
	cr_assert_eq(c->log_level, LOG_INFO);
	cr_assert_str_eq(c->listen, ":8080");
}

Test(config, defaults)
{
	struct config *c = load_ok(CASES "defaults.yaml");

	check_default_globals(c);
	cr_assert_eq(c->napps, 1);
	cr_assert_str_eq(c->apps[0].name, "only");
	cr_assert_eq(c->apps[0].line, 2);
	cr_assert_str_eq(c->apps[0].source.url,
			 "https://git.example.com/only.git");
	check_default_app(&c->apps[0]);
	config_free(c);
}

Test(config, empty_file_is_all_defaults)
{
	struct config *c = load_ok(CASES "empty.yaml");

	check_default_globals(c);
	cr_assert_eq(c->napps, 0);
	config_free(c);
}

/* Entry i of a NULL-terminated list of "NAME=VALUE" pairs. */
static void check_map(const char *const *m, size_t i, const char *name,
		      const char *value)
{
	char want[256];

	cr_assert_not_null(m);
	for (size_t k = 0; k < i; k++)
		cr_assert_not_null(m[k]);
	snprintf(want, sizeof(want), "%s=%s", name, value);
	cr_assert_str_eq(m[i], want);
}

Test(config, full)
{
	struct config *c = load_ok(CASES "full.yaml");
	const struct app_spec *a;
	const struct source_options *s;
	const struct render_app_options *r;

	cr_assert_eq(c->resync_ms, 90 * 1000);
	cr_assert_eq(c->relist_ms, 10 * 60 * 1000);
	cr_assert_eq(c->workers, 4);
	cr_assert_str_eq(c->field_manager, "syncd-test");
	/* Relative file names are taken from the file's directory. */
	cr_assert_str_eq(c->kubeconfig, CASES "kube/config");
	cr_assert_str_eq(c->context, "emu");
	cr_assert_str_eq(c->cache_dir, "/var/cache/syncd-test");
	cr_assert_float_eq(c->qps, 12.5, 1e-9);
	cr_assert_eq(c->burst, 25);
	cr_assert_not(c->watch);
	cr_assert_eq(c->fight_changes, 5);
	cr_assert_eq(c->fight_window_ms, 2 * 60 * 1000);
	cr_assert_eq(c->log_format, LOG_FORMAT_JSON);
	cr_assert_eq(c->log_level, LOG_DEBUG);
	cr_assert_str_eq(c->listen, "127.0.0.1:9090");
	cr_assert_eq(c->napps, 2);

	a = &c->apps[0];
	s = &a->source;
	r = &a->render;
	cr_assert_str_eq(a->name, "full");
	cr_assert_eq(a->line, 18);
	cr_assert_str_eq(s->url, "https://git.example.com/r.git");
	cr_assert_str_eq(s->revision, "main");
	cr_assert_str_eq(s->subpath, "apps/full");
	cr_assert_eq(a->interval_ms, 90 * 60 * 1000);
	cr_assert_str_eq(s->auth.username, "deploy");
	cr_assert_null(s->auth.username_file);
	cr_assert_str_eq(s->auth.password_file, CASES "secrets/password");
	cr_assert_null(s->auth.password_env);
	cr_assert_null(s->auth.token_file);
	cr_assert_str_eq(s->auth.token_env, "GIT_TOKEN");
	cr_assert_str_eq(s->auth.ca_file, CASES "ca.pem");
	cr_assert_str_eq(s->auth.ssh_key_file, "/etc/syncd/key");
	cr_assert_str_eq(s->auth.ssh_passphrase_file, "/etc/syncd/pass");
	cr_assert_str_eq(s->auth.known_hosts_file, "/etc/syncd/known_hosts");
	cr_assert_str_eq(s->verify.allowed_signers_file, "/etc/syncd/signers");
	cr_assert_str_eq(s->verify.gpg_keyring_file, "/etc/syncd/keyring.gpg");

	cr_assert_eq(r->kind, RENDER_AUTO);
	cr_assert_eq(a->render_timeout_ms, 120 * 1000);
	cr_assert_eq(app_spec_list_len(a, APP_LIST_INCLUDE), 2);
	cr_assert_str_eq(r->dir.include[0], "*.yaml");
	cr_assert_str_eq(r->dir.include[1], "*.json");
	cr_assert_null(r->dir.include[2]);
	cr_assert_eq(app_spec_list_len(a, APP_LIST_EXCLUDE), 1);
	cr_assert_str_eq(r->dir.exclude[0], "skip.yaml");
	cr_assert(r->dir.no_recurse);
	cr_assert_str_eq(r->helm.release, "rel");
	cr_assert_eq(app_spec_list_len(a, APP_LIST_HELM_VALUES), 1);
	cr_assert_str_eq(r->helm.values[0], "v1.yaml");
	cr_assert_eq(app_spec_list_len(a, APP_LIST_HELM_SET), 2);
	check_map(r->helm.set, 0, "image.tag", "v2");
	check_map(r->helm.set, 1, "replicas", "3");
	cr_assert(r->helm.include_crds);
	cr_assert_str_eq(r->helm.kube_version, "1.32.0");
	/* Every render option has a config key: the tools' programs too. */
	cr_assert_str_eq(r->helm.bin, "/opt/helm/bin/helm");
	cr_assert_str_eq(r->kustomize.bin, "/opt/kustomize/bin/kustomize");
	cr_assert_str_eq(r->jsonnet.file, "main.jsonnet");
	check_map(r->jsonnet.ext_str, 0, "env", "prod");
	check_map(r->jsonnet.ext_code, 0, "num", "1+1");
	check_map(r->jsonnet.tla_str, 0, "name", "x");
	check_map(r->jsonnet.tla_code, 0, "flag", "true");
	cr_assert_eq(app_spec_list_len(a, APP_LIST_JSONNET_JPATH), 2);
	cr_assert_str_eq(r->jsonnet.jpath[1], "vendor");
	cr_assert_str_eq(r->exec.cmd, "render.sh");
	cr_assert_eq(app_spec_list_len(a, APP_LIST_PLUGIN_ARGS), 2);
	cr_assert_str_eq(r->exec.args[0], "--a");
	check_map(r->exec.env, 0, "MODE", "fast");
	cr_assert_eq(a->vars.len, 2);
	check_map((const char *const *)a->vars.v, 0, "cluster", "prod");
	check_map((const char *const *)a->vars.v, 1, "enabled", "true");
	cr_assert_eq(a->vars_files.len, 2);
	cr_assert_str_eq(a->vars_files.v[0], CASES "vars.env");
	cr_assert_str_eq(a->vars_files.v[1], "/etc/syncd/vars.env");
	cr_assert_eq(a->substitute, RENDER_SUBST_LENIENT);

	cr_assert_str_eq(a->namespace, "team-a");
	cr_assert(a->prune);
	cr_assert_eq(a->prune_allow_kinds.len, 2);
	cr_assert_str_eq(a->prune_allow_kinds.v[1], "Deployment");
	cr_assert_eq(a->prune_budget, 0);
	cr_assert_not(a->self_heal);
	cr_assert_eq(a->foreign_fields, DIFF_POLICY_OVERRIDE);
	cr_assert_eq(a->verify, APP_VERIFY_OFF);
	cr_assert_eq(a->nignore, 2);
	cr_assert_str_eq(a->ignore[0].group, "apps");
	cr_assert_str_eq(a->ignore[0].kind, "Deployment");
	cr_assert_str_eq(a->ignore[0].ns, "team-a");
	cr_assert_str_eq(a->ignore[0].name, "web");
	cr_assert_null(a->ignore[0].json_pointers[2]);
	cr_assert_str_eq(a->ignore[0].json_pointers[1], "/metadata/labels/x");
	cr_assert_null(a->ignore[0].managers);
	cr_assert_null(a->ignore[1].kind);
	cr_assert_null(a->ignore[1].managers[1]);
	cr_assert_str_eq(a->ignore[1].managers[0], "kube-controller-manager");
	cr_assert_null(a->ignore[1].json_pointers);

	/* The second app takes every default. */
	cr_assert_str_eq(c->apps[1].name, "minimal");
	cr_assert_str_eq(c->apps[1].source.url, "/srv/git/minimal.git");
	/* Empty strings are meaningful in ignore rules only. */
	cr_assert_eq(c->apps[1].nignore, 1);
	cr_assert_str_eq(c->apps[1].ignore[0].group, "");
	cr_assert_null(c->apps[1].ignore[0].json_pointers[1]);
	cr_assert_str_eq(c->apps[1].ignore[0].json_pointers[0], "");
	c->apps[1].nignore = 0;
	check_default_app(&c->apps[1]);
	c->apps[1].nignore = 1;
	config_free(c);
}

Test(config, example_loads)
{
	struct config *c = load_ok("examples/syncd.yaml");

	cr_assert_eq(c->napps, 5);
	cr_assert_str_eq(c->apps[0].name, "web");
	cr_assert_eq(c->apps[0].render.kind, RENDER_DIRECTORY);
	cr_assert_str_eq(c->apps[1].name, "monitoring");
	cr_assert_eq(c->apps[1].render.kind, RENDER_HELM);
	cr_assert_eq(c->apps[1].substitute, RENDER_SUBST_OFF);
	cr_assert_str_eq(c->apps[1].source.auth.ssh_key_file,
			 "examples/secrets/deploy-key");
	cr_assert_eq(c->apps[2].source.type, SOURCE_HELM);
	cr_assert_str_eq(c->apps[2].source.chart, "podinfo");
	cr_assert_not_null(c->apps[2].render.helm.values_inline);
	cr_assert_eq(c->apps[3].source.type, SOURCE_HELM);
	cr_assert_str_eq(c->apps[3].source.redirect_hosts[0],
			 "pkg-containers.githubusercontent.com");
	cr_assert_eq(c->apps[4].source.type, SOURCE_OCI);
	cr_assert_str_eq(c->apps[4].source.subpath, "production");
	config_free(c);
}

/* Each class of problem: every problem reported, each with its line. */
static void expect(const char *name, int want_code, const char *want)
{
	int code;
	char *msg = load_bad(name, &code);

	cr_assert_eq(code, want_code, "%s: code %d", name, code);
	cr_assert_str_eq(msg, want);
	free(msg);
}

Test(config, unknown_keys)
{
	expect(CASES "bad-unknown.yaml", ERR_INVALID,
	       CASES "bad-unknown.yaml:2: wrokers: unknown key\n" CASES
		     "bad-unknown.yaml:7: apps[0].source.revison: "
		     "unknown key\n" CASES
		     "bad-unknown.yaml:10: apps[0].render.helm.relase: "
		     "unknown key");
}

Test(config, wrong_types)
{
	const char *f = CASES "bad-types.yaml";
	char want[2048];

	snprintf(want, sizeof(want),
		 "%s:1: workers: expected an integer, got a string\n"
		 "%s:2: watch: expected a boolean, got a string\n"
		 "%s:3: qps: expected a number, got a string\n"
		 "%s:4: log: expected a mapping, got a string\n"
		 "%s:8: apps[0].source.repo: expected a string, got a list\n"
		 "%s:9: apps[0].prune: expected a boolean, got an integer\n"
		 "%s:10: apps[0].pruneAllowKinds: expected a list, "
		 "got a string\n"
		 "%s:13: apps[0].render.vars.a: expected a string, "
		 "got a list",
		 f, f, f, f, f, f, f, f);
	expect(f, ERR_INVALID, want);
}

Test(config, bad_values)
{
	const char *f = CASES "bad-values.yaml";
	char want[4096];

	snprintf(want, sizeof(want),
		 "%s:1: resync: invalid duration \"3x\" (want e.g. 30s, 3m, "
		 "1h)\n"
		 "%s:2: workers: must be between 1 and 256\n"
		 "%s:4: log.format: \"text\" is not one of logfmt, json\n"
		 "%s:5: log.level: \"loud\" is not one of debug, info, warn, "
		 "error\n"
		 "%s:6: listen: \"8080\" is not [HOST]:PORT\n"
		 "%s:8: apps[0].name: \"Bad_Name\" is not a DNS label (lower "
		 "case letters, digits and '-', at most 63)\n"
		 "%s:11: apps[0].source.interval: expected a duration such "
		 "as \"30s\", got an integer\n"
		 "%s:13: apps[0].render.type: \"ksonnet\" is not one of auto, "
		 "directory, kustomize, helm, jsonnet, exec\n"
		 "%s:14: apps[0].render.substitute: \"maybe\" is not one of "
		 "off, strict, lenient\n"
		 "%s:15: apps[0].foreignFields: \"fight\" is not one of "
		 "respect, override, report\n"
		 "%s:16: apps[0].pruneBudget: must be between 0 and 1000000\n"
		 "%s:17: apps[0].verify: \"maybe\" is not one of dryRun, off\n"
		 "%s:20: apps[0].ignore[0].jsonPointers[0]: \"spec/replicas\" "
		 "is not a JSON pointer (must start with /)\n"
		 "%s:21: apps[0].ignore[1]: needs jsonPointers or managers",
		 f, f, f, f, f, f, f, f, f, f, f, f, f, f);
	expect(f, ERR_INVALID, want);
}

Test(config, duplicate_app_names)
{
	expect(CASES "bad-duplicate.yaml", ERR_INVALID,
	       CASES "bad-duplicate.yaml:8: apps[2].name: duplicate app name "
		     "\"web\" (first at line 2)");
}

Test(config, missing_and_misplaced)
{
	const char *f = CASES "bad-missing.yaml";
	char want[2048];

	snprintf(want, sizeof(want),
		 "%s:2: apps[0].name: required\n"
		 "%s:4: apps[1].source: required\n"
		 "%s:6: apps[2].source.repo: required\n"
		 "%s:8: apps[2].render.plugin.command: required with type "
		 "exec\n"
		 "%s:15: apps[3].render.jsonnet: only used with type jsonnet",
		 f, f, f, f, f);
	expect(f, ERR_INVALID, want);
}

Test(config, top_level_not_a_mapping)
{
	expect(CASES "bad-top.yaml", ERR_INVALID,
	       CASES "bad-top.yaml:1: top level: expected a mapping, "
		     "got a list");
}

Test(config, unreadable_and_malformed)
{
	char path[] = "/tmp/syncd-config-XXXXXX";
	int fd = mkstemp(path);
	int code;
	char *msg;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "a: 1\nb: [\n", 10), 10);
	close(fd);
	msg = load_bad(path, &code);
	cr_assert_eq(code, ERR_PARSE);
	cr_assert_not_null(strstr(msg, path), "%s", msg);
	cr_assert_not_null(strstr(msg, ":3:"), "%s", msg);
	free(msg);
	unlink(path);
	msg = load_bad(CASES "no-such-file.yaml", &code);
	cr_assert_not_null(strstr(msg, "no-such-file.yaml"), "%s", msg);
	free(msg);
}

/* The config file takes Go durations without bare numbers. */
static int config_duration(const char *s, uint64_t *ms)
{
	return clk_parse_duration(s, 0, ms);
}

Test(config, durations)
{
	uint64_t ms = 7;

	cr_assert_eq(config_duration("30s", &ms), 0);
	cr_assert_eq(ms, 30000);
	cr_assert_eq(config_duration("3m", &ms), 0);
	cr_assert_eq(ms, 180000);
	cr_assert_eq(config_duration("1h30m", &ms), 0);
	cr_assert_eq(ms, 5400000);
	cr_assert_eq(config_duration("250ms", &ms), 0);
	cr_assert_eq(ms, 250);
	cr_assert_eq(config_duration("0", &ms), 0);
	cr_assert_eq(ms, 0);
	ms = 7;
	cr_assert_eq(config_duration("", &ms), ERR_INVALID);
	cr_assert_eq(config_duration("10", &ms), ERR_INVALID);
	cr_assert_eq(config_duration("m", &ms), ERR_INVALID);
	cr_assert_eq(config_duration("1d", &ms), ERR_INVALID);
	cr_assert_eq(config_duration("-1s", &ms), ERR_INVALID);
	cr_assert_eq(config_duration("99999999999999999999h", &ms),
		     ERR_INVALID);
	cr_assert_eq(config_duration("9000h", &ms), ERR_INVALID);
	cr_assert_eq(ms, 7);
}

Test(config, yaml_lines)
{
	const char *y = "a: 1\nb:\n  - x\n  - c: 2\n    d/e: 3\n";
	struct err err = ERR_INIT;
	json_t *lines;

	cr_assert_eq(render_yaml_lines(&lines, y, strlen(y), "t", &err), 0);
	cr_assert_eq(json_integer_value(json_object_get(lines, "")), 1);
	cr_assert_eq(json_integer_value(json_object_get(lines, "/a")), 1);
	cr_assert_eq(json_integer_value(json_object_get(lines, "/b")), 2);
	cr_assert_eq(json_integer_value(json_object_get(lines, "/b/0")), 3);
	cr_assert_eq(json_integer_value(json_object_get(lines, "/b/1")), 4);
	cr_assert_eq(json_integer_value(json_object_get(lines, "/b/1/c")), 4);
	cr_assert_eq(json_integer_value(json_object_get(lines, "/b/1/d~1e")),
		     5);
	json_decref(lines);
	err_release(&err);
}

Test(config, substitution_default_follows_vars)
{
	struct config *c = load_ok(CASES "vars-default.yaml");

	cr_assert_eq(c->apps[0].substitute, RENDER_SUBST_STRICT);
	check_map((const char *const *)c->apps[0].vars.v, 0, "a", "1");
	/* A bare `off` is YAML 1.1 false and means off. */
	cr_assert_eq(c->apps[1].substitute, RENDER_SUBST_OFF);
	config_free(c);
}

Test(config, helm_release_checked)
{
	expect(CASES "bad-helm.yaml", ERR_INVALID,
	       CASES "bad-helm.yaml:8: apps[0].render.helm.release: helm "
		     "release name \"Not_A_Release\" is not a DNS-1123 label "
		     "of at most 53 characters (lower case letters, digits, "
		     "'-')");
}

Test(config, wrong_shapes)
{
	const char *f = CASES "bad-shapes.yaml";
	char want[2048];

	snprintf(want, sizeof(want),
		 "%s:2: apps[0]: expected a mapping, got null\n"
		 "%s:6: apps[1].source.verifySignatures: needs "
		 "allowedSignersFile or gpgKeyringFile\n"
		 "%s:7: apps[1].render: expected a mapping, got a string\n"
		 "%s:12: apps[2].source.passwordEnv: conflicts with "
		 "passwordFile\n"
		 "%s:13: apps[2].ignore: expected a list, got a mapping\n"
		 "%s:18: apps[3].source.revision: must not be empty\n"
		 "%s:23: apps[4].source.usernameFile: conflicts with "
		 "username",
		 f, f, f, f, f, f, f);
	expect(f, ERR_INVALID, want);
}

Test(config, one_document_only)
{
	expect(CASES "bad-multidoc.yaml", ERR_INVALID,
	       CASES "bad-multidoc.yaml:3: more than one document");
}

Test(config, reload_compares_globals_and_apps)
{
	struct config *a = load_ok(CASES "full.yaml");
	struct config *b = load_ok(CASES "full.yaml");
	struct config *d = load_ok(CASES "defaults.yaml");

	cr_assert(config_same_globals(a, b));
	cr_assert(config_same_app(&a->apps[0], &b->apps[0]));
	cr_assert_not(config_same_app(&a->apps[0], &b->apps[1]));
	/* Another file is never "the same" (relative names differ). */
	cr_assert_not(config_same_globals(a, d));
	json_object_set_new(b->raw_globals, "resync", json_string("1m"));
	cr_assert_not(config_same_globals(a, b));
	config_free(a);
	config_free(b);
	config_free(d);
}

/*
 * Every render flag has a config key meaning the same: the flags below
 * (one entry per flag of cli_render_longopts, checked) and the keys of
 * render-parity.yaml fill specs whose render cache keys, a digest of
 * every setting that decides a render, are equal.
 */
Test(config, every_render_flag_has_a_key)
{
	static const char *const flags[][2] = {
		{"renderer", "auto"},
		{"render-timeout", "2m"},
		{"include", "*.yaml"},
		{"include", "*.json"},
		{"exclude", "skip.yaml"},
		{"no-recurse", NULL},
		{"kustomize-bin", "/opt/kustomize"},
		{"helm-release", "rel"},
		{"helm-values", "v1.yaml"},
		{"helm-values", "v2.yaml"},
		{"helm-values-file", "/etc/syncd/values-prod.yaml"},
		{"helm-set", "image.tag=v2"},
		{"helm-set", "replicas=3"},
		{"helm-include-crds", NULL},
		{"helm-kube-version", "1.36.0"},
		{"helm-bin", "/opt/helm"},
		{"jsonnet-file", "main.jsonnet"},
		{"jsonnet-ext-str", "env=prod"},
		{"jsonnet-ext-code", "num=1+1"},
		{"jsonnet-tla-str", "name=x"},
		{"jsonnet-tla-code", "flag=true"},
		{"jsonnet-jpath", "lib"},
		{"jsonnet-jpath", "vendor"},
		{"plugin-cmd", "render.sh"},
		{"plugin-arg", "--a"},
		{"plugin-arg", "b"},
		{"plugin-env", "MODE=fast"},
		{"var", "cluster=prod"},
		{"var", "enabled=true"},
		{"vars-file", "/etc/syncd/a.env"},
		{"vars-file", "/etc/syncd/b.env"},
		{"substitute", "lenient"},
	};
	struct config *c = load_ok(CASES "render-parity.yaml");
	struct app_spec s;
	struct buf from_file = BUF_INIT, from_flags = BUF_INIT;
	struct err err = ERR_INIT;
	size_t nopts = 0;

	app_spec_init(&s);
	for (const struct option *o = cli_render_longopts; o->name; o++) {
		bool listed = false;

		nopts++;
		for (size_t i = 0; i < sizeof(flags) / sizeof(*flags); i++)
			if (!strcmp(flags[i][0], o->name)) {
				cr_assert_eq(cli_render_option(&s, o->val,
							       flags[i][1],
							       &err),
					     1, "--%s %s", o->name,
					     flags[i][1] ? flags[i][1] : "");
				listed = true;
			}
		cr_assert(listed, "--%s is not in this test: give it a config "
				  "key and a line here",
			  o->name);
	}
	cr_assert_gt(nopts, 20);
	cr_assert_eq(app_spec_set(&s, &s.name, "web"), 0);
	cr_assert_eq(app_spec_set(&s, &s.namespace, "team"), 0);
	cr_assert_eq(app_spec_set(&s, &s.source.subpath, "apps/web"), 0);
	cr_assert_eq(app_render_cache_file(&from_file, &c->apps[0], "/c", "T"),
		     0);
	cr_assert_eq(app_render_cache_file(&from_flags, &s, "/c", "T"), 0);
	cr_assert_str_eq(buf_cstr(&from_flags), buf_cstr(&from_file));
	/* ... and the digest does see a difference. */
	for (const struct option *o = cli_render_longopts; o->name; o++)
		if (!strcmp(o->name, "helm-kube-version"))
			cr_assert_eq(cli_render_option(&s, o->val, "1.35.0",
						       &err),
				     1);
	buf_reset(&from_flags);
	cr_assert_eq(app_render_cache_file(&from_flags, &s, "/c", "T"), 0);
	cr_assert_str_neq(buf_cstr(&from_flags), buf_cstr(&from_file));
	buf_release(&from_file);
	buf_release(&from_flags);
	err_release(&err);
	app_spec_release(&s);
	config_free(c);
}

Test(config, health_rules_checked)
{
	expect(CASES "bad-health.yaml", ERR_INVALID,
	       CASES "bad-health.yaml:11: health[1].fields[0].path: "
		     "\"status..phase\" is not a field path: it must start "
		     "with '.' (want e.g. .status.phase or "
		     ".status.conditions[0].status)\n" CASES
		     "bad-health.yaml:13: health[2].kind: expected a string, "
		     "got an integer\n" CASES
		     "bad-health.yaml:15: health[3].kind: a rule for group "
		     "\"cert-manager.io\" kind Certificate exists already");
}

/* The rules are loaded and decide their kinds' health. */
Test(config, health_rules_loaded)
{
	struct config *c = load_ok(CASES "health.yaml");
	struct health h = HEALTH_INIT;
	json_t *rollout = json_pack(
		"{s:s, s:s, s:{s:s, s:i}, s:{s:s, s:i}}", "apiVersion",
		"argoproj.io/v1alpha1", "kind", "Rollout", "metadata", "name",
		"web", "generation", 2, "status", "phase", "Paused",
		"observedGeneration", 2);

	cr_assert_not_null(c->health);
	health_of(&h, rollout, c->health);
	cr_assert_eq(h.state, HEALTH_SUSPENDED, "%s: %s",
		     health_state_name(h.state), h.reason);
	health_release(&h);
	json_decref(rollout);
	config_free(c);
}

Test(config, depends_on_checked)
{
	expect(CASES "bad-depends.yaml", ERR_INVALID,
	       CASES "bad-depends.yaml:4: apps[0].dependsOn: a cycle: a -> "
		     "b -> a\n" CASES
		     "bad-depends.yaml:7: apps[1].dependsOn[1]: unknown app "
		     "\"nope\"\n" CASES
		     "bad-depends.yaml:10: apps[2].dependsOn: a cycle: c -> c");
}

Test(config, clusters)
{
	struct config *c = load_ok(CASES "clusters.yaml");
	const struct app_spec *far = &c->apps[1];

	cr_assert_eq(c->nclusters, 2);
	cr_assert_str_eq(c->clusters[0].name, "west");
	cr_assert_str_eq(c->clusters[0].kubeconfig,
			 CASES "west.kubeconfig"); /* beside the file */
	cr_assert_str_eq(c->clusters[0].context, "w");
	cr_assert_null(c->clusters[0].secret_name);
	cr_assert_str_eq(c->clusters[1].name, "east");
	cr_assert_null(c->clusters[1].kubeconfig);
	cr_assert_str_eq(c->clusters[1].secret_ns, "syncd");
	cr_assert_str_eq(c->clusters[1].secret_name, "east-kubeconfig");
	cr_assert_null(c->clusters[1].secret_key); /* "value" */
	cr_assert_null(c->apps[0].cluster);
	cr_assert_eq(c->apps[0].deletion, APP_DELETION_ORPHAN);
	cr_assert_not(c->apps[0].create_namespace);
	cr_assert_not(c->apps[0].on_immutable_replace);
	cr_assert_str_eq(far->cluster, "east");
	cr_assert(far->create_namespace);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(far->namespace_metadata,
						 "labels"),
				 "team")),
			 "far");
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(far->namespace_metadata,
						 "annotations"),
				 "owner")),
			 "ops");
	cr_assert(far->allow_empty);
	cr_assert(far->on_immutable_replace);
	cr_assert_eq(far->replace_allow_kinds.len, 1);
	cr_assert_str_eq(far->replace_allow_kinds.v[0],
			 "PersistentVolumeClaim");
	cr_assert_eq(far->deletion, APP_DELETION_DELETE);
	config_free(c);
}

Test(config, bad_clusters)
{
	const char *f = CASES "bad-clusters.yaml";
	char want[4096];

	snprintf(want, sizeof(want),
		 "%s:2: clusters[0]: wants one of kubeconfig or "
		 "kubeconfigSecret\n"
		 "%s:5: clusters[1].name: \"default\" is the cluster syncd "
		 "runs against (kubeconfig and context at the top)\n"
		 "%s:7: clusters[2]: wants one of kubeconfig or "
		 "kubeconfigSecret\n"
		 "%s:8: clusters[3]: duplicate cluster name \"west\"\n"
		 "%s:13: apps[0].cluster: \"north\" is not among clusters:\n"
		 "%s:14: apps[0].onImmutable: \"recreate\" is not one of "
		 "report, replace\n"
		 "%s:15: apps[0].deletionPolicy: \"cascade\" is not one of "
		 "orphan, delete\n"
		 "%s:17: apps[0].namespaceMetadata.labels.tier: expected a "
		 "string, got an integer\n"
		 "%s:18: apps[0].namespaceMetadata.owners: unknown key",
		 f, f, f, f, f, f, f, f, f);
	expect(f, ERR_INVALID, want);
}
