/*
 * Apps declared by App objects: config_app_from_object() walks their spec
 * as the file's apps are walked, names problems "App NS/NAME: spec.key:
 * cause", and refuses keys that name syncd's own files, variables and
 * programs; appObjects in the file says which namespaces an App may
 * manage.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/controller.h"
#include "util/err.h"

static json_t *app_object(const char *spec_json)
{
	json_error_t je;
	json_t *spec = json_loads(spec_json, 0, &je);
	json_t *obj;

	cr_assert_not_null(spec, "%s: %s", spec_json, je.text);
	obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:I}, s:o}", "apiVersion",
			"syncd.io/v1alpha1", "kind", "App", "metadata", "name",
			"web", "namespace", "team-a", "generation",
			(json_int_t)3, "spec", spec);
	cr_assert_not_null(obj);
	return obj;
}

/* The messages of an App that must be refused (free them). */
static char *refused(const char *spec_json)
{
	struct app_spec spec;
	struct err err = ERR_INIT;
	json_t *obj = app_object(spec_json);
	char *msg;

	cr_assert_eq(config_app_from_object(&spec, obj, &err), ERR_INVALID,
		     "%s accepted", spec_json);
	cr_assert_null(spec.name, "a refused spec is released");
	msg = strdup(err_msg(&err));
	err_release(&err);
	json_decref(obj);
	return msg;
}

Test(objects, spec_like_the_file)
{
	struct app_spec spec;
	struct err err = ERR_INIT;
	json_t *obj = app_object(
		"{\"source\": {\"repo\": \"https://git.example.com/r.git\", "
		"\"path\": \"web\", \"interval\": \"30s\", "
		"\"secretRef\": {\"name\": \"git-creds\"}}, "
		"\"render\": {\"type\": \"kustomize\"}, \"prune\": true, "
		"\"foreignFields\": \"report\", \"dependsOn\": [\"db\"], "
		"\"serviceAccountName\": \"deployer\"}");

	cr_assert_eq(config_app_from_object(&spec, obj, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(spec.name, "web");
	cr_assert_str_eq(spec.object_ns, "team-a");
	cr_assert_str_eq(spec.namespace, "team-a", "defaults to its own");
	cr_assert_eq(spec.object_generation, 3);
	cr_assert_str_eq(spec.source.url, "https://git.example.com/r.git");
	cr_assert_str_eq(spec.source.subpath, "web");
	cr_assert_eq(spec.interval_ms, 30000);
	cr_assert_str_eq(spec.secret_ref, "git-creds");
	cr_assert_str_eq(spec.service_account, "deployer");
	cr_assert_eq(spec.render.kind, RENDER_KUSTOMIZE);
	cr_assert(spec.prune);
	cr_assert_eq(spec.foreign_fields, DIFF_POLICY_REPORT);
	cr_assert_eq(spec.depends_on.len, 1);
	cr_assert_not_null(spec.raw);
	app_spec_release(&spec);
	err_release(&err);
	json_decref(obj);
}

Test(objects, generation_and_namespace_are_part_of_the_app)
{
	struct app_spec a, b;
	struct err err = ERR_INIT;
	json_t *o1 = app_object("{\"source\": {\"repo\": \"https://g.example/r\"}}");
	json_t *o2 = app_object("{\"source\": {\"repo\": \"https://g.example/r\"}}");

	json_object_set_new(json_object_get(o2, "metadata"), "generation",
			    json_integer(4));
	cr_assert_eq(config_app_from_object(&a, o1, &err), 0);
	cr_assert_eq(config_app_from_object(&b, o2, &err), 0);
	/* A new generation is a new app, so observedGeneration follows. */
	cr_assert_not(config_same_app(&a, &b));
	app_spec_release(&b);
	cr_assert_eq(config_app_from_object(&b, o1, &err), 0);
	cr_assert(config_same_app(&a, &b));
	app_spec_release(&a);
	app_spec_release(&b);
	err_release(&err);
	json_decref(o1);
	json_decref(o2);
}

Test(objects, local_files_variables_and_programs_refused)
{
	char *msg = refused(
		"{\"source\": {\"repo\": \"https://g.example/r\", \"passwordFile\": \"/etc/x\", "
		"\"tokenEnv\": \"T\", \"sshKeyFile\": \"k\"}, "
		"\"render\": {\"varsFiles\": [\"v\"], \"helm\": {\"bin\": "
		"\"/bin/sh\"}}}");

	cr_assert(strstr(msg, "App team-a/web: spec.source.passwordFile: not "
			      "allowed in an App object"),
		  "%s", msg);
	cr_assert(strstr(msg, "spec.source.tokenEnv: not allowed"), "%s", msg);
	cr_assert(strstr(msg, "spec.source.sshKeyFile: not allowed"), "%s",
		  msg);
	cr_assert(strstr(msg, "spec.render.varsFiles: not allowed"), "%s",
		  msg);
	cr_assert(strstr(msg, "spec.render.helm.bin: not allowed"), "%s", msg);
	free(msg);
	msg = refused("{\"source\": {\"repo\": \"https://g.example/r\"}, \"render\": "
		      "{\"type\": \"exec\", \"plugin\": {\"command\": "
		      "\"/bin/sh\"}}}");
	cr_assert(strstr(msg, "spec.render.type: exec is not allowed"), "%s",
		  msg);
	cr_assert(strstr(msg, "spec.render.plugin: not allowed"), "%s", msg);
	free(msg);
}

Test(objects, local_repositories_refused)
{
	char *msg = refused("{\"source\": {\"repo\": \"/var/lib/repo\"}}");

	cr_assert(strstr(msg, "App team-a/web: spec.source.repo: "
			      "\"/var/lib/repo\": an App reads https://, "
			      "http://, ssh://, oci:// or user@host:path "
			      "repositories only"),
		  "%s", msg);
	free(msg);
	msg = refused("{\"source\": {\"repo\": \"file:///srv/x.git\"}}");
	cr_assert(strstr(msg, "spec.source.repo: \"file:///srv/x.git\""), "%s",
		  msg);
	free(msg);
}

Test(objects, bad_specs_name_the_field)
{
	char *msg = refused("{\"source\": {}, \"foreignFields\": \"fight\", "
			    "\"name\": \"x\", \"unknown\": 1}");

	cr_assert(strstr(msg, "App team-a/web: spec.source.repo: required"),
		  "%s", msg);
	cr_assert(strstr(msg, "spec.foreignFields: \"fight\" is not one of "
			      "respect, override, report"),
		  "%s", msg);
	cr_assert(strstr(msg, "spec.name: not allowed in an App object"),
		  "%s", msg);
	cr_assert(strstr(msg, "spec.unknown: unknown key"), "%s", msg);
	free(msg);
	msg = refused("{\"source\": {\"repo\": \"https://g.example/r\", \"secretRef\": "
		      "{\"name\": \"Bad_Name\"}}, \"serviceAccountName\": "
		      "\"Deployer\"}");
	cr_assert(strstr(msg, "spec.source.secretRef.name: \"Bad_Name\" is "
			      "not a valid Secret name"),
		  "%s", msg);
	cr_assert(strstr(msg, "spec.serviceAccountName: \"Deployer\" is not a "
			      "valid service account name"),
		  "%s", msg);
	free(msg);
}

Test(objects, no_spec)
{
	struct app_spec spec;
	struct err err = ERR_INIT;
	json_t *obj = app_object("{}");

	json_object_del(obj, "spec");
	cr_assert_eq(config_app_from_object(&spec, obj, &err), ERR_INVALID);
	cr_assert_str_eq(err_first(&err), "App team-a/web: spec: required");
	err_release(&err);
	json_decref(obj);
}

/* The keys only an App has are refused in the file. */
Test(objects, object_keys_refused_in_the_file)
{
	char path[] = "/tmp/syncd-objXXXXXX";
	int fd = mkstemp(path);
	struct config *cfg = NULL;
	struct err err = ERR_INIT;
	const char *text =
		"apps:\n"
		"  - name: web\n"
		"    serviceAccountName: deployer\n"
		"    source:\n"
		"      repo: /r\n"
		"      secretRef: {name: x}\n";

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(config_load(&cfg, path, &err), ERR_INVALID);
	cr_assert(strstr(err_msg(&err),
			 ":3: apps[0].serviceAccountName: only allowed in an "
			 "App object"),
		  "%s", err_msg(&err));
	cr_assert(strstr(err_msg(&err), ":6: apps[0].source.secretRef: only "
					"allowed in an App object"),
		  "%s", err_msg(&err));
	unlink(path);
	err_release(&err);
}

Test(objects, who_may_manage_what)
{
	char path[] = "/tmp/syncd-objXXXXXX";
	int fd = mkstemp(path);
	struct config *cfg = NULL;
	struct err err = ERR_INIT;
	const char *text = "appObjects:\n"
			   "  namespaces: [team-a, platform]\n"
			   "  clusterWide: [platform]\n"
			   "  targets:\n"
			   "    team-a: [team-a-dev]\n";

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(config_load(&cfg, path, &err), 0, "%s", err_msg(&err));
	cr_assert(cfg->objects.enabled, "present means enabled");
	cr_assert_eq(cfg->objects.namespaces.len, 2);
	cr_assert(config_object_may_manage(cfg, "team-a", "team-a"));
	cr_assert(config_object_may_manage(cfg, "team-a", "team-a-dev"));
	cr_assert_not(config_object_may_manage(cfg, "team-a", "team-b"));
	cr_assert_not(config_object_may_manage(cfg, "team-a", NULL),
		      "cluster-scoped objects");
	cr_assert(config_object_may_manage(cfg, "platform", "team-b"));
	cr_assert(config_object_may_manage(cfg, "platform", NULL));
	config_free(cfg);
	unlink(path);
	err_release(&err);
}

Test(objects, bad_app_objects_block)
{
	char path[] = "/tmp/syncd-objXXXXXX";
	int fd = mkstemp(path);
	struct config *cfg = NULL;
	struct err err = ERR_INIT;
	const char *text = "appObjects:\n"
			   "  clusterWide: [Platform]\n"
			   "  targets: {team-a: team-b}\n"
			   "  watch: true\n";

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(config_load(&cfg, path, &err), ERR_INVALID);
	cr_assert(strstr(err_msg(&err), ":2: appObjects.clusterWide[0]: "
					"\"Platform\" is not a namespace name"),
		  "%s", err_msg(&err));
	cr_assert(strstr(err_msg(&err),
			 ":3: appObjects.targets.team-a: expected a list"),
		  "%s", err_msg(&err));
	cr_assert(strstr(err_msg(&err), ":4: appObjects.watch: unknown key"),
		  "%s", err_msg(&err));
	unlink(path);
	err_release(&err);
}

Test(objects, cluster_refused)
{
	char *msg = refused("{\"source\": {\"repo\": \"https://g.example/r\"}, "
			    "\"cluster\": \"prod\"}");

	cr_assert(strstr(msg, "App team-a/web: spec.cluster: not allowed in an "
			      "App object (the clusters syncd deploys to are "
			      "its own configuration)"),
		  "%s", msg);
	free(msg);
}
