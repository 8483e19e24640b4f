/*
 * replica_log.c - output.log: appending records, pinning the next batch to
 * ship (whole records, UTF-8 cleaned, the backlog bounded), acknowledging
 * it.
 */
#include "replica_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "strbuf.h"
#include "wire.h"

void replica_log_append(const struct replica *r, char stream, const char *text)
{
	char *path = replica_path(r, "output.log");
	char *rec = xasprintf("%lld %c %s\n", (long long)now_usec(), stream, text);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, rec, strlen(rec)) < 0)
			log_warn("replica %s.%d: cannot write its log: %s", r->id, r->attempt,
				 strerror(errno));
		close(fd);
	}
	free(rec);
	free(path);
}

int64_t replica_logs_unpinned(const struct replica *r)
{
	char *path = replica_path(r, "output.log");
	struct stat st;
	int64_t from = r->batch ? r->batch_end : r->log_off, n = 0;
	if (!stat(path, &st) && st.st_size > from)
		n = st.st_size - from;
	free(path);
	return n;
}

int64_t replica_logs_pending(const struct replica *r)
{
	char *path = replica_path(r, "output.log");
	struct stat st;
	int64_t n = 0;
	if (!stat(path, &st) && st.st_size > r->log_off)
		n = st.st_size - r->log_off;
	free(path);
	return n;
}

/* A copy of s[0..n) with invalid UTF-8 replaced by U+FFFD (JSON needs valid). */
static char *utf8_clean(const char *s, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i = 0;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 :
			(c >> 3) == 30 ? 4 : 0;
		bool ok = len && i + len <= n && c != 0;
		for (size_t k = 1; ok && k < len; k++)
			ok = ((unsigned char)s[i + k] >> 6) == 2;
		if (ok && len == 2 && c < 0xc2)
			ok = false;	/* overlong */
		if (ok && len == 3) {
			unsigned char d = (unsigned char)s[i + 1];
			ok = !(c == 0xe0 && d < 0xa0) && !(c == 0xed && d >= 0xa0);
		}
		if (ok && len == 4) {
			unsigned char d = (unsigned char)s[i + 1];
			ok = c <= 0xf4 && !(c == 0xf0 && d < 0x90) && !(c == 0xf4 && d >= 0x90);
		}
		if (ok) {
			sb_add(&sb, s + i, len);
			i += len;
		} else {
			sb_addstr(&sb, "\xef\xbf\xbd");
			i++;
		}
	}
	sb_addstr(&sb, "");
	return sb_detach(&sb);
}

static json_t *log_line(const char *stream, int64_t usec, const char *text, size_t len)
{
	char ts[48];
	char *clean = utf8_clean(text, len);
	wire_time_format(usec, ts, sizeof(ts));
	json_t *o = json_pack("{s:s, s:s, s:s}", "stream", stream, "time", ts, "text", clean);
	free(clean);
	return o;
}

/* Counts the newlines of fd in [from, to). */
static int64_t count_lines(int fd, int64_t from, int64_t to)
{
	char buf[65536];
	int64_t n = 0;
	while (from < to) {
		size_t want = (size_t)(to - from) < sizeof(buf) ? (size_t)(to - from) : sizeof(buf);
		ssize_t got = pread(fd, buf, want, from);
		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got; i++)
			n += buf[i] == '\n';
		from += got;
	}
	return n;
}

size_t replica_logs_pin(struct replica *r, size_t max_lines, size_t max_bytes,
			int64_t backlog_max)
{
	char *path;
	int fd;
	struct stat st;
	size_t lines = 0;
	int64_t off = r->log_off;

	if (r->batch)
		return json_array_size(r->batch);
	path = replica_path(r, "output.log");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || st.st_size <= off)
		goto out;
	r->batch = json_array();
	if (st.st_size - off > backlog_max) {
		/* Too far behind: keep the newest backlog_max bytes, from a line start. */
		int64_t skip_to = st.st_size - backlog_max;
		char c;
		while (skip_to < st.st_size && pread(fd, &c, 1, skip_to - 1) == 1 && c != '\n')
			skip_to++;
		int64_t dropped = count_lines(fd, off, skip_to);
		char *msg = xasprintf("[trainplane-agent] %lld lines dropped: the log backlog "
				      "exceeded %lld bytes", (long long)dropped,
				      (long long)backlog_max);
		json_array_append_new(r->batch, log_line("stderr", now_usec(), msg, strlen(msg)));
		free(msg);
		log_warn("replica %s.%d: %lld log lines dropped", r->id, r->attempt,
			 (long long)dropped);
		off = skip_to;
		lines++;
	}
	/* Read a window; only whole records count. */
	size_t cap = max_bytes + 4096;
	char *buf = xmalloc(cap + 1);
	ssize_t got = pread(fd, buf, cap, off);
	size_t pos = 0, text_bytes = 0;
	while (got > 0 && pos < (size_t)got && lines < max_lines) {
		char *nl = memchr(buf + pos, '\n', (size_t)got - pos);
		if (!nl) {
			if (pos == 0 && (size_t)got == cap) {
				/* One record longer than the window: send it cut. */
				nl = buf + got - 1;
			} else {
				break;
			}
		}
		size_t reclen = (size_t)(nl - (buf + pos));
		char *rec = buf + pos, *sp1 = memchr(rec, ' ', reclen);
		if (sp1 && (size_t)(sp1 - rec) + 2 < reclen && sp1[2] == ' ') {
			int64_t usec = strtoll(rec, NULL, 10);
			const char *text = sp1 + 3;
			size_t tlen = reclen - (size_t)(text - rec);
			if (text_bytes && text_bytes + tlen > max_bytes)
				break;	/* the first line always goes, whatever its size */
			json_array_append_new(r->batch, log_line(sp1[1] == 'E' ? "stderr" : "stdout",
								 usec, text, tlen));
			lines++;
			text_bytes += tlen;
		}
		pos += reclen + 1;
	}
	free(buf);
	off += (int64_t)pos;
out:
	close(fd);
	if (r->batch && !json_array_size(r->batch)) {
		json_decref(r->batch);
		r->batch = NULL;
	}
	if (r->batch)
		r->batch_end = off;
	return r->batch ? json_array_size(r->batch) : 0;
}

void replica_logs_ack(struct replica *r)
{
	if (!r->batch)
		return;
	json_decref(r->batch);
	r->batch = NULL;
	r->log_off = r->batch_end;
}
