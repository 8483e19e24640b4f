/*
 * slurm_backend.h - regions (or zones) served by an existing Slurm cluster
 * (issue 29; docs/slurm.md).
 *
 * The server's slurm_file names the backends, each with the regions it
 * serves, its slurmrestd (URL, user, token file, schema), where to submit
 * (partition, account per project, QOS), and how the catalog maps onto it
 * (accelerator types to gres types, machine types to CPUs and memory).
 *
 * Each job of such a region is one Slurm job: one component per pool of
 * replicas of one shape (one task per replica, each with its own CPUs and
 * GPUs: gpus_per_task binds distinct GPU indices), so Slurm's queue, fair
 * share, QOS and accounting see the whole gang. Its batch script srun's
 * trainplane-agent once per task in pilot mode (agent/README.md): each
 * pilot registers as a node of that job alone, with a secret the job's
 * environment carries, and the scheduler places the job's replicas on them
 * as on any node; the pilots run, log and report them as every agent does.
 *
 * The reconciler (one background loop per backend, acting on the
 * scheduler leader only) submits QUEUED jobs, polls GET /jobs?update_time
 * (a 304 when nothing changed), and maps what Slurm says, plus
 * trainplane's own intents (cancel, timeouts), onto the job state machine:
 * a requeue moves the pilots' generation (the old pilots are drained and
 * their replicas restart once their lease passes: never two copies); a
 * final Slurm state of a job that is not final fails it with Google's
 * words; a cancelled or timed-out job's Slurm job is DELETEd; a record
 * Slurm purged fails its job. After a restart or a change of leader it
 * takes up every row in slurm_jobs again, and finds a job whose submit's
 * answer was lost by its comment.
 */
#ifndef TP_SLURM_BACKEND_H
#define TP_SLURM_BACKEND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "catalog.h"
#include "job_plan.h"
#include "slurm.h"

struct slurm_backends;
struct snapshot;
struct store;
struct sched;

/* Loads slurm_file (YAML). NULL path: none (an empty set). -1 with why in err. */
int slurm_backends_load(const char *path, struct slurm_backends **out, char *err,
			size_t errlen) MUST_CHECK;
void slurm_backends_free(struct slurm_backends *b);	/* after slurm_backends_stop() */

/* How many backends there are, and the name of the one serving region (NULL: none). */
size_t slurm_backends_count(const struct slurm_backends *b);
const char *slurm_backends_serving(const struct slurm_backends *b, const char *region);

/*
 * Whether a job of region, planned as plan, can ever run on its backend:
 * every replica's shape on one node of the partition, an accelerator type
 * the backend maps, and (several pools) as many nodes as pools. 0, or -1
 * with Google-style words in why. Uses the backend's last inventory; a
 * backend whose inventory is not known yet admits the job.
 */
int slurm_backends_fits(struct slurm_backends *b, const char *region, const struct job_plan *plan,
			char *why, size_t whylen);

/* Starts the reconcilers (one thread each). ctx borrowed until stop. */
struct slurm_backends_ctx {
	struct store *store;
	struct snapshot *catalogs;
	struct sched *sched;	/* reconciles while it leads; NULL: never (the inventory only) */
};
void slurm_backends_start(struct slurm_backends *b, const struct slurm_backends_ctx *ctx);
void slurm_backends_stop(struct slurm_backends *b);

/*
 * /metrics: trainplane_slurm_backend_up{backend} and the counters of jobs
 * submitted, refused at submit, requeued and failed by Slurm, per backend.
 * Any thread.
 */
struct strbuf;
void slurm_backends_metrics(struct slurm_backends *b, struct strbuf *sb);

/* --- what the reconciler is made of, for its unit tests ------------------- */

/* A backend's settings (as loaded). */
struct slurm_backend_config {
	char *name;
	char **regions;
	size_t nregions;
	struct slurm_client_config client;
	char *partition, *qos, *account;	/* account: every project's, unless accounts maps it */
	json_t *accounts;	/* {"project": "account"} */
	json_t *gres;		/* {"NVIDIA_TESLA_T4": "t4"}: the accelerators offered, and the
				 * nodes' gres type of each (null: any) */
	json_t *features;	/* {"NVIDIA_TESLA_T4": "t4"}: a node feature that picks the type
				 * (sent as constraints); absent: the partition holds one type */
	json_t *machines;	/* {"n1-standard-4": {"cpus": 2, "memoryMb": 4096}} */
	char *agent;		/* trainplane-agent on the Slurm nodes */
	char *server;		/* trainplane's URL as the pilots reach it */
	char *work_dir;		/* the job's working directory and output, on the nodes */
	char *runtime;		/* the pilots' replica runtime: process or podman */
	char *agent_ca_file;	/* the pilots' CA for an https server; NULL: the system's */
	int poll_ms;
	bool requeue;
	int unavailable_fail_s;	/* a job waits this long for an unreachable Slurm; 0: for ever */
	int time_limit_margin_min;	/* Slurm's limit: maxRunningTime + this */
};

/*
 * A planned job as a Slurm submission: components (one per run of replicas
 * of one shape), the slots of its pilots ([{group, task, vcpus, memoryMb,
 * accelType, accelCount}], replica i is slot i), the batch script and its
 * environment. Strings in *out point into cfg, plan or the new objects;
 * json members are new. -1 with why (an accelerator the backend does not
 * map, a TPU) for a job it can never run.
 */
struct slurm_translation {
	struct slurm_submit submit;
	json_t *slots;
	json_t *environment;
	char *script, *name, *comment, *output;
};
int slurm_translate(const struct slurm_backend_config *cfg, const struct job_plan *plan,
		    const json_t *job, const char *cluster_tag, const char *pilot_token,
		    struct slurm_translation *out, char *why, size_t whylen);
void slurm_translation_release(struct slurm_translation *t);

/* What the reconciler does about one job, from both sides. */
enum slurm_action {
	SLURM_ACT_NONE,
	SLURM_ACT_CANCEL,	/* DELETE the Slurm job: trainplane ended or cancelled it */
	SLURM_ACT_CANCEL_FAIL,	/* DELETE, and fail the job (held after a launch failure) */
	SLURM_ACT_REQUEUED,	/* Slurm restarted the job: a new pilot generation */
	SLURM_ACT_FAIL,		/* Slurm ended it first: fail the job with message */
	SLURM_ACT_DONE,		/* both sides final */
};

/*
 * The decision for one job: job_state (trainplane's, ml v1 name), api
 * ("ml" or "vertex") and spec (for the timeout's words), the row's
 * restart_cnt and cancel_sent, info (NULL: Slurm does not list it) and
 * whether the list was complete (purged records count only then).
 * *message for FAIL and CANCEL_FAIL (owned by the caller, at least 512 bytes).
 */
enum slurm_action slurm_decide(const char *job_state, const char *api, const json_t *spec,
			       int64_t slurm_id, int restart_cnt, bool cancel_sent,
			       const struct slurm_job_info *info, bool list_complete,
			       char *message, size_t mlen);

#endif
