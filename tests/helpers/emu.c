/*
 * A kube-emu process per test (see emu.h). The process is started with
 * fork/exec rather than util/proc.h because it must outlive the call;
 * its stdout and stderr go to files in its private folder, which is how
 * we read the "listening on" line and show its errors.
 */
#include "tests/helpers/emu.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/base64.h"
#include "util/clock.h"

#define START_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS	 5000
#define POLL_MS		 20
#define MAX_ARGS	 64
#define FILE_CAP	 (1u << 20)


/* Read a small file (at most FILE_CAP bytes) into `b`. 0 or -1. */
static int read_file(const char *path, struct buf *b)
{
	char chunk[4096];
	ssize_t n;
	int fd, error = 0;

	buf_init(b, FILE_CAP);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || buf_add(b, chunk, (size_t)n) < 0) {
			error = -1;
			break;
		}
	}
	close(fd);
	return error;
}

static void show_stderr(const struct test_emu *e)
{
	char path[300];
	struct buf b;

	snprintf(path, sizeof(path), "%s/err", e->dir);
	if (read_file(path, &b) == 0 && b.len)
		fprintf(stderr, "kube-emu stderr:\n%.*s\n",
			(int)(b.len > 4000 ? 4000 : b.len), b.ptr);
	buf_release(&b);
}

/* The URL of the "listening on URL" line, once kube-emu printed it. */
static int find_url(struct test_emu *e)
{
	char path[300];
	struct buf b;
	const char *p, *end;
	int error = -1;

	snprintf(path, sizeof(path), "%s/out", e->dir);
	if (read_file(path, &b) < 0 || !b.len)
		goto out;
	p = strstr(b.ptr, "listening on ");
	if (!p)
		goto out;
	p += strlen("listening on ");
	end = strchr(p, '\n');
	if (!end || (size_t)(end - p) >= sizeof(e->url))
		goto out;
	memcpy(e->url, p, (size_t)(end - p));
	e->url[end - p] = '\0';
	error = 0;
out:
	buf_release(&b);
	return error;
}

static void remove_dir(const char *dir)
{
	static const char *const names[] = {"out", "err", "kubeconfig"};
	char path[300];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static pid_t spawn(struct test_emu *e, const char *const *extra_args)
{
	const char *argv[MAX_ARGS];
	const char *build = getenv("BUILD");
	char bin[300], out[300], errp[300];
	size_t n = 0, i;
	pid_t pid, parent;

	if (!build || !*build)
		build = "build";
	/*
	 * "./" before a relative path: valgrind runs (tests/run.sh) skip
	 * children under ./, so the emulator itself is not traced.
	 */
	snprintf(bin, sizeof(bin), "%s%.200s/kube-emu",
		 build[0] == '/' || !strncmp(build, "./", 2) ? "" : "./",
		 build);
	snprintf(out, sizeof(out), "%s/out", e->dir);
	snprintf(errp, sizeof(errp), "%s/err", e->dir);
	argv[n++] = bin;
	argv[n++] = "--listen";
	argv[n++] = "127.0.0.1:0";
	argv[n++] = "--tls";
	argv[n++] = "--token";
	argv[n++] = e->token;
	argv[n++] = "--kubeconfig-out";
	argv[n++] = e->kubeconfig;
	for (i = 0; extra_args && extra_args[i]; i++) {
		if (n + 1 >= MAX_ARGS) {
			fprintf(stderr, "test_emu_start: too many arguments\n");
			return -1;
		}
		argv[n++] = extra_args[i];
	}
	argv[n] = NULL;

	parent = getpid();
	pid = fork();
	if (pid == 0) {
		int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		/*
		 * A test process that crashes or times out never stops its
		 * emulator: let the kernel end it with its parent.
		 */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 ||
		    getppid() != parent)
			_exit(127);
		int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fi = open("/dev/null", O_RDONLY);

		if (fo < 0 || fe < 0 || fi < 0 || dup2(fi, 0) < 0 ||
		    dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(127);
		execv(bin, (char *const *)argv);
		dprintf(2, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		fprintf(stderr, "test_emu_start: fork: %s\n", strerror(errno));
	return pid;
}

/* GET /readyz through the client under test's own TLS setup. */
static int ready(struct test_emu *e)
{
	struct kube_config cfg;
	struct kube_client *c = NULL;
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct kube_client_options opts = {0};
	int error = -1;

	if (test_emu_config(e, &cfg) < 0)
		goto out;
	opts.max_retries = 1;
	opts.connect_timeout_ms = 1000;
	opts.timeout_ms = 2000;
	if (kube_client_new(&c, &cfg, &opts, NULL) < 0)
		goto out;
	if (kube_request(c, "GET", "/readyz", NULL, NULL, 0, &resp, NULL) == 0)
		error = 0;
out:
	kube_response_release(&resp);
	kube_client_free(c);
	kube_config_release(&cfg);
	return error;
}

int test_emu_start(struct test_emu *e, const char *const *extra_args)
{
	const char *tmp = getenv("TMPDIR");
	long waited;
	int status;

	memset(e, 0, sizeof(*e));
	e->token = TEST_EMU_TOKEN;
	if (!tmp || !*tmp || strlen(tmp) > 200)
		tmp = "/tmp";
	snprintf(e->dir, sizeof(e->dir), "%.200s/syncd-emu-XXXXXX", tmp);
	if (!mkdtemp(e->dir)) {
		fprintf(stderr, "test_emu_start: mkdtemp %s: %s\n", e->dir,
			strerror(errno));
		e->dir[0] = '\0';
		return -1;
	}
	snprintf(e->kubeconfig, sizeof(e->kubeconfig), "%.200s/kubeconfig",
		 e->dir);
	e->pid = spawn(e, extra_args);
	if (e->pid <= 0) {
		e->pid = 0;
		goto fail;
	}
	/*
	 * The kubeconfig is written before the line is printed, so once
	 * the line is there the config is complete.
	 */
	for (waited = 0; waited < START_TIMEOUT_MS; waited += POLL_MS) {
		if (waitpid(e->pid, &status, WNOHANG) == e->pid) {
			fprintf(stderr,
				"test_emu_start: kube-emu exited "
				"(status %d)\n",
				status);
			e->pid = 0;
			goto fail;
		}
		if (find_url(e) == 0)
			break;
		clk_sleep_ms(POLL_MS);
	}
	if (!e->url[0]) {
		fprintf(stderr, "test_emu_start: no \"listening on\" line\n");
		goto fail;
	}
	for (; waited < START_TIMEOUT_MS; waited += POLL_MS * 5) {
		if (ready(e) == 0)
			return 0;
		clk_sleep_ms(POLL_MS * 5);
	}
	fprintf(stderr, "test_emu_start: %s/readyz did not answer\n", e->url);
fail:
	show_stderr(e);
	test_emu_stop(e);
	return -1;
}

void test_emu_stop(struct test_emu *e)
{
	long waited;
	int status;

	if (e->pid > 0) {
		kill(e->pid, SIGTERM);
		for (waited = 0; waited < STOP_TIMEOUT_MS; waited += POLL_MS) {
			if (waitpid(e->pid, &status, WNOHANG) == e->pid)
				break;
			clk_sleep_ms(POLL_MS);
		}
		if (waited >= STOP_TIMEOUT_MS) {
			kill(e->pid, SIGKILL);
			waitpid(e->pid, &status, 0);
		}
		e->pid = 0;
	}
	if (e->dir[0])
		remove_dir(e->dir);
	e->dir[0] = '\0';
}

/* The value of the first "KEY: value" line of the kubeconfig, or NULL. */
static char *kubeconfig_value(const struct buf *kc, const char *key)
{
	const char *p = kc->ptr, *end;
	size_t klen = strlen(key);

	while (p && (p = strstr(p, key))) {
		if (p[klen] == ':' && p[klen + 1] == ' ') {
			p += klen + 2;
			end = strchr(p, '\n');
			if (!end)
				end = p + strlen(p);
			return strndup(p, (size_t)(end - p));
		}
		p += klen;
	}
	return NULL;
}

int test_emu_config(struct test_emu *e, struct kube_config *cfg)
{
	struct buf kc;
	char *ca64 = NULL;
	int error = -1;

	memset(cfg, 0, sizeof(*cfg));
	if (read_file(e->kubeconfig, &kc) < 0 || !kc.len) {
		fprintf(stderr, "test_emu_config: cannot read %s\n",
			e->kubeconfig);
		goto out;
	}
	cfg->source = strdup("test-emu");
	cfg->server = strdup(e->url);
	cfg->token = strdup(e->token);
	cfg->namespace = strdup("default");
	ca64 = kubeconfig_value(&kc, "certificate-authority-data");
	if (!cfg->source || !cfg->server || !cfg->token || !cfg->namespace ||
	    !ca64)
		goto out;
	if (base64_decode(&cfg->ca_pem, ca64, strlen(ca64), 0) < 0) {
		fprintf(stderr, "test_emu_config: bad CA data in %s\n",
			e->kubeconfig);
		goto out;
	}
	error = 0;
out:
	free(ca64);
	buf_release(&kc);
	return error;
}

/* One request to the emu's control endpoints with a throwaway client. */
static int emu_call(struct test_emu *e, const char *method, const char *path,
		    const char *body, struct kube_response *resp)
{
	struct kube_config cfg;
	struct kube_client *c = NULL;
	struct err err = ERR_INIT;
	int error = -1;

	if (test_emu_config(e, &cfg) < 0)
		goto out;
	if (kube_client_new(&c, &cfg, NULL, &err) < 0)
		goto out;
	if (kube_request(c, method, path, body ? "text/plain" : NULL, body,
			 body ? strlen(body) : 0, resp, &err) < 0)
		goto out;
	error = 0;
out:
	if (error)
		fprintf(stderr, "%s %s%s: %s\n", method, e->url, path,
			err_msg(&err));
	err_release(&err);
	kube_client_free(c);
	kube_config_release(&cfg);
	return error;
}

long test_emu_count(struct test_emu *e, const char *verb, const char *resource,
		    int code)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	json_t *reqs, *r;
	size_t i;
	long sum = -1;

	if (emu_call(e, "GET", "/emu/stats", NULL, &resp) < 0)
		goto out;
	reqs = json_object_get(resp.json, "requests");
	if (!json_is_array(reqs))
		goto out;
	sum = 0;
	json_array_foreach(reqs, i, r)
	{
		const char *v = json_string_value(json_object_get(r, "verb"));
		const char *res =
			json_string_value(json_object_get(r, "resource"));
		long c = (long)json_integer_value(json_object_get(r, "code"));

		if (verb && (!v || strcmp(v, verb) != 0))
			continue;
		if (resource && (!res || strcmp(res, resource) != 0))
			continue;
		if (code && c != code)
			continue;
		sum += (long)json_integer_value(json_object_get(r, "count"));
	}
out:
	kube_response_release(&resp);
	return sum;
}

int test_emu_reset_stats(struct test_emu *e)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	int error = emu_call(e, "DELETE", "/emu/stats", NULL, &resp);

	kube_response_release(&resp);
	return error;
}

int test_emu_faults(struct test_emu *e, const char *spec)
{
	struct kube_response resp = KUBE_RESPONSE_INIT;
	int error = emu_call(e, "POST", "/emu/faults", spec, &resp);

	kube_response_release(&resp);
	return error;
}
