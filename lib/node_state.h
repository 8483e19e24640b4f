/*
 * node_state.h - the node state machine: the states of a registered node,
 * the causes that move it, and the legal transitions (issue 28; the job's
 * is spec/job_state.h, the replica's lib/replica_state.h).
 *
 * Where it lives: lib/, beside the replica's, so that the agent can name
 * the states it drives too (agent/PROTOCOL.md) and the store, the server
 * and the scheduler share one table. No SQL here.
 *
 * The machine:
 *
 *   (none) --register--> READY --stop--> STOPPING
 *                         ^  \             |
 *                         |   expire     expire
 *            register,    |     \          |
 *            sync         |      v         v
 *                         +------------- LOST
 *   register: from every state (a new incarnation); stop: LOST -> STOPPING
 *   too (a node given up that syncs again while its agent is leaving).
 *
 * - READY: its agent syncs within its lease; it takes replicas.
 * - STOPPING: its agent is leaving in an orderly way (its syncs say
 *   "stopping": agent/PROTOCOL.md "Sync"): it takes no new replica until
 *   its agent registers again. A sync that does not say stopping leaves it
 *   STOPPING (no sync edge leaves it): only register does, or expire.
 * - LOST: given up, its lease (and the agent's stop grace, and a margin)
 *   passed unrenewed; its replicas are LOST and restart elsewhere. Left by
 *   a registration (a restarted agent: re-registration after LOST), or by a
 *   sync with the incarnation it had (a partition healed: the agent kept
 *   running; the replicas it had are gone from its desired set).
 *
 * Draining is no state: nodes.draining is a flag an operator sets and
 * clears (trainplane nodes drain / undrain) on a node in any state; a READY
 * node that drains takes no new replica, and listings show it DRAINING
 * (store/store_node.c, NODE_JSON). Self-edges (READY --register--> READY,
 * READY --sync--> READY, STOPPING --stop--> STOPPING) say where a cause
 * applies without a change of state.
 *
 * Enforcement: the database holds a copy of the table (schema/030:
 * node_state_edges), checked equal to this one at start
 * (store/store_state_edges.c); a trigger refuses any write of nodes.state
 * that is not an edge, and statements move nodes through
 * tp_node_state_after(state, cause) (no edge: the node keeps its state).
 */
#ifndef TP_NODE_STATE_H
#define TP_NODE_STATE_H

#include <stdbool.h>
#include <stddef.h>

enum node_state {
	/* No node is in it: before registration, and what parsing an unknown
	 * name gives. */
	NODE_STATE_UNSPECIFIED = 0,
	NODE_READY,
	NODE_STOPPING,
	NODE_LOST,
};
#define NODE_STATE_COUNT 4	/* NODE_STATE_UNSPECIFIED included */

/* Why a node takes an edge (the names are the database's: node_state_edges.cause). */
enum node_cause {
	NODE_CAUSE_REGISTER,	/* "register": its agent registered (a new incarnation) */
	NODE_CAUSE_SYNC,	/* "sync": its agent synced (the lease renewed) */
	NODE_CAUSE_STOP,	/* "stop": its agent synced saying it is leaving */
	NODE_CAUSE_EXPIRE,	/* "expire": its lease passed unrenewed (the scheduler's sweep) */
};
#define NODE_CAUSE_COUNT 4

struct node_state_edge {
	enum node_state from;
	enum node_cause cause;
	enum node_state to;
};

/* The machine: every legal edge, and nothing else. (from, cause) is unique. */
extern const struct node_state_edge node_state_edges[];
extern const size_t node_state_edge_count;

/* READY, STOPPING, LOST. */
bool node_state_valid(enum node_state s);
/* Some cause takes a node from `from` to `to`. */
bool node_state_edge_allowed(enum node_state from, enum node_state to);
/* Where cause takes a node in `from`; NODE_STATE_UNSPECIFIED when it does not apply there. */
enum node_state node_state_after(enum node_state from, enum node_cause cause);

/* "READY", "STOPPING", "LOST"; "STATE_UNSPECIFIED" for an unknown value. */
const char *node_state_name(enum node_state s);
/* NODE_STATE_UNSPECIFIED for an unknown name (or NULL). */
enum node_state node_state_parse(const char *name);
/* "register", "sync", "stop", "expire"; NULL for an unknown value. */
const char *node_cause_name(enum node_cause c);
/* false for an unknown name. */
bool node_cause_parse(const char *name, enum node_cause *out);

#endif
