/*
 * agent_config.h - the node agent's configuration: the key table, defaults
 * taken from the host, and checks of the values that config_load() cannot
 * do alone (port range, runtime, accelerator names).
 *
 * Keys (YAML file given by --config or TRAINPLANE_AGENT_CONFIG; each one
 * overridable by TRAINPLANE_AGENT_<KEY>) are listed in agent/README.md.
 */
#ifndef TP_AGENT_CONFIG_H
#define TP_AGENT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"
#include "runtime_kind.h"

struct agent_config {
	/* As loaded (strings owned, freed by agent_config_free()). */
	char *server;
	char *server_ca_file;	/* verify an https server against this CA (NULL: the system's) */
	bool allow_insecure_http;	/* plain http:// to a host that is not loopback */
	char *token;
	char *node;
	char *region;
	char *zone;
	char *machine_type;
	int vcpus;		/* 0: from the host */
	int memory_mb;		/* 0: from the host */
	char *address;
	char *port_range;
	char *runtime_name;
	char *gpu_type;		/* NULL: discover */
	int gpu_count;
	char *tpu_type;		/* NULL: not a TPU host */
	int tpu_cores;
	char *storage_root;
	char *work_dir;
	char *base_dir;		/* relative work_dir and storage_root are under it; NULL: the cwd */
	char *foreign_replicas;	/* "leave" or "remove": replicas of other clusters */
	int stop_grace_seconds;
	char *container_engine;
	char *container_extra_args;
	char *container_wrapper;
	char *simulate_default;
	char *log_level;
	int log_backlog_mb;
	char *disconnect_policy;	/* fence | keep_running (lease.h) */
	char *python_runtimes;	/* SELECTOR=PYTHON-OR-IMAGE ... (python_pkg.h); NULL: defaults */

	/* Derived by agent_config_load(). */
	enum agent_runtime runtime;
	int port_min, port_max;
	bool server_insecure;	/* plain HTTP off loopback, allowed: warn at start */
	bool fence;		/* disconnect_policy is fence */
	char *lease_file;	/* <work_dir>/lease; NULL: replicas are never fenced */
	bool remove_foreign;	/* foreign_replicas: remove */
};

/*
 * Loads defaults, then path (NULL: none), then TRAINPLANE_AGENT_* variables,
 * fills the host-derived defaults (node name, vCPUs, memory, work dir,
 * engine), puts relative work_dir and storage_root under base_dir, and
 * checks the combination. A plain http:// server whose host is
 * not loopback (http_url_is_loopback()) is refused unless
 * allow_insecure_http: the token would cross the network in clear and
 * whoever answers would choose what runs on the node. On error writes a message naming the
 * file:line:col and key (or the variable) into err and returns -1; cfg must
 * still be agent_config_free()d.
 */
int agent_config_load(struct agent_config *cfg, const char *path, char *err,
		      size_t errlen) MUST_CHECK;
void agent_config_free(struct agent_config *cfg);

/* "21000-21999" -> 21000, 21999. 0 or -1. */
int agent_parse_port_range(const char *s, int *lo, int *hi) MUST_CHECK;

#endif
