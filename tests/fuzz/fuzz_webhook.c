/*
 * libFuzzer target for the push webhook of syncd's HTTP server
 * (controller/httpd.c, POST /hooks/git): the GitHub signature check
 * (X-Hub-Signature-256, HMAC-SHA-256 of the body), the GitLab token
 * (X-Gitlab-Token), the event type and the push event's JSON, through a
 * real libmicrohttpd daemon on 127.0.0.1 (tests/fuzz/httpd_fuzz.h).
 * `make fuzz` builds and runs it from tests/fuzz/corpus/fuzz_webhook.
 *
 * Input: one flag byte (bit 0: GitLab instead of GitHub; bit 1: sign
 * right, else the first line is the signature or token; bits 2-3: the
 * event, push, ping, another event, or the second line's text), then the
 * two lines, then the body.
 *
 * Besides the sanitizers, it checks what the server must decide, from
 * the same inputs: a wrong signature is 401 and triggers nothing; a
 * signed GitHub ping is 200 {"pong": true}; a signed push whose body is
 * not a JSON object is 400; otherwise 202 {"triggered": N}, where a poll
 * is triggered (N = 1) exactly when the event is a push of a branch
 * ("refs/heads/NAME") naming the repository by at least one URL, and the
 * handler gets that branch and those URLs in order; other events 202
 * with 0.
 */
#include <stdint.h>

#include "tests/fuzz/httpd_fuzz.h"
#include "util/sha256.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const gh_keys[] = {
	"clone_url", "ssh_url", "html_url", "git_url", NULL,
};
static const char *const gl_keys[] = {
	"git_http_url",
	"git_ssh_url",
	"web_url",
	NULL,
};

static void line_of(const char **p, const char *end, char *out, size_t cap)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	size_t n = 0;

	for (const char *q = *p; q < (nl ? nl : end); q++)
		if ((unsigned char)*q >= 0x20 && (unsigned char)*q <= 0x7e &&
		    n + 1 < cap)
			out[n++] = *q;
	/* Header values lose their surrounding blanks on the way. */
	while (n && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
	n = strspn(out, " ");
	memmove(out, out + n, strlen(out + n) + 1);
	*p = nl ? nl + 1 : end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 1,
		   *end = (const char *)data + size;
	char sig[256], event[128], want_sig[7 + 2 * SHA256_DIGEST_SIZE + 1];
	const char *const *keys;
	const char *ev, *ref;
	uint8_t mac[SHA256_DIGEST_SIZE];
	struct buf req = BUF_INIT;
	struct fz_response r;
	json_t *doc, *repo, *j = NULL;
	bool gitlab, signed_ok, is_push;
	const char *urls[8];
	size_t nurls = 0, blen;
	int want;

	if (size < 1)
		return 0;
	fz_start();
	gitlab = data[0] & 1;
	line_of(&p, end, sig, sizeof(sig));
	line_of(&p, end, event, sizeof(event));
	blen = (size_t)(end - p);
	switch ((data[0] >> 2) & 3) {
	case 0:
		ev = gitlab ? "Push Hook" : "push";
		break;
	case 1:
		ev = gitlab ? "Tag Push Hook" : "ping";
		break;
	case 2:
		ev = gitlab ? "Merge Request Hook" : "pull_request";
		break;
	default:
		ev = event;
	}
	hmac_sha256(FZ_GITHUB_SECRET, strlen(FZ_GITHUB_SECRET), blen ? p : "",
		    blen, mac);
	memcpy(want_sig, "sha256=", 7);
	hex_encode(mac, sizeof(mac), want_sig + 7);
	if (data[0] & 2)
		snprintf(sig, sizeof(sig), "%s",
			 gitlab ? FZ_GITLAB_TOKEN : want_sig);
	signed_ok = !strcmp(sig, gitlab ? FZ_GITLAB_TOKEN : want_sig);

	buf_adds(&req, "POST /hooks/git HTTP/1.1\r\n");
	buf_addf(&req, "%s: %s\r\n",
		 gitlab ? "X-Gitlab-Event" : "X-GitHub-Event", ev);
	buf_addf(&req, "%s: %s\r\n",
		 gitlab ? "X-Gitlab-Token" : "X-Hub-Signature-256", sig);
	buf_adds(&req, "Content-Type: application/json\r\n");
	fz_send(&req, p, blen, &r);
	j = fz_json(&r);

	is_push = !strcmp(ev, gitlab ? "Push Hook" : "push");
	if (!signed_ok) {
		if (r.code != 401 || fz_seen.push)
			abort();
		goto out;
	}
	if (fz_seen.push && !is_push)
		abort();
	if (!gitlab && !strcmp(ev, "ping")) {
		if (r.code != 200 || !json_is_true(json_object_get(j, "pong")))
			abort();
		goto out;
	}
	if (!is_push) {
		if (r.code != 202 ||
		    json_integer_value(json_object_get(j, "triggered")) != 0)
			abort();
		goto out;
	}
	doc = json_loadb(blen ? p : "", blen, 0, NULL);
	if (!json_is_object(doc)) {
		json_decref(doc);
		if (r.code != 400 || fz_seen.push)
			abort();
		goto out;
	}
	ref = json_string_value(json_object_get(doc, "ref"));
	repo = json_object_get(doc, gitlab ? "project" : "repository");
	for (keys = gitlab ? gl_keys : gh_keys; *keys; keys++) {
		const char *u = json_string_value(json_object_get(repo, *keys));

		if (u && *u)
			urls[nurls++] = u;
	}
	want = ref && !strncmp(ref, "refs/heads/", 11) && ref[11] && nurls;
	if (r.code != 202 ||
	    json_integer_value(json_object_get(j, "triggered")) != want ||
	    (int)fz_seen.push != want)
		abort();
	if (want && !fz_seen.push_truncated) {
		if (strcmp(fz_seen.branch, ref + 11) || fz_seen.nurls != nurls)
			abort();
		for (size_t i = 0; i < nurls; i++)
			if (strcmp(fz_seen.urls[i], urls[i]))
				abort();
	}
	json_decref(doc);
out:
	json_decref(j);
	fz_response_release(&r);
	buf_release(&req);
	return 0;
}
