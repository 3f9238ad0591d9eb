#include "tests/helpers/cases.h"

#include <stdio.h>
#include <stdlib.h>

struct criterion_test_params case_dirs(const char *dir,
				       int (*filter)(const struct dirent *))
{
	struct dirent **names;
	struct case_param *params;
	int n = scandir(dir, &names, filter, alphasort);

	if (n <= 0)
		return cr_make_param_array(struct case_param, NULL, 0, NULL);
	params = cr_malloc(sizeof(*params) * (size_t)n);
	for (int i = 0; i < n; i++) {
		snprintf(params[i].name, sizeof(params[i].name), "%s",
			 names[i]->d_name);
		free(names[i]);
	}
	free(names);
	return cr_make_param_array(struct case_param, params, (size_t)n, NULL);
}
