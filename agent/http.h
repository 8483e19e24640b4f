/*
 * http.h - one HTTP request at a time through libcurl's multi interface, so
 * that the agent keeps ticking (reaping, stopping, reading logs) while a
 * long-poll sync is in flight.
 */
#ifndef TP_AGENT_HTTP_H
#define TP_AGENT_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"
#include "strbuf.h"

struct http_client;
struct sockaddr;

/*
 * New client; NULL if libcurl cannot start. Free with http_client_free().
 * Unless allow_insecure_http, a plain http:// request connects only to
 * loopback addresses, whatever a name resolves to at that moment or a
 * proxy says: anything else fails before a byte (the token) is sent.
 */
struct http_client *http_client_new(const char *token, const char *ca_file,
				    bool allow_insecure_http);
void http_client_free(struct http_client *c);

/*
 * Starts POST url with the JSON body (copied), timing out after timeout_s.
 * Any request in flight is aborted first. 0 or -1.
 */
int http_post_start(struct http_client *c, const char *url, const char *body,
		    long timeout_s) MUST_CHECK;
/* Whether a request is in flight. */
bool http_busy(const struct http_client *c);
/*
 * Drives the request, waiting up to wait_ms for progress, or until wake_fd
 * (-1: none) is readable. Returns true once it has finished: then *status
 * is the HTTP status, or 0 on a network error with the reason in
 * http_error(); the body is in http_body().
 */
bool http_step(struct http_client *c, int wait_ms, int wake_fd, long *status);
/* Abandons the request in flight. */
void http_abort(struct http_client *c);
const char *http_body(const struct http_client *c, size_t *len);
const char *http_error(const struct http_client *c);

/* Blocking POST (register): start + step until done. Returns the status (0: network). */
long http_post(struct http_client *c, const char *url, const char *body, long timeout_s);

/* Whether sa is a loopback address: 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104. */
bool http_addr_is_loopback(const struct sockaddr *sa);
/*
 * Whether url's host is loopback: localhost or *.localhost (which libcurl
 * resolves to loopback itself), or an address or name every address of
 * which is loopback (a name that does not resolve is not). Writes the host
 * (without IPv6 brackets) into host; "" when url has none.
 */
bool http_url_is_loopback(const char *url, char *host, size_t hostlen);

#endif
