/*
 * store.h - the database as the rest of the server sees it: results, the
 * pool's life, dedicated connections (opaque), figures.
 *
 * Every SQL statement of trainplane lives in store/, and so does libpq:
 * what runs statements (store_pg.h) is for store/ alone. The modules of
 * store/ (store_job.h, store_node.h, store_sched.h, ...) offer typed calls
 * over them; this header includes no libpq type, so that nothing above
 * store/ can hold a PGresult or send SQL.
 *
 * Pooled connections that broke (server restart, network), or whose server
 * turned read-only (a failover), are reset the next time they are taken;
 * read-only statements are retried once on a fresh connection, writes are
 * reported as STORE_UNAVAILABLE because whether they committed is unknown
 * (a write the server refused as read-only is known not to have run, and
 * is retried once). See store_pg.h.
 */
#ifndef TP_STORE_H
#define TP_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"

enum store_rc {
	STORE_OK = 0,
	STORE_NOT_FOUND,	/* no such row */
	STORE_CONFLICT,		/* unique violation: the row already exists */
	STORE_STALE,		/* optimistic concurrency: version mismatch */
	STORE_UNAVAILABLE,	/* the database cannot be reached right now */
	STORE_ERROR,		/* anything else: a bug or a broken database */
	STORE_RETRY,		/* a serialization failure or deadlock (40001, 40P01): the
				 * transaction was rolled back and may run again */
};

const char *store_rc_name(enum store_rc rc);

/*
 * Conflicts. A statement outside a transaction that meets a serialization
 * failure or a deadlock (40001, 40P01) runs again, up to STORE_RETRIES
 * times; in a transaction it answers STORE_RETRY, and the transaction's
 * owner runs the whole transaction again:
 *
 *	for (int attempt = 0;; attempt++) {
 *		rc = one_try(...);
 *		if (!store_retry(rc, attempt, "node_sync"))
 *			break;
 *	}
 *
 * store_retry() says whether to: rc is STORE_RETRY and attempts are left
 * (it then waits a little, longer each time, with jitter). Every conflict
 * counts in trainplane_db_conflicts_total; the log says so at most once a
 * minute, in one line, and at WARN when the retries run out.
 */
#define STORE_RETRIES 5
bool store_retry(enum store_rc rc, int attempt, const char *what);

struct store;
struct store_conn;

/*
 * Connects (retrying for up to wait_seconds while the database is not up
 * yet), applies the migrations, and returns a pool of pool_size
 * connections opened on demand. conninfo is a URL or key=value string and
 * may list several hosts (store_pg_connect()). On failure writes err and
 * returns -1.
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

/*
 * A connection of its own, outside the pool, for one owner (the scheduler
 * leader; the background connections of store/bgconn.h), named
 * "trainplane-server/<component>" in pg_stat_activity. It opens only on a
 * server that takes writes, and is never reset behind the owner's back:
 * once lost, or once its server turns read-only, every statement fails
 * with STORE_UNAVAILABLE and the owner closes it and opens another. NULL
 * with err on failure.
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

/*
 * The statement deadline (server key db_statement_timeout): a
 * statement on a pooled connection, or a batch of the pipe, with no
 * answer this long after it was sent is cancelled, its connection closed,
 * and it fails with STORE_UNAVAILABLE (never sent again: it would wait as
 * long). It bounds what PostgreSQL's statement_timeout does not: a commit
 * waiting for a synchronous standby that is gone. 0: no deadline. The
 * dedicated connections (store_conn_open: the scheduler's) have none.
 * Any thread.
 */
#define STORE_STATEMENT_DEADLINE_DEFAULT_US (10 * 1000000LL)
void store_set_statement_deadline(int64_t usec);
int64_t store_statement_deadline(void);

/* SELECT 1 on a pooled connection: STORE_OK when the database answers. */
enum store_rc store_ping(struct store *st);

/* Counters for /metrics and tests. */
struct store_stats {
	int pool_size, in_use;
	unsigned long reconnects, errors;
	unsigned long waits;	/* pool acquires that found every connection busy */
	uint64_t wait_us;	/* the time they waited */
};
void store_stats(struct store *st, struct store_stats *out);

#endif
