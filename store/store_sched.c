#include "store_sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "store_pg.h"

METRIC_HISTOGRAM(queue_wait, "trainplane_queue_wait_seconds",
		 "Time from a job's creation to its placement (QUEUED to PREPARING), "
		 "observed by the scheduler leader that placed it.", &metrics_wait_buckets)

/* Statement ids 30-49 belong to this file. */

/* Any constant works; it only has to be the same in every server. */
#define SCHED_LOCK_KEY "7262961207461826561"

static const struct store_stmt stmt_lock = {
	30, "sched_lock", "SELECT pg_try_advisory_lock(" SCHED_LOCK_KEY ")", false,
};

enum store_rc store_sched_try_lock(struct store_conn *c, bool *got)
{
	enum store_rc rc;
	PGresult *res = store_exec(c, &stmt_lock, 0, NULL, &rc);
	*got = rc == STORE_OK && PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	return rc;
}

/*
 * Fencing (agent/PROTOCOL.md, "Leases and fencing"): an agent that cannot
 * renew its lease SIGTERMs its replicas when the lease it was granted
 * passes (counted from when it sent its last answered sync, which is no
 * later than last_sync) and SIGKILLs them its stop grace later. A node is
 * given up, and its replicas restarted elsewhere, only after last_sync +
 * that lease + that grace + this margin, which covers what lies between
 * the SIGKILL and a dead process: the supervisor waking on a loaded host
 * (it polls at its deadline, at most 200 ms late when the CPU is free), a
 * container engine's `kill` (about a second), and the clocks' rates
 * (NTP bounds them to 500 ppm: 20 ms over 40 s). The agent's clock and the
 * database's never need to agree on the time, only on its rate.
 */
#define FENCE_MARGIN_S "2"

/* A node synced before 010 has no lease of its own: the leader's ($1) applies. */
#define NODE_LEASE "make_interval(secs => coalesce(lease_s, $1::int))"

/* Each sweep below is one statement, so one transaction, that locks what
 * it acts on first (schema/015, "One lock order"). */
static const struct store_stmt stmt_expire = {
	31, "sched_expire", "SELECT lost, gone FROM tp_expire_nodes($1::int, " FENCE_MARGIN_S ")",
	false,
};

/*
 * Vertex jobs with lost replicas go through the state machine first
 * (tp_reconcile_job): scheduling.disableRetries fails the job,
 * restartJobOnWorkerRestart stops the whole gang and restarts it. Jobs
 * restarting (of either API: a Slurm requeue restarts the gang too) are
 * reconciled too: a replica being stopped may have been lost with its node
 * meanwhile, and will never report.
 */
static const struct store_stmt stmt_lost_vertex = {
	42, "sched_lost_vertex",
	"SELECT tp_reconcile_jobs(ARRAY(SELECT j.id FROM jobs j "
	"WHERE j.state IN ('PREPARING', 'RUNNING') AND (j.restarting OR (j.api = 'vertex' AND "
	"  j.spec->'jobSpec'->'scheduling' ?| ARRAY['disableRetries', 'restartJobOnWorkerRestart'] "
	"  AND EXISTS (SELECT 1 FROM replicas p WHERE p.job = j.id AND p.state = 'LOST' "
	"    AND p.desired = 'RUN')))))",
	false,
};

/* Any other lost replica of a running job starts again elsewhere: attempt + 1
 * (a trigger of schema/012 keeps the run time of the attempt it ends). The
 * job takes the state machine's restart edge first: a job that has none
 * from its state (CANCELLING) restarts nothing. */
static const struct store_stmt stmt_restart = {
	32, "sched_restart", "SELECT tp_restart_lost()", false,
};

/* google-duration text to an interval: "7200s", "1.5s". */
#define DURATION(x) "(rtrim(" x ", 's')::numeric * interval '1 second')"

/* Timed-out jobs fail through the state machine's entry point, each with
 * its message, if still in the state they timed out in once locked. */
#define FAIL_TIMED_OUT \
	"SELECT coalesce(tp_fail_timed_out(array_agg(id), array_agg(state), array_agg(message)), 0) " \
	"FROM t"

static const struct store_stmt stmt_timeouts = {
	33, "sched_timeouts",
	"WITH t AS (SELECT id, state, CASE WHEN state = 'RUNNING' THEN format('Job exceeded the maximum "
	"running time (scheduling.max_running_time) of %s.', spec->'scheduling'->>'maxRunningTime') "
	"   ELSE format('Job did not start running within the maximum wait time "
	"(scheduling.max_wait_time) of %s.', spec->'scheduling'->>'maxWaitTime') END AS message "
	"  FROM jobs WHERE state IN ('QUEUED', 'PREPARING', 'RUNNING') "
	"  AND spec ? 'scheduling' AND ("
	"   (state = 'RUNNING' AND spec->'scheduling' ? 'maxRunningTime' AND start_time + "
	DURATION("spec->'scheduling'->>'maxRunningTime'") " < " TP_NOW ") OR "
	"   (state IN ('QUEUED', 'PREPARING') AND preemptions = 0 "
	"    AND spec->'scheduling' ? 'maxWaitTime' AND create_time + "
	DURATION("spec->'scheduling'->>'maxWaitTime'") " < " TP_NOW "))) "
	FAIL_TIMED_OUT,
	false,
};

/*
 * Vertex: jobSpec.scheduling.timeout bounds the running time (default 7
 * days); a FLEX_START job waits for its resources up to maxWaitDuration
 * (default 24 hours, 0 for ever), then fails (docs/vertex.md: Google does
 * not say how; FAILED is the choice).
 */
#define FLEX_WAIT "coalesce(spec->'jobSpec'->'scheduling'->>'maxWaitDuration', '86400s')"
static const struct store_stmt stmt_vertex_timeouts = {
	37, "sched_vertex_timeouts",
	"WITH t AS (SELECT id, state, format('The job exceeded its timeout (scheduling.timeout) of %s.', "
	"    coalesce(spec->'jobSpec'->'scheduling'->>'timeout', '604800s')) AS message "
	"  FROM jobs WHERE state = 'RUNNING' AND api = 'vertex' "
	"  AND start_time + " DURATION("coalesce(spec->'jobSpec'->'scheduling'->>'timeout', "
	"'604800s')") " < " TP_NOW " "
	" UNION ALL SELECT id, state, format('The job did not get the resources it requested "
	"within its maximum wait duration (scheduling.max_wait_duration) of %s.', " FLEX_WAIT ") "
	"  FROM jobs WHERE state = 'QUEUED' AND strategy = 'FLEX_START' AND api = 'vertex' "
	"  AND preemptions = 0 "
	"  AND " DURATION(FLEX_WAIT) " > interval '0' "
	"  AND create_time + " DURATION(FLEX_WAIT) " < " TP_NOW ") "
	FAIL_TIMED_OUT,
	false,
};

static const struct store_stmt stmt_cancelling = {
	34, "sched_cancelling",
	"SELECT tp_reconcile_jobs(ARRAY(SELECT id FROM jobs WHERE state = 'CANCELLING'))", false,
};

static enum store_rc count_of(struct store_conn *c, const struct store_stmt *stmt, int n,
			      const char *const *params, int col, int *out)
{
	enum store_rc rc;
	PGresult *res = store_exec(c, stmt, n, params, &rc);
	if (rc == STORE_OK && out)
		*out = PQntuples(res) ? atoi(PQgetvalue(res, 0, col)) : 0;
	PQclear(res);
	return rc;
}

enum store_rc store_sched_housekeeping(struct store_conn *c, int lease_s, int *lost,
				       int *restarted)
{
	char lease[16];
	const char *p[] = { lease };
	enum store_rc rc;
	int gangs = 0, moved = 0;

	/* One transaction a sweep: a sweep holds no lock while the next one
	 * takes its own (schema/015). A leader that stops between two leaves
	 * nothing half done: the next sweep of any leader picks up from the
	 * committed state. */
	snprintf(lease, sizeof(lease), "%d", lease_s);
	*lost = *restarted = 0;
	if ((rc = count_of(c, &stmt_expire, 1, p, 0, lost)) != STORE_OK ||
	    (rc = count_of(c, &stmt_lost_vertex, 0, NULL, 0, &gangs)) != STORE_OK ||
	    (rc = count_of(c, &stmt_restart, 0, NULL, 0, &moved)) != STORE_OK)
		return rc;
	*restarted = moved + gangs;
	if ((rc = count_of(c, &stmt_timeouts, 0, NULL, 0, NULL)) != STORE_OK ||
	    (rc = count_of(c, &stmt_vertex_timeouts, 0, NULL, 0, NULL)) != STORE_OK)
		return rc;
	return count_of(c, &stmt_cancelling, 0, NULL, 0, NULL);
}

/*
 * The cluster as placement sees it (see store_sched.h); order is the queue's:
 * placement order for full passes, creation order for new jobs only. Built
 * as json, not jsonb: at 3,000 nodes and 2,000 queued jobs jsonb's objects
 * cost 140 ms of the statement's 200 (the text is parsed once, in C).
 */
#define SNAPSHOT_SQL(order) \
	/* Slurm-backed jobs whose pilots (one per replica, of the Slurm job's \
	 * current run) have all registered (schema/032): placed in their own \
	 * region, slurm-<job>, which holds their pilots and nothing else. */ \
	"WITH sr AS MATERIALIZED (SELECT s.job FROM slurm_jobs s WHERE NOT s.done " \
	"   AND jsonb_array_length(s.slots) = (SELECT count(*) FROM slurm_pilots sp " \
	"     JOIN nodes n ON n.name = sp.node WHERE sp.job = s.job AND sp.restart_cnt = s.restart_cnt " \
	"     AND n.state = 'READY' AND NOT n.draining " \
	"     AND n.last_sync > now() - make_interval(secs => coalesce(n.lease_s, $1::int)))), " \
	"q AS MATERIALIZED (SELECT j.id, j.project, j.job_id, " \
	"   j.region, j.spec, j.labels, j.trial, j.trial_params, j.api, " \
	"   CASE WHEN j.id IN (SELECT job FROM sr) THEN 'slurm-' || j.id END AS place_region, " \
	/* a trial is its tuning job to the emulator's rules (scheduler/sim_outcome.c) */ \
	"   (SELECT p.job_id FROM jobs p WHERE p.id = j.parent) AS parent_job_id, " \
	"   (SELECT p.spec->>'displayName' FROM jobs p WHERE p.id = j.parent) AS parent_display_name, " \
	"   (extract(epoch FROM " TP_NOW " - j.create_time) * 1000)::int8 AS waited_ms, " \
	"   j.priority, j.strategy, j.preemptions " \
	"   FROM jobs j WHERE j.state = 'QUEUED' AND j.id > $3::int8 AND NOT j.study " \
	/* A preempted job waits until its replicas have stopped. */ \
	"   AND NOT EXISTS (SELECT 1 FROM replicas p WHERE p.job = j.id AND p.desired <> 'DONE') " \
	/* A region with no schedulable node can place nothing: skip its jobs. */ \
	/* (an array computed once: a semi-join would scan the nodes for every job) */ \
	"   AND (j.region = ANY (ARRAY(SELECT DISTINCT region FROM nodes WHERE state = 'READY' " \
	"     AND NOT draining AND last_sync > now() - make_interval(secs => coalesce(lease_s, $1::int)))) " \
	"     OR j.id IN (SELECT job FROM sr)) " \
	"   ORDER BY " order " LIMIT $2), " \
	"r AS MATERIALIZED (SELECT p.id, p.job, p.uid, " \
	"   p.role, p.idx, CASE WHEN EXISTS (SELECT 1 FROM slurm_jobs s WHERE s.job = p.job) " \
	"     THEN 'slurm-' || p.job ELSE j.region END AS region, p.vcpus, p.memory_mb, p.accel_type, p.accel_count, p.tpu, p.spec, " \
	"   j.spec AS job_spec, j.job_id, j.trial " \
	"   FROM replicas p JOIN jobs j ON j.id = p.job WHERE p.node IS NULL AND p.desired = 'RUN' " \
	"   AND p.state = 'PENDING' ORDER BY p.job, p.id), " \
	/* What the nodes' rows would say, in a few bytes: the schedulable \
	 * nodes, what they are, and their desired versions (bumped with every \
	 * change of their replicas). The same stamp as the caller's ($4): it \
	 * still has them, and they are left out. */ \
	"st AS (SELECT count(*) || '-' || coalesce(sum(n.desired_version), 0) || '-' || " \
	"   coalesce(sum(hashtext(concat_ws('/', n.name, n.incarnation, n.region, n.zone, n.address, " \
	"     n.accel_type, n.accel_count, n.tpu_type, n.vcpus, n.memory_mb, n.port_lo, n.port_hi))::int8), 0) " \
	"   AS stamp FROM nodes n WHERE n.state = 'READY' AND NOT n.draining " \
	"   AND n.last_sync > now() - make_interval(secs => coalesce(n.lease_s, $1::int))) " \
	"SELECT json_build_object(" \
	" 'nodes_stamp', (SELECT stamp FROM st), " \
	/* The nodes only when there is something to place: an idle pass over a
	 * large cluster (an emulator's fleet) reads no node. */ \
	" 'nodes', CASE WHEN NOT (EXISTS (SELECT 1 FROM q) OR EXISTS (SELECT 1 FROM r)) " \
	"   THEN '[]'::json WHEN (SELECT stamp FROM st) IS NOT DISTINCT FROM $4 THEN NULL ELSE " \
	/* each node an array, in NODE_ROW's order (scheduler.c's load_nodes) */ \
	"  (SELECT coalesce(json_agg(json_build_array(" \
	"   n.name, n.region, n.zone, n.address, n.accel_type, n.accel_count, n.tpu_type IS NOT NULL, " \
	"   n.vcpus, n.memory_mb, n.port_lo, n.port_hi, coalesce(u.vcpus, 0), " \
	"   coalesce(u.memory_mb, 0), coalesce(u.gpus, '[]'::json), coalesce(u.tpu, false), " \
	"   coalesce(u.ports, '[]'::json)) " \
	"   ORDER BY n.name), '[]'::json) " \
	"   FROM nodes n " \
	/* what the nodes' replicas take, in one scan of the live replicas (gpus: an \
	 * array of each replica's indices, scheduler.c's load_nodes flattens it) */ \
	"   LEFT JOIN (SELECT p.node, sum(p.vcpus) AS vcpus, sum(p.memory_mb) AS memory_mb, " \
	"     json_agg(p.gpus) FILTER (WHERE cardinality(p.gpus) > 0) AS gpus, " \
	"     bool_or(p.tpu) AS tpu, json_agg(p.port) FILTER (WHERE p.port IS NOT NULL) AS ports " \
	"     FROM replicas p WHERE p.node IS NOT NULL AND p.desired <> 'DONE' GROUP BY p.node) u " \
	"     ON u.node = n.name " \
	"   WHERE n.state = 'READY' AND NOT n.draining " \
	"     AND n.last_sync > now() - make_interval(secs => coalesce(n.lease_s, $1::int))) " \
	"  END, " \
	/* What holds resources (quotas, fair share, preemption): every job with \
	 * replicas on nodes, when something waits. */ \
	" 'running', CASE WHEN EXISTS (SELECT 1 FROM q) THEN " \
	"  (SELECT coalesce(json_agg(json_build_object('id', j.id, 'project', j.project, " \
	"    'region', j.region, 'priority', j.priority, 'strategy', j.strategy, " \
	"    'stopping', j.state NOT IN ('PREPARING', 'RUNNING') OR j.restarting, " \
	"    'age_ms', (extract(epoch FROM " TP_NOW " - coalesce(j.start_time, j.update_time)) " \
	"      * 1000)::int8, " \
	"    'replicas', (SELECT json_agg(json_build_object('node', p.node, 'vcpus', p.vcpus, " \
	"      'memory_mb', p.memory_mb, 'accel_type', p.accel_type, 'accel_count', p.accel_count, " \
	"      'tpu', p.tpu, 'gpus', p.gpus, 'stopping', p.desired <> 'RUN')) FROM replicas p " \
	"      WHERE p.job = j.id AND p.node IS NOT NULL AND p.desired <> 'DONE'))), '[]'::json) " \
	"   FROM jobs j WHERE j.id IN (SELECT p.job FROM replicas p WHERE p.node IS NOT NULL " \
	"     AND p.desired <> 'DONE')) " \
	"  ELSE '[]'::json END, " \
	" 'queued', (SELECT coalesce(json_agg(q), '[]'::json) FROM q), " \
	" 'max_queued_id', (SELECT max(id) FROM jobs WHERE state = 'QUEUED'), " \
	" 'pending', (SELECT coalesce(json_agg(r), '[]'::json) FROM r))::text"

static const struct store_stmt stmt_snapshot = {
	35, "sched_snapshot_full", SNAPSHOT_SQL("j.priority DESC, j.id"), true,
};

/* New jobs only: in creation order, which the id index gives. */
static const struct store_stmt stmt_snapshot_new = {
	41, "sched_snapshot_new", SNAPSHOT_SQL("j.id"), true,
};

enum store_rc store_sched_snapshot(struct store_conn *c, int lease_s, int max_queued,
				   int64_t after_id, const char *nodes_stamp, json_t **out)
{
	char lease[16], limit[16], after[24];
	const char *p[] = { lease, limit, after, nodes_stamp };
	enum store_rc rc;
	PGresult *res;

	snprintf(lease, sizeof(lease), "%d", lease_s);
	snprintf(limit, sizeof(limit), "%d", max_queued);
	snprintf(after, sizeof(after), "%lld", (long long)after_id);
	res = store_exec(c, after_id ? &stmt_snapshot_new : &stmt_snapshot, 4, p, &rc);
	*out = NULL;
	if (rc == STORE_OK) {
		*out = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
		if (!*out)
			rc = STORE_ERROR;
	}
	PQclear(res);
	return rc;
}

/*
 * A batch of placed jobs in one statement and one commit: each job takes
 * the state machine's place edge (QUEUED -> PREPARING) only if it is still
 * QUEUED (not cancelled meanwhile), and only those jobs get their replicas.
 */
static const struct store_stmt stmt_commit_jobs = {
	36, "sched_commit_jobs",
	"WITH input AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(job int8, replicas jsonb)), "
	"ok AS (SELECT m.id, extract(epoch FROM " TP_NOW " - m.create_time) AS waited "
	"  FROM tp_job_transition(ARRAY(SELECT job FROM input), 'PREPARING', 'place') m), "
	"ins AS (INSERT INTO replicas (job, uid, role, idx, node, gpus, port, spec, vcpus, memory_mb, "
	"  accel_type, accel_count, tpu) "
	" SELECT i.job, r.uid, r.role, r.idx, r.node, "
	"  ARRAY(SELECT jsonb_array_elements_text(r.gpus)::int), r.port, r.spec, r.vcpus, "
	"  r.memory_mb, r.accel_type, r.accel_count, r.tpu "
	" FROM input i JOIN ok ON ok.id = i.job, "
	"  jsonb_to_recordset(i.replicas) AS r(uid text, role text, idx int, node text, gpus jsonb, "
	"  port int, spec jsonb, vcpus int, memory_mb bigint, accel_type text, accel_count int, "
	"  tpu boolean) "
	/* a preempted job placed again: its replicas start their next attempt */
	" ON CONFLICT (job, role, idx) DO UPDATE SET uid = EXCLUDED.uid, "
	"  attempt = replicas.attempt + 1, node = EXCLUDED.node, gpus = EXCLUDED.gpus, "
	"  port = EXCLUDED.port, spec = EXCLUDED.spec, vcpus = EXCLUDED.vcpus, "
	"  memory_mb = EXCLUDED.memory_mb, accel_type = EXCLUDED.accel_type, "
	"  accel_count = EXCLUDED.accel_count, tpu = EXCLUDED.tpu, desired = 'RUN', "
	"  state = 'PENDING', seq = 0, exit_code = NULL, message = '', start_time = NULL, "
	"  end_time = NULL "
	" RETURNING 1), "
	"gone AS (DELETE FROM job_queue_reasons WHERE job IN (SELECT id FROM ok)) "
	"SELECT id, (SELECT count(*) FROM ins), waited FROM ok",
	false,
};

/* The commit's lock step (schema/015): the jobs, then the nodes they go to
 * and those their replicas are on (a preempted job's, placed again). */
static const struct store_stmt stmt_commit_lock = {
	47, "sched_commit_lock",
	"SELECT tp_lock_jobs(ARRAY(SELECT (x->>'job')::int8 FROM jsonb_array_elements($1::jsonb) x), "
	"  ARRAY(SELECT DISTINCT r->>'node' FROM jsonb_array_elements($1::jsonb) x, "
	/* (and the nodes a preempted job's replicas leave) */
	"    jsonb_array_elements(x->'replicas') r), true)",
	false,
};

static enum store_rc commit_jobs_once(struct store_conn *c, const char *const *p, int *placed)
{
	enum store_rc rc;
	PGresult *res = NULL;

	*placed = 0;
	if ((rc = store_begin(c)) != STORE_OK)
		return rc;
	PQclear(store_exec(c, &stmt_commit_lock, 1, p, &rc));
	if (rc == STORE_OK)
		res = store_exec(c, &stmt_commit_jobs, 1, p, &rc);
	if (rc == STORE_OK && (rc = store_commit(c)) == STORE_OK) {
		*placed = PQntuples(res);
		/* Committed: these jobs left the queue. */
		for (int i = 0; i < *placed; i++)
			metric_observe(&queue_wait, strtod(PQgetvalue(res, i, 2), NULL));
	}
	PQclear(res);
	store_rollback(c);	/* no-op after a commit */
	return rc;
}

enum store_rc store_sched_commit_jobs(struct store_conn *c, const json_t *batch, int *placed)
{
	char *text = json_dumps(batch, JSON_COMPACT);
	const char *p[] = { text };
	enum store_rc rc;

	for (int attempt = 0;; attempt++) {
		rc = commit_jobs_once(c, p, placed);
		if (!store_retry(rc, attempt, "a placement commit"))
			break;
	}
	free(text);
	return rc;
}

static const struct store_stmt stmt_poke = {
	40, "sched_poke", "SELECT pg_notify('tp_sched', $1)", false,
};

enum store_rc store_sched_poke(struct store_conn *c, const char *what)
{
	const char *p[] = { what };
	enum store_rc rc;
	PQclear(store_exec(c, &stmt_poke, 1, p, &rc));
	return rc;
}

static const struct store_stmt stmt_note_queued = {
	52, "sched_note_queued",
	"WITH r AS (SELECT j.id AS job, format('The job is queued: no node in region %s takes work "
	"now; it waits until one registers.', j.region) AS text FROM jobs j "
	"  WHERE $2::boolean AND j.state = 'QUEUED' AND j.id > $4::int8 "
	"  AND j.region NOT IN (SELECT region FROM nodes WHERE state = 'READY' AND NOT draining "
	"    AND last_sync > now() - make_interval(secs => coalesce(lease_s, $3::int))) "
	"  ORDER BY j.id LIMIT 1000), "
	"i AS (SELECT x.job, x.text FROM jsonb_to_recordset($1::jsonb) AS x(job int8, text text) "
	"  UNION ALL SELECT job, text FROM r), "
	"ins AS (INSERT INTO log_entries (job, task, attempt, stream, time, text) "
	" SELECT i.job, 'service', 1, 'system', " TP_AT("clock_timestamp()") ", i.text "
	" FROM i JOIN jobs j ON j.id = i.job AND j.state = 'QUEUED' "
	" WHERE NOT EXISTS (SELECT 1 FROM log_entries l WHERE l.job = i.job AND l.task = 'service') "
	" RETURNING 1) "
	"SELECT coalesce((SELECT max(job) FROM r), $4::int8), (SELECT count(*) FROM ins)",
	false,
};

enum store_rc store_sched_note_queued(struct store_conn *c, const json_t *notes, bool regions,
				      int lease_s, int64_t *after_id)
{
	char *text = json_dumps(notes, JSON_COMPACT);
	char lease[16], after[24];
	const char *p[] = { text, regions ? "true" : "false", lease, after };
	enum store_rc rc;

	snprintf(lease, sizeof(lease), "%d", lease_s);
	snprintf(after, sizeof(after), "%lld", (long long)*after_id);
	PGresult *res = store_exec(c, &stmt_note_queued, 4, p, &rc);
	if (rc == STORE_OK && PQntuples(res))
		*after_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	free(text);
	return rc;
}

static const struct store_stmt stmt_job_cluster = {
	38, "sched_job_cluster",
	"SELECT coalesce(jsonb_agg(jsonb_build_object('role', p.role, 'idx', p.idx, "
	"  'address', n.address, 'port', p.port) ORDER BY p.id), '[]'::jsonb)::text "
	"FROM replicas p LEFT JOIN nodes n ON n.name = p.node WHERE p.job = $1",
	true,
};

enum store_rc store_sched_job_cluster(struct store_conn *c, int64_t job, json_t **out)
{
	char id[24];
	const char *p[] = { id };
	enum store_rc rc;
	PGresult *res;

	snprintf(id, sizeof(id), "%lld", (long long)job);
	res = store_exec(c, &stmt_job_cluster, 1, p, &rc);
	*out = rc == STORE_OK ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
	PQclear(res);
	return rc == STORE_OK && !*out ? STORE_ERROR : rc;
}

/* A restarted replica's move, after its lock step: its job, then its new node. */
static const struct store_stmt stmt_move_lock = {
	48, "sched_move_lock", "SELECT tp_lock_jobs(ARRAY[$1::int8], ARRAY[$2])", false,
};

static const struct store_stmt stmt_move = {
	39, "sched_move",
	"UPDATE replicas SET node = $2, gpus = ARRAY(SELECT jsonb_array_elements_text($3::jsonb)::int), "
	"  port = $4, spec = $5::jsonb "
	"WHERE id = $1 AND node IS NULL AND state = 'PENDING' AND desired = 'RUN' RETURNING id",
	false,
};

static enum store_rc move_once(struct store_conn *c, const char *const *lock,
			       const char *const *p, bool *placed)
{
	enum store_rc rc;
	PGresult *res = NULL;

	*placed = false;
	if ((rc = store_begin(c)) != STORE_OK)
		return rc;
	PQclear(store_exec(c, &stmt_move_lock, 2, lock, &rc));
	if (rc == STORE_OK)
		res = store_exec(c, &stmt_move, 5, p, &rc);
	if (rc == STORE_OK && (rc = store_commit(c)) == STORE_OK)
		*placed = PQntuples(res) == 1;
	PQclear(res);
	store_rollback(c);	/* no-op after a commit */
	return rc;
}

enum store_rc store_sched_commit_move(struct store_conn *c, int64_t job, int64_t replica,
				      const char *node, const json_t *gpus, int port,
				      const json_t *spec, bool *placed)
{
	char jobid[24], id[24], portbuf[16];
	char *g = json_dumps(gpus, JSON_COMPACT), *sp = json_dumps(spec, JSON_COMPACT);
	const char *p[] = { id, node, g, portbuf, sp };
	const char *lock[] = { jobid, node };
	enum store_rc rc;

	snprintf(jobid, sizeof(jobid), "%lld", (long long)job);
	snprintf(id, sizeof(id), "%lld", (long long)replica);
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	for (int attempt = 0;; attempt++) {
		rc = move_once(c, lock, p, placed);
		if (!store_retry(rc, attempt, "a restarted replica's placement"))
			break;
	}
	free(g);
	free(sp);
	return rc;
}

/* --- sharing the cluster (issue 28): statement ids 128-143 -------------------- */

static const struct store_stmt stmt_preempt = {
	128, "sched_preempt",
	"SELECT tp_preempt_jobs(ARRAY(SELECT (x->>'job')::int8 FROM jsonb_array_elements($1::jsonb) x), "
	"  ARRAY(SELECT x->>'text' FROM jsonb_array_elements($1::jsonb) x), $2::int)",
	false,
};

enum store_rc store_sched_preempt(struct store_conn *c, const json_t *victims, int max_times,
				  int *moved)
{
	char *text = json_dumps(victims, JSON_COMPACT);
	char max[16];
	const char *p[] = { text, max };
	enum store_rc rc;

	snprintf(max, sizeof(max), "%d", max_times);
	for (int attempt = 0;; attempt++) {
		rc = count_of(c, &stmt_preempt, 2, p, 0, moved);
		if (!store_retry(rc, attempt, "a preemption"))
			break;
	}
	free(text);
	return rc;
}

/*
 * Reasons: kept per job; a job's log gets a line when its reason's code
 * changes (not its figures: a wait for capacity says so once).
 */
static const struct store_stmt stmt_reasons = {
	129, "sched_reasons",
	"WITH x AS (SELECT x.job, x.code, x.text FROM jsonb_to_recordset($1::jsonb) "
	"   AS x(job int8, code text, text text) JOIN jobs j ON j.id = x.job AND j.state = 'QUEUED'), "
	"up AS (INSERT INTO job_queue_reasons AS r (job, code, text, since) "
	"  SELECT job, code, text, " TP_NOW " FROM x "
	"  ON CONFLICT (job) DO UPDATE SET code = EXCLUDED.code, text = EXCLUDED.text, "
	"   since = CASE WHEN r.code = EXCLUDED.code THEN r.since ELSE EXCLUDED.since END "
	"  WHERE r.code <> EXCLUDED.code OR r.text <> EXCLUDED.text "
	"  RETURNING r.job, r.code, r.text, r.since = " TP_NOW " AS changed), "
	"ins AS (INSERT INTO log_entries (job, task, attempt, stream, time, text, trial) "
	"  SELECT coalesce(j.parent, j.id), 'service', "
	"   coalesce((SELECT max(p.attempt) FROM replicas p WHERE p.job = j.id), 1), "
	"   CASE WHEN up.code IN ('never_fits', 'quota') THEN 'warning' ELSE 'system' END, "
	"   " TP_AT("clock_timestamp()") ", "
	"   CASE WHEN j.parent IS NULL THEN up.text ELSE format('Trial %s: %s', j.trial, up.text) END, "
	"   j.trial "
	"  FROM up JOIN jobs j ON j.id = up.job WHERE up.changed RETURNING 1) "
	"SELECT count(*) FROM ins",
	false,
};

enum store_rc store_sched_note_reasons(struct store_conn *c, const json_t *reasons, int *lines)
{
	char *text = json_dumps(reasons, JSON_COMPACT);
	const char *p[] = { text };
	enum store_rc rc = count_of(c, &stmt_reasons, 1, p, 0, lines);

	free(text);
	return rc;
}

/* Jobs that waited too long for a node that can hold them (never_fits_fail_seconds). */
static const struct store_stmt stmt_fail_waiting = {
	130, "sched_fail_waiting",
	"SELECT tp_fail_timed_out(ARRAY(SELECT (x->>'job')::int8 FROM jsonb_array_elements($1::jsonb) x), "
	"  ARRAY(SELECT 'QUEUED' FROM jsonb_array_elements($1::jsonb) x), "
	"  ARRAY(SELECT x->>'text' FROM jsonb_array_elements($1::jsonb) x))",
	false,
};

enum store_rc store_sched_fail_waiting(struct store_conn *c, const json_t *jobs, int *failed)
{
	char *text = json_dumps(jobs, JSON_COMPACT);
	const char *p[] = { text };
	enum store_rc rc = count_of(c, &stmt_fail_waiting, 1, p, 0, failed);

	free(text);
	return rc;
}
