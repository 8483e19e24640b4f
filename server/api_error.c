#include "api_error.h"

#include <stdlib.h>

#include "strbuf.h"
#include "wire.h"

static const struct {
	const char *name;
	int http;
} codes[] = {
	[API_OK] = { "OK", 200 },
	[API_CANCELLED] = { "CANCELLED", 499 },
	[API_UNKNOWN] = { "UNKNOWN", 500 },
	[API_INVALID_ARGUMENT] = { "INVALID_ARGUMENT", 400 },
	[API_DEADLINE_EXCEEDED] = { "DEADLINE_EXCEEDED", 504 },
	[API_NOT_FOUND] = { "NOT_FOUND", 404 },
	[API_ALREADY_EXISTS] = { "ALREADY_EXISTS", 409 },
	[API_PERMISSION_DENIED] = { "PERMISSION_DENIED", 403 },
	[API_RESOURCE_EXHAUSTED] = { "RESOURCE_EXHAUSTED", 429 },
	[API_FAILED_PRECONDITION] = { "FAILED_PRECONDITION", 400 },
	[API_ABORTED] = { "ABORTED", 409 },
	[API_OUT_OF_RANGE] = { "OUT_OF_RANGE", 400 },
	[API_UNIMPLEMENTED] = { "UNIMPLEMENTED", 501 },
	[API_INTERNAL] = { "INTERNAL", 500 },
	[API_UNAVAILABLE] = { "UNAVAILABLE", 503 },
	[API_DATA_LOSS] = { "DATA_LOSS", 500 },
	[API_UNAUTHENTICATED] = { "UNAUTHENTICATED", 401 },
};

const char *api_code_name(enum api_code code)
{
	return (unsigned)code < ARRAY_SIZE(codes) ? codes[code].name : "UNKNOWN";
}

int api_code_http(enum api_code code)
{
	return (unsigned)code < ARRAY_SIZE(codes) ? codes[code].http : 500;
}

json_t *api_error_json(enum api_code code, int http, const char *message, json_t *details)
{
	json_t *err = json_object();

	json_object_set_new(err, "code", json_integer(http ? http : api_code_http(code)));
	json_t *msg = json_string(message);
	if (!msg) {
		/* A message quoting the user's bytes must still be valid JSON. */
		char *clean = wire_utf8_sanitize(message);
		msg = json_string(clean);
		free(clean);
	}
	json_object_set_new(err, "message", msg);
	json_object_set_new(err, "status", json_string(api_code_name(code)));
	if (details && json_array_size(details))
		json_object_set_new(err, "details", details);
	else
		json_decref(details);
	return json_pack("{s:o}", "error", err);
}

json_t *api_request_info_detail(const char *request_id)
{
	return json_pack("{s:s, s:s}", "@type", REQUEST_INFO_TYPE, "requestId", request_id);
}

json_t *api_bad_request_details(const struct violations *vs)
{
	json_t *list = json_array();

	for (size_t i = 0; i < vs->n; i++)
		json_array_append_new(list, json_pack("{s:s, s:s}", "field", vs->v[i].field,
						      "description", vs->v[i].description));
	return json_pack("[{s:s, s:o}]", "@type", BAD_REQUEST_TYPE, "fieldViolations", list);
}

char *api_violations_message(const struct violations *vs)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < vs->n; i++)
		sb_addf(&sb, "%sField: %s Error: %s", i ? "\n" : "", vs->v[i].field,
			vs->v[i].description);
	return sb_detach(&sb);
}
