/*
 * A real kube-emu process for a unit test: started on a free loopback
 * port with TLS and a bearer token, stopped (and its temporary folder
 * removed) at the end of the test.
 *
 * The binary is $BUILD/kube-emu (BUILD from the environment, default
 * "build"), relative to the current directory: tests run from the
 * repository root, as tests/run.sh runs them.
 *
 *	struct test_emu emu;
 *	struct kube_config cfg;
 *
 *	cr_assert_eq(test_emu_start(&emu, NULL), 0);
 *	cr_assert_eq(test_emu_config(&emu, &cfg), 0);
 *	... kube_client_new(&c, &cfg, NULL, &err) ...
 *	kube_config_release(&cfg);
 *	test_emu_stop(&emu);
 */
#ifndef TESTS_HELPERS_EMU_H
#define TESTS_HELPERS_EMU_H

#include <sys/types.h>

#include "kube/kube.h"

#define TEST_EMU_TOKEN "test-token"

struct test_emu {
	pid_t pid;	      /* 0 when not running */
	char url[64];	      /* "https://127.0.0.1:PORT" */
	char kubeconfig[256]; /* DIR/kubeconfig, written by kube-emu */
	char dir[256];	      /* private temporary folder */
	const char *token;    /* TEST_EMU_TOKEN */
};

/*
 * Start `$BUILD/kube-emu --listen 127.0.0.1:0 --tls --token test-token
 * --kubeconfig-out DIR/kubeconfig` plus `extra_args` (NULL-terminated,
 * may be NULL) in a fresh temporary folder; wait (10 s at most) for its
 * "listening on" line and for /readyz. Returns 0, or -1 (with the reason
 * and kube-emu's stderr on our stderr) after cleaning up. `e` is caller
 * storage.
 */
int test_emu_start(struct test_emu *e, const char *const *extra_args);

/* SIGTERM, wait for the exit, remove the folder. Accepts a stopped emu. */
void test_emu_stop(struct test_emu *e);

/*
 * Fill `cfg` (caller storage, overwritten) for this emu without
 * kube_config_load(): server, the CA PEM from the kubeconfig's
 * certificate-authority-data, the token, namespace "default". Release
 * with kube_config_release().
 */
int test_emu_config(struct test_emu *e, struct kube_config *cfg);

/*
 * The sum of the /emu/stats counts matching verb ("get", "list", ...),
 * resource ("configmaps", "deployments.apps") and HTTP code; NULL or 0
 * matches anything. -1 when the stats could not be read.
 */
long test_emu_count(struct test_emu *e, const char *verb, const char *resource,
		    int code);

/* Reset the /emu/stats counters. 0 or -1. */
int test_emu_reset_stats(struct test_emu *e);

/* POST a fault SPEC to /emu/faults (see kube-emu/README.md). 0 or -1. */
int test_emu_faults(struct test_emu *e, const char *spec);

#endif
