/*
 * Discovery: which resource (plural, scope, verbs) serves a group/kind.
 *
 * Every request counts, so discovery is read in as few as a server
 * allows. A server with aggregated discovery (apidiscovery.k8s.io v2,
 * kube 1.26+, GA in 1.30) answers /api and /apis with one document each
 * holding every resource of every version: the core group comes from
 * /api, every named group from /apis, each read once when a kind of it
 * is first asked for.
 *
 * A server that answers those with plain JSON (an APIVersions and an
 * APIGroupList) is read the older way, lazily, one group-version at a
 * time: the core group from /api/v1 (kube has served no other core
 * version since 1.0), the named groups and their preferred versions
 * from /apis, and /apis/G/V only when a kind of G is asked for. There a
 * lookup that names its version (as an object's apiVersion does) reads
 * /apis/G/V directly, without /apis. Which kind of server it is is
 * learned from the first answer and kept.
 *
 * A kind that is not found refreshes what it depends on once (with
 * aggregated discovery: /apis, or /api for the core group; otherwise
 * /apis and the group's documents): a CRD applied a moment ago becomes
 * visible. Resources handed out are never freed before
 * kube_discovery_free(), so a refresh moves the old ones to a retired
 * list instead of freeing them.
 *
 * One mutex guards the cache; requests are sent with it held, so two
 * threads asking for the same missing group wait for one request.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"

#include "util/banned.h" /* last */

/*
 * What /api and /apis are asked for: aggregated discovery (v2, else the
 * v2beta1 of kube 1.26-1.29), else the plain documents.
 */
#define ACCEPT_AGGREGATED                                  \
	"application/json;g=apidiscovery.k8s.io;v=v2;"     \
	"as=APIGroupDiscoveryList,"                        \
	"application/json;g=apidiscovery.k8s.io;v=v2beta1;" \
	"as=APIGroupDiscoveryList,application/json"

/* Whether the server serves aggregated discovery, once an answer said. */
enum aggregated { AGG_UNKNOWN, AGG_YES, AGG_NO };

/* One group-version document: its resources (subresources left out). */
struct gv_doc {
	char *group;
	char *version;
	struct kube_resource **res;
	size_t nres;
	struct gv_doc *next;
};

/* One named group from /apis: versions, the preferred one first. */
struct group {
	char *name;
	char **versions; /* NULL-terminated */
};

struct kube_discovery {
	struct kube_client *c;
	pthread_mutex_t lock;
	enum aggregated aggregated;
	/* aggregated /api read: the core group's documents are cached */
	bool core_loaded;
	/* /apis, when read */
	bool groups_loaded;
	struct group *groups;
	size_t ngroups;
	struct gv_doc *docs;	/* the current cache */
	struct gv_doc *retired; /* replaced, kept for pointers handed out */
};

static void resource_free(struct kube_resource *r)
{
	char **v;

	if (!r)
		return;
	free(r->group);
	free(r->version);
	free(r->name);
	free(r->kind);
	for (v = r->verbs; v && *v; v++)
		free(*v);
	free(r->verbs);
	free(r);
}

static void doc_free(struct gv_doc *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->nres; i++)
		resource_free(d->res[i]);
	free(d->res);
	free(d->group);
	free(d->version);
	free(d);
}

static void groups_release(struct kube_discovery *d)
{
	size_t i;
	char **v;

	for (i = 0; i < d->ngroups; i++) {
		free(d->groups[i].name);
		for (v = d->groups[i].versions; v && *v; v++)
			free(*v);
		free(d->groups[i].versions);
	}
	free(d->groups);
	d->groups = NULL;
	d->ngroups = 0;
	d->groups_loaded = false;
}

int kube_discovery_new(struct kube_discovery **out, struct kube_client *c,
		       struct err *err)
{
	struct kube_discovery *d;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return err_set(err, ERR_NOMEM, "discovery: out of memory");
	if (pthread_mutex_init(&d->lock, NULL)) {
		free(d);
		return err_set(err, ERR_GENERIC,
			       "discovery: cannot make a lock");
	}
	d->c = c;
	*out = d;
	return 0;
}

static void docs_free(struct gv_doc *list)
{
	struct gv_doc *next;

	for (; list; list = next) {
		next = list->next;
		doc_free(list);
	}
}

void kube_discovery_free(struct kube_discovery *d)
{
	if (!d)
		return;
	groups_release(d);
	docs_free(d->docs);
	docs_free(d->retired);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* Move the cached documents of `group` (NULL: all) to the retired list. */
static void retire_docs(struct kube_discovery *d, const char *group)
{
	struct gv_doc **p = &d->docs, *doc;

	while ((doc = *p)) {
		if (group && strcmp(doc->group, group)) {
			p = &doc->next;
			continue;
		}
		*p = doc->next;
		doc->next = d->retired;
		d->retired = doc;
	}
}

/* The same for every named group's documents (a new /apis replaces them). */
static void retire_named(struct kube_discovery *d)
{
	struct gv_doc **p = &d->docs, *doc;

	while ((doc = *p)) {
		if (!*doc->group) {
			p = &doc->next;
			continue;
		}
		*p = doc->next;
		doc->next = d->retired;
		d->retired = doc;
	}
}

void kube_discovery_invalidate(struct kube_discovery *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	groups_release(d);
	d->core_loaded = false;
	retire_docs(d, NULL);
	pthread_mutex_unlock(&d->lock);
}

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

/* Parse /apis (an APIGroupList) into d->groups. Lock held. */
static int parse_groups(struct kube_discovery *d, json_t *list, struct err *err)
{
	json_t *groups = json_object_get(list, "groups"), *g, *v;
	size_t i, j, n;
	int error = 0;

	if (!json_is_array(groups))
		return err_set(err, ERR_PARSE,
			       "discovery: /apis has no groups array");
	d->groups = calloc(json_array_size(groups) + 1, sizeof(*d->groups));
	if (!d->groups)
		return err_set(err, ERR_NOMEM, "discovery: out of memory");
	json_array_foreach(groups, i, g)
	{
		json_t *versions = json_object_get(g, "versions");
		const char *name =
			json_string_value(json_object_get(g, "name"));
		const char *pref = json_string_value(json_object_get(
			json_object_get(g, "preferredVersion"), "version"));
		struct group *gr;

		if (!name || !json_is_array(versions))
			continue;
		gr = &d->groups[d->ngroups++];
		gr->name = xstrdup(name);
		gr->versions = calloc(json_array_size(versions) + 2,
				      sizeof(*gr->versions));
		if (!gr->name || !gr->versions) {
			error = err_set(err, ERR_NOMEM,
					"discovery: out of memory");
			goto out;
		}
		/* The preferred version first, then the rest in server order.
		 */
		n = 0;
		if (pref)
			gr->versions[n++] = xstrdup(pref);
		json_array_foreach(versions, j, v)
		{
			const char *ver = json_string_value(
				json_object_get(v, "version"));

			if (!ver || (pref && !strcmp(ver, pref)))
				continue;
			gr->versions[n++] = xstrdup(ver);
		}
		for (j = 0; j < n; j++)
			if (!gr->versions[j]) {
				error = err_set(err, ERR_NOMEM,
						"discovery: out of memory");
				goto out;
			}
	}
	d->groups_loaded = true;
out:
	if (error < 0)
		groups_release(d);
	return error;
}

static int load_groups(struct kube_discovery *d, struct err *err)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	int error;

	error = kube_request(d->c, "GET", "/apis", NULL, NULL, 0, &resp, err);
	if (error < 0)
		goto out;
	if (!resp.json) {
		error = err_set(err, ERR_PARSE,
				"discovery: /apis did not answer JSON");
		goto out;
	}
	error = parse_groups(d, resp.json, err);
out:
	kube_response_release(&resp);
	return error;
}

static struct group *find_group(struct kube_discovery *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->ngroups; i++)
		if (!strcmp(d->groups[i].name, name))
			return &d->groups[i];
	return NULL;
}

static struct gv_doc *find_doc(struct kube_discovery *d, const char *group,
			       const char *version)
{
	struct gv_doc *doc;

	for (doc = d->docs; doc; doc = doc->next)
		if (!strcmp(doc->group, group) &&
		    !strcmp(doc->version, version))
			return doc;
	return NULL;
}

/* A kube_resource from its parts; `verbs` a JSON array of strings. */
static int new_resource(const char *group, const char *version,
			const char *name, const char *kind, bool namespaced,
			json_t *verbs, struct kube_resource **out)
{
	struct kube_resource *r;
	json_t *v;
	size_t i, n = 0;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return ERR_NOMEM;
	r->group = xstrdup(group);
	r->version = xstrdup(version);
	r->name = xstrdup(name);
	r->kind = xstrdup(kind);
	r->namespaced = namespaced;
	r->verbs = calloc(json_array_size(verbs) + 1, sizeof(*r->verbs));
	if (!r->group || !r->version || !r->name || !r->kind || !r->verbs)
		goto nomem;
	json_array_foreach(verbs, i, v)
	{
		if (!json_is_string(v))
			continue;
		if (!(r->verbs[n++] = xstrdup(json_string_value(v))))
			goto nomem;
	}
	*out = r;
	return 0;
nomem:
	resource_free(r);
	return ERR_NOMEM;
}

/* One APIResourceList entry as a kube_resource (NULL for subresources). */
static int parse_resource(json_t *e, const char *group, const char *version,
			  struct kube_resource **out)
{
	const char *name = json_string_value(json_object_get(e, "name"));
	const char *kind = json_string_value(json_object_get(e, "kind"));

	*out = NULL;
	if (!name || !kind || strchr(name, '/'))
		return 0;
	return new_resource(group, version, name, kind,
			    json_is_true(json_object_get(e, "namespaced")),
			    json_object_get(e, "verbs"), out);
}

/*
 * One APIVersionDiscovery of an aggregated document as a new cached
 * document (its subresources are left out, as from the plain ones).
 */
static int parse_version(struct kube_discovery *d, const char *group,
			 const char *version, json_t *resources)
{
	struct gv_doc *doc;
	json_t *e;
	size_t i;
	int error = 0;

	doc = calloc(1, sizeof(*doc));
	if (!doc || !(doc->group = xstrdup(group)) ||
	    !(doc->version = xstrdup(version)) ||
	    !(doc->res = calloc(json_array_size(resources) + 1,
				sizeof(*doc->res)))) {
		error = ERR_NOMEM;
		goto out;
	}
	json_array_foreach(resources, i, e)
	{
		const char *name =
			json_string_value(json_object_get(e, "resource"));
		const char *kind = json_string_value(json_object_get(
			json_object_get(e, "responseKind"), "kind"));
		const char *scope =
			json_string_value(json_object_get(e, "scope"));

		if (!name || !kind || !*kind || strchr(name, '/'))
			continue;
		error = new_resource(group, version, name, kind,
				     scope && !strcmp(scope, "Namespaced"),
				     json_object_get(e, "verbs"),
				     &doc->res[doc->nres]);
		if (error < 0)
			goto out;
		doc->nres++;
	}
	doc->next = d->docs;
	d->docs = doc;
	doc = NULL;
out:
	doc_free(doc);
	return error;
}

/*
 * An APIGroupDiscoveryList (from /api when `core`, else /apis) into the
 * cache: the documents of every version it lists, and for /apis the
 * groups with their versions (the first is the preferred one). What it
 * replaces is retired first. Lock held.
 */
static int parse_aggregated(struct kube_discovery *d, bool core,
			    json_t *list, const char *path, struct err *err)
{
	json_t *items = json_object_get(list, "items"), *it, *vs, *v;
	size_t i, j, n;
	int error = 0;

	if (!json_is_array(items))
		return err_set(err, ERR_PARSE,
			       "discovery: %s has no items array", path);
	if (core) {
		retire_docs(d, "");
	} else {
		groups_release(d);
		retire_named(d);
		d->groups = calloc(json_array_size(items) + 1,
				   sizeof(*d->groups));
		if (!d->groups)
			return err_set(err, ERR_NOMEM,
				       "discovery: out of memory");
	}
	json_array_foreach(items, i, it)
	{
		json_t *meta = json_object_get(it, "metadata");
		const char *name =
			json_string_value(json_object_get(meta, "name"));
		struct group *gr = NULL;

		if (!name)
			name = "";
		/* /api holds the core group only; /apis named ones only. */
		if (core != !*name)
			continue;
		vs = json_object_get(it, "versions");
		if (!core) {
			gr = &d->groups[d->ngroups++];
			gr->name = xstrdup(name);
			gr->versions = calloc(json_array_size(vs) + 1,
					      sizeof(*gr->versions));
			if (!gr->name || !gr->versions) {
				error = ERR_NOMEM;
				goto out;
			}
		}
		n = 0;
		json_array_foreach(vs, j, v)
		{
			const char *ver = json_string_value(
				json_object_get(v, "version"));

			if (!ver || !*ver)
				continue;
			if (gr && !(gr->versions[n++] = xstrdup(ver))) {
				error = ERR_NOMEM;
				goto out;
			}
			error = parse_version(d, name, ver,
					      json_object_get(v, "resources"));
			if (error < 0)
				goto out;
		}
	}
	if (core)
		d->core_loaded = true;
	else
		d->groups_loaded = true;
out:
	if (error < 0) {
		if (!core)
			groups_release(d);
		err_set(err, error, "discovery: out of memory");
	}
	return error;
}

/*
 * Read /api (`core`) or /apis asking for aggregated discovery. A server
 * that answers it fills the cache; one that answers the plain document
 * is marked as such (its APIGroupList is parsed all the same, which is
 * what the plain path reads first). Lock held.
 */
static int load_aggregated(struct kube_discovery *d, bool core,
			   struct err *err)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	const char *path = core ? "/api" : "/apis", *kind;
	int error;

	error = kube_request_accept(d->c, "GET", path, ACCEPT_AGGREGATED,
				    NULL, NULL, 0, &resp, err);
	if (error < 0)
		goto out;
	if (!resp.json) {
		error = err_set(err, ERR_PARSE,
				"discovery: %s did not answer JSON", path);
		goto out;
	}
	kind = json_string_value(json_object_get(resp.json, "kind"));
	if (kind && !strcmp(kind, "APIGroupDiscoveryList")) {
		d->aggregated = AGG_YES;
		error = parse_aggregated(d, core, resp.json, path, err);
		goto out;
	}
	d->aggregated = AGG_NO;
	if (!core)
		error = parse_groups(d, resp.json, err);
out:
	kube_response_release(&resp);
	return error;
}

/*
 * Read /api/v1 or /apis/G/V into a new cached document. A 404 (a version
 * that went away between /apis and now) caches an empty document, so
 * that the lookup says "no resource" rather than failing.
 */
static int load_doc(struct kube_discovery *d, const char *group,
		    const char *version, struct gv_doc **out, struct err *err)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct err local = ERR_INIT;
	struct gv_doc *doc;
	struct buf path = BUF_INIT;
	json_t *list, *e;
	size_t i;
	int error;

	*out = NULL;
	doc = calloc(1, sizeof(*doc));
	if (!doc || !(doc->group = xstrdup(group)) ||
	    !(doc->version = xstrdup(version))) {
		error = err_set(err, ERR_NOMEM, "discovery: out of memory");
		goto out;
	}
	if (*group)
		error = buf_addf(&path, "/apis/%s/%s", group, version);
	else
		error = buf_addf(&path, "/api/%s", version);
	if (error < 0) {
		err_set(err, error, "discovery: out of memory");
		goto out;
	}
	error = kube_request(d->c, "GET", path.ptr, NULL, NULL, 0, &resp,
			     &local);
	if (error < 0 && resp.code == 404) {
		error = 0;
	} else if (error < 0) {
		err_move(err, &local);
		goto out;
	} else {
		list = json_object_get(resp.json, "resources");
		if (!json_is_array(list)) {
			error = err_set(err, ERR_PARSE,
					"discovery: %s has no resources array",
					path.ptr);
			goto out;
		}
		doc->res = calloc(json_array_size(list) + 1, sizeof(*doc->res));
		if (!doc->res) {
			error = err_set(err, ERR_NOMEM,
					"discovery: out of memory");
			goto out;
		}
		json_array_foreach(list, i, e)
		{
			struct kube_resource *r;

			if ((error = parse_resource(e, group, version, &r)) <
			    0) {
				err_set(err, error, "discovery: out of memory");
				goto out;
			}
			if (r)
				doc->res[doc->nres++] = r;
		}
	}
	doc->next = d->docs;
	d->docs = doc;
	*out = doc;
	doc = NULL;
out:
	doc_free(doc);
	buf_release(&path);
	err_release(&local);
	kube_response_release(&resp);
	return error;
}

static const struct kube_resource *doc_kind(const struct gv_doc *doc,
					    const char *kind)
{
	size_t i;

	for (i = 0; i < doc->nres; i++)
		if (!strcmp(doc->res[i]->kind, kind))
			return doc->res[i];
	return NULL;
}

/*
 * A lookup with aggregated discovery (or before the server told whether
 * it serves it): the cached documents are all there are. Lock held.
 */
static int lookup_aggregated(struct kube_discovery *d, const char *group,
			     const char *version, const char *kind,
			     const struct kube_resource **out, struct err *err)
{
	static const char *const core[] = {"v1", NULL};
	const char *const *versions;
	struct gv_doc *doc;
	struct group *g;
	int error;

	if (!*group ? !d->core_loaded : !d->groups_loaded) {
		if ((error = load_aggregated(d, !*group, err)) < 0)
			return error;
		if (d->aggregated != AGG_YES)
			return 0;
	}
	if (!*group) {
		versions = core;
	} else {
		if (!(g = find_group(d, group)))
			return 0;
		versions = (const char *const *)g->versions;
	}
	for (; *versions; versions++) {
		if (version && strcmp(*versions, version))
			continue;
		doc = find_doc(d, group, *versions);
		if (doc && (*out = doc_kind(doc, kind)))
			return 0;
	}
	return 0;
}

/* One lookup from the cache, reading what is missing. Lock held. */
static int lookup(struct kube_discovery *d, const char *group,
		  const char *version, const char *kind,
		  const struct kube_resource **out, struct err *err)
{
	static const char *const core[] = {"v1", NULL};
	const char *const *versions;
	const char *one[2] = {version, NULL};
	struct gv_doc *doc;
	struct group *g;
	int error;

	*out = NULL;
	if (d->aggregated != AGG_NO) {
		error = lookup_aggregated(d, group, version, kind, out, err);
		if (error < 0 || d->aggregated == AGG_YES)
			return error;
		/* The server answered plain JSON: read it the older way. */
	}
	if (*group && version && !d->groups_loaded) {
		/*
		 * The version is known (from an apiVersion): its document
		 * answers without /apis, which is only needed to learn a
		 * group's preferred version. A version not served is a 404,
		 * cached as an empty document.
		 */
		versions = one;
	} else if (*group) {
		if (!d->groups_loaded && (error = load_groups(d, err)) < 0)
			return error;
		if (!(g = find_group(d, group)))
			return 0;
		versions = (const char *const *)g->versions;
	} else {
		versions = core;
	}
	if (version && versions != one) {
		const char *const *v;

		for (v = versions; *v && strcmp(*v, version); v++)
			;
		if (!*v)
			return 0;
		versions = one;
	}
	for (; *versions; versions++) {
		doc = find_doc(d, group, *versions);
		if (!doc &&
		    (error = load_doc(d, group, *versions, &doc, err)) < 0)
			return error;
		if ((*out = doc_kind(doc, kind)))
			return 0;
	}
	return 0;
}

/* Group and version names go into URL paths: DNS labels and dots only. */
static bool plain_name(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '-'))
			return false;
	return true;
}

int kube_discovery_find(struct kube_discovery *d, const char *group,
			const char *version, const char *kind,
			const struct kube_resource **out, struct err *err)
{
	int error = 0;

	*out = NULL;
	if (!group)
		group = "";
	if (!kind || !*kind)
		return err_set(err, ERR_INVALID, "discovery: no kind given");
	if (plain_name(group) &&
	    (!version || (*version && plain_name(version)))) {
		pthread_mutex_lock(&d->lock);
		error = lookup(d, group, version, kind, out, err);
		if (error >= 0 && !*out) {
			/*
			 * Not known: read the group again once (a CRD
			 * established since the cache was filled): with
			 * aggregated discovery /apis (or /api) again, which
			 * replaces what it lists; otherwise /apis and the
			 * group's documents, keeping the other groups'.
			 */
			if (d->aggregated == AGG_YES && !*group) {
				d->core_loaded = false;
			} else if (d->aggregated == AGG_YES) {
				groups_release(d);
			} else {
				if (*group)
					groups_release(d);
				retire_docs(d, group);
			}
			error = lookup(d, group, version, kind, out, err);
		}
		pthread_mutex_unlock(&d->lock);
	}
	if (error >= 0 && !*out)
		error = err_set(err, ERR_NOTFOUND,
				"no resource for %s%s%s%s%s%s on the server",
				kind, *group ? "." : "", group,
				version ? " (" : "", version ? version : "",
				version ? ")" : "");
	return error;
}
