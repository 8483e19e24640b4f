#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

static const struct config_key *find_key(const struct config_key *keys, size_t n,
					 const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

/* Sets one key from text. Returns NULL on success, else a reason (static or in why). */
static const char *set_value(const struct config_key *k, void *target, const char *value,
			     char *why, size_t whylen)
{
	char *field = (char *)target + k->offset;

	if (k->check && value) {
		const char *bad = k->check(value);
		if (bad)
			return bad;
	}
	switch (k->type) {
	case CONFIG_STRING: {
		char **dst = (char **)field;
		free(*dst);
		*dst = value ? xstrdup(value) : NULL;
		return NULL;
	}
	case CONFIG_INT: {
		char *end;
		long v;
		if (!value)
			return "a value is required";
		errno = 0;
		v = strtol(value, &end, 10);
		if (errno || end == value || *end) {
			snprintf(why, whylen, "'%s' is not an integer", value);
			return why;
		}
		if (v < k->min || v > k->max) {
			snprintf(why, whylen, "%ld is out of range [%ld, %ld]", v, k->min, k->max);
			return why;
		}
		*(int *)field = (int)v;
		return NULL;
	}
	case CONFIG_BOOL: {
		bool b;
		if (!value || parse_bool(value, &b)) {
			snprintf(why, whylen, "'%s' is not a boolean (true or false)",
				 value ? value : "");
			return why;
		}
		*(bool *)field = b;
		return NULL;
	}
	}
	return "unknown key type";
}

static int load_file(const struct config_key *keys, size_t nkeys, void *target,
		     const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	yaml_parser_t parser;
	yaml_event_t ev;
	int rc = -1, depth = 0;
	char *key = NULL;
	bool done = false;
	char why[256];

	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			snprintf(err, errlen, "%s:%zu:%zu: YAML syntax error: %s", path,
				 parser.problem_mark.line + 1, parser.problem_mark.column + 1,
				 parser.problem ? parser.problem : "unknown");
			goto out;
		}
		size_t line = ev.start_mark.line + 1, col = ev.start_mark.column + 1;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_MAPPING_START_EVENT:
			if (depth++ > 0 || key) {
				snprintf(err, errlen, "%s:%zu:%zu: key '%s': expected a scalar value",
					 path, line, col, key ? key : "?");
				yaml_event_delete(&ev);
				goto out;
			}
			break;
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_SEQUENCE_START_EVENT:
			snprintf(err, errlen, "%s:%zu:%zu: %s%s%sexpected a scalar value", path, line,
				 col, key ? "key '" : "", key ? key : "", key ? "': " : "");
			yaml_event_delete(&ev);
			goto out;
		case YAML_SCALAR_EVENT: {
			const char *text = (const char *)ev.data.scalar.value;
			if (depth != 1) {
				snprintf(err, errlen, "%s:%zu:%zu: the file must be a mapping of keys",
					 path, line, col);
				yaml_event_delete(&ev);
				goto out;
			}
			if (!key) {
				if (!find_key(keys, nkeys, text)) {
					snprintf(err, errlen, "%s:%zu:%zu: unknown key '%s'", path, line,
						 col, text);
					yaml_event_delete(&ev);
					goto out;
				}
				key = xstrdup(text);
			} else {
				const struct config_key *k = find_key(keys, nkeys, key);
				/* A plain empty or "~"/"null" scalar means unset. */
				bool null = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
					    (!*text || !strcmp(text, "~") || !strcmp(text, "null"));
				const char *bad = set_value(k, target, null ? NULL : text, why,
							    sizeof(why));
				if (bad) {
					snprintf(err, errlen, "%s:%zu:%zu: key '%s': %s", path, line,
						 col, key, bad);
					yaml_event_delete(&ev);
					goto out;
				}
				free(key);
				key = NULL;
			}
			break;
		}
		case YAML_ALIAS_EVENT:
			snprintf(err, errlen, "%s:%zu:%zu: aliases are not supported", path, line, col);
			yaml_event_delete(&ev);
			goto out;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	rc = 0;
out:
	free(key);
	yaml_parser_delete(&parser);
	fclose(f);
	return rc;
}

int config_load(const struct config_key *keys, size_t nkeys, void *target,
		const char *path, const char *env_prefix, char *err, size_t errlen)
{
	char why[256];

	for (size_t i = 0; i < nkeys; i++) {
		const char *bad = set_value(&keys[i], target, keys[i].def, why, sizeof(why));
		if (bad && keys[i].def) {
			snprintf(err, errlen, "default of '%s': %s", keys[i].name, bad);
			return -1;
		}
	}
	if (path && load_file(keys, nkeys, target, path, err, errlen))
		return -1;
	for (size_t i = 0; i < nkeys; i++) {
		char var[128];
		size_t n = (size_t)snprintf(var, sizeof(var), "%s", env_prefix);
		for (const char *p = keys[i].name; *p && n + 1 < sizeof(var); p++)
			var[n++] = (char)toupper((unsigned char)*p);
		var[n] = '\0';
		const char *value = getenv(var);
		if (!value)
			continue;
		const char *bad = set_value(&keys[i], target, value, why, sizeof(why));
		if (bad) {
			snprintf(err, errlen, "%s: %s", var, bad);
			return -1;
		}
	}
	return 0;
}

void config_free(const struct config_key *keys, size_t nkeys, void *target)
{
	for (size_t i = 0; i < nkeys; i++) {
		if (keys[i].type == CONFIG_STRING) {
			char **p = (char **)((char *)target + keys[i].offset);
			free(*p);
			*p = NULL;
		}
	}
}
