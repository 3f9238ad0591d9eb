/*
 * SHA-256 and HMAC-SHA-256 (FIPS 180-4, RFC 2104), for ApplySet ids,
 * keyed fingerprints of Secret values, cache names and webhook signatures.
 */
#ifndef UTIL_SHA256_H
#define UTIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_BLOCK_SIZE 64

struct sha256_ctx {
	uint32_t state[8];
	uint64_t bytes;        /* total length hashed so far */
	uint8_t block[SHA256_BLOCK_SIZE];
	size_t used;           /* bytes in block */
};

void sha256_init(struct sha256_ctx *ctx);
void sha256_update(struct sha256_ctx *ctx, const void *data, size_t len);
void sha256_final(struct sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_SIZE]);

/* One-shot digest of data[0..len). */
void sha256(const void *data, size_t len, uint8_t out[SHA256_DIGEST_SIZE]);

/* HMAC-SHA-256 of data under key (any key length). */
void hmac_sha256(const void *key, size_t key_len, const void *data,
		 size_t len, uint8_t out[SHA256_DIGEST_SIZE]);

/* Lowercase hex of `len` bytes into out (2 * len + 1 bytes). */
void hex_encode(const uint8_t *data, size_t len, char *out);

/* Constant-time comparison of two byte strings of equal length. */
int timingsafe_memcmp(const void *a, const void *b, size_t len);

#endif
