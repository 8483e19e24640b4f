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

/* Gives an assignment's resources back (a placed job that ended). */
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

#endif
