/*
 * tuning.h - the optimizer of hyperparameter tuning studies (issue 26): what
 * the next trials try, when a running trial stops early, when a study has
 * failed too often, and how trials are ordered and their values written.
 *
 * A pure library: no I/O, no SQL, no global state. Every function is
 * reentrant; the same inputs and seed give the same answer. The caller (the
 * scheduler) keeps the study and its trials and passes all of them in at
 * each call. The algorithms, their choices and measured quality are in
 * docs/tuning.md.
 *
 * A point (a trial's parameter values) is an array of doubles, one per
 * parameter in the study's order: the value itself for DOUBLE, INTEGER
 * (a whole number) and DISCRETE (one of its values, exactly), and the
 * index into categories[] for CATEGORICAL.
 */
#ifndef TP_TUNING_H
#define TP_TUNING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common.h"

enum tuning_param_type {
	TUNING_DOUBLE,
	TUNING_INTEGER,		/* min..max, both included */
	TUNING_CATEGORICAL,	/* strings */
	TUNING_DISCRETE,	/* a strictly increasing list of doubles */
};

enum tuning_scale {
	TUNING_SCALE_LINEAR,	/* NONE, SCALE_TYPE_UNSPECIFIED, UNIT_LINEAR_SCALE */
	TUNING_SCALE_LOG,	/* UNIT_LOG_SCALE: uniform in log(x); min > 0 */
	TUNING_SCALE_REVERSE_LOG, /* UNIT_REVERSE_LOG_SCALE: dense near max; min > 0 */
};

enum tuning_goal {
	TUNING_MAXIMIZE,	/* also GOAL_TYPE_UNSPECIFIED (ml v1's default) */
	TUNING_MINIMIZE,
};

enum tuning_algorithm {
	TUNING_BAYESIAN,	/* ALGORITHM_UNSPECIFIED: a Gaussian process and expected improvement */
	TUNING_GRID,		/* GRID_SEARCH: INTEGER, DISCRETE and CATEGORICAL only */
	TUNING_RANDOM,		/* RANDOM_SEARCH */
};

struct tuning_param {
	const char *name;
	enum tuning_param_type type;
	enum tuning_scale scale;	/* DOUBLE, INTEGER, DISCRETE; ignored for CATEGORICAL */
	double min, max;		/* DOUBLE, INTEGER (whole numbers, |x| <= 2^53) */
	const double *values;		/* DISCRETE: strictly increasing */
	size_t nvalues;
	const char *const *categories;	/* CATEGORICAL: distinct strings */
	size_t ncategories;
};

struct tuning_study {
	const struct tuning_param *params;
	size_t nparams;
	enum tuning_goal goal;
	enum tuning_algorithm algorithm;
	uint64_t seed;
};

enum tuning_trial_state {
	TUNING_TRIAL_ACTIVE,		/* suggested, pending or running */
	TUNING_TRIAL_COMPLETED,		/* succeeded: objective is its final value */
	TUNING_TRIAL_FAILED,		/* the trial's job failed */
	TUNING_TRIAL_STOPPED,		/* stopped early: objective is its last value (NaN if none) */
	TUNING_TRIAL_INFEASIBLE,	/* the point cannot be evaluated (Vertex INFEASIBLE) */
};

struct tuning_measurement {
	int64_t step;
	double value;
};

struct tuning_trial {
	int64_t id;				/* "1", "2", ...: ties in the order go by id */
	const double *values;			/* the point: nparams values */
	enum tuning_trial_state state;
	double objective;			/* COMPLETED and STOPPED */
	const struct tuning_measurement *measurements;	/* intermediate values, any order */
	size_t nmeasurements;
};

/*
 * Names of the APIs' enums (ml v1 and Vertex spellings both) into the
 * enums above. NULL or "" is the API's default (LINEAR, MAXIMIZE,
 * BAYESIAN). 0, or -1 for a name neither API has.
 */
int tuning_param_type_parse(const char *name, enum tuning_param_type *out) MUST_CHECK;
int tuning_scale_parse(const char *name, enum tuning_scale *out) MUST_CHECK;
int tuning_goal_parse(const char *name, enum tuning_goal *out) MUST_CHECK;
int tuning_algorithm_parse(const char *name, enum tuning_algorithm *out) MUST_CHECK;

/*
 * 0 if the optimizer can work on study; otherwise -1 and why, in err
 * (e.g. "parameter 'lr': UNIT_LOG_SCALE needs a strictly positive range").
 */
int tuning_study_check(const struct tuning_study *study, char *err, size_t errlen) MUST_CHECK;

/*
 * The number of points of the study's INTEGER x DISCRETE x CATEGORICAL
 * grid, UINT64_MAX when larger (saturating) or when a parameter is DOUBLE.
 */
uint64_t tuning_grid_size(const struct tuning_study *study);

/* The optimizer's memory between calls (the Gaussian process's last fit);
 * optional. One per study; not shared between threads. */
struct tuning_state;
struct tuning_state *tuning_state_new(void);
void tuning_state_free(struct tuning_state *state);

/*
 * Suggests up to n new points for study, given every trial so far (any
 * state, active ones included), into out[n * nparams]. Returns how many:
 * fewer than n, down to 0, only when the space has no untried point left
 * (a grid exhausted; a discrete space that Bayesian or random search has
 * covered): a point already tried or pending is never suggested again in
 * an all-discrete space, and the points of one call differ. -1 when
 * tuning_study_check() refuses the study. state may be NULL: a Bayesian
 * fit then starts cold; with a state it starts from the last fit, faster
 * (and may land on slightly different hyperparameters: the same calls
 * with the same states still give the same points).
 */
ssize_t tuning_suggest(const struct tuning_study *study, const struct tuning_trial *trials,
		       size_t ntrials, size_t n, double *out, struct tuning_state *state);

/* The fewest completed trials the median stopping rule compares with. */
#define TUNING_STOP_MIN_COMPLETED 3

/*
 * The median stopping rule (Vizier's median automated stopping): true when
 * trial, running, should stop: its best intermediate value is strictly
 * worse (per goal) than the median, over the COMPLETED trials, of each
 * one's running average of its intermediate values up to the step of
 * trial's last measurement; false while fewer than
 * TUNING_STOP_MIN_COMPLETED completed trials have a measurement by then,
 * or trial has none.
 */
bool tuning_should_stop(const struct tuning_study *study, const struct tuning_trial *trial,
			const struct tuning_trial *trials, size_t ntrials);

/*
 * Whether a study has failed because of its failed trials (FAILED and
 * INFEASIBLE count). max_failed > 0: once that many failed. max_failed 0,
 * "the service decides": when the first trial (lowest id) failed before
 * any trial completed; when failures reach max(3, max_trials / 2); or when
 * at least 3 failed and they are more than twice the completed ones.
 */
bool tuning_study_failed(const struct tuning_trial *trials, size_t ntrials, int64_t max_trials,
			 int64_t max_failed);

/*
 * Fills order[ntrials] with the indices of trials, best first: the trials
 * with an objective (COMPLETED, or STOPPED with a value) by it, per goal,
 * ties by id; then the rest by id.
 */
void tuning_order(const struct tuning_study *study, const struct tuning_trial *trials,
		  size_t ntrials, size_t *order);

/*
 * A value as Google's outputs write it: INTEGER as an integer ("4"),
 * DOUBLE and DISCRETE with 15 significant digits when they read back
 * exactly, 17 otherwise ("0.1", "0.072136064767837529"), CATEGORICAL as
 * its string. Returns the length snprintf would have written, or -1 for a
 * category index out of range.
 */
int tuning_format_value(const struct tuning_param *param, double value, char *buf, size_t len);
/* The trial's command-line flag: "--name=value"; the length, as snprintf
 * (or -1, as above). */
int tuning_format_flag(const struct tuning_param *param, double value, char *buf, size_t len);
/* The inverse of tuning_format_value(): text into a point's value; 0 or -1
 * (not a value of param: outside its range, not in its list). */
int tuning_parse_value(const struct tuning_param *param, const char *text, double *out) MUST_CHECK;

#endif
