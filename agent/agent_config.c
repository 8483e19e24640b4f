/*
 * agent_config.c - the agent's key table (alphabetical), host-derived
 * defaults and the checks that span keys.
 */
#include "agent_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "gpu.h"
#include "http.h"
#include "log.h"
#include "python_runtimes.h"
#include "simulate_script.h"

static const char *check_port_range(const char *v)
{
	int lo, hi;
	return agent_parse_port_range(v, &lo, &hi) ?
		"expected a port range 'LOW-HIGH' within 1-65535, LOW <= HIGH" : NULL;
}

static const char *check_runtime(const char *v)
{
	enum agent_runtime rt;
	return agent_runtime_parse(v, &rt) ?
		"expected one of process, podman, docker, simulate" : NULL;
}

static const char *check_gpu_type(const char *v)
{
	return gpu_type_is_gpu(v) ? NULL :
		"unknown GPU type (expected e.g. NVIDIA_TESLA_T4, NVIDIA_TESLA_A100)";
}

static const char *check_tpu_type(const char *v)
{
	return gpu_type_is_tpu(v) ? NULL :
		"unknown TPU type (expected TPU_V2, TPU_V3, TPU_V4_POD, TPU_V5_LITEPOD or TPU_V6E)";
}

static const char *check_log_level(const char *v)
{
	enum log_level l;
	return log_level_parse(v, &l) ? "expected debug, info, warn or error" : NULL;
}

static const char *check_url(const char *v)
{
	return strncmp(v, "http://", 7) && strncmp(v, "https://", 8) ?
		"expected an http:// or https:// URL" : NULL;
}

static const char *check_simulate(const char *v);

static const char *check_disconnect_policy(const char *v)
{
	return strcmp(v, "fence") && strcmp(v, "keep_running") ?
		"expected fence or keep_running" : NULL;
}

static const char *check_foreign(const char *v)
{
	return strcmp(v, "leave") && strcmp(v, "remove") ? "expected leave or remove" : NULL;
}

static const char *check_dir(const char *v)
{
	struct stat st;
	return stat(v, &st) || !S_ISDIR(st.st_mode) ? "not a directory" : NULL;
}

static const char *check_readable(const char *v)
{
	return access(v, R_OK) ? "cannot read this file" : NULL;
}

#define K(name, type, field, def, min, max, check) \
	{ name, type, offsetof(struct agent_config, field), def, min, max, check }
static const struct config_key agent_keys[] = {
	K("address", CONFIG_STRING, address, "127.0.0.1", 0, 0, NULL),
	K("allow_insecure_http", CONFIG_BOOL, allow_insecure_http, "false", 0, 0, NULL),
	K("base_dir", CONFIG_STRING, base_dir, NULL, 0, 0, check_dir),
	K("container_engine", CONFIG_STRING, container_engine, NULL, 0, 0, NULL),
	K("container_extra_args", CONFIG_STRING, container_extra_args, NULL, 0, 0, NULL),
	K("container_wrapper", CONFIG_STRING, container_wrapper, NULL, 0, 0, NULL),
	K("disconnect_policy", CONFIG_STRING, disconnect_policy, "fence", 0, 0, check_disconnect_policy),
	K("foreign_replicas", CONFIG_STRING, foreign_replicas, "leave", 0, 0, check_foreign),
	K("gpu_count", CONFIG_INT, gpu_count, "0", 0, 64, NULL),
	K("gpu_type", CONFIG_STRING, gpu_type, NULL, 0, 0, check_gpu_type),
	K("log_backlog_mb", CONFIG_INT, log_backlog_mb, "64", 1, 65536, NULL),
	K("log_level", CONFIG_STRING, log_level, "info", 0, 0, check_log_level),
	K("machine_type", CONFIG_STRING, machine_type, NULL, 0, 0, NULL),
	K("memory_mb", CONFIG_INT, memory_mb, "0", 0, 1 << 30, NULL),
	K("node", CONFIG_STRING, node, NULL, 0, 0, NULL),
	K("port_range", CONFIG_STRING, port_range, "21000-21999", 0, 0, check_port_range),
	K("python_runtimes", CONFIG_STRING, python_runtimes, NULL, 0, 0, NULL),
	K("region", CONFIG_STRING, region, "us-central1", 0, 0, NULL),
	K("runtime", CONFIG_STRING, runtime_name, "process", 0, 0, check_runtime),
	K("server", CONFIG_STRING, server, "http://127.0.0.1:8080/", 0, 0, check_url),
	K("server_ca_file", CONFIG_STRING, server_ca_file, NULL, 0, 0, check_readable),
	K("simulate_default", CONFIG_STRING, simulate_default, "run-2s-exit-0", 0, 0, check_simulate),
	K("stop_grace_seconds", CONFIG_INT, stop_grace_seconds, "10", 0, 3600, NULL),
	K("storage_root", CONFIG_STRING, storage_root, NULL, 0, 0, NULL),
	K("token", CONFIG_STRING, token, "trainplane-dev-token", 0, 0, NULL),
	K("tpu_cores", CONFIG_INT, tpu_cores, "8", 1, 2048, NULL),
	K("tpu_type", CONFIG_STRING, tpu_type, NULL, 0, 0, check_tpu_type),
	K("vcpus", CONFIG_INT, vcpus, "0", 0, 1 << 20, NULL),
	K("work_dir", CONFIG_STRING, work_dir, NULL, 0, 0, NULL),
	K("zone", CONFIG_STRING, zone, "us-central1-a", 0, 0, NULL),
};
#undef K

static const char *check_simulate(const char *v)
{
	double s;
	int c;
	return simulate_script_parse(v, &s, &c) ?
		"expected 'run-<N>s-exit-<C>' or 'fail-<C>-after-<N>s'" : NULL;
}

int agent_parse_port_range(const char *s, int *lo, int *hi)
{
	char *end;
	long a, b;

	if (!s)
		return -1;
	errno = 0;
	a = strtol(s, &end, 10);
	if (errno || end == s || *end != '-')
		return -1;
	s = end + 1;
	b = strtol(s, &end, 10);
	if (errno || end == s || *end || a < 1 || b > 65535 || a > b)
		return -1;
	*lo = (int)a;
	*hi = (int)b;
	return 0;
}

static void set_default(char **field, const char *value)
{
	if (!*field || !**field) {
		free(*field);
		*field = xstrdup(value);
	}
}

/* A relative *path (not NULL, not empty) becomes <base>/<path>; NULL base: unchanged. */
static void under_base_dir(const char *base, char **path)
{
	if (!base || !*base || !*path || !**path || **path == '/')
		return;
	size_t n = strlen(base);
	while (n > 1 && base[n - 1] == '/')
		n--;
	const char *rel = *path;
	while (rel[0] == '.' && rel[1] == '/')
		rel += 2;
	char *full = *rel ? xasprintf("%.*s/%s", (int)n, base, rel) : xstrndup(base, n);
	free(*path);
	*path = full;
}

/* server is http://: loopback, or allowed explicitly (then server_insecure). */
static int check_plain_http(struct agent_config *cfg, char *err, size_t errlen)
{
	char host[256];

	if (http_url_is_loopback(cfg->server, host, sizeof(host)))
		return 0;
	if (!*host) {
		snprintf(err, errlen, "key 'server': '%s' is not a URL with a host", cfg->server);
		return -1;
	}
	if (!cfg->allow_insecure_http) {
		snprintf(err, errlen, "key 'server': %s is plain HTTP to %s, which is not (or does not "
			 "resolve only to) a loopback address: the token would cross the network in "
			 "clear and whoever answers would choose what runs on this node. Use https:// "
			 "(and server_ca_file), or set allow_insecure_http: true on a network you trust",
			 cfg->server, host);
		return -1;
	}
	cfg->server_insecure = true;
	return 0;
}

int agent_config_load(struct agent_config *cfg, const char *path, char *err, size_t errlen)
{
	char host[256] = "localhost";

	memset(cfg, 0, sizeof(*cfg));
	if (config_load(agent_keys, ARRAY_SIZE(agent_keys), cfg, path, "TRAINPLANE_AGENT_",
			err, errlen))
		return -1;
	if (gethostname(host, sizeof(host) - 1) || !*host)
		snprintf(host, sizeof(host), "localhost");
	set_default(&cfg->node, host);
	for (const char *p = cfg->node; *p; p++) {
		/* The name is a URL path segment and a file name. */
		if (!(*p == '-' || *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') ||
		      (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))) {
			snprintf(err, errlen, "key 'node': '%s' may hold only letters, digits, "
				 "'-', '_' and '.'", cfg->node);
			return -1;
		}
	}
	if (!cfg->vcpus) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		cfg->vcpus = n > 0 ? (int)n : 1;
	}
	if (!cfg->memory_mb) {
		long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
		cfg->memory_mb = pages > 0 && size > 0 ?
			(int)((long long)pages * size / (1024 * 1024)) : 1024;
	}
	if (!cfg->work_dir || !*cfg->work_dir) {
		free(cfg->work_dir);
		cfg->work_dir = xasprintf("./var/agent-%s", cfg->node);
	}
	/* Relative paths are taken from base_dir (make run: its state dir). */
	under_base_dir(cfg->base_dir, &cfg->work_dir);
	under_base_dir(cfg->base_dir, &cfg->storage_root);
	cfg->remove_foreign = !strcmp(cfg->foreign_replicas, "remove");
	cfg->lease_file = xasprintf("%s/lease", cfg->work_dir);
	cfg->fence = !cfg->disconnect_policy || strcmp(cfg->disconnect_policy, "keep_running");
	if (agent_runtime_parse(cfg->runtime_name, &cfg->runtime) ||
	    agent_parse_port_range(cfg->port_range, &cfg->port_min, &cfg->port_max)) {
		snprintf(err, errlen, "internal: runtime or port range unchecked");
		return -1;
	}
	if (cfg->server_ca_file && *cfg->server_ca_file && strncmp(cfg->server, "https://", 8)) {
		/* It would be ignored: say so rather than let plain HTTP pass for verified. */
		snprintf(err, errlen, "key 'server_ca_file': set, but 'server' %s is not an https:// URL",
			 cfg->server);
		return -1;
	}
	if (!strncmp(cfg->server, "http://", 7) && check_plain_http(cfg, err, errlen))
		return -1;
	if (cfg->runtime == RUNTIME_PODMAN || cfg->runtime == RUNTIME_DOCKER)
		set_default(&cfg->container_engine, agent_runtime_name(cfg->runtime));
	const char *bad_map = python_runtimes_check(cfg->python_runtimes, cfg->runtime);
	if (bad_map) {
		snprintf(err, errlen, "key 'python_runtimes': %s", bad_map);
		return -1;
	}
	if (cfg->gpu_count && !cfg->gpu_type) {
		snprintf(err, errlen, "key 'gpu_count': %d GPUs declared without 'gpu_type'",
			 cfg->gpu_count);
		return -1;
	}
	if (cfg->gpu_type && !cfg->gpu_count) {
		snprintf(err, errlen, "key 'gpu_type': %s declared with 'gpu_count' 0",
			 cfg->gpu_type);
		return -1;
	}
	if (cfg->tpu_type && cfg->gpu_type) {
		snprintf(err, errlen, "key 'tpu_type': a TPU host declares no GPUs ('gpu_type' is %s)",
			 cfg->gpu_type);
		return -1;
	}
	return 0;
}

void agent_config_free(struct agent_config *cfg)
{
	free(cfg->lease_file);
	cfg->lease_file = NULL;
	config_free(agent_keys, ARRAY_SIZE(agent_keys), cfg);
}
