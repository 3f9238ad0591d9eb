/*
 * source.c: one interface over the Git source (git.c) and the helm and
 * oci sources (artifact.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/internal.h"

#include "util/banned.h" /* last */

const char *const source_type_names[] = {"git", "helm", "oci", NULL};

struct source {
	enum source_type type;
	struct source_git *git;
	struct src_artifact *artifact;
};

int source_open(struct source **out, const struct source_options *o,
		struct err *err)
{
	struct source *s;
	int error;

	*out = NULL;
	if (!o || o->version != SOURCE_OPTIONS_VERSION)
		return err_set(err, ERR_USAGE, "source: bad options version");
	if (!(s = calloc(1, sizeof(*s))))
		return err_set(err, ERR_NOMEM, "out of memory");
	s->type = o->type;
	if (o->type == SOURCE_GIT)
		error = source_git_open(&s->git, o, err);
	else
		error = src_artifact_open(&s->artifact, o, err);
	if (error < 0) {
		free(s);
		return error;
	}
	*out = s;
	return 0;
}

int source_poll(struct source *s, struct source_poll_result *r, struct err *err)
{
	return s->git ? source_git_poll(s->git, r, err)
		      : src_artifact_poll(s->artifact, r, err);
}

int source_checkout(struct source *s, char **dir, struct err *err)
{
	return s->git ? source_git_checkout(s->git, dir, err)
		      : src_artifact_checkout(s->artifact, dir, err);
}

int source_mark_rendered(struct source *s, const char *tree, struct err *err)
{
	return s->git ? source_git_mark_rendered(s->git, tree, err)
		      : src_artifact_mark_rendered(s->artifact, tree, err);
}

const char *source_url(const struct source *s)
{
	return s->git ? source_git_url(s->git) : src_artifact_url(s->artifact);
}

const char *source_cache_path(const struct source *s)
{
	return s->git ? source_git_cache_path(s->git)
		      : src_artifact_cache_path(s->artifact);
}

enum source_type source_type(const struct source *s)
{
	return s->type;
}

void source_free(struct source *s)
{
	if (!s)
		return;
	source_git_free(s->git);
	src_artifact_free(s->artifact);
	free(s);
}

void source_revision_short(char *out, size_t size, const char *rev,
			   unsigned digits)
{
	const char *at;

	if (!rev) {
		out[0] = '\0';
		return;
	}
	if ((at = strstr(rev, "@sha256:")))
		snprintf(out, size, "%.*s@%.*s", (int)(at - rev), rev,
			 (int)digits, at + 8);
	else if (!strncmp(rev, "sha256:", 7))
		snprintf(out, size, "sha256:%.*s", (int)digits, rev + 7);
	else
		snprintf(out, size, "%.*s", (int)digits, rev);
}
