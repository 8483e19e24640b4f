/*
 * job_plan.h - from a job's typed spec (training_spec.h) to the replicas
 * to place: roles and indices, what each takes from a node (its machine
 * type's vCPUs and memory, accelerators), and what it runs (image,
 * command, args). The scheduler places the plan (scheduler/placement.h)
 * and gives each replica its cluster's environment.
 *
 * ml v1: scale tiers expand through the catalog; CUSTOM takes the job's
 * types and counts. Worker, parameter-server and evaluator images default
 * to the master's. Args are containerArgs when given, else
 * trainingInput.args, with "--job-dir <jobDir>" appended when jobDir is
 * set. Jobs with packageUris + pythonModule run "python3 -m <module>",
 * and their run spec names the packages, the module and the runtime
 * ("packages", "pythonModule", "pythonRuntime": {"runtimeVersion" (the
 * catalog's default when unset), "pythonVersion"}): the agent installs
 * the packages and picks the Python (agent/PROTOCOL.md).
 * Vertex: worker pool i becomes replicas of role i (0 master, 1 worker,
 * 2 ps, 3 evaluator), replicaCount of them, with the pool's machineSpec
 * and containerSpec (or pythonPackageSpec: "python3 -m <module>" in the
 * executor image, with the packages and "pythonRuntime":
 * {"executorImageUri"}). Empty pools are skipped.
 *
 * A hyperparameter tuning trial is the job's whole gang: the same plan
 * with the trial's parameter values appended to every replica's args.
 */
#ifndef TP_JOB_PLAN_H
#define TP_JOB_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"
#include "common.h"
#include "training_spec.h"

/* What one replica takes from a node. */
struct replica_demand {
	int vcpus;
	int64_t memory_mb;
	const char *accel_type;	/* NULL: no accelerator; borrowed from the catalog */
	int accel_count;
	bool tpu;		/* needs a TPU host */
};

struct plan_replica {
	enum replica_role role;
	int index;
	const char *machine_type;	/* borrowed from the catalog */
	struct replica_demand demand;
	json_t *run;		/* {"image", "command": [...], "args": [...], "simulate"?,
				 *  "packages"?, "pythonModule"?, "pythonRuntime"?}; owned */
};

struct job_plan {
	struct plan_replica *replicas;
	size_t n;
};

/* One trial of a tuning job: its parameter values as args ("--lr=0.01"). */
struct plan_trial {
	const char *const *args;
	size_t nargs;
};

/*
 * Plans a job of either API from its typed spec. labels (may be NULL): a
 * "trainplane-simulate" label becomes run.simulate for the simulate
 * runtime. trial (may be NULL): args appended to every replica's. Returns
 * 0, or -1 with the reason in err (a job that passed validation always
 * plans).
 */
int spec_plan_replicas(const struct catalog *cat, const struct training_spec *spec,
		       const json_t *labels, const struct plan_trial *trial, struct job_plan *out,
		       char *err, size_t errlen) MUST_CHECK;
void job_plan_release(struct job_plan *plan);

/* What a whole plan asks for (quotas): vCPUs, memory, accelerators by type. */
struct plan_totals {
	int64_t replicas, vcpus, memory_mb;
	size_t naccel;
	struct {
		const char *type;	/* borrowed from the catalog */
		int64_t count;
	} accel[CATALOG_MAX_ACCELERATORS];
	int64_t tpu_hosts;	/* replicas that take a whole TPU host */
};
void job_plan_totals(const struct job_plan *plan, struct plan_totals *out);

#endif
