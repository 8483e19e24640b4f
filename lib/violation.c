#include "violation.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void violations_add(struct violations *vs, const char *field, const char *fmt, ...)
{
	va_list ap;
	char *desc;

	if (vs->n == vs->alloc) {
		vs->alloc = vs->alloc ? vs->alloc * 2 : 4;
		vs->v = xrealloc(vs->v, vs->alloc * sizeof(*vs->v));
	}
	va_start(ap, fmt);
	if (vasprintf(&desc, fmt, ap) < 0)
		abort();
	va_end(ap);
	vs->v[vs->n].field = xstrdup(field);
	vs->v[vs->n].description = desc;
	vs->n++;
}

void violations_release(struct violations *vs)
{
	for (size_t i = 0; i < vs->n; i++) {
		free(vs->v[i].field);
		free(vs->v[i].description);
	}
	free(vs->v);
	vs->v = NULL;
	vs->n = vs->alloc = 0;
}
