/*
 * flags.c - gcloud-style flags: a command's own and the global ones
 * (--endpoint, --project, --ca-file, --format, --help), usage errors, and
 * the output --format chooses.
 */
#include "flags.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "common.h"

const char *cli_project, *cli_format;
struct fmt *cli_fmt;
struct list_flags cli_list_flags;
const char *cli_positional[CLI_MAX_POSITIONAL];
int cli_n_positional;

/* "ai-platform.jobs.list" -> "ai-platform jobs list" (caller frees). */
static char *command_words(const char *name)
{
	char *words = xstrdup(name);
	for (char *p = words; *p; p++)
		if (*p == '.')
			*p = ' ';
	return words;
}

void cli_usage_error(const struct cmd *c, const char *fmt, const char *a)
{
	char *words = command_words(c->name);
	fprintf(stderr, "ERROR: (trainplane.%s) ", c->name);
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\nUsage: %s\n\nFor detailed information on this command and its flags, run:\n"
		"  trainplane %s --help\n", c->usage, words);
	free(words);
	exit(EXIT_USAGE);
}

static int global_help;

static const struct opt globals[] = {
	OPT_STR("--endpoint", &cli_endpoint, "URL",
		"the trainplane server (default: $TRAINPLANE_ENDPOINT, else the endpoint file of make run, "
		"else http://127.0.0.1:8080/)"),
	OPT_STR("--project", &cli_project, "PROJECT", "the project (default: $TRAINPLANE_PROJECT, else demo)"),
	OPT_STR("--ca-file", &cli_ca_file, "PEM", "the CA that verifies an https endpoint (default: "
		"$TRAINPLANE_CA_FILE, else the system's)"),
	OPT_STR("--format", &cli_format, "FORMAT", "json, yaml, value(KEYS), table(KEYS), csv(KEYS), none or "
		"default; see docs/cli.md"),
	OPT_BOOL("--help", &global_help, "print this help"),
	OPT_BOOL("-h", &global_help, NULL),
	OPT_END,
};

/* Prints text with each line indented by n spaces. */
static void indented(const char *text, int n)
{
	const char *s = text;
	while (*s) {
		const char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len)
			printf("%*s%.*s\n", n, "", (int)len, s);
		else
			printf("\n");
		s += len + (e ? 1 : 0);
	}
}

static void print_opts(const struct opt *opts)
{
	for (const struct opt *o = opts; o && o->name; o++) {
		if (!o->help)
			continue;
		if (o->metavar)
			printf("    %s=%s\n", o->name, o->metavar);
		else
			printf("    %s\n", o->name);
		printf("        %s\n", o->help);
	}
}

static void print_help(const struct cmd *c, const struct opt *opts)
{
	char *words = command_words(c->name);
	printf("NAME\n    trainplane %s - %s\n\nSYNOPSIS\n", words, c->summary ? c->summary : "");
	indented(c->usage, 4);
	if (c->description) {
		printf("\nDESCRIPTION\n");
		indented(c->description, 4);
	}
	if (opts && opts->name) {
		printf("\nFLAGS\n");
		print_opts(opts);
	}
	printf("\nGLOBAL FLAGS\n");
	print_opts(globals);
	if (c->examples) {
		printf("\nEXAMPLES\n");
		indented(c->examples, 4);
	}
	free(words);
}

static int positive(const char *s, long *out)
{
	char *end;
	if (!s || !*s)
		return 0;
	errno = 0;
	*out = strtol(s, &end, 10);
	return !*end && !errno && *out >= 1;
}

int cli_parse(const struct cmd *c, const struct opt *opts, int argc, char **argv)
{
	int i;
	cli_n_positional = 0;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--"))
			break;
		if (a[0] != '-' || !a[1]) {
			if (cli_n_positional >= c->max_pos)
				cli_usage_error(c, "unrecognized arguments: %s", a);
			cli_positional[cli_n_positional++] = a;
			continue;
		}
		const char *eq = strchr(a, '=');
		size_t nl = eq ? (size_t)(eq - a) : strlen(a);
		const struct opt *o = NULL;
		for (int pass = 0; pass < 2 && !o; pass++)
			for (const struct opt *p = pass ? globals : opts; p && p->name; p++)
				if (strlen(p->name) == nl && !strncmp(p->name, a, nl)) {
					o = p;
					break;
				}
		if (!o)
			cli_usage_error(c, "unrecognized arguments: %s", a);
		if (o->kind == F_STR || o->kind == F_LIST) {
			const char *v;
			if (eq) {
				v = eq + 1;
			} else {
				if (i + 1 >= argc)
					cli_usage_error(c, "argument %s: expected one argument", o->name);
				v = argv[++i];
			}
			if (o->kind == F_STR) {
				*o->str = v;
			} else {
				if (o->list->n >= MAX_LIST)
					cli_usage_error(c, "argument %s: given too many times", o->name);
				o->list->v[o->list->n++] = v;
			}
		} else {
			if (eq)
				cli_usage_error(c, "argument %s: takes no value", o->name);
			*o->flag = o->kind == F_BOOL;
		}
	}
	if (global_help) {
		print_help(c, opts);
		exit(0);
	}
	if (cli_n_positional < c->min_pos)
		cli_usage_error(c, "argument %s: Must be specified.", c->positional ? c->positional : "ARG");
	if (cli_format) {
		char *err = NULL;
		fmt_free(cli_fmt);
		cli_fmt = fmt_parse(cli_format, &err);
		if (!cli_fmt) {
			fprintf(stderr, "ERROR: (trainplane.%s) argument --format: %s\n", c->name, err);
			free(err);
			exit(EXIT_USAGE);
		}
	}
	long n;
	if (cli_list_flags.limit && !positive(cli_list_flags.limit, &n))
		cli_usage_error(c, "argument --limit: Value must be an integer greater than or equal to 1; "
			    "received: %s", cli_list_flags.limit);
	if (cli_list_flags.page_size && !positive(cli_list_flags.page_size, &n))
		cli_usage_error(c, "argument --page-size: Value must be an integer greater than or equal to 1; "
			    "received: %s", cli_list_flags.page_size);
	if (cli_list_flags.uri && cli_format)
		cli_usage_error(c, "argument --uri: --uri and --format cannot be given together (--format %s)",
			    cli_format);
	return i;
}

void cli_print_value(const json_t *v)
{
	struct strbuf sb = STRBUF_INIT;
	if (cli_fmt && !fmt_is_default(cli_fmt))
		fmt_print(&sb, cli_fmt, v, 0);
	else
		cli_yaml(&sb, v);
	fputs(sb_str(&sb), stdout);
	sb_release(&sb);
}

void cli_print_list(const json_t *items, const char *default_format, const char *merge_defaults,
		    char *(*uri_of)(const json_t *item))
{
	size_t i;
	json_t *e;
	if (cli_list_flags.uri) {
		size_t el = strlen(cli_endpoint);
		json_array_foreach(items, i, e) {
			char *u = uri_of(e);
			printf("%.*s/%s\n", (int)(el && cli_endpoint[el - 1] == '/' ? el - 1 : el), cli_endpoint, u);
			free(u);
		}
		return;
	}
	char *err = NULL;
	struct fmt *def = NULL, *merge = NULL;
	const struct fmt *f = cli_fmt;
	if (!f || fmt_is_default(f)) {
		def = fmt_parse(default_format, &err);
		f = def;
	} else if (merge_defaults) {
		merge = fmt_parse(merge_defaults, &err);
		fmt_merge_defaults(cli_fmt, merge);
	}
	if (!f) {	/* the defaults are constants: a bad one is a bug */
		fprintf(stderr, "ERROR: (%s) %s\n", cli_cmd_name, err);
		abort();
	}
	struct strbuf sb = STRBUF_INIT;
	fmt_print(&sb, f, items, 1);
	fputs(sb_str(&sb), stdout);
	if (def && !json_array_size(items))
		fprintf(stderr, "Listed 0 items.\n");
	sb_release(&sb);
	fmt_free(def);
	fmt_free(merge);
	free(err);
}

int cli_is_help(const char *a)
{
	return a && (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help"));
}
