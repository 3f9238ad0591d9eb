/*
 * kube-emu: the command line and the HTTP layer (libmicrohttpd).
 *
 *   kube-emu --listen 127.0.0.1:PORT [--token TOKEN] [--kubeconfig-out FILE]
 *
 * PORT 0 picks a free port; the address served is printed on stdout as
 * "listening on http://HOST:PORT". SIGTERM and SIGINT end it with exit 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <microhttpd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tests/kube-emu/emu.h"

/* How long a watch's reader waits before checking its client, in ms. */
#define WATCH_POLL_MS 200

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
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"application/json");
	ret = MHD_queue_response(conn, (unsigned)resp->code, r);
	MHD_destroy_response(r);
	return ret;
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
	req.body = cs->body.ptr;
	req.body_len = cs->body.len;
	req.body_too_large = cs->too_large;
	emu_handle(srv, &req, &resp);
	free(q.items);
	if (resp.watch) {
		buf_release(&resp.body);
		return queue_watch(conn, &resp);
	}
	r = MHD_create_response_from_buffer(resp.body.len,
					    (void *)buf_cstr(&resp.body),
					    MHD_RESPMEM_MUST_COPY);
	if (!r) {
		buf_release(&resp.body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				resp.content_type ? resp.content_type
						  : "application/json");
	ret = MHD_queue_response(conn, (unsigned)resp.code, r);
	MHD_destroy_response(r);
	buf_release(&resp.body);
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

static int write_kubeconfig(const char *path, const char *host,
			    const char *token)
{
	FILE *f = fopen(path, "w");
	int error = 0;

	if (!f) {
		fprintf(stderr, "kube-emu: %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f,
		"apiVersion: v1\n"
		"kind: Config\n"
		"clusters:\n"
		"- name: kube-emu\n"
		"  cluster:\n"
		"    server: http://%s\n"
		"contexts:\n"
		"- name: kube-emu\n"
		"  context:\n"
		"    cluster: kube-emu\n"
		"    user: kube-emu\n"
		"    namespace: default\n"
		"current-context: kube-emu\n"
		"users:\n"
		"- name: kube-emu\n"
		"  user:\n",
		host);
	if (token)
		fprintf(f, "    token: %s\n", token);
	else
		fprintf(f, "    {}\n");
	if (fclose(f) != 0) {
		fprintf(stderr, "kube-emu: %s: %s\n", path, strerror(errno));
		error = -1;
	}
	return error;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: kube-emu --listen HOST:PORT [--token TOKEN] "
		   "[--kubeconfig-out FILE]\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"token", required_argument, NULL, 't'},
		{"kubeconfig-out", required_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct emu_server srv = {0};
	struct MHD_Daemon *d = NULL;
	const union MHD_DaemonInfo *info;
	struct sockaddr_in sa = {0};
	const char *listen_at = NULL, *kubeconfig = NULL;
	char host[64], addr[48], *colon, *end;
	unsigned long port;
	sigset_t sigs;
	int c, sig, rc = 2;
	bool store_ok = false;

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
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!listen_at || optind != argc) {
		usage(stderr);
		return 2;
	}
	colon = strrchr(listen_at, ':');
	if (!colon || (size_t)(colon - listen_at) >= sizeof(addr)) {
		fprintf(stderr, "kube-emu: --listen wants HOST:PORT\n");
		return 2;
	}
	memcpy(addr, listen_at, colon - listen_at);
	addr[colon - listen_at] = '\0';
	port = strtoul(colon + 1, &end, 10);
	sa.sin_family = AF_INET;
	if (*end || port > 65535 ||
	    inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "kube-emu: --listen %s: want IPv4:PORT\n",
			listen_at);
		return 2;
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
	d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD |
			MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
		0, NULL, NULL, on_request, &srv, MHD_OPTION_SOCK_ADDR,
		(struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT, 120u,
		MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "kube-emu: cannot listen on %s\n", listen_at);
		goto out;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (info && info->port)
		port = info->port;
	snprintf(host, sizeof(host), "%s:%lu", addr, port);
	srv.host = host;
	if (kubeconfig && write_kubeconfig(kubeconfig, host, srv.token) < 0)
		goto out;
	printf("listening on http://%s\n", host);
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
	if (store_ok)
		emu_store_release(&srv.store);
	return rc;
}
