/*
 * diff: objects, their identities, object sets, and (later) field sets, the
 * list-type schema, the comparison and drift reports.
 *
 * This is the one public header of the diff library.
 *
 * An object is a jansson json_t * (an object as decoded from YAML or JSON).
 * Its identity is group/kind/namespace/name: the version is not part of it,
 * so a Deployment read as apps/v1 and as apps/v1beta2 is the same object.
 */
#ifndef DIFF_DIFF_H
#define DIFF_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

/*
 * Identity of an object. All strings are owned by the key (one allocation)
 * and never NULL: the core group is "", a cluster-scoped (or not yet
 * defaulted) object has namespace "".
 */
struct diff_key {
	const char *group;
	const char *kind;
	const char *ns;
	const char *name;
	char *mem_;        /* private: backing storage */
	size_t mem_len_;   /* private: length of mem_ (the hash key) */
};

/*
 * Split an apiVersion into group and version: "apps/v1" -> "apps", "v1";
 * "v1" -> "", "v1". The outputs point into `api_version` (no allocation);
 * lengths are returned through *group_len (version follows the '/').
 */
void diff_api_version_split(const char *api_version, size_t *group_len,
			    const char **version);

/*
 * Fill *key from an object's apiVersion, kind, metadata.namespace and
 * metadata.name. ERR_INVALID when one of apiVersion, kind or name (or
 * generateName) is missing or not a string; the message says which field
 * ("missing kind"), the caller adds file and line. An object with only
 * metadata.generateName gets the name "<generateName>*" ('*' never appears
 * in a real name): each apply creates a new object, so such objects are
 * never duplicates of each other (see diff_objset_add). Release with
 * diff_key_release().
 */
int diff_key_from_object(struct diff_key *key, const json_t *obj,
			 struct err *err);

/* Fill *key from its parts (copied). */
int diff_key_init(struct diff_key *key, const char *group, const char *kind,
		  const char *ns, const char *name);

void diff_key_release(struct diff_key *key);

bool diff_key_equal(const struct diff_key *a, const struct diff_key *b);

/*
 * Total order used for stable output: group, kind, namespace, name
 * (bytewise).
 */
int diff_key_cmp(const struct diff_key *a, const struct diff_key *b);

/*
 * Human form used in every message: "Deployment.apps default/web",
 * "Service default/web", "ClusterRole.rbac.authorization.k8s.io admin".
 * Appends to `out`.
 */
int diff_key_format(const struct diff_key *key, struct buf *out);

/*
 * An object with its identity and where it came from.
 */
struct diff_object {
	json_t *json;      /* owned reference */
	struct diff_key key;
	char *origin;      /* "dir/file.yaml:12" or NULL; owned */
};

/*
 * Make a diff_object from `json` (takes a new reference; the caller keeps
 * its own) and `origin` (copied, may be NULL). Fails like
 * diff_key_from_object(), with the origin in the message. Caller owns
 * *out; free with diff_object_free().
 */
int diff_object_new(struct diff_object **out, json_t *json,
		    const char *origin, struct err *err);
void diff_object_free(struct diff_object *obj);

/*
 * A set of objects keyed by identity, kept in insertion order (the order
 * the renderer produced them: files sorted by path, documents in file
 * order).
 */
struct diff_objset {
	struct diff_object **items;
	size_t len;
	size_t alloc;
	/* private: open-addressing index into items */
	size_t *slots_;
	size_t nslots_;
};

#define DIFF_OBJSET_INIT {NULL, 0, 0, NULL, 0}

/*
 * Add `obj` to the set, which takes ownership on success. ERR_EXISTS when
 * an object with the same identity is already there; the message names the
 * identity and both origins, and `obj` stays the caller's. Objects named
 * only by generateName are never duplicates and cannot be looked up.
 */
int diff_objset_add(struct diff_objset *set, struct diff_object *obj,
		    struct err *err);

/* The object with that identity, or NULL. Owned by the set. */
struct diff_object *diff_objset_get(const struct diff_objset *set,
				    const struct diff_key *key);

/* Sort the items by identity (diff_key_cmp); lookups keep working. */
void diff_objset_sort(struct diff_objset *set);

/* Free every object and the set's storage; the set is empty again. */
void diff_objset_release(struct diff_objset *set);

/*
 * Encoders, shared by `syncd render`, drift reports and the Kubernetes
 * client. Both sort object keys bytewise (as Go's encoders do), so output
 * is stable, and format numbers as Go's encoding/json does (integers as
 * integers; finite reals in the shortest form that reads back to the same
 * double, "1e+21" style exponents outside [1e-6, 1e21)).
 *
 * diff_json_dump: `indent` spaces per level (0: compact, one line, no
 * spaces). Appends to `out`. ERR_INVALID for a NaN/Inf real (not
 * representable in JSON).
 *
 * diff_yaml_dump: YAML as `kubectl get -o yaml` prints it (block style,
 * two-space indentation, sequences not indented inside mappings, strings
 * quoted only when they would otherwise read back as another type or are
 * not plain-safe, multi-line strings as literal blocks). Appends to `out`.
 */
int diff_json_dump(const json_t *json, int indent, struct buf *out);
int diff_yaml_dump(const json_t *json, struct buf *out);

#endif
