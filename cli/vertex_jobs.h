/*
 * vertex_jobs.h - what the Vertex AI job groups share (`ai custom-jobs`,
 * `ai hp-tuning-jobs`): a job named in full or by its id with --region,
 * the end of create, and the describe, cancel, stream-logs and list
 * commands, each run for one kind of job.
 */
#ifndef TP_CLI_VERTEX_JOBS_H
#define TP_CLI_VERTEX_JOBS_H

#include <jansson.h>

#include "flags.h"

struct schema_message;

/* A kind of Vertex AI job, as gcloud's commands for it name it. */
struct vertex_kind {
	const char *group;	/* the command group: "custom-jobs" */
	const char *collection;	/* of the names and URLs: "customJobs" */
	const char *type;	/* the resource's message: "CustomJob" */
	const char *noun;	/* in the commands' help: "custom job" */
	const char *positional;	/* the job argument in usage errors: "CUSTOM_JOB" */
	const char *arg, *arg_what;	/* gcloud's resource argument and its name in parse errors:
					 * "custom_job", "customJob" */
	const char *cancel_noun;	/* gcloud's cancel message: "CustomJob" */
	int by_id;		/* gcloud's messages name the job ID --region=R (else by its full name) */
	const struct schema_message *message;	/* the resource, for reading replies as gcloud does */
	const char *list_format;	/* the list's default table */
	const char *list_columns;	/* its columns, for the list's --help */
	int (*create)(int argc, char **argv);	/* the group's create command */
};

/* --region of the Vertex commands: the region of the job, or of the list. */
extern const char *cli_region_flag;

/* Exits 2 (usage error of c) unless --region was given. */
void vertex_require_region(const struct cmd *c);

/*
 * The end of a create command: body (NULL: err, a bad input, is printed
 * as c's error and the status is 2) POSTed to the region's collection; the
 * created job announced by announce (gcloud's message, on stderr), then
 * printed as --format says (without it nothing, as gcloud prints nothing).
 * Takes body and err. Returns the exit status.
 */
int vertex_job_create(const struct vertex_kind *k, const struct cmd *c, json_t *body, char *err,
		      void (*announce)(const json_t *job));

/*
 * Runs VERB of kind k's group (create, describe, cancel, stream-logs, list)
 * with the arguments after it; returns the exit status.
 */
int vertex_jobs_run(const struct vertex_kind *k, const char *verb, int argc, char **argv);

#endif
