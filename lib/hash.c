/*
 * hash.c - MD5 and CRC32C over streams (hash.h).
 */
#include "hash.h"

#include <string.h>

/* --- MD5 (RFC 1321) ------------------------------------------------------- */

static const uint32_t md5_k[64] = {
	0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613,
	0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193,
	0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d,
	0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
	0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
	0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
	0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244,
	0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
	0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
	0xeb86d391,
};

static const unsigned char md5_r[64] = {
	7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
	5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
	4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
	6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};

static uint32_t rol(uint32_t x, unsigned c)
{
	return x << c | x >> (32 - c);
}

static void md5_block(uint32_t h[4], const unsigned char *p)
{
	uint32_t w[16];
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
		       (uint32_t)p[4 * i + 3] << 24;
	for (unsigned i = 0; i < 64; i++) {
		uint32_t f;
		unsigned g;
		if (i < 16) {
			f = (b & c) | (~b & d);
			g = i;
		} else if (i < 32) {
			f = (d & b) | (~d & c);
			g = (5 * i + 1) % 16;
		} else if (i < 48) {
			f = b ^ c ^ d;
			g = (3 * i + 5) % 16;
		} else {
			f = c ^ (b | ~d);
			g = (7 * i) % 16;
		}
		uint32_t t = d;
		d = c;
		c = b;
		b = b + rol(a + f + md5_k[i] + w[g], md5_r[i]);
		a = t;
	}
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
