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

/* work = the region's nodes with base[0..nbase) and extra[0..nextra) released. */
static void build_work(struct place_node *work, const struct region_nodes *rn,
		       const struct policy_running *running, const bool *stopping,
		       size_t nrunning, const size_t *extra, size_t nextra, size_t skip)
{
	memcpy(work, rn->v, rn->n * sizeof(*work));
	for (size_t i = 0; i < nrunning; i++)
		if (stopping[i])
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

static size_t pick(const struct place_node *nodes, size_t nnodes, const struct policy_job *job,
		   const struct policy_running *running, size_t nrunning, const bool *stopping,
		   const size_t *cand, size_t ncand, size_t *chosen, struct place_assignment *out)
{
	struct region_nodes rn;
	struct place_assignment *tmp = xcalloc(job->pj.nreplicas + 1, sizeof(*tmp));
	size_t *order = xmalloc((ncand + 1) * sizeof(*order));
	size_t n = 0;
	bool fit = false;

	region_nodes_init(&rn, nodes, nnodes, job->pj.region);
	struct place_node *work = xcalloc(rn.n + 1, sizeof(*work));
	memcpy(order, cand, ncand * sizeof(*order));
	struct cost_ctx ctx = { running };
	qsort_r(order, ncand, sizeof(*order), by_cost, &ctx);

	/* Greedy: add the cheapest until the gang fits. */
	build_work(work, &rn, running, stopping, nrunning, NULL, 0, 0);
	for (size_t k = 0; k < ncand && !fit; k++) {
		chosen[n++] = order[k];
		release_running(work, &rn, &running[order[k]]);
		fit = place_gang(work, rn.n, &job->pj, tmp) == 0;
	}
	if (!fit) {
		n = 0;
		goto out;
	}
	/* Prune: the most expensive first, drop each the gang fits without. */
	for (size_t k = n; k-- > 0;) {
		build_work(work, &rn, running, stopping, nrunning, chosen, n, k);
		if (place_gang(work, rn.n, &job->pj, tmp) == 0) {
			memmove(&chosen[k], &chosen[k + 1], (n - k - 1) * sizeof(*chosen));
			n--;
		}
	}
	build_work(work, &rn, running, stopping, nrunning, chosen, n, n);
	if (place_gang(work, rn.n, &job->pj, tmp) != 0) {
		n = 0;	/* (cannot happen: this set fitted above) */
		goto out;
	}
	for (size_t i = 0; i < job->pj.nreplicas; i++)
		out[i] = (struct place_assignment){ rn.global[tmp[i].node], tmp[i].gpus };
out:
	free(work);
	free(order);
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
	for (size_t i = 0; i < ncand; i++)
		if (cand[i] + 1 > nrunning)
			nrunning = cand[i] + 1;
	bool *stopping = xcalloc(nrunning + 1, sizeof(*stopping));
	size_t n = pick(nodes, nnodes, job, running, nrunning, stopping, cand, ncand, chosen, out);
	free(stopping);
	return n;
}

/* Whether what is being stopped already makes room: then out is where it goes. */
static bool fits_after_stops(const struct place_node *nodes, size_t nnodes,
			     const struct policy_job *job, const struct policy_running *running,
			     size_t nrunning, const bool *stopping, struct place_assignment *out)
{
	bool any = false;
	for (size_t i = 0; i < nrunning && !any; i++)
		any = stopping[i] && same(running[i].region, job->pj.region);
	if (!any)
		return false;
	struct region_nodes rn;
	region_nodes_init(&rn, nodes, nnodes, job->pj.region);
	struct place_node *work = xcalloc(rn.n + 1, sizeof(*work));
	struct place_assignment *tmp = xcalloc(job->pj.nreplicas + 1, sizeof(*tmp));
	build_work(work, &rn, running, stopping, nrunning, NULL, 0, 0);
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
};

struct region_use {
	size_t project;
	const char *region;
	enum quota_class qclass;
	struct quota_amounts used;
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
	for (size_t i = 0; i < u->nr; i++)
		if (u->r[i].project == project && u->r[i].qclass == c && same(u->r[i].region, region))
			return &u->r[i].used;
	if (u->nr == u->cap) {
		u->cap = u->cap ? 2 * u->cap : 16;
		u->r = xrealloc(u->r, u->cap * sizeof(*u->r));
	}
	u->r[u->nr] = (struct region_use){ project, region, c, { 0 } };
	return &u->r[u->nr++].used;
}

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
}

static double share(const struct usage *u, size_t project)
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
	for (size_t i = 0; i < u->np; i++)
		u->p[i].weight = quotas_weight(q, u->p[i].name);
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
static void hold_nodes(struct place_cluster *cl, const struct place_assignment *as, size_t n)
{
	for (size_t i = 0; i < n; i++)
		place_cluster_hold(cl, as[i].node);
}

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
	bool *stopping;
	const char **reserved;	/* regions held by a starving job */
	int64_t *reserved_by;
	size_t nreserved;
	struct policy_victim *victims;
	size_t nvictims, cap_victims;
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

/* Preemption for job j, which fits its quota and the region emptied. */
static bool try_preempt(struct pass *ps, size_t j)
{
	const struct policy_job *job = &ps->jobs[j];
	struct place_assignment *as = xcalloc(job->pj.nreplicas + 1, sizeof(*as));
	bool done = false;

	if (fits_after_stops(ps->nodes, ps->nnodes, job, ps->running, ps->nrunning, ps->stopping,
			     as)) {
		ps->outcome[j].why = POLICY_PREEMPTING;
		hold_nodes(ps->cl, as, job->pj.nreplicas);
		done = true;
		goto out;
	}
	size_t *cand = xcalloc(ps->nrunning + 1, sizeof(*cand)), ncand = 0;
	int below = quotas_preempt_below(ps->cfg->quotas);
	for (size_t i = 0; i < ps->nrunning; i++) {
		const struct policy_running *r = &ps->running[i];
		if (!ps->stopping[i] && same(r->region, job->pj.region) &&
		    policy_may_preempt(job->spot, job->priority, r, below) &&
		    relevant(ps->nodes, r, job))
			cand[ncand++] = i;
	}
	size_t *chosen = xcalloc(ncand + 1, sizeof(*chosen));
	size_t n = ncand ? pick(ps->nodes, ps->nnodes, job, ps->running, ps->nrunning, ps->stopping,
				cand, ncand, chosen, as) : 0;
	if (n) {
		for (size_t k = 0; k < n; k++) {
			ps->stopping[chosen[k]] = true;
			add_victim(ps, chosen[k], j);
		}
		ps->outcome[j].why = POLICY_PREEMPTING;
		ps->outcome[j].nvictims = n;
		hold_nodes(ps->cl, as, job->pj.nreplicas);
		done = true;
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
	for (size_t i = 0; i < nrunning; i++)
		ps.stopping[i] = running[i].stopping;
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
			double bs = share(&ps.use, live[0]);
			for (size_t i = 1; i < nlive; i++) {
				double s = share(&ps.use, live[i]);
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
	free(ps.stopping);
	free(ps.reserved);
	free(ps.reserved_by);
	usage_free(&ps.use);
	*victims = ps.victims;
	*nvictims = ps.nvictims;
	return ps.placed;
}
