#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "util/sha256.h"

/* Hex of a digest, in a static buffer (one at a time). */
static const char *hex(const uint8_t d[SHA256_DIGEST_SIZE])
{
	static char out[2 * SHA256_DIGEST_SIZE + 1];

	hex_encode(d, SHA256_DIGEST_SIZE, out);
	return out;
}

static const char *digest_of(const void *data, size_t len)
{
	uint8_t d[SHA256_DIGEST_SIZE];

	sha256(data, len, d);
	return hex(d);
}

/* FIPS 180-4 examples (and the NIST "one million a" long message). */
Test(sha256, fips_vectors)
{
	const char *m448 =
		"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	const char *m896 =
		"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
		"hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";

	cr_assert_str_eq(digest_of("", 0), "e3b0c44298fc1c149afbf4c8996fb924"
					   "27ae41e4649b934ca495991b7852b855");
	cr_assert_str_eq(digest_of("abc", 3),
			 "ba7816bf8f01cfea414140de5dae2223"
			 "b00361a396177a9cb410ff61f20015ad");
	cr_assert_eq(strlen(m448) * 8, 448);
	cr_assert_str_eq(digest_of(m448, strlen(m448)),
			 "248d6a61d20638b8e5c026930c3e6039"
			 "a33ce45964ff2167f6ecedd419db06c1");
	cr_assert_eq(strlen(m896) * 8, 896);
	cr_assert_str_eq(digest_of(m896, strlen(m896)),
			 "cf5b16a778af8380036ce59e7b049237"
			 "0b249b11e8f07a51afac45037afee9d1");
}

/* One million 'a' fed in odd-sized chunks that straddle block bounds. */
Test(sha256, million_a_in_odd_chunks)
{
	static const size_t chunks[] = {1, 3, 7, 13, 63, 65, 127, 1000, 4097};
	const char *want = "cdc76e5c9914fb9281a1c7e284d73e67"
			   "f1809a48a497200e046d39ccc7112cd0";
	char *a = malloc(1000000);
	struct sha256_ctx ctx;
	uint8_t d[SHA256_DIGEST_SIZE];
	size_t done = 0, i = 0;

	cr_assert_not_null(a);
	memset(a, 'a', 1000000);

	sha256_init(&ctx);
	while (done < 1000000) {
		size_t n = chunks[i++ % (sizeof(chunks) / sizeof(chunks[0]))];

		if (n > 1000000 - done)
			n = 1000000 - done;
		sha256_update(&ctx, a + done, n);
		done += n;
	}
	sha256_final(&ctx, d);
	cr_assert_str_eq(hex(d), want);

	/* The one-shot form agrees. */
	cr_assert_str_eq(digest_of(a, 1000000), want);
	free(a);
}

/*
 * Lengths around the padding boundary (55 and 56 bytes decide whether the
 * length fits in the last block); expected values from Python's hashlib.
 * Each is also hashed one byte at a time.
 */
Test(sha256, padding_boundaries)
{
	static const struct {
		size_t len;
		const char *hex;
	} cases[] = {
		{55, "16fa57a0a3423a715d594516339f3618"
		     "9d6b5f93754a9714fef202616a9fabfe"},
		{56, "c37b44e5f1b18554b36966f4f8e08bfb"
		     "f3164c4b6c10374d12d89850892073c5"},
		{63, "bbba992d2c85af960fb2987a1fd05e0a"
		     "a82a3db3c740dd8982a9e273b75e36a3"},
		{64, "66bd4633ed6f71c4ecfa4763bf7ba1c8"
		     "ec7612de9aa6c0578a7b675207c71e0b"},
		{65, "9f7dc47107b750a1f3d35db5d9547f24"
		     "ef40da5b731b9540d4f43710a154f6c9"},
		{119, "a3ed307b730fa77c07531300c6e4a282"
		      "330011d4d4caf6bb7b63ae05950f4b66"},
		{120, "8e3b15d9fea7472655aa069620b7f8c2"
		      "e55ee1499f763200a7515fe826e99d20"},
	};
	uint8_t msg[128];
	size_t i, j;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sha256_ctx ctx;
		uint8_t d[SHA256_DIGEST_SIZE];

		cr_assert_str_eq(digest_of(msg, cases[i].len), cases[i].hex,
				 "length %zu", cases[i].len);
		sha256_init(&ctx);
		for (j = 0; j < cases[i].len; j++)
			sha256_update(&ctx, msg + j, 1);
		sha256_update(&ctx, msg, 0);
		sha256_final(&ctx, d);
		cr_assert_str_eq(hex(d), cases[i].hex, "bytewise, length %zu",
				 cases[i].len);
	}
}

/* RFC 4231, test cases 1-7. */
Test(sha256, hmac_rfc4231)
{
	uint8_t key[131], data[152];
	uint8_t d[SHA256_DIGEST_SIZE];
	char h[2 * SHA256_DIGEST_SIZE + 1];
	const char *m;
	size_t i;

	/* 1 */
	memset(key, 0x0b, 20);
	m = "Hi There";
	hmac_sha256(key, 20, m, strlen(m), d);
	cr_assert_str_eq(hex(d), "b0344c61d8db38535ca8afceaf0bf12b"
				 "881dc200c9833da726e9376c2e32cff7");

	/* 2: a key shorter than the digest */
	m = "what do ya want for nothing?";
	hmac_sha256("Jefe", 4, m, strlen(m), d);
	cr_assert_str_eq(hex(d), "5bdcc146bf60754e6a042426089575c7"
				 "5a003f089d2739839dec58b964ec3843");

	/* 3 */
	memset(key, 0xaa, 20);
	memset(data, 0xdd, 50);
	hmac_sha256(key, 20, data, 50, d);
	cr_assert_str_eq(hex(d), "773ea91e36800e46854db8ebd09181a7"
				 "2959098b3ef8c122d9635514ced565fe");

	/* 4 */
	for (i = 0; i < 25; i++)
		key[i] = (uint8_t)(i + 1);
	memset(data, 0xcd, 50);
	hmac_sha256(key, 25, data, 50, d);
	cr_assert_str_eq(hex(d), "82558a389a443c0ea4cc819899f2083a"
				 "85f0faa3e578f8077a2e3ff46729665b");

	/* 5: the RFC gives the output truncated to 128 bits */
	memset(key, 0x0c, 20);
	m = "Test With Truncation";
	hmac_sha256(key, 20, m, strlen(m), d);
	hex_encode(d, 16, h);
	cr_assert_str_eq(h, "a3b6167473100ee06e0c796c2955552b");

	/* 6: a 131-byte key is hashed first */
	memset(key, 0xaa, 131);
	m = "Test Using Larger Than Block-Size Key - Hash Key First";
	hmac_sha256(key, 131, m, strlen(m), d);
	cr_assert_str_eq(hex(d), "60e431591ee0b67f0d8a26aacbf5b77f"
				 "8e0bc6213728c5140546040f0ee37f54");

	/* 7: long key and data longer than a block */
	m = "This is a test using a larger than block-size key and a larger "
	    "than block-size data. The key needs to be hashed before being "
	    "used by the HMAC algorithm.";
	hmac_sha256(key, 131, m, strlen(m), d);
	cr_assert_str_eq(hex(d), "9b09ffa71b942fcb27635fbcd5b0e944"
				 "bfdc63644f0713938a7f51535c3a35e2");
}

/* A key of exactly one block is used as is; one byte more is hashed. */
Test(sha256, hmac_block_sized_key)
{
	uint8_t key[SHA256_BLOCK_SIZE + 1], hashed[SHA256_DIGEST_SIZE];
	uint8_t d1[SHA256_DIGEST_SIZE], d2[SHA256_DIGEST_SIZE];

	memset(key, 0x42, sizeof(key));
	hmac_sha256(key, SHA256_BLOCK_SIZE, "x", 1, d1);
	hmac_sha256(key, SHA256_BLOCK_SIZE + 1, "x", 1, d2);
	cr_assert_neq(memcmp(d1, d2, sizeof(d1)), 0);

	/* HMAC(K) == HMAC(SHA256(K)) for a long K, by definition. */
	sha256(key, sizeof(key), hashed);
	hmac_sha256(hashed, sizeof(hashed), "x", 1, d1);
	cr_assert_eq(memcmp(d1, d2, sizeof(d1)), 0);
}

Test(sha256, hex_encode)
{
	static const uint8_t bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
	char out[2 * sizeof(bytes) + 1];

	memset(out, 'X', sizeof(out));
	hex_encode(bytes, sizeof(bytes), out);
	cr_assert_str_eq(out, "00017f80abff");

	/* Zero bytes still terminate the string. */
	out[0] = 'X';
	hex_encode(bytes, 0, out);
	cr_assert_str_eq(out, "");
}

Test(sha256, timingsafe_memcmp)
{
	uint8_t a[64], b[64];
	size_t i;

	for (i = 0; i < sizeof(a); i++)
		a[i] = b[i] = (uint8_t)(i * 13);
	cr_assert_eq(timingsafe_memcmp(a, b, sizeof(a)), 0);
	cr_assert_eq(timingsafe_memcmp(a, b, 0), 0);

	/* A difference anywhere, in any bit, is seen. */
	for (i = 0; i < sizeof(a); i++) {
		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= (uint8_t)(1u << bit);
			cr_assert_neq(timingsafe_memcmp(a, b, sizeof(a)), 0,
				      "byte %zu bit %d", i, bit);
			b[i] ^= (uint8_t)(1u << bit);
		}
	}
	cr_assert_eq(timingsafe_memcmp(a, b, sizeof(a)), 0);

	/* Only the first len bytes count. */
	b[10] ^= 0xff;
	cr_assert_eq(timingsafe_memcmp(a, b, 10), 0);
	cr_assert_neq(timingsafe_memcmp(a, b, 11), 0);
	cr_assert_neq(timingsafe_memcmp("\x00", "\xff", 1), 0);
}
