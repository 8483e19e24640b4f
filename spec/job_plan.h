/*
 * job_plan.h - from a job's normalised TrainingInput to the replicas to
 * place: roles and indices, what each takes from a node (machine type
 * vCPUs and memory, accelerators), and what it runs (image, command, args).
 *
 * Scale tiers expand through the catalog; CUSTOM takes the job's types and
 * counts. Worker, parameter-server and evaluator images default to the
 * master's. Args are containerArgs when given, else trainingInput.args,
 * with "--job-dir <jobDir>" appended when jobDir is set. Jobs with
 * packageUris + pythonModule run "python3 -m <module>".
 */
#ifndef TP_JOB_PLAN_H
#define TP_JOB_PLAN_H

#include <jansson.h>

#include "catalog.h"
#include "placement.h"
#include "replica_env.h"

struct plan_replica {
	enum replica_role role;
	int index;
	const char *machine_type;	/* borrowed from the catalog */
	struct place_replica demand;	/* accel_type borrowed from the catalog */
	json_t *run;		/* {"image", "command": [...], "args": [...]}; owned */
};

struct job_plan {
	struct plan_replica *replicas;
	size_t n;
};

/*
 * Plans an ml v1 job. labels may be NULL; a "trainplane-simulate" label
 * becomes run.simulate for the simulate runtime. Returns 0, or -1 with the
 * reason in err (a job that passed validation always plans).
 */
int job_plan_ml(const struct catalog *cat, const json_t *training_input, const json_t *labels,
		struct job_plan *out, char *err, size_t errlen) MUST_CHECK;
/*
 * Plans a Vertex CustomJob (the stored {"displayName", "jobSpec", ...}):
 * worker pool i becomes replicas of role i (0 master, 1 worker, 2 ps,
 * 3 evaluator), replicaCount of them, with the pool's machineSpec and
 * containerSpec (or pythonPackageSpec: "python3 -m <module>" in the
 * executor image). Empty pools are skipped.
 */
int job_plan_vertex(const struct catalog *cat, const json_t *custom_job, const json_t *labels,
		    struct job_plan *out, char *err, size_t errlen) MUST_CHECK;
void job_plan_release(struct job_plan *plan);

#endif
