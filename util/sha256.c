/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), portable C.
 *
 * Words are assembled from bytes explicitly (big-endian), so the code has
 * no alignment or byte-order assumptions.
 */
#include "util/sha256.h"

#include <string.h>

#include "util/banned.h" /* last */

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/*
 * memset() through a volatile pointer: a plain memset of storage that is
 * dead afterwards may be optimised away, and explicit_bzero is not C11.
 */
static void wipe(void *p, size_t len)
{
	volatile uint8_t *v = p;

	while (len--)
		*v++ = 0;
}

static inline uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static inline uint32_t load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline void store_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Process one 64-byte block (FIPS 180-4, 6.2.2). */
static void compress(uint32_t state[8], const uint8_t *block)
{
	uint32_t w[64];
	uint32_t a, b, c, d, e, f, g, h;
	int t;

	for (t = 0; t < 16; t++)
		w[t] = load_be32(block + 4 * t);
	for (t = 16; t < 64; t++) {
		uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^
			      (w[t - 15] >> 3);
		uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^
			      (w[t - 2] >> 10);
		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}

	a = state[0];
	b = state[1];
	c = state[2];
	d = state[3];
	e = state[4];
	f = state[5];
	g = state[6];
	h = state[7];
	for (t = 0; t < 64; t++) {
		uint32_t S1 = ror(e, 6) ^ ror(e, 11) ^ ror(e, 25);
		uint32_t ch = (e & f) ^ (~e & g);
		uint32_t t1 = h + S1 + ch + K[t] + w[t];
		uint32_t S0 = ror(a, 2) ^ ror(a, 13) ^ ror(a, 22);
		uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
		uint32_t t2 = S0 + maj;

		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	state[0] += a;
	state[1] += b;
	state[2] += c;
	state[3] += d;
	state[4] += e;
	state[5] += f;
	state[6] += g;
	state[7] += h;
}

void sha256_init(struct sha256_ctx *ctx)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(ctx->state, iv, sizeof(iv));
	ctx->bytes = 0;
	ctx->used = 0;
}

void sha256_update(struct sha256_ctx *ctx, const void *data, size_t len)
{
	const uint8_t *p = data;

	ctx->bytes += len;
	/* Top up a partial block first. */
	if (ctx->used) {
		size_t n = SHA256_BLOCK_SIZE - ctx->used;

		if (n > len)
			n = len;
		memcpy(ctx->block + ctx->used, p, n);
		ctx->used += n;
		p += n;
		len -= n;
		if (ctx->used < SHA256_BLOCK_SIZE)
			return;
		compress(ctx->state, ctx->block);
		ctx->used = 0;
	}
	/* Whole blocks straight from the input. */
	for (; len >= SHA256_BLOCK_SIZE;
	     p += SHA256_BLOCK_SIZE, len -= SHA256_BLOCK_SIZE)
		compress(ctx->state, p);
	if (len) {
		memcpy(ctx->block, p, len);
		ctx->used = len;
	}
}

/*
 * Pad with 0x80, zeros, and the message length in bits (big-endian, 64
 * bits), then write the digest. The context is wiped: it may have held
 * key material (HMAC).
 */
void sha256_final(struct sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_SIZE])
{
	uint64_t bits = ctx->bytes * 8;
	int i;

	ctx->block[ctx->used++] = 0x80;
	if (ctx->used > SHA256_BLOCK_SIZE - 8) {
		memset(ctx->block + ctx->used, 0,
		       SHA256_BLOCK_SIZE - ctx->used);
		compress(ctx->state, ctx->block);
		ctx->used = 0;
	}
	memset(ctx->block + ctx->used, 0, SHA256_BLOCK_SIZE - 8 - ctx->used);
	for (i = 0; i < 8; i++)
		ctx->block[SHA256_BLOCK_SIZE - 1 - i] =
			(uint8_t)(bits >> (8 * i));
	compress(ctx->state, ctx->block);
	for (i = 0; i < 8; i++)
		store_be32(out + 4 * i, ctx->state[i]);
	wipe(ctx, sizeof(*ctx));
}

void sha256(const void *data, size_t len, uint8_t out[SHA256_DIGEST_SIZE])
{
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, data, len);
	sha256_final(&ctx, out);
}

/*
 * HMAC(K, m) = H((K' ^ opad) || H((K' ^ ipad) || m)), where K' is the key
 * padded with zeros to the block size, or its digest (padded) when the key
 * is longer than a block.
 */
void hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
		 uint8_t out[SHA256_DIGEST_SIZE])
{
	uint8_t k[SHA256_BLOCK_SIZE], pad[SHA256_BLOCK_SIZE];
	uint8_t inner[SHA256_DIGEST_SIZE];
	struct sha256_ctx ctx;
	size_t i;

	memset(k, 0, sizeof(k));
	if (key_len > SHA256_BLOCK_SIZE)
		sha256(key, key_len, k);
	else if (key_len)
		memcpy(k, key, key_len);

	for (i = 0; i < SHA256_BLOCK_SIZE; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&ctx);
	sha256_update(&ctx, pad, sizeof(pad));
	sha256_update(&ctx, data, len);
	sha256_final(&ctx, inner);

	for (i = 0; i < SHA256_BLOCK_SIZE; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&ctx);
	sha256_update(&ctx, pad, sizeof(pad));
	sha256_update(&ctx, inner, sizeof(inner));
	sha256_final(&ctx, out);

	/* Do not leave key material on the stack. */
	wipe(k, sizeof(k));
	wipe(pad, sizeof(pad));
	wipe(inner, sizeof(inner));
}

void hex_encode(const uint8_t *data, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[data[i] >> 4];
		out[2 * i + 1] = digits[data[i] & 0x0f];
	}
	out[2 * len] = '\0';
}

/*
 * OR together the XOR of every byte pair: no early exit and no branch on
 * the data, so the time depends on len only. Returns 0 when equal, 1
 * otherwise (not an ordering, unlike memcmp).
 */
int timingsafe_memcmp(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *pa = a, *pb = b;
	uint8_t acc = 0;
	size_t i;

	for (i = 0; i < len; i++)
		acc |= pa[i] ^ pb[i];
	/* Map 1..255 to 1 without a branch. */
	return (int)((acc + 0xffu) >> 8);
}
