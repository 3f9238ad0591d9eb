/*
 * The Go types of the built-in kinds, as kube-apiserver 1.36 decodes and
 * encodes them: every JSON field of every struct, omitempty and omitzero,
 * pointers, and the structured-merge-diff relationships of its field
 * manager (list types and keys, atomic maps and structs). The table is
 * generated (gotypes_gen.c, by diff/gen from the k8s.io modules);
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
#ifndef DIFF_GOTYPES_H
#define DIFF_GOTYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "util/buf.h"

enum diff_gotype_tkind {
	DIFF_GT_STRUCT,
	DIFF_GT_SLICE,
	DIFF_GT_MAP,
	DIFF_GT_STRING,
	DIFF_GT_BOOL,
	DIFF_GT_INT,
	DIFF_GT_FLOAT,
	DIFF_GT_BYTES,	     /* []byte: a base64 string */
	DIFF_GT_QUANTITY,	     /* resource.Quantity: a string (or number) */
	DIFF_GT_INT_OR_STRING, /* intstr.IntOrString */
	DIFF_GT_TIME,	     /* metav1.Time: RFC 3339 or null */
	DIFF_GT_MICRO_TIME,    /* metav1.MicroTime */
	DIFF_GT_DURATION,	     /* metav1.Duration: "1m30s" */
	DIFF_GT_RAW,	     /* any JSON (RawExtension, JSON, FieldsV1) */
};

/* Structured-merge-diff relationships. */
enum diff_gotype_rel {
	DIFF_GT_REL_DEFAULT,  /* maps and structs granular, lists atomic */
	DIFF_GT_REL_ATOMIC,	  /* replaced whole */
	DIFF_GT_REL_GRANULAR, /* a map merged key by key */
	DIFF_GT_REL_SET,	  /* a list of scalars merged as a set */
	DIFF_GT_REL_MAP,	  /* a list of objects merged by its keys */
};

enum diff_gotype_field_flags {
	DIFF_GT_F_OMITEMPTY = 1 << 0,
	DIFF_GT_F_POINTER = 1 << 1,
	DIFF_GT_F_OMITZERO = 1 << 2,
};

struct diff_gotype_field {
	const char *name; /* the JSON name */
	int type;	  /* index in diff_gotypes */
	int order;	  /* position in the Go struct (encoding order) */
	unsigned flags;
	enum diff_gotype_rel rel;	 /* of the field's list or map or struct */
	const char *const *keys; /* DIFF_GT_REL_MAP: the key fields */
	const char *def;	 /* the OpenAPI default as JSON, or NULL */
};

struct diff_gotype {
	const char *name;   /* OpenAPI model name; "[]X", "map[string]X" */
	const char *gotype; /* "v1.PodSpec", "int32", "[]v1.Container" */
	enum diff_gotype_tkind kind;
	int elem;	  /* slices and maps: the element type; else -1 */
	enum diff_gotype_rel rel; /* structs: x-kubernetes-map-type of the type */
	const struct diff_gotype_field *fields; /* structs: sorted by name */
	size_t nfields;
};

struct diff_gotype_kind {
	const char *group;
	const char *version;
	const char *kind;
	int type;
};

/* gotypes_gen.c */
extern const struct diff_gotype diff_gotypes[];
extern const size_t diff_ngotypes;
extern const struct diff_gotype_kind diff_gotype_kinds[]; /* ended by kind NULL */

/* A field of struct type `type` by JSON name, or NULL. */
const struct diff_gotype_field *diff_gotype_field(int type, const char *name);

#endif
