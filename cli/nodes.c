/*
 * nodes.c - `trainplane nodes list|drain|undrain`: the operators' view of
 * the agents' nodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "commands.h"
#include "common.h"
#include "flags.h"

static int cmd_nodes(const char *verb, int argc, char **argv)
{
	int list = !strcmp(verb, "list");
	struct cmd c = { NULL, NULL, list ? 0 : 1, list ? 0 : 1 };
	char name[64];
	snprintf(name, sizeof name, "nodes.%s", verb);
	c.name = name;
	c.usage = list ? "trainplane nodes list [--sort-by [~]FIELD,...] [--format json|yaml]"
		       : !strcmp(verb, "drain") ? "trainplane nodes drain NODE   (no new replicas are placed on it)"
						: "trainplane nodes undrain NODE";
	const char *sort_by = NULL;
	const struct opt list_opts[] = { { "--sort-by", F_STR, &sort_by, NULL }, { NULL, 0, NULL, NULL } };
	cli_parse(&c, list_opts + !list, argc, argv);
	if (!list) {
		char *n = cli_escape(cli_positional[0]);
		char *path = xasprintf("/trainplane/v1/nodes/%s:%s", n, verb);
		free(n);
		json_t *body = json_object();
		json_t *r = cli_call("POST", path, body);
		json_decref(body);
		free(path);
		if (!r)
			return 1;
		cli_print_value(r);
		json_decref(r);
		return 0;
	}
	json_t *r = cli_call("GET", "/trainplane/v1/nodes", NULL);
	if (!r)
		return 1;
	json_t *nodes = json_object_get(r, "nodes");
	char *err = NULL;
	if (sort_by && nodes && cli_sort(nodes, sort_by, &err)) {
		json_decref(r);
		cli_usage_error(&c, "%s", err);
	}
	if (cli_format) {
		cli_print_value(nodes ? nodes : json_array());
	} else {
		printf("%-24s %-14s %-10s %-8s %-6s %-9s %s\n", "NAME", "REGION", "STATE", "RUNTIME", "VCPUS",
		       "REPLICAS", "ACCELERATORS");
		size_t i, k;
		json_t *n, *a;
		json_array_foreach(nodes, i, n) {
			struct strbuf acc = STRBUF_INIT;
			json_array_foreach(json_object_get(n, "accelerators"), k, a)
				sb_addf(&acc, "%s%s %lld/%lld free", k ? ", " : "",
					json_string_value(json_object_get(a, "type")) ?: "?",
					(long long)json_integer_value(json_object_get(a, "free")),
					(long long)json_integer_value(json_object_get(a, "total")));
			printf("%-24s %-14s %-10s %-8s %-6lld %-9lld %s\n",
			       json_string_value(json_object_get(n, "name")) ?: "",
			       json_string_value(json_object_get(n, "region")) ?: "",
			       json_string_value(json_object_get(n, "state")) ?: "",
			       json_string_value(json_object_get(n, "runtime")) ?: "",
			       (long long)json_integer_value(json_object_get(n, "vcpus")),
			       (long long)json_integer_value(json_object_get(n, "replicas")), sb_str(&acc));
			sb_release(&acc);
		}
	}
	json_decref(r);
	return 0;
}

int cli_nodes_run(const char *verb, int argc, char **argv)
{
	if (strcmp(verb, "list") && strcmp(verb, "drain") && strcmp(verb, "undrain")) {
		fprintf(stderr, "ERROR: (trainplane.nodes) Invalid choice: '%s'. Valid choices are "
			"[drain, list, undrain].\n", verb);
		return EXIT_USAGE;
	}
	return cmd_nodes(verb, argc, argv);
}
