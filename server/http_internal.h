/*
 * http_internal.h - what the API's HTTP files share (front.c: the glue to
 * the transport; router.c: dispatch; reply.c: replies). Handlers use
 * http.h only.
 */
#ifndef TP_HTTP_INTERNAL_H
#define TP_HTTP_INTERNAL_H

#include "http.h"

/*
 * Runs a request whose head and body are in (req->resumed false), or runs
 * its handler again after a resume (true). Replies, or leaves the request
 * suspended or parked.
 */
void router_dispatch(struct request *req);

/*
 * What runs before a request's body is read: the route matched, the ids in
 * the path checked, the caller authenticated, and authorized when the route
 * takes no JSON body. Returns 0 to go on, or -1 when it replied. Called by
 * front.c's head hook (then router_dispatch does not repeat it).
 */
int router_prepare(struct request *req);

/* Sets req->request_id from X-Request-Id when valid, else a new random one. */
void router_set_request_id(struct request *req);

/*
 * Google's system parameters (sysparams.c). sysparams_read_or_reply reads
 * prettyPrint, pp, $.xgafv, fields (or X-Goog-FieldMask) and refuses
 * callback (JSONP); sysparams_alt_or_reply checks alt against the matched
 * route. Each replies 400 and returns -1 on a bad value.
 */
int sysparams_read_or_reply(struct request *req);
int sysparams_alt_or_reply(struct request *req);
/* Whether a JSON reply of this status is written pretty. */
bool sysparams_pretty(const struct request *req, int status);
/* The errors[].reason of $.xgafv=1's envelope for code. */
const char *sysparams_error_reason(enum api_code code);

/* A system parameter as the discovery documents describe it (discovery.c). */
struct sysparam_doc {
	const char *name;
	const char *type;	/* "string" or "boolean" */
	const char *default_value;	/* NULL: none */
	const char *const *values;	/* the values taken, NULL-terminated; NULL: any */
	const char *description;
};
/* Every system parameter the server takes, by name. */
extern const struct sysparam_doc sysparam_docs[];
extern const size_t sysparam_docs_count;

/* Frees what the router and handlers attached to req (not req itself). */
void router_release(struct request *req);

#endif
