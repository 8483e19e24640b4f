#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

enum log_level log_min_level = LOG_INFO;

static const char *const level_names[] = { "DEBUG", "INFO", "WARN", "ERROR" };

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

void log_write(enum log_level level, const char *fmt, ...)
{
	char line[2048];
	char stamp[32];
	int64_t us = now_usec();
	time_t secs = (time_t)(us / 1000000);
	struct tm tm;
	va_list ap;
	int n;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s.%03dZ %-5s ", stamp,
		     (int)(us / 1000 % 1000), level_names[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One fputs per line keeps concurrent threads from interleaving. */
	size_t len = strlen(line);
	if (len + 1 < sizeof(line)) {
		line[len] = '\n';
		line[len + 1] = '\0';
	}
	fputs(line, stderr);
}
