/*
 * flags.h - gcloud-style flags of the CLI's commands.
 *
 * A command declares its flags in a struct opt table and calls cli_parse(),
 * which also takes the global flags (--endpoint, --project, --ca-file,
 * --format, --help/-h) anywhere on the line, `--flag value` or
 * `--flag=value`, and the command's positional arguments. A usage error
 * prints "ERROR: (trainplane.COMMAND) ..." and the usage, and exits 2.
 */
#ifndef TP_CLI_FLAGS_H
#define TP_CLI_FLAGS_H

#include <jansson.h>

#include "format.h"

/* Exit status of bad usage (1: the server refused, or the job failed). */
#define EXIT_USAGE 2

enum { F_STR, F_BOOL, F_NOBOOL, F_LIST };

#define MAX_LIST 64
#define CLI_MAX_POSITIONAL 4

/* A repeatable flag's values, in order (F_LIST). */
struct strlist {
	const char *v[MAX_LIST];
	int n;
};

/*
 * One flag: F_STR sets *str, F_BOOL sets *flag 1, F_NOBOOL 0, F_LIST appends
 * to *list; metavar (the value's name in --help, NULL for a boolean) and its
 * one-line help.
 */
struct opt {
	const char *name;
	int kind;
	const char **str;
	int *flag;
	struct strlist *list;
	const char *metavar, *help;
};

#define OPT_STR(n, p, mv, h)	{ n, F_STR, p, NULL, NULL, mv, h }
#define OPT_BOOL(n, p, h)	{ n, F_BOOL, NULL, p, NULL, NULL, h }
#define OPT_NOBOOL(n, p, h)	{ n, F_NOBOOL, NULL, p, NULL, NULL, h }
#define OPT_LIST(n, l, mv, h)	{ n, F_LIST, NULL, NULL, l, mv, h }
#define OPT_END			{ NULL, 0, NULL, NULL, NULL, NULL, NULL }

/* A command, and its --help page (gcloud's NAME, SYNOPSIS, DESCRIPTION, FLAGS, EXAMPLES). */
struct cmd {
	const char *name;	/* "ai-platform.jobs.submit.training" */
	const char *usage;	/* the synopsis: "trainplane ai-platform jobs describe JOB [--format FORMAT]" */
	int min_pos, max_pos;	/* positional arguments (max_pos <= CLI_MAX_POSITIONAL) */
	const char *positional;	/* their names, for "argument JOB: Must be specified." */
	const char *summary;	/* the NAME line: "show the details of a job" */
	const char *description;	/* paragraphs, each line indented by --help */
	const char *examples;	/* command lines, with a comment line before each */
};

/* The flags of a list command (filled by cli_parse when the command's opts include LIST_OPTS). */
struct list_flags {
	const char *filter, *limit, *page_size, *sort_by;
	int uri;
};
extern struct list_flags cli_list_flags;

#define LIST_OPTS \
	OPT_STR("--filter", &cli_list_flags.filter, "EXPRESSION", \
		"keep the resources EXPRESSION matches (gcloud's filter syntax, e.g. state=FAILED, labels.team:ml)"), \
	OPT_STR("--limit", &cli_list_flags.limit, "LIMIT", "print at most LIMIT resources (after --filter and --sort-by)"), \
	OPT_STR("--page-size", &cli_list_flags.page_size, "PAGE_SIZE", "ask the server for PAGE_SIZE resources a page"), \
	OPT_STR("--sort-by", &cli_list_flags.sort_by, "[~]FIELD,...", "sort by these fields; ~ sorts descending"), \
	OPT_BOOL("--uri", &cli_list_flags.uri, "print each resource's URI instead of the table")

extern const char *cli_project;	/* --project, TRAINPLANE_PROJECT, or "demo" */
extern const char *cli_format;	/* --format as given, or NULL */
extern struct fmt *cli_fmt;	/* --format parsed, or NULL: the command's default */
/* The positional arguments of the last cli_parse(). */
extern const char *cli_positional[CLI_MAX_POSITIONAL];
extern int cli_n_positional;

/* Prints the usage error (fmt with a) and the usage of c; exits 2. */
void cli_usage_error(const struct cmd *c, const char *fmt, const char *a)
	__attribute__((noreturn));
/*
 * Parses argv against the command's options (opts, ended by a NULL name)
 * and the global ones. Stops at `--` and returns its index (argc if none).
 * --help prints c's usage and exits 0.
 */
int cli_parse(const struct cmd *c, const struct opt *opts, int argc, char **argv);
/* Prints one resource v as --format says (default: YAML). */
void cli_print_value(const json_t *v);
/*
 * Prints the resources of a list: --uri's URIs (uri_of(item) appended to
 * the endpoint; caller frees), or --format's output, or default_format
 * (a format string); merge_defaults (may be NULL) is the default projection
 * gcloud merges into a user's --format (fmt_merge_defaults). "Listed 0
 * items." on stderr when the default output has nothing to show.
 */
void cli_print_list(const json_t *items, const char *default_format, const char *merge_defaults,
		    char *(*uri_of)(const json_t *item));
/* Whether a is --help, -h or help. */
int cli_is_help(const char *a);

#endif
