/*
 * strvec: a growable, NULL-terminated vector of owned strings (argv,
 * envp, flag lists).
 */
#ifndef UTIL_STRVEC_H
#define UTIL_STRVEC_H

#include <stdbool.h>
#include <stddef.h>

struct strvec {
	char **v; /* NULL until the first push; then NULL-terminated */
	size_t len;
	size_t alloc;
};

#define STRVEC_INIT {NULL, 0, 0}

/* Append a copy of s. 0, or ERR_NOMEM (sv unchanged). */
int strvec_push(struct strvec *sv, const char *s);

/* Whether some element equals s. */
bool strvec_has(const struct strvec *sv, const char *s);

/* Free every element and the vector; sv is empty again. NULL: nothing. */
void strvec_release(struct strvec *sv);

#endif
