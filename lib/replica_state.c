#include "replica_state.h"

#include <string.h>

#include "common.h"

/*
 * The machine. A change here changes the database's copy: add a migration
 * with the new copy (the server refuses to start until the database's
 * replica_state_edges matches this table, and logs the rows to write).
 */
const struct replica_state_edge replica_state_edges[] = {
	{ REPLICA_STATE_UNSPECIFIED, REPLICA_CAUSE_CREATE, REPLICA_PENDING },

	{ REPLICA_PENDING, REPLICA_CAUSE_START, REPLICA_STARTING },
	{ REPLICA_PENDING, REPLICA_CAUSE_RUN, REPLICA_RUNNING },
	{ REPLICA_PENDING, REPLICA_CAUSE_EXIT, REPLICA_EXITED },
	{ REPLICA_PENDING, REPLICA_CAUSE_FAIL_START, REPLICA_FAILED_TO_START },
	{ REPLICA_PENDING, REPLICA_CAUSE_LOSE, REPLICA_LOST },
	/* a gang restart takes every replica, started or not */
	{ REPLICA_PENDING, REPLICA_CAUSE_RESTART, REPLICA_PENDING },
	{ REPLICA_PENDING, REPLICA_CAUSE_REQUEUE, REPLICA_PENDING },

	{ REPLICA_STARTING, REPLICA_CAUSE_RUN, REPLICA_RUNNING },
	/* stopped before it started: EXITED 143 */
	{ REPLICA_STARTING, REPLICA_CAUSE_EXIT, REPLICA_EXITED },
	{ REPLICA_STARTING, REPLICA_CAUSE_FAIL_START, REPLICA_FAILED_TO_START },
	{ REPLICA_STARTING, REPLICA_CAUSE_LOSE, REPLICA_LOST },

	{ REPLICA_RUNNING, REPLICA_CAUSE_EXIT, REPLICA_EXITED },
	/* a trainer package's bootstrap ran, its module never started */
	{ REPLICA_RUNNING, REPLICA_CAUSE_FAIL_START, REPLICA_FAILED_TO_START },
	{ REPLICA_RUNNING, REPLICA_CAUSE_LOSE, REPLICA_LOST },

	/* the same, found by the agent before it reported the exit */
	{ REPLICA_EXITED, REPLICA_CAUSE_FAIL_START, REPLICA_FAILED_TO_START },
	{ REPLICA_EXITED, REPLICA_CAUSE_RESTART, REPLICA_PENDING },
	{ REPLICA_EXITED, REPLICA_CAUSE_REQUEUE, REPLICA_PENDING },

	{ REPLICA_FAILED_TO_START, REPLICA_CAUSE_RESTART, REPLICA_PENDING },
	{ REPLICA_FAILED_TO_START, REPLICA_CAUSE_REQUEUE, REPLICA_PENDING },

	{ REPLICA_LOST, REPLICA_CAUSE_RESTART, REPLICA_PENDING },
	{ REPLICA_LOST, REPLICA_CAUSE_REQUEUE, REPLICA_PENDING },
};
const size_t replica_state_edge_count = ARRAY_SIZE(replica_state_edges);

static const char *const names[REPLICA_STATE_COUNT] = {
	[REPLICA_STATE_UNSPECIFIED] = "STATE_UNSPECIFIED",
	[REPLICA_PENDING] = "PENDING",
	[REPLICA_STARTING] = "STARTING",
	[REPLICA_RUNNING] = "RUNNING",
	[REPLICA_EXITED] = "EXITED",
	[REPLICA_FAILED_TO_START] = "FAILED_TO_START",
	[REPLICA_LOST] = "LOST",
};

static const char *const cause_names[REPLICA_CAUSE_COUNT] = {
	[REPLICA_CAUSE_CREATE] = "create",	   [REPLICA_CAUSE_START] = "start",
	[REPLICA_CAUSE_RUN] = "run",		   [REPLICA_CAUSE_EXIT] = "exit",
	[REPLICA_CAUSE_FAIL_START] = "fail_start", [REPLICA_CAUSE_LOSE] = "lose",
	[REPLICA_CAUSE_RESTART] = "restart",	   [REPLICA_CAUSE_REQUEUE] = "requeue",
};

bool replica_state_valid(enum replica_state s)
{
	return s > REPLICA_STATE_UNSPECIFIED && s < REPLICA_STATE_COUNT;
}

bool replica_state_ended(enum replica_state s)
{
	return s == REPLICA_EXITED || s == REPLICA_FAILED_TO_START || s == REPLICA_LOST;
}

bool replica_state_edge_allowed(enum replica_state from, enum replica_state to)
{
	for (size_t i = 0; i < replica_state_edge_count; i++)
		if (replica_state_edges[i].from == from && replica_state_edges[i].to == to)
			return true;
	return false;
}

enum replica_state replica_state_after(enum replica_state from, enum replica_cause cause)
{
	for (size_t i = 0; i < replica_state_edge_count; i++)
		if (replica_state_edges[i].from == from && replica_state_edges[i].cause == cause)
			return replica_state_edges[i].to;
	return REPLICA_STATE_UNSPECIFIED;
}

bool replica_cause_new_attempt(enum replica_cause c)
{
	return c == REPLICA_CAUSE_RESTART || c == REPLICA_CAUSE_REQUEUE;
}

bool replica_cause_of_report(enum replica_state s, enum replica_cause *out)
{
	static const enum replica_cause of[REPLICA_STATE_COUNT] = {
		[REPLICA_STARTING] = REPLICA_CAUSE_START,
		[REPLICA_RUNNING] = REPLICA_CAUSE_RUN,
		[REPLICA_EXITED] = REPLICA_CAUSE_EXIT,
		[REPLICA_FAILED_TO_START] = REPLICA_CAUSE_FAIL_START,
		[REPLICA_LOST] = REPLICA_CAUSE_LOSE,
	};
	if (s < REPLICA_STARTING || s >= REPLICA_STATE_COUNT)
		return false;
	*out = of[s];
	return true;
}

const char *replica_state_name(enum replica_state s)
{
	return names[(unsigned)s < REPLICA_STATE_COUNT ? s : REPLICA_STATE_UNSPECIFIED];
}

enum replica_state replica_state_parse(const char *name)
{
	for (unsigned s = REPLICA_PENDING; name && s < REPLICA_STATE_COUNT; s++)
		if (!strcmp(name, names[s]))
			return (enum replica_state)s;
	return REPLICA_STATE_UNSPECIFIED;
}

const char *replica_cause_name(enum replica_cause c)
{
	return (unsigned)c < REPLICA_CAUSE_COUNT ? cause_names[c] : NULL;
}

bool replica_cause_parse(const char *name, enum replica_cause *out)
{
	for (unsigned c = 0; name && c < REPLICA_CAUSE_COUNT; c++) {
		if (!strcmp(name, cause_names[c])) {
			*out = (enum replica_cause)c;
			return true;
		}
	}
	return false;
}
