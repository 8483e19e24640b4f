#include "store_pg.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "migrate.h"

struct store_conn {
	struct store *owner;
	PGconn *pg;		/* NULL until first use */
	struct store_prepared prepared;	/* the statements prepared on pg */
	bool broken;		/* reset before the next use */
	bool in_tx;		/* between store_begin() and commit/rollback */
	bool standalone;	/* outside the pool: never reset, see store_conn_open() */
};

struct store {
	char *conninfo;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct store_conn *conns;
	struct store_conn **free;	/* stack of idle connections */
	int size, nfree;
	unsigned long reconnects, errors;
	unsigned long waits;	/* acquires that found every connection busy */
	uint64_t wait_us;	/* and how long they waited */
	unsigned char page_token_key[STORE_PAGE_TOKEN_KEY_BYTES];	/* never logged */
};

static const char *const rc_names[] = {
	"ok", "not found", "conflict", "stale", "unavailable", "error", "retry",
};

METRIC_COUNTER(db_conflicts, "trainplane_db_conflicts_total",
	       "Transactions the database rolled back for a serialization failure or a deadlock "
	       "(SQLSTATE 40001, 40P01); each ran again, up to 5 times.")

METRIC_COUNTER(db_deadlines, "trainplane_db_statement_deadlines_total",
	       "Statements that had no answer within db_statement_timeout: each was "
	       "cancelled, its connection closed, and its request answered 503 UNAVAILABLE.")

/* The deadline of a pooled statement (and the pipe's, store_pipe.c); 0: none. */
static _Atomic int64_t statement_deadline_us = STORE_STATEMENT_DEADLINE_DEFAULT_US;

void store_set_statement_deadline(int64_t usec)
{
	atomic_store(&statement_deadline_us, usec > 0 ? usec : 0);
}

int64_t store_statement_deadline(void)
{
	return atomic_load(&statement_deadline_us);
}

static void *cancel_thread(void *arg)
{
	char err[256];
	if (!PQcancel(arg, err, sizeof(err)))
		log_debug("database: cancelling a statement past its deadline: %s", err);
	PQfreeCancel(arg);
	return NULL;
}

void store_pg_cancel_late(PGconn *pg, const char *what)
{
	static _Atomic int64_t last_us;
	int64_t now = mono_usec(), prev = atomic_load(&last_us);
	int64_t limit = store_statement_deadline();

	metric_add(&db_deadlines, 1);
	if ((!prev || now - prev >= 10 * 1000000LL) &&
	    atomic_compare_exchange_strong(&last_us, &prev, now))
		log_warn("database: %s had no answer within %.3g s (db_statement_timeout): "
			 "cancelled, its connection closed, the request answered 503 UNAVAILABLE; "
			 "a commit waiting for a synchronous standby that is gone waits like this "
			 "(trainplane_db_statement_deadlines_total counts them)", what,
			 (double)limit / 1e6);
	/* The cancel connects to the server: on a thread of its own, so that
	 * an unreachable one does not hold the request up past its deadline. */
	PGcancel *cancel = PQgetCancel(pg);
	pthread_t t;
	pthread_attr_t attr;
	if (!cancel)
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, cancel_thread, cancel))
		PQfreeCancel(cancel);
	pthread_attr_destroy(&attr);
}

/* One line at most a minute, whatever the rate of conflicts. */
static void conflict_note(const char *what, bool gave_up)
{
	static _Atomic int64_t last_us;
	static _Atomic uint64_t since;
	int64_t now = mono_usec(), prev = atomic_load(&last_us);
	uint64_t n = atomic_fetch_add(&since, 1) + 1;

	if (gave_up) {
		log_warn("database: %s met a conflict (serialization failure or deadlock) "
			 "%d times in a row: given up", what, STORE_RETRIES + 1);
		return;
	}
	if ((prev && now - prev < 60 * 1000000LL) ||
	    !atomic_compare_exchange_strong(&last_us, &prev, now))
		return;
	atomic_store(&since, 0);
	log_info("database: %s met a conflict (serialization failure or deadlock) and ran again "
		 "(%llu such in the last minute; trainplane_db_conflicts_total counts them)", what,
		 (unsigned long long)n);
}

/* 1-2 ms, then 2-4, 4-8, ...: the other transaction usually commits within a few. */
static void conflict_backoff(int attempt)
{
	unsigned r = (unsigned)mono_usec() * 2654435761u;
	long base = 1000L << (attempt < 6 ? attempt : 6);
	struct timespec ts = { 0, (base + (long)(r % (unsigned long)base)) * 1000L };
	nanosleep(&ts, NULL);
}

bool store_retry(enum store_rc rc, int attempt, const char *what)
{
	if (rc != STORE_RETRY)
		return false;
	if (attempt >= STORE_RETRIES) {
		conflict_note(what, true);
		return false;
	}
	conflict_note(what, false);
	conflict_backoff(attempt);
	return true;
}

const char *store_rc_name(enum store_rc rc)
{
	return rc < ARRAY_SIZE(rc_names) ? rc_names[rc] : "?";
}

/* PostgreSQL's notices ("relation ... already exists, skipping") go to our log. */
static void on_notice(void *arg, const char *message)
{
	(void)arg;
	log_debug("database: %.*s", (int)strcspn(message, "\n"), message);
}

PGconn *store_pg_connect(const char *conninfo, const char *component)
{
	/* conninfo may be a URI or key=value, expanded in place of dbname:
	 * keywords before it are defaults it may override, those after it win. */
	static const char *const keys[] = { "connect_timeout", "dbname", "application_name", NULL };
	char name[64];
	snprintf(name, sizeof(name), "trainplane-server%s%s", component ? "/" : "",
		 component ? component : "");
	const char *vals[] = { "5", conninfo, name, NULL };
	PGconn *pg = PQconnectdbParams(keys, vals, 1);
	PQsetNoticeProcessor(pg, on_notice, NULL);
	return pg;
}

static PGconn *connect_db(const char *conninfo)
{
	return store_pg_connect(conninfo, NULL);
}

bool store_pg_read_only(const PGconn *pg)
{
	const char *standby = PQparameterStatus(pg, "in_hot_standby");
	const char *ro = PQparameterStatus(pg, "default_transaction_read_only");

	return (standby && !strcmp(standby, "on")) || (ro && !strcmp(ro, "on"));
}

bool store_pg_refused_read_only(const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	return state && !strcmp(state, "25006");
}

static const char read_only_warning[] =
	"database: the server no longer takes writes (a standby now, or "
	"default_transaction_read_only): reconnecting";

/* Several hosts without target_session_attrs: a reconnect may land on a standby. */
static void warn_without_session_attrs(const char *conninfo)
{
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
	const char *hosts = NULL, *attrs = NULL;

	for (PQconninfoOption *o = opts; o && o->keyword; o++) {
		if (!o->val)
			continue;
		if (!strcmp(o->keyword, "host") || (!hosts && !strcmp(o->keyword, "hostaddr")))
			hosts = o->val;
		else if (!strcmp(o->keyword, "target_session_attrs"))
			attrs = o->val;
	}
	if (hosts && strchr(hosts, ',') &&
	    (!attrs || (strcmp(attrs, "read-write") && strcmp(attrs, "primary"))))
		log_warn("database_url lists several hosts without target_session_attrs=read-write: "
			 "after a failover, connections may land on a read-only standby");
	PQconninfoFree(opts);
}

static void chomp_copy(char *dst, size_t len, const char *msg)
{
	snprintf(dst, len, "%s", msg);
	size_t n = strlen(dst);
	while (n && (dst[n - 1] == '\n' || dst[n - 1] == ' '))
		dst[--n] = '\0';
}

/*
 * The page token key of this database (schema/012's server_keys), made
 * anew if an operator deleted it. Two servers making it at once: the one
 * that waited on the other's insert reads it on its second try.
 */
static int load_page_token_key(PGconn *pg, unsigned char *key, char *err, size_t errlen)
{
	static const char *const sql =
		"WITH made AS (INSERT INTO server_keys (name, key) "
		"  SELECT 'page_token', tp_server_key_new() ON CONFLICT (name) DO NOTHING "
		"  RETURNING key) "
		"SELECT key FROM made UNION ALL "
		"SELECT key FROM server_keys WHERE name = 'page_token'";

	for (int attempt = 0; attempt < 2; attempt++) {
		/* Binary results: the bytea's bytes as they are. */
		PGresult *res = PQexecParams(pg, sql, 0, NULL, NULL, NULL, NULL, 1);
		if (PQresultStatus(res) != PGRES_TUPLES_OK) {
			snprintf(err, errlen, "reading the page token key: ");
			size_t n = strlen(err);
			chomp_copy(err + n, errlen - n, PQresultErrorMessage(res));
			PQclear(res);
			return -1;
		}
		if (PQntuples(res) == 1 &&
		    PQgetlength(res, 0, 0) == STORE_PAGE_TOKEN_KEY_BYTES) {
			memcpy(key, PQgetvalue(res, 0, 0), STORE_PAGE_TOKEN_KEY_BYTES);
			PQclear(res);
			return 0;
		}
		PQclear(res);
	}
	snprintf(err, errlen, "reading the page token key: server_keys has no usable "
		 "'page_token' row");
	return -1;
}

int store_open(const char *conninfo, int pool_size, int wait_seconds, struct store **out,
	       char *err, size_t errlen)
{
	unsigned char page_token_key[STORE_PAGE_TOKEN_KEY_BYTES];

	PGconn *pg = NULL;
	int64_t deadline = mono_usec() + (int64_t)wait_seconds * 1000000;

	warn_without_session_attrs(conninfo);
	for (;;) {
		pg = connect_db(conninfo);
		/* A standby is not up yet for us: it may be promoted meanwhile. */
		bool read_only = PQstatus(pg) == CONNECTION_OK && store_pg_read_only(pg);
		if (PQstatus(pg) == CONNECTION_OK && !read_only)
			break;
		if (mono_usec() >= deadline) {
			if (read_only) {
				snprintf(err, errlen, "the database does not take writes (a standby, "
					 "or default_transaction_read_only is on); with several "
					 "hosts, add target_session_attrs=read-write to database_url");
			} else {
				snprintf(err, errlen, "cannot connect to the database: ");
				size_t n = strlen(err);
				chomp_copy(err + n, errlen - n, PQerrorMessage(pg));
			}
			PQfinish(pg);
			return -1;
		}
		PQfinish(pg);
		usleep(200 * 1000);
	}
	if (migrate_apply(pg, err, errlen) ||
	    load_page_token_key(pg, page_token_key, err, errlen)) {
		PQfinish(pg);
		return -1;
	}

	struct store *st = xcalloc(1, sizeof(*st));
	st->conninfo = xstrdup(conninfo);
	pthread_mutex_init(&st->mu, NULL);
	pthread_cond_init(&st->cv, NULL);
	st->size = pool_size;
	st->conns = xcalloc((size_t)pool_size, sizeof(*st->conns));
	st->free = xcalloc((size_t)pool_size, sizeof(*st->free));
	st->conns[0].pg = pg;	/* the migration connection joins the pool */
	memcpy(st->page_token_key, page_token_key, sizeof(page_token_key));
	OPENSSL_cleanse(page_token_key, sizeof(page_token_key));
	for (int i = pool_size - 1; i >= 0; i--)
		st->free[st->nfree++] = &st->conns[i];
	*out = st;
	return 0;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	for (int i = 0; i < st->size; i++)
		if (st->conns[i].pg)
			PQfinish(st->conns[i].pg);
	pthread_mutex_destroy(&st->mu);
	pthread_cond_destroy(&st->cv);
	free(st->conns);
	free(st->free);
	free(st->conninfo);
	OPENSSL_cleanse(st->page_token_key, sizeof(st->page_token_key));
	free(st);
}

const unsigned char *store_page_token_key(const struct store *st)
{
	return st->page_token_key;
}

/*
 * Makes c usable: connects, or resets a connection that broke. An idle
 * connection whose socket is readable has been told something by the
 * server, usually a FATAL before a restart; consuming it here lets us
 * reset before sending a write whose fate we could not know afterwards.
 * Called without the pool lock.
 */
static void conn_ready(struct store *st, struct store_conn *c)
{
	if (c->standalone || c->in_tx) {
		/* Never reconnect inside a transaction: it would silently go on
		 * outside it. The caller sees the failure and rolls back. */
		if (PQstatus(c->pg) != CONNECTION_OK)
			c->broken = true;
		return;
	}
	(void)st;
	if (c->pg && !c->broken && PQstatus(c->pg) == CONNECTION_OK) {
		struct pollfd p = { .fd = PQsocket(c->pg), .events = POLLIN };
		if (poll(&p, 1, 0) <= 0 && !store_pg_read_only(c->pg))
			return;
		if (PQconsumeInput(c->pg) && PQstatus(c->pg) == CONNECTION_OK &&
		    !store_pg_read_only(c->pg))
			return;
		c->broken = true;
	}
	if (c->pg) {
		PQreset(c->pg);
		__atomic_add_fetch(&c->owner->reconnects, 1, __ATOMIC_RELAXED);
	} else {
		c->pg = connect_db(st->conninfo);
	}
	memset(&c->prepared, 0, sizeof(c->prepared));
	c->broken = PQstatus(c->pg) != CONNECTION_OK;
	if (c->broken)
		log_warn("database connection failed: %s", PQerrorMessage(c->pg));
	else if ((c->broken = store_pg_read_only(c->pg)))
		log_warn("%s", read_only_warning);
}

struct store_conn *store_acquire(struct store *st)
{
	struct store_conn *c;

	pthread_mutex_lock(&st->mu);
	if (!st->nfree) {
		int64_t t0 = mono_usec();
		while (!st->nfree)
			pthread_cond_wait(&st->cv, &st->mu);
		st->waits++;
		st->wait_us += (uint64_t)(mono_usec() - t0);
	}
	c = st->free[--st->nfree];
	pthread_mutex_unlock(&st->mu);
	c->owner = st;
	return c;
}

void store_release(struct store *st, struct store_conn *c)
{
	if (!c)
		return;
	if (c->in_tx) {
		log_error("database connection released inside a transaction: rolled back");
		store_rollback(c);
	}
	pthread_mutex_lock(&st->mu);
	st->free[st->nfree++] = c;
	pthread_cond_signal(&st->cv);
	pthread_mutex_unlock(&st->mu);
}

static bool lost_connection(PGconn *pg, const PGresult *res)
{
	const char *state;

	if (PQstatus(pg) != CONNECTION_OK)
		return true;
	state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	if (!state)
		return !res;
	/* 08: connection exception; 57P01-03: admin shutdown, crash, starting
	 * up; 25006: a write refused by a server that turned read-only (a
	 * failover): the session is no use to us any more. */
	return !strncmp(state, "08", 2) || !strcmp(state, "57P01") ||
	       !strcmp(state, "57P02") || !strcmp(state, "57P03") || !strcmp(state, "25006");
}

static enum store_rc classify(struct store_conn *c, const PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (lost_connection(c->pg, res)) {
		if (store_pg_refused_read_only(res) && !c->broken)
			log_warn("%s", read_only_warning);
		c->broken = true;
		return STORE_UNAVAILABLE;
	}
	if (state && !strcmp(state, "23505"))
		return STORE_CONFLICT;
	if (state && (!strcmp(state, "40001") || !strcmp(state, "40P01"))) {
		metric_add(&db_conflicts, 1);
		return STORE_RETRY;
	}
	if (c->owner)
		__atomic_add_fetch(&c->owner->errors, 1, __ATOMIC_RELAXED);
	log_error("database error in %s: %s%s", what, state ? state : "",
		  res ? PQresultErrorMessage(res) : PQerrorMessage(c->pg));
	return STORE_ERROR;
}

/* Ids are assigned by hand across files: a clash is a bug, caught here. */
void store_stmt_claim(const struct store_stmt *stmt)
{
	static _Atomic(const struct store_stmt *) owner[STORE_MAX_STMTS];
	const struct store_stmt *expect = NULL;

	if (stmt->id >= STORE_MAX_STMTS ||
	    (!atomic_compare_exchange_strong(&owner[stmt->id], &expect, stmt) && expect != stmt &&
	     strcmp(expect->name, stmt->name))) {
		log_error("statement id %u of %s is out of range or taken by %s", stmt->id,
			  stmt->name, stmt->id < STORE_MAX_STMTS && expect ? expect->name : "-");
		abort();
	}
}

/*
 * The result of what was just sent on c, as PQexec() would return it, or
 * NULL with *late set when none came within the statement deadline: the
 * statement is then cancelled and the connection given up (a pooled one
 * closed now, reopened at its next use), since whether it ran, and what
 * the connection owes, is unknown. PostgreSQL's own statement_timeout is
 * not enough: it ends before the commit, so a COMMIT waiting for a
 * synchronous standby that is gone waits for ever.
 */
static PGresult *await_result(struct store_conn *c, const char *what, bool *late)
{
	/* The dedicated connections (the scheduler's, bgconn.h) are not a
	 * request's: their owners drop them when lost, and the scheduler's
	 * log expiry may rightly take long. */
	int64_t limit = c->standalone ? 0 : store_statement_deadline();
	int64_t deadline = limit ? mono_usec() + limit : INT64_MAX;
	PGresult *last = NULL;

	*late = false;
	for (;;) {
		while (!PQisBusy(c->pg)) {
			PGresult *r = PQgetResult(c->pg);
			if (!r)
				return last;
			PQclear(last);
			last = r;
		}
		int64_t left = deadline - mono_usec();
		if (left <= 0)
			break;
		struct pollfd p = { .fd = PQsocket(c->pg), .events = POLLIN };
		int n = poll(&p, 1, left > 3600 * 1000000LL ? 3600 * 1000 : (int)((left + 999) / 1000));
		if (n < 0 && errno != EINTR)
			return last;
		if (n > 0 && !PQconsumeInput(c->pg))
			return last;	/* lost: PQstatus() says so */
	}
	PQclear(last);
	*late = true;
	store_pg_cancel_late(c->pg, what);
	c->broken = true;
	memset(&c->prepared, 0, sizeof(c->prepared));
	PQfinish(c->pg);
	c->pg = NULL;
	__atomic_add_fetch(&c->owner->reconnects, 1, __ATOMIC_RELAXED);
	return NULL;
}

static PGresult *run(struct store_conn *c, const struct store_stmt *stmt, const char *sql,
		     bool readonly, int nparams, const char *const *params, enum store_rc *rc)
{
	for (int attempt = 0;; attempt++) {
		PGresult *res;
		bool sent = false;

		conn_ready(c->owner, c);
		if (c->broken) {
			*rc = STORE_UNAVAILABLE;
			return NULL;
		}
		if (stmt && !store_prepared_has(&c->prepared, stmt->id)) {
			store_stmt_claim(stmt);
			bool late = false;
			res = PQsendPrepare(c->pg, stmt->name, stmt->sql, nparams, NULL) ?
			      await_result(c, stmt->name, &late) : NULL;
			if (late) {
				*rc = STORE_UNAVAILABLE;
				return NULL;
			}
			if (PQresultStatus(res) != PGRES_COMMAND_OK) {
				*rc = classify(c, res, stmt->name);
				PQclear(res);
				/* Nothing ran: safe to retry even a write (not in a transaction). */
				if (*rc == STORE_UNAVAILABLE && attempt == 0 && !c->in_tx)
					continue;
				return NULL;
			}
			PQclear(res);
			store_prepared_set(&c->prepared, stmt->id, true);
		}
		bool late = false, ok;
		if (stmt)
			ok = PQsendQueryPrepared(c->pg, stmt->name, nparams, params, NULL, NULL, 0);
		else
			ok = PQsendQueryParams(c->pg, sql, nparams, NULL, params, NULL, NULL, 0);
		res = ok ? await_result(c, stmt ? stmt->name : sql, &late) : NULL;
		if (late) {
			*rc = STORE_UNAVAILABLE;	/* never again: it would wait as long */
			return NULL;
		}
		sent = true;
		ExecStatusType status = PQresultStatus(res);
		if ((status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) &&
		    (c->in_tx || !store_pg_read_only(c->pg))) {
			*rc = STORE_OK;
			return res;
		}
		if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) {
			/* It ran, and the server said with its answer that it no
			 * longer takes writes (a failover may have left it behind):
			 * a read may be stale, and is asked elsewhere; a pooled
			 * write that ran has committed, and says so. */
			log_warn("%s", read_only_warning);
			c->broken = true;
			if (!readonly && !c->standalone) {
				*rc = STORE_OK;
				return res;
			}
			PQclear(res);
			*rc = STORE_UNAVAILABLE;
			if (readonly && attempt == 0 && !c->standalone)
				continue;
			return NULL;
		}
		/* Refused as read-only: it did not run, even a write may go again. */
		bool refused = store_pg_refused_read_only(res);
		*rc = classify(c, res, stmt ? stmt->name : "query");
		PQclear(res);
		/* A conflict rolled the statement back: outside a transaction, it
		 * runs again (the transaction's owner does that otherwise). */
		if (*rc == STORE_RETRY && !c->in_tx &&
		    store_retry(*rc, attempt, stmt ? stmt->name : "a statement"))
			continue;
		if (*rc == STORE_UNAVAILABLE && sent && (readonly || refused) && attempt == 0 &&
		    !c->in_tx && !c->standalone)
			continue;
		return NULL;
	}
}

enum store_rc store_begin(struct store_conn *c)
{
	enum store_rc rc;
	PQclear(run(c, NULL, "BEGIN", false, 0, NULL, &rc));
	c->in_tx = rc == STORE_OK;
	return rc;
}

enum store_rc store_commit(struct store_conn *c)
{
	enum store_rc rc;
	PGresult *res = run(c, NULL, "COMMIT", false, 0, NULL, &rc);

	/* COMMIT of a transaction that failed earlier answers ROLLBACK. */
	if (rc == STORE_OK && strcmp(PQcmdStatus(res), "COMMIT"))
		rc = STORE_ERROR;
	PQclear(res);
	c->in_tx = false;
	return rc;
}

void store_rollback(struct store_conn *c)
{
	enum store_rc rc;
	if (c->in_tx && !c->broken)
		PQclear(run(c, NULL, "ROLLBACK", false, 0, NULL, &rc));
	c->in_tx = false;
}

PGresult *store_exec(struct store_conn *c, const struct store_stmt *stmt, int nparams,
		     const char *const *params, enum store_rc *rc)
{
	return run(c, stmt, stmt->sql, stmt->readonly, nparams, params, rc);
}

PGresult *store_exec_sql(struct store_conn *c, const char *sql, bool readonly, int nparams,
			 const char *const *params, enum store_rc *rc)
{
	return run(c, NULL, sql, readonly, nparams, params, rc);
}

struct store_conn *store_conn_open(const char *conninfo, const char *component, char *err,
				   size_t errlen)
{
	PGconn *pg = store_pg_connect(conninfo, component);

	if (PQstatus(pg) != CONNECTION_OK || store_pg_read_only(pg)) {
		chomp_copy(err, errlen, PQstatus(pg) != CONNECTION_OK ? PQerrorMessage(pg) :
			   "the database does not take writes (a standby, or "
			   "default_transaction_read_only)");
		PQfinish(pg);
		return NULL;
	}
	struct store_conn *c = xcalloc(1, sizeof(*c));
	c->pg = pg;
	c->standalone = true;
	return c;
}

void store_conn_close(struct store_conn *c)
{
	if (!c)
		return;
	PQfinish(c->pg);
	free(c);
}

bool store_conn_lost(struct store_conn *c)
{
	return c->broken || PQstatus(c->pg) != CONNECTION_OK || store_pg_read_only(c->pg);
}

enum store_rc store_conn_consume(struct store_conn *c)
{
	if (!PQconsumeInput(c->pg) || store_conn_lost(c)) {
		c->broken = true;
		return STORE_UNAVAILABLE;
	}
	return STORE_OK;
}

PGconn *store_conn_pg(struct store_conn *c)
{
	return c->pg;
}

enum store_rc store_query_value(struct store *st, const struct store_stmt *stmt, int nparams,
				const char *const *params, char **value)
{
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;
	PGresult *res = store_exec(c, stmt, nparams, params, &rc);

	store_release(st, c);
	*value = NULL;
	if (rc == STORE_OK && PQntuples(res) == 0)
		rc = STORE_NOT_FOUND;
	if (rc == STORE_OK)
		*value = xstrdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return rc;
}

enum store_rc store_ping(struct store *st)
{
	static const struct store_stmt ping = { 0, "ping", "SELECT 1", true };
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;
	PGresult *res = store_exec(c, &ping, 0, NULL, &rc);

	PQclear(res);
	store_release(st, c);
	return rc;
}

void store_stats(struct store *st, struct store_stats *out)
{
	pthread_mutex_lock(&st->mu);
	out->pool_size = st->size;
	out->in_use = st->size - st->nfree;
	out->waits = st->waits;
	out->wait_us = st->wait_us;
	pthread_mutex_unlock(&st->mu);
	out->reconnects = __atomic_load_n(&st->reconnects, __ATOMIC_RELAXED);
	out->errors = __atomic_load_n(&st->errors, __ATOMIC_RELAXED);
}
