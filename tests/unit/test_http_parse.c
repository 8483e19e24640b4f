/*
 * test_http_parse.c - HTTP/1.1 request framing (server/http_parse.c): heads
 * found and parsed, framing decided, chunked bodies decoded, fed whole and
 * a byte at a time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "http_parse.h"

/* Finds and parses a head given whole; returns 0 or the error's status. */
static int parse(const char *text, struct http_head *h, char **keep)
{
	struct http_head_scan scan = { 0 };
	struct http_perror err = { 0 };
	size_t len = strlen(text);
	long end = http_head_end(text, len, &scan, &err);

	if (end < 0)
		return err.status;
	assert_true(end > 0);
	*keep = strndup(text, (size_t)end);
	if (http_head_parse(*keep, (size_t)end, h, &err))
		return err.status;
	return 0;
}

struct framing_case {
	const char *head;
	int status;		/* 0: accepted */
	enum http_body_kind body;
	uint64_t length;
	bool keep_alive;
};

static void test_framing(void **state)
{
	(void)state;
	static const struct framing_case cases[] = {
		{ "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.0\r\n\r\n", 0, HTTP_BODY_NONE, 0, false },
		{ "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n", 0, HTTP_BODY_NONE, 0, false },
		{ "GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, close\r\n\r\n", 0,
		  HTTP_BODY_NONE, 0, false },
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 42\r\n\r\n", 0, HTTP_BODY_LENGTH, 42, true },
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\ncontent-length: 7\r\n\r\n", 0,
		  HTTP_BODY_LENGTH, 7, true },
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 7, 7\r\n\r\n", 0, HTTP_BODY_LENGTH, 7, true },
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", 0,
		  HTTP_BODY_LENGTH, UINT64_MAX, true },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 0, HTTP_BODY_CHUNKED,
		  0, true },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked \r\n\r\n", 0,
		  HTTP_BODY_CHUNKED, 0, true },
		/* smuggling framings */
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
		  400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
		  400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x10\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		  400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n", 400 },
		/* a Transfer-Encoding naming no coding is one all the same */
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ,\r\nContent-Length: 5\r\n\r\n",
		  400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: , ,\r\n\r\n", 400 },
		{ "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\n Content-Length: 5\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: x\r\nX: a\x01" "b\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: x\r\nX\x7f: a\r\n\r\n", 400 },
		/* request lines and versions */
		{ "GET / HTTP/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400 },
		{ "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505 },
		{ "GET / HTTP/1.2\r\nHost: x\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400 },
		{ "GET /  HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET /\x80 HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ " GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET / HTTPS/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET / HTTP/11\r\nHost: x\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n", 417 },
		/* line endings */
		{ "GET / HTTP/1.1\nHost: x\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: x\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n", 400 },
		/* Host: exactly one in HTTP/1.1, uri-host [":" port] (RFC 9112 3.2) */
		{ "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: a, b\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: u:p@a:80\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost:\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: :80\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: a:b\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: a:80:81\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: a%4\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: a\"b\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: [::1]x\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: [a.b.c]\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: [1:2:3:4:5:6:7:8:9]\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: [1::2::3]\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: [12345::1]\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: [::ffff:1.2.3.256]\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: [::ffff:1.2.03.4]\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: [fe80::1%25eth0]\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: [v1.]\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400 },
		{ "GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", 400 },
		{ "GET / HTTP/1.0\r\nHost: a b\r\n\r\n", 400 },
		{ "GET / HTTP/1.0\r\nHost: a\r\n\r\n", 0, HTTP_BODY_NONE, 0, false },
		{ "GET / HTTP/1.1\r\nHost: example.com.\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.1\r\nHost: 999.1.1.1\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.1\r\nHost: a:\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.1\r\nHost: my_host-1.example~x%41:65535\r\n\r\n", 0, HTTP_BODY_NONE, 0,
		  true },
		{ "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.1\r\nHost: [::]\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.1\r\nHost: [1:2:3:4:5:6:7:8]\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.1\r\nHost: [2001:db8::ffff:1.2.3.4]\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET / HTTP/1.1\r\nHost: [v1.fe:x]\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		/* request targets: asterisk-form for OPTIONS only, no fragment,
		 * an absolute-form authority checked as Host is */
		{ "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "OPTIONS *x HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET /a?b#c HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET http://a/#b HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET nopath HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET ftp://a/ HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET http:/a HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET http://u@a/ HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET http:///a HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "GET http://a:x/ HTTP/1.1\r\nHost: x\r\n\r\n", 400 },
		{ "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 400 },
		{ "GET http://a:80/b?c HTTP/1.1\r\nHost: x\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET HTTPS://[::1]?q HTTP/1.1\r\nHost: x\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		{ "GET //a/b HTTP/1.1\r\nHost: x\r\n\r\n", 0, HTTP_BODY_NONE, 0, true },
		/* an empty list element after the last coding */
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked,\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked ,\r\n\r\n", 400 },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: , chunked\r\n\r\n", 0,
		  HTTP_BODY_CHUNKED, 0, true },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_head h;
		char *keep = NULL;
		int st = parse(cases[i].head, &h, &keep);
		if (st != cases[i].status)
			fail_msg("case %zu (%s): status %d, expected %d", i, cases[i].head, st,
				 cases[i].status);
		if (!st) {
			assert_int_equal(h.body, cases[i].body);
			if (h.body == HTTP_BODY_LENGTH)
				assert_true(h.content_length == cases[i].length);
			assert_int_equal(h.keep_alive, cases[i].keep_alive);
		}
		free(keep);
	}
}

/* Each refusal says what is wrong. */
static void test_messages(void **state)
{
	(void)state;
	static const struct {
		const char *head, *message;
	} cases[] = {
		{ "GET / HTTP/1.1\r\n\r\n", "needs a Host header" },
		{ "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", "more than one Host header" },
		{ "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", "Host header is malformed" },
		{ "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", "Host header has userinfo" },
		{ "GET / HTTP/1.1\r\nHost:\r\n\r\n", "Host header names no host" },
		{ "GET * HTTP/1.1\r\nHost: x\r\n\r\n", "allowed only with OPTIONS" },
		{ "GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n", "has a fragment" },
		{ "GET http://u@a/ HTTP/1.1\r\nHost: x\r\n\r\n", "URL has userinfo" },
		{ "GET http://a%zz/ HTTP/1.1\r\nHost: x\r\n\r\n", "malformed host or port" },
		{ "GET x HTTP/1.1\r\nHost: x\r\n\r\n", "neither a path nor an absolute" },
		{ "GET /\r\nHost: x\r\n\r\n", "no HTTP version" },
		{ "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked,\r\n\r\n", "trailing comma" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_head_scan scan = { 0 };
		struct http_perror err = { 0 };
		struct http_head h;
		size_t len = strlen(cases[i].head);
		char *copy = strndup(cases[i].head, len);
		long end = http_head_end(copy, len, &scan, &err);
		assert_int_equal(end, (long)len);
		assert_int_equal(http_head_parse(copy, len, &h, &err), -1);
		assert_int_equal(err.status, 400);
		if (!strstr(err.message, cases[i].message))
			fail_msg("case %zu (%s): message \"%s\"", i, cases[i].head, err.message);
		free(copy);
	}
}

static void test_raw_nul_in_target(void **state)
{
	(void)state;
	/* a raw NUL anywhere in the request line: never the end of a part of it */
	static const struct {
		const char *head;
		size_t len;
	} cases[] = {
#define NUL_CASE(s) { s, sizeof(s) - 1 }
		NUL_CASE("GET /jobs/a\0b HTTP/1.1\r\nHost: x\r\n\r\n"),
		NUL_CASE("GET / HTTP/1.1\0junk\r\nHost: x\r\n\r\n"),
		NUL_CASE("GET\0 / HTTP/1.1\r\nHost: x\r\n\r\n"),
		NUL_CASE("GET /\0\r\nHost: x\r\n\r\n"),
#undef NUL_CASE
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_head_scan scan = { 0 };
		struct http_perror err;
		struct http_head h;
		long end = http_head_end(cases[i].head, cases[i].len, &scan, &err);
		assert_int_equal(end, (long)cases[i].len);
		char *copy = malloc((size_t)end);
		memcpy(copy, cases[i].head, (size_t)end);
		if (http_head_parse(copy, (size_t)end, &h, &err) != -1)
			fail_msg("NUL case %zu accepted", i);
		assert_int_equal(err.status, 400);
		free(copy);
	}
}

static void test_fields(void **state)
{
	(void)state;
	struct http_head h;
	char *keep;
	assert_int_equal(parse("PATCH /v1/x?a=1 HTTP/1.1\r\nHost: x\r\nX-Request-Id:  abc \t\r\n"
			       "Authorization: Bearer t\r\n\r\n", &h, &keep), 0);
	assert_string_equal(h.method, "PATCH");
	assert_string_equal(h.target, "/v1/x?a=1");
	assert_string_equal(http_head_field(&h, "x-request-id"), "abc");
	assert_string_equal(http_head_field(&h, "AUTHORIZATION"), "Bearer t");
	assert_null(http_head_field(&h, "Cookie"));
	free(keep);
}

/* The head's end found however the bytes arrive, each byte looked at once. */
static void test_head_end_incremental(void **state)
{
	(void)state;
	static const char text[] = "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
	size_t head_len = sizeof(text) - 1 - 2;
	struct http_head_scan scan = { 0 };
	struct http_perror err;
	long end = 0;
	for (size_t n = 1; n <= sizeof(text) - 1 && !end; n++)
		end = http_head_end(text, n, &scan, &err);
	assert_int_equal(end, (long)head_len);

	/* limits: a long request line is 414, a long head 431, before its end */
	char *big = malloc(HTTP_MAX_HEAD + 100);
	memset(big, 'a', HTTP_MAX_HEAD + 100);
	memcpy(big, "GET /", 5);
	memset(&scan, 0, sizeof(scan));
	assert_int_equal(http_head_end(big, HTTP_MAX_REQUEST_LINE + 10, &scan, &err), -1);
	assert_int_equal(err.status, 414);
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	memset(&scan, 0, sizeof(scan));
	assert_int_equal(http_head_end(big, HTTP_MAX_HEAD + 100, &scan, &err), -1);
	assert_int_equal(err.status, 431);
	/* Every byte counts against the head's limit, CRLFs too: a head of
	 * exactly the buffer's size ending in CRLF, with no empty line yet. */
	memset(&scan, 0, sizeof(scan));
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	memset(big + 19, 'a', HTTP_MAX_HEAD + 100 - 19);
	big[HTTP_MAX_HEAD] = '\r';
	big[HTTP_MAX_HEAD + 1] = '\n';
	assert_int_equal(http_head_end(big, HTTP_MAX_HEAD + 2, &scan, &err), -1);
	assert_int_equal(err.status, 431);
	free(big);
	memset(&scan, 0, sizeof(scan));
	assert_int_equal(http_head_end("\r\n", 2, &scan, &err), -1);
}

/* Feeds a chunked body in pieces of step bytes; returns the decoder's end state. */
static int feed(const char *in, size_t len, size_t step, struct strbuf *out, size_t max,
		size_t *consumed, int *status)
{
	struct http_chunked c = { 0 };
	struct http_perror err = { 0 };
	size_t off = 0;
	int rc = 0;
	while (off < len && rc == 0) {
		size_t n = len - off < step ? len - off : step, used = 0;
		rc = http_chunked_feed(&c, in + off, n, &used, out, max, &err);
		assert_true(used <= n);
		off += used;
		if (rc == 0)
			assert_int_equal(used, n);
	}
	*consumed = off;
	*status = rc < 0 ? err.status : 0;
	return rc;
}

static void test_chunked(void **state)
{
	(void)state;
	static const char body[] = "5;name=v\r\nhello\r\n7\r\n, world\r\n0\r\nX-T: 1\r\n\r\nGET / ";
	size_t body_len = sizeof(body) - 1 - 6;
	for (size_t step = 1; step <= sizeof(body); step++) {
		struct strbuf out = STRBUF_INIT;
		size_t used;
		int status;
		assert_int_equal(feed(body, sizeof(body) - 1, step, &out, 1024, &used, &status), 1);
		assert_int_equal(used, body_len);
		assert_string_equal(sb_str(&out), "hello, world");
		sb_release(&out);
	}
	struct {
		const char *in;
		int status;
	} bad[] = {
		{ "x\r\n", 400 },
		{ "5\r\nhello!\r\n", 400 },
		{ "5\nhello\r\n", 400 },
		{ "5 \r\nhello\r\n", 400 },
		{ "5\r\nhello\r\n0\r\nX: \x01\r\n\r\n", 400 },
		{ "ffffffffffffffffffff\r\n", 413 },
		{ "401\r\n", 413 },	/* over the 1024 limit, refused before its data */
		{ "00000000000000000000401\r\n", 413 },
		/* chunk extensions (RFC 9112 7.1.1) */
		{ "5;=\r\nhello\r\n0\r\n\r\n", 400 },
		{ "2;\r\nhi\r\n0\r\n\r\n", 400 },
		{ "5;a=\"b\r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a=b c\r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a=\r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a= \r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a \r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a=b \r\nhello\r\n0\r\n\r\n", 400 },
		{ "5; \r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;;a\r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a b\r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a@b\r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a=b@c\r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a=\"b\"c\r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a=\"b\" \r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a=\"b\x01\"\r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a=\"b\\\x7f\"\r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a=\"b\r\n\"\r\nhello\r\n0\r\n\r\n", 400 },
		{ "5;a\nhello\r\n0\r\n\r\n", 400 },
		{ "5 x\r\nhello\r\n0\r\n\r\n", 400 },
		{ "0x5\r\nhello\r\n0\r\n\r\n", 400 },
		{ ";a\r\nhello\r\n0\r\n\r\n", 400 },
		/* trailers: field lines (RFC 9112 7.1.2, 5) */
		{ "0\r\nnot a field\r\n\r\n", 400 },
		{ "0\r\nX-A: 1\r\n folded\r\n\r\n", 400 },
		{ "0\r\n\tX-A: 1\r\n\r\n", 400 },
		{ "0\r\n: v\r\n\r\n", 400 },
		{ "0\r\nX-A : v\r\n\r\n", 400 },
		{ "0\r\nX-A\r\n\r\n", 400 },
		{ "0\r\nX@A: v\r\n\r\n", 400 },
		{ "0\r\nX-A: 1\nX-B: 2\r\n\r\n", 400 },
		{ "0\r\nX-A: 1\r\r\n\r\n", 400 },
		{ "0\r\n\r\r\n", 400 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct strbuf out = STRBUF_INIT;
		size_t used;
		int status;
		assert_int_equal(feed(bad[i].in, strlen(bad[i].in), 1, &out, 1024, &used, &status), -1);
		if (status != bad[i].status)
			fail_msg("bad chunked case %zu (%s): status %d", i, bad[i].in, status);
		sb_release(&out);
	}
}

/* Valid extensions, leading zeros and trailers, whatever the pieces. */
static void test_chunked_grammar(void **state)
{
	(void)state;
	static const struct {
		const char *in, *body;
	} good[] = {
		{ "5;a=b\r\nhello\r\n0\r\n\r\n", "hello" },
		{ "5 ; a = \"x y\"\r\nhello\r\n0\r\n\r\n", "hello" },
		{ "5;a;b=c\r\nhello\r\n0;last\r\n\r\n", "hello" },
		{ "5\t;\ta\t=\tb\t;c\r\nhello\r\n0\r\n\r\n", "hello" },
		{ "5;a=\"\"\r\nhello\r\n0\r\n\r\n", "hello" },
		{ "5;a=\"q\\\"\\\\;\xff\";b\r\nhello\r\n0\r\n\r\n", "hello" },
		{ "5;a=b ;c=\"d\" ;e\r\nhello\r\n0\r\n\r\n", "hello" },
		{ "5;!#$%&'*+-.^_`|~=!#$%&'*+-.^_`|~\r\nhello\r\n0\r\n\r\n", "hello" },
		/* leading zeros are read by value, however many the line holds */
		{ "000000000000000000005\r\nhello\r\n0\r\n\r\n", "hello" },
		{ "0000000000000000000000000000000000000000A\r\n0123456789\r\n000\r\n\r\n", "0123456789" },
		{ "0000\r\n\r\n", "" },
		/* trailers, discarded */
		{ "2\r\nhi\r\n0\r\nX-A: 1\r\nx-b:\r\nX-C:\tv \xff\t\r\n\r\n", "hi" },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		size_t len = strlen(good[i].in);
		for (size_t step = 1; step <= len; step++) {
			struct strbuf out = STRBUF_INIT;
			size_t used;
			int status;
			if (feed(good[i].in, len, step, &out, 1024, &used, &status) != 1)
				fail_msg("good chunked case %zu (%s), step %zu: status %d", i, good[i].in, step,
					 status);
			assert_int_equal(used, len);
			assert_string_equal(sb_str(&out), good[i].body);
			sb_release(&out);
		}
	}

	/* Bounds, CRLFs included: a size line of 4,096 bytes passes, one
	 * more is 400; a trailer section of 8,192 bytes passes, one more is
	 * 431. */
	static char buf[20000];
	struct strbuf out = STRBUF_INIT;
	size_t used;
	int status;
	memset(buf, '0', 4094);
	memcpy(buf + 4094, "\r\n\r\n", 5);
	assert_int_equal(feed(buf, strlen(buf), 4096, &out, 1024, &used, &status), 1);
	memset(buf, '0', 4095);
	memcpy(buf + 4095, "\r\n\r\n", 5);
	assert_int_equal(feed(buf, strlen(buf), 4096, &out, 1024, &used, &status), -1);
	assert_int_equal(status, 400);
	memcpy(buf, "1;a=", 4);
	memset(buf + 4, 'b', 4100);
	memcpy(buf + 4104, "\r\nx\r\n0\r\n\r\n", 11);
	assert_int_equal(feed(buf, strlen(buf), 1000, &out, 1024, &used, &status), -1);
	assert_int_equal(status, 400);
	memcpy(buf, "0\r\nX: ", 6);
	memset(buf + 6, 'v', 8185);
	memcpy(buf + 6 + 8185, "\r\n\r\n", 5);	/* "X: ", 8,185 bytes, 2 CRLFs: 8,192 */
	assert_int_equal(feed(buf, strlen(buf), 1000, &out, 1024, &used, &status), 1);
	memcpy(buf, "0\r\nX: ", 6);
	memset(buf + 6, 'v', 8186);
	memcpy(buf + 6 + 8186, "\r\n\r\n", 5);
	assert_int_equal(feed(buf, strlen(buf), 1000, &out, 1024, &used, &status), -1);
	assert_int_equal(status, 431);
	sb_release(&out);
}

static void test_targets(void **state)
{
	(void)state;
	struct {
		const char *target, *path, *query;
	} cases[] = {
		{ "/v1/x?a=1&b", "/v1/x", "a=1&b" },
		{ "/v1/x", "/v1/x", NULL },
		{ "http://host:8080/v1/y?q", "/v1/y", "q" },
		{ "HTTPS://host", "/", NULL },
		{ "http://host?z=1", "/", "z=1" },
		{ "*", "*", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = strdup(cases[i].target), *path, *query;
		assert_int_equal(http_target_split(t, &path, &query), 0);
		assert_string_equal(path, cases[i].path);
		if (cases[i].query)
			assert_string_equal(query, cases[i].query);
		else
			assert_null(query);
		free(t);
	}
	char *t = strdup("nopath"), *p, *q;
	assert_int_equal(http_target_split(t, &p, &q), -1);
	free(t);

	char s1[] = "a%41%00b%zz%4", s2[] = "a+b%2Bc";
	http_unescape(s1, false);
	assert_string_equal(s1, "aA%00b%zz%4");
	http_unescape(s2, true);
	assert_string_equal(s2, "a b+c");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_raw_nul_in_target),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_head_end_incremental),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_chunked_grammar),
		cmocka_unit_test(test_targets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
