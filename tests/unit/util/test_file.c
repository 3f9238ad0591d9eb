/*
 * Whole-file reads with a cap, and secret files.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/file.h"

static char dir[] = "/tmp/syncd-test-file.XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

static const char *write_file(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

TestSuite(file, .init = setup, .fini = teardown);

Test(file, reads_whole_files_up_to_the_cap)
{
	struct buf b = BUF_INIT;
	struct err err = ERR_INIT;
	const char *p = write_file("a", "hello\n");

	cr_assert_eq(file_read(&b, p, "a", 6, &err), 0);
	cr_assert_eq(b.len, 6);
	cr_assert_str_eq(buf_cstr(&b), "hello\n");
	buf_release(&b);

	cr_assert_eq(file_read(&b, p, "a", 5, &err), ERR_LIMIT);
	cr_assert_str_eq(err_first(&err),
			 "a: file is 6 bytes, over the 5-byte limit");
	cr_assert_null(b.ptr, "a failed read leaves nothing");
	err_release(&err);
}

Test(file, a_missing_file_is_named)
{
	struct buf b = BUF_INIT;
	struct err err = ERR_INIT;
	char path[300];

	snprintf(path, sizeof(path), "%s/none", dir);
	cr_assert_eq(file_read(&b, path, "none", 100, &err), ERR_IO);
	cr_assert_str_eq(err_first(&err),
			 "none: cannot open: No such file or directory");
	err_release(&err);
}

Test(file, secrets_lose_their_trailing_newlines)
{
	struct buf b = BUF_INIT;
	struct err err = ERR_INIT;

	cr_assert_eq(file_read_secret(&b, write_file("t", "s3cr3t\r\n\n"),
				      100, &err),
		     0);
	cr_assert_str_eq(buf_cstr(&b), "s3cr3t");
	cr_assert_eq(b.len, 6);
	file_secret_release(&b);
	cr_assert_null(b.ptr);

	/* an empty file is an empty secret, not a missing one */
	cr_assert_eq(file_read_secret(&b, write_file("e", ""), 100, &err), 0);
	cr_assert_not_null(b.ptr);
	cr_assert_eq(b.len, 0);
	file_secret_release(&b);

	/* the cap counts the newline */
	cr_assert_eq(file_read_secret(&b, write_file("c", "abcd\n"), 4, &err),
		     ERR_LIMIT);
	cr_assert(strstr(err_first(&err), "/c: file is 5 bytes"), "%s",
		  err_first(&err));
	cr_assert_null(strstr(err_first(&err), "abcd"),
		       "the message never holds the secret");
	err_release(&err);
}

Test(file, secret_strings_are_freed_and_null_is_nothing)
{
	char *s = strdup("token-value");

	cr_assert_not_null(s);
	file_secret_free(s); /* wiped, then freed: make valgrind sees no leak */
	file_secret_free(NULL);
}

static int fill_hello(int fd, void *ctx)
{
	return file_write_all(fd, ctx, strlen(ctx));
}

static int fill_fails(int fd, void *ctx)
{
	(void)ctx;
	if (file_write_all(fd, "half", 4) < 0)
		return -1;
	errno = ENOSPC;
	return -1;
}

/* Names in the test folder, the temporary files file_replace() leaves. */
static size_t entries(void)
{
	char cmd[128];
	FILE *p;
	size_t n = 0;
	int c;

	snprintf(cmd, sizeof(cmd), "ls -A %s", dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while ((c = fgetc(p)) != EOF)
		n += c == '\n';
	pclose(p);
	return n;
}

Test(file, replace_writes_the_whole_file_or_leaves_the_old_one)
{
	const char *path = write_file("state", "old\n");
	char copy[256];
	struct buf b = BUF_INIT;
	struct err err = ERR_INIT;

	snprintf(copy, sizeof(copy), "%s", path);
	cr_assert_eq(file_replace(copy, fill_hello, (char *)"new contents\n", &err), 0);
	cr_assert_eq(file_read(&b, copy, "state", 1024, &err), 0);
	cr_assert_str_eq(buf_cstr(&b), "new contents\n");
	buf_release(&b);

	/* A failed fill: the old file stays, no temporary file is left. */
	cr_assert_eq(file_replace(copy, fill_fails, NULL, &err), ERR_IO);
	cr_assert(strstr(err_first(&err), copy));
	cr_assert(strstr(err_first(&err), "No space left"));
	cr_assert_eq(file_read(&b, copy, "state", 1024, NULL), 0);
	cr_assert_str_eq(buf_cstr(&b), "new contents\n");
	cr_assert_eq(entries(), 1);
	buf_release(&b);
	err_release(&err);
}

Test(file, replace_in_a_missing_folder_names_the_file)
{
	char path[256];
	struct err err = ERR_INIT;

	snprintf(path, sizeof(path), "%s/none/state", dir);
	cr_assert_eq(file_replace(path, fill_hello, (char *)"x", &err), ERR_IO);
	cr_assert(strstr(err_first(&err), path));
	err_release(&err);
}

/* The temporary a writer killed between its write and its rename left. */
Test(file, sweep_removes_only_temporaries_of_dead_writers)
{
	char name[128];
	pid_t dead = fork();

	cr_assert_neq(dead, -1);
	if (dead == 0)
		_exit(0);
	cr_assert_eq(waitpid(dead, NULL, 0), dead);

	write_file("state", "whole\n");
	snprintf(name, sizeof(name), "state.tmp.%ld.Ab12Cd", (long)dead);
	write_file(name, "half");
	snprintf(name, sizeof(name), "state.tmp.%ld.Ef34Gh", (long)getpid());
	write_file(name, "mine, being written");
	write_file("state.tmp.1.Ij56Kl", "pid 1 is running");
	write_file("other.tmp.x.Mn78Op", "not a temporary of file_replace");
	cr_assert_eq(entries(), 5);

	cr_assert_eq(file_sweep_temps(dir), 1);
	cr_assert_eq(entries(), 4);
	snprintf(name, sizeof(name), "%s/state.tmp.%ld.Ab12Cd", dir,
		 (long)dead);
	cr_assert_eq(access(name, F_OK), -1,
		     "the dead writer's temporary stays");
	cr_assert_eq(file_sweep_temps(dir), 0);
	cr_assert_eq(file_sweep_temps("/nonexistent/syncd"), 0);
}
