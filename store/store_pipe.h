/*
 * store_pipe.h - reads sent to PostgreSQL down one pipelined connection.
 *
 * The request threads of the HTTP server hand their reads (jobs.get) and
 * inserts (jobs.create) to one background connection (store/bgconn.h,
 * "trainplane-server/pipe") in libpq's pipeline mode: whatever arrives
 * while a batch is out goes in the next batch, one write and one read of
 * the socket for all of them, and PostgreSQL executes them back to back
 * without waking up in between. Each read is still one statement executed
 * after its request arrived: nothing is cached, so a read sees every write
 * committed before it on any server.
 *
 * A batch is one implicit transaction: it commits at its sync, and only
 * then do its commands complete, so no caller sees a write that might still
 * roll back (that is also group commit for the writes). When a command
 * fails, PostgreSQL rolls the batch back: that command gets its error
 * (STORE_CONFLICT for a unique violation, else STORE_ERROR) and the others
 * are sent again. After a lost connection the reads in flight are sent
 * again once on a new connection; the writes fail with STORE_UNAVAILABLE,
 * since they may or may not have committed, as on a pooled connection.
 *
 * The connection opens at the first command, and again at the next one
 * after a loss; while it cannot be opened (a failed open backs off for
 * 100 ms: bgloop.h), commands fail at once with STORE_UNAVAILABLE.
 * Commands are queued by the typed calls of store/ (store_job_get_piped(),
 * ...; the runner is in store_pg.h).
 */
#ifndef TP_STORE_PIPE_H
#define TP_STORE_PIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

struct store_pipe;

/* Starts the pipe's thread; it connects on first use. */
struct store_pipe *store_pipe_start(const char *conninfo);

struct store_pipe_stats {
	uint64_t batches;	/* syncs sent: batches of one or more commands */
	uint64_t commands;	/* commands sent (a command sent again counts again) */
	uint64_t resent;	/* commands sent again: their batch failed, or the connection */
	uint64_t reconnects;	/* connections lost */
};
void store_pipe_stats(struct store_pipe *p, struct store_pipe_stats *out);

/* Completes what is queued, stops the thread, frees. NULL is a no-op. */
void store_pipe_stop(struct store_pipe *p);

#endif
