/*
 * validate_vertex.c - Vertex's rules for a CustomJobSpec (validate.h): the
 * location, worker pools (pool 0, machine and replica count together,
 * accelerators, container or Python package, images, env names, disks),
 * the accelerators' zones, scheduling. Checked on the typed spec
 * (training_spec.h) in this order; every problem is reported.
 */
#include "validate.h"

#include <stdio.h>
#include <string.h>

#include "imageref.h"
#include "validate_internal.h"

#define POOL0_REPLICAS "Replica count for master worker pool " \
		       "(worker_pool_specs[0].replica_count) should be 1."

/* A container's env (containerSpec.env, pythonPackageSpec.env): EnvVar.name
 * is "Required. ... Must be a valid C identifier." */
static void vx_env(struct ctx *c, const struct spec_env *env, const char *base)
{
	char f[FIELD_MAX];

	for (size_t i = 0; i < env->n; i++) {
		const struct spec_env_var *var = &env->vars[i];
		snprintf(f, sizeof(f), "%s.env[%zu].name", base, var->index);
		if (var->name_wrong_type)
			continue;	/* the wrong type, reported by the parse */
		if (!var->name)
			violations_add(c->out, f, "Required field is not set.");
		else if (!env_name_valid(var->name) && quotable(var->name))
			violations_add(c->out, f, "Invalid environment variable name \"%s\": it must "
				       "be a C identifier, [A-Za-z_][A-Za-z0-9_]*.", var->name);
		else if (!env_name_valid(var->name))
			violations_add(c->out, f, "Invalid environment variable name: it must be a C "
				       "identifier, [A-Za-z_][A-Za-z0-9_]*.");
	}
}

static void vx_python_package(struct ctx *c, const struct spec_pool *pool, const char *base)
{
	char f[FIELD_MAX];
	size_t n;

	snprintf(f, sizeof(f), "%s.python_package_spec.executor_image_uri", base);
	if (!pool->executor_image)
		violations_add(c->out, f, "An executor image URI must be specified.");
	check_image(c, pool->executor_image, f, "");
	snprintf(f, sizeof(f), "%s.python_package_spec.package_uris", base);
	n = json_array_size(pool->package_uris);
	if (!n)
		violations_add(c->out, f, "At least one package URI must be specified.");
	else if (n > MAX_PACKAGE_URIS)
		violations_add(c->out, f, "The maximum number of package URIs is %d.",
			       MAX_PACKAGE_URIS);
	snprintf(f, sizeof(f), "%s.python_package_spec.python_module", base);
	if (!pool->python_module)
		violations_add(c->out, f, "A Python module must be specified.");
	snprintf(f, sizeof(f), "%s.python_package_spec", base);
	vx_env(c, &pool->python_env, f);
}

/* The machine of a pool; returns the accelerator it uses (-1 none). */
static int vx_machine(struct ctx *c, const struct spec_pool *pool, const char *base)
{
	char f[FIELD_MAX], tfield[FIELD_MAX], cfield[FIELD_MAX];
	const struct catalog_machine *m = NULL;
	const char *mtype = pool->machine_type, *atype = pool->accelerator_type;
	int64_t acount = pool->accelerator_count, used_count;
	int acc = -1;

	snprintf(tfield, sizeof(tfield), "%s.machine_spec.accelerator_type", base);
	snprintf(cfield, sizeof(cfield), "%s.machine_spec.accelerator_count", base);
	snprintf(f, sizeof(f), "%s.machine_spec.machine_type", base);
	if (!mtype) {
		violations_add(c->out, f, "A machine type must be specified.");
	} else {
		m = catalog_machine_find(c->cat, mtype);
		if (!m || !(m->apis & CATALOG_API_VERTEX)) {
			violations_add(c->out, f, "Machine type \"%s\" is not supported for training.",
				       mtype);
			m = NULL;
		}
	}
	if (!atype != !acount)
		violations_add(c->out, tfield, "Both `accelerator_type` and "
			       "`accelerator_count` should be specified or none.");
	if (acount < 0)
		violations_add(c->out, cfield, "accelerator_count must not be negative.");
	if (atype && acount > 0) {
		check_machine_accelerator(c, m, atype, acount, tfield, cfield, f, &acc, &used_count);
	} else if (!atype && !acount) {
		check_machine_accelerator(c, m, NULL, 0, tfield, cfield, f, &acc, &used_count);
		if (m && m->tpu_host && acc < 0) {
			struct strbuf sb = STRBUF_INIT;
			size_t n = 0;
			for (size_t a = 0; a < CATALOG_MAX_ACCELERATORS; a++)
				if (m->counts[a])
					sb_addf(&sb, "%s%s", n++ ? ", " : "", acc_name(c, (int)a));
			violations_add(c->out, tfield, "Machine type \"%s\" needs an accelerator: %s.",
				       m->name, n ? sb_str(&sb) : "none is configured");
			sb_release(&sb);
		}
	} else if (atype) {
		/* Say when the accelerator itself is unknown too. */
		check_machine_accelerator(c, NULL, atype, 0, tfield, cfield, f, &acc, &used_count);
		acc = -1;
	}
	return acc;
}

/* One pool; returns the accelerator it uses (-1 none) for the region check. */
static int vx_pool(struct ctx *c, const struct spec_pool *pool, size_t i)
{
	char base[BASE_MAX], f[FIELD_MAX];
	int64_t replicas = pool->replica_count, max = catalog_max_replica_count(c->cat);
	int acc = -1;

	snprintf(base, sizeof(base), "job_spec.worker_pool_specs[%zu]", i);
	if (pool->empty) {
		/* "All worker pools except the first one are optional and can be
		 * skipped by providing an empty value." (A pool that is no
		 * object at all was reported by the parse.) */
		if (i == 0 && !pool->not_object)
			violations_add(c->out, "job_spec.worker_pool_specs[0].replica_count",
				       POOL0_REPLICAS);
		return -1;
	}
	snprintf(f, sizeof(f), "%s.replica_count", base);
	if (i == 0 && replicas != 1)
		violations_add(c->out, f, POOL0_REPLICAS);
	else if (replicas < 0)
		violations_add(c->out, f, "replica_count must not be negative.");
	else if (replicas > max)
		violations_add(c->out, f, "replica_count must be at most %lld.", (long long)max);
	/* proto3: a replica_count of 0 is an unset one. */
	if (!pool->has_config != !replicas) {
		snprintf(f, sizeof(f), "%s.machine_spec", base);
		violations_add(c->out, f,
			       "Both or none of `machine_spec` and `replica_count` should be specified.");
	}
	if (pool->has_config) {
		acc = vx_machine(c, pool, base);
	} else if (!replicas) {
		snprintf(f, sizeof(f), "%s.machine_spec", base);
		violations_add(c->out, f, "A non-empty worker pool needs `machine_spec` and "
			       "`replica_count`.");
	}

	if (pool->has_container == pool->has_python_package)
		violations_add(c->out, base, "Exactly one of `container_spec` and "
			       "`python_package_spec` should be specified.");
	if (pool->has_container) {
		snprintf(f, sizeof(f), "%s.container_spec.image_uri", base);
		if (!pool->image)
			violations_add(c->out, f, "A container image URI must be specified.");
		check_image(c, pool->image, f, "");
		snprintf(f, sizeof(f), "%s.container_spec", base);
		vx_env(c, &pool->env, f);
	}
	if (pool->has_python_package)
		vx_python_package(c, pool, base);
	check_boot_disk(c, pool->disk_type, pool->disk_size_gb, pool->disk_size_bad, base,
			".disk_spec");
	return replicas > 0 ? acc : -1;
}

size_t spec_validate_vertex(const struct catalog *cat, const struct training_spec *spec,
			    struct violations *out)
{
	struct ctx c = { cat, out, CATALOG_API_VERTEX };
	const char *blame[CATALOG_MAX_ACCELERATORS] = { 0 };
	char fields[CATALOG_MAX_ACCELERATORS][FIELD_MAX];
	const struct catalog_region *region = NULL;
	catalog_accset used = 0;
	size_t before = out->n;
	int64_t nanos;

	if (spec->region)
		region = catalog_region_find(cat, spec->region);
	if (region && !(region->apis & CATALOG_API_VERTEX))
		region = NULL;	/* an ml v1 region only */
	if (!region)
		violations_add(out, "parent", "Location \"%s\" is not supported for training.",
			       spec->region ? spec->region : "");
	if (spec->not_object)
		return out->n - before;
	if (!spec->npools && spec->has_pools)
		violations_add(out, "job_spec.worker_pool_specs[0].replica_count", POOL0_REPLICAS);
	else if (!spec->npools)
		violations_add(out, "job_spec.worker_pool_specs",
			       "At least one worker pool spec must be specified.");
	for (size_t i = 0; i < spec->npools; i++) {
		int a = vx_pool(&c, &spec->pools[i], i);
		if (a < 0 || blame[a])
			continue;
		used |= 1u << a;
		snprintf(fields[a], sizeof(fields[a]),
			 "job_spec.worker_pool_specs[%zu].machine_spec.accelerator_type", i);
		blame[a] = fields[a];
	}
	if (region)
		check_region_accelerators(&c, region, used, blame, "job_spec.worker_pool_specs",
					  "location");
	if (spec->scheduling.set)
		(void)check_duration(&c, spec->scheduling.max_running_time,
				     "job_spec.scheduling.timeout", &nanos);
	return out->n - before;
}
