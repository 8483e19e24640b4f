/*
 * paging.h - pageSize and opaque pageToken handling shared by list methods.
 *
 * A token carries the position to continue after and a hash of the filter
 * it was made for, base64url-encoded; a token used with another filter, or
 * not made by us, is refused with INVALID_ARGUMENT.
 */
#ifndef TP_PAGING_H
#define TP_PAGING_H

#include "common.h"

#define PAGE_SIZE_DEFAULT 20
#define PAGE_SIZE_MAX 100

/*
 * pageSize: NULL or "0" gives the default, above the maximum is clamped.
 * Returns 0, or -1 for a negative or non-numeric value.
 */
int paging_size(const char *text, int *out) MUST_CHECK;

/* A new token for position pos under filter (NULL = none). Caller frees. */
char *paging_token_make(int64_t pos, const char *filter);
/* Reads a token made for filter. 0 with *pos, or -1 when invalid or for another filter. */
int paging_token_read(const char *token, const char *filter, int64_t *pos) MUST_CHECK;

#endif
