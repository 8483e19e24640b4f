#include "scheduler.h"
#include "study.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "bgconn.h"
#include "hash.h"
#include "job_plan.h"
#include "listen_hub.h"
#include "log.h"
#include "metrics.h"
#include "snapshot.h"
#include "placement.h"
#include "policy.h"
#include "quota.h"
#include "replica_env.h"
#include "sim_fleet.h"
#include "sim_outcome.h"
#include "store_clock.h"
#include "store_log.h"
#include "store_sched.h"
#include "strbuf.h"
#include "vertex_types.h"

#define MAX_QUEUED_PER_PASS 2000
/* Google restarts a preempted SPOT job up to six times (hp-tuning.md §3.2). */
#define MAX_PREEMPTIONS 6

METRIC_HISTOGRAM(pass_duration, "trainplane_scheduler_pass_duration_seconds",
		 "Duration of the scheduling passes (placement included) this server ran as the "
		 "leader.", &metrics_latency_buckets)
METRIC_COUNTER(leader_acquired, "trainplane_scheduler_leader_acquired_total",
	       "Times this server's scheduler became the leader (took the advisory lock); "
	       "summed over servers, the leader changes.")
METRIC_COUNTER(nodes_lost, "trainplane_nodes_lost_total",
	       "Nodes this server's scheduler, as the leader, gave up as LOST: their lease, stop "
	       "grace and margin passed without a sync.")

struct sched {
	struct sched_config cfg;
	char *conninfo;
	struct bgconn *bg;	/* the thread and its connection (store/bgconn.h) */
	struct listen_sub *sub;	/* "tp_sched" on the hub: passes other servers ask for */
	struct study_pass_state *studies;	/* the study pass's (scheduler thread) */
	bool leader;
	struct store_conn *conn;	/* the open connection: holds the advisory lock while leader */
	int64_t last_log_expiry;	/* mono_usec() */
	/* What the next pass must do, set by wake-ups from any thread. */
	bool wake_sent;		/* a wake-up is on its way: the next ones need not write */
	bool want_new;		/* new jobs: place jobs above max_seen_id */
	bool want_full;		/* capacity may have changed: consider every queued job */
	int64_t max_seen_id;	/* the highest queued job id a pass has seen */
	bool starving;		/* a job waits past starve_s: every pass is full */
	int64_t last_full, last_pass, last_housekeeping;	/* mono_usec() */
	int64_t noted_id;	/* queued jobs of node-less regions up to it have a line */
	struct sim_fleet *fleet;	/* emulator mode: the simulated fleet (sim_fleet.h) */
	struct sim_outcomes *outcomes;	/* emulator mode: scripted outcomes (sim_outcome.h) */
	struct listen_sub *node_sub;	/* "tp_node": the fleet's desired sets moved */
	/* The nodes of the last snapshot that read them, and their stamp: a pass
	 * whose nodes have not changed since (store_sched_snapshot) reuses them. */
	json_t *nodes_cache;
	char *nodes_stamp;
	/* The reasons this leader wrote, {"<job id>": crc32c of code and text}:
	 * a pass writes only the ones that changed (note_reasons). */
	json_t *reasons_sent;
};

#define FULL_PASS_EVERY_US (INT64_C(10) * 1000000)
#define MIN_PASS_GAP_US (INT64_C(20) * 1000)
/* Replicas end all the time in a busy cluster: full passes at most this often. */
#define MIN_FULL_GAP_US (INT64_C(250) * 1000)

/* Per-node working state of one pass. */
struct node_work {
	const char *name, *address;
	int port_lo, port_hi;
	unsigned char *ports;	/* bitmap over port_lo..port_hi: taken */
};

/*
 * Sets flag and wakes the thread, once until it takes the flags: a storm
 * of creates wakes it once per pass (they come MIN_PASS_GAP_US apart), not
 * once per create.
 */
static void wake(struct sched *s, bool *flag)
{
	if (!s)
		return;
	__atomic_store_n(flag, true, __ATOMIC_SEQ_CST);
	if (!__atomic_exchange_n(&s->wake_sent, true, __ATOMIC_SEQ_CST))
		bgconn_wake(s->bg);
}

/* The thread is about to read the flags: the next wake-up must write. */
static void wake_taken(struct sched *s)
{
	__atomic_store_n(&s->wake_sent, false, __ATOMIC_SEQ_CST);
}

void sched_wake(struct sched *s)
{
	if (s)
		wake(s, &s->want_full);
}

void sched_wake_new_job(struct sched *s)
{
	if (s)
		wake(s, &s->want_new);
}

bool sched_is_leader(struct sched *s)
{
	return s && __atomic_load_n(&s->leader, __ATOMIC_ACQUIRE);
}

static int take_port(struct node_work *w)
{
	for (int p = w->port_lo; p <= w->port_hi; p++) {
		int bit = p - w->port_lo;
		if (!(w->ports[bit / 8] & (1 << (bit % 8)))) {
			w->ports[bit / 8] |= (unsigned char)(1 << (bit % 8));
			return p;
		}
	}
	return -1;
}

static json_t *gpu_array(uint64_t mask)
{
	json_t *a = json_array();
	for (int i = 0; i < PLACE_MAX_GPUS; i++)
		if (mask & (UINT64_C(1) << i))
			json_array_append_new(a, json_integer(i));
	return a;
}

static char *gpu_list(uint64_t mask)
{
	struct strbuf sb = STRBUF_INIT;
	for (int i = 0; i < PLACE_MAX_GPUS; i++)
		if (mask & (UINT64_C(1) << i))
			sb_addf(&sb, "%s%d", sb.len ? "," : "", i);
	return sb_detach(&sb);
}

static enum replica_role role_parse(const char *s)
{
	for (int r = ROLE_MASTER; r <= ROLE_EVALUATOR; r++)
		if (!strcmp(s, replica_role_name((enum replica_role)r)))
			return (enum replica_role)r;
	return ROLE_WORKER;
}

/* A node of the snapshot: an array, its fields in this order (store_sched.c). */
enum node_row {
	NR_NAME, NR_REGION, NR_ZONE, NR_ADDRESS, NR_ACCEL_TYPE, NR_ACCEL_COUNT, NR_TPU, NR_VCPUS,
	NR_MEMORY_MB, NR_PORT_LO, NR_PORT_HI, NR_USED_VCPUS, NR_USED_MEMORY_MB, NR_USED_GPUS,
	NR_USED_TPU, NR_USED_PORTS,
};

/* Builds nodes[] and work[] from the snapshot. */
static size_t load_nodes(const json_t *list, struct place_node **nodes_out,
			 struct node_work **work_out)
{
	size_t n = json_array_size(list), i;
	struct place_node *nodes = xcalloc(n + 1, sizeof(*nodes));
	struct node_work *work = xcalloc(n + 1, sizeof(*work));
	json_t *o;

#define F(x) json_array_get(o, NR_##x)
	json_array_foreach(list, i, o) {
		json_t *v;
		size_t k;
		struct place_node *pn = &nodes[i];
		int gpus = (int)json_integer_value(F(ACCEL_COUNT));
		if (gpus > PLACE_MAX_GPUS)
			gpus = PLACE_MAX_GPUS;
		pn->name = json_string_value(F(NAME));
		pn->region = json_string_value(F(REGION));
		pn->zone = json_string_value(F(ZONE));
		pn->accel_type = json_string_value(F(ACCEL_TYPE));
		pn->gpus = gpus;
		pn->tpu_host = json_is_true(F(TPU));
		pn->schedulable = true;
		pn->total_vcpus = (int)json_integer_value(F(VCPUS));
		pn->total_memory_mb = json_integer_value(F(MEMORY_MB));
		pn->free_vcpus = pn->total_vcpus - (int)json_integer_value(F(USED_VCPUS));
		pn->free_memory_mb = pn->total_memory_mb - json_integer_value(F(USED_MEMORY_MB));
		pn->free_gpus = gpus >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << gpus) - 1;
		/* [[0, 1], [2]]: each replica's GPU indices */
		json_array_foreach(F(USED_GPUS), k, v) {
			size_t m;
			json_t *g;
			json_array_foreach(v, m, g) {
				json_int_t x = json_integer_value(g);
				if (json_is_integer(g) && x >= 0 && x < PLACE_MAX_GPUS)
					pn->free_gpus &= ~(UINT64_C(1) << x);
			}
		}
		pn->tpu_busy = json_is_true(F(USED_TPU));
		struct node_work *w = &work[i];
		w->name = pn->name;
		w->address = json_string_value(F(ADDRESS));
		w->port_lo = (int)json_integer_value(F(PORT_LO));
		w->port_hi = (int)json_integer_value(F(PORT_HI));
		w->ports = xcalloc((size_t)(w->port_hi - w->port_lo) / 8 + 1, 1);
		json_array_foreach(F(USED_PORTS), k, v) {
			int p = (int)json_integer_value(v);
			if (p >= w->port_lo && p <= w->port_hi)
				w->ports[(p - w->port_lo) / 8] |= (unsigned char)(1 << ((p - w->port_lo) % 8));
		}
	}
#undef F
	*nodes_out = nodes;
	*work_out = work;
	return n;
}

/* The run spec with the replica's environment, for the agent. New object. */
/*
 * A tuning trial's replicas are told their trial, as AI Platform tells
 * them: TF_CONFIG's task.trial, CLOUD_ML_TRIAL_ID, and the study's
 * hyperparameterMetricTag as CLOUD_ML_HP_METRIC_TAG (the agent adds
 * CLOUD_ML_HP_METRIC_FILE: the file is the replica's own).
 */
struct trial_env {
	char id[24];		/* "": not a trial */
	const char *tag;	/* NULL: the library's default */
};

static void trial_env_of(const json_t *trial, const json_t *job_spec, struct trial_env *t)
{
	t->id[0] = '\0';
	t->tag = NULL;
	if (!json_is_integer(trial))
		return;
	snprintf(t->id, sizeof(t->id), "%lld", (long long)json_integer_value(trial));
	/* (an ml job's stored spec is its TrainingInput; a Vertex trial's
	 * CustomJob has its study's metric under VERTEX_TRIAL_KEY) */
	t->tag = json_string_value(json_object_get(json_object_get(job_spec, "hyperparameters"),
						   "hyperparameterMetricTag"));
	if (!t->tag)
		t->tag = json_string_value(json_object_get(json_object_get(job_spec,
			VERTEX_TRIAL_KEY), "metricTag"));
}

static json_t *replica_spec(const json_t *run, const struct ml_cluster *cl, size_t self,
			    uint64_t gpus, const struct trial_env *t)
{
	json_t *spec = json_deep_copy(run), *env = json_array();
	char *list = gpu_list(gpus);
	char **vars = NULL;
	size_t n = 0;

	if (replica_env_is_vertex(cl->training_input))
		replica_env_vertex(cl, self, list, &vars, &n);
	else
		replica_env_ml(cl, self, t->id[0] ? t->id : NULL, list, &vars, &n);
	if (t->id[0]) {
		json_array_append_new(env, json_sprintf("CLOUD_ML_TRIAL_ID=%s", t->id));
		if (t->tag && *t->tag)
			json_array_append_new(env, json_sprintf("CLOUD_ML_HP_METRIC_TAG=%s", t->tag));
	}
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(env, json_string(vars[i]));
		free(vars[i]);
	}
	free(vars);
	free(list);
	json_object_set_new(spec, "env", env);
	return spec;
}

/*
 * 64 random bits as 16 hex digits: what makes a job's replica ids unique
 * for all time. Job row ids repeat (a fresh database, a restored backup
 * whose sequences rewound past jobs that agents still remember, a node
 * moved to another installation); randomness does not.
 */
static void replica_id_nonce(char out[17])
{
	unsigned char raw[8];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < sizeof(raw)) {
		/* No kernel randomness (cannot happen on Linux >= 3.17): the clock,
		 * the pid and a counter, mixed, are unique enough on one host. */
		static unsigned long long counter;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		unsigned long long x = (unsigned long long)ts.tv_sec * 1000000000ULL +
				       (unsigned long long)ts.tv_nsec +
				       ((unsigned long long)getpid() << 40) + ++counter;
		x ^= x >> 30;
		x *= 0xbf58476d1ce4e5b9ULL;
		x ^= x >> 27;
		x *= 0x94d049bb133111ebULL;
		x ^= x >> 31;
		memcpy(raw, &x, sizeof(raw));
		log_warn("getrandom failed: replica ids use the clock instead");
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

/* One placed job as a batch element {job, replicas}: ports, environment, rows. */
static json_t *job_rows(const json_t *q, const struct job_plan *plan,
			const struct place_assignment *as, struct node_work *work)
{
	int64_t id = json_integer_value(json_object_get(q, "id"));
	struct replica_addr *addrs = xcalloc(plan->n, sizeof(*addrs));
	int *ports = xcalloc(plan->n, sizeof(*ports));
	json_t *rows = json_array();

	for (size_t i = 0; i < plan->n; i++) {
		ports[i] = take_port(&work[as[i].node]);
		addrs[i] = (struct replica_addr){ plan->replicas[i].role, plan->replicas[i].index,
						  work[as[i].node].address, ports[i] };
	}
	struct ml_cluster cl = { addrs, plan->n, json_object_get(q, "spec"),
				 json_string_value(json_object_get(q, "job_id")) };
	struct trial_env t;
	trial_env_of(json_object_get(q, "trial"), json_object_get(q, "spec"), &t);
	char nonce[17];
	replica_id_nonce(nonce);
	for (size_t i = 0; i < plan->n; i++) {
		const struct plan_replica *r = &plan->replicas[i];
		/* "<job row id>-<role>-<index>-<nonce>": readable, a file and container
		 * name, and never the id of another job's replica (agent/PROTOCOL.md). */
		char uid[96];
		snprintf(uid, sizeof(uid), "%lld-%s-%d-%s", (long long)id, replica_role_name(r->role),
			 r->index, nonce);
		json_t *row = json_pack("{s:s, s:s, s:i, s:s, s:o, s:o, s:i, s:I, s:b}",
					"uid", uid, "role", replica_role_name(r->role), "idx", r->index,
					"node", work[as[i].node].name, "gpus", gpu_array(as[i].gpus),
					"spec", replica_spec(r->run, &cl, i, as[i].gpus, &t),
					"vcpus", r->demand.vcpus, "memory_mb", (json_int_t)r->demand.memory_mb,
					"tpu", r->demand.tpu);
		json_object_set_new(row, "port", ports[i] > 0 ? json_integer(ports[i]) : json_null());
		json_object_set_new(row, "accel_type", r->demand.accel_type ?
				    json_string(r->demand.accel_type) : json_null());
		json_object_set_new(row, "accel_count", json_integer(r->demand.accel_count));
		json_array_append_new(rows, row);
	}
	free(addrs);
	free(ports);
	return json_pack("{s:I, s:o}", "job", (json_int_t)id, "replicas", rows);
}

/* How every reason's sentence starts (a job given up says what it waited for without it). */
#define QUEUED_PREFIX "The job is queued: "

/* "2 x NVIDIA_TESLA_A100" for a replica's accelerators, "" without. */
static void accel_words(const struct replica_demand *d, char *out, size_t len)
{
	out[0] = '\0';
	if (d->tpu)
		snprintf(out, len, ", a TPU host");
	else if (d->accel_type && d->accel_count > 0)
		snprintf(out, len, ", %d x %s", d->accel_count, d->accel_type);
}

/* Why jobs[i] waits, as {job, code, text} (new), or NULL when it was placed. */
static json_t *reason_of(const struct catalog *cat, const struct quotas *quotas,
			 const struct policy_job *job, const struct job_plan *plan,
			 const struct policy_outcome *o, const json_t *q)
{
	const char *region = job->pj.region, *code = NULL;
	bool vertex = !strcmp(json_string_value(json_object_get(q, "api")) ?: "", "vertex");
	char *text = NULL;

	switch (o->why) {
	case POLICY_PLACED:
		return NULL;
	case POLICY_NEVER_FITS: {
		ssize_t k = o->replica;
		code = "never_fits";
		if (k < 0) {
			text = xasprintf("The job is queued: no set of nodes in region %s can hold all of "
					 "its replicas at once, even when idle (its accelerators need one "
					 "zone); it waits until such nodes register "
					 "(ZONE_RESOURCE_POOL_EXHAUSTED).", region);
			break;
		}
		const struct plan_replica *r = &plan->replicas[k];
		char accel[96];
		accel_words(&r->demand, accel, sizeof(accel));
		text = xasprintf("The job is queued: no node in region %s can hold its replica %s %d "
				 "(%s: %d vCPUs, %lld MB%s), even when idle; it waits until such a "
				 "node registers (ZONE_RESOURCE_POOL_EXHAUSTED).", region,
				 replica_role_name(r->role), r->index,
				 r->machine_type ? r->machine_type : "custom", r->demand.vcpus,
				 (long long)r->demand.memory_mb, accel);
		break;
	}
	case POLICY_QUOTA: {
		code = "quota";
		if (vertex) {
			char *metric = quota_vertex_metric(o->excess.resource, job->qclass);
			text = xasprintf("The job is queued: project %s is at its quota in region %s. The "
					 "following quota metrics exceed quota limits: %s (limit %lld, in "
					 "use %lld, requested %lld). It starts when the project's usage "
					 "allows.", job->project, region, metric,
					 (long long)o->excess.limit, (long long)o->excess.used,
					 (long long)o->excess.asked);
			free(metric);
		} else {
			char *d = quota_ml_description(quotas, cat, job->project, region, job->qclass,
						       &o->excess);
			text = xasprintf("The job is queued: project %s is at its quota in region %s. %s "
					 "It starts when the project's usage allows.", job->project,
					 region, d);
			free(d);
		}
		break;
	}
	case POLICY_RESERVED:
		code = "reserved";
		text = xasprintf("The job is queued: job %lld has waited longest in region %s and "
				 "holds the region's free capacity until its replicas fit "
				 "(starvation protection).", (long long)o->blocker, region);
		break;
	case POLICY_PREEMPTING:
		code = "preempting";
		text = xasprintf("The job is queued: the resources it needs in region %s are being "
				 "freed (running jobs it outranks are preempted, or jobs are "
				 "stopping); it starts when they have stopped.", region);
		break;
	case POLICY_CAPACITY:
		code = "capacity";
		text = xasprintf("The job is queued: waiting for capacity in region %s (the nodes "
				 "that can hold its replicas are busy)%s.", region,
				 !strcmp(json_string_value(json_object_get(q, "strategy")) ?: "",
					 "FLEX_START") ? "; FLEX_START: it waits up to its "
				 "scheduling.maxWaitDuration" : "");
		break;
	}
	json_t *out = json_pack("{s:I, s:s, s:s}", "job", (json_int_t)job->pj.id, "code", code,
				"text", text);
	free(text);
	return out;
}

/* The snapshot's nodes by name (the database's order need not be strcmp's). */
struct node_by_name {
	const char *name;
	size_t index;
};

static int by_node_name(const void *a, const void *b)
{
	return strcmp(((const struct node_by_name *)a)->name, ((const struct node_by_name *)b)->name);
}

/* The index of name among the nodes (sorted by name), or -1. */
static ssize_t node_index(const struct node_by_name *sorted, size_t n, const char *name)
{
	struct node_by_name key = { name, 0 };
	const struct node_by_name *hit = bsearch(&key, sorted, n, sizeof(*sorted), by_node_name);
	return hit ? (ssize_t)hit->index : -1;
}

/* The snapshot's "running": what holds resources, for the policy (policy.h). */
static size_t load_running(const json_t *list, const struct place_node *nodes, size_t nnodes,
			   struct policy_running **out)
{
	size_t n = json_array_size(list), i;
	struct policy_running *run = xcalloc(n + 1, sizeof(*run));
	struct node_by_name *sorted = xcalloc(nnodes + 1, sizeof(*sorted));
	json_t *o;

	for (size_t k = 0; k < nnodes; k++)
		sorted[k] = (struct node_by_name){ nodes[k].name ?: "", k };
	qsort(sorted, nnodes, sizeof(*sorted), by_node_name);

	json_array_foreach(list, i, o) {
		const json_t *reps = json_object_get(o, "replicas");
		size_t nr = json_array_size(reps), k;
		struct place_replica *pr = xcalloc(nr + 1, sizeof(*pr));
		struct place_assignment *as = xcalloc(nr + 1, sizeof(*as));
		bool *on = xcalloc(nr + 1, sizeof(*on));
		const char *strategy = json_string_value(json_object_get(o, "strategy")) ?: "";
		json_t *r;
		json_array_foreach(reps, k, r) {
			pr[k] = (struct place_replica){
				(int)json_integer_value(json_object_get(r, "vcpus")),
				json_integer_value(json_object_get(r, "memory_mb")),
				json_string_value(json_object_get(r, "accel_type")),
				(int)json_integer_value(json_object_get(r, "accel_count")),
				json_is_true(json_object_get(r, "tpu")),
			};
			ssize_t at = node_index(sorted, nnodes,
						json_string_value(json_object_get(r, "node")) ?: "");
			on[k] = at >= 0;
			as[k].node = at >= 0 ? (size_t)at : 0;
			size_t g;
			json_t *gv;
			json_array_foreach(json_object_get(r, "gpus"), g, gv)
				if (json_integer_value(gv) >= 0 && json_integer_value(gv) < PLACE_MAX_GPUS)
					as[k].gpus |= UINT64_C(1) << json_integer_value(gv);
		}
		run[i] = (struct policy_running){
			.id = json_integer_value(json_object_get(o, "id")),
			.project = json_string_value(json_object_get(o, "project")),
			.region = json_string_value(json_object_get(o, "region")),
			.priority = (int)json_integer_value(json_object_get(o, "priority")),
			.spot = !strcmp(strategy, "SPOT"),
			.qclass = !strcmp(strategy, "SPOT") || !strcmp(strategy, "FLEX_START") ?
				  QUOTA_PREEMPTIBLE : QUOTA_STANDARD,
			.stopping = json_is_true(json_object_get(o, "stopping")),
			.age_us = json_integer_value(json_object_get(o, "age_ms")) * 1000,
			.n = nr, .replicas = pr, .as = as, .on_node = on,
		};
	}
	free(sorted);
	*out = run;
	return n;
}

static void free_running(struct policy_running *run, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((void *)run[i].replicas);
		free((void *)run[i].as);
		free((void *)run[i].on_node);
	}
	free(run);
}

/* Commits the pass's preemptions: each victim's log says who took its place. */
static enum store_rc preempt(struct sched *s, const struct policy_victim *v, size_t n,
			     const struct policy_running *running, const struct policy_job *jobs)
{
	json_t *list = json_array();
	int moved = 0;

	for (size_t i = 0; i < n; i++) {
		const struct policy_running *r = &running[v[i].victim];
		const struct policy_job *j = &jobs[v[i].job];
		char *text = xasprintf("The job was preempted: job %s of project %s (%s) needs "
				       "its resources in region %s", j->name ? j->name : "?", j->project,
				       r->spot && !j->spot ? "not SPOT, while this job is SPOT" :
				       "of a higher priority", r->region);
		json_array_append_new(list, json_pack("{s:I, s:s}", "job", (json_int_t)r->id,
						      "text", text));
		free(text);
	}
	enum store_rc rc = store_sched_preempt(s->conn, list, MAX_PREEMPTIONS, &moved);
	if (rc == STORE_OK && moved)
		log_info("preempted %d job(s) for waiting jobs that outrank them", moved);
	json_decref(list);
	return rc;
}

/* Says why each unplaced job waits (a line in its log when that changes). */
static enum store_rc note_reasons(struct sched *s, const struct catalog *cat,
				  const struct quotas *quotas, const struct policy_job *jobs,
				  const struct job_plan *plans, const struct policy_outcome *outcome,
				  size_t n, const json_t *queued, bool full)
{
	json_t *list = json_array(), *doomed = json_array();
	/* A full pass sees every queued job it may say something of: what it
	 * sends replaces the memory (jobs gone from the queue leave it). */
	json_t *sent = full || !s->reasons_sent ? json_object() : json_incref(s->reasons_sent);
	enum store_rc rc = STORE_OK;
	int lines = 0, failed = 0;
	int64_t limit_us = (int64_t)s->cfg.never_fits_fail_s * 1000000;

	for (size_t i = 0, qi = 0; i < n; i++) {
		char key[24];
		snprintf(key, sizeof(key), "%lld", (long long)jobs[i].pj.id);
		while (json_integer_value(json_object_get(json_array_get(queued, qi), "id")) !=
		       jobs[i].pj.id)
			qi++;
		json_t *r = reason_of(cat, quotas, &jobs[i], &plans[i], &outcome[i],
				      json_array_get(queued, qi));
		if (!r) {
			/* placed: the store dropped its reason (a preempted job says anew) */
			json_object_del(sent, key);
			continue;
		}
		/* The operator's limit on waiting for a node that may never come. */
		if (outcome[i].why == POLICY_NEVER_FITS && limit_us > 0 && jobs[i].waited_us >= limit_us) {
			const char *why = json_string_value(json_object_get(r, "text"));
			if (!strncmp(why, QUEUED_PREFIX, strlen(QUEUED_PREFIX)))
				why += strlen(QUEUED_PREFIX);
			char *text = xasprintf("The job could not be placed: %s It waited %d s "
					       "(never_fits_fail_seconds) and is given up.", why,
					       s->cfg.never_fits_fail_s);
			json_array_append_new(doomed, json_pack("{s:I, s:s}", "job",
								(json_int_t)jobs[i].pj.id, "text", text));
			free(text);
			json_decref(r);
			continue;
		}
		const char *code = json_string_value(json_object_get(r, "code"));
		const char *text = json_string_value(json_object_get(r, "text"));
		uint32_t crc = crc32c_update(crc32c_update(0, code, strlen(code) + 1), text,
					     strlen(text));
		json_t *was = json_object_get(s->reasons_sent, key);
		bool same_as_sent = was && json_integer_value(was) == crc;	/* (before sent,
								 * which may be the same object, changes) */
		json_object_set_new(sent, key, json_integer(crc));
		if (same_as_sent)
			json_decref(r);	/* written already, and unchanged */
		else
			json_array_append_new(list, r);
	}
	if (json_array_size(list))
		rc = store_sched_note_reasons(s->conn, list, &lines);
	/* What the store has now (after a failure, the next pass writes them all). */
	json_decref(s->reasons_sent);
	s->reasons_sent = rc == STORE_OK ? json_incref(sent) : NULL;
	json_decref(sent);
	if (rc == STORE_OK && json_array_size(doomed)) {
		rc = store_sched_fail_waiting(s->conn, doomed, &failed);
		if (rc == STORE_OK && failed)
			log_info("%d job(s) no node can hold failed after never_fits_fail_seconds", failed);
	}
	json_decref(list);
	json_decref(doomed);
	/* The queued jobs of regions without a node (not in the snapshot's queue). */
	if (rc == STORE_OK && full) {
		json_t *none = json_array();
		rc = store_sched_note_queued(s->conn, none, true, s->cfg.lease_s, &s->noted_id);
		json_decref(none);
	}
	return rc;
}

#define COMMIT_BATCH 100

static enum store_rc commit_batch(struct sched *s, json_t *batch)
{
	int placed = 0;
	enum store_rc rc = STORE_OK;

	if (json_array_size(batch)) {
		rc = store_sched_commit_jobs(s->conn, batch, &placed);
		if (rc == STORE_OK)
			log_debug("placed %d of %zu jobs", placed, json_array_size(batch));
	}
	json_array_clear(batch);
	return rc;
}

/*
 * Re-places the restarted replicas of one job (pending[first..last)) as a
 * gang, then gives each its environment with the cluster's current
 * addresses: its peers that kept running keep theirs.
 */
static enum store_rc place_pending_job(struct sched *s, const json_t *pending, size_t first,
				       size_t last, struct place_cluster *pcl, struct node_work *work)
{
	size_t n = last - first;
	const json_t *p0 = json_array_get(pending, first);
	struct place_replica *reps = xcalloc(n, sizeof(*reps));
	struct place_assignment *as = xcalloc(n, sizeof(*as));
	int *ports = xcalloc(n, sizeof(*ports));
	json_t *cluster = NULL;
	struct replica_addr *addrs = NULL;
	enum store_rc rc = STORE_OK;

	for (size_t i = 0; i < n; i++) {
		const json_t *p = json_array_get(pending, first + i);
		reps[i] = (struct place_replica){
			(int)json_integer_value(json_object_get(p, "vcpus")),
			json_integer_value(json_object_get(p, "memory_mb")),
			json_string_value(json_object_get(p, "accel_type")),
			(int)json_integer_value(json_object_get(p, "accel_count")),
			json_is_true(json_object_get(p, "tpu")),
		};
	}
	struct place_job job = { json_integer_value(json_object_get(p0, "job")),
				 json_string_value(json_object_get(p0, "region")), n, reps };
	if (place_cluster_gang(pcl, &job, as))
		goto out;	/* waits for capacity */
	for (size_t i = 0; i < n; i++)
		ports[i] = take_port(&work[as[i].node]);
	if ((rc = store_sched_job_cluster(s->conn, job.id, &cluster)) != STORE_OK)
		goto out;
	size_t nc = json_array_size(cluster), k;
	json_t *c;
	addrs = xcalloc(nc + 1, sizeof(*addrs));
	json_array_foreach(cluster, k, c) {
		addrs[k].role = role_parse(json_string_value(json_object_get(c, "role")));
		addrs[k].index = (int)json_integer_value(json_object_get(c, "idx"));
		addrs[k].host = json_string_value(json_object_get(c, "address"));
		addrs[k].port = (int)json_integer_value(json_object_get(c, "port"));
		for (size_t i = 0; i < n; i++) {
			const json_t *p = json_array_get(pending, first + i);
			if (addrs[k].role == role_parse(json_string_value(json_object_get(p, "role"))) &&
			    addrs[k].index == (int)json_integer_value(json_object_get(p, "idx"))) {
				addrs[k].host = work[as[i].node].address;
				addrs[k].port = ports[i];
			}
		}
		if (!addrs[k].host)
			addrs[k].host = "";
	}
	struct ml_cluster cl = { addrs, nc, json_object_get(p0, "job_spec"),
				 json_string_value(json_object_get(p0, "job_id")) };
	for (size_t i = 0; i < n && rc == STORE_OK; i++) {
		const json_t *p = json_array_get(pending, first + i);
		size_t self = 0;
		for (k = 0; k < nc; k++)
			if (addrs[k].port == ports[i] && addrs[k].host == work[as[i].node].address)
				self = k;
		json_t *run = json_deep_copy(json_object_get(p, "spec"));
		json_object_del(run, "env");
		struct trial_env t;
		trial_env_of(json_object_get(p, "trial"), json_object_get(p, "job_spec"), &t);
		json_t *spec = replica_spec(run, &cl, self, as[i].gpus, &t);
		json_t *gpus = gpu_array(as[i].gpus);
		bool placed;
		rc = store_sched_commit_move(s->conn, job.id, json_integer_value(json_object_get(p, "id")),
					     work[as[i].node].name, gpus, ports[i], spec, &placed);
		if (rc == STORE_OK && placed)
			log_info("replica %s restarted on node %s",
				 json_string_value(json_object_get(p, "uid")), work[as[i].node].name);
		json_decref(gpus);
		json_decref(spec);
		json_decref(run);
	}
out:
	json_decref(cluster);
	free(addrs);
	free(reps);
	free(as);
	free(ports);
	return rc;
}

/* Restarted replicas, grouped by job (the snapshot orders them so). */
static enum store_rc place_pending(struct sched *s, const json_t *pending, struct place_cluster *cl,
				   struct node_work *work)
{
	size_t n = json_array_size(pending), first = 0;
	enum store_rc rc = STORE_OK;

	for (size_t i = 1; i <= n && rc == STORE_OK; i++) {
		if (i < n && json_integer_value(json_object_get(json_array_get(pending, i), "job")) ==
			     json_integer_value(json_object_get(json_array_get(pending, first), "job")))
			continue;
		rc = place_pending_job(s, pending, first, i, cl, work);
		first = i;
	}
	return rc;
}

/* One scheduling pass; see sched.h. */
static enum store_rc sched_tick(struct sched *s, bool full)
{
	json_t *snap = NULL;
	struct place_node *nodes = NULL;
	struct place_cluster *cl = NULL;	/* the index of nodes, for the pass */
	struct node_work *work = NULL;
	size_t nnodes = 0, nq = 0;
	struct job_plan *plans = NULL;
	struct policy_job *jobs = NULL;
	struct policy_running *running = NULL;
	size_t nrunning = 0;
	size_t *offsets = NULL;
	struct policy_outcome *outcome = NULL;
	struct place_assignment *as = NULL;
	struct snap_ref *cat_ref = NULL;
	int lost, restarted;
	enum store_rc rc;

	lost = restarted = 0;
	if (mono_usec() - s->last_housekeeping >= (int64_t)s->cfg.tick_ms * 1000) {
		s->last_housekeeping = mono_usec();
		rc = store_sched_housekeeping(s->conn, s->cfg.lease_s, &lost, &restarted);
		if (rc != STORE_OK)
			return rc;
		full = full || lost || restarted;
	}
	if (lost) {
		metric_add(&nodes_lost, (uint64_t)lost);
		log_warn("%d node(s) missed their lease and are LOST; %d replica(s) to restart",
			 lost, restarted);
	}
	/* Tuning studies first: the trials they add are placed by this pass. */
	if ((rc = study_pass(s->conn, s->studies)) != STORE_OK)
		return rc;
	if (mono_usec() - s->last_log_expiry > INT64_C(3600) * 1000000) {
		long deleted = 0;
		s->last_log_expiry = mono_usec();
		if (store_log_expire(s->conn, s->cfg.log_retention_days, &deleted) == STORE_OK &&
		    deleted)
			log_info("deleted %ld log entries older than %d days", deleted,
				 s->cfg.log_retention_days);
	}
	if (full) {
		s->last_full = mono_usec();
		s->starving = false;
	}
	rc = store_sched_snapshot(s->conn, s->cfg.lease_s, MAX_QUEUED_PER_PASS,
				  full ? 0 : s->max_seen_id, s->nodes_cache ? s->nodes_stamp : NULL,
				  &snap);
	if (rc != STORE_OK)
		return rc;
	json_t *node_list = json_object_get(snap, "nodes");
	if (json_is_array(node_list) && json_array_size(node_list)) {
		/* read: kept for the passes that find them unchanged */
		json_decref(s->nodes_cache);
		s->nodes_cache = json_incref(node_list);
		free(s->nodes_stamp);
		s->nodes_stamp = xstrdup(json_string_value(json_object_get(snap, "nodes_stamp")) ?: "");
	} else if (json_is_null(node_list) && s->nodes_cache) {
		node_list = s->nodes_cache;	/* unchanged since */
	}
	nnodes = load_nodes(node_list, &nodes, &work);
	cl = place_cluster_new(nodes, nnodes);
	rc = place_pending(s, json_object_get(snap, "pending"), cl, work);
	if (rc != STORE_OK)
		goto out;

	if (s->outcomes && (rc = sim_outcomes_refresh(s->outcomes, s->conn)) != STORE_OK)
		goto out;
	json_t *held = json_array();	/* jobs a "queue" rule holds: their log says so */
	/* Plans borrow the catalog's strings: hold it for the pass (SIGHUP may
	 * replace it meanwhile). */
	const struct catalog *cat = snapshot_acquire(s->cfg.catalogs, &cat_ref);
	json_t *queued = json_object_get(snap, "queued");
	nq = json_array_size(queued);
	plans = xcalloc(nq + 1, sizeof(*plans));
	jobs = xcalloc(nq + 1, sizeof(*jobs));
	offsets = xcalloc(nq + 1, sizeof(*offsets));
	outcome = xcalloc(nq + 1, sizeof(*outcome));
	size_t total = 0, kept = 0;
	for (size_t i = 0; i < nq; i++) {
		json_t *q = json_array_get(queued, i);
		char err[256];
		struct place_replica *reps;
		struct training_spec spec;
		spec_parse_stored(json_object_get(q, "spec"),
				  json_string_value(json_object_get(q, "region")), &spec);
		/* A trial: its values as flags after every replica's args. */
		const json_t *params = json_object_get(q, "trial_params");
		size_t nflags = json_array_size(params);
		char **flags = xcalloc(nflags + 1, sizeof(*flags));
		size_t kept_flags = 0;
		for (size_t k = 0; k < nflags; k++) {
			const json_t *pair = json_array_get(params, k);
			if (json_is_false(json_array_get(pair, 2)))
				continue;	/* a conditional parameter left out */
			flags[kept_flags++] = xasprintf("--%s=%s",
				json_string_value(json_array_get(pair, 0)) ?: "",
				json_string_value(json_array_get(pair, 1)) ?: "");
		}
		nflags = kept_flags;
		struct plan_trial trial = { (const char *const *)flags, nflags };
		int planned = spec_plan_replicas(cat, &spec, json_object_get(q, "labels"),
						 nflags ? &trial : NULL, &plans[kept], err, sizeof(err));
		for (size_t k = 0; k < nflags; k++)
			free(flags[k]);
		free(flags);
		spec_release(&spec);
		if (planned) {
			log_error("job %lld cannot be planned: %s",
				  (long long)json_integer_value(json_object_get(q, "id")), err);
			continue;
		}
		int rule = s->outcomes ? sim_outcomes_apply(s->outcomes, q, &plans[kept]) : -1;
		if (rule >= 0) {
			char *text = xasprintf("The job is queued: the emulator's rule rules[%d] (outcome "
					       "queue) holds it.", rule);
			json_array_append_new(held, json_pack("{s:O, s:s}", "job",
							      json_object_get(q, "id"), "text", text));
			free(text);
			job_plan_release(&plans[kept]);
			continue;
		}
		reps = xcalloc(plans[kept].n, sizeof(*reps));
		for (size_t k = 0; k < plans[kept].n; k++) {
			const struct replica_demand *d = &plans[kept].replicas[k].demand;
			reps[k] = (struct place_replica){ .vcpus = d->vcpus, .memory_mb = d->memory_mb,
							  .accel_type = d->accel_type,
							  .accel_count = d->accel_count, .tpu = d->tpu };
		}
		const char *strategy = json_string_value(json_object_get(q, "strategy")) ?: "";
		jobs[kept] = (struct policy_job){
			.pj = { json_integer_value(json_object_get(q, "id")),
				/* a Slurm job's pilots are in a region of their own */
				json_string_value(json_object_get(q, "place_region")) ?:
				json_string_value(json_object_get(q, "region")), plans[kept].n, reps },
			.project = json_string_value(json_object_get(q, "project")),
			.name = json_string_value(json_object_get(q, "job_id")),
			.priority = (int)json_integer_value(json_object_get(q, "priority")),
			.spot = !strcmp(strategy, "SPOT"),
			.qclass = !strcmp(strategy, "SPOT") || !strcmp(strategy, "FLEX_START") ?
				  QUOTA_PREEMPTIBLE : QUOTA_STANDARD,
			.waited_us = json_integer_value(json_object_get(q, "waited_ms")) * 1000,
		};
		quota_amounts_of_plan(&plans[kept], &jobs[kept].demand);
		offsets[kept] = total;
		total += plans[kept].n;
		kept++;
	}
	if (json_array_size(held))
		rc = store_sched_note_queued(s->conn, held, false, s->cfg.lease_s, &s->noted_id);
	json_decref(held);
	if (rc != STORE_OK)
		goto out;
	as = xcalloc(total + 1, sizeof(*as));
	nrunning = load_running(json_object_get(snap, "running"), nodes, nnodes, &running);
	struct snap_ref *quota_ref = NULL;
	const struct quotas *quotas = s->cfg.quotas ? snapshot_acquire(s->cfg.quotas, &quota_ref) :
				      NULL;
	struct policy_config pcfg = { quotas, (int64_t)s->cfg.starve_s * 1000000, true };
	struct policy_victim *victims = NULL;
	size_t nvictims = 0;
	policy_pass(nodes, nnodes, jobs, kept, running, nrunning, &pcfg, offsets, as, outcome,
		    &victims, &nvictims);
	json_t *batch = json_array();
	for (size_t i = 0, qi = 0; i < kept && rc == STORE_OK; i++) {
		/* Find the queued entry of jobs[i] (kept skips unplannable ones). */
		while (json_integer_value(json_object_get(json_array_get(queued, qi), "id")) !=
		       jobs[i].pj.id)
			qi++;
		if (outcome[i].why == POLICY_PLACED)
			json_array_append_new(batch, job_rows(json_array_get(queued, qi), &plans[i],
							      as + offsets[i], work));
		if (json_array_size(batch) == COMMIT_BATCH)
			rc = commit_batch(s, batch);
	}
	if (rc == STORE_OK)
		rc = commit_batch(s, batch);
	json_decref(batch);
	if (rc == STORE_OK && nvictims)
		rc = preempt(s, victims, nvictims, running, jobs);
	free(victims);
	for (size_t i = 0; i < kept; i++)
		if (outcome[i].why == POLICY_CAPACITY &&
		    jobs[i].waited_us >= (int64_t)s->cfg.starve_s * 1000000)
			s->starving = true;
	if (rc == STORE_OK)
		rc = note_reasons(s, cat, quotas, jobs, plans, outcome, kept, queued, full);
	snapshot_release(quota_ref);
	for (size_t i = 0; i < nq; i++) {
		int64_t qid = json_integer_value(json_object_get(json_array_get(queued, i), "id"));
		if (qid > s->max_seen_id)
			s->max_seen_id = qid;
	}
	if (nq == MAX_QUEUED_PER_PASS) {
		wake(s, &s->want_new);	/* more queued jobs than one pass takes */
	} else {
		/* Every queued job up to the newest has been considered, also those
		 * of regions without nodes: only capacity can change their fate. */
		int64_t newest = json_integer_value(json_object_get(snap, "max_queued_id"));
		if (newest > s->max_seen_id)
			s->max_seen_id = newest;
	}
out:
	/* Arrays are allocated (zeroed, nq + 1 long) only past the pending step;
	 * before that nq is 0 and nothing is freed here. */
	for (size_t i = 0; i < nq; i++) {
		free((void *)jobs[i].pj.replicas);
		job_plan_release(&plans[i]);
	}
	free_running(running, nrunning);
	snapshot_release(cat_ref);
	for (size_t i = 0; i < nnodes; i++)
		free(work[i].ports);
	free(plans);
	free(jobs);
	free(outcome);
	free(offsets);
	free(as);
	place_cluster_free(cl);
	free(nodes);
	free(work);
	json_decref(snap);
	return rc;
}

/*
 * The hub's thread: a wake-up forwarded by another server, "new" jobs or
 * "full". Only the leader runs passes; the others forward their own
 * wake-ups (and hear their own forwards: acting on them would forward
 * them again, and again).
 */
static void on_notify(void *ctx, const char *payload)
{
	struct sched *s = ctx;

	if (!sched_is_leader(s))
		return;
	wake(s, !strcmp(payload, "new") ? &s->want_new : &s->want_full);
}

/* Listening (again): forwarded wake-ups may have been missed meanwhile. */
static void on_listening(void *ctx)
{
	struct sched *s = ctx;

	if (sched_is_leader(s))
		wake(s, &s->want_full);
}

static const struct listen_sub_ops sched_sub_ops = { on_notify, on_listening, NULL };

/* The connection closes (why; NULL: the scheduler stops), and the lock with it. */
static void conn_down(void *ctx, struct store_conn *c, const char *why)
{
	struct sched *s = ctx;

	(void)c;
	/* Stopping hands leadership over on purpose: routine, INFO. */
	if (s->leader && why)
		log_warn("scheduler: leadership lost (%s)", why);
	else if (s->leader)
		log_info("scheduler: leadership given up (the server is stopping)");
	__atomic_store_n(&s->leader, false, __ATOMIC_RELEASE);
	s->conn = NULL;
	json_decref(s->nodes_cache);	/* the next leadership reads them afresh */
	s->nodes_cache = NULL;
	json_decref(s->reasons_sent);	/* and writes its reasons anew */
	s->reasons_sent = NULL;
	if (s->fleet) {
		char inc[17];
		replica_id_nonce(inc);
		sim_fleet_reset(s->fleet, inc);	/* the next leader registers its own */
	}
}

static void lose_leadership(struct sched *s, const char *why)
{
	bgconn_drop(s->bg, why);	/* conn_down() runs now */
}

/*
 * Emulator mode: the simulated fleet's turn after the pass (sim_fleet.h).
 * Returns when the fleet next needs a turn, on mono_usec()'s clock.
 */
static int64_t fleet_turn(struct sched *s, struct store_conn *c)
{
	int ended = 0;
	int64_t next = INT64_MAX;
	struct emu_clock clock;
	enum store_rc rc = store_clock_read(c, &clock);
	if (rc == STORE_OK)
		rc = sim_fleet_turn(s->fleet, c, &clock, now_usec(), &ended, &next);

	if (rc == STORE_NOT_FOUND || rc == STORE_STALE) {
		char inc[17];
		replica_id_nonce(inc);
		sim_fleet_reset(s->fleet, inc);
		return mono_usec();
	}
	if (rc == STORE_UNAVAILABLE || store_conn_lost(c)) {
		lose_leadership(s, "database connection lost");
		return INT64_MAX;
	}
	if (rc != STORE_OK) {
		log_error("emulator: the simulated fleet's turn failed: %s", store_rc_name(rc));
		return mono_usec() + 1000000;
	}
	if (ended)	/* capacity freed: place what waits for it */
		__atomic_store_n(&s->want_full, true, __ATOMIC_RELEASE);
	if (next == INT64_MAX)
		return INT64_MAX;
	int64_t in = next - now_usec();
	return mono_usec() + (in > 0 ? in : 0);
}

/* A node's desired set moved: the fleet's own wake the scheduler's thread. */
static void on_node_notify(void *ctx, const char *payload)
{
	struct sched *s = ctx;

	if (sched_is_leader(s) && sim_fleet_has_node(payload))
		wake(s, &s->want_new);
}

static void on_node_listening(void *ctx)
{
	struct sched *s = ctx;

	if (sched_is_leader(s))
		wake(s, &s->want_new);	/* notifications may have been missed */
}

static const struct listen_sub_ops node_sub_ops = { on_node_notify, on_node_listening, NULL };

/* One turn: campaign, forward wake-ups, or run a pass (leader). */
static void sched_turn(void *ctx, struct store_conn *c, short revents, struct bgloop_wait *w)
{
	struct sched *s = ctx;

	if (bgconn_stopping(s->bg))
		return;		/* no pass after sched_stop(): the lock goes at once */
	/* The connection only waits between statements: anything the server
	 * sends meanwhile is it going away. */
	if (c && revents && store_conn_consume(c) != STORE_OK) {
		lose_leadership(s, "database connection lost");
		return;
	}
	s->conn = c;
	if (!c)
		return;		/* the loop opens another, with backoff */
	w->events = POLLIN;
	if (!s->leader) {
		bool got = false;
		if (store_sched_try_lock(c, &got) != STORE_OK) {
			lose_leadership(s, "database unavailable");
			return;
		}
		if (got) {
			__atomic_store_n(&s->leader, true, __ATOMIC_RELEASE);
			metric_add(&leader_acquired, 1);
			log_info("scheduler: this server is the leader");
			/* What the last leader was asked for may not have been done. */
			__atomic_store_n(&s->want_full, true, __ATOMIC_RELEASE);
		}
	}
	if (!s->leader) {
		/* Forward our wake-ups to the leader, wherever it runs. */
		wake_taken(s);
		bool full = __atomic_exchange_n(&s->want_full, false, __ATOMIC_ACQ_REL);
		bool fresh = __atomic_exchange_n(&s->want_new, false, __ATOMIC_ACQ_REL);
		if ((full || fresh) && store_sched_poke(c, full ? "full" : "new") != STORE_OK) {
			lose_leadership(s, "database unavailable");
			return;
		}
		w->deadline_us = mono_usec() + 1000000;	/* campaign again */
		return;
	}
	int64_t t0 = mono_usec();
	if (t0 - s->last_pass < MIN_PASS_GAP_US) {
		/* Coalesce a storm of wake-ups into passes MIN_PASS_GAP_US apart
		 * (the wake-ups meanwhile do not write: wake()). */
		w->deadline_us = s->last_pass + MIN_PASS_GAP_US;
		return;
	}
	wake_taken(s);
	bool full = t0 - s->last_full >= FULL_PASS_EVERY_US || s->starving;
	/* A full pass asked for too soon stays asked for: the wait below is
	 * cut to the gap, and a later turn runs it. */
	if (!full && __atomic_load_n(&s->want_full, __ATOMIC_ACQUIRE) &&
	    t0 - s->last_full >= MIN_FULL_GAP_US)
		full = true;
	if (full)
		__atomic_store_n(&s->want_full, false, __ATOMIC_RELEASE);
	__atomic_store_n(&s->want_new, false, __ATOMIC_RELEASE);
	s->last_pass = t0;
	enum store_rc rc = sched_tick(s, full);
	int64_t took = mono_usec() - t0;
	metric_observe(&pass_duration, (double)took / 1e6);
	log_debug("scheduler pass: %.1f ms", (double)took / 1000.0);
	if (rc == STORE_UNAVAILABLE || store_conn_lost(c)) {
		lose_leadership(s, "database connection lost");
		return;
	}
	if (rc != STORE_OK)
		log_error("scheduler pass failed: %s", store_rc_name(rc));
	int64_t fleet_at = s->fleet ? fleet_turn(s, c) : INT64_MAX;
	if (s->fleet && (!s->leader || store_conn_lost(c)))
		return;		/* (fleet_turn gave the leadership up) */
	int64_t wait = __atomic_load_n(&s->want_full, __ATOMIC_ACQUIRE) ? MIN_FULL_GAP_US :
		       (int64_t)s->cfg.tick_ms * 1000;
	w->deadline_us = mono_usec() + wait;
	if (fleet_at < w->deadline_us)
		w->deadline_us = fleet_at;
}

static const struct bgconn_ops sched_conn_ops = { NULL, conn_down, sched_turn };

struct sched *sched_start(const struct sched_config *cfg)
{
	static const struct bgconn_config conn_cfg = {
		{ "scheduler", true, 100000, 500000, NULL }, "scheduler",
	};
	struct sched *s = xcalloc(1, sizeof(*s));

	s->cfg = *cfg;
	s->conninfo = xstrdup(cfg->conninfo);
	s->cfg.conninfo = s->conninfo;
	s->last_log_expiry = mono_usec() - INT64_C(3600) * 1000000 - 1;
	s->studies = study_pass_state_new();
	if (cfg->emulator) {
		struct snap_ref *ref = NULL;
		const struct catalog *cat = snapshot_acquire(cfg->catalogs, &ref);
		char inc[17];
		replica_id_nonce(inc);
		s->fleet = sim_fleet_new(cat, cfg->emulator_nodes_per_type, cfg->emulator_replica_s,
					 inc);
		s->outcomes = sim_outcomes_new();
		snapshot_release(ref);
		log_info("emulator: a simulated fleet of %zu nodes from the catalog (%d of each "
			 "kind in each region)", sim_fleet_size(s->fleet), cfg->emulator_nodes_per_type);
	}
	bgconn_start(s->conninfo, &conn_cfg, &sched_conn_ops, s, &s->bg);
	if (cfg->hub)
		s->sub = listen_hub_subscribe(cfg->hub, "tp_sched", &sched_sub_ops, s);
	if (cfg->hub && s->fleet)
		s->node_sub = listen_hub_subscribe(cfg->hub, "tp_node", &node_sub_ops, s);
	return s;
}

void sched_stop(struct sched *s)
{
	if (!s)
		return;
	listen_hub_unsubscribe(s->cfg.hub, s->sub);
	s->sub = NULL;
	listen_hub_unsubscribe(s->cfg.hub, s->node_sub);
	s->node_sub = NULL;
	bgconn_stop(s->bg);	/* closing the connection releases the lock: a standby takes over */
}

void sched_free(struct sched *s)
{
	if (!s)
		return;
	bgconn_free(s->bg);
	study_pass_state_free(s->studies);
	sim_fleet_free(s->fleet);
	sim_outcomes_free(s->outcomes);
	json_decref(s->nodes_cache);
	json_decref(s->reasons_sent);
	free(s->nodes_stamp);
	free(s->conninfo);
	free(s);
}
