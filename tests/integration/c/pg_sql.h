/*
 * pg_sql.h - SQL on a C integration driver's own connection (beside
 * pg_fixture.h's store): a value or a SQLSTATE back. Include after
 * <cmocka.h> and <libpq-fe.h>.
 */
#ifndef TP_PG_SQL_H
#define TP_PG_SQL_H

#include <stdio.h>
#include <stdlib.h>

#include "common.h"

/*
 * Runs sql with text parameters on db. Returns the first value of the first
 * row (newly allocated; "" without rows), or NULL when it failed, with its
 * SQLSTATE in sqlstate (when given; else a failure fails the test).
 */
static inline char *pg_sqlv(PGconn *db, const char *sql, char *sqlstate, int n,
			    const char *const *params)
{
	PGresult *r = PQexecParams(db, sql, n, NULL, params, NULL, NULL, 0);
	char *out = NULL;

	if (sqlstate)
		*sqlstate = '\0';
	if (PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK) {
		out = xstrdup(PQntuples(r) && PQnfields(r) ? PQgetvalue(r, 0, 0) : "");
	} else if (sqlstate) {
		const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
		snprintf(sqlstate, 6, "%s", s ? s : "?????");
	} else {
		fail_msg("%s: %s", sql, PQresultErrorMessage(r));
	}
	PQclear(r);
	return out;
}

/* The same with one parameter (NULL: none); a failure fails the test. */
static inline char *pg_sql1(PGconn *db, const char *sql, const char *p1)
{
	const char *p[] = { p1 };
	return pg_sqlv(db, sql, NULL, p1 ? 1 : 0, p);
}

static inline void pg_exec1(PGconn *db, const char *sql, const char *p1)
{
	free(pg_sql1(db, sql, p1));
}

#endif
