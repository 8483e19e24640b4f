/*
 * api_error.h - google.rpc codes and the error envelope of Google's JSON APIs:
 *
 *   {"error":{"code":<http>,"message":"...","status":"INVALID_ARGUMENT",
 *             "details":[{"@type":"type.googleapis.com/google.rpc.BadRequest",
 *                         "fieldViolations":[{"field":"...","description":"..."}]}]}}
 */
#ifndef TP_API_ERROR_H
#define TP_API_ERROR_H

#include <jansson.h>

#include "violation.h"

enum api_code {
	API_OK = 0,
	API_CANCELLED = 1,
	API_UNKNOWN = 2,
	API_INVALID_ARGUMENT = 3,
	API_DEADLINE_EXCEEDED = 4,
	API_NOT_FOUND = 5,
	API_ALREADY_EXISTS = 6,
	API_PERMISSION_DENIED = 7,
	API_RESOURCE_EXHAUSTED = 8,
	API_FAILED_PRECONDITION = 9,
	API_ABORTED = 10,
	API_OUT_OF_RANGE = 11,
	API_UNIMPLEMENTED = 12,
	API_INTERNAL = 13,
	API_UNAVAILABLE = 14,
	API_DATA_LOSS = 15,
	API_UNAUTHENTICATED = 16,
};

#define BAD_REQUEST_TYPE "type.googleapis.com/google.rpc.BadRequest"

/* "INVALID_ARGUMENT", ... */
const char *api_code_name(enum api_code code);
/* The HTTP status google.rpc.Code maps to (INVALID_ARGUMENT 400, ...). */
int api_code_http(enum api_code code);

/*
 * The envelope as a new JSON object. http 0 means api_code_http(code).
 * details (a JSON array, may be NULL) is stolen.
 */
json_t *api_error_json(enum api_code code, int http, const char *message, json_t *details);

#define REQUEST_INFO_TYPE "type.googleapis.com/google.rpc.RequestInfo"

/* {"@type": RequestInfo, "requestId": id}, as a new object. */
json_t *api_request_info_detail(const char *request_id);

/* [{"@type": BadRequest, "fieldViolations": [...]}] for vs, as a new array. */
json_t *api_bad_request_details(const struct violations *vs);

/*
 * The ml v1 message for field violations: one "Field: <f> Error: <d>"
 * per violation, joined by newlines. Caller frees.
 */
char *api_violations_message(const struct violations *vs);

#endif
