#include "api_vertex.h"
#include "api_quota.h"
#include "api_slurm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cached_get.h"
#include "list_query.h"
#include "log.h"
#include "scheduler.h"
#include "store_log.h"
#include "training_spec.h"
#include "validate.h"
#include "vertex_types.h"
#include "wire.h"

#define API_VERTEX "vertex"
#define CANCEL_MESSAGE "CANCELED"
#define DISPLAY_NAME_MAX 128
#define CUSTOM_TASK "gs://google-cloud-aiplatform/schema/trainingjob/definition/custom_task_1.0.0.yaml"

/* --- rendering ------------------------------------------------------------ */

static void add_time(json_t *o, const char *name, int64_t us)
{
	char buf[48];
	if (!us)
		return;
	wire_time_format(us, buf, sizeof(buf));
	json_object_set_new(o, name, json_string(buf));
}

/* A stored JSON column read back: numbers as doubles (the descriptors say
 * which are integers when the reply is rendered). */
static json_t *stored(const char *text)
{
	return json_loads(text, JSON_DECODE_INT_AS_REAL, NULL);
}

/* A job as its collection shows it (customJobs, hyperparameterTuningJobs). */
static json_t *job_json_in(const struct job *j, const char *collection)
{
	json_t *o = json_object();
	json_t *spec = stored(j->spec_json);
	char name[512];

	snprintf(name, sizeof(name), "projects/%s/locations/%s/%s/%s", j->project, j->region,
		 collection, j->job_id);
	json_object_set_new(o, "name", json_string(name));
	if (spec)
		json_object_update(o, spec);
	json_decref(spec);
	json_object_del(o, VERTEX_PIPELINE_KEY);	/* the pipeline's own record, if any */
	json_object_set_new(o, "state", json_string(job_state_vertex_name(j->state)));
	add_time(o, "createTime", j->create_us);
	add_time(o, "startTime", j->start_us);
	add_time(o, "endTime", j->end_us);
	add_time(o, "updateTime", j->update_us ? j->update_us : j->create_us);
	if (j->state == JOB_FAILED || j->state == JOB_CANCELLED) {
		/* google.rpc.Status: CANCELLED is code 1; a failure the user's
		 * code caused is INVALID_ARGUMENT (3), a timeout DEADLINE_EXCEEDED (4),
		 * anything else INTERNAL (13). */
		int code = j->state == JOB_CANCELLED ? API_CANCELLED
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
		json_t *labels = stored(j->labels_json);
		if (labels)
			json_object_set_new(o, "labels", labels);
	}
	return o;
}

static json_t *job_json(const struct job *j)
{
	return job_json_in(j, "customJobs");
}

/*
 * A HyperparameterTuningJob: its stored body, state, times, error and
 * labels as a CustomJob's, and its trials as the study pass last wrote
 * them (scheduler/study.c).
 */
static json_t *tuning_job_json(const struct job *j)
{
	json_t *o = job_json_in(j, "hyperparameterTuningJobs");
	json_t *out = stored(j->output_json);
	json_t *trials = json_object_get(out, "trials");

	if (json_array_size(trials))
		json_object_set(o, "trials", trials);
	json_decref(out);
	return o;
}

/*
 * A TrainingPipeline from its backing CustomJob: the pipeline's own fields,
 * the job's state as PIPELINE_STATE_*, its times, error and labels, and
 * trainingTaskMetadata naming the job.
 */
static json_t *pipeline_json(const struct job *j)
{
	json_t *cj = job_json(j), *o = json_object();
	json_t *spec = stored(j->spec_json);
	json_t *p = json_object_get(spec, VERTEX_PIPELINE_KEY);
	char name[512];

	snprintf(name, sizeof(name), "projects/%s/locations/%s/trainingPipelines/%s", j->project,
		 j->region, j->job_id);
	json_object_set_new(o, "name", json_string(name));
	if (p)
		json_object_update(o, p);
	json_object_set_new(o, "trainingTaskMetadata",
			    json_pack("{s:O}", "backingCustomJob", json_object_get(cj, "name")));
	json_object_set_new(o, "state", json_string(job_state_pipeline_name(j->state)));
	static const char *const copied[] = { "error", "createTime", "startTime", "endTime",
					      "updateTime", "labels" };
	for (size_t i = 0; i < ARRAY_SIZE(copied); i++)
		if (json_object_get(cj, copied[i]))
			json_object_set(o, copied[i], json_object_get(cj, copied[i]));
	json_decref(spec);
	json_decref(cj);
	return o;
}

/* What a handler serves: custom jobs, the pipelines stored as them, or tuning jobs. */
struct kind {
	const char *noun;	/* in messages: CustomJob, TrainingPipeline, ... */
	const char *collection;	/* in names: customJobs, trainingPipelines, ... */
	bool pipeline;
	bool tuning;		/* hyperparameterTuningJobs */
	const struct schema_message *message;
	enum store_job_list_of list;
};
static const struct kind CUSTOM_JOBS = { "CustomJob", "customJobs", false, false,
					 &vertex_custom_job_message, STORE_LIST_CUSTOM_JOBS };
static const struct kind PIPELINES = { "TrainingPipeline", "trainingPipelines", true, false,
				       &vertex_training_pipeline_message, STORE_LIST_PIPELINES };
static const struct kind TUNING_JOBS = { "HyperparameterTuningJob", "hyperparameterTuningJobs",
					 false, true, &vertex_hyperparameter_tuning_job_message,
					 STORE_LIST_TUNING_JOBS };

/* JOB_STATE_RUNNING, or PIPELINE_STATE_RUNNING for a pipeline. */
static const char *state_name(const struct kind *k, enum job_state state)
{
	return k->pipeline ? job_state_pipeline_name(state) : job_state_vertex_name(state);
}

/* A job as the kind shows it, rendered through its descriptors
 * (spec/vertex_types.c): the same bytes from create, get and list. */
static void render(struct strbuf *sb, const struct kind *k, const struct job *j)
{
	json_t *o = k->pipeline ? pipeline_json(j) : k->tuning ? tuning_job_json(j) : job_json(j);

	schema_render(sb, k->message, o);
	json_decref(o);
}

static void reply_rendered(struct request *req, const struct kind *k, const struct job *j)
{
	struct strbuf sb = STRBUF_INIT;

	render(&sb, k, j);
	size_t len = sb.len;
	reply_json_text(req, 200, sb_detach(&sb), len);
}

static void reply_not_found(struct request *req, const struct kind *k)
{
	reply_error(req, API_NOT_FOUND, "The %s \"projects/%s/locations/%s/%s/%s\" does not exist.",
		    k->noun, req->params[0], req->params[1], k->collection, req->params[2]);
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

/* Whether a stored spec has a member: a pipeline's record, a tuning job's
 * studySpec, a trial's record. */
static bool spec_has(const struct job *j, const char *key)
{
	json_t *spec = stored(j->spec_json);
	bool yes = json_object_get(spec, key) != NULL;
	json_decref(spec);
	return yes;
}

/* Whether the job is one the kind serves: a CustomJob is no tuning job. */
static bool of_kind(const struct kind *k, const struct job *j)
{
	if (k->pipeline)
		return spec_has(j, VERTEX_PIPELINE_KEY);
	return spec_has(j, "studySpec") == k->tuning;
}

/* Looks the job up; replies 404 (or a store error) and returns NULL when absent. */
static struct job_rows *load_job(struct request *req, const struct kind *k, struct job *j)
{
	struct job_key key = { API_VERTEX, req->params[0], req->params[2] };
	struct job_rows *rows = NULL;
	enum store_rc rc = store_job_get(req->srv->store, &key, &rows);

	if (rc == STORE_OK) {
		job_rows_get(rows, 0, j);
		if (!strcmp(j->region, req->params[1]) && of_kind(k, j))
			return rows;
		rc = STORE_NOT_FOUND;
	}
	job_rows_free(rows);
	if (rc == STORE_NOT_FOUND)
		reply_not_found(req, k);
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

/* The structural violations of a body: their messages, one a line. */
static void reply_schema_violations(struct request *req, const struct violations *vs)
{
	struct strbuf msg = STRBUF_INIT;
	for (size_t i = 0; i < vs->n; i++)
		sb_addf(&msg, "%s%s", i ? "\n" : "", vs->v[i].description);
	reply_violations(req, vs, sb_str(&msg));
	sb_release(&msg);
}

static int64_t pool_gpus(const json_t *pool)
{
	return json_integer_value(json_object_get(json_object_get(pool, "machineSpec"),
						  "acceleratorCount"));
}

/*
 * MultiWorkerMirroredStrategy needs the same number of GPUs on every machine
 * (Google's codelab https://codelabs.developers.google.com/vertex-p2p-distributed:
 * otherwise the job fails). Vertex accepts pools that differ (a parameter-server job
 * may want them), and so does trainplane; the job's log says it, where
 * stream-logs shows it.
 */
static void warn_gpu_counts(struct request *req, const struct job *j, const json_t *job_spec)
{
	const json_t *pools = json_object_get(job_spec, "workerPoolSpecs");
	const json_t *p0 = json_array_get(pools, 0), *p1 = json_array_get(pools, 1);
	char msg[320];

	if (!p0 || !p1 || !json_object_get(p1, "machineSpec") || pool_gpus(p0) == pool_gpus(p1))
		return;
	snprintf(msg, sizeof(msg), "warning: workerPoolSpecs[0] has %lld GPU(s) per machine and "
		 "workerPoolSpecs[1] has %lld: MultiWorkerMirroredStrategy needs the same number "
		 "on every machine. The job runs as asked.", (long long)pool_gpus(p0),
		 (long long)pool_gpus(p1));
	/*
	 * The note is about the client's request and is for the client: it goes
	 * to the job's log only, never to the server's. The server logs (WARN)
	 * only what an operator must act on: the store failed to take the line
	 * (a lost connection is not logged by the store itself), so the job's
	 * owner never sees it.
	 */
	enum store_rc rc = store_log_add(req->srv->store, j->id, "service", true, msg);
	if (rc != STORE_OK)
		log_warn("job %s: a line could not be added to its log (store: %s), so its owner "
			 "will not see it: %s", j->job_id, store_rc_name(rc), msg);
}

/* Stores a checked job (borrowed; its labels go to their column) and replies. */
static void create_job(struct request *req, const struct kind *k, json_t *job)
{
	json_t *lab = json_object_get(job, "labels");
	char *labels = lab ? json_dumps(lab, JSON_COMPACT) : xstrdup("{}");
	struct job_rows *rows = NULL;

	json_object_del(job, "labels");
	if (api_quota_refuse(req, true, req->params[0], req->params[1], job, lab) ||
	    api_slurm_refuse(req, req->params[1], job, lab)) {
		free(labels);
		return;
	}
	char *spec = json_dumps(job, JSON_COMPACT);
	enum store_rc rc = store_job_insert_numbered(req->srv->store, API_VERTEX, req->params[0],
						     req->params[1], spec, labels, &rows);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
	} else {
		struct job created;
		job_rows_get(rows, 0, &created);
		log_info("job projects/%s/locations/%s/%s/%s created", req->params[0],
			 req->params[1], k->collection, created.job_id);
		warn_gpu_counts(req, &created, json_object_get(job, "jobSpec"));
		sched_wake_new_job(req->srv->sched);
		reply_rendered(req, k, &created);
	}
	job_rows_free(rows);
	free(spec);
	free(labels);
}

static void check_display_name(const char *display, const char *field, struct violations *vs)
{
	if (!display || !*display)
		violations_add(vs, field, "Required field is not set.");
	else if (utf8_chars(display) > DISPLAY_NAME_MAX)
		violations_add(vs, field, "The display name can be up to %d characters long.",
			       DISPLAY_NAME_MAX);
}

/* A CustomJobSpec, parsed once into the typed spec, against the catalog rules. */
static void check_job_spec(struct request *req, const json_t *job_spec, struct violations *vs)
{
	struct training_spec spec;

	(void)spec_vertex_parse(job_spec, req->params[1], &spec, vs);
	(void)spec_validate_vertex(req->catalog, &spec, vs);
	spec_release(&spec);
}

void api_vertex_custom_jobs_create(struct request *req)
{
	struct violations vs = VIOLATIONS_INIT;
	json_t *job = schema_normalize(&vertex_custom_job_message, req->json, "custom_job", &vs);

	if (!job) {
		reply_schema_violations(req, &vs);
		goto out;
	}
	json_t *job_spec = json_object_get(job, "jobSpec");
	check_display_name(json_string_value(json_object_get(job, "displayName")),
			   "custom_job.display_name", &vs);
	if (!job_spec)
		violations_add(&vs, "custom_job.job_spec", "Required field is not set.");
	else
		check_job_spec(req, job_spec, &vs);
	spec_validate_labels(json_object_get(job, "labels"), "custom_job.labels", &vs);
	if (vs.n)
		reply_vertex_violations(req, &vs);
	else
		create_job(req, &CUSTOM_JOBS, job);
out:
	json_decref(job);
	violations_release(&vs);
}

/* --- customJobs.get ------------------------------------------------------- */

static void get_job(struct request *req, const struct kind *k)
{
	/* A reply also depends on the location and the collection asked for. */
	char *view = xasprintf("%s@%s", k->collection, req->params[1]);
	enum cached_get_step step = cached_get_begin(req, "vertex", req->params[0], req->params[2],
						     view);
	free(view);
	if (step == CACHED_GET_DONE)
		return;
	struct job j;
	struct job_rows *rows = load_job(req, k, &j);
	if (rows) {
		struct strbuf sb = STRBUF_INIT;
		render(&sb, k, &j);
		size_t len = sb.len;
		char *text = sb_detach(&sb);
		cached_get_end(req, text, len);
		reply_json_text(req, 200, text, len);
	} else {
		cached_get_end(req, NULL, 0);
	}
	job_rows_free(rows);
}

void api_vertex_custom_jobs_get(struct request *req)
{
	get_job(req, &CUSTOM_JOBS);
}

/* --- customJobs.list ------------------------------------------------------ */

/*
 * One page of the location's jobs (custom jobs, or the pipelines among
 * them when pipelines): filter, page token, rendering.
 */
static void list_jobs(struct request *req, const struct kind *k)
{
	bool pipelines = k->pipeline;
	static const struct list_wording wording = {
		"Invalid page size: must be non-negative.",
		"Invalid page token: it is malformed or doesn't match arguments from the request.",
		"Invalid filter: %s",
	};
	struct list_query q;
	struct job_rows *rows = NULL;

	if (list_query_read(req, pipelines ? &list_filter_pipelines : &list_filter_custom_jobs,
			    &wording, &q))
		return;
	enum store_rc rc = store_job_list(req->srv->store, k->list, req->params[0],
					  req->params[1], q.pos, q.size + 1, q.tree, &rows);
	if (rc != STORE_OK) {
		list_query_release(&q);
		reply_store_error(req, rc);
		return;
	}
	size_t n = job_rows_count(rows), shown = n > (size_t)q.size ? (size_t)q.size : n;
	struct strbuf sb = STRBUF_INIT;
	struct job j;
	/* An empty list is "{}": proto3 leaves the empty field out. */
	sb_addch(&sb, '{');
	for (size_t i = 0; i < shown; i++) {
		job_rows_get(rows, i, &j);
		if (!i)
			sb_addf(&sb, "\"%s\":[", k->collection);
		else
			sb_addch(&sb, ',');
		render(&sb, k, &j);
	}
	if (shown)
		sb_addch(&sb, ']');
	if (n > shown) {
		job_rows_get(rows, shown - 1, &j);
		char *next = list_query_next_token(&q, j.id);
		sb_addf(&sb, "%s\"nextPageToken\":", shown ? "," : "");
		sb_add_json_str(&sb, next);
		free(next);
	}
	sb_addch(&sb, '}');
	job_rows_free(rows);
	list_query_release(&q);
	size_t len = sb.len;
	reply_json_text(req, 200, sb_detach(&sb), len);
}

void api_vertex_custom_jobs_list(struct request *req)
{
	list_jobs(req, &CUSTOM_JOBS);
}

/* --- customJobs.cancel ---------------------------------------------------- */

/*
 * A tuning job's trial is its tuning job's to cancel and delete (a choice:
 * docs/tuning.md): true, having replied, when j is one.
 */
static bool refuse_trial(struct request *req, const struct job *j, const char *verb)
{
	json_t *spec = stored(j->spec_json);
	const json_t *t = json_object_get(spec, VERTEX_TRIAL_KEY);

	if (t)
		reply_error(req, API_FAILED_PRECONDITION,
			    "The CustomJob \"projects/%s/locations/%s/customJobs/%s\" runs trial "
			    "%lld of the HyperparameterTuningJob \"projects/%s/locations/%s/"
			    "hyperparameterTuningJobs/%s\" and cannot be %s by itself: cancel or "
			    "delete the HyperparameterTuningJob.", j->project, j->region, j->job_id,
			    (long long)json_number_value(json_object_get(t, "trial")), j->project,
			    j->region, json_string_value(json_object_get(t, "study")) ?: "", verb);
	json_decref(spec);
	return t != NULL;
}

static void cancel_job(struct request *req, const struct kind *k)
{
	struct job_key key = { API_VERTEX, req->params[0], req->params[2] };
	struct job_rows *rows = NULL;
	struct job j;
	bool changed;

	rows = load_job(req, k, &j);
	if (!rows)
		return;
	if (refuse_trial(req, &j, "canceled")) {
		job_rows_free(rows);
		return;
	}
	job_rows_free(rows);
	rows = NULL;
	enum store_rc rc = store_job_cancel(req->srv->store, &key, CANCEL_MESSAGE, &changed, &rows);
	if (rc == STORE_NOT_FOUND) {
		reply_not_found(req, k);
	} else if (rc != STORE_OK) {
		reply_store_error(req, rc);
	} else {
		job_rows_get(rows, 0, &j);
		if (changed) {
			log_info("job projects/%s/locations/%s/%s/%s cancel requested", key.project,
				 req->params[1], k->collection, key.job_id);
			sched_wake(req->srv->sched);
			reply_json_text(req, 200, xstrdup("{}"), 2);
		} else if (j.state == JOB_CANCELLING) {
			reply_json_text(req, 200, xstrdup("{}"), 2);
		} else {
			reply_error(req, API_FAILED_PRECONDITION,
				    "The %s \"projects/%s/locations/%s/%s/%s\" is in state %s and "
				    "cannot be canceled.", k->noun, key.project, req->params[1],
				    k->collection, key.job_id, state_name(k, j.state));
		}
	}
	job_rows_free(rows);
}

void api_vertex_custom_jobs_cancel(struct request *req)
{
	cancel_job(req, &CUSTOM_JOBS);
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

static void delete_job(struct request *req, const struct kind *k)
{
	struct job_key key = { API_VERTEX, req->params[0], req->params[2] };
	struct job j;
	struct job_rows *rows = load_job(req, k, &j);
	char target[512];
	int64_t op = 0, op_us = 0;

	if (!rows)
		return;
	if (refuse_trial(req, &j, "deleted")) {
		job_rows_free(rows);
		return;
	}
	const char *state = state_name(k, j.state);
	job_rows_free(rows);
	snprintf(target, sizeof(target), "projects/%s/locations/%s/%s/%s", key.project,
		 req->params[1], k->collection, key.job_id);
	enum store_rc rc = store_job_delete_final(req->srv->store, &key, req->params[1], target,
						  &op, &op_us);
	if (rc == STORE_NOT_FOUND) {
		reply_not_found(req, k);
	} else if (rc == STORE_CONFLICT) {
		reply_error(req, API_FAILED_PRECONDITION,
			    "The %s \"%s\" is in state %s and cannot be deleted: cancel it "
			    "first, or wait for it to finish.", k->noun, target, state);
	} else if (rc != STORE_OK) {
		reply_store_error(req, rc);
	} else {
		log_info("%s deleted", target);
		reply_json(req, 200, delete_operation(key.project, req->params[1], op, op_us));
	}
}

void api_vertex_custom_jobs_delete(struct request *req)
{
	delete_job(req, &CUSTOM_JOBS);
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
	static const struct list_wording wording = {
		"Invalid page size: must be non-negative.", "Invalid page token.", "%s",
	};
	int64_t *ids = NULL, *times = NULL;
	struct list_query q;
	size_t n = 0;

	if (list_query_read(req, NULL, &wording, &q))
		return;
	enum store_rc rc = store_vertex_operation_list(req->srv->store, req->params[0],
						       req->params[1], q.pos, q.size + 1, &ids,
						       &times, &n);
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	size_t shown = n > (size_t)q.size ? (size_t)q.size : n;
	json_t *out = json_object(), *list = json_array();
	for (size_t i = 0; i < shown; i++)
		json_array_append_new(list, delete_operation(req->params[0], req->params[1], ids[i],
							     times[i]));
	if (shown)
		json_object_set_new(out, "operations", list);
	else
		json_decref(list);
	if (n > shown) {
		char *next = list_query_next_token(&q, ids[shown - 1]);
		json_object_set_new(out, "nextPageToken", json_string(next));
		free(next);
	}
	free(ids);
	free(times);
	reply_json(req, 200, out);
}

/* --- trainingPipelines ---------------------------------------------------- */
/*
 * What the Python SDK's CustomContainerTrainingJob (and CustomTrainingJob,
 * CustomPythonPackageTrainingJob) create: a pipeline of the custom task,
 * whose trainingTaskInputs are a CustomJobSpec. trainplane runs it as one
 * CustomJob with the same id (trainingTaskMetadata.backingCustomJob) and
 * shows that job's state as PIPELINE_STATE_*. Other task definitions,
 * managed datasets and model upload are not served.
 */

/* job_spec.x paths of the shared validator, as the field the spec is in
 * (prefix: "training_pipeline.training_task_inputs", ...). */
static void move_violations(struct violations *from, struct violations *to, const char *prefix)
{
	for (size_t i = 0; i < from->n; i++) {
		const char *f = from->v[i].field;
		char *field = !strncmp(f, "job_spec", 8) ? xasprintf("%s%s", prefix, f + 8)
							 : xstrdup(f);
		violations_add(to, field, "%s", from->v[i].description);
		free(field);
	}
}

void api_vertex_training_pipelines_create(struct request *req)
{
	struct violations vs = VIOLATIONS_INIT, spec_vs = VIOLATIONS_INIT;
	json_t *tp = schema_normalize(&vertex_training_pipeline_message, req->json,
				      "training_pipeline", &vs);
	json_t *job_spec = NULL, *job = NULL;

	if (!tp) {
		reply_schema_violations(req, &vs);
		goto out;
	}
	const char *def = json_string_value(json_object_get(tp, "trainingTaskDefinition"));
	if (def && strcmp(def, CUSTOM_TASK)) {
		reply_error(req, API_UNIMPLEMENTED,
			    "Training task definition %s is not supported: trainplane runs custom "
			    "training pipelines only (trainingTaskDefinition " CUSTOM_TASK "), as "
			    "CustomContainerTrainingJob, CustomTrainingJob and "
			    "CustomPythonPackageTrainingJob create them; AutoML is not served.", def);
		goto out;
	}
	if (json_object_get(tp, "inputDataConfig")) {
		reply_error(req, API_UNIMPLEMENTED,
			    "Managed datasets (training_pipeline.input_data_config) are not "
			    "supported: read the data from the job's own storage.");
		goto out;
	}
	if (json_object_get(tp, "modelToUpload") || json_object_get(tp, "modelId") ||
	    json_object_get(tp, "parentModel")) {
		reply_error(req, API_UNIMPLEMENTED,
			    "Uploading a model (training_pipeline.model_to_upload) is not "
			    "supported: there is no model registry; the job's AIP_MODEL_DIR holds "
			    "what it saves.");
		goto out;
	}
	check_display_name(json_string_value(json_object_get(tp, "displayName")),
			   "training_pipeline.display_name", &vs);
	if (!def)
		violations_add(&vs, "training_pipeline.training_task_definition",
			       "Required field is not set.");
	json_t *inputs = json_object_get(tp, "trainingTaskInputs");
	if (!inputs || json_is_null(inputs)) {
		violations_add(&vs, "training_pipeline.training_task_inputs",
			       "Required field is not set.");
	} else if (!(job_spec = schema_normalize(vertex_custom_job_spec_message, inputs,
						 "training_pipeline.training_task_inputs", &vs))) {
		reply_schema_violations(req, &vs);
		goto out;
	} else {
		check_job_spec(req, job_spec, &spec_vs);
		move_violations(&spec_vs, &vs, "training_pipeline.training_task_inputs");
	}
	spec_validate_labels(json_object_get(tp, "labels"), "training_pipeline.labels", &vs);
	if (vs.n) {
		reply_vertex_violations(req, &vs);
		goto out;
	}
	job = json_pack("{s:O, s:O, s:{s:O, s:s, s:O}}", "displayName",
			json_object_get(tp, "displayName"), "jobSpec", job_spec, VERTEX_PIPELINE_KEY,
			"displayName", json_object_get(tp, "displayName"), "trainingTaskDefinition",
			def, "trainingTaskInputs", job_spec);
	if (json_object_get(tp, "labels"))
		json_object_set(job, "labels", json_object_get(tp, "labels"));
	if (json_object_get(tp, "encryptionSpec"))
		json_object_set(job, "encryptionSpec", json_object_get(tp, "encryptionSpec"));
	create_job(req, &PIPELINES, job);
out:
	json_decref(job);
	json_decref(job_spec);
	json_decref(tp);
	violations_release(&spec_vs);
	violations_release(&vs);
}

void api_vertex_training_pipelines_get(struct request *req)
{
	get_job(req, &PIPELINES);
}

void api_vertex_training_pipelines_list(struct request *req)
{
	list_jobs(req, &PIPELINES);
}

void api_vertex_training_pipelines_cancel(struct request *req)
{
	cancel_job(req, &PIPELINES);
}

void api_vertex_training_pipelines_delete(struct request *req)
{
	delete_job(req, &PIPELINES);
}

/* --- hyperparameterTuningJobs -------------------------------------------- */
/*
 * A tuning job is stored as a Vertex job whose spec is the
 * HyperparameterTuningJob's body (its studySpec tells it from a CustomJob);
 * the scheduler's study pass runs its trials as CustomJobs of their own
 * and writes its trials[] (scheduler/study.c, docs/tuning.md).
 */

void api_vertex_tuning_jobs_create(struct request *req)
{
	struct violations vs = VIOLATIONS_INIT, spec_vs = VIOLATIONS_INIT;
	json_t *job = schema_normalize(&vertex_hyperparameter_tuning_job_message, req->json,
				       "hyperparameter_tuning_job", &vs);
	struct training_spec spec;

	if (!job) {
		reply_schema_violations(req, &vs);
		goto out;
	}
	check_display_name(json_string_value(json_object_get(job, "displayName")),
			   "hyperparameter_tuning_job.display_name", &vs);
	/* One parse: the study and its trials' CustomJobSpec; the spec rules
	 * of a CustomJob, then the study's. */
	(void)spec_vertex_study_parse(job, req->params[1], &spec, &spec_vs);
	if (!json_object_get(job, "trialJobSpec"))
		violations_add(&vs, "hyperparameter_tuning_job.trial_job_spec",
			       "Required field is not set.");
	else
		(void)spec_validate_vertex(req->catalog, &spec, &spec_vs);
	move_violations(&spec_vs, &vs, "hyperparameter_tuning_job.trial_job_spec");
	(void)spec_validate_vertex_study(&spec, &vs);
	spec_release(&spec);
	spec_validate_labels(json_object_get(job, "labels"), "hyperparameter_tuning_job.labels",
			     &vs);
	if (vs.n)
		reply_vertex_violations(req, &vs);
	else
		create_job(req, &TUNING_JOBS, job);
out:
	json_decref(job);
	violations_release(&spec_vs);
	violations_release(&vs);
}

void api_vertex_tuning_jobs_get(struct request *req)
{
	get_job(req, &TUNING_JOBS);
}

void api_vertex_tuning_jobs_list(struct request *req)
{
	list_jobs(req, &TUNING_JOBS);
}

void api_vertex_tuning_jobs_cancel(struct request *req)
{
	cancel_job(req, &TUNING_JOBS);
}

void api_vertex_tuning_jobs_delete(struct request *req)
{
	delete_job(req, &TUNING_JOBS);
}
