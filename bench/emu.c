/*
 * Benchmark: kube-emu, the API server emulator, as a process on loopback
 * (plain HTTP, no token), driven over keep-alive connections with libcurl.
 *
 *  - load N small ConfigMaps (about 1 KB of JSON each) into one namespace
 *    over one connection: creates per second;
 *  - LIST of the N ConfigMaps: time to first byte and total time, median
 *    of RUNS runs, and the same LIST through `kubectl get -o json` when a
 *    kubeconfig is given (the peer: kubectl spends most of its time
 *    decoding and printing on the client side);
 *  - small GET and small merge-PATCH throughput over two connections (one
 *    thread each), SECONDS seconds per verb;
 *  - memory: the emulator's VmRSS before and after the load, minus the
 *    JSON size of the stored objects, per object.
 *
 * Goals (issue 4): LIST of 10,000 objects under 100 ms of server time,
 * at least 3,000 small requests per second on two cores, under 3 KB per
 * small object beyond its JSON. Client and server share the machine, so
 * the figures are printed as measured. Any non-2xx answer, a wrong item
 * count or a failed kubectl run is an error (exit 1); a missed goal is
 * not (exit 0).
 *
 *   emu URL --pid PID [--namespace NS] [--objects N] [--runs RUNS]
 *           [--seconds SECONDS] [--kubeconfig FILE] [--peer-out FILE]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "util/buf.h"
#include "util/clock.h"

/* A LIST of 10,000 objects is about 15 MB; anything past this is a bug. */
#define BODY_CAP (512u << 20)
#define OBJ_SIZE 1024
#define MAX_RUNS 101
#define THREADS	 2

extern char **environ;

struct client {
	CURL *h;
	struct buf body;
	/* Connections curl had to open: 1 when keep-alive held throughout. */
	long connects;
	char err[CURL_ERROR_SIZE];
};

struct opts {
	const char *url;
	const char *ns;
	const char *kubeconfig;
	const char *peer_out;
	long pid;
	int objects;
	int runs;
	int seconds;
};

/* One worker of the throughput phase: its own connection and objects. */
struct worker {
	const struct opts *o;
	int id;
	int patch;
	struct client c;
	long done;
	double elapsed;
	int failed;
};

static struct curl_slist *hdr_get, *hdr_json, *hdr_merge;

static double now(void)
{
	return (double)clk_mono_ns() / 1e9;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	/* A short count makes curl fail the transfer: the cap was hit. */
	if (buf_add(b, p, size * n) < 0)
		return 0;
	return size * n;
}

static int client_init(struct client *c)
{
	memset(c, 0, sizeof(*c));
	buf_init(&c->body, BODY_CAP);
	c->h = curl_easy_init();
	if (!c->h)
		return -1;
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &c->body);
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->err);
	curl_easy_setopt(c->h, CURLOPT_USERAGENT, "emu-bench");
	curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_TIMEOUT, 120L);
	return 0;
}

static void client_release(struct client *c)
{
	if (c->h)
		curl_easy_cleanup(c->h);
	c->h = NULL;
	buf_release(&c->body);
}

/*
 * One request on the client's connection (reused when the server kept it
 * open). body == NULL sends a GET. Returns the HTTP status, or -1 when no
 * answer came (the cause is printed). The answer is in c->body.
 */
static long request(struct client *c, const char *method, const char *url,
		    struct curl_slist *hdrs, const char *body)
{
	long code = -1, fresh = 0;
	CURLcode rc;

	buf_reset(&c->body);
	c->err[0] = '\0';
	curl_easy_setopt(c->h, CURLOPT_URL, url);
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hdrs);
	if (body) {
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE,
				 (long)strlen(body));
		curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST,
				 strcmp(method, "POST") ? method : NULL);
	} else {
		curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, NULL);
		curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
	}
	rc = curl_easy_perform(c->h);
	if (rc != CURLE_OK) {
		fprintf(stderr, "emu: %s %s: %s\n", method, url,
			c->err[0] ? c->err : curl_easy_strerror(rc));
		goto out;
	}
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(c->h, CURLINFO_NUM_CONNECTS, &fresh);
	c->connects += fresh;
out:
	return code;
}

/* Print the failed request and the start of the Status the server sent. */
static void bad_answer(const struct client *c, const char *what, long code)
{
	fprintf(stderr, "emu: %s: HTTP %ld: %.400s\n", what, code,
		buf_cstr(&c->body));
}

/* VmRSS of a process in bytes, or -1. */
static long long rss_of(long pid)
{
	char path[64], line[256];
	long long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/*
 * The ConfigMap number i, padded with a filler that differs per object
 * so that its JSON is OBJ_SIZE bytes long.
 */
static int make_configmap(struct buf *b, int i)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	size_t fill, k;
	int error;

	buf_reset(b);
	error = buf_addf(b,
			 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			 "\"metadata\":{\"name\":\"cm-%05d\",\"labels\":{"
			 "\"app.kubernetes.io/name\":\"cm-%05d\","
			 "\"app.kubernetes.io/part-of\":\"emu-bench\"}},"
			 "\"data\":{\"LOG_LEVEL\":\"info\","
			 "\"REPLICA_HINT\":\"3\",\"config.yaml\":\"",
			 i, i);
	if (error < 0)
		return error;
	fill = OBJ_SIZE - 3 > b->len ? OBJ_SIZE - 3 - b->len : 0;
	for (k = 0; k < fill && !error; k++)
		error = buf_addch(b, alnum[(k * 7 + (size_t)i) % 36]);
	return error < 0 ? error : buf_adds(b, "\"}}");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Items in a List document, or -1 when it is not one. */
static long count_items(json_t *list)
{
	json_t *items = json_object_get(list, "items");

	return json_is_array(items) ? (long)json_array_size(items) : -1;
}

static int create_namespace(struct client *c, const struct opts *o)
{
	char url[512], body[256];
	long code;

	snprintf(url, sizeof(url), "%s/api/v1/namespaces", o->url);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
		 "\"metadata\":{\"name\":\"%s\"}}",
		 o->ns);
	code = request(c, "POST", url, hdr_json, body);
	if (code == 201)
		return 0;
	bad_answer(c, "create namespace", code);
	return -1;
}

/*
 * Create the ConfigMaps one after the other on one connection. *json gets
 * the size of the objects as the server answered them (what it stores).
 */
static int load(struct client *c, const struct opts *o, double *secs,
		long long *json)
{
	struct buf obj = BUF_INIT;
	char url[512], what[64];
	double t0;
	long code;
	int i, error = 0;

	snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/configmaps", o->url,
		 o->ns);
	*json = 0;
	t0 = now();
	for (i = 0; i < o->objects; i++) {
		if ((error = make_configmap(&obj, i)) < 0)
			goto out;
		code = request(c, "POST", url, hdr_json, obj.ptr);
		if (code != 201) {
			snprintf(what, sizeof(what), "create cm-%05d", i);
			bad_answer(c, what, code);
			error = -1;
			goto out;
		}
		*json += (long long)c->body.len;
	}
	*secs = now() - t0;
out:
	buf_release(&obj);
	return error;
}

/* RUNS LISTs of the namespace; medians of time to first byte and total. */
static int list_runs(struct client *c, const struct opts *o, double *ttfb,
		     double *total, size_t *bytes)
{
	double first[MAX_RUNS], all[MAX_RUNS];
	char url[512];
	curl_off_t us;
	json_error_t jerr;
	json_t *list;
	long code, n;
	int r;

	snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/configmaps", o->url,
		 o->ns);
	for (r = 0; r < o->runs; r++) {
		code = request(c, "GET", url, hdr_get, NULL);
		if (code != 200) {
			bad_answer(c, "list configmaps", code);
			return -1;
		}
		curl_easy_getinfo(c->h, CURLINFO_STARTTRANSFER_TIME_T, &us);
		first[r] = (double)us / 1e6;
		curl_easy_getinfo(c->h, CURLINFO_TOTAL_TIME_T, &us);
		all[r] = (double)us / 1e6;
		*bytes = c->body.len;

		/* Checked outside the timing: a fast wrong answer is no win. */
		list = json_loadb(buf_cstr(&c->body), c->body.len, 0, &jerr);
		n = count_items(list);
		json_decref(list);
		if (n != o->objects) {
			fprintf(stderr, "emu: list: %ld items, want %d%s%s\n",
				n, o->objects, list ? "" : ": ",
				list ? "" : jerr.text);
			return -1;
		}
	}
	*ttfb = median(first, o->runs);
	*total = median(all, o->runs);
	return 0;
}

/* One `kubectl get -o json` run, stdout into o->peer_out; wall seconds. */
static int kubectl_run(const struct opts *o, double *secs)
{
	const char *argv[] = {"kubectl",     "--kubeconfig",
			      o->kubeconfig, "get",
			      "configmaps",  "-n",
			      o->ns,	     "-o",
			      "json",	     "--request-timeout=60s",
			      NULL};
	posix_spawn_file_actions_t fa;
	int status, error;
	double t0;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, o->peer_out,
					 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	t0 = now();
	error = posix_spawnp(&pid, "kubectl", &fa, NULL, (char *const *)argv,
			     environ);
	posix_spawn_file_actions_destroy(&fa);
	if (error) {
		fprintf(stderr, "emu: kubectl: %s\n", strerror(error));
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	*secs = now() - t0;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "emu: kubectl get configmaps failed (%s %d)\n",
			WIFEXITED(status) ? "exit" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status)
					  : WTERMSIG(status));
		return -1;
	}
	return 0;
}

static int kubectl_runs(const struct opts *o, double *med)
{
	double t[MAX_RUNS];
	json_error_t jerr;
	json_t *list;
	long n;
	int r;

	for (r = 0; r < o->runs; r++)
		if (kubectl_run(o, &t[r]) < 0)
			return -1;
	list = json_load_file(o->peer_out, 0, &jerr);
	n = count_items(list);
	json_decref(list);
	if (n != o->objects) {
		fprintf(stderr, "emu: kubectl printed %ld items, want %d\n", n,
			o->objects);
		return -1;
	}
	*med = median(t, o->runs);
	return 0;
}

/*
 * A throughput worker: one warm-up request outside the timing (it opens
 * the connection; the workers' clocks then differ by about one request),
 * then GETs or merge PATCHes of its own objects (every THREADS-th) for
 * o->seconds. Any answer but 200 with that object stops it as failed.
 */
static void *work(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	char url[512], body[128], what[96];
	int i = w->id;
	double t0, end;
	long code;

	snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/configmaps/cm-%05d",
		 o->url, o->ns, i);
	code = request(&w->c, "GET", url, hdr_get, NULL);
	if (code != 200) {
		bad_answer(&w->c, "warm-up get", code);
		w->failed = 1;
		return NULL;
	}
	t0 = now();
	end = t0 + o->seconds;
	while (now() < end) {
		snprintf(url, sizeof(url),
			 "%s/api/v1/namespaces/%s/configmaps/cm-%05d", o->url,
			 o->ns, i);
		if (w->patch) {
			snprintf(body, sizeof(body),
				 "{\"data\":{\"REPLICA_HINT\":\"%ld\"}}",
				 w->done);
			code = request(&w->c, "PATCH", url, hdr_merge, body);
		} else {
			code = request(&w->c, "GET", url, hdr_get, NULL);
		}
		snprintf(what, sizeof(what), "\"name\":\"cm-%05d\"", i);
		/* A 200 must carry the object asked for to count. */
		if (code != 200 || !strstr(buf_cstr(&w->c.body), what)) {
			snprintf(what, sizeof(what), "%s cm-%05d",
				 w->patch ? "merge patch" : "get", i);
			bad_answer(&w->c, what, code);
			w->failed = 1;
			break;
		}
		w->done++;
		i += THREADS;
		if (i >= o->objects)
			i = w->id;
	}
	w->elapsed = now() - t0;
	return NULL;
}

/*
 * Requests per second of THREADS connections (the sum of each worker's
 * rate over its own clock) and the connections they opened.
 */
static int throughput(const struct opts *o, int patch, double *rate,
		      long *conns)
{
	struct worker w[THREADS];
	pthread_t tid[THREADS];
	int t, started = 0, error = 0;

	*rate = 0;
	*conns = 0;
	memset(w, 0, sizeof(w));
	for (t = 0; t < THREADS; t++) {
		w[t].o = o;
		w[t].id = t;
		w[t].patch = patch;
		if (client_init(&w[t].c) < 0) {
			error = -1;
			goto out;
		}
	}
	for (; started < THREADS; started++) {
		if (pthread_create(&tid[started], NULL, work, &w[started])) {
			fprintf(stderr, "emu: cannot start a thread\n");
			error = -1;
			goto out;
		}
	}
out:
	for (t = 0; t < started; t++) {
		pthread_join(tid[t], NULL);
		if (w[t].failed)
			error = -1;
		else if (w[t].elapsed > 0)
			*rate += (double)w[t].done / w[t].elapsed;
		*conns += w[t].c.connects;
	}
	for (t = 0; t < THREADS; t++)
		client_release(&w[t].c);
	return error;
}

static void row(const char *metric, const char *value, const char *goal,
		int met)
{
	printf("%-40s %14s  %-12s %s\n", metric, value, goal,
	       met < 0 ? "-"
	       : met   ? "met"
		       : "MISSED");
}

static int parse_int(const char *s, long min, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || end == s || *end || *out < min || *out > max ? -1 : 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"namespace", required_argument, NULL, 'n'},
		{"objects", required_argument, NULL, 'o'},
		{"runs", required_argument, NULL, 'r'},
		{"seconds", required_argument, NULL, 's'},
		{"kubeconfig", required_argument, NULL, 'k'},
		{"peer-out", required_argument, NULL, 'w'},
		{NULL, 0, NULL, 0},
	};
	long v;
	int c;

	o->ns = "emu-bench";
	o->peer_out = "/dev/null";
	o->objects = 10000;
	o->runs = 5;
	o->seconds = 5;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_int(optarg, 1, 1L << 30, &o->pid) < 0)
				return -1;
			break;
		case 'n':
			o->ns = optarg;
			break;
		case 'o':
			if (parse_int(optarg, THREADS, 99999, &v) < 0)
				return -1;
			o->objects = (int)v;
			break;
		case 'r':
			if (parse_int(optarg, 1, MAX_RUNS, &v) < 0)
				return -1;
			o->runs = (int)v;
			break;
		case 's':
			if (parse_int(optarg, 1, 3600, &v) < 0)
				return -1;
			o->seconds = (int)v;
			break;
		case 'k':
			o->kubeconfig = optarg;
			break;
		case 'w':
			o->peer_out = optarg;
			break;
		default:
			return -1;
		}
	}
	/* Bounded so that every URL built from them fits its buffer. */
	if (optind != argc - 1 || !o->pid || strlen(argv[optind]) > 256 ||
	    strlen(o->ns) > 63)
		return -1;
	o->url = argv[optind];
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	struct client c;
	double load_s, ttfb, total, peer = 0, get_rate, patch_rate, per_obj;
	long long rss0, rss1, json;
	long get_conns, patch_conns, load_conns;
	size_t list_bytes = 0;
	char v[64], m[64];
	int error = 0;

	if (parse_args(argc, argv, &o) < 0) {
		fprintf(stderr,
			"usage: emu URL --pid PID [--namespace NS] "
			"[--objects N] [--runs RUNS]\n"
			"           [--seconds SECONDS] [--kubeconfig FILE] "
			"[--peer-out FILE]\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	hdr_get = curl_slist_append(NULL, "Accept: application/json");
	hdr_json = curl_slist_append(NULL, "Content-Type: application/json");
	/* Bodies of 1 KB would otherwise wait for "100 Continue". */
	hdr_json = curl_slist_append(hdr_json, "Expect:");
	hdr_merge = curl_slist_append(
		NULL, "Content-Type: application/merge-patch+json");
	hdr_merge = curl_slist_append(hdr_merge, "Expect:");
	if (client_init(&c) < 0 || !hdr_get || !hdr_json || !hdr_merge) {
		error = -1;
		goto out;
	}

	if ((error = create_namespace(&c, &o)) < 0)
		goto out;
	rss0 = rss_of(o.pid);
	fprintf(stderr, "loading %d ConfigMaps of %d bytes...\n", o.objects,
		OBJ_SIZE);
	if ((error = load(&c, &o, &load_s, &json)) < 0)
		goto out;
	load_conns = c.connects;
	rss1 = rss_of(o.pid);
	if (rss0 < 0 || rss1 < 0) {
		fprintf(stderr, "emu: cannot read /proc/%ld/status\n", o.pid);
		error = -1;
		goto out;
	}
	fprintf(stderr, "listing %d times...\n", o.runs);
	if ((error = list_runs(&c, &o, &ttfb, &total, &list_bytes)) < 0)
		goto out;
	if (o.kubeconfig) {
		fprintf(stderr, "kubectl get -o json, %d times...\n", o.runs);
		if ((error = kubectl_runs(&o, &peer)) < 0)
			goto out;
	}
	fprintf(stderr, "GET for %d s on %d connections...\n", o.seconds,
		THREADS);
	if ((error = throughput(&o, 0, &get_rate, &get_conns)) < 0)
		goto out;
	fprintf(stderr, "merge PATCH for %d s on %d connections...\n",
		o.seconds, THREADS);
	if ((error = throughput(&o, 1, &patch_rate, &patch_conns)) < 0)
		goto out;

	printf("\n%d ConfigMaps of %d bytes in one namespace; %ld CPUs, "
	       "shared by client and server\n",
	       o.objects, OBJ_SIZE, sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-40s %14s  %-12s %s\n", "metric", "value", "goal", "result");
	/* 1 when the server kept the connection open for the whole load. */
	snprintf(m, sizeof(m), "create (%ld connection%s)", load_conns,
		 load_conns == 1 ? "" : "s");
	snprintf(v, sizeof(v), "%.0f /s", o.objects / load_s);
	row(m, v, "", -1);
	snprintf(m, sizeof(m), "LIST %d: first byte, median", o.objects);
	snprintf(v, sizeof(v), "%.1f ms", ttfb * 1e3);
	row(m, v, "< 100 ms", ttfb < 0.1);
	snprintf(m, sizeof(m), "LIST %d: total, median (%.1f MB)", o.objects,
		 (double)list_bytes / 1e6);
	snprintf(v, sizeof(v), "%.1f ms", total * 1e3);
	row(m, v, "", -1);
	if (o.kubeconfig) {
		snprintf(v, sizeof(v), "%.0f ms", peer * 1e3);
		row("kubectl get -o json, median", v, "", -1);
		snprintf(v, sizeof(v), "%.1fx", total > 0 ? peer / total : 0);
		row("kubectl / LIST total", v, "", -1);
	}
	snprintf(m, sizeof(m), "GET (%ld connections)", get_conns);
	snprintf(v, sizeof(v), "%.0f /s", get_rate);
	row(m, v, ">= 3000 /s", get_rate >= 3000);
	snprintf(m, sizeof(m), "merge PATCH (%ld connections)", patch_conns);
	snprintf(v, sizeof(v), "%.0f /s", patch_rate);
	row(m, v, ">= 3000 /s", patch_rate >= 3000);
	per_obj = (double)(rss1 - rss0 - json) / o.objects;
	snprintf(v, sizeof(v), "%.2f KB", per_obj / 1024);
	row("RSS per object beyond its JSON", v, "< 3 KB", per_obj < 3072);
	printf("\nRSS %.1f MiB before the load, %.1f MiB after; the objects' "
	       "JSON as stored: %.1f MiB\n",
	       (double)rss0 / 1048576, (double)rss1 / 1048576,
	       (double)json / 1048576);
	printf("LIST first byte: the server builds the whole answer before "
	       "sending it, so this is\nits server time; the total adds the "
	       "transfer over loopback.\n");
	if (o.kubeconfig)
		printf("kubectl's time is mostly its own client-side decoding "
		       "and printing of the\nlist, not the server's.\n");
out:
	client_release(&c);
	curl_slist_free_all(hdr_get);
	curl_slist_free_all(hdr_json);
	curl_slist_free_all(hdr_merge);
	curl_global_cleanup();
	return error < 0 ? 1 : 0;
}
