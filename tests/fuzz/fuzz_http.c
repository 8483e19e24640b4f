/*
 * fuzz_http.c - the HTTP request path: the input is what a client sends on
 * one connection (methods, targets, headers, bodies, pipelined requests,
 * framing of every kind), served from memory by the real connection code
 * (http_serve_memory), through the router, auth and the handlers, with the
 * database stubbed (stub_store.c).
 *
 * The first byte picks the store's answer (tests/fuzz/stub_store.c; bit 7:
 * agents' syncs succeed, and park), open or tokens mode, and how many bytes
 * each read returns (so that heads and bodies split everywhere). Checked on
 * every input: what the server sends is a sequence of whole HTTP/1.1
 * responses, each with a Content-Length that matches, every error in
 * Google's JSON envelope with a code equal to the status, no 500 unless the
 * store said STORE_ERROR, and nothing after a response that said
 * Connection: close. An input that makes a worker spin is a timeout.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "auth.h"
#include "catalog.h"
#include "http.h"
#include "log.h"
#include "snapshot.h"

extern enum store_rc stub_store_rc;
extern bool stub_node_ok;

static struct server srv;

static void catalog_free_any(void *c)
{
	catalog_free(c);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct catalog *cat;
	struct auth_tokens *tokens;
	char err[1024];

	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR + 1);	/* quiet: the fuzzer's output is its own */
	if (catalog_load("deploy/catalog.yaml", &cat, err, sizeof(err)) ||
	    auth_tokens_load("tests/fuzz/http_tokens.yaml", &tokens, err, sizeof(err))) {
		fprintf(stderr, "fuzz_http: run from the repository root: %s\n", err);
		abort();
	}
	srv.catalogs = snapshot_new(cat, catalog_free_any);
	srv.tokens = snapshot_new(tokens, auth_tokens_free);
	srv.http_limits.max_body = 65536;
	srv.agent_token = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00";
	srv.sync_interval_s = 10;
	srv.lease_s = 30;
	return 0;
}

/* A whole response at s (HTTP/1.1 status line, head, Content-Length body); its length. */
static size_t check_response(const char *s, size_t len, bool *close, bool may_500)
{
	const char *end = memmem(s, len, "\r\n\r\n", 4);
	int status;
	size_t clen;

	if (!end || len < 12 || memcmp(s, "HTTP/1.1 ", 9) || sscanf(s + 9, "%3d", &status) != 1)
		abort();
	size_t head = (size_t)(end - s) + 4;
	if (status == 100)
		return head;
	if (status == 500 && !may_500)
		abort();	/* an internal error the store did not cause */
	const char *cl = memmem(s, head, "\r\nContent-Length: ", 18);
	if (!cl || sscanf(cl + 18, "%zu", &clen) != 1)
		abort();
	*close = memmem(s, head, "\r\nConnection: close\r\n", 21) != NULL;
	/* The reply to a HEAD has no body (no body of ours starts "HTTP/1.1 "). */
	if (clen && (head == len || (len - head >= 9 && !memcmp(s + head, "HTTP/1.1 ", 9))))
		return head;
	if (head + clen > len)
		abort();
	if (status >= 400 && clen) {
		json_t *body = json_loadb(end + 4, clen, 0, NULL);
		json_t *e = json_object_get(body, "error");
		if (!e || json_integer_value(json_object_get(e, "code")) != status ||
		    !json_is_string(json_object_get(e, "status")) ||
		    !json_is_string(json_object_get(e, "message")))
			abort();
		json_decref(body);
	}
	return head + clen;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum store_rc rcs[] = { STORE_UNAVAILABLE, STORE_NOT_FOUND, STORE_CONFLICT,
					     STORE_STALE, STORE_ERROR, STORE_UNAVAILABLE,
					     STORE_NOT_FOUND, STORE_ERROR };
	static const size_t steps[] = { 0, 1, 2, 3, 7, 16, 100, 4096 };
	struct strbuf out = STRBUF_INIT;

	if (!size)
		return 0;
	stub_store_rc = rcs[data[0] & 7];
	stub_node_ok = data[0] & 0x80;
	srv.auth_mode = data[0] & 8 ? AUTH_TOKENS : AUTH_OPEN;
	http_serve_memory(&srv, data + 1, size - 1, steps[(data[0] >> 4) & 7], &out);

	bool close = false;
	for (size_t off = 0; off < out.len;) {
		if (close)
			abort();	/* a response after Connection: close */
		off += check_response(out.buf + off, out.len - off, &close,
				      stub_store_rc == STORE_ERROR);
	}
	sb_release(&out);
	return 0;
}
