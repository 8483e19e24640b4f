/*
 * Unit tests: the agent's configuration (agent/agent_config.c): defaults
 * from the host, the YAML file, TRAINPLANE_AGENT_* overrides, and bad
 * values named by file, line and key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures/agent/agent_test.h"

extern char **environ;

static char path[64];

static void write_yaml(const char *text)
{
	strcpy(path, "/tmp/tp-agent-config-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int clean_env(void **state)
{
	(void)state;
	/* No TRAINPLANE_AGENT_* from the caller's shell may leak in. */
	for (int again = 1; again;) {
		again = 0;
		for (char **e = environ; *e; e++) {
			if (!strncmp(*e, "TRAINPLANE_AGENT_", 17)) {
				char *name = xstrndup(*e, strcspn(*e, "="));
				unsetenv(name);
				free(name);
				again = 1;
				break;
			}
		}
	}
	path[0] = '\0';
	return 0;
}

static int remove_file(void **state)
{
	if (path[0])
		unlink(path);
	return clean_env(state);
}

static void config__defaults_come_from_the_host(void **state)
{
	struct agent_config cfg;
	char err[512] = "", host[256] = "";
	(void)state;
	assert_int_equal(agent_config_load(&cfg, NULL, err, sizeof(err)), 0);
	gethostname(host, sizeof(host) - 1);
	assert_string_equal(cfg.server, "http://127.0.0.1:8080/");
	assert_string_equal(cfg.token, "trainplane-dev-token");
	assert_string_equal(cfg.node, host);
	assert_string_equal(cfg.address, "127.0.0.1");
	assert_int_equal(cfg.port_min, 21000);
	assert_int_equal(cfg.port_max, 21999);
	assert_int_equal(cfg.runtime, RUNTIME_PROCESS);
	assert_int_equal(cfg.stop_grace_seconds, 10);
	assert_string_equal(cfg.simulate_default, "run-2s-exit-0");
	assert_true(cfg.vcpus >= 1);
	assert_true(cfg.memory_mb >= 64);
	char *wd = xasprintf("./var/agent-%s", host);
	assert_string_equal(cfg.work_dir, wd);
	free(wd);
	assert_null(cfg.gpu_type);
	assert_null(cfg.tpu_type);
	assert_null(cfg.container_engine);
	agent_config_free(&cfg);
}

static void config__file_then_environment(void **state)
{
	struct agent_config cfg;
	char err[512] = "";
	(void)state;
	write_yaml("# a GPU node\n"
		   "server: http://10.0.0.1:8080\n"
		   "node: gpu-1\n"
		   "region: europe-west4\n"
		   "zone: europe-west4-a\n"
		   "machine_type: n1-standard-16\n"
		   "vcpus: 16\n"
		   "memory_mb: 61440\n"
		   "port_range: 30000-30099\n"
		   "runtime: podman\n"
		   "gpu_type: NVIDIA_TESLA_T4\n"
		   "gpu_count: 4\n"
		   "storage_root: /srv/gcs\n"
		   "work_dir: /tmp/x\n"
		   "container_extra_args: --cgroups=disabled --network=host\n"
		   "container_wrapper: unshare -m sh -c 'exec \"$0\" \"$@\"'\n"
		   "stop_grace_seconds: 3\n");
	setenv("TRAINPLANE_AGENT_ZONE", "europe-west4-b", 1);
	setenv("TRAINPLANE_AGENT_STOP_GRACE_SECONDS", "5", 1);
	assert_int_equal(agent_config_load(&cfg, path, err, sizeof(err)), 0);
	assert_string_equal(cfg.server, "http://10.0.0.1:8080");
	assert_string_equal(cfg.node, "gpu-1");
	assert_string_equal(cfg.region, "europe-west4");
	assert_string_equal(cfg.zone, "europe-west4-b");
	assert_string_equal(cfg.machine_type, "n1-standard-16");
	assert_int_equal(cfg.vcpus, 16);
	assert_int_equal(cfg.memory_mb, 61440);
	assert_int_equal(cfg.port_min, 30000);
	assert_int_equal(cfg.port_max, 30099);
	assert_int_equal(cfg.runtime, RUNTIME_PODMAN);
	assert_string_equal(cfg.container_engine, "podman");
	assert_string_equal(cfg.gpu_type, "NVIDIA_TESLA_T4");
	assert_int_equal(cfg.gpu_count, 4);
	assert_string_equal(cfg.storage_root, "/srv/gcs");
	assert_string_equal(cfg.container_extra_args, "--cgroups=disabled --network=host");
	assert_string_equal(cfg.container_wrapper, "unshare -m sh -c 'exec \"$0\" \"$@\"'");
	assert_int_equal(cfg.stop_grace_seconds, 5);
	agent_config_free(&cfg);
}

static void config__tpu_host(void **state)
{
	struct agent_config cfg;
	char err[512] = "";
	(void)state;
	setenv("TRAINPLANE_AGENT_TPU_TYPE", "TPU_V2", 1);
	setenv("TRAINPLANE_AGENT_RUNTIME", "docker", 1);
	assert_int_equal(agent_config_load(&cfg, NULL, err, sizeof(err)), 0);
	assert_string_equal(cfg.tpu_type, "TPU_V2");
	assert_int_equal(cfg.tpu_cores, 8);
	assert_string_equal(cfg.container_engine, "docker");
	agent_config_free(&cfg);
}

/* Loads yaml (NULL: none) and expects a failure whose message holds each of want. */
static void expect_error(const char *yaml, const char *const *want)
{
	struct agent_config cfg;
	char err[512] = "";
	if (yaml)
		write_yaml(yaml);
	assert_int_equal(agent_config_load(&cfg, yaml ? path : NULL, err, sizeof(err)), -1);
	for (size_t i = 0; want[i]; i++) {
		if (!strstr(err, want[i]))
			fail_msg("'%s' not in '%s'", want[i], err);
	}
	agent_config_free(&cfg);
	if (yaml) {
		unlink(path);
		path[0] = '\0';
	}
}

static void config__bad_values_name_file_line_and_key(void **state)
{
	(void)state;
	expect_error("node: a\nruntime: kubernetes\n",
		     (const char *[]){ path, ":2:", "'runtime'", "process, podman", NULL });
	expect_error("port_range: 2000-1000\n",
		     (const char *[]){ ":1:", "'port_range'", "LOW-HIGH", NULL });
	expect_error("port_range: 80\n", (const char *[]){ "'port_range'", NULL });
	expect_error("\n\ngpu_type: NVIDIA_TESLA_T5\ngpu_count: 1\n",
		     (const char *[]){ ":3:", "'gpu_type'", "unknown GPU type", NULL });
	expect_error("tpu_type: TPU_V9\n", (const char *[]){ "'tpu_type'", NULL });
	expect_error("gpu_count: 100\n", (const char *[]){ "'gpu_count'", "out of range", NULL });
	expect_error("gpu_count: 2\n", (const char *[]){ "'gpu_count'", "without 'gpu_type'", NULL });
	expect_error("vcpus: many\n", (const char *[]){ "'vcpus'", "not an integer", NULL });
	expect_error("stop_grace: 3\n", (const char *[]){ ":1:", "unknown key 'stop_grace'", NULL });
	expect_error("server: 127.0.0.1:8080\n", (const char *[]){ "'server'", "http://", NULL });
	expect_error("simulate_default: run-forever\n",
		     (const char *[]){ "'simulate_default'", "run-<N>s-exit-<C>", NULL });
	expect_error("log_level: loud\n", (const char *[]){ "'log_level'", NULL });
	expect_error("node: a/b\n", (const char *[]){ "'node'", "letters, digits", NULL });
	expect_error("extra: [1, 2]\n", (const char *[]){ "unknown key 'extra'", NULL });
	expect_error("gpu_type: NVIDIA_TESLA_T4\ngpu_count: 1\ntpu_type: TPU_V2\n",
		     (const char *[]){ "'tpu_type'", "no GPUs", NULL });
	setenv("TRAINPLANE_AGENT_STOP_GRACE_SECONDS", "-1", 1);
	expect_error(NULL, (const char *[]){ "TRAINPLANE_AGENT_STOP_GRACE_SECONDS", "out of range",
					     NULL });
	unsetenv("TRAINPLANE_AGENT_STOP_GRACE_SECONDS");
}

static void config__relative_paths_are_under_base_dir(void **state)
{
	struct agent_config cfg;
	char err[512] = "";
	(void)state;
	write_yaml("node: gpu-1\nwork_dir: agent-gpu-1\nstorage_root: ./gcs\n");
	setenv("TRAINPLANE_AGENT_BASE_DIR", "/tmp/", 1);
	assert_int_equal(agent_config_load(&cfg, path, err, sizeof(err)), 0);
	assert_string_equal(cfg.work_dir, "/tmp/agent-gpu-1");
	assert_string_equal(cfg.storage_root, "/tmp/gcs");
	assert_string_equal(cfg.foreign_replicas, "leave");
	assert_false(cfg.remove_foreign);
	agent_config_free(&cfg);
	/* Absolute paths stay; the default work dir goes under base_dir too. */
	setenv("TRAINPLANE_AGENT_STORAGE_ROOT", "/srv/gcs", 1);
	setenv("TRAINPLANE_AGENT_FOREIGN_REPLICAS", "remove", 1);
	assert_int_equal(agent_config_load(&cfg, NULL, err, sizeof(err)), 0);
	assert_string_equal(cfg.storage_root, "/srv/gcs");
	assert_non_null(strstr(cfg.work_dir, "/tmp/var/agent-"));
	assert_true(cfg.remove_foreign);
	agent_config_free(&cfg);
	/* Without base_dir, relative paths are the working directory's. */
	unsetenv("TRAINPLANE_AGENT_BASE_DIR");
	assert_int_equal(agent_config_load(&cfg, path, err, sizeof(err)), 0);
	assert_string_equal(cfg.work_dir, "agent-gpu-1");
	agent_config_free(&cfg);
	expect_error("base_dir: /nonexistent/state\n",
		     (const char *[]){ "'base_dir'", "not a directory", NULL });
	expect_error("foreign_replicas: adopt\n",
		     (const char *[]){ "'foreign_replicas'", "leave or remove", NULL });
}

static void config__missing_file_is_an_error(void **state)
{
	struct agent_config cfg;
	char err[512] = "";
	(void)state;
	assert_int_equal(agent_config_load(&cfg, "/nonexistent/agent.yaml", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/agent.yaml"));
	agent_config_free(&cfg);
}

static void config__port_range_and_runtime_parsers(void **state)
{
	int lo, hi;
	enum agent_runtime rt;
	(void)state;
	assert_int_equal(agent_parse_port_range("1-65535", &lo, &hi), 0);
	assert_int_equal(lo, 1);
	assert_int_equal(hi, 65535);
	assert_int_equal(agent_parse_port_range("5-5", &lo, &hi), 0);
	assert_int_equal(agent_parse_port_range("0-5", &lo, &hi), -1);
	assert_int_equal(agent_parse_port_range("5-70000", &lo, &hi), -1);
	assert_int_equal(agent_parse_port_range("5-", &lo, &hi), -1);
	assert_int_equal(agent_parse_port_range("a-b", &lo, &hi), -1);
	assert_int_equal(agent_parse_port_range("1-2-3", &lo, &hi), -1);
	assert_int_equal(agent_runtime_parse("simulate", &rt), 0);
	assert_int_equal(rt, RUNTIME_SIMULATE);
	assert_int_equal(agent_runtime_parse("Process", &rt), -1);
	assert_string_equal(agent_runtime_name(RUNTIME_DOCKER), "docker");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(config__defaults_come_from_the_host, clean_env, remove_file),
		cmocka_unit_test_setup_teardown(config__file_then_environment, clean_env, remove_file),
		cmocka_unit_test_setup_teardown(config__tpu_host, clean_env, remove_file),
		cmocka_unit_test_setup_teardown(config__bad_values_name_file_line_and_key, clean_env, remove_file),
		cmocka_unit_test_setup_teardown(config__relative_paths_are_under_base_dir, clean_env, remove_file),
		cmocka_unit_test_setup_teardown(config__missing_file_is_an_error, clean_env, remove_file),
		cmocka_unit_test_setup_teardown(config__port_range_and_runtime_parsers, clean_env, remove_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
