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
		"    [--enable-web-access] [--persistent-resource-id ID] [--format json|yaml]\n"
		"--config is a CustomJobSpec in YAML or JSON (workerPoolSpecs, scheduling,\n"
		"baseOutputDirectory, ...). --worker-pool-spec flags replace its workerPoolSpecs;\n"
		"an empty --worker-pool-spec= skips a pool (not the first). executor-image-uri with\n"
		"python-module (and --python-package-uris) instead of container-image-uri makes a\n"
		"Python package pool. --args and --command apply to every pool.", 0, 0 };
	struct custom_job_opts o;
	struct strlist pools = { { 0 }, 0 };
	const char *config = NULL;
	custom_job_opts_init(&o);
	const struct opt opts[] = {
		{ "--region", F_STR, &region_flag, NULL }, { "--display-name", F_STR, &o.display_name, NULL },
		{ "--worker-pool-spec", F_LIST, NULL, NULL, &pools }, { "--config", F_STR, &config, NULL },
		{ "--args", F_STR, &o.args, NULL }, { "--command", F_STR, &o.command, NULL },
		{ "--labels", F_STR, &o.labels, NULL },
		{ "--python-package-uris", F_STR, &o.python_package_uris, NULL },
		{ "--network", F_STR, &o.network, NULL }, { "--service-account", F_STR, &o.service_account, NULL },
		{ "--enable-web-access", F_BOOL, NULL, &o.enable_web_access },
		{ "--persistent-resource-id", F_STR, &o.persistent_resource_id, NULL },
		{ NULL, 0, NULL, NULL } };
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
	if (cli_format)
		cli_print_value(job);
	json_decref(job);
	return 0;
}

/* describe, cancel and stream-logs: JOB plus --region. */
static int cmd_custom_job(const char *verb, int argc, char **argv)
{
	static char cname[64];
	struct cmd c = { cname, NULL, 1, 1 };
	const char *interval = "1", *task = NULL;
	int describe = !strcmp(verb, "describe"), cancel = !strcmp(verb, "cancel");
	snprintf(cname, sizeof cname, "ai.custom-jobs.%s", verb);
	c.usage = describe ? "trainplane ai custom-jobs describe (NAME | ID --region REGION) [--format json|yaml]\n"
			     "NAME is projects/PROJECT/locations/REGION/customJobs/ID."
		  : cancel ? "trainplane ai custom-jobs cancel (NAME | ID --region REGION)\n"
			     "NAME is projects/PROJECT/locations/REGION/customJobs/ID."
			   : "trainplane ai custom-jobs stream-logs (NAME | ID --region REGION) [--task-name T]\n"
			     "    [--polling-interval SECONDS]\n"
			     "Prints the job's log (task names workerpool0-0, workerpool1-0, ...) until the\n"
			     "job ends; exits 1 unless it ended JOB_STATE_SUCCEEDED.";
	const struct opt opts[] = {
		{ "--region", F_STR, &region_flag, NULL },
		{ "--polling-interval", F_STR, &interval, NULL }, { "--task-name", F_STR, &task, NULL },
		{ NULL, 0, NULL, NULL } };
	const struct opt few[] = { { "--region", F_STR, &region_flag, NULL }, { NULL, 0, NULL, NULL } };
	cli_parse(&c, describe || cancel ? few : opts, argc, argv);
	char *name, *id;
	custom_job_name(&c, cli_positional[0], &name, &id);
	int rc = 0;
	if (describe) {
		char *path = cli_name_path(name, NULL);
		json_t *j = cli_call("GET", path, NULL);
		free(path);
		if (j)
			cli_print_value(j);
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

static int cmd_custom_list(int argc, char **argv)
{
	static const struct cmd c = { "ai.custom-jobs.list",
		"trainplane ai custom-jobs list --region REGION [--filter EXPR] [--limit N] [--page-size N]\n"
		"    [--sort-by [~]FIELD,...] [--format json|yaml]\n"
		"EXPR is the API's filter, e.g. 'state=JOB_STATE_FAILED', 'display_name:\"exp-*\"' or\n"
		"'labels.team=ml'; --sort-by sorts by fields of the CustomJob (e.g. ~createTime).", 0, 0 };
	const char *filter = NULL, *limit_s = NULL, *page_s = NULL, *sort_by = NULL;
	const struct opt opts[] = {
		{ "--region", F_STR, &region_flag, NULL }, { "--filter", F_STR, &filter, NULL },
		{ "--limit", F_STR, &limit_s, NULL }, { "--page-size", F_STR, &page_s, NULL },
		{ "--sort-by", F_STR, &sort_by, NULL }, { NULL, 0, NULL, NULL } };
	cli_parse(&c, opts, argc, argv);
	require_region(&c);
	char *parent = xasprintf("projects/%s/locations/%s", cli_project, region_flag);
	char *base = cli_name_path(parent, "/customJobs");
	free(parent);
	json_t *all = cli_list_all(&c, base, "customJobs", filter, limit_s, page_s, sort_by);
	free(base);
	if (!all)
		return 1;
	if (cli_format) {
		cli_print_value(all);
	} else if (json_array_size(all)) {
		printf("%-20s %-32s %-22s %s\n", "CUSTOM_JOB_ID", "DISPLAY_NAME", "STATE", "CREATED");
		size_t i;
		json_t *j;
		json_array_foreach(all, i, j) {
			const char *n = json_string_value(json_object_get(j, "name"));
			const char *dn = json_string_value(json_object_get(j, "displayName"));
			const char *st = json_string_value(json_object_get(j, "state"));
			const char *ct = json_string_value(json_object_get(j, "createTime"));
			const char *base_id = n && strrchr(n, '/') ? strrchr(n, '/') + 1 : n;
			printf("%-20s %-32s %-22s %s\n", base_id ? base_id : "", dn ? dn : "", st ? st : "",
			       ct ? ct : "");
		}
	} else {
		fprintf(stderr, "Listed 0 items.\n");
	}
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
