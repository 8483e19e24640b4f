/*
 * scheduler.h - the scheduler: one active instance among all servers on one
 * database, elected with a PostgreSQL advisory lock held by its own
 * connection. The leader does every write on that connection, so a leader
 * that lost its session (and with it the lock) cannot write any more.
 *
 * Each pass (sched_tick, woken by new jobs, agent reports and a periodic
 * tick):
 *   1. nodes without a sync for the lease become LOST, their replicas LOST;
 *   2. LOST replicas of running jobs restart elsewhere with attempt + 1;
 *   3. scheduling.maxRunningTime / maxWaitTime are enforced;
 *   4. CANCELLING jobs are driven to CANCELLED;
 *   5. queued jobs are gang-placed (FIFO with backfill, no starvation) and
 *      restarted replicas re-placed; each job's placement is one transaction.
 */
#ifndef TP_SCHED_H
#define TP_SCHED_H

#include <stdbool.h>

#include "catalog.h"
#include "common.h"

struct sched_config {
	const char *conninfo;
	const struct catalog *catalog;
	int lease_s;		/* node lost after this long without a sync */
	int tick_ms;		/* periodic pass */
	int starve_s;		/* a queued job this old reserves its region */
	int log_retention_days;	/* log entries older than this are deleted */
};

struct sched;

/* Starts the scheduler thread (it campaigns for leadership). */
struct sched *sched_start(const struct sched_config *cfg);
/* Asks for a pass soon. NULL is a no-op. Any thread. */
void sched_wake(struct sched *s);
bool sched_is_leader(struct sched *s);
/* Stops the thread and releases leadership. NULL is a no-op. */
void sched_stop(struct sched *s);

#endif
