/*
 * The registry client against a fake registry (tests/helpers/
 * fake_registry.py, python3 only) on loopback: one server per test,
 * started with the flags of the mode the test needs, its content written
 * into a temporary folder that the server reads on every request. The
 * server's /_stats says what it was asked, so the tests check the
 * requests made, not only the result. Without python3 every test is
 * skipped with one line.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "source/internal.h"
#include "util/sha256.h"

#define SCRIPT		 "tests/helpers/fake_registry.py"
#define START_TIMEOUT_MS 15000
#define REPO		 "charts/podinfo"

extern char **environ;

static pid_t server_pid;
static int port;
static char root[256];
static char data[300];
static char ref[128]; /* oci://127.0.0.1:PORT/charts/podinfo */

static bool have_python(void)
{
	const char *path = getenv("PATH");
	char dir[4096], exe[4200];
	const char *p, *end;

	for (p = path ? path : ""; *p; p = *end ? end + 1 : end) {
		end = p + strcspn(p, ":");
		if (end == p || (size_t)(end - p) >= sizeof(dir))
			continue;
		memcpy(dir, p, (size_t)(end - p));
		dir[end - p] = '\0';
		snprintf(exe, sizeof(exe), "%s/python3", dir);
		if (access(exe, X_OK) == 0)
			return true;
	}
	return false;
}

/* The script, from the repository's root (where tests run) or found
 * from this binary's place, $(BUILD)/tests/unit-source. */
static void script_path(char *out, size_t n)
{
	char exe[4096];
	ssize_t len;
	int i;

	snprintf(out, n, "%s", SCRIPT);
	if (access(out, R_OK) == 0)
		return;
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return;
	exe[len] = '\0';
	for (i = 0; i < 3; i++) {
		char *slash = strrchr(exe, '/');

		if (slash)
			*slash = '\0';
	}
	snprintf(out, n, "%s/%s", exe, SCRIPT);
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void stop(void)
{
	int status;

	if (server_pid > 0) {
		kill(server_pid, SIGKILL);
		while (waitpid(server_pid, &status, 0) < 0 && errno == EINTR)
			;
		server_pid = 0;
	}
	if (root[0]) {
		nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		root[0] = '\0';
	}
}

/* Start the server with `flags` (NULL-ended); its port in `port`. */
static void start(const char *const *flags)
{
	posix_spawn_file_actions_t fa;
	const char *argv[32];
	char script[4200], line[32];
	struct pollfd pfd;
	size_t argc = 0, got = 0;
	int fds[2], rc;
	ssize_t n;

	if (!have_python())
		cr_skip_test("python3 is not installed: no fake registry");
	/* Loopback requests must not go through a proxy of the caller's. */
	unsetenv("http_proxy");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	snprintf(root, sizeof(root), "/tmp/syncd-oci-test-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(data, sizeof(data), "%s/data", root);
	cr_assert_eq(mkdir(data, 0755), 0);
	script_path(script, sizeof(script));

	argv[argc++] = "python3";
	argv[argc++] = script;
	argv[argc++] = "--root";
	argv[argc++] = data;
	for (; flags && *flags && argc < 30; flags++)
		argv[argc++] = *flags;
	argv[argc] = NULL;

	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	rc = posix_spawnp(&server_pid, "python3", &fa, NULL,
			  (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc) {
		close(fds[0]);
		server_pid = 0;
		cr_assert_fail("python3: %s", strerror(rc));
	}
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	while (!memchr(line, '\n', got) && got < sizeof(line) - 1) {
		if (poll(&pfd, 1, START_TIMEOUT_MS) <= 0)
			break;
		n = read(fds[0], line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	line[got] = '\0';
	port = (int)strtol(line, NULL, 10);
	cr_assert(port > 0 && port < 65536, "fake registry did not start: %s",
		  line);
	snprintf(ref, sizeof(ref), "oci://127.0.0.1:%d/%s", port, REPO);
}

TestSuite(oci_live, .fini = stop, .timeout = 60);

static void mkdirs(const char *path)
{
	char p[1024];
	char *s;

	snprintf(p, sizeof(p), "%s", path);
	for (s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static void write_file(const char *path, const void *body, size_t len)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, body, len), (ssize_t)len);
	close(fd);
}

static void digest_of(const void *body, size_t len, char out[SRC_DIGEST_MAX])
{
	uint8_t d[SHA256_DIGEST_SIZE];

	sha256(body, len, d);
	memcpy(out, "sha256:", 7);
	hex_encode(d, sizeof(d), out + 7);
}

/* Put a file at data/REPO/KIND/NAME. */
static void put(const char *kind, const char *name, const void *body,
		size_t len)
{
	char dir[600], path[800];

	snprintf(dir, sizeof(dir), "%s/%s/%s", data, REPO, kind);
	mkdirs(dir);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	write_file(path, body, len);
}

/* A blob and a manifest naming it under `tag`; the digests out. */
static void put_image(const char *tag, const char *layer,
		      char manifest_digest[SRC_DIGEST_MAX],
		      char layer_digest[SRC_DIGEST_MAX])
{
	char ld[SRC_DIGEST_MAX], md[SRC_DIGEST_MAX], cd[SRC_DIGEST_MAX];
	char body[1024];
	int n;

	digest_of(layer, strlen(layer), ld);
	digest_of("{}", 2, cd);
	put("blobs", ld, layer, strlen(layer));
	put("blobs", cd, "{}", 2);
	n = snprintf(
		body, sizeof(body),
		"{\"schemaVersion\":2,\"mediaType\":\"application/vnd."
		"oci.image.manifest.v1+json\",\"config\":{\"mediaType\":"
		"\"application/vnd.cncf.helm.config.v1+json\",\"digest\":"
		"\"%s\",\"size\":2},\"layers\":[{\"mediaType\":\"application/"
		"vnd.cncf.helm.chart.content.v1.tar+gzip\",\"digest\":\"%s\","
		"\"size\":%zu}]}",
		cd, ld, strlen(layer));
	put("manifests", tag, body, (size_t)n);
	digest_of(body, (size_t)n, md);
	if (manifest_digest)
		memcpy(manifest_digest, md, sizeof(md));
	if (layer_digest)
		memcpy(layer_digest, ld, sizeof(ld));
}

/* The server's count of "METHOD kind" requests. */
static long stat_count(const char *key)
{
	struct src_http_options o = {0};
	struct src_http_request req = {0};
	struct src_http_response r = SRC_HTTP_RESPONSE_INIT;
	struct src_http *h;
	struct err e = ERR_INIT;
	char url[128];
	json_t *root_json;
	long n;

	o.plain_http = true;
	cr_assert_eq(src_http_new(&h, &o, &e), 0, "%s", err_msg(&e));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/_stats", port);
	req.url = url;
	req.max_bytes = 1 << 20;
	cr_assert_eq(src_http_do(h, &req, &r, &e), 0, "%s", err_msg(&e));
	cr_assert_eq(r.status, 200);
	root_json = json_loadb(r.body.ptr, r.body.len, 0, NULL);
	cr_assert_not_null(root_json);
	n = (long)json_integer_value(json_object_get(root_json, key));
	json_decref(root_json);
	src_http_response_release(&r);
	src_http_free(h);
	return n;
}

static struct src_oci *open_client(const char *username, const char *password)
{
	struct src_http_options o = {0};
	struct src_oci *c;
	struct err e = ERR_INIT;

	o.plain_http = true;
	o.timeout_ms = 20000;
	o.username = username;
	o.password = password;
	cr_assert_eq(src_oci_open(&c, ref, &o, &e), 0, "%s", err_msg(&e));
	err_release(&e);
	return c;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

Test(oci_live, resolving_a_tag_is_one_head_request)
{
	char want[SRC_DIGEST_MAX], got[SRC_DIGEST_MAX];
	struct src_oci *c;
	struct err e = ERR_INIT;

	start(NULL);
	put_image("6.5.0", "chart bytes", want, NULL);
	c = open_client(NULL, NULL);
	cr_assert_eq(src_oci_resolve(c, "6.5.0", got, &e), 0, "%s",
		     err_msg(&e));
	cr_expect_str_eq(got, want);
	cr_expect_eq(src_oci_requests(c), 1);
	cr_expect_eq(stat_count("HEAD manifests"), 1);
	cr_expect_eq(stat_count("GET manifests"), 0);
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, without_a_digest_header_the_manifest_is_hashed)
{
	char want[SRC_DIGEST_MAX], got[SRC_DIGEST_MAX];
	struct src_oci *c;
	struct err e = ERR_INIT;

	start((const char *[]){"--no-digest-header", NULL});
	put_image("1.0.0", "chart bytes", want, NULL);
	c = open_client(NULL, NULL);
	cr_assert_eq(src_oci_resolve(c, "1.0.0", got, &e), 0, "%s",
		     err_msg(&e));
	cr_expect_str_eq(got, want);
	cr_expect_eq(stat_count("HEAD manifests"), 1);
	cr_expect_eq(stat_count("GET manifests"), 1);
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, a_token_is_fetched_once_and_reused)
{
	char md[SRC_DIGEST_MAX], ld[SRC_DIGEST_MAX], got[SRC_DIGEST_MAX];
	char file[400];
	struct strvec tags = STRVEC_INIT;
	struct src_oci *c;
	json_t *m = NULL;
	struct err e = ERR_INIT;

	start((const char *[]){"--token", NULL});
	put_image("6.5.0", "chart bytes", md, ld);
	c = open_client(NULL, NULL);
	cr_assert_eq(src_oci_resolve(c, "6.5.0", got, &e), 0, "%s",
		     err_msg(&e));
	cr_expect_str_eq(got, md);
	/* 401, the token, the HEAD again. */
	cr_expect_eq(src_oci_requests(c), 3);
	cr_assert_eq(src_oci_manifest(c, md, &m, &e), 0, "%s", err_msg(&e));
	snprintf(file, sizeof(file), "%s/layer", root);
	cr_assert_eq(src_oci_blob(c, ld, 11, 1 << 20, file, &e), 0, "%s",
		     err_msg(&e));
	cr_assert_eq(src_oci_tags(c, &tags, &e), 0, "%s", err_msg(&e));
	cr_expect_eq(tags.len, 1);
	cr_expect_eq(src_oci_requests(c), 6);
	cr_expect_eq(stat_count("GET token"), 1);
	json_decref(m);
	strvec_release(&tags);
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, the_token_service_gets_basic_auth_and_a_refusal_is_told)
{
	char md[SRC_DIGEST_MAX], got[SRC_DIGEST_MAX];
	struct src_oci *c;
	struct err e = ERR_INIT;

	start((const char *[]){"--token", "--basic", "bot:s3cret", NULL});
	put_image("6.5.0", "chart bytes", md, NULL);
	c = open_client("bot", "s3cret");
	cr_assert_eq(src_oci_resolve(c, "6.5.0", got, &e), 0, "%s",
		     err_msg(&e));
	cr_expect_str_eq(got, md);
	src_oci_free(c);

	c = open_client("bot", "wrong");
	cr_expect_eq(src_oci_resolve(c, "6.5.0", got, &e), ERR_INVALID);
	cr_expect(strstr(err_msg(&e), "authentication refused by the token "
				      "service"),
		  "%s", err_msg(&e));
	cr_expect_null(strstr(err_msg(&e), "wrong"), "%s", err_msg(&e));
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, a_basic_challenge_is_answered_once)
{
	char md[SRC_DIGEST_MAX], got[SRC_DIGEST_MAX], want[200];
	struct src_oci *c;
	struct err e = ERR_INIT;

	start((const char *[]){"--basic", "bot:s3cret", NULL});
	put_image("6.5.0", "chart bytes", md, NULL);
	c = open_client("bot", "s3cret");
	cr_assert_eq(src_oci_resolve(c, "6.5.0", got, &e), 0, "%s",
		     err_msg(&e));
	cr_expect_eq(src_oci_requests(c), 2);
	/* Basic auth is now sent from the start. */
	cr_assert_eq(src_oci_resolve(c, "6.5.0", got, &e), 0, "%s",
		     err_msg(&e));
	cr_expect_eq(src_oci_requests(c), 3);
	src_oci_free(c);

	c = open_client("bot", "wrong");
	cr_expect_eq(src_oci_resolve(c, "6.5.0", got, &e), ERR_INVALID);
	snprintf(want, sizeof(want),
		 "127.0.0.1:%d/" REPO ": authentication refused (401)", port);
	cr_expect_str_eq(err_first(&e), want);
	cr_expect_eq(src_oci_requests(c), 2);
	src_oci_free(c);
	err_reset(&e);

	c = open_client(NULL, NULL);
	cr_expect_eq(src_oci_resolve(c, "6.5.0", got, &e), ERR_INVALID);
	cr_expect(strstr(err_msg(&e), "no user name is given"), "%s",
		  err_msg(&e));
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, a_manifest_that_does_not_match_its_digest_is_refused)
{
	char md[SRC_DIGEST_MAX];
	struct src_oci *c;
	json_t *m = NULL;
	struct err e = ERR_INIT;

	start(NULL);
	put_image("6.5.0", "chart bytes", md, NULL);
	/* The registry serves other bytes under that digest. */
	put("manifests", md, "{\"schemaVersion\":2,\"layers\":[]}", 31);
	c = open_client(NULL, NULL);
	cr_expect_eq(src_oci_manifest(c, md, &m, &e), ERR_INVALID);
	cr_expect(strstr(err_msg(&e), "manifest digest mismatch"), "%s",
		  err_msg(&e));
	cr_expect_null(m);
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, an_image_index_is_refused)
{
	static const char index[] = "{\"schemaVersion\":2,\"mediaType\":"
				    "\"application/vnd.oci.image."
				    "index.v1+json\",\"manifests\":[]}";
	char md[SRC_DIGEST_MAX];
	struct src_oci *c;
	json_t *m = NULL;
	struct err e = ERR_INIT;

	start(NULL);
	put("manifests", "multi", index, strlen(index));
	digest_of(index, strlen(index), md);
	c = open_client(NULL, NULL);
	cr_expect_eq(src_oci_manifest(c, md, &m, &e), ERR_INVALID);
	cr_expect(strstr(err_msg(&e), "an image index"), "%s", err_msg(&e));
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, a_blob_is_downloaded_and_a_wrong_one_removed)
{
	char ld[SRC_DIGEST_MAX], file[400], text[64] = {0};
	struct src_oci *c;
	struct err e = ERR_INIT;
	int fd;

	start(NULL);
	put_image("6.5.0", "chart bytes", NULL, ld);
	snprintf(file, sizeof(file), "%s/layer", root);
	c = open_client(NULL, NULL);
	cr_assert_eq(src_oci_blob(c, ld, 11, 1 << 20, file, &e), 0, "%s",
		     err_msg(&e));
	fd = open(file, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_expect_eq(read(fd, text, sizeof(text) - 1), 11);
	close(fd);
	cr_expect_str_eq(text, "chart bytes");

	/* Same length, other bytes. */
	put("blobs", ld, "evil bytes!", 11);
	cr_expect_eq(src_oci_blob(c, ld, 11, 1 << 20, file, &e), ERR_INVALID);
	cr_expect(strstr(err_msg(&e), "blob digest mismatch"), "%s",
		  err_msg(&e));
	cr_expect(!exists(file));
	err_reset(&e);

	/* Another length than the manifest says. */
	put("blobs", ld, "chart", 5);
	cr_expect_eq(src_oci_blob(c, ld, 11, 1 << 20, file, &e), ERR_INVALID);
	cr_expect(strstr(err_msg(&e), "the manifest says 11"), "%s",
		  err_msg(&e));
	cr_expect(!exists(file));
	src_oci_free(c);
	err_release(&e);
}

/* The manifest of `tag` and its first layer's digest and size. */
static void first_layer(struct src_oci *c, const char *tag,
			char digest[SRC_DIGEST_MAX], uint64_t *size)
{
	char md[SRC_DIGEST_MAX];
	json_t *m, *layer;
	struct err e = ERR_INIT;

	cr_assert_eq(src_oci_resolve(c, tag, md, &e), 0, "%s", err_msg(&e));
	cr_assert_eq(src_oci_manifest(c, md, &m, &e), 0, "%s", err_msg(&e));
	layer = json_array_get(json_object_get(m, "layers"), 0);
	snprintf(digest, SRC_DIGEST_MAX, "%s",
		 json_string_value(json_object_get(layer, "digest")));
	*size = (uint64_t)json_integer_value(json_object_get(layer, "size"));
	json_decref(m);
	err_release(&e);
}

Test(oci_live, a_layer_claiming_1_gib_is_refused_before_download)
{
	char ld[SRC_DIGEST_MAX], file[400];
	struct src_oci *c;
	uint64_t size;
	struct err e = ERR_INIT;

	start((const char *[]){"--huge-layer", NULL});
	mkdirs(data);
	c = open_client(NULL, NULL);
	first_layer(c, "huge", ld, &size);
	cr_assert_eq(size, 1ull << 30);
	snprintf(file, sizeof(file), "%s/layer", root);
	cr_expect_eq(src_oci_blob(c, ld, size, 1 << 20, file, &e), ERR_LIMIT);
	cr_expect(strstr(err_msg(&e), "over the bound of 1048576 bytes"), "%s",
		  err_msg(&e));
	cr_expect_eq(stat_count("GET blobs"), 0);
	cr_expect(!exists(file));
	err_reset(&e);

	/* Size unknown: the Content-Length is refused before the body. */
	cr_expect_eq(src_oci_blob(c, ld, 0, 1 << 20, file, &e), ERR_LIMIT);
	cr_expect(strstr(err_msg(&e), "body over 1048576 bytes"), "%s",
		  err_msg(&e));
	cr_expect_eq(stat_count("GET blobs"), 1);
	cr_expect(!exists(file));
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, an_endless_body_is_stopped_at_the_bound)
{
	char ld[SRC_DIGEST_MAX], file[400];
	struct src_oci *c;
	uint64_t size;
	struct err e = ERR_INIT;

	start((const char *[]){"--huge-layer", NULL});
	c = open_client(NULL, NULL);
	first_layer(c, "endless", ld, &size);
	cr_assert_eq(size, 1000);
	snprintf(file, sizeof(file), "%s/layer", root);
	cr_expect_eq(src_oci_blob(c, ld, size, 1 << 20, file, &e), ERR_LIMIT);
	cr_expect(strstr(err_msg(&e), "body over 1000 bytes"), "%s",
		  err_msg(&e));
	cr_expect(!exists(file));
	err_reset(&e);

	/* Size unknown: stopped at max_bytes. */
	cr_expect_eq(src_oci_blob(c, ld, 0, 1 << 20, file, &e), ERR_LIMIT);
	cr_expect(strstr(err_msg(&e), "body over 1048576 bytes"), "%s",
		  err_msg(&e));
	cr_expect(!exists(file));
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, a_redirect_to_another_host_is_refused)
{
	char ld[SRC_DIGEST_MAX], file[400], want[400];
	struct src_oci *c;
	struct err e = ERR_INIT;

	start((const char *[]){"--redirect-blobs", "http://localhost:9", NULL});
	put_image("6.5.0", "chart bytes", NULL, ld);
	snprintf(file, sizeof(file), "%s/layer", root);
	c = open_client(NULL, NULL);
	cr_expect_eq(src_oci_blob(c, ld, 11, 1 << 20, file, &e), ERR_INVALID);
	snprintf(want, sizeof(want),
		 "GET http://127.0.0.1:%d/v2/" REPO "/blobs/%s: redirected to "
		 "another host (http://localhost:9/_blob/" REPO "/%s); refused",
		 port, ld, ld);
	cr_expect_str_eq(err_first(&e), want);
	cr_expect_eq(src_oci_requests(c), 1);
	cr_expect(!exists(file));
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, a_redirect_on_the_same_host_is_followed)
{
	char ld[SRC_DIGEST_MAX], file[400];
	struct src_oci *c;
	struct err e = ERR_INIT;

	start((const char *[]){"--redirect-blobs", "self", NULL});
	put_image("6.5.0", "chart bytes", NULL, ld);
	snprintf(file, sizeof(file), "%s/layer", root);
	c = open_client(NULL, NULL);
	cr_assert_eq(src_oci_blob(c, ld, 11, 1 << 20, file, &e), 0, "%s",
		     err_msg(&e));
	cr_expect_eq(src_oci_requests(c), 2);
	cr_expect_eq(stat_count("GET blob-redirected"), 1);
	cr_expect(exists(file));
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, tags_are_read_across_pages)
{
	static const char *const want[] = {"0.1.0", "0.2.0", "1.0.0", "1.1.0",
					   "2.0.0"};
	struct strvec tags = STRVEC_INIT;
	struct src_oci *c;
	struct err e = ERR_INIT;
	size_t i;

	start((const char *[]){"--page-size", "2", NULL});
	for (i = 0; i < 5; i++)
		put_image(want[i], "chart bytes", NULL, NULL);
	c = open_client(NULL, NULL);
	cr_assert_eq(src_oci_tags(c, &tags, &e), 0, "%s", err_msg(&e));
	cr_assert_eq(tags.len, 5);
	for (i = 0; i < 5; i++)
		cr_expect_str_eq(tags.v[i], want[i]);
	cr_expect_eq(stat_count("GET tags"), 3);
	strvec_release(&tags);
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, a_tags_page_linking_to_another_host_is_refused)
{
	struct strvec tags = STRVEC_INIT;
	struct src_oci *c;
	struct err e = ERR_INIT;

	start((const char *[]){"--page-size", "1", "--foreign-link", NULL});
	put_image("1.0.0", "chart bytes", NULL, NULL);
	put_image("2.0.0", "chart bytes", NULL, NULL);
	c = open_client(NULL, NULL);
	cr_expect_eq(src_oci_tags(c, &tags, &e), ERR_INVALID);
	cr_expect(strstr(err_msg(&e), "links to another host (http://"
				      "localhost:"),
		  "%s", err_msg(&e));
	cr_expect_eq(tags.len, 0);
	cr_expect_eq(stat_count("GET tags"), 1);
	strvec_release(&tags);
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, unknown_tags_digests_and_repositories_are_not_found)
{
	char got[SRC_DIGEST_MAX], want[300], ld[SRC_DIGEST_MAX], file[400];
	struct strvec tags = STRVEC_INIT;
	struct src_oci *c;
	json_t *m = NULL;
	struct err e = ERR_INIT;

	start(NULL);
	put_image("6.5.0", "chart bytes", NULL, NULL);
	c = open_client(NULL, NULL);
	cr_expect_eq(src_oci_resolve(c, "9.9.9", got, &e), ERR_NOTFOUND);
	snprintf(want, sizeof(want), "127.0.0.1:%d/" REPO ":9.9.9: not found",
		 port);
	cr_expect_str_eq(err_first(&e), want);
	err_reset(&e);

	digest_of("nothing", 7, ld);
	cr_expect_eq(src_oci_manifest(c, ld, &m, &e), ERR_NOTFOUND);
	snprintf(file, sizeof(file), "%s/layer", root);
	cr_expect_eq(src_oci_blob(c, ld, 0, 1 << 20, file, &e), ERR_NOTFOUND);
	cr_expect(!exists(file));
	src_oci_free(c);
	err_reset(&e);

	snprintf(ref, sizeof(ref), "oci://127.0.0.1:%d/no/such", port);
	c = open_client(NULL, NULL);
	cr_expect_eq(src_oci_tags(c, &tags, &e), ERR_NOTFOUND);
	cr_expect(strstr(err_msg(&e), "/no/such: not found"), "%s",
		  err_msg(&e));
	strvec_release(&tags);
	src_oci_free(c);
	err_release(&e);
}

Test(oci_live, bad_tags_and_digests_are_refused_without_a_request)
{
	char got[SRC_DIGEST_MAX];
	struct src_oci *c;
	json_t *m = NULL;
	struct err e = ERR_INIT;

	start(NULL);
	c = open_client(NULL, NULL);
	cr_expect_eq(src_oci_resolve(c, "../x", got, &e), ERR_INVALID);
	cr_expect_eq(src_oci_resolve(c, "sha256:ABC", got, &e), ERR_INVALID);
	cr_expect_eq(src_oci_manifest(c, "latest", &m, &e), ERR_INVALID);
	cr_expect_eq(src_oci_requests(c), 0);
	src_oci_free(c);
	err_release(&e);
}
