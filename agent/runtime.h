/*
 * runtime.h - the replica runtimes behind one small interface.
 *
 * Every function takes the replica's record and changes it in place; a
 * change of state is saved to its status file before the function returns.
 * None of them blocks for long: stopping is SIGTERM (or `engine stop`) now
 * and SIGKILL from a later runtime_poll() after the grace period; a
 * container's `run` goes on in the background while the replica is
 * STARTING.
 *
 *   process   the command as a host process under a supervisor (shim.h),
 *             in its own process group, cwd <dir>/work; image ignored
 *             (runtime_process.c)
 *   podman    a container per attempt, named tp-<replica>-<attempt>, through
 *   docker    the engine's CLI (run -d, logs -f, inspect, stop, rm)
 *             (runtime_container.c)
 *   simulate  nothing runs: RUNNING for N seconds, then EXITED with code C
 *             (runtime_simulate.c, simulate_script.h)
 * runtime.c dispatches to them and saves the status around each call.
 */
#ifndef TP_AGENT_RUNTIME_H
#define TP_AGENT_RUNTIME_H

#include <stdbool.h>

#include "agent_config.h"
#include "replica.h"

struct runtime_ops {
	/* Starts r as d says; r's directory exists and its status is saved.
	 * Leaves r RUNNING, STARTING, or FAILED_TO_START with a message. */
	void (*start)(const struct agent_config *cfg, struct replica *r,
		      const struct desired_replica *d);
	/* Observes r: start completion, exit, SIGKILL after the grace period.
	 * Also what re-adopts a replica loaded from its status file. */
	void (*poll)(const struct agent_config *cfg, struct replica *r);
	/* Begins stopping r; idempotent. */
	void (*stop)(const struct agent_config *cfg, struct replica *r);
	/* Frees what r holds outside its directory (its container). */
	void (*release)(const struct agent_config *cfg, struct replica *r);
	/* When (now_usec()) poll will next see r change with nothing else
	 * happening (the simulate runtime's end); 0: not known. May be NULL. */
	int64_t (*next_event)(const struct replica *r);
};

extern const struct runtime_ops runtime_process_ops;
extern const struct runtime_ops runtime_container_ops;	/* podman and docker */
extern const struct runtime_ops runtime_simulate_ops;
const struct runtime_ops *runtime_ops_for(enum agent_runtime rt);

/* The value of NAME=... in a NULL-terminated "K=V" list (a replica's env), or NULL. */
const char *runtime_env_value(char **env, const char *name);

/*
 * Creates r's directory, saves its status and starts it with its runtime.
 * Returns true when r's state or anything reportable changed (always here).
 */
void runtime_start(const struct agent_config *cfg, struct replica *r,
		   const struct desired_replica *d);
/* runtime_ops.next_event of r's runtime: 0 when none is known. */
int64_t runtime_next_event(const struct replica *r);
/* Polls r; returns true when its state changed. */
bool runtime_poll(const struct agent_config *cfg, struct replica *r);
void runtime_stop(const struct agent_config *cfg, struct replica *r);
/*
 * r, told to stop before this agent ever started it (a cancel that came
 * with or before its placement): it never will be. Saves it ended,
 * FAILED_TO_START "stopped before it started", for the server to record.
 */
void runtime_skip(struct replica *r);
/* Releases r's resources and deletes its directory; r is then freed by the caller. */
void runtime_forget(const struct agent_config *cfg, struct replica *r);

/*
 * Loads every replica under <work_dir>/replicas (re-adoption after an agent
 * restart). Those of `cluster` (NULL: of any cluster), and those that name
 * no cluster, are adopted: polled once (runtime_adopt()) and prepended to
 * *list. The others belong to another cluster: prepended to *foreign
 * untouched (not polled, nothing written), or, with foreign NULL, left on
 * disk and not loaded. A folder without a status file is removed (nothing
 * ever ran there); one whose status file does not name that very folder's
 * replica and attempt is logged and left alone. Returns how many were
 * adopted.
 */
int runtime_adopt_all(const struct agent_config *cfg, const char *cluster,
		      struct replica **list, struct replica **foreign);
/* Polls a loaded replica once, so that one that ended while no agent
 * watched is EXITED with its recorded code, and logs its adoption. */
void runtime_adopt(const struct agent_config *cfg, struct replica *r);

/*
 * Rewrites "gs://" prefixes for a replica: with a storage root, each
 * occurrence of "gs://" in s becomes "<root>/" (a host process) or "/gcs/"
 * (a container: the root is mounted there). Without one, s is copied.
 * Returns a new string.
 */
char *runtime_map_gcs(const char *s, const char *storage_root, bool container);

#endif
