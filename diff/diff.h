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
#include <stdint.h>
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
 * Whether `s` is a DNS-1123 label of at most `max` characters (63 for
 * Kubernetes namespace names, 53 for a helm release): lower case letters,
 * digits and '-', not at either end.
 */
bool diff_dns_label(const char *s, size_t max);

/*
 * An object with its identity and where it came from.
 */
struct diff_object {
	json_t *json;      /* owned reference */
	struct diff_key key;
	char *origin;      /* "dir/file.yaml:12" or NULL; owned */
	/*
	 * Decrypted from the source (SOPS): a report shows every value but
	 * its apiVersion, kind, name and namespace as a fingerprint, as it
	 * does a Secret's data. Whoever copies the object copies the flag.
	 */
	bool sensitive;
	/*
	 * A live object settled when it was read (diff_object_settle()): in
	 * sync with its desired object, that comparison already made, and
	 * nothing kept of it but its identity, its uid (owned) and the
	 * number of differences ignore rules dropped: `json` is NULL.
	 */
	bool settled;
	char *uid;
	size_t settled_ignored;
};

/* metadata.uid of a live object, settled or whole (NULL: none). */
const char *diff_object_uid(const struct diff_object *obj);

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
 * A live object settled without being compared now: one found in sync in
 * an earlier comparison, in the same version, on the same desired object
 * and options (the caller vouches for that), `ignored` the differences
 * ignore rules dropped then. Strings copied; ERR_NOMEM.
 */
int diff_object_new_settled(struct diff_object **out, const char *group,
			    const char *kind, const char *ns, const char *name,
			    const char *uid, size_t ignored);

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

/* Where the object with that identity is in set->items: true, *index. */
bool diff_objset_index(const struct diff_objset *set,
		       const struct diff_key *key, size_t *index);

/* Free the items from `len` on (those added last); the rest stay. */
void diff_objset_truncate(struct diff_objset *set, size_t len);

/* Sort the items by identity (diff_key_cmp); lookups keep working. */
void diff_objset_sort(struct diff_objset *set);

/* Free every object and the set's storage; the set is empty again. */
void diff_objset_release(struct diff_objset *set);

/*
 * True for built-in kinds that are cluster-scoped (Namespace, ClusterRole,
 * CustomResourceDefinition, ...). Custom kinds: see the CRD's spec.scope.
 */
bool diff_kind_cluster_scoped(const char *group, const char *kind);

/*
 * Give every namespaced object of `set` that has no namespace the
 * namespace `ns` (in its JSON and its identity), as kubectl does with the
 * context's namespace. A kind is namespaced unless it is a built-in
 * cluster-scoped kind or a CRD in `crds` (any objset, may be NULL) says
 * `scope: Cluster`. Fails with ERR_EXISTS when the new identity collides.
 */
int diff_objset_default_namespace(struct diff_objset *set, const char *ns,
				  const struct diff_objset *crds,
				  struct err *err);

/*
 * ---------------------------------------------------------------------
 * Field sets: the paths a manager owns, as in metadata.managedFields.
 *
 * A path is a sequence of path elements:
 *   DIFF_PE_FIELD  f:NAME   a struct field or map key        .name
 *   DIFF_PE_KEY    k:{...}  an item of a map-list, by its keys
 *                           [containerPort=80,protocol="TCP"]
 *   DIFF_PE_VALUE  v:JSON   an element of a set-list          [="v"]
 *   DIFF_PE_INDEX  i:N      a list index (rare)               [3]
 *
 * A field set is a trie of such elements; each node may itself be a member
 * ("." in fieldsV1, or a leaf {}). Element text is canonical: for k: the
 * compact JSON object with keys sorted by name and typed values
 * ({"containerPort":80,"protocol":"TCP"}), for v: compact JSON, for i: the
 * decimal index. Two elements are equal when type and text are equal, and
 * are ordered as structured-merge-diff orders them, which is the order the
 * API server serializes fieldsV1 in: ".", then f: (names bytewise), k:
 * (key by key, by typed value), v: (by typed value: numbers < strings <
 * booleans < lists < maps < null), i: (numerically).
 * ---------------------------------------------------------------------
 */
enum diff_pe_type {
	DIFF_PE_FIELD = 0,
	DIFF_PE_KEY = 1,
	DIFF_PE_VALUE = 2,
	DIFF_PE_INDEX = 3,
};

struct diff_pe {
	enum diff_pe_type type;
	const char *text;   /* name, canonical JSON, or decimal index */
};

/* A path: `len` elements. The elements' text is owned by whoever built it. */
struct diff_path {
	const struct diff_pe *pe;
	size_t len;
};

/* Opaque field set (a trie node plus its storage). */
struct diff_fieldset;

/* A new empty set. Caller owns it; free with diff_fieldset_free(). */
struct diff_fieldset *diff_fieldset_new(void);
void diff_fieldset_free(struct diff_fieldset *set);

/*
 * Parse a fieldsV1 object ({"f:spec":{"f:replicas":{}}, ...}). ERR_PARSE
 * for anything that is not fieldsV1: a non-object node, an unknown prefix,
 * a k: that is not a JSON object, a v: that is not JSON, an i: that is not
 * a non-negative integer, "." with a non-empty value; the message names
 * the offending element. Caller owns *out.
 */
int diff_fieldset_parse(struct diff_fieldset **out, const json_t *fields_v1,
			struct err *err);

/*
 * Serialize as fieldsV1, children in canonical order (".", f:, k:, v:, i:,
 * each sorted by text). A member without children is {}; a member with
 * children gets ".":{}. Caller owns the result (json_decref).
 */
json_t *diff_fieldset_to_json(const struct diff_fieldset *set);

/* Add one path as a member (intermediate nodes are created, not members). */
int diff_fieldset_insert(struct diff_fieldset *set,
			 const struct diff_path *path);

bool diff_fieldset_has(const struct diff_fieldset *set,
		       const struct diff_path *path);

/* True when some member of the set has `prefix` as a (non-strict) prefix. */
bool diff_fieldset_has_prefix(const struct diff_fieldset *set,
			      const struct diff_path *prefix);

/* True when the set has no members. */
bool diff_fieldset_empty(const struct diff_fieldset *set);

/* Number of members. */
size_t diff_fieldset_size(const struct diff_fieldset *set);

/*
 * True when every member of a is a member of b (a \ b is empty), and, for
 * diff_fieldset_equal(), the other way round (a and b have the same
 * members). NULL reads as the empty set. Neither allocates: use them
 * instead of building a difference only to test it for emptiness.
 */
bool diff_fieldset_subset(const struct diff_fieldset *a,
			  const struct diff_fieldset *b);
bool diff_fieldset_equal(const struct diff_fieldset *a,
			 const struct diff_fieldset *b);

/* New sets: a ∪ b, a ∩ b, a \ b. Caller owns the result; NULL on ENOMEM. */
struct diff_fieldset *diff_fieldset_union(const struct diff_fieldset *a,
					  const struct diff_fieldset *b);
struct diff_fieldset *diff_fieldset_intersect(const struct diff_fieldset *a,
					      const struct diff_fieldset *b);
struct diff_fieldset *diff_fieldset_difference(const struct diff_fieldset *a,
					       const struct diff_fieldset *b);

/*
 * Call fn for every member path, in canonical order; stop and return fn's
 * value when it is non-zero. The path is valid only during the call.
 */
int diff_fieldset_walk(const struct diff_fieldset *set,
		       int (*fn)(const struct diff_path *path, void *data),
		       void *data);

/*
 * Append a path in the API server's syntax:
 * .spec.template.spec.containers[name="web"].image,
 * .ports[containerPort=80,protocol="TCP"], .finalizers[="x"], .args[3].
 * Field names that are not identifiers are still printed as .name (as the
 * API server does, e.g. .metadata.labels.app.kubernetes.io/name).
 */
int diff_path_format(const struct diff_path *path, struct buf *out);

/*
 * ---------------------------------------------------------------------
 * Schema: how each field of an object merges (structured-merge-diff's
 * list and map types), for built-in kinds from a table and for custom
 * resources from their CRD's openAPIV3Schema.
 * ---------------------------------------------------------------------
 */
enum diff_schema_type {
	DIFF_SCHEMA_GRANULAR,   /* struct or map: each field on its own */
	DIFF_SCHEMA_ATOMIC,     /* replaced whole: atomic list, map or struct */
	DIFF_SCHEMA_SET,        /* list of scalars merged as a set */
	DIFF_SCHEMA_MAP_LIST,   /* list of objects merged by key fields */
};

/* A node of a schema tree; owned by the registry that returned it. */
struct diff_schema;

/* Registry of schemas: the built-in kinds plus any CRDs added. */
struct diff_schemas;

/* A registry holding the built-in kinds. Free with diff_schemas_free(). */
struct diff_schemas *diff_schemas_new(void);
void diff_schemas_free(struct diff_schemas *reg);

/*
 * Register the list/map types of a CustomResourceDefinition object
 * (apiextensions.k8s.io/v1; every served version's openAPIV3Schema).
 * Replaces an earlier registration of the same group/kind. ERR_INVALID
 * with the CRD's name when it is not a usable CRD.
 */
int diff_schemas_add_crd(struct diff_schemas *reg, const json_t *crd,
			 struct err *err);

/*
 * Structural pruning and defaulting of a custom resource (or of a value
 * inside one) under `schema`, a JSONSchemaProps of a CRD version's
 * openAPIV3Schema, in place, as the apiextensions-apiserver decodes one.
 * DIFF_STRUCTURAL_PRUNE drops fields the schema does not declare (unless
 * x-kubernetes-preserve-unknown-fields or additionalProperties keep
 * them), naming each in `unknown` (a JSON array, may be NULL);
 * DIFF_STRUCTURAL_DEFAULT gives absent fields their schema default;
 * DIFF_STRUCTURAL_ROOT says `v` is the resource itself (its apiVersion,
 * kind and metadata are not the schema's). NULL schema: nothing.
 */
#define DIFF_STRUCTURAL_PRUNE 1u
#define DIFF_STRUCTURAL_DEFAULT 2u
#define DIFF_STRUCTURAL_ROOT 4u
void diff_structural(json_t *v, const json_t *schema, unsigned flags,
		     json_t *unknown);

/* Drop the schema of a group/kind (a deleted CRD). */
void diff_schemas_remove(struct diff_schemas *reg, const char *group,
			 const char *kind);

/*
 * The root schema of group/kind (version is ignored: built-in list types
 * do not change between versions). Never NULL: an unknown kind gets the
 * default (maps granular, lists atomic).
 */
const struct diff_schema *diff_schemas_lookup(const struct diff_schemas *reg,
					      const char *group,
					      const char *kind);

/*
 * True when kube-apiserver serves group/kind from its own Go types (a
 * built-in API group, and no CRD of that group/kind registered here):
 * such objects are stored the way the Go types encode them, so a
 * declared zero value of an omitempty field (false, 0, "", [], {}) is
 * not stored. Custom resources keep what they were sent.
 */
bool diff_schemas_typed(const struct diff_schemas *reg, const char *group,
			const char *kind);

/*
 * The type of a node for a given value: `value` decides between map-ish
 * and list-ish defaults where the schema says nothing (an object is
 * GRANULAR, an array ATOMIC). Scalars are leaves whatever this says.
 */
enum diff_schema_type diff_schema_type_of(const struct diff_schema *s,
					  const json_t *value);

/* Schema of field/map key `name` under a GRANULAR node (never NULL). */
const struct diff_schema *diff_schema_field(const struct diff_schema *s,
					    const char *name);

/* Schema of the items of a list node (never NULL). */
const struct diff_schema *diff_schema_items(const struct diff_schema *s);

/*
 * Key fields of a MAP_LIST node: *names gets the key field names (sorted
 * by name), returns their number; 0 for other nodes. `defaults[i]` is the
 * value a missing key takes (the port `protocol` is "TCP"), or NULL.
 */
size_t diff_schema_keys(const struct diff_schema *s, const char *const **names,
			const json_t *const **defaults);

/* True for fields holding resource quantities (resources.limits.cpu, ...). */
bool diff_schema_is_quantity(const struct diff_schema *s);

/*
 * The set of fields an applier of `obj` owns under `schema`: every leaf
 * value, each atomic node as a whole, map-list items by key (with "."),
 * set elements by value. apiVersion, kind, metadata.name, namespace, uid,
 * resourceVersion, generation, creationTimestamp, managedFields and status
 * are never included. ERR_INVALID naming the path when a map-list item
 * lacks a key field without a default, or two items share a key. Caller
 * owns *out.
 */
int diff_fieldset_of_object(struct diff_fieldset **out, const json_t *obj,
			    const struct diff_schema *schema, struct err *err);

/*
 * 1 when diff_fieldset_of_object() would give exactly the set fields_v1
 * holds, known without building the set (each member of obj is looked up
 * in fields_v1, and none of fields_v1's is left over): the common check
 * of an applier's own entry against what it declares now. 0 when not, or
 * when fields_v1 is not written as the server writes fieldsV1 (a k: not
 * in canonical form, a malformed node): diff_fieldset_parse() must tell.
 * An error in obj that the walk meets before a difference is reported as
 * diff_fieldset_of_object() reports it; one after, not (the answer is 0,
 * and diff_fieldset_of_object() finds it).
 */
int diff_fieldset_of_object_is(const json_t *obj,
			       const struct diff_schema *schema,
			       const json_t *fields_v1, struct err *err);

/*
 * ---------------------------------------------------------------------
 * Values
 * ---------------------------------------------------------------------
 */

/*
 * Parse a Kubernetes resource quantity ("500m", "1.5Gi", "1e3", "100")
 * into a canonical form usable for equality: *out gets the value as an
 * exact decimal string in base units with no trailing zeros ("0.5",
 * "1610612736", "1000"). ERR_PARSE when it is not a quantity.
 */
int diff_quantity_canonical(const char *text, struct buf *out);

/*
 * ---------------------------------------------------------------------
 * The Go types of the built-in kinds (diff/gotypes.c, from the table
 * diff/gen generates from the k8s.io modules 1.36): how kube-apiserver's
 * decoder reads a body into them and how it writes them out again.
 * ---------------------------------------------------------------------
 */

/* The root type of group/version/kind; -1 for kinds not in the table. */
int diff_gotype_root(const char *group, const char *version, const char *kind);

/*
 * The i-th kind of the table (from 0): its group, version, kind and root
 * type. False past the last one.
 */
bool diff_gotype_kind_at(size_t i, const char **group, const char **version,
			 const char **kind, int *root);

/*
 * Decode `obj` (in place) as the server's decoder reads it into the Go
 * type `root`: unknown fields are removed and appended to `unknown` (an
 * array; may be NULL) as {"path": "spec.template.spec.containers[0].foo",
 * "typed": ".spec.template.spec.containers[name=\"web\"].foo"} (the
 * decoder's and SMD's spellings); a null becomes the field's zero value
 * (the field goes). Returns 0, or -1 with encoding/json's message in
 * `msg` ("json: cannot unmarshal string into Go struct field
 * DeploymentSpec.spec.replicas of type int32") for a value of the wrong
 * JSON type (obj is then unspecified).
 */
int diff_gotype_decode(json_t *obj, int root, json_t *unknown, struct buf *msg);

/*
 * Encode `obj` (in place) as the server writes an object of type `root`:
 * omitempty fields holding their zero value go, every other field is
 * written (absent ones as their zero value), members in Go's order.
 * Values are expected to be decoded already.
 */
void diff_gotype_encode(json_t *obj, int root);

/* The encoding of the zero value of `root` (new reference). */
json_t *diff_gotype_zero(int root);

/*
 * An openAPIV3Schema of `root` as diff_schemas_add_crd() reads it
 * (properties, items, additionalProperties, x-kubernetes-list-type,
 * -list-map-keys, -map-type, key defaults); a type met again below itself
 * (JSONSchemaProps) is cut off as preserve-unknown-fields. New reference.
 */
json_t *diff_gotype_schema(int root);

/*
 * Register the schema of each kind of the Go-types table in `reg`, as a
 * CRD's would be (diff_schemas_add_crd()): every kind with `all`, else
 * only the kinds the built-in table does not declare (what
 * diff_schemas_new() registries fall back to, built once per process).
 * A kind is registered under diff_schemas_gotype_group() of its group;
 * one that fails to register keeps its default schema.
 */
void diff_schemas_add_gotypes(struct diff_schemas *reg, bool all);

/* The group a Go-types kind is registered under: its own, or "core". */
const char *diff_schemas_gotype_group(const char *group);

/* encoding/json's name of a JSON value's type in its errors ("number"). */
const char *diff_go_json_kind(const json_t *v);

/*
 * Fields of a decoded object as Go's defaulting sees them, shared by the
 * model below and kube-emu's registries. A field is "absent" when missing
 * or null (a nil pointer).
 */
bool diff_json_absent(const json_t *o, const char *key);
/* o[key] = v when o is an object and the field is absent (steals v). */
void diff_json_default(json_t *o, const char *key, json_t *v);
/* A Go string field: absent, null and "" all take the default s. */
void diff_json_default_str(json_t *o, const char *key, const char *s);
/* o[key] as an object, created ({}) when absent; NULL when not one. */
json_t *diff_json_child(json_t *o, const char *key);
/* o[key] when it is a string, else NULL. */
const char *diff_json_str(const json_t *o, const char *key);
/* o[key] is the string want. */
bool diff_json_str_is(const json_t *o, const char *key, const char *want);

/*
 * What kube-apiserver 1.36 stores for `obj`, a declared object of the
 * built-in kind group/kind, as far as the object alone decides it:
 * defaults filled in, Secret stringData folded into data, quantities in
 * resource.Quantity's canonical form ("0.5" -> "500m"), and the status
 * fields the Go type always writes. Changes obj in place; other kinds are
 * left as they are. Cluster IPs, node ports, generated selectors and
 * admission are not the object's alone and are not done here.
 * DIFF_STORED_CREATE: the object is being created (a Job without labels
 * then shares its template's, as the registry does on create).
 * Returns NULL, or why a quantity in obj does not parse (the first one;
 * kube refuses the object with that message).
 */
#define DIFF_STORED_CREATE 1u
const char *diff_stored_defaults(json_t *obj, const char *group,
				 const char *kind, unsigned flags);

/*
 * The whole of what kube-apiserver 1.36 stores for `obj`, a declared
 * object of a built-in kind (its apiVersion and kind say which), as far
 * as the object alone decides it: read into its Go type (unknown fields
 * dropped, nulls to zero values), diff_stored_defaults(), and written out
 * again (omitempty zero values left out, other absent fields as their
 * zero: `resources: {}`, `currentMetrics: null`). Changes obj in place;
 * kinds without Go types here are only defaulted. Returns 1 (read through
 * its Go type: exactly what the server returns), 0 (only defaulted), or -1
 * with the reason the server would refuse the object in `why` (a value of
 * the wrong JSON type, a quantity that does not parse).
 */
int diff_stored_object(json_t *obj, unsigned flags, struct buf *why);

/*
 * Equality of two values as the API server would see them: int 1 equals
 * real 1.0, "1" does not equal 1, objects and arrays deeply (arrays in
 * order). When `quantity` is true, strings and numbers are compared as
 * quantities ("1000m" == "1" == 1, "1Gi" == "1024Mi").
 */
bool diff_value_equal(const json_t *a, const json_t *b, bool quantity);

/*
 * A unified diff of two texts, line by line, as `diff -u` prints it:
 * "--- a_label", "+++ b_label", then hunks "@@ -l,n +l,n @@" with
 * `context` lines around each change. Lines are compared exactly; a text
 * whose last line lacks a newline gets "\ No newline at end of file".
 * Appends nothing when the texts are equal. Uses Myers' O(ND) algorithm,
 * linear in memory, so large equal prefixes and suffixes cost little.
 */
int diff_unified(const char *a, size_t a_len, const char *b, size_t b_len,
		 const char *a_label, const char *b_label, unsigned context,
		 struct buf *out);

/*
 * ---------------------------------------------------------------------
 * Comparison and drift reports
 *
 * The comparison follows server-side apply: only fields the desired object
 * declares are compared (defaults, status and fields other actors added
 * are not drift); lists by their schema; values canonically. Fields the
 * field manager applied earlier and no longer declares are drift too
 * (the next apply removes them) unless another manager co-owns them.
 * Every differing field is attributed to its owners in the live
 * object's managedFields; a field owned by another controller is
 * "foreign" and the policy decides what the apply request does with it.
 * ---------------------------------------------------------------------
 */
enum diff_state {
	DIFF_IN_SYNC,
	DIFF_DRIFTED,     /* some field differs that syncd heals */
	DIFF_MISSING,     /* desired, not live */
	DIFF_ORPHAN,      /* live (in the inventory), no longer desired */
	DIFF_FOREIGN,     /* the only differing fields are owned by controllers */
	DIFF_FIGHTING,    /* the only fields syncd would heal are held (fights) */
};

enum diff_policy {
	DIFF_POLICY_RESPECT,   /* leave controller-owned fields alone */
	DIFF_POLICY_OVERRIDE,  /* take them back with force */
	DIFF_POLICY_REPORT,    /* change nothing, only report */
};

enum diff_change {
	DIFF_CHANGED,          /* both sides have a value; they differ */
	DIFF_ABSENT,           /* declared, but live has no value there */
	DIFF_REMOVED,          /* applied earlier, no longer declared */
};

/* Who a manager is. */
enum diff_actor {
	DIFF_ACTOR_SELF,       /* our own field manager */
	DIFF_ACTOR_PERSON,     /* a person's tool: kubectl*, before-first-apply */
	DIFF_ACTOR_CONTROLLER, /* any other manager */
};

/* Ignore differences in some objects' fields, or owned by some managers. */
struct diff_ignore_rule {
	const char *group;     /* globs; NULL matches anything */
	const char *kind;
	const char *ns;
	const char *name;
	const char *const *json_pointers;  /* NULL-terminated, or NULL */
	const char *const *managers;       /* NULL-terminated globs, or NULL */
};

#define DIFF_OPTIONS_VERSION 1

struct diff_options {
	unsigned version;
	const char *field_manager;          /* NULL: "syncd" */
	enum diff_policy policy;
	/* Globs naming people's tools; NULL: {"kubectl*", "before-first-apply"} */
	const char *const *person_managers;
	/* Globs that are controllers even if they match person_managers. */
	const char *const *controller_managers;
	const struct diff_ignore_rule *ignore;
	size_t nignore;
	/* Key for Secret fingerprints; NULL: a random key for this process. */
	const unsigned char *mask_key;
	size_t mask_key_len;
	/*
	 * Fields held because of a fight (the controller's fight detection):
	 * called for every differing field syncd would write (not for
	 * foreign fields left alone, nor removals) with the object's
	 * identity and the field's path as diff_field.path spells it. A
	 * non-NULL result holds the field: it is reported with that fight
	 * (the report takes ownership; diff_fight_free()), never healed,
	 * left out of the apply request and never a reason to force. NULL:
	 * no field is held.
	 */
	struct diff_fight *(*hold)(const struct diff_key *key,
				   const char *path, void *ctx);
	void *hold_ctx;
	/*
	 * Make no live_view and desired_view (the YAML diff's two sides),
	 * for a caller that never shows the diff (syncd sync, JSON output):
	 * at 10,000 drifted objects they are a third of the report.
	 */
	bool no_views;
};

#define DIFF_OPTIONS_INIT {DIFF_OPTIONS_VERSION, NULL, DIFF_POLICY_RESPECT, \
			   NULL, NULL, NULL, 0, NULL, 0, NULL, NULL, false}

/*
 * A fight over one field: `other` changed it back each time syncd wrote
 * it, `changes` times in the detection window, the first at `since`.
 */
struct diff_fight {
	char *self;	   /* our field manager */
	char *other;	   /* the manager that keeps changing it back */
	unsigned changes;  /* changes back seen in the window */
	char *since;	   /* RFC 3339: when the field was first held */
};

/* A fight with copies of the strings; NULL when out of memory. */
struct diff_fight *diff_fight_new(const char *self, const char *other,
				  unsigned changes, const char *since);
void diff_fight_free(struct diff_fight *fight);

struct diff_owner {
	char *manager;
	char *operation;       /* "Apply" or "Update" */
	char *subresource;     /* NULL for the main resource */
	char *api_version;
	char *time;            /* RFC 3339, or NULL */
	enum diff_actor actor;
};

struct diff_field {
	char *path;            /* .spec.template.spec.containers[name="web"].image */
	enum diff_change change;
	json_t *desired;       /* NULL when absent; Secret values fingerprinted */
	json_t *live;          /* NULL when absent; Secret values fingerprinted */
	bool foreign;          /* owned by a controller (not healed under respect) */
	struct diff_fight *fight; /* non-NULL: held, not healed (a fight) */
	struct diff_owner *owners;
	size_t nowners;
};

struct diff_object_report {
	struct diff_key key;
	char *api_version;
	char *origin;          /* where the desired object came from, or NULL */
	enum diff_state state;
	struct diff_field *fields;
	size_t nfields;
	size_t nignored;       /* differing fields dropped by ignore rules */
	char **warnings;       /* e.g. an unreadable managedFields entry */
	size_t nwarnings;
	/*
	 * What to send: the body of a server-side apply (NULL: nothing to
	 * send) and whether it needs force=true. Holds real Secret values:
	 * never print it.
	 */
	json_t *apply;
	bool force;
	/* For the text rendering: live and after-apply views, stripped of
	 * server-owned metadata, Secret values fingerprinted. NULL when in
	 * sync. */
	json_t *live_view;
	json_t *desired_view;
};

struct diff_report {
	char *revision;        /* may be NULL */
	char *field_manager;
	enum diff_policy policy;
	struct diff_object_report *objects;
	size_t len;
};

/*
 * Compare one desired object with its live counterpart (NULL: Missing).
 * Fills *out (caller storage; release with diff_object_report_release()).
 * Fails only for out-of-memory or a desired object that cannot be typed
 * (ERR_INVALID naming the object, e.g. a map-list item without its key);
 * malformed managedFields entries are skipped with a warning.
 */
int diff_compare_object(struct diff_object_report *out, const json_t *desired,
			const json_t *live, const struct diff_schemas *reg,
			const struct diff_options *opts, struct err *err);

void diff_object_report_release(struct diff_object_report *rep);

/*
 * Settle live object `live` as it is read, page by page, so that it need
 * not be kept whole until the app's comparison: compare it with `desired`
 * now and, when they are in sync with nothing to send, to show or to warn
 * of, keep only that verdict (live->settled; live->json goes) for
 * diff_compare() to report without comparing again. 1 when settled;
 * 0 when the object stays whole (diff_compare() compares it, and says
 * why it could not be, if so); ERR_NOMEM.
 */
int diff_object_settle(struct diff_object *live,
		       const struct diff_object *desired,
		       const struct diff_schemas *reg,
		       const struct diff_options *opts, struct err *err);

/* Free what one field of a report holds; *f is zeroed. */
void diff_field_release(struct diff_field *f);

/*
 * Compare an app: every desired object with the live object of the same
 * identity, then every live object nobody desires (Orphan). Objects are
 * reported in desired order, orphans after them sorted by identity. An
 * object that cannot be compared is reported in `err` and left out; the
 * others are still compared (the return value is then that error).
 * Caller owns *out; free with diff_report_free().
 */
int diff_compare(struct diff_report **out, const struct diff_objset *desired,
		 const struct diff_objset *live, const struct diff_schemas *reg,
		 const struct diff_options *opts, const char *revision,
		 struct err *err);

void diff_report_free(struct diff_report *report);

const char *diff_state_name(enum diff_state state);
const char *diff_policy_name(enum diff_policy policy);
int diff_policy_parse(const char *name, enum diff_policy *out);

/* Counts by state, for summaries and exit codes. */
struct diff_summary {
	size_t objects, in_sync, drifted, missing, orphan, foreign, fighting;
	size_t fields, foreign_fields, ignored_fields, fighting_fields;
};

void diff_report_summary(const struct diff_report *report,
			 struct diff_summary *out);

/*
 * True when the report shows drift that the policy would act on: a
 * Drifted, Missing or Orphan object, or a Foreign one under override.
 */
bool diff_report_has_drift(const struct diff_report *report);

/*
 * The report as JSON (docs/drift-report.md). Caller owns the result.
 */
json_t *diff_report_to_json(const struct diff_report *report);

/*
 * The same in parts, for a report too large to hold as one tree: the
 * report with "objects" an empty array, and its object i as it would be
 * there (for diff_json_dump_items()). New references.
 */
json_t *diff_report_head_json(const struct diff_report *report);
json_t *diff_report_object_json(const struct diff_report *report, size_t i);

/*
 * The report as text, like `kubectl diff`: for each object not in sync a
 * header with its state, one line per differing field with its owners,
 * then a unified diff of the live object and the object after the apply.
 * `color`: ANSI colours (for a terminal).
 */
int diff_report_to_text(const struct diff_report *report, bool color,
			struct buf *out);

/*
 * Encoders, shared by `syncd render`, drift reports and the Kubernetes
 * client, byte for byte what kubectl prints. JSON sorts object keys
 * bytewise (as Go's encoding/json does) and formats numbers as Go does
 * (integers as integers; finite reals in the shortest form that reads back
 * to the same double, "1e+21" style exponents outside [1e-6, 1e21)). YAML
 * sorts keys as go-yaml v2 does ("natural" order: digit runs by value).
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
/*
 * Decode one UTF-8 character of s[0..n) (n > 0) as Go's utf8.DecodeRune
 * does: returns its length and sets *cp; an invalid or short sequence
 * (overlong, surrogate, above U+10FFFF) gives U+FFFD with length 1, which
 * a valid character starting at a byte >= 0x80 never has.
 */
size_t diff_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

int diff_json_dump(const json_t *json, int indent, struct buf *out);
int diff_yaml_dump(const json_t *json, struct buf *out);

/*
 * diff_json_dump(), where the array `items` (found in `json` by identity)
 * is written as the n values item(0..n-1) gives instead of its own (new
 * references, each released once written): an array too large to hold
 * as a tree is built one element at a time. item() returning NULL is
 * ERR_NOMEM.
 */
int diff_json_dump_items(const json_t *json, int indent, const json_t *items,
			 size_t n, json_t *(*item)(size_t i, void *ctx),
			 void *ctx, struct buf *out);

/*
 * ---------------------------------------------------------------------
 * Server-side apply (what the API server does; used by kube-emu)
 *
 * The algorithm of docs/kubernetes-api.md "Server-side apply":
 * merged = merge(live, applied) by the schema's list and map types; the
 * fields the applier owned before and no longer sends are removed unless
 * another manager owns them; fields other managers own whose value
 * changes are conflicts; the applier's Apply entry becomes exactly the
 * set it sent. Defaulting is not part of it (the caller defaults the
 * result), nor are status and server metadata: live's uid,
 * resourceVersion, ... are kept because applied objects lack them; a
 * `status` or `resourceVersion` in `applied` is merged like any field, so
 * the caller strips or resets what its strategy does not accept. Values
 * are compared as JSON values (1 == 1.0, but "1000m" != "1": quantities
 * are canonicalized by the caller, after). A removed field takes with it
 * the maps and lists it leaves empty (not ones that were empty before).
 * ---------------------------------------------------------------------
 */
struct diff_ssa_result {
	/*
	 * The object to store, managedFields updated; NULL when the apply
	 * failed with conflicts. When !changed it is a copy of live (old
	 * managedFields times included): write nothing, keep the
	 * resourceVersion.
	 */
	json_t *object;
	bool changed;
	/*
	 * Without force, the conflicts (nothing to write), else NULL: an
	 * array of {"manager", "operation", "apiVersion", "subresource"
	 * (only when set), "field"} ordered by manager, then path in
	 * canonical order; "field" in the API server's path syntax
	 * (".spec.replicas").
	 */
	json_t *conflicts;
};

/*
 * Apply `applied` as field manager `manager` to `live` (NULL: create).
 * `schema` is the kind's root schema (diff_schemas_lookup()), `time` the
 * RFC 3339 time for the new managedFields entries (required). A live
 * object without managedFields first gets a "before-first-apply" Update
 * entry owning all its fields. Unreadable managedFields entries of live
 * are dropped. metadata.managedFields in `applied` is ignored. Entries
 * are stored in the API server's order (operation, time, manager,
 * apiVersion, subresource); an entry left without fields is dropped.
 *
 * Returns 0 with *out filled (caller storage; release with
 * diff_ssa_result_release()) also when there are conflicts: check
 * out->conflicts. ERR_INVALID when applied is not an object or has no
 * apiVersion, manager is empty, time is NULL, or applied cannot be typed
 * (a map-list item without its key); ERR_NOMEM. On error *out is empty.
 */
int diff_ssa_apply(struct diff_ssa_result *out, const json_t *live,
		   const json_t *applied, const struct diff_schema *schema,
		   const char *manager, bool force, const char *time,
		   struct err *err);

void diff_ssa_result_release(struct diff_ssa_result *res);

/*
 * The 409 Conflict of an apply, byte for byte as kube-apiserver words it:
 * appends to `message` "Apply failed with 1 conflict: conflict with
 * \"kube-controller-manager\" with subresource \"scale\" using apps/v1:
 * .spec.replicas" (several: "Apply failed with N conflicts: conflicts with
 * \"m\" using v1:\n- .a\n- .b", managers in order), and sets *causes
 * (may be NULL; caller owns it) to the Status details.causes array
 * [{"reason":"FieldManagerConflict","message":"conflict with ...",
 * "field":".spec.replicas"}]. `conflicts` is diff_ssa_result.conflicts.
 */
int diff_ssa_conflict_message(const json_t *conflicts, struct buf *message,
			      json_t **causes);

/*
 * YAML scalars: what go-yaml v2's resolver (YAML 1.1 rules) reads a plain
 * scalar as. The manifest decoder loads values with it; the YAML encoder
 * quotes a string whose plain text would read back as anything but a
 * string.
 */

/* What a plain scalar resolves to, and which field of the result holds it. */
enum diff_yaml_kind {
	DIFF_YAML_STR,	     /* the text itself */
	DIFF_YAML_NULL,	     /* "", "~", null, Null, NULL */
	DIFF_YAML_BOOL,	     /* .b: y, yes, true, on, n, no, ... */
	DIFF_YAML_INT,	     /* .i: strconv.ParseInt(text, 0) */
	DIFF_YAML_UINT,	     /* .u: beyond int64, strconv.ParseUint */
	DIFF_YAML_FLOAT,     /* .f; may be infinite or NaN (.inf, .nan) */
	DIFF_YAML_TIMESTAMP, /* go-yaml keeps the text, as for a string */
};

struct diff_yaml_scalar {
	enum diff_yaml_kind kind;
	bool b;
	int64_t i;
	uint64_t u;
	double f;
};

enum diff_yaml_resolve_flags {
	/* Try the timestamp layouts (go-yaml: untagged or !!timestamp). */
	DIFF_YAML_TRY_TIMESTAMP = 1 << 0,
};

/*
 * Resolve the plain scalar text s[0..n) (need not be NUL-terminated) as
 * go-yaml v2's resolve() does for an untagged plain scalar, or for the
 * text under an explicit !!int/!!float/!!bool/!!null/!!timestamp tag:
 * bools, nulls and .inf/.nan by their exact spellings; numbers with '_'
 * removed, as Go's ParseInt/ParseUint (base from the prefix: 0x, 0o, 0b,
 * leading 0), then yamlStyleFloat and ParseFloat (a float too large, like
 * 1e400, stays a string), then "0b<signed binary>"; timestamps only with
 * DIFF_YAML_TRY_TIMESTAMP (a zone offset beyond +24:60 makes no
 * timestamp, as time.Parse in the Go kubectl 1.32 is built with decides).
 * Base-60 floats ("1:20") are strings here.
 * `flags` is a mask of enum diff_yaml_resolve_flags; `scratch` is the
 * caller's buffer for the text without underscores (contents replaced).
 * Fills *out (caller storage, nothing to release). 0, or ERR_NOMEM.
 */
int diff_yaml_resolve(struct diff_yaml_scalar *out, const char *s, size_t n,
		      unsigned flags, struct buf *scratch);

#endif
