#include "http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "auth.h"
#include "log.h"
#include "metrics.h"
#include "snapshot.h"
#include "wire.h"

struct http_server {
	struct MHD_Daemon *daemon;
	struct server *srv;
	int port;
	/* Parked (suspended) long-poll requests, woken by key or deadline. */
	pthread_mutex_t park_mu;
	struct request *parked;
	pthread_t timer;
	bool stopping;
	int suspended;		/* parked, or resumed but not yet called back by MHD (atomic) */
	int in_flight;		/* requests begun and not yet completed (atomic) */
	MHD_socket listen_fd;	/* ours once quiesced */
	bool quiesced;
};

/* How long a graceful stop waits for the requests in flight. */
#define DRAIN_SECONDS 10

/* Called with park_mu held: unlinks req and lets MHD run its handler again. */
static void resume_locked(struct request *req)
{
	req->parked = false;
	req->resumed = true;
	MHD_resume_connection(req->conn);
}

bool http_park(struct request *req, const char *key, int64_t deadline_us)
{
	struct http_server *h = req->srv->http;

	free(req->park_key);
	req->park_key = xstrdup(key);
	req->park_deadline = deadline_us;
	/* Suspend under the lock, so that no wake can resume it first. */
	pthread_mutex_lock(&h->park_mu);
	/* Shutting down: MHD must not be stopped with a suspended connection.
	 * Checked under the lock that the shutdown's wake-all takes: a request
	 * that parked after that wake would never be woken (the deadline timer
	 * is gone too). */
	if (__atomic_load_n(&h->stopping, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&h->park_mu);
		return false;
	}
	MHD_suspend_connection(req->conn);
	req->parked = true;
	req->park_next = h->parked;
	h->parked = req;
	__atomic_add_fetch(&h->suspended, 1, __ATOMIC_RELAXED);
	req->suspend_counted = true;
	pthread_mutex_unlock(&h->park_mu);
	return true;
}

/* No server lock on this path (jobs.get): MHD orders suspend and resume. */
void http_suspend(struct request *req)
{
	struct http_server *h = req->srv->http;

	MHD_suspend_connection(req->conn);
	req->resumed = false;
	req->awaiting = true;
	__atomic_add_fetch(&h->suspended, 1, __ATOMIC_RELAXED);
	req->suspend_counted = true;
}

void http_resume(struct request *req)
{
	req->resumed = true;
	MHD_resume_connection(req->conn);
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
			resume_locked(r);
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
		usleep(20 * 1000);
		if (__atomic_load_n(&h->stopping, __ATOMIC_ACQUIRE))
			return NULL;
		int64_t now = mono_usec();
		wake_where(h, deadline_passed, &now);
	}
}

const char *req_query(struct request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *req_header(struct request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

static void send_text(struct request *req, int status, const char *content_type, char *text,
		      size_t len)
{
	struct MHD_Response *resp;

	if (req->replied) {
		free(text);
		return;
	}
	req->replied = true;
	req->status = status;
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	MHD_add_response_header(resp, "X-Request-Id", req->request_id);
	if (req->close)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	if (status == 405) {
		/* Tell the client what this path does take. */
		struct strbuf allow = STRBUF_INIT;
		for (size_t i = 0; i < routes_count; i++) {
			char *params[ROUTE_MAX_PARAMS] = { 0 };
			bool known;
			const struct route *r = route_match(routes[i].method, req->path, params, &known);
			for (int k = 0; k < ROUTE_MAX_PARAMS; k++)
				free(params[k]);
			if (r && !strstr(sb_str(&allow), r->method))
				sb_addf(&allow, "%s%s", allow.len ? ", " : "", r->method);
		}
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, sb_str(&allow));
		sb_release(&allow);
	}
	MHD_queue_response(req->conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
}

#define JSON_TYPE "application/json; charset=UTF-8"

void reply_json_text(struct request *req, int status, char *text, size_t len)
{
	send_text(req, status, JSON_TYPE, text, len);
}

void reply_text(struct request *req, int status, const char *content_type, char *text,
		size_t len)
{
	send_text(req, status, content_type, text, len);
}

void reply_json(struct request *req, int status, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	send_text(req, status, JSON_TYPE, text, strlen(text));
}

void reply_error_full(struct request *req, enum api_code code, int http, json_t *details,
		      const char *message)
{
	if (!details)
		details = json_array();
	json_array_append_new(details, api_request_info_detail(req->request_id));
	json_t *body = api_error_json(code, http, message, details);
	int status = http ? http : api_code_http(code);

	if (status >= 500)
		log_error("%s %s -> %d %s: %s", req->method, req->path, status,
			  api_code_name(code), message);
	else
		log_debug("%s %s -> %d %s: %s", req->method, req->path, status,
			  api_code_name(code), message);
	reply_json(req, status, body);
}

void reply_error(struct request *req, enum api_code code, const char *fmt, ...)
{
	va_list ap;
	char *message;

	va_start(ap, fmt);
	if (vasprintf(&message, fmt, ap) < 0)
		abort();
	va_end(ap);
	reply_error_full(req, code, 0, NULL, message);
	free(message);
}

void reply_violations(struct request *req, const struct violations *vs, const char *message)
{
	reply_error_full(req, API_INVALID_ARGUMENT, 0, api_bad_request_details(vs), message);
}

void reply_store_error(struct request *req, enum store_rc rc)
{
	switch (rc) {
	case STORE_UNAVAILABLE:
		reply_error(req, API_UNAVAILABLE,
			    "The service is currently unavailable: the database cannot be reached. "
			    "Retry the request.");
		break;
	case STORE_NOT_FOUND:
		reply_error(req, API_NOT_FOUND, "The requested resource was not found.");
		break;
	default:
		reply_error(req, API_INTERNAL, "Internal error encountered.");
	}
}

/* --- routing ----------------------------------------------------------- */

/*
 * Matches one pattern segment against one path segment. A pattern segment
 * is a literal, or "{var}" optionally followed by a literal suffix such as
 * ":cancel". A variable in the last segment without a suffix does not take
 * a ':' so that "jobs/x:unknownVerb" is not taken for the job "x:unknownVerb".
 */
static bool match_segment(const char *pat, size_t plen, const char *seg, size_t slen,
			  bool last, char **param)
{
	if (plen && pat[0] == '{') {
		const char *close = memchr(pat, '}', plen);
		const char *suffix = close + 1;
		size_t sufflen = plen - (size_t)(suffix - pat);
		if (slen <= sufflen || memcmp(seg + slen - sufflen, suffix, sufflen))
			return false;
		size_t vlen = slen - sufflen;
		if (last && !sufflen && memchr(seg, ':', vlen))
			return false;
		*param = xstrndup(seg, vlen);
		return true;
	}
	return plen == slen && !memcmp(pat, seg, slen);
}

const struct route *route_match(const char *method, const char *path,
				char *params[ROUTE_MAX_PARAMS], bool *path_known)
{
	*path_known = false;
	for (size_t i = 0; i < routes_count; i++) {
		const char *p = routes[i].pattern, *s = path;
		char *got[ROUTE_MAX_PARAMS] = { 0 };
		int ngot = 0;
		bool ok = true;

		while (ok && *p && *s) {
			if (*p != '/' || *s != '/') {
				ok = false;
				break;
			}
			p++;
			s++;
			size_t plen = strcspn(p, "/"), slen = strcspn(s, "/");
			char *param = NULL;
			bool last = !p[plen];
			if (!match_segment(p, plen, s, slen, last, &param) ||
			    (param && ngot == ROUTE_MAX_PARAMS)) {
				free(param);
				ok = false;
				break;
			}
			if (param)
				got[ngot++] = param;
			p += plen;
			s += slen;
		}
		ok = ok && !*p && !*s;
		if (ok && !strcmp(routes[i].method, method)) {
			memcpy(params, got, sizeof(got));
			return &routes[i];
		}
		if (ok)
			*path_known = true;
		for (int k = 0; k < ngot; k++)
			free(got[k]);
	}
	return NULL;
}

static bool is_json_content_type(const char *ct)
{
	size_t n = strlen("application/json");
	if (strncasecmp(ct, "application/json", n))
		return false;
	return !ct[n] || ct[n] == ';' || ct[n] == ' ';
}

/* Parses the body of a takes_body route; replies and returns -1 on error. */
static int parse_body_or_reply(struct request *req)
{
	const char *ct = req_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
	json_error_t jerr;

	if (!req->body.len) {
		/* An empty body is an empty message (curl users often send none). */
		req->json = json_object();
		return 0;
	}
	if (ct && !is_json_content_type(ct)) {
		char msg[320];
		snprintf(msg, sizeof(msg),
			 "Invalid JSON payload received. Content-Type '%.128s' is not supported: "
			 "send the body as application/json (curl: -H 'Content-Type: "
			 "application/json').", ct);
		reply_error_full(req, API_INVALID_ARGUMENT, 415, NULL, msg);
		return -1;
	}
	req->json = json_loadb(req->body.buf, req->body.len, JSON_REJECT_DUPLICATES, &jerr);
	if (!req->json) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "Invalid JSON payload received. %s at line %d, column %d.", jerr.text,
			    jerr.line, jerr.column);
		return -1;
	}
	if (!json_is_object(req->json)) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "Invalid JSON payload received. Expected an object at the top level.");
		return -1;
	}
	return 0;
}

/*
 * Percent-decoding for the path and query values. "%00" stays as it is: a
 * NUL would cut the C string short and "jobs/a%00b" would read job "a".
 */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	static const char hex[] = "0123456789abcdef";
	char *r = s, *w = s;

	(void)cls;
	(void)conn;
	while (*r) {
		const char *h1, *h2;
		if (r[0] == '%' && r[1] && r[2] && (h1 = strchr(hex, r[1] | 0x20)) &&
		    (h2 = strchr(hex, r[2] | 0x20)) && (h1 != hex || h2 != hex)) {
			*w++ = (char)((h1 - hex) << 4 | (h2 - hex));
			r += 3;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

static enum MHD_Result check_arg_utf8(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	bool *ok = cls;
	(void)kind;
	if (!wire_utf8_valid(key, strlen(key)) || (value && !wire_utf8_valid(value, strlen(value))))
		*ok = false;
	return *ok ? MHD_YES : MHD_NO;
}

/*
 * MHD has run a resumed request again, or finished it (its client hung up
 * while it was parked): either way it is no longer suspended.
 */
static void uncount_suspended(struct request *req)
{
	struct http_server *h = req->srv->http;

	if (!req->suspend_counted || !h)
		return;
	__atomic_sub_fetch(&h->suspended, 1, __ATOMIC_RELAXED);
	req->suspend_counted = false;
}

/*
 * Agent routes take the cluster token or their node's agent token; user
 * routes never take the cluster token (a leaked agent token reaches no
 * job). Replies and returns -1 when the request may not pass (auth.c).
 */
static int check_token_or_reply(struct request *req)
{
	return auth_check_agent_or_reply(req);
}

static void dispatch(struct request *req)
{
	bool path_known, args_ok = true;

	if (req->resumed) {
		/* A parked long-poll woke up, or a read came back: its route and
		 * body are known. */
		uncount_suspended(req);
		req->awaiting = false;
		req->route->handler(req);
		if (!req->replied && !req->parked && !req->awaiting)
			reply_error(req, API_INTERNAL, "Internal error encountered.");
		return;
	}

	if (req->late) {
		/* It came on a kept-alive connection after SIGTERM: a client retries
		 * a 503, and the connection closes so that it goes elsewhere. */
		req->close = true;
		reply_error(req, API_UNAVAILABLE,
			    "The server is shutting down. Retry the request.");
		return;
	}
	/* Everything below may reach the database, which takes only UTF-8. */
	MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, check_arg_utf8, &args_ok);
	if (!wire_utf8_valid(req->path, strlen(req->path)) || !args_ok) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "The request URL or a query parameter is not valid UTF-8.");
		return;
	}

	req->route = route_match(req->method, req->path, req->params, &path_known);
	if (!req->route) {
		if (path_known)
			reply_error_full(req, API_UNIMPLEMENTED, 405, NULL,
					 "The method is not allowed for this URL.");
		else
			reply_error(req, API_NOT_FOUND,
				    "The requested URL %s was not found on this server.", req->path);
		return;
	}
	if (check_token_or_reply(req) || auth_authenticate_or_reply(req))
		return;
	if (req->too_large) {
		char msg[96];
		snprintf(msg, sizeof(msg), "Request payload size exceeds the limit: %zu bytes.",
			 req->srv->max_body);
		reply_error_full(req, API_INVALID_ARGUMENT, 413, NULL, msg);
		return;
	}
	if (req->route->takes_body && parse_body_or_reply(req))
		return;
	if (auth_authorize_or_reply(req))
		return;
	req->catalog = snapshot_acquire(req->srv->catalogs, &req->catalog_ref);
	req->route->handler(req);
	if (!req->replied && !req->parked && !req->awaiting) {
		log_error("handler for %s %s sent no reply", req->method, req->path);
		reply_error(req, API_INTERNAL, "Internal error encountered.");
	}
}

static bool request_id_valid(const char *id)
{
	size_t n = 0;

	for (; id[n]; n++)
		if (n == REQUEST_ID_MAX || id[n] < 0x21 || id[n] > 0x7e)
			return false;
	return n > 0;
}

/* The client's X-Request-Id when valid, else 128 random bits in hex. */
static void set_request_id(struct request *req)
{
	const char *given = req_header(req, "X-Request-Id");
	unsigned char bits[16];
	size_t got = 0;

	if (given && request_id_valid(given)) {
		snprintf(req->request_id, sizeof(req->request_id), "%s", given);
		return;
	}
	/* Ids need to be unique, not secret: splitmix64 over a per-thread
	 * counter that starts at random, rather than a system call each. */
	static __thread uint64_t next[2];
	static __thread bool seeded;
	static const char hex[] = "0123456789abcdef";
	if (!seeded) {
		while (got < sizeof(next)) {
			ssize_t n = getrandom((char *)next + got, sizeof(next) - got, 0);
			if (n > 0)
				got += (size_t)n;
		}
		seeded = true;
	}
	for (int half = 0; half < 2; half++) {
		uint64_t z = (next[half] += UINT64_C(0x9e3779b97f4a7c15));
		z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
		z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
		z ^= z >> 31;
		memcpy(bits + 8 * half, &z, sizeof(z));
	}
	for (size_t i = 0; i < sizeof(bits); i++) {
		req->request_id[2 * i] = hex[bits[i] >> 4];
		req->request_id[2 * i + 1] = hex[bits[i] & 15];
	}
	req->request_id[2 * sizeof(bits)] = '\0';
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **ctx)
{
	struct http_server *h = cls;
	struct request *req = *ctx;

	(void)version;
	if (!req) {
		req = xcalloc(1, sizeof(*req));
		req->srv = h->srv;
		req->conn = conn;
		req->method = method;
		req->path = xstrdup(url);
		req->start_us = mono_usec();
		set_request_id(req);
		*ctx = req;
		/* Counted before the look at stopping, both sequentially consistent
		 * with http_stop()'s: the drain either waits for this request or
		 * this request sees that the server is stopping (then it is
		 * refused without suspending: MHD must not stop with a suspended
		 * connection). */
		__atomic_add_fetch(&h->in_flight, 1, __ATOMIC_SEQ_CST);
		req->late = __atomic_load_n(&h->stopping, __ATOMIC_SEQ_CST);
		/* Refuse an announced oversized body before reading it. */
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > h->srv->max_body)
			req->too_large = true;
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (!req->too_large && req->body.len + *upload_data_size > h->srv->max_body) {
			req->too_large = true;
			sb_release(&req->body);
		}
		if (!req->too_large)
			sb_add(&req->body, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	/* (a request awaiting its read runs again only once resumed) */
	if (!req->replied && !req->parked && (!req->awaiting || req->resumed)) {
		/* This thread's log lines are the request's until it returns. */
		log_set_request_id(req->request_id);
		dispatch(req);
		log_set_request_id(NULL);
	}
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **ctx,
			 enum MHD_RequestTerminationCode toe)
{
	struct request *req = *ctx;
	struct http_server *h = cls;

	(void)conn;
	if (!req)
		return;
	__atomic_sub_fetch(&h->in_flight, 1, __ATOMIC_RELAXED);
	int64_t duration = mono_usec() - req->start_us;
	const char *route = req->route ? req->route->operation_id : "unmatched";
	log_set_request_id(req->request_id);
	if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		log_debug("%s %s (%s) terminated early (%d)", req->method, req->path, route,
			  (int)toe);
	/* The access log: one line per request. */
	log_debug("access: %s %s route=%s status=%d duration=%.3fms", req->method, req->path,
		  route, req->status, (double)duration / 1000.0);
	log_set_request_id(NULL);
	/* An answer counts; a client that left before any did not get one. */
	if (req->replied)
		metrics_http_observe(req->route, req->status, duration);
	uncount_suspended(req);
	for (int i = 0; i < ROUTE_MAX_PARAMS; i++)
		free(req->params[i]);
	json_decref(req->json);
	PQclear(req->db_res);
	if (req->ctx_free)
		req->ctx_free(req->ctx);
	snapshot_release(req->catalog_ref);
	snapshot_release(req->tokens_ref);
	sb_release(&req->body);
	free(req->park_key);
	free(req->path);
	free(req);
	*ctx = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	log_warn("http: %s", line);
}

struct http_server *http_start(struct server *srv, const char *listen, int threads,
			       char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char host[256];
	const char *port;
	const char *colon = strrchr(listen, ':');
	struct http_server *h;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_EPOLL | MHD_USE_TURBO |
			 MHD_ALLOW_SUSPEND_RESUME;

	if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof(host)) {
		snprintf(err, errlen, "listen address '%s' is not host:port", listen);
		return NULL;
	}
	port = colon + 1;
	if (listen[0] == '[' && colon[-1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)(colon - listen - 2), listen + 1);
	else
		snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
	int gai = getaddrinfo(host, port, &hints, &ai);
	if (gai) {
		snprintf(err, errlen, "listen address '%s': %s", listen, gai_strerror(gai));
		return NULL;
	}
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	struct MHD_OptionItem tls[] = {
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)srv->tls_key_pem },
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)srv->tls_cert_pem },
		{ MHD_OPTION_END, 0, NULL },
	};
	if (srv->tls_cert_pem) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			snprintf(err, errlen, "this libmicrohttpd was built without TLS");
			freeaddrinfo(ai);
			return NULL;
		}
		flags |= MHD_USE_TLS;
	} else {
		tls[0].option = MHD_OPTION_END;
	}

	h = xcalloc(1, sizeof(*h));
	h->srv = srv;
	h->listen_fd = MHD_INVALID_SOCKET;
	srv->http = h;
	pthread_mutex_init(&h->park_mu, NULL);
	h->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, h,
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
		MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
		MHD_OPTION_SOCK_ADDR, ai->ai_addr,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)4096,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
		MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
		MHD_OPTION_ARRAY, tls,
		MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!h->daemon) {
		snprintf(err, errlen, "cannot listen on %s (address in use or not permitted%s?)",
			 listen, srv->tls_cert_pem ? ", or the TLS certificate refused" : "");
		pthread_mutex_destroy(&h->park_mu);
		srv->http = NULL;
		free(h);
		return NULL;
	}
	if (pthread_create(&h->timer, NULL, park_timer, h))
		abort();
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : atoi(port);
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
	__atomic_store_n(&h->stopping, true, __ATOMIC_SEQ_CST);
	pthread_join(h->timer, NULL);
	/* Stop accepting and answer the parked long-polls (no new ones park). */
	h->listen_fd = MHD_quiesce_daemon(h->daemon);
	http_wake(h, NULL);
}

void http_stop(struct http_server *h)
{
	if (!h)
		return;
	http_quiesce(h);
	/* Let the requests in flight finish (they reply normally), and wait
	 * until MHD has run each resumed long-poll: it must not stop with a
	 * suspended connection. */
	int left = 0, suspended = 0;
	for (int i = 0; i < DRAIN_SECONDS * 100; i++) {
		left = __atomic_load_n(&h->in_flight, __ATOMIC_SEQ_CST);
		suspended = __atomic_load_n(&h->suspended, __ATOMIC_RELAXED);
		if (!left && !suspended)
			break;
		usleep(10 * 1000);
	}
	if (left)
		log_warn("stopping with %d request(s) still in flight after %d s", left,
			 DRAIN_SECONDS);
	MHD_stop_daemon(h->daemon);
	if (h->listen_fd != MHD_INVALID_SOCKET)
		close(h->listen_fd);	/* quiesce hands the listening socket to us */
	pthread_mutex_destroy(&h->park_mu);
	h->srv->http = NULL;
	free(h);
}
