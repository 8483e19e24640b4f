/*
 * store_job.h - jobs of both APIs in PostgreSQL.
 *
 * Functions return rows as a struct job_rows that owns the database result;
 * struct job fields borrow from it and stay valid until job_rows_free().
 */
#ifndef TP_STORE_JOB_H
#define TP_STORE_JOB_H

#include <stdbool.h>

#include "job_state.h"
#include "store.h"

struct job {
	int64_t id;		/* surrogate key, increasing with creation */
	const char *project;
	const char *api;	/* "ml" or "vertex" */
	const char *job_id;
	const char *region;
	const char *spec_json;	/* the normalised spec (jsonb text) */
	enum job_state state;
	const char *error_message;
	const char *labels_json;
	const char *output_json;
	int64_t version;	/* bumped by every update; the etag's source */
	bool cancel_requested;
	int64_t create_us, start_us, end_us, update_us;	/* 0 when unset */
};

struct job_rows;
size_t job_rows_count(const struct job_rows *rows);
void job_rows_get(const struct job_rows *rows, size_t i, struct job *out);
void job_rows_free(struct job_rows *rows);	/* NULL is a no-op */

/* What a job is looked up by. */
struct job_key {
	const char *api;
	const char *project;
	const char *job_id;
};

/*
 * Inserts a QUEUED job. STORE_CONFLICT when (project, api, job_id) exists.
 * On success *out describes the new job; its strings are the arguments
 * (borrowed: they must outlive *out).
 */
enum store_rc store_job_insert(struct store *st, const struct job_key *key, const char *region,
			       const char *spec_json, const char *labels_json,
			       struct job *out) MUST_CHECK;

/*
 * What an insert adds to what its caller sent: the new row's id, version
 * and creation time. store_job_inserted() makes the job of it.
 */
struct job_stamp {
	int64_t id, version, create_us;
};
/* The job an insert made: its arguments (borrowed) and its stamp. */
void store_job_inserted(const struct job_key *key, const char *region, const char *spec_json,
			const char *labels_json, const struct job_stamp *stamp, struct job *out);

/*
 * The same insert through the store pipe (store_pipe.h): done(arg, stamp,
 * rc) runs on the pipe's thread (it must not block) with rc as
 * store_job_insert() would return it (STORE_CONFLICT when the id is taken)
 * and, on STORE_OK, the stamp (borrowed for the call).
 */
struct store_pipe;
typedef void (*store_job_insert_done)(void *arg, const struct job_stamp *stamp,
				      enum store_rc rc);
void store_job_insert_piped(struct store_pipe *pipe, const struct job_key *key,
			    const char *region, const char *spec_json, const char *labels_json,
			    store_job_insert_done done, void *arg);

enum store_rc store_job_get(struct store *st, const struct job_key *key,
			    struct job_rows **out) MUST_CHECK;

/*
 * The same read through the store pipe (store_pipe.h): done(arg, rows, rc)
 * runs on the pipe's thread (it must not block) with what store_job_get()
 * would have given (STORE_NOT_FOUND for no row); rows, NULL unless rc is
 * STORE_OK, is the callee's to free.
 */
typedef void (*store_job_rows_done)(void *arg, struct job_rows *rows, enum store_rc rc);
void store_job_get_piped(struct store_pipe *pipe, const struct job_key *key,
			 store_job_rows_done done, void *arg);

/* What a list of jobs lists, and the fields its filter was parsed against. */
enum store_job_list_of {
	STORE_LIST_ML_JOBS,	/* a project's ml v1 jobs (list_filter_ml_jobs) */
	STORE_LIST_CUSTOM_JOBS,	/* a project's Vertex CustomJobs in one location, the
				 * pipelines' jobs among them (list_filter_custom_jobs) */
	STORE_LIST_PIPELINES,	/* a project's Vertex TrainingPipelines in one location
				 * (list_filter_pipelines) */
	STORE_LIST_TUNING_JOBS,	/* a project's Vertex HyperparameterTuningJobs in one
				 * location (list_filter_custom_jobs: the same fields) */
};

/*
 * One page of a project's jobs, newest first: jobs with id < before_id
 * (0: from the newest), at most limit rows, of what `of` says, in location
 * (Vertex; NULL for ml), that filter (spec/list_filter.h, parsed against
 * the fields `of` names; NULL: every job) matches. A filter of other
 * fields is a bug: STORE_ERROR.
 */
struct list_filter;
enum store_rc store_job_list(struct store *st, enum store_job_list_of of, const char *project,
			     const char *location, int64_t before_id, int limit,
			     const struct list_filter *filter, struct job_rows **out) MUST_CHECK;

/*
 * Requests cancellation: the cancel edge of the state machine, through its
 * entry point (store_job_transition). A QUEUED job has nothing running and
 * becomes CANCELLED at once; PREPARING or RUNNING become CANCELLING for the
 * scheduler to finish. A job already final or CANCELLING is returned
 * unchanged with *changed = false. STORE_NOT_FOUND if absent.
 */
enum store_rc store_job_cancel(struct store *st, const struct job_key *key,
			       const char *message, bool *changed,
			       struct job_rows **out) MUST_CHECK;

/*
 * The job state machine's entry point for C code (spec/job_state.h,
 * schema/013's tp_job_transition): moves the job to `to` for cause, and
 * sets its error message to message unless it is NULL. to =
 * JOB_STATE_UNSPECIFIED: wherever cause leads from the job's state. What
 * goes with the new state (times, units, stopping replicas) is done with
 * it, in the same statement. STORE_OK with the moved job in *out;
 * STORE_STALE with the job as it is in *out when cause does not lead from
 * its state to `to` (nothing changed); STORE_NOT_FOUND when absent;
 * STORE_ERROR (logged) when cause leads to `to` from no state at all.
 */
enum store_rc store_job_transition(struct store *st, const struct job_key *key,
				   enum job_state to, enum job_cause cause, const char *message,
				   struct job_rows **out) MUST_CHECK;

/*
 * Replaces the labels. expect_version < 0 skips the etag check; otherwise
 * STORE_STALE when the job's version differs. STORE_NOT_FOUND if absent.
 */
enum store_rc store_job_set_labels(struct store *st, const struct job_key *key,
				   int64_t expect_version, const char *labels_json,
				   struct job_rows **out) MUST_CHECK;

/*
 * Vertex: inserts a QUEUED job whose job_id is its numeric row id (as
 * text); *out has the new row.
 */
enum store_rc store_job_insert_numbered(struct store *st, const char *api, const char *project,
					const char *region, const char *spec_json,
					const char *labels_json, struct job_rows **out) MUST_CHECK;

/*
 * Vertex: deletes a finished job (SUCCEEDED, FAILED, CANCELLED) and records
 * a done delete operation on target in location. STORE_NOT_FOUND when
 * absent, STORE_CONFLICT when the job has not finished.
 */
enum store_rc store_job_delete_final(struct store *st, const struct job_key *key,
				     const char *location, const char *target,
				     int64_t *op_id, int64_t *op_create_us) MUST_CHECK;

/* Vertex: an operation's target (newly allocated) and creation time. */
enum store_rc store_vertex_operation_get(struct store *st, const char *project,
					 const char *location, const char *id, char **target,
					 int64_t *create_us) MUST_CHECK;

/* Vertex: forgets an operation. STORE_NOT_FOUND when absent. */
enum store_rc store_vertex_operation_delete(struct store *st, const char *project,
					    const char *location, const char *id) MUST_CHECK;

/* Vertex: a location's operations with id > after_id, oldest first, at most limit. */
enum store_rc store_vertex_operation_list(struct store *st, const char *project,
					  const char *location, int64_t after_id, int limit,
					  int64_t **ids, int64_t **create_us, size_t *n) MUST_CHECK;

/*
 * Creates stamp createTime with the emulator's clock (schema/022) when on,
 * with now() otherwise: a server that is no emulator pays nothing for the
 * clock on its hottest write. Set once, before any create.
 */
void store_jobs_on_emulated_clock(bool on);

#endif
