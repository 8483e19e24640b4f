/*
 * router.c - from a request to its handler: the route table matched, the
 * ids in the path checked, credentials, the body's size, type and JSON,
 * authorization, then the handler; and a resumed request's handler run
 * again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "api_ml.h"
#include "auth.h"
#include "fields.h"
#include "http_internal.h"
#include "http_parse.h"
#include "log.h"
#include "snapshot.h"
#include "storage_fs.h"
#include "store_job.h"
#include "store_storage.h"
#include "wire.h"

/* --- routing ----------------------------------------------------------- */

/*
 * Matches one pattern segment against one path segment (decoded). A pattern
 * segment is a literal, or "{var}" optionally followed by a literal suffix
 * such as ":cancel". A variable in the last segment without a suffix does
 * not take a ':' so that "jobs/x:unknownVerb" is not taken for the job
 * "x:unknownVerb".
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
		/* (an object's name may hold ':': its routes have no verbs) */
		bool object = close - pat >= 6 && !memcmp(close - 5, "bject", 5);
		if (last && !sufflen && !object && memchr(seg, ':', vlen))
			return false;
		*param = xstrndup(seg, vlen);
		return true;
	}
	return plen == slen && !memcmp(pat, seg, slen);
}

/*
 * The path is routed as sent, segment by segment, each segment decoded on
 * its own: "%2F" stays inside its segment ("projects%2Fdemo%2Fjobs" is one
 * segment, not three), so a front proxy that allows or denies by path sees
 * the path the router sees.
 */
const struct route *route_match(const char *method, const char *path,
				char *params[ROUTE_MAX_PARAMS], bool *path_known)
{
	char seg[HTTP_MAX_REQUEST_LINE + 1];

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
			size_t plen = strcspn(p, "/"), rawlen = strcspn(s, "/");
			char *param = NULL;
			bool last = !p[plen];
			if (rawlen >= sizeof(seg)) {
				ok = false;
				break;
			}
			memcpy(seg, s, rawlen);
			seg[rawlen] = '\0';
			size_t slen = http_unescape(seg, false);
			if (!match_segment(p, plen, seg, slen, last, &param) ||
			    (param && ngot == ROUTE_MAX_PARAMS)) {
				free(param);
				ok = false;
				break;
			}
			if (param)
				got[ngot++] = param;
			p += plen;
			s += rawlen;
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

/* --- ids in the path ------------------------------------------------------ */

static bool all_of(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return true;
}

#define LOWER_DIGITS "abcdefghijklmnopqrstuvwxyz0123456789"

/* 1 to 30 lowercase letters, digits and hyphens, no hyphen at either end. */
static bool plain_project_valid(const char *s, size_t n)
{
	return n >= 1 && n <= 30 && all_of(s, n, LOWER_DIGITS "-") && s[0] != '-' &&
	       s[n - 1] != '-';
}

/*
 * A project id as Google writes them: "my-project", a project number, or
 * a domain-scoped id ("example.com:my-project"). Google's minimum of 6
 * characters is not enforced, so that short names ("demo") work offline.
 */
bool project_id_valid(const char *s)
{
	const char *colon = strchr(s, ':');
	if (!colon)
		return plain_project_valid(s, strlen(s));
	size_t dn = (size_t)(colon - s);
	return dn >= 1 && dn <= 63 && all_of(s, dn, LOWER_DIGITS ".-") && s[0] != '.' &&
	       s[0] != '-' && plain_project_valid(colon + 1, strlen(colon + 1));
}

/* A region or "global": a lowercase letter, then letters, digits, hyphens. */
static bool location_id_valid(const char *s)
{
	size_t n = strlen(s);
	return n >= 1 && n <= 63 && s[0] >= 'a' && s[0] <= 'z' && all_of(s, n, LOWER_DIGITS "-");
}

/*
 * Any other id (UTF-8 checked before): 1 to 128 characters, none of them a
 * control character (C0, DEL or C1), so that no id can break a log line or
 * drive a terminal.
 */
static bool resource_id_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t chars = 0;

	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
			return false;
		if ((*p & 0xc0) != 0x80 && ++chars > 128)
			return false;
	}
	return chars > 0;
}

/* The name of the i-th variable of a route's pattern ("projectsId"). */
static void param_name(const char *pattern, int i, char *buf, size_t len)
{
	const char *p = pattern;
	for (int k = 0; (p = strchr(p, '{')); k++, p++) {
		if (k == i) {
			const char *e = strchr(p, '}');
			snprintf(buf, len, "%.*s", (int)(e - p - 1), p + 1);
			return;
		}
	}
	snprintf(buf, len, "id");
}

/*
 * Every id in the path is checked before anything reads, stores or logs
 * it. Replies and returns -1 on a bad one.
 */
static int check_path_ids_or_reply(struct request *req)
{
	for (int i = 0; i < ROUTE_MAX_PARAMS && req->params[i]; i++) {
		char name[48];
		const char *v = req->params[i], *rule;
		bool ok;

		param_name(req->route->pattern, i, name, sizeof(name));
		if (!strcmp(name, "projectsId")) {
			ok = project_id_valid(v);
			rule = "a project id is 1 to 30 lowercase letters, digits and hyphens, not "
			       "beginning or ending with a hyphen (or a project number, or "
			       "domain:project)";
		} else if (!strcmp(name, "locationsId")) {
			ok = location_id_valid(v);
			rule = "a location is a region such as us-central1: a lowercase letter, then "
			       "lowercase letters, digits and hyphens, at most 63";
		} else if (!strcmp(name, "bucket") || !strcmp(name, "sourceBucket") ||
			   !strcmp(name, "destinationBucket")) {
			const char *why;
			ok = storage_bucket_name_ok(v, &why);
			rule = why;
		} else if (!strcmp(name, "object") || !strcmp(name, "sourceObject") ||
			   !strcmp(name, "destinationObject")) {
			/* A read or a delete may name what cannot be here (404 from the handler). */
			bool reads = !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD") ||
				     !strcmp(req->method, "DELETE");
			const char *why;
			ok = reads ? storage_object_name_google_ok(v, &why) :
				     storage_object_name_ok(v, &why);
			rule = why;
		} else if (!strcmp(name, "jobsId")) {
			ok = api_ml_job_id_valid(v);
			rule = "a job id begins with a letter and has only letters, digits and "
			       "underscores, at most 128";
		} else {
			ok = resource_id_valid(v);
			rule = "an id is 1 to 128 characters, none of them a control character";
		}
		if (ok)
			continue;
		struct violations vs = VIOLATIONS_INIT;
		violations_add(&vs, name, "%s", rule);
		char *msg = xasprintf("Invalid %s in the request URL: %s.", name, rule);
		reply_violations(req, &vs, msg);
		free(msg);
		violations_release(&vs);
		return -1;
	}
	return 0;
}

/* --- bodies ----------------------------------------------------------------- */

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
	const char *ct = req_header(req, "Content-Type");
	json_error_t jerr;
	size_t body_len;
	const char *body = httpd_req_body(req->hr, &body_len);

	if (!body_len) {
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
	req->json = json_loadb(body, body_len, JSON_REJECT_DUPLICATES, &jerr);
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

/* --- credentials: auth decides, the router replies ---------------------------- */

/* The request as auth.c sees it (its route is known). */
static void auth_request_of(struct request *req, struct auth_request *ar)
{
	const struct server *srv = req->srv;

	*ar = (struct auth_request){
		.mode = srv->auth_mode,
		.tokens = srv->tokens,
		.tokens_ref = &req->tokens_ref,
		.cluster_token = srv->agent_token,
		.store = srv->store,
		.operation_id = req->route->operation_id,
		.pattern = req->route->pattern,
		.agent_route = req->route->agent,
		.params = req->params,
		.nparams = ROUTE_MAX_PARAMS,
		.path = req->path,
		.authorization = req_header(req, "Authorization"),
		/* ?key= is a credential in tokens mode only */
		.key = srv->auth_mode == AUTH_TOKENS ? req_query(req, "key") : NULL,
	};
}

/* Replies with auth's refusal and returns -1; 0 when d allows the request. */
static int apply_or_reply(struct request *req, struct auth_decision d)
{
	if (d.allowed)
		return 0;
	if (d.store_rc != STORE_OK) {
		reply_store_error(req, d.store_rc);
	} else {
		reply_error_full(req, d.code, d.http, d.details, d.message);
		d.details = NULL;	/* stolen */
	}
	auth_decision_release(&d);
	return -1;
}

/* --- dispatch ------------------------------------------------------------------ */

static int router_authorize(struct request *req);

static bool query_utf8_valid(const struct request *req)
{
	for (size_t i = 0; i < req->nquery; i++) {
		const struct query_param *p = &req->query[i];
		if (!wire_utf8_valid(p->key, strlen(p->key)) ||
		    (p->value && !wire_utf8_valid(p->value, strlen(p->value))))
			return false;
	}
	return true;
}

/* The handler ran: it replied, or it waits for its resume. */
static void handler_done(struct request *req)
{
	if (!req->replied && !req->waiting) {
		log_error("handler for %s %s sent no reply", req->method, req->path);
		reply_error(req, API_INTERNAL, "Internal error encountered.");
	}
}

/*
 * The project a Cloud Storage route acts in: its bucket's owner (none when
 * the bucket does not exist: the handler says 404), or ?project=.
 */
static const char *storage_project(struct request *req, char **owned)
{
	*owned = NULL;
	if (strncmp(req->route->operation_id, "storage.", 8))
		return NULL;
	if (!req->params[0])
		return req_query(req, "project");
	struct storage_bucket b;
	if (store_bucket_get(req->srv->store, req->params[0], &b) == STORE_OK) {
		*owned = b.project;
		b.project = NULL;
	}
	storage_bucket_release(&b);
	return *owned;
}

int router_prepare(struct request *req)
{
	bool path_known;

	req->prepared = true;
	if (req->late) {
		/* It came on a kept-alive connection after SIGTERM: a client retries
		 * a 503, and the connection closes so that it goes elsewhere. */
		req->close = true;
		reply_error(req, API_UNAVAILABLE, "The server is shutting down. Retry the request.");
		return -1;
	}
	/* Everything below may reach the database, which takes only UTF-8. */
	if (!query_utf8_valid(req)) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "The request URL or a query parameter is not valid UTF-8.");
		return -1;
	}
	/* Google's system parameters come first: they shape every reply, errors included. */
	if (sysparams_read_or_reply(req))
		return -1;
	req->route = route_match(req->method, req->path, req->params, &path_known);
	for (int i = 0; req->route && i < ROUTE_MAX_PARAMS && req->params[i]; i++)
		if (!wire_utf8_valid(req->params[i], strlen(req->params[i]))) {
			reply_error(req, API_INVALID_ARGUMENT,
				    "The request URL or a query parameter is not valid UTF-8.");
			return -1;
		}
	if (!req->route) {
		if (path_known)
			reply_error_full(req, API_UNIMPLEMENTED, 405, NULL,
					 "The method is not allowed for this URL.");
		else
			reply_error(req, API_NOT_FOUND,
				    "The requested URL %s was not found on this server.", req->path);
		return -1;
	}
	if (check_path_ids_or_reply(req) || sysparams_alt_or_reply(req))
		return -1;
	/* Agent routes take the cluster token or their node's agent token; user
	 * routes never take the cluster token (a leaked agent token reaches no
	 * job); then who calls, then (body parsed) whether they may. */
	struct auth_request ar;
	auth_request_of(req, &ar);
	if (apply_or_reply(req, auth_check_agent(&ar)))
		return -1;
	int refused = apply_or_reply(req, auth_authenticate(&ar));
	req->caller = ar.caller;
	if (refused)
		return -1;
	if (!req->route->takes_body && router_authorize(req))
		return -1;
	return 0;
}

/* Whether the caller may: replies and returns -1 when not. */
static int router_authorize(struct request *req)
{
	struct auth_request ar;
	char *owned;

	auth_request_of(req, &ar);
	ar.caller = req->caller;
	ar.body = req->json;
	ar.project = storage_project(req, &owned);
	int rc = apply_or_reply(req, auth_authorize(&ar));
	free(owned);
	req->authorized = !rc;
	return rc;
}

void router_dispatch(struct request *req)
{
	if (req->resumed) {
		/* A parked long-poll woke up, or a read came back: its route and
		 * body are known. */
		req->route->handler(req);
		handler_done(req);
		return;
	}
	if (!req->prepared && router_prepare(req))
		return;
	if (req->replied)
		return;		/* the route's head hook answered */
	if (!req->authorized) {
		if (req->route->takes_body && parse_body_or_reply(req))
			return;
		if (router_authorize(req))
			return;
	}
	req->catalog = snapshot_acquire(req->srv->catalogs, &req->catalog_ref);
	req->route->handler(req);
	handler_done(req);
}

void router_release(struct request *req)
{
	for (int i = 0; i < ROUTE_MAX_PARAMS; i++)
		free(req->params[i]);
	json_decref(req->json);
	fields_free(req->sys.fields);
	job_rows_free(req->db_rows);
	if (req->ctx_free)
		req->ctx_free(req->ctx);
	snapshot_release(req->catalog_ref);
	snapshot_release(req->tokens_ref);
}

/* --- request ids --------------------------------------------------------------- */

static bool request_id_valid(const char *id)
{
	size_t n = 0;

	for (; id[n]; n++)
		if (n == REQUEST_ID_MAX || id[n] < 0x21 || id[n] > 0x7e)
			return false;
	return n > 0;
}

void router_set_request_id(struct request *req)
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
