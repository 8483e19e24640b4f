#include "paging.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "wire.h"

/* The first byte of every token: another format (the old "tp1." text
 * tokens included) is refused. */
#define TOKEN_FORMAT 0x01
#define TAG_BYTES 16
#define TOKEN_MAX_BYTES (1 + TAG_BYTES + 8 * PAGING_POS_MAX)

/* The two keys derived from the server's: one for the MAC, one for the cipher. */
static const char mac_label[] = "trainplane page token mac";
static const char enc_label[] = "trainplane page token enc";

int paging_size(const char *text, int *out)
{
	int64_t v;

	*out = PAGE_SIZE_DEFAULT;
	if (!text || !*text)
		return 0;
	if (wire_int64_parse(text, &v) || v < 0)
		return -1;
	if (v > 0)
		*out = v > PAGE_SIZE_MAX ? PAGE_SIZE_MAX : (int)v;
	return 0;
}

/* HMAC-SHA256; libcrypto fails only without memory, as xmalloc aborts. */
static void hmac_sha256(const unsigned char *key, const void *data, size_t len,
			unsigned char out[32])
{
	unsigned int n = 32;

	if (!HMAC(EVP_sha256(), key, 32, data, len, out, &n) || n != 32)
		abort();
}

static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t get_be64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The synthetic IV: a MAC of the format, the scope and the plaintext. */
static void token_tag(const unsigned char *key, const char *const *scope, size_t nscope,
		      const unsigned char *plain, size_t nplain, unsigned char tag[TAG_BYTES])
{
	unsigned char mac_key[32], full[32], len[8];
	struct strbuf msg = STRBUF_INIT;

	hmac_sha256(key, mac_label, sizeof(mac_label) - 1, mac_key);
	sb_addch(&msg, TOKEN_FORMAT);
	put_be64(len, nscope);
	sb_add(&msg, len, sizeof(len));
	for (size_t i = 0; i < nscope; i++) {
		const char *part = scope[i] ? scope[i] : "";
		put_be64(len, strlen(part));
		sb_add(&msg, len, sizeof(len));
		sb_addstr(&msg, part);
	}
	sb_add(&msg, plain, nplain);
	hmac_sha256(mac_key, msg.buf, msg.len, full);
	memcpy(tag, full, TAG_BYTES);
	OPENSSL_cleanse(mac_key, sizeof(mac_key));
	sb_release(&msg);
}

/* AES-256-CTR with iv = tag: encrypts and decrypts alike. */
static void token_ctr(const unsigned char *key, const unsigned char iv[TAG_BYTES],
		      const unsigned char *in, size_t n, unsigned char *out)
{
	unsigned char enc_key[32];
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int len = 0;

	hmac_sha256(key, enc_label, sizeof(enc_label) - 1, enc_key);
	if (!ctx || !EVP_EncryptInit_ex(ctx, EVP_aes_256_ctr(), NULL, enc_key, iv) ||
	    !EVP_EncryptUpdate(ctx, out, &len, in, (int)n) || len != (int)n)
		abort();
	EVP_CIPHER_CTX_free(ctx);
	OPENSSL_cleanse(enc_key, sizeof(enc_key));
}

char *paging_token_make(const unsigned char key[PAGING_KEY_BYTES], const char *const *scope,
			size_t nscope, const int64_t *pos, size_t npos)
{
	unsigned char plain[8 * PAGING_POS_MAX], raw[TOKEN_MAX_BYTES];

	if (npos < 1 || npos > PAGING_POS_MAX)
		abort();
	for (size_t i = 0; i < npos; i++)
		put_be64(plain + 8 * i, (uint64_t)pos[i]);
	raw[0] = TOKEN_FORMAT;
	token_tag(key, scope, nscope, plain, 8 * npos, raw + 1);
	token_ctr(key, raw + 1, plain, 8 * npos, raw + 1 + TAG_BYTES);
	return wire_base64_encode(raw, 1 + TAG_BYTES + 8 * npos, true);
}

int paging_token_read(const unsigned char key[PAGING_KEY_BYTES], const char *const *scope,
		      size_t nscope, const char *token, int64_t *pos, size_t npos)
{
	unsigned char raw[TOKEN_MAX_BYTES], plain[8 * PAGING_POS_MAX], tag[TAG_BYTES];
	long n;

	if (!token || npos < 1 || npos > PAGING_POS_MAX)
		return -1;
	n = wire_base64_decode(token, raw, sizeof(raw), true);
	if (n != (long)(1 + TAG_BYTES + 8 * npos) || raw[0] != TOKEN_FORMAT)
		return -1;
	token_ctr(key, raw + 1, raw + 1 + TAG_BYTES, 8 * npos, plain);
	token_tag(key, scope, nscope, plain, 8 * npos, tag);
	if (CRYPTO_memcmp(tag, raw + 1, TAG_BYTES))
		return -1;
	for (size_t i = 0; i < npos; i++)
		pos[i] = (int64_t)get_be64(plain + 8 * i);
	return 0;
}

/* Text positions (an object's name): the same construction, format 0x02. */
#define TOKEN_FORMAT_TEXT 0x02
#define TEXT_MAX 1100

char *paging_token_make_text(const unsigned char key[PAGING_KEY_BYTES], const char *const *scope,
			     size_t nscope, const char *pos)
{
	size_t n = strlen(pos);
	unsigned char raw[1 + TAG_BYTES + TEXT_MAX];

	if (n > TEXT_MAX)
		abort();
	raw[0] = TOKEN_FORMAT_TEXT;
	token_tag(key, scope, nscope, (const unsigned char *)pos, n, raw + 1);
	raw[1] ^= TOKEN_FORMAT_TEXT;	/* a tag never valid for the other format */
	token_ctr(key, raw + 1, (const unsigned char *)pos, n, raw + 1 + TAG_BYTES);
	return wire_base64_encode(raw, 1 + TAG_BYTES + n, true);
}

char *paging_token_read_text(const unsigned char key[PAGING_KEY_BYTES], const char *const *scope,
			     size_t nscope, const char *token)
{
	unsigned char raw[1 + TAG_BYTES + TEXT_MAX], tag[TAG_BYTES];
	long n;

	if (!token)
		return NULL;
	n = wire_base64_decode(token, raw, sizeof(raw), true);
	if (n < 1 + TAG_BYTES || raw[0] != TOKEN_FORMAT_TEXT)
		return NULL;
	size_t len = (size_t)n - 1 - TAG_BYTES;
	char *plain = xmalloc(len + 1);
	token_ctr(key, raw + 1, raw + 1 + TAG_BYTES, len, (unsigned char *)plain);
	plain[len] = '\0';
	token_tag(key, scope, nscope, (const unsigned char *)plain, len, tag);
	tag[0] ^= TOKEN_FORMAT_TEXT;
	if (CRYPTO_memcmp(tag, raw + 1, TAG_BYTES) || strlen(plain) != len) {
		free(plain);
		return NULL;
	}
	return plain;
}
