/*
 * The Go types of the built-in kinds, as kube-apiserver 1.36 decodes and
 * encodes them: every JSON field of every struct, omitempty and omitzero,
 * pointers, and the structured-merge-diff relationships of its field
 * manager (list types and keys, atomic maps and structs). The table is
 * generated (types_gen.c, by kube-emu/gen from the k8s.io modules);
 * types.c reads it:
 *
 *   decoding    what the server's decoder keeps of a body: unknown fields
 *               dropped (and named, for fieldValidation), values of the
 *               wrong JSON type refused with encoding/json's message
 *   encoding    what the server stores and answers: omitempty zero values
 *               left out, every other field written (null for nil
 *               pointers, slices and maps; "" / 0 / false; {} structs)
 *   zero        the encoding of the kind's zero value (what the field
 *               manager compares a create against)
 *   schema      an openAPIV3Schema-like JSON of the kind, for diff/'s
 *               schema registry (server-side apply and managedFields)
 */
#ifndef KUBE_EMU_TYPES_H
#define KUBE_EMU_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "util/buf.h"

enum emu_tkind {
	EMU_T_STRUCT,
	EMU_T_SLICE,
	EMU_T_MAP,
	EMU_T_STRING,
	EMU_T_BOOL,
	EMU_T_INT,
	EMU_T_FLOAT,
	EMU_T_BYTES,	     /* []byte: a base64 string */
	EMU_T_QUANTITY,	     /* resource.Quantity: a string (or number) */
	EMU_T_INT_OR_STRING, /* intstr.IntOrString */
	EMU_T_TIME,	     /* metav1.Time: RFC 3339 or null */
	EMU_T_MICRO_TIME,    /* metav1.MicroTime */
	EMU_T_DURATION,	     /* metav1.Duration: "1m30s" */
	EMU_T_RAW,	     /* any JSON (RawExtension, JSON, FieldsV1) */
};

/* Structured-merge-diff relationships. */
enum emu_rel {
	EMU_REL_DEFAULT,  /* maps and structs granular, lists atomic */
	EMU_REL_ATOMIC,	  /* replaced whole */
	EMU_REL_GRANULAR, /* a map merged key by key */
	EMU_REL_SET,	  /* a list of scalars merged as a set */
	EMU_REL_MAP,	  /* a list of objects merged by its keys */
};

enum emu_tfield_flags {
	EMU_TF_OMITEMPTY = 1 << 0,
	EMU_TF_POINTER = 1 << 1,
	EMU_TF_OMITZERO = 1 << 2,
};

struct emu_tfield {
	const char *name; /* the JSON name */
	int type;	  /* index in emu_types */
	int order;	  /* position in the Go struct (encoding order) */
	unsigned flags;
	enum emu_rel rel;	 /* of the field's list or map or struct */
	const char *const *keys; /* EMU_REL_MAP: the key fields */
	const char *def;	 /* the OpenAPI default as JSON, or NULL */
};

struct emu_type {
	const char *name;   /* OpenAPI model name; "[]X", "map[string]X" */
	const char *gotype; /* "v1.PodSpec", "int32", "[]v1.Container" */
	enum emu_tkind kind;
	int elem;	  /* slices and maps: the element type; else -1 */
	enum emu_rel rel; /* structs: x-kubernetes-map-type of the type */
	const struct emu_tfield *fields; /* structs: sorted by name */
	size_t nfields;
};

struct emu_kind_type {
	const char *group;
	const char *version;
	const char *kind;
	int type;
};

/* types_gen.c */
extern const struct emu_type emu_types[];
extern const size_t emu_ntypes;
extern const struct emu_kind_type emu_kind_types[]; /* ended by kind NULL */

/* The root type of group/version/kind; -1 for kinds not in the table. */
int emu_type_root(const char *group, const char *version, const char *kind);

/* A field of struct type `type` by JSON name, or NULL. */
const struct emu_tfield *emu_type_field(int type, const char *name);

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
int emu_types_decode(json_t *obj, int root, json_t *unknown, struct buf *msg);

/*
 * Encode `obj` (in place) as the server writes an object of type `root`:
 * omitempty fields holding their zero value go, every other field is
 * written (absent ones as their zero value), members in Go's order.
 * Values are expected to be decoded already.
 */
void emu_types_encode(json_t *obj, int root);

/* The encoding of the zero value of `root` (new reference). */
json_t *emu_types_zero(int root);

/*
 * An openAPIV3Schema of `root` as diff_schemas_add_crd() reads it
 * (properties, items, additionalProperties, x-kubernetes-list-type,
 * -list-map-keys, -map-type, key defaults); a type met again below itself
 * (JSONSchemaProps) is cut off as preserve-unknown-fields. New reference.
 */
json_t *emu_types_schema(int root);

#endif
