/*
 * migrate.h - numbered SQL migrations compiled into the binary.
 *
 * tools/embed_sql.sh turns schema/NNN_name.sql into the migrations[] table.
 * migrate_apply() brings a database up to date: under a session advisory
 * lock (several servers starting together apply each migration exactly
 * once), each missing migration runs in its own transaction together with
 * its row in schema_migrations. Then it checks that the database's job,
 * replica and node state machines are this server's
 * (store_job_state_check(), store_state_edges_check()).
 */
#ifndef TP_MIGRATE_H
#define TP_MIGRATE_H

#include <libpq-fe.h>

#include "common.h"

struct migration {
	unsigned version;
	const char *name;
	const char *sql;
};

extern const struct migration migrations[];
extern const unsigned migrations_count;

/* Returns 0, or -1 with a message in err. */
int migrate_apply(PGconn *conn, char *err, size_t errlen) MUST_CHECK;

#endif
