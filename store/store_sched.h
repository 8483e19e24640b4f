/*
 * store_sched.h - the scheduler's statements, run on the leader's own
 * connection (store_conn_open), never on the pool.
 */
#ifndef TP_STORE_SCHED_H
#define TP_STORE_SCHED_H

#include <jansson.h>
#include <stdbool.h>

#include "store.h"

/* pg_try_advisory_lock on the scheduler key: *got tells whether we lead. */
enum store_rc store_sched_try_lock(struct store_conn *c, bool *got) MUST_CHECK;

/*
 * The housekeeping of one pass, in one transaction: nodes past their lease,
 * their agent's stop grace and a margin (store_sched.c) become LOST with
 * their replicas (a replica being stopped is done); Vertex jobs with lost replicas fail
 * (scheduling.disableRetries) or restart as a whole (restartJobOnWorkerRestart,
 * see tp_reconcile_job); other LOST replicas of running jobs get attempt + 1
 * and wait for a node; timed-out jobs fail; CANCELLING jobs are reconciled.
 * Every job moves through the state machine's entry point (schema/013).
 * *lost: nodes lost now; *restarted: replicas to re-place, plus Vertex jobs
 * failed or restarted.
 */
enum store_rc store_sched_housekeeping(struct store_conn *c, int lease_s, int *lost,
				       int *restarted) MUST_CHECK;

/*
 * The cluster as placement sees it, as one JSON document:
 *   {"nodes": [[name, region, zone, address, accel_type, accel_count, tpu,
 *               vcpus, memory_mb, port_lo, port_hi, used vcpus, used memory_mb,
 *               used gpus: [[each replica's indices], ...], used tpu,
 *               used ports: [..]]]   (arrays: cheaper than objects at 10,000 nodes),
 *    "queued": [{id, project, job_id, region, spec, labels, waited_ms, priority,
 *                strategy, preemptions}],
 *    "running": [{id, project, region, priority, strategy, stopping, age_ms,
 *                 replicas: [{node, vcpus, memory_mb, accel_type, accel_count,
 *                             tpu, gpus, stopping}]}]   (only when jobs queue),
 *    "max_queued_id": the newest queued job's id,
 *    "pending": [{id, job, uid, role, idx, region, vcpus, memory_mb,
 *                 accel_type, accel_count, tpu, spec, job_spec, job_id}]}
 * Only READY, not draining nodes with a fresh sync are listed, and queued
 * jobs with an id above after_id (0: all), but not a preempted job whose
 * replicas are still stopping. "nodes_stamp" sums up the nodes' rows; when
 * it equals nodes_stamp (the caller's last one; NULL: none) "nodes" is null:
 * the caller's copy still holds. New object.
 */
enum store_rc store_sched_snapshot(struct store_conn *c, int lease_s, int max_queued,
				   int64_t after_id, const char *nodes_stamp, json_t **out) MUST_CHECK;

/*
 * Commits placed jobs in one statement: batch is a JSON array of
 * {"job": id, "replicas": [{uid, role, idx, node, gpus, port, spec, vcpus,
 * memory_mb, accel_type, accel_count, tpu}]}. Each job takes the place
 * edge; one that left QUEUED meanwhile (cancelled) is skipped whole.
 * *placed: jobs committed.
 */
enum store_rc store_sched_commit_jobs(struct store_conn *c, const json_t *batch,
				      int *placed) MUST_CHECK;

/* Asks the leader, wherever it runs, for a pass: what is "new" or "full". */
enum store_rc store_sched_poke(struct store_conn *c, const char *what) MUST_CHECK;

/*
 * The service's first line for queued jobs that wait (schema/016): notes
 * is [{job, text}] from the pass; with regions, also the queued jobs of
 * regions without a schedulable node (lease_s as for the snapshot) whose
 * id is past *after_id, at most 1000 a call, *after_id then moved past
 * them (each is looked at once). A job gets one such line, the first: none
 * once it has any service line.
 */
enum store_rc store_sched_note_queued(struct store_conn *c, const json_t *notes, bool regions,
				      int lease_s, int64_t *after_id) MUST_CHECK;

/* The job's replicas with their addresses: [{role, idx, address, port}] (new). */
enum store_rc store_sched_job_cluster(struct store_conn *c, int64_t job, json_t **out) MUST_CHECK;

/* Commits a re-placed replica of job (still PENDING and unplaced, else *placed = false). */
enum store_rc store_sched_commit_move(struct store_conn *c, int64_t job, int64_t replica,
				      const char *node, const json_t *gpus, int port,
				      const json_t *spec, bool *placed) MUST_CHECK;

/*
 * Preempts victims, [{"job": id, "text": why}]: each still placed goes back
 * to QUEUED through the state machine's preempt edge, its replicas told to
 * stop, its log told text; one preempted max_times already fails
 * (STOCKOUT). *moved: jobs moved.
 */
enum store_rc store_sched_preempt(struct store_conn *c, const json_t *victims, int max_times,
				  int *moved) MUST_CHECK;

/*
 * Why queued jobs wait, [{"job", "code", "text"}]: kept for the queue API,
 * and a service line for each job whose code or text changed. *lines: lines written.
 */
enum store_rc store_sched_note_reasons(struct store_conn *c, const json_t *reasons,
				       int *lines) MUST_CHECK;

/*
 * Fails queued jobs, [{"job", "text"}], through the state machine's timeout
 * edge (those still QUEUED once locked). *failed: jobs failed.
 */
enum store_rc store_sched_fail_waiting(struct store_conn *c, const json_t *jobs,
				       int *failed) MUST_CHECK;

#endif
