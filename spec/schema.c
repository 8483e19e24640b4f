#include "schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "wire.h"

const struct schema_field *schema_find_field(const struct schema_message *msg, const char *name)
{
	for (size_t i = 0; i < msg->count; i++)
		if (!strcmp(msg->fields[i].json, name) || !strcmp(msg->fields[i].proto, name))
			return &msg->fields[i];
	return NULL;
}

const struct schema_field *schema_field_at(const struct schema_message *msg, const char *path)
{
	const struct schema_field *f = NULL;
	char name[128];

	while (msg && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof(name))
			return NULL;
		memcpy(name, path, n);
		name[n] = '\0';
		f = NULL;
		for (size_t i = 0; i < msg->count && !f; i++)
			if (!strcmp(msg->fields[i].json, name))
				f = &msg->fields[i];
		if (!f)
			return NULL;
		path += n;
		if (*path == '.')
			path++;
		msg = f->kind == SK_MESSAGE ? f->message : NULL;
	}
	return *path ? NULL : f;
}

const char *schema_kind_name(const struct schema_field *f)
{
	switch (f->kind) {
	case SK_STRING: return "TYPE_STRING";
	case SK_BYTES: return "TYPE_BYTES";
	case SK_BOOL: return "TYPE_BOOL";
	case SK_INT32: return "TYPE_INT32";
	case SK_INT64: return "TYPE_INT64";
	case SK_DOUBLE: return "TYPE_DOUBLE";
	case SK_ENUM: return f->enumeration->type_url;
	case SK_MESSAGE: return f->message->type_url;
	case SK_DURATION: return "type.googleapis.com/google.protobuf.Duration";
	case SK_TIMESTAMP: return "type.googleapis.com/google.protobuf.Timestamp";
	case SK_STRUCT: return "type.googleapis.com/google.protobuf.Value";
	}
	return "?";
}

/* Invalid value at 'path' (TYPE), <the value as JSON, shortened> */
static void invalid_value(struct violations *out, const char *path, const struct schema_field *f,
			  const json_t *v)
{
	char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	size_t len = text ? strlen(text) : 0;

	if (len > 80)
		strcpy(text + 77, "...");
	violations_add(out, path, "Invalid value at '%s' (%s), %s", path, schema_kind_name(f),
		       text ? text : "?");
	free(text);
}

static json_t *normalize_scalar(const struct schema_field *f, const json_t *v, const char *path,
				struct violations *out)
{
	int64_t i64;
	char buf[48];

	switch (f->kind) {
	case SK_STRING:
		if (json_is_string(v))
			return json_incref((json_t *)v);
		break;
	case SK_BYTES: {
		if (!json_is_string(v))
			break;
		const char *s = json_string_value(v);
		size_t n = strlen(s);
		char *scratch = xmalloc(n + 1);
		/* Proto JSON accepts standard or URL-safe base64. */
		long ok = wire_base64_decode(s, scratch, n + 1, false);
		if (ok < 0)
			ok = wire_base64_decode(s, scratch, n + 1, true);
		free(scratch);
		if (ok >= 0)
			return json_incref((json_t *)v);
		break;
	}
	case SK_BOOL:
		if (json_is_boolean(v))
			return json_incref((json_t *)v);
		break;
	case SK_INT32:
		if (!wire_int64_get(v, &i64) && i64 >= INT32_MIN && i64 <= INT32_MAX)
			return json_integer(i64);
		break;
	case SK_INT64:
		if (!wire_int64_get(v, &i64)) {
			snprintf(buf, sizeof(buf), "%lld", (long long)i64);
			return json_string(buf);
		}
		break;
	case SK_DOUBLE:
		if (json_is_number(v))
			return json_real(json_number_value(v));
		if (json_is_string(v)) {
			const char *s = json_string_value(v);
			char *end;
			double d = strtod(s, &end);
			if (*s && !*end && isfinite(d))
				return json_real(d);
		}
		break;
	case SK_ENUM:
		if (json_is_string(v)) {
			const char *s = json_string_value(v);
			for (size_t i = 0; i < f->enumeration->count; i++)
				if (!strcmp(s, f->enumeration->names[i]))
					return json_incref((json_t *)v);
		} else if (json_is_integer(v) && f->enumeration->numbers) {
			json_int_t n = json_integer_value(v);
			for (size_t i = 0; i < f->enumeration->count; i++)
				if (f->enumeration->numbers[i] == n)
					return json_string(f->enumeration->names[i]);
		}
		break;
	case SK_DURATION: {
		int64_t ns;
		if (json_is_string(v) && !wire_duration_parse(json_string_value(v), &ns)) {
			wire_duration_format(ns, buf, sizeof(buf));
			return json_string(buf);
		}
		break;
	}
	case SK_TIMESTAMP: {
		int64_t us;
		if (json_is_string(v) && !wire_time_parse(json_string_value(v), &us)) {
			wire_time_format(us, buf, sizeof(buf));
			return json_string(buf);
		}
		break;
	}
	case SK_STRUCT:
		return json_incref((json_t *)v);
	case SK_MESSAGE:
		if (json_is_object(v))
			return schema_normalize(f->message, v, path, out);
		break;
	}
	invalid_value(out, path, f, v);
	return NULL;
}

/* proto3 leaves default values out of its JSON. */
static bool is_default(const struct schema_field *f, const json_t *v)
{
	switch (f->kind) {
	case SK_STRING:
	case SK_BYTES:
		return !*json_string_value(v);
	case SK_BOOL:
		return json_is_false(v);
	case SK_INT32:
		return json_integer_value(v) == 0;
	case SK_INT64:
		return !strcmp(json_string_value(v), "0");
	case SK_DOUBLE:
		return json_real_value(v) == 0.0;
	case SK_ENUM:
		return !strcmp(json_string_value(v), f->enumeration->names[0]);
	default:
		return false;
	}
}

static json_t *normalize_field(const struct schema_field *f, const json_t *v, const char *path,
			       struct violations *out)
{
	size_t before = out->n;

	if (f->map) {
		const char *key;
		json_t *item, *res = json_object();
		if (!json_is_object(v)) {
			invalid_value(out, path, f, v);
			json_decref(res);
			return NULL;
		}
		json_object_foreach((json_t *)v, key, item) {
			char *sub = xasprintf("%s[%s]", path, key);
			json_t *n = normalize_scalar(f, item, sub, out);
			free(sub);
			if (n)
				json_object_set_new(res, key, n);
		}
		if (out->n != before) {
			json_decref(res);
			return NULL;
		}
		return res;
	}
	if (f->repeated) {
		size_t i;
		json_t *item, *res = json_array();
		if (!json_is_array(v)) {
			invalid_value(out, path, f, v);
			json_decref(res);
			return NULL;
		}
		json_array_foreach(v, i, item) {
			char *sub = xasprintf("%s[%zu]", path, i);
			json_t *n = normalize_scalar(f, item, sub, out);
			free(sub);
			if (n)
				json_array_append_new(res, n);
		}
		if (out->n != before) {
			json_decref(res);
			return NULL;
		}
		return res;
	}
	return normalize_scalar(f, v, path, out);
}

json_t *schema_normalize(const struct schema_message *msg, const json_t *in, const char *root,
			 struct violations *out)
{
	const char *key;
	json_t *v;
	json_t *res = json_object();
	size_t before = out->n;

	if (!json_is_object(in)) {
		struct schema_field whole = { "", "", SK_MESSAGE, .message = msg };
		invalid_value(out, root, &whole, in);
		json_decref(res);
		return NULL;
	}
	json_object_foreach((json_t *)in, key, v) {
		const struct schema_field *f = schema_find_field(msg, key);
		if (!f) {
			violations_add(out, root,
				       "Invalid JSON payload received. Unknown name \"%s\" at '%s': "
				       "Cannot find field.", key, root);
			continue;
		}
		if (f->output_only || json_is_null(v))
			continue;
		if (json_object_get(res, f->json)) {
			violations_add(out, root,
				       "Invalid JSON payload received. Duplicate field \"%s\" at '%s'.",
				       f->json, root);
			continue;
		}
		char *path = *root ? xasprintf("%s.%s", root, f->proto) : xstrdup(f->proto);
		json_t *n = normalize_field(f, v, path, out);
		free(path);
		if (!n)
			continue;
		if ((f->repeated || f->map) ? json_is_array(n) ? !json_array_size(n) : !json_object_size(n)
					    : is_default(f, n))
			json_decref(n);
		else
			json_object_set_new(res, f->json, n);
	}
	if (out->n != before) {
		json_decref(res);
		return NULL;
	}
	return res;
}
