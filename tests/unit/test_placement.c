/* Unit tests: gang placement, GPU binding, zones, fragmentation, backfill, starvation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "placement.h"

#define T4 "NVIDIA_TESLA_T4"
#define K80 "NVIDIA_TESLA_K80"
#define P100 "NVIDIA_TESLA_P100"

static struct place_node gpu_node(const char *name, const char *zone, const char *type, int gpus)
{
	struct place_node n = { name, "us-central1", zone, type, gpus, false, true,
				64, 240 * 1024, gpus >= 64 ? ~0ULL : (1ULL << gpus) - 1, false };
	return n;
}

static struct place_node cpu_node(const char *name, const char *zone)
{
	return gpu_node(name, zone, NULL, 0);
}

static const struct place_replica gpu4 = { 16, 60 * 1024, T4, 4, false };
static const struct place_replica gpu1 = { 4, 15 * 1024, T4, 1, false };
static const struct place_replica cpu8 = { 8, 30 * 1024, NULL, 0, false };

static void gang_binds_distinct_gpus(void **state)
{
	struct place_node nodes[] = { gpu_node("a", "us-central1-a", T4, 8),
				      gpu_node("b", "us-central1-a", T4, 8) };
	struct place_replica reps[] = { gpu4, gpu4, gpu4, cpu8 };
	struct place_job job = { 1, "us-central1", 4, reps };
	struct place_assignment out[4];
	(void)state;

	assert_int_equal(place_gang(nodes, 2, &job, out), 0);
	/* Three 4-GPU replicas over 16 GPUs: no GPU bound twice. */
	uint64_t used[2] = { 0, 0 };
	for (int i = 0; i < 3; i++) {
		assert_int_equal(__builtin_popcountll(out[i].gpus), 4);
		assert_int_equal(used[out[i].node] & out[i].gpus, 0);
		used[out[i].node] |= out[i].gpus;
	}
	assert_int_equal(out[3].gpus, 0);
	assert_int_equal(__builtin_popcountll(nodes[0].free_gpus) + __builtin_popcountll(nodes[1].free_gpus), 4);
}

static void gang_is_all_or_nothing(void **state)
{
	struct place_node nodes[] = { gpu_node("a", "us-central1-a", T4, 8) };
	struct place_replica reps[] = { gpu4, gpu4, gpu4 };
	struct place_job job = { 1, "us-central1", 3, reps };
	struct place_assignment out[3];
	(void)state;

	assert_int_equal(place_gang(nodes, 1, &job, out), -1);
	assert_int_equal(nodes[0].free_gpus, 0xff);	/* nothing held back */
	assert_int_equal(nodes[0].free_vcpus, 64);
}

static void region_type_cpu_and_memory_must_fit(void **state)
{
	struct place_node nodes[] = { gpu_node("k", "us-central1-a", K80, 8),
				      gpu_node("t", "us-central1-a", T4, 2) };
	nodes[1].region = "europe-west4";
	struct place_replica big_cpu = { 65, 1024, NULL, 0, false };
	struct place_replica big_mem = { 1, 241 * 1024, NULL, 0, false };
	struct place_assignment out[1];
	(void)state;

	struct place_job j1 = { 1, "us-central1", 1, &gpu1 };	/* T4 only in europe */
	assert_int_equal(place_gang(nodes, 2, &j1, out), -1);
	struct place_job j2 = { 2, "europe-west4", 1, &gpu1 };
	assert_int_equal(place_gang(nodes, 2, &j2, out), 0);
	assert_int_equal(out[0].node, 1);
	struct place_job j3 = { 3, "us-central1", 1, &big_cpu };
	assert_int_equal(place_gang(nodes, 2, &j3, out), -1);
	struct place_job j4 = { 4, "us-central1", 1, &big_mem };
	assert_int_equal(place_gang(nodes, 2, &j4, out), -1);
	nodes[0].schedulable = false;	/* draining or lost */
	struct place_job j5 = { 5, "us-central1", 1, &cpu8 };
	assert_int_equal(place_gang(nodes, 2, &j5, out), -1);
}

static void mixed_accelerators_share_one_zone(void **state)
{
	/* Seed 000: T4 master, K80 parameter servers, P100 workers need one zone
	 * offering all three. Zone b has T4 + K80, zone c has P100. */
	struct place_node nodes[] = { gpu_node("b1", "us-central1-b", T4, 4),
				      gpu_node("b2", "us-central1-b", K80, 4),
				      gpu_node("c1", "us-central1-c", P100, 4) };
	struct place_replica reps[] = { { 4, 1024, T4, 1, false }, { 4, 1024, K80, 1, false },
					{ 4, 1024, P100, 1, false } };
	struct place_job job = { 1, "us-central1", 3, reps };
	struct place_assignment out[3];
	(void)state;

	assert_int_equal(place_gang(nodes, 3, &job, out), -1);
	nodes[2].zone = "us-central1-b";
	assert_int_equal(place_gang(nodes, 3, &job, out), 0);
	struct place_job two = { 2, "us-central1", 2, reps };	/* T4 + K80 in zone b */
	nodes[2].zone = "us-central1-c";
	assert_int_equal(place_gang(nodes, 3, &two, out), 0);
}

static void best_fit_keeps_whole_nodes_for_big_replicas(void **state)
{
	/* b has 2 GPUs left; first fit would put the small jobs on the empty a
	 * and leave no whole node for the 8-GPU replica. */
	struct place_node nodes[] = { gpu_node("a", "us-central1-a", T4, 8),
				      gpu_node("b", "us-central1-a", T4, 8) };
	struct place_assignment out[1];
	struct place_replica gpu8 = { 8, 1024, T4, 8, false };
	(void)state;

	nodes[1].free_gpus = 0x3;
	for (int i = 0; i < 2; i++) {
		struct place_job j = { i, "us-central1", 1, &gpu1 };
		assert_int_equal(place_gang(nodes, 2, &j, out), 0);
		assert_int_equal(out[0].node, 1);
	}
	struct place_job big = { 99, "us-central1", 1, &gpu8 };
	assert_int_equal(place_gang(nodes, 2, &big, out), 0);
	assert_int_equal(out[0].node, 0);
	assert_int_equal(out[0].gpus, 0xff);
}

static void cpu_replicas_avoid_accelerator_nodes(void **state)
{
	struct place_node nodes[] = { gpu_node("g", "us-central1-a", T4, 4),
				      cpu_node("c", "us-central1-a") };
	struct place_job j = { 1, "us-central1", 1, &cpu8 };
	struct place_assignment out[1];
	(void)state;
	assert_int_equal(place_gang(nodes, 2, &j, out), 0);
	assert_int_equal(out[0].node, 1);
}

/* A TPU host is the last resort for a CPU replica, even when it is the fuller node. */
static void cpu_replicas_leave_tpu_hosts_for_tpu_jobs(void **state)
{
	struct place_node nodes[] = { gpu_node("t", "us-central1-a", NULL, 0),
				      gpu_node("g", "us-central1-a", T4, 4) };
	nodes[0].tpu_host = true;
	nodes[0].free_vcpus = 16;	/* the fuller node: best fit alone would pick it */
	nodes[1].free_vcpus = 24;
	struct place_job j = { 1, "us-central1", 1, &cpu8 };
	struct place_assignment out[1];
	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(place_gang(nodes, 2, &j, out), 0);
		assert_int_equal(out[0].node, 1);
	}
	/* The GPU node is full now: only then the TPU host. */
	assert_int_equal(place_gang(nodes, 2, &j, out), 0);
	assert_int_equal(out[0].node, 0);
}

static void tpu_replica_takes_a_whole_tpu_host(void **state)
{
	struct place_node nodes[] = { gpu_node("h", "us-central1-b", NULL, 0) };
	nodes[0].tpu_host = true;
	struct place_replica tpu = { 1, 1024, "TPU_V2", 8, true };
	struct place_job j = { 1, "us-central1", 1, &tpu };
	struct place_assignment out[1];
	(void)state;
	assert_int_equal(place_gang(nodes, 1, &j, out), 0);
	assert_int_equal(place_gang(nodes, 1, &j, out), -1);
	place_release(nodes, &tpu, &out[0]);
	assert_int_equal(place_gang(nodes, 1, &j, out), 0);
}

static void queue_backfills_but_does_not_starve(void **state)
{
	struct place_node nodes[] = { gpu_node("a", "us-central1-a", T4, 8) };
	struct place_replica big_reps[] = { gpu4, gpu4, gpu4 };	/* 12 GPUs: never fits now */
	struct place_job jobs[] = { { 1, "us-central1", 3, big_reps },
				    { 2, "us-central1", 1, &gpu1 },
				    { 3, "us-central1", 1, &gpu1 } };
	int64_t fresh[] = { 0, 0, 0 }, starved[] = { 3600000000LL, 0, 0 };
	size_t offsets[] = { 0, 3, 4 };
	struct place_assignment out[5];
	bool placed[3];
	(void)state;

	/* Backfill: the big job does not fit, the small ones behind it run. */
	assert_int_equal(place_queue(nodes, 1, jobs, 3, fresh, 600000000LL, offsets, out, placed), 2);
	assert_false(placed[0]);
	assert_true(placed[1] && placed[2]);

	/* It can never fit (12 GPUs, the region has 8): however long it has
	 * waited, it reserves nothing, and the region goes on (issue 28: an
	 * oversized job stopped its region). */
	struct place_node fresh_nodes[] = { gpu_node("a", "us-central1-a", T4, 8) };
	assert_false(place_fits_when_empty(fresh_nodes, 1, &jobs[0]));
	assert_int_equal(place_queue(fresh_nodes, 1, jobs, 3, starved, 600000000LL, offsets, out,
				     placed), 2);
	assert_false(placed[0]);

	/* One that fits an emptied region (8 GPUs), with 4 of them busy: once it
	 * has waited too long, nothing overtakes it. */
	struct place_replica fits_reps[] = { gpu4, gpu4 };
	struct place_job waiting[] = { { 4, "us-central1", 2, fits_reps },
				       { 5, "us-central1", 1, &gpu1 },
				       { 6, "us-central1", 1, &gpu1 } };
	struct place_node busy[] = { gpu_node("a", "us-central1-a", T4, 8) };
	busy[0].total_vcpus = busy[0].free_vcpus;
	busy[0].total_memory_mb = busy[0].free_memory_mb;
	busy[0].free_gpus = 0x0f;
	assert_true(place_fits_when_empty(busy, 1, &waiting[0]));
	size_t offs[] = { 0, 2, 3 };
	assert_int_equal(place_queue(busy, 1, waiting, 3, starved, 600000000LL, offs, out, placed), 0);
	assert_int_equal(busy[0].free_gpus, 0x0f);
	/* Fresh, the small ones backfill. */
	assert_int_equal(place_queue(busy, 1, waiting, 3, fresh, 600000000LL, offs, out, placed), 2);
	assert_false(placed[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gang_binds_distinct_gpus),
		cmocka_unit_test(gang_is_all_or_nothing),
		cmocka_unit_test(region_type_cpu_and_memory_must_fit),
		cmocka_unit_test(mixed_accelerators_share_one_zone),
		cmocka_unit_test(best_fit_keeps_whole_nodes_for_big_replicas),
		cmocka_unit_test(cpu_replicas_avoid_accelerator_nodes),
		cmocka_unit_test(cpu_replicas_leave_tpu_hosts_for_tpu_jobs),
		cmocka_unit_test(tpu_replica_takes_a_whole_tpu_host),
		cmocka_unit_test(queue_backfills_but_does_not_starve),
	};
	return cmocka_run_group_tests_name("placement", tests, NULL, NULL);
}
