/*
 * The study pass's decisions (scheduler/study.c), without a database:
 * studies as store_study_active() lists them, and what study_decide() adds,
 * writes and moves.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "common.h"
#include "store_study.h"
#include "study.h"

/*
 * The store, mocked: off (a call fails the test) unless a test of
 * study_pass() sets `pass`, which hands out its studies and trials and
 * records what the pass asked for and wrote.
 */
static struct {
	bool on;
	json_t *studies;	/* store_study_active()'s answer (copied out) */
	json_t *trials;		/* every trial whole, by row id */
	json_t *asked;		/* the rows store_study_trials() was asked for, per call */
	int updates;		/* store_study_update() calls */
} pass;

enum store_rc __wrap_store_study_active(struct store_conn *c, json_t **out);
enum store_rc __wrap_store_study_active(struct store_conn *c, json_t **out)
{
	(void)c;
	if (!pass.on)
		fail_msg("store_study_active called");
	*out = json_deep_copy(pass.studies);
	return STORE_OK;
}
enum store_rc __wrap_store_study_trials(struct store_conn *c, const int64_t *rows, size_t n,
					json_t **out);
enum store_rc __wrap_store_study_trials(struct store_conn *c, const int64_t *rows, size_t n,
					json_t **out)
{
	(void)c;
	if (!pass.on)
		fail_msg("store_study_trials called");
	json_t *asked = json_array();
	*out = json_array();
	for (size_t i = 0; i < n; i++) {
		char key[24];
		snprintf(key, sizeof(key), "%lld", (long long)rows[i]);
		json_array_append_new(asked, json_integer(rows[i]));
		json_array_append_new(*out, json_deep_copy(json_object_get(pass.trials, key)));
	}
	json_array_append_new(pass.asked, asked);
	return STORE_OK;
}
enum store_rc __wrap_store_study_add_trials(struct store_conn *c, int64_t s, const json_t *t, int *a);
enum store_rc __wrap_store_study_add_trials(struct store_conn *c, int64_t s, const json_t *t, int *a)
{
	(void)c, (void)s;
	if (!pass.on)
		fail_msg("store_study_add_trials called");
	*a = (int)json_array_size(t);
	return STORE_OK;
}
enum store_rc __wrap_store_study_update(struct store_conn *c, int64_t s, const json_t *o,
					const char *st, const char *ca, const char *m);
enum store_rc __wrap_store_study_update(struct store_conn *c, int64_t s, const json_t *o,
					const char *st, const char *ca, const char *m)
{
	(void)c, (void)s, (void)o, (void)st, (void)ca, (void)m;
	if (!pass.on)
		fail_msg("store_study_update called");
	pass.updates++;
	return STORE_OK;
}

enum store_rc __wrap_store_study_stop_trial(struct store_conn *c, int64_t s, int64_t t);
enum store_rc __wrap_store_study_stop_trial(struct store_conn *c, int64_t s, int64_t t)
{
	(void)c, (void)s, (void)t;
	fail_msg("store_study_stop_trial called");
	return STORE_ERROR;
}

/* A grid study over x in 1..2 and opt in {a, b} (4 points). */
static json_t *grid_study(const char *state, int max_trials, int max_parallel, int max_failed)
{
	json_t *s = json_pack("{s:I, s:s, s:s, s:{}, s:[]}", "id", (json_int_t)7, "jobId", "g",
			      "state", state, "output", "trials");
	json_t *spec = json_pack(
		"{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:i, s:i, s:i, s:[{s:s, s:s, s:i, s:i}, {s:s, s:s, s:[s, s]}]}}",
		"scaleTier", "CUSTOM", "region", "us-central1", "masterType", "n1-standard-4",
		"hyperparameters", "goal", "MAXIMIZE", "algorithm", "GRID_SEARCH",
		"hyperparameterMetricTag", "score", "maxTrials", max_trials,
		"maxParallelTrials", max_parallel, "maxFailedTrials", max_failed, "params",
		"parameterName", "x", "type", "INTEGER", "minValue", 1, "maxValue", 2,
		"parameterName", "opt", "type", "CATEGORICAL", "categoricalValues", "a", "b");
	json_object_set_new(s, "spec", spec);
	return s;
}

static void add_trial(json_t *s, int n, const char *x, const char *opt, const char *state,
		      double score, const char *error)
{
	json_t *t = json_pack("{s:i, s:[[s, s], [s, s]], s:s, s:s, s:f, s:[]}", "trial", n, "params",
			      "x", x, "opt", opt, "state", state, "error", error ? error : "",
			      "units", 0.5, "metrics");
	if (score == score)
		json_array_append_new(json_object_get(t, "metrics"),
				      json_pack("{s:i, s:f}", "step", 2, "value", score));
	json_array_append_new(json_object_get(s, "trials"), t);
}

static json_t *last_stop;	/* the last decision's trials to stop early */

static void decide(json_t *s, json_t **add, json_t **out, const char **to, const char **cause,
		   char **msg)
{
	json_decref(last_stop);
	study_decide(s, add, &last_stop, out, to, cause, msg);
}

static void a_new_study_suggests_as_many_as_may_run(void **state)
{
	json_t *s = grid_study("QUEUED", 10, 3, 0), *add, *out;
	const char *to, *cause;
	char *msg;
	(void)state;
	decide(s, &add, &out, &to, &cause, &msg);
	assert_int_equal(json_array_size(add), 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(json_integer_value(json_object_get(json_array_get(add, i), "trial")),
				 (json_int_t)i + 1);
	/* the grid's odometer order, the first parameter slowest; values as written */
	char *text = json_dumps(json_object_get(json_array_get(add, 0), "params"), JSON_COMPACT);
	assert_string_equal(text, "[[\"x\",\"1\"],[\"opt\",\"a\"]]");
	free(text);
	assert_null(to);	/* nothing placed yet: still QUEUED */
	assert_true(json_is_true(json_object_get(out, "isHyperparameterTuningJob")));
	assert_string_equal(json_string_value(json_object_get(out, "completedTrialCount")), "0");
	assert_string_equal(json_string_value(json_object_get(out, "hyperparameterMetricTag")), "score");
	json_decref(add);
	json_decref(out);
	json_decref(s);
}

static void a_running_study_fills_freed_slots_and_orders_its_output(void **state)
{
	json_t *s = grid_study("RUNNING", 10, 2, 0), *add, *out;
	const char *to, *cause;
	char *msg;
	(void)state;
	add_trial(s, 1, "1", "a", "SUCCEEDED", 3.0, NULL);
	add_trial(s, 2, "1", "b", "SUCCEEDED", 7.5, NULL);
	add_trial(s, 3, "2", "a", "RUNNING", NAN, NULL);
	decide(s, &add, &out, &to, &cause, &msg);
	assert_int_equal(json_array_size(add), 1);
	json_t *p = json_object_get(json_array_get(add, 0), "params");
	assert_string_equal(json_string_value(json_array_get(json_array_get(p, 0), 1)), "2");
	assert_string_equal(json_string_value(json_array_get(json_array_get(p, 1), 1)), "b");
	assert_null(to);
	json_t *trials = json_object_get(out, "trials");
	assert_int_equal(json_array_size(trials), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(trials, 0), "trialId")), "2");
	assert_string_equal(json_string_value(json_object_get(json_array_get(trials, 1), "trialId")), "1");
	assert_string_equal(json_string_value(json_object_get(json_array_get(trials, 2), "trialId")), "3");
	json_t *fm = json_object_get(json_array_get(trials, 0), "finalMetric");
	assert_string_equal(json_string_value(json_object_get(fm, "trainingStep")), "2");
	assert_true(json_real_value(json_object_get(fm, "objectiveValue")) == 7.5);
	assert_string_equal(json_string_value(json_object_get(out, "completedTrialCount")), "2");
	assert_true(json_real_value(json_object_get(out, "consumedMLUnits")) == 1.5);
	json_decref(add);
	json_decref(out);
	json_decref(s);
}

static void an_exhausted_grid_ends_the_study(void **state)
{
	json_t *s = grid_study("RUNNING", 10, 2, 0), *add, *out;
	const char *to, *cause;
	char *msg;
	(void)state;
	add_trial(s, 1, "1", "a", "SUCCEEDED", 1, NULL);
	add_trial(s, 2, "1", "b", "SUCCEEDED", 2, NULL);
	add_trial(s, 3, "2", "a", "SUCCEEDED", 3, NULL);
	add_trial(s, 4, "2", "b", "FAILED", NAN, "boom");
	decide(s, &add, &out, &to, &cause, &msg);
	assert_int_equal(json_array_size(add), 0);
	assert_string_equal(to, "SUCCEEDED");
	assert_string_equal(cause, "succeed");
	assert_null(msg);
	json_decref(add);
	json_decref(out);
	json_decref(s);
}

static void failed_trials_fail_the_study_with_the_first_ones_reason(void **state)
{
	json_t *s = grid_study("RUNNING", 10, 2, 2), *add, *out;
	const char *to, *cause;
	char *msg;
	(void)state;
	add_trial(s, 1, "1", "a", "FAILED", NAN, "The replica master 0 exited with a non-zero status of 1.");
	add_trial(s, 2, "1", "b", "FAILED", NAN, "The replica master 0 exited with a non-zero status of 2.");
	decide(s, &add, &out, &to, &cause, &msg);
	assert_int_equal(json_array_size(add), 0);
	assert_string_equal(to, "FAILED");
	assert_string_equal(cause, "fail");
	assert_string_equal(msg, "Trial 1 failed: The replica master 0 exited with a non-zero status of 1.");
	free(msg);
	json_decref(add);
	json_decref(out);
	json_decref(s);
}

/* A trial's measurements, one a step, from step 1. */
static void measure(json_t *s, int trial, const double *v, size_t n)
{
	json_t *t = json_array_get(json_object_get(s, "trials"), (size_t)trial - 1);
	json_t *m = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(m, json_pack("{s:i, s:f}", "step", (int)i + 1, "value", v[i]));
	json_object_set_new(t, "metrics", m);
	json_object_set_new(t, "row", json_integer(100 + trial));
}

static void early_stopping_stops_a_trial_below_the_median_and_counts_it_done(void **state)
{
	json_t *s = grid_study("RUNNING", 10, 2, 0), *add, *out;
	const char *to, *cause;
	char *msg;
	(void)state;
	json_object_set_new(json_object_get(json_object_get(s, "spec"), "hyperparameters"),
			    "enableTrialEarlyStopping", json_true());
	add_trial(s, 1, "1", "a", "SUCCEEDED", NAN, NULL);
	add_trial(s, 2, "1", "b", "SUCCEEDED", NAN, NULL);
	add_trial(s, 3, "2", "a", "SUCCEEDED", NAN, NULL);
	add_trial(s, 4, "2", "b", "RUNNING", NAN, NULL);
	const double good[] = { 5, 6, 7 }, bad[] = { 1, 1 };
	for (int t = 1; t <= 3; t++)
		measure(s, t, good, 3);
	measure(s, 4, bad, 2);
	decide(s, &add, &out, &to, &cause, &msg);
	assert_int_equal(json_array_size(last_stop), 1);
	assert_int_equal(json_integer_value(json_array_get(last_stop, 0)), 104);
	json_decref(add);
	json_decref(out);

	/* A trial as good as the others runs on. */
	measure(s, 4, good, 2);
	decide(s, &add, &out, &to, &cause, &msg);
	assert_int_equal(json_array_size(last_stop), 0);
	json_decref(add);
	json_decref(out);

	/* Stopped early and ended: done on its last value, SUCCEEDED in the output. */
	measure(s, 4, bad, 2);
	json_t *t4 = json_array_get(json_object_get(s, "trials"), 3);
	json_object_set_new(t4, "stoppedEarly", json_true());
	json_object_set_new(t4, "state", json_string("CANCELLED"));
	decide(s, &add, &out, &to, &cause, &msg);
	assert_string_equal(to, "SUCCEEDED");	/* the grid's 4 points are done */
	json_t *trials = json_object_get(out, "trials");
	json_t *last = json_array_get(trials, 3);	/* the worst: 1 */
	assert_string_equal(json_string_value(json_object_get(last, "trialId")), "4");
	assert_true(json_is_true(json_object_get(last, "isTrialStoppedEarly")));
	assert_string_equal(json_string_value(json_object_get(last, "state")), "SUCCEEDED");
	assert_string_equal(json_string_value(json_object_get(out, "completedTrialCount")), "4");
	json_decref(add);
	json_decref(out);
	json_decref(s);
}

/* resumePreviousJobId: the earlier study's trials count and are listed; numbers go on. */
static void a_resumed_study_goes_on_from_the_earlier_ones_trials(void **state)
{
	json_t *s = grid_study("QUEUED", 2, 2, 1), *add, *out;
	const char *to, *cause;
	char *msg;
	(void)state;
	json_t *own = json_object_get(s, "trials");
	add_trial(s, 1, "1", "a", "SUCCEEDED", 4, NULL);
	add_trial(s, 2, "1", "b", "FAILED", NAN, "boom");
	json_object_set(s, "previous", own);	/* those two were the earlier study's */
	json_object_set_new(s, "trials", json_array());
	decide(s, &add, &out, &to, &cause, &msg);
	assert_null(msg);	/* the earlier failure does not fail this study (maxFailedTrials 1) */
	assert_int_equal(json_array_size(add), 2);
	json_t *a0 = json_array_get(add, 0), *a1 = json_array_get(add, 1);
	assert_int_equal(json_integer_value(json_object_get(a0, "trial")), 3);
	assert_int_equal(json_integer_value(json_object_get(a1, "trial")), 4);
	/* the grid goes on where the earlier study left it: x = 2 */
	assert_string_equal(json_string_value(json_array_get(json_array_get(json_object_get(a0, "params"), 0), 1)), "2");
	assert_string_equal(json_string_value(json_array_get(json_array_get(json_object_get(a1, "params"), 0), 1)), "2");
	assert_int_equal(json_array_size(json_object_get(out, "trials")), 2);
	assert_null(to);	/* none of its own placed yet */
	json_decref(add);
	json_decref(out);
	json_decref(s);
}

static void a_queued_study_is_preparing_once_a_trial_is_placed(void **state)
{
	json_t *s = grid_study("QUEUED", 2, 2, 0), *add, *out;
	const char *to, *cause;
	char *msg;
	(void)state;
	add_trial(s, 1, "1", "a", "PREPARING", NAN, NULL);
	add_trial(s, 2, "1", "b", "QUEUED", NAN, NULL);
	decide(s, &add, &out, &to, &cause, &msg);
	assert_int_equal(json_array_size(add), 0);	/* maxTrials reached */
	assert_string_equal(to, "PREPARING");
	assert_string_equal(cause, "place");
	json_decref(add);
	json_decref(out);
	json_decref(s);
}

/*
 * A Vertex tuning job (as stored: the normalised body): opt in {a, b}, and
 * lr, a child of opt that only opt = b gets; MINIMIZE, BEST_MEASUREMENT.
 */
static json_t *vertex_study(const char *state)
{
	json_t *s = json_pack("{s:I, s:s, s:s, s:s, s:s, s:{}, s:[]}", "id", (json_int_t)9,
			      "jobId", "9", "project", "p", "region", "us-central1", "state", state,
			      "output", "trials");
	json_t *spec = json_loads(
		"{\"displayName\": \"t\", \"maxTrialCount\": 4, \"parallelTrialCount\": 4,"
		" \"studySpec\": {\"metrics\": [{\"metricId\": \"loss\", \"goal\": \"MINIMIZE\"}],"
		"  \"algorithm\": \"RANDOM_SEARCH\", \"measurementSelectionType\": \"BEST_MEASUREMENT\","
		"  \"parameters\": [{\"parameterId\": \"opt\", \"categoricalValueSpec\": {\"values\": [\"a\", \"b\"]},"
		"   \"conditionalParameterSpecs\": [{\"parentCategoricalValues\": {\"values\": [\"b\"]},"
		"    \"parameterSpec\": {\"parameterId\": \"lr\", \"doubleValueSpec\": {\"minValue\": 0.1, \"maxValue\": 0.5}}}]}]},"
		" \"trialJobSpec\": {\"workerPoolSpecs\": [{\"machineSpec\": {\"machineType\": \"n1-standard-4\"},"
		"  \"replicaCount\": \"1\", \"containerSpec\": {\"imageUri\": \"x\"}}],"
		"  \"baseOutputDirectory\": {\"outputUriPrefix\": \"gs://b/out/\"}}}", 0, NULL);
	assert_non_null(spec);
	json_object_set_new(s, "spec", spec);
	return s;
}

static void a_vertex_trial_is_a_custom_job_with_its_own_output_directory(void **state)
{
	json_t *s = vertex_study("QUEUED"), *add, *out;
	const char *to, *cause;
	char *msg;
	(void)state;
	decide(s, &add, &out, &to, &cause, &msg);
	assert_int_equal(json_array_size(add), 4);
	for (size_t i = 0; i < 4; i++) {
		const json_t *t = json_array_get(add, i), *params = json_object_get(t, "params");
		const json_t *spec = json_object_get(t, "spec");
		char want[64];
		/* every parameter is kept (the optimizer's point); lr marked when left out */
		assert_int_equal(json_array_size(params), 2);
		const char *opt = json_string_value(json_array_get(json_array_get(params, 0), 1));
		bool lr_off = json_is_false(json_array_get(json_array_get(params, 1), 2));
		assert_true(!strcmp(opt, "b") ? !lr_off : lr_off);
		snprintf(want, sizeof(want), "gs://b/out/%zu", i + 1);
		assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(
			spec, "jobSpec"), "baseOutputDirectory"), "outputUriPrefix")), want);
		snprintf(want, sizeof(want), "t trial %zu", i + 1);
		assert_string_equal(json_string_value(json_object_get(spec, "displayName")), want);
		const json_t *rec = json_object_get(spec, "_trial");
		assert_string_equal(json_string_value(json_object_get(rec, "metricTag")), "loss");
		assert_string_equal(json_string_value(json_object_get(rec, "study")), "9");
		assert_int_equal(json_integer_value(json_object_get(rec, "trial")), (json_int_t)i + 1);
	}
	/* Vertex's output is trials[] alone: no ml v1 fields */
	assert_null(json_object_get(out, "isHyperparameterTuningJob"));
	assert_null(json_object_get(out, "completedTrialCount"));
	json_decref(add);
	json_decref(out);
	json_decref(s);
}

static void vertex_trials_show_states_values_and_the_best_measurement(void **state)
{
	json_t *s = vertex_study("RUNNING"), *add, *out;
	const char *to, *cause;
	char *msg;
	(void)state;
	json_t *trials = json_object_get(s, "trials");
	/* 1: opt=b, lr=0.25, measured 0.9 then 0.3 then 0.5 (MINIMIZE, BEST: 0.3 at step 2) */
	json_array_append_new(trials, json_pack("{s:i, s:s, s:[[s,s],[s,s]], s:s, s:b, s:s,"
		" s:[{s:i, s:f}, {s:i, s:f}, {s:i, s:f}]}", "trial", 1, "jobId", "11", "params",
		"opt", "b", "lr", "0.25", "state", "SUCCEEDED", "stoppedEarly", 0, "startTime",
		"2026-01-01T00:00:00Z", "metrics", "step", 1, "value", 0.9, "step", 2, "value", 0.3,
		"step", 3, "value", 0.5));
	/* 2: opt=a (lr not passed), failed */
	json_array_append_new(trials, json_pack("{s:i, s:s, s:[[s,s],[s,s,b]], s:s, s:s, s:[]}",
		"trial", 2, "jobId", "12", "params", "opt", "a", "lr", "0.4", 0, "state", "FAILED",
		"error", "The replica workerpool0-0 exited with a non-zero status of 1.", "metrics"));
	/* 3: running, 4: being cancelled, 5: succeeded without a measurement */
	json_array_append_new(trials, json_pack("{s:i, s:s, s:[[s,s],[s,s,b]], s:s, s:[]}", "trial", 3,
		"jobId", "13", "params", "opt", "a", "lr", "0.1", 0, "state", "RUNNING", "metrics"));
	json_array_append_new(trials, json_pack("{s:i, s:s, s:[[s,s],[s,s,b]], s:s, s:[]}", "trial", 4,
		"jobId", "14", "params", "opt", "a", "lr", "0.1", 0, "state", "CANCELLING", "metrics"));
	decide(s, &add, &out, &to, &cause, &msg);
	const json_t *o = json_object_get(out, "trials");
	assert_int_equal(json_array_size(o), 4);
	const json_t *t1 = json_array_get(o, 0), *t2 = json_array_get(o, 1);
	char *text = json_dumps(t1, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
	assert_string_equal(text, "{\"customJob\":\"projects/p/locations/us-central1/customJobs/11\","
		"\"finalMeasurement\":{\"metrics\":[{\"metricId\":\"loss\",\"value\":0.3}],\"stepCount\":\"2\"},"
		"\"id\":\"1\",\"parameters\":[{\"parameterId\":\"opt\",\"value\":\"b\"},"
		"{\"parameterId\":\"lr\",\"value\":0.25}],\"startTime\":\"2026-01-01T00:00:00Z\","
		"\"state\":\"SUCCEEDED\"}");
	free(text);
	assert_string_equal(json_string_value(json_object_get(t2, "state")), "INFEASIBLE");
	assert_int_equal(json_array_size(json_object_get(t2, "parameters")), 1);
	assert_string_equal(json_string_value(json_object_get(t2, "infeasibleReason")),
			    "The replica workerpool0-0 exited with a non-zero status of 1.");
	assert_string_equal(json_string_value(json_object_get(json_array_get(o, 2), "state")), "ACTIVE");
	assert_string_equal(json_string_value(json_object_get(json_array_get(o, 3), "state")), "STOPPING");
	/* 4 trials exist (maxTrialCount 4): nothing more to add */
	assert_int_equal(json_array_size(add), 0);
	json_decref(add);
	json_decref(out);
	free(msg);
	json_decref(s);
}

/* A trial whole, as store_study_trials() gives it. */
static json_t *whole_trial(int64_t row, int n, const char *x, const char *state, double score)
{
	json_t *t = json_pack("{s:I, s:i, s:s, s:[[s, s], [s, s]], s:s, s:s, s:f, s:[]}", "row",
			      (json_int_t)row, "trial", n, "jobId", "g/trials/x", "params", "x", x,
			      "opt", "a", "state", state, "error", "", "units", 0.5, "metrics");
	if (score == score)
		json_array_append_new(json_object_get(t, "metrics"),
				      json_pack("{s:i, s:f}", "step", 2, "value", score));
	return t;
}

static void set_light(json_t *study, const char *s1, const char *s2)
{
	json_object_set_new(study, "trials", json_pack("[[i, s], [i, s]]", 101, s1, 102, s2));
}

static void study_pass_reads_an_ended_trial_once_and_writes_its_output_at_most_twice_a_second(void **state)
{
	(void)state;
	struct study_pass_state *ps = study_pass_state_new();
	json_t *study = grid_study("RUNNING", 2, 2, 0);
	pass.on = true;
	pass.asked = json_array();
	pass.updates = 0;
	pass.trials = json_object();
	json_object_set_new(pass.trials, "101", whole_trial(101, 1, "1", "SUCCEEDED", 3));
	json_object_set_new(pass.trials, "102", whole_trial(102, 2, "2", "RUNNING", NAN));
	set_light(study, "SUCCEEDED", "RUNNING");
	pass.studies = json_pack("[O]", study);

	/* 1: both read; the output written (the first time) */
	assert_int_equal(study_pass(NULL, ps), STORE_OK);
	/* 2: the ended trial from the cache; no write within the half second */
	assert_int_equal(study_pass(NULL, ps), STORE_OK);
	/* 3: trial 2 ended: read once more (it was running when read), the study ends */
	json_object_set_new(pass.trials, "102", whole_trial(102, 2, "2", "SUCCEEDED", 5));
	set_light(study, "SUCCEEDED", "SUCCEEDED");
	json_decref(pass.studies);
	pass.studies = json_pack("[O]", study);
	assert_int_equal(study_pass(NULL, ps), STORE_OK);
	/* 4: nothing to read at all */
	assert_int_equal(study_pass(NULL, ps), STORE_OK);

	char *asked = json_dumps(pass.asked, JSON_COMPACT);
	assert_string_equal(asked, "[[101,102],[102],[102]]");
	free(asked);
	/* pass 1 (first write), pass 3 (SUCCEEDED: a move), pass 4 (the move again:
	 * this mock does not end the study) */
	assert_int_equal(pass.updates, 3);

	pass.on = false;
	json_decref(pass.asked);
	json_decref(pass.trials);
	json_decref(pass.studies);
	json_decref(study);
	study_pass_state_free(ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_new_study_suggests_as_many_as_may_run),
		cmocka_unit_test(a_running_study_fills_freed_slots_and_orders_its_output),
		cmocka_unit_test(an_exhausted_grid_ends_the_study),
		cmocka_unit_test(failed_trials_fail_the_study_with_the_first_ones_reason),
		cmocka_unit_test(a_queued_study_is_preparing_once_a_trial_is_placed),
		cmocka_unit_test(early_stopping_stops_a_trial_below_the_median_and_counts_it_done),
		cmocka_unit_test(a_resumed_study_goes_on_from_the_earlier_ones_trials),
		cmocka_unit_test(a_vertex_trial_is_a_custom_job_with_its_own_output_directory),
		cmocka_unit_test(vertex_trials_show_states_values_and_the_best_measurement),
		cmocka_unit_test(study_pass_reads_an_ended_trial_once_and_writes_its_output_at_most_twice_a_second),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	json_decref(last_stop);
	return rc;
}
