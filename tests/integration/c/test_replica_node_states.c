/* The replica and node state machines in the database (schema/030) against
 * a real PostgreSQL that the test starts: every (from, to) write of
 * replicas.state, with and without a new attempt, and of nodes.state,
 * through a raw UPDATE, checked against lib/replica_state.c's and
 * lib/node_state.c's tables: exactly the edges pass, the others are
 * refused (SQLSTATE 23514) and change nothing; inserts only in the
 * create / register edge's state. Then the statements that move them (an
 * agent's register and sync: a report that is no edge keeps the state, a
 * STOPPING node stays so until it registers, a LOST one syncs back to
 * READY) and the start-up check of the database's copies of the tables.
 * Self-contained: needs only PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include <libpq-fe.h>

#include "pg_fixture.h"
#include "pg_sql.h"
#include "common.h"
#include "node_state.h"
#include "replica_state.h"
#include "store.h"
#include "store_job.h"
#include "store_node.h"
#include "store_state_edges.h"

static struct pg_fixture fx;
static PGconn *db;	/* the test's own connection */
static char job[24];	/* the replicas' job */
static int next_id;

/* A statement with two parameters: true when it ran, false when it was
 * refused with SQLSTATE 23514 (anything else fails the test). */
static bool try2(const char *sql, const char *p1, const char *p2)
{
	const char *p[] = { p1, p2 };
	char state[6];
	char *out = pg_sqlv(db, sql, state, 2, p);
	if (!out && strcmp(state, "23514"))
		fail_msg("%s (%s, %s): SQLSTATE %s, want 23514", sql, p1, p2, state);
	free(out);
	return out != NULL;
}

/* --- replicas ---------------------------------------------------------------- */

/* A new replica of the job on n1, taken to s: created PENDING, then one
 * edge (each state is one edge from PENDING). Its uid, in uid. */
static void replica_in(enum replica_state s, char *uid, size_t len)
{
	char idx[16];
	snprintf(uid, len, "r%d", ++next_id);
	snprintf(idx, sizeof(idx), "%d", next_id);
	const char *p[] = { job, uid, idx };
	free(pg_sqlv(db, "INSERT INTO replicas (job, uid, role, idx, node, spec) "
		  "VALUES ($1::int8, $2, 'worker', $3::int, 'n1', '{}')", NULL, 3, p));
	if (s != REPLICA_PENDING)
		assert_true(try2("UPDATE replicas SET state = $2 WHERE uid = $1", uid,
				 replica_state_name(s)));
}

static char *replica_state_of(const char *uid)
{
	return pg_sql1(db, "SELECT state || ':' || attempt FROM replicas WHERE uid = $1", uid);
}

/* Whether an edge of the C table joins from to to, starting a new attempt or not. */
static bool replica_edge(enum replica_state from, enum replica_state to, bool new_attempt)
{
	for (size_t i = 0; i < replica_state_edge_count; i++) {
		const struct replica_state_edge *e = &replica_state_edges[i];
		if (e->from == from && e->to == to &&
		    replica_cause_new_attempt(e->cause) == new_attempt)
			return true;
	}
	return false;
}

static void every_replica_write_is_an_edge_or_refused(void **state)
{
	char uid[16], want[48];
	(void)state;
	for (unsigned from = REPLICA_PENDING; from < REPLICA_STATE_COUNT; from++) {
		for (unsigned to = REPLICA_PENDING; to < REPLICA_STATE_COUNT; to++) {
			/* the same attempt: an edge that starts none (or no change) */
			bool ok = from == to || replica_edge(from, to, false);
			replica_in(from, uid, sizeof(uid));
			if (try2("UPDATE replicas SET state = $2 WHERE uid = $1", uid,
				 replica_state_name(to)) != ok)
				fail_msg("%s -> %s: %s", replica_state_name(from),
					 replica_state_name(to), ok ? "refused" : "allowed");
			char *got = replica_state_of(uid);
			snprintf(want, sizeof(want), "%s:1", replica_state_name(ok ? to : from));
			assert_string_equal(got, want);
			free(got);

			/* a new attempt: an edge that starts one */
			ok = replica_edge(from, to, true);
			replica_in(from, uid, sizeof(uid));
			if (try2("UPDATE replicas SET state = $2, attempt = attempt + 1 WHERE uid = $1",
				 uid, replica_state_name(to)) != ok)
				fail_msg("%s -> %s, attempt 2: %s", replica_state_name(from),
					 replica_state_name(to), ok ? "refused" : "allowed");
			got = replica_state_of(uid);
			snprintf(want, sizeof(want), "%s:%d", replica_state_name(ok ? to : from),
				 ok ? 2 : 1);
			assert_string_equal(got, want);
			free(got);
		}
	}
	/* an attempt never goes back, even on a new attempt's edge */
	replica_in(REPLICA_LOST, uid, sizeof(uid));
	assert_true(try2("UPDATE replicas SET state = 'PENDING', attempt = attempt + 3 "
			 "WHERE uid = $1 AND $2 = $2", uid, ""));
	assert_true(try2("UPDATE replicas SET state = 'LOST' WHERE uid = $1 AND $2 = $2", uid, ""));
	assert_false(try2("UPDATE replicas SET state = 'PENDING', attempt = 2 "
			  "WHERE uid = $1 AND $2 = $2", uid, ""));
	char *got = replica_state_of(uid);
	assert_string_equal(got, "LOST:4");
	free(got);
}

static void a_replica_is_created_pending_only(void **state)
{
	(void)state;
	for (unsigned s = REPLICA_PENDING; s < REPLICA_STATE_COUNT; s++) {
		char uid[16], idx[16];
		snprintf(uid, sizeof(uid), "c%d", ++next_id);
		snprintf(idx, sizeof(idx), "%d", next_id);
		const char *p[] = { job, uid, idx, replica_state_name(s) };
		char sqlstate[6];
		char *out = pg_sqlv(db, "INSERT INTO replicas (job, uid, role, idx, node, spec, state) "
				 "VALUES ($1::int8, $2, 'worker', $3::int, 'n1', '{}', $4)", sqlstate,
				 4, p);
		assert_int_equal(out != NULL, s == REPLICA_PENDING);
		if (!out)
			assert_string_equal(sqlstate, "23514");
		free(out);
	}
}

/* --- nodes ------------------------------------------------------------------- */

static void node_in(enum node_state s, char *name, size_t len)
{
	snprintf(name, len, "n-%d", ++next_id);
	pg_exec1(db, "INSERT INTO nodes (name, incarnation, region, zone, vcpus, memory_mb, address, "
	      "port_lo, port_hi, runtime) VALUES ($1, 'i', 'r', 'z', 8, 1024, '127.0.0.1', 1, 2, "
	      "'process')", name);
	if (s != NODE_READY)
		assert_true(try2("UPDATE nodes SET state = $2 WHERE name = $1", name,
				 node_state_name(s)));
}

static void every_node_write_is_an_edge_or_refused(void **state)
{
	char name[16];
	(void)state;
	for (unsigned from = NODE_READY; from < NODE_STATE_COUNT; from++) {
		for (unsigned to = NODE_READY; to < NODE_STATE_COUNT; to++) {
			bool ok = from == to || node_state_edge_allowed(from, to);
			node_in(from, name, sizeof(name));
			if (try2("UPDATE nodes SET state = $2 WHERE name = $1", name,
				 node_state_name(to)) != ok)
				fail_msg("%s -> %s: %s", node_state_name(from), node_state_name(to),
					 ok ? "refused" : "allowed");
			char *got = pg_sql1(db, "SELECT state FROM nodes WHERE name = $1", name);
			assert_string_equal(got, node_state_name(ok ? to : from));
			free(got);
		}
	}
	/* registered READY only */
	for (unsigned s = NODE_READY; s < NODE_STATE_COUNT; s++) {
		snprintf(name, sizeof(name), "n-%d", ++next_id);
		bool ok = try2("INSERT INTO nodes (name, incarnation, region, zone, vcpus, memory_mb, "
			       "address, port_lo, port_hi, runtime, state) VALUES ($1, 'i', 'r', 'z', "
			       "8, 1024, '127.0.0.1', 1, 2, 'process', $2)", name, node_state_name(s));
		assert_int_equal(ok, s == NODE_READY);
	}
}

/* --- the statements that move them --------------------------------------------- */

static const struct node_info agent_node = {
	.name = "ns", .incarnation = "inc-1", .region = "r", .zone = "z", .machine_type = "",
	.vcpus = 8, .memory_mb = 1024, .address = "127.0.0.1", .port_lo = 30000,
	.port_hi = 30010, .runtime = "process", .agent_version = "t", .lease_s = 30,
	.disconnect_policy = "keep_running",
};

static char *node_state_of(void)
{
	return pg_sql1(db, "SELECT state FROM nodes WHERE name = 'ns'", NULL);
}

static void agent_sync(bool stopping, const char *reports_json)
{
	json_t *reports = json_loads(reports_json, 0, NULL), *desired = NULL;
	int64_t version;
	bool changed;
	assert_non_null(reports);
	assert_int_equal(store_node_sync(fx.st, "ns", "inc-1", 30, stopping, reports, &desired,
					 &version, &changed), STORE_OK);
	json_decref(desired);
	json_decref(reports);
}

static void the_agents_statements_take_edges_or_keep_the_state(void **state)
{
	char cluster[80];
	(void)state;
	assert_int_equal(store_node_register(fx.st, &agent_node, cluster, sizeof(cluster)), STORE_OK);
	char *got = node_state_of();
	assert_string_equal(got, "READY");
	free(got);

	/* stop: STOPPING; a sync that does not say so leaves it STOPPING */
	agent_sync(true, "[]");
	got = node_state_of();
	assert_string_equal(got, "STOPPING");
	free(got);
	agent_sync(false, "[]");
	got = node_state_of();
	assert_string_equal(got, "STOPPING");
	free(got);
	/* until its agent registers again */
	assert_int_equal(store_node_register(fx.st, &agent_node, cluster, sizeof(cluster)), STORE_OK);
	got = node_state_of();
	assert_string_equal(got, "READY");
	free(got);
	/* a LOST node that syncs with its incarnation (a partition healed) */
	pg_exec1(db, "UPDATE nodes SET state = 'LOST' WHERE name = 'ns'", NULL);
	agent_sync(false, "[]");
	got = node_state_of();
	assert_string_equal(got, "READY");
	free(got);

	/* A report that goes back (RUNNING -> STARTING) keeps the state, and
	 * the rest of it (its seq) is taken; the next is an edge. */
	pg_exec1(db, "INSERT INTO replicas (job, uid, role, idx, node, spec) "
	      "VALUES ($1::int8, 'rep-ns', 'master', 0, 'ns', '{}')", job);
	pg_exec1(db, "UPDATE replicas SET state = 'RUNNING' WHERE uid = 'rep-ns' AND $1 = $1", "");
	agent_sync(false, "[{\"replica\": \"rep-ns\", \"attempt\": 1, \"seq\": 1, \"state\": \"STARTING\"}]");
	got = pg_sql1(db, "SELECT state || ':' || seq FROM replicas WHERE uid = 'rep-ns'", NULL);
	assert_string_equal(got, "RUNNING:1");
	free(got);
	agent_sync(false, "[{\"replica\": \"rep-ns\", \"attempt\": 1, \"seq\": 2, \"state\": \"EXITED\", "
		    "\"exitCode\": 0}]");
	got = pg_sql1(db, "SELECT state || ':' || seq || ':' || desired FROM replicas WHERE uid = 'rep-ns'",
		   NULL);
	assert_string_equal(got, "EXITED:2:DONE");
	free(got);

	/* A new incarnation: the replicas of the old one are LOST (the lose
	 * edge), the ended ones left alone. */
	pg_exec1(db, "INSERT INTO replicas (job, uid, role, idx, node, spec) "
	      "VALUES ($1::int8, 'rep-ns2', 'worker', 99, 'ns', '{}')", job);
	struct node_info again = agent_node;
	again.incarnation = "inc-2";
	assert_int_equal(store_node_register(fx.st, &again, cluster, sizeof(cluster)), STORE_OK);
	got = pg_sql1(db, "SELECT string_agg(uid || ':' || state, ' ' ORDER BY uid) FROM replicas "
		   "WHERE node = 'ns'", NULL);
	assert_string_equal(got, "rep-ns:EXITED rep-ns2:LOST");
	free(got);
}

/*
 * A job cancelled as it was placed, before its agent started the replica:
 * the agent's "stopped before it started" (FAILED_TO_START) ends the
 * replica, its line says so, and the job is CANCELLED, not failed.
 */
static void a_replica_stopped_before_it_started_ends_the_cancel(void **state)
{
	char cluster[80];
	(void)state;
	assert_int_equal(store_node_register(fx.st, &agent_node, cluster, sizeof(cluster)), STORE_OK);
	char *id = pg_sql1(db, "INSERT INTO jobs (api, project, job_id, region, spec, state) "
			   "VALUES ('ml', 't', 'skip', 'r', '{}', 'QUEUED') RETURNING id", NULL);
	pg_exec1(db, "INSERT INTO replicas (job, uid, role, idx, node, spec) "
	      "VALUES ($1::int8, 'rep-skip', 'master', 0, 'ns', '{}')", id);
	pg_exec1(db, "SELECT tp_job_transition(ARRAY[$1::int8], 'PREPARING', 'place')", id);
	struct job_key key = { "ml", "t", "skip" };
	struct job_rows *rows = NULL;
	bool changed;
	assert_int_equal(store_job_cancel(fx.st, &key, NULL, &changed, &rows), STORE_OK);
	job_rows_free(rows);
	pg_exec1(db, "SELECT tp_reconcile_job($1::int8)", id);	/* the scheduler's pass */
	char *got = pg_sql1(db, "SELECT j.state || ':' || p.desired FROM jobs j JOIN replicas p "
			    "ON p.job = j.id WHERE j.id = $1::int8", id);
	assert_string_equal(got, "CANCELLING:STOP");
	free(got);
	agent_sync(false, "[{\"replica\": \"rep-skip\", \"attempt\": 1, \"seq\": 1, "
		    "\"state\": \"FAILED_TO_START\", \"message\": \"" REPLICA_SKIPPED_MESSAGE "\"}]");
	got = pg_sql1(db, "SELECT j.state || ':' || p.state || ':' || p.desired || ':' || "
		      "(p.start_time IS NULL) FROM jobs j JOIN replicas p ON p.job = j.id "
		      "WHERE j.id = $1::int8", id);
	assert_string_equal(got, "CANCELLED:FAILED_TO_START:DONE:true");
	free(got);
	got = pg_sql1(db, "SELECT string_agg(text, ' | ' ORDER BY id) FROM log_entries "
		      "WHERE job = $1::int8 AND task = 'service'", id);
	assert_non_null(strstr(got, "The replica master 0 was stopped before it started. | "
				    "Job cancelled."));
	free(got);
	free(id);
}

/* --- the database's copies of the tables ------------------------------------- */

static void fix_with(char *sql)
{
	PGresult *r = PQexec(db, sql);
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	free(sql);
}

static void a_server_refuses_a_database_whose_machines_differ(void **state)
{
	char err[256];
	(void)state;

	assert_int_equal(store_state_edges_check(db, err, sizeof(err)), 0);
	pg_exec1(db, "DELETE FROM replica_state_edges WHERE from_state = 'LOST' AND cause = 'requeue'", NULL);
	assert_int_equal(store_state_edges_check(db, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "replica_state_edges"));
	fix_with(store_replica_state_edges_sql());
	assert_int_equal(store_state_edges_check(db, err, sizeof(err)), 0);
	pg_exec1(db, "UPDATE replica_state_edges SET new_attempt = false WHERE cause = 'restart'", NULL);
	assert_int_equal(store_state_edges_check(db, err, sizeof(err)), -1);
	fix_with(store_replica_state_edges_sql());

	pg_exec1(db, "INSERT INTO node_state_edges VALUES ('STOPPING', 'sync', 'READY')", NULL);
	assert_int_equal(store_state_edges_check(db, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "node_state_edges"));
	pg_exec1(db, "DELETE FROM node_state_edges WHERE from_state = 'STOPPING' AND cause = 'sync'", NULL);
	pg_exec1(db, "UPDATE node_state_edges SET to_state = 'READY' WHERE cause = 'expire' "
	      "AND from_state = 'READY'", NULL);
	assert_int_equal(store_state_edges_check(db, err, sizeof(err)), -1);
	fix_with(store_node_state_edges_sql());
	assert_int_equal(store_state_edges_check(db, err, sizeof(err)), 0);
	char *n = pg_sql1(db, "SELECT count(*) FROM replica_state_edges", NULL);
	assert_int_equal(atoi(n), (int)replica_state_edge_count);
	free(n);
	n = pg_sql1(db, "SELECT count(*) FROM node_state_edges", NULL);
	assert_int_equal(atoi(n), (int)node_state_edge_count);
	free(n);
}

static int setup(void **state)
{
	(void)state;
	if (pg_fixture_start(&fx, "rnstates", 2))
		return -1;
	db = PQconnectdb(fx.conninfo);
	if (PQstatus(db) != CONNECTION_OK) {
		fprintf(stderr, "%s", PQerrorMessage(db));
		return -1;
	}
	PQclear(PQexec(db, "SET client_min_messages = warning"));
	PQclear(PQexec(db, "INSERT INTO nodes (name, incarnation, region, zone, vcpus, memory_mb, "
			   "address, port_lo, port_hi, runtime) VALUES ('n1', 'i', 'r', 'z', 64, "
			   "65536, '127.0.0.1', 20000, 20999, 'process')"));
	PGresult *r = PQexec(db, "INSERT INTO jobs (api, project, job_id, region, spec, state) "
			     "VALUES ('ml', 't', 'j1', 'r', '{}', 'QUEUED') RETURNING id");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		fprintf(stderr, "%s", PQresultErrorMessage(r));
		PQclear(r);
		return -1;
	}
	snprintf(job, sizeof(job), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	PQfinish(db);
	return pg_fixture_stop(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_replica_write_is_an_edge_or_refused),
		cmocka_unit_test(a_replica_is_created_pending_only),
		cmocka_unit_test(every_node_write_is_an_edge_or_refused),
		cmocka_unit_test(the_agents_statements_take_edges_or_keep_the_state),
		cmocka_unit_test(a_replica_stopped_before_it_started_ends_the_cancel),
		cmocka_unit_test(a_server_refuses_a_database_whose_machines_differ),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
