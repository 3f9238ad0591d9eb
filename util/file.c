#include "util/file.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/banned.h" /* last */

int file_read(struct buf *out, const char *path, const char *name,
	      size_t max, struct err *err)
{
	char chunk[65536];
	struct stat st;
	int fd, error = 0;

	buf_init(out, max);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0)
		return err_set(err, ERR_IO, "%s: cannot open: %s", name,
			       err_errno_str(errno));
	if (fstat(fd, &st) < 0) {
		error = err_set(err, ERR_IO, "%s: cannot stat: %s", name,
				err_errno_str(errno));
		goto out;
	}
	if ((size_t)st.st_size > max) {
		error = err_set(err, ERR_LIMIT,
				"%s: file is %lld bytes, over the %zu-byte limit",
				name, (long long)st.st_size, max);
		goto out;
	}
	if (buf_grow(out, (size_t)st.st_size) < 0) {
		error = err_set(err, ERR_NOMEM, "%s: out of memory", name);
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			error = err_set(err, ERR_IO, "%s: read failed: %s",
					name, err_errno_str(errno));
			goto out;
		}
		if (n == 0)
			break;
		/* The file may grow between fstat and read: the cap holds. */
		if (buf_add(out, chunk, (size_t)n) < 0) {
			error = err_set(err, ERR_LIMIT,
					"%s: file is over the %zu-byte limit",
					name, max);
			goto out;
		}
	}
out:
	/* what passed through the stack may be a secret */
	explicit_bzero(chunk, sizeof(chunk));
	close(fd);
	if (error)
		file_secret_release(out);
	return error;
}

int file_read_secret(struct buf *out, const char *path, size_t max,
		     struct err *err)
{
	int error = file_read(out, path, path, max, err);

	if (error)
		return error;
	while (out->len && (out->ptr[out->len - 1] == '\n' ||
			    out->ptr[out->len - 1] == '\r'))
		out->ptr[--out->len] = '\0';
	if (!out->ptr && (error = buf_adds(out, "")) < 0)
		return err_set(err, error, "%s: out of memory", path);
	return 0;
}

void file_secret_release(struct buf *b)
{
	if (b->ptr)
		explicit_bzero(b->ptr, b->alloc);
	buf_release(b);
}

void file_secret_free(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

int file_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int file_replace(const char *path, int (*fill)(int fd, void *ctx), void *ctx,
		 struct err *err)
{
	struct buf tmp = BUF_INIT, dir = BUF_INIT;
	const char *slash = strrchr(path, '/');
	int fd = -1, dfd, error = 0;

	if (buf_addf(&tmp, "%s.tmp.%ld.XXXXXX", path, (long)getpid()) < 0 ||
	    buf_add(&dir, path, slash ? (size_t)(slash - path) + 1 : 0) < 0 ||
	    (!slash && buf_adds(&dir, ".") < 0)) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((fd = mkstemp(tmp.ptr)) < 0) {
		error = err_set(err, ERR_IO, "%s: %s", path,
				err_errno_str(errno));
		buf_release(&tmp);
		goto out;
	}
	if (fill(fd, ctx) < 0 || fsync(fd) < 0) {
		error = err_set(err, ERR_IO, "%s: %s", path,
				err_errno_str(errno));
		goto out;
	}
	error = close(fd);
	fd = -1;
	if (error < 0 || rename(tmp.ptr, path) < 0) {
		error = err_set(err, ERR_IO, "%s: %s", path,
				err_errno_str(errno));
		goto out;
	}
	buf_release(&tmp);
	/* Make the rename itself durable. */
	if ((dfd = open(dir.ptr, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(dfd);
		close(dfd);
	}
out:
	if (fd >= 0)
		close(fd);
	if (tmp.len) /* not renamed: the temporary file goes */
		unlink(tmp.ptr);
	buf_release(&tmp);
	buf_release(&dir);
	return error;
}

/* The writer's PID in a file_replace() temporary's name, or 0. */
static long temp_pid(const char *name)
{
	const char *t = strstr(name, ".tmp."), *p;
	long pid = 0;

	if (!t)
		return 0;
	for (p = t + 5; *p >= '0' && *p <= '9' && pid < 100000000; p++)
		pid = pid * 10 + (*p - '0');
	if (p == t + 5 || *p != '.' || strlen(p + 1) != 6)
		return 0;
	return pid;
}

unsigned file_sweep_temps(const char *dir)
{
	struct dirent *de;
	struct stat st;
	unsigned n = 0;
	long pid;
	DIR *d;
	int dfd;

	if (!(d = opendir(dir)))
		return 0;
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		pid = temp_pid(de->d_name);
		if (pid <= 0 || pid == (long)getpid() ||
		    (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	return n;
}
