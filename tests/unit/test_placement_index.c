/*
 * Unit tests: the placement index of issue 28 (struct place_cluster). Its
 * placements must be those of the scan it replaced (tests/unit/
 * placement_scan.h, the code before it), node and GPU indices included, on
 * random clusters and queues; and the index must agree with the nodes after
 * every take, rollback and release (place_cluster_check).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "placement.h"
#include "placement_scan.h"

#define T4 "NVIDIA_TESLA_T4"
#define K80 "NVIDIA_TESLA_K80"

static void assert_consistent(const struct place_cluster *cl)
{
	char why[256] = "";
	if (place_cluster_check(cl, why, sizeof(why)))
		fail_msg("index: %s", why);
}

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)((rng_state >> 11) % n);
}

static void seed(uint64_t s)
{
	rng_state = s * 0x9E3779B97F4A7C15ULL + 1;
	for (int i = 0; i < 4; i++)
		(void)rnd(2);
}

static const char *const regions[] = { "us-central1", "europe-west4" };
static const char *const zones[] = { "a", "b", "c" };
static const char *const types[] = { T4, K80, "TPU_V3" };

/* Copies of one string in another buffer: the index must compare names, not pointers. */
static char names[3][3][16];

/* A random node: mostly GPU nodes of few types, some CPU nodes and TPU
 * hosts, some busy, a few unschedulable, some of unknown size. */
static struct place_node random_node(int small)
{
	struct place_node n = { 0 };
	int region = (int)rnd(small ? 1 : 2);
	n.name = "n";
	n.region = rnd(2) ? regions[region] : strcpy(names[0][region], regions[region]);
	if (rnd(50) == 0)
		n.region = NULL;	/* (never placed on) */
	n.zone = rnd(40) ? zones[rnd(3)] : NULL;
	if (n.zone && rnd(2))
		n.zone = strcpy(names[1][n.zone[0] - 'a'], n.zone);
	int kind = (int)rnd(10);
	if (kind < 6) {
		n.accel_type = types[rnd(2)];
		n.gpus = rnd(8) ? (int)(1 + rnd(8)) : rnd(2) ? 16 : 64;
	} else if (kind < 8) {
		n.tpu_host = true;
		n.accel_type = rnd(4) ? NULL : types[2];
	} else if (kind == 8 && rnd(3) == 0) {
		n.accel_type = types[rnd(2)];	/* a type, no GPUs */
	}
	n.schedulable = rnd(12) != 0;
	n.total_vcpus = 8 * (int)(1 + rnd(12));
	n.total_memory_mb = 1024 * (int64_t)(8 + rnd(400));
	n.free_vcpus = n.total_vcpus - (int)rnd((uint32_t)n.total_vcpus + 1);
	n.free_memory_mb = n.total_memory_mb - (int64_t)rnd((uint32_t)n.total_memory_mb + 1);
	if (rnd(30) == 0)
		n.free_vcpus = -(int)rnd(8);	/* overcommitted */
	n.free_gpus = n.gpus >= 64 ? ~0ULL : (1ULL << n.gpus) - 1;
	if (rnd(2))
		n.free_gpus &= ((uint64_t)rnd(UINT32_MAX) << 32 | rnd(UINT32_MAX));
	n.tpu_busy = n.tpu_host && rnd(3) == 0;
	if (rnd(6) == 0)
		n.total_vcpus = 0, n.total_memory_mb = 0;	/* size not known */
	return n;
}

static struct place_replica random_replica(void)
{
	struct place_replica r = { (int)(1 + rnd(rnd(4) ? 16 : 96)), 1024 * (int64_t)(1 + rnd(120)),
				   NULL, 0, false };
	int kind = (int)rnd(10);
	if (kind < 6) {
		r.accel_type = types[rnd(2)];
		r.accel_count = rnd(6) ? (int)(1 + rnd(4)) : (int)(1 + rnd(16));
	} else if (kind < 7) {
		r.tpu = true;
		r.accel_type = types[2];
		r.accel_count = 8;
	} else if (kind < 8) {
		r.accel_type = types[rnd(2)];	/* a type, no count: a plain replica */
	}
	if (rnd(40) == 0)
		r.vcpus = 0;
	return r;
}

struct queue {
	struct place_job *jobs;
	struct place_replica *reps;
	int64_t *waited;
	size_t *offsets;
	size_t njobs, nreps;
};

static struct queue random_queue(size_t njobs, int small)
{
	struct queue q = { calloc(njobs, sizeof(*q.jobs)), calloc(njobs * 8, sizeof(*q.reps)),
			   calloc(njobs, sizeof(*q.waited)), calloc(njobs, sizeof(*q.offsets)), njobs, 0 };
	for (size_t j = 0; j < njobs; j++) {
		size_t n = rnd(3) ? 1 + rnd(3) : rnd(9);
		q.offsets[j] = q.nreps;
		for (size_t k = 0; k < n; k++)
			q.reps[q.nreps + k] = random_replica();
		const char *region = regions[rnd(small ? 1 : 2)];
		q.jobs[j] = (struct place_job){ (int64_t)j, rnd(50) ? region : "asia-east1", n,
						&q.reps[q.nreps] };
		q.waited[j] = rnd(5) == 0 ? 7200000000LL : 0;
		q.nreps += n;
	}
	return q;
}

static void queue_free(struct queue *q)
{
	free(q->jobs);
	free(q->reps);
	free(q->waited);
	free(q->offsets);
}

static void assert_nodes_equal(const struct place_node *a, const struct place_node *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(a[i].free_vcpus, b[i].free_vcpus);
		assert_int_equal(a[i].free_memory_mb, b[i].free_memory_mb);
		assert_int_equal(a[i].free_gpus, b[i].free_gpus);
		assert_int_equal(a[i].tpu_busy, b[i].tpu_busy);
	}
}

/* A whole pass, index against scan: the same jobs placed, on the same
 * nodes and GPUs; never_fits and fits_when_empty agree after it. */
static void queue_matches_scan(void **state)
{
	(void)state;
	for (uint64_t s = 1; s <= 300; s++) {
		seed(s);
		int small = s % 3 == 0;
		size_t nnodes = small ? 1 + rnd(6) : 1 + rnd(120);
		struct place_node *a = calloc(nnodes, sizeof(*a)), *b = calloc(nnodes, sizeof(*b));
		for (size_t i = 0; i < nnodes; i++)
			a[i] = b[i] = random_node(small);
		struct queue q = random_queue(1 + rnd(60), small);
		struct place_assignment *oa = calloc(q.nreps + 1, sizeof(*oa));
		struct place_assignment *ob = calloc(q.nreps + 1, sizeof(*ob));
		bool *pa = calloc(q.njobs, sizeof(*pa)), *pb = calloc(q.njobs, sizeof(*pb));

		struct place_cluster *cl = place_cluster_new(a, nnodes);
		assert_consistent(cl);
		size_t na = place_cluster_queue(cl, q.jobs, q.njobs, q.waited, 3600000000LL, q.offsets,
						oa, pa);
		size_t nb = scan_queue(b, nnodes, q.jobs, q.njobs, q.waited, 3600000000LL, q.offsets,
				       ob, pb);
		assert_consistent(cl);
		assert_int_equal(na, nb);
		for (size_t j = 0; j < q.njobs; j++) {
			assert_int_equal(pa[j], pb[j]);
			for (size_t k = 0; pa[j] && k < q.jobs[j].nreplicas; k++) {
				assert_int_equal(oa[q.offsets[j] + k].node, ob[q.offsets[j] + k].node);
				assert_int_equal(oa[q.offsets[j] + k].gpus, ob[q.offsets[j] + k].gpus);
			}
			assert_int_equal(place_cluster_never_fits(cl, &q.jobs[j]),
					 scan_never_fits(b, nnodes, &q.jobs[j]));
			assert_int_equal(place_cluster_fits_when_empty(cl, &q.jobs[j]),
					 scan_fits_when_empty(b, nnodes, &q.jobs[j]));
			/* The wrappers over a bare array, too. */
			assert_int_equal(place_never_fits(a, nnodes, &q.jobs[j]),
					 scan_never_fits(b, nnodes, &q.jobs[j]));
			assert_int_equal(place_fits_when_empty(a, nnodes, &q.jobs[j]),
					 scan_fits_when_empty(b, nnodes, &q.jobs[j]));
		}
		assert_nodes_equal(a, b, nnodes);
		assert_consistent(cl);
		place_cluster_free(cl);
		queue_free(&q);
		free(a);
		free(b);
		free(oa);
		free(ob);
		free(pa);
		free(pb);
	}
}

/*
 * Gangs placed and released in random order (a job ends, or preemption
 * gives a running job's resources back and tries another gang), one cluster
 * all along, each step against the scan; the index checked after each.
 */
static void gangs_and_releases_match_scan(void **state)
{
	(void)state;
	for (uint64_t s = 1; s <= 150; s++) {
		seed(1000 + s);
		int small = s % 4 == 0;
		size_t nnodes = small ? 1 + rnd(5) : 1 + rnd(60);
		struct place_node *a = calloc(nnodes, sizeof(*a)), *b = calloc(nnodes, sizeof(*b));
		for (size_t i = 0; i < nnodes; i++)
			a[i] = b[i] = random_node(small);
		struct queue q = random_queue(80, small);
		struct place_assignment *oa = calloc(q.nreps + 1, sizeof(*oa));
		struct place_assignment *ob = calloc(q.nreps + 1, sizeof(*ob));
		bool *running = calloc(q.njobs, sizeof(*running));
		struct place_cluster *cl = place_cluster_new(a, nnodes);

		if (s % 2)	/* the emptied copy made first: it follows every step */
			(void)place_cluster_fits_when_empty(cl, &q.jobs[0]);
		for (size_t step = 0; step < 200; step++) {
			size_t j = rnd((uint32_t)q.njobs);
			const struct place_job *job = &q.jobs[j];
			struct place_assignment *ja = oa + q.offsets[j], *jb = ob + q.offsets[j];
			if (running[j]) {
				for (size_t k = 0; k < job->nreplicas; k++) {
					place_cluster_release(cl, &job->replicas[k], &ja[k]);
					scan_release(b, &job->replicas[k], &jb[k]);
				}
				running[j] = false;
			} else {
				int ra = place_cluster_gang(cl, job, ja);
				int rb = scan_gang(b, nnodes, job, jb);
				assert_int_equal(ra, rb);
				for (size_t k = 0; ra == 0 && k < job->nreplicas; k++) {
					assert_int_equal(ja[k].node, jb[k].node);
					assert_int_equal(ja[k].gpus, jb[k].gpus);
				}
				running[j] = ra == 0;
			}
			if (step % 10 == 0) {
				assert_int_equal(place_cluster_never_fits(cl, job),
						 scan_never_fits(b, nnodes, job));
				assert_int_equal(place_cluster_fits_when_empty(cl, job),
						 scan_fits_when_empty(b, nnodes, job));
			}
			assert_nodes_equal(a, b, nnodes);
			assert_consistent(cl);
		}
		place_cluster_free(cl);
		queue_free(&q);
		free(a);
		free(b);
		free(oa);
		free(ob);
		free(running);
	}
}

/* A gang that fails on its last replica gives back all it took: the nodes
 * and the index are as they were. */
static void rollback_leaves_the_index_as_it_was(void **state)
{
	struct place_node nodes[6];
	for (int i = 0; i < 6; i++)
		nodes[i] = (struct place_node){ "n", "us-central1", zones[i % 3], T4, 8, false, true,
						 64, 240 * 1024, 0xff, false, 64, 240 * 1024 };
	struct place_node before[6];
	memcpy(before, nodes, sizeof(nodes));
	struct place_replica reps[7];
	for (int i = 0; i < 6; i++)
		reps[i] = (struct place_replica){ 8, 1024, T4, 8, false };
	reps[6] = (struct place_replica){ 8, 1024, T4, 1, false };	/* 49 GPUs of 48 */
	struct place_job job = { 1, "us-central1", 7, reps };
	struct place_assignment out[7];
	struct place_cluster *cl = place_cluster_new(nodes, 6);
	(void)state;

	assert_int_equal(place_cluster_gang(cl, &job, out), -1);
	assert_consistent(cl);
	assert_memory_equal(nodes, before, sizeof(nodes));
	/* One less: it fits, whole nodes first (the demand order). */
	job.nreplicas = 6;
	assert_int_equal(place_cluster_gang(cl, &job, out), 0);
	assert_consistent(cl);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(out[i].node, i);	/* equal scores: the lowest index */
		assert_int_equal(nodes[i].free_gpus, 0);
	}
	for (int i = 0; i < 6; i++)
		place_cluster_release(cl, &reps[i], &out[i]);
	assert_consistent(cl);
	assert_memory_equal(nodes, before, sizeof(nodes));
	place_cluster_free(cl);
}

/* 10,000 nodes x 8 GPUs filled by single-GPU jobs, then emptied. */
static void many_nodes(void **state)
{
	enum { N = 10000, GPUS = 8 };
	struct place_node *nodes = calloc(N, sizeof(*nodes));
	struct place_replica rep = { 4, 15 * 1024, T4, 1, false };
	struct place_assignment *out = calloc(N * GPUS, sizeof(*out));
	(void)state;

	for (int i = 0; i < N; i++)
		nodes[i] = (struct place_node){ "n", "us-central1", zones[i % 3], T4, GPUS, false, true,
						96, 360 * 1024, 0xff, false, 96, 360 * 1024 };
	struct place_cluster *cl = place_cluster_new(nodes, N);
	assert_consistent(cl);
	struct place_job job = { 1, "us-central1", 1, &rep };
	for (int k = 0; k < N * GPUS; k++) {
		assert_int_equal(place_cluster_gang(cl, &job, &out[k]), 0);
		/* Best fit: one node filled after another, in index order. */
		assert_int_equal(out[k].node, k / GPUS);
		assert_int_equal(out[k].gpus, 1ULL << (k % GPUS));
	}
	assert_int_equal(place_cluster_gang(cl, &job, &out[0]), -1);
	assert_consistent(cl);
	assert_true(place_cluster_fits_when_empty(cl, &job));
	assert_int_equal(place_cluster_never_fits(cl, &job), -1);
	/* Give back GPUs 0 and 4 of each node: 2 free GPUs on each. */
	for (int k = 0; k < N * GPUS; k += 4)
		place_cluster_release(cl, &rep, &out[k]);
	assert_consistent(cl);
	struct place_replica three = { 12, 45 * 1024, T4, 3, false };
	struct place_job big = { 2, "us-central1", 1, &three };
	assert_int_equal(place_cluster_gang(cl, &big, &out[0]), -1);	/* no 3 free GPUs... */
	struct place_replica two = { 8, 30 * 1024, T4, 2, false };
	struct place_job mid = { 3, "us-central1", 1, &two };
	assert_int_equal(place_cluster_gang(cl, &mid, &out[0]), 0);	/* ...but 2, on node 0 */
	assert_int_equal(out[0].node, 0);
	assert_int_equal(out[0].gpus, 0x11);
	assert_consistent(cl);
	place_cluster_free(cl);
	free(nodes);
	free(out);
}

/* Nodes of unknown size (total_vcpus 0) stay as they are when emptied:
 * the emptied copy follows what the pass takes from them. */
static void emptied_copy_follows_nodes_of_unknown_size(void **state)
{
	struct place_node nodes[] = {
		{ "u", "us-central1", "a", T4, 4, false, true, 16, 60 * 1024, 0xf, false, 0, 0 },
	};
	struct place_replica r = { 8, 1024, T4, 1, false };
	struct place_job job = { 1, "us-central1", 1, &r };
	struct place_assignment out[2];
	struct place_cluster *cl = place_cluster_new(nodes, 1);
	(void)state;

	assert_true(place_cluster_fits_when_empty(cl, &job));	/* the copy is made now */
	assert_int_equal(place_cluster_gang(cl, &job, &out[0]), 0);
	assert_consistent(cl);
	assert_true(place_cluster_fits_when_empty(cl, &job));	/* 8 vCPUs left */
	assert_int_equal(place_cluster_gang(cl, &job, &out[1]), 0);
	assert_consistent(cl);
	/* No vCPUs left, and their size is not known: not even when empty. */
	assert_false(place_cluster_fits_when_empty(cl, &job));
	assert_int_equal(place_cluster_never_fits(cl, &job), 0);
	place_cluster_release(cl, &r, &out[1]);
	assert_consistent(cl);
	assert_true(place_cluster_fits_when_empty(cl, &job));
	assert_int_equal(place_cluster_never_fits(cl, &job), -1);
	place_cluster_free(cl);
}

/* Preemption's use: running jobs' assignments (from an earlier pass) given
 * back to this pass's cluster, then a gang that needs them. */
static void released_running_jobs_make_room(void **state)
{
	struct place_node nodes[2];
	for (int i = 0; i < 2; i++)
		nodes[i] = (struct place_node){ "n", "us-central1", "a", T4, 8, false, true,
						 64, 240 * 1024, 0xff, false, 64, 240 * 1024 };
	struct place_replica small = { 4, 1024, T4, 1, false }, whole = { 16, 1024, T4, 8, false };
	struct place_assignment running[2];
	struct place_job one = { 1, "us-central1", 1, &small };
	(void)state;

	/* An earlier pass ran one single-GPU job on each node. */
	assert_int_equal(place_gang(nodes, 2, &one, &running[0]), 0);
	assert_int_equal(running[0].node, 0);
	nodes[1].free_gpus = 0xfe, nodes[1].free_vcpus -= 4, nodes[1].free_memory_mb -= 1024;
	running[1] = (struct place_assignment){ 1, 0x1 };
	struct place_cluster *cl = place_cluster_new(nodes, 2);
	struct place_job big = { 2, "us-central1", 1, &whole };
	struct place_assignment out[1];
	assert_int_equal(place_cluster_gang(cl, &big, out), -1);
	place_cluster_release(cl, &small, &running[1]);
	assert_consistent(cl);
	assert_int_equal(place_cluster_gang(cl, &big, out), 0);
	assert_int_equal(out[0].node, 1);
	assert_int_equal(out[0].gpus, 0xff);
	assert_consistent(cl);
	place_cluster_free(cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(queue_matches_scan),
		cmocka_unit_test(gangs_and_releases_match_scan),
		cmocka_unit_test(rollback_leaves_the_index_as_it_was),
		cmocka_unit_test(many_nodes),
		cmocka_unit_test(emptied_copy_follows_nodes_of_unknown_size),
		cmocka_unit_test(released_running_jobs_make_room),
	};
	return cmocka_run_group_tests_name("placement_index", tests, NULL, NULL);
}
