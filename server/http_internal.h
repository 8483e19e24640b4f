/*
 * http_internal.h - what the HTTP server's files share (http_server.c: the
 * daemon and connections; router.c: dispatch; reply.c: replies). Handlers
 * use http.h only.
 */
#ifndef TP_HTTP_INTERNAL_H
#define TP_HTTP_INTERNAL_H

#include "http.h"

/*
 * Queues req's response on its connection (sent once the handler returns):
 * status line, Content-Type, Content-Length, X-Request-Id, Date, extra
 * (whole "Name: value\r\n" lines, or NULL), Connection: close when req->close.
 * Takes body (malloc'd). A HEAD request gets the head only.
 */
void http_conn_respond(struct request *req, int status, const char *content_type, char *body,
		       size_t len, const char *extra);

/*
 * Runs a request whose head and body are in (req->resumed false), or runs
 * its handler again after a resume (true). Replies, or leaves the request
 * suspended or parked.
 */
void router_dispatch(struct request *req);

/* Sets req->request_id from X-Request-Id when valid, else a new random one. */
void router_set_request_id(struct request *req);

/* Frees what the router and handlers attached to req (not req itself). */
void router_release(struct request *req);

#endif
