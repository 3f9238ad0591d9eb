/*
 * The Git source against repositories made on the spot with the git CLI
 * (through util/proc.h), served by path and by file:// URL.
 *
 * Every test gets its own temporary directory with a "server" repository
 * (a normal repository whose branches and tags the tests move, as a push
 * would) and a cache directory. HOME points into it so that no user or
 * system Git configuration leaks in.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source/internal.h"
#include "util/proc.h"
#include "util/sha256.h"

static char root[256];
static char srv[300];
static char cache[300];

/* Run a program; fail the test unless it exits 0. Returns its stdout. */
static char *run_in(const char *cwd, const char *const *argv)
{
	struct proc_options po = PROC_OPTIONS_INIT;
	struct proc_result pr;
	struct err e = ERR_INIT;
	char *out;
	int rc;

	po.cwd = cwd;
	po.timeout_ms = 30000;
	rc = proc_run(&pr, argv, &po, &e);
	cr_assert_eq(rc, 0, "%s: %s", argv[0], err_msg(&e));
	cr_assert(pr.exited && pr.exit_code == 0, "%s %s failed (%d): %s%s",
		  argv[0], argv[1] ? argv[1] : "", pr.exit_code,
		  buf_cstr(&pr.errout), buf_cstr(&pr.out));
	out = strdup(buf_cstr(&pr.out));
	while (*out && out[strlen(out) - 1] == '\n')
		out[strlen(out) - 1] = '\0';
	proc_result_release(&pr);
	err_release(&e);
	return out;
}

/* git -C srv ARGS... */
#define GIT(...)                                                          \
	free(run_in(srv, (const char *const[]){"git", __VA_ARGS__, NULL}))
#define GITOUT(...) run_in(srv, (const char *const[]){"git", __VA_ARGS__, NULL})

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (char *p = path + strlen(dir) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	cr_assert_not_null(f = fopen(path, "w"), "%s", path);
	fputs(text, f);
	fclose(f);
}

/* Commit one file change in the server repository; returns the id. */
static char *commit_file(const char *name, const char *text)
{
	write_file(srv, name, text);
	GIT("add", "-A");
	GIT("commit", "-q", "-m", name);
	return GITOUT("rev-parse", "HEAD");
}

static void setup(void)
{
	char path[400];

	snprintf(root, sizeof(root), "/tmp/syncd-git-test-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(srv, sizeof(srv), "%s/srv", root);
	snprintf(cache, sizeof(cache), "%s/cache", root);
	cr_assert_eq(mkdir(srv, 0755), 0);
	setenv("HOME", root, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_AUTHOR_NAME", "T", 1);
	setenv("GIT_AUTHOR_EMAIL", "t@example.com", 1);
	setenv("GIT_COMMITTER_NAME", "T", 1);
	setenv("GIT_COMMITTER_EMAIL", "t@example.com", 1);
	unsetenv("XDG_CACHE_HOME");
	unsetenv("SSH_AUTH_SOCK");
	snprintf(path, sizeof(path), "%s/gnupg", root);
	setenv("GNUPGHOME", path, 1);
	GIT("init", "-q", "-b", "main");
	free(commit_file("app/cm.yaml", "kind: ConfigMap\n"));
}

static void teardown(void)
{
	/* Checkouts are read-only: make them writable to remove them. */
	free(run_in("/", (const char *const[]){"chmod", "-R", "u+w", root,
					       NULL}));
	free(run_in("/", (const char *const[]){"rm", "-rf", root, NULL}));
}

TestSuite(git, .init = setup, .fini = teardown, .timeout = 60);

static struct source_git *open_src(const char *url, const char *rev,
				   const char *subpath)
{
	struct source_options o = SOURCE_OPTIONS_INIT;
	struct source_git *s = NULL;
	struct err e = ERR_INIT;

	o.url = url;
	o.revision = rev;
	o.subpath = subpath;
	o.cache_dir = cache;
	cr_assert_eq(source_git_open(&s, &o, &e), 0, "open: %s", err_msg(&e));
	err_release(&e);
	return s;
}

static void poll_ok(struct source_git *s, struct source_poll_result *r)
{
	struct err e = ERR_INIT;

	cr_assert_eq(source_git_poll(s, r, &e), 0, "poll: %s", err_msg(&e));
	err_release(&e);
}

static char *read_text(const char *dir, const char *name)
{
	char path[600], buf[4096];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "r")))
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strdup(buf);
}

static char *checkout_ok(struct source_git *s)
{
	struct err e = ERR_INIT;
	char *dir = NULL;

	cr_assert_eq(source_git_checkout(s, &dir, &e), 0, "checkout: %s",
		     err_msg(&e));
	err_release(&e);
	return dir;
}

Test(git, default_head_by_path_and_file_url)
{
	struct source_poll_result r;
	char *head = GITOUT("rev-parse", "HEAD");
	char *tree = GITOUT("rev-parse", "HEAD:app");
	char url[400], *dir, *text;
	struct source_git *s;

	s = open_src(srv, NULL, "app");
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, head);
	cr_assert_str_eq(r.tree, tree);
	cr_assert(r.changed && r.fetched && r.contacted);
	cr_assert_eq(r.requests, 2); /* ls + fetch */
	dir = checkout_ok(s);
	text = read_text(dir, "cm.yaml");
	cr_assert_str_eq(text, "kind: ConfigMap\n");
	free(text);
	free(dir);
	source_git_free(s);

	snprintf(url, sizeof(url), "file://%s", srv);
	s = open_src(url, NULL, NULL);
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, head);
	free(tree);
	tree = GITOUT("rev-parse", "HEAD^{tree}");
	cr_assert_str_eq(r.tree, tree);
	source_git_free(s);
	free(head);
	free(tree);
}

Test(git, branch_tags_and_commits)
{
	struct source_poll_result r;
	struct source_git *s;
	char *c1 = GITOUT("rev-parse", "HEAD"), *c2, *abbrev;

	GIT("tag", "light");
	GIT("tag", "-a", "-m", "annotated", "v1");
	GIT("checkout", "-q", "-b", "feature");
	c2 = commit_file("app/other.yaml", "x: 1\n");
	GIT("checkout", "-q", "main");

	s = open_src(srv, "feature", NULL);
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c2);
	source_git_free(s);

	s = open_src(srv, "refs/heads/feature", NULL);
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c2);
	source_git_free(s);

	s = open_src(srv, "light", NULL);
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c1);
	source_git_free(s);

	s = open_src(srv, "v1", NULL);
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c1, "annotated tag peels to its commit");
	source_git_free(s);

	/* A full commit id that is on a branch only. */
	s = open_src(srv, c2, NULL);
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c2);
	source_git_free(s);

	abbrev = strndup(c2, 8);
	s = open_src(srv, abbrev, NULL);
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c2);
	source_git_free(s);
	free(abbrev);
	free(c1);
	free(c2);
}

Test(git, no_fetch_when_nothing_moved)
{
	struct source_poll_result r;
	struct source_git *s = open_src(srv, "main", NULL);
	char *c2;

	poll_ok(s, &r);
	cr_assert(r.fetched);
	cr_assert_eq(r.requests, 2);

	poll_ok(s, &r);
	cr_assert(r.contacted);
	cr_assert_not(r.fetched, "nothing moved: no fetch");
	cr_assert_eq(r.requests, 3, "only the ref listing");

	c2 = commit_file("app/b.yaml", "b: 1\n");
	poll_ok(s, &r);
	cr_assert(r.fetched);
	cr_assert_eq(r.requests, 5);
	cr_assert_str_eq(r.revision, c2);
	free(c2);
	source_git_free(s);
}

Test(git, pinned_commit_needs_no_network)
{
	struct source_poll_result r;
	char *c1 = GITOUT("rev-parse", "HEAD");
	struct source_git *s = open_src(srv, c1, NULL);

	poll_ok(s, &r);
	cr_assert(r.contacted && r.fetched);
	poll_ok(s, &r);
	cr_assert_not(r.contacted);
	cr_assert_not(r.fetched);
	cr_assert_eq(r.requests, 2, "no request after the first poll");
	cr_assert_str_eq(r.revision, c1);
	/* Even with the server gone. */
	free(run_in("/", (const char *const[]){"rm", "-rf", srv, NULL}));
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c1);
	source_git_free(s);
	free(c1);
}

Test(git, commit_outside_path_is_not_a_change)
{
	struct source_poll_result r;
	struct source_git *s = open_src(srv, "main", "app");
	struct err e = ERR_INIT;
	char tree[64], *c2, *c3;

	poll_ok(s, &r);
	cr_assert(r.changed);
	cr_assert_str_eq(r.rendered_tree, "");
	cr_assert_eq(source_git_mark_rendered(s, r.tree, &e), 0, "%s",
		     err_msg(&e));
	strcpy(tree, r.tree);
	poll_ok(s, &r);
	cr_assert_not(r.changed);

	c2 = commit_file("other/readme.txt", "elsewhere\n");
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c2);
	cr_assert(r.fetched);
	cr_assert_str_eq(r.tree, tree);
	cr_assert_not(r.changed, "commit outside the path");

	c3 = commit_file("app/new.yaml", "n: 1\n");
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c3);
	cr_assert(r.changed);
	cr_assert_str_neq(r.tree, tree);
	cr_assert_str_eq(r.rendered_tree, tree);
	free(c2);
	free(c3);
	err_release(&e);
	source_git_free(s);
}

Test(git, restart_reads_last_render_record)
{
	struct source_poll_result r;
	struct source_git *s = open_src(srv, NULL, "app");
	struct err e = ERR_INIT;
	char tree[64];

	poll_ok(s, &r);
	strcpy(tree, r.tree);
	cr_assert_eq(source_git_mark_rendered(s, r.tree, &e), 0);
	source_git_free(s);

	s = open_src(srv, NULL, "app");
	poll_ok(s, &r);
	cr_assert_str_eq(r.rendered_tree, tree);
	cr_assert_not(r.changed);
	cr_assert_not(r.fetched, "objects are in the cache already");
	source_git_free(s);

	/* Another path of the same URL has its own record. */
	s = open_src(srv, NULL, NULL);
	poll_ok(s, &r);
	cr_assert_str_eq(r.rendered_tree, "");
	cr_assert(r.changed);
	source_git_free(s);
	err_release(&e);
}

Test(git, force_push_and_moved_tag)
{
	struct source_poll_result r;
	struct source_git *sb = open_src(srv, "main", NULL);
	struct source_git *st;
	char *c1 = GITOUT("rev-parse", "HEAD"), *c2, *c3;

	GIT("tag", "v1");
	st = open_src(srv, "v1", NULL);
	c2 = commit_file("app/a.yaml", "a: 1\n");
	poll_ok(sb, &r);
	cr_assert_str_eq(r.revision, c2);
	poll_ok(st, &r);
	cr_assert_str_eq(r.revision, c1);

	/* Rewrite history: c2 is gone from the branch. */
	GIT("reset", "-q", "--hard", c1);
	c3 = commit_file("app/a.yaml", "a: 2\n");
	poll_ok(sb, &r);
	cr_assert_str_eq(r.revision, c3);
	cr_assert(r.fetched);

	GIT("tag", "-f", "v1", c2);
	poll_ok(st, &r);
	cr_assert_str_eq(r.revision, c2, "moved tag followed");
	free(c1);
	free(c2);
	free(c3);
	source_git_free(sb);
	source_git_free(st);
}

Test(git, deleted_branch_keeps_last_checkout)
{
	struct source_poll_result r;
	struct source_git *s;
	struct err e = ERR_INIT;
	char *c2, *dir, *dir2, *text;

	GIT("checkout", "-q", "-b", "feature");
	c2 = commit_file("app/cm.yaml", "feature: 1\n");
	GIT("checkout", "-q", "main");
	s = open_src(srv, "feature", "app");
	poll_ok(s, &r);
	dir = checkout_ok(s);

	GIT("branch", "-q", "-D", "feature");
	cr_assert_eq(source_git_poll(s, &r, &e), ERR_NOTFOUND);
	cr_assert(strstr(err_msg(&e), "feature"), "%s", err_msg(&e));
	cr_assert(strstr(err_msg(&e), srv), "%s", err_msg(&e));

	dir2 = checkout_ok(s);
	cr_assert_str_eq(dir, dir2);
	text = read_text(dir2, "cm.yaml");
	cr_assert_str_eq(text, "feature: 1\n");
	free(text);
	free(dir);
	free(dir2);
	free(c2);
	err_release(&e);
	source_git_free(s);
}

Test(git, unreachable_server_is_a_clear_error)
{
	struct source_poll_result r;
	struct source_git *s;
	struct err e = ERR_INIT;
	char url[400], *dir, *dir2;

	snprintf(url, sizeof(url), "file://%s", srv);
	s = open_src(url, NULL, NULL);
	poll_ok(s, &r);
	dir = checkout_ok(s);
	free(run_in("/", (const char *const[]){"rm", "-rf", srv, NULL}));
	cr_assert_lt(source_git_poll(s, &r, &e), 0);
	cr_assert(strstr(err_msg(&e), url), "names the URL: %s",
		  err_msg(&e));
	dir2 = checkout_ok(s);
	cr_assert_str_eq(dir, dir2, "last good checkout still there");
	free(dir);
	free(dir2);
	err_release(&e);
	source_git_free(s);
}

Test(git, ssh_connection_refused)
{
	struct source_poll_result r;
	struct source_git *s;
	struct err e = ERR_INIT;

	/* Port 1 on loopback: nothing listens there. */
	s = open_src("ssh://git@127.0.0.1:1/repo.git", NULL, NULL);
	cr_assert_eq(source_git_poll(s, &r, &e), ERR_IO, "%s", err_msg(&e));
	cr_assert(strstr(err_msg(&e), "ssh://127.0.0.1:1/repo.git"), "%s",
		  err_msg(&e));
	err_release(&e);
	source_git_free(s);
}

Test(git, checkout_is_read_only_and_reused)
{
	struct source_poll_result r;
	struct source_git *s = open_src(srv, NULL, NULL);
	struct stat st;
	char *dir, *dir2, path[600];

	write_file(srv, "run.sh", "#!/bin/sh\n");
	GIT("update-index", "--add", "--chmod=+x", "run.sh");
	GIT("commit", "-q", "-m", "exe");
	poll_ok(s, &r);
	dir = checkout_ok(s);
	cr_assert_eq(stat(dir, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0555);
	snprintf(path, sizeof(path), "%s/app/cm.yaml", dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0444);
	snprintf(path, sizeof(path), "%s/run.sh", dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0555);
	cr_assert(strstr(dir, r.tree), "named by tree id: %s", dir);
	/* Same tree: same directory, not rewritten. */
	poll_ok(s, &r);
	dir2 = checkout_ok(s);
	cr_assert_str_eq(dir, dir2);
	free(dir);
	free(dir2);
	source_git_free(s);
}

Test(git, old_checkouts_are_cleaned_up)
{
	struct source_poll_result r;
	struct source_git *s = open_src(srv, NULL, "app");
	char *d1, *d2, *d3, *c;

	poll_ok(s, &r);
	d1 = checkout_ok(s);
	c = commit_file("app/2.yaml", "2: 1\n");
	free(c);
	poll_ok(s, &r);
	d2 = checkout_ok(s);
	c = commit_file("app/3.yaml", "3: 1\n");
	free(c);
	poll_ok(s, &r);
	d3 = checkout_ok(s);
	cr_assert_neq(access(d1, F_OK), 0, "oldest tree removed");
	cr_assert_eq(access(d2, F_OK), 0, "previous tree kept");
	cr_assert_eq(access(d3, F_OK), 0);
	free(d1);
	free(d2);
	free(d3);
	source_git_free(s);
}

Test(git, blob_size_limit)
{
	struct source_options o = SOURCE_OPTIONS_INIT;
	struct source_poll_result r;
	struct source_git *s = NULL;
	struct err e = ERR_INIT;
	char *dir = NULL, big[200];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	free(commit_file("app/big.txt", big));
	o.url = srv;
	o.cache_dir = cache;
	o.max_blob_bytes = 100;
	cr_assert_eq(source_git_open(&s, &o, &e), 0);
	/* A local repository is scanned before the fetch (headers only). */
	cr_assert_eq(source_git_poll(s, &r, &e), ERR_LIMIT);
	cr_assert(strstr(err_msg(&e), "app/big.txt"), "%s", err_msg(&e));
	err_release(&e);
	cr_assert_eq(source_git_checkout(s, &dir, &e), ERR_INVALID);
	cr_assert_null(dir);
	err_release(&e);
	source_git_free(s);
}

Test(git, repository_size_limit)
{
	struct source_options o = SOURCE_OPTIONS_INIT;
	struct source_poll_result r;
	struct source_git *s = NULL;
	struct err e = ERR_INIT;

	o.url = srv;
	o.cache_dir = cache;
	o.max_repo_bytes = 1000;
	cr_assert_eq(source_git_open(&s, &o, &e), 0);
	cr_assert_eq(source_git_poll(s, &r, &e), ERR_LIMIT, "%s",
		     err_msg(&e));
	cr_assert(strstr(err_msg(&e), "limit"), "%s", err_msg(&e));
	err_release(&e);
	source_git_free(s);
}

Test(git, submodules_not_followed_and_outside_links_refused)
{
	struct source_poll_result r;
	struct source_git *s = open_src(srv, NULL, NULL);
	struct err e = ERR_INIT;
	char *head = GITOUT("rev-parse", "HEAD"), cacheinfo[100], *dir;
	char path[600];
	struct stat st;

	snprintf(cacheinfo, sizeof(cacheinfo), "160000,%s,sub", head);
	GIT("update-index", "--add", "--cacheinfo", cacheinfo);
	GIT("commit", "-q", "-m", "submodule");
	GIT("rm", "-q", "--cached", "sub");
	free(run_in(srv, (const char *const[]){"ln", "-s", "cm.yaml",
					      "app/link.yaml", NULL}));
	GIT("add", "app/link.yaml");
	GIT("commit", "-q", "-m", "inside link");
	GIT("update-index", "--add", "--cacheinfo", cacheinfo);
	GIT("commit", "-q", "-m", "submodule again");

	poll_ok(s, &r);
	dir = checkout_ok(s);
	snprintf(path, sizeof(path), "%s/sub", dir);
	cr_assert_neq(lstat(path, &st), 0, "submodule left out");
	snprintf(path, sizeof(path), "%s/app/link.yaml", dir);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISLNK(st.st_mode));
	free(dir);

	free(run_in(srv, (const char *const[]){"ln", "-s", "../../etc/passwd",
					      "app/evil.yaml", NULL}));
	GIT("add", "app/evil.yaml");
	GIT("commit", "-q", "-m", "outside link");
	poll_ok(s, &r);
	cr_assert_eq(source_git_checkout(s, &dir, &e), ERR_INVALID);
	cr_assert(strstr(err_msg(&e), "app/evil.yaml"), "%s", err_msg(&e));
	err_release(&e);
	free(head);
	source_git_free(s);
}

Test(git, credentials_never_in_cache_names)
{
	struct source_options o = SOURCE_OPTIONS_INIT;
	struct source_git *s = NULL;
	struct err e = ERR_INIT;
	uint8_t d[SHA256_DIGEST_SIZE];
	char hex[65];
	const char *clean = "https://example.invalid/org/repo.git";

	s = open_src("https://s3cr3ttoken@example.invalid/org/repo.git", NULL,
		     NULL);
	sha256(clean, strlen(clean), d);
	hex_encode(d, sizeof(d), hex);
	cr_assert(strstr(source_git_cache_path(s), hex), "%s",
		  source_git_cache_path(s));
	cr_assert_null(strstr(source_git_cache_path(s), "s3cr3t"));
	cr_assert_str_eq(source_git_url(s), clean);
	source_git_free(s);

	o.url = "https://user:hunter2@example.invalid/org/repo.git";
	o.cache_dir = cache;
	cr_assert_eq(source_git_open(&s, &o, &e), ERR_INVALID);
	cr_assert_null(s);
	cr_assert_null(strstr(err_msg(&e), "hunter2"), "%s", err_msg(&e));
	err_release(&e);

	/* scp form and ssh:// parse; nothing is contacted on open. */
	s = open_src("git@example.invalid:org/repo.git", NULL, NULL);
	cr_assert_str_eq(source_git_url(s), "example.invalid:org/repo.git");
	source_git_free(s);
	o.url = "ftp://example.invalid/repo.git";
	cr_assert_eq(source_git_open(&s, &o, &e), ERR_INVALID);
	cr_assert(strstr(err_msg(&e), "ftp: unsupported URL scheme"), "%s",
		  err_msg(&e));
	err_release(&e);

	/* A mistyped URL: what precedes "://" is no scheme, and may be a
	 * credential; it is never repeated. */
	o.url = "user:hunter2@example.invalid://org/repo.git";
	cr_assert_eq(source_git_open(&s, &o, &e), ERR_INVALID);
	cr_assert(strstr(err_msg(&e), "scheme is not valid"), "%s",
		  err_msg(&e));
	cr_assert_null(strstr(err_msg(&e), "hunter2"), "%s", err_msg(&e));
	err_release(&e);
}

Test(git, default_cache_dir)
{
	struct source_options o = SOURCE_OPTIONS_INIT;
	struct source_git *s = NULL;
	char want[400];

	o.url = srv;
	cr_assert_eq(source_git_open(&s, &o, NULL), 0);
	snprintf(want, sizeof(want), "%s/.cache/syncd/", root);
	cr_assert(!strncmp(source_git_cache_path(s), want, strlen(want)),
		  "%s", source_git_cache_path(s));
	source_git_free(s);
	snprintf(want, sizeof(want), "%s/xdg", root);
	setenv("XDG_CACHE_HOME", want, 1);
	cr_assert_eq(source_git_open(&s, &o, NULL), 0);
	strcat(want, "/syncd/");
	cr_assert(!strncmp(source_git_cache_path(s), want, strlen(want)),
		  "%s", source_git_cache_path(s));
	source_git_free(s);
}

Test(git, cache_shared_by_two_sources_and_locked)
{
	struct source_options o = SOURCE_OPTIONS_INIT;
	struct source_poll_result r1, r2;
	struct source_git *a = open_src(srv, "main", "app");
	struct source_git *b = NULL;
	struct err e = ERR_INIT;
	char lock[600], *da, *db;
	int fd;

	o.url = srv;
	o.revision = "main";
	o.cache_dir = cache;
	o.fetch_timeout_ms = 300;
	cr_assert_eq(source_git_open(&b, &o, &e), 0);
	cr_assert_str_eq(source_git_cache_path(a), source_git_cache_path(b));

	poll_ok(a, &r1);
	cr_assert(r1.fetched);
	poll_ok(b, &r2);
	cr_assert_not(r2.fetched, "objects fetched by the other source");
	cr_assert_str_eq(r1.revision, r2.revision);
	da = checkout_ok(a);
	db = checkout_ok(b);
	cr_assert_str_neq(da, db);

	/* Another holder of the lock (as another process would be). */
	snprintf(lock, sizeof(lock), "%s/lock", source_git_cache_path(b));
	cr_assert_geq(fd = open(lock, O_RDWR), 0);
	cr_assert_eq(flock(fd, LOCK_EX), 0);
	cr_assert_eq(source_git_poll(b, &r2, &e), ERR_TIMEOUT, "%s",
		     err_msg(&e));
	cr_assert(strstr(err_msg(&e), "locked"), "%s", err_msg(&e));
	close(fd);
	poll_ok(b, &r2);
	free(da);
	free(db);
	err_release(&e);
	source_git_free(a);
	source_git_free(b);
}

/* ---- signatures ---- */

static char *sign_src_ssh(const char *key, bool sign)
{
	static int n;
	char cfg[600], text[64];

	snprintf(cfg, sizeof(cfg), "user.signingkey=%s.pub", key);
	snprintf(text, sizeof(text), "%s: %d\n", sign ? "signed" : "unsigned",
		 ++n);
	write_file(srv, "app/s.yaml", text);
	GIT("add", "-A");
	if (sign)
		GIT("-c", "gpg.format=ssh", "-c", cfg, "commit", "-q", "-S",
		    "-m", "signed");
	else
		GIT("commit", "-q", "-m", "unsigned");
	return GITOUT("rev-parse", "HEAD");
}

static void ssh_keygen(const char *path)
{
	free(run_in("/", (const char *const[]){"ssh-keygen", "-q", "-t",
					       "ed25519", "-N", "", "-C",
					       "test", "-f", path, NULL}));
}

Test(git, ssh_signature_policy)
{
	struct source_options o = SOURCE_OPTIONS_INIT;
	struct source_poll_result r;
	struct source_git *s = NULL;
	struct err e = ERR_INIT;
	char key[400], other[400], signers[400], *pub, line[1200], *c;
	FILE *f;

	snprintf(key, sizeof(key), "%s/key", root);
	snprintf(other, sizeof(other), "%s/other", root);
	snprintf(signers, sizeof(signers), "%s/allowed_signers", root);
	ssh_keygen(key);
	ssh_keygen(other);
	strcat(key, ".pub");
	pub = read_text(root, "key.pub");
	key[strlen(key) - 4] = '\0';
	snprintf(line, sizeof(line), "t@example.com %s", pub);
	cr_assert_not_null(f = fopen(signers, "w"));
	fputs(line, f);
	fclose(f);
	free(pub);

	o.url = srv;
	o.cache_dir = cache;
	o.verify.allowed_signers_file = signers;
	cr_assert_eq(source_git_open(&s, &o, &e), 0);

	c = sign_src_ssh(key, true);
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c);
	free(c);

	c = sign_src_ssh(key, false);
	cr_assert_eq(source_git_poll(s, &r, &e), ERR_INVALID);
	cr_assert(strstr(err_msg(&e), c), "names the commit: %s",
		  err_msg(&e));
	cr_assert(strstr(err_msg(&e), "not signed"), "%s", err_msg(&e));
	err_reset(&e);
	free(c);

	c = sign_src_ssh(other, true);
	cr_assert_eq(source_git_poll(s, &r, &e), ERR_INVALID);
	cr_assert(strstr(err_msg(&e), c), "%s", err_msg(&e));
	cr_assert(strstr(err_msg(&e), "not in"), "%s", err_msg(&e));
	err_reset(&e);
	free(c);

	/* Signed by the right key again: accepted; the refused commits
	 * never replaced the last good one in between. */
	c = sign_src_ssh(key, true);
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c);
	free(c);
	err_release(&e);
	source_git_free(s);
}

/* A throwaway GPG key in GNUPGHOME; false (and a message) when gpg fails. */
static bool gpg_key(const char *uid)
{
	struct proc_options po = PROC_OPTIONS_INIT;
	struct proc_result pr;
	const char *argv[] = {"gpg", "--batch", "--pinentry-mode", "loopback",
			      "--passphrase", "", "--quick-gen-key", uid,
			      "ed25519", "sign", "never", NULL};
	bool ok;

	mkdir(getenv("GNUPGHOME"), 0700);
	po.timeout_ms = 30000;
	ok = !proc_run(&pr, argv, &po, NULL) && pr.exited && !pr.exit_code;
	if (!ok)
		cr_log_warn("gpg cannot make a key (%s): GPG test skipped",
			    buf_cstr(&pr.errout));
	proc_result_release(&pr);
	return ok;
}

Test(git, gpg_signature_policy)
{
	struct source_options o = SOURCE_OPTIONS_INIT;
	struct source_poll_result r;
	struct source_git *s = NULL;
	struct err e = ERR_INIT;
	char keyring[400], *c;
	FILE *f;

	if (!gpg_key("Good <good@example.com>") ||
	    !gpg_key("Evil <evil@example.com>")) {
		cr_skip_test("gpg unavailable");
		return;
	}
	snprintf(keyring, sizeof(keyring), "%s/keyring.gpg", root);
	/* Binary: gpg writes the file itself. */
	free(run_in("/", (const char *const[]){"gpg", "--batch", "--yes",
					       "--output", keyring, "--export",
					       "good@example.com", NULL}));
	cr_assert_not_null(f = fopen(keyring, "r"));
	fclose(f);

	o.url = srv;
	o.cache_dir = cache;
	o.verify.gpg_keyring_file = keyring;
	cr_assert_eq(source_git_open(&s, &o, &e), 0);

	write_file(srv, "app/g.yaml", "good\n");
	GIT("add", "-A");
	GIT("-c", "user.signingkey=good@example.com", "commit", "-q", "-S",
	    "-m", "good");
	c = GITOUT("rev-parse", "HEAD");
	poll_ok(s, &r);
	cr_assert_str_eq(r.revision, c);
	free(c);

	write_file(srv, "app/g.yaml", "unsigned\n");
	GIT("add", "-A");
	GIT("commit", "-q", "-m", "unsigned");
	c = GITOUT("rev-parse", "HEAD");
	cr_assert_eq(source_git_poll(s, &r, &e), ERR_INVALID);
	cr_assert(strstr(err_msg(&e), c), "%s", err_msg(&e));
	cr_assert(strstr(err_msg(&e), "not signed"), "%s", err_msg(&e));
	err_reset(&e);
	free(c);

	write_file(srv, "app/g.yaml", "evil\n");
	GIT("add", "-A");
	GIT("-c", "user.signingkey=evil@example.com", "commit", "-q", "-S",
	    "-m", "evil");
	c = GITOUT("rev-parse", "HEAD");
	cr_assert_eq(source_git_poll(s, &r, &e), ERR_INVALID);
	cr_assert(strstr(err_msg(&e), c), "%s", err_msg(&e));
	cr_assert(strstr(err_msg(&e), "does not verify"), "%s", err_msg(&e));
	free(c);
	err_release(&e);
	source_git_free(s);
}

/*
 * A server that accepts connections (the kernel does, through the listen
 * backlog) and never answers: the poll ends at the fetch timeout.
 */
Test(git, silent_server_times_out)
{
	struct source_options o = SOURCE_OPTIONS_INIT;
	struct source_poll_result r;
	struct source_git *s = NULL;
	struct err e = ERR_INIT;
	struct sockaddr_in sa = {0};
	socklen_t len = sizeof(sa);
	char url[100];
	int fd;

	cr_assert_geq(fd = socket(AF_INET, SOCK_STREAM, 0), 0);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 8), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/r.git",
		 ntohs(sa.sin_port));
	o.url = url;
	o.cache_dir = cache;
	o.fetch_timeout_ms = 300;
	cr_assert_eq(source_git_open(&s, &o, &e), 0);
	cr_assert_eq(source_git_poll(s, &r, &e), ERR_TIMEOUT, "%s",
		     err_msg(&e));
	cr_assert(strstr(err_msg(&e), "timed out"), "%s", err_msg(&e));
	cr_assert_eq(r.requests, 1);
	close(fd);
	err_release(&e);
	source_git_free(s);
}

/* Each link looks inside on its own; together they climb out. */
Test(git, chained_links_cannot_escape)
{
	struct source_poll_result r;
	struct source_git *s = open_src(srv, "HEAD", NULL);
	struct err e = ERR_INIT;
	char *dir = NULL;

	free(run_in(srv, (const char *const[]){"ln", "-s", ".", "r", NULL}));
	free(run_in(srv, (const char *const[]){"ln", "-s", "r/..", "x",
					      NULL}));
	GIT("add", "r", "x");
	GIT("commit", "-q", "-m", "links");
	poll_ok(s, &r);
	cr_assert_eq(source_git_checkout(s, &dir, &e), ERR_INVALID, "%s",
		     err_msg(&e));
	cr_assert_null(dir);
	cr_assert(strstr(err_msg(&e), "x: symbolic link points outside"),
		  "%s", err_msg(&e));
	err_release(&e);
	source_git_free(s);
}
