/*
 * test_httpd.c - the HTTP transport's connection life, driven without
 * sockets (httpd_sim_*): the cases that crashed or misbehaved before it had
 * one owner, each replayed step by step. The fuzz target fuzz_httpd covers
 * the interleavings; these pin the answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "httpd.h"
#include "log.h"

struct app {
	int runs;
};

static struct strbuf sunk;	/* what the "/u" sink took */
static int file_fd = -1;	/* answered by "/f" */

static struct httpd *H;
static struct httpd_req *held;	/* the request a "/s" run suspended */
static int done_calls, runs;

static void stub_run(struct httpd_req *r, void *arg)
{
	struct app *a = httpd_req_app(r);
	const char *t = httpd_req_target(r);

	(void)arg;
	runs++;
	if (!a->runs++ && !strcmp(t, "/s")) {
		httpd_suspend(r);
		held = r;
		return;
	}
	if (a->runs == 1 && !strcmp(t, "/p") && httpd_park(r, "k", httpd_sim_now(H) + 60000000))
		return;
	/* /q/<key>/<seconds>: parked under key until a wake or seconds from now */
	char qkey[32];
	int qs;
	if (a->runs == 1 && sscanf(t, "/q/%31[^/]/%d", qkey, &qs) == 2 &&
	    httpd_park(r, qkey, httpd_sim_now(H) + (int64_t)qs * 1000000))
		return;
	if (!strcmp(t, "/f")) {
		httpd_respond_file(r, 200, "application/octet-stream", dup(file_fd), 2, 70000, NULL,
				   false);
		return;
	}
	char *body = strdup(t);
	httpd_respond(r, 200, "text/plain", body, strlen(body), NULL, false);
}

static int stub_sink(struct httpd_req *r, const char *data, size_t len, void *ctx)
{
	(void)r;
	(void)ctx;
	sb_add(&sunk, data, len);
	return 0;
}

static void stub_head(struct httpd_req *r, void *arg)
{
	(void)arg;
	if (!strcmp(httpd_req_target(r), "/u")) {
		httpd_req_set_body_limit(r, 1 << 20);
		httpd_req_set_body_sink(r, stub_sink, NULL);
	}
}

static void stub_refuse(struct httpd_req *r, int status, const char *message, void *arg)
{
	(void)arg;
	char *body = strdup(message);
	httpd_respond(r, status, "text/plain", body, strlen(body), NULL, true);
}

static void stub_done(struct httpd_req *r, void *arg)
{
	(void)r;
	(void)arg;
	done_calls++;
}

static const struct httpd_ops ops = { .head = stub_head, .run = stub_run, .refuse = stub_refuse,
				     .done = stub_done };

static struct httpd *new_sim(int max_connections)
{
	struct httpd_config cfg = {
		.limits = { 10, 120, 60, max_connections, 0, 65536 },
		.app_size = sizeof(struct app),
		.ops = &ops,
	};
	held = NULL;
	done_calls = runs = 0;
	H = httpd_sim_new(&cfg);
	return H;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static const char *out_of(struct httpd *h, int id)
{
	struct strbuf *o = httpd_sim_output(h, id);
	return o->len ? o->buf : "";
}

static void send_str(struct httpd *h, int id, const char *s)
{
	httpd_sim_send(h, id, s, strlen(s));
}

#define GET(p) "GET " p " HTTP/1.1\r\nHost: a\r\n\r\n"

/*
 * The crash of the old server: a suspended request's client resets; in one
 * epoll batch the reset's event orphans the connection, the resume (the
 * eventfd) runs and releases it, and a later event of the same batch still
 * points at it. It must find the connection closed, not freed.
 */
static void resume_and_event_in_one_batch(void **state)
{
	(void)state;
	struct httpd *h = new_sim(100);
	int a = httpd_sim_open(h, 1);
	send_str(h, a, GET("/s"));
	httpd_sim_event(h, a);
	assert_non_null(held);
	httpd_sim_reset(h, a);
	httpd_resume(held);	/* another thread, at once */
	int batch[] = { a, -1, a, a };
	httpd_sim_batch(h, batch, 4);
	assert_false(httpd_sim_open_p(h, a));
	assert_int_equal(done_calls, 1);
	assert_int_equal(runs, 1);	/* its client left: not run again */
	httpd_sim_free(h);
}

/* A resume that comes before the run returns, then the client's FIN: answered, then closed. */
static void suspended_request_answered_after_fin(void **state)
{
	(void)state;
	struct httpd *h = new_sim(100);
	int a = httpd_sim_open(h, 1);
	send_str(h, a, GET("/s"));
	httpd_sim_fin(h, a);
	httpd_sim_event(h, a);
	assert_true(httpd_sim_open_p(h, a));
	httpd_resume(held);
	httpd_sim_resumes(h);
	httpd_sim_event(h, a);
	httpd_sim_reap(h);
	assert_int_equal(count(out_of(h, a), "HTTP/1.1 200"), 1);
	assert_int_equal(count(out_of(h, a), "Connection: close"), 1);
	assert_false(httpd_sim_open_p(h, a));
	httpd_sim_free(h);
}

/* Ten requests and the FIN in one write: ten answers in order, the last one closing (RFC 9112 9.6). */
static void pipelined_requests_before_fin_are_all_answered(void **state)
{
	(void)state;
	struct httpd *h = new_sim(100);
	int a = httpd_sim_open(h, 1);
	for (int i = 0; i < 10; i++) {
		char req[64];
		snprintf(req, sizeof(req), "GET /r%d HTTP/1.1\r\nHost: a\r\n\r\n", i);
		send_str(h, a, req);
	}
	httpd_sim_fin(h, a);
	httpd_sim_event(h, a);
	httpd_sim_event(h, a);
	httpd_sim_reap(h);
	const char *out = out_of(h, a);
	assert_int_equal(count(out, "HTTP/1.1 200"), 10);
	assert_int_equal(count(out, "Connection: close"), 1);
	const char *last = strstr(out, "/r9");
	assert_non_null(last);
	assert_true(strstr(out, "Connection: close") < last);	/* on the tenth answer */
	for (int i = 1; i < 10; i++) {
		char prev[16], cur[16];
		snprintf(prev, sizeof(prev), "/r%d", i - 1);
		snprintf(cur, sizeof(cur), "/r%d", i);
		assert_true(strstr(out, prev) < strstr(out, cur));
	}
	assert_false(httpd_sim_open_p(h, a));
	httpd_sim_free(h);
}

/* A long-poll whose client half-closes is answered at once; one whose client resets just ends. */
static void parked_long_poll_fin_and_reset(void **state)
{
	(void)state;
	struct httpd *h = new_sim(100);
	int a = httpd_sim_open(h, 1), b = httpd_sim_open(h, 2);
	send_str(h, a, GET("/p"));
	send_str(h, b, GET("/p"));
	httpd_sim_event(h, a);
	httpd_sim_event(h, b);
	assert_int_equal(runs, 2);
	httpd_sim_fin(h, a);
	httpd_sim_reset(h, b);
	httpd_sim_event(h, a);
	httpd_sim_event(h, b);
	httpd_sim_resumes(h);
	httpd_sim_event(h, a);
	httpd_sim_reap(h);
	assert_int_equal(count(out_of(h, a), "HTTP/1.1 200"), 1);
	assert_false(httpd_sim_open_p(h, a));
	assert_false(httpd_sim_open_p(h, b));
	assert_int_equal(runs, 3);	/* a ran again, b did not */
	assert_int_equal(done_calls, 2);
	httpd_wake(h, NULL);	/* nothing left parked */
	httpd_sim_resumes(h);
	httpd_sim_free(h);
}

/*
 * Many long-polls under many keys and deadlines (the park's heap by
 * deadline and table by key): a wake by key answers that key's polls and
 * no other, each deadline answers exactly the polls due by then, and
 * clients leaving from the middle of the heap change neither.
 */
static void parked_polls_by_key_and_deadline(void **state)
{
	(void)state;
	enum { N = 300, KEYS = 40 };
	struct httpd *h = new_sim(1000);
	int id[N], secs[N];
	bool gone[N] = { false }, left[N] = { false };
	char t[64];

	for (int i = 0; i < N; i++) {
		id[i] = httpd_sim_open(h, (unsigned)(i + 1));
		secs[i] = 1 + (i * 37) % 97;
		snprintf(t, sizeof(t), "GET /q/n%d/%d HTTP/1.1\r\nHost: a\r\n\r\n", i % KEYS, secs[i]);
		send_str(h, id[i], t);
		httpd_sim_event(h, id[i]);
	}
	assert_int_equal(runs, N);
	/* A wake by key: that key's polls alone. */
	httpd_wake(h, "n7");
	httpd_wake(h, "n-none");
	httpd_sim_resumes(h);
	for (int i = 0; i < N; i++) {
		gone[i] = i % KEYS == 7;
		assert_int_equal(count(out_of(h, id[i]), "HTTP/1.1 200"), gone[i] ? 1 : 0);
	}
	/* Clients that leave while parked: their polls leave the heap. */
	for (int i = 3; i < N; i += 11)
		if (!gone[i]) {
			httpd_sim_reset(h, id[i]);
			httpd_sim_event(h, id[i]);
			left[i] = gone[i] = true;
		}
	httpd_sim_reap(h);
	/* Each second, exactly the polls due by then are answered. */
	for (int s = 1; s <= 98; s++) {
		httpd_sim_advance(h, 1000000);
		httpd_sim_resumes(h);
		for (int i = 0; i < N; i++) {
			if (left[i])
				continue;
			bool due = i % KEYS == 7 || secs[i] <= s;
			assert_int_equal(count(out_of(h, id[i]), "HTTP/1.1 200"), due ? 1 : 0);
		}
	}
	httpd_wake(h, NULL);	/* nothing left parked */
	httpd_sim_resumes(h);
	httpd_sim_free(h);
}

/* At the cap the newcomer displaces a slow head of the address that holds the most. */
static void cap_closes_a_slow_head_of_the_greediest_address(void **state)
{
	(void)state;
	struct httpd *h = new_sim(4);
	int slow[3];
	for (int i = 0; i < 3; i++) {
		slow[i] = httpd_sim_open(h, 7);
		send_str(h, slow[i], "GET / HTTP/1.1\r\nX-a: ");
		httpd_sim_event(h, slow[i]);
	}
	int other = httpd_sim_open(h, 8);
	send_str(h, other, "GET /r HTTP/1.1\r\nHo");
	httpd_sim_event(h, other);
	int fresh = httpd_sim_open(h, 9);	/* the fifth: over the cap */
	httpd_sim_reap(h);
	assert_true(httpd_sim_open_p(h, fresh));
	assert_true(httpd_sim_open_p(h, other));	/* its address holds one: spared */
	assert_false(httpd_sim_open_p(h, slow[0]));	/* the oldest of the greediest */
	assert_true(httpd_sim_open_p(h, slow[1]) && httpd_sim_open_p(h, slow[2]));
	/* The greedy address again: no address holds more, so one of its own
	 * goes (never the others'). */
	int more = httpd_sim_open(h, 7);
	httpd_sim_reap(h);
	assert_true(httpd_sim_open_p(h, more));
	assert_false(httpd_sim_open_p(h, slow[1]));
	assert_true(httpd_sim_open_p(h, other) && httpd_sim_open_p(h, fresh));
	send_str(h, fresh, GET("/ok"));
	httpd_sim_event(h, fresh);
	assert_int_equal(count(out_of(h, fresh), "HTTP/1.1 200"), 1);
	httpd_sim_free(h);
}

/* Bytes that cannot begin a request are refused at once, not held to the deadline. */
static void a_tls_hello_on_the_plain_port_is_400_at_once(void **state)
{
	(void)state;
	struct httpd *h = new_sim(100);
	int a = httpd_sim_open(h, 1);
	httpd_sim_send(h, a, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
	httpd_sim_event(h, a);
	assert_int_equal(count(out_of(h, a), "HTTP/1.1 400"), 1);
	assert_int_equal(count(out_of(h, a), "Connection: close"), 1);
	httpd_sim_free(h);
}

/* A head that does not come in time: 408 at the deadline, then closed. */
static void a_slow_head_gets_408_at_its_deadline(void **state)
{
	(void)state;
	struct httpd *h = new_sim(100);
	int a = httpd_sim_open(h, 1);
	send_str(h, a, "GET /r HTTP/1.1\r\nHo");
	httpd_sim_event(h, a);
	httpd_sim_advance(h, 9 * 1000000);
	assert_string_equal(out_of(h, a), "");
	httpd_sim_advance(h, 2 * 1000000);
	assert_int_equal(count(out_of(h, a), "HTTP/1.1 408"), 1);
	httpd_sim_free(h);
}

/* A body streamed to the caller's sink, in pieces, past the transport's own limit. */
static void a_body_goes_to_its_sink_as_it_arrives(void **state)
{
	(void)state;
	struct httpd *h = new_sim(100);	/* max_body 65536 */
	int a = httpd_sim_open(h, 1);
	static char body[200000];
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (char)('a' + i % 26);
	send_str(h, a, "PUT /u HTTP/1.1\r\nHost: a\r\nContent-Length: 200000\r\n\r\n");
	sb_reset(&sunk);
	for (size_t off = 0; off < sizeof(body); off += 70000) {
		size_t n = sizeof(body) - off < 70000 ? sizeof(body) - off : 70000;
		httpd_sim_send(h, a, body + off, n);
		httpd_sim_event(h, a);
	}
	assert_int_equal(sunk.len, sizeof(body));
	assert_memory_equal(sunk.buf, body, sizeof(body));
	assert_int_equal(count(out_of(h, a), "HTTP/1.1 200"), 1);
	sb_release(&sunk);
	httpd_sim_free(h);
}

/* A file answered from an offset, the client reading in bits; then a HEAD of it. */
static void a_file_is_answered_from_its_offset(void **state)
{
	(void)state;
	struct httpd *h = new_sim(100);
	int a = httpd_sim_open(h, 1);
	static char data[70002];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)('0' + i % 10);
	file_fd = memfd_create("test_httpd", 0);
	assert_true(file_fd >= 0);
	assert_int_equal(write(file_fd, data, sizeof(data)), (ssize_t)sizeof(data));
	send_str(h, a, GET("/f"));
	httpd_sim_block(h, a, true);
	httpd_sim_event(h, a);
	httpd_sim_block(h, a, false);
	httpd_sim_event(h, a);
	const char *out = out_of(h, a);
	assert_non_null(strstr(out, "Content-Length: 70000\r\n"));
	const char *b = strstr(out, "\r\n\r\n") + 4;
	assert_memory_equal(b, data + 2, 70000);
	send_str(h, a, "HEAD /f HTTP/1.1\r\nHost: a\r\n\r\n");
	httpd_sim_event(h, a);
	assert_int_equal(count(out_of(h, a), "Content-Length: 70000"), 2);
	httpd_sim_free(h);
	close(file_fd);
	file_fd = -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(resume_and_event_in_one_batch),
		cmocka_unit_test(suspended_request_answered_after_fin),
		cmocka_unit_test(pipelined_requests_before_fin_are_all_answered),
		cmocka_unit_test(parked_long_poll_fin_and_reset),
		cmocka_unit_test(parked_polls_by_key_and_deadline),
		cmocka_unit_test(cap_closes_a_slow_head_of_the_greediest_address),
		cmocka_unit_test(a_tls_hello_on_the_plain_port_is_400_at_once),
		cmocka_unit_test(a_slow_head_gets_408_at_its_deadline),
		cmocka_unit_test(a_body_goes_to_its_sink_as_it_arrives),
		cmocka_unit_test(a_file_is_answered_from_its_offset),
	};
	log_set_level(LOG_ERROR + 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
