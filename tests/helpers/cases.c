#include "tests/helpers/cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int case_json_files(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 5 && !strcmp(d->d_name + n - 5, ".json");
}

void case_pointer_remove(json_t *v, const char *ptr)
{
	char tok[256];
	const char *p = ptr, *end;
	size_t n, i, o;

	while (*p == '/' && v) {
		p++;
		end = strchr(p, '/');
		n = end ? (size_t)(end - p) : strlen(p);
		cr_assert_lt(n, sizeof(tok), "pointer %s", ptr);
		for (i = o = 0; i < n; i++) {
			if (p[i] == '~' && i + 1 < n)
				tok[o++] = p[++i] == '1' ? '/' : '~';
			else
				tok[o++] = p[i];
		}
		tok[o] = '\0';
		if (!end) {
			if (json_is_object(v))
				json_object_del(v, tok);
			else if (json_is_array(v))
				json_array_remove(v, strtoul(tok, NULL, 10));
			return;
		}
		v = json_is_array(v) ? json_array_get(v, strtoul(tok, NULL, 10))
				     : json_object_get(v, tok);
		p = end;
	}
}
