#include "api_vertex.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "log.h"
#include "paging.h"
#include "scheduler.h"
#include "validate.h"
#include "vertex_types.h"
#include "wire.h"

#define API_VERTEX "vertex"
#define CANCEL_MESSAGE "CANCELED"
#define DISPLAY_NAME_MAX 128

/* --- rendering ------------------------------------------------------------ */

const char *api_vertex_state_name(const char *state)
{
	static const char *const map[][2] = {
		{ JOB_QUEUED, "JOB_STATE_QUEUED" },	  { JOB_PREPARING, "JOB_STATE_PENDING" },
		{ JOB_RUNNING, "JOB_STATE_RUNNING" },	  { JOB_SUCCEEDED, "JOB_STATE_SUCCEEDED" },
		{ JOB_FAILED, "JOB_STATE_FAILED" },	  { JOB_CANCELLING, "JOB_STATE_CANCELLING" },
		{ JOB_CANCELLED, "JOB_STATE_CANCELLED" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (!strcmp(state, map[i][0]))
			return map[i][1];
	return "JOB_STATE_UNSPECIFIED";
}

/* A filter value as written ("JOB_STATE_PENDING") to the stored state. */
static const char *state_from_name(const char *name)
{
	static const char *const stored[] = { JOB_QUEUED, JOB_PREPARING, JOB_RUNNING,
					      JOB_SUCCEEDED, JOB_FAILED, JOB_CANCELLING,
					      JOB_CANCELLED };
	for (size_t i = 0; i < ARRAY_SIZE(stored); i++)
		if (!strcmp(name, api_vertex_state_name(stored[i])))
			return stored[i];
	return NULL;
}

static void add_time(json_t *o, const char *name, int64_t us)
{
	char buf[48];
	if (!us)
		return;
	wire_time_format(us, buf, sizeof(buf));
	json_object_set_new(o, name, json_string(buf));
}

static json_t *job_json(const struct job *j)
{
	json_t *o = json_object();
	json_t *spec = json_loads(j->spec_json, 0, NULL);
	char name[512];

	snprintf(name, sizeof(name), "projects/%s/locations/%s/customJobs/%s", j->project,
		 j->region, j->job_id);
	json_object_set_new(o, "name", json_string(name));
	if (spec)
		json_object_update(o, spec);
	json_decref(spec);
	json_object_set_new(o, "state", json_string(api_vertex_state_name(j->state)));
	add_time(o, "createTime", j->create_us);
	add_time(o, "startTime", j->start_us);
	add_time(o, "endTime", j->end_us);
	add_time(o, "updateTime", j->update_us ? j->update_us : j->create_us);
	if (!strcmp(j->state, JOB_FAILED) || !strcmp(j->state, JOB_CANCELLED)) {
		/* google.rpc.Status: CANCELLED is code 1; a failure the user's
		 * code caused is INVALID_ARGUMENT (3), a timeout DEADLINE_EXCEEDED (4),
		 * anything else INTERNAL (13). */
		int code = !strcmp(j->state, JOB_CANCELLED) ? API_CANCELLED
			   : strstr(j->error_message, "exited with") ? API_INVALID_ARGUMENT
			   : strstr(j->error_message, "(scheduling.timeout)") ? API_DEADLINE_EXCEEDED
									       : API_INTERNAL;
		json_object_set_new(o, "error",
				    json_pack("{s:i, s:s}", "code", code, "message",
					      *j->error_message ? j->error_message
					      : code == API_CANCELLED ? CANCEL_MESSAGE
								      : "Internal error."));
	}
	if (strcmp(j->labels_json, "{}")) {
		json_t *labels = json_loads(j->labels_json, 0, NULL);
		if (labels)
			json_object_set_new(o, "labels", labels);
	}
	return o;
}

static void reply_job(struct request *req, const struct job *j)
{
	reply_json(req, 200, job_json(j));
}

static void reply_not_found(struct request *req)
{
	reply_error(req, API_NOT_FOUND,
		    "The CustomJob \"projects/%s/locations/%s/customJobs/%s\" does not exist.",
		    req->params[0], req->params[1], req->params[2]);
}

/* Vertex's wording: "List of found errors:\t1.Field: f; Message: m\t...". */
static void reply_vertex_violations(struct request *req, const struct violations *vs)
{
	struct strbuf msg = STRBUF_INIT;
	sb_addstr(&msg, "List of found errors:\t");
	for (size_t i = 0; i < vs->n; i++)
		sb_addf(&msg, "%zu.Field: %s; Message: %s\t", i + 1, vs->v[i].field,
			vs->v[i].description);
	reply_violations(req, vs, sb_str(&msg));
	sb_release(&msg);
}

/* Looks the job up; replies 404 (or a store error) and returns NULL when absent. */
static struct job_rows *load_job(struct request *req, struct job *j)
{
	struct job_key key = { API_VERTEX, req->params[0], req->params[2] };
	struct job_rows *rows = NULL;
	enum store_rc rc = store_job_get(req->srv->store, &key, &rows);

	if (rc == STORE_OK) {
		job_rows_get(rows, 0, j);
		if (!strcmp(j->region, req->params[1]))
			return rows;
		rc = STORE_NOT_FOUND;
	}
	job_rows_free(rows);
	if (rc == STORE_NOT_FOUND)
		reply_not_found(req);
	else
		reply_store_error(req, rc);
	return NULL;
}

/* --- customJobs.create ---------------------------------------------------- */

static size_t utf8_chars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

void api_vertex_custom_jobs_create(struct request *req)
{
	struct violations vs = VIOLATIONS_INIT;
	json_t *job = schema_normalize(&vertex_custom_job_message, req->json, "custom_job", &vs);
	char *spec = NULL, *labels = NULL;
	struct job_rows *rows = NULL;

	if (!job) {
		struct strbuf msg = STRBUF_INIT;
		for (size_t i = 0; i < vs.n; i++)
			sb_addf(&msg, "%s%s", i ? "\n" : "", vs.v[i].description);
		reply_violations(req, &vs, sb_str(&msg));
		sb_release(&msg);
		goto out;
	}
	const char *display = json_string_value(json_object_get(job, "displayName"));
	json_t *job_spec = json_object_get(job, "jobSpec");
	if (!display || !*display)
		violations_add(&vs, "custom_job.display_name", "Required field is not set.");
	else if (utf8_chars(display) > DISPLAY_NAME_MAX)
		violations_add(&vs, "custom_job.display_name",
			       "The display name can be up to %d characters long.",
			       DISPLAY_NAME_MAX);
	if (!job_spec)
		violations_add(&vs, "custom_job.job_spec", "Required field is not set.");
	else
		validate_vertex_job_spec(req->catalog, req->params[1], job_spec, &vs);
	validate_labels(json_object_get(job, "labels"), "custom_job.labels", &vs);
	if (vs.n) {
		reply_vertex_violations(req, &vs);
		goto out;
	}

	json_t *lab = json_object_get(job, "labels");
	labels = lab ? json_dumps(lab, JSON_COMPACT) : xstrdup("{}");
	json_object_del(job, "labels");
	spec = json_dumps(job, JSON_COMPACT);
	enum store_rc rc = store_job_insert_numbered(req->srv->store, API_VERTEX, req->params[0],
						     req->params[1], spec, labels, &rows);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		goto out;
	}
	struct job created;
	job_rows_get(rows, 0, &created);
	log_info("job projects/%s/locations/%s/customJobs/%s created", req->params[0],
		 req->params[1], created.job_id);
	sched_wake_new_job(req->srv->sched);
	reply_job(req, &created);
out:
	job_rows_free(rows);
	free(spec);
	free(labels);
	json_decref(job);
	violations_release(&vs);
}

/* --- customJobs.get ------------------------------------------------------- */

void api_vertex_custom_jobs_get(struct request *req)
{
	struct job j;
	struct job_rows *rows = load_job(req, &j);

	if (rows)
		reply_job(req, &j);
	job_rows_free(rows);
}

/* --- customJobs.list ------------------------------------------------------ */

static const struct filter_field vertex_filter_fields[] = {
	{ "state", NULL, "state", FILTER_TEXT, state_from_name },
	{ "display_name", "displayName", "COALESCE(spec->>'displayName', '')", FILTER_TEXT, NULL },
	{ "create_time", "createTime", "create_time", FILTER_TIME, NULL },
	{ "labels", NULL, "labels", FILTER_MAP, NULL },
};

void api_vertex_custom_jobs_list(struct request *req)
{
	const char *filter = req_query(req, "filter");
	const char *token = req_query(req, "pageToken");
	struct filter_sql fsql;
	struct job_rows *rows = NULL;
	struct strbuf where = STRBUF_INIT;
	char err[256];
	int64_t before = 0;
	int size;

	if (paging_size(req_query(req, "pageSize"), &size)) {
		reply_error(req, API_INVALID_ARGUMENT, "Invalid page size: must be non-negative.");
		return;
	}
	if (token && *token && paging_token_read(token, filter, &before)) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "Invalid page token: it is malformed or was made for another filter.");
		return;
	}
	/* $4 is the location; the filter's parameters follow. */
	if (filter_compile(filter, vertex_filter_fields, ARRAY_SIZE(vertex_filter_fields), 5,
			   &fsql, err, sizeof(err))) {
		reply_error(req, API_INVALID_ARGUMENT, "Invalid filter: %s", err);
		return;
	}
	const char **params = xcalloc((size_t)fsql.nparams + 1, sizeof(*params));
	params[0] = req->params[1];
	for (int i = 0; i < fsql.nparams; i++)
		params[i + 1] = fsql.params[i];
	sb_addstr(&where, "region = $4");
	if (*fsql.where)
		sb_addf(&where, " AND (%s)", fsql.where);
	enum store_rc rc = store_job_list(req->srv->store, API_VERTEX, req->params[0], before,
					  size + 1, sb_str(&where), fsql.nparams + 1, params,
					  &rows);
	free(params);
	sb_release(&where);
	filter_sql_release(&fsql);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	size_t n = job_rows_count(rows), shown = n > (size_t)size ? (size_t)size : n;
	json_t *out = json_object(), *list = json_array();
	struct job j;
	for (size_t i = 0; i < shown; i++) {
		job_rows_get(rows, i, &j);
		json_array_append_new(list, job_json(&j));
	}
	if (shown)
		json_object_set_new(out, "customJobs", list);
	else
		json_decref(list);
	if (n > shown) {
		job_rows_get(rows, shown - 1, &j);
		char *next = paging_token_make(j.id, filter);
		json_object_set_new(out, "nextPageToken", json_string(next));
		free(next);
	}
	job_rows_free(rows);
	reply_json(req, 200, out);
}

/* --- customJobs.cancel ---------------------------------------------------- */

void api_vertex_custom_jobs_cancel(struct request *req)
{
	struct job_key key = { API_VERTEX, req->params[0], req->params[2] };
	struct job_rows *rows = NULL;
	struct job j;
	bool changed;

	rows = load_job(req, &j);
	if (!rows)
		return;
	job_rows_free(rows);
	rows = NULL;
	enum store_rc rc = store_job_cancel(req->srv->store, &key, CANCEL_MESSAGE, &changed, &rows);
	if (rc == STORE_NOT_FOUND) {
		reply_not_found(req);
	} else if (rc != STORE_OK) {
		reply_store_error(req, rc);
	} else {
		job_rows_get(rows, 0, &j);
		if (changed) {
			log_info("job projects/%s/locations/%s/customJobs/%s cancel requested",
				 key.project, req->params[1], key.job_id);
			sched_wake(req->srv->sched);
			reply_json_text(req, 200, xstrdup("{}"), 2);
		} else if (!strcmp(j.state, JOB_CANCELLING)) {
			reply_json_text(req, 200, xstrdup("{}"), 2);
		} else {
			reply_error(req, API_FAILED_PRECONDITION,
				    "The CustomJob \"projects/%s/locations/%s/customJobs/%s\" is in "
				    "state %s and cannot be canceled.", key.project, req->params[1],
				    key.job_id, api_vertex_state_name(j.state));
		}
	}
	job_rows_free(rows);
}

/* --- customJobs.delete and operations.get --------------------------------- */

static json_t *delete_operation(const char *project, const char *location, int64_t id,
				int64_t create_us)
{
	char name[512], t[48];

	snprintf(name, sizeof(name), "projects/%s/locations/%s/operations/%lld", project,
		 location, (long long)id);
	wire_time_format(create_us, t, sizeof(t));
	return json_pack("{s:s, s:{s:s, s:{s:s, s:s}}, s:b, s:{s:s}}", "name", name, "metadata",
			 "@type",
			 "type.googleapis.com/google.cloud.aiplatform.v1.DeleteOperationMetadata",
			 "genericMetadata", "createTime", t, "updateTime", t, "done", 1,
			 "response", "@type", "type.googleapis.com/google.protobuf.Empty");
}

void api_vertex_custom_jobs_delete(struct request *req)
{
	struct job_key key = { API_VERTEX, req->params[0], req->params[2] };
	struct job j;
	struct job_rows *rows = load_job(req, &j);
	char target[512];
	int64_t op = 0, op_us = 0;

	if (!rows)
		return;
	char state[32];
	snprintf(state, sizeof(state), "%s", api_vertex_state_name(j.state));
	job_rows_free(rows);
	snprintf(target, sizeof(target), "projects/%s/locations/%s/customJobs/%s", key.project,
		 req->params[1], key.job_id);
	enum store_rc rc = store_job_delete_final(req->srv->store, &key, req->params[1], target,
						  &op, &op_us);
	if (rc == STORE_NOT_FOUND) {
		reply_not_found(req);
	} else if (rc == STORE_CONFLICT) {
		reply_error(req, API_FAILED_PRECONDITION,
			    "The CustomJob \"%s\" is in state %s and cannot be deleted: cancel it "
			    "first, or wait for it to finish.", target, state);
	} else if (rc != STORE_OK) {
		reply_store_error(req, rc);
	} else {
		log_info("job %s deleted", target);
		reply_json(req, 200, delete_operation(key.project, req->params[1], op, op_us));
	}
}

static bool operation_id_valid(const char *id)
{
	bool ok = *id && strlen(id) <= 18;
	for (const char *p = id; *p; p++)
		ok = ok && isdigit((unsigned char)*p);
	return ok;
}

static void reply_operation_not_found(struct request *req)
{
	reply_error(req, API_NOT_FOUND,
		    "Operation \"projects/%s/locations/%s/operations/%s\" not found.",
		    req->params[0], req->params[1], req->params[2]);
}

void api_vertex_operations_get(struct request *req)
{
	const char *id = req->params[2];
	char *target = NULL;
	int64_t create_us = 0;
	enum store_rc rc = STORE_NOT_FOUND;

	if (operation_id_valid(id))
		rc = store_vertex_operation_get(req->srv->store, req->params[0], req->params[1], id,
						&target, &create_us);
	if (rc == STORE_NOT_FOUND)
		reply_operation_not_found(req);
	else if (rc != STORE_OK)
		reply_store_error(req, rc);
	else
		reply_json(req, 200, delete_operation(req->params[0], req->params[1],
						      strtoll(id, NULL, 10), create_us));
	free(target);
}

/* Every operation of this server is done when it is answered: wait is get. */
void api_vertex_operations_wait(struct request *req)
{
	api_vertex_operations_get(req);
}

void api_vertex_operations_delete(struct request *req)
{
	enum store_rc rc = STORE_NOT_FOUND;

	if (operation_id_valid(req->params[2]))
		rc = store_vertex_operation_delete(req->srv->store, req->params[0], req->params[1],
						   req->params[2]);
	if (rc == STORE_NOT_FOUND)
		reply_operation_not_found(req);
	else if (rc != STORE_OK)
		reply_store_error(req, rc);
	else
		reply_json_text(req, 200, xstrdup("{}"), 2);
}

void api_vertex_operations_list(struct request *req)
{
	const char *token = req_query(req, "pageToken");
	int64_t after = 0, *ids = NULL, *times = NULL;
	size_t n = 0;
	int size;

	if (paging_size(req_query(req, "pageSize"), &size)) {
		reply_error(req, API_INVALID_ARGUMENT, "Invalid page size: must be non-negative.");
		return;
	}
	if (token && *token && paging_token_read(token, NULL, &after)) {
		reply_error(req, API_INVALID_ARGUMENT, "Invalid page token.");
		return;
	}
	enum store_rc rc = store_vertex_operation_list(req->srv->store, req->params[0],
						       req->params[1], after, size + 1, &ids,
						       &times, &n);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	size_t shown = n > (size_t)size ? (size_t)size : n;
	json_t *out = json_object(), *list = json_array();
	for (size_t i = 0; i < shown; i++)
		json_array_append_new(list, delete_operation(req->params[0], req->params[1], ids[i],
							     times[i]));
	if (shown)
		json_object_set_new(out, "operations", list);
	else
		json_decref(list);
	if (n > shown) {
		char *next = paging_token_make(ids[shown - 1], NULL);
		json_object_set_new(out, "nextPageToken", json_string(next));
		free(next);
	}
	free(ids);
	free(times);
	reply_json(req, 200, out);
}
