/*
 * An app's ApplySet inventory: its name, id and parent Secret, the
 * part-of label on its objects, and the resource types it touches.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/internal.h"
#include "util/base64.h"
#include "util/clock.h"
#include "util/sha256.h"
#include "util/strvec.h"

#include "util/banned.h" /* last */

/* A set of strings (group-kinds, namespaces): a vector without repeats. */
int app_strset_add(struct strvec *s, const char *str)
{
	return strvec_has(s, str) ? 0 : strvec_push(s, str);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The set as "a,b,c", sorted. */
static int strset_join(struct strvec *s, struct buf *out)
{
	if (s->len) /* an empty set has no array to sort */
		qsort(s->v, s->len, sizeof(*s->v), cmp_str);
	for (size_t i = 0; i < s->len; i++)
		if ((i && buf_addch(out, ',') < 0) ||
		    buf_adds(out, s->v[i]) < 0)
			return ERR_NOMEM;
	return 0;
}

/* Split a comma-separated annotation value into *s. */
static int strset_split(struct strvec *s, const char *text)
{
	while (text && *text) {
		const char *end = strchr(text, ',');
		size_t n = end ? (size_t)(end - text) : strlen(text);
		char *one = strndup(text, n);
		int error;

		if (!one)
			return ERR_NOMEM;
		error = *one ? app_strset_add(s, one) : 0;
		free(one);
		if (error < 0)
			return error;
		text = end ? end + 1 : NULL;
	}
	return 0;
}

void app_group_kind(struct buf *out, const char *group, const char *kind)
{
	buf_adds(out, kind);
	if (*group) {
		buf_addch(out, '.');
		buf_adds(out, group);
	}
}

bool app_is_kind(const struct diff_key *k, const char *group, const char *kind)
{
	return !strcmp(k->group, group) && !strcmp(k->kind, kind);
}

bool app_is_crd(const struct diff_key *k)
{
	return app_is_kind(k, "apiextensions.k8s.io",
			   "CustomResourceDefinition");
}

/* A string member of obj, or "" when absent or not a string. */
static const char *str(const json_t *obj, const char *key)
{
	const char *v = json_string_value(json_object_get(obj, key));

	return v ? v : "";
}

/* A label or annotation of obj, or "" when it has none. */
const char *app_label_of(const json_t *obj, const char *name)
{
	return str(json_object_get(json_object_get(obj, "metadata"), "labels"),
		   name);
}

static const char *annotation_of(const json_t *obj, const char *name)
{
	return str(json_object_get(json_object_get(obj, "metadata"),
				   "annotations"),
		   name);
}

/* A DNS subdomain: what a Secret's name may be. */
static bool valid_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 253 || *s == '-' || *s == '.' || s[n - 1] == '-' ||
	    s[n - 1] == '.')
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		      *s == '-' || *s == '.'))
			return false;
	return true;
}

int app_init(struct app *app, struct kube_client *c, struct kube_discovery *d,
	     const char *name, const char *ns, const char *field_manager,
	     struct err *err)
{
	uint8_t hash[SHA256_DIGEST_SIZE];
	struct buf b = BUF_INIT;
	int error = 0;

	memset(app, 0, sizeof(*app));
	app->client = c;
	app->disc = d;
	if (!valid_name(name))
		return err_set(
			err, ERR_USAGE,
			"app name \"%s\" is not a valid object name "
			"(lower-case letters, digits, '-', '.'; see --app)",
			name);
	if (!valid_name(ns))
		return err_set(err, ERR_USAGE, "namespace \"%s\" is not valid",
			       ns);
	/* kubectl's id: sha256("<name>.<namespace>.<Kind>.<group>"). */
	buf_addf(&b, "%s.%s.Secret.", name, ns);
	sha256(b.ptr, b.len, hash);
	buf_reset(&b);
	buf_adds(&b, "applyset-");
	/* Go's RawURLEncoding, as kubectl's ids */
	base64_encode(&b, hash, sizeof(hash), BASE64_URL | BASE64_NOPAD);
	buf_adds(&b, "-v1");
	app->name = strdup(name);
	app->namespace = strdup(ns);
	app->field_manager = strdup(field_manager);
	app->id = buf_detach(&b, NULL);
	if (!app->name || !app->namespace || !app->field_manager || !app->id)
		error = err_set(err, ERR_NOMEM, "out of memory");
	buf_release(&b);
	return error;
}

void app_use_spec(struct app *app, const struct app_spec *s)
{
	app->create_namespace = s->create_namespace;
	app->namespace_metadata = s->namespace_metadata;
}

void app_release(struct app *app)
{
	if (!app)
		return;
	for (size_t i = 0; i < app->ntypes; i++) {
		free(app->types[i].group);
		free(app->types[i].kind);
		free(app->types[i].version);
	}
	free(app->types);
	app_forget_live(app);
	free(app->name);
	free(app->namespace);
	free(app->field_manager);
	free(app->id);
	memset(app, 0, sizeof(*app));
}

bool app_is_parent(const struct app *app, const struct diff_key *k)
{
	return app_is_kind(k, "", "Secret") && !strcmp(k->ns, app->namespace) &&
	       !strcmp(k->name, app->name);
}

/* The resource of an object of the app (NULL: not served). */
const struct kube_resource *app_resource_of(struct app *app,
					    const struct diff_key *k)
{
	const struct app_type *t;

	if (app_is_parent(app, k))
		return app->secrets;
	t = app_find_type(app, k->group, k->kind);
	return t ? t->res : NULL;
}

int app_label(struct app *app, struct diff_objset *desired, struct err *err)
{
	struct buf name = BUF_INIT;
	int error = 0;

	for (size_t i = 0; i < desired->len; i++) {
		struct diff_object *o = desired->items[i];
		json_t *meta = json_object_get(o->json, "metadata"), *labels;

		if (app_is_parent(app, &o->key)) {
			buf_reset(&name);
			diff_key_format(&o->key, &name);
			error = err_set(
				err, ERR_INVALID,
				"%s%s%s: the app's inventory Secret has "
				"this name; choose another --app",
				o->origin ? o->origin : "",
				o->origin ? ": " : "", buf_cstr(&name));
			continue;
		}
		if (!json_is_object(meta))
			continue; /* diff_key_from_object refused it already */
		labels = json_object_get(meta, "labels");
		if (!json_is_object(labels)) {
			labels = json_object();
			if (json_object_set_new(meta, "labels", labels) < 0) {
				error = err_set(err, ERR_NOMEM,
						"out of memory");
				break;
			}
		}
		if (json_object_set_new(labels, APP_LABEL_PART_OF,
					json_string(app->id)) < 0) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			break;
		}
	}
	buf_release(&name);
	return error;
}

struct app_type *app_find_type(struct app *app, const char *group,
			       const char *kind)
{
	for (size_t i = 0; i < app->ntypes; i++)
		if (!strcmp(app->types[i].group, group) &&
		    !strcmp(app->types[i].kind, kind))
			return &app->types[i];
	return NULL;
}

int app_add_type(struct app *app, const char *group, const char *kind,
		 const char *version, bool desired)
{
	struct app_type *t = app_find_type(app, group, kind), *nt;

	if (t) {
		t->desired |= desired;
		if (!t->version && version && !(t->version = strdup(version)))
			return ERR_NOMEM;
		return 0;
	}
	if (!(nt = realloc(app->types, (app->ntypes + 1) * sizeof(*nt))))
		return ERR_NOMEM;
	app->types = nt;
	t = &nt[app->ntypes];
	memset(t, 0, sizeof(*t));
	t->group = strdup(group);
	t->kind = strdup(kind);
	t->version = version ? strdup(version) : NULL;
	t->desired = desired;
	app->ntypes++;
	if (!t->group || !t->kind || (version && !t->version))
		return ERR_NOMEM;
	return 0;
}

/* The version part of an object's apiVersion (NULL when it has none). */
char *app_version_of(const json_t *obj)
{
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	const char *v;
	size_t glen;

	if (!av)
		return NULL;
	diff_api_version_split(av, &glen, &v);
	return strdup(v);
}

/* The desired CRD that defines group/kind, or NULL. */
const json_t *app_desired_crd(const struct diff_objset *desired,
			      const char *group, const char *kind)
{
	for (size_t i = 0; i < desired->len; i++) {
		const json_t *spec;

		if (!app_is_crd(&desired->items[i]->key))
			continue;
		spec = json_object_get(desired->items[i]->json, "spec");
		if (!strcmp(str(spec, "group"), group) &&
		    !strcmp(str(json_object_get(spec, "names"), "kind"), kind))
			return desired->items[i]->json;
	}
	return NULL;
}

/* Is a desired object of this type namespaced (also before it is served)? */
bool app_type_namespaced(const struct app_type *t,
			 const struct diff_objset *desired)
{
	const json_t *crd;

	if (t->res)
		return t->res->namespaced;
	crd = app_desired_crd(desired, t->group, t->kind);
	if (crd)
		return strcmp(str(json_object_get(crd, "spec"), "scope"),
			      "Cluster") != 0;
	return !diff_kind_cluster_scoped(t->group, t->kind);
}

/* Resolve a type through discovery; ERR_NOTFOUND leaves res NULL. */
int app_resolve_type(struct app *app, struct app_type *t, struct err *err)
{
	struct err e = ERR_INIT;
	int error;

	error = kube_discovery_find(app->disc, t->group, t->version, t->kind,
				    &t->res, &e);
	if (error == ERR_NOTFOUND && t->version) {
		/* Maybe another version is served: the identity has none. */
		err_reset(&e);
		error = kube_discovery_find(app->disc, t->group, NULL, t->kind,
					    &t->res, &e);
	}
	if (error == ERR_NOTFOUND) {
		t->res = NULL;
		error = 0;
	} else if (error < 0) {
		err_move(err, &e);
	}
	err_release(&e);
	return error;
}

/* The parent as it should be: members are desired objects and `live`. */
int app_build_parent(const struct app *app, const struct diff_objset *desired,
		     const struct diff_objset *live, const bool *gone,
		     json_t **out, struct err *err)
{
	struct strvec gks = STRVEC_INIT, nss = STRVEC_INIT;
	struct buf b = BUF_INIT;
	json_t *obj = NULL;
	int error = 0;

	*out = NULL;
	for (int side = 0; side < 2 && !error; side++) {
		const struct diff_objset *set = side ? live : desired;

		for (size_t i = 0; set && i < set->len && !error; i++) {
			const struct diff_object *o = set->items[i];

			if (app_is_parent(app, &o->key) ||
			    (side &&
			     (strcmp(app_label_of(o->json, APP_LABEL_PART_OF),
				     app->id) ||
			      (gone && gone[i]))))
				continue;
			buf_reset(&b);
			app_group_kind(&b, o->key.group, o->key.kind);
			error = app_strset_add(&gks, buf_cstr(&b));
			if (!error && *o->key.ns &&
			    strcmp(o->key.ns, app->namespace))
				error = app_strset_add(&nss, o->key.ns);
		}
	}
	if (error)
		goto nomem;
	obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:{s:s+}}}",
			"apiVersion", "v1", "kind", "Secret", "metadata",
			"name", app->name, "namespace", app->namespace,
			"labels", APP_LABEL_ID, app->id, "annotations",
			APP_ANN_TOOLING, "syncd/", SYNCD_VERSION);
	if (!obj)
		goto nomem;
	buf_reset(&b);
	if (strset_join(&gks, &b) < 0 ||
	    json_object_set_new(
		    json_object_get(json_object_get(obj, "metadata"),
				    "annotations"),
		    APP_ANN_GROUP_KINDS, json_string(buf_cstr(&b))) < 0)
		goto nomem;
	if (nss.len) {
		buf_reset(&b);
		if (strset_join(&nss, &b) < 0 ||
		    json_object_set_new(
			    json_object_get(json_object_get(obj, "metadata"),
					    "annotations"),
			    APP_ANN_NAMESPACES, json_string(buf_cstr(&b))) < 0)
			goto nomem;
	}
	*out = obj;
	obj = NULL;
	goto out;
nomem:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	json_decref(obj);
	strvec_release(&gks);
	strvec_release(&nss);
	buf_release(&b);
	return error;
}

/* GET the parent; ERR_EXISTS when that Secret is not our parent. */
int app_read_parent(struct app *app, struct strvec *gks, struct strvec *nss,
		    struct err *err)
{
	const struct kube_resource *secrets;
	json_t *obj = NULL;
	int error;

	if ((error = kube_discovery_find(app->disc, "", "v1", "Secret",
					 &secrets, err)) < 0)
		return error;
	app->secrets = secrets;
	app->requests++;
	error = kube_get(app->client, secrets, app->namespace, app->name, &obj,
			 NULL);
	if (error == ERR_NOTFOUND)
		return 0;
	if (error < 0) /* again, for the message */
		return kube_get(app->client, secrets, app->namespace, app->name,
				&obj, err);
	if (strcmp(app_label_of(obj, APP_LABEL_ID), app->id)) {
		error = err_set(err, ERR_EXISTS,
				"Secret %s/%s exists and is not the inventory "
				"of app \"%s\" (no label %s=%s); choose "
				"another --app or namespace",
				app->namespace, app->name, app->name,
				APP_LABEL_ID, app->id);
		goto out;
	}
	if ((error = strset_split(
		     gks, annotation_of(obj, APP_ANN_GROUP_KINDS))) < 0 ||
	    (error = strset_split(
		     nss, annotation_of(obj, APP_ANN_NAMESPACES))) < 0 ||
	    (error = app_add_live(app, obj, err)) < 0)
		goto out;
out:
	json_decref(obj);
	return error;
}
