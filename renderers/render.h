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

/* Objects one app may render (render_app); more is an error. */
#define RENDER_MAX_OBJECTS 25000u

/* Entries the directory renderer looks at (files, directories and links
 * followed, each time it meets them); more is an error. */
#define RENDER_MAX_ENTRIES 100000u

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
 * ("dir/file.yaml:12"). A manifest that is a Git LFS pointer is an error
 * (LFS content is never fetched); more than RENDER_MAX_ENTRIES entries
 * walked is ERR_LIMIT. Every bad file is reported (one problem each), not
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
 * Whether s[0..n) is a substitution variable name as Flux takes it:
 * [_a-zA-Z][_a-zA-Z0-9]* (for variables files, --var and --plugin-env).
 */
bool render_var_name(const char *s, size_t n);

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

/* The annotation that opts an object out of substitution. */
#define RENDER_ANN_SUBSTITUTE "syncd.io/substitute"


/*
 * Tool-based renderers and the one entry point that picks a renderer
 * (renderers/kustomize.c, helm.c, exec.c, detect.c). Tools run through
 * util/proc.h: argv only, no shell, a timeout, a cap on stdout, and an
 * environment of PATH, HOME and TMPDIR only (plus what a renderer names),
 * so credentials in syncd's environment never reach a tool.
 */

/* Default timeout of one tool run, and the cap on what it prints. */
#define RENDER_TOOL_TIMEOUT_MS 60000u
#define RENDER_TOOL_MAX_OUTPUT (64u << 20)

/* Longest argv a tool renderer builds (entries, with the NULL). */
#define RENDER_MAX_ARGV 512u

enum render_kind {
	RENDER_AUTO = 0,
	RENDER_DIRECTORY,
	RENDER_KUSTOMIZE,
	RENDER_HELM,
	RENDER_JSONNET,
	RENDER_EXEC,
};

/* "auto", "directory", ...; NULL for an unknown value. */
const char *render_kind_name(enum render_kind kind);

/* Parse a --renderer value. ERR_USAGE naming the choices when unknown. */
int render_kind_parse(enum render_kind *out, const char *name,
		      struct err *err);

/*
 * What `auto` picks for `root`, from the names at its top only:
 * kustomization.yaml, kustomization.yml or Kustomization -> kustomize;
 * Chart.yaml -> helm; a .jsonnet file and no .yaml or .yml file ->
 * jsonnet; anything else (and a single file) -> directory. Dot-files are
 * ignored. Fails only when root cannot be read.
 */
int render_detect(enum render_kind *out, const char *root, struct err *err);

/* What a renderer may know about the app (exec plugins, helm). */
struct render_app_info {
	const char *name;      /* NULL: the base name of root */
	const char *namespace; /* NULL: none given */
	const char *revision;  /* commit id; NULL for a local directory */
	const char *path;      /* the app's path as the user gave it; names
				  the app in messages and origins; NULL:
				  root */
};

/*
 * kustomize: `kustomize build DIR`, or `kubectl kustomize DIR` when no
 * kustomize binary is on PATH. Never relaxes kustomize's root-only load
 * restrictor, and never enables helm inflation, exec or alpha plugins.
 */
struct render_kustomize_options {
	const char *bin;       /* program; a name ending in "kubectl" runs
				  `BIN kustomize`, anything else `BIN
				  build`. NULL: kustomize, else kubectl,
				  from PATH */
	unsigned timeout_ms;   /* 0: RENDER_TOOL_TIMEOUT_MS */
	size_t max_output;     /* 0: RENDER_TOOL_MAX_OUTPUT */
};

/*
 * Fill argv (room for `max` entries including the NULL) with the command
 * line that renders `dir`: BIN build DIR --load-restrictor
 * LoadRestrictionsRootOnly, or BIN kustomize DIR --load-restrictor ...
 * when `bin` names kubectl. Pointers refer to `bin`, `dir` and static
 * strings. ERR_LIMIT when max is too small.
 */
int render_kustomize_argv(const char **argv, size_t max, const char *bin,
			  const char *dir, struct err *err);

/*
 * Run kustomize on the directory `root` and add its objects to *out with
 * origin "kustomize PATH" (PATH: info->path, else root). On error *out
 * holds what was added, for the caller to release.
 */
int render_kustomize(struct diff_objset *out, const char *root,
		     const struct render_kustomize_options *opts,
		     const struct render_app_info *info, struct err *err);

/*
 * helm: `helm template RELEASE . --namespace=NS [--values=FILE]...
 * [--set=K=V]... [--include-crds] [--kube-version=V]` run in the chart
 * directory. Every value is passed as one `--flag=value` word, so no
 * value can be read as another flag.
 */
struct render_helm_options {
	const char *bin;       /* NULL: helm from PATH */
	const char *release;   /* NULL: info->name, else the base name of
				  root; must be a DNS-1123 label of at most
				  53 characters */
	const char *namespace; /* NULL: info->namespace, else "default" */
	const char *const *values;  /* files relative to repo_root (NULL-
				       terminated), confined to it */
	const char *const *values_files; /* files of syncd's own disk
					    (absolute, or relative to the
					    working directory), after
					    `values` (NULL-terminated) */
	const char *const *set;     /* "KEY=VALUE" pairs, on argv */
	const char *values_inline;  /* YAML values from config; written to
				       a private temporary file (mode 0600),
				       never on argv; after `values` */
	bool include_crds;
	const char *kube_version;   /* NULL: helm's default */
	const char *repo_root;      /* root of the repository; NULL: the
				       chart directory */
	unsigned timeout_ms;        /* 0: RENDER_TOOL_TIMEOUT_MS */
	size_t max_output;          /* 0: RENDER_TOOL_MAX_OUTPUT */
};

/*
 * The argv of `helm template` for resolved inputs: `release` and
 * `namespace` as they will be used, `values` the absolute paths of the
 * values files (NULL-terminated, may be NULL), `inline_file` the path of
 * the temporary file for values_inline (NULL when none). Strings stay
 * owned by the caller; `scratch` (released by the caller) holds the
 * "--flag=value" words. ERR_LIMIT when max is too small.
 */
int render_helm_argv(const char **argv, size_t max, struct buf *scratch,
		     const char *bin, const char *release,
		     const char *namespace, const char *const *values,
		     const char *inline_file,
		     const struct render_helm_options *opts, struct err *err);

/* Check a release name (DNS-1123 label, at most 53 characters). */
int render_helm_check_release(const char *release, struct err *err);

/* Run `helm template` on the chart at `root`; origin "helm PATH". */
int render_helm(struct diff_objset *out, const char *root,
		const struct render_helm_options *opts,
		const struct render_app_info *info, struct err *err);

/*
 * exec plugins (like Argo CD config management plugins): a command and
 * its arguments from the command line or the syncd config, never from
 * the repository. It runs in the app's directory with an environment of
 * exactly PATH, HOME, SYNCD_APP_NAME, SYNCD_APP_NAMESPACE,
 * SYNCD_REVISION, SYNCD_PATH and the configured variables, and prints
 * YAML or JSON objects on stdout.
 */
struct render_exec_options {
	const char *cmd;           /* program; a relative path with '/' is
				      relative to syncd's working directory,
				      never to the app's */
	const char *const *args;   /* NULL-terminated; may be NULL */
	const char *const *env;    /* "NAME=VALUE", NULL-terminated; names
				      starting with SYNCD_ are refused */
	unsigned timeout_ms;       /* 0: RENDER_TOOL_TIMEOUT_MS */
	size_t max_output;         /* 0: RENDER_TOOL_MAX_OUTPUT */
};

/*
 * Build the plugin's environment into *out (NULL-terminated "K=V"
 * strings; free with render_env_free()). PATH and HOME come from
 * syncd's environment (defaults "/usr/local/bin:/usr/bin:/bin" and "/"),
 * then the SYNCD_* values (empty when unknown), then opts->env, whose
 * entries replace PATH or HOME when they name them.
 */
int render_exec_env(char ***out, const char *root,
		    const struct render_exec_options *opts,
		    const struct render_app_info *info, struct err *err);

void render_env_free(char **env);

/* Run the plugin in `root`; origin "plugin CMD PATH". */
int render_exec(struct diff_objset *out, const char *root,
		const struct render_exec_options *opts,
		const struct render_app_info *info, struct err *err);

/* What substitution does after rendering. */
enum render_subst_mode {
	RENDER_SUBST_OFF = 0,
	RENDER_SUBST_STRICT,
	RENDER_SUBST_LENIENT,
};

#define RENDER_APP_OPTIONS_VERSION 1

/* Everything that renders one app; see render_app(). */
struct render_app_options {
	unsigned version;
	enum render_kind kind;                  /* RENDER_AUTO: detect */
	struct render_app_info info;
	struct render_dir_options dir;
	struct render_kustomize_options kustomize;
	struct render_helm_options helm;
	struct render_jsonnet_options jsonnet;
	struct render_exec_options exec;
	struct render_vars vars;
	enum render_subst_mode subst;
};

#define RENDER_APP_OPTIONS_INIT \
	{RENDER_APP_OPTIONS_VERSION, RENDER_AUTO, {0}, \
	 RENDER_DIR_OPTIONS_INIT, {0}, {0}, {0}, {0}, {0}, RENDER_SUBST_OFF}

/*
 * Render the app at `root` (a directory; a single file for the directory
 * renderer) with the chosen renderer (detected for RENDER_AUTO), then
 * substitute variables when opts->subst is not off. More than
 * RENDER_MAX_OBJECTS objects is ERR_LIMIT. The exec renderer
 * is used only when chosen. *kind (may be NULL) gets the renderer used.
 * Objects are added to *out; on error *out holds what was rendered, for
 * the caller to release.
 */
int render_app(struct diff_objset *out, enum render_kind *kind,
	       const char *root, const struct render_app_options *opts,
	       struct err *err);

/*
 * Shared by the tool renderers: turn a tool's stdout into objects of
 * *out with origin `origin`. Lists are expanded; a document that is not
 * an object, has no kind, or output that is not YAML or JSON is an
 * error naming `origin` and the output line.
 */
int render_tool_output(struct diff_objset *out, const char *data, size_t len,
		       const char *origin, struct err *err);

/* One run of a tool whose stdout is manifests. */
struct render_tool {
	const char *what;          /* the command as messages show it:
				      "kubectl kustomize", "helm template" */
	const char *const *argv;   /* argv[0] is the program */
	const char *cwd;           /* NULL: syncd's */
	char *const *env;          /* exactly this environment */
	unsigned timeout_ms;       /* 0: RENDER_TOOL_TIMEOUT_MS */
	size_t max_output;         /* 0: RENDER_TOOL_MAX_OUTPUT */
	const char *origin;        /* origin of the objects, and the prefix
				      of every message */
	const char *missing;       /* message when argv[0] is not found;
				      NULL: "`PROGRAM` not found" */
	const char *const *hints;  /* NULL-terminated: stderr lines that
				      start so are advice for the tool's
				      own command line, not kept */
};

/*
 * Run a tool and add the objects it prints to *out. Failures, each one
 * line starting with tool->origin: not found (tool->missing), timed out,
 * killed, exited non-zero (followed by its stderr, one problem per line,
 * at most 20 lines, control characters dropped, tool->hints left out),
 * output over the cap,
 * output that is not YAML/JSON, an object without kind.
 */
int render_tool_run(struct diff_objset *out, const struct render_tool *tool,
		    struct err *err);

/*
 * The base environment of a tool: PATH and HOME from syncd's environment
 * (defaults "/usr/local/bin:/usr/bin:/bin" and "/"), TMPDIR when set, then
 * `extra` ("K=V", NULL-terminated, may be NULL) replacing or adding.
 * Free with render_env_free().
 */
int render_tool_env(char ***out, const char *const *extra, struct err *err);

/*
 * The program a tool renderer runs, into *out: a name without '/' as is
 * (looked up in absolute PATH entries only), an absolute path as is, a
 * relative path with '/' made absolute against syncd's working directory
 * (a tool runs in the app's directory, and its program must never be
 * taken from the repository).
 */
int render_tool_program(struct buf *out, const char *cmd, struct err *err);

/*
 * Lines of the nodes of the first document of a YAML stream, for messages
 * that point at one key (renderers/yamlpos.c). *out becomes an object
 * mapping the JSON pointer of every node ("" for the root, "/apps/0/name")
 * to its 1-based line; for a mapping's value that is the line of its key.
 * Aliases are not followed. Values are read with render_parse().
 */
int render_yaml_lines(json_t **out, const char *data, size_t len,
		      const char *name, struct err *err);

#endif
