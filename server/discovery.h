/*
 * discovery.h - Google's discovery documents (discovery#restDescription)
 * of the APIs trainplane serves: ml v1, aiplatform v1 (the training
 * subset) and logging v2 (entries.list). Python's googleapiclient, and
 * every other discovery-based client, builds itself from one:
 *
 *   GET /discovery/v1/apis/{api}/{version}/rest     (googleapiclient's DISCOVERY_URI)
 *   GET /$discovery/rest?version={version}           (V2_DISCOVERY_URI: the API is the
 *                                                     first label of the host, ml.HOST)
 *
 * A document is made from the route table (routes.c: each route's method,
 * path and operation id) and the message descriptors (spec/: the schemas),
 * with what neither says (each method's request and response message and
 * query parameters) in discovery.c's table; once, on first use. The text is
 * the same for every request but for rootUrl and baseUrl, the address the
 * client used: its Host header, refused unless it is host[:port] of plain
 * characters (a hostile Host cannot put anything else in the document),
 * and https when the server serves TLS.
 */
#ifndef TP_DISCOVERY_H
#define TP_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>

struct request;

void api_discovery_get_rest(struct request *req);	/* /discovery/v1/apis/{api}/{version}/rest */
void api_discovery_rest(struct request *req);	/* /$discovery/rest?version= */

/*
 * Whether host is host[:port] as rootUrl may carry it: a DNS name or IPv4
 * address (letters, digits, '-', '.'), or an IPv6 address in brackets, then
 * optionally ':' and a port from 1 to 65535.
 */
bool discovery_host_valid(const char *host);

/*
 * The document of api at version (compact JSON, a new string) with rootUrl
 * "<scheme>://<host>/" (host as discovery_host_valid() takes it), or NULL
 * when no such API is served here. For `trainplane-server --discovery`.
 */
char *discovery_document(const char *api, const char *version, const char *scheme,
			 const char *host, size_t *len);

#endif
