#include "list_query.h"

#include "paging.h"
#include "store.h"

int list_query_read(struct request *req, const struct list_filter_fields *fields,
		    const struct list_wording *w, struct list_query *out)
{
	const char *token = req_query(req, "pageToken");
	char err[256];

	*out = (struct list_query){ .filter = fields ? req_query(req, "filter") : NULL,
				    .key = store_page_token_key(req->srv->store) };
	out->scope[out->nscope++] = req->route->operation_id;
	for (size_t i = 0; i < ROUTE_MAX_PARAMS && req->params[i]; i++)
		out->scope[out->nscope++] = req->params[i];
	out->scope[out->nscope++] = out->filter;
	if (paging_size(req_query(req, "pageSize"), &out->size)) {
		reply_error(req, API_INVALID_ARGUMENT, "%s", w->bad_size);
		return -1;
	}
	if (token && *token &&
	    paging_token_read(out->key, out->scope, out->nscope, token, &out->pos, 1)) {
		reply_error(req, API_INVALID_ARGUMENT, "%s", w->bad_token);
		return -1;
	}
	if (fields && list_filter_parse(out->filter, fields, &out->tree, err, sizeof(err))) {
		reply_error(req, API_INVALID_ARGUMENT, w->filter_fmt, err);
		return -1;
	}
	return 0;
}

void list_query_release(struct list_query *q)
{
	list_filter_free(q->tree);
	q->tree = NULL;
}

char *list_query_next_token(const struct list_query *q, int64_t pos)
{
	return paging_token_make(q->key, q->scope, q->nscope, &pos, 1);
}
