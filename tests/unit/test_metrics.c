/*
 * Unit tests: the Prometheus exposition writer and the registry of
 * counters and histograms (lib/metrics.c), the cluster gauges from a
 * database snapshot (server/api_metrics.c), and log lines (lib/log.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "api_metrics.h"
#include "http.h"
#include "slurm_backend.h"
#include "job_cache.h"
#include "log.h"
#include "metrics.h"
#include "scheduler.h"
#include "store.h"
#include "store_metrics.h"
#include "store_pipe.h"

/*
 * The /metrics handler's collaborators (the router's table, the store, the
 * scheduler, the reply) are not under test here: the driver links
 * server/api_metrics.o alone, the Makefile's test_metrics_WRAP sends its
 * calls to these __wrap_ mocks, and a call fails the test.
 */
const struct route routes[1];
const size_t routes_count = 0;

void __wrap_reply_text(struct request *req, int status, const char *content_type, char *text,
		       size_t len);
void __wrap_job_cache_stats(struct job_cache *c, struct job_cache_stats *out);
void __wrap_slurm_backends_metrics(struct slurm_backends *b, struct strbuf *sb);
bool __wrap_sched_is_leader(struct sched *s);
enum store_rc __wrap_store_metrics_snapshot(struct store *st, char **json_text);
void __wrap_store_pipe_stats(struct store_pipe *p, struct store_pipe_stats *out);
const char *__wrap_store_rc_name(enum store_rc rc);
void __wrap_store_stats(struct store *st, struct store_stats *out);

void __wrap_slurm_backends_metrics(struct slurm_backends *b, struct strbuf *sb)
{
	(void)b, (void)sb;	/* no Slurm backend here (slurm.test.mjs scrapes a real one) */
}

void __wrap_reply_text(struct request *req, int status, const char *content_type, char *text,
		       size_t len)
{
	(void)req, (void)status, (void)content_type, (void)len;
	free(text);
	fail_msg("reply_text called");
}

void __wrap_job_cache_stats(struct job_cache *c, struct job_cache_stats *out)
{
	(void)c, (void)out;
	fail_msg("job_cache_stats called");
}

bool __wrap_sched_is_leader(struct sched *s)
{
	(void)s;
	fail_msg("sched_is_leader called");
	return false;
}

enum store_rc __wrap_store_metrics_snapshot(struct store *st, char **json_text)
{
	(void)st, (void)json_text;
	fail_msg("store_metrics_snapshot called");
	return STORE_ERROR;
}

void __wrap_store_pipe_stats(struct store_pipe *p, struct store_pipe_stats *out)
{
	(void)p, (void)out;
	fail_msg("store_pipe_stats called");
}

const char *__wrap_store_rc_name(enum store_rc rc)
{
	(void)rc;
	fail_msg("store_rc_name called");
	return "";
}

void __wrap_store_stats(struct store *st, struct store_stats *out)
{
	(void)st, (void)out;
	fail_msg("store_stats called");
}

static const double le3[] = { 0.1, 1, 10 };
static const struct metrics_buckets b3 = { 3, le3 };

static void histogram_buckets_are_cumulative_with_inf_sum_and_count(void **state)
{
	struct metrics_histogram h = { 0 };
	struct strbuf sb = STRBUF_INIT;
	(void)state;

	metrics_histogram_observe(&h, &b3, 0.05);
	metrics_histogram_observe(&h, &b3, 0.1);	/* le is inclusive */
	metrics_histogram_observe(&h, &b3, 0.5);
	metrics_histogram_observe(&h, &b3, 20);	/* only +Inf */
	metrics_histogram_observe(&h, &b3, -3);	/* a clock step counts as 0 */
	metrics_write_histogram(&sb, "x_seconds", "route=\"a\"", &h, &b3);
	assert_string_equal(sb_str(&sb),
			    "x_seconds_bucket{route=\"a\",le=\"0.1\"} 3\n"
			    "x_seconds_bucket{route=\"a\",le=\"1\"} 4\n"
			    "x_seconds_bucket{route=\"a\",le=\"10\"} 4\n"
			    "x_seconds_bucket{route=\"a\",le=\"+Inf\"} 5\n"
			    "x_seconds_sum{route=\"a\"} 20.650000\n"
			    "x_seconds_count{route=\"a\"} 5\n");
	sb_reset(&sb);
	metrics_write_histogram(&sb, "y", NULL, &h, &b3);
	assert_non_null(strstr(sb_str(&sb), "y_bucket{le=\"0.1\"} 3\n"));
	assert_non_null(strstr(sb_str(&sb), "y_sum 20.650000\ny_count 5\n"));
	sb_release(&sb);
}

static void label_values_are_escaped(void **state)
{
	struct strbuf sb = STRBUF_INIT, out = STRBUF_INIT;
	(void)state;

	metrics_label(&sb, "a", "plain");
	metrics_label(&sb, "b", "q\"uote back\\slash new\nline");
	metrics_label(&sb, "c", NULL);
	assert_string_equal(sb_str(&sb),
			    "a=\"plain\",b=\"q\\\"uote back\\\\slash new\\nline\",c=\"\"");
	metrics_sample(&out, "m", sb_str(&sb), 2.5);
	metrics_sample(&out, "n", NULL, 3);
	metrics_sample_u64(&out, "o_total", "", UINT64_C(18446744073709551615));
	assert_string_equal(sb_str(&out),
			    "m{a=\"plain\",b=\"q\\\"uote back\\\\slash new\\nline\",c=\"\"} 2.5\n"
			    "n 3\n"
			    "o_total 18446744073709551615\n");
	sb_release(&sb);
	sb_release(&out);
}

static void help_escapes_backslash_and_newline_only(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	(void)state;

	metrics_family(&sb, "m_total", "counter", "a \"q\" b\\c\nd");
	assert_string_equal(sb_str(&sb),
			    "# HELP m_total a \"q\" b\\\\c\\nd\n# TYPE m_total counter\n");
	sb_release(&sb);
}

static void cluster_gauges_from_a_snapshot(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	(void)state;

	metrics_write_cluster(&sb,
		"{\"jobs\":[{\"api\":\"ml\",\"state\":\"QUEUED\",\"n\":3},"
		"{\"api\":\"vertex\",\"state\":\"RUNNING\",\"n\":1}],"
		"\"replicas\":[{\"state\":\"RUNNING\",\"n\":2}],"
		"\"nodes\":[{\"name\":\"a\",\"state\":\"READY\",\"zone\":\"z1\",\"sync_age\":1.5,"
		"\"accel_type\":\"T4\",\"accel_count\":4,\"used_gpus\":1,\"tpu_type\":null,"
		"\"tpu_cores\":0,\"tpu_busy\":false},"
		"{\"name\":\"b\",\"state\":\"DRAINING\",\"zone\":\"z1\",\"sync_age\":2,"
		"\"accel_type\":\"T4\",\"accel_count\":2,\"used_gpus\":0,\"tpu_type\":null,"
		"\"tpu_cores\":0,\"tpu_busy\":false},"
		"{\"name\":\"c\",\"state\":\"LOST\",\"zone\":\"z1\",\"sync_age\":99,"
		"\"accel_type\":\"T4\",\"accel_count\":8,\"used_gpus\":0,\"tpu_type\":null,"
		"\"tpu_cores\":0,\"tpu_busy\":false},"
		"{\"name\":\"t\",\"state\":\"READY\",\"zone\":\"z2\",\"sync_age\":0.25,"
		"\"accel_type\":null,\"accel_count\":0,\"used_gpus\":0,\"tpu_type\":\"TPU_V3\","
		"\"tpu_cores\":8,\"tpu_busy\":true}]}");
	const char *t = sb_str(&sb);
	assert_non_null(strstr(t, "trainplane_jobs{api=\"ml\",state=\"QUEUED\"} 3\n"));
	assert_non_null(strstr(t, "trainplane_jobs{api=\"ml\",state=\"RUNNING\"} 0\n"));
	assert_non_null(strstr(t, "trainplane_jobs{api=\"vertex\",state=\"RUNNING\"} 1\n"));
	assert_non_null(strstr(t, "trainplane_replicas{state=\"RUNNING\"} 2\n"));
	assert_non_null(strstr(t, "trainplane_replicas{state=\"LOST\"} 0\n"));
	assert_non_null(strstr(t, "trainplane_nodes{state=\"READY\"} 2\n"));
	assert_non_null(strstr(t, "trainplane_nodes{state=\"DRAINING\"} 1\n"));
	assert_non_null(strstr(t, "trainplane_nodes{state=\"LOST\"} 1\n"));
	assert_non_null(strstr(t, "trainplane_node_last_sync_age_seconds{node=\"a\"} 1.5\n"));
	/* A LOST node has no capacity; a draining one has nothing free. */
	assert_non_null(strstr(t, "trainplane_accelerators{type=\"T4\",zone=\"z1\"} 6\n"));
	assert_non_null(strstr(t, "trainplane_accelerators_free{type=\"T4\",zone=\"z1\"} 3\n"));
	assert_non_null(strstr(t, "trainplane_accelerators{type=\"TPU_V3\",zone=\"z2\"} 8\n"));
	assert_non_null(strstr(t, "trainplane_accelerators_free{type=\"TPU_V3\",zone=\"z2\"} 0\n"));
	sb_release(&sb);
}

/* Registered before main(), as store/ and scheduler/ register theirs. */
METRIC_COUNTER(zz_events, "test_zz_events_total", "Events \\ counted.")
METRIC_HISTOGRAM(aa_wait, "test_aa_wait_seconds", "A wait.", &b3)

static void registered_figures_are_written_in_name_order(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	(void)state;

	/* Shown before their first event, so that rate() has a start. (The
	 * store's and scheduler's, when linked in, sort after test_.) */
	metrics_write_registered(&sb);
	const char *want =
		"# HELP test_aa_wait_seconds A wait.\n"
		"# TYPE test_aa_wait_seconds histogram\n"
		"test_aa_wait_seconds_bucket{le=\"0.1\"} 0\n"
		"test_aa_wait_seconds_bucket{le=\"1\"} 0\n"
		"test_aa_wait_seconds_bucket{le=\"10\"} 0\n"
		"test_aa_wait_seconds_bucket{le=\"+Inf\"} 0\n"
		"test_aa_wait_seconds_sum 0.000000\n"
		"test_aa_wait_seconds_count 0\n"
		"# HELP test_zz_events_total Events \\\\ counted.\n"
		"# TYPE test_zz_events_total counter\n"
		"test_zz_events_total 0\n";
	assert_true(sb.len >= strlen(want));
	assert_memory_equal(sb_str(&sb), want, strlen(want));
	metric_add(&zz_events, 2);
	metric_add(&zz_events, 40);
	metric_observe(&aa_wait, 0.5);
	metric_observe(&aa_wait, 2);
	sb_reset(&sb);
	metrics_write_registered(&sb);
	const char *t = sb_str(&sb);
	assert_non_null(strstr(t, "test_zz_events_total 42\n"));
	assert_non_null(strstr(t, "test_aa_wait_seconds_bucket{le=\"1\"} 1\n"));
	assert_non_null(strstr(t, "test_aa_wait_seconds_bucket{le=\"+Inf\"} 2\n"));
	assert_non_null(strstr(t, "test_aa_wait_seconds_sum 2.500000\n"));
	assert_true(strstr(t, "test_aa_wait") < strstr(t, "test_zz_events"));
	sb_release(&sb);
}

static void log_lines_text_and_json(void **state)
{
	char line[512];
	/* 2026-11-22T10:00:00.123Z */
	int64_t t = INT64_C(1795341600) * 1000000 + 123456;
	(void)state;

	log_set_format(LOG_FORMAT_TEXT);
	log_format_line(line, sizeof(line), LOG_INFO, t, NULL, "hello");
	assert_string_equal(line, "2026-11-22T10:00:00.123Z INFO  hello");
	log_format_line(line, sizeof(line), LOG_ERROR, t, "abc", "bad");
	assert_string_equal(line, "2026-11-22T10:00:00.123Z ERROR [req abc] bad");

	log_set_format(LOG_FORMAT_JSON);
	log_format_line(line, sizeof(line), LOG_WARN, t, NULL, "a \"q\" \\ \n\t\xff");
	json_error_t err;
	json_t *o = json_loads(line, 0, &err);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "time")), "2026-11-22T10:00:00.123Z");
	assert_string_equal(json_string_value(json_object_get(o, "level")), "warn");
	assert_string_equal(json_string_value(json_object_get(o, "msg")),
			    "a \"q\" \\ \n\t\xef\xbf\xbd");
	assert_null(json_object_get(o, "request_id"));
	json_decref(o);
	log_format_line(line, sizeof(line), LOG_DEBUG, t, "id\"1", "m");
	o = json_loads(line, 0, &err);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "request_id")), "id\"1");
	json_decref(o);

	/* A message longer than the line is cut, and the line stays JSON. */
	char big[2000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[400] = '"';
	log_format_line(line, sizeof(line), LOG_INFO, t, "rid", big);
	o = json_loads(line, 0, &err);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "request_id")), "rid");
	json_decref(o);
	log_set_format(LOG_FORMAT_TEXT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(histogram_buckets_are_cumulative_with_inf_sum_and_count),
		cmocka_unit_test(label_values_are_escaped),
		cmocka_unit_test(help_escapes_backslash_and_newline_only),
		cmocka_unit_test(cluster_gauges_from_a_snapshot),
		cmocka_unit_test(registered_figures_are_written_in_name_order),
		cmocka_unit_test(log_lines_text_and_json),
	};
	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
