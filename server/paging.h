/*
 * paging.h - pageSize and page tokens shared by list methods.
 *
 * A page token is opaque and tamper-evident. It carries the position to
 * continue after (one or two int64: a row id, or a log entry's time and
 * id), encrypted, and is bound to a scope: the strings a next page must
 * be asked for with (the list method, its project and location, its
 * filter and order). A token made for another scope, altered in any bit,
 * cut short, or not made with the same key is refused, and the position
 * inside (the database's global row ids) cannot be read without the key.
 *
 * Construction (a deterministic authenticated encryption, SIV-style:
 * Rogaway and Shrimpton's synthetic IV from a PRF, then CTR mode):
 *   mac_key = HMAC-SHA256(key, "trainplane page token mac")
 *   enc_key = HMAC-SHA256(key, "trainplane page token enc")
 *   plain   = the positions, 8 bytes big-endian each
 *   tag     = HMAC-SHA256(mac_key, format | scope | plain), first 16 bytes
 *   token   = base64url-unpadded(format | tag | AES-256-CTR(enc_key, iv = tag, plain))
 * where each scope part is hashed with its length, so that no two scopes
 * collide. The same position and scope always give the same token, which
 * tells nothing but that; there is no nonce to repeat.
 */
#ifndef TP_PAGING_H
#define TP_PAGING_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"

#define PAGE_SIZE_DEFAULT 20
#define PAGE_SIZE_MAX 100

/* The server's page token key (store_page_token_key()), shared by every
 * server of one database. */
#define PAGING_KEY_BYTES 32
/* Positions a token can carry. */
#define PAGING_POS_MAX 2

/*
 * pageSize: NULL or "0" gives the default, above the maximum is clamped.
 * Returns 0, or -1 for a negative or non-numeric value.
 */
int paging_size(const char *text, int *out) MUST_CHECK;

/*
 * A new token (caller frees) for the npos (1..PAGING_POS_MAX) positions
 * pos, bound to the nscope strings of scope (a NULL part reads as "").
 */
char *paging_token_make(const unsigned char key[PAGING_KEY_BYTES], const char *const *scope,
			size_t nscope, const int64_t *pos, size_t npos);

/*
 * Reads a token made with key for this scope and npos positions. 0 with
 * pos[0..npos-1] filled, or -1 for anything else: malformed, truncated,
 * altered, of another format, another scope or another key.
 */
int paging_token_read(const unsigned char key[PAGING_KEY_BYTES], const char *const *scope,
		      size_t nscope, const char *token, int64_t *pos, size_t npos) MUST_CHECK;

/*
 * The same for a text position (a name: Cloud Storage lists by name), of
 * at most 1100 bytes. read returns the position (caller frees) or NULL.
 */
char *paging_token_make_text(const unsigned char key[PAGING_KEY_BYTES], const char *const *scope,
			     size_t nscope, const char *pos);
char *paging_token_read_text(const unsigned char key[PAGING_KEY_BYTES], const char *const *scope,
			     size_t nscope, const char *token);

#endif
