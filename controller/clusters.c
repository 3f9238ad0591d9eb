/*
 * The clusters apps deploy to besides the controller's own (`clusters:`
 * in syncd.yaml, docs/clusters.md): one connection and watch cache each,
 * opened by the first pass that needs it, so a cluster that is down at
 * start fails only its apps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/internal.h"
#include "util/base64.h"
#include "util/log.h"

#include "util/banned.h" /* last */

const char *ctl_cluster_name(const struct ctl_cluster *cl)
{
	return cl ? cl->cfg->name : CONFIG_HOME_CLUSTER;
}

int ctl_clusters_new(struct controller *c, struct err *err)
{
	const struct config *cfg = c->cfg;

	if (!cfg->nclusters)
		return 0;
	if (!(c->clusters = calloc(cfg->nclusters, sizeof(*c->clusters))))
		return err_set(err, ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < cfg->nclusters; i++) {
		struct ctl_cluster *cl = &c->clusters[i];

		cl->cfg = &cfg->clusters[i];
		cl->ctl = c;
		pthread_mutex_init(&cl->lock, NULL);
		atomic_init(&cl->up, -1);
		c->nclusters++;
	}
	return 0;
}

struct ctl_cluster *ctl_cluster_find(struct controller *c, const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < c->nclusters; i++)
		if (!strcmp(c->clusters[i].cfg->name, name))
			return &c->clusters[i];
	return NULL;
}

/* The response hook of a cluster's client: its requests, and whether it
 * answers. */
static void on_response(const char *verb, int code, void *ctx)
{
	struct ctl_cluster *cl = ctx;
	struct controller *c = cl->ctl;
	char n[16];
	const char *labels[] = {"cluster", cl->cfg->name, "verb", verb,
				"code",	   n,		  NULL};
	const char *up[] = {"cluster", cl->cfg->name, NULL};

	/* 5xx from a proxy in front of it is no answer either. */
	atomic_store(&cl->up, code > 0 && code != 502 && code != 503);
	if (!c->metrics)
		return;
	snprintf(n, sizeof(n), "%d", code);
	metrics_counter_add(c->metrics, "syncd_kube_requests_total", labels, 1);
	metrics_gauge_set(c->metrics, "syncd_cluster_up", up,
			  atomic_load(&cl->up));
}

/*
 * kubeconfigSecret: the kubeconfig in a Secret of the home cluster, into
 * a memfd (*fd) that the loader reads as `path`.
 */
static int secret_kubeconfig(struct ctl_cluster *cl, int *fd,
			     char path[CTL_MEMFD_PATH], struct err *err)
{
	const struct config_cluster *cc = cl->cfg;
	const char *key = cc->secret_key ? cc->secret_key : "value";
	struct buf value = BUF_INIT;
	json_t *secret = NULL;
	const char *v;
	int error;

	if ((error = ctl_secret_get(cl->ctl, cc->secret_ns, cc->secret_name,
				    "kubeconfigSecret", &secret, err)) < 0)
		return error;
	v = json_string_value(
		json_object_get(json_object_get(secret, "data"), key));
	if (!v)
		error = err_set(err, ERR_NOTFOUND,
				"kubeconfigSecret %s/%s: no key \"%s\"",
				cc->secret_ns, cc->secret_name, key);
	else if (base64_decode(&value, v, strlen(v), 0) < 0)
		error = err_set(err, ERR_INVALID,
				"kubeconfigSecret %s/%s: %s is not base64",
				cc->secret_ns, cc->secret_name, key);
	else
		error = ctl_memfd("kubeconfig", &value, fd, path, err);
	if (value.ptr)
		explicit_bzero(value.ptr, value.len);
	buf_release(&value);
	json_decref(secret);
	return error;
}

int ctl_cluster_open(struct ctl_cluster *cl, struct err *err)
{
	struct controller *c = cl->ctl;
	struct kube_config_options co = {0};
	struct kube_client_options ko = {0};
	struct kube_watchcache_options wo = {0};
	char path[CTL_MEMFD_PATH];
	struct err e = ERR_INIT;
	int fd = -1, error = 0;

	pthread_mutex_lock(&cl->lock);
	if (cl->open)
		goto out;
	co.kubeconfig = cl->cfg->kubeconfig;
	co.context = cl->cfg->context;
	if (!co.kubeconfig) {
		if ((error = secret_kubeconfig(cl, &fd, path, &e)) < 0)
			goto out;
		co.kubeconfig = path;
	}
	ko.qps = c->cfg->qps;
	ko.burst = c->cfg->burst;
	ko.on_response = on_response;
	ko.on_response_ctx = cl;
	ctl_write_guard(c, &ko);
	if ((error = app_conn_open_with(&cl->conn, &co, &ko, &e)) < 0) {
		app_conn_close(&cl->conn);
		goto out;
	}
	if (c->cfg->watch) {
		wo.changed = ctl_on_change;
		wo.ctx = c;
		wo.keep_status = true;
		if ((error = kube_watchcache_new(&cl->wc, cl->conn.client, &wo,
						 &e)) < 0) {
			app_conn_close(&cl->conn);
			goto out;
		}
	}
	cl->open = true;
	log_info("cluster connected", "cluster", cl->cfg->name, "server",
		 cl->conn.cfg.server, NULL);
out:
	if (fd >= 0) {
		close(fd);
	}
	pthread_mutex_unlock(&cl->lock);
	if (error < 0)
		err_set(err, error, "cluster %s: %s", cl->cfg->name,
			err_first(&e));
	err_release(&e);
	return error;
}

void ctl_clusters_stop(struct controller *c)
{
	for (size_t i = 0; i < c->nclusters; i++)
		kube_watchcache_stop(c->clusters[i].wc);
}

void ctl_clusters_free(struct controller *c)
{
	for (size_t i = 0; i < c->nclusters; i++) {
		struct ctl_cluster *cl = &c->clusters[i];

		kube_watchcache_free(cl->wc);
		if (cl->open)
			app_conn_close(&cl->conn);
		pthread_mutex_destroy(&cl->lock);
	}
	free(c->clusters);
	c->clusters = NULL;
	c->nclusters = 0;
}
