/*
 * The tests' way into kube-emu's handler (see test_call.h).
 */
#include <stdio.h>
#include <string.h>

#include "tests/kube-emu/test_call.h"

#include "util/banned.h" /* last */

#define MAX_QUERY 8

void emu_test_request(struct emu_server *srv, const char *method,
		      const char *url, const char *ct, const char *body,
		      const struct emu_test_options *opts,
		      struct emu_response *resp)
{
	static const struct emu_test_options none = {0};
	struct emu_request req = {0};
	struct emu_param q[MAX_QUERY];
	char path[512], *qs, *save = NULL, *kv, *eq;

	if (!opts)
		opts = &none;
	snprintf(path, sizeof(path), "%s", url);
	qs = strchr(path, '?');
	if (qs) {
		*qs++ = '\0';
		for (kv = strtok_r(qs, "&", &save);
		     kv && req.nquery < MAX_QUERY;
		     kv = strtok_r(NULL, "&", &save)) {
			eq = strchr(kv, '=');
			if (eq)
				*eq++ = '\0';
			q[req.nquery].key = kv;
			q[req.nquery].value = eq ? eq : "";
			req.nquery++;
		}
	}
	req.method = method;
	req.path = path;
	req.query = q;
	req.content_type = ct;
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	req.authorization =
		opts->authorization ? opts->authorization : "Bearer T";
	req.user_agent = opts->user_agent ? opts->user_agent
					  : "kubectl/v1.36.3 (linux/amd64)";
	req.accept = opts->accept;
	req.body_too_large = opts->body_too_large;
	emu_handle(srv, &req, resp);
}

int emu_test_call(struct emu_server *srv, const char *method, const char *url,
		  const char *ct, const char *body, json_t **out)
{
	struct emu_response resp = EMU_RESPONSE_INIT;

	emu_test_request(srv, method, url, ct, body, NULL, &resp);
	*out = json_loads(buf_cstr(&resp.body), 0, NULL);
	emu_response_release(&resp);
	emu_watch_free(resp.watch);
	return resp.code;
}
