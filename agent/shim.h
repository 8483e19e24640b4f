/*
 * shim.h - the per-replica supervisors.
 *
 * shim_spawn() forks a process replica's supervisor (a copy of the agent
 * that never execs): it leaves the agent's session (setsid), becomes a
 * child subreaper (PR_SET_CHILD_SUBREAPER: every orphaned descendant of the
 * replica is re-parented to it, whatever session or group it moved to),
 * ignores SIGTERM/SIGINT/SIGHUP, and forks the replica's main process in a
 * process group of its own with stdout and stderr on pipes. It then
 *   - appends every line of both pipes to <dir>/output.log as
 *     "<usec> <O|E> <text>\n" (lines over 16 KiB are cut into pieces),
 *   - reaps whatever orphans come to it,
 *   - waits for the main process; when it ends, SIGKILLs every descendant
 *     left (its group, and those that left it with setsid() or setpgid():
 *     container semantics, everything ends with the main process), reaps
 *     them, drains the pipes, and writes <dir>/exit ("<code> <usec>", code
 *     128+N for signal N) atomically before exiting itself.
 * The supervisor does not depend on the agent: an agent that dies or
 * restarts loses neither output nor the exit code, and the new agent finds
 * both in the files. Stopping a replica is shim_signal_replica() with
 * SIGTERM, then SIGKILL; the supervisor survives it and records the result.
 *
 * It is also the node's fence (lease.h): with a lease file, when the
 * deadline there passes unrenewed it writes <dir>/fenced, then sends
 * SIGTERM to every descendant, and SIGKILL when the grace is over; it goes
 * on recording output and the exit as usual. This works when the agent
 * cannot: killed, stopped, or cut off from the server.
 *
 * shim_spawn_container() forks a container's supervisor, the container's
 * fence from the moment it is created (see there).
 */
#ifndef TP_AGENT_SHIM_H
#define TP_AGENT_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common.h"

struct shim_spec {
	const char *dir;	/* replica directory: output.log and exit go here */
	char *const *argv;	/* argv[0] without '/' is searched in envp's PATH */
	char *const *envp;	/* the exact environment of the main process */
	const char *cwd;	/* its working directory */
	const char *lease_path;	/* the node's lease file; NULL: never fence */
};

/*
 * Starts the supervisor and the main process. On success returns 0 with
 * the supervisor's pid and the main process's pid (= its process group).
 * When the program cannot be executed returns -1 with a message in err
 * ("exec 'foo': No such file or directory"); nothing is left running.
 */
int shim_spawn(const struct shim_spec *s, pid_t *shim_pid, pid_t *child_pid,
	       char *err, size_t errlen) MUST_CHECK;

/*
 * Sends sig to a process replica: to its main process's group (pgid) and to
 * every other descendant of its supervisor shim_pid (which, a subreaper,
 * holds them all). Call it only while the supervisor is known alive (pid
 * and start time): the pids are then not recycled.
 */
void shim_signal_replica(pid_t shim_pid, pid_t pgid, int sig);

/*
 * Sends sig to every process whose parent chain leads to root (root
 * excluded), as /proc shows them now. Returns how many of them were not
 * zombies.
 */
int shim_signal_tree(pid_t root, int sig);

/*
 * A container's supervisor. The container exists (created, or running
 * already); the supervisor is its fence for as long as it may run, and
 * follows its output. Its engine calls are children of its own, each in a
 * process group of its own:
 *   - start (only with start): first it reads the lease file, and starts
 *     the container only if the deadline has not passed; otherwise it
 *     writes <dir>/started "lease" (and, under the fence policy,
 *     <dir>/fenced) and ends. `start` runs with stderr in <dir>/start.err;
 *     when it ends the supervisor writes <dir>/started: "started", or
 *     "failed <code>" (and ends: the container never ran). A `start` still
 *     in flight when the deadline passes is killed (the fence); "lease"
 *     then, and the fence goes on as below in case it got through.
 *   - `logs -f [--since=...]` into <dir>/output.log. When it ends (the
 *     container ended, the engine restarted, someone killed it) the
 *     supervisor asks `inspect`: a container still running is followed
 *     again (since the moment the last follower ended); one that ended
 *     ends the supervisor. The fence never depends on the log stream.
 *   - the fence (lease.h): at the deadline <dir>/fenced, a `start` in
 *     flight killed, `stop --time=<grace>`; at deadline + grace `kill`, and
 *     `kill` again every second for as long as `inspect` says it runs.
 * It ends once the container is known not to run (exited, never started,
 * removed), writing <dir>/exit ("<exit code or 255> <usec>") last.
 */
struct shim_container_spec {
	const char *dir;	/* replica directory */
	char *const *engine;	/* the words before an engine verb: wrapper and engine */
	const char *name;	/* the container */
	const char *lease_path;	/* the node's lease file; NULL: never fence */
	int stop_grace_s;	/* `stop --time` */
	bool start;		/* start it first (created, never started) */
	int64_t logs_since_usec;	/* follow its logs from then (0: from the beginning) */
};

/* Starts a container's supervisor: 0 with its pid, or -1 with a message. */
int shim_spawn_container(const struct shim_container_spec *s, pid_t *pid, char *err,
			 size_t errlen) MUST_CHECK;

/* The words a container supervisor writes to <dir>/started. */
#define SHIM_STARTED "started"
#define SHIM_START_FAILED "failed"
#define SHIM_START_LEASE "lease"

/*
 * Ends a container's supervisor now: SIGKILL to every descendant (its
 * engine calls), then to itself. Only while it is known alive.
 */
void shim_kill_supervisor(pid_t pid);

/*
 * Runs argv (searched in the agent's PATH) to completion with stdout and
 * stderr collected into out and errout (either may be NULL: discarded),
 * killing it after timeout_ms. Returns the exit status (0-255, 128+N for a
 * signal), or -1 if it could not run (message in errout).
 */
struct strbuf;
int run_command(char *const *argv, struct strbuf *out, struct strbuf *errout,
		int timeout_ms);

/* Starts argv in the background with stdout/stderr appended to the files
 * (NULL: /dev/null). Returns its pid, or -1. The caller reaps it. */
pid_t spawn_background(char *const *argv, const char *out_path, const char *err_path);

#endif
