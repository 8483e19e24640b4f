/*
 * Integration tests: a replica's container with a real podman, start to
 * end (agent/runtime_container.c): its output and exit code, its env and
 * labels, and a missing image. (Stops and restarts:
 * test_agent_podman_stop.c.) The set-up: podman_fixture.h.
 */
#include "podman_fixture.h"

static void podman__echo_gives_its_log_line_and_exit_code(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "sh", "-c", NULL };
	const char *args[] = { "echo hello-from-container $GREETING; echo to-stderr >&2; exit 4",
			       NULL };
	const char *env[] = { "GREETING=hi", "CUDA_VISIBLE_DEVICES=1", NULL };
	struct replica *r = start(f, "pod-echo", IMAGE, cmd, args, env);
	char *name = container_of("pod-echo");
	assert_int_equal(r->state, REPLICA_STARTING);
	assert_string_equal(r->container, name);
	assert_true(test_wait_end(&f->cfg, r, 30000));
	assert_int_equal(r->state, REPLICA_EXITED);
	assert_int_equal(r->exit_code, 4);
	char *logs = test_logs(r);
	assert_non_null(strstr(logs, "stdout:hello-from-container hi\n"));
	assert_non_null(strstr(logs, "stderr:to-stderr\n"));
	free(logs);
	/* The container stays until the server has recorded the end. */
	assert_true(container_exists(name));
	free(name);
	forget(f, r);
}

static void podman__env_and_labels_reach_the_container(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "env", NULL };
	const char *env[] = { "TF_CONFIG={\"task\":{\"index\":1}}", NULL };
	struct replica *r = start(f, "pod-env", IMAGE, cmd, NULL, env);
	assert_true(test_wait_end(&f->cfg, r, 30000));
	assert_int_equal(r->exit_code, 0);
	char *logs = test_logs(r);
	assert_non_null(strstr(logs, "stdout:TF_CONFIG={\"task\":{\"index\":1}}\n"));
	assert_non_null(strstr(logs, "stdout:NVIDIA_VISIBLE_DEVICES=void\n"));
	free(logs);
	struct strbuf out = STRBUF_INIT;
	char *name = container_of("pod-env"), *label = replica_id("pod-env");
	char *want = xasprintf("%s\n", label);
	char *argv[] = { (char *)"podman", (char *)"inspect", (char *)"--format",
			 (char *)"{{index .Config.Labels \"trainplane.replica\"}}", name, NULL };
	assert_int_equal(run_command(argv, &out, NULL, 20000), 0);
	assert_string_equal(sb_str(&out), want);
	free(name);
	free(label);
	free(want);
	sb_release(&out);
	forget(f, r);
}

static void podman__missing_image_fails_to_start(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "sh", "-c", ":", NULL };
	struct replica *r = start(f, "pod-noimage", "localhost/no-such-image:never", cmd, NULL,
				  NULL);
	assert_true(test_wait_end(&f->cfg, r, 30000));
	assert_int_equal(r->state, REPLICA_FAILED_TO_START);
	assert_non_null(strstr(r->message, "podman run failed"));
	forget(f, r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(podman__echo_gives_its_log_line_and_exit_code, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__env_and_labels_reach_the_container, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__missing_image_fails_to_start, setup, teardown),
	};
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
