/*
 * Unit tests: the node's lease (agent/lease.c): the deadline counted from
 * the send, the lease file (round trip, none, garbled, another boot), and
 * the supervisors' fence as a state machine over that file: never without
 * a file, SIGTERM at the deadline and SIGKILL at deadline + grace, nothing
 * when renewed in time or with keep_running, SIGKILL by deadline + grace
 * even when woken late, and the last deadline kept when the file goes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures/agent/agent_test.h"
#include "lease.h"

#define S 1000000LL	/* one second in usec */

struct fx {
	char *dir;
	char *path;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	f->dir = test_tmpdir();
	f->path = xasprintf("%s/lease", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	test_rm_rf(f->dir);
	free(f->dir);
	free(f->path);
	free(f);
	return 0;
}

static void put(struct fx *f, int64_t deadline, int grace, bool fence)
{
	struct lease l = { deadline, grace, fence };
	assert_int_equal(lease_write(f->path, &l), 0);
}

static void put_text(struct fx *f, const char *text)
{
	FILE *file = fopen(f->path, "w");
	assert_non_null(file);
	fputs(text, file);
	fclose(file);
}

static void lease__counts_from_the_send_and_expires_at_its_end(void **state)
{
	(void)state;
	int64_t sent = lease_clock_usec();
	struct lease l = { lease_deadline(sent, 30), 10, true };
	assert_true(l.deadline_usec == sent + 30 * S);
	assert_false(lease_expired(&l, sent + 30 * S - 1));
	assert_true(lease_expired(&l, sent + 30 * S));
	struct lease none = { 0, 10, true };
	assert_false(lease_expired(&none, INT64_MAX));	/* no lease known: nothing to expire */
	/* CLOCK_BOOTTIME moves on. */
	int64_t a = lease_clock_usec();
	test_sleep_ms(20);
	assert_true(lease_clock_usec() - a >= 15000);
}

static void lease__file_round_trip_and_bad_files(void **state)
{
	struct fx *f = *state;
	struct lease l;

	assert_int_equal(lease_read(f->path, &l), 0);	/* none */
	put(f, 123456789, 7, true);
	assert_int_equal(lease_read(f->path, &l), 1);
	assert_true(l.deadline_usec == 123456789);
	assert_int_equal(l.grace_s, 7);
	assert_true(l.fence);
	put(f, 5, 0, false);
	assert_int_equal(lease_read(f->path, &l), 1);
	assert_false(l.fence);

	/* Garbled: unusable, and counts as long expired. */
	put_text(f, "trainplane-lease 1 notanumber 3 fence x\n");
	assert_int_equal(lease_read(f->path, &l), -1);
	assert_true(lease_expired(&l, 2));
	put_text(f, "");
	assert_int_equal(lease_read(f->path, &l), -1);
	assert_true(lease_expired(&l, 2));

	/* Another boot: its clock is not ours. */
	char *text = xasprintf("trainplane-lease 1 %lld 3 fence 00000000-0000-0000-0000-000000000000\n",
			       (long long)(lease_clock_usec() + 3600 * S));
	put_text(f, text);
	free(text);
	assert_int_equal(lease_read(f->path, &l), -1);
	assert_true(lease_expired(&l, lease_clock_usec()));
}

static void fence__no_path_or_no_file_never_fences(void **state)
{
	struct fx *f = *state;
	int64_t next;
	struct lease_fence none = { .path = NULL };
	assert_int_equal(lease_fence_step(&none, INT64_MAX / 2, &next), FENCE_NONE);
	assert_true(next == INT64_MAX);

	struct lease_fence fence = { .path = f->path };
	for (int64_t t = 1; t < 100 * S; t += 7 * S)
		assert_int_equal(lease_fence_step(&fence, t, &next), FENCE_NONE);
}

static void fence__sigterm_at_the_deadline_then_sigkill_after_the_grace(void **state)
{
	struct fx *f = *state;
	int64_t d = 1000 * S, next;
	struct lease_fence fence = { .path = f->path };

	put(f, d, 3, true);
	assert_int_equal(lease_fence_step(&fence, d - 5 * S, &next), FENCE_NONE);
	assert_true(next <= d - 4 * S);	/* re-read within a second */
	assert_int_equal(lease_fence_step(&fence, d - 1, &next), FENCE_NONE);
	assert_true(next == d);		/* woken exactly at the deadline */
	assert_int_equal(lease_fence_step(&fence, d, &next), FENCE_TERM);
	assert_true(next == d + 3 * S);
	assert_int_equal(lease_fence_step(&fence, d + 3 * S - 1, &next), FENCE_NONE);
	/* A renewal now comes too late: SIGTERM was sent, nothing undoes it. */
	put(f, d + 100 * S, 3, true);
	assert_int_equal(lease_fence_step(&fence, d + 3 * S, &next), FENCE_KILL);
	assert_int_equal(lease_fence_step(&fence, d + 4 * S, &next), FENCE_NONE);
	assert_true(next == INT64_MAX);
}

static void fence__renewed_in_time_or_keep_running_never_fences(void **state)
{
	struct fx *f = *state;
	int64_t d = 1000 * S, next;
	struct lease_fence fence = { .path = f->path };

	put(f, d, 1, true);
	assert_int_equal(lease_fence_step(&fence, d - S / 2, &next), FENCE_NONE);
	put(f, d + 10 * S, 1, true);	/* the agent's next answered sync */
	assert_int_equal(lease_fence_step(&fence, d, &next), FENCE_NONE);
	assert_int_equal(lease_fence_step(&fence, d + 9 * S, &next), FENCE_NONE);

	/* keep_running: past the deadline, nothing. */
	put(f, d + 10 * S, 1, false);
	for (int64_t t = d + 10 * S; t < d + 60 * S; t += S / 2)
		assert_int_equal(lease_fence_step(&fence, t, &next), FENCE_NONE);
	/* ... and the file is read once a second, not at every wake-up. */
	int64_t t = d + 60 * S;
	assert_int_equal(lease_fence_step(&fence, t, &next), FENCE_NONE);
	assert_true(next == t + S);
	put(f, d + 10 * S, 1, true);	/* a switch to fence is seen at the next read */
	assert_int_equal(lease_fence_step(&fence, t + S / 2, &next), FENCE_NONE);
	assert_int_equal(lease_fence_step(&fence, t + S, &next), FENCE_TERM);
}

static void fence__woken_late_kills_by_deadline_plus_grace(void **state)
{
	struct fx *f = *state;
	int64_t d = 1000 * S, next;
	struct lease_fence fence = { .path = f->path };

	put(f, d, 2, true);
	assert_int_equal(lease_fence_step(&fence, d - S, &next), FENCE_NONE);
	/* A supervisor that could not run for a while (a loaded host). */
	assert_int_equal(lease_fence_step(&fence, d + 5 * S, &next), FENCE_TERM);
	assert_true(next == d + 5 * S);	/* at once: the grace was over already */
	assert_int_equal(lease_fence_step(&fence, d + 5 * S, &next), FENCE_KILL);
}

static void fence__a_removed_file_keeps_the_last_deadline(void **state)
{
	struct fx *f = *state;
	int64_t d = 1000 * S, next;
	struct lease_fence fence = { .path = f->path };

	put(f, d, 0, true);
	assert_int_equal(lease_fence_step(&fence, d - S, &next), FENCE_NONE);
	assert_int_equal(unlink(f->path), 0);
	assert_int_equal(lease_fence_step(&fence, d - 1, &next), FENCE_NONE);
	assert_int_equal(lease_fence_step(&fence, d, &next), FENCE_TERM);
	assert_int_equal(lease_fence_step(&fence, d, &next), FENCE_KILL);	/* grace 0 */

	/* A garbled file is no lease to trust: fenced at once. */
	struct lease_fence other = { .path = f->path };
	put_text(f, "garbage\n");
	assert_int_equal(lease_fence_step(&other, 5 * S, &next), FENCE_TERM);
}

int main(void)
{
	log_set_level(LOG_WARN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lease__counts_from_the_send_and_expires_at_its_end),
		cmocka_unit_test_setup_teardown(lease__file_round_trip_and_bad_files, setup, teardown),
		cmocka_unit_test_setup_teardown(fence__no_path_or_no_file_never_fences, setup, teardown),
		cmocka_unit_test_setup_teardown(fence__sigterm_at_the_deadline_then_sigkill_after_the_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(fence__renewed_in_time_or_keep_running_never_fences, setup, teardown),
		cmocka_unit_test_setup_teardown(fence__woken_late_kills_by_deadline_plus_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(fence__a_removed_file_keeps_the_last_deadline, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
