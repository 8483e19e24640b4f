/*
 * node_cache.h - what this server knows of each node between its agent's
 * syncs: its incarnation and desired-set version, as the database had them
 * at the node's last full sync, kept only while nothing says they changed.
 *
 * A sync that changes nothing (no report, the agent's desired version the
 * node's, the same incarnation) is answered from here without a database
 * transaction; only its lease is written, in a batch (lease_batch.h).
 * Freshness comes from the "tp_node" notifications (server/listener.c),
 * sent in the transaction of every change of a node's desired set (the
 * replicas trigger, schema/002), of every register (a new incarnation) and
 * of every reset: each drops the node's entry. Notifications that may have
 * been missed (the listening connection lost, or not yet listening) drop
 * everything, and nothing is kept until listening again.
 *
 * An agent sends the state of every replica it runs in every sync, each
 * with the seq of its last change: the same (replica, attempt, seq) again
 * changes nothing (the sync applies a report only over an older seq). So
 * the digest of the reports of the node's last full sync is kept too: a
 * sync whose reports have that digest is as quiet as one without.
 *
 * Reads race changes as in the job cache: a full sync takes a stamp before
 * its transaction and fills the entry after it only if no change of the
 * node was heard in between (a change after the transaction's snapshot is
 * heard after the stamp, since it is sent at its commit). A parked poll
 * holds the stamp of what it was told and asks node_cache_moved() after it
 * parked: a change heard between its read and its park, which woke nobody,
 * is seen then.
 *
 * Any thread; one mutex.
 */
#ifndef TP_NODE_CACHE_H
#define TP_NODE_CACHE_H

#include <stddef.h>

#include <stdbool.h>
#include <stdint.h>

struct node_cache;

/* What a reader was told of a node, and when (opaque). */
struct node_stamp {
	uint64_t gen, epoch;
};

struct node_cache *node_cache_new(void);
void node_cache_free(struct node_cache *nc);	/* NULL is a no-op */

/*
 * Listening (up) or not: either way everything known is dropped (what was
 * missed is unknown); while not listening, nothing is kept.
 */
void node_cache_listening(struct node_cache *nc, bool up);
/* A notification: the node's desired set or incarnation changed. */
void node_cache_changed(struct node_cache *nc, const char *node);

/* Before a read of the node: the stamp to fill with (or to watch). */
struct node_stamp node_cache_stamp(struct node_cache *nc, const char *node);
/*
 * After the read committed: keeps what it read unless the node changed
 * since stamp, and reports, the digest of the reports that sync carried,
 * all of them applied by then (0: none to remember).
 */
void node_cache_fill(struct node_cache *nc, const char *node, struct node_stamp stamp,
		     const char *incarnation, int64_t version, uint64_t reports);
/*
 * The node's incarnation (copied into inc, incsize bytes), version and
 * last reports' digest, if known: true, with *stamp what to watch. NULL
 * nc: false.
 */
bool node_cache_get(struct node_cache *nc, const char *node, char *inc, size_t incsize,
		    int64_t *version, uint64_t *reports, struct node_stamp *stamp);
/* Whether the node may have changed since stamp (true while not listening). */
bool node_cache_moved(struct node_cache *nc, const char *node, struct node_stamp stamp);

#endif
