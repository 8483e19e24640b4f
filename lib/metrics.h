/*
 * metrics.h - counters and histograms of this process, and the Prometheus
 * text exposition format (0.0.4) that writes them.
 *
 * A figure is kept by the layer that sees its event and updated lock-free
 * (C11 atomics, relaxed: a scrape may see one figure a moment older than
 * another, never a torn one). Two ways to keep one:
 *   - an unlabelled counter or histogram: METRIC_COUNTER() or
 *     METRIC_HISTOGRAM() in the file that observes it; it registers itself
 *     before main() runs, so a scrape shows it (at zero) before its first
 *     event, and metrics_write_registered() writes every registered one.
 *     store/ and scheduler/ keep theirs so, and need nothing above lib/;
 *   - a family with labels (the HTTP layer's requests by route and code):
 *     struct metrics_histogram and plain counters of the layer's own, written
 *     by the layer with the writer functions below.
 * Each server counts what it saw: sum over instances in the monitoring.
 */
#ifndef TP_METRICS_H
#define TP_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_MAX_BUCKETS 20

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

/* Counts one observation (negative or NaN counts as 0: clock steps). Any thread. */
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

/* --- registered figures ------------------------------------------------- */

enum metric_kind { METRIC_KIND_COUNTER, METRIC_KIND_HISTOGRAM };

/* One unlabelled counter or histogram of this process (see the top). */
struct metric {
	const char *name;	/* trainplane_..._total for a counter, ..._seconds for a histogram */
	const char *help;
	enum metric_kind kind;
	const struct metrics_buckets *buckets;	/* histograms */
	_Atomic uint64_t count;		/* counters */
	struct metrics_histogram histogram;
	struct metric *next;		/* the registry's list, by name */
};

/*
 *   METRIC_HISTOGRAM(queue_wait, "trainplane_queue_wait_seconds", "Time ...",
 *                    &metrics_wait_buckets);
 *   ... metric_observe(&queue_wait, seconds);
 * defines a file-local struct metric and registers it before main().
 */
#define METRIC_HISTOGRAM(var, name_, help_, buckets_)						\
	static struct metric var = { .name = (name_), .help = (help_),				\
				     .kind = METRIC_KIND_HISTOGRAM, .buckets = (buckets_) };	\
	METRIC_REGISTER_(var)
#define METRIC_COUNTER(var, name_, help_)							\
	static struct metric var = { .name = (name_), .help = (help_),				\
				     .kind = METRIC_KIND_COUNTER };				\
	METRIC_REGISTER_(var)
#define METRIC_REGISTER_(var)									\
	__attribute__((constructor)) static void var##_register_(void)			\
	{											\
		metric_register(&var);								\
	}

/*
 * Adds m to the registry (kept in name order). Called before main() by the
 * macros above; a name registered twice aborts (two layers claiming one
 * figure is a bug to see at once).
 */
void metric_register(struct metric *m);

/* A histogram's observation in seconds. Lock-free, any thread. */
static inline void metric_observe(struct metric *m, double seconds)
{
	metrics_histogram_observe(&m->histogram, m->buckets, seconds);
}

/* Adds n to a counter. Lock-free, any thread. */
static inline void metric_add(struct metric *m, uint64_t n)
{
	atomic_fetch_add_explicit(&m->count, n, memory_order_relaxed);
}

/* Writes every registered figure (# HELP, # TYPE, samples), in name order. */
void metrics_write_registered(struct strbuf *sb);

#endif
