/* Tests of the job cache (store/job_cache.c) against a real PostgreSQL that
 * the test starts (embedded, under a temporary directory), with the real
 * trigger of schema/009: a reply is served only while it is current, every
 * change or deletion committed before a fence is seen after it, fills that
 * race a change keep nothing, and a lost listener empties the cache. */
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
#include "job_cache.h"
#include "listen_hub.h"
#include "store_pg.h"

static struct pg_fixture fx;
static struct store *st;		/* fx.st */

/* Runs sql (parameters $1.. as text) on a pooled connection; the first
 * value of the first row, or "" (freed by the caller). */
static char *sql(const char *text, int n, ...)
{
	const char *params[4];
	va_list ap;
	enum store_rc rc;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		params[i] = va_arg(ap, const char *);
	va_end(ap);
	struct store_conn *c = store_acquire(st);
	PGresult *r = store_exec_sql(c, text, false, n, params, &rc);
	store_release(st, c);
	assert_int_equal(rc, STORE_OK);
	char *v = xstrdup(PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
	PQclear(r);
	return v;
}

/* A cache on a LISTEN hub of its own, as in the server; one at a time. */
static struct listen_hub *hub;

static struct job_cache *cache_start(size_t max_entries)
{
	hub = listen_hub_start(fx.conninfo);
	return job_cache_start(hub, max_entries);
}

static void cache_stop(struct job_cache *c)
{
	job_cache_stop(c);
	listen_hub_stop(hub);
	hub = NULL;
}

static void exec(const char *text, int n, const char *p1)
{
	free(sql(text, n, p1));
}

static void insert_job(const char *job_id)
{
	exec("INSERT INTO jobs (api, project, job_id, region, spec, state) "
	     "VALUES ('ml', 'p', $1, 'us-central1', '{}', 'QUEUED')", 1, job_id);
}

struct fence_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done, ok;
};

static void fenced(void *arg, bool ok)
{
	struct fence_wait *w = arg;

	pthread_mutex_lock(&w->mu);
	w->ok = ok;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* A fence, waited for: whether it proved the cache current. */
static bool fence(struct job_cache *c)
{
	struct fence_wait w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false };
	struct job_cache_fence f;

	job_cache_fence(c, &f, fenced, &w);
	pthread_mutex_lock(&w.mu);
	while (!w.done)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	return w.ok;
}

/* What a get would serve for ml/p/job_id: the cached reply after a fence. */
static char *served(struct job_cache *c, const char *job_id)
{
	struct job_cache_key k;
	size_t len;
	char *text = NULL;

	job_cache_key_init(&k, "ml", "p", job_id, NULL);
	if (job_cache_holds(c, &k) && fence(c))
		text = job_cache_get(c, &k, &len);
	job_cache_key_release(&k);
	return text;
}

/* Fills ml/p/job_id with reply, as a read of the table would; false when
 * the cache took no fill (down, or the key is already there). */
static bool fill(struct job_cache *c, const char *job_id, const char *reply)
{
	struct job_cache_key k;

	job_cache_key_init(&k, "ml", "p", job_id, NULL);
	struct job_cache_entry *e = job_cache_fill_begin(c, &k);
	job_cache_key_release(&k);
	job_cache_fill_end(c, e, reply, strlen(reply));
	return e != NULL;
}

/* The cache listens (its thread connects on its own): fills are taken. */
static void wait_listening(struct job_cache *c)
{
	struct job_cache_key k;

	job_cache_key_init(&k, "ml", "p", "probe-that-is-never-a-job", NULL);
	for (int i = 0; i < 500; i++) {
		struct job_cache_entry *e = job_cache_fill_begin(c, &k);
		if (e) {
			job_cache_fill_end(c, e, NULL, 0);
			job_cache_key_release(&k);
			return;
		}
		usleep(10 * 1000);
	}
	fail_msg("the job cache did not start listening within 5 s");
}

static void assert_served(struct job_cache *c, const char *job_id, const char *want)
{
	char *got = served(c, job_id);
	if (want) {
		assert_non_null(got);
		assert_string_equal(got, want);
	} else {
		assert_null(got);
	}
	free(got);
}

static int setup(void **state)
{
	(void)state;
	if (pg_fixture_start(&fx, "cache", 8))
		return -1;
	st = fx.st;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return pg_fixture_stop(&fx);
}

static void a_filled_reply_is_served_after_a_fence(void **state)
{
	struct job_cache *c = cache_start(100);
	struct job_cache_stats s;

	(void)state;
	insert_job("served");
	wait_listening(c);
	assert_served(c, "served", NULL);	/* nothing kept yet */
	assert_true(fill(c, "served", "{\"jobId\":\"served\"}"));
	assert_false(fill(c, "served", "{\"other\":1}"));	/* one fill per key */
	assert_served(c, "served", "{\"jobId\":\"served\"}");
	assert_served(c, "served", "{\"jobId\":\"served\"}");
	job_cache_stats(c, &s);
	assert_int_equal(s.hits, 2);
	assert_int_equal(s.fills, 1);
	assert_int_equal(s.entries, 1);
	assert_true(s.fences >= 2);
	cache_stop(c);
}

static void every_change_or_deletion_committed_before_a_fence_is_seen(void **state)
{
	struct job_cache *c = cache_start(100);
	struct job_cache_stats s;

	(void)state;
	insert_job("changed");
	wait_listening(c);
	/* No pause between the commit and the fence: the fence is the proof. */
	for (int i = 0; i < 50; i++) {
		assert_true(fill(c, "changed", "old"));
		assert_served(c, "changed", "old");
		exec("UPDATE jobs SET labels = jsonb_build_object('n', $1::text) "
		     "WHERE api = 'ml' AND project = 'p' AND job_id = 'changed'", 1, "x");
		assert_served(c, "changed", NULL);
	}
	/* a change made by a function (as agents' reports are) and a deletion */
	assert_true(fill(c, "changed", "old"));
	exec("DO $$ BEGIN UPDATE jobs SET state = 'CANCELLED' WHERE job_id = 'changed'; END $$", 0, NULL);
	assert_served(c, "changed", NULL);
	assert_true(fill(c, "changed", "old"));
	exec("DELETE FROM jobs WHERE api = 'ml' AND project = 'p' AND job_id = $1", 1, "changed");
	assert_served(c, "changed", NULL);
	job_cache_stats(c, &s);
	assert_true(s.invalidations >= 52);
	assert_int_equal(s.entries, 0);
	cache_stop(c);
}

static void a_fill_that_races_a_change_keeps_nothing(void **state)
{
	struct job_cache *c = cache_start(100);
	struct job_cache_key k;

	(void)state;
	insert_job("raced");
	wait_listening(c);
	/* The read went out before the change and comes back after its
	 * notification: what it read is stale and must not be kept. */
	job_cache_key_init(&k, "ml", "p", "raced", NULL);
	struct job_cache_entry *e = job_cache_fill_begin(c, &k);
	assert_non_null(e);
	exec("UPDATE jobs SET state = 'PREPARING' WHERE api = 'ml' AND job_id = $1", 1, "raced");
	assert_true(fence(c));	/* the notification is in */
	job_cache_fill_end(c, e, "stale", 5);
	assert_served(c, "raced", NULL);
	/* the next fill, begun after the change, is kept */
	e = job_cache_fill_begin(c, &k);
	assert_non_null(e);
	job_cache_fill_end(c, e, "fresh", 5);
	assert_served(c, "raced", "fresh");
	/* a read that found nothing (or failed) keeps nothing */
	job_cache_key_release(&k);
	job_cache_key_init(&k, "ml", "p", "absent", NULL);
	e = job_cache_fill_begin(c, &k);
	job_cache_fill_end(c, e, NULL, 0);
	assert_served(c, "absent", NULL);
	job_cache_key_release(&k);
	cache_stop(c);
}

static void inserts_and_other_keys_leave_a_reply_alone(void **state)
{
	struct job_cache *c = cache_start(100);

	(void)state;
	insert_job("kept");
	insert_job("neighbour");
	wait_listening(c);
	assert_true(fill(c, "kept", "kept"));
	insert_job("newcomer");
	exec("UPDATE jobs SET state = 'PREPARING' WHERE job_id = $1", 1, "neighbour");
	assert_served(c, "kept", "kept");
	/* the same job id in another project or api is another job */
	exec("INSERT INTO jobs (api, project, job_id, region, spec, state) "
	     "VALUES ('vertex', 'p', $1, 'us-central1', '{}', 'QUEUED')", 1, "kept");
	exec("UPDATE jobs SET state = 'PREPARING' WHERE api = 'vertex' AND job_id = $1", 1, "kept");
	assert_served(c, "kept", "kept");
	cache_stop(c);
}

static void the_least_recently_used_reply_goes_first(void **state)
{
	struct job_cache *c = cache_start(2);
	struct job_cache_stats s;

	(void)state;
	wait_listening(c);
	assert_true(fill(c, "lru-a", "a"));
	assert_true(fill(c, "lru-b", "b"));
	assert_served(c, "lru-a", "a");	/* a is now the most recent */
	assert_true(fill(c, "lru-c", "c"));
	assert_served(c, "lru-b", NULL);
	assert_served(c, "lru-a", "a");
	assert_served(c, "lru-c", "c");
	job_cache_stats(c, &s);
	assert_int_equal(s.entries, 2);
	cache_stop(c);
}

static void a_lost_listener_empties_the_cache_until_it_is_back(void **state)
{
	struct job_cache *c = cache_start(100);

	(void)state;
	insert_job("orphan");
	wait_listening(c);
	assert_true(fill(c, "orphan", "before"));
	/* The listener dies, and a change commits while nobody listens: its
	 * notification is lost, so the cache must not serve what it kept. */
	exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
	     "WHERE application_name = 'trainplane-server/listen'", 0, NULL);
	exec("UPDATE jobs SET state = 'FAILED' WHERE job_id = $1", 1, "orphan");
	assert_served(c, "orphan", NULL);
	/* It reconnects on its own and caches again. */
	wait_listening(c);
	assert_true(fill(c, "orphan", "after"));
	assert_served(c, "orphan", "after");
	struct listen_hub_stats hs;
	listen_hub_stats(hub, &hs);
	assert_int_equal(hs.reconnects, 1);
	assert_true(hs.rounds >= 3);		/* LISTEN twice, a fence at least */
	cache_stop(c);
}

static void a_bulk_update_reaches_every_job_it_changed(void **state)
{
	struct job_cache *c = cache_start(1000);
	char id[32];

	(void)state;
	wait_listening(c);
	/* 250 rows in one statement: three notifications of up to 100 digests */
	exec("INSERT INTO jobs (api, project, job_id, region, spec, state) "
	     "SELECT 'ml', 'p', 'bulk' || i, 'us-central1', '{}', 'QUEUED' "
	     "FROM generate_series(1, 250) i", 0, NULL);
	for (int i = 1; i <= 250; i++) {
		snprintf(id, sizeof(id), "bulk%d", i);
		assert_true(fill(c, id, "queued"));
	}
	assert_true(fill(c, "bystander", "kept"));
	exec("UPDATE jobs SET state = 'PREPARING' WHERE job_id LIKE 'bulk%'", 0, NULL);
	for (int i = 1; i <= 250; i++) {
		snprintf(id, sizeof(id), "bulk%d", i);
		assert_served(c, id, NULL);
	}
	assert_served(c, "bystander", "kept");
	/* a payload that is not ours: nothing kept can be trusted */
	exec("NOTIFY " JOB_CACHE_CHANNEL ", 'not a digest'", 0, NULL);
	assert_served(c, "bystander", NULL);
	struct listen_hub_stats hs;
	listen_hub_stats(hub, &hs);
	assert_true(hs.notifications >= 4);	/* three of digests, one not */
	cache_stop(c);
}

/* --- linearizable under concurrency --------------------------------------- */

struct race {
	struct job_cache *c;
	int committed;		/* the last version the writer saw commit */
	bool stop;
	int stale;		/* served a version older than one committed before the read */
	int served;
};

static void *writer(void *arg)
{
	struct race *r = arg;
	char v[16];

	for (int i = 1; i <= 300; i++) {
		snprintf(v, sizeof(v), "%d", i);
		exec("UPDATE jobs SET labels = jsonb_build_object('v', $1::int) "
		     "WHERE api = 'ml' AND project = 'p' AND job_id = 'raced-often'", 1, v);
		__atomic_store_n(&r->committed, i, __ATOMIC_SEQ_CST);
		usleep(1000);
	}
	__atomic_store_n(&r->stop, true, __ATOMIC_SEQ_CST);
	return NULL;
}

static void *reader(void *arg)
{
	struct race *r = arg;
	struct job_cache_key k;

	job_cache_key_init(&k, "ml", "p", "raced-often", NULL);
	while (!__atomic_load_n(&r->stop, __ATOMIC_SEQ_CST)) {
		int before = __atomic_load_n(&r->committed, __ATOMIC_SEQ_CST);
		size_t len;
		char *text = NULL;
		if (job_cache_holds(r->c, &k) && fence(r->c))
			text = job_cache_get(r->c, &k, &len);
		if (text) {
			if (atoi(text) < before)
				__atomic_add_fetch(&r->stale, 1, __ATOMIC_SEQ_CST);
			__atomic_add_fetch(&r->served, 1, __ATOMIC_SEQ_CST);
			free(text);
			continue;
		}
		/* a miss: read the table, as jobs.get does, and fill */
		struct job_cache_entry *e = job_cache_fill_begin(r->c, &k);
		char *v = sql("SELECT labels->>'v' FROM jobs WHERE api = 'ml' AND project = 'p' "
			      "AND job_id = 'raced-often'", 0);
		job_cache_fill_end(r->c, e, v, strlen(v));
		free(v);
	}
	job_cache_key_release(&k);
	return NULL;
}

static void no_read_after_a_fence_misses_an_earlier_commit(void **state)
{
	struct race r = { .c = cache_start(100) };
	pthread_t w, rd[4];
	struct job_cache_stats s;

	(void)state;
	insert_job("raced-often");
	exec("UPDATE jobs SET labels = '{\"v\": 0}' WHERE job_id = $1", 1, "raced-often");
	wait_listening(r.c);
	for (int i = 0; i < 4; i++)
		pthread_create(&rd[i], NULL, reader, &r);
	pthread_create(&w, NULL, writer, &r);
	pthread_join(w, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(rd[i], NULL);
	job_cache_stats(r.c, &s);
	assert_int_equal(r.stale, 0);
	assert_true(r.served > 100);	/* the cache was used, not bypassed */
	assert_true(s.invalidations > 100);
	assert_true(s.fences < s.hits + s.misses);	/* reads shared fences */
	cache_stop(r.c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_filled_reply_is_served_after_a_fence),
		cmocka_unit_test(every_change_or_deletion_committed_before_a_fence_is_seen),
		cmocka_unit_test(a_fill_that_races_a_change_keeps_nothing),
		cmocka_unit_test(inserts_and_other_keys_leave_a_reply_alone),
		cmocka_unit_test(the_least_recently_used_reply_goes_first),
		cmocka_unit_test(a_lost_listener_empties_the_cache_until_it_is_back),
		cmocka_unit_test(a_bulk_update_reaches_every_job_it_changed),
		cmocka_unit_test(no_read_after_a_fence_misses_an_earlier_commit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
