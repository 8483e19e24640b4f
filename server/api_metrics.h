/*
 * api_metrics.h - GET /metrics in the Prometheus text exposition format
 * (0.0.4), written with lib/metrics.h.
 *
 * Three kinds of figures:
 *   - the HTTP layer's, kept here: requests by route and code, and their
 *     latency (metrics_http_observe(), called for each answered request);
 *   - the registered figures of lib/metrics.h, kept by the layer that sees
 *     the event: the scheduler leader's pass duration and the queue wait of
 *     the jobs it places, the submit-to-running time of the jobs an agent
 *     sync made RUNNING. Each server counts what it saw: sum them over
 *     instances in the monitoring;
 *   - figures asked of the store, the pipe, the job cache and the scheduler
 *     through their own headers, and cluster gauges read from the database
 *     (jobs, replicas, nodes, accelerators, sync age): one statement per
 *     scrape at most, its text kept for METRICS_DB_CACHE_US so that many
 *     scrapers cost one query.
 */
#ifndef TP_API_METRICS_H
#define TP_API_METRICS_H

#include <stdint.h>

#include "metrics.h"
#include "strbuf.h"

#define METRICS_DB_CACHE_US (INT64_C(1000) * 1000)

struct route;
struct request;

/* One answered request: route NULL when none matched. Any thread. */
void metrics_http_observe(const struct route *route, int status, int64_t duration_us);

/* Writes the HTTP layer's families (requests, latency by route). */
void metrics_write_http(struct strbuf *sb);
/*
 * Writes the cluster gauges from the database's snapshot (the JSON of
 * store_metrics_snapshot()). For tests and metrics_handle().
 */
void metrics_write_cluster(struct strbuf *sb, const char *snapshot_json);

/* GET /metrics. */
void metrics_handle(struct request *req);

#endif
