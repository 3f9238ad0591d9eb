/*
 * The Kubernetes protobuf encoding, read side, for the few kinds that
 * kubectl's typed commands send that way (`kubectl create configmap`,
 * `create secret generic`, `create namespace`, `create serviceaccount`).
 *
 * A body is "k8s\0" then a runtime.Unknown message: 1 TypeMeta
 * {1 apiVersion, 2 kind}, 2 raw (the object's own message). Only the
 * fields those commands fill are decoded; others are skipped.
 */
#include <string.h>

#include "kube-emu/emu.h"
#include "util/base64.h"

#include "util/banned.h" /* last */

struct pb {
	const unsigned char *p;
	const unsigned char *end;
};

static int pb_varint(struct pb *in, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (in->p < in->end && shift < 64) {
		unsigned char c = *in->p++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
		shift += 7;
	}
	return -1;
}

/*
 * Next field: its number, wire type and, for length-delimited ones, the
 * bytes in *sub. 1 when a field was read, 0 at the end, -1 on bad data.
 */
static int pb_next(struct pb *in, unsigned *field, unsigned *wt, uint64_t *num,
		   struct pb *sub)
{
	uint64_t key, len;

	if (in->p == in->end)
		return 0;
	if (pb_varint(in, &key) < 0)
		return -1;
	*field = (unsigned)(key >> 3);
	*wt = (unsigned)(key & 7);
	switch (*wt) {
	case 0:
		return pb_varint(in, num) < 0 ? -1 : 1;
	case 1:
	case 5:
		len = *wt == 1 ? 8 : 4;
		if ((uint64_t)(in->end - in->p) < len)
			return -1;
		in->p += len;
		return 1;
	case 2:
		if (pb_varint(in, &len) < 0 ||
		    len > (uint64_t)(in->end - in->p))
			return -1;
		sub->p = in->p;
		sub->end = in->p + len;
		in->p += len;
		return 1;
	default:
		return -1;
	}
}

static json_t *pb_string(const struct pb *s)
{
	return json_stringn((const char *)s->p, (size_t)(s->end - s->p));
}

/* A map entry {1 key, 2 value} into obj[key]; bytes values as base64. */
static int pb_map_entry(struct pb *in, json_t *obj, bool bytes)
{
	struct pb sub, key = {NULL, NULL}, val = {NULL, NULL};
	struct buf b = BUF_INIT;
	unsigned f, wt;
	uint64_t num;
	int r;

	while ((r = pb_next(in, &f, &wt, &num, &sub)) == 1) {
		if (wt == 2 && f == 1)
			key = sub;
		else if (wt == 2 && f == 2)
			val = sub;
	}
	if (r < 0 || !key.p)
		return -1;
	if (!val.p) {
		/* An empty value is not written at all. */
		val.p = key.end;
		val.end = key.end;
	}
	if (bytes) {
		base64_encode(&b, val.p, (size_t)(val.end - val.p), 0);
		json_object_setn_new(obj, (const char *)key.p,
				     (size_t)(key.end - key.p),
				     json_string(buf_cstr(&b)));
		buf_release(&b);
	} else {
		json_object_setn_new(obj, (const char *)key.p,
				     (size_t)(key.end - key.p),
				     pb_string(&val));
	}
	return 0;
}

/* Get or add the object member `key`. */
static json_t *member(json_t *obj, const char *key)
{
	json_t *m = json_object_get(obj, key);

	if (!m) {
		m = json_object();
		json_object_set_new(obj, key, m);
	}
	return m;
}

static int pb_object_meta(struct pb *in, json_t *meta)
{
	static const char *const strings[] = {
		NULL, "name", "generateName",	"namespace",
		NULL, "uid",  "resourceVersion"};
	struct pb sub;
	unsigned f, wt;
	uint64_t num;
	int r;

	while ((r = pb_next(in, &f, &wt, &num, &sub)) == 1) {
		if (wt != 2)
			continue;
		if (f < sizeof(strings) / sizeof(strings[0]) && strings[f]) {
			if (sub.end > sub.p)
				json_object_set_new(meta, strings[f],
						    pb_string(&sub));
		} else if (f == 11 || f == 12) {
			if (pb_map_entry(&sub,
					 member(meta, f == 11 ? "labels"
							      : "annotations"),
					 false) < 0)
				return -1;
		} else if (f == 14) {
			json_t *fin = json_object_get(meta, "finalizers");

			if (!fin) {
				fin = json_array();
				json_object_set_new(meta, "finalizers", fin);
			}
			json_array_append_new(fin, pb_string(&sub));
		}
	}
	return r;
}

/* The object message of `kind` into obj (which has kind/apiVersion). */
static int pb_object(struct pb *in, const char *kind, json_t *obj)
{
	struct pb sub;
	unsigned f, wt;
	uint64_t num;
	bool cm = !strcmp(kind, "ConfigMap"), secret = !strcmp(kind, "Secret");
	bool ns = !strcmp(kind, "Namespace");
	bool sa = !strcmp(kind, "ServiceAccount");
	int r;

	if (!cm && !secret && !ns && !sa)
		return -1;
	json_object_set_new(obj, "metadata", json_object());
	while ((r = pb_next(in, &f, &wt, &num, &sub)) == 1) {
		if (f == 1 && wt == 2) {
			if (pb_object_meta(
				    &sub, json_object_get(obj, "metadata")) < 0)
				return -1;
		} else if (cm && wt == 2 && (f == 2 || f == 3)) {
			if (pb_map_entry(
				    &sub,
				    member(obj, f == 2 ? "data" : "binaryData"),
				    f == 3) < 0)
				return -1;
		} else if (secret && wt == 2 && (f == 2 || f == 4)) {
			if (pb_map_entry(
				    &sub,
				    member(obj, f == 2 ? "data" : "stringData"),
				    f == 2) < 0)
				return -1;
		} else if (secret && wt == 2 && f == 3 && sub.end > sub.p) {
			json_object_set_new(obj, "type", pb_string(&sub));
		} else if ((cm && f == 4) || (secret && f == 5)) {
			if (wt == 0)
				json_object_set_new(obj, "immutable",
						    json_boolean(num));
		} else if (sa && f == 4 && wt == 0) {
			json_object_set_new(obj, "automountServiceAccountToken",
					    json_boolean(num));
		} else if (ns && f == 2 && wt == 2) {
			struct pb spec = sub, fin;
			json_t *arr = json_array();

			while ((r = pb_next(&spec, &f, &wt, &num, &fin)) == 1)
				if (f == 1 && wt == 2)
					json_array_append_new(arr,
							      pb_string(&fin));
			json_object_set_new(
				obj, "spec",
				json_pack("{s:o}", "finalizers", arr));
			if (r < 0)
				return -1;
		}
	}
	return r;
}

json_t *emu_protobuf_decode(const char *data, size_t len, struct buf *msg)
{
	struct pb in = {(const unsigned char *)data,
			(const unsigned char *)data + len};
	struct pb sub, tm, raw = {NULL, NULL}, s;
	json_t *obj = json_object();
	unsigned f, wt, f2, wt2;
	uint64_t num;
	int r;

	if (len < 4 || memcmp(data, "k8s\0", 4)) {
		buf_adds(msg, "provided data does not appear to be a "
			      "protobuf message, expected prefix "
			      "[107 56 115 0]");
		goto fail;
	}
	in.p += 4;
	while ((r = pb_next(&in, &f, &wt, &num, &sub)) == 1) {
		if (wt != 2)
			continue;
		if (f == 1) {
			tm = sub;
			while ((r = pb_next(&tm, &f2, &wt2, &num, &s)) == 1)
				if (wt2 == 2 && (f2 == 1 || f2 == 2))
					json_object_set_new(
						obj,
						f2 == 1 ? "apiVersion" : "kind",
						pb_string(&s));
			if (r < 0)
				break;
		} else if (f == 2) {
			raw = sub;
		}
	}
	if (r < 0 || !raw.p || !json_object_get(obj, "kind")) {
		buf_adds(msg, "malformed protobuf body");
		goto fail;
	}
	if (pb_object(&raw, json_string_value(json_object_get(obj, "kind")),
		      obj) < 0) {
		buf_addf(msg,
			 "kube-emu cannot decode %s from protobuf; "
			 "send application/json",
			 json_string_value(json_object_get(obj, "kind")));
		goto fail;
	}
	return obj;
fail:
	json_decref(obj);
	return NULL;
}
