#include "store_pipe.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common.h"
#include "log.h"

#define MAX_PARAMS 8
#define RECONNECT_GAP_US 100000	/* after a failed connect, fail fast this long */

struct item {
	struct item *next;
	const struct store_stmt *stmt;
	int nparams;
	char *params[MAX_PARAMS];
	store_pipe_done done;
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
	char *conninfo;
	pthread_t thread;
	int efd;		/* wakes the thread while it is idle */

	pthread_mutex_t mu;	/* guards the queue and the flags */
	struct item *queue, **queue_tail;
	bool idle;		/* blocked with nothing in flight: a submit must wake it */
	bool stopping;
	struct store_pipe_stats stats;	/* written by the thread, read by scrapes (atomics) */

	/* the thread's own */
	PGconn *pg;
	uint64_t prepared;	/* bit per store_stmt.id prepared on pg */
	struct slot *slots;	/* ring buffer */
	size_t slot_head, slot_len, slot_cap;
	struct item *retry, **retry_tail;	/* to send again after a reconnect */
	int64_t next_connect_us;
	bool want_write;	/* PQflush() has more to send */
	/* The answered commands of the batch being read; the batch is one
	 * implicit transaction that commits at its sync, or not at all. */
	struct item *answered, **answered_tail;
	bool batch_failed;
	bool read_only;		/* a command was refused as read-only: drop pg after the sync */
};

static void item_free(struct item *it)
{
	for (int i = 0; i < it->nparams; i++)
		free(it->params[i]);
	free(it);
}

static void complete(struct item *it, PGresult *res, enum store_rc rc)
{
	it->done(it->arg, res, rc);
	item_free(it);
}

void store_pipe_submit(struct store_pipe *p, const struct store_stmt *stmt, int nparams,
		       const char *const *params, store_pipe_done done, void *arg)
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
	if (wake) {
		uint64_t one = 1;
		if (write(p->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_error("store pipe: cannot wake its thread: %s", strerror(errno));
	}
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
	if (it->stmt->readonly) {
		retry_or_fail(p, it);
	} else {
		PQclear(it->res);
		complete(it, NULL, STORE_UNAVAILABLE);
	}
}

/* The connection is gone: what it owed is sent again once, elsewhere. */
static void connection_lost(struct store_pipe *p, const char *why)
{
	log_warn("store pipe: connection lost (%s); reconnecting", why);
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
	PQfinish(p->pg);
	p->pg = NULL;
	p->prepared = 0;
	p->want_write = false;
	p->read_only = false;
}

static bool connect_pipe(struct store_pipe *p)
{
	if (p->pg)
		return true;
	if (mono_usec() < p->next_connect_us)
		return false;
	p->pg = store_pg_connect(p->conninfo, "pipe");
	bool read_only = PQstatus(p->pg) == CONNECTION_OK && store_pg_read_only(p->pg);
	if (PQstatus(p->pg) != CONNECTION_OK || read_only || !PQenterPipelineMode(p->pg) ||
	    PQsetnonblocking(p->pg, 1)) {
		log_warn("store pipe: cannot connect: %s", read_only ?
			 "the database does not take writes" : PQerrorMessage(p->pg));
		PQfinish(p->pg);
		p->pg = NULL;
		p->next_connect_us = mono_usec() + RECONNECT_GAP_US;
		return false;
	}
	return true;
}

static bool send_item(struct store_pipe *p, struct item *it)
{
	const struct store_stmt *st = it->stmt;

	if (!(p->prepared & (UINT64_C(1) << st->id))) {
		store_stmt_claim(st);
		if (!PQsendPrepare(p->pg, st->name, st->sql, it->nparams, NULL))
			return false;
		slot_push(p, SLOT_PREPARE)->stmt_id = st->id;
		p->prepared |= UINT64_C(1) << st->id;
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
	if (!connect_pipe(p)) {
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
				p->prepared &= ~(UINT64_C(1) << done.stmt_id);
				p->batch_failed = true;	/* what follows is aborted */
			}
			PQclear(done.res);
		}
	}
	if (PQstatus(p->pg) != CONNECTION_OK)
		return PQerrorMessage(p->pg);
	return NULL;
}

static void *pipe_thread(void *arg)
{
	struct store_pipe *p = arg;

	for (;;) {
		pthread_mutex_lock(&p->mu);
		struct item *batch = p->queue;
		p->queue = NULL;
		p->queue_tail = &p->queue;
		bool busy = batch || p->slot_len || p->retry;
		if (!busy && p->stopping) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		p->idle = !busy;
		pthread_mutex_unlock(&p->mu);

		/* A batch goes out only when the previous one has been answered. */
		if (!p->slot_len)
			send_batch(p, batch);
		else if (batch) {
			pthread_mutex_lock(&p->mu);	/* put it back, in front */
			struct item **tail = &batch;
			while (*tail)
				tail = &(*tail)->next;
			*tail = p->queue;
			if (!p->queue)
				p->queue_tail = tail;
			p->queue = batch;
			pthread_mutex_unlock(&p->mu);
		}

		struct pollfd fds[2] = { { .fd = p->efd, .events = POLLIN } };
		nfds_t n = 1;
		if (p->pg && p->slot_len) {
			fds[1] = (struct pollfd){ .fd = PQsocket(p->pg),
						  .events = POLLIN | (p->want_write ? POLLOUT : 0) };
			n = 2;
		}
		/* with retries waiting for a reconnect, try again soon */
		int timeout = p->retry && !p->slot_len ? RECONNECT_GAP_US / 1000 : -1;
		if (!p->idle && n == 1 && timeout < 0)
			timeout = 0;	/* queued work arrived meanwhile */
		if (poll(fds, n, timeout) < 0 && errno != EINTR)
			log_error("store pipe: poll: %s", strerror(errno));
		if (fds[0].revents & POLLIN) {
			uint64_t v;
			if (read(p->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				log_error("store pipe: eventfd: %s", strerror(errno));
		}
		pthread_mutex_lock(&p->mu);
		p->idle = false;
		pthread_mutex_unlock(&p->mu);
		if (n == 2 && fds[1].revents) {
			if (fds[1].revents & POLLOUT) {
				int f = PQflush(p->pg);
				p->want_write = f == 1;
				if (f < 0) {
					connection_lost(p, PQerrorMessage(p->pg));
					continue;
				}
			}
			const char *why = NULL;
			if ((fds[1].revents & (POLLIN | POLLERR | POLLHUP)) && (why = read_results(p)))
				connection_lost(p, why);
		}
	}
	PQfinish(p->pg);
	p->pg = NULL;
	return NULL;
}

void store_pipe_stats(struct store_pipe *p, struct store_pipe_stats *out)
{
	out->batches = __atomic_load_n(&p->stats.batches, __ATOMIC_RELAXED);
	out->commands = __atomic_load_n(&p->stats.commands, __ATOMIC_RELAXED);
	out->resent = __atomic_load_n(&p->stats.resent, __ATOMIC_RELAXED);
	out->reconnects = __atomic_load_n(&p->stats.reconnects, __ATOMIC_RELAXED);
}

struct store_pipe *store_pipe_start(const char *conninfo)
{
	struct store_pipe *p = xcalloc(1, sizeof(*p));

	p->conninfo = xstrdup(conninfo);
	p->queue_tail = &p->queue;
	p->retry_tail = &p->retry;
	p->answered_tail = &p->answered;
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->efd < 0)
		abort();
	pthread_mutex_init(&p->mu, NULL);
	if (pthread_create(&p->thread, NULL, pipe_thread, p))
		abort();
	return p;
}

void store_pipe_stop(struct store_pipe *p)
{
	uint64_t one = 1;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_mutex_unlock(&p->mu);
	if (write(p->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_error("store pipe: cannot wake its thread: %s", strerror(errno));
	pthread_join(p->thread, NULL);
	close(p->efd);
	pthread_mutex_destroy(&p->mu);
	free(p->slots);
	free(p->conninfo);
	free(p);
}
