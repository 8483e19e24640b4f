#include "store_pipe.h"

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bgconn.h"
#include "common.h"
#include "log.h"
#include "store_pg.h"

#define MAX_PARAMS 8
/* After a failed connect, commands fail fast for this long (they are what retries). */
#define BACKOFF_MIN_US 100000
#define BACKOFF_MAX_US 100000
/* Reads that lost their connection wait this long for the next one at most. */
#define RETRY_GAP_US 100000

struct item {
	struct item *next;
	const struct store_stmt *stmt;
	int nparams;
	char *params[MAX_PARAMS];
	store_pipe_done done;
	void (*fn)(void);
	void *arg;
	int attempts;		/* sends so far */
	struct item *batch_next;	/* answered, waiting for its batch's sync */
	PGresult *res;
	enum store_rc rc;	/* STORE_OK, or this command's own error */
	bool aborted;		/* skipped after an earlier error of its batch */
};

enum slot_kind { SLOT_PREPARE, SLOT_QUERY, SLOT_SYNC };

/* What the connection owes us, in the order it will answer. */
struct slot {
	enum slot_kind kind;
	struct item *item;	/* SLOT_QUERY */
	unsigned stmt_id;	/* SLOT_PREPARE */
	PGresult *res;		/* the command's result, once read */
};

struct store_pipe {
	struct bgconn *conn;	/* the thread, its connection, its wake-ups */

	pthread_mutex_t mu;	/* guards the queue and the flags */
	struct item *queue, **queue_tail;
	bool idle;		/* blocked with nothing in flight: a submit must wake it */
	bool stopping;
	struct store_pipe_stats stats;	/* written by the thread, read by scrapes (atomics) */

	/* the thread's own */
	PGconn *pg;		/* the connection's, while it is open */
	struct store_prepared prepared;	/* the statements prepared on pg */
	struct slot *slots;	/* ring buffer */
	size_t slot_head, slot_len, slot_cap;
	struct item *retry, **retry_tail;	/* to send again after a reconnect */
	bool want_write;	/* PQflush() has more to send */
	/* The answered commands of the batch being read; the batch is one
	 * implicit transaction that commits at its sync, or not at all. */
	struct item *answered, **answered_tail;
	bool batch_failed;
	bool read_only;		/* a command was refused as read-only: drop pg after the sync */
	int64_t batch_deadline;	/* the batch in flight's answer is due (loop's clock); 0: none */
	bool late;		/* dropping pg for a late batch: what it owed fails, no resend */
};

static void item_free(struct item *it)
{
	for (int i = 0; i < it->nparams; i++)
		free(it->params[i]);
	free(it);
}

static void complete(struct item *it, PGresult *res, enum store_rc rc)
{
	it->done(it->fn, it->arg, res, rc);
	item_free(it);
}

void store_pipe_submit(struct store_pipe *p, const struct store_stmt *stmt, int nparams,
		       const char *const *params, store_pipe_done done, void (*fn)(void),
		       void *arg)
{
	struct item *it = xcalloc(1, sizeof(*it));
	bool wake;

	if (nparams > MAX_PARAMS)
		abort();
	it->stmt = stmt;
	it->nparams = nparams;
	for (int i = 0; i < nparams; i++)
		it->params[i] = params[i] ? xstrdup(params[i]) : NULL;
	it->done = done;
	it->fn = fn;
	it->arg = arg;

	pthread_mutex_lock(&p->mu);
	if (p->stopping) {
		pthread_mutex_unlock(&p->mu);
		complete(it, NULL, STORE_UNAVAILABLE);
		return;
	}
	*p->queue_tail = it;
	p->queue_tail = &it->next;
	wake = p->idle;
	p->idle = false;
	pthread_mutex_unlock(&p->mu);
	if (wake)
		bgconn_wake(p->conn);
}

/* --- the in-flight ring ------------------------------------------------- */

static struct slot *slot_push(struct store_pipe *p, enum slot_kind kind)
{
	if (p->slot_len == p->slot_cap) {
		size_t cap = p->slot_cap ? 2 * p->slot_cap : 64;
		struct slot *s = xcalloc(cap, sizeof(*s));
		for (size_t i = 0; i < p->slot_len; i++)
			s[i] = p->slots[(p->slot_head + i) % p->slot_cap];
		free(p->slots);
		p->slots = s;
		p->slot_cap = cap;
		p->slot_head = 0;
	}
	struct slot *s = &p->slots[(p->slot_head + p->slot_len++) % p->slot_cap];
	*s = (struct slot){ .kind = kind };
	return s;
}

static struct slot *slot_front(struct store_pipe *p)
{
	return p->slot_len ? &p->slots[p->slot_head] : NULL;
}

static void slot_pop(struct store_pipe *p)
{
	p->slot_head = (p->slot_head + 1) % p->slot_cap;
	p->slot_len--;
}

static void retry_or_fail(struct store_pipe *p, struct item *it)
{
	PQclear(it->res);
	it->res = NULL;
	it->aborted = false;
	it->rc = STORE_OK;
	if (it->attempts >= 2) {
		complete(it, NULL, STORE_UNAVAILABLE);
		return;
	}
	it->next = NULL;
	*p->retry_tail = it;
	p->retry_tail = &it->next;
}

/*
 * A read is sent again once on a new connection; a write whose batch did
 * not report its commit may or may not have committed: it fails with
 * STORE_UNAVAILABLE, as a write on a pooled connection does.
 */
static void lost_item(struct store_pipe *p, struct item *it)
{
	if (it->stmt->readonly && !p->late) {
		retry_or_fail(p, it);
	} else {
		PQclear(it->res);
		complete(it, NULL, STORE_UNAVAILABLE);
	}
}

/*
 * The connection is about to close (why: lost; NULL: the pipe stops, with
 * nothing in flight): what it owed is sent again once, elsewhere.
 */
static void conn_down(void *ctx, struct store_conn *c, const char *why)
{
	struct store_pipe *p = ctx;

	(void)c;
	if (why)
		__atomic_add_fetch(&p->stats.reconnects, 1, __ATOMIC_RELAXED);
	for (struct item *it = p->answered, *next; it; it = next) {
		next = it->batch_next;
		lost_item(p, it);
	}
	p->answered = NULL;
	p->answered_tail = &p->answered;
	p->batch_failed = false;
	while (p->slot_len) {
		struct slot *s = slot_front(p);
		PQclear(s->res);
		if (s->kind == SLOT_QUERY)
			lost_item(p, s->item);
		slot_pop(p);
	}
	p->pg = NULL;
	memset(&p->prepared, 0, sizeof(p->prepared));
	p->want_write = false;
	p->read_only = false;
	p->batch_deadline = 0;
}

/* A new connection: into pipeline mode, without blocking. */
static enum store_rc conn_up(void *ctx, struct store_conn *c, char *err, size_t errlen)
{
	struct store_pipe *p = ctx;
	PGconn *pg = store_conn_pg(c);

	if (!PQenterPipelineMode(pg) || PQsetnonblocking(pg, 1)) {
		snprintf(err, errlen, "%s", PQerrorMessage(pg));
		return STORE_UNAVAILABLE;
	}
	p->pg = pg;
	memset(&p->prepared, 0, sizeof(p->prepared));
	return STORE_OK;
}

static void connection_lost(struct store_pipe *p, const char *why)
{
	bgconn_drop(p->conn, why);	/* conn_down() runs now */
}

static bool send_item(struct store_pipe *p, struct item *it)
{
	const struct store_stmt *st = it->stmt;

	if (!store_prepared_has(&p->prepared, st->id)) {
		store_stmt_claim(st);
		if (!PQsendPrepare(p->pg, st->name, st->sql, it->nparams, NULL))
			return false;
		slot_push(p, SLOT_PREPARE)->stmt_id = st->id;
		store_prepared_set(&p->prepared, st->id, true);
	}
	if (!PQsendQueryPrepared(p->pg, st->name, it->nparams, (const char *const *)it->params,
				 NULL, NULL, 0))
		return false;
	it->attempts++;
	__atomic_add_fetch(&p->stats.commands, 1, __ATOMIC_RELAXED);
	if (it->attempts > 1)
		__atomic_add_fetch(&p->stats.resent, 1, __ATOMIC_RELAXED);
	slot_push(p, SLOT_QUERY)->item = it;
	return true;
}

/* Sends a batch: the retries first, then what was queued; one sync. */
static void send_batch(struct store_pipe *p, struct item *batch)
{
	struct item *list = p->retry;

	if (list) {
		*p->retry_tail = batch;
		batch = list;
		p->retry = NULL;
		p->retry_tail = &p->retry;
	}
	if (!batch)
		return;
	if (!bgconn_connect(p->conn)) {
		while (batch) {
			struct item *next = batch->next;
			complete(batch, NULL, STORE_UNAVAILABLE);
			batch = next;
		}
		return;
	}
	while (batch) {
		struct item *next = batch->next;
		if (!send_item(p, batch)) {
			retry_or_fail(p, batch);
			for (batch = next; batch; batch = next) {
				next = batch->next;
				retry_or_fail(p, batch);
			}
			connection_lost(p, PQerrorMessage(p->pg));
			return;
		}
		batch = next;
	}
	if (!PQpipelineSync(p->pg)) {
		connection_lost(p, PQerrorMessage(p->pg));
		return;
	}
	slot_push(p, SLOT_SYNC);
	int64_t limit = store_statement_deadline();
	p->batch_deadline = limit ? bgconn_now(p->conn) + limit : 0;
	__atomic_add_fetch(&p->stats.batches, 1, __ATOMIC_RELAXED);
	int f = PQflush(p->pg);
	if (f < 0)
		connection_lost(p, PQerrorMessage(p->pg));
	else
		p->want_write = f == 1;
}

/* A command answered: it waits for its batch's sync to learn its fate. */
static void answered(struct store_pipe *p, struct slot *s)
{
	struct item *it = s->item;
	ExecStatusType st = s->res ? PQresultStatus(s->res) : PGRES_FATAL_ERROR;

	it->res = s->res;
	it->rc = STORE_OK;
	const char *state = s->res ? PQresultErrorField(s->res, PG_DIAG_SQLSTATE) : NULL;
	if (st == PGRES_PIPELINE_ABORTED) {
		it->aborted = true;	/* skipped after an earlier error: not its fault */
		p->batch_failed = true;
	} else if (state && !strcmp(state, "25006")) {
		/* Refused: the server turned read-only (a failover). It did
		 * not run: it goes again, on the next connection. */
		it->aborted = true;
		p->batch_failed = true;
		p->read_only = true;
	} else if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
		it->rc = state && !strcmp(state, "23505") ? STORE_CONFLICT : STORE_ERROR;
		if (it->rc == STORE_ERROR && PQstatus(p->pg) == CONNECTION_OK)
			log_error("database error in %s: %s", it->stmt->name,
				  s->res ? PQresultErrorMessage(s->res) : "no result");
		p->batch_failed = true;
	}
	it->batch_next = NULL;
	*p->answered_tail = it;
	p->answered_tail = &it->batch_next;
}

/*
 * The batch's sync: without an error it committed, and every command
 * completes with its result. With one, PostgreSQL rolled the whole batch
 * back: the failing command gets its error, the others are sent again.
 * read_only: the server said with the sync that it no longer takes
 * writes; the reads are asked again elsewhere (it may have been left
 * behind by a failover), the writes that ran have committed.
 */
static void batch_synced(struct store_pipe *p, bool read_only)
{
	struct item *it = p->answered, *next;
	bool failed = p->batch_failed;

	p->answered = NULL;
	p->answered_tail = &p->answered;
	p->batch_failed = false;
	for (; it; it = next) {
		next = it->batch_next;
		if (!failed && read_only && it->stmt->readonly) {
			retry_or_fail(p, it);
		} else if (!failed) {
			PGresult *res = it->res;
			it->res = NULL;
			complete(it, res, STORE_OK);
		} else if (it->rc != STORE_OK && !it->aborted) {
			PQclear(it->res);
			it->res = NULL;
			complete(it, NULL, it->rc);
		} else {
			retry_or_fail(p, it);
		}
	}
}

/* Reads what has arrived; returns why the connection is no use, or NULL. */
static const char *read_results(struct store_pipe *p)
{
	if (!PQconsumeInput(p->pg))
		return PQerrorMessage(p->pg);
	for (struct slot *s; (s = slot_front(p)) && !PQisBusy(p->pg);) {
		PGresult *r = PQgetResult(p->pg);
		if (s->kind == SLOT_SYNC) {
			ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
			PQclear(r);
			if (st != PGRES_PIPELINE_SYNC)
				return PQerrorMessage(p->pg);
			slot_pop(p);
			bool read_only = p->read_only || store_pg_read_only(p->pg);
			batch_synced(p, read_only);
			if (read_only)
				return "the database no longer takes writes (a standby now, or "
				       "default_transaction_read_only)";
			continue;
		}
		if (r) {
			/* one result per command; keep the first, drop any more */
			if (s->res)
				PQclear(r);
			else
				s->res = r;
			continue;
		}
		/* NULL: the command is complete */
		struct slot done = *s;
		slot_pop(p);
		if (done.kind == SLOT_QUERY) {
			answered(p, &done);
		} else {
			if (!done.res || PQresultStatus(done.res) != PGRES_COMMAND_OK) {
				log_error("store pipe: cannot prepare statement %u: %s", done.stmt_id,
					  done.res ? PQresultErrorMessage(done.res) : "no result");
				store_prepared_set(&p->prepared, done.stmt_id, false);
				p->batch_failed = true;	/* what follows is aborted */
			}
			PQclear(done.res);
		}
	}
	if (PQstatus(p->pg) != CONNECTION_OK)
		return PQerrorMessage(p->pg);
	return NULL;
}

/* One turn of the pipe's connection (bgloop.h). */
static void conn_turn(void *ctx, struct store_conn *c, short revents, struct bgloop_wait *w)
{
	struct store_pipe *p = ctx;

	(void)c;
	if (p->pg && (revents & POLLOUT)) {
		int f = PQflush(p->pg);
		p->want_write = f == 1;
		if (f < 0)
			connection_lost(p, PQerrorMessage(p->pg));
	}
	const char *why;
	if (p->pg && (revents & (POLLIN | POLLERR | POLLHUP)) && (why = read_results(p)))
		connection_lost(p, why);
	/* The batch in flight past its deadline (a commit waiting for a
	 * synchronous standby that is gone, a lock never granted): cancelled,
	 * and what it owed fails at once; sent again, it would wait as long. */
	if (p->pg && p->slot_len && p->batch_deadline &&
	    bgconn_now(p->conn) >= p->batch_deadline) {
		store_pg_cancel_late(p->pg, "a batch of the store pipe");
		p->late = true;
		connection_lost(p, "no answer within db_statement_timeout");
		p->late = false;
	}

	/* A batch goes out only when the previous one has been answered. */
	struct item *batch = NULL;
	if (!p->slot_len) {
		pthread_mutex_lock(&p->mu);
		p->idle = false;	/* awake: submits need not wake it */
		batch = p->queue;
		p->queue = NULL;
		p->queue_tail = &p->queue;
		pthread_mutex_unlock(&p->mu);
		send_batch(p, batch);
	}

	pthread_mutex_lock(&p->mu);
	bool queued = p->queue != NULL;
	/* Blocked with nothing in flight: a submit must wake the thread. */
	p->idle = !queued && !p->slot_len && !p->retry;
	pthread_mutex_unlock(&p->mu);
	w->busy = queued || p->slot_len || p->retry;
	if (p->pg && p->slot_len) {
		w->events = POLLIN | (p->want_write ? POLLOUT : 0);
		if (p->batch_deadline)
			w->deadline_us = p->batch_deadline;
	} else if (queued)
		w->deadline_us = 0;	/* queued meanwhile, nothing in flight: at once */
	else if (p->retry)		/* waiting for a reconnect: try again soon */
		w->deadline_us = bgconn_now(p->conn) + RETRY_GAP_US;
}

static const struct bgconn_ops pipe_ops = { conn_up, conn_down, conn_turn };

void store_pipe_stats(struct store_pipe *p, struct store_pipe_stats *out)
{
	out->batches = __atomic_load_n(&p->stats.batches, __ATOMIC_RELAXED);
	out->commands = __atomic_load_n(&p->stats.commands, __ATOMIC_RELAXED);
	out->resent = __atomic_load_n(&p->stats.resent, __ATOMIC_RELAXED);
	out->reconnects = __atomic_load_n(&p->stats.reconnects, __ATOMIC_RELAXED);
}

struct store_pipe *store_pipe_start(const char *conninfo)
{
	static const struct bgconn_config cfg = {
		{ "store pipe", false, BACKOFF_MIN_US, BACKOFF_MAX_US, NULL }, "pipe",
	};
	struct store_pipe *p = xcalloc(1, sizeof(*p));

	p->queue_tail = &p->queue;
	p->retry_tail = &p->retry;
	p->answered_tail = &p->answered;
	pthread_mutex_init(&p->mu, NULL);
	bgconn_start(conninfo, &cfg, &pipe_ops, p, &p->conn);
	return p;
}

void store_pipe_stop(struct store_pipe *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_mutex_unlock(&p->mu);
	bgconn_stop(p->conn);	/* turns until nothing is queued or in flight */
	bgconn_free(p->conn);
	pthread_mutex_destroy(&p->mu);
	free(p->slots);
	free(p);
}
