/*
 * tuning_impl.h - what tuning.c and tuning_gp.c share and nobody else
 * needs: the random generator, the map of a parameter onto [0, 1] (the
 * optimizer's "feature" space), random points, the test for a point
 * already taken.
 */
#ifndef TP_TUNING_IMPL_H
#define TP_TUNING_IMPL_H

#include "tuning.h"

/* xoshiro256** seeded through splitmix64: one stream per (seed, stream). */
struct tuning_rng {
	uint64_t s[4];
};

void tuning_rng_init(struct tuning_rng *r, uint64_t seed, uint64_t stream);
uint64_t tuning_rng_next(struct tuning_rng *r);
/* Uniform in [0, 1) (53 bits). */
double tuning_rng_unit(struct tuning_rng *r);
/* Uniform in 0..n-1, unbiased; n > 0. */
uint64_t tuning_rng_below(struct tuning_rng *r, uint64_t n);
/* Standard normal. */
double tuning_rng_normal(struct tuning_rng *r);

/* Streams of a study's seed: the random point of trial k (0-based, in
 * the order trials are suggested) comes from stream TUNING_STREAM_POINT + k,
 * so Bayesian's first random trials are random search's. */
#define TUNING_STREAM_POINT 0x1000000ULL
#define TUNING_STREAM_BAYES 0x2000000ULL

/*
 * A parameter's value as a feature in [0, 1] (its scale applied over its
 * range), and back, snapped to a feasible value: INTEGER rounded,
 * DISCRETE to the value nearest in feature space. CATEGORICAL features
 * are the category index itself (the kernel compares them for equality).
 */
double tuning_feature(const struct tuning_param *p, double value);
double tuning_unfeature(const struct tuning_param *p, double u);

/* A random value of p (random search's distribution). */
double tuning_random_value(const struct tuning_param *p, struct tuning_rng *r);

/* Whether every parameter is INTEGER, DISCRETE or CATEGORICAL. */
bool tuning_all_discrete(const struct tuning_study *study);

/* A set of points (nparams doubles each) compared exactly. */
struct tuning_points {
	size_t d, n, cap;
	double *v;
};

void tuning_points_add(struct tuning_points *s, const double *x);
bool tuning_points_has(const struct tuning_points *s, const double *x);
void tuning_points_free(struct tuning_points *s);

/*
 * A random point not in taken (when the space is all discrete; any random
 * point otherwise) into x, from r. false when an all-discrete space has no
 * untaken point left.
 */
bool tuning_random_untaken(const struct tuning_study *study, const struct tuning_points *taken,
			   struct tuning_rng *r, double *x);

/* Bayesian optimization's suggestions (tuning_gp.c); the arguments are
 * tuning_suggest()'s, the study checked. */
size_t tuning_gp_suggest(const struct tuning_study *study, const struct tuning_trial *trials,
			 size_t ntrials, size_t n, double *out, struct tuning_state *state);

#endif
