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

/* One flag: F_STR sets *str, F_BOOL sets *flag 1, F_NOBOOL 0, F_LIST appends to *list. */
struct opt {
	const char *name;
	int kind;
	const char **str;
	int *flag;
	struct strlist *list;
};

struct cmd {
	const char *name;	/* "ai-platform.jobs.submit.training" */
	const char *usage;
	int min_pos, max_pos;	/* positional arguments (max_pos <= CLI_MAX_POSITIONAL) */
};

extern const char *cli_project;	/* --project, TRAINPLANE_PROJECT, or "demo" */
extern const char *cli_format;	/* --format: NULL (a table or YAML), "json" or "yaml" */
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
/* Prints v as --format says: JSON (indented, keys sorted) or YAML. */
void cli_print_value(const json_t *v);
/* Whether a is --help, -h or help. */
int cli_is_help(const char *a);

#endif
