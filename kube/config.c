/*
 * The connection config: kubeconfig files (merged as kubectl merges
 * them) or the in-cluster service account, and the credentials to send
 * (static token, token file, exec plugin), cached and thread-safe.
 *
 * Nothing here ever puts a token, a key, a password or an exec plugin's
 * stdout into an error message: messages name the file, the entry and
 * the key, and at most quote the plugin's stderr (which plugins use for
 * their diagnostics).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "renderers/render.h"
#include "kube/kube.h"
#include "util/base64.h"
#include "util/proc.h"
#include "util/clock.h"
#include "util/file.h"

#include "util/banned.h" /* last */

extern char **environ;

/* Largest kubeconfig file read. */
#define KUBECONFIG_MAX (4u << 20)

/* Largest token file, CA bundle or namespace file read. */
#define SMALL_FILE_MAX (1u << 20)

/* Exec plugins: run time, stdout and stderr caps, stderr quoted. */
#define EXEC_TIMEOUT_MS 60000u
#define EXEC_OUT_CAP	(1u << 20)
#define EXEC_ERR_CAP	(16u << 10)
#define EXEC_ERR_QUOTE	1000

#define SA_ROOT_DEFAULT	 "/var/run/secrets/kubernetes.io/serviceaccount"
#define EXEC_V1		 "client.authentication.k8s.io/v1"
#define EXEC_V1BETA1	 "client.authentication.k8s.io/v1beta1"
#define EXEC_CLUSTER_EXT "client.authentication.k8s.io/exec"

struct kube_credential_cache {
	pthread_mutex_t lock;
	char *who;	 /* names the user entry in messages */
	char *exec_info; /* KUBERNETES_EXEC_INFO for the plugin */

	/* The token file as last read, and what identified that version. */
	bool file_valid;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct buf file_token;

	/* The exec plugin's last result. */
	bool exec_valid;
	bool exec_expires;
	time_t exec_expiry;
	struct buf exec_token;
	struct buf exec_cert;
	struct buf exec_key;
};

/*
 * The kubeconfig files read, merged: each of clusters, users, contexts
 * maps a name to [file, value], the first file that names an entry
 * winning, as kubectl merges $KUBECONFIG.
 */
struct merged {
	json_t *clusters;
	json_t *users;
	json_t *contexts;
	char *current;
	struct buf files; /* "a:b", for messages */
	unsigned nread;
};

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void free_strv(char **v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

static void exec_free(struct kube_exec *e)
{
	if (!e)
		return;
	free(e->command);
	free_strv(e->args);
	free_strv(e->env);
	free(e->api_version);
	free(e->install_hint);
	free(e);
}

static void cache_free(struct kube_credential_cache *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->who);
	free(c->exec_info);
	/* Secrets are wiped before their memory goes back. */
	file_secret_release(&c->file_token);
	file_secret_release(&c->exec_token);
	buf_release(&c->exec_cert);
	file_secret_release(&c->exec_key);
	free(c);
}

void kube_config_release(struct kube_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->source);
	free(cfg->context);
	free(cfg->server);
	free(cfg->ca_file);
	buf_release(&cfg->ca_pem);
	free(cfg->tls_server_name);
	free(cfg->proxy_url);
	free(cfg->cert_file);
	free(cfg->key_file);
	buf_release(&cfg->cert_pem);
	file_secret_release(&cfg->key_pem);
	file_secret_free(cfg->token);
	free(cfg->token_file);
	free(cfg->username);
	file_secret_free(cfg->password);
	exec_free(cfg->exec);
	free(cfg->namespace);
	cache_free(cfg->creds);
	memset(cfg, 0, sizeof(*cfg));
}

void kube_credentials_release(struct kube_credentials *cr)
{
	if (!cr)
		return;
	file_secret_release(&cr->token);
	buf_release(&cr->cert_pem);
	file_secret_release(&cr->key_pem);
}

/* ---------------------------------------------------------------------
 * Small file helpers
 * ------------------------------------------------------------------- */

/* Drop leading and trailing white space of b in place. */
static void trim_buf(struct buf *b)
{
	size_t start = 0, end = b->len;

	while (start < end && strchr(" \t\r\n", b->ptr[start]))
		start++;
	while (end > start && strchr(" \t\r\n", b->ptr[end - 1]))
		end--;
	if (start)
		memmove(b->ptr, b->ptr + start, end - start);
	buf_truncate(b, end - start);
}

/* An absolute version of `path` (relative to the cwd). Caller frees. */
static char *absolute_path(const char *path)
{
	struct buf b = BUF_INIT;
	char cwd[4096];

	if (path[0] == '/')
		return strdup(path);
	if (!getcwd(cwd, sizeof(cwd)))
		return strdup(path);
	if (buf_addf(&b, "%s/%s", cwd, path) < 0)
		return NULL;
	return buf_detach(&b, NULL);
}

/* `p` relative to the directory of the file `file`. Caller frees. */
static char *resolve_path(const char *file, const char *p)
{
	struct buf b = BUF_INIT;
	const char *slash;

	if (p[0] == '/' || !(slash = strrchr(file, '/')))
		return strdup(p);
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	if (buf_addf(&b, "%.*s/%s", (int)(slash - file), file, p) < 0)
		return NULL;
	return buf_detach(&b, NULL);
}

/* Can `path` be read? Else an error "<where>: <key> <path>: <cause>". */
static int check_readable(const char *path, const char *where, const char *key,
			  struct err *err)
{
	if (access(path, R_OK) < 0)
		return err_set(err, ERR_IO, "%s: %s %s: %s", where, key, path,
			       strerror(errno));
	return 0;
}

/* ---------------------------------------------------------------------
 * Typed access to kubeconfig values
 * ------------------------------------------------------------------- */

/* A string field into *out (borrowed; NULL when absent, null or ""). */
static int get_str(const json_t *obj, const char *key, const char **out,
		   const char *where, struct err *err)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return err_set(err, ERR_INVALID, "%s: %s is not a string",
			       where, key);
	if (json_string_length(v) != strlen(json_string_value(v)))
		return err_set(err, ERR_INVALID, "%s: %s contains a NUL byte",
			       where, key);
	if (json_string_length(v))
		*out = json_string_value(v);
	return 0;
}

static int get_bool(const json_t *obj, const char *key, bool *out,
		    const char *where, struct err *err)
{
	json_t *v = json_object_get(obj, key);

	*out = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return err_set(err, ERR_INVALID, "%s: %s is not a boolean",
			       where, key);
	*out = json_is_true(v);
	return 0;
}

/* Decode a *-data field (base64, as Go's []byte in JSON) into out. */
static int get_data(const json_t *obj, const char *key, struct buf *out,
		    const char *where, struct err *err)
{
	const char *s;
	int error;

	if ((error = get_str(obj, key, &s, where, err)) < 0 || !s)
		return error;
	buf_reset(out);
	error = base64_decode(out, s, strlen(s), BASE64_SKIP_NEWLINES);
	if (error == ERR_PARSE)
		return err_set(err, ERR_PARSE, "%s: %s is not base64", where,
			       key);
	if (error < 0)
		return err_set(err, error, "%s: %s: out of memory", where, key);
	if (!out->len)
		return err_set(err, ERR_INVALID, "%s: %s is empty", where, key);
	return 0;
}

/* ---------------------------------------------------------------------
 * Reading and merging kubeconfig files
 * ------------------------------------------------------------------- */

static void merged_release(struct merged *m)
{
	json_decref(m->clusters);
	json_decref(m->users);
	json_decref(m->contexts);
	free(m->current);
	buf_release(&m->files);
}

/* Add the named entries of one list (clusters, users, contexts). */
static int merge_list(json_t *into, const json_t *doc, const char *list,
		      const char *member, const char *file, struct err *err)
{
	json_t *arr = json_object_get(doc, list), *item, *val, *pair;
	const char *name;
	size_t i;

	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return err_set(err, ERR_INVALID,
			       "kubeconfig %s: %s is not a list", file, list);
	json_array_foreach (arr, i, item) {
		json_t *n = json_object_get(item, "name");

		if (!json_is_object(item) || !json_is_string(n) ||
		    !*(name = json_string_value(n)))
			return err_set(err, ERR_INVALID,
				       "kubeconfig %s: %s[%zu] has no name",
				       file, list, i);
		if (json_object_get(into, name))
			continue; /* an earlier file set it: it wins */
		val = json_object_get(item, member);
		if (val && !json_is_null(val) && !json_is_object(val))
			return err_set(err, ERR_INVALID,
				       "kubeconfig %s: %s \"%s\": %s is not "
				       "a mapping",
				       file, member, name, member);
		/* "O" takes a reference, "o" steals the new empty one. */
		if (val && json_is_object(val))
			pair = json_pack("[sO]", file, val);
		else
			pair = json_pack("[so]", file, json_object());
		if (!pair || json_object_set_new(into, name, pair) < 0)
			return err_set(err, ERR_NOMEM, "out of memory");
	}
	return 0;
}

/*
 * Read one file into m. A missing file is skipped unless `must_exist`
 * (an explicit --kubeconfig must exist; kubectl skips missing files of
 * $KUBECONFIG).
 */
static int merge_file(struct merged *m, const char *path, bool must_exist,
		      struct err *err)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	struct buf data = BUF_INIT, label = BUF_INIT;
	struct stat st;
	char *abs = NULL;
	const char *cur;
	json_t *doc;
	int error = 0;

	if (!must_exist && stat(path, &st) < 0 && errno == ENOENT)
		return 0;
	if (!(abs = absolute_path(path)) ||
	    buf_addf(&label, "kubeconfig %s", abs) < 0) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((error = file_read(&data, abs, label.ptr, KUBECONFIG_MAX,
				      err)) < 0)
		goto out;
	if ((error = render_parse(&docs, data.ptr ? data.ptr : "", data.len,
				  label.ptr, err)) < 0)
		goto out;
	buf_addf(&m->files, "%s%s", m->nread ? ":" : "", abs);
	m->nread++;
	if (docs.len == 0)
		goto out; /* an empty file is an empty config */
	if (docs.len > 1) {
		error = err_set(err, ERR_INVALID,
				"%s: more than one YAML document", label.ptr);
		goto out;
	}
	doc = docs.items[0].value;
	if (!json_is_object(doc)) {
		error = err_set(err, ERR_INVALID, "%s: not a mapping",
				label.ptr);
		goto out;
	}
	if ((error = merge_list(m->clusters, doc, "clusters", "cluster", abs,
				err)) < 0 ||
	    (error = merge_list(m->users, doc, "users", "user", abs, err)) <
		    0 ||
	    (error = merge_list(m->contexts, doc, "contexts", "context", abs,
				err)) < 0)
		goto out;
	if ((error = get_str(doc, "current-context", &cur, label.ptr, err)) < 0)
		goto out;
	if (cur && !m->current && !(m->current = strdup(cur)))
		error = err_set(err, ERR_NOMEM, "out of memory");
out:
	render_docs_release(&docs);
	buf_release(&data);
	buf_release(&label);
	free(abs);
	return error;
}

/* ---------------------------------------------------------------------
 * Cluster, user and exec entries
 * ------------------------------------------------------------------- */

/* The config "extension" of the cluster for exec plugins, or NULL. */
static json_t *cluster_exec_extension(const json_t *cluster)
{
	json_t *exts = json_object_get(cluster, "extensions"), *e;
	size_t i;

	json_array_foreach (exts, i, e) {
		json_t *n = json_object_get(e, "name");

		if (json_is_string(n) &&
		    !strcmp(json_string_value(n), EXEC_CLUSTER_EXT))
			return json_object_get(e, "extension");
	}
	return NULL;
}

static int load_cluster(struct kube_config *cfg, const json_t *cluster,
			const char *file, const char *where, struct err *err)
{
	const char *server, *ca, *sni, *proxy;
	size_t len;
	int error;

	if ((error = get_str(cluster, "server", &server, where, err)) < 0 ||
	    (error = get_str(cluster, "certificate-authority", &ca, where,
			     err)) < 0 ||
	    (error = get_data(cluster, "certificate-authority-data",
			      &cfg->ca_pem, where, err)) < 0 ||
	    (error = get_bool(cluster, "insecure-skip-tls-verify",
			      &cfg->insecure, where, err)) < 0 ||
	    (error = get_str(cluster, "tls-server-name", &sni, where, err)) <
		    0 ||
	    (error = get_str(cluster, "proxy-url", &proxy, where, err)) < 0)
		return error;
	if (!server)
		return err_set(err, ERR_INVALID, "%s: server is not set",
			       where);
	if (strncmp(server, "https://", 8) && strncmp(server, "http://", 7)) {
		if (strstr(server, "://"))
			return err_set(err, ERR_INVALID,
				       "%s: server \"%.200s\" is not an http "
				       "or https URL",
				       where, server);
		/* A bare host:port means https, as kubectl reads it. */
		if (asprintf(&cfg->server, "https://%s", server) < 0)
			cfg->server = NULL;
	} else {
		cfg->server = strdup(server);
	}
	if (!cfg->server)
		return err_set(err, ERR_NOMEM, "out of memory");
	len = strlen(cfg->server);
	while (len > 0 && cfg->server[len - 1] == '/')
		cfg->server[--len] = '\0';

	if (ca && cfg->ca_pem.len)
		return err_set(err, ERR_INVALID,
			       "%s: certificate-authority and "
			       "certificate-authority-data are both set",
			       where);
	if (cfg->insecure && (ca || cfg->ca_pem.len))
		return err_set(err, ERR_INVALID,
			       "%s: insecure-skip-tls-verify cannot be used "
			       "with a certificate authority",
			       where);
	if (ca) {
		if (!(cfg->ca_file = resolve_path(file, ca)))
			return err_set(err, ERR_NOMEM, "out of memory");
		if ((error = check_readable(cfg->ca_file, where,
					    "certificate-authority", err)) < 0)
			return error;
	}
	if (proxy && strncmp(proxy, "http://", 7) &&
	    strncmp(proxy, "https://", 8) && strncmp(proxy, "socks5://", 9))
		return err_set(err, ERR_INVALID,
			       "%s: proxy-url must be http, https or socks5",
			       where);
	if ((sni && !(cfg->tls_server_name = strdup(sni))) ||
	    (proxy && !(cfg->proxy_url = strdup(proxy))))
		return err_set(err, ERR_NOMEM, "out of memory");
	return 0;
}

/* A NULL-terminated copy of a list of strings. */
static int load_args(const json_t *e, char ***out, const char *where,
		     struct err *err)
{
	json_t *arr = json_object_get(e, "args"), *v;
	size_t i, n = json_is_array(arr) ? json_array_size(arr) : 0;

	if (arr && !json_is_null(arr) && !json_is_array(arr))
		return err_set(err, ERR_INVALID, "%s: exec: args is not a list",
			       where);
	if (!(*out = calloc(n + 1, sizeof(**out))))
		return err_set(err, ERR_NOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		v = json_array_get(arr, i);
		if (!json_is_string(v))
			return err_set(err, ERR_INVALID,
				       "%s: exec: args[%zu] is not a string",
				       where, i);
		if (!((*out)[i] = strdup(json_string_value(v))))
			return err_set(err, ERR_NOMEM, "out of memory");
	}
	return 0;
}

/* env: [{name, value}] as "NAME=VALUE" strings. */
static int load_env(const json_t *e, char ***out, const char *where,
		    struct err *err)
{
	json_t *arr = json_object_get(e, "env"), *v;
	size_t i, n = json_is_array(arr) ? json_array_size(arr) : 0;

	if (arr && !json_is_null(arr) && !json_is_array(arr))
		return err_set(err, ERR_INVALID, "%s: exec: env is not a list",
			       where);
	if (!(*out = calloc(n + 1, sizeof(**out))))
		return err_set(err, ERR_NOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		json_t *name, *value;
		const char *ns;

		v = json_array_get(arr, i);
		name = json_object_get(v, "name");
		value = json_object_get(v, "value");
		if (!json_is_string(name) || !*(ns = json_string_value(name)) ||
		    strchr(ns, '=') || !json_is_string(value))
			return err_set(err, ERR_INVALID,
				       "%s: exec: env[%zu] needs a name and "
				       "a string value",
				       where, i);
		if (asprintf(&(*out)[i], "%s=%s", ns,
			     json_string_value(value)) < 0) {
			(*out)[i] = NULL;
			return err_set(err, ERR_NOMEM, "out of memory");
		}
	}
	return 0;
}

static int load_exec(struct kube_config *cfg, const json_t *e, const char *file,
		     const char *where, struct err *err)
{
	struct kube_exec *x;
	const char *cmd, *api, *hint, *mode;
	int error;

	if (!json_is_object(e))
		return err_set(err, ERR_INVALID, "%s: exec is not a mapping",
			       where);
	if (!(x = calloc(1, sizeof(*x))))
		return err_set(err, ERR_NOMEM, "out of memory");
	cfg->exec = x;
	if ((error = get_str(e, "command", &cmd, where, err)) < 0 ||
	    (error = get_str(e, "apiVersion", &api, where, err)) < 0 ||
	    (error = get_str(e, "installHint", &hint, where, err)) < 0 ||
	    (error = get_str(e, "interactiveMode", &mode, where, err)) < 0 ||
	    (error = get_bool(e, "provideClusterInfo", &x->provide_cluster_info,
			      where, err)) < 0)
		return error;
	if (!cmd)
		return err_set(err, ERR_INVALID, "%s: exec: command is not set",
			       where);
	if (!api)
		return err_set(err, ERR_INVALID,
			       "%s: exec: apiVersion is not set", where);
	if (strcmp(api, EXEC_V1) && strcmp(api, EXEC_V1BETA1))
		return err_set(err, ERR_INVALID,
			       "%s: exec: apiVersion \"%.100s\" is not "
			       "supported (" EXEC_V1 " or " EXEC_V1BETA1 ")",
			       where, api);
	/* v1 makes the mode explicit; v1beta1 defaults to IfAvailable. */
	if (!mode && !strcmp(api, EXEC_V1))
		return err_set(err, ERR_INVALID,
			       "%s: exec: interactiveMode must be set for "
			       "apiVersion " EXEC_V1,
			       where);
	if (mode && strcmp(mode, "Never") && strcmp(mode, "IfAvailable")) {
		if (!strcmp(mode, "Always"))
			return err_set(err, ERR_INVALID,
				       "%s: exec: interactiveMode Always needs "
				       "a terminal, and syncd runs plugins "
				       "without one",
				       where);
		return err_set(err, ERR_INVALID,
			       "%s: exec: interactiveMode \"%.50s\" is not "
			       "Never, IfAvailable or Always",
			       where, mode);
	}
	/* A command with a '/' is relative to the kubeconfig, as kubectl. */
	x->command = strchr(cmd, '/') ? resolve_path(file, cmd) : strdup(cmd);
	x->api_version = strdup(api);
	x->install_hint = xstrdup(hint);
	if (!x->command || !x->api_version || (hint && !x->install_hint))
		return err_set(err, ERR_NOMEM, "out of memory");
	if ((error = load_args(e, &x->args, where, err)) < 0 ||
	    (error = load_env(e, &x->env, where, err)) < 0)
		return error;
	return 0;
}

static int load_user(struct kube_config *cfg, const json_t *user,
		     const char *file, const char *where, struct err *err)
{
	const char *token, *token_file, *cert, *key, *name, *pass;
	json_t *exec = json_object_get(user, "exec");
	int error;

	if ((error = get_str(user, "token", &token, where, err)) < 0 ||
	    (error = get_str(user, "tokenFile", &token_file, where, err)) < 0 ||
	    (error = get_str(user, "client-certificate", &cert, where, err)) <
		    0 ||
	    (error = get_str(user, "client-key", &key, where, err)) < 0 ||
	    (error = get_data(user, "client-certificate-data", &cfg->cert_pem,
			      where, err)) < 0 ||
	    (error = get_data(user, "client-key-data", &cfg->key_pem, where,
			      err)) < 0 ||
	    (error = get_str(user, "username", &name, where, err)) < 0 ||
	    (error = get_str(user, "password", &pass, where, err)) < 0)
		return error;
	if (json_object_get(user, "auth-provider"))
		return err_set(err, ERR_INVALID,
			       "%s: auth-provider is not supported; use an "
			       "exec plugin",
			       where);
	if (cert && cfg->cert_pem.len)
		return err_set(err, ERR_INVALID,
			       "%s: client-certificate and "
			       "client-certificate-data are both set",
			       where);
	if (key && cfg->key_pem.len)
		return err_set(err, ERR_INVALID,
			       "%s: client-key and client-key-data are both "
			       "set",
			       where);
	if ((cert || cfg->cert_pem.len) != (key || cfg->key_pem.len))
		return err_set(err, ERR_INVALID,
			       "%s: a client certificate needs both "
			       "client-certificate and client-key",
			       where);
	if ((token || token_file) && (name || pass))
		return err_set(err, ERR_INVALID,
			       "%s: more than one authentication method "
			       "(token and username/password)",
			       where);
	if (pass && !name)
		return err_set(err, ERR_INVALID,
			       "%s: password without username", where);
	if (cert) {
		if (!(cfg->cert_file = resolve_path(file, cert)))
			return err_set(err, ERR_NOMEM, "out of memory");
		if ((error = check_readable(cfg->cert_file, where,
					    "client-certificate", err)) < 0)
			return error;
	}
	if (key) {
		if (!(cfg->key_file = resolve_path(file, key)))
			return err_set(err, ERR_NOMEM, "out of memory");
		if ((error = check_readable(cfg->key_file, where, "client-key",
					    err)) < 0)
			return error;
	}
	if (token_file) {
		if (!(cfg->token_file = resolve_path(file, token_file)))
			return err_set(err, ERR_NOMEM, "out of memory");
		if ((error = check_readable(cfg->token_file, where, "tokenFile",
					    err)) < 0)
			return error;
	}
	if ((token && !(cfg->token = strdup(token))) ||
	    (name && !(cfg->username = strdup(name))) ||
	    (pass && !(cfg->password = strdup(pass))))
		return err_set(err, ERR_NOMEM, "out of memory");
	if (exec && !json_is_null(exec) &&
	    (error = load_exec(cfg, exec, file, where, err)) < 0)
		return error;
	return 0;
}

/*
 * KUBERNETES_EXEC_INFO: the ExecCredential the plugin reads, with
 * spec.cluster when provideClusterInfo is set (its CA as base64 bytes,
 * as client-go serialises []byte).
 */
static int make_exec_info(struct kube_config *cfg, const json_t *cluster,
			  struct err *err)
{
	json_t *info = NULL, *spec, *c;
	struct buf ca = BUF_INIT, ca64 = BUF_INIT;
	json_t *ext;
	int error = 0;

	info = json_pack("{s:s, s:s, s:{s:b}}", "kind", "ExecCredential",
			 "apiVersion", cfg->exec->api_version, "spec",
			 "interactive", 0);
	if (!info) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	spec = json_object_get(info, "spec");
	if (cfg->exec->provide_cluster_info) {
		if (!(c = json_pack("{s:s}", "server", cfg->server)) ||
		    json_object_set_new(spec, "cluster", c) < 0) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			goto out;
		}
		if (cfg->tls_server_name)
			json_object_set_new(c, "tls-server-name",
					    json_string(cfg->tls_server_name));
		if (cfg->insecure)
			json_object_set_new(c, "insecure-skip-tls-verify",
					    json_true());
		if (cfg->proxy_url)
			json_object_set_new(c, "proxy-url",
					    json_string(cfg->proxy_url));
		if (cfg->ca_file &&
		    (error = file_read(&ca, cfg->ca_file, cfg->ca_file,
					      SMALL_FILE_MAX, err)) < 0)
			goto out;
		if (cfg->ca_pem.len)
			error = base64_encode(&ca64, cfg->ca_pem.ptr,
					      cfg->ca_pem.len, 0);
		else if (ca.len)
			error = base64_encode(&ca64, ca.ptr, ca.len, 0);
		if (error < 0) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			goto out;
		}
		if (ca64.len)
			json_object_set_new(c, "certificate-authority-data",
					    json_string(ca64.ptr));
		if ((ext = cluster_exec_extension(cluster)))
			json_object_set(c, "config", ext);
	}
	if (!(cfg->creds->exec_info = json_dumps(info, JSON_COMPACT)))
		error = err_set(err, ERR_NOMEM, "out of memory");
out:
	json_decref(info);
	buf_release(&ca);
	buf_release(&ca64);
	return error;
}

/* ---------------------------------------------------------------------
 * Kubeconfig and in-cluster loading
 * ------------------------------------------------------------------- */

static int load_merged(struct kube_config *cfg, struct merged *m,
		       const char *want_context, struct err *err)
{
	const char *src = buf_cstr(&m->files), *file, *cname, *uname, *ns;
	struct buf where = BUF_INIT;
	json_t *ctx, *cl, *us;
	int error = 0;

	if (asprintf(&cfg->source, "kubeconfig %s", src) < 0) {
		cfg->source = NULL;
		return err_set(err, ERR_NOMEM, "out of memory");
	}
	if (!want_context)
		want_context = m->current;
	if (!want_context)
		return err_set(err, ERR_INVALID,
			       "kubeconfig %s: current-context is not set "
			       "(use --context)",
			       src);
	if (!(ctx = json_object_get(m->contexts, want_context)))
		return err_set(err, ERR_NOTFOUND,
			       "kubeconfig %s: context \"%s\" not found", src,
			       want_context);
	if (!(cfg->context = strdup(want_context)))
		return err_set(err, ERR_NOMEM, "out of memory");
	file = json_string_value(json_array_get(ctx, 0));
	ctx = json_array_get(ctx, 1);
	buf_addf(&where, "kubeconfig %s: context \"%s\"", file, want_context);
	if ((error = get_str(ctx, "cluster", &cname, where.ptr, err)) < 0 ||
	    (error = get_str(ctx, "user", &uname, where.ptr, err)) < 0 ||
	    (error = get_str(ctx, "namespace", &ns, where.ptr, err)) < 0)
		goto out;
	if (!(cfg->namespace = strdup(ns ? ns : "default"))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if (!cname) {
		error = err_set(err, ERR_INVALID, "%s: cluster is not set",
				where.ptr);
		goto out;
	}
	if (!(cl = json_object_get(m->clusters, cname))) {
		error = err_set(err, ERR_NOTFOUND,
				"kubeconfig %s: context \"%s\": cluster "
				"\"%s\" not found",
				src, want_context, cname);
		goto out;
	}
	buf_reset(&where);
	file = json_string_value(json_array_get(cl, 0));
	buf_addf(&where, "kubeconfig %s: cluster \"%s\"", file, cname);
	cl = json_array_get(cl, 1);
	if ((error = load_cluster(cfg, cl, file, where.ptr, err)) < 0)
		goto out;
	/* A context without a user sends no credentials. */
	if (uname) {
		if (!(us = json_object_get(m->users, uname))) {
			error = err_set(err, ERR_NOTFOUND,
					"kubeconfig %s: context \"%s\": user "
					"\"%s\" not found",
					src, want_context, uname);
			goto out;
		}
		buf_reset(&where);
		file = json_string_value(json_array_get(us, 0));
		buf_addf(&where, "kubeconfig %s: user \"%s\"", file, uname);
		if ((error = load_user(cfg, json_array_get(us, 1), file,
				       where.ptr, err)) < 0)
			goto out;
		if (!(cfg->creds->who = strdup(where.ptr))) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			goto out;
		}
	}
	if (cfg->exec)
		error = make_exec_info(cfg, cl, err);
out:
	buf_release(&where);
	return error;
}

/* Is KUBERNETES_SERVICE_HOST/PORT set, as inside a pod? */
static bool in_cluster_env(void)
{
	const char *h = getenv("KUBERNETES_SERVICE_HOST");
	const char *p = getenv("KUBERNETES_SERVICE_PORT");

	return h && *h && p && *p;
}

/* The service-account mount, $SYNCD_SA_ROOT for tests. */
static const char *sa_root(void)
{
	const char *root = getenv("SYNCD_SA_ROOT");

	return root && *root ? root : SA_ROOT_DEFAULT;
}

/*
 * Can the in-cluster config be used: the service env and a token? A pod
 * without an automounted token (automountServiceAccountToken: false)
 * may carry a kubeconfig instead.
 */
static bool in_cluster_available(void)
{
	struct buf path = BUF_INIT;
	bool ok;

	if (!in_cluster_env() || buf_addf(&path, "%s/token", sa_root()) < 0)
		return false;
	ok = access(path.ptr, R_OK) == 0;
	buf_release(&path);
	return ok;
}

static int load_in_cluster(struct kube_config *cfg, struct err *err)
{
	const char *root = sa_root();
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	struct buf ns = BUF_INIT, path = BUF_INIT;
	struct err ignore = ERR_INIT;
	bool v6;
	int error = 0;
	size_t i;

	if (!(cfg->source = strdup("in-cluster")) ||
	    !(cfg->creds->who = strdup("in-cluster"))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if (!host || !*host || !port || !*port) {
		error = err_set(err, ERR_NOTFOUND,
				"in-cluster: KUBERNETES_SERVICE_HOST and "
				"KUBERNETES_SERVICE_PORT must be set");
		goto out;
	}
	for (i = 0; port[i]; i++)
		if (port[i] < '0' || port[i] > '9' || i > 4)
			break;
	if (port[i] || strtol(port, NULL, 10) < 1 ||
	    strtol(port, NULL, 10) > 65535) {
		error = err_set(err, ERR_INVALID,
				"in-cluster: KUBERNETES_SERVICE_PORT \"%.20s\" "
				"is not a port",
				port);
		goto out;
	}
	v6 = strchr(host, ':') && host[0] != '[';
	if (asprintf(&cfg->server, "https://%s%s%s:%s", v6 ? "[" : "", host,
		     v6 ? "]" : "", port) < 0) {
		cfg->server = NULL;
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if (asprintf(&cfg->token_file, "%s/token", root) < 0) {
		cfg->token_file = NULL;
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((error = check_readable(cfg->token_file, "in-cluster",
				    "service account token", err)) < 0)
		goto out;
	/* No ca.crt: the system's roots, as client-go does. */
	buf_addf(&path, "%s/ca.crt", root);
	if (access(path.ptr, R_OK) == 0 &&
	    !(cfg->ca_file = buf_detach(&path, NULL))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	buf_reset(&path);
	buf_addf(&path, "%s/namespace", root);
	if (file_read(&ns, path.ptr, path.ptr, SMALL_FILE_MAX,
			     &ignore) == 0)
		trim_buf(&ns);
	if (!(cfg->namespace = strdup(ns.len ? ns.ptr : "default")))
		error = err_set(err, ERR_NOMEM, "out of memory");
out:
	buf_release(&ns);
	buf_release(&path);
	err_release(&ignore);
	return error;
}

/* The kubeconfig files to read when --kubeconfig is not given. */
static int default_files(struct buf *list)
{
	const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
	struct passwd *pw;

	if (env && *env)
		return buf_adds(list, env);
	if ((!home || !*home) && (pw = getpwuid(getuid())))
		home = pw->pw_dir;
	if (!home || !*home)
		return buf_adds(list, "");
	return buf_addf(list, "%s/.kube/config", home);
}

/*
 * Was `p` (a NUL-terminated entry inside the split list starting at
 * `list`) already seen before it? The earlier entries are NUL-separated.
 */
static bool already_listed(const char *list, const char *p)
{
	const char *q;

	for (q = list; q < p; q += strlen(q) + 1)
		if (!strcmp(q, p))
			return true;
	return false;
}

int kube_config_load(struct kube_config *cfg,
		     const struct kube_config_options *opts, struct err *err)
{
	static const struct kube_config_options none;
	struct merged m = {NULL, NULL, NULL, NULL, BUF_INIT, 0};
	struct buf list = BUF_INIT;
	const char *env;
	char *p, *next;
	int error = 0;

	memset(cfg, 0, sizeof(*cfg));
	if (!opts)
		opts = &none;
	if (!(cfg->creds = calloc(1, sizeof(*cfg->creds))))
		return err_set(err, ERR_NOMEM, "out of memory");
	if (pthread_mutex_init(&cfg->creds->lock, NULL)) {
		free(cfg->creds);
		cfg->creds = NULL;
		return err_set(err, ERR_NOMEM, "cannot create a mutex");
	}
	/* An explicit --context asks for a kubeconfig, not the pod's. */
	if (!opts->kubeconfig && !opts->context && opts->prefer_in_cluster &&
	    in_cluster_available())
		return load_in_cluster(cfg, err);

	m.clusters = json_object();
	m.users = json_object();
	m.contexts = json_object();
	if (!m.clusters || !m.users || !m.contexts) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if (opts->kubeconfig) {
		if ((error = merge_file(&m, opts->kubeconfig, true, err)) < 0)
			goto out;
	} else {
		if (default_files(&list) < 0) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			goto out;
		}
		/* Each file once, in order; empty entries skipped. */
		for (p = list.ptr; p && *p; p = next) {
			next = p + strcspn(p, ":");
			if (*next)
				*next++ = '\0';
			if (!*p || already_listed(list.ptr, p))
				continue;
			if ((error = merge_file(&m, p, false, err)) < 0)
				goto out;
		}
		if (!m.nread) {
			if (!opts->context && in_cluster_env()) {
				error = load_in_cluster(cfg, err);
				goto out;
			}
			env = getenv("KUBECONFIG");
			error = err_set(err, ERR_NOTFOUND,
					"no kubeconfig found (%s%s) and not "
					"running in a cluster "
					"(KUBERNETES_SERVICE_HOST is not set)",
					env && *env ? "KUBECONFIG=" : "",
					env && *env ? env : "~/.kube/config");
			goto out;
		}
	}
	error = load_merged(cfg, &m, opts->context, err);
out:
	merged_release(&m);
	buf_release(&list);
	return error;
}

/* ---------------------------------------------------------------------
 * Credentials
 * ------------------------------------------------------------------- */

/* Copy one buffer into another (reset first). */
static int copy_buf(struct buf *dst, const struct buf *src)
{
	buf_reset(dst);
	return src->len ? buf_add(dst, src->ptr, src->len) : 0;
}

/* Re-read the token file when it is not the version read last. */
static int refresh_token_file(struct kube_config *cfg, struct err *err)
{
	struct kube_credential_cache *c = cfg->creds;
	struct buf data = BUF_INIT;
	struct err sub = ERR_INIT;
	struct stat st;
	int error = 0;

	if (stat(cfg->token_file, &st) < 0)
		return err_set(err, ERR_IO, "%s: token file %s: %s",
			       c->who ? c->who : cfg->source, cfg->token_file,
			       strerror(errno));
	if (c->file_valid && st.st_dev == c->dev && st.st_ino == c->ino &&
	    st.st_size == c->size && st.st_mtim.tv_sec == c->mtime.tv_sec &&
	    st.st_mtim.tv_nsec == c->mtime.tv_nsec)
		return 0;
	c->file_valid = false;
	if ((error = file_read(&data, cfg->token_file, cfg->token_file,
				      SMALL_FILE_MAX, &sub)) < 0) {
		error = err_set(err, error, "%s: token file %s",
				c->who ? c->who : cfg->source, err_first(&sub));
		goto out;
	}
	trim_buf(&data);
	if (!data.len) {
		error = err_set(err, ERR_INVALID, "%s: token file %s is empty",
				c->who ? c->who : cfg->source, cfg->token_file);
		goto out;
	}
	buf_release(&c->file_token);
	c->file_token = data;
	data = (struct buf)BUF_INIT;
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	c->size = st.st_size;
	c->mtime = st.st_mtim;
	c->file_valid = true;
out:
	buf_release(&data);
	err_release(&sub);
	return error;
}

/*
 * The plugin's environment: ours, with the config's env on top and
 * KUBERNETES_EXEC_INFO. Caller frees the array (not the strings but
 * *info, which it also owns).
 */
static char **exec_environ(const struct kube_config *cfg, char **info)
{
	size_t n = 0, k = 0, i, j;
	char **env;

	for (i = 0; environ[i]; i++)
		n++;
	for (i = 0; cfg->exec->env[i]; i++)
		n++;
	if (!(env = calloc(n + 2, sizeof(*env))))
		return NULL;
	if (asprintf(info, "KUBERNETES_EXEC_INFO=%s", cfg->creds->exec_info) <
	    0) {
		*info = NULL;
		free(env);
		return NULL;
	}
	for (i = 0; environ[i]; i++) {
		size_t len = strcspn(environ[i], "=");
		bool shadowed =
			!strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21);

		for (j = 0; !shadowed && cfg->exec->env[j]; j++)
			shadowed = !strncmp(environ[i], cfg->exec->env[j],
					    len + 1);
		if (!shadowed)
			env[k++] = environ[i];
	}
	for (i = 0; cfg->exec->env[i]; i++)
		env[k++] = cfg->exec->env[i];
	env[k++] = *info;
	env[k] = NULL;
	return env;
}

/* The start of the plugin's stderr, for an error message. */
static void stderr_excerpt(const struct buf *errout, struct buf *out)
{
	const char *s = buf_cstr(errout);
	size_t len = errout->len;

	while (len && strchr(" \t\r\n", *s)) {
		s++;
		len--;
	}
	while (len && strchr(" \t\r\n", s[len - 1]))
		len--;
	if (!len)
		return;
	buf_addf(out, ": %.*s%s",
		 (int)(len > EXEC_ERR_QUOTE ? EXEC_ERR_QUOTE : len), s,
		 len > EXEC_ERR_QUOTE ? "..." : "");
}

/* Read the ExecCredential on the plugin's stdout into the cache. */
static int parse_exec_output(struct kube_config *cfg, const struct buf *out,
			     const char *who, struct err *err)
{
	struct kube_credential_cache *c = cfg->creds;
	const char *cmd = cfg->exec->command, *kind, *api, *token, *cert, *key,
		   *exp;
	json_error_t jerr;
	json_t *doc, *status;
	time_t expiry = 0;
	int error = 0;

	/* jansson's message may quote the output: only its position. */
	doc = json_loadb(out->ptr ? out->ptr : "", out->len,
			 JSON_REJECT_DUPLICATES, &jerr);
	if (!doc || !json_is_object(doc)) {
		error = err_set(err, ERR_PARSE,
				"%s: exec plugin %s: output is not a JSON "
				"ExecCredential (line %d, column %d)",
				who, cmd, doc ? 1 : jerr.line,
				doc ? 1 : jerr.column);
		goto out;
	}
	if ((error = get_str(doc, "kind", &kind, who, err)) < 0 ||
	    (error = get_str(doc, "apiVersion", &api, who, err)) < 0)
		goto out;
	if (!kind || strcmp(kind, "ExecCredential")) {
		error = err_set(err, ERR_PARSE,
				"%s: exec plugin %s: output is not an "
				"ExecCredential",
				who, cmd);
		goto out;
	}
	if (!api || strcmp(api, cfg->exec->api_version)) {
		error = err_set(err, ERR_PARSE,
				"%s: exec plugin %s: returned apiVersion "
				"\"%.100s\", expected \"%s\"",
				who, cmd, api ? api : "",
				cfg->exec->api_version);
		goto out;
	}
	status = json_object_get(doc, "status");
	if (!json_is_object(status)) {
		error = err_set(err, ERR_PARSE,
				"%s: exec plugin %s: ExecCredential has no "
				"status",
				who, cmd);
		goto out;
	}
	if ((error = get_str(status, "token", &token, who, err)) < 0 ||
	    (error = get_str(status, "clientCertificateData", &cert, who,
			     err)) < 0 ||
	    (error = get_str(status, "clientKeyData", &key, who, err)) < 0 ||
	    (error = get_str(status, "expirationTimestamp", &exp, who, err)) <
		    0)
		goto out;
	if (!token && !cert && !key) {
		error = err_set(err, ERR_PARSE,
				"%s: exec plugin %s: ExecCredential has no "
				"status.token or status.clientCertificateData",
				who, cmd);
		goto out;
	}
	if (!cert != !key) {
		error = err_set(err, ERR_PARSE,
				"%s: exec plugin %s: ExecCredential needs both "
				"clientCertificateData and clientKeyData",
				who, cmd);
		goto out;
	}
	if (exp && clk_rfc3339_parse(exp, &expiry) < 0) {
		error = err_set(err, ERR_PARSE,
				"%s: exec plugin %s: expirationTimestamp "
				"\"%.64s\" is not an RFC 3339 time",
				who, cmd, exp);
		goto out;
	}
	buf_reset(&c->exec_token);
	buf_reset(&c->exec_cert);
	buf_reset(&c->exec_key);
	if ((token && buf_adds(&c->exec_token, token) < 0) ||
	    (cert && buf_adds(&c->exec_cert, cert) < 0) ||
	    (key && buf_adds(&c->exec_key, key) < 0)) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	c->exec_expires = exp != NULL;
	c->exec_expiry = expiry;
	c->exec_valid = true;
out:
	json_decref(doc);
	return error;
}

/* Run the exec plugin and cache what it returned. Lock held. */
static int run_exec(struct kube_config *cfg, struct err *err)
{
	struct kube_exec *x = cfg->exec;
	const char *who = cfg->creds->who ? cfg->creds->who : cfg->source;
	struct proc_options po = PROC_OPTIONS_INIT;
	struct proc_result res = PROC_RESULT_INIT;
	struct err sub = ERR_INIT;
	struct buf msg = BUF_INIT;
	const char **argv = NULL;
	char **env = NULL, *info = NULL, how[64];
	size_t i, n = 0;
	int error = 0;

	cfg->creds->exec_valid = false;
	for (i = 0; x->args[i]; i++)
		n++;
	if (!(argv = calloc(n + 2, sizeof(*argv))) ||
	    !(env = exec_environ(cfg, &info))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	argv[0] = x->command;
	for (i = 0; i < n; i++)
		argv[i + 1] = x->args[i];
	po.env = env;
	po.timeout_ms = EXEC_TIMEOUT_MS;
	po.stdout_cap = EXEC_OUT_CAP;
	po.stderr_cap = EXEC_ERR_CAP;
	error = proc_run(&res, argv, &po, &sub);
	if (error == ERR_NOTFOUND) {
		error = err_set(err, ERR_NOTFOUND,
				"%s: exec plugin %s not found%s%s", who,
				x->command, x->install_hint ? ": " : "",
				x->install_hint ? x->install_hint : "");
		goto out;
	}
	if (error == ERR_TIMEOUT) {
		error = err_set(err, ERR_TIMEOUT,
				"%s: exec plugin %s: timed out after %u s", who,
				x->command, EXEC_TIMEOUT_MS / 1000);
		goto out;
	}
	if (error == ERR_LIMIT) {
		error = err_set(err, ERR_LIMIT,
				"%s: exec plugin %s: output over %u bytes", who,
				x->command, EXEC_OUT_CAP);
		goto out;
	}
	if (error < 0) {
		error = err_set(err, error, "%s: exec plugin: %s", who,
				err_first(&sub));
		goto out;
	}
	if (!res.exited || res.exit_code != 0) {
		proc_result_describe(&res, how, sizeof(how));
		stderr_excerpt(&res.errout, &msg);
		error = err_set(err, ERR_GENERIC, "%s: exec plugin %s: %s%s",
				who, x->command, how, buf_cstr(&msg));
		goto out;
	}
	error = parse_exec_output(cfg, &res.out, who, err);
out:
	proc_result_release(&res);
	err_release(&sub);
	buf_release(&msg);
	free(argv);
	free(env);
	free(info);
	return error;
}

int kube_config_credentials(struct kube_config *cfg,
			    struct kube_credentials *out, struct err *err)
{
	struct kube_credential_cache *c = cfg->creds;
	int error = 0;

	buf_reset(&out->token);
	buf_reset(&out->cert_pem);
	buf_reset(&out->key_pem);
	if (!c)
		return err_set(err, ERR_INVALID, "kube config is not loaded");
	pthread_mutex_lock(&c->lock);
	if (cfg->exec) {
		if (!c->exec_valid ||
		    (c->exec_expires && time(NULL) >= c->exec_expiry)) {
			if ((error = run_exec(cfg, err)) < 0)
				goto out;
		}
		if (copy_buf(&out->token, &c->exec_token) < 0 ||
		    copy_buf(&out->cert_pem, &c->exec_cert) < 0 ||
		    copy_buf(&out->key_pem, &c->exec_key) < 0)
			error = err_set(err, ERR_NOMEM, "out of memory");
	} else if (cfg->token_file) {
		if ((error = refresh_token_file(cfg, err)) < 0)
			goto out;
		if (copy_buf(&out->token, &c->file_token) < 0)
			error = err_set(err, ERR_NOMEM, "out of memory");
	} else if (cfg->token) {
		if (buf_adds(&out->token, cfg->token) < 0)
			error = err_set(err, ERR_NOMEM, "out of memory");
	}
out:
	pthread_mutex_unlock(&c->lock);
	if (error < 0)
		kube_credentials_release(out);
	return error;
}

void kube_config_invalidate(struct kube_config *cfg)
{
	struct kube_credential_cache *c = cfg ? cfg->creds : NULL;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->exec_valid = false;
	c->file_valid = false;
	pthread_mutex_unlock(&c->lock);
}
