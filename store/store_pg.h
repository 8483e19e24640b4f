/*
 * store_pg.h - the statement runner: libpq inside store/, and only there.
 *
 * The modules of store/ define their statements (struct store_stmt) and
 * run them on pooled connections (store_acquire) or on a dedicated one
 * (store.h's store_conn_open, store/bgconn.h). Statements are parameterised
 * and prepared once per connection on first use. Nothing outside store/
 * (and its tests) includes this header.
 */
#ifndef TP_STORE_PG_H
#define TP_STORE_PG_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "store.h"

/* A statement known to the runner; see store_exec(). */
struct store_stmt {
	/* unique, < STORE_MAX_STMTS: its bit in struct store_prepared. Taken: 0 store.c,
	 * 1-4, 7 and 59-63 store_job, 5-6 store_iam, 10-18, 28-29, 46 and 49 store_node,
	 * 30-42, 47-48 and 52 store_sched, 8-9 and 53-56 store_study, 50-51 store_log, 57 store_metrics, 19-27 and 43-45
	 * store_storage; 64-79 the emulator's clock, 80-95 its reset, 96-111 its rules,
	 * 112-127 its fleet; 128-143 store_sched's sharing (preemption, reasons), 144-159
	 * store_quota; 160-161 store_node's lease renewals; 162 store_node's replica list;
	 * 176-191 store_slurm. Two statements with one id
	 * abort the server at first use. */
	unsigned id;
	const char *name;
	const char *sql;
	bool readonly;		/* safe to retry after a lost connection */
};
#define STORE_MAX_STMTS 256

/*
 * A statement past the deadline (store_statement_deadline()): counts it,
 * logs it (at most every 10 s), and cancels it on a thread of its own.
 * The caller gives the connection up. what names the statement.
 */
void store_pg_cancel_late(PGconn *pg, const char *what);

/* Which statements a connection has prepared: one bit per store_stmt.id. */
struct store_prepared {
	uint64_t bits[STORE_MAX_STMTS / 64];
};

static inline bool store_prepared_has(const struct store_prepared *p, unsigned id)
{
	return p->bits[id / 64] & (UINT64_C(1) << (id % 64));
}

static inline void store_prepared_set(struct store_prepared *p, unsigned id, bool on)
{
	if (on)
		p->bits[id / 64] |= UINT64_C(1) << (id % 64);
	else
		p->bits[id / 64] &= ~(UINT64_C(1) << (id % 64));
}
/*
 * The emulator's clock in a statement (schema/022_clock.sql): emulated now,
 * and a real instant x on the clock. Written out rather than calling
 * tp_now() / tp_at(): a prepared statement plans this once, where a call
 * to a function that reads a table is planned again every time (a plain
 * insert with tp_now() as a default ran at 0.6-0.75 of one with now()).
 */
#define TP_NOW "(SELECT c.base_emu + (now() - c.base_real) * c.speed FROM emulator_clock c)"
#define TP_AT(x) "(SELECT c.base_emu + (" x " - c.base_real) * c.speed FROM emulator_clock c)"
/* A real instant x on the clock where the statement joins emulator_clock ck
 * (once, for a statement that stamps many rows). */
#define TP_ON_CK(x) "(ck.base_emu + (" x " - ck.base_real) * ck.speed)"
/* The same as a one-row relation with a column "now" (FROM TP_NOW_ROW t). */
#define TP_NOW_ROW "(SELECT c.base_emu + (now() - c.base_real) * c.speed AS now FROM emulator_clock c)"

/* Checks that no other statement has stmt's id (aborts if one has). */
void store_stmt_claim(const struct store_stmt *stmt);

/* Takes a pooled connection, waiting while all are busy. Never NULL. */
struct store_conn *store_acquire(struct store *st);
void store_release(struct store *st, struct store_conn *c);

/*
 * Runs a registered statement with text parameters (NULL = SQL NULL).
 * Returns the result (caller PQclear()s) with *rc = STORE_OK, or NULL and
 * *rc set (STORE_CONFLICT, STORE_UNAVAILABLE, STORE_ERROR).
 */
PGresult *store_exec(struct store_conn *c, const struct store_stmt *stmt, int nparams,
		     const char *const *params, enum store_rc *rc) MUST_CHECK;
/* The same for SQL built at run time (never with user text inside it). */
PGresult *store_exec_sql(struct store_conn *c, const char *sql, bool readonly, int nparams,
			 const char *const *params, enum store_rc *rc) MUST_CHECK;

/*
 * Transactions. Inside one, a lost connection is never reset or retried
 * behind the caller's back: every later statement and store_commit() fail
 * with STORE_UNAVAILABLE, so nothing is reported as committed that was not.
 * store_rollback() ends the transaction whatever happened (never fails).
 */
enum store_rc store_begin(struct store_conn *c) MUST_CHECK;
enum store_rc store_commit(struct store_conn *c) MUST_CHECK;
void store_rollback(struct store_conn *c);

/*
 * Runs a registered statement on a pooled connection and returns the first
 * column of its first row (newly allocated; caller frees): STORE_NOT_FOUND
 * when it returned no row.
 */
enum store_rc store_query_value(struct store *st, const struct store_stmt *stmt, int nparams,
				const char *const *params, char **value) MUST_CHECK;

/* A dedicated connection's libpq connection (pipeline mode, notifications). Borrowed. */
PGconn *store_conn_pg(struct store_conn *c);

/*
 * A new libpq connection (check PQstatus(); PQfinish() it either way).
 * conninfo is a URL or key=value string and may list several hosts, which
 * libpq tries in turn; with target_session_attrs=read-write it takes the
 * one that accepts writes, so a reconnect after a failover finds the new
 * primary. The connect timeout is 5 s unless conninfo sets one, and the
 * application_name is "trainplane-server", or "trainplane-server/<component>"
 * for a dedicated connection, so that pg_stat_activity shows whose it is.
 */
PGconn *store_pg_connect(const char *conninfo, const char *component);

/*
 * True when the session no longer takes writes: its server is a hot
 * standby, or default_transaction_read_only is on (a primary fenced for a
 * switchover, a database its operator froze). PostgreSQL 14 and later
 * report both settings as they change, before answering the next command
 * (a bare pipeline sync is enough); an idle session learns of it only
 * then. Older servers report neither: their writes fail with SQLSTATE
 * 25006, which the runner treats alike. Whatever finds its session
 * read-only drops the connection, and the reconnect goes to the host that
 * takes writes (or fails: 503).
 */
bool store_pg_read_only(const PGconn *pg);

/* SQLSTATE 25006: a write refused because the session is read-only. */
bool store_pg_refused_read_only(const PGresult *res);

/*
 * The store pipe's runner (store_pipe.h). done(fn, arg, res, rc) runs on
 * the pipe's thread when the command completes: res (owned by the callee,
 * NULL unless rc is STORE_OK) holds its rows. fn and arg are the
 * submitter's: a module of store/ passes its own caller's typed callback as
 * fn and hands that caller what it made of res (store_job_get_piped()). It
 * must not block.
 */
struct store_pipe;
typedef void (*store_pipe_done)(void (*fn)(void), void *arg, PGresult *res, enum store_rc rc);
/*
 * Queues stmt (one statement, no transaction control) with text parameters
 * (copied). done runs exactly once: later on the pipe's thread, or before
 * this returns with STORE_UNAVAILABLE when the pipe is stopping.
 */
void store_pipe_submit(struct store_pipe *p, const struct store_stmt *stmt, int nparams,
		       const char *const *params, store_pipe_done done, void (*fn)(void),
		       void *arg);

#endif
