/*
 * proc: run a child process without a shell, with output caps, a deadline
 * and process-group cleanup.
 *
 * Outline of proc_run():
 *
 *  1. Everything the child needs is prepared in the parent: the list of
 *     paths to try for argv[0] (the PATH search), the pipes, /dev/null.
 *     Between fork() and exec the child calls only async-signal-safe
 *     functions (setpgid, dup2, close, chdir, sigaction, execve, write,
 *     _exit): in a multithreaded process a lock held by another thread at
 *     fork time (malloc's, stdio's) is never released in the child.
 *  2. The child reports a failure before exec (chdir, execve) through a
 *     CLOEXEC "report" pipe as {stage, errno}; a successful exec closes the
 *     pipe, so EOF on it means "the program runs".
 *  3. The parent runs one poll() loop over stdout, stderr, the report pipe,
 *     the stdin pipe (written non-blocking, so a child that never reads its
 *     stdin cannot block us) and, where the kernel has it, a pidfd that
 *     becomes readable when the child exits.
 *  4. Whatever happened, the child's process group is sent SIGKILL before
 *     the child is reaped. The child is only observed (WNOWAIT) until then:
 *     a zombie keeps its pid, so the process-group id cannot have been
 *     recycled by an unrelated group when we kill it.
 *
 * No global state: concurrent calls from several threads are independent.
 */
#include "util/proc.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/banned.h" /* last */

/* How long the pipes may stay open after the direct child has exited. */
#define EXIT_GRACE_MS 100

/* Poll period for the child's exit when the kernel offers no pidfd. */
#define EXIT_POLL_MS 20

#define READ_CHUNK  32768
#define WRITE_CHUNK 65536

/* Reads after the final SIGKILL, to collect what is already in a pipe. */
#define MAX_DRAIN_READS 64

/* The PATH searched when the variable is unset (glibc's _CS_PATH). */
#define DEFAULT_PATH "/bin:/usr/bin"

/* Highest fd closed one by one when the kernel lacks close_range(2). */
#define MAX_FALLBACK_FD 65536

enum stage {
	STAGE_SETUP = 1, /* setpgid or dup2 failed */
	STAGE_CHDIR,
	STAGE_EXEC,
};

/* What a child that failed before exec writes to the report pipe. */
struct child_report {
	int stage;
	int errnum;
};

/* Everything the child uses, built before fork(). */
struct spawn {
	char *const *argv;
	char *const *envp;
	char **paths; /* candidates for execve(), NULL-terminated */
	const char *cwd;
	int in_fd;  /* the child's ends; all >= 3 so that dup2() onto */
	int out_fd; /* 0, 1, 2 never overwrites one of them */
	int err_fd;
	int report_fd;
	int keep_fd; /* inherited under its number (> 2), or -1 */
	int max_fd;  /* for the close() loop fallback */
};

enum end {
	END_NONE, /* the child exited on its own */
	END_TIMEOUT,
	END_LIMIT,  /* stdout over its cap */
	END_FAILED, /* poll/read failed or out of memory: error is set */
};

/* The parent's side of one run. Closed fds are -1. */
struct run {
	const char *name;
	pid_t pid;
	int out_fd, err_fd, in_fd, report_fd, pidfd;
	const char *in_data;
	size_t in_len, in_off;
	struct child_report report;
	size_t report_len;
	bool exited;
	bool lost; /* the child was reaped behind our back (ECHILD) */
	enum end end;
	int error; /* with END_FAILED */
	struct proc_result *res;
	struct err *err;
};

static int64_t now_ms(void)
{
	return (int64_t)clk_mono_ms();
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

static void free_paths(char **paths)
{
	if (!paths)
		return;
	for (char **p = paths; *p; p++)
		free(*p);
	free(paths);
}

/*
 * The PATH search, done in the parent. A name with a '/' is used as is;
 * otherwise each absolute entry of the caller's PATH is tried in order (as
 * execvpe() does, the child's `env` does not change where the program is
 * looked up). Empty and relative entries, which mean "the current
 * directory", are skipped: the child runs in a checkout of a Git repository
 * and a `kustomize` committed there must never be what we execute.
 */
static char **build_paths(const char *name)
{
	const char *path, *p, *end;
	size_t n = 2, i = 0, name_len = strlen(name);
	char **paths;

	if (strchr(name, '/')) {
		if (!(paths = calloc(2, sizeof(*paths))))
			return NULL;
		if (!(paths[0] = strdup(name))) {
			free(paths);
			return NULL;
		}
		return paths;
	}
	path = getenv("PATH");
	if (!path)
		path = DEFAULT_PATH;
	for (p = path; *p; p++)
		n += *p == ':';
	if (!(paths = calloc(n, sizeof(*paths))))
		return NULL;
	for (p = path;; p = end + 1) {
		size_t len;

		end = strchrnul(p, ':');
		len = (size_t)(end - p);
		if (len && *p == '/') {
			char *s = malloc(len + 1 + name_len + 1);

			if (!s) {
				free_paths(paths);
				return NULL;
			}
			memcpy(s, p, len);
			s[len] = '/';
			memcpy(s + len + 1, name, name_len + 1);
			paths[i++] = s;
		}
		if (!*end)
			break;
	}
	return paths;
}

/* Move *fd to a number >= 3 (keeping CLOEXEC). */
static int move_above_stdio(int *fd)
{
	int nfd;

	if (*fd > 2)
		return 0;
	if ((nfd = fcntl(*fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return -1;
	close(*fd);
	*fd = nfd;
	return 0;
}

static int set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -1;
	return 0;
}

/* In the child: tell the parent what failed, then give up. */
__attribute__((noreturn)) static void child_fail(int fd, int stage, int errnum)
{
	struct child_report r;
	ssize_t n;

	r.stage = stage;
	r.errnum = errnum;
	do
		n = write(fd, &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	_exit(127);
}

/*
 * In the child: close every fd but 0, 1, 2, the report pipe (which is
 * CLOEXEC and goes away at exec) and the inherited one. Our own fds are
 * all CLOEXEC already; this is for fds other code in the process opened
 * without it.
 */
static void child_close_fds(const struct spawn *sp)
{
	int keep[2] = {sp->report_fd, sp->keep_fd}, fd;

	if (keep[1] >= 0 && keep[1] < keep[0]) {
		keep[0] = sp->keep_fd;
		keep[1] = sp->report_fd;
	}
#ifdef SYS_close_range
	{
		unsigned from = 3;
		bool done = true;

		for (int i = 0; i < 2; i++) {
			if (keep[i] < 0)
				continue;
			if ((unsigned)keep[i] > from &&
			    syscall(SYS_close_range, from,
				    (unsigned)keep[i] - 1, 0U) != 0)
				done = false;
			from = (unsigned)keep[i] + 1;
		}
		if (done && syscall(SYS_close_range, from, ~0U, 0U) == 0)
			return;
	}
#endif
	for (fd = 3; fd < sp->max_fd; fd++)
		if (fd != sp->report_fd && fd != sp->keep_fd)
			close(fd);
}

/*
 * The child, between fork() and exec: async-signal-safe calls only. All
 * signals are blocked on entry (the parent blocked them around fork()), so
 * none of the parent's handlers can run here; they are reset to the
 * default before the mask is cleared.
 */
__attribute__((noreturn)) static void child_exec(const struct spawn *sp)
{
	struct sigaction sa;
	sigset_t none;
	int errnum = ENOENT;
	bool eacces = false;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL); /* EINVAL for KILL, STOP: fine */

	if (setpgid(0, 0) < 0)
		child_fail(sp->report_fd, STAGE_SETUP, errno);
	if (dup2(sp->in_fd, 0) < 0 || dup2(sp->out_fd, 1) < 0 ||
	    dup2(sp->err_fd, 2) < 0)
		child_fail(sp->report_fd, STAGE_SETUP, errno);
	child_close_fds(sp);
	if (sp->keep_fd >= 0 && fcntl(sp->keep_fd, F_SETFD, 0) < 0)
		child_fail(sp->report_fd, STAGE_SETUP, errno);
	if (sp->cwd && chdir(sp->cwd) < 0)
		child_fail(sp->report_fd, STAGE_CHDIR, errno);

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	/* The PATH walk of execvpe(), with its rules for which errors end it.
	 */
	for (char **p = sp->paths; *p; p++) {
		execve(*p, sp->argv, sp->envp);
		errnum = errno;
		switch (errnum) {
		case EACCES:
			eacces = true;
			/* fall through */
		case ENOENT:
		case ENOTDIR:
		case ESTALE:
		case ENODEV:
		case ETIMEDOUT:
			continue;
		default:
			child_fail(sp->report_fd, STAGE_EXEC, errnum);
		}
	}
	child_fail(sp->report_fd, STAGE_EXEC, eacces ? EACCES : errnum);
}

/* Has the child exited? Leaves it a zombie (WNOWAIT): see the top. */
static bool child_exited(struct run *r)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOHANG | WNOWAIT) <
	       0) {
		if (errno != EINTR) {
			/* SIGCHLD ignored or another waiter: it is gone. */
			r->lost = true;
			return true;
		}
	}
	return si.si_pid != 0;
}

static void fail(struct run *r, int code, const char *what, int errnum)
{
	r->end = END_FAILED;
	if (code == ERR_NOMEM)
		r->error = err_set(r->err, code, "%s: out of memory while %s",
				   r->name, what);
	else
		r->error = err_set(r->err, code, "%s: %s: %s", r->name, what,
				   err_errno_str(errnum));
}

/*
 * Read once from *fd into b. On EOF the fd is closed. Over b's cap: with
 * `truncated`, keep the first cap bytes, set *truncated and go on reading
 * (and dropping); without, end the run with END_LIMIT.
 */
static void read_pipe(struct run *r, int *fd, struct buf *b, bool *truncated)
{
	char chunk[READ_CHUNK];
	size_t room;
	ssize_t n;

	do
		n = read(*fd, chunk, sizeof(chunk));
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			fail(r, ERR_IO, "reading output", errno);
		return;
	}
	if (n == 0) {
		close_fd(fd);
		return;
	}
	room = b->cap - b->len;
	if ((size_t)n > room) {
		if (buf_add(b, chunk, room) < 0) {
			fail(r, ERR_NOMEM, "reading output", 0);
			return;
		}
		if (truncated)
			*truncated = true;
		else
			r->end = END_LIMIT;
		return;
	}
	if (buf_add(b, chunk, (size_t)n) < 0)
		fail(r, ERR_NOMEM, "reading output", 0);
}

static void read_report(struct run *r)
{
	ssize_t n;

	if (r->report_len == sizeof(r->report)) {
		/* Nothing more is expected: just wait for the EOF. */
		char c;

		do
			n = read(r->report_fd, &c, 1);
		while (n < 0 && errno == EINTR);
	} else {
		do
			n = read(r->report_fd,
				 (char *)&r->report + r->report_len,
				 sizeof(r->report) - r->report_len);
		while (n < 0 && errno == EINTR);
		if (n > 0)
			r->report_len += (size_t)n;
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
		close_fd(&r->report_fd);
}

/*
 * Write the next piece of stdin. SIGPIPE (the child closed its stdin) is
 * blocked in this thread around the write and consumed if we raised it, so
 * the caller's process never sees it; a library must not change the
 * process-wide disposition. EPIPE then just ends the stdin feed.
 */
static void write_stdin(struct run *r)
{
	struct timespec zero = {0, 0};
	sigset_t pipe_set, old, pending;
	bool was_pending;
	size_t len = r->in_len - r->in_off;
	ssize_t n;
	int errnum;

	if (len > WRITE_CHUNK)
		len = WRITE_CHUNK;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE) == 1;
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	do
		n = write(r->in_fd, r->in_data + r->in_off, len);
	while (n < 0 && errno == EINTR);
	errnum = errno;
	if (n < 0 && errnum == EPIPE && !was_pending)
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 &&
		       errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	if (n > 0)
		r->in_off += (size_t)n;
	else if (n < 0 && errnum != EAGAIN && errnum != EWOULDBLOCK)
		r->in_off = r->in_len; /* EPIPE: the child wants no more */
	if (r->in_off == r->in_len)
		close_fd(&r->in_fd);
}

/* The poll loop: returns when the run has ended, r->end says why. */
static void supervise(struct run *r, unsigned timeout_ms)
{
	int64_t deadline = timeout_ms ? now_ms() + timeout_ms : 0;
	int64_t grace_end = 0;

	for (;;) {
		struct pollfd pfd[5];
		int64_t now, wait_ms = -1;
		int n = 0, i_out = -1, i_err = -1, i_rep = -1, i_in = -1;
		int ready;

		if (!r->exited && child_exited(r)) {
			r->exited = true;
			close_fd(&r->in_fd);
			close_fd(&r->pidfd);
			grace_end = now_ms() + EXIT_GRACE_MS;
			if (deadline && deadline < grace_end)
				grace_end = deadline;
		}
		if (r->exited && r->out_fd < 0 && r->err_fd < 0 &&
		    r->report_fd < 0)
			return;
		now = now_ms();
		/*
		 * The child ended on its own (so this is not a timeout) but
		 * something it started still holds a pipe open: stop waiting,
		 * the caller kills the group.
		 */
		if (r->exited) {
			if (now >= grace_end)
				return;
		} else if (deadline && now >= deadline) {
			r->end = END_TIMEOUT;
			return;
		}

		if (r->exited)
			wait_ms = grace_end - now;
		else if (deadline)
			wait_ms = deadline - now;
		if (!r->exited && r->pidfd < 0 &&
		    (wait_ms < 0 || wait_ms > EXIT_POLL_MS))
			wait_ms = EXIT_POLL_MS;
		if (wait_ms > INT_MAX)
			wait_ms = INT_MAX;

		if (r->out_fd >= 0) {
			i_out = n;
			pfd[n++] = (struct pollfd){r->out_fd, POLLIN, 0};
		}
		if (r->err_fd >= 0) {
			i_err = n;
			pfd[n++] = (struct pollfd){r->err_fd, POLLIN, 0};
		}
		if (r->report_fd >= 0) {
			i_rep = n;
			pfd[n++] = (struct pollfd){r->report_fd, POLLIN, 0};
		}
		if (r->in_fd >= 0) {
			i_in = n;
			pfd[n++] = (struct pollfd){r->in_fd, POLLOUT, 0};
		}
		if (r->pidfd >= 0)
			pfd[n++] = (struct pollfd){r->pidfd, POLLIN, 0};

		ready = poll(pfd, (nfds_t)n, (int)wait_ms);
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			fail(r, ERR_IO, "poll", errno);
			return;
		}
		if (ready == 0)
			continue;
		if (i_out >= 0 && pfd[i_out].revents)
			read_pipe(r, &r->out_fd, &r->res->out, NULL);
		if (r->end == END_NONE && i_err >= 0 && pfd[i_err].revents)
			read_pipe(r, &r->err_fd, &r->res->errout,
				  &r->res->err_truncated);
		if (r->end != END_NONE)
			return;
		if (i_rep >= 0 && pfd[i_rep].revents)
			read_report(r);
		if (i_in >= 0 && pfd[i_in].revents)
			write_stdin(r);
		/* A readable pidfd is picked up by child_exited() above. */
	}
}

/* After the final SIGKILL: collect what is already in the pipes. */
static void drain(struct run *r)
{
	if (r->report_fd >= 0)
		read_report(r);
	for (int i = 0; i < MAX_DRAIN_READS && r->end == END_NONE &&
			(r->out_fd >= 0 || r->err_fd >= 0);
	     i++) {
		size_t out_len = r->res->out.len, err_len = r->res->errout.len;

		if (r->out_fd >= 0)
			read_pipe(r, &r->out_fd, &r->res->out, NULL);
		if (r->end == END_NONE && r->err_fd >= 0)
			read_pipe(r, &r->err_fd, &r->res->errout,
				  &r->res->err_truncated);
		if (out_len == r->res->out.len && err_len == r->res->errout.len)
			break; /* EAGAIN or EOF on both */
	}
}

static int report_error(const struct run *r, const char *cwd)
{
	int e = r->report.errnum;

	switch (r->report.stage) {
	case STAGE_CHDIR:
		return err_set(r->err, ERR_IO, "%s: cannot chdir to %s: %s",
			       r->name, cwd, err_errno_str(e));
	case STAGE_EXEC:
		if (e == ENOENT || e == ENOTDIR)
			return err_set(r->err, ERR_NOTFOUND, "%s: not found%s",
				       r->name,
				       strchr(r->name, '/') ? "" : " in PATH");
		return err_set(r->err, ERR_IO, "%s: cannot execute: %s",
			       r->name, err_errno_str(e));
	default:
		return err_set(r->err, ERR_IO,
			       "%s: cannot set up the child process: %s",
			       r->name, err_errno_str(e));
	}
}

int proc_run(struct proc_result *res, const char *const *argv,
	     const struct proc_options *opts, struct err *err)
{
	static const struct proc_options defaults = PROC_OPTIONS_INIT;
	static const struct proc_result empty = PROC_RESULT_INIT;
	int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
	int in_pipe[2] = {-1, -1}, report_pipe[2] = {-1, -1};
	struct spawn sp = {0};
	struct run r = {0};
	sigset_t all, old;
	long open_max;
	int status = 0, error = 0, errnum;
	pid_t pid;

	if (!res)
		return err_set(err, ERR_INVALID, "proc_run: no result");
	*res = empty;
	if (!argv || !argv[0] || !argv[0][0])
		return err_set(err, ERR_INVALID, "proc_run: empty argv");
	if (!opts)
		opts = &defaults;
	if (opts->version != PROC_OPTIONS_VERSION)
		return err_set(err, ERR_INVALID,
			       "%s: unsupported proc_options version %u",
			       argv[0], opts->version);

	r.name = argv[0];
	r.res = res;
	r.err = err;
	r.out_fd = r.err_fd = r.in_fd = r.report_fd = r.pidfd = -1;
	res->out.cap =
		opts->stdout_cap ? opts->stdout_cap : PROC_DEFAULT_OUT_CAP;
	res->errout.cap =
		opts->stderr_cap ? opts->stderr_cap : PROC_DEFAULT_ERR_CAP;

	sp.argv = (char *const *)argv;
	sp.envp = opts->env ? opts->env : environ;
	sp.cwd = opts->cwd;
	sp.keep_fd = opts->inherit_fd > 2 ? opts->inherit_fd : -1;
	open_max = sysconf(_SC_OPEN_MAX);
	sp.max_fd = open_max > 0 && open_max < MAX_FALLBACK_FD
			    ? (int)open_max
			    : MAX_FALLBACK_FD;
	if (!(sp.paths = build_paths(r.name))) {
		error = err_set(err, ERR_NOMEM, "%s: out of memory", r.name);
		goto out;
	}

	if (pipe2(out_pipe, O_CLOEXEC) < 0 || pipe2(err_pipe, O_CLOEXEC) < 0 ||
	    pipe2(report_pipe, O_CLOEXEC) < 0) {
		error = err_set(err, ERR_IO, "%s: cannot create a pipe: %s",
				r.name, err_errno_str(errno));
		goto out;
	}
	if (opts->stdin_data && opts->stdin_len) {
		if (pipe2(in_pipe, O_CLOEXEC) < 0) {
			error = err_set(err, ERR_IO,
					"%s: cannot create a pipe: %s", r.name,
					err_errno_str(errno));
			goto out;
		}
	} else if ((in_pipe[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		error = err_set(err, ERR_IO, "%s: cannot open /dev/null: %s",
				r.name, err_errno_str(errno));
		goto out;
	}
	if (move_above_stdio(&in_pipe[0]) < 0 ||
	    move_above_stdio(&out_pipe[1]) < 0 ||
	    move_above_stdio(&err_pipe[1]) < 0 ||
	    move_above_stdio(&report_pipe[1]) < 0 ||
	    set_nonblock(out_pipe[0]) < 0 || set_nonblock(err_pipe[0]) < 0 ||
	    set_nonblock(report_pipe[0]) < 0 ||
	    (in_pipe[1] >= 0 && set_nonblock(in_pipe[1]) < 0)) {
		error = err_set(err, ERR_IO, "%s: cannot set up pipes: %s",
				r.name, err_errno_str(errno));
		goto out;
	}
	sp.in_fd = in_pipe[0];
	sp.out_fd = out_pipe[1];
	sp.err_fd = err_pipe[1];
	sp.report_fd = report_pipe[1];

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0)
		child_exec(&sp);
	errnum = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		error = err_set(err, ERR_IO, "%s: cannot fork: %s", r.name,
				err_errno_str(errnum));
		goto out;
	}
	/*
	 * Also done by the child; doing it here too means the group exists
	 * as soon as fork() returns, so an early kill(-pid) cannot miss it.
	 * EACCES once the child has exec'd: harmless.
	 */
	setpgid(pid, pid);

	r.pid = pid;
	close_fd(&in_pipe[0]);
	close_fd(&out_pipe[1]);
	close_fd(&err_pipe[1]);
	close_fd(&report_pipe[1]);
	r.out_fd = out_pipe[0];
	r.err_fd = err_pipe[0];
	r.report_fd = report_pipe[0];
	r.in_fd = in_pipe[1];
	out_pipe[0] = err_pipe[0] = report_pipe[0] = in_pipe[1] = -1;
	r.in_data = opts->stdin_data;
	r.in_len = opts->stdin_len;
#ifdef SYS_pidfd_open
	r.pidfd = (int)syscall(SYS_pidfd_open, pid, 0U);
	if (r.pidfd < 0)
		r.pidfd = -1; /* old kernel or seccomp: poll for the exit */
#endif

	supervise(&r, opts->timeout_ms);

	/*
	 * Kill the whole group, whatever happened: on timeout and over the
	 * cap that is the point; after a normal exit it removes anything the
	 * child left running in its group (such as a background process
	 * holding the pipes open). The child is still unreaped here.
	 */
	if (!r.lost) {
		kill(-pid, SIGKILL);
		/* In case it moved itself to another group. */
		if (!r.exited)
			kill(pid, SIGKILL);
	}
	if (r.end == END_NONE)
		drain(&r);
	close_fd(&r.out_fd);
	close_fd(&r.err_fd);
	close_fd(&r.report_fd);
	close_fd(&r.in_fd);
	close_fd(&r.pidfd);

	while (!r.lost && waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			r.lost = true;
			break;
		}
	}

	if (r.report_len == sizeof(r.report)) {
		/* The program never ran: no result to speak of. */
		proc_result_release(res);
		error = report_error(&r, opts->cwd);
		goto out;
	}
	if (r.lost) {
		error = err_set(err, ERR_IO,
				"%s: cannot get the exit status (was the child "
				"reaped elsewhere?)",
				r.name);
	} else if (WIFEXITED(status)) {
		res->exited = true;
		res->exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		res->signaled = true;
		res->term_signal = WTERMSIG(status);
	}
	switch (r.end) {
	case END_TIMEOUT:
		res->timed_out = true;
		res->timeout_ms = opts->timeout_ms;
		error = err_set(err, ERR_TIMEOUT, "%s: timed out after %u ms",
				r.name, opts->timeout_ms);
		break;
	case END_LIMIT:
		error = err_set(err, ERR_LIMIT, "%s: output exceeds %zu bytes",
				r.name, res->out.cap);
		break;
	case END_FAILED:
		error = r.error;
		break;
	case END_NONE:
		break;
	}
out:
	close_fd(&out_pipe[0]);
	close_fd(&out_pipe[1]);
	close_fd(&err_pipe[0]);
	close_fd(&err_pipe[1]);
	close_fd(&in_pipe[0]);
	close_fd(&in_pipe[1]);
	close_fd(&report_pipe[0]);
	close_fd(&report_pipe[1]);
	free_paths(sp.paths);
	return error;
}

void proc_result_release(struct proc_result *res)
{
	static const struct proc_result empty = PROC_RESULT_INIT;

	if (!res)
		return;
	buf_release(&res->out);
	buf_release(&res->errout);
	*res = empty;
}

void proc_result_describe(const struct proc_result *res, char *out,
			  size_t outlen)
{
	if (!out || !outlen)
		return;
	if (res && res->timed_out)
		snprintf(out, outlen, "timed out after %u ms", res->timeout_ms);
	else if (res && res->signaled)
		snprintf(out, outlen, "killed by signal %d", res->term_signal);
	else if (res && res->exited)
		snprintf(out, outlen, "exit status %d", res->exit_code);
	else
		snprintf(out, outlen, "did not run");
}
