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

/* How often a running study's output is written when nothing moved it. */
#define STUDY_OUTPUT_EVERY_US (INT64_C(500) * 1000)

/* What passes keep between them: the ended trials read (they never change
 * again), when each study's output was last written. One per scheduler. */
struct study_pass_state;
struct study_pass_state *study_pass_state_new(void);
void study_pass_state_free(struct study_pass_state *ps);

/*
 * One pass over the running studies, on the leader's connection: reads
 * what changed since the last pass (an ended trial once), decides, and
 * writes. A study's output is written when it moves or stops a trial, and
 * otherwise at most every STUDY_OUTPUT_EVERY_US.
 */
enum store_rc study_pass(struct store_conn *c, struct study_pass_state *ps);

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
