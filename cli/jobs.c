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
		"    [--stream-logs | --async] [--polling-interval SECONDS] [-- USER_ARGS...]\n"
		"Flags override the values of the --config file (a Job in YAML or JSON,\n"
		"e.g. trainingInput: {scaleTier: CUSTOM, ...}); USER_ARGS become trainingInput.args.",
		1, 1 };
	struct submit_opts o;
	const char *interval = "1";
	int stream = 0, async = 0;
	submit_opts_init(&o);
	const struct opt opts[] = {
		{ "--config", F_STR, &o.config, NULL }, { "--region", F_STR, &o.region, NULL },
		{ "--scale-tier", F_STR, &o.scale_tier, NULL },
		{ "--master-machine-type", F_STR, &o.master_machine_type, NULL },
		{ "--master-accelerator", F_STR, &o.master_accelerator, NULL },
		{ "--master-image-uri", F_STR, &o.master_image_uri, NULL },
		{ "--worker-count", F_STR, &o.worker_count, NULL },
		{ "--worker-machine-type", F_STR, &o.worker_machine_type, NULL },
		{ "--worker-accelerator", F_STR, &o.worker_accelerator, NULL },
		{ "--worker-image-uri", F_STR, &o.worker_image_uri, NULL },
		{ "--parameter-server-count", F_STR, &o.ps_count, NULL },
		{ "--parameter-server-machine-type", F_STR, &o.ps_machine_type, NULL },
		{ "--parameter-server-accelerator", F_STR, &o.ps_accelerator, NULL },
		{ "--parameter-server-image-uri", F_STR, &o.ps_image_uri, NULL },
		{ "--use-chief-in-tf-config", F_BOOL, NULL, &o.use_chief_in_tf_config },
		{ "--no-use-chief-in-tf-config", F_NOBOOL, NULL, &o.use_chief_in_tf_config },
		{ "--enable-web-access", F_BOOL, NULL, &o.enable_web_access },
		{ "--package-path", F_STR, &o.package_path, NULL },
		{ "--packages", F_STR, &o.packages, NULL },
		{ "--staging-bucket", F_STR, &o.staging_bucket, NULL }, { "--module-name", F_STR, &o.module_name, NULL },
		{ "--job-dir", F_STR, &o.job_dir, NULL },
		{ "--runtime-version", F_STR, &o.runtime_version, NULL },
		{ "--python-version", F_STR, &o.python_version, NULL },
		{ "--labels", F_STR, &o.labels, NULL },
		{ "--service-account", F_STR, &o.service_account, NULL },
		{ "--network", F_STR, &o.network, NULL }, { "--kms-key", F_STR, &o.kms_key, NULL },
		{ "--stream-logs", F_BOOL, NULL, &stream }, { "--async", F_BOOL, NULL, &async },
		{ "--polling-interval", F_STR, &interval, NULL },
		{ NULL, 0, NULL, NULL },
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
		"trainplane ai-platform jobs describe JOB [--format json|yaml]", 1, 1 };
	static const struct opt opts[] = { { NULL, 0, NULL, NULL } };
	cli_parse(&c, opts, argc, argv);
	char *path = job_path(cli_positional[0], NULL);
	json_t *j = cli_call("GET", path, NULL);
	if (!j) {
		free(path);
		return 1;
	}
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
	static const struct cmd c = { "ai-platform.jobs.cancel", "trainplane ai-platform jobs cancel JOB", 1, 1 };
	static const struct opt opts[] = { { NULL, 0, NULL, NULL } };
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
		"trainplane ai-platform jobs stream-logs JOB [--task-name T] [--polling-interval SECONDS]\n"
		"Prints the job's log until the job ends; exits 1 unless it SUCCEEDED.", 1, 1 };
	const char *task = NULL, *interval = "1";
	int multiline = 0;
	const struct opt opts[] = {
		{ "--task-name", F_STR, &task, NULL }, { "--polling-interval", F_STR, &interval, NULL },
		{ "--allow-multiline-logs", F_BOOL, NULL, &multiline }, { NULL, 0, NULL, NULL } };
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
		" [--clear-labels]", 1, 1 };
	const char *upd = NULL, *rem = NULL;
	int clear = 0;
	const struct opt opts[] = {
		{ "--update-labels", F_STR, &upd, NULL }, { "--remove-labels", F_STR, &rem, NULL },
		{ "--clear-labels", F_BOOL, NULL, &clear }, { NULL, 0, NULL, NULL } };
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

static int cmd_list(int argc, char **argv)
{
	static const struct cmd c = { "ai-platform.jobs.list",
		"trainplane ai-platform jobs list [--filter EXPR] [--limit N] [--page-size N] [--sort-by [~]FIELD,...]\n"
		"    [--format json|yaml]\n"
		"EXPR is the API's filter, e.g. 'state=FAILED' or 'labels.owner=\"bob\"'; --sort-by sorts\n"
		"by fields of the Job (e.g. ~createTime: newest first).", 0, 0 };
	const char *filter = NULL, *limit_s = NULL, *page_s = NULL, *sort_by = NULL;
	const struct opt opts[] = {
		{ "--filter", F_STR, &filter, NULL }, { "--limit", F_STR, &limit_s, NULL },
		{ "--page-size", F_STR, &page_s, NULL }, { "--sort-by", F_STR, &sort_by, NULL },
		{ NULL, 0, NULL, NULL } };
	cli_parse(&c, opts, argc, argv);
	char *p = cli_escape(cli_project);
	char *base = xasprintf("/v1/projects/%s/jobs", p);
	free(p);
	json_t *all = cli_list_all(&c, base, "jobs", filter, limit_s, page_s, sort_by);
	free(base);
	if (!all)
		return 1;
	if (cli_format) {
		cli_print_value(all);
	} else if (json_array_size(all)) {
		printf("%-40s %-12s %s\n", "JOB_ID", "STATUS", "CREATED");
		size_t i;
		json_t *j;
		json_array_foreach(all, i, j) {
			const char *id = json_string_value(json_object_get(j, "jobId"));
			const char *st = json_string_value(json_object_get(j, "state"));
			const char *ct = json_string_value(json_object_get(j, "createTime"));
			printf("%-40s %-12s %s\n", id ? id : "", st ? st : "", ct ? ct : "");
		}
	} else {
		fprintf(stderr, "Listed 0 items.\n");
	}
	json_decref(all);
	return 0;
}

int cli_jobs_run(const char *verb, int argc, char **argv)
{
	if (!strcmp(verb, "submit")) {
		if (argc < 1 || strcmp(argv[0], "training")) {
			if (argc >= 1 && cli_is_help(argv[0]))
				return printf("Usage: trainplane ai-platform jobs submit training JOB [flags]\n"), 0;
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
