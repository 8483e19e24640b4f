/*
 * schema_render.c - the canonical proto3 JSON of a message (schema.h).
 *
 * Every reply that shows a stored spec renders it here, from the same
 * descriptors that checked it on the way in: jobs.create, jobs.get and
 * jobs.list give the same bytes for the same job, whatever order and
 * spacing the database kept it in.
 */
#include "schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

void schema_format_double(double d, char *buf, size_t len)
{
	if (d == 0) {
		snprintf(buf, len, "0");
		return;
	}
	/* A whole number prints whole, without exponent, up to 2^53 and beyond
	 * to 1e21 (where JavaScript's Number#toString switches too). */
	if (d == floor(d) && fabs(d) < 1e21) {
		snprintf(buf, len, "%.0f", d);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	/* "1e-07" -> "1e-7", "1e+300" stays: C's exponent has at least two digits. */
	char *e = strchr(buf, 'e');
	if (e && (e[1] == '-' || e[1] == '+') && e[2] == '0' && e[3])
		memmove(e + 2, e + 3, strlen(e + 3) + 1);
}

void schema_add_double(struct strbuf *sb, double d)
{
	char buf[40];

	schema_format_double(d, buf, sizeof(buf));
	sb_addstr(sb, buf);
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of obj, sorted; *n set. Caller frees the array (not the keys). */
static const char **sorted_keys(const json_t *obj, size_t *n)
{
	const char **keys = xmalloc((json_object_size(obj) + 1) * sizeof(*keys));
	const char *key;
	json_t *v;
	size_t i = 0;

	json_object_foreach((json_t *)obj, key, v)
		keys[i++] = key;
	qsort(keys, i, sizeof(*keys), key_cmp);
	*n = i;
	return keys;
}

/* Any JSON value (google.protobuf.Value): compact, object keys sorted. */
static void add_value(struct strbuf *sb, const json_t *v)
{
	size_t i, n;

	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char **keys = sorted_keys(v, &n);
		sb_addch(sb, '{');
		for (i = 0; i < n; i++) {
			if (i)
				sb_addch(sb, ',');
			sb_add_json_str(sb, keys[i]);
			sb_addch(sb, ':');
			add_value(sb, json_object_get(v, keys[i]));
		}
		sb_addch(sb, '}');
		free(keys);
		break;
	}
	case JSON_ARRAY:
		sb_addch(sb, '[');
		for (i = 0; i < json_array_size(v); i++) {
			if (i)
				sb_addch(sb, ',');
			add_value(sb, json_array_get(v, i));
		}
		sb_addch(sb, ']');
		break;
	case JSON_STRING:
		sb_add_json_str(sb, json_string_value(v));
		break;
	case JSON_INTEGER:	/* a Value's numbers are doubles */
		schema_add_double(sb, (double)json_integer_value(v));
		break;
	case JSON_REAL:
		schema_add_double(sb, json_real_value(v));
		break;
	case JSON_TRUE:
		sb_addstr(sb, "true");
		break;
	case JSON_FALSE:
		sb_addstr(sb, "false");
		break;
	default:
		sb_addstr(sb, "null");
	}
}

/* A number of a JSON number or a numeric string (proto3 JSON takes both). */
static bool number_of(const json_t *v, double *d)
{
	if (json_is_number(v)) {
		*d = json_number_value(v);
		return isfinite(*d);
	}
	if (json_is_string(v) && json_string_length(v)) {
		char *end;
		*d = strtod(json_string_value(v), &end);
		return !*end && isfinite(*d);
	}
	return false;
}

/* The enum name of v (a name, or a number where the numbers are known), or NULL. */
static const char *enum_name(const struct schema_enum *e, const json_t *v)
{
	if (json_is_string(v)) {
		for (size_t i = 0; i < e->count; i++)
			if (!strcmp(e->names[i], json_string_value(v)))
				return e->names[i];
	} else if (json_is_number(v) && e->numbers) {
		int64_t n;
		if (wire_int64_get(v, &n))
			return NULL;
		for (size_t i = 0; i < e->count; i++)
			if (e->numbers[i] == n)
				return e->names[i];
	}
	return NULL;
}

/*
 * One scalar (or message) value of field f. With omit_default, a default
 * value renders nothing and returns false (proto3 leaves it out of a
 * message; in a list or map every element is rendered). Returns whether
 * something was appended.
 */
static bool add_scalar(struct strbuf *sb, const struct schema_field *f, const json_t *v,
		       bool omit_default)
{
	int64_t i64;
	double d;
	const char *s;

	switch (f->kind) {
	case SK_STRING:
	case SK_BYTES:
	case SK_DURATION:
	case SK_TIMESTAMP:
		if (!json_is_string(v) || (omit_default && !json_string_length(v)))
			return false;
		sb_add_json_str(sb, json_string_value(v));
		return true;
	case SK_BOOL:
		if (!json_is_boolean(v) || (omit_default && json_is_false(v)))
			return false;
		sb_addstr(sb, json_is_true(v) ? "true" : "false");
		return true;
	case SK_INT32:
	case SK_INT64:
		if (wire_int64_get(v, &i64) || (omit_default && !i64))
			return false;
		sb_addf(sb, f->kind == SK_INT64 ? "\"%lld\"" : "%lld", (long long)i64);
		return true;
	case SK_DOUBLE:
		if (!number_of(v, &d) || (omit_default && d == 0))
			return false;
		schema_add_double(sb, d);
		return true;
	case SK_ENUM:
		s = enum_name(f->enumeration, v);
		if (!s || (omit_default && s == f->enumeration->names[0]))
			return false;
		sb_add_json_str(sb, s);
		return true;
	case SK_MESSAGE:
		if (!json_is_object(v))
			return false;
		schema_render(sb, f->message, v);
		return true;
	case SK_STRUCT:
		add_value(sb, v);
		return true;
	}
	return false;
}

/* A repeated field's list: elements that do not render are left out. */
static void add_list(struct strbuf *sb, const struct schema_field *f, const json_t *list)
{
	bool first = true;

	sb_addch(sb, '[');
	for (size_t i = 0; i < json_array_size(list); i++) {
		size_t mark = sb->len;
		if (!first)
			sb_addch(sb, ',');
		if (add_scalar(sb, f, json_array_get(list, i), false))
			first = false;
		else
			sb_setlen(sb, mark);
	}
	sb_addch(sb, ']');
}

/* A map field: keys sorted. */
static void add_map(struct strbuf *sb, const struct schema_field *f, const json_t *map)
{
	size_t n, shown = 0;
	const char **keys = sorted_keys(map, &n);

	sb_addch(sb, '{');
	for (size_t i = 0; i < n; i++) {
		size_t mark = sb->len;
		if (shown)
			sb_addch(sb, ',');
		sb_add_json_str(sb, keys[i]);
		sb_addch(sb, ':');
		if (add_scalar(sb, f, json_object_get(map, keys[i]), false))
			shown++;
		else
			sb_setlen(sb, mark);
	}
	sb_addch(sb, '}');
	free(keys);
}

void schema_render(struct strbuf *sb, const struct schema_message *msg, const json_t *obj)
{
	bool first = true;

	sb_addch(sb, '{');
	for (size_t i = 0; i < msg->count; i++) {
		const struct schema_field *f = &msg->fields[i];
		const json_t *v = json_object_get(obj, f->json);
		size_t mark = sb->len;
		bool shown;

		if (!v || json_is_null(v))
			continue;
		if (!first)
			sb_addch(sb, ',');
		sb_add_json_str(sb, f->json);
		sb_addch(sb, ':');
		if (f->map) {
			shown = json_is_object(v) && json_object_size(v);
			if (shown)
				add_map(sb, f, v);
		} else if (f->repeated) {
			shown = json_is_array(v) && json_array_size(v);
			if (shown)
				add_list(sb, f, v);
		} else {
			shown = add_scalar(sb, f, v, !f->presence);
		}
		if (shown)
			first = false;
		else
			sb_setlen(sb, mark);
	}
	sb_addch(sb, '}');
}

bool schema_render_field(struct strbuf *sb, const struct schema_field *f, const json_t *v)
{
	if (f->map) {
		if (!json_is_object(v))
			return false;
		add_map(sb, f, v);
		return true;
	}
	if (f->repeated) {
		if (!json_is_array(v))
			return false;
		add_list(sb, f, v);
		return true;
	}
	return add_scalar(sb, f, v, false);
}

