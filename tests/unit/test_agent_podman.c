/*
 * Unit tests: the container runtime with a real podman (agent/
 * runtime_container.c), with the configuration this machine needs
 * (/work/shared/ENVIRONMENT.md): a busybox image imported as
 * localhost/trainer:test (built here when missing), the `unshare -m`
 * wrapper and --cgroups=disabled / --ulimit extra arguments.
 * Skipped, saying why, where podman cannot run a container.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures/agent/agent_test.h"
#include "shim.h"

#define IMAGE "localhost/trainer:test"
#define WRAPPER "unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec \"$0\" \"$@\"'"
#define EXTRA "--cgroups=disabled --network=host --ulimit nofile=20000:20000 --ulimit nproc=4096:4096"

static const char *skip_reason;

static int sh(const char *cmd)
{
	char *full = xasprintf("%s >/dev/null 2>&1", cmd);
	int rc = system(full);
	free(full);
	return rc;
}

static int group_setup(void **state)
{
	(void)state;
	if (sh("command -v podman")) {
		skip_reason = "podman is not installed";
		return 0;
	}
	if (sh("podman image exists " IMAGE)) {
		if (sh("test -x /bin/busybox")) {
			skip_reason = "no " IMAGE " and no /bin/busybox to build it";
			return 0;
		}
		/* ENVIRONMENT.md's recipe: a busybox rootfs imported as a local image. */
		if (sh("set -e; d=$(mktemp -d); mkdir -p $d/rootfs/bin; cp /bin/busybox $d/rootfs/bin/;"
		       " for c in sh echo sleep cat env; do ln -sf busybox $d/rootfs/bin/$c; done;"
		       " tar -C $d/rootfs -cf $d/rootfs.tar .; podman import $d/rootfs.tar " IMAGE ";"
		       " rm -rf $d")) {
			skip_reason = "cannot import " IMAGE;
			return 0;
		}
	}
	if (sh(WRAPPER " podman run --rm " EXTRA " " IMAGE " sh -c :")) {
		skip_reason = "podman cannot run a container here";
		return 0;
	}
	return 0;
}

struct fx {
	char *dir;
	struct agent_config cfg;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	f->dir = test_tmpdir();
	test_config(&f->cfg, f->dir, RUNTIME_PODMAN);
	f->cfg.container_engine = xstrdup("podman");
	f->cfg.container_wrapper = xstrdup(WRAPPER);
	f->cfg.container_extra_args = xstrdup(EXTRA);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	test_rm_rf(f->dir);
	free(f->dir);
	agent_config_free(&f->cfg);
	free(f);
	return 0;
}

#define NEED_PODMAN() do { \
	if (skip_reason) { \
		fprintf(stderr, "SKIP: %s\n", skip_reason); \
		skip(); \
	} } while (0)

static struct replica *start(struct fx *f, const char *id, const char *image,
			     const char *const *command, const char *const *args,
			     const char *const *env)
{
	struct desired_replica d;
	struct replica *r = replica_new(f->dir, id, 1, RUNTIME_PODMAN);
	test_desired(&d, id, 1, command, args, env);
	d.image = xstrdup(image);
	d.job = xstrdup("projects/p/jobs/j");
	runtime_start(&f->cfg, r, &d);
	desired_replica_release(&d);
	return r;
}

static bool container_exists(const char *name)
{
	char *cmd = xasprintf("podman container exists %s", name);
	bool yes = sh(cmd) == 0;
	free(cmd);
	return yes;
}

static void forget(struct fx *f, struct replica *r)
{
	char *name = r->container ? xstrdup(r->container) : NULL;
	runtime_forget(&f->cfg, r);
	replica_free(r);
	if (name)
		assert_false(container_exists(name));
	free(name);
}

static void podman__echo_gives_its_log_line_and_exit_code(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "sh", "-c", NULL };
	const char *args[] = { "echo hello-from-container $GREETING; echo to-stderr >&2; exit 4",
			       NULL };
	const char *env[] = { "GREETING=hi", "CUDA_VISIBLE_DEVICES=1", NULL };
	struct replica *r = start(f, "pod-echo", IMAGE, cmd, args, env);
	assert_int_equal(r->state, RS_STARTING);
	assert_string_equal(r->container, "tp-pod-echo-1");
	assert_true(test_wait_end(&f->cfg, r, 30000));
	assert_int_equal(r->state, RS_EXITED);
	assert_int_equal(r->exit_code, 4);
	char *logs = test_logs(r);
	assert_non_null(strstr(logs, "stdout:hello-from-container hi\n"));
	assert_non_null(strstr(logs, "stderr:to-stderr\n"));
	free(logs);
	/* The container stays until the server has recorded the end. */
	assert_true(container_exists("tp-pod-echo-1"));
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
	char *argv[] = { "podman", "inspect", "--format",
			 "{{index .Config.Labels \"trainplane.replica\"}}", "tp-pod-env-1", NULL };
	assert_int_equal(run_command(argv, &out, NULL, 20000), 0);
	assert_string_equal(sb_str(&out), "pod-env\n");
	sb_release(&out);
	forget(f, r);
}

static void podman__stop_ends_it_within_the_grace(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	f->cfg.stop_grace_seconds = 1;
	const char *cmd[] = { "sleep", "1000", NULL };
	struct replica *r = start(f, "pod-sleep", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 300 && r->state == RS_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	assert_int_equal(r->state, RS_RUNNING);
	runtime_stop(&f->cfg, r);
	assert_true(test_wait_end(&f->cfg, r, 20000));
	assert_int_equal(r->state, RS_EXITED);
	/* sleep as PID 1 ignores SIGTERM: the engine's SIGKILL after 1 s. */
	assert_true(r->exit_code == 137 || r->exit_code == 143);
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
	assert_int_equal(r->state, RS_FAILED_TO_START);
	assert_non_null(strstr(r->message, "podman run failed"));
	forget(f, r);
}

static void podman__exit_code_and_logs_survive_an_agent_restart(void **state)
{
	struct fx *f = *state;
	NEED_PODMAN();
	const char *cmd[] = { "sh", "-c", "echo first; sleep 1; echo second; exit 5", NULL };
	struct replica *r = start(f, "pod-restart", IMAGE, cmd, NULL, NULL);
	for (int i = 0; i < 300 && r->state == RS_STARTING; i++) {
		runtime_poll(&f->cfg, r);
		test_sleep_ms(50);
	}
	assert_int_equal(r->state, RS_RUNNING);
	replica_free(r);	/* agent down */
	test_sleep_ms(1800);

	struct replica *list = NULL;
	assert_int_equal(runtime_adopt_all(&f->cfg, NULL, &list, NULL), 1);
	assert_true(test_wait_end(&f->cfg, list, 10000));
	assert_int_equal(list->state, RS_EXITED);
	assert_int_equal(list->exit_code, 5);
	char *logs = test_logs(list);
	assert_non_null(strstr(logs, "stdout:first\nstdout:second\n"));
	free(logs);
	forget(f, list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(podman__echo_gives_its_log_line_and_exit_code, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__env_and_labels_reach_the_container, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__stop_ends_it_within_the_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__missing_image_fails_to_start, setup, teardown),
		cmocka_unit_test_setup_teardown(podman__exit_code_and_logs_survive_an_agent_restart, setup, teardown),
	};
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
