/*
 * wire.h - the scalar encodings of Google's JSON APIs (proto3 JSON mapping).
 *
 *   int64      a JSON number or a decimal string on input; a string on output
 *   Duration   "3600s", "1.5s": seconds with up to 9 fractional digits
 *   Timestamp  RFC 3339 in UTC, 0, 3, 6 or 9 fractional digits
 *   bytes      standard base64 with padding (etags); page tokens use base64url
 */
#ifndef TP_WIRE_H
#define TP_WIRE_H

#include <jansson.h>
#include <stdbool.h>

#include "common.h"

/* A JSON integer, or a string holding a decimal int64. 0 or -1. */
int wire_int64_get(const json_t *v, int64_t *out) MUST_CHECK;
/* A double: a JSON number, or a string holding a finite decimal number (as
 * proto3 JSON allows). 0 or -1. */
int wire_double_get(const json_t *v, double *out) MUST_CHECK;
/* Decimal int64 from a whole string (optional leading '-'). 0 or -1. */
int wire_int64_parse(const char *s, int64_t *out) MUST_CHECK;

/* Parses a google-duration into nanoseconds. 0 or -1 (syntax, range). */
int wire_duration_parse(const char *s, int64_t *nanos) MUST_CHECK;
/* Canonical form: "7200s", "1.500s", "0.000001s". buf >= 32 bytes. */
void wire_duration_format(int64_t nanos, char *buf, size_t len);

/* RFC 3339 UTC for microseconds since the epoch. buf >= 40 bytes. */
void wire_time_format(int64_t usec, char *buf, size_t len);
/* Parses RFC 3339 (any offset, optional fraction). 0 or -1. */
int wire_time_parse(const char *s, int64_t *usec) MUST_CHECK;

/* Base64 (url=false: standard alphabet, padded; url=true: -_ unpadded). */
char *wire_base64_encode(const void *data, size_t len, bool url);	/* caller frees */
/* Decodes into out (capacity cap). Returns bytes written, or -1 on bad input. */
long wire_base64_decode(const char *s, void *out, size_t cap, bool url);

/* Is s (len bytes) well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF)? */
/* The UTF-8 sequence at p (at most n bytes, n > 0): its length and its code
 * point in *cp, or 0 if it is not valid UTF-8 (overlong, a surrogate, past
 * U+10FFFF, cut short). */
size_t wire_utf8_decode(const unsigned char *p, size_t n, uint32_t *cp);
bool wire_utf8_valid(const char *s, size_t len);
/* A copy of s with each invalid byte replaced by U+FFFD. Caller frees. */
char *wire_utf8_sanitize(const char *s);

/* A cluster id, as the server draws it and agents send it back: 1 to
 * WIRE_CLUSTER_ID_MAX of [A-Za-z0-9_-] (it names files and container labels). */
#define WIRE_CLUSTER_ID_MAX 64
bool wire_cluster_id_ok(const char *s);

#endif
