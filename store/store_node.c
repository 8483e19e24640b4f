#include "store_node.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_state.h"
#include "log.h"
#include "metrics.h"
#include "store_job.h"
#include "store_pg.h"
#include "strbuf.h"
#include "vertex_types.h"

METRIC_HISTOGRAM(submit_to_running, "trainplane_submit_to_running_seconds",
		 "Time from a job's creation to RUNNING, observed by the server whose agent sync "
		 "made it RUNNING.", &metrics_wait_buckets)

/* Statement ids 10-29 belong to this file (see store_job.c for 1-9). */

static const struct store_stmt stmt_register = {
	10, "node_register",
	"WITH old AS (SELECT incarnation FROM nodes WHERE name = $1), "
	"up AS (INSERT INTO nodes (name, incarnation, region, zone, machine_type, vcpus, memory_mb, "
	"  address, port_lo, port_hi, runtime, accel_type, accel_count, tpu_type, tpu_cores, "
	"  agent_version, state, last_sync) "
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, 'READY', now()) "
	" ON CONFLICT (name) DO UPDATE SET incarnation = EXCLUDED.incarnation, region = EXCLUDED.region, "
	"  zone = EXCLUDED.zone, machine_type = EXCLUDED.machine_type, vcpus = EXCLUDED.vcpus, "
	"  memory_mb = EXCLUDED.memory_mb, address = EXCLUDED.address, port_lo = EXCLUDED.port_lo, "
	"  port_hi = EXCLUDED.port_hi, runtime = EXCLUDED.runtime, accel_type = EXCLUDED.accel_type, "
	"  accel_count = EXCLUDED.accel_count, tpu_type = EXCLUDED.tpu_type, "
	"  tpu_cores = EXCLUDED.tpu_cores, agent_version = EXCLUDED.agent_version, "
	/* the node state machine's register edge (lib/node_state.h; schema/030) */
	"  state = coalesce((SELECT e.to_state FROM node_state_edges e "
	"    WHERE e.from_state = nodes.state AND e.cause = 'register'), nodes.state), "
	"  last_sync = now(), desired_version = nodes.desired_version + 1 "
	" RETURNING name), "
	/* Replicas of an older incarnation are gone with it: the replica state
	 * machine's lose edge, from every state it leaves (lib/replica_state.h). */
	"lost AS (UPDATE replicas p SET state = e.to_state, end_time = " TP_NOW " "
	" FROM replica_state_edges e WHERE e.from_state = p.state AND e.cause = 'lose' "
	"  AND p.node = $1 AND p.desired <> 'DONE' "
	"  AND EXISTS (SELECT 1 FROM old WHERE old.incarnation <> $2) "
	"  AND EXISTS (SELECT 1 FROM up) RETURNING 1) "
	/* (a data-modifying WITH runs whether or not its rows are read) */
	"SELECT id FROM cluster",
	false,
};

/* The register's lock step (schema/015): the jobs of the node's live
 * replicas (an older incarnation's are marked LOST), then the node. */
static const struct store_stmt stmt_register_lock = {
	49, "node_register_lock",
	"SELECT tp_lock_jobs(ARRAY(SELECT DISTINCT job FROM replicas WHERE node = $1 "
	"  AND state IN (SELECT from_state FROM replica_state_edges WHERE cause = 'lose') "
	"  AND desired <> 'DONE'), ARRAY[$1])",
	false,
};

/* The lease, stop grace and policy, written with the registration; and the
 * node's news for every server (a new incarnation, a new desired version):
 * its parked polls wake and what servers know of it is dropped
 * (server/node_cache.h). */
static const struct store_stmt stmt_register_fencing = {
	28, "node_register_fencing",
	"UPDATE nodes SET lease_s = $2::int, stop_grace_s = $3::int, disconnect_policy = $4 "
	"WHERE name = $1 RETURNING pg_notify('tp_node', $1)",
	false,
};

static enum store_rc register_once(struct store_conn *c, const char *const *params,
				   const char *const *fencing, char *cluster_id,
				   size_t cluster_id_len);

enum store_rc store_node_register(struct store *st, const struct node_info *n,
				  char *cluster_id, size_t cluster_id_len)
{
	struct store_conn *c = store_acquire(st);
	enum store_rc rc = store_node_register_on(c, n, cluster_id, cluster_id_len);
	store_release(st, c);
	return rc;
}

enum store_rc store_node_register_on(struct store_conn *c, const struct node_info *n,
				     char *cluster_id, size_t cluster_id_len)
{
	char vcpus[16], mem[24], lo[16], hi[16], accel[16], cores[16], lease[16], grace[16];
	const char *params[] = { n->name, n->incarnation, n->region, n->zone,
				 n->machine_type ? n->machine_type : "", vcpus, mem, n->address, lo,
				 hi, n->runtime, n->accel_type, accel, n->tpu_type, cores,
				 n->agent_version ? n->agent_version : "" };
	enum store_rc rc;

	snprintf(vcpus, sizeof(vcpus), "%d", n->vcpus);
	snprintf(mem, sizeof(mem), "%lld", (long long)n->memory_mb);
	snprintf(lo, sizeof(lo), "%d", n->port_lo);
	snprintf(hi, sizeof(hi), "%d", n->port_hi);
	snprintf(accel, sizeof(accel), "%d", n->accel_count);
	snprintf(cores, sizeof(cores), "%d", n->tpu_cores);
	snprintf(lease, sizeof(lease), "%d", n->lease_s);
	snprintf(grace, sizeof(grace), "%d", n->stop_grace_s);
	const char *fencing[] = { n->name, lease, grace,
				  n->disconnect_policy ? n->disconnect_policy : "keep_running" };
	for (int attempt = 0;; attempt++) {
		rc = register_once(c, params, fencing, cluster_id, cluster_id_len);
		if (!store_retry(rc, attempt, "an agent's registration"))
			break;
	}
	return rc;
}

static enum store_rc register_once(struct store_conn *c, const char *const *params,
				   const char *const *fencing, char *cluster_id,
				   size_t cluster_id_len)
{
	enum store_rc rc;

	if ((rc = store_begin(c)) != STORE_OK)
		goto out;
	PQclear(store_exec(c, &stmt_register_lock, 1, params, &rc));
	if (rc != STORE_OK)
		goto out;
	PGresult *res = store_exec(c, &stmt_register, 16, params, &rc);
	if (rc == STORE_OK) {
		if (PQntuples(res) == 1)
			snprintf(cluster_id, cluster_id_len, "%s", PQgetvalue(res, 0, 0));
		else
			rc = STORE_ERROR;	/* migration 011 makes exactly one */
	}
	PQclear(res);
	if (rc == STORE_OK)
		PQclear(store_exec(c, &stmt_register_fencing, 4, fencing, &rc));
	if (rc == STORE_OK)
		rc = store_commit(c);
out:
	store_rollback(c);	/* no-op after a commit */
	return rc;
}

/*
 * The sync transaction. Reports are applied set-wise: a report counts only
 * for the replica's current attempt on this node and only if its seq is
 * newer than the last applied one, so retries and stale agents change
 * nothing. Final states drop the replica from the desired set (DONE): the
 * agent then forgets it.
 */
static const struct store_stmt stmt_sync_lease = {
	11, "node_sync_lease",
	"UPDATE nodes SET last_sync = now(), lease_s = $2::int, "
	/* the node state machine's stop or sync edge; none leaves the node as
	 * it is (a STOPPING node stays so until its agent registers again) */
	"  state = coalesce((SELECT e.to_state FROM node_state_edges e WHERE e.from_state = nodes.state "
	"    AND e.cause = CASE WHEN $3::boolean THEN 'stop' ELSE 'sync' END), nodes.state) "
	"WHERE name = $1 "
	"RETURNING incarnation",
	false,
};

/*
 * The sync's lock step (schema/015, "One lock order"): the jobs of the
 * replicas it reports on, by id, then its node and, when a report ends a
 * replica (the job may fail or succeed and stop its replicas elsewhere, or
 * restart its gang), every node of those jobs, by name. Returns the jobs:
 * the reports apply to their replicas alone.
 */
static const struct store_stmt stmt_sync_lock = {
	46, "node_sync_lock",
	"WITH r AS (SELECT x->>'replica' AS uid, x->>'state' AS state "
	"  FROM jsonb_array_elements($2::jsonb) x), "
	"j AS (SELECT coalesce(array_agg(DISTINCT p.job), '{}') AS ids FROM replicas p "
	"  WHERE p.node = $1 AND p.uid IN (SELECT uid FROM r)) "
	"SELECT tp_lock_jobs(j.ids, ARRAY[$1], EXISTS (SELECT 1 FROM r "
	"  WHERE r.state IN ('EXITED', 'FAILED_TO_START', 'LOST'))), j.ids::text FROM j",
	false,
};

/* A resumed long-poll: the node as it is, its lease untouched. */
static const struct store_stmt stmt_sync_no_lease = {
	29, "node_sync_no_lease", "SELECT incarnation FROM nodes WHERE name = $1", false,
};

static const struct store_stmt stmt_sync_apply = {
	12, "node_sync_apply",
	"WITH r AS (SELECT * FROM jsonb_to_recordset($2::jsonb) AS x(replica text, attempt int, "
	"   seq bigint, state text, \"exitCode\" int, message text, \"startTime\" timestamptz, "
	"   \"endTime\" timestamptz, logs jsonb, metrics jsonb)), "
	/* What the replicas were before: their lines say what changed. */
	"was AS MATERIALIZED (SELECT p.id, p.state, p.desired FROM replicas p "
	"  WHERE p.node = $1 AND p.uid IN (SELECT replica FROM r)), "
	/* LOST: the agent fenced it (its lease passed) or stopped it with its
	 * node (an orderly stop); a replica still wanted restarts elsewhere
	 * (sched_restart), one being stopped is done. */
	/* The reported state where an edge of the replica state machine
	 * (lib/replica_state.h; not a new attempt's) joins the replica's to it;
	 * else the replica keeps its state (a report going back, RUNNING ->
	 * STARTING, is no edge) and the rest of the report is taken. */
	"upd AS (UPDATE replicas p SET state = CASE WHEN EXISTS (SELECT 1 FROM replica_state_edges e "
	"     WHERE e.from_state = p.state AND e.to_state = r.state AND NOT e.new_attempt) "
	"     THEN r.state ELSE p.state END, exit_code = r.\"exitCode\", "
	/* a trial's measurements (schema/017), as the agent last read them */
	"   metrics = coalesce(r.metrics, p.metrics), "
	"   message = coalesce(r.message, ''), seq = r.seq, "
	/* an agent's times are real instants: on the emulator's clock (schema/022) */
	"   start_time = coalesce(p.start_time, " TP_AT("r.\"startTime\"") ", "
	"     CASE WHEN r.state = 'RUNNING' THEN " TP_NOW " END), "
	"   end_time = coalesce(" TP_AT("r.\"endTime\"") ", CASE WHEN r.state IN ('EXITED', 'FAILED_TO_START', "
	"     'LOST') THEN " TP_NOW " END), "
	"   desired = CASE WHEN r.state IN ('EXITED', 'FAILED_TO_START') "
	"     OR (r.state = 'LOST' AND p.desired = 'STOP') THEN 'DONE' ELSE p.desired END "
	" FROM r WHERE p.uid = r.replica AND p.attempt = r.attempt AND p.node = $1 AND p.seq < r.seq "
	"   AND p.job = ANY ($3::int8[]) "
	/* A LOST attempt is over (its node was given up or re-registered, or it
	 * was fenced): a late exit of it, e.g. the 143 of its stop, must not
	 * fail its job before the scheduler restarts it. */
	"   AND p.desired <> 'DONE' AND p.state <> 'LOST' "
	"   AND r.state IN ('STARTING', 'RUNNING', 'EXITED', 'FAILED_TO_START', 'LOST') "
	" RETURNING p.id, p.job, p.uid, p.role, p.idx, p.attempt, p.state, p.exit_code, p.message), "
	/* The service's line for each replica whose state changed (schema/016). */
	"svc AS (INSERT INTO log_entries (job, task, attempt, stream, time, text, trial) "
	" SELECT coalesce(j.parent, upd.job), 'service', upd.attempt, "
	"   CASE WHEN upd.state = 'RUNNING' OR was.desired <> 'RUN' "
	"     OR (upd.state = 'EXITED' AND upd.exit_code = 0) THEN 'system' "
	"     WHEN upd.state = 'LOST' THEN 'warning' ELSE 'error' END, " TP_AT("clock_timestamp()") ", "
	"   CASE WHEN upd.state = 'RUNNING' THEN format('The replica %s is running on node %s "
	"(attempt %s).', tp_replica_label(j.api, upd.role, upd.idx), $1, upd.attempt) "
	"     WHEN was.desired <> 'RUN' AND upd.state = 'FAILED_TO_START' THEN format('The replica %s "
	"was stopped before it started.', tp_replica_label(j.api, upd.role, upd.idx)) "
	"     WHEN was.desired <> 'RUN' THEN format('The replica %s stopped (%s).', "
	"       tp_replica_label(j.api, upd.role, upd.idx), CASE WHEN upd.state = 'EXITED' "
	"       THEN 'exit status ' || upd.exit_code ELSE lower(upd.state) END) "
	"     WHEN upd.state = 'EXITED' AND upd.exit_code = 0 THEN format('The replica %s exited "
	"successfully.', tp_replica_label(j.api, upd.role, upd.idx)) "
	"     WHEN upd.state = 'EXITED' THEN format('The replica %s exited with a non-zero status "
	"of %s.', tp_replica_label(j.api, upd.role, upd.idx), upd.exit_code) "
	"     WHEN upd.state = 'FAILED_TO_START' THEN format('The replica %s could not be started: "
	"%s', tp_replica_label(j.api, upd.role, upd.idx), upd.message) "
	"     ELSE format('The replica %s was stopped with its node %s: %s', "
	"       tp_replica_label(j.api, upd.role, upd.idx), $1, "
	"       coalesce(nullif(upd.message, ''), 'the node stopped it')) END "
	"   , j.trial "
	" FROM upd JOIN was ON was.id = upd.id JOIN jobs j ON j.id = upd.job "
	" WHERE upd.state IS DISTINCT FROM was.state AND upd.state <> 'STARTING'), "
	/* A tuning trial's lines go to its study's log, with the trial (schema/017). */
	"logs AS (INSERT INTO log_entries (job, task, attempt, stream, time, text, trial) "
	" SELECT coalesce(j.parent, upd.job), tp_task_name(j.api, upd.role, upd.idx), upd.attempt, "
	/* (the clock's one row joined once, not read again for every line) */
	"   coalesce(l.stream, 'stdout'), " TP_ON_CK("coalesce(l.time, now())") ", "
	"   coalesce(l.text, ''), j.trial "
	" FROM upd JOIN jobs j ON j.id = upd.job JOIN r ON r.replica = upd.uid, emulator_clock ck, "
	"   jsonb_to_recordset(coalesce(r.logs, '[]'::jsonb)) AS l(stream text, time timestamptz, text text) "
	" RETURNING 1) "
	"SELECT DISTINCT job, (SELECT count(*) FROM logs) FROM upd",
	false,
};

/*
 * The job's state before and after tp_reconcile_job, which decides from the
 * replicas and moves the job through the state machine's entry point
 * (schema/013), and its age: the row lock taken first makes a concurrent
 * sync of the same job wait, so that exactly one sees it go PREPARING ->
 * RUNNING.
 */
static const struct store_stmt stmt_reconcile = {
	13, "job_reconcile",
	"WITH cur AS MATERIALIZED (SELECT state, create_time FROM jobs WHERE id = $1::int8 "
	"  FOR NO KEY UPDATE) "
	"SELECT cur.state, tp_reconcile_job($1::int8), "
	"  extract(epoch FROM " TP_NOW " - cur.create_time) FROM cur",
	false,
};

/*
 * The desired set: every replica on the node not yet DONE, each with the
 * buckets of its job's project (what a container mounts at /gcs/<bucket>:
 * agent/PROTOCOL.md), as they are when the set is read.
 */
static const struct store_stmt stmt_desired = {
	14, "node_desired",
	"SELECT n.desired_version, coalesce(jsonb_agg(jsonb_build_object("
	"  'replica', p.uid, 'attempt', p.attempt, 'desired', p.desired, "
	"  'job', 'projects/' || j.project || '/jobs/' || j.job_id, 'role', p.role, 'index', p.idx, "
	"  'buckets', (SELECT coalesce(jsonb_agg(b.name ORDER BY b.name), '[]'::jsonb) "
	"    FROM storage_buckets b WHERE b.project = j.project), "
	"  'gpus', to_jsonb(p.gpus), 'ports', CASE WHEN p.port IS NULL THEN '[]'::jsonb "
	"    ELSE jsonb_build_array(p.port) END) || p.spec ORDER BY p.id) "
	"  FILTER (WHERE p.id IS NOT NULL), '[]'::jsonb)::text "
	/* A LOST replica is gone with its node's old incarnation: never sent again. */
	"FROM nodes n LEFT JOIN replicas p ON p.node = n.name AND p.desired <> 'DONE' "
	"  AND p.state <> 'LOST' "
	"LEFT JOIN jobs j ON j.id = p.job "
	"WHERE n.name = $1 GROUP BY n.desired_version",
	true,
};

/* ---- replicas an agent claims that this cluster never assigned --------- */

/*
 * A report for a replica id the replicas table has never held is ignored by
 * the sync (it matches no row); it is logged once per node and replica id.
 * To keep that off the sync's cost, each (node, replica id) pair is looked
 * up at most once per server process: pairs in a desired set this server
 * sent, and pairs looked up, are remembered as 64-bit hashes in a fixed
 * table (cleared when three quarters full, so a pair may be looked up again
 * after very many others). A steady sync costs a hash per replica and no
 * statement; a sync that reports a pair not seen before adds one indexed
 * lookup for all of them, after its commit.
 */
#define CLAIMED_SLOTS 65536	/* a power of two */

static struct {
	pthread_mutex_t lock;
	size_t used;
	uint64_t slot[CLAIMED_SLOTS];	/* 0: empty */
} claimed = { PTHREAD_MUTEX_INITIALIZER, 0, { 0 } };

static uint64_t claim_hash(const char *node, const char *replica)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a over "node\0replica" */
	for (const char *p = node;; p++) {
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
		if (!*p)
			break;
	}
	for (const char *p = replica; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	h ^= h >> 33;
	return h ? h : 1;
}

/* Whether h is in the table; adds it when add. Called with the lock held. */
static bool claim_seen(uint64_t h, bool add)
{
	size_t i = (size_t)h & (CLAIMED_SLOTS - 1);
	for (; claimed.slot[i]; i = (i + 1) & (CLAIMED_SLOTS - 1))
		if (claimed.slot[i] == h)
			return true;
	if (add) {
		if (claimed.used >= CLAIMED_SLOTS / 4 * 3) {
			memset(claimed.slot, 0, sizeof(claimed.slot));
			claimed.used = 0;
			i = (size_t)h & (CLAIMED_SLOTS - 1);
		}
		claimed.slot[i] = h;
		claimed.used++;
	}
	return false;
}

/* s for a log line: letters, digits and "._-" kept, anything else '?', cut at 200. */
static void log_safe(char *out, size_t len, const char *s)
{
	size_t n = 0;
	for (; *s && n + 1 < len && n < 200; s++)
		out[n++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			   (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-' ? *s : '?';
	out[n] = '\0';
}

static const struct store_stmt stmt_unknown_replicas = {
	18, "node_unknown_replicas",
	"SELECT x FROM jsonb_array_elements_text($1::jsonb) AS x "
	"WHERE NOT EXISTS (SELECT 1 FROM replicas WHERE uid = x)",
	true,
};

static void log_unknown_replicas(struct store_conn *c, const char *node, const json_t *reports,
				 const json_t *desired)
{
	json_t *check = json_array(), *v;
	size_t i;

	pthread_mutex_lock(&claimed.lock);
	json_array_foreach(desired, i, v) {
		const char *id = json_string_value(json_object_get(v, "replica"));
		if (id)
			claim_seen(claim_hash(node, id), true);
	}
	json_array_foreach(reports, i, v) {
		const char *id = json_string_value(json_object_get(v, "replica"));
		bool listed = false;
		for (size_t k = 0; id && k < json_array_size(check); k++)
			listed |= !strcmp(json_string_value(json_array_get(check, k)), id);
		if (id && !listed && !claim_seen(claim_hash(node, id), false))
			json_array_append_new(check, json_string(id));
	}
	pthread_mutex_unlock(&claimed.lock);
	if (!json_array_size(check))
		goto out;

	char *text = json_dumps(check, JSON_COMPACT);
	const char *p[] = { text };
	enum store_rc rc;
	PGresult *res = store_exec(c, &stmt_unknown_replicas, 1, p, &rc);
	free(text);
	if (rc != STORE_OK) {
		PQclear(res);
		goto out;	/* looked up again at the next sync */
	}
	char safe_node[256], safe_id[256];
	log_safe(safe_node, sizeof(safe_node), node);
	for (int r = 0; r < PQntuples(res); r++) {
		log_safe(safe_id, sizeof(safe_id), PQgetvalue(res, r, 0));
		log_warn("node %s claims replica %s, which this cluster never assigned: its "
			 "reports are ignored", safe_node, safe_id);
	}
	PQclear(res);
	pthread_mutex_lock(&claimed.lock);
	json_array_foreach(check, i, v)
		claim_seen(claim_hash(node, json_string_value(v)), true);
	pthread_mutex_unlock(&claimed.lock);
out:
	json_decref(check);
}

/* One try of the sync's transaction (store_node_sync). */
static enum store_rc sync_once(struct store_conn *c, const char *node, const char *incarnation,
			       int lease_s, bool stopping, const json_t *reports,
			       const char *reports_text, json_t **desired, int64_t *version,
			       bool *changed)
{
	char lease[16];
	PGresult *res = NULL;
	enum store_rc rc;
	double *running = NULL;	/* ages of the jobs this sync made RUNNING */
	int nrunning = 0;
	char *jobs = NULL;	/* the jobs locked, an int8[] literal */

	*desired = NULL;
	*changed = false;
	if ((rc = store_begin(c)) != STORE_OK)
		goto out;
	snprintf(lease, sizeof(lease), "%d", lease_s);
	const char *p1[] = { node, lease, stopping ? "true" : "false" };
	if (json_array_size(reports)) {
		const char *p0[] = { node, reports_text };
		res = store_exec(c, &stmt_sync_lock, 2, p0, &rc);
		if (rc != STORE_OK)
			goto out;
		jobs = xstrdup(PQntuples(res) ? PQgetvalue(res, 0, 1) : "{}");
		PQclear(res);
		res = NULL;
	}
	res = lease_s > 0 ? store_exec(c, &stmt_sync_lease, 3, p1, &rc) :
		store_exec(c, &stmt_sync_no_lease, 1, p1, &rc);
	if (rc != STORE_OK)
		goto out;
	if (PQntuples(res) == 0) {
		rc = STORE_NOT_FOUND;
		goto out;
	}
	if (strcmp(PQgetvalue(res, 0, 0), incarnation)) {
		rc = STORE_STALE;
		goto out;
	}
	PQclear(res);
	res = NULL;
	if (json_array_size(reports)) {
		const char *p2[] = { node, reports_text, jobs };
		res = store_exec(c, &stmt_sync_apply, 3, p2, &rc);
		if (rc != STORE_OK)
			goto out;
		running = xcalloc((size_t)PQntuples(res) + 1, sizeof(*running));
		for (int i = 0; i < PQntuples(res); i++) {
			const char *p3[] = { PQgetvalue(res, i, 0) };
			PGresult *r2 = store_exec(c, &stmt_reconcile, 1, p3, &rc);
			if (rc == STORE_OK && PQntuples(r2) &&
			    job_state_parse(PQgetvalue(r2, 0, 0)) == JOB_PREPARING &&
			    job_state_parse(PQgetvalue(r2, 0, 1)) == JOB_RUNNING)
				running[nrunning++] = strtod(PQgetvalue(r2, 0, 2), NULL);
			PQclear(r2);
			if (rc != STORE_OK)
				goto out;
		}
		*changed = PQntuples(res) > 0;
		PQclear(res);
		res = NULL;
	}
	res = store_exec(c, &stmt_desired, 1, p1, &rc);
	if (rc != STORE_OK)
		goto out;
	if ((rc = store_commit(c)) != STORE_OK)
		goto out;
	for (int i = 0; i < nrunning; i++)
		metric_observe(&submit_to_running, running[i]);
	*version = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	*desired = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
	if (!*desired)
		rc = STORE_ERROR;
	else if (json_array_size(reports))
		log_unknown_replicas(c, node, reports, *desired);
out:
	store_rollback(c);	/* no-op after a commit */
	PQclear(res);
	free(running);
	free(jobs);
	if (rc != STORE_OK) {
		json_decref(*desired);
		*desired = NULL;
	}
	return rc;
}

static enum store_rc sync_on(struct store_conn *c, const char *node, const char *incarnation,
			     int lease_s, bool stopping, const json_t *reports, json_t **desired,
			     int64_t *version, bool *changed)
{
	char *reports_text = reports ? json_dumps(reports, JSON_COMPACT) : xstrdup("[]");
	enum store_rc rc;

	for (int attempt = 0;; attempt++) {
		rc = sync_once(c, node, incarnation, lease_s, stopping, reports, reports_text, desired,
			       version, changed);
		if (!store_retry(rc, attempt, "an agent's sync"))
			break;
	}
	free(reports_text);
	return rc;
}

enum store_rc store_node_sync(struct store *st, const char *node, const char *incarnation,
			      int lease_s, bool stopping, const json_t *reports,
			      json_t **desired, int64_t *version, bool *changed)
{
	struct store_conn *c = store_acquire(st);
	enum store_rc rc = sync_on(c, node, incarnation, lease_s, stopping, reports, desired, version,
				   changed);
	store_release(st, c);
	return rc;
}

enum store_rc store_node_sync_on(struct store_conn *c, const char *node, const char *incarnation,
				 int lease_s, const json_t *reports, json_t **desired,
				 int64_t *version, bool *changed)
{
	return sync_on(c, node, incarnation, lease_s, false, reports, desired, version, changed);
}

/*
 * Lease renewals in a batch (store_node_renew_leases): the nodes' rows
 * locked in name order first (schema/015), then the sync's lease update for
 * each whose incarnation is the one its agent sent.
 */
static const struct store_stmt stmt_renew_lock = {
	160, "node_renew_lock", "SELECT tp_lock_jobs('{}'::int8[], $1::text[])", false,
};

static const struct store_stmt stmt_renew = {
	161, "node_renew",
	"UPDATE nodes n SET last_sync = now(), lease_s = $3::int, "
	"  state = coalesce((SELECT e.to_state FROM node_state_edges e WHERE e.from_state = n.state "
	"    AND e.cause = 'sync'), n.state) "
	"FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS b(name, inc, i) "
	"WHERE n.name = b.name AND n.incarnation = b.inc "
	/* a node twice in the batch is updated once: its other entry is not
	 * returned, and that sync goes the long way (store_node_sync) */
	"RETURNING b.i",
	false,
};

/* A text[] literal of n strings: {"a","b"} with \ and " escaped. */
static char *text_array(const char *const *v, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	sb_addch(&sb, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			sb_addch(&sb, ',');
		sb_addch(&sb, '"');
		for (const char *p = v[i]; *p; p++) {
			if (*p == '"' || *p == '\\')
				sb_addch(&sb, '\\');
			sb_addch(&sb, *p);
		}
		sb_addch(&sb, '"');
	}
	sb_addch(&sb, '}');
	return sb_detach(&sb);
}

static enum store_rc renew_once(struct store_conn *c, const char *const *p, size_t n,
				bool *renewed)
{
	enum store_rc rc;
	PGresult *res = NULL;

	memset(renewed, 0, n * sizeof(*renewed));
	if ((rc = store_begin(c)) != STORE_OK)
		goto out;
	PQclear(store_exec(c, &stmt_renew_lock, 1, p, &rc));
	if (rc != STORE_OK)
		goto out;
	res = store_exec(c, &stmt_renew, 3, p, &rc);
	if (rc != STORE_OK)
		goto out;
	if ((rc = store_commit(c)) != STORE_OK)
		goto out;
	for (int r = 0; r < PQntuples(res); r++) {
		long long i = strtoll(PQgetvalue(res, r, 0), NULL, 10);
		if (i >= 1 && (size_t)i <= n)
			renewed[i - 1] = true;
	}
out:
	store_rollback(c);	/* no-op after a commit */
	PQclear(res);
	return rc;
}

enum store_rc store_node_renew_leases(struct store *st, const char *const *names,
				      const char *const *incarnations, size_t n, int lease_s,
				      bool *renewed)
{
	char lease[16];
	char *na = text_array(names, n), *ia = text_array(incarnations, n);
	const char *p[] = { na, ia, lease };
	enum store_rc rc;

	snprintf(lease, sizeof(lease), "%d", lease_s);
	struct store_conn *c = store_acquire(st);
	for (int attempt = 0;; attempt++) {
		rc = renew_once(c, p, n, renewed);
		if (!store_retry(rc, attempt, "agents' lease renewals"))
			break;
	}
	store_release(st, c);
	free(na);
	free(ia);
	return rc;
}

/* The simulated fleet's nodes (scheduler/sim_fleet.c), by incarnation. */
static const struct store_stmt stmt_versions_of = {
	112, "node_versions_of",
	"SELECT coalesce(jsonb_object_agg(name, desired_version), '{}') FROM nodes "
	"WHERE incarnation = $1",
	true,
};

enum store_rc store_node_versions_of(struct store_conn *c, const char *incarnation,
				     json_t **out)
{
	const char *p[] = { incarnation };
	enum store_rc rc;

	*out = NULL;
	PGresult *res = store_exec(c, &stmt_versions_of, 1, p, &rc);
	if (rc == STORE_OK) {
		*out = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
		if (!*out)
			rc = STORE_ERROR;
	}
	PQclear(res);
	return rc;
}

static const struct store_stmt stmt_version = {
	15, "node_version", "SELECT desired_version FROM nodes WHERE name = $1", true,
};

enum store_rc store_node_version(struct store *st, const char *node, int64_t *version)
{
	const char *p[] = { node };
	char *v;
	enum store_rc rc = store_query_value(st, &stmt_version, 1, p, &v);

	if (rc == STORE_OK)
		*version = strtoll(v, NULL, 10);
	free(v);
	return rc;
}

/* A statement's single JSON value, parsed (new reference). */
static enum store_rc query_json(struct store *st, const struct store_stmt *stmt, int n,
				const char *const *params, json_t **out)
{
	char *text;
	enum store_rc rc = store_query_value(st, stmt, n, params, &text);

	*out = NULL;
	if (rc == STORE_OK && !(*out = json_loads(text, 0, NULL)))
		rc = STORE_ERROR;
	free(text);
	return rc;
}

/* A timestamp column as the API writes times (RFC 3339, UTC, microseconds). */
#define TS_SQL(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

/* The resource name of the top-level job row t as its API names it. */
#define JOB_NAME_SQL(t) \
	"CASE WHEN " t ".api = 'vertex' THEN 'projects/' || " t ".project || '/locations/' || " \
	t ".region || CASE WHEN " t ".spec ? 'studySpec' THEN '/hyperparameterTuningJobs/' " \
	"  WHEN " t ".spec ? '" VERTEX_PIPELINE_KEY "' THEN '/trainingPipelines/' " \
	"  ELSE '/customJobs/' END || " t ".job_id " \
	"ELSE 'projects/' || " t ".project || '/jobs/' || " t ".job_id END"

#define NODE_JSON \
	"jsonb_build_object('name', n.name, 'region', n.region, 'zone', n.zone, " \
	" 'machineType', n.machine_type, 'vcpus', n.vcpus, 'memoryMb', n.memory_mb::text, " \
	" 'freeVcpus', n.vcpus - (SELECT coalesce(sum(p.vcpus), 0) FROM replicas p " \
	"    WHERE p.node = n.name AND p.desired <> 'DONE'), " \
	" 'freeMemoryMb', (n.memory_mb - (SELECT coalesce(sum(p.memory_mb), 0) FROM replicas p " \
	"    WHERE p.node = n.name AND p.desired <> 'DONE'))::text, " \
	" 'address', n.address, 'runtime', n.runtime, " \
	" 'state', CASE WHEN n.state = 'READY' AND n.draining THEN 'DRAINING' ELSE n.state END, " \
	" 'lastSyncTime', " TS_SQL("n.last_sync") ", " \
	" 'agentVersion', n.agent_version, " \
	" 'stopGraceSeconds', n.stop_grace_s, 'disconnectPolicy', n.disconnect_policy, " \
	" 'accelerators', CASE WHEN n.accel_type IS NOT NULL AND n.accel_count > 0 THEN " \
	"   jsonb_build_array(jsonb_build_object('type', n.accel_type, 'total', n.accel_count, " \
	"     'free', n.accel_count - (SELECT coalesce(sum(cardinality(p.gpus)), 0) FROM replicas p " \
	"        WHERE p.node = n.name AND p.desired <> 'DONE'))) " \
	"   WHEN n.tpu_type IS NOT NULL THEN jsonb_build_array(jsonb_build_object('type', n.tpu_type, " \
	"     'total', n.tpu_cores, 'free', CASE WHEN EXISTS (SELECT 1 FROM replicas p " \
	"        WHERE p.node = n.name AND p.desired <> 'DONE' AND p.tpu) THEN 0 ELSE n.tpu_cores END)) " \
	"   ELSE '[]'::jsonb END, " \
	" 'replicas', (SELECT count(*) FROM replicas p WHERE p.node = n.name AND p.desired <> 'DONE'), " \
	" 'boundGpus', (SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object('index', g.i, " \
	"     'job', " JOB_NAME_SQL("t") ", 'trial', j.trial, " \
	"     'task', tp_task_name(j.api, p.role, p.idx), 'attempt', p.attempt)) ORDER BY g.i), '[]'::jsonb) " \
	"   FROM replicas p CROSS JOIN LATERAL unnest(p.gpus) AS g(i) JOIN jobs j ON j.id = p.job " \
	"   JOIN jobs t ON t.id = coalesce(j.parent, j.id) " \
	"   WHERE p.node = n.name AND p.desired <> 'DONE'))"

static const struct store_stmt stmt_list = {
	16, "node_list",
	"SELECT coalesce(jsonb_agg(" NODE_JSON " ORDER BY n.name), '[]'::jsonb)::text FROM nodes n",
	true,
};

enum store_rc store_node_list(struct store *st, json_t **out)
{
	return query_json(st, &stmt_list, 0, NULL, out);
}

static const struct store_stmt stmt_drain = {
	17, "node_drain",
	"UPDATE nodes n SET draining = $2::boolean WHERE name = $1 RETURNING " NODE_JSON "::text",
	false,
};

enum store_rc store_node_set_draining(struct store *st, const char *node, bool draining,
				      json_t **out)
{
	const char *p[] = { node, draining ? "true" : "false" };
	return query_json(st, &stmt_drain, 2, p, out);
}

/*
 * A job's replicas, and its trials' (a study's), each once with its last
 * attempt: the job's own first, then by trial, in the order they were made.
 */
static const struct store_stmt stmt_replica_list = {
	162, "replica_list",
	"SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object('trial', c.trial, "
	"  'role', p.role, 'index', p.idx, 'task', tp_task_name(c.api, p.role, p.idx), "
	"  'attempt', p.attempt, 'state', p.state, 'node', p.node, 'gpus', to_jsonb(p.gpus), "
	"  'port', p.port, 'exitCode', p.exit_code, 'message', nullif(p.message, ''), "
	"  'startTime', " TS_SQL("p.start_time") ", 'endTime', " TS_SQL("p.end_time") ")) "
	"  ORDER BY c.trial NULLS FIRST, p.id) FILTER (WHERE p.id IS NOT NULL), '[]'::jsonb)::text "
	"FROM jobs j CROSS JOIN LATERAL (SELECT j.id, NULL::integer, j.api UNION ALL "
	"  SELECT k.id, k.trial, k.api FROM jobs k WHERE k.parent = j.id) AS c(id, trial, api) "
	"LEFT JOIN replicas p ON p.job = c.id "
	"WHERE j.api = $1 AND j.project = $2 AND j.job_id = $3 AND j.parent IS NULL "
	"  AND ($4 = '' OR j.region = $4) GROUP BY j.id",
	true,
};

enum store_rc store_replica_list(struct store *st, const struct job_key *key, const char *region,
				 json_t **out)
{
	const char *p[] = { key->api, key->project, key->job_id, region ? region : "" };
	return query_json(st, &stmt_replica_list, 4, p, out);
}
