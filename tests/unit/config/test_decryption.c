/*
 * decryption: of an app (docs/sops.md): provider sops with an age key
 * file in syncd.yaml, a Secret in an App object, and every problem named
 * with its line or field.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/controller.h"
#include "util/err.h"

/* Load `text` as syncd.yaml from a temporary file; its path in `path`. */
static int load_text(struct config **cfg, const char *text, char *path,
		     struct err *err)
{
	int fd = mkstemp(path);
	int rc;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	rc = config_load(cfg, path, err);
	unlink(path);
	return rc;
}

static int from_object(struct app_spec *spec, const char *decryption,
		       struct err *err)
{
	json_error_t je;
	json_t *d = json_loads(decryption, 0, &je), *obj;
	int rc;

	cr_assert_not_null(d, "%s: %s", decryption, je.text);
	obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:I}, s:{s:{s:s}, s:o}}",
			"apiVersion", "syncd.io/v1alpha1", "kind", "App",
			"metadata", "name", "web", "namespace", "team-a",
			"generation", (json_int_t)1, "spec", "source", "repo",
			"https://g.example/r", "decryption", d);
	cr_assert_not_null(obj);
	rc = config_app_from_object(spec, obj, err);
	json_decref(obj);
	return rc;
}

Test(decryption, a_file_app_takes_an_age_key_file_relative_to_the_config)
{
	char path[] = "/tmp/syncd-decXXXXXX";
	struct config *cfg = NULL;
	struct err err = ERR_INIT;
	const struct app_decryption *d;
	char want[64];

	cr_assert_eq(load_text(&cfg,
			       "apps:\n"
			       "  - name: web\n"
			       "    source: {repo: /r}\n"
			       "    decryption:\n"
			       "      provider: sops\n"
			       "      ageKeyFile: keys/age.txt\n"
			       "      sopsBin: /opt/bin/sops\n"
			       "  - name: plain\n"
			       "    source: {repo: /r}\n",
			       path, &err),
		     0, "%s", err_msg(&err));
	d = &cfg->apps[0].decryption;
	cr_assert(d->sops);
	snprintf(want, sizeof(want), "/tmp/keys/age.txt");
	cr_assert_str_eq(d->age_key_file, want);
	cr_assert_str_eq(d->sops_bin, "/opt/bin/sops");
	cr_assert_null(d->secret_ref);
	cr_assert_not(cfg->apps[1].decryption.sops, "off unless asked");
	cr_assert_null(cfg->apps[1].decryption.age_key_file);
	config_free(cfg);
	err_release(&err);
}

Test(decryption, file_problems_are_named_with_their_lines)
{
	char path[] = "/tmp/syncd-decXXXXXX";
	struct config *cfg = NULL;
	struct err err = ERR_INIT;
	const char *m;

	cr_assert_eq(load_text(&cfg,
			       "apps:\n"
			       "  - name: a\n"
			       "    source: {repo: /r}\n"
			       "    decryption:\n"
			       "      provider: vault\n"
			       "      ageKeyFile: k.txt\n"
			       "      secretRef: {name: keys}\n"
			       "      agekey: x\n"
			       "  - name: b\n"
			       "    source: {repo: /r}\n"
			       "    decryption: {ageKeyFile: k.txt}\n"
			       "  - name: c\n"
			       "    source: {repo: /r}\n"
			       "    decryption: {provider: sops}\n"
			       "  - name: d\n"
			       "    source: {repo: /r}\n"
			       "    decryption: sops\n",
			       path, &err),
		     ERR_INVALID);
	cr_assert_null(cfg);
	m = err_msg(&err);
	cr_assert(strstr(m, ":8: apps[0].decryption.agekey: unknown key"), "%s",
		  m);
	cr_assert(strstr(m, ":7: apps[0].decryption.secretRef: only allowed "
			    "in an App object"),
		  "%s", m);
	cr_assert(strstr(m, ":5: apps[0].decryption.provider: \"vault\" is "
			    "not one of sops"),
		  "%s", m);
	cr_assert(strstr(m, "apps[1].decryption.provider: required"), "%s", m);
	cr_assert(strstr(m, "apps[2].decryption.ageKeyFile: required"), "%s",
		  m);
	cr_assert(strstr(m, ":17: apps[3].decryption: expected a mapping, got "
			    "a string"),
		  "%s", m);
	err_release(&err);
}

Test(decryption, an_app_object_takes_a_secret_of_its_namespace)
{
	struct app_spec spec;
	struct err err = ERR_INIT;

	cr_assert_eq(from_object(&spec,
				 "{\"provider\": \"sops\", \"secretRef\": "
				 "{\"name\": \"sops-age\"}}",
				 &err),
		     0, "%s", err_msg(&err));
	cr_assert(spec.decryption.sops);
	cr_assert_str_eq(spec.decryption.secret_ref, "sops-age");
	cr_assert_null(spec.decryption.age_key_file);
	cr_assert_null(spec.decryption.sops_bin);
	app_spec_release(&spec);
	err_release(&err);
}

Test(decryption, an_app_object_never_names_syncd_files_or_programs)
{
	struct app_spec spec;
	struct err err = ERR_INIT;
	const char *m;

	cr_assert_eq(from_object(&spec,
				 "{\"provider\": \"sops\", \"ageKeyFile\": "
				 "\"/etc/syncd/age.txt\", \"sopsBin\": "
				 "\"/bin/sh\", \"secretRef\": {\"name\": "
				 "\"Bad_Name\"}}",
				 &err),
		     ERR_INVALID);
	m = err_msg(&err);
	cr_assert(strstr(m, "App team-a/web: spec.decryption.ageKeyFile: not "
			    "allowed in an App object"),
		  "%s", m);
	cr_assert(strstr(m, "spec.decryption.sopsBin: not allowed"), "%s", m);
	cr_assert(strstr(m, "spec.decryption.secretRef.name: \"Bad_Name\" is "
			    "not a valid Secret name"),
		  "%s", m);
	err_release(&err);
	cr_assert_eq(from_object(&spec, "{\"provider\": \"sops\"}", &err),
		     ERR_INVALID);
	cr_assert(strstr(err_msg(&err), "spec.decryption.secretRef: required"),
		  "%s", err_msg(&err));
	err_release(&err);
}
