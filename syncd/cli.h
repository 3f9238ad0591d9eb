/*
 * The command-line tool: one entry per subcommand (as tmux does), each in
 * its own cmd_*.c file.
 *
 * Exit codes of one-shot commands follow kubectl: 0 success, 1 a result
 * the caller asked about (drift, failed objects), 2 could not run.
 */
#ifndef SYNCD_CLI_H
#define SYNCD_CLI_H

#include "kube/kube.h"
#include "util/err.h"

enum {
	EXIT_OK = 0,
	EXIT_RESULT = 1,
	EXIT_ERROR = 2,
};

struct cli_command {
	const char *name;
	const char *summary;   /* one line for `syncd --help` */
	const char *usage;     /* full text for `syncd CMD --help` */
	int (*run)(int argc, char **argv);
};

extern const struct cli_command cli_render_command;
extern const struct cli_command cli_diff_command;
extern const struct cli_command cli_sync_command;
extern const struct cli_command cli_run_command;
extern const struct cli_command cli_status_command;

/* Print every problem in `err` to stderr as "error: ...", one per line. */
void cli_print_errors(const struct err *err);

/* Print "error: <msg>" and a hint to use --help; returns EXIT_ERROR. */
int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Write all of `data` to stdout and flush; EXIT_ERROR with a message when
 * stdout fails (a full disk or a closed pipe must not look like success).
 */
int cli_write_stdout(const char *data, size_t len);

/*
 * --qps and --burst into *ko: 1 when `name` was one of them, 0 when not,
 * ERR_USAGE for a bad value.
 */
int cli_client_option(struct kube_client_options *ko, const char *name,
		      const char *arg, struct err *err);

#endif
