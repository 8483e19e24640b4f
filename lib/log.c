#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "strbuf.h"
#include "wire.h"

enum log_level log_min_level = LOG_INFO;
static enum log_format log_fmt = LOG_FORMAT_TEXT;
static _Thread_local const char *thread_request_id;

static const char *const level_names[] = { "DEBUG", "INFO", "WARN", "ERROR" };
static const char *const level_json[] = { "debug", "info", "warn", "error" };

/* A formatted message longer than this is cut before it is escaped. */
#define LOG_RAW_MAX 65536
/* The escaped request id is cut here (the server's ids are at most 128 bytes). */
#define LOG_REQUEST_ID_MAX 256

int log_level_parse(const char *s, enum log_level *out)
{
	static const struct { const char *name; enum log_level level; } names[] = {
		{ "debug", LOG_DEBUG }, { "info", LOG_INFO }, { "warn", LOG_WARN },
		{ "warning", LOG_WARN }, { "error", LOG_ERROR },
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		if (!strcasecmp(s, names[i].name)) {
			*out = names[i].level;
			return 0;
		}
	}
	return -1;
}

void log_set_level(enum log_level level)
{
	log_min_level = level;
}

int log_format_parse(const char *s, enum log_format *out)
{
	if (!strcasecmp(s, "text"))
		*out = LOG_FORMAT_TEXT;
	else if (!strcasecmp(s, "json"))
		*out = LOG_FORMAT_JSON;
	else
		return -1;
	return 0;
}

void log_set_format(enum log_format format)
{
	log_fmt = format;
}

void log_set_request_id(const char *id)
{
	thread_request_id = id;
}

/* ---- escaping ------------------------------------------------------------ */

static const char hex[] = "0123456789abcdef";

/* Code points a terminal or a viewer may take for a control or a line break. */
static bool unsafe_code_point(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static void add_hex_byte(struct strbuf *sb, unsigned char c)
{
	char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
	sb_add(sb, e, 4);
}

static void add_u4(struct strbuf *sb, uint32_t cp)
{
	char e[6] = { '\\', 'u', hex[cp >> 12 & 15], hex[cp >> 8 & 15], hex[cp >> 4 & 15],
		      hex[cp & 15] };
	sb_add(sb, e, 6);
}

/* s[0..len) as text-log text (log.h): printable ASCII and safe UTF-8 kept. */
static void text_escape(struct strbuf *sb, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	uint32_t cp;
	size_t n;

	while (p < end) {
		unsigned char c = *p;
		if (c >= 0x20 && c < 0x7f) {
			if (c == '\\')
				sb_addch(sb, '\\');
			sb_addch(sb, (char)c);
			p++;
		} else if (c == '\n' || c == '\r' || c == '\t') {
			sb_addch(sb, '\\');
			sb_addch(sb, c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
			p++;
		} else if (c < 0x80 || !(n = wire_utf8_decode(p, (size_t)(end - p), &cp))) {
			add_hex_byte(sb, c);
			p++;
		} else {
			if (unsafe_code_point(cp))
				add_u4(sb, cp);
			else
				sb_add(sb, p, n);
			p += n;
		}
	}
}

/* s[0..len) as the body of a JSON string: invalid UTF-8 as U+FFFD. */
static void json_escape(struct strbuf *sb, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	uint32_t cp;
	size_t n;

	while (p < end) {
		unsigned char c = *p;
		if (c == '"' || c == '\\') {
			sb_addch(sb, '\\');
			sb_addch(sb, (char)c);
			p++;
		} else if (c == '\n') {
			sb_add(sb, "\\n", 2);
			p++;
		} else if (c < 0x20 || c == 0x7f) {
			add_u4(sb, c);
			p++;
		} else if (c < 0x80) {
			sb_addch(sb, (char)c);
			p++;
		} else if (!(n = wire_utf8_decode(p, (size_t)(end - p), &cp))) {
			sb_add(sb, "\xef\xbf\xbd", 3);
			p++;
		} else {
			sb_add(sb, p, n);
			p += n;
		}
	}
}

/* Length of the escape or character at s[i] in escaped text (either format). */
static size_t unit_len(const char *s, size_t i, size_t len)
{
	unsigned char c = (unsigned char)s[i];
	size_t n;

	if (c == '\\' && i + 1 < len)
		n = s[i + 1] == 'x' ? 4 : s[i + 1] == 'u' ? 6 : 2;
	else if (c < 0xc0)
		n = 1;
	else if (c < 0xe0)
		n = 2;
	else if (c < 0xf0)
		n = 3;
	else
		n = 4;
	return n > len - i ? len - i : n;
}

/* Room a "[... N bytes cut ...]" marker takes at most. */
#define LOG_CUT_MARKER_MAX 48

/*
 * Cuts escaped text in sb to at most max bytes (log.h): head and tail
 * around a marker, at escape and character boundaries. lost: bytes already
 * dropped before escaping, counted in the marker. With a max too small for
 * the marker, only a head is kept, unmarked.
 */
static void cut_escaped(struct strbuf *sb, size_t max, size_t lost)
{
	size_t head, tail, head_end = 0, tail_start = sb->len, n;
	bool mark = true;
	char marker[LOG_CUT_MARKER_MAX];

	if (sb->len <= max && !lost)
		return;
	if (max >= LOG_MSG_MAX) {
		head = LOG_MSG_HEAD;
		tail = LOG_MSG_TAIL;
	} else if (max >= 2 * LOG_CUT_MARKER_MAX) {
		head = (max - LOG_CUT_MARKER_MAX) / 4 * 3;
		tail = (max - LOG_CUT_MARKER_MAX) / 4;
	} else {
		head = max;
		tail = 0;
		mark = false;
	}
	if (sb->len <= head + tail) {
		head = sb->len;
		tail = 0;
	}
	/* head_end: the last boundary <= head; tail_start: the first >= len - tail. */
	for (size_t i = 0; i < sb->len; i += n) {
		n = unit_len(sb->buf, i, sb->len);
		if (i + n <= head)
			head_end = i + n;
		if (tail && i >= sb->len - tail) {
			tail_start = i;
			break;
		}
	}
	n = 0;
	if (mark)
		n = (size_t)snprintf(marker, sizeof(marker), "[... %zu bytes cut ...]",
				     tail_start - head_end + lost);
	sb_grow(sb, n);
	memmove(sb->buf + head_end + n, sb->buf + tail_start, sb->len - tail_start);
	memcpy(sb->buf + head_end, marker, n);
	sb->len = head_end + n + (sb->len - tail_start);
	sb->buf[sb->len] = '\0';
}

/* ---- lines ----------------------------------------------------------------- */

/*
 * One line (no newline) into out (reset first). msg[0..msg_len) is escaped
 * and cut to msg_max escaped bytes; lost bytes were cut from it already.
 * Returns the length of the escaped message in the line.
 */
static size_t format_line(struct strbuf *out, enum log_level level, int64_t time_us,
			  const char *request_id, const char *msg, size_t msg_len, size_t lost,
			  uint64_t suppressed, size_t msg_max)
{
	bool text = log_fmt == LOG_FORMAT_TEXT;
	struct strbuf esc = STRBUF_INIT, rid = STRBUF_INIT;
	time_t secs = (time_t)(time_us / 1000000);
	char stamp[40];
	struct tm tm;
	size_t n;

	gmtime_r(&secs, &tm);
	n = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + n, sizeof(stamp) - n, ".%03dZ", (int)(time_us / 1000 % 1000));

	(text ? text_escape : json_escape)(&esc, msg, msg_len);
	sb_addstr(&esc, "");
	cut_escaped(&esc, msg_max, lost);
	if (request_id) {
		(text ? text_escape : json_escape)(&rid, request_id, strlen(request_id));
		sb_addstr(&rid, "");
		cut_escaped(&rid, LOG_REQUEST_ID_MAX, 0);
	}
	sb_reset(out);
	if (text) {
		sb_addf(out, "%s %-5s ", stamp, level_names[level]);
		if (request_id)
			sb_addf(out, "[req %s] ", rid.buf);
		sb_add(out, esc.buf, esc.len);
		if (suppressed)
			sb_addf(out, " (%llu similar line%s suppressed)",
				(unsigned long long)suppressed, suppressed == 1 ? "" : "s");
	} else {
		sb_addf(out, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"", stamp,
			level_json[level]);
		sb_add(out, esc.buf, esc.len);
		sb_addch(out, '"');
		if (request_id)
			sb_addf(out, ",\"request_id\":\"%s\"", rid.buf);
		if (suppressed)
			sb_addf(out, ",\"suppressed\":%llu", (unsigned long long)suppressed);
		sb_addch(out, '}');
	}
	n = esc.len;
	sb_release(&esc);
	sb_release(&rid);
	return n;
}

size_t log_format_line(char *buf, size_t len, enum log_level level, int64_t time_us,
		       const char *request_id, const char *msg)
{
	struct strbuf line = STRBUF_INIT;
	size_t msg_max = LOG_MSG_MAX, n, over;

	if (!len)
		return 0;
	for (;;) {
		n = format_line(&line, level, time_us, request_id, msg, strlen(msg), 0, 0, msg_max);
		if (line.len < len || !msg_max)
			break;
		/* Too long for buf: cut the message by what is over. */
		over = line.len - (len - 1);
		msg_max = over < n ? n - over : 0;
	}
	n = line.len;
	if (n >= len) {
		/* Even an empty message is too long: cut the line, never inside a character. */
		size_t i = 0, k;
		for (n = 0; i < line.len && i + (k = unit_len(line.buf, i, line.len)) < len; i += k)
			n = i + k;
	}
	memcpy(buf, line.buf, n);
	buf[n] = '\0';
	sb_release(&line);
	return n;
}

static void write_line(enum log_level level, const char *request_id, const char *msg,
		       size_t msg_len, size_t lost, uint64_t suppressed)
{
	struct strbuf line = STRBUF_INIT;

	format_line(&line, level, now_usec(), request_id, msg, msg_len, lost, suppressed,
		    LOG_MSG_MAX);
	sb_addch(&line, '\n');
	/* One fputs per line keeps concurrent threads from interleaving. */
	fputs(line.buf, stderr);
	sb_release(&line);
}

/* ---- rate limit -------------------------------------------------------------- */

#define LOG_LIMIT_SITES 256	/* a power of two */
#define LOG_LIMIT_PROBES 16

struct log_site {
	_Atomic(const char *) key;	/* the format string; NULL: free slot */
	_Atomic int level;
	_Atomic int64_t tat;		/* GCRA's theoretical arrival time, mono usec */
	_Atomic uint64_t suppressed;	/* not yet reported */
};

struct log_limiter {
	unsigned burst;
	int64_t interval_us;
	struct log_site sites[LOG_LIMIT_SITES];
	struct log_site other;		/* sites the table has no room for, together */
	_Atomic uint64_t pending;	/* sum of the sites' suppressed counts */
	_Atomic int64_t last_report;	/* mono usec; 0: nothing suppressed yet */
};

static struct log_limiter global_limiter = {
	.burst = LOG_LIMIT_BURST,
	.interval_us = LOG_LIMIT_INTERVAL_US,
	.other = { .level = LOG_WARN },
};

struct log_limiter *log_limiter_new(unsigned burst, int64_t interval_us)
{
	struct log_limiter *lim = xcalloc(1, sizeof(*lim));
	lim->burst = burst;
	lim->interval_us = interval_us;
	atomic_init(&lim->other.level, LOG_WARN);
	return lim;
}

void log_limiter_free(struct log_limiter *lim)
{
	free(lim);
}

static struct log_site *site_slot(struct log_limiter *lim, const char *key, enum log_level level)
{
	uint64_t h = (uint64_t)(uintptr_t)key * UINT64_C(0x9e3779b97f4a7c15);

	for (size_t i = 0; i < LOG_LIMIT_PROBES; i++) {
		struct log_site *s = &lim->sites[((h >> 56) + i) & (LOG_LIMIT_SITES - 1)];
		const char *k = atomic_load_explicit(&s->key, memory_order_acquire);
		if (k == key)
			return s;
		if (!k) {
			if (atomic_compare_exchange_strong(&s->key, &k, key)) {
				atomic_store_explicit(&s->level, (int)level, memory_order_relaxed);
				return s;
			}
			if (k == key)
				return s;
		}
	}
	return &lim->other;
}

bool log_limiter_admit(struct log_limiter *lim, const char *site, enum log_level level,
		       int64_t now_us, uint64_t *suppressed)
{
	struct log_site *s;
	int64_t tat, next, tolerance;

	*suppressed = 0;
	if (!lim->burst)
		return true;
	s = site_slot(lim, site, level);
	tolerance = (int64_t)(lim->burst - 1) * lim->interval_us;
	tat = atomic_load_explicit(&s->tat, memory_order_relaxed);
	do {
		next = tat > now_us ? tat : now_us;
		if (next - now_us > tolerance) {
			int64_t never = 0;
			atomic_fetch_add_explicit(&s->suppressed, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&lim->pending, 1, memory_order_relaxed);
			atomic_compare_exchange_strong(&lim->last_report, &never, now_us);
			return false;
		}
	} while (!atomic_compare_exchange_weak_explicit(&s->tat, &tat, next + lim->interval_us,
							memory_order_relaxed,
							memory_order_relaxed));
	if (atomic_load_explicit(&s->suppressed, memory_order_relaxed)) {
		*suppressed = atomic_exchange_explicit(&s->suppressed, 0, memory_order_relaxed);
		atomic_fetch_sub_explicit(&lim->pending, *suppressed, memory_order_relaxed);
	}
	return true;
}

size_t log_limiter_report(struct log_limiter *lim,
			  void (*report)(void *ctx, const char *site, enum log_level level,
					 uint64_t n),
			  void *ctx)
{
	size_t calls = 0;

	for (size_t i = 0; i <= LOG_LIMIT_SITES; i++) {
		struct log_site *s = i < LOG_LIMIT_SITES ? &lim->sites[i] : &lim->other;
		uint64_t n;
		if (!atomic_load_explicit(&s->suppressed, memory_order_relaxed))
			continue;
		n = atomic_exchange_explicit(&s->suppressed, 0, memory_order_relaxed);
		if (!n)
			continue;
		atomic_fetch_sub_explicit(&lim->pending, n, memory_order_relaxed);
		const char *key = atomic_load_explicit(&s->key, memory_order_acquire);
		report(ctx, key ? key : "(call sites beyond the table)",
		       (enum log_level)atomic_load_explicit(&s->level, memory_order_relaxed), n);
		calls++;
	}
	return calls;
}

static void write_report(void *ctx, const char *site, enum log_level level, uint64_t n)
{
	char head[96];
	struct strbuf msg = STRBUF_INIT;

	(void)ctx;
	snprintf(head, sizeof(head), "(%llu similar line%s suppressed: \"",
		 (unsigned long long)n, n == 1 ? "" : "s");
	sb_addstr(&msg, head);
	sb_addstr(&msg, site);
	sb_addstr(&msg, "\")");
	write_line(level, NULL, msg.buf, msg.len, 0, 0);
	sb_release(&msg);
}

/* Every LOG_LIMIT_REPORT_US, one caller reports what is still suppressed. */
static void maybe_report(int64_t now)
{
	struct log_limiter *lim = &global_limiter;
	int64_t last;

	if (!atomic_load_explicit(&lim->pending, memory_order_relaxed))
		return;
	last = atomic_load_explicit(&lim->last_report, memory_order_relaxed);
	if (now - last < LOG_LIMIT_REPORT_US ||
	    !atomic_compare_exchange_strong(&lim->last_report, &last, now))
		return;
	log_limiter_report(lim, write_report, NULL);
}

void log_report_suppressed(void)
{
	atomic_store(&global_limiter.last_report, mono_usec());
	log_limiter_report(&global_limiter, write_report, NULL);
}

/* ---- log_write ------------------------------------------------------------------ */

void log_write(enum log_level level, const char *fmt, ...)
{
	int64_t now = mono_usec();
	uint64_t suppressed = 0;
	char small[2048], *msg = small;
	size_t len, lost = 0;
	va_list ap;
	int k;

	if (level >= LOG_WARN &&
	    !log_limiter_admit(&global_limiter, fmt, level, now, &suppressed)) {
		maybe_report(now);
		return;
	}
	va_start(ap, fmt);
	k = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	len = k < 0 ? 0 : (size_t)k;
	if (len >= sizeof(small)) {
		size_t cap = len < LOG_RAW_MAX ? len + 1 : LOG_RAW_MAX;
		msg = xmalloc(cap);
		va_start(ap, fmt);
		vsnprintf(msg, cap, fmt, ap);
		va_end(ap);
		lost = len - (cap - 1);
		len = cap - 1;
	}
	/* A trailing newline (libpq's messages end with one) is no part of the line. */
	while (len && !lost && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
		len--;
	write_line(level, thread_request_id, msg, len, lost, suppressed);
	if (msg != small)
		free(msg);
	maybe_report(now);
}
