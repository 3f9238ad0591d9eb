/*
 * The app room's private header: what its files (inventory.c, live.c,
 * sync.c, conn.c, spec.c) share. Not for other rooms (make check-deps).
 */
#ifndef APP_INTERNAL_H
#define APP_INTERNAL_H

#include <stdbool.h>

#include "app/app.h"
#include "util/strvec.h"

struct app_type {
	char *group;
	char *kind;
	char *version; /* of the first desired object, or NULL */
	const struct kube_resource *res; /* NULL: not served (yet) */
	bool desired;			 /* some desired object has it */
	bool failed;			 /* reported as not served */
};

/* A set of strings (group-kinds, namespaces): a vector without repeats. */
int app_strset_add(struct strvec *s, const char *str);

/* "Kind" or "Kind.group" appended to `out`. */
void app_group_kind(struct buf *out, const char *group, const char *kind);

/* Whether `k` is of that group and kind. */
bool app_is_kind(const struct diff_key *k, const char *group, const char *kind);

/* Whether `k` is a CustomResourceDefinition. */
bool app_is_crd(const struct diff_key *k);

/* A label or annotation of obj, or "" when it has none. */
const char *app_label_of(const json_t *obj, const char *name);

/* Whether `k` is the app's parent Secret (its inventory). */
bool app_is_parent(const struct app *app, const struct diff_key *k);

/* The app's type of group/kind, or NULL. */
struct app_type *app_find_type(struct app *app, const char *group,
			       const char *kind);

/* The resource of an object of the app (NULL: not served). */
const struct kube_resource *app_resource_of(struct app *app,
					    const struct diff_key *k);

/* Record a type the app touches (once); ERR_NOMEM. */
int app_add_type(struct app *app, const char *group, const char *kind,
		 const char *version, bool desired);

/* The version part of an object's apiVersion (NULL when it has none). */
char *app_version_of(const json_t *obj);

/* The desired CRD that defines group/kind, or NULL. */
const json_t *app_desired_crd(const struct diff_objset *desired,
			      const char *group, const char *kind);

/* Is a desired object of this type namespaced (also before it is served)? */
bool app_type_namespaced(const struct app_type *t,
			 const struct diff_objset *desired);

/* Resolve a type through discovery; ERR_NOTFOUND leaves res NULL. */
int app_resolve_type(struct app *app, struct app_type *t, struct err *err);

/* Empty app->live, with the health of its settled objects. */
void app_forget_live(struct app *app);

/* Add a live object to app->live (a new reference; a repeat is dropped). */
int app_add_live(struct app *app, json_t *obj, struct err *err);

/*
 * The health of the live object of `key` as read into app->live, by
 * `rules`: Missing when none was read; for a settled object, what it was
 * when read (by app->health_rules).
 */
void app_live_health(const struct app *app, const struct diff_key *key,
		     const struct health_rules *rules, struct health *out);

/* The parent as it should be: members are desired objects and `live`. */
int app_build_parent(const struct app *app, const struct diff_objset *desired,
		     const struct diff_objset *live, const bool *gone,
		     json_t **out, struct err *err);

/* GET the parent; ERR_EXISTS when that Secret is not our parent. */
int app_read_parent(struct app *app, struct strvec *gks, struct strvec *nss,
		    struct err *err);

#endif
