/*
 * render.c - YAML output (as gcloud's default format prints resources) and
 * gcloud-style error messages.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"

static int needs_quotes(const char *s)
{
	static const char *const words[] = { "true", "false", "yes", "no", "null", "on", "off", "~" };
	if (!*s || isspace((unsigned char)s[0]) || isspace((unsigned char)s[strlen(s) - 1]))
		return 1;
	if (strchr("-?:,[]{}#&*!|>'\"%@`", s[0]))
		return 1;
	if (strstr(s, ": ") || strstr(s, " #") || strchr(s, '\n'))
		return 1;
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (!strcasecmp(s, words[i]))
			return 1;
	char *end;
	(void)strtod(s, &end);
	return *end == '\0';
}

static void scalar(struct strbuf *out, const json_t *v)
{
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (!needs_quotes(s)) {
			sb_addstr(out, s);
			return;
		}
		sb_addch(out, '\'');
		for (; *s; s++) {
			if (*s == '\'')
				sb_addch(out, '\'');
			if (*s == '\n')
				sb_addstr(out, "\\n");
			else
				sb_addch(out, *s);
		}
		sb_addch(out, '\'');
	} else if (json_is_integer(v)) {
		sb_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_real(v)) {
		sb_addf(out, "%g", json_real_value(v));
	} else if (json_is_true(v)) {
		sb_addstr(out, "true");
	} else if (json_is_false(v)) {
		sb_addstr(out, "false");
	} else if (json_is_object(v)) {
		sb_addstr(out, "{}");
	} else if (json_is_array(v)) {
		sb_addstr(out, "[]");
	} else {
		sb_addstr(out, "null");
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int nonempty(const json_t *v)
{
	return (json_is_object(v) && json_object_size(v)) || (json_is_array(v) && json_array_size(v));
}

static void node(struct strbuf *out, const json_t *v, int indent, int first_inline);

static void mapping(struct strbuf *out, const json_t *v, int indent, int first_inline)
{
	size_t n = json_object_size(v), i = 0;
	const char **keys = xcalloc(n ? n : 1, sizeof *keys);
	const char *k;
	json_t *val;
	json_object_foreach((json_t *)v, k, val)
		keys[i++] = k;
	qsort(keys, n, sizeof *keys, cmp_str);
	for (i = 0; i < n; i++) {
		if (i || !first_inline)
			sb_addf(out, "%*s", indent, "");
		json_t *c = json_object_get(v, keys[i]);
		json_t *ks = json_string(keys[i]);
		scalar(out, ks);
		json_decref(ks);
		sb_addch(out, ':');
		if (nonempty(c)) {
			sb_addch(out, '\n');
			node(out, c, json_is_array(c) ? indent : indent + 2, 0);
		} else {
			sb_addch(out, ' ');
			scalar(out, c);
			sb_addch(out, '\n');
		}
	}
	free(keys);
}

static void node(struct strbuf *out, const json_t *v, int indent, int first_inline)
{
	if (json_is_object(v) && json_object_size(v)) {
		mapping(out, v, indent, first_inline);
	} else if (json_is_array(v) && json_array_size(v)) {
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) {
			if (i || !first_inline)
				sb_addf(out, "%*s", indent, "");
			sb_addstr(out, "- ");
			if (nonempty(e)) {
				node(out, e, indent + 2, 1);
			} else {
				scalar(out, e);
				sb_addch(out, '\n');
			}
		}
	} else {
		if (!first_inline)
			sb_addf(out, "%*s", indent, "");
		scalar(out, v);
		sb_addch(out, '\n');
	}
}

void cli_yaml(struct strbuf *out, const json_t *v)
{
	node(out, v, 0, 0);
}

/* "jobs" -> "Job", for gcloud's "{Resource} instance [name]" messages. */
static char *resource_word(const char *collection)
{
	char *w = xstrdup(collection);
	size_t n = strlen(w);
	if (n > 1 && w[n - 1] == 's')
		w[n - 1] = '\0';
	w[0] = (char)toupper((unsigned char)w[0]);
	return w;
}

void cli_render_error(struct strbuf *out, const char *command, long http_status,
		      const char *url_path, const char *body)
{
	json_t *root = body ? json_loads(body, 0, NULL) : NULL;
	json_t *err = json_object_get(root, "error");
	const char *status = json_string_value(json_object_get(err, "status"));
	const char *message = json_string_value(json_object_get(err, "message"));
	char *msg = NULL;

	sb_addf(out, "ERROR: (%s) ", command);
	if (!err) {
		sb_addf(out, "HTTP %ld: %s\n", http_status, body && *body ? body : "(no body)");
		json_decref(root);
		return;
	}
	/* the path's last collection/instance pair, the query left off */
	char *path = xstrdup(url_path ? url_path : "");
	char *q = strpbrk(path, "?:");
	if (q && *q == '?')
		*q = '\0';
	char *segs[32];
	int n = 0;
	char *save = NULL;
	for (char *s = strtok_r(path, "/", &save); s && n < 32; s = strtok_r(NULL, "/", &save))
		segs[n++] = s;
	/* drop the version prefix: v1, or trainplane/v1 */
	int start = 0;
	while (start < n && strcmp(segs[start], "projects") && strcmp(segs[start], "nodes"))
		start++;
	int rel = n - start;
	if (http_status == 404 && rel >= 2 && rel % 2 == 0) {
		char *inst = segs[n - 1], *colon = strchr(inst, ':');
		if (colon)
			*colon = '\0';
		char *w = resource_word(segs[n - 2]);
		msg = xasprintf("%s instance [%s] not found", w, inst);
		free(w);
	} else if (http_status == 409 && rel >= 1) {
		if (rel % 2 == 1 && rel >= 3 && !strcmp(segs[start], "projects")) {
			msg = xasprintf("Resource in projects [%s] is the subject of a conflict", segs[start + 1]);
		} else if (rel >= 2) {
			int ci = rel % 2 == 0 ? n - 2 : n - 1;
			char *inst = rel % 2 == 0 ? segs[n - 1] : NULL;
			char *colon = inst ? strchr(inst, ':') : NULL;
			if (colon)
				*colon = '\0';
			char *w = resource_word(segs[ci]);
			msg = xasprintf("%s instance [%s] is the subject of a conflict", w, inst ? inst : "");
			free(w);
		}
	}
	if (msg)
		sb_addf(out, "%s: %s\n", msg, message ? message : "");
	else
		sb_addf(out, "%s: %s\n", status ? status : "UNKNOWN", message ? message : "");
	free(msg);
	free(path);
	json_t *details = json_object_get(err, "details");
	if (json_array_size(details))
		cli_yaml(out, details);
	json_decref(root);
}
