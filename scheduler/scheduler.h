/*
 * scheduler.h - the scheduler: one active instance among all servers on one
 * database, elected with a PostgreSQL advisory lock held by its own
 * connection. The leader does every write on that connection, so a leader
 * that lost its session (and with it the lock) cannot write any more.
 *
 * Each pass (sched_tick, woken by new jobs, agent reports and a periodic
 * tick):
 *   1. nodes without a sync for their lease plus their agent's stop grace
 *      and a margin become LOST, their replicas LOST (by then a fencing
 *      agent has stopped them: agent/PROTOCOL.md, "Leases and fencing");
 *   2. LOST replicas of running jobs restart elsewhere with attempt + 1;
 *   3. scheduling.maxRunningTime / maxWaitTime are enforced;
 *   4. CANCELLING jobs are driven to CANCELLED;
 *   5. queued jobs are gang-placed (FIFO with backfill, no starvation) and
 *      restarted replicas re-placed; placed jobs commit in batches, each job
 *      all or nothing.
 * A pass after new jobs alone considers only those jobs (nothing else can
 * fit that did not before); capacity changes, starving jobs and a timer
 * (every 10 s) make it consider every queued job.
 */
#ifndef TP_SCHED_H
#define TP_SCHED_H

#include <stdbool.h>

#include "catalog.h"
#include "common.h"

struct snapshot;
struct listen_hub;

struct sched_config {
	const char *conninfo;
	struct snapshot *catalogs;	/* the catalog (snapshot.h), reloaded on SIGHUP */
	struct snapshot *quotas;	/* struct quotas (quota.h), reloaded on SIGHUP; NULL: none */
	int lease_s;		/* the lease of nodes that were granted none (before 010) */
	int tick_ms;		/* periodic pass */
	int starve_s;		/* a queued job this old reserves its region */
	int never_fits_fail_s;	/* a job no node can hold fails after this (0: it waits) */
	int log_retention_days;	/* log entries older than this are deleted */
	struct listen_hub *hub;	/* hears passes asked for by other servers (NULL: none) */
	/* Emulator mode (docs/emulator.md): the leader keeps a simulated fleet
	 * generated from the catalog and plays its replicas. */
	bool emulator;
	int emulator_nodes_per_type;	/* nodes of each kind in each region */
	double emulator_replica_s;	/* a simulated replica's run, by default */
};

struct sched;

/* Starts the scheduler thread (it campaigns for leadership). */
struct sched *sched_start(const struct sched_config *cfg);
/*
 * Asks for a pass soon: a full one, since capacity may have changed (a
 * replica ended, a node came or went, a job was cancelled). NULL is a
 * no-op. Any thread. On a server that is not the leader the wake-up is
 * forwarded to the leader through the database.
 */
void sched_wake(struct sched *s);
/* Asks for a pass over the jobs created since the last pass. */
void sched_wake_new_job(struct sched *s);
bool sched_is_leader(struct sched *s);
/*
 * Stops the thread and releases leadership at once (a standby takes over);
 * sched_wake() stays safe to call until sched_free(). NULL is a no-op.
 */
void sched_stop(struct sched *s);
void sched_free(struct sched *s);	/* after sched_stop(); NULL is a no-op */

#endif
