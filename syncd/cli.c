#include "syncd/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

int cli_client_option(struct kube_client_options *ko, const char *name,
		      const char *arg, struct err *err)
{
	char *end;
	double v;

	if (strcmp(name, "qps") && strcmp(name, "burst"))
		return 0;
	v = strtod(arg, &end);
	if (!*arg || *end || !(v > 0) || v > 1e6 ||
	    (!strcmp(name, "burst") && v != (double)(unsigned)v))
		return err_set(err, ERR_USAGE,
			       "--%s wants a positive %s, not \"%s\"", name,
			       strcmp(name, "qps") ? "integer" : "number", arg);
	if (!strcmp(name, "qps"))
		ko->qps = v;
	else
		ko->burst = (unsigned)v;
	return 1;
}
