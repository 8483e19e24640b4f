#include "listen_hub.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bgconn.h"
#include "common.h"
#include "log.h"
#include "metrics.h"
#include "store_pg.h"

#define CHANNEL_MAX 63

/* This server's hub (one per server): what listen_hub_stats() says of each hub. */
METRIC_COUNTER(m_notifications, "trainplane_listen_notifications_total",
	       "Database notifications received on this server's listening connection (every channel).")
METRIC_COUNTER(m_reconnects, "trainplane_listen_reconnects_total",
	       "Listening connections lost (each loss wakes every parked agent poll and empties the job cache).")
METRIC_HISTOGRAM(m_round_trip, "trainplane_listen_fence_seconds",
		 "Round trip of a fence on the listening connection (a sync answered after every earlier "
		 "notification): what a cached jobs.get or a check waits.", &metrics_latency_buckets)

struct listen_sub {
	struct listen_sub *next;
	char listen_sql[sizeof("LISTEN ") + CHANNEL_MAX];
	const char *channel;	/* in listen_sql */
	const struct listen_sub_ops *ops;
	void *arg;
	/* under dispatch_mu */
	bool listening;		/* its LISTEN took effect on the open connection */
	bool in_round;		/* its LISTEN is in the round out */
};

struct listen_hub {
	struct bgconn *conn;

	/* Held while callbacks run: guards the subscribers. Before mu. */
	pthread_mutex_t dispatch_mu;
	struct listen_sub *subs;

	pthread_mutex_t mu;	/* guards what follows, up to the thread's own */
	bool up;		/* a connection is open: fences are taken */
	bool stopping;
	bool idle;		/* the thread waits with nothing out or to send: it must be woken */
	bool new_subs;		/* a subscriber waits for its LISTEN */
	struct listen_fence *waiting, **waiting_tail;	/* for the next round */
	struct listen_hub_stats stats;	/* atomics */

	/* the thread's own */
	PGconn *pg;		/* the open connection's */
	struct listen_fence *answering;	/* waits on the round out */
	bool round_out;		/* a round (LISTENs, then a sync) is out */
	int listens_out;	/* LISTENs of the round whose ends are yet to be read */
	uint64_t round;		/* rounds sent */
	int64_t round_sent_us, last_round_us;
	bool want_write;	/* PQflush() has more to send */
};

static void complete(struct listen_fence *list, bool ok)
{
	for (struct listen_fence *f = list, *next; f; f = next) {
		next = f->next;	/* f is the caller's again once done runs */
		f->done(f->arg, ok);
	}
}

static bool channel_valid(const char *ch)
{
	size_t n = strlen(ch);

	if (!n || n > CHANNEL_MAX || (ch[0] >= '0' && ch[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((ch[i] >= 'a' && ch[i] <= 'z') || (ch[i] >= '0' && ch[i] <= '9') || ch[i] == '_'))
			return false;
	return true;
}

static void wake_if_idle(struct listen_hub *h, bool idle)
{
	if (idle)
		bgconn_wake(h->conn);
}

struct listen_sub *listen_hub_subscribe(struct listen_hub *h, const char *channel,
					const struct listen_sub_ops *ops, void *arg)
{
	if (!channel_valid(channel)) {
		log_error("listen hub: %s is not a channel name", channel);
		abort();
	}
	struct listen_sub *s = xcalloc(1, sizeof(*s));
	snprintf(s->listen_sql, sizeof(s->listen_sql), "LISTEN %s", channel);
	s->channel = s->listen_sql + strlen("LISTEN ");
	s->ops = ops;
	s->arg = arg;

	pthread_mutex_lock(&h->dispatch_mu);
	pthread_mutex_lock(&h->mu);
	s->next = h->subs;
	h->subs = s;
	h->new_subs = true;
	bool idle = h->idle;
	h->idle = false;
	pthread_mutex_unlock(&h->mu);
	pthread_mutex_unlock(&h->dispatch_mu);
	wake_if_idle(h, idle);
	return s;
}

void listen_hub_unsubscribe(struct listen_hub *h, struct listen_sub *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&h->dispatch_mu);
	for (struct listen_sub **pp = &h->subs; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	pthread_mutex_unlock(&h->dispatch_mu);
	free(s);
}

void listen_hub_fence(struct listen_hub *h, struct listen_fence *f, void (*done)(void *, bool),
		      void *arg)
{
	f->next = NULL;
	f->done = done;
	f->arg = arg;
	f->round = 0;
	pthread_mutex_lock(&h->mu);
	if (!h->up || h->stopping) {
		pthread_mutex_unlock(&h->mu);
		done(arg, false);
		return;
	}
	*h->waiting_tail = f;
	h->waiting_tail = &f->next;
	bool idle = h->idle;
	h->idle = false;
	pthread_mutex_unlock(&h->mu);
	wake_if_idle(h, idle);
}

void listen_hub_stats(struct listen_hub *h, struct listen_hub_stats *out)
{
	out->rounds = __atomic_load_n(&h->stats.rounds, __ATOMIC_RELAXED);
	out->notifications = __atomic_load_n(&h->stats.notifications, __ATOMIC_RELAXED);
	out->reconnects = __atomic_load_n(&h->stats.reconnects, __ATOMIC_RELAXED);
}

/* --- the connection's thread ------------------------------------------------- */

/* A new connection: nothing listens on it until the first round's LISTENs. */
static enum store_rc conn_up(void *ctx, struct store_conn *c, char *err, size_t errlen)
{
	struct listen_hub *h = ctx;
	PGconn *pg = store_conn_pg(c);

	if (!PQenterPipelineMode(pg) || PQsetnonblocking(pg, 1)) {
		snprintf(err, errlen, "%s", PQerrorMessage(pg));
		return STORE_UNAVAILABLE;
	}
	h->pg = pg;
	h->round_out = false;
	h->listens_out = 0;
	h->want_write = false;
	pthread_mutex_lock(&h->mu);
	h->up = true;
	h->new_subs = true;	/* every subscriber: LISTEN in the first round */
	pthread_mutex_unlock(&h->mu);
	return STORE_OK;
}

/* The connection closes (why: lost; NULL: the hub stops). */
static void conn_down(void *ctx, struct store_conn *c, const char *why)
{
	struct listen_hub *h = ctx;

	(void)c;
	h->pg = NULL;
	h->round_out = false;
	h->listens_out = 0;
	h->want_write = false;
	pthread_mutex_lock(&h->mu);
	h->up = false;
	struct listen_fence *failed = h->answering, **tail = &failed;
	while (*tail)
		tail = &(*tail)->next;
	*tail = h->waiting;
	h->waiting = NULL;
	h->waiting_tail = &h->waiting;
	pthread_mutex_unlock(&h->mu);
	h->answering = NULL;
	if (why) {
		__atomic_add_fetch(&h->stats.reconnects, 1, __ATOMIC_RELAXED);
		metric_add(&m_reconnects, 1);
	}

	pthread_mutex_lock(&h->dispatch_mu);
	for (struct listen_sub *s = h->subs; s; s = s->next) {
		bool was = s->listening;
		s->listening = s->in_round = false;
		if (was && why && s->ops->down)
			s->ops->down(s->arg, why);
	}
	pthread_mutex_unlock(&h->dispatch_mu);
	complete(failed, false);
}

static void connection_lost(struct listen_hub *h, const char *why)
{
	bgconn_drop(h->conn, why);	/* conn_down() runs now */
}

/* Sends a round: the LISTENs of new subscribers, then a sync. */
static void send_round(struct listen_hub *h, bool subs)
{
	bool failed = false;

	if (subs) {
		pthread_mutex_lock(&h->dispatch_mu);
		for (struct listen_sub *s = h->subs; s && !failed; s = s->next) {
			if (s->listening || s->in_round)
				continue;
			failed = !PQsendQueryParams(h->pg, s->listen_sql, 0, NULL, NULL, NULL, NULL, 0);
			s->in_round = !failed;
			h->listens_out += !failed;
		}
		pthread_mutex_unlock(&h->dispatch_mu);
	}
	if (failed || !PQpipelineSync(h->pg)) {
		connection_lost(h, PQerrorMessage(h->pg));
		return;
	}
	h->round++;
	for (struct listen_fence *f = h->answering; f; f = f->next)
		f->round = h->round;
	h->round_out = true;
	h->round_sent_us = h->last_round_us = bgconn_now(h->conn);
	__atomic_add_fetch(&h->stats.rounds, 1, __ATOMIC_RELAXED);
	int f = PQflush(h->pg);
	if (f < 0)
		connection_lost(h, PQerrorMessage(h->pg));
	else
		h->want_write = f == 1;
}

/* Hands what libpq has read to the subscribers of each channel. */
static void dispatch(struct listen_hub *h)
{
	PGnotify *n;

	pthread_mutex_lock(&h->dispatch_mu);
	while ((n = PQnotifies(h->pg))) {
		__atomic_add_fetch(&h->stats.notifications, 1, __ATOMIC_RELAXED);
		metric_add(&m_notifications, 1);
		for (struct listen_sub *s = h->subs; s; s = s->next)
			if (s->listening && !strcmp(s->channel, n->relname))
				s->ops->notify(s->arg, n->extra);
		PQfreemem(n);
	}
	pthread_mutex_unlock(&h->dispatch_mu);
}

/* What the connection sent: notifications, and perhaps the round's answers. */
static void read_input(struct listen_hub *h)
{
	const char *bad = NULL;
	bool synced = false;

	if (!PQconsumeInput(h->pg)) {
		connection_lost(h, PQerrorMessage(h->pg));
		return;
	}
	while (h->round_out && !PQisBusy(h->pg)) {
		PGresult *r = PQgetResult(h->pg);
		if (!r) {	/* the end of a LISTEN's answer */
			if (!h->listens_out)
				break;
			h->listens_out--;
			continue;
		}
		ExecStatusType st = PQresultStatus(r);
		PQclear(r);
		if (st == PGRES_PIPELINE_SYNC && !h->listens_out) {
			synced = true;
			h->round_out = false;
			metric_observe(&m_round_trip,
				       (double)(bgconn_now(h->conn) - h->round_sent_us) / 1e6);
		} else if (st != PGRES_COMMAND_OK || !h->listens_out) {
			bad = "unexpected answer to a LISTEN or a fence";
			break;
		}
	}
	/* Every notification sent before the sync's answer has been parsed by
	 * now: handed over before the fences' waiters go on. */
	dispatch(h);
	if (bad) {
		connection_lost(h, bad);
		return;
	}
	if (PQstatus(h->pg) != CONNECTION_OK) {
		connection_lost(h, PQerrorMessage(h->pg));
		return;
	}
	if (!synced)
		return;
	/* The server said with its answer that it no longer takes writes: a
	 * failover may have left it behind, and the changes made on the new
	 * primary are never heard of here. The round proves nothing. */
	if (store_pg_read_only(h->pg)) {
		connection_lost(h, "the database no longer takes writes (a standby now, or "
				   "default_transaction_read_only)");
		return;
	}
	pthread_mutex_lock(&h->dispatch_mu);
	for (struct listen_sub *s = h->subs; s; s = s->next) {
		if (!s->in_round)
			continue;
		s->in_round = false;
		s->listening = true;
		if (s->ops->up)
			s->ops->up(s->arg);
	}
	pthread_mutex_unlock(&h->dispatch_mu);
	struct listen_fence *done = h->answering;
	h->answering = NULL;
	complete(done, true);
}

static void conn_turn(void *ctx, struct store_conn *c, short revents, struct bgloop_wait *w)
{
	struct listen_hub *h = ctx;

	(void)c;
	if (h->pg && (revents & POLLOUT)) {
		int f = PQflush(h->pg);
		h->want_write = f == 1;
		if (f < 0)
			connection_lost(h, PQerrorMessage(h->pg));
	}
	if (h->pg && (revents & (POLLIN | POLLERR | POLLHUP)))
		read_input(h);
	int64_t now = bgconn_now(h->conn);
	if (h->pg && h->round_out && now - h->round_sent_us > LISTEN_HUB_FENCE_TIMEOUT_US)
		connection_lost(h, "a fence went unanswered for 2 s");

	if (h->pg && !h->round_out) {
		pthread_mutex_lock(&h->mu);
		h->idle = false;	/* awake: fences need not wake it */
		bool subs = h->new_subs;
		h->new_subs = false;
		h->answering = h->waiting;
		h->waiting = NULL;
		h->waiting_tail = &h->waiting;
		pthread_mutex_unlock(&h->mu);
		if (subs || h->answering || now - h->last_round_us >= LISTEN_HUB_CHECK_US)
			send_round(h, subs);
	}

	pthread_mutex_lock(&h->mu);
	bool more = h->waiting || h->new_subs;
	/* With a round out its answer wakes the thread, which then sends what
	 * waits: only a thread with nothing out or waiting must be woken. */
	h->idle = !more && !h->round_out;
	pthread_mutex_unlock(&h->mu);
	if (!h->pg)
		return;		/* the loop reopens it (eager) */
	w->events = POLLIN | (h->want_write ? POLLOUT : 0);
	if (h->round_out)
		w->deadline_us = h->round_sent_us + LISTEN_HUB_FENCE_TIMEOUT_US + 1000;
	else if (more)
		w->deadline_us = 0;	/* asked for meanwhile: at once */
	else
		w->deadline_us = h->last_round_us + LISTEN_HUB_CHECK_US;
}

static const struct bgconn_ops hub_ops = { conn_up, conn_down, conn_turn };

struct listen_hub *listen_hub_start(const char *conninfo)
{
	static const struct bgconn_config cfg = {
		{ "listen hub", true, 100000, 500000, NULL }, "listen",
	};
	struct listen_hub *h = xcalloc(1, sizeof(*h));

	pthread_mutex_init(&h->dispatch_mu, NULL);
	pthread_mutex_init(&h->mu, NULL);
	h->waiting_tail = &h->waiting;
	bgconn_start(conninfo, &cfg, &hub_ops, h, &h->conn);
	return h;
}

void listen_hub_stop(struct listen_hub *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stopping = true;
	pthread_mutex_unlock(&h->mu);
	bgconn_stop(h->conn);	/* conn_down(NULL): what waits on a fence fails */
	bgconn_free(h->conn);
	for (struct listen_sub *s = h->subs, *next; s; s = next) {
		next = s->next;
		log_error("listen hub: stopped with a subscriber of %s left", s->channel);
		free(s);
	}
	pthread_mutex_destroy(&h->mu);
	pthread_mutex_destroy(&h->dispatch_mu);
	free(h);
}
