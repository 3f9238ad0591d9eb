/*
 * renderers: turn a tree of manifests into objects.
 *
 * This is the one public header of the renderers library.
 *
 * YAML is read with the scalar rules that `kubectl apply -f` and the API
 * server use (sigs.k8s.io/yaml on go-yaml v2, i.e. YAML 1.1 resolution);
 * JSON with the same result a JSON decoder gives. See docs/manifests.md.
 */
#ifndef RENDERERS_RENDER_H
#define RENDERERS_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "diff/diff.h"
#include "util/err.h"

/* Largest manifest file read (bytes); larger ones are an error. */
#define RENDER_MAX_FILE_SIZE (16u << 20)

/* Nodes one YAML stream may produce by expanding aliases. */
#define RENDER_MAX_ALIAS_NODES 100000u

/* Nesting depth of one document. */
#define RENDER_MAX_DEPTH 512u

/* One document of a stream: a decoded value and where it starts. */
struct render_doc {
	json_t *value;     /* owned reference; never NULL */
	unsigned line;     /* 1-based line of the document's first node */
	unsigned column;   /* 1-based column of the document's first node */
};

struct render_docs {
	struct render_doc *items;
	size_t len;
	size_t alloc;
};

#define RENDER_DOCS_INIT {NULL, 0, 0}

void render_docs_release(struct render_docs *docs);

/*
 * Decode a YAML stream (several documents separated by ---) or a JSON text
 * (one value, or several concatenated, as kubectl accepts) held in
 * data[0..len). A stream whose first non-blank character is '{' or '['
 * is read as JSON, as kubectl's decoder does; anything else as YAML.
 *
 * Empty documents and documents that are null are dropped. Each document
 * may be any value here (checking that it is an object is the caller's
 * job). Appends the documents to *out.
 *
 * On error returns ERR_PARSE (malformed input, duplicate key, bad UTF-8,
 * NUL byte, unrepresentable value such as .inf) or ERR_LIMIT (alias
 * expansion or depth limit), with one message
 * "<name>:<line>:<column>: <cause>"; documents decoded before the error
 * are left in *out for the caller to release. `name` is used only in
 * messages.
 */
int render_parse(struct render_docs *out, const char *data, size_t len,
		 const char *name, struct err *err);

/*
 * Read a whole file into *out (caller releases it), refusing more than
 * `max` bytes (ERR_LIMIT). Messages name the file as `rel`.
 */
int render_read_file(struct buf *out, const char *path, const char *rel,
		     size_t max, struct err *err);

/* Options of the directory renderer. */
#define RENDER_DIR_OPTIONS_VERSION 1

struct render_dir_options {
	unsigned version;
	bool no_recurse;          /* only the top directory */
	const char *const *include;   /* NULL-terminated globs; NULL: all */
	const char *const *exclude;   /* NULL-terminated globs; NULL: none */
	size_t max_file_size;     /* 0: RENDER_MAX_FILE_SIZE */
};

#define RENDER_DIR_OPTIONS_INIT {RENDER_DIR_OPTIONS_VERSION, false, NULL, NULL, 0}

/*
 * The directory renderer: every *.yaml, *.yml and *.json file under `root`
 * (recursively, sorted by path, dot-directories and dot-files skipped,
 * symlinks followed only while they stay inside root), each document
 * turned into an object; kinds ending in "List" that have `items` are
 * expanded into their items. Each object needs apiVersion, kind and
 * metadata.name (or generateName); two objects with one identity are an
 * error naming both places. `root` may also be a single file.
 *
 * Objects are added to *out in that order, with origins relative to root
 * ("dir/file.yaml:12"). Every bad file is reported (one problem each), not
 * just the first; on any error returns a negative code and *out holds the
 * good objects for the caller to release.
 */
int render_dir(struct diff_objset *out, const char *root,
	       const struct render_dir_options *opts, struct err *err);

/* Options of the jsonnet renderer (renderers/jsonnet.c). */
struct render_jsonnet_options {
	const char *file;		  /* main file relative to root; NULL: the
					     only *.jsonnet at the top */
	const char *const *ext_str;	  /* "NAME=VALUE", NULL-terminated */
	const char *const *ext_code;	  /* "NAME=CODE" */
	const char *const *tla_str;	  /* top-level arguments, strings */
	const char *const *tla_code;	  /* top-level arguments, code */
	const char *const *jpath;	  /* library dirs, relative to root and
					     confined to it */
	size_t max_output;		  /* bytes; 0: 64 MiB */
};

/*
 * Evaluate a jsonnet program under `root` with the embedded libjsonnet.
 * The result may be one object, an array of objects, a List, or an
 * object whose values are objects (one per key, in key order); each
 * becomes an object of *out with origin "FILE". Imports outside root
 * are refused. Evaluation errors keep jsonnet's "file:line:col" message.
 */
int render_jsonnet(struct diff_objset *out, const char *root,
		   const struct render_jsonnet_options *opts, struct err *err);

/* Variables for substitution (renderers/subst.c). */
struct render_vars {
	const char *const *names;
	const char *const *values;
	size_t len;
};

/*
 * Flux-style post-build substitution in every string value (never in
 * keys) of every object: ${VAR}, ${VAR:=default}, ${VAR:-default}, and
 * $${VAR} for a literal ${VAR}. Objects annotated
 * `syncd.io/substitute: disabled` are left alone. With `strict`, an
 * undefined variable without default is an error naming the object and
 * the field path; otherwise it becomes "". Every problem is reported.
 */
int render_substitute(struct diff_objset *set, const struct render_vars *vars,
		      bool strict, struct err *err);

#endif
