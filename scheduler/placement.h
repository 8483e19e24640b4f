/*
 * placement.h - gang placement: all replicas of a job on nodes at once, or
 * none (a half-placed MultiWorkerMirroredStrategy job deadlocks).
 *
 * Pure functions over an in-memory snapshot of the cluster; the scheduler
 * loads the snapshot, places, and commits the decisions in one transaction.
 *
 * A replica fits a node when the node is schedulable, in the job's region
 * (and zone, when the job needs one zone), has the vCPUs and memory of the
 * replica's machine type free, and has enough free accelerators of the
 * requested type. GPUs are bound by index: two replicas never share a GPU.
 * A TPU replica takes a whole TPU host.
 *
 * A pass places through a struct place_cluster: an index over the node
 * array, built once, by which choosing a replica's node costs O(log nodes)
 * per bucket of free GPUs instead of a scan of every node (issue 28). The
 * functions over a bare node array are kept; each builds a cluster for the
 * one call.
 */
#ifndef TP_PLACEMENT_H
#define TP_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common.h"

#define PLACE_MAX_GPUS 64	/* GPUs per node: one bit each */

struct place_node {
	const char *name;
	const char *region;
	const char *zone;
	const char *accel_type;	/* GPU type on this node, NULL if none */
	int gpus;		/* GPUs of accel_type */
	bool tpu_host;		/* a TPU host: takes one TPU replica */
	bool schedulable;	/* READY and not draining */
	/* Free capacity, updated by placement. */
	int free_vcpus;
	int64_t free_memory_mb;
	uint64_t free_gpus;	/* bit i set: GPU index i is free */
	bool tpu_busy;
	/* The node's whole size (0: not known; place_never_fits() then looks
	 * at the free capacity only). */
	int total_vcpus;
	int64_t total_memory_mb;
};

struct place_replica {
	int vcpus;
	int64_t memory_mb;
	const char *accel_type;	/* NULL: no accelerator */
	int accel_count;
	bool tpu;		/* needs a TPU host */
};

struct place_job {
	int64_t id;
	const char *region;
	size_t nreplicas;
	const struct place_replica *replicas;
};

struct place_assignment {
	size_t node;		/* index into the node array */
	uint64_t gpus;		/* the GPU indices bound to the replica */
};

/*
 * Places every replica of job or none. On success fills out[nreplicas],
 * takes the resources from nodes, and returns 0. On failure leaves nodes
 * as they were and returns -1.
 */
int place_gang(struct place_node *nodes, size_t nnodes, const struct place_job *job,
	       struct place_assignment *out) MUST_CHECK;

/*
 * The first replica of job (its index) that no schedulable node of the
 * job's region could hold even when empty, or -1 when each could go
 * somewhere once capacity frees up. Replicas are checked one by one: a
 * gang that needs one zone may still wait for good.
 */
ssize_t place_never_fits(const struct place_node *nodes, size_t nnodes,
			 const struct place_job *job);

/*
 * Whether the whole gang would fit on job's region if every node there were
 * empty. A job that waited past the starvation limit reserves its region
 * (place_queue) only then: one that never fits must not stop its region.
 */
bool place_fits_when_empty(const struct place_node *nodes, size_t nnodes,
			   const struct place_job *job);

/*
 * Gives an assignment's resources back (a placed job that ended). Not for
 * nodes a cluster indexes: use place_cluster_release() then.
 */
void place_release(struct place_node *nodes, const struct place_replica *r,
		   const struct place_assignment *a);

/*
 * One scheduling pass over a queue in priority order (FIFO within a
 * priority). Jobs that fit are placed; a job that does not fit does not
 * block smaller ones behind it (backfill), except that a job waiting
 * longer than starve_usec reserves its region: nothing behind it is placed
 * in that region until it fits, so large gangs cannot starve; unless it
 * could not fit even with the region empty (place_fits_when_empty).
 *
 * waited_usec[i] is how long jobs[i] has been queued. placed[i] is set for
 * placed jobs, and out + offsets[i] receives job i's assignments (offsets
 * from the caller: the running sum of nreplicas). Returns the number placed.
 */
size_t place_queue(struct place_node *nodes, size_t nnodes, const struct place_job *jobs,
		   size_t njobs, const int64_t *waited_usec, int64_t starve_usec,
		   const size_t *offsets, struct place_assignment *out, bool *placed);

/*
 * The cluster of one pass: nodes[] (borrowed, not copied; the free
 * capacity is updated in place as place_gang() does) with an index by free
 * capacity: the nodes of each (region, zone, accelerator type, TPU host or
 * not, GPU node or not) in buckets by free GPUs, each bucket a treap ordered
 * by free vCPUs then node index, with the largest free memory of each
 * subtree. While a cluster lives, nodes[] changes only through it (gang,
 * release): a node changed behind its back is placed by stale figures.
 *
 * Its placements are those of the scan the index replaced, to the node and
 * the GPU index: the best score, ties to the lowest node index
 * (tests/unit/test_placement_index.c checks it against that scan on random
 * clusters).
 */
struct place_cluster;

struct place_cluster *place_cluster_new(struct place_node *nodes, size_t nnodes);
void place_cluster_free(struct place_cluster *cl);

/* place_gang() on the cluster's nodes. */
int place_cluster_gang(struct place_cluster *cl, const struct place_job *job,
		       struct place_assignment *out) MUST_CHECK;

/* Gives an assignment's resources back, index included (a job that ended or
 * is preempted: its resources can go to the next gang of the pass). */
/* Whether the job uses accelerators of more than one type: then it needs one zone. */
bool place_needs_one_zone(const struct place_job *job);
/* The job's replica indices in the order placement takes them: TPU, then most
 * GPUs, then most vCPUs (hard replicas first); order has nreplicas slots. */
void place_demand_order(const struct place_job *job, size_t *order);

/*
 * Whether replica r fits node n as it is now (schedulable, free vCPUs,
 * memory, GPUs of its type or a free TPU host; region and zone are the
 * caller's), and taking it there (*gpus: the GPU indices, may be NULL):
 * for a caller weighing nodes one by one outside a cluster (preemption).
 */
bool place_node_fits(const struct place_node *n, const struct place_replica *r);
void place_node_take(struct place_node *n, const struct place_replica *r, uint64_t *gpus);

/*
 * Takes node out of cl for the rest of cl's life: no gang is placed on it
 * (a preemptor's future nodes, policy.c). Its place_node is not changed, so
 * never_fits / fits_when_empty still count it.
 */
void place_cluster_hold(struct place_cluster *cl, size_t node);
void place_cluster_release(struct place_cluster *cl, const struct place_replica *r,
			   const struct place_assignment *a);

/* place_never_fits(), place_fits_when_empty() and place_queue() on the
 * cluster. The first two use an emptied copy of the cluster, made at the
 * first call and kept (and followed) until place_cluster_free(). */
ssize_t place_cluster_never_fits(struct place_cluster *cl, const struct place_job *job);
bool place_cluster_fits_when_empty(struct place_cluster *cl, const struct place_job *job);
size_t place_cluster_queue(struct place_cluster *cl, const struct place_job *jobs, size_t njobs,
			   const int64_t *waited_usec, int64_t starve_usec, const size_t *offsets,
			   struct place_assignment *out, bool *placed);

/*
 * For tests: whether the index agrees with the nodes (every schedulable
 * node of a region in its bucket by its current free capacity, treaps
 * ordered, heap-ordered and their memory maxima right, the buckets' masks
 * right), for the cluster and its emptied copy. Returns 0, or -1 and says
 * what is wrong in why.
 */
int place_cluster_check(const struct place_cluster *cl, char *why, size_t whylen);

#endif
