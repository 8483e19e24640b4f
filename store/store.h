/*
 * store.h - the PostgreSQL connection pool and the statement runner.
 *
 * Every SQL statement of trainplane lives in store/. Statements are
 * parameterised and prepared once per connection on first use. A pooled
 * connection that broke (server restart, network), or whose server turned
 * read-only (a failover: see store_pg_read_only()), is reset the next time
 * it is taken; read-only statements are retried once on a fresh
 * connection, writes are reported as STORE_UNAVAILABLE because whether
 * they committed is unknown (a write the server refused as read-only is
 * known not to have run, and is retried once).
 */
#ifndef TP_STORE_H
#define TP_STORE_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "common.h"

enum store_rc {
	STORE_OK = 0,
	STORE_NOT_FOUND,	/* no such row */
	STORE_CONFLICT,		/* unique violation: the row already exists */
	STORE_STALE,		/* optimistic concurrency: version mismatch */
	STORE_UNAVAILABLE,	/* the database cannot be reached right now */
	STORE_ERROR,		/* anything else: a bug or a broken database */
};

const char *store_rc_name(enum store_rc rc);

/* A statement known to the runner; see store_exec(). */
struct store_stmt {
	/* unique, < STORE_MAX_STMTS: bit in the prepared mask. Taken: 0 store.c,
	 * 1-4 and 59-63 store_job, 5-6 store_iam, 10-18 and 28-29 store_node, 30-42
	 * store_sched, 50-51 store_log, 57 store_metrics. Two statements with one id
	 * abort the server at first use. */
	unsigned id;
	const char *name;
	const char *sql;
	bool readonly;		/* safe to retry after a lost connection */
};
#define STORE_MAX_STMTS 64
/* Checks that no other statement has stmt's id (aborts if one has). */
void store_stmt_claim(const struct store_stmt *stmt);

struct store;
struct store_conn;

/*
 * Connects (retrying for up to wait_seconds while the database is not up
 * yet), applies the migrations, and returns a pool of pool_size
 * connections opened on demand. On failure writes err and returns -1.
 */
int store_open(const char *conninfo, int pool_size, int wait_seconds, struct store **out,
	       char *err, size_t errlen) MUST_CHECK;
void store_close(struct store *st);	/* NULL is a no-op */

/*
 * The key of page tokens (server/paging.h), read at store_open(): the same
 * in every server of the database (schema/012). Secret: never log or show it.
 */
#define STORE_PAGE_TOKEN_KEY_BYTES 32
const unsigned char *store_page_token_key(const struct store *st);

/* Takes a connection, waiting while all are busy. Never NULL. */
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
 * A connection of its own, outside the pool, for one owner (the scheduler
 * leader, the background connections of store/bgconn.h), named `component` in
 * pg_stat_activity (see store_pg_connect()). It is never reset behind the
 * owner's back: once lost, or once its server turns read-only, every
 * statement fails with STORE_UNAVAILABLE and the owner closes it and opens
 * another. NULL with err on failure.
 */
struct store_conn *store_conn_open(const char *conninfo, const char *component, char *err,
				   size_t errlen);
void store_conn_close(struct store_conn *c);	/* NULL is a no-op */
/* Lost, or on a server that no longer takes writes: close it. */
bool store_conn_lost(struct store_conn *c);
/*
 * For a connection that waits between statements: reads what the server
 * sent while it was idle (call when its socket is readable: usually the
 * server closing it). STORE_UNAVAILABLE once it is lost (store_conn_lost()).
 */
enum store_rc store_conn_consume(struct store_conn *c);
/* The libpq connection, for LISTEN/NOTIFY polling. Borrowed. */
PGconn *store_conn_pg(struct store_conn *c);

/*
 * Runs a registered statement on a pooled connection and returns the first
 * column of its first row (newly allocated; caller frees): STORE_NOT_FOUND
 * when it returned no row.
 */
enum store_rc store_query_value(struct store *st, const struct store_stmt *stmt, int nparams,
				const char *const *params, char **value) MUST_CHECK;

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
 * report both settings as they change, before answering the next command;
 * an idle session learns of it only then. Older servers report neither:
 * their writes fail with SQLSTATE 25006, which the runner treats alike.
 * Whatever finds its session read-only drops the connection, and the
 * reconnect goes to the host that takes writes (or fails: 503).
 */
bool store_pg_read_only(const PGconn *pg);

/* SELECT 1 on a pooled connection: STORE_OK when the database answers. */
enum store_rc store_ping(struct store *st);

/* Counters for /metrics and tests. */
struct store_stats {
	int pool_size, in_use;
	unsigned long reconnects, errors;
	unsigned long waits;	/* store_acquire() calls that found every connection busy */
	uint64_t wait_us;	/* the time they waited */
};
void store_stats(struct store *st, struct store_stats *out);

#endif
