/*
 * libFuzzer target for kube_config_load() (kube/config.c): one kubeconfig
 * file, or two merged as $KUBECONFIG merges them, of any bytes, written to
 * a directory under $TMPDIR that is removed at exit. Nothing is run (exec
 * plugins are only read). `make fuzz` builds and runs it from
 * tests/fuzz/corpus/fuzz_kubeconfig.
 *
 * Input: the first file; with a NUL byte, what follows is a second file
 * and both are loaded through KUBECONFIG=first:second.
 *
 * Besides the sanitizers, it checks: a refused config leaves problems,
 * the first naming the file; a loaded one has an http(s) server without
 * a trailing '/', a namespace, a context and its source; and loading the
 * same files again gives the same server, namespace and context.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[4096], first[4200], second[4200];

static void cleanup(void)
{
	unlink(first);
	unlink(second);
	rmdir(dir);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/syncd-fuzz-kubeconfig.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		abort();
	snprintf(first, sizeof(first), "%s/config", dir);
	snprintf(second, sizeof(second), "%s/second", dir);
	atexit(cleanup);
	/* Never the pod's config, never the user's. */
	unsetenv("KUBERNETES_SERVICE_HOST");
	setenv("HOME", dir, 1);
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, size, f) != size || fclose(f))
		abort();
}

static bool str_same(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_config_options opts = {0};
	struct kube_config cfg, again;
	struct err err = ERR_INIT;
	const uint8_t *nul;
	char list[8500];
	size_t n;
	int rc;

	if (!dir[0])
		setup();
	nul = memchr(data, '\0', size);
	write_file(first, data, nul ? (size_t)(nul - data) : size);
	if (nul) {
		write_file(second, nul + 1, size - (size_t)(nul + 1 - data));
		snprintf(list, sizeof(list), "%s:%s", first, second);
		setenv("KUBECONFIG", list, 1);
	} else {
		unsetenv("KUBECONFIG");
		opts.kubeconfig = first;
	}

	rc = kube_config_load(&cfg, &opts, &err);
	if (rc < 0) {
		if (!err_count(&err) ||
		    (err.code != ERR_NOMEM && !strstr(err_first(&err), dir)))
			abort();
		goto out;
	}
	if (err_count(&err) || !cfg.server || !cfg.namespace ||
	    !cfg.namespace[0] || !cfg.context || !cfg.source ||
	    (strncmp(cfg.server, "https://", 8) &&
	     strncmp(cfg.server, "http://", 7)))
		abort();
	n = strlen(cfg.server);
	if (cfg.server[n - 1] == '/')
		abort();
	if (kube_config_load(&again, &opts, &err) < 0 ||
	    !str_same(cfg.server, again.server) ||
	    !str_same(cfg.namespace, again.namespace) ||
	    !str_same(cfg.context, again.context))
		abort();
	kube_config_release(&again);
out:
	kube_config_release(&cfg);
	err_release(&err);
	return 0;
}
