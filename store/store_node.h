/*
 * store_node.h - nodes and what their agents report (agent/PROTOCOL.md).
 */
#ifndef TP_STORE_NODE_H
#define TP_STORE_NODE_H

#include <jansson.h>
#include <stdbool.h>

#include "store.h"

struct node_info {
	const char *name;
	const char *incarnation;
	const char *region, *zone, *machine_type;
	int vcpus;
	int64_t memory_mb;
	const char *address;
	int port_lo, port_hi;
	const char *runtime;
	const char *accel_type;	/* NULL: none */
	int accel_count;
	const char *tpu_type;	/* NULL: not a TPU host */
	int tpu_cores;
	const char *agent_version;
	/* Fencing (agent/PROTOCOL.md, "Leases and fencing"). */
	int lease_s;			/* the lease the server grants */
	int stop_grace_s;		/* the agent's SIGTERM to SIGKILL delay */
	const char *disconnect_policy;	/* "fence" or "keep_running" */
};

/*
 * Creates or updates the node, and renews its lease (n->lease_s) with the
 * stop grace and policy its agent declared, in one transaction. A new
 * incarnation (agent restarted) marks the replicas the node ran under the
 * old one as LOST, for the scheduler to restart elsewhere with attempt + 1;
 * the same incarnation is a no-op. Writes the cluster's id (schema/011)
 * into cluster_id.
 */
enum store_rc store_node_register(struct store *st, const struct node_info *n,
				  char *cluster_id, size_t cluster_id_len) MUST_CHECK;

/*
 * One sync in one transaction: checks the incarnation (STORE_NOT_FOUND: no
 * such node; STORE_STALE: another incarnation), renews the lease for
 * lease_s seconds from now unless lease_s is 0 (a long-poll resumed after
 * its wait: the agent proved itself alive when the request arrived, not
 * now), applies the reports (a JSON array as in PROTOCOL.md; duplicates and
 * stale attempts are ignored; LOST: the agent fenced the replica), stores
 * their logs, reconciles the jobs they touched, and returns the desired set
 * as a new JSON array plus its version. *changed tells whether the reports
 * changed anything. A report of a replica id this cluster never assigned is
 * logged, once per node and id. stopping (with a lease renewed): the agent
 * is leaving in an orderly way, and the node takes no new replica
 * (STOPPING) until it registers again; otherwise a renewed lease makes it
 * READY.
 */
enum store_rc store_node_sync(struct store *st, const char *node, const char *incarnation,
			      int lease_s, bool stopping, const json_t *reports,
			      json_t **desired, int64_t *version, bool *changed) MUST_CHECK;

/*
 * The same two on a connection the caller holds, for callers that run on a
 * dedicated connection: the emulator's simulated fleet, which plays its
 * agents on the scheduler's (scheduler/sim_fleet.h).
 */
enum store_rc store_node_register_on(struct store_conn *c, const struct node_info *n,
				     char *cluster_id, size_t cluster_id_len) MUST_CHECK;
enum store_rc store_node_sync_on(struct store_conn *c, const char *node, const char *incarnation,
				 int lease_s, const json_t *reports, json_t **desired,
				 int64_t *version, bool *changed) MUST_CHECK;

/*
 * Renews the leases of n nodes in one transaction, as a sync with no
 * reports does (last_sync = now(), lease_s, the node state machine's sync
 * edge), each only if incarnations[i] is its current incarnation:
 * renewed[i] tells which were. A node named twice is renewed once (for
 * one of its entries). The batch of the server's lease renewals
 * (server/lease_batch.h).
 */
enum store_rc store_node_renew_leases(struct store *st, const char *const *names,
				      const char *const *incarnations, size_t n, int lease_s,
				      bool *renewed) MUST_CHECK;

/*
 * The desired-set versions of the nodes that incarnation registered, as a
 * new object {name: version}: the simulated fleet syncs those that moved.
 */
enum store_rc store_node_versions_of(struct store_conn *c, const char *incarnation,
				     json_t **out) MUST_CHECK;

/* The node's desired-set version (STORE_NOT_FOUND if none). */
enum store_rc store_node_version(struct store *st, const char *node, int64_t *version) MUST_CHECK;

/* Every node with its capacity and use, as ml-style JSON objects (new array). */
enum store_rc store_node_list(struct store *st, json_t **out) MUST_CHECK;

/*
 * The replicas of the job key names (in region, for a Vertex job; NULL:
 * any) and of its trials, as the API shows them (a new array of objects:
 * trial, role, index, task, attempt, state, node, gpus, port, exitCode,
 * message, startTime, endTime; absent when not set). STORE_NOT_FOUND when
 * there is no such job.
 */
struct job_key;
enum store_rc store_replica_list(struct store *st, const struct job_key *key, const char *region,
				 json_t **out) MUST_CHECK;

/* Sets or clears the draining flag. STORE_NOT_FOUND if no such node. */
enum store_rc store_node_set_draining(struct store *st, const char *node, bool draining,
				      json_t **out) MUST_CHECK;

#endif
