/*
 * kube-emu's TLS material (--tls): a throwaway CA and a server
 * certificate signed by it, made with the openssl command.
 */
#ifndef KUBE_EMU_TLS_H
#define KUBE_EMU_TLS_H

#include "util/buf.h"

/* Each member a PEM document, NUL-terminated. */
struct emu_tls {
	struct buf key;	 /* the server's private key */
	struct buf cert; /* the server's certificate */
	struct buf ca;	 /* the CA certificate clients trust */
	/* emu_tls_generate_client() only; empty otherwise */
	struct buf client_key;	/* the client's private key */
	struct buf client_cert; /* CN=admin, O=system:masters */
};

#define EMU_TLS_INIT                                             \
	{                                                        \
		BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT \
	}

/* How long one openssl command may run, in ms. */
#define EMU_TLS_OPENSSL_TIMEOUT_MS 30000

/*
 * Fill caller storage *t with a new CA and a server certificate for
 * IP:127.0.0.1, IP:`ip` (the listen address) and DNS:localhost. The
 * files openssl writes live in a private directory (mode 0700) that is
 * removed before returning, whatever the outcome: the keys exist only
 * in memory afterwards. 0, or -1 with a one-line reason appended to
 * `msg` (openssl missing, failing or timing out). Release *t with
 * emu_tls_release() in both cases.
 */
int emu_tls_generate(struct emu_tls *t, const char *ip, struct buf *msg);

/*
 * emu_tls_generate() plus a client certificate (CN=admin,
 * O=system:masters, extendedKeyUsage clientAuth) signed by the same CA
 * before its key is thrown away, in t->client_cert and t->client_key.
 */
int emu_tls_generate_client(struct emu_tls *t, const char *ip,
			    struct buf *msg);

void emu_tls_release(struct emu_tls *t);

#endif
