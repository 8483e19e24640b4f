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
 */
#ifndef TP_LOG_H
#define TP_LOG_H

#include "common.h"

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

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
 * Formats one line (without the newline) into buf as log_write would.
 * Returns its length (truncated to len - 1). For tests.
 */
size_t log_format_line(char *buf, size_t len, enum log_level level, int64_t time_us,
		       const char *request_id, const char *msg);

#define log_at(lvl, ...) \
	do { if (log_min_level <= (lvl)) log_write((lvl), __VA_ARGS__); } while (0)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_at(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_at(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_at(LOG_ERROR, __VA_ARGS__)

#endif
