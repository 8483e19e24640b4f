/*
 * lease_batch.h - agents' lease renewals written in batches: one
 * transaction renews every node whose sync arrived in the last
 * LEASE_BATCH_USEC (store_node_renew_leases), instead of one transaction
 * per sync.
 *
 * A sync that changes nothing (api_agent.c) hands its renewal here and is
 * suspended; it runs again once the batch that carried it committed (or
 * failed), and only then may it be answered, so that no answer carries a
 * lease the database has not recorded (agent/PROTOCOL.md, "Leases and
 * fencing"). The recorded last_sync is the batch's now(), no earlier than
 * the sync's arrival, so the server's view of the lease never ends before
 * the agent's.
 *
 * One thread of its own, on a pooled connection. /metrics:
 * trainplane_lease_batches_total, trainplane_lease_batch_renewals_total.
 */
#ifndef TP_LEASE_BATCH_H
#define TP_LEASE_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* How long a batch gathers renewals before it is written. */
#define LEASE_BATCH_USEC (20 * 1000)

struct lease_batch;

struct lease_batch *lease_batch_start(struct store *st, int lease_s);
/* Writes what is pending, then stops the thread and frees. NULL is a no-op. */
void lease_batch_stop(struct lease_batch *lb);

/*
 * Renews node's lease if incarnation is still its own, in the next batch,
 * then calls done(arg, renewed) on the batch's thread: renewed is false
 * when the node is unknown, has another incarnation, or the batch failed
 * (the caller then goes the long way). done must not block. After
 * lease_batch_stop began, done(arg, false) is called at once.
 */
void lease_batch_renew(struct lease_batch *lb, const char *node, const char *incarnation,
		       void (*done)(void *arg, bool renewed), void *arg);

#endif
