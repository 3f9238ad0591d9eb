/*
 * Request routing: paths, verbs, bodies and the Status of every failure.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "diff/diff.h"
#include "renderers/render.h"
#include "kube-emu/emu.h"
#include "util/base64.h"
#include "util/clock.h"

#include "util/banned.h" /* last */

#define MAX_SEGMENTS 10
/* Most query parameters a deprecated watch path is rewritten with. */
#define MAX_QUERY 32

/* A parsed resource URL. */
struct target {
	const struct emu_resource *res;
	const char *ns;	  /* "": cluster-scoped; NULL: all namespaces */
	const char *name; /* NULL: the collection */
	const char *sub;  /* NULL, "status" or "scale" */
};

static const char *query(const struct emu_request *req, const char *key)
{
	size_t i;

	for (i = 0; i < req->nquery; i++)
		if (!strcmp(req->query[i].key, key))
			return req->query[i].value ? req->query[i].value : "";
	return NULL;
}

void emu_response_release(struct emu_response *resp)
{
	buf_release(&resp->body);
	buf_release(&resp->warnings);
}

void emu_response_warn(struct emu_response *resp, const char *text)
{
	buf_adds(&resp->warnings, text);
	buf_addch(&resp->warnings, '\n');
}

void emu_reply_json(struct emu_response *resp, int code, json_t *body)
{
	resp->code = code;
	resp->content_type = "application/json";
	buf_reset(&resp->body);
	if (body && emu_json_write(body, &resp->body) == 0) {
		buf_addch(&resp->body, '\n');
	} else {
		buf_reset(&resp->body);
		resp->code = 500;
		buf_adds(&resp->body,
			 "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
			 "\"metadata\":{},\"status\":\"Failure\",\"message\":"
			 "\"out of memory\",\"reason\":\"InternalError\","
			 "\"code\":500}\n");
	}
	json_decref(body);
}

/* A Status failure; reply_json takes the reference. */
void emu_reply_status(struct emu_response *resp, int code, const char *reason,
		      const char *message)
{
	emu_reply_json(resp, code,
		       emu_status_new(code, reason, message, NULL, NULL, NULL));
}

static void reply_not_found(struct emu_response *resp)
{
	json_t *st = emu_status_new(404, "NotFound",
				    "the server could not find the requested "
				    "resource",
				    NULL, NULL, NULL);

	json_object_set_new(st, "details", json_object());
	emu_reply_json(resp, 404, st);
}

static void reply_method_not_allowed(struct emu_response *resp,
				     const struct emu_request *req)
{
	json_t *st = emu_status_new(405, "MethodNotAllowed",
				    "the server does not allow this method on "
				    "the requested resource",
				    NULL, NULL, NULL);

	(void)req;
	json_object_set_new(st, "details", json_object());
	emu_reply_json(resp, 405, st);
}

/* What the API server's mux answers for a path no group serves. */
static void reply_page_not_found(struct emu_response *resp)
{
	resp->code = 404;
	resp->content_type = "text/plain; charset=utf-8";
	buf_reset(&resp->body);
	buf_adds(&resp->body, "404 page not found\n");
}

/* The apiVersion and kind a create or update body may leave out. */
static void fill_identity(json_t *obj, const char *av, const char *kind)
{
	const char *have = json_string_value(json_object_get(obj, "kind"));

	if (!have || !*have)
		json_object_set_new(obj, "kind", json_string(kind));
	have = json_string_value(json_object_get(obj, "apiVersion"));
	if (!have || !*have)
		json_object_set_new(obj, "apiVersion", json_string(av));
}

static bool authorized(const struct emu_server *srv,
		       const struct emu_request *req)
{
	const char *a = req->authorization;

	if (!srv->token)
		return true;
	if (!a || strncasecmp(a, "Bearer ", 7))
		return false;
	return !strcmp(a + 7, srv->token);
}

/* Is the media type (before any ';') one of the comma-free list? */
static bool media_is(const char *ct, const char *want)
{
	size_t n = strlen(want);

	return ct && !strncasecmp(ct, want, n) &&
	       (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/*
 * go-yaml's words for a YAML error: render_parse()'s "body:LINE:COL:
 * cause" becomes "line LINE: cause", without the line on the first one
 * (go-yaml prints only a non-zero 0-based line).
 */
static void yaml_error(const char *why, struct buf *out)
{
	unsigned line = 0, col = 0;
	int n = 0;

	if (sscanf(why, "%*[^:]:%u:%u: %n", &line, &col, &n) == 2 && n > 0)
		why += n;
	if (line > 1)
		buf_addf(out, "line %u: ", line);
	buf_adds(out, why);
}

/* handlers.summarizeData: what a decode error quotes of the body. */
static void summarize(const struct emu_request *req, struct buf *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = req->body_len, i;

	if (!n) {
		buf_adds(out, "<empty>");
		return;
	}
	if (n > 30)
		n = 30;
	if (req->body[0] == '{') {
		buf_add(out, req->body, n);
	} else {
		for (i = 0; i < n; i++) {
			buf_addch(out, hex[(unsigned char)req->body[i] >> 4]);
			buf_addch(out, hex[(unsigned char)req->body[i] & 15]);
		}
	}
	if (req->body_len > 30)
		buf_adds(out, " ...");
}

/*
 * Decode a create/update body into one JSON object. On failure fills
 * resp (as transformDecodeError words it: "the object provided is
 * unrecognized (must be of type ConfigMap): <decoder's error> (<the body's
 * start>)") and returns NULL.
 */
static json_t *decode_body(const struct emu_request *req,
			   const struct target *t, struct emu_response *resp,
			   json_t *dups)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err err = ERR_INIT;
	struct buf msg = BUF_INIT, why = BUF_INIT;
	const char *ct = req->content_type;
	bool yaml = media_is(ct, "application/yaml");
	json_t *obj = NULL;

	if (req->body_too_large) {
		buf_addf(&msg, "Request entity too large: limit is %u",
			 EMU_MAX_BODY);
		emu_reply_status(resp, 413, "RequestEntityTooLarge", msg.ptr);
		goto out;
	}
	if (media_is(ct, "application/vnd.kubernetes.protobuf")) {
		obj = emu_protobuf_decode(req->body ? req->body : "",
					  req->body_len, &msg);
		if (!obj)
			emu_reply_status(resp, 415, "UnsupportedMediaType",
					 msg.ptr);
		goto out;
	}
	if (ct && *ct && !media_is(ct, "application/json") && !yaml &&
	    !media_is(ct, "*/*")) {
		buf_addf(&msg, "the body of the request was in an unknown "
			       "format - accepted media types include: "
			       "application/json, application/yaml, "
			       "application/vnd.kubernetes.protobuf");
		emu_reply_status(resp, 415, "UnsupportedMediaType", msg.ptr);
		goto out;
	}
	if (!yaml && emu_go_json_scan(req->body ? req->body : "",
				      req->body_len, &why, dups) < 0) {
		buf_addf(&msg,
			 "the object provided is unrecognized (must be of "
			 "type %s): couldn't get version/kind; json parse "
			 "error: %s (",
			 t->res->kind, why.ptr);
		summarize(req, &msg);
		buf_addch(&msg, ')');
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
		goto out;
	}
	if (!yaml) {
		/* JSON: a repeated key's last value counts (dups name it) */
		obj = json_loadb(req->body, req->body_len, JSON_DECODE_ANY,
				 NULL);
		if (!json_is_object(obj)) {
			json_decref(obj);
			obj = NULL;
			emu_reply_status(resp, 400, "BadRequest",
					 "Object 'Kind' is missing in the "
					 "request body");
		}
		goto out;
	}
	if (render_parse(&docs, req->body ? req->body : "", req->body_len,
			 "body", &err) < 0) {
		buf_addf(&msg,
			 "the object provided is unrecognized (must be of "
			 "type %s): yaml: ",
			 t->res->kind);
		yaml_error(err_first(&err), &msg);
		buf_adds(&msg, " (");
		summarize(req, &msg);
		buf_addch(&msg, ')');
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
		goto out;
	}
	if (docs.len != 1 || !json_is_object(docs.items[0].value)) {
		emu_reply_status(resp, 400, "BadRequest",
				 docs.len > 1
					 ? "the request body must hold a "
					   "single object"
					 : "Object 'Kind' is missing in the "
					   "request body");
		goto out;
	}
	obj = json_incref(docs.items[0].value);
out:
	render_docs_release(&docs);
	err_release(&err);
	buf_release(&msg);
	buf_release(&why);
	return obj;
}

/*
 * Decode an apply body (YAML or JSON) into one object. On failure fills
 * resp with "error decoding YAML: error converting YAML to JSON: yaml:
 * <cause>" and returns NULL. Caller owns the result.
 */
static json_t *decode_apply(const struct emu_request *req,
			    struct emu_response *resp)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err err = ERR_INIT;
	struct buf msg = BUF_INIT;
	json_t *obj = NULL;

	if (req->body_too_large) {
		buf_addf(&msg, "Request entity too large: limit is %u",
			 EMU_MAX_BODY);
		emu_reply_status(resp, 413, "RequestEntityTooLarge", msg.ptr);
		goto out;
	}
	if (render_parse(&docs, req->body ? req->body : "", req->body_len,
			 "body", &err) < 0) {
		const char *why = err_first(&err), *key;
		unsigned line = 0;
		const char *fv = query(req, "fieldValidation");

		/*
		 * A repeated key: go-yaml's strict decoding error (with
		 * fieldValidation=Strict; otherwise kube takes the last
		 * value with a warning, which this parser cannot).
		 */
		key = strstr(why, "duplicate key \"");
		if (key && fv && !strcmp(fv, "Strict") &&
		    sscanf(why, "%*[^:]:%u:", &line) == 1) {
			buf_addf(&msg,
				 "error strict decoding YAML: error converting "
				 "YAML to JSON: yaml: unmarshal errors:\n  "
				 "line %u: key %.*s already set in map",
				 line,
				 (int)(strchr(key + 15, '"') - key - 13),
				 key + 14);
		} else {
			buf_adds(&msg, "error decoding YAML: error converting "
				       "YAML to JSON: yaml: ");
			yaml_error(why, &msg);
		}
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
		goto out;
	}
	if (docs.len != 1 || !json_is_object(docs.items[0].value)) {
		emu_reply_status(resp, 400, "BadRequest",
				 "error decoding YAML: the body must be one "
				 "object");
		goto out;
	}
	obj = json_incref(docs.items[0].value);
out:
	render_docs_release(&docs);
	err_release(&err);
	buf_release(&msg);
	return obj;
}

/*
 * Decode a merge or strategic merge patch (JSON) into one object; a
 * syntax error is refused as the patch handler words it: with `prefix`
 * ("error decoding patch: ") or without. Caller owns the result; NULL
 * with resp filled.
 */
static json_t *decode_patch(const struct emu_request *req, const char *prefix,
			    struct emu_response *resp)
{
	struct buf msg = BUF_INIT, why = BUF_INIT;
	json_t *obj = NULL;

	if (req->body_too_large) {
		buf_addf(&msg, "Request entity too large: limit is %u",
			 EMU_MAX_BODY);
		emu_reply_status(resp, 413, "RequestEntityTooLarge", msg.ptr);
		goto out;
	}
	if (emu_go_json_check(req->body ? req->body : "", req->body_len,
			      &why) < 0) {
		buf_addf(&msg, "%s%s", prefix, why.ptr);
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
		goto out;
	}
	obj = json_loadb(req->body, req->body_len, JSON_DECODE_ANY, NULL);
	if (!obj) {
		/* As in decode_json_patch(): valid for Go, not for jansson. */
		buf_addf(&msg, "%sa string is not valid UTF-8 or holds "
			       "\\u0000", prefix);
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
	} else if (!json_is_object(obj)) {
		buf_addf(&msg, "%sjson: cannot unmarshal %s into Go value of "
			       "type map[string]interface {}",
			 prefix, diff_go_json_kind(obj));
		json_decref(obj);
		obj = NULL;
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
	}
out:
	buf_release(&msg);
	buf_release(&why);
	return obj;
}

/* Is `kind` a kind of apiVersion `av` this server knows? */
static bool known_kind(const char *av, const char *kind)
{
	const struct emu_resource *r;
	struct buf b = BUF_INIT;
	bool found = false;

	for (r = emu_resources; r->name && !found; r++) {
		buf_reset(&b);
		emu_resource_api_version(r, &b);
		found = !strcmp(buf_cstr(&b), av) && !strcmp(r->kind, kind);
	}
	buf_release(&b);
	return found || (!strcmp(av, "autoscaling/v1") && !strcmp(kind, "Scale"));
}

/* The Go package of a group's internal types, as scheme errors name it. */
static const char *internal_package(const char *group)
{
	const char *dot = strchr(group, '.');
	static char pkg[64];

	if (!*group || !strcmp(group, "events.k8s.io"))
		return "core";
	if (!strcmp(group, "rbac.authorization.k8s.io"))
		return "rbac";
	snprintf(pkg, sizeof(pkg), "%.*s",
		 (int)(dot ? (size_t)(dot - group) : strlen(group)), group);
	return pkg;
}

enum identity_mode {
	ID_WRITE, /* create or update: kind and apiVersion default */
	ID_APPLY, /* an applied body names its kind */
};

/*
 * An applied body's group, version and kind as schema.GroupVersionKind
 * prints them ("apps/v1, Kind=Deployment", "/v1, Kind=ConfigMap"); an
 * apiVersion that does not parse (two slashes) gives the empty one.
 */
static void apply_gvk(const char *av, const char *kind, struct buf *out)
{
	const char *slash = av ? strchr(av, '/') : NULL;

	buf_adds(out, "invalid object type: ");
	if (slash && strchr(slash + 1, '/'))
		buf_adds(out, "/, Kind=");
	else if (slash)
		buf_addf(out, "%s, Kind=%s", av, kind ? kind : "");
	else
		buf_addf(out, "/%s, Kind=%s", av ? av : "", kind ? kind : "");
}

static bool same_gvk(const char *av, const char *kind, const char *want_av,
		     const char *want_kind)
{
	return av && kind && !strcmp(av, want_av) && !strcmp(kind, want_kind);
}

/*
 * Check the body's apiVersion/kind against the URL, and its namespace
 * and name, as the decoder and the handlers refuse them. 0 when fine;
 * otherwise fills resp and returns -1.
 */
static int check_identity(const struct emu_request *req,
			  const struct target *t, const json_t *obj,
			  const char *want_av, const char *want_kind,
			  enum identity_mode mode, struct emu_response *resp)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *slash = strchr(want_av, '/');
	const char *version = slash ? slash + 1 : want_av;
	bool custom = emu_resource_is_custom(t->res);
	/* the unstructured decoder of a custom resource's own writes */
	bool cr = custom && (!t->sub || strcmp(t->sub, "scale"));
	struct buf msg = BUF_INIT;
	char *text;
	int error = -1;

	if (mode == ID_APPLY && !same_gvk(av, kind, want_av, want_kind)) {
		/* the field manager's version check, before anything else */
		apply_gvk(av, kind, &msg);
	} else if (custom && meta && !json_is_object(meta)) {
		buf_adds(&msg, "metadata must be an object");
	} else if (cr && (!kind || !*kind)) {
		/* runtime.missingKindErr quotes the data it decoded */
		buf_addf(&msg,
			 "the object provided is unrecognized (must be of "
			 "type %s): Object 'Kind' is missing in '",
			 want_kind);
		if (req->body_len && req->body[0] == '{') {
			buf_add(&msg, req->body, req->body_len);
		} else {
			text = json_dumps(obj, JSON_COMPACT);
			buf_adds(&msg, text ? text : "");
			free(text);
		}
		buf_adds(&msg, "' (");
		summarize(req, &msg);
		buf_addch(&msg, ')');
	} else if (custom && !cr && (!kind || !*kind)) {
		buf_adds(&msg, "Object 'Kind' is missing in the request body");
	} else if (custom && !cr && (!av || !*av)) {
		buf_adds(&msg, "Object 'apiVersion' is missing in the "
			       "request body");
	} else if ((av && *av && strcmp(av, want_av)) ||
		   (cr && (!av || !*av))) {
		buf_addf(&msg,
			 "the API version in the data (%s) does not "
			 "match the expected API version (%s)",
			 av ? av : "", want_av);
	} else if (kind && *kind && strcmp(kind, want_kind) && !custom) {
		if (known_kind(want_av, kind))
			buf_addf(&msg,
				 "%s in version \"%s\" cannot be handled as a "
				 "%s: converting (%s.%s) to (%s.%s): unknown "
				 "conversion",
				 kind, version, want_kind, version, kind,
				 internal_package(t->sub && !strcmp(t->sub,
								    "scale")
							  ? "autoscaling"
							  : t->res->group),
				 want_kind);
		else
			buf_addf(&msg,
				 "%s in version \"%s\" cannot be handled as a "
				 "%s: no kind \"%s\" is registered for version "
				 "\"%s\" in scheme \"pkg/runtime/scheme.go:111\"",
				 kind, version, want_kind, kind, want_av);
	} else if (kind && *kind && strcmp(kind, want_kind) && !cr) {
		/* (a custom resource's decoder takes another kind; its
		 * validation refuses it) */
		buf_addf(&msg,
			 "the kind in the data (%s) does not match the "
			 "expected kind (%s)",
			 kind, want_kind);
	} else if (!json_is_object(meta) && meta) {
		/* the typed decoding words it */
		error = 0;
	} else if (t->ns && *t->ns && ns && *ns && strcmp(ns, t->ns)) {
		buf_adds(&msg, "the namespace of the provided object does not "
			       "match the namespace sent on the request");
	} else if (t->name && name && *name && strcmp(name, t->name)) {
		buf_addf(&msg,
			 "the name of the object (%s) does not match "
			 "the name on the URL (%s)",
			 name, t->name);
	} else {
		error = 0;
	}
	if (error < 0)
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
	buf_release(&msg);
	return error;
}

static void reply_bad_option(struct emu_response *resp,
			     const struct emu_request *req, const char *field,
			     const char *reason, const char *why);

/*
 * Is `body` a PUT the registry refuses for want of a resourceVersion:
 * the kinds whose strategy does not allow unconditional updates (custom
 * resources, CRDs, Leases, PodDisruptionBudgets) must name the version
 * they replace.
 */
static bool lacks_needed_rv(const struct target *t, const json_t *body)
{
	const char *g = t->res->group, *k = t->res->kind;
	const char *rv = json_string_value(json_object_get(
		json_object_get(body, "metadata"), "resourceVersion"));

	if (rv && *rv)
		return false;
	return emu_resource_is_custom(t->res) ||
	       !strcmp(g, "apiextensions.k8s.io") ||
	       (!strcmp(g, "coordination.k8s.io") && !strcmp(k, "Lease")) ||
	       (!strcmp(g, "policy") && !strcmp(k, "PodDisruptionBudget"));
}

/* The registry's 422 for lacks_needed_rv(), its kind the resource's. */
static void reply_rv_needed(const struct target *t, struct emu_response *resp)
{
	static const char body_msg[] =
		"Invalid value: 0: must be specified for an update";
	struct buf msg = BUF_INIT;
	json_t *st;

	emu_resource_qualified(t->res, &msg);
	buf_addf(&msg, " \"%s\" is invalid: metadata.resourceVersion: %s",
		 t->name, body_msg);
	st = emu_status_new(422, "Invalid", msg.ptr, t->name, t->res->group,
			    t->res->name);
	if (st)
		json_object_set_new(
			json_object_get(st, "details"), "causes",
			json_pack("[{s:s, s:s, s:s}]", "reason",
				  "FieldValueInvalid", "message", body_msg,
				  "field", "metadata.resourceVersion"));
	emu_reply_json(resp, 422, st);
	buf_release(&msg);
}

/* Set a Scale's replicas on its object: spec.replicas, or the CRD's path. */
static void set_scale_replicas(const struct target *t, json_t *obj,
			       const json_t *scale)
{
	json_t *v = json_object_get(json_object_get(scale, "spec"), "replicas");
	struct emu_crd_scale cs;
	json_t *spec;

	json_decref(emu_crd_schema(t->res, &cs));
	if (cs.spec_replicas) {
		emu_crd_path_set(obj, cs.spec_replicas,
				 v ? json_incref(v) : json_integer(0));
		return;
	}
	spec = json_object_get(obj, "spec");
	if (!json_is_object(spec)) {
		spec = json_object();
		json_object_set_new(obj, "spec", spec);
	}
	json_object_set(spec, "replicas", v);
}

/* dryRun: absent, or "All". 1 dry, 0 not, -1 bad (resp filled). */
static int dry_run(const struct emu_request *req, struct emu_response *resp)
{
	const char *d = query(req, "dryRun");
	struct buf msg = BUF_INIT;

	if (!d || !*d)
		return 0;
	if (!strcmp(d, "All"))
		return 1;
	buf_addf(&msg, "Unsupported value: [\"%s\"]: supported values: \"All\"",
		 d);
	reply_bad_option(resp, req, "dryRun", "FieldValueNotSupported",
			 msg.ptr);
	buf_release(&msg);
	return -1;
}

/*
 * The 422 of request options kube-apiserver refuses (CreateOptions,
 * UpdateOptions, PatchOptions or DeleteOptions after the method): one
 * cause on `field`.
 */
static void reply_bad_option(struct emu_response *resp,
			     const struct emu_request *req, const char *field,
			     const char *reason, const char *why)
{
	const char *m = req->method;
	const char *kind = !strcmp(m, "POST")	 ? "CreateOptions"
			   : !strcmp(m, "PUT")	 ? "UpdateOptions"
			   : !strcmp(m, "PATCH") ? "PatchOptions"
						 : "DeleteOptions";
	struct buf msg = BUF_INIT;
	json_t *st;

	buf_addf(&msg, "%s.meta.k8s.io \"\" is invalid: %s: %s", kind, field,
		 why);
	st = emu_status_new(422, "Invalid", msg.ptr, NULL, "meta.k8s.io",
			    kind);
	json_object_set_new(json_object_get(st, "details"), "causes",
			    json_pack("[{s:s, s:s, s:s}]", "reason", reason,
				      "message", why, "field", field));
	emu_reply_json(resp, 422, st);
	buf_release(&msg);
}

enum field_validation { FV_IGNORE, FV_WARN, FV_STRICT };

/*
 * ?fieldValidation=: Ignore, Warn (also when absent) or Strict; -1 with
 * the 422 in resp for anything else.
 */
static int field_validation(const struct emu_request *req,
			    struct emu_response *resp)
{
	const char *v = query(req, "fieldValidation");
	struct buf why = BUF_INIT;

	if (!v || !*v || !strcmp(v, "Warn"))
		return FV_WARN;
	if (!strcmp(v, "Ignore"))
		return FV_IGNORE;
	if (!strcmp(v, "Strict"))
		return FV_STRICT;
	buf_addf(&why,
		 "Unsupported value: \"%s\": supported values: \"\", "
		 "\"Ignore\", \"Strict\", \"Warn\"",
		 v);
	reply_bad_option(resp, req, "fieldValidation", "FieldValueNotSupported",
			 why.ptr);
	buf_release(&why);
	return -1;
}

/*
 * ListOptions kube refuses before listing: resourceVersionMatch without
 * a resourceVersion. 0, or -1 with the 422 in resp.
 */
static int list_options(const struct emu_request *req,
			struct emu_response *resp)
{
	const char *match = query(req, "resourceVersionMatch");
	const char *rv = query(req, "resourceVersion");
	struct buf msg = BUF_INIT;
	json_t *st;

	if (!match || !*match || (rv && *rv))
		return 0;
	buf_adds(&msg, "ListOptions.meta.k8s.io \"\" is invalid: "
		       "resourceVersionMatch: Forbidden: resourceVersionMatch "
		       "is forbidden unless resourceVersion is provided");
	st = emu_status_new(422, "Invalid", msg.ptr, NULL, "meta.k8s.io",
			    "ListOptions");
	json_object_set_new(
		json_object_get(st, "details"), "causes",
		json_pack("[{s:s, s:s, s:s}]", "reason", "FieldValueForbidden",
			  "message",
			  "Forbidden: resourceVersionMatch is forbidden unless "
			  "resourceVersion is provided",
			  "field", "resourceVersionMatch"));
	emu_reply_json(resp, 422, st);
	buf_release(&msg);
	return -1;
}

/* ?fieldManager= is at most 128 bytes. 0, or -1 with the 422 in resp. */
static int field_manager_check(const struct emu_request *req,
			       struct emu_response *resp)
{
	const char *m = query(req, "fieldManager");

	if (!m || strlen(m) <= 128)
		return 0;
	reply_bad_option(resp, req, "fieldManager", "FieldValueTooLong",
			 "Too long: may not be more than 128 bytes");
	return -1;
}

/* The Go type a write to t decodes into; -1 for custom resources. */
static int target_type(const struct target *t)
{
	if (t->sub && !strcmp(t->sub, "scale"))
		return diff_gotype_root("autoscaling", "v1", "Scale");
	if (emu_resource_is_custom(t->res))
		return -1;
	return diff_gotype_root(t->res->group, t->res->version, t->res->kind);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a),
		      json_string_value(*(json_t *const *)b));
}

/*
 * A custom resource pruned by its structural schema: the unknown field
 * paths it had, sorted (as the pruning returns them). Caller owns it.
 */
static json_t *prune_custom(const struct target *t, json_t *obj)
{
	json_t *unknown = json_array(), *sorted = json_array(), *u;
	json_t **items = NULL;
	size_t i, n;

	if (!unknown || !sorted)
		goto out;
	emu_crd_prune(t->res, obj, unknown);
	n = json_array_size(unknown);
	if (n && !(items = malloc(n * sizeof(*items))))
		goto out;
	json_array_foreach(unknown, i, u)
	{
		items[i] = u;
	}
	if (n)
		qsort(items, n, sizeof(*items), str_cmp);
	for (i = 0; i < n; i++)
		json_array_append(sorted, items[i]);
out:
	free(items);
	json_decref(unknown);
	return sorted;
}

/*
 * Decode a create or update body as the server reads it into its Go type
 * (types.h): unknown fields are dropped, each with a warning under
 * fieldValidation Warn, silently under Ignore, refusing the write under
 * Strict; a value of the wrong JSON type refuses it. 0, or -1 with the
 * 400 in resp.
 */
static int decode_typed(const struct emu_request *req, const struct target *t,
			json_t *obj, const json_t *dups, int fv,
			struct emu_response *resp)
{
	const char *kind = t->sub && !strcmp(t->sub, "scale") ? "Scale"
							       : t->res->kind;
	int root = target_type(t);
	struct buf msg = BUF_INIT, why = BUF_INIT;
	json_t *unknown = json_array(), *u;
	size_t i;
	int ret = 0;

	(void)req;
	if (!unknown)
		goto out;
	if (root < 0) {
		/*
		 * A custom resource: its structural schema prunes; the
		 * decoder's own errors (repeated fields) come first.
		 */
		json_decref(unknown);
		unknown = prune_custom(t, obj);
		if (fv == FV_STRICT &&
		    (json_array_size(unknown) || json_array_size(dups))) {
			buf_addf(&msg,
				 "%s in version \"%s\" cannot be handled as "
				 "a %s: strict decoding error: ",
				 kind, t->res->version, kind);
			json_array_foreach((json_t *)dups, i, u)
			{
				buf_addf(&msg, "%sduplicate field \"%s\"",
					 i ? ", " : "", json_string_value(u));
			}
			json_array_foreach(unknown, i, u)
			{
				buf_addf(&msg, "%sunknown field \"%s\"",
					 i || json_array_size(dups) ? ", " : "",
					 json_string_value(u));
			}
			emu_reply_status(resp, 400, "BadRequest", msg.ptr);
			ret = -1;
			goto out;
		}
		if (fv != FV_WARN)
			goto out;
		json_array_foreach((json_t *)dups, i, u)
		{
			buf_reset(&msg);
			buf_addf(&msg, "duplicate field \"%s\"",
				 json_string_value(u));
			emu_response_warn(resp, msg.ptr);
		}
		json_array_foreach(unknown, i, u)
		{
			buf_reset(&msg);
			buf_addf(&msg, "unknown field \"%s\"",
				 json_string_value(u));
			emu_response_warn(resp, msg.ptr);
		}
		goto out;
	}
	if (diff_gotype_decode(obj, root, unknown, &why) < 0) {
		buf_addf(&msg, "%s in version \"%s\" cannot be handled as a %s: %s",
			 kind, t->sub && !strcmp(t->sub, "scale") ? "v1"
								  : t->res->version,
			 kind, why.ptr);
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
		ret = -1;
		goto out;
	}
	if (fv == FV_STRICT &&
	    (json_array_size(unknown) || json_array_size(dups))) {
		buf_addf(&msg,
			 "%s in version \"%s\" cannot be handled as a %s: "
			 "strict decoding error: ",
			 kind, t->res->version, kind);
		json_array_foreach(unknown, i, u)
		{
			buf_addf(&msg, "%sunknown field \"%s\"", i ? ", " : "",
				 json_string_value(json_object_get(u, "path")));
		}
		json_array_foreach((json_t *)dups, i, u)
		{
			buf_addf(&msg, "%sduplicate field \"%s\"",
				 i || json_array_size(unknown) ? ", " : "",
				 json_string_value(u));
		}
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
		ret = -1;
		goto out;
	}
	if (fv == FV_WARN) {
		json_array_foreach(unknown, i, u)
		{
			buf_reset(&msg);
			buf_addf(&msg, "unknown field \"%s\"",
				 json_string_value(json_object_get(u, "path")));
			emu_response_warn(resp, msg.ptr);
		}
		json_array_foreach((json_t *)dups, i, u)
		{
			buf_reset(&msg);
			buf_addf(&msg, "duplicate field \"%s\"",
				 json_string_value(u));
			emu_response_warn(resp, msg.ptr);
		}
	}
out:
	json_decref(unknown);
	buf_release(&msg);
	buf_release(&why);
	return ret;
}

/* The Scale view of an object. Caller owns the result. */
/* The Scale of a custom resource, read at its CRD's paths. */
static json_t *custom_scale_of(const struct emu_crd_scale *cs,
			       const json_t *obj, json_t *meta)
{
	const json_t *sel = cs->label_selector ? emu_crd_path_get(
							 obj, cs->label_selector)
					       : NULL;
	json_t *scale = json_pack(
		"{s:s, s:s, s:o, s:{s:I}, s:{s:I}}", "kind", "Scale",
		"apiVersion", "autoscaling/v1", "metadata", meta, "spec",
		"replicas",
		json_integer_value(emu_crd_path_get(obj, cs->spec_replicas)),
		"status", "replicas",
		json_integer_value(emu_crd_path_get(obj, cs->status_replicas)));

	/* ScaleStatus.selector is omitempty */
	if (scale && json_string_value(sel) && *json_string_value(sel))
		json_object_set(json_object_get(scale, "status"), "selector",
				(json_t *)sel);
	return scale;
}

static json_t *scale_of(const struct emu_resource *res, const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const json_t *ml = json_object_get(
		json_object_get(json_object_get(obj, "spec"), "selector"),
		"matchLabels");
	json_t *replicas =
		json_object_get(json_object_get(obj, "spec"), "replicas");
	json_t *scale, *m;
	struct buf sel = BUF_INIT;
	const char *k;
	json_t *v;
	static const char *const keys[] = {"name",
					   "namespace",
					   "uid",
					   "resourceVersion",
					   "creationTimestamp",
					   NULL};
	const char *const *key;
	struct emu_crd_scale cs;

	json_object_foreach((json_t *)ml, k, v)
	{
		buf_addf(&sel, "%s%s=%s", sel.len ? "," : "", k,
			 json_string_value(v) ? json_string_value(v) : "");
	}
	m = json_object();
	for (key = keys; *key; key++)
		if (json_object_get(meta, *key))
			json_object_set(m, *key, json_object_get(meta, *key));
	json_decref(emu_crd_schema(res, &cs));
	if (cs.spec_replicas) {
		buf_release(&sel);
		return custom_scale_of(&cs, obj, m);
	}
	scale = json_pack(
		"{s:s, s:s, s:o, s:{s:I}, s:{s:I, s:s}}", "kind", "Scale",
		"apiVersion", "autoscaling/v1", "metadata", m, "spec",
		"replicas",
		(json_int_t)(replicas ? json_integer_value(replicas) : 1),
		"status", "replicas",
		json_integer_value(json_object_get(
			json_object_get(obj, "status"), "replicas")),
		"selector", buf_cstr(&sel));
	buf_release(&sel);
	return scale;
}

/* RFC 7386 JSON merge patch of `patch` into `target` (modified). */
static json_t *merge_patch(json_t *target, const json_t *patch)
{
	const char *k;
	json_t *v, *cur;

	if (!json_is_object(patch)) {
		json_decref(target);
		return json_deep_copy(patch);
	}
	if (!json_is_object(target)) {
		json_decref(target);
		target = json_object();
	}
	json_object_foreach((json_t *)patch, k, v)
	{
		if (json_is_null(v)) {
			json_object_del(target, k);
			continue;
		}
		cur = json_object_get(target, k);
		json_object_set_new(
			target, k,
			merge_patch(cur ? json_incref(cur) : NULL, v));
	}
	return target;
}

enum patch_type {
	PATCH_MERGE,
	PATCH_STRATEGIC,
	PATCH_JSON,
};

/*
 * The Status of a failed JSON or strategic merge patch: 422 as kube's
 * NewGenericServerResponse words it (the cause in details.causes), the
 * others with their reason and the message as is.
 */
static json_t *patch_failure(int code, const char *msg)
{
	json_t *st;

	switch (code) {
	case 422:
		/*
		 * NewGenericServerResponse(422, ..., isUnexpectedResponse
		 * false): the library's text is dropped, details are empty.
		 */
		st = emu_status_new(code, "Invalid",
				    "the server rejected our request due to "
				    "an error in our request",
				    NULL, NULL, NULL);
		json_object_set_new(st, "details", json_object());
		return st;
	case 400:
		return emu_status_new(code, "BadRequest", msg, NULL, NULL,
				      NULL);
	case 409:
		return emu_status_new(code, "Conflict", msg, NULL, NULL, NULL);
	case 413:
		return emu_status_new(code, "RequestEntityTooLarge", msg, NULL,
				      NULL, NULL);
	case 415:
		return emu_status_new(code, "UnsupportedMediaType", msg, NULL,
				      NULL, NULL);
	default:
		/* A plain Go error: reason Unknown, which is omitted. */
		return emu_status_new(code, NULL, msg, NULL, NULL, NULL);
	}
}

/*
 * `patch` of `type` applied to `doc` (a new reference, consumed). The
 * patched document, or NULL with *out a failure Status and *code.
 */
static json_t *run_patch(json_t *doc, enum patch_type type, const json_t *patch,
			 const struct emu_resource *res, int *code,
			 json_t **out)
{
	struct buf msg = BUF_INIT;
	json_t *patched = NULL;

	*code = 0;
	switch (type) {
	case PATCH_MERGE:
		patched = merge_patch(doc, patch);
		doc = NULL;
		break;
	case PATCH_JSON:
		*code = emu_json_patch(doc, patch, &msg);
		if (!*code) {
			patched = doc;
			doc = NULL;
		}
		break;
	case PATCH_STRATEGIC:
		patched =
			emu_strategic_merge_patch(doc, patch, res, code, &msg);
		if (!patched && !*code)
			*code = 500;
		break;
	}
	if (!patched) {
		if (!*code)
			*code = 500;
		*out = patch_failure(*code,
				     msg.len ? msg.ptr : "out of memory");
	}
	json_decref(doc);
	buf_release(&msg);
	return patched;
}

/*
 * The patched object decoded into its Go type, as for a create
 * (decode_typed): unknown fields dropped with a warning (Warn) or
 * silently (Ignore). Under Strict an unknown field, and always a value of
 * the wrong type, is kube's 422 on the patch: the patched object quoted
 * and the decoder's error. 0, or the HTTP code with *out the Status.
 */
static int decode_patched(const struct target *t, json_t *doc, int fv,
			  struct emu_response *resp, json_t **out)
{
	int root = target_type(t);
	struct buf why = BUF_INIT, msg = BUF_INIT, cause = BUF_INIT;
	json_t *unknown = json_array(), *copy = NULL, *u;
	char *text = NULL;
	size_t i;
	int code = 0;

	if (!unknown)
		goto out;
	copy = json_deep_copy(doc);
	if (root < 0) {
		json_decref(unknown);
		unknown = prune_custom(t, doc);
		if (fv == FV_STRICT && json_array_size(unknown)) {
			buf_adds(&why, "strict decoding error: ");
			json_array_foreach(unknown, i, u)
			{
				buf_addf(&why, "%sunknown field \"%s\"",
					 i ? ", " : "", json_string_value(u));
			}
			goto invalid;
		}
		json_array_foreach(unknown, i, u)
		{
			if (fv != FV_WARN)
				break;
			buf_reset(&msg);
			buf_addf(&msg, "unknown field \"%s\"",
				 json_string_value(u));
			emu_response_warn(resp, msg.ptr);
		}
		goto out;
	}
	if (diff_gotype_decode(doc, root, unknown, &why) == 0) {
		if (fv == FV_STRICT && json_array_size(unknown)) {
			buf_adds(&why, "strict decoding error: ");
			json_array_foreach(unknown, i, u)
			{
				buf_addf(&why, "%sunknown field \"%s\"",
					 i ? ", " : "",
					 json_string_value(
						 json_object_get(u, "path")));
			}
		} else {
			json_array_foreach(unknown, i, u)
			{
				if (fv != FV_WARN)
					break;
				buf_reset(&msg);
				buf_addf(&msg, "unknown field \"%s\"",
					 json_string_value(
						 json_object_get(u, "path")));
				emu_response_warn(resp, msg.ptr);
			}
			goto out;
		}
	}
invalid:
	text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
	buf_adds(&cause, "Invalid value: \"");
	for (i = 0; text && text[i]; i++) {
		if (text[i] == '"' || text[i] == '\\')
			buf_addch(&cause, '\\');
		buf_addch(&cause, text[i]);
	}
	buf_addf(&cause, "\": %s", why.ptr);
	buf_addf(&msg, " \"\" is invalid: patch: %s", cause.ptr);
	*out = emu_status_new(422, "Invalid", msg.ptr, NULL, NULL, NULL);
	json_object_set_new(*out, "details",
			    json_pack("{s:[{s:s, s:s, s:s}]}", "causes",
				      "reason", "FieldValueInvalid", "message",
				      cause.ptr, "field", "patch"));
	code = 422;
out:
	free(text);
	json_decref(copy);
	json_decref(unknown);
	buf_release(&why);
	buf_release(&msg);
	buf_release(&cause);
	return code;
}

/*
 * A patch may not rename or move the object (the patch handler checks
 * the patched object's name and namespace): 0, or 400 with *out.
 */
static int patched_identity(const struct target *t, const json_t *patched,
			    json_t **out)
{
	const json_t *meta = json_object_get(patched, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	struct buf msg = BUF_INIT;

	if (name && strcmp(name, t->name))
		buf_addf(&msg,
			 "the name of the object (%s) does not match the name "
			 "on the URL (%s)",
			 name, t->name);
	else if (ns && *ns && t->ns && *t->ns && strcmp(ns, t->ns))
		buf_adds(&msg, "the namespace of the provided object does not "
			       "match the namespace sent on the request");
	if (!msg.len)
		return 0;
	*out = emu_status_new(400, "BadRequest", msg.ptr, NULL, NULL, NULL);
	buf_release(&msg);
	return 400;
}

/* Read, patch, write once. The HTTP code; *out as emu_store_update(). */
static int patch_once(struct emu_server *srv, const struct target *t,
		      enum patch_type type, const json_t *patch,
		      const char *mgr, bool dry, int fv,
		      struct emu_response *resp, json_t **out)
{
	json_t *live = NULL, *patched = NULL, *s;
	int code;

	code = emu_store_get(&srv->store, t->res, t->ns, t->name, &live);
	if (code != 200) {
		*out = live;
		return code;
	}
	if (t->sub && !strcmp(t->sub, "scale")) {
		/* The patch is of the Scale; its spec.replicas is taken. */
		patched = run_patch(scale_of(t->res, live), type, patch, t->res, &code,
				    out);
		if (!patched || (code = decode_patched(t, patched, fv, resp,
						       out)))
			goto out;
		set_scale_replicas(t, live, patched);
		/* a resourceVersion the patch sets is a precondition */
		s = json_object_get(json_object_get(patched, "metadata"),
				    "resourceVersion");
		if (json_is_string(s))
			json_object_set(json_object_get(live, "metadata"),
					"resourceVersion", s);
		code = emu_store_update(&srv->store, t->res, t->ns, t->name,
					"scale", mgr, live, dry, out);
		if (code == 200) {
			s = scale_of(t->res, *out);
			json_decref(*out);
			*out = s;
		}
		goto out;
	}
	/*
	 * The whole object is patched, also through /status (where the
	 * store then takes only the status). The live object carries its
	 * resourceVersion unless the patch sets one (then a stale one is a
	 * Conflict).
	 */
	patched = run_patch(json_incref(live), type, patch, t->res, &code, out);
	if (!patched)
		goto out;
	if (!json_is_object(patched)) {
		code = 422;
		*out = patch_failure(code, "the patched document is not an "
					   "object");
		goto out;
	}
	if ((code = patched_identity(t, patched, out)) ||
	    (code = decode_patched(t, patched, fv, resp, out)))
		goto out;
	code = emu_store_update(&srv->store, t->res, t->ns, t->name, t->sub,
				mgr, patched, dry, out);
out:
	json_decref(live);
	json_decref(patched);
	return code;
}

/* Metadata the server owns; an applied body's values are dropped. */
static const char *const server_owned[] = {
	"uid",		 "resourceVersion",   "creationTimestamp",
	"generation",	 "deletionTimestamp", "deletionGracePeriodSeconds",
	"managedFields", "selfLink",	      NULL};

/*
 * The applied body as the apply runs it: server-owned metadata and (for
 * kinds with /status) status removed, so the live values stay and the
 * applier never owns them; the URL's name filled in when absent.
 */
static void strip_server_owned(json_t *obj, const struct target *t)
{
	json_t *meta = json_object_get(obj, "metadata");
	const char *const *k;

	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(obj, "metadata", meta);
	}
	for (k = server_owned; *k; k++)
		json_object_del(meta, *k);
	if (!json_string_value(json_object_get(meta, "name")))
		json_object_set_new(meta, "name", json_string(t->name));
	if (t->res->flags & EMU_RES_STATUS)
		json_object_del(obj, "status");
}

/*
 * One apply against the current object. The HTTP code; *out as
 * emu_store_update(). *raced is set when the object changed (or was
 * created) between our read and our write: the caller retries.
 */
/*
 * The uid and resourceVersion an applied body carries are preconditions
 * (the patch handler's): 0, or 409 with *out.
 */
static int apply_preconditions(const struct target *t, const json_t *body,
			       const json_t *live, json_t **out)
{
	const json_t *meta = json_object_get(body, "metadata");
	const char *uid = json_string_value(json_object_get(meta, "uid"));
	const char *rv =
		json_string_value(json_object_get(meta, "resourceVersion"));
	const json_t *lmeta = json_object_get(live, "metadata");
	const char *luid = json_string_value(json_object_get(lmeta, "uid"));
	const char *lrv =
		json_string_value(json_object_get(lmeta, "resourceVersion"));
	struct buf msg = BUF_INIT;

	buf_adds(&msg, "Operation cannot be fulfilled on ");
	emu_resource_qualified(t->res, &msg);
	buf_addf(&msg, " \"%s\": ", t->name);
	if (uid && *uid && !live)
		buf_addf(&msg,
			 "uid mismatch: the provided object specified uid %s, "
			 "and no existing object was found",
			 uid);
	else if (uid && *uid && strcmp(uid, luid ? luid : ""))
		buf_addf(&msg,
			 "Precondition failed: UID in precondition: %s, UID in "
			 "object meta: %s",
			 uid, luid ? luid : "");
	else if (rv && *rv && live && strcmp(rv, lrv ? lrv : ""))
		buf_adds(&msg, "the object has been modified; please apply your "
			       "changes to the latest version and try again");
	else {
		buf_release(&msg);
		return 0;
	}
	*out = emu_status_new(409, "Conflict", msg.ptr, t->name, t->res->group,
			      t->res->name);
	buf_release(&msg);
	return 409;
}

static int apply_once(struct emu_server *srv, const struct target *t,
		      const json_t *applied, const json_t *body,
		      const char *mgr, bool force, bool dry, json_t **out,
		      bool *raced)
{
	struct diff_ssa_result r = {0};
	struct err err = ERR_INIT;
	struct buf msg = BUF_INIT;
	json_t *live = NULL, *causes = NULL;
	int code, error;

	*raced = false;
	code = emu_store_get(&srv->store, t->res, t->ns, t->name, &live);
	if (code == 404) {
		json_decref(live);
		live = NULL;
	} else if (code != 200) {
		*out = live;
		return code;
	}
	if ((code = apply_preconditions(t, body, live, out)))
		goto out;
	error = emu_managed_apply(&r, live, applied, t->res, mgr, force, &err);
	if (error == ERR_INVALID) {
		code = 400;
		*out = emu_status_new(code, "BadRequest", err_first(&err), NULL,
				      NULL, NULL);
	} else if (error < 0) {
		code = 500;
		*out = emu_status_new(code, "InternalError", "out of memory",
				      NULL, NULL, NULL);
	} else if (r.conflicts) {
		code = 409;
		if (diff_ssa_conflict_message(r.conflicts, &msg, &causes) < 0) {
			code = 500;
			*out = emu_status_new(code, "InternalError",
					      "out of memory", NULL, NULL,
					      NULL);
			goto out;
		}
		*out = emu_status_new(code, "Conflict", buf_cstr(&msg), NULL,
				      NULL, NULL);
		json_object_set_new(*out, "details",
				    json_pack("{s:o}", "causes", causes));
	} else if (!r.changed) {
		/* Nothing to write: the live object, same resourceVersion. */
		code = 200;
		*out = json_incref(live);
	} else if (!live) {
		/* a custom resource's defaults, as its decoder sets them */
		emu_crd_prune(t->res, r.object, NULL);
		code = emu_store_create(&srv->store, t->res, t->ns, r.object,
					NULL, dry, out);
		*raced = code == 409;
	} else {
		emu_crd_prune(t->res, r.object, NULL);
		/*
		 * r.object carries live's resourceVersion: a write since our
		 * read is a 409, and the apply runs again on the new object.
		 */
		code = emu_store_update(&srv->store, t->res, t->ns, t->name,
					NULL, NULL, r.object, dry, out);
		*raced = code == 409 || code == 404;
	}
out:
	diff_ssa_result_release(&r);
	err_release(&err);
	buf_release(&msg);
	json_decref(live);
	return code;
}

static bool query_true(const struct emu_request *req, const char *key)
{
	const char *v = query(req, key);

	return v && (!strcmp(v, "1") || !strcasecmp(v, "true"));
}

/*
 * A manager's apply to a subresource is another field manager than its
 * apply to the main resource (the identity includes the subresource),
 * but diff_ssa_apply() knows the applier only as its Apply entry without
 * a subresource. So for the run the applier's entry of `sub` loses its
 * subresource and its main-resource Apply entry gets this marker, and
 * afterwards the other way round.
 */
#define MAIN_APPLY_MARK "\001main"

static bool entry_is(const json_t *e, const char *key, const char *want)
{
	const char *have = json_string_value(json_object_get(e, key));

	return want ? have && !strcmp(have, want) : have == NULL;
}

static void sub_view(json_t *obj, const char *mgr, const char *sub)
{
	json_t *mf = json_object_get(json_object_get(obj, "metadata"),
				     "managedFields"),
	       *e;
	size_t i;

	json_array_foreach(mf, i, e)
	{
		if (!entry_is(e, "manager", mgr) ||
		    !entry_is(e, "operation", "Apply"))
			continue;
		if (entry_is(e, "subresource", NULL))
			json_object_set_new(e, "subresource",
					    json_string(MAIN_APPLY_MARK));
		else if (entry_is(e, "subresource", sub))
			json_object_del(e, "subresource");
	}
}

/* Undo sub_view() on managedFields entries or conflicts (an array). */
static void sub_unview(json_t *entries, const char *mgr, const char *sub)
{
	json_t *e;
	size_t i;

	json_array_foreach(entries, i, e)
	{
		if (entry_is(e, "subresource", MAIN_APPLY_MARK))
			json_object_del(e, "subresource");
		else if (sub && entry_is(e, "manager", mgr) &&
			 entry_is(e, "operation", "Apply") &&
			 entry_is(e, "subresource", NULL))
			json_object_set_new(e, "subresource", json_string(sub));
	}
}

/*
 * diff_ssa_apply() never owns or compares status (diff/ leaves it out of
 * every field set), yet an apply to /status is all about it. For the run
 * the status travels under another top-level name, in the objects and
 * in every managedFields entry and conflict, and comes back after.
 */
#define STATUS_ALIAS "emu-status"

/* Rename top-level key `from` to `to` in obj (an object or NULL). */
static void rename_key(json_t *obj, const char *from, const char *to)
{
	json_t *v = json_object_get(obj, from);

	if (!v)
		return;
	json_object_set(obj, to, v);
	json_object_del(obj, from);
}

static void status_alias(json_t *obj, bool back)
{
	const char *from = back ? STATUS_ALIAS : "status";
	const char *to = back ? "status" : STATUS_ALIAS;
	const char *ffrom = back ? "f:" STATUS_ALIAS : "f:status";
	const char *fto = back ? "f:status" : "f:" STATUS_ALIAS;
	json_t *e;
	size_t i;

	rename_key(obj, from, to);
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"),
					   "managedFields"),
			   i, e)
	{
		rename_key(json_object_get(e, "fieldsV1"), ffrom, fto);
	}
}

/* Conflicts name fields as ".emu-status.replicas": ".status.replicas". */
static void status_unalias_conflicts(json_t *conflicts)
{
	static const char prefix[] = "." STATUS_ALIAS;
	struct buf b = BUF_INIT;
	const char *f;
	json_t *c;
	size_t i;

	json_array_foreach(conflicts, i, c)
	{
		f = json_string_value(json_object_get(c, "field"));
		if (!f || strncmp(f, prefix, sizeof(prefix) - 1))
			continue;
		buf_reset(&b);
		buf_addf(&b, ".status%s", f + sizeof(prefix) - 1);
		json_object_set_new(c, "field", json_string(buf_cstr(&b)));
	}
	buf_release(&b);
}

/*
 * What an apply to /status or /scale applies to the object: of a status
 * apply only the status (the status strategy resets everything else),
 * of a Scale its spec.replicas, as the object's spec.replicas. NULL
 * with resp filled when the body does not fit.
 */
static json_t *sub_applied(const struct emu_request *req,
			   const struct target *t, struct emu_response *resp)
{
	struct buf av = BUF_INIT;
	json_t *body, *applied = NULL, *meta, *v;
	bool scale = !strcmp(t->sub, "scale");

	if (!(body = decode_apply(req, resp)))
		goto out;
	emu_resource_api_version(t->res, &av);
	if (check_identity(req, t, body, scale ? "autoscaling/v1" : av.ptr,
			   scale ? "Scale" : t->res->kind, ID_APPLY, resp) < 0)
		goto out;
	applied = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", av.ptr, "kind",
			    t->res->kind, "metadata", "name", t->name);
	if (!applied) {
		emu_reply_status(resp, 500, "InternalError", "out of memory");
		goto out;
	}
	meta = json_object_get(applied, "metadata");
	if (t->ns && *t->ns)
		json_object_set_new(meta, "namespace", json_string(t->ns));
	if (scale) {
		v = json_object_get(json_object_get(body, "spec"), "replicas");
		if (v)
			json_object_set_new(applied, "spec",
					    json_pack("{s:O}", "replicas", v));
	} else if ((v = json_object_get(body, "status"))) {
		json_object_set(applied, STATUS_ALIAS, v);
	}
out:
	json_decref(body);
	buf_release(&av);
	return applied;
}

/*
 * One apply to a subresource against the current object; as apply_once.
 * The object is written through the subresource (status) or as a /scale
 * write (replicas), with the managedFields the apply computed.
 */
static int apply_sub_once(struct emu_server *srv, const struct target *t,
			  const json_t *applied, const char *mgr, bool force,
			  bool dry, json_t **out, bool *raced)
{
	struct diff_ssa_result r = {0};
	struct err err = ERR_INIT;
	struct buf msg = BUF_INIT;
	json_t *live = NULL, *view = NULL, *causes = NULL, *mine, *cur, *c;
	bool scale = !strcmp(t->sub, "scale");
	int code, error;
	size_t i;

	*raced = false;
	code = emu_store_get(&srv->store, t->res, t->ns, t->name, &live);
	if (code != 200) {
		*out = live;
		return code;
	}
	if (!(view = json_deep_copy(live))) {
		code = 500;
		*out = emu_status_new(code, "InternalError", "out of memory",
				      NULL, NULL, NULL);
		goto out;
	}
	sub_view(view, mgr, t->sub);
	if (!scale)
		status_alias(view, false);
	error = emu_managed_apply(&r, view, applied, t->res, mgr, force, &err);
	if (error == ERR_INVALID) {
		code = 400;
		*out = emu_status_new(code, "BadRequest", err_first(&err), NULL,
				      NULL, NULL);
		goto out;
	} else if (error < 0) {
		code = 500;
		*out = emu_status_new(code, "InternalError", "out of memory",
				      NULL, NULL, NULL);
		goto out;
	}
	if (r.conflicts) {
		sub_unview(r.conflicts, mgr, NULL);
		status_unalias_conflicts(r.conflicts);
		/* ScaleHandler.ToSubresource: owners seen as Scale's */
		if (scale)
			json_array_foreach(r.conflicts, i, c)
			{
				json_object_set_new(c, "apiVersion",
						    json_string("autoscaling/v1"));
			}
		code = 409;
		if (diff_ssa_conflict_message(r.conflicts, &msg, &causes) < 0) {
			code = 500;
			*out = emu_status_new(code, "InternalError",
					      "out of memory", NULL, NULL,
					      NULL);
			goto out;
		}
		*out = emu_status_new(code, "Conflict", buf_cstr(&msg), NULL,
				      NULL, NULL);
		json_object_set_new(*out, "details",
				    json_pack("{s:o}", "causes", causes));
		goto out;
	}
	if (!r.changed) {
		code = 200;
		*out = json_incref(live);
		goto out;
	}
	if (!scale)
		status_alias(r.object, true);
	sub_unview(json_object_get(json_object_get(r.object, "metadata"),
				   "managedFields"),
		   mgr, t->sub);
	/* r.object carries live's resourceVersion: a race is a 409 */
	code = emu_store_update(&srv->store, t->res, t->ns, t->name,
				scale ? "scale" : "status", NULL, r.object, dry,
				out);
	*raced = code == 409 || code == 404;
	if (code != 200 || scale)
		goto out;
	/*
	 * A /status write takes only the status from its body; the
	 * managedFields the apply computed follow as a write of the main
	 * resource, pinned to the version just written (a race in between
	 * makes the whole apply run again).
	 */
	mine = json_object_get(json_object_get(r.object, "metadata"),
			       "managedFields");
	if (json_equal(mine, json_object_get(json_object_get(*out, "metadata"),
					     "managedFields")))
		goto out;
	cur = json_deep_copy(*out);
	json_object_set(json_object_get(cur, "metadata"), "managedFields",
			mine);
	json_decref(*out);
	if (dry) {
		/* nothing was stored: the status write's answer will do */
		*out = cur;
		goto out;
	}
	*out = NULL;
	code = emu_store_update(&srv->store, t->res, t->ns, t->name, NULL, NULL,
				cur, dry, out);
	json_decref(cur);
	*raced = code == 409 || code == 404;
out:
	diff_ssa_result_release(&r);
	err_release(&err);
	buf_release(&msg);
	json_decref(live);
	json_decref(view);
	return code;
}

static void handle_apply_sub(struct emu_server *srv,
			     const struct emu_request *req,
			     const struct target *t, const char *mgr,
			     bool force, bool dry, struct emu_response *resp)
{
	json_t *applied, *out = NULL, *s;
	bool raced;
	int code, attempt;

	if (!(applied = sub_applied(req, t, resp)))
		return;
	for (attempt = 0;; attempt++) {
		code = apply_sub_once(srv, t, applied, mgr, force, dry, &out,
				      &raced);
		if (!raced || attempt == 5)
			break;
		json_decref(out);
		out = NULL;
	}
	if (code == 200 && !strcmp(t->sub, "scale")) {
		s = scale_of(t->res, out);
		json_decref(out);
		out = s;
	}
	emu_reply_json(resp, code, out);
	json_decref(applied);
}

/*
 * An applied body must be of its kind's type: a field the type does not
 * declare fails the apply, whatever fieldValidation says, with the 500
 * kube-apiserver answers when it cannot make the typed patch object.
 * 0, or -1 with resp filled.
 */
static int apply_typed(const struct target *t, const json_t *body,
		       struct emu_response *resp)
{
	int root = target_type(t);
	json_t *copy, *unknown = json_array();
	const char *ns, *name;
	struct buf msg = BUF_INIT, why = BUF_INIT;
	size_t i;
	int ret = 0;

	if ((root < 0 && !emu_resource_is_custom(t->res)) || !unknown ||
	    !(copy = json_deep_copy(body))) {
		json_decref(unknown);
		return 0;
	}
	if (root < 0) {
		/* a custom resource: what its structural schema lacks */
		json_decref(unknown);
		unknown = prune_custom(t, copy);
		for (i = 0; i < json_array_size(unknown); i++)
			json_array_set_new(
				unknown, i,
				json_pack("{s:s+}", "typed", ".",
					  json_string_value(
						  json_array_get(unknown, i))));
	} else {
		diff_gotype_decode(copy, root, unknown, &why);
	}
	if (json_array_size(unknown)) {
		ns = json_string_value(json_object_get(
			json_object_get(body, "metadata"), "namespace"));
		name = json_string_value(json_object_get(
			json_object_get(body, "metadata"), "name"));
		buf_addf(&msg,
			 "failed to create typed patch object (%s/%s; %s/%s, "
			 "Kind=%s): %s: field not declared in schema",
			 ns ? ns : "", name ? name : "", t->res->group,
			 t->res->version, t->res->kind,
			 json_string_value(json_object_get(
				 json_array_get(unknown, 0), "typed")));
		emu_reply_json(resp, 500,
			       emu_status_new(500, NULL, msg.ptr, NULL, NULL,
					      NULL));
		ret = -1;
	}
	json_decref(copy);
	json_decref(unknown);
	buf_release(&msg);
	buf_release(&why);
	return ret;
}

/*
 * PATCH with application/apply-patch+yaml: server-side apply. The body
 * is YAML or JSON; ?fieldManager= is required, ?force=true takes fields
 * from other managers instead of failing with a Conflict.
 */
static void handle_apply(struct emu_server *srv, const struct emu_request *req,
			 const struct target *t, bool dry,
			 struct emu_response *resp)
{
	struct buf msg = BUF_INIT, av = BUF_INIT;
	const char *mgr = query(req, "fieldManager");
	json_t *body = NULL, *obj = NULL, *out = NULL, *st;
	bool force = query_true(req, "force");
	bool raced;
	int code, attempt;

	if (!mgr || !*mgr) {
		st = emu_status_new(422, "Invalid",
				    "PatchOptions.meta.k8s.io \"\" is invalid: "
				    "fieldManager: Required value: is required "
				    "for apply patch",
				    NULL, "meta.k8s.io", "PatchOptions");
		json_object_set_new(
			json_object_get(st, "details"), "causes",
			json_pack("[{s:s, s:s, s:s}]", "reason",
				  "FieldValueRequired", "message",
				  "Required value: is required for apply "
				  "patch",
				  "field", "fieldManager"));
		emu_reply_json(resp, 422, st);
		goto out;
	}
	if (t->sub) {
		handle_apply_sub(srv, req, t, mgr, force, dry, resp);
		goto out;
	}
	if (!(body = decode_apply(req, resp)))
		goto out;
	emu_resource_api_version(t->res, &av);
	if (check_identity(req, t, body, av.ptr, t->res->kind, ID_APPLY, resp) <
		    0 ||
	    apply_typed(t, body, resp) < 0)
		goto out;
	if (!(obj = json_deep_copy(body))) {
		emu_reply_status(resp, 500, "InternalError", "out of memory");
		goto out;
	}
	strip_server_owned(obj, t);
	for (attempt = 0;; attempt++) {
		code = apply_once(srv, t, obj, body, mgr, force, dry, &out,
				  &raced);
		if (!raced || attempt == 5)
			break;
		json_decref(out);
		out = NULL;
	}
	emu_reply_json(resp, code, out);
out:
	json_decref(obj);
	json_decref(body);
	buf_release(&msg);
	buf_release(&av);
}

/* A JSON patch body: an array of operations (JSON only, as kube). */
static json_t *decode_json_patch(const struct emu_request *req,
				 struct emu_response *resp)
{
	struct buf msg = BUF_INIT, why = BUF_INIT;
	json_t *ops = NULL;

	if (req->body_too_large) {
		buf_addf(&msg, "Request entity too large: limit is %u",
			 EMU_MAX_BODY);
		emu_reply_status(resp, 413, "RequestEntityTooLarge", msg.ptr);
		goto out;
	}
	if (emu_go_json_check(req->body ? req->body : "", req->body_len,
			      &why) < 0) {
		buf_addf(&msg, "error decoding patch: %s", why.ptr);
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
		goto out;
	}
	ops = json_loadb(req->body, req->body_len, JSON_DECODE_ANY, NULL);
	if (!ops) {
		/* Valid for Go, not for jansson: a string that is not UTF-8
		 * or holds \u0000. Refused rather than left unanswered. */
		emu_reply_status(resp, 400, "BadRequest",
				 "error decoding patch: a string is not valid "
				 "UTF-8 or holds \\u0000");
	} else if (!json_is_array(ops)) {
		buf_addf(&msg,
			 "error decoding patch: json: cannot unmarshal %s into "
			 "Go value of type []handlers.jsonPatchOp",
			 diff_go_json_kind(ops));
		json_decref(ops);
		ops = NULL;
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
	}
out:
	buf_release(&msg);
	buf_release(&why);
	return ops;
}

static void handle_patch(struct emu_server *srv, const struct emu_request *req,
			 const struct target *t, bool dry, int fv,
			 struct emu_response *resp)
{
	struct buf msg = BUF_INIT, mgr = BUF_INIT;
	json_t *patch = NULL, *out = NULL, *op;
	const char *path;
	enum patch_type type;
	bool pinned;
	size_t i;
	int code, attempt;

	if (media_is(req->content_type, "application/apply-patch+yaml")) {
		handle_apply(srv, req, t, dry, resp);
		return;
	}
	if (media_is(req->content_type,
		     "application/strategic-merge-patch+json")) {
		type = PATCH_STRATEGIC;
	} else if (media_is(req->content_type,
			    "application/merge-patch+json")) {
		type = PATCH_MERGE;
	} else if (media_is(req->content_type, "application/json-patch+json")) {
		type = PATCH_JSON;
	} else {
		/* As the patch handler's plain errors.NewGenericServerResponse. */
		out = emu_status_new(415, "UnsupportedMediaType",
				     "415: Unsupported Media Type", NULL, NULL,
				     NULL);
		json_object_set_new(out, "details", json_object());
		emu_reply_json(resp, 415, out);
		out = NULL;
		goto out;
	}
	if (query(req, "force")) {
		reply_bad_option(resp, req, "force", "FieldValueForbidden",
				 "Forbidden: may not be specified for non-apply "
				 "patch");
		goto out;
	}
	if (type == PATCH_JSON)
		patch = decode_json_patch(req, resp);
	else
		patch = decode_patch(req,
				     type == PATCH_MERGE ? "error decoding "
							   "patch: "
							 : "",
				     resp);
	if (!patch)
		goto out;
	emu_manager_name(query(req, "fieldManager"), req->user_agent, &mgr);
	/*
	 * A patch without a resourceVersion applies to whatever is current:
	 * a write racing with ours is retried, as the API server does,
	 * instead of failing with a Conflict. A JSON patch pins one when an
	 * operation names /metadata/resourceVersion.
	 */
	pinned = json_object_get(json_object_get(patch, "metadata"),
				 "resourceVersion") != NULL;
	json_array_foreach(patch, i, op)
	{
		path = json_string_value(json_object_get(op, "path"));
		if (path && !strcmp(path, "/metadata/resourceVersion"))
			pinned = true;
	}
	for (attempt = 0;; attempt++) {
		buf_reset(&resp->warnings);
		code = patch_once(srv, t, type, patch, mgr.ptr, dry, fv, resp,
				  &out);
		if (code != 409 || pinned || attempt == 5)
			break;
		json_decref(out);
		out = NULL;
	}
	emu_reply_json(resp, code, out);
out:
	buf_release(&mgr);
	json_decref(patch);
	buf_release(&msg);
}

/*
 * GET on a collection with ?watch: open a watch the HTTP layer streams
 * (resp->watch); a bad selector or timeoutSeconds is a plain Status.
 */
static void handle_watch(struct emu_server *srv, const struct emu_request *req,
			 const struct target *t, struct emu_response *resp)
{
	struct emu_watch_options wo = {0};
	const char *ts = query(req, "timeoutSeconds"), *rv;
	struct buf msg = BUF_INIT;
	unsigned long n = 0;
	json_t *status = NULL;
	char *end;
	int code;

	if (ts && *ts) {
		n = strtoul(ts, &end, 10);
		if (*end || *ts == '-' || n > 24ul * 3600) {
			buf_addf(&msg,
				 "strconv.ParseInt: parsing \"%s\": invalid "
				 "syntax",
				 ts);
			emu_reply_status(resp, 400, "BadRequest", msg.ptr);
			buf_release(&msg);
			return;
		}
	}
	rv = query(req, "resourceVersion");
	if (rv && *rv) {
		/* the watch cache's ParseResourceVersion: a 500 */
		strtoull(rv, &end, 10);
		if (*end || *rv == '-' || *rv == '+') {
			buf_addf(&msg,
				 "resourceVersion: Invalid value: \"%s\": "
				 "strconv.ParseUint: parsing \"%s\": invalid "
				 "syntax",
				 rv, rv);
			emu_reply_json(resp, 500,
				       emu_status_new(500, NULL, msg.ptr, NULL,
						      NULL, NULL));
			buf_release(&msg);
			return;
		}
	}
	wo.ns = t->ns;
	wo.labels = query(req, "labelSelector");
	wo.fields = query(req, "fieldSelector");
	wo.rv = query(req, "resourceVersion");
	wo.bookmarks = query_true(req, "allowWatchBookmarks");
	wo.table = emu_table_wanted(req->accept);
	wo.timeout_s = (unsigned)n;
	code = emu_watch_open(&srv->store, t->res, &wo, &resp->watch, &status);
	if (code) {
		emu_reply_json(resp, code, status);
		return;
	}
	resp->code = 200;
	resp->content_type = "application/json";
	buf_reset(&resp->body);
}

static bool is_watch(const struct emu_request *req)
{
	const char *w = query(req, "watch");

	return w && strcmp(w, "false") && strcmp(w, "0");
}

/*
 * DELETE on a collection: every object the selectors match is deleted
 * (each a DELETED event), and the answer is the list as it was read
 * before, as the registry's DeleteCollection returns it. An object gone
 * meanwhile is skipped.
 */
static void handle_delete_collection(struct emu_server *srv,
				     const struct emu_request *req,
				     const struct target *t, bool dry,
				     struct emu_response *resp)
{
	struct emu_selector sel = EMU_SELECTOR_INIT;
	struct emu_field_selector fs = EMU_FIELD_SELECTOR_INIT;
	struct emu_list_options lo = {0};
	struct buf msg = BUF_INIT;
	json_t *list = NULL, *item, *st;
	const json_t *meta;
	const char *name, *ns;
	size_t i;
	int code;

	if (emu_selector_parse(&sel, query(req, "labelSelector"), &msg) < 0 ||
	    emu_field_selector_parse(&fs, query(req, "fieldSelector"), &msg) <
		    0) {
		emu_reply_status(resp, 400, "BadRequest", msg.ptr);
		goto out;
	}
	lo.ns = t->ns;
	lo.labels = &sel;
	lo.fields = &fs;
	code = emu_store_list(&srv->store, t->res, &lo, &list);
	if (code != 200) {
		emu_reply_json(resp, code, list);
		list = NULL;
		goto out;
	}
	json_array_foreach(json_object_get(list, "items"), i, item)
	{
		meta = json_object_get(item, "metadata");
		name = json_string_value(json_object_get(meta, "name"));
		ns = json_string_value(json_object_get(meta, "namespace"));
		if (!name)
			continue;
		st = NULL;
		emu_store_delete(&srv->store, t->res, ns ? ns : "", name, dry,
				 &st);
		json_decref(st);
	}
	emu_reply_json(resp, 200, list);
	list = NULL;
out:
	json_decref(list);
	emu_selector_release(&sel);
	emu_field_selector_release(&fs);
	buf_release(&msg);
}

/*
 * propagationPolicy (the query's, else the body's DeleteOptions): one of
 * kube's three (appended to `policy`) or absent. 0, or -1 with the 422
 * in resp.
 */
static int propagation_policy(const struct emu_request *req,
			      struct emu_response *resp, struct buf *policy)
{
	const char *p = query(req, "propagationPolicy");
	json_t *opts = NULL;
	struct buf why = BUF_INIT;
	int ret = 0;

	if (!p && req->body_len) {
		opts = json_loadb(req->body, req->body_len, 0, NULL);
		p = json_string_value(json_object_get(opts,
						      "propagationPolicy"));
	}
	if (p && strcmp(p, "Foreground") && strcmp(p, "Background") &&
	    strcmp(p, "Orphan")) {
		buf_addf(&why,
			 "Unsupported value: \"%s\": supported values: "
			 "\"Foreground\", \"Background\", \"Orphan\", "
			 "\"nil\"",
			 p);
		reply_bad_option(resp, req, "propagationPolicy",
				 "FieldValueNotSupported", why.ptr);
		ret = -1;
	} else if (p) {
		buf_adds(policy, p);
	}
	json_decref(opts);
	buf_release(&why);
	return ret;
}

/*
 * DeleteOptions.preconditions (uid, resourceVersion) of a DELETE body:
 * 0 when they hold (or there are none), else -1 with the 409 kube
 * answers in resp. A body that is not JSON is left to the delete (kube
 * would refuse it; clients send none or valid options).
 */
static int delete_preconditions(struct emu_server *srv,
				const struct emu_request *req,
				const struct target *t,
				struct emu_response *resp)
{
	json_t *opts = NULL, *pre, *live = NULL;
	const char *want_uid, *want_rv, *uid, *rv;
	struct buf msg = BUF_INIT;
	int ret = 0;

	if (req->body_len)
		opts = json_loadb(req->body, req->body_len, 0, NULL);
	pre = json_object_get(opts, "preconditions");
	want_uid = json_string_value(json_object_get(pre, "uid"));
	want_rv = json_string_value(json_object_get(pre, "resourceVersion"));
	if ((!want_uid && !want_rv) ||
	    emu_store_get(&srv->store, t->res, t->ns, t->name, &live) != 200)
		goto out;
	uid = json_string_value(
		json_object_get(json_object_get(live, "metadata"), "uid"));
	rv = json_string_value(json_object_get(
		json_object_get(live, "metadata"), "resourceVersion"));
	/*
	 * rest.BeforeDelete names the kind, not the resource:
	 * NewConflict(GroupResource{gvk.Group, gvk.Kind}, ...).
	 */
	buf_addf(&msg, "Operation cannot be fulfilled on %s%s%s", t->res->kind,
		 *t->res->group ? "." : "", t->res->group);
	if (want_uid && strcmp(want_uid, uid ? uid : "")) {
		buf_addf(&msg,
			 " \"%s\": the UID in the precondition (%s) does not "
			 "match the UID in record (%s). The object might have "
			 "been deleted and then recreated",
			 t->name, want_uid, uid ? uid : "");
	} else if (want_rv && strcmp(want_rv, rv ? rv : "")) {
		buf_addf(&msg,
			 " \"%s\": the ResourceVersion in the precondition "
			 "(%s) does not match the ResourceVersion in record "
			 "(%s). The object might have been modified",
			 t->name, want_rv, rv ? rv : "");
	} else {
		goto out;
	}
	emu_reply_json(resp, 409,
		       emu_status_new(409, "Conflict", buf_cstr(&msg), t->name,
				      t->res->group, t->res->kind));
	ret = -1;
out:
	json_decref(live);
	json_decref(opts);
	buf_release(&msg);
	return ret;
}

static void handle_resource(struct emu_server *srv,
			    const struct emu_request *req,
			    const struct target *t, struct emu_response *resp)
{
	struct emu_selector sel = EMU_SELECTOR_INIT;
	struct emu_field_selector fs = EMU_FIELD_SELECTOR_INIT;
	struct emu_list_options lo = {0};
	struct buf msg = BUF_INIT, av = BUF_INIT, mgr = BUF_INIT;
	const char *m = req->method, *lim;
	json_t *obj = NULL, *out = NULL, *cur, *dups = json_array();
	char *end;
	int dry, code, fv = FV_WARN;

	if ((dry = dry_run(req, resp)) < 0)
		goto out;
	if ((!strcmp(m, "POST") || !strcmp(m, "PUT") || !strcmp(m, "PATCH")) &&
	    ((fv = field_validation(req, resp)) < 0 ||
	     field_manager_check(req, resp) < 0))
		goto out;
	emu_resource_api_version(t->res, &av);
	emu_manager_name(query(req, "fieldManager"), req->user_agent, &mgr);
	if (!t->name) {
		if (!strcmp(m, "GET")) {
			if (is_watch(req)) {
				handle_watch(srv, req, t, resp);
				goto out;
			}
			if (emu_selector_parse(&sel,
					       query(req, "labelSelector"),
					       &msg) < 0 ||
			    emu_field_selector_parse(
				    &fs, query(req, "fieldSelector"), &msg) <
				    0) {
				emu_reply_status(resp, 400, "BadRequest",
						 msg.ptr);
				goto out;
			}
			if (list_options(req, resp) < 0)
				goto out;
			lim = query(req, "limit");
			if (lim && *lim) {
				lo.limit = strtoul(lim, &end, 10);
				if (*end || *lim == '-')
					lo.limit = 0;
			}
			lo.ns = t->ns;
			lo.labels = &sel;
			lo.fields = &fs;
			lo.cont = query(req, "continue");
			code = emu_store_list(&srv->store, t->res, &lo, &out);
			if (code == 200 && emu_table_wanted(req->accept)) {
				cur = emu_table_new(
					t->res, json_object_get(out, "items"),
					json_object_get(out, "metadata"), true);
				json_decref(out);
				out = cur;
			}
			emu_reply_json(resp, code, out);
		} else if (!strcmp(m, "POST") && t->ns) {
			if (!(obj = decode_body(req, t, resp, dups)) ||
			    check_identity(req, t, obj, av.ptr, t->res->kind,
					   ID_WRITE, resp) < 0 ||
			    decode_typed(req, t, obj, dups, fv, resp) < 0)
				goto out;
			fill_identity(obj, av.ptr, t->res->kind);
			code = emu_store_create(&srv->store, t->res,
						t->ns ? t->ns : "", obj,
						mgr.ptr, dry, &out);
			emu_reply_json(resp, code, out);
		} else if (!strcmp(m, "DELETE") && t->ns &&
			   strcmp(t->res->name, "namespaces")) {
			handle_delete_collection(srv, req, t, dry, resp);
		} else {
			reply_method_not_allowed(resp, req);
		}
		goto out;
	}
	if (!strcmp(m, "GET")) {
		code = emu_store_get(&srv->store, t->res, t->ns, t->name, &out);
		if (code == 200 && t->sub && !strcmp(t->sub, "scale")) {
			cur = scale_of(t->res, out);
			json_decref(out);
			out = cur;
		} else if (code == 200 && !t->sub &&
			   emu_table_wanted(req->accept)) {
			cur = json_pack("[O]", out);
			json_decref(out);
			out = emu_table_new(t->res, cur, NULL, true);
			json_decref(cur);
		}
		emu_reply_json(resp, code, out);
	} else if (!strcmp(m, "PUT")) {
		if (!(obj = decode_body(req, t, resp, dups)))
			goto out;
		if (t->sub && !strcmp(t->sub, "scale")) {
			if (check_identity(req, t, obj, "autoscaling/v1", "Scale",
					   ID_WRITE, resp) < 0 ||
			    decode_typed(req, t, obj, dups, fv, resp) < 0)
				goto out;
			code = emu_store_get(&srv->store, t->res, t->ns,
					     t->name, &cur);
			if (code == 200) {
				json_t *rv = json_object_get(
					json_object_get(obj, "metadata"),
					"resourceVersion");

				set_scale_replicas(t, cur, obj);
				/* the Scale's resourceVersion is a precondition */
				if (json_is_string(rv))
					json_object_set(
						json_object_get(cur, "metadata"),
						"resourceVersion", rv);
				json_decref(out);
				code = emu_store_update(
					&srv->store, t->res, t->ns, t->name,
					"scale", mgr.ptr, cur, dry, &out);
				json_decref(cur);
				if (code == 200) {
					cur = scale_of(t->res, out);
					json_decref(out);
					out = cur;
				}
			} else {
				out = cur;
			}
			emu_reply_json(resp, code, out);
			goto out;
		}
		if (check_identity(req, t, obj, av.ptr, t->res->kind, ID_WRITE,
				   resp) < 0 ||
		    decode_typed(req, t, obj, dups, fv, resp) < 0)
			goto out;
		fill_identity(obj, av.ptr, t->res->kind);
		/* the object must exist before its resourceVersion counts */
		if (lacks_needed_rv(t, obj)) {
			code = emu_store_get(&srv->store, t->res, t->ns,
					     t->name, &out);
			json_decref(out);
			out = NULL;
			if (code == 200) {
				reply_rv_needed(t, resp);
				goto out;
			}
		}
		code = emu_store_update(&srv->store, t->res, t->ns, t->name,
					t->sub, mgr.ptr, obj, dry, &out);
		emu_reply_json(resp, code, out);
	} else if (!strcmp(m, "PATCH")) {
		handle_patch(srv, req, t, dry, fv, resp);
	} else if (!strcmp(m, "DELETE") && !t->sub) {
		if (propagation_policy(req, resp, &msg) < 0 ||
		    delete_preconditions(srv, req, t, resp) < 0)
			goto out;
		code = emu_store_delete_opts(&srv->store, t->res, t->ns,
					     t->name,
					     msg.len ? msg.ptr : NULL, dry,
					     &out);
		emu_reply_json(resp, code, out);
	} else {
		reply_method_not_allowed(resp, req);
	}
out:
	json_decref(obj);
	json_decref(dups);
	emu_selector_release(&sel);
	emu_field_selector_release(&fs);
	buf_release(&msg);
	buf_release(&av);
	buf_release(&mgr);
}

/*
 * Resolve seg[0..n) (after /api/v1 or /apis/G/V) into a target. Returns
 * 0, or -1 when the path names no resource.
 */
static int resolve(const char *group, const char *version, char **seg, size_t n,
		   struct target *t)
{
	const struct emu_resource *nsres;
	size_t i = 0;

	memset(t, 0, sizeof(*t));
	nsres = emu_resource_find("", "v1", "namespaces");
	if (n >= 3 && !strcmp(seg[0], "namespaces")) {
		if (!*group && n == 3 && !strcmp(seg[2], "status")) {
			t->res = nsres;
			t->ns = "";
			t->name = seg[1];
			t->sub = seg[2];
			return 0;
		}
		t->ns = seg[1];
		i = 2;
	}
	if (i >= n)
		return -1;
	t->res = emu_resource_find(group, version, seg[i]);
	if (!t->res)
		return -1;
	if (t->res->flags & EMU_RES_NAMESPACED) {
		if (!t->ns && n - i > 1)
			return -1; /* a namespaced object needs its ns */
	} else {
		if (t->ns)
			return -1;
		t->ns = "";
	}
	if (n - i > 3)
		return -1;
	if (n - i >= 2)
		t->name = seg[i + 1];
	if (n - i == 3) {
		t->sub = seg[i + 2];
		if (!(!strcmp(t->sub, "status") &&
		      (t->res->flags & EMU_RES_STATUS)) &&
		    !(!strcmp(t->sub, "scale") &&
		      (t->res->flags & EMU_RES_SCALE)))
			return -1;
	}
	return 0;
}

static json_t *api_group(const char *group)
{
	json_t *groups = emu_discovery_groups(), *g, *found = NULL;
	size_t i;

	json_array_foreach(json_object_get(groups, "groups"), i, g)
	{
		if (!strcmp(json_string_value(json_object_get(g, "name")),
			    group)) {
			found = json_deep_copy(g);
			json_object_set_new(found, "kind",
					    json_string("APIGroup"));
			json_object_set_new(found, "apiVersion",
					    json_string("v1"));
		}
	}
	json_decref(groups);
	return found;
}

#define AGG_V2 \
	"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
#define AGG_V2BETA1    \
	"application/" \
	"json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

/*
 * GET-only documents: health, version, discovery, OpenAPI. /api and
 * /apis answer aggregated discovery when the Accept header asks for it.
 */
static int handle_static(struct emu_server *srv, const struct emu_request *req,
			 char **seg, size_t n, struct emu_response *resp)
{
	const char *agg = NULL;
	json_t *doc = NULL;

	if (n == 1 && (!strcmp(seg[0], "api") || !strcmp(seg[0], "apis")) &&
	    !srv->no_aggregated_discovery)
		agg = emu_discovery_aggregated_wanted(req->accept);
	if (agg) {
		/* One document with every group's resources (kube 1.26+). */
		doc = emu_discovery_aggregated(!strcmp(seg[0], "api"), agg);
		emu_reply_json(resp, 200, doc);
		if (resp->code == 200 && !strcmp(agg, "v2"))
			resp->content_type = AGG_V2;
		else if (resp->code == 200)
			resp->content_type = AGG_V2BETA1;
		return 0;
	}
	if (n == 1 && !strcmp(seg[0], "version"))
		doc = emu_discovery_version();
	else if (n == 1 && !strcmp(seg[0], "api"))
		doc = emu_discovery_api(srv->host ? srv->host : "");
	else if (n == 2 && !strcmp(seg[0], "api"))
		doc = emu_discovery_resources("", seg[1]);
	else if (n == 1 && !strcmp(seg[0], "apis"))
		doc = emu_discovery_groups();
	else if (n == 2 && !strcmp(seg[0], "apis"))
		doc = api_group(seg[1]);
	else if (n == 3 && !strcmp(seg[0], "apis"))
		doc = emu_discovery_resources(seg[1], seg[2]);
	else if (n >= 2 && !strcmp(seg[0], "openapi")) {
		if (n == 2 && !strcmp(seg[1], "v3"))
			doc = emu_openapi_v3_index();
		else if (n == 2 && !strcmp(seg[1], "v2"))
			doc = emu_openapi_v2();
		else if (n == 4 && !strcmp(seg[1], "v3") &&
			 !strcmp(seg[2], "api"))
			doc = emu_openapi_v3_doc("", seg[3]);
		else if (n == 5 && !strcmp(seg[1], "v3") &&
			 !strcmp(seg[2], "apis"))
			doc = emu_openapi_v3_doc(seg[3], seg[4]);
	} else {
		return -1;
	}
	if (doc)
		emu_reply_json(resp, 200, doc);
	else
		reply_not_found(resp);
	return 0;
}

/* Does base64 `b64` decode to something holding a PEM block? */
static bool holds_pem(const json_t *b64)
{
	struct buf raw = BUF_INIT;
	const char *s = json_string_value(b64);
	bool pem;

	pem = s && base64_decode(&raw, s, strlen(s), 0) == 0 && raw.len &&
	      memmem(raw.ptr, raw.len, "-----BEGIN", 10);
	buf_release(&raw);
	return pem;
}

/*
 * The registries' WarningsOnCreate/Update for what was written: a TLS
 * Secret whose certificate or key holds no PEM block (tls.X509KeyPair's
 * first complaints; a pair that does not match is not checked).
 */
static void write_warnings(const struct target *t, struct emu_response *resp)
{
	json_t *obj, *data;
	const char *type;

	if (*t->res->group || strcmp(t->res->name, "secrets") || t->sub)
		return;
	obj = json_loadb(resp->body.ptr, resp->body.len, 0, NULL);
	type = json_string_value(json_object_get(obj, "type"));
	data = json_object_get(obj, "data");
	if (type && !strcmp(type, "kubernetes.io/tls")) {
		if (!holds_pem(json_object_get(data, "tls.crt")))
			emu_response_warn(resp, "tls: failed to find any PEM "
						"data in certificate input");
		else if (!holds_pem(json_object_get(data, "tls.key")))
			emu_response_warn(resp, "tls: failed to find any PEM "
						"data in key input");
	}
	json_decref(obj);
}

/* Does some built-in or custom resource belong to API group `group`? */
static bool group_known(const char *group)
{
	json_t *groups = emu_discovery_groups(), *g;
	bool found = false;
	size_t i;

	json_array_foreach(json_object_get(groups, "groups"), i, g)
	{
		if (!strcmp(json_string_value(json_object_get(g, "name")),
			    group))
			found = true;
	}
	json_decref(groups);
	return found;
}

/* The Kubernetes verb of a request on a resource. */
static const char *verb_of(const struct emu_request *req,
			   const struct target *t)
{
	const char *m = req->method;

	if (!strcmp(m, "GET"))
		return t->name ? "get" : is_watch(req) ? "watch" : "list";
	if (!strcmp(m, "POST"))
		return "create";
	if (!strcmp(m, "PUT"))
		return "update";
	if (!strcmp(m, "PATCH"))
		return "patch";
	if (!strcmp(m, "DELETE"))
		return t->name ? "delete" : "deletecollection";
	return "unknown";
}

/* Count a request on no resource (discovery, /version, a bad path). */
static void count_plain(struct emu_server *srv, const struct emu_request *req,
			const struct emu_response *resp)
{
	char verb[16];
	size_t i;

	for (i = 0; req->method[i] && i < sizeof(verb) - 1; i++)
		verb[i] = (char)tolower((unsigned char)req->method[i]);
	verb[i] = '\0';
	emu_faults_count(srv->faults, verb, NULL, NULL, resp->code);
}

/*
 * The name a create body gives its object, for faults matching names;
 * NULL when there is none or the body does not parse (the create then
 * fails on its own). Caller frees.
 */
static char *body_name(const struct emu_request *req)
{
	struct render_docs docs = RENDER_DOCS_INIT;
	struct err err = ERR_INIT;
	const char *name = NULL;
	char *copy;

	if (!req->body_too_large && req->body_len &&
	    !media_is(req->content_type,
		      "application/vnd.kubernetes.protobuf") &&
	    render_parse(&docs, req->body, req->body_len, "body", &err) == 0 &&
	    docs.len == 1)
		name = json_string_value(json_object_get(
			json_object_get(docs.items[0].value, "metadata"),
			"name"));
	copy = name ? strdup(name) : NULL;
	render_docs_release(&docs);
	err_release(&err);
	return copy;
}

/*
 * Match the faults against a request and do what fires before it is
 * handled: wait, or answer a failure Status (true: answered, the request
 * is not handled). Watch faults and drop are the caller's, after.
 */
static bool inject_faults(struct emu_server *srv, const struct emu_request *req,
			  const struct target *t, const char *verb,
			  struct emu_fault_hit *hit, struct emu_response *resp)
{
	const char *rv = query(req, "resourceVersion");
	const char *cont = query(req, "continue");
	const char *dry;
	char *created = NULL;
	const char *name = t->name;
	bool has_rv, list = !strcmp(verb, "list"), answered = false;

	if (!srv->faults)
		return false;
	has_rv = (cont && *cont) || (rv && *rv && strcmp(rv, "0"));
	if (!strcmp(verb, "create") && (created = body_name(req)))
		name = created;
	dry = query(req, "dryRun");
	emu_faults_match(srv->faults, verb, t->res, t->ns, name,
			 (has_rv ? EMU_FAULT_HAS_RV : 0) |
				 (dry && !strcmp(dry, "All") ? EMU_FAULT_DRY_RUN
							     : 0),
			 hit);
	clk_sleep_ms((long)hit->latency_ms);
	if (hit->code) {
		emu_reply_json(
			resp, hit->code,
			emu_fault_status(hit->code, t->res, name,
					 *hit->message ? hit->message : NULL,
					 hit->retry_after));
		resp->retry_after = hit->retry_after;
		answered = true;
	} else if (hit->expire && list) {
		/* a watch expires in its stream, after the headers */
		emu_reply_json(
			resp, 410,
			emu_status_new(
				410, "Expired",
				cont && *cont
					? "The provided continue parameter "
					  "is too old to display a "
					  "consistent list result. You can "
					  "start a new list without the "
					  "continue parameter, or use the "
					  "continue token in this response "
					  "to retrieve the remainder of the "
					  "results. Continuing with the "
					  "provided token results in an "
					  "inconsistent list - objects that "
					  "were created, modified, or "
					  "deleted between the time the "
					  "first chunk was returned and now "
					  "may show up in the list."
					: "The resourceVersion for the "
					  "provided list is too old.",
				NULL, NULL, NULL));
		answered = true;
	}
	free(created);
	return answered;
}

/*
 * The request a deprecated watch path stands for: ?watch=1 added, and
 * fieldSelector=metadata.name=NAME for one object (t loses its name).
 * `q` holds room for the query and two more parameters; `sel` (caller
 * frees) the selector text. 0, or -1 when a subresource was named.
 */
static int watch_request(const struct emu_request *req, struct target *t,
			 struct emu_request *out, struct emu_param *q,
			 char **sel)
{
	size_t i, n = 0;

	if (t->sub || req->nquery > MAX_QUERY)
		return -1;
	*out = *req;
	for (i = 0; i < req->nquery; i++)
		if (strcmp(req->query[i].key, "watch") &&
		    (!t->name || strcmp(req->query[i].key, "fieldSelector")))
			q[n++] = req->query[i];
	q[n].key = "watch";
	q[n++].value = "1";
	if (t->name) {
		if (asprintf(sel, "metadata.name=%s", t->name) < 0)
			return -1;
		q[n].key = "fieldSelector";
		q[n++].value = *sel;
		t->name = NULL;
	}
	out->query = q;
	out->nquery = n;
	return 0;
}

void emu_handle(struct emu_server *srv, const struct emu_request *req,
		struct emu_response *resp)
{
	char *path = strdup(req->path ? req->path : "/"), *save = NULL, *s;
	char *seg[MAX_SEGMENTS], *sel = NULL;
	struct emu_param wq[MAX_QUERY + 2];
	struct emu_request wreq;
	struct emu_fault_hit hit = {0};
	struct target t;
	const char *verb;
	size_t n = 0, base;
	bool watch_path = false;

	if (!path) {
		emu_reply_status(resp, 500, "InternalError", "out of memory");
		return;
	}
	for (s = strtok_r(path, "/", &save); s;
	     s = strtok_r(NULL, "/", &save)) {
		if (n == MAX_SEGMENTS) {
			reply_not_found(resp);
			goto out;
		}
		seg[n++] = s;
	}
	if (n == 1 &&
	    (!strcmp(seg[0], "readyz") || !strcmp(seg[0], "healthz") ||
	     !strcmp(seg[0], "livez"))) {
		resp->code = 200;
		resp->content_type = "text/plain; charset=utf-8";
		buf_reset(&resp->body);
		buf_adds(&resp->body, "ok");
		goto out;
	}
	if (!authorized(srv, req)) {
		emu_reply_status(resp, 401, "Unauthorized", "Unauthorized");
		if (!(n >= 1 && !strcmp(seg[0], "emu")))
			count_plain(srv, req, resp);
		goto out;
	}
	if (n >= 1 && !strcmp(seg[0], "emu")) {
		/* the emulator's own controls: not counted, no faults */
		if (emu_faults_control(srv->faults, req, seg, n, resp) < 0 &&
		    emu_actors_control(srv->store.actors, req, seg, n, resp) <
			    0)
			reply_not_found(resp);
		goto out;
	}
	if (!strcmp(req->method, "GET") &&
	    handle_static(srv, req, seg, n, resp) == 0) {
		count_plain(srv, req, resp);
		goto out;
	}
	/*
	 * The deprecated watch paths (/api/v1/watch/..., /apis/G/V/watch/
	 * ...): a watch, of one object by its name when the path has one.
	 */
	base = n >= 1 && !strcmp(seg[0], "api") ? 2 : 3;
	if (n > base && !strcmp(seg[base], "watch") &&
	    !strcmp(req->method, "GET")) {
		memmove(seg + base, seg + base + 1,
			(n - base - 1) * sizeof(*seg));
		n--;
		watch_path = true;
	}
	if ((n >= 3 && !strcmp(seg[0], "api") &&
	     resolve("", seg[1], seg + 2, n - 2, &t) == 0) ||
	    (n >= 4 && !strcmp(seg[0], "apis") &&
	     resolve(seg[1], seg[2], seg + 3, n - 3, &t) == 0)) {
		if (watch_path && watch_request(req, &t, &wreq, wq, &sel) < 0) {
			reply_not_found(resp);
			goto out;
		}
		if (watch_path)
			req = &wreq;
		verb = verb_of(req, &t);
		if (!inject_faults(srv, req, &t, verb, &hit, resp))
			handle_resource(srv, req, &t, resp);
		if (resp->code / 100 == 2 &&
		    (!strcmp(req->method, "POST") || !strcmp(req->method, "PUT") ||
		     !strcmp(req->method, "PATCH")))
			write_warnings(&t, resp);
		/* apimachinery's deprecation warning, on every request */
		if (!*t.res->group && !strcmp(t.res->name, "endpoints"))
			emu_response_warn(resp, "v1 Endpoints is deprecated in "
						"v1.33+; use discovery.k8s.io/v1 "
						"EndpointSlice");
		if (resp->watch && hit.expire)
			emu_watch_expire(resp->watch,
					 query(req, "resourceVersion"));
		else if (resp->watch && hit.watch_end_ms)
			emu_watch_end_after(resp->watch, hit.watch_end_ms);
		if (hit.drop)
			resp->drop = true;
		emu_faults_count(srv->faults, verb, t.res, t.sub, resp->code);
	} else {
		if (n >= 2 && !strcmp(seg[0], "apis") && !group_known(seg[1]))
			reply_page_not_found(resp);
		else
			reply_not_found(resp);
		count_plain(srv, req, resp);
	}
out:
	free(path);
	free(sel);
}
