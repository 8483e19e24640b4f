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
#include "list.h"

static char *node_uri(const json_t *n)
{
	char *e = cli_escape(json_string_value(json_object_get(n, "name")) ?: "");
	char *u = xasprintf("trainplane/v1/nodes/%s", e);
	free(e);
	return u;
}

/* "64 GiB" from a count of MiB (a JSON string or number). */
static void gib(struct strbuf *sb, const json_t *mb)
{
	double m = json_is_string(mb) ? atof(json_string_value(mb)) : json_number_value(mb);
	double g = m / 1024;
	if (g == (double)(long long)g)
		sb_addf(sb, "%lld GiB", (long long)g);
	else
		sb_addf(sb, "%.1f GiB", g);
}

/*
 * The default table's rows: NAME, ZONE, STATE, VCPUS, MEMORY, ACCELERATORS
 * (free/total of each type), RUNTIME, REPLICAS. VCPUS and MEMORY are
 * free/total where the server gives freeVcpus / freeMemoryMb (it does
 * since issue 25), the totals alone where it does not (an older server).
 */
static json_t *node_rows(const json_t *nodes)
{
	json_t *rows = json_array();
	size_t i, k;
	json_t *n, *a;
	json_array_foreach(nodes, i, n) {
		struct strbuf acc = STRBUF_INIT, cpu = STRBUF_INIT, mem = STRBUF_INIT;
		json_array_foreach(json_object_get(n, "accelerators"), k, a)
			sb_addf(&acc, "%s%s %lld/%lld", k ? ", " : "",
				json_string_value(json_object_get(a, "type")) ?: "?",
				(long long)json_integer_value(json_object_get(a, "free")),
				(long long)json_integer_value(json_object_get(a, "total")));
		json_t *fv = json_object_get(n, "freeVcpus"), *fm = json_object_get(n, "freeMemoryMb");
		if (fv)
			sb_addf(&cpu, "%lld/", (long long)json_integer_value(fv));
		sb_addf(&cpu, "%lld", (long long)json_integer_value(json_object_get(n, "vcpus")));
		if (fm) {
			gib(&mem, fm);
			sb_addstr(&mem, "/");
		}
		gib(&mem, json_object_get(n, "memoryMb"));
		json_t *r = json_pack("{s:O?, s:O?, s:O?, s:s, s:s, s:s, s:O?, s:O?}",
				      "name", json_object_get(n, "name"), "zone", json_object_get(n, "zone"),
				      "state", json_object_get(n, "state"), "vcpus", sb_str(&cpu),
				      "memory", sb_str(&mem), "accelerators", sb_str(&acc),
				      "runtime", json_object_get(n, "runtime"), "replicas", json_object_get(n, "replicas"));
		json_array_append_new(rows, r);
		sb_release(&acc);
		sb_release(&cpu);
		sb_release(&mem);
	}
	return rows;
}

static int cmd_nodes(const char *verb, int argc, char **argv)
{
	int list = !strcmp(verb, "list"), drain = !strcmp(verb, "drain");
	struct cmd c = { NULL, NULL, list ? 0 : 1, list ? 0 : 1, "NODE", NULL, NULL, NULL };
	char name[64];
	snprintf(name, sizeof name, "nodes.%s", verb);
	c.name = name;
	c.usage = list ? "trainplane nodes list [--filter EXPRESSION] [--limit LIMIT] [--sort-by [~]FIELD,...] [--uri]\n"
			 "    [--format FORMAT]"
		       : drain ? "trainplane nodes drain NODE [--format FORMAT]" : "trainplane nodes undrain NODE [--format FORMAT]";
	c.summary = list ? "list the agents' nodes" : drain ? "stop placing replicas on a node" : "place replicas on a node again";
	c.description = list ? "Lists the nodes: NAME, ZONE, STATE, VCPUS and MEMORY (free/total: what no\n"
			       "replica placed there takes), ACCELERATORS (free/total of each type), RUNTIME and\n"
			       "REPLICAS (the replicas placed on it). --format prints the server's node resources\n"
			       "(name, zone, vcpus, freeVcpus, memoryMb, freeMemoryMb, accelerators, ...)."
		      : drain ? "Drains NODE: no new replicas are placed on it; those running go on. Prints the node."
			      : "Undrains NODE: replicas are placed on it again. Prints the node.";
	c.examples = list ? "To list the nodes with a free GPU:\n\n"
			    "  $ trainplane nodes list --filter 'accelerators.free>0'\n\n"
			    "To print each node's name and zone:\n\n"
			    "  $ trainplane nodes list --format 'value(name,zone)'"
			  : drain ? "To drain a node:\n\n  $ trainplane nodes drain local-gpu-1"
				  : "To undrain a node:\n\n  $ trainplane nodes undrain local-gpu-1";
	const struct opt list_opts[] = { LIST_OPTS, OPT_END };
	cli_parse(&c, list ? list_opts : list_opts + ARRAY_SIZE(list_opts) - 1, argc, argv);
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
	json_t *nodes = cli_list_all(&c, "/trainplane/v1/nodes", "nodes");
	if (!nodes)
		return 1;
	if (!cli_list_flags.uri && (!cli_fmt || fmt_is_default(cli_fmt))) {
		json_t *rows = node_rows(nodes);
		cli_print_list(rows, "table(name, zone, state, vcpus, memory, accelerators, runtime, replicas)", NULL,
			       node_uri);
		json_decref(rows);
	} else {
		cli_print_list(nodes, "default", NULL, node_uri);
	}
	json_decref(nodes);
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
