/*
 * front.c - the API on the transport (httpd/): a request of the transport
 * becomes a struct request (its target split, its query decoded, its id
 * given), runs through the router, and is counted and logged when it ends;
 * the transport's refusals (malformed, too large, too slow) are answered
 * in Google's envelope like every other error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_metrics.h"
#include "http_internal.h"
#include "http_parse.h"
#include "log.h"

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

/* The request's own fields, before anything reads them. */
static void request_init(struct request *req, struct server *srv, struct httpd_req *hr)
{
	req->srv = srv;
	req->hr = hr;
	req->start_us = mono_usec();
	req->method = httpd_req_method(hr);
	req->late = httpd_req_late(hr);
	req->path = xstrdup("-");
	router_set_request_id(req);
}

/* Splits the target into path and query; replies and returns -1 when it cannot. */
static int request_target(struct request *req)
{
	char *target = xstrdup(httpd_req_target(req->hr));
	char *path, *query;

	if (http_target_split(target, &path, &query)) {
		free(target);
		req->close = true;	/* as every malformed request */
		reply_error(req, API_INVALID_ARGUMENT,
			    "The request target is neither a path nor an absolute URL.");
		return -1;
	}
	free(req->path);
	req->path = xstrdup(path);	/* as sent: the router decodes each segment */
	int qrc = parse_query(req, query);
	free(target);
	if (qrc) {
		req->close = true;
		reply_error(req, API_INVALID_ARGUMENT,
			    "The request has too many query parameters (at most 100).");
		return -1;
	}
	return 0;
}

/* The head is in: the router's checks run now, so that a route that streams its body sets its sink. */
static void front_head(struct httpd_req *hr, void *arg)
{
	struct request *req = httpd_req_app(hr);

	request_init(req, arg, hr);
	log_set_request_id(req->request_id);
	if (!request_target(req) && !router_prepare(req) && req->route->head)
		req->route->head(req);
	log_set_request_id(NULL);
}

static int front_sink(struct httpd_req *hr, const char *data, size_t len, void *ctx)
{
	struct request *req = httpd_req_app(hr);
	req_sink sink = (req_sink)ctx;

	return sink(req, data, len);
}

void req_stream_body(struct request *req, uint64_t limit, req_sink sink)
{
	httpd_req_set_body_limit(req->hr, limit);
	if (sink)
		httpd_req_set_body_sink(req->hr, front_sink, (void *)sink);
}

static void front_run(struct httpd_req *hr, void *arg)
{
	struct request *req = httpd_req_app(hr);

	if (!req->srv) {
		request_init(req, arg, hr);
		log_set_request_id(req->request_id);
		if (request_target(req)) {
			log_set_request_id(NULL);
			return;
		}
	} else {
		log_set_request_id(req->request_id);
	}
	req->resumed = httpd_req_resumed(hr);
	req->waiting = false;
	router_dispatch(req);
	log_set_request_id(NULL);
}

static enum api_code refusal_code(int status)
{
	switch (status) {
	case 408: return API_DEADLINE_EXCEEDED;
	case 500: return API_INTERNAL;
	case 501:
	case 505: return API_UNIMPLEMENTED;
	default: return API_INVALID_ARGUMENT;
	}
}

static void front_refuse(struct httpd_req *hr, int status, const char *message, void *arg)
{
	struct request *req = httpd_req_app(hr);

	if (!req->srv)
		request_init(req, arg, hr);
	req->refused = status != 500;	/* a client's doing: logged at DEBUG */
	req->close = true;
	log_set_request_id(req->request_id);
	reply_error_full(req, refusal_code(status), status, NULL, message);
	log_set_request_id(NULL);
}

static void front_done(struct httpd_req *hr, void *arg)
{
	struct request *req = httpd_req_app(hr);

	(void)arg;
	if (!req->srv)
		return;		/* the client left before its request ran */
	int64_t duration = mono_usec() - req->start_us;
	const char *route = req->route ? req->route->operation_id : "unmatched";
	log_set_request_id(req->request_id);
	if (!req->replied)
		log_debug("%s %s (%s) ended without a reply: its client left", req->method,
			  req->path, route);
	log_debug("access: %s %s route=%s status=%d duration=%.3fms", req->method, req->path,
		  route, req->status, (double)duration / 1000.0);
	log_set_request_id(NULL);
	/* An answer counts; a client that left before any did not get one. */
	if (req->replied)
		metrics_http_observe(req->route, req->status, duration);
	router_release(req);
	for (size_t i = 0; i < req->nquery; i++) {
		free(req->query[i].key);
		free(req->query[i].value);
	}
	free(req->query);
	free(req->path);
}

static const struct httpd_ops front_ops = { .head = front_head, .run = front_run,
					    .refuse = front_refuse,
					    .done = front_done };

void front_config(struct server *srv, struct httpd_config *cfg)
{
	*cfg = (struct httpd_config){
		.tls_cert_pem = srv->tls_cert_pem,
		.tls_key_pem = srv->tls_key_pem,
		.limits = srv->http_limits,
		.app_size = sizeof(struct request),
		.ops = &front_ops,
		.arg = srv,
	};
}

struct httpd *front_start(struct server *srv, const char *listen, int threads, char *err,
			  size_t errlen)
{
	struct httpd_config cfg;

	front_config(srv, &cfg);
	cfg.listen = listen;
	cfg.threads = threads;
	srv->http = httpd_start(&cfg, err, errlen);
	return srv->http;
}

void http_suspend(struct request *req)
{
	req->waiting = true;
	httpd_suspend(req->hr);
}

void http_resume(struct request *req)
{
	httpd_resume(req->hr);
}

bool http_park(struct request *req, const char *key, int64_t deadline_us)
{
	if (!httpd_park(req->hr, key, deadline_us))
		return false;
	req->waiting = true;
	return true;
}

const char *req_query(struct request *req, const char *name)
{
	for (size_t i = 0; i < req->nquery; i++)
		if (!strcmp(req->query[i].key, name))
			return req->query[i].value;	/* NULL for "?name" */
	return NULL;
}

const char *req_header(struct request *req, const char *name)
{
	return httpd_req_header(req->hr, name);
}

void http_serve_memory(struct server *srv, const void *data, size_t len, size_t step,
		       struct strbuf *out)
{
	struct httpd_config cfg;
	struct httpd *saved = srv->http;

	front_config(srv, &cfg);
	cfg.tls_cert_pem = cfg.tls_key_pem = NULL;
	/* The handlers wake parked requests through srv->http: none here (all
	 * are woken at once by the loop). */
	srv->http = NULL;
	httpd_serve_memory(&cfg, data, len, step, out);
	srv->http = saved;
}
