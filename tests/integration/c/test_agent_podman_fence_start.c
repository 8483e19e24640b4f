/*
 * Integration tests: the fence of containers still being started (issue
 * 12), with a real podman behind a slow wrapper: a container created after
 * the agent died and its lease passed never runs, and a start in flight at
 * the deadline is abandoned.
 * The set-up: podman_fixture.h.
 */
#include "podman_fixture.h"

/*
 * Issue 12: the agent is killed while `create` (standing in for a pull)
 * runs, and the lease passes before it ends. Before the fix `run -d` went
 * on and the container ran with no fence at all: two masters. Now nothing
 * starts it: the container stays created, and a restarted agent past its
 * lease starts nothing either.
 */
static void podman__a_container_created_after_the_agent_died_never_runs(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	f->cfg.stop_grace_seconds = 1;
	free(slow_wrapper(f, "create|run", 4));
	int64_t deadline = set_lease(f, 1000, 1);
	const char *cmd[] = { "sh", "-c", "echo ran; sleep 1000", NULL };
	struct replica *r = start(f, "pod-slow-create", IMAGE, cmd, NULL, NULL);
	assert_int_equal(r->state, REPLICA_STARTING);
	char *name = xstrdup(r->container);
	pid_t engine = r->helper_pid;
	replica_free(r);	/* kill -9 of the agent: nobody polls */

	int st;
	for (int i = 0; i < 600 && waitpid(engine, &st, WNOHANG) == 0; i++)
		test_sleep_ms(50);
	int64_t created = lease_clock_usec();
	assert_true(created > deadline + 1000000);	/* the create ended past lease + grace */
	/* Watch it for a while: it must never be running. */
	while (lease_clock_usec() < created + 3000000) {
		char *status = inspect_field(name, "{{.State.Status}}");
		if (status && !strcmp(status, "running"))
			fail_msg("container %s runs %.1f s after the lease passed with no agent",
				 name, (double)(lease_clock_usec() - deadline) / 1e6);
		free(status);
		test_sleep_ms(100);
	}
	assert_never_ran(name);

	/* The agent comes back with its lease long gone: it starts nothing;
	 * the server's STOP (its replica moved elsewhere) ends it unstarted. */
	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	for (int i = 0; i < 10; i++) {
		runtime_poll(&f->cfg, list);
		test_sleep_ms(50);
	}
	assert_int_equal(list->state, REPLICA_STARTING);
	assert_never_ran(name);
	runtime_stop(&f->cfg, list);
	assert_true(test_wait_end(&f->cfg, list, 20000));
	assert_int_equal(list->state, REPLICA_EXITED);
	assert_never_ran(name);
	forget(f, list);
	free(name);
}

/*
 * `start` itself is slow (a slow storage driver, a loaded host) and the
 * lease passes while it is in flight with no agent: the supervisor that
 * runs it abandons it at the deadline, so the container never runs, and
 * the attempt is LOST.
 */
static void podman__a_start_in_flight_at_the_deadline_is_abandoned(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	f->cfg.stop_grace_seconds = 1;
	free(slow_wrapper(f, "start", 6));
	set_lease(f, 3600 * 1000, 1);
	const char *cmd[] = { "sh", "-c", "echo ran; sleep 1000", NULL };
	struct replica *r = start(f, "pod-slow-start", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 600 && r->state == REPLICA_STARTING && !r->shim_pid; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	/* Created; its supervisor is starting it (and sleeping in the wrapper). */
	assert_int_equal(r->state, REPLICA_STARTING);
	assert_true(r->shim_pid > 0);
	int64_t spawned = lease_clock_usec();
	char *name = xstrdup(r->container);
	pid_t shim = r->shim_pid;
	int64_t deadline = set_lease(f, 500, 1);
	replica_free(r);	/* the agent dies */
	for (int i = 0; i < 400 && waitpid(shim, NULL, WNOHANG) == 0; i++)
		test_sleep_ms(50);
	int64_t done = lease_clock_usec();
	fprintf(stderr, "the supervisor gave the start up and ended %.2f s after the deadline "
		"(grace 1 s)\n", (double)(done - deadline) / 1e6);
	/* Past the wrapper's 6 s: had the start not been abandoned, the engine
	 * would have started it by now. */
	while (lease_clock_usec() < spawned + 7000000)
		test_sleep_ms(100);
	assert_never_ran(name);

	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_true(test_wait_end(&f->cfg, list, 20000));
	assert_int_equal(list->state, REPLICA_EXITED);
	assert_true(list->fenced);	/* reported LOST: restarted elsewhere */
	assert_never_ran(name);
	forget(f, list);
	free(name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(podman__a_container_created_after_the_agent_died_never_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__a_start_in_flight_at_the_deadline_is_abandoned, setup, teardown),
	};
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
