/*
 * tls.h - the server's certificate and key for HTTPS (config keys
 * tls_cert_file and tls_key_file), read and checked at start: both or
 * neither, PEM, the key matching the certificate.
 */
#ifndef TP_TLS_H
#define TP_TLS_H

#include <stddef.h>

/*
 * Reads and checks the pair; on success *cert_pem and *key_pem hold the
 * files' text (caller frees). Both paths NULL or empty: plain HTTP, 0 with
 * both NULL. On failure -1 with err naming the file and the reason.
 */
int tls_load(const char *cert_file, const char *key_file, char **cert_pem, char **key_pem,
	     char *err, size_t errlen);

#endif
