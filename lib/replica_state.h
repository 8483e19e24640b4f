/*
 * replica_state.h - the replica state machine: the states a replica
 * attempt goes through, the causes that move it, and the legal
 * transitions, as spec/job_state.h is the job's (issue 28).
 *
 * Where it lives: lib/, not spec/ with the job's. The agent may include
 * lib/ alone (the Makefile's INC_agent), and it moves its replicas through
 * this very table, as the store and schema/030 do: one machine, one copy
 * in C, whoever moves the replica. The header is lib/'s in every other way
 * (no SQL, no agent or server types).
 *
 * The machine (agent/PROTOCOL.md "Sync" points here; the agent reports
 * STARTING, RUNNING, EXITED, FAILED_TO_START and LOST, never PENDING):
 *
 *                  create
 *                    |
 *                    v
 *   +----------> PENDING ----start----> STARTING ---run---> RUNNING
 *   |              |  \____________run______________________^  |
 *   |              |                                           |
 *   | restart,     +--exit / fail_start / lose (from PENDING, STARTING
 *   | requeue         and RUNNING alike)--> EXITED | FAILED_TO_START | LOST
 *   | (attempt + 1)                                   |
 *   +-------------------------------------------------+
 *
 * - PENDING: in the database, not yet reported: waiting for placement
 *   (node NULL) or for its node's agent. In the agent, a replica of the
 *   desired set not yet started (replica_new()). Left by the agent's
 *   reports (start, run, exit, fail_start: the agent's reports are level
 *   triggered, so one that started and ended between two syncs is first
 *   seen EXITED), by lose (its node given up or re-registered, or the agent
 *   fenced it), or by a new attempt (restart, requeue: PENDING -> PENDING,
 *   attempt + 1).
 * - STARTING: the agent is starting it (image pull, container create).
 * - RUNNING: its main process runs.
 * - EXITED: its main process ended; exit_code says how. A job's primary
 *   exiting 0 ends the job; a non-zero exit fails it.
 * - FAILED_TO_START: it never ran its program (no image, exec failed, a
 *   trainer package that did not install: such a replica was RUNNING, the
 *   agent's bootstrap ran, so RUNNING -> FAILED_TO_START is an edge; the
 *   agent even turns an EXITED it has not reported yet into
 *   FAILED_TO_START when the exit was its bootstrap's: EXITED ->
 *   FAILED_TO_START, python_pkg.h).
 * - LOST: not an end of its own: its node was given up (lease expiry) or
 *   re-registered with a new incarnation, or the agent stopped it (its
 *   fence, its orderly stop: the agent reports such an EXITED as LOST).
 *
 * Edges that start a new attempt (replica_cause_new_attempt()): the
 * replica goes back to PENDING with attempt + 1, node and times cleared:
 *   restart  a LOST replica still wanted is placed again (tp_restart_lost),
 *            or the whole gang starts over (restartJobOnWorkerRestart:
 *            tp_reconcile_job, every replica of the job: PENDING ones too);
 *   requeue  preemption: a replica stopped for a higher-priority job
 *            (desired STOP, then EXITED, LOST or FAILED_TO_START; PENDING
 *            when it never started) starts over when its job is placed again.
 * Preemption itself is no state: it is desired = STOP, and the replica
 * ends (EXITED 143, LOST) like any stopped one.
 *
 * Enforcement: the agent moves its in-memory replicas through
 * replica_transition() (agent/replica.h), which refuses an edge not here.
 * The database holds a copy of the table (schema/030:
 * replica_state_edges), checked equal to this one at start
 * (store/store_state_edges.c), and a trigger refuses any write of
 * replicas.state (or of attempt) that is not an edge; statements move
 * replicas through tp_replica_state_after(state, cause).
 */
#ifndef TP_REPLICA_STATE_H
#define TP_REPLICA_STATE_H

#include <stdbool.h>
#include <stddef.h>

/* Why a replica told to stop before it was started ends FAILED_TO_START. */
#define REPLICA_SKIPPED_MESSAGE "stopped before it started"

enum replica_state {
	/* No replica is in it: the create edge's origin, and what parsing an
	 * unknown name gives. */
	REPLICA_STATE_UNSPECIFIED = 0,
	REPLICA_PENDING,
	REPLICA_STARTING,
	REPLICA_RUNNING,
	REPLICA_EXITED,
	REPLICA_FAILED_TO_START,
	REPLICA_LOST,
};
#define REPLICA_STATE_COUNT 7	/* REPLICA_STATE_UNSPECIFIED included */

/* Why a replica takes an edge (the names are the database's:
 * replica_state_edges.cause). */
enum replica_cause {
	REPLICA_CAUSE_CREATE,	  /* "create": its job was placed (a row is inserted) */
	REPLICA_CAUSE_START,	  /* "start": the agent is starting it */
	REPLICA_CAUSE_RUN,	  /* "run": its main process runs */
	REPLICA_CAUSE_EXIT,	  /* "exit": its main process ended */
	REPLICA_CAUSE_FAIL_START, /* "fail_start": it could not be started */
	REPLICA_CAUSE_LOSE,	  /* "lose": its node was given up or re-registered, or
				   * the agent stopped it with its node (fence, stop) */
	REPLICA_CAUSE_RESTART,	  /* "restart": a new attempt after a loss or of the gang */
	REPLICA_CAUSE_REQUEUE,	  /* "requeue": a new attempt after preemption */
};
#define REPLICA_CAUSE_COUNT 8

struct replica_state_edge {
	enum replica_state from;
	enum replica_cause cause;
	enum replica_state to;
};

/* The machine: every legal edge, and nothing else. (from, cause) is unique. */
extern const struct replica_state_edge replica_state_edges[];
extern const size_t replica_state_edge_count;

/* PENDING .. LOST. */
bool replica_state_valid(enum replica_state s);
/* EXITED, FAILED_TO_START, LOST: the attempt is over (only a new attempt
 * leaves them). */
bool replica_state_ended(enum replica_state s);
/* Some cause takes a replica from `from` to `to` (to == from: a new
 * attempt of a PENDING one). */
bool replica_state_edge_allowed(enum replica_state from, enum replica_state to);
/* Where cause takes a replica in `from`; REPLICA_STATE_UNSPECIFIED when it
 * does not apply there. */
enum replica_state replica_state_after(enum replica_state from, enum replica_cause cause);
/* Whether the cause's edges start a new attempt (restart, requeue). */
bool replica_cause_new_attempt(enum replica_cause c);
/* The cause of an agent's report of state s (STARTING: start, RUNNING:
 * run, EXITED: exit, FAILED_TO_START: fail_start, LOST: lose); false for
 * a state no agent reports. */
bool replica_cause_of_report(enum replica_state s, enum replica_cause *out);

/* "PENDING", "STARTING", ...; "STATE_UNSPECIFIED" for an unknown value. */
const char *replica_state_name(enum replica_state s);
/* REPLICA_STATE_UNSPECIFIED for an unknown name (or NULL). */
enum replica_state replica_state_parse(const char *name);
/* "create", "start", ...; NULL for an unknown value. */
const char *replica_cause_name(enum replica_cause c);
/* false for an unknown name. */
bool replica_cause_parse(const char *name, enum replica_cause *out);

#endif
