/*
 * sync_msg.h - the JSON of the agent protocol (agent/PROTOCOL.md): the
 * register and sync bodies the agent sends and the answers it parses.
 * Nothing here does I/O.
 */
#ifndef TP_AGENT_SYNC_MSG_H
#define TP_AGENT_SYNC_MSG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "agent_config.h"
#include "common.h"
#include "replica.h"
#include "wire.h"

#define AGENT_VERSION "0.1.0"

/* Register body. gpu_type NULL or gpu_count 0: no accelerators. New reference. */
json_t *sync_register_body(const struct agent_config *cfg, const char *incarnation,
			   const char *gpu_type, int gpu_count);

#define SYNC_CLUSTER_ID_MAX WIRE_CLUSTER_ID_MAX	/* characters (lib/wire.h) */
#define SYNC_REPLICA_CLUSTERS_MAX 64	/* clusters named in one register body */

/*
 * Adds to a register body what the agent's work dir holds: "clusterId", the
 * cluster it was bound to (bound; NULL or "": none yet), and
 * "replicaClusters", how many replicas of each cluster the two lists hold.
 */
void sync_register_clusters(json_t *body, const char *bound, const struct replica *adopted,
			    const struct replica *foreign);

/*
 * Register answer: syncIntervalSeconds and leaseSeconds (kept when absent)
 * and clusterId into cluster_id ("" when absent: a server without cluster
 * ids). 0, or -1 with a message in err (also for a malformed clusterId).
 */
int sync_parse_register(const char *body, size_t len, int *interval, int *lease,
			char *cluster_id, size_t cluster_id_len, char *err,
			size_t errlen) MUST_CHECK;

/* One replica's report as it stands (state, seq, pinned log batch); a
 * fenced one that ended is reported LOST. New reference. */
json_t *sync_report(const struct replica *r);

/* The desired set of a sync answer. */
struct desired_set {
	char *version;			/* NULL when absent */
	bool has_replicas;		/* false: "replicas" absent, keep the old set */
	struct desired_replica *v;
	size_t n;
	int lease_s;			/* leaseSeconds of the answer; 0 when absent */
};
void desired_set_release(struct desired_set *ds);
/* Finds (replica, attempt) in ds, or NULL. */
const struct desired_replica *desired_find(const struct desired_set *ds, const char *id,
					   int attempt);

/*
 * Parses a sync answer into out (released first). Invalid JSON or an entry
 * without replica, attempt or a known desired state rejects the whole
 * answer: returns -1 with a message in err and out empty.
 */
int sync_parse_answer(const char *body, size_t len, struct desired_set *out, char *err,
		      size_t errlen) MUST_CHECK;

#endif
