#include "store_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_filter.h"
#include "store_pg.h"
#include "store_pipe.h"
#include "strbuf.h"
#include "vertex_types.h"

struct job_rows {
	PGresult *res;
};

/* Keep in step with job_rows_get(). */
#define JOB_COLS \
	"id, project, api, job_id, region, spec::text, state, error_message, labels::text, " \
	"output::text, version, cancel_requested, " \
	"(extract(epoch from create_time) * 1000000)::int8, " \
	"(extract(epoch from start_time) * 1000000)::int8, " \
	"(extract(epoch from end_time) * 1000000)::int8, " \
	"(extract(epoch from update_time) * 1000000)::int8"

/* (a study's trials are jobs no API call names: schema/017) */
#define KEY_MATCH "api = $1 AND project = $2 AND job_id = $3 AND parent IS NULL"

/* Statement ids: 0 is store.c's ping; each id is one bit of a mask. */
/* Returns only what the server does not know: the rest it just sent. */
#define INSERT_JOB(stamp) \
	"INSERT INTO jobs (api, project, job_id, region, spec, labels, state, priority, create_time, " \
	"  update_time) " \
	"SELECT $1, $2, $3, $4, $5, $6, 'QUEUED', " \
	"  coalesce(($5::jsonb->'scheduling'->>'priority')::int, 0), t.now, t.now " \
	"FROM " stamp " t " \
	"ON CONFLICT (project, api, job_id) DO NOTHING " \
	"RETURNING id, version, (extract(epoch from create_time) * 1000000)::int8"
static const struct store_stmt stmt_insert = {
	1, "job_insert", INSERT_JOB("(SELECT now() AS now)"), false,
};
/* On an emulator's clock (store_jobs_on_emulated_clock): 0.8-0.9 of the
 * plain insert's rate measured alone, which a server that is no emulator
 * does not pay. */
static const struct store_stmt stmt_insert_clock = {
	67, "job_insert_clock", INSERT_JOB(TP_NOW_ROW), false,
};
/* A Vertex tuning job's trial is a CustomJob with an id of its own
 * (schema/018): get finds it, as Trial.customJob names it. */
static const struct store_stmt stmt_get = {
	2, "job_get", "SELECT " JOB_COLS " FROM jobs WHERE api = $1 AND project = $2 "
	"AND job_id = $3 AND (parent IS NULL OR api = 'vertex')", true,
};
/*
 * Transitions by key, through the state machine's entry point (schema/013):
 * the moved job, or no row when the cause does not lead from its state to
 * `to` (NULL: wherever the cause leads) or the job is absent.
 */
#define TRANSITION_BY_KEY(to, cause, message) \
	"SELECT " JOB_COLS " FROM tp_job_transition(ARRAY(SELECT id FROM jobs WHERE " KEY_MATCH \
	"), " to ", " cause ", ARRAY[" message "]::text[])"

static const struct store_stmt stmt_transition = {
	7, "job_transition", TRANSITION_BY_KEY("$4", "$5", "$6"), false,
};
/* (statement of its own, whose plan tests/unit/test_job_plans.c checks) */
static const struct store_stmt stmt_cancel = {
	3, "job_cancel", TRANSITION_BY_KEY("NULL", "'cancel'", "$4"), false,
};
static const struct store_stmt stmt_set_labels = {
	4, "job_set_labels",
	"UPDATE jobs SET labels = $4 WHERE " KEY_MATCH
	" AND ($5::int8 IS NULL OR version = $5::int8) RETURNING " JOB_COLS,
	false,
};

/* Vertex: the numeric id is the row's own id, as text. */
#define INSERT_NUMBERED(stamp) \
	"WITH n AS (SELECT nextval(pg_get_serial_sequence('jobs', 'id')) AS id) " \
	"INSERT INTO jobs (id, api, project, job_id, region, spec, labels, state, create_time, " \
	"  update_time) " \
	"SELECT n.id, $1, $2, n.id::text, $3, $4, $5, 'QUEUED', t.now, t.now FROM n, " stamp " t " \
	"RETURNING " JOB_COLS
static const struct store_stmt stmt_insert_numbered = {
	60, "job_insert_numbered", INSERT_NUMBERED("(SELECT now() AS now)"), false,
};
static const struct store_stmt stmt_insert_numbered_clock = {
	68, "job_insert_numbered_clock", INSERT_NUMBERED(TP_NOW_ROW), false,
};

/* Whether creates stamp jobs with the emulator's clock (set once at start). */
static bool emulated_clock;

void store_jobs_on_emulated_clock(bool on)
{
	emulated_clock = on;
}

static const struct store_stmt stmt_delete_final = {
	61, "job_delete_final",
	"WITH d AS (DELETE FROM jobs WHERE " KEY_MATCH
	"  AND state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') RETURNING id) "
	"INSERT INTO vertex_operations (project, location, target) "
	"SELECT $2, $4, $5 FROM d "
	"RETURNING id, (extract(epoch from create_time) * 1000000)::int8",
	false,
};
static const struct store_stmt stmt_operation_get = {
	62, "vertex_operation_get",
	"SELECT target, (extract(epoch from create_time) * 1000000)::int8 "
	"FROM vertex_operations WHERE project = $1 AND location = $2 AND id = $3::int8",
	true,
};

static const struct store_stmt stmt_operation_delete = {
	63, "vertex_operation_delete",
	"DELETE FROM vertex_operations WHERE project = $1 AND location = $2 AND id = $3::int8 "
	"RETURNING id",
	false,
};

static const struct store_stmt stmt_operation_list = {
	59, "vertex_operation_list",
	"SELECT id, (extract(epoch from create_time) * 1000000)::int8 FROM vertex_operations "
	"WHERE project = $1 AND location = $2 AND id > $3::int8 ORDER BY id LIMIT $4::int",
	true,
};

size_t job_rows_count(const struct job_rows *rows)
{
	return rows ? (size_t)PQntuples(rows->res) : 0;
}

static int64_t col_int64(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? 0 : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

void job_rows_get(const struct job_rows *rows, size_t i, struct job *out)
{
	const PGresult *r = rows->res;
	int row = (int)i;

	out->id = col_int64(r, row, 0);
	out->project = PQgetvalue(r, row, 1);
	out->api = PQgetvalue(r, row, 2);
	out->job_id = PQgetvalue(r, row, 3);
	out->region = PQgetvalue(r, row, 4);
	out->spec_json = PQgetvalue(r, row, 5);
	out->state = job_state_parse(PQgetvalue(r, row, 6));
	out->error_message = PQgetvalue(r, row, 7);
	out->labels_json = PQgetvalue(r, row, 8);
	out->output_json = PQgetvalue(r, row, 9);
	out->version = col_int64(r, row, 10);
	out->cancel_requested = PQgetvalue(r, row, 11)[0] == 't';
	out->create_us = col_int64(r, row, 12);
	out->start_us = col_int64(r, row, 13);
	out->end_us = col_int64(r, row, 14);
	out->update_us = col_int64(r, row, 15);
}

void job_rows_free(struct job_rows *rows)
{
	if (!rows)
		return;
	PQclear(rows->res);
	free(rows);
}

static struct job_rows *wrap(PGresult *res)
{
	struct job_rows *rows = xmalloc(sizeof(*rows));
	rows->res = res;
	return rows;
}

/* A read's rows; STORE_NOT_FOUND when there are none. */
static enum store_rc job_rows_adopt(PGresult *res, enum store_rc rc, struct job_rows **out)
{
	*out = NULL;
	if (rc != STORE_OK)
		return rc;
	if (PQntuples(res) == 0) {
		PQclear(res);
		return STORE_NOT_FOUND;
	}
	*out = wrap(res);
	return STORE_OK;
}

/* Runs stmt; STORE_NOT_FOUND when it returned no row. */
static enum store_rc exec_rows(struct store *st, const struct store_stmt *stmt, int n,
			       const char *const *params, struct job_rows **out)
{
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;
	PGresult *res = store_exec(c, stmt, n, params, &rc);

	store_release(st, c);
	return job_rows_adopt(res, rc, out);
}

void store_job_inserted(const struct job_key *key, const char *region, const char *spec_json,
			const char *labels_json, const struct job_stamp *stamp, struct job *out)
{
	*out = (struct job){ .id = stamp->id, .project = key->project, .api = key->api,
			     .job_id = key->job_id, .region = region, .spec_json = spec_json,
			     .state = JOB_QUEUED, .error_message = "", .labels_json = labels_json,
			     .output_json = "{}", .version = stamp->version,
			     .create_us = stamp->create_us, .update_us = stamp->create_us };
}

/* The insert's outcome: ON CONFLICT DO NOTHING returns no row when the id is taken. */
static enum store_rc insert_stamp(PGresult *res, enum store_rc rc, struct job_stamp *out)
{
	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_CONFLICT;
	if (rc == STORE_OK)
		*out = (struct job_stamp){ col_int64(res, 0, 0), col_int64(res, 0, 1),
					   col_int64(res, 0, 2) };
	PQclear(res);
	return rc;
}

enum store_rc store_job_insert(struct store *st, const struct job_key *key, const char *region,
			       const char *spec_json, const char *labels_json, struct job *out)
{
	const char *params[] = { key->api, key->project, key->job_id, region, spec_json,
				 labels_json };
	struct store_conn *c = store_acquire(st);
	struct job_stamp stamp;
	enum store_rc rc;
	PGresult *res = store_exec(c, emulated_clock ? &stmt_insert_clock : &stmt_insert, 6, params,
				    &rc);

	store_release(st, c);
	rc = insert_stamp(res, rc, &stamp);
	if (rc == STORE_OK)
		store_job_inserted(key, region, spec_json, labels_json, &stamp, out);
	return rc;
}

/* The pipe's thread: the insert is back; its caller gets the stamp. */
static void insert_piped_done(void (*fn)(void), void *arg, PGresult *res, enum store_rc rc)
{
	struct job_stamp stamp;

	rc = insert_stamp(res, rc, &stamp);
	((store_job_insert_done)fn)(arg, rc == STORE_OK ? &stamp : NULL, rc);
}

void store_job_insert_piped(struct store_pipe *pipe, const struct job_key *key,
			    const char *region, const char *spec_json, const char *labels_json,
			    store_job_insert_done done, void *arg)
{
	const char *params[] = { key->api, key->project, key->job_id, region, spec_json,
				 labels_json };
	store_pipe_submit(pipe, emulated_clock ? &stmt_insert_clock : &stmt_insert, 6, params, insert_piped_done, (void (*)(void))done,
			  arg);
}

enum store_rc store_job_get(struct store *st, const struct job_key *key, struct job_rows **out)
{
	const char *params[] = { key->api, key->project, key->job_id };
	return exec_rows(st, &stmt_get, 3, params, out);
}

/* The pipe's thread: the read is back; its caller gets the rows. */
static void get_piped_done(void (*fn)(void), void *arg, PGresult *res, enum store_rc rc)
{
	struct job_rows *rows;

	rc = job_rows_adopt(res, rc, &rows);
	((store_job_rows_done)fn)(arg, rows, rc);
}

void store_job_get_piped(struct store_pipe *pipe, const struct job_key *key,
			 store_job_rows_done done, void *arg)
{
	const char *params[] = { key->api, key->project, key->job_id };
	store_pipe_submit(pipe, &stmt_get, 3, params, get_piped_done, (void (*)(void))done, arg);
}

enum store_rc store_job_list(struct store *st, enum store_job_list_of of, const char *project,
			     const char *location, int64_t before_id, int limit,
			     const struct list_filter *filter, struct job_rows **out)
{
	static const struct store_filter_collection *const collections[] = {
		[STORE_LIST_ML_JOBS] = &store_filter_ml_jobs,
		[STORE_LIST_CUSTOM_JOBS] = &store_filter_custom_jobs,
		[STORE_LIST_PIPELINES] = &store_filter_pipelines,
		[STORE_LIST_TUNING_JOBS] = &store_filter_custom_jobs,
	};
	struct strbuf sql = STRBUF_INIT, cond = STRBUF_INIT, fsql = STRBUF_INIT;
	struct store_params params = STORE_PARAMS_INIT;
	char before[32];
	enum store_rc rc = STORE_ERROR;
	PGresult *res = NULL;

	*out = NULL;
	snprintf(before, sizeof(before), "%lld", (long long)(before_id > 0 ? before_id : INT64_MAX));
	store_params_add(&params, of == STORE_LIST_ML_JOBS ? "ml" : "vertex");
	store_params_add(&params, project);
	store_params_add(&params, before);
	/* Vertex lists one location; a pipeline is a job with the pipeline's record. */
	if (of != STORE_LIST_ML_JOBS)
		sb_addf(&cond, "region = $%d", store_params_add(&params, location));
	/* A tuning job is no CustomJob; its trials are, and are left out
	 * (docs/tuning.md), as every child job is. */
	if (of == STORE_LIST_PIPELINES)
		sb_addstr(&cond, " AND spec ? '" VERTEX_PIPELINE_KEY "'");
	else if (of == STORE_LIST_TUNING_JOBS)
		sb_addstr(&cond, " AND spec ? 'studySpec'");
	else if (of == STORE_LIST_CUSTOM_JOBS)
		sb_addstr(&cond, " AND NOT spec ? 'studySpec'");
	if (store_filter_compile(filter, collections[of], &fsql, &params))
		goto out;
	if (fsql.len)
		sb_addf(&cond, cond.len ? " AND (%s)" : "%s", fsql.buf);
	/* id > 0 (every row) names the partial index jobs_project_api_id (schema/012). */
	sb_addstr(&sql, "SELECT " JOB_COLS " FROM jobs WHERE api = $1 AND project = $2 AND id < $3 "
		  "AND id > 0 AND parent IS NULL");
	if (cond.len)
		sb_addf(&sql, " AND (%s)", cond.buf);
	sb_addf(&sql, " ORDER BY id DESC LIMIT %d", limit);

	struct store_conn *c = store_acquire(st);
	res = store_exec_sql(c, sb_str(&sql), true, params.n, params.v, &rc);
	store_release(st, c);
	*out = rc == STORE_OK ? wrap(res) : NULL;
out:
	store_params_release(&params);
	sb_release(&fsql);
	sb_release(&cond);
	sb_release(&sql);
	return rc;
}

/*
 * A transition by key: STORE_OK with the moved job; STORE_STALE with the job
 * as it is now when it did not move. (Read again, by a statement of its own:
 * the transition's statement sees the job as it was when it began, and the
 * job may have moved since, which is why it did not move.)
 */
static enum store_rc exec_transition(struct store *st, const struct store_stmt *stmt, int n,
				     const char *const *params, const struct job_key *key,
				     struct job_rows **out)
{
	enum store_rc rc = exec_rows(st, stmt, n, params, out);

	if (rc == STORE_NOT_FOUND && (rc = store_job_get(st, key, out)) == STORE_OK)
		rc = STORE_STALE;
	return rc;
}

enum store_rc store_job_transition(struct store *st, const struct job_key *key,
				   enum job_state to, enum job_cause cause, const char *message,
				   struct job_rows **out)
{
	const char *params[] = { key->api, key->project, key->job_id,
				 to == JOB_STATE_UNSPECIFIED ? NULL : job_state_name(to),
				 job_cause_name(cause), message };
	return exec_transition(st, &stmt_transition, 6, params, key, out);
}

enum store_rc store_job_cancel(struct store *st, const struct job_key *key,
			       const char *message, bool *changed, struct job_rows **out)
{
	const char *params[] = { key->api, key->project, key->job_id, message };
	enum store_rc rc = exec_transition(st, &stmt_cancel, 4, params, key, out);

	*changed = rc == STORE_OK;
	return rc == STORE_STALE ? STORE_OK : rc;	/* not cancellable: as it is */
}

enum store_rc store_job_set_labels(struct store *st, const struct job_key *key,
				   int64_t expect_version, const char *labels_json,
				   struct job_rows **out)
{
	char version[32];
	const char *params[] = { key->api, key->project, key->job_id, labels_json,
				 expect_version < 0 ? NULL : version };
	enum store_rc rc;

	snprintf(version, sizeof(version), "%lld", (long long)expect_version);
	rc = exec_rows(st, &stmt_set_labels, 5, params, out);
	if (rc == STORE_NOT_FOUND && expect_version >= 0) {
		/* Absent, or present with another version? */
		struct job_rows *cur = NULL;
		rc = store_job_get(st, key, &cur);
		job_rows_free(cur);
		if (rc == STORE_OK)
			rc = STORE_STALE;
	}
	return rc;
}

enum store_rc store_job_insert_numbered(struct store *st, const char *api, const char *project,
					const char *region, const char *spec_json,
					const char *labels_json, struct job_rows **out)
{
	const char *params[] = { api, project, region, spec_json, labels_json };
	return exec_rows(st, emulated_clock ? &stmt_insert_numbered_clock : &stmt_insert_numbered, 5,
			 params, out);
}

enum store_rc store_job_delete_final(struct store *st, const struct job_key *key,
				     const char *location, const char *target,
				     int64_t *op_id, int64_t *op_create_us)
{
	const char *params[] = { key->api, key->project, key->job_id, location, target };
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;
	PGresult *res = store_exec(c, &stmt_delete_final, 5, params, &rc);

	store_release(st, c);
	if (rc == STORE_OK && PQntuples(res) == 1) {
		*op_id = col_int64(res, 0, 0);
		*op_create_us = col_int64(res, 0, 1);
	} else if (rc == STORE_OK) {
		struct job_rows *cur = NULL;
		rc = store_job_get(st, key, &cur);
		job_rows_free(cur);
		if (rc == STORE_OK)
			rc = STORE_CONFLICT;	/* present, not finished */
	}
	PQclear(res);
	return rc;
}

enum store_rc store_vertex_operation_get(struct store *st, const char *project,
					 const char *location, const char *id, char **target,
					 int64_t *create_us)
{
	const char *params[] = { project, location, id };
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;
	PGresult *res = store_exec(c, &stmt_operation_get, 3, params, &rc);

	store_release(st, c);
	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_NOT_FOUND;
	if (rc == STORE_OK) {
		*target = xstrdup(PQgetvalue(res, 0, 0));
		*create_us = col_int64(res, 0, 1);
	}
	PQclear(res);
	return rc;
}

enum store_rc store_vertex_operation_delete(struct store *st, const char *project,
					    const char *location, const char *id)
{
	const char *params[] = { project, location, id };
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;
	PGresult *res = store_exec(c, &stmt_operation_delete, 3, params, &rc);

	store_release(st, c);
	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_NOT_FOUND;
	PQclear(res);
	return rc;
}

enum store_rc store_vertex_operation_list(struct store *st, const char *project,
					  const char *location, int64_t after_id, int limit,
					  int64_t **ids, int64_t **create_us, size_t *n)
{
	char after[32], lim[16];
	const char *params[] = { project, location, after, lim };
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;
	PGresult *res;

	snprintf(after, sizeof(after), "%lld", (long long)after_id);
	snprintf(lim, sizeof(lim), "%d", limit);
	res = store_exec(c, &stmt_operation_list, 4, params, &rc);
	store_release(st, c);
	*n = 0;
	*ids = *create_us = NULL;
	if (rc == STORE_OK) {
		*n = (size_t)PQntuples(res);
		*ids = xcalloc(*n + 1, sizeof(**ids));
		*create_us = xcalloc(*n + 1, sizeof(**create_us));
		for (size_t i = 0; i < *n; i++) {
			(*ids)[i] = col_int64(res, (int)i, 0);
			(*create_us)[i] = col_int64(res, (int)i, 1);
		}
	}
	PQclear(res);
	return rc;
}
