/*
 * log.h - leveled logging to stderr, one line per message.
 *
 * The level is checked before the arguments are formatted, so a disabled
 * log_debug() costs one comparison. Lines look like
 *   2026-11-22T10:00:00.123Z INFO  listening on 127.0.0.1:8080
 *   2026-11-22T10:00:00.124Z ERROR [req 3f2a...] database error in ...
 * or, with log_set_format(LOG_FORMAT_JSON), one JSON object per line:
 *   {"time":"2026-11-22T10:00:00.124Z","level":"error","msg":"...","request_id":"3f2a..."}
 * The request id is the calling thread's (log_set_request_id), so every
 * line a request handler writes carries the id of its request.
 *
 * Hostile text. Whatever a message holds (ids, names and bodies clients
 * sent), a call writes exactly one line, and no terminal escape: the
 * formatted message and the request id are escaped as a whole. In text,
 * backslash is "\\", newline, CR and tab "\n" "\r" "\t", every other control
 * byte, DEL and each byte of invalid UTF-8 "\xNN"; the C1 controls and the
 * Unicode line separators and bidi controls (U+2028, U+2029, U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069) "\uXXXX"; other UTF-8 is kept. In JSON
 * invalid UTF-8 becomes U+FFFD and the rest is JSON's own escaping. A message
 * whose escaped form is longer than LOG_MSG_MAX bytes keeps its first
 * LOG_MSG_HEAD and last LOG_MSG_TAIL bytes around "[... N bytes cut ...]",
 * never splitting an escape or a character.
 *
 * Rate limit. WARN and ERROR lines are limited per call site (the format
 * string): a burst of LOG_LIMIT_BURST lines, then one per
 * LOG_LIMIT_INTERVAL_US; the others are counted, not formatted. The next
 * line the site writes ends with " (N similar lines suppressed)" (JSON:
 * "suppressed":N), and every LOG_LIMIT_REPORT_US any log call writes one
 * line per site whose count is still unreported:
 *   ... ERROR (1234 similar lines suppressed: "database error in %s: %s")
 * DEBUG and INFO lines (access lines, one line per job or node event) are
 * never limited. The hot path is lock-free: one atomic compare-and-swap per
 * line (GCRA, the token bucket as one timestamp).
 */
#ifndef TP_LOG_H
#define TP_LOG_H

#include <stdbool.h>

#include "common.h"

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

#define LOG_MSG_MAX 4096
#define LOG_MSG_HEAD 3072
#define LOG_MSG_TAIL 896
#define LOG_LIMIT_BURST 10
#define LOG_LIMIT_INTERVAL_US 1000000
#define LOG_LIMIT_REPORT_US 10000000

extern enum log_level log_min_level;

/* Parses "debug", "info", "warn"/"warning", "error". Returns 0 or -1. */
int log_level_parse(const char *s, enum log_level *out) MUST_CHECK;
void log_set_level(enum log_level level);
/* Parses "text" or "json". Returns 0 or -1. */
int log_format_parse(const char *s, enum log_format *out) MUST_CHECK;
void log_set_format(enum log_format format);
/*
 * The request the calling thread works for, written into its log lines
 * until cleared with NULL. The string is borrowed: it must outlive the call
 * that clears it.
 */
void log_set_request_id(const char *id);
void log_write(enum log_level level, const char *fmt, ...) PRINTF_LIKE(2, 3);
/*
 * Formats one line (without the newline) into buf as log_write would,
 * escaping msg and request_id. Returns its length; a line longer than
 * len - 1 has its message cut further, so that it stays one whole line (and
 * one JSON object); a buffer too small for the rest is filled with whole
 * characters and escapes. For tests.
 */
size_t log_format_line(char *buf, size_t len, enum log_level level, int64_t time_us,
		       const char *request_id, const char *msg);
/*
 * Writes the "similar lines suppressed" line of every site whose count is
 * not yet reported (log_write does every LOG_LIMIT_REPORT_US). For a
 * process about to exit.
 */
void log_report_suppressed(void);

/*
 * The rate limiter behind log_write, for tests: a table of call sites
 * (keyed by address) and a clock the caller passes in (monotonic usec).
 * burst 0: no limit.
 */
struct log_limiter;
struct log_limiter *log_limiter_new(unsigned burst, int64_t interval_us);
void log_limiter_free(struct log_limiter *lim);
/*
 * Whether site may write a line at now_us. True: *suppressed is the number
 * of its lines suppressed since it last wrote or was reported (taken: the
 * next call says 0). False: the line is counted.
 */
bool log_limiter_admit(struct log_limiter *lim, const char *site, enum log_level level,
		       int64_t now_us, uint64_t *suppressed);
/* Calls report() for each site with a suppressed count, taking the count. Returns the calls. */
size_t log_limiter_report(struct log_limiter *lim,
			  void (*report)(void *ctx, const char *site, enum log_level level,
					 uint64_t n),
			  void *ctx);

#define log_at(lvl, ...) \
	do { if (log_min_level <= (lvl)) log_write((lvl), __VA_ARGS__); } while (0)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_at(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_at(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_at(LOG_ERROR, __VA_ARGS__)

#endif
