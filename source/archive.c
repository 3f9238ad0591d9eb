/*
 * Bounded extraction of .tar.gz archives (Helm charts, OCI layers), see
 * internal.h. zlib inflates the file as a stream; the tar reader is our
 * own, so that nothing but regular files and directories can come out of
 * an archive, and nothing outside the directory given.
 *
 * The archive is read once, front to back, in fixed-size pieces: memory
 * does not grow with the archive. Every limit is checked before the bytes
 * it guards are written, from the sizes the headers declare. Files are
 * created relative to a descriptor of the target directory, one path
 * component at a time with O_NOFOLLOW, so a symbolic link placed in the
 * tree by someone else is never followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "source/internal.h"
#include "util/file.h"

#include "util/banned.h" /* last */

#define BLOCK 512
#define CHUNK (64u << 10)
/* Bytes of one entry name (pax path, GNU long name, ustar prefix/name). */
#define MAX_NAME 4096
/* Bytes of one path component (the kernel's NAME_MAX). */
#define MAX_COMPONENT 255
/* Bytes of one pax extended header's records. */
#define MAX_PAX (1u << 20)
/* Extended headers (pax, GNU long name) in a row before an entry. */
#define MAX_META_IN_A_ROW 4
/*
 * Bytes the decompressed stream may hold beyond the file contents: per
 * entry its headers and padding (at most MAX_META_IN_A_ROW + 1 headers,
 * each with under one block of padding), and at the end the zero blocks
 * writers pad the last record with (tar's default record is 10 KiB).
 */
#define STREAM_PER_ENTRY ((MAX_META_IN_A_ROW + 1) * 2 * BLOCK)
#define STREAM_SLACK	 (1u << 20)
/* Directory levels src_remove_tree() descends. */
#define MAX_REMOVE_DEPTH 512

/* ---- the gzip stream ---------------------------------------------- */

struct gz {
	int fd;
	z_stream z;
	bool z_ready;
	bool in_eof;	/* read(2) said end of file */
	bool ended;	/* a gzip member ended and no input follows */
	uint64_t total; /* bytes inflated */
	uint64_t max;	/* bound on total */
	const char *what;
	unsigned char in[CHUNK];
};

/* Refill the input; 0, or ERR_IO. Sets in_eof at the end of the file. */
static int gz_fill(struct gz *g, struct err *err)
{
	ssize_t n;

	do
		n = read(g->fd, g->in, sizeof(g->in));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return err_set(err, ERR_IO, "%s: read failed: %s", g->what,
			       err_errno_str(errno));
	if (n == 0)
		g->in_eof = true;
	g->z.next_in = g->in;
	g->z.avail_in = (uInt)n;
	return 0;
}

/*
 * Inflate up to `len` bytes into `out`. Returns the number of bytes
 * produced, fewer than `len` only at the clean end of the stream (every
 * gzip member complete, its CRC and length checked), or a negative error:
 * ERR_PARSE for corrupt or truncated data, ERR_LIMIT when the stream
 * decompresses to more than g->max bytes (stopped right there).
 */
static long gz_read(struct gz *g, void *out, size_t len, struct err *err)
{
	size_t done = 0;
	int error, ret;

	while (done < len && !g->ended) {
		size_t left = len - done;
		uInt want = left < CHUNK ? (uInt)left : CHUNK;

		/* Never inflate more than one byte past the bound. */
		if (g->max - g->total < want)
			want = (uInt)(g->max - g->total + 1);
		if (!g->z.avail_in && !g->in_eof &&
		    (error = gz_fill(g, err)) < 0)
			return error;
		if (!g->z.avail_in && g->in_eof)
			return err_set(err, ERR_PARSE,
				       "%s: truncated (the gzip stream ends "
				       "early)",
				       g->what);
		g->z.next_out = (unsigned char *)out + done;
		g->z.avail_out = want;
		ret = inflate(&g->z, Z_NO_FLUSH);
		done += want - g->z.avail_out;
		g->total += want - g->z.avail_out;
		if (g->total > g->max)
			return err_set(err, ERR_LIMIT,
				       "%s: decompresses to more than %llu "
				       "bytes",
				       g->what, (unsigned long long)g->max);
		if (ret == Z_STREAM_END) {
			/* Another gzip member may follow (as gzip -d reads
			 * concatenated files). */
			if (!g->z.avail_in && !g->in_eof &&
			    (error = gz_fill(g, err)) < 0)
				return error;
			if (!g->z.avail_in) {
				g->ended = true;
				break;
			}
			if (inflateReset(&g->z) != Z_OK)
				return err_set(err, ERR_PARSE,
					       "%s: corrupt gzip stream",
					       g->what);
			continue;
		}
		if (ret == Z_MEM_ERROR)
			return err_set(err, ERR_NOMEM, "%s: out of memory",
				       g->what);
		if (ret != Z_OK && ret != Z_BUF_ERROR)
			return err_set(err, ERR_PARSE,
				       "%s: corrupt gzip stream: %s", g->what,
				       g->z.msg ? g->z.msg : "bad data");
	}
	return (long)done;
}

/* Read exactly `len` bytes; the end of the stream is ERR_PARSE. */
static int gz_read_full(struct gz *g, void *out, size_t len, const char *name,
			struct err *err)
{
	long n = gz_read(g, out, len, err);

	if (n < 0)
		return (int)n;
	if ((size_t)n < len) {
		if (name)
			return err_set(err, ERR_PARSE,
				       "%s: entry \"%s\": truncated", g->what,
				       name);
		return err_set(err, ERR_PARSE, "%s: truncated", g->what);
	}
	return 0;
}

/* Read and drop `len` bytes. */
static int gz_skip(struct gz *g, uint64_t len, const char *name,
		   unsigned char *scratch, struct err *err)
{
	int error;

	while (len) {
		size_t n = len < CHUNK ? (size_t)len : CHUNK;

		if ((error = gz_read_full(g, scratch, n, name, err)) < 0)
			return error;
		len -= n;
	}
	return 0;
}

/* ---- tar headers -------------------------------------------------- */

/* Offsets of the ustar header fields. */
enum {
	H_NAME = 0,
	H_MODE = 100,
	H_SIZE = 124,
	H_CHKSUM = 148,
	H_TYPE = 156,
	H_MAGIC = 257,
	H_PREFIX = 345,
};

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * A numeric field: octal digits after optional spaces, ended by a space
 * or NUL (or the field's end); or GNU base-256 (first byte 0x80) for
 * values octal cannot hold. False when malformed or negative.
 */
static bool parse_number(const unsigned char *f, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (f[0] & 0x80) {
		if (f[0] != 0x80)
			return false; /* negative, or too large */
		for (i = 1; i < n; i++) {
			if (v >> 56)
				return false;
			v = v << 8 | f[i];
		}
		*out = v;
		return true;
	}
	while (i < n && f[i] == ' ')
		i++;
	if (i == n || f[i] < '0' || f[i] > '7')
		return false;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return false;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return false;
	*out = v;
	return true;
}

/* The checksum: the header's bytes summed with the field as spaces;
 * old writers summed signed chars, which is accepted too. */
static bool checksum_ok(const unsigned char *h)
{
	uint64_t want;
	long sum_u = 0, sum_s = 0;

	if (!parse_number(h + H_CHKSUM, 8, &want))
		return false;
	for (size_t i = 0; i < BLOCK; i++) {
		unsigned char c =
			i >= H_CHKSUM && i < H_CHKSUM + 8 ? ' ' : h[i];

		sum_u += c;
		sum_s += (signed char)c;
	}
	return (uint64_t)sum_u == want ||
	       (sum_s >= 0 && (uint64_t)sum_s == want);
}

/* What the extended headers before an entry said about it. */
struct meta {
	char name[MAX_NAME + 1]; /* pax path or GNU long name */
	size_t name_len;
	bool has_name;
	bool has_size;
	uint64_t size;
	bool sparse;
	unsigned in_a_row; /* extended headers since the last entry */
};

/*
 * The records of a pax extended header: "LEN KEY=VALUE\n", LEN counting
 * the whole record. `path` names the entry, `size` overrides the
 * header's; GNU sparse files are recognised to be refused. Other keys
 * (times, owners, xattrs) do not matter here.
 */
static int parse_pax(struct meta *m, const char *p, size_t len,
		     const char *what, struct err *err)
{
	while (len) {
		size_t rec = 0, i = 0, klen;
		const char *key, *val, *eq;

		/* A writer may pad the data with NULs. */
		if (p[0] == '\0' && all_zero((const unsigned char *)p, len))
			break;
		while (i < len && p[i] >= '0' && p[i] <= '9' && rec <= len)
			rec = rec * 10 + (size_t)(p[i++] - '0');
		if (!i || i >= len || p[i] != ' ' || rec > len || rec < i + 3 ||
		    p[rec - 1] != '\n')
			goto bad;
		key = p + i + 1;
		eq = memchr(key, '=', (size_t)(p + rec - 1 - key));
		if (!eq || eq == key)
			goto bad;
		klen = (size_t)(eq - key);
		val = eq + 1;
		size_t vlen = (size_t)(p + rec - 1 - val);

		if (klen == 4 && !memcmp(key, "path", 4)) {
			if (vlen > MAX_NAME)
				return err_set(err, ERR_LIMIT,
					       "%s: an entry name is longer "
					       "than %d bytes",
					       what, MAX_NAME);
			memcpy(m->name, val, vlen);
			m->name[vlen] = '\0';
			m->name_len = vlen;
			m->has_name = vlen > 0;
		} else if (klen == 4 && !memcmp(key, "size", 4)) {
			uint64_t v = 0;

			if (!vlen || vlen > 19)
				goto bad;
			for (size_t j = 0; j < vlen; j++) {
				if (val[j] < '0' || val[j] > '9')
					goto bad;
				v = v * 10 + (uint64_t)(val[j] - '0');
			}
			m->size = v;
			m->has_size = true;
		} else if (klen > 11 && !memcmp(key, "GNU.sparse.", 11)) {
			m->sparse = true;
		}
		p += rec;
		len -= rec;
	}
	return 0;
bad:
	return err_set(err, ERR_PARSE, "%s: corrupt pax extended header", what);
}

/* ---- names -------------------------------------------------------- */

/*
 * Check an entry name and make its clean form in `out` (capacity
 * MAX_NAME + 1): no "./" or "." components, no empty ones, no trailing
 * slash. Absolute names and ".." components escape the root; an empty
 * clean form names the root itself (`*is_root`).
 */
static int clean_name(char *out, bool *is_root, const char *name, size_t len,
		      const char *what, const struct src_archive_limits *lim,
		      struct err *err)
{
	size_t o = 0, i = 0;
	unsigned depth = 0;

	*is_root = false;
	if (!len)
		return err_set(err, ERR_INVALID, "%s: entry \"\": empty name",
			       what);
	if (memchr(name, '\0', len))
		return err_set(err, ERR_INVALID,
			       "%s: entry \"%s\": the name holds a NUL byte",
			       what, name);
	if (name[0] == '/')
		goto escapes;
	while (i < len) {
		size_t start = i, n;

		while (i < len && name[i] != '/')
			i++;
		n = i - start;
		i++; /* the slash */
		if (!n || (n == 1 && name[start] == '.'))
			continue;
		if (n == 2 && name[start] == '.' && name[start + 1] == '.')
			goto escapes;
		if (n > MAX_COMPONENT)
			return err_set(err, ERR_LIMIT,
				       "%s: entry \"%s\": a path component is "
				       "longer than %d bytes",
				       what, name, MAX_COMPONENT);
		if (++depth > lim->max_depth)
			return err_set(err, ERR_LIMIT,
				       "%s: entry \"%s\": more than %u path "
				       "components",
				       what, name, lim->max_depth);
		if (o)
			out[o++] = '/';
		memcpy(out + o, name + start, n);
		o += n;
	}
	out[o] = '\0';
	*is_root = o == 0;
	return 0;
escapes:
	return err_set(err, ERR_INVALID,
		       "%s: entry \"%s\": escapes the archive's root", what,
		       name);
}

/* ---- the tree ----------------------------------------------------- */

/*
 * Open directory `name` in `dirfd`, creating it (mode 0755) when
 * missing. Never follows a symbolic link. Returns the descriptor, or -1
 * with errno set.
 */
static int open_or_make_dir(int dirfd, const char *name, bool *made)
{
	int fd;

	*made = false;
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT)
		return fd;
	if (mkdirat(dirfd, name, 0700) < 0)
		return -1;
	*made = true;
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && fchmod(fd, 0755) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int tree_error(const char *what, const char *name, const char *op, int e,
		      struct err *err)
{
	if (e == ENOTDIR || e == ELOOP)
		return err_set(err, ERR_INVALID,
			       "%s: entry \"%s\": a parent is not a "
			       "directory",
			       what, name);
	return err_set(err, ERR_IO, "%s: entry \"%s\": cannot %s: %s", what,
		       name, op, err_errno_str(e));
}

/*
 * Walk to the parent of the clean path `path` under `rootfd`, creating
 * missing directories. *parent is a descriptor to close (or rootfd),
 * *last the final component inside `path`.
 */
static int walk_to_parent(int rootfd, char *path, int *parent,
			  const char **last, const char *what, const char *name,
			  struct err *err)
{
	int fd = rootfd;
	char *p = path, *slash;

	while ((slash = strchr(p, '/'))) {
		bool made;
		int next;

		*slash = '\0';
		next = open_or_make_dir(fd, p, &made);
		*slash = '/';
		if (next < 0) {
			int e = errno;

			if (fd != rootfd)
				close(fd);
			return tree_error(what, name, "create a directory", e,
					  err);
		}
		if (fd != rootfd)
			close(fd);
		fd = next;
		p = slash + 1;
	}
	*parent = fd;
	*last = p;
	return 0;
}

static int make_dir_entry(int rootfd, char *path, const char *what,
			  const char *name, struct err *err)
{
	const char *last;
	int parent, fd, error;
	bool made;

	if ((error = walk_to_parent(rootfd, path, &parent, &last, what, name,
				    err)) < 0)
		return error;
	fd = open_or_make_dir(parent, last, &made);
	if (fd < 0)
		error = errno == ENOTDIR || errno == ELOOP
				? err_set(err, ERR_INVALID,
					  "%s: entry \"%s\": appears twice",
					  what, name)
				: tree_error(what, name, "create a directory",
					     errno, err);
	else
		close(fd);
	if (parent != rootfd)
		close(parent);
	return error;
}

/* Create the regular file and copy `size` bytes of the stream into it. */
static int make_file_entry(int rootfd, char *path, uint64_t size, bool exec,
			   struct gz *g, unsigned char *chunk, const char *name,
			   struct err *err)
{
	const char *last, *what = g->what;
	int parent, fd, error;

	if ((error = walk_to_parent(rootfd, path, &parent, &last, what, name,
				    err)) < 0)
		return error;
	fd = openat(parent, last,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		error = errno == EEXIST
				? err_set(err, ERR_INVALID,
					  "%s: entry \"%s\": appears twice",
					  what, name)
				: tree_error(what, name, "create", errno, err);
		goto out;
	}
	while (size) {
		size_t n = size < CHUNK ? (size_t)size : CHUNK;

		if ((error = gz_read_full(g, chunk, n, name, err)) < 0)
			goto out;
		if (file_write_all(fd, chunk, n) < 0) {
			error = tree_error(what, name, "write", errno, err);
			goto out;
		}
		size -= n;
	}
	if (fchmod(fd, exec ? 0755 : 0644) < 0) {
		error = tree_error(what, name, "set the mode of", errno, err);
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		error = tree_error(what, name, "write", errno, err);
		goto out;
	}
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	if (parent != rootfd)
		close(parent);
	return error;
}

/* ---- the archive -------------------------------------------------- */

struct untar {
	struct gz *g;
	int rootfd;
	struct src_archive_limits lim;
	uint64_t unpacked; /* file bytes, and extended headers' data */
	size_t entries;
	struct meta meta;
	unsigned char hdr[BLOCK];
	char raw[MAX_NAME + 2]; /* the entry's name as the archive has it */
	char path[MAX_NAME + 1];
	unsigned char *chunk;
};

static uint64_t pad(uint64_t size)
{
	return (BLOCK - size % BLOCK) % BLOCK;
}

/* Charge `n` bytes of entry `name` (NULL: an extended header) to the
 * unpacked total. */
static int charge(struct untar *u, uint64_t n, const char *name,
		  struct err *err)
{
	if (n <= u->lim.max_bytes - u->unpacked) {
		u->unpacked += n;
		return 0;
	}
	if (!name)
		return err_set(
			err, ERR_LIMIT,
			"%s: the archive unpacks to more than %llu bytes",
			u->g->what, (unsigned long long)u->lim.max_bytes);
	return err_set(err, ERR_LIMIT,
		       "%s: entry \"%s\": the archive unpacks to more than "
		       "%llu bytes",
		       u->g->what, name, (unsigned long long)u->lim.max_bytes);
}

/* An extended header ('x', 'g', 'L'): its data read into u->meta. */
static int read_meta(struct untar *u, char type, uint64_t size, struct err *err)
{
	const char *what = u->g->what;
	char *data = NULL;
	int error;

	if (++u->meta.in_a_row > MAX_META_IN_A_ROW)
		return err_set(err, ERR_PARSE,
			       "%s: more than %d extended headers in a row",
			       what, MAX_META_IN_A_ROW);
	if (type == 'L' && size > MAX_NAME + 1)
		return err_set(err, ERR_LIMIT,
			       "%s: an entry name is longer than %d bytes",
			       what, MAX_NAME);
	if (size > MAX_PAX)
		return err_set(err, ERR_LIMIT,
			       "%s: an extended header is over %u bytes", what,
			       MAX_PAX);
	if ((error = charge(u, size, NULL, err)) < 0)
		return error;
	if (type == 'g')
		return gz_skip(u->g, size + pad(size), NULL, u->chunk, err);
	if (!(data = malloc((size_t)size + 1)))
		return err_set(err, ERR_NOMEM, "%s: out of memory", what);
	if ((error = gz_read_full(u->g, data, (size_t)size, NULL, err)) < 0 ||
	    (error = gz_skip(u->g, pad(size), NULL, u->chunk, err)) < 0)
		goto out;
	if (type == 'x') {
		error = parse_pax(&u->meta, data, (size_t)size, what, err);
	} else {
		/* GNU long name: NUL-terminated, usually. */
		size_t n = strnlen(data, (size_t)size);

		if (n > MAX_NAME) {
			error = err_set(err, ERR_LIMIT,
					"%s: an entry name is longer than %d "
					"bytes",
					what, MAX_NAME);
			goto out;
		}
		memcpy(u->meta.name, data, n);
		u->meta.name[n] = '\0';
		u->meta.name_len = n;
		u->meta.has_name = n > 0;
	}
out:
	free(data);
	return error;
}

/* The entry's name: pax or GNU long name, else ustar prefix/name. */
static size_t entry_name(struct untar *u)
{
	const unsigned char *h = u->hdr;
	size_t n = 0, pn;

	if (u->meta.has_name) {
		memcpy(u->raw, u->meta.name, u->meta.name_len + 1);
		return u->meta.name_len;
	}
	if (!memcmp(h + H_MAGIC, "ustar\0", 6) &&
	    (pn = strnlen((const char *)h + H_PREFIX, 155))) {
		memcpy(u->raw, h + H_PREFIX, pn);
		u->raw[pn] = '/';
		n = pn + 1;
	}
	pn = strnlen((const char *)h + H_NAME, 100);
	memcpy(u->raw + n, h + H_NAME, pn);
	n += pn;
	u->raw[n] = '\0';
	return n;
}

static const char *type_refused(char type)
{
	switch (type) {
	case '1':
	case '2':
	case 'K':
		return "links are not allowed";
	case '3':
	case '4':
		return "devices are not allowed";
	case '6':
		return "FIFOs are not allowed";
	default:
		return NULL;
	}
}

/* One entry whose header is in u->hdr. */
static int read_entry(struct untar *u, uint64_t size, struct err *err)
{
	const char *what = u->g->what, *refused;
	char type = (char)u->hdr[H_TYPE];
	size_t name_len = entry_name(u);
	const char *name = u->raw;
	uint64_t mode = 0;
	bool is_root;
	int error;

	if (++u->entries > u->lim.max_entries)
		return err_set(err, ERR_LIMIT, "%s: more than %zu entries",
			       what, u->lim.max_entries);
	if ((error = clean_name(u->path, &is_root, name, name_len, what,
				&u->lim, err)) < 0)
		return error;
	if ((refused = type_refused(type)))
		return err_set(err, ERR_INVALID, "%s: entry \"%s\": %s", what,
			       name, refused);
	if (type != '0' && type != '\0' && type != '5') {
		if (type > ' ' && type < 0x7f)
			return err_set(err, ERR_INVALID,
				       "%s: entry \"%s\": entries of type "
				       "'%c' are not supported",
				       what, name, type);
		return err_set(err, ERR_INVALID,
			       "%s: entry \"%s\": entries of type 0x%02x "
			       "are not supported",
			       what, name, (unsigned char)type);
	}
	if (u->meta.sparse)
		return err_set(err, ERR_INVALID,
			       "%s: entry \"%s\": sparse files are not "
			       "supported",
			       what, name);

	if (type == '5') {
		/* A directory has no data; a writer that sent some gets
		 * it read and dropped, charged like any other byte. */
		if ((error = charge(u, size, name, err)) < 0 ||
		    (error = gz_skip(u->g, size + pad(size), name, u->chunk,
				     err)) < 0)
			return error;
		if (is_root)
			return 0;
		return make_dir_entry(u->rootfd, u->path, what, name, err);
	}
	if (is_root)
		return err_set(err, ERR_INVALID,
			       "%s: entry \"%s\": a file cannot be the "
			       "archive's root",
			       what, name);
	if (size > u->lim.max_file_bytes)
		return err_set(err, ERR_LIMIT,
			       "%s: entry \"%s\": %llu bytes, over the "
			       "%llu-byte limit for one file",
			       what, name, (unsigned long long)size,
			       (unsigned long long)u->lim.max_file_bytes);
	if ((error = charge(u, size, name, err)) < 0)
		return error;
	if (!parse_number(u->hdr + H_MODE, 8, &mode))
		return err_set(err, ERR_PARSE,
			       "%s: entry \"%s\": corrupt tar header (mode)",
			       what, name);
	if ((error = make_file_entry(u->rootfd, u->path, size,
				     (mode & 0100) != 0, u->g, u->chunk, name,
				     err)) < 0)
		return error;
	return gz_skip(u->g, pad(size), name, u->chunk, err);
}

static int read_archive(struct untar *u, struct err *err)
{
	const char *what = u->g->what;
	uint64_t offset = 0, size;
	int error;

	for (;;) {
		long n = gz_read(u->g, u->hdr, BLOCK, err);
		char type;

		if (n < 0)
			return (int)n;
		if (n == 0 && !u->meta.in_a_row)
			return 0; /* the end, without end-of-archive blocks */
		if (n < BLOCK)
			return err_set(err, ERR_PARSE, "%s: truncated", what);
		if (all_zero(u->hdr, BLOCK)) {
			if (u->meta.in_a_row)
				return err_set(err, ERR_PARSE,
					       "%s: truncated (an extended "
					       "header without its entry)",
					       what);
			break;
		}
		if (!checksum_ok(u->hdr))
			return err_set(err, ERR_PARSE,
				       "%s: corrupt tar header at byte %llu "
				       "(checksum mismatch)",
				       what, (unsigned long long)offset);
		if (!parse_number(u->hdr + H_SIZE, 12, &size))
			return err_set(err, ERR_PARSE,
				       "%s: corrupt tar header at byte %llu "
				       "(size)",
				       what, (unsigned long long)offset);
		type = (char)u->hdr[H_TYPE];
		if (type == 'x' || type == 'g' || type == 'L') {
			if ((error = read_meta(u, type, size, err)) < 0)
				return error;
		} else {
			if (u->meta.has_size)
				size = u->meta.size;
			if ((error = read_entry(u, size, err)) < 0)
				return error;
			memset(&u->meta, 0, sizeof(u->meta));
		}
		offset = u->g->total;
	}
	/*
	 * The end-of-archive blocks. What follows (the zero padding of the
	 * last record) is read to the end of the gzip stream, so that its
	 * CRC is checked and a truncated file is noticed: the bound on the
	 * decompressed size keeps that finite.
	 */
	for (;;) {
		long n = gz_read(u->g, u->chunk, CHUNK, err);

		if (n < 0)
			return (int)n;
		if (n < (long)CHUNK)
			return 0;
	}
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

int src_untar_gz(const char *tgz, const char *dir, const char *what,
		 const struct src_archive_limits *limits, struct err *err)
{
	struct untar u;
	struct gz *g = NULL;
	int error = 0, ret;

	memset(&u, 0, sizeof(u));
	u.rootfd = -1;
	if (!what)
		what = tgz;
	if (limits)
		u.lim = *limits;
	if (!u.lim.max_bytes)
		u.lim.max_bytes = SRC_ARCHIVE_DEFAULT_MAX_BYTES;
	if (!u.lim.max_file_bytes)
		u.lim.max_file_bytes = SRC_ARCHIVE_DEFAULT_MAX_FILE_BYTES;
	if (!u.lim.max_entries)
		u.lim.max_entries = SRC_ARCHIVE_DEFAULT_MAX_ENTRIES;
	if (!u.lim.max_depth)
		u.lim.max_depth = SRC_ARCHIVE_DEFAULT_MAX_DEPTH;

	if (!(g = calloc(1, sizeof(*g))) || !(u.chunk = malloc(CHUNK))) {
		error = err_set(err, ERR_NOMEM, "%s: out of memory", what);
		goto out;
	}
	g->fd = -1;
	g->what = what;
	/*
	 * Everything in a valid archive is bounded by the limits above, so
	 * its decompressed stream is too; beyond that bound it is a gzip
	 * bomb (zeros after the end, say), stopped there.
	 */
	g->max = sat_add(sat_add(u.lim.max_bytes,
				 sat_mul((uint64_t)u.lim.max_entries + 1,
					 STREAM_PER_ENTRY)),
			 STREAM_SLACK);
	u.g = g;

	if ((g->fd = open(tgz, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
		error = err_set(err, ERR_IO, "%s: cannot open %s: %s", what,
				tgz, err_errno_str(errno));
		goto out;
	}
	if ((u.rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		error = err_set(err, ERR_IO, "%s: cannot open %s: %s", what,
				dir, err_errno_str(errno));
		goto out;
	}
	if ((ret = inflateInit2(&g->z, 16 + MAX_WBITS)) != Z_OK) {
		error = err_set(err,
				ret == Z_MEM_ERROR ? ERR_NOMEM : ERR_GENERIC,
				"%s: cannot start zlib", what);
		goto out;
	}
	g->z_ready = true;
	error = read_archive(&u, err);
out:
	if (g) {
		if (g->z_ready)
			inflateEnd(&g->z);
		if (g->fd >= 0)
			close(g->fd);
	}
	if (u.rootfd >= 0)
		close(u.rootfd);
	free(u.chunk);
	free(g);
	return error;
}

/* ---- removal ------------------------------------------------------ */

static int remove_error(const struct buf *path, const char *name, int e,
			struct err *err)
{
	if (name)
		return err_set(err, ERR_IO, "%s/%s: cannot remove: %s",
			       buf_cstr(path), name, err_errno_str(e));
	return err_set(err, ERR_IO, "%s: cannot remove: %s", buf_cstr(path),
		       err_errno_str(e));
}

/*
 * Remove everything inside the directory `fd` (closed here), whose path
 * for messages is `path` (restored on return). Entries are unlinked
 * relative to the descriptor; a directory is opened with O_NOFOLLOW, so
 * a symbolic link is removed itself, never followed.
 */
static int empty_dir(int fd, struct buf *path, unsigned depth, struct err *err)
{
	size_t plen = path->len;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int error = 0;

	if (depth > MAX_REMOVE_DEPTH) {
		close(fd);
		return err_set(err, ERR_IO,
			       "%s: cannot remove: more than %d levels deep",
			       buf_cstr(path), MAX_REMOVE_DEPTH);
	}
	/* A read-only directory (a checkout, say) is made writable so that
	 * its entries can go; it is removed next anyway. */
	if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
		(void)fchmod(fd, (st.st_mode & 07777) | 0700);
	if (!(d = fdopendir(fd))) {
		error = remove_error(path, NULL, errno, err);
		close(fd);
		return error;
	}
	for (;;) {
		int sub;

		errno = 0;
		if (!(de = readdir(d))) {
			if (errno)
				error = remove_error(path, NULL, errno, err);
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0 || errno == ENOENT)
			continue;
		/* A directory: Linux says EISDIR, POSIX allows EPERM. */
		if (errno != EISDIR && errno != EPERM) {
			error = remove_error(path, de->d_name, errno, err);
			break;
		}
		sub = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			error = remove_error(path, de->d_name, errno, err);
			break;
		}
		if (buf_addf(path, "/%s", de->d_name) < 0) {
			close(sub);
			error = err_set(err, ERR_NOMEM, "out of memory");
			break;
		}
		error = empty_dir(sub, path, depth + 1, err);
		buf_truncate(path, plen);
		if (error < 0)
			break;
		if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0 &&
		    errno != ENOENT) {
			error = remove_error(path, de->d_name, errno, err);
			break;
		}
	}
	closedir(d);
	return error;
}

int src_remove_tree(const char *dir, struct err *err)
{
	struct buf path = BUF_INIT;
	struct stat st;
	int fd, error = 0;

	if (lstat(dir, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return err_set(err, ERR_IO, "%s: cannot remove: %s", dir,
			       err_errno_str(errno));
	}
	if (!S_ISDIR(st.st_mode)) {
		/* A symbolic link (or a file) in the directory's place goes
		 * itself; what it points to is left alone. */
		if (unlink(dir) < 0 && errno != ENOENT)
			return err_set(err, ERR_IO, "%s: cannot remove: %s",
				       dir, err_errno_str(errno));
		return 0;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_set(err, ERR_IO, "%s: cannot remove: %s", dir,
			       err_errno_str(errno));
	if (buf_adds(&path, dir) < 0) {
		close(fd);
		return err_set(err, ERR_NOMEM, "%s: out of memory", dir);
	}
	if ((error = empty_dir(fd, &path, 0, err)) < 0)
		goto out;
	if (rmdir(dir) < 0 && errno != ENOENT)
		error = err_set(err, ERR_IO, "%s: cannot remove: %s", dir,
				err_errno_str(errno));
out:
	buf_release(&path);
	return error;
}
