/*
 * runtime_simulate.c - the simulate runtime: nothing runs. A replica is
 * RUNNING for its script's duration (simulate_script.h), then EXITED with
 * the script's code; its log says so. Stopping it ends it at once, as
 * SIGTERM would.
 */
#include "runtime.h"

#include <signal.h>
#include <stdlib.h>

#include "replica_log.h"
#include "simulate_script.h"

static void simulate_start(const struct agent_config *cfg, struct replica *r,
			   const struct desired_replica *d)
{
	if (d && d->has_simulate && d->sim_seconds >= 0) {
		r->sim_seconds = d->sim_seconds;
		r->sim_exit = d->sim_exit;
	} else if (d && d->has_simulate) {
		/* an exit code without seconds: the default's length */
		int ignored;
		if (simulate_script_parse(cfg->simulate_default, &r->sim_seconds, &ignored))
			r->sim_seconds = 2;
		r->sim_exit = d->sim_exit;
	} else if (simulate_script_parse(cfg->simulate_default, &r->sim_seconds, &r->sim_exit)) {
		r->sim_seconds = 2;
		r->sim_exit = 0;
	}
	char *line = xasprintf("simulate: replica %s attempt %d runs for %gs, then exits with %d",
			       r->id, r->attempt, r->sim_seconds, r->sim_exit);
	replica_log_append(r, 'O', line);
	free(line);
	replica_transition(r, REPLICA_CAUSE_RUN);
}

static int64_t simulate_end(const struct replica *r)
{
	return r->start_usec + (int64_t)(r->sim_seconds * 1e6);
}

static int64_t simulate_next_event(const struct replica *r)
{
	return r->state == REPLICA_RUNNING ? simulate_end(r) : 0;
}

static void simulate_poll(const struct agent_config *cfg, struct replica *r)
{
	(void)cfg;
	int64_t end = simulate_end(r);
	if (r->state != REPLICA_RUNNING || now_usec() < end)
		return;
	char *line = xasprintf("simulate: exiting with %d", r->sim_exit);
	replica_log_append(r, r->sim_exit ? 'E' : 'O', line);
	free(line);
	replica_set_final(r, REPLICA_EXITED, r->sim_exit, end, NULL);
}

static void simulate_stop(const struct agent_config *cfg, struct replica *r)
{
	(void)cfg;
	r->stopping = true;
	if (r->state != REPLICA_RUNNING && r->state != REPLICA_STARTING)
		return;
	replica_log_append(r, 'E', "simulate: stopped by SIGTERM");
	replica_set_final(r, REPLICA_EXITED, 128 + SIGTERM, 0, NULL);
}

static void nothing_to_release(const struct agent_config *cfg, struct replica *r)
{
	(void)cfg;
	(void)r;
}

const struct runtime_ops runtime_simulate_ops = {
	simulate_start, simulate_poll, simulate_stop, nothing_to_release, simulate_next_event,
};
