#include "api_ml.h"
#include "api_quota.h"
#include "api_slurm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cached_get.h"
#include "list_query.h"
#include "log.h"
#include "ml_types.h"
#include "training_spec.h"
#include "scheduler.h"
#include "validate.h"
#include "wire.h"

#define API_ML "ml"
#define CANCEL_MESSAGE "Job was cancelled at the user's request."

/* --- rendering ------------------------------------------------------------ */

char *api_ml_etag(int64_t version)
{
	unsigned char raw[8];
	for (int i = 7; i >= 0; i--) {
		raw[i] = (unsigned char)(version & 0xff);
		version >>= 8;
	}
	return wire_base64_encode(raw, sizeof(raw), false);
}

int api_ml_etag_version(const char *etag, int64_t *version)
{
	unsigned char raw[16];
	long n = wire_base64_decode(etag, raw, sizeof(raw), false);
	uint64_t v = 0;

	if (n != 8)
		return -1;
	for (int i = 0; i < 8; i++)
		v = v << 8 | raw[i];
	*version = (int64_t)v;
	return 0;
}

bool api_ml_job_id_valid(const char *id)
{
	size_t n = strlen(id);
	if (!n || n > 128 || !isalpha((unsigned char)id[0]) || (unsigned char)id[0] >= 0x80)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(isascii((unsigned char)id[i]) && (isalnum((unsigned char)id[i]) || id[i] == '_')))
			return false;
	return true;
}

static void add_time(struct strbuf *sb, const char *name, int64_t us)
{
	char buf[48];
	if (!us)
		return;
	wire_time_format(us, buf, sizeof(buf));
	sb_addf(sb, ",\"%s\":\"%s\"", name, buf);
}

void api_ml_job_render(struct strbuf *sb, const struct job *j)
{
	char *etag = api_ml_etag(j->version);
	size_t mark;

	/* The Job's fields in proto field order (spec/ml_types.c); the stored
	 * columns rendered through their descriptors, whatever order and
	 * spacing the database keeps: create, get and list give the same bytes. */
	sb_addstr(sb, "{\"jobId\":");
	sb_add_json_str(sb, j->job_id);
	sb_addstr(sb, ",\"trainingInput\":");
	(void)schema_render_text(sb, ml_training_input_message, j->spec_json);
	add_time(sb, "createTime", j->create_us);
	add_time(sb, "startTime", j->start_us);
	add_time(sb, "endTime", j->end_us);
	sb_addf(sb, ",\"state\":\"%s\"", job_state_name(j->state));
	if (*j->error_message) {
		sb_addstr(sb, ",\"errorMessage\":");
		sb_add_json_str(sb, j->error_message);
	}
	sb_addstr(sb, ",\"trainingOutput\":");
	(void)schema_render_text(sb, ml_training_output_message, j->output_json);
	mark = sb->len;
	sb_addstr(sb, ",\"labels\":");
	if (schema_render_field_text(sb, schema_find_field(&ml_job_message, "labels"),
				     j->labels_json) <= 0) {
		sb_setlen(sb, mark);	/* no labels: proto3 leaves the empty map out */
	}
	sb_addf(sb, ",\"etag\":\"%s\"}", etag);
	free(etag);
}

static void reply_job(struct request *req, struct job_rows *rows)
{
	struct strbuf sb = STRBUF_INIT;
	struct job j;

	job_rows_get(rows, 0, &j);
	api_ml_job_render(&sb, &j);
	job_rows_free(rows);
	size_t len = sb.len;
	reply_json_text(req, 200, sb_detach(&sb), len);
}

void api_ml_reply_job_not_found(struct request *req)
{
	reply_error(req, API_NOT_FOUND, "Job projects/%s/jobs/%s was not found.", req->params[0],
		    req->params[1]);
}

/* Replies 400 for structural violations: the message is their text. */
void api_ml_reply_schema_violations(struct request *req, const struct violations *vs)
{
	struct strbuf msg = STRBUF_INIT;
	for (size_t i = 0; i < vs->n; i++)
		sb_addf(&msg, "%s%s", i ? "\n" : "", vs->v[i].description);
	reply_violations(req, vs, sb_str(&msg));
	sb_release(&msg);
}

/* Replies 400 for semantic violations: "Field: f Error: d" each. */
void api_ml_reply_field_violations(struct request *req, const struct violations *vs)
{
	char *msg = api_violations_message(vs);
	reply_violations(req, vs, msg);
	free(msg);
}

/* --- projects.getConfig --------------------------------------------------- */

/* A stable 12-digit stand-in for the project number Google would assign. */
static long long project_number(const char *project)
{
	uint64_t h = 1469598103934665603ULL;
	for (const char *p = project; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return 100000000000LL + (long long)(h % 900000000000ULL);
}

void api_ml_get_config(struct request *req)
{
	long long n = project_number(req->params[0]);
	char number[24], sa[128], tpu[128];

	snprintf(number, sizeof(number), "%lld", n);
	snprintf(sa, sizeof(sa), "service-%lld@cloud-ml.google.com.iam.gserviceaccount.com", n);
	snprintf(tpu, sizeof(tpu), "service-%lld@cloud-tpu.iam.gserviceaccount.com", n);
	reply_json(req, 200, json_pack("{s:s, s:s, s:{s:s}}", "serviceAccount", sa,
				       "serviceAccountProject", number, "config",
				       "tpuServiceAccount", tpu));
}

/* --- projects.jobs.create ------------------------------------------------- */

/* obj rendered canonically as msg: a new string. */
static char *render_text(const struct schema_message *msg, const json_t *obj)
{
	struct strbuf sb = STRBUF_INIT;

	schema_render(&sb, msg, obj);
	return sb_detach(&sb);
}

/* A labels map rendered canonically (keys sorted), "{}" for none. */
static char *render_labels(const json_t *labels)
{
	struct strbuf sb = STRBUF_INIT;

	if (!labels || !schema_render_field(&sb, schema_find_field(&ml_job_message, "labels"),
					    labels))
		sb_addstr(&sb, "{}");
	return sb_detach(&sb);
}

/* What a create keeps while its insert is on the store pipe. */
struct create_ctx {
	json_t *job;		/* the normalised body; job_id points into it */
	char *spec, *labels;
	const char *region;
	struct job_stamp stamp;	/* the insert's, once back from the pipe */
	enum store_rc rc;
};

static void create_ctx_free(void *p)
{
	struct create_ctx *c = p;
	json_decref(c->job);
	free(c->spec);
	free(c->labels);
	free(c);
}

/* The pipe's thread: the insert is back, the request runs again. */
static void inserted(void *arg, const struct job_stamp *stamp, enum store_rc rc)
{
	struct request *req = arg;
	struct create_ctx *c = req->ctx;

	if (stamp)
		c->stamp = *stamp;
	c->rc = rc;
	http_resume(req);
}

/* The pipe's thread: the read is back, the request runs again. */
static void read_done(void *arg, struct job_rows *rows, enum store_rc rc)
{
	struct request *req = arg;

	req->db_rows = rows;
	req->db_rc = rc;
	http_resume(req);
}

/* Replies for an insert's outcome (created: the job, on STORE_OK); c->job still holds the id. */
static void create_reply(struct request *req, struct create_ctx *c, const struct job *created,
			 enum store_rc rc)
{
	const char *job_id = json_string_value(json_object_get(c->job, "jobId"));

	if (rc == STORE_CONFLICT) {
		struct violations vs = VIOLATIONS_INIT;
		violations_add(&vs, "job.job_id", "A job with this id already exists.");
		char *msg = api_violations_message(&vs);
		reply_error_full(req, API_ALREADY_EXISTS, 0, api_bad_request_details(&vs), msg);
		free(msg);
		violations_release(&vs);
		return;
	}
	if (rc != STORE_OK) {
		reply_store_error(req, rc);
		return;
	}
	log_info("job projects/%s/jobs/%s created", req->params[0], job_id);
	sched_wake_new_job(req->srv->sched);
	struct strbuf sb = STRBUF_INIT;
	api_ml_job_render(&sb, created);
	size_t len = sb.len;
	reply_json_text(req, 200, sb_detach(&sb), len);
}

void api_ml_jobs_create(struct request *req)
{
	struct violations vs = VIOLATIONS_INIT;
	struct create_ctx *c;

	if (req->resumed) {
		c = req->ctx;
		const char *job_id = json_string_value(json_object_get(c->job, "jobId"));
		struct job_key key = { API_ML, req->params[0], job_id };
		struct job created;
		if (c->rc == STORE_OK)
			store_job_inserted(&key, c->region, c->spec, c->labels, &c->stamp, &created);
		create_reply(req, c, &created, c->rc);
		return;
	}
	json_t *job = schema_normalize(&ml_job_message, req->json, "job", &vs);
	if (!job) {
		api_ml_reply_schema_violations(req, &vs);
		goto out;
	}
	const char *job_id = json_string_value(json_object_get(job, "jobId"));
	json_t *training = json_object_get(job, "trainingInput");
	json_t *prediction = json_object_get(job, "predictionInput");

	if (!job_id)
		violations_add(&vs, "job.job_id", "A job id is required.");
	else if (!api_ml_job_id_valid(job_id))
		violations_add(&vs, "job.job_id",
			       "The job id must start with a letter, contain only letters, numbers "
			       "and underscores, and be at most 128 characters long.");
	if (training && prediction)
		violations_add(&vs, "job", "Only one of training_input and prediction_input "
			       "may be set.");
	if (prediction && !training && !vs.n) {
		reply_error(req, API_UNIMPLEMENTED,
			    "Batch prediction jobs are not supported by this server; submit a "
			    "training job (training_input).");
		goto out;
	}
	if (!training && !prediction) {
		violations_add(&vs, "job.training_input", "A training input is required.");
	} else if (training) {
		/* Parsed once; the catalog rules check the typed spec. */
		struct training_spec spec;
		(void)spec_ml_parse(training, &spec, &vs);
		(void)spec_validate_ml(req->catalog, &spec, &vs);
		spec_release(&spec);
	}
	spec_validate_labels(json_object_get(job, "labels"), "job.labels", &vs);
	if (vs.n) {
		api_ml_reply_field_violations(req, &vs);
		goto out;
	}
	if (api_quota_refuse(req, false, req->params[0],
			     json_string_value(json_object_get(training, "region")) ?: "", training,
			     json_object_get(job, "labels")))
		goto out;
	if (api_slurm_refuse(req, json_string_value(json_object_get(training, "region")) ?: "",
			     training, json_object_get(job, "labels")))
		goto out;

	c = xcalloc(1, sizeof(*c));
	c->job = job;
	job = NULL;
	/* Stored as rendered: canonical bytes (the column is jsonb all the same). */
	c->spec = render_text(ml_training_input_message, training);
	c->labels = render_labels(json_object_get(c->job, "labels"));
	c->region = json_string_value(json_object_get(training, "region"));
	if (!c->region)
		c->region = "";
	req->ctx = c;
	req->ctx_free = create_ctx_free;
	struct job_key key = { API_ML, req->params[0], job_id };
	if (req->srv->pipe) {
		/* Inserts of concurrent creates commit together (store_pipe.h). */
		http_suspend(req);
		store_job_insert_piped(req->srv->pipe, &key, c->region, c->spec, c->labels,
				       inserted, req);
		goto out;
	}
	struct job created;
	enum store_rc rc = store_job_insert(req->srv->store, &key, c->region, c->spec, c->labels,
					    &created);
	create_reply(req, c, &created, rc);
out:
	json_decref(job);
	violations_release(&vs);
}

/* --- projects.jobs.get ---------------------------------------------------- */

void api_ml_jobs_get(struct request *req)
{
	struct job_key key = { API_ML, req->params[0], req->params[1] };
	struct job_rows *rows;
	enum store_rc rc;

	if (cached_get_begin(req, "ml", req->params[0], req->params[1], NULL) == CACHED_GET_DONE)
		return;
	if (req->srv->pipe && !req->resumed) {
		/* Read on the pipelined connection; this thread serves others meanwhile. */
		http_suspend(req);
		store_job_get_piped(req->srv->pipe, &key, read_done, req);
		return;
	}
	if (req->resumed) {
		rows = req->db_rows;
		rc = req->db_rc;
		req->db_rows = NULL;
	} else {
		rc = store_job_get(req->srv->store, &key, &rows);
	}

	struct strbuf sb = STRBUF_INIT;
	if (rc == STORE_OK) {
		struct job j;
		job_rows_get(rows, 0, &j);
		api_ml_job_render(&sb, &j);
		job_rows_free(rows);
	}
	cached_get_end(req, rc == STORE_OK ? sb.buf : NULL, sb.len);
	if (rc == STORE_NOT_FOUND) {
		api_ml_reply_job_not_found(req);
	} else if (rc != STORE_OK) {
		reply_store_error(req, rc);
	} else {
		size_t len = sb.len;
		reply_json_text(req, 200, sb_detach(&sb), len);
	}
	sb_release(&sb);
}

/* --- projects.jobs.list --------------------------------------------------- */

static const struct list_wording ml_list_wording = {
	"Field: page_size Error: The page size must be a non-negative integer.",
	"Field: page_token Error: The page token is invalid or doesn't match arguments from the "
	"request.",
	"Field: filter Error: %s",
};

void api_ml_jobs_list(struct request *req)
{
	struct list_query q;
	struct job_rows *rows = NULL;
	struct strbuf sb = STRBUF_INIT;

	if (list_query_read(req, &list_filter_ml_jobs, &ml_list_wording, &q))
		return;
	enum store_rc rc = store_job_list(req->srv->store, STORE_LIST_ML_JOBS, req->params[0], NULL,
					  q.pos, q.size + 1, q.tree, &rows);
	if (rc != STORE_OK) {
		list_query_release(&q);
		reply_store_error(req, rc);
		return;
	}
	size_t n = job_rows_count(rows), shown = n > (size_t)q.size ? (size_t)q.size : n;
	struct job j;
	/* An empty list is "{}": proto3 leaves the empty field out. */
	sb_addch(&sb, '{');
	for (size_t i = 0; i < shown; i++) {
		job_rows_get(rows, i, &j);
		sb_addstr(&sb, i ? "," : "\"jobs\":[");
		api_ml_job_render(&sb, &j);
	}
	if (shown)
		sb_addch(&sb, ']');
	if (n > shown) {
		job_rows_get(rows, shown - 1, &j);
		char *next = list_query_next_token(&q, j.id);
		sb_addf(&sb, ",\"nextPageToken\":\"%s\"", next);
		free(next);
	}
	sb_addch(&sb, '}');
	job_rows_free(rows);
	list_query_release(&q);
	size_t len = sb.len;
	reply_json_text(req, 200, sb_detach(&sb), len);
}

/* --- projects.jobs.cancel ------------------------------------------------- */

void api_ml_jobs_cancel(struct request *req)
{
	struct job_key key = { API_ML, req->params[0], req->params[1] };
	struct job_rows *rows = NULL;
	bool changed;
	enum store_rc rc = store_job_cancel(req->srv->store, &key, CANCEL_MESSAGE, &changed,
					    &rows);

	if (rc == STORE_NOT_FOUND) {
		api_ml_reply_job_not_found(req);
	} else if (rc != STORE_OK) {
		reply_store_error(req, rc);
	} else {
		/* A finished job stays as it is and the call succeeds: gcloud's
		 * "will not perform an operation and exit successfully". */
		if (changed) {
			log_info("job projects/%s/jobs/%s cancel requested", key.project, key.job_id);
			sched_wake(req->srv->sched);
		}
		reply_json_text(req, 200, xstrdup("{}"), 2);
	}
	job_rows_free(rows);
}

/* --- projects.jobs.patch -------------------------------------------------- */

void api_ml_jobs_patch(struct request *req)
{
	struct job_key key = { API_ML, req->params[0], req->params[1] };
	struct violations vs = VIOLATIONS_INIT;
	const char *mask = req_query(req, "updateMask");
	json_t *job = NULL;
	struct job_rows *rows = NULL;
	bool set_labels = false;
	int64_t expect = -1;
	char *labels = NULL;

	if (!mask)
		mask = req_query(req, "update_mask");
	if (!mask || !*mask) {
		reply_error(req, API_INVALID_ARGUMENT,
			    "Field: update_mask Error: The update mask is required; the fields "
			    "that can be updated are labels and etag.");
		return;
	}
	for (const char *p = mask; *p;) {
		size_t n = strcspn(p, ",");
		char *path = xstrndup(p, n);
		char *s = path, *e = path + strlen(path);
		while (*s == ' ')
			s++;
		while (e > s && e[-1] == ' ')
			*--e = '\0';
		if (!strcmp(s, "labels"))
			set_labels = true;
		else if (strcmp(s, "etag"))
			violations_add(&vs, "update_mask",
				       "Only labels and etag can be updated; \"%s\" cannot.", s);
		free(path);
		p += n;
		if (*p == ',')
			p++;
	}
	if (vs.n) {
		api_ml_reply_field_violations(req, &vs);
		goto out;
	}
	job = schema_normalize(&ml_job_message, req->json, "job", &vs);
	if (!job) {
		api_ml_reply_schema_violations(req, &vs);
		goto out;
	}
	const char *etag = json_string_value(json_object_get(job, "etag"));
	if (etag && api_ml_etag_version(etag, &expect)) {
		/* Valid base64, but no etag this server ever gave out. */
		expect = 0;
	}
	json_t *lab = json_object_get(job, "labels");
	if (set_labels)
		spec_validate_labels(lab, "job.labels", &vs);
	if (vs.n) {
		api_ml_reply_field_violations(req, &vs);
		goto out;
	}
	enum store_rc rc;
	if (set_labels) {
		labels = render_labels(lab);
		rc = store_job_set_labels(req->srv->store, &key, expect, labels, &rows);
	} else {
		/* Only the etag in the mask: nothing to change, but still checked. */
		rc = store_job_get(req->srv->store, &key, &rows);
		if (rc == STORE_OK && expect >= 0) {
			struct job j;
			job_rows_get(rows, 0, &j);
			if (j.version != expect)
				rc = STORE_STALE;
		}
	}
	if (rc == STORE_NOT_FOUND) {
		api_ml_reply_job_not_found(req);
	} else if (rc == STORE_STALE) {
		char subject[512];
		snprintf(subject, sizeof(subject), "projects/%s/jobs/%s", key.project, key.job_id);
		reply_error_full(req, API_FAILED_PRECONDITION, 0,
				 json_pack("[{s:s, s:[{s:s, s:s, s:s}]}]", "@type",
					   "type.googleapis.com/google.rpc.PreconditionFailure",
					   "violations", "type", "ETAG", "subject", subject,
					   "description", "The etag does not match the job's current etag."),
				 "Field: job.etag Error: The etag does not match the job's current "
				 "etag: the job was changed since it was read. Get the job again and "
				 "retry with its new etag.");
	} else if (rc != STORE_OK) {
		reply_store_error(req, rc);
	} else {
		reply_job(req, rows);
		rows = NULL;
	}
out:
	job_rows_free(rows);
	free(labels);
	json_decref(job);
	violations_release(&vs);
}

/* --- projects.locations --------------------------------------------------- */

void api_ml_locations_list(struct request *req)
{
	const struct catalog *cat = req->catalog;
	static const struct list_wording wording = {
		"Field: page_size Error: The page size must be a non-negative integer.",
		"Field: page_token Error: The page token is invalid.", "%s",
	};
	size_t n = catalog_region_count(cat, CATALOG_API_ML);
	struct list_query q;

	if (list_query_read(req, NULL, &wording, &q))
		return;
	if ((size_t)q.pos > n) {	/* a token of a longer catalog */
		reply_error(req, API_INVALID_ARGUMENT, "%s", wording.bad_token);
		return;
	}
	int64_t start = q.pos;
	int size = q.size;
	json_t *out = json_object();
	json_t *list = json_array();
	size_t end = (size_t)start + (size_t)size < n ? (size_t)start + (size_t)size : n;
	for (size_t i = (size_t)start; i < end; i++)
		json_array_append_new(list, catalog_location_json(cat, req->params[0],
								   catalog_region_name(cat, CATALOG_API_ML, i)));
	if (json_array_size(list))
		json_object_set_new(out, "locations", list);
	else
		json_decref(list);
	if (end < n) {
		char *next = list_query_next_token(&q, (int64_t)end);
		json_object_set_new(out, "nextPageToken", json_string(next));
		free(next);
	}
	reply_json(req, 200, out);
}

void api_ml_locations_get(struct request *req)
{
	json_t *loc = catalog_location_json(req->catalog, req->params[0], req->params[1]);

	if (!loc) {
		reply_error(req, API_NOT_FOUND,
			    "Location projects/%s/locations/%s was not found: it offers no "
			    "training.", req->params[0], req->params[1]);
		return;
	}
	reply_json(req, 200, loc);
}
