/*
 * fuzz_metric_file.c - libFuzzer target for the agent's reader of
 * cloudml-hypertune metric files (agent/metric_file.c).
 *
 * Each input is a metric file's text, parsed for the default tag and for
 * "my_metric_tag", with and without a trial filter. Beyond surviving
 * anything (no crash, no undefined behaviour, no leak), the result keeps the
 * header's contracts: at most METRIC_MAX_POINTS points, every timestamp
 * finite and >= 0, measurements and skipped lines no more than the
 * non-blank lines, the last point last, the best one finite and no worse
 * than any finite point, and a second parse into the same series replacing
 * the first.
 *
 * Build and run: tools/fuzz.sh run metric_file (FUZZ_SECONDS, default 600).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metric_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t nonblank_lines(const char *s, size_t len)
{
	size_t n = 0;
	bool blank = true;

	for (size_t i = 0; i <= len; i++) {
		if (i == len || s[i] == '\n') {
			n += !blank;
			blank = true;
		} else if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') {
			blank = false;
		}
	}
	return n;
}

static void check(const struct metric_series *s, size_t lines)
{
	const struct metric_point *best;

	if (s->n > METRIC_MAX_POINTS || s->n + s->skipped > lines || (s->n && !s->v))
		abort();
	if (!s->truncated && s->n + s->skipped != lines)
		abort();
	for (size_t i = 0; i < s->n; i++)
		if (!isfinite(s->v[i].timestamp) || s->v[i].timestamp < 0)
			abort();
	if (metric_series_last(s) != (s->n ? &s->v[s->n - 1] : NULL))
		abort();
	for (int maximize = 0; maximize < 2; maximize++) {
		best = metric_series_best(s, maximize);
		for (size_t i = 0; i < s->n; i++) {
			double v = s->v[i].value;
			if (!isfinite(v))
				continue;
			if (!best || !isfinite(best->value) ||
			    (maximize ? v > best->value : v < best->value))
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const tags[] = { NULL, "my_metric_tag" };
	static const char *const trials[] = { NULL, "0" };
	struct metric_series s = { 0 };
	const char *text = (const char *)data;
	size_t lines = nonblank_lines(text, size);

	for (size_t t = 0; t < 2; t++) {
		for (size_t r = 0; r < 2; r++) {
			metric_file_parse(text, size, tags[t], trials[r], &s);
			check(&s, lines);
		}
	}
	metric_series_release(&s);
	return 0;
}
