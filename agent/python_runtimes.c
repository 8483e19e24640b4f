/*
 * python_runtimes.c - the python_runtimes key (python_runtimes.h).
 */
#include "python_runtimes.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "imageref.h"

static bool separator(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == ',';
}

/* The next word of *p; false at the end. */
static bool next_word(const char **p, const char **w, size_t *n)
{
	const char *s = *p;
	while (separator(*s))
		s++;
	if (!*s)
		return false;
	*w = s;
	while (*s && !separator(*s))
		s++;
	*n = (size_t)(s - *w);
	*p = s;
	return true;
}

const char *python_runtimes_check(const char *map, enum agent_runtime rt)
{
	static char why[200];
	const char *p = map, *w;
	size_t n;

	while (map && next_word(&p, &w, &n)) {
		const char *eq = memchr(w, '=', n);
		if (!eq || eq == w || eq + 1 == w + n) {
			snprintf(why, sizeof(why), "'%.*s' is not SELECTOR=VALUE (e.g. "
				 "2.11/3.7=/usr/bin/python3.7 or *=/usr/bin/python3)",
				 (int)(n > 80 ? 80 : n), w);
			return why;
		}
		char *value = xstrndup(eq + 1, (size_t)(w + n - eq - 1));
		const char *bad = NULL;
		if (rt == RUNTIME_PODMAN || rt == RUNTIME_DOCKER)
			bad = imageref_parse(value, NULL) ? "is not an image reference" : NULL;
		else if (rt == RUNTIME_PROCESS && value[0] != '/')
			bad = "is not the absolute path of a Python interpreter";
		if (bad)
			snprintf(why, sizeof(why), "'%.80s' %s", value, bad);
		free(value);
		if (bad)
			return why;
	}
	return NULL;
}

char *python_runtimes_get(const char *map, const char *key)
{
	const char *p = map, *w;
	size_t n, k = strlen(key);

	while (map && next_word(&p, &w, &n)) {
		const char *eq = memchr(w, '=', n);
		if (eq && (size_t)(eq - w) == k && !memcmp(w, key, k))
			return xstrndup(eq + 1, (size_t)(w + n - eq - 1));
	}
	return NULL;
}
