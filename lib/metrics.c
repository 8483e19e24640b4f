/*
 * metrics.c - the exposition writer and the registry of this process's
 * unlabelled counters and histograms (metrics.h).
 */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const double latency_le[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
				     0.25, 0.5, 1, 2.5, 5, 10, 30, 60 };
static const double wait_le[] = { 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
				  1800, 3600, 7200, 21600, 86400 };
const struct metrics_buckets metrics_latency_buckets = { ARRAY_SIZE(latency_le), latency_le };
const struct metrics_buckets metrics_wait_buckets = { ARRAY_SIZE(wait_le), wait_le };

/* --- the exposition writer --------------------------------------------- */

void metrics_histogram_observe(struct metrics_histogram *h, const struct metrics_buckets *b,
			       double seconds)
{
	size_t i = 0;

	if (!(seconds >= 0))
		seconds = 0;	/* clock steps, NaN */
	while (i < b->n && seconds > b->le[i])
		i++;
	atomic_fetch_add_explicit(&h->count[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_us, (uint64_t)llround(seconds * 1e6),
				  memory_order_relaxed);
}

void metrics_escape_label(struct strbuf *sb, const char *value)
{
	for (const char *p = value; *p; p++) {
		if (*p == '\\')
			sb_addstr(sb, "\\\\");
		else if (*p == '"')
			sb_addstr(sb, "\\\"");
		else if (*p == '\n')
			sb_addstr(sb, "\\n");
		else
			sb_addch(sb, *p);
	}
}

void metrics_label(struct strbuf *sb, const char *name, const char *value)
{
	sb_addf(sb, "%s%s=\"", sb->len ? "," : "", name);
	metrics_escape_label(sb, value ? value : "");
	sb_addch(sb, '"');
}

void metrics_family(struct strbuf *sb, const char *name, const char *type, const char *help)
{
	sb_addf(sb, "# HELP %s ", name);
	/* HELP text escapes only backslash and newline. */
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			sb_addstr(sb, "\\\\");
		else if (*p == '\n')
			sb_addstr(sb, "\\n");
		else
			sb_addch(sb, *p);
	}
	sb_addf(sb, "\n# TYPE %s %s\n", name, type);
}

static void sample_name(struct strbuf *sb, const char *name, const char *labels)
{
	if (labels && *labels)
		sb_addf(sb, "%s{%s} ", name, labels);
	else
		sb_addf(sb, "%s ", name);
}

void metrics_sample(struct strbuf *sb, const char *name, const char *labels, double value)
{
	sample_name(sb, name, labels);
	if (isnan(value))
		sb_addstr(sb, "NaN\n");
	else if (isinf(value))
		sb_addstr(sb, value > 0 ? "+Inf\n" : "-Inf\n");
	else
		sb_addf(sb, "%.10g\n", value);
}

void metrics_sample_u64(struct strbuf *sb, const char *name, const char *labels, uint64_t value)
{
	sample_name(sb, name, labels);
	sb_addf(sb, "%llu\n", (unsigned long long)value);
}

void metrics_write_histogram(struct strbuf *sb, const char *name, const char *labels,
			     const struct metrics_histogram *h, const struct metrics_buckets *b)
{
	uint64_t cum = 0;
	const char *sep = labels && *labels ? "," : "";

	if (!labels)
		labels = "";
	for (size_t i = 0; i <= b->n; i++) {
		cum += atomic_load_explicit(&h->count[i], memory_order_relaxed);
		if (i < b->n)
			sb_addf(sb, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, b->le[i],
				(unsigned long long)cum);
		else
			sb_addf(sb, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
				(unsigned long long)cum);
	}
	/* The count is the +Inf bucket's, read once: the two always agree. */
	uint64_t sum = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
	sb_addf(sb, "%s_sum%s%s%s %.6f\n", name, *labels ? "{" : "", labels, *labels ? "}" : "",
		(double)sum / 1e6);
	sb_addf(sb, "%s_count%s%s%s %llu\n", name, *labels ? "{" : "", labels, *labels ? "}" : "",
		(unsigned long long)cum);
}

/* --- registered figures ------------------------------------------------- */

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static struct metric *registry;	/* by name */

void metric_register(struct metric *m)
{
	struct metric **at;

	pthread_mutex_lock(&registry_mu);
	for (at = &registry; *at && strcmp((*at)->name, m->name) < 0; at = &(*at)->next)
		;
	if (*at && (*at == m || !strcmp((*at)->name, m->name))) {
		fprintf(stderr, "metrics: %s registered twice\n", m->name);
		abort();
	}
	m->next = *at;
	*at = m;
	pthread_mutex_unlock(&registry_mu);
}

void metrics_write_registered(struct strbuf *sb)
{
	pthread_mutex_lock(&registry_mu);
	for (const struct metric *m = registry; m; m = m->next) {
		if (m->kind == METRIC_KIND_COUNTER) {
			metrics_family(sb, m->name, "counter", m->help);
			metrics_sample_u64(sb, m->name, NULL,
					   atomic_load_explicit(&m->count, memory_order_relaxed));
		} else {
			metrics_family(sb, m->name, "histogram", m->help);
			metrics_write_histogram(sb, m->name, NULL, &m->histogram, m->buckets);
		}
	}
	pthread_mutex_unlock(&registry_mu);
}
