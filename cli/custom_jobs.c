/*
 * custom_jobs.c - `trainplane ai custom-jobs ...`: Vertex AI's CustomJobs
 * (create, describe, cancel, stream-logs, list).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "commands.h"
#include "common.h"
#include "flags.h"
#include "list.h"
#include "stream_logs.h"
#include "vertex_types.h"

static const char *region_flag;

/*
 * A CustomJob named in full (projects/P/locations/R/customJobs/ID) or by its
 * id with --region (the project is the CLI's). Sets *name to the full name
 * and *id to the id (caller frees both); exits 2 when it cannot.
 */
static void custom_job_name(const struct cmd *c, const char *arg, char **name, char **id)
{
	if (!strncmp(arg, "projects/", 9)) {
		char *copy = xstrdup(arg), *save = NULL, *seg[7];
		int n = 0;
		for (char *s = strtok_r(copy, "/", &save); s; s = strtok_r(NULL, "/", &save))
			seg[n < 7 ? n : 6] = s, n++;
		if (n != 6 || strcmp(seg[2], "locations") || strcmp(seg[4], "customJobs")) {
			free(copy);
			cli_usage_error(c, "Invalid CustomJob name [%s]: expected "
				    "projects/PROJECT/locations/REGION/customJobs/ID.", arg);
		}
		*id = xstrdup(seg[5]);
		free(copy);
		*name = xstrdup(arg);
		return;
	}
	if (!region_flag || !*region_flag)
		cli_usage_error(c, "Error parsing [custom_job]. The [customJob] resource is not properly "
			    "specified. Failed to find attribute [region]: give the full name "
			    "projects/PROJECT/locations/REGION/customJobs/%s or --region.", arg);
	if (strchr(arg, '/'))
		cli_usage_error(c, "Invalid CustomJob id [%s].", arg);
	*id = xstrdup(arg);
	*name = xasprintf("projects/%s/locations/%s/customJobs/%s", cli_project, region_flag, arg);
}

static void require_region(const struct cmd *c)
{
	if (!region_flag || !*region_flag)
		cli_usage_error(c, "argument --region: Must be specified.%s", "");
}

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
		OPT_STR("--region", &region_flag, "REGION", "the region of the job"),
		OPT_STR("--display-name", &o.display_name, "NAME", "the display name of the job"),
		OPT_LIST("--worker-pool-spec", &pools, "machine-type=T,replica-count=N,container-image-uri=URI,...",
			"one worker pool (repeat the flag: one per pool, in order)"),
		OPT_STR("--config", &config, "FILE", "a Job in YAML or JSON (trainingInput: ...); the flags override its values"),
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
	require_region(&c);
	if (!o.display_name)
		cli_usage_error(&c, "argument --display-name: Must be specified.%s", "");
	if (!pools.n && !config)
		cli_usage_error(&c, "Missing required argument [--worker-pool-spec]: Either --worker-pool-spec "
			    "or --config must be specified.%s", "");
	o.pool_specs = pools.v;
	o.n_pool_specs = pools.n;
	json_t *spec = NULL;
	char *err = NULL;
	if (config && !(spec = cli_load_custom_job_spec(config, &err))) {
		fprintf(stderr, "ERROR: (trainplane.%s) %s\n", c.name, err);
		free(err);
		return EXIT_USAGE;
	}
	json_t *body = cli_build_custom_job_body(&o, spec, &err);
	json_decref(spec);
	if (!body) {
		fprintf(stderr, "ERROR: (trainplane.%s) %s\n", c.name, err);
		free(err);
		return EXIT_USAGE;
	}
	char *parent = xasprintf("projects/%s/locations/%s", cli_project, region_flag);
	char *path = cli_name_path(parent, "/customJobs");
	free(parent);
	json_t *job = cli_call("POST", path, body);
	free(path);
	json_decref(body);
	if (!job)
		return 1;
	const char *name = json_string_value(json_object_get(job, "name"));
	fprintf(stderr, "CustomJob [%s] is submitted successfully.\n\n"
		"Your job is still active. You may view the status of your job with the command\n\n"
		"  $ trainplane ai custom-jobs describe %s\n\n"
		"or continue streaming the logs with the command\n\n"
		"  $ trainplane ai custom-jobs stream-logs %s\n", name ? name : "", name ? name : "",
		name ? name : "");
	if (cli_format) {
		cli_typed(job, &vertex_custom_job_message);
		cli_print_value(job);
	}
	json_decref(job);
	return 0;
}

/* describe, cancel and stream-logs: JOB plus --region. */
static int cmd_custom_job(const char *verb, int argc, char **argv)
{
	static char cname[64];
	struct cmd c = { cname, NULL, 1, 1, "CUSTOM_JOB", NULL, NULL, NULL };
	const char *interval = "1", *task = NULL;
	int describe = !strcmp(verb, "describe"), cancel = !strcmp(verb, "cancel");
	snprintf(cname, sizeof cname, "ai.custom-jobs.%s", verb);
	c.usage = describe ? "trainplane ai custom-jobs describe (NAME | ID --region REGION) [--format FORMAT]"
		  : cancel ? "trainplane ai custom-jobs cancel (NAME | ID --region REGION)"
			   : "trainplane ai custom-jobs stream-logs (NAME | ID --region REGION) [--task-name T]\n"
			     "    [--polling-interval SECONDS]";
	c.summary = describe ? "describe a custom job" : cancel ? "cancel a custom job" : "show the log of a custom job";
	c.description = describe ? "Prints a Vertex AI CustomJob, as YAML unless --format says otherwise. NAME is\n"
				   "projects/PROJECT/locations/REGION/customJobs/ID."
		      : cancel ? "Cancels a Vertex AI CustomJob. NAME is projects/PROJECT/locations/REGION/customJobs/ID."
			       : "Prints the job's log (task names workerpool0-0, workerpool1-0, ...) until the\n"
				 "job ends; exits 1 unless it ended JOB_STATE_SUCCEEDED.";
	c.examples = describe ? "To print a job's state:\n\n"
				"  $ trainplane ai custom-jobs describe 42 --region us-central1 --format 'value(state)'"
		   : cancel ? "To cancel a job:\n\n  $ trainplane ai custom-jobs cancel 42 --region us-central1"
			    : "To follow the first pool's first replica:\n\n"
			      "  $ trainplane ai custom-jobs stream-logs 42 --region us-central1 --task-name workerpool0-0";
	const struct opt opts[] = {
		OPT_STR("--region", &region_flag, "REGION", "the region of the job"),
		OPT_STR("--polling-interval", &interval, "SECONDS", "how often the log is polled (default 1)"),
		OPT_STR("--task-name", &task, "TASK", "print only this task's lines (e.g. master-replica-0, workerpool0-0)"),
		OPT_END };
	const struct opt few[] = { OPT_STR("--region", &region_flag, "REGION", "the region of the job"),
		OPT_END };
	cli_parse(&c, describe || cancel ? few : opts, argc, argv);
	char *name, *id;
	custom_job_name(&c, cli_positional[0], &name, &id);
	int rc = 0;
	if (describe) {
		char *path = cli_name_path(name, NULL);
		json_t *j = cli_call("GET", path, NULL);
		free(path);
		if (j) {
			cli_typed(j, &vertex_custom_job_message);
			cli_print_value(j);
		}
		rc = j ? 0 : 1;
		json_decref(j);
	} else if (cancel) {
		char *path = cli_name_path(name, ":cancel");
		json_t *body = json_object();
		json_t *r = cli_call("POST", path, body);
		json_decref(body);
		free(path);
		if (r)
			fprintf(stderr, "Request to cancel CustomJob [%s] has been sent.\n\n"
				"You may view the status of your job with the command\n\n"
				"  $ trainplane ai custom-jobs describe %s\n", name, name);
		rc = r ? 0 : 1;
		json_decref(r);
	} else {
		/* the log's project is the name's */
		char *proj = xstrdup(name + 9);
		*strchr(proj, '/') = '\0';
		char *path = cli_name_path(name, NULL);
		rc = cli_stream_logs(path, proj, id, "JOB_STATE_SUCCEEDED", task, cli_polling(interval));
		free(path);
		free(proj);
	}
	free(name);
	free(id);
	return rc;
}

static char *custom_job_uri(const json_t *j)
{
	char *p = cli_name_path(json_string_value(json_object_get(j, "name")) ?: "", NULL);
	char *u = xstrdup(p + 1);	/* without the leading / */
	free(p);
	return u;
}

static int cmd_custom_list(int argc, char **argv)
{
	static const struct cmd c = { "ai.custom-jobs.list",
		"trainplane ai custom-jobs list --region REGION [--filter EXPRESSION] [--limit LIMIT]\n"
		"    [--page-size PAGE_SIZE] [--sort-by [~]FIELD,...] [--uri] [--format FORMAT]", 0, 0, NULL,
		"list custom jobs",
		"Lists the Vertex AI CustomJobs of a region (every page): CUSTOM_JOB_ID, DISPLAY_NAME,\n"
		"STATE and CREATED (UTC). --filter takes gcloud's filter expressions\n"
		"(state=JOB_STATE_FAILED, displayName:exp-*, labels.team=ml, AND, OR, NOT), applied\n"
		"here as gcloud applies them; then --sort-by, then --limit. (gcloud's own default\n"
		"output of this list is YAML: --format yaml prints that.)",
		"To list the newest job's URI:\n\n"
		"  $ trainplane ai custom-jobs list --region us-central1 --sort-by ~createTime --limit 1 --uri\n\n"
		"To list the failed jobs' names and errors:\n\n"
		"  $ trainplane ai custom-jobs list --region us-central1 --filter state=JOB_STATE_FAILED \\\n"
		"      --format 'table(name.basename(), error.message)'" };
	const struct opt opts[] = {
		OPT_STR("--region", &region_flag, "REGION", "the region of the jobs"), LIST_OPTS, OPT_END };
	cli_parse(&c, opts, argc, argv);
	require_region(&c);
	char *parent = xasprintf("projects/%s/locations/%s", cli_project, region_flag);
	char *base = cli_name_path(parent, "/customJobs");
	free(parent);
	json_t *all = cli_list_all(&c, base, "customJobs");
	free(base);
	if (!all)
		return 1;
	size_t i;
	json_t *j;
	json_array_foreach(all, i, j)
		cli_typed(j, &vertex_custom_job_message);
	cli_print_list(all, "table(name.basename():label=CUSTOM_JOB_ID, displayName, state, "
		       "createTime.date('%Y-%m-%dT%H:%M:%SZ', tz=UTC):label=CREATED)", NULL, custom_job_uri);
	json_decref(all);
	return 0;
}

int cli_custom_jobs_run(const char *verb, int argc, char **argv)
{
	if (!strcmp(verb, "create"))
		return cmd_custom_create(argc, argv);
	if (!strcmp(verb, "list"))
		return cmd_custom_list(argc, argv);
	if (!strcmp(verb, "describe") || !strcmp(verb, "cancel") || !strcmp(verb, "stream-logs"))
		return cmd_custom_job(verb, argc, argv);
	fprintf(stderr, "ERROR: (trainplane.ai.custom-jobs) Invalid choice: '%s'. Valid choices are "
		"[cancel, create, describe, list, stream-logs].\n", verb);
	return EXIT_USAGE;
}
