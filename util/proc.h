/*
 * proc: run a child process the safe way, for renderers that call tools
 * (kustomize, helm, exec plugins) and for signature checks.
 *
 * - argv only: the program is executed directly (execvp), never through a
 *   shell, so nothing in argv is interpreted.
 * - The child gets its own process group; on timeout the whole group is
 *   killed (SIGKILL), so grandchildren do not outlive the call.
 * - stdout and stderr are read concurrently (no pipe deadlock) into buffers
 *   with caps. Output beyond the stdout cap kills the child and fails with
 *   ERR_LIMIT (a truncated manifest must never be applied); stderr beyond
 *   its cap is dropped (the first stderr_cap bytes are kept) and
 *   `err_truncated` is set.
 * - stdin is the given bytes, or /dev/null; every other fd above 2 is
 *   closed in the child but `inherit_fd`.
 * - The environment is exactly `env` when given (NULL-terminated "K=V"
 *   strings), else the parent's environment.
 * - argv[0] without a '/' is looked up in the caller's PATH (as execvpe()
 *   does: `env` does not change the lookup); empty and relative PATH
 *   entries are skipped, so a program committed to the repository in `cwd`
 *   is never picked up. argv[0] with a '/' is relative to `cwd`.
 * - When the call returns, the child's process group has been sent
 *   SIGKILL: nothing the child left running in it outlives the call. A
 *   background process that keeps stdout/stderr open after the child
 *   exits gets a short grace (100 ms), then is killed.
 * - Thread-safe. The caller must not reap our child behind our back
 *   (SIGCHLD set to SIG_IGN, waitpid(-1, ...) in another thread).
 */
#ifndef UTIL_PROC_H
#define UTIL_PROC_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"
#include "util/err.h"

#define PROC_OPTIONS_VERSION 1

struct proc_options {
	unsigned version;
	const char *cwd;          /* NULL: the caller's cwd */
	char *const *env;         /* NULL: inherit the parent's environment */
	unsigned timeout_ms;      /* 0: no timeout */
	size_t stdout_cap;        /* 0: PROC_DEFAULT_OUT_CAP */
	size_t stderr_cap;        /* 0: PROC_DEFAULT_ERR_CAP */
	const char *stdin_data;   /* NULL: stdin is /dev/null */
	size_t stdin_len;
	/*
	 * An fd (> 2) the child inherits under the same number, so that a
	 * path /proc/self/fd/N the caller made names it in the child too
	 * (a secret in a memfd, never on disk); its close-on-exec flag is
	 * cleared in the child only. 0: none (every fd above 2 is closed).
	 */
	int inherit_fd;
};

#define PROC_DEFAULT_OUT_CAP (64u << 20)
#define PROC_DEFAULT_ERR_CAP (64u << 10)

#define PROC_OPTIONS_INIT {PROC_OPTIONS_VERSION, NULL, NULL, 0, 0, 0, NULL, 0, 0}

struct proc_result {
	bool exited;          /* exited normally: exit_code is valid */
	int exit_code;
	bool signaled;        /* killed by a signal: term_signal is valid */
	int term_signal;
	bool timed_out;       /* we killed it at the timeout */
	bool err_truncated;   /* stderr exceeded its cap */
	struct buf out;       /* stdout */
	struct buf errout;    /* stderr */
	unsigned timeout_ms;  /* the timeout that expired, when timed_out */
};

#define PROC_RESULT_INIT \
	{false, 0, false, 0, false, false, BUF_INIT, BUF_INIT, 0}

/*
 * Run argv[0] (looked up in PATH when it has no '/') with argv, wait for it
 * and fill *res. Returns 0 when the child ran and ended on its own, whatever
 * its exit status (check res->exited / res->exit_code). Returns a negative
 * code and fills err when it could not be started (ERR_NOTFOUND for a
 * missing program, ERR_IO otherwise), timed out (ERR_TIMEOUT, res->timed_out
 * set) or its stdout exceeded the cap (ERR_LIMIT). The messages name
 * argv[0]. *res is filled in every case where the child ran; release it
 * with proc_result_release() (also after a failure). *res is overwritten
 * on entry: it need not be initialised, but a previous result must have
 * been released. After ERR_LIMIT, res->out holds the first stdout_cap
 * bytes, for diagnostics only.
 */
int proc_run(struct proc_result *res, const char *const *argv,
	     const struct proc_options *opts, struct err *err);

void proc_result_release(struct proc_result *res);

/*
 * Describe how the child ended, e.g. "exit status 2", "killed by signal 9",
 * "timed out after 5000 ms", into a static-free caller buffer.
 */
void proc_result_describe(const struct proc_result *res, char *out,
			  size_t outlen);

#endif
