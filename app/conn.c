/*
 * A connection to a cluster (kubeconfig, client, discovery) and the app
 * name a path gives.
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

int app_conn_server_version(struct kube_client *client, char *out,
			    size_t size, struct err *err)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	const char *v;
	int error;

	out[0] = '\0';
	if ((error = kube_request(client, "GET", "/version", NULL, NULL, 0,
				  &resp, err)) < 0)
		goto out;
	v = json_string_value(json_object_get(resp.json, "gitVersion"));
	if (!v || !*v || strlen(v) >= size || strlen(v) > 64 ||
	    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789.+-") != strlen(v)) {
		error = err_set(err, ERR_PARSE, "GET /version: no usable "
				"gitVersion");
		goto out;
	}
	snprintf(out, size, "%s", v);
out:
	kube_response_release(&resp);
	return error;
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
