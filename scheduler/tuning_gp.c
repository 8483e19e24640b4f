/*
 * tuning_gp.c - Bayesian optimization (ALGORITHM_UNSPECIFIED): a Gaussian
 * process over the parameters' features in [0, 1], expected improvement
 * maximized by random and local candidates and a compass search.
 *
 * - Kernel: Matern 5/2 with one length scale per parameter (ARD), signal
 *   and noise variances; a CATEGORICAL parameter adds 1/l^2 to r^2 when the
 *   categories differ (the Euclidean distance of one-hot vectors scaled by
 *   1/sqrt(2): a valid kernel).
 * - Outputs: oriented to maximize, the worse half rank-warped onto a
 *   normal tail (Vizier's half-rank warping: an outlier of a heavy-tailed
 *   objective no longer flattens the good region), then standardized.
 *   INFEASIBLE trials take the worst warped value (a region that fails
 *   reads as bad; scattered ones read as noise); FAILED ones are left out
 *   (a lost node says nothing about the point); pending trials take the
 *   GP's mean ("kriging believer"), as does each point of a batch once
 *   chosen. EI's incumbent is the best posterior mean at the GP's points, believed
 *   ones included (the best noisy value would flatten EI on a noisy fit).
 * - Hyperparameters: MAP with log-normal priors, L-BFGS on the log
 *   marginal likelihood (analytic gradient): two starts cold on up to 40
 *   points, else one; one from the state's last fit warm; over at most FIT_MAX points (a random subset
 *   beyond). The GP conditions on at most GP_MAX points: the best half
 *   and a random half of the rest.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuning.h"
#include "tuning_impl.h"

#define FIT_MAX 64		/* points the hyperparameters are fitted on */
#define FIT_ITERS_COLD 30	/* L-BFGS iterations per start */
#define FIT_ITERS_WARM 10
#define LBFGS_M 6
/* Candidates for the acquisition, half random, half around the best
 * points: N_CAND up to CAND_FULL_N data points, then fewer in proportion
 * (a prediction costs n^2: the cost stays that of CAND_FULL_N points),
 * down to N_CAND_MIN. */
#define N_CAND 600
#define N_CAND_MIN 300
#define CAND_FULL_N 100
#define N_TOP 5			/* best points the local candidates start from */
#define N_REFINE 3		/* candidates refined by compass search */
#define REFINE_EVALS 90		/* per refined candidate, halved past CAND_FULL_N */
#define EI_XI 0.01		/* EI's margin, in standardized units */
#define BLOCK 16		/* points predicted at once */
#define GP_MAX 300		/* points the GP conditions on, believed ones aside */

struct tuning_state {
	size_t ntheta;
	double *theta;
};

struct tuning_state *tuning_state_new(void)
{
	return xcalloc(1, sizeof(struct tuning_state));
}

void tuning_state_free(struct tuning_state *state)
{
	if (state == NULL)
		return;
	free(state->theta);
	free(state);
}

/* ------------------------------------------------------------------ linear algebra */

/* The dot product of a and b, n long, in four running sums (which the
 * compiler may keep in vector registers: no reassociation is needed). */
static double dot(const double *a, const double *b, size_t n)
{
	double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		s0 += a[i] * b[i];
		s1 += a[i + 1] * b[i + 1];
		s2 += a[i + 2] * b[i + 2];
		s3 += a[i + 3] * b[i + 3];
	}
	for (; i < n; i++)
		s0 += a[i] * b[i];
	return (s0 + s2) + (s1 + s3);
}

/* In place: the lower Cholesky factor of the n x n matrix a (row major,
 * lower triangle read). -1 when a is not positive definite. */
static int cholesky(double *a, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		double *aj = a + j * n;
		double s = aj[j] - dot(aj, aj, j);
		if (!(s > 0))
			return -1;
		double d = sqrt(s);
		aj[j] = d;
		for (size_t i = j + 1; i < n; i++) {
			double *ai = a + i * n;
			ai[j] = (ai[j] - dot(ai, aj, j)) / d;
		}
	}
	return 0;
}

/* Solves L x = b (x may be b). */
static void solve_lower(const double *l, size_t n, const double *b, double *x)
{
	for (size_t i = 0; i < n; i++) {
		const double *li = l + i * n;
		x[i] = (b[i] - dot(li, x, i)) / li[i];
	}
}

/* Solves L^T x = b (x may be b). */
static void solve_upper_t(const double *l, size_t n, const double *b, double *x)
{
	for (size_t i = n; i-- > 0;) {
		double s = b[i];
		for (size_t k = i + 1; k < n; k++)
			s -= l[k * n + i] * x[k];
		x[i] = s / l[i * n + i];
	}
}

/* ------------------------------------------------------------------ the GP */

struct gp {
	size_t d;		/* features */
	const bool *cat;	/* d: categorical features */
	size_t n, cap;
	size_t nf;		/* the first nf points are factored (l, alpha) */
	double *x;		/* n x d */
	double *y;		/* n: standardized, fakes included */
	double *w;		/* d: 1 / length scale^2 */
	double sf2, sn2;
	double diag;		/* what the factored diagonal adds to sf2: sn2 and jitter */
	double *l;		/* n x n: Cholesky factor of K + sn2 I */
	double *alpha;		/* n: K^-1 y */
	double *kb;		/* BLOCK x n: scratch of gp_predict_block() */
	double *vb;		/* n x BLOCK */
};

static double r2_of(const double *a, const double *b, const double *w, const bool *cat, size_t d)
{
	double r2 = 0;
	for (size_t j = 0; j < d; j++) {
		double t = a[j] - b[j];
		r2 += cat[j] ? (t != 0 ? w[j] : 0) : w[j] * t * t;
	}
	return r2;
}

/* Matern 5/2 of r^2 over the signal variance: (1 + s + s^2/3) e^-s, s = sqrt(5 r^2). */
static double matern(double r2)
{
	double s = sqrt(5.0 * r2);
	return (1.0 + s + s * s / 3.0) * exp(-s);
}

static void gp_add(struct gp *g, const double *x, double y)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 64;
		g->x = xrealloc(g->x, g->cap * g->d * sizeof(double));
		g->y = xrealloc(g->y, g->cap * sizeof(double));
	}
	memcpy(g->x + g->n * g->d, x, g->d * sizeof(double));
	g->y[g->n++] = y;
}

/* Factors K + sn2 I with the current hyperparameters; jitter is added
 * until it factors. */
static void gp_factor(struct gp *g)
{
	size_t n = g->n;
	free(g->l);
	free(g->alpha);
	free(g->kb);
	free(g->vb);
	g->l = xmalloc(n * n * sizeof(double));
	g->alpha = xmalloc(n * sizeof(double));
	g->kb = xmalloc(BLOCK * n * sizeof(double));
	g->vb = xmalloc(BLOCK * n * sizeof(double));
	g->nf = n;
	for (double jitter = 1e-10;; jitter *= 10) {
		for (size_t i = 0; i < n; i++) {
			double *li = g->l + i * n;
			for (size_t k = 0; k < i; k++)
				li[k] = g->sf2 * matern(r2_of(g->x + i * g->d, g->x + k * g->d, g->w, g->cat, g->d));
			li[i] = g->sf2 + g->sn2 + jitter * g->sf2;
		}
		g->diag = g->sn2 + jitter * g->sf2;
		if (cholesky(g->l, n) == 0 || jitter > 1)
			break;
	}
	solve_lower(g->l, n, g->y, g->alpha);
	solve_upper_t(g->l, n, g->alpha, g->alpha);
}

/* target_clones makes an ifunc, whose resolver the dynamic loader runs
 * before ThreadSanitizer's runtime is up: an instrumented resolver crashes
 * the program at load (make test-tsan's server did). Without clones there. */
#if defined(__SANITIZE_THREAD__)
#define SOLVE_CLONES
#else
#define SOLVE_CLONES __attribute__((target_clones("avx2", "default")))
#endif

/*
 * Solves L V = V in place for a block of BLOCK right-hand sides (v: n x
 * BLOCK, the points innermost): each row takes the rows above it four at
 * a time, an update of BLOCK doubles that vectorizes (the same IEEE
 * operations in any lane, so the result does not depend on the CPU; the
 * AVX2 clone is only faster).
 */
SOLVE_CLONES
static void solve_block(const double *l, size_t n, double *restrict v)
{
	for (size_t i = 0; i < n; i++) {
		double *restrict vi = v + i * BLOCK;
		const double *li = l + i * n;
		size_t j = 0;
		for (; j + 4 <= i; j += 4) {
			const double *restrict v0 = v + j * BLOCK, *restrict v1 = v0 + BLOCK;
			const double *restrict v2 = v1 + BLOCK, *restrict v3 = v2 + BLOCK;
			double a0 = li[j], a1 = li[j + 1], a2 = li[j + 2], a3 = li[j + 3];
			for (size_t c = 0; c < BLOCK; c++)
				vi[c] -= (a0 * v0[c] + a1 * v1[c]) + (a2 * v2[c] + a3 * v3[c]);
		}
		for (; j < i; j++) {
			const double *restrict vj = v + j * BLOCK;
			double a = li[j];
			for (size_t c = 0; c < BLOCK; c++)
				vi[c] -= a * vj[c];
		}
		double inv = 1.0 / li[i];
		for (size_t c = 0; c < BLOCK; c++)
			vi[c] *= inv;
	}
}

/*
 * The posterior mean and standard deviation (of the latent function) at m
 * <= BLOCK points u (m x d). The variances' triangular solve runs over the
 * block at once, the points innermost: L V = K*^T row by row is a series
 * of axpys of BLOCK doubles, which vectorize.
 */
static void gp_predict_block(struct gp *g, const double *u, size_t m, double *mean, double *sd)
{
	size_t n = g->nf;
	double *kb = g->kb, *vb = g->vb;

	for (size_t c = 0; c < m; c++) {
		double *kc = kb + c * n;
		for (size_t i = 0; i < n; i++)
			kc[i] = g->sf2 * matern(r2_of(u + c * g->d, g->x + i * g->d, g->w, g->cat, g->d));
		mean[c] = dot(kc, g->alpha, n);
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t c = 0; c < BLOCK; c++)
			vb[i * BLOCK + c] = c < m ? kb[c * n + i] : 0;
	}
	solve_block(g->l, n, vb);
	for (size_t c = 0; c < m; c++)
		sd[c] = g->sf2;
	for (size_t i = 0; i < n; i++) {
		const double *vi = vb + i * BLOCK;
		for (size_t c = 0; c < m; c++)
			sd[c] -= vi[c] * vi[c];
	}
	for (size_t c = 0; c < m; c++)
		sd[c] = sqrt(sd[c] > 1e-12 * g->sf2 ? sd[c] : 1e-12 * g->sf2);
}

static double gp_mean(struct gp *g, const double *u)
{
	double mean, sd;
	gp_predict_block(g, u, 1, &mean, &sd);
	return mean;
}

static void gp_free(struct gp *g)
{
	free(g->x);
	free(g->y);
	free(g->w);
	free(g->l);
	free(g->alpha);
	free(g->kb);
	free(g->vb);
}

/* ------------------------------------------------------------------ the fit */

/* theta = (log l_1..l_d, log sf2, log sn2); the bounds and log-normal
 * priors (mean, sd) of each. */
#define LS_LO log(0.005)
#define LS_HI log(50.0)
#define LS_PRIOR_MEAN log(0.4)
#define LS_PRIOR_SD 1.0
#define SF_LO log(0.01)
#define SF_HI log(100.0)
#define SF_PRIOR_MEAN 0.0
#define SF_PRIOR_SD 1.5
#define SN_LO log(1e-6)
#define SN_HI log(1.0)
#define SN_PRIOR_MEAN log(1e-3)
#define SN_PRIOR_SD 3.0

struct fit {
	size_t n, d;
	const double *x;	/* n x d */
	const double *y;
	const bool *cat;
	double *k;		/* n x n scratch */
	double *kinv;		/* n x n */
	double *fac;		/* n x n: sf2 (5/3) (1 + s) e^-s of each pair */
	double *alpha;
	double *w;		/* d */
};

static void theta_bounds(size_t d, size_t p, double *lo, double *hi, double *mean, double *sd)
{
	if (p < d) {
		*lo = LS_LO, *hi = LS_HI, *mean = LS_PRIOR_MEAN, *sd = LS_PRIOR_SD;
	} else if (p == d) {
		*lo = SF_LO, *hi = SF_HI, *mean = SF_PRIOR_MEAN, *sd = SF_PRIOR_SD;
	} else {
		*lo = SN_LO, *hi = SN_HI, *mean = SN_PRIOR_MEAN, *sd = SN_PRIOR_SD;
	}
}

/* The negative log posterior of theta and its gradient; +inf when K does
 * not factor. */
static double fit_eval(struct fit *f, const double *theta, double *grad)
{
	size_t n = f->n, d = f->d;
	double *w = f->w;
	double sf2 = exp(theta[d]), sn2 = exp(theta[d + 1]);

	for (size_t j = 0; j < d; j++)
		w[j] = exp(-2.0 * theta[j]);
	for (size_t i = 0; i < n; i++) {
		double *ki = f->k + i * n;
		for (size_t k = 0; k < i; k++) {
			double r2 = r2_of(f->x + i * d, f->x + k * d, w, f->cat, d);
			double s = sqrt(5.0 * r2), e = exp(-s);
			ki[k] = sf2 * (1.0 + s + s * s / 3.0) * e;
			f->fac[i * n + k] = sf2 * (5.0 / 3.0) * (1.0 + s) * e;
			f->fac[k * n + i] = ki[k];	/* the upper triangle: K's signal part */
		}
		ki[i] = sf2 + sn2 + 1e-10 * sf2;
	}
	if (cholesky(f->k, n) < 0)
		return INFINITY;
	double nll = 0;
	for (size_t i = 0; i < n; i++)
		nll += log(f->k[i * n + i]);
	solve_lower(f->k, n, f->y, f->alpha);
	for (size_t i = 0; i < n; i++)
		nll += 0.5 * f->alpha[i] * f->alpha[i];
	solve_upper_t(f->k, n, f->alpha, f->alpha);

	/* K^-1 = L^-T L^-1. kinv's row c holds column c of L^-1 (rows c..n-1
	 * of it), so that K^-1_ik, the dot product of columns i and k of L^-1
	 * from row max(i, k) on, reads two rows. */
	double *lt = f->kinv;
	for (size_t c = 0; c < n; c++) {
		double *tc = lt + c * n;
		tc[c] = 1.0 / f->k[c * n + c];
		for (size_t i = c + 1; i < n; i++) {
			const double *li = f->k + i * n;
			double s = 0;
			for (size_t k = c; k < i; k++)
				s -= li[k] * tc[k];
			tc[i] = s / li[i];
		}
	}
	/* W = alpha alpha^T - K^-1, for i >= k. */
	for (size_t p = 0; p < d + 2; p++)
		grad[p] = 0;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k <= i; k++) {
			double kinv = dot(lt + i * n + i, lt + k * n + i, n - i);
			double wik = f->alpha[i] * f->alpha[k] - kinv;
			if (k == i) {
				grad[d] -= 0.5 * wik * sf2;
				grad[d + 1] -= 0.5 * wik * sn2;
				continue;
			}
			/* Off-diagonal pairs count twice (W and dK symmetric). */
			double g = wik * f->fac[i * n + k];
			const double *a = f->x + i * d, *b = f->x + k * d;
			for (size_t j = 0; j < d; j++) {
				double t = a[j] - b[j];
				double d2 = f->cat[j] ? (t != 0) : t * t;
				grad[j] -= g * w[j] * d2;
			}
			/* dK/dlog sf2 is K's signal part. */
			grad[d] -= wik * f->fac[k * n + i];
		}
	}
	for (size_t p = 0; p < d + 2; p++) {
		double lo, hi, mean, sd;
		theta_bounds(d, p, &lo, &hi, &mean, &sd);
		nll += 0.5 * (theta[p] - mean) * (theta[p] - mean) / (sd * sd);
		grad[p] += (theta[p] - mean) / (sd * sd);
	}
	return nll;
}

static void project(size_t d, double *theta)
{
	for (size_t p = 0; p < d + 2; p++) {
		double lo, hi, mean, sd;
		theta_bounds(d, p, &lo, &hi, &mean, &sd);
		theta[p] = theta[p] < lo ? lo : theta[p] > hi ? hi : theta[p];
	}
}

/* L-BFGS, projected onto the bounds, with a backtracking (Armijo) line
 * search. theta is the start and the result; returns its objective. */
static double lbfgs(struct fit *f, double *theta, int iters)
{
	size_t np = f->d + 2;
	double *g = xmalloc(np * sizeof(double)), *gn = xmalloc(np * sizeof(double));
	double *dir = xmalloc(np * sizeof(double)), *xn = xmalloc(np * sizeof(double));
	double *s = xcalloc(LBFGS_M * np, sizeof(double)), *yv = xcalloc(LBFGS_M * np, sizeof(double));
	double rho[LBFGS_M], a[LBFGS_M];
	int hist = 0, head = 0;

	project(f->d, theta);
	double fx = fit_eval(f, theta, g);
	for (int it = 0; it < iters && isfinite(fx); it++) {
		/* Two-loop recursion: dir = -H g. */
		for (size_t p = 0; p < np; p++)
			dir[p] = -g[p];
		for (int h = 0; h < hist; h++) {
			int k = (head - 1 - h + LBFGS_M) % LBFGS_M;
			a[k] = rho[k] * dot(s + k * np, dir, np);
			for (size_t p = 0; p < np; p++)
				dir[p] -= a[k] * yv[k * np + p];
		}
		if (hist > 0) {
			int k = (head - 1 + LBFGS_M) % LBFGS_M;
			double gamma = dot(s + k * np, yv + k * np, np) / dot(yv + k * np, yv + k * np, np);
			for (size_t p = 0; p < np; p++)
				dir[p] *= gamma;
		} else {
			double gmax = 0;
			for (size_t p = 0; p < np; p++)
				gmax = fabs(g[p]) > gmax ? fabs(g[p]) : gmax;
			for (size_t p = 0; p < np; p++)
				dir[p] *= gmax > 1 ? 1 / gmax : 1;
		}
		for (int h = hist - 1; h >= 0; h--) {
			int k = (head - 1 - h + LBFGS_M) % LBFGS_M;
			double b = rho[k] * dot(yv + k * np, dir, np);
			for (size_t p = 0; p < np; p++)
				dir[p] += (a[k] - b) * s[k * np + p];
		}
		if (dot(dir, g, np) >= 0) {
			for (size_t p = 0; p < np; p++)
				dir[p] = -g[p];
			hist = 0;
		}
		double step = 1, fn = INFINITY;
		bool moved = false;
		for (int ls = 0; ls < 12; ls++, step *= 0.5) {
			for (size_t p = 0; p < np; p++)
				xn[p] = theta[p] + step * dir[p];
			project(f->d, xn);
			double dec = 0;
			for (size_t p = 0; p < np; p++)
				dec += g[p] * (xn[p] - theta[p]);
			fn = fit_eval(f, xn, gn);
			if (isfinite(fn) && fn <= fx + 1e-4 * dec) {
				moved = true;
				break;
			}
		}
		if (!moved)
			break;
		int k = head;
		for (size_t p = 0; p < np; p++) {
			s[k * np + p] = xn[p] - theta[p];
			yv[k * np + p] = gn[p] - g[p];
		}
		double sy = dot(s + k * np, yv + k * np, np);
		if (sy > 1e-12) {
			rho[k] = 1 / sy;
			head = (head + 1) % LBFGS_M;
			hist = hist < LBFGS_M ? hist + 1 : LBFGS_M;
		}
		double change = fx - fn;
		memcpy(theta, xn, np * sizeof(double));
		memcpy(g, gn, np * sizeof(double));
		fx = fn;
		if (change < 1e-7 * (1 + fabs(fx)))
			break;
	}
	free(g);
	free(gn);
	free(dir);
	free(xn);
	free(s);
	free(yv);
	return fx;
}

/* Fits theta on (x, y), n points (a random subset of FIT_MAX beyond),
 * from the state's last fit when it has one. */
static void fit_hyper(const double *x, const double *y, size_t n, size_t d, const bool *cat,
		      struct tuning_rng *r, struct tuning_state *state, double *theta)
{
	size_t m = n < FIT_MAX ? n : FIT_MAX;
	size_t np = d + 2;
	double *sx = xmalloc(m * d * sizeof(double)), *sy = xmalloc(m * sizeof(double));
	size_t *pick = xmalloc(n * sizeof(size_t));

	for (size_t i = 0; i < n; i++)
		pick[i] = i;
	for (size_t i = 0; i < m && m < n; i++) {	/* a partial Fisher-Yates shuffle */
		size_t j = i + (size_t)tuning_rng_below(r, n - i);
		size_t t = pick[i];
		pick[i] = pick[j];
		pick[j] = t;
	}
	for (size_t i = 0; i < m; i++) {
		memcpy(sx + i * d, x + pick[i] * d, d * sizeof(double));
		sy[i] = y[pick[i]];
	}
	struct fit f = { m, d, sx, sy, cat, xmalloc(m * m * sizeof(double)), xmalloc(m * m * sizeof(double)),
			 xmalloc(m * m * sizeof(double)), xmalloc(m * sizeof(double)), xmalloc(d * sizeof(double)) };

	double *t = xmalloc(np * sizeof(double));
	double best = INFINITY;
	bool warm = state && state->ntheta == np;
	int starts = warm || m > 40 ? 1 : 2;	/* a second start where it is cheap */
	for (int s = 0; s < starts; s++) {
		if (warm) {
			memcpy(t, state->theta, np * sizeof(double));
		} else {
			for (size_t j = 0; j < d; j++)
				t[j] = log(s == 0 ? 0.3 : 1.0);
			t[d] = 0;
			t[d + 1] = log(s == 0 ? 1e-2 : 1e-4);
		}
		double v = lbfgs(&f, t, warm ? FIT_ITERS_WARM : FIT_ITERS_COLD);
		if (v < best || s == 0) {
			best = v;
			memcpy(theta, t, np * sizeof(double));
		}
	}
	if (state && isfinite(best)) {
		state->theta = xrealloc(state->theta, np * sizeof(double));
		memcpy(state->theta, theta, np * sizeof(double));
		state->ntheta = np;
	}
	free(t);
	free(sx);
	free(sy);
	free(pick);
	free(f.k);
	free(f.kinv);
	free(f.fac);
	free(f.alpha);
	free(f.w);
}

/* ------------------------------------------------------------------ outputs */

/* The standard normal quantile (Acklam's rational approximation, relative
 * error < 1.2e-9). */
static double norm_quantile(double p)
{
	static const double a[] = { -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
				    1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00 };
	static const double b[] = { -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
				    6.680131188771972e+01, -1.328068155288572e+01 };
	static const double c[] = { -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
				    -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00 };
	static const double e[] = { 7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
				    3.754408661907416e+00 };
	if (p < 0.02425) {
		double q = sqrt(-2 * log(p));
		return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		       ((((e[0] * q + e[1]) * q + e[2]) * q + e[3]) * q + 1);
	}
	if (p > 1 - 0.02425)
		return -norm_quantile(1 - p);
	double q = p - 0.5, r = q * q;
	return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
	       (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* y (to maximize) warped in place: the half below the median onto a
 * normal tail by rank, scaled by the better half's spread; then
 * standardized. */
static void warp_outputs(double *y, size_t n)
{
	double *sorted = xmalloc(n * sizeof(double));
	memcpy(sorted, y, n * sizeof(double));
	qsort(sorted, n, sizeof(double), cmp_double);
	double med = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	double ss = 0;
	size_t ngood = 0;
	for (size_t i = 0; i < n; i++) {
		if (y[i] >= med) {
			ss += (y[i] - med) * (y[i] - med);
			ngood++;
		}
	}
	double spread = ngood ? sqrt(ss / (double)ngood) : 0;
	if (spread > 0) {
		for (size_t i = 0; i < n; i++) {
			if (y[i] >= med)
				continue;
			size_t lo = 0, hi = n;	/* ties share their mean rank */
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				if (sorted[mid] < y[i])
					lo = mid + 1;
				else
					hi = mid;
			}
			size_t first = lo;
			while (lo < n && sorted[lo] == y[i])
				lo++;
			double rank = ((double)first + (double)(lo - 1)) / 2;
			double z = norm_quantile((rank + 0.5) / (double)n);
			y[i] = med + spread * (z < 0 ? z : 0);
		}
	}
	double mean = 0, var = 0;
	for (size_t i = 0; i < n; i++)
		mean += y[i];
	mean /= (double)n;
	for (size_t i = 0; i < n; i++)
		var += (y[i] - mean) * (y[i] - mean);
	double sd = n > 1 ? sqrt(var / (double)n) : 0;
	for (size_t i = 0; i < n; i++)
		y[i] = sd > 0 ? (y[i] - mean) / sd : y[i] - mean;
	free(sorted);
}

/* ------------------------------------------------------------------ acquisition */

/* log EI over best + EI_XI at m <= BLOCK points u, into out; the
 * asymptote far below it (z < -6), where EI underflows: sd phi(z) / z^2. */
static void log_ei_block(struct gp *g, const double *u, size_t m, double best, double *out)
{
	double mu[BLOCK], sd[BLOCK];

	gp_predict_block(g, u, m, mu, sd);
	for (size_t c = 0; c < m; c++) {
		double z = (mu[c] - best - EI_XI) / sd[c];
		out[c] = log(sd[c]) - 0.5 * z * z - 0.5 * log(2 * M_PI) - 2 * log(fabs(z));
		if (z > -6) {
			double cdf = 0.5 * erfc(-z / M_SQRT2);
			double pdf = exp(-0.5 * z * z) / sqrt(2 * M_PI);
			double ei = sd[c] * (z * cdf + pdf);
			if (ei > 0)
				out[c] = log(ei);
		}
	}
}

/* log EI of n points u (n x d), in blocks. */
static void log_ei_many(struct gp *g, const double *u, size_t n, double best, double *out)
{
	for (size_t i = 0; i < n; i += BLOCK)
		log_ei_block(g, u + i * g->d, n - i < BLOCK ? n - i : BLOCK, best, out + i);
}

/* A feature vector onto the feasible set (integers, discrete values,
 * categories), in place. */
static void snap(const struct tuning_study *study, double *u)
{
	for (size_t j = 0; j < study->nparams; j++) {
		const struct tuning_param *p = &study->params[j];
		if (p->type == TUNING_DOUBLE)
			u[j] = u[j] < 0 ? 0 : u[j] > 1 ? 1 : u[j];
		else
			u[j] = tuning_feature(p, tuning_unfeature(p, u[j]));
	}
}

/* The point (values) of a feature vector. */
static void to_values(const struct tuning_study *study, const double *u, double *x)
{
	for (size_t j = 0; j < study->nparams; j++)
		x[j] = tuning_unfeature(&study->params[j], u[j]);
}

/* The feature of the value next to u's (dir +1 or -1) of a discrete
 * parameter; u itself at an end. */
static double neighbour(const struct tuning_param *p, double u, int dir)
{
	double v = tuning_unfeature(p, u);
	switch (p->type) {
	case TUNING_INTEGER:
		v += dir;
		if (v < p->min || v > p->max)
			return u;
		return tuning_feature(p, v);
	case TUNING_DISCRETE:
		for (size_t i = 0; i < p->nvalues; i++) {
			if (p->values[i] == v) {
				if ((dir < 0 && i == 0) || (dir > 0 && i + 1 == p->nvalues))
					return u;
				return tuning_feature(p, p->values[dir < 0 ? i - 1 : i + 1]);
			}
		}
		return u;
	default:
		return u;
	}
}

/*
 * Compass search from u (snapped) on log EI: each round polls every
 * coordinate move (+-h, or the next value of a discrete parameter, or each
 * other category) at once and takes the best if it improves; h halves
 * when none does. u and *val improved in place.
 */
static void refine(const struct tuning_study *study, struct gp *g, double best, double *u, double *val)
{
	size_t d = study->nparams, cap = 2 * d;
	for (size_t j = 0; j < d; j++) {
		if (study->params[j].type == TUNING_CATEGORICAL)
			cap += study->params[j].ncategories;
	}
	double *poll = xmalloc(cap * d * sizeof(double)), *v = xmalloc(cap * sizeof(double));
	size_t evals = 0;

	size_t budget = g->nf > CAND_FULL_N ? REFINE_EVALS / 2 : REFINE_EVALS;
	for (double h = 0.1; h >= 0.004 && evals < budget;) {
		size_t np = 0;
		for (size_t j = 0; j < d; j++) {
			const struct tuning_param *p = &study->params[j];
			size_t moves = p->type == TUNING_CATEGORICAL ? p->ncategories : 2;
			for (size_t m = 0; m < moves; m++) {
				double *t = poll + np * d;
				memcpy(t, u, d * sizeof(double));
				if (p->type == TUNING_CATEGORICAL) {
					if ((double)m == u[j])
						continue;
					t[j] = (double)m;
				} else {
					int dir = m == 0 ? -1 : 1;
					t[j] = u[j] + dir * h;
					snap(study, t);
					if (t[j] == u[j])
						t[j] = neighbour(p, u[j], dir);
					if (t[j] == u[j])
						continue;
				}
				np++;
			}
		}
		if (np == 0)
			break;
		log_ei_many(g, poll, np, best, v);
		evals += np;
		size_t k = 0;
		for (size_t i = 1; i < np; i++)
			k = v[i] > v[k] ? i : k;
		if (v[k] > *val) {
			*val = v[k];
			memcpy(u, poll + k * d, d * sizeof(double));
		} else {
			h /= 2;
		}
	}
	free(poll);
	free(v);
}

struct cand {
	double val;
	size_t i;
};

static int cmp_cand(const void *a, const void *b)
{
	double x = ((const struct cand *)a)->val, y = ((const struct cand *)b)->val;
	return x > y ? -1 : x < y;
}

/* The untaken point of highest EI into x (values); false when every
 * candidate was taken. */
static bool maximize_ei(const struct tuning_study *study, struct gp *g, double best, size_t nreal,
			const struct tuning_points *taken, struct tuning_rng *r, double *x)
{
	size_t d = study->nparams, nc = N_CAND;
	if (g->nf > CAND_FULL_N)
		nc = N_CAND * CAND_FULL_N / g->nf > N_CAND_MIN ? N_CAND * CAND_FULL_N / g->nf : N_CAND_MIN;
	double *u = xmalloc((nc + N_REFINE) * d * sizeof(double));
	struct cand *c = xmalloc(nc * sizeof(*c));
	size_t top[N_TOP], ntop = 0;
	bool found = false;

	/* The best real observations, for the local candidates. */
	for (size_t i = 0; i < nreal; i++) {
		size_t k = ntop;
		if (ntop < N_TOP)
			ntop++;
		else if (g->y[i] <= g->y[top[N_TOP - 1]])
			continue;
		else
			k = N_TOP - 1;
		for (; k > 0 && g->y[i] > g->y[top[k - 1]]; k--)
			top[k] = top[k - 1];
		top[k] = i;
	}
	for (size_t i = 0; i < nc; i++) {
		double *ui = u + i * d;
		if (i < nc / 2 || ntop == 0) {
			for (size_t j = 0; j < d; j++) {
				const struct tuning_param *p = &study->params[j];
				ui[j] = p->type == TUNING_DOUBLE ? tuning_rng_unit(r)
								 : tuning_feature(p, tuning_random_value(p, r));
			}
		} else {
			const double *base = g->x + top[tuning_rng_below(r, ntop)] * d;
			static const double sds[] = { 0.01, 0.05, 0.15 };
			double sd = sds[tuning_rng_below(r, ARRAY_SIZE(sds))];
			for (size_t j = 0; j < d; j++) {
				const struct tuning_param *p = &study->params[j];
				if (p->type == TUNING_CATEGORICAL)
					ui[j] = tuning_rng_unit(r) < 0.2 ? (double)tuning_rng_below(r, p->ncategories)
									 : base[j];
				else
					ui[j] = base[j] + sd * tuning_rng_normal(r);
			}
		}
		snap(study, ui);
	}
	double *val = xmalloc(nc * sizeof(double));
	log_ei_many(g, u, nc, best, val);
	for (size_t i = 0; i < nc; i++)
		c[i] = (struct cand){ val[i], i };
	free(val);
	qsort(c, nc, sizeof(*c), cmp_cand);

	/* Refine the best few; the refined ones come first, then the rest by EI. */
	struct cand refined[N_REFINE];
	size_t nref = 0;
	for (size_t k = 0; k < nc && nref < N_REFINE; k++) {
		double *ur = u + (nc + nref) * d;
		memcpy(ur, u + c[k].i * d, d * sizeof(double));
		refined[nref] = (struct cand){ c[k].val, nc + nref };
		refine(study, g, best, ur, &refined[nref].val);
		nref++;
	}
	qsort(refined, nref, sizeof(*refined), cmp_cand);
	for (size_t k = 0; k < nref + nc && !found; k++) {
		const struct cand *ck = k < nref ? &refined[k] : &c[k - nref];
		to_values(study, u + ck->i * d, x);
		found = !tuning_points_has(taken, x);
	}
	free(u);
	free(c);
	return found;
}

/* ------------------------------------------------------------------ suggest */

/*
 * Past GP_MAX points the GP conditions on GP_MAX of them (a prediction
 * costs n^2, a factorization n^3): the GP_MAX / 2 best results, where the
 * next point is most likely, and a random GP_MAX / 2 of the others
 * (results and infeasible points alike), which keep the rest of the
 * space's shape. In place: the real results first, as before.
 */
static void gp_subset(struct gp *g, size_t *nreal, size_t *ninfeasible, struct tuning_rng *r)
{
	size_t n = g->n, d = g->d;
	if (n <= GP_MAX)
		return;
	struct cand *c = xmalloc(n * sizeof(*c));
	bool *keep = xcalloc(n, sizeof(bool));
	for (size_t i = 0; i < *nreal; i++)
		c[i] = (struct cand){ g->y[i], i };
	qsort(c, *nreal, sizeof(*c), cmp_cand);
	size_t kept = 0;
	for (size_t i = 0; i < *nreal && kept < GP_MAX / 2; i++, kept++)
		keep[c[i].i] = true;
	size_t *rest = xmalloc(n * sizeof(size_t)), nrest = 0;
	for (size_t i = 0; i < n; i++) {
		if (!keep[i])
			rest[nrest++] = i;
	}
	for (size_t i = 0; kept < GP_MAX && i < nrest; i++, kept++) {	/* partial Fisher-Yates */
		size_t j = i + (size_t)tuning_rng_below(r, nrest - i);
		size_t t = rest[i];
		rest[i] = rest[j];
		rest[j] = t;
		keep[rest[i]] = true;
	}
	size_t m = 0, mreal = 0;
	for (size_t i = 0; i < n; i++) {	/* order kept: real ones stay first */
		if (!keep[i])
			continue;
		memmove(g->x + m * d, g->x + i * d, d * sizeof(double));
		g->y[m++] = g->y[i];
		mreal += i < *nreal;
	}
	*ninfeasible = m - mreal;
	*nreal = mreal;
	g->n = m;
	free(c);
	free(keep);
	free(rest);
}

/* Whether a trial's point is one of the study's (a caller's mistake, or a
 * study whose parameters changed, must not reach the GP as a NaN). */
static bool feasible(const struct tuning_study *study, const double *x)
{
	for (size_t j = 0; j < study->nparams; j++) {
		const struct tuning_param *p = &study->params[j];
		double lo = p->type == TUNING_DISCRETE ? p->values[0] : p->type == TUNING_CATEGORICAL ? 0 : p->min;
		double hi = p->type == TUNING_DISCRETE	  ? p->values[p->nvalues - 1]
			    : p->type == TUNING_CATEGORICAL ? (double)p->ncategories - 1
							    : p->max;
		if (!(x[j] >= lo && x[j] <= hi))
			return false;
	}
	return true;
}

static double oriented(const struct tuning_study *study, double v)
{
	return study->goal == TUNING_MINIMIZE ? -v : v;
}

size_t tuning_gp_suggest(const struct tuning_study *study, const struct tuning_trial *trials,
			 size_t ntrials, size_t n, double *out, struct tuning_state *state)
{
	size_t d = study->nparams;
	size_t ninit = d + 1 > 2 ? d + 1 : 2;
	struct tuning_points taken = { .d = d };
	bool *cat = xmalloc(d * sizeof(bool));
	double *u = xmalloc(d * sizeof(double));
	struct gp g = { .d = d, .cat = cat };
	size_t nreal = 0, ninfeasible = 0, count = 0;
	bool ready = false;
	struct tuning_rng r;

	for (size_t j = 0; j < d; j++)
		cat[j] = study->params[j].type == TUNING_CATEGORICAL;
	for (size_t i = 0; i < ntrials; i++)
		tuning_points_add(&taken, trials[i].values);
	/* Real observations first (g.x[0..nreal)), then infeasible ones. */
	for (size_t pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ntrials; i++) {
			const struct tuning_trial *t = &trials[i];
			bool real = (t->state == TUNING_TRIAL_COMPLETED || t->state == TUNING_TRIAL_STOPPED) &&
				    isfinite(t->objective);
			bool infeasible = t->state == TUNING_TRIAL_INFEASIBLE ||
					  (t->state == TUNING_TRIAL_COMPLETED && !isfinite(t->objective));
			if ((pass == 0 ? !real : !infeasible) || !feasible(study, t->values))
				continue;
			for (size_t j = 0; j < d; j++)
				u[j] = tuning_feature(&study->params[j], t->values[j]);
			gp_add(&g, u, pass == 0 ? oriented(study, t->objective) : 0);
			if (pass == 0)
				nreal++;
			else
				ninfeasible++;
		}
	}
	tuning_rng_init(&r, study->seed, TUNING_STREAM_BAYES + ntrials);

	for (size_t b = 0; b < n; b++) {
		double *x = out + count * d;
		size_t k = ntrials + b;
		if (k < ninit || nreal < 2) {
			struct tuning_rng pr;
			tuning_rng_init(&pr, study->seed, TUNING_STREAM_POINT + k);
			if (!tuning_random_untaken(study, &taken, &pr, x))
				break;
		} else {
			if (!ready) {
				warp_outputs(g.y, nreal);
				double worst = INFINITY;
				for (size_t i = 0; i < nreal; i++)
					worst = g.y[i] < worst ? g.y[i] : worst;
				for (size_t i = nreal; i < nreal + ninfeasible; i++)
					g.y[i] = worst;
				gp_subset(&g, &nreal, &ninfeasible, &r);
				double *theta = xmalloc((d + 2) * sizeof(double));
				fit_hyper(g.x, g.y, g.n, d, cat, &r, state, theta);
				g.w = xmalloc(d * sizeof(double));
				for (size_t j = 0; j < d; j++)
					g.w[j] = exp(-2.0 * theta[j]);
				g.sf2 = exp(theta[d]);
				g.sn2 = exp(theta[d + 1]);
				free(theta);
				gp_factor(&g);
				/* Pending trials and this batch's points so far: the GP's
				 * mean as their value. */
				size_t before = g.n;
				for (size_t i = 0; i < ntrials; i++) {
					if (trials[i].state != TUNING_TRIAL_ACTIVE || !feasible(study, trials[i].values))
						continue;
					for (size_t j = 0; j < d; j++)
						u[j] = tuning_feature(&study->params[j], trials[i].values[j]);
					gp_add(&g, u, gp_mean(&g, u));
				}
				for (size_t i = 0; i < count; i++) {	/* this batch's random ones */
					for (size_t j = 0; j < d; j++)
						u[j] = tuning_feature(&study->params[j], out[i * d + j]);
					gp_add(&g, u, gp_mean(&g, u));
				}
				if (g.n != before)
					gp_factor(&g);
				ready = true;
			}
			/* The incumbent: the best posterior mean at the points the
			 * GP holds, y_i - diag alpha_i (the noisy best value would
			 * flatten EI once the fit finds noise), believed points
			 * included (a pending point believed better than every
			 * result would keep EI up around itself, and a batch would
			 * cluster there). */
			double best = -INFINITY;
			for (size_t i = 0; i < g.n; i++) {
				double mu = g.y[i] - g.diag * g.alpha[i];
				best = mu > best ? mu : best;
			}
			if (!maximize_ei(study, &g, best, nreal, &taken, &r, x)) {
				struct tuning_rng pr;
				tuning_rng_init(&pr, study->seed, TUNING_STREAM_POINT + k);
				if (!tuning_random_untaken(study, &taken, &pr, x))
					break;
			}
			if (b + 1 < n) {	/* kriging believer for the rest of the batch */
				for (size_t j = 0; j < d; j++)
					u[j] = tuning_feature(&study->params[j], x[j]);
				gp_add(&g, u, gp_mean(&g, u));
				gp_factor(&g);
			}
		}
		tuning_points_add(&taken, x);
		count++;
	}
	gp_free(&g);
	free(cat);
	free(u);
	tuning_points_free(&taken);
	return count;
}
