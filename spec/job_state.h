/*
 * job_state.h - the job state machine: the states a job goes through, their
 * names in each API, and the legal transitions between them, each with the
 * cause that takes it.
 *
 * The design (issue 17 item 4; README "Job lifecycle"):
 *
 * - This table is the machine's single source. A transition is an event (a
 *   cause) applied to a state, and from any state a cause leads to at most
 *   one state: the table is a function (state, cause) -> state. Each edge
 *   says why a job takes it; the same two states may be joined by several
 *   causes (RUNNING -> FAILED: fail, timeout, node_loss).
 * - Jobs live in PostgreSQL, and most transitions are decided there (the
 *   agents' reports are reconciled in the sync's transaction, the
 *   scheduler's housekeeping is set-wise SQL). So the machine is enforced
 *   where the state is written, as Kubernetes' API server checks every
 *   status update whichever component sends it: schema/013 holds a copy of
 *   this table (job_state_edges, written by the migrations: a release that
 *   changes the table ships a migration with the new copy, and a server
 *   whose table differs from its database's refuses to start, see
 *   store/store_job_state.c), one entry point that every statement calls,
 *   tp_job_transition(job(s), to_state, cause, message), and a trigger
 *   that refuses any write of jobs.state that is not an edge, whoever
 *   makes it, and applies what goes with the new state (times, units,
 *   stopping replicas). C code that moves a job calls
 *   store_job_transition() (store/store_job.h), which calls the same
 *   entry point.
 * - Deciding WHEN a job moves stays with its owner: the reconciler
 *   (tp_reconcile_job) derives RUNNING / SUCCEEDED / FAILED from the
 *   replicas, as Nomad derives a job's status from its allocations; the
 *   scheduler places and times out; users cancel. They all move it through
 *   the one entry point.
 *
 * Locks (issue 25; schema/015_lock_order.sql): one order for every
 * transaction that changes replicas or moves a job, whoever runs it (an
 * agent's sync or registration, the scheduler's placement commit and the
 * move of a restarted replica, each housekeeping sweep: node expiry, lost
 * replicas, gang restarts, timeouts, cancellation):
 *   1. the jobs it may touch, by id (FOR UPDATE);
 *   2. the node rows it may write, by name: its own node, the nodes a
 *      placement goes to, and every node of a job whose replicas it may
 *      stop or restart (the replica trigger bumps a node's
 *      desired_version);
 *   3. then it acts, and waits on nothing more: replica rows are written
 *      only by a holder of their job's lock.
 * A transaction takes all of 1 and 2 in one lock step at its start
 * (tp_lock_jobs()), so it waits only there, and only for rows later in
 * the order than any it holds: no wait cycle, so no deadlock. A user's
 * cancel locks its one job and changes no replica. Conflicts that remain
 * possible (none are known) are retried by the store, bounded and counted
 * (store_retry(), trainplane_db_conflicts_total).
 *
 * spec/ includes lib/ only: no SQL here.
 */
#ifndef TP_JOB_STATE_H
#define TP_JOB_STATE_H

#include <stdbool.h>
#include <stddef.h>

/* The numbers are ml v1's Job.State and Vertex's JobState (0-7). */
enum job_state {
	/* No job is in it: the state "before" create (the create edge's
	 * origin), and what parsing an unknown name gives. */
	JOB_STATE_UNSPECIFIED = 0,
	/* Accepted and stored; waits until its whole gang fits. Left by the
	 * scheduler leader (place, or timeout: maxWaitTime) or by a user's
	 * cancel (straight to CANCELLED: nothing of it runs). */
	JOB_QUEUED = 1,
	/* Every replica placed on a node; the agents are starting them
	 * (Vertex: JOB_STATE_PENDING). Left when the agents' reports are
	 * reconciled (run, succeed, fail), by the scheduler's housekeeping
	 * (timeout, node_loss; restart keeps it here), or by a user's cancel. */
	JOB_PREPARING = 2,
	/* Every replica reported running (or has already exited). Left when
	 * reports are reconciled (succeed, fail), by the scheduler's
	 * housekeeping (timeout: maxRunningTime or Vertex's timeout;
	 * node_loss; restart keeps it here), or by a user's cancel. */
	JOB_RUNNING = 3,
	/* Final: the primary replica (master / chief / pool 0 replica 0)
	 * exited 0; the other replicas are stopped. Never left. */
	JOB_SUCCEEDED = 4,
	/* Final: a replica failed (exited non-zero, could not start, was lost
	 * under disableRetries) or a time limit passed; errorMessage says
	 * which. Never left. */
	JOB_FAILED = 5,
	/* A user cancelled a placed job; its replicas are being stopped. Left
	 * by the scheduler's housekeeping (tp_reconcile_job) once none runs. */
	JOB_CANCELLING = 6,
	/* Final: cancelled by a user, and nothing of it runs any more. */
	JOB_CANCELLED = 7,
};
#define JOB_STATE_COUNT 8	/* JOB_STATE_UNSPECIFIED included */

/* Why a job takes an edge (the names are the database's: job_state_edges.cause). */
enum job_cause {
	JOB_CAUSE_CREATE,	/* "create": jobs.create, customJobs.create, trainingPipelines.create */
	JOB_CAUSE_PLACE,	/* "place": the scheduler committed the placement of the whole gang */
	JOB_CAUSE_RUN,		/* "run": every replica reported running */
	JOB_CAUSE_SUCCEED,	/* "succeed": the primary replica exited 0 */
	JOB_CAUSE_FAIL,		/* "fail": a replica exited non-zero or could not be started */
	JOB_CAUSE_CANCEL,	/* "cancel": a user asked (jobs.cancel, customJobs.cancel, ...) */
	JOB_CAUSE_CANCELLED,	/* "cancelled": the last replica of a cancelled job stopped */
	JOB_CAUSE_TIMEOUT,	/* "timeout": maxWaitTime, maxRunningTime or Vertex's timeout passed */
	JOB_CAUSE_NODE_LOSS,	/* "node_loss": a replica was lost with its node and the job may
				 * not retry (Vertex scheduling.disableRetries) */
	JOB_CAUSE_RESTART,	/* "restart": replicas start a new attempt (a lost replica placed
				 * again, or the whole gang: restartJobOnWorkerRestart); the job
				 * keeps its state */
	JOB_CAUSE_PREEMPT,	/* "preempt": the scheduler took its resources for a job that
				 * outranks it (SPOT, or a preemptible priority; issue 28): its
				 * replicas stop and it waits QUEUED to start again, attempt + 1 */
	JOB_CAUSE_BACKEND,	/* "backend": the cluster behind the region (a Slurm backend,
				 * docs/slurm.md) ended the job before its replicas did: a time
				 * limit, a lost node, a cancel by its administrator, a purge */
	JOB_CAUSE_CANCEL_TRIALS,/* "cancel_trials": a cancel of a tuning study still QUEUED with
				 * a trial placed: it is CANCELLING until its trials stopped, as
				 * from PREPARING (tp_job_transition takes it for "cancel") */
};
#define JOB_CAUSE_COUNT 13

/* One legal transition. */
struct job_state_edge {
	enum job_state from;
	enum job_cause cause;
	enum job_state to;
};

/* The machine: every legal edge, and nothing else. */
extern const struct job_state_edge job_state_edges[];
extern const size_t job_state_edge_count;

/* A state a job can be in (QUEUED .. CANCELLED). */
bool job_state_valid(enum job_state s);
/* No edge leaves it: SUCCEEDED, FAILED, CANCELLED. */
bool job_state_final(enum job_state s);
/* Some cause takes a job from `from` to `to` (to == from: a restart). */
bool job_state_edge_allowed(enum job_state from, enum job_state to);
/* Where cause takes a job in `from`; JOB_STATE_UNSPECIFIED when it does not apply there. */
enum job_state job_state_after(enum job_state from, enum job_cause cause);

/*
 * Names. The ml v1 name ("PREPARING") is also what the database stores;
 * Vertex names it JOB_STATE_* ("JOB_STATE_PENDING"), and a trainingPipeline
 * backed by the job shows PIPELINE_STATE_* ("PIPELINE_STATE_PENDING").
 * Unknown values give the *_UNSPECIFIED name. Parsing an unknown name, or
 * an UNSPECIFIED one, gives JOB_STATE_UNSPECIFIED.
 */
const char *job_state_name(enum job_state s);
const char *job_state_vertex_name(enum job_state s);
const char *job_state_pipeline_name(enum job_state s);
enum job_state job_state_parse(const char *name);
enum job_state job_state_parse_vertex(const char *name);
enum job_state job_state_parse_pipeline(const char *name);

/* "create", "place", ..., "node_loss", "restart"; NULL for an unknown value. */
const char *job_cause_name(enum job_cause c);
/* false for an unknown name. */
bool job_cause_parse(const char *name, enum job_cause *out);

#endif
