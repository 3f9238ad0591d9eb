/*
 * The pure parts of the registry client: references, WWW-Authenticate
 * challenges, Link headers, error excerpts and URL redaction. The
 * client against a registry is in test_oci_live.c.
 */
#include <criterion/criterion.h>

#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "source/internal.h"

/* ---- references ---------------------------------------------------- */

struct ref_case {
	const char *ref;
	const char *host; /* NULL: refused */
	const char *name;
	const char *msg; /* part of the message when refused */
};

static const struct ref_case ref_cases[] = {
	{"oci://ghcr.io/stefanprodan/charts/podinfo", "ghcr.io",
	 "stefanprodan/charts/podinfo", NULL},
	{"oci://localhost:5000/x", "localhost:5000", "x", NULL},
	{"oci://Registry.Example/a", "registry.example", "a", NULL},
	{"oci://[::1]:5000/a/b", "[::1]:5000", "a/b", NULL},
	{"oci://r.example/a.b_c__d---e/f0", "r.example", "a.b_c__d---e/f0",
	 NULL},
	{"https://r.example/a", NULL, NULL, "not an OCI reference"},
	{"oci://user:secret@r.example/a", NULL, NULL,
	 "user information in the reference is not accepted"},
	{"oci://r.example/a?x=1", NULL, NULL, "query or fragment"},
	{"oci://r.example/a#x", NULL, NULL, "query or fragment"},
	{"oci://r.example/podinfo:6.5.0", NULL, NULL,
	 "a tag in the reference is not accepted"},
	{"oci://r.example/podinfo@sha256:abc", NULL, NULL,
	 "a digest in the reference is not accepted"},
	{"oci://r.example/Podinfo", NULL, NULL, "lower case"},
	{"oci:///a", NULL, NULL, "no registry host"},
	{"oci://r.example", NULL, NULL, "no repository name"},
	{"oci://r.example/", NULL, NULL, "no repository name"},
	{"oci://r.example:0/a", NULL, NULL, "invalid port"},
	{"oci://r.example:65536/a", NULL, NULL, "invalid port"},
	{"oci://r.example:/a", NULL, NULL, "invalid port"},
	{"oci://r_x.example/a", NULL, NULL, "invalid registry host"},
	{"oci://r.example/a//b", NULL, NULL, "invalid repository name"},
	{"oci://r.example/a/", NULL, NULL, "invalid repository name"},
	{"oci://r.example/-a", NULL, NULL, "invalid repository name"},
	{"oci://r.example/a..b", NULL, NULL, "invalid repository name"},
	{"oci://r.example/a___b", NULL, NULL, "invalid repository name"},
	{"oci://r.example/a.", NULL, NULL, "invalid repository name"},
};

Test(oci_ref, references_are_split_or_refused_with_the_rule_they_break)
{
	size_t i;

	for (i = 0; i < sizeof(ref_cases) / sizeof(ref_cases[0]); i++) {
		const struct ref_case *c = &ref_cases[i];
		struct src_oci_ref r;
		struct err e = ERR_INIT;
		int rc = src_oci_parse_ref(&r, c->ref, &e);

		if (c->host) {
			cr_expect_eq(rc, 0, "%s: %s", c->ref, err_msg(&e));
			cr_expect_str_eq(r.host, c->host, "%s", c->ref);
			cr_expect_str_eq(r.name, c->name, "%s", c->ref);
		} else {
			cr_expect_eq(rc, ERR_INVALID, "%s: %d", c->ref, rc);
			cr_expect(strstr(err_msg(&e), c->msg), "%s: message %s",
				  c->ref, err_msg(&e));
		}
		err_release(&e);
	}
}

Test(oci_ref, a_password_in_the_reference_never_reaches_the_message)
{
	struct src_oci_ref r;
	struct err e = ERR_INIT;

	cr_assert_eq(src_oci_parse_ref(&r, "oci://u:hunter2@r.example/a", &e),
		     ERR_INVALID);
	cr_expect_null(strstr(err_msg(&e), "hunter2"), "%s", err_msg(&e));
	cr_expect_null(strstr(err_msg(&e), "u:"), "%s", err_msg(&e));
	cr_expect(strstr(err_msg(&e), "oci://r.example/a"), "%s", err_msg(&e));
	err_release(&e);
}

Test(oci_ref, host_and_name_over_255_bytes_are_refused)
{
	char ref[400], name[300];
	struct src_oci_ref r;
	struct err e = ERR_INIT;

	memset(name, 'a', 250);
	name[250] = '\0';
	snprintf(ref, sizeof(ref), "oci://r.example/%s", name);
	cr_assert_eq(src_oci_parse_ref(&r, ref, &e), ERR_INVALID);
	cr_expect(strstr(err_msg(&e), "longer than 255"), "%s", err_msg(&e));
	err_release(&e);
	name[240] = '\0';
	snprintf(ref, sizeof(ref), "oci://r.example/%s", name);
	cr_expect_eq(src_oci_parse_ref(&r, ref, NULL), 0);
}

/* ---- WWW-Authenticate ---------------------------------------------- */

Test(oci_challenge, a_bearer_challenge_gives_realm_service_and_scope)
{
	struct src_oci_challenge ch = SRC_OCI_CHALLENGE_INIT;
	struct err e = ERR_INIT;

	cr_assert_eq(src_oci_parse_challenge(
			     &ch,
			     "Bearer realm=\"https://auth.example/token\","
			     "service=\"registry.example\",scope=\"repository:"
			     "a/b:pull\"",
			     &e),
		     0, "%s", err_msg(&e));
	cr_expect_eq(ch.scheme, SRC_OCI_AUTH_BEARER);
	cr_expect_str_eq(ch.realm, "https://auth.example/token");
	cr_expect_str_eq(ch.service, "registry.example");
	cr_expect_str_eq(ch.scope, "repository:a/b:pull");
	src_oci_challenge_release(&ch);
	err_release(&e);
}

Test(oci_challenge, quoted_strings_undo_escapes_and_keep_commas)
{
	struct src_oci_challenge ch = SRC_OCI_CHALLENGE_INIT;

	cr_assert_eq(src_oci_parse_challenge(
			     &ch,
			     "bearer  Realm = \"https://a/t?x=1,y=\\\"2\\\"\" ,"
			     " SCOPE=\"repository:a:pull,push\" , error="
			     "insufficient_scope",
			     NULL),
		     0);
	cr_expect_str_eq(ch.realm, "https://a/t?x=1,y=\"2\"");
	cr_expect_str_eq(ch.scope, "repository:a:pull,push");
	cr_expect_null(ch.service);
	src_oci_challenge_release(&ch);
}

Test(oci_challenge, bearer_wins_over_basic_in_one_header)
{
	struct src_oci_challenge ch = SRC_OCI_CHALLENGE_INIT;

	cr_assert_eq(src_oci_parse_challenge(
			     &ch,
			     "Basic realm=\"basic\", Negotiate abc==, Bearer "
			     "realm=tok,service=s",
			     NULL),
		     0);
	cr_expect_eq(ch.scheme, SRC_OCI_AUTH_BEARER);
	cr_expect_str_eq(ch.realm, "tok");
	cr_expect_str_eq(ch.service, "s");
	src_oci_challenge_release(&ch);

	cr_assert_eq(
		src_oci_parse_challenge(&ch, "Basic realm=\"Registry\"", NULL),
		0);
	cr_expect_eq(ch.scheme, SRC_OCI_AUTH_BASIC);
	cr_expect_str_eq(ch.realm, "Registry");
	src_oci_challenge_release(&ch);
}

struct bad_challenge {
	const char *value;
	int code;
	const char *msg;
};

static const struct bad_challenge bad_challenges[] = {
	{"Bearer realm=\"https://a/t", ERR_PARSE, "unterminated"},
	{"realm=\"x\"", ERR_PARSE, "before any authentication scheme"},
	{"Bearer realm=\"a\" service=\"b\"", ERR_PARSE, "expected ','"},
	{"Bearer realm=\"a\x01\"", ERR_PARSE, "control character"},
	{"Negotiate abc==", ERR_INVALID, "neither a Bearer nor a Basic"},
	{"Bearer service=\"x\"", ERR_INVALID, "without realm"},
	{"", ERR_INVALID, "neither"},
	{"Bearer realm=\"a\", @", ERR_PARSE, "unexpected character"},
};

Test(oci_challenge, malformed_or_unusable_challenges_are_refused)
{
	size_t i;

	for (i = 0; i < sizeof(bad_challenges) / sizeof(bad_challenges[0]);
	     i++) {
		const struct bad_challenge *c = &bad_challenges[i];
		struct src_oci_challenge ch = SRC_OCI_CHALLENGE_INIT;
		struct err e = ERR_INIT;

		cr_expect_eq(src_oci_parse_challenge(&ch, c->value, &e),
			     c->code, "%s: %s", c->value, err_msg(&e));
		cr_expect(strstr(err_msg(&e), c->msg), "%s: %s", c->value,
			  err_msg(&e));
		src_oci_challenge_release(&ch);
		err_release(&e);
	}
}

Test(oci_challenge, a_value_over_the_header_bound_is_refused)
{
	struct src_oci_challenge ch = SRC_OCI_CHALLENGE_INIT;
	size_t n = SRC_HTTP_HEADER_MAX + 100;
	char *v = malloc(n + 32);
	struct err e = ERR_INIT;

	cr_assert_not_null(v);
	memcpy(v, "Bearer realm=\"", 14);
	memset(v + 14, 'a', n);
	memcpy(v + 14 + n, "\"", 2);
	cr_expect_eq(src_oci_parse_challenge(&ch, v, &e), ERR_PARSE);
	cr_expect(strstr(err_msg(&e), "longer than"), "%s", err_msg(&e));
	src_oci_challenge_release(&ch);
	err_release(&e);
	free(v);
}

/* ---- Link ---------------------------------------------------------- */

struct link_case {
	const char *value;
	const char *next; /* "" when none; NULL: ERR_PARSE */
};

static const struct link_case link_cases[] = {
	{"</v2/a/tags/list?n=2&last=b>; rel=\"next\"",
	 "/v2/a/tags/list?n=2&last=b"},
	{"<https://r/v2/a/tags/list?last=x>;rel=next",
	 "https://r/v2/a/tags/list?last=x"},
	{"</first>; rel=\"prev\", </second>; type=\"a;b\"; rel=\"last next\"",
	 "/second"},
	{"</p>; rel=\"prev\"", ""},
	{"", ""},
	{"</p>; REL=NEXT", "/p"},
	{"</p>; relation=next", ""},
	{"/p; rel=next", NULL},
	{"</p; rel=next", NULL},
	{"</p q>; rel=next", NULL},
	{"</p>; rel=\"next", NULL},
	{"</p> junk", NULL},
};

Test(oci_link, the_next_link_is_found_among_others)
{
	size_t i;

	for (i = 0; i < sizeof(link_cases) / sizeof(link_cases[0]); i++) {
		const struct link_case *c = &link_cases[i];
		struct buf out = BUF_INIT;
		struct err e = ERR_INIT;
		int rc = src_oci_parse_link(&out, c->value, &e);

		if (c->next) {
			cr_expect_eq(rc, 0, "%s: %s", c->value, err_msg(&e));
			cr_expect_str_eq(buf_cstr(&out), c->next, "%s",
					 c->value);
		} else {
			cr_expect_eq(rc, ERR_PARSE, "%s: %d", c->value, rc);
		}
		buf_release(&out);
		err_release(&e);
	}
}

/* ---- error excerpts ------------------------------------------------ */

Test(oci_excerpt, the_first_message_is_kept_short_and_on_one_line)
{
	static const char body[] = "{\"errors\":[{\"code\":\"DENIED\","
				   "\"message\":\"no\\nway\\u0007"
				   "\"},{\"message\":\"second\"}]}";
	struct buf out = BUF_INIT;
	char big[1000];
	size_t n;

	src_oci_error_excerpt(&out, body, strlen(body));
	cr_expect_str_eq(buf_cstr(&out), "no way ");
	buf_reset(&out);

	src_oci_error_excerpt(&out, "{\"errors\":[{\"code\":\"UNKNOWN\"}]}",
			      31);
	cr_expect_str_eq(buf_cstr(&out), "UNKNOWN");
	buf_reset(&out);

	n = (size_t)snprintf(big, sizeof(big), "{\"errors\":[{\"message\":\"");
	memset(big + n, 'x', 500);
	n += 500;
	n += (size_t)snprintf(big + n, sizeof(big) - n, "\"}]}");
	src_oci_error_excerpt(&out, big, n);
	cr_expect_eq(out.len, 203, "%zu", out.len);
	cr_expect_str_eq(buf_cstr(&out) + 200, "...");
	buf_reset(&out);

	src_oci_error_excerpt(&out, "<html>oops</html>", 17);
	src_oci_error_excerpt(&out, "{\"errors\":[]}", 13);
	src_oci_error_excerpt(&out, "{\"errors\":[{\"message\":5}]}", 26);
	cr_expect_eq(out.len, 0);
	buf_release(&out);
}

/* ---- URLs ---------------------------------------------------------- */

struct redact_case {
	const char *url, *want;
};

static const struct redact_case redact_cases[] = {
	{"https://user@host/x?y", "https://host/x"},
	{"https://user:tok@en@host:8443/v2/a?token=s#f",
	 "https://host:8443/v2/a"},
	{"http://host", "http://host"},
	{"oci://u:p@r.example/a/b", "oci://r.example/a/b"},
	{"host/path?q", "host/path"},
	{"https://host/a\nb", "https://host/a?b"},
	{"https://host/@x", "https://host/@x"},
	{"", ""},
};

Test(url, redaction_drops_user_information_query_and_fragment)
{
	size_t i;

	for (i = 0; i < sizeof(redact_cases) / sizeof(redact_cases[0]); i++) {
		struct buf out = BUF_INIT;

		cr_assert_eq(src_url_redact(&out, redact_cases[i].url), 0);
		cr_expect_str_eq(buf_cstr(&out), redact_cases[i].want, "%s",
				 redact_cases[i].url);
		buf_release(&out);
	}
}

Test(url, redaction_appends_and_cuts_long_urls)
{
	struct buf out = BUF_INIT;
	char url[2000];

	buf_adds(&out, "see ");
	memcpy(url, "https://h/", 10);
	memset(url + 10, 'p', 1500);
	url[1510] = '\0';
	cr_assert_eq(src_url_redact(&out, url), 0);
	cr_expect_eq(out.len, 4 + 512 + 3);
	cr_expect(!strncmp(out.ptr, "see https://h/ppp", 17));
	cr_expect_str_eq(out.ptr + out.len - 3, "...");
	buf_release(&out);
}

Test(url, same_origin_compares_scheme_host_and_port)
{
	cr_expect(src_url_same_origin("https://r.example/a",
				      "https://R.EXAMPLE:443/b?c"));
	cr_expect(src_url_same_origin("http://127.0.0.1:5000/a",
				      "http://127.0.0.1:5000/_blob/x"));
	cr_expect(!src_url_same_origin("https://r.example/a",
				       "http://r.example/a"));
	cr_expect(!src_url_same_origin("https://r.example/a",
				       "https://cdn.example/a"));
	cr_expect(!src_url_same_origin("http://127.0.0.1:5000/",
				       "http://localhost:5000/"));
	cr_expect(!src_url_same_origin("http://127.0.0.1:5000/",
				       "http://127.0.0.1:5001/"));
	cr_expect(!src_url_same_origin("not a url", "not a url"));
}

Test(url, relative_links_resolve_against_the_page)
{
	struct buf out = BUF_INIT;

	cr_assert_eq(src_url_resolve(&out, "https://r/v2/a/tags/list?n=2",
				     "/v2/a/tags/list?n=2&last=b", NULL),
		     0);
	cr_expect_str_eq(buf_cstr(&out), "https://r/v2/a/tags/list?n=2&last=b");
	buf_reset(&out);
	cr_assert_eq(src_url_resolve(&out, "https://r/v2/a/tags/list",
				     "https://s/x", NULL),
		     0);
	cr_expect_str_eq(buf_cstr(&out), "https://s/x");
	buf_reset(&out);
	cr_assert_eq(src_url_resolve(&out, "https://r/v2/a/tags/list",
				     "list?last=c", NULL),
		     0);
	cr_expect_str_eq(buf_cstr(&out), "https://r/v2/a/tags/list?last=c");
	buf_release(&out);
}

/* ---- src_http without a server ------------------------------------- */

Test(http, credentials_in_a_url_are_refused_without_a_request)
{
	struct src_http *h;
	struct src_http_request req = {0};
	struct src_http_response r = SRC_HTTP_RESPONSE_INIT;
	struct err e = ERR_INIT;

	cr_assert_eq(src_http_new(&h, NULL, &e), 0, "%s", err_msg(&e));
	req.url = "https://user:hunter2@127.0.0.1:1/x?sig=abc";
	cr_expect_eq(src_http_do(h, &req, &r, &e), ERR_INVALID);
	cr_expect_null(strstr(err_msg(&e), "hunter2"), "%s", err_msg(&e));
	cr_expect_null(strstr(err_msg(&e), "sig="), "%s", err_msg(&e));
	cr_expect(strstr(err_msg(&e), "GET https://127.0.0.1:1/x"), "%s",
		  err_msg(&e));
	cr_expect_eq(src_http_requests(h), 0);
	src_http_response_release(&r);
	src_http_free(h);
	err_release(&e);
}

Test(http, plain_http_is_refused_unless_allowed)
{
	struct src_http *h;
	struct src_http_request req = {0};
	struct src_http_response r = SRC_HTTP_RESPONSE_INIT;
	struct err e = ERR_INIT;

	cr_assert_eq(src_http_new(&h, NULL, NULL), 0);
	req.url = "http://127.0.0.1:1/x";
	cr_expect_eq(src_http_do(h, &req, &r, &e), ERR_INVALID);
	cr_expect(strstr(err_msg(&e), "only https URLs are allowed"), "%s",
		  err_msg(&e));
	src_http_response_release(&r);
	src_http_free(h);
	err_release(&e);
}

Test(http, credentials_with_line_breaks_are_refused)
{
	struct src_http *h = NULL;
	struct src_http_options o = {0};
	struct err e = ERR_INIT;

	o.token = "abc\r\nX-Evil: 1";
	cr_expect_eq(src_http_new(&h, &o, &e), ERR_INVALID);
	cr_expect_null(h);
	cr_expect_null(strstr(err_msg(&e), "abc"), "%s", err_msg(&e));
	err_release(&e);
}

Test(http, a_server_that_never_answers_times_out_naming_the_url)
{
	struct sockaddr_in sa = {0};
	socklen_t len = sizeof(sa);
	struct src_http_options o = {0};
	struct src_http_request req = {0};
	struct src_http_response r = SRC_HTTP_RESPONSE_INIT;
	struct src_http *h;
	struct err e = ERR_INIT;
	char url[128], want[160];
	int fd;

	/* Connections complete in the listen backlog; nothing answers. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(fd >= 0);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 4), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v2/x?tok=1",
		 ntohs(sa.sin_port));
	o.plain_http = true;
	o.timeout_ms = 300;
	cr_assert_eq(src_http_new(&h, &o, NULL), 0);
	req.url = url;
	cr_expect_eq(src_http_do(h, &req, &r, &e), ERR_TIMEOUT);
	snprintf(want, sizeof(want),
		 "GET http://127.0.0.1:%d/v2/x: timed out after 300 ms",
		 ntohs(sa.sin_port));
	cr_expect_str_eq(err_first(&e), want);
	cr_expect_eq(src_http_requests(h), 1);
	src_http_response_release(&r);
	src_http_free(h);
	err_release(&e);
	close(fd);
}
