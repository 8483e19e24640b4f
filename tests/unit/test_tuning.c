/* Unit tests: the study optimizer (scheduler/tuning.c, tuning_gp.c): grid,
 * random and Bayesian suggestions, the median stopping rule, the failure
 * rule, ordering and formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tuning.h"
#include "tuning_impl.h"

static const char *const cats[] = { "a", "b" };
static const double discrete[] = { 0.1, 0.5 };

static struct tuning_param integer(const char *name, double lo, double hi, enum tuning_scale scale)
{
	return (struct tuning_param){ .name = name, .type = TUNING_INTEGER, .scale = scale, .min = lo, .max = hi };
}

static struct tuning_param real(const char *name, double lo, double hi, enum tuning_scale scale)
{
	return (struct tuning_param){ .name = name, .type = TUNING_DOUBLE, .scale = scale, .min = lo, .max = hi };
}

static struct tuning_param categorical(const char *name, const char *const *v, size_t n)
{
	return (struct tuning_param){ .name = name, .type = TUNING_CATEGORICAL, .categories = v, .ncategories = n };
}

static struct tuning_param discrete_of(const char *name, const double *v, size_t n)
{
	return (struct tuning_param){ .name = name, .type = TUNING_DISCRETE, .values = v, .nvalues = n };
}

static struct tuning_trial trial(int64_t id, const double *values, enum tuning_trial_state state, double obj)
{
	return (struct tuning_trial){ .id = id, .values = values, .state = state, .objective = obj };
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median_of(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ------------------------------------------------------------------ grid */

static void grid_enumerates_in_odometer_order_and_ends(void **state)
{
	struct tuning_param p[] = { integer("n", 1, 3, TUNING_SCALE_LINEAR), categorical("c", cats, 2),
				    discrete_of("d", discrete, 2) };
	struct tuning_study s = { p, 3, TUNING_MAXIMIZE, TUNING_GRID, 1 };
	double out[20 * 3];
	struct tuning_trial t[12];
	(void)state;

	assert_int_equal(tuning_grid_size(&s), 12);
	/* The first parameter varies slowest, the last fastest. */
	assert_int_equal(tuning_suggest(&s, NULL, 0, 5, out, NULL), 5);
	const double first[5][3] = { { 1, 0, 0.1 }, { 1, 0, 0.5 }, { 1, 1, 0.1 }, { 1, 1, 0.5 }, { 2, 0, 0.1 } };
	for (int i = 0; i < 5; i++)
		assert_memory_equal(out + i * 3, first[i], sizeof(first[i]));

	/* Those five as trials in every state: the rest of the grid, once each,
	 * fewer than asked for; then nothing. */
	double taken[12 * 3];
	memcpy(taken, out, 5 * 3 * sizeof(double));
	enum tuning_trial_state states[] = { TUNING_TRIAL_COMPLETED, TUNING_TRIAL_ACTIVE, TUNING_TRIAL_FAILED,
					     TUNING_TRIAL_STOPPED, TUNING_TRIAL_INFEASIBLE };
	for (int i = 0; i < 5; i++)
		t[i] = trial(i + 1, taken + i * 3, states[i], 1);
	assert_int_equal(tuning_suggest(&s, t, 5, 20, out, NULL), 7);
	memcpy(taken + 5 * 3, out, 7 * 3 * sizeof(double));
	for (int i = 0; i < 12; i++) {
		for (int j = 0; j < i; j++)
			assert_memory_not_equal(taken + i * 3, taken + j * 3, 3 * sizeof(double));
	}
	const double last[3] = { 3, 1, 0.5 };
	assert_memory_equal(taken + 11 * 3, last, sizeof(last));
	for (int i = 5; i < 12; i++)
		t[i] = trial(i + 1, taken + i * 3, TUNING_TRIAL_COMPLETED, 1);
	assert_int_equal(tuning_suggest(&s, t, 12, 20, out, NULL), 0);
}

static void grid_skips_taken_points_anywhere(void **state)
{
	struct tuning_param p[] = { integer("n", 0, 9, TUNING_SCALE_LINEAR) };
	struct tuning_study s = { p, 1, TUNING_MINIMIZE, TUNING_GRID, 1 };
	double v[] = { 0, 3, 42 };	/* 42: off the grid (a trial from elsewhere) */
	struct tuning_trial t[] = { trial(1, &v[0], TUNING_TRIAL_ACTIVE, 0), trial(2, &v[1], TUNING_TRIAL_ACTIVE, 0),
				    trial(3, &v[2], TUNING_TRIAL_COMPLETED, 0) };
	double out[4];
	(void)state;

	assert_int_equal(tuning_suggest(&s, t, 3, 4, out, NULL), 4);
	const double want[] = { 1, 2, 4, 5 };
	assert_memory_equal(out, want, sizeof(want));
}

static void grid_size_saturates_and_grid_refuses_double(void **state)
{
	struct tuning_param p[] = { integer("a", 0, 1e12, TUNING_SCALE_LINEAR), integer("b", 0, 1e12, TUNING_SCALE_LINEAR),
				    real("c", 0, 1, TUNING_SCALE_LINEAR) };
	struct tuning_study s = { p, 2, TUNING_MAXIMIZE, TUNING_GRID, 1 };
	double out[2 * 3];
	char err[200];
	(void)state;

	assert_int_equal(tuning_grid_size(&s), UINT64_MAX);
	/* A huge grid still enumerates from its start. */
	assert_int_equal(tuning_suggest(&s, NULL, 0, 2, out, NULL), 2);
	const double want[] = { 0, 0, 0, 1 };
	assert_memory_equal(out, want, sizeof(want));
	s.nparams = 3;
	assert_int_equal(tuning_grid_size(&s), UINT64_MAX);
	assert_int_equal(tuning_study_check(&s, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "GRID_SEARCH"));
	assert_int_equal(tuning_suggest(&s, NULL, 0, 2, out, NULL), -1);
}

static void study_check_refuses_bad_specs(void **state)
{
	struct tuning_param p[] = { real("lr", 0, 1, TUNING_SCALE_LOG) };
	struct tuning_study s = { p, 1, TUNING_MAXIMIZE, TUNING_RANDOM, 1 };
	char err[200];
	enum tuning_scale scale;
	enum tuning_algorithm alg;
	enum tuning_goal goal;
	enum tuning_param_type type;
	(void)state;

	assert_int_equal(tuning_study_check(&s, err, sizeof(err)), -1);
	assert_string_equal(err, "parameter 'lr': UNIT_LOG_SCALE needs a strictly positive range");
	p[0].min = 1e-5;
	assert_int_equal(tuning_study_check(&s, err, sizeof(err)), 0);
	p[0] = integer("n", 1.5, 3, TUNING_SCALE_LINEAR);
	assert_int_equal(tuning_study_check(&s, err, sizeof(err)), -1);
	const double unsorted[] = { 1, 1 };
	p[0] = discrete_of("d", unsorted, 2);
	assert_int_equal(tuning_study_check(&s, err, sizeof(err)), -1);

	assert_int_equal(tuning_scale_parse("SCALE_TYPE_UNSPECIFIED", &scale), 0);
	assert_int_equal(scale, TUNING_SCALE_LINEAR);
	assert_int_equal(tuning_scale_parse("UNIT_REVERSE_LOG_SCALE", &scale), 0);
	assert_int_equal(scale, TUNING_SCALE_REVERSE_LOG);
	assert_int_equal(tuning_scale_parse("LOG", &scale), -1);
	assert_int_equal(tuning_algorithm_parse(NULL, &alg), 0);
	assert_int_equal(alg, TUNING_BAYESIAN);
	assert_int_equal(tuning_algorithm_parse("GRID_SEARCH", &alg), 0);
	assert_int_equal(alg, TUNING_GRID);
	assert_int_equal(tuning_goal_parse("GOAL_TYPE_UNSPECIFIED", &goal), 0);
	assert_int_equal(goal, TUNING_MAXIMIZE);
	assert_int_equal(tuning_goal_parse("MINIMIZE", &goal), 0);
	assert_int_equal(goal, TUNING_MINIMIZE);
	assert_int_equal(tuning_param_type_parse("DISCRETE", &type), 0);
	assert_int_equal(type, TUNING_DISCRETE);
	assert_int_equal(tuning_param_type_parse("PARAMETER_TYPE_UNSPECIFIED", &type), -1);
}

/* ------------------------------------------------------------------ random */

#define NSAMPLES 4001

/* NSAMPLES values of p from one call (beside a DOUBLE, so that the space
 * is not all discrete: values may repeat). */
static double *samples(struct tuning_param p, uint64_t seed)
{
	struct tuning_param ps[] = { p, real("other", 0, 1, TUNING_SCALE_LINEAR) };
	struct tuning_study s = { ps, 2, TUNING_MAXIMIZE, TUNING_RANDOM, seed };
	double *out = malloc(NSAMPLES * 2 * sizeof(double));
	assert_int_equal(tuning_suggest(&s, NULL, 0, NSAMPLES, out, NULL), NSAMPLES);
	for (size_t i = 0; i < NSAMPLES; i++) {
		out[i] = out[i * 2];
		assert_true(out[i] >= p.min && out[i] <= p.max);
	}
	return out;
}

static void random_follows_each_scale(void **state)
{
	(void)state;
	/* Linear: the median is the middle. */
	double *v = samples(real("x", 1e-4, 1, TUNING_SCALE_LINEAR), 7);
	double m = median_of(v, NSAMPLES);
	assert_true(m > 0.45 && m < 0.55);
	free(v);
	/* Log: the median is the geometric mean (1e-2), not the arithmetic. */
	v = samples(real("x", 1e-4, 1, TUNING_SCALE_LOG), 7);
	m = median_of(v, NSAMPLES);
	assert_true(m > 0.007 && m < 0.014);
	/* A quarter of the log range each: [1e-4, 1e-3) holds a quarter. */
	size_t low = 0;
	for (size_t i = 0; i < NSAMPLES; i++)
		low += v[i] < 1e-3;
	assert_true(low > NSAMPLES / 4 - 200 && low < NSAMPLES / 4 + 200);
	free(v);
	/* Reverse log: the mirror, dense near max: median 1 + 1e-4 - 1e-2. */
	v = samples(real("x", 1e-4, 1, TUNING_SCALE_REVERSE_LOG), 7);
	m = median_of(v, NSAMPLES);
	assert_true(m > 0.985 && m < 0.994);
	size_t high = 0;
	for (size_t i = 0; i < NSAMPLES; i++)
		high += v[i] > 1 + 1e-4 - 1e-3;
	assert_true(high > NSAMPLES / 4 - 200 && high < NSAMPLES / 4 + 200);
	free(v);
}

/* Vizier's own converter test (google/vizier
 * vizier/pyvizier/converters/core_test.py, test_double_into_double_reverse_log
 * and ..._log_inverse_noclipping): over [1e-4, 1e2], reverse log puts 1.0 at
 * 7.273945e-4, and log puts 0.5 at 0.1. */
static void scales_match_vizier(void **state)
{
	struct tuning_param r = real("x", 1e-4, 1e2, TUNING_SCALE_REVERSE_LOG);
	struct tuning_param l = real("x", 1e-4, 1e2, TUNING_SCALE_LOG);
	(void)state;

	assert_true(tuning_feature(&r, 1e-4) == 0);
	assert_true(fabs(tuning_feature(&r, 1.0) - 7.273945e-4) < 1e-9);
	assert_true(tuning_feature(&r, 1e2) == 1);
	assert_true(fabs(tuning_unfeature(&r, tuning_feature(&r, 1.0)) - 1.0) < 1e-12);
	assert_true(fabs(tuning_unfeature(&l, 0.5) - 0.1) < 1e-15);
	assert_true(fabs(tuning_feature(&l, 0.1) - 0.5) < 1e-15);
}

static void random_integers_are_uniform_with_their_endpoints(void **state)
{
	size_t count[6] = { 0 };
	(void)state;

	double *v = samples(integer("n", 1, 5, TUNING_SCALE_LINEAR), 11);
	for (size_t i = 0; i < NSAMPLES; i++) {
		assert_true(v[i] == floor(v[i]));
		count[(int)v[i]]++;
	}
	for (int k = 1; k <= 5; k++)	/* 800 expected; sd 25 */
		assert_true(count[k] > 700 && count[k] < 900);
	free(v);

	/* Log: both ends are reached, and the median is near sqrt(0.5 * 100.5). */
	v = samples(integer("n", 1, 100, TUNING_SCALE_LOG), 11);
	bool lo = false, hi = false;
	for (size_t i = 0; i < NSAMPLES; i++) {
		assert_true(v[i] == floor(v[i]));
		lo |= v[i] == 1;
		hi |= v[i] == 100;
	}
	assert_true(lo && hi);
	double m = median_of(v, NSAMPLES);
	assert_true(m >= 5 && m <= 10);
	free(v);
}

static void random_discrete_and_categorical_are_uniform(void **state)
{
	static const double vals[] = { 1, 10, 1000 };
	static const char *const c3[] = { "x", "y", "z" };
	struct tuning_param p[] = { discrete_of("d", vals, 3), categorical("c", c3, 3) };
	struct tuning_study s = { p, 2, TUNING_MAXIMIZE, TUNING_RANDOM, 3 };
	double *out = malloc(3000 * 2 * sizeof(double));
	size_t nd[3] = { 0 }, nc[3] = { 0 };
	(void)state;

	/* 3000 points over a 9-point space: repeats are allowed only once
	 * the space is full, so ask 9 at a time with no history. */
	for (int r = 0; r < 333; r++) {
		s.seed = 100 + (uint64_t)r;
		assert_int_equal(tuning_suggest(&s, NULL, 0, 9, out, NULL), 9);
		for (int i = 0; i < 9; i++) {
			nd[out[i * 2] == 1 ? 0 : out[i * 2] == 10 ? 1 : 2]++;
			nc[(int)out[i * 2 + 1]]++;
		}
	}
	for (int k = 0; k < 3; k++) {
		assert_int_equal(nd[k], 999);	/* the whole space each time */
		assert_int_equal(nc[k], 999);
	}
	/* One at a time with fresh seeds: about a third each. */
	memset(nd, 0, sizeof(nd));
	for (int r = 0; r < 3000; r++) {
		s.seed = 5000 + (uint64_t)r;
		assert_int_equal(tuning_suggest(&s, NULL, 0, 1, out, NULL), 1);
		nd[out[0] == 1 ? 0 : out[0] == 10 ? 1 : 2]++;
	}
	for (int k = 0; k < 3; k++)
		assert_true(nd[k] > 900 && nd[k] < 1100);
	free(out);
}

static void random_never_repeats_in_a_discrete_space(void **state)
{
	struct tuning_param p[] = { integer("n", 1, 3, TUNING_SCALE_LINEAR), categorical("c", cats, 2) };
	struct tuning_study s = { p, 2, TUNING_MAXIMIZE, TUNING_RANDOM, 9 };
	double out[10 * 2], taken[6 * 2];
	struct tuning_trial t[6];
	(void)state;

	assert_int_equal(tuning_suggest(&s, NULL, 0, 2, out, NULL), 2);
	memcpy(taken, out, sizeof(double) * 4);
	t[0] = trial(1, taken, TUNING_TRIAL_ACTIVE, 0);
	t[1] = trial(2, taken + 2, TUNING_TRIAL_FAILED, 0);
	assert_int_equal(tuning_suggest(&s, t, 2, 10, out, NULL), 4);
	memcpy(taken + 4, out, sizeof(double) * 8);
	for (int i = 0; i < 6; i++) {
		for (int j = 0; j < i; j++)
			assert_memory_not_equal(taken + i * 2, taken + j * 2, 2 * sizeof(double));
	}
	for (int i = 2; i < 6; i++)
		t[i] = trial(i + 1, taken + i * 2, TUNING_TRIAL_COMPLETED, 0);
	assert_int_equal(tuning_suggest(&s, t, 6, 1, out, NULL), 0);
}

static void random_finds_the_last_point_despite_repeated_trials(void **state)
{
	struct tuning_param p[] = { integer("n", 1, 1000, TUNING_SCALE_LINEAR) };
	struct tuning_study s = { p, 1, TUNING_MAXIMIZE, TUNING_RANDOM, 4 };
	double v[1002];
	struct tuning_trial t[1002];
	double out[2];
	(void)state;

	/* Every point but 500, and 7 and 9 twice (a resumed study, say). */
	size_t n = 0;
	for (int k = 1; k <= 1000; k++) {
		if (k != 500)
			v[n++] = k;
	}
	v[n++] = 7;
	v[n++] = 9;
	for (size_t i = 0; i < n; i++)
		t[i] = trial((int64_t)i + 1, &v[i], TUNING_TRIAL_COMPLETED, 0);
	assert_int_equal(tuning_suggest(&s, t, n, 2, out, NULL), 1);
	assert_true(out[0] == 500);
}

static void random_is_deterministic_given_the_seed(void **state)
{
	struct tuning_param p[] = { real("x", 0, 1, TUNING_SCALE_LINEAR), integer("n", 1, 1000, TUNING_SCALE_LOG) };
	struct tuning_study s = { p, 2, TUNING_MAXIMIZE, TUNING_RANDOM, 42 };
	double a[8], b[8];
	(void)state;

	assert_int_equal(tuning_suggest(&s, NULL, 0, 4, a, NULL), 4);
	assert_int_equal(tuning_suggest(&s, NULL, 0, 4, b, NULL), 4);
	assert_memory_equal(a, b, sizeof(a));
	s.seed = 43;
	assert_int_equal(tuning_suggest(&s, NULL, 0, 4, b, NULL), 4);
	assert_memory_not_equal(a, b, sizeof(a));
}

/* ------------------------------------------------------------------ Bayesian */

static double branin(const double *x)
{
	double b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
	double u = x[1] - b * x[0] * x[0] + c * x[0] - 6;
	return u * u + 10 * (1 - t) * cos(x[0]) + 10;
}

/* The best Branin value after n sequential trials of algorithm alg. */
static double branin_best(enum tuning_algorithm alg, uint64_t seed, size_t n)
{
	struct tuning_param p[] = { real("x1", -5, 10, TUNING_SCALE_LINEAR), real("x2", 0, 15, TUNING_SCALE_LINEAR) };
	struct tuning_study s = { p, 2, TUNING_MINIMIZE, alg, seed };
	struct tuning_trial *t = calloc(n, sizeof(*t));
	double *x = calloc(n * 2, sizeof(double)), best = INFINITY;
	struct tuning_state *st = tuning_state_new();

	for (size_t i = 0; i < n; i++) {
		assert_int_equal(tuning_suggest(&s, t, i, 1, x + i * 2, st), 1);
		double y = branin(x + i * 2);
		t[i] = trial((int64_t)i + 1, x + i * 2, TUNING_TRIAL_COMPLETED, y);
		best = y < best ? y : best;
	}
	tuning_state_free(st);
	free(t);
	free(x);
	return best;
}

static void bayesian_beats_random_on_branin(void **state)
{
	double bo[5], rs[5];
	(void)state;

	for (int k = 0; k < 5; k++) {
		bo[k] = branin_best(TUNING_BAYESIAN, 1 + (uint64_t)k, 25) - 0.397887;
		rs[k] = branin_best(TUNING_RANDOM, 1 + (uint64_t)k, 25) - 0.397887;
	}
	/* Median regrets after 25 trials over seeds 1-5, measured: Bayesian
	 * 0.23, random 0.92 (bench_tuning has the 20-seed figures). */
	double mb = median_of(bo, 5), mr = median_of(rs, 5);
	assert_true(mb < mr / 2);
	assert_true(mb < 0.3);
}

static void bayesian_batch_is_distinct_and_avoids_pending(void **state)
{
	struct tuning_param p[] = { real("x1", -5, 10, TUNING_SCALE_LINEAR), real("x2", 0, 15, TUNING_SCALE_LINEAR) };
	struct tuning_study s = { p, 2, TUNING_MINIMIZE, TUNING_BAYESIAN, 5 };
	double x[16 * 2], out[4 * 2];
	struct tuning_trial t[16];
	(void)state;

	assert_int_equal(tuning_suggest(&s, NULL, 0, 10, x, NULL), 10);
	for (int i = 0; i < 10; i++)
		t[i] = trial(i + 1, x + i * 2, TUNING_TRIAL_COMPLETED, branin(x + i * 2));
	/* Two pending, then a batch of four. */
	assert_int_equal(tuning_suggest(&s, t, 10, 2, x + 20, NULL), 2);
	t[10] = trial(11, x + 20, TUNING_TRIAL_ACTIVE, 0);
	t[11] = trial(12, x + 22, TUNING_TRIAL_ACTIVE, 0);
	assert_int_equal(tuning_suggest(&s, t, 12, 4, out, NULL), 4);
	/* Every point of the batch apart from each other and from the pending
	 * ones by more than 1% of the range (kriging believer). */
	for (int i = 0; i < 4; i++) {
		for (int j = 0; j < 2 + i; j++) {
			const double *o = j < 2 ? x + 20 + j * 2 : out + (j - 2) * 2;
			double dx = (out[i * 2] - o[0]) / 15, dy = (out[i * 2 + 1] - o[1]) / 15;
			assert_true(sqrt(dx * dx + dy * dy) > 0.01);
		}
		assert_true(out[i * 2] >= -5 && out[i * 2] <= 10 && out[i * 2 + 1] >= 0 && out[i * 2 + 1] <= 15);
	}
	/* The same call again: the same points. */
	double again[4 * 2];
	assert_int_equal(tuning_suggest(&s, t, 12, 4, again, NULL), 4);
	assert_memory_equal(out, again, sizeof(out));
}

static void bayesian_ignores_trials_outside_the_space(void **state)
{
	struct tuning_param p[] = { real("x", 0, 1, TUNING_SCALE_LINEAR), categorical("c", cats, 2) };
	struct tuning_study s = { p, 2, TUNING_MAXIMIZE, TUNING_BAYESIAN, 8 };
	double v[12 * 2];
	struct tuning_trial t[12];
	double out[2 * 2];
	(void)state;

	assert_int_equal(tuning_suggest(&s, NULL, 0, 10, v, NULL), 10);
	for (int i = 0; i < 10; i++)
		t[i] = trial(i + 1, v + i * 2, TUNING_TRIAL_COMPLETED, -fabs(v[i * 2] - 0.3));
	/* A NaN and a category that is not there (a caller's mistake). */
	v[20] = NAN, v[21] = 0, v[22] = 0.5, v[23] = 5;
	t[10] = trial(11, v + 20, TUNING_TRIAL_COMPLETED, 100);
	t[11] = trial(12, v + 22, TUNING_TRIAL_ACTIVE, 0);
	assert_int_equal(tuning_suggest(&s, t, 12, 2, out, NULL), 2);
	for (int i = 0; i < 2; i++) {
		assert_true(out[i * 2] >= 0 && out[i * 2] <= 1);
		assert_true(out[i * 2 + 1] == 0 || out[i * 2 + 1] == 1);
	}
	/* The model still works: the first point goes where the peak is. */
	assert_true(fabs(out[0] - 0.3) < 0.05);
}

static void bayesian_steers_clear_of_infeasible_regions(void **state)
{
	struct tuning_param p[] = { real("x", 0, 1, TUNING_SCALE_LINEAR), real("z", 0, 1, TUNING_SCALE_LINEAR) };
	struct tuning_study s = { p, 2, TUNING_MAXIMIZE, TUNING_BAYESIAN, 21 };
	double v[40 * 2];
	struct tuning_trial t[40];
	(void)state;

	/* The objective grows with x, but past x = 0.6 the trainer says the
	 * point is infeasible (it runs out of memory, say). */
	for (int i = 0; i < 40; i++) {
		double *x = v + i * 2;
		assert_int_equal(tuning_suggest(&s, t, (size_t)i, 1, x, NULL), 1);
		bool ok = x[0] <= 0.6;
		t[i] = trial(i + 1, x, ok ? TUNING_TRIAL_COMPLETED : TUNING_TRIAL_INFEASIBLE, x[0] - 0.1 * x[1]);
	}
	/* After the first 10, few suggestions go where nothing is feasible. */
	int wasted = 0;
	for (int i = 10; i < 40; i++)
		wasted += t[i].state == TUNING_TRIAL_INFEASIBLE;
	assert_true(wasted <= 6);
	/* And the best is found at the edge. */
	double best = -1;
	for (int i = 0; i < 40; i++)
		best = t[i].state == TUNING_TRIAL_COMPLETED && t[i].objective > best ? t[i].objective : best;
	assert_true(best > 0.57);
}

static void bayesian_survives_scattered_infeasible_trials(void **state)
{
	struct tuning_param p[] = { real("x", 0, 1, TUNING_SCALE_LINEAR), integer("n", 1, 8, TUNING_SCALE_LINEAR) };
	struct tuning_study rs = { p, 2, TUNING_MAXIMIZE, TUNING_RANDOM, 12 };
	struct tuning_study s = { p, 2, TUNING_MAXIMIZE, TUNING_BAYESIAN, 12 };
	enum { N = 200 };
	double v[(N + 1) * 2];
	struct tuning_trial t[N];
	(void)state;

	/* One trial in ten infeasible, anywhere: the fit reads them as noise,
	 * and EI's incumbent must be the model's best, not the noisy best
	 * value, or every improvement looks hopeless and EI goes to the
	 * corners. */
	assert_int_equal(tuning_suggest(&rs, NULL, 0, N, v, NULL), N);
	for (int i = 0; i < N; i++) {
		double y = -(v[i * 2] - 0.3) * (v[i * 2] - 0.3) - 0.05 * fabs(v[i * 2 + 1] - 5);
		t[i] = trial(i + 1, v + i * 2, i % 10 == 9 ? TUNING_TRIAL_INFEASIBLE : TUNING_TRIAL_COMPLETED, y);
	}
	assert_int_equal(tuning_suggest(&s, t, N, 1, v + N * 2, NULL), 1);
	assert_true(fabs(v[N * 2] - 0.3) < 0.1);
	assert_true(v[N * 2 + 1] >= 4 && v[N * 2 + 1] <= 6);
}

static void bayesian_conditions_on_a_subset_of_many_trials(void **state)
{
	struct tuning_param p[] = { real("x", 0, 1, TUNING_SCALE_LINEAR), integer("n", 1, 8, TUNING_SCALE_LINEAR) };
	struct tuning_study rs = { p, 2, TUNING_MAXIMIZE, TUNING_RANDOM, 12 };
	struct tuning_study s = { p, 2, TUNING_MAXIMIZE, TUNING_BAYESIAN, 12 };
	enum { N = 700 };	/* past GP_MAX (300) */
	double *v = malloc((N + 1) * 2 * sizeof(double));
	struct tuning_trial *t = malloc(N * sizeof(*t));
	(void)state;

	assert_int_equal(tuning_suggest(&rs, NULL, 0, N, v, NULL), N);
	for (int i = 0; i < N; i++) {
		double y = -(v[i * 2] - 0.3) * (v[i * 2] - 0.3) - 0.05 * fabs(v[i * 2 + 1] - 5);
		t[i] = trial(i + 1, v + i * 2, i % 10 == 9 ? TUNING_TRIAL_FAILED : TUNING_TRIAL_COMPLETED, y);
	}
	assert_int_equal(tuning_suggest(&s, t, N, 1, v + N * 2, NULL), 1);
	assert_true(fabs(v[N * 2] - 0.3) < 0.05);
	assert_true(v[N * 2 + 1] >= 4 && v[N * 2 + 1] <= 6);
	free(v);
	free(t);
}

static void bayesian_mixed_space_stays_feasible_and_covers_a_discrete_one(void **state)
{
	static const double units[] = { 16, 32, 64, 128 };
	struct tuning_param p[] = { real("lr", 1e-4, 1e-1, TUNING_SCALE_LOG), integer("layers", 1, 3, TUNING_SCALE_LINEAR),
				    discrete_of("units", units, 4), categorical("opt", cats, 2) };
	struct tuning_study s = { p, 4, TUNING_MAXIMIZE, TUNING_BAYESIAN, 3 };
	double x[30 * 4];
	struct tuning_trial t[30];
	(void)state;

	for (int i = 0; i < 30; i++) {
		double *v = x + i * 4;
		assert_int_equal(tuning_suggest(&s, t, (size_t)i, 1, v, NULL), 1);
		assert_true(v[0] >= 1e-4 && v[0] <= 1e-1);
		assert_true(v[1] == floor(v[1]) && v[1] >= 1 && v[1] <= 3);
		assert_true(v[2] == 16 || v[2] == 32 || v[2] == 64 || v[2] == 128);
		assert_true(v[3] == 0 || v[3] == 1);
		/* Best near lr 1e-2, 2 layers, 64 units, "b"; every fifth fails, every
		 * seventh is infeasible. */
		double y = -pow(log10(v[0]) + 2, 2) - fabs(v[1] - 2) - fabs(log2(v[2]) - 6) - (v[3] == 0);
		enum tuning_trial_state st = i % 5 == 4 ? TUNING_TRIAL_FAILED
					     : i % 7 == 6 ? TUNING_TRIAL_INFEASIBLE : TUNING_TRIAL_COMPLETED;
		t[i] = trial(i + 1, v, st, y);
	}

	/* All discrete: 3 x 4 x 2 = 24 points, each suggested once, then none. */
	struct tuning_study d = { p + 1, 3, TUNING_MAXIMIZE, TUNING_BAYESIAN, 3 };
	double y[25 * 3];
	for (int i = 0; i < 24; i++) {
		double *v = y + i * 3;
		assert_int_equal(tuning_suggest(&d, t, (size_t)i, 1, v, NULL), 1);
		for (int j = 0; j < i; j++)
			assert_memory_not_equal(v, y + j * 3, 3 * sizeof(double));
		t[i] = trial(i + 1, v, TUNING_TRIAL_COMPLETED, -fabs(v[0] - 2) - fabs(log2(v[1]) - 6) - v[2]);
	}
	assert_int_equal(tuning_suggest(&d, t, 24, 1, y + 24 * 3, NULL), 0);
}

/* ------------------------------------------------------------------ early stopping */

static void median_rule_stops_a_worse_trial(void **state)
{
	struct tuning_param p[] = { real("x", 0, 1, TUNING_SCALE_LINEAR) };
	struct tuning_study s = { p, 1, TUNING_MAXIMIZE, TUNING_BAYESIAN, 1 };
	double v = 0.5;
	/* Completed curves; their running averages at step 200: 0.2, 0.4, 0.6.
	 * The last measurements (step 300) are past step 200 and count not. */
	const struct tuning_measurement c1[] = { { 100, 0.1 }, { 200, 0.3 }, { 300, 0.9 } };
	const struct tuning_measurement c2[] = { { 100, 0.3 }, { 200, 0.5 }, { 300, 0.9 } };
	const struct tuning_measurement c3[] = { { 100, 0.5 }, { 200, 0.7 }, { 300, 0.9 } };
	struct tuning_trial t[4] = {
		{ 1, &v, TUNING_TRIAL_COMPLETED, 0.9, c1, 3 },
		{ 2, &v, TUNING_TRIAL_COMPLETED, 0.9, c2, 3 },
		{ 3, &v, TUNING_TRIAL_COMPLETED, 0.9, c3, 3 },
	};
	(void)state;

	/* Best so far 0.38 < median 0.4: stop. 0.4 (equal): go on. */
	const struct tuning_measurement r1[] = { { 200, 0.38 }, { 100, 0.2 } };
	t[3] = (struct tuning_trial){ 4, &v, TUNING_TRIAL_ACTIVE, 0, r1, 2 };
	assert_true(tuning_should_stop(&s, &t[3], t, 4));
	const struct tuning_measurement r2[] = { { 100, 0.2 }, { 200, 0.4 } };
	t[3].measurements = r2;
	assert_false(tuning_should_stop(&s, &t[3], t, 4));
	/* Had step 300 counted, the median would be 0.57 and 0.45 would stop. */
	const struct tuning_measurement r3[] = { { 100, 0.2 }, { 200, 0.45 } };
	t[3].measurements = r3;
	assert_false(tuning_should_stop(&s, &t[3], t, 4));
	/* Only two completed trials (median 0.5 above 0.38): never. */
	t[3].measurements = r1;
	t[0].state = TUNING_TRIAL_STOPPED;
	assert_false(tuning_should_stop(&s, &t[3], t, 4));
	t[0].state = TUNING_TRIAL_COMPLETED;
	/* No measurement yet: never. */
	t[3].nmeasurements = 0;
	assert_false(tuning_should_stop(&s, &t[3], t, 4));

	/* MINIMIZE: a loss whose best is above the median stops. */
	s.goal = TUNING_MINIMIZE;
	const struct tuning_measurement r4[] = { { 100, 0.9 }, { 200, 0.41 } };
	t[3] = (struct tuning_trial){ 4, &v, TUNING_TRIAL_ACTIVE, 0, r4, 2 };
	assert_true(tuning_should_stop(&s, &t[3], t, 4));
	const struct tuning_measurement r5[] = { { 100, 0.9 }, { 200, 0.39 } };
	t[3].measurements = r5;
	assert_false(tuning_should_stop(&s, &t[3], t, 4));
}

/* ------------------------------------------------------------------ failures */

static void failure_rule(void **state)
{
	double v = 0;
	struct tuning_trial t[8];
	(void)state;

	for (int i = 0; i < 8; i++)
		t[i] = trial(i + 1, &v, TUNING_TRIAL_COMPLETED, 1);
	/* maxFailedTrials given: exactly that many. */
	t[3].state = TUNING_TRIAL_FAILED;
	assert_false(tuning_study_failed(t, 8, 10, 2));
	t[5].state = TUNING_TRIAL_INFEASIBLE;
	assert_true(tuning_study_failed(t, 8, 10, 2));

	/* 0: the first trial failed before any completed. */
	for (int i = 0; i < 8; i++)
		t[i].state = TUNING_TRIAL_ACTIVE;
	t[0].state = TUNING_TRIAL_FAILED;
	assert_true(tuning_study_failed(t, 8, 10, 0));
	t[1].state = TUNING_TRIAL_COMPLETED;
	assert_false(tuning_study_failed(t, 8, 10, 0));
	/* 3 failed, 1 completed: more than twice as many. */
	t[2].state = TUNING_TRIAL_FAILED;
	t[3].state = TUNING_TRIAL_FAILED;
	assert_true(tuning_study_failed(t, 8, 100, 0));
	t[4].state = TUNING_TRIAL_COMPLETED;
	assert_false(tuning_study_failed(t, 8, 100, 0));
	/* max(3, maxTrials / 2) failures: 4 of maxTrials 8. */
	t[5].state = TUNING_TRIAL_FAILED;
	t[6].state = TUNING_TRIAL_COMPLETED;
	t[7].state = TUNING_TRIAL_COMPLETED;
	assert_false(tuning_study_failed(t, 8, 10, 0));
	assert_true(tuning_study_failed(t, 8, 8, 0));
	assert_false(tuning_study_failed(NULL, 0, 10, 0));
}

/* ------------------------------------------------------------------ order and format */

static void order_is_best_first_per_goal(void **state)
{
	struct tuning_param p[] = { real("x", 0, 1, TUNING_SCALE_LINEAR) };
	struct tuning_study s = { p, 1, TUNING_MAXIMIZE, TUNING_RANDOM, 1 };
	double v = 0;
	struct tuning_trial t[] = {
		trial(1, &v, TUNING_TRIAL_COMPLETED, 0.5), trial(2, &v, TUNING_TRIAL_FAILED, 0),
		trial(3, &v, TUNING_TRIAL_COMPLETED, 0.9), trial(4, &v, TUNING_TRIAL_STOPPED, 0.2),
		trial(5, &v, TUNING_TRIAL_COMPLETED, 0.5), trial(6, &v, TUNING_TRIAL_ACTIVE, 0),
		trial(7, &v, TUNING_TRIAL_STOPPED, NAN),
	};
	size_t order[7];
	(void)state;

	tuning_order(&s, t, 7, order);
	const size_t max[] = { 2, 0, 4, 3, 1, 5, 6 };	/* ids 3, 1, 5, 4, then 2, 6, 7 */
	assert_memory_equal(order, max, sizeof(max));
	s.goal = TUNING_MINIMIZE;
	tuning_order(&s, t, 7, order);
	const size_t min[] = { 3, 0, 4, 2, 1, 5, 6 };	/* ids 4, 1, 5, 3, then 2, 6, 7 */
	assert_memory_equal(order, min, sizeof(min));
}

static void values_format_as_google_writes_them(void **state)
{
	static const char *const hidden[] = { "256 128 64", "64,16" };
	struct tuning_param d = real("learning_rate", 0, 1, TUNING_SCALE_LINEAR);
	struct tuning_param n = integer("batch_size", 1, 1000, TUNING_SCALE_LINEAR);
	struct tuning_param c = categorical("hidden_units", hidden, 2);
	struct tuning_param k = discrete_of("d", discrete, 2);
	char buf[64];
	double x;
	(void)state;

	/* Google's captured outputs: 17 digits where 15 do not read back
	 * (shortest round trip would give 0.07213606476783753). */
	assert_int_equal(tuning_format_value(&d, 0.072136064767837529, buf, sizeof(buf)), 20);
	assert_string_equal(buf, "0.072136064767837529");
	tuning_format_value(&d, 0.27851938277724281, buf, sizeof(buf));
	assert_string_equal(buf, "0.27851938277724281");
	tuning_format_value(&d, 0.1, buf, sizeof(buf));
	assert_string_equal(buf, "0.1");
	tuning_format_value(&d, 1e-5, buf, sizeof(buf));
	assert_string_equal(buf, "1e-05");
	tuning_format_value(&n, 40, buf, sizeof(buf));
	assert_string_equal(buf, "40");
	tuning_format_value(&k, 0.5, buf, sizeof(buf));
	assert_string_equal(buf, "0.5");
	tuning_format_value(&c, 0, buf, sizeof(buf));
	assert_string_equal(buf, "256 128 64");
	assert_int_equal(tuning_format_value(&c, 2, buf, sizeof(buf)), -1);
	tuning_format_flag(&d, -0.5, buf, sizeof(buf));
	assert_string_equal(buf, "--learning_rate=-0.5");
	tuning_format_flag(&c, 1, buf, sizeof(buf));
	assert_string_equal(buf, "--hidden_units=64,16");
	tuning_format_flag(&n, 4, buf, sizeof(buf));
	assert_string_equal(buf, "--batch_size=4");

	/* Every double reads back exactly. */
	struct tuning_study s = { &d, 1, TUNING_MAXIMIZE, TUNING_RANDOM, 1 };
	double r[200];
	assert_int_equal(tuning_suggest(&s, NULL, 0, 200, r, NULL), 200);
	for (int i = 0; i < 200; i++) {
		tuning_format_value(&d, r[i], buf, sizeof(buf));
		assert_int_equal(tuning_parse_value(&d, buf, &x), 0);
		assert_true(x == r[i]);
	}
	assert_int_equal(tuning_parse_value(&c, "64,16", &x), 0);
	assert_true(x == 1);
	assert_int_equal(tuning_parse_value(&c, "64", &x), -1);
	assert_int_equal(tuning_parse_value(&n, "4", &x), 0);
	assert_true(x == 4);
	assert_int_equal(tuning_parse_value(&n, "4.5", &x), -1);
	assert_int_equal(tuning_parse_value(&n, "1001", &x), -1);
	assert_int_equal(tuning_parse_value(&k, "0.5", &x), 0);
	assert_int_equal(tuning_parse_value(&k, "0.3", &x), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(grid_enumerates_in_odometer_order_and_ends),
		cmocka_unit_test(grid_skips_taken_points_anywhere),
		cmocka_unit_test(grid_size_saturates_and_grid_refuses_double),
		cmocka_unit_test(study_check_refuses_bad_specs),
		cmocka_unit_test(random_follows_each_scale),
		cmocka_unit_test(scales_match_vizier),
		cmocka_unit_test(random_integers_are_uniform_with_their_endpoints),
		cmocka_unit_test(random_discrete_and_categorical_are_uniform),
		cmocka_unit_test(random_never_repeats_in_a_discrete_space),
		cmocka_unit_test(random_finds_the_last_point_despite_repeated_trials),
		cmocka_unit_test(random_is_deterministic_given_the_seed),
		cmocka_unit_test(bayesian_beats_random_on_branin),
		cmocka_unit_test(bayesian_batch_is_distinct_and_avoids_pending),
		cmocka_unit_test(bayesian_ignores_trials_outside_the_space),
		cmocka_unit_test(bayesian_steers_clear_of_infeasible_regions),
		cmocka_unit_test(bayesian_survives_scattered_infeasible_trials),
		cmocka_unit_test(bayesian_conditions_on_a_subset_of_many_trials),
		cmocka_unit_test(bayesian_mixed_space_stays_feasible_and_covers_a_discrete_one),
		cmocka_unit_test(median_rule_stops_a_worse_trial),
		cmocka_unit_test(failure_rule),
		cmocka_unit_test(order_is_best_first_per_goal),
		cmocka_unit_test(values_format_as_google_writes_them),
	};
	return cmocka_run_group_tests_name("tuning", tests, NULL, NULL);
}
