/*
 * libFuzzer target for src_untar_gz() (source/archive.c): the bytes of a
 * chart archive or an OCI layer, unpacked with small limits. `make fuzz`
 * builds and runs it; its seeds are gzip'ed tar files, so the fuzzer
 * mostly mutates the compressed stream (and finds what a decompressed
 * tar makes of it).
 *
 * Besides the sanitizers, it checks: a refused archive leaves exactly one
 * problem; nothing is ever written beside the target directory (its
 * parent holds the target and the input only); nothing in the target is
 * a link or a special file.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char parent[64], input[96], target[96];

static int only_files_and_dirs(const char *path, const struct stat *st,
			       int type, struct FTW *f)
{
	(void)path;
	(void)f;
	if (type == FTW_SL || (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)))
		abort();
	return 0;
}

/* The folder of this process's runs goes when it exits. */
static void remove_parent(void)
{
	src_remove_tree(parent, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct src_archive_limits lim = {
		.max_bytes = 1 << 20,
		.max_file_bytes = 256 << 10,
		.max_entries = 256,
		.max_depth = 16,
	};
	struct err err = ERR_INIT;
	struct dirent *e;
	DIR *d;
	int fd, rc, n = 0;

	if (!parent[0]) {
		snprintf(parent, sizeof(parent), "/tmp/syncd-fuzz-tar.XXXXXX");
		if (!mkdtemp(parent))
			abort();
		snprintf(input, sizeof(input), "%s/in.tgz", parent);
		snprintf(target, sizeof(target), "%s/tree", parent);
		atexit(remove_parent);
	}
	fd = open(input, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
	if (mkdir(target, 0700) < 0)
		abort();
	rc = src_untar_gz(input, target, "fuzz.tgz", &lim, &err);
	if ((rc < 0) != (err_count(&err) == 1))
		abort();
	err_release(&err);
	if (nftw(target, only_files_and_dirs, 16, FTW_PHYS) < 0)
		abort();
	if (!(d = opendir(parent)))
		abort();
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	if (n != 2) /* in.tgz and tree */
		abort();
	if (src_remove_tree(target, NULL) < 0)
		abort();
	return 0;
}
