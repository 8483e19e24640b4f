/*
 * policy.h - who gets the cluster: the queue's order, quota admission,
 * fair share and preemption, over placement's pure gang fitting
 * (placement.h). Pure functions over the pass's snapshot; the scheduler
 * (scheduler.c) loads it and commits the decisions. docs/quotas.md
 * describes the policy to operators.
 *
 * Order. Jobs are taken in bands: non-preemptible (STANDARD, FLEX_START,
 * every ml v1 job) before SPOT, and within each, higher
 * scheduling.priority first. Within a band the next job is the oldest of
 * the project with the lowest weighted dominant share (DRF over GPUs,
 * vCPUs and memory: a project's largest fraction of the cluster's
 * schedulable total, divided by its weight), updated as jobs are placed.
 * A job that does not fit does not stop the ones behind it (backfill).
 *
 * Admission. A job whose project would exceed a limit of its class in
 * its region (quota.h), counting what the project already holds there,
 * waits (POLICY_QUOTA); it neither reserves nor preempts.
 *
 * Starvation. A job queued longer than starve_us reserves its region
 * (nothing behind it is placed there) if its gang fits the region's nodes
 * as registered when emptied; one that never fits reserves nothing and
 * delays no one (POLICY_NEVER_FITS).
 *
 * Preemption. A job that fits its quota but not the free capacity may
 * take the resources of running jobs it outranks: SPOT jobs (by any
 * non-SPOT job), and jobs whose priority is below the operator's
 * preemptible class (quotas_preempt_below) by jobs of a higher priority
 * and no lower band. Victims are whole jobs, chosen greedily cheapest
 * first (fewest GPUs, then lowest priority, then youngest) until the gang
 * fits, then pruned of any it fits without (most expensive first). The
 * preemptor always sorts before its victims, so a victim back in the
 * queue can never preempt it in return. While victims stop, their
 * capacity counts as the preemptor's: it waits (POLICY_PREEMPTING) and
 * the nodes it will use take nothing else in the pass.
 */
#ifndef TP_POLICY_H
#define TP_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "placement.h"
#include "quota.h"

/* A queued job. */
struct policy_job {
	struct place_job pj;		/* id, region, replicas */
	const char *project;
	const char *name;		/* its id in its API (for the victims' logs) */
	int priority;			/* ml v1 scheduling.priority; 0 for Vertex */
	bool spot;			/* Vertex SPOT: preemptible, the last band */
	enum quota_class qclass;	/* SPOT and FLEX_START: the preemptible quotas */
	struct quota_amounts demand;	/* the whole gang's */
	int64_t waited_us;
};

/* A job holding resources (its replicas are on nodes). */
struct policy_running {
	int64_t id;
	const char *project, *region;
	int priority;
	bool spot;
	enum quota_class qclass;
	bool stopping;			/* being stopped (preempted, cancelled, ended) */
	int64_t age_us;			/* since its placement: the youngest goes first */
	size_t n;
	const struct place_replica *replicas;
	const struct place_assignment *as;	/* as[i].node: index into the pass's nodes */
	const bool *on_node;		/* on_node[i]: as[i] is a node of the pass's array */
};

enum policy_why {
	POLICY_PLACED,
	POLICY_CAPACITY,	/* waits for capacity that will free */
	POLICY_NEVER_FITS,	/* no registered node set could hold it, even empty */
	POLICY_QUOTA,		/* its project's limit (excess says which) */
	POLICY_RESERVED,	/* a starving job holds its region */
	POLICY_PREEMPTING,	/* victims are stopping for it */
};

struct policy_outcome {
	enum policy_why why;
	struct quota_excess excess;	/* POLICY_QUOTA */
	size_t nvictims;		/* POLICY_PREEMPTING: victims chosen in this pass */
	int64_t blocker;		/* POLICY_RESERVED: the job holding the region */
	ssize_t replica;		/* POLICY_NEVER_FITS: the first replica no node could
					 * hold even idle; -1: each could, the gang cannot */
};

/* A victim chosen by a pass: running[victim] makes room for jobs[job]. */
struct policy_victim {
	size_t victim, job;
};

/*
 * Victim searches one pass makes at most (each costs about a millisecond at
 * 10,000 nodes); jobs past them wait for the next pass. A job whose shape
 * (region, band, largest replica, size) already found no victims in the
 * pass is not searched again.
 */
#define POLICY_MAX_SEARCHES 8

struct policy_config {
	const struct quotas *quotas;	/* NULL: no limits, equal weights */
	int64_t starve_us;
	bool preemption;		/* false: never preempt */
};

/*
 * One pass. out + offsets[j] receives job j's assignments when placed;
 * outcome[j] says what became of it. Victims go to *victims (xmalloc'd,
 * *nvictims of them; the caller frees). Returns the number placed. nodes
 * are updated as jobs are placed (and may lose `schedulable` for the pass
 * where a preemptor will go).
 */
size_t policy_pass(struct place_node *nodes, size_t nnodes, const struct policy_job *jobs,
		   size_t njobs, const struct policy_running *running, size_t nrunning,
		   const struct policy_config *cfg, const size_t *offsets,
		   struct place_assignment *out, struct policy_outcome *outcome,
		   struct policy_victim **victims, size_t *nvictims);

/* Whether a job of (spot, priority) may preempt r under the operator's preempt_below. */
bool policy_may_preempt(bool spot, int priority, const struct policy_running *r,
			int preempt_below);

/*
 * The cheapest set of victims among cand[0..ncand) (indices into running)
 * whose removal, with what is already stopping, lets job fit: the chosen
 * indices into chosen (capacity ncand), their number returned; 0 when no
 * set does. nodes are not changed. The assignment the job would get is
 * written to out.
 */
size_t policy_pick_victims(const struct place_node *nodes, size_t nnodes,
			   const struct policy_job *job, const struct policy_running *running,
			   const size_t *cand, size_t ncand, size_t *chosen,
			   struct place_assignment *out);

#endif
