/*
 * flags.c - gcloud-style flags: a command's own and the global ones
 * (--endpoint, --project, --ca-file, --format, --help), usage errors, and
 * the output --format chooses.
 */
#include "flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "common.h"

const char *cli_project, *cli_format;
const char *cli_positional[CLI_MAX_POSITIONAL];
int cli_n_positional;

void cli_usage_error(const struct cmd *c, const char *fmt, const char *a)
{
	fprintf(stderr, "ERROR: (trainplane.%s) ", c->name);
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\nUsage: %s\n", c->usage);
	exit(EXIT_USAGE);
}

static int global_help;

int cli_parse(const struct cmd *c, const struct opt *opts, int argc, char **argv)
{
	static const struct opt globals[] = {
		{ "--endpoint", F_STR, &cli_endpoint, NULL }, { "--project", F_STR, &cli_project, NULL },
		{ "--ca-file", F_STR, &cli_ca_file, NULL },
		{ "--format", F_STR, &cli_format, NULL }, { "--help", F_BOOL, NULL, &global_help },
		{ "-h", F_BOOL, NULL, &global_help }, { NULL, 0, NULL, NULL },
	};
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
		printf("Usage: %s\n", c->usage);
		exit(0);
	}
	if (cli_n_positional < c->min_pos)
		cli_usage_error(c, "missing a required argument%s", "");
	if (cli_format && strcmp(cli_format, "json") && strcmp(cli_format, "yaml"))
		cli_usage_error(c, "argument --format: Invalid choice: '%s'. Valid choices are [json, yaml].", cli_format);
	return i;
}

void cli_print_value(const json_t *v)
{
	if (cli_format && !strcmp(cli_format, "json")) {
		char *s = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("%s\n", s);
		free(s);
		return;
	}
	struct strbuf sb = STRBUF_INIT;
	cli_yaml(&sb, v);
	fputs(sb_str(&sb), stdout);
	sb_release(&sb);
}

int cli_is_help(const char *a)
{
	return a && (!strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help"));
}
