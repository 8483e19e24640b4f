/*
 * store_slurm.h - the Slurm backend's rows (schema/032_slurm.sql): each
 * job's Slurm side for the reconciler (scheduler/slurm_backend.c), and the
 * pilots' admission for the agent routes. docs/slurm.md.
 */
#ifndef TP_STORE_SLURM_H
#define TP_STORE_SLURM_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/*
 * QUEUED jobs of the regions (a JSON array of names) that have no Slurm
 * side yet, oldest first, at most limit: [{id, job_id, project, region,
 * api, spec, labels, trial_params}]. New array.
 */
enum store_rc store_slurm_new_jobs(struct store *st, const char *regions_json, int limit,
				   json_t **out) MUST_CHECK;

/* One job in new_jobs' shape (a resubmit); STORE_NOT_FOUND when gone. New object. */
enum store_rc store_slurm_job(struct store *st, int64_t job, json_t **out) MUST_CHECK;

/*
 * Claims a job for backend: its row, with its pilots' slots and the
 * SHA-256 (hex) of their secret, if the job has none yet and is still
 * QUEUED. *claimed: whether this call made it (another server's
 * reconciler may have).
 */
enum store_rc store_slurm_claim(struct store *st, int64_t job, const char *backend,
				const json_t *slots, const char *token_hash_hex,
				bool *claimed) MUST_CHECK;

/*
 * The backend's rows not yet done, with their jobs: [{job, slurm_id (or
 * null), state, reason, restart_cnt, cancel_sent, final_seen_s (seconds
 * since Slurm first said final, or null), submitted_s (seconds since the
 * submit, or null), updated_s, pilots, job_final_s (seconds since the job ended,
 * or null), job_state, job_id, project, region, api, spec (its scheduling parts
 * only)}]. New array.
 */
enum store_rc store_slurm_active(struct store *st, const char *backend, json_t **out) MUST_CHECK;

/*
 * Writes what is known of a job's Slurm side; every member of fields is
 * optional: slurm_id, state, reason, cancel_sent, final_seen (true: now,
 * if not yet set), done.
 */
enum store_rc store_slurm_update(struct store *st, int64_t job, const json_t *fields) MUST_CHECK;

/* Both sides final: the row is done, and the job's pilots' nodes are deleted (schema/032). */
enum store_rc store_slurm_done(struct store *st, int64_t job) MUST_CHECK;

/* Fails the job (the backend edge) with message; *moved: whether it did. */
enum store_rc store_slurm_fail(struct store *st, int64_t job, const char *message,
			       bool *moved) MUST_CHECK;

/* Slurm requeued the job (schema/032's tp_slurm_requeued); text is its log line. */
enum store_rc store_slurm_requeued(struct store *st, int64_t job, int restart_cnt,
				   const char *text, bool *moved) MUST_CHECK;

/* A pilot's admission: what its job's row says. */
struct slurm_pilot_grant {
	char token_hash[65];	/* hex */
	int restart_cnt;
	bool done;
	int nslots;
	json_t *slots;		/* owned: slurm_jobs.slots */
};

/* STORE_NOT_FOUND when the job has no Slurm side. Release with slurm_pilot_grant_release(). */
enum store_rc store_slurm_pilot_grant(struct store *st, int64_t job,
				      struct slurm_pilot_grant *out) MUST_CHECK;
void slurm_pilot_grant_release(struct slurm_pilot_grant *g);

/* Records that node is the pilot of (job, restart_cnt, slot). */
enum store_rc store_slurm_pilot_add(struct store *st, const char *node, int64_t job,
				    int restart_cnt, int slot) MUST_CHECK;

/* The installation's cluster id (schema/011): its Slurm jobs' comments carry it. */
enum store_rc store_slurm_cluster_id(struct store *st, char *out, size_t len) MUST_CHECK;

/*
 * Why queued jobs wait, as the scheduler writes it (store_sched_note_reasons():
 * [{job, code, text}], a log line when it changed), on a pooled connection.
 */
enum store_rc store_slurm_note_reasons(struct store *st, const json_t *reasons) MUST_CHECK;

#endif
