/*
 * libFuzzer target for URL handling of the sources: src_url_resolve(),
 * src_url_same_origin(), src_url_redact() (source/fetch.c), the
 * repository key a push webhook is matched by, controller_repo_key()
 * (controller/status.c), and the Git URL parsing of source_git_open()
 * (source/git.c; its cache is a path under a regular file, so it stops
 * before writing anything). `make fuzz` builds and runs it from
 * tests/fuzz/corpus/fuzz_url.
 *
 * Input: a base URL, a NUL byte, and a reference (without NUL: the
 * reference alone, against https://example.com/charts/).
 *
 * Besides the sanitizers, it checks: a resolved URL is absolute, has the
 * base's origin when the reference is a path ("/x", "x", "?q"), resolves
 * to itself, and redacts without user information or control
 * characters; same_origin is symmetric, and reflexive for a URL that
 * resolves; a refused resolution leaves one problem; the repository key
 * has no scheme or trailing "/", and the clone,
 * SSH, scp-like and web URLs of one host and path share it; opening a
 * Git source of the reference fails (no cache can be made) with one
 * problem that never shows a password of the URL.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/controller.h"
#include "source/internal.h"

#define DEFAULT_BASE "https://example.com/charts/"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char cache_dir[4096], cache_file[4000];

static void cleanup(void)
{
	unlink(cache_file);
}

/* A cache directory that cannot be made: a path under a regular file. */
static void make_cache_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(cache_file, sizeof(cache_file), "%s/syncd-fuzz-url.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if ((fd = mkstemp(cache_file)) < 0)
		abort();
	close(fd);
	atexit(cleanup);
	snprintf(cache_dir, sizeof(cache_dir), "%s/cache", cache_file);
}

static void check_redacted(const char *url)
{
	struct buf b = BUF_INIT;
	const char *u, *h;

	if (src_url_redact(&b, url) < 0)
		abort();
	u = buf_cstr(&b);
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
	h = strstr(u, "://");
	if (h && !memchr(u, '/', (size_t)(h - u)) &&
	    memchr(h + 3, '@', strcspn(h + 3, "/?#")))
		abort();
	buf_release(&b);
}

static void check_resolve(const char *base, const char *ref)
{
	struct buf out = BUF_INIT, again = BUF_INIT;
	struct err err = ERR_INIT;
	const char *u;
	int rc;

	rc = src_url_resolve(&out, base, ref, &err);
	if (rc < 0) {
		if (err_count(&err) != 1 || out.len)
			abort();
		goto out;
	}
	if (err_count(&err))
		abort();
	u = buf_cstr(&out);
	if (!strstr(u, "://"))
		abort();
	/* A path or query reference keeps the base's origin. */
	if (src_url_same_origin(base, base) &&
	    (ref[0] == '/' || ref[0] == '?') && ref[1] != '/' &&
	    !src_url_same_origin(base, u))
		abort();
	if (src_url_same_origin(u, base) != src_url_same_origin(base, u))
		abort();
	if (src_url_same_origin(u, u) &&
	    (src_url_resolve(&again, u, u, NULL) < 0 ||
	     strcmp(buf_cstr(&again), u)))
		abort();
	check_redacted(u);
out:
	buf_release(&out);
	buf_release(&again);
	err_release(&err);
}

/* host and path made of the characters repository names use. */
static void clean(char *dst, size_t cap, const char *src, const char *ok)
{
	size_t n = 0;

	for (; *src && n + 1 < cap; src++)
		if (isalnum((unsigned char)*src) || strchr(ok, *src))
			dst[n++] = (char)tolower((unsigned char)*src);
	dst[n] = '\0';
}

static void check_repo_key(const char *a, const char *b)
{
	char host[64], path[128], url[256];
	struct buf key = BUF_INIT, other = BUF_INIT;
	const char *k;
	size_t n;

	controller_repo_key(b, &key);
	k = buf_cstr(&key);
	n = strlen(k);
	/* No scheme before the path ("://" in a query is no scheme). */
	if ((strstr(k, "://") &&
	     (!strchr(k, '/') || strstr(k, "://") < strchr(k, '/'))) ||
	    (n && k[n - 1] == '/'))
		abort();

	clean(host, sizeof(host), a, ".-");
	clean(path, sizeof(path), b, "-_");
	if (!host[0] || host[0] == '.' || !path[0])
		goto out;
	snprintf(url, sizeof(url), "https://%s/o/%s", host, path);
	controller_repo_key(url, &key);
	snprintf(url, sizeof(url), "git@%s:o/%s.git", host, path);
	controller_repo_key(url, &other);
	if (strcmp(buf_cstr(&key), buf_cstr(&other)))
		abort();
	snprintf(url, sizeof(url), "ssh://git@%s:22/o/%s.git/", host, path);
	controller_repo_key(url, &other);
	if (strcmp(buf_cstr(&key), buf_cstr(&other)))
		abort();
	snprintf(url, sizeof(url), "https://token@%s/o/%s/", host, path);
	controller_repo_key(url, &other);
	if (strcmp(buf_cstr(&key), buf_cstr(&other)))
		abort();
out:
	buf_release(&key);
	buf_release(&other);
}

/* The error source_git_open() gives for url (which it must refuse here:
 * the cache directory holds no repository and there is no network). */
static void git_open_error(const char *url, struct err *err)
{
	struct source_options o = SOURCE_OPTIONS_INIT;
	struct source_git *s = NULL;

	o.url = url;
	o.cache_dir = cache_dir;
	if (source_git_open(&s, &o, err) == 0 || s || err_count(err) != 1)
		abort();
}

static void check_git_open(const char *url)
{
	struct err err = ERR_INIT, control = ERR_INIT;
	const char *auth = strstr(url, "://"), *colon, *at;
	char *other;
	size_t n;

	git_open_error(url, &err);
	/*
	 * "scheme://user:PASSWORD@host": the password is never shown. The
	 * message's own words (or the scheme, which is shown) may spell
	 * it: a leak only if the same URL with another password gives a
	 * message without the text.
	 */
	if (auth && (at = memrchr(auth + 3, '@', strcspn(auth + 3, "/?#"))) &&
	    (colon = memchr(auth + 3, ':', (size_t)(at - auth - 3))) &&
	    (n = (size_t)(at - colon - 1)) > 7 &&
	    memmem(err_msg(&err), strlen(err_msg(&err)), colon + 1, n) &&
	    (other = strdup(url))) {
		memset(other + (colon + 1 - url), '\x01', n);
		git_open_error(other, &control);
		if (!memmem(err_msg(&control), strlen(err_msg(&control)),
			    colon + 1, n))
			abort();
		err_release(&control);
		free(other);
	}
	err_release(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	const char *base = DEFAULT_BASE, *ref;

	if (!s)
		return 0;
	if (!cache_dir[0])
		make_cache_dir();
	memcpy(s, data, size);
	s[size] = '\0';
	ref = s;
	if (strlen(s) < size) {
		base = s;
		ref = s + strlen(s) + 1;
	}
	check_redacted(base);
	check_redacted(ref);
	check_resolve(base, ref);
	check_repo_key(base, ref);
	if (*ref)
		check_git_open(ref);
	free(s);
	return 0;
}
