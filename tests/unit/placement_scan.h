/*
 * placement_scan.h - the placement of scheduler/placement.c before issue 28,
 * kept as the reference the index is checked against (test_placement_index)
 * and measured against (bench/bench_placement --scan): every replica scans
 * every node for the best score. Not part of the product. Same semantics as
 * place_gang() and friends; the names carry scan_ instead of place_.
 */
#ifndef TP_PLACEMENT_SCAN_H
#define TP_PLACEMENT_SCAN_H

#include <stdlib.h>
#include <string.h>

#include "placement.h"

static inline int scan_gang(struct place_node *nodes, size_t nnodes, const struct place_job *job,
			    struct place_assignment *out);

static inline int scan_popcount64(uint64_t v)
{
	return __builtin_popcountll(v);
}

/* The lowest n set bits of mask. */
static inline uint64_t scan_lowest_bits(uint64_t mask, int n)
{
	uint64_t out = 0;
	while (n-- > 0 && mask) {
		uint64_t bit = mask & -mask;
		out |= bit;
		mask &= ~bit;
	}
	return out;
}

static inline bool scan_same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

static inline bool scan_fits(const struct place_node *n, const struct place_replica *r, const char *region,
			     const char *zone)
{
	if (!n->schedulable || !scan_same(n->region, region) || (zone && !scan_same(n->zone, zone)))
		return false;
	if (n->free_vcpus < r->vcpus || n->free_memory_mb < r->memory_mb)
		return false;
	if (r->tpu)
		return n->tpu_host && !n->tpu_busy;
	if (r->accel_type && r->accel_count > 0)
		return scan_same(n->accel_type, r->accel_type) &&
		       scan_popcount64(n->free_gpus) >= r->accel_count;
	return true;
}

/* A node as it would be with nothing placed on it. */
static inline struct place_node scan_emptied(const struct place_node *n)
{
	struct place_node empty = *n;
	if (empty.total_vcpus > 0) {
		empty.free_vcpus = empty.total_vcpus;
		empty.free_memory_mb = empty.total_memory_mb;
	}
	empty.free_gpus = empty.gpus >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << empty.gpus) - 1;
	empty.tpu_busy = false;
	return empty;
}

static inline ssize_t scan_never_fits(const struct place_node *nodes, size_t nnodes,
				      const struct place_job *job)
{
	for (size_t k = 0; k < job->nreplicas; k++) {
		const struct place_replica *r = &job->replicas[k];
		bool some = false;
		for (size_t i = 0; i < nnodes && !some; i++) {
			struct place_node empty = scan_emptied(&nodes[i]);
			some = scan_fits(&empty, r, job->region, NULL);
		}
		if (!some)
			return (ssize_t)k;
	}
	return -1;
}

static inline bool scan_fits_when_empty(const struct place_node *nodes, size_t nnodes,
					const struct place_job *job)
{
	struct place_node *empty = xcalloc(nnodes + 1, sizeof(*empty));
	struct place_assignment *out = xcalloc(job->nreplicas + 1, sizeof(*out));
	size_t n = 0;

	for (size_t i = 0; i < nnodes; i++)	/* (its region's: the others cannot help) */
		if (scan_same(nodes[i].region, job->region))
			empty[n++] = scan_emptied(&nodes[i]);
	bool ok = scan_gang(empty, n, job, out) == 0;
	free(empty);
	free(out);
	return ok;
}

/*
 * Lower is better. Accelerator replicas go where the fewest matching GPUs
 * stay free afterwards (best fit: whole nodes stay whole for big replicas).
 * Plain replicas prefer nodes without accelerators, then GPU nodes, and a
 * TPU host last (a TPU replica needs the whole host, and a CPU replica
 * there can keep the next TPU job out: make run's pool is one GPU node and
 * one TPU host); then the fullest node.
 */
static inline int64_t scan_score(const struct place_node *n, const struct place_replica *r)
{
	if (r->tpu)
		return n->free_vcpus;
	if (r->accel_type && r->accel_count > 0)
		return (int64_t)(scan_popcount64(n->free_gpus) - r->accel_count) << 32 | (uint32_t)n->free_vcpus;
	int64_t cost = n->tpu_host ? 2 : n->accel_type && n->gpus ? 1 : 0;
	return cost << 40 | (uint32_t)n->free_vcpus;
}

static inline void scan_take(struct place_node *n, const struct place_replica *r, struct place_assignment *a,
			     size_t index)
{
	a->node = index;
	a->gpus = 0;
	n->free_vcpus -= r->vcpus;
	n->free_memory_mb -= r->memory_mb;
	if (r->tpu)
		n->tpu_busy = true;
	else if (r->accel_type && r->accel_count > 0) {
		a->gpus = scan_lowest_bits(n->free_gpus, r->accel_count);
		n->free_gpus &= ~a->gpus;
	}
}

static inline void scan_release(struct place_node *nodes, const struct place_replica *r,
				const struct place_assignment *a)
{
	struct place_node *n = &nodes[a->node];
	n->free_vcpus += r->vcpus;
	n->free_memory_mb += r->memory_mb;
	n->free_gpus |= a->gpus;
	if (r->tpu)
		n->tpu_busy = false;
}

/* Demand order: TPU, then most GPUs, then most vCPUs: hard replicas first. */
static inline int64_t scan_demand(const struct place_replica *r)
{
	return (int64_t)r->tpu << 50 | (int64_t)(r->accel_type ? r->accel_count : 0) << 32 |
	       (uint32_t)r->vcpus;
}

/* Tries to place the job's replicas in zone (NULL: anywhere in the region). */
static inline int scan_in(struct place_node *nodes, size_t nnodes, const struct place_job *job,
			  const char *zone, const size_t *order, struct place_assignment *out)
{
	size_t done;

	for (done = 0; done < job->nreplicas; done++) {
		size_t ri = order[done];
		const struct place_replica *r = &job->replicas[ri];
		size_t best = nnodes;
		int64_t best_score = 0;
		for (size_t i = 0; i < nnodes; i++) {
			if (!scan_fits(&nodes[i], r, job->region, zone))
				continue;
			int64_t s = scan_score(&nodes[i], r);
			if (best == nnodes || s < best_score) {
				best = i;
				best_score = s;
			}
		}
		if (best == nnodes)
			break;
		scan_take(&nodes[best], r, &out[ri], best);
	}
	if (done == job->nreplicas)
		return 0;
	while (done-- > 0)
		scan_release(nodes, &job->replicas[order[done]], &out[order[done]]);
	return -1;
}

/* Does the job use accelerators of more than one type? Then it needs one zone. */
static inline bool scan_needs_one_zone(const struct place_job *job)
{
	const char *first = NULL;
	for (size_t i = 0; i < job->nreplicas; i++) {
		const struct place_replica *r = &job->replicas[i];
		const char *t = r->tpu ? "TPU" : r->accel_count > 0 ? r->accel_type : NULL;
		if (!t)
			continue;
		if (first && strcmp(first, t))
			return true;
		first = t;
	}
	return false;
}

static inline int scan_by_demand(const void *a, const void *b, void *ctx)
{
	const struct place_job *job = ctx;
	int64_t da = scan_demand(&job->replicas[*(const size_t *)a]);
	int64_t db = scan_demand(&job->replicas[*(const size_t *)b]);
	if (da != db)
		return da > db ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static inline int scan_gang(struct place_node *nodes, size_t nnodes, const struct place_job *job,
			    struct place_assignment *out)
{
	size_t *order = xmalloc(job->nreplicas * sizeof(*order));
	int rc = -1;

	for (size_t i = 0; i < job->nreplicas; i++)
		order[i] = i;
	if (job->nreplicas > 1)
		qsort_r(order, job->nreplicas, sizeof(*order), scan_by_demand, (void *)job);
	if (!scan_needs_one_zone(job)) {
		rc = scan_in(nodes, nnodes, job, NULL, order, out);
	} else {
		/* Try each zone of the region that has a schedulable node. */
		for (size_t i = 0; i < nnodes && rc; i++) {
			const char *zone = nodes[i].zone;
			if (!scan_same(nodes[i].region, job->region))
				continue;
			bool seen = false;
			for (size_t k = 0; k < i && !seen; k++)
				seen = scan_same(nodes[k].region, job->region) && scan_same(nodes[k].zone, zone);
			if (!seen)
				rc = scan_in(nodes, nnodes, job, zone, order, out);
		}
	}
	free(order);
	return rc;
}

static inline size_t scan_queue(struct place_node *nodes, size_t nnodes, const struct place_job *jobs,
				size_t njobs, const int64_t *waited_usec, int64_t starve_usec,
				const size_t *offsets, struct place_assignment *out, bool *placed)
{
	const char **reserved = xcalloc(njobs + 1, sizeof(*reserved));
	size_t nreserved = 0, nplaced = 0;

	for (size_t j = 0; j < njobs; j++) {
		bool blocked = false;
		placed[j] = false;
		for (size_t k = 0; k < nreserved && !blocked; k++)
			blocked = scan_same(reserved[k], jobs[j].region);
		if (blocked)
			continue;
		if (!scan_gang(nodes, nnodes, &jobs[j], out + offsets[j])) {
			placed[j] = true;
			nplaced++;
		} else if (waited_usec[j] >= starve_usec &&
			   scan_fits_when_empty(nodes, nnodes, &jobs[j])) {
			/* (a gang no emptied region could hold would hold it for
			 * nothing: it waits, and the rest of its region runs) */
			reserved[nreserved++] = jobs[j].region;
		}
	}
	free(reserved);
	return nplaced;
}

#endif
