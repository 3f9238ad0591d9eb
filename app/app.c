/*
 * An app against a cluster: ApplySet inventory, live objects, one
 * reconcile pass. See app.h for the steps.
 */
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/app.h"
#include "util/base64.h"
#include "util/sha256.h"
#include "util/clock.h"
#include "util/strvec.h"

#include "util/banned.h" /* last */

struct app_type {
	char *group;
	char *kind;
	char *version; /* of the first desired object, or NULL */
	const struct kube_resource *res; /* NULL: not served (yet) */
	bool desired;			 /* some desired object has it */
	bool failed;			 /* reported as not served */
};

/* A set of strings (group-kinds, namespaces): a vector without repeats. */
static int strset_add(struct strvec *s, const char *str)
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
		error = *one ? strset_add(s, one) : 0;
		free(one);
		if (error < 0)
			return error;
		text = end ? end + 1 : NULL;
	}
	return 0;
}

static void group_kind(struct buf *out, const char *group, const char *kind)
{
	buf_adds(out, kind);
	if (*group) {
		buf_addch(out, '.');
		buf_adds(out, group);
	}
}

static bool is_kind(const struct diff_key *k, const char *group,
		    const char *kind)
{
	return !strcmp(k->group, group) && !strcmp(k->kind, kind);
}

static bool is_crd(const struct diff_key *k)
{
	return is_kind(k, "apiextensions.k8s.io", "CustomResourceDefinition");
}

/* A string member of obj, or "" when absent or not a string. */
static const char *str(const json_t *obj, const char *key)
{
	const char *v = json_string_value(json_object_get(obj, key));

	return v ? v : "";
}

/* A label or annotation of obj, or "" when it has none. */
static const char *label_of(const json_t *obj, const char *name)
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
	diff_objset_release(&app->live);
	free(app->name);
	free(app->namespace);
	free(app->field_manager);
	free(app->id);
	memset(app, 0, sizeof(*app));
}

static bool is_parent(const struct app *app, const struct diff_key *k)
{
	return is_kind(k, "", "Secret") && !strcmp(k->ns, app->namespace) &&
	       !strcmp(k->name, app->name);
}

static struct app_type *find_type(struct app *app, const char *group,
				  const char *kind);

/* The resource of an object of the app (NULL: not served). */
static const struct kube_resource *resource_of(struct app *app,
					       const struct diff_key *k)
{
	const struct app_type *t;

	if (is_parent(app, k))
		return app->secrets;
	t = find_type(app, k->group, k->kind);
	return t ? t->res : NULL;
}

int app_label(struct app *app, struct diff_objset *desired, struct err *err)
{
	struct buf name = BUF_INIT;
	int error = 0;

	for (size_t i = 0; i < desired->len; i++) {
		struct diff_object *o = desired->items[i];
		json_t *meta = json_object_get(o->json, "metadata"), *labels;

		if (is_parent(app, &o->key)) {
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

static struct app_type *find_type(struct app *app, const char *group,
				  const char *kind)
{
	for (size_t i = 0; i < app->ntypes; i++)
		if (!strcmp(app->types[i].group, group) &&
		    !strcmp(app->types[i].kind, kind))
			return &app->types[i];
	return NULL;
}

static int add_type(struct app *app, const char *group, const char *kind,
		    const char *version, bool desired)
{
	struct app_type *t = find_type(app, group, kind), *nt;

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
static char *version_of(const json_t *obj)
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
static const json_t *desired_crd(const struct diff_objset *desired,
				 const char *group, const char *kind)
{
	for (size_t i = 0; i < desired->len; i++) {
		const json_t *spec;

		if (!is_crd(&desired->items[i]->key))
			continue;
		spec = json_object_get(desired->items[i]->json, "spec");
		if (!strcmp(str(spec, "group"), group) &&
		    !strcmp(str(json_object_get(spec, "names"), "kind"), kind))
			return desired->items[i]->json;
	}
	return NULL;
}

/* Is a desired object of this type namespaced (also before it is served)? */
static bool type_namespaced(const struct app_type *t,
			    const struct diff_objset *desired)
{
	const json_t *crd;

	if (t->res)
		return t->res->namespaced;
	crd = desired_crd(desired, t->group, t->kind);
	if (crd)
		return strcmp(str(json_object_get(crd, "spec"), "scope"),
			      "Cluster") != 0;
	return !diff_kind_cluster_scoped(t->group, t->kind);
}

/* Resolve a type through discovery; ERR_NOTFOUND leaves res NULL. */
static int resolve_type(struct app *app, struct app_type *t, struct err *err)
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

static int add_live(struct app *app, json_t *obj, struct err *err)
{
	struct diff_object *o = NULL;
	int error;

	if ((error = diff_object_new(&o, obj, NULL, err)) < 0)
		return error;
	if (diff_objset_add(&app->live, o, NULL) < 0)
		diff_object_free(o); /* listed twice (two namespaces' views) */
	return 0;
}

/* The parent as it should be: members are desired objects and `live`. */
static int build_parent(const struct app *app,
			const struct diff_objset *desired,
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

			if (is_parent(app, &o->key) ||
			    (side &&
			     (strcmp(label_of(o->json, APP_LABEL_PART_OF),
				     app->id) ||
			      (gone && gone[i]))))
				continue;
			buf_reset(&b);
			group_kind(&b, o->key.group, o->key.kind);
			error = strset_add(&gks, buf_cstr(&b));
			if (!error && *o->key.ns &&
			    strcmp(o->key.ns, app->namespace))
				error = strset_add(&nss, o->key.ns);
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
static int read_parent(struct app *app, struct strvec *gks, struct strvec *nss,
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
	if (strcmp(label_of(obj, APP_LABEL_ID), app->id)) {
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
	    (error = add_live(app, obj, err)) < 0)
		goto out;
out:
	json_decref(obj);
	return error;
}

int app_read_live(struct app *app, struct diff_objset *desired, struct err *err)
{
	struct strvec gks = STRVEC_INIT, nss = STRVEC_INIT;
	struct kube_list_options lo = {0};
	struct buf sel = BUF_INIT, name = BUF_INIT;
	struct diff_object *po = NULL;
	struct err e = ERR_INIT;
	json_t *parent = NULL;
	int error = 0, first = 0;

	if ((error = read_parent(app, &gks, &nss, err)) < 0)
		goto out;
	/* The types: desired ones first (their version), then the parent's. */
	for (size_t i = 0; i < desired->len; i++) {
		const struct diff_object *o = desired->items[i];
		char *v = version_of(o->json);

		error = add_type(app, o->key.group, o->key.kind, v, true);
		free(v);
		if (error < 0)
			goto nomem;
	}
	for (size_t i = 0; i < gks.len; i++) {
		char *dot = strchr(gks.v[i], '.');

		if (dot)
			*dot = '\0';
		if (add_type(app, dot ? dot + 1 : "", gks.v[i], NULL, false) <
		    0)
			goto nomem;
	}
	for (size_t i = 0; i < app->ntypes; i++) {
		struct app_type *t = &app->types[i];

		if ((error = resolve_type(app, t, err)) < 0)
			goto out;
		if (t->res || !t->desired ||
		    desired_crd(desired, t->group, t->kind))
			continue;
		/* Not served and no CRD of ours will serve it. */
		t->failed = true;
		buf_reset(&name);
		group_kind(&name, t->group, t->kind);
		if (!first)
			first = ERR_NOTFOUND;
		err_set(err, ERR_NOTFOUND,
			"no resource for %s (%s) on the server, and the app "
			"has no CustomResourceDefinition for it",
			buf_cstr(&name),
			t->version ? t->version : "any version");
	}

	/* Namespaces: the desired objects', the parent's, its records'. */
	if (strset_add(&nss, app->namespace) < 0)
		goto nomem;
	for (size_t i = 0; i < desired->len; i++)
		if (*desired->items[i]->key.ns &&
		    strset_add(&nss, desired->items[i]->key.ns) < 0)
			goto nomem;

	buf_addf(&sel, "%s=%s", APP_LABEL_PART_OF, app->id);
	lo.label_selector = buf_cstr(&sel);
	for (size_t i = 0; i < app->ntypes; i++) {
		const struct app_type *t = &app->types[i];
		size_t n = t->res && t->res->namespaced ? nss.len : 1;

		for (size_t j = 0; t->res && j < n; j++) {
			json_t *items = NULL, *item;
			size_t k;

			const char *ns = t->res->namespaced ? nss.v[j] : NULL;

			error = app->list_hook
					? app->list_hook(app, t->res, ns,
							 &items,
							 app->list_ctx)
					: ERR_NOTFOUND;
			if (error == ERR_NOTFOUND) {
				app->requests++;
				error = kube_list(app->client, t->res, ns, &lo,
						  &items, NULL, err);
			}
			if (error < 0)
				goto out;
			json_array_foreach (items, k, item) {
				if ((error = add_live(app, item, err)) < 0)
					break;
			}
			json_decref(items);
			if (error < 0)
				goto out;
		}
	}

	/* A GET for every desired object the LISTs did not return. */
	for (size_t i = 0; i < desired->len; i++) {
		const struct diff_object *o = desired->items[i];
		const struct app_type *t =
			find_type(app, o->key.group, o->key.kind);
		json_t *obj = NULL;
		int r;

		if (!t || !t->res || diff_objset_get(&app->live, &o->key) ||
		    strchr(o->key.name, '*'))
			continue;
		app->requests++;
		r = kube_get(app->client, t->res, o->key.ns, o->key.name, &obj,
			     &e);
		if (r == ERR_NOTFOUND) {
			/* Absent: Missing, not a problem. */
			err_reset(&e);
			continue;
		}
		if (r < 0) {
			err_move(err, &e);
			error = r;
			goto out;
		}
		error = add_live(app, obj, err);
		json_decref(obj);
		if (error < 0)
			goto out;
	}

	if ((error = build_parent(app, desired, &app->live, NULL, &parent,
				  err)) < 0)
		goto out;
	if ((error = diff_object_new(&po, parent, "app inventory", err)) < 0 ||
	    (error = diff_objset_add(desired, po, err)) < 0)
		goto out;
	po = NULL;
	error = first;
	goto out;
nomem:
	error = err_set(err, ERR_NOMEM, "out of memory");
out:
	diff_object_free(po);
	json_decref(parent);
	err_release(&e);
	strvec_release(&gks);
	strvec_release(&nss);
	buf_release(&sel);
	buf_release(&name);
	return error;
}

static bool builtin_group(const char *g)
{
	static const char *const groups[] = {
		"",
		"apps",
		"batch",
		"autoscaling",
		"policy",
		"rbac.authorization.k8s.io",
		"networking.k8s.io",
		"apiextensions.k8s.io",
		"apiregistration.k8s.io",
		"coordination.k8s.io",
		"events.k8s.io",
		"storage.k8s.io",
		"admissionregistration.k8s.io",
		"certificates.k8s.io",
		"scheduling.k8s.io",
		"node.k8s.io",
		"discovery.k8s.io",
		"flowcontrol.apiserver.k8s.io",
		"authentication.k8s.io",
		"authorization.k8s.io",
		"resource.k8s.io",
		"internal.apiserver.k8s.io",
		"storagemigration.k8s.io",
		NULL,
	};

	for (const char *const *p = groups; *p; p++)
		if (!strcmp(*p, g))
			return true;
	return false;
}

static int add_crds_of(struct diff_schemas *reg, const struct diff_objset *set,
		       struct err *err)
{
	int error = 0;

	for (size_t i = 0; i < set->len; i++)
		if (is_crd(&set->items[i]->key) &&
		    diff_schemas_add_crd(reg, set->items[i]->json, err) < 0)
			error = ERR_INVALID;
	return error;
}

/* Is there a CRD for group/kind in `set`? */
static bool has_crd(const struct diff_objset *set, const char *group,
		    const char *kind)
{
	return desired_crd(set, group, kind) != NULL;
}

int app_add_schemas(struct app *app, struct diff_schemas *reg,
		    const struct diff_objset *desired, struct err *err)
{
	const struct kube_resource *crds = NULL;
	struct buf name = BUF_INIT;
	int error = 0;

	/* Live first: the desired CRD is what the next apply makes. */
	if (add_crds_of(reg, &app->live, err) < 0 ||
	    add_crds_of(reg, desired, err) < 0)
		error = ERR_INVALID;
	for (size_t i = 0; i < app->ntypes; i++) {
		const struct app_type *t = &app->types[i];
		json_t *crd = NULL;
		int r;

		if (!t->res || builtin_group(t->group) ||
		    has_crd(desired, t->group, t->kind) ||
		    has_crd(&app->live, t->group, t->kind))
			continue;
		if (!crds &&
		    (r = kube_discovery_find(app->disc, "apiextensions.k8s.io",
					     "v1", "CustomResourceDefinition",
					     &crds, err)) < 0)
			return r;
		buf_reset(&name);
		buf_addf(&name, "%s.%s", t->res->name, t->group);
		app->requests++;
		r = kube_get(app->client, crds, NULL, buf_cstr(&name), &crd,
			     NULL);
		if (r == ERR_NOTFOUND)
			continue; /* an aggregated API: no CRD, default types */
		if (r < 0) {
			error = err_set(err, r, "cannot read the CRD %s",
					buf_cstr(&name));
			continue;
		}
		if (diff_schemas_add_crd(reg, crd, err) < 0)
			error = ERR_INVALID;
		json_decref(crd);
	}
	buf_release(&name);
	return error;
}

int app_dry_run(struct app *app, const struct diff_report *report,
		const struct diff_objset *desired, struct diff_objset *out,
		struct err *err)
{
	struct kube_apply_options ao = {app->field_manager, false, true};
	struct buf name = BUF_INIT;
	int error = 0;

	for (size_t i = 0; i < report->len; i++) {
		const struct diff_object_report *r = &report->objects[i];
		const struct diff_object *d;
		const struct kube_resource *kr;
		const json_t *body;
		struct diff_object *o = NULL;
		struct err e = ERR_INIT;
		json_t *res = NULL;
		int rc;

		if (r->state == DIFF_ORPHAN ||
		    !(d = diff_objset_get(desired, &r->key)))
			continue;
		kr = resource_of(app, &r->key);
		body = r->apply ? r->apply : d->json;
		ao.force = r->apply && r->force;
		rc = -1;
		if (kr) {
			rc = kube_apply(app->client, kr, body, &ao, &res, &e);
			if (rc < 0 && rc != ERR_EXISTS) {
				buf_reset(&name);
				diff_key_format(&r->key, &name);
				err_set(err, rc, "%s: dry-run apply: %s",
					buf_cstr(&name), err_first(&e));
				if (!error)
					error = rc;
			}
		}
		/*
		 * Not served yet (a CRD of the app comes first), or a conflict
		 * the policy leaves alone: the local comparison stands.
		 */
		rc = diff_object_new(&o, rc < 0 ? d->json : res, d->origin,
				     err);
		json_decref(res);
		err_release(&e);
		if (rc < 0 || (rc = diff_objset_add(out, o, err)) < 0) {
			diff_object_free(o);
			error = rc;
			break;
		}
	}
	buf_release(&name);
	return error;
}

void app_sync_result_release(struct app_sync_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->nentries; i++) {
		free(res->entries[i].object);
		free(res->entries[i].result);
	}
	free(res->entries);
	res->entries = NULL;
	res->nentries = res->aentries = 0;
	err_release(&res->failures);
}

/* The order of a reconcile pass. */
enum phase {
	PHASE_PARENT_NS, /* the Namespace the parent lives in */
	PHASE_PARENT,
	PHASE_CRD,
	PHASE_NAMESPACE,
	PHASE_CLUSTER,
	PHASE_NAMESPACED,
	PHASE_COUNT,
};

struct sync {
	struct app *app;
	const struct diff_report *report;
	const struct diff_objset *desired;
	const struct app_sync_options *opts;
	struct app_sync_result *res;
	struct buf name;
	bool *done; /* per report object: applied (or failed) already */
	bool *gone; /* per live object: pruned */
	bool crd_applied;
};

static enum phase phase_of(struct sync *s, const struct diff_key *k)
{
	const struct app_type *t;

	if (is_parent(s->app, k))
		return PHASE_PARENT;
	if (is_kind(k, "", "Namespace"))
		return strcmp(k->name, s->app->namespace) ? PHASE_NAMESPACE
							  : PHASE_PARENT_NS;
	if (is_crd(k))
		return PHASE_CRD;
	t = find_type(s->app, k->group, k->kind);
	return t && !type_namespaced(t, s->desired) ? PHASE_CLUSTER
						    : PHASE_NAMESPACED;
}

/*
 * One entry of the result: `object` (NULL: the app) and what happened.
 * Out of memory loses the entry, never the counts.
 */
static void add_entry(struct app_sync_result *res, const char *object,
		      const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void add_entry(struct app_sync_result *res, const char *object,
		      const char *fmt, ...)
{
	struct app_sync_entry *e;
	va_list ap;
	char *result;
	int n;

	if (res->nentries == res->aentries) {
		size_t alloc = res->aentries ? 2 * res->aentries : 16;

		e = realloc(res->entries, alloc * sizeof(*e));
		if (!e)
			return;
		res->entries = e;
		res->aentries = alloc;
	}
	va_start(ap, fmt);
	n = vasprintf(&result, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	e = &res->entries[res->nentries];
	e->result = result;
	e->object = NULL;
	if (object && !(e->object = strdup(object))) {
		free(result);
		return;
	}
	res->nentries++;
}

static void log_line(struct sync *s, const struct diff_key *k, const char *what)
{
	buf_reset(&s->name);
	diff_key_format(k, &s->name);
	add_entry(s->res, buf_cstr(&s->name), "%s%s", what,
		  s->opts->dry_run ? " (dry run)" : "");
}

static void fail(struct sync *s, const struct diff_key *k, const char *msg)
{
	buf_reset(&s->name);
	diff_key_format(k, &s->name);
	add_entry(s->res, buf_cstr(&s->name), "failed: %s", msg);
	err_set(&s->res->failures, ERR_GENERIC, "%s: %s", buf_cstr(&s->name),
		msg);
	s->res->failed++;
	if (s->opts->failed)
		s->opts->failed(k, msg, s->opts->applied_ctx);
}

static int apply_one(struct sync *s, const struct diff_object_report *r)
{
	struct kube_apply_options ao = {s->app->field_manager, r->force,
					s->opts->dry_run};
	const struct app_type *t = find_type(s->app, r->key.group, r->key.kind);
	const struct kube_resource *kr = resource_of(s->app, &r->key);
	struct err e = ERR_INIT;
	json_t *stored = NULL;
	int rc;

	if (!r->apply) {
		s->res->unchanged++;
		return 0;
	}
	if (!kr) {
		if (s->opts->dry_run && t &&
		    desired_crd(s->desired, t->group, t->kind)) {
			log_line(s, &r->key,
				 "created (not checked: its CRD is not "
				 "served yet)");
			s->res->applied++;
			return 0;
		}
		buf_reset(&s->name);
		if (t)
			group_kind(&s->name, t->group, t->kind);
		err_set(&e, ERR_NOTFOUND, "no resource for %s on the server",
			buf_cstr(&s->name));
		fail(s, &r->key, err_first(&e));
		err_release(&e);
		return 0;
	}
	rc = kube_apply(s->app->client, kr, r->apply, &ao,
			s->opts->applied && !s->opts->dry_run ? &stored : NULL,
			&e);
	if (rc >= 0 && stored)
		s->opts->applied(&r->key, stored, s->opts->applied_ctx);
	json_decref(stored);
	if (rc < 0) {
		fail(s, &r->key,
		     err_count(&e) ? err_first(&e) : "apply failed");
	} else {
		log_line(s, &r->key,
			 r->state == DIFF_MISSING ? "created"
			 : r->force		  ? "configured (forced)"
						  : "configured");
		s->res->applied++;
		if (is_crd(&r->key))
			s->crd_applied = true;
	}
	err_release(&e);
	return 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static bool crd_established(const json_t *crd)
{
	const json_t *status = json_object_get(crd, "status");
	const json_t *conds = json_object_get(status, "conditions"), *c;
	size_t i;

	json_array_foreach (conds, i, c) {
		const char *type, *value;

		type = json_string_value(json_object_get(c, "type"));
		value = json_string_value(json_object_get(c, "status"));
		if (type && value && !strcmp(type, "Established") &&
		    !strcmp(value, "True"))
			return true;
	}
	return false;
}

/*
 * After the CRDs: wait (bounded) until each desired CRD is Established and
 * every type it serves is in discovery. Types still not served then fail
 * their objects in apply_one().
 */
static void wait_crds(struct sync *s)
{
	const struct kube_resource *crds = NULL;
	uint64_t deadline =
		clk_mono_ms() +
		(s->opts->crd_wait_ms ? s->opts->crd_wait_ms : 60000);
	unsigned delay = 50;

	if (kube_discovery_find(s->app->disc, "apiextensions.k8s.io", "v1",
				"CustomResourceDefinition", &crds, NULL) < 0)
		return;
	for (;;) {
		bool pending = false, refresh = false;

		for (size_t i = 0; i < s->desired->len; i++) {
			const struct diff_object *o = s->desired->items[i];
			const json_t *spec = json_object_get(o->json, "spec");
			const char *g = json_string_value(
				json_object_get(spec, "group"));
			const char *k = json_string_value(json_object_get(
				json_object_get(spec, "names"), "kind"));
			struct app_type *t;
			json_t *live = NULL;

			if (!is_crd(&o->key) || !g || !k ||
			    !(t = find_type(s->app, g, k)) || t->res)
				continue;
			if (kube_get(s->app->client, crds, NULL, o->key.name,
				     &live, NULL) < 0 ||
			    !crd_established(live)) {
				json_decref(live);
				pending = true;
				continue;
			}
			json_decref(live);
			if (resolve_type(s->app, t, NULL) < 0 || !t->res) {
				pending = true;
				refresh = true;
			}
		}
		if (!pending || clk_mono_ms() >= deadline)
			return;
		sleep_ms(delay);
		delay = delay < 800 ? delay * 2 : 1000;
		if (refresh)
			kube_discovery_invalidate(s->app->disc);
	}
}

static bool protected_kind(const struct sync *s, const struct diff_key *k)
{
	struct buf gk = BUF_INIT;
	bool prot = is_kind(k, "", "Namespace") ||
		    is_kind(k, "", "PersistentVolumeClaim") || is_crd(k);

	if (prot && s->opts->prune_allow) {
		group_kind(&gk, k->group, k->kind);
		for (const char *const *p = s->opts->prune_allow; *p; p++)
			if (!strcmp(*p, buf_cstr(&gk)))
				prot = false;
	}
	buf_release(&gk);
	return prot;
}

/* Delete order: namespaced first, CRDs last (their CRs go with them). */
static int prune_rank(struct sync *s, const struct diff_key *k)
{
	switch (phase_of(s, k)) {
	case PHASE_NAMESPACED:
		return 0;
	case PHASE_CLUSTER:
		return 1;
	case PHASE_CRD:
		return 3;
	default:
		return 2;
	}
}

static void prune(struct sync *s)
{
	struct diff_objset *live = &s->app->live;
	size_t n = 0;

	/* Count first: over the budget nothing at all is deleted. */
	for (size_t i = 0; i < s->report->len; i++) {
		const struct diff_object_report *r = &s->report->objects[i];
		const struct diff_object *o;

		if (r->state != DIFF_ORPHAN ||
		    !(o = diff_objset_get(live, &r->key)))
			continue;
		if (strcmp(label_of(o->json, APP_LABEL_PART_OF), s->app->id))
			continue; /* never: only labelled objects are ours */
		if (!s->opts->prune || protected_kind(s, &r->key)) {
			log_line(s, &r->key,
				 !s->opts->prune
					 ? "orphan, kept (sync --prune deletes "
					   "it)"
					 : "orphan, kept (protected kind; see "
					   "--prune-allow-kind)");
			s->res->kept++;
			continue;
		}
		n++;
	}
	if (!n)
		return;
	if (n > s->opts->prune_budget) {
		buf_reset(&s->name);
		buf_addf(&s->name,
			 "prune: %zu objects to delete, over the budget of "
			 "%zu: nothing pruned (raise --prune-budget)",
			 n, s->opts->prune_budget);
		add_entry(s->res, NULL, "%s", buf_cstr(&s->name));
		err_set(&s->res->failures, ERR_LIMIT, "%s", buf_cstr(&s->name));
		s->res->failed++;
		s->res->kept += n;
		return;
	}
	for (int rank = 0; rank < 4; rank++) {
		for (size_t i = 0; i < s->report->len; i++) {
			const struct diff_object_report *r =
				&s->report->objects[i];
			struct kube_delete_options dopt = {0};
			const struct kube_resource *res = NULL;
			const struct diff_object *o;
			struct err e = ERR_INIT;
			char *v;
			int rc;

			if (r->state != DIFF_ORPHAN ||
			    !(o = diff_objset_get(live, &r->key)) ||
			    strcmp(label_of(o->json, APP_LABEL_PART_OF),
				   s->app->id) ||
			    protected_kind(s, &r->key) ||
			    prune_rank(s, &r->key) != rank)
				continue;
			if (s->opts->dry_run) {
				log_line(s, &r->key, "pruned");
				s->res->pruned++;
				continue;
			}
			v = version_of(o->json);
			rc = kube_discovery_find(s->app->disc, r->key.group, v,
						 r->key.kind, &res, &e);
			free(v);
			/* Only the object we saw: a new one of that name stays.
			 */
			dopt.propagation = "Background";
			dopt.uid = json_string_value(json_object_get(
				json_object_get(o->json, "metadata"), "uid"));
			if (rc == 0)
				rc = kube_delete(s->app->client, res, r->key.ns,
						 r->key.name, &dopt, &e);
			if (rc < 0 && rc != ERR_NOTFOUND) {
				fail(s, &r->key, err_first(&e));
			} else {
				log_line(s, &r->key, "pruned");
				s->res->pruned++;
				if (s->opts->pruned)
					s->opts->pruned(o->json,
							s->opts->applied_ctx);
				for (size_t j = 0; j < live->len; j++)
					if (live->items[j] == o)
						s->gone[j] = true;
			}
			err_release(&e);
		}
	}
}

/* After a prune the parent records fewer kinds: apply it again. */
static void update_parent(struct sync *s)
{
	const struct diff_object *was = NULL;
	struct kube_apply_options ao = {s->app->field_manager, false, false};
	struct err e = ERR_INIT;
	json_t *now = NULL;

	for (size_t i = 0; i < s->desired->len; i++)
		if (is_parent(s->app, &s->desired->items[i]->key))
			was = s->desired->items[i];
	if (!was || !s->app->secrets ||
	    build_parent(s->app, s->desired, &s->app->live, s->gone, &now, &e) <
		    0)
		goto out;
	if (json_equal(now, was->json))
		goto out;
	if (kube_apply(s->app->client, s->app->secrets, now, &ao, NULL, &e) < 0)
		fail(s, &was->key, err_first(&e));
	else
		log_line(s, &was->key, "configured (inventory after prune)");
out:
	json_decref(now);
	err_release(&e);
}

int app_sync(struct app *app, const struct diff_report *report,
	     const struct diff_objset *desired,
	     const struct app_sync_options *opts, struct app_sync_result *res,
	     struct err *err)
{
	struct sync s = {app,	   report, desired, opts, res,
			 BUF_INIT, NULL,   NULL,    false};
	int error = 0;

	s.done = calloc(report->len + 1, sizeof(*s.done));
	s.gone = calloc(app->live.len + 1, sizeof(*s.gone));
	if (!s.done || !s.gone) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int phase = 0; phase < PHASE_COUNT; phase++) {
		if (phase == PHASE_NAMESPACE && s.crd_applied)
			wait_crds(&s);
		for (size_t i = 0; i < report->len; i++) {
			const struct diff_object_report *r =
				&report->objects[i];

			if (r->state == DIFF_ORPHAN || s.done[i] ||
			    (int)phase_of(&s, &r->key) != phase)
				continue;
			s.done[i] = true;
			apply_one(&s, r);
		}
	}
	prune(&s);
	if (res->pruned && !opts->dry_run)
		update_parent(&s);
out:
	free(s.done);
	free(s.gone);
	buf_release(&s.name);
	return error;
}

int app_conn_open(struct app_conn *conn, const char *kubeconfig,
		  const char *context, const struct kube_client_options *ko,
		  struct err *err)
{
	struct kube_config_options co = {kubeconfig, context, false};

	return app_conn_open_with(conn, &co, ko, err);
}

int app_conn_open_with(struct app_conn *conn,
		       const struct kube_config_options *co,
		       const struct kube_client_options *ko, struct err *err)
{
	static const struct kube_client_options defaults = {0};
	int error;

	memset(conn, 0, sizeof(*conn));
	if ((error = kube_config_load(&conn->cfg, co, err)) < 0 ||
	    (error = kube_client_new(&conn->client, &conn->cfg,
				     ko ? ko : &defaults, err)) < 0 ||
	    (error = kube_discovery_new(&conn->disc, conn->client, err)) < 0)
		return error;
	return 0;
}

void app_conn_close(struct app_conn *conn)
{
	if (!conn)
		return;
	kube_discovery_free(conn->disc);
	kube_client_free(conn->client);
	kube_config_release(&conn->cfg);
	memset(conn, 0, sizeof(*conn));
}

char *app_name_from_path(const char *path)
{
	char *real = realpath(path, NULL), *base, *name, *p;
	size_t n;

	base = strrchr(real ? real : path, '/');
	base = base ? base + 1 : (real ? real : (char *)path);
	/* A file: its name without the extension. */
	name = strdup(base);
	free(real);
	if (!name)
		return NULL;
	if ((p = strrchr(name, '.')) && p != name &&
	    (!strcmp(p, ".yaml") || !strcmp(p, ".yml") || !strcmp(p, ".json")))
		*p = '\0';
	for (p = name; *p; p++) {
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
		else if (!((*p >= 'a' && *p <= 'z') ||
			   (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'))
			*p = '-';
	}
	for (p = name; *p == '-' || *p == '.'; p++)
		;
	memmove(name, p, strlen(p) + 1);
	n = strlen(name);
	while (n && (name[n - 1] == '-' || name[n - 1] == '.'))
		name[--n] = '\0';
	if (!n) {
		free(name);
		return NULL;
	}
	return name;
}

int app_compare(struct app *app, struct diff_objset *desired,
		const struct diff_options *dopts, struct diff_schemas **reg,
		struct diff_report **report, const char *revision,
		struct err *err)
{
	int error, missing = 0;

	*reg = NULL;
	*report = NULL;
	if ((error = diff_objset_default_namespace(desired, app->namespace,
						   desired, err)) < 0 ||
	    (error = app_label(app, desired, err)) < 0)
		return error;
	error = app_read_live(app, desired, err);
	if (error == ERR_NOTFOUND)
		missing = error;
	else if (error < 0)
		return error;
	if (!(*reg = diff_schemas_new()))
		return err_set(err, ERR_NOMEM, "out of memory");
	if ((error = app_add_schemas(app, *reg, desired, err)) < 0 ||
	    (error = diff_compare(report, desired, &app->live, *reg, dopts,
				  revision, err)) < 0)
		return error;
	return missing;
}
