/*
 * source: where an app's files come from. The Git source (source_git_*,
 * source/git.c): a Git repository as the source of an app's files (libgit2).
 *
 * A source_git follows one (URL, revision, subpath). Each poll lists the
 * remote's refs and fetches only when the wanted ref moved; a pinned full
 * commit id that is already in the cache needs no network at all. The
 * result names the commit and the tree id of the subpath, and says whether
 * that tree differs from the last one recorded as rendered, so a commit
 * elsewhere in a monorepo costs no render.
 *
 * Cache layout (cache_dir, default $XDG_CACHE_HOME/syncd, else
 * ~/.cache/syncd), one directory per URL named after the SHA-256 of the URL
 * with any user information removed (credentials never appear in names,
 * files or messages):
 *
 *   <cache_dir>/<sha256(url)>/repo.git     bare repository
 *   <cache_dir>/<sha256(url)>/lock         flock(2): one writer at a time,
 *                                          shared by every process
 *   <cache_dir>/<sha256(url)>/trees/<id>   read-only checkouts, by tree id
 *   <cache_dir>/<sha256(url)>/state/<key>  last rendered tree of one
 *                                          (revision, subpath)
 *
 * URLs: https://, http://, ssh://, scp form (git@host:org/repo.git),
 * file:// and local paths. A password inside the URL is refused: secrets
 * come from files or environment variables only (never argv).
 *
 * Revisions: a branch, a tag (annotated or lightweight), a full or
 * abbreviated commit id, or a full ref name (refs/...); NULL means the
 * remote's HEAD.
 *
 * Submodules are not followed: a submodule entry is left out of the
 * checkout. Symbolic links are kept only when they stay inside the
 * checkout; one that points outside (absolute or through "..") is an error.
 *
 * Failures keep what was good: a failed poll (server down, branch deleted,
 * signature refused, limit hit) changes neither the last checkout nor the
 * last-render record.
 *
 * Thread safety: one source_git is used by one thread at a time; distinct
 * sources may be used from distinct threads.
 */
#ifndef SOURCE_SOURCE_H
#define SOURCE_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

#define SOURCE_GIT_OPTIONS_VERSION 1

/* Hex object id length (SHA-1 repositories). */
#define SOURCE_GIT_OID_HEXSZ 40

/* Defaults used when the option is 0. */
#define SOURCE_GIT_DEFAULT_TIMEOUT_MS 60000u
#define SOURCE_GIT_DEFAULT_MAX_REPO_BYTES (2ull << 30)  /* 2 GiB */
#define SOURCE_GIT_DEFAULT_MAX_BLOB_BYTES (16ull << 20) /* 16 MiB */

/*
 * Credentials and trust. Every field is optional. Secrets are read from
 * the named file (trailing newline removed) or environment variable when
 * the server asks for them, and are never copied into the cache.
 */
struct source_git_auth {
	const char *username;            /* HTTPS user; SSH user when the
					    URL names none (default "git") */
	const char *username_file;       /* file holding the user name
					    (trailing newline removed), read
					    when the source is opened; not
					    with username */
	const char *password_file;       /* HTTPS password */
	const char *password_env;        /* name of a variable holding it */
	const char *token_file;          /* HTTPS token (used as password;
					    username defaults to "git") */
	const char *token_env;
	const char *ca_file;             /* PEM bundle that replaces the
					    system CAs for this source */
	const char *ssh_key_file;        /* private key; NULL: ssh-agent when
					    SSH_AUTH_SOCK is set */
	const char *ssh_passphrase_file;
	const char *known_hosts_file;    /* NULL: ~/.ssh/known_hosts */
	bool insecure_skip_host_key_check;
};

/*
 * Commit signature policy. When either file is set, the polled commit must
 * carry a signature that one of them verifies, else the poll fails naming
 * the commit and the reason. allowed_signers: ssh-keygen's format (checked
 * with `ssh-keygen -Y verify`, namespace "git"). gpg_keyring: a binary
 * OpenPGP keyring (`gpg --export KEYID > FILE`), checked with gpgv; every
 * key in it is trusted.
 */
struct source_git_verify {
	const char *allowed_signers_file;
	const char *gpg_keyring_file;
};

struct source_git_options {
	unsigned version;          /* SOURCE_GIT_OPTIONS_VERSION */
	const char *url;           /* required */
	const char *revision;      /* NULL: the remote's HEAD */
	const char *subpath;       /* NULL or "": the whole tree */
	const char *cache_dir;     /* NULL: $XDG_CACHE_HOME/syncd, else
				      $HOME/.cache/syncd */
	struct source_git_auth auth;
	struct source_git_verify verify;
	unsigned fetch_timeout_ms; /* one connect+fetch; 0: default */
	uint64_t max_repo_bytes;   /* size of the cached repository after a
				      fetch (and bytes received by one
				      fetch); 0: default */
	uint64_t max_blob_bytes;   /* largest file read; 0: default */
};

#define SOURCE_GIT_OPTIONS_INIT {.version = SOURCE_GIT_OPTIONS_VERSION}

struct source_git_poll_result {
	char commit[SOURCE_GIT_OID_HEXSZ + 1]; /* resolved commit id */
	char tree[SOURCE_GIT_OID_HEXSZ + 1];   /* tree id at subpath */
	/* Last tree recorded by source_git_mark_rendered() for this
	 * (URL, revision, subpath), "" when none, also across restarts. */
	char rendered_tree[SOURCE_GIT_OID_HEXSZ + 1];
	bool changed;          /* tree != rendered_tree */
	bool fetched;          /* this poll downloaded objects */
	bool contacted;        /* this poll talked to the remote (ls) */
	unsigned long requests; /* remote connections made by this source
				   since open (ls-remote and fetch each
				   count one) */
};

struct source_git;

/*
 * Check the options and open (creating when needed) the cache of o->url.
 * No network access. Caller owns *out; free with source_git_free(). Strings
 * in *o are copied. ERR_USAGE/ERR_INVALID for bad options (unsupported URL,
 * password inside the URL, missing secret file), ERR_IO for the cache.
 */
int source_git_open(struct source_git **out,
		    const struct source_git_options *o, struct err *err);

/*
 * Find the commit the revision names now, fetching when needed, check its
 * signature when a policy is set, and fill *r. Errors (the URL in them has
 * no user information): ERR_NOTFOUND (revision not on the remote, path not
 * in the commit), ERR_TIMEOUT, ERR_LIMIT (repository too big), ERR_INVALID
 * (signature refused, authentication failed, host key unknown or changed:
 * the message holds the key's SHA256 fingerprint), ERR_IO (server down,
 * other transport errors). After an error the source keeps its last good
 * commit: source_git_checkout() still returns its directory.
 */
int source_git_poll(struct source_git *s, struct source_git_poll_result *r,
		    struct err *err);

/*
 * A read-only directory holding the tree of the last successfully polled
 * commit at subpath: <cache>/trees/<tree id>, written under a temporary
 * name then renamed into place, and reused as is when it already exists.
 * Files bigger than max_blob_bytes are refused (ERR_LIMIT, naming the
 * file). ERR_INVALID when nothing was polled yet. Caller owns *dir; free().
 * The directory stays until a later checkout of the same source replaces
 * it and a cleanup finds it unreferenced (the current and the previous
 * tree of every (revision, subpath) sharing the cache are kept).
 */
int source_git_checkout(struct source_git *s, char **dir, struct err *err);

/*
 * Record that the tree `tree` (hex id from a poll result) was rendered,
 * in memory and in the cache (so a restart knows it): the next poll
 * reports changed == false until the subpath's tree changes.
 */
int source_git_mark_rendered(struct source_git *s, const char *tree,
			     struct err *err);

/* The URL without user information, for messages. Owned by s. */
const char *source_git_url(const struct source_git *s);

/* The URL's cache directory (<cache_dir>/<sha256>). Owned by s. */
const char *source_git_cache_path(const struct source_git *s);

void source_git_free(struct source_git *s);

#endif
