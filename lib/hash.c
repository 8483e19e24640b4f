/*
 * hash.c - MD5 and CRC32C over streams (hash.h).
 */
#include "hash.h"

#include <string.h>

/* --- MD5 (RFC 1321) ------------------------------------------------------- */

/* The four rounds unrolled, constants inline (RFC 1321's reference, as a compiler likes it). */
#define MD5_F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define MD5_G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define MD5_H(x, y, z) ((x) ^ (y) ^ (z))
#define MD5_I(x, y, z) ((y) ^ ((x) | ~(z)))
#define MD5_STEP(f, a, b, c, d, x, t, s) \
	do { \
		(a) += f((b), (c), (d)) + (x) + (uint32_t)(t); \
		(a) = ((a) << (s) | (a) >> (32 - (s))) + (b); \
	} while (0)

static void md5_block(uint32_t h[4], const unsigned char *p)
{
	uint32_t w[16];
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
		       (uint32_t)p[4 * i + 3] << 24;
	MD5_STEP(MD5_F, a, b, c, d, w[0], 0xd76aa478, 7);
	MD5_STEP(MD5_F, d, a, b, c, w[1], 0xe8c7b756, 12);
	MD5_STEP(MD5_F, c, d, a, b, w[2], 0x242070db, 17);
	MD5_STEP(MD5_F, b, c, d, a, w[3], 0xc1bdceee, 22);
	MD5_STEP(MD5_F, a, b, c, d, w[4], 0xf57c0faf, 7);
	MD5_STEP(MD5_F, d, a, b, c, w[5], 0x4787c62a, 12);
	MD5_STEP(MD5_F, c, d, a, b, w[6], 0xa8304613, 17);
	MD5_STEP(MD5_F, b, c, d, a, w[7], 0xfd469501, 22);
	MD5_STEP(MD5_F, a, b, c, d, w[8], 0x698098d8, 7);
	MD5_STEP(MD5_F, d, a, b, c, w[9], 0x8b44f7af, 12);
	MD5_STEP(MD5_F, c, d, a, b, w[10], 0xffff5bb1, 17);
	MD5_STEP(MD5_F, b, c, d, a, w[11], 0x895cd7be, 22);
	MD5_STEP(MD5_F, a, b, c, d, w[12], 0x6b901122, 7);
	MD5_STEP(MD5_F, d, a, b, c, w[13], 0xfd987193, 12);
	MD5_STEP(MD5_F, c, d, a, b, w[14], 0xa679438e, 17);
	MD5_STEP(MD5_F, b, c, d, a, w[15], 0x49b40821, 22);
	MD5_STEP(MD5_G, a, b, c, d, w[1], 0xf61e2562, 5);
	MD5_STEP(MD5_G, d, a, b, c, w[6], 0xc040b340, 9);
	MD5_STEP(MD5_G, c, d, a, b, w[11], 0x265e5a51, 14);
	MD5_STEP(MD5_G, b, c, d, a, w[0], 0xe9b6c7aa, 20);
	MD5_STEP(MD5_G, a, b, c, d, w[5], 0xd62f105d, 5);
	MD5_STEP(MD5_G, d, a, b, c, w[10], 0x02441453, 9);
	MD5_STEP(MD5_G, c, d, a, b, w[15], 0xd8a1e681, 14);
	MD5_STEP(MD5_G, b, c, d, a, w[4], 0xe7d3fbc8, 20);
	MD5_STEP(MD5_G, a, b, c, d, w[9], 0x21e1cde6, 5);
	MD5_STEP(MD5_G, d, a, b, c, w[14], 0xc33707d6, 9);
	MD5_STEP(MD5_G, c, d, a, b, w[3], 0xf4d50d87, 14);
	MD5_STEP(MD5_G, b, c, d, a, w[8], 0x455a14ed, 20);
	MD5_STEP(MD5_G, a, b, c, d, w[13], 0xa9e3e905, 5);
	MD5_STEP(MD5_G, d, a, b, c, w[2], 0xfcefa3f8, 9);
	MD5_STEP(MD5_G, c, d, a, b, w[7], 0x676f02d9, 14);
	MD5_STEP(MD5_G, b, c, d, a, w[12], 0x8d2a4c8a, 20);
	MD5_STEP(MD5_H, a, b, c, d, w[5], 0xfffa3942, 4);
	MD5_STEP(MD5_H, d, a, b, c, w[8], 0x8771f681, 11);
	MD5_STEP(MD5_H, c, d, a, b, w[11], 0x6d9d6122, 16);
	MD5_STEP(MD5_H, b, c, d, a, w[14], 0xfde5380c, 23);
	MD5_STEP(MD5_H, a, b, c, d, w[1], 0xa4beea44, 4);
	MD5_STEP(MD5_H, d, a, b, c, w[4], 0x4bdecfa9, 11);
	MD5_STEP(MD5_H, c, d, a, b, w[7], 0xf6bb4b60, 16);
	MD5_STEP(MD5_H, b, c, d, a, w[10], 0xbebfbc70, 23);
	MD5_STEP(MD5_H, a, b, c, d, w[13], 0x289b7ec6, 4);
	MD5_STEP(MD5_H, d, a, b, c, w[0], 0xeaa127fa, 11);
	MD5_STEP(MD5_H, c, d, a, b, w[3], 0xd4ef3085, 16);
	MD5_STEP(MD5_H, b, c, d, a, w[6], 0x04881d05, 23);
	MD5_STEP(MD5_H, a, b, c, d, w[9], 0xd9d4d039, 4);
	MD5_STEP(MD5_H, d, a, b, c, w[12], 0xe6db99e5, 11);
	MD5_STEP(MD5_H, c, d, a, b, w[15], 0x1fa27cf8, 16);
	MD5_STEP(MD5_H, b, c, d, a, w[2], 0xc4ac5665, 23);
	MD5_STEP(MD5_I, a, b, c, d, w[0], 0xf4292244, 6);
	MD5_STEP(MD5_I, d, a, b, c, w[7], 0x432aff97, 10);
	MD5_STEP(MD5_I, c, d, a, b, w[14], 0xab9423a7, 15);
	MD5_STEP(MD5_I, b, c, d, a, w[5], 0xfc93a039, 21);
	MD5_STEP(MD5_I, a, b, c, d, w[12], 0x655b59c3, 6);
	MD5_STEP(MD5_I, d, a, b, c, w[3], 0x8f0ccc92, 10);
	MD5_STEP(MD5_I, c, d, a, b, w[10], 0xffeff47d, 15);
	MD5_STEP(MD5_I, b, c, d, a, w[1], 0x85845dd1, 21);
	MD5_STEP(MD5_I, a, b, c, d, w[8], 0x6fa87e4f, 6);
	MD5_STEP(MD5_I, d, a, b, c, w[15], 0xfe2ce6e0, 10);
	MD5_STEP(MD5_I, c, d, a, b, w[6], 0xa3014314, 15);
	MD5_STEP(MD5_I, b, c, d, a, w[13], 0x4e0811a1, 21);
	MD5_STEP(MD5_I, a, b, c, d, w[4], 0xf7537e82, 6);
	MD5_STEP(MD5_I, d, a, b, c, w[11], 0xbd3af235, 10);
	MD5_STEP(MD5_I, c, d, a, b, w[2], 0x2ad7d2bb, 15);
	MD5_STEP(MD5_I, b, c, d, a, w[9], 0xeb86d391, 21);
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
}

void md5_init(struct md5 *m)
{
	m->h[0] = 0x67452301;
	m->h[1] = 0xefcdab89;
	m->h[2] = 0x98badcfe;
	m->h[3] = 0x10325476;
	m->len = 0;
}

void md5_update(struct md5 *m, const void *data, size_t n)
{
	const unsigned char *p = data;
	size_t have = (size_t)(m->len % 64);

	m->len += n;
	if (have) {
		size_t take = 64 - have < n ? 64 - have : n;
		memcpy(m->buf + have, p, take);
		p += take;
		n -= take;
		if (have + take < 64)
			return;
		md5_block(m->h, m->buf);
	}
	for (; n >= 64; p += 64, n -= 64)
		md5_block(m->h, p);
	memcpy(m->buf, p, n);
}

void md5_final(struct md5 *m, unsigned char out[16])
{
	static const unsigned char pad[64] = { 0x80 };
	unsigned char bits[8];
	uint64_t len = m->len * 8;
	size_t have = (size_t)(m->len % 64);

	for (int i = 0; i < 8; i++)
		bits[i] = (unsigned char)(len >> (8 * i));
	md5_update(m, pad, have < 56 ? 56 - have : 120 - have);
	md5_update(m, bits, 8);
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 4; k++)
			out[4 * i + k] = (unsigned char)(m->h[i] >> (8 * k));
}

/* --- CRC32C ------------------------------------------------------------------ */

static uint32_t crc_table[8][256];
static int crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];
	__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

#if defined(__x86_64__)
/* SSE4.2's crc32 instruction computes CRC32C: about ten times the table's speed. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
							 size_t n)
{
	uint64_t c = crc;
	for (; n >= 8; p += 8, n -= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	uint32_t c32 = (uint32_t)c;
	for (; n; p++, n--)
		c32 = __builtin_ia32_crc32qi(c32, *p);
	return c32;
}
#endif

static uint32_t crc_sw(uint32_t crc, const unsigned char *p, size_t n)
{
	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc_init();	/* racing initialisers write the same table */
	for (; n >= 8; p += 8, n -= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
	}
	for (; n; p++, n--)
		crc = crc_table[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
	return crc;
}

uint32_t crc32c_update(uint32_t crc, const void *data, size_t n)
{
	const unsigned char *p = data;

	crc = ~crc;
#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return ~crc_hw(crc, p, n);
#endif
	return ~crc_sw(crc, p, n);
}

/* --- both, with a state that travels ------------------------------------------ */

void hash_pair_init(struct hash_pair *p)
{
	md5_init(&p->md5);
	p->crc32c = 0;
}

void hash_pair_update(struct hash_pair *p, const void *data, size_t n)
{
	md5_update(&p->md5, data, n);
	p->crc32c = crc32c_update(p->crc32c, data, n);
}

static void put32(unsigned char *o, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		o[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *in)
{
	return (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 | (uint32_t)in[3] << 24;
}

void hash_pair_save(const struct hash_pair *p, unsigned char out[HASH_STATE_BYTES])
{
	for (int i = 0; i < 4; i++)
		put32(out + 4 * i, p->md5.h[i]);
	put32(out + 16, (uint32_t)p->md5.len);
	put32(out + 20, (uint32_t)(p->md5.len >> 32));
	memcpy(out + 24, p->md5.buf, 64);
	put32(out + 88, p->crc32c);
}

void hash_pair_load(struct hash_pair *p, const unsigned char in[HASH_STATE_BYTES])
{
	for (int i = 0; i < 4; i++)
		p->md5.h[i] = get32(in + 4 * i);
	p->md5.len = (uint64_t)get32(in + 16) | (uint64_t)get32(in + 20) << 32;
	memcpy(p->md5.buf, in + 24, 64);
	p->crc32c = get32(in + 88);
}
