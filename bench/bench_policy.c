/*
 * The policy's share of a scheduling pass (scheduler/policy.c) at issue
 * 28's size: 10,000 nodes of 8 T4s in one region, 60,000 1-GPU jobs of 50
 * projects running on them (one in five SPOT), quotas with a limit and a
 * weight for every project, and a queue of 1-GPU jobs and 8-GPU gangs of
 * the same projects. Measured, the median of 3 passes each:
 *   - a pass over 2,000 queued jobs (what the scheduler takes a pass) and
 *     over all 100,000, with quotas and fair share, against placement alone
 *     (place_cluster_queue: FIFO with backfill) over the same jobs in the
 *     same run;
 *   - a full cluster of SPOT jobs and 100 STANDARD 8-GPU jobs queued: each
 *     needs a victim set (preemption's worst case in one pass).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "placement.h"
#include "policy.h"

#define NODES 10000
#define GPUS 8
#define PROJECTS 50
#define RUNNING 60000
#define RUNS 3

static const char *const zones[] = { "us-central1-a", "us-central1-b", "us-central1-c",
				     "us-central1-f" };
static char project_names[PROJECTS][16];
static const struct place_replica g1 = { 4, 15 * 1024, "NVIDIA_TESLA_T4", 1, false };
static const struct place_replica g8 = { 32, 120 * 1024, "NVIDIA_TESLA_T4", 8, false };
static const bool on_node[1] = { true };

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The cluster with nrun 1-GPU jobs on it (each project's in turn). */
static void build(struct place_node *nodes, struct policy_running *run, struct place_assignment *as,
		  size_t nrun, int spot_every)
{
	for (size_t i = 0; i < NODES; i++)
		nodes[i] = (struct place_node){ "node", "us-central1", zones[i % 4], "NVIDIA_TESLA_T4",
						GPUS, false, true, 96, 360 * 1024,
						(UINT64_C(1) << GPUS) - 1, false, 96, 360 * 1024 };
	for (size_t k = 0; k < nrun; k++) {
		size_t n = k % NODES;
		uint64_t bit = nodes[n].free_gpus & -nodes[n].free_gpus;
		nodes[n].free_gpus &= ~bit;
		nodes[n].free_vcpus -= g1.vcpus;
		nodes[n].free_memory_mb -= g1.memory_mb;
		as[k] = (struct place_assignment){ n, bit };
		bool spot = spot_every && k % (size_t)spot_every == 0;
		run[k] = (struct policy_running){ (int64_t)k + 1, project_names[k % PROJECTS], "us-central1",
						  0, spot, spot ? QUOTA_PREEMPTIBLE : QUOTA_STANDARD, false,
						  (int64_t)k, 1, &g1, &as[k], on_node };
	}
}

static void queue(struct policy_job *jobs, struct place_job *plain, size_t *offsets, size_t n,
		  const struct place_replica *gang8, bool all_big)
{
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		bool big = all_big || i % 50 == 49;
		const struct place_replica *reps = big ? gang8 : &g1;
		size_t nr = big ? 2 : 1;
		jobs[i] = (struct policy_job){ .pj = { (int64_t)(1000000 + i), "us-central1", nr, reps },
					       .project = project_names[(i * 7) % PROJECTS], .name = "j",
					       .qclass = QUOTA_STANDARD };
		quota_amounts_add(&jobs[i].demand, QUOTA_CPUS, (int64_t)nr * reps[0].vcpus);
		quota_amounts_add(&jobs[i].demand, "NVIDIA_TESLA_T4", (int64_t)nr * reps[0].accel_count);
		plain[i] = jobs[i].pj;
		offsets[i] = off;
		off += nr;
	}
}

/* The median of RUNS passes: the policy (plain false) or placement alone. */
static bool preemption = true;

static int64_t measure(bool plain, size_t njobs, int spot_every, const struct quotas *q,
		       size_t *placed, size_t *victims)
{
	struct place_node *nodes = calloc(NODES, sizeof(*nodes));
	struct policy_running *run = calloc(NODES * GPUS, sizeof(*run));
	struct place_assignment *held = calloc(NODES * GPUS, sizeof(*held));
	struct policy_job *jobs = calloc(njobs, sizeof(*jobs));
	struct place_job *pj = calloc(njobs, sizeof(*pj));
	size_t *offsets = calloc(njobs, sizeof(*offsets));
	struct place_assignment *out = calloc(2 * njobs, sizeof(*out));
	struct policy_outcome *o = calloc(njobs, sizeof(*o));
	int64_t *waited = calloc(njobs, sizeof(*waited));
	bool *ok = calloc(njobs, sizeof(*ok));
	struct place_replica gang8[2] = { g8, g8 };
	int64_t t[RUNS];

	queue(jobs, pj, offsets, njobs, gang8, spot_every < 0);
	size_t nrun = spot_every < 0 ? NODES * GPUS : RUNNING;	/* (< 0: a full cluster, all SPOT) */
	for (int r = 0; r < RUNS; r++) {
		build(nodes, run, held, nrun, spot_every < 0 ? 1 : spot_every);
		struct policy_config cfg = { q, INT64_MAX, preemption };
		struct policy_victim *v = NULL;
		size_t nv = 0;
		int64_t t0 = now_us();
		if (plain) {
			struct place_cluster *cl = place_cluster_new(nodes, NODES);
			*placed = place_cluster_queue(cl, pj, njobs, waited, INT64_MAX, offsets, out, ok);
			place_cluster_free(cl);
		} else {
			*placed = policy_pass(nodes, NODES, jobs, njobs, run, nrun, &cfg, offsets, out, o,
					      &v, &nv);
		}
		t[r] = now_us() - t0;
		*victims = nv;
		free(v);
	}
	qsort(t, RUNS, sizeof(*t), cmp_i64);
	free(nodes);
	free(run);
	free(held);
	free(jobs);
	free(pj);
	free(offsets);
	free(out);
	free(o);
	free(waited);
	free(ok);
	return t[RUNS / 2];
}

int main(void)
{
	struct catalog *cat;
	struct quotas *q;
	char err[512];

	if (catalog_load("deploy/catalog.yaml", &cat, err, sizeof(err))) {
		fprintf(stderr, "bench_policy: run from the repository root: %s\n", err);
		return 1;
	}
	json_t *projects = json_object();
	for (int p = 0; p < PROJECTS; p++) {
		snprintf(project_names[p], sizeof(project_names[p]), "team-%02d", p);
		json_object_set_new(projects, project_names[p], json_pack("{s:i, s:{s:i, s:i}}",
			"weight", 1 + p % 3, "limits", "NVIDIA_TESLA_T4", 2400, "cpus", 20000));
	}
	json_t *doc = json_pack("{s:o}", "projects", projects);
	if (quotas_parse(doc, cat, &q, err, sizeof(err))) {
		fprintf(stderr, "bench_policy: %s\n", err);
		return 1;
	}
	json_decref(doc);
	size_t placed, victims;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t n = 2000; n <= 100000; n *= 50) {
		int64_t base = measure(true, n, 5, q, &placed, &victims);
		size_t base_placed = placed;
		int64_t pol = measure(false, n, 5, q, &placed, &victims);
		printf("  policy: 10,000 nodes, 60,000 running, %6zu queued: %7.2f ms, %zu placed (quotas "
		       "and fair share on); placement alone %6.2f ms, %zu placed: ratio %.1f\n", n,
		       (double)pol / 1000, placed, (double)base / 1000, base_placed,
		       (double)pol / (double)base);
	}
	preemption = false;
	int64_t nopre = measure(false, 2000, 5, q, &placed, &victims);
	printf("  policy: the 2,000 queued again, preemption off: %.2f ms\n", (double)nopre / 1000);
	preemption = true;
	int64_t pre = measure(false, 100, -1, q, &placed, &victims);
	printf("  policy: a full cluster of SPOT jobs, 100 STANDARD gangs of 2 x 8 GPUs queued: %.2f ms, %zu "
	       "victims chosen\n", (double)pre / 1000, victims);
	quotas_free(q);
	catalog_free(cat);
	return 0;
}
