#include "job_state.h"

#include <string.h>

#include "common.h"

/*
 * The machine. A change here changes the database's copy: add a migration
 * with the new copy (the server refuses to start until the database's
 * job_state_edges matches this table, and says what to write).
 */
const struct job_state_edge job_state_edges[] = {
	{ JOB_STATE_UNSPECIFIED, JOB_CAUSE_CREATE, JOB_QUEUED },
	{ JOB_QUEUED, JOB_CAUSE_PLACE, JOB_PREPARING },
	{ JOB_QUEUED, JOB_CAUSE_CANCEL, JOB_CANCELLED },	/* nothing runs yet */
	{ JOB_QUEUED, JOB_CAUSE_TIMEOUT, JOB_FAILED },		/* maxWaitTime */
	{ JOB_QUEUED, JOB_CAUSE_BACKEND, JOB_FAILED },
	/* a study with a trial placed: its trials stop first (schema/033) */
	{ JOB_QUEUED, JOB_CAUSE_CANCEL_TRIALS, JOB_CANCELLING },
	{ JOB_PREPARING, JOB_CAUSE_RUN, JOB_RUNNING },
	/* the primary exited 0 before every other replica reported running */
	{ JOB_PREPARING, JOB_CAUSE_SUCCEED, JOB_SUCCEEDED },
	{ JOB_PREPARING, JOB_CAUSE_FAIL, JOB_FAILED },
	{ JOB_PREPARING, JOB_CAUSE_TIMEOUT, JOB_FAILED },	/* maxWaitTime */
	{ JOB_PREPARING, JOB_CAUSE_NODE_LOSS, JOB_FAILED },
	{ JOB_PREPARING, JOB_CAUSE_RESTART, JOB_PREPARING },
	{ JOB_PREPARING, JOB_CAUSE_CANCEL, JOB_CANCELLING },
	{ JOB_PREPARING, JOB_CAUSE_PREEMPT, JOB_QUEUED },
	{ JOB_PREPARING, JOB_CAUSE_BACKEND, JOB_FAILED },
	{ JOB_RUNNING, JOB_CAUSE_SUCCEED, JOB_SUCCEEDED },
	{ JOB_RUNNING, JOB_CAUSE_FAIL, JOB_FAILED },
	{ JOB_RUNNING, JOB_CAUSE_TIMEOUT, JOB_FAILED },		/* maxRunningTime, Vertex timeout */
	{ JOB_RUNNING, JOB_CAUSE_NODE_LOSS, JOB_FAILED },
	{ JOB_RUNNING, JOB_CAUSE_RESTART, JOB_RUNNING },
	{ JOB_RUNNING, JOB_CAUSE_CANCEL, JOB_CANCELLING },
	{ JOB_RUNNING, JOB_CAUSE_PREEMPT, JOB_QUEUED },
	{ JOB_RUNNING, JOB_CAUSE_BACKEND, JOB_FAILED },
	/* Google lets CANCELLING end SUCCEEDED or FAILED too; trainplane's
	 * cancel always wins (README "Job lifecycle"). */
	{ JOB_CANCELLING, JOB_CAUSE_CANCELLED, JOB_CANCELLED },
};
const size_t job_state_edge_count = ARRAY_SIZE(job_state_edges);

/* Each state's names: ml v1 (and the database), Vertex, trainingPipelines. */
enum naming { ML, VERTEX, PIPELINE };
static const char *const names[JOB_STATE_COUNT][3] = {
	[JOB_STATE_UNSPECIFIED] = { "STATE_UNSPECIFIED", "JOB_STATE_UNSPECIFIED",
				    "PIPELINE_STATE_UNSPECIFIED" },
	[JOB_QUEUED] = { "QUEUED", "JOB_STATE_QUEUED", "PIPELINE_STATE_QUEUED" },
	[JOB_PREPARING] = { "PREPARING", "JOB_STATE_PENDING", "PIPELINE_STATE_PENDING" },
	[JOB_RUNNING] = { "RUNNING", "JOB_STATE_RUNNING", "PIPELINE_STATE_RUNNING" },
	[JOB_SUCCEEDED] = { "SUCCEEDED", "JOB_STATE_SUCCEEDED", "PIPELINE_STATE_SUCCEEDED" },
	[JOB_FAILED] = { "FAILED", "JOB_STATE_FAILED", "PIPELINE_STATE_FAILED" },
	[JOB_CANCELLING] = { "CANCELLING", "JOB_STATE_CANCELLING", "PIPELINE_STATE_CANCELLING" },
	[JOB_CANCELLED] = { "CANCELLED", "JOB_STATE_CANCELLED", "PIPELINE_STATE_CANCELLED" },
};

static const char *const cause_names[JOB_CAUSE_COUNT] = {
	[JOB_CAUSE_CREATE] = "create",	     [JOB_CAUSE_PLACE] = "place",
	[JOB_CAUSE_RUN] = "run",	     [JOB_CAUSE_SUCCEED] = "succeed",
	[JOB_CAUSE_FAIL] = "fail",	     [JOB_CAUSE_CANCEL] = "cancel",
	[JOB_CAUSE_CANCELLED] = "cancelled", [JOB_CAUSE_TIMEOUT] = "timeout",
	[JOB_CAUSE_NODE_LOSS] = "node_loss", [JOB_CAUSE_RESTART] = "restart",
	[JOB_CAUSE_PREEMPT] = "preempt",   [JOB_CAUSE_BACKEND] = "backend",
	[JOB_CAUSE_CANCEL_TRIALS] = "cancel_trials",
};

bool job_state_valid(enum job_state s)
{
	return s > JOB_STATE_UNSPECIFIED && s < JOB_STATE_COUNT;
}

bool job_state_final(enum job_state s)
{
	if (!job_state_valid(s))
		return false;
	for (size_t i = 0; i < job_state_edge_count; i++)
		if (job_state_edges[i].from == s)
			return false;
	return true;
}

bool job_state_edge_allowed(enum job_state from, enum job_state to)
{
	for (size_t i = 0; i < job_state_edge_count; i++)
		if (job_state_edges[i].from == from && job_state_edges[i].to == to)
			return true;
	return false;
}

enum job_state job_state_after(enum job_state from, enum job_cause cause)
{
	for (size_t i = 0; i < job_state_edge_count; i++)
		if (job_state_edges[i].from == from && job_state_edges[i].cause == cause)
			return job_state_edges[i].to;
	return JOB_STATE_UNSPECIFIED;
}

static const char *name_of(enum job_state s, enum naming how)
{
	return names[(unsigned)s < JOB_STATE_COUNT ? s : JOB_STATE_UNSPECIFIED][how];
}

const char *job_state_name(enum job_state s)
{
	return name_of(s, ML);
}

const char *job_state_vertex_name(enum job_state s)
{
	return name_of(s, VERTEX);
}

const char *job_state_pipeline_name(enum job_state s)
{
	return name_of(s, PIPELINE);
}

static enum job_state parse(const char *name, enum naming how)
{
	for (unsigned s = JOB_QUEUED; name && s < JOB_STATE_COUNT; s++)
		if (!strcmp(name, names[s][how]))
			return (enum job_state)s;
	return JOB_STATE_UNSPECIFIED;
}

enum job_state job_state_parse(const char *name)
{
	return parse(name, ML);
}

enum job_state job_state_parse_vertex(const char *name)
{
	return parse(name, VERTEX);
}

enum job_state job_state_parse_pipeline(const char *name)
{
	return parse(name, PIPELINE);
}

const char *job_cause_name(enum job_cause c)
{
	return (unsigned)c < JOB_CAUSE_COUNT ? cause_names[c] : NULL;
}

bool job_cause_parse(const char *name, enum job_cause *out)
{
	for (unsigned c = 0; name && c < JOB_CAUSE_COUNT; c++) {
		if (!strcmp(name, cause_names[c])) {
			*out = (enum job_cause)c;
			return true;
		}
	}
	return false;
}
