/*
 * replica_env.h - what each replica of an ml v1 job is told about its
 * cluster, as AI Platform Training tells it (reference §4.1-§4.3):
 *
 *   TF_CONFIG     {"cluster": {chief|master, worker, ps} (never evaluators),
 *                  "task": {"type", "index", "trial"?, "cloud"},
 *                  "job": <TrainingInput>, "environment": "cloud"}
 *   CLUSTER_SPEC  the same shape, with evaluators in the cluster and the
 *                 primary always called "master" (custom containers)
 *   MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK   on master and workers
 *   CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES  the bound GPUs ("" / void)
 *   CUDA_DEVICE_ORDER=PCI_BUS_ID  on a replica with GPUs: the agent's
 *                 indices are NVML's (PCI order), and so become CUDA's
 *
 * Addresses are host:port pairs the scheduler reserved at placement, so
 * every replica knows the whole cluster before any of them starts.
 */
#ifndef TP_REPLICA_ENV_H
#define TP_REPLICA_ENV_H

#include <jansson.h>
#include <stdbool.h>

#include "common.h"
#include "training_spec.h"	/* enum replica_role, replica_role_name() */

struct replica_addr {
	enum replica_role role;
	int index;
	const char *host;
	int port;
};

struct ml_cluster {
	const struct replica_addr *replicas;	/* master first, any order after */
	size_t nreplicas;
	const json_t *training_input;	/* the job's normalised TrainingInput */
	const char *cloud_id;	/* an id for task.cloud, e.g. the job id */
};

/*
 * Does TF_CONFIG name the primary "chief"? Custom containers follow
 * useChiefInTfConfig; runtime-version jobs use "chief" from runtime 2.1.
 */
bool replica_env_use_chief(const json_t *training_input);

/* TF_CONFIG for replica self (index into replicas). New object. */
json_t *replica_env_tf_config(const struct ml_cluster *c, size_t self, const char *trial);
/* CLUSTER_SPEC for replica self. New object. */
json_t *replica_env_cluster_spec(const struct ml_cluster *c, size_t self);

/*
 * The whole environment of replica self as "KEY=VALUE" strings appended to
 * a NULL-terminated array (*env, *n updated; caller frees each and the
 * array). gpu_list is the bound GPU indices ("0,1"), NULL when none.
 */
void replica_env_ml(const struct ml_cluster *c, size_t self, const char *trial,
		    const char *gpu_list, char ***env, size_t *n);

/*
 * Vertex AI (reference §4.4): a job whose stored spec is a CustomJob
 * ({"displayName", "jobSpec", ...}, passed as ml_cluster.training_input).
 * Worker pool i runs as role i (0 master, 1 worker, 2 ps, 3 evaluator) and
 * is named "workerpool<i>" in CLUSTER_SPEC; TF_CONFIG names the pools
 * chief, worker, ps (evaluators out of the cluster); "job" is the
 * CustomJobSpec. AIP_MODEL_DIR, AIP_CHECKPOINT_DIR, AIP_TENSORBOARD_LOG_DIR
 * come from baseOutputDirectory; the pool's env follows everything else.
 */
bool replica_env_is_vertex(const json_t *spec);
json_t *replica_env_vertex_cluster_spec(const struct ml_cluster *c, size_t self);
json_t *replica_env_vertex_tf_config(const struct ml_cluster *c, size_t self);
void replica_env_vertex(const struct ml_cluster *c, size_t self, const char *gpu_list,
			char ***env, size_t *n);

#endif
