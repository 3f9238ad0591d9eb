/*
 * sources: an app's source type (git, helm, oci) from `type` or from
 * what the source names, the keys of each type, and every misplaced key
 * named with its line (docs/config.md#source).
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/controller.h"
#include "util/err.h"

static int load(struct config **cfg, const char *source, struct err *err)
{
	char path[] = "/tmp/syncd-srcXXXXXX";
	char *text;
	int fd = mkstemp(path), rc;

	cr_assert_geq(fd, 0);
	cr_assert_geq(asprintf(&text, "apps:\n  - name: web\n    source:\n%s",
			       source),
		      0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	free(text);
	rc = config_load(cfg, path, err);
	unlink(path);
	return rc;
}

static const struct source_options *ok(struct config **cfg, const char *source)
{
	struct err err = ERR_INIT;

	cr_assert_eq(load(cfg, source, &err), 0, "%s", err_msg(&err));
	err_release(&err);
	cr_assert_eq((*cfg)->napps, 1);
	return &(*cfg)->apps[0].source;
}

/* The problems of a source that must not load, one per line. */
static char *refused(const char *source)
{
	struct config *cfg = NULL;
	struct err err = ERR_INIT;
	char *msg;

	cr_assert_lt(load(&cfg, source, &err), 0, "loaded: %s", source);
	cr_assert_null(cfg);
	msg = strdup(err_msg(&err));
	err_release(&err);
	return msg;
}

Test(sources, a_chart_makes_a_helm_source)
{
	struct config *cfg = NULL;
	const struct source_options *s =
		ok(&cfg, "      repo: https://charts.example.com\n"
			 "      chart: podinfo\n"
			 "      revision: \"^6.5\"\n"
			 "      digest: sha256:"
			 "0123456789abcdef0123456789abcdef"
			 "0123456789abcdef0123456789abcdef\n");

	cr_assert_eq(s->type, SOURCE_HELM);
	cr_assert_str_eq(s->chart, "podinfo");
	cr_assert_str_eq(s->revision, "^6.5");
	cr_assert_str_eq(s->digest + 7, "0123456789abcdef0123456789abcdef"
					"0123456789abcdef0123456789abcdef");
	config_free(cfg);
}

Test(sources, an_oci_repo_alone_is_an_oci_source)
{
	struct config *cfg = NULL;
	const struct source_options *s =
		ok(&cfg, "      repo: oci://registry.example.com/team/app\n"
			 "      revision: 1.x\n"
			 "      path: prod\n"
			 "      plainHTTP: true\n");

	cr_assert_eq(s->type, SOURCE_OCI);
	cr_assert(s->plain_http);
	cr_assert_str_eq(s->subpath, "prod");
	config_free(cfg);
}

Test(sources, git_stays_the_default_and_type_wins)
{
	struct config *cfg = NULL;
	const struct source_options *s =
		ok(&cfg, "      repo: https://git.example.com/r.git\n");

	cr_assert_eq(s->type, SOURCE_GIT);
	config_free(cfg);
	s = ok(&cfg, "      type: helm\n"
		     "      repo: oci://r.example.com/charts\n"
		     "      chart: web\n");
	cr_assert_eq(s->type, SOURCE_HELM);
	config_free(cfg);
}

Test(sources, misplaced_keys_are_named)
{
	char *msg = refused("      repo: https://charts.example.com\n"
			    "      chart: podinfo\n"
			    "      path: sub\n"
			    "      sshKeyFile: /k\n");

	cr_assert(strstr(msg, ":6: apps[0].source.path: a chart is rendered "
			      "from its own folder"),
		  "%s", msg);
	cr_assert(strstr(msg, ":7: apps[0].source.sshKeyFile: applies to git "
			      "sources only"),
		  "%s", msg);
	free(msg);

	msg = refused("      repo: oci://r.example.com/a\n"
		      "      chart: web\n"
		      "      type: oci\n");
	cr_assert(strstr(msg, "apps[0].source.chart: applies to helm sources "
			      "only"),
		  "%s", msg);
	free(msg);

	msg = refused("      repo: https://git.example.com/r.git\n"
		      "      digest: sha256:00\n"
		      "      plainHTTP: true\n");
	cr_assert(strstr(msg, "apps[0].source.digest: applies to helm and oci "
			      "sources only"),
		  "%s", msg);
	cr_assert(strstr(msg, "apps[0].source.plainHTTP: applies to helm and "
			      "oci sources only"),
		  "%s", msg);
	free(msg);
}

Test(sources, bad_values_are_named)
{
	char *msg = refused("      repo: https://charts.example.com\n"
			    "      chart: podinfo\n"
			    "      digest: sha256:XYZ\n");

	cr_assert(strstr(msg, "apps[0].source.digest: \"sha256:XYZ\" is not "
			      "sha256: and 64 lower-case hex digits"),
		  "%s", msg);
	free(msg);

	msg = refused("      repo: ssh://git@example.com/charts\n"
		      "      chart: podinfo\n");
	cr_assert(strstr(msg, "a chart repository is https://, http:// or "
			      "oci://"),
		  "%s", msg);
	free(msg);

	msg = refused("      type: oci\n"
		      "      repo: https://r.example.com/a\n");
	cr_assert(strstr(msg, "an oci source is oci://HOST/NAME"), "%s", msg);
	free(msg);

	msg = refused("      type: svn\n"
		      "      repo: https://r.example.com/a\n");
	cr_assert(strstr(msg, "apps[0].source.type: \"svn\" is not one of git, "
			      "helm, oci"),
		  "%s", msg);
	free(msg);

	msg = refused("      repo: https://charts.example.com\n"
		      "      type: helm\n");
	cr_assert(strstr(msg, "apps[0].source.chart: required"), "%s", msg);
	free(msg);
}

Test(sources, an_app_object_may_name_a_chart)
{
	struct app_spec spec;
	struct err err = ERR_INIT;
	json_t *obj = json_pack(
		"{s:s, s:s, s:{s:s, s:s, s:I}, s:{s:{s:s, s:s, s:s}}}",
		"apiVersion", "syncd.io/v1alpha1", "kind", "App", "metadata",
		"name", "web", "namespace", "team-a", "generation",
		(json_int_t)1, "spec", "source", "repo",
		"oci://r.example.com/charts", "chart", "web", "revision", "~1");

	cr_assert_not_null(obj);
	cr_assert_eq(config_app_from_object(&spec, obj, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(spec.source.type, SOURCE_HELM);
	cr_assert_str_eq(spec.source.chart, "web");
	app_spec_release(&spec);
	json_decref(obj);
	err_release(&err);
}
