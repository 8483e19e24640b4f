/*
 * sim_outcome.h - the emulator's scripted outcomes applied to the plans the
 * scheduler places (spec/sim_rules.h): the leader reads the rule list each
 * pass (schema/023), holds the jobs a "queue" rule matches, and gives each
 * matched replica its simulate object; a tuning trial's metric is its
 * rule's expression at the trial's parameter values.
 */
#ifndef TP_SIM_OUTCOME_H
#define TP_SIM_OUTCOME_H

#include <jansson.h>

#include "job_plan.h"
#include "store.h"

struct sim_outcomes;

struct sim_outcomes *sim_outcomes_new(void);
void sim_outcomes_free(struct sim_outcomes *o);	/* NULL is a no-op */

/* Reads the rule list, parsing it again when it changed. */
enum store_rc sim_outcomes_refresh(struct sim_outcomes *o, struct store_conn *c) MUST_CHECK;

/*
 * Applies the rules to a queued job (the scheduler snapshot's object: id,
 * project, job_id, api, spec, labels, trial_params; a trial matches as
 * its tuning job, by parent_job_id and parent_display_name) and its plan. Returns
 * the index of a "queue" rule that holds the job (nothing placed), or -1
 * with every matched replica's run.simulate set. A job label
 * trainplane-simulate wins over the rules.
 */
int sim_outcomes_apply(const struct sim_outcomes *o, const json_t *queued, struct job_plan *plan);

#endif
