/*
 * syncd: keep a Kubernetes cluster equal to a Git repository.
 */
#include <stdio.h>
#include <string.h>

#include "syncd/cli.h"

#include "util/banned.h" /* last */

static const struct cli_command *const commands[] = {
	&cli_render_command,
	&cli_diff_command,
	&cli_sync_command,
	&cli_run_command,
	&cli_status_command,
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_help(FILE *f)
{
	fputs("usage: syncd COMMAND [ARGS]\n"
	      "\n"
	      "syncd keeps a Kubernetes cluster equal to what a Git repository "
	      "says,\nand tells you, field by field, where it is not and who "
	      "changed it.\n\nCommands:\n",
	      f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i]->name,
			commands[i]->summary);
	fprintf(f, "  %-10s %s\n", "version", "print the version");
	fputs("\nRun 'syncd COMMAND --help' for a command's options.\n", f);
}

int main(int argc, char **argv)
{
	const char *name;

	if (argc < 2) {
		print_help(stderr);
		return EXIT_ERROR;
	}
	name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h") ||
	    !strcmp(name, "help")) {
		print_help(stdout);
		return EXIT_OK;
	}
	if (!strcmp(name, "version") || !strcmp(name, "--version")) {
		printf("syncd %s\n", SYNCD_VERSION);
		return EXIT_OK;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(name, commands[i]->name))
			return commands[i]->run(argc - 1, argv + 1);
	fprintf(stderr, "error: unknown command \"%s\" (see 'syncd --help')\n",
		name);
	return EXIT_ERROR;
}
