/*
 * artifact.c: the helm and oci sources (source.h). A poll resolves what
 * the revision names now (a chart version from index.yaml or the tags,
 * then a digest), downloads and unpacks only what is not in the cache
 * yet, and keeps the last good tree when anything fails.
 *
 * Cache layout (<cache_dir>/<sha256(key)>, the key being the URL without
 * user information, and the chart's name for helm):
 *
 *   lock            flock(2): one writer at a time, shared by processes
 *   trees/<hex>     unpacked artifacts, by digest (a chart archive's
 *                   sha256, or an OCI manifest's): a version is pulled
 *                   once, whatever the number of polls or restarts
 *   tmp/            downloads and unpacks in progress
 *   state/<key>     the last rendered tree of one (revision, path)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <yaml.h>

#include "source/internal.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/log.h"
#include "util/sha256.h"

#include "util/banned.h" /* last */

#define HEX		   64
#define MAX_INDEX_VERSIONS 100000u
#define MAX_INDEX_EVENTS   20000000u
/* Trees other than the current ones are removed when this old. */
#define TREE_KEEP_S 3600

static const char *const helm_layer = "application/vnd.cncf.helm.chart."
				      "content.v1.tar+gzip";

/* One version of the chart, as index.yaml lists it. */
struct entry {
	char *version;
	char *digest; /* hex, or NULL */
	char *url;    /* the first of urls */
};

struct src_artifact {
	enum source_type type;
	bool oci;      /* an OCI registry (oci sources, oci:// charts) */
	char *url;     /* as given, no user information */
	char *display; /* for messages */
	char *chart;
	char *revision; /* the constraint, tag or digest; NULL: default */
	struct src_semver_range *range; /* when revision is a range */
	char *pin;			/* digest pin "sha256:HEX", or NULL */
	char *subpath;
	struct src_http_options http;
	struct strvec redirect_hosts; /* the options' copy */
	char *username, *password, *token, *ca_file;
	struct src_http *h;  /* chart repository */
	struct src_oci *reg; /* registry */
	uint64_t max_download, max_file;
	char *cache, *state_path;
	int lock_fd;
	/* The last good poll. */
	char revision_now[SOURCE_REVISION_MAX];
	char tree[SOURCE_TREE_MAX];
	char rendered[SOURCE_TREE_MAX];
	char *etag; /* of the index.yaml the last good poll read */
	unsigned long requests;
};

/* ---- small helpers ---- */

static bool is_hex64(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == HEX;
}

static char *xstrdup(const char *s, bool *oom)
{
	char *r;

	if (!s)
		return NULL;
	if (!(r = strdup(s)))
		*oom = true;
	return r;
}

/*
 * Is this revision a range rather than one version or tag? Anything an
 * exact version or a tag name cannot hold: operators, spaces, "||",
 * and the wildcards x, X and "*" as a version component.
 */
static bool is_range(const char *rev)
{
	if (strpbrk(rev, " <>=^~*|,!"))
		return true;
	for (const char *p = rev; *p; p++)
		if ((*p == 'x' || *p == 'X') && (p == rev || p[-1] == '.') &&
		    (!p[1] || p[1] == '.'))
			return true;
	return false;
}

static int cache_lock(struct src_artifact *s, struct err *err)
{
	return src_cache_lock(s->lock_fd, s->cache, s->display, 60000, err);
}

static void cache_unlock(struct src_artifact *s)
{
	flock(s->lock_fd, LOCK_UN);
}

static int fill_line(int fd, void *ctx)
{
	const char *line = ctx;

	return file_write_all(fd, line, strlen(line));
}

static void state_read(struct src_artifact *s)
{
	struct buf b = BUF_INIT;

	s->rendered[0] = '\0';
	if (file_read(&b, s->state_path, s->state_path, 256, NULL) == 0) {
		while (b.len && (b.ptr[b.len - 1] == '\n'))
			b.ptr[--b.len] = '\0';
		if (b.ptr && is_hex64(b.ptr))
			snprintf(s->rendered, sizeof(s->rendered), "%s", b.ptr);
	}
	buf_release(&b);
}

/* ---- trees ---- */

static char *tree_path(const struct src_artifact *s, const char *hex)
{
	char *r;

	if (asprintf(&r, "%s/trees/%s", s->cache, hex) < 0)
		return NULL;
	return r;
}

static bool tree_exists(const struct src_artifact *s, const char *hex)
{
	char *p = tree_path(s, hex);
	struct stat st;
	bool ok = p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode);

	free(p);
	return ok;
}

/*
 * Trees neither current, nor rendered, nor `keep`, and older than
 * TREE_KEEP_S (another process may still be rendering a newer one).
 */
static void prune_trees(struct src_artifact *s, const char *keep)
{
	char *dir = src_path_join(s->cache, "trees");
	time_t now = time(NULL);
	struct dirent *e;
	DIR *d;

	if (!dir || !(d = opendir(dir))) {
		free(dir);
		return;
	}
	while ((e = readdir(d))) {
		struct stat st;
		char *p;

		if (!is_hex64(e->d_name) || !strcmp(e->d_name, keep) ||
		    !strcmp(e->d_name, s->tree) ||
		    !strcmp(e->d_name, s->rendered))
			continue;
		if (!(p = src_path_join(dir, e->d_name)))
			continue;
		if (lstat(p, &st) == 0 && now - st.st_mtime > TREE_KEEP_S)
			src_remove_tree(p, NULL);
		free(p);
	}
	closedir(d);
	free(dir);
}

/* A private temporary name under <cache>/tmp. */
static char *tmp_path(const struct src_artifact *s, const char *what)
{
	static unsigned long seq;
	char *r;

	if (asprintf(&r, "%s/tmp/%s-%ld-%lu", s->cache, what, (long)getpid(),
		     __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED)) < 0)
		return NULL;
	return r;
}

/* Move an unpacked directory into trees/<hex>. */
static int tree_commit(struct src_artifact *s, const char *tmp, const char *hex,
		       struct err *err)
{
	char *final = tree_path(s, hex);
	int error = 0;

	if (!final)
		return err_set(err, ERR_NOMEM, "out of memory");
	if (rename(tmp, final) < 0) {
		if (errno == EEXIST || errno == ENOTEMPTY)
			/* Another process unpacked the same digest. */
			src_remove_tree(tmp, NULL);
		else
			error = err_set(err, ERR_IO, "%s: %s", final,
					err_errno_str(errno));
	}
	free(final);
	return error;
}

/* Unpack the .tar.gz `file` as tree `hex` (nothing when it exists). */
static int unpack_tgz(struct src_artifact *s, const char *file, const char *hex,
		      const char *what, struct err *err)
{
	struct src_archive_limits lim = {
		.max_bytes = s->max_download * 4,
		.max_file_bytes = s->max_file,
	};
	char *tmp;
	int error;

	if (tree_exists(s, hex))
		return 0;
	if (!(tmp = tmp_path(s, "tree")))
		return err_set(err, ERR_NOMEM, "out of memory");
	if (mkdir(tmp, 0700) < 0) {
		error = err_set(err, ERR_IO, "%s: %s", tmp,
				err_errno_str(errno));
	} else if ((error = src_untar_gz(file, tmp, what, &lim, err)) < 0) {
		src_remove_tree(tmp, NULL);
	} else {
		error = tree_commit(s, tmp, hex, err);
	}
	free(tmp);
	return error;
}

/* ---- chart repositories (index.yaml) ---- */

static void entries_release(struct entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].version);
		free(v[i].digest);
		free(v[i].url);
	}
	free(v);
}

/*
 * Read the versions of `chart` from index.yaml with libyaml's event
 * parser: nothing but that chart's list is kept, aliases are refused
 * (index.yaml files are written without them; an alias bomb stays a
 * clear error), and nesting and the number of events are bounded.
 *
 * The path that matters: root{entries}{CHART}[i]{version, digest,
 * urls[0]}, i.e. frames 1 (root mapping), 2 (entries), 3 (the chart's
 * list), 4 (one version), 5 (its urls).
 */
#define INDEX_MAX_DEPTH 64

struct frame {
	bool map;
	bool want_key; /* a mapping's next scalar is a key */
	char *key;     /* a mapping's current key (frames 1-4 only) */
};

struct index_reader {
	const struct src_artifact *s;
	struct frame f[INDEX_MAX_DEPTH + 1];
	int depth;
	struct entry *v;
	size_t n, alloc;
};

/* Frame d's current key is `k`. */
static bool key_is(const struct index_reader *r, int d, const char *k)
{
	return d >= 1 && d <= r->depth && r->f[d].map && r->f[d].key &&
	       !strcmp(r->f[d].key, k);
}

/* Are we in the chart's list (frame 3, the value of entries.CHART)? */
static bool in_chart(const struct index_reader *r)
{
	return r->depth >= 3 && !r->f[3].map && key_is(r, 1, "entries") &&
	       key_is(r, 2, r->s->chart) && r->f[2].map;
}

static int index_push(struct index_reader *r, bool map, struct err *err)
{
	if (r->depth == INDEX_MAX_DEPTH)
		return err_set(err, ERR_LIMIT,
			       "%s: index.yaml: nested "
			       "deeper than %d",
			       r->s->display, INDEX_MAX_DEPTH);
	r->depth++;
	r->f[r->depth] = (struct frame){.map = map, .want_key = map};
	if (map && r->depth == 4 && in_chart(r)) {
		if (r->n >= MAX_INDEX_VERSIONS)
			return err_set(err, ERR_LIMIT,
				       "%s: index.yaml: over "
				       "%u versions of chart %s",
				       r->s->display, MAX_INDEX_VERSIONS,
				       r->s->chart);
		if (r->n == r->alloc) {
			size_t na = r->alloc ? 2 * r->alloc : 64;
			struct entry *nv = realloc(r->v, na * sizeof(*nv));

			if (!nv)
				return err_set(err, ERR_NOMEM, "out of memory");
			r->v = nv;
			r->alloc = na;
		}
		r->v[r->n++] = (struct entry){0};
	}
	return 0;
}

/* A scalar or a collection ended: the parent's next scalar is a key. */
static void value_done(struct index_reader *r)
{
	if (r->depth >= 1 && r->f[r->depth].map)
		r->f[r->depth].want_key = true;
}

static void index_pop(struct index_reader *r)
{
	free(r->f[r->depth].key);
	r->f[r->depth].key = NULL;
	r->depth--;
	value_done(r);
}

static int index_scalar(struct index_reader *r, const char *v, struct err *err)
{
	struct frame *top = &r->f[r->depth];
	struct entry *e = r->n ? &r->v[r->n - 1] : NULL;
	char **slot = NULL;

	if (r->depth >= 1 && top->map && top->want_key) {
		top->want_key = false;
		if (r->depth <= 4) {
			free(top->key);
			if (!(top->key = strdup(v)))
				return err_set(err, ERR_NOMEM, "out of memory");
		}
		return 0;
	}
	if (e && r->depth == 4 && in_chart(r)) {
		if (key_is(r, 4, "version"))
			slot = &e->version;
		else if (key_is(r, 4, "digest"))
			slot = &e->digest;
	} else if (e && r->depth == 5 && !top->map && key_is(r, 4, "urls") &&
		   in_chart(r)) {
		slot = &e->url;
	}
	value_done(r);
	if (slot && !*slot && !(*slot = strdup(v)))
		return err_set(err, ERR_NOMEM, "out of memory");
	return 0;
}

static int read_index(struct src_artifact *s, const struct buf *body,
		      struct entry **out, size_t *nout, struct err *err)
{
	struct index_reader r = {.s = s};
	unsigned long events = 0;
	yaml_parser_t p;
	yaml_event_t ev;
	bool done = false;
	int error = 0;

	*out = NULL;
	*nout = 0;
	if (!yaml_parser_initialize(&p))
		return err_set(err, ERR_NOMEM, "out of memory");
	yaml_parser_set_input_string(&p, (const unsigned char *)body->ptr,
				     body->len);
	while (!done && !error) {
		if (!yaml_parser_parse(&p, &ev)) {
			error = err_set(err, ERR_PARSE,
					"%s: index.yaml: line %zu: %s",
					s->display, p.problem_mark.line + 1,
					p.problem ? p.problem : "bad YAML");
			break;
		}
		if (++events > MAX_INDEX_EVENTS)
			error = err_set(err, ERR_LIMIT,
					"%s: index.yaml: over "
					"%u YAML events",
					s->display, MAX_INDEX_EVENTS);
		else
			switch (ev.type) {
			case YAML_ALIAS_EVENT:
				error = err_set(err, ERR_INVALID,
						"%s: index.yaml: line %zu: "
						"YAML aliases are not allowed "
						"in an index",
						s->display,
						ev.start_mark.line + 1);
				break;
			case YAML_STREAM_END_EVENT:
				done = true;
				break;
			case YAML_MAPPING_START_EVENT:
			case YAML_SEQUENCE_START_EVENT:
				error = index_push(
					&r, ev.type == YAML_MAPPING_START_EVENT,
					err);
				break;
			case YAML_MAPPING_END_EVENT:
			case YAML_SEQUENCE_END_EVENT:
				if (r.depth > 0)
					index_pop(&r);
				break;
			case YAML_SCALAR_EVENT:
				error = index_scalar(
					&r, (const char *)ev.data.scalar.value,
					err);
				break;
			default:
				break;
			}
		yaml_event_delete(&ev);
	}
	while (r.depth > 0)
		index_pop(&r);
	yaml_parser_delete(&p);
	if (error < 0) {
		entries_release(r.v, r.n);
		return error;
	}
	*out = r.v;
	*nout = r.n;
	return 0;
}

/* ---- choosing a version ---- */

/*
 * The entry of versions[0..n) the revision names: the newest in range,
 * or the one equal to the exact version. -1 when none.
 */
static long choose(const struct src_artifact *s, const char *const *versions,
		   size_t n)
{
	struct src_semver want, v;

	if (s->range)
		return src_semver_newest(s->range, versions, n);
	if (src_semver_parse(&want, s->revision, NULL) < 0) {
		for (size_t i = 0; i < n; i++)
			if (!strcmp(versions[i], s->revision))
				return (long)i;
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (src_semver_parse(&v, versions[i], NULL) == 0 &&
		    !src_semver_cmp(&want, &v) && !strcmp(want.build, v.build))
			return (long)i;
	return -1;
}

static const char *wanted(const struct src_artifact *s)
{
	return s->revision ? s->revision : "the newest stable version";
}

static int check_pin(const struct src_artifact *s, const char *what,
		     const char *hex, struct err *err)
{
	if (s->pin && strcmp(s->pin + 7, hex))
		return err_set(err, ERR_INVALID,
			       "%s: %s has digest "
			       "sha256:%s, not the pinned %s; refused",
			       s->display, what, hex, s->pin);
	return 0;
}

static void set_result(struct src_artifact *s, struct source_poll_result *r)
{
	snprintf(r->revision, sizeof(r->revision), "%s", s->revision_now);
	snprintf(r->tree, sizeof(r->tree), "%s", s->tree);
	snprintf(r->rendered_tree, sizeof(r->rendered_tree), "%s", s->rendered);
	r->changed = strcmp(s->tree, s->rendered) != 0;
}

/* ---- polling a chart repository ---- */

/* A URL of the index (absolute, "/path" or relative to the repository's
 * folder), resolved into *out. */
static int archive_url(const struct src_artifact *s, const char *u,
		       struct buf *out, struct err *err)
{
	struct buf base = BUF_INIT;
	int error;

	buf_reset(out);
	if (buf_addf(&base, "%s/", s->url) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	error = src_url_resolve(out, buf_cstr(&base), u, err);
	buf_release(&base);
	return error;
}

static int http_status(const struct src_artifact *s, const char *what,
		       long status, struct err *err)
{
	if (status == 401 || status == 403)
		return err_set(err, ERR_INVALID,
			       "%s: %s: authentication "
			       "refused (%ld)",
			       s->display, what, status);
	if (status == 404)
		return err_set(err, ERR_NOTFOUND, "%s: %s: not found (404)",
			       s->display, what);
	return err_set(err, ERR_IO, "%s: %s: HTTP status %ld", s->display, what,
		       status);
}

/* Download and unpack one chart archive of the index. */
static int pull_chart(struct src_artifact *s, const struct entry *e,
		      char hex[HEX + 1], bool *fetched, struct err *err)
{
	struct src_http_response resp = {0};
	struct src_http_request req = {0};
	struct buf url = BUF_INIT;
	char *file = NULL, *what = NULL;
	int error;

	if (!e->url)
		return err_set(err, ERR_INVALID,
			       "%s: chart %s %s: index.yaml "
			       "gives no URL",
			       s->display, s->chart, e->version);
	if ((error = archive_url(s, e->url, &url, err)) < 0)
		goto out;
	if (!(file = tmp_path(s, "chart")) ||
	    asprintf(&what, "chart %s-%s.tgz", s->chart, e->version) < 0) {
		what = NULL;
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	/* Credentials go to the repository's own host only, as helm's. */
	req.url = buf_cstr(&url);
	req.no_auth = !src_url_same_origin(s->url, req.url);
	req.max_bytes = s->max_download;
	req.to_file = file;
	error = src_http_do(s->h, &req, &resp, err);
	*fetched = true;
	if (error < 0)
		goto out;
	if (resp.status != 200) {
		error = http_status(s, what, resp.status, err);
		goto out;
	}
	if (e->digest && strcmp(e->digest, resp.body_sha256)) {
		error = err_set(err, ERR_INVALID,
				"%s: %s: digest sha256:%s "
				"differs from index.yaml's sha256:%s; refused",
				s->display, what, resp.body_sha256, e->digest);
		goto out;
	}
	if ((error = check_pin(s, what, resp.body_sha256, err)) < 0)
		goto out;
	memcpy(hex, resp.body_sha256, HEX + 1);
	error = unpack_tgz(s, file, hex, what, err);
out:
	if (file)
		unlink(file);
	src_http_response_release(&resp);
	buf_release(&url);
	free(file);
	free(what);
	return error;
}

static int poll_repo(struct src_artifact *s, struct source_poll_result *r,
		     struct err *err)
{
	struct src_http_response resp = {0};
	struct src_http_request req = {0};
	struct buf url = BUF_INIT;
	struct entry *v = NULL;
	const char **names = NULL;
	char hex[HEX + 1], rev[SOURCE_REVISION_MAX];
	size_t n = 0;
	long pick;
	int error;

	if ((error = archive_url(s, "index.yaml", &url, err)) < 0)
		return error;
	req.url = buf_cstr(&url);
	/* The last good tree gone (a cleaned cache): ask for the index. */
	req.if_none_match =
		s->tree[0] && tree_exists(s, s->tree) ? s->etag : NULL;
	req.max_bytes = s->max_download;
	error = src_http_do(s->h, &req, &resp, err);
	r->contacted = true;
	if (error < 0)
		goto out;
	if (resp.status == 304 && req.if_none_match) {
		set_result(s, r);
		goto out;
	}
	if (resp.status != 200) {
		error = http_status(s, "index.yaml", resp.status, err);
		goto out;
	}
	if ((error = read_index(s, &resp.body, &v, &n, err)) < 0)
		goto out;
	if (!n) {
		error = err_set(err, ERR_NOTFOUND,
				"%s: index.yaml has no "
				"chart %s",
				s->display, s->chart);
		goto out;
	}
	if (!(names = calloc(n, sizeof(*names)))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		names[i] = v[i].version ? v[i].version : "";
	if ((pick = choose(s, names, n)) < 0) {
		error = err_set(err, ERR_NOTFOUND,
				"%s: no version of chart "
				"%s matches %s",
				s->display, s->chart, wanted(s));
		goto out;
	}
	if (v[pick].digest && !is_hex64(v[pick].digest)) {
		free(v[pick].digest);
		v[pick].digest = NULL;
	}
	if (v[pick].digest) {
		memcpy(hex, v[pick].digest, sizeof(hex));
		if ((error = check_pin(s, "the chart", hex, err)) < 0)
			goto out;
	}
	if (!v[pick].digest || !tree_exists(s, hex)) {
		if ((error = cache_lock(s, err)) < 0)
			goto out;
		error = pull_chart(s, &v[pick], hex, &r->fetched, err);
		cache_unlock(s);
		if (error < 0)
			goto out;
	}
	snprintf(rev, sizeof(rev), "%s@sha256:%s", v[pick].version, hex);
	memcpy(s->revision_now, rev, sizeof(rev));
	memcpy(s->tree, hex, sizeof(hex));
	free(s->etag);
	s->etag = resp.etag ? strdup(resp.etag) : NULL;
	prune_trees(s, hex);
	set_result(s, r);
out:
	src_http_response_release(&resp);
	buf_release(&url);
	entries_release(v, n);
	free(names);
	return error;
}

/* ---- polling a registry ---- */

/* A file layer's title: a relative path with no "." or ".." part. */
static bool safe_title(const char *t)
{
	const char *p = t;

	if (!*t || *t == '/' || strlen(t) > 255)
		return false;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (!n || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p)
			p++;
	}
	return true;
}

static bool is_tgz_type(const char *mt)
{
	size_t n = strlen(mt);

	return (n >= 8 && !strcmp(mt + n - 8, "tar+gzip")) ||
	       (n >= 8 && !strcmp(mt + n - 8, "tar.gzip"));
}

/* Write one titled layer as a file of the tree being made. */
static int pull_file(struct src_artifact *s, const char *dir, const char *title,
		     const char *digest, uint64_t size, uint64_t max,
		     struct err *err)
{
	char *path = src_path_join(dir, title), *slash;
	int error = 0;

	if (!path)
		return err_set(err, ERR_NOMEM, "out of memory");
	if ((slash = strrchr(path, '/')) && slash > path + strlen(dir)) {
		*slash = '\0';
		error = src_mkdir_p(path, 0755, err);
		*slash = '/';
	}
	if (!error && access(path, F_OK) == 0)
		error = err_set(err, ERR_INVALID,
				"%s: layer %s: \"%s\" "
				"appears twice",
				s->display, digest, title);
	if (!error)
		error = src_oci_blob(s->reg, digest, size, max, path, err);
	if (!error)
		chmod(path, 0644);
	free(path);
	return error;
}

/* Download the layers of manifest `digest` into trees/<hex>. */
static int pull_artifact(struct src_artifact *s, const char *digest,
			 struct err *err)
{
	const char *hex = digest + 7;
	json_t *m = NULL, *layers, *l;
	uint64_t left = s->max_download;
	char *dir = NULL, *file = NULL;
	size_t i, archives = 0, used = 0;
	int error;

	if ((error = src_oci_manifest(s->reg, digest, &m, err)) < 0)
		return error;
	layers = json_object_get(m, "layers");
	if (!json_is_array(layers) || !json_array_size(layers)) {
		error = err_set(err, ERR_INVALID,
				"%s@%s: the manifest has no "
				"layers",
				s->display, digest);
		goto out;
	}
	if (!(dir = tmp_path(s, "tree")) || !(file = tmp_path(s, "layer"))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if (mkdir(dir, 0700) < 0) {
		error = err_set(err, ERR_IO, "%s: %s", dir,
				err_errno_str(errno));
		goto out;
	}
	json_array_foreach(layers, i, l)
	{
		const char *mt =
			json_string_value(json_object_get(l, "mediaType"));
		const char *ld =
			json_string_value(json_object_get(l, "digest"));
		json_t *js = json_object_get(l, "size");
		const char *title = json_string_value(
			json_object_get(json_object_get(l, "annotations"),
					"org.opencontainers.image.title"));
		uint64_t size =
			json_is_integer(js) && json_integer_value(js) > 0
				? (uint64_t)json_integer_value(js)
				: 0;
		bool chart = s->type == SOURCE_HELM;

		if (!mt || !ld || !source_digest_valid(ld)) {
			error = err_set(err, ERR_INVALID,
					"%s@%s: layer %zu: no "
					"media type or digest",
					s->display, digest, i);
			goto out;
		}
		if (chart && strcmp(mt, helm_layer))
			continue; /* provenance, config, ... */
		if (size > left) {
			error = err_set(err, ERR_LIMIT,
					"%s@%s: layer %s is "
					"%llu bytes, over the %llu left of the "
					"artifact's limit; refused",
					s->display, digest, ld,
					(unsigned long long)size,
					(unsigned long long)left);
			goto out;
		}
		if (chart || is_tgz_type(mt)) {
			char *what = NULL;

			if (++archives > 1) {
				error = err_set(err, ERR_INVALID,
						"%s@%s: more "
						"than one archive layer; one "
						"is supported",
						s->display, digest);
				goto out;
			}
			if ((error = src_oci_blob(s->reg, ld, size, left, file,
						  err)) < 0)
				goto out;
			if (asprintf(&what, "%s@%s layer %s", s->display,
				     digest, ld) < 0) {
				unlink(file);
				error = err_set(err, ERR_NOMEM,
						"out of memory");
				goto out;
			}
			{
				struct src_archive_limits lim = {
					.max_bytes = s->max_download * 4,
					.max_file_bytes = s->max_file,
				};

				error = src_untar_gz(file, dir, what, &lim,
						     err);
			}
			free(what);
			unlink(file);
			if (error < 0)
				goto out;
		} else if (title && safe_title(title)) {
			if ((error = pull_file(s, dir, title, ld, size, left,
					       err)) < 0)
				goto out;
		} else {
			error = err_set(err, ERR_INVALID,
					"%s@%s: layer %s (%s) "
					"is neither a tar+gzip archive nor a "
					"file with a safe title",
					s->display, digest, ld, mt);
			goto out;
		}
		used++;
		left -= size < left ? size : left;
	}
	if (!used) {
		error = err_set(err, ERR_INVALID, "%s@%s: no %s layer",
				s->display, digest,
				s->type == SOURCE_HELM ? "Helm chart"
						       : "usable");
		goto out;
	}
	error = tree_commit(s, dir, hex, err);
	free(dir);
	dir = NULL;
out:
	if (dir) {
		src_remove_tree(dir, NULL);
		free(dir);
	}
	free(file);
	json_decref(m);
	return error;
}

/* Tag -> version: Helm writes "+" as "_" in OCI tags. */
static void tag_to_version(char *t)
{
	for (; *t; t++)
		if (*t == '_')
			*t = '+';
}

static int poll_registry(struct src_artifact *s, struct source_poll_result *r,
			 struct err *err)
{
	struct strvec tags = STRVEC_INIT;
	char digest[SRC_DIGEST_MAX], label[SOURCE_REVISION_MAX] = "";
	char *tag = NULL;
	int error = 0;

	r->contacted = true;
	if (s->revision && source_digest_valid(s->revision) &&
	    s->type == SOURCE_OCI) {
		snprintf(digest, sizeof(digest), "%s", s->revision);
		r->contacted = false;
	} else {
		if (s->range) {
			long pick;

			if ((error = src_oci_tags(s->reg, &tags, err)) < 0)
				goto out;
			for (size_t i = 0; i < tags.len; i++)
				if (s->type == SOURCE_HELM)
					tag_to_version(tags.v[i]);
			pick = choose(s, (const char *const *)tags.v, tags.len);
			if (pick < 0) {
				error = err_set(err, ERR_NOTFOUND,
						"%s: no "
						"tag matches %s",
						s->display, wanted(s));
				goto out;
			}
			tag = strdup(tags.v[pick]);
		} else {
			tag = strdup(s->revision ? s->revision : "latest");
		}
		if (!tag) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			goto out;
		}
		snprintf(label, sizeof(label), "%s", tag);
		for (char *p = tag; *p; p++)
			if (*p == '+')
				*p = '_';
		if ((error = src_oci_resolve(s->reg, tag, digest, err)) < 0)
			goto out;
	}
	if ((error = check_pin(s, label[0] ? label : "the artifact", digest + 7,
			       err)) < 0)
		goto out;
	if (!tree_exists(s, digest + 7)) {
		if ((error = cache_lock(s, err)) < 0)
			goto out;
		r->contacted = r->fetched = true;
		error = pull_artifact(s, digest, err);
		cache_unlock(s);
		if (error < 0)
			goto out;
	}
	if (label[0])
		snprintf(s->revision_now, sizeof(s->revision_now), "%s@%s",
			 label, digest);
	else
		snprintf(s->revision_now, sizeof(s->revision_now), "%s",
			 digest);
	snprintf(s->tree, sizeof(s->tree), "%s", digest + 7);
	prune_trees(s, s->tree);
	set_result(s, r);
out:
	strvec_release(&tags);
	free(tag);
	return error;
}

int src_artifact_poll(struct src_artifact *s, struct source_poll_result *r,
		      struct err *err)
{
	unsigned long before;
	int error;

	memset(r, 0, sizeof(*r));
	before = s->h	  ? src_http_requests(s->h)
		 : s->reg ? src_oci_requests(s->reg)
			  : 0;
	if (s->oci) {
		if (!s->reg) {
			struct buf ref = BUF_INIT;

			if (s->type == SOURCE_HELM)
				buf_addf(&ref, "%s/%s", s->url, s->chart);
			else
				buf_adds(&ref, s->url);
			error = ref.ptr ? src_oci_open(&s->reg, ref.ptr,
						       &s->http, err)
					: err_set(err, ERR_NOMEM,
						  "out of memory");
			buf_release(&ref);
			if (error < 0)
				return error;
			before = 0;
		}
		error = poll_registry(s, r, err);
		s->requests += src_oci_requests(s->reg) - before;
	} else {
		error = poll_repo(s, r, err);
		s->requests += src_http_requests(s->h) - before;
	}
	r->requests = s->requests;
	return error;
}

/* ---- checkout, state ---- */

/* The chart's directory: the tree's one top-level folder with a
 * Chart.yaml (charts are packed as NAME/...). */
static int chart_root(const struct src_artifact *s, const char *tree,
		      char **out, struct err *err)
{
	struct dirent *e;
	DIR *d = opendir(tree);
	int found = 0;

	*out = NULL;
	if (!d)
		return err_set(err, ERR_IO, "%s: %s", tree,
			       err_errno_str(errno));
	while ((e = readdir(d))) {
		char *p, *cy = NULL;
		struct stat st;

		if (e->d_name[0] == '.' ||
		    !(p = src_path_join(tree, e->d_name)))
			continue;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
		    (cy = src_path_join(p, "Chart.yaml")) &&
		    lstat(cy, &st) == 0 && S_ISREG(st.st_mode)) {
			found++;
			free(*out);
			*out = p;
			p = NULL;
		}
		free(cy);
		free(p);
	}
	closedir(d);
	if (found == 1)
		return 0;
	free(*out);
	*out = NULL;
	return err_set(err, ERR_INVALID, "%s: the chart archive holds %s",
		       s->display,
		       found ? "more than one chart" : "no NAME/Chart.yaml");
}

int src_artifact_checkout(struct src_artifact *s, char **dir, struct err *err)
{
	char *root, *p;
	struct stat st;
	int error = 0;

	*dir = NULL;
	if (!s->tree[0])
		return err_set(err, ERR_INVALID, "%s: nothing polled yet",
			       s->display);
	if (!(root = tree_path(s, s->tree)))
		return err_set(err, ERR_NOMEM, "out of memory");
	if (s->type == SOURCE_HELM) {
		error = chart_root(s, root, &p, err);
		free(root);
		if (error < 0)
			return error;
		root = p;
	}
	if (s->subpath) {
		p = src_path_join(root, s->subpath);
		free(root);
		if (!(root = p))
			return err_set(err, ERR_NOMEM, "out of memory");
		if (lstat(root, &st) < 0 || !S_ISDIR(st.st_mode)) {
			free(root);
			return err_set(err, ERR_NOTFOUND,
				       "%s: path %s is not "
				       "a folder of %s",
				       s->display, s->subpath, s->revision_now);
		}
	}
	*dir = root;
	return 0;
}

int src_artifact_mark_rendered(struct src_artifact *s, const char *tree,
			       struct err *err)
{
	char line[HEX + 2];
	int error;

	if (!tree || !is_hex64(tree))
		return err_set(err, ERR_INVALID, "%s: not a tree id",
			       tree ? tree : "(null)");
	snprintf(line, sizeof(line), "%s\n", tree);
	if ((error = cache_lock(s, err)) < 0)
		return error;
	error = file_replace(s->state_path, fill_line, line, err);
	cache_unlock(s);
	if (!error)
		memcpy(s->rendered, tree, HEX + 1);
	return error;
}

const char *src_artifact_url(const struct src_artifact *s)
{
	return s->display;
}

const char *src_artifact_cache_path(const struct src_artifact *s)
{
	return s->cache;
}

/* ---- open / free ---- */

/* A secret from a file or a variable, or NULL. */
static int read_secret(char **out, const char *file, const char *env,
		       struct err *err)
{
	struct buf b = BUF_INIT;
	int error;

	*out = NULL;
	if (file) {
		if ((error = file_read_secret(&b, file, 64 * 1024, err)) < 0)
			return error;
		*out = buf_detach(&b, NULL);
		return 0;
	}
	if (env) {
		const char *v = getenv(env);

		if (!v)
			return err_set(err, ERR_USAGE,
				       "environment variable "
				       "%s is not set",
				       env);
		if (!(*out = strdup(v)))
			return err_set(err, ERR_NOMEM, "out of memory");
	}
	return 0;
}

static int check_url(struct src_artifact *s, const char *url, struct err *err)
{
	const char *host;

	if (!strncmp(url, "oci://", 6))
		s->oci = true;
	else if (s->type == SOURCE_OCI ||
		 (strncmp(url, "https://", 8) && strncmp(url, "http://", 7)))
		return err_set(err, ERR_USAGE, "%s: %s", url,
			       s->type == SOURCE_OCI
				       ? "an OCI source is oci://HOST/NAME"
				       : "a chart repository is https://, "
					 "http:// or oci://");
	host = strstr(url, "://") + 3;
	if (memchr(host, '@', strcspn(host, "/")))
		return err_set(err, ERR_USAGE,
			       "%s: credentials inside the "
			       "URL are refused; use usernameFile and "
			       "passwordFile",
			       s->type == SOURCE_OCI ? "oci source"
						     : "chart repository");
	if (!strncmp(url, "http://", 7))
		s->http.plain_http = true;
	return 0;
}

static bool chart_name_ok(const char *c)
{
	if (!*c || strlen(c) > 250 || *c == '.')
		return false;
	for (; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' ||
		      *c == '.'))
			return false;
	return true;
}

/* Leftovers of a process that died while downloading. */
static void clean_tmp(struct src_artifact *s)
{
	char *dir = src_path_join(s->cache, "tmp");
	struct dirent *e;
	DIR *d;

	if (!dir || !(d = opendir(dir))) {
		free(dir);
		return;
	}
	while ((e = readdir(d))) {
		char *p;
		long pid;

		if (e->d_name[0] == '.' || !(p = src_path_join(dir, e->d_name)))
			continue;
		/* NAME-PID-SEQ: a live process's own are left alone. */
		const char *dash = strchr(e->d_name, '-');

		pid = dash ? strtol(dash + 1, NULL, 10) : 0;
		if (pid <= 0 || (kill((pid_t)pid, 0) < 0 && errno == ESRCH) ||
		    pid == (long)getpid())
			src_remove_tree(p, NULL);
		free(p);
	}
	closedir(d);
	free(dir);
}

int src_artifact_open(struct src_artifact **out, const struct source_options *o,
		      struct err *err)
{
	struct src_artifact *s;
	struct buf b = BUF_INIT, key = BUF_INIT;
	uint8_t d[SHA256_DIGEST_SIZE];
	char hex[HEX + 1], *base = NULL, *p = NULL;
	bool oom = false;
	int error = 0;

	*out = NULL;
	if (!o->url || !*o->url)
		return err_set(err, ERR_USAGE, "%s source: missing URL",
			       source_type_names[o->type]);
	if (!(s = calloc(1, sizeof(*s))))
		return err_set(err, ERR_NOMEM, "out of memory");
	s->lock_fd = -1;
	s->type = o->type;
	s->http.plain_http = o->plain_http;
	if ((error = check_url(s, o->url, err)) < 0)
		goto out;
	if (s->type == SOURCE_HELM && (!o->chart || !chart_name_ok(o->chart))) {
		error = err_set(err, ERR_USAGE, "%s: %s", o->url,
				o->chart ? "not a valid chart name"
					 : "a helm source needs a chart");
		goto out;
	}
	if (s->type == SOURCE_OCI && o->chart) {
		error = err_set(err, ERR_USAGE,
				"%s: chart applies to helm "
				"sources only",
				o->url);
		goto out;
	}
	if (o->digest && !source_digest_valid(o->digest)) {
		error = err_set(err, ERR_USAGE,
				"%s: digest \"%s\" is not "
				"sha256: and 64 lower-case hex digits",
				o->url, o->digest);
		goto out;
	}
	s->url = xstrdup(o->url, &oom);
	while (s->url && strlen(s->url) > 6 &&
	       s->url[strlen(s->url) - 1] == '/')
		s->url[strlen(s->url) - 1] = '\0';
	s->chart = xstrdup(o->chart, &oom);
	s->revision =
		xstrdup(o->revision && *o->revision ? o->revision : NULL, &oom);
	s->pin = xstrdup(o->digest, &oom);
	if (o->subpath) {
		const char *sp = o->subpath;

		while (*sp == '/' || (sp[0] == '.' && sp[1] == '/'))
			sp += *sp == '/' ? 1 : 2;
		if (strstr(sp, "..")) {
			error = err_set(err, ERR_USAGE,
					"%s: the path may not "
					"contain ..",
					o->subpath);
			goto out;
		}
		if (*sp && strcmp(sp, "."))
			s->subpath = xstrdup(sp, &oom);
	}
	if (oom)
		goto nomem;
	if (s->type == SOURCE_HELM)
		error = buf_addf(&b, s->oci ? "%s/%s" : "%s (chart %s)", s->url,
				 s->chart);
	else
		error = buf_adds(&b, s->url);
	if (error < 0)
		goto nomem;
	s->display = buf_detach(&b, NULL);
	if ((s->type == SOURCE_HELM && !s->oci) ||
	    (s->revision && is_range(s->revision))) {
		if ((error = src_semver_range_parse(
			     &s->range, s->revision ? s->revision : "*", err)) <
		    0)
			goto out;
		if (s->revision && !is_range(s->revision)) {
			src_semver_range_free(s->range);
			s->range = NULL;
		}
	}
	if (s->type == SOURCE_HELM && s->oci && !s->revision &&
	    (error = src_semver_range_parse(&s->range, "*", err)) < 0)
		goto out;
	if (s->revision && s->type == SOURCE_HELM &&
	    source_digest_valid(s->revision)) {
		error = err_set(err, ERR_USAGE,
				"%s: a chart's revision is a "
				"version or range; pin a digest with digest:",
				s->display);
		goto out;
	}
	/* Credentials. */
	if (o->auth.username && o->auth.username_file) {
		error = err_set(err, ERR_USAGE,
				"give either a username or a "
				"username file, not both");
		goto out;
	}
	if (o->auth.username_file) {
		if ((error = src_read_username(&s->username,
					       o->auth.username_file, err)) < 0)
			goto out;
	} else {
		s->username = xstrdup(o->auth.username, &oom);
	}
	if ((error = read_secret(&s->password, o->auth.password_file,
				 o->auth.password_env, err)) < 0 ||
	    (error = read_secret(&s->token, o->auth.token_file,
				 o->auth.token_env, err)) < 0)
		goto out;
	if (o->auth.ca_file && access(o->auth.ca_file, R_OK) < 0) {
		error = err_set(err, ERR_INVALID, "CA file %s: %s",
				o->auth.ca_file, err_errno_str(errno));
		goto out;
	}
	if (o->auth.ssh_key_file || o->verify.allowed_signers_file ||
	    o->verify.gpg_keyring_file) {
		error = err_set(err, ERR_USAGE,
				"%s: SSH keys and commit "
				"signatures apply to git sources only",
				s->display);
		goto out;
	}
	s->ca_file = xstrdup(o->auth.ca_file, &oom);
	if (oom)
		goto nomem;
	s->http.username = s->username;
	s->http.password = s->password;
	s->http.token = s->token;
	s->http.ca_file = s->ca_file;
	s->http.timeout_ms = o->fetch_timeout_ms;
	for (const char *const *rh = o->redirect_hosts; rh && *rh; rh++)
		if (strvec_push(&s->redirect_hosts, *rh) < 0)
			goto nomem;
	s->http.redirect_hosts = (const char *const *)s->redirect_hosts.v;
	s->max_download = o->max_repo_bytes ? o->max_repo_bytes
					    : SOURCE_DEFAULT_MAX_ARTIFACT_BYTES;
	s->max_file = o->max_blob_bytes ? o->max_blob_bytes
					: SOURCE_GIT_DEFAULT_MAX_BLOB_BYTES;
	if (!s->oci && (error = src_http_new(&s->h, &s->http, err)) < 0)
		goto out;

	/* The cache. */
	if (o->cache_dir && *o->cache_dir) {
		if (!(base = strdup(o->cache_dir)))
			goto nomem;
	} else if ((error = src_default_cache_dir(&base, err)) < 0) {
		goto out;
	}
	if (buf_addf(&key, "%s %s %s", source_type_names[s->type], s->url,
		     s->chart ? s->chart : "") < 0)
		goto nomem;
	sha256(key.ptr, key.len, d);
	hex_encode(d, sizeof(d), hex);
	if (!(s->cache = src_path_join(base, hex)))
		goto nomem;
	buf_reset(&key);
	if (buf_addf(&key, "%s%c%s", s->revision ? s->revision : "", '\0',
		     s->subpath ? s->subpath : "") < 0)
		goto nomem;
	sha256(key.ptr, key.len, d);
	hex_encode(d, sizeof(d), hex);
	if (asprintf(&s->state_path, "%s/state/%s", s->cache, hex) < 0) {
		s->state_path = NULL;
		goto nomem;
	}
	for (const char *sub = "trees\0tmp\0state\0"; *sub;
	     sub += strlen(sub) + 1) {
		free(p);
		if (!(p = src_path_join(s->cache, sub)))
			goto nomem;
		if ((error = src_mkdir_p(p, 0700, err)) < 0)
			goto out;
	}
	/* State files a killed syncd left half-made (p is .../state). */
	file_sweep_temps(p);
	free(p);
	if (!(p = src_path_join(s->cache, "lock")))
		goto nomem;
	if ((s->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		error = err_set(err, ERR_IO, "%s: %s", p, err_errno_str(errno));
		goto out;
	}
	if ((error = cache_lock(s, err)) < 0)
		goto out;
	clean_tmp(s);
	state_read(s);
	cache_unlock(s);
	goto out;
nomem:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	buf_release(&b);
	buf_release(&key);
	free(base);
	free(p);
	if (error < 0) {
		src_artifact_free(s);
		return error;
	}
	*out = s;
	return 0;
}

void src_artifact_free(struct src_artifact *s)
{
	if (!s)
		return;
	src_http_free(s->h);
	src_oci_free(s->reg);
	src_semver_range_free(s->range);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	file_secret_free(s->password);
	file_secret_free(s->token);
	free(s->username);
	free(s->ca_file);
	free(s->url);
	free(s->display);
	free(s->chart);
	free(s->revision);
	free(s->pin);
	free(s->subpath);
	free(s->cache);
	free(s->state_path);
	free(s->etag);
	strvec_release(&s->redirect_hosts);
	free(s);
}
