/*
 * list_query.h - the preamble every list method shares (ml jobs and
 * locations, Vertex customJobs, trainingPipelines and operations): pageSize,
 * pageToken and filter, read from the request, each refused in the API's
 * own wording. A page token is good only for the list it was made for: the
 * same method, the same path (project, location) and the same filter.
 */
#ifndef TP_LIST_QUERY_H
#define TP_LIST_QUERY_H

#include "http.h"
#include "list_filter.h"

/* How an API words the three errors; filter_fmt takes the filter's message. */
struct list_wording {
	const char *bad_size;
	const char *bad_token;
	const char *filter_fmt;
};

struct list_query {
	const char *filter;	/* borrowed from the request; NULL when not read */
	int size;		/* page size */
	int64_t pos;		/* from the page token; 0 for the first page */
	struct list_filter *tree;	/* the parsed filter; NULL when none */
	/* What page tokens are bound to: the operation, the path's variables,
	 * the filter (borrowed from the request), and the key they are made with. */
	const char *scope[ROUTE_MAX_PARAMS + 2];
	size_t nscope;
	const unsigned char *key;
};

/*
 * Reads the request's paging and, when fields is not NULL, its filter
 * parsed against the fields the list takes. Returns 0, or -1 after
 * replying 400 INVALID_ARGUMENT (nothing to release then).
 */
int list_query_read(struct request *req, const struct list_filter_fields *fields,
		    const struct list_wording *w, struct list_query *out) MUST_CHECK;
void list_query_release(struct list_query *q);

/* A next-page token for position pos (caller frees), for the same list. */
char *list_query_next_token(const struct list_query *q, int64_t pos);

#endif
