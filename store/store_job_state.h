/*
 * store_job_state.h - the database's copy of the job state machine
 * (spec/job_state.h; schema/013): job_state_edges, written by migrations
 * generated from spec/job_state.c's table, and checked against it at start.
 */
#ifndef TP_STORE_JOB_STATE_H
#define TP_STORE_JOB_STATE_H

#include <libpq-fe.h>

#include "common.h"

/*
 * The statement that makes job_state_edges hold spec/job_state.c's table
 * (DELETE, then INSERT of every edge): the text of a migration that
 * changes the machine. Newly allocated.
 */
char *store_job_state_edges_sql(void);

/*
 * Checks that the database's job_state_edges holds exactly this server's
 * table. Returns 0, or -1 with a message in err (the statement to put in a
 * new migration is logged): a server never runs a machine other than its
 * database's. Called at start, after the migrations.
 */
int store_job_state_check(PGconn *conn, char *err, size_t errlen) MUST_CHECK;

#endif
