/*
 * schema.h - proto3 JSON messages described as data (the descriptors), and
 * what is done with them: a request body checked and normalised against
 * its message (schema_normalize), a stored message rendered canonically
 * (schema_render), a --config file of the CLI read through them
 * (cli/body.c walks the same fields), and the descriptors printed as JSON
 * for the test that holds openapi.yaml to them (schema_describe).
 *
 * Each API surface describes its messages (spec/ml_types.c,
 * spec/vertex_types.c), fields in proto field order: by field number where
 * Google's .proto files give one, then (ml v1 only: its last public protos
 * predate half its fields) the fields without a public number, in the order
 * of the REST reference. The normaliser accepts what Google's JSON front end accepts: lowerCamelCase
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

#include "strbuf.h"
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
	/* Explicit presence (proto3 `optional`): a value that is set renders even
	 * when it is the default, e.g. consumedMLUnits 0 of a job that ran. */
	unsigned presence : 1;
	const struct schema_message *message;	/* SK_MESSAGE */
	const struct schema_enum *enumeration;	/* SK_ENUM */
	int number;		/* the proto field number; 0 where no public .proto gives it */
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

/*
 * The field at a dotted path of JSON names below msg ("trainingInput.
 * masterConfig.acceleratorConfig.type"), through message fields; NULL when
 * some step is not a field.
 */
const struct schema_field *schema_field_at(const struct schema_message *msg, const char *path);

/* "TYPE_STRING", or the type URL of the field's message or enum, as Google's errors name it. */
const char *schema_kind_name(const struct schema_field *f);

/*
 * Canonical rendering (spec/schema_render.c): obj (borrowed; a normalised
 * body, or a stored one read back) appended to sb as proto3 JSON: fields in
 * msg's order, output-only fields included, default values left out (0,
 * "", false, the first enum value, empty lists and maps; a message field
 * that is present is rendered, {} when empty), int64 as strings, doubles
 * in their shortest round-trip form (0.1, and 1 for a whole double), map
 * keys sorted, google.protobuf.Value content compact with sorted object
 * keys. Members of obj that msg does not describe, and values of the wrong
 * JSON type, are left out. The same message always gives the same bytes.
 */
void schema_render(struct strbuf *sb, const struct schema_message *msg, const json_t *obj);

/*
 * One field's value v alone, as schema_render() renders it (a list, a map,
 * or one value, defaults included). Returns false, appending nothing, when
 * v is of the wrong JSON type.
 */
bool schema_render_field(struct strbuf *sb, const struct schema_field *f, const json_t *v);

/*
 * schema_render() of a stored JSON text (e.g. a jsonb column read back),
 * straight from its bytes (spec/schema_render_text.c): the bytes
 * schema_render() gives for the text read with JSON_DECODE_INT_AS_REAL.
 * Returns 0, or -1 (and renders {}) when text is not a JSON object.
 */
int schema_render_text(struct strbuf *sb, const struct schema_message *msg, const char *text);

/*
 * schema_render_field() of a stored JSON text: one field's value. Returns
 * the number of elements of a list or map (0: empty, nothing worth
 * showing), 1 for a single value, or -1 (nothing appended) when the text
 * is not of the field's type.
 */
long schema_render_field_text(struct strbuf *sb, const struct schema_field *f, const char *text);

/* A double in its shortest round-trip form: "0.1", "1", "-2.5e-07" (buf of 32). */
void schema_format_double(double d, char *buf, size_t len);
/* The same, appended to sb. */
void schema_add_double(struct strbuf *sb, double d);

/*
 * The descriptors reachable from roots as JSON (spec/schema_describe.c):
 * {"messages": [{"type": "google.cloud.ml.v1.Job", "fields": [{"name",
 * "proto", "number", "kind", "repeated", "map", "outputOnly", "message"?,
 * "enum"?: [names]}]}]}, each message once. New reference.
 */
json_t *schema_describe(const struct schema_message *const *roots, size_t n);

#endif
