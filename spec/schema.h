/*
 * schema.h - proto3 JSON messages described as data, and the one routine
 * that checks and normalises a request body against such a description.
 *
 * Each API surface describes its messages (server/ml_types.c, ...). The
 * normaliser accepts what Google's JSON front end accepts: lowerCamelCase
 * or snake_case names, int64 as numbers or strings, null for "unset". It
 * refuses unknown fields, wrong JSON types and unknown enum names with the
 * wording Google's front end uses, e.g.
 *   Invalid JSON payload received. Unknown name "masterTypo" at 'job.training_input': Cannot find field.
 *   Invalid value at 'job.training_input.worker_count' (TYPE_INT64), "abc"
 * and returns a canonical copy: lowerCamelCase names, int64 as strings,
 * durations canonical, output-only fields dropped, and default values
 * (0, "", false, the first enum value, empty lists) left out as proto3 does.
 */
#ifndef TP_SCHEMA_H
#define TP_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>

#include "violation.h"

enum schema_kind {
	SK_STRING,
	SK_BYTES,	/* base64 text */
	SK_BOOL,
	SK_INT32,
	SK_INT64,
	SK_DOUBLE,
	SK_ENUM,
	SK_MESSAGE,
	SK_DURATION,	/* google.protobuf.Duration: "3600s" */
	SK_TIMESTAMP,	/* google.protobuf.Timestamp: RFC 3339 */
	SK_STRUCT,	/* google.protobuf.Value/Struct: any JSON, kept as is */
};

struct schema_enum {
	const char *type_url;	/* for messages: type.googleapis.com/...Enum */
	const char *const *names;	/* the first is the default (number 0) */
	size_t count;
	/* The proto numbers of names, in order, when known: proto3 JSON also
	 * takes an enum as its number (the gax clients send numbers). NULL:
	 * names only. */
	const int *numbers;
};

struct schema_message;

struct schema_field {
	const char *json;	/* lowerCamelCase */
	const char *proto;	/* snake_case, used in error paths */
	enum schema_kind kind;
	unsigned repeated : 1;
	unsigned map : 1;	/* map<string, kind> */
	unsigned output_only : 1;	/* ignored on input */
	const struct schema_message *message;	/* SK_MESSAGE */
	const struct schema_enum *enumeration;	/* SK_ENUM */
};

struct schema_message {
	const char *type_url;	/* type.googleapis.com/google.cloud.ml.v1.TrainingInput */
	const struct schema_field *fields;
	size_t count;
};

/*
 * Checks in (borrowed) against msg. root is the path of the body in error
 * messages ("job"). Returns a new normalised object, or NULL with one or
 * more violations appended to out (field = proto path, description = the
 * complete message).
 */
json_t *schema_normalize(const struct schema_message *msg, const json_t *in, const char *root,
			 struct violations *out);

/* The field of msg whose JSON or proto name is name, or NULL. */
const struct schema_field *schema_find_field(const struct schema_message *msg,
					     const char *name);

#endif
