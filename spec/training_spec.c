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

struct parse {
	struct violations *out;	/* may be NULL */
	size_t added;
};

static void report(struct parse *p, const char *field, const char *description)
{
	p->added++;
	if (p->out)
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
static const char *get_str(struct parse *p, const json_t *obj, const char *key, const char *field)
{
	const json_t *v = member(obj, key);

	if (!v)
		return NULL;
	if (!json_is_string(v)) {
		report(p, field, "Invalid value: expected a string.");
		return NULL;
	}
	return json_string_length(v) ? json_string_value(v) : NULL;
}

/* An enum member: NULL when absent or the *_UNSPECIFIED value. */
static const char *get_enum(struct parse *p, const json_t *obj, const char *key, const char *field)
{
	const char *s = get_str(p, obj, key, field);
	size_t n = s ? strlen(s) : 0;

	if (n >= 12 && !strcmp(s + n - 12, "_UNSPECIFIED"))
		return NULL;
	return s;
}

static const json_t *get_obj(struct parse *p, const json_t *obj, const char *key,
			     const char *field)
{
	const json_t *v = member(obj, key);

	if (v && !json_is_object(v)) {
		report(p, field, "Invalid value: expected an object.");
		return NULL;
	}
	return v;
}

static const json_t *get_arr(struct parse *p, const json_t *obj, const char *key,
			     const char *field)
{
	const json_t *v = member(obj, key);

	if (v && !json_is_array(v)) {
		report(p, field, "Invalid value: expected a list.");
		return NULL;
	}
	return v;
}

static bool get_bool(struct parse *p, const json_t *obj, const char *key, const char *field)
{
	const json_t *v = member(obj, key);

	if (v && !json_is_boolean(v)) {
		report(p, field, "Invalid value: expected true or false.");
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
static void get_int(struct parse *p, const json_t *obj, const char *key, const char *field,
		    int64_t *out, bool *set, bool *bad)
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
		report(p, field, "Invalid value: expected an integer.");
		return;
	}
	if (set)
		*set = true;
}

/* A double (JSON number, or a numeric string as proto3 JSON allows). */
static int json_double(const json_t *v, double *out)
{
	if (json_is_number(v)) {
		*out = json_number_value(v);
		return 0;
	}
	if (json_is_string(v) && json_string_length(v)) {
		char *end;
		*out = strtod(json_string_value(v), &end);
		return *end || !isfinite(*out) ? -1 : 0;
	}
	return -1;
}

static void get_double(struct parse *p, const json_t *obj, const char *key, const char *field,
		       double *out, bool *set)
{
	const json_t *v = member(obj, key);

	*out = 0;
	*set = false;
	if (!v)
		return;
	if (json_double(v, out)) {
		*out = 0;
		report(p, field, "Invalid value: expected a number.");
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

	snprintf(f, sizeof(f), "%s.env", base);
	env = get_arr(p, spec, "env", f);
	if (!env)
		return;
	out->set = true;
	out->vars = xcalloc(json_array_size(env) + 1, sizeof(*out->vars));
	json_array_foreach(env, i, var) {
		struct spec_env_var *e = &out->vars[out->n];
		if (!json_is_object(var)) {
			snprintf(f, sizeof(f), "%s.env[%zu]", base, i);
			report(p, f, "Invalid value: expected an object.");
			continue;
		}
		e->index = i;
		snprintf(f, sizeof(f), "%s.env[%zu].value", base, i);
		e->value = get_str(p, var, "value", f);
		snprintf(f, sizeof(f), "%s.env[%zu].name", base, i);
		e->name = get_str(p, var, "name", f);
		e->name_wrong_type = member(var, "name") && !json_is_string(member(var, "name"));
		out->n++;
	}
}

/* A boot disk (ml DiskConfig, Vertex DiskSpec) at field ("...disk_config"). */
static void parse_disk(struct parse *p, const json_t *owner, const char *key, const char *field,
		       struct spec_pool *pool)
{
	char f[FIELD_MAX];
	const json_t *disk = get_obj(p, owner, key, field);

	pool->has_disk = disk != NULL;
	snprintf(f, sizeof(f), "%s.boot_disk_type", field);
	pool->disk_type = get_str(p, disk, "bootDiskType", f);
	snprintf(f, sizeof(f), "%s.boot_disk_size_gb", field);
	get_int(p, disk, "bootDiskSizeGb", f, &pool->disk_size_gb, NULL, &pool->disk_size_bad);
}

/* ------------------------------------------------------------------------- */
/* ml v1: TrainingInput                                                       */

static const struct {
	const char *json;	/* JSON key prefix: masterType, masterConfig */
	const char *snake;	/* path prefix: training_input.master_type */
} ml_roles[ROLE_COUNT] = {
	[ROLE_MASTER] = { "master", "master" },
	[ROLE_WORKER] = { "worker", "worker" },
	[ROLE_PS] = { "parameterServer", "parameter_server" },
	[ROLE_EVALUATOR] = { "evaluator", "evaluator" },
};

static void ml_pool(struct parse *p, const json_t *ti, enum replica_role role,
		    struct spec_pool *pool)
{
	char key[48], field[FIELD_MAX], base[BASE_MAX];
	const json_t *config, *ac;

	pool->role = role;
	snprintf(key, sizeof(key), "%sType", ml_roles[role].json);
	snprintf(field, sizeof(field), "training_input.%s_type", ml_roles[role].snake);
	pool->machine_type = get_str(p, ti, key, field);
	if (role != ROLE_MASTER) {
		snprintf(key, sizeof(key), "%sCount", ml_roles[role].json);
		snprintf(field, sizeof(field), "training_input.%s_count", ml_roles[role].snake);
		get_int(p, ti, key, field, &pool->replica_count, NULL, &pool->replica_count_bad);
	}
	snprintf(key, sizeof(key), "%sConfig", ml_roles[role].json);
	snprintf(base, sizeof(base), "training_input.%s_config", ml_roles[role].snake);
	config = get_obj(p, ti, key, base);
	pool->has_config = config != NULL;

	snprintf(field, sizeof(field), "%s.image_uri", base);
	pool->image = get_str(p, config, "imageUri", field);
	snprintf(field, sizeof(field), "%s.accelerator_config", base);
	ac = get_obj(p, config, "acceleratorConfig", field);
	pool->has_accelerator_config = ac != NULL;
	snprintf(field, sizeof(field), "%s.accelerator_config.type", base);
	pool->accelerator_type = get_enum(p, ac, "type", field);
	snprintf(field, sizeof(field), "%s.accelerator_config.count", base);
	get_int(p, ac, "count", field, &pool->accelerator_count, NULL, NULL);
	snprintf(field, sizeof(field), "%s.tpu_tf_version", base);
	pool->tpu_tf_version = get_str(p, config, "tpuTfVersion", field);
	snprintf(field, sizeof(field), "%s.container_command", base);
	pool->command = get_arr(p, config, "containerCommand", field);
	snprintf(field, sizeof(field), "%s.container_args", base);
	pool->args = get_arr(p, config, "containerArgs", field);
	snprintf(field, sizeof(field), "%s.disk_config", base);
	parse_disk(p, config, "diskConfig", field, pool);
}

static void ml_param(struct parse *p, const json_t *pj, size_t i, struct spec_param *out)
{
	char base[BASE_MAX], f[FIELD_MAX];

	snprintf(base, sizeof(base), "training_input.hyperparameters.params[%zu]", i);
	if (!json_is_object(pj)) {
		report(p, base, "Invalid value: expected an object.");
		return;
	}
	out->is_object = true;
	snprintf(f, sizeof(f), "%s.parameter_name", base);
	out->name = get_str(p, pj, "parameterName", f);
	snprintf(f, sizeof(f), "%s.type", base);
	out->type = get_enum(p, pj, "type", f);
	snprintf(f, sizeof(f), "%s.scale_type", base);
	out->scale_type = get_enum(p, pj, "scaleType", f);
	if (out->scale_type && !strcmp(out->scale_type, "NONE"))
		out->scale_type = NULL;
	snprintf(f, sizeof(f), "%s.min_value", base);
	get_double(p, pj, "minValue", f, &out->min_value, &out->has_min);
	snprintf(f, sizeof(f), "%s.max_value", base);
	get_double(p, pj, "maxValue", f, &out->max_value, &out->has_max);
	snprintf(f, sizeof(f), "%s.categorical_values", base);
	out->categorical_values = get_arr(p, pj, "categoricalValues", f);
	snprintf(f, sizeof(f), "%s.discrete_values", base);
	out->discrete_values = get_arr(p, pj, "discreteValues", f);
}

static void ml_hyperparameters(struct parse *p, const json_t *ti, struct spec_hyperparameters *hp)
{
	const json_t *h = get_obj(p, ti, "hyperparameters", "training_input.hyperparameters");
	const json_t *params;

	if (!h)
		return;
	hp->set = true;
	hp->goal = get_enum(p, h, "goal", "training_input.hyperparameters.goal");
	hp->metric_tag = get_str(p, h, "hyperparameterMetricTag",
				 "training_input.hyperparameters.hyperparameter_metric_tag");
	hp->algorithm = get_enum(p, h, "algorithm", "training_input.hyperparameters.algorithm");
	get_int(p, h, "maxTrials", "training_input.hyperparameters.max_trials", &hp->max_trials,
		&hp->has_max_trials, NULL);
	get_int(p, h, "maxParallelTrials", "training_input.hyperparameters.max_parallel_trials",
		&hp->max_parallel_trials, &hp->has_max_parallel_trials, NULL);
	get_int(p, h, "maxFailedTrials", "training_input.hyperparameters.max_failed_trials",
		&hp->max_failed_trials, &hp->has_max_failed_trials, NULL);
	params = get_arr(p, h, "params", "training_input.hyperparameters.params");
	hp->nparams = json_array_size(params);
	hp->params = xcalloc(hp->nparams + 1, sizeof(*hp->params));
	for (size_t i = 0; i < hp->nparams; i++)
		ml_param(p, json_array_get(params, i), i, &hp->params[i]);
}

size_t spec_ml_parse(const json_t *ti, struct training_spec *out, struct violations *vs)
{
	struct parse p = { vs, 0 };
	const json_t *s;

	memset(out, 0, sizeof(*out));
	out->api = SPEC_API_ML;
	out->npools = ROLE_COUNT;
	out->pools = xcalloc(ROLE_COUNT, sizeof(*out->pools));
	if (!json_is_object(ti)) {
		report(&p, "training_input", "Invalid value: expected an object.");
		out->not_object = true;
		for (int i = 0; i < ROLE_COUNT; i++)
			out->pools[i].role = (enum replica_role)i;
		return p.added;
	}
	out->scale_tier = get_str(&p, ti, "scaleTier", "training_input.scale_tier");
	for (int i = 0; i < ROLE_COUNT; i++)
		ml_pool(&p, ti, (enum replica_role)i, &out->pools[i]);
	out->package_uris = get_arr(&p, ti, "packageUris", "training_input.package_uris");
	out->python_module = get_str(&p, ti, "pythonModule", "training_input.python_module");
	out->args = get_arr(&p, ti, "args", "training_input.args");
	out->region = get_str(&p, ti, "region", "training_input.region");
	out->job_dir = get_str(&p, ti, "jobDir", "training_input.job_dir");
	out->runtime_version = get_str(&p, ti, "runtimeVersion", "training_input.runtime_version");
	out->python_version = get_str(&p, ti, "pythonVersion", "training_input.python_version");
	out->use_chief_in_tf_config = get_bool(&p, ti, "useChiefInTfConfig",
					       "training_input.use_chief_in_tf_config");
	s = get_obj(&p, ti, "scheduling", "training_input.scheduling");
	if (s) {
		struct spec_scheduling *sc = &out->scheduling;
		sc->set = true;
		sc->max_running_time = get_str(&p, s, "maxRunningTime",
					       "training_input.scheduling.max_running_time");
		sc->max_wait_time = get_str(&p, s, "maxWaitTime",
					    "training_input.scheduling.max_wait_time");
		get_int(&p, s, "priority", "training_input.scheduling.priority", &sc->priority,
			&sc->has_priority, NULL);
		sc->strategy = get_enum(&p, s, "strategy", "training_input.scheduling.strategy");
		sc->restart_job_on_worker_restart =
			get_bool(&p, s, "resilientToWorkerRestart",
				 "training_input.scheduling.resilient_to_worker_restart");
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
	snprintf(base, sizeof(base), "job_spec.worker_pool_specs[%zu]", i);
	/* "All worker pools except the first one are optional and can be
	 * skipped by providing an empty value." */
	if (json_is_object(pj) && !json_object_size(pj)) {
		pool->empty = true;
		return;
	}
	if (!json_is_object(pj)) {
		pool->empty = pool->not_object = true;
		report(p, base, "Invalid value: expected an object.");
		return;
	}
	snprintf(f, sizeof(f), "%s.machine_spec", base);
	ms = get_obj(p, pj, "machineSpec", f);
	pool->has_config = ms != NULL;
	snprintf(f, sizeof(f), "%s.replica_count", base);
	get_int(p, pj, "replicaCount", f, &pool->replica_count, NULL, &pool->replica_count_bad);
	snprintf(f, sizeof(f), "%s.machine_spec.machine_type", base);
	pool->machine_type = get_str(p, ms, "machineType", f);
	snprintf(f, sizeof(f), "%s.machine_spec.accelerator_type", base);
	pool->accelerator_type = get_enum(p, ms, "acceleratorType", f);
	snprintf(f, sizeof(f), "%s.machine_spec.accelerator_count", base);
	get_int(p, ms, "acceleratorCount", f, &pool->accelerator_count, NULL, NULL);
	snprintf(f, sizeof(f), "%s.machine_spec.tpu_topology", base);
	pool->tpu_topology = get_str(p, ms, "tpuTopology", f);

	snprintf(f, sizeof(f), "%s.container_spec", base);
	cs = get_obj(p, pj, "containerSpec", f);
	snprintf(f, sizeof(f), "%s.python_package_spec", base);
	pp = get_obj(p, pj, "pythonPackageSpec", f);
	pool->has_container = cs != NULL;
	pool->has_python_package = pp != NULL;
	if (cs) {
		snprintf(f, sizeof(f), "%s.container_spec.image_uri", base);
		pool->image = get_str(p, cs, "imageUri", f);
		snprintf(f, sizeof(f), "%s.container_spec.command", base);
		pool->command = get_arr(p, cs, "command", f);
		snprintf(f, sizeof(f), "%s.container_spec.args", base);
		pool->args = get_arr(p, cs, "args", f);
		snprintf(f, sizeof(f), "%s.container_spec", base);
		parse_env(p, cs, f, &pool->env);
	}
	if (pp) {
		snprintf(f, sizeof(f), "%s.python_package_spec.executor_image_uri", base);
		pool->executor_image = get_str(p, pp, "executorImageUri", f);
		snprintf(f, sizeof(f), "%s.python_package_spec.package_uris", base);
		pool->package_uris = get_arr(p, pp, "packageUris", f);
		snprintf(f, sizeof(f), "%s.python_package_spec.python_module", base);
		pool->python_module = get_str(p, pp, "pythonModule", f);
		snprintf(f, sizeof(f), "%s.python_package_spec.args", base);
		pool->python_args = get_arr(p, pp, "args", f);
		snprintf(f, sizeof(f), "%s.python_package_spec", base);
		parse_env(p, pp, f, &pool->python_env);
	}
	snprintf(f, sizeof(f), "%s.disk_spec", base);
	parse_disk(p, pj, "diskSpec", f, pool);
}

size_t spec_vertex_parse(const json_t *job_spec, const char *location, struct training_spec *out,
			 struct violations *vs)
{
	struct parse p = { vs, 0 };
	const json_t *pools, *s, *bod;

	memset(out, 0, sizeof(*out));
	out->api = SPEC_API_VERTEX;
	out->region = location && *location ? location : NULL;
	if (!json_is_object(job_spec)) {
		report(&p, "job_spec", "Invalid value: expected an object.");
		out->not_object = true;
		return p.added;
	}
	pools = get_arr(&p, job_spec, "workerPoolSpecs", "job_spec.worker_pool_specs");
	out->has_pools = pools != NULL;
	out->npools = json_array_size(pools);
	out->pools = xcalloc(out->npools + 1, sizeof(*out->pools));
	for (size_t i = 0; i < out->npools; i++)
		vx_pool(&p, json_array_get(pools, i), i, &out->pools[i]);
	s = get_obj(&p, job_spec, "scheduling", "job_spec.scheduling");
	if (s) {
		struct spec_scheduling *sc = &out->scheduling;
		sc->set = true;
		sc->max_running_time = get_str(&p, s, "timeout", "job_spec.scheduling.timeout");
		sc->max_wait_time = get_str(&p, s, "maxWaitDuration",
					    "job_spec.scheduling.max_wait_duration");
		sc->strategy = get_enum(&p, s, "strategy", "job_spec.scheduling.strategy");
		sc->restart_job_on_worker_restart =
			get_bool(&p, s, "restartJobOnWorkerRestart",
				 "job_spec.scheduling.restart_job_on_worker_restart");
		sc->disable_retries = get_bool(&p, s, "disableRetries",
					       "job_spec.scheduling.disable_retries");
	}
	bod = get_obj(&p, job_spec, "baseOutputDirectory", "job_spec.base_output_directory");
	out->base_output_directory = get_str(&p, bod, "outputUriPrefix",
					     "job_spec.base_output_directory.output_uri_prefix");
	return p.added;
}

/* ------------------------------------------------------------------------- */

bool spec_stored_is_vertex(const json_t *stored)
{
	return json_object_get(stored, "jobSpec") != NULL;
}

void spec_parse_stored(const json_t *stored, const char *region, struct training_spec *out)
{
	if (spec_stored_is_vertex(stored)) {
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
	free(spec->hyperparameters.params);
	memset(spec, 0, sizeof(*spec));
}
