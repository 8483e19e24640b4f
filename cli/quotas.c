/*
 * quotas.c - `trainplane quotas list` and `trainplane queue list`: a
 * project's limits and usage (GET /trainplane/v1/projects/P/quotas) and its
 * queued jobs with why each waits (GET .../queue). docs/quotas.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "commands.h"
#include "common.h"
#include "flags.h"

static char *quota_uri(const json_t *row)
{
	char *p = cli_escape(cli_project), *r = cli_escape(json_string_value(json_object_get(row, "region")) ?: "");
	char *u = xasprintf("trainplane/v1/projects/%s/quotas#%s", p, r);
	free(p);
	free(r);
	return u;
}

static char *queue_uri(const json_t *row)
{
	return xstrdup(json_string_value(json_object_get(row, "name")) ?: "");
}

/* One row a region and resource: REGION ("*": every region) RESOURCE LIMIT USAGE ... */
static json_t *quota_rows(const json_t *q)
{
	json_t *rows = json_array(), *e, *r;
	size_t i, k;

	json_array_foreach(json_object_get(q, "limits"), i, e)
		json_array_append_new(rows, json_pack("{s:s, s:O, s:O?, s:O?}", "region", "*", "resource",
						       json_object_get(e, "resource"), "limit",
						       json_object_get(e, "limit"), "preemptibleLimit",
						       json_object_get(e, "preemptibleLimit")));
	json_array_foreach(json_object_get(q, "regions"), i, r)
		json_array_foreach(json_object_get(r, "quotas"), k, e) {
			json_t *row = json_deep_copy(e);
			json_object_set(row, "region", json_object_get(r, "region"));
			json_array_append_new(rows, row);
		}
	return rows;
}

/* GET /trainplane/v1/projects/<the current project>/<what> (NULL: failed, said why). */
static json_t *project_get(const char *what)
{
	char *p = cli_escape(cli_project);
	char *path = xasprintf("/trainplane/v1/projects/%s/%s", p, what);
	json_t *r = cli_call("GET", path, NULL);
	free(path);
	free(p);
	return r;
}

static int cmd_quotas(int argc, char **argv)
{
	struct cmd c = { "quotas.list", "trainplane quotas list [--project PROJECT] [--format FORMAT]",
			 0, 0, NULL, "list a project's quotas and usage",
			 "Lists the limits of the project (--project, or the current one) from the server's\n"
			 "quotas file, one row a region and resource (REGION * : every region), with what\n"
			 "the project's running jobs hold now (USAGE; PREEMPTIBLE_USAGE: SPOT and\n"
			 "FLEX_START jobs). --format prints the server's response rows.",
			 "To list the quotas of project team-a:\n\n  $ trainplane quotas list --project team-a" };
	const struct opt opts[] = { LIST_OPTS, OPT_END };
	cli_parse(&c, opts, argc, argv);
	json_t *q = project_get("quotas");
	if (!q)
		return 1;
	json_t *rows = quota_rows(q);
	cli_print_list(rows, "table(region, resource, limit, usage, preemptibleLimit:label=PREEMPTIBLE_LIMIT, "
			     "preemptibleUsage:label=PREEMPTIBLE_USAGE)", NULL, quota_uri);
	json_decref(rows);
	json_decref(q);
	return 0;
}

static int cmd_queue(int argc, char **argv)
{
	struct cmd c = { "queue.list", "trainplane queue list [--project PROJECT] [--format FORMAT]",
			 0, 0, NULL, "list a project's queued jobs and why each waits",
			 "Lists the project's QUEUED jobs in the queue's order (priority, then age) with\n"
			 "the reason each waits: capacity, never_fits (no registered node could hold it),\n"
			 "quota, reserved (a starving job holds the region), preempting (victims are\n"
			 "stopping for it), unknown (not looked at yet, or no node in its region). --format\n"
			 "'value(name,message)' prints the sentence its log got.",
			 "To see why the jobs of team-a wait:\n\n  $ trainplane queue list --project team-a" };
	const struct opt opts[] = { LIST_OPTS, OPT_END };
	cli_parse(&c, opts, argc, argv);
	json_t *r = project_get("queue");
	if (!r)
		return 1;
	cli_print_list(json_object_get(r, "jobs"), "table(jobId:label=JOB_ID, api, region, priority, "
			     "reason, reasonSince:label=SINCE)", NULL, queue_uri);
	json_decref(r);
	return 0;
}

int cli_quotas_run(const char *group, const char *verb, int argc, char **argv)
{
	if (strcmp(verb, "list")) {
		fprintf(stderr, "ERROR: (trainplane.%s) Invalid choice: '%s'. Valid choices are [list].\n",
			group, verb);
		return EXIT_USAGE;
	}
	return !strcmp(group, "quotas") ? cmd_quotas(argc, argv) : cmd_queue(argc, argv);
}
