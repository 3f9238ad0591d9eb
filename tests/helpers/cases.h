/*
 * Shared by the data-driven Criterion suites: one parameterized test per
 * case folder.
 */
#ifndef TESTS_HELPERS_CASES_H
#define TESTS_HELPERS_CASES_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <jansson.h>

struct case_param {
	char name[256];
};

/*
 * The entries of `dir` that `filter` keeps, sorted, as Criterion
 * parameters (struct case_param); none when the folder cannot be read.
 */
struct criterion_test_params case_dirs(const char *dir,
				       int (*filter)(const struct dirent *));

/* Keeps the names ending in ".json" (for case_dirs()). */
int case_json_files(const struct dirent *d);

/*
 * Remove what JSON pointer `ptr` (RFC 6901: "/spec/ports/0/nodePort")
 * names in v; nothing when it is absent.
 */
void case_pointer_remove(json_t *v, const char *ptr);

#endif
