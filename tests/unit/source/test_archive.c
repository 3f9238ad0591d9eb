/*
 * Bounded .tar.gz extraction. The archives are written here, header by
 * header, so that each test holds exactly the entry it is about (and the
 * hostile ones no honest tar would write); a few come from the system's
 * tar to show that real writers are read.
 *
 * Every test has its own directory: ROOT/t.tgz is the archive, ROOT/out
 * the directory it is unpacked into. Whatever the archive says, ROOT
 * must hold nothing else afterwards.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "source/internal.h"

#define WHAT "chart t.tgz"

static char root[256];
static char out[300];
static char tgz[300];
static struct buf tar;

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(root, sizeof(root), "%s/syncd-archive-test-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	cr_assert_not_null(mkdtemp(root));
	snprintf(out, sizeof(out), "%s/out", root);
	snprintf(tgz, sizeof(tgz), "%s/t.tgz", root);
	cr_assert_eq(mkdir(out, 0755), 0);
	buf_init(&tar, 0);
}

static void teardown(void)
{
	char cmd[600];

	buf_release(&tar);
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s'; rm -rf '%s'", root,
		 root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(archive, .init = setup, .fini = teardown, .timeout = 60);

/* ---- writing archives --------------------------------------------- */

static void put_str(unsigned char *h, size_t off, size_t len, const char *s)
{
	memcpy(h + off, s, strnlen(s, len));
}

static void put_octal(unsigned char *h, size_t off, size_t len,
		      unsigned long long v)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "%0*llo", (int)(len - 1), v);
	memcpy(h + off, tmp, len - 1);
}

static void set_checksum(unsigned char *h)
{
	unsigned sum = 0;
	char tmp[16];

	memset(h + 148, ' ', 8);
	for (size_t i = 0; i < 512; i++)
		sum += h[i];
	snprintf(tmp, sizeof(tmp), "%06o", sum);
	memcpy(h + 148, tmp, 6);
	h[154] = '\0';
}

static void header(unsigned char h[512], const char *name, char type,
		   unsigned mode, unsigned long long size, const char *link)
{
	memset(h, 0, 512);
	put_str(h, 0, 100, name);
	put_octal(h, 100, 8, mode);
	put_octal(h, 108, 8, 1000);
	put_octal(h, 116, 8, 1000);
	put_octal(h, 124, 12, size);
	put_octal(h, 136, 12, 1700000000);
	h[156] = (unsigned char)type;
	if (link)
		put_str(h, 157, 100, link);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	put_str(h, 265, 32, "u");
	put_str(h, 297, 32, "g");
	set_checksum(h);
}

static void add_data(const void *data, size_t len)
{
	static const char zeros[512];

	cr_assert_eq(buf_add(&tar, data, len), 0);
	if (len % 512)
		cr_assert_eq(buf_add(&tar, zeros, 512 - len % 512), 0);
}

static void add_entry(const char *name, char type, unsigned mode,
		      const void *data, size_t len, const char *link)
{
	unsigned char h[512];

	header(h, name, type, mode, len, link);
	cr_assert_eq(buf_add(&tar, h, 512), 0);
	add_data(data, len);
}

static void add_file(const char *name, const char *text)
{
	add_entry(name, '0', 0644, text, strlen(text), NULL);
}

static void add_dir(const char *name)
{
	add_entry(name, '5', 0755, NULL, 0, NULL);
}

/* A pax extended header ('x', or 'g' for global) of one record. */
static void add_pax(char type, const char *key, const char *value)
{
	char rec[8192];
	size_t body = strlen(key) + strlen(value) + 3, len = body + 1;

	/* The length counts its own digits. */
	while (len != body + (size_t)snprintf(NULL, 0, "%zu", len))
		len = body + (size_t)snprintf(NULL, 0, "%zu", len);
	snprintf(rec, sizeof(rec), "%zu %s=%s\n", len, key, value);
	cr_assert_eq(strlen(rec), len);
	add_entry("PaxHeaders/entry", type, 0644, rec, len, NULL);
}

/* A GNU long name ('L') for the entry that follows. */
static void add_long_name(const char *name)
{
	add_entry("././@LongLink", 'L', 0644, name, strlen(name) + 1, NULL);
}

static void end_archive(void)
{
	static const char zeros[1024];

	cr_assert_eq(buf_add(&tar, zeros, sizeof(zeros)), 0);
}

static void write_gz(const char *path, const void *data, size_t len)
{
	gzFile f = gzopen(path, "wb");

	cr_assert_not_null(f);
	cr_assert_eq(gzwrite(f, data, (unsigned)len), (int)len);
	cr_assert_eq(gzclose(f), Z_OK);
}

/* The archive built so far, ended and compressed into ROOT/t.tgz. */
static void write_tgz(void)
{
	end_archive();
	write_gz(tgz, tar.ptr, tar.len);
}

static int untar(const struct src_archive_limits *lim, struct err *e)
{
	return src_untar_gz(tgz, out, WHAT, lim, e);
}

/* ---- reading results ---------------------------------------------- */

static char *read_text(const char *rel)
{
	static char text[4096];
	char path[600];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", out, rel);
	cr_assert_not_null(f = fopen(path, "r"), "%s: %s", rel,
			   strerror(errno));
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

static mode_t mode_of(const char *rel)
{
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", out, rel);
	cr_assert_eq(lstat(path, &st), 0, "%s: %s", rel, strerror(errno));
	return st.st_mode;
}

static bool exists_in(const char *dir, const char *rel)
{
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return lstat(path, &st) == 0;
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	cr_assert_not_null(d, "%s", dir);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Nothing was written next to the archive and the output directory. */
static void assert_nothing_outside(void)
{
	DIR *d = opendir(root);
	struct dirent *de;

	cr_assert_not_null(d);
	while ((de = readdir(d)))
		cr_assert(!strcmp(de->d_name, ".") ||
				  !strcmp(de->d_name, "..") ||
				  !strcmp(de->d_name, "t.tgz") ||
				  !strcmp(de->d_name, "out"),
			  "%s/%s was written outside the output directory",
			  root, de->d_name);
	closedir(d);
}

static void expect_error(const struct src_archive_limits *lim, int code,
			 const char *msg)
{
	struct err e = ERR_INIT;

	cr_assert_eq(untar(lim, &e), code, "got: %s", err_msg(&e));
	cr_assert_eq(e.code, code);
	cr_assert_str_eq(err_first(&e), msg);
	cr_assert_eq(err_count(&e), 1, "%s", err_msg(&e));
	err_release(&e);
	assert_nothing_outside();
}

/* ---- what is read ------------------------------------------------- */

Test(archive, unpacks_a_chart_like_tree_with_contents_and_modes)
{
	char big[1500];
	struct err e = ERR_INIT;

	/* Exact modes whatever the umask. */
	umask(077);
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	add_dir("podinfo/");
	add_file("podinfo/Chart.yaml", "apiVersion: v2\nname: podinfo\n");
	add_file("./podinfo/values.yaml", "replicaCount: 1\n");
	add_dir("podinfo/templates/");
	add_file("podinfo/templates/deployment.yaml", big);
	add_file("podinfo/templates/service.yaml", "kind: Service\n");
	add_file("podinfo/.helmignore", "");
	/* No directory entry for scripts/: it is made on the way. */
	add_entry("podinfo/scripts/run.sh", '0', 0775, "#!/bin/sh\n", 10, NULL);
	add_entry("podinfo/private", '0', 0600, "p", 1, NULL);
	add_dir("./");
	write_tgz();

	cr_assert_eq(untar(NULL, &e), 0, "%s", err_msg(&e));
	cr_assert_str_eq(read_text("podinfo/Chart.yaml"),
			 "apiVersion: v2\nname: podinfo\n");
	cr_assert_str_eq(read_text("podinfo/values.yaml"), "replicaCount: 1\n");
	cr_assert_str_eq(read_text("podinfo/templates/deployment.yaml"), big);
	cr_assert_str_eq(read_text("podinfo/templates/service.yaml"),
			 "kind: Service\n");
	cr_assert_str_eq(read_text("podinfo/.helmignore"), "");
	cr_assert_str_eq(read_text("podinfo/scripts/run.sh"), "#!/bin/sh\n");
	cr_assert_eq(mode_of("podinfo/Chart.yaml"), S_IFREG | 0644);
	cr_assert_eq(mode_of("podinfo/private"), S_IFREG | 0644);
	cr_assert_eq(mode_of("podinfo/scripts/run.sh"), S_IFREG | 0755);
	cr_assert_eq(mode_of("podinfo"), S_IFDIR | 0755);
	cr_assert_eq(mode_of("podinfo/scripts"), S_IFDIR | 0755);
	cr_assert_eq(mode_of("podinfo/templates"), S_IFDIR | 0755);
	cr_assert_eq(count_entries(out), 1);
	assert_nothing_outside();
	err_release(&e);
}

Test(archive, reads_pax_path_records_and_ignores_global_headers)
{
	char name[300];
	struct err e = ERR_INIT;

	/* 250 bytes: beyond ustar's 100-byte name and 155-byte prefix. */
	snprintf(name, sizeof(name), "chart/templates/%s/%s.yaml",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
		 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
	cr_assert_gt(strlen(name), 250);
	add_pax('g', "comment", "made by a test");
	add_pax('x', "path", name);
	add_file("chart/templates/truncated-name.yaml", "long: pax\n");
	add_file("chart/short.yaml", "short: 1\n");
	write_tgz();

	cr_assert_eq(untar(NULL, &e), 0, "%s", err_msg(&e));
	cr_assert_str_eq(read_text(name), "long: pax\n");
	cr_assert_str_eq(read_text("chart/short.yaml"), "short: 1\n");
	cr_assert(!exists_in(out, "chart/templates/truncated-name.yaml"));
	/* The pax headers themselves are not files. */
	cr_assert(!exists_in(out, "PaxHeaders"));
	cr_assert_eq(count_entries(out), 1);
	err_release(&e);
}

Test(archive, reads_gnu_long_names_and_ustar_prefixes)
{
	char name[300];
	unsigned char h[512];
	struct err e = ERR_INIT;

	snprintf(name, sizeof(name), "chart/%0200d.yaml", 7);
	add_long_name(name);
	add_file("chart/ignored-short-form", "gnu: long\n");
	/* ustar: prefix "chart/deep/er" + "/" + name "file.yaml". */
	header(h, "file.yaml", '0', 0644, 3, NULL);
	put_str(h, 345, 155, "chart/deep/er");
	set_checksum(h);
	cr_assert_eq(buf_add(&tar, h, 512), 0);
	add_data("pre", 3);
	write_tgz();

	cr_assert_eq(untar(NULL, &e), 0, "%s", err_msg(&e));
	cr_assert_str_eq(read_text(name), "gnu: long\n");
	cr_assert_str_eq(read_text("chart/deep/er/file.yaml"), "pre");
	cr_assert(!exists_in(out, "chart/ignored-short-form"));
	cr_assert(!exists_in(out, "././@LongLink"));
	err_release(&e);
}

Test(archive, reads_an_archive_of_two_gzip_members)
{
	struct err e = ERR_INIT;
	char part[600];
	size_t half;
	FILE *f, *p;
	char c;

	add_file("a.txt", "first member\n");
	half = tar.len;
	add_file("b.txt", "second member\n");
	end_archive();
	snprintf(part, sizeof(part), "%s/part.gz", root);
	write_gz(tgz, tar.ptr, half);
	write_gz(part, tar.ptr + half, tar.len - half);
	cr_assert_not_null(f = fopen(tgz, "ab"));
	cr_assert_not_null(p = fopen(part, "rb"));
	while (fread(&c, 1, 1, p) == 1)
		fputc(c, f);
	fclose(p);
	fclose(f);
	unlink(part);

	cr_assert_eq(untar(NULL, &e), 0, "%s", err_msg(&e));
	cr_assert_str_eq(read_text("a.txt"), "first member\n");
	cr_assert_str_eq(read_text("b.txt"), "second member\n");
	err_release(&e);
}

Test(archive, reads_what_the_system_tar_writes)
{
	char src[300], cmd[4096], name[300];
	const char *formats[] = {"gnu", "posix", "ustar"};
	struct err e = ERR_INIT;

	if (system("tar --version >/dev/null 2>&1") != 0)
		cr_skip_test("no tar on this machine");
	snprintf(src, sizeof(src), "%s/src", root);
	snprintf(name, sizeof(name), "%0120d", 3);
	for (size_t i = 0; i < 3; i++) {
		bool ustar = !strcmp(formats[i], "ustar");

		/* ustar cannot hold a 120-byte component. */
		snprintf(cmd, sizeof(cmd),
			 "set -e; rm -rf '%s' '%s'; mkdir -p '%s/c/templates' "
			 "'%s'; cd '%s'; printf 'name: c\\n' >c/Chart.yaml; "
			 "printf x >c/templates/%s.yaml; printf '#!/bin/sh\\n' "
			 ">c/run.sh; chmod 755 c/run.sh; tar --format=%s -czf "
			 "'%s' .",
			 src, out, src, out, src, ustar ? "short" : name,
			 formats[i], tgz);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
		cr_assert_eq(untar(NULL, &e), 0, "%s: %s", formats[i],
			     err_msg(&e));
		cr_assert_str_eq(read_text("c/Chart.yaml"), "name: c\n");
		if (!ustar) {
			char rel[400];

			snprintf(rel, sizeof(rel), "c/templates/%s.yaml", name);
			cr_assert_str_eq(read_text(rel), "x");
		}
		cr_assert_eq(mode_of("c/run.sh"), S_IFREG | 0755);
		cr_assert_eq(mode_of("c/Chart.yaml") & 0777, 0644);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", src);
	cr_assert_eq(system(cmd), 0);
	err_release(&e);
}

Test(archive, a_directory_may_come_twice_and_after_its_files)
{
	struct err e = ERR_INIT;

	add_file("d/a", "a");
	add_dir("d");
	add_dir("d/");
	write_tgz();
	cr_assert_eq(untar(NULL, &e), 0, "%s", err_msg(&e));
	cr_assert_str_eq(read_text("d/a"), "a");
	err_release(&e);
}

/* ---- names that escape, and other bad names ----------------------- */

Test(archive, refuses_names_that_escape_the_root)
{
	static const char *const names[] = {
		"../evil",	  "a/../../x", "./../evil", "..",
		"a/b/../../../x", "a/..",      "x/../evil",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char msg[300];

		cr_assert_eq(src_remove_tree(out, NULL), 0);
		cr_assert_eq(mkdir(out, 0755), 0);
		buf_reset(&tar);
		add_file("ok.txt", "fine\n");
		add_file(names[i], "escaped\n");
		write_tgz();
		snprintf(msg, sizeof(msg),
			 WHAT ": entry \"%s\": escapes the archive's root",
			 names[i]);
		expect_error(NULL, ERR_INVALID, msg);
		cr_assert(!exists_in(root, "evil") && !exists_in(root, "x"));
	}
}

Test(archive, refuses_absolute_names)
{
	char name[400], msg[600];

	snprintf(name, sizeof(name), "%s/abs", root);
	add_file(name, "absolute\n");
	write_tgz();
	snprintf(msg, sizeof(msg),
		 WHAT ": entry \"%s\": escapes the archive's root", name);
	expect_error(NULL, ERR_INVALID, msg);
	cr_assert(!exists_in(root, "abs"));
	cr_assert_eq(count_entries(out), 0);
}

Test(archive, refuses_escaping_names_from_pax_and_gnu_headers)
{
	add_pax('x', "path", "../pax-evil");
	add_file("harmless", "x");
	write_tgz();
	expect_error(NULL, ERR_INVALID,
		     WHAT ": entry \"../pax-evil\": escapes the archive's "
			  "root");

	buf_reset(&tar);
	add_long_name("ok/../../gnu-evil");
	add_file("harmless", "x");
	write_tgz();
	expect_error(NULL, ERR_INVALID,
		     WHAT ": entry \"ok/../../gnu-evil\": escapes the "
			  "archive's root");
	cr_assert_eq(count_entries(out), 0);
}

Test(archive, refuses_empty_names)
{
	add_file("", "nameless");
	write_tgz();
	expect_error(NULL, ERR_INVALID, WHAT ": entry \"\": empty name");

	buf_reset(&tar);
	add_file("./", "the root as a file");
	write_tgz();
	expect_error(NULL, ERR_INVALID,
		     WHAT ": entry \"./\": a file cannot be the archive's "
			  "root");
}

Test(archive, refuses_the_same_file_twice)
{
	add_file("a.yaml", "first\n");
	add_file("./a.yaml", "second\n");
	write_tgz();
	expect_error(NULL, ERR_INVALID,
		     WHAT ": entry \"./a.yaml\": appears twice");
	cr_assert_str_eq(read_text("a.yaml"), "first\n");

	cr_assert_eq(src_remove_tree(out, NULL), 0);
	cr_assert_eq(mkdir(out, 0755), 0);
	buf_reset(&tar);
	add_file("d", "a file\n");
	add_dir("d/");
	write_tgz();
	expect_error(NULL, ERR_INVALID, WHAT ": entry \"d/\": appears twice");

	cr_assert_eq(src_remove_tree(out, NULL), 0);
	cr_assert_eq(mkdir(out, 0755), 0);
	buf_reset(&tar);
	add_dir("d/");
	add_file("d", "a file\n");
	write_tgz();
	expect_error(NULL, ERR_INVALID, WHAT ": entry \"d\": appears twice");
}

Test(archive, refuses_a_file_under_a_file)
{
	add_file("a", "a file\n");
	add_file("a/b", "under it\n");
	write_tgz();
	expect_error(NULL, ERR_INVALID,
		     WHAT ": entry \"a/b\": a parent is not a directory");
}

Test(archive, never_follows_a_symlink_found_in_the_directory)
{
	char link[400];

	/* Not an archive's doing (it cannot make links), but the tree may
	 * be shared: a link to outside is not followed. */
	snprintf(link, sizeof(link), "%s/lnk", out);
	cr_assert_eq(symlink(root, link), 0);
	add_file("lnk/evil", "through a link\n");
	write_tgz();
	expect_error(NULL, ERR_INVALID,
		     WHAT ": entry \"lnk/evil\": a parent is not a directory");
	cr_assert(!exists_in(root, "evil"));

	buf_reset(&tar);
	add_file("lnk", "over a link\n");
	write_tgz();
	expect_error(NULL, ERR_INVALID, WHAT ": entry \"lnk\": appears twice");
}

/* ---- entries that are not files or directories -------------------- */

Test(archive, refuses_links_devices_and_fifos)
{
	static const struct {
		char type;
		const char *link;
		const char *msg;
	} cases[] = {
		{'2', "/etc/passwd",
		 WHAT ": entry \"node\": links are not allowed"},
		{'2', "../../outside",
		 WHAT ": entry \"node\": links are not allowed"},
		{'1', "chart/values.yaml",
		 WHAT ": entry \"node\": links are not allowed"},
		{'3', NULL, WHAT ": entry \"node\": devices are not allowed"},
		{'4', NULL, WHAT ": entry \"node\": devices are not allowed"},
		{'6', NULL, WHAT ": entry \"node\": FIFOs are not allowed"},
		{'S', NULL,
		 WHAT ": entry \"node\": entries of type 'S' are not "
		      "supported"},
		{'7', NULL,
		 WHAT ": entry \"node\": entries of type '7' are not "
		      "supported"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf_reset(&tar);
		add_file("chart/values.yaml", "v: 1\n");
		add_entry("node", cases[i].type, 0644, NULL, 0, cases[i].link);
		write_tgz();
		expect_error(NULL, ERR_INVALID, cases[i].msg);
		cr_assert(!exists_in(out, "node"), "%c made a node",
			  cases[i].type);
		cr_assert_eq(src_remove_tree(out, NULL), 0);
		cr_assert_eq(mkdir(out, 0755), 0);
	}
}

Test(archive, refuses_a_gnu_long_link_and_sparse_files)
{
	add_entry("././@LongLink", 'K', 0644, "/etc/shadow", 12, NULL);
	add_entry("node", '2', 0777, NULL, 0, "x");
	write_tgz();
	expect_error(NULL, ERR_INVALID,
		     WHAT ": entry \"././@LongLink\": links are not allowed");

	buf_reset(&tar);
	add_pax('x', "GNU.sparse.major", "1");
	add_file("sparse", "x");
	write_tgz();
	expect_error(NULL, ERR_INVALID,
		     WHAT ": entry \"sparse\": sparse files are not supported");
}

/* ---- limits ------------------------------------------------------- */

Test(archive, refuses_a_file_over_the_file_limit_before_writing_it)
{
	struct src_archive_limits lim = {.max_file_bytes = 1000};
	char data[2001];

	memset(data, 'x', 2000);
	data[2000] = '\0';
	add_file("small", "fits\n");
	add_file("big", data);
	write_tgz();
	expect_error(&lim, ERR_LIMIT,
		     WHAT ": entry \"big\": 2000 bytes, over the 1000-byte "
			  "limit for one file");
	cr_assert(!exists_in(out, "big"));
	cr_assert_str_eq(read_text("small"), "fits\n");
}

Test(archive, a_header_declaring_a_huge_file_is_refused_without_reading_it)
{
	unsigned char h[512];

	/* 8 GiB declared (in GNU base-256: octal has 11 digits), nothing
	 * behind it. */
	header(h, "huge", '0', 0644, 0, NULL);
	memset(h + 124, 0, 12);
	h[124] = 0x80;
	h[131] = 0x02;
	set_checksum(h);
	cr_assert_eq(buf_add(&tar, h, 512), 0);
	write_tgz();
	expect_error(NULL, ERR_LIMIT,
		     WHAT ": entry \"huge\": 8589934592 bytes, over the "
			  "16777216-byte limit for one file");
}

Test(archive, refuses_an_archive_over_the_total_limit)
{
	struct src_archive_limits lim = {.max_bytes = 1000};
	char data[401];

	memset(data, 'x', 400);
	data[400] = '\0';
	add_file("a", data);
	add_file("b", data);
	add_file("c", data);
	write_tgz();
	expect_error(&lim, ERR_LIMIT,
		     WHAT ": entry \"c\": the archive unpacks to more than "
			  "1000 bytes");
	cr_assert(!exists_in(out, "c"));
}

Test(archive, refuses_too_many_entries)
{
	struct src_archive_limits lim = {.max_entries = 3};

	add_dir("d/");
	add_file("d/1", "1");
	add_file("d/2", "2");
	write_tgz();
	cr_assert_eq(untar(&lim, NULL), 0);

	cr_assert_eq(src_remove_tree(out, NULL), 0);
	cr_assert_eq(mkdir(out, 0755), 0);
	buf_reset(&tar);
	add_dir("d/");
	add_file("d/1", "1");
	add_file("d/2", "2");
	add_file("d/3", "3");
	write_tgz();
	expect_error(&lim, ERR_LIMIT, WHAT ": more than 3 entries");
	cr_assert(!exists_in(out, "d/3"));
}

Test(archive, refuses_paths_too_deep)
{
	struct src_archive_limits lim = {.max_depth = 3};

	add_file("a/b/c", "three\n");
	add_file("./a//b/./c2", "three too\n");
	write_tgz();
	cr_assert_eq(untar(&lim, NULL), 0);
	cr_assert_str_eq(read_text("a/b/c2"), "three too\n");

	cr_assert_eq(src_remove_tree(out, NULL), 0);
	cr_assert_eq(mkdir(out, 0755), 0);
	buf_reset(&tar);
	add_file("a/b/c/d", "four\n");
	write_tgz();
	expect_error(&lim, ERR_LIMIT,
		     WHAT ": entry \"a/b/c/d\": more than 3 path components");
	cr_assert_eq(count_entries(out), 0);
}

/*
 * 200 MB of zeros after one small file, as a gzip stream without its
 * end: inflated to its end it would read as truncated (ERR_PARSE), so
 * ERR_LIMIT shows that reading stopped at the bound.
 */
Test(archive, a_gzip_bomb_is_stopped_at_the_bound_not_inflated_to_its_end)
{
	struct src_archive_limits lim = {.max_bytes = 16u << 20,
					 .max_entries = 100};
	size_t mib = 1u << 20, zlen = 4u << 20;
	unsigned char *zeros = calloc(1, mib), *z1 = malloc(zlen),
		      *z2 = malloc(zlen);
	size_t n1, n2;
	z_stream z;
	struct err e = ERR_INIT;
	FILE *f;

	cr_assert(zeros && z1 && z2);
	add_file("a", "before the bomb\n");
	memset(&z, 0, sizeof(z));
	cr_assert_eq(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8,
				  Z_DEFAULT_STRATEGY),
		     Z_OK);
	/* The file, then 1 MiB of zeros, flushed so that what follows
	 * does not depend on it... */
	z.next_in = (unsigned char *)tar.ptr;
	z.avail_in = (uInt)tar.len;
	z.next_out = z1;
	z.avail_out = (uInt)zlen;
	cr_assert_eq(deflate(&z, Z_NO_FLUSH), Z_OK);
	z.next_in = zeros;
	z.avail_in = (uInt)mib;
	cr_assert_eq(deflate(&z, Z_FULL_FLUSH), Z_OK);
	cr_assert_eq(z.avail_in, 0);
	n1 = zlen - z.avail_out;
	/* ...and one more MiB of zeros, whose compressed form is then
	 * repeated: each copy inflates to 1 MiB more. */
	z.next_in = zeros;
	z.avail_in = (uInt)mib;
	z.next_out = z2;
	z.avail_out = (uInt)zlen;
	cr_assert_eq(deflate(&z, Z_FULL_FLUSH), Z_OK);
	n2 = zlen - z.avail_out;
	deflateEnd(&z);

	cr_assert_not_null(f = fopen(tgz, "wb"));
	cr_assert_eq(fwrite(z1, 1, n1, f), n1);
	for (int i = 0; i < 199; i++)
		cr_assert_eq(fwrite(z2, 1, n2, f), n2);
	cr_assert_eq(fclose(f), 0);

	cr_assert_eq(untar(&lim, &e), ERR_LIMIT, "%s", err_msg(&e));
	cr_assert(!strncmp(err_first(&e), WHAT ": decompresses to more than ",
			   strlen(WHAT ": decompresses to more than ")),
		  "%s", err_first(&e));
	cr_assert_str_eq(read_text("a"), "before the bomb\n");
	assert_nothing_outside();
	free(zeros);
	free(z1);
	free(z2);
	err_release(&e);
}

/* ---- corrupt and truncated archives ------------------------------- */

Test(archive, refuses_a_truncated_gzip_stream)
{
	char data[4000];
	struct stat st;

	for (size_t i = 0; i < sizeof(data) - 1; i++)
		data[i] = (char)('a' + (i * 7919) % 26);
	data[sizeof(data) - 1] = '\0';
	add_file("chart/values.yaml", data);
	write_tgz();
	cr_assert_eq(stat(tgz, &st), 0);
	cr_assert_eq(truncate(tgz, st.st_size / 2), 0);
	expect_error(NULL, ERR_PARSE,
		     WHAT ": truncated (the gzip stream ends early)");

	/* Only the 8-byte trailer missing (CRC and length). */
	buf_reset(&tar);
	add_file("chart/values.yaml", "v: 1\n");
	write_tgz();
	cr_assert_eq(stat(tgz, &st), 0);
	cr_assert_eq(truncate(tgz, st.st_size - 8), 0);
	cr_assert_eq(src_remove_tree(out, NULL), 0);
	cr_assert_eq(mkdir(out, 0755), 0);
	expect_error(NULL, ERR_PARSE,
		     WHAT ": truncated (the gzip stream ends early)");
}

Test(archive, refuses_a_tar_stream_cut_inside_an_entry)
{
	unsigned char h[512];

	header(h, "cut", '0', 0644, 5000, NULL);
	cr_assert_eq(buf_add(&tar, h, 512), 0);
	cr_assert_eq(buf_add(&tar, "only a little", 13), 0);
	write_gz(tgz, tar.ptr, tar.len);
	expect_error(NULL, ERR_PARSE, WHAT ": entry \"cut\": truncated");

	/* An extended header with no entry after it. */
	buf_reset(&tar);
	add_pax('x', "path", "somewhere");
	write_gz(tgz, tar.ptr, tar.len);
	expect_error(NULL, ERR_PARSE, WHAT ": truncated");

	/* Half a header. */
	buf_reset(&tar);
	add_file("ok", "ok");
	cr_assert_eq(buf_add(&tar, h, 200), 0);
	write_gz(tgz, tar.ptr, tar.len);
	cr_assert_eq(src_remove_tree(out, NULL), 0);
	cr_assert_eq(mkdir(out, 0755), 0);
	expect_error(NULL, ERR_PARSE, WHAT ": truncated");
}

Test(archive, refuses_a_header_with_a_bad_checksum)
{
	unsigned char h[512];

	add_file("good", "g");
	header(h, "bad", '0', 0644, 1, NULL);
	h[0] = 'B'; /* after the checksum was made */
	cr_assert_eq(buf_add(&tar, h, 512), 0);
	add_data("b", 1);
	write_tgz();
	expect_error(NULL, ERR_PARSE,
		     WHAT ": corrupt tar header at byte 1024 (checksum "
			  "mismatch)");
	cr_assert(!exists_in(out, "bad") && !exists_in(out, "Bad"));
}

Test(archive, refuses_data_that_is_not_gzip_or_is_corrupt)
{
	struct err e = ERR_INIT;
	unsigned char buf[4096];
	char data[3001];
	size_t n;
	FILE *f;

	cr_assert_not_null(f = fopen(tgz, "wb"));
	fputs("this is not a gzip file at all\n", f);
	fclose(f);
	cr_assert_eq(untar(NULL, &e), ERR_PARSE);
	cr_assert_str_eq(err_first(&e),
			 WHAT ": corrupt gzip stream: incorrect header check");
	err_release(&e);
	assert_nothing_outside();

	/* A flipped bit in the compressed data: the CRC catches it if
	 * the inflater does not. */
	for (size_t i = 0; i < 3000; i++)
		data[i] = (char)('a' + (i * 31) % 26);
	data[3000] = '\0';
	add_file("f", data);
	write_tgz();
	cr_assert_not_null(f = fopen(tgz, "r+b"));
	n = fread(buf, 1, sizeof(buf), f);
	cr_assert_gt(n, 100);
	buf[n / 2] ^= 0x10;
	rewind(f);
	cr_assert_eq(fwrite(buf, 1, n, f), n);
	fclose(f);
	cr_assert_eq(untar(NULL, &e), ERR_PARSE);
	cr_assert(strstr(err_first(&e), WHAT ": ") == err_first(&e), "%s",
		  err_first(&e));
	err_release(&e);
	assert_nothing_outside();
}

Test(archive, names_the_archive_file_when_it_cannot_be_opened)
{
	struct err e = ERR_INIT;
	char msg[600];

	cr_assert_eq(untar(NULL, &e), ERR_IO);
	snprintf(msg, sizeof(msg),
		 WHAT ": cannot open %s: No such file or directory", tgz);
	cr_assert_str_eq(err_first(&e), msg);
	err_release(&e);
}

/* ---- src_remove_tree ---------------------------------------------- */

Test(archive, remove_tree_removes_everything_but_follows_no_link)
{
	char keep[400], path[600];
	FILE *f;

	snprintf(keep, sizeof(keep), "%s/keep", root);
	cr_assert_eq(mkdir(keep, 0755), 0);
	snprintf(path, sizeof(path), "%s/precious", keep);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("still here\n", f);
	fclose(f);

	add_file("a/b/c/file", "x");
	add_file("a/top", "y");
	write_tgz();
	cr_assert_eq(untar(NULL, NULL), 0);
	snprintf(path, sizeof(path), "%s/a/b/to-keep", out);
	cr_assert_eq(symlink(keep, path), 0);
	snprintf(path, sizeof(path), "%s/a/dangling", out);
	cr_assert_eq(symlink("/nonexistent/x", path), 0);
	/* A read-only directory is emptied too. */
	snprintf(path, sizeof(path), "%s/a/b", out);
	cr_assert_eq(chmod(path, 0555), 0);

	cr_assert_eq(src_remove_tree(out, NULL), 0);
	cr_assert(!exists_in(root, "out"));
	cr_assert(exists_in(keep, "precious"));

	/* Gone already: nothing to do. */
	cr_assert_eq(src_remove_tree(out, NULL), 0);

	/* A link in the tree's place: the link goes, not its target. */
	cr_assert_eq(symlink(keep, out), 0);
	cr_assert_eq(src_remove_tree(out, NULL), 0);
	cr_assert(!exists_in(root, "out"));
	cr_assert(exists_in(keep, "precious"));
	snprintf(path, sizeof(path), "rm -rf '%s'", keep);
	cr_assert_eq(system(path), 0);
	cr_assert_eq(mkdir(out, 0755), 0);
}
