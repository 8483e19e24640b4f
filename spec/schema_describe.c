/*
 * schema_describe.c - the descriptors as JSON (schema.h): what
 * `trainplane-server --schemas` prints, so that a test can hold
 * openapi.yaml's component schemas to the messages the server parses and
 * renders (tests/integration/openapi.test.mjs).
 */
#include "schema.h"

#include <stdlib.h>
#include <string.h>

#define TYPE_PREFIX "type.googleapis.com/"

static const char *type_name(const char *url)
{
	return strncmp(url, TYPE_PREFIX, strlen(TYPE_PREFIX)) ? url : url + strlen(TYPE_PREFIX);
}

static const char *kind_word(enum schema_kind k)
{
	switch (k) {
	case SK_STRING: return "string";
	case SK_BYTES: return "bytes";
	case SK_BOOL: return "bool";
	case SK_INT32: return "int32";
	case SK_INT64: return "int64";
	case SK_DOUBLE: return "double";
	case SK_ENUM: return "enum";
	case SK_MESSAGE: return "message";
	case SK_DURATION: return "duration";
	case SK_TIMESTAMP: return "timestamp";
	case SK_STRUCT: return "value";
	}
	return "?";
}

static bool seen(const struct schema_message *const *list, size_t n,
		 const struct schema_message *m)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == m)
			return true;
	return false;
}

/* Appends m and every message below it not yet in *list. */
static void collect(const struct schema_message *m, const struct schema_message ***list,
		    size_t *n)
{
	if (seen(*list, *n, m))
		return;
	*list = xrealloc(*list, (*n + 1) * sizeof(**list));
	(*list)[(*n)++] = m;
	for (size_t i = 0; i < m->count; i++)
		if (m->fields[i].kind == SK_MESSAGE)
			collect(m->fields[i].message, list, n);
}

static json_t *describe_field(const struct schema_field *f)
{
	json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:b, s:b, s:b}", "name", f->json, "proto",
			      f->proto, "number", f->number, "kind", kind_word(f->kind),
			      "repeated", f->repeated, "map", f->map, "outputOnly", f->output_only);

	if (f->kind == SK_MESSAGE)
		json_object_set_new(o, "message", json_string(type_name(f->message->type_url)));
	if (f->kind == SK_ENUM) {
		json_t *names = json_array();
		for (size_t i = 0; i < f->enumeration->count; i++)
			json_array_append_new(names, json_string(f->enumeration->names[i]));
		json_object_set_new(o, "enum", names);
		json_object_set_new(o, "enumType",
				    json_string(type_name(f->enumeration->type_url)));
	}
	return o;
}

json_t *schema_describe(const struct schema_message *const *roots, size_t n)
{
	const struct schema_message **list = NULL;
	size_t count = 0;
	json_t *messages = json_array();

	for (size_t i = 0; i < n; i++)
		collect(roots[i], &list, &count);
	for (size_t i = 0; i < count; i++) {
		json_t *fields = json_array();
		for (size_t k = 0; k < list[i]->count; k++)
			json_array_append_new(fields, describe_field(&list[i]->fields[k]));
		json_array_append_new(messages, json_pack("{s:s, s:o}", "type",
							  type_name(list[i]->type_url),
							  "fields", fields));
	}
	free(list);
	return json_pack("{s:o}", "messages", messages);
}
