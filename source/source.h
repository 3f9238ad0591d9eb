/*
 * source: where an app's files come from. Three kinds of source, one
 * interface (source_open/poll/checkout/mark_rendered): each poll names a
 * revision and the id of a read-only tree, and says whether that tree
 * differs from the last one rendered, so the renderers run only when the
 * app's files changed.
 *
 *   git   a Git repository (libgit2, git.c): a branch, tag or commit, and
 *         a path inside it.
 *   helm  a Helm chart from a chart repository (an HTTP(S) index.yaml)
 *         or an OCI registry (oci://HOST/PATH, the chart at PATH/CHART),
 *         by exact version or semver range (artifact.c). The tree is the
 *         unpacked chart; the revision "VERSION@sha256:HEX" (the digest
 *         of the chart archive, or of its OCI manifest).
 *   oci   an OCI artifact holding manifests (oci://HOST/NAME), by tag,
 *         semver range over the tags, or digest (artifact.c, on the
 *         registry client oci.c). The
 *         tree is its layers unpacked; the revision "TAG@sha256:HEX" or
 *         "sha256:HEX".
 *
 * Change detection costs no download when nothing moved: git lists the
 * remote's refs; a chart repository is asked for index.yaml with
 * If-None-Match (a 304 ends the poll); a registry is asked for the
 * manifest digest of the tag (one HEAD). Downloads are bounded, checked
 * against their digests, and unpacked into a temporary directory renamed
 * into place only when complete.
 *
 * The Git source in detail (git.c):
 *
 * A Git source follows one (URL, revision, subpath). Each poll lists the
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
 * Thread safety: one source is used by one thread at a time; distinct
 * sources may be used from distinct threads.
 */
#ifndef SOURCE_SOURCE_H
#define SOURCE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define SOURCE_OPTIONS_VERSION 1

/* Hex object id length (SHA-1 repositories). */
#define SOURCE_GIT_OID_HEXSZ 40

/* A revision ("VERSION@sha256:HEX", a commit id, ...) and a tree id. */
#define SOURCE_REVISION_MAX 160
#define SOURCE_TREE_MAX 65

/* Defaults used when the option is 0. */
#define SOURCE_GIT_DEFAULT_TIMEOUT_MS 60000u
#define SOURCE_GIT_DEFAULT_MAX_REPO_BYTES (2ull << 30)  /* 2 GiB */
#define SOURCE_GIT_DEFAULT_MAX_BLOB_BYTES (16ull << 20) /* 16 MiB */
#define SOURCE_DEFAULT_MAX_ARTIFACT_BYTES (128ull << 20) /* 128 MiB */

enum source_type {
	SOURCE_GIT,
	SOURCE_HELM,
	SOURCE_OCI,
};

/* "git", "helm", "oci", by value; NULL-ended. */
extern const char *const source_type_names[];

/*
 * Credentials and trust. Every field is optional. Secrets are read from
 * the named file (trailing newline removed) or environment variable when
 * the server asks for them, and are never copied into the cache.
 */
struct source_auth {
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
struct source_verify {
	const char *allowed_signers_file;
	const char *gpg_keyring_file;
};

struct source_options {
	unsigned version;          /* SOURCE_OPTIONS_VERSION */
	enum source_type type;     /* default SOURCE_GIT */
	/*
	 * git: the repository. helm: the chart repository (http(s)://, its
	 * index.yaml beside) or oci://HOST/PATH. oci: oci://HOST/NAME.
	 */
	const char *url;           /* required */
	/*
	 * git: branch, tag, commit or ref (NULL: the remote's HEAD). helm:
	 * a version or semver range (NULL: the newest stable version). oci:
	 * a tag, a semver range over the tags, or "sha256:HEX" (NULL:
	 * "latest").
	 */
	const char *revision;
	const char *chart;         /* helm: the chart's name; required */
	const char *digest;        /* helm, oci: "sha256:HEX" the resolved
				      artifact must have (oci: the manifest;
				      a chart repository: the archive);
				      NULL: any */
	bool plain_http;           /* helm, oci: http:// allowed, and
				      oci:// spoken over http */
	const char *const *redirect_hosts; /* helm, oci: hosts a redirect
				      may lead to besides the source's own
				      (followed without credentials);
				      NULL-ended, may be NULL */
	const char *subpath;       /* NULL or "": the whole tree */
	const char *cache_dir;     /* NULL: $XDG_CACHE_HOME/syncd, else
				      $HOME/.cache/syncd */
	struct source_auth auth;
	struct source_verify verify; /* git only */
	unsigned fetch_timeout_ms; /* one connect+fetch (git), one request
				      (helm, oci); 0: default */
	uint64_t max_repo_bytes;   /* git: size of the cached repository
				      after a fetch (and bytes received by
				      one fetch); helm, oci: one download
				      (index, archive, layer); 0: default */
	uint64_t max_blob_bytes;   /* largest file read or unpacked; 0:
				      default */
};

#define SOURCE_OPTIONS_INIT {.version = SOURCE_OPTIONS_VERSION}

struct source_poll_result {
	/* git: the commit id; helm: "VERSION@sha256:HEX"; oci:
	 * "TAG@sha256:HEX", or "sha256:HEX" when asked by digest. */
	char revision[SOURCE_REVISION_MAX];
	char tree[SOURCE_TREE_MAX];   /* git: tree id at subpath; helm, oci:
					 the digest's hex */
	/* Last tree recorded by source_mark_rendered() for this source, ""
	 * when none, also across restarts. */
	char rendered_tree[SOURCE_TREE_MAX];
	bool changed;          /* tree != rendered_tree */
	bool fetched;          /* this poll downloaded something */
	bool contacted;        /* this poll talked to the remote */
	unsigned long requests; /* remote requests made by this source
				   since open (git: ls-remote and fetch
				   each count one) */
};

struct source;

/*
 * Check the options and open (creating when needed) the cache of o->url.
 * No network access. Caller owns *out; free with source_free(). Strings
 * in *o are copied; secret files are read (helm, oci) or named for
 * later (git). ERR_USAGE/ERR_INVALID for bad options (unsupported URL,
 * password inside the URL, missing secret file), ERR_IO for the cache.
 */
int source_open(struct source **out, const struct source_options *o,
		struct err *err);

/*
 * Find what the revision names now, downloading when it moved, check it
 * (signature, digest pin), and fill *r. Errors (the URL in them has no
 * user information): ERR_NOTFOUND (revision, version or path absent),
 * ERR_TIMEOUT, ERR_LIMIT (too big), ERR_INVALID (signature or digest
 * refused, authentication failed, host key unknown or changed, hostile
 * archive), ERR_PARSE (a malformed index or manifest), ERR_IO (server
 * down, other transport errors). After an error the source keeps its
 * last good revision: source_checkout() still returns its directory.
 */
int source_poll(struct source *s, struct source_poll_result *r,
		struct err *err);

/*
 * A read-only directory holding the tree of the last good poll at
 * subpath. Caller owns *dir; free(). ERR_INVALID when nothing was polled
 * yet. Directories stay until a later checkout of the same source
 * replaces them and a cleanup finds them unreferenced.
 */
int source_checkout(struct source *s, char **dir, struct err *err);

/*
 * Record that `tree` (from a poll result) was rendered, in memory and in
 * the cache (so a restart knows it): the next poll reports changed ==
 * false until the tree changes.
 */
int source_mark_rendered(struct source *s, const char *tree,
			 struct err *err);

/* The URL without user information (helm: "URL CHART"), for messages.
 * Owned by s. */
const char *source_url(const struct source *s);

/* The source's cache directory (<cache_dir>/<sha256>). Owned by s. */
const char *source_cache_path(const struct source *s);

enum source_type source_type(const struct source *s);

/* Is d a digest as `digest:` takes it: "sha256:" and 64 lower-case hex
 * digits? */
bool source_digest_valid(const char *d);

/*
 * A revision shortened for people: a commit id to its first `digits`
 * characters, "6.5.0@sha256:HEX" to "6.5.0@" and `digits` of HEX,
 * "sha256:HEX" to "sha256:" and `digits` of HEX. Always NUL-terminated
 * in out[size] (size > 0); "" for NULL.
 */
void source_revision_short(char *out, size_t size, const char *rev,
			   unsigned digits);

void source_free(struct source *s);

#endif
