#include "replica_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool replica_env_use_chief(const json_t *ti)
{
	const json_t *master = json_object_get(ti, "masterConfig");
	const char *image = json_string_value(json_object_get(master, "imageUri"));
	const char *runtime = json_string_value(json_object_get(ti, "runtimeVersion"));
	int major = 0, minor = 0;

	if (image && *image)
		return json_is_true(json_object_get(ti, "useChiefInTfConfig"));
	if (!runtime || sscanf(runtime, "%d.%d", &major, &minor) < 1)
		return true;	/* no runtime given: today's default runtime is 2.x */
	return major > 2 || (major == 2 && minor >= 1);
}

static json_t *address(const struct replica_addr *r)
{
	char buf[320];
	snprintf(buf, sizeof(buf), "%s:%d", r->host, r->port);
	return json_string(buf);
}

/* cluster: role -> addresses ordered by index; roles named NULL are left out. */
static json_t *cluster_named(const struct ml_cluster *c, const char *const names[4])
{
	json_t *out = json_object();

	for (int role = ROLE_MASTER; role <= ROLE_EVALUATOR; role++) {
		if (!names[role])
			continue;
		json_t *list = json_array();
		for (int index = 0;; index++) {
			size_t found = c->nreplicas;
			for (size_t i = 0; i < c->nreplicas && found == c->nreplicas; i++)
				if ((int)c->replicas[i].role == role && c->replicas[i].index == index)
					found = i;
			if (found == c->nreplicas)
				break;
			json_array_append_new(list, address(&c->replicas[found]));
		}
		if (json_array_size(list))
			json_object_set_new(out, names[role], list);
		else
			json_decref(list);
	}
	return out;
}

static json_t *cluster(const struct ml_cluster *c, const char *primary, bool evaluators)
{
	const char *const names[4] = { primary, replica_role_name(ROLE_WORKER),
				       replica_role_name(ROLE_PS),
				       evaluators ? replica_role_name(ROLE_EVALUATOR) : NULL };
	return cluster_named(c, names);
}

static json_t *document(const struct ml_cluster *c, size_t self, const char *primary,
			bool evaluators, const char *trial)
{
	const struct replica_addr *me = &c->replicas[self];
	json_t *task = json_pack("{s:s, s:i}", "type",
				 me->role == ROLE_MASTER ? primary : replica_role_name(me->role),
				 "index", me->index);
	if (trial)
		json_object_set_new(task, "trial", json_string(trial));
	if (c->cloud_id)
		json_object_set_new(task, "cloud", json_string(c->cloud_id));
	json_t *job = c->training_input ? json_incref((json_t *)c->training_input) : json_object();
	return json_pack("{s:o, s:o, s:o, s:s}", "cluster", cluster(c, primary, evaluators),
			 "task", task, "job", job, "environment", "cloud");
}

json_t *replica_env_tf_config(const struct ml_cluster *c, size_t self, const char *trial)
{
	const char *primary = replica_env_use_chief(c->training_input) ? "chief" : "master";
	return document(c, self, primary, false, trial);
}

json_t *replica_env_cluster_spec(const struct ml_cluster *c, size_t self)
{
	return document(c, self, "master", true, NULL);
}

static void add(char ***env, size_t *n, char *kv)
{
	*env = xrealloc(*env, (*n + 2) * sizeof(**env));
	(*env)[(*n)++] = kv;
	(*env)[*n] = NULL;
}

static void add_json(char ***env, size_t *n, const char *key, json_t *v)
{
	char *text = json_dumps(v, JSON_COMPACT);
	add(env, n, xasprintf("%s=%s", key, text));
	free(text);
	json_decref(v);
}

/*
 * The bound GPUs. The agent numbers them as NVML does, in PCI bus order;
 * CUDA's own default order is "fastest first", so without
 * CUDA_DEVICE_ORDER=PCI_BUS_ID index 1 could be another GPU to CUDA than to
 * the scheduler on a node of mixed or unevenly clocked cards (and inside a
 * container, 0..n-1 of the bound ones in the same order as the host's).
 */
static void add_gpu_vars(char ***env, size_t *n, const char *gpu_list)
{
	bool gpus = gpu_list && *gpu_list;
	add(env, n, xasprintf("CUDA_VISIBLE_DEVICES=%s", gpu_list ? gpu_list : ""));
	add(env, n, xasprintf("NVIDIA_VISIBLE_DEVICES=%s", gpus ? gpu_list : "void"));
	if (gpus)
		add(env, n, xstrdup("CUDA_DEVICE_ORDER=PCI_BUS_ID"));
}

void replica_env_ml(const struct ml_cluster *c, size_t self, const char *trial,
		    const char *gpu_list, char ***env, size_t *n)
{
	const struct replica_addr *me = &c->replicas[self], *master = NULL;
	int workers = 0;

	add_json(env, n, "TF_CONFIG", replica_env_tf_config(c, self, trial));
	add_json(env, n, "CLUSTER_SPEC", replica_env_cluster_spec(c, self));
	for (size_t i = 0; i < c->nreplicas; i++) {
		if (c->replicas[i].role == ROLE_MASTER)
			master = &c->replicas[i];
		else if (c->replicas[i].role == ROLE_WORKER)
			workers++;
	}
	/* PyTorch: rank 0 is the master, workers follow; ps and evaluators are
	 * not part of the process group. */
	if (master && (me->role == ROLE_MASTER || me->role == ROLE_WORKER)) {
		add(env, n, xasprintf("MASTER_ADDR=%s", master->host));
		add(env, n, xasprintf("MASTER_PORT=%d", master->port));
		add(env, n, xasprintf("WORLD_SIZE=%d", 1 + workers));
		add(env, n, xasprintf("RANK=%d", me->role == ROLE_MASTER ? 0 : 1 + me->index));
	}
	add_gpu_vars(env, n, gpu_list);
}

/* --- Vertex AI -------------------------------------------------------------- */

static const char *const pool_names[] = { "workerpool0", "workerpool1", "workerpool2",
					  "workerpool3" };
static const char *const vertex_tf_names[] = { "chief", "worker", "ps", "evaluator" };

bool replica_env_is_vertex(const json_t *spec)
{
	return json_is_object(json_object_get(spec, "jobSpec"));
}

static json_t *vertex_document(const struct ml_cluster *c, size_t self,
			       const char *const names[4], const char *const task_names[4])
{
	const struct replica_addr *me = &c->replicas[self];
	json_t *job = json_object_get(c->training_input, "jobSpec");
	return json_pack("{s:o, s:s, s:{s:s, s:i}, s:O}", "cluster", cluster_named(c, names),
			 "environment", "cloud", "task", "type", task_names[me->role], "index",
			 me->index, "job", job ? job : json_object());
}

json_t *replica_env_vertex_cluster_spec(const struct ml_cluster *c, size_t self)
{
	return vertex_document(c, self, pool_names, pool_names);
}

json_t *replica_env_vertex_tf_config(const struct ml_cluster *c, size_t self)
{
	const char *const names[4] = { "chief", "worker", "ps", NULL };
	return vertex_document(c, self, names, vertex_tf_names);
}

void replica_env_vertex(const struct ml_cluster *c, size_t self, const char *gpu_list,
			char ***env, size_t *n)
{
	const struct replica_addr *me = &c->replicas[self], *primary = NULL;
	const json_t *spec = json_object_get(c->training_input, "jobSpec");
	const char *base = json_string_value(
		json_object_get(json_object_get(spec, "baseOutputDirectory"), "outputUriPrefix"));
	int workers = 0;

	add_json(env, n, "CLUSTER_SPEC", replica_env_vertex_cluster_spec(c, self));
	add_json(env, n, "TF_CONFIG", replica_env_vertex_tf_config(c, self));
	if (base && *base) {
		const char *slash = base[strlen(base) - 1] == '/' ? "" : "/";
		add(env, n, xasprintf("AIP_MODEL_DIR=%s%smodel/", base, slash));
		add(env, n, xasprintf("AIP_CHECKPOINT_DIR=%s%scheckpoints/", base, slash));
		add(env, n, xasprintf("AIP_TENSORBOARD_LOG_DIR=%s%slogs/", base, slash));
	}
	if (c->cloud_id)
		add(env, n, xasprintf("CLOUD_ML_JOB_ID=%s", c->cloud_id));
	for (size_t i = 0; i < c->nreplicas; i++) {
		if (c->replicas[i].role == ROLE_MASTER)
			primary = &c->replicas[i];
		else if (c->replicas[i].role == ROLE_WORKER)
			workers++;
	}
	/* PyTorch, as users derive it from CLUSTER_SPEC: rank 0 is workerpool0. */
	if (primary && (me->role == ROLE_MASTER || me->role == ROLE_WORKER)) {
		add(env, n, xasprintf("MASTER_ADDR=%s", primary->host));
		add(env, n, xasprintf("MASTER_PORT=%d", primary->port));
		add(env, n, xasprintf("WORLD_SIZE=%d", 1 + workers));
		add(env, n, xasprintf("RANK=%d", me->role == ROLE_MASTER ? 0 : 1 + me->index));
	}
	add_gpu_vars(env, n, gpu_list);
	/* The pool's own variables last: containerSpec.env or pythonPackageSpec.env. */
	const json_t *pool = json_array_get(json_object_get(spec, "workerPoolSpecs"),
					    (size_t)me->role);
	const json_t *vars = json_object_get(json_object_get(pool, "containerSpec"), "env");
	if (!vars)
		vars = json_object_get(json_object_get(pool, "pythonPackageSpec"), "env");
	size_t i;
	const json_t *v;
	json_array_foreach(vars, i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));
		const char *value = json_string_value(json_object_get(v, "value"));
		if (name && *name)
			add(env, n, xasprintf("%s=%s", name, value ? value : ""));
	}
}
