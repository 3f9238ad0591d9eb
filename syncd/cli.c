#include "syncd/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/banned.h" /* last */

void cli_print_errors(const struct err *err)
{
	err_print(err, stderr, "error");
}

int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'syncd %s --help')\n", cmd->name);
	return EXIT_ERROR;
}

int cli_write_stdout(const char *data, size_t len)
{
	if ((len && fwrite(data, 1, len, stdout) != len) || fflush(stdout)) {
		fprintf(stderr, "error: writing output: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	return EXIT_OK;
}
