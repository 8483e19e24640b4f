/*
 * job_plan.c - the replicas of a job from its typed spec (job_plan.h).
 */
#include "job_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A string list as given, or a new empty one. */
static json_t *list_copy(const json_t *list)
{
	json_t *copy = json_is_array(list) ? json_deep_copy(list) : NULL;

	return copy ? copy : json_array();
}

/* The trial's args after the replica's own, and the simulate label. */
static void run_finish(json_t *run, json_t *args, const json_t *labels,
		       const struct plan_trial *trial)
{
	for (size_t i = 0; trial && i < trial->nargs; i++)
		json_array_append_new(args, json_string(trial->args[i]));
	json_object_set_new(run, "args", args);
	const char *sim = json_string_value(json_object_get(labels, "trainplane-simulate"));
	if (sim)
		json_object_set_new(run, "simulate", json_string(sim));
}

/*
 * A trainer package replica: the gs:// URIs of its packages, its module and
 * what chooses its Python (agent/PROTOCOL.md). The agent installs the
 * packages and runs the module; "command" stays "python3 -m <module>" for
 * agents that predate packages.
 */
static void run_python(json_t *run, const json_t *package_uris, const char *module,
		       json_t *runtime)
{
	json_t *pkgs = json_array(), *p;
	size_t i;

	json_array_foreach(package_uris, i, p)
		if (json_is_string(p))
			json_array_append(pkgs, p);
	json_object_set_new(run, "packages", pkgs);
	json_object_set_new(run, "pythonModule", json_string(module ? module : ""));
	json_object_set_new(run, "pythonRuntime", runtime);
}

/* What one role of an ml v1 job runs. */
static json_t *ml_run(const struct catalog *cat, const struct training_spec *spec,
		      const struct spec_pool *pool, const json_t *labels,
		      const struct plan_trial *trial)
{
	const struct spec_pool *master = &spec->pools[ROLE_MASTER];
	const char *image = pool->image ? pool->image : master->image;
	const json_t *command = pool->command;
	json_t *run = json_object(), *args;

	if (!command && !pool->image)
		command = master->command;
	json_object_set_new(run, "image", json_string(image ? image : ""));
	if (!image && spec->python_module) {
		const char *rv = spec->runtime_version ? spec->runtime_version :
				 catalog_default_runtime_version(cat);
		json_t *rt = json_object();
		json_object_set_new(run, "command",
				    json_pack("[s, s, s]", "python3", "-m", spec->python_module));
		if (rv)
			json_object_set_new(rt, "runtimeVersion", json_string(rv));
		if (spec->python_version)
			json_object_set_new(rt, "pythonVersion", json_string(spec->python_version));
		run_python(run, spec->package_uris, spec->python_module, rt);
	} else {
		json_object_set_new(run, "command", list_copy(command));
	}
	args = list_copy(pool->args ? pool->args : spec->args);
	if (spec->job_dir) {
		json_array_append_new(args, json_string("--job-dir"));
		json_array_append_new(args, json_string(spec->job_dir));
	}
	run_finish(run, args, labels, trial);
	return run;
}

/* What one Vertex worker pool's replicas run. */
static json_t *vertex_run(const struct spec_pool *pool, const json_t *labels,
			  const struct plan_trial *trial)
{
	json_t *run = json_object();

	if (pool->has_container) {
		json_object_set_new(run, "image", json_string(pool->image ? pool->image : ""));
		json_object_set_new(run, "command", list_copy(pool->command));
		run_finish(run, list_copy(pool->args), labels, trial);
	} else {
		const char *module = pool->python_module;
		json_object_set_new(run, "image",
				    json_string(pool->executor_image ? pool->executor_image : ""));
		json_object_set_new(run, "command",
				    json_pack("[s, s, s]", "python3", "-m", module ? module : ""));
		run_python(run, pool->package_uris, module,
			   json_pack("{s:s}", "executorImageUri",
				     pool->executor_image ? pool->executor_image : ""));
		run_finish(run, list_copy(pool->python_args), labels, trial);
	}
	return run;
}

/*
 * count replicas of role on machine type, with accelerator accel (as the
 * spec names it; NULL: none asked) x accel_count. run is the pool's run
 * spec (taken; each replica gets a copy).
 */
static int add_replicas(const struct catalog *cat, enum replica_role role, const char *pool_name,
			const char *type, int64_t count, const char *accel, int64_t accel_count,
			json_t *run, struct job_plan *out, char *err, size_t errlen)
{
	const struct catalog_machine *m;
	int idx = -1;

	if (!type || !(m = catalog_machine_find(cat, type))) {
		snprintf(err, errlen, "unknown machine type '%s' for %s", type ? type : "",
			 pool_name);
		json_decref(run);
		return -1;
	}
	if (accel) {
		idx = catalog_accelerator_find(cat, accel);
		if (idx >= 0)
			accel = catalog_accelerator(cat, (size_t)idx)->name;	/* catalog-owned */
	} else if (m->accelerator >= 0) {	/* a machine type with GPUs built in */
		idx = m->accelerator;
		accel = catalog_accelerator(cat, (size_t)idx)->name;
		accel_count = m->accelerator_count;
	}
	if (!accel)
		accel_count = 0;
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
		r->run = i + 1 < count ? json_deep_copy(run) : json_incref(run);
	}
	json_decref(run);
	return 0;
}

static int plan_ml(const struct catalog *cat, const struct training_spec *spec,
		   const json_t *labels, const struct plan_trial *trial, struct job_plan *out,
		   char *err, size_t errlen)
{
	const char *tier_name = spec->scale_tier ? spec->scale_tier : "BASIC";
	bool custom = !strcmp(tier_name, "CUSTOM");
	const struct catalog_tier *tier = custom ? NULL : catalog_tier_find(cat, tier_name);

	if (!custom && !tier) {
		snprintf(err, errlen, "the catalog does not define scale tier %s", tier_name);
		return -1;
	}
	for (int role = ROLE_MASTER; role < ROLE_COUNT; role++) {
		const struct spec_pool *pool = &spec->pools[role];
		const char *type = pool->machine_type;
		int64_t count = role == ROLE_MASTER ? 1 : pool->replica_count;
		const char *accel = pool->accelerator_type;
		int64_t accel_count = pool->accelerator_count ? pool->accelerator_count : 1;

		if (tier) {
			const struct catalog_tier_replica *tr = spec_tier_replica(tier, role);
			type = tr->machine_type;
			count = tr->count;
		}
		if (count <= 0)
			continue;
		if (add_replicas(cat, (enum replica_role)role, replica_role_name(role), type, count,
				 accel, accel_count, ml_run(cat, spec, pool, labels, trial), out, err,
				 errlen))
			return -1;
	}
	return 0;
}

static int plan_vertex(const struct catalog *cat, const struct training_spec *spec,
		       const json_t *labels, const struct plan_trial *trial, struct job_plan *out,
		       char *err, size_t errlen)
{
	if (spec->npools > ROLE_COUNT) {
		snprintf(err, errlen, "the job has %zu worker pools; at most %d are supported",
			 spec->npools, ROLE_COUNT);
		return -1;
	}
	for (size_t i = 0; i < spec->npools; i++) {
		const struct spec_pool *pool = &spec->pools[i];
		int64_t count = pool->replica_count;
		char name[32];

		if (pool->empty)
			continue;
		if (!count)	/* proto3: unset; the primary pool has one */
			count = i == 0 ? 1 : 0;
		if (count <= 0)
			continue;
		snprintf(name, sizeof(name), "workerpool%zu", i);
		if (add_replicas(cat, pool->role, name, pool->machine_type, count,
				 pool->accelerator_type, pool->accelerator_count,
				 vertex_run(pool, labels, trial), out, err, errlen))
			return -1;
	}
	if (!out->n || out->replicas[0].role != ROLE_MASTER) {
		snprintf(err, errlen, "the job has no primary replica (workerpool0)");
		return -1;
	}
	return 0;
}

int spec_plan_replicas(const struct catalog *cat, const struct training_spec *spec,
		       const json_t *labels, const struct plan_trial *trial, struct job_plan *out,
		       char *err, size_t errlen)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (spec->not_object) {
		snprintf(err, errlen, "the job has no spec");
		return -1;
	}
	rc = spec->api == SPEC_API_VERTEX ? plan_vertex(cat, spec, labels, trial, out, err, errlen)
					  : plan_ml(cat, spec, labels, trial, out, err, errlen);
	if (!rc && !out->n) {
		snprintf(err, errlen, "the job has no replicas");
		rc = -1;
	}
	if (rc)
		job_plan_release(out);
	return rc;
}

void job_plan_release(struct job_plan *plan)
{
	for (size_t i = 0; i < plan->n; i++)
		json_decref(plan->replicas[i].run);
	free(plan->replicas);
	memset(plan, 0, sizeof(*plan));
}

void job_plan_totals(const struct job_plan *plan, struct plan_totals *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < plan->n; i++) {
		const struct replica_demand *d = &plan->replicas[i].demand;
		size_t k;
		out->replicas++;
		out->vcpus += d->vcpus;
		out->memory_mb += d->memory_mb;
		out->tpu_hosts += d->tpu;
		if (!d->accel_type)
			continue;
		for (k = 0; k < out->naccel; k++)
			if (!strcmp(out->accel[k].type, d->accel_type))
				break;
		if (k == out->naccel) {
			if (k == CATALOG_MAX_ACCELERATORS)
				continue;
			out->accel[out->naccel++].type = d->accel_type;
		}
		out->accel[k].count += d->accel_count;
	}
}
