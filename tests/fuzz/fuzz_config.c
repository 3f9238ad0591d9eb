/*
 * libFuzzer target for config_load() (controller/config.c): a syncd.yaml
 * of any bytes, written to a directory under $TMPDIR that is removed at
 * exit. `make fuzz` builds and runs it from tests/fuzz/corpus/fuzz_config.
 *
 * Besides the sanitizers, it checks the contract of config_load(): a
 * refused file leaves no config and problems, one line each, every line
 * naming the file ("FILE:LINE: key.path: cause"); a loaded file leaves
 * none, apps with distinct non-empty names, a config the same as itself
 * (config_same_globals, config_same_app), and loading it again gives the
 * same config.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/controller.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[4096], path[4200];

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/syncd-fuzz-config.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/syncd.yaml", dir);
	atexit(cleanup);
}

static void check_lines(const char *msg)
{
	size_t plen = strlen(path);

	while (*msg) {
		if (strncmp(msg, path, plen) || msg[plen] != ':')
			abort();
		msg = strchr(msg, '\n');
		if (!msg)
			break;
		msg++;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *cfg = NULL, *again = NULL;
	struct err err = ERR_INIT;
	FILE *f;
	size_t i, j;
	int rc;

	if (!dir[0])
		setup();
	if (!(f = fopen(path, "wb")) || fwrite(data, 1, size, f) != size ||
	    fclose(f))
		abort();

	rc = config_load(&cfg, path, &err);
	if (rc < 0) {
		if (cfg || !err_count(&err))
			abort();
		if (err.code != ERR_NOMEM)
			check_lines(err_msg(&err));
		goto out;
	}
	if (!cfg || err_count(&err) || !config_same_globals(cfg, cfg))
		abort();
	for (i = 0; i < cfg->napps; i++) {
		if (!cfg->apps[i].name || !cfg->apps[i].name[0] ||
		    !config_same_app(&cfg->apps[i], &cfg->apps[i]))
			abort();
		for (j = 0; j < i; j++)
			if (!strcmp(cfg->apps[i].name, cfg->apps[j].name))
				abort();
	}
	if (config_load(&again, path, &err) < 0 ||
	    !config_same_globals(cfg, again) || again->napps != cfg->napps)
		abort();
	for (i = 0; i < cfg->napps; i++)
		if (!config_same_app(&cfg->apps[i], &again->apps[i]))
			abort();
out:
	config_free(cfg);
	config_free(again);
	err_release(&err);
	return 0;
}
