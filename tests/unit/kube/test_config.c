/*
 * kube_config_load and kube_config_credentials: kubeconfig files written
 * into a temporary directory, $KUBECONFIG merging, the in-cluster mount
 * under $SYNCD_SA_ROOT, and exec plugins that are small shell scripts
 * (run as programs by proc_run, never through a shell by the code under
 * test). Each Criterion test runs in its own process, so setenv() here
 * does not leak into other tests. Also the strict base64 codec.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kube/kube.h"
#include "util/base64.h"

static char tmp[4096];

static void make_tmp(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmp, sizeof(tmp), "%s/kube-config-test.XXXXXX",
		 t && *t == '/' ? t : "/tmp");
	cr_assert_not_null(mkdtemp(tmp));
	unsetenv("KUBECONFIG");
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	unsetenv("SYNCD_SA_ROOT");
	setenv("HOME", tmp, 1);
}

static void remove_tree(const char *dir)
{
	const char *argv[] = {"rm", "-rf", dir, NULL};
	pid_t pid = fork();

	if (pid == 0) {
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static void cleanup_tmp(void)
{
	if (tmp[0])
		remove_tree(tmp);
}

TestSuite(kube_config, .init = make_tmp, .fini = cleanup_tmp);

/* tmp/name, in a static buffer (one of a few rotating ones). */
static const char *at(const char *name)
{
	static char paths[4][4200];
	static unsigned next;
	char *p = paths[next++ % 4];

	snprintf(p, sizeof(paths[0]), "%s/%s", tmp, name);
	return p;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f;
	char dir[4200], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/'))) {
		*slash = '\0';
		mkdir(dir, 0700);
	}
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(path, mode), 0);
}

/* Write a file in place, keeping its inode. */
static void rewrite_in_place(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int c, n = 0;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static char *b64(const char *s)
{
	struct buf b = BUF_INIT;

	cr_assert_eq(base64_encode(&b, s, strlen(s), 0), 0);
	return buf_detach(&b, NULL);
}

/* Load with the given options; returns the code, message in *err. */
static int load(struct kube_config *cfg, const char *kubeconfig,
		const char *context, bool in_cluster, struct err *err)
{
	struct kube_config_options o = {kubeconfig, context, in_cluster};

	return kube_config_load(cfg, &o, err);
}

static const char *FILE_A =
	"apiVersion: v1\n"
	"kind: Config\n"
	"current-context: a\n"
	"clusters:\n"
	"- name: c1\n"
	"  cluster:\n"
	"    server: https://a.example:6443/\n"
	"    insecure-skip-tls-verify: true\n"
	"users:\n"
	"- name: u1\n"
	"  user:\n"
	"    token: token-a\n"
	"contexts:\n"
	"- name: a\n"
	"  context: {cluster: c1, user: u1, namespace: ns-a}\n"
	"- name: shared\n"
	"  context: {cluster: c1, user: u1}\n";

static const char *FILE_B =
	"apiVersion: v1\n"
	"kind: Config\n"
	"current-context: b\n"
	"clusters:\n"
	"- name: c1\n"
	"  cluster: {server: 'https://ignored.example'}\n"
	"- name: c2\n"
	"  cluster:\n"
	"    server: https://b.example:443\n"
	"    tls-server-name: api.b.example\n"
	"    proxy-url: http://proxy.example:3128\n"
	"users:\n"
	"- name: u2\n"
	"  user: {username: alice, password: pw}\n"
	"contexts:\n"
	"- name: b\n"
	"  context: {cluster: c2, user: u2, namespace: ns-b}\n"
	"- name: shared\n"
	"  context: {cluster: c2, user: u2}\n";

Test(kube_config, merges_kubeconfig_files_first_wins)
{
	struct kube_config cfg;
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	struct err err = ERR_INIT;
	char env[9000];

	write_file(at("a.yaml"), FILE_A, 0600);
	write_file(at("b.yaml"), FILE_B, 0600);
	/* A missing file and an empty entry are skipped, as kubectl does. */
	snprintf(env, sizeof(env), "%s::%s:%s:%s", at("a.yaml"),
		 at("missing.yaml"), at("b.yaml"), at("a.yaml"));
	setenv("KUBECONFIG", env, 1);

	cr_assert_eq(load(&cfg, NULL, NULL, false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(cfg.context, "a");
	cr_assert_str_eq(cfg.server, "https://a.example:6443");
	cr_assert(cfg.insecure);
	cr_assert_str_eq(cfg.namespace, "ns-a");
	cr_assert_not_null(strstr(cfg.source, "a.yaml:"));
	cr_assert_not_null(strstr(cfg.source, "b.yaml"));
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_str_eq(buf_cstr(&cr.token), "token-a");
	kube_config_release(&cfg);

	/* The context only b.yaml has; c1 from a.yaml shadows b's c1. */
	cr_assert_eq(load(&cfg, NULL, "b", false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(cfg.server, "https://b.example:443");
	cr_assert_str_eq(cfg.tls_server_name, "api.b.example");
	cr_assert_str_eq(cfg.proxy_url, "http://proxy.example:3128");
	cr_assert_str_eq(cfg.username, "alice");
	cr_assert_str_eq(cfg.password, "pw");
	cr_assert_str_eq(cfg.namespace, "ns-b");
	cr_assert_not(cfg.insecure);
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_eq(cr.token.len, 0);
	kube_config_release(&cfg);

	/* "shared" is in both: a.yaml's entry wins. */
	cr_assert_eq(load(&cfg, NULL, "shared", false, &err), 0);
	cr_assert_str_eq(cfg.server, "https://a.example:6443");
	cr_assert_str_eq(cfg.namespace, "default");
	kube_config_release(&cfg);

	/* Reversed order: b's current-context and c1. */
	snprintf(env, sizeof(env), "%s:%s", at("b.yaml"), at("a.yaml"));
	setenv("KUBECONFIG", env, 1);
	cr_assert_eq(load(&cfg, NULL, "shared", false, &err), 0);
	cr_assert_str_eq(cfg.server, "https://b.example:443");
	kube_config_release(&cfg);
	cr_assert_eq(load(&cfg, NULL, NULL, false, &err), 0);
	cr_assert_str_eq(cfg.context, "b");
	kube_config_release(&cfg);
	kube_credentials_release(&cr);
	err_release(&err);
}

Test(kube_config, home_kube_config_and_explicit_file)
{
	struct kube_config cfg;
	struct err err = ERR_INIT;

	write_file(at(".kube/config"), FILE_A, 0600);
	write_file(at("b.yaml"), FILE_B, 0600);
	cr_assert_eq(load(&cfg, NULL, NULL, false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(cfg.context, "a");
	kube_config_release(&cfg);

	/* --kubeconfig replaces the search entirely. */
	setenv("KUBECONFIG", at(".kube/config"), 1);
	cr_assert_eq(load(&cfg, at("b.yaml"), NULL, false, &err), 0);
	cr_assert_str_eq(cfg.context, "b");
	kube_config_release(&cfg);

	/* An explicit file must exist. */
	cr_assert_lt(load(&cfg, at("nope.yaml"), NULL, false, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "nope.yaml"));
	kube_config_release(&cfg);
	err_release(&err);
}

Test(kube_config, missing_context_cluster_user)
{
	struct kube_config cfg;
	struct err err = ERR_INIT;
	char want[9000];

	write_file(at("k.yaml"),
		   "current-context: x\n"
		   "clusters:\n"
		   "- {name: c, cluster: {server: 'https://h:1'}}\n"
		   "- {name: noserver, cluster: {}}\n"
		   "users:\n"
		   "- {name: u, user: {token: t}}\n"
		   "contexts:\n"
		   "- {name: x, context: {cluster: c, user: u}}\n"
		   "- {name: nocluster, context: {cluster: gone, user: u}}\n"
		   "- {name: nouser, context: {cluster: c, user: gone}}\n"
		   "- {name: noserver, context: {cluster: noserver}}\n",
		   0600);

	cr_assert_eq(load(&cfg, at("k.yaml"), "dev", false, &err),
		     ERR_NOTFOUND);
	snprintf(want, sizeof(want), "kubeconfig %s: context \"dev\" not found",
		 at("k.yaml"));
	cr_assert_str_eq(err_first(&err), want);
	kube_config_release(&cfg);
	err_reset(&err);

	cr_assert_eq(load(&cfg, at("k.yaml"), "nocluster", false, &err),
		     ERR_NOTFOUND);
	cr_assert_not_null(strstr(err_first(&err),
				  "context \"nocluster\": cluster \"gone\" "
				  "not found"));
	kube_config_release(&cfg);
	err_reset(&err);

	cr_assert_eq(load(&cfg, at("k.yaml"), "nouser", false, &err),
		     ERR_NOTFOUND);
	cr_assert_not_null(strstr(err_first(&err),
				  "context \"nouser\": user \"gone\" not "
				  "found"));
	kube_config_release(&cfg);
	err_reset(&err);

	cr_assert_lt(load(&cfg, at("k.yaml"), "noserver", false, &err), 0);
	cr_assert_not_null(strstr(err_first(&err),
				  "cluster \"noserver\": server is not set"));
	kube_config_release(&cfg);
	err_reset(&err);

	/* No current-context and no --context. */
	write_file(at("none.yaml"), "clusters: []\n", 0600);
	cr_assert_lt(load(&cfg, at("none.yaml"), NULL, false, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "current-context"));
	kube_config_release(&cfg);
	err_reset(&err);

	/* No kubeconfig anywhere and not in a cluster. */
	cr_assert_eq(load(&cfg, NULL, NULL, false, &err), ERR_NOTFOUND);
	cr_assert_not_null(strstr(err_first(&err), "no kubeconfig found"));
	kube_config_release(&cfg);
	err_release(&err);
}

Test(kube_config, relative_paths_follow_the_kubeconfig)
{
	struct kube_config cfg;
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	struct err err = ERR_INIT;
	char want[9000];

	write_file(at("ca.crt"), "-----BEGIN CERTIFICATE-----\n", 0600);
	write_file(at("sub/client.crt"), "cert", 0600);
	write_file(at("sub/client.key"), "key", 0600);
	write_file(at("sub/token"), "  file-token\n", 0600);
	write_file(at("sub/config"),
		   "current-context: x\n"
		   "clusters:\n"
		   "- name: c\n"
		   "  cluster:\n"
		   "    server: h.example:6443\n"
		   "    certificate-authority: ../ca.crt\n"
		   "users:\n"
		   "- name: u\n"
		   "  user:\n"
		   "    client-certificate: client.crt\n"
		   "    client-key: client.key\n"
		   "    tokenFile: token\n"
		   "contexts:\n"
		   "- {name: x, context: {cluster: c, user: u}}\n",
		   0600);
	/* A relative --kubeconfig: paths still resolve next to it. */
	cr_assert_eq(chdir(tmp), 0);
	cr_assert_eq(load(&cfg, "sub/config", NULL, false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(cfg.server, "https://h.example:6443");
	snprintf(want, sizeof(want), "%s/sub/../ca.crt", tmp);
	cr_assert_str_eq(cfg.ca_file, want);
	snprintf(want, sizeof(want), "%s/sub/client.crt", tmp);
	cr_assert_str_eq(cfg.cert_file, want);
	snprintf(want, sizeof(want), "%s/sub/client.key", tmp);
	cr_assert_str_eq(cfg.key_file, want);
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_str_eq(buf_cstr(&cr.token), "file-token");
	kube_config_release(&cfg);

	/* A CA file that is not there: named with its key. */
	cr_assert_eq(unlink(at("ca.crt")), 0);
	cr_assert_lt(load(&cfg, "sub/config", NULL, false, &err), 0);
	cr_assert_not_null(strstr(err_first(&err),
				  "cluster \"c\": certificate-authority "));
	cr_assert_not_null(strstr(err_first(&err), "No such file"));
	kube_config_release(&cfg);
	kube_credentials_release(&cr);
	err_release(&err);
}

Test(kube_config, data_fields_decoded)
{
	struct kube_config cfg;
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	struct err err = ERR_INIT;
	char *ca = b64("CA PEM\n"), *crt = b64("CERT PEM"), *key = b64("KEY");
	char text[4096];

	snprintf(text, sizeof(text),
		 "current-context: x\n"
		 "clusters:\n"
		 "- name: c\n"
		 "  cluster:\n"
		 "    server: https://h:1\n"
		 "    certificate-authority-data: %s\n"
		 "users:\n"
		 "- name: u\n"
		 "  user:\n"
		 "    client-certificate-data: %s\n"
		 "    client-key-data: %s\n"
		 "contexts:\n"
		 "- {name: x, context: {cluster: c, user: u}}\n",
		 ca, crt, key);
	write_file(at("k"), text, 0600);
	cr_assert_eq(load(&cfg, at("k"), NULL, false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(cfg.ca_pem.len, 7);
	cr_assert_str_eq(cfg.ca_pem.ptr, "CA PEM\n");
	cr_assert_str_eq(buf_cstr(&cfg.cert_pem), "CERT PEM");
	cr_assert_str_eq(buf_cstr(&cfg.key_pem), "KEY");
	cr_assert_null(cfg.ca_file);
	/* Config certificates are not credentials of the call. */
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_eq(cr.cert_pem.len + cr.token.len, 0);
	kube_config_release(&cfg);
	kube_credentials_release(&cr);
	free(ca);
	free(crt);
	free(key);
	err_release(&err);
}

Test(kube_config, bad_base64_names_file_and_key_not_value)
{
	struct kube_config cfg;
	struct err err = ERR_INIT;
	char want[9000];
	char *crt = b64("CERT");

	snprintf(want, sizeof(want),
		 "current-context: x\n"
		 "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
		 "users:\n"
		 "- name: u\n"
		 "  user:\n"
		 "    client-certificate-data: %s\n"
		 "    client-key-data: SECRET*KEY==\n"
		 "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
		 crt);
	write_file(at("k"), want, 0600);
	cr_assert_eq(load(&cfg, at("k"), NULL, false, &err), ERR_PARSE);
	snprintf(want, sizeof(want),
		 "kubeconfig %s: user \"u\": client-key-data is not base64",
		 at("k"));
	cr_assert_str_eq(err_first(&err), want);
	cr_assert_null(strstr(err_msg(&err), "SECRET"));
	kube_config_release(&cfg);
	free(crt);
	err_release(&err);
}

Test(kube_config, invalid_combinations)
{
	struct kube_config cfg;
	struct err err = ERR_INIT;

	write_file(at("k"),
		   "clusters:\n"
		   "- {name: c, cluster: {server: 'https://h:1'}}\n"
		   "- {name: bad, cluster: {server: 'https://h:1', "
		   "insecure-skip-tls-verify: 'yes please'}}\n"
		   "users:\n"
		   "- {name: both, user: {token: t, username: a, password: "
		   "b}}\n"
		   "- {name: half, user: {client-certificate-data: Q0VSVA==}}\n"
		   "- {name: ap, user: {auth-provider: {name: gcp}}}\n"
		   "contexts:\n"
		   "- {name: both, context: {cluster: c, user: both}}\n"
		   "- {name: half, context: {cluster: c, user: half}}\n"
		   "- {name: ap, context: {cluster: c, user: ap}}\n"
		   "- {name: bad, context: {cluster: bad}}\n",
		   0600);
	cr_assert_lt(load(&cfg, at("k"), "both", false, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "more than one"));
	cr_assert_null(strstr(err_first(&err), ": t"));
	kube_config_release(&cfg);
	err_reset(&err);
	cr_assert_lt(load(&cfg, at("k"), "half", false, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "client-key"));
	kube_config_release(&cfg);
	err_reset(&err);
	cr_assert_lt(load(&cfg, at("k"), "ap", false, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "auth-provider"));
	kube_config_release(&cfg);
	err_reset(&err);
	cr_assert_lt(load(&cfg, at("k"), "bad", false, &err), 0);
	cr_assert_not_null(strstr(err_first(&err),
				  "insecure-skip-tls-verify is not a boolean"));
	kube_config_release(&cfg);
	err_release(&err);
}

/* A service-account mount in tmp/sa and the service env. */
static void make_sa(const char *host)
{
	write_file(at("sa/token"), "sa-token-1\n", 0600);
	write_file(at("sa/ca.crt"), "-----BEGIN CERTIFICATE-----\n", 0600);
	write_file(at("sa/namespace"), "team-a", 0600);
	setenv("SYNCD_SA_ROOT", at("sa"), 1);
	setenv("KUBERNETES_SERVICE_HOST", host, 1);
	setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
}

Test(kube_config, in_cluster_token_rotation)
{
	struct kube_config cfg;
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	struct err err = ERR_INIT;

	make_sa("10.96.0.1");
	cr_assert_eq(load(&cfg, NULL, NULL, true, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(cfg.source, "in-cluster");
	cr_assert_null(cfg.context);
	cr_assert_str_eq(cfg.server, "https://10.96.0.1:6443");
	cr_assert_str_eq(cfg.ca_file, at("sa/ca.crt"));
	cr_assert_str_eq(cfg.namespace, "team-a");
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_str_eq(buf_cstr(&cr.token), "sa-token-1");

	/* The kubelet's atomic writer: a new file renamed over the old. */
	write_file(at("sa/token.new"), "sa-token-2\n", 0600);
	cr_assert_eq(rename(at("sa/token.new"), at("sa/token")), 0);
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_str_eq(buf_cstr(&cr.token), "sa-token-2");

	/* Rewritten in place with another size. */
	rewrite_in_place(at("sa/token"), "sa-token-three");
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_str_eq(buf_cstr(&cr.token), "sa-token-three");

	/* A vanished token is an error naming the file, not a stale token. */
	cr_assert_eq(unlink(at("sa/token")), 0);
	cr_assert_lt(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "sa/token"));
	cr_assert_eq(cr.token.len, 0);
	kube_config_release(&cfg);
	kube_credentials_release(&cr);
	err_release(&err);
}

Test(kube_config, in_cluster_ipv6_and_preference)
{
	struct kube_config cfg;
	struct err err = ERR_INIT;

	make_sa("fd00:10:96::1");
	unlink(at("sa/namespace"));
	cr_assert_eq(load(&cfg, NULL, NULL, true, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(cfg.server, "https://[fd00:10:96::1]:6443");
	cr_assert_str_eq(cfg.namespace, "default");
	kube_config_release(&cfg);

	/* One-shot commands: in-cluster only without any kubeconfig. */
	cr_assert_eq(load(&cfg, NULL, NULL, false, &err), 0);
	cr_assert_str_eq(cfg.source, "in-cluster");
	kube_config_release(&cfg);
	write_file(at(".kube/config"), FILE_A, 0600);
	cr_assert_eq(load(&cfg, NULL, NULL, false, &err), 0);
	cr_assert_str_eq(cfg.server, "https://a.example:6443");
	kube_config_release(&cfg);
	/* The controller prefers the pod's account... */
	cr_assert_eq(load(&cfg, NULL, NULL, true, &err), 0);
	cr_assert_str_eq(cfg.source, "in-cluster");
	kube_config_release(&cfg);
	/* ...unless a context is asked for. */
	cr_assert_eq(load(&cfg, NULL, "a", true, &err), 0);
	cr_assert_str_eq(cfg.context, "a");
	kube_config_release(&cfg);

	/* No token mounted: the controller falls back to a kubeconfig. */
	rename(at("sa/token"), at("sa/token.off"));
	cr_assert_eq(load(&cfg, NULL, NULL, true, &err), 0);
	cr_assert_str_eq(cfg.context, "a");
	kube_config_release(&cfg);
	unlink(at(".kube/config"));
	cr_assert_lt(load(&cfg, NULL, NULL, true, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "in-cluster: "));
	cr_assert_not_null(strstr(err_first(&err), "sa/token"));
	kube_config_release(&cfg);
	err_reset(&err);
	rename(at("sa/token.off"), at("sa/token"));

	setenv("KUBERNETES_SERVICE_PORT", "https", 1);
	cr_assert_lt(load(&cfg, NULL, NULL, true, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "is not a port"));
	kube_config_release(&cfg);
	err_release(&err);
}

/*
 * A kubeconfig whose user runs tmp/plugin.sh (relative to the
 * kubeconfig), with `extra` lines appended to the exec entry.
 */
static void write_exec_config(const char *api, const char *extra)
{
	char text[4096];

	snprintf(text, sizeof(text),
		 "current-context: x\n"
		 "clusters:\n"
		 "- name: c\n"
		 "  cluster:\n"
		 "    server: https://h.example:6443\n"
		 "    certificate-authority-data: Q0EK\n"
		 "    extensions:\n"
		 "    - name: client.authentication.k8s.io/exec\n"
		 "      extension: {audience: test}\n"
		 "users:\n"
		 "- name: u\n"
		 "  user:\n"
		 "    exec:\n"
		 "      apiVersion: %s\n"
		 "      command: ./plugin.sh\n"
		 "      args: [--mode, 'two words']\n"
		 "      env: [{name: PLUGIN_FOO, value: bar}]\n"
		 "      interactiveMode: Never\n"
		 "%s"
		 "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
		 api, extra);
	write_file(at("k"), text, 0600);
}

/* The plugin: counts its runs, prints `status` as an ExecCredential. */
static void write_plugin(const char *api, const char *status)
{
	struct buf text = BUF_INIT;

	buf_addf(&text,
		 "#!/bin/sh\n"
		 "echo run >> '%s/runs'\n"
		 "printf '%%s\\n' \"$*\" > '%s/args'\n"
		 "printf '%%s' \"$PLUGIN_FOO\" > '%s/foo'\n"
		 "printf '%%s' \"$KUBERNETES_EXEC_INFO\" > '%s/info'\n"
		 "cat <<'EOF'\n"
		 "{\"kind\": \"ExecCredential\", \"apiVersion\": \"%s\",\n"
		 " \"status\": %s}\n"
		 "EOF\n",
		 tmp, tmp, tmp, tmp, api, status);
	write_file(at("plugin.sh"), text.ptr, 0755);
	buf_release(&text);
}

static char *slurp(const char *path)
{
	struct buf b = BUF_INIT;
	FILE *f = fopen(path, "r");
	char chunk[1024];
	size_t n;

	cr_assert_not_null(f, "%s", path);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	return buf_detach(&b, NULL);
}

Test(kube_config, exec_token_cached_until_expiry)
{
	struct kube_config cfg;
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	struct err err = ERR_INIT;
	const char *api = "client.authentication.k8s.io/v1";
	char *s;

	write_exec_config(api, "      provideClusterInfo: true\n"
			       "      installHint: install it\n");
	write_plugin(api, "{\"token\": \"exec-token\", "
			  "\"expirationTimestamp\": \"2999-01-01T00:00:00Z\"}");
	cr_assert_eq(load(&cfg, at("k"), NULL, false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(cfg.exec->command, at("plugin.sh"));
	cr_assert(cfg.exec->provide_cluster_info);
	cr_assert_str_eq(cfg.exec->install_hint, "install it");
	cr_assert_str_eq(cfg.exec->env[0], "PLUGIN_FOO=bar");
	/* Loading runs nothing. */
	cr_assert_eq(count_lines(at("runs")), 0);

	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_str_eq(buf_cstr(&cr.token), "exec-token");
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_str_eq(buf_cstr(&cr.token), "exec-token");
	cr_assert_eq(count_lines(at("runs")), 1);

	/* What the plugin saw: its args, env and the cluster info. */
	s = slurp(at("args"));
	cr_assert_str_eq(s, "--mode two words\n");
	free(s);
	s = slurp(at("foo"));
	cr_assert_str_eq(s, "bar");
	free(s);
	s = slurp(at("info"));
	cr_assert_not_null(strstr(s, "\"interactive\":false"), "%s", s);
	cr_assert_not_null(strstr(s, "\"server\":\"https://h.example:6443\""));
	cr_assert_not_null(
		strstr(s, "\"certificate-authority-data\":\"Q0EK\""));
	cr_assert_not_null(strstr(s, "\"config\":{\"audience\":\"test\"}"));
	cr_assert_not_null(strstr(s, "\"apiVersion\":\"client.authentication."
				     "k8s.io/v1\""));
	free(s);

	/* After a 401 the client invalidates: the plugin runs again. */
	kube_config_invalidate(&cfg);
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_eq(count_lines(at("runs")), 2);
	kube_config_release(&cfg);
	kube_credentials_release(&cr);
	err_release(&err);
}

struct hammer {
	struct kube_config *cfg;
	int failures;
};

static void *hammer_credentials(void *arg)
{
	struct hammer *h = arg;
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	int i;

	for (i = 0; i < 50; i++)
		if (kube_config_credentials(h->cfg, &cr, NULL) < 0 ||
		    strcmp(buf_cstr(&cr.token), "exec-token"))
			h->failures++;
	kube_credentials_release(&cr);
	return NULL;
}

Test(kube_config, exec_cache_shared_by_threads)
{
	struct kube_config cfg;
	struct err err = ERR_INIT;
	const char *api = "client.authentication.k8s.io/v1";
	struct hammer h[8];
	pthread_t t[8];
	int i;

	write_exec_config(api, "");
	write_plugin(api, "{\"token\": \"exec-token\", "
			  "\"expirationTimestamp\": \"2999-01-01T00:00:00Z\"}");
	cr_assert_eq(load(&cfg, at("k"), NULL, false, &err), 0, "%s",
		     err_msg(&err));
	for (i = 0; i < 8; i++) {
		h[i].cfg = &cfg;
		h[i].failures = 0;
		cr_assert_eq(
			pthread_create(&t[i], NULL, hammer_credentials, &h[i]),
			0);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(h[i].failures, 0);
	}
	/* 400 calls from 8 threads: one plugin run. */
	cr_assert_eq(count_lines(at("runs")), 1);
	kube_config_release(&cfg);
	err_release(&err);
}

Test(kube_config, exec_expired_or_no_expiry)
{
	struct kube_config cfg;
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	struct err err = ERR_INIT;
	const char *api = "client.authentication.k8s.io/v1beta1";

	/* v1beta1 needs no interactiveMode; no cluster info asked for. */
	write_exec_config(api, "");
	write_plugin(api, "{\"token\": \"old\", "
			  "\"expirationTimestamp\": "
			  "\"2001-02-03T04:05:06.789+01:00\"}");
	cr_assert_eq(load(&cfg, at("k"), NULL, false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_str_eq(buf_cstr(&cr.token), "old");
	cr_assert_eq(count_lines(at("runs")), 2);
	{
		char *s = slurp(at("info"));

		cr_assert_null(strstr(s, "cluster"), "%s", s);
		free(s);
	}

	/* Without expirationTimestamp: cached until invalidated. */
	write_plugin(api, "{\"token\": \"forever\"}");
	kube_config_invalidate(&cfg);
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_str_eq(buf_cstr(&cr.token), "forever");
	cr_assert_eq(count_lines(at("runs")), 3);
	kube_config_release(&cfg);
	kube_credentials_release(&cr);
	err_release(&err);
}

Test(kube_config, exec_client_certificate)
{
	struct kube_config cfg;
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	struct err err = ERR_INIT;
	const char *api = "client.authentication.k8s.io/v1";

	write_exec_config(api, "");
	write_plugin(api, "{\"clientCertificateData\": \"-----BEGIN "
			  "CERTIFICATE-----\\nX\\n\", \"clientKeyData\": "
			  "\"-----BEGIN PRIVATE KEY-----\\nY\\n\"}");
	cr_assert_eq(load(&cfg, at("k"), NULL, false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(cr.token.len, 0);
	cr_assert_str_eq(buf_cstr(&cr.cert_pem),
			 "-----BEGIN CERTIFICATE-----\nX\n");
	cr_assert_str_eq(buf_cstr(&cr.key_pem),
			 "-----BEGIN PRIVATE KEY-----\nY\n");
	kube_config_release(&cfg);

	/* A certificate without its key is refused. */
	write_plugin(api, "{\"clientCertificateData\": \"C\"}");
	cr_assert_eq(load(&cfg, at("k"), NULL, false, &err), 0);
	cr_assert_lt(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "clientKeyData"));
	kube_config_release(&cfg);
	kube_credentials_release(&cr);
	err_release(&err);
}

Test(kube_config, exec_failure_shows_stderr_not_stdout)
{
	struct kube_config cfg;
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	struct err err = ERR_INIT;
	const char *api = "client.authentication.k8s.io/v1";

	write_exec_config(api, "");
	write_file(at("plugin.sh"),
		   "#!/bin/sh\n"
		   "echo '{\"status\": {\"token\": \"STDOUT-SECRET\"}}'\n"
		   "echo 'login failed: identity provider unreachable' >&2\n"
		   "exit 3\n",
		   0755);
	cr_assert_eq(load(&cfg, at("k"), NULL, false, &err), 0);
	cr_assert_lt(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "user \"u\": exec plugin "),
			   "%s", err_first(&err));
	cr_assert_not_null(strstr(err_first(&err),
				  "exit status 3: login failed: identity "
				  "provider unreachable"),
			   "%s", err_first(&err));
	cr_assert_null(strstr(err_msg(&err), "STDOUT-SECRET"));
	err_reset(&err);

	/* Exit 0 with garbage: no quote of the output either. */
	write_file(at("plugin.sh"), "#!/bin/sh\necho 'token: STDOUT-SECRET'\n",
		   0755);
	cr_assert_lt(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "not a JSON"));
	cr_assert_null(strstr(err_msg(&err), "STDOUT-SECRET"));
	err_reset(&err);

	/* The wrong apiVersion. */
	write_plugin("client.authentication.k8s.io/v1alpha1",
		     "{\"token\": \"t\"}");
	cr_assert_lt(kube_config_credentials(&cfg, &cr, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "v1alpha1"));
	kube_config_release(&cfg);
	kube_credentials_release(&cr);
	err_release(&err);
}

Test(kube_config, exec_missing_command_install_hint)
{
	struct kube_config cfg;
	struct kube_credentials cr = KUBE_CREDENTIALS_INIT;
	struct err err = ERR_INIT;

	write_file(at("k"),
		   "current-context: x\n"
		   "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
		   "users:\n"
		   "- name: u\n"
		   "  user:\n"
		   "    exec:\n"
		   "      apiVersion: client.authentication.k8s.io/v1\n"
		   "      command: syncd-test-no-such-plugin\n"
		   "      interactiveMode: IfAvailable\n"
		   "      installHint: |\n"
		   "        Install it with: apt-get install the-plugin\n"
		   "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
		   0600);
	cr_assert_eq(load(&cfg, at("k"), NULL, false, &err), 0, "%s",
		     err_msg(&err));
	cr_assert_eq(kube_config_credentials(&cfg, &cr, &err), ERR_NOTFOUND);
	cr_assert_not_null(strstr(err_first(&err),
				  "exec plugin syncd-test-no-such-plugin not "
				  "found: Install it with: apt-get install "
				  "the-plugin"),
			   "%s", err_first(&err));
	cr_assert_eq(err_count(&err), 1);
	kube_config_release(&cfg);
	kube_credentials_release(&cr);
	err_release(&err);
}

Test(kube_config, exec_config_errors)
{
	struct kube_config cfg;
	struct err err = ERR_INIT;

	write_exec_config("client.authentication.k8s.io/v1alpha1", "");
	cr_assert_lt(load(&cfg, at("k"), NULL, false, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "is not supported"));
	kube_config_release(&cfg);
	err_reset(&err);

	write_file(at("k"),
		   "current-context: x\n"
		   "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
		   "users: [{name: u, user: {exec: {apiVersion: "
		   "client.authentication.k8s.io/v1, command: p}}}]\n"
		   "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
		   0600);
	cr_assert_lt(load(&cfg, at("k"), NULL, false, &err), 0);
	cr_assert_not_null(strstr(err_first(&err), "interactiveMode must"));
	kube_config_release(&cfg);
	err_release(&err);
}

/*
 * Data-driven cases: tests/cases/kubeconfig/<case>/config, an optional
 * `context` file (the --context value) and `expected`: either
 * "error: <first problem>" or the loaded config, one "key: value" line
 * per field that is set (PEM bytes counted, the password hidden). {dir}
 * stands for the case directory.
 */
#define CASES "tests/cases/kubeconfig"

static void line(struct buf *b, const char *name, const char *v)
{
	if (v)
		buf_addf(b, "%s: %s\n", name, v);
}

static void bytes(struct buf *b, const char *name, const struct buf *v)
{
	if (v->len)
		buf_addf(b, "%s: %zu bytes\n", name, v->len);
}

static void describe(struct buf *b, const struct kube_config *cfg)
{
	size_t i;

	line(b, "source", cfg->source);
	line(b, "context", cfg->context);
	line(b, "server", cfg->server);
	line(b, "namespace", cfg->namespace);
	line(b, "ca_file", cfg->ca_file);
	bytes(b, "ca_pem", &cfg->ca_pem);
	if (cfg->insecure)
		buf_adds(b, "insecure: true\n");
	line(b, "tls_server_name", cfg->tls_server_name);
	line(b, "proxy_url", cfg->proxy_url);
	line(b, "cert_file", cfg->cert_file);
	line(b, "key_file", cfg->key_file);
	bytes(b, "cert_pem", &cfg->cert_pem);
	bytes(b, "key_pem", &cfg->key_pem);
	line(b, "token", cfg->token);
	line(b, "token_file", cfg->token_file);
	line(b, "username", cfg->username);
	if (cfg->password)
		buf_adds(b, "password: (set)\n");
	if (cfg->exec) {
		buf_addf(b, "exec: %s", cfg->exec->command);
		for (i = 0; cfg->exec->args[i]; i++)
			buf_addf(b, " %s", cfg->exec->args[i]);
		buf_addf(b, "\nexec_api: %s\n", cfg->exec->api_version);
		for (i = 0; cfg->exec->env[i]; i++)
			buf_addf(b, "exec_env: %s\n", cfg->exec->env[i]);
		if (cfg->exec->provide_cluster_info)
			buf_adds(b, "exec_provide_cluster_info: true\n");
		line(b, "exec_install_hint", cfg->exec->install_hint);
	}
}

/* `text` with every occurrence of `dir` replaced by "{dir}". */
static char *placeholders(const char *text, const char *dir)
{
	struct buf b = BUF_INIT;
	const char *p;
	size_t n = strlen(dir);

	while ((p = strstr(text, dir))) {
		buf_add(&b, text, (size_t)(p - text));
		buf_adds(&b, "{dir}");
		text = p + n;
	}
	buf_adds(&b, text);
	return buf_detach(&b, NULL);
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	struct buf b = BUF_INIT;
	char chunk[1024];
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&b, chunk, n);
	fclose(f);
	return buf_detach(&b, NULL);
}

Test(kube_config_cases, every_case)
{
	DIR *d = opendir(CASES);
	struct dirent *de;
	char cwd[2048], dir[4096], path[4200], *want, *got, *ctx;
	unsigned ncases = 0;

	cr_assert_not_null(d, "%s: %s", CASES, strerror(errno));
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	while ((de = readdir(d))) {
		struct kube_config cfg;
		struct err err = ERR_INIT;
		struct buf b = BUF_INIT;

		if (de->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/" CASES "/%.200s", cwd,
			 de->d_name);
		snprintf(path, sizeof(path), "%s/expected", dir);
		want = read_text(path);
		cr_assert_not_null(want, "%s: no expected file", de->d_name);
		snprintf(path, sizeof(path), "%s/context", dir);
		ctx = read_text(path);
		if (ctx)
			ctx[strcspn(ctx, "\n")] = '\0';
		snprintf(path, sizeof(path), "%s/config", dir);
		if (load(&cfg, path, ctx, false, &err) < 0)
			buf_addf(&b, "error: %s\n", err_first(&err));
		else
			describe(&b, &cfg);
		got = placeholders(buf_cstr(&b), dir);
		cr_expect_str_eq(got, want, "case %s:\n--- got\n%s--- want\n%s",
				 de->d_name, got, want);
		kube_config_release(&cfg);
		err_release(&err);
		buf_release(&b);
		free(got);
		free(want);
		free(ctx);
		ncases++;
	}
	closedir(d);
	cr_assert_geq(ncases, 10);
}

/* ------------------------------------------------------------------ */

static void check_decode(const char *in, unsigned flags, const char *want)
{
	struct buf b = BUF_INIT;
	int r = base64_decode(&b, in, strlen(in), flags);

	if (!want) {
		cr_assert_eq(r, ERR_PARSE, "\"%s\" decoded", in);
		cr_assert_eq(b.len, 0);
	} else {
		cr_assert_eq(r, 0, "\"%s\" not decoded", in);
		cr_assert_eq(b.len, strlen(want));
		cr_assert_eq(memcmp(buf_cstr(&b), want, b.len), 0);
	}
	buf_release(&b);
}

Test(base64, rfc4648_vectors)
{
	static const char *plain[] = {"",     "f",     "fo",	"foo",
				      "foob", "fooba", "foobar"};
	static const char *enc[] = {"",		"Zg==",	    "Zm8=",    "Zm9v",
				    "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	size_t i;

	for (i = 0; i < 7; i++) {
		struct buf b = BUF_INIT;

		cr_assert_eq(base64_encode(&b, plain[i], strlen(plain[i]), 0),
			     0);
		cr_assert_str_eq(buf_cstr(&b), enc[i]);
		buf_release(&b);
		check_decode(enc[i], 0, plain[i]);
	}
}

Test(base64, strict_and_url)
{
	struct buf b = BUF_INIT;

	check_decode("Zg", 0, NULL);	       /* missing padding */
	check_decode("Zg", BASE64_NOPAD, "f"); /* allowed when asked */
	check_decode("Zh==", 0, NULL);	       /* non-zero trailing bits */
	check_decode("Zm9=", 0, NULL);
	/* ... which Go's non-strict StdEncoding (YAML !!binary) accepts */
	check_decode("Zh==", BASE64_ANY_LAST_BITS, "f");
	check_decode("Zm9=", BASE64_ANY_LAST_BITS, "fo");
	check_decode("Zh", BASE64_ANY_LAST_BITS, NULL);
	check_decode("Z===", 0, NULL);
	check_decode("Zg==Zg==", 0, NULL); /* data after padding */
	check_decode("Zg=", 0, NULL);
	check_decode("Zm9v\n", 0, NULL);
	check_decode("Zm9v\r\nYmFy", BASE64_SKIP_NEWLINES, "foobar");
	check_decode("Zm 9v", BASE64_SKIP_NEWLINES, NULL);
	check_decode("-_8=", 0, NULL);
	check_decode("-_8=", BASE64_URL, "\xfb\xff");
	check_decode("-_8", BASE64_URL | BASE64_NOPAD, "\xfb\xff");
	check_decode("+/8=", 0, "\xfb\xff");
	check_decode("+/8=", BASE64_URL, NULL);

	cr_assert_eq(
		base64_encode(&b, "\xfb\xff", 2, BASE64_URL | BASE64_NOPAD), 0);
	cr_assert_str_eq(buf_cstr(&b), "-_8");
	buf_release(&b);
	/* A failed decode leaves what was there. */
	buf_adds(&b, "keep");
	cr_assert_eq(base64_decode(&b, "Zm9vY", 5, 0), ERR_PARSE);
	cr_assert_str_eq(buf_cstr(&b), "keep");
	buf_release(&b);
}
