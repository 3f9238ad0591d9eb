/*
 * The controller's configuration file: read with the manifest YAML rules
 * (renderers/render.h), walked key by key with a table of the keys each
 * mapping may hold, so that every unknown key, wrong type and bad value is
 * reported with its line, not just the first one.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/file.h"

#include "util/banned.h" /* last */

#define CONFIG_MAX_PATH 1024

struct problem {
	unsigned line;
	size_t seq;
	char *text;
};

/* Where the walk is: the JSON pointer (for lines) and the dotted path. */
struct walk {
	const char *file;
	const char *dir; /* directory of the file, "" for "." */
	json_t *lines;
	struct err *err;
	bool nomem;
	/*
	 * Ignore rules take empty strings, as `syncd diff --ignore-file`
	 * does: group "" is the core group, pointer "" the whole object.
	 */
	bool allow_empty;
	/*
	 * Walking the spec of an App object: no lines (problems read
	 * "App NS/NAME: spec.key: cause") and no keys that name syncd's own
	 * files, variables or programs.
	 */
	bool object;
	/* Problems are kept until the end, to be reported in line order. */
	struct problem *problems;
	size_t nproblems;
	size_t aproblems;
	char ptr[CONFIG_MAX_PATH];
	size_t plen;
	char dot[CONFIG_MAX_PATH];
	size_t dlen;
};

struct mark {
	size_t plen;
	size_t dlen;
};

static struct mark push_key(struct walk *w, const char *key)
{
	struct mark m = {w->plen, w->dlen};
	size_t i;

	for (i = 0; key[i] && w->plen + 3 < sizeof(w->ptr); i++) {
		if (i == 0)
			w->ptr[w->plen++] = '/';
		if (key[i] == '~' || key[i] == '/') {
			w->ptr[w->plen++] = '~';
			w->ptr[w->plen++] = key[i] == '~' ? '0' : '1';
		} else {
			w->ptr[w->plen++] = key[i];
		}
	}
	if (!key[0] && w->plen + 1 < sizeof(w->ptr))
		w->ptr[w->plen++] = '/';
	w->ptr[w->plen] = '\0';
	w->dlen += (size_t)snprintf(w->dot + w->dlen, sizeof(w->dot) - w->dlen,
				    "%s%s", w->dlen ? "." : "", key);
	if (w->dlen >= sizeof(w->dot))
		w->dlen = sizeof(w->dot) - 1;
	return m;
}

static struct mark push_index(struct walk *w, size_t i)
{
	struct mark m = {w->plen, w->dlen};

	w->plen += (size_t)snprintf(w->ptr + w->plen, sizeof(w->ptr) - w->plen,
				    "/%zu", i);
	if (w->plen >= sizeof(w->ptr))
		w->plen = sizeof(w->ptr) - 1;
	w->dlen += (size_t)snprintf(w->dot + w->dlen, sizeof(w->dot) - w->dlen,
				    "[%zu]", i);
	if (w->dlen >= sizeof(w->dot))
		w->dlen = sizeof(w->dot) - 1;
	return m;
}

static void pop(struct walk *w, struct mark m)
{
	w->plen = m.plen;
	w->ptr[m.plen] = '\0';
	w->dlen = m.dlen;
	w->dot[m.dlen] = '\0';
}

/* Line of the current node, or of its nearest ancestor that has one. */
static unsigned line_here(const struct walk *w)
{
	char p[CONFIG_MAX_PATH];
	size_t n = w->plen;

	memcpy(p, w->ptr, n + 1);
	for (;;) {
		json_t *l = json_object_get(w->lines, p);
		char *slash;

		if (json_is_integer(l))
			return (unsigned)json_integer_value(l);
		if (!n)
			return 1;
		slash = strrchr(p, '/');
		if (!slash)
			return 1;
		*slash = '\0';
		n = (size_t)(slash - p);
	}
}

static void problem(struct walk *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void problem(struct walk *w, const char *fmt, ...)
{
	char why[512];
	struct problem *p;
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (w->nproblems == w->aproblems) {
		size_t a = w->aproblems ? 2 * w->aproblems : 16;

		p = realloc(w->problems, a * sizeof(*p));
		if (!p) {
			w->nomem = true;
			return;
		}
		w->problems = p;
		w->aproblems = a;
	}
	p = &w->problems[w->nproblems];
	p->line = line_here(w);
	p->seq = w->nproblems;
	if (w->object)
		n = asprintf(&p->text, "%s: %s: %s", w->file,
			     w->dlen ? w->dot : "spec", why);
	else
		n = asprintf(&p->text, "%s:%u: %s: %s", w->file, p->line,
			     w->dlen ? w->dot : "top level", why);
	if (n < 0) {
		w->nomem = true;
		return;
	}
	w->nproblems++;
}

static int problem_cmp(const void *a, const void *b)
{
	const struct problem *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "a mapping";
	case JSON_ARRAY:
		return "a list";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

static void wrong_type(struct walk *w, const char *want, const json_t *v)
{
	problem(w, "expected %s, got %s", want, type_name(v));
}

static char *dup_str(struct walk *w, const char *s)
{
	char *d = strdup(s);

	if (!d)
		w->nomem = true;
	return d;
}

/*
 * Report keys of `obj` that are not in the NULL-terminated `keys`; returns
 * false (after a type error) when obj is not a mapping.
 */
static bool check_map(struct walk *w, const json_t *obj,
		      const char *const *keys)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj)) {
		wrong_type(w, "a mapping", obj);
		return false;
	}
	json_object_foreach((json_t *)obj, key, v)
	{
		size_t i;

		for (i = 0; keys[i] && strcmp(keys[i], key); i++)
			;
		if (!keys[i]) {
			struct mark m = push_key(w, key);

			problem(w, "unknown key");
			pop(w, m);
		}
	}
	return true;
}

static void get_str(struct walk *w, const json_t *obj, const char *key,
		    char **dst)
{
	json_t *v = json_object_get(obj, key);
	struct mark m;

	if (!v)
		return;
	m = push_key(w, key);
	if (!json_is_string(v))
		wrong_type(w, "a string", v);
	else if (!json_string_length(v) && !w->allow_empty)
		problem(w, "must not be empty");
	else if (strlen(json_string_value(v)) != json_string_length(v))
		problem(w, "must not contain NUL");
	else {
		free(*dst);
		*dst = dup_str(w, json_string_value(v));
	}
	pop(w, m);
}

/* A file name, made relative to the configuration file's directory. */
static void get_file(struct walk *w, const json_t *obj, const char *key,
		     char **dst)
{
	char *s = NULL;
	char *joined;

	get_str(w, obj, key, &s);
	if (!s)
		return;
	if (s[0] == '/' || !w->dir[0]) {
		free(*dst);
		*dst = s;
		return;
	}
	if (asprintf(&joined, "%s/%s", w->dir, s) < 0) {
		w->nomem = true;
		free(s);
		return;
	}
	free(s);
	free(*dst);
	*dst = joined;
}

static void get_bool(struct walk *w, const json_t *obj, const char *key,
		     bool *dst)
{
	json_t *v = json_object_get(obj, key);
	struct mark m;

	if (!v)
		return;
	m = push_key(w, key);
	if (!json_is_boolean(v))
		wrong_type(w, "a boolean", v);
	else
		*dst = json_is_true(v);
	pop(w, m);
}

static void get_uint(struct walk *w, const json_t *obj, const char *key,
		     unsigned *dst, unsigned min, unsigned max)
{
	json_t *v = json_object_get(obj, key);
	struct mark m;

	if (!v)
		return;
	m = push_key(w, key);
	if (!json_is_integer(v))
		wrong_type(w, "an integer", v);
	else if (json_integer_value(v) < (json_int_t)min ||
		 json_integer_value(v) > (json_int_t)max)
		problem(w, "must be between %u and %u", min, max);
	else
		*dst = (unsigned)json_integer_value(v);
	pop(w, m);
}

static void get_qps(struct walk *w, const json_t *obj, const char *key,
		    double *dst)
{
	json_t *v = json_object_get(obj, key);
	struct mark m;

	if (!v)
		return;
	m = push_key(w, key);
	if (!json_is_number(v))
		wrong_type(w, "a number", v);
	else if (!(json_number_value(v) > 0) || json_number_value(v) > 1e6)
		problem(w, "must be greater than 0 and at most 1000000");
	else
		*dst = json_number_value(v);
	pop(w, m);
}

static void get_duration(struct walk *w, const json_t *obj, const char *key,
			 uint64_t *dst, uint64_t min_ms)
{
	json_t *v = json_object_get(obj, key);
	uint64_t ms;
	struct mark m;

	if (!v)
		return;
	m = push_key(w, key);
	if (!json_is_string(v))
		wrong_type(w, "a duration such as \"30s\"", v);
	else if (clk_parse_duration(json_string_value(v), 0, &ms) < 0)
		problem(w, "invalid duration \"%s\" (want e.g. 30s, 3m, 1h)",
			json_string_value(v));
	else if (ms < min_ms)
		problem(w, "must be at least %llums",
			(unsigned long long)min_ms);
	else
		*dst = ms;
	pop(w, m);
}

/* Index of `s` in the NULL-terminated `names`, or -1. */
static int lookup(const char *const *names, const char *s)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

static void get_enum(struct walk *w, const json_t *obj, const char *key,
		     const char *const *names, int *dst)
{
	json_t *v = json_object_get(obj, key);
	struct mark m;
	int i;

	if (!v)
		return;
	m = push_key(w, key);
	if (!json_is_string(v)) {
		wrong_type(w, "a string", v);
	} else if ((i = lookup(names, json_string_value(v))) < 0) {
		struct buf choices = BUF_INIT;

		for (size_t k = 0; names[k]; k++)
			buf_addf(&choices, "%s%s", k ? ", " : "", names[k]);
		problem(w, "\"%s\" is not one of %s", json_string_value(v),
			buf_cstr(&choices));
		buf_release(&choices);
	} else {
		*dst = i;
	}
	pop(w, m);
}

/* A list of non-empty strings; absent leaves *dst alone. */
static void get_list(struct walk *w, const json_t *obj, const char *key,
		     struct strvec *dst)
{
	json_t *v = json_object_get(obj, key);
	struct mark m;
	size_t i;
	json_t *item;

	if (!v)
		return;
	m = push_key(w, key);
	if (!json_is_array(v)) {
		wrong_type(w, "a list", v);
		pop(w, m);
		return;
	}
	strvec_release(dst);
	json_array_foreach(v, i, item)
	{
		struct mark mi = push_index(w, i);

		if (!json_is_string(item))
			wrong_type(w, "a string", item);
		else if (!json_string_length(item) && !w->allow_empty)
			problem(w, "must not be empty");
		else if (strvec_push(dst, json_string_value(item)) < 0)
			w->nomem = true;
		pop(w, mi);
	}
	pop(w, m);
}

/* File names of a list, made relative to the configuration file's directory. */
static void list_files(struct walk *w, struct strvec *l)
{
	for (size_t i = 0; i < l->len && w->dir[0]; i++) {
		char *j;

		if (l->v[i][0] == '/')
			continue;
		if (asprintf(&j, "%s/%s", w->dir, l->v[i]) < 0) {
			w->nomem = true;
			return;
		}
		free(l->v[i]);
		l->v[i] = j;
	}
}

/*
 * A mapping of names to scalars, as "NAME=VALUE" strings in file order;
 * numbers and booleans become text.
 */
static void get_map(struct walk *w, const json_t *obj, const char *key,
		    struct strvec *dst)
{
	json_t *v = json_object_get(obj, key);
	const char *name;
	json_t *item;
	struct mark m;
	struct buf pair = BUF_INIT;

	if (!v)
		return;
	m = push_key(w, key);
	if (!json_is_object(v)) {
		wrong_type(w, "a mapping", v);
		pop(w, m);
		return;
	}
	json_object_foreach(v, name, item)
	{
		struct mark mi = push_key(w, name);
		char text[64];
		const char *s = NULL;

		if (json_is_string(item)) {
			s = json_string_value(item);
		} else if (json_is_integer(item)) {
			snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT,
				 json_integer_value(item));
			s = text;
		} else if (json_is_real(item)) {
			snprintf(text, sizeof(text), "%.17g",
				 json_real_value(item));
			s = text;
		} else if (json_is_boolean(item)) {
			s = json_is_true(item) ? "true" : "false";
		} else {
			wrong_type(w, "a string", item);
		}
		if (s && !name[0]) {
			problem(w, "empty name");
		} else if (s) {
			buf_reset(&pair);
			if (buf_addf(&pair, "%s=%s", name, s) < 0 ||
			    strvec_push(dst, buf_cstr(&pair)) < 0)
				w->nomem = true;
		}
		pop(w, mi);
	}
	buf_release(&pair);
	pop(w, m);
}

/* Into the app spec: a string, a file name, a list, a mapping. */
static void spec_str(struct walk *w, struct app_spec *a, const json_t *obj,
		     const char *key, const char **field)
{
	char *v = NULL;

	get_str(w, obj, key, &v);
	if (v && app_spec_set(a, field, v) < 0)
		w->nomem = true;
	free(v);
}

static void spec_file(struct walk *w, struct app_spec *a, const json_t *obj,
		      const char *key, const char **field)
{
	char *v = NULL;

	get_file(w, obj, key, &v);
	if (v && app_spec_set(a, field, v) < 0)
		w->nomem = true;
	free(v);
}

static void spec_add(struct walk *w, struct app_spec *a, enum app_list which,
		     const struct strvec *l)
{
	for (size_t i = 0; i < l->len; i++)
		if (app_spec_add(a, which, l->v[i]) < 0)
			w->nomem = true;
}

static void spec_list(struct walk *w, struct app_spec *a, const json_t *obj,
		      const char *key, enum app_list which)
{
	struct strvec l = STRVEC_INIT;

	get_list(w, obj, key, &l);
	spec_add(w, a, which, &l);
	strvec_release(&l);
}

static void spec_map(struct walk *w, struct app_spec *a, const json_t *obj,
		     const char *key, enum app_list which)
{
	struct strvec l = STRVEC_INIT;

	get_map(w, obj, key, &l);
	spec_add(w, a, which, &l);
	strvec_release(&l);
}

static void check_label(struct walk *w, const char *key, const char *value)
{
	struct mark m;

	if (!value || diff_dns_label(value, 63))
		return;
	m = push_key(w, key);
	problem(w,
		"\"%s\" is not a DNS label (lower case letters, digits "
		"and '-', at most 63)",
		value);
	pop(w, m);
}

static void required(struct walk *w, const json_t *obj, const char *key)
{
	struct mark m;

	if (json_object_get(obj, key))
		return;
	m = push_key(w, key);
	problem(w, "required");
	pop(w, m);
}

/* A DNS-1123 subdomain (the names of most objects): labels joined by dots. */
static bool dns_subdomain(const char *s)
{
	char label[64];
	size_t n = strlen(s);

	if (!n || n > 253)
		return false;
	while (*s) {
		size_t len = strcspn(s, ".");

		if (len >= sizeof(label))
			return false;
		memcpy(label, s, len);
		label[len] = '\0';
		if (!diff_dns_label(label, 63))
			return false;
		s += len;
		if (*s && !*++s)
			return false; /* a trailing dot */
	}
	return true;
}

/*
 * Keys of `obj` among `keys` are not allowed where the walk is: in an
 * App object (keys naming syncd's own files, variables and programs:
 * anyone who may create an App could otherwise make syncd read or run
 * them), or in the file (keys only an App object has).
 */
static void refuse_keys(struct walk *w, const json_t *obj,
			const char *const *keys, const char *why)
{
	for (size_t i = 0; json_is_object(obj) && keys[i]; i++) {
		struct mark m;

		if (!json_object_get(obj, keys[i]))
			continue;
		m = push_key(w, keys[i]);
		problem(w, "%s", why);
		pop(w, m);
	}
}

#define NOT_IN_OBJECT                                                      \
	"not allowed in an App object (it names a file, variable or "      \
	"program of syncd's own; use secretRef for credentials)"
#define ONLY_IN_OBJECT "only allowed in an App object"

static const char *const source_local_keys[] = {
	"usernameFile",	 "passwordFile", "passwordEnv",
	"tokenFile",	 "tokenEnv",	 "caFile",
	"sshKeyFile",	 "sshPassphraseFile", "knownHostsFile",
	"verifySignatures", NULL,
};
static const char *const source_object_keys[] = {"secretRef", NULL};
static const char *const secret_ref_keys[] = {"name", NULL};

static const char *const source_keys[] = {
	"type",
	"repo",
	"chart",
	"revision",
	"digest",
	"plainHTTP",
	"redirectHosts",
	"path",
	"interval",
	"username",
	"usernameFile",
	"passwordFile",
	"passwordEnv",
	"tokenFile",
	"tokenEnv",
	"caFile",
	"sshKeyFile",
	"sshPassphraseFile",
	"knownHostsFile",
	"verifySignatures",
	"secretRef",
	NULL,
};

static const char *const verify_keys[] = {
	"allowedSignersFile",
	"gpgKeyringFile",
	NULL,
};

/* Keys of Git sources only. */
static const char *const git_only_keys[] = {
	"sshKeyFile", "sshPassphraseFile", "knownHostsFile", "verifySignatures",
	NULL,
};

/*
 * The source's type: `type`, else helm when a chart is named, oci for
 * an oci:// repository, git otherwise.
 */
static void source_type_of(struct walk *w, const json_t *obj,
			   struct app_spec *a)
{
	struct source_options *g = &a->source;
	const char *repo = json_string_value(json_object_get(obj, "repo"));
	int type = -1;

	get_enum(w, obj, "type", source_type_names, &type);
	if (type >= 0)
		g->type = (enum source_type)type;
	else if (json_object_get(obj, "chart"))
		g->type = SOURCE_HELM;
	else if (repo && !strncmp(repo, "oci://", 6))
		g->type = SOURCE_OCI;
	else
		g->type = SOURCE_GIT;
	if (g->type != SOURCE_GIT)
		refuse_keys(w, obj, git_only_keys,
			    "applies to git sources only");
	if (g->type != SOURCE_HELM && json_object_get(obj, "chart")) {
		struct mark m = push_key(w, "chart");

		problem(w, "applies to helm sources only");
		pop(w, m);
	}
	if (g->type == SOURCE_GIT) {
		static const char *const k[] = {"digest", "plainHTTP",
						"redirectHosts", NULL};

		refuse_keys(w, obj, k, "applies to helm and oci sources only");
	}
	if (g->type == SOURCE_HELM) {
		static const char *const k[] = {"path", NULL};

		required(w, obj, "chart");
		refuse_keys(w, obj, k, "a chart is rendered from its own "
				       "folder");
	}
	if (repo && g->type == SOURCE_OCI && strncmp(repo, "oci://", 6)) {
		struct mark m = push_key(w, "repo");

		problem(w, "\"%s\": an oci source is oci://HOST/NAME", repo);
		pop(w, m);
	}
	if (repo && g->type == SOURCE_HELM && strncmp(repo, "oci://", 6) &&
	    strncmp(repo, "https://", 8) && strncmp(repo, "http://", 7)) {
		struct mark m = push_key(w, "repo");

		problem(w, "\"%s\": a chart repository is https://, http:// "
			   "or oci://", repo);
		pop(w, m);
	}
}

static void walk_source(struct walk *w, const json_t *obj, struct app_spec *a)
{
	struct source_options *g = &a->source;
	json_t *verify;

	if (!check_map(w, obj, source_keys))
		return;
	source_type_of(w, obj, a);
	if (w->object)
		refuse_keys(w, obj, source_local_keys, NOT_IN_OBJECT);
	else
		refuse_keys(w, obj, source_object_keys, ONLY_IN_OBJECT);
	if (w->object && (verify = json_object_get(obj, "secretRef"))) {
		struct mark m = push_key(w, "secretRef");

		if (check_map(w, verify, secret_ref_keys)) {
			required(w, verify, "name");
			spec_str(w, a, verify, "name", &a->secret_ref);
			if (a->secret_ref &&
			    !dns_subdomain(a->secret_ref)) {
				struct mark mn = push_key(w, "name");

				problem(w, "\"%s\" is not a valid Secret name",
					a->secret_ref);
				pop(w, mn);
			}
		}
		pop(w, m);
	}
	required(w, obj, "repo");
	spec_str(w, a, obj, "repo", &g->url);
	/* Not syncd's own repositories and folders. */
	if (w->object && g->url && strncmp(g->url, "https://", 8) &&
	    strncmp(g->url, "http://", 7) && strncmp(g->url, "ssh://", 6) &&
	    strncmp(g->url, "oci://", 6) &&
	    !(strchr(g->url, '@') && strchr(g->url, ':') &&
	      !strstr(g->url, "://"))) {
		struct mark mr = push_key(w, "repo");

		problem(w,
			"\"%s\": an App reads https://, http://, ssh://, "
			"oci:// or user@host:path repositories only",
			g->url);
		pop(w, mr);
	}
	spec_str(w, a, obj, "revision", &g->revision);
	spec_str(w, a, obj, "chart", &g->chart);
	spec_str(w, a, obj, "digest", &g->digest);
	get_bool(w, obj, "plainHTTP", &g->plain_http);
	spec_list(w, a, obj, "redirectHosts", APP_LIST_REDIRECT_HOSTS);
	if (g->digest && !source_digest_valid(g->digest)) {
		struct mark m = push_key(w, "digest");

		problem(w, "\"%s\" is not sha256: and 64 lower-case hex "
			   "digits", g->digest);
		pop(w, m);
	}
	spec_str(w, a, obj, "path", &g->subpath);
	get_duration(w, obj, "interval", &a->interval_ms, 1000);
	spec_str(w, a, obj, "username", &g->auth.username);
	spec_file(w, a, obj, "usernameFile", &g->auth.username_file);
	spec_file(w, a, obj, "passwordFile", &g->auth.password_file);
	spec_str(w, a, obj, "passwordEnv", &g->auth.password_env);
	spec_file(w, a, obj, "tokenFile", &g->auth.token_file);
	spec_str(w, a, obj, "tokenEnv", &g->auth.token_env);
	spec_file(w, a, obj, "caFile", &g->auth.ca_file);
	spec_file(w, a, obj, "sshKeyFile", &g->auth.ssh_key_file);
	spec_file(w, a, obj, "sshPassphraseFile",
		  &g->auth.ssh_passphrase_file);
	spec_file(w, a, obj, "knownHostsFile", &g->auth.known_hosts_file);
	if ((verify = json_object_get(obj, "verifySignatures"))) {
		struct mark m = push_key(w, "verifySignatures");

		if (check_map(w, verify, verify_keys)) {
			spec_file(w, a, verify, "allowedSignersFile",
				  &g->verify.allowed_signers_file);
			spec_file(w, a, verify, "gpgKeyringFile",
				  &g->verify.gpg_keyring_file);
			if (!g->verify.allowed_signers_file &&
			    !g->verify.gpg_keyring_file)
				problem(w, "needs allowedSignersFile or "
					   "gpgKeyringFile");
		}
		pop(w, m);
	}
	if (g->auth.username && g->auth.username_file) {
		struct mark m = push_key(w, "usernameFile");

		problem(w, "conflicts with username");
		pop(w, m);
	}
	if (g->auth.password_file && g->auth.password_env) {
		struct mark m = push_key(w, "passwordEnv");

		problem(w, "conflicts with passwordFile");
		pop(w, m);
	}
	if (g->auth.token_file && g->auth.token_env) {
		struct mark m = push_key(w, "tokenEnv");

		problem(w, "conflicts with tokenFile");
		pop(w, m);
	}
}

static const char *const render_keys[] = {
	"type",	   "timeout", "directory", "kustomize",	"helm",
	"jsonnet", "plugin",  "vars",	   "varsFiles", "substitute",
	NULL,
};
static const char *const render_types[] = {
	"auto", "directory", "kustomize", "helm", "jsonnet", "exec", NULL,
};
static const char *const dir_keys[] = {
	"include",
	"exclude",
	"recurse",
	NULL,
};
static const char *const kustomize_keys[] = {
	"bin",
	NULL,
};
static const char *const helm_keys[] = {
	"release", "values", "valuesFiles", "valuesObject", "set",
	"includeCrds", "kubeVersion", "bin", NULL,
};
static const char *const jsonnet_keys[] = {
	"file", "extVars", "extCode", "tlas", "tlaCode", "jpath", NULL,
};
static const char *const plugin_keys[] = {
	"command",
	"args",
	"env",
	NULL,
};
static const char *const subst_names[] = {
	"off",
	"strict",
	"lenient",
	NULL,
};

/*
 * The options block `key` of renderer `kind`: only when that renderer is
 * chosen or may be (auto), so that a typo in `type` is not silently
 * ignored in favour of the options.
 */
static const json_t *options_block(struct walk *w, const json_t *obj,
				   const char *key, const char *const *keys,
				   const struct app_spec *a,
				   enum render_kind kind)
{
	const json_t *v = json_object_get(obj, key);
	struct mark m;
	bool ok;

	if (!v)
		return NULL;
	m = push_key(w, key);
	ok = check_map(w, v, keys);
	if (ok && a->render.kind != RENDER_AUTO && a->render.kind != kind) {
		problem(w, "only used with type %s", render_types[kind]);
		ok = false;
	}
	pop(w, m);
	return ok ? v : NULL;
}

static void walk_render(struct walk *w, const json_t *obj, struct app_spec *a)
{
	struct render_app_options *r = &a->render;
	const json_t *b;
	int type = RENDER_AUTO, subst = RENDER_SUBST_STRICT;
	uint64_t timeout_ms = 0;
	bool recurse = true;
	struct mark m;

	if (obj && !check_map(w, obj, render_keys))
		obj = NULL;
	if (obj && w->object) {
		static const char *const local[] = {"varsFiles", "kustomize",
						    "plugin", NULL};
		const json_t *helm = json_object_get(obj, "helm");
		const json_t *kind = json_object_get(obj, "type");

		refuse_keys(w, obj, local, NOT_IN_OBJECT);
		if (json_is_object(helm)) {
			static const char *const bin[] = {"bin", "valuesFiles",
							  NULL};
			struct mark mh = push_key(w, "helm");

			refuse_keys(w, helm, bin, NOT_IN_OBJECT);
			pop(w, mh);
		}
		if (json_is_string(kind) &&
		    !strcmp(json_string_value(kind), "exec")) {
			struct mark mt = push_key(w, "type");

			problem(w, "exec is %s", NOT_IN_OBJECT);
			pop(w, mt);
		}
	}
	if (!obj)
		obj = json_object(); /* read defaults from an empty block */
	else
		json_incref((json_t *)obj);
	if (!obj) {
		w->nomem = true;
		return;
	}
	get_enum(w, obj, "type", render_types, &type);
	r->kind = (enum render_kind)type;
	get_duration(w, obj, "timeout", &timeout_ms, 1000);
	if (timeout_ms > UINT_MAX) {
		m = push_key(w, "timeout");
		problem(w, "must be at most %ums", UINT_MAX);
		pop(w, m);
	} else {
		app_spec_set_render_timeout(a, (unsigned)timeout_ms);
	}
	b = options_block(w, obj, "directory", dir_keys, a, RENDER_DIRECTORY);
	m = push_key(w, "directory");
	spec_list(w, a, b, "include", APP_LIST_INCLUDE);
	spec_list(w, a, b, "exclude", APP_LIST_EXCLUDE);
	get_bool(w, b, "recurse", &recurse);
	r->dir.no_recurse = !recurse;
	pop(w, m);
	b = options_block(w, obj, "kustomize", kustomize_keys, a,
			  RENDER_KUSTOMIZE);
	m = push_key(w, "kustomize");
	spec_str(w, a, b, "bin", &r->kustomize.bin);
	pop(w, m);
	b = options_block(w, obj, "helm", helm_keys, a, RENDER_HELM);
	m = push_key(w, "helm");
	spec_str(w, a, b, "release", &r->helm.release);
	if (r->helm.release) {
		struct err why = ERR_INIT;

		if (render_helm_check_release(r->helm.release, &why) < 0) {
			struct mark mr = push_key(w, "release");

			problem(w, "%s", err_first(&why));
			pop(w, mr);
		}
		err_release(&why);
	}
	spec_list(w, a, b, "values", APP_LIST_HELM_VALUES);
	{
		struct strvec files = STRVEC_INIT;

		get_list(w, b, "valuesFiles", &files);
		list_files(w, &files);
		spec_add(w, a, APP_LIST_HELM_VALUES_FILES, &files);
		strvec_release(&files);
	}
	if (json_object_get(b, "valuesObject")) {
		const json_t *v = json_object_get(b, "valuesObject");
		struct mark mv = push_key(w, "valuesObject");
		char *text;

		/* JSON is YAML: helm reads it as a values file. */
		if (!json_is_object(v)) {
			wrong_type(w, "a mapping", v);
		} else if (!(text = json_dumps(v, JSON_COMPACT |
						      JSON_PRESERVE_ORDER))) {
			w->nomem = true;
		} else {
			if (app_spec_set(a, &r->helm.values_inline, text) < 0)
				w->nomem = true;
			free(text);
		}
		pop(w, mv);
	}
	spec_map(w, a, b, "set", APP_LIST_HELM_SET);
	get_bool(w, b, "includeCrds", &r->helm.include_crds);
	spec_str(w, a, b, "kubeVersion", &r->helm.kube_version);
	spec_str(w, a, b, "bin", &r->helm.bin);
	pop(w, m);
	b = options_block(w, obj, "jsonnet", jsonnet_keys, a, RENDER_JSONNET);
	m = push_key(w, "jsonnet");
	spec_str(w, a, b, "file", &r->jsonnet.file);
	spec_map(w, a, b, "extVars", APP_LIST_JSONNET_EXT_STR);
	spec_map(w, a, b, "extCode", APP_LIST_JSONNET_EXT_CODE);
	spec_map(w, a, b, "tlas", APP_LIST_JSONNET_TLA_STR);
	spec_map(w, a, b, "tlaCode", APP_LIST_JSONNET_TLA_CODE);
	spec_list(w, a, b, "jpath", APP_LIST_JSONNET_JPATH);
	pop(w, m);
	b = options_block(w, obj, "plugin", plugin_keys, a, RENDER_EXEC);
	m = push_key(w, "plugin");
	spec_str(w, a, b, "command", &r->exec.cmd);
	spec_list(w, a, b, "args", APP_LIST_PLUGIN_ARGS);
	spec_map(w, a, b, "env", APP_LIST_PLUGIN_ENV);
	pop(w, m);
	if (r->kind == RENDER_EXEC && !r->exec.cmd) {
		m = push_key(w, "plugin");
		push_key(w, "command");
		problem(w, "required with type exec");
		pop(w, m);
	}
	get_map(w, obj, "vars", &a->vars);
	get_list(w, obj, "varsFiles", &a->vars_files);
	list_files(w, &a->vars_files);
	/*
	 * As on the command line, substitution is on (strict) by default
	 * only when there are variables. YAML 1.1 reads a bare `off` as
	 * false; take it as meant.
	 */
	if (!a->vars.len && !a->vars_files.len)
		subst = RENDER_SUBST_OFF;
	if (json_is_false(json_object_get(obj, "substitute")))
		subst = RENDER_SUBST_OFF;
	else
		get_enum(w, obj, "substitute", subst_names, &subst);
	a->substitute = subst;
	json_decref((json_t *)obj);
}

static const char *const ignore_keys[] = {
	"group", "kind", "namespace", "name", "jsonPointers", "managers", NULL,
};

static void walk_ignore(struct walk *w, const json_t *obj, struct app_spec *a)
{
	struct diff_ignore_rule rule = {0};
	char *group = NULL, *kind = NULL, *ns = NULL, *name = NULL;
	struct strvec pointers = STRVEC_INIT, managers = STRVEC_INIT;
	struct mark m;

	if (!check_map(w, obj, ignore_keys))
		return;
	w->allow_empty = true;
	get_str(w, obj, "group", &group);
	get_str(w, obj, "kind", &kind);
	get_str(w, obj, "namespace", &ns);
	get_str(w, obj, "name", &name);
	get_list(w, obj, "jsonPointers", &pointers);
	get_list(w, obj, "managers", &managers);
	w->allow_empty = false;
	m = push_key(w, "jsonPointers");
	for (size_t i = 0; i < pointers.len; i++) {
		struct mark mi = push_index(w, i);
		const char *p = pointers.v[i];

		if (p[0] && p[0] != '/')
			problem(w,
				"\"%s\" is not a JSON pointer (must start "
				"with /)",
				p);
		pop(w, mi);
	}
	pop(w, m);
	if (!pointers.len && !managers.len)
		problem(w, "needs jsonPointers or managers");
	rule.group = group;
	rule.kind = kind;
	rule.ns = ns;
	rule.name = name;
	rule.json_pointers = (const char *const *)pointers.v;
	rule.managers = (const char *const *)managers.v;
	if (app_spec_add_ignore(a, &rule) < 0)
		w->nomem = true;
	free(group);
	free(kind);
	free(ns);
	free(name);
	strvec_release(&pointers);
	strvec_release(&managers);
}

static const char *const decryption_keys[] = {
	"provider", "ageKeyFile", "secretRef", "sopsBin", NULL,
};
static const char *const decryption_local_keys[] = {
	"ageKeyFile", "sopsBin", NULL,
};
static const char *const decryption_object_keys[] = {"secretRef", NULL};
static const char *const decryption_ref_keys[] = {"name", NULL};
static const char *const decryption_providers[] = {"sops", NULL};

/*
 * decryption: {provider: sops, ageKeyFile | secretRef: {name}, sopsBin}
 * (docs/sops.md). The age identities are a file of syncd's own in
 * syncd.yaml, a Secret of the App's namespace in an App object: an App
 * never names syncd's files or programs.
 */
static void walk_decryption(struct walk *w, const json_t *obj,
			    struct app_spec *a)
{
	struct app_decryption *d = &a->decryption;
	int provider = -1;
	json_t *ref;
	struct mark m;

	if (!check_map(w, obj, decryption_keys))
		return;
	if (w->object)
		refuse_keys(w, obj, decryption_local_keys, NOT_IN_OBJECT);
	else
		refuse_keys(w, obj, decryption_object_keys, ONLY_IN_OBJECT);
	required(w, obj, "provider");
	get_enum(w, obj, "provider", decryption_providers, &provider);
	d->sops = provider == 0;
	if (!w->object) {
		required(w, obj, "ageKeyFile");
		spec_file(w, a, obj, "ageKeyFile", &d->age_key_file);
		spec_str(w, a, obj, "sopsBin", &d->sops_bin);
		return;
	}
	required(w, obj, "secretRef");
	if (!(ref = json_object_get(obj, "secretRef")))
		return;
	m = push_key(w, "secretRef");
	if (check_map(w, ref, decryption_ref_keys)) {
		required(w, ref, "name");
		spec_str(w, a, ref, "name", &d->secret_ref);
		if (d->secret_ref && !dns_subdomain(d->secret_ref)) {
			struct mark mn = push_key(w, "name");

			problem(w, "\"%s\" is not a valid Secret name",
				d->secret_ref);
			pop(w, mn);
		}
	}
	pop(w, m);
}

static const char *const app_keys[] = {
	"name",		 "source",	    "render",	   "namespace",
	"prune",	 "pruneAllowKinds", "pruneBudget", "selfHeal",
	"foreignFields", "ignore",	    "verify",	   "dependsOn",
	"serviceAccountName", "createNamespace", "namespaceMetadata",
	"allowEmpty", "onImmutable", "replaceAllowKinds", "deletionPolicy",
	"cluster", "decryption", NULL,
};

static const char *const immutable_names[] = {"report", "replace", NULL};

/* namespaceMetadata: {labels: {K: V}, annotations: {K: V}}, strings. */
static void walk_ns_metadata(struct walk *w, const json_t *obj,
			     struct app_spec *a)
{
	static const char *const keys[] = {"labels", "annotations", NULL};
	const char *key, *k;
	json_t *v, *item;

	if (!check_map(w, obj, keys))
		return;
	json_object_foreach((json_t *)obj, key, v)
	{
		struct mark m = push_key(w, key);

		if (!json_is_object(v)) {
			wrong_type(w, "a mapping", v);
		} else {
			json_object_foreach(v, k, item)
			{
				struct mark mi = push_key(w, k);

				if (!json_is_string(item))
					wrong_type(w, "a string", item);
				else if (!k[0])
					problem(w, "empty name");
				pop(w, mi);
			}
		}
		pop(w, m);
	}
	json_decref(a->namespace_metadata);
	a->namespace_metadata = json_deep_copy(obj);
	if (!a->namespace_metadata)
		w->nomem = true;
}

static const char *const foreign_names[] = {
	"respect",
	"override",
	"report",
	NULL,
};

static void walk_app(struct walk *w, const json_t *obj, struct app_spec *a)
{
	json_t *v, *item;
	int foreign = DIFF_POLICY_RESPECT, verify = APP_VERIFY_DRY_RUN;
	int immutable = 0, deletion = APP_DELETION_ORPHAN;
	struct mark m;
	size_t i;

	app_spec_init(a);
	a->line = w->object ? 0 : line_here(w);
	if (!check_map(w, obj, app_keys))
		return;
	if (w->object) {
		static const char *const name[] = {"name", NULL};

		static const char *const cluster[] = {"cluster", NULL};

		refuse_keys(w, obj, name, "not allowed in an App object "
					  "(its name is metadata.name)");
		refuse_keys(w, obj, cluster,
			    "not allowed in an App object (the clusters "
			    "syncd deploys to are its own configuration)");
		spec_str(w, a, obj, "serviceAccountName",
			 &a->service_account);
		if (a->service_account &&
		    !dns_subdomain(a->service_account)) {
			m = push_key(w, "serviceAccountName");
			problem(w, "\"%s\" is not a valid service account name",
				a->service_account);
			pop(w, m);
		}
	} else {
		static const char *const sa[] = {"serviceAccountName", NULL};

		refuse_keys(w, obj, sa, ONLY_IN_OBJECT);
		spec_str(w, a, obj, "cluster", &a->cluster);
		required(w, obj, "name");
		spec_str(w, a, obj, "name", &a->name);
		check_label(w, "name", a->name);
	}
	required(w, obj, "source");
	if ((v = json_object_get(obj, "source"))) {
		m = push_key(w, "source");
		walk_source(w, v, a);
		pop(w, m);
	}
	m = push_key(w, "render");
	walk_render(w, json_object_get(obj, "render"), a);
	pop(w, m);
	if ((v = json_object_get(obj, "decryption"))) {
		m = push_key(w, "decryption");
		walk_decryption(w, v, a);
		pop(w, m);
	}
	spec_str(w, a, obj, "namespace", &a->namespace);
	check_label(w, "namespace", a->namespace);
	get_bool(w, obj, "prune", &a->prune);
	get_list(w, obj, "pruneAllowKinds", &a->prune_allow_kinds);
	get_list(w, obj, "dependsOn", &a->depends_on);
	get_uint(w, obj, "pruneBudget", &a->prune_budget, 0, 1000000);
	get_bool(w, obj, "selfHeal", &a->self_heal);
	get_bool(w, obj, "createNamespace", &a->create_namespace);
	if ((v = json_object_get(obj, "namespaceMetadata"))) {
		m = push_key(w, "namespaceMetadata");
		walk_ns_metadata(w, v, a);
		pop(w, m);
	}
	get_bool(w, obj, "allowEmpty", &a->allow_empty);
	get_enum(w, obj, "onImmutable", immutable_names, &immutable);
	a->on_immutable_replace = immutable == 1;
	get_list(w, obj, "replaceAllowKinds", &a->replace_allow_kinds);
	get_enum(w, obj, "deletionPolicy", app_deletion_names, &deletion);
	a->deletion = (enum app_deletion)deletion;
	get_enum(w, obj, "foreignFields", foreign_names, &foreign);
	a->foreign_fields = (enum diff_policy)foreign;
	/* YAML 1.1 reads a bare `off` as false: it means off all the same. */
	if (json_is_boolean(v = json_object_get(obj, "verify")))
		verify = json_is_true(v) ? APP_VERIFY_DRY_RUN : APP_VERIFY_OFF;
	else
		get_enum(w, obj, "verify", app_verify_names, &verify);
	a->verify = (enum app_verify)verify;
	if (!(v = json_object_get(obj, "ignore")))
		return;
	m = push_key(w, "ignore");
	if (!json_is_array(v)) {
		wrong_type(w, "a list", v);
		pop(w, m);
		return;
	}
	json_array_foreach(v, i, item)
	{
		struct mark mi = push_index(w, i);

		walk_ignore(w, item, a);
		pop(w, mi);
	}
	pop(w, m);
}

/* The index of app `name` in c->apps, or -1. */
static long app_index(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->napps; i++)
		if (c->apps[i].name && !strcmp(c->apps[i].name, name))
			return (long)i;
	return -1;
}

/*
 * Depth-first from app i along dependsOn: 1 when it comes back to `start`
 * (the path is then in `path`, "a -> b -> a"), 0 otherwise. `state`: 0
 * unvisited, 1 on the path, 2 done.
 */
static int find_cycle(const struct config *c, size_t start, size_t i,
		      unsigned char *state, struct buf *path)
{
	const struct strvec *deps = &c->apps[i].depends_on;
	size_t mark = path->len;

	buf_addf(path, "%s%s", path->len ? " -> " : "", c->apps[i].name);
	state[i] = 1;
	for (size_t j = 0; j < deps->len; j++) {
		long k = app_index(c, deps->v[j]);

		if (k < 0)
			continue;
		if ((size_t)k == start) {
			buf_addf(path, " -> %s", c->apps[k].name);
			return 1;
		}
		if (!state[k] && find_cycle(c, start, (size_t)k, state, path))
			return 1;
	}
	state[i] = 2;
	buf_truncate(path, mark);
	return 0;
}

/*
 * dependsOn names apps of this file and makes no cycle; each problem at
 * the line of the entry at fault (the first app of a cycle names it).
 */
static void check_depends(struct walk *w, const struct config *c,
			  const json_t *names)
{
	unsigned char *state = calloc(c->napps + 1, 1);
	bool *in_cycle = calloc(c->napps + 1, sizeof(bool));
	struct buf path = BUF_INIT;

	if (!state || !in_cycle) {
		w->nomem = true;
		goto out;
	}
	for (size_t i = 0; i < c->napps; i++) {
		const struct strvec *deps = &c->apps[i].depends_on;
		struct mark mi = push_index(w, i), md = push_key(w, "dependsOn");

		for (size_t j = 0; j < deps->len; j++) {
			struct mark mj = push_index(w, j);

			if (!json_object_get(names, deps->v[j]))
				problem(w, "unknown app \"%s\"", deps->v[j]);
			pop(w, mj);
		}
		memset(state, 0, c->napps);
		buf_reset(&path);
		if (deps->len && !in_cycle[i] && c->apps[i].name &&
		    find_cycle(c, i, i, state, &path)) {
			/* Report a cycle once, at its first app. */
			for (size_t k = 0; k < c->napps; k++)
				if (state[k] == 1)
					in_cycle[k] = true;
			problem(w, "a cycle: %s", buf_cstr(&path));
		}
		pop(w, md);
		pop(w, mi);
	}
out:
	free(state);
	free(in_cycle);
	buf_release(&path);
}

static const char *const top_keys[] = {
	"resync",   "relist", "workers", "fieldManager", "kubeconfig", "context",
	"cacheDir", "qps",     "burst",	       "watch",	     "log",
	"listen",   "apps",    "fightDetection", "api", "webhook",
	"leaderElection", "events", "health", "appObjects", "clusters", NULL,
};
static const char *const cluster_keys[] = {
	"name", "kubeconfig", "context", "kubeconfigSecret", NULL,
};
static const char *const cluster_secret_keys[] = {
	"namespace", "name", "key", NULL,
};

/* Most clusters one syncd serves. */
#define CONFIG_MAX_CLUSTERS 64

static void walk_cluster(struct walk *w, const json_t *obj,
			 struct config_cluster *cl)
{
	const json_t *sec;

	if (!check_map(w, obj, cluster_keys))
		return;
	required(w, obj, "name");
	get_str(w, obj, "name", &cl->name);
	check_label(w, "name", cl->name);
	if (cl->name && !strcmp(cl->name, CONFIG_HOME_CLUSTER)) {
		struct mark m = push_key(w, "name");

		problem(w, "\"%s\" is the cluster syncd runs against "
			   "(kubeconfig and context at the top)",
			CONFIG_HOME_CLUSTER);
		pop(w, m);
	}
	get_file(w, obj, "kubeconfig", &cl->kubeconfig);
	get_str(w, obj, "context", &cl->context);
	if ((sec = json_object_get(obj, "kubeconfigSecret"))) {
		struct mark m = push_key(w, "kubeconfigSecret");

		if (check_map(w, sec, cluster_secret_keys)) {
			required(w, sec, "namespace");
			required(w, sec, "name");
			get_str(w, sec, "namespace", &cl->secret_ns);
			get_str(w, sec, "name", &cl->secret_name);
			get_str(w, sec, "key", &cl->secret_key);
			check_label(w, "namespace", cl->secret_ns);
		}
		pop(w, m);
	}
	if (!!cl->kubeconfig == !!sec)
		problem(w, "wants one of kubeconfig or kubeconfigSecret");
}

static void walk_clusters(struct walk *w, const json_t *v, struct config *c)
{
	struct mark m = push_key(w, "clusters");
	const json_t *item;
	size_t i;

	if (!json_is_array(v)) {
		wrong_type(w, "a list", v);
	} else if (json_array_size(v) > CONFIG_MAX_CLUSTERS) {
		problem(w, "more than %u clusters", CONFIG_MAX_CLUSTERS);
	} else if (!(c->clusters = calloc(json_array_size(v) + 1,
					  sizeof(*c->clusters)))) {
		w->nomem = true;
	} else {
		json_array_foreach(v, i, item)
		{
			struct mark mi = push_index(w, i);
			struct config_cluster *cl = &c->clusters[c->nclusters++];

			walk_cluster(w, item, cl);
			for (size_t j = 0; cl->name && j + 1 < c->nclusters;
			     j++)
				if (c->clusters[j].name &&
				    !strcmp(c->clusters[j].name, cl->name))
					problem(w, "duplicate cluster name "
						   "\"%s\"",
						cl->name);
			pop(w, mi);
		}
	}
	pop(w, m);
}

/* Every app's cluster is one of `clusters:`. */
static void check_clusters(struct walk *w, const struct config *c,
			   const struct app_spec *a)
{
	if (!a->cluster || !strcmp(a->cluster, CONFIG_HOME_CLUSTER))
		return;
	for (size_t i = 0; i < c->nclusters; i++)
		if (c->clusters[i].name && !strcmp(c->clusters[i].name,
						   a->cluster))
			return;
	struct mark m = push_key(w, "cluster");
	problem(w, "\"%s\" is not among clusters:", a->cluster);
	pop(w, m);
}
static const char *const objects_keys[] = {
	"enabled", "namespaces", "clusterWide", "targets", NULL,
};
static const char *const api_keys[] = {
	"tokenFile",
	NULL,
};
static const char *const webhook_keys[] = {
	"githubSecretFile",
	"gitlabTokenFile",
	NULL,
};
static const char *const leader_keys[] = {
	"enabled",	 "namespace",	  "leaseName",
	"leaseDuration", "renewDeadline", "retryPeriod",
	NULL,
};
static const char *const fight_keys[] = {
	"changes",
	"window",
	NULL,
};
static const char *const log_keys[] = {
	"format",
	"level",
	NULL,
};
static const char *const log_formats[] = {
	"logfmt",
	"json",
	NULL,
};
static const char *const log_levels[] = {
	"debug", "info", "warn", "error", NULL,
};

/* "[host]:port" with a port in 1..65535. */
static bool listen_ok(const char *s)
{
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (!colon || !colon[1])
		return false;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	return !errno && !*end && port >= 0 && port <= 65535 &&
	       isdigit((unsigned char)colon[1]);
}

/*
 * health: per-kind health rules (docs/health.md), a list. A bad rule is
 * reported at the line of the value at fault: health_rules_add() says
 * where inside the rule, as a JSON pointer.
 */
static void walk_health(struct walk *w, const json_t *v, struct config *c)
{
	struct mark m = push_key(w, "health"), mi;
	const json_t *rule;
	size_t i;

	if (!json_is_array(v)) {
		wrong_type(w, "a list of rules", v);
		goto out;
	}
	if (!c->health && !(c->health = health_rules_new())) {
		w->nomem = true;
		goto out;
	}
	json_array_foreach(v, i, rule)
	{
		struct err e = ERR_INIT;
		char *where = NULL, *seg, *save = NULL;
		int error;

		mi = push_index(w, i);
		error = health_rules_add(c->health, rule, &where, &e);
		if (error == ERR_NOMEM) {
			w->nomem = true;
		} else if (error < 0) {
			/* "/fields/0/path": down to the value at fault. */
			for (seg = where ? strtok_r(where, "/", &save) : NULL;
			     seg; seg = strtok_r(NULL, "/", &save)) {
				char *end;
				unsigned long n = strtoul(seg, &end, 10);

				if (*seg && !*end)
					push_index(w, n);
				else
					push_key(w, seg);
			}
			problem(w, "%s", err_first(&e));
		}
		free(where);
		err_release(&e);
		pop(w, mi);
	}
out:
	pop(w, m);
}

/* A list of namespace names, each checked. */
static void get_namespaces(struct walk *w, const json_t *obj, const char *key,
			   struct strvec *dst)
{
	struct mark m;

	get_list(w, obj, key, dst);
	m = push_key(w, key);
	for (size_t i = 0; i < dst->len; i++) {
		struct mark mi = push_index(w, i);

		if (!diff_dns_label(dst->v[i], 63))
			problem(w, "\"%s\" is not a namespace name",
				dst->v[i]);
		pop(w, mi);
	}
	pop(w, m);
}

/* targets: {NS: [NS...]}, kept as "NS=OTHER" pairs. */
static void walk_targets(struct walk *w, const json_t *targets,
			 struct config *c)
{
	struct buf pair = BUF_INIT;
	const json_t *list;
	const char *ns;

	if (!json_is_object(targets)) {
		wrong_type(w, "a mapping of namespace to namespaces", targets);
		return;
	}
	json_object_foreach((json_t *)targets, ns, list)
	{
		struct strvec l = STRVEC_INIT;

		if (!diff_dns_label(ns, 63)) {
			struct mark mk = push_key(w, ns);

			problem(w, "\"%s\" is not a namespace name", ns);
			pop(w, mk);
			continue;
		}
		get_namespaces(w, targets, ns, &l);
		for (size_t i = 0; i < l.len; i++) {
			buf_reset(&pair);
			if (buf_addf(&pair, "%s=%s", ns, l.v[i]) < 0 ||
			    strvec_push(&c->objects.targets,
					buf_cstr(&pair)) < 0)
				w->nomem = true;
		}
		strvec_release(&l);
	}
	buf_release(&pair);
}

/*
 * appObjects: {enabled, namespaces, clusterWide, targets}
 * (docs/app-crd.md); present means enabled unless it says otherwise.
 */
static void walk_objects(struct walk *w, const json_t *v, struct config *c)
{
	struct mark m = push_key(w, "appObjects");
	const json_t *targets;

	if (check_map(w, v, objects_keys)) {
		c->objects.enabled = true;
		get_bool(w, v, "enabled", &c->objects.enabled);
		get_namespaces(w, v, "namespaces", &c->objects.namespaces);
		get_namespaces(w, v, "clusterWide", &c->objects.cluster_wide);
		if ((targets = json_object_get(v, "targets"))) {
			struct mark mt = push_key(w, "targets");

			walk_targets(w, targets, c);
			pop(w, mt);
		}
	}
	pop(w, m);
}

static void walk_top(struct walk *w, const json_t *root, struct config *c)
{
	json_t *v, *item, *names;
	int fmt = LOG_FORMAT_LOGFMT, lvl = LOG_INFO;
	size_t i;
	struct mark m;

	if (!check_map(w, root, top_keys))
		return;
	get_duration(w, root, "resync", &c->resync_ms, 1000);
	get_duration(w, root, "relist", &c->relist_ms, 1000);
	get_uint(w, root, "workers", &c->workers, 1, 256);
	get_str(w, root, "fieldManager", &c->field_manager);
	get_file(w, root, "kubeconfig", &c->kubeconfig);
	get_str(w, root, "context", &c->context);
	get_file(w, root, "cacheDir", &c->cache_dir);
	get_qps(w, root, "qps", &c->qps);
	get_uint(w, root, "burst", &c->burst, 1, 1000000);
	get_bool(w, root, "watch", &c->watch);
	if ((v = json_object_get(root, "log"))) {
		m = push_key(w, "log");
		if (check_map(w, v, log_keys)) {
			get_enum(w, v, "format", log_formats, &fmt);
			get_enum(w, v, "level", log_levels, &lvl);
		}
		pop(w, m);
	}
	c->log_format = (enum log_format)fmt;
	c->log_level = (enum log_level)lvl;
	if ((v = json_object_get(root, "api"))) {
		m = push_key(w, "api");
		if (check_map(w, v, api_keys))
			get_file(w, v, "tokenFile", &c->api_token_file);
		pop(w, m);
	}
	if ((v = json_object_get(root, "webhook"))) {
		m = push_key(w, "webhook");
		if (check_map(w, v, webhook_keys)) {
			get_file(w, v, "githubSecretFile",
				 &c->github_secret_file);
			get_file(w, v, "gitlabTokenFile",
				 &c->gitlab_token_file);
		}
		pop(w, m);
	}
	get_bool(w, root, "events", &c->events);
	if ((v = json_object_get(root, "clusters")))
		walk_clusters(w, v, c);
	if ((v = json_object_get(root, "appObjects")))
		walk_objects(w, v, c);
	if ((v = json_object_get(root, "health")))
		walk_health(w, v, c);
	/* leaderElection: true, or a mapping with the details. */
	if ((v = json_object_get(root, "leaderElection"))) {
		if (json_is_boolean(v)) {
			c->leader.enabled = json_is_true(v);
		} else {
			m = push_key(w, "leaderElection");
			if (check_map(w, v, leader_keys)) {
				c->leader.enabled = true;
				get_bool(w, v, "enabled", &c->leader.enabled);
				get_str(w, v, "namespace",
					&c->leader.namespace);
				get_str(w, v, "leaseName", &c->leader.name);
				get_duration(w, v, "leaseDuration",
					     &c->leader.lease_ms, 1000);
				get_duration(w, v, "renewDeadline",
					     &c->leader.renew_ms, 100);
				get_duration(w, v, "retryPeriod",
					     &c->leader.retry_ms, 100);
				if (c->leader.renew_ms >= c->leader.lease_ms ||
				    c->leader.retry_ms >= c->leader.renew_ms)
					problem(w, "want retryPeriod < "
						   "renewDeadline < "
						   "leaseDuration");
			}
			pop(w, m);
		}
	}
	if ((v = json_object_get(root, "fightDetection"))) {
		m = push_key(w, "fightDetection");
		if (check_map(w, v, fight_keys)) {
			get_uint(w, v, "changes", &c->fight_changes, 0, 1000);
			get_duration(w, v, "window", &c->fight_window_ms, 1000);
		}
		pop(w, m);
	}
	get_str(w, root, "listen", &c->listen);
	if (c->listen && !listen_ok(c->listen)) {
		m = push_key(w, "listen");
		problem(w, "\"%s\" is not [HOST]:PORT", c->listen);
		pop(w, m);
	}
	if (!(v = json_object_get(root, "apps")))
		return;
	m = push_key(w, "apps");
	if (!json_is_array(v)) {
		wrong_type(w, "a list", v);
		pop(w, m);
		return;
	}
	if (json_array_size(v) > CONFIG_MAX_APPS) {
		problem(w, "more than %u apps", CONFIG_MAX_APPS);
		pop(w, m);
		return;
	}
	c->apps = calloc(json_array_size(v) + 1, sizeof(*c->apps));
	names = json_object();
	if (!c->apps || !names) {
		w->nomem = true;
		json_decref(names);
		pop(w, m);
		return;
	}
	json_array_foreach(v, i, item)
	{
		struct mark mi = push_index(w, i);
		struct app_spec *a = &c->apps[c->napps++];
		json_t *first;

		walk_app(w, item, a);
		check_clusters(w, c, a);
		a->raw = json_incref(item);
		if (a->name && (first = json_object_get(names, a->name))) {
			struct mark mn = push_key(w, "name");

			problem(w,
				"duplicate app name \"%s\" (first at line "
				"%" JSON_INTEGER_FORMAT ")",
				a->name, json_integer_value(first));
			pop(w, mn);
		} else if (a->name) {
			struct mark mn = push_key(w, "name");

			if (json_object_set_new(names, a->name,
						json_integer(line_here(w))) < 0)
				w->nomem = true;
			pop(w, mn);
		}
		pop(w, mi);
	}
	check_depends(w, c, names);
	json_decref(names);
	pop(w, m);
}

void config_free(struct config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->napps; i++)
		app_spec_release(&cfg->apps[i]);
	free(cfg->apps);
	for (size_t i = 0; i < cfg->nclusters; i++) {
		free(cfg->clusters[i].name);
		free(cfg->clusters[i].kubeconfig);
		free(cfg->clusters[i].context);
		free(cfg->clusters[i].secret_ns);
		free(cfg->clusters[i].secret_name);
		free(cfg->clusters[i].secret_key);
	}
	free(cfg->clusters);
	health_rules_free(cfg->health);
	strvec_release(&cfg->objects.namespaces);
	strvec_release(&cfg->objects.cluster_wide);
	strvec_release(&cfg->objects.targets);
	free(cfg->path);
	free(cfg->field_manager);
	free(cfg->kubeconfig);
	free(cfg->context);
	free(cfg->cache_dir);
	free(cfg->listen);
	free(cfg->api_token_file);
	free(cfg->github_secret_file);
	free(cfg->gitlab_token_file);
	free(cfg->leader.namespace);
	free(cfg->leader.name);
	json_decref(cfg->raw_globals);
	free(cfg);
}

int config_load(struct config **out, const char *path, struct err *err)
{
	struct buf data = BUF_INIT;
	struct render_docs docs = RENDER_DOCS_INIT;
	struct walk w;
	struct config *c = NULL;
	json_t *empty = NULL;
	const json_t *root;
	char *dir = NULL, *slash;
	int error;

	*out = NULL;
	memset(&w, 0, sizeof(w));
	if ((error = file_read(&data, path, path, CONFIG_MAX_FILE_SIZE,
				      err)) < 0)
		goto out;
	if ((error = render_parse(&docs, buf_cstr(&data), data.len, path,
				  err)) < 0)
		goto out;
	if (docs.len > 1) {
		error = err_set(err, ERR_INVALID,
				"%s:%u: more than one "
				"document",
				path, docs.items[1].line);
		goto out;
	}
	if ((error = render_yaml_lines(&w.lines, buf_cstr(&data), data.len,
				       path, err)) < 0)
		goto out;
	if (!(dir = strdup(path)) || !(c = calloc(1, sizeof(*c))) ||
	    !(c->path = strdup(path)) || !(empty = json_object())) {
		error = err_set(err, ERR_NOMEM, "%s: out of memory", path);
		goto out;
	}
	slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir ? 1 : 0] = '\0';
	else
		dir[0] = '\0';
	w.file = path;
	w.dir = dir;
	w.err = err;
	c->resync_ms = 3 * 60 * 1000;
	c->relist_ms = 60 * 60 * 1000;
	c->workers = 2;
	c->qps = 50;
	c->burst = 100;
	c->watch = true;
	c->fight_changes = 3;
	c->fight_window_ms = 10 * 60 * 1000;
	c->events = true;
	/* client-go's defaults. */
	c->leader.lease_ms = 15000;
	c->leader.renew_ms = 10000;
	c->leader.retry_ms = 2000;
	c->log_format = LOG_FORMAT_LOGFMT;
	c->log_level = LOG_INFO;
	/* An empty file is a config with every default and no apps. */
	root = docs.len ? docs.items[0].value : empty;
	walk_top(&w, root, c);
	/* What a reload compares: the top level without the apps. */
	if (!w.nomem && json_is_object(root)) {
		if (!(c->raw_globals = json_copy((json_t *)root)))
			w.nomem = true;
		else
			json_object_del(c->raw_globals, "apps");
	}
	if (!w.nomem && !c->field_manager &&
	    !(c->field_manager = strdup("syncd")))
		w.nomem = true;
	if (!w.nomem && !c->listen && !(c->listen = strdup(":8080")))
		w.nomem = true;
	if (w.nomem) {
		error = err_set(err, ERR_NOMEM, "%s: out of memory", path);
		goto out;
	}
	if (w.nproblems) {
		qsort(w.problems, w.nproblems, sizeof(*w.problems),
		      problem_cmp);
		for (size_t i = 0; i < w.nproblems; i++)
			err_set(err, ERR_INVALID, "%s", w.problems[i].text);
		error = ERR_INVALID;
		goto out;
	}
	*out = c;
	c = NULL;
	error = 0;
out:
	config_free(c);
	json_decref(empty);
	json_decref(w.lines);
	for (size_t i = 0; i < w.nproblems; i++)
		free(w.problems[i].text);
	free(w.problems);
	free(dir);
	render_docs_release(&docs);
	buf_release(&data);
	return error;
}

static bool same_json(const json_t *a, const json_t *b)
{
	if (!a || !b)
		return !a && !b;
	return json_equal((json_t *)a, (json_t *)b);
}

bool config_same_globals(const struct config *a, const struct config *b)
{
	return !strcmp(a->path, b->path) &&
	       same_json(a->raw_globals, b->raw_globals);
}

bool config_same_app(const struct app_spec *a, const struct app_spec *b)
{
	return same_json(a->raw, b->raw);
}

int config_app_from_object(struct app_spec *out, const json_t *obj,
			   struct err *err)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));
	const json_t *spec = json_object_get(obj, "spec");
	json_t *gen = json_object_get(meta, "generation");
	struct walk w;
	struct buf file = BUF_INIT;
	int error = 0;

	app_spec_init(out);
	if (!ns || !name)
		return err_set(err, ERR_INVALID,
			       "App: no metadata.namespace or metadata.name");
	memset(&w, 0, sizeof(w));
	buf_addf(&file, "App %s/%s", ns, name);
	w.file = buf_cstr(&file);
	w.dir = "";
	w.err = err;
	w.object = true;
	if (!diff_dns_label(name, 63)) {
		struct mark m = push_key(&w, "metadata");

		push_key(&w, "name");
		problem(&w,
			"\"%s\" is not a DNS label (lower case letters, "
			"digits and '-', at most 63): apps are named so",
			name);
		pop(&w, m);
	}
	if (!spec) {
		struct mark m = push_key(&w, "spec");

		problem(&w, "required");
		pop(&w, m);
	} else {
		struct mark m = push_key(&w, "spec");

		walk_app(&w, spec, out);
		pop(&w, m);
	}
	if (!w.nproblems && !w.nomem &&
	    (app_spec_set(out, &out->name, name) < 0 ||
	     app_spec_set(out, &out->object_ns, ns) < 0 ||
	     (!out->namespace &&
	      app_spec_set(out, &out->namespace, ns) < 0) ||
	     !(out->raw = json_pack("{s:s, s:s, s:O, s:O}", "namespace", ns,
				    "name", name, "generation",
				    gen ? gen : json_null(), "spec", spec))))
		w.nomem = true;
	out->object_generation = json_integer_value(gen);
	if (w.nomem) {
		error = err_set(err, ERR_NOMEM, "%s: out of memory", w.file);
	} else if (w.nproblems) {
		qsort(w.problems, w.nproblems, sizeof(*w.problems),
		      problem_cmp);
		for (size_t i = 0; i < w.nproblems; i++)
			err_set(err, ERR_INVALID, "%s", w.problems[i].text);
		error = ERR_INVALID;
	}
	for (size_t i = 0; i < w.nproblems; i++)
		free(w.problems[i].text);
	free(w.problems);
	buf_release(&file);
	if (error < 0)
		app_spec_release(out);
	return error;
}

bool config_object_may_manage(const struct config *cfg, const char *app_ns,
			      const char *ns)
{
	struct buf pair = BUF_INIT;
	bool ok;

	if (strvec_has(&cfg->objects.cluster_wide, app_ns))
		return true;
	if (!ns)
		return false;
	if (!strcmp(ns, app_ns))
		return true;
	buf_addf(&pair, "%s=%s", app_ns, ns);
	ok = strvec_has(&cfg->objects.targets, buf_cstr(&pair));
	buf_release(&pair);
	return ok;
}
