/*
 * store_reset.c - the emulator's reset (store_reset.h). Statement ids 80-95.
 */
#include "store_reset.h"

#include <stdlib.h>

#include "store_pg.h"

#define RESET_JOBS "SELECT id FROM jobs WHERE $1::text IS NULL OR project = $1"
#define LIVE_NODES "SELECT DISTINCT node FROM replicas WHERE node IS NOT NULL " \
	"AND desired <> 'DONE' AND job IN (" RESET_JOBS ")"

/* The lock step (schema/015): the jobs in id order, then their nodes.
 * (tp_lock_jobs() takes the jobs as an array: ten times slower for
 * thousands of them.) */
static const struct store_stmt stmt_lock_jobs = {
	80, "reset_lock_jobs",
	"SELECT count(*) FROM (" RESET_JOBS " ORDER BY id FOR UPDATE) j",
	false,
};

static const struct store_stmt stmt_lock_nodes = {
	82, "reset_lock_nodes",
	"SELECT count(*) FROM (SELECT 1 FROM nodes WHERE name IN (" LIVE_NODES ") "
	"  ORDER BY name FOR NO KEY UPDATE) n",
	false,
};

/*
 * Deleting a job deletes what hangs off it (ON DELETE CASCADE: replicas,
 * log entries, trials, IAM policies). A deleted replica fires no trigger:
 * the nodes it ran on are bumped and woken here.
 */
static const struct store_stmt stmt_reset = {
	81, "reset",
	"WITH hit AS MATERIALIZED (" LIVE_NODES "), "
	"del AS (DELETE FROM jobs WHERE $1::text IS NULL OR project = $1 RETURNING 1), "
	"ops AS (DELETE FROM vertex_operations WHERE $1::text IS NULL OR project = $1 RETURNING 1), "
	"bump AS (UPDATE nodes SET desired_version = desired_version + 1 "
	"  WHERE name IN (SELECT node FROM hit) RETURNING name) "
	"SELECT (SELECT count(*) FROM del), "
	"  (SELECT count(pg_notify('tp_node', name)) FROM bump), (SELECT count(*) FROM ops)",
	false,
};

static enum store_rc reset_once(struct store_conn *c, const char *project, int64_t *deleted)
{
	const char *p[] = { project };
	enum store_rc rc;
	PGresult *res = NULL;

	if ((rc = store_begin(c)) != STORE_OK)
		goto out;
	PQclear(store_exec(c, &stmt_lock_jobs, 1, p, &rc));
	if (rc == STORE_OK)
		PQclear(store_exec(c, &stmt_lock_nodes, 1, p, &rc));
	if (rc != STORE_OK)
		goto out;
	res = store_exec(c, &stmt_reset, 1, p, &rc);
	if (rc != STORE_OK)
		goto out;
	*deleted = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	rc = store_commit(c);
out:
	store_rollback(c);	/* no-op after a commit */
	PQclear(res);
	return rc;
}

enum store_rc store_reset(struct store *st, const char *project, int64_t *deleted)
{
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;

	*deleted = 0;
	for (int attempt = 0;; attempt++) {
		rc = reset_once(c, project, deleted);
		if (!store_retry(rc, attempt, "the emulator's reset"))
			break;
	}
	store_release(st, c);
	return rc;
}
