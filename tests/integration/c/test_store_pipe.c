/* Tests of the pipelined connection (store/store_pipe.c) against a real
 * PostgreSQL that the test starts (embedded, under a temporary directory):
 * batches commit together or not at all, a failing command does not take
 * the others with it, reads survive a lost connection, writes report it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>
#include <cmocka.h>

#include "pg_fixture.h"
#include "common.h"
#include "store_pg.h"
#include "store_pipe.h"

static struct pg_fixture fx;
static struct store *st;		/* fx.st */

/* Test-only statements, with ids no server statement uses in this process. */
static const struct store_stmt add_one = { 40, "t_add_one", "SELECT $1::int + 1", true };
static const struct store_stmt slow_read = { 41, "t_slow_read", "SELECT pg_sleep($1::float8), 7",
					     true };
static const struct store_stmt divide = { 42, "t_divide", "SELECT 10 / $1::int", true };
static const struct store_stmt insert = {
	43, "t_insert", "INSERT INTO pipe_t (v) VALUES ($1::int) RETURNING v", false,
};
static const struct store_stmt slow_insert = {
	44, "t_slow_insert", "INSERT INTO pipe_t (v) SELECT $1::int FROM pg_sleep(1) RETURNING v",
	false,
};
static const struct store_stmt count = { 45, "t_count", "SELECT count(*) FROM pipe_t WHERE v = $1::int",
					 true };
static const struct store_stmt my_pid = { 46, "t_pid", "SELECT pg_backend_pid()", true };
static const struct store_stmt kill_pipe = {
	47, "t_kill", "SELECT pg_terminate_backend($1::int)", true,
};

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	enum store_rc rc;
	char value[64];
};

#define WAITER_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, "" }

static void on_done(void (*fn)(void), void *arg, PGresult *res, enum store_rc rc)
{
	struct waiter *w = arg;

	(void)fn;

	pthread_mutex_lock(&w->mu);
	w->rc = rc;
	if (res && PQntuples(res) > 0)
		snprintf(w->value, sizeof(w->value), "%s", PQgetvalue(res, 0, PQnfields(res) - 1));
	PQclear(res);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void wait_done(struct waiter *w)
{
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

static void submit(struct store_pipe *p, const struct store_stmt *s, const char *param,
		   struct waiter *w)
{
	const char *params[] = { param };
	store_pipe_submit(p, s, param ? 1 : 0, params, on_done, NULL, w);
}

static int64_t rows_with(struct store_pipe *p, int v)
{
	char buf[16];
	struct waiter w = WAITER_INIT;
	snprintf(buf, sizeof(buf), "%d", v);
	submit(p, &count, buf, &w);
	wait_done(&w);
	assert_int_equal(w.rc, STORE_OK);
	return strtoll(w.value, NULL, 10);
}

static int setup(void **state)
{
	(void)state;
	if (pg_fixture_start(&fx, "pipe", 2))
		return -1;
	st = fx.st;
	struct store_conn *c = store_acquire(st);
	enum store_rc rc;
	PGresult *r = store_exec_sql(c, "CREATE TABLE pipe_t (v int)", false, 0, NULL, &rc);
	PQclear(r);
	store_release(st, c);
	return rc == STORE_OK ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return pg_fixture_stop(&fx);
}

struct reader {
	struct store_pipe *p;
	int base;
	int bad;
};

static void *read_many(void *arg)
{
	struct reader *r = arg;
	for (int i = 0; i < 200; i++) {
		struct waiter w = WAITER_INIT;
		char in[16], want[16];
		snprintf(in, sizeof(in), "%d", r->base + i);
		snprintf(want, sizeof(want), "%d", r->base + i + 1);
		submit(r->p, &add_one, in, &w);
		wait_done(&w);
		if (w.rc != STORE_OK || strcmp(w.value, want))
			r->bad++;
	}
	return NULL;
}

static void concurrent_reads_each_get_their_own_answer(void **state)
{
	struct store_pipe *p = store_pipe_start(fx.conninfo);
	pthread_t t[4];
	struct reader r[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		r[i] = (struct reader){ p, i * 1000, 0 };
		pthread_create(&t[i], NULL, read_many, &r[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].bad, 0);
	}
	store_pipe_stop(p);
}

static void a_failing_command_fails_alone_and_the_batch_is_replayed(void **state)
{
	struct store_pipe *p = store_pipe_start(fx.conninfo);
	struct waiter busy = WAITER_INIT, a = WAITER_INIT, bad = WAITER_INIT, c = WAITER_INIT;

	(void)state;
	/* While a slow read is out, the next three queue up and go as one batch. */
	submit(p, &slow_read, "0.3", &busy);
	usleep(50 * 1000);
	submit(p, &insert, "101", &a);
	submit(p, &divide, "0", &bad);
	submit(p, &insert, "102", &c);
	wait_done(&busy);
	wait_done(&a);
	wait_done(&bad);
	wait_done(&c);
	assert_int_equal(busy.rc, STORE_OK);
	assert_string_equal(busy.value, "7");
	assert_int_equal(bad.rc, STORE_ERROR);
	assert_int_equal(a.rc, STORE_OK);
	assert_int_equal(c.rc, STORE_OK);
	assert_string_equal(a.value, "101");
	/* rolled back with the failing batch, then committed once each */
	assert_int_equal(rows_with(p, 101), 1);
	assert_int_equal(rows_with(p, 102), 1);
	store_pipe_stop(p);
}

static void reads_survive_a_lost_connection_writes_report_it(void **state)
{
	struct store_pipe *p = store_pipe_start(fx.conninfo);
	struct waiter pid = WAITER_INIT, read = WAITER_INIT, write = WAITER_INIT;

	(void)state;
	submit(p, &my_pid, NULL, &pid);
	wait_done(&pid);
	assert_int_equal(pid.rc, STORE_OK);

	/* Kill the pipe's backend while a read is out: it is sent again. */
	submit(p, &slow_read, "0.5", &read);
	usleep(100 * 1000);
	char *v = NULL;
	const char *params[] = { pid.value };
	assert_int_equal(store_query_value(st, &kill_pipe, 1, params, &v), STORE_OK);
	free(v);
	wait_done(&read);
	assert_int_equal(read.rc, STORE_OK);
	assert_string_equal(read.value, "7");

	/* The same with a write out: it may have committed, so it is not resent. */
	struct waiter pid2 = WAITER_INIT;
	submit(p, &my_pid, NULL, &pid2);
	wait_done(&pid2);
	assert_string_not_equal(pid2.value, pid.value);
	submit(p, &slow_insert, "201", &write);
	usleep(200 * 1000);
	params[0] = pid2.value;
	assert_int_equal(store_query_value(st, &kill_pipe, 1, params, &v), STORE_OK);
	free(v);
	wait_done(&write);
	assert_int_equal(write.rc, STORE_UNAVAILABLE);
	assert_int_equal(rows_with(p, 201), 0);	/* killed before its commit */
	struct store_pipe_stats stats;
	store_pipe_stats(p, &stats);
	assert_int_equal(stats.reconnects, 2);
	assert_int_equal(stats.resent, 1);	/* the read, once; never the write */
	assert_true(stats.batches >= 5 && stats.commands >= stats.batches);
	store_pipe_stop(p);
}

static void after_stop_nothing_is_queued(void **state)
{
	struct store_pipe *p = store_pipe_start(fx.conninfo);
	struct waiter w = WAITER_INIT, late = WAITER_INIT;

	(void)state;
	submit(p, &add_one, "1", &w);
	store_pipe_stop(p);	/* what was queued completes first */
	assert_true(w.done);
	assert_int_equal(w.rc, STORE_OK);
	(void)late;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(concurrent_reads_each_get_their_own_answer),
		cmocka_unit_test(a_failing_command_fails_alone_and_the_batch_is_replayed),
		cmocka_unit_test(reads_survive_a_lost_connection_writes_report_it),
		cmocka_unit_test(after_stop_nothing_is_queued),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
