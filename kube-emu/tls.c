/*
 * The TLS material of --tls, made by the openssl command (run through
 * util/proc.h: argv only, never a shell, with a timeout).
 *
 * Every run makes a new CA, so a certificate from an earlier run is
 * never trusted by mistake; the CA's key is thrown away once the server
 * certificate is signed. openssl reads a configuration we write
 * ourselves (-config), so the system's openssl.cnf (and OPENSSL_CONF)
 * cannot add or change extensions.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kube-emu/tls.h"
#include "util/err.h"
#include "util/file.h"
#include "util/proc.h"

#include "util/banned.h" /* last */

/* A PEM file openssl writes here is a few KiB; anything bigger is wrong. */
#define PEM_MAX (64u << 10)

/* Validity of the certificates, in days: longer than any test run. */
#define CERT_DAYS "30"

void emu_tls_release(struct emu_tls *t)
{
	buf_release(&t->key);
	buf_release(&t->cert);
	buf_release(&t->ca);
	buf_release(&t->client_key);
	buf_release(&t->client_cert);
}

/* Remove the directory and the files openssl left in it. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4096];

	if (d) {
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
					     de->d_name) < sizeof(path))
				unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

static int write_file(const char *path, const char *text, struct buf *msg)
{
	size_t len = strlen(text);
	int fd, error = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		buf_addf(msg, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (file_write_all(fd, text, len) < 0) {
		buf_addf(msg, "%s: %s", path, strerror(errno));
		error = -1;
	}
	if (close(fd) < 0 && !error) {
		buf_addf(msg, "%s: %s", path, strerror(errno));
		error = -1;
	}
	return error;
}

static int read_pem(const char *path, struct buf *out, struct buf *msg)
{
	char chunk[4096];
	ssize_t n;
	int fd, error = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		buf_addf(msg, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf_reset(out);
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			buf_addf(msg, "%s: %s", path, strerror(errno));
			error = -1;
			break;
		}
		if (n == 0)
			break;
		if (out->len + (size_t)n > PEM_MAX ||
		    buf_add(out, chunk, (size_t)n) < 0) {
			buf_addf(msg, "%s: larger than %u bytes", path,
				 PEM_MAX);
			error = -1;
			break;
		}
	}
	close(fd);
	if (!error && !strstr(buf_cstr(out), "-----BEGIN ")) {
		buf_addf(msg, "%s: openssl wrote no PEM data", path);
		error = -1;
	}
	return error;
}

/*
 * Run one openssl command. On failure, the reason names the step and
 * carries openssl's first line of complaint (one line in all).
 */
static int run_openssl(const char *const *argv, struct buf *msg)
{
	struct proc_options opts = PROC_OPTIONS_INIT;
	struct proc_result res = PROC_RESULT_INIT;
	struct err err = ERR_INIT;
	char how[64];
	const char *line, *end;
	int error = 0;

	opts.timeout_ms = EMU_TLS_OPENSSL_TIMEOUT_MS;
	opts.stdout_cap = PEM_MAX;
	opts.stderr_cap = 16u << 10;
	if (proc_run(&res, argv, &opts, &err) < 0) {
		buf_addf(msg, "%s", err_first(&err));
		error = -1;
		goto out;
	}
	if (!res.exited || res.exit_code != 0) {
		proc_result_describe(&res, how, sizeof(how));
		buf_addf(msg, "openssl %s: %s", argv[1], how);
		/* The first non-blank line of stderr, cut at 200 bytes. */
		line = buf_cstr(&res.errout);
		while (*line == '\n' || *line == '\r' || *line == ' ')
			line++;
		end = line + strcspn(line, "\r\n");
		if (end > line)
			buf_addf(msg, ": %.*s",
				 (int)(end - line > 200 ? 200 : end - line),
				 line);
		error = -1;
	}
out:
	proc_result_release(&res);
	err_release(&err);
	return error;
}

/* "0x" and 16 hex digits of a positive random serial number. */
static void random_serial(char *out, size_t outlen)
{
	unsigned char b[8];
	size_t i, n;

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		unsigned long long v = (unsigned long long)getpid() ^
				       (unsigned long long)time(NULL) << 20;

		for (i = 0; i < sizeof(b); i++)
			b[i] = (unsigned char)(v >> (8 * i));
	}
	b[0] &= 0x7f;
	b[0] |= 0x01; /* never zero, never negative */
	n = (size_t)snprintf(out, outlen, "0x");
	for (i = 0; i < sizeof(b) && n + 2 < outlen; i++)
		n += (size_t)snprintf(out + n, outlen - n, "%02x", b[i]);
}

static int generate(struct emu_tls *t, const char *ip, bool client,
		    struct buf *msg)
{
	struct buf cnf = BUF_INIT;
	char dir[4096], cnf_path[4200], ca_key[4200], ca_crt[4200];
	char srv_key[4200], srv_csr[4200], srv_crt[4200], serial[40];
	char cli_key[4200], cli_csr[4200], cli_crt[4200], cli_serial[40];
	/* clang-format off */
	const char *ca_argv[] = {
		"openssl", "req", "-x509", "-new", "-config", cnf_path,
		"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
		"-nodes", "-keyout", ca_key, "-out", ca_crt,
		"-days", CERT_DAYS, "-subj", "/CN=kube-emu-ca", NULL,
	};
	const char *csr_argv[] = {
		"openssl", "req", "-new", "-config", cnf_path,
		"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
		"-nodes", "-keyout", srv_key, "-out", srv_csr,
		"-subj", "/CN=kube-emu", NULL,
	};
	const char *sign_argv[] = {
		"openssl", "x509", "-req", "-in", srv_csr,
		"-CA", ca_crt, "-CAkey", ca_key, "-set_serial", serial,
		"-days", CERT_DAYS, "-extfile", cnf_path,
		"-extensions", "server_ext", "-out", srv_crt, NULL,
	};
	const char *cli_csr_argv[] = {
		"openssl", "req", "-new", "-config", cnf_path,
		"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
		"-nodes", "-keyout", cli_key, "-out", cli_csr,
		"-subj", "/O=system:masters/CN=admin", NULL,
	};
	const char *cli_sign_argv[] = {
		"openssl", "x509", "-req", "-in", cli_csr,
		"-CA", ca_crt, "-CAkey", ca_key, "-set_serial", cli_serial,
		"-days", CERT_DAYS, "-extfile", cnf_path,
		"-extensions", "client_ext", "-out", cli_crt, NULL,
	};
	/* clang-format on */
	const char *tmpdir = getenv("TMPDIR");
	bool made = false;
	int error = -1;

	buf_init(&t->key, PEM_MAX + 1);
	buf_init(&t->cert, PEM_MAX + 1);
	buf_init(&t->ca, PEM_MAX + 1);
	buf_init(&t->client_key, PEM_MAX + 1);
	buf_init(&t->client_cert, PEM_MAX + 1);
	if (!tmpdir || tmpdir[0] != '/' || strlen(tmpdir) > 2048)
		tmpdir = "/tmp";
	snprintf(dir, sizeof(dir), "%s/kube-emu-tls.XXXXXX", tmpdir);
	/* mkdtemp makes the directory with mode 0700. */
	if (!mkdtemp(dir)) {
		buf_addf(msg, "%s: %s", dir, strerror(errno));
		goto out;
	}
	made = true;
	snprintf(cnf_path, sizeof(cnf_path), "%s/openssl.cnf", dir);
	snprintf(ca_key, sizeof(ca_key), "%s/ca.key", dir);
	snprintf(ca_crt, sizeof(ca_crt), "%s/ca.crt", dir);
	snprintf(srv_key, sizeof(srv_key), "%s/server.key", dir);
	snprintf(srv_csr, sizeof(srv_csr), "%s/server.csr", dir);
	snprintf(srv_crt, sizeof(srv_crt), "%s/server.crt", dir);
	snprintf(cli_key, sizeof(cli_key), "%s/client.key", dir);
	snprintf(cli_csr, sizeof(cli_csr), "%s/client.csr", dir);
	snprintf(cli_crt, sizeof(cli_crt), "%s/client.crt", dir);
	random_serial(serial, sizeof(serial));
	random_serial(cli_serial, sizeof(cli_serial));

	buf_addf(&cnf,
		 "[req]\n"
		 "distinguished_name = dn\n"
		 "prompt = no\n"
		 "x509_extensions = ca_ext\n"
		 "[dn]\n"
		 "CN = kube-emu-ca\n"
		 "[ca_ext]\n"
		 "basicConstraints = critical,CA:TRUE\n"
		 "keyUsage = critical,keyCertSign,cRLSign\n"
		 "subjectKeyIdentifier = hash\n"
		 "[server_ext]\n"
		 "basicConstraints = critical,CA:FALSE\n"
		 "keyUsage = critical,digitalSignature,keyEncipherment\n"
		 "extendedKeyUsage = serverAuth\n"
		 "subjectKeyIdentifier = hash\n"
		 "authorityKeyIdentifier = keyid\n"
		 "subjectAltName = IP:127.0.0.1,DNS:localhost%s%s\n"
		 "[client_ext]\n"
		 "basicConstraints = critical,CA:FALSE\n"
		 "keyUsage = critical,digitalSignature\n"
		 "extendedKeyUsage = clientAuth\n"
		 "subjectKeyIdentifier = hash\n"
		 "authorityKeyIdentifier = keyid\n",
		 strcmp(ip, "127.0.0.1") ? ",IP:" : "",
		 strcmp(ip, "127.0.0.1") ? ip : "");
	if (write_file(cnf_path, buf_cstr(&cnf), msg) < 0)
		goto out;

	if (run_openssl(ca_argv, msg) < 0 || run_openssl(csr_argv, msg) < 0 ||
	    run_openssl(sign_argv, msg) < 0)
		goto out;
	if (client && (run_openssl(cli_csr_argv, msg) < 0 ||
		       run_openssl(cli_sign_argv, msg) < 0 ||
		       read_pem(cli_key, &t->client_key, msg) < 0 ||
		       read_pem(cli_crt, &t->client_cert, msg) < 0))
		goto out;
	if (read_pem(srv_key, &t->key, msg) < 0 ||
	    read_pem(srv_crt, &t->cert, msg) < 0 ||
	    read_pem(ca_crt, &t->ca, msg) < 0)
		goto out;
	error = 0;
out:
	if (made)
		remove_dir(dir);
	buf_release(&cnf);
	return error;
}

int emu_tls_generate(struct emu_tls *t, const char *ip, struct buf *msg)
{
	return generate(t, ip, false, msg);
}

int emu_tls_generate_client(struct emu_tls *t, const char *ip,
			    struct buf *msg)
{
	return generate(t, ip, true, msg);
}
