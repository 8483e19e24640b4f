/*
 * api_metrics.c - GET /metrics: the HTTP layer's figures (requests by route
 * and code, latency), the cluster's gauges from the database, the store's,
 * pipe's, job cache's and scheduler's figures asked of them, and every
 * registered figure of lib/metrics.h (the store's and scheduler's
 * histograms among them).
 */
#include "api_metrics.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "job_cache.h"
#include "job_state.h"
#include "log.h"
#include "replica_state.h"
#include "scheduler.h"
#include "slurm_backend.h"
#include "store_metrics.h"
#include "store_pipe.h"

/* --- this process's figures ---------------------------------------------- */

/* Route slots: one per entry of routes[], the last for requests no route matched. */
#define MAX_ROUTE_SLOTS 96
/* Every status the server sends; anything else is counted as "other". */
static const int codes[] = { 200, 201, 204, 304, 400, 401, 403, 404, 405, 408, 409, 412,
			     413, 414, 415, 417, 429, 431, 499, 500, 501, 502, 503, 504, 505 };
#define NCODES (ARRAY_SIZE(codes) + 1)

static struct {
	_Atomic uint64_t requests[MAX_ROUTE_SLOTS][NCODES];
	struct metrics_histogram latency[MAX_ROUTE_SLOTS];
} m;

static size_t route_slot(const struct route *route)
{
	size_t unmatched = routes_count < MAX_ROUTE_SLOTS ? routes_count : MAX_ROUTE_SLOTS - 1;
	if (!route)
		return unmatched;
	size_t i = (size_t)(route - routes);
	return i < unmatched ? i : unmatched;
}

void metrics_http_observe(const struct route *route, int status, int64_t duration_us)
{
	size_t slot = route_slot(route), c = 0;

	while (c < ARRAY_SIZE(codes) && codes[c] != status)
		c++;
	atomic_fetch_add_explicit(&m.requests[slot][c], 1, memory_order_relaxed);
	metrics_histogram_observe(&m.latency[slot], &metrics_latency_buckets,
				  (double)duration_us / 1e6);
}

static const char *slot_name(size_t slot)
{
	return slot < routes_count && slot < MAX_ROUTE_SLOTS - 1 ? routes[slot].operation_id
								  : "unmatched";
}

void metrics_write_http(struct strbuf *sb)
{
	struct strbuf lb = STRBUF_INIT;
	size_t slots = route_slot(NULL) + 1;

	metrics_family(sb, "trainplane_http_requests_total", "counter",
		       "HTTP requests answered by this server, by route (operation id, or "
		       "\"unmatched\") and status code.");
	for (size_t s = 0; s < slots; s++) {
		for (size_t c = 0; c < NCODES; c++) {
			uint64_t v = atomic_load_explicit(&m.requests[s][c], memory_order_relaxed);
			char code[16];
			if (!v)
				continue;
			if (c < ARRAY_SIZE(codes))
				snprintf(code, sizeof(code), "%d", codes[c]);
			else
				snprintf(code, sizeof(code), "other");
			sb_reset(&lb);
			metrics_label(&lb, "route", slot_name(s));
			metrics_label(&lb, "code", code);
			metrics_sample_u64(sb, "trainplane_http_requests_total", sb_str(&lb), v);
		}
	}
	metrics_family(sb, "trainplane_http_request_duration_seconds", "histogram",
		       "Time from a request's arrival to its answer (long-polls included), "
		       "by route.");
	for (size_t s = 0; s < slots; s++) {
		uint64_t any = 0;
		for (size_t i = 0; i <= metrics_latency_buckets.n; i++)
			any |= atomic_load_explicit(&m.latency[s].count[i], memory_order_relaxed);
		if (!any)
			continue;
		sb_reset(&lb);
		metrics_label(&lb, "route", slot_name(s));
		metrics_write_histogram(sb, "trainplane_http_request_duration_seconds", sb_str(&lb),
					&m.latency[s], &metrics_latency_buckets);
	}
	sb_release(&lb);
}

/* --- the cluster, from the database ------------------------------------ */

static const char *const job_apis[] = { "ml", "vertex" };
/* Nodes by the state listings show: a READY node that drains is DRAINING
 * (a flag, not a state of lib/node_state.h's machine). */
static const char *const node_states[] = { "READY", "DRAINING", "STOPPING", "LOST" };

/* The sum of "n" (1 where absent) over the elements of list whose fields k1 (and k2 when given) equal v1 (v2). */
static json_int_t count_of(const json_t *list, const char *k1, const char *v1, const char *k2,
			   const char *v2)
{
	size_t i;
	json_t *e;
	json_int_t n = 0;

	json_array_foreach(list, i, e) {
		const char *a = json_string_value(json_object_get(e, k1));
		const char *b = k2 ? json_string_value(json_object_get(e, k2)) : NULL;
		if (a && !strcmp(a, v1) && (!k2 || (b && !strcmp(b, v2))))
			n += json_object_get(e, "n") ? json_integer_value(json_object_get(e, "n")) : 1;
	}
	return n;
}

/* Capacity of one accelerator type in one zone. */
struct accel {
	const char *type, *zone;
	json_int_t total, free;
};

static void accel_add(struct accel **list, size_t *n, const char *type, const char *zone,
		      json_int_t total, json_int_t free_)
{
	for (size_t i = 0; i < *n; i++) {
		if (!strcmp((*list)[i].type, type) && !strcmp((*list)[i].zone, zone)) {
			(*list)[i].total += total;
			(*list)[i].free += free_;
			return;
		}
	}
	*list = xrealloc(*list, (*n + 1) * sizeof(**list));
	(*list)[(*n)++] = (struct accel){ type, zone, total, free_ };
}

void metrics_write_cluster(struct strbuf *sb, const char *snapshot_json)
{
	json_t *snap = json_loads(snapshot_json, 0, NULL);
	json_t *nodes = json_object_get(snap, "nodes"), *node;
	struct strbuf lb = STRBUF_INIT;
	struct accel *accels = NULL;
	size_t naccels = 0, i;

	metrics_family(sb, "trainplane_jobs", "gauge", "Jobs by API (ml, vertex) and state.");
	for (size_t a = 0; a < ARRAY_SIZE(job_apis); a++) {
		for (enum job_state s = JOB_QUEUED; s < JOB_STATE_COUNT; s++) {
			sb_reset(&lb);
			metrics_label(&lb, "api", job_apis[a]);
			metrics_label(&lb, "state", job_state_name(s));
			metrics_sample(sb, "trainplane_jobs", sb_str(&lb),
				       (double)count_of(json_object_get(snap, "jobs"), "api",
							job_apis[a], "state", job_state_name(s)));
		}
	}
	metrics_family(sb, "trainplane_replicas", "gauge",
		       "Replicas (one per job, role and index; restarts reuse theirs) by state.");
	for (unsigned s = REPLICA_PENDING; s < REPLICA_STATE_COUNT; s++) {
		sb_reset(&lb);
		metrics_label(&lb, "state", replica_state_name(s));
		metrics_sample(sb, "trainplane_replicas", sb_str(&lb),
			       (double)count_of(json_object_get(snap, "replicas"), "state",
						replica_state_name(s), NULL, NULL));
	}
	metrics_family(sb, "trainplane_nodes", "gauge", "Agent nodes by state.");
	for (size_t s = 0; s < ARRAY_SIZE(node_states); s++) {
		sb_reset(&lb);
		metrics_label(&lb, "state", node_states[s]);
		metrics_sample(sb, "trainplane_nodes", sb_str(&lb),
			       (double)count_of(nodes, "state", node_states[s], NULL, NULL));
	}
	metrics_family(sb, "trainplane_node_last_sync_age_seconds", "gauge",
		       "Seconds since each node's last agent sync (its lag).");
	json_array_foreach(nodes, i, node) {
		sb_reset(&lb);
		metrics_label(&lb, "node", json_string_value(json_object_get(node, "name")));
		metrics_sample(sb, "trainplane_node_last_sync_age_seconds", sb_str(&lb),
			       json_number_value(json_object_get(node, "sync_age")));
	}
	/* Capacity of READY and DRAINING nodes; free only where placement may put work. */
	json_array_foreach(nodes, i, node) {
		const char *state = json_string_value(json_object_get(node, "state"));
		const char *zone = json_string_value(json_object_get(node, "zone"));
		const char *gpu = json_string_value(json_object_get(node, "accel_type"));
		const char *tpu = json_string_value(json_object_get(node, "tpu_type"));
		bool ready = state && !strcmp(state, "READY");
		if (!state || !strcmp(state, "LOST") || !zone)
			continue;
		if (gpu) {
			json_int_t total = json_integer_value(json_object_get(node, "accel_count"));
			json_int_t used = json_integer_value(json_object_get(node, "used_gpus"));
			accel_add(&accels, &naccels, gpu, zone, total,
				  ready && total > used ? total - used : 0);
		}
		if (tpu) {
			json_int_t cores = json_integer_value(json_object_get(node, "tpu_cores"));
			bool busy = json_is_true(json_object_get(node, "tpu_busy"));
			accel_add(&accels, &naccels, tpu, zone, cores, ready && !busy ? cores : 0);
		}
	}
	metrics_family(sb, "trainplane_accelerators", "gauge",
		       "Accelerators (GPUs; TPU cores) of READY and DRAINING nodes, by type and "
		       "zone.");
	for (i = 0; i < naccels; i++) {
		sb_reset(&lb);
		metrics_label(&lb, "type", accels[i].type);
		metrics_label(&lb, "zone", accels[i].zone);
		metrics_sample(sb, "trainplane_accelerators", sb_str(&lb), (double)accels[i].total);
	}
	metrics_family(sb, "trainplane_accelerators_free", "gauge",
		       "Accelerators not given to a replica on READY nodes (not draining), by "
		       "type and zone.");
	for (i = 0; i < naccels; i++) {
		sb_reset(&lb);
		metrics_label(&lb, "type", accels[i].type);
		metrics_label(&lb, "zone", accels[i].zone);
		metrics_sample(sb, "trainplane_accelerators_free", sb_str(&lb),
			       (double)accels[i].free);
	}
	free(accels);
	metrics_family(sb, "trainplane_project_usage", "gauge",
		       "What each project's placed replicas hold, by region, quota class (standard; "
		       "preemptible: SPOT and FLEX_START) and resource (accelerators by type; cpus: "
		       "the vCPUs of replicas without accelerators).");
	json_array_foreach(json_object_get(snap, "usage"), i, node) {
		sb_reset(&lb);
		metrics_label(&lb, "project", json_string_value(json_object_get(node, "project")) ?: "");
		metrics_label(&lb, "region", json_string_value(json_object_get(node, "region")) ?: "");
		metrics_label(&lb, "class", json_string_value(json_object_get(node, "class")) ?: "");
		metrics_label(&lb, "resource", json_string_value(json_object_get(node, "resource")) ?: "");
		metrics_sample(sb, "trainplane_project_usage", sb_str(&lb),
			       (double)json_integer_value(json_object_get(node, "n")));
	}
	metrics_family(sb, "trainplane_queued_jobs", "gauge",
		       "Queued jobs by the reason they wait (capacity, never_fits, quota, reserved, "
		       "preempting; unknown: not looked at yet, or no node in their region).");
	json_array_foreach(json_object_get(snap, "queued"), i, node) {
		sb_reset(&lb);
		metrics_label(&lb, "reason", json_string_value(json_object_get(node, "reason")) ?: "");
		metrics_sample(sb, "trainplane_queued_jobs", sb_str(&lb),
			       (double)json_integer_value(json_object_get(node, "n")));
	}
	sb_release(&lb);
	json_decref(snap);
}

/* --- GET /metrics ------------------------------------------------------ */

/* The cluster part of the last scrape, shared by scrapes within METRICS_DB_CACHE_US. */
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static char *cache_text;
static int64_t cache_at;

static void write_cluster_cached(struct strbuf *sb, struct store *st)
{
	char *snap = NULL;
	enum store_rc rc = STORE_OK;

	pthread_mutex_lock(&cache_mu);
	if (!cache_text || mono_usec() - cache_at >= METRICS_DB_CACHE_US) {
		rc = store_metrics_snapshot(st, &snap);
		if (rc == STORE_OK) {
			struct strbuf text = STRBUF_INIT;
			metrics_write_cluster(&text, snap);
			free(cache_text);
			cache_text = sb_detach(&text);
			cache_at = mono_usec();
		} else {
			log_warn("metrics: cannot read the cluster's figures: %s", store_rc_name(rc));
		}
		free(snap);
	}
	metrics_family(sb, "trainplane_database_up", "gauge",
		       "1 when the last read of the cluster's figures from the database "
		       "succeeded; the cluster gauges are left out while it is 0.");
	metrics_sample(sb, "trainplane_database_up", NULL, rc == STORE_OK);
	if (rc == STORE_OK)
		sb_addstr(sb, cache_text);
	pthread_mutex_unlock(&cache_mu);
}

/* An unlabelled counter: its # HELP and # TYPE lines and its sample. */
static void counter(struct strbuf *sb, const char *name, const char *help, uint64_t value)
{
	metrics_family(sb, name, "counter", help);
	metrics_sample_u64(sb, name, NULL, value);
}

static void write_store(struct strbuf *sb, struct store *st)
{
	struct store_stats s;

	store_stats(st, &s);
	metrics_family(sb, "trainplane_db_pool_connections", "gauge",
		       "Size of this server's database connection pool.");
	metrics_sample(sb, "trainplane_db_pool_connections", NULL, s.pool_size);
	metrics_family(sb, "trainplane_db_pool_in_use", "gauge",
		       "Pooled database connections taken by a request or task now.");
	metrics_sample(sb, "trainplane_db_pool_in_use", NULL, s.in_use);
	counter(sb, "trainplane_db_pool_waits_total",
		"Times a request waited for a pooled database connection (all were busy).", s.waits);
	metrics_family(sb, "trainplane_db_pool_wait_seconds_total", "counter",
		       "Time spent waiting for a pooled database connection.");
	metrics_sample(sb, "trainplane_db_pool_wait_seconds_total", NULL, (double)s.wait_us / 1e6);
	counter(sb, "trainplane_db_reconnects_total",
		"Pooled database connections reset after they broke.", s.reconnects);
	counter(sb, "trainplane_db_errors_total",
		"Database statements that failed with an error (not a lost connection, "
		"not a conflict).", s.errors);
}

static void write_pipe(struct strbuf *sb, struct store_pipe *p)
{
	struct store_pipe_stats s;

	if (!p)
		return;
	store_pipe_stats(p, &s);
	counter(sb, "trainplane_db_pipe_batches_total",
		"Batches sent down the pipelined connection (jobs.get reads, jobs.create "
		"inserts); each is one transaction and one round trip.", s.batches);
	counter(sb, "trainplane_db_pipe_commands_total",
		"Statements sent down the pipelined connection (commands per batch: this over "
		"batches).", s.commands);
	counter(sb, "trainplane_db_pipe_resent_total",
		"Statements sent again: their batch failed on another's error, or the "
		"connection was lost under a read.", s.resent);
	counter(sb, "trainplane_db_pipe_reconnects_total",
		"Times the pipelined connection was lost.", s.reconnects);
}

static void write_job_cache(struct strbuf *sb, struct job_cache *c)
{
	struct job_cache_stats s;

	if (!c)
		return;
	job_cache_stats(c, &s);
	metrics_family(sb, "trainplane_job_cache_entries", "gauge",
		       "Rendered job replies kept in memory for gets (job_cache_entries bounds it).");
	metrics_sample(sb, "trainplane_job_cache_entries", NULL, (double)s.entries);
	metrics_family(sb, "trainplane_job_cache_lookups_total", "counter",
		       "Gets looked up in the job cache, by result (a hit is served after a fence).");
	metrics_sample_u64(sb, "trainplane_job_cache_lookups_total", "result=\"hit\"", s.hits);
	metrics_sample_u64(sb, "trainplane_job_cache_lookups_total", "result=\"miss\"", s.misses);
	counter(sb, "trainplane_job_cache_fills_total",
		"Jobs read from the database and kept in the job cache.", s.fills);
	counter(sb, "trainplane_job_cache_invalidations_total",
		"Cached jobs (or fills under way) dropped because a notification said the job "
		"changed.", s.invalidations);
	counter(sb, "trainplane_job_cache_fences_total",
		"Fences sent: round trips that prove the cache current; concurrent reads share "
		"one.", s.fences);
	counter(sb, "trainplane_job_cache_fence_failures_total",
		"Reads whose fence failed (no connection): they went to the database.", s.fence_failures);
}

void metrics_handle(struct request *req)
{
	struct strbuf sb = STRBUF_INIT;

	write_cluster_cached(&sb, req->srv->store);
	write_store(&sb, req->srv->store);
	write_pipe(&sb, req->srv->pipe);
	write_job_cache(&sb, req->srv->job_cache);
	metrics_family(&sb, "trainplane_scheduler_leader", "gauge",
		       "1 on the server whose scheduler is the leader.");
	metrics_sample(&sb, "trainplane_scheduler_leader", NULL, sched_is_leader(req->srv->sched));
	slurm_backends_metrics(req->srv->slurm, &sb);
	metrics_write_http(&sb);
	metrics_write_registered(&sb);
	size_t len = sb.len;
	reply_text(req, 200, METRICS_CONTENT_TYPE, sb_detach(&sb), len);
}
