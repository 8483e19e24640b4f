/*
 * httpd.c - the HTTP/1.1 transport (httpd.h): listening socket, worker
 * threads, connections, TLS, deadlines, connection limits, and the
 * suspension of requests (long-polls parked by key, requests awaiting a
 * resume from another thread).
 *
 * Each worker thread runs an epoll loop over its own connections (edge
 * triggered, registered once for reading and writing) and shares the
 * listening socket with the others (EPOLLEXCLUSIVE: an idle worker takes
 * the next connection). A connection stays on the worker that accepted it,
 * and so does every run of its requests: a request that suspends runs again
 * on that worker after httpd_resume() or a wake, which reach it through the
 * worker's resume queue and eventfd.
 *
 * One owner for a connection's life. A connection is in one state at a
 * time, and changes state only through set_state(), which checks the
 * change against one table (conn_edges below), as the job state machine
 * does. Memory is freed at one point only: a connection that ends is
 * released (its socket closed, its request finished) into the CLOSED
 * state and put on its worker's dead list, and the dead list is freed at
 * the end of the loop iteration (reap), after every event of the
 * epoll_wait batch, every queued resume and the deadline sweep have run.
 * So an event, a resume or a sweep that still holds a pointer to a
 * connection ended earlier in the same iteration finds it CLOSED (and does
 * nothing), never freed. Chosen over reference counts (every holder would
 * have to count, and a missed decrement leaks or frees early) and over
 * nginx's generation bit in the event pointer (it covers events only, not
 * the resume queue): one rule, checked in one place. Two more rules make
 * it whole:
 *   - a request awaiting its resume (WAIT) is never released: its resume
 *     may come from another thread at any time. When its client leaves,
 *     the connection becomes an ORPHAN (socket closed, slot given back) and
 *     is released when the resume runs;
 *   - a parked request is released only when it is taken off the park
 *     list under the park lock; a wake that took it first queued a resume,
 *     and the connection waits for it as an ORPHAN.
 *
 * The states and their edges:
 *   TLS     the TLS handshake (within the header deadline)        -> IDLE, CLOSED
 *   IDLE    between requests: a new connection gets the header deadline,
 *           a kept-alive one the idle timeout                      -> HEAD, CLOSED
 *   HEAD    bytes of a request head arrived: complete it within the
 *           header deadline, within HTTP_MAX_HEAD bytes             -> BODY, RUN, WRITE, CLOSED
 *   BODY    the body, by Content-Length or chunked, with progress
 *           within the I/O timeout and 1 KiB/s on average           -> RUN, WRITE, CLOSED
 *   RUN     the caller's run (on this thread, now)                 -> WRITE, WAIT, PARK
 *   WAIT    suspended until httpd_resume()                          -> RUN, ORPHAN
 *   PARK    a long-poll, until a wake, its deadline or a FIN        -> RUN, ORPHAN, CLOSED
 *   WRITE   the answer is being sent, progress within the I/O timeout
 *                                                                   -> IDLE, LINGER, CLOSED
 *   LINGER  after an answer that closes: our side is shut and what the
 *           client still sends is dropped for a moment, so that it
 *           reads the answer rather than a reset                    -> CLOSED
 *   ORPHAN  its client left while its request awaits a resume        -> CLOSED
 *   CLOSED  released; freed at the end of the loop iteration
 *
 * Pipelining: bytes that follow a request wait in the read buffer
 * (bounded) while it runs and are served in order after its answer. A
 * client's FIN ends the connection only once every complete request
 * received before it has been answered (RFC 9112 9.6).
 *
 * A malformed request gets its error (through the caller's refuse) and the
 * connection closes: nothing after a framing error is read as a request.
 * A head that cannot be HTTP (its first bytes are not a method token: a
 * TLS ClientHello on the plain port, binary garbage) is refused at once.
 *
 * Limits: at most max_connections in all and max_connections_per_client
 * from one address. At the total, the worker closes one of its connections
 * that is still in its handshake or head, or idle (they cost their client
 * nothing to reopen), choosing among the oldest the one whose address has
 * the most connections open: a client that fills the server with slow
 * heads loses its own. With none such, the new connection gets 503.
 */
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "http_parse.h"
#include "log.h"

/* How long a graceful stop waits for the requests in flight. */
#define DRAIN_SECONDS 10
/* How often each worker looks for connections past their deadline. */
#define SWEEP_USEC (250 * 1000)
/* How often the park timer looks at the earliest deadline of the parked long-polls. */
#define PARK_TICK_NSEC (20 * 1000 * 1000)
/* How long a closing connection drops what the client still sends. */
#define LINGER_USEC (2 * 1000 * 1000)
#define RBUF_MIN 4096
/*
 * A body must keep coming at this average rate: its time allowed starts at
 * the I/O timeout and grows by a second for each BODY_MIN_RATE bytes, so a
 * client that trickles a byte now and then (slow POST) is closed.
 */
#define BODY_MIN_RATE 1024
/* A body's buffer grows as its bytes arrive, this much at a time at most. */
#define BODY_CHUNK 65536
/* A streamed body (a sink's) is read this much at a time: fewer system calls per GiB. */
#define SINK_CHUNK (256 * 1024)
#define EVENTS_MAX 128
/* At the connection limit, how many of the oldest slow or idle connections are weighed. */
#define RECLAIM_SCAN 64
/* Admitted over the cap while another worker closes one for it: at most this many at once. */
#define RECLAIM_OVERSHOOT 64

/* --- the connection's states and their edges ---------------------------------- */

enum cstate {
	CS_TLS, CS_IDLE, CS_HEAD, CS_BODY, CS_RUN, CS_WAIT, CS_PARK, CS_WRITE, CS_LINGER,
	CS_ORPHAN, CS_CLOSED, CS_COUNT
};

static const char *const cstate_names[CS_COUNT] = {
	"TLS", "IDLE", "HEAD", "BODY", "RUN", "WAIT", "PARK", "WRITE", "LINGER", "ORPHAN",
	"CLOSED",
};

#define E(s) (1u << (s))
/* conn_edges[from]: the states a connection may go to from there. */
static const unsigned conn_edges[CS_COUNT] = {
	[CS_TLS] = E(CS_IDLE) | E(CS_CLOSED),
	[CS_IDLE] = E(CS_HEAD) | E(CS_CLOSED),
	[CS_HEAD] = E(CS_BODY) | E(CS_RUN) | E(CS_WRITE) | E(CS_CLOSED),
	[CS_BODY] = E(CS_RUN) | E(CS_WRITE) | E(CS_CLOSED),
	[CS_RUN] = E(CS_WRITE) | E(CS_WAIT) | E(CS_PARK),
	[CS_WAIT] = E(CS_RUN) | E(CS_ORPHAN),
	[CS_PARK] = E(CS_RUN) | E(CS_ORPHAN) | E(CS_CLOSED),
	[CS_WRITE] = E(CS_IDLE) | E(CS_LINGER) | E(CS_CLOSED),
	[CS_LINGER] = E(CS_CLOSED),
	[CS_ORPHAN] = E(CS_CLOSED),
	[CS_CLOSED] = 0,
};

/* Whether the state may be closed to make room at the connection limit. */
static bool reclaimable(enum cstate s)
{
	return s == CS_TLS || s == CS_IDLE || s == CS_HEAD;
}

/* What a run asked for before it returned. */
enum outcome { OUT_NONE, OUT_ANSWER, OUT_WAIT, OUT_PARK };

struct worker;
struct client;
struct sim_end;

struct conn {
	struct worker *w;
	int fd;
	SSL *ssl;
	enum cstate state;
	int64_t deadline;	/* now_us(); 0: none */
	struct client *client;
	bool can_read;		/* edge seen and not yet read to EAGAIN */
	bool rdhup;		/* the client's FIN was signalled: read to the end */
	bool peer_eof;		/* the client sent FIN */
	bool broken;		/* a read or write failed, or the client reset */

	/* bytes received and not yet taken: rbuf[rstart, rend) */
	char *rbuf;
	size_t rstart, rend, rcap;
	struct http_head_scan scan;

	/* the request being received, run or answered */
	struct httpd_req *req;
	enum outcome outcome;
	uint64_t body_left;	/* Content-Length bytes still to come */
	int64_t body_deadline;	/* the whole body by then (BODY_MIN_RATE) */
	struct http_chunked chunk;
	bool chunked;

	/* the answer: an interim 100 Continue, then head and body */
	struct strbuf out;	/* head (and, over TLS, the body too) */
	char *body;
	size_t body_len;
	size_t out_off;		/* bytes of out, then body, sent */
	bool interim_pending;	/* 100 Continue queued in out, nothing else */
	bool close_after;
	int file_fd;		/* a file's bytes after out (httpd_respond_file); -1: none */
	uint64_t file_off, file_left;
	char *fbuf;		/* file bytes read and not yet all sent (TLS, memory) */
	size_t fbuf_off, fbuf_len;

	struct conn *prev, *next;	/* the worker's connections */
	struct conn *rprev, *rnext;	/* the worker's reclaimable ones, oldest first */
	bool rlisted;
	struct conn *rq_next;	/* the worker's resume queue (under rq_mu) */
	bool rq_queued;		/* under the worker's rq_mu */
	struct conn *dead_next;	/* the worker's dead list */

	struct sim_end *sim;	/* httpd_sim_*: a client in memory instead of a socket */
};

/* A request and the head it was parsed from; the caller's state follows it. */
struct httpd_req {
	struct conn *c;
	struct httpd *h;
	struct http_head head;
	bool has_head;
	char *headbuf;
	struct strbuf body;
	uint64_t body_limit;	/* bytes; the transport's max_body unless the caller's head said */
	httpd_body_sink sink;	/* the body goes here as it arrives, not to body */
	void *sink_ctx;
	uint64_t sink_total;	/* chunked bytes given to the sink */
	bool sink_failed;	/* the sink refused bytes: the rest is not read */
	bool late;		/* begun after the server began to stop */
	bool resumed;
	bool answered;
	bool suspended_counted;
	/* the park (under the server's park_mu): a slot of the deadline heap,
	 * a link in its key's bucket */
	bool in_park;
	int64_t park_deadline;
	char *park_key;
	uint64_t park_hash;
	size_t park_slot;	/* its index in the heap */
	struct httpd_req *park_knext, *park_kprev;
	void *app;
};

struct worker {
	struct httpd *h;
	pthread_t thread;
	int epfd;
	int evfd;
	atomic_bool stop;
	char listen_tag, ev_tag;	/* their addresses tag epoll events */
	pthread_mutex_t rq_mu;
	struct conn *rq_head, *rq_tail;
	struct conn *conns;	/* every connection of this worker but the dead */
	struct conn *rhead, *rtail;	/* reclaimable, oldest first */
	atomic_int rcount;	/* how many (read by the other workers) */
	atomic_int reclaim_owed;	/* closes other workers asked of this one */
	atomic_int reclaim_floor;	/* ... of connections whose address holds at least this many */
	struct conn *dead;	/* released, freed at the end of the iteration */
	int reserve_fd;		/* given up to accept (and drop) one over EMFILE */
	char date[64];
	time_t date_at;
};

/* Connections per client address, for max_connections_per_client and reclaiming. */
struct client {
	unsigned char addr[16];
	int count;
	struct client *next;
};
#define CLIENT_BUCKETS 1024

/* httpd_sim_*: the client's end of a connection in memory. */
struct sim_end {
	struct strbuf in;	/* from the client, not yet read */
	size_t in_off;
	size_t step;		/* at most this many bytes per read */
	struct strbuf out;	/* to the client */
	bool fin, reset, blocked;
	bool closed;		/* the transport released it */
	struct conn *c;
};

struct httpd {
	struct httpd_limits lim;
	const struct httpd_ops *ops;
	void *arg;
	size_t app_size;
	int listen_fd;
	int port;
	SSL_CTX *tls;
	struct worker *workers;
	int nworkers;
	atomic_int nconns;
	pthread_mutex_t clients_mu;
	struct client *clients[CLIENT_BUCKETS];
	int nclients;		/* addresses with a connection open (under clients_mu) */
	/*
	 * Parked (long-poll) requests, woken by key, FIN or deadline: a binary
	 * min-heap by deadline (the timer looks at its top only: O(expiring),
	 * not O(held)) and a hash table of keys (a wake by key finds its own
	 * requests alone), both under park_mu.
	 */
	pthread_mutex_t park_mu;
	struct httpd_req **park_heap;
	size_t park_n, park_cap;
	struct httpd_req **park_keys;	/* buckets, a power of two of them */
	size_t park_nkeys;
	pthread_t timer;
	bool timer_started;
	atomic_bool stopping;
	atomic_int suspended;	/* waiting or parked, and not yet run again or ended */
	atomic_int in_flight;	/* requests begun and not yet finished */
	atomic_int reclaims_pending;	/* admitted over the cap, another worker to close one */
	bool quiesced;
	/* httpd_sim_* */
	bool sim;
	int64_t sim_now;
	struct sim_end **sims;
	int nsims;
};

static void conn_step(struct conn *c);
static void conn_release(struct conn *c);
static void request_run(struct conn *c);
static void queue_resume(struct conn *c);
static bool unpark(struct httpd_req *r);

/* --- time and small helpers ------------------------------------------------ */

static int64_t secs(int s)
{
	return (int64_t)s * 1000000;
}

static int64_t now_us(const struct httpd *h)
{
	return h->sim ? h->sim_now : mono_usec();
}

/* Date: in IMF-fixdate, made once a second per worker. */
static const char *http_date(struct worker *w)
{
	time_t now = time(NULL);
	if (now != w->date_at) {
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(w->date, sizeof(w->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		w->date_at = now;
	}
	return w->date;
}

static const char *reason_phrase(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 417: return "Expectation Failed";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 499: return "Client Closed Request";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

/* --- the one way a connection changes state --------------------------------- */

static void reclaim_unlist(struct conn *c)
{
	struct worker *w = c->w;
	if (!c->rlisted)
		return;
	if (c->rprev)
		c->rprev->rnext = c->rnext;
	else
		w->rhead = c->rnext;
	if (c->rnext)
		c->rnext->rprev = c->rprev;
	else
		w->rtail = c->rprev;
	c->rprev = c->rnext = NULL;
	c->rlisted = false;
	atomic_fetch_sub_explicit(&w->rcount, 1, memory_order_relaxed);
}

static void reclaim_list(struct conn *c)
{
	struct worker *w = c->w;
	reclaim_unlist(c);
	c->rprev = w->rtail;
	if (w->rtail)
		w->rtail->rnext = c;
	else
		w->rhead = c;
	w->rtail = c;
	c->rlisted = true;
	atomic_fetch_add_explicit(&w->rcount, 1, memory_order_relaxed);
}

static void set_state(struct conn *c, enum cstate to, int64_t deadline)
{
	enum cstate from = c->state;

	if (from != to && !(conn_edges[from] & E(to))) {
		log_error("http: a connection went from %s to %s, which is not an edge",
			  cstate_names[from], cstate_names[to]);
		abort();	/* a bug of this file: the fuzzer and the tests look for it */
	}
	c->state = to;
	c->deadline = deadline;
	if (reclaimable(to)) {
		if (from != to || !c->rlisted)
			reclaim_list(c);	/* the newest: it just did something */
	} else {
		reclaim_unlist(c);
	}
}

/* --- per-client connection counts ----------------------------------------- */

static void client_key(const struct sockaddr_storage *sa, unsigned char key[16])
{
	memset(key, 0, 16);
	if (sa->ss_family == AF_INET) {
		/* as an IPv4-mapped IPv6 address */
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		memcpy(key, a, 16);
		/* One client holds a whole /64 (SLAAC, privacy addresses). */
		if (!IN6_IS_ADDR_V4MAPPED(a))
			memset(key + 8, 0, 8);
	}
}

static unsigned client_bucket(const unsigned char key[16])
{
	uint32_t hsh = 2166136261u;
	for (int i = 0; i < 16; i++)
		hsh = (hsh ^ key[i]) * 16777619u;
	return hsh % CLIENT_BUCKETS;
}

/* Counts one more connection from sa; NULL when that would pass the limit. */
static struct client *client_acquire(struct httpd *h, const struct sockaddr_storage *sa)
{
	unsigned char key[16];
	struct client *cl;

	client_key(sa, key);
	unsigned b = client_bucket(key);
	pthread_mutex_lock(&h->clients_mu);
	for (cl = h->clients[b]; cl && memcmp(cl->addr, key, 16); cl = cl->next)
		;
	if (!cl) {
		cl = xcalloc(1, sizeof(*cl));
		memcpy(cl->addr, key, 16);
		cl->next = h->clients[b];
		h->clients[b] = cl;
		h->nclients++;
	}
	if (h->lim.max_connections_per_client && cl->count >= h->lim.max_connections_per_client)
		cl = NULL;
	else
		cl->count++;
	pthread_mutex_unlock(&h->clients_mu);
	return cl;
}

static void client_release(struct httpd *h, struct client *cl)
{
	if (!cl)
		return;
	pthread_mutex_lock(&h->clients_mu);
	if (--cl->count == 0) {
		unsigned b = client_bucket(cl->addr);
		struct client **pp = &h->clients[b];
		while (*pp != cl)
			pp = &(*pp)->next;
		*pp = cl->next;
		free(cl);
		h->nclients--;
	}
	pthread_mutex_unlock(&h->clients_mu);
}

/* --- socket I/O: plain, TLS, or memory ---------------------------------------- */

/* >0 bytes read; 0 end of stream; -1 nothing now (EAGAIN); -2 failed. */
static ssize_t conn_recv(struct conn *c, char *buf, size_t len)
{
	if (c->sim) {
		struct sim_end *s = c->sim;
		if (s->reset)
			return -2;
		size_t n = s->in.len - s->in_off;
		if (!n)
			return s->fin ? 0 : -1;
		if (n > s->step)
			n = s->step;
		if (n > len)
			n = len;
		memcpy(buf, s->in.buf + s->in_off, n);
		s->in_off += n;
		if (s->in_off == s->in.len) {
			sb_reset(&s->in);
			s->in_off = 0;
		}
		return (ssize_t)n;
	}
	if (c->fd < 0)
		return -2;
	if (!c->ssl) {
		ssize_t n = recv(c->fd, buf, len, 0);
		if (n >= 0)
			return n;
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -1 : -2;
	}
	ERR_clear_error();
	int n = SSL_read(c->ssl, buf, (int)(len > INT32_MAX ? INT32_MAX : len));
	if (n > 0)
		return n;
	switch (SSL_get_error(c->ssl, n)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		return errno == 0 ? 0 : -2;
	default:
		return -2;
	}
}

/* Bytes written (>= 0), -1 nothing now, -2 failed. */
static ssize_t conn_send(struct conn *c, const struct iovec *iov, int n)
{
	if (c->sim) {
		struct sim_end *s = c->sim;
		if (s->reset)
			return -2;
		if (s->blocked)
			return -1;
		size_t sent = 0;
		for (int i = 0; i < n; i++) {
			sb_add(&s->out, iov[i].iov_base, iov[i].iov_len);
			sent += iov[i].iov_len;
		}
		return (ssize_t)sent;
	}
	if (c->fd < 0)
		return -2;
	if (!c->ssl) {
		struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n };
		ssize_t r = sendmsg(c->fd, &m, MSG_NOSIGNAL);
		if (r >= 0)
			return r;
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -1 : -2;
	}
	ERR_clear_error();
	int r = SSL_write(c->ssl, iov[0].iov_base, (int)iov[0].iov_len);
	if (r > 0)
		return r;
	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return -1;
	default:
		return -2;
	}
}

/* Our side of the connection is done sending. */
static void conn_shutdown_write(struct conn *c)
{
	if (c->sim)
		return;
	if (c->ssl)
		SSL_shutdown(c->ssl);
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_WR);
}

/* The socket goes (the connection's memory stays until reaped). */
static void conn_close_socket(struct conn *c)
{
	struct httpd *h = c->w->h;

	if (c->fd < 0 && !c->ssl && !c->client)
		return;
	if (c->ssl) {
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->fd >= 0) {
		if (c->w->epfd >= 0)
			epoll_ctl(c->w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		c->fd = -1;
	}
	client_release(h, c->client);
	c->client = NULL;
	atomic_fetch_sub(&h->nconns, 1);
}

/*
 * Reads into buf: the bytes read, or 0 with what stopped it recorded (no
 * more now: can_read; the client's FIN: peer_eof; a failure: broken).
 */
static size_t conn_read(struct conn *c, char *buf, size_t len)
{
	ssize_t n = conn_recv(c, buf, len);

	if (n == -1)
		c->can_read = false;
	else if (n == -2)
		c->broken = true;
	else if (n == 0)
		c->peer_eof = true;
	return n > 0 ? (size_t)n : 0;
}

/* Room for at least want more bytes in rbuf, compacting or growing it up to max. */
static bool rbuf_room(struct conn *c, size_t want, size_t max)
{
	if (c->rstart == c->rend) {
		c->rstart = c->rend = 0;
	} else if (c->rstart && c->rcap - c->rend < want) {
		memmove(c->rbuf, c->rbuf + c->rstart, c->rend - c->rstart);
		c->rend -= c->rstart;
		c->rstart = 0;
	}
	if (c->rcap - c->rend >= want)
		return true;
	if (c->rcap >= max)
		return c->rcap > c->rend;
	size_t cap = c->rcap ? c->rcap * 2 : RBUF_MIN;
	while (cap < c->rend + want && cap < max)
		cap *= 2;
	if (cap > max)
		cap = max;
	c->rbuf = xrealloc(c->rbuf, cap + 1);	/* +1: room for a NUL */
	c->rcap = cap;
	return c->rcap > c->rend;
}

/*
 * Reads what the socket has into rbuf (up to max buffered). A failure
 * (reset) sets broken; the end of the stream sets peer_eof.
 */
static void conn_fill(struct conn *c, size_t max)
{
	while (c->can_read && !c->peer_eof && !c->broken) {
		if (!rbuf_room(c, RBUF_MIN, max))
			return;	/* full: read again once some is taken */
		size_t room = c->rcap - c->rend;
		size_t n = conn_read(c, c->rbuf + c->rend, room);
		if (!n)
			return;
		c->rend += n;
		/* A short read of a plain socket took all it had: the next byte
		 * brings a new edge. (TLS may hold more records: read on.) */
		if (!c->ssl && !c->sim && n < room && !c->rdhup)
			c->can_read = false;
	}
}

/* --- requests ---------------------------------------------------------------- */

static struct httpd_req *request_new(struct conn *c)
{
	struct httpd *h = c->w->h;
	size_t off = (sizeof(struct httpd_req) + alignof(max_align_t) - 1) &
		     ~(alignof(max_align_t) - 1);
	struct httpd_req *r = xcalloc(1, off + h->app_size);

	r->c = c;
	r->h = h;
	r->body_limit = h->lim.max_body;
	r->app = (char *)r + off;
	c->req = r;
	c->outcome = OUT_NONE;
	atomic_fetch_add(&h->in_flight, 1);
	/* Counted before the look at stopping, both sequentially consistent
	 * with httpd_stop()'s: the drain either waits for this request or this
	 * request sees that the server is stopping (the caller refuses it). */
	r->late = atomic_load(&h->stopping);
	return r;
}

static void count_suspended(struct httpd_req *r, bool on)
{
	if (r->suspended_counted == on)
		return;
	atomic_fetch_add_explicit(&r->h->suspended, on ? 1 : -1, memory_order_relaxed);
	r->suspended_counted = on;
}

/* The request is over (answered, or its client gone): the caller's done, then freed. */
static void request_finish(struct conn *c)
{
	struct httpd_req *r = c->req;
	struct httpd *h = c->w->h;

	if (!r)
		return;
	count_suspended(r, false);
	h->ops->done(r, h->arg);
	sb_release(&r->body);
	free(r->park_key);
	free(r->headbuf);
	free(r);
	c->req = NULL;
	atomic_fetch_sub(&h->in_flight, 1);
}

/*
 * Answers a request the transport refuses (malformed, too large, too slow),
 * through the caller's refuse, and closes the connection after it.
 */
static void conn_refuse(struct conn *c, int status, const char *message)
{
	struct httpd *h = c->w->h;
	struct httpd_req *r = c->req ? c->req : request_new(c);
	char msg[128];

	if (status == 413 && !message) {
		snprintf(msg, sizeof(msg), "Request payload size exceeds the limit: %zu bytes.",
			 h->lim.max_body);
		message = msg;
	}
	c->close_after = true;
	if (!r->answered)
		h->ops->refuse(r, status, message, h->arg);
	if (!r->answered)
		httpd_respond(r, status, "text/plain; charset=UTF-8", NULL, 0, NULL, true);
	c->close_after = true;
	set_state(c, CS_WRITE, now_us(h) + secs(h->lim.io_timeout_s));
}

/*
 * Whether buf[0..n) could begin a request line: a method token (RFC 9110
 * 9.1), then a space. Anything else (a TLS ClientHello on the plain port,
 * binary) is refused at once rather than held to the header deadline.
 */
static bool head_plausible(const char *buf, size_t n)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~";

	for (size_t i = 0; i < n && i < 64; i++) {
		unsigned char ch = (unsigned char)buf[i];
		if (ch == ' ')
			return i > 0;
		if (!(ch >= '0' && ch <= '9') && !((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z') &&
		    !(ch && strchr(tchar, ch)))
			return false;
	}
	return n < 64;	/* a method of 64 characters is none */
}

/* Whether rbuf holds a whole request head after what is being answered. */
static bool complete_head_buffered(const struct conn *c)
{
	size_t s = c->rstart;
	struct http_head_scan scan = { 0 };
	struct http_perror perr;

	while (c->rend - s >= 2 && c->rbuf[s] == '\r' && c->rbuf[s + 1] == '\n')
		s += 2;
	if (s == c->rend)
		return false;
	/* an error is answered too (a refusal), so it counts */
	return http_head_end(c->rbuf + s, c->rend - s, &scan, &perr) != 0;
}

/* The head is complete in rbuf[rstart, rstart + len): begin the request. */
static void request_begin(struct conn *c, size_t len)
{
	struct httpd *h = c->w->h;
	struct httpd_req *r = request_new(c);
	struct http_perror perr;

	r->headbuf = xmalloc(len + 1);
	memcpy(r->headbuf, c->rbuf + c->rstart, len);
	r->headbuf[len] = '\0';
	c->rstart += len;
	if (http_head_parse(r->headbuf, len, &r->head, &perr)) {
		conn_refuse(c, perr.status, perr.message);
		return;
	}
	r->has_head = true;
	c->chunked = r->head.body == HTTP_BODY_CHUNKED;
	c->body_left = r->head.body == HTTP_BODY_LENGTH ? r->head.content_length : 0;
	memset(&c->chunk, 0, sizeof(c->chunk));
	if (h->ops->head) {
		/* The caller may set the body's limit or sink, or answer now. */
		c->outcome = OUT_NONE;
		h->ops->head(r, h->arg);
		if (r->answered) {
			/* Answered before its body (a body there is is not read: the
			 * answer said Connection: close, see queue_head). */
			set_state(c, CS_WRITE, now_us(h) + secs(h->lim.io_timeout_s));
			return;
		}
	}
	if (c->body_left > r->body_limit) {
		/* Refused before a byte of it is read (no 100 Continue). */
		conn_refuse(c, 413, NULL);
		return;
	}
	if (r->head.expect_continue && (c->chunked || c->body_left) && c->rstart == c->rend &&
	    !r->late) {
		sb_addstr(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
		c->interim_pending = true;
	}
	if (c->chunked || c->body_left) {
		c->body_deadline = now_us(h) + secs(h->lim.io_timeout_s);
		set_state(c, CS_BODY, c->body_deadline);
	} else {
		request_run(c);
	}
}

/* n body bytes came: the deadlines move (never without bytes). */
static void body_progress(struct conn *c, size_t n)
{
	struct httpd *h = c->w->h;

	if (!n)
		return;
	c->body_deadline += (int64_t)n * 1000000 / BODY_MIN_RATE;
	c->deadline = now_us(h) + secs(h->lim.io_timeout_s);
	if (c->deadline > c->body_deadline)
		c->deadline = c->body_deadline;
}

/* Gives body bytes to the caller's sink; a refusal ends the reading of the body. */
static void body_to_sink(struct conn *c, const char *data, size_t n)
{
	struct httpd_req *r = c->req;

	if (!n || r->sink_failed)
		return;
	if (r->sink(r, data, n, r->sink_ctx)) {
		r->sink_failed = true;
		c->close_after = true;	/* the rest of the body is never read */
	}
}

/* Takes body bytes from rbuf. Returns 1 when the body is complete (or its sink refused), -1 when refused. */
static int body_take(struct conn *c)
{
	struct httpd_req *r = c->req;
	size_t avail = c->rend - c->rstart;

	if (!c->chunked) {
		size_t n = avail < c->body_left ? avail : (size_t)c->body_left;
		if (r->sink)
			body_to_sink(c, c->rbuf + c->rstart, n);
		else
			sb_add(&r->body, c->rbuf + c->rstart, n);
		c->rstart += n;
		c->body_left -= n;
		body_progress(c, n);
		return c->body_left == 0 || r->sink_failed;
	}
	size_t used = 0;
	struct http_perror perr;
	uint64_t limit = r->body_limit > SIZE_MAX ? SIZE_MAX : r->body_limit;
	/* With a sink, the chunks pass through body (emptied each time) and
	 * count against the limit themselves. */
	if (r->sink && r->sink_total + r->body.len > limit) {
		conn_refuse(c, 413, NULL);
		return -1;
	}
	int rc = http_chunked_feed(&c->chunk, c->rbuf + c->rstart, avail, &used, &r->body,
				   r->sink ? (size_t)(limit - r->sink_total) : (size_t)limit, &perr);
	c->rstart += used;
	body_progress(c, used);
	if (rc < 0) {
		conn_refuse(c, perr.status, perr.message);
		return -1;
	}
	if (r->sink && r->body.len) {
		body_to_sink(c, r->body.buf, r->body.len);
		r->sink_total += r->body.len;
		sb_reset(&r->body);
		if (r->sink_failed)
			return 1;
	}
	return rc;
}

/* A Content-Length body straight into the request's buffer, without the copy through rbuf. */
static void body_read_direct(struct conn *c)
{
	struct strbuf *b = &c->req->body;

	if (c->req->sink) {
		/* Streamed: through rbuf (bounded), straight on to the sink. */
		while (c->can_read && !c->peer_eof && !c->broken && c->body_left &&
		       !c->req->sink_failed) {
			if (!rbuf_room(c, RBUF_MIN, SINK_CHUNK))
				return;
			size_t room = c->rcap - c->rend;
			if (room > c->body_left)
				room = (size_t)c->body_left;
			size_t n = conn_read(c, c->rbuf + c->rend, room);
			if (!n)
				break;
			body_to_sink(c, c->rbuf + c->rend, n);
			c->body_left -= n;
			body_progress(c, n);
		}
		return;
	}
	while (c->can_read && !c->peer_eof && !c->broken && c->body_left) {
		/* The buffer grows with what arrives, not with what is announced. */
		sb_grow(b, c->body_left < BODY_CHUNK ? (size_t)c->body_left : BODY_CHUNK);
		size_t room = b->alloc - b->len - 1;
		if (room > c->body_left)
			room = (size_t)c->body_left;
		size_t n = conn_read(c, b->buf + b->len, room);
		if (!n)
			break;
		b->len += n;
		b->buf[b->len] = '\0';
		c->body_left -= n;
		body_progress(c, n);
	}
}

/* The run returned: on to what it asked for. */
static void after_run(struct conn *c)
{
	struct httpd *h = c->w->h;
	struct httpd_req *r = c->req;

	switch (c->outcome) {
	case OUT_WAIT:
		set_state(c, CS_WAIT, 0);
		return;
	case OUT_PARK:
		set_state(c, CS_PARK, 0);
		/* Its client's FIN came with the request: no event will tell again. */
		if (c->peer_eof && unpark(r))
			queue_resume(c);
		return;
	case OUT_NONE:
		/* The caller's contract is to answer, suspend or park. */
		log_error("http: %s %s: the request was neither answered nor suspended",
			  httpd_req_method(r), r->has_head ? "(head parsed)" : "(no head)");
		h->ops->refuse(r, 500, "Internal error encountered.", h->arg);
		if (!r->answered)
			httpd_respond(r, 500, "text/plain; charset=UTF-8", NULL, 0, NULL, true);
		break;
	case OUT_ANSWER:
		break;
	}
	set_state(c, CS_WRITE, now_us(h) + secs(h->lim.io_timeout_s));
}

static void request_run(struct conn *c)
{
	struct httpd *h = c->w->h;
	struct httpd_req *r = c->req;

	/* A 100 Continue not yet all sent stays in front of the answer. */
	c->interim_pending = false;
	if (c->out_off >= c->out.len) {
		sb_reset(&c->out);
		c->out_off = 0;
	}
	c->outcome = OUT_NONE;
	count_suspended(r, false);
	set_state(c, CS_RUN, 0);
	h->ops->run(r, h->arg);
	after_run(c);
}

/* --- answers ---------------------------------------------------------------- */

/*
 * Queues an answer's head announcing len bytes. Returns false, queuing
 * nothing, when r cannot be answered now (answered already, or not the
 * connection's request, or not in a state that answers).
 */
static bool queue_head(struct httpd_req *r, int status, const char *content_type, uint64_t len,
		       const char *extra, bool close_after)
{
	struct conn *c = r->c;
	struct httpd *h = r->h;

	if (r->answered || c->req != r || (c->state != CS_RUN && c->state != CS_HEAD &&
					   c->state != CS_BODY && c->state != CS_IDLE))
		return false;
	r->answered = true;
	c->outcome = OUT_ANSWER;
	/* Closes after: asked, a refusal, HTTP/1.0 without keep-alive, a
	 * stopping server, or the client's FIN with no other whole request
	 * received before it (those are answered first: RFC 9112 9.6). */
	/* An answer before a body there is (a head hook's): the body is never read. */
	bool body_unread = c->state == CS_HEAD && (c->body_left || c->chunked);
	if (close_after || body_unread || c->close_after || !r->has_head || !r->head.keep_alive ||
	    atomic_load_explicit(&h->stopping, memory_order_relaxed) || c->broken ||
	    (c->peer_eof && !complete_head_buffered(c)))
		c->close_after = true;
	sb_addf(&c->out, "HTTP/1.1 %d %s\r\nDate: %s\r\nContent-Type: %s\r\nContent-Length: %llu\r\n"
		"%s%s\r\n", status, reason_phrase(status), http_date(c->w), content_type,
		(unsigned long long)len, extra ? extra : "",
		c->close_after ? "Connection: close\r\n" :
		r->head.minor == 0 ? "Connection: keep-alive\r\n" : "");
	c->interim_pending = false;
	return true;
}

static bool is_head_request(const struct httpd_req *r)
{
	return r->has_head && !strcmp(r->head.method, "HEAD");
}

void httpd_respond(struct httpd_req *r, int status, const char *content_type, char *body,
		   size_t len, const char *extra, bool close_after)
{
	struct conn *c = r->c;

	if (!queue_head(r, status, content_type, len, extra, close_after)) {
		free(body);
		return;
	}
	if (is_head_request(r) || status == 304) {
		free(body);
		body = NULL;
		len = 0;
	}
	if (c->ssl && body) {
		/* one TLS record where it fits, rather than two writes */
		sb_add(&c->out, body, len);
		free(body);
		body = NULL;
		len = 0;
	}
	free(c->body);
	c->body = body;
	c->body_len = len;
}

void httpd_respond_file(struct httpd_req *r, int status, const char *content_type, int fd,
			uint64_t offset, uint64_t len, const char *extra, bool close_after)
{
	struct conn *c = r->c;

	if (!queue_head(r, status, content_type, len, extra, close_after) || is_head_request(r)) {
		close(fd);
		return;
	}
	c->file_fd = fd;
	c->file_off = offset;
	c->file_left = len;
}

/* File bytes straight from the file (a plain socket): 1 all sent, 0 socket full, -1 failed. */
static int file_sendfile(struct conn *c)
{
	while (c->file_left) {
		size_t n = c->file_left > (1u << 20) ? (1u << 20) : (size_t)c->file_left;
		off_t off = (off_t)c->file_off;
		ssize_t r = sendfile(c->fd, c->file_fd, &off, n);
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
		if (r == 0)
			return -1;	/* the file is shorter than it was */
		c->file_off += (uint64_t)r;
		c->file_left -= (uint64_t)r;
		c->deadline = now_us(c->w->h) + secs(c->w->h->lim.io_timeout_s);
	}
	return 1;
}

/* File bytes through a buffer (TLS, memory): a partial write resends the same bytes. */
static int file_buffered(struct conn *c)
{
	while (c->file_left || c->fbuf_off < c->fbuf_len) {
		if (c->fbuf_off == c->fbuf_len) {
			if (!c->fbuf)
				c->fbuf = xmalloc(BODY_CHUNK);
			size_t n = c->file_left > BODY_CHUNK ? BODY_CHUNK : (size_t)c->file_left;
			ssize_t r = pread(c->file_fd, c->fbuf, n, (off_t)c->file_off);
			if (r <= 0)
				return -1;
			c->file_off += (uint64_t)r;
			c->file_left -= (uint64_t)r;
			c->fbuf_off = 0;
			c->fbuf_len = (size_t)r;
		}
		struct iovec iov = { c->fbuf + c->fbuf_off, c->fbuf_len - c->fbuf_off };
		ssize_t r = conn_send(c, &iov, 1);
		if (r == -1)
			return 0;
		if (r < 0)
			return -1;
		c->fbuf_off += (size_t)r;
		c->deadline = now_us(c->w->h) + secs(c->w->h->lim.io_timeout_s);
	}
	return 1;
}

/*
 * Sends what is queued. Returns 1 when all of it went, 0 when the socket
 * is full (an EPOLLOUT edge resumes), -1 when the connection failed.
 */
static int conn_flush(struct conn *c)
{
	while (c->out_off < c->out.len + c->body_len) {
		struct iovec iov[2];
		int n = 0;
		if (c->out_off < c->out.len) {
			iov[n].iov_base = c->out.buf + c->out_off;
			iov[n++].iov_len = c->out.len - c->out_off;
			if (c->body_len)
				iov[n++] = (struct iovec){ c->body, c->body_len };
		} else {
			size_t off = c->out_off - c->out.len;
			iov[n++] = (struct iovec){ c->body + off, c->body_len - off };
		}
		ssize_t r = conn_send(c, iov, n);
		if (r == -1)
			return 0;
		if (r < 0)
			return -1;
		c->out_off += (size_t)r;
		c->deadline = now_us(c->w->h) + secs(c->w->h->lim.io_timeout_s);
	}
	if (c->file_fd >= 0)
		return c->ssl || c->sim ? file_buffered(c) : file_sendfile(c);
	return 1;
}

static void out_reset(struct conn *c)
{
	sb_reset(&c->out);
	free(c->body);
	c->body = NULL;
	c->body_len = 0;
	c->out_off = 0;
	if (c->file_fd >= 0)
		close(c->file_fd);
	c->file_fd = -1;
	c->file_left = 0;
	c->fbuf_off = c->fbuf_len = 0;
}

/* --- suspension ----------------------------------------------------------------- */

/* Queues c's request to run again on its worker. Any thread. */
static void queue_resume(struct conn *c)
{
	struct worker *w = c->w;
	bool signal;

	pthread_mutex_lock(&w->rq_mu);
	if (c->rq_queued) {
		pthread_mutex_unlock(&w->rq_mu);
		return;
	}
	c->rq_queued = true;
	c->rq_next = NULL;
	signal = !w->rq_head;
	if (w->rq_tail)
		w->rq_tail->rq_next = c;
	else
		w->rq_head = c;
	w->rq_tail = c;
	pthread_mutex_unlock(&w->rq_mu);
	if (signal && w->evfd >= 0) {
		uint64_t one = 1;
		if (write(w->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_error("http: cannot wake a worker: %s", strerror(errno));
	}
}

static bool rq_queued(struct conn *c)
{
	pthread_mutex_lock(&c->w->rq_mu);
	bool q = c->rq_queued;
	pthread_mutex_unlock(&c->w->rq_mu);
	return q;
}

/* --- the park: a heap by deadline, a hash table by key ----------------------- */

static uint64_t park_key_hash(const char *key)
{
	uint64_t x = 0xcbf29ce484222325ULL;	/* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)key; *p; p++)
		x = (x ^ *p) * 0x100000001b3ULL;
	return x ^ (x >> 29);
}

static void heap_set(struct httpd *h, size_t i, struct httpd_req *r)
{
	h->park_heap[i] = r;
	r->park_slot = i;
}

static void heap_up(struct httpd *h, size_t i)
{
	struct httpd_req *r = h->park_heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (h->park_heap[parent]->park_deadline <= r->park_deadline)
			break;
		heap_set(h, i, h->park_heap[parent]);
		i = parent;
	}
	heap_set(h, i, r);
}

static void heap_down(struct httpd *h, size_t i)
{
	struct httpd_req *r = h->park_heap[i];
	for (;;) {
		size_t kid = 2 * i + 1;
		if (kid >= h->park_n)
			break;
		if (kid + 1 < h->park_n &&
		    h->park_heap[kid + 1]->park_deadline < h->park_heap[kid]->park_deadline)
			kid++;
		if (r->park_deadline <= h->park_heap[kid]->park_deadline)
			break;
		heap_set(h, i, h->park_heap[kid]);
		i = kid;
	}
	heap_set(h, i, r);
}

static void keys_link(struct httpd_req **buckets, size_t nkeys, struct httpd_req *r)
{
	struct httpd_req **b = &buckets[r->park_hash & (nkeys - 1)];
	r->park_kprev = NULL;
	r->park_knext = *b;
	if (*b)
		(*b)->park_kprev = r;
	*b = r;
}

/* Puts r in the park (park_mu held). */
static void park_insert(struct httpd *h, struct httpd_req *r)
{
	if (h->park_n == h->park_cap) {
		h->park_cap = h->park_cap ? 2 * h->park_cap : 64;
		h->park_heap = xrealloc(h->park_heap, h->park_cap * sizeof(*h->park_heap));
	}
	if (h->park_n + 1 > h->park_nkeys) {	/* at most one request per bucket on average */
		size_t n = h->park_nkeys ? 2 * h->park_nkeys : 64;
		struct httpd_req **b = xcalloc(n, sizeof(*b));
		for (size_t i = 0; i < h->park_n; i++)
			keys_link(b, n, h->park_heap[i]);
		free(h->park_keys);
		h->park_keys = b;
		h->park_nkeys = n;
	}
	keys_link(h->park_keys, h->park_nkeys, r);
	h->park_heap[h->park_n] = r;
	heap_up(h, h->park_n++);
	r->in_park = true;
}

/* Takes r out of the park (park_mu held, r in it). */
static void park_remove(struct httpd *h, struct httpd_req *r)
{
	size_t i = r->park_slot;
	struct httpd_req *last = h->park_heap[--h->park_n];
	if (last != r) {
		heap_set(h, i, last);
		if (i > 0 && h->park_heap[(i - 1) / 2]->park_deadline > last->park_deadline)
			heap_up(h, i);
		else
			heap_down(h, i);
	}
	if (r->park_kprev)
		r->park_kprev->park_knext = r->park_knext;
	else
		h->park_keys[r->park_hash & (h->park_nkeys - 1)] = r->park_knext;
	if (r->park_knext)
		r->park_knext->park_kprev = r->park_kprev;
	r->park_knext = r->park_kprev = NULL;
	r->in_park = false;
}

/* Takes r out of the park. Returns false when it was not in it (a wake took it first). */
static bool unpark(struct httpd_req *r)
{
	struct httpd *h = r->h;
	bool was = false;

	pthread_mutex_lock(&h->park_mu);
	if (r->in_park) {
		park_remove(h, r);
		was = true;
	}
	pthread_mutex_unlock(&h->park_mu);
	return was;
}

void httpd_suspend(struct httpd_req *r)
{
	if (r->c->state != CS_RUN || r->answered)
		return;
	r->c->outcome = OUT_WAIT;
	count_suspended(r, true);
}

void httpd_resume(struct httpd_req *r)
{
	queue_resume(r->c);
}

bool httpd_park(struct httpd_req *r, const char *key, int64_t deadline_us)
{
	struct httpd *h = r->h;

	if (r->c->state != CS_RUN || r->answered)
		return false;
	free(r->park_key);
	r->park_key = xstrdup(key);
	r->park_deadline = deadline_us;
	pthread_mutex_lock(&h->park_mu);
	/* Checked under the lock that the shutdown's wake-all takes: a request
	 * that parked after that wake would never be woken. */
	if (atomic_load(&h->stopping)) {
		pthread_mutex_unlock(&h->park_mu);
		return false;
	}
	r->park_hash = park_key_hash(key);
	park_insert(h, r);
	pthread_mutex_unlock(&h->park_mu);
	r->c->outcome = OUT_PARK;
	count_suspended(r, true);
	return true;
}

/* Resumes the parked requests whose deadline is at or before now. */
static void wake_expired(struct httpd *h, int64_t now)
{
	pthread_mutex_lock(&h->park_mu);
	while (h->park_n && h->park_heap[0]->park_deadline <= now) {
		struct httpd_req *r = h->park_heap[0];
		park_remove(h, r);
		queue_resume(r->c);
	}
	pthread_mutex_unlock(&h->park_mu);
}

void httpd_wake(struct httpd *h, const char *key)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->park_mu);
	if (!key) {
		while (h->park_n) {
			struct httpd_req *r = h->park_heap[h->park_n - 1];
			park_remove(h, r);
			queue_resume(r->c);
		}
	} else if (h->park_nkeys) {
		uint64_t hash = park_key_hash(key);
		struct httpd_req *r = h->park_keys[hash & (h->park_nkeys - 1)], *next;
		for (; r; r = next) {
			next = r->park_knext;
			if (r->park_hash == hash && !strcmp(r->park_key, key)) {
				park_remove(h, r);
				queue_resume(r->c);
			}
		}
	}
	pthread_mutex_unlock(&h->park_mu);
}

static void *park_timer(void *arg)
{
	struct httpd *h = arg;
	pthread_setname_np(pthread_self(), "http-park");
	for (;;) {
		struct timespec ts = { 0, PARK_TICK_NSEC };
		nanosleep(&ts, NULL);
		if (atomic_load(&h->stopping))
			return NULL;
		wake_expired(h, mono_usec());
	}
}

/* --- a connection's end --------------------------------------------------------- */

/*
 * Releases c: its request finished, its socket closed, its memory put on
 * the dead list (freed by reap at the end of the loop iteration). Never
 * while a resume may still come for it.
 */
static void conn_release(struct conn *c)
{
	struct worker *w = c->w;

	if (c->state == CS_CLOSED)
		return;
	if (c->state == CS_WAIT || c->state == CS_RUN || rq_queued(c)) {
		log_error("http: a connection in %s released with a resume to come",
			  cstate_names[c->state]);
		abort();
	}
	set_state(c, CS_CLOSED, 0);
	request_finish(c);
	conn_close_socket(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	c->dead_next = w->dead;
	w->dead = c;
}

/*
 * The client left (reset, or a failed write) while the request waits for a
 * resume: the socket and its slot go now, the connection when the resume
 * has run.
 */
static void conn_orphan(struct conn *c)
{
	set_state(c, CS_ORPHAN, 0);
	conn_close_socket(c);
}

/* The client is gone: end c, or orphan it while a resume is to come. */
static void conn_gone(struct conn *c)
{
	c->broken = true;
	switch (c->state) {
	case CS_WAIT:
		conn_orphan(c);
		return;
	case CS_PARK:
		if (unpark(c->req)) {
			conn_release(c);	/* no resume will come: it left the list */
			return;
		}
		conn_orphan(c);	/* a wake got there first: its resume is queued */
		return;
	case CS_ORPHAN:
	case CS_CLOSED:
		return;
	default:
		conn_release(c);
	}
}

/* Frees the connections released in this loop iteration. */
static void reap(struct worker *w)
{
	while (w->dead) {
		struct conn *c = w->dead;
		w->dead = c->dead_next;
		if (c->sim) {
			c->sim->closed = true;
			c->sim->c = NULL;
		}
		out_reset(c);
		sb_release(&c->out);
		free(c->fbuf);
		free(c->rbuf);
		free(c);
	}
}

/* --- the connection's state machine ----------------------------------------- */

/* Drops the empty lines a client may send between requests (RFC 9112 2.2). */
static void skip_blank_lines(struct conn *c)
{
	while (c->rend - c->rstart >= 2 && c->rbuf[c->rstart] == '\r' &&
	       c->rbuf[c->rstart + 1] == '\n')
		c->rstart += 2;
}

/* IDLE, HEAD, BODY: reading a request. Returns false when the connection is to end. */
static bool step_receive(struct conn *c)
{
	struct httpd *h = c->w->h;

	for (;;) {
		if (c->state == CS_BODY && !c->chunked && c->rstart == c->rend)
			body_read_direct(c);
		else
			conn_fill(c, c->state == CS_BODY ? 65536 : HTTP_MAX_HEAD + 2);
		if (c->broken)
			return false;
		if (c->state == CS_IDLE) {
			skip_blank_lines(c);
			if (c->rstart == c->rend || (c->rend - c->rstart == 1 &&
						     c->rbuf[c->rstart] == '\r'))
				return !c->peer_eof;
			memset(&c->scan, 0, sizeof(c->scan));
			set_state(c, CS_HEAD, now_us(h) + secs(h->lim.header_timeout_s));
		}
		if (c->state == CS_HEAD) {
			struct http_perror perr;
			if (!head_plausible(c->rbuf + c->rstart, c->rend - c->rstart)) {
				conn_refuse(c, 400, "The request does not begin with an HTTP method: "
					    "this server speaks HTTP/1.1 (plain text on this port).");
				return true;
			}
			long end = http_head_end(c->rbuf + c->rstart, c->rend - c->rstart, &c->scan,
						 &perr);
			if (end < 0) {
				conn_refuse(c, perr.status, perr.message);
				return true;
			}
			if (end == 0) {
				if (c->peer_eof)
					return false;	/* half a request, then gone */
				if (c->rend - c->rstart >= HTTP_MAX_HEAD) {
					/* (http_head_end says so first; never spin on a full buffer) */
					conn_refuse(c, 431, "The request head is too large.");
					return true;
				}
				if (!c->can_read)
					return true;
				continue;	/* the buffer was full: grown, read on */
			}
			request_begin(c, (size_t)end);
			if (c->state != CS_BODY)
				return true;
		}
		if (c->state == CS_BODY) {
			if (c->interim_pending) {
				int f = conn_flush(c);
				if (f < 0)
					return false;
				if (f == 1) {
					out_reset(c);
					c->interim_pending = false;
				}
			}
			int done = body_take(c);
			if (done < 0)
				return true;
			if (done) {
				request_run(c);
				return true;
			}
			if (c->peer_eof)
				return false;	/* the body will never be complete */
			if (!c->can_read)
				return true;
		}
	}
}

/* After a whole answer: the next request, or the connection's end. */
static void answer_sent(struct conn *c)
{
	struct httpd *h = c->w->h;
	bool close = c->close_after || c->broken;

	request_finish(c);
	out_reset(c);
	c->close_after = false;
	if (close) {
		/* Shut our side, then drop what still comes for a moment. */
		conn_shutdown_write(c);
		set_state(c, CS_LINGER, now_us(h) + LINGER_USEC);
		return;
	}
	set_state(c, CS_IDLE, now_us(h) + secs(h->lim.idle_timeout_s));
}

/*
 * WAIT and PARK: the request is elsewhere; the client may send (pipelined
 * bytes wait in rbuf, bounded), half-close or leave.
 */
static void step_waiting(struct conn *c)
{
	conn_fill(c, HTTP_MAX_HEAD + 2);
	if (c->broken) {
		conn_gone(c);
		return;
	}
	if (c->peer_eof && c->state == CS_PARK && unpark(c->req))
		queue_resume(c);	/* a FIN: answer the long-poll now, then close */
}

/* Moves c along as far as it can go now. */
static void conn_step(struct conn *c)
{
	for (;;) {
		switch (c->state) {
		case CS_TLS: {
			ERR_clear_error();
			int r = SSL_do_handshake(c->ssl);
			if (r == 1) {
				set_state(c, CS_IDLE, c->deadline);
				continue;
			}
			int e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return;
			log_debug("http: TLS handshake failed: %s",
				  ERR_reason_error_string(ERR_peek_last_error()) ?
				  ERR_reason_error_string(ERR_peek_last_error()) : "connection closed");
			conn_release(c);
			return;
		}
		case CS_IDLE:
		case CS_HEAD:
		case CS_BODY:
			if (!step_receive(c)) {
				conn_release(c);
				return;
			}
			if (c->state == CS_IDLE || c->state == CS_HEAD || c->state == CS_BODY ||
			    c->state == CS_WAIT || c->state == CS_PARK)
				return;
			continue;
		case CS_RUN:	/* cannot be seen here: a run is synchronous */
		case CS_WAIT:
		case CS_PARK:
			step_waiting(c);
			return;
		case CS_WRITE: {
			int f = conn_flush(c);
			if (f < 0) {
				c->broken = true;
				conn_release(c);
				return;
			}
			if (f == 0)
				return;
			answer_sent(c);
			continue;
		}
		case CS_LINGER: {
			char sink[4096];
			for (;;) {
				ssize_t n = conn_recv(c, sink, sizeof(sink));
				if (n == -1) {
					c->can_read = false;
					return;
				}
				if (n <= 0) {
					conn_release(c);
					return;
				}
			}
		}
		case CS_ORPHAN:
		case CS_CLOSED:
		case CS_COUNT:
			return;
		}
	}
}

/* --- resumes ----------------------------------------------------------------- */

/* Runs the queued resumes of w's requests. Returns how many ran. */
static int run_resume_queue(struct worker *w)
{
	int ran = 0;

	for (;; ran++) {
		pthread_mutex_lock(&w->rq_mu);
		struct conn *c = w->rq_head;
		if (c) {
			w->rq_head = c->rq_next;
			if (!w->rq_head)
				w->rq_tail = NULL;
			c->rq_queued = false;
		}
		pthread_mutex_unlock(&w->rq_mu);
		if (!c)
			return ran;
		switch (c->state) {
		case CS_ORPHAN:
			/* its client left: nothing to answer */
			conn_release(c);
			continue;
		case CS_WAIT:
		case CS_PARK:
			c->req->resumed = true;
			request_run(c);
			conn_step(c);
			continue;
		default:
			log_error("http: a resume for a connection in %s", cstate_names[c->state]);
			abort();	/* a resume without a suspension: a bug */
		}
	}
}

/* --- accepting ----------------------------------------------------------------- */

/* A canned refusal on a plain connection we will not serve, then close. */
static void refuse_fd(struct httpd *h, int fd, int status, const char *api_status,
		      const char *message)
{
	if (!h->tls) {
		char buf[512];
		char body[256];
		int blen = snprintf(body, sizeof(body),
				    "{\"error\":{\"code\":%d,\"message\":\"%s\",\"status\":\"%s\","
				    "\"details\":[]}}", status, message, api_status);
		int n = snprintf(buf, sizeof(buf),
				 "HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=UTF-8\r\n"
				 "Content-Length: %d\r\nConnection: close\r\n\r\n%s", status,
				 reason_phrase(status), blen, body);
		if (send(fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			log_debug("http: refusal not sent: %s", strerror(errno));
	}
	close(fd);
}

/*
 * At the connection limit: the victim among the oldest slow or idle
 * connections of w whose address holds at least floor connections, the one
 * whose address holds the most (the oldest of those). NULL when w has none.
 */
static struct conn *reclaim_victim(struct worker *w, int floor)
{
	struct conn *best = NULL;
	int best_count = floor - 1, scanned = 0;

	pthread_mutex_lock(&w->h->clients_mu);
	for (struct conn *c = w->rhead; c && scanned < RECLAIM_SCAN; c = c->rnext, scanned++) {
		int n = c->client ? c->client->count : 0;
		if (n > best_count) {
			best = c;
			best_count = n;
		}
	}
	pthread_mutex_unlock(&w->h->clients_mu);
	return best;
}

/* Closes what the other workers asked of this one (its eventfd woke it). */
static void reclaim_owed(struct worker *w)
{
	int owed = atomic_exchange(&w->reclaim_owed, 0);

	for (; owed > 0; owed--) {
		struct conn *victim = reclaim_victim(w, atomic_load(&w->reclaim_floor));
		if (victim) {
			log_debug("http: at max_connections: closing a connection in %s (asked)",
				  cstate_names[victim->state]);
			conn_release(victim);
		}
		atomic_fetch_sub(&w->h->reclaims_pending, 1);
	}
}

/*
 * Room for a new connection from an address that will hold count: one of
 * w's slow or idle connections closed, or another worker's (asked through
 * its eventfd; the new one is admitted meanwhile, a little over the cap),
 * from an address that holds more; else one from an address that holds as
 * many. So a client that fills the server with slow heads is the one that
 * loses connections, and its own new ones are refused (503).
 */
static bool reclaim_room(struct worker *w, int count, bool over_share)
{
	struct httpd *h = w->h;
	/* an address that holds more than the newcomer's first, here or on
	 * another worker; one that holds as many (its own) last */
	struct conn *victim = reclaim_victim(w, count + 1);

	if (victim) {
		log_debug("http: at max_connections: closing a connection in %s",
			  cstate_names[victim->state]);
		conn_release(victim);
		return true;
	}
	struct worker *other = NULL;
	int most = 0;
	for (int i = 0; i < h->nworkers; i++) {
		int n = atomic_load_explicit(&h->workers[i].rcount, memory_order_relaxed);
		if (&h->workers[i] != w && h->workers[i].evfd >= 0 && n > most) {
			other = &h->workers[i];
			most = n;
		}
	}
	/* Admitted now, another worker closing one for it (its eventfd): at most
	 * RECLAIM_OVERSHOOT such at once, and never that far past the cap. An
	 * address past its fair share of the cap is not given that room (it is
	 * kept for the others): it may only displace its own, or its equals'. */
	if (other && !over_share &&
	    atomic_load(&h->nconns) <= h->lim.max_connections + RECLAIM_OVERSHOOT) {
		if (atomic_fetch_add(&h->reclaims_pending, 1) < RECLAIM_OVERSHOOT) {
			atomic_store(&other->reclaim_floor, count);
			atomic_fetch_add(&other->reclaim_owed, 1);
			uint64_t one = 1;
			if (write(other->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
				log_error("http: cannot wake a worker: %s", strerror(errno));
			return true;
		}
		atomic_fetch_sub(&h->reclaims_pending, 1);
	}
	victim = reclaim_victim(w, count);
	if (!victim)
		return false;
	conn_release(victim);
	return true;
}

static struct conn *conn_new(struct worker *w, int fd, struct client *cl)
{
	struct conn *c = xcalloc(1, sizeof(*c));
	c->w = w;
	c->fd = fd;
	c->file_fd = -1;
	c->client = cl;
	c->state = CS_IDLE;
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	return c;
}

/* Counts a new connection against the limits; false (and refused) when it may not open. */
static bool admit_slot(struct worker *w, int fd, const struct sockaddr_storage *sa,
		       struct client **cl)
{
	struct httpd *h = w->h;

	*cl = client_acquire(h, sa);
	if (!*cl) {
		log_warn("http: a client has %d connections open "
			 "(max_connections_per_client): refusing more",
			 h->lim.max_connections_per_client);
		if (fd >= 0)
			refuse_fd(h, fd, 429, "RESOURCE_EXHAUSTED",
				  "Too many connections from this client address.");
		return false;
	}
	if (atomic_fetch_add(&h->nconns, 1) >= h->lim.max_connections) {
		pthread_mutex_lock(&h->clients_mu);
		int count = (*cl)->count;
		int share = h->lim.max_connections / (h->nclients > 0 ? h->nclients : 1);
		pthread_mutex_unlock(&h->clients_mu);
		if (!reclaim_room(w, count, count > share)) {
			atomic_fetch_sub(&h->nconns, 1);
			client_release(h, *cl);
			*cl = NULL;
			log_warn("http: %d connections open (max_connections): refusing more",
				 h->lim.max_connections);
			if (fd >= 0)
				refuse_fd(h, fd, 503, "UNAVAILABLE",
					  "The server has too many connections open. Retry later.");
			return false;
		}
	}
	return true;
}

static void admit(struct worker *w, int fd, const struct sockaddr_storage *sa)
{
	struct httpd *h = w->h;
	struct client *cl;

	if (!admit_slot(w, fd, sa, &cl))
		return;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct conn *c = conn_new(w, fd, cl);
	int64_t deadline = now_us(h) + secs(h->lim.header_timeout_s);
	if (h->tls) {
		c->ssl = SSL_new(h->tls);
		if (!c->ssl || !SSL_set_fd(c->ssl, fd)) {
			log_error("http: cannot set up TLS for a connection");
			conn_release(c);
			return;
		}
		SSL_set_accept_state(c->ssl);
		c->state = CS_TLS;
		set_state(c, CS_TLS, deadline);
	} else {
		set_state(c, CS_IDLE, deadline);
	}
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
				  .data.ptr = c };
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		log_error("http: epoll_ctl: %s", strerror(errno));
		conn_release(c);
	}
}

static void accept_ready(struct worker *w)
{
	struct httpd *h = w->h;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage sa;
		socklen_t slen = sizeof(sa);
		int fd = accept4(h->listen_fd, (struct sockaddr *)&sa, &slen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE) && w->reserve_fd >= 0) {
				/* Out of descriptors: take the connection off the queue with
				 * the one we kept, so that it is not retried in a loop. */
				log_warn("http: out of file descriptors: refusing connections");
				close(w->reserve_fd);
				fd = accept4(h->listen_fd, NULL, NULL, SOCK_CLOEXEC);
				if (fd >= 0)
					refuse_fd(h, fd, 503, "UNAVAILABLE",
						  "The server is out of resources. Retry later.");
				w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			}
			return;
		}
		admit(w, fd, &sa);
	}
}

/* --- the workers ---------------------------------------------------------------- */

/* Ends what is past its deadline. */
static void sweep(struct worker *w)
{
	int64_t now = now_us(w->h);
	struct conn *next;

	for (struct conn *c = w->conns; c; c = next) {
		next = c->next;
		if (!c->deadline || c->deadline > now)
			continue;
		switch (c->state) {
		case CS_HEAD:
		case CS_BODY:
			log_debug("http: a request %s not complete in time: closing the connection",
				  c->state == CS_HEAD ? "head was" : "body was");
			conn_refuse(c, 408, c->state == CS_HEAD ?
				    "The request head did not arrive in time." :
				    "The request body did not arrive in time.");
			conn_step(c);
			break;
		case CS_WRITE:
			c->broken = true;
			conn_release(c);
			break;
		case CS_TLS:
		case CS_IDLE:
		case CS_LINGER:
			conn_release(c);
			break;
		default:
			break;	/* RUN, WAIT, PARK, ORPHAN have no deadline */
		}
	}
}

/* One epoll event for c. */
static void conn_event(struct conn *c, uint32_t e)
{
	/* Ended earlier in this batch: its memory waits for reap, its events are moot. */
	if (c->state == CS_CLOSED || c->state == CS_ORPHAN)
		return;
	if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->can_read = true;
	if (e & (EPOLLRDHUP | EPOLLHUP))
		c->rdhup = true;
	if (e & EPOLLERR)
		c->broken = true;
	if (c->broken && c->state != CS_WRITE && c->state != CS_LINGER) {
		conn_gone(c);
		return;
	}
	conn_step(c);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev[EVENTS_MAX];
	int64_t next_sweep = mono_usec() + SWEEP_USEC;

	pthread_setname_np(pthread_self(), "http-worker");	/* top -H, gdb */
	while (!atomic_load(&w->stop)) {
		int64_t wait = (next_sweep - mono_usec()) / 1000;
		int n = epoll_wait(w->epfd, ev, EVENTS_MAX, wait < 0 ? 0 : (int)wait + 1);
		for (int i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;
			if (p == &w->listen_tag) {
				accept_ready(w);
			} else if (p == &w->ev_tag) {
				uint64_t v;
				if (read(w->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
					log_error("http: eventfd: %s", strerror(errno));
				reclaim_owed(w);
				run_resume_queue(w);
			} else {
				conn_event(p, ev[i].events);
			}
		}
		if (mono_usec() >= next_sweep) {
			sweep(w);
			next_sweep = mono_usec() + SWEEP_USEC;
		}
		reap(w);
	}
	return NULL;
}

/* --- TLS ------------------------------------------------------------------------ */

static SSL_CTX *tls_context(const char *cert_pem, const char *key_pem, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	BIO *b = NULL;
	X509 *x = NULL;
	EVP_PKEY *k = NULL;

	if (!ctx)
		goto fail;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
			 SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	b = BIO_new_mem_buf(cert_pem, -1);
	if (!b || !(x = PEM_read_bio_X509_AUX(b, NULL, NULL, NULL)) ||
	    SSL_CTX_use_certificate(ctx, x) != 1)
		goto fail;
	/* the rest of the file: the chain */
	X509 *ca;
	while ((ca = PEM_read_bio_X509(b, NULL, NULL, NULL)))
		if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
			X509_free(ca);
			goto fail;
		}
	ERR_clear_error();	/* the end of the file */
	BIO_free(b);
	b = BIO_new_mem_buf(key_pem, -1);
	if (!b || !(k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)) ||
	    SSL_CTX_use_PrivateKey(ctx, k) != 1 || SSL_CTX_check_private_key(ctx) != 1)
		goto fail;
	BIO_free(b);
	X509_free(x);
	EVP_PKEY_free(k);
	return ctx;
fail:
	snprintf(err, errlen, "TLS: %s",
		 ERR_reason_error_string(ERR_peek_last_error()) ?
		 ERR_reason_error_string(ERR_peek_last_error()) : "cannot set up");
	ERR_clear_error();
	BIO_free(b);
	X509_free(x);
	EVP_PKEY_free(k);
	SSL_CTX_free(ctx);
	return NULL;
}

/* --- start and stop -------------------------------------------------------------- */

static int open_listener(const char *listen_addr, int *port, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char host[256];
	const char *colon = strrchr(listen_addr, ':');

	if (!colon || colon == listen_addr || (size_t)(colon - listen_addr) >= sizeof(host)) {
		snprintf(err, errlen, "listen address '%s' is not host:port", listen_addr);
		return -1;
	}
	if (listen_addr[0] == '[' && colon[-1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)(colon - listen_addr - 2), listen_addr + 1);
	else
		snprintf(host, sizeof(host), "%.*s", (int)(colon - listen_addr), listen_addr);
	int gai = getaddrinfo(host, colon + 1, &hints, &ai);
	if (gai) {
		snprintf(err, errlen, "listen address '%s': %s", listen_addr, gai_strerror(gai));
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1024)) {
		snprintf(err, errlen, "cannot listen on %s: %s", listen_addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage sa;
	socklen_t slen = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &slen);
	*port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port :
		      ((struct sockaddr_in *)&sa)->sin_port);
	return fd;
}

/* Enough descriptors for max_connections (and the rest of the process). */
static void raise_fd_limit(int max_connections)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)max_connections + 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur < want)
		log_warn("http: the file descriptor limit (%llu) is below max_connections + 1024: "
			 "raise it (ulimit -n, LimitNOFILE=)", (unsigned long long)rl.rlim_cur);
}

static struct httpd *httpd_new(const struct httpd_config *cfg)
{
	struct httpd *h = xcalloc(1, sizeof(*h));
	struct httpd_limits def = HTTPD_LIMITS_DEFAULT;

	h->lim = cfg->limits;
	if (!h->lim.header_timeout_s)
		h->lim.header_timeout_s = def.header_timeout_s;
	if (!h->lim.idle_timeout_s)
		h->lim.idle_timeout_s = def.idle_timeout_s;
	if (!h->lim.io_timeout_s)
		h->lim.io_timeout_s = def.io_timeout_s;
	if (!h->lim.max_connections)
		h->lim.max_connections = def.max_connections;
	if (!h->lim.max_body)
		h->lim.max_body = def.max_body;
	h->ops = cfg->ops;
	h->arg = cfg->arg;
	h->app_size = cfg->app_size;
	h->listen_fd = -1;
	pthread_mutex_init(&h->clients_mu, NULL);
	pthread_mutex_init(&h->park_mu, NULL);
	return h;
}

static void free_server(struct httpd *h)
{
	for (unsigned b = 0; b < CLIENT_BUCKETS; b++)
		while (h->clients[b]) {
			struct client *cl = h->clients[b];
			h->clients[b] = cl->next;
			free(cl);
		}
	pthread_mutex_destroy(&h->clients_mu);
	pthread_mutex_destroy(&h->park_mu);
	free(h->park_heap);
	free(h->park_keys);
	SSL_CTX_free(h->tls);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	free(h->workers);
	free(h);
}

struct httpd *httpd_start(const struct httpd_config *cfg, char *err, size_t errlen)
{
	struct httpd *h = httpd_new(cfg);

	if (cfg->tls_cert_pem && !(h->tls = tls_context(cfg->tls_cert_pem, cfg->tls_key_pem,
							  err, errlen))) {
		free_server(h);
		return NULL;
	}
	h->listen_fd = open_listener(cfg->listen, &h->port, err, errlen);
	if (h->listen_fd < 0) {
		free_server(h);
		return NULL;
	}
	raise_fd_limit(h->lim.max_connections);
	h->nworkers = cfg->threads < 1 ? 1 : cfg->threads;
	h->workers = xcalloc((size_t)h->nworkers, sizeof(*h->workers));
	for (int i = 0; i < h->nworkers; i++) {
		struct worker *w = &h->workers[i];
		w->h = h;
		pthread_mutex_init(&w->rq_mu, NULL);
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		struct epoll_event lev = { .events = EPOLLIN | EPOLLEXCLUSIVE,
					   .data.ptr = &w->listen_tag };
		struct epoll_event eev = { .events = EPOLLIN, .data.ptr = &w->ev_tag };
		if (w->epfd < 0 || w->evfd < 0 ||
		    epoll_ctl(w->epfd, EPOLL_CTL_ADD, h->listen_fd, &lev) ||
		    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->evfd, &eev) ||
		    pthread_create(&w->thread, NULL, worker_main, w)) {
			log_error("http: cannot start worker %d: %s", i, strerror(errno));
			abort();
		}
	}
	if (pthread_create(&h->timer, NULL, park_timer, h))
		abort();
	h->timer_started = true;
	return h;
}

int httpd_port(const struct httpd *h)
{
	return h->port;
}

void httpd_quiesce(struct httpd *h)
{
	if (!h || h->quiesced)
		return;
	h->quiesced = true;
	atomic_store(&h->stopping, true);
	if (h->timer_started)
		pthread_join(h->timer, NULL);
	h->timer_started = false;
	/* Stop accepting (the socket stays bound until httpd_stop) and answer
	 * the parked long-polls; no new ones park. */
	for (int i = 0; i < h->nworkers && !h->sim; i++)
		epoll_ctl(h->workers[i].epfd, EPOLL_CTL_DEL, h->listen_fd, NULL);
	httpd_wake(h, NULL);
}

/* Ends every connection of w at the end of the server's life (no resume may come). */
static void worker_end_all(struct worker *w)
{
	while (w->conns) {
		struct conn *c = w->conns;
		pthread_mutex_lock(&w->rq_mu);
		c->rq_queued = false;
		pthread_mutex_unlock(&w->rq_mu);
		if (c->req)
			(void)unpark(c->req);
		if (c->state == CS_RUN || c->state == CS_WAIT || c->state == CS_PARK ||
		    c->state == CS_ORPHAN)
			c->state = CS_LINGER;	/* the end of everything: no edge to check */
		conn_release(c);
	}
	w->rq_head = w->rq_tail = NULL;
	reap(w);
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	httpd_quiesce(h);
	/* Let the requests in flight finish (they are answered as usual), and
	 * wait until each resumed request has run. */
	int left = 0, suspended = 0;
	for (int i = 0; i < DRAIN_SECONDS * 100; i++) {
		left = atomic_load(&h->in_flight);
		suspended = atomic_load(&h->suspended);
		if (!left && !suspended)
			break;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (left)
		log_warn("stopping with %d request(s) still in flight after %d s", left,
			 DRAIN_SECONDS);
	for (int i = 0; i < h->nworkers; i++) {
		struct worker *w = &h->workers[i];
		uint64_t one = 1;
		atomic_store(&w->stop, true);
		if (write(w->evfd, &one, sizeof(one)) < 0)
			log_error("http: cannot stop a worker: %s", strerror(errno));
		pthread_join(w->thread, NULL);
	}
	if (atomic_load(&h->suspended)) {
		/* Their resumes may still come, from threads that outlive us:
		 * nothing they touch may be freed. The process is ending. */
		log_error("http: %d request(s) still awaiting a reply at exit: left as they are",
			  atomic_load(&h->suspended));
		return;
	}
	for (int i = 0; i < h->nworkers; i++) {
		struct worker *w = &h->workers[i];
		worker_end_all(w);
		close(w->epfd);
		close(w->evfd);
		if (w->reserve_fd >= 0)
			close(w->reserve_fd);
		pthread_mutex_destroy(&w->rq_mu);
	}
	free_server(h);
}

/* --- the request's view --------------------------------------------------------- */

void *httpd_req_app(struct httpd_req *r)
{
	return r->app;
}

const char *httpd_req_method(const struct httpd_req *r)
{
	return r->has_head ? r->head.method : "-";
}

const char *httpd_req_target(const struct httpd_req *r)
{
	return r->has_head ? r->head.target : NULL;
}

int httpd_req_minor(const struct httpd_req *r)
{
	return r->has_head ? r->head.minor : 1;
}

const char *httpd_req_header(const struct httpd_req *r, const char *name)
{
	return r->has_head ? http_head_field(&r->head, name) : NULL;
}

const char *httpd_req_body(const struct httpd_req *r, size_t *len)
{
	*len = r->body.len;
	return r->body.len ? r->body.buf : "";
}

bool httpd_req_late(const struct httpd_req *r)
{
	return r->late;
}

bool httpd_req_resumed(const struct httpd_req *r)
{
	return r->resumed;
}

const struct httpd_limits *httpd_req_limits(const struct httpd_req *r)
{
	return &r->h->lim;
}

/* --- without sockets (fuzzing, tests) --------------------------------------------- */

struct httpd *httpd_sim_new(const struct httpd_config *cfg)
{
	struct httpd *h = httpd_new(cfg);
	struct worker *w = xcalloc(1, sizeof(*w));

	h->sim = true;
	h->sim_now = mono_usec();
	h->nworkers = 1;
	h->workers = w;
	w->h = h;
	w->epfd = w->evfd = w->reserve_fd = -1;
	pthread_mutex_init(&w->rq_mu, NULL);
	return h;
}

static struct sim_end *sim_get(struct httpd *h, int id)
{
	return id >= 0 && id < h->nsims ? h->sims[id] : NULL;
}

int httpd_sim_open(struct httpd *h, unsigned addr)
{
	struct worker *w = &h->workers[0];
	struct sockaddr_storage sa = { 0 };
	struct sockaddr_in *in = (struct sockaddr_in *)&sa;
	struct sim_end *s = xcalloc(1, sizeof(*s));
	struct client *cl;

	s->step = SIZE_MAX;
	h->sims = xrealloc(h->sims, (size_t)(h->nsims + 1) * sizeof(*h->sims));
	h->sims[h->nsims] = s;
	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(0x7f000000u | (addr & 0xffffff));
	if (!admit_slot(w, -1, &sa, &cl)) {
		s->closed = true;	/* refused */
		return h->nsims++;
	}
	struct conn *c = conn_new(w, -1, cl);
	s->c = c;
	c->sim = s;
	set_state(c, CS_IDLE, now_us(h) + secs(h->lim.header_timeout_s));
	return h->nsims++;
}

void httpd_sim_send(struct httpd *h, int id, const void *data, size_t len)
{
	struct sim_end *s = sim_get(h, id);
	if (s && !s->fin && !s->reset)
		sb_add(&s->in, data, len);
}

void httpd_sim_fin(struct httpd *h, int id)
{
	struct sim_end *s = sim_get(h, id);
	if (s)
		s->fin = true;
}

void httpd_sim_reset(struct httpd *h, int id)
{
	struct sim_end *s = sim_get(h, id);
	if (s)
		s->reset = true;
}

void httpd_sim_block(struct httpd *h, int id, bool blocked)
{
	struct sim_end *s = sim_get(h, id);
	if (s)
		s->blocked = blocked;
}

void httpd_sim_event(struct httpd *h, int id)
{
	struct sim_end *s = sim_get(h, id);
	if (!s || !s->c)
		return;
	/* as epoll reports them: a reset is an error, a FIN a hang-up of reading */
	conn_event(s->c, EPOLLIN | EPOLLOUT | (s->fin ? EPOLLRDHUP : 0) | (s->reset ? EPOLLERR : 0));
}

void httpd_sim_batch(struct httpd *h, const int *items, int n)
{
	struct conn *snap[64];
	struct sim_end *ends[64];

	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++) {
		ends[i] = items[i] >= 0 ? sim_get(h, items[i]) : NULL;
		snap[i] = ends[i] ? ends[i]->c : NULL;
	}
	for (int i = 0; i < n; i++) {
		if (items[i] == -1) {
			run_resume_queue(&h->workers[0]);
		} else if (items[i] <= -2) {
			(void)httpd_sim_open(h, (unsigned)(-2 - items[i]));
		} else if (snap[i]) {
			/* the pointer as epoll gave it, whatever happened to it since */
			conn_event(snap[i], EPOLLIN | EPOLLOUT | (ends[i]->fin ? EPOLLRDHUP : 0) |
				   (ends[i]->reset ? EPOLLERR : 0));
		}
	}
	reap(&h->workers[0]);
}

void httpd_sim_resumes(struct httpd *h)
{
	run_resume_queue(&h->workers[0]);
}

void httpd_sim_advance(struct httpd *h, int64_t usec)
{
	h->sim_now += usec;
	if (!atomic_load(&h->stopping))
		wake_expired(h, h->sim_now);
	sweep(&h->workers[0]);
}

int64_t httpd_sim_now(const struct httpd *h)
{
	return h->sim_now;
}

struct strbuf *httpd_sim_output(struct httpd *h, int id)
{
	struct sim_end *s = sim_get(h, id);
	return s ? &s->out : NULL;
}

bool httpd_sim_open_p(struct httpd *h, int id)
{
	struct sim_end *s = sim_get(h, id);
	return s && !s->closed && s->c && s->c->state != CS_CLOSED && s->c->state != CS_ORPHAN;
}

void httpd_sim_reap(struct httpd *h)
{
	reap(&h->workers[0]);
}

void httpd_sim_free(struct httpd *h)
{
	struct worker *w = &h->workers[0];

	atomic_store(&h->stopping, true);
	worker_end_all(w);
	for (int i = 0; i < h->nsims; i++) {
		sb_release(&h->sims[i]->in);
		sb_release(&h->sims[i]->out);
		free(h->sims[i]);
	}
	free(h->sims);
	pthread_mutex_destroy(&w->rq_mu);
	free_server(h);
}

void httpd_serve_memory(const struct httpd_config *cfg, const void *data, size_t len,
			size_t step, struct strbuf *out)
{
	struct httpd *h = httpd_sim_new(cfg);
	int id = httpd_sim_open(h, 1);
	struct sim_end *s = sim_get(h, id);

	if (!s)
		abort();
	sb_add(&s->in, data, len);
	s->fin = true;
	s->step = step ? step : len + 1;
	while (httpd_sim_open_p(h, id)) {
		httpd_sim_event(h, id);
		httpd_sim_reap(h);
		if (!httpd_sim_open_p(h, id))
			break;
		/* Long-polls are answered at once, reads come back at once. */
		httpd_wake(h, NULL);
		if (!run_resume_queue(&h->workers[0]) &&
		    (s->c->state == CS_WAIT || s->c->state == CS_PARK))
			abort();	/* suspended with no resume to come: a bug */
		httpd_sim_reap(h);
	}
	sb_add(out, s->out.buf ? s->out.buf : "", s->out.len);
	httpd_sim_free(h);
}

void httpd_req_set_body_limit(struct httpd_req *r, uint64_t max)
{
	r->body_limit = max;
}

void httpd_req_set_body_sink(struct httpd_req *r, httpd_body_sink sink, void *ctx)
{
	r->sink = sink;
	r->sink_ctx = ctx;
}
