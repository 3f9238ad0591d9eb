/*
 * kube-emu: the command line and the HTTP layer (libmicrohttpd).
 *
 *   kube-emu --listen 127.0.0.1:PORT [--token TOKEN] [--kubeconfig-out FILE]
 *            [--tls [--client-cert-kubeconfig FILE]] [--data FILE]
 *            [--faults SPEC]... [--webhook SPEC]... [--rollout SPEC]...
 *            [--no-aggregated-discovery]
 *
 * PORT 0 picks a free port; the address served is printed on stdout as
 * "listening on http://HOST:PORT" (https with --tls). SIGTERM and SIGINT
 * end it with exit 0; a bad flag, data file or TLS setup with exit 2.
 *
 * --tls makes a throwaway CA and a server certificate with the openssl
 * command (tls.c); the kubeconfig then carries the CA.
 * --client-cert-kubeconfig FILE also makes a client certificate
 * (CN=admin) signed by that CA and writes a second kubeconfig that
 * authenticates with it (client-certificate-data, client-key-data, no
 * token). The server then asks TLS clients for a certificate (optional)
 * and accepts a request that carries the token or a certificate that
 * verifies against its CA, as kube-apiserver's authenticators do.
 *
 * --data FILE restores the store from FILE when it exists and writes it
 * back, atomically, within about 100 ms of every change and once more
 * at shutdown. A SIGKILL can lose the writes of its last ~100 ms.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kube-emu/emu.h"
#include "kube-emu/tls.h"
#include "util/base64.h"
#include "util/clock.h"
#include "util/file.h"

#include "util/banned.h" /* last */

/* How long a watch's reader waits before checking its client, in ms. */
#define WATCH_POLL_MS 200

/* How often --data looks for a changed resourceVersion, in ms. */
#define PERSIST_POLL_MS 100

/*
 * With --client-cert-kubeconfig: the Authorization header a request with
 * a verified client certificate counts as (the server's own token), so
 * that the handler's one authentication check serves both methods.
 */
static char *cert_authorization;

/* Per-request state kept across libmicrohttpd's callbacks. */
struct conn_state {
	struct buf body;
	bool too_large;
};

struct query_acc {
	struct emu_param *items;
	size_t len;
	size_t alloc;
};

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind,
				     const char *key, const char *value)
{
	struct query_acc *q = cls;
	struct emu_param *n;

	(void)kind;
	if (q->len == q->alloc) {
		size_t alloc = q->alloc ? q->alloc * 2 : 8;

		n = realloc(q->items, alloc * sizeof(*n));
		if (!n)
			return MHD_NO;
		q->items = n;
		q->alloc = alloc;
	}
	q->items[q->len].key = key;
	q->items[q->len].value = value;
	q->len++;
	return MHD_YES;
}

/* A watch being streamed: its lines not yet handed to libmicrohttpd. */
struct watch_stream {
	struct emu_watch *watch;
	struct MHD_Connection *conn;
	struct buf pending;
	size_t off;
};

/* Has the client closed its end? (A watch only writes on events.) */
static bool client_gone(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pollfd p;
	char c;

	if (!ci)
		return false;
	p.fd = ci->connect_fd;
	p.events = POLLIN | POLLRDHUP;
	p.revents = 0;
	if (poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLRDHUP | POLLHUP | POLLERR))
		return true;
	return recv(p.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/*
 * libmicrohttpd's content reader (one thread per connection, so it may
 * block): hand out queued lines, wait for more in WATCH_POLL_MS slices,
 * end the stream when the watch ends or the client went away.
 */
static ssize_t watch_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct watch_stream *ws = cls;
	size_t n;
	int r;

	(void)pos;
	while (ws->off == ws->pending.len) {
		buf_reset(&ws->pending);
		ws->off = 0;
		r = emu_watch_next(ws->watch, &ws->pending, WATCH_POLL_MS);
		if (r < 0 && !ws->pending.len)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (r == 0 && client_gone(ws->conn))
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	n = ws->pending.len - ws->off;
	if (n > max)
		n = max;
	memcpy(out, ws->pending.ptr + ws->off, n);
	ws->off += n;
	return (ssize_t)n;
}

/* Called by libmicrohttpd when the response goes: also on disconnect. */
static void watch_stream_free(void *cls)
{
	struct watch_stream *ws = cls;

	emu_watch_free(ws->watch);
	buf_release(&ws->pending);
	free(ws);
}

/*
 * One Warning header per warning, as kube-apiserver writes them: code
 * 299, agent "-", the text quoted as Go's strconv.Quote does.
 */
static void add_warnings(struct MHD_Response *r,
			 const struct emu_response *resp)
{
	const char *p = resp->warnings.ptr, *end;
	struct buf h = BUF_INIT;

	while (p && *p) {
		end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		buf_reset(&h);
		buf_adds(&h, "299 - \"");
		for (; p < end; p++) {
			if (*p == '"' || *p == '\\')
				buf_addch(&h, '\\');
			if ((unsigned char)*p < 0x20)
				buf_addf(&h, "\\x%02x", (unsigned char)*p);
			else
				buf_addch(&h, *p);
		}
		buf_addch(&h, '"');
		MHD_add_response_header(r, "Warning", buf_cstr(&h));
		if (*p)
			p++;
	}
	buf_release(&h);
}

/* Headers every answer carries besides its body. */
static void add_headers(struct MHD_Response *r, const struct emu_response *resp)
{
	char secs[24];

	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				resp->content_type ? resp->content_type
						   : "application/json");
	if (resp->retry_after) {
		snprintf(secs, sizeof(secs), "%u", resp->retry_after);
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, secs);
	}
	add_warnings(r, resp);
}

/* Queue the streaming response of a watch; takes resp->watch. */
static enum MHD_Result queue_watch(struct MHD_Connection *conn,
				   struct emu_response *resp)
{
	struct watch_stream *ws = calloc(1, sizeof(*ws));
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!ws) {
		emu_watch_free(resp->watch);
		return MHD_NO;
	}
	ws->watch = resp->watch;
	ws->conn = conn;
	buf_init(&ws->pending, 0);
	r = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, 64 * 1024, watch_read, ws, watch_stream_free);
	if (!r) {
		watch_stream_free(ws);
		return MHD_NO;
	}
	resp->content_type = "application/json";
	add_headers(r, resp);
	ret = MHD_queue_response(conn, (unsigned)resp->code, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * A response cut short (fault injection): the full Content-Length is
 * announced, about half of the body goes out, then the connection is
 * closed, as when an API server or a proxy dies mid-answer.
 */
struct dropped_body {
	char *data;
	size_t half;
};

static ssize_t dropped_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct dropped_body *db = cls;
	size_t n;

	if (pos >= db->half)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	n = db->half - (size_t)pos;
	if (n > max)
		n = max;
	memcpy(out, db->data + pos, n);
	return (ssize_t)n;
}

static void dropped_free(void *cls)
{
	struct dropped_body *db = cls;

	free(db->data);
	free(db);
}

/* The response of resp->drop; takes resp->body. NULL: no memory. */
static struct MHD_Response *dropped_response(struct emu_response *resp)
{
	struct dropped_body *db = calloc(1, sizeof(*db));
	struct MHD_Response *r;
	size_t len = resp->body.len;

	if (!db) {
		emu_response_release(resp);
		return NULL;
	}
	db->data = buf_detach(&resp->body, NULL);
	if (!db->data) {
		free(db);
		return NULL;
	}
	db->half = len / 2;
	r = MHD_create_response_from_callback(len, 4096, dropped_read, db,
					      dropped_free);
	if (!r)
		dropped_free(db);
	return r;
}

/*
 * Did the client present a certificate that verifies against our CA
 * (MHD_OPTION_HTTPS_MEM_TRUST)? No certificate, or one that does not
 * verify, is simply no authentication: the token may still be there.
 */
static bool client_cert_verified(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci;
	gnutls_session_t session;
	unsigned status = 0, n = 0;

	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return false;
	session = (gnutls_session_t)ci->tls_session;
	if (!gnutls_certificate_get_peers(session, &n) || n == 0)
		return false;
	if (gnutls_certificate_verify_peers2(session, &status) < 0)
		return false;
	return status == 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct emu_server *srv = cls;
	struct conn_state *cs = *con_cls;
	struct emu_request req = {0};
	struct emu_response resp = EMU_RESPONSE_INIT;
	struct query_acc q = {0};
	struct MHD_Response *r;
	enum MHD_Result ret;

	(void)version;
	if (!cs) {
		cs = calloc(1, sizeof(*cs));
		if (!cs)
			return MHD_NO;
		buf_init(&cs->body, EMU_MAX_BODY);
		*con_cls = cs;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!cs->too_large &&
		    buf_add(&cs->body, upload, *upload_size) < 0) {
			cs->too_large = true;
			buf_release(&cs->body);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_query,
				  &q);
	req.method = method;
	req.path = url;
	req.query = q.items;
	req.nquery = q.len;
	req.content_type = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	req.user_agent = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_USER_AGENT);
	req.authorization = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (cert_authorization && client_cert_verified(conn))
		req.authorization = cert_authorization;
	req.accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_ACCEPT);
	req.body = cs->body.ptr;
	req.body_len = cs->body.len;
	req.body_too_large = cs->too_large;
	emu_handle(srv, &req, &resp);
	free(q.items);
	if (resp.watch) {
		emu_response_release(&resp);
		return queue_watch(conn, &resp);
	}
	if (resp.drop) {
		r = dropped_response(&resp);
	} else {
		r = MHD_create_response_from_buffer(
			resp.body.len, (void *)buf_cstr(&resp.body),
			MHD_RESPMEM_MUST_COPY);
	}
	if (!r) {
		emu_response_release(&resp);
		return MHD_NO;
	}
	add_headers(r, &resp);
	ret = MHD_queue_response(conn, (unsigned)resp.code, r);
	MHD_destroy_response(r);
	emu_response_release(&resp);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn_state *cs = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (cs) {
		buf_release(&cs->body);
		free(cs);
	}
	*con_cls = NULL;
}

/*
 * The kubeconfig of --kubeconfig-out. With TLS it names the CA (its PEM,
 * base64) so that clients verify the server; the token goes in the user
 * entry (kubectl sends it only over TLS). With `client_cert` (the file
 * of --client-cert-kubeconfig) the user entry has the client certificate
 * and key instead of the token.
 */
static int write_kubeconfig(const char *path, const char *host,
			    const char *token, const struct emu_tls *tls,
			    bool client_cert)
{
	struct buf ca64 = BUF_INIT, crt64 = BUF_INIT, key64 = BUF_INIT;
	FILE *f;
	int error = 0;

	if ((tls && base64_encode(&ca64, tls->ca.ptr, tls->ca.len, 0) < 0) ||
	    (client_cert && (base64_encode(&crt64, tls->client_cert.ptr,
					   tls->client_cert.len, 0) < 0 ||
			     base64_encode(&key64, tls->client_key.ptr,
					   tls->client_key.len, 0) < 0))) {
		buf_release(&ca64);
		buf_release(&crt64);
		buf_release(&key64);
		fprintf(stderr, "kube-emu: out of memory\n");
		return -1;
	}
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "kube-emu: %s: %s\n", path, strerror(errno));
		buf_release(&ca64);
		buf_release(&crt64);
		buf_release(&key64);
		return -1;
	}
	fprintf(f,
		"apiVersion: v1\n"
		"kind: Config\n"
		"clusters:\n"
		"- name: kube-emu\n"
		"  cluster:\n"
		"    server: %s://%s\n",
		tls ? "https" : "http", host);
	if (tls)
		fprintf(f, "    certificate-authority-data: %s\n",
			buf_cstr(&ca64));
	fprintf(f, "contexts:\n"
		   "- name: kube-emu\n"
		   "  context:\n"
		   "    cluster: kube-emu\n"
		   "    user: kube-emu\n"
		   "    namespace: default\n"
		   "current-context: kube-emu\n"
		   "users:\n"
		   "- name: kube-emu\n"
		   "  user:\n");
	if (client_cert)
		fprintf(f,
			"    client-certificate-data: %s\n"
			"    client-key-data: %s\n",
			buf_cstr(&crt64), buf_cstr(&key64));
	else if (token)
		fprintf(f, "    token: %s\n", token);
	else
		fprintf(f, "    {}\n");
	if (fclose(f) != 0) {
		fprintf(stderr, "kube-emu: %s: %s\n", path, strerror(errno));
		error = -1;
	}
	buf_release(&ca64);
	buf_release(&crt64);
	buf_release(&key64);
	return error;
}

/*
 * --data: the store's file. A background thread looks at the store's
 * resourceVersion every PERSIST_POLL_MS and writes the file when it
 * moved; main() writes it a last time once the server has stopped.
 */
struct persist {
	struct emu_store *st;
	const char *path;
	pthread_t thread;
	bool running;
	pthread_mutex_t lock; /* guards stop */
	pthread_cond_t wake;
	bool stop;
	uint64_t saved_rv; /* resourceVersion of the last file written */
	bool failing;	   /* the last write failed (and was reported) */
};

/* The dump and a newline: the contents of the --data file. */
static int fill_text(int fd, void *ctx)
{
	const char *text = ctx;

	return file_write_all(fd, text, strlen(text)) < 0 ||
		       file_write_all(fd, "\n", 1) < 0
		       ? -1
		       : 0;
}

/*
 * Write the store to p->path atomically: a temporary file in the same
 * directory, fsync'd, renamed over the old one, then the directory
 * fsync'd, so a crash leaves the old file or the new one, never half
 * of one. A failure is reported once until a write succeeds again.
 */
static int persist_save(struct persist *p)
{
	json_t *doc = emu_store_dump(p->st);
	struct err err = ERR_INIT;
	char *text = NULL;
	const char *rvs, *why = NULL;
	int error = -1;

	if (!doc || !(text = json_dumps(doc, JSON_COMPACT))) {
		why = "out of memory";
		goto out;
	}
	rvs = json_string_value(json_object_get(doc, "resourceVersion"));
	if (file_replace(p->path, fill_text, text, &err) < 0) {
		size_t n = strlen(p->path);

		/* "PATH: cause": the line below names the path already. */
		why = err_first(&err);
		if (!strncmp(why, p->path, n) && !strncmp(why + n, ": ", 2))
			why += n + 2;
		goto out;
	}
	p->saved_rv = rvs ? strtoull(rvs, NULL, 10) : 0;
	p->failing = false;
	error = 0;
out:
	if (error && !p->failing) {
		fprintf(stderr, "kube-emu: --data %s: cannot write: %s\n",
			p->path, why ? why : "unknown error");
		p->failing = true;
	}
	err_release(&err);
	free(text);
	json_decref(doc);
	return error;
}

static void *persist_main(void *arg)
{
	struct persist *p = arg;
	struct timespec until;
	uint64_t rv;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		until = clk_mono_after_ms(PERSIST_POLL_MS);
		pthread_cond_timedwait(&p->wake, &p->lock, &until);
		if (p->stop)
			break;
		pthread_mutex_unlock(&p->lock);
		pthread_mutex_lock(&p->st->lock);
		rv = p->st->rv;
		pthread_mutex_unlock(&p->st->lock);
		/* After a failure, try again on every tick. */
		if (rv != p->saved_rv || p->failing)
			persist_save(p);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static int persist_start(struct persist *p)
{
	pthread_condattr_t attr;

	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&p->thread, NULL, persist_main, p) != 0) {
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		return -1;
	}
	p->running = true;
	return 0;
}

static void persist_stop(struct persist *p)
{
	if (!p->running)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	p->running = false;
}

/*
 * Load --data FILE into a fresh store when the file exists. -1 after a
 * one-line message naming the file and the cause.
 */
static int load_data(struct emu_store *st, const char *path)
{
	struct buf msg = BUF_INIT;
	json_error_t jerr;
	struct stat sb;
	json_t *doc;
	int error = 0;

	if (stat(path, &sb) < 0) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "kube-emu: --data %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	doc = json_load_file(path, 0, &jerr);
	if (!doc) {
		fprintf(stderr, "kube-emu: --data %s:%d:%d: %s\n", path,
			jerr.line, jerr.column, jerr.text);
		return -1;
	}
	if (emu_store_restore(st, doc, &msg) < 0) {
		fprintf(stderr, "kube-emu: --data %s: %s\n", path,
			buf_cstr(&msg));
		error = -1;
	}
	buf_release(&msg);
	json_decref(doc);
	return error;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kube-emu --listen HOST:PORT [--token TOKEN] "
		"[--kubeconfig-out FILE]\n"
		"                [--tls [--client-cert-kubeconfig FILE]] "
		"[--data FILE]\n"
		"                [--faults SPEC]... [--webhook SPEC]... "
		"[--rollout SPEC]...\n"
		"                [--no-aggregated-discovery]\n"
		"  --listen HOST:PORT     IPv4 address to serve; PORT 0 picks "
		"a free one\n"
		"  --token TOKEN          require \"Authorization: Bearer "
		"TOKEN\"\n"
		"  --kubeconfig-out FILE  write a kubeconfig for this server\n"
		"  --tls                  serve HTTPS with a throwaway CA "
		"(needs openssl)\n"
		"  --client-cert-kubeconfig FILE\n"
		"                         with --tls: also make a client "
		"certificate (CN=admin)\n"
		"                         and write a kubeconfig that uses it; "
		"accept it\n"
		"                         as well as the token\n"
		"  --data FILE            load the store from FILE, save it "
		"there on changes\n"
		"                         (within ~100 ms) and at exit\n"
		"  --faults SPEC          inject faults (repeatable)\n"
		"  --webhook SPEC         a mutating admission stand-in "
		"(repeatable)\n"
		"  --rollout SPEC         a workload rollout stand-in "
		"(repeatable)\n"
		"  --no-aggregated-discovery\n"
		"                         answer /api and /apis as servers "
		"before 1.26 do\n"
		"                         (plain JSON whatever the Accept "
		"header asks)\n");
}

/* The repeatable flags, in command-line order. */
struct spec_list {
	const char **items;
	size_t len;
};

static int spec_add(struct spec_list *l, const char *spec, size_t max)
{
	if (!l->items && !(l->items = calloc(max, sizeof(*l->items))))
		return -1;
	if (l->len < max)
		l->items[l->len++] = spec;
	return 0;
}

/* Configure the actors of one kind; -1 after a one-line message. */
static int configure_actors(struct emu_actors *a, const char *what,
			    const struct spec_list *l)
{
	struct buf msg = BUF_INIT;
	size_t i;
	int error = 0;

	for (i = 0; i < l->len && !error; i++) {
		if (emu_actors_configure(a, what, l->items[i], &msg) < 0) {
			fprintf(stderr, "kube-emu: --%s %s: %s\n", what,
				l->items[i], buf_cstr(&msg));
			error = -1;
		}
	}
	buf_release(&msg);
	return error;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"token", required_argument, NULL, 't'},
		{"kubeconfig-out", required_argument, NULL, 'k'},
		{"tls", no_argument, NULL, 'T'},
		{"client-cert-kubeconfig", required_argument, NULL, 'C'},
		{"data", required_argument, NULL, 'd'},
		{"faults", required_argument, NULL, 'f'},
		{"webhook", required_argument, NULL, 'w'},
		{"rollout", required_argument, NULL, 'r'},
		{"no-aggregated-discovery", no_argument, NULL, 'A'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct emu_server srv = {0};
	struct emu_tls tls = EMU_TLS_INIT;
	struct persist persist = {0};
	struct spec_list faults = {0}, webhooks = {0}, rollouts = {0}, *list;
	struct MHD_OptionItem tls_opts[4] = {{MHD_OPTION_END, 0, NULL}};
	struct MHD_Daemon *d = NULL;
	const union MHD_DaemonInfo *info;
	struct sockaddr_in sa = {0};
	const char *listen_at = NULL, *kubeconfig = NULL, *data = NULL;
	const char *cert_kubeconfig = NULL;
	char host[64], addr[48], *colon, *end;
	struct buf msg = BUF_INIT;
	unsigned long port;
	unsigned flags;
	sigset_t sigs;
	int c, sig, rc = 2;
	bool store_ok = false, use_tls = false;
	size_t i, max = (size_t)argc;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			listen_at = optarg;
			break;
		case 't':
			srv.token = optarg;
			break;
		case 'k':
			kubeconfig = optarg;
			break;
		case 'T':
			use_tls = true;
			break;
		case 'C':
			cert_kubeconfig = optarg;
			break;
		case 'd':
			data = optarg;
			break;
		case 'A':
			srv.no_aggregated_discovery = true;
			break;
		case 'f':
		case 'w':
		case 'r':
			list = c == 'f' ? &faults : &rollouts;
			if (c == 'w')
				list = &webhooks;
			if (spec_add(list, optarg, max) < 0) {
				fprintf(stderr, "kube-emu: out of memory\n");
				goto out;
			}
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out;
		default:
			usage(stderr);
			goto out;
		}
	}
	if (!listen_at || optind != argc) {
		usage(stderr);
		goto out;
	}
	if (cert_kubeconfig && !use_tls) {
		fprintf(stderr,
			"kube-emu: --client-cert-kubeconfig needs --tls\n");
		goto out;
	}
	colon = strrchr(listen_at, ':');
	if (!colon || (size_t)(colon - listen_at) >= sizeof(addr)) {
		fprintf(stderr, "kube-emu: --listen wants HOST:PORT\n");
		goto out;
	}
	memcpy(addr, listen_at, colon - listen_at);
	addr[colon - listen_at] = '\0';
	port = strtoul(colon + 1, &end, 10);
	sa.sin_family = AF_INET;
	if (*end || port > 65535 ||
	    inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "kube-emu: --listen %s: want IPv4:PORT\n",
			listen_at);
		goto out;
	}
	sa.sin_port = htons((uint16_t)port);

	/* Signals are taken by sigwait() below, never by a handler. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (emu_store_init(&srv.store) < 0) {
		fprintf(stderr, "kube-emu: out of memory\n");
		goto out;
	}
	store_ok = true;
	srv.faults = emu_faults_new();
	srv.store.actors = emu_actors_new(&srv.store);
	if (!srv.faults || !srv.store.actors) {
		fprintf(stderr, "kube-emu: out of memory\n");
		goto out;
	}
	for (i = 0; i < faults.len; i++) {
		buf_reset(&msg);
		if (emu_faults_add_spec(srv.faults, faults.items[i], &msg) <
		    0) {
			fprintf(stderr, "kube-emu: --faults %s: %s\n",
				faults.items[i], buf_cstr(&msg));
			goto out;
		}
	}
	if (configure_actors(srv.store.actors, "webhook", &webhooks) < 0 ||
	    configure_actors(srv.store.actors, "rollout", &rollouts) < 0)
		goto out;
	if (data && load_data(&srv.store, data) < 0)
		goto out;
	if (data) {
		persist.st = &srv.store;
		persist.path = data;
		/* A FILE that cannot be written fails now, not at exit. */
		if (persist_save(&persist) < 0)
			goto out;
		if (persist_start(&persist) < 0) {
			fprintf(stderr, "kube-emu: cannot start a thread\n");
			goto out;
		}
	}
	if (use_tls) {
		buf_reset(&msg);
		if ((cert_kubeconfig
			     ? emu_tls_generate_client(&tls, addr, &msg)
			     : emu_tls_generate(&tls, addr, &msg)) < 0) {
			fprintf(stderr, "kube-emu: --tls: %s\n",
				buf_cstr(&msg));
			goto out;
		}
		tls_opts[0].option = MHD_OPTION_HTTPS_MEM_KEY;
		tls_opts[0].ptr_value = tls.key.ptr;
		tls_opts[1].option = MHD_OPTION_HTTPS_MEM_CERT;
		tls_opts[1].ptr_value = tls.cert.ptr;
	}
	if (cert_kubeconfig) {
		/* libmicrohttpd then asks clients for an optional certificate. */
		tls_opts[2].option = MHD_OPTION_HTTPS_MEM_TRUST;
		tls_opts[2].ptr_value = tls.ca.ptr;
		if (srv.token &&
		    asprintf(&cert_authorization, "Bearer %s", srv.token) < 0) {
			cert_authorization = NULL;
			fprintf(stderr, "kube-emu: out of memory\n");
			goto out;
		}
	}
	flags = MHD_USE_INTERNAL_POLLING_THREAD |
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
	if (use_tls)
		flags |= MHD_USE_TLS;
	d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, &srv,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
			     MHD_OPTION_CONNECTION_TIMEOUT, 120u,
			     MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "kube-emu: cannot listen on %s\n", listen_at);
		goto out;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (info && info->port)
		port = info->port;
	snprintf(host, sizeof(host), "%s:%lu", addr, port);
	srv.host = host;
	if (kubeconfig && write_kubeconfig(kubeconfig, host, srv.token,
					   use_tls ? &tls : NULL, false) < 0)
		goto out;
	if (cert_kubeconfig &&
	    write_kubeconfig(cert_kubeconfig, host, NULL, &tls, true) < 0)
		goto out;
	printf("listening on %s://%s\n", use_tls ? "https" : "http", host);
	fflush(stdout);
	if (sigwait(&sigs, &sig) != 0)
		goto out;
	rc = 0;
out:
	/* Open watches end first, so that stopping does not wait on them. */
	if (store_ok)
		emu_store_shutdown(&srv.store);
	if (d)
		MHD_stop_daemon(d);
	/* The actors write through the store: stop them before it goes. */
	if (store_ok)
		emu_actors_free(srv.store.actors);
	srv.store.actors = NULL;
	/*
	 * The last write of the data file, once nothing writes the store
	 * any more; only after a clean start (a store that failed to load
	 * must not overwrite the file it came from).
	 */
	if (persist.running) {
		persist_stop(&persist);
		if (persist_save(&persist) < 0 && rc == 0)
			rc = 1;
	}
	emu_faults_free(srv.faults);
	if (store_ok)
		emu_store_release(&srv.store);
	emu_tls_release(&tls);
	free(cert_authorization);
	buf_release(&msg);
	free(faults.items);
	free(webhooks.items);
	free(rollouts.items);
	return rc;
}
