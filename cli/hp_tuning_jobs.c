/*
 * hp_tuning_jobs.c - `trainplane ai hp-tuning-jobs ...`: Vertex AI's
 * HyperparameterTuningJobs (create here; describe, cancel, stream-logs and
 * list in vertex_jobs.c), as gcloud's `ai hp-tuning-jobs`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "commands.h"
#include "common.h"
#include "flags.h"
#include "vertex_jobs.h"
#include "vertex_types.h"

/* gcloud's message (its job id, region and state). */
static void hp_tuning_job_created(const json_t *job)
{
	const char *name = json_string_value(json_object_get(job, "name"));
	const char *state = json_string_value(json_object_get(job, "state"));
	const char *id = name && strrchr(name, '/') ? strrchr(name, '/') + 1 : "";
	fprintf(stderr, "Hyperparameter tuning job [%s] submitted successfully.\n\n"
		"Your job is still active. You may view the status of your job with the command\n\n"
		"  $ trainplane ai hp-tuning-jobs describe %s --region=%s\n\n"
		"Job State: %s\n", id, id, cli_region_flag, state ? state : "JOB_STATE_UNSPECIFIED");
}

static const struct vertex_kind hp_tuning_jobs;

static int cmd_create(int argc, char **argv)
{
	static const struct cmd c = { "ai.hp-tuning-jobs.create",
		"trainplane ai hp-tuning-jobs create --region REGION --display-name NAME --config FILE\n"
		"    [--max-trial-count N] [--parallel-trial-count N] [--max-failed-trial-count N]\n"
		"    [--algorithm ALGORITHM] [--labels k=v,...] [--network N] [--service-account SA]\n"
		"    [--enable-web-access] [--enable-dashboard-access] [--kms-key KEY] [--format FORMAT]",
		0, 0, NULL, "create a hyperparameter tuning job",
		"Creates a Vertex AI HyperparameterTuningJob\n"
		"(projects.locations.hyperparameterTuningJobs.create). --config is the job in YAML or\n"
		"JSON: studySpec (metrics, parameters, algorithm, ...) and trialJobSpec (a\n"
		"CustomJobSpec: workerPoolSpecs, ...), optionally displayName, maxTrialCount,\n"
		"parallelTrialCount, maxFailedTrialCount and labels. The flags override the file;\n"
		"maxTrialCount and parallelTrialCount are 1 when neither gives them, as in gcloud.\n"
		"--network, --service-account and the access flags go to trialJobSpec, --algorithm\n"
		"to studySpec. --max-failed-trial-count is trainplane's (gcloud 528 has no such\n"
		"flag: it takes maxFailedTrialCount from the file only). Prints the job's id and\n"
		"state, and with --format the created job.",
		"To run up to 20 trials, 4 at a time, of the study in spec.yaml:\n\n"
		"  $ trainplane ai hp-tuning-jobs create --region us-central1 --display-name lr-sweep \\\n"
		"      --config spec.yaml --max-trial-count 20 --parallel-trial-count 4" };
	struct hp_tuning_job_opts o;
	const char *config = NULL;
	hp_tuning_job_opts_init(&o);
	const struct opt opts[] = {
		OPT_STR("--region", &cli_region_flag, "REGION", "the region of the job"),
		OPT_STR("--display-name", &o.display_name, "NAME", "the display name of the job"),
		OPT_STR("--config", &config, "FILE",
			"the HyperparameterTuningJob in YAML or JSON (studySpec, trialJobSpec, ...); the flags override it"),
		OPT_STR("--max-trial-count", &o.max_trial_count, "N", "the total number of trials (default 1)"),
		OPT_STR("--parallel-trial-count", &o.parallel_trial_count, "N",
			"how many trials run at once (default 1)"),
		OPT_STR("--max-failed-trial-count", &o.max_failed_trial_count, "N",
			"how many failed trials fail the job (0: the service decides; not a gcloud flag)"),
		OPT_STR("--algorithm", &o.algorithm, "ALGORITHM",
			"the search algorithm: algorithm-unspecified (Bayesian), grid-search or random-search"),
		OPT_STR("--labels", &o.labels, "KEY=VALUE,...", "labels of the job"),
		OPT_STR("--network", &o.network, "NETWORK", "the VPC network of the trials"),
		OPT_STR("--service-account", &o.service_account, "ACCOUNT", "the service account the trials run as"),
		OPT_BOOL("--enable-web-access", &o.enable_web_access, "ask for interactive web access to the trials"),
		OPT_BOOL("--enable-dashboard-access", &o.enable_dashboard_access,
			 "ask for access to the trials' dashboards"),
		OPT_STR("--kms-key", &o.kms_key, "KEY",
			"the job's KMS key: projects/P/locations/L/keyRings/R/cryptoKeys/K"),
		OPT_END };
	cli_parse(&c, opts, argc, argv);
	vertex_require_region(&c);
	if (!o.display_name)
		cli_usage_error(&c, "argument --display-name: Must be specified.%s", "");
	if (!config)
		cli_usage_error(&c, "argument --config: Must be specified.%s", "");
	char *err = NULL;
	json_t *file = cli_load_hp_tuning_job(config, &err), *body = NULL;
	if (file)
		body = cli_build_hp_tuning_job_body(&o, file, &err);
	json_decref(file);
	return vertex_job_create(&hp_tuning_jobs, &c, body, err, hp_tuning_job_created);
}

static const struct vertex_kind hp_tuning_jobs = {
	.group = "hp-tuning-jobs", .collection = "hyperparameterTuningJobs", .type = "HyperparameterTuningJob",
	.noun = "hyperparameter tuning job", .positional = "HPTUNING_JOB", .arg = "hptuning_job",
	.arg_what = "hyperparameter tuning job", .cancel_noun = "hyperparameter tuning job", .by_id = 1,
	.message = &vertex_hyperparameter_tuning_job_message,
	.list_format = "table(name.basename():label=HP_TUNING_JOB_ID, displayName, state, "
		       "createTime.date('%Y-%m-%dT%H:%M:%SZ', tz=UTC):label=CREATED)",
	.list_columns = "HP_TUNING_JOB_ID, DISPLAY_NAME, STATE and CREATED",
	.create = cmd_create,
};

int cli_hp_tuning_jobs_run(const char *verb, int argc, char **argv)
{
	return vertex_jobs_run(&hp_tuning_jobs, verb, argc, argv);
}
