/*
 * store_state_edges.h - the database's copies of the replica and node state
 * machines (lib/replica_state.h, lib/node_state.h; schema/030):
 * replica_state_edges and node_state_edges, written by migrations generated
 * from the C tables, and checked against them at start, as
 * store_job_state.h does for the job's.
 */
#ifndef TP_STORE_STATE_EDGES_H
#define TP_STORE_STATE_EDGES_H

#include <libpq-fe.h>

#include "common.h"

/*
 * The statements that make replica_state_edges (node_state_edges) hold
 * lib/replica_state.c's (lib/node_state.c's) table: DELETE, then INSERT of
 * every edge; the text of a migration that changes the machine. Newly
 * allocated.
 */
char *store_replica_state_edges_sql(void);
char *store_node_state_edges_sql(void);

/*
 * Checks that the database's replica_state_edges and node_state_edges hold
 * exactly this server's tables. Returns 0, or -1 with a message in err (the
 * statements to put in a new migration are logged). Called at start, after
 * the migrations.
 */
int store_state_edges_check(PGconn *conn, char *err, size_t errlen) MUST_CHECK;

#endif
