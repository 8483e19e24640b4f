#include "tls.h"

#include <errno.h>
#include <stdbool.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "log.h"
#include "strbuf.h"

static char *read_all(const char *path, char *err, size_t errlen)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[4096];
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0 && sb.len < (1 << 20))
		sb_add(&sb, buf, n);
	fclose(f);
	return sb_detach(&sb);
}

static const char *ssl_reason(void)
{
	unsigned long e = ERR_get_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;
	ERR_clear_error();
	return r ? r : "not PEM";
}

int tls_load(const char *cert_file, const char *key_file, char **cert_pem, char **key_pem,
	     char *err, size_t errlen)
{
	bool have_cert = cert_file && *cert_file, have_key = key_file && *key_file;
	X509 *x = NULL;
	EVP_PKEY *k = NULL;
	BIO *b;
	struct stat st;
	int rc = -1;

	*cert_pem = *key_pem = NULL;
	if (!have_cert && !have_key)
		return 0;
	if (have_cert != have_key) {
		snprintf(err, errlen, "tls_cert_file and tls_key_file go together: set both or neither");
		return -1;
	}
	if (!(*cert_pem = read_all(cert_file, err, errlen)) ||
	    !(*key_pem = read_all(key_file, err, errlen)))
		goto out;
	b = BIO_new_mem_buf(*cert_pem, -1);
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	if (!x) {
		snprintf(err, errlen, "%s: not a PEM certificate (%s)", cert_file, ssl_reason());
		goto out;
	}
	b = BIO_new_mem_buf(*key_pem, -1);
	k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	if (!k) {
		snprintf(err, errlen, "%s: not a PEM private key without a passphrase (%s)", key_file,
			 ssl_reason());
		goto out;
	}
	if (!X509_check_private_key(x, k)) {
		ERR_clear_error();
		snprintf(err, errlen, "%s: the key does not match the certificate %s", key_file,
			 cert_file);
		goto out;
	}
	if (!stat(key_file, &st) && (st.st_mode & 077))
		log_warn("%s is readable by others than its owner (mode %03o): chmod 600 it",
			 key_file, (unsigned)(st.st_mode & 0777));
	rc = 0;
out:
	X509_free(x);
	EVP_PKEY_free(k);
	if (rc) {
		free(*cert_pem);
		free(*key_pem);
		*cert_pem = *key_pem = NULL;
	}
	return rc;
}
