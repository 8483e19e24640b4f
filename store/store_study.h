/*
 * store_study.h - tuning studies and their trials in the database
 * (schema/017): what the scheduler's study pass reads and writes
 * (scheduler/study.c). A trial is a job of its own, a child of its study's
 * row; its state moves through the one state machine like any job's.
 */
#ifndef TP_STORE_STUDY_H
#define TP_STORE_STUDY_H

#include <jansson.h>
#include <stdint.h>

#include "common.h"
#include "store.h"

/*
 * The studies still running (QUEUED, PREPARING, RUNNING) or being
 * cancelled (CANCELLING: their trials are stopping), each
 *   {"id", "jobId", "project", "region", "state", "spec",
 *    "trials": [[row, state], ...], "previous": [[row, state], ...] or null}
 * with its trials in trial order, light: store_study_trials() reads a
 * trial whole. "previous" are the trials of the study its
 * hyperparameters.resumePreviousJobId names (of the same project; null
 * when none) (new array).
 */
enum store_rc store_study_active(struct store_conn *c, json_t **out) MUST_CHECK;

/*
 * The trials whose job rows are rows[n], whole (in no order):
 *   [{"row", "trial", "jobId", "params": [[name, value(, false)], ...],
 *     "stoppedEarly", "state", "error", "startTime", "endTime", "units",
 *     "metrics": [{step, value}]}]
 * a trial's metrics those of its primary replica (new array).
 */
enum store_rc store_study_trials(struct store_conn *c, const int64_t *rows, size_t n,
				 json_t **out) MUST_CHECK;

/*
 * Adds trials to study (still QUEUED, PREPARING or RUNNING: else none is
 * added): [{"trial": n, "params": [[name, value(, false)], ...], "spec"?}],
 * each a QUEUED job with the study's labels and priority, and its "spec"
 * (the study's when absent): an ml trial's job_id is "<study
 * job_id>/trials/<n>", a Vertex trial's its row id (a CustomJob's numeric
 * id). A param [name, value, false] is one the trial does not get.
 * STORE_CONFLICT when a trial of that number exists (another leader's).
 */
enum store_rc store_study_add_trials(struct store_conn *c, int64_t study, const json_t *trials,
				     int *added) MUST_CHECK;

/*
 * Stops a running trial (its job's row trial_row) of study early, by the
 * median stopping rule: marked stopped_early, then cancelled.
 */
enum store_rc store_study_stop_trial(struct store_conn *c, int64_t study,
				     int64_t trial_row) MUST_CHECK;

/*
 * Writes the study's trainingOutput (output: the object merged into its
 * output) and, when to_state is not NULL, moves it by cause with message
 * (NULL: none) through the state machine's entry point.
 */
enum store_rc store_study_update(struct store_conn *c, int64_t study, const json_t *output,
				 const char *to_state, const char *cause,
				 const char *message) MUST_CHECK;

#endif
