#include "migrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_job_state.h"
#include "store_state_edges.h"

/* Any constant works; it only has to be the same in every server. */
#define MIGRATE_LOCK_KEY "7262961207461826560"

static int exec_ok(PGconn *conn, const char *sql, int nparams, const char *const *params,
		   char *err, size_t errlen)
{
	PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);
	int rc = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		snprintf(err, errlen, "%s", PQresultErrorMessage(res));
		size_t n = strlen(err);
		while (n && (err[n - 1] == '\n'))
			err[--n] = '\0';
		rc = -1;
	}
	PQclear(res);
	return rc;
}

static int apply_one(PGconn *conn, const struct migration *m, char *err, size_t errlen)
{
	char ver[16];
	const char *params[2] = { ver, m->name };
	char why[512];

	snprintf(ver, sizeof(ver), "%u", m->version);
	if (exec_ok(conn, "BEGIN", 0, NULL, why, sizeof(why)))
		goto fail;
	/* Simple-query protocol: a migration file holds several statements. */
	PGresult *res = PQexec(conn, m->sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK) {
		snprintf(why, sizeof(why), "%s", PQresultErrorMessage(res));
		PQclear(res);
		goto rollback;
	}
	PQclear(res);
	if (exec_ok(conn, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2,
		    params, why, sizeof(why)))
		goto rollback;
	if (exec_ok(conn, "COMMIT", 0, NULL, why, sizeof(why)))
		goto fail;
	log_info("applied migration %s", m->name);
	return 0;
rollback:
	PQclear(PQexec(conn, "ROLLBACK"));
fail:
	snprintf(err, errlen, "migration %s: %s", m->name, why);
	return -1;
}

int migrate_apply(PGconn *conn, char *err, size_t errlen)
{
	PGresult *res = NULL;
	unsigned max_applied = 0;
	char *applied;
	int rc = -1;

	if (exec_ok(conn, "SELECT pg_advisory_lock(" MIGRATE_LOCK_KEY ")", 0, NULL, err, errlen))
		return -1;
	applied = xcalloc(migrations_count + 1, 1);
	if (exec_ok(conn,
		    "CREATE TABLE IF NOT EXISTS schema_migrations ("
		    " version integer PRIMARY KEY, name text NOT NULL,"
		    " applied_at timestamptz NOT NULL DEFAULT now())",
		    0, NULL, err, errlen))
		goto out;
	res = PQexec(conn, "SELECT version FROM schema_migrations");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		snprintf(err, errlen, "reading schema_migrations: %s", PQresultErrorMessage(res));
		goto out;
	}
	for (int i = 0; i < PQntuples(res); i++) {
		unsigned v = (unsigned)strtoul(PQgetvalue(res, i, 0), NULL, 10);
		if (v > max_applied)
			max_applied = v;
		for (unsigned j = 0; j < migrations_count; j++)
			if (migrations[j].version == v)
				applied[j] = 1;
	}
	if (migrations_count && max_applied > migrations[migrations_count - 1].version) {
		snprintf(err, errlen,
			 "the database has schema version %u, newer than this server's %u: "
			 "run a newer trainplane-server",
			 max_applied, migrations[migrations_count - 1].version);
		goto out;
	}
	for (unsigned j = 0; j < migrations_count; j++)
		if (!applied[j] && apply_one(conn, &migrations[j], err, errlen))
			goto out;
	/* The data the schema takes from the code: the job, replica and node
	 * state machines. */
	if (store_job_state_check(conn, err, errlen) || store_state_edges_check(conn, err, errlen))
		goto out;
	rc = 0;
out:
	PQclear(res);
	free(applied);
	PQclear(PQexec(conn, "SELECT pg_advisory_unlock(" MIGRATE_LOCK_KEY ")"));
	return rc;
}
