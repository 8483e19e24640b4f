#include "store_job_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_state.h"
#include "log.h"
#include "strbuf.h"

char *store_job_state_edges_sql(void)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addstr(&sb, "DELETE FROM job_state_edges;\n"
		  "INSERT INTO job_state_edges (from_state, cause, to_state) VALUES\n");
	for (size_t i = 0; i < job_state_edge_count; i++) {
		const struct job_state_edge *e = &job_state_edges[i];
		/* the names are the table's own constants: no quoting needed */
		sb_addf(&sb, "    ('%s', '%s', '%s')%s\n", job_state_name(e->from),
			job_cause_name(e->cause), job_state_name(e->to),
			i + 1 < job_state_edge_count ? "," : ";");
	}
	return sb_detach(&sb);
}

/* Whether the table has the edge (from, cause, to), by name. */
static bool has_edge(const char *from, const char *cause, const char *to)
{
	for (size_t i = 0; i < job_state_edge_count; i++) {
		const struct job_state_edge *e = &job_state_edges[i];
		if (!strcmp(from, job_state_name(e->from)) && !strcmp(cause, job_cause_name(e->cause)) &&
		    !strcmp(to, job_state_name(e->to)))
			return true;
	}
	return false;
}

int store_job_state_check(PGconn *conn, char *err, size_t errlen)
{
	PGresult *res = PQexec(conn, "SELECT from_state, cause, to_state FROM job_state_edges");
	int rc = -1;

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		snprintf(err, errlen, "reading job_state_edges: %s", PQresultErrorMessage(res));
		goto out;
	}
	/* Equal sets: every row is an edge of ours, and there are as many
	 * (the key (from_state, cause) makes the rows distinct). */
	bool same = (size_t)PQntuples(res) == job_state_edge_count;
	for (int r = 0; same && r < PQntuples(res); r++)
		same = has_edge(PQgetvalue(res, r, 0), PQgetvalue(res, r, 1), PQgetvalue(res, r, 2));
	if (!same) {
		char *sql = store_job_state_edges_sql();
		log_error("the database's job state machine differs from this server's "
			  "(spec/job_state.c): a release that changes it adds a migration that "
			  "writes it:\n%s", sql);
		free(sql);
		snprintf(err, errlen, "the database's job state machine (job_state_edges) differs "
			 "from this server's: see the log for the migration that is missing");
		goto out;
	}
	rc = 0;
out:
	PQclear(res);
	return rc;
}
