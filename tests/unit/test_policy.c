/* Unit tests: the queue's policy (scheduler/policy.c): quota admission,
 * victim selection (minimal, whole gangs, priorities, no loops), DRF
 * order, starvation, and a fair-share simulation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policy.h"

#define T4 "NVIDIA_TESLA_T4"
#define R "us-central1"

static struct place_node gpu_node(const char *name, int gpus)
{
	struct place_node n = { name, R, "us-central1-a", T4, gpus, false, true,
				96, 360 * 1024, gpus >= 64 ? ~0ULL : (1ULL << gpus) - 1, false,
				96, 360 * 1024 };
	return n;
}

static const struct place_replica g1 = { 4, 15 * 1024, T4, 1, false };
static const struct place_replica g2 = { 8, 30 * 1024, T4, 2, false };
static const struct place_replica g4 = { 16, 60 * 1024, T4, 4, false };
static const struct place_replica g8 = { 32, 120 * 1024, T4, 8, false };

static struct quotas *quotas_of(const char *json)
{
	struct catalog *cat;
	char err[512];
	struct quotas *q = NULL;
	json_t *doc = json_loads(json, 0, NULL);
	assert_int_equal(catalog_load("deploy/catalog.yaml", &cat, err, sizeof(err)), 0);
	assert_int_equal(quotas_parse(doc, cat, &q, err, sizeof(err)), 0);
	json_decref(doc);
	catalog_free(cat);
	return q;
}

/* A queued job of n replicas, each r. */
static struct policy_job queued(int64_t id, const char *project, const struct place_replica *reps,
				size_t n, int priority, bool spot)
{
	struct policy_job j = { .pj = { id, R, n, reps }, .project = project, .name = "j",
				.priority = priority, .spot = spot,
				.qclass = spot ? QUOTA_PREEMPTIBLE : QUOTA_STANDARD };
	for (size_t i = 0; i < n; i++) {
		quota_amounts_add(&j.demand, QUOTA_CPUS, reps[i].vcpus);
		quota_amounts_add(&j.demand, T4, reps[i].accel_count);
	}
	return j;
}

/* Takes r's GPUs on nodes[node] as a running job would hold them. */
static struct place_assignment hold(struct place_node *nodes, size_t node, const struct place_replica *r)
{
	struct place_assignment a = { node, 0 };
	for (int k = 0; k < 64 && __builtin_popcountll(a.gpus) < r->accel_count; k++)
		if (nodes[node].free_gpus & (1ULL << k))
			a.gpus |= 1ULL << k;
	nodes[node].free_gpus &= ~a.gpus;
	nodes[node].free_vcpus -= r->vcpus;
	nodes[node].free_memory_mb -= r->memory_mb;
	return a;
}

static const bool on2[2] = { true, true };

static struct policy_running running(int64_t id, const char *project, const struct place_replica *reps,
				     const struct place_assignment *as, size_t n, int priority, bool spot,
				     int64_t age_us)
{
	return (struct policy_running){ id, project, R, priority, spot,
					spot ? QUOTA_PREEMPTIBLE : QUOTA_STANDARD, false, age_us, n,
					reps, as, on2 };
}

static void the_cheapest_victim_is_chosen_and_no_more(void **state)
{
	struct place_node nodes[] = { gpu_node("a", 8) };
	struct place_assignment as[3];
	(void)state;
	as[0] = hold(nodes, 0, &g4);
	as[1] = hold(nodes, 0, &g2);
	as[2] = hold(nodes, 0, &g2);
	struct policy_running run[] = {
		running(1, "p", &g4, &as[0], 1, 0, true, 100),
		running(2, "p", &g2, &as[1], 1, 0, true, 50),	/* the youngest 2-GPU one */
		running(3, "p", &g2, &as[2], 1, 0, true, 200),
	};
	struct policy_job job = queued(10, "q", &g2, 1, 0, false);
	size_t cand[] = { 0, 1, 2 }, chosen[3];
	struct place_assignment out[1];
	assert_int_equal(policy_pick_victims(nodes, 1, &job, run, cand, 3, chosen, out), 1);
	assert_int_equal(chosen[0], 1);
	assert_int_equal(out[0].gpus, as[1].gpus);	/* where the victim was */
	/* 4 GPUs: two 2-GPU victims (4 lost) or the 4-GPU one (4 lost): never all three */
	struct policy_job big = queued(11, "q", &g4, 1, 0, false);
	size_t n = policy_pick_victims(nodes, 1, &big, run, cand, 3, chosen, out);
	assert_true(n == 1 || n == 2);
	int lost = 0;
	for (size_t i = 0; i < n; i++)
		lost += run[chosen[i]].replicas[0].accel_count;
	assert_int_equal(lost, 4);
	/* 16 GPUs: no set of victims on an 8-GPU node makes room */
	struct place_replica two8[] = { g8, g8 };
	struct policy_job huge = queued(12, "q", two8, 2, 0, false);
	assert_int_equal(policy_pick_victims(nodes, 1, &huge, run, cand, 3, chosen, out), 0);
}

static void gangs_are_preempted_whole(void **state)
{
	struct place_node nodes[] = { gpu_node("a", 4), gpu_node("b", 4) };
	struct place_replica gang[] = { g4, g4 };
	struct place_assignment as[2];
	(void)state;
	as[0] = hold(nodes, 0, &g4);
	as[1] = hold(nodes, 1, &g4);
	struct policy_running run[] = { running(1, "p", gang, as, 2, 0, true, 10) };
	struct policy_job job = queued(5, "q", &g1, 1, 0, false);
	size_t cand[] = { 0 }, chosen[1];
	struct place_assignment out[1];
	assert_int_equal(policy_pick_victims(nodes, 2, &job, run, cand, 1, chosen, out), 1);
	/* The pass preempts the whole gang (one victim: the job) for one GPU. */
	struct policy_config cfg = { NULL, INT64_MAX, true };
	struct policy_outcome o[1];
	struct policy_victim *v = NULL;
	size_t nv = 0, off[] = { 0 };
	assert_int_equal(policy_pass(nodes, 2, &job, 1, run, 1, &cfg, off, out, o, &v, &nv), 0);
	assert_int_equal(o[0].why, POLICY_PREEMPTING);
	assert_int_equal(nv, 1);
	assert_int_equal(v[0].victim, 0);
	free(v);
	/* Nodes are as they were (holding is for the pass). */
	assert_true(nodes[0].schedulable && nodes[1].schedulable);
}

static void who_may_preempt_whom_and_never_both_ways(void **state)
{
	(void)state;
	struct policy_running r = { .priority = 50 };
	/* below the operator's class: a higher priority preempts it */
	assert_true(policy_may_preempt(false, 60, &r, 100));
	assert_false(policy_may_preempt(false, 50, &r, 100));
	assert_false(policy_may_preempt(false, 60, &r, 0));	/* no class: only SPOT */
	r.priority = 150;
	assert_false(policy_may_preempt(false, 900, &r, 100));
	/* SPOT: any non-SPOT job; a SPOT job never takes a non-SPOT one's place */
	r.spot = true;
	assert_true(policy_may_preempt(false, 0, &r, 0));
	assert_false(policy_may_preempt(true, 999, &r, 0));
	struct policy_running ns = { .priority = 10 };
	assert_false(policy_may_preempt(true, 900, &ns, 100));
	r.stopping = true;
	assert_false(policy_may_preempt(false, 0, &r, 0));
	/* No loop: for every pair, at most one way. */
	for (int below = 0; below <= 1001; below += 7)
		for (int pa = 0; pa <= 1000; pa += 50)
			for (int pb = 0; pb <= 1000; pb += 50)
				for (int sa = 0; sa < 2; sa++)
					for (int sb = 0; sb < 2; sb++) {
						struct policy_running a = { .priority = pa, .spot = sa };
						struct policy_running b = { .priority = pb, .spot = sb };
						assert_false(policy_may_preempt(sa, pa, &b, below) &&
							     policy_may_preempt(sb, pb, &a, below));
					}
}

static void quota_admission_holds_what_does_not_fit_beside_the_project(void **state)
{
	struct place_node nodes[] = { gpu_node("a", 8) };
	struct quotas *q = quotas_of("{\"projects\": {\"capped\": {\"limits\": {\"" T4 "\": 2}}}}");
	struct policy_job jobs[] = { queued(1, "capped", &g2, 1, 0, false),
				     queued(2, "capped", &g1, 1, 0, false),
				     queued(3, "free", &g4, 1, 0, false) };
	struct policy_config cfg = { q, INT64_MAX, true };
	struct policy_outcome o[3];
	struct place_assignment out[3];
	struct policy_victim *v = NULL;
	size_t nv = 0, off[] = { 0, 1, 2 };
	(void)state;
	assert_int_equal(policy_pass(nodes, 1, jobs, 3, NULL, 0, &cfg, off, out, o, &v, &nv), 2);
	assert_int_equal(o[0].why, POLICY_PLACED);
	assert_int_equal(o[1].why, POLICY_QUOTA);
	assert_string_equal(o[1].excess.resource, T4);
	assert_int_equal(o[1].excess.used, 2);
	assert_int_equal(o[1].excess.limit, 2);
	assert_int_equal(o[2].why, POLICY_PLACED);
	/* What runs counts too: with 2 held, even the first waits. */
	struct place_node n2[] = { gpu_node("a", 8) };
	struct place_assignment held = hold(n2, 0, &g2);
	struct policy_running run[] = { running(9, "capped", &g2, &held, 1, 0, false, 1) };
	assert_int_equal(policy_pass(n2, 1, jobs, 1, run, 1, &cfg, off, out, o, &v, &nv), 0);
	assert_int_equal(o[0].why, POLICY_QUOTA);
	/* and quota never preempts: nothing was chosen */
	assert_int_equal(nv, 0);
	free(v);
	quotas_free(q);
}

static void a_job_that_never_fits_reserves_nothing(void **state)
{
	struct place_node nodes[] = { gpu_node("a", 8) };
	struct place_replica two8[] = { g8, g8 };
	struct policy_job jobs[] = { queued(1, "p", two8, 2, 0, false),
				     queued(2, "p", &g1, 1, 0, false) };
	struct policy_config cfg = { NULL, 0, true };	/* everyone is past the starve limit */
	struct policy_outcome o[2];
	struct place_assignment out[3];
	struct policy_victim *v = NULL;
	size_t nv = 0, off[] = { 0, 2 };
	(void)state;
	jobs[0].waited_us = jobs[1].waited_us = 3600000000LL;
	assert_int_equal(policy_pass(nodes, 1, jobs, 2, NULL, 0, &cfg, off, out, o, &v, &nv), 1);
	assert_int_equal(o[0].why, POLICY_NEVER_FITS);
	assert_int_equal(o[0].replica, -1);	/* each fits alone: the gang does not */
	assert_int_equal(o[1].why, POLICY_PLACED);
	free(v);
	/* A replica bigger than any node: named. */
	struct place_replica g16 = { 32, 1024, T4, 16, false };
	struct place_replica mixed[] = { g1, g16 };
	struct policy_job j3[] = { queued(3, "p", mixed, 2, 0, false) };
	struct place_node n3[] = { gpu_node("a", 8) };
	assert_int_equal(policy_pass(n3, 1, j3, 1, NULL, 0, &cfg, off, out, o, &v, &nv), 0);
	assert_int_equal(o[0].why, POLICY_NEVER_FITS);
	assert_int_equal(o[0].replica, 1);
	free(v);
	/* One that fits the emptied node, behind running STANDARD work, reserves it. */
	struct place_node n2[] = { gpu_node("a", 8) };
	struct place_assignment held = hold(n2, 0, &g2);
	struct policy_running run[] = { running(9, "p", &g2, &held, 1, 0, false, 1) };
	struct policy_job j2[] = { queued(1, "p", &g8, 1, 0, false), queued(2, "p", &g1, 1, 0, false) };
	j2[0].waited_us = 3600000000LL;
	assert_int_equal(policy_pass(n2, 1, j2, 2, run, 1, &cfg, off, out, o, &v, &nv), 0);
	assert_int_equal(o[0].why, POLICY_CAPACITY);
	assert_int_equal(o[1].why, POLICY_RESERVED);
	assert_int_equal(o[1].blocker, 1);
	free(v);
}

static void a_preemptor_waits_for_its_victims_and_holds_their_node(void **state)
{
	struct place_node nodes[] = { gpu_node("a", 8), gpu_node("b", 1) };
	struct place_assignment held = hold(nodes, 0, &g8);
	struct policy_running run[] = { running(9, "p", &g8, &held, 1, 0, true, 1) };
	struct policy_job jobs[] = { queued(1, "q", &g4, 1, 0, false),
				     queued(2, "q", &g1, 1, 0, true) };	/* SPOT: after */
	struct policy_config cfg = { NULL, INT64_MAX, true };
	struct policy_outcome o[2];
	struct place_assignment out[2];
	struct policy_victim *v = NULL;
	size_t nv = 0, off[] = { 0, 1 };
	(void)state;
	assert_int_equal(policy_pass(nodes, 2, jobs, 2, run, 1, &cfg, off, out, o, &v, &nv), 1);
	assert_int_equal(o[0].why, POLICY_PREEMPTING);
	assert_int_equal(nv, 1);
	assert_int_equal(v[0].job, 0);
	/* the SPOT job goes to node b: a is held for the preemptor */
	assert_int_equal(o[1].why, POLICY_PLACED);
	assert_int_equal(out[1].node, 1);
	free(v);
	/* Next pass: the victim is stopping; no new victim, the job still waits for it. */
	run[0].stopping = true;
	struct place_node n2[] = { gpu_node("a", 8) };
	held = hold(n2, 0, &g8);
	assert_int_equal(policy_pass(n2, 1, jobs, 1, run, 1, &cfg, off, out, o, &v, &nv), 0);
	assert_int_equal(o[0].why, POLICY_PREEMPTING);
	assert_int_equal(nv, 0);
	free(v);
	/* Without preemption it waits for capacity. */
	run[0].stopping = false;
	cfg.preemption = false;
	assert_int_equal(policy_pass(n2, 1, jobs, 1, run, 1, &cfg, off, out, o, &v, &nv), 0);
	assert_int_equal(o[0].why, POLICY_CAPACITY);
	free(v);
}

static void bands_then_weighted_dominant_share(void **state)
{
	struct place_node nodes[] = { gpu_node("a", 6) };
	struct quotas *q = quotas_of("{\"projects\": {\"b\": {\"weight\": 2}}}");
	struct policy_job jobs[12];
	struct policy_config cfg = { q, INT64_MAX, true };
	struct policy_outcome o[12];
	struct place_assignment out[12];
	struct policy_victim *v = NULL;
	size_t nv = 0, off[12];
	(void)state;
	for (int i = 0; i < 6; i++) {
		jobs[i] = queued(1 + i, "a", &g1, 1, 0, false);		/* a's are older */
		jobs[6 + i] = queued(100 + i, "b", &g1, 1, 0, false);
	}
	for (size_t i = 0; i < 12; i++)
		off[i] = i;
	assert_int_equal(policy_pass(nodes, 1, jobs, 12, NULL, 0, &cfg, off, out, o, &v, &nv), 6);
	int placed_a = 0, placed_b = 0;
	for (int i = 0; i < 12; i++)
		if (o[i].why == POLICY_PLACED)
			*(i < 6 ? &placed_a : &placed_b) += 1;
	assert_int_equal(placed_a, 2);	/* weights 1:2 of 6 GPUs */
	assert_int_equal(placed_b, 4);
	/* within a project, oldest first */
	assert_int_equal(o[0].why, POLICY_PLACED);
	assert_int_equal(o[1].why, POLICY_PLACED);
	assert_int_equal(o[2].why, POLICY_CAPACITY);
	free(v);
	/* A higher priority comes before any share; SPOT after everything. */
	struct place_node n2[] = { gpu_node("a", 1) };
	struct policy_job j2[] = { queued(1, "a", &g1, 1, 0, true), queued(2, "a", &g1, 1, 5, false),
				   queued(3, "b", &g1, 1, 0, false) };
	assert_int_equal(policy_pass(n2, 1, j2, 3, NULL, 0, &cfg, off, out, o, &v, &nv), 1);
	assert_int_equal(o[1].why, POLICY_PLACED);
	free(v);
	quotas_free(q);
}

/*
 * Fair share, simulated: 3 projects with weights 1:1:2 keep more 1-GPU
 * jobs queued than 16 GPUs hold, jobs run 1-6 ticks; each tick ends what
 * is due and runs a pass. GPU-ticks per project converge to 25/25/50 %,
 * and no GPU idles while a job waits (all fit any free GPU).
 */
#define SIM_NODES 2
#define SIM_JOBS 4096
static void fair_share_converges_to_the_weights(void **state)
{
	struct quotas *q = quotas_of("{\"projects\": {\"c\": {\"weight\": 2}}}");
	static const char *const projects[] = { "a", "b", "c" };
	struct sim_job {
		int project, ends;
		struct place_assignment as;
		bool running;
	} *sj = calloc(SIM_JOBS, sizeof(*sj));
	struct place_node nodes[SIM_NODES] = { gpu_node("n0", 8), gpu_node("n1", 8) };
	double gpu_ticks[3] = { 0 };
	int64_t next_id = 1;
	unsigned seed = 7;
	size_t live = 0;
	int idle_while_waiting = 0;
	(void)state;
	for (int tick = 0; tick < 3000; tick++) {
		/* end what is due; keep 12 queued per project */
		int queued_of[3] = { 0 };
		for (size_t i = 0; i < live; i++) {
			if (sj[i].running && sj[i].ends <= tick) {
				place_release(nodes, &g1, &sj[i].as);
				sj[i] = sj[--live];
				i--;
				continue;
			}
			if (!sj[i].running)
				queued_of[sj[i].project]++;
		}
		for (int p = 0; p < 3; p++)
			for (; queued_of[p] < 12 && live < SIM_JOBS; queued_of[p]++)
				sj[live++] = (struct sim_job){ p, 0, { 0, 0 }, false };
		/* the pass */
		struct policy_job *jobs = calloc(live, sizeof(*jobs));
		struct policy_running *run = calloc(live, sizeof(*run));
		size_t *qi = calloc(live, sizeof(*qi)), *off = calloc(live, sizeof(*off));
		size_t nq = 0, nr = 0;
		for (size_t i = 0; i < live; i++) {
			if (sj[i].running) {
				run[nr++] = running((int64_t)i, projects[sj[i].project], &g1, &sj[i].as,
						    1, 0, false, 1);
			} else {
				jobs[nq] = queued(next_id++, projects[sj[i].project], &g1, 1, 0, false);
				off[nq] = nq;
				qi[nq++] = i;
			}
		}
		struct policy_outcome *o = calloc(nq, sizeof(*o));
		struct place_assignment *out = calloc(nq, sizeof(*out));
		struct policy_config cfg = { q, INT64_MAX, true };
		struct policy_victim *v = NULL;
		size_t nv = 0;
		policy_pass(nodes, SIM_NODES, jobs, nq, run, nr, &cfg, off, out, o, &v, &nv);
		for (size_t k = 0; k < nq; k++)
			if (o[k].why == POLICY_PLACED) {
				struct sim_job *s = &sj[qi[k]];
				s->running = true;
				s->as = out[k];
				seed = seed * 1103515245u + 12345u;
				s->ends = tick + 1 + (int)((seed >> 16) % 6);
			}
		int free_gpus = 0;
		for (int n = 0; n < SIM_NODES; n++)
			free_gpus += __builtin_popcountll(nodes[n].free_gpus);
		bool waiting = false;
		for (size_t k = 0; k < nq; k++)
			waiting |= o[k].why != POLICY_PLACED;
		idle_while_waiting += free_gpus > 0 && waiting;
		for (size_t i = 0; i < live; i++)
			if (sj[i].running && tick >= 500)	/* settled */
				gpu_ticks[sj[i].project] += 1;
		free(v);
		free(o);
		free(out);
		free(jobs);
		free(run);
		free(qi);
		free(off);
	}
	double total = gpu_ticks[0] + gpu_ticks[1] + gpu_ticks[2];
	double want[3] = { 0.25, 0.25, 0.5 };
	for (int p = 0; p < 3; p++) {
		double got = gpu_ticks[p] / total;
		print_message("project %s: %.3f of the GPU-ticks (weight share %.2f)\n", projects[p], got,
			      want[p]);
		assert_true(got > want[p] * 0.95 && got < want[p] * 1.05);
	}
	assert_int_equal(idle_while_waiting, 0);
	assert_true(total == 16.0 * 2500);	/* every GPU busy every settled tick */
	free(sj);
	quotas_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_cheapest_victim_is_chosen_and_no_more),
		cmocka_unit_test(gangs_are_preempted_whole),
		cmocka_unit_test(who_may_preempt_whom_and_never_both_ways),
		cmocka_unit_test(quota_admission_holds_what_does_not_fit_beside_the_project),
		cmocka_unit_test(a_job_that_never_fits_reserves_nothing),
		cmocka_unit_test(a_preemptor_waits_for_its_victims_and_holds_their_node),
		cmocka_unit_test(bands_then_weighted_dominant_share),
		cmocka_unit_test(fair_share_converges_to_the_weights),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
