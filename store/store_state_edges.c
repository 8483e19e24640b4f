#include "store_state_edges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "node_state.h"
#include "replica_state.h"
#include "strbuf.h"

/* (the names are the tables' own constants: no quoting needed) */

char *store_replica_state_edges_sql(void)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addstr(&sb, "DELETE FROM replica_state_edges;\n"
		  "INSERT INTO replica_state_edges (from_state, cause, to_state, new_attempt) VALUES\n");
	for (size_t i = 0; i < replica_state_edge_count; i++) {
		const struct replica_state_edge *e = &replica_state_edges[i];
		sb_addf(&sb, "    ('%s', '%s', '%s', %s)%s\n", replica_state_name(e->from),
			replica_cause_name(e->cause), replica_state_name(e->to),
			replica_cause_new_attempt(e->cause) ? "true" : "false",
			i + 1 < replica_state_edge_count ? "," : ";");
	}
	return sb_detach(&sb);
}

char *store_node_state_edges_sql(void)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addstr(&sb, "DELETE FROM node_state_edges;\n"
		  "INSERT INTO node_state_edges (from_state, cause, to_state) VALUES\n");
	for (size_t i = 0; i < node_state_edge_count; i++) {
		const struct node_state_edge *e = &node_state_edges[i];
		sb_addf(&sb, "    ('%s', '%s', '%s')%s\n", node_state_name(e->from),
			node_cause_name(e->cause), node_state_name(e->to),
			i + 1 < node_state_edge_count ? "," : ";");
	}
	return sb_detach(&sb);
}

/* Whether the replica table has the edge (from, cause, to, new_attempt), by name. */
static bool replica_has_edge(const char *from, const char *cause, const char *to,
			     const char *new_attempt)
{
	for (size_t i = 0; i < replica_state_edge_count; i++) {
		const struct replica_state_edge *e = &replica_state_edges[i];
		if (!strcmp(from, replica_state_name(e->from)) &&
		    !strcmp(cause, replica_cause_name(e->cause)) &&
		    !strcmp(to, replica_state_name(e->to)) &&
		    !strcmp(new_attempt, replica_cause_new_attempt(e->cause) ? "t" : "f"))
			return true;
	}
	return false;
}

static bool node_has_edge(const char *from, const char *cause, const char *to)
{
	for (size_t i = 0; i < node_state_edge_count; i++) {
		const struct node_state_edge *e = &node_state_edges[i];
		if (!strcmp(from, node_state_name(e->from)) && !strcmp(cause, node_cause_name(e->cause)) &&
		    !strcmp(to, node_state_name(e->to)))
			return true;
	}
	return false;
}

/* One machine's check: its copy's rows are exactly the C table's edges
 * (the key (from_state, cause) makes the rows distinct). */
static int check_one(PGconn *conn, const char *machine, const char *query, size_t count,
		     bool (*has)(PGresult *res, int row), char *(*sql_of)(void), char *err,
		     size_t errlen)
{
	PGresult *res = PQexec(conn, query);
	int rc = -1;

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		snprintf(err, errlen, "reading %s_state_edges: %s", machine,
			 PQresultErrorMessage(res));
		goto out;
	}
	bool same = (size_t)PQntuples(res) == count;
	for (int r = 0; same && r < PQntuples(res); r++)
		same = has(res, r);
	if (!same) {
		char *sql = sql_of();
		log_error("the database's %s state machine differs from this server's "
			  "(lib/%s_state.c): a release that changes it adds a migration that "
			  "writes it:\n%s", machine, machine, sql);
		free(sql);
		snprintf(err, errlen, "the database's %s state machine (%s_state_edges) differs "
			 "from this server's: see the log for the migration that is missing",
			 machine, machine);
		goto out;
	}
	rc = 0;
out:
	PQclear(res);
	return rc;
}

static bool replica_row(PGresult *res, int r)
{
	return replica_has_edge(PQgetvalue(res, r, 0), PQgetvalue(res, r, 1),
				PQgetvalue(res, r, 2), PQgetvalue(res, r, 3));
}

static bool node_row(PGresult *res, int r)
{
	return node_has_edge(PQgetvalue(res, r, 0), PQgetvalue(res, r, 1), PQgetvalue(res, r, 2));
}

int store_state_edges_check(PGconn *conn, char *err, size_t errlen)
{
	if (check_one(conn, "replica",
		      "SELECT from_state, cause, to_state, new_attempt FROM replica_state_edges",
		      replica_state_edge_count, replica_row, store_replica_state_edges_sql, err,
		      errlen))
		return -1;
	return check_one(conn, "node", "SELECT from_state, cause, to_state FROM node_state_edges",
			 node_state_edge_count, node_row, store_node_state_edges_sql, err, errlen);
}
