/* Tests of the LISTEN hub (store/listen_hub.c) against a real PostgreSQL
 * that the test starts: a notification is handed over at once, also one
 * sent while a fence is out (not at the hub's next check, 2 s later);
 * fences complete after what was notified before them; subscribers hear
 * their channel only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "pg_fixture.h"
#include "common.h"
#include "listen_hub.h"
#include "store_pg.h"

static struct pg_fixture fx;
static struct store *st;		/* fx.st */

struct heard {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool up;
	int last;		/* the last payload heard, as a number */
	int count;
	int fences_ok;
	int last_at_fence;	/* last when the latest fence came back */
};

static void on_notify(void *arg, const char *payload)
{
	struct heard *h = arg;

	pthread_mutex_lock(&h->mu);
	h->last = atoi(payload);
	h->count++;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static void on_up(void *arg)
{
	struct heard *h = arg;

	pthread_mutex_lock(&h->mu);
	h->up = true;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static const struct listen_sub_ops ops = { on_notify, on_up, NULL };

static void fenced(void *arg, bool ok)
{
	struct heard *h = arg;

	pthread_mutex_lock(&h->mu);
	h->fences_ok += ok;
	h->last_at_fence = h->last;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static void notify(const char *channel, int n)
{
	char sql[128];
	enum store_rc rc;

	snprintf(sql, sizeof(sql), "NOTIFY %s, '%d'", channel, n);
	struct store_conn *c = store_acquire(st);
	PQclear(store_exec_sql(c, sql, false, 0, NULL, &rc));
	store_release(st, c);
	assert_int_equal(rc, STORE_OK);
}

/* Waits until pred holds (h->mu held while it is evaluated) or timeout_us passes. */
static bool wait_until(struct heard *h, bool (*pred)(struct heard *, int), int arg,
		       int64_t timeout_us)
{
	int64_t deadline = mono_usec() + timeout_us;
	bool ok;

	pthread_mutex_lock(&h->mu);
	while (!(ok = pred(h, arg)) && mono_usec() < deadline) {
		pthread_mutex_unlock(&h->mu);
		usleep(1000);
		pthread_mutex_lock(&h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	return ok;
}

static bool is_up(struct heard *h, int arg)
{
	(void)arg;
	return h->up;
}

static bool heard_n(struct heard *h, int n)
{
	return h->last == n;
}

static bool fences_n(struct heard *h, int n)
{
	return h->fences_ok >= n;
}

#define HEARD_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, 0, 0, 0 }

static void a_notification_sent_around_a_fence_is_handed_over_at_once(void **state)
{
	struct listen_hub *hub = listen_hub_start(fx.conninfo);
	struct heard h = HEARD_INIT;
	struct listen_sub *sub = listen_hub_subscribe(hub, "t_hub", &ops, &h);
	int64_t slowest = 0;

	(void)state;
	assert_true(wait_until(&h, is_up, 0, 5000000));
	/* A fence, and a notification sent while it is out or just back.
	 * Nothing else is sent meanwhile: a notification the hub left unread
	 * would wait for its next check, 2 s later. */
	for (int i = 1; i <= 60; i++) {
		struct listen_fence f;
		listen_hub_fence(hub, &f, fenced, &h);
		notify("t_hub", i);
		int64_t t0 = mono_usec();
		assert_true(wait_until(&h, heard_n, i, 5000000));
		int64_t took = mono_usec() - t0;
		if (took > slowest)
			slowest = took;
		assert_true(wait_until(&h, fences_n, i, 5000000));
	}
	if (slowest > 500000)
		fail_msg("a notification was handed over %lld ms after its commit",
			 (long long)(slowest / 1000));
	listen_hub_unsubscribe(hub, sub);
	listen_hub_stop(hub);
}

static void a_fence_completes_after_what_was_notified_before_it(void **state)
{
	struct listen_hub *hub = listen_hub_start(fx.conninfo);
	struct heard h = HEARD_INIT, other = HEARD_INIT;
	struct listen_sub *sub = listen_hub_subscribe(hub, "t_hub", &ops, &h);
	struct listen_sub *sub2 = listen_hub_subscribe(hub, "t_other", &ops, &other);

	(void)state;
	assert_true(wait_until(&h, is_up, 0, 5000000));
	assert_true(wait_until(&other, is_up, 0, 5000000));
	for (int i = 1; i <= 50; i++) {
		struct listen_fence f;
		notify("t_hub", 1000 + i);
		h.fences_ok = 0;
		listen_hub_fence(hub, &f, fenced, &h);
		assert_true(wait_until(&h, fences_n, 1, 5000000));
		pthread_mutex_lock(&h.mu);
		assert_int_equal(h.last_at_fence, 1000 + i);	/* heard before its fence came back */
		pthread_mutex_unlock(&h.mu);
	}
	assert_int_equal(other.count, 0);	/* its channel only */
	listen_hub_unsubscribe(hub, sub);
	listen_hub_unsubscribe(hub, sub2);
	listen_hub_stop(hub);
}

static int setup(void **state)
{
	(void)state;
	if (pg_fixture_start(&fx, "hub", 2))
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
		cmocka_unit_test(a_notification_sent_around_a_fence_is_handed_over_at_once),
		cmocka_unit_test(a_fence_completes_after_what_was_notified_before_it),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
