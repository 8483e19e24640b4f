/*
 * custom_jobs.c - `trainplane ai custom-jobs ...`: Vertex AI's CustomJobs
 * (create here; describe, cancel, stream-logs and list in vertex_jobs.c).
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

static void custom_job_created(const json_t *job)
{
	const char *name = json_string_value(json_object_get(job, "name"));
	fprintf(stderr, "CustomJob [%s] is submitted successfully.\n\n"
		"Your job is still active. You may view the status of your job with the command\n\n"
		"  $ trainplane ai custom-jobs describe %s\n\n"
		"or continue streaming the logs with the command\n\n"
		"  $ trainplane ai custom-jobs stream-logs %s\n", name ? name : "", name ? name : "",
		name ? name : "");
}

static const struct vertex_kind custom_jobs;

static int cmd_custom_create(int argc, char **argv)
{
	static const struct cmd c = { "ai.custom-jobs.create",
		"trainplane ai custom-jobs create --region REGION --display-name NAME\n"
		"    (--worker-pool-spec=machine-type=T,replica-count=N,accelerator-type=A,\n"
		"       accelerator-count=N,container-image-uri=URI ... (repeat: one per pool)\n"
		"     | --config FILE) [--args=A,...] [--command=C,...] [--labels k=v,...]\n"
		"    [--python-package-uris URI,...] [--network N] [--service-account SA]\n"
		"    [--enable-web-access] [--persistent-resource-id ID] [--format FORMAT]",
		0, 0, NULL, "create a custom job",
		"Creates a Vertex AI CustomJob (projects.locations.customJobs.create).\n"
		"--config is a CustomJobSpec in YAML or JSON (workerPoolSpecs, scheduling,\n"
		"baseOutputDirectory, ...). --worker-pool-spec flags replace its workerPoolSpecs;\n"
		"an empty --worker-pool-spec= skips a pool (not the first). executor-image-uri with\n"
		"python-module (and --python-package-uris) instead of container-image-uri makes a\n"
		"Python package pool. --args and --command apply to every pool. With --format, the\n"
		"created job is printed.",
		"To run two pools of a container:\n\n"
		"  $ trainplane ai custom-jobs create --region us-central1 --display-name exp-1 \\\n"
		"      --worker-pool-spec=machine-type=n1-standard-4,replica-count=1,container-image-uri=localhost/t:1 \\\n"
		"      --worker-pool-spec=machine-type=n1-standard-4,replica-count=2,container-image-uri=localhost/t:1" };
	struct custom_job_opts o;
	struct strlist pools = { { 0 }, 0 };
	const char *config = NULL;
	custom_job_opts_init(&o);
	const struct opt opts[] = {
		OPT_STR("--region", &cli_region_flag, "REGION", "the region of the job"),
		OPT_STR("--display-name", &o.display_name, "NAME", "the display name of the job"),
		OPT_LIST("--worker-pool-spec", &pools, "machine-type=T,replica-count=N,container-image-uri=URI,...",
			"one worker pool (repeat the flag: one per pool, in order)"),
		OPT_STR("--config", &config, "FILE", "a CustomJobSpec in YAML or JSON (workerPoolSpecs: ...); the flags override it"),
		OPT_STR("--args", &o.args, "ARG,...", "arguments of every pool's container"),
		OPT_STR("--command", &o.command, "CMD,...", "the command of every pool's container"),
		OPT_STR("--labels", &o.labels, "KEY=VALUE,...", "labels of the job"),
		OPT_STR("--python-package-uris", &o.python_package_uris, "URI,...", "Python packages of pools with an executor-image-uri"),
		OPT_STR("--network", &o.network, "NETWORK", "the VPC network of the job"),
		OPT_STR("--service-account", &o.service_account, "ACCOUNT", "the service account the job runs as"),
		OPT_BOOL("--enable-web-access", &o.enable_web_access, "ask for interactive web access to the replicas"),
		OPT_STR("--persistent-resource-id", &o.persistent_resource_id, "ID", "the persistent resource the job runs on"),
		OPT_END };
	cli_parse(&c, opts, argc, argv);
	vertex_require_region(&c);
	if (!o.display_name)
		cli_usage_error(&c, "argument --display-name: Must be specified.%s", "");
	if (!pools.n && !config)
		cli_usage_error(&c, "Missing required argument [--worker-pool-spec]: Either --worker-pool-spec "
			    "or --config must be specified.%s", "");
	o.pool_specs = pools.v;
	o.n_pool_specs = pools.n;
	json_t *spec = NULL, *body = NULL;
	char *err = NULL;
	if (!config || (spec = cli_load_custom_job_spec(config, &err)))
		body = cli_build_custom_job_body(&o, spec, &err);
	json_decref(spec);
	return vertex_job_create(&custom_jobs, &c, body, err, custom_job_created);
}

static const struct vertex_kind custom_jobs = {
	.group = "custom-jobs", .collection = "customJobs", .type = "CustomJob", .noun = "custom job",
	.positional = "CUSTOM_JOB", .arg = "custom_job", .arg_what = "customJob", .cancel_noun = "CustomJob",
	.by_id = 0, .message = &vertex_custom_job_message,
	.list_format = "table(name.basename():label=CUSTOM_JOB_ID, displayName, state, "
		       "createTime.date('%Y-%m-%dT%H:%M:%SZ', tz=UTC):label=CREATED)",
	.list_columns = "CUSTOM_JOB_ID, DISPLAY_NAME, STATE and CREATED",
	.create = cmd_custom_create,
};

int cli_custom_jobs_run(const char *verb, int argc, char **argv)
{
	return vertex_jobs_run(&custom_jobs, verb, argc, argv);
}
