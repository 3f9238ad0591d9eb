/*
 * libFuzzer target for the semantic versions and ranges of source/semver.c
 * (Helm's and Flux's ranges): the first line of the input is a range, the
 * others versions. `make fuzz` builds and runs it.
 *
 * Besides the sanitizers, it checks: a parse error leaves exactly one
 * problem; comparison is antisymmetric and reflexive; the newest match
 * src_semver_newest() picks matches the range and no matching version
 * is newer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/internal.h"

#define MAX_VERSIONS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct src_semver_range *r = NULL;
	struct src_semver v[MAX_VERSIONS];
	const char *names[MAX_VERSIONS];
	struct err err = ERR_INIT;
	char *text = malloc(size + 1), *line, *save = NULL;
	size_t n = 0;
	long pick;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	line = strtok_r(text, "\n", &save);
	if (!line)
		goto out;
	if (src_semver_range_parse(&r, line, &err) < 0) {
		if (err_count(&err) != 1 || r)
			abort();
		goto out;
	}
	while (n < MAX_VERSIONS && (line = strtok_r(NULL, "\n", &save))) {
		struct err e = ERR_INIT;

		if (src_semver_parse(&v[n], line, &e) == 0)
			names[n++] = line;
		else if (err_count(&e) != 1)
			abort();
		err_release(&e);
	}
	for (size_t i = 0; i < n; i++) {
		if (src_semver_cmp(&v[i], &v[i]))
			abort();
		for (size_t j = 0; j < n; j++) {
			int a = src_semver_cmp(&v[i], &v[j]);
			int b = src_semver_cmp(&v[j], &v[i]);

			if ((a > 0) != (b < 0) || (a == 0) != (b == 0))
				abort();
		}
	}
	pick = src_semver_newest(r, names, n);
	if (pick >= 0 && !src_semver_range_match(r, &v[pick]))
		abort();
	for (size_t i = 0; i < n; i++) {
		bool m = src_semver_range_match(r, &v[i]);

		if (m && pick < 0)
			abort();
		if (m && src_semver_cmp(&v[i], &v[pick]) > 0)
			abort();
	}
out:
	src_semver_range_free(r);
	err_release(&err);
	free(text);
	return 0;
}
