/*
 * render.c - gcloud-style error messages and --sort-by (YAML output is
 * yaml_emit.c, --format is format.c).
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common.h"

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
	/* gcloud's `ai` (Vertex) commands print Google's status and message
	 * as they come ("NOT_FOUND: The CustomJob ... does not exist."); the
	 * resource forms are its ml v1 commands' */
	bool vertex = rel >= 3 && !strcmp(segs[start + 2], "locations");
	if (vertex) {
		/* no resource form */
	} else if (http_status == 404 && rel >= 2 && rel % 2 == 0) {
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

/* --- --sort-by --------------------------------------------------------------- */

struct sort_key {
	char *path;	/* dotted, e.g. "jobSpec.workerPoolSpecs" */
	int desc;
};

struct sort_ctx {
	struct sort_key *keys;
	size_t n;
};

struct sort_item {
	json_t *v;
	size_t index;	/* the tie-break that makes the sort stable */
};

char *cli_camel(const char *s)
{
	char *out = xstrdup(s), *o = out;
	for (; *s; s++) {
		if (*s == '_' && s[1]) {
			*o++ = (char)toupper((unsigned char)*++s);
			continue;
		}
		*o++ = *s;
	}
	*o = '\0';
	return out;
}

static json_t *lookup(json_t *v, const char *path)
{
	char *copy = xstrdup(path), *save = NULL;
	for (char *seg = strtok_r(copy, ".", &save); seg && v; seg = strtok_r(NULL, ".", &save)) {
		json_t *next = json_object_get(v, seg);
		if (!next) {
			char *c = cli_camel(seg);
			next = json_object_get(v, c);
			free(c);
		}
		v = next;
	}
	free(copy);
	return v;
}

static int int_string(const char *s, long long *out)
{
	char *end;
	if (!*s)
		return 0;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return !*end && !errno;
}

static int cmp_values(json_t *a, json_t *b)
{
	long long x, y;
	if (!a || json_is_null(a) || !b || json_is_null(b))
		return (a && !json_is_null(a)) - (b && !json_is_null(b));
	if (json_is_number(a) && json_is_number(b)) {
		double d = json_number_value(a) - json_number_value(b);
		return (d > 0) - (d < 0);
	}
	if (json_is_string(a) && json_is_string(b)) {
		const char *s = json_string_value(a), *t = json_string_value(b);
		if (int_string(s, &x) && int_string(t, &y))
			return (x > y) - (x < y);
		return strcmp(s, t);
	}
	if (json_is_boolean(a) && json_is_boolean(b))
		return json_is_true(a) - json_is_true(b);
	if (json_typeof(a) != json_typeof(b))
		return (int)json_typeof(a) - (int)json_typeof(b);
	char *s = json_dumps(a, JSON_SORT_KEYS | JSON_ENCODE_ANY), *t = json_dumps(b, JSON_SORT_KEYS | JSON_ENCODE_ANY);
	int r = strcmp(s, t);
	free(s);
	free(t);
	return r;
}

static int cmp_items(const void *pa, const void *pb, void *ud)
{
	const struct sort_item *a = pa, *b = pb;
	const struct sort_ctx *ctx = ud;
	for (size_t i = 0; i < ctx->n; i++) {
		int r = cmp_values(lookup(a->v, ctx->keys[i].path), lookup(b->v, ctx->keys[i].path));
		if (r)
			return ctx->keys[i].desc ? -r : r;
	}
	return (a->index > b->index) - (a->index < b->index);
}

int cli_sort(json_t *array, const char *keys, char **err)
{
	struct sort_ctx ctx = { NULL, 0 };
	char *copy = xstrdup(keys), *save = NULL;
	int rc = 0;
	*err = NULL;
	ctx.keys = xcalloc(strlen(keys) + 1, sizeof *ctx.keys);
	for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		int desc = *k == '~';
		const char *p = k + desc;
		if (!*p || *p == '.' || p[strlen(p) - 1] == '.' || strstr(p, "..")) {
			*err = xasprintf("argument --sort-by: Invalid field [%s].", k);
			rc = -1;
			goto out;
		}
		ctx.keys[ctx.n].path = xstrdup(p);
		ctx.keys[ctx.n++].desc = desc;
	}
	if (!ctx.n) {
		*err = xstrdup("argument --sort-by: expected one argument");
		rc = -1;
		goto out;
	}
	size_t n = json_array_size(array);
	struct sort_item *items = xcalloc(n ? n : 1, sizeof *items);
	for (size_t i = 0; i < n; i++) {
		items[i].v = json_incref(json_array_get(array, i));
		items[i].index = i;
	}
	qsort_r(items, n, sizeof *items, cmp_items, &ctx);
	json_array_clear(array);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(array, items[i].v);
	free(items);
out:
	for (size_t i = 0; i < ctx.n; i++)
		free(ctx.keys[i].path);
	free(ctx.keys);
	free(copy);
	return rc;
}
