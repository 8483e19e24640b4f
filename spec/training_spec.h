/*
 * training_spec.h - a training job's spec, typed, parsed once from the
 * request: its pools of replicas (role, count, machine type, accelerators,
 * image, command, args, env, disk), scheduling, region, job dir and
 * hyperparameters, for both APIs. The catalog rules (validate.h) check it;
 * the job plan (job_plan.h) turns it into the replicas to place.
 *
 * ml v1's TrainingInput becomes four pools, one per role (master, worker,
 * parameter server, evaluator), with what the request says of each as
 * written: a scale tier's machine types are the catalog's to expand
 * (validate_ml.c, job_plan.c), the master's image is inherited where a
 * role gives none. Vertex's CustomJobSpec becomes its worker pools in
 * order: pool i runs as role i.
 *
 * Every string and JSON value borrows from the parsed JSON, which must
 * outlive the spec. An empty string reads as unset (NULL), as does an
 * enum's *_UNSPECIFIED value: proto3's defaults. The parse trusts nothing:
 * a value of the wrong JSON type is reported to vs (when vs is not NULL)
 * and reads as unset ("Invalid value: expected a string."), so arbitrary
 * JSON parses (the fuzz target tests/fuzz/fuzz_validate.c feeds it).
 */
#ifndef TP_TRAINING_SPEC_H
#define TP_TRAINING_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"
#include "violation.h"

/* The one role enum: what a replica is in its job's cluster (TF_CONFIG's
 * task types; ml v1's master/worker/parameter server/evaluator, Vertex's
 * worker pools 0..3). */
enum replica_role { ROLE_MASTER, ROLE_WORKER, ROLE_PS, ROLE_EVALUATOR, ROLE_COUNT };

/* "master", "worker", "ps", "evaluator" */
const char *replica_role_name(enum replica_role role);

enum spec_api { SPEC_API_ML, SPEC_API_VERTEX };

/* A container's environment (Vertex EnvVar[]). */
struct spec_env_var {
	size_t index;		/* in the list as given */
	const char *name, *value;
	bool name_wrong_type;	/* reported by the parse: no "required" on top */
};

struct spec_env {
	bool set;		/* a list was given */
	struct spec_env_var *vars;	/* owned by the spec */
	size_t n;
};

/* One pool of identical replicas. */
struct spec_pool {
	enum replica_role role;
	bool empty;			/* Vertex: {}, a pool skipped */
	bool not_object;		/* Vertex: no JSON object (reported), skipped too */
	/* ml: the role's <role>Config was given; Vertex: machineSpec was given */
	bool has_config;
	/* The machine. */
	const char *machine_type;	/* ml <role>Type, Vertex machineSpec.machineType */
	int64_t replica_count;		/* ml <role>Count (master: 0, it is one), Vertex replicaCount */
	bool replica_count_bad;		/* not an integer (reported) */
	bool has_accelerator_config;	/* ml: acceleratorConfig given */
	const char *accelerator_type;	/* NULL: none asked */
	int64_t accelerator_count;
	const char *tpu_topology;	/* Vertex */
	const char *tpu_tf_version;	/* ml */
	/* What it runs: a container (ml: the role's own imageUri, containerCommand,
	 * containerArgs; Vertex containerSpec) ... */
	bool has_container;		/* Vertex: containerSpec given */
	const char *image;
	const json_t *command, *args;	/* string lists as given */
	struct spec_env env;
	/* ... or, Vertex, a Python package (pythonPackageSpec) in an executor image. */
	bool has_python_package;
	const char *executor_image;
	const json_t *package_uris;
	const char *python_module;
	const json_t *python_args;
	struct spec_env python_env;
	/* Its boot disk. */
	bool has_disk;
	const char *disk_type;
	int64_t disk_size_gb;
	bool disk_size_bad;
};

/*
 * One hyperparameter to tune: ml v1 ParameterSpec, or Vertex
 * StudySpec.ParameterSpec (its value spec's type, range and lists read
 * into the same fields). Vertex's conditional parameters come flattened,
 * each right after its parent, with the parent's values that make it
 * active: a trial passes it only then (docs/tuning.md).
 */
struct spec_param {
	bool is_object;			/* false: not a ParameterSpec at all (reported) */
	const char *name;
	const char *type;		/* DOUBLE, INTEGER, CATEGORICAL, DISCRETE; NULL unset */
	const char *scale_type;		/* NULL: unset, or NONE */
	double min_value, max_value;
	bool has_min, has_max;
	const json_t *categorical_values, *discrete_values;	/* lists as given */
	/* Vertex */
	char *path;			/* "hyperparameter_tuning_job.study_spec.parameters[0]" (owned) */
	int value_specs;		/* how many of the oneof's value specs were given */
	bool has_default;		/* a defaultValue (Vizier only) */
	int parent;			/* a conditional parameter's parent (index); -1 none */
	const char *parent_kind;	/* the condition: DISCRETE, INTEGER or CATEGORICAL */
	const json_t *parent_values;	/* the parent's values that make it active */
};

struct spec_hyperparameters {
	bool set;
	const char *goal, *algorithm, *metric_tag;
	int64_t max_trials, max_parallel_trials, max_failed_trials;
	bool has_max_trials, has_max_parallel_trials, has_max_failed_trials;
	struct spec_param *params;	/* owned by the spec */
	size_t nparams;
	bool early_stopping;		/* ml enableTrialEarlyStopping; Vertex an automated stopping spec */
	bool best_measurement;		/* Vertex BEST_MEASUREMENT: the best one is final, not the last */
	const json_t *metrics;		/* Vertex studySpec.metrics as given (the first is the goal) */
	bool conditions_too_deep;	/* Vertex: conditional parameters nested past the limit */
};

/* ml v1 Scheduling, Vertex Scheduling. */
struct spec_scheduling {
	bool set;
	const char *max_running_time;	/* ml maxRunningTime, Vertex timeout (durations as given) */
	const char *max_wait_time;	/* ml maxWaitTime, Vertex maxWaitDuration */
	int64_t priority;		/* ml */
	bool has_priority;
	const char *strategy;		/* ON_DEMAND, LOW_COST, STANDARD, SPOT, FLEX_START; NULL unset */
	bool restart_job_on_worker_restart;	/* Vertex; ml resilientToWorkerRestart */
	bool disable_retries;		/* Vertex */
};

struct training_spec {
	enum spec_api api;
	bool not_object;		/* the spec was no JSON object (reported): nothing is set */
	struct spec_pool *pools;	/* ml: ROLE_COUNT, in role order; Vertex: the worker pools */
	size_t npools;
	bool has_pools;			/* Vertex: workerPoolSpecs was given */
	const char *region;		/* ml trainingInput.region; Vertex: the caller's location */
	/* ml v1 */
	const char *scale_tier;		/* NULL: BASIC, proto3's default */
	const json_t *package_uris;
	const char *python_module;
	const json_t *args;
	const char *job_dir, *runtime_version, *python_version;
	bool use_chief_in_tf_config;
	/* Vertex */
	const char *base_output_directory;
	struct spec_scheduling scheduling;
	struct spec_hyperparameters hyperparameters;
};

/*
 * An ml v1 TrainingInput (borrowed). Type problems go to vs (may be NULL)
 * with their training_input.* paths. Returns the number of violations added;
 * *out is filled either way and must be released.
 */
size_t spec_ml_parse(const json_t *training_input, struct training_spec *out,
		     struct violations *vs);
/* A Vertex CustomJobSpec (borrowed), created in location; paths job_spec.*. */
size_t spec_vertex_parse(const json_t *job_spec, const char *location, struct training_spec *out,
			 struct violations *vs);
/*
 * A Vertex HyperparameterTuningJob (borrowed, normalised): its
 * trialJobSpec as spec_vertex_parse() reads a CustomJobSpec (paths
 * job_spec.*), its studySpec and trial counts into hyperparameters (paths
 * hyperparameter_tuning_job.*).
 */
size_t spec_vertex_study_parse(const json_t *job, const char *location, struct training_spec *out,
			       struct violations *vs);
/* How deep Vertex's conditional parameters may nest. */
#define SPEC_CONDITION_DEPTH 4
/*
 * A stored spec: an ml job's TrainingInput, a Vertex job's
 * {"displayName", "jobSpec", ...} (told apart by "jobSpec"), or a Vertex
 * tuning job's {"displayName", "studySpec", "trialJobSpec", ...}. region
 * is the job's. Stored specs passed validation: nothing is reported.
 */
void spec_parse_stored(const json_t *stored, const char *region, struct training_spec *out);
/* Whether a stored spec is a Vertex job's. */
bool spec_stored_is_vertex(const json_t *stored);

void spec_release(struct training_spec *spec);

/* What an ml v1 scale tier gives a role: the catalog's machine type and count. */
const struct catalog_tier_replica *spec_tier_replica(const struct catalog_tier *tier,
						     enum replica_role role);

#endif
