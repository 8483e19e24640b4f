/*
 * Unit tests: the agent's configuration (agent/agent_config.c): defaults
 * from the host, the YAML file, TRAINPLANE_AGENT_* overrides, bad values
 * named by file, line and key, and plain HTTP only to loopback unless
 * allow_insecure_http (checked again by the client at every connect).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures/agent/agent_test.h"
#include "../../agent/http.h"	/* (server/http.h comes first on the include path) */

extern char **environ;

static char path[64];

/*
 * Writes text to a new temporary file named in path. One file at a time: a
 * file still named there is removed first (a test that writes a second one,
 * e.g. through expect_error, would otherwise leave the first in /tmp); the
 * teardown (remove_file) removes the last, on failure too.
 */
static void write_yaml(const char *text)
{
	if (path[0])
		unlink(path);
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
	assert_false(cfg.allow_insecure_http);
	assert_false(cfg.server_insecure);	/* 127.0.0.1 */
	assert_string_equal(cfg.node, host);
	assert_string_equal(cfg.address, "127.0.0.1");
	assert_int_equal(cfg.port_min, 21000);
	assert_int_equal(cfg.port_max, 21999);
	assert_int_equal(cfg.runtime, RUNTIME_PROCESS);
	assert_int_equal(cfg.stop_grace_seconds, 10);
	assert_string_equal(cfg.disconnect_policy, "fence");	/* the safe default */
	assert_true(cfg.fence);
	char *lease = xasprintf("./var/agent-%s/lease", host);
	assert_string_equal(cfg.lease_file, lease);
	free(lease);
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
		   "allow_insecure_http: true\n"
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
	setenv("TRAINPLANE_AGENT_DISCONNECT_POLICY", "keep_running", 1);
	assert_int_equal(agent_config_load(&cfg, path, err, sizeof(err)), 0);
	assert_false(cfg.fence);
	assert_string_equal(cfg.lease_file, "/tmp/x/lease");
	assert_string_equal(cfg.server, "http://10.0.0.1:8080");
	assert_true(cfg.allow_insecure_http);
	assert_true(cfg.server_insecure);
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
	expect_error("disconnect_policy: never\n",
		     (const char *[]){ ":1:", "'disconnect_policy'", "fence or keep_running", NULL });
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

/* Loads with server: url (and allow_insecure_http when allow); 0 or -1 with err. */
static int load_server(const char *url, bool allow, struct agent_config *cfg, char *err, size_t len)
{
	char *yaml = xasprintf("server: \"%s\"\nallow_insecure_http: %s\n", url,
			       allow ? "true" : "false");
	write_yaml(yaml);
	free(yaml);
	int rc = agent_config_load(cfg, path, err, len);
	unlink(path);
	path[0] = '\0';
	return rc;
}

static void config__plain_http_only_to_loopback_unless_allowed(void **state)
{
	static const char *const loopback[] = {
		"http://127.0.0.1:8080/", "http://127.3.4.5/", "http://[::1]:8080/",
		"http://localhost:8080/", "http://LocalHost/", "http://agent-1.localhost:8080/",
		"http://127.1:8080/", "http://[::ffff:127.0.0.1]/",
		/* TLS anywhere: the server is verified, the token travels encrypted */
		"https://10.0.0.1:8443/", "https://trainplane.example.internal/",
	};
	static const char *const remote[][2] = {
		{ "http://10.0.0.1:8080", "10.0.0.1" },
		{ "http://192.168.1.20/", "192.168.1.20" },
		{ "http://[2001:db8::1]:8080/", "2001:db8::1" },
		{ "http://[::ffff:10.0.0.1]/", "::ffff:10.0.0.1" },
		{ "http://0.0.0.0:8080/", "0.0.0.0" },
		/* a name: what it resolves to decides; these resolve to nothing here */
		{ "http://trainplane.example.internal:8080/", "trainplane.example.internal" },
		{ "http://127.0.0.1.nip.invalid/", "127.0.0.1.nip.invalid" },
		/* userinfo is not the host: curl would connect to 10.0.0.2 */
		{ "http://127.0.0.1@10.0.0.2/", "10.0.0.2" },
		{ "http://localhost.@10.0.0.3:80/", "10.0.0.3" },
	};
	struct agent_config cfg;
	char err[1024];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(loopback); i++) {
		err[0] = '\0';
		if (load_server(loopback[i], false, &cfg, err, sizeof(err)))
			fail_msg("%s refused: %s", loopback[i], err);
		assert_false(cfg.server_insecure);
		agent_config_free(&cfg);
	}
	for (size_t i = 0; i < ARRAY_SIZE(remote); i++) {
		err[0] = '\0';
		assert_int_equal(load_server(remote[i][0], false, &cfg, err, sizeof(err)), -1);
		const char *want[] = { "key 'server'", remote[i][1], "not (or does not resolve only "
				       "to) a loopback address", "https://", "allow_insecure_http: true" };
		for (size_t k = 0; k < ARRAY_SIZE(want); k++)
			if (!strstr(err, want[k]))
				fail_msg("%s: '%s' not in '%s'", remote[i][0], want[k], err);
		agent_config_free(&cfg);
		/* said explicitly, it loads, and the agent warns at start */
		assert_int_equal(load_server(remote[i][0], true, &cfg, err, sizeof(err)), 0);
		assert_true(cfg.server_insecure);
		agent_config_free(&cfg);
	}
	/* the environment may say it too */
	setenv("TRAINPLANE_AGENT_SERVER", "http://10.9.8.7:8080/", 1);
	assert_int_equal(agent_config_load(&cfg, NULL, err, sizeof(err)), -1);
	agent_config_free(&cfg);
	setenv("TRAINPLANE_AGENT_ALLOW_INSECURE_HTTP", "true", 1);
	assert_int_equal(agent_config_load(&cfg, NULL, err, sizeof(err)), 0);
	assert_true(cfg.server_insecure);
	agent_config_free(&cfg);
	unsetenv("TRAINPLANE_AGENT_SERVER");
	unsetenv("TRAINPLANE_AGENT_ALLOW_INSECURE_HTTP");
	expect_error("server: \"http://:8080/\"\n",
		     (const char *[]){ "'server'", "not a URL with a host", NULL });
}

/*
 * The client checks every connection it opens, whatever the configuration
 * check saw (a name may resolve elsewhere later, a proxy may stand in
 * between): plain HTTP without allow_insecure_http reaches loopback only.
 */
static void http_client__plain_http_connects_to_loopback_only(void **state)
{
	struct http_client *strict = http_client_new("secret-token", NULL, false);
	struct http_client *lax = http_client_new("secret-token", NULL, true);

	(void)state;
	assert_non_null(strict);
	assert_non_null(lax);
	assert_int_equal(http_post(strict, "http://10.255.255.1:9/agent/v1/nodes/n:register", "{}", 3), 0);
	if (!strstr(http_error(strict), "refused to send the token over plain HTTP to 10.255.255.1, "
					"not a loopback address"))
		fail_msg("%s", http_error(strict));
	/* through a proxy off loopback: the same (the proxy would read the token) */
	setenv("http_proxy", "http://10.255.255.2:3128", 1);
	setenv("no_proxy", "", 1);
	assert_int_equal(http_post(strict, "http://127.0.0.1:9/x", "{}", 3), 0);
	unsetenv("http_proxy");
	unsetenv("no_proxy");
	if (!strstr(http_error(strict), "to 10.255.255.2, not a loopback address"))
		fail_msg("%s", http_error(strict));
	/* loopback is not refused (nothing listens on port 9: a plain connect error) */
	assert_int_equal(http_post(strict, "http://127.0.0.1:9/x", "{}", 3), 0);
	assert_null(strstr(http_error(strict), "refused to send"));
	/* allowed: it connects (whatever answers there, or no route) */
	(void)http_post(lax, "http://10.255.255.1:9/x", "{}", 2);
	assert_null(strstr(http_error(lax), "refused to send"));
	http_client_free(strict);
	http_client_free(lax);
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
		cmocka_unit_test_setup_teardown(config__plain_http_only_to_loopback_unless_allowed, clean_env,
						remove_file),
		cmocka_unit_test_setup_teardown(http_client__plain_http_connects_to_loopback_only, clean_env,
						remove_file),
		cmocka_unit_test_setup_teardown(config__port_range_and_runtime_parsers, clean_env, remove_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
