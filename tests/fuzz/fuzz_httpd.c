/*
 * fuzz_httpd.c - the HTTP transport (httpd/) under a fuzzer-chosen
 * interleaving of events on several connections in one loop: clients that
 * open, send bytes (whole requests, pieces, garbage), half-close, reset,
 * stop and start reading; requests that are answered at once, suspended
 * (resumed later, in any order, with the client gone or not), parked and
 * woken by key or deadline; the clock moved; the end of a loop iteration
 * (reap) at any point. The handlers are stubs (below); the transport is
 * the real code, driven through httpd_sim_* (no thread, no socket).
 *
 * Checked on every input, beyond ASan, UBSan and LeakSanitizer:
 *   - a connection changes state only along the transport's edge table
 *     (it aborts otherwise);
 *   - a suspended request is never ended before its resume (done() of a
 *     request the harness still holds is a bug), and its resume may come
 *     whatever its client did;
 *   - what each client that never reset receives is a sequence of
 *     HTTP/1.1 responses (Content-Length bodies; the last may be cut short
 *     by a write deadline), nothing after one that said Connection: close;
 *   - a body given to a sink never passes the limit set in the head;
 *   - at the end, with every client unblocked, every resume delivered and
 *     every long-poll woken, the transport ends cleanly (no descriptor of
 *     a file answer left open: LeakSanitizer does not see those, the
 *     harness counts them).
 *
 * Input: a sequence of operations, one byte each, followed by their
 * arguments (see the switch below). Bytes beyond the end read as zero.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "httpd.h"
#include "log.h"

#define MAX_CONNS 8
#define MAX_PENDING 16

/* What the stub handlers keep per request (the transport's app state). */
struct app {
	int kind;		/* 0 answer, 1 suspend, 2 park, 3 big answer, 4 a file */
	int runs;
	size_t sunk;		/* body bytes given to the sink ("/u") */
};

static int file_fd = -1;	/* 200,000 bytes answered by "/f" */

static struct httpd *H;
static struct httpd_req *pending[MAX_PENDING];	/* suspended, awaiting the harness's resume */
static int npending;
static bool freeing;

static void pend_add(struct httpd_req *r)
{
	if (npending == MAX_PENDING) {
		/* room: resume the oldest now (any thread may; here, this one) */
		struct httpd_req *old = pending[0];
		memmove(pending, pending + 1, (MAX_PENDING - 1) * sizeof(*pending));
		npending--;
		httpd_resume(old);
	}
	pending[npending++] = r;
}

static bool pend_has(const struct httpd_req *r)
{
	for (int i = 0; i < npending; i++)
		if (pending[i] == r)
			return true;
	return false;
}

static void stub_run(struct httpd_req *r, void *arg)
{
	struct app *a = httpd_req_app(r);
	const char *t = httpd_req_target(r);

	(void)arg;
	if (!a->runs++) {
		a->kind = !strncmp(t, "/s", 2) ? 1 : !strncmp(t, "/p", 2) ? 2 :
			  !strncmp(t, "/big", 4) ? 3 : 0;
		if (a->kind == 1) {
			httpd_suspend(r);
			pend_add(r);
			return;
		}
		if (a->kind == 2 && httpd_park(r, t[2] == 'b' ? "b" : "a",
					       httpd_sim_now(H) + 1000000))
			return;
	} else if (a->kind == 1 && a->runs == 2 && t[2] == '2') {
		/* "/s2": suspends a second time after its first resume */
		httpd_suspend(r);
		pend_add(r);
		return;
	}
	if (!strncmp(t, "/f", 2)) {
		httpd_respond_file(r, 200, "application/octet-stream", dup(file_fd), 5, 199995, NULL,
				   false);
		return;
	}
	size_t len = a->kind == 3 ? 300000 : strlen(t);
	char *body = malloc(len + 1);
	if (a->kind == 3)
		memset(body, 'x', len);
	else
		memcpy(body, t, len);
	httpd_respond(r, 200, "text/plain", body, len, NULL, false);
}

/* "/u": the body to a sink ("/uf": refused after 3 bytes), at most 16 bytes; "/h": answered before its body. */
static int stub_sink(struct httpd_req *r, const char *data, size_t len, void *ctx)
{
	struct app *a = httpd_req_app(r);

	(void)data;
	(void)ctx;
	a->sunk += len;
	if (a->sunk > 16)
		abort();	/* past the limit set in the head */
	return !strncmp(httpd_req_target(r), "/uf", 3) && a->sunk >= 3 ? -1 : 0;
}

static void stub_head(struct httpd_req *r, void *arg)
{
	const char *t = httpd_req_target(r);

	(void)arg;
	if (!strncmp(t, "/u", 2)) {
		httpd_req_set_body_limit(r, 16);
		httpd_req_set_body_sink(r, stub_sink, NULL);
	} else if (!strncmp(t, "/h", 2)) {
		char *body = strdup("no");
		httpd_respond(r, 403, "text/plain", body, 2, NULL, false);
	}
}

static void stub_refuse(struct httpd_req *r, int status, const char *message, void *arg)
{
	(void)arg;
	char *body = strdup(message ? message : "");
	httpd_respond(r, status, "text/plain", body, strlen(body), NULL, true);
}

static void stub_done(struct httpd_req *r, void *arg)
{
	(void)arg;
	if (pend_has(r) && !freeing)
		abort();	/* a suspended request ended before its resume */
}

static const struct httpd_ops ops = { .head = stub_head, .run = stub_run, .refuse = stub_refuse,
				     .done = stub_done };

static const char *const pieces[] = {
	"GET /r HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /s HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /s2 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /pa HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /pb HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /big HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /r HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
	"POST /s HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"POST /r HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n",
	"GET /r HTTP/1.0\r\n\r\n",
	"GET /r HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
	"GET /r HTTP/1.1\r\nHo",
	"\r\n",
	"\x16\x03\x01\x02\x00\x01",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"GET /r HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
	"PUT /u HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789",
	"PUT /uf HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789",
	"PUT /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n01234567\r\n9\r\n012345678\r\n0\r\n\r\n",
	"PUT /u HTTP/1.1\r\nHost: a\r\nContent-Length: 17\r\n\r\n",
	"PUT /h HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nabcde",
	"GET /f HTTP/1.1\r\nHost: a\r\n\r\n",
	"HEAD /f HTTP/1.1\r\nHost: a\r\n\r\n",
};

struct reader {
	const uint8_t *p;
	size_t n, off;
};

static unsigned next(struct reader *rd)
{
	return rd->off < rd->n ? rd->p[rd->off++] : 0;
}

/* A sequence of whole responses; false when a response follows Connection: close. */
static bool whole_responses(const struct strbuf *out, bool complete)
{
	size_t off = 0;
	bool closed = false;

	while (off < out->len) {
		const char *s = out->buf + off;
		size_t left = out->len - off;
		const char *end = memmem(s, left, "\r\n\r\n", 4);
		if (!end)
			return !complete;
		if (closed || left < 12 || memcmp(s, "HTTP/1.1 ", 9))
			return false;
		size_t head = (size_t)(end - s) + 4;
		if (!memcmp(s + 9, "100 ", 4)) {
			off += head;
			continue;
		}
		const char *cl = memmem(s, head, "\r\nContent-Length: ", 18);
		size_t clen;
		if (!cl || sscanf(cl + 18, "%zu", &clen) != 1)
			return false;
		closed = memmem(s, head, "\r\nConnection: close\r\n", 21) != NULL;
		/* The answer to a HEAD has no body (no body here begins "HTTP/1.1 "). */
		if (clen && (head == left || (left - head >= 9 && !memcmp(s + head, "HTTP/1.1 ", 9)))) {
			off += head;
			continue;
		}
		if (head + clen > left)
			return !complete;
		off += head + clen;
	}
	return true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR + 1);
	file_fd = memfd_create("fuzz_httpd", 0);
	static char y[200000];
	memset(y, 'y', sizeof(y));
	if (file_fd < 0 || write(file_fd, y, sizeof(y)) != (ssize_t)sizeof(y))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct httpd_config cfg = {
		.limits = { 2, 5, 3, 6, 4, 4096 },
		.app_size = sizeof(struct app),
		.ops = &ops,
	};
	struct reader rd = { data, size, 0 };
	int ids[MAX_CONNS];
	bool reset[MAX_CONNS] = { 0 };
	int nconns = 0;

	int probe = dup(0);	/* the lowest free descriptor: a leaked one would take it */
	close(probe);
	H = httpd_sim_new(&cfg);
	npending = 0;
	freeing = false;
	while (rd.off < rd.n) {
		unsigned op = next(&rd) % 11;
		int k = nconns ? (int)(next(&rd) % (unsigned)nconns) : -1;
		switch (op) {
		case 0:	/* a new client, from one of four addresses */
			if (nconns < MAX_CONNS) {
				ids[nconns] = httpd_sim_open(H, next(&rd) % 4);
				reset[nconns++] = false;
			}
			break;
		case 1:	/* a piece of a request, or several */
			if (k >= 0) {
				const char *p = pieces[next(&rd) % (sizeof(pieces) / sizeof(*pieces))];
				size_t len = strlen(p), cut = next(&rd);
				if (cut && cut < len)
					len = cut;	/* a piece cut short */
				httpd_sim_send(H, ids[k], p, len);
			}
			break;
		case 2:	/* raw bytes from the input */
			if (k >= 0) {
				size_t len = next(&rd) % 32;
				if (len > rd.n - rd.off)
					len = rd.n - rd.off;
				httpd_sim_send(H, ids[k], rd.p + rd.off, len);
				rd.off += len;
			}
			break;
		case 3:
			if (k >= 0)
				httpd_sim_fin(H, ids[k]);
			break;
		case 4:
			if (k >= 0) {
				httpd_sim_reset(H, ids[k]);
				reset[k] = true;
			}
			break;
		case 5:
			if (k >= 0)
				httpd_sim_block(H, ids[k], next(&rd) & 1);
			break;
		case 6: {	/* one epoll_wait batch: events, resumes and accepts mixed */
			int items[8], n = 1 + (int)(next(&rd) % 8);
			for (int i = 0; i < n; i++) {
				unsigned b = next(&rd);
				if (b % 8 == 7) {
					items[i] = -1;
				} else if (b % 8 == 6 && nconns < MAX_CONNS) {
					/* accepted in the batch: it is the next id */
					items[i] = -2 - (int)(b / 8 % 4);
					ids[nconns] = nconns;	/* ids are given in the order opened */
					reset[nconns++] = false;
				} else {
					items[i] = nconns ? ids[b % (unsigned)nconns] : -1;
				}
			}
			httpd_sim_batch(H, items, n);
			break;
		}
		case 7:	/* another thread resumes a suspended request */
			if (npending) {
				int i = (int)(next(&rd) % (unsigned)npending);
				struct httpd_req *r = pending[i];
				pending[i] = pending[--npending];
				httpd_resume(r);
			}
			break;
		case 8: {
			unsigned w = next(&rd) % 3;
			httpd_wake(H, w == 0 ? "a" : w == 1 ? "b" : NULL);
			break;
		}
		case 9:
			httpd_sim_advance(H, (int64_t)(next(&rd) % 64) * 100000);
			break;
		case 10:	/* the worker's loop: resumes, then the end of the iteration */
			httpd_sim_resumes(H);
			httpd_sim_reap(H);
			break;
		}
	}
	/* Everything delivered: the transport must settle. */
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < nconns; i++) {
			httpd_sim_block(H, ids[i], false);
			httpd_sim_event(H, ids[i]);
		}
		while (npending)
			httpd_resume(pending[--npending]);
		httpd_wake(H, NULL);
		httpd_sim_resumes(H);
		httpd_sim_reap(H);
	}
	for (int i = 0; i < nconns; i++) {
		struct strbuf *out = httpd_sim_output(H, ids[i]);
		if (!reset[i] && !whole_responses(out, false)) {
			if (getenv("FUZZ_HTTPD_SHOW"))
				fprintf(stderr, "connection %d received:\n%.*s\n", i, (int)out->len,
					out->buf);
			abort();
		}
	}
	freeing = true;
	httpd_sim_free(H);
	H = NULL;
	int after = dup(0);
	close(after);
	if (after != probe)
		abort();	/* a file answer's descriptor left open */
	return 0;
}
