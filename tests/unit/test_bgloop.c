/* Tests of the background loop (lib/bgloop.c) with sessions made of
 * eventfds: turns on wake-ups, deadlines and readiness; failed opens back
 * off, doubling to the max; a lost session is reopened at once unless it
 * died young; the stop lets busy work finish; the owner's clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "bgloop.h"
#include "common.h"

#define MS 1000

struct owner {
	pthread_mutex_t mu;
	struct bgloop *loop;
	bool open_fails;	/* open() returns -1 */
	bool no_fd;		/* open() returns BGLOOP_NO_FD */
	int fd;			/* the session's eventfd */
	int opens, closes, stop_closes, turns, readable;
	int64_t open_at[64];	/* mono_usec() of each open attempt */
	int64_t deadline_in;	/* > 0: the next turn's deadline, from now */
	int64_t dropped_at;	/* mono_usec() of the last drop */
	int busy_left;		/* turns that still say busy */
	bool drop;		/* the next turn drops the session */
};

static struct owner *owner_new(void)
{
	struct owner *o = xcalloc(1, sizeof(*o));
	pthread_mutex_init(&o->mu, NULL);
	o->fd = -1;
	return o;
}

static int fake_open(void *ctx, char *err, size_t errlen)
{
	struct owner *o = ctx;
	int fd = -1;

	pthread_mutex_lock(&o->mu);
	if (o->opens < 64)
		o->open_at[o->opens] = mono_usec();
	o->opens++;
	if (o->open_fails) {
		snprintf(err, errlen, "refused\nby the test");
	} else if (o->no_fd) {
		fd = BGLOOP_NO_FD;
	} else {
		fd = o->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	}
	pthread_mutex_unlock(&o->mu);
	return fd;
}

static void fake_close(void *ctx, const char *why)
{
	struct owner *o = ctx;

	pthread_mutex_lock(&o->mu);
	o->closes++;
	if (!why)
		o->stop_closes++;
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	pthread_mutex_unlock(&o->mu);
}

static void fake_turn(void *ctx, short revents, struct bgloop_wait *w)
{
	struct owner *o = ctx;
	uint64_t v;

	pthread_mutex_lock(&o->mu);
	o->turns++;
	if ((revents & POLLIN) && o->fd >= 0 && read(o->fd, &v, sizeof(v)) == sizeof(v))
		o->readable++;
	bool drop = o->drop;
	o->drop = false;
	if (o->deadline_in > 0)
		w->deadline_us = bgloop_now(o->loop) + o->deadline_in;
	if (o->busy_left > 0) {
		o->busy_left--;
		w->busy = true;
		w->deadline_us = 0;
	}
	w->events = POLLIN;
	pthread_mutex_unlock(&o->mu);
	if (drop) {
		pthread_mutex_lock(&o->mu);
		o->dropped_at = mono_usec();
		pthread_mutex_unlock(&o->mu);
		bgloop_drop(o->loop, "dropped by the test");
	}
}

static const struct bgloop_ops fake_ops = { fake_open, fake_close, fake_turn };

static int get(struct owner *o, const int *field)
{
	pthread_mutex_lock(&o->mu);
	int v = *field;
	pthread_mutex_unlock(&o->mu);
	return v;
}

/* Waits up to 2 s for *field to reach at least want. */
static void wait_for(struct owner *o, const int *field, int want, const char *what)
{
	for (int i = 0; i < 400; i++) {
		if (get(o, field) >= want)
			return;
		usleep(5 * MS);
	}
	fail_msg("%s: %d, not %d, after 2 s", what, get(o, field), want);
}

static void start(struct owner *o, bool eager, int64_t min_us, int64_t max_us)
{
	struct bgloop_config cfg = { "test loop", eager, min_us, max_us, NULL };
	bgloop_start(&cfg, &fake_ops, o, &o->loop);
}

static void stop(struct owner *o)
{
	bgloop_stop(o->loop);
	bgloop_free(o->loop);
	pthread_mutex_destroy(&o->mu);
	free(o);
}

static void a_turn_runs_when_woken_at_its_deadline_and_when_the_session_is_ready(void **state)
{
	struct owner *o = owner_new();

	(void)state;
	start(o, true, 20 * MS, 20 * MS);
	wait_for(o, &o->opens, 1, "opens");
	int turns = get(o, &o->turns);
	bgloop_wake(o->loop);
	wait_for(o, &o->turns, turns + 1, "turns after a wake-up");
	/* a deadline 50 ms away: a turn comes by itself */
	pthread_mutex_lock(&o->mu);
	o->deadline_in = 50 * MS;
	pthread_mutex_unlock(&o->mu);
	bgloop_wake(o->loop);
	usleep(20 * MS);
	turns = get(o, &o->turns);
	wait_for(o, &o->turns, turns + 2, "turns at their deadlines");
	/* the session's descriptor readable: a turn with POLLIN */
	pthread_mutex_lock(&o->mu);
	o->deadline_in = 0;
	uint64_t one = 1;
	assert_int_equal(write(o->fd, &one, sizeof(one)), sizeof(one));
	pthread_mutex_unlock(&o->mu);
	wait_for(o, &o->readable, 1, "turns that saw the session readable");
	stop(o);
}

static void failed_opens_back_off_doubling_to_the_max(void **state)
{
	struct owner *o = owner_new();

	(void)state;
	o->open_fails = true;
	start(o, true, 20 * MS, 80 * MS);
	usleep(700 * MS);
	pthread_mutex_lock(&o->mu);
	int n = o->opens < 64 ? o->opens : 64;
	/* waits of 10-20, 20-40, 40-80, then 40-80 ms: at most 19 opens in
	 * 700 ms (fewer on a loaded machine), never one sooner than half its step */
	assert_in_range(n, 4, 19);
	for (int i = 1; i < n; i++) {
		int64_t gap = o->open_at[i] - o->open_at[i - 1];
		int64_t step = i == 1 ? 20 * MS : i == 2 ? 40 * MS : 80 * MS;
		if (gap < step / 2 - MS)
			fail_msg("open %d came %lld us after the one before; its step is %lld us", i,
				 (long long)gap, (long long)step);
	}
	assert_int_equal(o->turns > 0, true);	/* it turns without a session too */
	pthread_mutex_unlock(&o->mu);
	/* the database is back: the next open succeeds and resets the backoff */
	pthread_mutex_lock(&o->mu);
	o->open_fails = false;
	int opens = o->opens;
	pthread_mutex_unlock(&o->mu);
	wait_for(o, &o->opens, opens + 1, "opens");
	usleep(20 * MS);
	assert_true(get(o, &o->fd) >= 0);
	stop(o);
}

static void a_lost_session_is_reopened_at_once_unless_it_died_young(void **state)
{
	struct owner *o = owner_new();

	(void)state;
	start(o, true, 100 * MS, 400 * MS);
	wait_for(o, &o->opens, 1, "opens");
	usleep(150 * MS);	/* older than backoff_min */
	pthread_mutex_lock(&o->mu);
	o->drop = true;
	pthread_mutex_unlock(&o->mu);
	bgloop_wake(o->loop);
	wait_for(o, &o->opens, 2, "opens after a drop");
	pthread_mutex_lock(&o->mu);
	int64_t at_once = o->open_at[1] - o->dropped_at;
	pthread_mutex_unlock(&o->mu);
	/* reopened at once (a backoff would wait 50 ms or more); now dropped
	 * young, before backoff_min: the next open waits 50-100 ms */
	assert_true(at_once < 40 * MS);
	pthread_mutex_lock(&o->mu);
	o->drop = true;
	pthread_mutex_unlock(&o->mu);
	bgloop_wake(o->loop);
	wait_for(o, &o->opens, 3, "opens after a young drop");
	pthread_mutex_lock(&o->mu);
	int64_t young = o->open_at[2] - o->dropped_at;
	assert_int_equal(o->closes, 2);
	pthread_mutex_unlock(&o->mu);
	assert_true(young >= 50 * MS - MS);
	stop(o);
}

static void the_stop_lets_busy_work_finish_then_closes(void **state)
{
	struct owner *o = owner_new();

	(void)state;
	start(o, false, 0, 0);	/* lazy: no session is opened by the loop */
	usleep(30 * MS);
	assert_int_equal(get(o, &o->opens), 0);
	pthread_mutex_lock(&o->mu);
	o->busy_left = 5;
	int turns = o->turns;
	pthread_mutex_unlock(&o->mu);
	struct bgloop *loop = o->loop;
	bgloop_stop(loop);	/* returns once the five busy turns are done */
	assert_int_equal(o->busy_left, 0);
	assert_true(o->turns >= turns + 5);
	assert_int_equal(o->closes, 0);	/* it never had a session */
	bgloop_wake(loop);	/* harmless until freed */
	bgloop_free(loop);
	pthread_mutex_destroy(&o->mu);
	free(o);
}

static void the_stop_closes_an_open_session(void **state)
{
	struct owner *o = owner_new();

	(void)state;
	o->no_fd = true;	/* a session with no descriptor to watch */
	start(o, true, 0, 0);
	wait_for(o, &o->opens, 1, "opens");
	usleep(20 * MS);
	assert_int_equal(get(o, &o->opens), 1);	/* it stays open */
	bgloop_stop(o->loop);
	assert_int_equal(o->stop_closes, 1);
	bgloop_free(o->loop);
	pthread_mutex_destroy(&o->mu);
	free(o);
}

static int64_t offset_us;
static int64_t moved_clock(void)
{
	return mono_usec() + __atomic_load_n(&offset_us, __ATOMIC_SEQ_CST);
}

static void deadlines_are_on_the_owners_clock(void **state)
{
	struct owner *o = owner_new();
	struct bgloop_config cfg = { "clock loop", false, 0, 0, moved_clock };

	(void)state;
	o->deadline_in = INT64_C(3600) * 1000000;	/* an hour of the owner's clock */
	bgloop_start(&cfg, &fake_ops, o, &o->loop);
	wait_for(o, &o->turns, 1, "turns");
	int64_t before = bgloop_now(o->loop);
	__atomic_store_n(&offset_us, INT64_C(3600) * 1000000, __ATOMIC_SEQ_CST);
	assert_true(bgloop_now(o->loop) - before >= INT64_C(3600) * 1000000);
	int turns = get(o, &o->turns);
	usleep(50 * MS);
	assert_int_equal(get(o, &o->turns), turns);	/* the hour has not passed for it yet */
	bgloop_wake(o->loop);	/* what a clock that moves does */
	wait_for(o, &o->turns, turns + 1, "turns after the clock moved");
	stop(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_turn_runs_when_woken_at_its_deadline_and_when_the_session_is_ready),
		cmocka_unit_test(failed_opens_back_off_doubling_to_the_max),
		cmocka_unit_test(a_lost_session_is_reopened_at_once_unless_it_died_young),
		cmocka_unit_test(the_stop_lets_busy_work_finish_then_closes),
		cmocka_unit_test(the_stop_closes_an_open_session),
		cmocka_unit_test(deadlines_are_on_the_owners_clock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
