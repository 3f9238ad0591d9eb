/*
 * Drive kube-emu's handler from Criterion tests as an HTTP request would,
 * without a socket (shared by the tests/kube-emu/test_*.c files).
 */
#ifndef KUBE_EMU_TEST_CALL_H
#define KUBE_EMU_TEST_CALL_H

#include <stdbool.h>
#include <jansson.h>

#include "kube-emu/emu.h"

/* What a test may set beyond method, URL, content type and body. */
struct emu_test_options {
	const char *user_agent;	   /* NULL: kubectl 1.36's */
	const char *authorization; /* NULL: "Bearer T" */
	const char *accept;	   /* NULL: none */
	bool body_too_large;
};

/*
 * Answer `method` on `url` ("PATH?k=v&k=v", at most 8 parameters) into
 * *resp (caller storage, EMU_RESPONSE_INIT; release resp->body and free
 * resp->watch).
 */
void emu_test_request(struct emu_server *srv, const char *method,
		      const char *url, const char *ct, const char *body,
		      const struct emu_test_options *opts,
		      struct emu_response *resp);

/* The common case: the HTTP code, the body parsed into *out (or NULL). */
int emu_test_call(struct emu_server *srv, const char *method, const char *url,
		  const char *ct, const char *body, json_t **out);

#endif
