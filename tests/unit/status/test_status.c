/*
 * `syncd status`: the formatting (data-driven cases in
 * tests/cases/status/, plus the pieces: ages, cuts, colours), the HTTP
 * client against a server thread serving canned answers, and the
 * command itself (exit codes and its one-line errors) in a child.
 *
 * A case folder holds apps.json (GET /api/v1/apps) or app.json (GET
 * /api/v1/apps/NAME), `now` (an RFC 3339 time the ages are measured
 * against), an optional `args` (words: --color, -o json, --width N) and
 * expected.txt, the exact output.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include "tests/helpers/cases.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "syncd/cli.h"
#include "syncd/status_fmt.h"
#include "util/clock.h"

#define CASES "tests/cases/status"

static void read_text(const char *path, struct buf *b)
{
	char chunk[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(b, chunk, n);
	fclose(f);
}

static void run_case(const char *name)
{
	struct status_fmt_options fo = {0};
	struct buf text = BUF_INIT, expected = BUF_INIT, out = BUF_INIT;
	struct err err = ERR_INIT;
	char path[1024], *word, *save = NULL;
	bool one = false, json = false;
	json_error_t jerr;
	json_t *doc;
	int rc;

	snprintf(path, sizeof(path), CASES "/%s/now", name);
	read_text(path, &text);
	buf_truncate(&text, strcspn(buf_cstr(&text), "\n"));
	cr_assert_eq(clk_rfc3339_parse(buf_cstr(&text), &fo.now), 0,
		     "%s: bad now", name);
	buf_reset(&text);

	snprintf(path, sizeof(path), CASES "/%s/args", name);
	if (access(path, F_OK) == 0) {
		read_text(path, &text);
		for (word = strtok_r(text.ptr, " \n", &save); word;
		     word = strtok_r(NULL, " \n", &save)) {
			if (!strcmp(word, "--color")) {
				fo.color = true;
			} else if (!strcmp(word, "-o")) {
				word = strtok_r(NULL, " \n", &save);
				cr_assert(word && !strcmp(word, "json"));
				json = true;
			} else if (!strcmp(word, "--width")) {
				word = strtok_r(NULL, " \n", &save);
				cr_assert_not_null(word);
				fo.width = (unsigned)atoi(word);
			} else {
				cr_assert_fail("%s: unknown arg %s", name,
					       word);
			}
		}
	}

	snprintf(path, sizeof(path), CASES "/%s/app.json", name);
	one = access(path, F_OK) == 0;
	if (!one)
		snprintf(path, sizeof(path), CASES "/%s/apps.json", name);
	doc = json_load_file(path, 0, &jerr);
	cr_assert_not_null(doc, "%s:%d: %s", path, jerr.line, jerr.text);

	if (json)
		rc = status_fmt_json(&out, doc, &err);
	else if (one)
		rc = status_fmt_app(&out, doc, &fo, &err);
	else
		rc = status_fmt_apps(&out, doc, &fo, &err);
	cr_assert_eq(rc, 0, "%s: %s", name, err_msg(&err));

	snprintf(path, sizeof(path), CASES "/%s/expected.txt", name);
	read_text(path, &expected);
	if (out.len != expected.len ||
	    memcmp(buf_cstr(&out), buf_cstr(&expected), out.len))
		cr_assert_fail("%s: output differs from expected.txt; got:\n%s",
			       name, buf_cstr(&out));

	json_decref(doc);
	buf_release(&text);
	buf_release(&expected);
	buf_release(&out);
	err_release(&err);
}

static int skip_dots(const struct dirent *d)
{
	return d->d_name[0] != '.' && strcmp(d->d_name, "README.md");
}

ParameterizedTestParameters(status_cases, each)
{
	return case_dirs(CASES, skip_dots);
}

ParameterizedTest(struct case_param *p, status_cases, each)
{
	run_case(p->name);
}

/* Every line of a text form fits the width (in code points). */
Test(status_cases, every_text_line_fits_80_columns)
{
	static const char *const files[] = {
		CASES "/apps-long-names/apps.json",
		CASES "/app-drifted-long-paths/app.json",
	};
	struct status_fmt_options fo = {.now = 1795860000};

	for (size_t i = 0; i < 2; i++) {
		struct buf out = BUF_INIT, line = BUF_INIT;
		json_t *doc = json_load_file(files[i], 0, NULL);
		const char *p;

		cr_assert_not_null(doc, "%s", files[i]);
		cr_assert_eq(i ? status_fmt_app(&out, doc, &fo, NULL)
			       : status_fmt_apps(&out, doc, &fo, NULL),
			     0);
		for (p = buf_cstr(&out); *p;) {
			size_t n = strcspn(p, "\n");

			buf_reset(&line);
			buf_add(&line, p, n);
			cr_assert_leq(status_text_width(buf_cstr(&line)), 80,
				      "%s: too wide: %s", files[i],
				      buf_cstr(&line));
			p += n + (p[n] == '\n');
		}
		json_decref(doc);
		buf_release(&out);
		buf_release(&line);
	}
}

Test(status_cases, not_an_app_list_is_a_parse_error)
{
	struct status_fmt_options fo = {0};
	struct buf out = BUF_INIT;
	struct err err = ERR_INIT;
	json_t *doc = json_pack("{s:s}", "kind", "Status");

	cr_assert_eq(status_fmt_apps(&out, doc, &fo, &err), ERR_PARSE);
	cr_assert_str_eq(err_first(&err), "the answer has no \"apps\" list");
	err_reset(&err);
	cr_assert_eq(status_fmt_app(&out, doc, &fo, &err), ERR_PARSE);
	json_decref(doc);
	buf_release(&out);
	err_release(&err);
}

/* ---------------------------------------------------------------------
 * Pieces
 * ------------------------------------------------------------------- */

static const char *dur(long long s)
{
	static char out[32];

	status_fmt_duration(out, sizeof(out), s);
	return out;
}

Test(status_age, units_switch_at_their_boundaries)
{
	cr_assert_str_eq(dur(0), "0s");
	cr_assert_str_eq(dur(12), "12s");
	cr_assert_str_eq(dur(59), "59s");
	cr_assert_str_eq(dur(60), "1m");
	cr_assert_str_eq(dur(3599), "59m");
	cr_assert_str_eq(dur(3600), "1h");
	cr_assert_str_eq(dur(86399), "23h");
	cr_assert_str_eq(dur(86400), "1d");
	cr_assert_str_eq(dur(400 * 86400LL), "400d");
	cr_assert_str_eq(dur(-5), "0s", "clock skew reads as now");
}

static const char *cell(const char *s, size_t w, bool keep_end, bool pad)
{
	static struct buf b;

	buf_release(&b);
	cr_assert_eq(status_fmt_cell(&b, s, w, keep_end, pad), 0);
	return buf_cstr(&b);
}

Test(status_cell, cut_only_when_longer)
{
	cr_assert_str_eq(cell("web", 5, false, false), "web");
	cr_assert_str_eq(cell("web", 5, false, true), "web  ");
	cr_assert_str_eq(cell("web", 3, false, true), "web");
	cr_assert_str_eq(cell("frontend", 5, false, false), "fron\xe2\x80\xa6");
	cr_assert_str_eq(cell(".spec.replicas", 9, true, false),
			 "\xe2\x80\xa6replicas");
	cr_assert_str_eq(cell("abc", 1, false, false), "\xe2\x80\xa6");
	cr_assert_str_eq(cell("abc", 0, false, true), "");
}

Test(status_cell, utf8_counts_code_points_and_is_never_split)
{
	/* "héllo wörld": 11 code points, 13 bytes. */
	const char *s = "h\xc3\xa9llo w\xc3\xb6rld";

	cr_assert_eq(status_text_width(s), 11);
	cr_assert_str_eq(cell(s, 11, false, true), s);
	cr_assert_str_eq(cell(s, 3, false, false), "h\xc3\xa9\xe2\x80\xa6");
	cr_assert_str_eq(cell(s, 4, true, false), "\xe2\x80\xa6\x72ld");
	cr_assert_str_eq(cell("\xc3\xa9\xc3\xa9\xc3\xa9", 2, true, false),
			 "\xe2\x80\xa6\xc3\xa9");
}

Test(status_cell, control_characters_and_bad_utf8_become_question_marks)
{
	cr_assert_str_eq(cell("a\033[2Jb", 10, false, false), "a?[2Jb");
	cr_assert_str_eq(cell("a\nb\tc\x7f", 10, false, false), "a?b?c?");
	/* C1 CSI (U+009B), an overlong '/', a lone continuation byte. */
	cr_assert_str_eq(cell("x\xc2\x9by\xc0\xafz\x80", 10, false, false),
			 "x?y??z?");
	cr_assert_eq(status_text_width("\xff\xfe"), 2);
}

Test(status_color, states_have_their_colours)
{
	cr_assert_str_eq(status_state_color("InSync"), "\033[32m");
	cr_assert_str_eq(status_state_color("Drifted"), "\033[33m");
	cr_assert_str_eq(status_state_color("Failed"), "\033[31m");
	cr_assert_str_eq(status_state_color("Fighting"), "\033[35m");
	cr_assert_null(status_state_color("Unknown"));
	cr_assert_null(status_state_color(NULL));
}

Test(status_color, padding_stays_outside_the_colour)
{
	json_t *doc = json_pack("{s:b, s:[{s:s, s:s}, {s:s, s:s}]}", "leader",
				1, "apps", "name", "a", "state", "InSync",
				"name", "b", "state", "Failed");
	struct status_fmt_options fo = {.now = 0, .color = true};
	struct buf out = BUF_INIT;

	cr_assert_eq(status_fmt_apps(&out, doc, &fo, NULL), 0);
	cr_assert(strstr(buf_cstr(&out), "a    \033[32mInSync\033[0m  -"), "%s",
		  buf_cstr(&out));
	cr_assert(strstr(buf_cstr(&out), "b    \033[31mFailed\033[0m  -"), "%s",
		  buf_cstr(&out));
	json_decref(doc);
	buf_release(&out);
}

/* ---------------------------------------------------------------------
 * The HTTP client, against a server thread
 * ------------------------------------------------------------------- */

struct canned {
	int lfd;
	int port;
	const char *const *parts; /* written in turn, NULL-terminated */
	size_t repeat_len;	  /* then this many 'x' bytes (big bodies) */
	bool stall;		  /* accept, read, never answer */
	char request[4096];	  /* what the client sent */
	pthread_t thread;
};

static void *serve(void *arg)
{
	struct canned *c = arg;
	char chunk[8192];
	size_t got = 0;
	int fd = accept(c->lfd, NULL, NULL);

	if (fd < 0)
		return NULL;
	while (!strstr(c->request, "\r\n\r\n") &&
	       got + 1 < sizeof(c->request)) {
		ssize_t n = recv(fd, c->request + got,
				 sizeof(c->request) - 1 - got, 0);

		if (n <= 0)
			break;
		got += (size_t)n;
		c->request[got] = '\0';
	}
	if (c->stall) {
		/* Hold the connection until the client gives up. */
		while (recv(fd, chunk, sizeof(chunk), 0) > 0)
			;
		close(fd);
		return NULL;
	}
	for (size_t i = 0; c->parts && c->parts[i]; i++) {
		if (send(fd, c->parts[i], strlen(c->parts[i]), MSG_NOSIGNAL) <
		    0)
			break;
		usleep(2000); /* separate segments: the client must reassemble
			       */
	}
	memset(chunk, 'x', sizeof(chunk));
	for (size_t left = c->repeat_len; left;) {
		size_t n = left < sizeof(chunk) ? left : sizeof(chunk);

		if (send(fd, chunk, n, MSG_NOSIGNAL) < 0)
			break;
		left -= n;
	}
	shutdown(fd, SHUT_WR);
	close(fd);
	return NULL;
}

static void canned_start(struct canned *c)
{
	struct sockaddr_in sa = {0};
	socklen_t len = sizeof(sa);

	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->lfd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(c->lfd, 0);
	cr_assert_eq(bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(c->lfd, 4), 0);
	cr_assert_eq(getsockname(c->lfd, (struct sockaddr *)&sa, &len), 0);
	c->port = ntohs(sa.sin_port);
	cr_assert_eq(pthread_create(&c->thread, NULL, serve, c), 0);
}

static void canned_stop(struct canned *c)
{
	pthread_join(c->thread, NULL);
	close(c->lfd);
}

/* A loopback port nothing listens on (bound, never listened, closed). */
static int free_port(void)
{
	struct sockaddr_in sa = {0};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

static int get(struct canned *c, const char *prefix, const char *path,
	       size_t max_body, unsigned timeout_ms,
	       struct status_http_response *resp, struct err *err)
{
	char base[128];
	int rc;

	snprintf(base, sizeof(base), "http://127.0.0.1:%d%s", c->port, prefix);
	rc = status_http_get(base, path, max_body, timeout_ms, resp, err);
	canned_stop(c);
	return rc;
}

Test(status_http, content_length_body_and_the_request_sent)
{
	static const char *const parts[] = {
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n",
		"Content-Length: 12\r\n\r\n{\"apps\"", ": []}", NULL};
	struct canned c = {.parts = parts};
	struct status_http_response resp = STATUS_HTTP_RESPONSE_INIT;
	struct err err = ERR_INIT;
	char host[64];

	canned_start(&c);
	cr_assert_eq(get(&c, "/prefix/", "/api/v1/apps", 0, 0, &resp, &err), 0,
		     "%s", err_msg(&err));
	cr_assert_eq(resp.code, 200);
	cr_assert_str_eq(buf_cstr(&resp.body), "{\"apps\": []}");
	cr_assert(
		!strncmp(c.request, "GET /prefix/api/v1/apps HTTP/1.1\r\n", 34),
		"%s", c.request);
	snprintf(host, sizeof(host), "\r\nHost: 127.0.0.1:%d\r\n", c.port);
	cr_assert(strstr(c.request, host), "%s", c.request);
	cr_assert(strstr(c.request, "\r\nConnection: close\r\n"));
	status_http_response_release(&resp);
	err_release(&err);
}

Test(status_http, chunked_body_is_decoded)
{
	static const char *const parts[] = {
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		"5\r\nhello\r\n", "1;ext=1\r\n \r\n",
		"6\r\nworld!\r\n0\r\n\r\n", NULL};
	struct canned c = {.parts = parts};
	struct status_http_response resp = STATUS_HTTP_RESPONSE_INIT;
	struct err err = ERR_INIT;

	canned_start(&c);
	cr_assert_eq(get(&c, "", "/api/v1/apps", 0, 0, &resp, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(resp.code, 200);
	cr_assert_str_eq(buf_cstr(&resp.body), "hello world!");
	status_http_response_release(&resp);
	err_release(&err);
}

Test(status_http, body_read_until_close)
{
	/* A 1xx answer first, in the same segment as the real one. */
	static const char *const parts[] = {
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\n{}", "\n",
		NULL};
	struct canned c = {.parts = parts};
	struct status_http_response resp = STATUS_HTTP_RESPONSE_INIT;
	struct err err = ERR_INIT;

	canned_start(&c);
	cr_assert_eq(get(&c, "", "/x", 0, 0, &resp, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(resp.code, 200);
	cr_assert_str_eq(buf_cstr(&resp.body), "{}\n");
	status_http_response_release(&resp);
	err_release(&err);
}

Test(status_http, a_404_is_an_answer)
{
	static const char *const parts[] = {
		"HTTP/1.1 404 Not Found\r\nContent-Length: 30\r\n\r\n"
		"{\"error\": \"unknown app \\\"x\\\"\"}",
		NULL};
	struct canned c = {.parts = parts};
	struct status_http_response resp = STATUS_HTTP_RESPONSE_INIT;

	canned_start(&c);
	cr_assert_eq(get(&c, "", "/api/v1/apps/x", 0, 0, &resp, NULL), 0);
	cr_assert_eq(resp.code, 404);
	cr_assert_str_eq(buf_cstr(&resp.body),
			 "{\"error\": \"unknown app \\\"x\\\"\"}");
	status_http_response_release(&resp);
}

Test(status_http, refused_connection_says_so)
{
	struct status_http_response resp = STATUS_HTTP_RESPONSE_INIT;
	struct err err = ERR_INIT;
	char base[64];

	snprintf(base, sizeof(base), "http://127.0.0.1:%d", free_port());
	cr_assert_eq(status_http_get(base, "/api/v1/apps", 0, 0, &resp, &err),
		     ERR_IO);
	cr_assert_str_eq(err_first(&err), "connection refused");
	status_http_response_release(&resp);
	err_release(&err);
}

Test(status_http, oversized_bodies_are_refused)
{
	static const char *const cl[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 5000000\r\n\r\n", NULL};
	static const char *const chunked[] = {
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		"1E8480\r\n",
		NULL};
	static const char *const to_close[] = {"HTTP/1.1 200 OK\r\n\r\n", NULL};
	const char *const *cases[] = {cl, chunked, to_close};

	for (size_t i = 0; i < 3; i++) {
		struct canned c = {.parts = cases[i], .repeat_len = 2000000};
		struct status_http_response resp = STATUS_HTTP_RESPONSE_INIT;
		struct err err = ERR_INIT;

		canned_start(&c);
		cr_assert_eq(get(&c, "", "/", 1u << 20, 0, &resp, &err),
			     ERR_LIMIT, "case %zu: %s", i, err_msg(&err));
		cr_assert_str_eq(err_first(&err),
				 "the answer is larger than 1 MiB");
		cr_assert_eq(resp.body.len, 0);
		status_http_response_release(&resp);
		err_release(&err);
	}
}

Test(status_http, a_silent_server_times_out)
{
	struct canned c = {.stall = true};
	struct status_http_response resp = STATUS_HTTP_RESPONSE_INIT;
	struct err err = ERR_INIT;

	char base[64];

	canned_start(&c);
	snprintf(base, sizeof(base), "http://127.0.0.1:%d", c.port);
	cr_assert_eq(status_http_get(base, "/", 0, 300, &resp, &err),
		     ERR_TIMEOUT);
	cr_assert_str_eq(err_first(&err), "timed out after 1 s");
	canned_stop(&c);
	status_http_response_release(&resp);
	err_release(&err);
}

Test(status_http, bad_urls_and_garbage_answers)
{
	static const char *const garbage[] = {"SSH-2.0-OpenSSH_9.2\r\n\r\n",
					      NULL};
	static const char *const truncated[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{", NULL};
	struct status_http_response resp = STATUS_HTTP_RESPONSE_INIT;
	struct err err = ERR_INIT;
	struct canned c = {.parts = garbage};

	cr_assert_eq(
		status_http_get("https://127.0.0.1:1", "/", 0, 0, &resp, &err),
		ERR_INVALID);
	cr_assert_str_eq(err_first(&err),
			 "https:// is not supported (the endpoint is plain "
			 "HTTP)");
	cr_assert_eq(status_http_get("http://127.0.0.1:99999", "/", 0, 0, &resp,
				     NULL),
		     ERR_INVALID);
	cr_assert_eq(
		status_http_get("http://u:p@127.0.0.1", "/", 0, 0, &resp, NULL),
		ERR_INVALID);
	cr_assert_eq(status_http_get("http://[::1", "/", 0, 0, &resp, NULL),
		     ERR_INVALID);

	canned_start(&c);
	cr_assert_eq(get(&c, "", "/", 0, 0, &resp, NULL), ERR_PARSE);
	c = (struct canned){.parts = truncated};
	canned_start(&c);
	err_reset(&err);
	cr_assert_eq(get(&c, "", "/", 0, 0, &resp, &err), ERR_PARSE);
	cr_assert_str_eq(err_first(&err),
			 "not an HTTP/1.1 answer (the connection closed "
			 "early)");
	status_http_response_release(&resp);
	err_release(&err);
}

/* ---------------------------------------------------------------------
 * The command, in a child (its exit code, stdout and stderr)
 * ------------------------------------------------------------------- */

static int run_status(const char *const *args, struct buf *out,
		      struct buf *errout)
{
	char *argv[16];
	char outp[] = "/tmp/syncd-status-out.XXXXXX";
	char errp[] = "/tmp/syncd-status-err.XXXXXX";
	int ofd = mkstemp(outp), efd = mkstemp(errp), status, argc = 0;
	pid_t pid;

	cr_assert(ofd >= 0 && efd >= 0);
	argv[argc++] = (char *)"status";
	while (*args)
		argv[argc++] = (char *)*args++;
	argv[argc] = NULL;
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(ofd, 1);
		dup2(efd, 2);
		unsetenv("SYNCD_ADDR");
		_exit(cli_status_command.run(argc, argv));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	read_text(outp, out);
	read_text(errp, errout);
	unlink(outp);
	unlink(errp);
	close(ofd);
	close(efd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(status_command, lists_apps_and_shows_json)
{
	static const char body[] =
		"{\"leader\": false, \"apps\": [{\"name\": \"web\", "
		"\"state\": \"InSync\", \"revision\": \"0123456789\"}]}";
	char head[128];
	const char *parts[] = {head, body, NULL};
	struct canned c = {.parts = parts};
	struct buf out = BUF_INIT, errout = BUF_INIT;
	char addr[64];

	snprintf(head, sizeof(head),
		 "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
		 sizeof(body) - 1);
	canned_start(&c);
	snprintf(addr, sizeof(addr), "http://127.0.0.1:%d", c.port);
	cr_assert_eq(run_status((const char *[]){"--addr", addr, NULL}, &out,
				&errout),
		     EXIT_OK, "%s", buf_cstr(&errout));
	canned_stop(&c);
	/* Not a terminal: no colour. */
	cr_assert_str_eq(buf_cstr(&out),
			 "This replica is on standby: another replica "
			 "writes.\n\n"
			 "APP  STATE   HEALTH  REVISION  DRIFTED  FOREIGN  "
			 "LAST SYNC  DRIFT\n"
			 "web  InSync  -       0123456   -        -        "
			 "never      -\n");
	cr_assert(!strncmp(c.request, "GET /api/v1/apps HTTP/1.1", 25));

	buf_reset(&out);
	c = (struct canned){.parts = parts};
	canned_start(&c);
	snprintf(addr, sizeof(addr), "http://127.0.0.1:%d/", c.port);
	cr_assert_eq(
		run_status((const char *[]){"-o", "json", "--addr", addr, NULL},
			   &out, &errout),
		EXIT_OK);
	canned_stop(&c);
	cr_assert(!strncmp(buf_cstr(&out), "{\n  \"leader\": false,\n", 21),
		  "%s", buf_cstr(&out));
	buf_release(&out);
	buf_release(&errout);
}

Test(status_command, unknown_app_is_one_line_and_exit_2)
{
	static const char *const parts[] = {
		"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}", NULL};
	struct canned c = {.parts = parts};
	struct buf out = BUF_INIT, errout = BUF_INIT;
	char addr[64];

	canned_start(&c);
	snprintf(addr, sizeof(addr), "http://127.0.0.1:%d", c.port);
	cr_assert_eq(run_status((const char *[]){"a b/c", "--addr", addr, NULL},
				&out, &errout),
		     EXIT_ERROR);
	canned_stop(&c);
	cr_assert_str_eq(buf_cstr(&errout),
			 "syncd status: unknown app \"a b/c\"\n");
	cr_assert_eq(out.len, 0);
	/* The name is one escaped path segment. */
	cr_assert(
		!strncmp(c.request, "GET /api/v1/apps/a%20b%2Fc HTTP/1.1", 35),
		"%s", c.request);
	buf_release(&out);
	buf_release(&errout);
}

Test(status_command, unreachable_server_is_one_line_and_exit_2)
{
	struct buf out = BUF_INIT, errout = BUF_INIT;
	char addr[64], want[128];

	snprintf(addr, sizeof(addr), "http://127.0.0.1:%d", free_port());
	cr_assert_eq(run_status((const char *[]){"--addr", addr, NULL}, &out,
				&errout),
		     EXIT_ERROR);
	snprintf(want, sizeof(want),
		 "syncd status: cannot reach %s: connection refused\n", addr);
	cr_assert_str_eq(buf_cstr(&errout), want);
	buf_release(&out);
	buf_release(&errout);
}

Test(status_command, server_error_and_bad_usage)
{
	static const char *const parts[] = {
		"HTTP/1.1 500 Internal Server Error\r\n\r\n{\"error\": "
		"\"it\\u001b broke\"}",
		NULL};
	struct canned c = {.parts = parts};
	struct buf out = BUF_INIT, errout = BUF_INIT;
	char addr[64];

	canned_start(&c);
	snprintf(addr, sizeof(addr), "http://127.0.0.1:%d", c.port);
	cr_assert_eq(run_status((const char *[]){"--addr", addr, NULL}, &out,
				&errout),
		     EXIT_ERROR);
	canned_stop(&c);
	cr_assert_str_eq(buf_cstr(&errout),
			 "syncd status: GET /api/v1/apps: HTTP 500: it? "
			 "broke\n");
	buf_reset(&errout);
	cr_assert_eq(
		run_status((const char *[]){"-o", "yaml", NULL}, &out, &errout),
		EXIT_ERROR);
	cr_assert_eq(
		run_status((const char *[]){"a", "b", NULL}, &out, &errout),
		EXIT_ERROR);
	buf_release(&out);
	buf_release(&errout);
}
