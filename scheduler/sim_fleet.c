/*
 * sim_fleet.c - the emulator's simulated fleet (sim_fleet.h).
 */
#include "sim_fleet.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_clock.h"
#include "log.h"
#include "replica_state.h"
#include "store_node.h"
#include "wire.h"

#define SIM_PREFIX "sim-"
/* A simulated node is never late: its lease outlasts any emulated run. */
#define SIM_LEASE_S (366 * 86400)
#define SIM_PORT_LO 20000
#define SIM_PORT_HI 20999
/* Syncs of one node in one turn: a start's report, then a stop's, ... */
#define SIM_ROUNDS 4

struct sim_rep {
	char *id;
	int attempt;
	int64_t seq;
	int64_t start_us, end_us;	/* end_us INT64_MAX: runs until stopped */
	bool ended;			/* its end is decided (reported or to report) */
	bool final_sent;		/* the server has its end */
	bool news;			/* a report to send */
	bool lost;			/* ends LOST (preempted), not EXITED */
	bool skipped;			/* told to stop before it started: FAILED_TO_START */
	int exit_code;
	char *message;
	bool has_metric;
	double metric;
	json_t *logs;			/* lines the server has not accepted yet */
};

struct sim_node {
	struct node_info info;		/* strings owned (below) */
	char *name, *region, *zone, *machine, *accel, *tpu;
	int64_t version;		/* the desired set last played; -1: none */
	struct sim_rep *reps;
	size_t n, cap;
	bool dirty;
};

struct sim_fleet {
	struct emu_clock clock;		/* this turn's (reports carry real instants) */
	struct sim_node *nodes;
	size_t n, cap;
	double replica_s;
	char incarnation[40];
	bool registered;
};

bool sim_fleet_has_node(const char *node)
{
	return node && !strncmp(node, SIM_PREFIX, strlen(SIM_PREFIX));
}

/* ---- generation ------------------------------------------------------- */

/* The highest count of accelerator a that machine m takes (0: none). */
static int machine_takes(const struct catalog_machine *m, int a)
{
	if (m->accelerator == a)
		return m->accelerator_count;
	uint64_t bits = m->counts[a];
	return bits ? 63 - __builtin_clzll(bits) : 0;
}

/* "NVIDIA_TESLA_A100" -> "nvidia-tesla-a100" */
static char *slug(const char *s)
{
	char *out = xstrdup(s);
	for (char *p = out; *p; p++)
		*p = *p == '_' ? '-' : (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	return out;
}

static void add_node(struct sim_fleet *f, const char *region, const char *zone, const char *kind,
		     int k, const char *machine, int vcpus, int64_t memory_mb,
		     const struct catalog_accelerator *acc, int count)
{
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->nodes = xrealloc(f->nodes, f->cap * sizeof(*f->nodes));
	}
	struct sim_node *n = &f->nodes[f->n++];
	memset(n, 0, sizeof(*n));
	n->name = xasprintf(SIM_PREFIX "%s-%s-%d", zone, kind, k);
	n->region = xstrdup(region);
	n->zone = xstrdup(zone);
	n->machine = xstrdup(machine ? machine : "");
	n->version = -1;
	n->info.name = n->name;
	n->info.region = n->region;
	n->info.zone = n->zone;
	n->info.machine_type = n->machine;
	n->info.vcpus = vcpus;
	n->info.memory_mb = memory_mb;
	n->info.address = n->name;
	n->info.port_lo = SIM_PORT_LO;
	n->info.port_hi = SIM_PORT_HI;
	n->info.runtime = "simulate";
	n->info.agent_version = "emulator";
	n->info.lease_s = SIM_LEASE_S;
	n->info.stop_grace_s = 0;
	n->info.disconnect_policy = "keep_running";
	if (acc && acc->tpu) {
		n->tpu = xstrdup(acc->name);
		n->info.tpu_type = n->tpu;
		n->info.tpu_cores = count;
	} else if (acc) {
		n->accel = xstrdup(acc->name);
		n->info.accel_type = n->accel;
		n->info.accel_count = count > 64 ? 64 : count;
	}
}

/* The zone for the k-th node of a kind: round robin over those offering it. */
static const char *zone_for(const struct catalog_region *r, int a, int k)
{
	size_t offering = 0;
	for (size_t z = 0; z < r->n_zones; z++)
		offering += a < 0 || (r->zones[z].accelerators >> a & 1);
	if (!offering)
		return r->name;	/* a region that names no zone */
	size_t want = (size_t)k % offering;
	for (size_t z = 0; z < r->n_zones; z++)
		if ((a < 0 || (r->zones[z].accelerators >> a & 1)) && !want--)
			return r->zones[z].name;
	return r->name;
}

struct sim_fleet *sim_fleet_new(const struct catalog *cat, int nodes_per_type, double replica_s,
				const char *incarnation)
{
	struct sim_fleet *f = xcalloc(1, sizeof(*f));
	size_t nm = catalog_machine_count(cat), na = catalog_accelerator_count(cat);

	snprintf(f->incarnation, sizeof(f->incarnation), "emulator-%s", incarnation);
	f->replica_s = replica_s;
	for (size_t ri = 0; ri < catalog_region_total(cat); ri++) {
		const struct catalog_region *r = catalog_region(cat, ri);
		/* CPU nodes: the region's largest machine. */
		const struct catalog_machine *big = NULL;
		int64_t max_mem = 0;
		for (size_t i = 0; i < nm; i++) {
			const struct catalog_machine *m = catalog_machine(cat, i);
			if (m->tpu_host || m->accelerator >= 0 || !(m->apis & r->apis))
				continue;	/* (machines with GPUs built in have nodes of their own) */
			if (!big || m->vcpus > big->vcpus)
				big = m;
			if (m->memory_mb > max_mem)
				max_mem = m->memory_mb;
		}
		for (int k = 0; big && k < nodes_per_type; k++)
			add_node(f, r->name, zone_for(r, -1, k), "cpu", k, big->name, big->vcpus,
				 max_mem, NULL, 0);
		/* Each accelerator offered here: its largest machine's worth. */
		for (size_t a = 0; a < na; a++) {
			if (!(r->accelerators >> a & 1))
				continue;
			const struct catalog_accelerator *acc = catalog_accelerator(cat, a);
			const struct catalog_machine *carrier = NULL;
			int count = 0, vcpus = 0;
			int64_t mem = 0;
			for (size_t i = 0; i < nm; i++) {
				const struct catalog_machine *m = catalog_machine(cat, i);
				int c = machine_takes(m, (int)a);
				if (!c)
					continue;
				if (c > count || (c == count && carrier && m->vcpus > carrier->vcpus))
					carrier = m;
				count = c > count ? c : count;
				vcpus = m->vcpus > vcpus ? m->vcpus : vcpus;
				mem = m->memory_mb > mem ? m->memory_mb : mem;
			}
			if (!count)
				continue;	/* offered, but no machine type takes it */
			char *kind = slug(acc->name);
			for (int k = 0; k < nodes_per_type; k++)
				add_node(f, r->name, zone_for(r, (int)a, k), kind, k, carrier->name, vcpus,
					 mem, acc, count);
			free(kind);
		}
	}
	return f;
}

size_t sim_fleet_size(const struct sim_fleet *f)
{
	return f ? f->n : 0;
}

const struct node_info *sim_fleet_node(const struct sim_fleet *f, size_t i)
{
	return &f->nodes[i].info;
}

static void rep_release(struct sim_rep *r)
{
	free(r->id);
	free(r->message);
	json_decref(r->logs);
}

static void node_forget_all(struct sim_node *n)
{
	for (size_t i = 0; i < n->n; i++)
		rep_release(&n->reps[i]);
	n->n = 0;
	n->version = -1;
	n->dirty = true;
}

void sim_fleet_reset(struct sim_fleet *f, const char *incarnation)
{
	if (!f)
		return;
	f->registered = false;
	snprintf(f->incarnation, sizeof(f->incarnation), "emulator-%s", incarnation);
	for (size_t i = 0; i < f->n; i++)
		node_forget_all(&f->nodes[i]);
}

void sim_fleet_free(struct sim_fleet *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		struct sim_node *n = &f->nodes[i];
		node_forget_all(n);
		free(n->reps);
		free(n->name);
		free(n->region);
		free(n->zone);
		free(n->machine);
		free(n->accel);
		free(n->tpu);
	}
	free(f->nodes);
	free(f);
}

/* ---- playing replicas ------------------------------------------------- */

/* A real instant for a report: the server puts it on the emulator's clock. */
static void report_time(const struct sim_fleet *f, int64_t emu_us, char *buf, size_t len)
{
	wire_time_format(emu_clock_real_for(&f->clock, emu_us), buf, len);
}

static void rep_log(const struct sim_fleet *f, struct sim_rep *r, int64_t now_us, bool err,
		    const char *fmt, ...) PRINTF_LIKE(5, 6);

static void rep_log(const struct sim_fleet *f, struct sim_rep *r, int64_t now_us, bool err,
		    const char *fmt, ...)
{
	char when[40];
	va_list ap;

	char *text = NULL;
	va_start(ap, fmt);
	int len = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (len < 0)
		abort();	/* out of memory, as x*alloc */
	report_time(f, now_us, when, sizeof(when));
	if (!r->logs)
		r->logs = json_array();
	json_array_append_new(r->logs, json_pack("{s:s,s:s,s:s}", "stream", err ? "stderr" : "stdout",
						 "time", when, "text", text));
	free(text);
}

/*
 * The replica's script: the desired replica's `simulate` (an object, or
 * the job label's "run-<N>s-exit-<C>" / "fail-<C>-after-<N>s" /
 * "succeed-after-<N>s"), else the fleet's default.
 */
struct script {
	double seconds;
	int exit_code;
	enum { OUT_EXIT, OUT_HANG, OUT_PREEMPT } outcome;
	int preempt_times;
	bool has_metric;
	double metric;
};

static bool script_text(const char *s, struct script *sc)
{
	double n;
	int c, used = 0;

	if (sscanf(s, "run-%lfs-exit-%d%n", &n, &c, &used) == 2 && !s[used]) {
	} else if (used = 0, sscanf(s, "fail-%d-after-%lfs%n", &c, &n, &used) == 2 && !s[used]) {
	} else if (used = 0, sscanf(s, "succeed-after-%lfs%n", &n, &used) == 1 && !s[used]) {
		c = 0;
	} else {
		return false;
	}
	if (!isfinite(n) || n < 0 || n > 366.0 * 86400 || c < 0 || c > 255)
		return false;
	sc->seconds = n;
	sc->exit_code = c;
	return true;
}

static void script_of(const json_t *sim, double def_s, struct script *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->seconds = def_s;
	sc->preempt_times = 1;
	if (json_is_string(sim)) {
		if (!script_text(json_string_value(sim), sc))
			sc->seconds = def_s;
		return;
	}
	if (!json_is_object(sim))
		return;
	const json_t *v;
	if ((v = json_object_get(sim, "seconds")) && json_is_number(v) &&
	    json_number_value(v) >= 0 && json_number_value(v) <= 366.0 * 86400)
		sc->seconds = json_number_value(v);
	if ((v = json_object_get(sim, "exitCode")) && json_is_integer(v) &&
	    json_integer_value(v) >= 0 && json_integer_value(v) <= 255)
		sc->exit_code = (int)json_integer_value(v);
	const char *o = json_string_value(json_object_get(sim, "outcome"));
	if (o && !strcmp(o, "hang"))
		sc->outcome = OUT_HANG;
	else if (o && !strcmp(o, "preempt"))
		sc->outcome = OUT_PREEMPT;
	if ((v = json_object_get(sim, "preemptTimes")) && json_is_integer(v) &&
	    json_integer_value(v) >= 0 && json_integer_value(v) <= 1000)
		sc->preempt_times = (int)json_integer_value(v);
	if ((v = json_object_get(sim, "metric")) && json_is_number(v) &&
	    isfinite(json_number_value(v))) {
		sc->has_metric = true;
		sc->metric = json_number_value(v);
	}
}

static struct sim_rep *rep_find(struct sim_node *n, const char *id)
{
	for (size_t i = 0; i < n->n; i++)
		if (!strcmp(n->reps[i].id, id))
			return &n->reps[i];
	return NULL;
}

/* A new replica of n for the desired d, at now_us. */
static struct sim_rep *rep_add(struct sim_node *n, const json_t *d, int64_t now_us)
{
	if (n->n == n->cap) {
		n->cap = n->cap ? n->cap * 2 : 4;
		n->reps = xrealloc(n->reps, n->cap * sizeof(*n->reps));
	}
	struct sim_rep *r = &n->reps[n->n++];
	memset(r, 0, sizeof(*r));
	r->id = xstrdup(json_string_value(json_object_get(d, "replica")));
	r->attempt = (int)json_integer_value(json_object_get(d, "attempt"));
	r->start_us = r->end_us = now_us;
	r->news = true;
	n->dirty = true;
	return r;
}

/* Told to stop before it was ever played: it ends, never started (as an agent's). */
static void rep_skip(struct sim_node *n, const json_t *d, int64_t now_us)
{
	struct sim_rep *r = rep_add(n, d, now_us);
	r->ended = r->skipped = true;
	r->message = xstrdup(REPLICA_SKIPPED_MESSAGE);
}

static void rep_start(struct sim_fleet *f, struct sim_node *n, const json_t *d, int64_t now_us)
{
	struct script sc;
	struct sim_rep *r = rep_add(n, d, now_us);

	script_of(json_object_get(d, "simulate"), f->replica_s, &sc);
	bool preempt = sc.outcome == OUT_PREEMPT && r->attempt <= sc.preempt_times;
	r->end_us = sc.outcome == OUT_HANG ? INT64_MAX : now_us + (int64_t)llround(sc.seconds * 1e6);
	r->exit_code = sc.exit_code;
	r->lost = preempt;
	r->has_metric = sc.has_metric;
	r->metric = sc.metric;
	if (sc.outcome == OUT_HANG)
		rep_log(f, r, now_us, false, "simulate: replica %s attempt %d runs on node %s until it "
			"is stopped", r->id, r->attempt, n->name);
	else if (preempt)
		rep_log(f, r, now_us, false, "simulate: replica %s attempt %d runs on node %s for %gs, "
			"then its VM is preempted", r->id, r->attempt, n->name, sc.seconds);
	else
		rep_log(f, r, now_us, false, "simulate: replica %s attempt %d runs on node %s for %gs, "
			"then exits with %d", r->id, r->attempt, n->name, sc.seconds, sc.exit_code);
	/* What a trainer prints of its environment: TF_CONFIG, CLUSTER_SPEC... */
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(d, "env"), i, e)
		if (json_is_string(e))
			rep_log(f, r, now_us, false, "%s", json_string_value(e));
}

static void rep_end(const struct sim_fleet *f, struct sim_node *n, struct sim_rep *r, int64_t at_us,
		    bool stopped)
{
	r->ended = true;
	r->news = true;
	r->end_us = at_us;
	n->dirty = true;
	if (stopped) {
		r->lost = false;
		r->exit_code = 143;
		rep_log(f, r, at_us, true, "simulate: stopped by SIGTERM");
	} else if (r->lost) {
		r->message = xasprintf("The simulated VM of node %s was preempted (a SPOT VM's "
				       "preemption).", n->name);
		rep_log(f, r, at_us, true, "simulate: preempted");
	} else {
		rep_log(f, r, at_us, r->exit_code != 0, "simulate: exiting with %d", r->exit_code);
	}
}

static json_t *rep_report(const struct sim_fleet *f, struct sim_rep *r)
{
	char start[40], end[40];
	json_t *o;

	report_time(f, r->start_us, start, sizeof(start));
	o = json_pack("{s:s,s:i,s:I,s:s}", "replica", r->id, "attempt", r->attempt,
		      "seq", (json_int_t)++r->seq, "state",
		      replica_state_name(!r->ended ? REPLICA_RUNNING : r->lost ? REPLICA_LOST :
					 r->skipped ? REPLICA_FAILED_TO_START : REPLICA_EXITED));
	if (!r->skipped)	/* never started: no start time */
		json_object_set_new(o, "startTime", json_string(start));
	if (r->ended) {
		report_time(f, r->end_us, end, sizeof(end));
		json_object_set_new(o, "endTime", json_string(end));
		if (!r->lost && !r->skipped)
			json_object_set_new(o, "exitCode", json_integer(r->exit_code));
		if (r->message)
			json_object_set_new(o, "message", json_string(r->message));
		if (r->has_metric && !r->lost)
			json_object_set_new(o, "metrics", json_pack("[{s:i,s:f}]", "step", 1, "value",
								    r->metric));
	}
	json_object_set_new(o, "logs", r->logs ? json_incref(r->logs) : json_array());
	return o;
}

/* Plays a desired set: starts, stops, forgets. */
static void apply_desired(struct sim_fleet *f, struct sim_node *n, const json_t *desired,
			  int64_t now_us)
{
	size_t i;
	json_t *d;

	/* Replicas the server no longer lists are forgotten: done, or gone
	 * with their job (a reset) or their attempt (a restart). */
	for (size_t k = 0; k < n->n;) {
		bool listed = false;
		json_array_foreach(desired, i, d)
			if (!strcmp(json_string_value(json_object_get(d, "replica")) ?: "",
				    n->reps[k].id) &&
			    json_integer_value(json_object_get(d, "attempt")) == n->reps[k].attempt)
				listed = true;
		if (listed || (n->reps[k].news && !n->reps[k].final_sent && n->reps[k].ended)) {
			k++;
			continue;
		}
		rep_release(&n->reps[k]);
		n->reps[k] = n->reps[--n->n];
	}
	json_array_foreach(desired, i, d) {
		const char *id = json_string_value(json_object_get(d, "replica"));
		const char *want = json_string_value(json_object_get(d, "desired"));
		if (!id || !want)
			continue;
		struct sim_rep *r = rep_find(n, id);
		if (r && r->attempt != json_integer_value(json_object_get(d, "attempt"))) {
			rep_release(r);
			*r = n->reps[--n->n];
			r = NULL;
		}
		if (!r && !strcmp(want, "RUN"))
			rep_start(f, n, d, now_us);
		else if (!r)
			rep_skip(n, d, now_us);
		else if (r && !r->ended && strcmp(want, "RUN"))
			rep_end(f, n, r, now_us, true);
	}
}

static enum store_rc sync_node(struct sim_fleet *f, struct sim_node *n, struct store_conn *c,
			       int64_t now_us, int *ended)
{
	for (int round = 0; round < SIM_ROUNDS && n->dirty; round++) {
		json_t *reports = json_array(), *desired = NULL;
		int64_t version = 0;
		bool changed = false;
		n->dirty = false;
		for (size_t i = 0; i < n->n; i++)
			if (n->reps[i].news)
				json_array_append_new(reports, rep_report(f, &n->reps[i]));
		enum store_rc rc = store_node_sync_on(c, n->name, f->incarnation, SIM_LEASE_S,
						      reports, &desired, &version, &changed);
		json_decref(reports);
		if (rc == STORE_NOT_FOUND || rc == STORE_STALE) {
			/* The node was deleted or taken over (another leader's
			 * fleet): the scheduler registers the fleet anew. */
			log_warn("emulator: simulated node %s: %s", n->name, store_rc_name(rc));
			return rc;
		}
		if (rc != STORE_OK) {
			n->dirty = true;
			return rc;
		}
		for (size_t i = 0; i < n->n; i++) {
			struct sim_rep *r = &n->reps[i];
			if (!r->news)
				continue;
			r->news = false;
			json_decref(r->logs);
			r->logs = NULL;
			if (r->ended && !r->final_sent) {
				r->final_sent = true;
				++*ended;
			}
		}
		n->version = version;
		apply_desired(f, n, desired, now_us);
		json_decref(desired);
	}
	return STORE_OK;
}

static enum store_rc register_fleet(struct sim_fleet *f, struct store_conn *c)
{
	char cluster[64];
	int64_t t0 = mono_usec();
	for (size_t i = 0; i < f->n; i++) {
		struct sim_node *n = &f->nodes[i];
		node_forget_all(n);
		n->info.incarnation = f->incarnation;
		enum store_rc rc = store_node_register_on(c, &n->info, cluster, sizeof(cluster));
		if (rc != STORE_OK)
			return rc;
	}
	f->registered = true;
	log_info("emulator: %zu simulated nodes registered in %.0f ms (incarnation %s)", f->n,
		 (double)(mono_usec() - t0) / 1000.0, f->incarnation);
	return STORE_OK;
}

enum store_rc sim_fleet_turn(struct sim_fleet *f, struct store_conn *c,
			     const struct emu_clock *clock, int64_t real_us, int *ended,
			     int64_t *next_real_us)
{
	enum store_rc rc;
	json_t *versions = NULL;
	int64_t now_us = emu_clock_at(clock, real_us), next = INT64_MAX;
	int64_t *next_us = &next;

	f->clock = *clock;
	*ended = 0;
	*next_real_us = INT64_MAX;
	if (!f->registered && (rc = register_fleet(f, c)) != STORE_OK)
		return rc;
	if ((rc = store_node_versions_of(c, f->incarnation, &versions)) != STORE_OK)
		return rc;
	for (size_t i = 0; i < f->n; i++) {
		struct sim_node *n = &f->nodes[i];
		json_t *v = json_object_get(versions, n->name);
		if (v && json_integer_value(v) != n->version)
			n->dirty = true;
		for (size_t k = 0; k < n->n; k++) {
			struct sim_rep *r = &n->reps[k];
			if (!r->ended && r->end_us <= now_us)
				rep_end(f, n, r, r->end_us, false);
		}
	}
	json_decref(versions);
	for (size_t i = 0; i < f->n && f->registered; i++) {
		struct sim_node *n = &f->nodes[i];
		if (n->dirty && (rc = sync_node(f, n, c, now_us, ended)) != STORE_OK)
			return rc;
		for (size_t k = 0; k < n->n; k++)
			if (!n->reps[k].ended && n->reps[k].end_us < *next_us)
				*next_us = n->reps[k].end_us;
	}
	*next_real_us = emu_clock_real_for(clock, next);
	return STORE_OK;
}
