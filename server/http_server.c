/*
 * http_server.c - the HTTP/1.1 daemon: listening socket, worker threads,
 * connections, TLS, timeouts, connection limits, and the suspension of
 * requests (long-polls parked by key, reads awaiting the store pipe).
 *
 * Each worker thread runs an epoll loop over its own connections (edge
 * triggered, registered once for reading and writing) and shares the
 * listening socket with the others (EPOLLEXCLUSIVE: an idle worker takes
 * the next connection). A connection stays on the worker that accepted
 * it, and so does every run of its requests' handlers: a handler that
 * suspends runs again on that worker after http_resume() or a wake, which
 * reach it through the worker's resume queue and eventfd.
 *
 * A connection is in one phase at a time:
 *   TLS      the TLS handshake (within the header deadline)
 *   IDLE     between requests: a new connection gets the header deadline,
 *            a kept-alive one the idle timeout
 *   HEAD     bytes of a request head arrived: complete it within the
 *            header deadline (slowloris), within HTTP_MAX_HEAD bytes
 *   BODY     the body, by Content-Length or chunked, each read making
 *            progress within the I/O timeout
 *   HANDLER  the handler runs, or its request is suspended or parked
 *   WRITE    the reply is being sent, with progress within the I/O timeout
 *   LINGER   after a reply that closes the connection: our side is shut
 *            and what the client still sends is read and dropped for a
 *            moment, so that it reads the reply instead of a reset
 * A malformed request gets its error (Google's envelope) and the
 * connection closes: nothing after a framing error is read as a request.
 *
 * Limits: at most max_connections in all and max_connections_per_client
 * from one address. At the total, the worker closes its longest-idle
 * kept-alive connection to admit the new one (idle connections cost the
 * client nothing to reopen); with none idle the new one gets 503.
 */
#include "http.h"

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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "http_internal.h"
#include "http_parse.h"
#include "log.h"
#include "api_metrics.h"

/* How long a graceful stop waits for the requests in flight. */
#define DRAIN_SECONDS 10
/* How often each worker looks for connections past their deadline. */
#define SWEEP_USEC (250 * 1000)
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
#define EVENTS_MAX 128

enum phase { PH_TLS, PH_IDLE, PH_HEAD, PH_BODY, PH_HANDLER, PH_WRITE, PH_LINGER };

struct worker;
struct client;

struct http_conn {
	struct worker *w;
	int fd;
	SSL *ssl;
	enum phase phase;
	int64_t deadline;	/* mono_usec(); 0: none (HANDLER) */
	struct client *client;
	bool fresh;		/* no request yet on this connection */
	bool can_read;		/* edge seen and not yet read to EAGAIN */
	bool peer_eof;		/* the client sent FIN (or the socket failed) */
	bool broken;		/* a read or write failed: close once the request allows */

	/* bytes received and not yet taken: rbuf[rstart, rend) */
	char *rbuf;
	size_t rstart, rend, rcap;
	struct http_head_scan scan;

	/* the request being received or handled */
	struct request *req;
	uint64_t body_left;	/* Content-Length bytes still to come */
	int64_t body_deadline;	/* the whole body by then (BODY_MIN_RATE) */
	bool rdhup;		/* the client's FIN was signalled: read to the end */
	struct http_chunked chunk;
	bool chunked;

	/* the reply: interim 100 Continue, then head and body */
	struct strbuf out;	/* head (and, over TLS, the body too) */
	char *body;
	size_t body_len;
	size_t out_off;		/* bytes of out, then body, sent */
	bool interim_pending;	/* 100 Continue queued in out, nothing else */
	bool close_after;

	struct http_conn *prev, *next;	/* the worker's connections */
	struct http_conn *iprev, *inext;	/* the worker's idle ones, oldest first */
	bool idle_listed;
	struct http_conn *rq_next;	/* the worker's resume queue */
	bool rq_queued;		/* under the worker's rq_mu */
	bool parked_gone;	/* closed while parked: finish without the handler */

	/* http_serve_memory(): bytes from memory instead of a socket */
	const char *mem_in;
	size_t mem_len, mem_off, mem_step;
	struct strbuf *mem_out;
	bool mem_closed;
};

/* A request and the head it was parsed from, allocated together. */
struct exchange {
	struct request req;
	struct http_head head;
	char *headbuf;
};

struct worker {
	struct http_server *h;
	pthread_t thread;
	int epfd;
	int evfd;
	atomic_bool stop;
	char listen_tag, ev_tag;	/* their addresses tag epoll events */
	pthread_mutex_t rq_mu;
	struct http_conn *rq_head, *rq_tail;
	struct http_conn *conns;	/* every connection of this worker */
	struct http_conn *idle_head, *idle_tail;
	int reserve_fd;		/* given up to accept (and drop) one over EMFILE */
	char date[64];
	time_t date_at;
};

/* Connections per client address, for max_connections_per_client. */
struct client {
	unsigned char addr[16];
	int count;
	struct client *next;
};
#define CLIENT_BUCKETS 1024

struct http_server {
	struct server *srv;
	struct http_limits lim;
	int listen_fd;
	int port;
	SSL_CTX *tls;
	struct worker *workers;
	int nworkers;
	atomic_int nconns;
	pthread_mutex_t clients_mu;
	struct client *clients[CLIENT_BUCKETS];
	/* Parked (long-poll) requests, woken by key or deadline. */
	pthread_mutex_t park_mu;
	struct request *parked;
	pthread_t timer;
	bool timer_started;
	atomic_bool stopping;
	atomic_int suspended;	/* parked or awaiting, and not yet run again */
	atomic_int in_flight;	/* requests begun and not yet finished */
	bool quiesced;
};

static void conn_step(struct http_conn *c);
static void conn_close(struct http_conn *c);
static void request_run(struct http_conn *c);

/* --- time and small helpers ------------------------------------------------ */

static int64_t secs(int s)
{
	return (int64_t)s * 1000000;
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
static struct client *client_acquire(struct http_server *h, const struct sockaddr_storage *sa)
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
	}
	if (h->lim.max_connections_per_client && cl->count >= h->lim.max_connections_per_client)
		cl = NULL;
	else
		cl->count++;
	pthread_mutex_unlock(&h->clients_mu);
	return cl;
}

static void client_release(struct http_server *h, struct client *cl)
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
	}
	pthread_mutex_unlock(&h->clients_mu);
}

/* --- connection lists ------------------------------------------------------- */

static void idle_unlist(struct http_conn *c)
{
	struct worker *w = c->w;
	if (!c->idle_listed)
		return;
	if (c->iprev)
		c->iprev->inext = c->inext;
	else
		w->idle_head = c->inext;
	if (c->inext)
		c->inext->iprev = c->iprev;
	else
		w->idle_tail = c->iprev;
	c->iprev = c->inext = NULL;
	c->idle_listed = false;
}

static void idle_list(struct http_conn *c)
{
	struct worker *w = c->w;
	idle_unlist(c);
	c->iprev = w->idle_tail;
	if (w->idle_tail)
		w->idle_tail->inext = c;
	else
		w->idle_head = c;
	w->idle_tail = c;
	c->idle_listed = true;
}

static void set_phase(struct http_conn *c, enum phase p, int64_t deadline)
{
	c->phase = p;
	c->deadline = deadline;
	if (p == PH_IDLE && c->rstart == c->rend)
		idle_list(c);
	else
		idle_unlist(c);
}

/* --- socket I/O, plain or TLS ---------------------------------------------- */

/* >0 bytes read; 0 end of stream; -1 nothing now (EAGAIN); -2 failed. */
static ssize_t conn_recv(struct http_conn *c, char *buf, size_t len)
{
	if (c->mem_out) {
		size_t n = c->mem_len - c->mem_off;
		if (n > c->mem_step)
			n = c->mem_step;
		if (n > len)
			n = len;
		memcpy(buf, c->mem_in + c->mem_off, n);
		c->mem_off += n;
		return (ssize_t)n;	/* 0 at the end: the client's FIN */
	}
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
static ssize_t conn_send(struct http_conn *c, const struct iovec *iov, int n)
{
	if (c->mem_out) {
		size_t sent = 0;
		for (int i = 0; i < n; i++) {
			sb_add(c->mem_out, iov[i].iov_base, iov[i].iov_len);
			sent += iov[i].iov_len;
		}
		return (ssize_t)sent;
	}
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

/* Room for at least want more bytes in rbuf, compacting or growing it up to max. */
static bool rbuf_room(struct http_conn *c, size_t want, size_t max)
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
 * Reads what the socket has into rbuf (up to max buffered). Returns false
 * when the connection failed (the caller closes it).
 */
static bool conn_fill(struct http_conn *c, size_t max)
{
	while (c->can_read && !c->peer_eof) {
		if (!rbuf_room(c, RBUF_MIN, max))
			return true;	/* full: read again once some is taken */
		size_t room = c->rcap - c->rend;
		ssize_t n = conn_recv(c, c->rbuf + c->rend, room);
		if (n == -1) {
			c->can_read = false;
			return true;
		}
		if (n == -2)
			return false;
		if (n == 0) {
			c->peer_eof = true;
			return true;
		}
		c->rend += (size_t)n;
		/* A short read of a plain socket took all it had: the next byte
		 * brings a new edge. (TLS may hold more records: read on.) */
		if (!c->ssl && (size_t)n < room && !c->rdhup)
			c->can_read = false;
	}
	return true;
}

/* --- replies ---------------------------------------------------------------- */

void http_conn_respond(struct request *req, int status, const char *content_type, char *body,
		       size_t len, const char *extra)
{
	struct http_conn *c = req->conn;
	bool head_only = !strcmp(req->method, "HEAD");

	if (!c->req || c->req != req) {	/* cannot happen: one request per connection */
		free(body);
		return;
	}
	if (!req->head || !req->head->keep_alive || c->peer_eof ||
	    atomic_load_explicit(&c->w->h->stopping, memory_order_relaxed))
		req->close = true;
	c->close_after = req->close;
	sb_addf(&c->out, "HTTP/1.1 %d %s\r\nDate: %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		"X-Request-Id: %s\r\n%s%s\r\n", status, reason_phrase(status), http_date(c->w),
		content_type, len, req->request_id, extra ? extra : "",
		req->close ? "Connection: close\r\n" :
		req->head->minor == 0 ? "Connection: keep-alive\r\n" : "");
	if (head_only) {
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
	c->body = body;
	c->body_len = len;
	c->interim_pending = false;
}

/*
 * Sends what is queued. Returns 1 when all of it went, 0 when the socket
 * is full (an EPOLLOUT edge resumes), -1 when the connection failed.
 */
static int conn_flush(struct http_conn *c)
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
		c->deadline = mono_usec() + secs(c->w->h->lim.io_timeout_s);
	}
	return 1;
}

static void out_reset(struct http_conn *c)
{
	sb_reset(&c->out);
	free(c->body);
	c->body = NULL;
	c->body_len = 0;
	c->out_off = 0;
}

/* --- requests ---------------------------------------------------------------- */

static struct request *request_new(struct http_conn *c)
{
	struct exchange *x = xcalloc(1, sizeof(*x));
	struct request *req = &x->req;

	req->srv = c->w->h->srv;
	req->conn = c;
	req->method = "-";
	req->path = xstrdup("-");
	req->start_us = mono_usec();
	c->req = req;
	atomic_fetch_add(&c->w->h->in_flight, 1);
	/* Counted before the look at stopping, both sequentially consistent
	 * with http_stop()'s: the drain either waits for this request or this
	 * request sees that the server is stopping (then it is refused). */
	req->late = atomic_load(&c->w->h->stopping);
	return req;
}

static void uncount_suspended(struct request *req)
{
	if (!req->suspend_counted)
		return;
	atomic_fetch_sub_explicit(&req->conn->w->h->suspended, 1, memory_order_relaxed);
	req->suspend_counted = false;
}

/* The request is over (answered, or its client gone): count, log, free. */
static void request_finish(struct http_conn *c)
{
	struct request *req = c->req;
	struct exchange *x = (struct exchange *)req;

	if (!req)
		return;
	int64_t duration = mono_usec() - req->start_us;
	const char *route = req->route ? req->route->operation_id : "unmatched";
	log_set_request_id(req->request_id[0] ? req->request_id : NULL);
	if (!req->replied || c->broken)
		log_debug("%s %s (%s) ended without a complete reply", req->method, req->path,
			  route);
	log_debug("access: %s %s route=%s status=%d duration=%.3fms", req->method, req->path,
		  route, req->status, (double)duration / 1000.0);
	log_set_request_id(NULL);
	/* An answer counts; a client that left before any did not get one. */
	if (req->replied)
		metrics_http_observe(req->route, req->status, duration);
	uncount_suspended(req);
	router_release(req);
	for (size_t i = 0; i < req->nquery; i++) {
		free(req->query[i].key);
		free(req->query[i].value);
	}
	free(req->query);
	free(req->path);
	free(x->headbuf);
	free(x);
	c->req = NULL;
	atomic_fetch_sub(&c->w->h->in_flight, 1);
}

/*
 * Answers a request the HTTP layer refuses (malformed, too large, too
 * slow) and closes the connection after it.
 */
static void conn_refuse(struct http_conn *c, int status, const char *message)
{
	struct request *req = c->req ? c->req : request_new(c);
	char msg[128];

	if (!req->request_id[0])
		router_set_request_id(req);
	if (status == 413 && !message) {
		snprintf(msg, sizeof(msg), "Request payload size exceeds the limit: %zu bytes.",
			 c->w->h->srv->max_body);
		message = msg;
	}
	req->close = true;
	if (req->replied)
		return;
	log_set_request_id(req->request_id);
	reply_error_full(req,
			 status == 408 ? API_DEADLINE_EXCEEDED :
			 status == 501 || status == 505 ? API_UNIMPLEMENTED : API_INVALID_ARGUMENT,
			 status, NULL, message);
	log_set_request_id(NULL);
	set_phase(c, PH_WRITE, mono_usec() + secs(c->w->h->lim.io_timeout_s));
}

/* Parses the query string into req->query (keys and values decoded). */
static int parse_query(struct request *req, char *q)
{
	size_t cap = 0;

	while (q && *q) {
		char *amp = strchr(q, '&');
		if (amp)
			*amp = '\0';
		if (*q) {
			if (req->nquery == 100)
				return -1;
			if (req->nquery == cap) {
				cap = cap ? cap * 2 : 8;
				req->query = xrealloc(req->query, cap * sizeof(*req->query));
			}
			char *eq = strchr(q, '=');
			if (eq)
				*eq++ = '\0';
			struct query_param *p = &req->query[req->nquery++];
			p->key = xstrdup(q);
			http_unescape(p->key, true);
			p->value = eq ? xstrdup(eq) : NULL;
			if (p->value)
				http_unescape(p->value, true);
		}
		q = amp ? amp + 1 : NULL;
	}
	return 0;
}

/* The head is complete in rbuf[rstart, rstart + len): begin the request. */
static void request_begin(struct http_conn *c, size_t len)
{
	struct http_server *h = c->w->h;
	struct request *req = request_new(c);
	struct exchange *x = (struct exchange *)req;
	struct http_perror perr;
	char *path, *query;

	x->headbuf = xmalloc(len + 1);
	memcpy(x->headbuf, c->rbuf + c->rstart, len);
	x->headbuf[len] = '\0';
	c->rstart += len;
	c->fresh = false;
	if (http_head_parse(x->headbuf, len, &x->head, &perr)) {
		conn_refuse(c, perr.status, perr.message);
		return;
	}
	req->head = &x->head;
	req->method = x->head.method;
	router_set_request_id(req);
	char *target = xstrdup(x->head.target);
	if (http_target_split(target, &path, &query)) {
		free(target);
		conn_refuse(c, 400, "The request target is neither a path nor an absolute URL.");
		return;
	}
	free(req->path);
	req->path = xstrdup(path);
	http_unescape(req->path, false);
	int qrc = parse_query(req, query);
	free(target);
	if (qrc) {
		conn_refuse(c, 400, "The request has too many query parameters (at most 100).");
		return;
	}
	c->chunked = x->head.body == HTTP_BODY_CHUNKED;
	c->body_left = x->head.body == HTTP_BODY_LENGTH ? x->head.content_length : 0;
	memset(&c->chunk, 0, sizeof(c->chunk));
	if (c->body_left > h->srv->max_body) {
		/* Refused before a byte of it is read (no 100 Continue). */
		conn_refuse(c, 413, NULL);
		return;
	}
	if (x->head.expect_continue && (c->chunked || c->body_left) && c->rstart == c->rend &&
	    !req->late) {
		sb_addstr(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
		c->interim_pending = true;
	}
	if (c->chunked || c->body_left) {
		c->body_deadline = mono_usec() + secs(h->lim.io_timeout_s);
		set_phase(c, PH_BODY, c->body_deadline);
	} else {
		request_run(c);
	}
}

/* n body bytes came: the deadlines move (never without bytes). */
static void body_progress(struct http_conn *c, size_t n)
{
	int64_t now = mono_usec();

	if (!n)
		return;
	c->body_deadline += (int64_t)n * 1000000 / BODY_MIN_RATE;
	c->deadline = now + secs(c->w->h->lim.io_timeout_s);
	if (c->deadline > c->body_deadline)
		c->deadline = c->body_deadline;
}

/* Takes body bytes from rbuf. Returns 1 when the body is complete. */
static int body_take(struct http_conn *c)
{
	struct request *req = c->req;
	size_t avail = c->rend - c->rstart;

	if (!c->chunked) {
		size_t n = avail < c->body_left ? avail : (size_t)c->body_left;
		sb_add(&req->body, c->rbuf + c->rstart, n);
		c->rstart += n;
		c->body_left -= n;
		body_progress(c, n);
		return c->body_left == 0;
	}
	size_t used = 0;
	struct http_perror perr;
	int rc = http_chunked_feed(&c->chunk, c->rbuf + c->rstart, avail, &used, &req->body,
				   c->w->h->srv->max_body, &perr);
	c->rstart += used;
	body_progress(c, used);
	if (rc < 0) {
		conn_refuse(c, perr.status, perr.message);
		return -1;
	}
	return rc;
}

/*
 * A Content-Length body straight into the request's buffer, without the
 * copy through rbuf. Returns false when the connection failed.
 */
static bool body_read_direct(struct http_conn *c)
{
	struct strbuf *b = &c->req->body;

	while (c->can_read && !c->peer_eof && c->body_left) {
		/* The buffer grows with what arrives, not with what is announced. */
		sb_grow(b, c->body_left < BODY_CHUNK ? (size_t)c->body_left : BODY_CHUNK);
		size_t room = b->alloc - b->len - 1;
		if (room > c->body_left)
			room = (size_t)c->body_left;
		ssize_t n = conn_recv(c, b->buf + b->len, room);
		if (n == -1) {
			c->can_read = false;
			break;
		}
		if (n == -2)
			return false;
		if (n == 0) {
			c->peer_eof = true;
			break;
		}
		b->len += (size_t)n;
		b->buf[b->len] = '\0';
		c->body_left -= (size_t)n;
		body_progress(c, (size_t)n);
	}
	return true;
}

/* The handler ran (first time or again): send its reply, or wait for its resume. */
static void after_handler(struct http_conn *c)
{
	struct request *req = c->req;

	if (req->suspended) {
		set_phase(c, PH_HANDLER, 0);
		return;
	}
	set_phase(c, PH_WRITE, mono_usec() + secs(c->w->h->lim.io_timeout_s));
}

static void request_run(struct http_conn *c)
{
	struct request *req = c->req;

	/* A 100 Continue not yet all sent stays in front of the reply. */
	c->interim_pending = false;
	if (c->out_off >= c->out.len)
		out_reset(c);
	set_phase(c, PH_HANDLER, 0);
	log_set_request_id(req->request_id);
	router_dispatch(req);
	log_set_request_id(NULL);
	after_handler(c);
}

/* --- the connection's state machine ----------------------------------------- */

/* Drops the empty lines a client may send between requests (RFC 9112 2.2). */
static void skip_blank_lines(struct http_conn *c)
{
	while (c->rend - c->rstart >= 2 && c->rbuf[c->rstart] == '\r' &&
	       c->rbuf[c->rstart + 1] == '\n')
		c->rstart += 2;
}

/* Reading a head or a body. Returns false when the connection closed. */
static bool step_receive(struct http_conn *c)
{
	struct http_server *h = c->w->h;

	for (;;) {
		if (c->phase == PH_BODY && !c->chunked && c->rstart == c->rend) {
			if (!body_read_direct(c))
				return false;
		} else if (!conn_fill(c, c->phase == PH_BODY ? 65536 : HTTP_MAX_HEAD + 2)) {
			return false;
		}
		if (c->phase == PH_IDLE) {
			skip_blank_lines(c);
			if (c->rstart == c->rend || (c->rend - c->rstart == 1 &&
						     c->rbuf[c->rstart] == '\r')) {
				if (c->peer_eof)
					return false;
				return true;
			}
			memset(&c->scan, 0, sizeof(c->scan));
			set_phase(c, PH_HEAD, mono_usec() + secs(h->lim.header_timeout_s));
		}
		if (c->phase == PH_HEAD) {
			struct http_perror perr;
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
			if (c->phase != PH_BODY)
				return true;
		}
		if (c->phase == PH_BODY) {
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

/* After a complete reply: the next request, or the connection's end. */
static void reply_sent(struct http_conn *c)
{
	struct http_server *h = c->w->h;
	bool close = c->close_after || c->broken;

	request_finish(c);
	out_reset(c);
	c->close_after = false;
	if (close) {
		/* Shut our side, then drop what still comes for a moment. */
		if (c->ssl)
			SSL_shutdown(c->ssl);
		shutdown(c->fd, SHUT_WR);
		set_phase(c, PH_LINGER, mono_usec() + LINGER_USEC);
		return;
	}
	set_phase(c, PH_IDLE, mono_usec() + secs(h->lim.idle_timeout_s));
}

static void conn_step(struct http_conn *c)
{
	for (;;) {
		switch (c->phase) {
		case PH_TLS: {
			ERR_clear_error();
			int r = SSL_do_handshake(c->ssl);
			if (r == 1) {
				set_phase(c, PH_IDLE, c->deadline);
				continue;
			}
			int e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return;
			log_debug("http: TLS handshake failed: %s",
				  ERR_reason_error_string(ERR_peek_last_error()) ?
				  ERR_reason_error_string(ERR_peek_last_error()) : "connection closed");
			conn_close(c);
			return;
		}
		case PH_IDLE:
		case PH_HEAD:
		case PH_BODY:
			if (!step_receive(c)) {
				conn_close(c);
				return;
			}
			if (c->phase == PH_IDLE || c->phase == PH_HEAD || c->phase == PH_BODY ||
			    c->phase == PH_HANDLER)
				return;
			continue;
		case PH_HANDLER:
			/* Suspended or parked: watch for the client leaving. Pipelined
			 * bytes wait in rbuf (bounded) for their turn. */
			if (!conn_fill(c, HTTP_MAX_HEAD + 2)) {
				c->broken = true;
				c->peer_eof = true;
			}
			if (c->peer_eof && c->req && c->req->parked) {
				struct http_server *h = c->w->h;
				bool unparked = false;
				pthread_mutex_lock(&h->park_mu);
				if (c->req->parked) {
					for (struct request **pp = &h->parked; *pp; pp = &(*pp)->park_next)
						if (*pp == c->req) {
							*pp = c->req->park_next;
							break;
						}
					c->req->parked = false;
					unparked = true;
				}
				pthread_mutex_unlock(&h->park_mu);
				if (unparked) {
					/* A long-poll whose client left: nothing to answer,
					 * and no resume will come (it left the park list). */
					uncount_suspended(c->req);
					c->req->suspended = false;
					conn_close(c);
					return;
				}
				c->parked_gone = true;	/* a wake got there first */
			}
			return;
		case PH_WRITE: {
			int f = conn_flush(c);
			if (f < 0) {
				c->broken = true;
				conn_close(c);
				return;
			}
			if (f == 0)
				return;
			reply_sent(c);
			continue;
		}
		case PH_LINGER: {
			char sink[4096];
			for (;;) {
				ssize_t n = conn_recv(c, sink, sizeof(sink));
				if (n == -1) {
					c->can_read = false;
					return;
				}
				if (n <= 0) {
					conn_close(c);
					return;
				}
			}
		}
		}
	}
}

/*
 * Closes the connection, finishing its request. A request awaiting its
 * resume (http_suspend) cannot be freed before it: the connection closes
 * and the request ends once resumed (its handler runs, its reply goes
 * nowhere).
 */
static void conn_close(struct http_conn *c)
{
	struct worker *w = c->w;
	struct http_server *h = w->h;

	pthread_mutex_lock(&w->rq_mu);
	bool queued = c->rq_queued;
	pthread_mutex_unlock(&w->rq_mu);
	if (queued || (c->req && c->req->suspended)) {
		c->broken = true;
		c->peer_eof = true;
		if (c->fd >= 0)
			shutdown(c->fd, SHUT_RDWR);
		set_phase(c, PH_HANDLER, 0);
		return;
	}
	request_finish(c);
	idle_unlist(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->ssl)
		SSL_free(c->ssl);
	if (c->fd >= 0)
		close(c->fd);
	client_release(h, c->client);
	atomic_fetch_sub(&h->nconns, 1);
	sb_release(&c->out);
	free(c->body);
	free(c->rbuf);
	c->body = c->rbuf = NULL;
	if (c->mem_out)
		c->mem_closed = true;	/* http_serve_memory() frees it */
	else
		free(c);
}

/* --- resumes ----------------------------------------------------------------- */

/* Queues c's request to run again on its worker. Any thread. */
static void queue_resume(struct http_conn *c)
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

/* Runs the queued resumes of w's requests. Returns how many ran. */
static int run_resume_queue(struct worker *w)
{
	int ran = 0;

	for (;; ran++) {
		pthread_mutex_lock(&w->rq_mu);
		struct http_conn *c = w->rq_head;
		if (c) {
			w->rq_head = c->rq_next;
			if (!w->rq_head)
				w->rq_tail = NULL;
			c->rq_queued = false;
		}
		pthread_mutex_unlock(&w->rq_mu);
		if (!c)
			return ran;
		struct request *req = c->req;
		if (c->mem_closed)
			continue;
		if (!req || !req->suspended) {
			/* Not for a request that waits: a close put off until this
			 * entry was taken off the queue happens now. */
			if (c->broken)
				conn_close(c);
			continue;
		}
		uncount_suspended(req);
		req->suspended = false;
		req->parked = false;
		if (c->parked_gone) {
			/* a long-poll whose client left: nothing to answer */
			conn_close(c);
			continue;
		}
		req->resumed = true;
		log_set_request_id(req->request_id);
		router_dispatch(req);
		log_set_request_id(NULL);
		if (c->broken && !req->suspended) {
			conn_close(c);
			continue;
		}
		after_handler(c);
		conn_step(c);
	}
}

static void run_resumes(struct worker *w)
{
	uint64_t v;
	if (read(w->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_error("http: eventfd: %s", strerror(errno));
	run_resume_queue(w);
}

void http_resume(struct request *req)
{
	queue_resume(req->conn);
}

void http_suspend(struct request *req)
{
	struct http_server *h = req->srv->http;

	req->resumed = false;
	req->suspended = true;
	if (!req->suspend_counted) {
		atomic_fetch_add_explicit(&h->suspended, 1, memory_order_relaxed);
		req->suspend_counted = true;
	}
}

bool http_park(struct request *req, const char *key, int64_t deadline_us)
{
	struct http_server *h = req->srv->http;

	free(req->park_key);
	req->park_key = xstrdup(key);
	req->park_deadline = deadline_us;
	pthread_mutex_lock(&h->park_mu);
	/* Checked under the lock that the shutdown's wake-all takes: a request
	 * that parked after that wake would never be woken. */
	if (atomic_load(&h->stopping)) {
		pthread_mutex_unlock(&h->park_mu);
		return false;
	}
	req->parked = true;
	req->suspended = true;
	req->park_next = h->parked;
	h->parked = req;
	if (!req->suspend_counted) {
		atomic_fetch_add_explicit(&h->suspended, 1, memory_order_relaxed);
		req->suspend_counted = true;
	}
	pthread_mutex_unlock(&h->park_mu);
	return true;
}

/* Resumes the parked requests for which match() says so. */
static void wake_where(struct http_server *h, bool (*match)(struct request *, const void *),
		       const void *arg)
{
	pthread_mutex_lock(&h->park_mu);
	for (struct request **pp = &h->parked; *pp;) {
		struct request *r = *pp;
		if (match(r, arg)) {
			*pp = r->park_next;
			r->parked = false;
			queue_resume(r->conn);
		} else {
			pp = &r->park_next;
		}
	}
	pthread_mutex_unlock(&h->park_mu);
}

static bool key_matches(struct request *r, const void *key)
{
	return !key || !strcmp(r->park_key, key);
}

static bool deadline_passed(struct request *r, const void *now)
{
	return r->park_deadline <= *(const int64_t *)now;
}

void http_wake(struct http_server *h, const char *key)
{
	if (h)
		wake_where(h, key_matches, key);
}

static void *park_timer(void *arg)
{
	struct http_server *h = arg;
	for (;;) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		if (atomic_load(&h->stopping))
			return NULL;
		int64_t now = mono_usec();
		wake_where(h, deadline_passed, &now);
	}
}

/* --- accepting ----------------------------------------------------------------- */

/* A canned refusal on a plain connection we will not serve, then close. */
static void refuse_fd(struct http_server *h, int fd, int status, const char *api_status,
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

static void admit(struct worker *w, int fd, const struct sockaddr_storage *sa)
{
	struct http_server *h = w->h;

	if (atomic_fetch_add(&h->nconns, 1) >= h->lim.max_connections) {
		/* Full: make room by closing this worker's longest-idle connection. */
		if (w->idle_head) {
			conn_close(w->idle_head);
		} else {
			atomic_fetch_sub(&h->nconns, 1);
			log_warn("http: %d connections open (max_connections): refusing more",
				       h->lim.max_connections);
			refuse_fd(h, fd, 503, "UNAVAILABLE",
				  "The server has too many connections open. Retry later.");
			return;
		}
	}
	struct client *cl = client_acquire(h, sa);
	if (!cl) {
		atomic_fetch_sub(&h->nconns, 1);
		log_warn("http: a client has %d connections open "
			       "(max_connections_per_client): refusing more",
			       h->lim.max_connections_per_client);
		refuse_fd(h, fd, 429, "RESOURCE_EXHAUSTED",
			  "Too many connections from this client address.");
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct http_conn *c = xcalloc(1, sizeof(*c));
	c->w = w;
	c->fd = fd;
	c->client = cl;
	c->fresh = true;
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	int64_t deadline = mono_usec() + secs(h->lim.header_timeout_s);
	if (h->tls) {
		c->ssl = SSL_new(h->tls);
		if (!c->ssl || !SSL_set_fd(c->ssl, fd)) {
			log_error("http: cannot set up TLS for a connection");
			conn_close(c);
			return;
		}
		SSL_set_accept_state(c->ssl);
		set_phase(c, PH_TLS, deadline);
	} else {
		set_phase(c, PH_IDLE, deadline);
	}
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
				  .data.ptr = c };
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		log_error("http: epoll_ctl: %s", strerror(errno));
		conn_close(c);
	}
}

static void accept_ready(struct worker *w)
{
	struct http_server *h = w->h;

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

/* Closes what is past its deadline. */
static void sweep(struct worker *w)
{
	int64_t now = mono_usec();
	struct http_conn *next;

	for (struct http_conn *c = w->conns; c; c = next) {
		next = c->next;
		if (!c->deadline || c->deadline > now)
			continue;
		switch (c->phase) {
		case PH_HEAD:
		case PH_BODY:
			log_debug("http: a request %s not complete in time: closing the connection",
				  c->phase == PH_HEAD ? "head was" : "body was");
			conn_refuse(c, 408, c->phase == PH_HEAD ?
				    "The request head did not arrive in time." :
				    "The request body did not arrive in time.");
			conn_step(c);
			break;
		case PH_WRITE:
			c->broken = true;
			conn_close(c);
			break;
		default:
			conn_close(c);
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev[EVENTS_MAX];
	int64_t next_sweep = mono_usec() + SWEEP_USEC;

	while (!atomic_load(&w->stop)) {
		int64_t wait = (next_sweep - mono_usec()) / 1000;
		int n = epoll_wait(w->epfd, ev, EVENTS_MAX, wait < 0 ? 0 : (int)wait + 1);
		for (int i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;
			if (p == &w->listen_tag) {
				accept_ready(w);
			} else if (p == &w->ev_tag) {
				run_resumes(w);
			} else {
				struct http_conn *c = p;
				uint32_t e = ev[i].events;
				if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
					c->can_read = true;
				if (e & (EPOLLRDHUP | EPOLLHUP))
					c->rdhup = true;
				if (e & EPOLLERR)
					c->broken = true;
				conn_step(c);
			}
		}
		if (mono_usec() >= next_sweep) {
			sweep(w);
			next_sweep = mono_usec() + SWEEP_USEC;
		}
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

static void free_server(struct http_server *h)
{
	for (unsigned b = 0; b < CLIENT_BUCKETS; b++)
		while (h->clients[b]) {
			struct client *cl = h->clients[b];
			h->clients[b] = cl->next;
			free(cl);
		}
	pthread_mutex_destroy(&h->clients_mu);
	pthread_mutex_destroy(&h->park_mu);
	SSL_CTX_free(h->tls);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	free(h->workers);
	free(h);
}

struct http_server *http_start(struct server *srv, const char *listen_addr, int threads,
			       char *err, size_t errlen)
{
	struct http_server *h = xcalloc(1, sizeof(*h));
	struct http_limits def = HTTP_LIMITS_DEFAULT;

	h->srv = srv;
	h->lim = srv->http_limits;
	if (!h->lim.header_timeout_s)
		h->lim.header_timeout_s = def.header_timeout_s;
	if (!h->lim.idle_timeout_s)
		h->lim.idle_timeout_s = def.idle_timeout_s;
	if (!h->lim.io_timeout_s)
		h->lim.io_timeout_s = def.io_timeout_s;
	if (!h->lim.max_connections)
		h->lim.max_connections = def.max_connections;
	pthread_mutex_init(&h->clients_mu, NULL);
	pthread_mutex_init(&h->park_mu, NULL);
	h->listen_fd = -1;
	if (srv->tls_cert_pem && !(h->tls = tls_context(srv->tls_cert_pem, srv->tls_key_pem,
							  err, errlen))) {
		free_server(h);
		return NULL;
	}
	h->listen_fd = open_listener(listen_addr, &h->port, err, errlen);
	if (h->listen_fd < 0) {
		free_server(h);
		return NULL;
	}
	raise_fd_limit(h->lim.max_connections);
	srv->http = h;
	h->nworkers = threads < 1 ? 1 : threads;
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

int http_port(struct http_server *h)
{
	return h->port;
}

void http_quiesce(struct http_server *h)
{
	if (!h || h->quiesced)
		return;
	h->quiesced = true;
	atomic_store(&h->stopping, true);
	pthread_join(h->timer, NULL);
	h->timer_started = false;
	/* Stop accepting (the socket stays bound until http_stop) and answer
	 * the parked long-polls; no new ones park. */
	for (int i = 0; i < h->nworkers; i++)
		epoll_ctl(h->workers[i].epfd, EPOLL_CTL_DEL, h->listen_fd, NULL);
	http_wake(h, NULL);
}

void http_stop(struct http_server *h)
{
	if (!h)
		return;
	http_quiesce(h);
	/* Let the requests in flight finish (they reply normally), and wait
	 * until each resumed request has run. */
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
		h->srv->http = NULL;
		return;
	}
	for (int i = 0; i < h->nworkers; i++) {
		struct worker *w = &h->workers[i];
		while (w->conns) {
			struct http_conn *c = w->conns;
			if (c->req) {
				c->req->suspended = c->req->parked = false;
				c->rq_queued = false;
			}
			conn_close(c);
		}
		close(w->epfd);
		close(w->evfd);
		if (w->reserve_fd >= 0)
			close(w->reserve_fd);
		pthread_mutex_destroy(&w->rq_mu);
	}
	h->srv->http = NULL;
	free_server(h);
}

/* --- the request's view --------------------------------------------------------- */

const char *req_query(struct request *req, const char *name)
{
	for (size_t i = 0; i < req->nquery; i++)
		if (!strcmp(req->query[i].key, name))
			return req->query[i].value;	/* NULL for "?name" */
	return NULL;
}

const char *req_header(struct request *req, const char *name)
{
	return req->head ? http_head_field(req->head, name) : NULL;
}

/* --- from memory (fuzzing, tests) ------------------------------------------------ */

void http_serve_memory(struct server *srv, const void *data, size_t len, size_t step,
		       struct strbuf *out)
{
	struct http_server *h = xcalloc(1, sizeof(*h));
	struct http_limits def = HTTP_LIMITS_DEFAULT;
	struct worker *w = xcalloc(1, sizeof(*w));
	struct http_conn *c = xcalloc(1, sizeof(*c));
	struct http_server *saved = srv->http;

	h->srv = srv;
	h->lim = def;
	h->listen_fd = -1;
	h->nworkers = 1;
	h->workers = w;
	pthread_mutex_init(&h->clients_mu, NULL);
	pthread_mutex_init(&h->park_mu, NULL);
	srv->http = h;
	w->h = h;
	w->epfd = w->evfd = w->reserve_fd = -1;
	pthread_mutex_init(&w->rq_mu, NULL);
	atomic_store(&h->nconns, 1);
	c->w = w;
	c->fd = -1;
	c->fresh = true;
	c->mem_in = data;
	c->mem_len = len;
	c->mem_step = step ? step : len + 1;
	c->mem_out = out;
	w->conns = c;
	set_phase(c, PH_IDLE, mono_usec() + secs(h->lim.header_timeout_s));
	while (!c->mem_closed) {
		c->can_read = true;
		conn_step(c);
		if (c->mem_closed)
			break;
		/* Long-polls are answered at once, reads come back at once. */
		http_wake(h, NULL);
		if (!run_resume_queue(w) && c->phase == PH_HANDLER)
			abort();	/* suspended with no resume to come: a bug */
	}
	free(c);
	srv->http = saved;
	pthread_mutex_destroy(&w->rq_mu);
	free_server(h);
}
