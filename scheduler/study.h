/*
 * study.h - the scheduler's pass over tuning studies (issue 26; ml v1
 * trainingInput.hyperparameters; docs/tuning.md).
 *
 * A study is a job that runs no replica itself; its trials are jobs of
 * their own (schema/017), placed, run, restarted and ended like any job.
 * Each pass of the leader looks at every running study and:
 *   - suggests new trials (scheduler/tuning.h) while fewer than
 *     maxParallelTrials run and fewer than maxTrials exist, and adds them
 *     QUEUED, their values as flags after the replicas' args;
 *   - moves the study: PREPARING once a trial is placed, RUNNING once one
 *     runs; FAILED when its failed trials reach maxFailedTrials (0: the
 *     rule of tuning_study_failed()), naming the trial; SUCCEEDED when no
 *     trial is left to run or suggest and one succeeded (FAILED when none
 *     did). A study that ends or is cancelled cancels its running trials
 *     (schema/017's trigger); a cancelled study stays CANCELLING until
 *     they have stopped, then this pass ends it CANCELLED (schema/020);
 *   - with enableTrialEarlyStopping, stops running trials by the median
 *     stopping rule (tuning_should_stop()): they end CANCELLED, marked
 *     stopped_early, and count as done on their last measurement;
 *   - writes its trainingOutput: isHyperparameterTuningJob,
 *     hyperparameterMetricTag, completedTrialCount, trials best first by
 *     the goal, consumedMLUnits over every trial.
 * A trial's objective is the last measurement its primary replica's
 * trainer wrote to its metric file (agent/metric_file.h).
 */
#ifndef TP_STUDY_H
#define TP_STUDY_H

#include <jansson.h>

#include "store.h"

/* One pass over the running studies, on the leader's connection. */
enum store_rc study_pass(struct store_conn *c);

/*
 * One study's decisions, without the database (tests): study as
 * store_study_active() lists it. *add: the trials to add ([{trial,
 * params}], new, maybe empty); *stop: the rows of running trials to stop
 * early (new, maybe empty); *output: its trainingOutput (new);
 * *to_state, *cause, *message: its move (NULL: none; message owned).
 */
void study_decide(const json_t *study, json_t **add, json_t **stop, json_t **output,
		  const char **to_state, const char **cause, char **message);

#endif
