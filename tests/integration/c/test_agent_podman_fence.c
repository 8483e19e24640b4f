/*
 * Integration tests: the fence of running containers with no agent around
 * (lease.h): the log follower stops a container when the lease passes,
 * even after the follower itself was killed; and a container created
 * while the agent restarted, within its lease, is started.
 * The set-up: podman_fixture.h.
 */
#include "podman_fixture.h"

/*
 * The fence with no agent around: the container's log follower stops it
 * when the lease passes (lease.h), and the engine kills it after the grace.
 */
static void podman__the_log_follower_fences_the_container_when_the_lease_passes(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	f->cfg.stop_grace_seconds = 1;
	f->cfg.lease_file = xasprintf("%s/lease", f->dir);
	struct lease l = { lease_clock_usec() + 3600 * 1000000LL, 1, true };
	assert_int_equal(lease_write(f->cfg.lease_file, &l), 0);
	const char *cmd[] = { "sleep", "1000", NULL };
	struct replica *r = start(f, "pod-fence", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 300 && r->state == REPLICA_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	assert_int_equal(r->state, REPLICA_RUNNING);
	char *name = xstrdup(r->container);
	replica_free(r);	/* agent down: nobody polls */
	l.deadline_usec = lease_clock_usec() + 300000;
	assert_int_equal(lease_write(f->cfg.lease_file, &l), 0);
	struct strbuf out = STRBUF_INIT;
	char *argv[] = { (char *)"podman", (char *)"inspect", (char *)"--format", (char *)"{{.State.Status}}", name, NULL };
	int64_t gone = 0;
	for (int i = 0; i < 200 && !gone; i++) {
		sb_release(&out);
		if (run_command(argv, &out, NULL, 20000) == 0 && strncmp(sb_str(&out), "running", 7))
			gone = lease_clock_usec();
		else
			test_sleep_ms(50);
	}
	sb_release(&out);
	assert_true(gone > 0);
	fprintf(stderr, "the fenced container was stopped %.2f s after the deadline (grace 1 s)\n",
		(double)(gone - l.deadline_usec) / 1e6);
	assert_true(gone - l.deadline_usec < 6000000);	/* grace 1 s plus the engine's own time */

	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_true(test_wait_end(&f->cfg, list, 20000));
	assert_int_equal(list->state, REPLICA_EXITED);
	assert_true(list->fenced);
	forget(f, list);
	free(name);
}

/*
 * The agent is gone and the container's log follower (`logs -f`) dies (an
 * engine restart does that): before the fix the fence went with it and the
 * container ran on past the lease. Now the supervisor follows the logs
 * again and still stops the container when the lease passes.
 */
static void podman__the_fence_outlives_a_killed_log_follower(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	f->cfg.stop_grace_seconds = 1;
	set_lease(f, 3600 * 1000, 1);
	/* PID 1 in the container: SIGTERM does nothing, only the kill ends it. */
	const char *cmd[] = { "sh", "-c", "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done",
			      NULL };
	struct replica *r = start(f, "pod-follower", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 600 && r->state == REPLICA_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	if (r->state != REPLICA_RUNNING)
		fail_msg("state %s: %s", replica_state_name(r->state), r->message ? r->message : "-");
	char *logpath = replica_path(r, "output.log");
	struct stat sb;
	for (int i = 0; i < 200 && (stat(logpath, &sb) || sb.st_size == 0); i++)
		test_sleep_ms(50);
	assert_true(sb.st_size > 0);
	char *name = xstrdup(r->container);
	pid_t shim = r->shim_pid;
	replica_free(r);	/* the agent dies */

	assert_true(test_signal_descendants(shim, SIGKILL) > 0);	/* and so does `logs -f` */
	stat(logpath, &sb);
	off_t at_kill = sb.st_size;
	test_sleep_ms(1000);
	int64_t deadline = set_lease(f, 1000, 1);
	int64_t deadline_wall = lease_to_wall(deadline);
	char *status = NULL;
	while (lease_clock_usec() < deadline + 15000000) {
		free(status);
		status = inspect_field(name, "{{.State.Status}}");
		if (status && strcmp(status, "running"))
			break;
		test_sleep_ms(100);
	}
	if (!status || !strcmp(status, "running"))
		fail_msg("container %s still runs %.1f s after the lease passed", name,
			 (double)(lease_clock_usec() - deadline) / 1e6);
	free(status);
	/* When it ended, by podman's own record. */
	char *fin = NULL;
	for (int i = 0; i < 100; i++) {
		free(fin);
		fin = inspect_field(name, "{{.State.Status}} {{.State.FinishedAt.UnixNano}}");
		if (fin && !strncmp(fin, "exited ", 7))
			break;
		test_sleep_ms(100);
	}
	long long fin_ns = 0;
	if (!fin || sscanf(fin, "exited %lld", &fin_ns) != 1 || fin_ns <= 0)
		fail_msg("container %s: %s", name, fin ? fin : "(no such container)");
	double after = (double)(fin_ns / 1000 - deadline_wall) / 1e6;
	fprintf(stderr, "follower killed, lease passed: the container ended %.2f s after the "
		"deadline (grace 1 s; the server waits 3 s)\n", after);
	assert_true(after > 0);		/* the fence, not something else, ended it */
	assert_true(after < 1 + 2);	/* within the grace and the server's 2 s margin */
	free(fin);
	/* The supervisor followed the logs again after the follower died. */
	stat(logpath, &sb);
	assert_true(sb.st_size > at_kill);

	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_true(test_wait_end(&f->cfg, list, 20000));
	assert_int_equal(list->state, REPLICA_EXITED);
	assert_true(list->fenced);
	forget(f, list);
	free(name);
	free(logpath);
}

/*
 * The agent is restarted while `create` runs, within its lease: the new
 * agent finds the created container and starts it (through a supervisor
 * that checks the lease first); its output and exit code arrive.
 */
static void podman__a_container_created_while_the_agent_restarted_is_started(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	free(slow_wrapper(f, "create", 2));
	set_lease(f, 3600 * 1000, 10);
	const char *cmd[] = { "sh", "-c", "echo started-late; exit 6", NULL };
	struct replica *r = start(f, "pod-adopt-create", IMAGE, cmd, NULL, NULL);
	pid_t engine = r->helper_pid;
	replica_free(r);	/* the agent restarts... */
	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_int_equal(list->state, REPLICA_STARTING);	/* ...while create runs */
	for (int i = 0; i < 600 && waitpid(engine, NULL, WNOHANG) == 0; i++) {
		runtime_poll(&f->cfg, list);
		test_sleep_ms(50);
	}
	assert_true(test_wait_end(&f->cfg, list, 30000));
	assert_int_equal(list->state, REPLICA_EXITED);
	assert_int_equal(list->exit_code, 6);
	assert_false(list->fenced);
	char *logs = test_logs(list);
	assert_non_null(strstr(logs, "stdout:started-late\n"));
	free(logs);
	forget(f, list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(podman__the_log_follower_fences_the_container_when_the_lease_passes, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__the_fence_outlives_a_killed_log_follower, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__a_container_created_while_the_agent_restarted_is_started, setup, teardown),
	};
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
