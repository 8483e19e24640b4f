#include "node_state.h"

#include <string.h>

#include "common.h"

/*
 * The machine. A change here changes the database's copy: add a migration
 * with the new copy (the server refuses to start until the database's
 * node_state_edges matches this table, and logs the rows to write).
 */
const struct node_state_edge node_state_edges[] = {
	{ NODE_STATE_UNSPECIFIED, NODE_CAUSE_REGISTER, NODE_READY },

	{ NODE_READY, NODE_CAUSE_REGISTER, NODE_READY },	/* an agent restarted */
	{ NODE_READY, NODE_CAUSE_SYNC, NODE_READY },		/* the heartbeat */
	{ NODE_READY, NODE_CAUSE_STOP, NODE_STOPPING },
	{ NODE_READY, NODE_CAUSE_EXPIRE, NODE_LOST },

	{ NODE_STOPPING, NODE_CAUSE_REGISTER, NODE_READY },
	{ NODE_STOPPING, NODE_CAUSE_STOP, NODE_STOPPING },
	{ NODE_STOPPING, NODE_CAUSE_EXPIRE, NODE_LOST },

	{ NODE_LOST, NODE_CAUSE_REGISTER, NODE_READY },		/* re-registration */
	{ NODE_LOST, NODE_CAUSE_SYNC, NODE_READY },		/* a partition healed */
	{ NODE_LOST, NODE_CAUSE_STOP, NODE_STOPPING },
};
const size_t node_state_edge_count = ARRAY_SIZE(node_state_edges);

static const char *const names[NODE_STATE_COUNT] = {
	[NODE_STATE_UNSPECIFIED] = "STATE_UNSPECIFIED",
	[NODE_READY] = "READY",
	[NODE_STOPPING] = "STOPPING",
	[NODE_LOST] = "LOST",
};

static const char *const cause_names[NODE_CAUSE_COUNT] = {
	[NODE_CAUSE_REGISTER] = "register",
	[NODE_CAUSE_SYNC] = "sync",
	[NODE_CAUSE_STOP] = "stop",
	[NODE_CAUSE_EXPIRE] = "expire",
};

bool node_state_valid(enum node_state s)
{
	return s > NODE_STATE_UNSPECIFIED && s < NODE_STATE_COUNT;
}

bool node_state_edge_allowed(enum node_state from, enum node_state to)
{
	for (size_t i = 0; i < node_state_edge_count; i++)
		if (node_state_edges[i].from == from && node_state_edges[i].to == to)
			return true;
	return false;
}

enum node_state node_state_after(enum node_state from, enum node_cause cause)
{
	for (size_t i = 0; i < node_state_edge_count; i++)
		if (node_state_edges[i].from == from && node_state_edges[i].cause == cause)
			return node_state_edges[i].to;
	return NODE_STATE_UNSPECIFIED;
}

const char *node_state_name(enum node_state s)
{
	return names[(unsigned)s < NODE_STATE_COUNT ? s : NODE_STATE_UNSPECIFIED];
}

enum node_state node_state_parse(const char *name)
{
	for (unsigned s = NODE_READY; name && s < NODE_STATE_COUNT; s++)
		if (!strcmp(name, names[s]))
			return (enum node_state)s;
	return NODE_STATE_UNSPECIFIED;
}

const char *node_cause_name(enum node_cause c)
{
	return (unsigned)c < NODE_CAUSE_COUNT ? cause_names[c] : NULL;
}

bool node_cause_parse(const char *name, enum node_cause *out)
{
	for (unsigned c = 0; name && c < NODE_CAUSE_COUNT; c++) {
		if (!strcmp(name, cause_names[c])) {
			*out = (enum node_cause)c;
			return true;
		}
	}
	return false;
}
