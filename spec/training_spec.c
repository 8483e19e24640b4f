/*
 * training_spec.c - a request's training spec, typed (training_spec.h).
 *
 * The JSON readers below never trust the JSON type of a value: the wrong
 * type is reported (to a NULL list: nowhere) and reads as unset.
 */
#include "training_spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define FIELD_MAX 256
#define BASE_MAX 96	/* a path prefix that FIELD_MAX always has room to extend */

static const char *const role_names[ROLE_COUNT] = { "master", "worker", "ps", "evaluator" };

const char *replica_role_name(enum replica_role role)
{
	return (unsigned)role < ROLE_COUNT ? role_names[role] : "?";
}

/* ------------------------------------------------------------------------- */
/* Robust JSON access                                                         */

/*
 * Every reader names its field as a base and a suffix ("training_input.
 * worker_config", ".image_uri"): the path is only put together when there
 * is something to report, which a valid request never has.
 */
struct parse {
	struct violations *out;	/* may be NULL */
	size_t added;
};

static void report(struct parse *p, const char *base, const char *sfx, const char *description)
{
	char field[2 * FIELD_MAX];

	p->added++;
	if (!p->out)
		return;
	snprintf(field, sizeof(field), "%s%s", base, sfx);
	violations_add(p->out, field, "%s", description);
}

/* The member key of obj, or NULL when obj is not an object, key is absent or null. */
static const json_t *member(const json_t *obj, const char *key)
{
	const json_t *v;

	if (!json_is_object(obj))
		return NULL;
	v = json_object_get(obj, key);
	return json_is_null(v) ? NULL : v;
}

/* A string member; "" reads as unset (NULL). */
static const char *get_str(struct parse *p, const json_t *obj, const char *key, const char *base,
			   const char *sfx)
{
	const json_t *v = member(obj, key);

	if (!v)
		return NULL;
	if (!json_is_string(v)) {
		report(p, base, sfx, "Invalid value: expected a string.");
		return NULL;
	}
	return json_string_length(v) ? json_string_value(v) : NULL;
}

/* An enum member: NULL when absent or the *_UNSPECIFIED value. */
static const char *get_enum(struct parse *p, const json_t *obj, const char *key,
			    const char *base, const char *sfx)
{
	const char *s = get_str(p, obj, key, base, sfx);
	size_t n = s ? strlen(s) : 0;

	if (n >= 12 && !strcmp(s + n - 12, "_UNSPECIFIED"))
		return NULL;
	return s;
}

static const json_t *get_obj(struct parse *p, const json_t *obj, const char *key,
			     const char *base, const char *sfx)
{
	const json_t *v = member(obj, key);

	if (v && !json_is_object(v)) {
		report(p, base, sfx, "Invalid value: expected an object.");
		return NULL;
	}
	return v;
}

static const json_t *get_arr(struct parse *p, const json_t *obj, const char *key,
			     const char *base, const char *sfx)
{
	const json_t *v = member(obj, key);

	if (v && !json_is_array(v)) {
		report(p, base, sfx, "Invalid value: expected a list.");
		return NULL;
	}
	return v;
}

static bool get_bool(struct parse *p, const json_t *obj, const char *key, const char *base,
		     const char *sfx)
{
	const json_t *v = member(obj, key);

	if (v && !json_is_boolean(v)) {
		report(p, base, sfx, "Invalid value: expected true or false.");
		return false;
	}
	return json_is_true(v);
}

/* wire_int64_get, but never casting an out-of-range double (UB). */
static int json_int64(const json_t *v, int64_t *out)
{
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (!(d >= -9.2e18 && d <= 9.2e18))
			return -1;
	}
	return wire_int64_get(v, out);
}

/* An integer member (int64 as JSON string or number); unset or bad reads as 0. */
static void get_int(struct parse *p, const json_t *obj, const char *key, const char *base,
		    const char *sfx, int64_t *out, bool *set, bool *bad)
{
	const json_t *v = member(obj, key);

	*out = 0;
	if (set)
		*set = false;
	if (bad)
		*bad = false;
	if (!v)
		return;
	if (json_int64(v, out)) {
		*out = 0;
		if (bad)
			*bad = true;
		report(p, base, sfx, "Invalid value: expected an integer.");
		return;
	}
	if (set)
		*set = true;
}

static void get_double(struct parse *p, const json_t *obj, const char *key, const char *base,
		       const char *sfx, double *out, bool *set)
{
	const json_t *v = member(obj, key);

	*out = 0;
	*set = false;
	if (!v)
		return;
	if (wire_double_get(v, out)) {
		*out = 0;
		report(p, base, sfx, "Invalid value: expected a number.");
		return;
	}
	*set = true;
}

/* ------------------------------------------------------------------------- */
/* Shared parts                                                               */

/* An env list (EnvVar[]) of a container at base ("job_spec.worker_pool_specs[0].container_spec"). */
static void parse_env(struct parse *p, const json_t *spec, const char *base, struct spec_env *out)
{
	char f[FIELD_MAX];
	const json_t *env, *var;
	size_t i;

	env = get_arr(p, spec, "env", base, ".env");
	if (!env)
		return;
	out->set = true;
	out->vars = xcalloc(json_array_size(env) + 1, sizeof(*out->vars));
	json_array_foreach(env, i, var) {
		struct spec_env_var *e = &out->vars[out->n];
		snprintf(f, sizeof(f), "%s.env[%zu]", base, i);
		if (!json_is_object(var)) {
			report(p, f, "", "Invalid value: expected an object.");
			continue;
		}
		e->index = i;
		e->value = get_str(p, var, "value", f, ".value");
		e->name = get_str(p, var, "name", f, ".name");
		e->name_wrong_type = member(var, "name") && !json_is_string(member(var, "name"));
		out->n++;
	}
}

/* A boot disk (ml DiskConfig, Vertex DiskSpec) under key of owner, at base + sfx. */
static void parse_disk(struct parse *p, const json_t *owner, const char *key, const char *base,
		       const char *sfx, struct spec_pool *pool)
{
	char f[FIELD_MAX];
	const json_t *disk = get_obj(p, owner, key, base, sfx);

	pool->has_disk = disk != NULL;
	if (!disk)
		return;
	snprintf(f, sizeof(f), "%s%s", base, sfx);
	pool->disk_type = get_str(p, disk, "bootDiskType", f, ".boot_disk_type");
	get_int(p, disk, "bootDiskSizeGb", f, ".boot_disk_size_gb", &pool->disk_size_gb, NULL,
		&pool->disk_size_bad);
}

/* ------------------------------------------------------------------------- */
/* ml v1: TrainingInput                                                       */

static const struct {
	const char *type_key, *count_key, *config_key;	/* masterType ... */
	const char *type_field, *count_field, *config_field;	/* training_input.master_type ... */
} ml_roles[ROLE_COUNT] = {
	[ROLE_MASTER] = { "masterType", NULL, "masterConfig", "training_input.master_type", NULL,
			  "training_input.master_config" },
	[ROLE_WORKER] = { "workerType", "workerCount", "workerConfig", "training_input.worker_type",
			  "training_input.worker_count", "training_input.worker_config" },
	[ROLE_PS] = { "parameterServerType", "parameterServerCount", "parameterServerConfig",
		      "training_input.parameter_server_type", "training_input.parameter_server_count",
		      "training_input.parameter_server_config" },
	[ROLE_EVALUATOR] = { "evaluatorType", "evaluatorCount", "evaluatorConfig",
			     "training_input.evaluator_type", "training_input.evaluator_count",
			     "training_input.evaluator_config" },
};

static void ml_pool(struct parse *p, const json_t *ti, enum replica_role role,
		    struct spec_pool *pool)
{
	const char *base = ml_roles[role].config_field;
	const json_t *config, *ac;

	pool->role = role;
	pool->machine_type = get_str(p, ti, ml_roles[role].type_key, ml_roles[role].type_field, "");
	if (role != ROLE_MASTER)
		get_int(p, ti, ml_roles[role].count_key, ml_roles[role].count_field, "",
			&pool->replica_count, NULL, &pool->replica_count_bad);
	config = get_obj(p, ti, ml_roles[role].config_key, base, "");
	pool->has_config = config != NULL;
	if (!config)
		return;
	pool->image = get_str(p, config, "imageUri", base, ".image_uri");
	ac = get_obj(p, config, "acceleratorConfig", base, ".accelerator_config");
	pool->has_accelerator_config = ac != NULL;
	pool->accelerator_type = get_enum(p, ac, "type", base, ".accelerator_config.type");
	get_int(p, ac, "count", base, ".accelerator_config.count", &pool->accelerator_count, NULL,
		NULL);
	pool->tpu_tf_version = get_str(p, config, "tpuTfVersion", base, ".tpu_tf_version");
	pool->command = get_arr(p, config, "containerCommand", base, ".container_command");
	pool->args = get_arr(p, config, "containerArgs", base, ".container_args");
	parse_disk(p, config, "diskConfig", base, ".disk_config", pool);
}

static void ml_param(struct parse *p, const json_t *pj, size_t i, struct spec_param *out)
{
	char base[BASE_MAX];

	snprintf(base, sizeof(base), "training_input.hyperparameters.params[%zu]", i);
	if (!json_is_object(pj)) {
		report(p, base, "", "Invalid value: expected an object.");
		return;
	}
	out->is_object = true;
	out->name = get_str(p, pj, "parameterName", base, ".parameter_name");
	out->type = get_enum(p, pj, "type", base, ".type");
	out->scale_type = get_enum(p, pj, "scaleType", base, ".scale_type");
	if (out->scale_type && !strcmp(out->scale_type, "NONE"))
		out->scale_type = NULL;
	get_double(p, pj, "minValue", base, ".min_value", &out->min_value, &out->has_min);
	get_double(p, pj, "maxValue", base, ".max_value", &out->max_value, &out->has_max);
	out->categorical_values = get_arr(p, pj, "categoricalValues", base, ".categorical_values");
	out->discrete_values = get_arr(p, pj, "discreteValues", base, ".discrete_values");
	out->parent = -1;
}

#define HP "training_input.hyperparameters"

static void ml_hyperparameters(struct parse *p, const json_t *ti, struct spec_hyperparameters *hp)
{
	const json_t *h = get_obj(p, ti, "hyperparameters", HP, "");
	const json_t *params;

	if (!h)
		return;
	hp->set = true;
	hp->goal = get_enum(p, h, "goal", HP, ".goal");
	hp->metric_tag = get_str(p, h, "hyperparameterMetricTag", HP, ".hyperparameter_metric_tag");
	hp->algorithm = get_enum(p, h, "algorithm", HP, ".algorithm");
	get_int(p, h, "maxTrials", HP, ".max_trials", &hp->max_trials, &hp->has_max_trials, NULL);
	get_int(p, h, "maxParallelTrials", HP, ".max_parallel_trials", &hp->max_parallel_trials,
		&hp->has_max_parallel_trials, NULL);
	get_int(p, h, "maxFailedTrials", HP, ".max_failed_trials", &hp->max_failed_trials,
		&hp->has_max_failed_trials, NULL);
	params = get_arr(p, h, "params", HP, ".params");
	hp->nparams = json_array_size(params);
	if (!hp->nparams)
		return;
	hp->params = xcalloc(hp->nparams, sizeof(*hp->params));
	for (size_t i = 0; i < hp->nparams; i++)
		ml_param(p, json_array_get(params, i), i, &hp->params[i]);
	hp->early_stopping = get_bool(p, h, "enableTrialEarlyStopping", HP,
				      ".enable_trial_early_stopping");
}

#define TI "training_input"

size_t spec_ml_parse(const json_t *ti, struct training_spec *out, struct violations *vs)
{
	struct parse p = { vs, 0 };
	const json_t *s;

	memset(out, 0, sizeof(*out));
	out->api = SPEC_API_ML;
	out->npools = ROLE_COUNT;
	out->pools = xcalloc(ROLE_COUNT, sizeof(*out->pools));
	if (!json_is_object(ti)) {
		report(&p, TI, "", "Invalid value: expected an object.");
		out->not_object = true;
		for (int i = 0; i < ROLE_COUNT; i++)
			out->pools[i].role = (enum replica_role)i;
		return p.added;
	}
	out->scale_tier = get_str(&p, ti, "scaleTier", TI, ".scale_tier");
	for (int i = 0; i < ROLE_COUNT; i++)
		ml_pool(&p, ti, (enum replica_role)i, &out->pools[i]);
	out->package_uris = get_arr(&p, ti, "packageUris", TI, ".package_uris");
	out->python_module = get_str(&p, ti, "pythonModule", TI, ".python_module");
	out->args = get_arr(&p, ti, "args", TI, ".args");
	out->region = get_str(&p, ti, "region", TI, ".region");
	out->job_dir = get_str(&p, ti, "jobDir", TI, ".job_dir");
	out->runtime_version = get_str(&p, ti, "runtimeVersion", TI, ".runtime_version");
	out->python_version = get_str(&p, ti, "pythonVersion", TI, ".python_version");
	out->use_chief_in_tf_config = get_bool(&p, ti, "useChiefInTfConfig", TI,
					       ".use_chief_in_tf_config");
	s = get_obj(&p, ti, "scheduling", TI, ".scheduling");
	if (s) {
		struct spec_scheduling *sc = &out->scheduling;
		sc->set = true;
		sc->max_running_time = get_str(&p, s, "maxRunningTime", TI,
					       ".scheduling.max_running_time");
		sc->max_wait_time = get_str(&p, s, "maxWaitTime", TI, ".scheduling.max_wait_time");
		get_int(&p, s, "priority", TI, ".scheduling.priority", &sc->priority,
			&sc->has_priority, NULL);
		sc->strategy = get_enum(&p, s, "strategy", TI, ".scheduling.strategy");
		sc->restart_job_on_worker_restart =
			get_bool(&p, s, "resilientToWorkerRestart", TI,
				 ".scheduling.resilient_to_worker_restart");
	}
	ml_hyperparameters(&p, ti, &out->hyperparameters);
	return p.added;
}

/* ------------------------------------------------------------------------- */
/* Vertex: CustomJobSpec                                                      */

static void vx_pool(struct parse *p, const json_t *pj, size_t i, struct spec_pool *pool)
{
	char base[BASE_MAX], f[FIELD_MAX];
	const json_t *ms, *cs, *pp;

	pool->role = i < ROLE_COUNT ? (enum replica_role)i : ROLE_EVALUATOR;
	/* "All worker pools except the first one are optional and can be
	 * skipped by providing an empty value." */
	if (json_is_object(pj) && !json_object_size(pj)) {
		pool->empty = true;
		return;
	}
	snprintf(base, sizeof(base), "job_spec.worker_pool_specs[%zu]", i);
	if (!json_is_object(pj)) {
		pool->empty = pool->not_object = true;
		report(p, base, "", "Invalid value: expected an object.");
		return;
	}
	ms = get_obj(p, pj, "machineSpec", base, ".machine_spec");
	pool->has_config = ms != NULL;
	get_int(p, pj, "replicaCount", base, ".replica_count", &pool->replica_count, NULL,
		&pool->replica_count_bad);
	if (ms) {
		pool->machine_type = get_str(p, ms, "machineType", base, ".machine_spec.machine_type");
		pool->accelerator_type = get_enum(p, ms, "acceleratorType", base,
						  ".machine_spec.accelerator_type");
		get_int(p, ms, "acceleratorCount", base, ".machine_spec.accelerator_count",
			&pool->accelerator_count, NULL, NULL);
		pool->tpu_topology = get_str(p, ms, "tpuTopology", base, ".machine_spec.tpu_topology");
	}
	cs = get_obj(p, pj, "containerSpec", base, ".container_spec");
	pp = get_obj(p, pj, "pythonPackageSpec", base, ".python_package_spec");
	pool->has_container = cs != NULL;
	pool->has_python_package = pp != NULL;
	if (cs) {
		pool->image = get_str(p, cs, "imageUri", base, ".container_spec.image_uri");
		pool->command = get_arr(p, cs, "command", base, ".container_spec.command");
		pool->args = get_arr(p, cs, "args", base, ".container_spec.args");
		snprintf(f, sizeof(f), "%s.container_spec", base);
		parse_env(p, cs, f, &pool->env);
	}
	if (pp) {
		pool->executor_image = get_str(p, pp, "executorImageUri", base,
					       ".python_package_spec.executor_image_uri");
		pool->package_uris = get_arr(p, pp, "packageUris", base,
					     ".python_package_spec.package_uris");
		pool->python_module = get_str(p, pp, "pythonModule", base,
					      ".python_package_spec.python_module");
		pool->python_args = get_arr(p, pp, "args", base, ".python_package_spec.args");
		snprintf(f, sizeof(f), "%s.python_package_spec", base);
		parse_env(p, pp, f, &pool->python_env);
	}
	parse_disk(p, pj, "diskSpec", base, ".disk_spec", pool);
}

#define JS "job_spec"

size_t spec_vertex_parse(const json_t *job_spec, const char *location, struct training_spec *out,
			 struct violations *vs)
{
	struct parse p = { vs, 0 };
	const json_t *pools, *s, *bod;

	memset(out, 0, sizeof(*out));
	out->api = SPEC_API_VERTEX;
	out->region = location && *location ? location : NULL;
	if (!json_is_object(job_spec)) {
		report(&p, JS, "", "Invalid value: expected an object.");
		out->not_object = true;
		return p.added;
	}
	pools = get_arr(&p, job_spec, "workerPoolSpecs", JS, ".worker_pool_specs");
	out->has_pools = pools != NULL;
	out->npools = json_array_size(pools);
	out->pools = xcalloc(out->npools + 1, sizeof(*out->pools));
	for (size_t i = 0; i < out->npools; i++)
		vx_pool(&p, json_array_get(pools, i), i, &out->pools[i]);
	s = get_obj(&p, job_spec, "scheduling", JS, ".scheduling");
	if (s) {
		struct spec_scheduling *sc = &out->scheduling;
		sc->set = true;
		sc->max_running_time = get_str(&p, s, "timeout", JS, ".scheduling.timeout");
		sc->max_wait_time = get_str(&p, s, "maxWaitDuration", JS,
					    ".scheduling.max_wait_duration");
		sc->strategy = get_enum(&p, s, "strategy", JS, ".scheduling.strategy");
		sc->restart_job_on_worker_restart =
			get_bool(&p, s, "restartJobOnWorkerRestart", JS,
				 ".scheduling.restart_job_on_worker_restart");
		sc->disable_retries = get_bool(&p, s, "disableRetries", JS,
					       ".scheduling.disable_retries");
	}
	bod = get_obj(&p, job_spec, "baseOutputDirectory", JS, ".base_output_directory");
	out->base_output_directory = get_str(&p, bod, "outputUriPrefix", JS,
					     ".base_output_directory.output_uri_prefix");
	return p.added;
}

/* ------------------------------------------------------------------------- */
/* Vertex: HyperparameterTuningJob                                            */

#define HT "hyperparameter_tuning_job"

/* The value spec of a parameter: its type, range or list. */
static void vx_value_spec(struct parse *p, const json_t *pj, struct spec_param *out)
{
	static const struct {
		const char *key, *sfx, *type;
	} specs[] = {
		{ "doubleValueSpec", ".double_value_spec", "DOUBLE" },
		{ "integerValueSpec", ".integer_value_spec", "INTEGER" },
		{ "categoricalValueSpec", ".categorical_value_spec", "CATEGORICAL" },
		{ "discreteValueSpec", ".discrete_value_spec", "DISCRETE" },
	};
	for (size_t k = 0; k < ARRAY_SIZE(specs); k++) {
		const json_t *vs = get_obj(p, pj, specs[k].key, out->path, specs[k].sfx);
		char base[FIELD_MAX];
		int64_t i;
		bool set;
		if (!vs)
			continue;
		out->value_specs++;
		if (out->type)
			continue;	/* the first one given; the validator names the rest */
		out->type = specs[k].type;
		snprintf(base, sizeof(base), "%s%s", out->path, specs[k].sfx);
		out->has_default = member(vs, "defaultValue") != NULL;
		if (k == 0) {
			get_double(p, vs, "minValue", base, ".min_value", &out->min_value, &set);
			get_double(p, vs, "maxValue", base, ".max_value", &out->max_value, &set);
		} else if (k == 1) {
			get_int(p, vs, "minValue", base, ".min_value", &i, NULL, NULL);
			out->min_value = (double)i;
			get_int(p, vs, "maxValue", base, ".max_value", &i, NULL, NULL);
			out->max_value = (double)i;
		} else if (k == 2) {
			out->categorical_values = get_arr(p, vs, "values", base, ".values");
		} else {
			out->discrete_values = get_arr(p, vs, "values", base, ".values");
		}
		/* proto3: an unset bound is 0 */
		out->has_min = out->has_max = k < 2;
	}
}

/* One parameter, then its conditional parameters after it (depth first). */
static void vx_param(struct parse *p, const json_t *pj, const char *path, int parent,
		     const char *kind, const json_t *values, int depth,
		     struct spec_hyperparameters *hp, size_t *cap)
{
	if (hp->nparams == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		hp->params = xrealloc(hp->params, *cap * sizeof(*hp->params));
	}
	size_t self = hp->nparams++;
	struct spec_param *out = &hp->params[self];
	memset(out, 0, sizeof(*out));
	out->path = xstrdup(path);
	out->parent = parent;
	out->parent_kind = kind;
	out->parent_values = values;
	if (!json_is_object(pj)) {
		report(p, path, "", "Invalid value: expected an object.");
		return;
	}
	out->is_object = true;
	out->name = get_str(p, pj, "parameterId", path, ".parameter_id");
	out->scale_type = get_enum(p, pj, "scaleType", path, ".scale_type");
	vx_value_spec(p, pj, out);

	const json_t *conds = get_arr(p, pj, "conditionalParameterSpecs", path,
				      ".conditional_parameter_specs");
	if (conds && depth >= SPEC_CONDITION_DEPTH) {
		hp->conditions_too_deep = true;
		return;
	}
	for (size_t k = 0; k < json_array_size(conds); k++) {
		static const struct {
			const char *key, *kind;
		} parents[] = {
			{ "parentDiscreteValues", "DISCRETE" },
			{ "parentIntValues", "INTEGER" },
			{ "parentCategoricalValues", "CATEGORICAL" },
		};
		const json_t *c = json_array_get(conds, k), *v = NULL;
		const char *ckind = NULL;
		char sub[FIELD_MAX];
		for (size_t j = 0; j < ARRAY_SIZE(parents) && !ckind; j++) {
			const json_t *pc = member(c, parents[j].key);
			if (pc) {
				ckind = parents[j].kind;
				v = member(pc, "values");
			}
		}
		snprintf(sub, sizeof(sub), "%s.conditional_parameter_specs[%zu].parameter_spec", path, k);
		vx_param(p, member(c, "parameterSpec"), sub, (int)self, ckind, v, depth + 1, hp, cap);
	}
}

size_t spec_vertex_study_parse(const json_t *job, const char *location, struct training_spec *out,
			       struct violations *vs)
{
	struct parse p = { vs, 0 };
	size_t added = spec_vertex_parse(member(job, "trialJobSpec"), location, out, vs);
	struct spec_hyperparameters *hp = &out->hyperparameters;
	const json_t *ss = get_obj(&p, job, "studySpec", HT, ".study_spec"), *params;
	size_t cap = 0;

	hp->set = true;
	get_int(&p, job, "maxTrialCount", HT, ".max_trial_count", &hp->max_trials,
		&hp->has_max_trials, NULL);
	get_int(&p, job, "parallelTrialCount", HT, ".parallel_trial_count",
		&hp->max_parallel_trials, &hp->has_max_parallel_trials, NULL);
	get_int(&p, job, "maxFailedTrialCount", HT, ".max_failed_trial_count",
		&hp->max_failed_trials, &hp->has_max_failed_trials, NULL);
	if (!ss)
		return added + p.added;
	hp->metrics = get_arr(&p, ss, "metrics", HT, ".study_spec.metrics");
	const json_t *m0 = json_array_get(hp->metrics, 0);
	hp->metric_tag = get_str(&p, m0, "metricId", HT, ".study_spec.metrics[0].metric_id");
	hp->goal = get_enum(&p, m0, "goal", HT, ".study_spec.metrics[0].goal");
	hp->algorithm = get_enum(&p, ss, "algorithm", HT, ".study_spec.algorithm");
	const char *sel = get_enum(&p, ss, "measurementSelectionType", HT,
				   ".study_spec.measurement_selection_type");
	hp->best_measurement = sel && !strcmp(sel, "BEST_MEASUREMENT");
	hp->early_stopping = member(ss, "medianAutomatedStoppingSpec") ||
			     member(ss, "decayCurveStoppingSpec") ||
			     member(ss, "convexAutomatedStoppingSpec");
	params = get_arr(&p, ss, "parameters", HT, ".study_spec.parameters");
	for (size_t i = 0; i < json_array_size(params); i++) {
		char path[FIELD_MAX];
		snprintf(path, sizeof(path), HT ".study_spec.parameters[%zu]", i);
		vx_param(&p, json_array_get(params, i), path, -1, NULL, NULL, 0, hp, &cap);
	}
	return added + p.added;
}

/* ------------------------------------------------------------------------- */

bool spec_stored_is_vertex(const json_t *stored)
{
	return json_object_get(stored, "jobSpec") != NULL ||
	       json_object_get(stored, "trialJobSpec") != NULL;
}

void spec_parse_stored(const json_t *stored, const char *region, struct training_spec *out)
{
	if (json_object_get(stored, "studySpec")) {
		(void)spec_vertex_study_parse(stored, region, out, NULL);
	} else if (spec_stored_is_vertex(stored)) {
		(void)spec_vertex_parse(json_object_get(stored, "jobSpec"), region, out, NULL);
	} else {
		(void)spec_ml_parse(stored, out, NULL);
		if (region && *region && !out->region)
			out->region = region;
	}
}

const struct catalog_tier_replica *spec_tier_replica(const struct catalog_tier *tier,
						     enum replica_role role)
{
	switch (role) {
	case ROLE_MASTER:
		return &tier->master;
	case ROLE_WORKER:
		return &tier->worker;
	case ROLE_PS:
		return &tier->parameter_server;
	default:
		return &tier->evaluator;
	}
}

void spec_release(struct training_spec *spec)
{
	for (size_t i = 0; i < spec->npools; i++) {
		free(spec->pools[i].env.vars);
		free(spec->pools[i].python_env.vars);
	}
	free(spec->pools);
	for (size_t i = 0; i < spec->hyperparameters.nparams; i++)
		free(spec->hyperparameters.params[i].path);
	free(spec->hyperparameters.params);
	memset(spec, 0, sizeof(*spec));
}
