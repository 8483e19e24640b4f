/*
 * replica.h - what the agent knows of one replica attempt, and the files
 * that keep it across agent restarts (its log file: replica_log.h).
 *
 * Each attempt has a directory <work_dir>/replicas/<replica>.<attempt>/
 * (the replica id is unique for all time, agent/PROTOCOL.md "Identity"):
 *   status.json  this struct's durable fields, rewritten atomically (write
 *                status.json.tmp, rename) on every change
 *   output.log   the replica's stdout and stderr, one record a line:
 *                "<usec since epoch> <O|E> <text>\n", appended by the
 *                supervisor (shim.h) or the simulate runtime
 *   exit         "<exit code> <end usec>\n", written once (tmp + rename) by
 *                the supervisor when the replica's main process ended
 *   work/        the process runtime's working directory
 *   packages/, venv/  a trainer package replica's packages and the
 *                virtual environment they are installed in (python_pkg.h)
 *   fenced       "<usec since epoch>\n", written by the supervisor when it
 *                stopped the replica because the node's lease passed
 * The directory is removed when the server has recorded the attempt's end
 * (replica_forget()).
 */
#ifndef TP_AGENT_REPLICA_H
#define TP_AGENT_REPLICA_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common.h"
#include "replica_state.h"
#include "runtime_kind.h"

/*
 * A replica's state is lib/replica_state.h's machine, the server's too
 * (one table for both: the agent includes lib/ alone). The agent's
 * replicas are PENDING (replica_new(), not yet started), STARTING (a
 * container engine's `run` in progress), RUNNING (its main process has not
 * ended), EXITED (exit_code holds 0-255, 128+N for signal N) or
 * FAILED_TO_START (never ran; message says why); LOST is the server's, and
 * what the agent reports for an EXITED replica its node stopped
 * (sync_report()). They move through replica_transition() alone.
 */
/* One entry of the server's desired set (sync answer). Strings owned. */
struct desired_replica {
	char *replica;
	int attempt;
	bool run;		/* RUN; false: STOP */
	char *job, *role;
	int index;
	char *image;
	char **command;		/* NULL-terminated, may be empty */
	char **args;		/* NULL-terminated */
	char **env;		/* NULL-terminated "K=V" */
	int *gpus;
	size_t ngpus;
	int *ports;
	size_t nports;
	/* A trainer package replica (python_pkg.h): packages NULL when not one. */
	char **packages;	/* NULL-terminated gs:// URIs */
	char *python_module;
	char *runtime_version, *python_version;	/* pythonRuntime, ml v1; NULL: unset */
	char *executor_image;	/* pythonRuntime, Vertex; NULL: unset */
	/* The buckets of the job's project, each mounted at /gcs/<bucket> in a
	 * container (the server's word, checked again as bucket names before
	 * any path is built: runtime_container.c); NULL: none sent. */
	char **buckets;		/* NULL-terminated */
	bool has_simulate;	/* a `simulate` object or script string was given */
	double sim_seconds;	/* < 0: the agent's simulate_default's */
	int sim_exit;
};
void desired_replica_release(struct desired_replica *d);

struct replica {
	struct replica *next;
	char *id;
	int attempt;
	char *dir;			/* owned; see above */
	enum agent_runtime runtime;
	char *cluster;			/* owned: the cluster id it was started for; NULL: not known
					 * (started for a server without cluster ids) */
	bool foreign_logged;		/* its being another cluster's was logged (not saved) */
	bool clash_logged;		/* the server's asking for its id was logged (not saved) */

	enum replica_state state;
	int exit_code;			/* REPLICA_EXITED only */
	char *message;			/* owned, NULL when none */
	int64_t start_usec, end_usec;	/* 0: not yet */

	/* Reporting: seq grows with each new report content. */
	int64_t seq;
	int64_t acked_seq;		/* highest seq a 200 answered */
	enum replica_state rep_state;	/* what report `seq` describes */
	int rep_exit;
	bool rep_valid;

	/* process and container runtimes: the supervisor (shim.h) */
	pid_t shim_pid;
	unsigned long long shim_start;	/* /proc start time, guards pid reuse */
	pid_t pgid;			/* process runtime: the replica's group */
	/* container runtimes */
	char *container;		/* owned: tp-<replica>-<attempt> */
	pid_t helper_pid;		/* engine `run`/`stop` in flight, or 0 */
	unsigned long long helper_start;
	int64_t next_inspect_usec;
	int64_t exit_seen_usec;		/* inspect first said "exited" (not saved) */
	/* A trainer package replica: it ran our bootstrap (python_pkg.h) first,
	 * so an exit before its module started is a failure to start. */
	bool python_package;
	/* simulate */
	double sim_seconds;
	int sim_exit;

	/* Stopped by the node's fence (lease.h): by the agent, or by its
	 * supervisor (which then wrote <dir>/fenced first). Reported LOST. */
	bool fenced;
	/* Stopped because its node's agent is leaving in an orderly way (make
	 * run's Ctrl-C, --stop-replicas-on-exit): not an exit of its own, a
	 * maintenance event. Reported LOST with the reason; restarts elsewhere. */
	bool node_stopped;
	/* A tuning trial's replica (its env names CLOUD_ML_TRIAL_ID): the trial
	 * and the metric tag its trainer reports under, through the metric
	 * file <dir>/hypertune/output.metrics (metric_file.h). Owned; NULL:
	 * not a trial. metrics: what the last report carried ([{step,value}],
	 * not saved: read again after a restart). */
	char *trial_id, *metric_tag;
	json_t *metrics;
	int64_t metrics_read_usec;	/* mono_usec() of the last read */
	bool watched;			/* its folder is in the agent's inotify set */
	bool metrics_final_read;	/* read once more since it ended */
	int64_t metrics_size, metrics_mtime_ns;	/* the file as last read */

	/* Stopping: SIGTERM sent at stop_usec, SIGKILL due at kill_usec. */
	bool stopping;
	bool killed;
	int64_t kill_usec;

	/* Logs: output.log bytes before log_off are acknowledged; the pinned
	 * batch (sent, not yet acknowledged) covers log_off..batch_end. */
	int64_t log_off;
	int64_t batch_end;
	json_t *batch;			/* array of {stream,time,text}, or NULL */
	int64_t batch_seq;		/* the seq that first carried the batch */
};

/* New replica for (id, attempt) with its directory path (not created). */
struct replica *replica_new(const char *work_dir, const char *id, int attempt,
			    enum agent_runtime rt);
/* Frees r and what it owns; NULL is fine. Files are left alone. */
void replica_free(struct replica *r);

/* Path of a file in r's directory; caller frees. */
char *replica_path(const struct replica *r, const char *name);
/* Creates r's directory (and work/). 0 or -1 with errno. */
int replica_mkdir(const struct replica *r) MUST_CHECK;
/* Writes status.json atomically. 0 or -1 (logged). */
int replica_save(const struct replica *r) MUST_CHECK;
/* Reads <dir>/status.json into a new replica. NULL if absent or unreadable (logged). */
struct replica *replica_load(const char *dir);
/* Removes r's directory and everything in it. */
void replica_remove_files(const struct replica *r);

/* Ends the attempt: st is EXITED (the exit edge) or FAILED_TO_START
 * (fail_start), taken through replica_transition(); then sets exit code,
 * end time and message (copied; NULL: none). An exit after a fence
 * (r->fenced, or <dir>/fenced written by the supervisor) sets fenced, and
 * without a message says so. false, and nothing changed, when the machine
 * refuses the edge (logged). */
bool replica_set_final(struct replica *r, enum replica_state st, int exit_code,
		       int64_t end_usec, const char *message);

/*
 * The one way an agent's replica changes state: takes the edge of
 * lib/replica_state.c's machine that cause leads to from r->state and
 * returns true; an edge the machine does not have (or a cause that is not
 * the agent's: create, lose, restart, requeue) is refused: logged as an
 * error, r->state kept, false. The causes: start (PENDING -> STARTING),
 * run, exit, fail_start.
 */
bool replica_transition(struct replica *r, enum replica_cause cause);

/*
 * Reads the exit file: 1 with *code and *end_usec set, 0 when absent,
 * -1 when unreadable.
 */
int replica_read_exit(const struct replica *r, int *code, int64_t *end_usec);
/* Writes the exit file atomically. 0 or -1. Async-signal-unsafe-free enough
 * for the supervisor (no stdio). */
int replica_write_exit(const char *dir, int code, int64_t end_usec);

/* Writes data to path atomically (path.tmp, then rename): a reader sees the
 * old content or the new, never a part. No stdio: safe in a supervisor.
 * 0 or -1 (errno). */
int replica_write_atomic(const char *path, const char *data, size_t len) MUST_CHECK;

#endif
