/*
 * httpd.h - the HTTP/1.1 transport: listening socket, epoll workers, TLS,
 * framing (http_parse.h), deadlines and limits, and each connection's life.
 * It knows nothing of routes, Google's envelope or the store: the caller
 * (server/front.c) gets a request whose head and body are in, and answers
 * it, suspends it for work done elsewhere, or parks it (a long-poll).
 *
 * A request (struct httpd_req) is opaque. It carries app_size bytes of the
 * caller's own state (httpd_req_app), zeroed, freed with it. The transport
 * calls the caller back, always on the worker thread that owns the
 * connection:
 *
 *   run      the request's head and body are in (first run), or it was
 *            resumed or woken (httpd_req_resumed): answer (httpd_respond),
 *            or suspend (httpd_suspend) or park (httpd_park) it. A run that
 *            does none of these is answered 500 through refuse.
 *   refuse   the transport refuses a request (malformed, too large, too
 *            slow: status 400, 408, 413, 414, 417, 431, 501, 505): answer
 *            it with httpd_respond, in the caller's envelope; message says
 *            why. The connection closes after that answer.
 *   done     the request is over: answered, or its client gone. The last
 *            call for it; its app state is freed after.
 *
 * Any thread may call httpd_resume() and httpd_wake(); everything else is
 * for the callbacks, on the connection's worker.
 *
 * A suspended request is never freed before its resume comes, even when
 * its client leaves: the resume must come (the caller's contract). A parked
 * request may end without a run when its client resets; a client's FIN
 * wakes it instead, so that it is answered (RFC 9112 9.6).
 */
#ifndef TP_HTTPD_H
#define TP_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

struct httpd;
struct httpd_req;

/* The limits (configuration keys http_*); 0 takes the default. */
struct httpd_limits {
	int header_timeout_s;	/* a new connection or a begun request: until its head is in */
	int idle_timeout_s;	/* a kept-alive connection between requests */
	int io_timeout_s;	/* reading a body or sending a reply without progress */
	int max_connections;	/* in all; at the limit a slow or idle one is closed */
	int max_connections_per_client;	/* from one address; 0: no limit */
	size_t max_body;	/* bytes; 0: 1 MiB */
};
#define HTTPD_LIMITS_DEFAULT { 10, 120, 60, 10000, 2500, 1 << 20 }

/*
 * Takes len bytes of a request's body as they arrive (httpd_req_set_body_sink);
 * returns 0, or -1 to refuse the rest (the transport then stops reading the
 * body, runs the request, and closes the connection after its answer).
 */
typedef int (*httpd_body_sink)(struct httpd_req *r, const char *data, size_t len, void *ctx);

struct httpd_ops {
	/*
	 * Optional: the head is in, the body not yet read. The caller may set
	 * the request's body limit or sink, or answer at once (the body is then
	 * not read and the connection closes after the answer).
	 */
	void (*head)(struct httpd_req *r, void *arg);
	void (*run)(struct httpd_req *r, void *arg);
	void (*refuse)(struct httpd_req *r, int status, const char *message, void *arg);
	void (*done)(struct httpd_req *r, void *arg);
};

struct httpd_config {
	const char *listen;	/* "host:port", "[v6]:port"; port 0 picks one */
	int threads;		/* worker threads (at least 1) */
	const char *tls_cert_pem;	/* HTTPS when set (with tls_key_pem) */
	const char *tls_key_pem;
	struct httpd_limits limits;
	size_t app_size;	/* bytes of the caller's state per request */
	const struct httpd_ops *ops;
	void *arg;		/* passed to every op */
};

/* Starts listening and its workers. NULL with err on failure. */
struct httpd *httpd_start(const struct httpd_config *cfg, char *err, size_t errlen);
/* The port actually bound. */
int httpd_port(const struct httpd *h);
/* Stops accepting and answers the parked long-polls (woken); none park after. */
void httpd_quiesce(struct httpd *h);
/* Quiesces, lets the requests in flight finish (up to 10 s), frees. NULL: no-op. */
void httpd_stop(struct httpd *h);

/* --- a request, for the callbacks -------------------------------------------- */

void *httpd_req_app(struct httpd_req *r);
const char *httpd_req_method(const struct httpd_req *r);	/* "-" before a head parsed */
const char *httpd_req_target(const struct httpd_req *r);	/* as sent; NULL before a head parsed */
int httpd_req_minor(const struct httpd_req *r);			/* HTTP/1.<minor> */
/* A header field's value (the first of that name, compared without case), or NULL. */
const char *httpd_req_header(const struct httpd_req *r, const char *name);
/* The body, NUL-terminated (the NUL not counted); "" when none. */
const char *httpd_req_body(const struct httpd_req *r, size_t *len);
/* It arrived after the server began to stop (httpd_quiesce). */
bool httpd_req_late(const struct httpd_req *r);
/* The run is again, after httpd_resume() or a wake. */
bool httpd_req_resumed(const struct httpd_req *r);
/* The limits in force. */
const struct httpd_limits *httpd_req_limits(const struct httpd_req *r);

/*
 * Answers: status line, Date, Content-Type, Content-Length, extra (whole
 * "Name: value\r\n" lines, or NULL), and Connection: close when close is
 * set or the connection must close anyway. Takes body (malloc'd, may be
 * NULL with len 0). A HEAD request, and a 304, get the head only (its
 * Content-Length len, as a 200's would be). A second answer to
 * the same request is dropped.
 */
void httpd_respond(struct httpd_req *r, int status, const char *content_type, char *body,
		   size_t len, const char *extra, bool close);

/*
 * In the head callback: the body may be up to max bytes (413 beyond, before
 * any of it is read), and it goes to sink as it arrives instead of being
 * kept (httpd_req_body is then empty).
 */
void httpd_req_set_body_limit(struct httpd_req *r, uint64_t max);
void httpd_req_set_body_sink(struct httpd_req *r, httpd_body_sink sink, void *ctx);

/*
 * Answers with len bytes of the file fd from offset (taken: closed when
 * sent or when the connection ends), streamed: sendfile on a plain socket,
 * through a 64 KiB buffer over TLS. As httpd_respond otherwise.
 */
void httpd_respond_file(struct httpd_req *r, int status, const char *content_type, int fd,
			uint64_t offset, uint64_t len, const char *extra, bool close);

/* Suspends r until httpd_resume(r), which any thread may call, even before run returns. */
void httpd_suspend(struct httpd_req *r);
void httpd_resume(struct httpd_req *r);
/*
 * Parks r (a long-poll) until httpd_wake() with the same key, its client's
 * FIN, or deadline_us (mono_usec() clock). Returns false, parking nothing,
 * once the server is stopping: answer now.
 */
bool httpd_park(struct httpd_req *r, const char *key, int64_t deadline_us);
/* Wakes every request parked under key (NULL: all). Any thread; h NULL: no-op. */
void httpd_wake(struct httpd *h, const char *key);

/* --- without sockets: the fuzzers and tests ------------------------------------ */

/*
 * A transport with one worker and no thread or socket, driven by the
 * caller: connections whose bytes come from memory, events delivered in the
 * order chosen, a clock the caller moves. The same code serves them as
 * serves sockets. cfg->listen, threads and TLS are ignored.
 */
struct httpd *httpd_sim_new(const struct httpd_config *cfg);
/* Frees it, finishing every request (a suspended one is ended without its resume). */
void httpd_sim_free(struct httpd *h);
/* A new client connection; its id: 0, 1, 2... in the order opened (a refused one is closed at once). */
int httpd_sim_open(struct httpd *h, unsigned addr);
/* Bytes from the client (queued; read at the next event). */
void httpd_sim_send(struct httpd *h, int id, const void *data, size_t len);
/* The client's FIN (shutdown of its write side), or a reset (RST). */
void httpd_sim_fin(struct httpd *h, int id);
void httpd_sim_reset(struct httpd *h, int id);
/* The client stops reading (the transport's sends block) or reads again. */
void httpd_sim_block(struct httpd *h, int id, bool blocked);
/* Delivers a readable/writable event for id (as epoll would), then the queued resumes. */
void httpd_sim_event(struct httpd *h, int id);
/*
 * One epoll_wait batch, as a worker sees it: items[i] >= 0 is an event for
 * that connection, -1 the eventfd (the queued resumes run), -2 - a the
 * listening socket (a connection from address a is accepted). The
 * connections are looked up first, all of them, as epoll_wait returns
 * them; the batch ends with the end of the loop iteration (reap).
 */
void httpd_sim_batch(struct httpd *h, const int *items, int n);
/* Runs the queued resumes (httpd_resume from anywhere). */
void httpd_sim_resumes(struct httpd *h);
/* The simulated clock (mono_usec() at creation, then moved only by httpd_sim_advance). */
int64_t httpd_sim_now(const struct httpd *h);
/* Moves the clock by usec and runs the deadline sweep and the park timer. */
void httpd_sim_advance(struct httpd *h, int64_t usec);
/* What the transport sent on id so far; NULL when id is unknown. */
struct strbuf *httpd_sim_output(struct httpd *h, int id);
/* Whether id is still open (not yet closed by the transport). */
bool httpd_sim_open_p(struct httpd *h, int id);
/* The end of a loop iteration: closed connections are freed. */
void httpd_sim_reap(struct httpd *h);

/*
 * One connection's bytes served from memory, step bytes per read (0: all at
 * once), the end of data being the client's FIN, appending what the server
 * sends to out. Suspended and parked requests are resumed at once.
 */
void httpd_serve_memory(const struct httpd_config *cfg, const void *data, size_t len,
			size_t step, struct strbuf *out);

#endif
