/*
 * The Git source (see git.h): libgit2 for the protocol and the object
 * database, util/proc.h for signature checks and known_hosts lookups.
 * This is the only file that includes <git2.h>.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <git2.h>

#include "source/internal.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/proc.h"
#include "util/sha256.h"
#include "util/clock.h"
#include "util/file.h"

#include "util/banned.h" /* last */

#define HEXSZ SOURCE_GIT_OID_HEXSZ
/* Secrets, signatures and known_hosts output are small. */
#define SECRET_CAP 4096
#define TOOL_OUT_CAP (64u << 10)
/* Nesting of directories written by a checkout (as archives allow). */
#define MAX_TREE_DEPTH 64
/* Nesting the scan of a local repository follows before giving up. */
#define MAX_SCAN_DEPTH 1024
/* Files, links and directories one checkout writes (as archives allow). */
#define MAX_CHECKOUT_ENTRIES 20000u
#define DEFAULT_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

enum url_kind { URL_HTTP, URL_SSH, URL_LOCAL };

struct source_git {
	char *url;          /* as given (may hold a user name, never a
			       password); handed to libgit2 */
	char *display;      /* without user information */
	char *url_user;     /* user name from the URL, or NULL */
	char *host;         /* ssh: host and port for known_hosts */
	unsigned port;
	enum url_kind kind;
	char *revision;
	char *subpath;
	char *cache;        /* <cache_dir>/<sha256> */
	char *repo_path;
	char *state_path;   /* state/<key> */

	char *username;
	char *password_file, *password_env, *token_file, *token_env;
	char *ca_file;
	struct src_http *http; /* the ref advertisement's kept-alive handle */
	char *ssh_key_file, *ssh_passphrase_file, *known_hosts_file;
	bool skip_host_key;
	char *allowed_signers, *gpg_keyring;
	unsigned timeout_ms;
	uint64_t max_repo, max_blob;

	git_repository *repo;
	int lock_fd;

	/* Last good poll. */
	char commit[HEXSZ + 1];
	char tree[HEXSZ + 1];
	char verified[HEXSZ + 1]; /* commit whose signature passed */
	char rendered[HEXSZ + 1];
	unsigned long requests;

	/* Per network operation, read by the callbacks. */
	struct timespec deadline;
	timer_t timer;
	bool timer_armed;
	sigset_t net_oldmask;	/* the thread's mask before net_begin() */
	bool pipe_was_pending;	/* SIGPIPE was pending before net_begin() */
	bool net_active;	/* between net_begin() and net_end() */
	unsigned cred_attempts;
	bool auth_failed, timed_out, too_big;
	struct buf cb_msg;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_error;
/* GIT_OPT_SET_SSL_CERT_LOCATIONS is process-wide: network operations
 * that depend on it run one at a time. */
static pthread_mutex_t ca_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool ca_changed;

/*
 * libgit2 1.5 has no network timeout: a server that accepts the
 * connection and then says nothing would block a poll forever. So during
 * a network operation a per-thread timer sends this signal to the polling
 * thread once the deadline has passed (and every 100 ms after), whose
 * empty handler, installed without SA_RESTART, makes the blocked
 * connect(2)/recv(2) fail with EINTR; the callbacks and net_error() then
 * report the timeout. The handler is installed only when the signal is
 * still at its default disposition.
 */
#define TIMEOUT_SIGNAL (SIGRTMIN + 5)
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif
static bool timeout_signal_ok;

static void on_timeout_signal(int sig)
{
	(void)sig;
}

static void timeout_signal_init(void)
{
	struct sigaction sa, old;

	if (sigaction(TIMEOUT_SIGNAL, NULL, &old) < 0 ||
	    old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_timeout_signal;
	sigemptyset(&sa.sa_mask);
	timeout_signal_ok = sigaction(TIMEOUT_SIGNAL, &sa, NULL) == 0;
}

static void lib_init(void)
{
	timeout_signal_init();
	init_error = git_libgit2_init() < 0;
	/* Refs we create must point at objects that exist. */
	if (!init_error)
		git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, 1);
}

static const char *git_msg(void)
{
	const git_error *e = git_error_last();

	return e && e->message ? e->message : "unknown error";
}

static char *xstrdup_opt(const char *s, bool *oom)
{
	char *r;

	if (!s || !*s)
		return NULL;
	if (!(r = strdup(s)))
		*oom = true;
	return r;
}

static bool is_hex(const char *s, size_t min, size_t max)
{
	size_t n = strlen(s);

	if (n < min || n > max)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/*
 * RFC 3986's scheme: a letter, then letters, digits, "+", "-", ".". Only
 * a valid one is named in an error: what precedes "://" in a mistyped
 * URL ("user:token@host://...") can be a credential.
 */
static bool scheme_valid(const char *p, const char *end)
{
	if (p == end || end - p > 32 || !isalpha((unsigned char)*p))
		return false;
	for (; p < end; p++)
		if (!isalnum((unsigned char)*p) && !strchr("+-.", *p))
			return false;
	return true;
}

/*
 * Split the URL: its kind, its display form (user information removed),
 * the user name, and for SSH the host and port. A password in the URL is
 * refused so that secrets never travel through argv or the cache name.
 */
static int parse_url(struct source_git *s, const char *url, struct err *err)
{
	const char *p, *auth, *end, *at, *colon;
	struct buf b = BUF_INIT;
	int error = 0;

	if (!strncmp(url, "https://", 8) || !strncmp(url, "http://", 7))
		s->kind = URL_HTTP;
	else if (!strncmp(url, "ssh://", 6))
		s->kind = URL_SSH;
	else if (!strncmp(url, "file://", 7))
		s->kind = URL_LOCAL;
	else if (strstr(url, "://") && scheme_valid(url, strstr(url, "://")))
		return err_set(err, ERR_INVALID,
			       "%.*s: unsupported URL scheme (https, http, "
			       "ssh, file or a local path)",
			       (int)(strstr(url, "://") - url), url);
	else if (strstr(url, "://"))
		return err_set(err, ERR_INVALID,
			       "the URL's scheme is not valid (https, http, "
			       "ssh, file or a local path)");
	else if (url[0] != '/' && url[0] != '.' &&
		 (colon = strchr(url, ':')) &&
		 (!strchr(url, '/') || colon < strchr(url, '/')))
		s->kind = URL_SSH; /* scp form: [user@]host:path */
	else
		s->kind = URL_LOCAL;

	if (s->kind == URL_LOCAL && strncmp(url, "file://", 7)) {
		/* A local path: absolute, so that the cache name and the
		 * meaning do not depend on the working directory. */
		char *abs = realpath(url, NULL);

		if (!abs)
			return err_set(err, ERR_NOTFOUND, "%s: %s", url,
				       err_errno_str(errno));
		s->url = abs;
		if (!(s->display = strdup(abs)))
			return err_set(err, ERR_NOMEM, "out of memory");
		return 0;
	}

	p = strstr(url, "://");
	auth = p ? p + 3 : url;
	end = auth + strcspn(auth, p ? "/?#" : ":");
	at = memchr(auth, '@', (size_t)(end - auth));
	/* The last '@' of the authority ends the user information. */
	while (at) {
		const char *next = memchr(at + 1, '@', (size_t)(end - at - 1));

		if (!next)
			break;
		at = next;
	}
	if (at) {
		if (memchr(auth, ':', (size_t)(at - auth))) {
			error = err_set(err, ERR_INVALID,
					"a password inside the repository "
					"URL is not accepted; use a password "
					"file or environment variable");
			goto out;
		}
		if (!(s->url_user = strndup(auth, (size_t)(at - auth))))
			goto oom;
	}
	if (buf_add(&b, url, (size_t)(auth - url)) < 0 ||
	    buf_adds(&b, at ? at + 1 : auth) < 0)
		goto oom;
	if (!(s->display = buf_detach(&b, NULL)) || !(s->url = strdup(url)))
		goto oom;

	if (s->kind == URL_SSH) {
		const char *h = at ? at + 1 : auth;
		size_t hl = (size_t)(end - h);

		s->port = 22;
		if (p) {
			/* ssh://host[:port]/path, host maybe [v6]. */
			const char *c = NULL, *q;

			if (*h == '[' && (q = memchr(h, ']', hl))) {
				if (q + 1 < end && q[1] == ':')
					c = q + 1;
				s->host = strndup(h + 1, (size_t)(q - h - 1));
			} else {
				c = memchr(h, ':', hl);
				s->host = strndup(h, c ? (size_t)(c - h) : hl);
			}
			if (c && c + 1 < end)
				s->port = (unsigned)strtoul(c + 1, NULL, 10);
		} else {
			s->host = strndup(h, hl);
		}
		if (!s->host)
			goto oom;
		if (!s->port || s->port > 65535) {
			error = err_set(err, ERR_INVALID, "%s: bad port",
					s->display);
			goto out;
		}
	}
	goto out;
oom:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	buf_release(&b);
	return error;
}

int src_mkdir_p(const char *path, unsigned mode, struct err *err)
{
	char *tmp = strdup(path), *p;
	int error = 0;

	if (!tmp)
		return err_set(err, ERR_NOMEM, "out of memory");
	for (p = tmp + 1; ; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST) {
			error = err_set(err, ERR_IO, "%s: %s", tmp,
					err_errno_str(errno));
			break;
		}
		*p = c;
		if (!c)
			break;
	}
	free(tmp);
	return error;
}

char *src_path_join(const char *a, const char *b)
{
	char *r;

	if (asprintf(&r, "%s/%s", a, b) < 0)
		return NULL;
	return r;
}

static void deadline_start(struct source_git *s)
{
	s->deadline = clk_mono_after_ms(s->timeout_ms);
}

static bool deadline_passed(const struct source_git *s)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > s->deadline.tv_sec ||
	       (now.tv_sec == s->deadline.tv_sec &&
		now.tv_nsec >= s->deadline.tv_nsec);
}

int src_cache_lock(int fd, const char *cache, const char *display,
		   unsigned timeout_ms, struct err *err)
{
	uint64_t until = clk_mono_ms() + timeout_ms;

	for (;;) {
		if (!flock(fd, LOCK_EX | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return err_set(err, ERR_IO, "%s/lock: %s", cache,
				       err_errno_str(errno));
		if (clk_mono_ms() > until)
			return err_set(err, ERR_TIMEOUT,
				       "%s: cache is locked by another "
				       "process for more than %u ms",
				       display, timeout_ms);
		clk_sleep_ms(5);
	}
}

/* Take the cache's lock, waiting at most the fetch timeout (which
 * starts the operation's deadline). */
static int cache_lock(struct source_git *s, struct err *err)
{
	deadline_start(s);
	return src_cache_lock(s->lock_fd, s->cache, s->display, s->timeout_ms,
			      err);
}

static void cache_unlock(struct source_git *s)
{
	flock(s->lock_fd, LOCK_UN);
}

/* The user name from a file: its first line, without the newline. */
int src_read_username(char **out, const char *file, struct err *err)
{
	struct buf b = BUF_INIT;
	int error;

	if ((error = file_read(&b, file, file, 4096, err)) < 0)
		return error;
	while (b.len && (b.ptr[b.len - 1] == '\n' || b.ptr[b.len - 1] == '\r'))
		b.ptr[--b.len] = '\0';
	if (!b.len || memchr(b.ptr, '\n', b.len) || memchr(b.ptr, '\0', b.len)) {
		buf_release(&b);
		return err_set(err, ERR_INVALID, "%s: want one line holding "
			       "the user name", file);
	}
	free(*out);
	*out = buf_detach(&b, NULL);
	return 0;
}

/* The HTTPS password or token: file first, then environment variable. */
static int read_secret(struct source_git *s, struct buf *b, bool *found,
		       struct err *err)
{
	const char *file = s->password_file ? s->password_file
					    : s->token_file;
	const char *env = s->password_env ? s->password_env : s->token_env;
	const char *v;

	*found = false;
	if (file) {
		*found = true;
		return file_read_secret(b, file, SECRET_CAP, err);
	}
	if (env) {
		if (!(v = getenv(env)))
			return err_set(err, ERR_INVALID,
				       "environment variable %s is not set",
				       env);
		*found = true;
		buf_init(b, SECRET_CAP);
		return buf_adds(b, v) < 0
			       ? err_set(err, ERR_LIMIT, "%s is too long", env)
			       : 0;
	}
	return 0;
}

static void cb_fail(struct source_git *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void cb_fail(struct source_git *s, const char *fmt, ...)
{
	va_list ap;

	if (s->cb_msg.len)
		return;
	va_start(ap, fmt);
	buf_vaddf(&s->cb_msg, fmt, ap);
	va_end(ap);
}

/*
 * Credentials. One attempt per connection: when the server refuses what
 * we gave, libgit2 calls again, and we give up instead of looping.
 */
static int cb_credentials(git_credential **out, const char *url,
			  const char *user_from_url, unsigned int allowed,
			  void *payload)
{
	struct source_git *s = payload;
	const char *user = user_from_url && *user_from_url ? user_from_url
			   : s->username ? s->username : "git";
	struct buf secret = BUF_INIT, pass = BUF_INIT;
	struct err e = ERR_INIT;
	bool found;
	int error = GIT_PASSTHROUGH;

	(void)url;
	if (allowed & GIT_CREDENTIAL_USERNAME)
		return git_credential_username_new(out, user);
	if (s->cred_attempts++ > 0) {
		s->auth_failed = true;
		return GIT_EAUTH;
	}
	if (s->kind == URL_HTTP &&
	    (allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT)) {
		if (read_secret(s, &secret, &found, &e) < 0) {
			cb_fail(s, "%s", err_first(&e));
			error = GIT_EUSER;
		} else if (found) {
			error = git_credential_userpass_plaintext_new(
				out, user, buf_cstr(&secret));
		} else {
			s->auth_failed = true;
			error = GIT_EAUTH;
		}
	} else if (s->kind == URL_SSH &&
		   (allowed & GIT_CREDENTIAL_SSH_KEY)) {
		if (s->ssh_key_file) {
			char *pub = NULL;

			if (s->ssh_passphrase_file &&
			    file_read_secret(&pass, s->ssh_passphrase_file,
					     SECRET_CAP, &e) < 0) {
				cb_fail(s, "%s", err_first(&e));
				error = GIT_EUSER;
				goto out;
			}
			/* libssh2 wants the public half beside the key
			 * when its crypto backend cannot derive it. */
			if (asprintf(&pub, "%s.pub", s->ssh_key_file) >= 0 &&
			    access(pub, R_OK) < 0) {
				free(pub);
				pub = NULL;
			}
			error = git_credential_ssh_key_new(
				out, user, pub, s->ssh_key_file,
				pass.ptr ? pass.ptr : NULL);
			free(pub);
		} else if (getenv("SSH_AUTH_SOCK")) {
			error = git_credential_ssh_key_from_agent(out, user);
		} else {
			s->auth_failed = true;
			error = GIT_EAUTH;
		}
	}
out:
	file_secret_release(&secret);
	file_secret_release(&pass);
	err_release(&e);
	return error;
}

/* "SHA256:<base64 without padding>", as ssh-keygen -l prints it. */
static void ssh_fingerprint(const void *key, size_t len, char *out,
			    size_t outlen)
{
	uint8_t d[SHA256_DIGEST_SIZE];
	struct buf b = BUF_INIT;

	sha256(key, len, d);
	base64_encode(&b, d, sizeof(d), BASE64_NOPAD);
	snprintf(out, outlen, "SHA256:%s", buf_cstr(&b));
	buf_release(&b);
}

/*
 * Look the host up in the known_hosts file with `ssh-keygen -F` (which
 * understands hashed names and [host]:port) and compare the keys found
 * with the one the server presented. 0: a listed key matches. Otherwise
 * a message for the refusal: unknown host, changed key or revoked key.
 */
static int check_host_key(struct source_git *s, const void *key, size_t klen)
{
	char fp[64], hostname[300], *home_kh = NULL;
	const char *kh = s->known_hosts_file;
	const char *argv[6];
	struct proc_options po = PROC_OPTIONS_INIT;
	struct proc_result pr;
	struct err e = ERR_INIT;
	struct buf blob = BUF_INIT;
	bool any = false, match = false, revoked = false;
	char *line, *save = NULL;
	int error = -1;

	ssh_fingerprint(key, klen, fp, sizeof(fp));
	if (s->port == 22)
		snprintf(hostname, sizeof(hostname), "%s", s->host);
	else
		snprintf(hostname, sizeof(hostname), "[%s]:%u", s->host,
			 s->port);
	if (!kh) {
		const char *home = getenv("HOME");

		if (!home || asprintf(&home_kh, "%s/.ssh/known_hosts",
				      home) < 0) {
			home_kh = NULL;
			cb_fail(s, "host key of %s (%s) cannot be checked: "
				"no known_hosts file", hostname, fp);
			return -1;
		}
		kh = home_kh;
	}
	if (access(kh, R_OK) < 0) {
		cb_fail(s, "host key of %s (%s) cannot be checked: %s: %s",
			hostname, fp, kh, err_errno_str(errno));
		goto out;
	}
	argv[0] = "ssh-keygen";
	argv[1] = "-F";
	argv[2] = hostname;
	argv[3] = "-f";
	argv[4] = kh;
	argv[5] = NULL;
	po.timeout_ms = 10000;
	po.stdout_cap = TOOL_OUT_CAP;
	if (proc_run(&pr, argv, &po, &e) < 0) {
		cb_fail(s, "host key of %s (%s) cannot be checked: %s",
			hostname, fp, err_first(&e));
		proc_result_release(&pr);
		goto out;
	}
	for (line = strtok_r(pr.out.ptr ? pr.out.ptr : (char *)"", "\n",
			     &save);
	     line; line = strtok_r(NULL, "\n", &save)) {
		char *f[5] = {0}, *fs = NULL, *t;
		int n = 0, k = 0;

		if (*line == '#')
			continue;
		for (t = strtok_r(line, " \t", &fs); t && n < 5;
		     t = strtok_r(NULL, " \t", &fs))
			f[n++] = t;
		if (n > 0 && f[0][0] == '@')
			k = 1;
		if (n < k + 3)
			continue;
		/* Certificate authorities are not supported: such a line
		 * does not make the host known. */
		if (k && strcmp(f[0], "@revoked"))
			continue;
		buf_reset(&blob);
		if (base64_decode(&blob, f[k + 2], strlen(f[k + 2]), 0) < 0)
			continue;
		bool same = blob.len == klen && !memcmp(blob.ptr, key, klen);

		if (k) {
			revoked |= same;
			continue;
		}
		any = true;
		match |= same;
	}
	proc_result_release(&pr);
	if (revoked)
		cb_fail(s, "host key of %s (%s) is revoked in %s", hostname,
			fp, kh);
	else if (match)
		error = 0;
	else if (any)
		cb_fail(s, "host key of %s changed: the server offers %s, "
			"which is not the key listed in %s; refusing to "
			"connect", hostname, fp, kh);
	else
		cb_fail(s, "host key of %s is unknown (%s not in %s); "
			"refusing to connect", hostname, fp, kh);
out:
	buf_release(&blob);
	err_release(&e);
	free(home_kh);
	return error;
}

static int cb_certificate(git_cert *cert, int valid, const char *host,
			  void *payload)
{
	struct source_git *s = payload;
	git_cert_hostkey *hk;

	(void)host;
	if (cert->cert_type != GIT_CERT_HOSTKEY_LIBSSH2)
		/* TLS: libgit2 has verified the chain against the CAs
		 * (ours when ca_file is set) and the name; keep that. */
		return GIT_PASSTHROUGH;
	(void)valid;
	if (s->skip_host_key)
		return 0;
	hk = (git_cert_hostkey *)cert;
	if (!(hk->type & GIT_CERT_SSH_RAW) || !hk->hostkey) {
		cb_fail(s, "host key of %s cannot be checked: no raw key",
			s->display);
		return GIT_ECERTIFICATE;
	}
	return check_host_key(s, hk->hostkey, hk->hostkey_len) < 0
		       ? GIT_ECERTIFICATE
		       : 0;
}

static int cb_transfer(const git_indexer_progress *st, void *payload)
{
	struct source_git *s = payload;

	if (st->received_bytes > s->max_repo) {
		s->too_big = true;
		return -1;
	}
	if (deadline_passed(s)) {
		s->timed_out = true;
		return -1;
	}
	return 0;
}

static int cb_sideband(const char *str, int len, void *payload)
{
	struct source_git *s = payload;

	(void)str;
	(void)len;
	if (deadline_passed(s)) {
		s->timed_out = true;
		return -1;
	}
	return 0;
}

static void callbacks_init(struct source_git *s, git_remote_callbacks *cb)
{
	git_remote_init_callbacks(cb, GIT_REMOTE_CALLBACKS_VERSION);
	cb->credentials = cb_credentials;
	cb->certificate_check = cb_certificate;
	cb->transfer_progress = cb_transfer;
	cb->sideband_progress = cb_sideband;
	cb->payload = s;
}

/*
 * Turn a failed network call into one line: our own reason when a
 * callback gave one (host key, timeout, size, authentication), else
 * libgit2's, with any user information of the URL blanked out.
 */
static int net_error(struct source_git *s, const char *what, int gerr,
		     struct err *err)
{
	struct buf m = BUF_INIT;
	const char *msg = git_msg(), *p;
	int code = ERR_IO, error;

	if (s->cb_msg.len) {
		code = ERR_INVALID;
		msg = buf_cstr(&s->cb_msg);
	} else if (s->auth_failed || gerr == GIT_EAUTH) {
		return err_set(err, ERR_INVALID,
			       "authentication failed for %s", s->display);
	} else if (s->timed_out || deadline_passed(s)) {
		return err_set(err, ERR_TIMEOUT, "%s of %s timed out after "
			       "%u ms", what, s->display, s->timeout_ms);
	} else if (s->too_big) {
		return err_set(err, ERR_LIMIT, "%s of %s: more than %llu "
			       "bytes received", what, s->display,
			       (unsigned long long)s->max_repo);
	} else if (gerr == GIT_ECERTIFICATE) {
		code = ERR_INVALID;
	}
	if (s->url_user && *s->url_user) {
		while ((p = strstr(msg, s->url_user))) {
			buf_add(&m, msg, (size_t)(p - msg));
			buf_adds(&m, "***");
			msg = p + strlen(s->url_user);
		}
	}
	buf_adds(&m, msg);
	error = err_set(err, code, "%s of %s failed: %s", what, s->display,
			buf_cstr(&m));
	buf_release(&m);
	return error;
}

static void net_begin(struct source_git *s)
{
	struct sigevent sev;
	struct itimerspec its;
	sigset_t pipe_set, pending;

	/*
	 * libgit2 does not write with MSG_NOSIGNAL everywhere: a server that
	 * goes away mid-request would raise SIGPIPE and kill the process. It
	 * is blocked in this thread for the operation and consumed after it
	 * if the operation raised it (a library must not change the
	 * process-wide disposition); the write itself fails with EPIPE.
	 */
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	s->pipe_was_pending = sigismember(&pending, SIGPIPE) == 1;
	pthread_sigmask(SIG_BLOCK, &pipe_set, &s->net_oldmask);
	s->net_active = true;

	s->cred_attempts = 0;
	s->auth_failed = s->timed_out = s->too_big = false;
	buf_reset(&s->cb_msg);
	deadline_start(s);
	git_error_clear();
	if (!timeout_signal_ok)
		return;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = TIMEOUT_SIGNAL;
	sev.sigev_notify_thread_id = gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, &s->timer) < 0)
		return;
	memset(&its, 0, sizeof(its));
	its.it_value = s->deadline;
	its.it_interval.tv_nsec = 100000000L;
	if (timer_settime(s->timer, TIMER_ABSTIME, &its, NULL) < 0) {
		timer_delete(s->timer);
		return;
	}
	s->timer_armed = true;
}

static void net_end(struct source_git *s)
{
	struct timespec zero = {0, 0};
	sigset_t pipe_set, pending;

	if (s->timer_armed)
		timer_delete(s->timer);
	s->timer_armed = false;
	if (!s->net_active)
		return; /* failed before net_begin() */
	s->net_active = false;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	if (!s->pipe_was_pending && sigismember(&pending, SIGPIPE) == 1)
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 &&
		       errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &s->net_oldmask, NULL);
}

/* Sum of file sizes under path (the cached repository). */
static int dir_size(int dfd, uint64_t *total, int depth)
{
	DIR *d;
	struct dirent *de;
	int error = 0;

	if (depth > 16 || !(d = fdopendir(dfd))) {
		close(dfd);
		return depth > 16 ? 0 : -1;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd(d), de->d_name,
					O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			if (fd >= 0 && dir_size(fd, total, depth + 1) < 0)
				error = -1;
		} else {
			*total += (uint64_t)st.st_size;
		}
	}
	closedir(d);
	return error;
}

static int check_repo_size(struct source_git *s, struct err *err)
{
	uint64_t total = 0;
	int fd = open(s->repo_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || dir_size(fd, &total, 0) < 0)
		return err_set(err, ERR_IO, "%s: %s", s->repo_path,
			       err_errno_str(errno));
	if (total > s->max_repo)
		return err_set(err, ERR_LIMIT, "repository %s is %llu bytes, "
			       "over the limit of %llu bytes", s->display,
			       (unsigned long long)total,
			       (unsigned long long)s->max_repo);
	return 0;
}

/* "refs/heads/main" -> "refs/syncd/heads/main"; "HEAD" -> refs/syncd/HEAD. */
static char *local_ref_name(const char *remote)
{
	char *r;

	if (!strncmp(remote, "refs/", 5))
		remote += 5;
	if (asprintf(&r, "refs/syncd/%s", remote) < 0)
		return NULL;
	return r;
}

struct wanted {
	const char *name;     /* remote ref to fetch; NULL: fetch all */
	git_oid oid;          /* what it points to (tag object for tags) */
	bool found;
};

/*
 * Pick the remote ref the revision names: HEAD for none (following its
 * symbolic target for the fetch), else refs/..., a branch, a tag.
 */
static void find_wanted(struct source_git *s, const git_remote_head **heads,
			size_t n, struct wanted *w)
{
	static const char *const fmts[] = {"%s", "refs/heads/%s",
					   "refs/tags/%s"};
	const char *rev = s->revision;
	char name[512];
	size_t i, f;

	memset(w, 0, sizeof(*w));
	if (!rev) {
		for (i = 0; i < n; i++)
			if (!strcmp(heads[i]->name, "HEAD")) {
				w->found = true;
				w->oid = heads[i]->oid;
				w->name = heads[i]->symref_target &&
						  *heads[i]->symref_target
					  ? heads[i]->symref_target
					  : "HEAD";
				return;
			}
		return;
	}
	for (f = 0; f < 3; f++) {
		if (f == 0 && strncmp(rev, "refs/", 5))
			continue;
		snprintf(name, sizeof(name), fmts[f], rev);
		for (i = 0; i < n; i++)
			if (!strcmp(heads[i]->name, name)) {
				w->found = true;
				w->oid = heads[i]->oid;
				w->name = heads[i]->name;
				return;
			}
	}
}

/* Object ids already looked at by a scan: an open-addressing set. */
struct oidset {
	git_oid *slots;
	size_t n, cap;
};

static int oidset_add(struct oidset *set, const git_oid *oid)
{
	static const git_oid zero;
	size_t i, h;

	if ((set->n + 1) * 2 > set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 1024;
		git_oid *slots = calloc(cap, sizeof(*slots));

		if (!slots)
			return -1;
		for (i = 0; i < set->cap; i++) {
			if (!memcmp(&set->slots[i], &zero, sizeof(zero)))
				continue;
			memcpy(&h, set->slots[i].id, sizeof(h));
			for (h %= cap; memcmp(&slots[h], &zero, sizeof(zero));
			     h = (h + 1) % cap)
				;
			slots[h] = set->slots[i];
		}
		free(set->slots);
		set->slots = slots;
		set->cap = cap;
	}
	memcpy(&h, oid->id, sizeof(h));
	for (h %= set->cap; memcmp(&set->slots[h], &zero, sizeof(zero));
	     h = (h + 1) % set->cap)
		if (git_oid_equal(&set->slots[h], oid))
			return 0;
	set->slots[h] = *oid;
	set->n++;
	return 1;
}

struct scan {
	struct source_git *s;
	git_repository *src;
	git_odb *odb;
	struct oidset seen;
	struct buf path;
	char commit[HEXSZ + 1];
};

static int scan_tree(struct scan *sc, const git_oid *id, int depth,
		     struct err *err)
{
	struct source_git *s = sc->s;
	git_tree *tree = NULL;
	size_t i, n, plen = sc->path.len;
	int added, error = 0;

	if ((added = oidset_add(&sc->seen, id)) <= 0)
		return added < 0 ? err_set(err, ERR_NOMEM, "out of memory") : 0;
	if (depth > MAX_SCAN_DEPTH)
		return err_set(err, ERR_LIMIT,
			       "%.200s%s: directories nested "
			       "deeper than %d in commit %s of %s",
			       buf_cstr(&sc->path),
			       sc->path.len > 200 ? "..." : "", MAX_SCAN_DEPTH,
			       sc->commit, s->display);
	if (git_tree_lookup(&tree, sc->src, id) < 0)
		return err_set(err, ERR_IO, "%s: %s", s->display, git_msg());
	n = git_tree_entrycount(tree);
	for (i = 0; i < n && !error; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		git_filemode_t mode = git_tree_entry_filemode(e);
		git_object_t type;
		size_t len;

		buf_truncate(&sc->path, plen);
		if (plen)
			buf_addch(&sc->path, '/');
		buf_adds(&sc->path, git_tree_entry_name(e));
		if (mode == GIT_FILEMODE_COMMIT)
			continue;
		if (mode == GIT_FILEMODE_TREE) {
			error = scan_tree(sc, git_tree_entry_id(e), depth + 1,
					  err);
			continue;
		}
		if ((added = oidset_add(&sc->seen, git_tree_entry_id(e))) < 0)
			error = err_set(err, ERR_NOMEM, "out of memory");
		if (added <= 0)
			continue;
		if (git_odb_read_header(&len, &type, sc->odb,
					git_tree_entry_id(e)) < 0)
			error = err_set(err, ERR_IO, "%s: %s", s->display,
					git_msg());
		else if (len > s->max_blob)
			error = err_set(err, ERR_LIMIT,
					"%s: file of %zu bytes "
					"in commit %s of %s, over the limit "
					"of %llu bytes",
					buf_cstr(&sc->path), len, sc->commit,
					s->display,
					(unsigned long long)s->max_blob);
	}
	buf_truncate(&sc->path, plen);
	git_tree_free(tree);
	return error;
}

/*
 * Fetching from a local repository packs the objects in this process:
 * libgit2 reads every object whole, so one huge file would be inflated
 * into memory before any limit could see it. So the commits a fetch
 * would bring (from `want`, down to what the cache already has) are
 * scanned first, reading only object headers: a file over max_blob is
 * refused here, naming its path and commit.
 */
static int local_precheck(struct source_git *s, const git_oid *want,
			  size_t nwant, struct err *err)
{
	struct scan sc = {s, NULL, NULL, {NULL, 0, 0}, BUF_INIT, ""};
	git_revwalk *walk = NULL;
	git_reference_iterator *it = NULL;
	git_reference *ref;
	const char *path = s->url;
	git_oid oid;
	size_t i;
	int error = 0;

	if (!strncmp(path, "file://", 7))
		path += 7;
	if (git_repository_open_ext(&sc.src, path,
				    GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0 ||
	    git_repository_odb(&sc.odb, sc.src) < 0 ||
	    git_revwalk_new(&walk, sc.src) < 0) {
		/* The fetch itself reports what is wrong with it. */
		goto out;
	}
	for (i = 0; i < nwant; i++)
		git_revwalk_push(walk, &want[i]);
	if (!git_reference_iterator_glob_new(&it, s->repo, "refs/syncd/*"))
		while (!git_reference_next(&ref, it)) {
			const git_oid *t = git_reference_target(ref);

			if (t && git_odb_exists(sc.odb, t))
				git_revwalk_hide(walk, t);
			git_reference_free(ref);
		}
	while (!error && !git_revwalk_next(&oid, walk)) {
		git_commit *c = NULL;

		if (git_commit_lookup(&c, sc.src, &oid) < 0)
			continue;
		git_oid_tostr(sc.commit, sizeof(sc.commit), &oid);
		error = scan_tree(&sc, git_commit_tree_id(c), 0, err);
		git_commit_free(c);
	}
out:
	git_reference_iterator_free(it);
	git_revwalk_free(walk);
	git_odb_free(sc.odb);
	git_repository_free(sc.src);
	free(sc.seen.slots);
	buf_release(&sc.path);
	return error;
}

static int download(struct source_git *s, git_remote *remote,
		    const char *const *specs, size_t nspecs,
		    const git_oid *want, size_t nwant, struct err *err)
{
	git_fetch_options fo;
	git_strarray refspecs = {(char **)specs, nspecs};
	int gerr, error;

	if (s->kind == URL_LOCAL &&
	    (error = local_precheck(s, want, nwant, err)) < 0)
		return error;
	git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
	callbacks_init(s, &fo.callbacks);
	fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	fo.update_fetchhead = 0;
	fo.prune = GIT_FETCH_NO_PRUNE;
	s->requests++;
	if ((gerr = git_remote_download(remote, &refspecs, &fo)) < 0)
		return net_error(s, "fetch", gerr, err);
	return check_repo_size(s, err);
}

/* Point refs/syncd/<name> at oid so later fetches negotiate from it. */
static int set_local_ref(struct source_git *s, const char *remote_name,
			 const git_oid *oid, struct err *err)
{
	git_reference *ref = NULL;
	char *name = local_ref_name(remote_name);
	git_oid cur;
	int error = 0;

	if (!name)
		return err_set(err, ERR_NOMEM, "out of memory");
	/* Unchanged: no write, which keeps an idle poll cheap. */
	if (!git_reference_name_to_id(&cur, s->repo, name) &&
	    git_oid_equal(&cur, oid))
		goto out;
	if (git_reference_create(&ref, s->repo, name, oid, 1, NULL) < 0)
		error = err_set(err, ERR_IO, "%s: %s: %s", s->repo_path, name,
				git_msg());
out:
	git_reference_free(ref);
	free(name);
	return error;
}

static bool have_object(struct source_git *s, const git_oid *oid)
{
	git_odb *odb = NULL;
	bool r = false;

	if (!git_repository_odb(&odb, s->repo))
		r = git_odb_exists(odb, oid);
	git_odb_free(odb);
	return r;
}

/* ---- the ref advertisement over src_http ---- */

/* Bytes of a ref advertisement read at most (a repository with tens of
 * thousands of tags); larger ones go the libgit2 way. */
#define ADVERT_MAX (16u << 20)

struct advert {
	git_remote_head *heads;
	const git_remote_head **ptrs;
	size_t n, cap;
	char *head_target; /* HEAD's symref target, from the capabilities */
};

static void advert_release(struct advert *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->heads[i].name);
	free(a->heads);
	free(a->ptrs);
	free(a->head_target);
}

/* The length of the pkt-line at p (4 hex digits, counting themselves). */
static long pkt_len(const char *p, const char *end)
{
	long n = 0;

	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		int c = (unsigned char)p[i], d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else
			return -1;
		n = n * 16 + d;
	}
	return n;
}

static int advert_add(struct advert *a, const char *hex, const char *name,
		      size_t len)
{
	git_remote_head *h;

	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;

		if (!(h = realloc(a->heads, cap * sizeof(*h))))
			return ERR_NOMEM;
		a->heads = h;
		a->cap = cap;
	}
	h = &a->heads[a->n];
	memset(h, 0, sizeof(*h));
	if (git_oid_fromstrn(&h->oid, hex, HEXSZ) < 0)
		return ERR_PARSE;
	if (!(h->name = strndup(name, len)))
		return ERR_NOMEM;
	a->n++;
	return 0;
}

/*
 * Smart HTTP's ref advertisement (protocol v0/v1): "# service=..." and a
 * flush, then "<oid> <ref>\0<capabilities>" and "<oid> <ref>" lines, and a
 * flush. 0, ERR_PARSE for anything else (the caller lets libgit2 try), or
 * ERR_NOMEM.
 */
static int advert_parse(struct advert *a, const char *p, size_t size)
{
	const char *end = p + size;
	bool service = false, first = true;
	long n;

	while ((n = pkt_len(p, end)) >= 0) {
		const char *line = p + 4, *nul, *sp;
		size_t len;
		int error;

		if (n == 0) { /* flush */
			p += 4;
			if (!service)
				return ERR_PARSE;
			if (!first)
				break;
			continue;
		}
		if (n < 4 || n > end - p)
			return ERR_PARSE;
		p += n;
		len = (size_t)n - 4;
		if (len && line[len - 1] == '\n')
			len--;
		if (!service) {
			if (len < 10 || strncmp(line, "# service=", 10))
				return ERR_PARSE;
			service = true;
			continue;
		}
		if (len < HEXSZ + 2 || line[HEXSZ] != ' ')
			return ERR_PARSE;
		nul = memchr(line, '\0', len);
		if (first && nul) {
			/* "symref=HEAD:refs/heads/main" among the
			 * capabilities */
			const char *c = nul + 1, *cend = line + len;

			while (c < cend) {
				const char *e =
					memchr(c, ' ', (size_t)(cend - c));
				size_t cl = (size_t)((e ? e : cend) - c);

				if (cl > 13 &&
				    !strncmp(c, "symref=HEAD:", 12) &&
				    !a->head_target &&
				    !(a->head_target =
					      strndup(c + 12, cl - 12)))
					return ERR_NOMEM;
				c += cl + 1;
			}
		}
		first = false;
		sp = line + HEXSZ + 1;
		len = (size_t)((nul ? nul : line + len) - sp);
		/* An empty repository: "<zero id> capabilities^{}". */
		if (len == 15 && !strncmp(sp, "capabilities^{}", 15))
			continue;
		if ((error = advert_add(a, line, sp, len)) < 0)
			return error;
	}
	if (n < 0 || first)
		return ERR_PARSE;
	if (!(a->ptrs = calloc(a->n ? a->n : 1, sizeof(*a->ptrs))))
		return ERR_NOMEM;
	for (size_t i = 0; i < a->n; i++) {
		a->ptrs[i] = &a->heads[i];
		if (!strcmp(a->heads[i].name, "HEAD"))
			a->heads[i].symref_target = a->head_target;
	}
	return 0;
}

/*
 * An unchanged HTTP(S) repository without libgit2: one GET of the ref
 * advertisement on src_http's kept-alive connection (libgit2 1.5 opens
 * a new TLS connection for every poll), and when the wanted ref points
 * at an object the cache has, the poll is done. 1 then (*oid set), 0
 * when libgit2 is to do the poll (something moved, a commit id is
 * wanted, a dumb server, an answer not understood, a refusal: libgit2's
 * own messages say what went wrong), <0 when the server timed out (not
 * tried twice).
 */
static int fast_resolve(struct source_git *s, struct source_poll_result *r,
			git_oid *oid, struct err *err)
{
	struct src_http_options ho = {0};
	struct src_http_request req = {0};
	struct src_http_response resp = {0};
	struct buf url = BUF_INIT, secret = BUF_INIT, cred = BUF_INIT;
	struct buf auth = BUF_INIT;
	struct err e = ERR_INIT;
	struct advert a = {0};
	struct wanted w;
	bool found = false;
	int error = 0, rc;

	if (s->kind != URL_HTTP || strpbrk(s->display, "?#") ||
	    (s->revision && is_hex(s->revision, 4, HEXSZ)))
		return 0;
	if (!s->http) {
		ho.ca_file = s->ca_file;
		ho.plain_http = !strncmp(s->display, "http://", 7);
		ho.timeout_ms = s->timeout_ms;
		if (src_http_new(&s->http, &ho, &e) < 0)
			goto out;
	}
	buf_adds(&url, s->display);
	while (url.len && url.ptr[url.len - 1] == '/')
		url.ptr[--url.len] = '\0';
	buf_adds(&url, "/info/refs?service=git-upload-pack");
	if (read_secret(s, &secret, &found, &e) < 0)
		goto out; /* libgit2's callback says why */
	if (found) {
		buf_init(&cred, SECRET_CAP + 256);
		buf_init(&auth, 2 * SECRET_CAP + 512);
		buf_addf(&cred, "%s:%s",
			 s->url_user && *s->url_user ? s->url_user
			 : s->username		     ? s->username
						     : "git",
			 buf_cstr(&secret));
		buf_adds(&auth, "Basic ");
		if (base64_encode(&auth, cred.ptr, cred.len, 0) < 0)
			goto out;
		req.authorization = buf_cstr(&auth);
	} else {
		req.no_auth = true;
	}
	if (!url.ptr)
		goto out;
	req.url = buf_cstr(&url);
	req.max_bytes = ADVERT_MAX;
	s->requests++;
	r->contacted = true;
	if ((rc = src_http_do(s->http, &req, &resp, &e)) < 0) {
		if (rc == ERR_TIMEOUT)
			error = err_set(err, ERR_TIMEOUT,
					"connection of %s timed out after "
					"%u ms",
					s->display, s->timeout_ms);
		goto out;
	}
	if (resp.status != 200 || !resp.content_type ||
	    strcmp(resp.content_type,
		   "application/x-git-upload-pack-advertisement") ||
	    advert_parse(&a, resp.body.ptr ? resp.body.ptr : "",
			 resp.body.len) < 0)
		goto out;
	find_wanted(s, a.ptrs, a.n, &w);
	if (!w.found || !have_object(s, &w.oid))
		goto out;
	if ((error = set_local_ref(s, w.name, &w.oid, err)) < 0)
		goto out;
	*oid = w.oid;
	error = 1;
out:
	advert_release(&a);
	src_http_response_release(&resp);
	file_secret_release(&secret);
	file_secret_release(&cred);
	file_secret_release(&auth);
	buf_release(&url);
	err_release(&e);
	return error;
}

/*
 * The network part of a poll: list the remote's refs, fetch only when the
 * wanted object is missing, and leave the resolved object in *oid.
 */
static int resolve_remote(struct source_git *s,
			  struct source_poll_result *r, git_oid *oid,
			  struct err *err)
{
	git_remote *remote = NULL;
	git_remote_create_options ro;
	git_remote_callbacks cb;
	const git_remote_head **heads;
	struct wanted w;
	size_t n, i;
	int gerr, error = 0;
	bool ca_locked = false;

	/*
	 * No url.*.insteadOf rewriting: the URL we were given is the one
	 * we contact (and libgit2 1.5 leaks a regex match block for every
	 * config entry that lookup scans, on every connection).
	 */
	git_remote_create_options_init(&ro, GIT_REMOTE_CREATE_OPTIONS_VERSION);
	ro.repository = s->repo;
	ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF |
		   GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
	if (git_remote_create_with_opts(&remote, s->url, &ro) < 0) {
		error = err_set(err, ERR_INVALID, "%s: %s", s->display,
				git_msg());
		goto out;
	}
	if (s->kind == URL_HTTP && (s->ca_file || ca_changed)) {
		/* The CA location is process-wide; see ca_mutex. */
		pthread_mutex_lock(&ca_mutex);
		ca_locked = true;
		if (git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS,
				     s->ca_file ? s->ca_file
						: DEFAULT_CA_BUNDLE,
				     NULL) < 0) {
			error = err_set(err, ERR_INVALID, "%s: %s",
					s->ca_file ? s->ca_file
						   : DEFAULT_CA_BUNDLE,
					git_msg());
			goto out;
		}
		if (s->ca_file)
			ca_changed = true;
	}
	callbacks_init(s, &cb);
	net_begin(s);
	s->requests++;
	r->contacted = true;
	if ((gerr = git_remote_connect(remote, GIT_DIRECTION_FETCH, &cb, NULL,
				       NULL)) < 0) {
		error = net_error(s, "connection", gerr, err);
		goto out;
	}
	if (git_remote_ls(&heads, &n, remote) < 0) {
		error = net_error(s, "listing refs", -1, err);
		goto out;
	}
	find_wanted(s, heads, n, &w);
	if (w.found) {
		if (!have_object(s, &w.oid)) {
			const char *spec[1] = {w.name};

			if ((error = download(s, remote, spec, 1, &w.oid, 1,
					      err)) < 0)
				goto out;
			r->fetched = true;
		}
		if (!have_object(s, &w.oid)) {
			error = err_set(err, ERR_IO, "fetch of %s: %s did not "
					"arrive", s->display, w.name);
			goto out;
		}
		if ((error = set_local_ref(s, w.name, &w.oid, err)) < 0)
			goto out;
		*oid = w.oid;
		goto out;
	}
	if (!s->revision) {
		error = err_set(err, ERR_NOTFOUND, "%s has no HEAD (empty "
				"repository?)", s->display);
		goto out;
	}
	if (!is_hex(s->revision, 4, HEXSZ)) {
		error = err_set(err, ERR_NOTFOUND, "revision %s not found on "
				"%s (no such branch or tag)", s->revision,
				s->display);
		goto out;
	}
	/* A commit id: it must be reachable from a branch or a tag. Fetch
	 * those we lack, then look the id up. */
	{
		const char *spec[2] = {"+refs/heads/*:refs/syncd/heads/*",
					"+refs/tags/*:refs/syncd/tags/*"};
		bool missing = false;

		for (i = 0; i < n; i++)
			if ((!strncmp(heads[i]->name, "refs/heads/", 11) ||
			     !strncmp(heads[i]->name, "refs/tags/", 10)) &&
			    !strstr(heads[i]->name, "^{}") &&
			    !have_object(s, &heads[i]->oid))
				missing = true;
		if (missing) {
			git_oid *want = calloc(n, sizeof(*want));
			size_t nwant = 0;

			if (!want) {
				error = err_set(err, ERR_NOMEM,
						"out of memory");
				goto out;
			}
			for (i = 0; i < n; i++)
				if ((!strncmp(heads[i]->name, "refs/heads/",
					      11) ||
				     !strncmp(heads[i]->name, "refs/tags/",
					      10)) &&
				    !strstr(heads[i]->name, "^{}"))
					want[nwant++] = heads[i]->oid;
			error = download(s, remote, spec, 2, want, nwant, err);
			free(want);
			if (error < 0)
				goto out;
			r->fetched = true;
		}
		for (i = 0; i < n; i++)
			if ((!strncmp(heads[i]->name, "refs/heads/", 11) ||
			     !strncmp(heads[i]->name, "refs/tags/", 10)) &&
			    !strstr(heads[i]->name, "^{}") &&
			    have_object(s, &heads[i]->oid) &&
			    (error = set_local_ref(s, heads[i]->name,
						   &heads[i]->oid, err)) < 0)
				goto out;
	}
	error = 1; /* look the id up locally */
out:
	if (remote) {
		git_remote_disconnect(remote);
		git_remote_free(remote);
	}
	net_end(s);
	if (ca_locked)
		pthread_mutex_unlock(&ca_mutex);
	return error;
}

static int lookup_commit_id(struct source_git *s, git_oid *oid,
			    struct err *err)
{
	git_object *obj = NULL;
	git_oid id;
	size_t len = strlen(s->revision);
	int gerr;

	if (git_oid_fromstrn(&id, s->revision, len) < 0)
		return err_set(err, ERR_INVALID, "%s: not a commit id",
			       s->revision);
	gerr = git_object_lookup_prefix(&obj, s->repo, &id, len,
					GIT_OBJECT_ANY);
	if (gerr == GIT_EAMBIGUOUS)
		return err_set(err, ERR_INVALID, "commit id %s is ambiguous "
			       "in %s", s->revision, s->display);
	if (gerr < 0)
		return err_set(err, ERR_NOTFOUND, "commit %s not found in %s "
			       "(not reachable from a branch or tag)",
			       s->revision, s->display);
	*oid = *git_object_id(obj);
	git_object_free(obj);
	return 0;
}

/* Write data to a new file under the cache's tmp dir, for a tool. */
static int write_temp(struct source_git *s, const char *data, size_t len,
		      char **path, struct err *err)
{
	char *tmpdir = src_path_join(s->cache, "tmp");
	int fd = -1, error = 0;

	*path = NULL;
	if (!tmpdir || asprintf(path, "%s/sig-XXXXXX", tmpdir) < 0) {
		*path = NULL;
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((error = src_mkdir_p(tmpdir, 0700, err)) < 0)
		goto out;
	if ((fd = mkstemp(*path)) < 0) {
		error = err_set(err, ERR_IO, "%s: %s", *path,
				err_errno_str(errno));
		goto out;
	}
	if (file_write_all(fd, data, len) < 0)
		error = err_set(err, ERR_IO, "%s: %s", *path,
				err_errno_str(errno));
out:
	if (fd >= 0)
		close(fd);
	if (error < 0 && *path) {
		unlink(*path);
		free(*path);
		*path = NULL;
	}
	free(tmpdir);
	return error;
}

static int run_tool(struct source_git *s, const char *const *argv,
		    const git_buf *payload, struct proc_result *pr,
		    struct err *err)
{
	struct proc_options po = PROC_OPTIONS_INIT;

	po.timeout_ms = s->timeout_ms;
	po.stdout_cap = TOOL_OUT_CAP;
	po.stderr_cap = TOOL_OUT_CAP;
	po.stdin_data = payload->ptr;
	po.stdin_len = payload->size;
	return proc_run(pr, argv, &po, err);
}

/* Last line of a tool's stderr, for the refusal message. */
static const char *tool_reason(struct proc_result *pr)
{
	char *p = pr->errout.ptr;
	size_t n = pr->errout.len;

	if (!p || !n)
		return "no reason given";
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		p[--n] = '\0';
	while (n && p[n - 1] != '\n')
		n--;
	return p + n;
}

static int verify_ssh(struct source_git *s, const char *id,
		      const char *sigfile, const git_buf *payload,
		      struct err *err)
{
	const char *find[] = {"ssh-keygen", "-Y", "find-principals", "-s",
			      sigfile, "-f", s->allowed_signers, NULL};
	const char *verify[] = {"ssh-keygen", "-Y", "verify", "-f",
				s->allowed_signers, "-I", NULL, "-n", "git",
				"-s", sigfile, NULL};
	struct proc_result pr = PROC_RESULT_INIT, pv = PROC_RESULT_INIT;
	git_buf none = {NULL, 0, 0};
	char *principal = NULL, *nl;
	int error = 0;

	if ((error = run_tool(s, find, &none, &pr, err)) < 0)
		goto out;
	if (!pr.exited || pr.exit_code || !pr.out.len) {
		error = err_set(err, ERR_INVALID, "commit %s of %s: SSH "
				"signature by a key not in %s", id,
				s->display, s->allowed_signers);
		goto out;
	}
	/* Several principals may share the key; any one of them will do
	 * for the check (git uses the first too). */
	nl = strchr(pr.out.ptr, '\n');
	if (!(principal = strndup(pr.out.ptr, nl ? (size_t)(nl - pr.out.ptr)
						 : pr.out.len))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	verify[6] = principal;
	if ((error = run_tool(s, verify, payload, &pv, err)) < 0)
		goto out;
	if (!pv.exited || pv.exit_code)
		error = err_set(err, ERR_INVALID, "commit %s of %s: SSH "
				"signature does not verify: %s", id,
				s->display, tool_reason(&pv));
out:
	proc_result_release(&pr);
	proc_result_release(&pv);
	free(principal);
	return error;
}

static int verify_gpg(struct source_git *s, const char *id,
		      const char *sigfile, const git_buf *payload,
		      struct err *err)
{
	char *home = NULL, *keyring = NULL;
	const char *argv[] = {"gpgv", "--homedir", NULL, "--keyring", NULL,
			      "--status-fd", "1", sigfile, "-", NULL};
	struct proc_result pr = PROC_RESULT_INIT;
	int error = 0;

	/* gpgv gets an empty home of its own: the keyring is the only
	 * thing it trusts. */
	if (asprintf(&home, "%s/tmp/gpg-XXXXXX", s->cache) < 0) {
		home = NULL;
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if (!mkdtemp(home)) {
		error = err_set(err, ERR_IO, "%s: %s", home,
				err_errno_str(errno));
		free(home);
		home = NULL;
		goto out;
	}
	if (!(keyring = realpath(s->gpg_keyring, NULL))) {
		error = err_set(err, ERR_INVALID, "%s: %s", s->gpg_keyring,
				err_errno_str(errno));
		goto out;
	}
	argv[2] = home;
	argv[4] = keyring;
	if ((error = run_tool(s, argv, payload, &pr, err)) < 0)
		goto out;
	if (!pr.exited || pr.exit_code ||
	    !strstr(buf_cstr(&pr.out), "[GNUPG:] VALIDSIG ") ||
	    !strstr(buf_cstr(&pr.out), "[GNUPG:] GOODSIG "))
		error = err_set(err, ERR_INVALID, "commit %s of %s: GPG "
				"signature does not verify with %s: %s", id,
				s->display, s->gpg_keyring,
				tool_reason(&pr));
out:
	proc_result_release(&pr);
	if (home) {
		/* gpgv may leave small files behind; remove what it made. */
		DIR *d = opendir(home);
		struct dirent *de;

		while (d && (de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				unlinkat(dirfd(d), de->d_name, 0);
		if (d)
			closedir(d);
		rmdir(home);
	}
	free(home);
	free(keyring);
	return error;
}

/* Apply the signature policy to a commit; ok results are remembered. */
static int verify_commit(struct source_git *s, const git_oid *oid,
			 struct err *err)
{
	git_buf sig = GIT_BUF_INIT, data = GIT_BUF_INIT;
	char id[HEXSZ + 1], *sigfile = NULL;
	int gerr, error = 0;
	bool is_ssh;

	if (!s->allowed_signers && !s->gpg_keyring)
		return 0;
	git_oid_tostr(id, sizeof(id), oid);
	if (!strcmp(id, s->verified))
		return 0;
	gerr = git_commit_extract_signature(&sig, &data, s->repo,
					    (git_oid *)oid, NULL);
	if (gerr == GIT_ENOTFOUND) {
		error = err_set(err, ERR_INVALID, "commit %s of %s is not "
				"signed; the signature policy requires it",
				id, s->display);
		goto out;
	}
	if (gerr < 0) {
		error = err_set(err, ERR_INVALID, "commit %s of %s: %s", id,
				s->display, git_msg());
		goto out;
	}
	is_ssh = !strncmp(sig.ptr, "-----BEGIN SSH SIGNATURE-----", 29);
	if (is_ssh && !s->allowed_signers) {
		error = err_set(err, ERR_INVALID, "commit %s of %s has an SSH "
				"signature but only a GPG keyring is "
				"configured", id, s->display);
		goto out;
	}
	if (!is_ssh && !s->gpg_keyring) {
		error = err_set(err, ERR_INVALID, "commit %s of %s has a "
				"non-SSH signature but only allowed SSH "
				"signers are configured", id, s->display);
		goto out;
	}
	if ((error = write_temp(s, sig.ptr, sig.size, &sigfile, err)) < 0)
		goto out;
	error = is_ssh ? verify_ssh(s, id, sigfile, &data, err)
		       : verify_gpg(s, id, sigfile, &data, err);
	if (!error)
		memcpy(s->verified, id, sizeof(id));
out:
	if (sigfile)
		unlink(sigfile);
	free(sigfile);
	git_buf_dispose(&sig);
	git_buf_dispose(&data);
	return error;
}

/* Tree id of subpath in the commit (peeling tags). */
static int commit_tree(struct source_git *s, const git_oid *oid,
		       git_oid *commit_id, git_oid *tree_id,
		       struct err *err)
{
	git_object *obj = NULL, *peeled = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	char id[HEXSZ + 1];
	int error = 0;

	git_oid_tostr(id, sizeof(id), oid);
	if (git_object_lookup(&obj, s->repo, oid, GIT_OBJECT_ANY) < 0 ||
	    git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT) < 0) {
		error = err_set(err, ERR_INVALID, "%s in %s: not a commit: %s",
				id, s->display, git_msg());
		goto out;
	}
	*commit_id = *git_object_id(peeled);
	if (git_commit_tree(&tree, (git_commit *)peeled) < 0) {
		error = err_set(err, ERR_IO, "commit %s: %s", id, git_msg());
		goto out;
	}
	if (!s->subpath) {
		*tree_id = *git_tree_id(tree);
		goto out;
	}
	git_oid_tostr(id, sizeof(id), commit_id);
	if (git_tree_entry_bypath(&entry, tree, s->subpath) < 0) {
		error = err_set(err, ERR_NOTFOUND, "%s: no such directory in "
				"commit %s of %s", s->subpath, id, s->display);
		goto out;
	}
	if (git_tree_entry_type(entry) != GIT_OBJECT_TREE) {
		error = err_set(err, ERR_INVALID, "%s: not a directory in "
				"commit %s of %s", s->subpath, id, s->display);
		goto out;
	}
	*tree_id = *git_tree_entry_id(entry);
out:
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_object_free(peeled);
	git_object_free(obj);
	return error;
}

int source_git_poll(struct source_git *s, struct source_poll_result *r,
		    struct err *err)
{
	git_oid oid, commit_id, tree_id;
	bool pinned;
	int error = 0;

	memset(r, 0, sizeof(*r));
	if ((error = cache_lock(s, err)) < 0)
		goto done;
	pinned = s->revision && is_hex(s->revision, HEXSZ, HEXSZ) &&
		 !git_oid_fromstr(&oid, s->revision) && have_object(s, &oid);
	if (!pinned) {
		error = fast_resolve(s, r, &oid, err);
		if (error == 0) {
			error = resolve_remote(s, r, &oid, err);
			if (error == 1)
				error = lookup_commit_id(s, &oid, err);
		}
		if (error < 0)
			goto out;
	}
	if ((error = commit_tree(s, &oid, &commit_id, &tree_id, err)) < 0 ||
	    (error = verify_commit(s, &commit_id, err)) < 0)
		goto out;
	git_oid_tostr(s->commit, sizeof(s->commit), &commit_id);
	git_oid_tostr(s->tree, sizeof(s->tree), &tree_id);
out:
	cache_unlock(s);
done:
	r->requests = s->requests;
	if (error < 0)
		return error;
	snprintf(r->revision, sizeof(r->revision), "%s", s->commit);
	snprintf(r->tree, sizeof(r->tree), "%s", s->tree);
	snprintf(r->rendered_tree, sizeof(r->rendered_tree), "%s", s->rendered);
	r->changed = strcmp(s->tree, s->rendered) != 0;
	return 0;
}

/* ---- checkout ---- */

/* Remove a tree written by us (directories are read-only). */
static void rm_tree_at(int parent, const char *name, int depth)
{
	int fd;
	DIR *d;
	struct dirent *de;

	if (depth > MAX_TREE_DEPTH + 2)
		return;
	fchmodat(parent, name, 0700, 0);
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			O_CLOEXEC);
	if (fd < 0) {
		unlinkat(parent, name, 0);
		return;
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISDIR(st.st_mode))
			rm_tree_at(dirfd(d), de->d_name, depth + 1);
		else
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);
}

struct writer {
	struct source_git *s;
	struct buf path;    /* entry path inside the checkout, for errors */
	struct buf links;   /* paths of symbolic links, NUL-separated */
	size_t entries;	    /* written so far, up to MAX_CHECKOUT_ENTRIES */
};

/*
 * A symbolic link may point only inside the checkout: relative, and never
 * climbing above the root from the directory it sits in.
 */
static bool link_stays_inside(const char *target, int depth)
{
	const char *p = target;

	if (!*target || *target == '/')
		return false;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 2 && !strncmp(p, "..", 2)) {
			if (--depth < 0)
				return false;
		} else if (n && !(n == 1 && *p == '.')) {
			depth++;
		}
		p += n;
		while (*p == '/')
			p++;
	}
	return true;
}

static int write_tree(struct writer *w, int dfd, const git_tree *tree,
		      int depth, struct err *err);

static int write_entry(struct writer *w, int dfd, const git_tree_entry *e,
		       int depth, struct err *err)
{
	struct source_git *s = w->s;
	const char *name = git_tree_entry_name(e);
	git_filemode_t mode = git_tree_entry_filemode(e);
	git_object *obj = NULL;
	git_odb *odb = NULL;
	git_object_t type;
	size_t len;
	size_t plen = w->path.len;
	int fd = -1, error = 0;

	if (w->path.len)
		buf_addch(&w->path, '/');
	buf_adds(&w->path, name);
	/* As git does: no entry may step out or plant a .git. */
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..") ||
	    !strcasecmp(name, ".git") || strchr(name, '/')) {
		error = err_set(err, ERR_INVALID, "%s: invalid entry name in "
				"tree %s of %s", buf_cstr(&w->path), s->tree,
				s->display);
		goto out;
	}
	if (mode == GIT_FILEMODE_COMMIT)
		goto out; /* a submodule: not followed */
	if (mode == GIT_FILEMODE_TREE) {
		git_tree *sub = NULL;

		if (depth >= MAX_TREE_DEPTH) {
			error = err_set(err, ERR_LIMIT,
					"%.200s%s: "
					"directories nested deeper than %d in "
					"commit %s of %s",
					buf_cstr(&w->path),
					w->path.len > 200 ? "..." : "",
					MAX_TREE_DEPTH, s->commit, s->display);
			goto out;
		}
		if (mkdirat(dfd, name, 0700) < 0 ||
		    (fd = openat(dfd, name, O_RDONLY | O_DIRECTORY |
				 O_NOFOLLOW | O_CLOEXEC)) < 0) {
			error = err_set(err, ERR_IO, "%s: %s",
					buf_cstr(&w->path),
					err_errno_str(errno));
			goto out;
		}
		if (git_tree_lookup(&sub, s->repo, git_tree_entry_id(e)) < 0) {
			error = err_set(err, ERR_IO, "%s: %s",
					buf_cstr(&w->path), git_msg());
			goto out;
		}
		error = write_tree(w, fd, sub, depth + 1, err);
		git_tree_free(sub);
		if (!error)
			fchmod(fd, 0555);
		goto out;
	}
	/* Check the size before loading the blob. */
	if (git_repository_odb(&odb, s->repo) < 0 ||
	    git_odb_read_header(&len, &type, odb, git_tree_entry_id(e)) < 0) {
		error = err_set(err, ERR_IO, "%s: %s", buf_cstr(&w->path),
				git_msg());
		goto out;
	}
	if (len > s->max_blob) {
		error = err_set(err, ERR_LIMIT, "%s: file of %zu bytes in "
				"commit %s of %s, over the limit of %llu bytes",
				buf_cstr(&w->path), len, s->commit,
				s->display, (unsigned long long)s->max_blob);
		goto out;
	}
	if (git_tree_entry_to_object(&obj, s->repo, e) < 0 ||
	    git_object_type(obj) != GIT_OBJECT_BLOB) {
		error = err_set(err, ERR_IO, "%s: %s", buf_cstr(&w->path),
				git_msg());
		goto out;
	}
	{
		const char *data = git_blob_rawcontent((git_blob *)obj);
		size_t size = (size_t)git_blob_rawsize((git_blob *)obj);

		if (mode == GIT_FILEMODE_LINK) {
			char *target = strndup(data, size);

			if (!target) {
				error = err_set(err, ERR_NOMEM,
						"out of memory");
				goto out;
			}
			if (strlen(target) != size ||
			    !link_stays_inside(target, depth)) {
				error = err_set(err, ERR_INVALID,
						"%s: symbolic link points "
						"outside the checkout (%s) "
						"in commit %s of %s",
						buf_cstr(&w->path), target,
						s->commit, s->display);
			} else if (symlinkat(target, dfd, name) < 0) {
				error = err_set(err, ERR_IO, "%s: %s",
						buf_cstr(&w->path),
						err_errno_str(errno));
			} else if (buf_add(&w->links, w->path.ptr,
					   w->path.len + 1) < 0) {
				error = err_set(err, ERR_NOMEM,
						"out of memory");
			}
			free(target);
			goto out;
		}
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL |
			    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			error = err_set(err, ERR_IO, "%s: %s",
					buf_cstr(&w->path),
					err_errno_str(errno));
			goto out;
		}
		if (file_write_all(fd, data, size) < 0) {
			error = err_set(err, ERR_IO, "%s: %s",
					buf_cstr(&w->path),
					err_errno_str(errno));
			goto out;
		}
		fchmod(fd, mode == GIT_FILEMODE_BLOB_EXECUTABLE ? 0555 : 0444);
	}
out:
	if (fd >= 0)
		close(fd);
	git_object_free(obj);
	git_odb_free(odb);
	buf_truncate(&w->path, plen);
	return error;
}

static int write_tree(struct writer *w, int dfd, const git_tree *tree,
		      int depth, struct err *err)
{
	size_t i, n = git_tree_entrycount(tree);
	int error = 0;

	/* Refused before this directory's entries are written. */
	if (n > MAX_CHECKOUT_ENTRIES - w->entries)
		return err_set(err, ERR_LIMIT,
			       "%s: more than %u files and "
			       "directories in tree %s of commit %s of %s",
			       w->path.len     ? buf_cstr(&w->path)
			       : w->s->subpath ? w->s->subpath
					       : ".",
			       MAX_CHECKOUT_ENTRIES, w->s->tree, w->s->commit,
			       w->s->display);
	w->entries += n;
	for (i = 0; i < n && !error; i++)
		error = write_entry(w, dfd, git_tree_entry_byindex(tree, i),
				    depth, err);
	return error;
}

/*
 * Each link stays inside on its own (link_stays_inside), but a ".."
 * after a link to a directory climbs from where that link points, so a
 * chain of links could still reach out. Resolve every link now that all
 * are written: an existing target must be inside the checkout; a loop is
 * refused; a dangling link is left (it reads as missing).
 */
static int check_links(struct writer *w, const char *root, struct err *err)
{
	char *rroot = realpath(root, NULL), *p, *full = NULL, *res = NULL;
	size_t rl, off = 0;
	int error = 0;

	if (!rroot)
		return err_set(err, ERR_IO, "%s: %s", root,
			       err_errno_str(errno));
	rl = strlen(rroot);
	while (off < w->links.len && !error) {
		p = w->links.ptr + off;
		off += strlen(p) + 1;
		free(full);
		if (asprintf(&full, "%s/%s", root, p) < 0) {
			full = NULL;
			error = err_set(err, ERR_NOMEM, "out of memory");
			break;
		}
		free(res);
		res = realpath(full, NULL);
		if (!res && errno == ENOENT)
			continue;
		if (!res && errno == ELOOP)
			error = err_set(err, ERR_INVALID,
					"%s: symbolic link "
					"loop (a link that leads back to "
					"itself) in commit %s of %s",
					p, w->s->commit, w->s->display);
		else if (!res || strncmp(res, rroot, rl) ||
			 (res[rl] && res[rl] != '/'))
			error = err_set(err, ERR_INVALID, "%s: symbolic link "
					"points outside the checkout (%s) in "
					"commit %s of %s", p,
					res ? "through other links"
					    : err_errno_str(errno),
					w->s->commit, w->s->display);
	}
	free(full);
	free(res);
	free(rroot);
	return error;
}

/* state/<key>: "rendered", "current" and "previous" tree ids. */
struct state {
	char rendered[HEXSZ + 1], current[HEXSZ + 1], previous[HEXSZ + 1];
};

static void state_read(const char *path, struct state *st)
{
	struct buf b = BUF_INIT;
	char *line, *save = NULL;

	memset(st, 0, sizeof(*st));
	if (file_read_secret(&b, path, 4096, NULL) < 0)
		goto out;
	for (line = strtok_r(b.ptr, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		char *dst = NULL;

		if (!eq || !is_hex(eq + 1, HEXSZ, HEXSZ))
			continue;
		*eq = '\0';
		if (!strcmp(line, "rendered"))
			dst = st->rendered;
		else if (!strcmp(line, "current"))
			dst = st->current;
		else if (!strcmp(line, "previous"))
			dst = st->previous;
		if (dst)
			memcpy(dst, eq + 1, HEXSZ + 1);
	}
out:
	buf_release(&b);
}

static int fill_state(int fd, void *ctx)
{
	const struct state *st = ctx;

	return dprintf(fd, "rendered=%s\ncurrent=%s\nprevious=%s\n",
		       st->rendered, st->current, st->previous) < 0
		       ? -1
		       : 0;
}

/* Replace the state file as a whole (util/file's file_replace()). */
static int state_write(struct source_git *s, const struct state *st,
		       struct err *err)
{
	return file_replace(s->state_path, fill_state, (void *)st, err);
}

/*
 * Remove checkouts that no state file of this cache names (every
 * (revision, subpath) keeps its current and previous tree), and
 * half-written ones left by a crash. Runs under the cache lock.
 */
static void trees_cleanup(struct source_git *s)
{
	char *sdir = src_path_join(s->cache, "state");
	char *tdir = src_path_join(s->cache, "trees");
	struct buf keep = BUF_INIT;
	DIR *d = NULL;
	struct dirent *de;

	if (!sdir || !tdir || !(d = opendir(sdir)))
		goto out;
	while ((de = readdir(d))) {
		struct state st;
		char *p;

		if (!is_hex(de->d_name, 64, 64) ||
		    !(p = src_path_join(sdir, de->d_name)))
			continue;
		state_read(p, &st);
		free(p);
		buf_addf(&keep, "%s %s %s ", st.rendered, st.current,
			 st.previous);
	}
	closedir(d);
	if (!(d = opendir(tdir)))
		goto out;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (is_hex(de->d_name, HEXSZ, HEXSZ) &&
		    strstr(buf_cstr(&keep), de->d_name))
			continue;
		rm_tree_at(dirfd(d), de->d_name, 0);
	}
	closedir(d);
out:
	buf_release(&keep);
	free(sdir);
	free(tdir);
}

int source_git_checkout(struct source_git *s, char **dir, struct err *err)
{
	char *tdir = NULL, *final = NULL, *tmpname = NULL;
	struct writer w = {s, BUF_INIT, BUF_INIT, 0};
	struct state st;
	git_tree *tree = NULL;
	git_oid tid;
	struct stat sb;
	int tfd = -1, fd = -1, error = 0;
	bool locked = false;

	*dir = NULL;
	if (!*s->tree)
		return err_set(err, ERR_INVALID, "%s: no commit polled yet",
			       s->display);
	if (!(tdir = src_path_join(s->cache, "trees")) ||
	    !(final = src_path_join(tdir, s->tree)) ||
	    asprintf(&tmpname, ".tmp-%s-%ld", s->tree, (long)getpid()) < 0) {
		tmpname = NULL;
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((error = cache_lock(s, err)) < 0)
		goto out;
	locked = true;
	if ((error = src_mkdir_p(tdir, 0700, err)) < 0)
		goto out;
	if (lstat(final, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		tfd = open(tdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (tfd < 0) {
			error = err_set(err, ERR_IO, "%s: %s", tdir,
					err_errno_str(errno));
			goto out;
		}
		rm_tree_at(tfd, tmpname, 0);
		if (git_oid_fromstr(&tid, s->tree) < 0 ||
		    git_tree_lookup(&tree, s->repo, &tid) < 0) {
			error = err_set(err, ERR_IO, "tree %s of %s: %s",
					s->tree, s->display, git_msg());
			goto out;
		}
		if (mkdirat(tfd, tmpname, 0700) < 0 ||
		    (fd = openat(tfd, tmpname, O_RDONLY | O_DIRECTORY |
				 O_NOFOLLOW | O_CLOEXEC)) < 0) {
			error = err_set(err, ERR_IO, "%s/%s: %s", tdir,
					tmpname, err_errno_str(errno));
			goto out;
		}
		error = write_tree(&w, fd, tree, 0, err);
		if (!error && w.links.len) {
			char *tmpfull = src_path_join(tdir, tmpname);

			error = tmpfull ? check_links(&w, tmpfull, err)
					: err_set(err, ERR_NOMEM,
						  "out of memory");
			free(tmpfull);
		}
		if (!error)
			fchmod(fd, 0555);
		if (!error && renameat(tfd, tmpname, tfd, s->tree) < 0)
			error = err_set(err, ERR_IO, "%s: %s", final,
					err_errno_str(errno));
		if (error) {
			rm_tree_at(tfd, tmpname, 0);
			goto out;
		}
	}
	state_read(s->state_path, &st);
	if (strcmp(st.current, s->tree)) {
		memcpy(st.previous, st.current, sizeof(st.previous));
		memcpy(st.current, s->tree, sizeof(st.current));
		if ((error = state_write(s, &st, err)) < 0)
			goto out;
		trees_cleanup(s);
	}
	if (!(*dir = strdup(final)))
		error = err_set(err, ERR_NOMEM, "out of memory");
out:
	if (locked)
		cache_unlock(s);
	if (fd >= 0)
		close(fd);
	if (tfd >= 0)
		close(tfd);
	git_tree_free(tree);
	buf_release(&w.path);
	buf_release(&w.links);
	free(tdir);
	free(final);
	free(tmpname);
	return error;
}

int source_git_mark_rendered(struct source_git *s, const char *tree,
			     struct err *err)
{
	struct state st;
	int error;

	if (!tree || !is_hex(tree, HEXSZ, HEXSZ))
		return err_set(err, ERR_INVALID, "%s: not a tree id",
			       tree ? tree : "(null)");
	if ((error = cache_lock(s, err)) < 0)
		return error;
	state_read(s->state_path, &st);
	memcpy(st.rendered, tree, sizeof(st.rendered));
	if (!(error = state_write(s, &st, err)))
		memcpy(s->rendered, tree, sizeof(s->rendered));
	cache_unlock(s);
	return error;
}

const char *source_git_url(const struct source_git *s)
{
	return s->display;
}

const char *source_git_cache_path(const struct source_git *s)
{
	return s->cache;
}

/* ---- open / free ---- */

/*
 * --cache-dir's default: $XDG_CACHE_HOME/syncd; in a pod (the service
 * host is set and the service-account mount exists) /var/cache/syncd,
 * where the Deployment mounts its cache volume; else ~/.cache/syncd.
 */
int src_default_cache_dir(char **out, struct err *err)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	const char *sa = getenv("SYNCD_SA_ROOT");
	int n;

	if (!sa || !*sa)
		sa = "/var/run/secrets/kubernetes.io/serviceaccount";
	if (x && *x == '/')
		n = asprintf(out, "%s/syncd", x);
	else if (getenv("KUBERNETES_SERVICE_HOST") && access(sa, F_OK) == 0)
		n = asprintf(out, "/var/cache/syncd");
	else if (home && *home)
		n = asprintf(out, "%s/.cache/syncd", home);
	else
		return err_set(err, ERR_USAGE, "no cache directory: set "
			       "--cache-dir, XDG_CACHE_HOME or HOME");
	if (n < 0) {
		*out = NULL;
		return err_set(err, ERR_NOMEM, "out of memory");
	}
	return 0;
}

static int check_readable(const char *what, const char *path,
			  struct err *err)
{
	if (path && access(path, R_OK) < 0)
		return err_set(err, ERR_INVALID, "%s %s: %s", what, path,
			       err_errno_str(errno));
	return 0;
}

int source_git_open(struct source_git **out,
		    const struct source_options *o, struct err *err)
{
	struct source_git *s = NULL;
	uint8_t d[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1], *base = NULL, *p = NULL;
	struct buf key = BUF_INIT;
	struct state st;
	bool oom = false;
	int error = 0;

	*out = NULL;
	if (!o || o->version != SOURCE_OPTIONS_VERSION || !o->url ||
	    !*o->url)
		return err_set(err, ERR_USAGE, "git source: missing URL or "
			       "bad options version");
	pthread_once(&init_once, lib_init);
	if (init_error)
		return err_set(err, ERR_GENERIC, "libgit2: %s", git_msg());
	if (!(s = calloc(1, sizeof(*s))))
		return err_set(err, ERR_NOMEM, "out of memory");
	s->lock_fd = -1;
	if ((error = parse_url(s, o->url, err)) < 0)
		goto out;
	if (s->kind == URL_SSH && !(git_libgit2_features() & GIT_FEATURE_SSH)) {
		error = err_set(err, ERR_INVALID, "%s: this libgit2 has no SSH "
				"support", s->display);
		goto out;
	}
	if (o->revision && (!*o->revision || strstr(o->revision, "..") ||
			    strchr(o->revision, ':'))) {
		error = err_set(err, ERR_USAGE, "%s: invalid revision",
				o->revision);
		goto out;
	}
	if (o->subpath) {
		const char *sp = o->subpath;

		while (*sp == '/' || (sp[0] == '.' && sp[1] == '/'))
			sp += *sp == '/' ? 1 : 2;
		if (!strcmp(sp, "."))
			sp = "";
		if (strstr(sp, "..")) {
			error = err_set(err, ERR_USAGE, "%s: the path may not "
					"contain ..", o->subpath);
			goto out;
		}
		if (*sp && !(s->subpath = strdup(sp)))
			oom = true;
		/* Trailing slashes would not name a tree entry. */
		while (s->subpath && *s->subpath &&
		       s->subpath[strlen(s->subpath) - 1] == '/')
			s->subpath[strlen(s->subpath) - 1] = '\0';
		if (s->subpath && !*s->subpath) {
			free(s->subpath);
			s->subpath = NULL;
		}
	}
	/* "HEAD" is the default: one state record for both spellings. */
	if (o->revision && strcmp(o->revision, "HEAD"))
		s->revision = xstrdup_opt(o->revision, &oom);
	s->username = xstrdup_opt(o->auth.username, &oom);
	if (o->auth.username && o->auth.username_file) {
		error = err_set(err, ERR_USAGE, "give either a username or a "
				"username file, not both");
		goto out;
	}
	if (o->auth.username_file &&
	    (error = src_read_username(&s->username, o->auth.username_file,
				       err)) < 0)
		goto out;
	s->password_file = xstrdup_opt(o->auth.password_file, &oom);
	s->password_env = xstrdup_opt(o->auth.password_env, &oom);
	s->token_file = xstrdup_opt(o->auth.token_file, &oom);
	s->token_env = xstrdup_opt(o->auth.token_env, &oom);
	s->ca_file = xstrdup_opt(o->auth.ca_file, &oom);
	s->ssh_key_file = xstrdup_opt(o->auth.ssh_key_file, &oom);
	s->ssh_passphrase_file = xstrdup_opt(o->auth.ssh_passphrase_file,
					     &oom);
	s->known_hosts_file = xstrdup_opt(o->auth.known_hosts_file, &oom);
	s->skip_host_key = o->auth.insecure_skip_host_key_check;
	s->allowed_signers = xstrdup_opt(o->verify.allowed_signers_file,
					 &oom);
	s->gpg_keyring = xstrdup_opt(o->verify.gpg_keyring_file, &oom);
	if (oom) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((error = check_readable("password file", s->password_file,
				    err)) < 0 ||
	    (error = check_readable("token file", s->token_file, err)) < 0 ||
	    (error = check_readable("CA file", s->ca_file, err)) < 0 ||
	    (error = check_readable("SSH key", s->ssh_key_file, err)) < 0 ||
	    (error = check_readable("SSH passphrase file",
				    s->ssh_passphrase_file, err)) < 0 ||
	    (error = check_readable("known_hosts file", s->known_hosts_file,
				    err)) < 0 ||
	    (error = check_readable("allowed signers file",
				    s->allowed_signers, err)) < 0 ||
	    (error = check_readable("GPG keyring", s->gpg_keyring, err)) < 0)
		goto out;
	if (s->ca_file && s->kind != URL_HTTP) {
		error = err_set(err, ERR_USAGE, "a CA file applies to https "
				"URLs only");
		goto out;
	}
	s->timeout_ms = o->fetch_timeout_ms ? o->fetch_timeout_ms
					    : SOURCE_GIT_DEFAULT_TIMEOUT_MS;
	s->max_repo = o->max_repo_bytes ? o->max_repo_bytes
					: SOURCE_GIT_DEFAULT_MAX_REPO_BYTES;
	s->max_blob = o->max_blob_bytes ? o->max_blob_bytes
					: SOURCE_GIT_DEFAULT_MAX_BLOB_BYTES;

	if (o->cache_dir && *o->cache_dir) {
		if (!(base = strdup(o->cache_dir))) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			goto out;
		}
	} else if ((error = src_default_cache_dir(&base, err)) < 0) {
		goto out;
	}
	sha256(s->display, strlen(s->display), d);
	hex_encode(d, sizeof(d), hex);
	/* The state key: what the URL's tree is looked at through. */
	buf_adds(&key, s->revision ? s->revision : "HEAD");
	buf_addch(&key, '\0');
	buf_adds(&key, s->subpath ? s->subpath : "");
	if (!key.ptr || !(s->cache = src_path_join(base, hex)) ||
	    !(s->repo_path = src_path_join(s->cache, "repo.git"))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	sha256(key.ptr, key.len, d);
	hex_encode(d, sizeof(d), hex);
	if (!(p = src_path_join(s->cache, "state")) ||
	    !(s->state_path = src_path_join(p, hex))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((error = src_mkdir_p(p, 0700, err)) < 0)
		goto out;
	file_sweep_temps(p); /* state files a killed syncd left half-made */
	free(p);
	if (!(p = src_path_join(s->cache, "lock"))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((s->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		error = err_set(err, ERR_IO, "%s: %s", p,
				err_errno_str(errno));
		goto out;
	}
	if ((error = cache_lock(s, err)) < 0)
		goto out;
	if (git_repository_open_bare(&s->repo, s->repo_path) < 0 &&
	    git_repository_init(&s->repo, s->repo_path, 1) < 0)
		error = err_set(err, ERR_IO, "%s: %s", s->repo_path,
				git_msg());
	state_read(s->state_path, &st);
	memcpy(s->rendered, st.rendered, sizeof(s->rendered));
	cache_unlock(s);
out:
	buf_release(&key);
	free(base);
	free(p);
	if (error < 0) {
		source_git_free(s);
		return error;
	}
	*out = s;
	return 0;
}

void source_git_free(struct source_git *s)
{
	if (!s)
		return;
	git_repository_free(s->repo);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	buf_release(&s->cb_msg);
	free(s->url);
	free(s->display);
	free(s->url_user);
	free(s->host);
	free(s->revision);
	free(s->subpath);
	free(s->cache);
	free(s->repo_path);
	free(s->state_path);
	free(s->username);
	free(s->password_file);
	free(s->password_env);
	free(s->token_file);
	free(s->token_env);
	free(s->ca_file);
	src_http_free(s->http);
	free(s->ssh_key_file);
	free(s->ssh_passphrase_file);
	free(s->known_hosts_file);
	free(s->allowed_signers);
	free(s->gpg_keyring);
	free(s);
}
