/*
 * bgloop.h - a background thread that keeps one session open and serves it.
 *
 * A loop owns a thread, a wake-up (an eventfd), at most one session
 * (anything with a file descriptor: a database connection, a client of a
 * remote API), the session's reopening with backoff, and a clean stop.
 * What the session is for belongs to the loop's owner, in three callbacks
 * that all run on the loop's thread:
 *
 *   open(ctx, err)   makes a session; returns its descriptor, BGLOOP_NO_FD
 *                    for a session with none to watch (a client that makes
 *                    blocking calls in its turns), or -1 with why in err
 *                    (nothing is left open then)
 *   close(ctx, why)  ends it: what it owed fails or waits for the next one
 *                    (why: bgloop_drop()'s reason, or NULL at the stop)
 *   turn(ctx, revents, wait)
 *                    runs at every wake-up, deadline and readiness of the
 *                    session's descriptor (revents: its poll events, 0 when
 *                    it was not ready or there is none); does what is due
 *                    and fills wait: what to watch the descriptor for, the
 *                    latest time of the next turn, whether work is left
 *
 * Sessions. An eager loop (cfg.eager) opens one whenever it has none; a
 * lazy one only when its turn asks, with bgloop_session(). A session
 * dropped with bgloop_drop() is opened again at once (a killed backend, a
 * failover: the next one may well work), unless it died within
 * backoff_min_us of its opening. A failed open backs off: no open is tried
 * before backoff_min_us has passed, then twice that, up to backoff_max_us,
 * each wait drawn between its half and its whole (servers that lost their
 * database together do not come back in step); an open that succeeds
 * resets it. The loop logs, under cfg.name: the first failed open of an
 * outage (WARN; the next ones at DEBUG), the session back after one (INFO),
 * and every drop (WARN). Owners log what a loss means to them.
 *
 * Time. Deadlines are on the loop's clock (cfg.clock; mono_usec() when
 * NULL), so a clock that can be moved (an emulator's) moves every loop: it
 * calls bgloop_wake() on the loops after a move.
 *
 * Stopping. bgloop_stop() sets the flag, wakes the thread and waits for
 * it: the thread turns on while its turn says busy (work to finish, such as
 * commands in flight), then closes the session (why NULL) and ends. Turns
 * see the flag with bgloop_stopping(). Wake-ups stay harmless until
 * bgloop_free(), for owners whose wakers outlive the thread.
 *
 * The thread/backoff/stop part knows nothing of PostgreSQL: store/bgconn.h
 * builds the database connections of the server on it, and a loop that
 * talks to another service (a Slurm REST API) can use it as it is.
 */
#ifndef TP_BGLOOP_H
#define TP_BGLOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"

#define BGLOOP_NEVER INT64_MAX
#define BGLOOP_NO_FD (-2)	/* open(): a session with no descriptor to watch */

/* What a turn asks for; bgloop fills the defaults before each turn. */
struct bgloop_wait {
	short events;		/* POLLIN / POLLOUT on the session's descriptor (default 0) */
	int64_t deadline_us;	/* the next turn at the latest (loop's clock; default BGLOOP_NEVER) */
	bool busy;		/* work is left to finish before a stop (default false) */
};

struct bgloop_ops {
	int (*open)(void *ctx, char *err, size_t errlen);
	void (*close)(void *ctx, const char *why);
	void (*turn)(void *ctx, short revents, struct bgloop_wait *wait);
};

struct bgloop_config {
	const char *name;	/* in log lines: "store pipe" (borrowed: must outlive the loop) */
	bool eager;		/* keep a session open at all times */
	int64_t backoff_min_us, backoff_max_us;	/* 0: 100 ms and 1 s */
	int64_t (*clock)(void);	/* NULL: mono_usec() */
};

struct bgloop;

/*
 * Starts the thread (aborts if it cannot); ops and ctx are borrowed. *out
 * is set before the thread starts, so that its first turn may use it.
 */
void bgloop_start(const struct bgloop_config *cfg, const struct bgloop_ops *ops, void *ctx,
		  struct bgloop **out);
/* Makes the thread run a turn soon. Any thread; a signal handler too. */
void bgloop_wake(struct bgloop *b);
/* The loop's clock. */
int64_t bgloop_now(const struct bgloop *b);

/* --- on the loop's thread (in a turn) --- */

/*
 * Whether a session is open, opening one now if there is none and the
 * backoff allows. A turn that gets false should fail fast what needs it.
 */
bool bgloop_session(struct bgloop *b);
/* Closes the session (close(ctx, why) runs now) and backs off. */
void bgloop_drop(struct bgloop *b, const char *why);
/* Whether bgloop_stop() has been called (any thread). */
bool bgloop_stopping(const struct bgloop *b);

/*
 * Stops as described above and joins. Not from the loop's thread; once.
 * bgloop_wake() stays harmless until bgloop_free(). NULL is a no-op.
 */
void bgloop_stop(struct bgloop *b);
void bgloop_free(struct bgloop *b);	/* after bgloop_stop(); NULL is a no-op */

/* libpq's messages span lines: why on one line, in out (for log lines). */
void bgloop_one_line(char *out, size_t n, const char *why);

#endif
