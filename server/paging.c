#include "paging.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int paging_size(const char *text, int *out)
{
	int64_t v;

	*out = PAGE_SIZE_DEFAULT;
	if (!text || !*text)
		return 0;
	if (wire_int64_parse(text, &v) || v < 0)
		return -1;
	if (v > 0)
		*out = v > PAGE_SIZE_MAX ? PAGE_SIZE_MAX : (int)v;
	return 0;
}

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

char *paging_token_make(int64_t pos, const char *filter)
{
	char raw[64];
	int n = snprintf(raw, sizeof(raw), "tp1.%lld.%08x", (long long)pos, fnv1a(filter));
	return wire_base64_encode(raw, (size_t)n, true);
}

int paging_token_read(const char *token, const char *filter, int64_t *pos)
{
	char raw[64];
	long long p;
	unsigned hash;
	int used = 0;
	long n = wire_base64_decode(token, raw, sizeof(raw) - 1, true);

	if (n < 0)
		return -1;
	raw[n] = '\0';
	if (sscanf(raw, "tp1.%lld.%8x%n", &p, &hash, &used) != 2 || used != n || p < 0 ||
	    hash != fnv1a(filter))
		return -1;
	*pos = p;
	return 0;
}
