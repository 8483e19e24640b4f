/*
 * listen_hub.h - the one connection of a server that listens for the
 * database's notifications, on every channel, and proves them delivered.
 *
 * Subscribers register a channel and callbacks; the hub LISTENs on it and
 * hands them each notification. Today: the job cache ("tp_job": jobs
 * changed, store/job_cache.h), the agents' parked syncs ("tp_node": a
 * node's desired set changed, server/listener.c) and the scheduler
 * ("tp_sched": a pass asked for by another server).
 *
 * Fences. A fence is a bare pipeline sync sent on the listening connection:
 * PostgreSQL answers it only after it has sent every notification of the
 * transactions that committed before the sync arrived, and the hub applies
 * those notifications (calls notify) before it completes the fence. Fences
 * asked for while one is out share the next one: one round trip at a time.
 *
 * The connection (store/bgconn.h, "trainplane-server/listen") is eager: it
 * opens at start, and again after a loss with backoff. A subscriber is told
 * up() once its LISTEN has taken effect (the round that carried it is
 * answered); notifications sent before that, or while the connection was
 * lost, may have been missed, which up() must make good (drop what it
 * cached, wake every waiter). A loss calls down() on every subscriber that
 * was up, and fails every fence out or waiting. An idle session hears
 * nothing when its server turns read-only (a failover that kept the old
 * primary up: the new primary's notifications never reach it), so the hub
 * sends a fence of its own every LISTEN_HUB_CHECK_US; a fence unanswered
 * for LISTEN_HUB_FENCE_TIMEOUT_US, or answered by a server that no longer
 * takes writes, is a lost connection.
 *
 * Threads: every callback runs on the hub's thread, one at a time, and must
 * not block, subscribe or unsubscribe; it may ask for a fence.
 */
#ifndef TP_LISTEN_HUB_H
#define TP_LISTEN_HUB_H

#include <stdbool.h>
#include <stdint.h>

#define LISTEN_HUB_CHECK_US (INT64_C(2) * 1000000)
#define LISTEN_HUB_FENCE_TIMEOUT_US (INT64_C(2) * 1000000)

struct listen_hub;
struct listen_sub;

struct listen_sub_ops {
	void (*notify)(void *arg, const char *payload);	/* a notification, payload as sent */
	void (*up)(void *arg);		/* listening (again): earlier ones may be missed */
	void (*down)(void *arg, const char *why);	/* lost: nothing arrives until up() */
};

/* Starts the hub's thread, which connects at once. */
struct listen_hub *listen_hub_start(const char *conninfo);
/* Fails what waits on a fence, stops the thread, frees. NULL is a no-op. Subscribers first. */
void listen_hub_stop(struct listen_hub *h);

/*
 * Subscribes to channel (a fixed identifier: [a-z_][a-z0-9_]*, never user
 * text; aborts otherwise). Several subscribers may share a channel. ops
 * and arg are borrowed until listen_hub_unsubscribe().
 */
struct listen_sub *listen_hub_subscribe(struct listen_hub *h, const char *channel,
					const struct listen_sub_ops *ops, void *arg);
/* No callback of s runs once this returns. NULL is a no-op. */
void listen_hub_unsubscribe(struct listen_hub *h, struct listen_sub *s);

/* A fence: the caller's memory, untouched until done runs. */
struct listen_fence {
	struct listen_fence *next;
	void (*done)(void *arg, bool ok);
	void *arg;
	uint64_t round;		/* set before done: fences that share a round trip share it */
};

/*
 * Calls done(arg, true) on the hub's thread once every notification of the
 * transactions committed before this call has been handed to its
 * subscribers; done(arg, false) when that cannot be known (no connection,
 * stopping), perhaps before this returns. done must not block.
 */
void listen_hub_fence(struct listen_hub *h, struct listen_fence *f, void (*done)(void *, bool),
		      void *arg);

struct listen_hub_stats {
	uint64_t rounds;	/* fences sent (round trips): asked for, and checks */
	uint64_t notifications;	/* notifications received */
	uint64_t reconnects;	/* connections lost */
};
void listen_hub_stats(struct listen_hub *h, struct listen_hub_stats *out);

#endif
