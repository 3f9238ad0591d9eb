/*
 * The source options of app commands: a local PATH, or a source (--repo:
 * a Git repository, a Helm chart with --chart, an oci:// artifact)
 * polled and checked out through source/source.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syncd/cli_source.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"

#include "util/banned.h" /* last */

enum {
	OPT_REPO = CLI_SOURCE_OPT,
	OPT_REVISION,
	OPT_PATH,
	OPT_CACHE_DIR,
	OPT_USERNAME,
	OPT_USERNAME_FILE,
	OPT_PASSWORD_FILE,
	OPT_PASSWORD_ENV,
	OPT_TOKEN_FILE,
	OPT_TOKEN_ENV,
	OPT_CA_FILE,
	OPT_SSH_KEY,
	OPT_SSH_PASSPHRASE_FILE,
	OPT_KNOWN_HOSTS,
	OPT_INSECURE_HOST_KEY,
	OPT_VERIFY_SIGNATURES,
	OPT_FETCH_TIMEOUT,
	OPT_VERBOSE,
	OPT_CHART,
	OPT_DIGEST,
	OPT_PLAIN_HTTP,
	OPT_SOURCE_TYPE,
	OPT_REDIRECT_HOST,
};

const struct option cli_source_longopts[] = {
	{"repo", required_argument, NULL, OPT_REPO},
	{"revision", required_argument, NULL, OPT_REVISION},
	{"path", required_argument, NULL, OPT_PATH},
	{"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
	{"username", required_argument, NULL, OPT_USERNAME},
	{"username-file", required_argument, NULL, OPT_USERNAME_FILE},
	{"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
	{"password-env", required_argument, NULL, OPT_PASSWORD_ENV},
	{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
	{"token-env", required_argument, NULL, OPT_TOKEN_ENV},
	{"ca-file", required_argument, NULL, OPT_CA_FILE},
	{"ssh-key", required_argument, NULL, OPT_SSH_KEY},
	{"ssh-passphrase-file", required_argument, NULL,
	 OPT_SSH_PASSPHRASE_FILE},
	{"known-hosts", required_argument, NULL, OPT_KNOWN_HOSTS},
	{"insecure-skip-host-key-check", no_argument, NULL,
	 OPT_INSECURE_HOST_KEY},
	{"verify-signatures", required_argument, NULL, OPT_VERIFY_SIGNATURES},
	{"fetch-timeout", required_argument, NULL, OPT_FETCH_TIMEOUT},
	{"verbose", no_argument, NULL, OPT_VERBOSE},
	{"chart", required_argument, NULL, OPT_CHART},
	{"digest", required_argument, NULL, OPT_DIGEST},
	{"plain-http", no_argument, NULL, OPT_PLAIN_HTTP},
	{"source-type", required_argument, NULL, OPT_SOURCE_TYPE},
	{"redirect-host", required_argument, NULL, OPT_REDIRECT_HOST},
	{NULL, 0, NULL, 0},
};

const char cli_source_usage[] =
	"\n"
	"Source (instead of PATH, a Git repository, a Helm chart or an OCI\n"
	"artifact; see docs/git.md and docs/sources.md):\n"
	"      --repo URL             https://, http://, ssh://, host:path,\n"
	"                             file:// or a local repository; with\n"
	"                             --chart a chart repository (https://,\n"
	"                             http:// or oci://); oci://HOST/NAME\n"
	"                             alone: an OCI artifact of manifests\n"
	"      --chart NAME           the Helm chart of the repository\n"
	"      --revision REV         branch, tag, commit id or refs/...\n"
	"                             (default: the remote's HEAD); a chart's\n"
	"                             version or semver range (^1.2); an\n"
	"                             OCI tag, range or sha256:DIGEST\n"
	"      --digest sha256:HEX    refuse a chart or artifact of another\n"
	"                             digest\n"
	"      --plain-http           oci:// over http (a local registry)\n"
	"      --redirect-host HOST   a host a chart repository or registry\n"
	"                             may redirect to (its CDN), followed\n"
	"                             without credentials (repeatable)\n"
	"      --source-type TYPE     git, helm or oci (default: helm with\n"
	"                             --chart, oci for oci://, else git)\n"
	"      --path SUBDIR          the app's directory in the repository\n"
	"      --cache-dir DIR        default $XDG_CACHE_HOME/syncd\n"
	"      --username USER        HTTPS user (SSH: when the URL has none)\n"
	"      --username-file FILE   the user name from FILE (one line)\n"
	"      --password-file FILE   HTTPS password, read from FILE\n"
	"      --password-env VAR     HTTPS password, read from $VAR\n"
	"      --token-file FILE      HTTPS token, read from FILE\n"
	"      --token-env VAR        HTTPS token, read from $VAR\n"
	"      --ca-file FILE         PEM CA bundle instead of the system's\n"
	"      --ssh-key FILE         SSH private key (default: ssh-agent)\n"
	"      --ssh-passphrase-file FILE\n"
	"                             passphrase of the SSH key\n"
	"      --known-hosts FILE     default ~/.ssh/known_hosts\n"
	"      --insecure-skip-host-key-check\n"
	"                             accept any SSH host key (unsafe)\n"
	"      --verify-signatures allowed_signers=FILE|gpg-keyring=FILE\n"
	"                             only render commits signed by a key in\n"
	"                             FILE (repeatable: either one suffices)\n"
	"      --fetch-timeout DUR    one connect and fetch, e.g. 30s, 500ms,\n"
	"                             2m (default 60s)\n"
	"      --verbose              log each poll of the repository\n"
	"\n";

/* Longest --fetch-timeout: an hour is already far beyond any poll. */
#define MAX_TIMEOUT_MS (3600u * 1000u)

/*
 * "30s", "500ms", "2m", "1h" or a bare number of seconds, into
 * milliseconds; > 0 and at most MAX_TIMEOUT_MS.
 */
static int parse_duration(const char *s, unsigned *ms, struct err *err)
{
	uint64_t v;

	if (clk_parse_duration(s, CLK_DURATION_BARE_SECONDS, &v) < 0 || !v ||
	    v > MAX_TIMEOUT_MS)
		return err_set(err, ERR_USAGE,
		       "--fetch-timeout: bad duration \"%s\" (want e.g. 30s, "
		       "500ms, 2m; at most 1h)",
		       s);
	*ms = (unsigned)v;
	return 0;
}

static int take(struct cli_source *s, const char **field, const char *name,
		const char *arg, struct err *err);

static int parse_verify(struct cli_source *s, const char *arg, struct err *err)
{
	struct source_options *g = &s->spec->source;

	static const char ssh[] = "allowed_signers=", gpg[] = "gpg-keyring=";

	if (!strncmp(arg, ssh, sizeof(ssh) - 1) && arg[sizeof(ssh) - 1]) {
		return take(s, &g->verify.allowed_signers_file, "verify-signatures",
			    arg + sizeof(ssh) - 1, err);
	}
	if (!strncmp(arg, gpg, sizeof(gpg) - 1) && arg[sizeof(gpg) - 1]) {
		return take(s, &g->verify.gpg_keyring_file, "verify-signatures",
			    arg + sizeof(gpg) - 1, err);
	}
	return err_set(err, ERR_USAGE,
		       "--verify-signatures: want allowed_signers=FILE or "
		       "gpg-keyring=FILE, not \"%s\"",
		       arg);
}

/* An empty value would silently mean "not set": refuse it. */
static int take(struct cli_source *s, const char **field, const char *name,
		const char *arg, struct err *err)
{
	if (!*arg)
		return err_set(err, ERR_USAGE, "--%s: empty value", name);
	if (app_spec_set(s->spec, field, arg) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	return 1;
}

int cli_source_option(struct cli_source *s, int val, const char *arg,
		      struct err *err)
{
	struct source_options *g = &s->spec->source;
	struct source_auth *a = &g->auth;

	switch (val) {
	case OPT_REPO:
		return take(s, &g->url, "repo", arg, err);
	case OPT_REVISION:
		return take(s, &g->revision, "revision", arg, err);
	case OPT_PATH:
		return take(s, &g->subpath, "path", arg, err);
	case OPT_CACHE_DIR:
		return take(s, &g->cache_dir, "cache-dir", arg, err);
	case OPT_USERNAME:
		return take(s, &a->username, "username", arg, err);
	case OPT_USERNAME_FILE:
		return take(s, &a->username_file, "username-file", arg, err);
	case OPT_PASSWORD_FILE:
		return take(s, &a->password_file, "password-file", arg, err);
	case OPT_PASSWORD_ENV:
		return take(s, &a->password_env, "password-env", arg, err);
	case OPT_TOKEN_FILE:
		return take(s, &a->token_file, "token-file", arg, err);
	case OPT_TOKEN_ENV:
		return take(s, &a->token_env, "token-env", arg, err);
	case OPT_CA_FILE:
		return take(s, &a->ca_file, "ca-file", arg, err);
	case OPT_SSH_KEY:
		return take(s, &a->ssh_key_file, "ssh-key", arg, err);
	case OPT_SSH_PASSPHRASE_FILE:
		return take(s, &a->ssh_passphrase_file, "ssh-passphrase-file", arg,
			    err);
	case OPT_KNOWN_HOSTS:
		return take(s, &a->known_hosts_file, "known-hosts", arg, err);
	case OPT_INSECURE_HOST_KEY:
		a->insecure_skip_host_key_check = true;
		return 1;
	case OPT_VERIFY_SIGNATURES:
		return parse_verify(s, arg, err);
	case OPT_FETCH_TIMEOUT:
		if (parse_duration(arg, &g->fetch_timeout_ms, err) < 0)
			return ERR_USAGE;
		return 1;
	case OPT_VERBOSE:
		s->verbose = true;
		return 1;
	case OPT_CHART:
		if (!s->type_given)
			g->type = SOURCE_HELM;
		return take(s, &g->chart, "chart", arg, err);
	case OPT_DIGEST:
		return take(s, &g->digest, "digest", arg, err);
	case OPT_PLAIN_HTTP:
		g->plain_http = true;
		return 1;
	case OPT_REDIRECT_HOST:
		if (!*arg)
			return err_set(err, ERR_USAGE,
				       "--redirect-host: empty value");
		if (app_spec_add(s->spec, APP_LIST_REDIRECT_HOSTS, arg) < 0)
			return err_set(err, ERR_NOMEM, "out of memory");
		return 1;
	case OPT_SOURCE_TYPE:
		for (int t = 0; source_type_names[t]; t++)
			if (!strcmp(arg, source_type_names[t])) {
				g->type = (enum source_type)t;
				s->type_given = true;
				return 1;
			}
		return err_set(err, ERR_USAGE, "--source-type: \"%s\" is not "
			       "one of git, helm, oci", arg);
	default:
		return 0;
	}
}

/* The first Git-only option given, for "needs --repo"; NULL when none. */
static const char *git_option_given(const struct cli_source *s)
{
	const struct source_options *g = &s->spec->source;
	const struct source_auth *a = &g->auth;

	if (g->revision)
		return "--revision";
	if (g->subpath)
		return "--path";
	if (g->cache_dir)
		return "--cache-dir";
	if (a->username || a->username_file || a->password_file ||
	    a->password_env ||
	    a->token_file || a->token_env)
		return "credential options";
	if (a->ca_file)
		return "--ca-file";
	if (a->ssh_key_file || a->ssh_passphrase_file || a->known_hosts_file ||
	    a->insecure_skip_host_key_check)
		return "SSH options";
	if (g->verify.allowed_signers_file || g->verify.gpg_keyring_file)
		return "--verify-signatures";
	if (g->fetch_timeout_ms)
		return "--fetch-timeout";
	if (g->chart)
		return "--chart";
	if (g->digest)
		return "--digest";
	if (g->plain_http)
		return "--plain-http";
	if (g->redirect_hosts && *g->redirect_hosts)
		return "--redirect-host";
	return NULL;
}

/*
 * The URL for messages before the library has parsed it: user
 * information (which may be a token, as in https://TOKEN@host/) is
 * replaced by "REDACTED". Only scheme URLs carry it; the scp form's user
 * ("git@host:path") is a login name, and a local path has none.
 */
static int redacted_url(struct buf *out, const char *url)
{
	const char *sep = strstr(url, "://"), *host, *end, *at = NULL, *p;

	if (!sep)
		return buf_adds(out, url);
	host = sep + 3;
	end = host + strcspn(host, "/?#");
	for (p = host; p < end; p++)
		if (*p == '@')
			at = p;
	if (!at)
		return buf_adds(out, url);
	if (buf_add(out, url, (size_t)(host - url)) < 0 ||
	    buf_adds(out, "REDACTED") < 0)
		return ERR_NOMEM;
	return buf_adds(out, at);
}

/*
 * Move the problems of `from` into `err`, each starting with `url` unless
 * it names it already: every error of --repo says which repository.
 */
static void move_errors(struct err *err, struct err *from, const char *url,
			int code)
{
	const char *msg = err_msg(from);

	if (!err_count(from)) {
		err_set(err, code, "%s: failed", url);
		return;
	}
	while (*msg) {
		size_t n = strcspn(msg, "\n");

		if (memmem(msg, n, url, strlen(url)))
			err_set(err, code, "%.*s", (int)n, msg);
		else
			err_set(err, code, "%s: %.*s", url, (int)n, msg);
		msg += n;
		if (*msg == '\n')
			msg++;
	}
}

static void log_poll(const struct cli_source *s, const char *url,
		     const struct source_poll_result *r)
{
	char requests[24];

	snprintf(requests, sizeof(requests), "%lu", r->requests);
	log_info("polled repository", "url", url, "revision",
		 s->spec->source.revision ? s->spec->source.revision : "HEAD", "path",
		 s->spec->source.subpath ? s->spec->source.subpath : "", "commit",
		 r->revision, "tree", r->tree, "changed",
		 r->changed ? "true" : "false", "fetched",
		 r->fetched ? "true" : "false", "contacted",
		 r->contacted ? "true" : "false", "requests", requests, NULL);
}

static int prepare_repo(struct cli_source *s, struct err *err)
{
	struct source_poll_result r;
	struct source *gs = NULL;
	struct err gerr = ERR_INIT;
	struct buf url = BUF_INIT;
	const char *name = "the repository";
	char *dir = NULL;
	int error;

	if (!s->type_given && s->spec->source.type == SOURCE_GIT &&
	    !strncmp(s->spec->source.url, "oci://", 6))
		s->spec->source.type = SOURCE_OCI;
	if ((error = redacted_url(&url, s->spec->source.url)) < 0) {
		err_set(&gerr, ERR_NOMEM, "out of memory");
		goto out;
	}
	name = buf_cstr(&url);
	if ((error = source_open(&gs, &s->spec->source, &gerr)) < 0)
		goto out;
	name = source_url(gs);
	if ((error = source_poll(gs, &r, &gerr)) < 0)
		goto out;
	if (s->verbose)
		log_poll(s, name, &r);
	if ((error = source_checkout(gs, &dir, &gerr)) < 0)
		goto out;
	/*
	 * A one-shot command renders every time; the record says which tree
	 * the last command read from this cache, so that --verbose shows
	 * "changed=false" when a commit did not touch --path. Rendering is a
	 * function of the tree alone, so reading it is as good as rendering
	 * it for that purpose.
	 */
	if (r.changed &&
	    (error = source_mark_rendered(gs, r.tree, &gerr)) < 0)
		goto out;
	if (!(s->commit = strdup(r.revision)) || !(s->tree = strdup(r.tree)) ||
	    !(s->cache_path = strdup(source_cache_path(gs)))) {
		error = err_set(&gerr, ERR_NOMEM, "out of memory");
		goto out;
	}
	s->dir = dir;
	dir = NULL;
	s->priv = gs;
	gs = NULL;
out:
	if (error < 0)
		move_errors(err, &gerr, name, error);
	free(dir);
	source_free(gs);
	buf_release(&url);
	err_release(&gerr);
	return error;
}

int cli_source_prepare(struct cli_source *s, const char *path, struct err *err)
{
	const char *opt;

	if (s->spec->source.url) {
		if (path)
			return err_set(err, ERR_USAGE,
				       "give either PATH or --repo, not both");
		return prepare_repo(s, err);
	}
	if ((opt = git_option_given(s)))
		return err_set(err, ERR_USAGE, "%s needs --repo", opt);
	if (!path)
		return err_set(err, ERR_USAGE, "missing PATH");
	if (!(s->dir = strdup(path)))
		return err_set(err, ERR_NOMEM, "out of memory");
	return 0;
}

void cli_source_release(struct cli_source *s)
{
	if (!s)
		return;
	free(s->dir);
	free(s->commit);
	free(s->tree);
	free(s->cache_path);
	source_free(s->priv);
	s->dir = s->commit = s->tree = s->cache_path = NULL;
	s->priv = NULL;
}
