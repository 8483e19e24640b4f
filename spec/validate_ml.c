/*
 * validate_ml.c - ml v1's rules for a TrainingInput (validate.h): scale
 * tiers, the four roles' machine types and counts, their accelerators,
 * images and containers, runtime and Python versions, Cloud TPU, region,
 * packages, scheduling, hyperparameters. Checked on the typed spec
 * (training_spec.h) in this order; every problem is reported.
 */
#include "validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validate_internal.h"
#include "wire.h"

#define MAX_DISCRETE_VALUES 1000
#define MAX_HP_PARAMS 1000		/* ours: keeps the uniqueness checks linear-ish */
#define MAX_CATEGORICAL_VALUES 1000	/* ours, likewise */
#define MIN_MAX_WAIT_NANOS (1800LL * 1000000000LL)

/* What messages call a role's fields (paths are made only for a violation). */
static const struct role_names {
	const char *type_key, *count_key;	/* workerType, workerCount */
	const char *type_field, *count_field, *config_field;	/* training_input.worker_type ... */
} role_names[ROLE_COUNT] = {
	[ROLE_MASTER] = { "masterType", "masterCount", "training_input.master_type",
			  "training_input.master_count", "training_input.master_config" },
	[ROLE_WORKER] = { "workerType", "workerCount", "training_input.worker_type",
			  "training_input.worker_count", "training_input.worker_config" },
	[ROLE_PS] = { "parameterServerType", "parameterServerCount",
		      "training_input.parameter_server_type", "training_input.parameter_server_count",
		      "training_input.parameter_server_config" },
	[ROLE_EVALUATOR] = { "evaluatorType", "evaluatorCount", "training_input.evaluator_type",
			     "training_input.evaluator_count", "training_input.evaluator_config" },
};

/* One role as the rules see it: the request's pool with what follows from it. */
struct replica {
	const struct spec_pool *pool;	/* as the request gives it */
	enum replica_role role;
	const char *type_key, *count_key;	/* workerType, workerCount */
	const char *type_field, *count_field, *config_field;	/* training_input.worker_type ... */
	const char *type;		/* machine type, from the job or the scale tier */
	bool from_tier;
	const struct catalog_machine *m;	/* NULL: unset or unknown */
	int64_t count;			/* replicas; the master is 1 */
	const char *image;		/* its imageUri, or the master's it inherits */
	bool has_acc_config;		/* acceleratorConfig given with a type or count */
	int acc;			/* the accelerator it uses, -1 none */
	int64_t acc_count;
};

static bool replica_active(const struct replica *r)
{
	return r->m && (r->role == ROLE_MASTER || r->count > 0);
}

static void replica_init(struct replica *r, const struct spec_pool *pool, enum replica_role role)
{
	const struct role_names *n = &role_names[role];

	memset(r, 0, sizeof(*r));
	r->pool = pool;
	r->role = role;
	r->acc = -1;
	r->type_key = n->type_key;
	r->count_key = n->count_key;
	r->type_field = n->type_field;
	r->count_field = n->count_field;
	r->config_field = n->config_field;
}

/* Types, counts and the scale tier: who runs on what. */
static void ml_replicas(struct ctx *c, const struct training_spec *spec, bool custom,
			const struct catalog_tier *tier, struct replica *rs)
{
	int64_t max = catalog_max_replica_count(c->cat);

	for (int i = 0; i < ROLE_COUNT; i++) {
		struct replica *r = &rs[i];
		const struct spec_pool *pool = &spec->pools[i];
		const char *type = pool->machine_type;
		int64_t count = i == ROLE_MASTER ? 0 : pool->replica_count;
		bool count_bad = i != ROLE_MASTER && pool->replica_count_bad;

		replica_init(r, pool, (enum replica_role)i);
		if (!custom) {
			const struct catalog_tier_replica *tr;
			if (!tier)	/* an unknown tier is reported; its rules are unknown */
				continue;
			if (type)
				violations_add(c->out, r->type_field,
					       "%s can only be set when scaleTier is CUSTOM.", r->type_key);
			if (count)
				violations_add(c->out, r->count_field,
					       "%s can only be set when scaleTier is CUSTOM.", r->count_key);
			tr = spec_tier_replica(tier, (enum replica_role)i);
			r->type = tr->machine_type;
			r->count = i == ROLE_MASTER ? 1 : tr->count;
			r->from_tier = true;
		} else {
			r->type = type;
			r->count = i == ROLE_MASTER ? 1 : count;
			if (i == ROLE_MASTER && !type)
				violations_add(c->out, r->type_field,
					       "masterType must be set when scaleTier is CUSTOM.");
			if (count < 0)
				violations_add(c->out, r->count_field, "%s must not be negative.",
					       r->count_key);
			else if (count > max)
				violations_add(c->out, r->count_field,
					       "%s must be at most %lld.", r->count_key, (long long)max);
			else if (count > 0 && !type)
				violations_add(c->out, r->type_field,
					       "%s must be set when %s is greater than zero.",
					       r->type_key, r->count_key);
		}
		if (!r->type)
			continue;
		r->m = catalog_machine_find(c->cat, r->type);
		if (!r->m || !(r->m->apis & CATALOG_API_ML)) {
			violations_add(c->out, r->type_field,
				       "Machine type \"%s\" is not supported for training.", r->type);
			r->m = NULL;
			continue;
		}
		if (r->m->tpu_host && i != ROLE_WORKER) {
			violations_add(c->out, r->type_field,
				       "Machine type \"%s\" can only be used as workerType.", r->type);
			r->m = NULL;
			continue;
		}
		/* A TPU worker's count has its own rule (ml_tpu). */
		if (custom && i != ROLE_MASTER && count == 0 && !count_bad && !r->m->tpu_host)
			violations_add(c->out, r->count_field,
				       "%s must be greater than zero when %s is set.",
				       r->count_key, r->type_key);
	}
	/* "This value must be consistent with the category of machine type that
	 * masterType uses": a Cloud TPU worker goes with either. */
	if (!rs[ROLE_MASTER].m)
		return;
	for (int i = ROLE_WORKER; i < ROLE_COUNT; i++) {
		const struct replica *r = &rs[i];
		if (!r->m || r->m->tpu_host || r->m->legacy == rs[ROLE_MASTER].m->legacy)
			continue;
		violations_add(c->out, r->type_field,
			       "%s \"%s\" and masterType \"%s\" must both be Compute Engine machine "
			       "types or both be legacy machine types.",
			       r->type_key, r->m->name, rs[ROLE_MASTER].m->name);
	}
}

/* "If workerConfig.imageUri has not been set, AI Platform uses the value of
 * masterConfig.imageUri" (and likewise for the other roles). */
static void ml_images(struct ctx *c, struct replica *rs)
{
	const char *master_image = rs[ROLE_MASTER].pool->image;

	for (int i = 0; i < ROLE_COUNT; i++) {
		rs[i].image = rs[i].pool->image;
		check_image(c, rs[i].image, rs[i].config_field, ".image_uri");
		if (!rs[i].image)
			rs[i].image = master_image;
	}
}

/* acceleratorConfig of each replica against the machine x accelerator table. */
static void ml_accelerators(struct ctx *c, bool custom, struct replica *rs)
{
	for (int i = 0; i < ROLE_COUNT; i++) {
		struct replica *r = &rs[i];
		char field[BASE_MAX], tfield[FIELD_MAX], cfield[FIELD_MAX];
		const char *type = r->pool->accelerator_type;
		int64_t count = r->pool->accelerator_count;

		r->has_acc_config = type || count;
		if (!r->has_acc_config) {
			/* no accelerator asked: nothing to blame, only the built-in ones */
			check_machine_accelerator(c, r->m, NULL, 0, NULL, NULL, r->type_field, &r->acc,
						  &r->acc_count);
			continue;
		}
		snprintf(field, sizeof(field), "%s.accelerator_config", r->config_field);
		snprintf(tfield, sizeof(tfield), "%s.type", field);
		snprintf(cfield, sizeof(cfield), "%s.count", field);
		if (!custom) {
			violations_add(c->out, field,
				       "acceleratorConfig can only be set when scaleTier is CUSTOM.");
			continue;
		}
		if (!r->type) {
			if (i != ROLE_MASTER)	/* a missing masterType is reported already */
				violations_add(c->out, field,
					       "acceleratorConfig can only be set together with %s.",
					       r->type_key);
			continue;
		}
		if (count < 0)
			violations_add(c->out, cfield, "Accelerator count must not be negative.");
		else if (type && count == 0)
			violations_add(c->out, cfield,
				       "Accelerator count must be greater than zero when an "
				       "accelerator type is set.");
		if (!type && count > 0)
			violations_add(c->out, tfield,
				       "Accelerator type must be set when an accelerator count is set.");
		if (!r->m) {
			if (type)	/* still say when the accelerator itself is unknown */
				check_machine_accelerator(c, NULL, type, 0, tfield, cfield,
							  r->type_field, &r->acc, &r->acc_count);
			continue;
		}
		if (r->m->legacy && !r->m->tpu_host) {
			violations_add(c->out, field,
				       "acceleratorConfig can only be set when %s is a Compute Engine "
				       "machine type; \"%s\" is a legacy machine type that comes with "
				       "its own accelerators.", r->type_key, r->m->name);
			continue;
		}
		if (r->m->tpu_host && rs[ROLE_MASTER].m && rs[ROLE_MASTER].m->legacy) {
			violations_add(c->out, field,
				       "acceleratorConfig can only be set on a %s worker when "
				       "masterType is a Compute Engine machine type.", r->m->name);
			continue;
		}
		check_machine_accelerator(c, r->m, type, count, tfield, cfield, r->type_field,
					  &r->acc, &r->acc_count);
	}
}

static bool is_tpu_runtime_or_image_version(const struct catalog *cat, const char *v)
{
	const struct catalog_runtime *rt = catalog_runtime_find(cat, v);

	if (rt && rt->tpu)
		return true;
	for (size_t i = 0; i < catalog_tpu_image_count(cat); i++) {
		const char *iv;
		(void)catalog_tpu_image(cat, i, &iv);
		if (!strcmp(iv, v))
			return true;
	}
	return false;
}

/*
 * Google's TPU guide (https://cloud.google.com/ai-platform/training/docs/using-tpus):
 * Cloud TPU workers, tpuTfVersion, TPU runtime versions.
 */
static void ml_tpu(struct ctx *c, bool custom, struct replica *rs, const char *runtime)
{
	struct replica *w = &rs[ROLE_WORKER];
	bool tpu_worker = w->m && w->m->tpu_host;

	for (int i = 0; i < ROLE_COUNT; i++) {
		struct replica *r = &rs[i];
		char field[FIELD_MAX];
		const char *tfv = r->pool->tpu_tf_version;

		if (!tfv && !(i == ROLE_WORKER && tpu_worker))
			continue;
		snprintf(field, sizeof(field), "%s.tpu_tf_version", r->config_field);
		if (i == ROLE_WORKER && tpu_worker) {
			if (!r->image) {
				if (tfv)
					violations_add(c->out, field,
						       "tpuTfVersion can only be set when the Cloud TPU "
						       "worker uses a custom container.");
				continue;
			}
			const char *need = catalog_tpu_image_version(c->cat, r->image);
			if (!tfv && need) {
				violations_add(c->out, field,
					       "tpuTfVersion is required when the Cloud TPU worker uses "
					       "a custom container; image \"%s\" needs tpuTfVersion "
					       "\"%s\".", r->image, need);
			} else if (!tfv) {
				violations_add(c->out, field,
					       "tpuTfVersion is required when the Cloud TPU worker uses "
					       "a custom container.");
			} else if (need && strcmp(need, tfv)) {
				violations_add(c->out, field, "Image \"%s\" requires tpuTfVersion \"%s\".",
					       r->image, need);
			} else if (!need && !is_tpu_runtime_or_image_version(c->cat, tfv)) {
				struct strbuf sb = STRBUF_INIT;
				add_runtime_list(c->cat, &sb, true);
				for (size_t k = 0; k < catalog_tpu_image_count(c->cat); k++) {
					const char *iv;
					(void)catalog_tpu_image(c->cat, k, &iv);
					sb_addf(&sb, ", %s", iv);
				}
				violations_add(c->out, field,
					       "tpuTfVersion \"%s\" is not supported. Supported values: %s.",
					       tfv, sb_str(&sb));
				sb_release(&sb);
			}
		} else if (tfv) {
			violations_add(c->out, field, "tpuTfVersion can only be set on a Cloud TPU worker.");
		}
	}
	if (!tpu_worker)
		return;
	if (custom && w->count != 1)
		violations_add(c->out, w->count_field, "workerCount must be 1 when workerType is %s.",
			       w->m->name);
	if (rs[ROLE_PS].count > 0 || rs[ROLE_PS].m)
		violations_add(c->out, rs[ROLE_PS].from_tier ? "training_input.scale_tier" :
			       rs[ROLE_PS].count > 0 ? rs[ROLE_PS].count_field : rs[ROLE_PS].type_field,
			       "Parameter servers cannot be used with Cloud TPU: parameterServerCount "
			       "must be 0 when workerType is %s.", w->m->name);
	/* Without a custom container the TPU worker runs the runtime version. */
	if (!w->image && runtime) {
		const struct catalog_runtime *rt = catalog_runtime_find(c->cat, runtime);
		if (rt && !rt->tpu) {
			struct strbuf sb = STRBUF_INIT;
			add_runtime_list(c->cat, &sb, true);
			violations_add(c->out, "training_input.runtime_version",
				       "Runtime version \"%s\" does not support training on Cloud TPU. "
				       "Runtime versions for Cloud TPU: %s.", runtime, sb_str(&sb));
			sb_release(&sb);
		}
	}
}

static void ml_region(struct ctx *c, const struct training_spec *spec, const struct replica *rs)
{
	const char *blame[CATALOG_MAX_ACCELERATORS] = { 0 };
	const char *region = spec->region;
	const struct catalog_region *r;
	catalog_accset used = 0;

	if (!region) {
		violations_add(c->out, "training_input.region", "Region must be specified.");
		return;
	}
	r = catalog_region_find(c->cat, region);
	if (!r || !(r->apis & CATALOG_API_ML)) {
		violations_add(c->out, "training_input.region",
			       "Region \"%s\" is not supported for training.", region);
		return;
	}
	for (int i = 0; i < ROLE_COUNT; i++) {
		if (!replica_active(&rs[i]) || rs[i].acc < 0)
			continue;
		used |= 1u << rs[i].acc;
		blame[rs[i].acc] = "training_input.region";
	}
	check_region_accelerators(c, r, used, blame, "training_input.region", "region");
}

static void ml_runtime(struct ctx *c, const struct training_spec *spec, const char *master_image,
		       const char **effective)
{
	const char *rv = spec->runtime_version;
	const char *pv = spec->python_version;
	const struct catalog_runtime *rt = NULL;

	*effective = rv;
	if (rv && master_image)
		violations_add(c->out, "training_input.runtime_version",
			       "Only one of masterConfig.imageUri and runtimeVersion should be set.");
	if (rv) {
		rt = catalog_runtime_find(c->cat, rv);
		if (!rt) {
			/* Google's words and field path, as the service answered
			 * gcloud in 2020 (docs/validation.md): the catalog's
			 * runtime versions are the supported ones. */
			violations_add(c->out, "runtime_version",
				       "The specified runtime version '%s' with the Python version "
				       "'%s' is not supported or is deprecated.  Please specify a "
				       "different runtime version. See https://cloud.google.com/"
				       "ml-engine/docs/runtime-version-list for a list of supported "
				       "versions", rv, pv ? pv : "");
			return;
		}
	} else if (!master_image) {
		*effective = catalog_default_runtime_version(c->cat);
		rt = catalog_runtime_find(c->cat, *effective);
	}
	if (!pv || !rt)
		return;
	for (size_t i = 0; i < rt->n_python; i++)
		if (!strcmp(rt->python[i], pv))
			return;
	{
		struct strbuf sb = STRBUF_INIT;
		for (size_t i = 0; i < rt->n_python; i++)
			sb_addf(&sb, "%s%s", i ? ", " : "", rt->python[i]);
		violations_add(c->out, "training_input.python_version",
			       "Python version \"%s\" is not available for runtime version \"%s\". "
			       "Available Python versions: %s.", pv, rt->version, sb_str(&sb));
		sb_release(&sb);
	}
}

static void ml_packages(struct ctx *c, const struct training_spec *spec, const char *master_image)
{
	const json_t *pkgs = spec->package_uris;
	size_t n = json_array_size(pkgs);

	if (!master_image && !n)
		violations_add(c->out, "training_input.package_uris",
			       "At least one package URI is required unless masterConfig.imageUri "
			       "is set.");
	if (!master_image && !spec->python_module)
		violations_add(c->out, "training_input.python_module",
			       "pythonModule is required unless masterConfig.imageUri is set.");
	if (n > MAX_PACKAGE_URIS) {
		violations_add(c->out, "training_input.package_uris",
			       "The maximum number of package URIs is %d.", MAX_PACKAGE_URIS);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const json_t *p = json_array_get(pkgs, i);
		if (!json_is_string(p) || !json_string_length(p)) {
			char field[FIELD_MAX];
			snprintf(field, sizeof(field), "training_input.package_uris[%zu]", i);
			violations_add(c->out, field, "Package URI must be a non-empty string.");
		}
	}
}

/* Per ReplicaConfig: containerCommand/containerArgs, diskConfig. */
static void ml_replica_configs(struct ctx *c, const struct training_spec *spec,
			       struct replica *rs)
{
	size_t args = json_array_size(spec->args);

	for (int i = 0; i < ROLE_COUNT; i++) {
		struct replica *r = &rs[i];
		char field[FIELD_MAX];

		if (json_array_size(r->pool->command)) {
			snprintf(field, sizeof(field), "%s.container_command", r->config_field);
			if (!r->image)
				violations_add(c->out, field,
					       "containerCommand cannot be set if a custom container "
					       "image is not provided.");
			if (args)
				violations_add(c->out, field,
					       "containerCommand and args are mutually exclusive, i.e., "
					       "both cannot be set at the same time.");
		}
		if (json_array_size(r->pool->args)) {
			snprintf(field, sizeof(field), "%s.container_args", r->config_field);
			if (!r->image)
				violations_add(c->out, field,
					       "containerArgs cannot be set if a custom container image "
					       "is not provided.");
			if (args)
				violations_add(c->out, field,
					       "containerArgs and args are mutually exclusive, i.e., both "
					       "cannot be set at the same time.");
		}
		check_boot_disk(c, r->pool->disk_type, r->pool->disk_size_gb, r->pool->disk_size_bad,
				r->config_field, ".disk_config");
	}
}

static void ml_scheduling(struct ctx *c, const struct spec_scheduling *s)
{
	int64_t nanos;

	if (!s->set)
		return;
	(void)check_duration(c, s->max_running_time, "training_input.scheduling.max_running_time",
			     &nanos);
	if (check_duration(c, s->max_wait_time, "training_input.scheduling.max_wait_time",
			   &nanos) && nanos < MIN_MAX_WAIT_NANOS)
		violations_add(c->out, "training_input.scheduling.max_wait_time",
			       "The minimum for this field is 1800s (30 minutes).");
	if (s->has_priority && (s->priority < 0 || s->priority > 1000))
		violations_add(c->out, "training_input.scheduling.priority",
			       "Priority must be between 0 and 1000.");
}

/* --- hyperparameters --- */

static const char *const scale_types[] = { "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE",
					    "UNIT_REVERSE_LOG_SCALE" };

static void hp_param(struct ctx *c, const struct spec_param *p, size_t i, bool grid)
{
	char base[BASE_MAX], f[FIELD_MAX];
	const char *type = p->type, *scale = p->scale_type;
	double minv = p->min_value, maxv = p->max_value;
	bool has_min = p->has_min, has_max = p->has_max, log_scale;
	const json_t *cats = p->categorical_values, *discs = p->discrete_values;

	snprintf(base, sizeof(base), "training_input.hyperparameters.params[%zu]", i);
	snprintf(f, sizeof(f), "%s.type", base);
	if (!type) {
		violations_add(c->out, f, "A parameter type (DOUBLE, INTEGER, CATEGORICAL or "
			       "DISCRETE) must be specified.");
		return;
	}
	if (grid && !strcmp(type, "DOUBLE"))
		violations_add(c->out, f, "GRID_SEARCH requires every parameter to be INTEGER, "
			       "CATEGORICAL or DISCRETE.");
	snprintf(f, sizeof(f), "%s.scale_type", base);
	log_scale = scale && strcmp(scale, "UNIT_LINEAR_SCALE");
	if (scale) {
		size_t k;
		for (k = 0; k < ARRAY_SIZE(scale_types); k++)
			if (!strcmp(scale, scale_types[k]))
				break;
		if (k == ARRAY_SIZE(scale_types)) {
			violations_add(c->out, f, "Scale type \"%s\" is not supported.", scale);
			scale = NULL;
			log_scale = false;
		}
	}

	if (!strcmp(type, "DOUBLE") || !strcmp(type, "INTEGER")) {
		bool integer = !strcmp(type, "INTEGER");
		snprintf(f, sizeof(f), "%s.min_value", base);
		if (!has_min)
			violations_add(c->out, f, "minValue is required for %s parameters.", type);
		else if (integer && minv != floor(minv))
			violations_add(c->out, f, "minValue must be an integer for INTEGER parameters.");
		else if (log_scale && minv <= 0)
			violations_add(c->out, f, "The entire feasible space must be strictly positive "
				       "for %s.", scale);
		snprintf(f, sizeof(f), "%s.max_value", base);
		if (!has_max)
			violations_add(c->out, f, "maxValue is required for %s parameters.", type);
		else if (integer && maxv != floor(maxv))
			violations_add(c->out, f, "maxValue must be an integer for INTEGER parameters.");
		else if (has_min && minv >= maxv)
			violations_add(c->out, f, "maxValue (%g) must be greater than minValue (%g).",
				       maxv, minv);
		if (cats) {
			snprintf(f, sizeof(f), "%s.categorical_values", base);
			violations_add(c->out, f, "categoricalValues can only be set for CATEGORICAL "
				       "parameters.");
		}
		if (discs) {
			snprintf(f, sizeof(f), "%s.discrete_values", base);
			violations_add(c->out, f, "discreteValues can only be set for DISCRETE "
				       "parameters.");
		}
		return;
	}
	if (strcmp(type, "CATEGORICAL") && strcmp(type, "DISCRETE")) {
		snprintf(f, sizeof(f), "%s.type", base);
		violations_add(c->out, f, "Parameter type \"%s\" is not supported.", type);
		return;
	}
	if (has_min || has_max) {
		snprintf(f, sizeof(f), "%s.%s", base, has_min ? "min_value" : "max_value");
		violations_add(c->out, f, "minValue and maxValue can only be set for DOUBLE and "
			       "INTEGER parameters.");
	}
	if (!strcmp(type, "CATEGORICAL")) {
		size_t n = json_array_size(cats);
		snprintf(f, sizeof(f), "%s.categorical_values", base);
		if (!n)
			violations_add(c->out, f, "categoricalValues must not be empty for CATEGORICAL "
				       "parameters.");
		else if (n > MAX_CATEGORICAL_VALUES)
			violations_add(c->out, f, "At most %d categorical values are supported.",
				       MAX_CATEGORICAL_VALUES);
		else
			for (size_t k = 0; k < n; k++) {
				const json_t *v = json_array_get(cats, k);
				if (!json_is_string(v)) {
					violations_add(c->out, f, "Categorical values must be strings.");
					break;
				}
				for (size_t j = 0; j < k; j++)
					if (json_equal(v, json_array_get(cats, j))) {
						violations_add(c->out, f, "Duplicate categorical value "
							       "\"%s\".", json_string_value(v));
						k = n;	/* one report is enough */
						break;
					}
			}
		if (discs) {
			snprintf(f, sizeof(f), "%s.discrete_values", base);
			violations_add(c->out, f, "discreteValues can only be set for DISCRETE "
				       "parameters.");
		}
		if (scale) {
			snprintf(f, sizeof(f), "%s.scale_type", base);
			violations_add(c->out, f, "scaleType cannot be set for CATEGORICAL parameters.");
		}
		return;
	}
	/* DISCRETE */
	{
		size_t n = json_array_size(discs);
		double prev = 0;
		snprintf(f, sizeof(f), "%s.discrete_values", base);
		if (!n)
			violations_add(c->out, f, "discreteValues must not be empty for DISCRETE "
				       "parameters.");
		else if (n > MAX_DISCRETE_VALUES)
			violations_add(c->out, f, "At most %d discrete values are supported.",
				       MAX_DISCRETE_VALUES);
		else
			for (size_t k = 0; k < n; k++) {
				double d;
				if (wire_double_get(json_array_get(discs, k), &d)) {
					violations_add(c->out, f, "Discrete values must be numbers.");
					break;
				}
				if (k && d <= prev) {
					violations_add(c->out, f, "Discrete values must be strictly "
						       "increasing.");
					break;
				}
				if (!k && log_scale && d <= 0) {
					violations_add(c->out, f, "The entire feasible space must be "
						       "strictly positive for %s.", scale);
					break;
				}
				prev = d;
			}
		if (cats) {
			snprintf(f, sizeof(f), "%s.categorical_values", base);
			violations_add(c->out, f, "categoricalValues can only be set for CATEGORICAL "
				       "parameters.");
		}
	}
}

static void ml_hyperparameters(struct ctx *c, const struct spec_hyperparameters *hp)
{
	const char *goal = hp->goal, *algo = hp->algorithm;
	bool grid;

	if (!hp->set)
		return;
	if (!goal)
		violations_add(c->out, "training_input.hyperparameters.goal",
			       "A goal (MAXIMIZE or MINIMIZE) must be specified.");
	else if (strcmp(goal, "MAXIMIZE") && strcmp(goal, "MINIMIZE"))
		violations_add(c->out, "training_input.hyperparameters.goal",
			       "Goal \"%s\" is not supported: use MAXIMIZE or MINIMIZE.", goal);
	if (algo && strcmp(algo, "GRID_SEARCH") && strcmp(algo, "RANDOM_SEARCH"))
		violations_add(c->out, "training_input.hyperparameters.algorithm",
			       "Algorithm \"%s\" is not supported.", algo);
	grid = algo && !strcmp(algo, "GRID_SEARCH");

	if (hp->has_max_trials && hp->max_trials < 1)
		violations_add(c->out, "training_input.hyperparameters.max_trials",
			       "maxTrials must be at least 1.");
	if (hp->has_max_parallel_trials && hp->max_parallel_trials < 1)
		violations_add(c->out, "training_input.hyperparameters.max_parallel_trials",
			       "maxParallelTrials must be at least 1.");
	else if (hp->has_max_parallel_trials && hp->has_max_trials && hp->max_trials >= 1 &&
		 hp->max_parallel_trials > hp->max_trials)
		violations_add(c->out, "training_input.hyperparameters.max_parallel_trials",
			       "maxParallelTrials (%lld) must not be greater than maxTrials (%lld).",
			       (long long)hp->max_parallel_trials, (long long)hp->max_trials);
	if (hp->has_max_failed_trials && hp->max_failed_trials < 0)
		violations_add(c->out, "training_input.hyperparameters.max_failed_trials",
			       "maxFailedTrials must not be negative.");

	if (!hp->nparams) {
		violations_add(c->out, "training_input.hyperparameters.params",
			       "At least one parameter must be specified.");
		return;
	}
	if (hp->nparams > MAX_HP_PARAMS) {
		violations_add(c->out, "training_input.hyperparameters.params",
			       "At most %d parameters are supported.", MAX_HP_PARAMS);
		return;
	}
	for (size_t i = 0; i < hp->nparams; i++) {
		const struct spec_param *p = &hp->params[i];
		char f[FIELD_MAX];

		if (!p->is_object)
			continue;	/* reported by the parse */
		snprintf(f, sizeof(f), "training_input.hyperparameters.params[%zu].parameter_name", i);
		if (!p->name) {
			violations_add(c->out, f, "parameterName must be specified.");
		} else {
			for (size_t j = 0; j < i; j++) {
				const char *q = hp->params[j].name;
				if (q && !strcmp(q, p->name)) {
					violations_add(c->out, f, "Duplicate parameter name \"%s\".",
						       p->name);
					break;
				}
			}
		}
		hp_param(c, p, i, grid);
	}
}

size_t spec_validate_ml(const struct catalog *cat, const struct training_spec *spec,
			struct violations *out)
{
	struct ctx c = { cat, out, CATALOG_API_ML };
	struct replica rs[ROLE_COUNT];
	const struct catalog_tier *tier = NULL;
	const char *tier_name, *runtime;
	size_t before = out->n;
	bool custom;

	if (spec->not_object || spec->npools != ROLE_COUNT)
		return 0;
	tier_name = spec->scale_tier;
	if (!tier_name)
		tier_name = "BASIC";	/* BASIC is 0, proto3's default */
	custom = !strcmp(tier_name, "CUSTOM");
	if (!custom) {
		tier = catalog_tier_find(cat, tier_name);
		if (!tier)
			violations_add(out, "training_input.scale_tier",
				       "Scale tier \"%s\" is not supported.", tier_name);
	}
	ml_replicas(&c, spec, custom, tier, rs);
	ml_images(&c, rs);
	ml_accelerators(&c, custom, rs);
	ml_runtime(&c, spec, rs[ROLE_MASTER].pool->image, &runtime);
	ml_tpu(&c, custom, rs, runtime);
	ml_region(&c, spec, rs);
	ml_packages(&c, spec, rs[ROLE_MASTER].pool->image);
	ml_replica_configs(&c, spec, rs);
	ml_scheduling(&c, &spec->scheduling);
	ml_hyperparameters(&c, &spec->hyperparameters);
	return out->n - before;
}
