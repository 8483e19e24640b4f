/*
 * cli.h - the pure parts of the trainplane CLI: config.yaml -> Job JSON,
 * gcloud flags -> request body, accelerator/label flag parsing, YAML
 * output and gcloud-style error rendering. No I/O besides reading the
 * config file; unit-tested in tests/unit/test_cli*.c.
 */
#ifndef TP_CLI_H
#define TP_CLI_H

#include <jansson.h>
#include "strbuf.h"

/* The `jobs submit training` flags; NULL/-1 = not given. */
struct submit_opts {
	const char *job_id;
	const char *config;		/* path */
	const char *region, *scale_tier;
	const char *master_machine_type, *master_accelerator, *master_image_uri;
	const char *worker_count, *worker_machine_type, *worker_accelerator, *worker_image_uri;
	const char *ps_count, *ps_machine_type, *ps_accelerator, *ps_image_uri;
	int use_chief_in_tf_config;	/* -1 unset, 0/1 */
	int enable_web_access;		/* -1 unset, 0/1 */
	const char *package_path, *packages, *staging_bucket, *module_name, *job_dir;
	const char *runtime_version, *python_version, *labels, *service_account;
	const char *network, *kms_key;
	char **user_args;		/* after `--`; has_user_args says whether `--` was given */
	int n_user_args;
	int has_user_args;
};

void submit_opts_init(struct submit_opts *o);

/*
 * Loads a config.yaml (or JSON) file as a Job, checked against the ml v1
 * Job schema: int64 fields become JSON strings, unknown keys are errors.
 * On error returns NULL and sets *err (caller frees) to
 * "FILE:LINE:COLUMN: message".
 */
json_t *cli_load_config(const char *path, char **err);
/* The same from a string; name is used in messages. */
json_t *cli_parse_config(const char *name, const char *text, size_t len, char **err);

/* Parses "count=4,type=nvidia-tesla-t4" into {"count":"4","type":"NVIDIA_TESLA_T4"}. */
json_t *cli_parse_accelerator(const char *flag, const char *value, char **err);
/* Parses "k=v,k2=v2" into {"k":"v",...}. */
json_t *cli_parse_labels(const char *flag, const char *value, char **err);

/*
 * The jobs.create body: config (may be NULL; not modified) overridden by
 * the flags. NULL and *err on a bad flag value.
 */
json_t *cli_build_submit_body(const struct submit_opts *o, const json_t *config, char **err);

/* --- gcloud ai custom-jobs create (reference §5, §6.4) --- */

/*
 * Loads a --config file of `ai custom-jobs create`: a CustomJobSpec
 * (workerPoolSpecs, scheduling, ...) in YAML or JSON, checked like
 * cli_load_config (int64 fields as strings, unknown keys are errors,
 * "FILE:LINE:COLUMN: message").
 */
json_t *cli_load_custom_job_spec(const char *path, char **err);
json_t *cli_parse_custom_job_spec(const char *name, const char *text, size_t len, char **err);

/* The `ai custom-jobs create` flags; NULL/-1 = not given. */
struct custom_job_opts {
	const char *display_name;
	const char *const *pool_specs;	/* --worker-pool-spec, one per pool, in order */
	int n_pool_specs;
	const char *args, *command;	/* comma-separated lists, for every pool */
	const char *python_package_uris, *labels, *network, *service_account;
	const char *persistent_resource_id;
	int enable_web_access;		/* -1 unset, 1 */
};

void custom_job_opts_init(struct custom_job_opts *o);

/*
 * One --worker-pool-spec value ("machine-type=n1-standard-4,replica-count=2,...")
 * as the WorkerPoolSpec gcloud sends; "" is an empty pool ({}).
 * python_package_uris (may be NULL) goes to pools with an executor-image-uri.
 */
json_t *cli_parse_worker_pool_spec(const char *value, const char *python_package_uris, char **err);

/*
 * The customJobs.create body {displayName, jobSpec, labels}: spec (the
 * --config CustomJobSpec, may be NULL; not modified) with the flags applied
 * as gcloud applies them. NULL and *err on a bad flag value.
 */
json_t *cli_build_custom_job_body(const struct custom_job_opts *o, const json_t *spec, char **err);

/* --- gcloud ai hp-tuning-jobs create --- */

/*
 * Loads a --config file of `ai hp-tuning-jobs create`: a
 * HyperparameterTuningJob (displayName, studySpec, maxTrialCount,
 * parallelTrialCount, maxFailedTrialCount, trialJobSpec, labels, ...) in
 * YAML or JSON, checked like cli_load_config ("FILE:LINE:COLUMN: message").
 */
json_t *cli_load_hp_tuning_job(const char *path, char **err);
json_t *cli_parse_hp_tuning_job(const char *name, const char *text, size_t len, char **err);

/* The `ai hp-tuning-jobs create` flags; NULL/0 = not given. */
struct hp_tuning_job_opts {
	const char *display_name;
	const char *max_trial_count, *parallel_trial_count, *max_failed_trial_count;
	const char *algorithm;	/* grid-search, random-search, algorithm-unspecified (or GRID_SEARCH ...) */
	const char *labels, *network, *service_account, *kms_key;
	int enable_web_access, enable_dashboard_access;
};

void hp_tuning_job_opts_init(struct hp_tuning_job_opts *o);

/*
 * The hyperparameterTuningJobs.create body: config (the --config job, may
 * be NULL; not modified) with the flags applied as gcloud applies them:
 * maxTrialCount and parallelTrialCount 1 unless given, --network,
 * --service-account and the access flags into trialJobSpec, --algorithm
 * into studySpec. NULL and *err on a bad flag value.
 */
json_t *cli_build_hp_tuning_job_body(const struct hp_tuning_job_opts *o, const json_t *config, char **err);

/*
 * Sorts an array of objects in place by gcloud's --sort-by keys:
 * "field.sub,~other" (`~` descending); stable, missing values first,
 * integer strings (int64) compared as numbers. -1 (and *err) on a bad key.
 */
int cli_sort(json_t *array, const char *keys, char **err);

/*
 * YAML of a JSON value, byte for byte as gcloud's yaml format prints it
 * (ruamel.yaml's safe dumper: keys sorted, block style, strings folded at
 * 80 columns, multi-line strings as |- blocks). yaml_emit.c.
 */
void cli_yaml(struct strbuf *out, const json_t *v);

struct schema_message;
/*
 * A reply read as gcloud reads it, through the API's message (m): a
 * double field sent as a whole number (consumedMLUnits: 0) becomes a real
 * (printed 0.0, as gcloud prints it). In place.
 */
void cli_typed(json_t *v, const struct schema_message *m);

/*
 * gcloud's rendering of an error reply: "ERROR: (COMMAND) STATUS: message"
 * with 404/409 special forms (reference §3.4) and details as YAML.
 * url_path is the request path (e.g. "/v1/projects/p/jobs/j").
 */
/* "create_time" -> "createTime" (new string): gcloud finds a field by either spelling. */
char *cli_camel(const char *s);

void cli_render_error(struct strbuf *out, const char *command, long http_status,
		      const char *url_path, const char *body);

#endif
