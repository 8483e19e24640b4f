/*
 * bgconn.h - the skeleton of every background database connection of a
 * server: a thread with a dedicated connection of its own (store.h's
 * store_conn_open: named "trainplane-server/<component>" in
 * pg_stat_activity, opened only on a server that takes writes, through the
 * URL's hosts with its target_session_attrs), its poll loop, its reopening
 * with backoff and its clean stop: lib/bgloop.h with a PostgreSQL session.
 *
 * Users: the store pipe (store_pipe.c: lazy, pipeline mode), the LISTEN hub
 * (listen_hub.c: eager, every channel and the fences), the scheduler
 * (scheduler/scheduler.c: eager, the leader's advisory lock and writes).
 * Each gives three callbacks, run on the connection's thread:
 *
 *   up(ctx, c, err)        c has just opened: set it up (LISTEN, pipeline
 *                          mode); anything but STORE_OK closes it again
 *                          and counts as a failed open (backoff)
 *   down(ctx, c, why)      c is about to close (why; NULL at the stop):
 *                          what it owed fails or goes again elsewhere
 *   turn(ctx, c, revents, wait)
 *                          a turn of the loop (bgloop.h); c is the open
 *                          connection or NULL
 *
 * A turn that finds its connection no use (lost, or on a server that no
 * longer takes writes: each user knows when its protocol lets it tell)
 * calls bgconn_drop(); the next open goes to whichever host takes writes.
 */
#ifndef TP_BGCONN_H
#define TP_BGCONN_H

#include "bgloop.h"
#include "store.h"

struct bgconn_ops {
	enum store_rc (*up)(void *ctx, struct store_conn *c, char *err, size_t errlen);
	void (*down)(void *ctx, struct store_conn *c, const char *why);
	void (*turn)(void *ctx, struct store_conn *c, short revents, struct bgloop_wait *wait);
};

struct bgconn_config {
	struct bgloop_config loop;	/* name, eager, backoff, clock */
	const char *component;	/* pg_stat_activity: "trainplane-server/<component>" */
};

struct bgconn;

/*
 * Starts the thread; conninfo is copied, cfg's strings, ops and ctx
 * borrowed. *out is set before the thread starts (its first turn may use it).
 */
void bgconn_start(const char *conninfo, const struct bgconn_config *cfg,
		  const struct bgconn_ops *ops, void *ctx, struct bgconn **out);
/* Makes the thread run a turn soon. Any thread. */
void bgconn_wake(struct bgconn *b);
/* The loop's clock (bgloop.h). */
int64_t bgconn_now(const struct bgconn *b);
/* Whether bgconn_stop() has been called. Any thread. */
bool bgconn_stopping(const struct bgconn *b);

/* --- on the connection's thread --- */

/* The connection, opened now if there is none and the backoff allows; or NULL. */
struct store_conn *bgconn_connect(struct bgconn *b);
/* Closes it (down() runs now) and backs off. */
void bgconn_drop(struct bgconn *b, const char *why);

/*
 * Stops (bgloop_stop()): the last turns, down(NULL), joins. Wake-ups stay
 * harmless until bgconn_free(). NULL is a no-op.
 */
void bgconn_stop(struct bgconn *b);
void bgconn_free(struct bgconn *b);	/* after bgconn_stop(); NULL is a no-op */

#endif
