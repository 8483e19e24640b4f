/* The plans PostgreSQL picks for the job statements of store/store_job.c
 * on a fresh database that was never analyzed (issue 12, item 10): the
 * lookups by job id (get, cancel, patch, Vertex delete) go through the
 * unique key, not through a walk of the whole project, and the list
 * keeps its own index. Against a real PostgreSQL the test starts, with
 * the real statements prepared by the store on its only connection and
 * their generic plans forced (plan_cache_mode), as a server that has run
 * them a few times uses them. */
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

#include "pg_fixture.h"
#include "common.h"
#include "list_filter.h"
#include "store.h"
#include "store_job.h"
#include "store_pg.h"

#define JOBS "5000"	/* in the project: a walk of it would read them all */

static struct pg_fixture fx;
static struct store *st;		/* fx.st */

/* Runs sql on the store's only connection: every row's first column,
 * joined by newlines (caller frees). */
static char *sql(const char *text)
{
	enum store_rc rc;
	struct store_conn *c = store_acquire(st);
	PGresult *r = store_exec_sql(c, text, false, 0, NULL, &rc);
	store_release(st, c);
	if (rc != STORE_OK)
		fail_msg("%s: %s", text, store_rc_name(rc));
	size_t len = 1;
	for (int i = 0; i < PQntuples(r); i++)
		len += strlen(PQgetvalue(r, i, 0)) + 1;
	char *out = xcalloc(1, len);
	for (int i = 0; i < PQntuples(r); i++) {
		strcat(out, PQgetvalue(r, i, 0));
		strcat(out, "\n");
	}
	PQclear(r);
	return out;
}

static void exec(const char *text)
{
	free(sql(text));
}

/* The generic plan of the prepared statement called as `call`. */
static char *generic_plan(const char *call)
{
	char *text = xasprintf("EXPLAIN EXECUTE %s", call);
	exec("SET plan_cache_mode = force_generic_plan");
	char *plan = sql(text);
	exec("RESET plan_cache_mode");
	free(text);
	return plan;
}

/* The lookup is an index scan of the unique key on all three columns,
 * with no filter left to apply row by row. */
static void assert_unique_key_lookup(const char *call)
{
	char *plan = generic_plan(call);
	if (!strstr(plan, "Index Scan using jobs_project_api_job_id_key on jobs") ||
	    !strstr(plan, "(job_id = $3)") || strstr(plan, "jobs_project_api_id ") ||
	    strstr(plan, "Filter: (job_id"))
		fail_msg("%s: not a lookup through the unique key:\n%s", call, plan);
	free(plan);
}

static void the_lookups_by_job_id_use_the_unique_key_without_statistics(void **state)
{
	struct job_key key = { "ml", "p", "job_1" }, absent = { "ml", "p", "absent" };
	struct job_rows *rows = NULL;
	bool changed;
	int64_t op = 0, op_us = 0;
	(void)state;

	/* Never analyzed: what a fresh database looks like until autovacuum
	 * first comes by, which this test does not wait for. */
	exec("ALTER TABLE jobs SET (autovacuum_enabled = false)");
	exec("INSERT INTO jobs (api, project, job_id, region, spec, state) "
	     "SELECT 'ml', 'p', 'job_' || g, 'us-central1', '{}', 'QUEUED' "
	     "FROM generate_series(1, " JOBS ") g");
	char *stats = sql("SELECT (reltuples < 0 AND last_analyze IS NULL AND "
			  "last_autoanalyze IS NULL)::text FROM pg_class c "
			  "JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.relname = 'jobs'");
	assert_string_equal(stats, "true\n");
	free(stats);

	/* Each statement prepared by the store, as a server does. */
	assert_int_equal(store_job_get(st, &key, &rows), STORE_OK);
	job_rows_free(rows);
	assert_int_equal(store_job_cancel(st, &absent, "cancelled", &changed, &rows),
			 STORE_NOT_FOUND);
	assert_int_equal(store_job_set_labels(st, &absent, -1, "{}", &rows), STORE_NOT_FOUND);
	assert_int_equal(store_job_delete_final(st, &absent, "us-central1", "x", &op, &op_us),
			 STORE_NOT_FOUND);

	assert_unique_key_lookup("job_get('ml', 'p', 'job_4000')");
	assert_unique_key_lookup("job_cancel('ml', 'p', 'job_4000', 'cancelled')");
	assert_unique_key_lookup("job_set_labels('ml', 'p', 'job_4000', '{}', NULL)");
	assert_unique_key_lookup("job_delete_final('ml', 'p', 'job_4000', 'us-central1', 'x')");

	/* And the get reads one row, not the whole project. */
	exec("SET plan_cache_mode = force_generic_plan");
	char *run = sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
			"EXECUTE job_get('ml', 'p', 'job_4000')");
	exec("RESET plan_cache_mode");
	if (!strstr(run, "rows=1 loops=1") || strstr(run, "Rows Removed by Filter"))
		fail_msg("job_get read more than its row:\n%s", run);
	free(run);
}

/* Scans of the list index so far, this connection's included: the
 * statistics it has pending are flushed when it goes idle after asking. */
static long list_index_scans(void)
{
	exec("SELECT pg_stat_force_next_flush()");
	char *n = sql("SELECT idx_scan FROM pg_stat_user_indexes "
		      "WHERE indexrelname = 'jobs_project_api_id'");
	long v = atol(n);
	free(n);
	return v;
}

/* The list still walks its own index, newest first, without sorting:
 * counted by PostgreSQL's statistics of index use. */
static void the_list_uses_its_index_without_statistics(void **state)
{
	struct job_rows *rows = NULL;
	struct job j;
	(void)state;

	struct list_filter *filter;
	char err[256];
	assert_int_equal(list_filter_parse("state=QUEUED", &list_filter_ml_jobs, &filter, err,
					   sizeof(err)), 0);
	exec("SET stats_fetch_consistency = none");
	long before = list_index_scans();
	assert_int_equal(store_job_list(st, STORE_LIST_ML_JOBS, "p", NULL, 0, 21, filter, &rows),
			 STORE_OK);
	list_filter_free(filter);
	assert_int_equal(job_rows_count(rows), 21);
	job_rows_get(rows, 0, &j);
	assert_string_equal(j.job_id, "job_5000");	/* newest first */
	job_rows_free(rows);
	long after = list_index_scans();
	if (after != before + 1)
		fail_msg("the list did not scan jobs_project_api_id once (%ld scans, then %ld)",
			 before, after);
}

static int setup(void **state)
{
	(void)state;
	/* One connection: the statements the store prepares are the ones explained. */
	if (pg_fixture_start(&fx, "plans", 1))
		return -1;
	st = fx.st;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return pg_fixture_stop(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_lookups_by_job_id_use_the_unique_key_without_statistics),
		cmocka_unit_test(the_list_uses_its_index_without_statistics),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
