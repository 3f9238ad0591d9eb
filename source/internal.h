/*
 * source/internal.h: the source room's private pieces, shared by git.c,
 * artifact.c, oci.c and source.c. Nothing outside source/ includes this file;
 * the public interface is source.h.
 *
 *   git.c      the Git source
 *   artifact.c the helm and oci sources: resolve, download, unpack
 *   archive.c  bounded extraction of .tar.gz archives (charts, OCI layers)
 *   semver.c   semantic versions and ranges, as Helm and Flux read them
 *   fetch.c    bounded HTTP(S) requests (libcurl): ETag, same-host
 *              redirects only, TLS verified, credentials in headers only
 *   oci.c      an OCI distribution (registry) client on top of fetch.c
 */
#ifndef SOURCE_INTERNAL_H
#define SOURCE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"
#include "util/strvec.h"

#include "source/source.h"

/* ---- git.c: the Git source (source.h describes it) ---------------- */

/* Shared with artifact.c: the default cache directory (see source.h),
 * `mkdir -p` (ERR_IO naming the path), and "a/b" (NULL: out of memory). */
int src_default_cache_dir(char **out, struct err *err);
int src_mkdir_p(const char *path, unsigned mode, struct err *err);
char *src_path_join(const char *a, const char *b);

/* flock(2) the cache's lock file `fd`, waiting at most timeout_ms;
 * messages name `cache` and `display`. */
int src_cache_lock(int fd, const char *cache, const char *display,
		   unsigned timeout_ms, struct err *err);

/* A user name file: one line (its newline dropped), else ERR_INVALID
 * naming the file. *out (freed first, may be NULL) gets it. */
int src_read_username(char **out, const char *file, struct err *err);

struct source_git;

int source_git_open(struct source_git **out, const struct source_options *o,
		    struct err *err);
int source_git_poll(struct source_git *s, struct source_poll_result *r,
		    struct err *err);
int source_git_checkout(struct source_git *s, char **dir, struct err *err);
int source_git_mark_rendered(struct source_git *s, const char *tree,
			     struct err *err);
const char *source_git_url(const struct source_git *s);
const char *source_git_cache_path(const struct source_git *s);
void source_git_free(struct source_git *s);

/* ---- artifact.c: the helm and oci sources ------------------------- */

struct src_artifact;

int src_artifact_open(struct src_artifact **out,
		      const struct source_options *o, struct err *err);
int src_artifact_poll(struct src_artifact *s, struct source_poll_result *r,
		      struct err *err);
int src_artifact_checkout(struct src_artifact *s, char **dir,
			  struct err *err);
int src_artifact_mark_rendered(struct src_artifact *s, const char *tree,
			       struct err *err);
const char *src_artifact_url(const struct src_artifact *s);
const char *src_artifact_cache_path(const struct src_artifact *s);
void src_artifact_free(struct src_artifact *s);

/* ---- archive.c ---------------------------------------------------- */

/* Defaults used when a limit is 0. */
#define SRC_ARCHIVE_DEFAULT_MAX_BYTES (256ull << 20)	 /* unpacked, all */
#define SRC_ARCHIVE_DEFAULT_MAX_FILE_BYTES (16ull << 20) /* one file */
#define SRC_ARCHIVE_DEFAULT_MAX_ENTRIES 20000u
#define SRC_ARCHIVE_DEFAULT_MAX_DEPTH 64u

struct src_archive_limits {
	uint64_t max_bytes;	 /* bytes of all files unpacked */
	uint64_t max_file_bytes; /* bytes of one file */
	size_t max_entries;	 /* entries of any type */
	unsigned max_depth;	 /* path components of one entry */
};

/*
 * Unpack the gzip-compressed tar archive `tgz` into the existing empty
 * directory `dir`. Regular files (mode 0644, or 0755 when executable
 * for its owner) and directories only; pax (`path`) and GNU long names
 * are read. An entry whose name is absolute or has a ".." component, a
 * symbolic or hard link, a device or FIFO, a limit exceeded, a corrupt
 * or truncated stream: ERR_INVALID / ERR_LIMIT / ERR_PARSE naming `what`
 * (for messages, e.g. "chart podinfo-6.5.0.tgz") and the entry, e.g.
 *   chart podinfo-6.5.0.tgz: entry "../evil": escapes the archive's root
 * On error `dir` may hold part of the archive: the caller unpacks into a
 * temporary directory and renames it into place only on success.
 */
int src_untar_gz(const char *tgz, const char *dir, const char *what,
		 const struct src_archive_limits *limits, struct err *err);

/* Remove a directory tree (no symlink is followed: a link in its place
 * is removed itself). 0 (also when there is none) or ERR_IO. */
int src_remove_tree(const char *dir, struct err *err);

/* ---- semver.c ----------------------------------------------------- */

struct src_semver {
	uint64_t major, minor, patch;
	char pre[64];	/* pre-release, "" when none */
	char build[64]; /* build metadata, "" when none (not compared) */
};

/*
 * Parse a version: "1.2.3", "v1.2.3", "1.2.3-rc.1+build.5"; like Helm
 * (Masterminds semver) "1.2" and "1" are read as 1.2.0 and 1.0.0.
 * ERR_PARSE when it is not a version.
 */
int src_semver_parse(struct src_semver *v, const char *s, struct err *err);

/* <0, 0, >0 by SemVer 2.0 precedence (build metadata ignored). */
int src_semver_cmp(const struct src_semver *a, const struct src_semver *b);

struct src_semver_range;

/*
 * Parse a range as Helm and Flux do (Masterminds semver v3): "1.2.3"
 * (exactly), "=1.2.3", "!=", ">", ">=", "<", "<=", "^1.2" (>=1.2.0
 * <2.0.0; ^0.2 is >=0.2.0 <0.3.0), "~1.2" (>=1.2.0 <1.3.0), "1.2.x",
 * "1.x", "*", "1.2 - 1.4" (inclusive), terms separated by spaces or
 * commas (and), "||" (or). A pre-release version is considered only by
 * an and-group with a term that itself names a pre-release (">=1.2.3-0"
 * takes 1.4.0-rc.1, ">=1.2.3" skips it), as Masterminds semver 3.4 does.
 * ERR_PARSE naming the range and the bad term.
 */
int src_semver_range_parse(struct src_semver_range **out, const char *expr,
			   struct err *err);
bool src_semver_range_match(const struct src_semver_range *r,
			    const struct src_semver *v);
void src_semver_range_free(struct src_semver_range *r);

/*
 * The newest of `versions` (strings; those that do not parse are
 * skipped) that `r` matches: its index, or -1 when none does.
 */
long src_semver_newest(const struct src_semver_range *r,
		       const char *const *versions, size_t n);

/* ---- fetch.c ------------------------------------------------------ */

#define SRC_HTTP_DEFAULT_TIMEOUT_MS 60000u

/* Credentials, already read from their files; never logged. */
struct src_http_options {
	const char *username; /* basic auth with password (or token) */
	const char *password;
	const char *token;    /* bearer token; for registries, the password
				 of the token exchange when username is set */
	const char *ca_file;  /* PEM bundle replacing the system CAs */
	bool plain_http;      /* allow http:// (loopback tests, in-cluster
				 registries); https is verified always */
	unsigned timeout_ms;  /* one request, connect to last byte; 0:
				 default */
	const char *user_agent; /* NULL: "syncd/VERSION" */
	/*
	 * Hosts ("HOST", or "HOST:PORT") a redirect may lead to besides the
	 * request's own origin (a registry's CDN): followed without any
	 * credentials. NULL-ended; NULL: none.
	 */
	const char *const *redirect_hosts;
};

/*
 * A client for bounded requests: one libcurl handle whose connections
 * are kept alive between requests. The options' strings are copied
 * (secrets wiped when freed). Caller owns *out; free it with
 * src_http_free(). One thread at a time.
 */
struct src_http;

int src_http_new(struct src_http **out, const struct src_http_options *o,
		 struct err *err);
void src_http_free(struct src_http *h);

struct src_http_request {
	const char *method;	       /* "GET" (NULL) or "HEAD" */
	const char *url;
	const char *const *headers;    /* "Name: value", NULL-ended; may be
					  NULL */
	const char *if_none_match;     /* an ETag: 304 answers are success */
	const char *authorization;     /* a whole header value ("Bearer x"),
					  instead of the options' basic or
					  token auth; NULL: those */
	bool no_auth;		       /* send no credentials at all */
	uint64_t max_bytes;	       /* body bound; over it: ERR_LIMIT;
					  0: SRC_HTTP_DEFAULT_MAX_BYTES */
	const char *to_file;	       /* write a 2xx body there (created
					  0600, truncated; removed when the
					  call fails); NULL: memory */
};

/* Body bound of a request whose max_bytes is 0. */
#define SRC_HTTP_DEFAULT_MAX_BYTES (16ull << 20)
/* With to_file, the body of a non-2xx answer (a registry's error JSON)
 * is kept in r->body up to this many bytes; the rest is read (within
 * max_bytes) and dropped. */
#define SRC_HTTP_ERROR_BODY_MAX (64u << 10)

struct src_http_response {
	long status;
	struct buf body;	  /* when not to_file; with to_file, a
				     non-2xx answer's (its first
				     SRC_HTTP_ERROR_BODY_MAX bytes) */
	uint64_t body_bytes;	  /* bytes received */
	char *etag;		  /* NULL when absent */
	char *content_type;
	char *docker_content_digest;
	char *www_authenticate;	  /* a Bearer challenge preferred when
				     there are several */
	char *link;		  /* every Link header, joined by ", " */
	char *effective_url;	  /* after same-host redirects */
	char body_sha256[65];	  /* hex digest of the body received */
};

/* Header values longer than this are ignored (read as absent). */
#define SRC_HTTP_HEADER_MAX 8192u

#define SRC_HTTP_RESPONSE_INIT {0, BUF_INIT, 0, NULL, NULL, NULL, NULL, NULL, \
				NULL, {0}}

/*
 * One request. Redirects are followed (at most 5) only to the same
 * scheme, host and port; a redirect elsewhere is ERR_INVALID:
 *   GET https://r.example/v2/x/blobs/sha256:...: redirected to another
 *   host (https://cdn.example/...); refused
 * Transport failures ERR_IO, the timeout ERR_TIMEOUT, a body over
 * max_bytes ERR_LIMIT (the transfer is stopped at once, and a
 * Content-Length over the bound is refused before any body byte).
 * Any HTTP status is success at this level: the caller reads
 * r->status. Messages name the method and the URL without user
 * information or query string, never a credential. A URL that holds
 * user information is refused (ERR_INVALID): credentials go in
 * headers only. `r` is SRC_HTTP_RESPONSE_INIT or a response used
 * before (released here first); the caller releases it, also after a
 * failure.
 */
int src_http_do(struct src_http *h, const struct src_http_request *req,
		struct src_http_response *r, struct err *err);
void src_http_response_release(struct src_http_response *r);

/* Requests sent by this handle since it was made (redirects count). */
unsigned long src_http_requests(const struct src_http *h);

/*
 * "https://user@host/x?y#z" -> "https://host/x" appended to *out, for
 * messages: control characters become '?', and more than 512 bytes are
 * cut and end in "...". 0 or ERR_NOMEM/ERR_LIMIT from the buffer.
 */
int src_url_redact(struct buf *out, const char *url);

/* Whether two absolute URLs have the same scheme, host and port (an
 * omitted port is the scheme's default). False when one does not parse. */
bool src_url_same_origin(const char *a, const char *b);

/*
 * `ref` (absolute, "/path?q" or relative) resolved against the absolute
 * URL `base`, as a browser would, appended to *out. ERR_PARSE when
 * either does not parse.
 */
int src_url_resolve(struct buf *out, const char *base, const char *ref,
		    struct err *err);

/* ---- oci.c -------------------------------------------------------- */

/* "sha256:" and 64 hex digits, NUL. */
#define SRC_DIGEST_MAX 72


#define SRC_OCI_MAX_MANIFEST_BYTES (4u << 20)
#define SRC_OCI_MAX_TAGS 100000u

struct src_oci;

/*
 * A client of one repository of an OCI distribution registry:
 * `ref` is "oci://HOST[:PORT]/NAME" (NAME with slashes, lower case, as
 * the distribution spec allows; no tag or digest). https, unless
 * o->plain_http. Authentication as registries ask for it: a 401 with
 * `WWW-Authenticate: Bearer realm=...,service=...,scope=...` is
 * answered by asking the realm for a token (with basic auth from the
 * options' username and password or token, else anonymously) for the
 * scope, which is kept for later requests of this client until it is
 * refused; a `Basic` challenge by sending basic auth. The token realm
 * may be on another host (it is the registry's choice), but is
 * https unless plain_http.
 */
int src_oci_open(struct src_oci **out, const char *ref,
		 const struct src_http_options *o, struct err *err);
void src_oci_free(struct src_oci *c);

/* Every tag of the repository (/v2/NAME/tags/list, following Link
 * pagination), at most SRC_OCI_MAX_TAGS. */
int src_oci_tags(struct src_oci *c, struct strvec *tags, struct err *err);

/*
 * The manifest digest a tag (or a digest) names now: one HEAD request
 * (Docker-Content-Digest), or a GET whose body is hashed when the
 * registry sends no digest. ERR_NOTFOUND when the tag is not there.
 */
int src_oci_resolve(struct src_oci *c, const char *tag_or_digest,
		    char digest[SRC_DIGEST_MAX], struct err *err);

/*
 * The manifest `digest` names (OCI image manifest or Docker v2 schema 2;
 * an index is ERR_INVALID), checked against the digest, at most
 * SRC_OCI_MAX_MANIFEST_BYTES. Caller owns *manifest.
 */
int src_oci_manifest(struct src_oci *c, const char *digest,
		     json_t **manifest, struct err *err);

/*
 * Download blob `digest` into `file`: refused before download when
 * `size` (from the manifest; 0: unknown) exceeds max_bytes (0:
 * SRC_HTTP_DEFAULT_MAX_BYTES), stopped at `size` or else max_bytes
 * (ERR_LIMIT), and checked against the size and the digest (ERR_INVALID
 * on mismatch). On any failure the file is removed.
 */
int src_oci_blob(struct src_oci *c, const char *digest, uint64_t size,
		 uint64_t max_bytes, const char *file, struct err *err);

/* Requests this client sent (token requests included). */
unsigned long src_oci_requests(const struct src_oci *c);

/* Its "HOST[:PORT]/NAME", for messages. Owned by c. */
const char *src_oci_name(const struct src_oci *c);

/* The pure parts of oci.c, for its tests. */

/* The distribution spec's bound on "HOST/NAME" (255) and its parts. */
#define SRC_OCI_HOST_MAX 256
#define SRC_OCI_NAME_MAX 256

struct src_oci_ref {
	char host[SRC_OCI_HOST_MAX]; /* "host[:port]", host lower-cased */
	char name[SRC_OCI_NAME_MAX]; /* "org/chart" */
};

/*
 * Split "oci://HOST[:PORT]/NAME". ERR_INVALID naming the reference
 * (without user information) and the rule broken: another scheme, user
 * information, a query or fragment, a tag (":1.0") or digest ("@sha256:")
 * in it, an empty or malformed host or port, a NAME that is not lower
 * case or does not match the distribution spec's
 * [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*,
 * or "HOST/NAME" longer than 255 bytes.
 */
int src_oci_parse_ref(struct src_oci_ref *out, const char *ref,
		      struct err *err);

enum src_oci_auth_scheme { SRC_OCI_AUTH_BEARER = 1, SRC_OCI_AUTH_BASIC };

/* One challenge of a WWW-Authenticate header; strings owned, NULL when
 * the parameter is absent. */
struct src_oci_challenge {
	enum src_oci_auth_scheme scheme;
	char *realm;
	char *service;
	char *scope;
};

#define SRC_OCI_CHALLENGE_INIT {0, NULL, NULL, NULL}

/*
 * Parse a WWW-Authenticate value (RFC 9110 section 11.6.1): challenges
 * "Scheme param=token-or-"quoted\"string", ..." separated by commas; the
 * first Bearer challenge is taken, else the first Basic one. Parameter
 * names are case-insensitive, unknown ones ignored, values at most
 * SRC_HTTP_HEADER_MAX bytes. ERR_PARSE on malformed syntax, ERR_INVALID
 * when there is neither Bearer nor Basic (or a Bearer without realm).
 * Release *ch with src_oci_challenge_release(), also after a failure.
 */
int src_oci_parse_challenge(struct src_oci_challenge *ch, const char *value,
			    struct err *err);
void src_oci_challenge_release(struct src_oci_challenge *ch);

/*
 * The URL of the rel="next" link of a Link header value
 * ("<url>; rel=\"next\", <url2>; rel=prev"), appended to *out as it is
 * written (maybe relative); nothing appended when there is none.
 * ERR_PARSE on malformed syntax.
 */
int src_oci_parse_link(struct buf *out, const char *value, struct err *err);

/*
 * A registry's error body ({"errors":[{"code":..,"message":..}]}) as a
 * short text for messages, appended to *out: errors[0].message (else its
 * code), control characters replaced, at most 200 bytes (cut at a UTF-8
 * boundary, then "..."). Nothing appended when the body is not such
 * JSON.
 */
void src_oci_error_excerpt(struct buf *out, const char *body, size_t len);

#endif
