/* strvec.c - see strvec.h. */
#include "strvec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strvec_push_own(struct strvec *sv, char *s)
{
	if (sv->n + 2 > sv->cap) {
		sv->cap = sv->cap ? sv->cap * 2 : 8;
		sv->v = xrealloc(sv->v, sv->cap * sizeof(*sv->v));
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
}

void strvec_push(struct strvec *sv, const char *s)
{
	strvec_push_own(sv, xstrdup(s));
}

void strvec_pushf(struct strvec *sv, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	strvec_push_own(sv, s);
}

void strvec_split(struct strvec *sv, const char *s)
{
	while (s && *s) {
		s += strspn(s, " \t\n");
		size_t n = strcspn(s, " \t\n");
		if (n)
			strvec_push_own(sv, xstrndup(s, n));
		s += n;
	}
}

char **strvec_get(struct strvec *sv)
{
	if (!sv->v) {
		sv->cap = 8;
		sv->v = xcalloc(sv->cap, sizeof(*sv->v));
	}
	return sv->v;
}

void strvec_clear(struct strvec *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = sv->cap = 0;
}
