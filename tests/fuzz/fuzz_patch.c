/*
 * libFuzzer target for kube-emu's patches (kube-emu/patch.c,
 * kube-emu/handler.c): RFC 6902 JSON patch and the strategic merge patch
 * called directly, and a PATCH request of each kind (JSON merge patch,
 * strategic, JSON patch) through emu_handle() on an object created in a
 * fresh in-memory store (a store costs more than the rest: only inputs
 * with flag bit 3 take that way). `make fuzz` builds and runs it from
 * tests/fuzz/corpus/fuzz_patch.
 *
 * Input: one flag byte (bits 0-1: the PATCH request's type, merge,
 * strategic or JSON patch; bit 2: a Deployment instead of a ConfigMap;
 * bit 3: send the request),
 * then the object's JSON, a NUL byte, and the patch.
 *
 * Besides the sanitizers, it checks: emu_json_patch() answers 0 or one of
 * kube's codes (400, 409, 413, 422, 500) with a message; after a
 * successful JSON patch whose last operation is add, replace or test, the
 * value at its path is the operation's value; a strategic merge patch
 * gives an object, or NULL with 400, 415, 422 or 500 and a message; the
 * PATCH request answers 200 with the object (same kind and name) or a
 * Status of the same code, and a GET afterwards shows the patched object,
 * or the object unchanged when the patch failed; a merge patch of string
 * values of a ConfigMap's data leaves exactly those values (null: none).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube-emu/emu.h"

#define NS   "default"
#define NAME "fuzz"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const patch_types[] = {
	"application/merge-patch+json",
	"application/strategic-merge-patch+json",
	"application/json-patch+json",
	"application/merge-patch+json",
};

static bool kube_code(int code, const int *codes)
{
	for (; *codes; codes++)
		if (code == *codes)
			return true;
	return false;
}

/*
 * The value at an RFC 6901 pointer, or NULL ("-" and bad indexes). As in
 * evanphx/json-patch v4, what comes before the first '/' is ignored.
 */
static json_t *pointer_get(json_t *doc, const char *ptr)
{
	char tok[256];
	size_t n;

	if (!(ptr = strchr(ptr, '/')))
		return NULL;
	while (doc && *ptr) {
		if (*ptr++ != '/')
			return NULL;
		for (n = 0; *ptr && *ptr != '/'; ptr++) {
			char c = *ptr;

			if (c == '~') {
				if (ptr[1] != '0' && ptr[1] != '1')
					return NULL;
				c = *++ptr == '0' ? '~' : '/';
			}
			if (n + 1 >= sizeof(tok))
				return NULL;
			tok[n++] = c;
		}
		tok[n] = '\0';
		if (json_is_object(doc)) {
			doc = json_object_get(doc, tok);
		} else if (json_is_array(doc)) {
			char *end;
			unsigned long i;

			if (!n || (tok[0] == '0' && n > 1) || tok[0] < '0' ||
			    tok[0] > '9')
				return NULL;
			i = strtoul(tok, &end, 10);
			if (*end)
				return NULL;
			doc = json_array_get(doc, i);
		} else {
			return NULL;
		}
	}
	return doc;
}

static void check_json_patch(const json_t *obj, const json_t *ops)
{
	static const int codes[] = {400, 409, 413, 422, 500, 0};
	struct buf msg = BUF_INIT;
	json_t *doc = json_deep_copy(obj), *last, *want, *have;
	const char *op, *path;
	int code;

	if (!doc)
		return;
	code = emu_json_patch(doc, ops, &msg);
	if (code && (!kube_code(code, codes) || !msg.len))
		abort();
	last = json_array_get(ops, json_array_size(ops) - 1);
	op = json_string_value(json_object_get(last, "op"));
	path = json_string_value(json_object_get(last, "path"));
	want = json_object_get(last, "value");
	if (!code && op && path && want &&
	    (!strcmp(op, "add") || !strcmp(op, "replace") ||
	     !strcmp(op, "test")) &&
	    (strlen(path) < 2 || strcmp(path + strlen(path) - 2, "/-"))) {
		have = pointer_get(doc, path);
		if (have && !json_equal(have, want))
			abort();
		if (!have && strcmp(op, "test"))
			abort();
	}
	json_decref(doc);
	buf_release(&msg);
}

static void check_strategic(const json_t *obj, const json_t *patch,
			    const struct emu_resource *res)
{
	static const int codes[] = {400, 415, 422, 500, 0};
	struct buf msg = BUF_INIT;
	json_t *out;
	int code = 0;

	out = emu_strategic_merge_patch(obj, patch, res, &code, &msg);
	if (out ? !json_is_object(out) : !kube_code(code, codes) || !msg.len)
		abort();
	json_decref(out);
	buf_release(&msg);
}

/* One request; *out the parsed body (every answer here is JSON). */
static int call(struct emu_server *s, const char *method, const char *path,
		const char *ct, const char *body, size_t len, json_t **out)
{
	struct emu_response resp = EMU_RESPONSE_INIT;
	struct emu_request req = {0};

	req.method = method;
	req.path = path;
	req.content_type = ct;
	req.body = body;
	req.body_len = len;
	req.authorization = "Bearer T";
	req.user_agent = "fuzz/1";
	emu_handle(s, &req, &resp);
	if (resp.watch)
		abort();
	*out = json_loadb(resp.body.ptr ? resp.body.ptr : "", resp.body.len, 0,
			  NULL);
	if (!json_is_object(*out))
		abort();
	emu_response_release(&resp);
	return resp.code;
}

static const char *str(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	return json_string_value(b ? json_object_get(v, b) : v);
}

static void check_request(json_t *obj, const char *patch, size_t len,
			  unsigned flags)
{
	static const int codes[] = {400, 409, 413, 415, 422, 500, 0};
	bool deploy = flags & 4;
	const char *coll = deploy ? "/apis/apps/v1/namespaces/" NS
				    "/deployments"
				  : "/api/v1/namespaces/" NS "/configmaps";
	const char *kind = deploy ? "Deployment" : "ConfigMap";
	const char *ct = patch_types[flags & 3];
	struct emu_server srv = {0};
	json_t *created = NULL, *patched = NULL, *got = NULL, *p = NULL;
	char path[128], *body = NULL;
	int code;

	srv.token = "T";
	srv.host = "127.0.0.1:1";
	if (emu_store_init(&srv.store) < 0)
		abort();
	snprintf(path, sizeof(path), "%s/%s", coll, NAME);
	json_object_set_new(obj, "apiVersion",
			    json_string(deploy ? "apps/v1" : "v1"));
	json_object_set_new(obj, "kind", json_string(kind));
	if (!json_is_object(json_object_get(obj, "metadata")))
		json_object_set_new(obj, "metadata", json_object());
	json_object_set_new(json_object_get(obj, "metadata"), "name",
			    json_string(NAME));
	json_object_del(json_object_get(obj, "metadata"), "namespace");
	if (!(body = json_dumps(obj, JSON_COMPACT)))
		goto out;
	code = call(&srv, "POST", coll, "application/json", body, strlen(body),
		    &created);
	if (code != 201)
		goto out;

	code = call(&srv, "PATCH", path, ct, patch, len, &patched);
	if (code == 200) {
		if (strcmp(str(patched, "kind", NULL), kind) ||
		    strcmp(str(patched, "metadata", "name"), NAME))
			abort();
	} else if (!kube_code(code, codes) ||
		   strcmp(str(patched, "kind", NULL), "Status") ||
		   json_integer_value(json_object_get(patched, "code")) !=
			   code) {
		abort();
	}
	if (call(&srv, "GET", path, NULL, NULL, 0, &got) != 200 ||
	    !json_equal(got, code == 200 ? patched : created))
		abort();

	/* RFC 7386: a string value is set, null removes. */
	p = json_loadb(patch, len, 0, NULL);
	if (code == 200 && !deploy && !(flags & 2) && json_is_object(p) &&
	    json_is_object(json_object_get(p, "data"))) {
		const char *k;
		json_t *v;

		json_object_foreach(json_object_get(p, "data"), k, v)
		{
			json_t *have = json_object_get(
				json_object_get(patched, "data"), k);

			if ((json_is_null(v) && have) ||
			    (json_is_string(v) && !json_equal(v, have)))
				abort();
		}
	}
out:
	free(body);
	json_decref(p);
	json_decref(created);
	json_decref(patched);
	json_decref(got);
	emu_store_release(&srv.store);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct emu_resource *deploy =
		emu_resource_find("apps", "v1", "deployments");
	const uint8_t *nul;
	json_t *obj, *patch;
	const char *ptext;
	size_t plen;

	if (size < 1 || !(nul = memchr(data + 1, '\0', size - 1)))
		return 0;
	obj = json_loadb((const char *)data + 1, (size_t)(nul - data - 1), 0,
			 NULL);
	if (!json_is_object(obj)) {
		json_decref(obj);
		return 0;
	}
	ptext = (const char *)nul + 1;
	plen = size - (size_t)(nul + 1 - data);
	patch = json_loadb(ptext, plen, JSON_DECODE_ANY, NULL);
	if (patch) {
		check_json_patch(obj, patch);
		if (deploy)
			check_strategic(obj, patch, deploy);
	}
	json_decref(patch);
	if (data[0] & 8)
		check_request(obj, ptext, plen, data[0]);
	json_decref(obj);
	return 0;
}
