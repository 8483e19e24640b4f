/*
 * hash.h - the two digests Cloud Storage reports for an object: MD5 (RFC
 * 1321) and CRC32C (Castagnoli, RFC 3720), computed incrementally over a
 * stream whose state can be saved and resumed (a resumable upload's chunks
 * may reach different servers: the state travels in the database). MD5 is
 * an integrity check here, never a security one.
 */
#ifndef TP_HASH_H
#define TP_HASH_H

#include <stddef.h>
#include <stdint.h>

struct md5 {
	uint32_t h[4];
	uint64_t len;		/* bytes so far */
	unsigned char buf[64];
};

void md5_init(struct md5 *m);
void md5_update(struct md5 *m, const void *data, size_t n);
void md5_final(struct md5 *m, unsigned char out[16]);

/* CRC32C of data, continuing from crc (0 to start). */
uint32_t crc32c_update(uint32_t crc, const void *data, size_t n);

/* Both, as a stream's state; saved and restored as HASH_STATE_BYTES bytes. */
struct hash_pair {
	struct md5 md5;
	uint32_t crc32c;
};
#define HASH_STATE_BYTES (16 + 8 + 64 + 4)
void hash_pair_init(struct hash_pair *p);
void hash_pair_update(struct hash_pair *p, const void *data, size_t n);
void hash_pair_save(const struct hash_pair *p, unsigned char out[HASH_STATE_BYTES]);
void hash_pair_load(struct hash_pair *p, const unsigned char in[HASH_STATE_BYTES]);

#endif
