#include "policy.h"

#include <stdlib.h>
#include <string.h>

static bool same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

bool policy_may_preempt(bool spot, int priority, const struct policy_running *r,
			int preempt_below)
{
	if (r->stopping)
		return false;
	if (r->spot && !spot)
		return true;
	/* The operator's preemptible class: lower priority, and never a SPOT
	 * job taking a non-SPOT one's place. */
	return r->priority < preempt_below && r->priority < priority && (!spot || r->spot);
}

static int running_gpus(const struct policy_running *r)
{
	int n = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->replicas[i].accel_type && !r->replicas[i].tpu)
			n += r->replicas[i].accel_count;
		else if (r->replicas[i].tpu)
			n += 8;	/* a TPU host counts as a big accelerator node */
	return n;
}

/* --- victims ------------------------------------------------------------- */

/* The region's nodes, copied, with a map from the pass's indices. */
struct region_nodes {
	struct place_node *v;
	size_t n;
	ssize_t *local;		/* pass index -> index in v, or -1 */
	size_t *global;		/* index in v -> pass index */
};

static void region_nodes_init(struct region_nodes *rn, const struct place_node *nodes,
			      size_t nnodes, const char *region)
{
	rn->v = xcalloc(nnodes + 1, sizeof(*rn->v));
	rn->local = xcalloc(nnodes + 1, sizeof(*rn->local));
	rn->global = xcalloc(nnodes + 1, sizeof(*rn->global));
	rn->n = 0;
	for (size_t i = 0; i < nnodes; i++) {
		rn->local[i] = -1;
		if (!same(nodes[i].region, region))
			continue;
		rn->local[i] = (ssize_t)rn->n;
		rn->global[rn->n] = i;
		rn->v[rn->n++] = nodes[i];
	}
}

static void region_nodes_free(struct region_nodes *rn)
{
	free(rn->v);
	free(rn->local);
	free(rn->global);
}

/* Gives r's resources back in work (a copy of the region's nodes). */
static void release_running(struct place_node *work, const struct region_nodes *rn,
			    const struct policy_running *r)
{
	for (size_t i = 0; i < r->n; i++) {
		if (r->on_node && !r->on_node[i])
			continue;
		ssize_t l = rn->local[r->as[i].node];
		if (l < 0)
			continue;
		struct place_assignment a = { (size_t)l, r->as[i].gpus };
		place_release(work, &r->replicas[i], &a);
	}
}

/*
 * work = the region's nodes as the pass has them, the nodes held for
 * earlier preemptors closed (held: by pass index, may be NULL), with
 * extra[0..nextra) but extra[skip] released, and the jobs of release
 * (by running index, may be NULL) too.
 */
static void build_work(struct place_node *work, const struct region_nodes *rn, const bool *held,
		       const struct policy_running *running, const bool *release, size_t nrunning,
		       const size_t *extra, size_t nextra, size_t skip)
{
	memcpy(work, rn->v, rn->n * sizeof(*work));
	for (size_t l = 0; held && l < rn->n; l++)
		if (held[rn->global[l]])
			work[l].schedulable = false;
	for (size_t i = 0; release && i < nrunning; i++)
		if (release[i])
			release_running(work, rn, &running[i]);
	for (size_t i = 0; i < nextra; i++)
		if (i != skip)
			release_running(work, rn, &running[extra[i]]);
}

struct cost_ctx {
	const struct policy_running *running;
};

/* Cheapest first: fewest GPUs, lowest priority, youngest. */
static int by_cost(const void *a, const void *b, void *ctx)
{
	const struct policy_running *run = ((struct cost_ctx *)ctx)->running;
	const struct policy_running *x = &run[*(const size_t *)a], *y = &run[*(const size_t *)b];
	int gx = running_gpus(x), gy = running_gpus(y);

	if (gx != gy)
		return gx < gy ? -1 : 1;
	if (x->priority != y->priority)
		return x->priority < y->priority ? -1 : 1;
	if (x->age_us != y->age_us)
		return x->age_us < y->age_us ? -1 : 1;
	return x->id > y->id ? -1 : x->id < y->id;
}

/* The candidates with a replica on each of the region's nodes (local index). */
struct by_node {
	size_t *first;		/* rn.n + 1 offsets into list */
	size_t *list;		/* candidate indices (into running), cheapest first per node */
};

static void by_node_init(struct by_node *bn, const struct region_nodes *rn,
			 const struct policy_running *running, const size_t *cand, size_t ncand)
{
	size_t total = 0;
	bn->first = xcalloc(rn->n + 2, sizeof(*bn->first));
	for (size_t k = 0; k < ncand; k++)
		for (size_t i = 0; i < running[cand[k]].n; i++)
			total++;
	bn->list = xcalloc(total + 1, sizeof(*bn->list));
	/* count, offsets, fill: cand is cheapest first, so each node's list is too */
	size_t *count = xcalloc(rn->n + 1, sizeof(*count));
	for (size_t k = 0; k < ncand; k++) {
		const struct policy_running *r = &running[cand[k]];
		for (size_t i = 0; i < r->n; i++)
			if ((!r->on_node || r->on_node[i]) && rn->local[r->as[i].node] >= 0)
				count[rn->local[r->as[i].node]]++;
	}
	for (size_t l = 0; l < rn->n; l++)
		bn->first[l + 1] = bn->first[l] + count[l];
	memset(count, 0, (rn->n + 1) * sizeof(*count));
	for (size_t k = 0; k < ncand; k++) {
		const struct policy_running *r = &running[cand[k]];
		for (size_t i = 0; i < r->n; i++) {
			if ((r->on_node && !r->on_node[i]) || rn->local[r->as[i].node] < 0)
				continue;
			size_t l = (size_t)rn->local[r->as[i].node];
			bn->list[bn->first[l] + count[l]++] = cand[k];
		}
	}
	free(count);
}

static void by_node_free(struct by_node *bn)
{
	free(bn->first);
	free(bn->list);
}

/* Gives back, on the copy t of local node l alone, what victim r holds there. */
static void release_on(struct place_node *t, size_t l, const struct region_nodes *rn,
		       const struct policy_running *r)
{
	for (size_t i = 0; i < r->n; i++)
		if ((!r->on_node || r->on_node[i]) && rn->local[r->as[i].node] == (ssize_t)l) {
			struct place_assignment a = { 0, r->as[i].gpus };
			place_release(t, &r->replicas[i], &a);
		}
}



/*
 * Victims node by node: each replica of the job (the hardest first) goes to
 * the node of its region where the cheapest victims (fewest GPUs lost, then
 * fewest jobs) make it fit, or where it fits already; a victim frees all of
 * its replicas (gangs go whole), which the next replicas may use. Then the
 * gang is placed for real on the region with every victim gone (zones and
 * all), and victims it fits without are spared, the most expensive first.
 */
static size_t pick(const struct place_node *nodes, size_t nnodes, const bool *held,
		   const struct policy_job *job, const struct policy_running *running, size_t nrunning,
		   const size_t *cand, size_t ncand, size_t *chosen, struct place_assignment *out)
{
	struct region_nodes rn;
	struct by_node bn;
	struct place_assignment *tmp = xcalloc(job->pj.nreplicas + 1, sizeof(*tmp));
	size_t *order = xmalloc((ncand + 1) * sizeof(*order));
	size_t *ridx = xmalloc((job->pj.nreplicas + 1) * sizeof(*ridx));
	bool *taken = xcalloc(nrunning + 1, sizeof(*taken));
	size_t *set = xcalloc(ncand + 1, sizeof(*set));
	size_t n = 0;

	region_nodes_init(&rn, nodes, nnodes, job->pj.region);
	struct place_node *work = xcalloc(rn.n + 1, sizeof(*work));
	memcpy(order, cand, ncand * sizeof(*order));	/* (cheapest first: the caller's) */
	struct cost_ctx ctx = { running };
	by_node_init(&bn, &rn, running, order, ncand);
	build_work(work, &rn, held, running, NULL, nrunning, NULL, 0, 0);
	place_demand_order(&job->pj, ridx);

	for (size_t k = 0; k < job->pj.nreplicas; k++) {
		const struct place_replica *r = &job->pj.replicas[ridx[k]];
		ssize_t best = -1;
		int64_t best_gpus = 0;
		size_t best_count = 0, nset = 0;
		for (size_t l = 0; l < rn.n; l++) {
			if (place_node_fits(&work[l], r)) {
				best = (ssize_t)l;
				best_count = 0;
				break;	/* nothing to lose */
			}
			struct place_node t = work[l];
			int64_t lost = 0;
			size_t cnt = 0;
			bool fit = false;
			for (size_t e = bn.first[l]; e < bn.first[l + 1] && !fit; e++) {
				size_t v = bn.list[e];
				if (taken[v] || (e > bn.first[l] && bn.list[e - 1] == v))
					continue;
				release_on(&t, l, &rn, &running[v]);
				lost += running_gpus(&running[v]);
				cnt++;
				fit = place_node_fits(&t, r);
			}
			if (fit && (best < 0 || lost < best_gpus || (lost == best_gpus && cnt < best_count))) {
				best = (ssize_t)l;
				best_gpus = lost;
				best_count = cnt;
			}
		}
		if (best < 0) {
			n = 0;
			goto out;
		}
		/* Take the best node's victims (again, in the same order), then the replica. */
		struct place_node t = work[best];
		nset = 0;
		for (size_t e = bn.first[best]; e < bn.first[best + 1] && nset < best_count &&
		     !place_node_fits(&t, r); e++) {
			size_t v = bn.list[e];
			if (taken[v] || (e > bn.first[best] && bn.list[e - 1] == v))
				continue;
			release_on(&t, (size_t)best, &rn, &running[v]);
			set[nset++] = v;
		}
		for (size_t e = 0; e < nset; e++) {
			taken[set[e]] = true;
			chosen[n++] = set[e];
			release_running(work, &rn, &running[set[e]]);
		}
		tmp[ridx[k]].node = (size_t)best;
		place_node_take(&work[best], r, &tmp[ridx[k]].gpus);
	}
	/*
	 * The greedy's nodes are a placement already, unless the job needs one
	 * zone (accelerators of several types) or a victim that was a gang
	 * freed more than the node it was chosen for, which may spare others:
	 * then the gang is placed for real on the region with the victims
	 * gone, and each victim it fits without is spared, the most expensive
	 * first.
	 */
	bool gangs = false;
	for (size_t k = 0; k < n && !gangs; k++)
		gangs = running[chosen[k]].n > 1;
	if (!gangs && !place_needs_one_zone(&job->pj))
		goto done;
	qsort_r(chosen, n, sizeof(*chosen), by_cost, &ctx);
	for (size_t k = n; gangs && k-- > 0;) {
		build_work(work, &rn, held, running, NULL, nrunning, chosen, n, k);
		if (place_gang(work, rn.n, &job->pj, tmp) == 0) {
			memmove(&chosen[k], &chosen[k + 1], (n - k - 1) * sizeof(*chosen));
			n--;
		}
	}
	build_work(work, &rn, held, running, NULL, nrunning, chosen, n, n);
	if (place_gang(work, rn.n, &job->pj, tmp) != 0) {
		n = 0;	/* (one zone for several types, say: this job waits) */
		goto out;
	}
done:
	for (size_t i = 0; i < job->pj.nreplicas; i++)
		out[i] = (struct place_assignment){ rn.global[tmp[i].node], tmp[i].gpus };
out:
	by_node_free(&bn);
	free(work);
	free(order);
	free(ridx);
	free(taken);
	free(set);
	free(tmp);
	region_nodes_free(&rn);
	return n;
}

size_t policy_pick_victims(const struct place_node *nodes, size_t nnodes,
			   const struct policy_job *job, const struct policy_running *running,
			   const size_t *cand, size_t ncand, size_t *chosen,
			   struct place_assignment *out)
{
	size_t nrunning = 0;
	size_t *sorted = xmalloc((ncand + 1) * sizeof(*sorted));
	for (size_t i = 0; i < ncand; i++)
		if (cand[i] + 1 > nrunning)
			nrunning = cand[i] + 1;
	memcpy(sorted, cand, ncand * sizeof(*sorted));
	struct cost_ctx ctx = { running };
	qsort_r(sorted, ncand, sizeof(*sorted), by_cost, &ctx);
	size_t n = pick(nodes, nnodes, NULL, job, running, nrunning, sorted, ncand, chosen, out);
	free(sorted);
	return n;
}

/*
 * Whether what was being stopped when the pass began (stopping0) makes room
 * for job, on nodes no earlier preemptor holds: then out is where it goes.
 */
static bool fits_after_stops(const struct place_node *nodes, size_t nnodes, const bool *held,
			     const struct policy_job *job, const struct policy_running *running,
			     size_t nrunning, const bool *stopping0, struct place_assignment *out)
{
	struct region_nodes rn;
	region_nodes_init(&rn, nodes, nnodes, job->pj.region);
	struct place_node *work = xcalloc(rn.n + 1, sizeof(*work));
	struct place_assignment *tmp = xcalloc(job->pj.nreplicas + 1, sizeof(*tmp));
	build_work(work, &rn, held, running, stopping0, nrunning, NULL, 0, 0);
	bool fit = place_gang(work, rn.n, &job->pj, tmp) == 0;
	for (size_t i = 0; fit && i < job->pj.nreplicas; i++)
		out[i] = (struct place_assignment){ rn.global[tmp[i].node], tmp[i].gpus };
	free(work);
	free(tmp);
	region_nodes_free(&rn);
	return fit;
}

/* Could r's resources help job at all: a replica of it on a node of a kind job uses. */
static bool relevant(const struct place_node *nodes, const struct policy_running *r,
		     const struct policy_job *job)
{
	for (size_t k = 0; k < job->pj.nreplicas; k++) {
		const struct place_replica *jr = &job->pj.replicas[k];
		for (size_t i = 0; i < r->n; i++) {
			if (r->on_node && !r->on_node[i])
				continue;
			const struct place_node *n = &nodes[r->as[i].node];
			if (jr->tpu ? n->tpu_host :
			    jr->accel_type && jr->accel_count > 0 ? same(n->accel_type, jr->accel_type) :
			    true)
				return true;
		}
	}
	return false;
}

/* --- usage: quotas and fair share ------------------------------------------ */

struct project_use {
	const char *name;
	double weight;
	double gpus, vcpus, memory_mb;
	double share;		/* share()'s value, kept as use changes */
	ssize_t uses;		/* the project's first region_use, -1: none */
};

struct region_use {
	size_t project;
	const char *region;
	enum quota_class qclass;
	struct quota_amounts used;
	ssize_t next;		/* the project's next one, -1: none */
};

struct usage {
	struct project_use *p;
	size_t np;
	struct region_use *r;
	size_t nr, cap;
	double total_gpus, total_vcpus, total_memory_mb;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct project_use *)a)->name, ((const struct project_use *)b)->name);
}

static size_t project_index(const struct usage *u, const char *name)
{
	struct project_use key = { .name = name };
	const struct project_use *p = bsearch(&key, u->p, u->np, sizeof(*u->p), by_name);
	return p ? (size_t)(p - u->p) : 0;
}

static struct quota_amounts *region_use(struct usage *u, size_t project, const char *region,
					enum quota_class c)
{
	for (ssize_t i = u->p[project].uses; i >= 0; i = u->r[i].next)
		if (u->r[i].qclass == c && (u->r[i].region == region || same(u->r[i].region, region)))
			return &u->r[i].used;
	if (u->nr == u->cap) {
		u->cap = u->cap ? 2 * u->cap : 16;
		u->r = xrealloc(u->r, u->cap * sizeof(*u->r));
	}
	u->r[u->nr] = (struct region_use){ project, region, c, { 0 }, u->p[project].uses };
	u->p[project].uses = (ssize_t)u->nr;
	return &u->r[u->nr++].used;
}

static double share_of(const struct usage *u, size_t project);

static void add_replica_use(struct usage *u, size_t project, const char *region,
			    enum quota_class c, const struct place_replica *r, int sign)
{
	struct quota_amounts *a = region_use(u, project, region, c);
	quota_amounts_add(a, QUOTA_CPUS, sign * r->vcpus);
	if (r->accel_type && r->accel_count > 0)
		quota_amounts_add(a, r->accel_type, sign * r->accel_count);
	struct project_use *p = &u->p[project];
	if (r->accel_type && !r->tpu)
		p->gpus += sign * r->accel_count;
	p->vcpus += sign * r->vcpus;
	p->memory_mb += sign * (double)r->memory_mb;
	p->share = share_of(u, project);
}

static double share_of(const struct usage *u, size_t project)
{
	const struct project_use *p = &u->p[project];
	double s = 0;
	if (u->total_gpus > 0 && p->gpus / u->total_gpus > s)
		s = p->gpus / u->total_gpus;
	if (u->total_vcpus > 0 && p->vcpus / u->total_vcpus > s)
		s = p->vcpus / u->total_vcpus;
	if (u->total_memory_mb > 0 && p->memory_mb / u->total_memory_mb > s)
		s = p->memory_mb / u->total_memory_mb;
	return s / p->weight;
}

static void usage_init(struct usage *u, const struct place_node *nodes, size_t nnodes,
		       const struct policy_job *jobs, size_t njobs,
		       const struct policy_running *running, size_t nrunning,
		       const struct quotas *q)
{
	memset(u, 0, sizeof(*u));
	u->p = xcalloc(njobs + nrunning + 1, sizeof(*u->p));
	for (size_t i = 0; i < njobs; i++)
		u->p[u->np++].name = jobs[i].project;
	for (size_t i = 0; i < nrunning; i++)
		u->p[u->np++].name = running[i].project;
	qsort(u->p, u->np, sizeof(*u->p), by_name);
	size_t k = 0;
	for (size_t i = 0; i < u->np; i++)
		if (!k || strcmp(u->p[k - 1].name, u->p[i].name))
			u->p[k++] = u->p[i];
	u->np = k;
	for (size_t i = 0; i < u->np; i++) {
		u->p[i].weight = quotas_weight(q, u->p[i].name);
		u->p[i].uses = -1;
	}
	for (size_t i = 0; i < nnodes; i++) {
		if (!nodes[i].schedulable)
			continue;
		if (nodes[i].accel_type && !nodes[i].tpu_host)
			u->total_gpus += nodes[i].gpus;
		u->total_vcpus += nodes[i].total_vcpus;
		u->total_memory_mb += (double)nodes[i].total_memory_mb;
	}
	for (size_t i = 0; i < nrunning; i++) {
		const struct policy_running *r = &running[i];
		size_t p = project_index(u, r->project);
		for (size_t k2 = 0; k2 < r->n; k2++)
			add_replica_use(u, p, r->region, r->qclass, &r->replicas[k2], 1);
	}
}

static void usage_free(struct usage *u)
{
	free(u->p);
	free(u->r);
}

/* --- the pass -------------------------------------------------------------- */

struct order_ctx {
	const struct policy_job *jobs;
};

/* Bands (non-SPOT first, then higher priority), then creation order. */
static int by_band(const void *a, const void *b, void *ctx)
{
	const struct policy_job *x = &((struct order_ctx *)ctx)->jobs[*(const size_t *)a];
	const struct policy_job *y = &((struct order_ctx *)ctx)->jobs[*(const size_t *)b];

	if (x->spot != y->spot)
		return x->spot ? 1 : -1;
	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return x->pj.id < y->pj.id ? -1 : x->pj.id > y->pj.id;
}

static bool same_band(const struct policy_job *x, const struct policy_job *y)
{
	return x->spot == y->spot && x->priority == y->priority;
}

/* Takes the nodes of a preemptor's future placement out of this pass. */
static void hold_nodes(struct place_cluster *cl, bool *held, const struct place_assignment *as,
		       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		place_cluster_hold(cl, as[i].node);
		held[as[i].node] = true;
	}
}

/* A job shape for which no set of victims made room (in one pass). */
struct failed_search {
	const char *region, *accel_type;
	int priority, gpus, vcpus;
	bool spot, tpu;
	size_t nreplicas;
};

struct pass {
	struct place_node *nodes;
	size_t nnodes;
	struct place_cluster *cl;	/* the index over nodes (placement.h) */
	const struct policy_job *jobs;
	const struct policy_running *running;
	size_t nrunning;
	const struct policy_config *cfg;
	const size_t *offsets;
	struct place_assignment *out;
	struct policy_outcome *outcome;
	struct usage use;
	bool *stopping;		/* being stopped: at the pass's start, and victims since */
	bool *stopping0;	/* being stopped when the pass began */
	bool *held;		/* nodes held for preemptors (by index) */
	const char **stop_regions;	/* the regions of stopping0's jobs */
	size_t nstop_regions;
	const char **reserved;	/* regions held by a starving job */
	int64_t *reserved_by;
	size_t nreserved;
	struct policy_victim *victims;
	size_t nvictims, cap_victims;
	size_t searches;		/* victim searches this pass (POLICY_MAX_SEARCHES) */
	size_t *order;			/* running, cheapest victim first (cost_order) */
	struct failed_search *failed;	/* shapes no victims could make room for */
	size_t nfailed, cap_failed;
	size_t placed;
};

static void add_victim(struct pass *ps, size_t victim, size_t job)
{
	if (ps->nvictims == ps->cap_victims) {
		ps->cap_victims = ps->cap_victims ? 2 * ps->cap_victims : 8;
		ps->victims = xrealloc(ps->victims, ps->cap_victims * sizeof(*ps->victims));
	}
	ps->victims[ps->nvictims++] = (struct policy_victim){ victim, job };
}

struct cost_key {
	int64_t gpus, priority, age, id;
	size_t index;
};

static int by_cost_key(const void *a, const void *b)
{
	const struct cost_key *x = a, *y = b;
	if (x->gpus != y->gpus)
		return x->gpus < y->gpus ? -1 : 1;
	if (x->priority != y->priority)
		return x->priority < y->priority ? -1 : 1;
	if (x->age != y->age)
		return x->age < y->age ? -1 : 1;
	return x->id > y->id ? -1 : x->id < y->id;
}

/* Every running job, cheapest victim first (by_cost's order), computed once a pass. */
static const size_t *cost_order(struct pass *ps)
{
	if (ps->order)
		return ps->order;
	struct cost_key *keys = xcalloc(ps->nrunning + 1, sizeof(*keys));
	for (size_t i = 0; i < ps->nrunning; i++) {
		const struct policy_running *r = &ps->running[i];
		keys[i] = (struct cost_key){ running_gpus(r), r->priority, r->age_us, r->id, i };
	}
	qsort(keys, ps->nrunning, sizeof(*keys), by_cost_key);
	ps->order = xcalloc(ps->nrunning + 1, sizeof(*ps->order));
	for (size_t i = 0; i < ps->nrunning; i++)
		ps->order[i] = keys[i].index;
	free(keys);
	return ps->order;
}

/* The largest replica of a job: a search for a smaller-or-equal job can only fail too. */
static void shape_of(const struct policy_job *job, struct failed_search *f)
{
	memset(f, 0, sizeof(*f));
	f->region = job->pj.region;
	f->priority = job->priority;
	f->spot = job->spot;
	f->nreplicas = job->pj.nreplicas;
	for (size_t i = 0; i < job->pj.nreplicas; i++) {
		const struct place_replica *r = &job->pj.replicas[i];
		if (r->tpu)
			f->tpu = true;
		if (r->accel_type && r->accel_count >= f->gpus) {
			f->gpus = r->accel_count;
			f->accel_type = r->accel_type;
		}
		if (r->vcpus > f->vcpus)
			f->vcpus = r->vcpus;
	}
}

/* Whether a search for job would repeat one that failed (victims only get fewer in a pass). */
static bool known_to_fail(const struct pass *ps, const struct policy_job *job)
{
	struct failed_search f;
	shape_of(job, &f);
	for (size_t i = 0; i < ps->nfailed; i++) {
		const struct failed_search *g = &ps->failed[i];
		if (same(g->region, f.region) && g->priority == f.priority && g->spot == f.spot &&
		    g->tpu == f.tpu && (!g->accel_type || same(g->accel_type, f.accel_type)) &&
		    f.gpus >= g->gpus && f.vcpus >= g->vcpus && f.nreplicas >= g->nreplicas &&
		    (g->gpus > 0 || !f.accel_type))
			return true;
	}
	return false;
}

/* Preemption for job j, which fits its quota and the region emptied. */
static bool try_preempt(struct pass *ps, size_t j)
{
	const struct policy_job *job = &ps->jobs[j];
	struct place_assignment *as = xcalloc(job->pj.nreplicas + 1, sizeof(*as));
	bool done = false;

	/* Bounded work a pass: the next pass goes on where this one stopped. */
	if (ps->searches >= POLICY_MAX_SEARCHES)
		goto out;
	bool stops_here = false;
	for (size_t i = 0; i < ps->nstop_regions && !stops_here; i++)
		stops_here = same(ps->stop_regions[i], job->pj.region);
	if (stops_here) {
		ps->searches++;
		if (fits_after_stops(ps->nodes, ps->nnodes, ps->held, job, ps->running, ps->nrunning,
				     ps->stopping0, as)) {
			ps->outcome[j].why = POLICY_PREEMPTING;
			hold_nodes(ps->cl, ps->held, as, job->pj.nreplicas);
			done = true;
			goto out;
		}
	}
	if (ps->searches >= POLICY_MAX_SEARCHES || known_to_fail(ps, job))
		goto out;
	ps->searches++;
	size_t *cand = xcalloc(ps->nrunning + 1, sizeof(*cand)), ncand = 0;
	int below = quotas_preempt_below(ps->cfg->quotas);
	const size_t *order = cost_order(ps);
	for (size_t k = 0; k < ps->nrunning; k++) {
		size_t i = order[k];
		const struct policy_running *r = &ps->running[i];
		if (!ps->stopping[i] && (r->region == job->pj.region || same(r->region, job->pj.region)) &&
		    policy_may_preempt(job->spot, job->priority, r, below) &&
		    relevant(ps->nodes, r, job))
			cand[ncand++] = i;
	}
	size_t *chosen = xcalloc(ncand + 1, sizeof(*chosen));
	size_t n = ncand ? pick(ps->nodes, ps->nnodes, ps->held, job, ps->running, ps->nrunning,
				cand, ncand, chosen, as) : 0;
	if (n) {
		for (size_t k = 0; k < n; k++) {
			ps->stopping[chosen[k]] = true;
			add_victim(ps, chosen[k], j);
		}
		ps->outcome[j].why = POLICY_PREEMPTING;
		ps->outcome[j].nvictims = n;
		hold_nodes(ps->cl, ps->held, as, job->pj.nreplicas);
		done = true;
	} else {
		if (ps->nfailed == ps->cap_failed) {
			ps->cap_failed = ps->cap_failed ? 2 * ps->cap_failed : 8;
			ps->failed = xrealloc(ps->failed, ps->cap_failed * sizeof(*ps->failed));
		}
		shape_of(job, &ps->failed[ps->nfailed++]);
	}
	free(cand);
	free(chosen);
out:
	free(as);
	return done;
}

static void consider(struct pass *ps, size_t j)
{
	const struct policy_job *job = &ps->jobs[j];
	struct policy_outcome *o = &ps->outcome[j];
	size_t proj = project_index(&ps->use, job->project);

	memset(o, 0, sizeof(*o));
	for (size_t k = 0; k < ps->nreserved; k++)
		if (same(ps->reserved[k], job->pj.region)) {
			o->why = POLICY_RESERVED;
			o->blocker = ps->reserved_by[k];
			return;
		}
	struct quota_amounts *used = region_use(&ps->use, proj, job->pj.region, job->qclass);
	if (quotas_check(ps->cfg->quotas, job->project, job->pj.region, job->qclass, used,
			 &job->demand, &o->excess, 1)) {
		o->why = POLICY_QUOTA;
		return;
	}
	if (!place_cluster_gang(ps->cl, &job->pj, ps->out + ps->offsets[j])) {
		o->why = POLICY_PLACED;
		ps->placed++;
		for (size_t k = 0; k < job->pj.nreplicas; k++)
			add_replica_use(&ps->use, proj, job->pj.region, job->qclass,
					&job->pj.replicas[k], 1);
		return;
	}
	if (!place_cluster_fits_when_empty(ps->cl, &job->pj)) {
		o->why = POLICY_NEVER_FITS;
		o->replica = place_cluster_never_fits(ps->cl, &job->pj);
		return;
	}
	if (ps->cfg->preemption && try_preempt(ps, j))
		return;
	o->why = POLICY_CAPACITY;
	if (job->waited_us >= ps->cfg->starve_us) {
		ps->reserved[ps->nreserved] = job->pj.region;
		ps->reserved_by[ps->nreserved++] = job->pj.id;
	}
}

size_t policy_pass(struct place_node *nodes, size_t nnodes, const struct policy_job *jobs,
		   size_t njobs, const struct policy_running *running, size_t nrunning,
		   const struct policy_config *cfg, const size_t *offsets,
		   struct place_assignment *out, struct policy_outcome *outcome,
		   struct policy_victim **victims, size_t *nvictims)
{
	struct pass ps = {
		.nodes = nodes, .nnodes = nnodes, .jobs = jobs, .running = running,
		.nrunning = nrunning, .cfg = cfg, .offsets = offsets, .out = out,
		.outcome = outcome,
	};
	size_t *order = xcalloc(njobs + 1, sizeof(*order));

	ps.cl = place_cluster_new(nodes, nnodes);
	ps.stopping = xcalloc(nrunning + 1, sizeof(*ps.stopping));
	ps.stopping0 = xcalloc(nrunning + 1, sizeof(*ps.stopping0));
	ps.held = xcalloc(nnodes + 1, sizeof(*ps.held));
	ps.stop_regions = xcalloc(nrunning + 1, sizeof(*ps.stop_regions));
	for (size_t i = 0; i < nrunning; i++) {
		ps.stopping[i] = ps.stopping0[i] = running[i].stopping;
		bool seen = !running[i].stopping;
		for (size_t k = 0; k < ps.nstop_regions && !seen; k++)
			seen = same(ps.stop_regions[k], running[i].region);
		if (!seen)
			ps.stop_regions[ps.nstop_regions++] = running[i].region;
	}
	ps.reserved = xcalloc(njobs + 1, sizeof(*ps.reserved));
	ps.reserved_by = xcalloc(njobs + 1, sizeof(*ps.reserved_by));
	usage_init(&ps.use, nodes, nnodes, jobs, njobs, running, nrunning, cfg->quotas);

	for (size_t i = 0; i < njobs; i++)
		order[i] = i;
	struct order_ctx octx = { jobs };
	qsort_r(order, njobs, sizeof(*order), by_band, &octx);
	/* Each band: the oldest job of the project with the lowest weighted
	 * dominant share, again and again (each project's jobs a FIFO). */
	size_t *head = xcalloc(ps.use.np + 1, sizeof(*head));	/* next in band, per project */
	size_t *next = xcalloc(njobs + 1, sizeof(*next));	/* the project's next job */
	size_t *tail = xcalloc(ps.use.np + 1, sizeof(*tail));
	size_t *live = xcalloc(ps.use.np + 1, sizeof(*live)), nlive;
	bool *in_band = xcalloc(ps.use.np + 1, sizeof(*in_band));
	for (size_t b = 0; b < njobs;) {
		size_t e = b + 1;
		while (e < njobs && same_band(&jobs[order[b]], &jobs[order[e]]))
			e++;
		nlive = 0;
		for (size_t k = b; k < e; k++) {
			size_t p = project_index(&ps.use, jobs[order[k]].project);
			next[k] = SIZE_MAX;
			if (!in_band[p]) {
				in_band[p] = true;
				head[p] = tail[p] = k;
				live[nlive++] = p;
			} else {
				next[tail[p]] = k;
				tail[p] = k;
			}
		}
		while (nlive) {
			size_t bi = 0;
			double bs = ps.use.p[live[0]].share;
			for (size_t i = 1; i < nlive; i++) {
				double s = ps.use.p[live[i]].share;
				if (s < bs) {
					bs = s;
					bi = i;
				}
			}
			size_t p = live[bi], k = head[p];
			consider(&ps, order[k]);
			head[p] = next[k];
			if (head[p] == SIZE_MAX) {
				live[bi] = live[--nlive];
				in_band[p] = false;
			}
		}
		b = e;
	}
	free(head);
	free(next);
	free(tail);
	free(live);
	free(in_band);
	free(order);
	place_cluster_free(ps.cl);
	free(ps.failed);
	free(ps.stopping);
	free(ps.stopping0);
	free(ps.order);
	free(ps.held);
	free(ps.stop_regions);
	free(ps.reserved);
	free(ps.reserved_by);
	usage_free(&ps.use);
	*victims = ps.victims;
	*nvictims = ps.nvictims;
	return ps.placed;
}
