/*
 * file: whole-file reads with a size cap, whole-file replacement (a
 * reader sees the old file or the new one, never half of one), and
 * secret files (tokens, passwords, webhook secrets) read without their
 * trailing newline and wiped when released.
 */
#ifndef UTIL_FILE_H
#define UTIL_FILE_H

#include <stddef.h>

#include "util/buf.h"
#include "util/err.h"

/*
 * Read the file at `path` into *out (initialised here; the caller
 * releases it), refusing more than `max` bytes (ERR_LIMIT, also when the
 * file grows while it is read). Messages name the file as `name` (a
 * path relative to what the user gave, say). 0, or ERR_IO/ERR_LIMIT/
 * ERR_NOMEM with *out released.
 */
int file_read(struct buf *out, const char *path, const char *name,
	      size_t max, struct err *err);

/*
 * A secret file: file_read() of at most `max` bytes, then every trailing
 * "\n" and "\r" dropped (an empty file reads as ""). Messages name the
 * path, never the contents. Release *out with file_secret_release().
 */
int file_read_secret(struct buf *out, const char *path, size_t max,
		     struct err *err);

/*
 * Replace the file at `path` as a whole: `fill` writes the new contents
 * to `fd`, a temporary file (mode 0600) in the same directory, which is
 * then synced and renamed over `path`, and the directory synced, so a
 * reader or a crash sees the old file or the new one. `fill` returns 0,
 * or -1 with errno set. 0, or ERR_IO naming `path` and the cause (the
 * temporary file removed).
 */
int file_replace(const char *path, int (*fill)(int fd, void *ctx), void *ctx,
		 struct err *err);

/*
 * Remove the temporary files file_replace() left in `dir` when its
 * process died between the write and the rename (SIGKILL, a power cut):
 * each is named "NAME.tmp.PID.XXXXXX"; one goes when PID is not running.
 * (A writer in another PID namespace sharing the folder could lose its
 * temporary: its rename then fails, the old file stays whole.) Returns
 * how many were removed; a folder that cannot be read removes none.
 */
unsigned file_sweep_temps(const char *dir);

/* Write all of data[0..len) to `fd` (retrying short writes). 0 or -1. */
int file_write_all(int fd, const void *data, size_t len);

/* Wipe the secret's bytes, then release the buffer. */
void file_secret_release(struct buf *b);

/* Wipe a secret string (a token, a password), then free it. NULL: nothing. */
void file_secret_free(char *s);

#endif
