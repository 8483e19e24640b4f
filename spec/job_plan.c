#include "job_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

static const char *const config_keys[] = {
	[ROLE_MASTER] = "masterConfig", [ROLE_WORKER] = "workerConfig",
	[ROLE_PS] = "parameterServerConfig", [ROLE_EVALUATOR] = "evaluatorConfig",
};
static const char *const type_keys[] = {
	[ROLE_MASTER] = "masterType", [ROLE_WORKER] = "workerType",
	[ROLE_PS] = "parameterServerType", [ROLE_EVALUATOR] = "evaluatorType",
};
static const char *const count_keys[] = {
	[ROLE_MASTER] = NULL, [ROLE_WORKER] = "workerCount",
	[ROLE_PS] = "parameterServerCount", [ROLE_EVALUATOR] = "evaluatorCount",
};

static json_t *run_spec(const json_t *ti, const json_t *config, const json_t *labels)
{
	const json_t *master = json_object_get(ti, "masterConfig");
	const char *image = json_string_value(json_object_get(config, "imageUri"));
	json_t *command = json_object_get(config, "containerCommand");
	json_t *args = json_object_get(config, "containerArgs");
	const char *module = json_string_value(json_object_get(ti, "pythonModule"));
	const char *job_dir = json_string_value(json_object_get(ti, "jobDir"));
	json_t *run = json_object();

	if (!image)
		image = json_string_value(json_object_get(master, "imageUri"));
	if (!command && !json_object_get(config, "imageUri"))
		command = json_object_get(master, "containerCommand");
	json_object_set_new(run, "image", json_string(image ? image : ""));
	if (!image && module)
		json_object_set_new(run, "command", json_pack("[s, s, s]", "python3", "-m", module));
	else
		json_object_set_new(run, "command", command ? json_deep_copy(command) : json_array());
	json_t *a = json_deep_copy(args ? args : json_object_get(ti, "args"));
	if (!a)
		a = json_array();
	if (job_dir && *job_dir) {
		json_array_append_new(a, json_string("--job-dir"));
		json_array_append_new(a, json_string(job_dir));
	}
	json_object_set_new(run, "args", a);
	const char *sim = json_string_value(json_object_get(labels, "trainplane-simulate"));
	if (sim)
		json_object_set_new(run, "simulate", json_string(sim));
	return run;
}

static int add_replicas(const struct catalog *cat, const json_t *ti, const json_t *labels,
			enum replica_role role, const char *type, int64_t count,
			struct job_plan *out, char *err, size_t errlen)
{
	const json_t *config = json_object_get(ti, config_keys[role]);
	const json_t *acc = json_object_get(config, "acceleratorConfig");
	const struct catalog_machine *m;
	const char *accel = NULL;
	int64_t accel_count = 0;

	if (count <= 0)
		return 0;
	if (!type || !(m = catalog_machine_find(cat, type))) {
		snprintf(err, errlen, "unknown machine type '%s' for %s", type ? type : "",
			 replica_role_name(role));
		return -1;
	}
	if (acc && json_string_value(json_object_get(acc, "type"))) {
		accel = json_string_value(json_object_get(acc, "type"));
		if (wire_int64_get(json_object_get(acc, "count"), &accel_count))
			accel_count = 1;
		int idx = catalog_accelerator_find(cat, accel);
		if (idx >= 0)
			accel = catalog_accelerator(cat, (size_t)idx)->name;	/* catalog-owned */
	} else if (m->accelerator >= 0) {
		accel = catalog_accelerator(cat, (size_t)m->accelerator)->name;
		accel_count = m->accelerator_count;
	}
	int idx = accel ? catalog_accelerator_find(cat, accel) : -1;
	bool tpu = m->tpu_host || (idx >= 0 && catalog_accelerator(cat, (size_t)idx)->tpu);
	out->replicas = xrealloc(out->replicas, (out->n + (size_t)count) * sizeof(*out->replicas));
	for (int64_t i = 0; i < count; i++) {
		struct plan_replica *r = &out->replicas[out->n++];
		r->role = role;
		r->index = (int)i;
		r->machine_type = m->name;
		r->demand.vcpus = m->vcpus;
		r->demand.memory_mb = m->memory_mb;
		r->demand.tpu = tpu;
		r->demand.accel_type = accel_count > 0 ? accel : NULL;
		r->demand.accel_count = (int)accel_count;
		r->run = run_spec(ti, config, labels);
	}
	return 0;
}

int job_plan_ml(const struct catalog *cat, const json_t *ti, const json_t *labels,
		struct job_plan *out, char *err, size_t errlen)
{
	const char *tier_name = json_string_value(json_object_get(ti, "scaleTier"));
	const struct catalog_tier *tier;

	memset(out, 0, sizeof(*out));
	if (!tier_name)
		tier_name = "BASIC";	/* proto3 leaves the default out */
	tier = strcmp(tier_name, "CUSTOM") ? catalog_tier_find(cat, tier_name) : NULL;
	if (strcmp(tier_name, "CUSTOM") && !tier) {
		snprintf(err, errlen, "the catalog does not define scale tier %s", tier_name);
		return -1;
	}
	for (int role = ROLE_MASTER; role <= ROLE_EVALUATOR; role++) {
		const char *type;
		int64_t count;
		if (tier) {
			const struct catalog_tier_replica *tr =
				role == ROLE_MASTER ? &tier->master : role == ROLE_WORKER ? &tier->worker :
				role == ROLE_PS ? &tier->parameter_server : &tier->evaluator;
			type = tr->machine_type;
			count = tr->count;
		} else {
			type = json_string_value(json_object_get(ti, type_keys[role]));
			count = role == ROLE_MASTER ? 1 : 0;
			if (count_keys[role] &&
			    wire_int64_get(json_object_get(ti, count_keys[role]), &count))
				count = 0;
		}
		if (add_replicas(cat, ti, labels, (enum replica_role)role, type, count, out, err,
				 errlen)) {
			job_plan_release(out);
			return -1;
		}
	}
	if (!out->n) {
		snprintf(err, errlen, "the job has no replicas");
		return -1;
	}
	return 0;
}

/* --- Vertex AI ------------------------------------------------------------ */

/* What one worker pool's replicas run. */
static json_t *vertex_run(const json_t *pool, const json_t *labels)
{
	const json_t *cs = json_object_get(pool, "containerSpec");
	const json_t *pp = json_object_get(pool, "pythonPackageSpec");
	json_t *run = json_object();

	if (cs) {
		const char *image = json_string_value(json_object_get(cs, "imageUri"));
		json_t *command = json_object_get(cs, "command");
		json_t *args = json_object_get(cs, "args");
		json_object_set_new(run, "image", json_string(image ? image : ""));
		json_object_set_new(run, "command", command ? json_deep_copy(command) : json_array());
		json_object_set_new(run, "args", args ? json_deep_copy(args) : json_array());
	} else {
		const char *image = json_string_value(json_object_get(pp, "executorImageUri"));
		const char *module = json_string_value(json_object_get(pp, "pythonModule"));
		json_t *args = json_object_get(pp, "args");
		json_object_set_new(run, "image", json_string(image ? image : ""));
		json_object_set_new(run, "command",
				    json_pack("[s, s, s]", "python3", "-m", module ? module : ""));
		json_object_set_new(run, "args", args ? json_deep_copy(args) : json_array());
	}
	const char *sim = json_string_value(json_object_get(labels, "trainplane-simulate"));
	if (sim)
		json_object_set_new(run, "simulate", json_string(sim));
	return run;
}

int job_plan_vertex(const struct catalog *cat, const json_t *custom_job, const json_t *labels,
		    struct job_plan *out, char *err, size_t errlen)
{
	const json_t *pools = json_object_get(json_object_get(custom_job, "jobSpec"),
					      "workerPoolSpecs");
	size_t i;
	const json_t *pool;

	memset(out, 0, sizeof(*out));
	if (json_array_size(pools) > ROLE_EVALUATOR + 1) {
		snprintf(err, errlen, "the job has %zu worker pools; at most 4 are supported",
			 json_array_size(pools));
		return -1;
	}
	json_array_foreach(pools, i, pool) {
		const json_t *ms = json_object_get(pool, "machineSpec");
		const char *type = json_string_value(json_object_get(ms, "machineType"));
		const char *accel = json_string_value(json_object_get(ms, "acceleratorType"));
		int64_t count = 0, accel_count = json_integer_value(json_object_get(ms,
										   "acceleratorCount"));
		const struct catalog_machine *m;

		if (!json_object_size(pool))
			continue;	/* an empty pool is skipped */
		if (wire_int64_get(json_object_get(pool, "replicaCount"), &count))
			count = i == 0 ? 1 : 0;
		if (count <= 0)
			continue;
		if (!type || !(m = catalog_machine_find(cat, type))) {
			snprintf(err, errlen, "unknown machine type '%s' for workerpool%zu",
				 type ? type : "", i);
			job_plan_release(out);
			return -1;
		}
		int idx = accel ? catalog_accelerator_find(cat, accel) : -1;
		if (idx >= 0)
			accel = catalog_accelerator(cat, (size_t)idx)->name;	/* catalog-owned */
		else
			accel = NULL;
		if (!accel && m->accelerator >= 0) {	/* a machine type with GPUs built in */
			idx = m->accelerator;
			accel = catalog_accelerator(cat, (size_t)idx)->name;
			accel_count = m->accelerator_count;
		}
		if (!accel)
			accel_count = 0;
		bool tpu = m->tpu_host || (idx >= 0 && catalog_accelerator(cat, (size_t)idx)->tpu);
		out->replicas = xrealloc(out->replicas,
					 (out->n + (size_t)count) * sizeof(*out->replicas));
		for (int64_t k = 0; k < count; k++) {
			struct plan_replica *r = &out->replicas[out->n++];
			r->role = (enum replica_role)i;
			r->index = (int)k;
			r->machine_type = m->name;
			r->demand.vcpus = m->vcpus;
			r->demand.memory_mb = m->memory_mb;
			r->demand.tpu = tpu;
			r->demand.accel_type = accel_count > 0 ? accel : NULL;
			r->demand.accel_count = (int)accel_count;
			r->run = vertex_run(pool, labels);
		}
	}
	if (!out->n || out->replicas[0].role != ROLE_MASTER) {
		job_plan_release(out);
		snprintf(err, errlen, "the job has no primary replica (workerpool0)");
		return -1;
	}
	return 0;
}

void job_plan_release(struct job_plan *plan)
{
	for (size_t i = 0; i < plan->n; i++)
		json_decref(plan->replicas[i].run);
	free(plan->replicas);
	memset(plan, 0, sizeof(*plan));
}
