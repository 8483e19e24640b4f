/*
 * metrics.h - /metrics in the Prometheus text exposition format (0.0.4).
 *
 * Two kinds of figures:
 *   - per-process counters and histograms, updated lock-free (C11 atomics,
 *     relaxed) by whoever sees the event: the HTTP layer (requests by route
 *     and code, latency), the scheduler leader (pass duration, queue wait of
 *     the jobs it places), the server whose agent sync makes a job RUNNING
 *     (submit-to-running). Each server counts what it saw: sum them over
 *     instances in the monitoring;
 *   - cluster gauges read from the database (jobs, replicas, nodes,
 *     accelerators, sync age): one statement per scrape at most, its text
 *     kept for METRICS_DB_CACHE_US so that many scrapers cost one query.
 */
#ifndef TP_METRICS_H
#define TP_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_MAX_BUCKETS 20
#define METRICS_DB_CACHE_US (INT64_C(1000) * 1000)

/* Upper bounds of a histogram's buckets, ascending; +Inf is implied. */
struct metrics_buckets {
	size_t n;	/* <= METRICS_MAX_BUCKETS */
	const double *le;
};

/* Counts per bucket (not cumulative) and the sum in microseconds. */
struct metrics_histogram {
	_Atomic uint64_t count[METRICS_MAX_BUCKETS + 1];	/* [n]: above the last bound */
	_Atomic uint64_t sum_us;
};

extern const struct metrics_buckets metrics_latency_buckets;	/* 0.5 ms .. 60 s */
extern const struct metrics_buckets metrics_wait_buckets;	/* 0.1 s .. 1 day */

/* --- the exposition writer --------------------------------------------- */

void metrics_histogram_observe(struct metrics_histogram *h, const struct metrics_buckets *b,
			       double seconds);
/* Appends `,name="value"` (no comma on an empty sb), value escaped. */
void metrics_label(struct strbuf *sb, const char *name, const char *value);
/* Appends value escaped for a label: \ " and newline as \\ \" \n. */
void metrics_escape_label(struct strbuf *sb, const char *value);
/* # HELP and # TYPE lines of a family. */
void metrics_family(struct strbuf *sb, const char *name, const char *type, const char *help);
/* name{labels} value; labels as made by metrics_label(), NULL or "" for none. */
void metrics_sample(struct strbuf *sb, const char *name, const char *labels, double value);
void metrics_sample_u64(struct strbuf *sb, const char *name, const char *labels, uint64_t value);
/* name_bucket{labels,le=...} (cumulative, +Inf last), name_sum, name_count. */
void metrics_write_histogram(struct strbuf *sb, const char *name, const char *labels,
			     const struct metrics_histogram *h, const struct metrics_buckets *b);

/* --- this process's figures ---------------------------------------------- */

struct route;
struct request;

/* One answered request: route NULL when none matched. Any thread. */
void metrics_http_observe(const struct route *route, int status, int64_t duration_us);
/* A job left the queue (QUEUED -> PREPARING) after waiting this long. */
void metrics_observe_queue_wait(double seconds);
/* A job became RUNNING this long after it was created. */
void metrics_observe_submit_to_running(double seconds);
/* One scheduling pass took this long. */
void metrics_observe_sched_pass(double seconds);

/* Writes every per-process family (HTTP, scheduling). */
void metrics_write_process(struct strbuf *sb);
/*
 * Writes the cluster gauges from the database's snapshot (the JSON of
 * store_metrics_snapshot()). For tests and metrics_handle().
 */
void metrics_write_cluster(struct strbuf *sb, const char *snapshot_json);

/* GET /metrics. */
void metrics_handle(struct request *req);

#endif
