/*
 * Placement throughput of scheduler/placement.c on a simulated cluster of
 * 1,000 nodes x 8 T4 GPUs across 4 zones (issue 4's figures):
 *   - 10,000 queued single-GPU jobs in one pass
 *   - 500 gangs of 16 replicas (1 GPU each) in one pass
 *   - one 64-replica gang (8 GPUs each) on a fresh cluster
 * Placements per second count replicas placed. kube-scheduler's published
 * gate is 680-810 pods/s; the goal here is 20 times that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement.h"

#define NODES 1000
#define GPUS 8

static const char *const zones[] = { "us-central1-a", "us-central1-b", "us-central1-c",
				     "us-central1-f" };

static void cluster(struct place_node *n)
{
	for (int i = 0; i < NODES; i++) {
		n[i] = (struct place_node){ "node", "us-central1", zones[i % 4], "NVIDIA_TESLA_T4",
					    GPUS, false, true, 96, 360 * 1024,
					    (UINT64_C(1) << GPUS) - 1, false };
	}
}

static double run(const char *what, size_t njobs, size_t per_job, int gpus_each)
{
	struct place_node *nodes = calloc(NODES, sizeof(*nodes));
	struct place_replica rep = { 4, 15 * 1024, "NVIDIA_TESLA_T4", gpus_each, false };
	struct place_replica *reps = calloc(per_job, sizeof(*reps));
	struct place_job *jobs = calloc(njobs, sizeof(*jobs));
	int64_t *waited = calloc(njobs, sizeof(*waited));
	size_t *offsets = calloc(njobs, sizeof(*offsets));
	struct place_assignment *as = calloc(njobs * per_job, sizeof(*as));
	bool *placed = calloc(njobs, sizeof(*placed));

	cluster(nodes);
	for (size_t r = 0; r < per_job; r++)
		reps[r] = rep;
	for (size_t j = 0; j < njobs; j++) {
		jobs[j] = (struct place_job){ (int64_t)j, "us-central1", per_job, reps };
		offsets[j] = j * per_job;
	}
	int64_t t0 = mono_usec();
	size_t n = place_queue(nodes, NODES, jobs, njobs, waited, INT64_MAX, offsets, as, placed);
	int64_t us = mono_usec() - t0;
	double rate = (double)(n * per_job) / ((double)us / 1e6);
	printf("  placement: %-32s %6zu jobs placed, %7zu replicas in %8.2f ms: %9.0f placements/s\n",
	       what, n, n * per_job, (double)us / 1000.0, rate);
	free(nodes);
	free(reps);
	free(jobs);
	free(waited);
	free(offsets);
	free(as);
	free(placed);
	return rate;
}

int main(void)
{
	double a = run("10,000 single-GPU jobs", 10000, 1, 1);
	double b = run("500 gangs of 16", 500, 16, 1);
	run("one 64-replica gang (8 GPUs each)", 1, 64, 8);
	double best = a < b ? a : b;
	printf("  placement: slowest rate %.0f placements/s = %.1f x kube-scheduler's 810 pods/s "
	       "(goal >= 20 x)\n", best, best / 810.0);
	return 0;
}
