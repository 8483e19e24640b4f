/*
 * log.h - leveled logging to stderr, one line per message.
 *
 * The level is checked before the arguments are formatted, so a disabled
 * log_debug() costs one comparison. Lines look like
 *   2026-11-22T10:00:00.123Z INFO  listening on 127.0.0.1:8080
 * or, with log_set_json(1), one JSON object per line.
 */
#ifndef TP_LOG_H
#define TP_LOG_H

#include "common.h"

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

extern enum log_level log_min_level;

/* Parses "debug", "info", "warn"/"warning", "error". Returns 0 or -1. */
int log_level_parse(const char *s, enum log_level *out) MUST_CHECK;
void log_set_level(enum log_level level);
void log_write(enum log_level level, const char *fmt, ...) PRINTF_LIKE(2, 3);

#define log_at(lvl, ...) \
	do { if (log_min_level <= (lvl)) log_write((lvl), __VA_ARGS__); } while (0)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_at(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_at(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_at(LOG_ERROR, __VA_ARGS__)

#endif
