/*
 * metric_file.h - the metric file a tuning trial's trainer writes with the
 * cloudml-hypertune library, read by the agent.
 *
 * The library (hypertune.py) keeps the trainer's last 100 reports and
 * rewrites the whole file, $CLOUD_ML_HP_METRIC_FILE (default
 * /tmp/hypertune/output.metrics), on every report: one JSON object a line,
 * keys sorted,
 *   {"global_step": "1000", "my_tag": "0.987", "timestamp": 1525851440.123456, "trial": "0"}
 * the metric under its tag (default training/hptuning/metric) as Python's
 * str(float) ("0.987", "1e-05", "nan", "inf", "-inf"), global_step as
 * str(int) ("0" when not given), trial as str($CLOUD_ML_TRIAL_ID), timestamp
 * as a JSON number of epoch seconds.
 *
 * A line is a measurement of tag when it is a JSON object holding tag as a
 * number or a string of one (decimal, nan, inf or infinity, any case, signed;
 * no hex, no spaces), global_step, when present, as an integer in int64 or a
 * string of one, timestamp, when present, as a finite number >= 0, and, when
 * the caller names a trial, trial equal to it (a string, or an integer that
 * prints as it). Every other line (junk, another tag, another trial, a line
 * cut short by a rewrite in progress, one longer than METRIC_LINE_MAX) is
 * skipped and counted; empty lines are ignored. Non-finite values are kept
 * as reported: the caller decides what a NaN loss means.
 *
 * Memory is bounded whatever the file holds: at most METRIC_FILE_MAX_BYTES
 * of its end are read, and at most METRIC_MAX_POINTS measurements (the
 * last ones) are kept. Nothing here logs.
 */
#ifndef TP_AGENT_METRIC_FILE_H
#define TP_AGENT_METRIC_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "common.h"

#define METRIC_FILE_DEFAULT_PATH "/tmp/hypertune/output.metrics"
#define METRIC_DEFAULT_TAG "training/hptuning/metric"
#define METRIC_FILE_MAX_BYTES (1024 * 1024)
#define METRIC_LINE_MAX 16384
#define METRIC_MAX_POINTS 1000

struct metric_point {
	int64_t global_step;	/* 0 when absent */
	double value;		/* as reported: may be NaN or +-Inf */
	double timestamp;	/* epoch seconds, 0 when absent */
};

/* The measurements of one tag, oldest first. */
struct metric_series {
	struct metric_point *v;
	size_t n;
	size_t skipped;		/* non-empty lines that were not a measurement */
	bool truncated;		/* lines were left unread: the file's head, or
				   measurements beyond METRIC_MAX_POINTS */
};

/*
 * Parses the text of a metric file into out (released first). tag NULL or
 * "": METRIC_DEFAULT_TAG. trial NULL: any trial. Reads from the end of buf:
 * when it holds more than METRIC_MAX_POINTS measurements, the oldest are
 * dropped and out->truncated is set.
 */
void metric_file_parse(const char *buf, size_t len, const char *tag, const char *trial,
		       struct metric_series *out);

/*
 * A trial replica's metric file: <replica folder>/hypertune/output.metrics
 * (the agent sets CLOUD_ML_HP_METRIC_FILE to it; a container sees the
 * folder at /tmp/hypertune).
 */
#define METRIC_DIR_NAME "hypertune"
#define METRIC_FILE_NAME "output.metrics"
#define METRIC_FILE_REL METRIC_DIR_NAME "/" METRIC_FILE_NAME

/*
 * Opens the metric file of the replica folder dir by an openat() walk from
 * dir that follows no symlink below it: hypertune O_NOFOLLOW|O_DIRECTORY,
 * then output.metrics O_NOFOLLOW (and non-blocking), which must be a regular
 * file (fstat() into *st). Both are the trainer's to write, and a trainer is
 * untrusted code: either one made a symlink (to a host file or folder), a
 * FIFO or anything else is refused, whatever it points to. dir itself is
 * the agent's own. Returns the file's descriptor (O_CLOEXEC); -1 with errno
 * ENOENT and err "" when either is not there (no measurement yet); or -1
 * with a message in err ("... hypertune is a symbolic link, not followed").
 */
int metric_file_open(const char *dir, struct stat *st, char *err, size_t errlen) MUST_CHECK;

/*
 * Reads the metric file open on fd (st: its fstat()) into out (released
 * first), as metric_file_parse. A file longer than METRIC_FILE_MAX_BYTES is
 * read from its last METRIC_FILE_MAX_BYTES, without the line cut there
 * (out->truncated). name is for messages. Returns 0, or -1 with a message in
 * err and out empty.
 */
int metric_file_read_fd(int fd, const struct stat *st, const char *name, const char *tag,
			const char *trial, struct metric_series *out, char *err,
			size_t errlen) MUST_CHECK;

/*
 * Both: reads the metric file of the replica folder dir into out. st, when
 * not NULL, gets the file's fstat() when it was read, zeros otherwise. A
 * missing file or hypertune folder is no measurement yet: 0 with out empty.
 * Returns 0, or -1 with a message in err and out empty.
 */
int metric_file_read(const char *dir, const char *tag, const char *trial,
		     struct metric_series *out, struct stat *st, char *err,
		     size_t errlen) MUST_CHECK;

void metric_series_release(struct metric_series *s);

/* The last measurement, or NULL when none. */
const struct metric_point *metric_series_last(const struct metric_series *s);

/* The best finite measurement (the latest of equals), or NULL when none is finite. */
const struct metric_point *metric_series_best(const struct metric_series *s, bool maximize);

#endif
