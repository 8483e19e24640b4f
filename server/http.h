/*
 * http.h - the API's view of HTTP: the route table and dispatch
 * (router.c), the replies every handler uses (reply.c), and the glue to
 * the transport (front.c: httpd/, which owns sockets, framing and each
 * connection's life).
 *
 * Checks common to every route run once in the router before dispatch:
 * Google's system parameters (prettyPrint, fields, alt, $.xgafv), path and
 * method, the ids in the path, body size (413), content type, JSON syntax
 * for routes that take a body. Every reply is JSON with
 * "Content-Type: application/json; charset=UTF-8"; every error, the HTTP
 * layer's own included (400 malformed request, 408, 413, 414, 431, 501,
 * 505), is Google's envelope (api_error.h). The JSON replies of Google's
 * APIs are written pretty unless prettyPrint=false (errors always, as
 * Google's), trainplane's own routes' (health, nodes, agents) compact unless
 * prettyPrint=true, and a 2xx keeps what fields selects: the one place is
 * reply.c, for reply_json and reply_json_text alike.
 *
 * Every request has an id: the client's X-Request-Id when it is valid
 * (printable ASCII, at most REQUEST_ID_MAX characters), else 128 random
 * bits in hex. It is echoed in the X-Request-Id response header, written in
 * every log line of the request's handling, and in every error's details.
 * Each answered request is counted in api_metrics.h by route and status.
 *
 * Threads: a request's handler runs on the connection's worker thread; it
 * may block (the database). It replies, or suspends (http_suspend,
 * http_park) and runs again on the same thread once resumed.
 */
#ifndef TP_HTTP_H
#define TP_HTTP_H

#include <jansson.h>
#include <stdbool.h>

#include "api_error.h"
#include "auth.h"
#include "httpd.h"
#include "store.h"
#include "strbuf.h"

struct catalog;
struct sched;
struct store_pipe;
struct job_cache;
struct job_rows;
struct snapshot;
struct snap_ref;
struct auth_token;
struct storage_fs;
struct node_cache;
struct slurm_backends;
struct lease_batch;

/* What handlers share; owned by main(). */
struct server {
	struct store *store;
	struct snapshot *catalogs;	/* the catalog; replaced on SIGHUP */
	enum auth_mode auth_mode;
	struct snapshot *tokens;	/* struct auth_tokens, AUTH_TOKENS only */
	struct snapshot *quotas;	/* struct quotas (quota.h; NULL object: none); SIGHUP */
	struct httpd_limits http_limits;	/* max_body among them */
	const char *agent_token;	/* the cluster token of the agents */
	int sync_interval_s;	/* agents sync at least this often */
	int lease_s;		/* a node without a sync for this long is lost */
	struct sched *sched;	/* to wake the scheduler; NULL in tests */
	struct slurm_backends *slurm;	/* regions served by Slurm (slurm_backend.h); NULL: none */
	struct store_pipe *pipe;	/* pipelined reads (jobs.get); NULL: the pool */
	struct job_cache *job_cache;	/* rendered job replies (gets); NULL: none */
	const char *tls_cert_pem;	/* HTTPS when set (with tls_key_pem); else HTTP */
	const char *tls_key_pem;
	struct httpd *http;
	struct storage_fs *storage;	/* the Cloud Storage API's files; NULL: none */
	uint64_t storage_max_object;	/* bytes; 0: 5 TiB */
	bool emulator;		/* emulator mode: its controls are open (api_emulator.h) */
	/* Syncs that change nothing cost no transaction of their own (api_agent.c):
	 * what is known of the nodes, and the batched lease renewals. NULL: off. */
	struct node_cache *nodes;
	struct lease_batch *leases;
};

#define ROUTE_MAX_PARAMS 4
/* X-Request-Id: a client's is kept when 1..REQUEST_ID_MAX printable ASCII characters. */
#define REQUEST_ID_MAX 128

struct request;
typedef void (*route_handler)(struct request *req);
struct fields;

enum sys_pretty { SYS_PRETTY_DEFAULT = 0, SYS_PRETTY_ON, SYS_PRETTY_OFF };

/*
 * Google's system parameters of a request (sysparams.c), read by the router
 * before routing (alt once the route is known); zero is "not given".
 */
struct sysparams {
	enum sys_pretty pretty;	/* prettyPrint (or pp) */
	unsigned char xgafv;	/* $.xgafv: 1, 2, or 0 (2) */
	bool media;		/* alt=media on a route that serves an object's bytes */
	struct fields *fields;	/* fields: what 2xx JSON replies keep; NULL: all */
};

struct route {
	const char *method;
	const char *pattern;	/* "/v1/projects/{projectsId}/jobs/{jobsId}:cancel" */
	route_handler handler;
	const char *operation_id;	/* as in openapi.yaml */
	bool takes_body;	/* parse the body as a JSON object before dispatch */
	bool agent;		/* for agents: the cluster token or the node's agent token, nothing else */
	/*
	 * Optional: runs once the head is in and the caller is authorized,
	 * before the body is read: it may set the body's limit or a sink
	 * (req_body_sink) or reply at once (the body is then not read).
	 */
	route_handler head;
};

extern const struct route routes[];
extern const size_t routes_count;

/* A query parameter, decoded; value NULL for "?key" without '='. */
struct query_param {
	char *key;
	char *value;
};

struct request {
	struct server *srv;
	struct httpd_req *hr;	/* the transport's request */
	const char *method;
	char *path;		/* the path as sent (no query): routing decodes each segment */
	struct query_param *query;
	size_t nquery;
	bool replied;
	const struct route *route;
	char *params[ROUTE_MAX_PARAMS];	/* path variables, decoded, in pattern order */
	json_t *json;		/* the parsed body for takes_body routes, else NULL */
	const struct catalog *catalog;	/* the catalog, held for the request's life */
	struct snap_ref *catalog_ref;
	struct job_rows *db_rows;	/* a read done by the pipe while suspended (http_suspend) */
	enum store_rc db_rc;
	void *ctx;		/* a handler's state across a suspension; */
	void (*ctx_free)(void *);	/* freed with the request */
	struct sysparams sys;	/* prettyPrint, fields, alt, $.xgafv */
	const struct auth_token *caller;	/* AUTH_TOKENS: who calls; else NULL */
	struct snap_ref *tokens_ref;
	int status;		/* the HTTP status sent */
	int64_t start_us;
	char request_id[REQUEST_ID_MAX + 1];	/* X-Request-Id, the client's or made */
	bool late;		/* it arrived after the server began to stop: refused */
	bool close;		/* the reply closes the connection */
	bool resumed;		/* the handler runs again after a suspension or park */
	bool waiting;		/* this run suspended or parked it */
	bool refused;		/* the transport refused it (malformed, too slow) */
	bool prepared;		/* router_prepare() ran */
	bool authorized;	/* the caller may (router.c) */
};

/* A query parameter, or NULL when absent. Borrowed for the request's life. */
const char *req_query(struct request *req, const char *name);
const char *req_header(struct request *req, const char *name);

/* Replies with JSON (body stolen). */
void reply_json(struct request *req, int status, json_t *body);
/* Replies with JSON text already serialised (text is taken over and freed). */
void reply_json_text(struct request *req, int status, char *text, size_t len);
/* Replies with text of another content type (text is taken over and freed). */
void reply_text(struct request *req, int status, const char *content_type, char *text,
		size_t len);
/*
 * The same with more header lines (extra: whole "Name: value\r\n" lines, or
 * NULL). A 304 sends the head alone, its Content-Length len (the 200's).
 */
void reply_bytes(struct request *req, int status, const char *content_type, char *body,
		 size_t len, const char *extra);
/*
 * Replies with Google's error envelope; every one carries a
 * google.rpc.RequestInfo detail with the request's id.
 */
void reply_error(struct request *req, enum api_code code, const char *fmt, ...)
	PRINTF_LIKE(3, 4);
/* The same with an explicit HTTP status and details (stolen, may be NULL). */
void reply_error_full(struct request *req, enum api_code code, int http, json_t *details,
		      const char *message);
/* INVALID_ARGUMENT with a BadRequest detail listing vs; message as given. */
void reply_violations(struct request *req, const struct violations *vs, const char *message);
/* Maps a store failure (never STORE_OK) to the right API error. */
void reply_store_error(struct request *req, enum store_rc rc);

/*
 * Matches method and path against the route table. Returns the route and
 * fills params (newly allocated strings), or NULL; *path_known tells
 * whether some route had this path with another method.
 */
/* A project id as the routes take them: "my-project", a number, "example.com:p". */
bool project_id_valid(const char *s);
const struct route *route_match(const char *method, const char *path,
				char *params[ROUTE_MAX_PARAMS], bool *path_known);

/*
 * For a route's head hook: the body may be up to limit bytes, and with a
 * sink it goes there as it arrives (0: taken; -1: refused, the rest is not
 * read) instead of being kept.
 */
typedef int (*req_sink)(struct request *req, const char *data, size_t len);
void req_stream_body(struct request *req, uint64_t limit, req_sink sink);

/*
 * Long-poll: parks req without a reply. Its handler runs again, with
 * req->resumed set, when httpd_wake() is called with the same key, at
 * deadline_us (mono_usec() clock), or when its client half-closes,
 * whichever comes first. Returns false, parking nothing, while the server
 * shuts down: the handler replies now.
 */
bool http_park(struct request *req, const char *key, int64_t deadline_us) MUST_CHECK;
/*
 * Suspends req for work done elsewhere (a read on the store pipe): its
 * handler runs again, with req->resumed set, after http_resume(req), which
 * any thread may call, even before the handler has returned. Wakes and
 * shutdown leave it alone: its resume must come.
 */
void http_suspend(struct request *req);
void http_resume(struct request *req);

/*
 * Starts serving the API on listen ("host:port", "[v6]:port"; port 0 picks
 * one) with threads worker threads, TLS when srv has a certificate.
 * Returns NULL with err on failure.
 */
struct httpd *front_start(struct server *srv, const char *listen, int threads, char *err,
			  size_t errlen);
/* The transport's configuration for srv (its ops, limits, TLS). */
void front_config(struct server *srv, struct httpd_config *cfg);
/*
 * Serves one connection's bytes from memory, step bytes at a time (0: all
 * at once), on this thread, appending what the server sends to out; the
 * end of data is the client's FIN. Requests that suspend or park are
 * resumed at once. For the fuzzer and tests.
 */
void http_serve_memory(struct server *srv, const void *data, size_t len, size_t step,
		       struct strbuf *out);

#endif
