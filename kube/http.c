/*
 * The HTTP layer of the Kubernetes client, on libcurl (the only file that
 * includes it).
 *
 * Connections: a pool of easy handles. A handle keeps its own keep-alive
 * connection between requests, so a request reuses the connection of the
 * handle it takes from the pool; DNS results and TLS sessions are shared
 * between the handles through a share object guarded by pthread mutexes.
 * The connection cache itself is not shared: libcurl documents sharing
 * connections between concurrent threads as unsupported, and each thread
 * holding its own handle (and connection) for the length of a request
 * gives the same reuse without that risk.
 *
 * Every request: rate limited (token bucket), authenticated with what
 * kube_config_credentials() says now (a bearer token is put in a header
 * that is wiped after the transfer and never logged), TLS verified unless
 * the config says insecure-skip-tls-verify, response body capped.
 * Failures are retried as kube_request() in kube.h says.
 */
#include "kube/kube.h"

#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/json.h"

#include "util/banned.h" /* last */

#define DEFAULT_QPS		   50.0
#define DEFAULT_BURST		   100u
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define DEFAULT_TIMEOUT_MS	   60000L
#define DEFAULT_MAX_RETRIES	   5u
#define DEFAULT_MAX_RESPONSE	   ((size_t)256 << 20)
#define BACKOFF_BASE_MS		   200L
#define BACKOFF_CAP_MS		   10000L
#define RETRY_AFTER_CAP_S	   30L
#define STREAM_LINE_CAP		   ((size_t)16 << 20)
#define ERROR_BODY_CAP		   ((size_t)1 << 20)
#define POOL_MAX_IDLE		   32u

struct kube_client {
	struct kube_config *cfg;
	double qps;
	double burst;
	long connect_timeout_ms;
	long timeout_ms;
	unsigned max_retries;
	size_t max_response;
	char *user_agent;
	char *impersonate; /* "Impersonate-User: ..." or NULL */

	/* Request URLs: base + path; with tls-server-name, see url_setup. */
	char *base;	   /* scheme://authority[/prefix] to prepend */
	char *connect_to;  /* "name:port:host:port" or NULL */
	char *host_header; /* "Host: host:port" or NULL */

	CURLSH *share;
	pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];

	pthread_mutex_t pool_lock;
	CURL **idle;
	size_t nidle;

	/* The token bucket and the jitter PRNG. */
	pthread_mutex_t rate_lock;
	double tokens;
	struct timespec refilled;
	uint64_t prng;

	_Atomic uint64_t requests;
	_Atomic uint64_t connections;
	_Atomic uint64_t throttled;

	void (*on_response)(const char *verb, int code, void *ctx);
	void *on_response_ctx;
	bool (*may_write)(void *ctx);
	void *may_write_ctx;
	unsigned unacked_timeout_ms;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access,
		       void *ctx)
{
	struct kube_client *c = ctx;

	(void)h;
	(void)access;
	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_lock(&c->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ctx)
{
	struct kube_client *c = ctx;

	(void)h;
	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_unlock(&c->share_locks[data]);
}

static double now_s(const struct timespec *ts)
{
	return (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
}


/*
 * Take a token, sleeping until one is due. A caller that finds the
 * bucket empty reserves the next token (the count goes negative) and
 * sleeps outside the lock, so waiting callers are served in order and
 * the long-run rate never exceeds qps.
 */
static void rate_wait(struct kube_client *c)
{
	struct timespec now;
	double wait_s = 0;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&c->rate_lock);
	c->tokens += (now_s(&now) - now_s(&c->refilled)) * c->qps;
	if (c->tokens > c->burst)
		c->tokens = c->burst;
	c->refilled = now;
	c->tokens -= 1;
	if (c->tokens < 0)
		wait_s = -c->tokens / c->qps;
	pthread_mutex_unlock(&c->rate_lock);
	if (wait_s > 0) {
		atomic_fetch_add(&c->throttled, 1);
		clk_sleep_ms((long)(wait_s * 1000 + 0.5));
	}
}

/* A uniform draw in [0, n) for the backoff jitter (xorshift64*). */
static long jitter(struct kube_client *c, long n)
{
	uint64_t x;

	if (n <= 0)
		return 0;
	pthread_mutex_lock(&c->rate_lock);
	x = c->prng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	c->prng = x;
	pthread_mutex_unlock(&c->rate_lock);
	return (long)((x * 2685821657736338717ULL) % (uint64_t)n);
}

/*
 * Full jitter: a uniform wait in [0, min(cap, base * 2^attempt)], so
 * that clients failing together do not come back together.
 */
static long backoff_ms(struct kube_client *c, unsigned attempt)
{
	long ceiling = BACKOFF_BASE_MS;

	while (attempt-- > 0 && ceiling < BACKOFF_CAP_MS)
		ceiling *= 2;
	if (ceiling > BACKOFF_CAP_MS)
		ceiling = BACKOFF_CAP_MS;
	return jitter(c, ceiling + 1);
}

static CURL *pool_take(struct kube_client *c)
{
	CURL *h = NULL;

	pthread_mutex_lock(&c->pool_lock);
	if (c->nidle)
		h = c->idle[--c->nidle];
	pthread_mutex_unlock(&c->pool_lock);
	if (!h)
		h = curl_easy_init();
	return h;
}

/* Back to the pool with its live connection; options are reset. */
static void pool_give(struct kube_client *c, CURL *h)
{
	if (!h)
		return;
	curl_easy_reset(h);
	pthread_mutex_lock(&c->pool_lock);
	if (c->nidle < POOL_MAX_IDLE) {
		c->idle[c->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&c->pool_lock);
	if (h)
		curl_easy_cleanup(h);
}

/*
 * The request URL prefix. With tls-server-name the URL names that host,
 * so that libcurl sends it as SNI and verifies the certificate against
 * it, and CURLOPT_CONNECT_TO sends the connection to the real server;
 * the Host header keeps naming the real server, as client-go does.
 */
static int url_setup(struct kube_client *c, struct err *err)
{
	const struct kube_config *cfg = c->cfg;
	CURLU *u = NULL;
	char *host = NULL, *port = NULL, *url = NULL;
	struct buf b = BUF_INIT;
	size_t plen;
	int error = 0;

	if (!cfg->server || !*cfg->server)
		return err_set(err, ERR_INVALID,
			       "kube config (%s): no server address",
			       cfg->source ? cfg->source : "?");
	u = curl_url();
	if (!u) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if (curl_url_set(u, CURLUPART_URL, cfg->server, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) !=
		    CURLUE_OK) {
		error = err_set(err, ERR_INVALID,
				"kube config (%s): bad server address \"%s\"",
				cfg->source ? cfg->source : "?", cfg->server);
		goto out;
	}
	if (cfg->tls_server_name && *cfg->tls_server_name) {
		if (buf_addf(&b, "%s:%s:%s:%s", cfg->tls_server_name, port,
			     host, port) < 0 ||
		    !(c->connect_to = buf_detach(&b, NULL)) ||
		    buf_addf(&b, "Host: %s:%s", host, port) < 0 ||
		    !(c->host_header = buf_detach(&b, NULL)) ||
		    curl_url_set(u, CURLUPART_HOST, cfg->tls_server_name, 0) !=
			    CURLUE_OK) {
			error = err_set(err, ERR_INVALID,
					"kube config (%s): bad tls-server-name "
					"\"%s\"",
					cfg->source ? cfg->source : "?",
					cfg->tls_server_name);
			goto out;
		}
	}
	/* The prefix without its trailing '/', the path adds one. */
	if (curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK) {
		error = err_set(err, ERR_INVALID, "bad server address \"%s\"",
				cfg->server);
		goto out;
	}
	plen = strlen(url);
	while (plen && url[plen - 1] == '/')
		plen--;
	/* A query or fragment in the server address makes no sense. */
	if (strchr(url, '?') || strchr(url, '#')) {
		error = err_set(err, ERR_INVALID,
				"kube config (%s): server address \"%s\" has a "
				"query",
				cfg->source ? cfg->source : "?", cfg->server);
		goto out;
	}
	c->base = strndup(url, plen);
	if (!c->base)
		error = err_set(err, ERR_NOMEM, "out of memory");
out:
	buf_release(&b);
	curl_free(host);
	curl_free(port);
	curl_free(url);
	curl_url_cleanup(u);
	return error;
}

static bool memchr_ctl(const char *p, size_t n);

int kube_client_new(struct kube_client **out, struct kube_config *cfg,
		    const struct kube_client_options *opts, struct err *err)
{
	static const struct kube_client_options defaults = {0};
	struct kube_client *c = NULL;
	unsigned i;
	int error = 0;

	*out = NULL;
	if (!opts)
		opts = &defaults;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return err_set(err, ERR_GENERIC, "libcurl: %s",
			       curl_easy_strerror(global_rc));
	c = calloc(1, sizeof(*c));
	if (!c)
		return err_set(err, ERR_NOMEM, "out of memory");
	c->cfg = cfg;
	c->qps = opts->qps > 0 ? opts->qps : DEFAULT_QPS;
	c->burst = opts->burst ? opts->burst : DEFAULT_BURST;
	c->connect_timeout_ms = opts->connect_timeout_ms > 0
					? opts->connect_timeout_ms
					: DEFAULT_CONNECT_TIMEOUT_MS;
	c->timeout_ms =
		opts->timeout_ms > 0 ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
	c->max_retries =
		opts->max_retries ? opts->max_retries : DEFAULT_MAX_RETRIES;
	c->max_response =
		opts->max_response ? opts->max_response : DEFAULT_MAX_RESPONSE;
	c->user_agent = strdup(opts->user_agent ? opts->user_agent
						: "syncd/" SYNCD_VERSION);
	c->on_response = opts->on_response;
	c->on_response_ctx = opts->on_response_ctx;
	c->may_write = opts->may_write;
	c->may_write_ctx = opts->may_write_ctx;
	c->unacked_timeout_ms = opts->unacked_timeout_ms;
	c->idle = calloc(POOL_MAX_IDLE, sizeof(*c->idle));
	for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&c->share_locks[i], NULL);
	pthread_mutex_init(&c->pool_lock, NULL);
	pthread_mutex_init(&c->rate_lock, NULL);
	c->tokens = c->burst;
	clock_gettime(CLOCK_MONOTONIC, &c->refilled);
	c->prng = ((uint64_t)c->refilled.tv_nsec << 20) ^
		  (uint64_t)(uintptr_t)c ^ (uint64_t)getpid() ^
		  0x9e3779b97f4a7c15ULL;
	if (!c->user_agent || !c->idle) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if (opts->impersonate_user &&
	    memchr_ctl(opts->impersonate_user,
		       strlen(opts->impersonate_user))) {
		error = err_set(err, ERR_INVALID,
				"the user to impersonate contains control "
				"characters");
		goto out;
	}
	if (opts->impersonate_user &&
	    asprintf(&c->impersonate, "Impersonate-User: %s",
		     opts->impersonate_user) < 0) {
		c->impersonate = NULL;
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((error = url_setup(c, err)) < 0)
		goto out;
	c->share = curl_share_init();
	if (!c->share ||
	    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c) != CURLSHE_OK ||
	    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock) !=
		    CURLSHE_OK ||
	    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock) !=
		    CURLSHE_OK ||
	    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) !=
		    CURLSHE_OK ||
	    curl_share_setopt(c->share, CURLSHOPT_SHARE,
			      CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
		error = err_set(err, ERR_GENERIC,
				"libcurl: cannot set up a share object");
		goto out;
	}
	*out = c;
	c = NULL;
out:
	kube_client_free(c);
	return error;
}

void kube_client_free(struct kube_client *c)
{
	unsigned i;

	if (!c)
		return;
	/* Handles use the share: they go first. */
	for (i = 0; i < c->nidle; i++)
		curl_easy_cleanup(c->idle[i]);
	free(c->idle);
	if (c->share)
		curl_share_cleanup(c->share);
	for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&c->share_locks[i]);
	pthread_mutex_destroy(&c->pool_lock);
	pthread_mutex_destroy(&c->rate_lock);
	free(c->user_agent);
	free(c->impersonate);
	free(c->base);
	free(c->connect_to);
	free(c->host_header);
	free(c);
}

uint64_t kube_client_requests(const struct kube_client *c)
{
	return atomic_load(&((struct kube_client *)c)->requests);
}

uint64_t kube_client_connections(const struct kube_client *c)
{
	return atomic_load(&((struct kube_client *)c)->connections);
}

uint64_t kube_client_throttled(const struct kube_client *c)
{
	return atomic_load(&((struct kube_client *)c)->throttled);
}

void kube_response_release(struct kube_response *resp)
{
	if (!resp)
		return;
	buf_release(&resp->body);
	json_decref(resp->json);
	json_decref(resp->status);
	resp->json = NULL;
	resp->status = NULL;
	resp->code = 0;
	resp->retries = 0;
}

/*
 * HTTP status -> ERR_*:
 *   2xx                      0
 *   400 BadRequest           ERR_INVALID
 *   401, 403                 ERR_INVALID  (credentials not accepted)
 *   404 NotFound             ERR_NOTFOUND
 *   405, 406, 415, 422       ERR_INVALID
 *   409 Conflict/Exists      ERR_EXISTS   (also apply conflicts)
 *   410 Gone (Expired)       ERR_LIMIT    (a resourceVersion too old)
 *   413 Too large            ERR_LIMIT
 *   429 TooManyRequests      ERR_LIMIT
 *   other 4xx                ERR_INVALID
 *   504 Gateway Timeout      ERR_TIMEOUT
 *   502, 503                 ERR_IO       (the server is not reachable)
 *   other 5xx, anything else ERR_GENERIC
 * Transport errors: ERR_IO (connection), ERR_TIMEOUT, ERR_INVALID (TLS
 * verification), ERR_LIMIT (response over the cap).
 */
int kube_err_code(long code)
{
	if (code >= 200 && code < 300)
		return 0;
	switch (code) {
	case 404:
		return ERR_NOTFOUND;
	case 409:
		return ERR_EXISTS;
	case 410:
	case 413:
	case 429:
		return ERR_LIMIT;
	case 502:
	case 503:
		return ERR_IO;
	case 504:
		return ERR_TIMEOUT;
	}
	if (code >= 400 && code < 500)
		return ERR_INVALID;
	return ERR_GENERIC;
}

/* One transfer's state, shared with the callbacks. */
struct transfer {
	CURL *h;
	struct buf *body;
	bool over_cap;
	bool is_json;
	/* kube_stream only */
	struct buf line;
	struct buf errbody;
	int (*line_fn)(const char *data, size_t len, void *ctx);
	void *line_ctx;
	int stopped; /* the line callback's non-zero value */
	int line_error;
	const volatile bool *stop; /* the caller's flag, or NULL */
	bool stop_seen;		   /* the flag closed the stream */
};

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct transfer *t = ctx;
	size_t len = size * n;

	if (buf_add(t->body, data, len) < 0) {
		t->over_cap = true;
		return 0;
	}
	return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
	struct transfer *t = ctx;
	size_t len = size * n;
	static const char ct[] = "content-type:";

	if (len > sizeof(ct) - 1 && !strncasecmp(data, ct, sizeof(ct) - 1))
		t->is_json = memmem(data, len, "json", 4) != NULL;
	return len;
}

static void wipe_headers(struct curl_slist *l)
{
	struct curl_slist *p;

	for (p = l; p; p = p->next)
		explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(l);
}

static bool memchr_ctl(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return true;
	return false;
}

/*
 * Options common to requests and streams: URL, TLS, proxy, auth,
 * headers (`accept` NULL: plain JSON). *headers gets the list to free
 * (with wipe_headers) after the transfer; `cr` must live as long too
 * (curl copies blobs, but not the bearer token header we build into the
 * list).
 */
/*
 * Every connection of a client with unacked_timeout_ms: the kernel
 * aborts it when sent bytes stay unacknowledged that long, instead of
 * retransmitting them for minutes (and delivering them after a
 * partition heals).
 */
static int on_socket(void *ctx, curl_socket_t fd, curlsocktype purpose)
{
	const struct kube_client *c = ctx;
	unsigned ms = c->unacked_timeout_ms;

	if (purpose == CURLSOCKTYPE_IPCXN &&
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms)) < 0)
		return CURL_SOCKOPT_ERROR;
	return CURL_SOCKOPT_OK;
}

static int setup(struct kube_client *c, CURL *h, const char *method,
		 const char *path, const char *content_type, const char *accept,
		 const struct kube_credentials *cr, struct curl_slist **headers,
		 struct curl_slist **connect_to, struct err *err)
{
	struct kube_config *cfg = c->cfg;
	struct curl_slist *l = NULL, *nl;
	struct buf b = BUF_INIT;
	struct curl_blob blob;
	int error = 0;

	if (buf_adds(&b, c->base) < 0 ||
	    (path[0] != '/' && buf_addch(&b, '/') < 0) ||
	    buf_adds(&b, path) < 0) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_URL, b.ptr);
	curl_easy_setopt(h, CURLOPT_SHARE, c->share);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	if (c->unacked_timeout_ms) {
		curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, on_socket);
		curl_easy_setopt(h, CURLOPT_SOCKOPTDATA, c);
	}
	curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	if (c->connect_to) {
		nl = curl_slist_append(NULL, c->connect_to);
		if (!nl) {
			error = err_set(err, ERR_NOMEM, "out of memory");
			goto out;
		}
		curl_easy_setopt(h, CURLOPT_CONNECT_TO, nl);
		*connect_to = nl;
	}

	/* TLS: verified unless the config says otherwise. */
	if (cfg->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (cfg->ca_pem.len) {
		blob.data = cfg->ca_pem.ptr;
		blob.len = cfg->ca_pem.len;
		blob.flags = CURL_BLOB_COPY;
		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
	} else if (cfg->ca_file) {
		curl_easy_setopt(h, CURLOPT_CAINFO, cfg->ca_file);
	}
	if (cr->cert_pem.len && cr->key_pem.len) {
		blob.data = cr->cert_pem.ptr;
		blob.len = cr->cert_pem.len;
		blob.flags = CURL_BLOB_COPY;
		curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &blob);
		blob.data = cr->key_pem.ptr;
		blob.len = cr->key_pem.len;
		curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &blob);
	} else {
		if (cfg->cert_pem.len) {
			blob.data = cfg->cert_pem.ptr;
			blob.len = cfg->cert_pem.len;
			blob.flags = CURL_BLOB_COPY;
			curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &blob);
		} else if (cfg->cert_file) {
			curl_easy_setopt(h, CURLOPT_SSLCERT, cfg->cert_file);
		}
		if (cfg->key_pem.len) {
			blob.data = cfg->key_pem.ptr;
			blob.len = cfg->key_pem.len;
			blob.flags = CURL_BLOB_COPY;
			curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &blob);
		} else if (cfg->key_file) {
			curl_easy_setopt(h, CURLOPT_SSLKEY, cfg->key_file);
		}
	}
	curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
	curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	/*
	 * Proxy: the kubeconfig's proxy-url; otherwise libcurl reads
	 * HTTPS_PROXY/HTTP_PROXY/NO_PROXY as client-go does.
	 */
	if (cfg->proxy_url && *cfg->proxy_url)
		curl_easy_setopt(h, CURLOPT_PROXY, cfg->proxy_url);

	/* Method */
	if (!strcmp(method, "GET")) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else if (!strcmp(method, "HEAD")) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(method, "POST")) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}

	/* Headers */
	if (!accept) {
		l = curl_slist_append(l, "Accept: application/json");
	} else {
		buf_reset(&b);
		if (buf_addf(&b, "Accept: %s", accept) == 0)
			l = curl_slist_append(l, b.ptr);
	}
	if (l)
		nl = curl_slist_append(l, "Expect:");
	if (l && nl && content_type) {
		buf_reset(&b);
		if (buf_addf(&b, "Content-Type: %s", content_type) < 0)
			nl = NULL;
		else
			nl = curl_slist_append(l, b.ptr);
	}
	if (l && nl && c->host_header)
		nl = curl_slist_append(l, c->host_header);
	if (l && nl && c->impersonate)
		nl = curl_slist_append(l, c->impersonate);
	if (l && nl && cr->token.len &&
	    memchr_ctl(cr->token.ptr, cr->token.len)) {
		/* A header break in a token would inject headers. */
		wipe_headers(l);
		error = err_set(err, ERR_INVALID,
				"the bearer token contains control characters");
		goto out;
	}
	if (l && nl && cr->token.len) {
		buf_reset(&b);
		if (buf_adds(&b, "Authorization: Bearer ") < 0 ||
		    buf_add(&b, cr->token.ptr, cr->token.len) < 0)
			nl = NULL;
		else
			nl = curl_slist_append(l, b.ptr);
		explicit_bzero(b.ptr, b.len);
	} else if (l && nl && cfg->username && *cfg->username) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, cfg->username);
		curl_easy_setopt(h, CURLOPT_PASSWORD,
				 cfg->password ? cfg->password : "");
	}
	if (!l || !nl) {
		wipe_headers(l);
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
	*headers = l;
out:
	buf_release(&b);
	return error;
}

/*
 * The credentials for this request. A config filled by hand (tests)
 * rather than by kube_config_load() has no credential cache: its static
 * token is all there is.
 */
static int credentials(struct kube_config *cfg, struct kube_credentials *cr,
		       struct err *err)
{
	if (cfg->creds)
		return kube_config_credentials(cfg, cr, err);
	kube_credentials_release(cr);
	if (cfg->token && buf_adds(&cr->token, cfg->token) < 0)
		return err_set(err, ERR_NOMEM, "out of memory");
	return 0;
}

/* The lists of one transfer; `headers` may hold the bearer token. */
struct lists {
	struct curl_slist *headers;
	struct curl_slist *connect_to;
};

static void free_lists(struct lists *l)
{
	wipe_headers(l->headers);
	curl_slist_free_all(l->connect_to);
	l->headers = NULL;
	l->connect_to = NULL;
}

/*
 * Connection errors worth another try. Those before the request went
 * out are retried for every method; those after it may have been
 * processed (a dropped connection, a cut response) only when sending it
 * again cannot do something twice: not for POST, whose replay would
 * create a second object or Event. PUT carries its resourceVersion,
 * DELETE of a gone object is a 404, apply is idempotent.
 */
static bool retryable_curl(CURLcode rc, const char *method)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return strcmp(method, "POST") != 0;
	default:
		return false;
	}
}

static bool retryable_code(long code)
{
	return code == 429 || code == 500 || code == 502 || code == 503 ||
	       code == 504;
}

/* The error of a transfer that got no (complete) response. */
static int transport_error(struct kube_client *c, CURLcode rc,
			   const char *method, const char *path,
			   const char *errbuf, struct err *err)
{
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);

	switch (rc) {
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
		return err_set(err, ERR_INVALID,
			       "%s %s%s: TLS: the server's certificate is not "
			       "trusted (%s)",
			       method, c->base, path, why);
	case CURLE_SSL_CONNECT_ERROR:
		return err_set(err, ERR_IO,
			       "%s %s%s: TLS handshake failed (%s)", method,
			       c->base, path, why);
	case CURLE_OPERATION_TIMEDOUT:
		return err_set(err, ERR_TIMEOUT, "%s %s%s: timed out (%s)",
			       method, c->base, path, why);
	default:
		return err_set(err, ERR_IO, "%s %s%s: %s", method, c->base,
			       path, why);
	}
}

/* Longer Status messages of an Invalid answer are told by their causes. */
#define LONG_STATUS 300

/*
 * An Invalid Status whose message quotes whole values (a Job's template
 * refused as immutable is kilobytes of Go syntax): "<Kind> \"name\" is
 * invalid: " and each cause as "field: message", an "Invalid value: V: "
 * prefix cut to "Invalid value: ...: ". False when there are no causes.
 */
static bool short_invalid(const json_t *st, const char *msg, struct buf *out)
{
	const json_t *causes = json_object_get(json_object_get(st, "details"),
					       "causes"),
		     *c;
	const char *cut = strstr(msg, " is invalid: ");
	size_t i;

	if (!json_array_size(causes) || !cut)
		return false;
	buf_add(out, msg, (size_t)(cut - msg) + strlen(" is invalid: "));
	json_array_foreach(causes, i, c)
	{
		const char *field = json_string_value(json_object_get(c, "field"));
		const char *m = json_string_value(json_object_get(c, "message"));
		const char *tail;

		if (!m)
			continue;
		if (i)
			buf_adds(out, "; ");
		if (field && *field)
			buf_addf(out, "%s: ", field);
		if (!strncmp(m, "Invalid value: ", 15) && strlen(m) > 80 &&
		    (tail = strrchr(m, ':')) && tail[1] == ' ')
			buf_addf(out, "Invalid value: ...: %s", tail + 2);
		else
			buf_adds(out, m);
	}
	return true;
}

/*
 * The error of a non-2xx response: the Status message as kube words it,
 * "<message> (<code> <reason>)", else the start of the body.
 */
static int status_error(struct kube_response *resp, const char *method,
			const char *path, struct err *err)
{
	int code = kube_err_code(resp->code);
	json_t *st;
	const char *msg, *reason;
	size_t n, i;
	char snippet[201];
	struct buf shorter = BUF_INIT;

	if (code == 0)
		code = ERR_GENERIC;
	st = resp->body.len
		     ? fastjson_load(resp->body.ptr, resp->body.len, NULL, NULL)
		     : NULL;
	if (st && json_is_object(st) &&
	    json_is_string(json_object_get(st, "kind")) &&
	    !strcmp(json_string_value(json_object_get(st, "kind")), "Status")) {
		json_decref(resp->status);
		resp->status = st;
		msg = json_string_value(json_object_get(st, "message"));
		reason = json_string_value(json_object_get(st, "reason"));
		if (msg && strlen(msg) > LONG_STATUS &&
		    short_invalid(st, msg, &shorter))
			msg = buf_cstr(&shorter);
		code = err_set(err, code, "%s (%ld %s)",
			       msg && *msg ? msg : "no message", resp->code,
			       reason && *reason ? reason : "Unknown");
		buf_release(&shorter);
		return code;
	}
	json_decref(st);
	n = resp->body.len < sizeof(snippet) - 1 ? resp->body.len
						 : sizeof(snippet) - 1;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)resp->body.ptr[i];

		snippet[i] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
	}
	snippet[n] = '\0';
	return err_set(err, code, "%s %s: the server answered %ld%s%s", method,
		       path, resp->code, n ? ": " : "", snippet);
}

/*
 * The verb of a request as the API server's metrics name it: a GET is a
 * get, list or watch depending on whether the path ends at a collection
 * and on ?watch=; a DELETE of a collection is a deletecollection. Paths
 * outside /api and /apis (discovery, /version) are gets.
 */
static const char *request_verb(const char *method, const char *path)
{
	const char *q = strchr(path, '?'), *p, *seg[8];
	size_t n = 0, plen = q ? (size_t)(q - path) : strlen(path), skip;
	bool collection, watch = false;

	if (q)
		for (p = q; (p = strstr(p, "watch=")); p++)
			if ((p[-1] == '?' || p[-1] == '&') &&
			    (!strncmp(p + 6, "true", 4) || p[6] == '1'))
				watch = true;
	/* Up to 8 segments of the path: no resource path has more. */
	for (p = path; p < path + plen && n < 8;) {
		while (p < path + plen && *p == '/')
			p++;
		if (p < path + plen)
			seg[n++] = p;
		while (p < path + plen && *p != '/')
			p++;
	}
	/* /api/v1/... or /apis/GROUP/VERSION/... */
	if (n >= 1 && !strncmp(seg[0], "api/", 4))
		skip = 2;
	else if (n >= 1 && !strncmp(seg[0], "apis/", 5))
		skip = 3;
	else
		skip = n + 1;
	/* The legacy /watch/ prefix. */
	if (n > skip + 1 && !strncmp(seg[skip], "watch/", 6)) {
		watch = true;
		skip++;
	}
	/*
	 * namespaces/NS/RESOURCE...: the resource is what counts, but
	 * namespaces/NS/status and /finalize are a Namespace's subresources.
	 */
	if (n > skip + 2 && !strncmp(seg[skip], "namespaces/", 11) &&
	    strncmp(seg[skip + 2], "status", 6) &&
	    strncmp(seg[skip + 2], "finalize", 8))
		skip += 2;
	collection = n == skip + 1;
	if (!strcmp(method, "GET"))
		return watch ? "watch" : collection ? "list" : "get";
	if (!strcmp(method, "POST"))
		return "create";
	if (!strcmp(method, "PUT"))
		return "update";
	if (!strcmp(method, "PATCH"))
		return "patch";
	if (!strcmp(method, "DELETE"))
		return collection ? "deletecollection" : "delete";
	return "get";
}

static void report(struct kube_client *c, const char *method,
		   const char *path, long code)
{
	if (c->on_response)
		c->on_response(request_verb(method, path), (int)code,
			       c->on_response_ctx);
}

/* kube_request_accept(), with a list's items offered to `take` (NULL: none). */
static int request(struct kube_client *c, const char *method, const char *path,
		   const char *accept, const char *content_type,
		   const char *body, size_t body_len, fastjson_take_fn *take,
		   void *take_ctx, struct kube_response *resp, struct err *err)
{
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	struct kube_response local = KUBE_RESPONSE_INIT;
	struct lists lists = {NULL, NULL};
	struct transfer t;
	char errbuf[CURL_ERROR_SIZE];
	bool reauthed = false;
	unsigned attempt = 0;
	CURL *h = NULL;
	CURLcode rc;
	long conns, wait;
	curl_off_t retry_after;
	int error = 0;

	if (!resp)
		resp = &local;
	kube_response_release(resp);
	buf_init(&resp->body, c->max_response);
	if (accept && memchr_ctl(accept, strlen(accept))) {
		/* A header break would inject headers. */
		error = err_set(err, ERR_INVALID,
				"%s %s: the Accept value contains control "
				"characters", method, path);
		goto out;
	}
	h = pool_take(c);
	if (!h) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	for (;;) {
		if (c->may_write && strcmp(method, "GET") &&
		    strcmp(method, "HEAD") && !c->may_write(c->may_write_ctx)) {
			error = err_set(err, ERR_CANCELED,
					"%s %s: not sent: this replica no "
					"longer leads",
					method, path);
			goto out;
		}
		buf_reset(&resp->body);
		resp->code = 0;
		json_decref(resp->status);
		resp->status = NULL;
		memset(&t, 0, sizeof(t));
		t.h = h;
		t.body = &resp->body;

		kube_credentials_release(&cr);
		if ((error = credentials(c->cfg, &cr, err)) < 0)
			goto out;
		curl_easy_reset(h);
		if ((error = setup(c, h, method, path, content_type, accept,
				   &cr, &lists.headers, &lists.connect_to,
				   err)) < 0)
			goto out;
		/*
		 * A body for every method but GET and HEAD (which have
		 * none); POST, PUT and PATCH send an empty one when given
		 * none, DELETE sends none.
		 */
		if (strcmp(method, "GET") && strcmp(method, "HEAD") &&
		    (body || strcmp(method, "DELETE"))) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS,
					 body ? body : "");
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
					 (curl_off_t)(body ? body_len : 0));
		}
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
		curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
				 (curl_off_t)c->max_response);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
		errbuf[0] = '\0';
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);

		rate_wait(c);
		atomic_fetch_add(&c->requests, 1);
		rc = curl_easy_perform(h);
		conns = 0;
		if (curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &conns) ==
			    CURLE_OK &&
		    conns > 0)
			atomic_fetch_add(&c->connections, (uint64_t)conns);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->code);
		report(c, method, path, rc == CURLE_OK ? resp->code : 0);
		retry_after = 0;
		curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &retry_after);
		free_lists(&lists);
		/* The token and key copies are not needed past the transfer. */
		curl_easy_reset(h);

		if (t.over_cap || rc == CURLE_FILESIZE_EXCEEDED) {
			error = err_set(err, ERR_LIMIT,
					"%s %s%s: response larger than %zu "
					"bytes",
					method, c->base, path, c->max_response);
			goto out;
		}
		if (rc != CURLE_OK) {
			if (retryable_curl(rc, method) &&
			    attempt < c->max_retries) {
				wait = backoff_ms(c, attempt);
				goto retry;
			}
			error = transport_error(c, rc, method, path, errbuf,
						err);
			goto out;
		}
		if (resp->code == 401 && !reauthed) {
			/* A rotated token or an expired exec credential. */
			kube_config_invalidate(c->cfg);
			reauthed = true;
			wait = 0;
			goto retry;
		}
		if (retryable_code(resp->code) && attempt < c->max_retries) {
			if (retry_after > 0)
				wait = (retry_after > RETRY_AFTER_CAP_S
						? RETRY_AFTER_CAP_S
						: (long)retry_after) *
				       1000L;
			else
				wait = backoff_ms(c, attempt);
			goto retry;
		}
		break;
	retry:
		attempt++;
		resp->retries++;
		clk_sleep_ms(wait);
	}
	if (resp->code < 200 || resp->code >= 300) {
		error = status_error(resp, method, path, err);
		goto out;
	}
	if (t.is_json && resp->body.len) {
		const char *why;
		size_t at;

		resp->json = fastjson_load_items(resp->body.ptr, resp->body.len,
						 &why, &at, take, take_ctx);
		if (!resp->json)
			error = err_set(err, ERR_PARSE,
					"%s %s: bad JSON in the response: %s "
					"(at byte %zu)",
					method, path, why, at);
	}
out:
	free_lists(&lists);
	kube_credentials_release(&cr);
	kube_response_release(&local);
	pool_give(c, h);
	return error;
}

/* Stream body: split into lines; error bodies are kept for the Status. */
static size_t on_stream(char *data, size_t size, size_t n, void *ctx)
{
	struct transfer *t = ctx;
	size_t len = size * n, start = 0, i;
	long code = 0;
	int rc;

	curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code >= 300) {
		if (buf_add(&t->errbody, data, len) < 0) {
			t->over_cap = true;
			return 0;
		}
		return len;
	}
	for (i = 0; i < len; i++) {
		if (data[i] != '\n')
			continue;
		if (buf_add(&t->line, data + start, i - start) < 0) {
			t->over_cap = true;
			return 0;
		}
		start = i + 1;
		if (!t->line.len)
			continue;
		rc = t->line_fn(t->line.ptr, t->line.len, t->line_ctx);
		buf_reset(&t->line);
		if (rc) {
			t->stopped = rc;
			return 0;
		}
	}
	if (buf_add(&t->line, data + start, len - start) < 0) {
		t->over_cap = true;
		return 0;
	}
	return len;
}

/*
 * Progress of a stream: libcurl calls it often while data flows and
 * about once a second while none does, so a quiet stream still sees the
 * caller's stop flag. Non-zero aborts the transfer.
 */
static int on_stream_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow,
			      curl_off_t ultotal, curl_off_t ulnow)
{
	struct transfer *t = ctx;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if (t->stop && *t->stop) {
		t->stop_seen = true;
		return 1;
	}
	return 0;
}

int kube_stream(struct kube_client *c, const char *path, long idle_timeout_ms,
		const volatile bool *stop,
		int (*line)(const char *data, size_t len, void *ctx), void *ctx,
		struct err *err)
{
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	struct lists lists = {NULL, NULL};
	struct kube_response resp = KUBE_RESPONSE_INIT;
	struct transfer t;
	char errbuf[CURL_ERROR_SIZE];
	CURL *h = NULL;
	CURLcode rc;
	long conns = 0;
	int error = 0;

	memset(&t, 0, sizeof(t));
	buf_init(&t.line, STREAM_LINE_CAP);
	buf_init(&t.errbody, ERROR_BODY_CAP);
	t.line_fn = line;
	t.line_ctx = ctx;
	t.stop = stop;
	h = pool_take(c);
	if (!h) {
		error = err_set(err, ERR_NOMEM, "out of memory");
		goto out;
	}
	t.h = h;
	if ((error = credentials(c->cfg, &cr, err)) < 0)
		goto out;
	curl_easy_reset(h);
	if ((error = setup(c, h, "GET", path, NULL, NULL, &cr, &lists.headers,
			   &lists.connect_to, err)) < 0)
		goto out;
	if (idle_timeout_ms > 0) {
		/* Under 1 byte/s for that long: the stream is dead. */
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
				 (idle_timeout_ms + 999) / 1000);
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
	if (stop) {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION,
				 on_stream_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
	}
	errbuf[0] = '\0';
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);

	rate_wait(c);
	atomic_fetch_add(&c->requests, 1);
	rc = curl_easy_perform(h);
	if (curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &conns) == CURLE_OK &&
	    conns > 0)
		atomic_fetch_add(&c->connections, (uint64_t)conns);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp.code);
	report(c, "GET", path, resp.code);
	free_lists(&lists);
	curl_easy_reset(h);

	if (t.stopped) {
		error = t.stopped;
		goto out;
	}
	if (t.stop_seen)
		goto out; /* closed by the caller's flag: error stays 0 */
	if (t.over_cap) {
		error = err_set(err, ERR_LIMIT,
				"GET %s%s: a watch event is larger than %zu "
				"bytes",
				c->base, path, STREAM_LINE_CAP);
		goto out;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT && resp.code >= 200 &&
	    resp.code < 300) {
		error = err_set(err, ERR_TIMEOUT,
				"GET %s%s: no data for %ld ms", c->base, path,
				idle_timeout_ms);
		goto out;
	}
	if (rc != CURLE_OK) {
		error = transport_error(c, rc, "GET", path, errbuf, err);
		goto out;
	}
	if (resp.code < 200 || resp.code >= 300) {
		if (resp.code == 401)
			kube_config_invalidate(c->cfg);
		resp.body = t.errbody;
		t.errbody = (struct buf)BUF_INIT;
		error = status_error(&resp, "GET", path, err);
		goto out;
	}
	/* A last event without its newline, on a cleanly ended stream. */
	if (t.line.len)
		error = line(t.line.ptr, t.line.len, ctx);
out:
	free_lists(&lists);
	kube_credentials_release(&cr);
	kube_response_release(&resp);
	buf_release(&t.line);
	buf_release(&t.errbody);
	pool_give(c, h);
	return error;
}

int kube_request(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const char *body, size_t body_len,
		 struct kube_response *resp, struct err *err)
{
	return request(c, method, path, NULL, content_type, body, body_len,
		       NULL, NULL, resp, err);
}

int kube_request_accept(struct kube_client *c, const char *method,
			const char *path, const char *accept,
			const char *content_type, const char *body,
			size_t body_len, struct kube_response *resp,
			struct err *err)
{
	return request(c, method, path, accept, content_type, body, body_len,
		       NULL, NULL, resp, err);
}

int kube_request_list(struct kube_client *c, const char *path,
		      fastjson_take_fn *take, void *take_ctx,
		      struct kube_response *resp, struct err *err)
{
	return request(c, "GET", path, NULL, NULL, NULL, 0, take, take_ctx,
		       resp, err);
}
