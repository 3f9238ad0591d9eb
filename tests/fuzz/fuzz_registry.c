/*
 * libFuzzer target for what a registry or a user hands the OCI client
 * (source/oci.c, source/fetch.c): an oci:// reference, a
 * WWW-Authenticate challenge, a Link header, an error body, and a URL to
 * redact, all from the same input. `make fuzz` builds and runs it.
 *
 * Besides the sanitizers, it checks: a refused input leaves exactly one
 * problem; a parsed reference has a non-empty host and name of bounded
 * length; a Bearer challenge has a realm; a redacted absolute URL holds
 * no "@" before its host's end, and no control character.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_problem(int rc, struct err *err)
{
	if ((rc < 0) != (err_count(err) == 1) || (rc == 0 && err_count(err)))
		abort();
	err_release(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct src_oci_challenge ch;
	struct src_oci_ref ref;
	struct buf b = BUF_INIT;
	struct err err = ERR_INIT;
	char *s = malloc(size + 1);
	int rc;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	rc = src_oci_parse_ref(&ref, s, &err);
	if (rc == 0 && (!ref.host[0] || !ref.name[0] ||
			strlen(ref.host) >= sizeof(ref.host) ||
			strlen(ref.name) >= sizeof(ref.name)))
		abort();
	one_problem(rc, &err);

	memset(&ch, 0, sizeof(ch));
	rc = src_oci_parse_challenge(&ch, s, &err);
	if (rc == 0 && ch.scheme == SRC_OCI_AUTH_BEARER && !ch.realm)
		abort();
	src_oci_challenge_release(&ch);
	one_problem(rc, &err);

	rc = src_oci_parse_link(&b, s, &err);
	one_problem(rc, &err);
	buf_release(&b);

	src_oci_error_excerpt(&b, s, size);
	buf_release(&b);

	if (src_url_redact(&b, s) == 0) {
		const char *u = buf_cstr(&b), *h = strstr(u, "://");

		for (const char *p = u; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				abort();
		/* An absolute URL (a scheme first) shows no user information;
		 * "://" in a path is no scheme, and shows as it is. */
		if (h && !memchr(u, '/', (size_t)(h - u)) &&
		    memchr(h + 3, '@', strcspn(h + 3, "/?#")))
			abort();
	}
	buf_release(&b);
	free(s);
	return 0;
}
