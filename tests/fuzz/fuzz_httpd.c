/*
 * libFuzzer target for the request handling of syncd's HTTP server
 * (controller/httpd.c): routing by method and path (query strings,
 * percent-escapes, the app name of /api/v1/apps/NAME[/sync]), the bearer
 * token, the browser view's files and ETags, bodies, through a real
 * libmicrohttpd daemon on 127.0.0.1 (tests/fuzz/httpd_fuzz.h). `make
 * fuzz` builds and runs it from tests/fuzz/corpus/fuzz_httpd.
 *
 * Input: one flag byte (bits 0-2: the method, GET, POST, HEAD, PUT,
 * DELETE, OPTIONS, PATCH or the first header line's text; bit 3: send the
 * right "Authorization: Bearer" token), then lines: the path, header
 * lines ("Name: value"; others are dropped) up to an empty line, and the
 * body.
 *
 * Besides the sanitizers, it checks: every request gets a status line,
 * never a 5xx (the handlers here do not fail); the apps' documents and a
 * sync are reached only by a request that holds the token; GET /healthz
 * answers 200 "ok"; a JSON answer parses, and an error one has an
 * "error" string; a 2xx to /api/v1/apps/NAME/sync was a POST for the one
 * app the handlers know.
 */
#include <stdint.h>

#include "tests/fuzz/httpd_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const methods[] = {
	"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", NULL,
};

/* The next line of [*p, end) (without "\n"); false at the end. */
static bool next_line(const char **p, const char *end, const char **line,
		      size_t *len)
{
	const char *nl;

	if (*p >= end)
		return false;
	nl = memchr(*p, '\n', (size_t)(end - *p));
	*line = *p;
	*len = (size_t)((nl ? nl : end) - *p);
	*p = nl ? nl + 1 : end;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 1,
		   *end = (const char *)data + size;
	const char *line, *path_line = "", *method;
	char custom[16];
	struct buf req = BUF_INIT;
	struct fz_response r;
	size_t len, path_len = 0;
	bool token = false, is_get, healthz;
	json_t *j;

	if (size < 1)
		return 0;
	fz_start();
	method = methods[data[0] & 7];
	if (next_line(&p, end, &line, &len)) {
		path_line = line;
		path_len = len;
	}
	if (!method) {
		/* A method token of the input's own: letters only. */
		size_t n = 0;

		for (size_t i = 0; i < path_len && n + 1 < sizeof(custom); i++)
			if (isupper((unsigned char)path_line[i]))
				custom[n++] = path_line[i];
		custom[n] = '\0';
		method = n ? custom : "GET";
	}
	buf_addf(&req, "%s ", method);
	fz_add_path(&req, path_line, path_len);
	buf_adds(&req, " HTTP/1.1\r\n");
	if (data[0] & 8)
		buf_adds(&req, "Authorization: Bearer " FZ_TOKEN "\r\n");
	while (next_line(&p, end, &line, &len) && len)
		fz_add_header(&req, line, len);
	is_get = !strcmp(method, "GET");
	healthz = is_get && path_len == 8 && !memcmp(path_line, "/healthz", 8);
	/* The token may also come in a fuzzed header line. */
	token = memmem(req.ptr, req.len, FZ_TOKEN, strlen(FZ_TOKEN)) != NULL;
	fz_send(&req, p, (size_t)(end - p), &r);

	if (r.code < 100 || r.code >= 500)
		abort();
	if ((fz_seen.apps || fz_seen.app || fz_seen.sync) && !token)
		abort();
	if (healthz &&
	    (r.code != 200 || r.body_len != 3 || memcmp(r.body, "ok\n", 3)))
		abort();
	if (r.code >= 200 && r.code < 300 && fz_seen.sync &&
	    strcmp(method, "POST"))
		abort();
	if (strcmp(method, "HEAD") && (j = fz_json(&r))) {
		if (r.code >= 400 &&
		    !json_is_string(json_object_get(j, "error")))
			abort();
		json_decref(j);
	}
	fz_response_release(&r);
	buf_release(&req);
	return 0;
}
