/*
 * tuning.c - the study optimizer's contract (tuning.h): enum names, study
 * checks, scales, the random generator, grid and random search, the median
 * stopping rule, the failure rule, ordering and formatting. Bayesian
 * optimization is tuning_gp.c. docs/tuning.md says why each choice.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuning.h"
#include "tuning_impl.h"

/* ------------------------------------------------------------------ names */

static bool empty(const char *s)
{
	return s == NULL || *s == '\0';
}

int tuning_param_type_parse(const char *name, enum tuning_param_type *out)
{
	static const struct {
		const char *name;
		enum tuning_param_type type;
	} names[] = { { "DOUBLE", TUNING_DOUBLE }, { "INTEGER", TUNING_INTEGER },
		      { "CATEGORICAL", TUNING_CATEGORICAL }, { "DISCRETE", TUNING_DISCRETE } };

	for (size_t i = 0; name && i < ARRAY_SIZE(names); i++) {
		if (strcmp(name, names[i].name) == 0) {
			*out = names[i].type;
			return 0;
		}
	}
	return -1;	/* PARAMETER_TYPE_UNSPECIFIED is an error in both APIs */
}

int tuning_scale_parse(const char *name, enum tuning_scale *out)
{
	if (empty(name) || strcmp(name, "NONE") == 0 || strcmp(name, "SCALE_TYPE_UNSPECIFIED") == 0 ||
	    strcmp(name, "UNIT_LINEAR_SCALE") == 0)
		*out = TUNING_SCALE_LINEAR;
	else if (strcmp(name, "UNIT_LOG_SCALE") == 0)
		*out = TUNING_SCALE_LOG;
	else if (strcmp(name, "UNIT_REVERSE_LOG_SCALE") == 0)
		*out = TUNING_SCALE_REVERSE_LOG;
	else
		return -1;
	return 0;
}

int tuning_goal_parse(const char *name, enum tuning_goal *out)
{
	if (empty(name) || strcmp(name, "GOAL_TYPE_UNSPECIFIED") == 0 || strcmp(name, "MAXIMIZE") == 0)
		*out = TUNING_MAXIMIZE;
	else if (strcmp(name, "MINIMIZE") == 0)
		*out = TUNING_MINIMIZE;
	else
		return -1;
	return 0;
}

int tuning_algorithm_parse(const char *name, enum tuning_algorithm *out)
{
	if (empty(name) || strcmp(name, "ALGORITHM_UNSPECIFIED") == 0)
		*out = TUNING_BAYESIAN;
	else if (strcmp(name, "GRID_SEARCH") == 0)
		*out = TUNING_GRID;
	else if (strcmp(name, "RANDOM_SEARCH") == 0)
		*out = TUNING_RANDOM;
	else
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ checks */

#define MAX_EXACT_INT 9007199254740992.0	/* 2^53 */

static const char *scale_name(enum tuning_scale s)
{
	return s == TUNING_SCALE_LOG ? "UNIT_LOG_SCALE" : "UNIT_REVERSE_LOG_SCALE";
}

static int param_check(const struct tuning_param *p, enum tuning_algorithm algorithm, char *err,
		       size_t errlen)
{
	const char *name = p->name ? p->name : "";
	double lo = p->min, hi = p->max;

	switch (p->type) {
	case TUNING_DOUBLE:
	case TUNING_INTEGER:
		if (!isfinite(lo) || !isfinite(hi) || lo > hi) {
			snprintf(err, errlen, "parameter '%s': needs finite minValue <= maxValue", name);
			return -1;
		}
		if (p->type == TUNING_INTEGER && (lo != floor(lo) || hi != floor(hi) ||
						  fabs(lo) > MAX_EXACT_INT || fabs(hi) > MAX_EXACT_INT)) {
			snprintf(err, errlen, "parameter '%s': INTEGER bounds must be integers", name);
			return -1;
		}
		if (p->type == TUNING_DOUBLE && algorithm == TUNING_GRID) {
			snprintf(err, errlen, "parameter '%s': GRID_SEARCH requires INTEGER, "
				 "CATEGORICAL or DISCRETE parameters", name);
			return -1;
		}
		break;
	case TUNING_DISCRETE:
		if (p->nvalues == 0 || p->values == NULL) {
			snprintf(err, errlen, "parameter '%s': DISCRETE needs values", name);
			return -1;
		}
		for (size_t i = 0; i < p->nvalues; i++) {
			if (!isfinite(p->values[i]) || (i > 0 && !(p->values[i] > p->values[i - 1]))) {
				snprintf(err, errlen, "parameter '%s': DISCRETE values must be finite and "
					 "strictly increasing", name);
				return -1;
			}
		}
		lo = p->values[0];
		hi = p->values[p->nvalues - 1];
		break;
	case TUNING_CATEGORICAL:
		if (p->ncategories == 0 || p->categories == NULL) {
			snprintf(err, errlen, "parameter '%s': CATEGORICAL needs values", name);
			return -1;
		}
		for (size_t i = 0; i < p->ncategories; i++) {
			for (size_t j = 0; j < i; j++) {
				if (p->categories[i] == NULL || strcmp(p->categories[i], p->categories[j]) == 0) {
					snprintf(err, errlen, "parameter '%s': CATEGORICAL values must be "
						 "distinct", name);
					return -1;
				}
			}
		}
		return 0;
	default:
		snprintf(err, errlen, "parameter '%s': unknown type", name);
		return -1;
	}
	if (p->scale != TUNING_SCALE_LINEAR && p->scale != TUNING_SCALE_LOG &&
	    p->scale != TUNING_SCALE_REVERSE_LOG) {
		snprintf(err, errlen, "parameter '%s': unknown scale type", name);
		return -1;
	}
	if (p->scale != TUNING_SCALE_LINEAR && !(lo > 0)) {
		snprintf(err, errlen, "parameter '%s': %s needs a strictly positive range", name,
			 scale_name(p->scale));
		return -1;
	}
	return 0;
}

int tuning_study_check(const struct tuning_study *study, char *err, size_t errlen)
{
	if (study->nparams == 0 || study->params == NULL) {
		snprintf(err, errlen, "the study has no parameters");
		return -1;
	}
	if (study->goal != TUNING_MAXIMIZE && study->goal != TUNING_MINIMIZE) {
		snprintf(err, errlen, "unknown goal");
		return -1;
	}
	if (study->algorithm != TUNING_BAYESIAN && study->algorithm != TUNING_GRID &&
	    study->algorithm != TUNING_RANDOM) {
		snprintf(err, errlen, "unknown algorithm");
		return -1;
	}
	for (size_t i = 0; i < study->nparams; i++) {
		const struct tuning_param *p = &study->params[i];
		if (param_check(p, study->algorithm, err, errlen) < 0)
			return -1;
		for (size_t j = 0; j < i; j++) {
			if (p->name && study->params[j].name && strcmp(p->name, study->params[j].name) == 0) {
				snprintf(err, errlen, "parameter '%s' is named twice", p->name);
				return -1;
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ rng */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void tuning_rng_init(struct tuning_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t a = seed, b = stream ^ 0x6a09e667f3bcc909ULL;
	uint64_t x = splitmix64(&a) ^ splitmix64(&b);
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t tuning_rng_next(struct tuning_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double tuning_rng_unit(struct tuning_rng *r)
{
	return (double)(tuning_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t tuning_rng_below(struct tuning_rng *r, uint64_t n)
{
	/* Rejection of the top partial block: every value equally likely. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;
	do
		x = tuning_rng_next(r);
	while (x >= limit);
	return x % n;
}

double tuning_rng_normal(struct tuning_rng *r)
{
	double u1 = 1.0 - tuning_rng_unit(r);	/* (0, 1] */
	double u2 = tuning_rng_unit(r);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* ------------------------------------------------------------------ scales */

static void param_range(const struct tuning_param *p, double *lo, double *hi)
{
	if (p->type == TUNING_DISCRETE) {
		*lo = p->values[0];
		*hi = p->values[p->nvalues - 1];
	} else {
		*lo = p->min;
		*hi = p->max;
	}
}

static double clamp(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

/* x in [lo, hi] onto [0, 1] by the scale. */
static double unit_of(enum tuning_scale s, double lo, double hi, double x)
{
	if (!(hi > lo))
		return 0.5;
	if (x <= lo || x >= hi)	/* the ends exactly (hi + lo - hi may not be lo) */
		return x <= lo ? 0.0 : 1.0;
	double u;
	switch (s) {
	case TUNING_SCALE_LOG:
		u = (log(x) - log(lo)) / (log(hi) - log(lo));
		break;
	case TUNING_SCALE_REVERSE_LOG:
		u = 1.0 - (log(hi + lo - x) - log(lo)) / (log(hi) - log(lo));
		break;
	default:
		u = (x - lo) / (hi - lo);
		break;
	}
	return clamp(u, 0.0, 1.0);
}

/* The inverse: u in [0, 1] onto [lo, hi]. */
static double value_of(enum tuning_scale s, double lo, double hi, double u)
{
	if (!(hi > lo))
		return lo;
	u = clamp(u, 0.0, 1.0);
	double x;
	switch (s) {
	case TUNING_SCALE_LOG:
		x = exp(log(lo) + u * (log(hi) - log(lo)));
		break;
	case TUNING_SCALE_REVERSE_LOG:
		x = hi + lo - exp(log(lo) + (1.0 - u) * (log(hi) - log(lo)));
		break;
	default:
		x = lo + u * (hi - lo);
		break;
	}
	return clamp(x, lo, hi);
}

double tuning_feature(const struct tuning_param *p, double value)
{
	double lo, hi;

	if (p->type == TUNING_CATEGORICAL)
		return value;
	param_range(p, &lo, &hi);
	return unit_of(p->scale, lo, hi, value);
}

/* The index of the DISCRETE value nearest to x in feature space. */
static size_t nearest_discrete(const struct tuning_param *p, double u)
{
	double x = tuning_unfeature(&(struct tuning_param){ .type = TUNING_DOUBLE, .scale = p->scale,
							      .min = p->values[0],
							      .max = p->values[p->nvalues - 1] }, u);
	size_t lo = 0, hi = p->nvalues;	/* first value >= x */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->values[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == p->nvalues)
		return p->nvalues - 1;
	if (lo == 0)
		return 0;
	double a = tuning_feature(p, p->values[lo - 1]), b = tuning_feature(p, p->values[lo]);
	return u - a <= b - u ? lo - 1 : lo;
}

double tuning_unfeature(const struct tuning_param *p, double u)
{
	switch (p->type) {
	case TUNING_CATEGORICAL:
		return clamp(round(u), 0, (double)p->ncategories - 1);
	case TUNING_DISCRETE:
		return p->values[nearest_discrete(p, u)];
	case TUNING_INTEGER:
		return clamp(round(value_of(p->scale, p->min, p->max, u)), p->min, p->max);
	default:
		return value_of(p->scale, p->min, p->max, u);
	}
}

double tuning_random_value(const struct tuning_param *p, struct tuning_rng *r)
{
	switch (p->type) {
	case TUNING_CATEGORICAL:
		return (double)tuning_rng_below(r, p->ncategories);
	case TUNING_DISCRETE:
		return p->values[tuning_rng_below(r, p->nvalues)];
	case TUNING_INTEGER:
		if (p->scale == TUNING_SCALE_LINEAR)
			return p->min + (double)tuning_rng_below(r, (uint64_t)(p->max - p->min) + 1);
		/* Each integer k takes the scaled mass of [k - 0.5, k + 0.5]: the
		 * endpoints are as likely as their neighbours' scale says. */
		return clamp(round(value_of(p->scale, p->min - 0.5, p->max + 0.5, tuning_rng_unit(r))),
			     p->min, p->max);
	default:
		return value_of(p->scale, p->min, p->max, tuning_rng_unit(r));
	}
}

bool tuning_all_discrete(const struct tuning_study *study)
{
	for (size_t i = 0; i < study->nparams; i++) {
		if (study->params[i].type == TUNING_DOUBLE)
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------ points */

void tuning_points_add(struct tuning_points *s, const double *x)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = xrealloc(s->v, s->cap * s->d * sizeof(double));
	}
	memcpy(s->v + s->n * s->d, x, s->d * sizeof(double));
	s->n++;
}

bool tuning_points_has(const struct tuning_points *s, const double *x)
{
	for (size_t i = 0; i < s->n; i++) {
		if (memcmp(s->v + i * s->d, x, s->d * sizeof(double)) == 0)
			return true;
	}
	return false;
}

void tuning_points_free(struct tuning_points *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

/* ------------------------------------------------------------------ grid */

static uint64_t radix(const struct tuning_param *p)
{
	switch (p->type) {
	case TUNING_INTEGER:
		return (uint64_t)(p->max - p->min) + 1;
	case TUNING_DISCRETE:
		return p->nvalues;
	case TUNING_CATEGORICAL:
		return p->ncategories;
	default:
		return UINT64_MAX;
	}
}

uint64_t tuning_grid_size(const struct tuning_study *study)
{
	uint64_t size = 1;
	for (size_t i = 0; i < study->nparams; i++) {
		if (__builtin_mul_overflow(size, radix(&study->params[i]), &size))
			return UINT64_MAX;
	}
	return size;
}

/* The point at grid index idx: the first parameter varies slowest. */
static void grid_point(const struct tuning_study *study, uint64_t idx, double *x)
{
	for (size_t i = study->nparams; i-- > 0;) {
		const struct tuning_param *p = &study->params[i];
		uint64_t r = radix(p), digit = idx % r;
		idx /= r;
		switch (p->type) {
		case TUNING_INTEGER:
			x[i] = p->min + (double)digit;
			break;
		case TUNING_DISCRETE:
			x[i] = p->values[digit];
			break;
		default:
			x[i] = (double)digit;
			break;
		}
	}
}

/* The grid index of x; false when x is off the grid or its index is past
 * UINT64_MAX (a point no enumeration reaches). */
static bool grid_index(const struct tuning_study *study, const double *x, uint64_t *idx)
{
	uint64_t acc = 0;
	for (size_t i = 0; i < study->nparams; i++) {
		const struct tuning_param *p = &study->params[i];
		uint64_t digit;
		double v = x[i];
		switch (p->type) {
		case TUNING_INTEGER:
		case TUNING_CATEGORICAL: {
			double lo = p->type == TUNING_INTEGER ? p->min : 0;
			double hi = p->type == TUNING_INTEGER ? p->max : (double)p->ncategories - 1;
			if (!(v >= lo && v <= hi) || v != floor(v))
				return false;
			digit = (uint64_t)(v - lo);
			break;
		}
		case TUNING_DISCRETE: {
			size_t k = 0;
			while (k < p->nvalues && p->values[k] != v)
				k++;
			if (k == p->nvalues)
				return false;
			digit = k;
			break;
		}
		default:
			return false;
		}
		if (__builtin_mul_overflow(acc, radix(p), &acc) || __builtin_add_overflow(acc, digit, &acc))
			return false;
	}
	*idx = acc;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The sorted grid indices of the points in taken, each once. */
static uint64_t *taken_indices(const struct tuning_study *study, const struct tuning_points *taken,
			       size_t *n)
{
	uint64_t *idx = xmalloc((taken->n + 1) * sizeof(*idx));
	size_t k = 0;
	for (size_t i = 0; i < taken->n; i++) {
		if (grid_index(study, taken->v + i * taken->d, &idx[k]))
			k++;
	}
	qsort(idx, k, sizeof(*idx), cmp_u64);
	size_t u = 0;	/* a point tried twice counts once */
	for (size_t i = 0; i < k; i++) {
		if (u == 0 || idx[u - 1] != idx[i])
			idx[u++] = idx[i];
	}
	*n = u;
	return idx;
}

static bool sorted_has(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] == x)
			return true;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static size_t grid_suggest(const struct tuning_study *study, const struct tuning_points *taken, size_t n,
			   double *out)
{
	uint64_t size = tuning_grid_size(study);
	size_t ntaken, count = 0;
	uint64_t *idx = taken_indices(study, taken, &ntaken);

	/* At most ntaken + n steps: each index skipped is a taken one. */
	for (uint64_t i = 0; i < size && count < n; i++) {
		if (!sorted_has(idx, ntaken, i))
			grid_point(study, i, out + count++ * study->nparams);
	}
	free(idx);
	return count;
}

/* ------------------------------------------------------------------ random */

/* Rejections before a nearly full discrete space is enumerated instead. */
#define RANDOM_TRIES 64

bool tuning_random_untaken(const struct tuning_study *study, const struct tuning_points *taken,
			   struct tuning_rng *r, double *x)
{
	bool discrete = tuning_all_discrete(study);

	for (int t = 0; t < RANDOM_TRIES; t++) {
		for (size_t i = 0; i < study->nparams; i++)
			x[i] = tuning_random_value(&study->params[i], r);
		if (!discrete || !tuning_points_has(taken, x))
			return true;
	}
	/* RANDOM_TRIES misses: most of the grid is taken, so it is small
	 * (at most a few times taken->n): pick among the untaken uniformly. */
	uint64_t size = tuning_grid_size(study);
	size_t ntaken;
	uint64_t *idx = taken_indices(study, taken, &ntaken);
	if (size <= ntaken) {
		free(idx);
		return false;
	}
	uint64_t k = tuning_rng_below(r, size - ntaken);
	for (uint64_t i = 0; i < size; i++) {
		if (sorted_has(idx, ntaken, i))
			continue;
		if (k-- == 0) {
			grid_point(study, i, x);
			break;
		}
	}
	free(idx);
	return true;
}

static size_t random_suggest(const struct tuning_study *study, size_t ntrials, struct tuning_points *taken,
			     size_t n, double *out)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++) {
		struct tuning_rng r;
		double *x = out + count * study->nparams;
		tuning_rng_init(&r, study->seed, TUNING_STREAM_POINT + ntrials + i);
		if (!tuning_random_untaken(study, taken, &r, x))
			break;
		tuning_points_add(taken, x);
		count++;
	}
	return count;
}

ssize_t tuning_suggest(const struct tuning_study *study, const struct tuning_trial *trials,
		       size_t ntrials, size_t n, double *out, struct tuning_state *state)
{
	char err[256];
	size_t count;

	if (tuning_study_check(study, err, sizeof(err)) < 0)
		return -1;
	if (n == 0)
		return 0;
	if (study->algorithm == TUNING_BAYESIAN)
		return (ssize_t)tuning_gp_suggest(study, trials, ntrials, n, out, state);

	struct tuning_points taken = { .d = study->nparams };
	for (size_t i = 0; i < ntrials; i++)
		tuning_points_add(&taken, trials[i].values);
	if (study->algorithm == TUNING_GRID)
		count = grid_suggest(study, &taken, n, out);
	else
		count = random_suggest(study, ntrials, &taken, n, out);
	tuning_points_free(&taken);
	return (ssize_t)count;
}

/* ------------------------------------------------------------------ early stopping */

static bool better(enum tuning_goal goal, double a, double b)
{
	return goal == TUNING_MINIMIZE ? a < b : a > b;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

bool tuning_should_stop(const struct tuning_study *study, const struct tuning_trial *trial,
			const struct tuning_trial *trials, size_t ntrials)
{
	if (trial->nmeasurements == 0)
		return false;
	int64_t step = trial->measurements[0].step;
	double best = trial->measurements[0].value;
	for (size_t i = 1; i < trial->nmeasurements; i++) {
		const struct tuning_measurement *m = &trial->measurements[i];
		if (m->step > step)
			step = m->step;
		if (better(study->goal, m->value, best))
			best = m->value;
	}

	double *avg = xmalloc((ntrials + 1) * sizeof(*avg));
	size_t n = 0;
	for (size_t i = 0; i < ntrials; i++) {
		const struct tuning_trial *t = &trials[i];
		double sum = 0;
		size_t k = 0;
		if (t->state != TUNING_TRIAL_COMPLETED || t == trial)
			continue;
		for (size_t j = 0; j < t->nmeasurements; j++) {
			if (t->measurements[j].step <= step) {
				sum += t->measurements[j].value;
				k++;
			}
		}
		if (k > 0)
			avg[n++] = sum / (double)k;
	}
	bool stop = false;
	if (n >= TUNING_STOP_MIN_COMPLETED) {
		qsort(avg, n, sizeof(*avg), cmp_double);
		double median = n % 2 ? avg[n / 2] : (avg[n / 2 - 1] + avg[n / 2]) / 2;
		stop = better(study->goal, median, best);
	}
	free(avg);
	return stop;
}

/* ------------------------------------------------------------------ failures */

static bool failed_state(enum tuning_trial_state s)
{
	return s == TUNING_TRIAL_FAILED || s == TUNING_TRIAL_INFEASIBLE;
}

bool tuning_study_failed(const struct tuning_trial *trials, size_t ntrials, int64_t max_trials,
			 int64_t max_failed)
{
	int64_t failed = 0, completed = 0;
	const struct tuning_trial *first = NULL;

	for (size_t i = 0; i < ntrials; i++) {
		if (failed_state(trials[i].state))
			failed++;
		else if (trials[i].state == TUNING_TRIAL_COMPLETED || trials[i].state == TUNING_TRIAL_STOPPED)
			completed++;
		if (first == NULL || trials[i].id < first->id)
			first = &trials[i];
	}
	if (max_failed > 0)
		return failed >= max_failed;
	if (first && failed_state(first->state) && completed == 0)
		return true;
	int64_t count_limit = max_trials / 2 > 3 ? max_trials / 2 : 3;
	if (failed >= count_limit)
		return true;
	return failed >= 3 && failed > 2 * completed;
}

/* ------------------------------------------------------------------ order */

struct order_ctx {
	const struct tuning_study *study;
	const struct tuning_trial *trials;
};

static bool has_objective(const struct tuning_trial *t)
{
	return (t->state == TUNING_TRIAL_COMPLETED || t->state == TUNING_TRIAL_STOPPED) &&
	       isfinite(t->objective);
}

static int cmp_trials(const void *a, const void *b, void *arg)
{
	const struct order_ctx *c = arg;
	const struct tuning_trial *x = &c->trials[*(const size_t *)a], *y = &c->trials[*(const size_t *)b];
	bool hx = has_objective(x), hy = has_objective(y);

	if (hx != hy)
		return hx ? -1 : 1;
	if (hx && x->objective != y->objective)
		return better(c->study->goal, x->objective, y->objective) ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

void tuning_order(const struct tuning_study *study, const struct tuning_trial *trials,
		  size_t ntrials, size_t *order)
{
	struct order_ctx c = { study, trials };
	for (size_t i = 0; i < ntrials; i++)
		order[i] = i;
	qsort_r(order, ntrials, sizeof(*order), cmp_trials, &c);
}

/* ------------------------------------------------------------------ format */

/* protobuf's SimpleDtoa: 15 significant digits when they read back to the
 * same double, else 17 (Google's captured outputs: "0.072136064767837529"). */
static int format_double(double v, char *buf, size_t len)
{
	char tmp[32];
	snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		snprintf(tmp, sizeof(tmp), "%.17g", v);
	return snprintf(buf, len, "%s", tmp);
}

int tuning_format_value(const struct tuning_param *param, double value, char *buf, size_t len)
{
	switch (param->type) {
	case TUNING_INTEGER:
		return snprintf(buf, len, "%" PRId64, (int64_t)llround(value));
	case TUNING_CATEGORICAL:
		if (!(value >= 0 && value < (double)param->ncategories))
			return -1;
		return snprintf(buf, len, "%s", param->categories[(size_t)value]);
	default:
		return format_double(value, buf, len);
	}
}

int tuning_format_flag(const struct tuning_param *param, double value, char *buf, size_t len)
{
	char val[32];
	const char *s = val;

	if (param->type == TUNING_CATEGORICAL) {
		if (!(value >= 0 && value < (double)param->ncategories))
			return -1;
		s = param->categories[(size_t)value];
	} else {
		tuning_format_value(param, value, val, sizeof(val));
	}
	return snprintf(buf, len, "--%s=%s", param->name, s);
}

int tuning_parse_value(const struct tuning_param *param, const char *text, double *out)
{
	char *end;

	if (param->type == TUNING_CATEGORICAL) {
		for (size_t i = 0; i < param->ncategories; i++) {
			if (strcmp(param->categories[i], text) == 0) {
				*out = (double)i;
				return 0;
			}
		}
		return -1;
	}
	if (empty(text))
		return -1;
	errno = 0;
	double v;
	if (param->type == TUNING_INTEGER) {
		long long k = strtoll(text, &end, 10);
		v = (double)k;
	} else {
		v = strtod(text, &end);
	}
	if (*end != '\0' || errno != 0 || !isfinite(v))
		return -1;
	if (param->type == TUNING_DISCRETE) {
		for (size_t i = 0; i < param->nvalues; i++) {
			if (param->values[i] == v) {
				*out = v;
				return 0;
			}
		}
		return -1;
	}
	if (v < param->min || v > param->max)
		return -1;
	*out = v;
	return 0;
}
