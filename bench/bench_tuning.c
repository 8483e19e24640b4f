/*
 * The study optimizer (scheduler/tuning.c, tuning_gp.c), issue 26's figures:
 *   - quality: the median simple regret after 30 trials over 20 seeds on
 *     Branin (2-D, min 0.397887) and Hartmann-6 (6-D, min -3.32237),
 *     Bayesian optimization against random search (the aim: at most 1/5
 *     of random's regret on both);
 *   - cost: the p99 time to suggest one trial with 200 completed trials
 *     (6 parameters), cold (no optimizer state) and warm (the state of the
 *     previous suggestion kept) (the aim: < 20 ms).
 * BENCH_TUNING_SEEDS and BENCH_TUNING_TRIALS change the first.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tuning.h"

#define MAX_D 6

static double branin(const double *x)
{
	double a = 1, b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, r = 6, s = 10, t = 1 / (8 * M_PI);
	double u = x[1] - b * x[0] * x[0] + c * x[0] - r;
	return a * u * u + s * (1 - t) * cos(x[0]) + s;
}

static double hartmann6(const double *x)
{
	static const double alpha[4] = { 1.0, 1.2, 3.0, 3.2 };
	static const double A[4][6] = { { 10, 3, 17, 3.5, 1.7, 8 }, { 0.05, 10, 17, 0.1, 8, 14 },
					{ 3, 3.5, 1.7, 10, 17, 8 }, { 17, 8, 0.05, 10, 0.1, 14 } };
	static const double P[4][6] = { { 1312, 1696, 5569, 124, 8283, 5886 },
					{ 2329, 4135, 8307, 3736, 1004, 9991 },
					{ 2348, 1451, 3522, 2883, 3047, 6650 },
					{ 4047, 8828, 8732, 5743, 1091, 381 } };
	double f = 0;
	for (int i = 0; i < 4; i++) {
		double s = 0;
		for (int j = 0; j < 6; j++)
			s += A[i][j] * (x[j] - P[i][j] * 1e-4) * (x[j] - P[i][j] * 1e-4);
		f -= alpha[i] * exp(-s);
	}
	return f;
}

struct problem {
	const char *name;
	size_t d;
	double lo[MAX_D], hi[MAX_D];
	double (*f)(const double *);
	double min;
};

static const struct problem problems[] = {
	{ "Branin", 2, { -5, 0 }, { 10, 15 }, branin, 0.397887 },
	{ "Hartmann-6", 6, { 0, 0, 0, 0, 0, 0 }, { 1, 1, 1, 1, 1, 1 }, hartmann6, -3.32237 },
};

static const char *const names[MAX_D] = { "x1", "x2", "x3", "x4", "x5", "x6" };

static void study_of(const struct problem *p, struct tuning_param *params, struct tuning_study *s,
		     enum tuning_algorithm alg, uint64_t seed)
{
	for (size_t j = 0; j < p->d; j++)
		params[j] = (struct tuning_param){ .name = names[j], .type = TUNING_DOUBLE,
						   .min = p->lo[j], .max = p->hi[j] };
	*s = (struct tuning_study){ params, p->d, TUNING_MINIMIZE, alg, seed };
}

/* The simple regret after ntrials sequential trials. */
static double run(const struct problem *p, enum tuning_algorithm alg, uint64_t seed, size_t ntrials)
{
	struct tuning_param params[MAX_D];
	struct tuning_study s;
	struct tuning_trial *trials = calloc(ntrials, sizeof(*trials));
	double *values = calloc(ntrials * p->d, sizeof(double));
	struct tuning_state *state = tuning_state_new();
	double best = INFINITY;

	study_of(p, params, &s, alg, seed);
	for (size_t i = 0; i < ntrials; i++) {
		double *x = values + i * p->d;
		if (tuning_suggest(&s, trials, i, 1, x, state) != 1) {
			fprintf(stderr, "bench_tuning: no suggestion\n");
			exit(1);
		}
		double y = p->f(x);
		trials[i] = (struct tuning_trial){ (int64_t)i + 1, x, TUNING_TRIAL_COMPLETED, y, NULL, 0 };
		best = y < best ? y : best;
	}
	tuning_state_free(state);
	free(trials);
	free(values);
	return best - p->min;
}

/* This thread's CPU time, in ms: the machines are shared, and a wall
 * clock counts the neighbours' work too. */
static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double quality(const struct problem *p, size_t seeds, size_t ntrials)
{
	double *bo = calloc(seeds, sizeof(double)), *rs = calloc(seeds, sizeof(double));
	for (size_t k = 0; k < seeds; k++) {
		bo[k] = run(p, TUNING_BAYESIAN, 1000 + k, ntrials);
		rs[k] = run(p, TUNING_RANDOM, 1000 + k, ntrials);
	}
	double mb = median(bo, seeds), mr = median(rs, seeds);
	printf("  tuning: %-10s median regret after %zu trials over %zu seeds: Bayesian %.4g, random %.4g: "
	       "ratio %.3f (goal <= 0.2)\n", p->name, ntrials, seeds, mb, mr, mb / mr);
	free(bo);
	free(rs);
	return mb / mr;
}

/* p99 of the time to suggest one trial after 200 completed ones on
 * Hartmann-6; warm: the state of the suggestion at 199 trials kept. */
static void cost(bool warm, size_t reps)
{
	const struct problem *p = &problems[1];
	const size_t n = 200;
	struct tuning_param params[MAX_D];
	struct tuning_study s;
	struct tuning_trial *trials = calloc(n, sizeof(*trials));
	double *values = calloc((n + 1) * p->d, sizeof(double));
	double *ms = calloc(reps, sizeof(double)), *cpu = calloc(reps, sizeof(double));
	struct tuning_study rs;

	for (size_t k = 0; k < reps; k++) {
		struct tuning_state *state = warm ? tuning_state_new() : NULL;
		study_of(p, params, &rs, TUNING_RANDOM, 7000 + k);
		if (tuning_suggest(&rs, NULL, 0, n, values, NULL) != (ssize_t)n)
			exit(1);
		for (size_t i = 0; i < n; i++)
			trials[i] = (struct tuning_trial){ (int64_t)i + 1, values + i * p->d, TUNING_TRIAL_COMPLETED,
							   p->f(values + i * p->d), NULL, 0 };
		study_of(p, params, &s, TUNING_BAYESIAN, 7000 + k);
		if (warm && tuning_suggest(&s, trials, n - 1, 1, values + n * p->d, state) != 1)
			exit(1);
		int64_t t0 = mono_usec();
		double c0 = cpu_ms();
		if (tuning_suggest(&s, trials, n, 1, values + n * p->d, state) != 1)
			exit(1);
		cpu[k] = cpu_ms() - c0;
		ms[k] = (double)(mono_usec() - t0) / 1000.0;
		tuning_state_free(state);
	}
	qsort(ms, reps, sizeof(double), cmp_double);
	qsort(cpu, reps, sizeof(double), cmp_double);
	size_t p99 = (size_t)ceil(0.99 * (double)reps) - 1;
	printf("  tuning: suggest 1 trial after %zu completed (6 parameters, %s): CPU p50 %.1f ms, p99 %.1f ms "
	       "(goal p99 < 20 ms); wall p50 %.1f ms, p99 %.1f ms; over %zu runs\n", n,
	       warm ? "warm state" : "cold, no state", cpu[reps / 2], cpu[p99], ms[reps / 2], ms[p99], reps);
	free(trials);
	free(values);
	free(ms);
	free(cpu);
}

int main(void)
{
	const char *e = getenv("BENCH_TUNING_SEEDS");
	size_t seeds = e ? strtoul(e, NULL, 10) : 20;
	e = getenv("BENCH_TUNING_TRIALS");
	size_t ntrials = e ? strtoul(e, NULL, 10) : 30;
	e = getenv("BENCH_TUNING_REPS");
	size_t reps = e ? strtoul(e, NULL, 10) : 100;

	for (size_t i = 0; i < sizeof(problems) / sizeof(problems[0]); i++)
		quality(&problems[i], seeds, ntrials);
	cost(false, reps);
	cost(true, reps);
	return 0;
}
