/*
 * trainplane - the command-line client: gcloud's `ai-platform jobs`,
 * `ai custom-jobs` and `ai hp-tuning-jobs` (Vertex) commands against a
 * trainplane server, plus `nodes` for operators.
 *
 *   trainplane ai-platform jobs submit training JOB [flags] [-- USER_ARGS...]
 *   trainplane ai-platform jobs describe|cancel|stream-logs JOB
 *   trainplane ai-platform jobs list [--filter F] [--limit N] [--format json|yaml]
 *   trainplane ai-platform jobs update JOB --update-labels k=v --remove-labels k
 *   trainplane ai custom-jobs create --region R --display-name N --worker-pool-spec=... [--config F]
 *   trainplane ai custom-jobs describe|cancel|stream-logs NAME|ID [--region R]
 *   trainplane ai custom-jobs list --region R [--filter F] [--limit N] [--sort-by [~]FIELD]
 *   trainplane ai hp-tuning-jobs create --region R --display-name N --config F [--max-trial-count N] ...
 *   trainplane ai hp-tuning-jobs describe|cancel|stream-logs NAME|ID [--region R]
 *   trainplane ai hp-tuning-jobs list --region R [--filter F] [--limit N] [--sort-by [~]FIELD]
 *   trainplane nodes list|drain NODE|undrain NODE
 *   trainplane quotas list | queue list
 *   trainplane emulator reset|clock|advance-clock D|set-clock-speed F|rules [set FILE]
 *
 * Endpoint: --endpoint, else TRAINPLANE_ENDPOINT, else the first line of
 * $TRAINPLANE_STATE_DIR/endpoint (./var/endpoint: the file `make run`
 * writes), else http://127.0.0.1:8080/.
 * Project: --project, else TRAINPLANE_PROJECT, else "demo".
 * TRAINPLANE_TOKEN, when set, is sent as a Bearer token. For an https
 * endpoint, --ca-file or else TRAINPLANE_CA_FILE names the CA to verify the server with
 * (default: the system's); verification is never turned off.
 * Exit status: 0 ok, 1 the server refused or the job failed, 2 bad usage.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "commands.h"
#include "flags.h"

static const char top_usage[] =
	"Usage: trainplane [--endpoint URL] [--project P] [--ca-file PEM] GROUP COMMAND [ARGS...]\n\n"
	"  ai-platform jobs submit training JOB [flags] [-- USER_ARGS...]\n"
	"  ai-platform jobs describe JOB [--format json|yaml|value(...)|table(...)|csv(...)]\n"
	"  ai-platform jobs list [--filter EXPR] [--limit N] [--sort-by [~]FIELD] [--uri]\n"
	"  ai-platform jobs cancel JOB\n"
	"  ai-platform jobs stream-logs JOB\n"
	"  ai-platform jobs update JOB --update-labels k=v,... --remove-labels k,...\n"
	"  ai custom-jobs create --region R --display-name N --worker-pool-spec=... [--config FILE]\n"
	"  ai custom-jobs describe|cancel|stream-logs (NAME | ID --region R)\n"
	"  ai custom-jobs list --region R [--filter EXPR] [--limit N] [--sort-by [~]FIELD] [--uri]\n"
	"  ai hp-tuning-jobs create --region R --display-name N --config FILE [--max-trial-count N]\n"
	"      [--parallel-trial-count N] [--algorithm A]\n"
	"  ai hp-tuning-jobs describe|cancel|stream-logs (NAME | ID --region R)\n"
	"  ai hp-tuning-jobs list --region R [--filter EXPR] [--limit N] [--sort-by [~]FIELD] [--uri]\n"
	"  nodes list | drain NODE | undrain NODE\n"
	"  quotas list | queue list\n"
	"  emulator reset [--all] | clock | advance-clock DURATION | set-clock-speed FACTOR\n"
	"  emulator rules [set FILE]\n\n"
	"Every command takes --format (json, yaml, value(KEYS), table(KEYS), csv(KEYS)).\n"
	"Every command takes --help. Endpoint: --endpoint, TRAINPLANE_ENDPOINT, the file\n"
	"$TRAINPLANE_STATE_DIR/endpoint (./var/endpoint, written by make run) or\n"
	"http://127.0.0.1:8080/; project: --project, TRAINPLANE_PROJECT or demo;\n"
	"TRAINPLANE_TOKEN is sent as a Bearer token; --ca-file or TRAINPLANE_CA_FILE is\n"
	"the CA that verifies an https endpoint.\n";

static int usage(int rc)
{
	fputs(top_usage, rc ? stderr : stdout);
	return rc;
}

int main(int argc, char **argv)
{
	int i = 1;
	/* leading global flags */
	while (i < argc && argv[i][0] == '-' && !cli_is_help(argv[i])) {
		const char *a = argv[i];
		const char **dst = !strncmp(a, "--endpoint", 10) ? &cli_endpoint : !strncmp(a, "--project", 9) ? &cli_project
				   : !strncmp(a, "--ca-file", 9) ? &cli_ca_file
				   : !strncmp(a, "--format", 8) ? &cli_format : NULL;
		const char *eq = strchr(a, '=');
		if (!dst) {
			fprintf(stderr, "ERROR: (trainplane) unrecognized arguments: %s\n", a);
			return usage(EXIT_USAGE);
		}
		if (eq) {
			*dst = eq + 1;
		} else if (i + 1 < argc) {
			*dst = argv[++i];
		} else {
			fprintf(stderr, "ERROR: (trainplane) argument %s: expected one argument\n", a);
			return EXIT_USAGE;
		}
		i++;
	}
	if (i >= argc)
		return usage(EXIT_USAGE);
	if (cli_is_help(argv[i]))
		return usage(0);
	if (!cli_ca_file)
		cli_ca_file = getenv("TRAINPLANE_CA_FILE");
	static char file_endpoint[1024];
	if (cli_endpoint) {
		cli_endpoint_source = "--endpoint";
	} else if ((cli_endpoint = getenv("TRAINPLANE_ENDPOINT")) && *cli_endpoint) {
		cli_endpoint_source = "TRAINPLANE_ENDPOINT";
	} else {
		cli_endpoint = cli_endpoint_file(file_endpoint, sizeof file_endpoint, &cli_endpoint_source);
	}
	if (!cli_project)
		cli_project = getenv("TRAINPLANE_PROJECT");
	if (!cli_project || !*cli_project)
		cli_project = "demo";
	curl_global_init(CURL_GLOBAL_DEFAULT);
	static char namebuf[128];
	int rc;
	const char *g = argv[i];
	const char *sub = i + 1 < argc ? argv[i + 1] : NULL;
	const char *verb = i + 2 < argc ? argv[i + 2] : NULL;
	if (!strcmp(g, "ai-platform") && sub && !strcmp(sub, "jobs") && verb && !cli_is_help(verb)) {
		snprintf(namebuf, sizeof namebuf, "trainplane.ai-platform.jobs.%s", verb);
		cli_cmd_name = namebuf;
		rc = cli_jobs_run(verb, argc - i - 3, argv + i + 3);
	} else if (!strcmp(g, "ai") && sub && !strcmp(sub, "custom-jobs") && verb && !cli_is_help(verb)) {
		snprintf(namebuf, sizeof namebuf, "trainplane.ai.custom-jobs.%s", verb);
		cli_cmd_name = namebuf;
		rc = cli_custom_jobs_run(verb, argc - i - 3, argv + i + 3);
	} else if (!strcmp(g, "ai") && sub && !strcmp(sub, "hp-tuning-jobs") && verb && !cli_is_help(verb)) {
		snprintf(namebuf, sizeof namebuf, "trainplane.ai.hp-tuning-jobs.%s", verb);
		cli_cmd_name = namebuf;
		rc = cli_hp_tuning_jobs_run(verb, argc - i - 3, argv + i + 3);
	} else if (!strcmp(g, "nodes") && sub && !cli_is_help(sub)) {
		snprintf(namebuf, sizeof namebuf, "trainplane.nodes.%s", sub);
		cli_cmd_name = namebuf;
		rc = cli_nodes_run(sub, argc - i - 2, argv + i + 2);
	} else if ((!strcmp(g, "quotas") || !strcmp(g, "queue")) && sub && !cli_is_help(sub)) {
		snprintf(namebuf, sizeof namebuf, "trainplane.%s.%s", g, sub);
		cli_cmd_name = namebuf;
		rc = cli_quotas_run(g, sub, argc - i - 2, argv + i + 2);
	} else if (!strcmp(g, "emulator") && sub && !cli_is_help(sub)) {
		snprintf(namebuf, sizeof namebuf, "trainplane.emulator.%s", sub);
		cli_cmd_name = namebuf;
		rc = cli_emulator_run(sub, argc - i - 2, argv + i + 2);
	} else if (!strcmp(g, "ai") && sub && !cli_is_help(sub) && strcmp(sub, "custom-jobs") &&
		   strcmp(sub, "hp-tuning-jobs")) {
		fprintf(stderr, "ERROR: (trainplane.ai) Invalid choice: '%s'. Valid choices are [custom-jobs, "
			"hp-tuning-jobs].\n", sub);
		return EXIT_USAGE;
	} else if ((!strcmp(g, "ai-platform") || !strcmp(g, "nodes") || !strcmp(g, "ai") ||
		    !strcmp(g, "emulator") || !strcmp(g, "quotas") || !strcmp(g, "queue"))) {
		return usage(sub && cli_is_help(sub) ? 0 : (verb && cli_is_help(verb) ? 0 : EXIT_USAGE));
	} else {
		fprintf(stderr, "ERROR: (trainplane) Invalid choice: '%s'. Valid choices are [ai, ai-platform, "
			"emulator, nodes, queue, quotas].\n", g);
		return EXIT_USAGE;
	}
	curl_global_cleanup();
	return rc;
}
