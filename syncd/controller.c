/*
 * controller: the `syncd run` loop (see controller.h).
 */
#include <stdlib.h>
#include <string.h>

#include "diff/diff.h"
#include "syncd/app.h"
#include "syncd/cli_render.h"
#include "syncd/controller.h"
#include "syncd/git.h"
#include "syncd/queue.h"
#include "util/log.h"

/* Longest time a pass in --once mode may take before we give up. */
#define ONCE_TIMEOUT_MS (30u * 60u * 1000u)

/* One app's state between passes; only its own pass touches it. */
struct ctl_app {
	const struct config_app *cfg;
	struct git_source *gs;
	bool polled;			       /* a poll succeeded once */
	char commit[GIT_SOURCE_OID_HEXSZ + 1]; /* last good commit */
	char tree[GIT_SOURCE_OID_HEXSZ + 1];   /* last good tree */
	char rendered[GIT_SOURCE_OID_HEXSZ + 1]; /* tree of `objects` */
	struct diff_objset objects; /* the last render, never modified */
	struct cli_render render;
	struct diff_ignore_rule *ignore;
	const char **prune_allow; /* NULL-ended, strings borrowed */
	bool failed;		  /* the last pass failed */
};

struct controller {
	const struct config *cfg;
	struct app_conn conn;
	struct ctl_app *apps;
	size_t napps;
	struct queue *q;
};

static struct ctl_app *find_app(struct controller *c, const char *name)
{
	for (size_t i = 0; i < c->napps; i++)
		if (!strcmp(c->apps[i].cfg->name, name))
			return &c->apps[i];
	return NULL;
}

static int push_list(struct cli_strv *sv, const struct config_list *l)
{
	for (size_t i = 0; i < l->len; i++)
		if (cli_strv_push(sv, l->v[i]) < 0)
			return ERR_NOMEM;
	return 0;
}

static int push_map(struct cli_strv *sv, const struct config_map *m)
{
	struct buf pair = BUF_INIT;
	int error = 0;

	for (size_t i = 0; i < m->len && !error; i++) {
		buf_reset(&pair);
		buf_addf(&pair, "%s=%s", m->names[i], m->values[i]);
		if (cli_strv_push(sv, buf_cstr(&pair)) < 0)
			error = ERR_NOMEM;
	}
	buf_release(&pair);
	return error;
}

/* The renderer options of the app, as the one-shot commands take them. */
static int setup_render(struct cli_render *r, const struct config_render *cr,
			struct err *err)
{
	size_t i;

	r->kind = (int)cr->type;
	r->timeout_ms = (unsigned)cr->timeout_ms;
	if (cr->include.len > CLI_RENDER_MAX_GLOBS ||
	    cr->exclude.len > CLI_RENDER_MAX_GLOBS)
		return err_set(err, ERR_LIMIT, "more than %d include/exclude "
			       "globs", CLI_RENDER_MAX_GLOBS);
	for (i = 0; i < cr->include.len; i++)
		r->include[r->ninclude++] = cr->include.v[i];
	for (i = 0; i < cr->exclude.len; i++)
		r->exclude[r->nexclude++] = cr->exclude.v[i];
	r->no_recurse = !cr->recurse;
	r->helm_release = cr->helm_release;
	r->helm_kube_version = cr->helm_kube_version;
	r->helm_include_crds = cr->helm_include_crds;
	r->jsonnet_file = cr->jsonnet_file;
	r->plugin_cmd = cr->plugin_command;
	r->substitute = (int)cr->substitute;
	if (push_list(&r->helm_values, &cr->helm_values) < 0 ||
	    push_map(&r->helm_set, &cr->helm_set) < 0 ||
	    push_map(&r->jsonnet_ext_str, &cr->jsonnet_ext_vars) < 0 ||
	    push_map(&r->jsonnet_ext_code, &cr->jsonnet_ext_code) < 0 ||
	    push_map(&r->jsonnet_tla_str, &cr->jsonnet_tlas) < 0 ||
	    push_map(&r->jsonnet_tla_code, &cr->jsonnet_tla_code) < 0 ||
	    push_list(&r->jsonnet_jpath, &cr->jsonnet_jpath) < 0 ||
	    push_list(&r->plugin_args, &cr->plugin_args) < 0 ||
	    push_map(&r->plugin_env, &cr->plugin_env) < 0 ||
	    push_map(&r->vars, &cr->vars) < 0 ||
	    push_list(&r->vars_files, &cr->vars_files) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	return 0;
}

static int setup_app(struct ctl_app *a, const struct config_app *ca,
		     struct err *err)
{
	size_t i;
	int error;

	a->cfg = ca;
	a->render = (struct cli_render)CLI_RENDER_INIT;
	a->objects = (struct diff_objset)DIFF_OBJSET_INIT;
	if (ca->nignore &&
	    !(a->ignore = calloc(ca->nignore, sizeof(*a->ignore))))
		return err_set(err, ERR_NOMEM, "out of memory");
	for (i = 0; i < ca->nignore; i++) {
		const struct config_ignore *ci = &ca->ignore[i];

		a->ignore[i].group = ci->group;
		a->ignore[i].kind = ci->kind;
		a->ignore[i].ns = ci->namespace;
		a->ignore[i].name = ci->name;
		if (ci->json_pointers.len)
			a->ignore[i].json_pointers =
				(const char *const *)ci->json_pointers.v;
		if (ci->managers.len)
			a->ignore[i].managers =
				(const char *const *)ci->managers.v;
	}
	if (!(a->prune_allow = calloc(ca->prune_allow_kinds.len + 1,
				      sizeof(*a->prune_allow))))
		return err_set(err, ERR_NOMEM, "out of memory");
	for (i = 0; i < ca->prune_allow_kinds.len; i++)
		a->prune_allow[i] = ca->prune_allow_kinds.v[i];
	if ((error = setup_render(&a->render, &ca->render, err)) < 0)
		return error;
	if (!a->render.helm_release)
		a->render.helm_release = ca->name;
	return 0;
}

static void release_app(struct ctl_app *a)
{
	git_source_free(a->gs);
	diff_objset_release(&a->objects);
	cli_render_release(&a->render);
	free(a->ignore);
	free(a->prune_allow);
}

static int open_source(struct controller *c, struct ctl_app *a,
		       struct err *err)
{
	const struct config_source *s = &a->cfg->source;
	struct git_source_options o = GIT_SOURCE_OPTIONS_INIT;

	o.url = s->repo;
	o.revision = s->revision;
	o.subpath = s->path;
	o.cache_dir = c->cfg->cache_dir;
	o.auth.username = s->username;
	o.auth.password_file = s->password_file;
	o.auth.password_env = s->password_env;
	o.auth.token_file = s->token_file;
	o.auth.token_env = s->token_env;
	o.auth.ca_file = s->ca_file;
	o.auth.ssh_key_file = s->ssh_key_file;
	o.auth.ssh_passphrase_file = s->ssh_passphrase_file;
	o.auth.known_hosts_file = s->known_hosts_file;
	o.verify.allowed_signers_file = s->allowed_signers_file;
	o.verify.gpg_keyring_file = s->gpg_keyring_file;
	return git_source_open(&a->gs, &o, err);
}

/* A deep copy of the last render, for one pass to label and extend. */
static int copy_objects(struct diff_objset *out, const struct diff_objset *in,
			struct err *err)
{
	for (size_t i = 0; i < in->len; i++) {
		struct diff_object *obj = NULL;
		json_t *j = json_deep_copy(in->items[i]->json);
		int error;

		if (!j)
			return err_set(err, ERR_NOMEM, "out of memory");
		error = diff_object_new(&obj, j, in->items[i]->origin, err);
		json_decref(j);
		if (error < 0)
			return error;
		if ((error = diff_objset_add(out, obj, err)) < 0) {
			diff_object_free(obj);
			return error;
		}
	}
	return 0;
}

/*
 * Poll the source, and render when the app's tree changed. A failed poll
 * or render leaves the last good objects in place; *stale says so, and
 * the pass goes on enforcing them when there are any.
 */
static int load_app(struct controller *c, struct ctl_app *a, bool *stale,
		    struct err *err)
{
	struct git_source_poll_result r;
	struct diff_objset fresh = DIFF_OBJSET_INIT;
	struct cli_render_env env = {0};
	char *dir = NULL;
	int error;

	*stale = false;
	if (!a->gs && (error = open_source(c, a, err)) < 0)
		return error;
	memset(&r, 0, sizeof(r));
	if ((error = git_source_poll(a->gs, &r, err)) < 0)
		goto failed;
	if (!strcmp(r.tree, a->rendered)) {
		/* Same tree as the last render: nothing to render. */
		memcpy(a->commit, r.commit, sizeof(a->commit));
		memcpy(a->tree, r.tree, sizeof(a->tree));
		a->polled = true;
		return 0;
	}
	if ((error = git_source_checkout(a->gs, &dir, err)) < 0)
		goto failed;
	env.app_name = a->cfg->name;
	env.app_namespace = a->cfg->namespace;
	env.revision = r.commit;
	env.path = a->cfg->source.path;
	if ((error = cli_render_run(&a->render, dir, &env, &fresh, err)) < 0)
		goto failed;
	diff_objset_release(&a->objects);
	a->objects = fresh;
	fresh = (struct diff_objset)DIFF_OBJSET_INIT;
	memcpy(a->commit, r.commit, sizeof(a->commit));
	memcpy(a->tree, r.tree, sizeof(a->tree));
	memcpy(a->rendered, r.tree, sizeof(a->rendered));
	a->polled = true;
	if (r.changed)
		git_source_mark_rendered(a->gs, r.tree, NULL);
	log_info("rendered", "app", a->cfg->name, "revision", a->commit,
		 "tree", a->tree, NULL);
	free(dir);
	return 0;
failed:
	diff_objset_release(&fresh);
	free(dir);
	if (!a->rendered[0])
		return error;
	/* Keep enforcing the last good revision while the source is down. */
	*stale = true;
	return 0;
}

/* One line per object written: "<object>: <what>" in the sync log. */
static void log_writes(const char *app, const char *revision,
		       const struct buf *log)
{
	const char *p = log->ptr ? log->ptr : "";
	struct buf line = BUF_INIT;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *what = "";
		char *sep;

		buf_reset(&line);
		buf_add(&line, p, n);
		buf_cstr(&line);
		sep = line.ptr ? strstr(line.ptr, ": ") : NULL;
		if (sep) {
			*sep = '\0';
			what = sep + 2;
		}
		log_info("object written", "app", app, "revision", revision,
			 "object", buf_cstr(&line), "result", what, NULL);
		p += n + (nl ? 1 : 0);
	}
	buf_release(&line);
}

static enum diff_policy policy_of(enum config_foreign f)
{
	switch (f) {
	case CONFIG_FOREIGN_OVERRIDE:
		return DIFF_POLICY_OVERRIDE;
	case CONFIG_FOREIGN_REPORT:
		return DIFF_POLICY_REPORT;
	default:
		return DIFF_POLICY_RESPECT;
	}
}

static int pass(struct controller *c, struct ctl_app *a)
{
	const struct config_app *ca = a->cfg;
	struct diff_options dopts = DIFF_OPTIONS_INIT;
	struct app_sync_options so = {0};
	struct app_sync_result res = APP_SYNC_RESULT_INIT;
	struct diff_objset desired = DIFF_OBJSET_INIT;
	struct diff_schemas *reg = NULL;
	struct diff_report *report = NULL;
	struct err err = ERR_INIT;
	struct app app;
	char counts[160];
	bool stale = false, act;
	int error, rc = -1;

	memset(&app, 0, sizeof(app));
	if ((error = load_app(c, a, &stale, &err)) < 0)
		goto fail;
	if (stale) {
		log_warn("source failed, enforcing the last good revision",
			 "app", ca->name, "revision", a->commit, "error",
			 err_first(&err), NULL);
		err_reset(&err);
	}
	dopts.field_manager = c->cfg->field_manager;
	dopts.policy = policy_of(ca->foreign_fields);
	dopts.ignore = a->ignore;
	dopts.nignore = ca->nignore;
	if ((error = copy_objects(&desired, &a->objects, &err)) < 0 ||
	    (error = app_init(&app, c->conn.client, c->conn.disc, ca->name,
			      ca->namespace ? ca->namespace
					    : c->conn.cfg.namespace,
			      dopts.field_manager, &err)) < 0)
		goto fail;
	error = app_compare(&app, &desired, &dopts, &reg, &report, a->commit,
			    &err);
	if (error == ERR_NOTFOUND && report)
		err_reset(&err); /* unserved kinds fail, the rest goes on */
	else if (error < 0)
		goto fail;
	act = ca->self_heal && dopts.policy != DIFF_POLICY_REPORT;
	if (!act) {
		if (diff_report_has_drift(report))
			log_warn("drift reported, not healed", "app", ca->name,
				 "revision", a->commit, NULL);
		log_info("pass done", "app", ca->name, "revision", a->commit,
			 "drift", diff_report_has_drift(report) ? "true"
								: "false",
			 NULL);
		rc = stale ? -1 : 0;
		goto out;
	}
	so.prune = ca->prune;
	so.prune_allow = a->prune_allow;
	so.prune_budget = ca->prune_budget;
	if (app_sync(&app, report, &desired, &so, &res, &err) < 0)
		goto fail;
	log_writes(ca->name, a->commit, &res.log);
	snprintf(counts, sizeof(counts),
		 "applied=%zu unchanged=%zu pruned=%zu kept=%zu failed=%zu",
		 res.applied, res.unchanged, res.pruned, res.kept, res.failed);
	if (res.failed) {
		log_error("pass failed", "app", ca->name, "revision",
			  a->commit, "counts", counts, "error",
			  err_first(&res.failures), NULL);
		goto out;
	}
	log_info("pass done", "app", ca->name, "revision", a->commit,
		 "counts", counts, NULL);
	rc = stale ? -1 : 0;
	goto out;
fail:
	log_error("pass failed", "app", ca->name, "revision", a->commit,
		  "error", err_first(&err), NULL);
out:
	app_sync_result_release(&res);
	diff_report_free(report);
	diff_schemas_free(reg);
	diff_objset_release(&desired);
	app_release(&app);
	err_release(&err);
	return rc;
}

static int reconcile(const char *name, void *ctx)
{
	struct controller *c = ctx;
	struct ctl_app *a = find_app(c, name);
	int rc;

	if (!a)
		return -1;
	rc = pass(c, a);
	a->failed = rc != 0;
	return rc;
}

int controller_new(struct controller **out, const struct config *cfg,
		   struct err *err)
{
	struct kube_config_options co = {cfg->kubeconfig, cfg->context, true};
	struct kube_client_options ko = {0};
	struct controller *c;
	int error;

	*out = NULL;
	if (!(c = calloc(1, sizeof(*c))))
		return err_set(err, ERR_NOMEM, "out of memory");
	c->cfg = cfg;
	/*
	 * A kubeconfig named in the file is used as is; without one the
	 * in-cluster config comes first, then the default kubeconfig.
	 */
	co.prefer_in_cluster = !cfg->kubeconfig;
	ko.qps = cfg->qps;
	ko.burst = cfg->burst;
	if ((error = app_conn_open_with(&c->conn, &co, &ko, err)) < 0)
		goto fail;
	if (cfg->napps &&
	    !(c->apps = calloc(cfg->napps, sizeof(*c->apps)))) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < cfg->napps; i++) {
		c->napps++;
		if ((error = setup_app(&c->apps[i], &cfg->apps[i], err)) < 0)
			goto fail;
	}
	*out = c;
	return 0;
fail:
	controller_free(c);
	return error;
}

static int start_queue(struct controller *c, bool timers, struct err *err)
{
	struct queue_options qo = QUEUE_OPTIONS_INIT;
	int error;

	qo.workers = c->cfg->workers;
	qo.reconcile = reconcile;
	qo.ctx = c;
	if ((error = queue_new(&c->q, &qo, err)) < 0)
		return error;
	for (size_t i = 0; i < c->napps; i++) {
		const struct config_app *ca = c->apps[i].cfg;

		error = queue_set_app(c->q, ca->name,
				      timers ? ca->source.interval_ms : 0,
				      timers ? c->cfg->resync_ms : 0);
		if (error < 0)
			return err_set(err, error, "app \"%s\": cannot queue",
				       ca->name);
	}
	return 0;
}

int controller_run_once(struct controller *c, struct err *err)
{
	int error, failed = 0;

	if ((error = start_queue(c, false, err)) < 0)
		return error;
	if ((error = queue_wait_idle(c->q, ONCE_TIMEOUT_MS)) < 0)
		return err_set(err, error, "apps did not finish in time");
	queue_stop(c->q, ONCE_TIMEOUT_MS);
	for (size_t i = 0; i < c->napps; i++)
		failed += c->apps[i].failed;
	return failed;
}

int controller_start(struct controller *c, struct err *err)
{
	return start_queue(c, true, err);
}

int controller_stop(struct controller *c, unsigned grace_ms)
{
	return c->q ? queue_stop(c->q, grace_ms) : 0;
}

void controller_free(struct controller *c)
{
	if (!c)
		return;
	queue_free(c->q);
	for (size_t i = 0; i < c->napps; i++)
		release_app(&c->apps[i]);
	free(c->apps);
	app_conn_close(&c->conn);
	free(c);
}
