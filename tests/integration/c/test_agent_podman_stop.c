/*
 * Integration tests: stopping and losing sight of a replica's container
 * with a real podman (agent/runtime_container.c): a stop within the grace,
 * an agent restart while it runs (its exit code and logs survive), and a
 * container removed under its supervisor.
 * The set-up: podman_fixture.h.
 */
#include "podman_fixture.h"

static void podman__stop_ends_it_within_the_grace(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	f->cfg.stop_grace_seconds = 1;
	const char *cmd[] = { "sleep", "1000", NULL };
	struct replica *r = start(f, "pod-sleep", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 300 && r->state == REPLICA_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	assert_int_equal(r->state, REPLICA_RUNNING);
	runtime_stop(&f->cfg, r);
	assert_true(test_wait_end(&f->cfg, r, 20000));
	assert_int_equal(r->state, REPLICA_EXITED);
	/* sleep as PID 1 ignores SIGTERM: the engine's SIGKILL after 1 s. */
	assert_true(r->exit_code == 137 || r->exit_code == 143);
	forget(f, r);
}

static void podman__exit_code_and_logs_survive_an_agent_restart(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "sh", "-c", "echo first; sleep 1; echo second; exit 5", NULL };
	struct replica *r = start(f, "pod-restart", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 300 && r->state == REPLICA_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	assert_int_equal(r->state, REPLICA_RUNNING);
	char *name = xstrdup(r->container);
	replica_free(r);	/* agent down */
	/* The container ends while the agent is down (by podman's record, not
	 * a fixed sleep that a loaded machine may outrun). */
	char *status = NULL;
	for (int waited = 0; waited < 30000; waited += 50) {
		free(status);
		status = inspect_field(name, "{{.State.Status}}");
		if (status && !strcmp(status, "exited"))
			break;
		test_sleep_ms(50);
	}
	if (!status || strcmp(status, "exited"))
		fail_msg("container %s: \"%s\" 30 s on", name, status ? status : "(none)");
	free(status);
	free(name);

	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_true(test_wait_end(&f->cfg, list, 10000));
	assert_int_equal(list->state, REPLICA_EXITED);
	assert_int_equal(list->exit_code, 5);
	char *logs = test_logs(list);
	assert_non_null(strstr(logs, "stdout:first\nstdout:second\n"));
	free(logs);
	forget(f, list);
}

/*
 * A supervisor whose container was removed ends, even when its replica's
 * directory went first (a work dir wiped by hand): it must not follow and
 * inspect a container that is gone for good.
 */
static void podman__the_supervisor_ends_when_its_container_is_removed(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "sleep", "1000", NULL };
	struct replica *r = start(f, "pod-removed", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 600 && r->state == REPLICA_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	if (r->state != REPLICA_RUNNING)
		fail_msg("state %s: %s", replica_state_name(r->state), r->message ? r->message : "-");
	pid_t shim = r->shim_pid;
	/* -t 0: a sleep as PID 1 ignores SIGTERM, and rm -f would wait the
	 * container's 10 s stop timeout for nothing before it kills. */
	char *rm = xasprintf("podman rm -f -t 0 %s", r->container);
	test_rm_rf(r->dir);
	replica_free(r);	/* the agent is gone too */
	assert_int_equal(sh(rm), 0);
	int waited = 0;
	while (waitpid(shim, NULL, WNOHANG) == 0 && waited < 20000) {
		test_sleep_ms(50);
		waited += 50;
	}
	if (waited >= 20000) {
		kill(shim, SIGKILL);
		waitpid(shim, NULL, 0);
		fail_msg("the supervisor outlived its container by 20 s");
	}
	free(rm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(podman__stop_ends_it_within_the_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__exit_code_and_logs_survive_an_agent_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__the_supervisor_ends_when_its_container_is_removed, setup, teardown),
	};
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
