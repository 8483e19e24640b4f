#include "placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The index (issue 28). Each node that can be placed on (schedulable, with
 * a region) belongs to one group: its region, zone, accelerator type, TPU
 * host or not, and its class for plain replicas. Within a group it sits in
 * one bucket, by its free GPUs (0..64) and whether its TPU is busy, and a
 * bucket is a treap of its nodes ordered by (free vCPUs as the score reads
 * them, node index), each subtree knowing its largest free memory. The
 * best node of a bucket for a replica is then the leftmost one with enough
 * vCPUs and memory: O(log n). A replica looks at the buckets of its
 * region's matching groups in score order and stops at the first that
 * holds a node: the best score first, ties to the lowest index, as the scan
 * of every node did.
 *
 * The treaps are intrusive: one entry per node, indexed as the nodes are;
 * their priorities a hash of the index (deterministic).
 */

#define NIL UINT32_MAX
#define NGPU (PLACE_MAX_GPUS + 1)	/* free GPU counts: 0..64 */
#define NBUCKETS (2 * NGPU)		/* [TPU busy][free GPUs] */

/* Bit g set: the bucket of g free GPUs holds a node. */
__extension__ typedef unsigned __int128 gmask;

struct entry {
	uint32_t left, right, prio;
	uint32_t key;		/* (uint32_t)free_vcpus when linked */
	int64_t mem;		/* free_memory_mb when linked */
	int64_t maxmem;		/* the largest mem of the subtree */
	int32_t group;		/* -1: never placed on (unschedulable, no region) */
	int16_t bucket;		/* -1: in no treap */
};

struct group {
	const char *zone, *accel;
	bool tpu_host;
	int cost;		/* plain replicas': 0 no accelerator, 1 GPUs, 2 TPU host */
	uint32_t root[NBUCKETS];
	gmask nonempty[2];	/* [TPU busy] */
};

struct region {
	const char *name;
	size_t *groups, ngroups, groups_cap;
	/* Its zones in the order of their first node (NULL: nodes without a
	 * zone), schedulable or not: the order gangs of one zone try them. */
	const char **zones;
	size_t nzones, zones_cap;
	bool null_zone;
};

struct place_cluster {
	struct place_node *nodes;
	size_t n;
	struct entry *e;
	struct group *groups;
	size_t ngroups, groups_cap;
	struct region *regions;
	size_t nregions, regions_cap;
	size_t *scratch;	/* one query's groups */
	size_t scratch_cap;
	const struct region *last_region;
	struct place_cluster *empty;	/* the emptied copy, once asked for */
	bool owns_nodes;
};

static int popcount64(uint64_t v)
{
	return __builtin_popcountll(v);
}

static int ctz128(gmask m)
{
	uint64_t lo = (uint64_t)m;
	return lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll((uint64_t)(m >> 64));
}

/* The lowest n set bits of mask. */
static uint64_t lowest_bits(uint64_t mask, int n)
{
	uint64_t out = 0;
	while (n-- > 0 && mask) {
		uint64_t bit = mask & -mask;
		out |= bit;
		mask &= ~bit;
	}
	return out;
}

static bool same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* Same, NULL included (a group's key). */
static bool same_or_null(const char *a, const char *b)
{
	return a == b || same(a, b);
}

static void *grow(void *p, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? 2 * *cap : 4;
	return xrealloc(p, *cap * size);
}

/* A node as it would be with nothing placed on it. */
static struct place_node emptied(const struct place_node *n)
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

static int node_cost(const struct place_node *n)
{
	return n->tpu_host ? 2 : n->accel_type && n->gpus ? 1 : 0;
}

static int bucket_of(const struct place_node *n)
{
	return (n->tpu_busy ? NGPU : 0) + popcount64(n->free_gpus);
}

/* --- treaps ------------------------------------------------------------- */

static uint32_t hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

/* Whether entry a goes before entry b: by key, then node index. */
static bool before(const struct entry *e, uint32_t a, uint32_t b)
{
	return e[a].key < e[b].key || (e[a].key == e[b].key && a < b);
}

static void pull(struct entry *e, uint32_t t)
{
	int64_t m = e[t].mem;
	if (e[t].left != NIL && e[e[t].left].maxmem > m)
		m = e[e[t].left].maxmem;
	if (e[t].right != NIL && e[e[t].right].maxmem > m)
		m = e[e[t].right].maxmem;
	e[t].maxmem = m;
}

/* Splits t (x not in it) into the entries before x and those after. */
static void split(struct entry *e, uint32_t t, uint32_t x, uint32_t *l, uint32_t *r)
{
	if (t == NIL) {
		*l = *r = NIL;
		return;
	}
	if (before(e, t, x)) {
		split(e, e[t].right, x, &e[t].right, r);
		*l = t;
	} else {
		split(e, e[t].left, x, l, &e[t].left);
		*r = t;
	}
	pull(e, t);
}

/* Joins a and b, every entry of a before those of b. */
static uint32_t merge(struct entry *e, uint32_t a, uint32_t b)
{
	if (a == NIL)
		return b;
	if (b == NIL)
		return a;
	if (e[a].prio > e[b].prio) {
		e[a].right = merge(e, e[a].right, b);
		pull(e, a);
		return a;
	}
	e[b].left = merge(e, a, e[b].left);
	pull(e, b);
	return b;
}

static uint32_t insert(struct entry *e, uint32_t t, uint32_t x)
{
	if (t == NIL || e[x].prio > e[t].prio) {
		split(e, t, x, &e[x].left, &e[x].right);
		pull(e, x);
		return x;
	}
	if (before(e, x, t))
		e[t].left = insert(e, e[t].left, x);
	else
		e[t].right = insert(e, e[t].right, x);
	pull(e, t);
	return t;
}

static uint32_t erase(struct entry *e, uint32_t t, uint32_t x)
{
	if (t == x) {
		uint32_t m = merge(e, e[t].left, e[t].right);
		e[x].left = e[x].right = NIL;
		return m;
	}
	if (before(e, x, t))
		e[t].left = erase(e, e[t].left, x);
	else
		e[t].right = erase(e, e[t].right, x);
	pull(e, t);
	return t;
}

/* The first entry of t with a key in [lo, hi] and mem >= m, or NIL. */
static uint32_t find(const struct entry *e, uint32_t t, uint32_t lo, uint32_t hi, int64_t m)
{
	while (t != NIL && e[t].maxmem >= m) {
		if (e[t].key < lo) {
			t = e[t].right;
		} else if (e[t].key > hi) {
			t = e[t].left;
		} else {
			uint32_t x = find(e, e[t].left, lo, hi, m);
			if (x != NIL)
				return x;
			if (e[t].mem >= m)
				return t;
			t = e[t].right;
		}
	}
	return NIL;
}

/* --- the index ---------------------------------------------------------- */

static void link_node(struct place_cluster *cl, uint32_t i)
{
	struct entry *x = &cl->e[i];
	if (x->group < 0)
		return;
	const struct place_node *n = &cl->nodes[i];
	struct group *g = &cl->groups[x->group];
	int b = bucket_of(n);
	x->key = (uint32_t)n->free_vcpus;
	x->mem = n->free_memory_mb;
	x->maxmem = x->mem;
	x->left = x->right = NIL;
	x->bucket = (int16_t)b;
	g->root[b] = insert(cl->e, g->root[b], i);
	g->nonempty[b / NGPU] |= (gmask)1 << (b % NGPU);
}

static void unlink_node(struct place_cluster *cl, uint32_t i)
{
	struct entry *x = &cl->e[i];
	if (x->bucket < 0)
		return;
	struct group *g = &cl->groups[x->group];
	int b = x->bucket;
	g->root[b] = erase(cl->e, g->root[b], i);
	if (g->root[b] == NIL)
		g->nonempty[b / NGPU] &= ~((gmask)1 << (b % NGPU));
	x->bucket = -1;
}

/* The emptied copy follows a node whose size is not known: emptied, it
 * keeps the free capacity it has now. */
static void follow(struct place_cluster *cl, uint32_t i)
{
	struct place_cluster *em = cl->empty;
	if (!em || cl->nodes[i].total_vcpus > 0)
		return;
	unlink_node(em, i);
	em->nodes[i].free_vcpus = cl->nodes[i].free_vcpus;
	em->nodes[i].free_memory_mb = cl->nodes[i].free_memory_mb;
	link_node(em, i);
}

static struct region *region_named(struct place_cluster *cl, const char *name, bool add)
{
	for (size_t k = 0; k < cl->nregions; k++)
		if (same(cl->regions[k].name, name))
			return &cl->regions[k];
	if (!add)
		return NULL;
	cl->regions = grow(cl->regions, cl->nregions, &cl->regions_cap, sizeof(*cl->regions));
	struct region *rg = &cl->regions[cl->nregions++];
	memset(rg, 0, sizeof(*rg));
	rg->name = name;
	return rg;
}

static void note_zone(struct region *rg, const char *zone)
{
	if (!zone ? rg->null_zone : rg->nzones && same(rg->zones[rg->nzones - 1], zone))
		return;
	for (size_t k = 0; zone && k < rg->nzones; k++)
		if (same(rg->zones[k], zone))
			return;
	rg->zones = grow(rg->zones, rg->nzones, &rg->zones_cap, sizeof(*rg->zones));
	rg->zones[rg->nzones++] = zone;
	rg->null_zone = rg->null_zone || !zone;
}

static bool group_is(const struct group *g, const struct place_node *n)
{
	return same_or_null(g->zone, n->zone) && same_or_null(g->accel, n->accel_type) &&
	       g->tpu_host == n->tpu_host && g->cost == node_cost(n);
}

static int32_t group_of(struct place_cluster *cl, struct region *rg, const struct place_node *n)
{
	for (size_t k = rg->ngroups; k-- > 0;)	/* (the last one first: nodes come in runs) */
		if (group_is(&cl->groups[rg->groups[k]], n))
			return (int32_t)rg->groups[k];
	cl->groups = grow(cl->groups, cl->ngroups, &cl->groups_cap, sizeof(*cl->groups));
	struct group *g = &cl->groups[cl->ngroups];
	*g = (struct group){ n->zone, n->accel_type, n->tpu_host, node_cost(n), { 0 }, { 0, 0 } };
	for (int b = 0; b < NBUCKETS; b++)
		g->root[b] = NIL;
	rg->groups = grow(rg->groups, rg->ngroups, &rg->groups_cap, sizeof(*rg->groups));
	rg->groups[rg->ngroups++] = cl->ngroups;
	if (rg->ngroups > cl->scratch_cap) {
		cl->scratch_cap = rg->ngroups * 2;
		cl->scratch = xrealloc(cl->scratch, cl->scratch_cap * sizeof(*cl->scratch));
	}
	return (int32_t)cl->ngroups++;
}

struct place_cluster *place_cluster_new(struct place_node *nodes, size_t nnodes)
{
	struct place_cluster *cl = xcalloc(1, sizeof(*cl));
	struct region *rg = NULL;

	if (nnodes >= NIL)
		abort();	/* (4 billion nodes) */
	cl->nodes = nodes;
	cl->n = nnodes;
	cl->e = xcalloc(nnodes + 1, sizeof(*cl->e));
	for (uint32_t i = 0; i < nnodes; i++) {
		struct entry *x = &cl->e[i];
		const struct place_node *n = &nodes[i];
		*x = (struct entry){ NIL, NIL, hash32(i), 0, 0, 0, -1, -1 };
		if (!n->region)
			continue;	/* (no job's region matches none) */
		if (!rg || !same(rg->name, n->region))
			rg = region_named(cl, n->region, true);
		note_zone(rg, n->zone);
		if (!n->schedulable)
			continue;
		x->group = group_of(cl, rg, n);
		link_node(cl, i);
	}
	return cl;
}

/* A cluster of the nodes emptied, with nodes of its own. */
static struct place_cluster *emptied_cluster(const struct place_node *nodes, size_t nnodes)
{
	struct place_node *copy = xcalloc(nnodes + 1, sizeof(*copy));
	for (size_t i = 0; i < nnodes; i++)
		copy[i] = emptied(&nodes[i]);
	struct place_cluster *cl = place_cluster_new(copy, nnodes);
	cl->owns_nodes = true;
	return cl;
}

static struct place_cluster *empty_of(struct place_cluster *cl)
{
	if (!cl->empty)
		cl->empty = emptied_cluster(cl->nodes, cl->n);
	return cl->empty;
}

void place_cluster_free(struct place_cluster *cl)
{
	if (!cl)
		return;
	place_cluster_free(cl->empty);
	for (size_t k = 0; k < cl->nregions; k++) {
		free(cl->regions[k].groups);
		free(cl->regions[k].zones);
	}
	free(cl->regions);
	free(cl->groups);
	free(cl->scratch);
	free(cl->e);
	if (cl->owns_nodes)
		free(cl->nodes);
	free(cl);
}

static const struct region *job_region(struct place_cluster *cl, const char *name)
{
	if (cl->last_region && same(cl->last_region->name, name))
		return cl->last_region;
	const struct region *rg = region_named(cl, name, false);
	if (rg)
		cl->last_region = rg;
	return rg;
}

/* --- choosing a node ---------------------------------------------------- */

/* A range of keys, in the order they score. */
struct range {
	uint32_t lo, hi;
};

/*
 * The keys of free vCPUs >= v, in score order: as unsigned (a node
 * overcommitted, its free vCPUs below 0, scores last) or, for TPU
 * replicas, as signed.
 */
static size_t ranges_of(int v, bool as_signed, struct range out[2])
{
	if (v >= 0) {
		out[0] = (struct range){ (uint32_t)v, INT32_MAX };
		return 1;
	}
	out[as_signed ? 0 : 1] = (struct range){ (uint32_t)v, UINT32_MAX };
	out[as_signed ? 1 : 0] = (struct range){ 0, INT32_MAX };
	return 2;
}

struct pick {
	const struct range *ranges;
	size_t nranges;
	int64_t memory_mb;
	bool as_signed;
	uint32_t best;		/* NIL: none yet */
	int64_t best_rank;
};

/* The best entry of the treap t for the pick, if better than its best. */
static void try_bucket(const struct place_cluster *cl, uint32_t t, struct pick *p)
{
	for (size_t k = 0; k < p->nranges; k++) {
		uint32_t x = find(cl->e, t, p->ranges[k].lo, p->ranges[k].hi, p->memory_mb);
		if (x == NIL)
			continue;
		int64_t rank = p->as_signed ? (int64_t)(int32_t)cl->e[x].key : (int64_t)cl->e[x].key;
		if (p->best == NIL || rank < p->best_rank || (rank == p->best_rank && x < p->best)) {
			p->best = x;
			p->best_rank = rank;
		}
		return;
	}
}

static void try_buckets(const struct place_cluster *cl, const struct group *g, int busy, gmask m,
			struct pick *p)
{
	while (m) {
		int b = ctz128(m);
		m &= m - 1;
		try_bucket(cl, g->root[busy * NGPU + b], p);
	}
}

static bool in_zone(const struct group *g, const char *zone)
{
	return !zone || same(g->zone, zone);
}

/*
 * The node for replica r in region rg (and zone, unless NULL), or NIL: the
 * lowest score, then the lowest node index. Accelerator replicas go where
 * the fewest matching GPUs stay free afterwards (best fit: whole nodes stay
 * whole for big replicas), then the fewest free vCPUs. Plain replicas
 * prefer nodes without accelerators, then GPU nodes, and a TPU host last (a
 * TPU replica needs the whole host, and a CPU replica there can keep the
 * next TPU job out: make run's pool is one GPU node and one TPU host); then
 * the fullest node. A TPU replica takes the free TPU host with the fewest
 * free vCPUs.
 */
static uint32_t choose(struct place_cluster *cl, const struct region *rg, const char *zone,
		       const struct place_replica *r)
{
	struct range ranges[2];
	struct pick p = { ranges, 0, r->memory_mb, r->tpu, NIL, 0 };

	if (!rg)
		return NIL;
	p.nranges = ranges_of(r->vcpus, r->tpu, ranges);
	if (r->tpu) {
		for (size_t k = 0; k < rg->ngroups; k++) {
			const struct group *g = &cl->groups[rg->groups[k]];
			if (g->tpu_host && in_zone(g, zone))
				try_buckets(cl, g, 0, g->nonempty[0], &p);
		}
		return p.best;
	}
	if (r->accel_type && r->accel_count > 0) {
		size_t ng = 0;
		gmask any = 0;
		if (r->accel_count >= NGPU)
			return NIL;
		for (size_t k = 0; k < rg->ngroups; k++) {
			const struct group *g = &cl->groups[rg->groups[k]];
			if (same(g->accel, r->accel_type) && in_zone(g, zone)) {
				cl->scratch[ng++] = rg->groups[k];
				any |= g->nonempty[0] | g->nonempty[1];
			}
		}
		any &= ~(((gmask)1 << r->accel_count) - 1);
		while (any) {	/* free GPUs, fewest first */
			int b = ctz128(any);
			any &= any - 1;
			for (size_t k = 0; k < ng; k++) {
				const struct group *g = &cl->groups[cl->scratch[k]];
				for (int busy = 0; busy < 2; busy++)
					if (g->nonempty[busy] >> b & 1)
						try_bucket(cl, g->root[busy * NGPU + b], &p);
			}
			if (p.best != NIL)
				return p.best;
		}
		return NIL;
	}
	for (int cost = 0; cost < 3; cost++) {
		for (size_t k = 0; k < rg->ngroups; k++) {
			const struct group *g = &cl->groups[rg->groups[k]];
			if (g->cost != cost || !in_zone(g, zone))
				continue;
			try_buckets(cl, g, 0, g->nonempty[0], &p);
			try_buckets(cl, g, 1, g->nonempty[1], &p);
		}
		if (p.best != NIL)
			return p.best;
	}
	return NIL;
}

static void take(struct place_cluster *cl, uint32_t i, const struct place_replica *r,
		 struct place_assignment *a)
{
	struct place_node *n = &cl->nodes[i];

	unlink_node(cl, i);
	a->node = i;
	a->gpus = 0;
	n->free_vcpus -= r->vcpus;
	n->free_memory_mb -= r->memory_mb;
	if (r->tpu)
		n->tpu_busy = true;
	else if (r->accel_type && r->accel_count > 0) {
		a->gpus = lowest_bits(n->free_gpus, r->accel_count);
		n->free_gpus &= ~a->gpus;
	}
	link_node(cl, i);
	follow(cl, i);
}

void place_release(struct place_node *nodes, const struct place_replica *r,
		   const struct place_assignment *a)
{
	struct place_node *n = &nodes[a->node];
	n->free_vcpus += r->vcpus;
	n->free_memory_mb += r->memory_mb;
	n->free_gpus |= a->gpus;
	if (r->tpu)
		n->tpu_busy = false;
}

bool place_node_fits(const struct place_node *n, const struct place_replica *r)
{
	if (!n->schedulable || n->free_vcpus < r->vcpus || n->free_memory_mb < r->memory_mb)
		return false;
	if (r->tpu)
		return n->tpu_host && !n->tpu_busy;
	if (r->accel_type && r->accel_count > 0)
		return same(n->accel_type, r->accel_type) && popcount64(n->free_gpus) >= r->accel_count;
	return true;
}

void place_node_take(struct place_node *n, const struct place_replica *r, uint64_t *gpus)
{
	uint64_t got = 0;
	n->free_vcpus -= r->vcpus;
	n->free_memory_mb -= r->memory_mb;
	if (r->tpu)
		n->tpu_busy = true;
	else if (r->accel_type && r->accel_count > 0)
		got = lowest_bits(n->free_gpus, r->accel_count);
	n->free_gpus &= ~got;
	if (gpus)
		*gpus = got;
}

void place_cluster_hold(struct place_cluster *cl, size_t node)
{
	if (node >= cl->n)
		return;
	unlink_node(cl, (uint32_t)node);
	cl->e[node].group = -1;	/* (and never linked again) */
}

void place_cluster_release(struct place_cluster *cl, const struct place_replica *r,
			   const struct place_assignment *a)
{
	uint32_t i = (uint32_t)a->node;
	unlink_node(cl, i);
	place_release(cl->nodes, r, a);
	link_node(cl, i);
	follow(cl, i);
}

/* Demand order: TPU, then most GPUs, then most vCPUs: hard replicas first. */
static int64_t demand(const struct place_replica *r)
{
	return (int64_t)r->tpu << 50 | (int64_t)(r->accel_type ? r->accel_count : 0) << 32 |
	       (uint32_t)r->vcpus;
}

/* Tries to place the job's replicas in zone (NULL: anywhere in the region). */
static int place_in(struct place_cluster *cl, const struct region *rg, const struct place_job *job,
		    const char *zone, const size_t *order, struct place_assignment *out)
{
	size_t done;

	for (done = 0; done < job->nreplicas; done++) {
		size_t ri = order[done];
		uint32_t best = choose(cl, rg, zone, &job->replicas[ri]);
		if (best == NIL)
			break;
		take(cl, best, &job->replicas[ri], &out[ri]);
	}
	if (done == job->nreplicas)
		return 0;
	while (done-- > 0)
		place_cluster_release(cl, &job->replicas[order[done]], &out[order[done]]);
	return -1;
}

bool place_needs_one_zone(const struct place_job *job)
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

static int by_demand(const void *a, const void *b, void *ctx)
{
	const struct place_job *job = ctx;
	int64_t da = demand(&job->replicas[*(const size_t *)a]);
	int64_t db = demand(&job->replicas[*(const size_t *)b]);
	if (da != db)
		return da > db ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

void place_demand_order(const struct place_job *job, size_t *order)
{
	for (size_t i = 0; i < job->nreplicas; i++)
		order[i] = i;
	if (job->nreplicas > 1)
		qsort_r(order, job->nreplicas, sizeof(*order), by_demand, (void *)job);
}

int place_cluster_gang(struct place_cluster *cl, const struct place_job *job,
		       struct place_assignment *out)
{
	size_t small[16];
	size_t *order = job->nreplicas <= 16 ? small : xmalloc(job->nreplicas * sizeof(*order));
	const struct region *rg = job_region(cl, job->region);
	int rc = -1;

	place_demand_order(job, order);
	if (!place_needs_one_zone(job)) {
		rc = place_in(cl, rg, job, NULL, order, out);
	} else {
		/* Try each zone of the region, in the order of its first node
		 * (a node without a zone: anywhere in the region). */
		for (size_t k = 0; rg && k < rg->nzones && rc; k++)
			rc = place_in(cl, rg, job, rg->zones[k], order, out);
	}
	if (order != small)
		free(order);
	return rc;
}

ssize_t place_cluster_never_fits(struct place_cluster *cl, const struct place_job *job)
{
	struct place_cluster *em = empty_of(cl);
	const struct region *rg = job_region(em, job->region);

	for (size_t k = 0; k < job->nreplicas; k++)
		if (choose(em, rg, NULL, &job->replicas[k]) == NIL)
			return (ssize_t)k;
	return -1;
}

bool place_cluster_fits_when_empty(struct place_cluster *cl, const struct place_job *job)
{
	struct place_cluster *em = empty_of(cl);
	struct place_assignment *out = xcalloc(job->nreplicas + 1, sizeof(*out));
	bool ok = place_cluster_gang(em, job, out) == 0;

	if (ok)		/* (and empty again) */
		for (size_t k = 0; k < job->nreplicas; k++)
			place_cluster_release(em, &job->replicas[k], &out[k]);
	free(out);
	return ok;
}

size_t place_cluster_queue(struct place_cluster *cl, const struct place_job *jobs, size_t njobs,
			   const int64_t *waited_usec, int64_t starve_usec, const size_t *offsets,
			   struct place_assignment *out, bool *placed)
{
	const char **reserved = xcalloc(njobs + 1, sizeof(*reserved));
	size_t nreserved = 0, nplaced = 0;

	for (size_t j = 0; j < njobs; j++) {
		bool blocked = false;
		placed[j] = false;
		for (size_t k = 0; k < nreserved && !blocked; k++)
			blocked = same(reserved[k], jobs[j].region);
		if (blocked)
			continue;
		if (!place_cluster_gang(cl, &jobs[j], out + offsets[j])) {
			placed[j] = true;
			nplaced++;
		} else if (waited_usec[j] >= starve_usec &&
			   place_cluster_fits_when_empty(cl, &jobs[j])) {
			/* (a gang no emptied region could hold would hold it for
			 * nothing: it waits, and the rest of its region runs) */
			reserved[nreserved++] = jobs[j].region;
		}
	}
	free(reserved);
	return nplaced;
}

/* --- over a bare node array: a cluster for the one call ------------------ */

int place_gang(struct place_node *nodes, size_t nnodes, const struct place_job *job,
	       struct place_assignment *out)
{
	struct place_cluster *cl = place_cluster_new(nodes, nnodes);
	int rc = place_cluster_gang(cl, job, out);
	place_cluster_free(cl);
	return rc;
}

ssize_t place_never_fits(const struct place_node *nodes, size_t nnodes,
			 const struct place_job *job)
{
	struct place_cluster *cl = place_cluster_new(NULL, 0);
	cl->empty = emptied_cluster(nodes, nnodes);
	ssize_t k = place_cluster_never_fits(cl, job);
	place_cluster_free(cl);
	return k;
}

bool place_fits_when_empty(const struct place_node *nodes, size_t nnodes,
			   const struct place_job *job)
{
	struct place_cluster *cl = place_cluster_new(NULL, 0);
	cl->empty = emptied_cluster(nodes, nnodes);
	bool ok = place_cluster_fits_when_empty(cl, job);
	place_cluster_free(cl);
	return ok;
}

size_t place_queue(struct place_node *nodes, size_t nnodes, const struct place_job *jobs,
		   size_t njobs, const int64_t *waited_usec, int64_t starve_usec,
		   const size_t *offsets, struct place_assignment *out, bool *placed)
{
	struct place_cluster *cl = place_cluster_new(nodes, nnodes);
	size_t n = place_cluster_queue(cl, jobs, njobs, waited_usec, starve_usec, offsets, out,
				       placed);
	place_cluster_free(cl);
	return n;
}

/* --- the check of the tests --------------------------------------------- */

/* Checks the treap t of group gi, bucket b; counts its entries into *count. */
static int check_treap(const struct place_cluster *cl, uint32_t t, int32_t gi, int b, uint32_t *prev,
		       size_t *count, char *why, size_t whylen)
{
	const struct entry *e = cl->e;
	if (t == NIL)
		return 0;
	if (t >= cl->n) {
		snprintf(why, whylen, "group %d bucket %d: entry %u out of range", gi, b, t);
		return -1;
	}
	if (check_treap(cl, e[t].left, gi, b, prev, count, why, whylen))
		return -1;
	int64_t m = e[t].mem;
	for (int side = 0; side < 2; side++) {
		uint32_t c = side ? e[t].right : e[t].left;
		if (c == NIL)
			continue;
		if (e[c].prio > e[t].prio) {
			snprintf(why, whylen, "node %u: child %u of a higher priority", t, c);
			return -1;
		}
		if (e[c].maxmem > m)
			m = e[c].maxmem;
	}
	if (m != e[t].maxmem) {
		snprintf(why, whylen, "node %u: maxmem %lld, its subtree's %lld", t,
			 (long long)e[t].maxmem, (long long)m);
		return -1;
	}
	if (e[t].group != gi || e[t].bucket != b) {
		snprintf(why, whylen, "node %u in group %d bucket %d, says %d/%d", t, gi, b,
			 e[t].group, e[t].bucket);
		return -1;
	}
	if (*prev != NIL && !before(e, *prev, t)) {
		snprintf(why, whylen, "group %d bucket %d: node %u after %u out of order", gi, b, t,
			 *prev);
		return -1;
	}
	*prev = t;
	++*count;
	return check_treap(cl, e[t].right, gi, b, prev, count, why, whylen);
}

int place_cluster_check(const struct place_cluster *cl, char *why, size_t whylen)
{
	size_t linked = 0, in_trees = 0;

	for (uint32_t i = 0; i < cl->n; i++) {
		const struct place_node *n = &cl->nodes[i];
		const struct entry *x = &cl->e[i];
		if (!n->region || !n->schedulable) {
			if (x->group >= 0 || x->bucket >= 0) {
				snprintf(why, whylen, "node %u (%s) indexed, cannot be placed on", i,
					 n->name ? n->name : "?");
				return -1;
			}
			continue;
		}
		linked++;
		if (x->group < 0 || (size_t)x->group >= cl->ngroups ||
		    !group_is(&cl->groups[x->group], n) || x->bucket != bucket_of(n) ||
		    x->key != (uint32_t)n->free_vcpus || x->mem != n->free_memory_mb) {
			snprintf(why, whylen, "node %u (%s): indexed as group %d bucket %d key %u mem "
				 "%lld, is bucket %d vcpus %d mem %lld", i, n->name ? n->name : "?",
				 x->group, x->bucket, x->key, (long long)x->mem, bucket_of(n),
				 n->free_vcpus, (long long)n->free_memory_mb);
			return -1;
		}
		bool found = false;
		for (size_t k = 0; k < cl->nregions && !found; k++)
			for (size_t j = 0; j < cl->regions[k].ngroups && !found; j++)
				found = cl->regions[k].groups[j] == (size_t)x->group &&
					same(cl->regions[k].name, n->region);
		if (!found) {
			snprintf(why, whylen, "node %u: its group is not its region's", i);
			return -1;
		}
		if (cl->empty && cl->empty->n == cl->n) {
			struct place_node want = emptied(n);
			const struct place_node *has = &cl->empty->nodes[i];
			if (has->free_vcpus != want.free_vcpus ||
			    has->free_memory_mb != want.free_memory_mb ||
			    has->free_gpus != want.free_gpus || has->tpu_busy) {
				snprintf(why, whylen, "node %u: its emptied copy is not empty", i);
				return -1;
			}
		}
	}
	for (size_t gi = 0; gi < cl->ngroups; gi++) {
		const struct group *g = &cl->groups[gi];
		for (int b = 0; b < NBUCKETS; b++) {
			uint32_t prev = NIL;
			if (check_treap(cl, g->root[b], (int32_t)gi, b, &prev, &in_trees, why, whylen))
				return -1;
			if ((g->root[b] != NIL) != (bool)(g->nonempty[b / NGPU] >> (b % NGPU) & 1)) {
				snprintf(why, whylen, "group %zu bucket %d: its mask bit is wrong", gi, b);
				return -1;
			}
		}
	}
	if (in_trees != linked) {
		snprintf(why, whylen, "%zu nodes in the treaps, %zu to place on", in_trees, linked);
		return -1;
	}
	return cl->empty ? place_cluster_check(cl->empty, why, whylen) : 0;
}
