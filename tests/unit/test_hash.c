/*
 * test_hash.c - MD5 and CRC32C (lib/hash.c): the RFC's and the standard's
 * test vectors, any split of a stream giving the same digest, and a state
 * saved and loaded (a resumable upload's chunks on different servers).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hash.h"

static void hex(const unsigned char *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void md5_of(const char *s, char out[33])
{
	struct md5 m;
	unsigned char d[16];
	md5_init(&m);
	md5_update(&m, s, strlen(s));
	md5_final(&m, d);
	hex(d, 16, out);
}

/* RFC 1321, appendix A.5. */
static void md5_rfc1321_suite(void **state)
{
	static const char *const v[][2] = {
		{ "", "d41d8cd98f00b204e9800998ecf8427e" },
		{ "a", "0cc175b9c0f1b6a831c399e269772661" },
		{ "abc", "900150983cd24fb0d6963f7d28e17f72" },
		{ "message digest", "f96b697d7cb7938d525a2f31aaf161d0" },
		{ "abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b" },
		{ "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
		  "d174ab98d277d9f5a5611c2c9f419d9f" },
		{ "1234567890123456789012345678901234567890123456789012345678901234567890123456"
		  "7890", "57edf4a22be3c955ac49da2e2107b67a" },
	};
	char out[33];
	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		md5_of(v[i][0], out);
		assert_string_equal(out, v[i][1]);
	}
}

/* CRC-32C check value (RFC 3720 B.4's polynomial): "123456789" is e3069283; iSCSI's 32 zeros. */
static void crc32c_check_values(void **state)
{
	unsigned char zeros[32] = { 0 }, ones[32];
	(void)state;
	memset(ones, 0xff, sizeof(ones));
	assert_int_equal(crc32c_update(0, "123456789", 9), 0xe3069283);
	assert_int_equal(crc32c_update(0, zeros, 32), 0x8a9136aa);
	assert_int_equal(crc32c_update(0, ones, 32), 0x62a8ab43);
	assert_int_equal(crc32c_update(0, "", 0), 0);
}

/* Any split of a stream, and a state saved and loaded between the parts, give the same digests. */
static void splits_and_saved_states_agree(void **state)
{
	static unsigned char data[100003];
	struct hash_pair whole, parts;
	unsigned char a[16], b[16], saved[HASH_STATE_BYTES];
	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + (i >> 8));
	hash_pair_init(&whole);
	hash_pair_update(&whole, data, sizeof(data));
	md5_final(&whole.md5, a);
	static const size_t cuts[] = { 0, 1, 63, 64, 65, 4096, 50001, 100002 };
	for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
		hash_pair_init(&parts);
		hash_pair_update(&parts, data, cuts[k]);
		hash_pair_save(&parts, saved);
		struct hash_pair resumed;
		memset(&resumed, 0xa5, sizeof(resumed));
		hash_pair_load(&resumed, saved);
		hash_pair_update(&resumed, data + cuts[k], sizeof(data) - cuts[k]);
		assert_int_equal(resumed.crc32c, whole.crc32c);
		md5_final(&resumed.md5, b);
		assert_memory_equal(a, b, 16);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(md5_rfc1321_suite),
		cmocka_unit_test(crc32c_check_values),
		cmocka_unit_test(splits_and_saved_states_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
