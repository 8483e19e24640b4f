/*
 * Unit tests: the agent's reader of cloudml-hypertune metric files
 * (agent/metric_file.c): the library's own lines, other tags and trials,
 * Python's str(float) spellings with NaN and Inf, junk and cut lines,
 * huge lines and files, the point limit, and what the file and its folder
 * may be (missing, a symlink, a FIFO, a folder where a file should be and a
 * file where a folder should be).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metric_file.h"

/* What hypertune.py writes after three reports (json.dumps, sort_keys). */
static const char three_reports[] =
	"{\"global_step\": \"100\", \"my_metric_tag\": \"0.5\", \"timestamp\": 1525851440.123456, \"trial\": \"3\"}\n"
	"{\"global_step\": \"200\", \"my_metric_tag\": \"0.987\", \"timestamp\": 1525851441.5, \"trial\": \"3\"}\n"
	"{\"global_step\": \"300\", \"my_metric_tag\": \"0.75\", \"timestamp\": 1525851442.25, \"trial\": \"3\"}\n";

static void parse(const char *text, const char *tag, const char *trial, struct metric_series *s)
{
	metric_file_parse(text, strlen(text), tag, trial, s);
}

static void hypertune_lines__parsed_oldest_first(void **state)
{
	struct metric_series s = { 0 };
	(void)state;

	parse(three_reports, "my_metric_tag", NULL, &s);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.skipped, 0);
	assert_false(s.truncated);
	assert_int_equal(s.v[0].global_step, 100);
	assert_true(s.v[0].value == 0.5);
	assert_true(s.v[0].timestamp == 1525851440.123456);
	assert_int_equal(s.v[2].global_step, 300);
	assert_true(metric_series_last(&s) == &s.v[2]);
	assert_true(metric_series_best(&s, true) == &s.v[1]);
	assert_true(metric_series_best(&s, false) == &s.v[0]);

	/* The trial filter: "3" matches, "4" does not, and the counts say so. */
	parse(three_reports, "my_metric_tag", "3", &s);
	assert_int_equal(s.n, 3);
	parse(three_reports, "my_metric_tag", "4", &s);
	assert_int_equal(s.n, 0);
	assert_int_equal(s.skipped, 3);
	assert_null(metric_series_last(&s));
	assert_null(metric_series_best(&s, true));
	metric_series_release(&s);
}

static void tags__another_tag_is_skipped_and_the_default_applies(void **state)
{
	struct metric_series s = { 0 };
	(void)state;

	const char *text =
		"{\"global_step\": \"0\", \"timestamp\": 1.0, \"training/hptuning/metric\": \"2.5\", \"trial\": \"0\"}\n"
		"{\"accuracy\": \"0.9\", \"global_step\": \"10\", \"timestamp\": 2.0, \"trial\": \"0\"}\n";
	parse(text, NULL, NULL, &s);
	assert_int_equal(s.n, 1);
	assert_true(s.v[0].value == 2.5);
	assert_int_equal(s.skipped, 1);
	parse(text, "", "0", &s);
	assert_int_equal(s.n, 1);
	parse(text, "accuracy", NULL, &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].global_step, 10);
	metric_series_release(&s);
}

static void values__python_spellings_nan_and_inf(void **state)
{
	struct metric_series s = { 0 };
	(void)state;

	/* str(float) forms, JSON numbers, and an integer trial / step. */
	parse("{\"m\": \"1e-05\"}\n{\"m\": \"-1.5E+20\"}\n{\"m\": \"nan\"}\n{\"m\": \"inf\"}\n"
	      "{\"m\": \"-inf\"}\n{\"m\": \"-Infinity\"}\n{\"m\": 3}\n{\"m\": 0.25, \"global_step\": 7}\n"
	      "{\"m\": \"1e999\"}\n{\"m\": \"5.\", \"trial\": 12}\n",
	      "m", NULL, &s);
	assert_int_equal(s.n, 10);
	assert_int_equal(s.skipped, 0);
	assert_true(s.v[0].value == 1e-05);
	assert_true(s.v[1].value == -1.5e20);
	assert_true(isnan(s.v[2].value));
	assert_true(isinf(s.v[3].value) && s.v[3].value > 0);
	assert_true(isinf(s.v[4].value) && s.v[4].value < 0);
	assert_true(isinf(s.v[5].value) && s.v[5].value < 0);
	assert_true(s.v[6].value == 3);
	assert_int_equal(s.v[7].global_step, 7);
	assert_true(isinf(s.v[8].value));
	assert_true(s.v[9].value == 5);
	/* The last is reported as it is; the best ignores what is not finite. */
	assert_true(metric_series_best(&s, true) == &s.v[9]);
	assert_true(metric_series_best(&s, false) == &s.v[1]);
	parse("{\"m\": 5, \"trial\": 12}\n", "m", "12", &s);
	assert_int_equal(s.n, 1);

	/* Only NaN: no best, but a last. */
	parse("{\"m\": \"nan\"}\n", "m", NULL, &s);
	assert_non_null(metric_series_last(&s));
	assert_null(metric_series_best(&s, true));
	metric_series_release(&s);
}

static void junk__every_bad_line_is_skipped_and_counted(void **state)
{
	struct metric_series s = { 0 };
	(void)state;

	static const char *bad[] = {
		"not json",
		"[1, 2]",
		"\"m\"",
		"{\"m\": \"0x1p3\"}",			/* hex */
		"{\"m\": \" 1.0\"}",			/* space */
		"{\"m\": \"1.0abc\"}",
		"{\"m\": \"\"}",
		"{\"m\": \".\"}",
		"{\"m\": \"1e\"}",
		"{\"m\": \"nan(123)\"}",
		"{\"m\": null}",
		"{\"m\": true}",
		"{\"m\": [1]}",
		"{\"m\": \"1\", \"global_step\": \"1.5\"}",
		"{\"m\": \"1\", \"global_step\": \"99999999999999999999\"}",
		"{\"m\": \"1\", \"global_step\": 1.5}",
		"{\"m\": \"1\", \"global_step\": \"\"}",
		"{\"m\": \"1\", \"timestamp\": -1}",
		"{\"m\": \"1\", \"timestamp\": \"inf\"}",
		"{\"m\": \"1\", \"timestamp\": \"soon\"}",
		"{\"m\": \"1\", \"m\": \"2\"}",		/* duplicate key */
		"{\"global_step\": \"1\", \"m\": \"0.5\", \"timestamp\": 1.0, \"tri",	/* cut by a rewrite */
		"\x80\xff{\"m\": 1}",
	};
	char text[4096] = "";
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		strcat(text, bad[i]);
		strcat(text, "\n");
	}
	/* Blank lines are not counted; a good line among the junk is found. */
	strcat(text, "\n  \r\n{\"m\": \"0.125\"}\r\n");
	parse(text, "m", NULL, &s);
	assert_int_equal(s.n, 1);
	assert_true(s.v[0].value == 0.125);
	assert_int_equal(s.skipped, sizeof(bad) / sizeof(bad[0]));

	/* A trial filter needs a trial. */
	parse("{\"m\": 1}\n{\"m\": 1, \"trial\": null}\n{\"m\": 1, \"trial\": \"\"}\n", "m", "1", &s);
	assert_int_equal(s.n, 0);
	assert_int_equal(s.skipped, 3);

	/* A NUL inside a line makes it junk, not a shorter line. */
	static const char nul[] = "{\"m\": 1}\0{\"m\": 2}\n{\"m\": 3}";
	metric_file_parse(nul, sizeof(nul) - 1, "m", NULL, &s);
	assert_int_equal(s.n, 1);
	assert_true(s.v[0].value == 3);
	assert_int_equal(s.skipped, 1);
	metric_series_release(&s);
}

static void limits__huge_lines_and_many_points(void **state)
{
	struct metric_series s = { 0 };
	(void)state;

	/* A line over METRIC_LINE_MAX is skipped unparsed, even if it is valid JSON. */
	size_t big = METRIC_LINE_MAX + 100;
	char *text = malloc(big + 64);
	int k = snprintf(text, big + 64, "{\"m\": 1, \"pad\": \"");
	memset(text + k, 'x', big);
	strcpy(text + k + big, "\"}\n{\"m\": 2}\n");
	parse(text, "m", NULL, &s);
	assert_int_equal(s.n, 1);
	assert_true(s.v[0].value == 2);
	assert_int_equal(s.skipped, 1);
	free(text);

	/* More than METRIC_MAX_POINTS: the newest are kept, in order. */
	size_t lines = METRIC_MAX_POINTS + 500, len = 0;
	text = malloc(lines * 40);
	for (size_t i = 0; i < lines; i++)
		len += (size_t)sprintf(text + len, "{\"m\": %zu, \"global_step\": %zu}\n", i, i);
	metric_file_parse(text, len, "m", NULL, &s);
	assert_int_equal(s.n, METRIC_MAX_POINTS);
	assert_true(s.truncated);
	assert_int_equal(s.v[0].global_step, 500);
	assert_int_equal(metric_series_last(&s)->global_step, lines - 1);
	free(text);
	metric_series_release(&s);
}

static char dir[] = "/tmp/test_metric_file_XXXXXX";

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Removes path, whatever it is (a file, a link, a FIFO, an empty folder). */
static void clear(const char *path)
{
	if (unlink(path))
		assert_int_equal(rmdir(path), 0);
}

static void read__files_symlinks_fifos_and_big_files(void **state)
{
	struct metric_series s = { 0 };
	struct stat st;
	char folder[256], path[256], other[256], other_file[256], err[256] = "";
	(void)state;

	/* dir is a replica's folder: its trainer writes hypertune/output.metrics. */
	assert_non_null(mkdtemp(dir));
	snprintf(folder, sizeof(folder), "%s/hypertune", dir);
	snprintf(path, sizeof(path), "%s/hypertune/output.metrics", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	snprintf(other_file, sizeof(other_file), "%s/other/output.metrics", dir);

	/* Neither the folder nor the file there yet: no measurement, no error. */
	assert_int_equal(metric_file_read(dir, "my_metric_tag", NULL, &s, &st, err, sizeof(err)), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(mkdir(folder, 0700), 0);
	assert_int_equal(metric_file_read(dir, "my_metric_tag", NULL, &s, &st, err, sizeof(err)), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(metric_file_open(dir, &st, err, sizeof(err)), -1);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err, "");

	write_file(path, three_reports, strlen(three_reports));
	assert_int_equal(metric_file_read(dir, "my_metric_tag", "3", &s, &st, err, sizeof(err)), 0);
	assert_int_equal(s.n, 3);
	assert_false(s.truncated);
	assert_int_equal(st.st_size, strlen(three_reports));
	assert_true(S_ISREG(st.st_mode));
	metric_series_release(&s);
	int fd = metric_file_open(dir, &st, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(metric_file_read_fd(fd, &st, path, "my_metric_tag", "3", &s, err,
					     sizeof(err)), 0);
	assert_int_equal(s.n, 3);
	close(fd);

	/* A valid metric file elsewhere, which the trainer's links point to. */
	assert_int_equal(mkdir(other, 0700), 0);
	write_file(other_file, three_reports, strlen(three_reports));

	/* The file a symlink (to a host file, say) is refused, so is a FIFO (no hang) or a folder. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(other_file, path), 0);
	assert_int_equal(metric_file_read(dir, "my_metric_tag", NULL, &s, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "hypertune/output.metrics: is a symbolic link, not followed"));
	assert_int_equal(s.n, 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(metric_file_read(dir, "my_metric_tag", NULL, &s, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a regular file"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(metric_file_read(dir, "my_metric_tag", NULL, &s, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a regular file"));
	assert_int_equal(rmdir(path), 0);

	/* The folder a symlink to a folder holding a valid metric file: not followed either. */
	assert_int_equal(rmdir(folder), 0);
	assert_int_equal(symlink(other, folder), 0);
	assert_int_equal(metric_file_read(dir, "my_metric_tag", NULL, &s, &st, err, sizeof(err)), -1);
	assert_int_equal(s.n, 0);
	assert_int_equal(st.st_size, 0);
	assert_non_null(strstr(err, "hypertune/output.metrics: hypertune is a symbolic link, not followed"));
	err[0] = 0;
	assert_int_equal(metric_file_open(dir, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "hypertune is a symbolic link"));
	/* Even a dangling one, or a link to a file. */
	clear(folder);
	assert_int_equal(symlink(path, folder), 0);
	assert_int_equal(metric_file_read(dir, "my_metric_tag", NULL, &s, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "hypertune is a symbolic link"));
	clear(folder);
	assert_int_equal(symlink(other_file, folder), 0);
	assert_int_equal(metric_file_read(dir, "my_metric_tag", NULL, &s, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "hypertune is a symbolic link"));
	/* A file where the folder should be. */
	clear(folder);
	write_file(folder, three_reports, strlen(three_reports));
	assert_int_equal(metric_file_read(dir, "my_metric_tag", NULL, &s, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "hypertune is not a folder"));
	clear(folder);
	assert_int_equal(mkdir(folder, 0700), 0);

	/* A file over METRIC_FILE_MAX_BYTES: its end is read, the cut line dropped. */
	size_t len = METRIC_FILE_MAX_BYTES + 4096, n = 0;
	char *text = malloc(len + 200);
	while (n < len)
		n += (size_t)sprintf(text + n, "{\"my_metric_tag\": \"%zu\"}\n", n);
	n += (size_t)sprintf(text + n, "{\"my_metric_tag\": \"0.5\", \"global_step\": \"9\"}\n");
	write_file(path, text, n);
	assert_int_equal(metric_file_read(dir, "my_metric_tag", NULL, &s, NULL, err, sizeof(err)), 0);
	assert_true(s.truncated);
	assert_int_equal(s.n, METRIC_MAX_POINTS);
	assert_int_equal(s.skipped, 0);
	assert_int_equal(metric_series_last(&s)->global_step, 9);
	free(text);

	/* One line bigger than what is read: nothing, no error. */
	text = malloc(len);
	memset(text, 'x', len);
	write_file(path, text, len);
	assert_int_equal(metric_file_read(dir, "my_metric_tag", NULL, &s, NULL, err, sizeof(err)), 0);
	assert_int_equal(s.n, 0);
	assert_true(s.truncated);
	free(text);

	metric_series_release(&s);
	unlink(path);
	rmdir(folder);
	unlink(other_file);
	rmdir(other);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hypertune_lines__parsed_oldest_first),
		cmocka_unit_test(tags__another_tag_is_skipped_and_the_default_applies),
		cmocka_unit_test(values__python_spellings_nan_and_inf),
		cmocka_unit_test(junk__every_bad_line_is_skipped_and_counted),
		cmocka_unit_test(limits__huge_lines_and_many_points),
		cmocka_unit_test(read__files_symlinks_fifos_and_big_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
