/*
 * shim.h - the per-replica supervisor.
 *
 * shim_spawn() forks a supervisor (a copy of the agent that never execs):
 * it leaves the agent's session (setsid), ignores SIGTERM/SIGINT/SIGHUP,
 * and forks the replica's main process in a process group of its own with
 * stdout and stderr on pipes. It then
 *   - appends every line of both pipes to <dir>/output.log as
 *     "<usec> <O|E> <text>\n" (lines over 16 KiB are cut into pieces),
 *   - waits for the main process; when it ends, kills whatever is left in
 *     its process group (container semantics: the group ends with its
 *     leader), drains the pipes, and writes <dir>/exit ("<code> <usec>",
 *     code 128+N for signal N) atomically before exiting itself.
 * The supervisor does not depend on the agent: an agent that dies or
 * restarts loses neither output nor the exit code, and the new agent finds
 * both in the files. Stopping a replica is kill(-pgid, SIGTERM/SIGKILL);
 * the supervisor survives it and records the resulting status.
 *
 * It is also the node's fence (lease.h): with a lease file, when the
 * deadline there passes unrenewed it writes <dir>/fenced, then sends
 * SIGTERM to the main process's group (or runs fence_argv: a container's
 * `stop`), and SIGKILL (or kill_argv) when the grace is over; it goes on
 * recording output and the exit as usual. This works when the agent cannot:
 * killed, stopped, or cut off from the server.
 */
#ifndef TP_AGENT_SHIM_H
#define TP_AGENT_SHIM_H

#include <stddef.h>
#include <sys/types.h>

#include "common.h"

struct shim_spec {
	const char *dir;	/* replica directory: output.log and exit go here */
	char *const *argv;	/* argv[0] without '/' is searched in envp's PATH */
	char *const *envp;	/* the exact environment of the main process */
	const char *cwd;	/* its working directory */
	const char *lease_path;	/* the node's lease file; NULL: never fence */
	char *const *fence_argv;	/* NULL: SIGTERM the group; else run this instead */
	char *const *kill_argv;		/* NULL: SIGKILL the group; else run this instead */
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
