/*
 * The directory renderer: every manifest file under a root, in path order.
 *
 * Walks the tree depth-first with each directory's entries sorted bytewise
 * (as Go's filepath.Walk does, so the order matches `kubectl apply -R`),
 * skips dot-files and dot-directories (.git, .github, editor state), and
 * follows a symlink only when its target stays inside the root: a link to
 * /etc/passwd in a repository must not leak that file into the cluster.
 * Directories are remembered by device and inode, so a link back up the
 * tree cannot loop.
 */
#include "renderers/render.h"
#include "renderers/internal.h"
#include "util/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/banned.h" /* last */

struct walk {
	const struct render_dir_options *opts;
	size_t max_file_size;
	char *real_root;           /* realpath of the root */
	size_t real_root_len;
	struct diff_objset *out;
	struct err *err;
	int error;                 /* first error code */
	struct {
		dev_t dev;
		ino_t ino;
	} *seen;                   /* directories on the current path */
	size_t nseen, aseen;
	size_t entries; /* looked at, up to RENDER_MAX_ENTRIES */
	bool stop;	/* the entry limit was hit */
};

/* How every Git LFS pointer file starts (git-lfs's spec, v1). */
#define LFS_POINTER "version https://git-lfs.github.com/spec/v1\n"

static void walk_fail(struct walk *w, int code)
{
	if (!w->error)
		w->error = code;
}

bool render_has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static bool is_manifest_name(const char *name)
{
	return render_has_suffix(name, ".yaml") ||
	       render_has_suffix(name, ".yml") ||
	       render_has_suffix(name, ".json");
}

/*
 * A glob matches a relative path when it matches the whole path or, for a
 * glob without '/', the file's base name: "*.yaml" selects files at any
 * depth, while "base/" followed by "*.yaml" only selects files there.
 */
static bool glob_match(const char *const *globs, const char *rel)
{
	const char *base = strrchr(rel, '/');

	base = base ? base + 1 : rel;
	for (; *globs; globs++) {
		if (!fnmatch(*globs, rel, FNM_PATHNAME | FNM_PERIOD))
			return true;
		if (!strchr(*globs, '/') && !fnmatch(*globs, base, FNM_PERIOD))
			return true;
	}
	return false;
}

static bool selected(const struct walk *w, const char *rel)
{
	if (w->opts->include && !glob_match(w->opts->include, rel))
		return false;
	if (w->opts->exclude && glob_match(w->opts->exclude, rel))
		return false;
	return true;
}

bool render_is_list_kind(const json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));

	return kind && render_has_suffix(kind, "List") &&
	       json_is_array(json_object_get(doc, "items"));
}

const char *render_value_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "a list";
	case JSON_STRING:
		return "a string";
	case JSON_NULL:
		return "null";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "a number";
	}
}

static void add_object(struct walk *w, json_t *json, const char *origin)
{
	struct diff_object *obj;
	int error;

	if ((error = diff_object_new(&obj, json, origin, w->err)) < 0) {
		walk_fail(w, error);
		return;
	}
	if ((error = diff_objset_add(w->out, obj, w->err)) < 0) {
		diff_object_free(obj);
		walk_fail(w, error);
	}
}

static void render_file(struct walk *w, const char *path, const char *rel)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	struct buf data = BUF_INIT;
	struct buf origin = BUF_INIT;
	int error;

	if ((error = file_read(&data, path, rel, w->max_file_size,
				     w->err)) < 0) {
		walk_fail(w, error);
		return;
	}
	/* A pointer parses as a YAML string; say what it really is. */
	if (data.len >= strlen(LFS_POINTER) &&
	    !memcmp(data.ptr, LFS_POINTER, strlen(LFS_POINTER))) {
		walk_fail(w, err_set(w->err, ERR_INVALID,
				     "%s: a Git LFS pointer, not the file: LFS "
				     "content is not fetched (commit the "
				     "manifest itself)",
				     rel));
		buf_release(&data);
		return;
	}
	if ((error = render_parse(&docs, buf_cstr(&data), data.len, rel,
				  w->err)) < 0)
		walk_fail(w, error);
	/* Documents before a parse error are still checked and reported. */
	for (size_t i = 0; i < docs.len; i++) {
		json_t *doc = docs.items[i].value;
		unsigned line = docs.items[i].line;

		if (!json_is_object(doc)) {
			walk_fail(w, err_set(w->err, ERR_INVALID,
					     "%s:%u: document is %s, not an "
					     "object",
					     rel, line, render_value_kind(doc)));
			continue;
		}
		if (!render_is_list_kind(doc)) {
			buf_reset(&origin);
			buf_addf(&origin, "%s:%u", rel, line);
			add_object(w, doc, buf_cstr(&origin));
			continue;
		}
		json_t *items = json_object_get(doc, "items");
		for (size_t j = 0; j < json_array_size(items); j++) {
			json_t *item = json_array_get(items, j);

			buf_reset(&origin);
			buf_addf(&origin, "%s:%u (items[%zu])", rel, line, j);
			if (!json_is_object(item)) {
				walk_fail(w, err_set(w->err, ERR_INVALID,
						     "%s: list item is %s, not "
						     "an object",
						     buf_cstr(&origin),
						     render_value_kind(item)));
				continue;
			}
			add_object(w, item, buf_cstr(&origin));
		}
	}
	render_docs_release(&docs);
	buf_release(&data);
	buf_release(&origin);
}

/*
 * Resolve a symlink found at `path` and check that it stays under the root.
 * Fills `resolved` (PATH_MAX bytes). 0 when it does; an error otherwise.
 */
static int check_link(struct walk *w, const char *path, const char *rel,
		      char *resolved)
{
	if (!realpath(path, resolved))
		return err_set(w->err, ERR_IO, "%s: cannot resolve symlink: %s",
			       rel, strerror(errno));
	if (strncmp(resolved, w->real_root, w->real_root_len) ||
	    (resolved[w->real_root_len] != '/' &&
	     resolved[w->real_root_len] != '\0'))
		return err_set(w->err, ERR_INVALID,
			       "%s: symlink points outside the root (to %s); "
			       "refusing to follow it",
			       rel, resolved);
	return 0;
}

static int cmp_names(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_dots(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static void walk_dir(struct walk *w, const char *path, const char *rel,
		     unsigned depth);

static void walk_entry(struct walk *w, const char *path, const char *rel,
		       unsigned depth)
{
	char resolved[PATH_MAX];
	const char *target = path;
	struct stat st;
	int error;

	if (w->stop)
		return;
	if (++w->entries > RENDER_MAX_ENTRIES) {
		w->stop = true;
		walk_fail(w, err_set(w->err, ERR_LIMIT,
				     "%s: more than %u files and directories "
				     "walked (links leading back into the "
				     "tree?)",
				     rel, RENDER_MAX_ENTRIES));
		return;
	}
	if (lstat(path, &st) < 0) {
		walk_fail(w, err_set(w->err, ERR_IO, "%s: cannot stat: %s", rel,
				     strerror(errno)));
		return;
	}
	if (S_ISLNK(st.st_mode)) {
		/*
		 * Only links that could matter are checked: a directory or a
		 * manifest. A dangling link or one to a README is ignored.
		 */
		if (stat(path, &st) == 0 ? S_ISREG(st.st_mode) &&
						   !is_manifest_name(path)
					 : !is_manifest_name(path))
			return;
		if ((error = check_link(w, path, rel, resolved)) < 0) {
			walk_fail(w, error);
			return;
		}
		target = resolved;
		if (stat(target, &st) < 0) {
			walk_fail(w, err_set(w->err, ERR_IO,
					     "%s: cannot stat: %s", rel,
					     strerror(errno)));
			return;
		}
	}
	if (S_ISDIR(st.st_mode)) {
		if (!w->opts->no_recurse)
			walk_dir(w, target, rel, depth + 1);
	} else if (S_ISREG(st.st_mode) && is_manifest_name(path) &&
		   selected(w, rel)) {
		render_file(w, target, rel);
	}
}

static void walk_dir(struct walk *w, const char *path, const char *rel,
		     unsigned depth)
{
	struct dirent **names = NULL;
	struct buf child = BUF_INIT, child_rel = BUF_INIT;
	struct stat st;
	int n;

	if (stat(path, &st) < 0) {
		walk_fail(w, err_set(w->err, ERR_IO, "%s: cannot stat: %s",
				     *rel ? rel : path, strerror(errno)));
		return;
	}
	for (size_t i = 0; i < w->nseen; i++)
		if (w->seen[i].dev == st.st_dev && w->seen[i].ino == st.st_ino)
			return; /* a link back up the tree: already walking it */
	if (depth > 64) {
		walk_fail(w, err_set(w->err, ERR_LIMIT,
				     "%s: directories nested deeper than 64",
				     rel));
		return;
	}
	if (w->nseen == w->aseen) {
		size_t a = w->aseen ? w->aseen * 2 : 16;
		void *p = realloc(w->seen, a * sizeof(*w->seen));

		if (!p) {
			walk_fail(w, err_set(w->err, ERR_NOMEM,
					     "out of memory"));
			return;
		}
		w->seen = p;
		w->aseen = a;
	}
	w->seen[w->nseen].dev = st.st_dev;
	w->seen[w->nseen].ino = st.st_ino;
	w->nseen++;

	if ((n = scandir(path, &names, skip_dots, cmp_names)) < 0) {
		walk_fail(w, err_set(w->err, ERR_IO, "%s: cannot read directory: %s",
				     *rel ? rel : path, strerror(errno)));
		w->nseen--;
		return;
	}
	for (int i = 0; i < n; i++) {
		buf_reset(&child);
		buf_reset(&child_rel);
		buf_addf(&child, "%s/%s", path, names[i]->d_name);
		buf_addf(&child_rel, "%s%s%s", rel, *rel ? "/" : "",
			 names[i]->d_name);
		walk_entry(w, buf_cstr(&child), buf_cstr(&child_rel), depth);
		free(names[i]);
	}
	free(names);
	buf_release(&child);
	buf_release(&child_rel);
	w->nseen--;
}

int render_dir(struct diff_objset *out, const char *root,
	       const struct render_dir_options *opts, struct err *err)
{
	static const struct render_dir_options defaults = RENDER_DIR_OPTIONS_INIT;
	struct walk w = {0};
	struct stat st;
	const char *base;

	w.opts = opts ? opts : &defaults;
	w.max_file_size = w.opts->max_file_size ? w.opts->max_file_size
						: RENDER_MAX_FILE_SIZE;
	w.out = out;
	w.err = err;

	if (stat(root, &st) < 0)
		return err_set(err, errno == ENOENT ? ERR_NOTFOUND : ERR_IO,
			       "%s: %s", root, strerror(errno));
	if (!(w.real_root = realpath(root, NULL)))
		return err_set(err, ERR_IO, "%s: %s", root, strerror(errno));
	w.real_root_len = strlen(w.real_root);

	if (S_ISDIR(st.st_mode)) {
		walk_dir(&w, w.real_root, "", 0);
	} else if (S_ISREG(st.st_mode)) {
		/* A single file is rendered whatever its name. */
		base = strrchr(root, '/');
		render_file(&w, w.real_root, base ? base + 1 : root);
	} else {
		walk_fail(&w, err_set(err, ERR_INVALID,
				      "%s: not a file or directory", root));
	}
	free(w.real_root);
	free(w.seen);
	return w.error;
}
