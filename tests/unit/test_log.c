/*
 * Unit tests: lib/log.c against hostile text and floods. A log call with a
 * client's value (newline and a forged line, ESC sequences, C1 controls,
 * Unicode line separators, invalid UTF-8, 5,000 characters) writes exactly
 * one line, escaped, in text and in JSON; the request id likewise. The rate
 * limiter: burst, then one per interval, the suppressed count carried by the
 * next line and by the report, sites independent, exact under threads; and
 * log_write bounded by it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "wire.h"

/* ---- capturing stderr ------------------------------------------------------- */

static int saved_stderr = -1;
static FILE *capture_file;

static void capture_start(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	assert_non_null(capture_file);
	saved_stderr = dup(2);
	assert_true(saved_stderr >= 0);
	assert_int_equal(dup2(fileno(capture_file), 2), 2);
}

/* What was written to stderr since capture_start (caller frees). */
static char *capture_end(size_t *len)
{
	fflush(stderr);
	assert_int_equal(dup2(saved_stderr, 2), 2);
	close(saved_stderr);
	long n = ftell(capture_file);
	assert_true(n >= 0);
	char *buf = malloc((size_t)n + 1);
	rewind(capture_file);
	assert_int_equal(fread(buf, 1, (size_t)n, capture_file), (size_t)n);
	buf[n] = '\0';
	fclose(capture_file);
	*len = (size_t)n;
	return buf;
}

static size_t count_lines(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += s[i] == '\n';
	return n;
}

/* Every line starts with the log prefix: a timestamp and a level. */
static void assert_every_line_is_a_log_line(const char *s, size_t len)
{
	regex_t re;
	assert_int_equal(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z (DEBUG|INFO |WARN |ERROR) ",
				 REG_EXTENDED | REG_NOSUB), 0);
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(s + i, '\n', len - i);
		assert_non_null(nl);
		char *line = strndup(s + i, (size_t)(nl - (s + i)));
		if (regexec(&re, line, 0, NULL, 0))
			fail_msg("not a log line: '%.200s'", line);
		free(line);
		i = (size_t)(nl - s) + 1;
	}
	regfree(&re);
}

/* A client's project id: a forged line, terminal escapes, bad UTF-8, 5,000 bytes. */
static char *hostile_value(void)
{
	static const char parts[] =
		"demo\n2026-11-22T10:00:00.000Z ERROR forged line\r\n"
		"\x1b[2J\x1b]0;title\x07"	/* clear screen, set the terminal title */
		"\xc2\x9b" "31m"		/* C1 CSI */
		"\xe2\x80\xa8\xe2\x80\xae"	/* U+2028 line separator, U+202E RTL override */
		"\x7f\x01\t\\n"
		"\xff\xfe\xc3";			/* invalid UTF-8, a cut sequence */
	size_t n = sizeof(parts) - 1;
	char *v = malloc(n + 5000 + 1);
	memcpy(v, parts, n);
	memset(v + n, 'A', 5000);
	v[n + 5000] = '\0';
	return v;
}

/* No byte of s[0..len) is a control (but the newline ending each line), DEL or ESC. */
static void assert_no_control_bytes(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x20 && c != '\n') || c == 0x7f)
			fail_msg("control byte 0x%02x at %zu", c, i);
		if (c == '\n' && i != len - 1)
			fail_msg("a newline inside the line at %zu", i);
	}
}

/* ---- escaping ------------------------------------------------------------------ */

static void hostile_value__one_text_line_escaped(void **state)
{
	char *v = hostile_value();
	size_t len;
	(void)state;

	log_set_format(LOG_FORMAT_TEXT);
	log_set_request_id("rid\n\x1b[1m");
	capture_start();
	log_error("project %s: job create failed: END", v);
	log_set_request_id(NULL);
	char *out = capture_end(&len);

	assert_int_equal(count_lines(out, len), 1);
	assert_every_line_is_a_log_line(out, len);
	assert_no_control_bytes(out, len);
	/* Escaped, readable, and nothing lost but the middle of the long run. */
	assert_non_null(strstr(out, " ERROR [req rid\\n\\x1b[1m] project demo\\n2026-11-22T10:00:00.000Z"
				    " ERROR forged line\\r\\n\\x1b[2J\\x1b]0;title\\x07\\u009b31m"
				    "\\u2028\\u202e\\x7f\\x01\\t\\\\n\\xff\\xfe\\xc3AAA"));
	assert_null(strstr(out, "\xc2\x9b"));
	assert_null(strstr(out, "\xe2\x80\xa8"));
	assert_non_null(strstr(out, "bytes cut ...]AAA"));
	assert_non_null(strstr(out, "AAA: job create failed: END\n"));
	assert_true(len < LOG_MSG_MAX + 200);
	free(out);
	free(v);

	/* libpq's messages end with a newline: dropped, the inner ones escaped. */
	capture_start();
	log_warn("database: %s", "server closed\n\tthe connection\n");
	out = capture_end(&len);
	assert_int_equal(count_lines(out, len), 1);
	assert_non_null(strstr(out, " WARN  database: server closed\\n\\tthe connection\n"));
	free(out);
}

static void hostile_value__one_json_line_valid(void **state)
{
	char *v = hostile_value();
	size_t len;
	json_error_t jerr;
	(void)state;

	log_set_format(LOG_FORMAT_JSON);
	log_set_request_id("rid\n\xff");
	capture_start();
	log_warn("project %s: END", v);
	log_set_request_id(NULL);
	char *out = capture_end(&len);
	log_set_format(LOG_FORMAT_TEXT);

	assert_int_equal(count_lines(out, len), 1);
	assert_no_control_bytes(out, len);
	json_t *o = json_loadb(out, len, 0, &jerr);
	if (!o)
		fail_msg("not JSON: %s: %.300s", jerr.text, out);
	const char *msg = json_string_value(json_object_get(o, "msg"));
	assert_non_null(msg);
	/* JSON carries the characters themselves: the newline is data, not a line. */
	assert_non_null(strstr(msg, "project demo\n2026-11-22T10:00:00.000Z ERROR forged line\r\n\x1b[2J"));
	assert_non_null(strstr(msg, "\\n\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "AAA"));
	assert_non_null(strstr(msg, "bytes cut ...]AAA"));
	assert_non_null(strstr(msg, "AAA: END"));
	assert_string_equal(json_string_value(json_object_get(o, "request_id")), "rid\n\xef\xbf\xbd");
	json_decref(o);
	free(out);
	free(v);
}

static void format_line__fits_any_buffer_and_stays_one_line(void **state)
{
	char *v = hostile_value();
	char line[300];
	int64_t t = INT64_C(1795341600) * 1000000;
	json_error_t jerr;
	(void)state;

	log_set_format(LOG_FORMAT_TEXT);
	for (size_t size = 1; size <= sizeof(line); size += 7) {
		size_t n = log_format_line(line, size, LOG_ERROR, t, "r\n", v);
		assert_true(n < size);
		assert_int_equal(strlen(line), n);
		assert_null(strchr(line, '\n'));
		assert_null(strchr(line, '\x1b'));
	}
	/* A buffer too small for the request id is cut between characters (found by fuzz_log). */
	for (size_t size = 1; size <= 100; size++) {
		size_t n = log_format_line(line, size, LOG_ERROR, t, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
					   "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", "m");
		assert_true(n < size);
		assert_true(wire_utf8_valid(line, n));
	}
	log_set_format(LOG_FORMAT_JSON);
	for (size_t size = 200; size <= sizeof(line); size += 5) {
		size_t n = log_format_line(line, size, LOG_ERROR, t, "r\n", v);
		assert_true(n < size);
		json_t *o = json_loads(line, 0, &jerr);
		if (!o)
			fail_msg("size %zu: not JSON: %s: %s", size, jerr.text, line);
		json_decref(o);
	}
	log_set_format(LOG_FORMAT_TEXT);

	/* Short and plain: unchanged; a lone multi-byte character is kept whole. */
	log_format_line(line, sizeof(line), LOG_INFO, t, NULL, "caf\xc3\xa9 \"ok\"");
	assert_string_equal(line, "2026-11-22T10:00:00.000Z INFO  caf\xc3\xa9 \"ok\"");
	free(v);
}

/* ---- the rate limiter ---------------------------------------------------------------- */

static const char site_a[] = "site a %s", site_b[] = "site b %s";

static void limiter__burst_then_one_per_interval(void **state)
{
	struct log_limiter *lim = log_limiter_new(3, 1000);
	uint64_t sup;
	int64_t t = 5000000;
	(void)state;

	for (int i = 0; i < 3; i++) {
		assert_true(log_limiter_admit(lim, site_a, LOG_ERROR, t, &sup));
		assert_int_equal(sup, 0);
	}
	for (int i = 0; i < 5; i++)
		assert_false(log_limiter_admit(lim, site_a, LOG_ERROR, t + 999, &sup));
	/* A site of its own is not held back by site a. */
	assert_true(log_limiter_admit(lim, site_b, LOG_ERROR, t + 999, &sup));
	assert_int_equal(sup, 0);
	/* One interval later: one line, carrying the five it stands for. */
	assert_true(log_limiter_admit(lim, site_a, LOG_ERROR, t + 1000, &sup));
	assert_int_equal(sup, 5);
	assert_false(log_limiter_admit(lim, site_a, LOG_ERROR, t + 1000, &sup));
	/* Quiet for a long time: the burst is back, not more. */
	t += 1000000;
	for (int i = 0; i < 3; i++)
		assert_true(log_limiter_admit(lim, site_a, LOG_ERROR, t, &sup));
	assert_int_equal(sup, 0);
	assert_false(log_limiter_admit(lim, site_a, LOG_ERROR, t, &sup));
	log_limiter_free(lim);

	/* burst 0: no limit. */
	lim = log_limiter_new(0, 1000);
	for (int i = 0; i < 1000; i++)
		assert_true(log_limiter_admit(lim, site_a, LOG_ERROR, t, &sup));
	log_limiter_free(lim);
}

struct reported {
	uint64_t a, b, calls;
	enum log_level level_a;
};

static void collect(void *ctx, const char *site, enum log_level level, uint64_t n)
{
	struct reported *r = ctx;
	r->calls++;
	if (site == site_a) {
		r->a += n;
		r->level_a = level;
	} else if (site == site_b) {
		r->b += n;
	}
}

static void limiter__report_takes_the_counts(void **state)
{
	struct log_limiter *lim = log_limiter_new(1, 1000000);
	struct reported r = { 0 };
	uint64_t sup;
	(void)state;

	assert_true(log_limiter_admit(lim, site_a, LOG_WARN, 0, &sup));
	assert_true(log_limiter_admit(lim, site_b, LOG_ERROR, 0, &sup));
	for (int i = 0; i < 7; i++)
		assert_false(log_limiter_admit(lim, site_a, LOG_WARN, 10, &sup));
	for (int i = 0; i < 2; i++)
		assert_false(log_limiter_admit(lim, site_b, LOG_ERROR, 10, &sup));
	assert_int_equal(log_limiter_report(lim, collect, &r), 2);
	assert_int_equal(r.a, 7);
	assert_int_equal(r.b, 2);
	assert_int_equal(r.level_a, LOG_WARN);
	/* Reported once: neither the next report nor the next line repeats it. */
	assert_int_equal(log_limiter_report(lim, collect, &r), 0);
	assert_true(log_limiter_admit(lim, site_a, LOG_WARN, 2000000, &sup));
	assert_int_equal(sup, 0);
	log_limiter_free(lim);
}

static void limiter__many_sites_share_the_table_and_beyond(void **state)
{
	struct log_limiter *lim = log_limiter_new(2, 1000000);
	static char sites[2000];
	uint64_t sup, admitted = 0;
	(void)state;

	/* 2,000 sites, more than the table holds: each site gets its burst or shares the rest. */
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < sizeof(sites); i++)
			admitted += log_limiter_admit(lim, &sites[i], LOG_ERROR, 0, &sup);
	assert_true(admitted >= 2 * 200);
	assert_true(admitted < 3 * sizeof(sites));
	log_limiter_free(lim);
}

#define THREADS 4
#define CALLS 50000

struct worker {
	struct log_limiter *lim;
	uint64_t admitted, carried;
	int id;
};

static void *hammer(void *arg)
{
	struct worker *w = arg;
	uint64_t sup;

	for (int i = 0; i < CALLS; i++) {
		/* Time moves on: one interval every 1,000 calls of each thread. */
		int64_t now = (int64_t)i * 10;
		if (log_limiter_admit(w->lim, i % 2 ? site_a : site_b, LOG_ERROR, now, &sup)) {
			w->admitted++;
			w->carried += sup;
		}
	}
	return NULL;
}

static void limiter__exact_under_threads(void **state)
{
	struct log_limiter *lim = log_limiter_new(5, 10000);
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct reported r = { 0 };
	uint64_t admitted = 0, carried = 0;
	(void)state;

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .lim = lim, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, hammer, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		admitted += w[i].admitted;
		carried += w[i].carried;
	}
	log_limiter_report(lim, collect, &r);
	/* Every call is either written or counted exactly once. */
	assert_int_equal(admitted + carried + r.a + r.b, (uint64_t)THREADS * CALLS);
	/*
	 * Each site: the burst, then one an interval over the 500,000 usec the
	 * calls span (54 a site when the threads run one after another; each
	 * thread's clock starts at 0, so running together admits more).
	 */
	assert_true(admitted >= 2 * 54);
	assert_true(admitted <= 2 * (5 + 50) * THREADS);
	log_limiter_free(lim);
}

/* ---- log_write under a flood ------------------------------------------------------------ */

static void log_write__a_flood_is_bounded_and_counted(void **state)
{
	size_t len;
	unsigned long long n = 0;
	(void)state;

	log_set_format(LOG_FORMAT_TEXT);
	capture_start();
	for (int i = 0; i < 5000; i++)
		log_error("database error in job_get: connection refused (%d)", i);
	log_info("an info line is never limited");
	log_report_suppressed();
	char *out = capture_end(&len);

	size_t lines = count_lines(out, len);
	/* The burst (and perhaps one more if a second passed), the info line, the report. */
	assert_true(lines >= LOG_LIMIT_BURST + 2);
	assert_true(lines <= LOG_LIMIT_BURST + 4);
	assert_every_line_is_a_log_line(out, len);
	assert_non_null(strstr(out, "an info line is never limited"));
	const char *rep = strstr(out, " ERROR (");
	assert_non_null(rep);
	assert_int_equal(sscanf(rep, " ERROR (%llu similar lines suppressed", &n), 1);
	assert_non_null(strstr(rep, "suppressed: \"database error in job_get: connection refused (%d)\")\n"));
	/* Written plus suppressed is every call. */
	assert_int_equal(n + (lines - 2), 5000);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hostile_value__one_text_line_escaped),
		cmocka_unit_test(hostile_value__one_json_line_valid),
		cmocka_unit_test(format_line__fits_any_buffer_and_stays_one_line),
		cmocka_unit_test(limiter__burst_then_one_per_interval),
		cmocka_unit_test(limiter__report_takes_the_counts),
		cmocka_unit_test(limiter__many_sites_share_the_table_and_beyond),
		cmocka_unit_test(limiter__exact_under_threads),
		cmocka_unit_test(log_write__a_flood_is_bounded_and_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
