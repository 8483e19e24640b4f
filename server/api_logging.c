/*
 * api_logging.c - the Cloud Logging v2 entries:list subset that
 * `gcloud ai-platform jobs stream-logs` and `gcloud ai custom-jobs
 * stream-logs` send (reference §4.5, §6.2): entries of resource type
 * ml_job, filtered by job id, task name and timestamp, ordered, paged.
 * Task names are ml v1's (master-replica-0, worker-replica-1) for ml jobs
 * and Vertex's (workerpool0-0, workerpool1-1) for CustomJobs, as
 * tp_task_name() in schema/007 writes them; resource.labels.job_id is the
 * ml job id or the numeric CustomJob id.
 */
#include "api_logging.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "list_filter.h"
#include "paging.h"
#include "store.h"
#include "store_log.h"
#include "wire.h"

#define LOG_PAGE_DEFAULT 50
#define LOG_PAGE_MAX 1000

void api_logging_entries_list(struct request *req)
{
	const json_t *names = json_object_get(req->json, "resourceNames");
	const char *filter = json_string_value(json_object_get(req->json, "filter"));
	const char *order = json_string_value(json_object_get(req->json, "orderBy"));
	const char *token = json_string_value(json_object_get(req->json, "pageToken"));
	const char *name = json_string_value(json_array_get(names, 0));
	int64_t size = LOG_PAGE_DEFAULT, after_us = 0, after_id = 0;
	struct list_filter *tree = NULL;
	char err[256];
	bool desc = false;
	json_t *entries = NULL;

	if (json_array_size(names) != 1 || !name || strncmp(name, "projects/", 9) ||
	    !name[9] || strchr(name + 9, '/')) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "Field: resource_names Error: name exactly one project, "
			    "\"projects/<project>\".");
		return;
	}
	if (json_object_get(req->json, "pageSize") &&
	    (wire_int64_get(json_object_get(req->json, "pageSize"), &size) || size < 0)) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "Field: page_size Error: must be a non-negative integer.");
		return;
	}
	if (!size)
		size = LOG_PAGE_DEFAULT;
	if (size > LOG_PAGE_MAX)
		size = LOG_PAGE_MAX;
	if (order && !strcmp(order, "timestamp desc"))
		desc = true;
	else if (order && *order && strcmp(order, "timestamp asc") && strcmp(order, "timestamp")) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "Field: order_by Error: only \"timestamp asc\" and \"timestamp desc\" are "
			    "supported.");
		return;
	}
	/* A page token is bound to everything a next page must repeat. */
	const char *scope[] = { req->route->operation_id, name + 9, filter, desc ? "desc" : "asc" };
	const unsigned char *key = store_page_token_key(req->srv->store);
	if (token && *token) {
		int64_t after[2];
		if (paging_token_read(key, scope, ARRAY_SIZE(scope), token, after, 2) ||
		    after[1] <= 0) {
			reply_error(req, API_INVALID_ARGUMENT,
				    "Field: page_token Error: page_token doesn't match arguments from "
				    "the request.");
			return;
		}
		after_us = after[0];
		after_id = after[1];
	}
	if (list_filter_parse(filter, &list_filter_log_entries, &tree, err, sizeof(err))) {
		reply_error(req, API_INVALID_ARGUMENT, "Field: filter Error: %s", err);
		return;
	}
	enum store_rc rc = store_log_list(req->srv->store, name + 9, desc, after_us, after_id,
					  (int)size + 1, tree, &entries);
	list_filter_free(tree);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	json_t *out = json_object();
	size_t n = json_array_size(entries);
	if (n > (size_t)size) {
		json_t *last = json_object_get(json_array_get(entries, (size_t)size - 1), "_pos");
		const int64_t pos[2] = { json_integer_value(json_array_get(last, 0)),
					 json_integer_value(json_array_get(last, 1)) };
		char *next = paging_token_make(key, scope, ARRAY_SIZE(scope), pos, 2);
		json_object_set_new(out, "nextPageToken", json_string(next));
		free(next);
		json_array_remove(entries, (size_t)size);
	}
	size_t i;
	json_t *e;
	json_array_foreach(entries, i, e)
		json_object_del(e, "_pos");
	if (json_array_size(entries))
		json_object_set_new(out, "entries", entries);
	else
		json_decref(entries);
	reply_json(req, 200, out);
}
