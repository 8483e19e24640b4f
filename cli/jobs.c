/*
 * jobs.c - `trainplane ai-platform jobs ...`: the ml v1 Jobs API (submit
 * training, describe, cancel, stream-logs, update, list).
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
#include "ml_types.h"
#include "stream_logs.h"

static char *job_path(const char *job, const char *suffix)
{
	char *p = cli_escape(cli_project), *j = cli_escape(job);
	char *out = xasprintf("/v1/projects/%s/jobs/%s%s", p, j, suffix ? suffix : "");
	free(p);
	free(j);
	return out;
}

static int cmd_submit(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.submit.training",
		"trainplane ai-platform jobs submit training JOB [--config FILE] [--region REGION]\n"
		"    [--scale-tier TIER] [--master-machine-type T] [--master-accelerator count=N,type=T]\n"
		"    [--master-image-uri URI] [--worker-count N --worker-machine-type T]\n"
		"    [--worker-accelerator count=N,type=T] [--worker-image-uri URI]\n"
		"    [--parameter-server-count N --parameter-server-machine-type T]\n"
		"    [--parameter-server-accelerator count=N,type=T] [--parameter-server-image-uri URI]\n"
		"    [--use-chief-in-tf-config] [--package-path DIR] [--packages P,...] [--staging-bucket B]\n"
		"    [--module-name M]\n"
		"    [--job-dir DIR] [--runtime-version V] [--python-version V] [--labels k=v,...]\n"
		"    [--service-account SA] [--network N] [--kms-key K] [--enable-web-access]\n"
		"    [--stream-logs | --async] [--polling-interval SECONDS] [-- USER_ARGS...]",
		1, 1, "JOB", "submit a training job",
		"Creates the ml v1 job JOB (projects.jobs.create). Flags override the values of the\n"
		"--config file (a Job in YAML or JSON, e.g. trainingInput: {scaleTier: CUSTOM, ...});\n"
		"USER_ARGS, after --, become trainingInput.args. Prints the job's id and state\n"
		"(--format chooses how).",
		"To run a container on a GPU machine and follow its log:\n\n"
		"  $ trainplane ai-platform jobs submit training my_job --region us-central1 \\\n"
		"      --scale-tier custom --master-machine-type n1-standard-8 \\\n"
		"      --master-accelerator count=1,type=nvidia-tesla-t4 \\\n"
		"      --master-image-uri localhost/trainer:latest --stream-logs -- --epochs 3\n\n"
		"To submit a config.yaml:\n\n"
		"  $ trainplane ai-platform jobs submit training my_job --config config.yaml" };
	struct submit_opts o;
	const char *interval = "1";
	int stream = 0, async = 0;
	submit_opts_init(&o);
	const struct opt opts[] = {
		OPT_STR("--config", &o.config, "FILE", "a Job in YAML or JSON (trainingInput: ...); the flags override its values"),
		OPT_STR("--region", &o.region, "REGION", "the region of the job"),
		OPT_STR("--scale-tier", &o.scale_tier, "TIER", "BASIC, STANDARD_1, PREMIUM_1, BASIC_GPU, BASIC_TPU or CUSTOM"),
		OPT_STR("--master-machine-type", &o.master_machine_type, "TYPE", "the machine type of the master (CUSTOM tier)"),
		OPT_STR("--master-accelerator", &o.master_accelerator, "count=N,type=T",
			"the master's accelerators, e.g. count=1,type=nvidia-tesla-t4"),
		OPT_STR("--master-image-uri", &o.master_image_uri, "URI", "the container image of the master"),
		OPT_STR("--worker-count", &o.worker_count, "N", "the number of workers"),
		OPT_STR("--worker-machine-type", &o.worker_machine_type, "TYPE", "the machine type of the workers"),
		OPT_STR("--worker-accelerator", &o.worker_accelerator, "count=N,type=T", "the accelerators of each worker"),
		OPT_STR("--worker-image-uri", &o.worker_image_uri, "URI", "the container image of the workers"),
		OPT_STR("--parameter-server-count", &o.ps_count, "N", "the number of parameter servers"),
		OPT_STR("--parameter-server-machine-type", &o.ps_machine_type, "TYPE", "the machine type of the parameter servers"),
		OPT_STR("--parameter-server-accelerator", &o.ps_accelerator, "count=N,type=T", "the accelerators of each parameter server"),
		OPT_STR("--parameter-server-image-uri", &o.ps_image_uri, "URI", "the container image of the parameter servers"),
		OPT_BOOL("--use-chief-in-tf-config", &o.use_chief_in_tf_config, "name the master \"chief\" in TF_CONFIG"),
		OPT_NOBOOL("--no-use-chief-in-tf-config", &o.use_chief_in_tf_config, "name the master \"master\" in TF_CONFIG"),
		OPT_BOOL("--enable-web-access", &o.enable_web_access, "ask for interactive web access to the replicas"),
		OPT_STR("--package-path", &o.package_path, "DIR", "a local Python package to build and stage (with --staging-bucket)"),
		OPT_STR("--packages", &o.packages, "PACKAGE,...", "staged trainer packages (gs:// paths)"),
		OPT_STR("--staging-bucket", &o.staging_bucket, "BUCKET", "where --package-path is staged"),
		OPT_STR("--module-name", &o.module_name, "MODULE", "the Python module to run, e.g. trainer.task"),
		OPT_STR("--job-dir", &o.job_dir, "DIR", "the job's output directory (passed as --job-dir to the trainer)"),
		OPT_STR("--runtime-version", &o.runtime_version, "VERSION", "the runtime version"),
		OPT_STR("--python-version", &o.python_version, "VERSION", "the Python version"),
		OPT_STR("--labels", &o.labels, "KEY=VALUE,...", "labels of the job"),
		OPT_STR("--service-account", &o.service_account, "ACCOUNT", "the service account the job runs as"),
		OPT_STR("--network", &o.network, "NETWORK", "the VPC network of the job"),
		OPT_STR("--kms-key", &o.kms_key, "KEY", "the KMS key of the job"),
		OPT_BOOL("--stream-logs", &stream, "follow the job's log until it ends; exit 1 unless it succeeded"),
		OPT_BOOL("--async", &async, "return once the job is submitted (the default)"),
		OPT_STR("--polling-interval", &interval, "SECONDS", "how often the log is polled (default 1)"),
		OPT_END,
	};
	int dd = cli_parse(&c, opts, argc, argv);
	if (stream && async)
		cli_usage_error(&c, "argument --async: At most one of --async | --stream-logs can be specified.%s", "");
	o.job_id = cli_positional[0];
	if (dd < argc) {
		o.has_user_args = 1;
		o.user_args = argv + dd + 1;
		o.n_user_args = argc - dd - 1;
	}
	json_t *config = NULL;
	char *err = NULL;
	if (o.config && !(config = cli_load_config(o.config, &err))) {
		fprintf(stderr, "ERROR: (trainplane.%s) %s\n", c.name, err);
		free(err);
		return EXIT_USAGE;
	}
	json_t *body = cli_build_submit_body(&o, config, &err);
	json_decref(config);
	if (!body) {
		fprintf(stderr, "ERROR: (trainplane.%s) %s\n", c.name, err);
		free(err);
		return EXIT_USAGE;
	}
	char *p = cli_escape(cli_project);
	char *path = xasprintf("/v1/projects/%s/jobs", p);
	free(p);
	json_t *job = cli_call("POST", path, body);
	free(path);
	json_decref(body);
	if (!job)
		return 1;
	const char *id = json_string_value(json_object_get(job, "jobId"));
	fprintf(stderr, "Job [%s] submitted successfully.\n", id ? id : o.job_id);
	int rc = 0;
	if (stream) {
		char *jp = job_path(o.job_id, NULL);
		rc = cli_stream_logs(jp, cli_project, o.job_id, "SUCCEEDED", NULL, cli_polling(interval));
		free(jp);
	} else {
		fprintf(stderr, "Your job is still active. You may view the status of your job with the command\n\n"
			"  $ trainplane ai-platform jobs describe %s\n\n"
			"or continue streaming the logs with the command\n\n"
			"  $ trainplane ai-platform jobs stream-logs %s\n", o.job_id, o.job_id);
	}
	char *jp = job_path(o.job_id, NULL);
	json_t *now = stream ? cli_call("GET", jp, NULL) : json_incref(job);
	free(jp);
	if (now) {
		json_t *summary = json_object();
		const char *keys[] = { "jobId", "state", "startTime", "endTime" };
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			if (json_object_get(now, keys[i]))
				json_object_set(summary, keys[i], json_object_get(now, keys[i]));
		cli_print_value(summary);
		json_decref(summary);
		json_decref(now);
	}
	json_decref(job);
	return rc;
}

static int cmd_describe(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.describe",
		"trainplane ai-platform jobs describe JOB [--format FORMAT]", 1, 1, "JOB",
		"describe a job",
		"Prints the ml v1 job JOB (projects.jobs.get), as YAML unless --format says otherwise.",
		"To print a job:\n\n  $ trainplane ai-platform jobs describe my_job\n\n"
		"To print its state and error message, tab-separated:\n\n"
		"  $ trainplane ai-platform jobs describe my_job --format 'value(state,errorMessage)'" };
	static const struct opt opts[] = { OPT_END };
	cli_parse(&c, opts, argc, argv);
	char *path = job_path(cli_positional[0], NULL);
	json_t *j = cli_call("GET", path, NULL);
	if (!j) {
		free(path);
		return 1;
	}
	cli_typed(j, &ml_job_message);
	cli_print_value(j);
	json_decref(j);
	/* gcloud's trailer (on stderr, as its status log), pointing where
	 * trainplane serves the job and its logs: there is no Cloud Console. */
	size_t el = strlen(cli_endpoint);
	fprintf(stderr, "\nView job at:\n%.*s%s\n\nView logs with:\n"
		"  $ trainplane ai-platform jobs stream-logs %s\n",
		(int)(el && cli_endpoint[el - 1] == '/' ? el - 1 : el), cli_endpoint, path, cli_positional[0]);
	free(path);
	return 0;
}

static int cmd_cancel(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.cancel", "trainplane ai-platform jobs cancel JOB", 1, 1, "JOB",
		"cancel a job", "Cancels the ml v1 job JOB (projects.jobs.cancel).",
		"To cancel a job:\n\n  $ trainplane ai-platform jobs cancel my_job" };
	static const struct opt opts[] = { OPT_END };
	cli_parse(&c, opts, argc, argv);
	char *path = job_path(cli_positional[0], ":cancel");
	json_t *body = json_object();
	json_t *j = cli_call("POST", path, body);
	json_decref(body);
	free(path);
	if (!j)
		return 1;
	json_decref(j);
	return 0;
}

static int cmd_stream_logs(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.stream-logs",
		"trainplane ai-platform jobs stream-logs JOB [--task-name T] [--polling-interval SECONDS]",
		1, 1, "JOB", "show the log of a job",
		"Prints the job's log (SEVERITY, time, task, message: tab-separated) until the job ends;\n"
		"exits 1 unless it SUCCEEDED.",
		"To follow a job's master:\n\n"
		"  $ trainplane ai-platform jobs stream-logs my_job --task-name master-replica-0" };
	const char *task = NULL, *interval = "1";
	int multiline = 0;
	const struct opt opts[] = {
		OPT_STR("--task-name", &task, "TASK", "print only this task's lines (e.g. master-replica-0, workerpool0-0)"),
		OPT_STR("--polling-interval", &interval, "SECONDS", "how often the log is polled (default 1)"),
		OPT_BOOL("--allow-multiline-logs", &multiline, "accepted for gcloud's sake; lines are printed as they are"),
		OPT_END };
	cli_parse(&c, opts, argc, argv);
	char *jp = job_path(cli_positional[0], NULL);
	int rc = cli_stream_logs(jp, cli_project, cli_positional[0], "SUCCEEDED", task, cli_polling(interval));
	free(jp);
	return rc;
}

static int cmd_update(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.update",
		"trainplane ai-platform jobs update JOB [--update-labels k=v,...] [--remove-labels k,...]"
		" [--clear-labels]", 1, 1, "JOB", "update the labels of a job",
		"Changes the labels of the ml v1 job JOB (projects.jobs.patch, updateMask=labels).",
		"To set owner=bob and remove env:\n\n"
		"  $ trainplane ai-platform jobs update my_job --update-labels owner=bob --remove-labels env" };
	const char *upd = NULL, *rem = NULL;
	int clear = 0;
	const struct opt opts[] = {
		OPT_STR("--update-labels", &upd, "KEY=VALUE,...", "labels to add or change"),
		OPT_STR("--remove-labels", &rem, "KEY,...", "labels to remove"),
		OPT_BOOL("--clear-labels", &clear, "remove every label"),
		OPT_END };
	cli_parse(&c, opts, argc, argv);
	if (!upd && !rem && !clear)
		cli_usage_error(&c, "At least one of --update-labels, --remove-labels, --clear-labels must be given.%s", "");
	char *err = NULL;
	json_t *add = upd ? cli_parse_labels("--update-labels", upd, &err) : json_object();
	if (!add) {
		fprintf(stderr, "ERROR: (trainplane.%s) %s\n", c.name, err);
		free(err);
		return EXIT_USAGE;
	}
	char *path = job_path(cli_positional[0], NULL);
	json_t *j = cli_call("GET", path, NULL);
	if (!j) {
		free(path);
		json_decref(add);
		return 1;
	}
	json_t *labels = clear ? json_object() : json_deep_copy(json_object_get(j, "labels"));
	if (!labels)
		labels = json_object();
	if (rem) {
		char *copy = xstrdup(rem), *save = NULL;
		for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save))
			json_object_del(labels, k);
		free(copy);
	}
	json_object_update(labels, add);
	json_t *body = json_pack("{s:o}", "labels", labels);
	if (json_object_get(j, "etag"))
		json_object_set(body, "etag", json_object_get(j, "etag"));
	char *ppath = xasprintf("%s?updateMask=labels", path);
	json_t *r = cli_call("PATCH", ppath, body);
	free(ppath);
	free(path);
	json_decref(body);
	json_decref(add);
	json_decref(j);
	if (!r)
		return 1;
	json_decref(r);
	fprintf(stderr, "Updated ml engine job [%s].\n", cli_positional[0]);
	return 0;
}

static char *job_uri(const json_t *j)
{
	char *p = cli_escape(cli_project), *id = cli_escape(json_string_value(json_object_get(j, "jobId")) ?: "");
	char *u = xasprintf("v1/projects/%s/jobs/%s", p, id);
	free(p);
	free(id);
	return u;
}

/* gcloud's default format of `ai-platform jobs list`, merged into a user's --format as gcloud does. */
#define JOBS_LIST_FORMAT "table(jobId.basename(), state:label=STATUS, createTime.date(tz=LOCAL):label=CREATED)"

static int cmd_list(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.list",
		"trainplane ai-platform jobs list [--filter EXPRESSION] [--limit LIMIT] [--page-size PAGE_SIZE]\n"
		"    [--sort-by [~]FIELD,...] [--uri] [--format FORMAT]", 0, 0, NULL, "list jobs",
		"Lists the project's ml v1 jobs (projects.jobs.list, every page): JOB_ID, STATUS and\n"
		"CREATED (local time), as gcloud prints them. --filter takes gcloud's filter\n"
		"expressions (state=FAILED, labels.team=ml, jobId:exp-*, createTime>2026-01-01, AND, OR,\n"
		"NOT), applied here as gcloud applies them; then --sort-by, then --limit.",
		"To list the five newest jobs:\n\n"
		"  $ trainplane ai-platform jobs list --sort-by ~createTime --limit 5\n\n"
		"To print the ids of the failed jobs of team ml:\n\n"
		"  $ trainplane ai-platform jobs list --filter 'state=FAILED AND labels.team=ml' "
		"--format 'value(jobId)'" };
	const struct opt opts[] = { LIST_OPTS, OPT_END };
	cli_parse(&c, opts, argc, argv);
	char *p = cli_escape(cli_project);
	char *base = xasprintf("/v1/projects/%s/jobs", p);
	free(p);
	json_t *all = cli_list_all(&c, base, "jobs");
	free(base);
	if (!all)
		return 1;
	size_t i;
	json_t *j;
	json_array_foreach(all, i, j)
		cli_typed(j, &ml_job_message);
	cli_print_list(all, JOBS_LIST_FORMAT, JOBS_LIST_FORMAT, job_uri);
	json_decref(all);
	return 0;
}

int cli_jobs_run(const char *verb, int argc, char **argv)
{
	if (!strcmp(verb, "submit")) {
		if (argc < 1 || strcmp(argv[0], "training")) {
			if (argc >= 1 && cli_is_help(argv[0]))
				return printf("Usage: trainplane ai-platform jobs submit training JOB [flags]\n"
					      "(trainplane ai-platform jobs submit training --help: its flags)\n"), 0;
			fprintf(stderr, "ERROR: (trainplane.ai-platform.jobs.submit) Invalid choice: '%s'. "
				"Valid choices are [training].\n", argc >= 1 ? argv[0] : "");
			return EXIT_USAGE;
		}
		cli_cmd_name = "trainplane.ai-platform.jobs.submit.training";
		return cmd_submit(argc - 1, argv + 1);
	}
	if (!strcmp(verb, "describe"))
		return cmd_describe(argc, argv);
	if (!strcmp(verb, "list"))
		return cmd_list(argc, argv);
	if (!strcmp(verb, "cancel"))
		return cmd_cancel(argc, argv);
	if (!strcmp(verb, "stream-logs"))
		return cmd_stream_logs(argc, argv);
	if (!strcmp(verb, "update"))
		return cmd_update(argc, argv);
	fprintf(stderr, "ERROR: (trainplane.ai-platform.jobs) Invalid choice: '%s'. Valid choices are "
		"[cancel, describe, list, stream-logs, submit, update].\n", verb);
	return EXIT_USAGE;
}
