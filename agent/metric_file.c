/*
 * metric_file.c - reading a cloudml-hypertune metric file (metric_file.h).
 */
#include "metric_file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

void metric_series_release(struct metric_series *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/*
 * A decimal number as Python's str(float) writes it (and as JSON would),
 * or nan / inf / infinity in any case, either with a sign. No spaces, no
 * hex, nothing after. An overflowing exponent is +-Inf, as float() reads it.
 */
static bool parse_double_text(const char *s, double *out)
{
	const char *p = s;
	size_t digits = 0;
	char *end;
	double v;

	if (*p == '+' || *p == '-')
		p++;
	if (!strcasecmp(p, "nan") || !strcasecmp(p, "inf") || !strcasecmp(p, "infinity")) {
		v = tolower((unsigned char)*p) == 'n' ? NAN : INFINITY;
		*out = *s == '-' ? -v : v;
		return true;
	}
	for (; isdigit((unsigned char)*p); p++)
		digits++;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			digits++;
	if (!digits)
		return false;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p)
		return false;
	v = strtod(s, &end);
	if (end != p)
		return false;
	*out = v;
	return true;
}

/* A JSON number, or a string of one (parse_double_text). */
static bool json_double(const json_t *j, double *out)
{
	if (json_is_number(j)) {
		*out = json_number_value(j);
		return true;
	}
	return json_is_string(j) && parse_double_text(json_string_value(j), out);
}

/* A JSON integer, or a string of a decimal integer in int64. */
static bool json_int64(const json_t *j, int64_t *out)
{
	const char *s, *p;
	char *end;
	long long v;

	if (json_is_integer(j)) {
		*out = json_integer_value(j);
		return true;
	}
	if (!json_is_string(j))
		return false;
	s = p = json_string_value(j);
	if (*p == '+' || *p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool trial_matches(const json_t *j, const char *trial)
{
	char num[32];

	if (json_is_string(j))
		return !strcmp(json_string_value(j), trial);
	if (json_is_integer(j)) {
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(j));
		return !strcmp(num, trial);
	}
	return false;
}

/* One line (no newline) into *pt when it is a measurement of tag. */
static bool parse_line(const char *line, size_t len, const char *tag, const char *trial,
		       struct metric_point *pt)
{
	json_error_t jerr;
	json_t *o, *j;
	bool ok = false;

	if (len > METRIC_LINE_MAX)
		return false;
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(o))
		goto out;
	*pt = (struct metric_point){ 0 };
	if (!json_double(json_object_get(o, tag), &pt->value))
		goto out;
	if ((j = json_object_get(o, "global_step")) && !json_int64(j, &pt->global_step))
		goto out;
	if ((j = json_object_get(o, "timestamp")) &&
	    (!json_double(j, &pt->timestamp) || !isfinite(pt->timestamp) || pt->timestamp < 0))
		goto out;
	if (trial && !trial_matches(json_object_get(o, "trial"), trial))
		goto out;
	ok = true;
out:
	json_decref(o);
	return ok;
}

static bool blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

void metric_file_parse(const char *buf, size_t len, const char *tag, const char *trial,
		       struct metric_series *out)
{
	size_t end = len, cap = 0;

	metric_series_release(out);
	if (!tag || !*tag)
		tag = METRIC_DEFAULT_TAG;
	/* From the last line back, so that the newest are kept; reversed below. */
	while (end > 0) {
		const char *nl = memrchr(buf, '\n', end);
		size_t start = nl ? (size_t)(nl - buf) + 1 : 0;
		struct metric_point pt;

		if (!blank(buf + start, end - start)) {
			if (out->n == METRIC_MAX_POINTS) {
				out->truncated = true;
				break;
			}
			if (parse_line(buf + start, end - start, tag, trial, &pt)) {
				if (out->n == cap) {
					cap = cap ? 2 * cap : 16;
					if (cap > METRIC_MAX_POINTS)
						cap = METRIC_MAX_POINTS;
					out->v = xrealloc(out->v, cap * sizeof(*out->v));
				}
				out->v[out->n++] = pt;
			} else {
				out->skipped++;
			}
		}
		end = nl ? (size_t)(nl - buf) : 0;
	}
	for (size_t i = 0; i < out->n / 2; i++) {
		struct metric_point t = out->v[i];
		out->v[i] = out->v[out->n - 1 - i];
		out->v[out->n - 1 - i] = t;
	}
}

/* Why name, below dfd, could not be opened as what it should be: a symlink is named as one. */
static const char *open_failure(int dfd, const char *name, int errnum, bool folder)
{
	struct stat st;

	if ((errnum == ELOOP || errnum == ENOTDIR || errnum == EMLINK) &&
	    !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (S_ISLNK(st.st_mode))
			return "is a symbolic link, not followed";
		if (folder && !S_ISDIR(st.st_mode))
			return "is not a folder";
	}
	return strerror(errnum);
}

int metric_file_open(const char *dir, struct stat *st, char *err, size_t errlen)
{
	int dfd, hfd, fd, e;

	if (errlen)
		*err = 0;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		e = errno;
		if (e != ENOENT)
			snprintf(err, errlen, "metric file %s/%s: %s: %s", dir, METRIC_FILE_REL,
				 dir, strerror(e));
		errno = e;
		return -1;
	}
	hfd = openat(dfd, METRIC_DIR_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (hfd < 0) {
		e = errno;
		if (e != ENOENT)
			snprintf(err, errlen, "metric file %s/%s: %s %s", dir, METRIC_FILE_REL,
				 METRIC_DIR_NAME, open_failure(dfd, METRIC_DIR_NAME, e, true));
		close(dfd);
		errno = e;
		return -1;
	}
	close(dfd);
	fd = openat(hfd, METRIC_FILE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		if (e != ENOENT)
			snprintf(err, errlen, "metric file %s/%s: %s", dir, METRIC_FILE_REL,
				 open_failure(hfd, METRIC_FILE_NAME, e, false));
		close(hfd);
		errno = e;
		return -1;
	}
	close(hfd);
	if (fstat(fd, st)) {
		e = errno;
		snprintf(err, errlen, "metric file %s/%s: %s", dir, METRIC_FILE_REL, strerror(e));
		close(fd);
		errno = e;
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "metric file %s/%s: not a regular file", dir, METRIC_FILE_REL);
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

int metric_file_read_fd(int fd, const struct stat *st, const char *name, const char *tag,
			const char *trial, struct metric_series *out, char *err, size_t errlen)
{
	char *buf;
	size_t want, got = 0, skip = 0;
	off_t from;

	metric_series_release(out);
	from = st->st_size > METRIC_FILE_MAX_BYTES ? st->st_size - METRIC_FILE_MAX_BYTES : 0;
	want = (size_t)(st->st_size - from);
	buf = xmalloc(want + 1);
	/* The trainer may rewrite the file meanwhile: what is there is read. */
	while (got < want) {
		ssize_t k = pread(fd, buf + got, want - got, from + (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			snprintf(err, errlen, "metric file %s: %s", name, strerror(errno));
			free(buf);
			return -1;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	if (from > 0) {
		/* The line cut at `from` is not a whole line. */
		const char *nl = memchr(buf, '\n', got);
		skip = nl ? (size_t)(nl - buf) + 1 : got;
	}
	metric_file_parse(buf + skip, got - skip, tag, trial, out);
	out->truncated |= from > 0;
	free(buf);
	return 0;
}

int metric_file_read(const char *dir, const char *tag, const char *trial,
		     struct metric_series *out, struct stat *st, char *err, size_t errlen)
{
	struct stat own;
	int fd, rc;

	metric_series_release(out);
	if (!st)
		st = &own;
	memset(st, 0, sizeof(*st));
	fd = metric_file_open(dir, st, err, errlen);
	if (fd < 0) {
		rc = errno == ENOENT ? 0 : -1;
		memset(st, 0, sizeof(*st));
		return rc;
	}
	char *name = xasprintf("%s/%s", dir, METRIC_FILE_REL);
	rc = metric_file_read_fd(fd, st, name, tag, trial, out, err, errlen);
	free(name);
	close(fd);
	return rc;
}

const struct metric_point *metric_series_last(const struct metric_series *s)
{
	return s->n ? &s->v[s->n - 1] : NULL;
}

const struct metric_point *metric_series_best(const struct metric_series *s, bool maximize)
{
	const struct metric_point *best = NULL;

	for (size_t i = 0; i < s->n; i++) {
		double v = s->v[i].value;
		if (!isfinite(v))
			continue;
		if (!best || (maximize ? v >= best->value : v <= best->value))
			best = &s->v[i];
	}
	return best;
}
