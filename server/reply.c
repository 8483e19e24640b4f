/*
 * reply.c - the replies every handler uses: JSON, text, Google's error
 * envelope. They hand the reply to the transport (httpd_respond), which
 * sends it once the handler returns. Every JSON reply passes through
 * send_json(), the one place prettyPrint and fields apply.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "http_internal.h"
#include "log.h"

#define JSON_TYPE "application/json; charset=UTF-8"

static void send_text(struct request *req, int status, const char *content_type, char *text,
		      size_t len, const char *more)
{
	struct strbuf extra = STRBUF_INIT;

	if (req->replied) {
		free(text);
		return;
	}
	req->replied = true;
	req->status = status;
	sb_addf(&extra, "X-Request-Id: %s\r\n", req->request_id);
	if (more)
		sb_addstr(&extra, more);
	if (status == 405) {
		/* Tell the client what this path does take. */
		sb_addstr(&extra, "Allow: ");
		size_t empty = extra.len;
		for (size_t i = 0; i < routes_count; i++) {
			char *params[ROUTE_MAX_PARAMS] = { 0 };
			bool known;
			const struct route *r = route_match(routes[i].method, req->path, params, &known);
			for (int k = 0; k < ROUTE_MAX_PARAMS; k++)
				free(params[k]);
			if (r && !strstr(sb_str(&extra) + empty, r->method))
				sb_addf(&extra, "%s%s", extra.len > empty ? ", " : "", r->method);
		}
		sb_addstr(&extra, "\r\n");
	}
	httpd_respond(req->hr, status, content_type, text, len, extra.buf, req->close);
	sb_release(&extra);
}

/*
 * JSON text as the handler made it (compact) goes out as it is unless the
 * request wants it pretty (the default) or a 2xx filtered by fields: then
 * one pass re-lays it (fields.c), with no tree built.
 */
static void send_json(struct request *req, int status, char *text, size_t len)
{
	const struct fields *f = status < 300 ? req->sys.fields : NULL;
	bool pretty = sysparams_pretty(req, status);

	if (!req->replied && (pretty || f)) {
		struct strbuf sb = STRBUF_INIT;
		if (!json_rewrite(text, len, f, pretty, &sb)) {
			free(text);
			len = sb.len;
			text = sb_detach(&sb);
		} else {
			log_error("%s %s: the reply is not JSON; sent as it is", req->method, req->path);
			sb_release(&sb);
		}
	}
	send_text(req, status, JSON_TYPE, text, len, NULL);
}

void reply_json_text(struct request *req, int status, char *text, size_t len)
{
	send_json(req, status, text, len);
}

void reply_text(struct request *req, int status, const char *content_type, char *text,
		size_t len)
{
	send_text(req, status, content_type, text, len, NULL);
}

void reply_bytes(struct request *req, int status, const char *content_type, char *body,
		 size_t len, const char *extra)
{
	send_text(req, status, content_type, body, len, extra);
}

void reply_json(struct request *req, int status, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	send_json(req, status, text, strlen(text));
}

/*
 * $.xgafv=1, the error format of Google's older clients: the same envelope
 * with the errors[] list (message, domain, reason) after the message.
 */
static json_t *error_format_1(json_t *body, enum api_code code)
{
	json_t *err = json_object_get(body, "error"), *v1 = json_object();
	const char *key;
	json_t *v;

	json_object_foreach(err, key, v) {
		json_object_set(v1, key, v);
		if (!strcmp(key, "message"))
			json_object_set_new(v1, "errors",
					    json_pack("[{s:O, s:s, s:s}]", "message", v, "domain", "global",
						      "reason", sysparams_error_reason(code)));
	}
	json_decref(body);
	return json_pack("{s:o}", "error", v1);
}

void reply_error_full(struct request *req, enum api_code code, int http, json_t *details,
		      const char *message)
{
	if (!details)
		details = json_array();
	json_array_append_new(details, api_request_info_detail(req->request_id));
	json_t *body = api_error_json(code, http, message, details);
	int status = http ? http : api_code_http(code);

	if (req->sys.xgafv == 1)
		body = error_format_1(body, code);

	if (status >= 500 && !req->refused)
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
	case STORE_RETRY:
		reply_error(req, API_ABORTED,
			    "The request conflicted with concurrent changes several times in a row. "
			    "Retry the request.");
		break;
	default:
		reply_error(req, API_INTERNAL, "Internal error encountered.");
	}
}
