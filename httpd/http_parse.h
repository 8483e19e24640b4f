/*
 * http_parse.h - HTTP/1.1 request framing (RFC 9112) without I/O.
 *
 * A request head is found (http_head_end), then parsed whole in place
 * (http_head_parse), which also decides how the body is framed; a chunked
 * body is decoded incrementally (http_chunked_feed). The connection code
 * (httpd.c) feeds bytes; the fuzzer feeds anything.
 *
 * Strict wherever two parsers could disagree about where a request ends
 * (request smuggling): lines end in CRLF (a bare CR or LF is an error), no
 * whitespace between a field name and its colon, no folded lines, no
 * control characters in a field value or the request target, at most one
 * Content-Length value, never both Content-Length and Transfer-Encoding,
 * "chunked" as the only transfer coding. Strict to RFC 9112's grammar too
 * where a request's meaning is at stake: exactly one Host in HTTP/1.1, a
 * valid host[:port]; an origin-, absolute- (its authority checked as Host)
 * or asterisk-form target (OPTIONS only), never a fragment; chunk
 * extensions and trailer fields to their grammar (then discarded), a chunk
 * size read by value. Every error carries the status to answer with, and
 * the connection is closed after that answer (docs/http.md, Conformance).
 */
#ifndef TP_HTTP_PARSE_H
#define TP_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

#define HTTP_MAX_HEADERS 100
/* A request line longer than this is 414 URI Too Long. */
#define HTTP_MAX_REQUEST_LINE 8192
/* A head (request line and fields) longer than this is 431. */
#define HTTP_MAX_HEAD 32768

/* Why a request was refused: the status to answer with and why, in words. */
struct http_perror {
	int status;		/* 400, 413, 414, 417, 431, 501 or 505 */
	const char *message;	/* static text */
};

struct http_field {
	const char *name;	/* as sent; compare without case */
	const char *value;	/* without surrounding whitespace */
};

enum http_body_kind { HTTP_BODY_NONE, HTTP_BODY_LENGTH, HTTP_BODY_CHUNKED };

struct http_head {
	const char *method;
	const char *target;	/* the request target as sent (printable ASCII) */
	int minor;		/* HTTP/1.<minor>: 0, or 1 for 1.1 and later 1.x */
	struct http_field fields[HTTP_MAX_HEADERS];
	size_t nfields;
	enum http_body_kind body;
	uint64_t content_length;	/* HTTP_BODY_LENGTH; UINT64_MAX when it overflows */
	bool keep_alive;	/* the connection may carry another request */
	bool expect_continue;	/* Expect: 100-continue */
};

/* Where the search for a head's end stands on a growing buffer; start zeroed. */
struct http_head_scan {
	size_t pos;		/* bytes looked at */
	size_t line;		/* where the current line starts */
};

/*
 * Looks for the end of a request head in buf[0..len), which begins with
 * the request line (the caller drops the empty lines a client may send
 * between requests). Returns the head's length (through the empty line)
 * when complete, 0 when more bytes are needed, -1 with err when the bytes
 * cannot be a request head or it outgrew the limits above. Each byte is
 * looked at once however the buffer grows.
 */
long http_head_end(const char *buf, size_t len, struct http_head_scan *s,
		   struct http_perror *err);

/*
 * Parses the head found by http_head_end (head[0..len), which it modifies:
 * the strings in h point into it). Returns 0, or -1 with err.
 */
int http_head_parse(char *head, size_t len, struct http_head *h, struct http_perror *err);

/* A field's value by name (the first one), or NULL. */
const char *http_head_field(const struct http_head *h, const char *name);

/* The state of a chunked body being decoded; start zeroed. */
struct http_chunked {
	int state;
	uint64_t remaining;	/* bytes left in the current chunk */
	unsigned digits;	/* significant hex digits of the size so far */
	size_t line;		/* bytes of the current size line */
	size_t trailer;		/* bytes of the trailer section so far */
};

/*
 * Decodes in[0..len) of a chunked body, appending the data to out. *used
 * tells how many bytes were taken. Returns 1 when the body (and its
 * trailer) ended, 0 when more is needed, -1 with err on a malformed body
 * or when out would grow past max_body (413).
 */
int http_chunked_feed(struct http_chunked *c, const char *in, size_t len, size_t *used,
		      struct strbuf *out, size_t max_body, struct http_perror *err);

/*
 * Splits a request target into path and query (both point into target,
 * which is modified; the query is NULL without '?'). An absolute-form
 * target ("http://host/p") gives its path. Returns -1 when the target is
 * neither origin- nor absolute-form.
 */
int http_target_split(char *target, char **path, char **query);

/*
 * Percent-decodes s in place ("%41" -> "A"). "%00" stays as it is: a NUL
 * would cut the C string short and "jobs/a%00b" would read job "a". With
 * plus, '+' is a space (query components). Returns the new length.
 */
size_t http_unescape(char *s, bool plus);

#endif
