/*
 * vertex_jobs.c - the commands every Vertex AI job group has (describe,
 * cancel, stream-logs, list), for CustomJobs and HyperparameterTuningJobs
 * alike: one code, the kind's names and texts.
 */
#include "vertex_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "common.h"
#include "list.h"
#include "stream_logs.h"

const char *cli_region_flag;

void vertex_require_region(const struct cmd *c)
{
	if (!cli_region_flag || !*cli_region_flag)
		cli_usage_error(c, "argument --region: Must be specified.%s", "");
}

/* The path of kind k's collection in the CLI's project and --region (caller frees). */
static char *collection_path(const struct vertex_kind *k)
{
	char *parent = xasprintf("projects/%s/locations/%s", cli_project, cli_region_flag);
	char *suffix = xasprintf("/%s", k->collection);
	char *path = cli_name_path(parent, suffix);
	free(parent);
	free(suffix);
	return path;
}

/* The job's full name, id and region (caller frees); exits 2 when arg does not name one. */
struct job_ref {
	char *name, *id, *region;
};

/*
 * A job named in full (projects/P/locations/R/COLLECTION/ID) or by its id
 * with --region (the project is the CLI's).
 */
static void job_ref(const struct vertex_kind *k, const struct cmd *c, const char *arg, struct job_ref *r)
{
	char *msg = NULL;
	if (!strncmp(arg, "projects/", 9)) {
		char *copy = xstrdup(arg), *save = NULL, *seg[7];
		int n = 0;
		for (char *s = strtok_r(copy, "/", &save); s; s = strtok_r(NULL, "/", &save))
			seg[n < 7 ? n : 6] = s, n++;
		if (n != 6 || strcmp(seg[2], "locations") || strcmp(seg[4], k->collection)) {
			free(copy);
			msg = xasprintf("Invalid %s name [%s]: expected projects/PROJECT/locations/REGION/%s/ID.",
					k->type, arg, k->collection);
			cli_usage_error(c, "%s", msg);
		}
		r->id = xstrdup(seg[5]);
		r->region = xstrdup(seg[3]);
		free(copy);
		r->name = xstrdup(arg);
		return;
	}
	if (!cli_region_flag || !*cli_region_flag) {
		msg = xasprintf("Error parsing [%s]. The [%s] resource is not properly specified. Failed to "
				"find attribute [region]: give the full name "
				"projects/PROJECT/locations/REGION/%s/%s or --region.", k->arg, k->arg_what,
				k->collection, arg);
		cli_usage_error(c, "%s", msg);
	}
	if (strchr(arg, '/')) {
		msg = xasprintf("Invalid %s id [%s].", k->type, arg);
		cli_usage_error(c, "%s", msg);
	}
	r->id = xstrdup(arg);
	r->region = xstrdup(cli_region_flag);
	r->name = xasprintf("projects/%s/locations/%s/%s/%s", cli_project, cli_region_flag, k->collection, arg);
}

/* How gcloud's messages name the job: its id and region, or its full name (caller frees). */
static char *job_mention(const struct vertex_kind *k, const struct job_ref *r)
{
	return k->by_id ? xasprintf("%s --region=%s", r->id, r->region) : xstrdup(r->name);
}

/* The help of describe, cancel and stream-logs (strings the caller frees). */
struct job_help {
	char *usage, *summary, *description, *examples;
};

static void job_help(const struct vertex_kind *k, const char *verb, struct job_help *h)
{
	if (!strcmp(verb, "describe")) {
		h->usage = xasprintf("trainplane ai %s describe (NAME | ID --region REGION) [--format FORMAT]",
				     k->group);
		h->summary = xasprintf("describe a %s", k->noun);
		h->description = xasprintf("Prints a Vertex AI %s, as YAML unless --format says otherwise. NAME is\n"
					   "projects/PROJECT/locations/REGION/%s/ID.", k->type, k->collection);
		h->examples = xasprintf("To print a job's state:\n\n"
					"  $ trainplane ai %s describe 42 --region us-central1 --format 'value(state)'",
					k->group);
	} else if (!strcmp(verb, "cancel")) {
		h->usage = xasprintf("trainplane ai %s cancel (NAME | ID --region REGION)", k->group);
		h->summary = xasprintf("cancel a %s", k->noun);
		h->description = xasprintf("Cancels a Vertex AI %s. NAME is\n"
					   "projects/PROJECT/locations/REGION/%s/ID.", k->type, k->collection);
		h->examples = xasprintf("To cancel a job:\n\n  $ trainplane ai %s cancel 42 --region us-central1",
					k->group);
	} else {
		h->usage = xasprintf("trainplane ai %s stream-logs (NAME | ID --region REGION) [--task-name T]\n"
				     "    [--polling-interval SECONDS]", k->group);
		h->summary = xasprintf("show the log of a %s", k->noun);
		h->description = xstrdup("Prints the job's log (task names workerpool0-0, workerpool1-0, ...) until the\n"
					 "job ends; exits 1 unless it ended JOB_STATE_SUCCEEDED.");
		h->examples = xasprintf("To follow the first pool's first replica:\n\n"
					"  $ trainplane ai %s stream-logs 42 --region us-central1 --task-name workerpool0-0",
					k->group);
	}
}

/* describe, cancel and stream-logs: JOB plus --region. */
static int job_verb(const struct vertex_kind *k, const char *verb, int argc, char **argv)
{
	struct job_help h;
	const char *interval = "1", *task = NULL;
	int describe = !strcmp(verb, "describe"), cancel = !strcmp(verb, "cancel");
	char *cname = xasprintf("ai.%s.%s", k->group, verb);
	job_help(k, verb, &h);
	struct cmd c = { cname, h.usage, 1, 1, k->positional, h.summary, h.description, h.examples };
	const struct opt opts[] = {
		OPT_STR("--region", &cli_region_flag, "REGION", "the region of the job"),
		OPT_STR("--polling-interval", &interval, "SECONDS", "how often the log is polled (default 1)"),
		OPT_STR("--task-name", &task, "TASK", "print only this task's lines (e.g. master-replica-0, workerpool0-0)"),
		OPT_END };
	const struct opt few[] = { OPT_STR("--region", &cli_region_flag, "REGION", "the region of the job"),
		OPT_END };
	cli_parse(&c, describe || cancel ? few : opts, argc, argv);
	struct job_ref r;
	job_ref(k, &c, cli_positional[0], &r);
	int rc = 0;
	if (describe) {
		char *path = cli_name_path(r.name, NULL);
		json_t *j = cli_call("GET", path, NULL);
		free(path);
		if (j) {
			cli_typed(j, k->message);
			cli_print_value(j);
		}
		rc = j ? 0 : 1;
		json_decref(j);
	} else if (cancel) {
		char *path = cli_name_path(r.name, ":cancel");
		json_t *body = json_object();
		json_t *res = cli_call("POST", path, body);
		json_decref(body);
		free(path);
		if (res) {
			char *m = job_mention(k, &r);
			fprintf(stderr, "Request to cancel %s [%s] has been sent.\n\n"
				"You may view the status of your job with the command\n\n"
				"  $ trainplane ai %s describe %s\n", k->cancel_noun, k->by_id ? r.id : r.name,
				k->group, m);
			free(m);
		}
		rc = res ? 0 : 1;
		json_decref(res);
	} else {
		/* the log's project is the name's; its entries carry the job's numeric id */
		char *proj = xstrdup(r.name + 9);
		*strchr(proj, '/') = '\0';
		char *path = cli_name_path(r.name, NULL);
		rc = cli_stream_logs(path, proj, r.id, "JOB_STATE_SUCCEEDED", task, cli_polling(interval));
		free(path);
		free(proj);
	}
	free(r.name);
	free(r.id);
	free(r.region);
	free(h.usage);
	free(h.summary);
	free(h.description);
	free(h.examples);
	free(cname);
	return rc;
}

static char *job_uri(const json_t *j)
{
	char *p = cli_name_path(json_string_value(json_object_get(j, "name")) ?: "", NULL);
	char *u = xstrdup(p + 1);	/* without the leading / */
	free(p);
	return u;
}

static int job_list(const struct vertex_kind *k, int argc, char **argv)
{
	char *cname = xasprintf("ai.%s.list", k->group);
	char *usage = xasprintf("trainplane ai %s list --region REGION [--filter EXPRESSION] [--limit LIMIT]\n"
				"    [--page-size PAGE_SIZE] [--sort-by [~]FIELD,...] [--uri] [--format FORMAT]",
				k->group);
	char *summary = xasprintf("list %ss", k->noun);
	char *description = xasprintf(
		"Lists the Vertex AI %ss of a region (every page) as a table:\n"
		"%s (UTC). --filter takes gcloud's filter expressions\n"
		"(state=JOB_STATE_FAILED, displayName:exp-*, labels.team=ml, AND, OR, NOT), applied\n"
		"here as gcloud applies them; then --sort-by, then --limit. (gcloud's own default\n"
		"output of this list is YAML: --format yaml prints that.)", k->type, k->list_columns);
	char *examples = xasprintf(
		"To list the newest job's URI:\n\n"
		"  $ trainplane ai %s list --region us-central1 --sort-by ~createTime --limit 1 --uri\n\n"
		"To list the failed jobs' names and errors:\n\n"
		"  $ trainplane ai %s list --region us-central1 --filter state=JOB_STATE_FAILED \\\n"
		"      --format 'table(name.basename(), error.message)'", k->group, k->group);
	const struct cmd c = { cname, usage, 0, 0, NULL, summary, description, examples };
	const struct opt opts[] = {
		OPT_STR("--region", &cli_region_flag, "REGION", "the region of the jobs"), LIST_OPTS, OPT_END };
	cli_parse(&c, opts, argc, argv);
	vertex_require_region(&c);
	char *base = collection_path(k);
	json_t *all = cli_list_all(&c, base, k->collection);
	free(base);
	if (all) {
		size_t i;
		json_t *j;
		json_array_foreach(all, i, j)
			cli_typed(j, k->message);
		cli_print_list(all, k->list_format, NULL, job_uri);
		json_decref(all);
	}
	free(cname);
	free(usage);
	free(summary);
	free(description);
	free(examples);
	return all ? 0 : 1;
}

int vertex_job_create(const struct vertex_kind *k, const struct cmd *c, json_t *body, char *err,
		      void (*announce)(const json_t *job))
{
	if (!body) {
		fprintf(stderr, "ERROR: (trainplane.%s) %s\n", c->name, err);
		free(err);
		return EXIT_USAGE;
	}
	char *path = collection_path(k);
	json_t *job = cli_call("POST", path, body);
	free(path);
	json_decref(body);
	if (!job)
		return 1;
	announce(job);
	if (cli_format) {
		cli_typed(job, k->message);
		cli_print_value(job);
	}
	json_decref(job);
	return 0;
}

int vertex_jobs_run(const struct vertex_kind *k, const char *verb, int argc, char **argv)
{
	if (!strcmp(verb, "create"))
		return k->create(argc, argv);
	if (!strcmp(verb, "list"))
		return job_list(k, argc, argv);
	if (!strcmp(verb, "describe") || !strcmp(verb, "cancel") || !strcmp(verb, "stream-logs"))
		return job_verb(k, verb, argc, argv);
	fprintf(stderr, "ERROR: (trainplane.ai.%s) Invalid choice: '%s'. Valid choices are "
		"[cancel, create, describe, list, stream-logs].\n", k->group, verb);
	return EXIT_USAGE;
}
