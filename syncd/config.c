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

#include "syncd/config.h"
#include "util/buf.h"
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

int config_parse_duration(const char *s, uint64_t *ms)
{
	uint64_t total = 0;

	if (!s || !*s)
		return ERR_INVALID;
	if (!strcmp(s, "0")) {
		*ms = 0;
		return 0;
	}
	while (*s) {
		uint64_t n = 0, unit;
		const char *start = s;

		while (isdigit((unsigned char)*s)) {
			if (n > UINT64_MAX / 10 - 10)
				return ERR_INVALID;
			n = n * 10 + (uint64_t)(*s++ - '0');
		}
		if (s == start)
			return ERR_INVALID;
		if (!strncmp(s, "ms", 2)) {
			unit = 1;
			s += 2;
		} else if (*s == 's') {
			unit = 1000;
			s++;
		} else if (*s == 'm') {
			unit = 60 * 1000;
			s++;
		} else if (*s == 'h') {
			unit = 3600 * 1000;
			s++;
		} else {
			return ERR_INVALID;
		}
		/* A year is far more than any period here needs. */
		if (n > 366ull * 24 * 3600 * 1000 / unit)
			return ERR_INVALID;
		total += n * unit;
		if (total > 366ull * 24 * 3600 * 1000)
			return ERR_INVALID;
	}
	*ms = total;
	return 0;
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
	else if (config_parse_duration(json_string_value(v), &ms) < 0)
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

static void list_release(struct config_list *l)
{
	if (l->v)
		for (size_t i = 0; i < l->len; i++)
			free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->len = 0;
}

/* A list of non-empty strings; absent means empty. */
static void get_list(struct walk *w, const json_t *obj, const char *key,
		     struct config_list *dst)
{
	json_t *v = json_object_get(obj, key);
	struct mark m;
	size_t i;
	json_t *item;

	if (!dst->v && !(dst->v = calloc(1, sizeof(char *)))) {
		w->nomem = true;
		return;
	}
	if (!v)
		return;
	m = push_key(w, key);
	if (!json_is_array(v)) {
		wrong_type(w, "a list", v);
		pop(w, m);
		return;
	}
	list_release(dst);
	dst->v = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!dst->v) {
		w->nomem = true;
		pop(w, m);
		return;
	}
	json_array_foreach(v, i, item)
	{
		struct mark mi = push_index(w, i);

		if (!json_is_string(item))
			wrong_type(w, "a string", item);
		else if (!json_string_length(item) && !w->allow_empty)
			problem(w, "must not be empty");
		else
			dst->v[dst->len++] =
				dup_str(w, json_string_value(item));
		pop(w, mi);
	}
	pop(w, m);
}

static void list_files(struct walk *w, struct config_list *l)
{
	for (size_t i = 0; i < l->len && w->dir[0]; i++) {
		char *j;

		if (!l->v[i] || l->v[i][0] == '/')
			continue;
		if (asprintf(&j, "%s/%s", w->dir, l->v[i]) < 0) {
			w->nomem = true;
			return;
		}
		free(l->v[i]);
		l->v[i] = j;
	}
}

static void map_release(struct config_map *mp)
{
	for (size_t i = 0; i < mp->len; i++) {
		free(mp->names[i]);
		free(mp->values[i]);
	}
	free(mp->names);
	free(mp->values);
	memset(mp, 0, sizeof(*mp));
}

/* A mapping of names to scalars; numbers and booleans become text. */
static void get_map(struct walk *w, const json_t *obj, const char *key,
		    struct config_map *dst)
{
	json_t *v = json_object_get(obj, key);
	const char *name;
	json_t *item;
	struct mark m;
	size_t n;

	if (!v)
		return;
	m = push_key(w, key);
	if (!json_is_object(v)) {
		wrong_type(w, "a mapping", v);
		pop(w, m);
		return;
	}
	n = json_object_size(v);
	dst->names = calloc(n + 1, sizeof(char *));
	dst->values = calloc(n + 1, sizeof(char *));
	if (!dst->names || !dst->values) {
		w->nomem = true;
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
			dst->names[dst->len] = dup_str(w, name);
			dst->values[dst->len] = dup_str(w, s);
			dst->len++;
		}
		pop(w, mi);
	}
	pop(w, m);
}

/* RFC 1123 label, as Kubernetes checks names of namespaces. */
static bool dns_label(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) &&
		    !isdigit((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

static void check_label(struct walk *w, const char *key, const char *value)
{
	struct mark m;

	if (!value || dns_label(value))
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

static const char *const source_keys[] = {
	"repo",
	"revision",
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
	NULL,
};

static const char *const verify_keys[] = {
	"allowedSignersFile",
	"gpgKeyringFile",
	NULL,
};

static void walk_source(struct walk *w, const json_t *obj,
			struct config_source *s)
{
	json_t *verify;

	if (!check_map(w, obj, source_keys))
		return;
	required(w, obj, "repo");
	get_str(w, obj, "repo", &s->repo);
	get_str(w, obj, "revision", &s->revision);
	get_str(w, obj, "path", &s->path);
	get_duration(w, obj, "interval", &s->interval_ms, 1000);
	get_str(w, obj, "username", &s->username);
	get_file(w, obj, "usernameFile", &s->username_file);
	get_file(w, obj, "passwordFile", &s->password_file);
	get_str(w, obj, "passwordEnv", &s->password_env);
	get_file(w, obj, "tokenFile", &s->token_file);
	get_str(w, obj, "tokenEnv", &s->token_env);
	get_file(w, obj, "caFile", &s->ca_file);
	get_file(w, obj, "sshKeyFile", &s->ssh_key_file);
	get_file(w, obj, "sshPassphraseFile", &s->ssh_passphrase_file);
	get_file(w, obj, "knownHostsFile", &s->known_hosts_file);
	if ((verify = json_object_get(obj, "verifySignatures"))) {
		struct mark m = push_key(w, "verifySignatures");

		if (check_map(w, verify, verify_keys)) {
			get_file(w, verify, "allowedSignersFile",
				 &s->allowed_signers_file);
			get_file(w, verify, "gpgKeyringFile",
				 &s->gpg_keyring_file);
			if (!s->allowed_signers_file && !s->gpg_keyring_file)
				problem(w, "needs allowedSignersFile or "
					   "gpgKeyringFile");
		}
		pop(w, m);
	}
	if (s->password_file && s->password_env) {
		struct mark m = push_key(w, "passwordEnv");

		problem(w, "conflicts with passwordFile");
		pop(w, m);
	}
	if (s->token_file && s->token_env) {
		struct mark m = push_key(w, "tokenEnv");

		problem(w, "conflicts with tokenFile");
		pop(w, m);
	}
}

static const char *const render_keys[] = {
	"type",	  "timeout", "directory", "helm",	"jsonnet",
	"plugin", "vars",    "varsFiles", "substitute", NULL,
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
static const char *const helm_keys[] = {
	"release", "values", "set", "includeCrds", "kubeVersion", NULL,
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
				   const struct config_render *r,
				   enum render_kind kind)
{
	const json_t *v = json_object_get(obj, key);
	struct mark m;
	bool ok;

	if (!v)
		return NULL;
	m = push_key(w, key);
	ok = check_map(w, v, keys);
	if (ok && r->type != RENDER_AUTO && r->type != kind) {
		problem(w, "only used with type %s", render_types[kind]);
		ok = false;
	}
	pop(w, m);
	return ok ? v : NULL;
}

static void walk_render(struct walk *w, const json_t *obj,
			struct config_render *r)
{
	const json_t *b;
	int type = RENDER_AUTO, subst = RENDER_SUBST_STRICT;
	struct mark m;

	if (obj && !check_map(w, obj, render_keys))
		obj = NULL;
	if (!obj)
		obj = json_object(); /* read defaults from an empty block */
	else
		json_incref((json_t *)obj);
	if (!obj) {
		w->nomem = true;
		return;
	}
	get_enum(w, obj, "type", render_types, &type);
	r->type = (enum render_kind)type;
	get_duration(w, obj, "timeout", &r->timeout_ms, 1000);
	b = options_block(w, obj, "directory", dir_keys, r, RENDER_DIRECTORY);
	m = push_key(w, "directory");
	get_list(w, b, "include", &r->include);
	get_list(w, b, "exclude", &r->exclude);
	get_bool(w, b, "recurse", &r->recurse);
	pop(w, m);
	b = options_block(w, obj, "helm", helm_keys, r, RENDER_HELM);
	m = push_key(w, "helm");
	get_str(w, b, "release", &r->helm_release);
	if (r->helm_release) {
		struct err why = ERR_INIT;

		if (render_helm_check_release(r->helm_release, &why) < 0) {
			struct mark mr = push_key(w, "release");

			problem(w, "%s", err_first(&why));
			pop(w, mr);
		}
		err_release(&why);
	}
	get_list(w, b, "values", &r->helm_values);
	get_map(w, b, "set", &r->helm_set);
	get_bool(w, b, "includeCrds", &r->helm_include_crds);
	get_str(w, b, "kubeVersion", &r->helm_kube_version);
	pop(w, m);
	b = options_block(w, obj, "jsonnet", jsonnet_keys, r, RENDER_JSONNET);
	m = push_key(w, "jsonnet");
	get_str(w, b, "file", &r->jsonnet_file);
	get_map(w, b, "extVars", &r->jsonnet_ext_vars);
	get_map(w, b, "extCode", &r->jsonnet_ext_code);
	get_map(w, b, "tlas", &r->jsonnet_tlas);
	get_map(w, b, "tlaCode", &r->jsonnet_tla_code);
	get_list(w, b, "jpath", &r->jsonnet_jpath);
	pop(w, m);
	b = options_block(w, obj, "plugin", plugin_keys, r, RENDER_EXEC);
	m = push_key(w, "plugin");
	get_str(w, b, "command", &r->plugin_command);
	get_list(w, b, "args", &r->plugin_args);
	get_map(w, b, "env", &r->plugin_env);
	pop(w, m);
	if (r->type == RENDER_EXEC && !r->plugin_command) {
		m = push_key(w, "plugin");
		push_key(w, "command");
		problem(w, "required with type exec");
		pop(w, m);
	}
	get_map(w, obj, "vars", &r->vars);
	get_list(w, obj, "varsFiles", &r->vars_files);
	list_files(w, &r->vars_files);
	/*
	 * As on the command line, substitution is on (strict) by default
	 * only when there are variables. YAML 1.1 reads a bare `off` as
	 * false; take it as meant.
	 */
	if (!r->vars.len && !r->vars_files.len)
		subst = RENDER_SUBST_OFF;
	if (json_is_false(json_object_get(obj, "substitute")))
		subst = RENDER_SUBST_OFF;
	else
		get_enum(w, obj, "substitute", subst_names, &subst);
	r->substitute = (enum render_subst_mode)subst;
	json_decref((json_t *)obj);
}

static const char *const ignore_keys[] = {
	"group", "kind", "namespace", "name", "jsonPointers", "managers", NULL,
};

static void walk_ignore(struct walk *w, const json_t *obj,
			struct config_ignore *ig)
{
	struct mark m;

	get_list(w, NULL, "jsonPointers", &ig->json_pointers);
	get_list(w, NULL, "managers", &ig->managers);
	if (!check_map(w, obj, ignore_keys))
		return;
	w->allow_empty = true;
	get_str(w, obj, "group", &ig->group);
	get_str(w, obj, "kind", &ig->kind);
	get_str(w, obj, "namespace", &ig->namespace);
	get_str(w, obj, "name", &ig->name);
	get_list(w, obj, "jsonPointers", &ig->json_pointers);
	get_list(w, obj, "managers", &ig->managers);
	w->allow_empty = false;
	m = push_key(w, "jsonPointers");
	for (size_t i = 0; i < ig->json_pointers.len; i++) {
		struct mark mi = push_index(w, i);
		const char *p = ig->json_pointers.v[i];

		if (p && p[0] && p[0] != '/')
			problem(w,
				"\"%s\" is not a JSON pointer (must start "
				"with /)",
				p);
		pop(w, mi);
	}
	pop(w, m);
	if (!ig->json_pointers.len && !ig->managers.len)
		problem(w, "needs jsonPointers or managers");
}

static const char *const app_keys[] = {
	"name",		 "source",	    "render",	   "namespace",
	"prune",	 "pruneAllowKinds", "pruneBudget", "selfHeal",
	"foreignFields", "ignore",	    NULL,
};
static const char *const foreign_names[] = {
	"respect",
	"override",
	"report",
	NULL,
};

static void app_defaults(struct config_app *a)
{
	a->source.interval_ms = 60 * 1000;
	a->render.recurse = true;
	a->render.substitute = RENDER_SUBST_OFF;
	a->prune_budget = 50;
	a->self_heal = true;
	a->foreign_fields = CONFIG_FOREIGN_RESPECT;
}

static void walk_app(struct walk *w, const json_t *obj, struct config_app *a)
{
	json_t *v, *item;
	int foreign = CONFIG_FOREIGN_RESPECT;
	struct mark m;
	size_t i;

	app_defaults(a);
	a->line = line_here(w);
	get_list(w, NULL, "pruneAllowKinds", &a->prune_allow_kinds);
	if (!check_map(w, obj, app_keys)) {
		walk_render(w, NULL, &a->render);
		return;
	}
	required(w, obj, "name");
	required(w, obj, "source");
	get_str(w, obj, "name", &a->name);
	check_label(w, "name", a->name);
	if ((v = json_object_get(obj, "source"))) {
		m = push_key(w, "source");
		walk_source(w, v, &a->source);
		pop(w, m);
	}
	m = push_key(w, "render");
	walk_render(w, json_object_get(obj, "render"), &a->render);
	pop(w, m);
	get_str(w, obj, "namespace", &a->namespace);
	check_label(w, "namespace", a->namespace);
	get_bool(w, obj, "prune", &a->prune);
	get_list(w, obj, "pruneAllowKinds", &a->prune_allow_kinds);
	get_uint(w, obj, "pruneBudget", &a->prune_budget, 0, 1000000);
	get_bool(w, obj, "selfHeal", &a->self_heal);
	get_enum(w, obj, "foreignFields", foreign_names, &foreign);
	a->foreign_fields = (enum config_foreign)foreign;
	if (!(v = json_object_get(obj, "ignore")))
		return;
	m = push_key(w, "ignore");
	if (!json_is_array(v)) {
		wrong_type(w, "a list", v);
		pop(w, m);
		return;
	}
	a->ignore = calloc(json_array_size(v) + 1, sizeof(*a->ignore));
	if (!a->ignore) {
		w->nomem = true;
		pop(w, m);
		return;
	}
	json_array_foreach(v, i, item)
	{
		struct mark mi = push_index(w, i);

		walk_ignore(w, item, &a->ignore[a->nignore++]);
		pop(w, mi);
	}
	pop(w, m);
}

static const char *const top_keys[] = {
	"resync",   "workers", "fieldManager", "kubeconfig", "context",
	"cacheDir", "qps",     "burst",	       "watch",	     "log",
	"listen",   "apps",    "fightDetection", "api", "webhook",
	"leaderElection", "events", NULL,
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

static void walk_top(struct walk *w, const json_t *root, struct config *c)
{
	json_t *v, *item, *names;
	int fmt = LOG_FORMAT_LOGFMT, lvl = LOG_INFO;
	size_t i;
	struct mark m;

	if (!check_map(w, root, top_keys))
		return;
	get_duration(w, root, "resync", &c->resync_ms, 1000);
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
		struct config_app *a = &c->apps[c->napps++];
		json_t *first;

		walk_app(w, item, a);
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
	json_decref(names);
	pop(w, m);
}

static void ignore_release(struct config_ignore *ig)
{
	free(ig->group);
	free(ig->kind);
	free(ig->namespace);
	free(ig->name);
	list_release(&ig->json_pointers);
	list_release(&ig->managers);
}

static void app_release(struct config_app *a)
{
	struct config_source *s = &a->source;
	struct config_render *r = &a->render;

	json_decref(a->raw);
	free(a->name);
	free(a->namespace);
	free(s->repo);
	free(s->revision);
	free(s->path);
	free(s->username);
	free(s->username_file);
	free(s->password_file);
	free(s->password_env);
	free(s->token_file);
	free(s->token_env);
	free(s->ca_file);
	free(s->ssh_key_file);
	free(s->ssh_passphrase_file);
	free(s->known_hosts_file);
	free(s->allowed_signers_file);
	free(s->gpg_keyring_file);
	list_release(&r->include);
	list_release(&r->exclude);
	free(r->helm_release);
	list_release(&r->helm_values);
	map_release(&r->helm_set);
	free(r->helm_kube_version);
	free(r->jsonnet_file);
	map_release(&r->jsonnet_ext_vars);
	map_release(&r->jsonnet_ext_code);
	map_release(&r->jsonnet_tlas);
	map_release(&r->jsonnet_tla_code);
	list_release(&r->jsonnet_jpath);
	free(r->plugin_command);
	list_release(&r->plugin_args);
	map_release(&r->plugin_env);
	map_release(&r->vars);
	list_release(&r->vars_files);
	list_release(&a->prune_allow_kinds);
	for (size_t i = 0; i < a->nignore; i++)
		ignore_release(&a->ignore[i]);
	free(a->ignore);
}

void config_free(struct config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->napps; i++)
		app_release(&cfg->apps[i]);
	free(cfg->apps);
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

bool config_same_app(const struct config_app *a, const struct config_app *b)
{
	return same_json(a->raw, b->raw);
}
