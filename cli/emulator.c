/*
 * emulator.c - `trainplane emulator reset|clock|advance-clock|set-clock-speed|rules`:
 * the emulator's controls (docs/emulator.md). A server that is no emulator
 * refuses each with 400 FAILED_PRECONDITION, printed as gcloud prints errors.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "commands.h"
#include "common.h"
#include "flags.h"
#include "yamldoc.h"

static const char *const verbs[] = { "advance-clock", "clock", "reset", "rules",
				     "set-clock-speed" };

/*
 * gcloud's duration words: "90s", "15m", "2h", "1d", "1h30m", or a bare
 * number of seconds; to whole microseconds. -1 when not one.
 */
static int64_t parse_duration(const char *s)
{
	double total = 0;
	const char *p = s;

	if (!*p)
		return -1;
	while (*p) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || !(v >= 0))
			return -1;
		double unit = 1;
		switch (*end) {
		case 's': unit = 1; end++; break;
		case 'm': unit = 60; end++; break;
		case 'h': unit = 3600; end++; break;
		case 'd': unit = 86400; end++; break;
		case '\0': if (p != s) return -1; break;	/* a bare number: seconds */
		default: return -1;
		}
		total += v * unit;
		p = end;
	}
	if (total > 366.0 * 86400)
		return -1;
	return (int64_t)llround(total * 1e6);
}

static int print_call(const char *method, const char *path, const json_t *body)
{
	json_t *r = cli_call(method, path, body);
	if (!r)
		return 1;
	cli_print_value(r);
	json_decref(r);
	return 0;
}

static int cmd_reset(int argc, char **argv)
{
	int all = 0;
	struct cmd c = { "emulator.reset", "trainplane emulator reset [--all] [--project PROJECT]",
			 0, 0, NULL, "clear a project of an emulator",
			 "Deletes every job of the project (--project, or the current one) of both APIs,\n"
			 "with their replicas, logs and trials; their running replicas stop. --all clears\n"
			 "every project. Refused by a server that is not an emulator.",
			 "To start a test from a clean project:\n\n  $ trainplane emulator reset --project ci-42" };
	const struct opt opts[] = { OPT_BOOL("--all", &all, "clear every project"), OPT_END };
	cli_parse(&c, opts, argc, argv);
	json_t *body = all ? json_object() : json_pack("{s:s}", "project", cli_project);
	json_t *r = cli_call("POST", "/trainplane/v1/emulator:reset", body);
	json_decref(body);
	if (!r)
		return 1;
	fprintf(stderr, "Deleted %lld job(s) of %s%s.\n",
		(long long)json_integer_value(json_object_get(r, "deletedJobs")),
		all ? "every project" : "project ", all ? "" : cli_project);
	json_decref(r);
	return 0;
}

static int cmd_clock(int argc, char **argv)
{
	struct cmd c = { "emulator.clock", "trainplane emulator clock [--format FORMAT]", 0, 0, NULL,
			 "show an emulator's clock",
			 "Prints the emulator's time, its speed (emulated seconds per real second) and\n"
			 "its offset from real time.",
			 "To see the emulator's time:\n\n  $ trainplane emulator clock" };
	const struct opt opts[] = { OPT_END };
	cli_parse(&c, opts, argc, argv);
	return print_call("GET", "/trainplane/v1/emulator/clock", NULL);
}

static int cmd_advance(int argc, char **argv)
{
	struct cmd c = { "emulator.advance-clock",
			 "trainplane emulator advance-clock DURATION [--format FORMAT]", 1, 1, "DURATION",
			 "move an emulator's time forward",
			 "Moves the emulator's time forward by DURATION (90s, 15m, 2h, 1d, 1h30m; at most\n"
			 "366 days): every timer is judged at once, so a job past its maxRunningTime fails\n"
			 "and simulated replicas whose run is over end.",
			 "To test a 2-hour maxRunningTime:\n\n  $ trainplane emulator advance-clock 2h1s" };
	const struct opt opts[] = { OPT_END };
	cli_parse(&c, opts, argc, argv);
	int64_t us = parse_duration(cli_positional[0]);
	if (us <= 0) {
		fprintf(stderr, "ERROR: (trainplane.emulator.advance-clock) argument DURATION: given value "
			"must be of the form INTEGER[UNIT] where units can be one of s, m, h, d; "
			"received: %s\n", cli_positional[0]);
		return EXIT_USAGE;
	}
	char dur[48];
	snprintf(dur, sizeof dur, "%lld.%06llds", (long long)(us / 1000000),
		 (long long)(us % 1000000));
	json_t *body = json_pack("{s:s}", "duration", dur);
	int rc = print_call("POST", "/trainplane/v1/emulator:advanceClock", body);
	json_decref(body);
	return rc;
}

static int cmd_speed(int argc, char **argv)
{
	struct cmd c = { "emulator.set-clock-speed",
			 "trainplane emulator set-clock-speed FACTOR [--format FORMAT]", 1, 1, "FACTOR",
			 "run an emulator's time faster or slower",
			 "From now on the emulator's time runs FACTOR times as fast as real time (greater\n"
			 "than 0, at most 1000000), without a jump.",
			 "To make a minute pass every second:\n\n  $ trainplane emulator set-clock-speed 60" };
	const struct opt opts[] = { OPT_END };
	cli_parse(&c, opts, argc, argv);
	char *end;
	errno = 0;
	double f = strtod(cli_positional[0], &end);
	if (*end || errno || !(f > 0) || f > 1e6) {
		fprintf(stderr, "ERROR: (trainplane.emulator.set-clock-speed) argument FACTOR: a number "
			"greater than 0 and at most 1000000 is required; received: %s\n",
			cli_positional[0]);
		return EXIT_USAGE;
	}
	json_t *body = json_pack("{s:f}", "speed", f);
	int rc = print_call("POST", "/trainplane/v1/emulator:setClockSpeed", body);
	json_decref(body);
	return rc;
}

/* FILE's `rules:` list (YAML or JSON), as the body of :setRules. */
static json_t *rules_body(const char *path)
{
	yaml_document_t doc;
	char err[512];
	json_t *top = NULL;

	if (yaml_doc_load(path, &doc, err, sizeof(err))) {
		fprintf(stderr, "ERROR: (trainplane.emulator.rules) %s\n", err);
		return NULL;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (root)
		top = yaml_doc_json(&doc, root, path, err, sizeof(err));
	yaml_document_delete(&doc);
	if (root && !top) {
		fprintf(stderr, "ERROR: (trainplane.emulator.rules) %s\n", err);
		return NULL;
	}
	if (!json_is_array(json_object_get(top, "rules"))) {
		fprintf(stderr, "ERROR: (trainplane.emulator.rules) %s: a `rules:` list is required\n",
			path);
		json_decref(top);
		return NULL;
	}
	json_t *body = json_pack("{s:O}", "rules", json_object_get(top, "rules"));
	json_decref(top);
	return body;
}

static int cmd_rules(int argc, char **argv)
{
	struct cmd c = { "emulator.rules", "trainplane emulator rules [set FILE] [--format FORMAT]", 0, 2,
			 "set FILE", "show or set an emulator's scripted outcomes",
			 "Without arguments prints the rule list in effect. `set FILE` replaces it with\n"
			 "FILE's `rules:` list (YAML or JSON); the server checks every rule and names every\n"
			 "problem.",
			 "To make every job of display name flaky-* fail with exit code 3:\n\n"
			 "  $ trainplane emulator rules set rules.yaml" };
	const struct opt opts[] = { OPT_END };
	cli_parse(&c, opts, argc, argv);
	if (!cli_positional[0])
		return print_call("GET", "/trainplane/v1/emulator/rules", NULL);
	if (strcmp(cli_positional[0], "set") || !cli_positional[1]) {
		fprintf(stderr, "ERROR: (trainplane.emulator.rules) expected `set FILE`, or nothing\n");
		return EXIT_USAGE;
	}
	json_t *body = rules_body(cli_positional[1]);
	if (!body)
		return 1;
	int rc = print_call("POST", "/trainplane/v1/emulator:setRules", body);
	json_decref(body);
	return rc;
}

int cli_emulator_run(const char *verb, int argc, char **argv)
{
	if (!strcmp(verb, "reset"))
		return cmd_reset(argc, argv);
	if (!strcmp(verb, "clock"))
		return cmd_clock(argc, argv);
	if (!strcmp(verb, "advance-clock"))
		return cmd_advance(argc, argv);
	if (!strcmp(verb, "set-clock-speed"))
		return cmd_speed(argc, argv);
	if (!strcmp(verb, "rules"))
		return cmd_rules(argc, argv);
	fprintf(stderr, "ERROR: (trainplane.emulator) Invalid choice: '%s'. Valid choices are [",
		verb);
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		fprintf(stderr, "%s%s", i ? ", " : "", verbs[i]);
	fprintf(stderr, "].\n");
	return EXIT_USAGE;
}
